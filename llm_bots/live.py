"""What a run's models are doing now, for the progress line: the calls in flight (which model, the match's round,
since when) and each model's output speed over its last calls (:class:`LiveCalls`).

A slow model (a small local model on a loaded machine takes minutes a match) would otherwise leave the progress line
still between two matches; the runner draws :meth:`LiveCalls.line` beside it while a model answers. Calls answered
from the model-call cache are not counted: they say nothing of the model's speed.
"""

from __future__ import annotations

import collections
import itertools
import time
from dataclasses import dataclass, field

__all__ = ["SPEED_CALLS", "LiveCalls"]

SPEED_CALLS = 8
"""A model's speed is its output tokens over its seconds answering, summed over this many of its last calls."""


@dataclass
class _Call:
    model: str
    round: int
    started: float


@dataclass
class LiveCalls:
    """The model calls in flight in this process and each model's recent speed (module docstring)."""

    in_flight: dict[int, _Call] = field(default_factory=dict)
    speed: dict[str, collections.deque[tuple[int, float]]] = field(default_factory=dict)
    """Per model: (output tokens, seconds) of its last :data:`SPEED_CALLS` calls."""
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    def start(self, model: str, round_: int) -> int:
        """A call of ``model`` at the match's round ``round_`` is sent; returns its handle for :meth:`end`."""
        handle = next(self._ids)
        self.in_flight[handle] = _Call(model, round_, time.monotonic())
        return handle

    def end(self, handle: int, answered: tuple[int, float] | None) -> None:
        """The call ``handle`` ended: ``answered`` is its output tokens and the seconds its answer took (the
        successful attempt's; 0 or less: the time since :meth:`start`), None when it failed (not counted)."""
        call = self.in_flight.pop(handle, None)
        if call is None or answered is None:
            return
        tokens, seconds = answered
        recent = self.speed.setdefault(call.model, collections.deque(maxlen=SPEED_CALLS))
        recent.append((tokens, seconds if seconds > 0 else time.monotonic() - call.started))

    def tokens_per_second(self, model: str) -> float | None:
        """``model``'s output tokens per second over its last calls; None before one ended."""
        recent = self.speed.get(model)
        seconds = sum(s for _, s in recent) if recent else 0.0
        return sum(t for t, _ in recent) / seconds if recent and seconds > 0 else None

    def line(self) -> str:
        """The oldest call in flight as ``round 3 · local/smollm2 answering 42 s · 11.5 tok/s`` (its model's speed
        so far, once known; ``+N`` when N more calls are in flight); "" when none is."""
        if not self.in_flight:
            return ""
        call = min(self.in_flight.values(), key=lambda c: c.started)
        text = f"round {call.round} · {call.model} answering {time.monotonic() - call.started:.0f} s"
        speed = self.tokens_per_second(call.model)
        if speed is not None:
            text += f" · {speed:.1f} tok/s"
        if len(self.in_flight) > 1:
            text += f" (+{len(self.in_flight) - 1} more)"
        return text
