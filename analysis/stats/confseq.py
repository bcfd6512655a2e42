"""Confidence intervals and anytime-valid confidence sequences for the mean of bounded payoffs.

Every interval the report prints comes from here, and each holds at any sample size for any distribution on a known
range, because it is built from betting: a hypothesised mean is ruled out when a fair bet against it, sized from the
data seen so far, multiplies its stake by ``1 / alpha`` (which a true mean allows with probability at most
``alpha``). At the paper's 6-10 matches such intervals are wide; that is what so few matches can say.

* :func:`mean_interval` (and :func:`mean_intervals`, many samples at once): the fixed-n hedged-capital interval, for
  a sample whose size was not chosen by looking at it (Eq. 1/2, table cells, two-player means, judge audits);
* :func:`ratio_interval`: a ratio of two means (GTBench's NRA), by inverting the same tests;
* :class:`BettingConfidenceSequence`, :class:`ConfidenceSequence`: confidence sequences, which contain the mean at
  every sample size at once with probability at least ``1 - alpha``, so they may be looked at after every
  observation and a run may stop whenever it likes (:mod:`analysis.stats.stopping`). A fixed-sample interval checked
  again
  after every batch, stopping when it looks good, is optional stopping: each look is another chance to stop on an
  interval that misses the mean.

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

from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.games import game_variant, load_recorded_game

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
    "mean_interval",
    "mean_intervals",
    "payoff_bounds",
    "ratio_interval",
    "ratio_intervals",
    "records_bounds",
    "rescaled",
    "sequence_intervals",
    "unit_mean_intervals",
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


class _HedgedCapital:
    """The hedged-capital bets of the module docstring for ``rows`` independent streams at once, each against every
    candidate mean of ``grid`` (a mean ``m`` of ``[0, 1]`` per column; a stream's own candidates per row when ``grid``
    has a row per stream). Observations are rescaled to ``[0, 1]``.

    ``horizon`` ``None``: the anytime-valid bets; a mean is excluded for good once its hedged capital
    ``(K+ + K-) / 2`` reaches ``1 / alpha`` at any step (Ville's inequality). ``horizon`` ``n``: the bets of a fixed-n
    interval, ``lambda_t = sqrt(2 log(2/alpha) / (n s2_{t-1}))`` (the paper's bets for a sample size fixed in
    advance), and a mean is excluded when its capital after the n-th value reaches ``1 / alpha`` (Markov's
    inequality): a little wider than the running maximum, and less moved by the order in which the values come."""

    _CAP = 0.75

    def __init__(self, rows: int, grid: np.ndarray, *, alpha: float, horizon: int | None = None) -> None:
        self.grid = np.atleast_2d(np.asarray(grid, dtype=float))  # (1 or rows, G)
        self.rows, self.alpha, self.horizon = rows, alpha, horizon
        self.t = 0
        self._log_term = math.log(2.0 / alpha)
        self._sum = np.zeros(rows)
        self._var_sum = np.full(rows, 0.25)  # 1/4 + sum (x_i - m_i)^2
        self.up = np.zeros((rows, self.grid.shape[1]))  # log K+
        self.down = np.zeros((rows, self.grid.shape[1]))  # log K-
        self.excluded = np.zeros((rows, self.grid.shape[1]), dtype=bool)
        self.hit_up = np.zeros((rows, self.grid.shape[1]), dtype=bool)  # K+ alone reached 2 / alpha at a tested step
        self.hit_down = np.zeros((rows, self.grid.shape[1]), dtype=bool)
        self._threshold = math.log(1.0 / alpha)
        with np.errstate(divide="ignore"):  # a candidate at 0 or 1 (a ratio's test at its end) bets without a cap
            self._cap_up = np.minimum(self._CAP / self.grid, 1e6)
            self._cap_down = np.minimum(self._CAP / (1.0 - self.grid), 1e6)

    def advance(self, x: np.ndarray) -> None:
        """Bet on the observations ``x`` (``rows`` x ``k``, in ``[0, 1]``, in order)."""
        x = np.asarray(x, dtype=float).reshape(self.rows, -1)
        step = max(1, _BLOCK // self.rows)
        self.advance_blocks(x[:, start : start + step] for start in range(0, x.shape[1], step))

    def advance_blocks(self, blocks: Iterable[np.ndarray]) -> None:
        """:meth:`advance` on the observations of ``blocks`` (each ``rows`` x some, in order) put end to end: the
        same capital to the last bit (the running sums are carried from block to block), with the work arrays of
        one block at a time, so a long sample is never held several times over (``rows`` a value each)."""
        base_sum, base_var = self._sum, self._var_sum
        run_sum, run_dev, last_var = np.zeros(self.rows), np.zeros(self.rows), base_var
        threshold = self._threshold + math.log(2.0)  # (K+ + K-) / 2 >= 1 / alpha
        for block in blocks:
            x = np.asarray(block, dtype=float).reshape(self.rows, -1)
            k = x.shape[1]
            # the bets of the k steps first (running sums along time), then the capital step by step, in place
            t = self.t + np.arange(1, k + 1)
            cum = np.cumsum(np.concatenate([run_sum[:, None], x], axis=1), axis=1)[:, 1:]
            sums = base_sum[:, None] + cum
            means = (0.5 + sums) / (t + 1)  # m_t, after x_t
            dev = np.cumsum(np.concatenate([run_dev[:, None], (x - means) ** 2], axis=1), axis=1)[:, 1:]
            var_sums = base_var[:, None] + dev
            before = np.concatenate([last_var[:, None], var_sums[:, :-1]], axis=1)  # 1/4 + sum up to t - 1
            scale = (before / t) * (self.horizon if self.horizon is not None else t * np.log1p(t))  # s2_{t-1} * ..
            bets = np.sqrt(2.0 * self._log_term / scale)
            self._bet(x, bets, threshold)
            run_sum, run_dev, last_var = cum[:, -1], dev[:, -1], var_sums[:, -1]
            self.t += k
        self._sum, self._var_sum = base_sum + run_sum, base_var + run_dev

    def _bet(self, x: np.ndarray, bets: np.ndarray, threshold: float) -> None:
        """Bet the observations ``x`` (``rows`` x ``k``) with their ``bets`` against every candidate, several steps of
        numpy at a time (:data:`_CHUNK` entries): the logs of each step's factors, summed along time in the order of
        the steps (so the capital is the same to the last bit as one step at a time), and the candidates
        excluded at the steps that test them."""
        k = x.shape[1]
        width = self.grid.shape[1]
        grid, cap_up, cap_down = self.grid[None], self._cap_up[None], self._cap_down[None]  # steps x rows x grid
        steps, step_bets = x.T[:, :, None], bets.T[:, :, None]
        per = max(1, _WORK // (self.rows * width))
        for start in range(0, k, per):
            stop = min(k, start + per)
            diff = steps[start:stop] - grid
            ups = np.minimum(step_bets[start:stop], cap_up)
            ups *= diff
            np.log1p(ups, out=ups)
            downs = np.minimum(step_bets[start:stop], cap_down)
            downs *= diff
            np.negative(downs, out=downs)
            np.log1p(downs, out=downs)
            count = stop - start
            tested = count if self.horizon is None else min(count, max(0, self.t + stop + 1 - self.horizon))
            np.add(ups[0], self.up, out=ups[0])
            np.add(downs[0], self.down, out=downs[0])
            if not tested:  # only the sums needed: numpy adds along the first axis in order, one step after another
                self.up, self.down = np.add.reduce(ups, axis=0), np.add.reduce(downs, axis=0)
                continue
            for step in range(1, count):  # the running sums (numpy's cumsum along the first axis is slow)
                np.add(ups[step - 1], ups[step], out=ups[step])
                np.add(downs[step - 1], downs[step], out=downs[step])
            self._exclude(ups[-tested:], downs[-tested:], threshold)
            self.up, self.down = ups[-1].copy(), downs[-1].copy()

    def _exclude(self, ups: np.ndarray, downs: np.ndarray, threshold: float) -> None:
        """Exclude every candidate whose hedged capital ``logaddexp(up, down)`` reaches ``threshold`` at one of the
        steps of ``ups`` and ``downs`` (steps x ``rows`` x candidates). The larger of the two logs bounds it within
        ``log 2`` (``max <= logaddexp <= max + log 2``), so ``logaddexp`` (most of the work when taken everywhere) is
        taken only where the larger log lies within ``log 2`` below the threshold and the candidate is still in play:
        the exclusions are exactly those of taking it everywhere. Where one side alone reaches ``threshold`` (a
        little above, against rounding) the side is marked in :attr:`hit_up` or :attr:`hit_down`."""
        larger = np.maximum(ups, downs)
        self.excluded |= (larger >= threshold).any(axis=0)
        self.hit_up |= (ups >= threshold + _SIDE_MARGIN).any(axis=0)
        self.hit_down |= (downs >= threshold + _SIDE_MARGIN).any(axis=0)
        near = larger >= threshold - math.log(2.0) - 1e-9
        near &= ~self.excluded[None]
        if near.any():
            step, row, column = np.nonzero(near)
            over = np.logaddexp(ups[step, row, column], downs[step, row, column]) >= threshold
            self.excluded[row[over], column[over]] = True

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per stream, the span of the candidate means never excluded (see :func:`_span`), in ``[0, 1]``."""
        grid = np.broadcast_to(self.grid, self.excluded.shape)
        return _span(self.excluded, self.capital(), grid, 0.5 / self.grid.shape[1], (0.0, 1.0))

    def capital(self) -> np.ndarray:
        """The log of the hedged capital ``(K+ + K-) / 2`` of every stream and candidate, now."""
        return np.logaddexp(self.up, self.down) - math.log(2.0)


def _span(
    excluded: np.ndarray, capital: np.ndarray, grid: np.ndarray, half_step: float, limits: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, from the first to the last candidate of ``grid`` not ``excluded``, widened by ``half_step`` each side
    and kept within ``limits``. Where every candidate was excluded (a rare miss) the one with the least ``capital``
    stands, so an interval is never empty and never a point."""
    kept = ~excluded
    none = ~kept.any(axis=1)
    kept[none, np.argmin(capital[none], axis=1)] = True
    first = np.argmax(kept, axis=1)
    last = kept.shape[1] - 1 - np.argmax(kept[:, ::-1], axis=1)
    rows = np.arange(kept.shape[0])
    return (
        np.clip(grid[rows, first] - half_step, *limits),
        np.clip(grid[rows, last] + half_step, *limits),
    )


def _grid(size: int) -> np.ndarray:
    if size < 2:
        raise ValueError(f"grid must be >= 2, got {size}")
    return (np.arange(size) + 0.5) / size


class BettingConfidenceSequence(ConfidenceSequence):
    """The hedged-capital betting confidence sequence (see the module docstring), with the interface of
    :class:`ConfidenceSequence`; ``grid`` candidate means are tested (the interval's resolution is the range divided
    by ``grid``)."""

    def __init__(self, low: float, high: float, *, alpha: float = 0.05, grid: int = 1000) -> None:
        super().__init__(low, high, alpha=alpha)
        self._capital = _HedgedCapital(1, _grid(grid), alpha=alpha)

    def update(self, value: float) -> Interval:
        """Add one observation and return the interval after it.

        Raises:
            ValueError: the value lies outside ``[low, high]`` (the guarantee would not hold).
        """
        x = self._rescaled(value)
        self._capital.advance(np.array([[x]]))
        self._sum += x
        self.n += 1
        low, high = self._capital.bounds()
        self._lo, self._hi = float(low[0]), float(high[0])
        return self.interval()

    def extend(self, values: Iterable[float]) -> Interval:
        """Add several observations in order (in blocks: the same bets as one at a time); the interval after the
        last."""
        x = np.array([self._rescaled(value) for value in values], dtype=float)
        if x.size:
            self._capital.advance(x[None, :])
            for value in x:  # one at a time, as update adds them: the same sum to the last bit
                self._sum += float(value)
            self.n += int(x.size)
            low, high = self._capital.bounds()
            self._lo, self._hi = float(low[0]), float(high[0])
        return self.interval()


def sequence_intervals(
    samples: np.ndarray, low: float, high: float, *, alpha: float = 0.05, grid: int = 1000
) -> tuple[np.ndarray, np.ndarray]:
    """The interval after each value of every row of ``samples`` (runs x n, values in ``[low, high]``, in order) of
    the hedged-capital betting sequence (:class:`BettingConfidenceSequence`), for many streams at once: two arrays
    shaped like ``samples``. Row ``r``, column ``t`` is what ``BettingConfidenceSequence.update`` returns after the
    ``t + 1``-th value of stream ``r``.

    Raises:
        ValueError: bad bounds, or a value outside them.
    """
    x = rescaled(np.atleast_2d(samples), low, high)
    lo, hi = np.empty(x.shape), np.empty(x.shape)
    for rows in _chunks(x.shape[0], grid):
        capital = _HedgedCapital(rows.stop - rows.start, _grid(grid), alpha=alpha)
        for step in range(x.shape[1]):
            capital.advance(x[rows, step : step + 1])
            lo[rows, step], hi[rows, step] = capital.bounds()
    return low + (high - low) * lo, low + (high - low) * hi


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


# -- fixed-n intervals ----------------------------------------------------------------------------------------


def rescaled(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """``values`` rescaled from ``[low, high]`` to ``[0, 1]``; ``ValueError`` for bad bounds or a value outside them
    (float noise of a part in a billion is clipped)."""
    if not (math.isfinite(low) and math.isfinite(high) and high > low):
        raise ValueError(f"an interval needs finite bounds low < high, got [{low}, {high}]")
    x = np.subtract(np.asarray(values, dtype=float), low)  # one new array, worked on in place (a long sample is
    x /= high - low  # held once more, not three times)
    if x.size and (not np.all(np.isfinite(x)) or x.min() < -1e-9 or x.max() > 1 + 1e-9):
        raise ValueError(f"a value lies outside the declared range [{low}, {high}]")
    return np.clip(x, 0.0, 1.0, out=x)


def mean_intervals(
    samples: np.ndarray, low: float, high: float, *, alpha: float = 0.05, grid: int = 1000, anytime: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The interval of the mean of every row of ``samples`` (runs x n, values in ``[low, high]``) at once: the
    hedged-capital betting interval with the bets of a fixed sample size ``n`` (or, with ``anytime``, the confidence
    sequence of :class:`BettingConfidenceSequence` after the n-th value). Each covers its mean with probability at
    least ``1 - alpha`` at any n for any distribution on ``[low, high]``, whatever its shape; none is ever a point.

    Raises:
        ValueError: bad bounds, or a value outside them.
    """
    lo, hi = unit_mean_intervals(rescaled(np.atleast_2d(samples), low, high), alpha=alpha, grid=grid, anytime=anytime)
    return low + (high - low) * lo, low + (high - low) * hi


def unit_mean_intervals(
    x: np.ndarray, *, alpha: float = 0.05, grid: int = 1000, anytime: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mean_intervals` of values already on ``[0, 1]`` (runs x n, as :func:`rescaled` gives them; not checked
    again, and no new copy of them made): the interval of each row's mean, on ``[0, 1]``."""
    lo, hi = np.empty(x.shape[0]), np.empty(x.shape[0])
    horizon = None if anytime else x.shape[1]
    for rows in _chunks(x.shape[0], grid):
        lo[rows], hi[rows] = _banded_bounds(x[rows], grid, alpha=alpha, horizon=horizon)
    return lo, hi


_STRIDE = 10
"""Every how many candidates of the grid :func:`_banded_bounds` tests first."""


def _banded_bounds(x: np.ndarray, size: int, *, alpha: float, horizon: int | None) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`_HedgedCapital.bounds` of the values ``x`` (rows x n) against a grid of ``size`` candidates, working
    out the capital of few of them. ``K+`` falls and ``K-`` rises as the candidate mean rises (each factor does), so
    once ``K+`` alone has reached ``2 / alpha`` at a candidate (which alone excludes it), it has at every candidate
    below it at the same step, and likewise ``K-`` above. Every ``_STRIDE``-th candidate is tested first; the rest
    are tested only between the highest of those excluded by ``K+`` and the lowest excluded by ``K-``: a band around
    the interval. The interval is that of testing every candidate (checked in the tests); where a band keeps no
    candidate (a rare miss), the whole grid is tested, for its least-capital rule."""
    fine = _grid(size)
    rows = x.shape[0]
    if size < 4 * _STRIDE:
        whole = _HedgedCapital(rows, fine, alpha=alpha, horizon=horizon)
        whole.advance(x)
        return whole.bounds()
    marks = np.unique(np.r_[np.arange(0, size, _STRIDE), size - 1])
    coarse = _HedgedCapital(rows, fine[marks], alpha=alpha, horizon=horizon)
    coarse.advance(x)
    last_up = len(marks) - 1 - np.argmax(coarse.hit_up[:, ::-1], axis=1)
    start = np.where(coarse.hit_up.any(axis=1), marks[last_up] + 1, 0)
    stop = np.where(coarse.hit_down.any(axis=1), marks[np.argmax(coarse.hit_down, axis=1)], size)
    width = np.maximum(stop - start, 1)
    columns = np.minimum(start[:, None] + np.arange(int(width.max()))[None, :], (start + width - 1)[:, None])
    columns = np.minimum(columns, size - 1)
    band = _HedgedCapital(rows, fine[columns], alpha=alpha, horizon=horizon)
    band.advance(x)
    excluded = np.ones((rows, size), dtype=bool)
    kept = ~band.excluded & (stop > start)[:, None]
    excluded[np.nonzero(kept)[0], columns[kept]] = False
    lo, hi = np.empty(rows), np.empty(rows)
    found = ~excluded.all(axis=1)
    grid = np.broadcast_to(fine, (int(found.sum()), size))
    lo[found], hi[found] = _span(excluded[found], np.zeros(grid.shape), grid, 0.5 / size, (0.0, 1.0))
    if not found.all():
        whole = _HedgedCapital(int((~found).sum()), fine, alpha=alpha, horizon=horizon)
        whole.advance(x[~found])
        lo[~found], hi[~found] = whole.bounds()
    return lo, hi


_CHUNK = 1 << 16
"""Capital entries (streams x candidates) worked on at once: a few arrays of this size stay in the CPU's cache."""

_WORK = 1 << 14
"""Capital entries (steps x streams x candidates) whose factors :meth:`_HedgedCapital._bet` works out at once."""

_SIDE_MARGIN = 1e-9
"""How far above the threshold one side's log-capital must be for :meth:`_HedgedCapital._exclude` to mark it: the
candidates beyond a marked one are then excluded whatever the rounding of their own capital."""

_BLOCK = 1 << 13
"""Observations (streams x steps) whose bets :meth:`_HedgedCapital.advance` works out at once: about ten work arrays
of this size (a long sample's values are never held several times over; the capital is the same whatever the
block)."""


def _chunks(rows: int, per_row: int) -> list[slice]:
    """``range(rows)`` in slices of about :data:`_CHUNK` entries of ``per_row`` each."""
    step = max(1, _CHUNK // per_row)
    return [slice(start, min(start + step, rows)) for start in range(0, rows, step)]


def mean_interval(
    values: Sequence[float] | np.ndarray, low: float, high: float, *, alpha: float = 0.05, grid: int = 1000
) -> Interval:
    """The fixed-n betting interval (:func:`mean_intervals`) of the mean of ``values``, in ``[low, high]``, at level
    ``1 - alpha``: in the order given, which must not depend on the values (records come in the order of repetition).
    No values: an interval of NaNs.

    Raises:
        ValueError: bad bounds, or a value outside them.
    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    lo, hi = mean_intervals(data[None, :], low, high, alpha=alpha, grid=grid)
    return Interval(float(lo[0]), float(hi[0]), float(data.mean()), int(data.size))


def ratio_intervals(
    numerators: np.ndarray, denominators: np.ndarray, bound: float, *, alpha: float = 0.05, grid: int = 401
) -> tuple[np.ndarray, np.ndarray]:
    """The interval of ``E[a] / E[b]`` for every row of ``numerators`` and ``denominators`` (runs x n, pairs with
    ``|a_t| <= b_t <= bound``, so the ratio lies in ``[-1, 1]``) at once, by inverting tests: a ratio ``r`` of the
    grid (``grid`` points on ``[-1, 1]``) is excluded when the fixed-n betting test of ``E[a - r b] = 0`` rejects at
    level ``alpha``. ``a - r b`` lies in ``[-(1 + r) bound, (1 - r) bound]``, with the hypothesised mean 0 at
    ``(1 + r) / 2`` of the way up, so each test is the betting test of one mean on a known range.

    Raises:
        ValueError: ``bound`` not positive, or a pair outside ``|a| <= b <= bound``.
    """
    a, b = np.atleast_2d(np.asarray(numerators, dtype=float)), np.atleast_2d(np.asarray(denominators, dtype=float))
    if not (math.isfinite(bound) and bound > 0):
        raise ValueError(f"the bound must be positive, got {bound}")
    if np.any(np.abs(a) > b + 1e-9 * bound) or np.any(b > bound * (1 + 1e-9)):
        raise ValueError(f"every pair needs |a| <= b <= {bound}")
    runs, n = a.shape
    ratios = np.linspace(-1.0, 1.0, grid)
    nulls = (1.0 + ratios) / 2.0  # where the hypothesised mean 0 sits in each test's range
    lo, hi = np.empty(runs), np.empty(runs)
    for part in _chunks(runs, grid):
        count = part.stop - part.start
        capital = _HedgedCapital(count * grid, np.tile(nulls, count)[:, None], alpha=alpha, horizon=n)
        step = max(1, _CHUNK // (count * grid))
        capital.advance_blocks(  # a row per (run, ratio); the tests' values a block of matches at a time
            np.clip(
                (a[part, None, cols] - ratios[None, :, None] * b[part, None, cols]) / (2.0 * bound)
                + nulls[None, :, None],
                0.0,
                1.0,
            ).reshape(count * grid, -1)
            for cols in (slice(start, start + step) for start in range(0, n, step))
        )
        shape = (count, grid)
        lo[part], hi[part] = _span(
            capital.excluded.reshape(shape),
            capital.capital().reshape(shape),
            np.broadcast_to(ratios, shape),
            1.0 / (grid - 1),
            (-1.0, 1.0),
        )
    return lo, hi


def ratio_interval(
    numerators: Sequence[float] | np.ndarray,
    denominators: Sequence[float] | np.ndarray,
    bound: float,
    *,
    alpha: float = 0.05,
) -> Interval:
    """:func:`ratio_intervals` of one sample of pairs ``(a_t, b_t)``, in the order given; ``mean`` is the ratio of the
    sums (0 when every ``b`` is 0). No pairs: NaNs.

    Raises:
        ValueError: ``bound`` not positive, or a pair outside ``|a| <= b <= bound``.
    """
    a, b = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    if a.size == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    lo, hi = ratio_intervals(a[None, :], b[None, :], bound, alpha=alpha)
    total = float(b.sum())
    return Interval(float(lo[0]), float(hi[0]), float(a.sum()) / total if total else 0.0, int(a.size))


def payoff_bounds(game_strings: Iterable[str], *, data_dir: str | Path | None = None) -> dict[str, tuple[float, float]]:
    """Per game variant of ``game_strings``, its payoff range: the game's min and max utility. A variant whose game
    declares no finite range, or cannot be loaded (a record's game string that names a file outside ``data_dir``:
    :func:`~deepeval_games.core.registry.games.load_recorded_game`), is left out, with a logged warning: no method
    gives a valid
    interval of a mean of values with no known bound from finitely many of them."""
    bounds: dict[str, tuple[float, float]] = {}
    seen: set[str] = set()
    for game_string in game_strings:
        variant = game_variant(game_string)
        if variant in seen:
            continue
        seen.add(variant)
        try:
            game = load_recorded_game(game_string, data_dir=data_dir)
        except DeepEvalError as exc:  # an unknown game, a file outside data_dir, its data missing
            log.warning("no payoff range for %s (intervals left out): %s", variant, exc)
            continue
        low, high = float(game.min_utility()), float(game.max_utility())
        if math.isfinite(low) and math.isfinite(high) and high > low:
            bounds[variant] = (low, high)
        else:
            log.warning("%s declares no finite payoff range (intervals left out)", variant)
    return bounds


def records_bounds(records: Iterable[MatchRecord], *, data_dir: str | Path | None = None) -> tuple[float, float] | None:
    """The payoff range of the games of ``records``: the widest of their variants' ranges; ``None`` when a variant
    has none (or there are no records)."""
    games = {r.game for r in records}
    bounds = payoff_bounds(sorted(games), data_dir=data_dir)
    if not games or len(bounds) < len({game_variant(g) for g in games}):
        return None
    return min(lo for lo, _ in bounds.values()), max(hi for _, hi in bounds.values())


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
    :func:`~deepeval_games.core.registry.games.load_recorded_game`), with a logged warning. Sorted by variant, role,
    then mean
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
    bounds = payoff_bounds(games.values(), data_dir=data_dir)
    out = []
    for (variant, role, name), values in rows.items():
        span = bounds.get(variant)
        if span is None:
            continue
        sequence = make_sequence(method, *span, alpha=alpha)
        interval = sequence.extend(p for _, p in sorted(values, key=lambda pair: pair[0]))
        out.append(AnytimeScore(variant, name, role, interval))
    return sorted(out, key=lambda s: (s.variant, s.role, -s.interval.mean, s.player))
