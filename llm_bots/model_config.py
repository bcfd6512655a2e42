"""Frozen configuration of one model endpoint: which model, where, and how to sample from it.

A `ModelConfig` is what a `[[players]]` entry with a `model` key (or the `[judge]` table) of an experiment
spec becomes. It never holds an API key: `api_key_env` names the environment variable that holds the key, and
the key is read at call time by `llm_bots.transport.call`.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from deepeval_games.core.errors import SpecError
from llm_bots.model_info import LOCAL_PREFIX, is_local, local_name

__all__ = [
    "ABSENT_WHEN_UNSET",
    "BOT_SETTING_KEYS",
    "DEFAULT_MAX_TOKENS",
    "DELIVERY_SETTING_KEYS",
    "JUDGE_DEFAULTS",
    "LOCAL_PREFIX",
    "REASONING_EFFORTS",
    "ModelConfig",
    "ModelConfigError",
    "ModelSettings",
    "effective_settings",
    "resolve_max_tokens",
]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ModelConfigError(SpecError, ValueError):
    """A model configuration (from a spec or from code) is invalid; a `SpecError`, so the CLI reports it."""


class ModelSettings(BaseModel):
    """The settings of an LLM player: every key of its spec table beside `name` and `model`.

    This model is the one documentation of these keys (the experiment spec's JSON Schema shows it). Most
    become a :class:`ModelConfig` (how the model is reached and sampled); `max_reasks`, `prompt_style` and
    `json_mode` (:data:`BOT_SETTING_KEYS`) set how the bot talks to it. Unset keys take the defaults shown
    (an LLM judge samples at temperature 0 unless told otherwise). Validating here gives early, typed
    errors; `ModelConfig.from_mapping` checks the same rules again when the bot is built.
    """

    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True, allow_inf_nan=False)

    api_base: str | None = Field(default=None, json_schema_extra={"pattern": "^https?://"})
    """Base URL of an OpenAI-compatible (or other) endpoint; unset for the provider's default."""
    api_key_env: str | None = Field(default=None, json_schema_extra={"pattern": _ENV_NAME.pattern})
    """NAME of the environment variable holding the API key (never the key itself); unset to let litellm use
    the provider's default variable. Delivery only: not part of match ids."""
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = None
    """Sampling temperature, 0..2; unset: none is sent (the provider's default, as the paper's runs likely had).
    An LLM judge samples at 0 unless its table sets one."""
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    """Upper bound on generated tokens per reply; unset: the task's reply limit for the seat's role (what a full
    answer needs: a paragraph, a program), else 512. A task limit larger than this setting wins. A reply cut by
    the cap is re-asked like an invalid one and recorded (``finish_reasons``, outcome ``truncated``)."""
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    """For reasoning models: how much the model may think before answering (litellm's ``reasoning_effort``);
    unset: none is sent. Reasoning text a model writes into its reply (``<think>...</think>``) is kept in the
    record and never read as the move; reasoning tokens are counted per turn."""
    context_tokens: Annotated[int, Field(ge=1)] | None = None
    """The model's context window in tokens; unset: litellm's model info where it knows the model. A prompt
    estimated larger (at 4 characters a token) is recorded as ``context_overflow`` without a call."""
    cache_control: bool = False
    """Mark each prompt's end for the provider's prompt cache (Anthropic's ``cache_control``, for ``anthropic/``
    and Claude models): the next prompt of the seat, which repeats this one and adds to it, is then read from the
    cache at its cached rate. Other providers cache repeated prefixes on their own (OpenAI) and ignore it.
    Delivery only: not part of match ids, and not in the recorded prompts."""
    input_cost_per_token: Annotated[float, Field(ge=0.0, strict=False)] | None = None
    """The model's price per prompt token in USD, with `output_cost_per_token` (both or neither): every call is
    priced with them instead of litellm's price table (e.g. ``1.5e-7`` for $0.15 per million tokens; ``0`` for a
    model that costs nothing, such as a self-hosted one). A budget (`budget_usd`, eval's ``--budget``) is refused
    for a model that litellm cannot price unless these are set. Delivery only: not part of match ids."""
    output_cost_per_token: Annotated[float, Field(ge=0.0, strict=False)] | None = None
    """The model's price per generated token in USD, with `input_cost_per_token` (both or neither). Delivery only."""
    seed: int | None = None
    """Sampling seed for providers that accept one (dropped silently by the others); unset: one drawn from the
    match seed, so a rerun asks the same question."""
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    """Nucleus sampling mass in (0, 1]; unset for the provider's default."""
    stop: (
        Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1, max_length=4, strict=False)] | None
    ) = None
    """Up to 4 texts that end a reply where the model writes one (not kept in the reply), e.g. ``["\\n"]`` where
    the game asks for a move on one line: a small model that goes on past its answer is then not cut at
    ``max_tokens`` (a cut reply is never read as a move). Unset: none is sent."""
    timeout_s: float = Field(default=60.0, gt=0.0)
    """Wall-clock limit of one attempt, in seconds. Delivery only: not part of match ids."""
    max_retries: int = Field(default=4, ge=0)
    """Retries after the first attempt, for infrastructure failures only (429, 5xx, timeouts). Delivery only."""
    max_concurrency: int = Field(default=4, ge=1)
    """Calls in flight at once for this model and api_base (shared by all bots of a run). Delivery only."""
    rpm: Annotated[int, Field(ge=1)] | None = None
    """Requests per minute this model and api_base may receive, as the provider states its limit: at most this
    many calls start in any 60 seconds (shared by all players of the model); unset: no limit. Delivery only."""
    tpm: Annotated[int, Field(ge=1)] | None = None
    """Tokens per minute, as the provider states its limit: the calls started in any 60 seconds add up to at
    most this many tokens (estimated before a call from the prompt plus the reply cap, corrected by the reply's
    usage); unset: no limit. Delivery only."""
    adaptive_concurrency: bool = True
    """On a rate-limited reply (429) halve this model's concurrency, then add it back one call at a time after
    successes, never above `max_concurrency`. A Retry-After header pauses all calls of the model either way.
    Delivery only."""
    accept_model_ids: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list, strict=False)
    """Model ids that may answer besides the configured one (e.g. an Azure deployment that reports the
    underlying model), compared after the same normalisation as the configured id. Delivery only."""
    backoff_base_s: float = Field(default=1.0, ge=0.0)
    """First retry delay before jitter, in seconds; doubles with every retry. Delivery only."""
    backoff_max_s: float = Field(default=60.0, ge=0.0)
    """Cap of one retry delay, in seconds (a longer Retry-After still wins, up to `retry_after_max_s`).
    Delivery only."""
    retry_after_max_s: float = Field(default=300.0, ge=0.0)
    """Cap on how long a server's Retry-After header may make us wait, in seconds. Delivery only."""
    max_reasks: int = Field(default=2, ge=0)
    """Re-asks after a reply that is not a valid move, before the task's penalty applies."""
    prompt_style: Literal["chat", "human_assistant", "user_bot"] = "chat"
    """`chat` (role messages), `human_assistant` or `user_bot` (one tagged transcript, for completion-style
    models)."""
    context: Literal["full", "window", "state"] | None = None
    """What the seat is shown each turn (:mod:`llm_bots.context`): `full`, the whole pool as one growing chat (the
    paper's); `window`, the rules, the last `context_window_rounds` rounds of pool messages and the current
    observation; `state`, the rules and the current observation. Unset: the task's default (`full` for the
    paper's four tasks). A prompt that would not fit the model's context falls back to the next smaller policy."""
    context_window_rounds: Annotated[int, Field(ge=1)] | None = None
    """Rounds of pool messages a `window` shows; unset: 4."""
    json_mode: Literal["auto", "on", "off"] = "auto"
    """Where a task asks for a JSON answer: `auto` asks for JSON-schema output for local models and where litellm
    reports provider support; `on`; `off`. A turn asked in free text (Idiom Solitaire's players, the Public Goods
    Game with `answer=free`, which `preset = "paper"` sets) has no schema, whatever this says."""

    @model_validator(mode="after")
    def _price_pair(self) -> Self:
        if (self.input_cost_per_token is None) != (self.output_cost_per_token is None):
            raise ValueError(
                "input_cost_per_token and output_cost_per_token are set together (USD per token; 0 for a model that "
                "costs nothing)"
            )
        return self

    @field_validator("api_base")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"'api_base' must be an http(s) URL, got {value!r}")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError(
                "'api_key_env' must be the NAME of an environment variable (like OPENAI_API_KEY), never the key itself"
            )
        return value


