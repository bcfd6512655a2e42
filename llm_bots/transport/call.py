"""The one way this project calls a model: `complete(config, messages)` over litellm, robust to failing APIs.

What it guarantees, whatever the provider:

- every attempt has a timeout (litellm's own, plus an asyncio guard a little longer:
  :mod:`~llm_bots.transport.watchdog`);
- no hidden retries: litellm's `num_retries=0` and the OpenAI SDK's `max_retries=0`; our single retry loop
  uses exponential backoff with full jitter and honours `Retry-After` / `retry-after-ms` on 429
  (:mod:`~llm_bots.transport.retries`);
- every failure is classified (`classify_error`): infrastructure faults (429, 5xx, timeouts, connection
  errors, unparsable replies) are retried and end in `InfraError`; configuration faults (401, 403, 404, 400,
  ...) raise `FatalModelError` naming the model at once; a context-window overflow and a provider refusal are
  *outcomes* of a `Completion`, not exceptions, because they are the model's own result
  (:mod:`~llm_bots.transport.errors`, :mod:`~llm_bots.transport.results`);
- the model id a response reports is checked against the configured one (`model_id_matches`); a different
  model raises `ModelMismatchError` unless the config accepts it;
- text crossing the boundary is valid: a reply (or its reasoning) holding code points UTF-8 cannot encode (a lone
  surrogate) has them replaced by U+FFFD before it is returned, and the call's last attempt records what was
  replaced (``error`` starting with :data:`~llm_bots.transport.unencodable.UNENCODABLE`); so does a reply whose JSON
  escapes stand for a lone surrogate (``"\\ud83d"``: kept as written, read as U+FFFD by
  :func:`llm_bots.parsing.json_objects`); a prompt message holding one is sent with U+FFFD too
  (:func:`~llm_bots.transport.unencodable.valid_completion` does the same for completions kept elsewhere, such as the
  call cache);
- cost (USD, 0.0 when litellm does not know the price), tokens, latency and every attempt (status, HTTP status,
  error class, wait) come back in `Completion`;
- a prompt that cannot fit the model's context (`context_tokens`, else litellm's model info where it knows the
  model; the prompt's size estimated at `CHARS_PER_TOKEN` characters a token) is a `context_overflow` outcome
  without a call;
- a shared `Budget` stops new calls once spent; the run's limiter (`llm_bots.transport.limits`, passed with the
  call) holds each model's concurrency, requests and tokens per minute, cuts concurrency on 429s and pauses the model
  on Retry-After;
- litellm's synchronous set-up of a call to an OpenAI-compatible model runs on the event loop's thread, not on a
  worker thread, on the loops the engine runs (:mod:`llm_bots.inline_setup`);
- litellm's connections come from one aiohttp session per event loop with no pool limit of its own, so a call the
  limiter admits never queues for a connection (:mod:`~llm_bots.transport.session`);
- `local/...` models are routed to a llama.cpp server started once for the run (`llm_bots.local.server`).

litellm is imported only when a call is made (`llm_bots.model_info.litellm`): a run whose calls all come from the
model-call cache never pays its import. Importing any module of this package sets `LITELLM_LOCAL_MODEL_COST_MAP=True`
(unless already set; :mod:`llm_bots.transport`), so litellm prices calls from its installed price table instead of
fetching one from the internet, and litellm's "Give Feedback" banners are silenced: errors are reported by the
exceptions of :mod:`~llm_bots.transport.errors`. The cost of a call is the one litellm computed while answering it
(not priced a second time); once litellm has answered a model and endpoint without a price, their later calls pass it
a price of 0.0 a token, so it does not search its price table on every call for a model it cannot price
(:func:`llm_bots.transport.plan.learn_unpriced`).

What every call of one config sends is its call plan (:mod:`~llm_bots.transport.plan`); a response is read by
:mod:`~llm_bots.transport.responses`. :func:`complete` itself is a short pipeline: the budget, the context check
(:func:`_overflow`), the route and key, the arguments (:func:`_prepare`), then attempts (:func:`_attempt`), each
failure handled by :func:`_after_failure` (an outcome, an error, or a wait before the next attempt).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from deepeval_games.core.bot import CallAttempt
from llm_bots import model_info
from llm_bots.model_config import ModelConfig
from llm_bots.model_info import litellm as _litellm
from llm_bots.transport.errors import ErrorKind, FatalModelError, InfraError, ModelMismatchError, Outcome
from llm_bots.transport.limits import PROCESS_LIMITER, Limiter, LocalLimiter
from llm_bots.transport.plan import CallPlan, call_plan, learn_unpriced, plan_kwargs
from llm_bots.transport.responses import MalformedResponse, parse_response
from llm_bots.transport.results import Budget, Completion
from llm_bots.transport.retries import (
    classify_error,
    fatal_message,
    rate_limited,
    redact,
    retry_after_s,
    retry_delay,
    status_code,
)
from llm_bots.transport.session import shared_session
from llm_bots.transport.unencodable import valid_messages
from llm_bots.transport.watchdog import guarded

__all__ = ["CHARS_PER_TOKEN", "complete", "context_limit", "estimate_tokens"]

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
"""Characters per token assumed when a prompt's size is estimated before a call (a rough figure for English)."""


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


