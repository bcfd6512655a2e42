"""Admission: whether a stored line joins its run (issue 51). A record is read back, never assumed.

A line of ``matches.jsonl`` (or a row of ``results.sqlite``) is a record of its run only if it parses within a size
bound (:data:`MAX_LINE_BYTES`) and a nesting bound (:data:`MAX_DEPTH`, checked before it is parsed: no
``RecursionError``); every number in it is finite (``NaN`` and ``Infinity`` are refused: SQLite's JSON functions
refuse them too); it validates as a record; its match id is one the run's plan produces, with the planned game,
seats, repeat and seed (where the plan is known, :attr:`Admission.planned`, and the record is of the version this code
writes: the match ids of older versions were made by other rules); its returns are one per seat; and a
record stored as its moves replays in its game, every move legal, to its stored returns. Records stored in full are
checked by their schema.

:class:`Admission` is that one check. The writer of a run (:class:`~deepeval_games.app.storage.store.Store`) admits
what it reads back when it opens a run directory (lines the database lacks, rows of the database) and moves a refused
one to :data:`QUARANTINE_NAME` beside the journal, each entry with its reason and the original line, so that its
match is played again as if never recorded; readers skip and count what it refuses. Records the process commits
itself are not checked again (the check is for what is read back).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from deepeval_games.core.records import SCHEMA_VERSION, MatchRecord, RecordError, replay_moves, turns_of_moves

__all__ = [
    "MAX_DEPTH",
    "MAX_LINE_BYTES",
    "QUARANTINE_NAME",
    "Admission",
    "PlanLookup",
    "Planned",
    "Refused",
    "check_bounds",
    "line_id",
    "quarantine",
]

MAX_LINE_BYTES = 256 << 20
"""The longest line a record may be (256 MiB: a long game's record with every prompt is a few MB)."""
MAX_DEPTH = 200
"""The deepest nesting of arrays and objects a record may have (a record nests about 6 deep)."""
QUARANTINE_NAME = "matches.quarantine.jsonl"
"""Refused lines, beside ``matches.jsonl``: one JSON object a line with ``reason``, ``match_id``, ``at`` and
``line`` (the original text)."""
_REPLAY_TOLERANCE = 1e-9
"""How far a stored return may be from its replayed one (the same float arithmetic gives the same value)."""

_NONFINITE = re.compile(rb"NaN|Infinity|[eE]\+?[0-9]{3}")
"""What a non-finite number can look like in JSON text (Python's ``NaN``, ``Infinity``, or an exponent that
overflows a float): a line without any is finite, found without parsing it."""
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")
_VERSION = re.compile(rb'(?<!\\)"schema_version"\s*:\s*(\d+)')
_ID = re.compile(rb'\{\s*"match_id"\s*:\s*"([^"\\]{1,200})"')


class Planned(Protocol):
    """What a run's plan says of a match (a :class:`~deepeval_games.app.spec.plan.PlannedMatch`)."""

    @property
    def game(self) -> str: ...

    @property
    def seats(self) -> tuple[str, ...]: ...

    @property
    def seed(self) -> int: ...


PlanLookup = Callable[[str, int], "Planned | None"]
"""The planned match of a (match id, repeat), or None when the run's plan has no such match."""


class Refused(RecordError):
    """A stored line that does not join its run: ``reason`` says why."""

    def __init__(self, match_id: str, reason: str) -> None:
        """``match_id``: the line's id as far as it could be read (``"?"`` when not)."""
        super().__init__(f"match record {match_id!r} is refused: {reason}")
        self.match_id = match_id
        self.reason = reason


def _as_bytes(text: str | bytes) -> bytes:
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text


def _depth(data: bytes) -> int:
    """The deepest nesting of ``data``'s arrays and objects (brackets inside strings not counted)."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRING.sub(b'""', data)):
        depth += 1 if bracket in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


def _constant(name: str) -> Any:
    raise ValueError(f"a non-finite number ({name})")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"a non-finite number ({text})")
    return value


def check_bounds(text: str | bytes, match_id: str = "?") -> None:
    """A line's size, nesting and numbers checked before it is parsed as a record (cheap for a good line: two counts
    and a search).

    Raises:
        Refused: the line is too long or too deep, is not JSON, or holds a number that is not finite.
    """
    data = _as_bytes(text)
    if len(data) > MAX_LINE_BYTES:
        raise Refused(match_id, f"the line is {len(data):,} bytes, over the bound of {MAX_LINE_BYTES:,}")
    if data.count(b"[") + data.count(b"{") > MAX_DEPTH and _depth(data) > MAX_DEPTH:
        raise Refused(match_id, f"the line nests deeper than {MAX_DEPTH} levels")
    if _NONFINITE.search(data) is not None:
        try:
            json.loads(data, parse_constant=_constant, parse_float=_finite_float)
        except ValueError as exc:
            raise Refused(match_id, f"not JSON of finite numbers: {exc}") from None


def line_id(text: str | bytes) -> str:
    """The match id a line claims, read without parsing it (``"?"`` when it does not start with one)."""
    found = _ID.match(_as_bytes(text)[:300])
    return found.group(1).decode("utf-8", "replace") if found else "?"


def _written_now(text: str | bytes) -> bool:
    """Whether a record's text is of the version this code writes (its ``schema_version`` key says so: a key is
    never inside a JSON string, whose quotes are escaped)."""
    versions = _VERSION.findall(_as_bytes(text))
    return bool(versions) and all(int(version) == SCHEMA_VERSION for version in versions)


class Admission:
    """The check a record read back passes to join its run (see the module documentation)."""

    def __init__(self, planned: PlanLookup | None = None) -> None:
        """``planned``: the run's plan as a lookup (None: the plan is not known; the other checks still apply)."""
        self.planned = planned
        self.admitted: set[str] = set()
        """Ids admitted (or committed by this process) already: a store opened again by the same run skips them."""
        self.quarantined: set[str] = set()
        """Ids of the records refused and moved to the quarantine file by a store of this admission."""

    def admit(self, text: str | bytes, *, rebuild_turns: bool = True) -> MatchRecord:
        """The record of ``text`` if it joins the run (its turns rebuilt from its moves unless ``rebuild_turns`` is
        False, as :meth:`MatchRecord.from_json`).

        Raises:
            Refused: why it does not.
            RecordError: the record is of a newer version than this code (not refused: a newer deepeval-games reads
                it).
        """
        match_id = line_id(text)
        check_bounds(text, match_id)
        if any(int(version) > SCHEMA_VERSION for version in _VERSION.findall(_as_bytes(text))):
            MatchRecord.from_json(text, rebuild_turns=False)  # raises its own error, which says to upgrade
        try:
            record = MatchRecord.from_json(text, rebuild_turns=False)
        except (RecordError, ValueError, RecursionError) as exc:
            raise Refused(match_id, f"not a valid record: {str(exc)[:300]}") from None
        match_id = record.match_id
        if _written_now(text):  # match ids of older versions were made by other rules than today's plan
            self._check_plan(record)
        if len(record.returns) != len(record.seats):
            raise Refused(match_id, f"{len(record.returns)} returns for {len(record.seats)} seats")
        if record.players and len(record.players) != len(record.seats):
            raise Refused(match_id, f"{len(record.players)} players for {len(record.seats)} seats")
        if record.moves is not None:
            self._check_replay(record, rebuild_turns)
        return record

    def _check_plan(self, record: MatchRecord) -> None:
        if self.planned is None:
            return
        planned = self.planned(record.match_id, record.repeat)
        if planned is None:
            raise Refused(record.match_id, f"its match id is not one the run's plan has (repeat {record.repeat})")
        if record.game != planned.game:
            raise Refused(record.match_id, f"it claims the game {record.game!r}; the plan plays {planned.game!r}")
        if tuple(record.seats) != tuple(planned.seats):
            raise Refused(record.match_id, f"its seats {record.seats} are not the planned {list(planned.seats)}")
        if record.seed != planned.seed:
            raise Refused(record.match_id, f"its seed {record.seed} is not the planned {planned.seed}")

    @staticmethod
    def _check_replay(record: MatchRecord, rebuild_turns: bool) -> None:
        moves = record.moves
        assert moves is not None
        try:
            names, returns = replay_moves(record.game, moves, record.match_id)
        except RecordError as exc:
            raise Refused(record.match_id, f"it does not replay: {str(exc)[:300]}") from None
        if record.status == "complete":
            if returns is None:
                raise Refused(record.match_id, "its moves end before the game does")
            if len(returns) != len(record.returns) or any(
                abs(a - b) > _REPLAY_TOLERANCE for a, b in zip(returns, record.returns, strict=True)
            ):
                raise Refused(record.match_id, f"its returns {record.returns} are not those its moves give, {returns}")
        if rebuild_turns and not record.turns:
            record.turns = turns_of_moves(moves, record.game, record.match_id, names=names)


def quarantine(run_dir: str | Path, refused: list[tuple[Refused, str | bytes]]) -> Path:
    """Append each refused line (with its reason) to the run directory's :data:`QUARANTINE_NAME`; its path."""
    path = Path(run_dir) / QUARANTINE_NAME
    at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with open(path, "a", encoding="utf-8") as handle:
        for error, text in refused:
            line = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
            entry = {"match_id": error.match_id, "reason": error.reason, "at": at, "line": line.rstrip("\n")}
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return path
