"""The match record: one typed, versioned document per match (pydantic models).

A record holds what is needed to audit and re-score a match without replaying it: the game string,
who sat where, every turn (the prompts of every ask, raw replies, action, outcome, re-asks, latency,
tokens, cost), the message pool, and the returns. ``matches.jsonl`` in a run directory holds one record
per line (:meth:`MatchRecord.to_dict`); the store's ``results.sqlite`` holds the same text.

No record is built per move: the referee keeps a match's moves as plain tuples and makes its record once, when the
match is over (validated there, at the edge, as it is when read back: :meth:`MatchRecord.from_dict`). A record is
mutable: the runner sets ``experiment``, ``repeat`` and ``metrics`` after the referee made it.

**Versions.** ``schema_version`` names the layout of a record. Reading a record runs the migrations from
its version up to :data:`SCHEMA_VERSION` (:data:`MIGRATIONS`), then validates it; a record of a newer
version is refused. The rule: *a change to the record bumps its version, adds a migration here and a small
checked-in run-directory fixture of the old version* (``tests/fixtures/v<N>/``), whose loading is tested.

History:

* 0 — records without ``schema_version`` (read as version 1).
* 1 — first version: ``TurnRecord.prompt``, the chat messages of the first ask only.
* 2 — ``TurnRecord.prompts``: the chat messages of every ask of a turn (first ask, then each re-ask);
  ``outcome`` is an :class:`~deepeval_games.core.bot.Outcome` and ``status`` is ``complete`` or ``aborted``.
* 3 — ``TurnRecord.attempts``: every transport attempt of the turn (status, HTTP status, error class, wait), so
  retries show in the record; ``TurnRecord.cut_chars``: per ask, what was cut from a reply over the task's
  maximum length.
* 4 — ``TurnRecord.finish_reasons``: per ask, why the model stopped (``length``: cut by the token cap);
  ``TurnRecord.reasoning_tokens`` and ``reasoning`` (per ask, the reasoning text sent apart from the reply);
  the turn outcome ``truncated`` (a reply cut by the cap at the last ask).
* 5 — ``MatchRecord.transcript`` and ``moves``: a match whose transcript can be derived from its moves (every seat a
  scripted bot that moves from its observation fields, every move legal and plain; see
  :mod:`deepeval_games.core.transcript`) may be stored as ``transcript = "moves"``: its turns as compact ``moves`` rows
  and no messages. Reading the record rebuilds its turns from the rows (:meth:`MatchRecord.from_dict`,
  :meth:`MatchRecord.from_json`); :func:`deepeval_games.core.transcript.with_messages` rebuilds its message pool by
  replaying the moves. Older records are ``transcript = "full"``, as every record was.
* 6 — ``TurnRecord.cached_tokens`` and ``cache_write_tokens``: the turn's prompt tokens the provider read from (and
  wrote to) its prompt cache, as it reported them; older records read 0 (not reported).
* 7 — records from moves: ``transcript = "moves"`` is what the referee writes for every match where no seat is
  awaited (classical players and scripted baselines alike, not only fields bots), and ``MatchRecord.blind``: the seats
  of such a match that were sent no views (classical players that read none), so that replaying the moves sends them
  none either. Older records read ``blind`` empty (every seat of a version-6 ``moves`` record read its views).
* 8 — ``transcript = "exchanges"``: a match where a model or a person spoke (no judge) is stored with every turn as
  it was exchanged (prompts, replies, outcome, action) and without its message pool, which
  :func:`deepeval_games.core.transcript.with_messages` rebuilds by replaying the turns; the runner stores a match so
  only after such a replay gave its pool back exactly. ``blind`` names its seats sent no views, as for ``moves``.
  Older records are unchanged (no version-7 record is ``exchanges``).
* 9 — a row of ``moves`` is the move alone: its round, seat, action and latency (:data:`MOVE_ROW`), without the
  action's name, which a game's history and chance outcomes determine: reading the record replays the moves in its
  game for the names (:func:`move_names`; a game whose names depend on more says ``replays_from_moves = False``, as
  the conformance kit checks, and its matches are stored in full). Version-8 rows lose their name column.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import pyspiel
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from deepeval_games.core.binding import state_hooks
from deepeval_games.core.bot import CallAttempt, Outcome, Usage
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.registry.games import recorded_game

__all__ = [
    "CHANCE_SEAT",
    "DERIVED_FIELDS",
    "JUDGE_SEAT",
    "MIGRATIONS",
    "MOVE_ROW",
    "SCHEMA_VERSION",
    "TIMING_FIELDS",
    "CallAttempt",
    "MatchRecord",
    "RecordError",
    "TurnRecord",
    "migrate",
    "move_names",
    "player_identity",
    "replay_moves",
    "turns_of_moves",
]

SCHEMA_VERSION = 9
"""The version of the records this code writes."""
_CURRENT_MARK = f'"schema_version":{SCHEMA_VERSION},'
"""How :meth:`MatchRecord.to_json` writes the version of a current record (the field is never the last)."""
TIMING_FIELDS = ("latency_s", "wall_time_s", "started_at")
"""Fields that measure wall-clock time; :meth:`MatchRecord.canonical` leaves them out."""

DERIVED_FIELDS = (("sampling", "seed"),)
"""What a seat's recorded identity (:attr:`MatchRecord.players`) holds that the engine derived for one match: a model's
sampling seed drawn from the match seed when the spec sets none. It belongs to the match, never to the player."""


def player_identity(played: Any) -> dict[str, Any]:
    """A seat's recorded identity (an entry of :attr:`MatchRecord.players`) without what the engine derived for the
    match (:data:`DERIVED_FIELDS`): what every grouping of players (leaderboard, report, exports) keys by. A seed the
    user set is part of the player's spec, which groupings read beside this; an empty or odd entry gives ``{}``."""
    if not isinstance(played, dict):
        return {}
    out = dict(played)
    for outer, inner in DERIVED_FIELDS:
        nested = out.get(outer)
        if isinstance(nested, dict) and inner in nested:
            out[outer] = {k: v for k, v in nested.items() if k != inner}
    return out


