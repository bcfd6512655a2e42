"""The referee: Algorithm 1 of the paper (synchronous interaction) over any OpenSpiel game.

:func:`play_match` runs one match:

1. broadcast the rules to every seat and give each seat its anonymous id ("Player 1".."Player N");
2. each round, collect the moves of the seats to act. At a simultaneous node every seat is asked at
   once from the same state, so nobody sees a same-round move before choosing; the replies go into the
   message pool together;
3. deliver to each seat what the rules let it see (the game's observation for that seat, when it changed),
   before the seat moves and once more when the game is over;
4. at chance nodes sample the outcome from the match seed; at a judge node ask the judge;
5. stop at a terminal state and evaluate: the returns, plus the game's own match metrics.

No model or bot name ever reaches a seat: observations come from the game, and the referee's own
messages name seats only by their anonymous ids.
"""

from __future__ import annotations

import asyncio
import bisect
import inspect
import itertools
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from functools import partial
from typing import Any, Literal, TypeVar, cast

import numpy as np
import pyspiel
from pydantic import BaseModel

from deepeval_games.core import task
from deepeval_games.core.bot import (
    Decision,
    DeepEvalBot,
    Observation,
    Outcome,
    StateBot,
    SyncBot,
    _ActionNames,
    answers_at_once,
    answers_on_its_own,
    make_observation,
    reads_fields_only,
)
from deepeval_games.core.errors import SpecError
from deepeval_games.core.message_pool import _MOVE, _TOLD, REFEREE, Message, MessagePool, seat_label
from deepeval_games.core.observer import TextObserver
from deepeval_games.core.records import CHANCE_SEAT, JUDGE_SEAT, MatchRecord, MoveRow, TurnRecord

__all__ = ["Scorer", "TranscriptNotDerivable", "judge_observation", "play_match", "seat_label"]

_T = TypeVar("_T")

Scorer = Callable[[pyspiel.State, MatchRecord], Mapping[str, Any]]
"""Computes ground-truth metrics from a finished match (e.g. MBPP pass rate) for ``record.metrics``."""


_new = object.__new__
_NDARRAY = np.ndarray


class TranscriptNotDerivable(Exception):
    """Raised by :func:`play_match` under ``transcript="moves"`` when a seat's answer is not a legal move: its turn
    would need the general path (a penalty, an error in the record), which rows of moves do not hold. The bots have
    moved by then: the caller plays the match again with new bots and ``transcript="full"``."""


def _setter(owner: type, name: str) -> Callable[[Any, Any], None]:
    """``lambda obj, value: object.__setattr__(obj, name, value)`` for the instances of ``owner``'s subclasses: the
    ``__set__`` of the slot (or ``__dict__``) descriptor ``owner`` defines, bound once. ``object.__setattr__`` looks
    ``name`` up on the object's type at every call; the referee sets a pydantic model's four slots per turn record
    (about 85 ns a record less)."""
    return cast(Callable[[Any, Any], None], vars(owner)[name].__set__)


_set_dict = _setter(BaseModel, "__dict__")
_set_fields_set = _setter(BaseModel, "__pydantic_fields_set__")
_set_extra = _setter(BaseModel, "__pydantic_extra__")
_set_private = _setter(BaseModel, "__pydantic_private__")
if not all(
    inspect.getattr_static(model, name) is vars(BaseModel)[name]
    for model in (TurnRecord, MatchRecord)
    for name in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
):
    raise TypeError("TurnRecord and MatchRecord must keep BaseModel's slots (the referee sets them directly)")

_CHANCE_FIELDS_SET = frozenset(
    ["index", "round", "seat", "action", "action_string"]
    + [name for name, field in TurnRecord.model_fields.items() if field.default_factory is not None]
)
"""The fields a chance turn was built with (the rest at their defaults), as ``model_fields_set`` reports them."""
_MOVE_FIELDS_SET = frozenset(TurnRecord.model_fields)
"""A seat's or the judge's turn is built with every field."""
_ALL_FIELDS: set[str] = set(_MOVE_FIELDS_SET)
"""The ``model_fields_set`` of a move's turn record, one set shared by all of them: it names every field already, so
pydantic's only change to it (adding a field that is assigned) leaves it as it is; a copy per turn cost 0.3 us."""


def _record(values: dict[str, Any], fields_set: frozenset[str]) -> TurnRecord:
    """A turn record of ``values`` (every field, in the model's order), built as ``model_construct`` ends.

    pydantic's ``model_construct`` walks every field (aliases, defaults, default factories) on each call, about
    5 us a turn; the values here are complete and already of their types, so the record is the same.
    """
    turn = _new(TurnRecord)
    _set_dict(turn, values)
    _set_fields_set(turn, set(fields_set))
    _set_extra(turn, None)
    _set_private(turn, None)
    return turn


_PLAIN: dict[str, Any] = {
    "index": 0,
    "round": 0,
    "seat": CHANCE_SEAT,
    "action": 0,
    "action_string": "",
    "text": "",
    "outcome": Outcome.OK,
    "raw_replies": None,
    "prompts": None,
    "retries": 0,
    "model": None,
    "tokens_in": 0,
    "tokens_out": 0,
    "cost_usd": 0.0,
    "latency_s": 0.0,
    "error": None,
    "attempts": None,
    "cut_chars": None,
    "finish_reasons": None,
    "reasoning_tokens": 0,
    "reasoning": None,
}
"""A turn without an exchange with a model, every field in the model's order: copied (a dict copy costs less than
a dict display of 21 keys), its lists then made new for each turn."""
if list(_PLAIN) != list(TurnRecord.model_fields):
    raise TypeError("_PLAIN must list TurnRecord's fields in order")


def _plain_turn(
    index: int, round: int, seat: int, action: int, action_string: str, text: str, latency: float
) -> TurnRecord:
    """The record of a move no model was asked for (a chance outcome, a scripted or classical move)."""
    values = _PLAIN.copy()
    values["index"] = index
    values["round"] = round
    values["seat"] = seat
    values["action"] = action
    values["action_string"] = action_string
    values["text"] = text
    values["latency_s"] = latency
    values["raw_replies"] = []
    values["prompts"] = []
    values["attempts"] = []
    values["cut_chars"] = []
    values["finish_reasons"] = []
    values["reasoning"] = []
    turn = _new(TurnRecord)  # as _record makes it
    _set_dict(turn, values)
    _set_fields_set(turn, set(_CHANCE_FIELDS_SET) if seat == CHANCE_SEAT else _ALL_FIELDS)
    _set_extra(turn, None)
    _set_private(turn, None)
    return turn


def _chance_turn(index: int, round: int, action: int, action_string: str) -> TurnRecord:
    """The record of a chance outcome."""
    return _plain_turn(index, round, CHANCE_SEAT, action, action_string, "", 0.0)


def _move_turn(
    index: int, round: int, seat: int, action: int, action_string: str, text: str, latency: float, decision: Decision
) -> TurnRecord:
    """The record of a seat's (or the judge's) move: the decision's exchange with a model copied as it is."""
    d = decision
    if d._plain:  # Decision.move: no exchange with a model to copy
        return _plain_turn(index, round, seat, action, action_string, text, latency)
    outcome = d.outcome
    values = {
        "index": index,
        "round": round,
        "seat": seat,
        "action": action,
        "action_string": action_string,
        "text": text,
        "outcome": outcome if outcome.__class__ is Outcome else Outcome(outcome),
        "raw_replies": list(d.raw_replies),
        "prompts": [[dict(m) for m in ask] for ask in d.prompts] if d.prompts else [],
        "retries": d.retries,
        "model": d.model,
        "tokens_in": d.tokens_in,
        "tokens_out": d.tokens_out,
        "cost_usd": d.cost_usd,
        "latency_s": latency,
        "error": d.error,
        "attempts": list(d.attempts),
        "cut_chars": list(d.cut_chars),
        "finish_reasons": list(d.finish_reasons),
        "reasoning_tokens": d.reasoning_tokens,
        "reasoning": list(d.reasoning),
    }
    return _record(values, _MOVE_FIELDS_SET)


