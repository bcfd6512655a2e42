"""What a player sees and what it answers: :class:`Observation`, :class:`Decision`, :class:`DeepEvalBot`.

A bot never receives the game state from the referee: it receives an :class:`Observation` built from
what the rules let its seat see (the game's observation string and fields, and the messages of the pool
addressed to it). Seats are anonymous: nothing in an observation names a model or a bot.

:class:`DeepEvalBot` is a ``pyspiel.Bot``: the engine awaits :meth:`DeepEvalBot.act`, so every seat of
a simultaneous node can be asked at once; :meth:`DeepEvalBot.step` wraps it so OpenSpiel's own tools
(``evaluate_bots``) work too.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec
import numpy as np
import pyspiel

from deepeval_games.core import task
from deepeval_games.core.binding import observation_text
from deepeval_games.core.message_pool import InboxAt, Message

__all__ = [
    "USAGE_FIELDS",
    "ActionNames",
    "CallAttempt",
    "Decision",
    "DeepEvalBot",
    "FieldsBot",
    "Observation",
    "Outcome",
    "Prompt",
    "SeatSeed",
    "StateBot",
    "SyncBot",
    "Usage",
    "answers_at_once",
    "answers_on_its_own",
    "game_facts",
    "make_observation",
    "observe",
    "reads_fields_only",
]


class Outcome(str, enum.Enum):
    """How a turn went, one per turn record."""

    OK = "ok"
    """A valid move at the first ask."""
    REASKED = "reasked"
    """A valid move after at least one re-ask."""
    INVALID = "invalid"
    """No valid move after the re-asks; the task's penalty applied."""
    REFUSAL = "refusal"
    """The model declined to answer; the task's penalty applied."""
    CONTEXT_OVERFLOW = "context_overflow"
    """The prompt no longer fit the model's context; the task's penalty applied."""
    INFRA_ERROR = "infra_error"
    """The model could not be reached; the match is aborted and rescheduled."""
    TRUNCATED = "truncated"
    """The reply was cut by the token cap (``finish_reason`` ``length``) at the last ask; the task's penalty
    applied. A cut reply is never read as a move: it is re-asked like an invalid one."""


class _ObservationFields(msgspec.Struct, frozen=True):
    """The fields of an :class:`Observation`, as given: ``inbox`` may be an unread
    :class:`~deepeval_games.core.message_pool.InboxAt` (the subclass reads it when it is first asked for)."""

    seat: int
    num_seats: int
    game: str
    """The game's short name, e.g. ``kuhn_poker``."""
    params: Mapping[str, Any]
    """The game's parameters."""
    round: int
    """Round of Algorithm 1 (1 = first move)."""
    text: str
    """The game's observation string for this seat (its information-state string where it has no other)."""
    fields: Mapping[str, Any]
    """Structured values of the same observation (the task's ``observation_fields``), may be empty."""
    legal_actions: tuple[int, ...]
    """Actions the seat may take; for a free-text move, a placeholder (any utterance is accepted)."""
    inbox: tuple[Message, ...] | InboxAt
    """Every pool message this seat may read, in order, its own moves included: what the referee delivered."""
    penalty_action: int | None = None
    """The task's move for a seat without a valid answer (None: the referee draws a random legal move)."""
    free_text: bool = False
    """True when the move is an utterance rather than a choice among ``legal_actions``."""
    action_to_string: Callable[[int], str] = str
    """Names an action for this seat (e.g. ``invest 3``)."""
    combined: bool = False
    """True when the answer carries a message to every seat beside the move (the task's combined turn)."""


