"""The task contract: what a game may offer beyond OpenSpiel's API, and what happens without it.

Every evaluation task is a ``pyspiel.Game``. A game may add the optional hooks below; the referee, the
players and the conformance kit read them only through the functions of this module (the referee through
:func:`deepeval_games.core.binding.state_hooks`, which binds the same hooks with the same defaults once a
match), never with a ``getattr`` of their own, so each hook's default is written down once, here. Any
OpenSpiel game with no hook at all can be played (its rules come from a registered rules card, its
observations from its observation or information-state string, its moves by their ``action_to_string``
names).

:class:`TaskGame` (on the game):

==================================  ===============================================================
hook                                without it
==================================  ===============================================================
``rules_text() -> str``             the rules card registered with :func:`register_rules_card`,
                                    else one line naming the game
``seat_roles() -> list[str]``       every seat plays the role ``player`` (a symmetric task, Eq. 1)
``judged: bool``                    False: the game has no verdict node and needs no judge
``replays_from_moves: bool``        True: a match without awaited seats is stored as its moves, replayed
                                    on read; False (the kit's ``replays`` check fails): stored in full
``prompt_file() -> Path``           the LLM players use the generic answer format and re-ask texts
``max_reply_chars() -> int``        :data:`DEFAULT_MAX_REPLY_CHARS`: a longer model reply is cut to it
                                    (the cut is recorded) before it is stored or sent back
``reply_limit(role) -> int | None`` an LLM player's reply cap is its own ``max_tokens``, else 512;
                                    with the hook, a reply in ``role`` may take that many tokens when
                                    the player's setting is smaller or unset (None: nothing for that
                                    role)
``presets: Mapping``                a spec's ``preset`` leaves the game as it is; with it, preset name
                                    -> game parameters it selects (:mod:`deepeval_games.app.spec.presets`)
``default_study() -> Study``        ``deepeval-games eval`` plays the :class:`Study` registered for the
                                    game with :func:`register_study` (a package may register one for
                                    any game, e.g. classical opponents), else it refuses the game
``unlisted_moves() -> str | None``  None: ``legal_actions`` lists a seat's moves, so a random player can
                                    draw among them; a text: why it does not (moves are free text that
                                    it names only in part, or not at all), and ``random`` is refused
``parameter_bounds: Mapping``       only the limits every game gets
(:func:`deepeval_games.core.registry.games.load_game`:
                                    OpenSpiel's player counts, and an estimate of a match's length and
                                    memory); with it, parameter name -> ``(lowest, highest)`` allowed,
                                    checked before the game is loaded with the parameters asked for
``payoff_support() -> tuple``       the table of :func:`~deepeval_games.core.registry.games.payoff_support`,
                                    else None: payoffs may take any value of the range (no exact intervals)
==================================  ===============================================================

A task module registers the public files it reads with :func:`register_data_source` when its entry
point loads (``deepeval-games data`` lists and fetches them); the core names none.

:class:`TaskState` (on the state):

==========================================  =======================================================
hook                                        without it
==========================================  =======================================================
``observation_fields(player)``              no structured fields (``{}``); prompts use the text
``penalty_action(player) -> int``           a seeded, uniformly random legal move, recorded as
                                            ``invalid`` and counted against the seat
``is_free_text_turn(player) -> bool``       False: every move is one of ``legal_actions``
``intern_utterance(player, text) -> int``   free-text answers are refused (an invalid turn)
``is_combined_turn(player) -> bool``        False: a message and a move are separate turns; True: one
                                            reply carries both (the message goes to every seat)
``is_judge_turn() -> bool``                 False: chance nodes are sampled from the match seed
``judge_fields() -> Mapping``               the judge gets no structured fields
``judge_text() -> str``                     the judge is shown the state's string
``judge_text_presented(order, labels)``     the roles can be shown to a judge only as played
                                            (``rejudge --swap`` refuses LLM judges for the task)
``match_metrics() -> Mapping``              no task metrics
``indistinguishable_variants(p, joint)``    the conformance kit checks no hidden-move variants
==========================================  =======================================================

Which string a seat is shown (its observation string, else its information-state string) is decided by what
the game really provides, not by its capability flags: :func:`deepeval_games.core.binding.playability`
probes a playout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol, cast

import pyspiel

__all__ = [
    "ANY_GAME",
    "DEFAULT_MAX_REPLY_CHARS",
    "OPTIONAL_STATE_HOOKS",
    "DataSource",
    "OptionalStateHook",
    "Study",
    "TaskGame",
    "TaskState",
    "can_intern",
    "data_sources",
    "default_study",
    "has_penalty",
    "indistinguishable_variants",
    "intern_utterance",
    "is_combined_turn",
    "is_free_text_turn",
    "is_judge_turn",
    "is_judged",
    "judge_fields",
    "judge_text",
    "judge_text_presented",
    "match_metrics",
    "max_reply_chars",
    "observation_fields",
    "parameter_bounds",
    "penalty_action",
    "presets",
    "prompt_file",
    "register_data_source",
    "register_rules_card",
    "register_study",
    "reply_limit",
    "rules_card",
    "rules_text",
    "seat_roles",
    "unlisted_moves",
]


class TaskGame(Protocol):
    """Optional hooks of a game (see the module docs for the defaults)."""

    judged: bool
    replays_from_moves: bool
    """False when a match's moves and chance outcomes do not determine its views or move names: stored in full."""
    presets: Mapping[str, Mapping[str, Any]]
    """Game parameters per preset name (``paper``, ``project``) that a spec's ``preset`` selects."""
    parameter_bounds: Mapping[str, tuple[float, float]]
    """Per numeric parameter, the lowest and highest value the task accepts (both allowed): a run asking for more
    (``rounds=1000000000``) is refused before the game is loaded with it or anything is written. Read from the game
    loaded with its default parameters, so a class attribute is the natural place for it."""

    def rules_text(self) -> str:
        """The rules in plain words; the referee broadcasts them to every seat before the first move."""

    def seat_roles(self) -> list[str]:
        """The role of every seat, in seat order (``["programmer", "reviewer"]``)."""

    def prompt_file(self) -> Path:
        """The task's prompt file (answer format and re-ask texts per role), beside the game."""

    def reply_limit(self, role: str) -> int | None:
        """Tokens a reply in ``role`` may need (a whole paragraph for a translator); None: no task limit."""

    def max_reply_chars(self) -> int:
        """The longest model reply kept, in characters; a longer one is cut (and the cut recorded)."""

    def default_study(self) -> Study:
        """What ``deepeval-games eval`` plays on this task: games, preset, baselines, stopping rule, judge."""

    def unlisted_moves(self) -> str | None:
        """Why ``legal_actions`` does not list the seats' moves (None: it does)."""


