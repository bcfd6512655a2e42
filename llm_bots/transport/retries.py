"""Error classification and retry delays: how a failed attempt is handled (`classify_error`), its HTTP status, whether
it was a rate limit and the wait a server asked for, the backoff before the next attempt, and the message of a fatal
error (with the API key redacted)."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Mapping
from typing import Any

from llm_bots.model_config import ModelConfig
from llm_bots.model_info import litellm as _litellm
from llm_bots.transport.errors import ErrorKind

__all__ = [
    "classify_error",
    "fatal_message",
    "rate_limited",
    "redact",
    "retry_after_s",
    "retry_delay",
    "status_code",
]

_jitter = random.Random()  # jitter only spreads retries in time; it never touches results


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
    status = status_code(exc)
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


def status_code(exc: BaseException) -> int | None:
    """The HTTP status of a failed attempt (the exception's ``status_code``, else its response's); None when none."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def rate_limited(exc: BaseException) -> bool:
    """Whether a failed attempt was the provider's rate limit (HTTP 429 or its rate-limit error), not a spent quota."""
    if status_code(exc) != 429 and "RateLimit" not in type(exc).__name__:
        return False
    return "insufficient_quota" not in str(exc).lower()


def retry_after_s(exc: BaseException) -> float | None:
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


def retry_delay(config: ModelConfig, attempt: int, exc: BaseException) -> float:
    """Full-jitter exponential backoff; a Retry-After header is a floor (capped by `retry_after_max_s`)."""
    ceiling = min(config.backoff_max_s, config.backoff_base_s * (2 ** (attempt - 1)))
    delay = _jitter.uniform(ceiling / 2, ceiling)
    retry_after = retry_after_s(exc)
    if retry_after is not None:
        delay = max(delay, min(retry_after, config.retry_after_max_s))
    return delay


def redact(text: str, api_key: str | None) -> str:
    """Remove the API key from a provider message before it reaches a log or an exception."""
    return text.replace(api_key, "***") if api_key and len(api_key) >= 4 else text


def fatal_message(config: ModelConfig, exc: BaseException, status: int | None, api_key: str | None) -> str:
    """The message of the fatal error a configuration fault raises: the model, its endpoint, a hint for the HTTP
    status and the first line of what the provider said (the API key redacted)."""
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
    detail = redact(str(exc).strip(), api_key).splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    return f"model {config.model!r}{where}: {hint} (HTTP {status}). Provider said: {detail}"