class Observation(_ObservationFields, frozen=True):
    """Everything a seat may know when it is asked to move.

    A frozen :class:`msgspec.Struct`: build it as ``Observation(seat, num_seats, ...)`` or with keywords, change it
    with :func:`msgspec.structs.replace`. Equality and ``repr`` leave out ``action_to_string`` and see the inbox's
    messages; a pickle holds the messages, not the pool.
    """

    @property  # type: ignore[misc] # the field, read (mypy allows only an attribute over a dataclass field)
    def inbox(self) -> tuple[Message, ...]:
        """Every pool message this seat may read, in order, its own moves included: what the referee delivered.

        The referee hands the field over unread (an :class:`~deepeval_games.core.message_pool.InboxAt`, which
        reads the pool once, when first asked, and keeps what it read): a bot that never looks costs no message."""
        inbox = super().inbox
        return inbox.read() if isinstance(inbox, InboxAt) else inbox

    def action_names(self) -> dict[str, int]:
        """Every legal action by its name (the first action of a name wins)."""
        names: dict[str, int] = {}
        for action in self.legal_actions:
            names.setdefault(self.action_to_string(action), action)
        return names

    def _compared(self) -> tuple[Any, ...]:
        """The values equality compares: every field but ``action_to_string``, the inbox read."""
        return (
            self.seat,
            self.num_seats,
            self.game,
            self.params,
            self.round,
            self.text,
            self.fields,
            self.legal_actions,
            self.inbox,
            self.penalty_action,
            self.free_text,
            self.combined,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Observation):
            return NotImplemented
        return self._compared() == other._compared()

    __hash__ = None  # type: ignore[assignment] # its params and fields are mappings

    def __repr__(self) -> str:
        shown = (f"{name}={getattr(self, name)!r}" for name in self.__struct_fields__ if name != "action_to_string")
        return f"{type(self).__name__}({', '.join(shown)})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its inbox read (the messages, not the pool)."""
        return type(self), tuple(getattr(self, name) for name in self.__struct_fields__)


Prompt = tuple[Mapping[str, str], ...]
"""The chat messages of one request, exactly as sent."""


@dataclass(frozen=True, slots=True)
class CallAttempt:
    """One transport attempt of a model call: what came back, and how long the retry loop waited after it."""

    ask: int = 0
    """The ask of the turn it belongs to (0: the first ask, then each re-ask)."""
    status: str = "ok"
    """``ok``, ``refusal``, ``context_overflow`` (no call sent when the prompt was known not to fit), ``infra``
    (retried: 429, 5xx, timeout, connection) or ``fatal``."""
    http_status: int | None = None
    """The HTTP status of a failed attempt, when the provider sent one."""
    error: str | None = None
    """The exception class of a failed attempt (``RateLimitError``, ``Timeout``, ...); None when it succeeded, unless
    its reply held code points UTF-8 cannot encode: then ``UnencodableText: ...`` says which were replaced."""
    wait_s: float = 0.0
    """Seconds waited after this attempt before the next one (backoff, Retry-After); 0 for the last."""


class Usage(msgspec.Struct, frozen=True):
    """What model calls used: tokens and cost, one value that adds up field by field (``a + b``).

    A completion, a turn's decision and its record each give theirs as ``.usage``; a turn sums its asks', a player's
    table sums its turns'. Records keep the six counters as flat fields of a turn (:class:`TurnRecord
    <deepeval_games.core.records.TurnRecord>`), so the stored shape is the same as before this value existed.
    """

    tokens_in: int = 0
    """Prompt tokens."""
    tokens_out: int = 0
    """Completion tokens (reasoning included)."""
    cost_usd: float = 0.0
    """Cost in USD, as litellm prices the calls (or at the price a player's settings give)."""
    reasoning_tokens: int = 0
    """The part of ``tokens_out`` spent on reasoning, where the provider reports it."""
    cached_tokens: int = 0
    """The part of ``tokens_in`` the provider read from its prompt cache."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the provider's prompt cache, where it reports them (Anthropic)."""

    def __add__(self, other: Usage) -> Usage:
        """The field-by-field sum."""
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.tokens_in + other.tokens_in,
            self.tokens_out + other.tokens_out,
            self.cost_usd + other.cost_usd,
            self.reasoning_tokens + other.reasoning_tokens,
            self.cached_tokens + other.cached_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """The sum of ``usages`` (nothing used when empty)."""
        return sum(usages, cls())

    @classmethod
    def of(cls, item: Any) -> Usage:
        """The usage of anything that has the six counters as attributes (a decision, a turn record)."""
        return cls(
            item.tokens_in,
            item.tokens_out,
            item.cost_usd,
            item.reasoning_tokens,
            item.cached_tokens,
            item.cache_write_tokens,
        )

    def fields(self) -> dict[str, Any]:
        """The six counters by name: what a decision or a turn record holds as its own fields."""
        return msgspec.structs.asdict(self)


_NOTHING_USED = Usage()

USAGE_FIELDS = Usage.__struct_fields__
"""The names of the six counters, in :class:`Usage`'s order (a decision and a turn record have each)."""