@dataclass(frozen=True)
class _GameFacts:
    """What the referee reads of a game once, not per match: a game object never changes (OpenSpiel's games are
    immutable), and the runner plays many matches of one."""

    game: pyspiel.Game
    name: str
    """``str(game)``: the game string of the record."""
    short_name: str
    params: Mapping[str, Any]
    """The game's parameters (one dict shared by the observations of every match: read-only by contract)."""
    rules: str
    seat_rules: tuple[dict[str, Any], ...]
    """Per seat, its rules message (the rules and its anonymous id, in ``fields`` too) in the form the pool records
    :meth:`MessagePool.tell`'s messages, made once a game: each match's pool holds copies
    (:meth:`MessagePool.tell_copies`)."""
    roles: tuple[str, ...]
    string_method: str | None
    """``observation_string`` or ``information_state_string`` (what :func:`task.observation_text` reads), or None."""
    custom_text: bool
    """The state class has its own Python method for that string: read it through :func:`task.observation_reader`."""
    python_legal: bool
    """The state is a Python game's, with its own ``_legal_actions``: the referee calls it directly for a seat to
    move (OpenSpiel's ``legal_actions`` crosses into C++ and back, through its node checks, to reach the same
    method; the referee has made those checks already)."""
    python_names: bool
    """Likewise, the state has its own ``_action_to_string``: called directly to name a seat's moves."""
    has_fields: bool
    has_penalty: bool
    has_free_text: bool
    has_judge: bool
    has_metrics: bool
    """The state has ``match_metrics`` (:func:`task.match_metrics`)."""
    sequential: bool
    """The game's dynamics are sequential (no simultaneous node)."""
    max_rounds: int
    """The rounds a match may take before the referee stops it as endless (four times the game's longest)."""
    n: int
    """The game's number of seats."""
    text_observer: TextObserver | None
    """A Python game whose observer is a :class:`~deepeval_games.core.observer.TextObserver`: that observer, made as
    OpenSpiel makes the one behind the string the seats are shown, whose ``string_from`` the referee calls directly
    (OpenSpiel's ``observation_string`` of a Python game goes into C++ and back to the same method)."""

    def read_text(self, state: pyspiel.State) -> Callable[[int], str]:
        """``seat -> task.observation_text(state, seat)`` for one state object."""
        if self.string_method is None:
            return _no_text
        if self.text_observer is not None:
            return partial(self.text_observer.string_from, state)
        return cast("Callable[[int], str]", getattr(state, self.string_method))  # quoted: no alias made per call


_OBSERVATION_TYPES = {
    # the observation types OpenSpiel's C++ makes a game's default and information-state observers with
    "observation_string": pyspiel.IIGObservationType(
        perfect_recall=False, public_info=True, private_info=pyspiel.PrivateInfoType.SINGLE_PLAYER
    ),
    "information_state_string": pyspiel.IIGObservationType(
        perfect_recall=True, public_info=True, private_info=pyspiel.PrivateInfoType.SINGLE_PLAYER
    ),
}


def _text_observer(game: pyspiel.Game, method: str | None, custom: bool) -> TextObserver | None:
    """The game's :class:`TextObserver` for the string ``method`` names, or None (a C++ game, a state with its own
    method, another kind of observer)."""
    if method is None or custom or not callable(getattr(game, "make_py_observer", None)):
        return None
    observer = game.make_py_observer(_OBSERVATION_TYPES[method], None)
    return observer if isinstance(observer, TextObserver) else None


def _no_text(seat: int) -> str:
    return ""


_FACTS: dict[int, _GameFacts] = {}
_FACTS_KEPT = 256


def _facts(game: pyspiel.Game, state: pyspiel.State) -> _GameFacts:
    """The facts of ``game`` (``state``: a state of it, whose class tells which hooks the game's states have)."""
    facts = _FACTS.get(id(game))
    if facts is not None and facts.game is game:
        return facts
    kind = task.playability(game).observation
    method = None if kind is None else ("observation_string" if kind == "observation" else "information_state_string")
    rules = task.rules_text(game)
    custom = method is not None and getattr(type(state), method, None) is not getattr(pyspiel.State, method)
    facts = _GameFacts(
        game=game,
        name=str(game),
        short_name=game.get_type().short_name,
        params=dict(game.get_parameters()),
        rules=rules,
        seat_rules=tuple(_rules_message(rules, seat) for seat in range(game.num_players())),
        roles=tuple(task.seat_roles(game)),
        string_method=method,
        custom_text=custom,
        text_observer=_text_observer(game, method, custom),
        python_legal=callable(getattr(type(state), "_legal_actions", None)),
        python_names=callable(getattr(type(state), "_action_to_string", None)),
        has_fields=callable(getattr(state, "observation_fields", None)),
        has_penalty=callable(getattr(state, "penalty_action", None)),
        has_free_text=callable(getattr(state, "is_free_text_turn", None)),
        has_judge=callable(getattr(state, "is_judge_turn", None)),
        has_metrics=callable(getattr(state, "match_metrics", None)),
        sequential=game.get_type().dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL,
        max_rounds=max(game.max_game_length(), 1) * 4 + 16,
        n=game.num_players(),
    )
    if len(_FACTS) >= _FACTS_KEPT:
        _FACTS.clear()
    _FACTS[id(game)] = facts
    return facts


def _rules_message(rules: str, seat: int) -> dict[str, Any]:
    """``seat``'s rules message as :meth:`MessagePool.tell` records it (index and round 0)."""
    pool = MessagePool()
    pool.tell(0, seat, "rules", f"{rules}\nYou are {seat_label(seat)}.", {"seat_label": seat_label(seat)})
    return pool.records()[0]


def _int_tuple(actions: Sequence[int]) -> tuple[int, ...]:
    """A Python game's legal actions as a tuple of ints, as OpenSpiel's ``legal_actions`` returns them: a game may
    list ``IntEnum`` members (the iterated prisoner's dilemma). Converted only when the ends are not plain ints, so a
    long list of ints (Idiom Solitaire: 30,000 moves) is not walked twice."""
    legal = tuple(actions)
    if legal and (type(legal[0]) is not int or type(legal[-1]) is not int):
        return tuple(map(int, legal))
    return legal


_TERMINAL, _CHANCE, _SIMULTANEOUS, _SEQUENTIAL = "terminal", "chance", "simultaneous", "sequential"
_TERMINAL_ID = int(pyspiel.PlayerId.TERMINAL)
_CHANCE_ID = int(pyspiel.PlayerId.CHANCE)
_SIMULTANEOUS_ID = int(pyspiel.PlayerId.SIMULTANEOUS)


def draw(rng: np.random.Generator, outcomes: Sequence[int], probs: Sequence[float]) -> int:
    """``int(rng.choice(outcomes, p=np.asarray(probs) / np.sum(probs)))``, the same outcome from the same generator
    state, at a third of the cost (numpy's ``choice`` validates and converts arrays for a single draw).

    It is numpy's own algorithm written out: the probabilities normalized as ``np.sum`` adds them (in order below 8
    values, numpy's pairwise sum above), their running sum divided by its last value, one ``rng.random()`` draw,
    and the first outcome whose running sum exceeds it (``searchsorted(side="right")``).
    """
    if len(probs) < 8:  # numpy's pairwise sum adds fewer than 8 values one after the other, from 0.0
        total = 0.0
        for x in probs:
            total += x
        p = [x / total for x in probs]
    else:
        p = (np.asarray(probs, dtype=np.float64) / np.sum(probs)).tolist()
    if not all(0.0 <= x <= 1.0 for x in p):  # negative or NaN: numpy says what is wrong
        return int(rng.choice(outcomes, p=np.asarray(probs) / np.sum(probs)))
    cdf = list(itertools.accumulate(p))
    last = cdf[-1]
    return int(outcomes[bisect.bisect_right([c / last for c in cdf], rng.random())])