BOT_SETTING_KEYS = ("max_reasks", "prompt_style", "json_mode", "context", "context_window_rounds")
"""The :class:`ModelSettings` keys that configure the LLM bot rather than the model endpoint."""

REASONING_EFFORTS = ("minimal", "low", "medium", "high")
"""The values of ``reasoning_effort``."""

DEFAULT_MAX_TOKENS = 512
"""The reply cap of a player that sets no ``max_tokens`` in a task that declares no reply limit for its role."""


def resolve_max_tokens(own: int | None, task_limit: int | None) -> int:
    """The reply cap of a turn: the player's ``max_tokens`` raised to the task's limit for the role when that is
    larger; with neither set, :data:`DEFAULT_MAX_TOKENS`."""
    if own is None:
        return task_limit if task_limit is not None else DEFAULT_MAX_TOKENS
    return own if task_limit is None else max(own, task_limit)


JUDGE_DEFAULTS: Mapping[str, Any] = {"temperature": 0.0, "max_tokens": 1024}
"""An LLM judge's settings where its ``[judge]`` table sets none: deterministic, room for the reasons."""

DELIVERY_SETTING_KEYS = frozenset(
    {
        "api_key_env",
        "max_concurrency",
        "rpm",
        "tpm",
        "adaptive_concurrency",
        "timeout_s",
        "max_retries",
        "backoff_base_s",
        "backoff_max_s",
        "retry_after_max_s",
        "accept_model_ids",
        "cache_control",
        "input_cost_per_token",
        "output_cost_per_token",
    }
)
"""The :class:`ModelSettings` keys that change only how calls are delivered: never part of a match's identity."""