CHANCE_SEAT = -1
"""The seat of chance outcomes in :attr:`TurnRecord.seat`."""
JUDGE_SEAT = -2
"""The seat of the judge's verdicts in :attr:`TurnRecord.seat`."""


MOVE_ROW = ("round", "seat", "action", "latency_s")
"""The columns of a row of :attr:`MatchRecord.moves`: the turn's round, seat (-1: chance), action and latency. The
action's name (also the turn's ``text``; a chance outcome's text is empty) is not stored: :func:`move_names` replays
the moves for it."""

MoveRow = tuple[int, int, int, float]
"""One row of :attr:`MatchRecord.moves` (:data:`MOVE_ROW`)."""


class RecordError(DeepEvalError, ValueError):
    """A stored record cannot be read: a newer schema version, or a record that does not validate."""


_CONFIG = ConfigDict(extra="forbid", use_attribute_docstrings=True, ser_json_inf_nan="constants")
"""Records as JSON: ``Infinity`` and ``NaN`` written as Python's ``json`` writes them (and reads them back)."""


class TurnRecord(BaseModel):
    """One move: a seat's action, a chance outcome (seat -1) or the judge's verdict (seat -2)."""

    model_config = _CONFIG

    index: int
    """Position in the game's history, from 0."""
    round: int
    """Round of Algorithm 1 (a simultaneous node is one round for all its seats)."""
    seat: int
    """The seat that moved, from 0; -1 for a chance outcome, -2 for the judge."""
    action: int
    """The action applied to the game (for a free-text move: the utterance's id in the message pool)."""
    action_string: str
    """The game's name of ``action`` for this seat."""
    text: str = ""
    """The utterance added to the message pool."""
    outcome: Outcome = Outcome.OK
    """``ok``, ``reasked``, ``invalid``, ``refusal``, ``context_overflow``, ``truncated`` or ``infra_error``
    (an :class:`Outcome`, written as its value by pydantic's own enum serializer: no Python call per turn)."""
    raw_replies: list[str] = Field(default_factory=list)
    """Every raw model reply of the turn, in order (one per ask)."""
    prompts: list[list[dict[str, str]]] = Field(default_factory=list)
    """The chat messages sent at each ask of the turn (the first ask, then every re-ask), exactly as in the
    request's ``messages``; empty for scripted bots and chance."""
    retries: int = 0
    """Re-asks after replies that were not a valid move (not infrastructure retries)."""
    model: str | None = None
    """The model id the provider reported; None for scripted bots."""
    tokens_in: int = 0
    """Prompt tokens of all asks of the turn."""
    tokens_out: int = 0
    """Completion tokens of all asks of the turn."""
    cost_usd: float = 0.0
    """Cost of the turn's calls, as litellm prices them (USD)."""
    latency_s: float = 0.0
    """Wall-clock time the seat took to answer, in seconds."""
    error: str | None = None
    """Why the turn was not ``ok`` (and what the referee played instead), if it was not."""
    attempts: list[CallAttempt] = Field(default_factory=list)
    """Every transport attempt of the turn's model calls, in order: status, HTTP status, error class and the
    wait before the next attempt (infrastructure retries included); empty for scripted bots and chance."""
    cut_chars: list[int] = Field(default_factory=list)
    """Per ask, the characters cut from a reply longer than the task's maximum (0: not cut); the reply is cut
    before it is stored or sent back to the model."""
    finish_reasons: list[str | None] = Field(default_factory=list)
    """Per ask, why the model stopped as the provider reported it (``stop``; ``length``: the reply was cut by
    the token cap and re-asked, or the turn is ``truncated``); empty for scripted bots and chance."""
    reasoning_tokens: int = 0
    """Completion tokens spent on reasoning over the turn's asks, where the provider reports them (included in
    ``tokens_out`` and ``cost_usd``)."""
    reasoning: list[str] = Field(default_factory=list)
    """Per ask, the reasoning text the provider sent apart from the reply ("" when none). Reasoning written into
    the reply itself (``<think>...</think>``) stays in ``raw_replies``; neither is ever read as the move."""
    cached_tokens: int = 0
    """Prompt tokens of the turn's asks the provider read from its prompt cache (included in ``tokens_in``, and
    priced in ``cost_usd`` at the cached rate where litellm knows it); 0 when none or not reported."""
    cache_write_tokens: int = 0
    """Prompt tokens of the turn's asks the provider wrote to its prompt cache, where it reports and charges for
    that (Anthropic's ``cache_creation_input_tokens``)."""

    @property
    def usage(self) -> Usage:
        """The turn's tokens and cost as one value (kept on disk as the six fields above)."""
        return Usage.of(self)


