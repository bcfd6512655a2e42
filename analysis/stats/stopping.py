"""An adaptive, anytime-valid stopping rule: repeat matches only where the ranking is still unresolved.

The rule ranks *keys*: a player in one role of one game variant (data items pooled, other parameters never; one
role ``player`` for symmetric games, so an asymmetric task is ranked per role and never across roles). It plays
rounds; round ``r`` plays repeat ``r`` of the schedule:

1. The first ``initial_rounds`` rounds play every seating.
2. Afterwards a round plays only the seatings that include an *active* key (a player in a role still unresolved),
   in **complete blocks**: a key's block in round ``r`` is every seating of repeat ``r`` in which the player sits
   in that role, so when a key is active it meets every opponent mix of the schedule, never a skewed one.
3. After a round, each key whose block is complete adds **one observation**, the mean of its payoffs over the
   block, to its anytime-valid confidence sequence (:class:`~analysis.stats.confseq.ConfidenceSequence`, on the game's
   payoff range, at level ``alpha / 2 / keys in its ranking``, so every sequence of a ranking covers at once with
   probability at least ``1 - alpha / 2``; the hedged-capital betting sequence by default). Block means are
   independent and identically distributed across rounds (a complete block meets every opponent mix of a repeat),
   and the sequences stay valid whatever rounds a key skips, since which rounds a key plays depends only on
   earlier rounds. These are exactly the intervals a report of the run prints for the players' means
   (:func:`analysis.tables.scores.repeat_blocks` and :class:`~analysis.stats.intervals.IntervalPolicy` of an
   adaptively collected run): the same block means, in the same order, at the same level. (Feeding each match's
   payoff instead was measured in ``bench/bench_stopping.py``: the opponent mix then enters each observation's
   spread, and the saving against uniform repeats fell from above 30% to 9%.)
4. Every match adds, to the sequence of each pair of keys that met in it, a point for the first (1 ahead, 1/2 tie, 0
   behind: :mod:`analysis.stats.pairs`), in the order of repetition, at level ``alpha / 2 / pairs in the ranking``.
5. Within each ranking (variant and role), keys are ordered by their mean; two adjacent keys are **separated**
   when the better finishes ahead of the worse where they met (its pair's interval above 1/2) or their intervals do
   not overlap, and **tied** when both intervals fit in a span of ``epsilon`` (their means then differ by at most
   ``epsilon``). A key is active while a pair it belongs to is neither. Both families hold at ``1 - alpha / 2``, so
   every separation of a ranking holds with ``1 - alpha``.
6. The run stops when no key is active (``resolved``), before a round that would pass the match ``budget``
   (``budget``), after ``max_rounds`` rounds (``max_rounds``), or when a round's matches failed (``failed``).

Every decision is a pure function of the planned seatings and the payoffs of earlier rounds, so a killed run
replays its committed rounds to the same decisions and resumes with the same schedule, on any executor.
Statistics stream: a round keeps only the payoffs of its own matches until its blocks are scored.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis.stats.confseq import ConfidenceSequence, Interval, make_sequence
from analysis.stats.intervals import PAIRED_SHARE
from deepeval_games.core.records import MatchRecord

__all__ = [
    "STOPPING_INTERVALS",
    "AdaptiveStopping",
    "Key",
    "PairStatus",
    "RoundFeed",
    "Seating",
    "StoppingReport",
    "format_stopping",
    "stopping_rule_note",
]

Key = tuple[str, str, str]
"""(game variant, role, player): what the rule ranks."""


@dataclass(frozen=True)
class Seating:
    """One planned match of a round, as the rule needs it."""

    match_id: str
    variant: str
    """The game variant (:func:`~deepeval_games.core.registry.games.game_variant`): data items pooled."""
    seats: tuple[str, ...]
    roles: tuple[str, ...]
    game: str = ""
    """The full game string (data items included): with the match id, the match's place in the order of repetition,
    in which a pair's points enter its sequence."""

    def sitting(self) -> set[Key]:
        """The keys that sit in this match."""
        return {(self.variant, role, name) for name, role in zip(self.seats, self.roles, strict=True)}


