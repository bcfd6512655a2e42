"""The players and the judge of a spec: the tables as written (``[[players]]`` entries and ``[judge]``, each a scripted
bot, a language model or a person) and :class:`PlayerSpec`, a player as the runner uses it.

Each player is identified by :meth:`PlayerSpec.identity` (part of every match id), computed from the table as
written. The keys of an LLM player's table are those of :class:`llm_bots.model_config.ModelSettings`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    GetCoreSchemaHandler,
    StrictBool,
    StrictStr,
    Tag,
    field_validator,
)
from pydantic_core import core_schema

from deepeval_games.app.spec.tables import TABLE, Name
from llm_bots.model_config import DELIVERY_SETTING_KEYS, ModelSettings

__all__ = [
    "ALLOW_PLAYER_MODEL",
    "DELIVERY_KEYS",
    "HUMAN_BOT",
    "KIND_ERROR",
    "BotJudge",
    "BotPlayer",
    "FromTable",
    "HumanJudge",
    "HumanPlayer",
    "JudgeTable",
    "ModelJudge",
    "ModelPlayer",
    "PlayerSpec",
    "PlayerTable",
]

DELIVERY_KEYS = DELIVERY_SETTING_KEYS
"""Model settings that change how calls are delivered, never what a model is asked."""

HUMAN_BOT = "human"
"""The registered bot that seats a person (:mod:`llm_bots.players.human`): ``human = true`` is ``bot = "human"``."""

ALLOW_PLAYER_MODEL = "allow_player_model"
"""The ``[judge]`` key that lets a player's model judge (:data:`llm_bots.judge.ALLOW_PLAYER_MODEL`; a test checks they
agree)."""


class BotPlayer(BaseModel):
    """A ``[[players]]`` entry played by a registered scripted bot (``deepeval-games bots`` lists them)."""

    model_config = TABLE

    name: Name
    """The player's name in tables and match records (unique in the spec)."""
    bot: Name
    """The registered name of the scripted bot, e.g. ``pgg_free_rider``."""
    params: dict[str, Any] = Field(default_factory=dict)
    """The bot's parameters (``[players.params]``), checked by the bot."""


class ModelPlayer(ModelSettings):
    """A ``[[players]]`` entry played by a language model: ``model`` plus the model settings, side by side."""

    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, use_attribute_docstrings=True, allow_inf_nan=False
    )

    name: Name
    """The player's name in tables and match records (unique in the spec)."""
    model: StrictStr
    """A litellm model string (``openai/gpt-4o``, ``anthropic/...``, ``ollama/llama3``), ``local/smollm2`` or
    ``local/<path to a .gguf>`` (a llama.cpp server started for the run)."""

    @field_validator("model")
    @classmethod
    def _model_string(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("'model' must be a litellm model string like 'openai/gpt-4o'")
        if not value.isprintable():
            raise ValueError("'model' may not hold control characters (a litellm model string or local/...)")
        return value


class BotJudge(BotPlayer):
    """``[judge]`` with ``bot``: a registered scripted judge (``judge_fixed``, ``judge_pass_rate``)."""

    name: Name = "judge"
    """The judge's name (default ``judge``)."""


class ModelJudge(ModelPlayer):
    """``[judge]`` with ``model``: an LLM judge. It samples at temperature 0 with up to 1024 tokens unless
    set otherwise, and may not be a player's model unless ``allow_player_model`` is true."""

    name: Name = "judge"
    """The judge's name (default ``judge``)."""
    allow_player_model: StrictBool = False
    """Let a model that also plays judge (a warning about self-preference is logged)."""


class HumanPlayer(BaseModel):
    """A ``[[players]]`` entry played by a person at the terminal (``human = true``, the same as ``bot = "human"``).

    A run with a human seat plays its matches one at a time, with no model-call cache and no time limit for the
    person."""

    model_config = TABLE

    name: Name
    """The player's name in tables and match records (unique in the spec)."""
    human: Literal[True]
    """``true``: a person plays this seat (or judges, in ``[judge]``)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """The human seat's settings (``[players.params]``): ``terminator`` (the line that ends a multi-line answer,
    default ``.``) and ``max_reasks`` (re-asks after an invalid move, default 2, as for models)."""


class HumanJudge(HumanPlayer):
    """``[judge]`` with ``human = true``: a person gives the scores and reasons at each verdict node."""

    name: Name = "human judge"
    """The judge's name (default ``human judge``)."""


