"""How each player's turns went: counts of ``ok``, ``reasked``, ``invalid``, ``refusal``, ``truncated``, ...

A turn that is not ``ok`` or ``reasked`` gave no valid move: the referee applied the task's penalty move, or
for a game without one a seeded random legal move. Those turns count against the model that sat there, so a
report shows them beside the scores. Reads :attr:`MatchRecord.turns` only (the players' seats; chance
outcomes and the judge's verdicts are not counted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis.tables.scores import Table
from deepeval_games.core.bot import Outcome
from deepeval_games.core.records import MatchRecord

__all__ = ["STAND_IN", "TurnOutcomes", "format_turn_outcomes", "stand_in_note", "turn_outcome_table", "turn_outcomes"]

_ORDER = [outcome.value for outcome in Outcome]


@dataclass(frozen=True)
class TurnOutcomes:
    """The turn outcomes of one player over a set of matches."""

    player: str
    counts: Mapping[str, int] = field(default_factory=dict)
    """Turns per outcome value (``{"ok": 3, "invalid": 2}``); outcomes that never happened are absent."""

    @property
    def total(self) -> int:
        """Every turn the player took."""
        return sum(self.counts.values())

    @property
    def valid(self) -> int:
        """Turns that ended in a valid move of the player's own (``ok`` or ``reasked``)."""
        return self.counts.get(Outcome.OK.value, 0) + self.counts.get(Outcome.REASKED.value, 0)

    @property
    def all_ok(self) -> bool:
        """True when every turn was valid at the first ask."""
        return self.counts.get(Outcome.OK.value, 0) == self.total

    def describe(self) -> str:
        """``ok 3, invalid 2 (of 5)``: each outcome that happened, in the order of :class:`Outcome`."""
        parts = [f"{name} {self.counts[name]}" for name in _ORDER if self.counts.get(name)]
        return f"{', '.join(parts) or 'no turns'} (of {self.total})"


def _value(outcome: Outcome | str) -> str:
    return Outcome(outcome).value


_VALUES: dict[Outcome | str, str] = {**{o: o.value for o in Outcome}, **{o.value: o.value for o in Outcome}}
"""An outcome's value by the outcome or its text (a look-up per turn instead of an enum call)."""


_SHARED_KEPT = 256
"""Distinct shared (seats, turns) pairs :func:`turn_outcomes` counts by identity before it tallies record by record."""


def turn_outcomes(records: Iterable[MatchRecord]) -> dict[str, TurnOutcomes]:
    """Per player name (in order of first appearance), how its turns went over ``records``.

    Matches that share their seat list and turns (the summary's outlines, slim records: equal parts are one object)
    are counted by identity and each such pair tallied once, times its matches; the pairs are held while counting,
    so an identity is never another object's."""
    counts: dict[str, dict[str, int]] = {}
    shared: dict[tuple[int, int], list[Any]] = {}  # (id(seats), id(turns)) -> [seats, turns, matches]
    for record in records:
        seats, turns = record.seats, record.turns
        entry = shared.get((id(seats), id(turns)))
        if entry is not None:
            entry[2] += 1
            continue
        for name in seats:
            counts.setdefault(name, {})
        if len(shared) < _SHARED_KEPT:
            shared[(id(seats), id(turns))] = [seats, turns, 1]
        else:
            _tally(counts, seats, turns, 1)
    for seats, turns, matches in shared.values():
        _tally(counts, seats, turns, matches)
    return {player: TurnOutcomes(player, tally) for player, tally in counts.items()}


def _tally(counts: dict[str, dict[str, int]], seats: Sequence[str], turns: Iterable[Any], matches: int) -> None:
    """Add the outcomes of ``turns`` (the players' seats only), ``matches`` times over, to ``counts``."""
    for turn in turns:
        if 0 <= turn.seat < len(seats):
            tally = counts[seats[turn.seat]]
            key = _VALUES.get(turn.outcome) or _value(turn.outcome)
            tally[key] = tally.get(key, 0) + matches


STAND_IN = {
    True: "the game's penalty move was played in its place",
    False: "a random legal move was played in its place",
    None: "the game's penalty move, or a random legal move where the game has none, was played in its place",
}
"""What the referee played for a turn with no valid move, by whether the game has a penalty move (None: unknown)."""


def stand_in_note(outcomes: Mapping[str, TurnOutcomes], penalty: bool | None = None) -> str:
    """What the outcomes that gave no valid move mean, in words, where any happened (``""`` otherwise): ``penalty``
    says whether the game has its own penalty move (None: not known here)."""
    if all(tally.valid == tally.total for tally in outcomes.values()):
        return ""
    return (
        "(reasked: a valid move after the model was asked again; invalid, refusal, truncated, context_overflow: no "
        f"valid move after the re-asks, so {STAND_IN[penalty]}, and the match's result counts as the player's own)"
    )


def format_turn_outcomes(outcomes: Mapping[str, TurnOutcomes], penalty: bool | None = None) -> str:
    """One line per player: ``Turn outcomes:`` then ``  gpt  ok 3, invalid 2 (of 5)``, and what a turn without a valid
    move means (:func:`stand_in_note`)."""
    if not outcomes:
        return "Turn outcomes: no turns"
    width = max(len(name) for name in outcomes)
    lines = [f"  {name.ljust(width)}  {tally.describe()}" for name, tally in outcomes.items()]
    note = stand_in_note(outcomes, penalty)
    return "\n".join(["Turn outcomes:", *lines, *([note] if note else [])])


def turn_outcome_table(outcomes: Mapping[str, TurnOutcomes], penalty: bool | None = None) -> Table:
    """The turn outcomes as a table: a row per player, a column per outcome that happened (in the order of
    :class:`Outcome`), then the player's turns, with what a turn without a valid move means as its note."""
    happened = [name for name in _ORDER if any(tally.counts.get(name) for tally in outcomes.values())]
    rows = tuple(
        (name, *(str(tally.counts.get(o, 0)) for o in happened), str(tally.total)) for name, tally in outcomes.items()
    )
    note = stand_in_note(outcomes, penalty)
    return Table("turn_outcomes", "Turn outcomes", ("player", *happened, "turns"), rows, note.strip("()"))
