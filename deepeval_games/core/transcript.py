"""A derived transcript's messages, rebuilt by replaying its moves.

A match whose every seat is a scripted bot that moves from its observation fields alone
(:class:`~deepeval_games.core.bot.FieldsBot`), played without a judge or scorers and with every move legal, is fully
determined by its game, its seed and its moves: the referee would tell each seat the same things again. Such a match
may be stored as its moves only (:attr:`~deepeval_games.core.records.MatchRecord.transcript` ``moves``, schema
version 5): a fraction of a full transcript's size, and nothing of the pool is built while it is played. Reading the
record rebuilds its turns from the rows; :func:`with_messages` rebuilds its message pool by playing the match again
through the referee, each seat answering its recorded moves.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterator, Mapping
from typing import Any

from deepeval_games.core.bot import FieldsBot
from deepeval_games.core.records import CHANCE_SEAT, MatchRecord, RecordError, turns_of_moves
from deepeval_games.core.referee import play_match
from deepeval_games.core.registry.games import load_game

__all__ = ["with_messages"]


class _Replay(FieldsBot):
    """A seat that answers its recorded moves, in order."""

    def __init__(self, seat: int, moves: Iterator[int]) -> None:
        super().__init__(seat)
        self._moves = moves

    def move_from_fields(self, fields: Mapping[str, Any]) -> int:
        move = next(self._moves, None)
        if move is None:
            raise RecordError(f"seat {self.player_id} is asked for more moves than its record holds")
        return move


def _finished(coroutine: Coroutine[Any, Any, MatchRecord]) -> MatchRecord:
    """The value of a coroutine that never awaits (a match of fields bots without a judge or scorers), run here:
    it works inside a running event loop too."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("replaying a transcript awaited: its seats are not all fields bots")


def with_messages(record: MatchRecord) -> MatchRecord:
    """``record`` with its whole transcript: itself when it holds one (``transcript = "full"``); for a ``moves``
    record, a copy whose ``messages`` and ``turns`` are those the referee makes when it plays the recorded moves
    again with the record's seed (the turns keep their recorded latencies), as ``transcript = "full"`` would have
    stored them.

    Raises:
        RecordError: the moves do not replay (another seat, action or round than recorded, other returns, too few or
            too many moves, a move the game refuses): the record does not belong to this version of its game.
        UnknownGameError: the record's game is not registered here.
    """
    if record.transcript != "moves":
        return record
    turns = record.turns or turns_of_moves(record.moves or [])
    game = load_game(record.game)
    per_seat: list[list[int]] = [[] for _ in range(game.num_players())]
    for turn in turns:
        if turn.seat != CHANCE_SEAT:
            if not 0 <= turn.seat < len(per_seat):
                raise RecordError(f"match record {record.match_id!r}: a move of seat {turn.seat}, not a seat here")
            per_seat[turn.seat].append(turn.action)
    bots = [_Replay(seat, iter(moves)) for seat, moves in enumerate(per_seat)]
    match = play_match(game, bots, seed=record.seed, match_id=record.match_id, seat_names=record.seats)
    try:
        replayed = _finished(match)
    except Exception as exc:  # a bot asked past its moves, a move the game refuses, a match that does not end
        raise RecordError(f"match record {record.match_id!r} does not replay: {type(exc).__name__}: {exc}") from exc
    played = [(t.round, t.seat, t.action, t.action_string, t.text) for t in replayed.turns]
    recorded = [(t.round, t.seat, t.action, t.action_string, t.text) for t in turns]
    if played != recorded or replayed.returns != record.returns:
        raise RecordError(
            f"match record {record.match_id!r} does not replay: its moves give other turns or returns in {record.game}"
        )
    full = {"messages": replayed.messages, "turns": turns, "transcript": "full", "moves": None}
    return record.model_copy(update=full)