def _kind(value: Any) -> str | None:
    """``bot``, ``model`` or ``human`` for a player table with exactly one of these keys; None otherwise."""
    if isinstance(value, PlayerSpec):
        return value.kind
    if not isinstance(value, Mapping):
        return None
    kinds = [key for key in ("bot", "model", "human") if key in value]
    return kinds[0] if len(kinds) == 1 else None


KIND_ERROR = "give exactly one of 'bot' (a scripted bot), 'model' (a litellm model) or 'human = true' (a person)"

PlayerTable = Annotated[
    Annotated[BotPlayer, Tag("bot")] | Annotated[ModelPlayer, Tag("model")] | Annotated[HumanPlayer, Tag("human")],
    Discriminator(_kind, custom_error_type="player_kind", custom_error_message=KIND_ERROR),
]
"""One ``[[players]]`` entry as written."""
JudgeTable = Annotated[
    Annotated[BotJudge, Tag("bot")] | Annotated[ModelJudge, Tag("model")] | Annotated[HumanJudge, Tag("human")],
    Discriminator(_kind, custom_error_type="player_kind", custom_error_message=KIND_ERROR),
]
"""The ``[judge]`` table as written."""


class PlayerSpec(BaseModel):
    """A player (or the judge) as the runner uses it: a scripted bot (``bot``) or an LLM bot (``model``).

    Made from a ``[[players]]`` entry by :func:`parse_spec`, or directly in Python.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    name: str
    """The player's name."""
    bot: str | None = None
    """The scripted bot's registered name; None for an LLM."""
    model: str | None = None
    """The litellm model string; None for a scripted bot."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Bot parameters (``[players.params]``) or, for a model, the model settings (every other key), as written."""

    @property
    def kind(self) -> str:
        """``bot`` or ``model`` (a person is the bot ``human``, see :attr:`is_human`)."""
        return "model" if self.model is not None else "bot"

    @property
    def is_human(self) -> bool:
        """Whether a person plays (or judges): ``human = true``, or ``bot = "human"``."""
        return self.bot == HUMAN_BOT

    def identity(self) -> dict[str, Any]:
        """What makes this player this player: part of every match id.

        Settings that change only how calls are delivered (timeouts, retries, concurrency, the key's
        variable, accepted model ids) are left out, so changing them neither renames matches nor misses
        the model-call cache.
        """
        played = {k: v for k, v in self.params.items() if k not in DELIVERY_KEYS}
        return {"name": self.name, "bot": self.bot, "model": self.model, "params": played}

    def to_table(self) -> dict[str, Any]:
        """The spec table that describes this player."""
        if self.kind == "model":
            return {"name": self.name, "model": self.model, **self.params}
        return {"name": self.name, "bot": self.bot, "params": dict(self.params)}


class FromTable:
    """Annotation: validate the value as a spec table of ``table``, keep a :class:`PlayerSpec` of it.

    The JSON Schema shows the table; the values of a model's settings are kept as written (so ``1`` and
    ``1.0`` stay apart in :meth:`PlayerSpec.identity`, as they always did).
    """

    def __init__(self, table: Any) -> None:
        self.table = table

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_wrap_validator_function(
            self._resolve,
            handler.generate_schema(self.table),
            serialization=core_schema.plain_serializer_function_ser_schema(PlayerSpec.to_table),
        )

    @staticmethod
    def _resolve(value: Any, validate: Callable[[Any], Any]) -> PlayerSpec:
        if isinstance(value, PlayerSpec):
            return value
        table = validate(value)
        raw = dict(value) if isinstance(value, Mapping) else table.model_dump(exclude_unset=True)
        if isinstance(table, BotPlayer):
            return PlayerSpec(name=table.name, bot=table.bot, params=dict(raw.get("params", {})))
        if isinstance(table, HumanPlayer):
            return PlayerSpec(name=table.name, bot=HUMAN_BOT, params=dict(raw.get("params", {})))
        settings = {k: v for k, v in raw.items() if k not in ("name", "model")}
        return PlayerSpec(name=table.name, model=table.model, params=settings)