class TaskState(Protocol):
    """Optional hooks of a state (see the module docs for the defaults)."""

    def observation_fields(self, player: int) -> Mapping[str, Any]:
        """Structured values of ``player``'s observation (a per-task ``TypedDict``)."""

    def penalty_action(self, player: int) -> int:
        """The move the referee applies when ``player`` gave no valid answer (may be referee-only)."""

    def is_free_text_turn(self, player: int) -> bool:
        """True when ``player``'s move is an utterance, not a choice among legal actions."""

    def intern_utterance(self, player: int, text: str) -> int:
        """Store an utterance in the state's pool and return its id (the action)."""

    def is_combined_turn(self, player: int) -> bool:
        """True when ``player``'s one reply carries a message to every seat and its move (one call a decision)."""

    def is_judge_turn(self) -> bool:
        """True at the verdict node: the referee asks the judge for the chance outcome."""

    def judge_fields(self) -> Mapping[str, Any]:
        """What a judge needs as values: at least ``roles``, ``score_min`` and ``score_max``."""

    def judge_text(self) -> str:
        """The judge's brief (rubric and the quoted dialogue), delivered to it through the pool."""

    def judge_text_presented(self, order: Sequence[int], labels: Sequence[str]) -> str:
        """The judge's brief with the roles introduced in ``order`` (seats) under ``labels`` (per seat).

        For judge audits (position and label bias): the same transcript, its roles shown in another order
        under other anonymous labels. ``order`` as played and the default labels give the same facts as
        ``judge_text()``.
        """

    def match_metrics(self) -> Mapping[str, Any]:
        """Task metrics of a finished match (hits, who broke the chain, ...)."""

    def indistinguishable_variants(self, player: int, joint_action: Sequence[int]) -> list[list[int]]:
        """Other joint actions of a round that ``player`` may not tell apart (for the conformance kit)."""


# -- the default study and the data a task reads ---------------------------------------------------------------

ANY_GAME = "*"
"""The name under which :func:`register_study` registers the study of every game that has none of its own."""


