"""Slim records: a match record without the texts no table reads (prompts, raw replies, reasoning, the message
pool), with equal parts shared across a report (:data:`Interned`), so a report of many matches stays small; and
outlines (:class:`Outline`): the few fields the score summary's sections read of a record, about 200 bytes a match."""

from __future__ import annotations

import json
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from deepeval_games.core.bot import Outcome
from deepeval_games.core.records import MatchRecord, MoveRow, TurnRecord, turns_of_moves

__all__ = ["OUTLINE_FIELDS", "SHARED_PAYOFFS", "Interned", "Outline", "TurnOutline", "outline", "slim"]

Interned = dict[Any, Any]
"""Shared parts of slim records (:func:`slim`'s ``interned``): equal slim turns, seat lists and player entries."""


def _turn_key(turn: TurnRecord) -> tuple[Any, ...] | None:
    """The fields ``turn`` keeps once slim (:func:`slim`: a seat's texts emptied), as a key under which equal slim
    turns share one object; None when it has attempts. Read from the full turn, so a turn already interned is
    found without a copy being made."""
    if turn.attempts:
        return None
    seat_turn = turn.seat >= 0
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
    if turn.seat >= 0:
        update.update(text="", action_string="", raw_replies=[""] * len(turn.raw_replies))
    light = turn.model_copy(update=update)
    return light if key is None or interned is None else cast(TurnRecord, interned.setdefault(key, light))


def _slim_rows(moves: Sequence[MoveRow], interned: Interned) -> list[TurnRecord]:
    """The slim turns of a ``moves`` record's rows (:data:`~deepeval_games.core.records.MOVE_ROW`). A row's slim
    turn is set by its place, round, seat and action (and a chance outcome's name: a seat's name and latency are
    dropped), so rows seen before are looked up; the record's turns are rebuilt only when a row is new."""
    keys = [
        ("row", index, round_, seat, action, name if seat < 0 else "")
        for index, (round_, seat, action, name, _) in enumerate(moves)
    ]
    try:
        return [interned[key] for key in keys]
    except KeyError:  # a row not seen yet
        for key, turn in zip(keys, turns_of_moves(moves), strict=True):
            if key not in interned:
                interned[key] = _slim_turn(turn, interned)
        return [interned[key] for key in keys]


def slim(record: MatchRecord, interned: Interned | None = None) -> MatchRecord:
    """A copy without the texts tables never read: prompts, reasoning, the message pool, the seats' replies and
    utterances (each reply becomes ``""``, so the number of asks stays) and the turns' latency. Transport attempts,
    outcomes, tokens, cost and the judge's verdicts (seat -2) are kept.

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


@dataclass(frozen=True, slots=True)
class TurnOutline:
    """A seat's turn as the score summary reads it: whose it was and how it went."""

    seat: int
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class Outline:
    """What the score summary's sections (``core`` :mod:`~deepeval_games.app.reports.sections`) read of a match
    record, and nothing else (:data:`OUTLINE_FIELDS`): its id, game, repeat and status, the seats' names and roles,
    the payoffs, and the seats' turns in order (chance moves and the judge's verdicts left out, for no such section
    counts them). Equal parts are shared (:func:`outline`), so an outline is 200 to 300 bytes: this object, its id,
    repeat and (beyond :data:`SHARED_PAYOFFS`) payoffs."""

    match_id: str
    game: str
    repeat: int
    status: str
    seats: list[str]
    roles: list[str]
    returns: Sequence[float]
    """The payoffs: a list shared by every outline with the same, or (past :data:`SHARED_PAYOFFS` distinct ones) an
    array of doubles."""
    turns: tuple[TurnOutline, ...]
    """The seats' turns (seat >= 0), each its seat and outcome, in the order played."""


OUTLINE_FIELDS = frozenset(Outline.__slots__)
"""The fields of a record an outline keeps."""


def _seat_turns(record: MatchRecord, interned: Interned) -> tuple[TurnOutline, ...]:
    """The seats' turns of ``record`` (a ``moves`` record's rows: each ``ok``), the whole tuple shared by every
    record that has the same (a run of few distinct turn sequences holds each once)."""
    if record.moves is not None and not record.turns:
        seats = [(seat, Outcome.OK) for _, seat, _, _, _ in record.moves if seat >= 0]
    else:
        seats = [(turn.seat, turn.outcome) for turn in record.turns if turn.seat >= 0]
    key = ("seat turns", *seats)
    found = interned.get(key)
    if found is None:
        found = interned[key] = tuple(interned.setdefault(("turn", s), TurnOutline(*s)) for s in seats)
    return cast("tuple[TurnOutline, ...]", found)


SHARED_PAYOFFS = 256
"""The distinct payoff lists a summary shares (a two-player game has a few); past them each outline holds its own,
as an array of doubles (96 bytes for four seats, against 184 for a list of floats)."""


def _payoffs(returns: list[float], interned: Interned) -> Sequence[float]:
    """``returns`` as an outline keeps them (:attr:`Outline.returns`); the shared lists are keyed by their exact
    text (``-0.0`` is not ``0.0``)."""
    key = ("payoffs", repr(returns))
    found = interned.get(key)
    if found is not None:
        return cast("list[float]", found)
    if interned.get("payoffs shared", 0) >= SHARED_PAYOFFS:
        return array("d", returns)
    interned["payoffs shared"] = interned.get("payoffs shared", 0) + 1
    interned[key] = returns
    return returns


def outline(record: MatchRecord, interned: Interned) -> Outline:
    """The :class:`Outline` of ``record``, its parts shared through ``interned`` (one dict per summary, empty at
    first): the game, status, seat and role lists and turn sequences of a summary are held once each, and its first
    :data:`SHARED_PAYOFFS` distinct payoff lists."""
    return Outline(
        match_id=record.match_id,
        game=interned.setdefault(("game", record.game), record.game),
        repeat=record.repeat,
        status=interned.setdefault(("status", record.status), record.status),
        seats=_strings(interned, record.seats),
        roles=_strings(interned, record.roles),
        returns=_payoffs(record.returns, interned),
        turns=_seat_turns(record, interned),
    )
