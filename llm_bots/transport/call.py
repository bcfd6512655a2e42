"""The one way this project calls a model: `complete(config, messages)` over litellm, robust to failing APIs.

What it guarantees, whatever the provider:

- every attempt has a timeout (litellm's own, plus an asyncio guard a little longer);
- no hidden retries: litellm's `num_retries=0` and the OpenAI SDK's `max_retries=0`; our single retry loop
  uses exponential backoff with full jitter and honours `Retry-After` / `retry-after-ms` on 429;
- every failure is classified (`classify_error`): infrastructure faults (429, 5xx, timeouts, connection
  errors, unparsable replies) are retried and end in `InfraError`; configuration faults (401, 403, 404, 400,
  ...) raise `FatalModelError` naming the model at once; a context-window overflow and a provider refusal are
  *outcomes* of a `Completion`, not exceptions, because they are the model's own result;
- the model id a response reports is checked against the configured one (`model_id_matches`); a different
  model raises `ModelMismatchError` unless the config accepts it;
- text crossing the boundary is valid: a reply (or its reasoning) holding code points UTF-8 cannot encode (a lone
  surrogate) has them replaced by U+FFFD before it is returned, and the call's last attempt records what was
  replaced (``error`` starting with :data:`UNENCODABLE`); so does a reply whose JSON escapes stand for a lone
  surrogate (``"\\ud83d"``: kept as written, read as U+FFFD by :func:`llm_bots.parsing.json_objects`); a prompt
  message holding one is sent with U+FFFD too (:func:`valid_completion` does the same for completions kept
  elsewhere, such as the call cache);
- cost (USD, 0.0 when litellm does not know the price), tokens, latency and every attempt (status, HTTP status,
  error class, wait) come back in `Completion`;
- a prompt that cannot fit the model's context (`context_tokens`, else litellm's model info where it knows the
  model; the prompt's size estimated at `CHARS_PER_TOKEN` characters a token) is a `context_overflow` outcome
  without a call;
- a shared `Budget` stops new calls once spent; the process's limiter (`llm_bots.transport.limits`) holds each model's
  concurrency, requests and tokens per minute, cuts concurrency on 429s and pauses the model on Retry-After;
- litellm's synchronous set-up of a call to an OpenAI-compatible model runs on the event loop's thread, not on a
  worker thread (:mod:`llm_bots.inline_setup`);
- litellm's connections come from one aiohttp session per event loop with no pool limit of its own, so a call the
  limiter admits never queues for a connection;
- `local/...` models are routed to a llama.cpp server started once for the run (`llm_bots.local.server`).

litellm is imported only when a call is made (`llm_bots.model_info.litellm`): a run whose calls all come from the
model-call cache never pays its import. Importing this module sets `LITELLM_LOCAL_MODEL_COST_MAP=True` (unless
already set), so litellm prices calls from its installed price table instead of fetching one from the internet, and
litellm's "Give Feedback" banners are silenced: errors are reported by the exceptions below. The cost of a call is
the one litellm computed while answering it (not priced a second time); once litellm has answered a model and
endpoint without a price, their later calls pass it a price of 0.0 a token, so it does not search its price table on
every call for a model it cannot price (:func:`_learn_unpriced`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import enum
import functools
import logging
import os
import random
import re
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from pydantic import BaseModel

from deepeval_games.core.bot import CallAttempt
from deepeval_games.core.errors import FatalRunError, InfrastructureError
from deepeval_games.core.quoting import surrogate_escapes, valid_text
from llm_bots import inline_setup, model_info
from llm_bots.model_config import LOCAL_PREFIX, ModelConfig
from llm_bots.model_info import litellm as _litellm
from llm_bots.transport import limits

__all__ = [
    "CHARS_PER_TOKEN",
    "Budget",
    "BudgetExceeded",
    "Completion",
    "ErrorKind",
    "FatalModelError",
    "InfraError",
    "ModelCallError",
    "ModelMismatchError",
    "Outcome",
    "classify_error",
    "complete",
    "context_limit",
    "estimate_tokens",
    "model_id_matches",
    "supports_json_schema",
    "valid_completion",
]

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
"""Characters per token assumed when a prompt's size is estimated before a call (a rough figure for English)."""
_GUARD_GRACE_S = 2.0  # the asyncio guard fires this long after litellm's own timeout should have
_jitter = random.Random()  # jitter only spreads retries in time; it never touches results


# ----------------------------------------------------------------------------------------------------------
# outcomes, error kinds and exceptions


class Outcome(str, enum.Enum):
    """What a finished call produced."""

    OK = "ok"
    REFUSAL = "refusal"  # the provider's content filter stopped the reply (or the model declined formally)
    CONTEXT_OVERFLOW = "context_overflow"  # the prompt does not fit the model's context window


class ErrorKind(str, enum.Enum):
    """How a failed attempt is handled."""

    INFRA = "infra"  # 429, 5xx, timeouts, connection errors, unparsable replies: retried
    FATAL = "fatal"  # 401, 403, 404, 400 and other client errors: the run must stop
    CONTEXT_OVERFLOW = "context_overflow"
    REFUSAL = "refusal"
    UNKNOWN = "unknown"  # not a model-call error at all (a bug): re-raised unchanged


class ModelCallError(Exception):
    """Base of the errors `complete` raises; `model` is the configured model string."""

    def __init__(self, message: str, *, model: str) -> None:
        super().__init__(message)
        self.model = model


class InfraError(ModelCallError, InfrastructureError):
    """Infrastructure failures outlasted every retry. Never the model's fault: the runner reschedules."""

    def __init__(self, message: str, *, model: str, attempts: int, last_error: BaseException | None) -> None:
        super().__init__(message, model=model)
        self.attempts = attempts
        self.last_error = last_error


class FatalModelError(ModelCallError, FatalRunError):
    """The configuration is wrong (key, permission, model name, request): the runner stops the run."""

    def __init__(self, message: str, *, model: str, status_code: int | None = None) -> None:
        super().__init__(message, model=model)
        self.status_code = status_code


class ModelMismatchError(FatalModelError):
    """A response came from another model than the configured one (and the config does not accept it)."""

    def __init__(self, message: str, *, model: str, reported_model: str) -> None:
        super().__init__(message, model=model)
        self.reported_model = reported_model


