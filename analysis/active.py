"""Active matchmaking: pair-level selection of what to play next, stopped by anytime-valid pair intervals.

The rule (what ``pairing = "active"`` drives) ranks the same *keys* as :mod:`analysis.stopping` (a player in one role
of one game variant) and is fed round by round with the same protocol (:meth:`ActiveRanking.begin_round`,
:meth:`~ActiveRanking.add`, :meth:`~ActiveRanking.end_round`). Round ``r`` offers every seating of repeat ``r`` of a
round robin; the rule picks some:

1. The first ``initial_rounds`` rounds play every seating.
2. **Pair statistics.** For two keys ``a`` and ``b`` of one ranking, a round's *paired observation* is ``a``'s payoff
   in a seating minus ``b``'s payoff in the seating where ``b`` takes ``a``'s place (same seat, same role, same
   opponents; where both sit in it, they swap places). Each seating pair gives one observation, in a fixed order, so
   observations are independent given the earlier rounds. Their conditional mean is how much better ``a`` does than
   ``b`` against the same opponents: opponent mixes cancel out, whatever the schedule picked. Each pair's observations
   feed an anytime-valid confidence sequence (:mod:`analysis.confseq`, on ``[-(high - low), high - low]``) at level
   ``alpha / (keys choose 2)``: every pair interval of a ranking covers at once with probability ``1 - alpha``, at
   every round, however the rounds were chosen.
3. **Ranking.** Keys are ordered by a least-squares fit of scores to the pairs' mean differences, weighted by the
   observations behind each (``s_a - s_b ~ mean(a - b)``; a Bradley–Terry-like fit that needs no win/loss outcome).
4. **Which pairs matter.** Two adjacent keys are *separated* when their pair interval excludes 0, *tied* when it is
   narrower than ``epsilon`` (their mean payoffs then surely differ by at most ``epsilon``), else *unresolved*.
5. **Selection in balanced blocks.** Unresolved adjacent pairs chain into runs of consecutive keys; each run is cut
   into windows of at most ``window`` keys that overlap by one key, and a round plays, in each window, every seating
   of the repeat whose players all belong to it: a complete round robin of the window, so every selected player
   plays each other member of its window equally often, in every seat order.
6. The run stops when no adjacent pair is unresolved (``resolved``), before a round that would pass the ``budget``,
   after ``max_rounds`` rounds, or when a round's matches failed.

Every decision depends only on the offered seatings and the payoffs of earlier rounds: a killed run replays its
committed rounds to the same decisions and resumes with the same schedule.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from analysis.confseq import ConfidenceSequence, Interval, make_sequence
from analysis.stopping import Key, PairStatus, RoundFeed, Seating, StoppingReport

__all__ = ["ActiveRanking"]

Group = tuple[str, str]
"""(game variant, role): one ranking."""


class ActiveRanking(RoundFeed):
    """The active rule of the module docstring, with the round protocol of
    :class:`~analysis.stopping.AdaptiveStopping` (``begin_round`` / ``add`` / ``end_round`` / ``report``).

    Args:
        bounds: each game variant's payoff range.
        alpha: error level of all pair intervals of one ranking together.
        epsilon: indifference margin: an adjacent pair whose difference interval is narrower is resolved.
        initial_rounds: rounds that play every seating.
        max_rounds: the most rounds.
        budget: the most matches in all (None: no limit but ``max_rounds``).
        method: the confidence sequence (``betting`` or ``bernstein``).
        window: the most keys in one block of a round (at least the game's seats plus one).

    Raises:
        ValueError: a bad parameter.
    """

    def __init__(
        self,
        bounds: Mapping[str, tuple[float, float]],
        *,
        alpha: float = 0.05,
        epsilon: float = 0.0,
        initial_rounds: int = 1,
        max_rounds: int = 50,
        budget: int | None = None,
        method: str = "betting",
        window: int = 8,
    ) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        if epsilon < 0 or initial_rounds < 1 or max_rounds < 1 or (budget is not None and budget < 1) or window < 2:
            raise ValueError("epsilon must be >= 0; initial_rounds, max_rounds and budget >= 1; window >= 2")
        make_sequence(method, 0.0, 1.0)  # an unknown method fails here
        self.bounds, self.method = dict(bounds), method
        self.alpha, self.epsilon = float(alpha), float(epsilon)
        self.initial_rounds, self.max_rounds, self.budget, self.window = initial_rounds, max_rounds, budget, window
        self._members: dict[Group, set[Key]] = defaultdict(set)
        self._pairs: dict[tuple[Key, Key], ConfidenceSequence] = {}  # (a, b) with a < b: the sequence of a - b
        self._sums: dict[tuple[Key, Key], list[float]] = {}  # [sum of a - b, observations]
        self._windows: list[set[str]] | None = None  # None: play everything
        self._seats = 2  # the most seats of a game seen (a block needs one player more for a paired observation)
        self._round: list[Seating] = []
        self._results: dict[str, Sequence[float]] = {}
        self._failed = False
        self.report = StoppingReport()

    # -- the round protocol ----------------------------------------------------------------------------------

    def begin_round(self, seatings: Sequence[Seating]) -> list[Seating]:
        """Given every seating of this round's repeat, the ones to play (in the given order); an empty list, and the
        report's reason set, when the budget does not allow the round.

        Raises:
            ValueError: a variant without bounds.
        """
        for seating in seatings:
            if seating.variant not in self.bounds:
                raise ValueError(f"no payoff bounds for {seating.variant}")
            self._seats = max(self._seats, len(seating.seats))
            for key in seating.sitting():
                self._members[(key[0], key[1])].add(key)
        if self._windows is None or self.report.rounds < self.initial_rounds:
            selected = list(seatings)
        else:
            windows = self._windows
            selected = [s for s in seatings if any(w.issuperset(s.seats) for w in windows)]
        if not self._admit(selected):
            return []
        self._round = selected
        return selected

    def end_round(self, *, failed: bool = False) -> StoppingReport:
        """Add this round's paired observations, re-rank, pick the next round's windows and decide."""
        played = [s for s in self._round if s.match_id in self._results]
        for pair, values in sorted(self._observations(played).items()):
            if pair not in self._pairs:
                low, high = self.bounds[pair[0][0]]
                size = len(self._members[(pair[0][0], pair[0][1])])
                self._pairs[pair] = make_sequence(
                    self.method, low - high, high - low, alpha=self.alpha / max(1, math.comb(size, 2))
                )
                self._sums[pair] = [0.0, 0.0]
            self._pairs[pair].extend(values)
            self._sums[pair][0] += sum(values)
            self._sums[pair][1] += len(values)
        self._round, self._results = [], {}
        self.report.rounds += 1
        unresolved = self._rank()
        if failed or self._failed:
            self.report.reason = "failed"
        elif not unresolved:
            self.report.reason = "resolved"
        elif self.report.rounds >= self.max_rounds:
            self.report.reason = "max_rounds"
        return self.report

    # -- internals -----------------------------------------------------------------------------------------------

    def _observations(self, played: Sequence[Seating]) -> dict[tuple[Key, Key], list[float]]:
        """Each pair's paired observations of this round, in the order of the played seatings."""
        by_seats = {(s.variant, s.seats): s for s in played}  # a round may offer several variants
        by_set: dict[tuple[str, frozenset[tuple[str, str]]], Seating] = {}
        for s in played:
            by_set.setdefault((s.variant, frozenset(zip(s.seats, s.roles, strict=True))), s)
        sitting: dict[Key, list[Seating]] = defaultdict(list)
        for s in played:
            for key in sorted(s.sitting()):
                sitting[key].append(s)
        out: dict[tuple[Key, Key], list[float]] = {}
        for keys in self._members.values():
            present = sorted(k for k in keys if k in sitting)
            for a, b in itertools.combinations(present, 2):
                values, used = [], set()
                for s in sitting[a]:
                    partner = self._partner(s, a, b, by_seats, by_set)
                    if partner is None or s.match_id in used or partner.match_id in used:
                        continue
                    used |= {s.match_id, partner.match_id}
                    values.append(_payoff(s, a, self._results) - _payoff(partner, b, self._results))
                if values:
                    out[(a, b)] = values
        return out

    @staticmethod
    def _partner(
        s: Seating,
        a: Key,
        b: Key,
        by_seats: Mapping[tuple[str, tuple[str, ...]], Seating],
        by_set: Mapping[tuple[str, frozenset[tuple[str, str]]], Seating],
    ) -> Seating | None:
        """The played seating where ``b`` takes ``a``'s place in ``s`` (they swap when both sit), if any."""
        role = a[1]
        seat = next(i for i, (n, r) in enumerate(zip(s.seats, s.roles, strict=True)) if n == a[2] and r == role)
        swapped = tuple(b[2] if i == seat else a[2] if n == b[2] else n for i, n in enumerate(s.seats))
        partner = by_seats.get((s.variant, swapped))
        if partner is None:  # seat orders drawn per repeat (combinations): the same players in the same roles
            partner = by_set.get((s.variant, frozenset(zip(swapped, s.roles, strict=True))))
        if partner is None or partner.match_id == s.match_id or (b[0], role, b[2]) not in partner.sitting():
            return None
        return partner

    def _scores(self, keys: list[Key]) -> np.ndarray:
        """Least-squares scores of ``keys``: ``s_a - s_b`` fitted to each pair's mean difference, weighted by its
        observations (the minimum-norm solution; keys without observations score 0)."""
        index = {k: i for i, k in enumerate(keys)}
        laplacian = np.zeros((len(keys), len(keys)))
        rhs = np.zeros(len(keys))
        for (a, b), (total, n) in self._sums.items():
            if a in index and b in index and n:
                i, j = index[a], index[b]
                laplacian[i, i] += n
                laplacian[j, j] += n
                laplacian[i, j] -= n
                laplacian[j, i] -= n
                rhs[i] += total
                rhs[j] -= total
        return np.linalg.lstsq(laplacian, rhs, rcond=None)[0]

    def _interval(self, a: Key, b: Key) -> Interval | None:
        """The interval of ``a - b`` (None before an observation)."""
        if (a, b) in self._pairs:
            return self._pairs[(a, b)].interval()
        if (b, a) in self._pairs:
            iv = self._pairs[(b, a)].interval()
            return Interval(-iv.high, -iv.low, -iv.mean, iv.n)
        return None

    def _rank(self) -> set[tuple[Key, Key]]:
        pairs, unresolved, intervals = [], set(), {}
        windows: list[set[str]] = []
        for group in sorted(self._members):
            keys = sorted(self._members[group])
            scores = self._scores(keys)
            order = [keys[i] for i in sorted(range(len(keys)), key=lambda i: (-scores[i], keys[i][2]))]
            chain: list[Key] = [order[0]]
            runs: list[list[Key]] = []
            widths: dict[Key, float] = defaultdict(float)
            for better, worse in itertools.pairwise(order):
                iv = self._interval(better, worse)
                if iv is not None and (iv.low > 0 or iv.high < 0):
                    status = "separated"
                    if iv.high < 0:  # the interval overrules the fit
                        better, worse = worse, better
                elif iv is not None and iv.high - iv.low <= self.epsilon:
                    status = "tied"
                else:
                    status = "unresolved"
                    unresolved.add((better, worse))
                if iv is not None:
                    for key in (better, worse):
                        widths[key] = max(widths[key], iv.half_width)
                pairs.append(PairStatus(better, worse, status))
                if status == "unresolved":
                    chain.append(worse)
                else:
                    if len(chain) > 1:
                        runs.append(chain)
                    chain = [worse]
            if len(chain) > 1:
                runs.append(chain)
            for run in runs:
                for w in _windows(run, self.window):
                    windows.append({k[2] for k in _padded(w, order, self._seats + 1 if self._seats > 2 else 2)})
            n = {k: int(sum(v[1] for p, v in self._sums.items() if k in p)) for k in keys}
            for key, score in zip(keys, scores, strict=True):
                intervals[key] = Interval(float(score) - widths[key], float(score) + widths[key], float(score), n[key])
        self._windows = windows
        self.report.intervals, self.report.pairs = intervals, pairs
        return unresolved


def _payoff(s: Seating, key: Key, results: Mapping[str, Sequence[float]]) -> float:
    """``key``'s payoff in ``s`` (the mean, should the player fill several seats in the role)."""
    mine = [p for n, r, p in zip(s.seats, s.roles, results[s.match_id], strict=True) if n == key[2] and r == key[1]]
    return sum(mine) / len(mine)


def _padded(window: list[Key], order: list[Key], size: int) -> list[Key]:
    """``window`` (consecutive in ``order``) grown by its neighbours in ``order``, below first, to ``size`` keys."""
    if len(window) >= size:
        return window
    start, stop = order.index(window[0]), order.index(window[-1]) + 1
    while stop - start < min(size, len(order)):
        if stop < len(order):
            stop += 1
        else:
            start -= 1
    return order[start:stop]


def _windows(run: list[Key], size: int) -> list[list[Key]]:
    """``run`` cut into windows of at most ``size`` keys that overlap by one key (every adjacent pair in one)."""
    if len(run) <= size:
        return [run]
    return [run[i : i + size] for i in range(0, len(run) - 1, size - 1)]
