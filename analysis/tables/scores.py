"""The paper's evaluation results, computed from match records.

* Eq. 1 (symmetric tasks): a player's score is its mean payoff over the matches it played.
* Eq. 2 (asymmetric tasks): a player's score *per role* is its mean payoff over the matches in which
  it played that role.

Eq. 1 scores a per-match value of each seat: the payoff by default, or what a task's paper scores (Idiom
Solitaire: a win, 1 or 0, so the mean is the share of matches won). A task's tables module may give the report
its headline this way (:class:`Headline`), e.g. Eq. 1 over seats that the records name by position (early,
late) in a symmetric task.

Each score carries its spread (standard deviation), the number of matches, and a 95% confidence interval of the
mean that holds at any number of matches, by the method the interval version selects
(:class:`~analysis.stats.intervals.IntervalPolicy`): version 1 (the default here, and a run that records none) the
fixed-n hedged-capital betting interval (``betting-eb/1``) on the game's payoff range (its min and max utility);
version 2 the exact interval (``exact-discrete/1``) where the game declares its payoff values, betting otherwise;
over the payoffs in the order of repetition (repeat, game, match id). Either assumes only what the game says of its
payoffs, so at the paper's sizes (6 to 10 matches) it is wide, which is what such a sample can say. A game with no
finite payoff range gets the interval ``(-inf, inf)``: no method bounds the mean of values with no known bound from
finitely many of them.

A run whose stopping rule looked at its results to decide when to stop (its interval policy marked as collected
adaptively: :attr:`~analysis.stats.intervals.IntervalPolicy.anytime`) gets, instead, the anytime-valid interval at
the stopping time that the rule itself computed: its confidence sequence over each player's repeat blocks
(:func:`repeat_blocks`), at the level shared by the players of a ranking. A fixed-n interval would not be valid
there, and printing both would give one number two intervals.
"""

from __future__ import annotations

import math
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis import views
from analysis.stats.confseq import records_bounds
from analysis.stats.intervals import OLD_POLICY, IntervalPolicy
from deepeval_games.core.records import MatchRecord