class BudgetExceeded(ModelCallError, FatalRunError):
    """The shared budget is spent; no new call is started and the runner stops (resume with a larger one)."""


# ----------------------------------------------------------------------------------------------------------
# results


@dataclasses.dataclass(frozen=True)
class Completion:
    """One finished model call.

    Attributes:
        text: the reply text ("" for a refusal without text, a context overflow, or an empty reply).
        model: the model id the response reports (the configured one for a context overflow).
        finish_reason: as reported (`stop`, `length`, `content_filter`, ...); None when there was no response.
        prompt_tokens / completion_tokens: as reported (0 when unknown).
        cost_usd: litellm's price of the call; 0.0 when the price is unknown (local and unlisted models).
        latency_s: duration of the successful attempt.
        elapsed_s: duration of the whole call, retries and backoff included.
        attempts: attempts made (1 = no retry).
        outcome: ok, refusal or context_overflow.
        usage: the raw usage block of the response.
        requested_model: the litellm model string actually sent (after `local/...` routing).
        attempt_log: every attempt, in order (status, HTTP status, error class, wait after it).
        system_fingerprint: the provider's backend configuration id, where it sends one (OpenAI does).
        reasoning_tokens: completion tokens spent on reasoning, where the provider reports them (0 otherwise).
        reasoning: reasoning text the provider sent apart from the reply (litellm's ``reasoning_content``, also
            a leading ``<think>`` block it split off); "" when none.
        cut_chars: characters cut from `text` by the caller's maximum reply length before it was kept (0: none).
        cached_tokens: prompt tokens the provider read from its prompt cache (``prompt_tokens_details.cached_tokens``,
            Anthropic's ``cache_read_input_tokens``); part of `prompt_tokens`, priced by litellm at the cached rate.
        cache_write_tokens: prompt tokens written to the provider's prompt cache where it charges for that
            (Anthropic's ``cache_creation_input_tokens``); 0 otherwise.
    """

    text: str
    model: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float
    attempts: int
    outcome: Outcome = Outcome.OK
    usage: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False)
    elapsed_s: float = 0.0
    requested_model: str = ""
    attempt_log: tuple[CallAttempt, ...] = ()
    system_fingerprint: str | None = None
    reasoning_tokens: int = 0
    reasoning: str = ""
    cut_chars: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0

    def __post_init__(self) -> None:
        # a completion read back from the call cache carries its attempts as plain mappings
        log = tuple(a if isinstance(a, CallAttempt) else CallAttempt(**a) for a in self.attempt_log)
        object.__setattr__(self, "attempt_log", log)

    @classmethod
    def _made(cls, **values: Any) -> Completion:
        """A completion from every field's value, ``attempt_log`` a tuple of :class:`CallAttempt` (what
        :func:`complete` builds): the same object as the constructor's, without a frozen dataclass's
        per-field ``__setattr__`` (one is made for every reply)."""
        return cls._of(values)

    @classmethod
    def _of(cls, values: dict[str, Any]) -> Completion:
        """:meth:`_made` from the dict of every field's value (kept as the completion's own)."""
        completion = object.__new__(cls)
        object.__setattr__(completion, "__dict__", values)
        return completion


class Budget:
    """A spending limit in USD shared by many calls and threads; `complete` refuses to start once spent.

    Calls already in flight finish and are charged, so the total may overshoot by at most their cost.
    """

    def __init__(self, limit_usd: float) -> None:
        if not limit_usd >= 0:
            raise ValueError(f"budget limit must be >= 0 USD, got {limit_usd!r}")
        self.limit_usd = float(limit_usd)
        self._spent = 0.0
        self._calls = 0
        self._lock = threading.Lock()

    @property
    def spent_usd(self) -> float:
        """USD charged so far."""
        with self._lock:
            return self._spent

    @property
    def calls(self) -> int:
        """Calls charged so far."""
        with self._lock:
            return self._calls

    @property
    def remaining_usd(self) -> float:
        """USD left (never negative)."""
        with self._lock:
            return max(0.0, self.limit_usd - self._spent)

    @property
    def exhausted(self) -> bool:
        """True once the spent amount reached the limit."""
        with self._lock:
            return self._spent >= self.limit_usd

    def charge(self, cost_usd: float) -> None:
        """Add the cost of one finished call."""
        with self._lock:
            self._spent += max(0.0, float(cost_usd))
            self._calls += 1

    def check(self, model: str) -> None:
        """Raise `BudgetExceeded` if no new call may start."""
        with self._lock:
            spent = self._spent
        if spent >= self.limit_usd:
            raise BudgetExceeded(
                f"budget of {self.limit_usd:.4f} USD is spent ({spent:.4f} USD); not calling {model}",
                model=model,
            )


# ----------------------------------------------------------------------------------------------------------
# model ids

_DATE_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{3,4})$")


def _split_model_id(model_id: str) -> tuple[str, str | None]:
    """Lower-case, drop provider prefixes (`openai/`, `ollama/`...), split off an Ollama-style `:tag`."""
    name = model_id.strip().lower().rsplit("/", 1)[-1]
    if ":" in name:
        name, tag = name.split(":", 1)
        return name, (tag or None)
    return name, None


def _undated(name: str) -> str:
    name = name.removesuffix("-latest")
    return _DATE_SUFFIX.sub("", name)


def model_id_matches(configured: str, reported: str, accept: Sequence[str] = ()) -> bool:
    """True if `reported` is the configured model or one of `accept`, up to prefixes, tags and dates (see
    :func:`_model_id_matches`); remembered per (configured, reported, accept), as every reply asks again."""
    return _model_id_matches(configured, reported, tuple(accept))


