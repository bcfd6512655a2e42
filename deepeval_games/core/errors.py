"""The exceptions of deepeval-games.

Every error a user can cause (a bad spec, an unknown game or bot, a store made by another spec) is a
:class:`DeepEvalError` with a message that says what is wrong and how to fix it; the CLI prints it
without a traceback. Failures of the model infrastructure are kept apart from failures of a model:
only the latter ever count against a player.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "ConformanceError",
    "DeepEvalError",
    "FatalRunError",
    "InfrastructureError",
    "ResumeMismatchError",
    "SpecError",
    "UnknownBotError",
    "UnknownGameError",
    "UnpricedModelError",
    "did_you_mean",
]


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for the choice closest to a mistyped ``name`` ("" when none is close)."""
    close = difflib.get_close_matches(name, [str(c) for c in choices], n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


class DeepEvalError(Exception):
    """Base class: an error with a message meant for the user."""


class SpecError(DeepEvalError):
    """An experiment spec (TOML) is malformed or names something impossible."""


class UnpricedModelError(SpecError):
    """A budget is set and a model it would count has no known price: its calls would cost 0.0 and the budget would
    never stop them. Raised before any model call."""


class UnknownGameError(DeepEvalError):
    """A game string names no registered game or passes a bad parameter."""


class UnknownBotError(DeepEvalError):
    """A spec names a bot that is not registered."""


class ResumeMismatchError(DeepEvalError):
    """A run directory holds results of a different experiment spec."""


class ConformanceError(DeepEvalError):
    """A game fails the conformance kit; the message lists every failed check."""


class InfrastructureError(DeepEvalError):
    """A model call failed for reasons outside the model (timeout, 429, 5xx, connection).

    A match that meets one is aborted and rescheduled; it never counts as a loss.
    """


class FatalRunError(DeepEvalError):
    """The run cannot go on (bad credentials, unknown model, a model answering as another one)."""