class MatchRecord(BaseModel):
    """Everything about one match."""

    model_config = _CONFIG

    match_id: str
    """Stable id: a hash of the game string, the seating, the players, the seed and the repeat."""
    game: str
    """The full game string (``kuhn_poker(players=3)``)."""
    seats: list[str]
    """Player names in seat order; seat i is anonymous "Player i+1" inside the match."""
    returns: list[float]
    """Payoff of every seat, in seat order."""
    turns: list[TurnRecord]
    """Every move of the match, in order (chance outcomes and verdicts included)."""
    experiment: str = ""
    """The ``name`` of the experiment spec that planned the match."""
    repeat: int = 0
    """The repeat number (from 0) of this seating."""
    seed: int = 0
    """The match seed: chance nodes and the bots' generators derive from it."""
    players: list[dict[str, Any]] = Field(default_factory=list)
    """Per seat: what played there (scripted bot name or model id, prompt version), never shown to seats."""
    roles: list[str] = Field(default_factory=list)
    """Per seat: the role it plays (``player`` in symmetric games)."""
    messages: list[dict[str, Any]] = Field(default_factory=list)
    """The message pool, in order."""
    metrics: dict[str, Any] = Field(default_factory=dict)
    """Task metrics from scorers (successful hits, MBPP pass rate, ...)."""
    status: Literal["complete", "aborted"] = "complete"
    """``complete`` or ``aborted``."""
    error: str | None = None
    """Why the match was aborted, if it was."""
    schema_version: int = SCHEMA_VERSION
    """The layout version of this record (see the module documentation)."""
    wall_time_s: float = 0.0
    """Wall-clock duration of the match, in seconds."""
    started_at: str = ""
    """When the match started (ISO 8601, UTC)."""
    transcript: Literal["full", "moves", "exchanges"] = "full"
    """``full``: ``turns`` and ``messages`` are stored as played. ``moves``: the match's transcript is derived from its
    moves (every seat a scripted bot that moves from its observation fields, every move legal): the record stores
    ``moves`` instead of ``turns`` and no ``messages``. Reading it (:meth:`from_dict`, :meth:`from_json`) rebuilds
    ``turns``; :func:`deepeval_games.core.transcript.with_messages` rebuilds ``messages`` by replaying the moves.
    ``exchanges``: ``turns`` as played (every model's or person's exchange in them) and no ``messages``, which
    :func:`~deepeval_games.core.transcript.with_messages` rebuilds by replaying the turns."""
    moves: list[MoveRow] | None = None
    """Under ``transcript = "moves"``: every turn, in order, as a row of :data:`MOVE_ROW`; None otherwise."""
    blind: list[int] = Field(default_factory=list)
    """Under ``transcript = "moves"`` or ``"exchanges"`` (or a match played to be stored so): the seats that were sent
    no views while the match played (classical players that read none: only the rules and the final view reach them);
    empty otherwise."""

    @model_validator(mode="after")
    def _moves_agree(self) -> MatchRecord:
        """``moves`` is given exactly when ``transcript`` is ``moves`` (checked when a record is read)."""
        if (self.transcript == "moves") != (self.moves is not None):
            given = "given" if self.moves is not None else "None"
            raise ValueError(f"transcript {self.transcript!r} with moves {given}")
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (enums as their string values). A ``moves`` record is written as it is stored: its
        rows, and no turns (those reading rebuilt are left out: the rows stand for them; see :meth:`_as_stored`)."""
        return self._as_stored().model_dump(mode="json")

    def _as_stored(self) -> MatchRecord:
        """This record, or for a ``moves`` record read back (its turns rebuilt from its rows, unchanged since) a copy
        without them. Turns changed after reading are kept beside the rows (reading then keeps them as they are)."""
        if self.moves is not None and self.turns and self.turns == turns_of_moves(self.moves, self.game):
            return self.model_copy(update={"turns": []})
        return self

    def to_json(self) -> str:
        """The record as one line of JSON (the form the store keeps), written in one pass by pydantic's serializer:
        ``json.loads(record.to_json()) == record.to_dict()``.

        (orjson writes a scripted record in about half the time, but writes an infinite or NaN float
        as ``null``; a walk over the record that would catch those costs more than the difference.)"""
        return self._as_stored().model_dump_json()

    def to_json_bytes(self) -> bytes:
        """:meth:`to_json` as UTF-8 bytes, written by pydantic's serializer itself (``to_json`` decodes these very
        bytes into text): what a worker process sends, so a 20 kB record is neither decoded nor encoded again."""
        return type(self).__pydantic_serializer__.to_json(self._as_stored())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatchRecord:
        """Inverse of :meth:`to_dict`: migrate a record of an older version, then validate it.

        Raises:
            RecordError: the record is of a newer version than this code, or does not validate.
        """
        return cls._validated(migrate(data))

    @classmethod
    def from_json(cls, text: str | bytes, *, rebuild_turns: bool = True) -> MatchRecord:
        """A record from its JSON text (a line of ``matches.jsonl``, a row of the store): :meth:`from_dict` of the
        parsed text. A record of this version written by :meth:`to_json` is validated from the text in one pass by
        pydantic's own parser (about half the time of parsing, then validating); any other text (an older version,
        other spacing, text pydantic's parser refuses) takes the path of :meth:`from_dict`, migrations included.

        ``rebuild_turns`` False: a ``moves`` record stored without turns is given as stored, its rows in ``moves``
        and ``turns`` empty (for a reader of the rows alone, such as the report's slim records).

        Raises:
            RecordError: the record is of a newer version than this code, or does not validate.
            ValueError: ``text`` is not JSON.
        """
        if _CURRENT_MARK in (text if isinstance(text, str) else text.decode("utf-8", "replace")):
            try:
                record = cls.model_validate_json(text)
            except ValidationError:
                pass  # the full path below says what is wrong
            else:
                if record.schema_version == SCHEMA_VERSION:
                    if rebuild_turns and record.moves is not None and not record.turns:
                        record.turns = turns_of_moves(record.moves, record.game, record.match_id)
                    return record
        return cls._validated(migrate(json.loads(text)), rebuild_turns=rebuild_turns)

    @classmethod
    def _validated(cls, data: dict[str, Any], *, rebuild_turns: bool = True) -> MatchRecord:
        moves = data.get("moves")
        if rebuild_turns and moves is not None and not data.get("turns") and isinstance(moves, list):
            match_id = str(data.get("match_id", "?"))
            if not all(isinstance(row, (list, tuple)) and len(row) == len(MOVE_ROW) for row in moves):
                raise RecordError(f"match record {match_id!r}: its moves are not rows of {MOVE_ROW}")
            names = move_names(str(data.get("game", "")), moves, match_id)
            try:
                data = {**data, "turns": turn_dicts_of_moves(moves, names)}
            except (TypeError, ValueError) as exc:
                raise RecordError(f"match record {match_id!r}: its moves are not rows of {MOVE_ROW}: {exc}") from exc
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            match_id = data.get("match_id", "?")
            message = f"match record {match_id!r} is not a valid record (version {SCHEMA_VERSION}): {exc}"
            raise RecordError(message) from exc

    def canonical(self) -> dict[str, Any]:
        """The record without wall-clock measurements and transport attempts (how the calls were delivered:
        retries, waits): equal for equal seeds. A ``moves`` record's rows are given as its turns (as reading it back
        rebuilds them), so a record compares equal before and after it was stored."""
        data = self.model_dump(mode="json")  # (not to_dict: a record read back keeps the turns it rebuilt)
        for key in TIMING_FIELDS:
            data.pop(key, None)
        moves = data.pop("moves", None)  # the rows are the turns, as a record read back has them
        if moves is not None and not data["turns"]:
            data["turns"] = [turn.model_dump(mode="json") for turn in turns_of_moves(moves, self.game, self.match_id)]
        for turn in data["turns"]:
            for key in (*TIMING_FIELDS, "attempts"):
                turn.pop(key, None)
        return data


def turn_dicts_of_moves(
    moves: Sequence[MoveRow] | Sequence[Sequence[Any]], names: Sequence[str]
) -> list[dict[str, Any]]:
    """The turns of a ``transcript = "moves"`` record as plain values, rebuilt from its rows (:data:`MOVE_ROW`) and the
    names of their actions (:func:`move_names`): each a plain move (outcome ``ok``, no exchange with a model), its text
    the action's name (empty for a chance outcome)."""
    if len(names) != len(moves):
        raise ValueError(f"{len(moves)} rows and {len(names)} names")
    turns = []
    for index, ((round_, seat, action, latency), name) in enumerate(zip(moves, names, strict=True)):
        chance = seat == CHANCE_SEAT
        turns.append(
            {
                "index": index,
                "round": round_,
                "seat": seat,
                "action": action,
                "action_string": name,
                "text": "" if chance else name,
                "latency_s": 0.0 if chance else latency,
            }
        )
    return turns