_NO_PICKER = StateBot.state_picker


def _lean_pick(bot: StateBot, seat: int, python_game: bool) -> tuple[Callable[..., int], bool, bool, bool]:
    """How the lean loop asks ``bot`` in ``seat``: the callable, whether it is handed a copy of the state, whether it
    takes the seat's legal moves too (:meth:`StateBot.pick`) or the state alone (:meth:`StateBot.state_picker`), and
    whether its move is checked against the seat's legal moves (not for a picker whose move is legal by construction,
    :attr:`StateBot.picks_legal`, made for this seat, in a C++ game: ``python_game`` is a Python game's state)."""
    direct = None if type(bot).state_picker is _NO_PICKER else bot.state_picker()
    if direct is not None and bot.player_id != seat:  # a picker made for another seat: choose() says what is wrong
        return bot.choose, bot.copies_state, False, True
    if direct is not None:
        return direct, bot.copies_state, False, python_game or not bot.picks_legal
    return bot.pick, bot.copies_state, True, True


_SeatKinds = tuple[list[bool], list[bool], tuple[int, ...], bool, bool, list[bool]]
_SEATINGS: dict[tuple[type, ...], _SeatKinds] = {}
""":func:`_seating` by the bots' classes (what it reads of a bot are class attributes)."""


def _seating(bots: Sequence[DeepEvalBot]) -> _SeatKinds:
    """Per seat, whether its bot answers at once (:func:`~deepeval_games.core.bot.answers_at_once`: not awaited) and
    whether it is lean (a classical player that reads no view: asked through :meth:`StateBot.pick` with the state and
    its legal moves, no observation built, and sent no view but the final one); the lean seats; and whether every
    seat's bot is a :class:`SyncBot` answering at once (scripted baselines: :meth:`_Match.scripted_round`); and
    whether every seat's bot moves from its observation fields alone (:func:`~deepeval_games.core.bot.reads_fields_only`:
    :meth:`_Match.run_fields`); and per seat, whether its bot moves from its observation fields alone (asked through
    ``move_from_fields`` in a round with other bots too, :meth:`_Match.simultaneous_round`). Made once per seating
    of bot classes (:data:`_SEATINGS`), shared by its matches (read only)."""
    at_once = [answers_at_once(bot) for bot in bots]
    lean = [isinstance(bot, StateBot) and not bot.reads_views for bot in bots]
    scripted = all(ready and not isinstance(bot, StateBot) for ready, bot in zip(at_once, bots, strict=True))
    by_fields = [reads_fields_only(bot) for bot in bots]
    lean_seats = tuple(seat for seat, is_lean in enumerate(lean) if is_lean)
    kinds = (at_once, lean, lean_seats, scripted, all(by_fields), by_fields)
    if any(map(answers_on_its_own, bots)):  # not its classes' seating (see _Match): not remembered for them
        return kinds
    if len(_SEATINGS) >= _FACTS_KEPT:
        _SEATINGS.clear()
    _SEATINGS[tuple(map(type, bots))] = kinds
    return kinds


