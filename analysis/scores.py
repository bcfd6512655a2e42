"""The paper's evaluation results, computed from match records.

* Eq. 1 (symmetric tasks): a player's score is its mean payoff over the matches it played.
* Eq. 2 (asymmetric tasks): a player's score *per role* is its mean payoff over the matches in which
  it played that role.

Eq. 1 scores a per-match value of each seat: the payoff by default, or what a task's paper scores (Idiom
Solitaire: a win, 1 or 0, so the mean is the share of matches won). A task's tables module may give the report
its headline this way (:class:`Headline`), e.g. Eq. 1 over seats that the records name by position (early,
late) in a symmetric task.

Each score carries its spread (standard deviation), the number of matches, and a percentile bootstrap
95% confidence interval of the mean (seeded, so the same records give the same interval).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from deepeval_games.core.records import MatchRecord

__all__ = [
    "Headline",
    "Score",
    "SeatValue",
    "bootstrap_ci",
    "payoffs_by_player",
    "payoffs_by_role",
    "role_scores",
    "symmetric_scores",
]

SeatValue = Callable[[MatchRecord, int], float]
"""A per-match value of one seat (its payoff, or whether it won), given the record and the seat."""


@dataclass(frozen=True)
class Score:
    """Mean payoff of one player (optionally in one role) with its spread."""

    player: str
    mean: float
    std: float
    n: int
    ci_low: float
    ci_high: float
    min: float
    max: float
    role: str | None = None


@dataclass(frozen=True)
class Headline:
    """A task's headline scores, which the report shows in place of the default Eq. 1 / Eq. 2 table."""

    title: str
    """What the scores are (``Eq. 1 — wins per player, ...``)."""
    scores: list[Score]
    note: str = ""
    """A line printed under the table, if any."""


_BOOTSTRAP_BLOCK = 1 << 20
"""Resampled values drawn at once by :func:`bootstrap_ci` (8 MB of floats)."""


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, *, level: float = 0.95, samples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean; a single value gives a zero-width interval."""
    data = np.sort(np.asarray(values, dtype=float))  # the same values give the same interval in any order
    if data.size == 0:
        return (float("nan"), float("nan"))
    if data.size == 1 or np.all(data == data[0]):
        return (float(data[0]), float(data[0]))
    rng = np.random.default_rng(seed)
    # resamples drawn a block of rows at a time: the same random stream, so the same means as one
    # (samples x n) draw, in bounded memory (one draw of 2,000 x 10,000 payoffs took 320 MB)
    rows = max(1, _BOOTSTRAP_BLOCK // data.size)
    means = np.empty(samples)
    for start in range(0, samples, rows):
        block = min(rows, samples - start)
        means[start : start + block] = rng.choice(data, size=(block, data.size), replace=True).mean(axis=1)
    tail = (1.0 - level) / 2.0
    return (float(np.quantile(means, tail)), float(np.quantile(means, 1.0 - tail)))


def _score(player: str, values: Sequence[float], role: str | None = None) -> Score:
    data = np.asarray(values, dtype=float)
    low, high = bootstrap_ci(data)
    return Score(
        player=player,
        mean=float(data.mean()),
        std=float(data.std(ddof=1)) if data.size > 1 else 0.0,
        n=int(data.size),
        ci_low=low,
        ci_high=high,
        min=float(data.min()),
        max=float(data.max()),
        role=role,
    )


def _complete(records: Iterable[MatchRecord]) -> list[MatchRecord]:
    return [r for r in records if r.status == "complete"]


def payoffs_by_player(records: Iterable[MatchRecord], value: SeatValue | None = None) -> dict[str, list[float]]:
    """The rows of the payoff matrix V: every payoff (or ``value``) of every player, in record order."""
    rows: dict[str, list[float]] = defaultdict(list)
    for record in _complete(records):
        for seat, name in enumerate(record.seats):
            rows[name].append(float(record.returns[seat]) if value is None else float(value(record, seat)))
    return dict(rows)


def payoffs_by_role(records: Iterable[MatchRecord]) -> dict[tuple[str, str], list[float]]:
    """Payoffs keyed by (player, role)."""
    rows: dict[tuple[str, str], list[float]] = defaultdict(list)
    for record in _complete(records):
        roles = record.roles or ["player"] * len(record.seats)
        for name, role, payoff in zip(record.seats, roles, record.returns, strict=True):
            rows[(name, role)].append(float(payoff))
    return dict(rows)


def symmetric_scores(records: Iterable[MatchRecord], value: SeatValue | None = None) -> list[Score]:
    """Eq. 1: each player's mean payoff (or mean ``value``) over every seat it played, best first."""
    scores = [_score(name, values) for name, values in payoffs_by_player(records, value).items()]
    return sorted(scores, key=lambda s: (-s.mean, s.player))


def role_scores(records: Iterable[MatchRecord]) -> list[Score]:
    """Eq. 2: each player's mean payoff in each role, sorted by role then best first."""
    scores = [_score(name, values, role) for (name, role), values in payoffs_by_role(records).items()]
    return sorted(scores, key=lambda s: (s.role or "", -s.mean, s.player))
