"""Anytime-valid confidence sequences for the mean of bounded payoffs.

A fixed-sample confidence interval (the bootstrap of :func:`analysis.scores.bootstrap_ci`) holds at one sample size
chosen in advance. Checking it again after every batch and stopping when it looks good is optional stopping: each
look is another chance to stop on an interval that misses the mean. A *confidence sequence* is a sequence of
intervals that contains the mean at every sample size at once with probability at least ``1 - alpha``, so it may be
looked at after every observation and a run may stop whenever it likes.

This module implements the predictable-plug-in empirical-Bernstein sequence (PrPl-EB) of Waudby-Smith and Ramdas,
"Estimating means of bounded random variables by betting" (JRSS-B, 2023), Theorem 2, for observations in a known
range ``[low, high]`` (a game's min and max utility, or a judge's 1-10 scale). On values rescaled to ``[0, 1]``:

* the predictable mean and variance estimates ``m_t = (1/2 + sum x_i) / (t + 1)`` and
  ``s2_t = (1/4 + sum (x_i - m_i)^2) / (t + 1)``;
* the bet of observation ``t``, fixed before ``x_t`` is seen:
  ``lambda_t = min(sqrt(2 log(2/alpha) / (s2_{t-1} t log(1 + t))), c)`` with ``c = 1/2``;
* the interval ``sum lambda_i x_i / sum lambda_i  +-  (log(2/alpha) + sum v_i psi(lambda_i)) / sum lambda_i`` with
  ``v_i = 4 (x_i - m_{i-1})^2`` and ``psi(l) = (-log(1 - l) - l) / 4``;

intersected with every earlier interval (a running intersection of a confidence sequence is one too). Every
quantity is a running sum, so :class:`ConfidenceSequence` is updated in constant time per observation and never
keeps the observations: statistics stream.

When the payoffs vary little compared with the game's payoff range (scripted players, block means), the
empirical-Bernstein bets are capped and its width shrinks like ``range / t``. The *hedged capital* betting sequence
of the same paper (Theorem 3), :class:`BettingConfidenceSequence`, bets against every candidate mean ``m`` on a grid
with bets capped by the distance of ``m`` to the bounds (``c / m`` and ``c / (1 - m)``) and is about three times
narrower there; it keeps one log-wealth pair per grid point (constant memory, ``O(grid)`` per observation):

* ``K+_t(m) = prod (1 + l+_i(m) (x_i - m))``, ``K-_t(m) = prod (1 - l-_i(m) (x_i - m))`` with
  ``l+_i(m) = min(lambda_i, c / m)``, ``l-_i(m) = min(lambda_i, c / (1 - m))``, ``lambda_i`` the bet above
  (uncapped) and ``c = 3/4``;
* ``m`` is excluded for good once ``max(K+_t(m), K-_t(m)) / 2 >= 1 / alpha``; the interval spans the grid points
  never excluded, widened by half a grid step on each side.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from deepeval_games.core.errors import UnknownGameError
from deepeval_games.core.games import game_variant, load_recorded_game
from deepeval_games.core.records import MatchRecord

log = logging.getLogger(__name__)

__all__ = [
    "METHODS",
    "AnytimeScore",
    "BettingConfidenceSequence",
    "ConfidenceSequence",
    "Interval",
    "anytime_scores",
    "confidence_sequence",
    "make_sequence",
]

_MAX_BET = 0.5
"""The truncation ``c`` of the bets (the paper suggests 1/2 or 3/4)."""


@dataclass(frozen=True)
class Interval:
    """A confidence interval of a mean after ``n`` observations."""

    low: float
    high: float
    mean: float
    """The sample mean (not the sequence's centre, which weights observations by their bets)."""
    n: int

    @property
    def half_width(self) -> float:
        """Half the interval's width."""
        return (self.high - self.low) / 2.0

    def overlaps(self, other: Interval) -> bool:
        """Whether the two intervals share a point."""
        return self.low <= other.high and other.low <= self.high


class ConfidenceSequence:
    """A streaming PrPl-EB confidence sequence for the mean of values in ``[low, high]`` (see the module docstring).

    Args:
        low: the least value an observation can take.
        high: the greatest value an observation can take.
        alpha: the error level: the sequence misses the mean at some sample size with probability at most this.

    Raises:
        ValueError: ``high <= low`` or ``alpha`` is not in (0, 1).
    """

    def __init__(self, low: float, high: float, *, alpha: float = 0.05) -> None:
        if not (math.isfinite(low) and math.isfinite(high) and high > low):
            raise ValueError(f"a confidence sequence needs finite bounds low < high, got [{low}, {high}]")
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        self.low, self.high, self.alpha = float(low), float(high), float(alpha)
        self._log_term = math.log(2.0 / alpha)
        self.n = 0
        self._sum = 0.0  # sum of x_i (rescaled)
        self._mean_hat = 0.5  # m_{t-1}
        self._var_sum = 0.25  # 1/4 + sum (x_i - m_i)^2
        self._bet_sum = 0.0  # sum lambda_i
        self._bet_x_sum = 0.0  # sum lambda_i x_i
        self._penalty = 0.0  # sum v_i psi(lambda_i)
        self._lo, self._hi = 0.0, 1.0  # running intersection, rescaled

    def update(self, value: float) -> Interval:
        """Add one observation and return the interval after it.

        Raises:
            ValueError: the value lies outside ``[low, high]`` (the guarantee would not hold).
        """
        x = self._rescaled(value)
        t = self.n + 1
        variance = self._var_sum / t  # s2_{t-1}
        bet = min(math.sqrt(2.0 * self._log_term / (variance * t * math.log1p(t))), _MAX_BET)
        self._penalty += 4.0 * (x - self._mean_hat) ** 2 * (-math.log1p(-bet) - bet) / 4.0
        self._bet_sum += bet
        self._bet_x_sum += bet * x
        self._sum += x
        self.n = t
        self._mean_hat = (0.5 + self._sum) / (t + 1)
        self._var_sum += (x - self._mean_hat) ** 2
        centre = self._bet_x_sum / self._bet_sum
        width = (self._log_term + self._penalty) / self._bet_sum
        self._lo = max(self._lo, centre - width, 0.0)
        self._hi = min(self._hi, centre + width, 1.0)
        if self._lo > self._hi:  # the sequence has excluded every mean (a rare miss): keep a point, never empty
            self._lo = self._hi = centre
        return self.interval()

    def _rescaled(self, value: float) -> float:
        """``value`` mapped from ``[low, high]`` to ``[0, 1]``; ``ValueError`` outside the declared range."""
        value = float(value)
        if not self.low <= value <= self.high:
            raise ValueError(f"observation {value} lies outside the declared range [{self.low}, {self.high}]")
        return (value - self.low) / (self.high - self.low)

    def extend(self, values: Iterable[float]) -> Interval:
        """Add several observations in order; the interval after the last."""
        for value in values:
            self.update(value)
        return self.interval()

    def interval(self) -> Interval:
        """The current interval (the whole range before any observation)."""
        scale = self.high - self.low
        mean = self.low + scale * self._sum / self.n if self.n else (self.low + self.high) / 2.0
        return Interval(self.low + scale * self._lo, self.low + scale * self._hi, mean, self.n)


class BettingConfidenceSequence(ConfidenceSequence):
    """The hedged-capital betting confidence sequence (see the module docstring), with the interface of
    :class:`ConfidenceSequence`; ``grid`` candidate means are tested (the interval's resolution is the range divided
    by ``grid``)."""

    _CAP = 0.75

    def __init__(self, low: float, high: float, *, alpha: float = 0.05, grid: int = 1000) -> None:
        super().__init__(low, high, alpha=alpha)
        if grid < 2:
            raise ValueError(f"grid must be >= 2, got {grid}")
        self._grid = (np.arange(grid) + 0.5) / grid
        self._up = np.zeros(grid)  # log K+
        self._down = np.zeros(grid)  # log K-
        self._excluded = np.zeros(grid, dtype=bool)
        self._threshold = math.log(1.0 / alpha) + math.log(2.0)  # K+/2 or K-/2 >= 1/alpha
        self._cap_up = np.minimum(self._CAP / self._grid, 1e6)
        self._cap_down = np.minimum(self._CAP / (1.0 - self._grid), 1e6)

    def update(self, value: float) -> Interval:
        """Add one observation and return the interval after it.

        Raises:
            ValueError: the value lies outside ``[low, high]`` (the guarantee would not hold).
        """
        x = self._rescaled(value)
        t = self.n + 1
        bet = math.sqrt(2.0 * self._log_term / ((self._var_sum / t) * t * math.log1p(t)))
        diff = x - self._grid
        self._up += np.log1p(np.minimum(bet, self._cap_up) * diff)
        self._down += np.log1p(-np.minimum(bet, self._cap_down) * diff)
        self._excluded |= np.maximum(self._up, self._down) >= self._threshold
        self._sum += x
        self.n = t
        self._mean_hat = (0.5 + self._sum) / (t + 1)
        self._var_sum += (x - self._mean_hat) ** 2
        return self._kept_interval()

    def extend(self, values: Iterable[float]) -> Interval:
        """Add several observations in order (the intervals :meth:`update` would give, computed in one pass over
        the grid: the bets depend only on running sums, so they are all known before the wealth is updated)."""
        x = np.array([self._rescaled(v) for v in values], dtype=float)
        if x.size == 0:
            return self.interval()
        t = self.n + 1 + np.arange(x.size)
        sums = np.cumsum(np.concatenate(([self._sum], x)))[1:]  # added in the order update adds them
        means = (0.5 + sums) / (t + 1)
        var_after = np.cumsum(np.concatenate(([self._var_sum], (x - means) ** 2)))[1:]
        var_before = np.concatenate(([self._var_sum], var_after[:-1]))
        bets = np.sqrt(2.0 * self._log_term / ((var_before / t) * t * np.log1p(t)))[:, None]
        diff = x[:, None] - self._grid[None, :]
        up = np.cumsum(np.vstack((self._up, np.log1p(np.minimum(bets, self._cap_up) * diff))), axis=0)[1:]
        down = np.cumsum(np.vstack((self._down, np.log1p(-np.minimum(bets, self._cap_down) * diff))), axis=0)[1:]
        self._excluded |= (np.maximum(up, down) >= self._threshold).any(axis=0)
        self._up, self._down = up[-1].copy(), down[-1].copy()
        self._sum, self.n = float(sums[-1]), int(t[-1])
        self._mean_hat, self._var_sum = float(means[-1]), float(var_after[-1])
        return self._kept_interval()

    def _kept_interval(self) -> Interval:
        """The interval spanning the candidate means never excluded."""
        kept = np.flatnonzero(~self._excluded)
        half_step = 0.5 / self._grid.size
        if kept.size:
            self._lo = max(0.0, float(self._grid[kept[0]]) - half_step)
            self._hi = min(1.0, float(self._grid[kept[-1]]) + half_step)
        else:  # every candidate excluded (a rare miss): keep a point, never empty
            self._lo = self._hi = self._sum / self.n
        return self.interval()


def confidence_sequence(
    values: Sequence[float] | np.ndarray, low: float, high: float, *, alpha: float = 0.05, method: str = "betting"
) -> list[Interval]:
    """The interval after each of ``values`` (in order) of a confidence sequence on ``[low, high]``:
    ``method`` ``betting`` (:class:`BettingConfidenceSequence`) or ``bernstein`` (:class:`ConfidenceSequence`)."""
    sequence = make_sequence(method, low, high, alpha=alpha)
    return [sequence.update(value) for value in values]


METHODS = ("betting", "bernstein")
"""The confidence sequences :func:`make_sequence` builds."""


def make_sequence(method: str, low: float, high: float, *, alpha: float = 0.05) -> ConfidenceSequence:
    """A new confidence sequence of ``method`` (one of :data:`METHODS`) on ``[low, high]``.

    Raises:
        ValueError: an unknown method or bad bounds.
    """
    if method == "betting":
        return BettingConfidenceSequence(low, high, alpha=alpha)
    if method == "bernstein":
        return ConfidenceSequence(low, high, alpha=alpha)
    raise ValueError(f"unknown confidence sequence {method!r}; use one of {', '.join(METHODS)}")


@dataclass(frozen=True)
class AnytimeScore:
    """A player's mean payoff (per role for asymmetric tasks) in one game variant with its anytime-valid interval."""

    variant: str
    player: str
    role: str
    interval: Interval


def anytime_scores(
    records: Iterable[MatchRecord],
    *,
    alpha: float = 0.05,
    method: str = "betting",
    data_dir: str | Path | None = None,
) -> list[AnytimeScore]:
    """The confidence sequence of every reported mean: each player's payoffs (per role, per game variant) in the
    order of repetition (repeat, game, match id), on the game's payoff range (its min and max utility), at level
    ``alpha``. The interval holds whenever the run was stopped, however often it was looked at. Payoffs from
    different opponents have different means: the interval is then for the mean over the schedule (a complete,
    balanced schedule repeats every seating each repeat). Variants whose game declares no finite payoff range are
    left out, and so are variants whose game string names a file outside ``data_dir`` (records may come from anyone:
    :func:`~deepeval_games.core.games.load_recorded_game`), with a logged warning. Sorted by variant, role, then mean
    (best first)."""
    rows: dict[tuple[str, str, str], list[tuple[tuple[int, str, str], float]]] = defaultdict(list)
    games: dict[str, str] = {}
    for record in records:
        if record.status != "complete":
            continue
        variant = game_variant(record.game)
        games.setdefault(variant, record.game)
        roles = record.roles or ["player"] * len(record.seats)
        for name, role, payoff in zip(record.seats, roles, record.returns, strict=True):
            rows[(variant, role, name)].append(((record.repeat, record.game, record.match_id), float(payoff)))
    bounds: dict[str, tuple[float, float] | None] = {}
    for variant, game_string in games.items():
        try:
            game = load_recorded_game(game_string, data_dir=data_dir)
        except UnknownGameError as exc:
            log.warning("anytime-valid intervals of %s left out: %s", variant, exc)
            bounds[variant] = None
            continue
        low, high = float(game.min_utility()), float(game.max_utility())
        bounds[variant] = (low, high) if math.isfinite(low) and math.isfinite(high) and high > low else None
    out = []
    for (variant, role, name), values in rows.items():
        span = bounds[variant]
        if span is None:
            continue
        sequence = make_sequence(method, *span, alpha=alpha)
        interval = sequence.extend(p for _, p in sorted(values, key=lambda pair: pair[0]))
        out.append(AnytimeScore(variant, name, role, interval))
    return sorted(out, key=lambda s: (s.variant, s.role, -s.interval.mean, s.player))