@functools.lru_cache(maxsize=1024)
def _model_id_matches(configured: str, reported: str, accept: tuple[str, ...] = ()) -> bool:
    """True if `reported` is the configured model or one of `accept`, up to prefixes, tags and dates.

    Tolerated: provider prefixes (`openai/foo` vs `foo`), an Ollama `:latest` tag or a tag on one side only,
    case, and a dated/numbered version of an undated configured id (`gpt-4o` vs `gpt-4o-2024-08-06`,
    `claude-3-5-sonnet-latest` vs `claude-3-5-sonnet-20241022`). Not tolerated: another model (`gpt-4o` vs
    `gpt-4o-mini`), another explicit tag (`llama3:70b` vs `llama3:8b`), another date when the config pins one.
    An empty reported id cannot be checked and matches.
    """
    if not reported or not reported.strip():
        return True
    rep_name, rep_tag = _split_model_id(reported)
    for candidate in (configured, *accept):
        cfg_name, cfg_tag = _split_model_id(candidate)
        if cfg_tag and rep_tag and cfg_tag != rep_tag and "latest" not in (cfg_tag, rep_tag):
            continue
        if rep_name == cfg_name:
            return True
        configured_is_undated = _undated(cfg_name) == cfg_name.removesuffix("-latest")
        if configured_is_undated and _undated(rep_name) == _undated(cfg_name):
            return True
    return False


def supports_json_schema(model: str) -> bool:
    """Whether the provider can constrain replies to a JSON schema (`response_format`), per litellm's table.

    `local/...` models are served by llama.cpp, which supports JSON-schema constrained decoding. Never raises:
    an unknown model is reported as not supporting it.
    """
    if model.startswith(LOCAL_PREFIX):
        return True
    return model_info.supports_json_schema(model)


# ----------------------------------------------------------------------------------------------------------
# error classification

_RETRYABLE_STATUS = frozenset({408, 409, 425, 429})


def classify_error(exc: BaseException) -> ErrorKind:
    """Map an exception raised while calling a model to how it is handled (see `ErrorKind`)."""
    import openai  # imported with litellm, which raised ``exc``

    litellm = _litellm()
    if isinstance(exc, litellm.exceptions.ContextWindowExceededError):
        return ErrorKind.CONTEXT_OVERFLOW
    if isinstance(exc, litellm.exceptions.ContentPolicyViolationError):
        return ErrorKind.REFUSAL
    if "missing credentials" in str(exc).lower():  # the SDK found no API key: no retry can fix that
        return ErrorKind.FATAL
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, openai.APITimeoutError, litellm.exceptions.Timeout)):
        return ErrorKind.INFRA
    if isinstance(exc, (openai.RateLimitError, litellm.exceptions.RateLimitError)):
        # A spent account answers 429 forever: retrying cannot help.
        return ErrorKind.FATAL if "insufficient_quota" in str(exc).lower() else ErrorKind.INFRA
    if isinstance(exc, openai.APIConnectionError):
        return ErrorKind.INFRA
    status = _status_code(exc)
    if status is not None:
        if status >= 500 or status in _RETRYABLE_STATUS:
            return ErrorKind.INFRA
        if 400 <= status < 500:
            return ErrorKind.FATAL
    if isinstance(exc, (openai.APIError, litellm.exceptions.APIError)):
        return ErrorKind.INFRA  # provider errors without a status: unparsable or truncated replies
    if type(exc).__module__.startswith(("httpx", "httpcore", "aiohttp")) or isinstance(exc, ConnectionError):
        return ErrorKind.INFRA
    return ErrorKind.UNKNOWN


def _status_code(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _rate_limited(exc: BaseException) -> bool:
    """Whether a failed attempt was the provider's rate limit (HTTP 429 or its rate-limit error), not a spent quota."""
    if _status_code(exc) != 429 and "RateLimit" not in type(exc).__name__:
        return False
    return "insufficient_quota" not in str(exc).lower()


def _retry_after_s(exc: BaseException) -> float | None:
    """Seconds a server asked us to wait (`retry-after-ms`, `Retry-After` as seconds or an HTTP date)."""
    header_sources: list[Any] = []
    response = getattr(exc, "response", None)
    if response is not None and getattr(response, "headers", None) is not None:
        header_sources.append(response.headers)
    if isinstance(getattr(exc, "headers", None), Mapping):
        header_sources.append(exc.headers)  # type: ignore[attr-defined]
    if isinstance(getattr(exc, "litellm_response_headers", None), Mapping):
        # providers outside the OpenAI SDK (Anthropic, ...): litellm keeps the real headers here
        header_sources.append(exc.litellm_response_headers)  # type: ignore[attr-defined]
    for headers in header_sources:
        lowered = {str(k).lower(): str(v) for k, v in dict(headers).items()}
        if "retry-after-ms" in lowered:
            try:
                return max(0.0, float(lowered["retry-after-ms"]) / 1000.0)
            except ValueError:
                pass
        if "retry-after" in lowered:
            value = lowered["retry-after"].strip()
            try:
                return max(0.0, float(value))
            except ValueError:
                pass
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                continue
            return max(0.0, when.timestamp() - time.time())
    return None


def _retry_delay(config: ModelConfig, attempt: int, exc: BaseException) -> float:
    """Full-jitter exponential backoff; a Retry-After header is a floor (capped by `retry_after_max_s`)."""
    ceiling = min(config.backoff_max_s, config.backoff_base_s * (2 ** (attempt - 1)))
    delay = _jitter.uniform(ceiling / 2, ceiling)
    retry_after = _retry_after_s(exc)
    if retry_after is not None:
        delay = max(delay, min(retry_after, config.retry_after_max_s))
    return delay


def _redact(text: str, api_key: str | None) -> str:
    """Remove the API key from a provider message before it reaches a log or an exception."""
    return text.replace(api_key, "***") if api_key and len(api_key) >= 4 else text


def _fatal_message(config: ModelConfig, exc: BaseException, status: int | None, api_key: str | None) -> str:
    hints = {
        401: "authentication failed: check the API key"
        + (f" in the environment variable {config.api_key_env}" if config.api_key_env else ""),
        403: "permission denied: this key may not use this model",
        404: "model or endpoint not found: check the model string and api_base",
        400: "the provider rejected the request (bad request)",
        402: "payment required: the account has no credit",
        422: "the provider could not process the request",
        429: "the account's quota is spent (insufficient_quota)",
    }
    hint = hints.get(status or 0, "the provider rejected the call")
    where = f" at {config.api_base}" if config.api_base else ""
    detail = _redact(str(exc).strip(), api_key).splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    return f"model {config.model!r}{where}: {hint} (HTTP {status}). Provider said: {detail}"


# ----------------------------------------------------------------------------------------------------------
# connection pool


_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
_closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
_recent: tuple[weakref.ref[asyncio.AbstractEventLoop], Any] | None = None
"""The loop and session of the last lookup (a run asks from one loop, once per call)."""


def _shared_session() -> Any:
    """The aiohttp session every litellm call of the running event loop goes through (litellm's ``shared_session``).

    Its connector has no connection limit of its own: the limiter (:mod:`llm_bots.transport.limits`) already bounds the
    calls
    in flight per model, so the pool holds exactly the connections the limits admit. litellm's own pool (1,000
    connections, 500 to one host) made calls admitted by the limiter queue for a connection, with a warning
    each, once the models on one endpoint were allowed more than 500 calls between them. The session is closed
    when its event loop shuts down (``asyncio.run`` closes the loop's async generators, this one included).
    None when litellm does not use aiohttp (``litellm.disable_aiohttp_transport``) or aiohttp is missing.
    """
    global _recent
    loop = asyncio.get_running_loop()
    recent = _recent
    if recent is not None and recent[0]() is loop and not recent[1].closed:  # every call asks: the last answer
        return recent[1]
    session = _sessions.get(loop)
    if session is not None:
        if session.closed:
            return None
        _recent = (weakref.ref(loop), session)
        return session
    if getattr(_litellm(), "disable_aiohttp_transport", False):
        return None
    try:
        import aiohttp
    except ImportError:  # pragma: no cover - aiohttp is a dependency of litellm
        return None
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, keepalive_timeout=120)
    session = aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())
    _sessions[loop] = session
    _recent = (weakref.ref(loop), session)

    async def close_with_loop() -> Any:
        try:
            yield None
        finally:
            await session.close()

    closer = close_with_loop()
    started = loop.create_task(closer.__anext__())  # once started, the loop closes it (and the session) on shutdown
    _closers[loop] = (closer, started)
    return session