def _no_response(
    config: ModelConfig,
    outcome: Outcome,
    latency: float,
    attempts: int,
    elapsed: float,
    attempt_log: tuple[CallAttempt, ...] = (),
) -> Completion:
    """A completion without a reply (a context overflow or a refusal): no text, tokens or cost."""
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


def estimate_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """A rough size of a prompt in tokens: its characters over :data:`CHARS_PER_TOKEN`."""
    chars = sum(len(str(m.get("content") or "")) for m in messages)
    return -(-chars // CHARS_PER_TOKEN)


def context_limit(config: ModelConfig) -> int | None:
    """The context window a prompt is checked against before a call (:func:`llm_bots.model_info.context_window`);
    None for a local model without ``context_tokens`` (its llama.cpp server answers an overflow itself) and for a
    model litellm does not know."""
    if config.is_local and config.context_tokens is None:
        return None
    return model_info.context_window(config.model, config.context_tokens)


async def complete(
    config: ModelConfig,
    messages: Sequence[Mapping[str, Any]],
    *,
    response_format: Mapping[str, Any] | type | None = None,
    budget: Budget | None = None,
    limiter: Limiter | None = None,
    mock_response: Any = None,
) -> Completion:
    """Call the configured model once (with retries for infrastructure faults) and return the result.

    Args:
        config: which model, where, and how to sample.
        messages: OpenAI-style chat messages (`{"role": ..., "content": ...}`).
        response_format: passed to litellm, e.g. a JSON-schema `response_format` (see `supports_json_schema`).
        budget: a shared spending limit; checked before the call, charged after it.
        limiter: the run's per-model limits, shared by every call of its models (``ModelRuntime.limiter``); None: the
            process's (:data:`~llm_bots.transport.limits.PROCESS_LIMITER`), shared by every call given none.
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
    overflow = _overflow(config, messages)
    if overflow is not None:
        return overflow
    # a remote model's key is read without a coroutine (a local one waits for its server)
    call_config, api_key = await _route(config, estimate_tokens(messages)) if config.is_local else _api_key(config)
    limiter = limiter if limiter is not None else PROCESS_LIMITER
    call = _prepare(config, call_config, api_key, messages, response_format, mock_response, budget, limiter)
    started = time.monotonic()
    attempts = 0
    log: list[CallAttempt] = []
    while True:
        attempts += 1
        answer = await _attempt(call, attempts, started, log)
        if isinstance(answer, Completion):
            return answer
        failure, latency = answer
        ended = await _after_failure(call, failure, latency, attempts, started, log)
        if ended is not None:
            return ended


def _overflow(config: ModelConfig, messages: Sequence[Mapping[str, Any]]) -> Completion | None:
    """The `context_overflow` outcome of a prompt that cannot fit the model's context (no call is made); None when
    it may fit."""
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
    return None


class _Call:
    """What every attempt of one call uses (made by :func:`_prepare`).

    Attributes:
        config: the configured model (named in errors).
        call_config: the config sent to litellm (a `local/...` one routed to its server).
        api_key: the API key (None: none named; redacted from every message).
        plan: the call plan of ``call_config``.
        kwargs: the keyword arguments of ``litellm.acompletion``.
        limiter: the run's limiter; ``local`` the same when it is a :class:`LocalLimiter` of this process (asked
            without a coroutine when it can answer at once: a free slot, no wait), else None.
        est_tokens: the tokens the limiter counts for each attempt (0 when the model has no tokens-per-minute limit).
        budget: the shared spending limit, charged with the cost of the answer.
        mocked: whether litellm's mock answers (nothing is learned from a mock about prices).
    """

    __slots__ = (
        "api_key",
        "budget",
        "call_config",
        "config",
        "est_tokens",
        "kwargs",
        "limiter",
        "local",
        "mocked",
        "plan",
    )

    def __init__(
        self,
        config: ModelConfig,
        call_config: ModelConfig,
        api_key: str | None,
        plan: CallPlan,
        kwargs: dict[str, Any],
        est_tokens: int,
        budget: Budget | None,
        mocked: bool,
        limiter: Limiter,
    ) -> None:
        self.config, self.call_config, self.api_key, self.plan, self.kwargs = config, call_config, api_key, plan, kwargs
        self.est_tokens, self.budget, self.mocked = est_tokens, budget, mocked
        self.limiter = limiter
        self.local = limiter if type(limiter) is LocalLimiter else None


def _prepare(
    config: ModelConfig,
    call_config: ModelConfig,
    api_key: str | None,
    messages: Sequence[Mapping[str, Any]],
    response_format: Mapping[str, Any] | type | None,
    mock_response: Any,
    budget: Budget | None,
    limiter: Limiter,
) -> _Call:
    """What the attempts of one call use: the call plan of ``call_config``, litellm's arguments (the prompt made
    encodable; the event loop's shared session and inline set-up unless litellm's mock answers) and the tokens the
    limiter counts."""
    plan = call_plan(call_config)
    kwargs = plan_kwargs(plan, api_key, valid_messages(messages), response_format, mock_response)
    if mock_response is None:
        session = shared_session()
        if session is not None:
            kwargs["shared_session"] = session
    est_tokens = estimate_tokens(messages) + (call_config.max_tokens or 0) if plan.counts_tokens else 0
    return _Call(config, call_config, api_key, plan, kwargs, est_tokens, budget, mock_response is not None, limiter)


async def _attempt(
    call: _Call, attempts: int, started: float, log: Sequence[CallAttempt]
) -> Completion | tuple[Exception, float]:
    """One attempt, between the limiter's grant and its release: its completion (the budget charged), or its failure
    and how long it took (a local server first waited on until it has dropped the request)."""
    plan, limiter, local = call.plan, call.limiter, call.local
    grant = local.try_acquire(plan.limit_key, plan.call_limits, call.est_tokens) if local is not None else None
    if grant is None:
        grant = await limiter.acquire(plan.limit_key, plan.call_limits, call.est_tokens)
    used_tokens: int | None = None
    limited, retry_after = False, None
    try:
        attempt_start = time.monotonic()
        try:
            response = await guarded(_litellm().acompletion(**call.kwargs), plan.guard_s)
            latency = time.monotonic() - attempt_start
            completion = parse_response(
                call.call_config, call.config, response, latency, attempts, time.monotonic() - started, log
            )
            if completion.cost_usd == 0.0 and not call.mocked and "input_cost_per_token" not in plan.tail:
                learn_unpriced(plan, response)
        except (ModelMismatchError, asyncio.CancelledError):
            raise
        except Exception as exc:
            failure: Exception = exc
            limited = rate_limited(exc)
            retry_after = retry_after_s(exc) if limited else None
            if call.config.is_local and call.call_config.api_base is not None:
                # its slot stays held until the server has dropped the request: a retry never runs beside it
                from llm_bots.local import server as local_server

                await local_server.wait_idle(call.call_config.api_base)
        else:
            used_tokens = completion.prompt_tokens + completion.completion_tokens
            if call.budget is not None:
                call.budget.charge(completion.cost_usd)
            return completion
    finally:
        if local is not None:
            local.release_nowait(grant, used_tokens, limited, retry_after)
        else:
            await limiter.release(grant, used_tokens, limited, retry_after)
    return failure, time.monotonic() - attempt_start


async def _after_failure(
    call: _Call, failure: Exception, latency: float, attempts: int, started: float, log: list[CallAttempt]
) -> Completion | None:
    """A failed attempt, added to ``log``, ends the call in its outcome (a context overflow or a refusal) or an
    exception (a bug, a configuration fault, an infrastructure fault past the last retry); else None, after the wait
    before the next attempt."""
    config, call_config = call.config, call.call_config
    kind = ErrorKind.INFRA if isinstance(failure, MalformedResponse) else classify_error(failure)
    if kind is ErrorKind.UNKNOWN:
        raise failure
    status = status_code(failure)
    log.append(CallAttempt(status=kind.value, http_status=status, error=type(failure).__name__))
    if kind in (ErrorKind.CONTEXT_OVERFLOW, ErrorKind.REFUSAL):
        outcome = Outcome.CONTEXT_OVERFLOW if kind is ErrorKind.CONTEXT_OVERFLOW else Outcome.REFUSAL
        return _no_response(call_config, outcome, latency, attempts, time.monotonic() - started, tuple(log))
    if kind is ErrorKind.FATAL:
        message = fatal_message(config, failure, status, call.api_key)
        raise FatalModelError(message, model=config.model, status_code=status) from failure
    if attempts > call_config.max_retries:
        raise InfraError(
            f"model {config.model!r}: infrastructure failure after {attempts} attempt(s): "
            f"{type(failure).__name__}: {redact(str(failure), call.api_key)[:300]}",
            model=config.model,
            attempts=attempts,
            last_error=failure,
        ) from failure
    delay = retry_delay(call_config, attempts, failure)
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
    return None
