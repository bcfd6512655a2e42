"""Players compared where they met: who finished ahead in the matches two players shared.

Two players who sit in the same match (in the same role) are compared on that match alone: the one whose payoff is
higher *finished ahead*; equal payoffs are a tie. Whatever the match had in common (the other seats, the deal, the
data item) cancels, so such a comparison needs far fewer matches than two players' separate means: in a Public Goods
Game where one player scores 90-99 coins and another 40-49 in the same twelve matches, the first finished ahead in
12 of 12, which tells them apart, while the two means' intervals (each spanning the spread of the matches) still
overlap.

Each shared match gives the pair a *point* for the first player: 1 ahead, 1/2 tie, 0 behind (a player sitting in
several seats of a match is compared by its mean payoff there). A pair's **advantage** is twice the mean point minus
one: the share of shared matches the first finished ahead in minus the share it finished behind in, from -1 to +1.
Its 95% interval is, by the run's interval policy (:meth:`~analysis.stats.intervals.IntervalPolicy.pair_interval`),
the fixed-n one (the exact interval of a mean on 0, 1/2, 1) for a run of a fixed size, or the anytime-valid betting
sequence at the stopping time for a run a stopping rule ended; either at the level ``alpha`` shared by every pair of
the ranking (Bonferroni), so all of a ranking's verdicts hold at once. A pair is **told apart** when the interval
excludes 0: the player with the positive advantage finishes ahead of the other more often than not. Points enter in
the order of repetition (repeat, game, match id), as the adaptive stopping rule (:mod:`analysis.stats.stopping`)
feeds them, so the rule's verdicts and a report's are the same.

Players who never share a match keep the unpaired comparison: their means' intervals (told apart when they do not
overlap).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from analysis import views
from analysis.stats.confseq import Interval
from analysis.stats.intervals import IntervalPolicy
from deepeval_games.core.records import MatchRecord

__all__ = ["Comparison", "comparisons", "match_points", "pair_count", "shared_points"]

Pair = tuple[str, str]
"""Two players of one ranking, in name order."""


@dataclass(frozen=True)
class Comparison:
    """Two players of one ranking compared where they met (``first`` before ``second`` in name order)."""

    first: str
    second: str
    shared: int
    """Matches both played (in the ranking's role)."""
    ahead: int
    """Shared matches ``first`` finished ahead in."""
    behind: int
    """Shared matches ``first`` finished behind in (the rest are ties)."""
    advantage: Interval
    """``first``'s advantage (ahead share minus behind share, -1..+1) with its 95% interval (module docstring)."""

    @property
    def ties(self) -> int:
        """Shared matches in which neither finished ahead."""
        return self.shared - self.ahead - self.behind

    @property
    def told_apart(self) -> bool:
        """Whether the advantage's interval excludes 0."""
        return self.shared > 0 and (self.advantage.low > 0.0 or self.advantage.high < 0.0)

    @property
    def leader(self) -> str | None:
        """The player that finishes ahead more often where they are told apart; None where they are not."""
        if not self.told_apart:
            return None
        return self.first if self.advantage.low > 0.0 else self.second

    def describe(self) -> str:
        """``a ahead of b in 12 of 12 shared matches (0 behind; advantage +1.00, 95% interval [+0.13, +1.00])``, from
        the leader's side where there is one; ``a and b: 12 shared matches, ...`` where there is none."""
        lead = self.leader or (self.first if self.ahead >= self.behind else self.second)
        flip = lead != self.first
        other = self.first if flip else self.second
        ahead, behind = (self.behind, self.ahead) if flip else (self.ahead, self.behind)
        iv = self.advantage
        low, high = (-iv.high, -iv.low) if flip else (iv.low, iv.high)
        ties = f", {self.ties} tied" if self.ties else ""
        advantage = f"advantage {(ahead - behind) / self.shared:+.2f}, 95% interval [{low:+.2f}, {high:+.2f}]"
        if self.leader is None:
            return (
                f"{lead} and {other}: {self.shared} shared matches, {lead} ahead in {ahead}, behind in {behind}"
                f"{ties} ({advantage})"
            )
        return (
            f"{lead} ahead of {other} in {ahead} of {self.shared} shared matches ({behind} behind{ties}; {advantage})"
        )


def pair_count(players: int) -> int:
    """The pairs of a ranking of ``players``: how many comparisons share its level."""
    return max(players * (players - 1) // 2, 1)


def match_points(seats: Sequence[str], returns: Sequence[float], roles: Sequence[str]) -> dict[tuple[str, Pair], float]:
    """The points of one match: (role, pair) -> the first player's point (1 ahead, 1/2 tie, 0 behind) for every two
    players of one role sitting in it (a player in several seats of the role: its mean payoff there)."""
    payoffs: dict[tuple[str, str], list[float]] = defaultdict(list)
    for name, role, payoff in zip(seats, roles, returns, strict=True):
        payoffs[(role, name)].append(float(payoff))
    by_role: dict[str, dict[str, float]] = defaultdict(dict)
    for (role, name), values in payoffs.items():
        by_role[role][name] = sum(values) / len(values)
    points = {}
    for role, means in by_role.items():
        for a, b in itertools.combinations(sorted(means), 2):
            points[(role, (a, b))] = 1.0 if means[a] > means[b] else 0.0 if means[a] < means[b] else 0.5
    return points


def shared_points(records: Iterable[MatchRecord]) -> dict[tuple[str, Pair], list[float]]:
    """(role, pair) -> the first player's points over the pair's shared matches, in the order of repetition (the
    complete records only)."""
    out: dict[tuple[str, Pair], list[float]] = defaultdict(list)
    plans: dict[tuple[str, ...], list[tuple[int, int, list[float]]] | None] = {}  # per seating: its pairs' lists
    for record in views.in_repetition_order(views.complete(records)):
        seats, returns, roles = record.seats, record.returns, record.roles
        seating = (*seats, "", *roles)
        plan = plans.get(seating, ())
        if plan == ():
            plan = plans[seating] = _plan(seats, roles, out)
        if plan is not None:  # one role, a seat a player: match_points' result straight from the seats
            for i, j, bucket in plan:
                a, b = returns[i], returns[j]
                bucket.append(1.0 if a > b else 0.0 if a < b else 0.5)
            continue
        for key, point in match_points(seats, returns, roles or ["player"] * len(seats)).items():
            out[key].append(point)
    return dict(out)


def _plan(
    seats: Sequence[str], roles: Sequence[str], out: dict[tuple[str, Pair], list[float]]
) -> list[tuple[int, int, list[float]]] | None:
    """For a seating of one role with a seat a player: each pair's seats (first in name order) and its list in
    ``out``; None for any other seating (:func:`match_points` then reads it)."""
    role = roles[0] if roles else "player"
    if (roles and roles.count(role) != len(roles)) or len(set(seats)) != len(seats):
        return None
    order = sorted(range(len(seats)), key=seats.__getitem__)
    return [(i, j, out[(role, (seats[i], seats[j]))]) for i, j in itertools.combinations(order, 2)]


def comparisons(
    points: Mapping[tuple[str, Pair], Sequence[float]], policy: IntervalPolicy, players: Mapping[str, int]
) -> dict[tuple[str, Pair], Comparison]:
    """Every pair's comparison from its shared points (:func:`shared_points`), its interval by ``policy`` at the level
    shared by the pairs of its ranking (``players``: role -> how many players the ranking has)."""
    out = {}
    for (role, (a, b)), values in points.items():
        if not values:
            continue
        share = policy.pair_interval(values, pairs=pair_count(players.get(role, 2)))
        advantage = Interval(2 * share.low - 1, 2 * share.high - 1, 2 * share.mean - 1, share.n)
        ahead = sum(1 for v in values if v == 1.0)
        behind = sum(1 for v in values if v == 0.0)
        out[(role, (a, b))] = Comparison(a, b, len(values), ahead, behind, advantage)
    return out
