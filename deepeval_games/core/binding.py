"""How the engine reads a game fast: the string a seat is shown, probed once per game, and a state's hooks, bound once
per match.

The task contract (:mod:`deepeval_games.core.task`) says what a game may offer and what happens without it; this
module is what only the engine needs of it. :func:`playability` probes a seeded playout for the string that shows a
seat its view, since some OpenSpiel games misreport their capability flags (``liars_dice`` has only an
information-state string; ``python_iterated_prisoners_dilemma`` reports none but has one), and for a name of every
move; :func:`observation_text` reads the string it found. :func:`state_hooks` binds every hook of one state object
once, each with the contract's default applied, so that the referee (and the replay of a record's moves) calls them
move after move without asking again which hooks the game offers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, cast

import numpy as np
import pyspiel

from deepeval_games.core.task import OPTIONAL_STATE_HOOKS, OptionalStateHook

__all__ = [
    "ObservationKind",
    "Playability",
    "StateHooks",
    "game_memo",
    "observation_reader",
    "observation_text",
    "playability",
    "state_hooks",
]


# -- the probe: what a seat is shown of a game ---------------------------------------------------------

ObservationKind = Literal["observation", "information_state"]


@dataclass(frozen=True)
class Playability:
    """Whether a seat played through text can play a game, found by probing a playout."""

    observation: ObservationKind | None
    """Which string shows a seat its view (None: neither works)."""
    action_names: bool
    """Every legal move met in the probe has a name of its own: non-empty, and distinct among the moves of its node."""
    reason: str = ""
    """What is missing, when the game cannot be played through text."""

    @property
    def ok(self) -> bool:
        """True when a text player can play the game."""
        return self.observation is not None and self.action_names


_PROBE_STEPS = 64
"""Moves of the probe playout (a long game is probed on its opening)."""
_PROBE_MOVES = 256
"""Legal moves per node whose names the probe reads."""


def _string_or_none(fn: Any, player: int) -> str | None:
    try:
        return str(fn(player))
    except Exception:  # a C++ SpielError, or whatever a Python game's observer raises: "not provided"
        return None


def _probe_playout(game: pyspiel.Game) -> tuple[list[pyspiel.State], list[tuple[pyspiel.State, int]]]:
    """A seeded random playout: every state met (chance and terminal included), and each (state, seat) to move."""
    rng = np.random.default_rng(0)
    state = game.new_initial_state()
    states: list[pyspiel.State] = []
    decisions: list[tuple[pyspiel.State, int]] = []
    for _ in range(_PROBE_STEPS):
        states.append(state.clone())
        if state.is_terminal():
            break
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(outcomes, p=np.asarray(probs) / np.sum(probs))))
            continue
        if state.is_simultaneous_node():
            seats = [p for p in range(game.num_players()) if state.legal_actions(p)]
            decisions.extend((states[-1], seat) for seat in seats)
            joint = [
                int(rng.choice(state.legal_actions(p))) if p in seats else pyspiel.INVALID_ACTION
                for p in range(game.num_players())
            ]
            state.apply_actions(joint)
        else:
            decisions.append((states[-1], state.current_player()))
            state.apply_action(int(rng.choice(state.legal_actions())))
    else:
        states.append(state.clone())
    return states, decisions


def _names_missing(decisions: Sequence[tuple[pyspiel.State, int]]) -> str | None:
    """What is wrong with the move names met in the probe (None: every move has a name of its own)."""
    for state, seat in decisions:
        names: dict[str, int] = {}
        for action in state.legal_actions(seat)[:_PROBE_MOVES]:
            name = _action_name(state, seat, action)
            if name is None or not name.strip():
                return f"a name (action_to_string) for every legal move (move {action} has none)"
            if name in names:
                return f"a distinct name for every legal move (moves {names[name]} and {action} are both {name!r})"
            names[name] = action
    return None


def _action_name(state: pyspiel.State, seat: int, action: int) -> str | None:
    try:
        return str(state.action_to_string(seat, action))
    except Exception:
        return None


_STRINGS: dict[ObservationKind, str] = {
    "observation": "observation_string",
    "information_state": "information_state_string",
}


def _probe(game: pyspiel.Game) -> Playability:
    try:
        states, decisions = _probe_playout(game)
    except Exception as exc:  # a game that breaks on a random playout would break in a match: say so up front
        detail = f"{type(exc).__name__}: {exc}".strip()
        return Playability(None, False, f"{game.get_type().short_name} fails a random playout ({detail[:300]})")
    seats = range(game.num_players())
    kind: ObservationKind | None = None
    for candidate, method in _STRINGS.items():  # in order of preference; stop at the first that always works
        if all(_string_or_none(getattr(state, method), seat) is not None for state in states for seat in seats):
            kind = candidate
            break
    names_missing = _names_missing(decisions)
    missing = []
    if kind is None:
        missing.append("neither an observation string nor an information-state string for every seat")
    if names_missing:
        missing.append(names_missing)
    reason = f"{game.get_type().short_name} provides {' and '.join(missing)}" if missing else ""
    return Playability(kind, names_missing is None, reason)


_MEMO = "_deepeval_games_memo"
_MEMOS: dict[str, dict[str, Any]] = {}
_MEMOS_KEPT = 256


def game_memo(game: pyspiel.Game) -> dict[str, Any]:
    """What the engine remembers of ``game`` (its probe, the referee's facts), by name.

    A Python game carries it as an attribute of its own (pickling a game keeps only its string, so the memo never
    travels); OpenSpiel's own games take no attributes, so theirs is shared by the game string, which is what such a
    game is (OpenSpiel compares games by it). Never keyed by an object's address, which a later game may reuse.
    """
    if type(game) is not pyspiel.Game:
        own: dict[str, Any] | None = getattr(game, "__dict__", None)
        if own is not None:
            memo = own.get(_MEMO)
            if memo is None:
                memo = own[_MEMO] = {}
            return memo
    key = str(game) if type(game) is pyspiel.Game else f"{type(game).__qualname__}:{game}"  # one without a __dict__
    memo = _MEMOS.get(key)
    if memo is None:
        if len(_MEMOS) >= _MEMOS_KEPT:
            _MEMOS.clear()
        memo = _MEMOS[key] = {}
    return memo


_PROBED: dict[str, Playability] = {}
"""The probe of each game string met, shared by the games of one string (a new game object is not probed again)."""


def playability(game: pyspiel.Game) -> Playability:
    """Probe a seeded random playout of ``game``: which string to show a seat, and whether moves have names.

    The strings are tried for every seat at every state of the playout (chance and terminal states
    included, since the referee delivers each seat its view after every move), the observation string
    first; the capability flags of the game type are not trusted. The result is cached per game string.
    """
    memo = game_memo(game)
    known: Playability | None = memo.get("playability")
    if known is None:
        key = str(game)
        known = _PROBED.get(key)
        if known is None:
            known = _PROBED[key] = _probe(game)
        memo["playability"] = known
    return known


def observation_text(state: pyspiel.State, seat: int) -> str:
    """What ``seat`` is shown of ``state``: its observation string, else its information-state string.

    The probe (:func:`playability`) decides which; "" for a game that provides neither.
    """
    kind = playability(state.get_game()).observation
    if kind is None:
        return ""
    return str(getattr(state, _STRINGS[kind])(seat))


def observation_reader(state: pyspiel.State, game: pyspiel.Game | None = None) -> Callable[[int], str]:
    """``seat -> observation_text(state, seat)`` for this state object (which string to read is probed once here,
    not per call): the referee reads every seat's view of its one state, move after move, through it. ``game``:
    the state's game, where the caller holds it."""
    kind = playability(state.get_game() if game is None else game).observation
    if kind is None:
        return _no_text
    method: Callable[[int], Any] = getattr(state, _STRINGS[kind])
    if getattr(type(state), _STRINGS[kind], None) is getattr(pyspiel.State, _STRINGS[kind]):
        return cast("Callable[[int], str]", method)  # OpenSpiel's own: its C++ returns a str already
    return lambda seat: str(method(seat))


def _no_text(seat: int) -> str:
    return ""


# -- one state's hooks, bound once ----------------------------------------------------------------------


class StateHooks(NamedTuple):
    """The contract of one state object, each hook bound once: what the referee calls move after move.

    Every hook is here with its default applied (as the task contract gives it): a hook the game does not offer is
    a shared function that returns the default, so a caller asks and never tests for the hook. OpenSpiel's own
    methods are always present. A Python game's ``_legal_actions`` and ``_action_to_string`` are bound directly:
    OpenSpiel's public methods reach the same Python methods through C++ and back, after node checks that the
    referee has made already (it asks only the seats to move).
    """

    legal_actions: Callable[[int], tuple[int, ...]]
    """``seat -> legal actions`` of a seat to move, a tuple of ints."""
    action_name: Callable[[int, int], str]
    """``(seat, action) -> name`` in the state as it is."""
    observation_text: Callable[[int], str]
    """``seat -> what the seat is shown`` (:func:`observation_text`)."""
    observation_fields: Callable[[int], Mapping[str, Any]]
    """``seat -> structured values`` of its observation, read only (``{}`` without the hook)."""
    penalty: Callable[[int], int | None]
    """``seat -> the task's penalty move`` (None: the referee draws a seeded random legal move)."""
    free_text: Callable[[int], bool]
    """``seat -> whether its move is an utterance`` (False: one of ``legal_actions``)."""
    intern: Callable[[int, str], int | None]
    """``(seat, text) -> the utterance's action`` (None: the game takes no free text; the answer is refused)."""
    combined: Callable[[int], bool]
    """``seat -> whether its reply carries a message to every seat and its move`` (False: separate turns)."""
    judge_turn: Callable[[], bool]
    """Whether the state is at a verdict node (False: chance nodes are sampled from the match seed)."""
    match_metrics: Callable[[], Mapping[str, Any]]
    """A finished match's task metrics, read only (``{}`` without the hook)."""
    may_combine: bool
    """False when no turn of the game is combined (``combined`` is always False: a caller may skip asking)."""
    may_judge: bool
    """False when the game has no verdict node (``judge_turn`` is always False: a caller may skip asking)."""


def _int_tuple(legal: Callable[[int], Sequence[int]]) -> Callable[[int], tuple[int, ...]]:
    """``legal`` as a tuple of plain ints: OpenSpiel gives lists, and a Python game's own ``_legal_actions`` may
    hold ``IntEnum`` members (the iterated prisoner's dilemma), which OpenSpiel's ``legal_actions`` makes ints."""

    def legal_actions(seat: int) -> tuple[int, ...]:
        actions = tuple(legal(seat))
        if actions and (type(actions[0]) is not int or type(actions[-1]) is not int):
            return tuple(map(int, actions))
        return actions

    return legal_actions


_DEFAULTS: Mapping[str, Callable[..., Any]] = {hook.slot: hook.default for hook in OPTIONAL_STATE_HOOKS}
"""The optional hooks of a state that offers none (an OpenSpiel game's), by their field of :class:`StateHooks`."""


class _StateClass(NamedTuple):
    """What a state class offers, read once a class."""

    python_legal: bool
    """It has its own ``_legal_actions`` (a Python game): bound directly."""
    python_names: bool
    """It has its own ``_action_to_string``: bound directly."""
    offered: tuple[OptionalStateHook, ...]
    """The optional hooks it offers (the others take their defaults)."""
    may_combine: bool
    """It has ``is_combined_turn``: a turn may be combined."""
    may_judge: bool
    """It has ``is_judge_turn``: the game may reach a verdict node."""


_STATE_CLASSES: dict[type, _StateClass] = {}
"""What each state class met offers (a class is kept as a key, so it is never another class's)."""


def _state_class(cls: type) -> _StateClass:
    """What the states of ``cls`` offer, read once a class."""
    known = _STATE_CLASSES.get(cls)
    if known is None:
        offered = tuple(hook for hook in OPTIONAL_STATE_HOOKS if callable(getattr(cls, hook.method, None)))
        names = {hook.method for hook in offered}
        known = _STATE_CLASSES[cls] = _StateClass(
            python_legal=callable(getattr(cls, "_legal_actions", None)),
            python_names=callable(getattr(cls, "_action_to_string", None)),
            offered=offered,
            may_combine="is_combined_turn" in names,
            may_judge="is_judge_turn" in names,
        )
    return known


def state_hooks(state: pyspiel.State, game: pyspiel.Game | None = None) -> StateHooks:
    """The hooks of ``state`` (one object: the hooks are bound to it), each with its default applied; ``game``: its
    game, where the caller holds it. Which hooks a state offers is read from its class, once a class."""
    known = _state_class(type(state))
    optional = _DEFAULTS  # an OpenSpiel game offers none: the shared defaults
    if known.offered:
        optional = dict(_DEFAULTS)
        for hook in known.offered:
            optional[hook.slot] = hook.bound(getattr(state, hook.method))
    return StateHooks(
        legal_actions=_int_tuple(state._legal_actions if known.python_legal else state.legal_actions),
        action_name=state._action_to_string if known.python_names else state.action_to_string,
        observation_text=observation_reader(state, game),
        may_combine=known.may_combine,
        may_judge=known.may_judge,
        **optional,
    )