class _Match:
    """State of one match in progress (kept apart from :func:`play_match` for readability).

    The hot path is one seat's move: read its view, ask its bot, record the move. What does not change during a
    match is read once here (the game's name and parameters, which observation string a seat is shown, which
    hooks the game's state has); bots that answer at once (scripted, classical) are called directly, without a
    coroutine per move; asyncio is used only for bots that really await (LLMs, sandboxed scorers, humans).
    """

    __slots__ = (
        "_delivered", "_fields_of", "_free_text_of", "_has_fields", "_has_free_text", "_has_judge", "_has_penalty",
        "_legal_of", "_moves", "_namer", "_params", "_penalty_of", "_penalty_rng", "_picks", "_read_text", "_rng",
        "_short_name", "_views", "all_lean", "at_once", "bots", "by_fields", "facts", "fields_only", "game", "judge",
        "lean", "lean_seats", "n", "pool", "round", "scripted", "seed", "state", "step", "turns",
    )  # fmt: skip

    def __init__(
        self,
        game: pyspiel.Game,
        bots: Sequence[DeepEvalBot],
        judge: DeepEvalBot | None,
        seed: int,
    ) -> None:
        self.game = game
        self.bots = bots
        self.judge = judge
        self.state = game.new_initial_state()
        self.seed = seed
        self._rng: np.random.Generator | None = None
        self._penalty_rng: np.random.Generator | None = None
        self.turns: list[TurnRecord] = []
        self.round = 0
        self.step = 0
        """Moves applied to the state so far (chance and joint moves count one each): the state's position."""
        kinds = _SEATINGS.get(tuple(map(type, bots)))
        if kinds is None or (True in kinds[5] and any(map(answers_on_its_own, bots))):
            kinds = _seating(bots)  # a bot patched on its instance: its seating is its own, not its classes'
        # _seating's (shared: read only)
        self.at_once, self.lean, self.lean_seats, self.scripted, fields_only, self.by_fields = kinds
        self.facts = facts = _facts(game, self.state)
        self.n = facts.n
        self.all_lean = len(self.lean_seats) == facts.n and facts.sequential and not facts.has_judge
        """Every seat lean, a sequential game, no judge: :meth:`run_lean` plays the match."""
        self.fields_only = fields_only and not facts.has_judge
        """Every seat's bot moves from its observation fields alone, no judge: :meth:`run_fields` plays the match."""
        # no seat reads its inbox while the match is played: the pool keeps none (the record is the same)
        self.pool = MessagePool(inboxes=not (self.all_lean or self.fields_only))
        self._short_name = facts.short_name
        self._params = facts.params
        self._read_text = task.observation_reader(self.state) if facts.custom_text else facts.read_text(self.state)
        self._has_fields = facts.has_fields
        self._legal_of: Callable[[int], list[int]] = (
            self.state._legal_actions if facts.python_legal else self.state.legal_actions
        )
        """``seat -> legal actions`` of a seat to move in the current state (see :attr:`_GameFacts.python_legal`)."""
        self._fields_of: Callable[[int], Mapping[str, Any]] | None = (
            self.state.observation_fields if facts.has_fields else None
        )
        self._namer: Callable[[int, int], str] = (
            self.state._action_to_string if facts.python_names else self.state.action_to_string
        )
        self._penalty_of: Callable[[int], int] | None = self.state.penalty_action if facts.has_penalty else None
        self._free_text_of: Callable[[int], bool] | None = self.state.is_free_text_turn if facts.has_free_text else None
        self._has_penalty = facts.has_penalty
        self._has_free_text = facts.has_free_text
        self._has_judge = facts.has_judge
        self._delivered: dict[int, str] = {}
        self._picks: list[tuple[Callable[..., int], bool, bool, bool] | None] | None = None
        """Per seat (lean seats only), :func:`_lean_pick` of its bot."""
        self._moves: tuple[int, str, dict[int, tuple[int, ...] | None]] | None = None
        self._views: dict[int, tuple[int, str, Mapping[str, Any] | None]] = {}
        """Per seat: (the state's position, observation text, fields or None) last computed, reused by
        :meth:`observation` while the state has not moved (the text is computed once per seat and state)."""

    @property
    def rng(self) -> np.random.Generator:
        """The chance nodes' generator, from the match seed (made when first needed: most games have no chance)."""
        if self._rng is None:
            self._rng = np.random.default_rng(self.seed)
        return self._rng

    @property
    def penalty_rng(self) -> np.random.Generator:
        """The generator of random penalty moves: a stream of its own, so penalties never shift chance draws."""
        if self._penalty_rng is None:
            self._penalty_rng = np.random.default_rng([self.seed, 1])
        return self._penalty_rng

    # -- messages ------------------------------------------------------------------------------

    def broadcast_rules(self) -> None:
        self.pool.tell_copies(self.facts.seat_rules)  # tell(0, seat, "rules", ...) for each seat

    def seats_to_act(self) -> list[int]:
        """The seats that move next: all seats with legal moves at a simultaneous node, else the current one."""
        return list(self.legal_moves())

    def legal_moves(self) -> dict[int, tuple[int, ...] | None]:
        """The seats that move next, each with its legal actions where they were read (None: not read yet); read
        once per state (the observations are delivered, then the seats asked, from the same state)."""
        return self.node()[1]

    def node(self) -> tuple[str, dict[int, tuple[int, ...] | None]]:
        """What kind of node the state is at (``terminal``, ``chance``, ``simultaneous``, ``sequential``) and
        :meth:`legal_moves`; read once per state."""
        if self._moves is not None and self._moves[0] == self.step:
            return self._moves[1], self._moves[2]
        state = self.state
        moves: dict[int, tuple[int, ...] | None] = {}
        player = _TERMINAL_ID if state.is_terminal() else state.current_player()
        # OpenSpiel's is_chance_node() and is_simultaneous_node() are these very tests of current_player()
        if player == _TERMINAL_ID:
            kind = _TERMINAL
        elif player == _CHANCE_ID:
            kind = _CHANCE
        elif player == _SIMULTANEOUS_ID:
            kind = _SIMULTANEOUS
            legal_of = self._legal_of  # a simultaneous node, not terminal: each seat's own list
            for seat in range(self.n):
                actions: Any = legal_of(seat)
                if actions.__class__ is not tuple or (  # _int_tuple(actions), written out for a tuple of ints
                    actions and (actions[0].__class__ is not int or actions[-1].__class__ is not int)
                ):
                    actions = _int_tuple(actions)
                if actions:
                    moves[seat] = actions
        else:
            kind = _SEQUENTIAL
            moves = {player: None}
        self._moves = (self.step, kind, moves)
        return kind, moves

    def deliver_observations(self) -> tuple[str, dict[int, tuple[int, ...] | None]]:
        """Send the seats about to move (every seat, once the game is over) their view, if it changed; return the
        node (:meth:`node`) they were sent it at. A seat whose bot reads no view (:attr:`lean`) is sent the final
        view only: the pool records what each seat was actually given.

        A seat's view is delivered when it is needed, before the seat chooses: a seat that does not move this
        round gets its next view at its next turn (which then shows everything it may know), so no model is
        shown an intermediate view it could not act on. Views never include a same-round move of another seat.
        """
        kind, moves = self.node()
        if kind is _TERMINAL:
            self.final_views()
            return kind, moves
        lean = self.lean
        seats = [seat for seat in moves if not lean[seat]]
        at = self.step
        for seat in seats:
            text = self._read_text(seat)
            if not text or self._delivered.get(seat) == text:
                self._views[seat] = (at, text, None)
                continue
            self._delivered[seat] = text
            fields = dict(self._fields_of(seat)) if self._fields_of is not None else {}
            self._views[seat] = (at, text, fields)
            self.pool.tell(self.round, seat, "observation", text, fields)
        return kind, moves

    def final_views(self) -> None:
        """:meth:`deliver_observations` once the game is over: every seat is sent its view if it changed, lean seats
        too. Nothing is asked after it, so the views are not kept for :meth:`observation`, and the game's fields
        are copied once, by the pool."""
        read_text, fields_of, delivered = self._read_text, self._fields_of, self._delivered
        tell, rnd = self.pool.tell, self.round
        for seat in range(self.n):
            text = read_text(seat)
            if text and delivered.get(seat) != text:
                delivered[seat] = text
                tell(rnd, seat, "observation", text, None if fields_of is None else fields_of(seat))

    def observation(self, seat: int, legal: tuple[int, ...] | None = None) -> Observation:
        """What ``seat`` is asked with in the current state (its view as delivered, its inbox, its legal moves)."""
        state = self.state
        view = self._views.get(seat)
        if view is not None and view[0] == self.step:
            text, fields = view[1], view[2]
        else:  # computed for another state: compute it here
            text, fields = self._read_text(seat), None
        if fields is None:
            fields = dict(self._fields_of(seat)) if self._fields_of is not None else {}
        if legal is None:
            legal = () if state.is_terminal() else tuple(state.legal_actions(seat))
        return make_observation(
            seat,
            self.n,
            self._short_name,
            self._params,
            self.round,
            text,
            fields,
            legal,
            self.pool.inbox_later(seat),  # read if the bot reads it (scripted baselines do not)
            None if self._penalty_of is None else int(self._penalty_of(seat)),
            False if self._free_text_of is None else bool(self._free_text_of(seat)),
            _ActionNames(state, seat, self, self._namer),
        )

    # -- moves ---------------------------------------------------------------------------------

    def ask_now(self, bot: DeepEvalBot, observation: Observation) -> tuple[Decision, float]:
        """A bot that answers at once (:func:`~deepeval_games.core.bot.answers_at_once`), called directly."""
        start = time.perf_counter()
        if isinstance(bot, StateBot):  # trusted classical search (MCTS, minimax) works on a copy of the state
            decision = bot.decide(self.state.clone(), observation)
        else:
            decision = cast(SyncBot, bot).respond(observation)
        return decision, time.perf_counter() - start

    async def ask(self, bot: DeepEvalBot, observation: Observation) -> tuple[Decision, float]:
        start = time.perf_counter()
        if isinstance(bot, StateBot):  # trusted classical search (MCTS, minimax) works on a copy of the state
            decision = bot.decide(self.state.clone(), observation)
        else:
            decision = await bot.act(observation)
        return decision, time.perf_counter() - start

    def resolve(self, seat: int, observation: Observation, decision: Decision) -> tuple[int, Decision]:
        """The action to apply for a decision; a missing or illegal one becomes the penalty, recorded."""
        if decision.action is None:
            if observation.free_text and decision.outcome in (Outcome.OK, Outcome.REASKED):
                return task.intern_utterance(self.state, seat, decision.text), decision
            if decision.outcome in (Outcome.OK, Outcome.REASKED):
                decision = _invalid(decision, "free-text answer where a move was expected")
            return self.penalty(seat, observation, decision)
        if observation.free_text or decision.action in observation.legal_actions:
            return int(decision.action), decision
        if decision.outcome is not Outcome.OK and decision.action == observation.penalty_action:
            return int(decision.action), decision
        return self.penalty(seat, observation, _invalid(decision, f"illegal action {decision.action}"))

    def penalty(self, seat: int, observation: Observation, decision: Decision) -> tuple[int, Decision]:
        """The task's penalty move; without one, a seeded uniformly random legal move (the turn stays invalid)."""
        if observation.penalty_action is not None:
            return int(observation.penalty_action), decision
        if observation.free_text and task.can_intern(self.state):
            return task.intern_utterance(self.state, seat, ""), decision
        action = int(self.penalty_rng.choice(observation.legal_actions))
        note = f"a random legal move ({observation.action_to_string(action)}) was played for the seat"
        return action, replace(decision, error=f"{decision.error}; {note}" if decision.error else note)

    def record_move(
        self,
        seat: int,
        action: int,
        decision: Decision,
        latency: float,
        names: Callable[[int], str] | None = None,
    ) -> None:
        """Put the move in the pool and the turn in the record; ``names`` names the seat's actions in this state
        (the observation's, which remembers the names its bot read), else the state is asked."""
        action_string = names(action) if names is not None else self.state.action_to_string(seat, action)
        text = decision.text or action_string
        self.pool.add_move(self.round, seat, text, action)
        self.turns.append(_move_turn(len(self.turns), self.round, seat, action, action_string, text, latency, decision))

    def apply(self, action: int) -> None:
        """Apply one move (a seat's, chance's or the judge's) to the state."""
        self.state.apply_action(action)
        self.step += 1

    async def simultaneous_round(self) -> None:
        """A simultaneous node with at least one bot that is awaited (a model): every seat asked from the same state,
        the bots that answer at once first (a failure there leaves no model call), a seat whose bot moves from its
        observation fields alone (:attr:`by_fields`) through ``move_from_fields`` with no observation made (as
        :meth:`fields_round`); then each move resolved and put in the pool and the record, in seat order, and the
        joint move applied."""
        moves = self.legal_moves()
        lean, at_once, bots, by_fields = self.lean, self.at_once, self.bots, self.by_fields
        observations: dict[int, Observation] = {}
        for seat, legal in moves.items():  # all from the same state; none for a seat whose bot reads no view
            if not lean[seat] and not by_fields[seat]:
                observations[seat] = self.observation(seat, legal)
        answers: dict[int, tuple[Decision, float]] = {}
        picked: dict[int, tuple[Any, float]] = {}
        waiting = []
        clock = time.perf_counter
        for seat, legal in moves.items():  # bots that answer at once first: a failure there leaves no model call
            bot = bots[seat]
            if lean[seat]:
                answers[seat] = self.pick(seat, list(legal or ()))
            elif by_fields[seat]:  # a FieldsBot: its move from the fields its view was delivered with
                fields = self.fields_now(seat)
                start = clock()
                action = bot.move_from_fields(fields)
                picked[seat] = (action, clock() - start)
            elif not at_once[seat]:
                waiting.append(seat)
            elif isinstance(bot, StateBot):
                answers[seat] = self.ask_now(bot, observations[seat])
            else:  # a SyncBot (scripted): ask_now, written out
                start = clock()
                decision = bot.respond(observations[seat])
                answers[seat] = (decision, clock() - start)
        if len(waiting) == 1:  # one seat waits (a model among scripted seats): awaited here, with no task for it
            answers[waiting[0]] = await self.ask(bots[waiting[0]], observations[waiting[0]])
        elif waiting:
            awaited = await _gather_or_cancel([self.ask(bots[s], observations[s]) for s in waiting])
            answers.update(zip(waiting, awaited, strict=True))
        joint = [pyspiel.INVALID_ACTION] * self.n
        resolved: list[tuple[int, int, Decision | None, float]] = []
        for seat, legal in moves.items():
            if seat in picked:
                action, latency = picked[seat]
                if action.__class__ is int and action in (legal or ()):  # FieldsBot.respond's plain move
                    joint[seat] = action
                    resolved.append((seat, action, None, latency))
                    continue
                asked = observations[seat] = self.observation(seat, legal)  # anything else: respond's decision
                decision = Decision.move(action, asked.action_to_string(action))
            else:
                decision, latency = answers[seat]
                action = decision.action
            if action is not None and action in (legal or ()):  # what resolve returns for a legal move
                action = int(action)
            else:
                if seat not in observations:
                    observations[seat] = self.observation(seat, legal)
                action, decision = self.resolve(seat, observations[seat], decision)
            joint[seat] = action
            resolved.append((seat, action, decision, latency))
        rnd, add_move, turns, namer = self.round, self.pool.add_move, self.turns, self._namer
        for seat, action, maybe, latency in resolved:  # into the pool together, before anyone sees them
            seen = observations.get(seat)  # record_move, written out
            action_string = seen.action_to_string(action) if seen is not None else namer(seat, action)
            if maybe is None:  # a FieldsBot's legal move: Decision.move(action, its name), recorded as such
                add_move(rnd, seat, action_string, action)
                turns.append(_plain_turn(len(turns), rnd, seat, action, action_string, action_string, latency))
                continue
            text = maybe.text or action_string
            add_move(rnd, seat, text, action)
            turns.append(_move_turn(len(turns), rnd, seat, action, action_string, text, latency, maybe))
        self.state.apply_actions(joint)
        self.step += 1

    def fields_now(self, seat: int) -> Mapping[str, Any]:
        """``seat``'s observation fields in the current state, as :meth:`observation` gives them (those its view was
        delivered with at this step, else computed; empty for a game without fields). Read only: may be shared."""
        view = self._views.get(seat)
        if view is not None and view[0] == self.step and view[2] is not None:
            return view[2]
        return self._fields_of(seat) if self._fields_of is not None else {}

    def scripted_round(self) -> None:
        """:meth:`simultaneous_round` when every seat's bot is a :class:`SyncBot` answering at once (scripted
        baselines: :attr:`scripted`), written out: each seat asked from the same state, then each move resolved and
        put in the pool and the record, in seat order, then the joint move applied. Nothing is awaited."""
        moves = self.legal_moves()
        bots: Sequence[Any] = self.bots  # every one a SyncBot (_seating): no typing.cast call per seat
        observation, clock = self.observation, time.perf_counter
        asked = []
        for seat, legal in moves.items():  # all from the same state, before any move is recorded
            seen = observation(seat, legal)
            start = clock()
            decision = bots[seat].respond(seen)
            asked.append((seat, legal, seen, decision, clock() - start))
        joint = [pyspiel.INVALID_ACTION] * self.n
        rnd, add_move, turns = self.round, self.pool.add_move, self.turns
        for seat, legal, seen, decision, latency in asked:  # into the pool together, before anyone sees them
            action = decision.action
            if action is not None and action in (legal or ()):  # what resolve returns for a legal move
                action = int(action)
            else:
                action, decision = self.resolve(seat, seen, decision)
            joint[seat] = action
            action_string = seen.action_to_string(action)  # record_move, written out
            text = decision.text or action_string
            add_move(rnd, seat, text, action)
            turns.append(_move_turn(len(turns), rnd, seat, action, action_string, text, latency, decision))
        self.state.apply_actions(joint)
        self.step += 1

    def fields_round(
        self, kind: str, moves: dict[int, tuple[int, ...] | None], pickers: Sequence[Callable[[Any], int]]
    ) -> None:
        """One node of :meth:`run_fields`: :meth:`deliver_observations` then :meth:`scripted_round` (:meth:`move_now`
        at a sequential node) written out for bots that move from their observation fields alone
        (:class:`~deepeval_games.core.bot.FieldsBot`). Each seat to move is sent its view if it changed and asked through
        ``move_from_fields`` with the fields computed for that view (no :class:`Observation`, no :class:`Decision`);
        then, in seat order, each move goes into the pool and the record, and the move (the joint move at a
        simultaneous node) is applied. A legal move is recorded as ``FieldsBot.respond`` would have made it: the
        plain move, named by the seat (its text and its action string both the name); any other answer takes the
        general path (the seat's observation, :meth:`resolve`, the penalty). ``pickers``: each seat's bot's
        ``move_from_fields``, bound once a match."""
        rnd = self.round
        read_text, fields_of, delivered = self._read_text, self._fields_of, self._delivered
        clock = time.perf_counter
        told_now = _TOLD.copy()  # the round's view messages' template: what they all share set once
        told_now["round"], told_now["kind"] = rnd, "observation"
        told = told_now.copy
        # the messages go into the pool as MessagePool.tell and add_move put them, written out here: the pool's list,
        # and each seat's inbox where the pool keeps them (nobody reads one during this method, which never awaits)
        messages, inboxes = self.pool.outboxes(moves)
        asked = []
        for seat, legal in moves.items():  # all from the same state, before any move is recorded
            if legal is None:  # a sequential node's seat: its legal moves not read yet
                legal = _int_tuple(self._legal_of(seat))
            text = read_text(seat)  # its view, sent if it changed (deliver_observations)
            fields = {} if fields_of is None else fields_of(seat)
            if text and delivered.get(seat) != text:
                delivered[seat] = text
                message = told()  # MessagePool.tell(rnd, seat, "observation", text, fields), written out
                message["index"] = len(messages)
                message["recipients"] = [seat]
                message["text"] = text
                message["fields"] = dict(fields) if fields else {}  # the pool's own copy
                messages.append(message)
                if inboxes is not None:
                    inboxes[seat].append(message)
            start = clock()
            action = pickers[seat](fields)
            asked.append((seat, legal, action, clock() - start))
        self.round = rnd = rnd + 1
        turns, namer = self.turns, self._namer
        plain_now, move_now = _PLAIN.copy(), _MOVE.copy()  # the round's turn and move templates, its round set once
        plain_now["round"] = move_now["round"] = rnd
        plain, move, new, turn_class, fields_set = plain_now.copy, move_now.copy, _new, TurnRecord, _ALL_FIELDS
        set_dict, set_fields_set, set_extra, set_private = _set_dict, _set_fields_set, _set_extra, _set_private
        joint = [pyspiel.INVALID_ACTION] * self.n
        for seat, legal, action, latency in asked:  # into the pool together, before anyone sees them
            if action.__class__ is int and action in legal:  # (anything but a Python int: resolve makes it one)
                name = namer(seat, action)  # FieldsBot.respond: Decision.move(action, name)
                message = move()  # MessagePool.add_move(rnd, seat, name, action), written out
                message["index"] = len(messages)
                message["sender"] = seat
                message["recipients"] = []
                message["text"] = name
                message["action"] = action
                message["fields"] = {}
                messages.append(message)
                if inboxes is not None:
                    inboxes[seat].append(message)
                values = plain()  # _plain_turn(len(turns), rnd, seat, action, name, name, latency), written out
                values["index"], values["seat"], values["action"] = len(turns), seat, action
                values["action_string"], values["text"], values["latency_s"] = name, name, latency
                values["raw_replies"], values["prompts"], values["attempts"] = [], [], []
                values["cut_chars"], values["finish_reasons"], values["reasoning"] = [], [], []
                turn = new(turn_class)
                set_dict(turn, values)
                set_fields_set(turn, fields_set)
                set_extra(turn, None)
                set_private(turn, None)
                turns.append(turn)
            else:  # not a legal move: through the seat's observation, as respond's decision
                observation = self.observation(seat, legal)
                decision = Decision.move(action, observation.action_to_string(action))
                action, decision = self.resolve(seat, observation, decision)
                self.record_move(seat, action, decision, latency, observation.action_to_string)
            joint[seat] = action
        self.apply_round(kind, joint, asked[0][0])

    def apply_round(self, kind: str, joint: list[int], first: int) -> None:
        """Apply a round's moves: the joint move at a simultaneous node, else the move of ``first``, its one seat."""
        if kind is _SIMULTANEOUS:
            self.state.apply_actions(joint)
        else:
            self.state.apply_action(joint[first])
        self.step += 1

    def pick(self, seat: int, legal: list[int]) -> tuple[Decision, float]:
        """Ask a bot that reads no view (:attr:`lean`) for its move from the state and the seat's legal moves."""
        bot = cast(StateBot, self.bots[seat])
        if not legal:  # no move to pick: through its observation (it says what is wrong)
            return self.ask_now(bot, self.observation(seat, ()))
        start = time.perf_counter()
        action = bot.pick(self.state.clone() if bot.copies_state else self.state, legal)
        return Decision.move(int(action)), time.perf_counter() - start

    def move_now(self, seat: int) -> None:
        """A sequential move of a seat whose bot answers at once: :meth:`sequential_round` without awaiting,
        its steps written out (the engine's hottest path: a random or scripted move)."""
        state = self.state
        bot = self.bots[seat]
        observation = self.observation(seat, _int_tuple(self._legal_of(seat)))  # the current player's
        start = time.perf_counter()
        if isinstance(bot, StateBot):  # trusted classical search (MCTS, minimax) works on a copy of the state
            decision = bot.decide(state.clone(), observation)
        else:
            decision = cast(SyncBot, bot).respond(observation)
        latency = time.perf_counter() - start
        action = decision.action
        if action is not None and action in observation.legal_actions:
            action = int(action)
        else:
            action, decision = self.resolve(seat, observation, decision)
        action_string = observation.action_to_string(action)
        text = decision.text or action_string
        self.pool.add_move(self.round, seat, text, action)
        turns = self.turns
        turns.append(_move_turn(len(turns), self.round, seat, action, action_string, text, latency, decision))
        state.apply_action(action)
        self.step += 1

    def lean_moves(self, seat: int, max_rounds: int) -> None:
        """Sequential moves of classical players that read no view (:attr:`lean`), one after the other until the
        game is over or another kind of seat or node comes: each is asked through :meth:`StateBot.pick` with the
        state and its legal moves (no view delivered, no observation built), its move put in the pool and the
        record. The engine's hottest path (a ``random`` or ``mcts`` seat), written out as one loop.

        ``seat`` moves first (its round already counted); each further move counts a round, as :meth:`run` does.
        """
        state, lean, legal_of, namer, clock = self.state, self.lean, self._legal_of, self._namer, time.perf_counter
        append = self.turns.append
        picks = self._picks
        if picks is None:  # per seat (lean seats only): how its bot is asked, whether it gets a copy of the state
            python_game = self.facts.python_legal
            picks = self._picks = [
                _lean_pick(bot, seat, python_game) if lean[seat] else None  # a lean seat's bot is a StateBot
                for seat, bot in enumerate(self.bots)
            ]
        # the moves go into the pool as MessagePool.add_move puts them, written out here: the pool's list, and per
        # lean seat its inbox (the seat's own moves; nobody reads it during this loop, which never awaits)
        messages, outbox = self.pool.outboxes(self.lean_seats)
        plain, move, new, turn_class, fields_set = _PLAIN.copy, _MOVE.copy, _new, TurnRecord, _ALL_FIELDS
        set_dict, set_fields_set, set_extra, set_private = _set_dict, _set_fields_set, _set_extra, _set_private
        rnd, index, step = self.round, len(self.turns), self.step
        try:
            while True:
                pick, copies, with_legal, checked = picks[seat]  # type: ignore[misc]
                if checked:  # not for a picker whose move is legal by construction (random, in a C++ game)
                    legal = legal_of(seat)  # the current player's
                    if not legal:
                        if state.is_terminal():  # a game whose terminal states name a player (never on the first pass)
                            rnd -= 1  # the round counted for it was not played
                            return
                        self.round, self.step = rnd, step
                        self.move_now(seat)  # no move to pick: through its observation (it says what is wrong)
                        return
                start = clock()
                if with_legal:
                    action = pick(state.clone() if copies else state, legal)
                else:  # StateBot.state_picker: from the state alone
                    action = pick(state.clone() if copies else state)
                latency = clock() - start
                if checked and action not in legal:  # an illegal pick: the penalty path, recorded
                    self.round, self.step = rnd, step
                    observation = self.observation(seat, tuple(legal))
                    action, decision = self.resolve(seat, observation, Decision.move(int(action)))
                    self.record_move(seat, action, decision, latency, observation.action_to_string)
                    self.apply(action)
                    return
                name = namer(seat, action)
                # the pool's move message (MessagePool.add_move)
                message = move()
                message["index"] = len(messages)
                message["round"] = rnd
                message["sender"] = seat
                message["recipients"] = []
                message["text"] = name
                message["action"] = action
                message["fields"] = {}
                messages.append(message)
                if outbox is not None:  # None: the pool keeps no inboxes (a match of lean seats only)
                    outbox[seat].append(message)
                # the turn record (_plain_turn)
                values = plain()
                values["index"], values["round"], values["seat"], values["action"] = index, rnd, seat, action
                values["action_string"], values["text"], values["latency_s"] = name, name, latency
                values["raw_replies"], values["prompts"], values["attempts"] = [], [], []
                values["cut_chars"], values["finish_reasons"], values["reasoning"] = [], [], []
                turn = new(turn_class)
                set_dict(turn, values)
                set_fields_set(turn, fields_set)
                set_extra(turn, None)
                set_private(turn, None)
                append(turn)
                state.apply_action(action)
                index += 1
                step += 1
                # a terminal state's current player is TERMINAL (< 0): one call answers both questions
                seat = state.current_player()
                if seat < 0 or not lean[seat]:
                    return
                if rnd >= max_rounds:
                    raise RuntimeError(f"{self.game} did not end within {max_rounds} rounds")
                rnd += 1
        finally:
            if self.step <= step:  # not moved on by move_now or apply above
                self.round, self.step = rnd, step

    async def sequential_round(self) -> None:
        seat = self.state.current_player()
        observation = self.observation(seat)
        decision, latency = await self.ask(self.bots[seat], observation)
        action, decision = self.resolve(seat, observation, decision)
        self.record_move(seat, action, decision, latency, observation.action_to_string)
        self.apply(action)

    def chance(self) -> None:
        """Sample a chance outcome from the match seed."""
        outcomes, probs = zip(*self.state.chance_outcomes(), strict=True)
        action = draw(self.rng, outcomes, probs)
        action_string = self.state.action_to_string(CHANCE_SEAT, action)
        self.turns.append(_chance_turn(len(self.turns), self.round, action, action_string))
        self.apply(action)

    async def chance_or_judge(self) -> None:
        if task.is_judge_turn(self.state):
            await self.judge_round()
        else:
            self.chance()

    async def judge_round(self) -> None:
        if self.judge is None:
            raise SpecError(f"{self.game} needs a judge, and none is configured (add a [judge] table to the spec)")
        legal = tuple(action for action, _ in self.state.chance_outcomes())
        view = self.state.clone()
        brief = task.judge_text(self.state)
        fields = task.judge_fields(self.state)
        self.pool.add(
            round=self.round, sender=REFEREE, recipients=(JUDGE_SEAT,), kind="brief", text=brief, fields=fields
        )
        observation = judge_observation(self.game, view, self.round, brief, fields, self.pool.visible_to(JUDGE_SEAT))
        decision, latency = await self.ask(self.judge, observation)
        verdict = decision.action
        if verdict is None or verdict not in legal:
            raise SpecError(f"the judge returned {verdict}, which is not a verdict of {self.game}")
        self.pool.add(
            round=self.round, sender=REFEREE, recipients=(), kind="verdict", text=decision.text, action=verdict
        )
        self.record_move(JUDGE_SEAT, verdict, decision, latency)
        self.apply(verdict)

    async def run(self, max_rounds: int) -> None:
        self.broadcast_rules()
        kind, moves = self.deliver_observations()
        while kind is not _TERMINAL:
            if self.round >= max_rounds:
                raise RuntimeError(f"{self.game} did not end within {max_rounds} rounds")
            self.round += 1
            if kind is _CHANCE:
                if self._has_judge and task.is_judge_turn(self.state):
                    await self.judge_round()
                else:
                    self.chance()
            elif kind is _SIMULTANEOUS:
                if self.scripted:
                    self.scripted_round()
                else:
                    await self.simultaneous_round()
            else:
                seat = next(iter(moves))
                if self.lean[seat]:
                    self.lean_moves(seat, max_rounds)
                elif self.at_once[seat]:
                    self.move_now(seat)
                else:
                    await self.sequential_round()
            kind, moves = self.deliver_observations()

    def run_fields(self, max_rounds: int) -> None:
        """:meth:`run` for a match whose every seat's bot moves from its observation fields alone, in a game without a
        judge (:attr:`fields_only`: scripted baselines such as the Public Goods bots): nothing is awaited, and each node
        where seats move is played by :meth:`fields_round`. The same moves, pool and record as :meth:`run`; the pool
        keeps no inboxes (nobody reads one while the match is played)."""
        self.broadcast_rules()
        bots: Sequence[Any] = self.bots  # every one a FieldsBot (_seating): no typing.cast call per seat
        # bound once: a bot is a pybind object, whose attribute reads cost several times a plain object's
        pickers = [bot.move_from_fields for bot in bots]
        while True:
            kind, moves = self.node()
            if kind is _TERMINAL:
                self.final_views()  # every seat's final view
                return
            if self.round >= max_rounds:
                raise RuntimeError(f"{self.game} did not end within {max_rounds} rounds")
            if kind is _CHANCE:  # no seat is sent a view at a chance node
                self.round += 1
                self.chance()
            else:
                self.fields_round(kind, moves, pickers)

    def run_moves(self, max_rounds: int) -> list[MoveRow]:
        """:meth:`run_fields` keeping only the moves (``transcript="moves"``): every turn as a row of
        :data:`~deepeval_games.core.records.MOVE_ROW`, and no message. The bots are asked with the same fields, in the same
        order, and the same moves are applied, so replaying the rows through :meth:`run_fields` rebuilds the pool and
        the turns (:func:`deepeval_games.core.transcript.with_messages`); views are not rendered, since no seat reads them.

        Raises:
            TranscriptNotDerivable: a seat answered something other than a legal move (a Python ``int``).
        """
        pickers = [bot.move_from_fields for bot in cast(Sequence[Any], self.bots)]  # bound once, as run_fields does
        rows: list[MoveRow] = []
        append, fields_of, legal_of, namer = rows.append, self._fields_of, self._legal_of, self._namer
        clock = time.perf_counter
        while True:
            kind, moves = self.node()
            if kind is _TERMINAL:
                return rows
            if self.round >= max_rounds:
                raise RuntimeError(f"{self.game} did not end within {max_rounds} rounds")
            if kind is _CHANCE:
                self.round += 1
                self.chance()
                turn = self.turns.pop()
                append((turn.round, CHANCE_SEAT, turn.action, turn.action_string, 0.0))
                continue
            asked = []
            for seat, legal in moves.items():  # all from the same state, before any move is applied (fields_round)
                if legal is None:
                    legal = _int_tuple(legal_of(seat))
                fields = {} if fields_of is None else fields_of(seat)
                start = clock()
                action = pickers[seat](fields)
                asked.append((seat, legal, action, clock() - start))
            self.round = rnd = self.round + 1
            joint = [pyspiel.INVALID_ACTION] * self.n
            for seat, legal, action, latency in asked:
                if action.__class__ is not int or action not in legal:
                    raise TranscriptNotDerivable(f"seat {seat} answered {action!r}, not one of its legal moves")
                append((rnd, seat, action, namer(seat, action), latency))
                joint[seat] = action
            self.apply_round(kind, joint, asked[0][0])

    def run_lean(self, max_rounds: int) -> None:
        """:meth:`run` for a match of classical players that read no view (every seat :attr:`lean`) in a sequential
        game without a judge (:func:`_all_lean`): none of them is sent a view before the game is over, so the nodes
        between the rules and the final views deliver nothing, and nothing is awaited. The same moves, pool and
        record as :meth:`run`, without a coroutine (the match of two ``random`` or ``mcts`` seats)."""
        self.broadcast_rules()
        kind, moves = self.node()
        while kind is not _TERMINAL:
            if self.round >= max_rounds:
                raise RuntimeError(f"{self.game} did not end within {max_rounds} rounds")
            self.round += 1
            if kind is _CHANCE:
                self.chance()
            elif kind is _SEQUENTIAL:
                self.lean_moves(next(iter(moves)), max_rounds)
            else:
                raise RuntimeError(f"{self.game} is declared sequential but reached a simultaneous node")
            kind, moves = self.node()
        self.deliver_observations()  # every seat's final view


