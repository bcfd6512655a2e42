"""Slim records: a match record without the texts no table reads (prompts, raw replies, reasoning, the message
pool), with equal parts shared across a report (:data:`Interned`), so a report of many matches stays small (the
score summary ``run`` prints keeps less: :mod:`~deepeval_games.app.reports.columns`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from deepeval_games.core.records import MatchRecord, MoveRow, TurnRecord, turns_of_moves

__all__ = ["Interned", "slim"]

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