@dataclass(frozen=True)
class PairStatus:
    """Two adjacent keys of a ranking (``better`` has the higher mean) and how they stand."""

    better: Key
    worse: Key
    status: str
    """``separated``, ``tied`` or ``unresolved``."""
    difference: Interval | None = None
    """The anytime-valid interval of ``better``'s payoff minus ``worse``'s where the rule decides by pair intervals
    (active matchmaking); None where it compares the keys' own intervals."""


@dataclass
class StoppingReport:
    """What the rule decided: why the run stopped, how much each key played, what is left unresolved."""

    reason: str = "running"
    """``resolved``, ``budget``, ``max_rounds``, ``failed`` (or ``running`` before a decision to stop)."""
    rounds: int = 0
    matches: int = 0
    """Matches played by the rounds so far."""
    matches_per_key: dict[Key, int] = field(default_factory=dict)
    """Matches in which each key sat."""
    intervals: dict[Key, Interval] = field(default_factory=dict)
    """Each key's confidence interval (of its block means) at the end."""
    pairs: list[PairStatus] = field(default_factory=list)
    """Adjacent pairs of every ranking, best first."""

    @property
    def stable(self) -> bool:
        """Whether every ranking was resolved."""
        return self.reason == "resolved"

    @property
    def unresolved(self) -> list[PairStatus]:
        """The adjacent pairs left neither separated nor tied."""
        return [p for p in self.pairs if p.status == "unresolved"]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form (``stopping.json`` in a run directory); :meth:`from_dict` reads it back."""
        return {
            "reason": self.reason,
            "rounds": self.rounds,
            "matches": self.matches,
            "keys": [
                {
                    "key": list(key),
                    "matches": self.matches_per_key.get(key, 0),
                    **{f: getattr(interval, f) for f in ("low", "high", "mean", "n")},
                }
                for key, interval in sorted(self.intervals.items())
            ],
            "pairs": [
                {
                    "better": list(p.better),
                    "worse": list(p.worse),
                    "status": p.status,
                    **(
                        {"difference": [getattr(p.difference, f) for f in ("low", "high", "mean", "n")]}
                        if p.difference
                        else {}
                    ),
                }
                for p in self.pairs
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StoppingReport:
        """The report :meth:`to_dict` wrote."""

        def key(value: Sequence[str]) -> Key:
            return (str(value[0]), str(value[1]), str(value[2]))

        return cls(
            reason=str(data["reason"]),
            rounds=int(data["rounds"]),
            matches=int(data["matches"]),
            matches_per_key={key(k["key"]): int(k["matches"]) for k in data["keys"]},
            intervals={
                key(k["key"]): Interval(float(k["low"]), float(k["high"]), float(k["mean"]), int(k["n"]))
                for k in data["keys"]
            },
            pairs=[
                PairStatus(
                    key(p["better"]),
                    key(p["worse"]),
                    str(p["status"]),
                    _interval(p["difference"]) if "difference" in p else None,
                )
                for p in data["pairs"]
            ],
        )

    def max_half_width(self, keys: Iterable[Key] | None = None) -> float:
        """The widest half-width among ``keys`` (default: every key)."""
        chosen = self.intervals if keys is None else {k: self.intervals[k] for k in keys}
        return max((iv.half_width for iv in chosen.values()), default=float("nan"))


class RoundFeed:
    """The part of the round protocol every rule shares: its settings, the match budget, the matches of each key,
    and the payoffs of the round being played (the arguments: :class:`AdaptiveStopping`)."""

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
    ) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        if epsilon < 0 or initial_rounds < 1 or max_rounds < 1 or (budget is not None and budget < 1):
            raise ValueError("epsilon must be >= 0; initial_rounds, max_rounds and budget >= 1")
        make_sequence(method, 0.0, 1.0)  # an unknown method fails here
        self.method = method
        self.bounds = dict(bounds)
        self.alpha, self.epsilon = float(alpha), float(epsilon)
        self.initial_rounds, self.max_rounds, self.budget = initial_rounds, max_rounds, budget
        self._round: list[Seating] = []
        self._results: dict[str, Sequence[float]] = {}
        self._failed = False
        self.report = StoppingReport()
        self._setup()

    def _setup(self) -> None:
        """The rule's own state (called at the end of ``__init__``)."""

    def _admit(self, selected: Sequence[Seating]) -> bool:
        """Start a round of ``selected``; False (and the reason ``budget``) when it would pass the budget."""
        if self.budget is not None and self.report.matches + len(selected) > self.budget:
            self.report.reason = "budget"
            return False
        self._results, self._failed = {}, False
        self.report.matches += len(selected)
        for seating in selected:
            for key in seating.sitting():
                self.report.matches_per_key[key] = self.report.matches_per_key.get(key, 0) + 1
        return True

    def add(self, match_id: str, returns: Sequence[float]) -> None:
        """The payoffs of a match of this round (any order; others are ignored)."""
        self._results[match_id] = [float(x) for x in returns]

    def add_record(self, record: MatchRecord) -> None:
        """:meth:`add` for a complete record; an aborted one marks the round failed."""
        if record.status == "complete":
            self.add(record.match_id, record.returns)
        else:
            self._failed = True