@dataclass(frozen=True)
class Study:
    """A task's default study: what ``deepeval-games eval TASK --model M`` plays when told nothing else.

    The models named on the command line join :attr:`opponents` (the task's scripted baselines); the run starts
    with :attr:`repeats` rounds of every seating, then the anytime-valid stopping rule repeats only what is still
    unresolved, up to :attr:`budget_matches` matches in all.
    """

    games: tuple[str, ...]
    """The game strings played (their data items pooled per variant)."""
    opponents: tuple[Mapping[str, Any], ...]
    """``[[players]]`` tables of the baselines the models play against (``{"name": ..., "bot": ...}``)."""
    preset: str | None = "paper"
    """The preset selected (``paper``: the paper's choices); None leaves the game as it is."""
    sweep: Mapping[str, Any] = field(default_factory=dict)
    """``[experiment.sweep]``: data items to vary (``{"task_id": {"from": 11, "to": 30}}``)."""
    pairing: str = "auto"
    """How the players are seated (``[experiment] pairing``)."""
    repeats: int = 1
    """Rounds of every seating before the stopping rule chooses what to repeat."""
    epsilon: float = 1.0
    """The stopping rule's indifference margin, in the game's payoff units."""
    budget_matches: int = 200
    """The most matches the stopping rule plays (``--max-matches`` overrides it)."""
    judge: Literal["none", "optional", "required"] = "none"
    """Whether the task needs a judge: ``required`` (a verdict node), ``optional`` (the preset's judged rules)."""
    judges: tuple[str, ...] = ()
    """Judges to suggest when none is named (a scripted judge, a model string)."""
    note: str = ""
    """One line on what the study plays, printed before the run."""


_STUDIES: dict[str, Callable[[pyspiel.Game], Study]] = {}


def register_study(short_name: str, study: Callable[[pyspiel.Game], Study]) -> None:
    """Give ``short_name`` (or :data:`ANY_GAME`: every game without its own) a default study, built from the game."""
    _STUDIES[short_name] = study


def default_study(game: pyspiel.Game) -> Study | None:
    """The study ``eval`` plays on ``game``: its own hook, else the registered one, else None."""
    own = getattr(game, "default_study", None)
    if callable(own):
        return cast(Study, own())
    factory = _STUDIES.get(game.get_type().short_name) or _STUDIES.get(ANY_GAME)
    return factory(game) if factory is not None else None


@dataclass(frozen=True)
class DataSource:
    """Public data a task reads, for ``deepeval-games data``: a file to fetch, or a package that ships it."""

    name: str
    """A file's path in a data folder (``mbpp/mbpp.jsonl``: looked for and cached there), or a package's name."""
    task: str
    """The task (game short name) that reads it."""
    url: str | None = None
    """Where ``data fetch`` downloads the file from (None: installed with a package)."""
    sha256: str | None = None
    """The hex sha256 of the published file; ``size``: its size in bytes (one far larger is refused unhashed)."""
    size: int | None = None
    package: str | None = None
    """The distribution that ships it (a packaged source: present when installed)."""
    description: str = ""


_DATA_SOURCES: dict[str, DataSource] = {}


def register_data_source(source: DataSource) -> None:
    """Make a data file known to ``deepeval-games data`` (a task module registers its own when imported)."""
    _DATA_SOURCES[source.name] = source


def data_sources() -> list[DataSource]:
    """Every registered data source, by name (the task modules register theirs when their entry point loads)."""
    return [_DATA_SOURCES[name] for name in sorted(_DATA_SOURCES)]


# -- rules ----------------------------------------------------------------------------------------------

_RULES_CARDS: dict[str, str] = {}


def register_rules_card(short_name: str, text: str) -> None:
    """Give ``short_name`` (e.g. ``kuhn_poker``) a rules card: what the referee broadcasts as its rules."""
    if not text.strip():
        raise ValueError(f"empty rules card for {short_name}")
    _RULES_CARDS[short_name] = text.strip()


def rules_card(short_name: str) -> str | None:
    """The registered rules card of a game, if any."""
    return _RULES_CARDS.get(short_name)


def rules_text(game: pyspiel.Game) -> str:
    """The rules every seat is sent first: the game's own, else its rules card, else one line."""
    own = getattr(game, "rules_text", None)
    if callable(own):
        return str(own())
    card = rules_card(game.get_type().short_name)
    if card is not None:
        return card
    return f"You are playing {game.get_type().long_name} ({game})."


def unlisted_moves(game: pyspiel.Game) -> str | None:
    """Why the game's ``legal_actions`` are not its moves, so that a random player cannot play it (None: they are)."""
    hook = getattr(game, "unlisted_moves", None)
    if not callable(hook):
        return None
    reason = hook()
    return None if reason is None else str(reason)