ABSENT_WHEN_UNSET = frozenset({"context", "context_window_rounds", "stop"})
"""Settings left out of the effective settings while unset, so that adding them kept every earlier match id."""


def effective_settings(params: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every setting of a model player after defaults are resolved, delivery keys left out.

    ``params`` are the keys of its spec table beside ``name`` and ``model`` (already validated by the spec);
    ``defaults`` replace the :class:`ModelSettings` defaults first (the judge's temperature 0, ...). The result
    is part of the player's identity in every match id, so a changed default never mixes into an old run.
    """
    known = set(ModelSettings.model_fields)
    merged = {**(defaults or {}), **{k: v for k, v in params.items() if k in known}}
    fields = ModelSettings.model_fields
    # a factory is called directly: pydantic's get_default inspects its signature on every call (built per bot)
    resolved = {
        name: field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
        for name, field in fields.items()
        if name not in merged
    }
    resolved.update(merged)
    return {
        k: v
        for k, v in sorted(resolved.items())
        if k not in DELIVERY_SETTING_KEYS and (v is not None or k not in ABSENT_WHEN_UNSET)
    }


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Where a model lives and how it is sampled. Immutable and hashable.

    Attributes:
        model: a litellm model string (`openai/gpt-4o`, `anthropic/...`, `ollama/llama3`), or `local/smollm2`,
            or `local/<path to a .gguf>` for a llama.cpp server started for the run.

    Every other attribute is a key of a model player's spec table, documented once, in :class:`ModelSettings`.
    """

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    context_tokens: int | None = None
    cache_control: bool = False
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    seed: int | None = None
    top_p: float | None = None
    stop: tuple[str, ...] | None = None
    timeout_s: float = 60.0
    max_retries: int = 4
    max_concurrency: int = 4
    rpm: int | None = None
    tpm: int | None = None
    adaptive_concurrency: bool = True
    accept_model_ids: tuple[str, ...] = ()
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 300.0

    def __post_init__(self) -> None:
        if isinstance(self.accept_model_ids, str):
            raise ModelConfigError(f"{self.model!r}: accept_model_ids must be a list of model ids, not a string")
        object.__setattr__(self, "accept_model_ids", tuple(self.accept_model_ids))
        if isinstance(self.stop, list):
            object.__setattr__(self, "stop", tuple(self.stop))
        self._validate()

    # -- validation --

    def _validate(self) -> None:
        where = f"model config {self.model!r}"
        if not isinstance(self.model, str) or not self.model.strip() or self.model != self.model.strip():
            raise ModelConfigError(f"model must be a non-empty string without surrounding spaces, got {self.model!r}")
        if local_name(self.model) == "":
            raise ModelConfigError(f"{where}: {LOCAL_PREFIX!r} must be followed by 'smollm2' or a path to a .gguf file")
        if self.api_base is not None and (
            not isinstance(self.api_base, str) or not self.api_base.startswith(("http://", "https://"))
        ):
            raise ModelConfigError(f"{where}: api_base must be an http(s) URL, got {self.api_base!r}")
        if self.api_key_env is not None and (
            not isinstance(self.api_key_env, str) or not _ENV_NAME.match(self.api_key_env)
        ):
            raise ModelConfigError(
                f"{where}: api_key_env must be the NAME of an environment variable (like OPENAI_API_KEY), "
                "never the key itself"
            )
        _check_number(where, "temperature", self.temperature, lo=0.0, hi=2.0, optional=True)
        _check_number(where, "top_p", self.top_p, lo=0.0, hi=1.0, optional=True, lo_open=True)
        if self.stop is not None and (
            not isinstance(self.stop, tuple)
            or not 1 <= len(self.stop) <= 4
            or not all(isinstance(text, str) and text for text in self.stop)
        ):
            raise ModelConfigError(f"{where}: stop must be a list of 1 to 4 non-empty texts, got {self.stop!r}")
        _check_int(where, "max_tokens", self.max_tokens, lo=1, optional=True)
        if self.reasoning_effort not in (None, *REASONING_EFFORTS):
            raise ModelConfigError(
                f"{where}: reasoning_effort must be one of {', '.join(REASONING_EFFORTS)}, "
                f"got {self.reasoning_effort!r}"
            )
        _check_int(where, "context_tokens", self.context_tokens, lo=1, optional=True)
        if not isinstance(self.cache_control, bool):
            raise ModelConfigError(f"{where}: cache_control must be true or false, got {self.cache_control!r}")
        _check_int(where, "seed", self.seed, lo=None, optional=True)
        _check_number(where, "input_cost_per_token", self.input_cost_per_token, lo=0.0, hi=None, optional=True)
        _check_number(where, "output_cost_per_token", self.output_cost_per_token, lo=0.0, hi=None, optional=True)
        if (self.input_cost_per_token is None) != (self.output_cost_per_token is None):
            raise ModelConfigError(
                f"{where}: input_cost_per_token and output_cost_per_token are set together (USD per token; 0 for a "
                "model that costs nothing)"
            )
        _check_number(where, "timeout_s", self.timeout_s, lo=0.0, hi=None, lo_open=True)
        _check_int(where, "max_retries", self.max_retries, lo=0)
        _check_int(where, "max_concurrency", self.max_concurrency, lo=1)
        _check_int(where, "rpm", self.rpm, lo=1, optional=True)
        _check_int(where, "tpm", self.tpm, lo=1, optional=True)
        if not isinstance(self.adaptive_concurrency, bool):
            raise ModelConfigError(
                f"{where}: adaptive_concurrency must be true or false, got {self.adaptive_concurrency!r}"
            )
        _check_number(where, "backoff_base_s", self.backoff_base_s, lo=0.0, hi=None)
        _check_number(where, "backoff_max_s", self.backoff_max_s, lo=0.0, hi=None)
        _check_number(where, "retry_after_max_s", self.retry_after_max_s, lo=0.0, hi=None)
        for model_id in self.accept_model_ids:
            if not isinstance(model_id, str) or not model_id.strip():
                raise ModelConfigError(f"{where}: accept_model_ids must hold non-empty strings, got {model_id!r}")

    # -- construction --

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The keys `from_mapping` accepts."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> ModelConfig:
        """Build a config from a spec table (e.g. one `[[players]]` entry, minus non-model keys).

        Raises:
            ModelConfigError: a missing `model`, an unknown key (listing the accepted keys), or a bad value.
        """
        if not isinstance(mapping, Mapping):
            raise ModelConfigError(f"a model config must be a table/mapping, got {type(mapping).__name__}")
        allowed = cls.field_names()
        unknown = sorted(str(k) for k in mapping if k not in allowed)
        name = mapping.get("model", "<no model>")
        if unknown:
            raise ModelConfigError(
                f"model config {name!r}: unknown key(s) {', '.join(unknown)}; accepted keys: {', '.join(allowed)}"
            )
        if "model" not in mapping:
            raise ModelConfigError("model config: the 'model' key is required (a litellm model string)")
        values = dict(mapping)
        if "accept_model_ids" in values and isinstance(values["accept_model_ids"], list):
            values["accept_model_ids"] = tuple(values["accept_model_ids"])
        for key in (
            "temperature",
            "top_p",
            "timeout_s",
            "backoff_base_s",
            "backoff_max_s",
            "retry_after_max_s",
            "input_cost_per_token",
            "output_cost_per_token",
        ):
            if isinstance(values.get(key), int) and not isinstance(values.get(key), bool):
                values[key] = float(values[key])
        return cls(**values)

    def with_valid(self, **changes: Any) -> ModelConfig:
        """A copy with ``changes`` (a seed drawn from a generator, a reply cap from :func:`resolve_max_tokens`):
        :func:`dataclasses.replace`, every field checked again (about 8 µs, once an LLM seat a match or a turn
        whose cap differs: nothing beside a model call)."""
        return dataclasses.replace(self, **changes)

    # -- views --

    @property
    def is_local(self) -> bool:
        """True for `local/...` models, served by a llama.cpp server started for the run."""
        return is_local(self.model)

    @property
    def given_price(self) -> tuple[float, float] | None:
        """The price per token (USD in, USD out) the config gives (``input_cost_per_token``,
        ``output_cost_per_token``); None when it gives none (litellm's price table prices its calls)."""
        if self.input_cost_per_token is None or self.output_cost_per_token is None:
            return None
        return self.input_cost_per_token, self.output_cost_per_token

    def sampling_params(self) -> dict[str, Any]:
        """The settings that change what the model generates: part of every model-call cache key.

        Timeouts, retries and concurrency are left out: they change whether a call succeeds, not its content.
        """
        params: dict[str, Any] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "top_p": self.top_p,
        }
        if self.reasoning_effort is not None:  # absent when unset: match ids and cache keys of older runs hold
            params["reasoning_effort"] = self.reasoning_effort
        if self.stop is not None:  # the same
            params["stop"] = list(self.stop)
        return params


def _check_number(
    where: str,
    name: str,
    value: object,
    *,
    lo: float | None,
    hi: float | None,
    optional: bool = False,
    lo_open: bool = False,
) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ModelConfigError(f"{where}: {name} must be a finite number, got {value!r}")
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise ModelConfigError(f"{where}: {name} must be {'>' if lo_open else '>='} {lo}, got {value!r}")
    if hi is not None and value > hi:
        raise ModelConfigError(f"{where}: {name} must be <= {hi}, got {value!r}")


def _check_int(where: str, name: str, value: object, *, lo: int | None, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelConfigError(f"{where}: {name} must be an integer, got {value!r}")
    if lo is not None and value < lo:
        raise ModelConfigError(f"{where}: {name} must be >= {lo}, got {value!r}")
