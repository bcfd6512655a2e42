"""The plan of a run as columns: every match to play, a few array entries a match (:class:`Plan`, about 45 bytes),
each read back as a :class:`PlannedMatch` made when it is read and dropped after.

A run holds its plan from the start to the end (a run of 100,000 matches held an object, an id string and two ints
a match: about 210 bytes, 21 MB). The columns keep a match's id as its UTF-8 bytes, its repeat and seed in arrays,
and the index of its seating (the game string and the seats' tuple, held once each, shared by every match of that
seating).
"""

from __future__ import annotations

from array import array
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import overload

__all__ = ["Plan", "PlannedMatch", "as_plan"]


@dataclass(frozen=True, slots=True)
class PlannedMatch:
    """One match to play (a :class:`Plan` makes one when it is read)."""

    match_id: str
    game: str
    """Canonical game string (all parameters spelled out)."""
    seats: tuple[str, ...]
    """Player names in seat order."""
    repeat: int
    seed: int
    """Seed of this match (chance nodes and the bots' generators derive from it)."""


class Plan(Sequence[PlannedMatch]):
    """Matches to play, in order, as columns (no object a match): the ids' UTF-8 bytes (one ``bytearray``, each id's
    end in an ``array('I')``), the repeats and seeds (``array('q')``) and the index of each match's seating (its game
    string and seats, held once). Reading a match (an index, an iteration) makes its :class:`PlannedMatch`; a slice,
    :meth:`take` and :meth:`without` give plans. Built by :meth:`append` (or :meth:`of`), then only read."""

    __slots__ = ("_ends", "_ids", "_index", "_repeats", "_seatings", "_seeds", "_slots")

    def __init__(self) -> None:
        self._ids = bytearray()
        self._ends = array("I")
        self._repeats = array("q")
        self._seeds = array("q")
        self._slots = array("I")
        self._seatings: list[tuple[str, tuple[str, ...]]] = []
        """The distinct (game, seats) of the plan, each held once; :attr:`_slots` names one a match."""
        self._index: dict[tuple[str, tuple[str, ...]], int] = {}

    @classmethod
    def of(cls, matches: Iterable[PlannedMatch]) -> Plan:
        """The plan of ``matches``, in their order."""
        plan = cls()
        for match in matches:
            plan.append(match.match_id, match.game, match.seats, match.repeat, match.seed)
        return plan

    def append(self, match_id: str, game: str, seats: tuple[str, ...], repeat: int, seed: int) -> None:
        """Add a match at the end (``seed`` and ``repeat`` fit 64 signed bits)."""
        key = (game, seats)
        slot = self._index.get(key)
        if slot is None:
            slot = self._index[key] = len(self._seatings)
            self._seatings.append(key)
        self._ids += match_id.encode()
        self._ends.append(len(self._ids))
        self._repeats.append(repeat)
        self._seeds.append(seed)
        self._slots.append(slot)

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, index: int) -> PlannedMatch: ...

    @overload
    def __getitem__(self, index: slice) -> Plan: ...

    def __getitem__(self, index: int | slice) -> PlannedMatch | Plan:
        if isinstance(index, slice):
            return self.take(range(len(self))[index])
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("plan index out of range")
        game, seats = self._seatings[self._slots[index]]
        return PlannedMatch(self._id(index), game, seats, self._repeats[index], self._seeds[index])

    def __iter__(self) -> Iterator[PlannedMatch]:
        seatings = self._seatings
        for match_id, repeat, seed, slot in zip(self.match_ids(), self._repeats, self._seeds, self._slots, strict=True):
            game, seats = seatings[slot]
            yield PlannedMatch(match_id, game, seats, repeat, seed)

    def __eq__(self, other: object) -> bool:
        """Equal to a plan or a list of the same matches in the same order (as the list of planned matches it
        replaces)."""
        if not isinstance(other, (Plan, list)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # (equal by content, and built by appending)

    def __repr__(self) -> str:
        return f"Plan({len(self)} matches)"

    def _id(self, index: int) -> str:
        start = self._ends[index - 1] if index else 0
        return self._ids[start : self._ends[index]].decode()

    def match_ids(self) -> Iterator[str]:
        """The matches' ids, in order (each string made as it is read)."""
        ids, start = self._ids, 0
        for end in self._ends:
            yield ids[start:end].decode()
            start = end

    def games(self) -> set[str]:
        """The game strings the plan plays."""
        return {self._seatings[slot][0] for slot in set(self._slots)}

    def take(self, positions: Iterable[int]) -> Plan:
        """The plan of the matches at ``positions`` (each in ``range(len(self))``), in that order."""
        out = Plan()
        out._seatings, out._index = list(self._seatings), dict(self._index)
        ids, ends = self._ids, self._ends
        for i in positions:
            out._ids += ids[ends[i - 1] if i else 0 : ends[i]]
            out._ends.append(len(out._ids))
            out._repeats.append(self._repeats[i])
            out._seeds.append(self._seeds[i])
            out._slots.append(self._slots[i])
        return out

    def without(self, match_ids: Container[str]) -> Plan:
        """The plan of the matches whose id is not in ``match_ids``, in order (this plan when none is)."""
        kept = array("I", (i for i, match_id in enumerate(self.match_ids()) if match_id not in match_ids))
        return self if len(kept) == len(self) else self.take(kept)


def as_plan(matches: Sequence[PlannedMatch]) -> Plan:
    """``matches`` as a plan (itself when it is one)."""
    return matches if isinstance(matches, Plan) else Plan.of(matches)