def _all_lean(match: _Match) -> bool:
    """Whether :meth:`_Match.run_lean` plays ``match`` (:attr:`_Match.all_lean`)."""
    return match.all_lean


def judge_observation(
    game: pyspiel.Game,
    state: pyspiel.State,
    round: int,
    brief: str,
    fields: Mapping[str, Any],
    inbox: tuple[Message, ...],
) -> Observation:
    """What the judge is asked with at a verdict node: the brief, its fields, the verdicts as legal actions.

    ``state`` is at the verdict node (a copy the judge's action names are read from); ``inbox`` holds the
    pool messages addressed to the judge (the brief). Used by the referee and by ``deepeval-games rejudge``.
    """
    return Observation(
        seat=JUDGE_SEAT,
        num_seats=game.num_players(),
        game=game.get_type().short_name,
        params=dict(game.get_parameters()),
        round=round,
        text=brief,
        fields=fields,
        legal_actions=tuple(action for action, _ in state.chance_outcomes()),
        inbox=inbox,
        action_to_string=lambda action: state.action_to_string(CHANCE_SEAT, action),
    )


async def _gather_or_cancel(calls: list[Coroutine[Any, Any, _T]]) -> list[_T]:
    """Run the seats of a round at once; if one fails, cancel the others (no orphan model calls) and re-raise."""
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