class AdaptiveStopping(RoundFeed):
    """The stopping rule of the module docstring, fed round by round.

    Use: ``selected = rule.begin_round(all_seatings_of_repeat_r)``; play ``selected``; :meth:`add` each committed
    result; ``report = rule.end_round()``; continue while ``report.reason == "running"``.

    Args:
        bounds: each game variant's payoff range (the game's min and max utility, or the judge's scale).
        alpha: error level of the whole ranking of one variant and role.
        epsilon: indifference margin: adjacent keys whose means surely differ by at most this count as tied.
        initial_rounds: rounds that play every seating before the rule selects.
        max_rounds: the most rounds.
        budget: the most matches in all (None: no limit but ``max_rounds``).
        method: the confidence sequence: ``betting`` (hedged capital, the default) or ``bernstein`` (PrPl-EB).

    Raises:
        ValueError: a bad parameter.
    """

    def _setup(self) -> None:
        self._sequences: dict[Key, ConfidenceSequence] = {}
        self._pairs: dict[tuple[str, str, tuple[str, str]], ConfidenceSequence] = {}  # (variant, role, pair)
        self._group_sizes: dict[tuple[str, str], int] = {}
        self._active: set[Key] | None = None  # None: everything (the initial rounds)

    @property
    def active(self) -> set[Key] | None:
        """The keys still unresolved after the last round (None before the first round is scored)."""
        return None if self._active is None else set(self._active)

    # -- the round protocol ----------------------------------------------------------------------------------

    def begin_round(self, seatings: Sequence[Seating]) -> list[Seating]:
        """Given every seating of this round's repeat, the ones to play (in the given order). Returns an empty list
        and sets the report's reason when the budget does not allow the round.

        Raises:
            ValueError: a variant without bounds.
        """
        for seating in seatings:
            if seating.variant not in self.bounds:
                raise ValueError(f"no payoff bounds for {seating.variant}")
        self._register(seatings)
        if self._active is None or self.report.rounds < self.initial_rounds:
            selected = list(seatings)
        else:
            selected = [s for s in seatings if s.sitting() & self._active]
        if not self._admit(selected):
            return []
        self._round = list(seatings)
        return selected

    def end_round(self, *, failed: bool = False) -> StoppingReport:
        """Score this round's complete blocks, re-rank, and decide; the report says what (``reason``)."""
        blocks: dict[Key, list[str]] = defaultdict(list)
        for seating in self._round:
            for key in seating.sitting():
                blocks[key].append(seating.match_id)
        by_id = {s.match_id: s for s in self._round}
        self._add_points(by_id)
        for key in sorted(blocks):
            ids = blocks[key]
            if not all(i in self._results for i in ids):
                continue
            _, role, name = key
            values = []
            for i in ids:
                seating = by_id[i]
                mine = [
                    payoff
                    for seat_name, seat_role, payoff in zip(seating.seats, seating.roles, self._results[i], strict=True)
                    if seat_name == name and seat_role == role
                ]
                values.append(sum(mine) / len(mine))
            self._sequence(key).update(sum(values) / len(values))
        self._round, self._results = [], {}
        self.report.rounds += 1
        self._rank()
        if failed or self._failed:
            self.report.reason = "failed"
        elif not self._active:
            self.report.reason = "resolved"
        elif self.report.rounds >= self.max_rounds:
            self.report.reason = "max_rounds"
        return self.report

    # -- internals -----------------------------------------------------------------------------------------------

    def _register(self, seatings: Sequence[Seating]) -> None:
        members: dict[tuple[str, str], set[str]] = defaultdict(set)
        for seating in seatings:
            for variant, role, name in seating.sitting():
                members[(variant, role)].add(name)
        for group, names in members.items():
            self._group_sizes[group] = max(self._group_sizes.get(group, 0), len(names))
            for name in names:
                self._sequence((*group, name))

    def _add_points(self, by_id: Mapping[str, Seating]) -> None:
        """Each played match's points to the sequences of the pairs that met in it (:mod:`analysis.stats.pairs`), in
        the order of repetition within the round (game, match id), at the level the pairs of a ranking share."""
        from analysis.stats.pairs import match_points, pair_count

        for match_id in sorted(self._results, key=lambda i: (by_id[i].game, i) if i in by_id else ("", i)):
            seating = by_id.get(match_id)
            if seating is None:
                continue
            points = match_points(seating.seats, self._results[match_id], seating.roles)
            for (role, pair), point in points.items():
                key = (seating.variant, role, pair)
                if key not in self._pairs:
                    size = max(self._group_sizes.get((seating.variant, role), 2), 2)
                    level = self.alpha * PAIRED_SHARE / pair_count(size)
                    self._pairs[key] = make_sequence(self.method, 0.0, 1.0, alpha=level)
                self._pairs[key].update(point)

    def _met(self, better: Key, worse: Key) -> bool | None:
        """Whether ``better`` finishes ahead of ``worse`` where they met (their pair's interval above 1/2); None where
        they never met, False where the interval does not say so."""
        first, second = sorted((better[2], worse[2]))
        sequence = self._pairs.get((better[0], better[1], (first, second)))
        if sequence is None:
            return None
        share = sequence.interval()
        if not share.n:
            return None
        return share.low > 0.5 if first == better[2] else share.high < 0.5

    def _sequence(self, key: Key) -> ConfidenceSequence:
        if key not in self._sequences:
            low, high = self.bounds[key[0]]
            size = max(self._group_sizes.get((key[0], key[1]), 1), 1)
            level = self.alpha * (1.0 - PAIRED_SHARE) / size  # the pairs' comparisons spend the rest
            self._sequences[key] = make_sequence(self.method, low, high, alpha=level)
        return self._sequences[key]

    def _rank(self) -> None:
        intervals = {key: cs.interval() for key, cs in sorted(self._sequences.items())}
        groups: dict[tuple[str, str], list[Key]] = defaultdict(list)
        for key in intervals:
            groups[(key[0], key[1])].append(key)
        pairs, active = [], set()
        for _, keys in sorted(groups.items()):
            order = sorted(keys, key=lambda k: (-intervals[k].mean, k[2]))
            for better, worse in itertools.pairwise(order):
                a, b = intervals[better], intervals[worse]
                if self._met(better, worse) or (a.n and b.n and not a.overlaps(b)):
                    status = "separated"
                elif a.n and b.n and max(a.high, b.high) - min(a.low, b.low) <= self.epsilon:
                    status = "tied"
                else:
                    status = "unresolved"
                    active |= {better, worse}
                pairs.append(PairStatus(better, worse, status))
        self._active = active
        self.report.intervals, self.report.pairs = intervals, pairs