# ----------------------------------------------------------------------------------------------------------
# the call


async def _route(config: ModelConfig, prompt_tokens: int = 0) -> tuple[ModelConfig, str | None]:
    """Resolve `local/...` to a running llama.cpp server (its timeout sized for the reply and a prompt of
    ``prompt_tokens``); read the API key from its environment variable."""
    if config.is_local:
        from llm_bots.local import server as local_server

        try:
            return await local_server.route(config, prompt_tokens)
        except local_server.LocalModelError as exc:  # a missing local model stops the run like a bad key
            raise FatalModelError(str(exc), model=config.model) from exc
    return _api_key(config)


def _api_key(config: ModelConfig) -> tuple[ModelConfig, str | None]:
    """A remote model's config and the API key from its environment variable (None: no variable named)."""
    if config.api_key_env is None:
        return config, None
    key = os.environ.get(config.api_key_env)
    if not key:
        raise FatalModelError(
            f"model {config.model!r}: the environment variable {config.api_key_env} (api_key_env) is not set or empty",
            model=config.model,
        )
    return config, key


def _plan_kwargs(
    plan: _CallPlan,
    api_key: str | None,
    messages: Sequence[Mapping[str, Any]],
    response_format: Any,
    mock_response: Any,
) -> dict[str, Any]:
    """The keyword arguments of ``litellm.acompletion`` for one call from the config's call plan, in this order: model,
    messages, timeout, retries off, ``drop_params``, ``api_base``, ``api_key``, the sampling settings that are set,
    then ``response_format`` and ``mock_response`` when given."""
    sent = list(map(dict, messages))
    if plan.marks_cache and sent:
        sent[-1] = _cache_marked(sent[-1])
    kwargs = {**plan.head, "messages": sent, **plan.tail}
    if api_key is not None:
        kwargs["api_key"] = api_key
    kwargs.update(plan.sampling)
    if response_format is not None:
        kwargs["response_format"] = response_format
    if mock_response is not None:
        kwargs["mock_response"] = mock_response
    return kwargs


_CACHE_MARK: Mapping[str, str] = {"type": "ephemeral"}