_RECORD_DEFAULTS = {
    name: field.get_default(call_default_factory=False)
    for name, field in MatchRecord.model_fields.items()
    if not field.is_required() and field.default_factory is None
}
"""The match record's fields with a plain default."""
_RECORD_FACTORIES = {
    name: cast(Callable[[], Any], field.default_factory)
    for name, field in MatchRecord.model_fields.items()
    if field.default_factory is not None
}
"""The match record's fields whose default a factory makes (empty lists and dicts)."""
_RECORD_TEMPLATE: dict[str, Any] = {name: _RECORD_DEFAULTS.get(name) for name in MatchRecord.model_fields}
"""Every field of a match record in the model's order, with its plain default (None where a value or a factory's
comes instead)."""


_PLAYED_FIELDS = frozenset(("match_id", "game", "seats", "returns", "turns", "seed", "players", "roles", "messages"))
_PLAYED_FIELDS |= {"metrics", "started_at", "wall_time_s"}
"""The fields :func:`play_match` sets in a record (the rest keep their plain defaults: the runner fills some in)."""
_PLAYED_MOVES_FIELDS = _PLAYED_FIELDS | {"transcript", "moves"}
"""The fields :func:`play_match` sets in a record of ``transcript="moves"``."""
if not set(_RECORD_FACTORIES) <= _PLAYED_FIELDS <= set(_RECORD_TEMPLATE):
    raise TypeError("_PLAYED_FIELDS must be fields of MatchRecord and name every field a factory makes")