def turns_of_moves(
    moves: Sequence[MoveRow] | Sequence[Sequence[Any]],
    game: str,
    match_id: str = "?",
    *,
    names: Sequence[str] | None = None,
) -> list[TurnRecord]:
    """The turns of a ``moves`` record of ``game`` (its rows named by :func:`move_names`, or by ``names`` when the
    caller replayed them already), as validated turn records (one pass of pydantic's validator over the list).

    Raises:
        RecordError: the game cannot be loaded here, or the rows do not replay in it.
    """
    named = move_names(game, moves, match_id) if names is None else names
    return _TURNS.validate_python(turn_dicts_of_moves(moves, named))


def move_names(game: str, moves: Sequence[MoveRow] | Sequence[Sequence[Any]], match_id: str = "?") -> list[str]:
    """The name of each row's action in ``game`` (:func:`replay_moves`' names).

    Raises:
        RecordError: the game cannot be loaded here (or names a file), or the rows do not replay in it.
    """
    return replay_moves(game, moves, match_id)[0]


def replay_moves(
    game: str, moves: Sequence[MoveRow] | Sequence[Sequence[Any]], match_id: str = "?"
) -> tuple[list[str], list[float] | None]:
    """The rows replayed in ``game``: the name of each row's action, and the returns of the state they end in (None
    when it is not terminal), which a complete record's ``returns`` must equal.

    The name of each row's action in ``game``, as the referee named it while the match played: the moves replayed
    from the game's initial state, each named in the state it was made in (a seat's by the game's own
    ``action_to_string``, through :func:`~deepeval_games.core.binding.state_hooks` as the referee calls it; a chance
    outcome's as seat -1's), the rows of one simultaneous round all named before any is applied. The state is asked
    what the referee asks it before it names a move (the seats' legal moves, the chance outcomes), for a game that
    lists its moves when asked (a TextArena environment names a move from its list).

    The game is loaded as a record's game is (:func:`~deepeval_games.core.registry.games.recorded_game`): a run
    directory may come from anyone, so a game that names a file is refused, never opened (the referee stores such a
    game's matches in full).

    Raises:
        RecordError: the game cannot be loaded here (or names a file), or the rows do not replay in it (another
            game's, or a game that changed since).
    """
    try:
        loaded = recorded_game(game)
    except DeepEvalError as exc:
        raise RecordError(
            f"match record {match_id!r}: the names of its moves are read by replaying them in {game!r}, which does not "
            f"load here: {exc}"
        ) from exc
    state = loaded.new_initial_state()
    hooks = state_hooks(state, loaded)
    name_of, legal_of = hooks.action_name, hooks.legal_actions
    names: list[str] = []
    at = 0
    try:
        while at < len(moves):
            round_, seat, action = moves[at][0], moves[at][1], moves[at][2]
            if seat == CHANCE_SEAT:
                _legal(action, [outcome for outcome, _ in state.chance_outcomes()] if state.is_chance_node() else [])
                names.append(state.action_to_string(CHANCE_SEAT, action))
                state.apply_action(action)
                at += 1
            elif state.is_simultaneous_node():  # the round's rows, named in the same state, applied together
                legal = [legal_of(each) for each in range(loaded.num_players())]
                joint = [pyspiel.INVALID_ACTION] * len(legal)
                while at < len(moves) and moves[at][0] == round_:
                    seat, action = moves[at][1], moves[at][2]
                    _legal(action, legal[seat] if 0 <= seat < len(legal) else ())
                    names.append(name_of(seat, action))
                    joint[seat] = action
                    at += 1
                state.apply_actions(joint)
            else:
                _legal(action, legal_of(seat) if seat == state.current_player() else ())
                names.append(name_of(seat, action))
                state.apply_action(action)
                at += 1
    except Exception as exc:  # a move the game refuses (SpielError, or a Python game's own error), a bad row
        raise RecordError(
            f"match record {match_id!r} does not replay in {game!r}: row {at} of its moves: {type(exc).__name__}: {exc}"
        ) from exc
    if not state.is_terminal():
        return names, None
    returns = state.returns()
    return names, [float(value) for value in returns]


