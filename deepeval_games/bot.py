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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyspiel

from deepeval_games.message_pool import Message

__all__ = ["Decision", "DeepEvalBot", "Observation", "Outcome", "observe"]


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


@dataclass(frozen=True)
class Observation:
    """Everything a seat may know when it is asked to move."""

    seat: int
    num_seats: int
    game: str
    """The game's short name, e.g. ``deepeval_public_goods``."""
    params: Mapping[str, Any]
    """The game's parameters."""
    round: int
    """Round of Algorithm 1 (1 = first move)."""
    text: str
    """The game's observation string for this seat."""
    fields: Mapping[str, Any]
    """Structured values of the same observation (``observation_fields``), may be empty."""
    legal_actions: tuple[int, ...]
    """Actions the seat may take; empty for a free-text move."""
    inbox: tuple[Message, ...]
    """Every pool message this seat may read, in order, its own moves included."""
    penalty_action: int | None = None
    """What the referee applies if the seat gives no valid answer (None: the first legal action)."""
    free_text: bool = False
    """True when the move is an utterance rather than a choice among ``legal_actions``."""
    action_to_string: Callable[[int], str] = field(default=str, repr=False, compare=False)
    """Names an action for this seat (e.g. ``invest 3``)."""


@dataclass(frozen=True)
class Decision:
    """A bot's answer to one :class:`Observation`, with what it cost."""

    action: int | None
    """The chosen action; None for a free-text move (then ``text`` is the utterance)."""
    text: str = ""
    """The utterance put in the message pool (a reply, or the action's name for scripted bots)."""
    outcome: Outcome = Outcome.OK
    raw_replies: tuple[str, ...] = ()
    """Every raw model reply of this turn, re-asks included."""
    prompt: tuple[Mapping[str, str], ...] = ()
    """The chat messages sent for the first ask."""
    retries: int = 0
    """Re-asks after invalid replies (not infrastructure retries)."""
    model: str | None = None
    """Model id reported by the provider."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    error: str | None = None
    """Why the turn was not ``ok``."""


def observe(state: pyspiel.State, seat: int, inbox: tuple[Message, ...] = (), round: int = 0) -> Observation:
    """Build the :class:`Observation` of ``seat`` from a state; only what the seat may see goes in."""
    game = state.get_game()
    fields_fn = getattr(state, "observation_fields", None)
    penalty_fn = getattr(state, "penalty_action", None)
    free_fn = getattr(state, "is_free_text_turn", None)
    view = state.clone()
    legal = () if state.is_terminal() else tuple(state.legal_actions(seat))
    return Observation(
        seat=seat,
        num_seats=game.num_players(),
        game=game.get_type().short_name,
        params=dict(game.get_parameters()),
        round=round,
        text=state.observation_string(seat) if game.get_type().provides_observation_string else "",
        fields=dict(fields_fn(seat)) if fields_fn else {},
        legal_actions=legal,
        inbox=inbox,
        penalty_action=penalty_fn(seat) if penalty_fn else None,
        free_text=bool(free_fn(seat)) if free_fn else False,
        action_to_string=lambda action: view.action_to_string(seat, action),
    )


class DeepEvalBot(pyspiel.Bot):
    """Base class of every player: scripted baselines and LLM bots alike.

    Subclasses implement :meth:`act`. ``rng`` is the bot's own generator (never a global seed).
    """

    def __init__(self, player_id: int, rng: np.random.Generator | None = None) -> None:
        pyspiel.Bot.__init__(self)
        self.player_id = player_id
        self.rng = rng if rng is not None else np.random.default_rng()

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
            intern = getattr(state, "intern_utterance", None)
            if intern is None:
                raise ValueError("free-text decision for a game without utterances")
            return int(intern(self.player_id, decision.text))
        return int(decision.action)

    def restart_at(self, state: pyspiel.State) -> None:
        """Nothing to reset by default."""

    def inform_action(self, state: pyspiel.State, player_id: int, action: int) -> None:
        """Scripted bots learn from observations, not from other seats' raw actions."""

    def provides_policy(self) -> bool:
        """DeepEval bots return actions, not policies."""
        return False