def _match_record(**values: Any) -> MatchRecord:
    """``MatchRecord.model_construct(**values)`` without its walk over every field (aliases, defaults, factories):
    the values are already of their types (validation would only copy them); the record is the same."""
    fields_set = set(values)
    data = _RECORD_TEMPLATE.copy()  # every field in the model's order, plain defaults filled in
    data.update(values)
    if len(data) != len(_RECORD_TEMPLATE):
        raise TypeError(f"not fields of MatchRecord: {sorted(set(values) - set(_RECORD_TEMPLATE))}")
    for name, factory in _RECORD_FACTORIES.items():
        if name not in fields_set:
            data[name] = factory()
    record = _new(MatchRecord)
    _set_dict(record, data)
    _set_fields_set(record, fields_set)
    _set_extra(record, None)
    _set_private(record, None)
    return record


def _invalid(decision: Decision, reason: str) -> Decision:
    return replace(decision, outcome=Outcome.INVALID, error=reason)


_STARTED: list[tuple[int, str]] = [(-1, "")]


def _now_iso() -> str:
    """``datetime.now(timezone.utc).isoformat(timespec="seconds")``, made once a second (matches start by the
    thousand a second; the text of a second is the same for all of them)."""
    now = time.time()
    second = int(now)
    cached = _STARTED[0]
    if cached[0] != second:
        cached = (second, datetime.fromtimestamp(second, timezone.utc).isoformat(timespec="seconds"))
        _STARTED[0] = cached
    return cached[1]