def _interval(values: Sequence[Any]) -> Interval:
    """The interval :meth:`StoppingReport.to_dict` wrote as ``[low, high, mean, n]``."""
    return Interval(float(values[0]), float(values[1]), float(values[2]), int(values[3]))


STOPPING_INTERVALS = (
    "who is told apart is said under the table of mean payoffs: the stopping rule's own intervals and comparisons, "
    "valid however often it looked"
)
"""Where the stopping block's verdicts come from, said once under its first line."""


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 'es' if word.endswith('ch') else 's'}"


def _pair_words(report: StoppingReport, keys: Sequence[Key]) -> list[str]:
    """In words, the adjacent pairs of a ranking decided by pair intervals (active matchmaking), each with the 95%
    interval of the difference that decided it."""
    pairs = [p for p in report.pairs if p.better in keys and p.difference is not None]
    apart = [f"{p.better[2]} above {p.worse[2]}" for p in pairs if p.status == "separated"]
    other = [p for p in pairs if p.status != "separated"]
    lines = [f"  told apart (neighbours in the ranking): {'; '.join(apart) if apart else 'no pair'}"]
    if other:
        lines.append(
            "  not told apart: "
            + "; ".join(
                f"{p.better[2]} and {p.worse[2]} ({'tied' if p.status == 'tied' else 'not yet'})" for p in other
            )
        )
    return lines