class Decision(msgspec.Struct, frozen=True):
    """A bot's answer to one :class:`Observation`, with what it cost.

    The fields after ``text`` are the turn's exchange with a model; the match record copies them as they are
    (:meth:`exchange`), so they are named once, here. A frozen :class:`msgspec.Struct`: build it as
    ``Decision(action, text, ...)`` or with keywords, change it with :func:`msgspec.structs.replace`.
    """

    action: int | None
    """The chosen action; None for a free-text move (then ``text`` is the utterance) or for no valid move."""
    text: str = ""
    """The utterance put in the message pool (a reply, or the action's name for scripted bots)."""
    outcome: Outcome = Outcome.OK
    raw_replies: tuple[str, ...] = ()
    """Every raw model reply of this turn, re-asks included."""
    prompts: tuple[Prompt, ...] = ()
    """The chat messages sent at each ask of this turn (the first ask, then every re-ask)."""
    retries: int = 0
    """Re-asks after invalid replies (not infrastructure retries)."""
    model: str | None = None
    """Model id reported by the provider."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    error: str | None = None
    """Why the turn was not ``ok``."""
    attempts: tuple[CallAttempt, ...] = ()
    """Every transport attempt of every ask of the turn, in order (retries included)."""
    cut_chars: tuple[int, ...] = ()
    """Per ask, the characters cut from a reply longer than the task's maximum (0: not cut)."""
    finish_reasons: tuple[str | None, ...] = ()
    """Per ask, why the model stopped, as the provider said (``stop``, ``length``, ...; None: not reported)."""
    reasoning_tokens: int = 0
    """Completion tokens the model spent on reasoning over the turn's asks (where the provider reports them)."""
    reasoning: tuple[str, ...] = ()
    """Per ask, the reasoning text the provider sent apart from the reply ("" when none)."""
    cached_tokens: int = 0
    """Prompt tokens of the turn's asks the provider read from its prompt cache (included in ``tokens_in``)."""
    cache_write_tokens: int = 0
    """Prompt tokens of the turn's asks the provider wrote to its prompt cache, where it charges for that
    (Anthropic's ``cache_creation_input_tokens``)."""

    @classmethod
    def move(cls, action: int | None, text: str = "") -> Decision:
        """``Decision(action, text)``: a plain move, every other field at its default."""
        return cls(action, text)

    @property
    def usage(self) -> Usage:
        """The tokens and cost of the turn's asks as one value."""
        return Usage.of(self)

    def is_plain(self) -> bool:
        """True when no model was asked: every field of the exchange with a model is at its default."""
        return (
            not self.prompts
            and not self.raw_replies
            and not self.attempts
            and not self.cut_chars
            and not self.finish_reasons
            and not self.reasoning
            and self.retries == 0
            and self.model is None
            and self.usage == _NOTHING_USED
        )

    def exchange(self) -> dict[str, Any]:
        """The fields a turn record copies: outcome, replies, prompts per ask, re-asks, model, tokens, cost, error."""
        return {
            "outcome": Outcome(self.outcome),
            "raw_replies": list(self.raw_replies),
            "prompts": [[dict(m) for m in ask] for ask in self.prompts],
            "retries": self.retries,
            "model": self.model,
            **self.usage.fields(),
            "error": self.error,
            "attempts": list(self.attempts),
            "cut_chars": list(self.cut_chars),
            "finish_reasons": list(self.finish_reasons),
            "reasoning": list(self.reasoning),
        }


class ActionNames:
    """``Observation.action_to_string`` without a copy of the state: names are read from the live state, and
    remembered, while it is where the observation was made (a seat names its moves while it chooses). Naming a
    move after the game moved on is a bug in the caller and says so rather than naming it from another state.

    Where the state is is its history's length, or, given a ``clock`` (an object whose ``step`` counts the moves
    applied to the state, as the referee's match does), that count, which costs nothing to read.
    """

    __slots__ = ("_at", "_clock", "_namer", "_names", "_seat", "_state")

    def __init__(
        self, state: pyspiel.State, seat: int, clock: Any = None, namer: Callable[[int, int], str] | None = None
    ) -> None:
        self._state = state
        self._seat = seat
        self._clock = clock
        self._at = len(state.history()) if clock is None else clock.step
        self._names: dict[int, str] = {}
        self._namer = namer if namer is not None else state.action_to_string
        """``(seat, action) -> name`` in ``state``: its ``action_to_string``, or the same method of a Python game
        called directly (the referee's, which saves the round trip through C++)."""

    def __call__(self, action: int) -> str:
        """The name of ``action`` for the seat, in the state as it was when this was made."""
        name = self._names.get(action)
        if name is None:
            clock = self._clock
            if (len(self._state.history()) if clock is None else clock.step) != self._at:
                raise RuntimeError(
                    f"action {action} named for seat {self._seat} after the game moved on: name moves while choosing"
                )
            name = self._names[action] = self._namer(self._seat, action)
        return name


