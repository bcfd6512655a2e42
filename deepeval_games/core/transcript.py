"""A derived transcript's messages, rebuilt by replaying its moves.

A match where no seat is awaited (classical players, scripted baselines), played without a judge or scorers and with
every move plain and legal, is fully determined by its game, its seed and its moves: the referee would tell each seat
the same things again. Such a match is stored as its moves only (:attr:`~deepeval_games.core.records.MatchRecord.
transcript` ``moves``, schema version 5; every such match since version 7): a fraction of a full transcript's size,
and no record per move is built while it is played. Reading the record rebuilds its turns from the rows;
:func:`with_messages` rebuilds its message pool by playing the match again through the referee, each seat answering
its recorded moves (a seat the record names ``blind`` as a player that reads no view, the others as seats that do).

A match where a model or a person spoke is stored with its turns as they were exchanged and without its pool
(``transcript`` ``exchanges``, version 8): :func:`with_messages` rebuilds the pool by playing the match again, each
seat answering its recorded turn (the text it said, its outcome, the move the referee applied), and
:func:`without_messages` is how the runner stores a match so: only when that replay gives the pool back exactly.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from typing import Any

import pyspiel

from deepeval_games.core import task
from deepeval_games.core.bot import Decision, FieldsBot, Observation, StateBot, SyncBot
from deepeval_games.core.records import CHANCE_SEAT, JUDGE_SEAT, MatchRecord, RecordError, TurnRecord, turns_of_moves
from deepeval_games.core.referee import play_match
from deepeval_games.core.registry.games import recorded_game

__all__ = ["finished", "with_messages", "without_messages"]

_log = logging.getLogger(__name__)


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


class _TurnReplay(SyncBot):
    """A seat that answers with its recorded turns, in order: the text it said, its outcome and error, and the move
    the referee applied (an utterance as its text, for the referee to intern as it did)."""

    def __init__(self, seat: int, turns: Iterator[TurnRecord]) -> None:
        super().__init__(seat)
        self._turns = turns

    def respond(self, observation: Observation) -> Decision:
        turn = next(self._turns, None)
        if turn is None:
            raise RecordError(f"seat {self.player_id} is asked for more turns than its record holds")
        action = turn.action
        if observation.free_text and action not in observation.legal_actions:
            return Decision(None, turn.text, turn.outcome, error=turn.error)
        return Decision(action, turn.text, turn.outcome, error=turn.error)


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
    """``record`` with its whole transcript: itself when it holds one (``transcript = "full"``); for a ``moves`` or
    ``exchanges`` record, a copy whose ``messages`` (and a ``moves`` record's ``turns``) are those the referee makes
    when it plays the recorded moves or turns again with the record's seed (the turns keep their recorded latencies and
    exchanges), as ``transcript = "full"`` would have stored them.

    Raises:
        RecordError: the record does not replay (another seat, action or round than recorded, other returns, too few or
            too many moves, a move the game refuses): it does not belong to this version of its game.
        UnknownGameError: the record's game is not registered here.
    """
    if record.transcript == "full":
        return record
    game = recorded_game(record.game)
    turns = record.turns or turns_of_moves(record.moves or [], record.game, record.match_id)
    per_seat: list[list[TurnRecord]] = [[] for _ in range(game.num_players())]
    for turn in turns:
        if turn.seat != CHANCE_SEAT:
            if not 0 <= turn.seat < len(per_seat):
                raise RecordError(f"match record {record.match_id!r}: a move of seat {turn.seat}, not a seat here")
            per_seat[turn.seat].append(turn)
    blind, exchanged = set(record.blind), record.transcript == "exchanges"
    bots = [
        _BlindReplay(seat, (t.action for t in mine))
        if seat in blind
        else (_TurnReplay(seat, iter(mine)) if exchanged else _Replay(seat, (t.action for t in mine)))
        for seat, mine in enumerate(per_seat)
    ]
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


def without_messages(record: MatchRecord, blind: Sequence[int] = ()) -> MatchRecord:
    """``record`` as it is stored under ``transcript = "auto"``: a complete match recorded in full, where no judge
    spoke, in a game whose moves replay (:func:`~deepeval_games.core.task.replays_from_moves`), becomes an
    ``exchanges`` record (its turns, no messages; ``blind``: the seats that were sent no views,
    :func:`~deepeval_games.core.referee.blind_seats`) when replaying its turns gives its message pool back exactly;
    any other record is returned as it is."""
    if record.transcript != "full" or record.status != "complete" or not record.messages:
        return record
    if any(turn.seat == JUDGE_SEAT for turn in record.turns):
        return record
    try:
        if not task.replays_from_moves(recorded_game(record.game)):
            return record
        stored = record.model_copy(update={"transcript": "exchanges", "messages": [], "blind": list(blind)})
        if with_messages(stored).messages == record.messages:
            return stored
    except Exception as exc:  # any failure to replay keeps the record in full, as it was played (and says why)
        _log.info("match %s is stored in full: its turns do not replay (%r)", record.match_id, exc)
        return record
    _log.info("match %s is stored in full: replaying its turns gives another message pool", record.match_id)
    return record
