"""What a model call returns and what it spends: a finished call (`Completion`) and the shared spending limit
(`Budget`)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import Any

from deepeval_games.core.bot import CallAttempt, Usage
from llm_bots.transport.errors import BudgetExceeded, Outcome

__all__ = ["Budget", "Completion"]


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

    @property
    def spent(self) -> Usage:
        """The call's tokens and cost as one :class:`~deepeval_games.core.bot.Usage` value (``prompt_tokens`` in,
        ``completion_tokens`` out; :attr:`usage` is the provider's raw usage block)."""
        return Usage(
            self.prompt_tokens,
            self.completion_tokens,
            self.cost_usd,
            self.reasoning_tokens,
            self.cached_tokens,
            self.cache_write_tokens,
        )


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