def _legal(action: Any, legal: Sequence[int]) -> None:
    """A row's move checked before the game is asked anything of it (a game's C++ may not check a move it is given):
    a move of the seat to move, legal where it was made."""
    if action not in legal:
        raise ValueError(f"move {action!r} is not a legal move of that seat there (or the seat is not to move)")


_TURNS: TypeAdapter[list[TurnRecord]] = TypeAdapter(list[TurnRecord])


# -- migrations ------------------------------------------------------------------------------------------


def _v0_to_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 0 (no ``schema_version``) has the layout of version 1."""
    return data


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """``TurnRecord.prompt`` (the first ask's messages) becomes ``prompts`` (one list of messages per ask).

    Version 1 kept only the first ask, so a migrated turn has at most one prompt.
    """
    turns = []
    for turn in data.get("turns", []):
        turn = dict(turn)
        prompt = turn.pop("prompt", None)
        turn["prompts"] = [prompt] if prompt else []
        turns.append(turn)
    return {**data, "turns": turns}


def _v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """Turns gain ``attempts`` and ``cut_chars``: version 2 kept neither, so both are empty."""
    turns = [{**turn, "attempts": [], "cut_chars": []} for turn in data.get("turns", [])]
    return {**data, "turns": turns}


def _v3_to_v4(data: dict[str, Any]) -> dict[str, Any]:
    """Turns gain ``finish_reasons`` (unknown: empty) and ``reasoning_tokens`` (0); no version-3 turn is
    ``truncated`` (a cut reply was read as it came)."""
    turns = [{**turn, "finish_reasons": [], "reasoning_tokens": 0, "reasoning": []} for turn in data.get("turns", [])]
    return {**data, "turns": turns}


def _v4_to_v5(data: dict[str, Any]) -> dict[str, Any]:
    """Records gain ``transcript`` and ``moves``: every version-4 record kept its whole transcript (``full``)."""
    return {**data, "transcript": "full", "moves": None}


def _v5_to_v6(data: dict[str, Any]) -> dict[str, Any]:
    """Turns gain ``cached_tokens`` and ``cache_write_tokens``: version 5 kept neither (0: not reported). A record
    stored as its moves has no turns to change (they are rebuilt when it is read)."""
    turns = [{**turn, "cached_tokens": 0, "cache_write_tokens": 0} for turn in data.get("turns", [])]
    return {**data, "turns": turns}


def _v6_to_v7(data: dict[str, Any]) -> dict[str, Any]:
    """Records gain ``blind``: a version-6 ``moves`` record was a match of fields bots, each sent its views, and a full
    record has no use for it (empty in both)."""
    return {**data, "blind": []}


def _v7_to_v8(data: dict[str, Any]) -> dict[str, Any]:
    """Nothing to change: version 8 adds a kind of transcript (``exchanges``) that no version-7 record has."""
    return data


def _v8_to_v9(data: dict[str, Any]) -> dict[str, Any]:
    """A row of ``moves`` loses the action's name (its fourth column): reading replays the moves for it."""
    moves = data.get("moves")
    if not isinstance(moves, list):
        return data
    rows = [[*row[:3], *row[4:]] if isinstance(row, (list, tuple)) and len(row) == 5 else row for row in moves]
    return {**data, "moves": rows}


MIGRATIONS: tuple[tuple[int, Callable[[dict[str, Any]], dict[str, Any]]], ...] = (
    (0, _v0_to_v1),
    (1, _v1_to_v2),
    (2, _v2_to_v3),
    (3, _v3_to_v4),
    (4, _v4_to_v5),
    (5, _v5_to_v6),
    (6, _v6_to_v7),
    (7, _v7_to_v8),
    (8, _v8_to_v9),
)
"""``(from_version, migration)`` in order: each turns a record of ``from_version`` into one of the next."""


def migrate(data: Mapping[str, Any]) -> dict[str, Any]:
    """A plain record of any known version brought to :data:`SCHEMA_VERSION` (not validated).

    Raises:
        RecordError: the record is not a JSON object, is of a newer version than this code, or its version is not a
            whole number.
    """
    if not isinstance(data, Mapping):
        kinds = {list: "an array", str: "a string", bool: "true or false", type(None): "null"}
        raise RecordError(f"a match record is a JSON object, not {kinds.get(type(data), 'a number')}")
    version = data.get("schema_version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise RecordError(f"match record {data.get('match_id', '?')!r}: bad schema_version {version!r}")
    if version > SCHEMA_VERSION:
        raise RecordError(
            f"match record {data.get('match_id', '?')!r} has schema version {version}, newer than this version of "
            f"deepeval-games reads ({SCHEMA_VERSION}): upgrade deepeval-games to read it"
        )
    record = dict(data)
    for from_version, step in MIGRATIONS:
        if from_version >= version:
            record = step(record)
    record["schema_version"] = SCHEMA_VERSION
    return record