def _cache_marked(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with its text as one content block marked for Anthropic's prompt cache (``cache_control``): the
    prompt up to its end is cached, and the seat's next prompt, which starts with it, reads it from the cache."""
    content = message.get("content")
    if not isinstance(content, str):
        return message
    return {**message, "content": [{"type": "text", "text": content, "cache_control": dict(_CACHE_MARK)}]}


def _marks_cache(config: ModelConfig) -> bool:
    """Whether a call of ``config`` marks its prompt for the provider's cache: ``cache_control`` set, and an
    Anthropic (Claude) model, the providers that cache only what is marked."""
    if not config.cache_control:
        return False
    return model_info.provider(config.model) == "anthropic" or "claude" in config.model.lower()


class _CallPlan:
    """What every call of one model config sends and checks the same way, made once per config object (a turn's
    config serves every call of its seat and role in a match).

    Attributes:
        config: the config itself (kept alive, so its ``id`` is not reused while the plan is remembered).
        head: ``model`` (the arguments before ``messages``).
        tail: ``timeout``, retries off, ``drop_params`` and ``api_base`` (the arguments after ``messages``); once
            litellm has answered a call of this model and endpoint without a price (:func:`_learn_unpriced`), also a
            price of 0.0 a token, so that it does not look the model up in its price table again on every call.
        sampling: the sampling settings that are set (:meth:`ModelConfig.sampling_params` without the None ones).
        limit_key: the limiter's key of the model (:func:`limits.limit_key`).
        call_limits: its limits (:func:`limits.limits_of`).
        counts_tokens: whether the model has a tokens-per-minute limit (each call's tokens are then estimated).
        guard_s: how long the asyncio guard lets a call run (litellm's timeout plus :data:`_GUARD_GRACE_S`).
        marks_cache: whether each prompt's last message is marked for the provider's prompt cache
            (:func:`_marks_cache`).
    """

    __slots__ = (
        "call_limits",
        "config",
        "counts_tokens",
        "guard_s",
        "head",
        "limit_key",
        "marks_cache",
        "sampling",
        "tail",
    )
    config: ModelConfig
    head: Mapping[str, Any]
    tail: dict[str, Any]
    sampling: Mapping[str, Any]
    limit_key: str
    call_limits: limits.Limits
    counts_tokens: bool
    guard_s: float
    marks_cache: bool

    def __init__(self, config: ModelConfig, fixed: _CallPlan | None = None) -> None:
        self.config = config
        self.sampling = {name: value for name, value in config.sampling_params().items() if value is not None}
        self.marks_cache = _marks_cache(config)
        if fixed is not None:  # another config with the same endpoint, timeout and limits: its parts are shared
            self.head, self.tail, self.limit_key = fixed.head, fixed.tail, fixed.limit_key
            self.call_limits, self.counts_tokens, self.guard_s = fixed.call_limits, fixed.counts_tokens, fixed.guard_s
            return
        tail: dict[str, Any] = {
            "timeout": config.timeout_s,
            "num_retries": 0,  # litellm's own retry wrapper: off
            "max_retries": 0,  # the OpenAI/Azure SDK client's retries: off
            "drop_params": True,  # providers without e.g. `seed` ignore it rather than fail the run
        }
        if config.api_base is not None:
            tail["api_base"] = config.api_base
        if (config.model, config.api_base) in _unpriced:
            tail.update(_NO_PRICE)
        if model_info.provider(config.model) in inline_setup.INLINE_PROVIDERS:
            inline_setup.allow(config.model)  # its set-up does no I/O: on the loop's thread (module documentation)
        self.head = {"model": config.model}
        self.tail = tail
        self.limit_key = limits.limit_key(config)
        self.call_limits = limits.limits_of(config)
        self.counts_tokens = self.call_limits.tpm is not None
        self.guard_s = config.timeout_s + _GUARD_GRACE_S


_plans: dict[int, _CallPlan] = {}
"""Call plans by ``id`` of their config (each plan holds its config, so the id stays its own); cleared when full."""
_PLANS_MAX = 256

_fixed: dict[tuple[Any, ...], _CallPlan] = {}
"""A plan by what its fixed parts are made of (every LLM seat of every match has a config of its own, with its
match's seed, whose plan shares them); cleared with :data:`_plans`."""


_unpriced: set[tuple[str, str | None]] = set()
"""The (model, api_base) pairs litellm answered without a price in this process (:func:`_learn_unpriced`)."""

_NO_PRICE: Mapping[str, float] = {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0}
"""litellm's per-call price arguments: with them a call is priced at 0.0 without looking the model up."""


def _learn_unpriced(plan: _CallPlan, response: Any) -> None:
    """Remember that litellm could not price ``response`` (its ``response_cost`` is None): a model it has no price
    for, such as a local or self-hosted one.

    litellm then searched its price table on every call, and again when logging it, to end with no price: about
    0.4 ms of CPU a call (bench/README.md). The plan's later calls, and every plan of the same model and endpoint,
    pass a price of 0.0 a token instead, which litellm applies without a lookup; such a call costs 0.0 either way
    (:func:`_cost_usd`). Only a reply whose price litellm itself left unknown is learned from, so a model that it
    prices is never given these arguments, and neither is one answered only by litellm's mock.
    """
    hidden = _field(response, "_hidden_params")
    if type(hidden) is dict and "response_cost" in hidden and hidden["response_cost"] is None:
        config = plan.config
        _unpriced.add((config.model, config.api_base))
        plan.tail.update(_NO_PRICE)  # shared by every plan of this model, endpoint and limits (``_fixed``)


def _call_plan(config: ModelConfig) -> _CallPlan:
    """The call plan of ``config`` (made on its first call, then looked up)."""
    plan = _plans.get(id(config))
    if plan is not None and plan.config is config:
        return plan
    key = (
        config.model,
        config.api_base,
        config.timeout_s,
        config.max_concurrency,
        config.rpm,
        config.tpm,
        config.adaptive_concurrency,
        config.retry_after_max_s,
        config.cache_control,
        limits.RATE_WINDOW_S,
        _GUARD_GRACE_S,
    )
    fixed = _fixed.get(key)
    plan = _CallPlan(config, fixed)
    if len(_plans) >= _PLANS_MAX:
        _plans.clear()
        _fixed.clear()
    _plans[id(config)] = plan
    if fixed is None:
        _fixed[key] = plan
    return plan


def _cost_usd(response: Any) -> float:
    """The call's cost as litellm priced it while answering (``response_cost``: None for a model it has no price
    for, which costs 0.0); priced again only when a response does not carry it."""
    hidden = _field(response, "_hidden_params")
    if (type(hidden) is dict or isinstance(hidden, Mapping)) and "response_cost" in hidden:
        cost = hidden["response_cost"]
        if cost is None:
            return 0.0
    else:
        try:
            cost = _litellm().completion_cost(completion_response=response)
        except Exception:
            return 0.0
    try:
        cost = float(cost)
    except (TypeError, ValueError):
        return 0.0
    return cost if cost >= 0.0 and cost == cost else 0.0


def _usage_dict(response: Any) -> dict[str, Any]:
    usage = _field(response, "usage")
    if usage is None:
        return {}
    if hasattr(usage, "model_dump"):
        try:
            if isinstance(usage, BaseModel):
                dumped = _dump(usage)
                if dumped is not None:
                    return dumped
            return dict(usage.model_dump())
        except Exception:
            pass
    return dict(usage) if isinstance(usage, Mapping) else {}


_SCALARS = frozenset({int, float, str, bool, type(None)})
_DUMPS_AS_FIELDS: dict[type, bool] = {}
"""Per pydantic class: whether ``model_dump()`` of its first instance read as :func:`_dump` does gave the same
dict, in the same order (no excluded field, serializer or alias of its own; checked once a class)."""


def _dump(model: BaseModel) -> dict[str, Any] | None:
    """``model.model_dump()`` read from the instance's fields and extras (pydantic's serializer costs more than
    the rest of reading a reply), nested models alike; None when a value is not plain or the class does not dump
    as its fields (then the caller asks ``model_dump``)."""
    cls = type(model)
    same = _DUMPS_AS_FIELDS.get(cls)
    if same is False:
        return None
    out: dict[str, Any] = {}
    extra = model.__pydantic_extra__
    for values in (model.__dict__, extra) if extra else (model.__dict__,):
        for name, value in values.items():
            if type(value) in _SCALARS:
                out[name] = value
            elif isinstance(value, BaseModel):
                nested = _dump(value)
                if nested is None:
                    return None
                out[name] = nested
            else:
                return None
    if same is None:
        dumped = model.model_dump()
        same = _DUMPS_AS_FIELDS[cls] = out == dumped and list(out) == list(dumped)
        if not same:
            return None
    return out


class _MalformedResponse(Exception):
    """A 200 response without a usable choice: handled as an infrastructure fault."""


def _parse_response(
    config: ModelConfig,
    original: ModelConfig,
    response: Any,
    latency: float,
    attempts: int,
    elapsed: float,
    log: Sequence[CallAttempt] = (),
) -> Completion:
    """The completion of a 200 response; ``log`` holds the attempts before this one (this one is added)."""
    # each field is read by _field: from the object's own dict where it is set, without pydantic's slow path
    choices = _field(response, "choices")
    if not choices:
        raise _MalformedResponse(f"model {original.model!r}: response without choices")
    choice = choices[0]
    message = _field(choice, "message")
    finish_reason = _field(choice, "finish_reason")
    text = _field(message, "content") or ""
    refusal_text = _field(message, "refusal")
    reported = str(_field(response, "model") or "")
    if not model_id_matches(config.model, reported, original.accept_model_ids):
        raise ModelMismatchError(
            f"model {original.model!r}: the response reports model {reported!r}, which is not the configured "
            f"model (nor a dated/tagged version of it). Refusing a silent fallback; if this is expected, add "
            f"{reported!r} to accept_model_ids of this player.",
            model=original.model,
            reported_model=reported,
        )
    usage = _usage_dict(response)
    refused = finish_reason == "content_filter" or bool(refusal_text)
    fingerprint = _field(response, "system_fingerprint")
    reasoning = _field(message, "reasoning_content")
    outcome, attempt = (Outcome.REFUSAL, _REFUSED) if refused else (Outcome.OK, _ANSWERED)
    text = text or (refusal_text or "")
    reasoning = reasoning if isinstance(reasoning, str) else ""
    if not (text.isascii() and reasoning.isascii()) or "\\u" in text:  # a lone surrogate, or its JSON escape
        text, reasoning, attempt = _valid_reply(text, reasoning, attempt)
    return Completion._of(
        {
            "text": text,
            "model": reported or config.model,
            "finish_reason": finish_reason,
            "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0),
            "cost_usd": _cost_usd(response),
            "latency_s": latency,
            "attempts": attempts,
            "outcome": outcome,
            "usage": usage,
            "elapsed_s": elapsed,
            "requested_model": config.model,
            "attempt_log": (*log, attempt),
            "system_fingerprint": str(fingerprint) if fingerprint else None,
            "reasoning_tokens": _reasoning_tokens(usage),
            "reasoning": reasoning,
            "cut_chars": 0,
            "cached_tokens": _cached_tokens(usage),
            "cache_write_tokens": _count(usage.get("cache_creation_input_tokens")),
        }
    )


def _valid_reply(text: str, reasoning: str, attempt: CallAttempt) -> tuple[str, str, CallAttempt]:
    """A reply and its reasoning made encodable (:func:`~deepeval_games.core.quoting.valid_text`), and the attempt that
    brought them, with what was replaced in its ``error`` when anything was: a lone surrogate would otherwise fail
    every later request of the match (it is sent back as chat history) and the record itself."""
    text, in_text = valid_text(text)
    reasoning, in_reasoning = valid_text(reasoning)
    escaped = surrogate_escapes(text)  # kept in the reply as written; a JSON reader makes them U+FFFD
    if not (in_text or in_reasoning or escaped):
        return text, reasoning, attempt
    note = replacement_note(in_text, in_reasoning, escaped)
    logger.warning("a model reply held unencodable code points: %s", note)
    return text, reasoning, dataclasses.replace(attempt, error=note)


def replacement_note(in_text: Sequence[str], in_reasoning: Sequence[str] = (), escaped: Sequence[str] = ()) -> str:
    """How a call's attempt records the code points replaced in its reply (``in_text``) and reasoning, and the lone
    surrogates the reply's JSON escapes stand for (read as U+FFFD by :func:`llm_bots.parsing.json_objects`)."""
    places = (("reply", in_text), ("reasoning", in_reasoning), ("reply's JSON escapes", escaped))
    parts = [f"{where}: {', '.join(codes)}" for where, codes in places if codes]
    return f"{UNENCODABLE}: replaced by U+FFFD in the {'; '.join(parts)}"


UNENCODABLE = "UnencodableText"
"""The ``error`` of a call attempt whose reply held code points UTF-8 cannot encode, followed by what was replaced
(the attempt's ``status`` stays ``ok``: the reply was used)."""


def valid_completion(completion: Completion) -> Completion:
    """``completion`` with its reply and reasoning made encodable, and the replacement noted on its last attempt
    (the same object when nothing needed replacing): for completions that did not come through :func:`complete`
    just now, such as those the call cache kept before replies were checked."""
    text, reasoning = completion.text, completion.reasoning
    if text.isascii() and reasoning.isascii() and "\\u" not in text:
        return completion
    log = completion.attempt_log
    last = log[-1] if log else CallAttempt(status=completion.outcome.value)
    text, reasoning, attempt = _valid_reply(text, reasoning, last)
    if attempt is last:
        return completion
    return dataclasses.replace(completion, text=text, reasoning=reasoning, attempt_log=(*log[:-1], attempt))


def _valid_messages(messages: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """``messages`` with every text content encodable (the same list when it already is: nearly always)."""
    fixed: list[Mapping[str, Any]] | None = None
    for index, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, str) or content.isascii():
            continue
        valid, replaced = valid_text(content)
        if replaced:
            logger.warning("a prompt message held unencodable code points (%s); sent with U+FFFD", ", ".join(replaced))
            if fixed is None:
                fixed = list(messages)
            fixed[index] = {**message, "content": valid}
    return messages if fixed is None else fixed


_ANSWERED = CallAttempt(status=Outcome.OK.value)
_REFUSED = CallAttempt(status=Outcome.REFUSAL.value)
"""The last attempt of a call that got a reply (frozen: one object serves every call)."""

_MISSING: Any = object()

_ABSENT: dict[type, dict[str, bool] | None] = {}
"""Per pydantic model class, per name: True when the class itself has no attribute ``name`` (no property, no class
default); None for a class that is no pydantic model (``isinstance`` against ``BaseModel``, an ABC, costs more)."""


def _field(obj: Any, name: str) -> Any:
    """``getattr(obj, name, None)``, without a pydantic model's slow path for an unset name.

    litellm's responses are pydantic models that drop their unset optional fields (a message without ``refusal``
    or ``reasoning_content``): reading one raises AttributeError inside pydantic's ``__getattr__``, which is slow. A
    set field is in the instance's ``__dict__``, an extra one in ``__pydantic_extra__``, a private one in
    ``__pydantic_private__``; a name in none of them that the class does not define either is absent (None).
    Anything else (properties, class defaults, other objects) is read with ``getattr``.
    """
    values = getattr(obj, "__dict__", None)
    if values is not None and name in values:
        return values[name]
    cls = type(obj)
    absent = _ABSENT.get(cls, _MISSING)
    if absent is _MISSING:
        absent = _ABSENT[cls] = {} if issubclass(cls, BaseModel) else None
    if absent is not None:  # a pydantic model
        store = obj.__pydantic_private__ if name.startswith("_") else obj.__pydantic_extra__
        if store and name in store:
            return store[name]
        gone = absent.get(name)
        if gone is None:
            gone = absent[name] = not hasattr(cls, name)
        if gone:
            return None
    return getattr(obj, name, None)


def _count(value: Any) -> int:
    """A token count a usage block reported; 0 when absent or not a number."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def _reasoning_tokens(usage: Mapping[str, Any]) -> int:
    """Reasoning tokens of a usage block (``completion_tokens_details.reasoning_tokens``); 0 when not reported."""
    details = usage.get("completion_tokens_details")
    return _count(details.get("reasoning_tokens") if isinstance(details, Mapping) else None)


def _cached_tokens(usage: Mapping[str, Any]) -> int:
    """Prompt tokens read from the provider's cache: ``prompt_tokens_details.cached_tokens`` (OpenAI's, and litellm's
    for every provider it maps), else Anthropic's ``cache_read_input_tokens``; 0 when not reported."""
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens") if isinstance(details, Mapping) else None)
    return cached or _count(usage.get("cache_read_input_tokens"))


