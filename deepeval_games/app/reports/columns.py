"""The score summary's matches as columns: what its sections read of a record (:data:`OUTLINE_FIELDS`), a few array
entries a match (:class:`OutlineColumns`, about 70 bytes for four seats), and each match read back as an
:class:`Outline`, made as it is read and dropped after (:class:`Outlines`).

The parts many matches share (game, status, seats, roles, the seats' turns) are one :class:`Shape`, held once and
named by its index; the id is kept as its UTF-8 bytes, the repeat and payoffs in arrays. A list of outlines would
hold an object a match again, so :class:`Outlines` filter and order themselves as views (an index a match kept:
:class:`analysis.views.RecordColumns`), which the analyses call instead of building lists.

The report's *slim* records (:func:`slim`) live here too: a match record without the texts no table reads
(prompts, raw replies, reasoning, the message pool), with equal parts shared across a report (:data:`Interned`), so a
report of many matches stays small; a summary whose task reads whole records keeps those.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast, overload

import numpy as np

from deepeval_games.core.bot import Outcome
from deepeval_games.core.records import JUDGE_SEAT, MatchRecord, MoveRow, TurnRecord

__all__ = ["OUTLINE_FIELDS", "Interned", "Outline", "OutlineColumns", "Outlines", "Shape", "TurnOutline", "slim"]

_INDEX = np.dtype(f"=u{array('I').itemsize}")
"""The numpy type of an ``array('I')`` entry (a match's position in a view)."""


def _positions(at: np.ndarray) -> array[int]:
    """Matches' positions worked out in numpy, as the ``array('I')`` a view keeps."""
    positions = array("I")
    positions.frombytes(at.astype(_INDEX).tobytes())
    return positions


@dataclass(frozen=True, slots=True)
class TurnOutline:
    """A seat's turn as the score summary reads it: whose it was and how it went."""

    seat: int
    outcome: Outcome


class Shape(NamedTuple):
    """The parts of a match that many matches of a summary share, held once each (:class:`OutlineColumns`)."""

    game: str
    status: str
    seats: list[str]
    roles: list[str]
    turns: tuple[TurnOutline, ...]
    """The seats' turns (seat >= 0), each its seat and outcome, in the order played (chance moves and the judge's
    verdicts left out: no section of the summary counts them)."""


OUTLINE_FIELDS = frozenset(("match_id", "repeat", "returns", *Shape._fields))
"""The fields of a record an outline keeps."""


class OutlineColumns:
    """Every match added to one game variant of a score summary, as columns: the id's UTF-8 bytes, the repeat, the
    payoffs (one array of doubles) and the index of its :class:`Shape` (about 70 bytes a four-seat match, no object
    a match). ``interned`` (one dict per summary) shares the shapes' parts between variants and with slim
    records."""

    def __init__(self, interned: dict[Any, Any]) -> None:
        self.ids = bytearray()
        self.id_ends = array("I")
        self.repeats = array("q")
        self.payoffs = array("d")
        self.payoff_ends = array("I")
        self.shapes = array("I")
        """Per match, the index of its shape in :attr:`shape_table`."""
        self.shape_table: list[Shape] = []
        self._shape_index: dict[tuple[Any, ...], int] = {}
        self._interned = interned

    def __len__(self) -> int:
        return len(self.shapes)

    def add(self, record: MatchRecord) -> None:
        """Add ``record``'s outline (a ``moves`` record read as stored: its rows' seats, each turn ``ok``)."""
        shared = self._interned
        if record.moves is not None and not record.turns:
            seat_turns = [(seat, Outcome.OK) for _, seat, _, _ in record.moves if seat >= 0]
        else:
            seat_turns = [(turn.seat, turn.outcome) for turn in record.turns if turn.seat >= 0]
        key = ("seat turns", *seat_turns)
        turns = shared.get(key)
        if turns is None:
            turns = shared[key] = tuple(shared.setdefault(("turn", s), TurnOutline(*s)) for s in seat_turns)
        shape = Shape(
            shared.setdefault(("game", record.game), record.game),
            shared.setdefault(("status", record.status), record.status),
            shared.setdefault(("strings", tuple(record.seats)), record.seats),
            shared.setdefault(("strings", tuple(record.roles)), record.roles),
            turns,
        )
        self._append(record.match_id.encode("utf-8", "surrogatepass"), record.repeat, record.returns, shape)

    def extend(self, other: OutlineColumns) -> None:
        """Add every match of ``other`` after those of these columns."""
        for at in range(len(other)):
            start = other.id_ends[at - 1] if at else 0
            shape = other.shape_table[other.shapes[at]]
            self._append(bytes(other.ids[start : other.id_ends[at]]), other.repeats[at], other.returns(at), shape)

    def _append(self, match_id: bytes, repeat: int, returns: Sequence[float], shape: Shape) -> None:
        """One match's entries (the shape's parts already shared), all or none."""
        key = (shape.game, shape.status, id(shape.seats), id(shape.roles), id(shape.turns))  # parts held in interned
        index = self._shape_index.get(key)
        if index is None:
            index = self._shape_index[key] = len(self.shape_table)
            self.shape_table.append(shape)
        payoffs = array("d", returns)
        self.repeats.append(repeat)  # (the one entry that may not fit: first)
        self.ids += match_id
        self.id_ends.append(len(self.ids))
        self.payoffs += payoffs
        self.payoff_ends.append(len(self.payoffs))
        self.shapes.append(index)

    def match_id(self, at: int) -> str:
        """The id of the match at ``at``."""
        return self.ids[self.id_ends[at - 1] if at else 0 : self.id_ends[at]].decode("utf-8", "surrogatepass")

    def returns(self, at: int) -> array[float]:
        """The payoffs of the match at ``at`` (a new array)."""
        return self.payoffs[self.payoff_ends[at - 1] if at else 0 : self.payoff_ends[at]]

    def repetition_order(self, positions: Sequence[int]) -> Sequence[int]:
        """``positions`` sorted stably by repeat, then game, then match id (the analyses' order of repetition,
        :func:`analysis.views.in_repetition_order`), with no object a match: ``positions`` itself when in order."""
        if len(positions) < 2:
            return positions
        at = np.asarray(positions, dtype=np.int64)
        ends = np.frombuffer(self.id_ends, dtype=_INDEX).astype(np.int64)
        widths = np.diff(ends, prepend=0)
        if widths.min() != widths.max() or b"\0" in self.ids:  # ids of different lengths (not this package's)
            return self._sorted(positions)
        games = sorted({shape.game for shape in self.shape_table})
        rank = {game: i for i, game in enumerate(games)}
        game_rank = np.array([rank[shape.game] for shape in self.shape_table], dtype=np.int64)
        keys = (
            np.frombuffer(self.ids, dtype=f"S{int(widths[0])}")[at],  # byte order is the ids' code point order
            game_rank[np.frombuffer(self.shapes, dtype=_INDEX)[at]],
            np.frombuffer(self.repeats, dtype=np.int64)[at],
        )
        order = np.lexsort(keys)  # a stable sort, the last key first
        if np.array_equal(order, np.arange(len(at))):
            return positions
        return _positions(at[order])

    def _sorted(self, positions: Sequence[int]) -> Sequence[int]:
        """:meth:`repetition_order` by three stable sorts (each id made for the sort)."""
        table, shapes = self.shape_table, self.shapes
        ordered = list(positions)
        ordered.sort(key=self.match_id)
        ordered.sort(key=lambda at: table[shapes[at]].game)
        ordered.sort(key=self.repeats.__getitem__)
        return array("I", ordered)


class Outline:
    """One match of :class:`Outlines` as the score summary's sections read it (:data:`OUTLINE_FIELDS`), made when
    read: its id, game, repeat and status, the seats' names and roles, the payoffs, and the seats' turns in order."""

    __slots__ = ("_at", "_columns", "_shape")

    def __init__(self, columns: OutlineColumns, at: int, shape: Shape) -> None:
        self._columns = columns
        self._at = at
        self._shape = shape

    @property
    def match_id(self) -> str:
        """The match's id."""
        return self._columns.match_id(self._at)

    @property
    def game(self) -> str:
        """The game string."""
        return self._shape.game

    @property
    def repeat(self) -> int:
        """The repeat."""
        return self._columns.repeats[self._at]

    @property
    def status(self) -> str:
        """How the match ended (``complete``...)."""
        return self._shape.status

    @property
    def seats(self) -> list[str]:
        """The players in seat order (a list shared by the matches of the same; not to be changed)."""
        return self._shape.seats

    @property
    def roles(self) -> list[str]:
        """The seats' roles (shared, as :attr:`seats`)."""
        return self._shape.roles

    @property
    def returns(self) -> array[float]:
        """The payoffs, seat by seat (an array of doubles)."""
        return self._columns.returns(self._at)

    @property
    def turns(self) -> tuple[TurnOutline, ...]:
        """The seats' turns in order (:attr:`Shape.turns`)."""
        return self._shape.turns


_record = cast("Callable[[OutlineColumns, int, Shape], MatchRecord]", Outline)
"""An outline stands for the record: the summary's sections read only its fields (:data:`OUTLINE_FIELDS`)."""


class _ShapeOnly:
    """A match as a filter sees it when only its :class:`Shape` is known: reading any other field (the id, the repeat,
    the payoffs) raises ``AttributeError``, and the filter is then asked of every match."""

    __slots__ = ("game", "roles", "seats", "status", "turns")

    def __init__(self, shape: Shape) -> None:
        self.game, self.status, self.seats, self.roles, self.turns = shape


def _kept_shapes(table: Sequence[Shape], keep: Callable[[MatchRecord], bool]) -> np.ndarray | None:
    """Per shape of ``table``, whether ``keep`` keeps its matches; None when ``keep`` reads more than a shape holds."""
    try:
        return np.array([bool(keep(cast(MatchRecord, _ShapeOnly(shape)))) for shape in table], dtype=bool)
    except AttributeError:
        return None


class Outlines(Sequence[MatchRecord]):
    """The matches of :class:`OutlineColumns` (all, or those of ``positions``, in that order), each read as an
    :class:`Outline` made when read; it selects and orders itself as a view (:class:`analysis.views.RecordColumns`),
    so no analysis holds an object a match."""

    __slots__ = ("_columns", "_positions")

    def __init__(self, columns: OutlineColumns, positions: Sequence[int] | None = None) -> None:
        self._columns = columns
        self._positions = positions

    def _at(self) -> Sequence[int]:
        return range(len(self._columns)) if self._positions is None else self._positions

    def __len__(self) -> int:
        return len(self._at())

    def __iter__(self) -> Iterator[MatchRecord]:
        columns = self._columns
        table, shapes = columns.shape_table, columns.shapes
        for at in self._at():
            yield _record(columns, at, table[shapes[at]])

    @overload
    def __getitem__(self, key: int) -> MatchRecord: ...

    @overload
    def __getitem__(self, key: slice) -> Outlines: ...

    def __getitem__(self, key: int | slice) -> MatchRecord | Outlines:
        if isinstance(key, slice):
            return Outlines(self._columns, array("I", self._at()[key]))
        at = self._at()[key]
        return _record(self._columns, at, self._columns.shape_table[self._columns.shapes[at]])

    def select(self, keep: Callable[[MatchRecord], bool]) -> Outlines:
        """The matches ``keep`` keeps, in this order (this view when it keeps all). A ``keep`` that reads only the
        parts a shape holds (status, game, seats, roles, turns: the analyses' filters) is asked once a shape, not
        once a match; one that reads more (an id, a repeat, the payoffs) is asked of every match."""
        by_shape = _kept_shapes(self._columns.shape_table, keep)
        if by_shape is None:
            kept = array("I", (at for at, record in zip(self._at(), self, strict=True) if keep(record)))
        elif by_shape.all():
            return self
        else:
            at = np.asarray(self._at(), dtype=np.int64)
            kept = _positions(at[by_shape[np.frombuffer(self._columns.shapes, dtype=_INDEX)[at]]])
        return self if len(kept) == len(self) else Outlines(self._columns, kept)

    def in_repetition_order(self) -> Outlines:
        """These matches by repeat, game and match id (:meth:`OutlineColumns.repetition_order`; this view when in
        that order already)."""
        at = self._at()
        ordered = self._columns.repetition_order(at)
        return self if ordered is at else Outlines(self._columns, ordered)


# -- slim records (the report) --------------------------------------------------------------------------------------

Interned = dict[Any, Any]
"""Shared parts of slim records (:func:`slim`'s ``interned``): equal slim turns, seat lists and player entries."""


def _turn_key(turn: TurnRecord) -> tuple[Any, ...] | None:
    """The fields ``turn`` keeps once slim (:func:`slim`: a seat's texts and a chance outcome's name emptied), as a key
    under which equal slim turns share one object; None when it has attempts. Read from the full turn, so a turn
    already interned is found without a copy being made."""
    if turn.attempts:
        return None
    seat_turn = turn.seat != JUDGE_SEAT
    return (
        turn.index, turn.round, turn.seat, turn.action, "" if seat_turn else turn.action_string,
        "" if seat_turn else turn.text, turn.outcome,
        len(turn.raw_replies) if seat_turn else tuple(turn.raw_replies), turn.retries, turn.model,
        turn.tokens_in, turn.tokens_out, turn.cost_usd, turn.error, tuple(turn.cut_chars),
        tuple(turn.finish_reasons), turn.reasoning_tokens, turn.cached_tokens, turn.cache_write_tokens,
    )  # fmt: skip


def _shared(interned: Interned, value: dict[str, Any]) -> dict[str, Any]:
    """One object for every equal player entry (a JSON-like dict) of a report."""
    if all(type(item) is str for item in value.values()):  # names only (a scripted bot): no JSON text needed
        key: tuple[str, Any] = ("names", tuple(sorted(value.items())))
    else:
        key = ("json", json.dumps(value, sort_keys=True, default=str))
    return cast("dict[str, Any]", interned.setdefault(key, value))


def _strings(interned: Interned, value: list[str]) -> list[str]:
    """One object for every equal list of strings (seats, roles) of a report."""
    return cast("list[str]", interned.setdefault(("strings", tuple(value)), value))


def _slim_turn(turn: TurnRecord, interned: Interned | None) -> TurnRecord:
    """``turn`` without the texts of :func:`slim` (the interned copy when there is one)."""
    key = _turn_key(turn) if interned is not None else None
    if key is not None and interned is not None and key in interned:  # most turns of a large run: no copy
        return cast(TurnRecord, interned[key])
    update: dict[str, Any] = {"prompts": [], "reasoning": [], "latency_s": 0.0}
    if turn.seat != JUDGE_SEAT:
        update.update(text="", action_string="", raw_replies=[""] * len(turn.raw_replies))
    light = turn.model_copy(update=update)
    return light if key is None or interned is None else cast(TurnRecord, interned.setdefault(key, light))


def _slim_rows(moves: Sequence[MoveRow], interned: Interned) -> list[TurnRecord]:
    """The slim turns of a ``moves`` record's rows (:data:`~deepeval_games.core.records.MOVE_ROW`). A row's slim
    turn is set by its place, round, seat and action (a slim turn keeps no name and no latency, and a row holds no
    name: none is replayed), so rows seen before are looked up; each is the slim turn a full record's equal turn
    shares."""
    keys = [("row", index, round_, seat, action) for index, (round_, seat, action, _) in enumerate(moves)]
    try:
        return [interned[key] for key in keys]
    except KeyError:  # a row not seen yet
        for key in keys:
            if key not in interned:
                _, index, round_, seat, action = key
                turn = TurnRecord(index=index, round=round_, seat=seat, action=action, action_string="")
                interned[key] = _slim_turn(turn, interned)
        return [interned[key] for key in keys]


def slim(record: MatchRecord, interned: Interned | None = None) -> MatchRecord:
    """A copy without the texts tables never read: prompts, reasoning, the message pool, the seats' replies and
    utterances (each reply becomes ``""``, so the number of asks stays), the names of the seats' moves and of chance
    outcomes, and the turns' latency. Transport attempts, outcomes, tokens, cost and the judge's verdicts (seat -2)
    are kept.

    With ``interned`` (one dict per report, empty at first) equal slim turns, seat lists, role lists and player
    entries are one shared object, so a report of many matches of few distinct moves stays small: sections only
    read records, never change them. A ``moves`` record read as stored (``rebuild_turns=False``: its rows, no turns)
    gets the slim turns of its rows.
    """
    if record.moves is not None and not record.turns:
        turns = _slim_rows(record.moves, {} if interned is None else interned)
    else:
        turns = [_slim_turn(turn, interned) for turn in record.turns]
    update: dict[str, Any] = {"turns": turns, "messages": [], "moves": None}  # slim turns stand for the rows
    if interned is not None:
        update.update(
            seats=_strings(interned, record.seats),
            roles=_strings(interned, record.roles),
            players=[_shared(interned, p) for p in record.players],
            game=interned.setdefault(("game", record.game), record.game),
        )
    return record.model_copy(update=update)
