"""What a model call can end in: its outcomes (`Outcome`), how a failed attempt is handled (`ErrorKind`), and the
exceptions :func:`llm_bots.transport.call.complete` raises (`ModelCallError` and its subclasses)."""

from __future__ import annotations

import enum

from deepeval_games.core.errors import FatalRunError, InfrastructureError

__all__ = [
    "BudgetExceeded",
    "ErrorKind",
    "FatalModelError",
    "InfraError",
    "ModelCallError",
    "ModelMismatchError",
    "Outcome",
]


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