def _no_response(
    config: ModelConfig,
    outcome: Outcome,
    latency: float,
    attempts: int,
    elapsed: float,
    attempt_log: tuple[CallAttempt, ...] = (),
) -> Completion:
    return Completion(
        text="",
        model=config.model,
        finish_reason=None,
        prompt_tokens=0,
        completion_tokens=0,
        cost_usd=0.0,
        latency_s=latency,
        attempts=attempts,
        outcome=outcome,
        elapsed_s=elapsed,
        requested_model=config.model,
        attempt_log=attempt_log,
    )


_WATCH_S = 0.5
"""How often a loop's :class:`_Watchdog` looks for guarded calls past their deadline (a guard fires at most this
late; it is a backstop behind litellm's own timeout, :data:`_GUARD_GRACE_S` later)."""


class _Watchdog:
    """The guard of every model call awaited on one event loop: a call's task past its deadline is cancelled, and
    :func:`_guarded` turns that cancellation into ``TimeoutError``, as ``asyncio.timeout`` would. One timer a loop,
    looking every :data:`_WATCH_S` seconds while calls are in flight, instead of a timer made and cancelled for
    every call."""

    __slots__ = ("deadlines", "expired", "loop_ref", "scheduled")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop_ref = weakref.ref(loop)
        """The loop, weakly, and no timer handle (a handle holds its loop): :data:`_watchdogs` holds its watchdogs by
        their loop weakly, and a watchdog holding its loop would keep both alive once the loop is closed and gone."""
        self.deadlines: dict[asyncio.Task[Any], float] = {}
        """The guarded calls in flight: their task and deadline (loop time); a task awaits one call at a time."""
        self.expired: set[asyncio.Task[Any]] = set()
        """The tasks this watchdog cancelled, until their guarded call ends."""
        self.scheduled = False
        """Whether :meth:`look` is due on the loop."""

    def watch(self, task: asyncio.Task[Any], seconds: float) -> None:
        """Guard ``task``'s call for ``seconds`` from now (``task`` runs on this watchdog's loop)."""
        loop = task.get_loop()
        now = loop.time()
        self.deadlines[task] = now + seconds
        if not self.scheduled:
            self.scheduled = True
            loop.call_at(now + _WATCH_S, self.look)

    def look(self) -> None:
        """Cancel the calls past their deadline; look again later while calls are in flight."""
        self.scheduled = False
        loop = self.loop_ref()
        if loop is None:  # pragma: no cover - the loop runs this very callback
            return
        now = loop.time()
        for task, deadline in list(self.deadlines.items()):
            if deadline <= now and task not in self.expired:
                self.expired.add(task)
                task.cancel()
        if self.deadlines:
            self.scheduled = True
            loop.call_at(now + _WATCH_S, self.look)


