"""Task adapters: how an LLM answers in one task.

An LLM seat reads the rules and its observations from the message pool (what the referee delivered to it);
the adapter adds only what a model needs to *answer*: the answer ``format`` appended to each turn's
message and the ``reask`` text after an unusable reply (both from the task's prompt file), a JSON schema
for providers that enforce one, and the parser that turns a reply into a move or into the reason it is not
one. It never sees the game state, only the observation, so it cannot leak what the rules hide.

:class:`GenericAdapter` plays any OpenSpiel game with no task code: the legal moves by their
``action_to_string`` names, a reply read back by name, a JSON schema listing the names. A task whose
answers need more registers its own adapter class for its game's short name with :func:`register_adapter`
(built-in and outside packages alike, through the ``deepeval_games.adapters`` entry point group).

The reasons the generic adapter gives for an unusable reply are data too: the ``[reasons]`` table of the
built-in ``llm_bots/prompts/generic.toml``, also when a game brings its own prompt file for the answer texts.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import pyspiel

from deepeval_games.core import task
from deepeval_games.core.binding import playability
from deepeval_games.core.bot import Observation
from deepeval_games.core.errors import SpecError
from deepeval_games.core.message_pool import seat_label
from deepeval_games.core.records import JUDGE_SEAT
from deepeval_games.core.registry.entry_points import load_entry_points
from llm_bots.parsing import json_objects, normalize
from llm_bots.prompts import PromptSet, load_prompt_file, load_prompts

__all__ = [
    "ENTRY_POINT_GROUP",
    "GenericAdapter",
    "Parsed",
    "TaskAdapter",
    "adapter_for",
    "cut_off_reason",
    "read_move_name",
    "register_adapter",
    "registered_adapters",
]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "deepeval_games.adapters"

_GENERIC = "generic"
"""The built-in prompt file of the generic adapter; its ``[reasons]`` are the generic parser's re-ask reasons."""


def _reason(name: str, **values: Any) -> str:
    """Why a reply is not a move: a template of ``[reasons]`` in the built-in ``generic.toml`` (never a game's file)."""
    return load_prompts(_GENERIC).render("reasons", name, **values).strip()


def cut_off_reason(limit: int) -> str:
    """The re-ask reason of a reply cut by the token cap of ``limit`` tokens (``finish_reason`` ``length``)."""
    return _reason("cut_off", limit=limit)


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

    @classmethod
    def move(cls, action: int | None, text: str = "") -> Parsed:
        """``Parsed(action=action, text=text)``: a reply read as a valid move."""
        return cls(action=action, text=text)


class TaskAdapter:
    """Base class: the answer texts of one task and the parser of its replies.

    The prompt file is the built-in set ``task`` (:func:`~llm_bots.prompts.load_prompts`) or, when ``prompt_path``
    is set, that file.
    """

    task: str = ""
    """Name of a built-in prompt set (``llm_bots/<task>/prompts.toml``, or ``llm_bots/prompts/<task>.toml``)."""
    prompt_path: Path | None = None
    """A prompt file anywhere (a task's own, beside its game); overrides ``task``."""
    context_policy: str = "full"
    """The context policy of an LLM seat that sets none (:mod:`llm_bots.context`): the paper's whole pool."""

    def __init__(self, game: pyspiel.Game | None = None) -> None:
        self.game = game
        self.prompts: PromptSet = load_prompt_file(self.prompt_path) if self.prompt_path else load_prompts(self.task)

    @property
    def prompt_version(self) -> str:
        """Version of the prompt set, recorded with every match and part of its id."""
        return self.prompts.version

    def role(self, observation: Observation) -> str:
        """The prompt role of this seat (a table of the prompt file)."""
        return "player"

    def values(self, observation: Observation) -> dict[str, Any]:
        """Placeholder values every template of this task may use."""
        return {}

    def format_text(self, observation: Observation) -> str:
        """How to answer this turn: appended to the turn's pool messages."""
        return self.prompts.render(self.role(observation), "format", **self.values(observation)).strip()

    def reask_text(self, observation: Observation, error: str) -> str:
        """Ask again, saying what was wrong."""
        return self.prompts.render(self.role(observation), "reask", reason=error, **self.values(observation)).strip()

    def parse(self, reply: str, observation: Observation) -> Parsed:
        """Read a reply as a move."""
        raise NotImplementedError

    @staticmethod
    def seat_label(observation: Observation) -> str:
        """The anonymous id the referee gave this seat ("Player 2")."""
        label = next((m.fields.get("seat_label") for m in observation.inbox if m.kind == "rules"), None)
        return str(label) if label else seat_label(observation.seat)

    def response_schema(self, observation: Observation) -> Mapping[str, Any] | None:
        """A JSON schema for providers that enforce one (None: free text)."""
        return None