__all__ = [
    "Headline",
    "Score",
    "SeatValue",
    "Table",
    "in_repetition_order",
    "payoffs_by_player",
    "payoffs_by_role",
    "repeat_blocks",
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
    """The 95% interval of the mean (module docstring); ``-inf`` when the game has no finite payoff range."""
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


@dataclass(frozen=True)
class Table:
    """A table as cells, for a report that draws tables (the HTML report) rather than printing text: a task's tables
    module may give its tables this way too (``tables(records)``, :mod:`deepeval_games.app.reports.task_tables`)."""

    key: str
    """A stable name (an HTML attribute and a test's handle)."""
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""
    """A sentence shown under the table (what its numbers are), if any."""


def _scores(
    rows: Iterable[tuple[str, str | None, Sequence[float]]],
    bounds: tuple[float, float] | None,
    policy: IntervalPolicy,
    blocks: dict[tuple[str, str | None], np.ndarray] | None = None,
) -> list[Score]:
    """A score per (player, role, values) row, its interval by ``policy``'s method of a mean (the players of a role
    share a ranking: an adaptively collected run's level is shared by them). An adaptively collected run's interval
    is its sequence over ``blocks`` (each row's repeat blocks: :func:`repeat_blocks`), as the stopping rule fed it.
    The intervals of rows of one length and role are computed together (each method treats each row apart, so each
    is the interval of that row alone; the work per value is shared by the rows)."""
    data = {(player, role): np.asarray(values, dtype=float) for player, role, values in rows}
    observed = data if blocks is None else {key: blocks.get(key, data[key]) for key in data}
    intervals = dict.fromkeys(data, (-math.inf, math.inf))
    ranked: dict[str | None, int] = defaultdict(int)  # players per role: who share a ranking's level
    for _, role in data:
        ranked[role] += 1
    if bounds is not None:
        by_length: dict[tuple[int, str | None], list[tuple[str, str | None]]] = defaultdict(list)
        for key, values in observed.items():
            by_length[(values.size, key[1])].append(key)
        for (size, role), keys in by_length.items():
            if size == 0:  # no values: no interval (as mean_interval has it)
                intervals.update(dict.fromkeys(keys, (math.nan, math.nan)))
                continue
            samples = np.stack([observed[key] for key in keys])
            low, high = policy.mean_intervals(samples, *bounds, players=ranked[role])
            intervals.update((key, (float(lo), float(hi))) for key, lo, hi in zip(keys, low, high, strict=True))
    return [
        Score(
            player=player,
            mean=float(values.mean()),
            std=float(values.std(ddof=1)) if values.size > 1 else 0.0,
            n=int(values.size),
            ci_low=intervals[(player, role)][0],
            ci_high=intervals[(player, role)][1],
            min=float(values.min()),
            max=float(values.max()),
            role=role,
        )
        for (player, role), values in data.items()
    ]


def repeat_blocks(
    records: Iterable[MatchRecord], value: SeatValue | None = None, *, by_role: bool = False
) -> dict[tuple[str, str | None], np.ndarray]:
    """The observations of an adaptively collected run, as the stopping rule (:mod:`analysis.stats.stopping`) made
    them: per player (and role, with ``by_role``; None without), for each repeat it played in order, the mean over
    that repeat's matches of its mean payoff (or ``value``) in the match. A complete block meets every opponent mix
    of a repeat, so these are the rule's block means and its sequences' observations."""
    per_match: dict[tuple[str, str | None], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for record in _complete(records):
        roles = record.roles or ["player"] * len(record.seats)
        mine: dict[tuple[str, str | None], list[float]] = defaultdict(list)
        for seat, (name, role) in enumerate(zip(record.seats, roles, strict=True)):
            payoff = float(record.returns[seat]) if value is None else float(value(record, seat))
            mine[(name, role if by_role else None)].append(payoff)
        for key, payoffs in mine.items():
            per_match[key][record.repeat].append(sum(payoffs) / len(payoffs))
    return {
        key: np.array([sum(means) / len(means) for _, means in sorted(repeats.items())])
        for key, repeats in per_match.items()
    }


def in_repetition_order(records: Iterable[MatchRecord]) -> Sequence[MatchRecord]:
    """``records`` in the order of repetition (repeat, game, match id): an order the payoffs do not set
    (:func:`analysis.views.in_repetition_order`: stable sorts by each field in turn, no key tuple a record; records
    kept as columns sort themselves)."""
    return views.in_repetition_order(records)


def _complete(records: Iterable[MatchRecord]) -> Sequence[MatchRecord]:
    """The complete records in the order of repetition (:func:`in_repetition_order`)."""
    return views.in_repetition_order(views.complete(records))


def payoffs_by_player(records: Iterable[MatchRecord], value: SeatValue | None = None) -> dict[str, array[float]]:
    """The rows of the payoff matrix V: every payoff (or ``value``) of every player, in the order of repetition (as
    arrays of doubles: 8 bytes a payoff, no float object kept)."""
    rows: dict[str, array[float]] = defaultdict(lambda: array("d"))
    for record in _complete(records):
        for seat, name in enumerate(record.seats):
            rows[name].append(float(record.returns[seat]) if value is None else float(value(record, seat)))
    return dict(rows)


def payoffs_by_role(records: Iterable[MatchRecord]) -> dict[tuple[str, str], array[float]]:
    """Payoffs keyed by (player, role), in the order of repetition (arrays, as :func:`payoffs_by_player`)."""
    rows: dict[tuple[str, str], array[float]] = defaultdict(lambda: array("d"))
    for record in _complete(records):
        roles = record.roles or ["player"] * len(record.seats)
        for name, role, payoff in zip(record.seats, roles, record.returns, strict=True):
            rows[(name, role)].append(float(payoff))
    return dict(rows)


def symmetric_scores(
    records: Iterable[MatchRecord],
    value: SeatValue | None = None,
    *,
    bounds: tuple[float, float] | None = None,
    data_dir: str | Path | None = None,
    policy: IntervalPolicy = OLD_POLICY,
) -> list[Score]:
    """Eq. 1: each player's mean payoff (or mean ``value``, which lies in ``bounds``) over every seat it played, best
    first (``data_dir``: where a game of the records may read files), with the interval of ``policy``'s method of a
    mean (resolved for these records: :meth:`~analysis.stats.intervals.IntervalPolicy.for_records`; a ``value``
    gets the betting one)."""
    done = _complete(records)
    if value is None or bounds is None:
        bounds = records_bounds(done, data_dir=data_dir)
    if value is not None:
        policy = policy.with_support(None)
    rows = ((name, None, values) for name, values in payoffs_by_player(done, value).items())
    scores = _scores(rows, bounds, policy, repeat_blocks(done, value) if policy.anytime else None)
    return sorted(scores, key=lambda s: (-s.mean, s.player))


def role_scores(
    records: Iterable[MatchRecord], *, data_dir: str | Path | None = None, policy: IntervalPolicy = OLD_POLICY
) -> list[Score]:
    """Eq. 2: each player's mean payoff in each role, sorted by role then best first (intervals as
    :func:`symmetric_scores`)."""
    done = _complete(records)
    bounds = records_bounds(done, data_dir=data_dir)
    blocks = repeat_blocks(done, by_role=True) if policy.anytime else None
    rows = ((name, role, values) for (name, role), values in payoffs_by_role(done).items())
    scores = _scores(rows, bounds, policy, blocks)
    return sorted(scores, key=lambda s: (s.role or "", -s.mean, s.player))