_watchdogs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Watchdog] = weakref.WeakKeyDictionary()


if hasattr(asyncio.Task, "uncancel"):  # Python 3.11+

    async def _guarded(call: Any, seconds: float) -> Any:
        """Await ``call`` for at most about ``seconds`` (then TimeoutError; see :class:`_Watchdog`)."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:  # pragma: no cover - a coroutine always runs in a task here
            return await asyncio.wait_for(call, timeout=seconds)
        dog = _watchdogs.get(loop)
        if dog is None:
            dog = _watchdogs[loop] = _Watchdog(loop)
        cancelling = task.cancelling()
        dog.watch(task, seconds)
        try:
            return await call
        except asyncio.CancelledError:
            if task in dog.expired and task.uncancel() <= cancelling:
                raise TimeoutError(f"no reply within {seconds:g}s") from None
            raise
        finally:
            del dog.deadlines[task]
            dog.expired.discard(task)

else:  # pragma: no cover - Python 3.10

    async def _guarded(call: Any, seconds: float) -> Any:
        """Await ``call`` for at most ``seconds`` (then TimeoutError)."""
        return await asyncio.wait_for(call, timeout=seconds)


def estimate_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """A rough size of a prompt in tokens: its characters over :data:`CHARS_PER_TOKEN`."""
    chars = sum(len(str(m.get("content") or "")) for m in messages)
    return -(-chars // CHARS_PER_TOKEN)


def context_limit(config: ModelConfig) -> int | None:
    """The model's context window in tokens: `context_tokens`, else litellm's model info; None when unknown."""
    if config.context_tokens is not None:
        return config.context_tokens
    if config.is_local:
        return None  # the llama.cpp server answers an overflow itself
    return _model_context(config.model)


@functools.lru_cache(maxsize=256)
def _model_context(model: str) -> int | None:
    """litellm's context window of ``model``, looked up once per model in a process (only when a call is made)."""
    try:
        info = _litellm().get_model_info(model)
    except Exception:
        return None
    limit = info.get("max_input_tokens") or info.get("max_tokens")
    return int(limit) if isinstance(limit, int) and limit > 0 else None