STOP_REASONS = {
    "resolved": "every pair of neighbours in the ranking is told apart or tied",
    "budget": "the next batch of matches would have passed the match budget",
    "max_rounds": "the most batches of matches (max_repeats) were played",
    "failed": "matches of the last batch failed",
    "running": "not stopped yet",
}
"""Why the rule stopped, in words, by :attr:`StoppingReport.reason`."""


def format_stopping(report: StoppingReport) -> str:
    """The report in words: what stopped the run. Which players are told apart is said once, under the table of mean
    payoffs, from the same comparisons the rule made (an adaptively collected run prints the rule's intervals and
    verdicts there); a ranking decided by pair intervals (active matchmaking) names its pairs here."""
    lines = [
        f"Stopping rule: stopped after {_plural(report.matches, 'match')} in {_plural(report.rounds, 'batch')}: "
        f"{STOP_REASONS[report.reason]}."
    ]
    by_group: dict[tuple[str, str], list[Key]] = defaultdict(list)
    for key in report.intervals:
        by_group[(key[0], key[1])].append(key)
    by_pairs = {p.better: p for p in report.pairs if p.difference is not None}
    if not by_pairs:
        if by_group:
            lines.append(f"({STOPPING_INTERVALS})")
        tied = [f"{p.better[2]} and {p.worse[2]}" for p in report.pairs if p.status == "tied"]
        if tied:
            lines.append(f"  tied (their means differ by less than the margin): {'; '.join(tied)}")
        return "\n".join(lines)
    for (variant, role), keys in sorted(by_group.items()):
        if len(by_group) > 1 or role != "player":
            lines.append(f"{variant}" + (f" [{role}]" if role != "player" else ""))
        ranked = sorted(keys, key=lambda k: (-report.intervals[k].mean, k[2]))
        # ranked by a fit, decided by pair intervals: the fit's order, then each gap to the next
        lines.append("  ranking: " + ", ".join(key[2] for key in ranked))
        for key in ranked:
            pair = by_pairs.get(key)
            if pair is not None and pair.difference is not None:
                lines.append(
                    f"  {key[2]} minus {pair.worse[2]}: 95% interval "
                    f"[{pair.difference.low:.3f}, {pair.difference.high:.3f}]"
                )
        lines += _pair_words(report, ranked)
    return "\n".join(lines)


def stopping_rule_note(rule: str | None, repeats: int, max_repeats: int | None = None) -> str:
    """What a run that did not use the adaptive rule may claim, in words: ``rule`` ``None`` (a fixed repeat count:
    no stopping rule applied, so nothing says the results converged) or ``recheck`` / ``bootstrap`` (fixed-sample
    intervals re-checked after every extension: not valid under repeated looks)."""
    if rule is None:
        return (
            f"No stopping rule was applied: {repeats} repeat(s) fixed in advance. Nothing here says the results "
            "converged; the intervals above are what that many matches can say."
        )
    cap = f", at most {max_repeats}" if max_repeats is not None else ""
    return (
        f"Stopping rule {rule!r} (fixed-sample intervals re-checked after every extension): {repeats} repeat(s) "
        f"played{cap}. Its intervals are not valid under repeated looks: each extension was another chance to stop "
        'on an interval that misses its mean. Use rule = "adaptive" (the default) for a stop that is.'
    )
