"""The asyncio guard behind litellm's own timeout: `guarded` awaits a call for at most about its time, one watchdog
timer per event loop (not a timer per call) cancelling the calls past their deadline."""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

__all__ = ["guarded"]

_WATCH_S = 0.5
"""How often a loop's :class:`_Watchdog` looks for guarded calls past their deadline (a guard fires at most this
late; it is a backstop behind litellm's own timeout, :data:`llm_bots.transport.plan._GUARD_GRACE_S` later)."""


class _Watchdog:
    """The guard of every model call awaited on one event loop: a call's task past its deadline is cancelled, and
    :func:`guarded` turns that cancellation into ``TimeoutError``, as ``asyncio.timeout`` would. One timer a loop,
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

    async def guarded(call: Any, seconds: float) -> Any:
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

    async def guarded(call: Any, seconds: float) -> Any:
        """Await ``call`` for at most ``seconds`` (then TimeoutError)."""
        return await asyncio.wait_for(call, timeout=seconds)