_TRIM = " \t\r\n\"'`.“”‘’"


def _loose(name: str) -> str:
    """A name up to case, runs of spaces, surrounding quotes or backticks and a final period."""
    return re.sub(r"\s+", " ", normalize(name)).strip(_TRIM).casefold()


def _spaceless(name: str) -> str:
    """A name up to case, quotes, a final period and every space (``x(0, 0)`` is ``x(0,0)``)."""
    return re.sub(r"\s+", "", _loose(name))


_MATCHERS: tuple[Callable[[str], str], ...] = (normalize, _loose, _spaceless)
"""Ever looser readings of a name; the first that matches exactly one legal move decides."""


def read_move_name(said: str, names: Mapping[str, int]) -> Parsed:
    """The legal move ``said`` names (``names``: every legal move by its name), or why it names none.

    ``said`` is compared with every name under ever looser readings (:data:`_MATCHERS`): exactly, then up to
    case, spacing, quotes and a final period, then ignoring spaces altogether. The first reading that matches
    exactly one move decides; one that matches several moves is ambiguous, and the reply is re-asked.
    """
    for match in _MATCHERS:
        want = match(said)
        found: dict[int, str] = {}
        for name, action in names.items():
            if match(name) == want:
                found.setdefault(action, name)
        if len(found) == 1:
            return Parsed(action=next(iter(found)))
        if len(found) > 1:
            listed = ", ".join(json.dumps(n, ensure_ascii=False) for n in found.values())
            return Parsed(error=_reason("ambiguous", said=_shown(said), listed=listed))
    return Parsed(error=_reason("not_legal", said=_shown(said)))


def _shown(said: str) -> str:
    return json.dumps(said if len(said) <= 60 else said[:57] + "...", ensure_ascii=False)


def _said_move(text: str) -> str | None:
    """What a normalised reply names as its move: the ``"move"`` of its last JSON object that has one, else the
    whole reply; None when that ``"move"`` is no text or number (a list, an object, null)."""
    moves = [obj["move"] for obj in json_objects(text) if "move" in obj]
    if not moves:
        return text
    last = moves[-1]
    if isinstance(last, str):
        return last
    if isinstance(last, (int, float)) and not isinstance(last, bool):
        return str(last)
    return None