def game_facts(game: pyspiel.Game) -> dict[str, Any]:
    """The fields of an :class:`Observation` that describe the game: ``num_seats``, ``game`` (its short name) and
    ``params``."""
    return {"num_seats": game.num_players(), "game": game.get_type().short_name, "params": dict(game.get_parameters())}


def make_observation(
    *,
    seat: int,
    num_seats: int,
    game: str,
    params: Mapping[str, Any],
    round: int,
    text: str,
    fields: Mapping[str, Any],
    legal_actions: tuple[int, ...],
    inbox: tuple[Message, ...] | InboxAt,
    penalty_action: int | None,
    free_text: bool,
    action_to_string: Callable[[int], str],
    combined: bool = False,
) -> Observation:
    """``Observation(...)`` of these values, all given by keyword (the referee's way of making one). ``inbox`` may be
    an :class:`~deepeval_games.core.message_pool.InboxAt`, read when the bot first reads ``observation.inbox``."""
    return Observation(
        seat=seat,
        num_seats=num_seats,
        game=game,
        params=params,
        round=round,
        text=text,
        fields=fields,
        legal_actions=legal_actions,
        inbox=inbox,
        penalty_action=penalty_action,
        free_text=free_text,
        action_to_string=action_to_string,
        combined=combined,
    )


def observe(
    state: pyspiel.State,
    seat: int,
    inbox: tuple[Message, ...] = (),
    round: int = 0,
    *,
    text: str | None = None,
    fields: Mapping[str, Any] | None = None,
    legal_actions: tuple[int, ...] | None = None,
) -> Observation:
    """Build the :class:`Observation` of ``seat`` from a state; only what the seat may see goes in.

    The observation names actions from ``state`` itself (no copy is made): use it while ``state`` stays where it
    is, as the referee does (every seat of a round chooses before the round's moves are applied). ``text`` and
    ``fields``, when given, are the seat's observation text and fields of this very state, already computed (the
    referee computed them to deliver them); ``legal_actions`` likewise, the seat's legal actions in this state.
    """
    game = state.get_game()
    if legal_actions is not None:
        legal = legal_actions
    else:
        legal = () if state.is_terminal() else tuple(state.legal_actions(seat))
    return make_observation(
        seat=seat,
        **game_facts(game),
        round=round,
        text=observation_text(state, seat) if text is None else text,
        fields=task.observation_fields(state, seat) if fields is None else fields,
        legal_actions=legal,
        inbox=inbox,
        penalty_action=task.penalty_action(state, seat),
        free_text=task.is_free_text_turn(state, seat),
        action_to_string=ActionNames(state, seat),
        combined=task.is_combined_turn(state, seat),
    )


@dataclass(frozen=True, slots=True)
class SeatSeed:
    """Where the generator of one seat of a match comes from, handed to a bot instead of the generator itself
    (:attr:`DeepEvalBot.takes_seat_seed`): the generator is made on the bot's first use of ``rng``, so a seat that
    never draws (most scripted baselines) never pays for numpy's seed hashing."""

    seed: int
    """The match's seed."""
    seat: int
    """The seat (the judge's: the number of seats)."""

    def generator(self) -> np.random.Generator:
        """The seat's generator: the stream of ``np.random.SeedSequence(seed).spawn(seat + 1)[seat]``, built without
        spawning the others (and without ``default_rng``'s checks of its argument: the same generator)."""
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(self.seed, spawn_key=(self.seat,))))


