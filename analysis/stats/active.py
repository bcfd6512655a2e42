"""Active matchmaking: pair-level selection of what to play next, stopped by anytime-valid pair intervals.

The rule (what ``pairing = "active"`` drives) ranks the same *keys* as :mod:`analysis.stats.stopping` (a player in one
role
of one game variant) and is fed round by round with the same protocol (:meth:`ActiveRanking.begin_round`,
:meth:`~ActiveRanking.add`, :meth:`~ActiveRanking.end_round`). Round ``r`` offers every seating of repeat ``r`` of a
round robin; the rule picks some:

1. The first ``initial_rounds`` rounds play every seating.
2. **Pair statistics.** For two keys ``a`` and ``b`` of one ranking, a round's *paired observation* is ``a``'s payoff
   in a seating minus ``b``'s payoff in the seating where ``b`` takes ``a``'s place (same seat, same role, same
   opponents; where both sit in it, they swap places; where the swapped seating is not played, as when seat orders
   are drawn per repeat, their two payoffs in the match they share). Each seating pair gives one observation, in a
   fixed order, so observations are independent given the earlier rounds. Their conditional mean is how much better
   ``a`` does than ``b`` against the same opponents, whatever the schedule picked. In a ranking whose players can
   meet (two seats of one role: a symmetric game) a pair's anytime-valid confidence sequence
   (:mod:`analysis.stats.confseq`,
   on ``[-(high - low), high - low]``) is fed its *head-to-head* observations only (a and b in one match; those
   through a common opponent inform little when the opponent is much stronger or weaker); otherwise the observations
   through common opponents. The level is ``alpha / (keys choose 2)``: every pair interval of a ranking covers at
   once with probability ``1 - alpha``, at every round, however the rounds were chosen.
3. **Ranking.** Where the players meet, keys are ordered by a Bradley–Terry fit over *every* committed match: each two
   seats of the role in a match are a comparison whose outcome is the first's share of their payoff difference
   (``1/2 + (p_a - p_b) / (2 (high - low))``; a win 1, a draw 1/2), so a far opponent's easy match weighs little and
   who met whom does not bias the scores. Otherwise a least-squares fit of scores to the pairs' mean paired
   differences, weighted by the observations behind each.
4. **Which pairs matter.** Two adjacent keys are *separated* when their pair interval excludes 0, *tied* when it is
   narrower than ``epsilon`` (``top_epsilon`` for the pair at the boundary of the top ``top`` keys: a leaderboard's
   top is where an order is read first), else *unresolved*. The statuses are recomputed after every round from the
   current order, so a pair that becomes adjacent when the order around it changes is open again until its own
   interval resolves it.
5. **Selection in complete blocks.** A round plays, for each unresolved adjacent pair, every seating of the repeat
   whose players are the pair (two seats: both seat orders; ``n`` seats: the pair and its nearest neighbours in the
   order, ``n + 1`` players, every seating among them), so each block is balanced: its players meet each other in
   every seat order equally often.
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
from typing import Any

import numpy as np

from analysis.stats.confseq import ConfidenceSequence, Interval, make_sequence
from analysis.stats.ratings import fit_strengths
from analysis.stats.stopping import Key, PairStatus, RoundFeed, Seating, StoppingReport

__all__ = ["ActiveRanking"]

Group = tuple[str, str]
"""(game variant, role): one ranking."""


class ActiveRanking(RoundFeed):
    """The active rule of the module docstring, with the round protocol of
    :class:`~analysis.stats.stopping.AdaptiveStopping` (``begin_round`` / ``add`` / ``end_round`` / ``report``).

    Args:
        bounds: each game variant's payoff range.
        settings: ``alpha`` (the error level of all pair intervals of one ranking together), ``epsilon`` (an
            adjacent pair whose difference interval is narrower is resolved), ``initial_rounds``, ``max_rounds``,
            ``budget`` and ``method``, as :class:`~analysis.stats.stopping.AdaptiveStopping` takes them.
        top: resolve the order at the boundary of the top ``top`` keys of each ranking more finely (None: no such
            boundary).
        top_epsilon: the width at that boundary (default ``epsilon / 2``).

    Raises:
        ValueError: a bad parameter.
    """

    def __init__(
        self,
        bounds: Mapping[str, tuple[float, float]],
        *,
        top: int | None = None,
        top_epsilon: float | None = None,
        **settings: Any,
    ) -> None:
        if (top is not None and top < 1) or (top_epsilon is not None and top_epsilon < 0):
            raise ValueError("top must be >= 1 and top_epsilon >= 0")
        super().__init__(bounds, **settings)
        self.top = top
        self.top_epsilon = self.epsilon / 2 if top_epsilon is None else float(top_epsilon)

    def _setup(self) -> None:
        self._members: dict[Group, set[Key]] = defaultdict(set)
        self._pairs: dict[tuple[Key, Key], ConfidenceSequence] = {}  # (a, b) with a < b: the sequence of a - b
        self._sums: dict[tuple[Key, Key], list[float]] = {}  # [sum of a - b, observations]
        self._blocks: list[set[str]] | None = None  # the players of each block of the next round (None: everyone)
        self._shares: dict[tuple[Key, Key], list[float]] = {}  # (a, b), a < b: [a's shares against b, meetings]
        self._meet: set[Group] = set()  # rankings whose players can sit in one match (head-to-head pairs)
        self._seats = 2  # the most seats of a game seen (a block needs one player more for a paired observation)

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
            for role in {r for r in seating.roles if seating.roles.count(r) > 1}:
                self._meet.add((seating.variant, role))
        if self._blocks is None or self.report.rounds < self.initial_rounds:
            selected = list(seatings)
        else:
            blocks = self._blocks
            selected = [s for s in seatings if any(b.issuperset(s.seats) for b in blocks)]
        if not self._admit(selected):
            return []
        self._round = selected
        return selected

    def end_round(self, *, failed: bool = False) -> StoppingReport:
        """Add this round's paired observations, re-rank, pick the next round's windows and decide."""
        played = [s for s in self._round if s.match_id in self._results]
        for pair, (values, direct) in sorted(self._observations(played).items()):
            if pair not in self._pairs:
                low, high = self.bounds[pair[0][0]]
                size = len(self._members[(pair[0][0], pair[0][1])])
                self._pairs[pair] = make_sequence(
                    self.method, low - high, high - low, alpha=self.alpha / max(1, math.comb(size, 2))
                )
                self._sums[pair] = [0.0, 0.0]
            # a pair's interval: its head-to-head observations where the ranking's players meet, else the rest
            head_to_head = (pair[0][0], pair[0][1]) in self._meet
            kept = [v for v, d in zip(values, direct, strict=True) if d == head_to_head]
            if kept:
                self._pairs[pair].extend(kept)
            self._sums[pair][0] += sum(values)
            self._sums[pair][1] += len(values)
        self._add_shares(played)
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

    def _observations(self, played: Sequence[Seating]) -> dict[tuple[Key, Key], tuple[list[float], list[bool]]]:
        """Each pair's paired observations of this round, in the order of the played seatings."""
        by_seats = {(s.variant, s.seats): s for s in played}  # a round may offer several variants
        by_set: dict[tuple[str, frozenset[tuple[str, str]]], Seating] = {}
        for s in played:
            by_set.setdefault((s.variant, frozenset(zip(s.seats, s.roles, strict=True))), s)
        sitting: dict[Key, list[Seating]] = defaultdict(list)
        for s in played:
            for key in sorted(s.sitting()):
                sitting[key].append(s)
        out: dict[tuple[Key, Key], tuple[list[float], list[bool]]] = {}
        for keys in self._members.values():
            present = sorted(k for k in keys if k in sitting)
            for a, b in itertools.combinations(present, 2):
                values, direct, used = [], [], set()
                for s in sitting[a]:
                    partner = self._partner(s, a, b, by_seats, by_set)
                    meet = b in s.sitting()
                    if partner is None and meet:  # seat orders drawn per repeat: the two in this one match
                        partner = s
                    if partner is None or s.match_id in used or partner.match_id in used:
                        continue
                    used |= {s.match_id, partner.match_id}
                    values.append(_payoff(s, a, self._results) - _payoff(partner, b, self._results))
                    direct.append(meet)
                if values:
                    out[(a, b)] = (values, direct)
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

    def _add_shares(self, played: Sequence[Seating]) -> None:
        """Every two seats of one role in a played match: the first player's share of their payoffs' difference."""
        for s in played:
            low, high = self.bounds[s.variant]
            seats = list(zip(s.seats, s.roles, self._results[s.match_id], strict=True))
            for (na, ra, pa), (nb, rb, pb) in itertools.combinations(seats, 2):
                if ra != rb or na == nb:
                    continue
                a, b, share = (s.variant, ra, na), (s.variant, rb, nb), 0.5 + (pa - pb) / (2.0 * (high - low))
                if b < a:
                    a, b, share = b, a, 1.0 - share
                entry = self._shares.setdefault((a, b), [0.0, 0.0])
                entry[0] += share
                entry[1] += 1.0

    def _bradley_terry(self, keys: list[Key]) -> np.ndarray:
        """Bradley–Terry scores of ``keys`` fitted to their payoff shares in the matches where they met (a share of
        ``1`` is the whole payoff range's difference in one's favour), with a weak normal prior so that the fit exists
        when a player won everything (:func:`~analysis.stats.ratings.fit_strengths`: the same data give the same
        scores)."""
        index = {k: i for i, k in enumerate(keys)}
        wins = np.zeros((len(keys), len(keys)))
        for (a, b), (total, n) in self._shares.items():
            if a in index and b in index:
                wins[index[a], index[b]] += total
                wins[index[b], index[a]] += n - total
        return fit_strengths(wins, precision=_PRIOR)

    def _scores(self, keys: list[Key]) -> np.ndarray:
        """The ranking scores of one group's ``keys`` (item 3 of the module docstring)."""
        if (keys[0][0], keys[0][1]) in self._meet:
            return self._bradley_terry(keys)
        return self._least_squares(keys)

    def _least_squares(self, keys: list[Key]) -> np.ndarray:
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
            return _negated(self._pairs[(b, a)].interval())
        return None

    def _rank(self) -> set[tuple[Key, Key]]:
        """Rank every group, set each adjacent pair's status and the next round's blocks; the unresolved pairs."""
        pairs, unresolved, intervals = [], set(), {}
        blocks: list[set[str]] = []
        size = self._seats + 1 if self._seats > 2 else 2  # a paired observation needs a player more than the seats
        for group in sorted(self._members):
            keys = sorted(self._members[group])
            scores = self._scores(keys)
            order = [keys[i] for i in sorted(range(len(keys)), key=lambda i: (-scores[i], keys[i][2]))]
            for position, (better, worse) in enumerate(itertools.pairwise(order)):
                iv = self._interval(better, worse)
                margin = self.top_epsilon if self.top is not None and position == self.top - 1 else self.epsilon
                if iv is not None and (iv.low > 0 or iv.high < 0):
                    status = "separated"
                    if iv.high < 0:  # the interval overrules the fit: the pair swapped, and its difference with it
                        better, worse, iv = worse, better, _negated(iv)
                elif iv is not None and iv.high - iv.low <= margin:
                    status = "tied"
                else:
                    status = "unresolved"
                    unresolved.add((better, worse))
                    blocks.append({k[2] for k in _padded(order[position : position + 2], order, size)})
                pairs.append(PairStatus(better, worse, status, iv))
            counts = self._shares if group in self._meet else self._sums
            n = {k: int(sum(v[1] for p, v in counts.items() if k in p)) for k in keys}
            for key, score in zip(keys, scores, strict=True):
                # the fit's score (its own scale: no interval of it is claimed); the pairs carry the intervals
                intervals[key] = Interval(float(score), float(score), float(score), n[key])
        self._blocks = blocks
        self.report.intervals, self.report.pairs = intervals, pairs
        return unresolved


_PRIOR = 0.01
"""The precision of the Bradley–Terry fit's normal prior on each score (logit scale): a weak pull towards 0."""


def _negated(iv: Interval) -> Interval:
    """The interval of ``b - a`` from that of ``a - b``."""
    return Interval(-iv.high, -iv.low, -iv.mean, iv.n)


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