class GenericAdapter(TaskAdapter):
    """Any game, no task code: legal moves by name, replies read back by name (see the module docs).

    A reply is read after NFKC normalisation: the ``"move"`` of its last JSON object that has one, else the
    whole reply; it must name a legal move, exactly, else up to case, spacing, quotes and a final period, else
    ignoring spaces (:func:`read_move_name`). An unknown or ambiguous name is re-asked with the reason (from the
    ``[reasons]`` of the built-in ``generic.toml``, whichever prompt file gives the answer texts).
    """

    task = _GENERIC

    def __init__(self, game: pyspiel.Game | None = None) -> None:
        own = task.prompt_file(game) if game is not None else None
        if own is not None:
            self.prompt_path = own
        super().__init__(game)

    def role(self, observation: Observation) -> str:
        """``judge`` at a judge node of a game whose prompt file has a judge role (its verdicts by name), else
        ``player``."""
        return "judge" if observation.seat == JUDGE_SEAT and "judge" in self.prompts.roles else "player"

    def values(self, observation: Observation) -> dict[str, Any]:
        names = list(observation.action_names())
        return {"seat_label": self.seat_label(observation), "moves": json.dumps(names, ensure_ascii=False)}

    @staticmethod
    def _kind(observation: Observation) -> str:
        """The prefix of the turn's answer texts: a combined turn's, a free-text turn's, or a move's (none)."""
        return "combined_" if observation.combined else "free_text_" if observation.free_text else ""

    def format_text(self, observation: Observation) -> str:
        name = self._kind(observation) + "format"
        return self.prompts.render(self.role(observation), name, **self.values(observation)).strip()

    def reask_text(self, observation: Observation, error: str) -> str:
        name = self._kind(observation) + "reask"
        return self.prompts.render(self.role(observation), name, reason=error, **self.values(observation)).strip()

    def _parse_combined(self, text: str, observation: Observation) -> Parsed:
        """A combined turn's reply: the last JSON object with a ``"move"``, which must carry a ``"message"`` too
        (the ``no_message`` reason of the game's prompt file when it does not)."""
        said = _said_move(text)
        if said is None or said == text:
            return Parsed(error=_reason("no_move"))
        message = [obj for obj in json_objects(text) if "move" in obj][-1].get("message")
        if not isinstance(message, str) or not message.strip():
            return Parsed(error=self.prompts.render(self.role(observation), "no_message").strip())
        parsed = read_move_name(said, observation.action_names())
        return replace(parsed, text=message.strip()) if parsed.ok else parsed

    def parse(self, reply: str, observation: Observation) -> Parsed:
        """Read a reply as a legal move by its name (see the class docs); a free-text turn takes the whole reply."""
        if observation.free_text:
            text = (reply or "").strip()
            return Parsed(text=text) if text else Parsed(error=_reason("empty"))
        text = normalize(reply)
        if not text:
            return Parsed(error=_reason("empty"))
        if observation.combined:
            return self._parse_combined(text, observation)
        said = _said_move(text)
        if said is None:
            return Parsed(error=_reason("no_move"))
        parsed = read_move_name(said, observation.action_names())
        return replace(parsed, text=reply) if parsed.ok else parsed

    def response_schema(self, observation: Observation) -> Mapping[str, Any] | None:
        if observation.free_text:
            return None
        properties: dict[str, Any] = {"move": {"type": "string", "enum": list(observation.action_names())}}
        if observation.combined:  # the message first: the model says it, then moves
            properties = {"message": {"type": "string"}, **properties}
        return {
            "type": "json_schema",
            "json_schema": {
                "name": "move",
                "strict": True,
                "schema": {
                    "type": "object",
                    "properties": properties,
                    "required": list(properties),
                    "additionalProperties": False,
                },
            },
        }


_ADAPTERS: dict[str, type[TaskAdapter]] = {}
AdapterClass = TypeVar("AdapterClass", bound=type[TaskAdapter])


def register_adapter(game_short_name: str) -> Callable[[AdapterClass], AdapterClass]:
    """Class decorator: the adapter LLM bots use for ``game_short_name`` (instead of the generic one)."""

    def decorate(cls: AdapterClass) -> AdapterClass:
        _ADAPTERS[game_short_name] = cls
        return cls

    return decorate


def registered_adapters() -> dict[str, type[TaskAdapter]]:
    """Every registered task adapter, by game short name (entry points loaded)."""
    load_entry_points(ENTRY_POINT_GROUP)
    return dict(_ADAPTERS)


def adapter_for(game: pyspiel.Game | str) -> TaskAdapter:
    """A fresh adapter for a game: its task adapter, else the generic one.

    :class:`SpecError` when an LLM cannot play the game through text (the probe's reason says what is missing).
    """
    short = game if isinstance(game, str) else game.get_type().short_name
    cls = registered_adapters().get(short)
    if cls is not None:
        return cls(None if isinstance(game, str) else game)
    if not isinstance(game, str):
        playable = playability(game)
        if not playable.ok:
            raise SpecError(f"an LLM cannot play {game}: {playable.reason}")
        return GenericAdapter(game)
    return GenericAdapter()