def seat_roles(game: pyspiel.Game) -> list[str]:
    """Each seat's role; ``player`` for every seat of a symmetric game."""
    roles = getattr(game, "seat_roles", None)
    return [str(r) for r in roles()] if callable(roles) else ["player"] * game.num_players()


def is_judged(game: pyspiel.Game) -> bool:
    """True when the game ends in a verdict node, so a spec must name a judge."""
    return bool(getattr(game, "judged", False))


def declared_payoffs(game: pyspiel.Game) -> tuple[float, ...] | None:
    """The game's own ``payoff_support()`` hook: the values every payoff takes; None without the hook."""
    return tuple(hook()) if callable(hook := getattr(game, "payoff_support", None)) else None


def replays_from_moves(game: pyspiel.Game) -> bool:
    """True unless the game says its moves and chance outcomes do not replay its transcript (then stored in full)."""
    return bool(getattr(game, "replays_from_moves", True))


def presets(game: pyspiel.Game) -> dict[str, dict[str, Any]]:
    """The game's presets: preset name -> the game parameters it selects (empty without the hook)."""
    table = getattr(game, "presets", None)
    return {str(k): dict(v) for k, v in table.items()} if isinstance(table, Mapping) else {}


def parameter_bounds(game: pyspiel.Game) -> dict[str, tuple[float, float]]:
    """The game's declared parameter bounds: name -> ``(lowest, highest)`` (empty without the hook).

    Raises:
        ValueError: a bound that is not a pair of numbers with ``lowest <= highest``.
    """
    table = getattr(game, "parameter_bounds", None)
    if not isinstance(table, Mapping):
        return {}
    bounds: dict[str, tuple[float, float]] = {}
    for name, pair in table.items():
        low, high = pair
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high))
        if not numbers or not low <= high:
            raise ValueError(f"{game.get_type().short_name}.parameter_bounds[{name!r}] must be (lowest, highest)")
        bounds[str(name)] = (low, high)
    return bounds


def prompt_file(game: pyspiel.Game) -> Path | None:
    """The task's own prompt file, or None (the generic prompts apply)."""
    hook = getattr(game, "prompt_file", None)
    return Path(hook()) if callable(hook) else None


DEFAULT_MAX_REPLY_CHARS = 16_000
"""The longest model reply kept by default, in characters (a few thousand tokens: room for a program)."""


def max_reply_chars(game: pyspiel.Game) -> int:
    """The longest model reply kept for ``game``, in characters: its own hook, else the default."""
    hook = getattr(game, "max_reply_chars", None)
    limit = int(hook()) if callable(hook) else DEFAULT_MAX_REPLY_CHARS
    if limit < 1:
        raise ValueError(f"{game.get_type().short_name}: max_reply_chars must be >= 1, got {limit}")
    return limit


def reply_limit(game: pyspiel.Game, role: str) -> int | None:
    """The task's reply cap for ``role`` in tokens, or None (the player's own ``max_tokens`` applies as set).

    An LLM player uses it as ``max_tokens`` when it is larger than the player's own setting, so a role
    whose answer is long (a whole translated paragraph) is never cut by a default meant for short moves.
    """
    hook = getattr(game, "reply_limit", None)
    if not callable(hook):
        return None
    value = hook(role)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"{game.get_type().short_name}.reply_limit({role!r}) must be None or an int >= 1, got {value!r}"
        )
    return value


# -- observations ---------------------------------------------------------------------------------------


def observation_fields(state: pyspiel.State, seat: int) -> dict[str, Any]:
    """Structured values of ``seat``'s observation (``{}`` for a game without them)."""
    return dict(_optional(state, "observation_fields")(seat))


# -- moves ----------------------------------------------------------------------------------------------


def penalty_action(state: pyspiel.State, seat: int) -> int | None:
    """The game's own penalty move for ``seat``; None when the game has none (the referee draws one)."""
    return _optional(state, "penalty")(seat)


def is_free_text_turn(state: pyspiel.State, seat: int) -> bool:
    """True when ``seat`` is to make an utterance."""
    return _optional(state, "free_text")(seat)


def is_combined_turn(state: pyspiel.State, seat: int) -> bool:
    """True when ``seat``'s reply is to carry a message and its move together."""
    return _optional(state, "combined")(seat)


