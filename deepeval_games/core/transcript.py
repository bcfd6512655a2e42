"""A derived transcript's messages, rebuilt by replaying its moves.

A match where no seat is awaited (classical players, scripted baselines), played without a judge or scorers and with
every move plain and legal, is fully determined by its game, its seed and its moves: the referee would tell each seat
the same things again. Such a match is stored as its moves only (:attr:`~deepeval_games.core.records.MatchRecord.
transcript` ``moves``, schema version 5; every such match since version 7): a fraction of a full transcript's size,
and no record per move is built while it is played. Reading the record rebuilds its turns from the rows;
:func:`with_messages` rebuilds its message pool by playing the match again through the referee, each seat answering
its recorded moves (a seat the record names ``blind`` as a player that reads no view, the others as seats that do).
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterator, Mapping
from typing import Any

import pyspiel

from deepeval_games.core.bot import FieldsBot, StateBot
from deepeval_games.core.records import CHANCE_SEAT, MatchRecord, RecordError, turns_of_moves
from deepeval_games.core.referee import play_match
from deepeval_games.core.registry.games import load_game

__all__ = ["finished", "with_messages"]


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


class _BlindReplay(StateBot):
    """A seat that was sent no views (a classical player that reads none), answering its recorded moves in order."""

    reads_views = False
    copies_state = False

    def __init__(self, seat: int, moves: Iterator[int]) -> None:
        super().__init__(seat)
        self._moves = moves

    def pick(self, state: pyspiel.State, legal: list[int]) -> int:
        move = next(self._moves, None)
        if move is None:
            raise RecordError(f"seat {self.player_id} is asked for more moves than its record holds")
        return move


def finished(coroutine: Coroutine[Any, Any, MatchRecord]) -> MatchRecord:
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
    blind = set(record.blind)
    bots = [(_BlindReplay if seat in blind else _Replay)(seat, iter(moves)) for seat, moves in enumerate(per_seat)]
    match = play_match(
        game, bots, seed=record.seed, match_id=record.match_id, seat_names=record.seats, transcript="full"
    )
    try:
        replayed = finished(match)
    except Exception as exc:  # a bot asked past its moves, a move the game refuses, a match that does not end
        raise RecordError(f"match record {record.match_id!r} does not replay: {type(exc).__name__}: {exc}") from exc
    played = [(t.round, t.seat, t.action, t.action_string, t.text) for t in replayed.turns]
    recorded = [(t.round, t.seat, t.action, t.action_string, t.text) for t in turns]
    if played != recorded or replayed.returns != record.returns:
        raise RecordError(
            f"match record {record.match_id!r} does not replay: its moves give other turns or returns in {record.game}"
        )
    full = {"messages": replayed.messages, "turns": turns, "transcript": "full", "moves": None, "blind": []}
    return record.model_copy(update=full)
