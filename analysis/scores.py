"""The paper's evaluation results, computed from match records.

* Eq. 1 (symmetric tasks): a player's score is its mean payoff over the matches it played.
* Eq. 2 (asymmetric tasks): a player's score *per role* is its mean payoff over the matches in which
  it played that role.

Each score carries its spread (standard deviation), the number of matches, and a 95% confidence interval of the
mean that holds at any number of matches: the fixed-n hedged-capital betting interval of
:func:`analysis.confseq.mean_interval` on the game's payoff range (its min and max utility), over the payoffs in the
order of repetition (repeat, game, match id). It assumes only that the payoffs lie in that range, so at the paper's
sizes (6 to 10 matches) it is wide, which is what such a sample can say. A game with no finite payoff range gets the
interval ``(-inf, inf)``: no method bounds the mean of values with no known bound from finitely many of them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.confseq import mean_interval, records_bounds
from deepeval_games.core.records import MatchRecord

__all__ = ["Score", "payoffs_by_player", "payoffs_by_role", "role_scores", "symmetric_scores"]


@dataclass(frozen=True)
class Score:
    """Mean payoff of one player (optionally in one role) with its spread."""

    player: str
    mean: float
    std: float
    n: int
    ci_low: float
    """The 95% interval of the mean (module docstring); ``-inf`` when the game has no finite payoff range."""
    ci_high: float
    min: float
    max: float
    role: str | None = None


def _score(player: str, values: Sequence[float], bounds: tuple[float, float] | None, role: str | None = None) -> Score:
    data = np.asarray(values, dtype=float)
    if bounds is None:
        low, high = -math.inf, math.inf
    else:
        interval = mean_interval(data, *bounds)
        low, high = interval.low, interval.high
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
    """The complete records in the order of repetition (repeat, game, match id): an order the payoffs do not set."""
    return sorted((r for r in records if r.status == "complete"), key=lambda r: (r.repeat, r.game, r.match_id))


def payoffs_by_player(records: Iterable[MatchRecord]) -> dict[str, list[float]]:
    """The rows of the payoff matrix V: every payoff of every player, in the order of repetition."""
    rows: dict[str, list[float]] = defaultdict(list)
    for record in _complete(records):
        for name, payoff in zip(record.seats, record.returns, strict=True):
            rows[name].append(float(payoff))
    return dict(rows)


def payoffs_by_role(records: Iterable[MatchRecord]) -> dict[tuple[str, str], list[float]]:
    """Payoffs keyed by (player, role), in the order of repetition."""
    rows: dict[tuple[str, str], list[float]] = defaultdict(list)
    for record in _complete(records):
        roles = record.roles or ["player"] * len(record.seats)
        for name, role, payoff in zip(record.seats, roles, record.returns, strict=True):
            rows[(name, role)].append(float(payoff))
    return dict(rows)


def symmetric_scores(records: Iterable[MatchRecord], *, data_dir: str | Path | None = None) -> list[Score]:
    """Eq. 1: each player's mean payoff, best first (``data_dir``: where a game of the records may read files)."""
    done = _complete(records)
    bounds = records_bounds(done, data_dir=data_dir)
    scores = [_score(name, values, bounds) for name, values in payoffs_by_player(done).items()]
    return sorted(scores, key=lambda s: (-s.mean, s.player))


def role_scores(records: Iterable[MatchRecord], *, data_dir: str | Path | None = None) -> list[Score]:
    """Eq. 2: each player's mean payoff in each role, sorted by role then best first."""
    done = _complete(records)
    bounds = records_bounds(done, data_dir=data_dir)
    scores = [_score(name, values, bounds, role) for (name, role), values in payoffs_by_role(done).items()]
    return sorted(scores, key=lambda s: (s.role or "", -s.mean, s.player))
