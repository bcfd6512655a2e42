"""Task adapters: how an LLM plays one task.

An adapter turns a seat's :class:`~deepeval_games.bot.Observation` into the words of this turn (from
the task's prompt templates), and a model's reply back into a move, or into the reason it is not one.
It never sees the game state, only the observation, so it cannot leak what the rules hide.

Register an adapter class for a game short name with :func:`register_adapter`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from deepeval_games.bot import Observation
from deepeval_games.errors import SpecError
from llm_bots.prompts import PromptSet, load_prompts

__all__ = ["Parsed", "TaskAdapter", "adapter_for", "register_adapter"]


@dataclass(frozen=True)
class Parsed:
    """A reply read as a move: ``action`` (or ``text`` for a free-text move), or ``error`` saying why not."""

    action: int | None = None
    text: str = ""
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the reply is a valid move."""
        return self.error is None


class TaskAdapter:
    """Base class: prompts of one task and the parser of its replies."""

    task: str = ""
    """Name of the prompt file (``llm_bots/prompts/<task>.toml``)."""

    def __init__(self) -> None:
        self.prompts: PromptSet = load_prompts(self.task)

    @property
    def prompt_version(self) -> str:
        """Version of the prompt set, recorded with every match."""
        return self.prompts.version

    def role(self, observation: Observation) -> str:
        """The prompt role of this seat (a table of the prompt file)."""
        return "player"

    def turn_prompt(self, observation: Observation, first_turn: bool) -> str:
        """The user message of this turn (the rules too on the first turn)."""
        raise NotImplementedError

    def parse(self, reply: str, observation: Observation) -> Parsed:
        """Read a reply as a move."""
        raise NotImplementedError

    def reask_prompt(self, observation: Observation, error: str) -> str:
        """Ask again, saying what was wrong."""
        return self.prompts.render(self.role(observation), "reask", reason=error, **self.values(observation))

    def values(self, observation: Observation) -> dict[str, Any]:
        """Placeholder values every template of this task may use."""
        return {}

    @staticmethod
    def seat_label(observation: Observation) -> str:
        """The anonymous id the referee gave this seat ("Player 2")."""
        label = next((m.fields.get("seat_label") for m in observation.inbox if m.kind == "rules"), None)
        return label or f"Player {observation.seat + 1}"

    def response_schema(self, observation: Observation) -> Mapping[str, Any] | None:
        """A JSON schema for providers that enforce one (None: free text)."""
        return None


_ADAPTERS: dict[str, type[TaskAdapter]] = {}
AdapterClass = TypeVar("AdapterClass", bound=type[TaskAdapter])


def register_adapter(game_short_name: str) -> Callable[[AdapterClass], AdapterClass]:
    """Class decorator: the adapter LLM bots use for ``game_short_name``."""

    def decorate(cls: AdapterClass) -> AdapterClass:
        _ADAPTERS[game_short_name] = cls
        return cls

    return decorate


def adapter_for(game_short_name: str) -> TaskAdapter:
    """A fresh adapter for a game; :class:`SpecError` if LLMs cannot play it yet."""
    from llm_bots.adapters import code_review, idiom_solitaire, public_goods  # noqa: F401  (registers the built-in adapters)

    if game_short_name not in _ADAPTERS:
        raise SpecError(
            f"LLM bots cannot play {game_short_name} yet: no task adapter is registered for it "
            f"(adapters exist for {', '.join(sorted(_ADAPTERS))})"
        )
    return _ADAPTERS[game_short_name]()