class DeepEvalBot(pyspiel.Bot):
    """Base class of every player: scripted baselines and LLM bots alike.

    Subclasses implement :meth:`act`. ``rng`` is the bot's own generator (never a global seed).

    **Constructor contract.** A registered bot is built as ``cls(player_id, rng, game=game, **params)``:
    ``player_id`` is its seat (``-2`` for a judge), ``rng`` its generator, ``game`` the ``pyspiel.Game`` it
    plays (kept as ``self.game``), ``params`` the keyword parameters of its ``[[players]]`` entry. A subclass
    with parameters of its own declares them keyword-only after ``game``; one without needs no ``__init__``.
    """

    rng: np.random.Generator
    """The bot's own generator."""

    takes_seat_seed: ClassVar[bool] = False
    """Whether the engine may hand the bot a :class:`SeatSeed` as ``rng`` (its generator is then made on first use of
    :attr:`rng`). True only on classes whose ``__init__`` passes ``rng`` on to this one untouched and that draw through
    :attr:`rng` alone; a bot that reads the ``rng`` argument itself keeps False and is given the generator."""

    def __init__(
        self,
        player_id: int,
        rng: np.random.Generator | SeatSeed | None = None,
        *,
        game: pyspiel.Game | None = None,
    ) -> None:
        pyspiel.Bot.__init__(self)
        self.player_id = player_id
        if isinstance(rng, SeatSeed):
            self._seat_seed = rng  # the generator is made by __getattr__ on first use of self.rng
        else:
            self.rng = rng if rng is not None else np.random.default_rng()
        self.game = game

    if not TYPE_CHECKING:  # for type checkers ``rng`` is a plain attribute (and no other name is dynamic)

        def __getattr__(self, name: str) -> Any:
            """Make ``rng`` from the bot's :class:`SeatSeed` on first use (only called when ``rng`` is not set)."""
            if name == "rng":
                seed = self.__dict__.get("_seat_seed")
                if seed is not None:
                    self.rng = seed.generator()
                    return self.rng
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    reads_views: ClassVar[bool] = True
    """Whether the bot reads what its seat is shown (observation text, fields, inbox). False on classical players
    that choose from the state or the legal moves alone (``random``, ``mcts``, ``exact``): the referee then sends
    such a seat the rules and the final view only, not a view each turn, and the message pool (the record of what
    each seat was given) shows just that. LLM, human and scripted bots read their views and keep the default."""

    async def act(self, observation: Observation) -> Decision:
        """Choose a move for ``observation``."""
        raise NotImplementedError

    def identity(self) -> dict[str, Any]:
        """What identifies this player in a match id (kind, name, version); never shown to seats."""
        return {"kind": type(self).__name__}

    # -- pyspiel.Bot ---------------------------------------------------------------------------------

    def step(self, state: pyspiel.State) -> int:
        """OpenSpiel entry point: the action for this bot's seat in ``state``."""
        decision = asyncio.run(self.act(observe(state, self.player_id)))
        if decision.action is None:
            return task.intern_utterance(state, self.player_id, decision.text)
        return int(decision.action)

    def restart_at(self, state: pyspiel.State) -> None:
        """Nothing to reset by default."""

    def inform_action(self, state: pyspiel.State, player_id: int, action: int) -> None:
        """Scripted bots learn from observations, not from other seats' raw actions."""

    def provides_policy(self) -> bool:
        """DeepEval bots return actions, not policies."""
        return False


class SyncBot(DeepEvalBot):
    """A player that answers at once, awaiting nothing (scripted baselines, ``random``): it implements
    :meth:`respond`, which the referee calls directly, with no coroutine or task per move.

    :meth:`act` still works (it returns :meth:`respond`'s answer), so anything that awaits a bot can await it. A
    subclass that overrides :meth:`act` instead is awaited as before.
    """

    def respond(self, observation: Observation) -> Decision:
        """Choose a move for ``observation``, synchronously."""
        raise NotImplementedError

    async def act(self, observation: Observation) -> Decision:
        """:meth:`respond`, for callers that await a bot."""
        return self.respond(observation)

    def step(self, state: pyspiel.State) -> int:
        """OpenSpiel entry point: :meth:`respond` to the seat's observation of ``state``, no event loop."""
        if type(self).act is not SyncBot.act:  # a subclass that answers in act
            return super().step(state)
        decision = self.respond(observe(state, self.player_id))
        if decision.action is None:
            return task.intern_utterance(state, self.player_id, decision.text)
        return int(decision.action)