async def complete(
    config: ModelConfig,
    messages: Sequence[Mapping[str, Any]],
    *,
    response_format: Mapping[str, Any] | type | None = None,
    budget: Budget | None = None,
    mock_response: Any = None,
) -> Completion:
    """Call the configured model once (with retries for infrastructure faults) and return the result.

    Args:
        config: which model, where, and how to sample.
        messages: OpenAI-style chat messages (`{"role": ..., "content": ...}`).
        response_format: passed to litellm, e.g. a JSON-schema `response_format` (see `supports_json_schema`).
        budget: a shared spending limit; checked before the call, charged after it.
        mock_response: litellm's mock (a string, or an exception to raise): no network at all. For tests.

    Returns:
        A `Completion`; its `outcome` is `ok`, `refusal` (content filter) or `context_overflow`.

    Raises:
        BudgetExceeded: before any network traffic, if the budget is spent.
        FatalModelError: 401/403/404/400 and other configuration errors, naming the model (not retried).
        ModelMismatchError: the response came from another model and the config does not accept it.
        InfraError: 429/5xx/timeouts/connection errors persisted through `config.max_retries` retries.
    """
    if budget is not None:
        budget.check(config.model)
    limit = context_limit(config)
    if limit is not None and estimate_tokens(messages) > limit:
        logger.info(
            "model %s: the prompt (about %d tokens) exceeds its context (%d); not sent",
            config.model,
            estimate_tokens(messages),
            limit,
        )
        skipped = (CallAttempt(status=Outcome.CONTEXT_OVERFLOW.value, error="prompt exceeds the context"),)
        return _no_response(config, Outcome.CONTEXT_OVERFLOW, 0.0, 0, 0.0, skipped)
    # a remote model's key is read without a coroutine (a local one waits for its server)
    call_config, api_key = await _route(config, estimate_tokens(messages)) if config.is_local else _api_key(config)
    plan = _call_plan(call_config)
    kwargs = _plan_kwargs(plan, api_key, _valid_messages(messages), response_format, mock_response)
    if mock_response is None:
        session = _shared_session()
        if session is not None:
            kwargs["shared_session"] = session
        inline_setup.install(asyncio.get_running_loop())
    limiter = limits.get_limiter()
    # the process's own limiter is asked without a coroutine when it can answer at once (a free slot, no wait)
    local = limiter if type(limiter) is limits.LocalLimiter else None
    key, call_limits, guard_s = plan.limit_key, plan.call_limits, plan.guard_s
    est_tokens = estimate_tokens(messages) + (call_config.max_tokens or 0) if plan.counts_tokens else 0
    started = time.monotonic()
    attempts = 0
    log: list[CallAttempt] = []
    while True:
        attempts += 1
        grant = local.try_acquire(key, call_limits, est_tokens) if local is not None else None
        if grant is None:
            grant = await limiter.acquire(key, call_limits, est_tokens)
        used_tokens: int | None = None
        rate_limited, retry_after = False, None
        try:
            attempt_start = time.monotonic()
            try:
                response = await _guarded(_litellm().acompletion(**kwargs), guard_s)
                latency = time.monotonic() - attempt_start
                completion = _parse_response(
                    call_config, config, response, latency, attempts, time.monotonic() - started, log
                )
                if completion.cost_usd == 0.0 and mock_response is None and "input_cost_per_token" not in plan.tail:
                    _learn_unpriced(plan, response)
            except (ModelMismatchError, asyncio.CancelledError):
                raise
            except Exception as exc:
                failure: Exception = exc
                rate_limited = _rate_limited(exc)
                retry_after = _retry_after_s(exc) if rate_limited else None
                if config.is_local and call_config.api_base is not None:
                    # its slot stays held until the server has dropped the request: a retry never runs beside it
                    from llm_bots.local import server as local_server

                    await local_server.wait_idle(call_config.api_base)
            else:
                used_tokens = completion.prompt_tokens + completion.completion_tokens
                if budget is not None:
                    budget.charge(completion.cost_usd)
                return completion
        finally:
            if local is not None:
                local.release_nowait(grant, used_tokens, rate_limited, retry_after)
            else:
                await limiter.release(grant, used_tokens, rate_limited, retry_after)
        latency = time.monotonic() - attempt_start
        kind = ErrorKind.INFRA if isinstance(failure, _MalformedResponse) else classify_error(failure)
        if kind is ErrorKind.UNKNOWN:
            raise failure
        status = _status_code(failure)
        log.append(CallAttempt(status=kind.value, http_status=status, error=type(failure).__name__))
        if kind in (ErrorKind.CONTEXT_OVERFLOW, ErrorKind.REFUSAL):
            outcome = Outcome.CONTEXT_OVERFLOW if kind is ErrorKind.CONTEXT_OVERFLOW else Outcome.REFUSAL
            return _no_response(call_config, outcome, latency, attempts, time.monotonic() - started, tuple(log))
        if kind is ErrorKind.FATAL:
            message = _fatal_message(config, failure, status, api_key)
            raise FatalModelError(message, model=config.model, status_code=status) from failure
        if attempts > call_config.max_retries:
            raise InfraError(
                f"model {config.model!r}: infrastructure failure after {attempts} attempt(s): "
                f"{type(failure).__name__}: {_redact(str(failure), api_key)[:300]}",
                model=config.model,
                attempts=attempts,
                last_error=failure,
            ) from failure
        delay = _retry_delay(call_config, attempts, failure)
        log[-1] = dataclasses.replace(log[-1], wait_s=round(delay, 3))
        logger.warning(
            "model %s: attempt %d failed (%s, HTTP %s); retrying in %.2fs",
            config.model,
            attempts,
            type(failure).__name__,
            status,
            delay,
        )
        await asyncio.sleep(delay)