async def play_match(
    game: pyspiel.Game,
    bots: Sequence[DeepEvalBot],
    *,
    seed: int = 0,
    match_id: str = "",
    seat_names: Sequence[str] | None = None,
    judge: DeepEvalBot | None = None,
    scorers: Sequence[Scorer] = (),
    max_rounds: int | None = None,
    transcript: Literal["full", "moves"] = "full",
) -> MatchRecord:
    """Play one match of ``game`` with ``bots[i]`` in seat i and return its record.

    ``seed`` drives chance nodes (bots carry their own generators). Infrastructure failures raised by a
    bot (:class:`~deepeval_games.core.errors.InfrastructureError`) propagate: the caller reschedules the match.

    ``transcript="moves"``: a match whose every seat moves from its observation fields (:class:`~deepeval_games.core.bot.
    FieldsBot`), in a game without a judge and with no ``scorers``, is recorded as its moves alone
    (:attr:`MatchRecord.transcript` ``moves``: no messages, the turns as rows), from which reading the record and
    :func:`deepeval_games.core.transcript.with_messages` rebuild the rest; any other match is recorded in full.

    Raises:
        TranscriptNotDerivable: under ``transcript="moves"``, a seat's answer was not a legal move (play the match
            again with new bots and ``transcript="full"``).
    """
    started = _now_iso()
    clock = time.perf_counter()
    match = _Match(game, bots, judge, seed)
    if len(bots) != match.n:
        raise SpecError(f"{game} has {match.n} seats, got {len(bots)} bots")
    names = list(seat_names) if seat_names is not None else _seat_labels(len(bots))
    rounds = max_rounds if max_rounds is not None else match.facts.max_rounds
    rows = None
    if _all_lean(match):
        match.run_lean(rounds)
    elif match.fields_only:
        if transcript == "moves" and not scorers:
            rows = match.run_moves(rounds)
        else:
            match.run_fields(rounds)
    else:
        await match.run(rounds)
    facts = match.facts
    # _match_record(match_id=..., ..., wall_time_s=...) written out: its fields set are always these
    data = _RECORD_TEMPLATE.copy()
    data["match_id"], data["game"], data["seats"], data["seed"] = match_id, facts.name, names, seed
    returns = match.state.returns()  # a Python game's numpy array (its floats as .tolist() gives them), else a list
    data["returns"] = (
        returns.tolist() if returns.__class__ is _NDARRAY and returns.dtype.kind == "f" else list(map(float, returns))
    )
    data["turns"], data["roles"], data["started_at"] = match.turns, list(facts.roles), started
    data["players"] = [bot.identity() for bot in bots]
    data["messages"] = match.pool.records()  # the pool's own dicts, as the record holds them: the match is over
    data["metrics"] = task.match_metrics(match.state) if facts.has_metrics else {}
    if rows is not None:
        data["transcript"], data["moves"] = "moves", rows
    record = _new(MatchRecord)
    _set_dict(record, data)
    _set_fields_set(record, set(_PLAYED_FIELDS if rows is None else _PLAYED_MOVES_FIELDS))
    _set_extra(record, None)
    _set_private(record, None)
    for scorer in scorers:  # ground truth may be slow (a sandbox run): keep the event loop free
        data["metrics"].update(await asyncio.to_thread(scorer, match.state, record))
    data["wall_time_s"] = time.perf_counter() - clock
    return record


_LABELS: list[str] = []


def _seat_labels(n: int) -> list[str]:
    """``[seat_label(i) for i in range(n)]``, its strings made once."""
    while len(_LABELS) < n:
        _LABELS.append(seat_label(len(_LABELS)))
    return _LABELS[:n]