class FieldsBot(SyncBot):
    """A :class:`SyncBot` whose move depends on its seat's observation fields alone (and its own generator): it
    implements :meth:`move_from_fields`, never reads the observation's text, inbox or other parts, and its decision
    is the plain move named as the seat names it (:meth:`respond`). The referee asks a scripted baseline of this kind
    without making an :class:`Observation`: it calls :meth:`move_from_fields` with the fields it computed to deliver
    the seat's view (:func:`reads_fields_only`).

    A subclass that overrides :meth:`respond` (or :meth:`~DeepEvalBot.act`) is asked through it as any other bot.
    A match of such bots may be stored as its moves (:mod:`deepeval_games.core.transcript`): the referee then asks them
    without rendering the seats' observation text, so a game's ``observation_fields`` must not depend on its text
    having been read first.
    """

    def move_from_fields(self, fields: Mapping[str, Any]) -> int:
        """This seat's move, a Python ``int``, from its observation fields (read only: they may be shared)."""
        raise NotImplementedError

    def respond(self, observation: Observation) -> Decision:
        """:meth:`move_from_fields` of the observation's fields, as a plain move named by the observation."""
        action = self.move_from_fields(observation.fields)
        return Decision.move(action, observation.action_to_string(action))


def reads_fields_only(bot: DeepEvalBot) -> bool:
    """True when the referee may ask ``bot`` through :meth:`FieldsBot.move_from_fields` (no observation made): a
    :class:`FieldsBot` whose class keeps :meth:`FieldsBot.respond` and :meth:`SyncBot.act`, and that was given
    neither as an attribute of its own (a patched ``respond`` is asked as any other bot's)."""
    cls = type(bot)
    if not (isinstance(bot, FieldsBot) and cls.respond is FieldsBot.respond and cls.act is SyncBot.act):
        return False
    return not answers_on_its_own(bot)


def answers_on_its_own(bot: DeepEvalBot) -> bool:
    """True when ``bot`` was given a ``respond`` or ``act`` as an attribute of its own (patched onto the instance,
    not its class): what the referee learns of a bot from its class alone does not hold for it."""
    own = getattr(bot, "__dict__", None)
    return own is not None and ("respond" in own or "act" in own)


def answers_at_once(bot: DeepEvalBot) -> bool:
    """True when the referee may call ``bot`` without awaiting it: a :class:`StateBot`, or a :class:`SyncBot`
    whose class answers in :meth:`SyncBot.respond` (not in an overridden :meth:`~DeepEvalBot.act`)."""
    return isinstance(bot, StateBot) or (isinstance(bot, SyncBot) and type(bot).act is SyncBot.act)


class StateBot(DeepEvalBot):
    """A trusted classical player (MCTS, minimax, a solved policy) that the referee hands a copy of the true state.

    LLM seats never get the state; a state bot does, because OpenSpiel's search algorithms work on states. It is
    trusted not to use what its seat may not see: on an imperfect-information game it must search information
    sets (resampling the hidden part) or read a policy keyed by its information state. Subclasses implement
    :meth:`choose`; the referee calls :meth:`decide` instead of :meth:`act`.
    """

    copies_state: ClassVar[bool] = True
    """Whether :meth:`choose` is handed a copy of the state. False on a bot that only reads the state, never applies
    a move to it nor keeps it (``random``): the referee hands it the live state and saves a copy per move."""

    def choose(self, state: pyspiel.State) -> int:
        """The action for this bot's seat in ``state`` (a copy, unless :attr:`copies_state` is False)."""
        raise NotImplementedError

    def pick(self, state: pyspiel.State, legal: list[int]) -> int:
        """The referee's lean entry point for a bot that does not read views: ``state`` (a copy, unless
        :attr:`copies_state` is False) and the seat's legal actions in it, never empty. :meth:`choose` by default."""
        return int(self.choose(state))

    def decide(self, state: pyspiel.State, observation: Observation) -> Decision:
        """The referee's entry point: :meth:`choose`, named as the seat would name it."""
        action = int(self.choose(state))
        return Decision.move(action, observation.action_to_string(action))

    async def act(self, observation: Observation) -> Decision:
        """A state bot cannot play from an observation alone."""
        raise TypeError(f"{type(self).__name__} needs the game state: play it through the referee or step()")

    def step(self, state: pyspiel.State) -> int:
        """OpenSpiel entry point: :meth:`choose` on a copy of ``state`` (on ``state`` itself where
        :attr:`copies_state` is False)."""
        return self.choose(state.clone() if self.copies_state else state)