def can_intern(state: pyspiel.State) -> bool:
    """True when the game takes free-text moves."""
    return callable(getattr(state, "intern_utterance", None))


def has_penalty(state: pyspiel.State) -> bool:
    """True when the game has its own penalty move (the referee draws a random legal move otherwise)."""
    return callable(getattr(state, "penalty_action", None))


def intern_utterance(state: pyspiel.State, seat: int, text: str) -> int:
    """The action id of an utterance; :class:`ValueError` for a game without free-text moves."""
    action: int | None = _optional(state, "intern")(seat, text)
    if action is None:
        raise ValueError(f"{state.get_game().get_type().short_name} takes no free-text moves")
    return action


# -- judging and metrics --------------------------------------------------------------------------------


def is_judge_turn(state: pyspiel.State) -> bool:
    """True at a verdict node."""
    return _optional(state, "judge_turn")()


def judge_fields(state: pyspiel.State) -> dict[str, Any]:
    """The judge's structured values (``{}`` without the hook)."""
    return dict(fn()) if callable(fn := getattr(state, "judge_fields", None)) else {}


def judge_text(state: pyspiel.State) -> str:
    """The judge's brief: the game's own, else the state's string."""
    return str(fn()) if callable(fn := getattr(state, "judge_text", None)) else str(state)


def judge_text_presented(state: pyspiel.State, order: Sequence[int], labels: Sequence[str]) -> str | None:
    """The judge's brief with the roles shown in ``order`` under ``labels``; None when the game cannot."""
    fn = getattr(state, "judge_text_presented", None)
    return str(fn(list(order), list(labels))) if callable(fn) else None


def indistinguishable_variants(state: pyspiel.State, player: int, joint_action: Sequence[int]) -> list[list[int]]:
    """Joint actions that ``player`` may not tell apart from ``joint_action`` (``[]`` without the hook)."""
    fn = getattr(state, "indistinguishable_variants", None)
    return [list(v) for v in fn(player, list(joint_action))] if callable(fn) else []


def match_metrics(state: pyspiel.State) -> dict[str, Any]:
    """Task metrics of a finished match (``{}`` without the hook)."""
    return dict(_optional(state, "match_metrics")())


# -- the state hooks' defaults, written once ------------------------------------------------------------


def _no_fields(seat: int) -> Mapping[str, Any]:
    return {}


def _no_penalty(seat: int) -> int | None:
    return None


def _never(seat: int) -> bool:
    return False


def _no_interning(seat: int, text: str) -> int | None:
    return None


def _no_verdict() -> bool:
    return False


def _no_metrics() -> Mapping[str, Any]:
    return {}


class OptionalStateHook(NamedTuple):
    """One optional hook of a state (:class:`TaskState`) and its default (the module docs')."""

    slot: str
    """Its field of :class:`deepeval_games.core.binding.StateHooks` (the name the engine calls it by)."""
    method: str
    """The name of the state's method."""
    made: type | None
    """The type its answer is made (None: read as it is; the callers that keep it copy it)."""
    default: Callable[..., Any]
    """What a state without the hook answers."""

    def bound(self, hook: Callable[..., Any] | None) -> Callable[..., Any]:
        """A state's bound ``hook`` as its callers call it: the default without it, else the hook, its answer made
        :attr:`made`."""
        if hook is None:
            return self.default
        made = self.made
        return hook if made is None else lambda *args: made(hook(*args))


OPTIONAL_STATE_HOOKS: tuple[OptionalStateHook, ...] = (
    OptionalStateHook("observation_fields", "observation_fields", None, _no_fields),
    OptionalStateHook("penalty", "penalty_action", int, _no_penalty),
    OptionalStateHook("free_text", "is_free_text_turn", bool, _never),
    OptionalStateHook("intern", "intern_utterance", int, _no_interning),
    OptionalStateHook("combined", "is_combined_turn", bool, _never),
    OptionalStateHook("judge_turn", "is_judge_turn", bool, _no_verdict),
    OptionalStateHook("match_metrics", "match_metrics", None, _no_metrics),
)
"""The optional hooks of a state that the engine calls move after move, each with its default."""
_BY_SLOT = {hook.slot: hook for hook in OPTIONAL_STATE_HOOKS}


def _optional(state: pyspiel.State, slot: str) -> Callable[..., Any]:
    """``state``'s optional hook ``slot`` (an :attr:`OptionalStateHook.slot`), its default applied."""
    hook = _BY_SLOT[slot]
    method = getattr(state, hook.method, None)
    return hook.bound(method if callable(method) else None)
