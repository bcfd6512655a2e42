"""Per-model limits on model calls: calls in flight, requests and tokens per minute, adaptive concurrency.

Every attempt :func:`llm_bots.transport.call.complete` makes is bracketed by the run's limiter (the one its
:class:`llm_bots.llm_bot.ModelRuntime` carries, handed to each call as an argument)::

    grant = await limiter.acquire(key, limits, est_tokens)   # waits until the call may start
    ...                                                      # the HTTP request
    await limiter.release(grant, used_tokens, rate_limited, retry_after_s)

``key`` names the model and endpoint (:func:`limit_key`: the model string and its ``api_base``), so every player on
one model shares its limits. ``limits`` (:class:`Limits`) are the player's settings ``max_concurrency``, ``rpm``,
``tpm`` and ``adaptive_concurrency``. ``est_tokens`` is the call's size estimated before it is sent (prompt plus
the reply cap); ``used_tokens`` is what the reply's usage reported (None when the attempt failed), which replaces
the estimate in the tokens-per-minute window.

What :class:`LocalLimiter` (the default, in this process) guarantees per key:

1. **concurrency**: at most ``max_concurrency`` calls in flight (fewer while adaptive concurrency has cut it);
2. **requests per minute**: at most ``rpm`` calls start in any window of :data:`RATE_WINDOW_S` seconds;
3. **tokens per minute**: the calls started in any such window add up to at most ``tpm`` tokens (estimates for
   calls in flight, reported usage for finished ones); a single call larger than ``tpm`` waits for an empty window;
4. **adaptive concurrency** (``adaptive_concurrency = true``, the default): a rate-limited reply (HTTP 429 or the
   provider's rate-limit error) halves the key's concurrency (once per congestion episode: replies to calls
   started before the last cut do not cut again); every successful call while the limit is in use adds
   ``1/concurrency``, so the limit climbs back by one per round of calls, never above ``max_concurrency``;
5. **Retry-After**: a rate-limited reply carrying Retry-After pauses every call of the key for that long (capped by
   ``retry_after_max_s``), not only the call that got it.

**Plugging in another limiter.** The interface is :class:`Limiter`: two coroutines whose arguments and results are
plain picklable values (str, ints, floats, bools, the frozen dataclasses :class:`Limits` and :class:`Grant`).
An executor that runs matches in several processes or on a cluster keeps one :class:`LocalLimiter` where the
limits must hold (the driver process, a Ray actor) and gives each worker's model runtime a proxy that forwards the
two calls to it::

    class Proxy:                                   # in a worker process
        async def acquire(self, key, limits, est_tokens=0):
            return await ask_driver("acquire", key, limits, est_tokens)       # -> Grant
        async def release(self, grant, used_tokens=None, rate_limited=False, retry_after_s=None):
            send_to_driver("release", grant, used_tokens, rate_limited, retry_after_s)  # may return at once

    runtime.limiter = Proxy()                      # the worker's ModelRuntime, before its first model call

``Grant.granted_at`` is the limiter's own clock (``time.monotonic()`` where it runs); a proxy hands grants back
unchanged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import logging
import math
import threading
import time
from collections import deque
from typing import Any, Protocol, runtime_checkable

from llm_bots.model_config import ModelConfig

__all__ = [
    "PROCESS_LIMITER",
    "RATE_WINDOW_S",
    "Grant",
    "Limiter",
    "Limits",
    "LocalLimiter",
    "limit_key",
    "limits_of",
]

logger = logging.getLogger(__name__)

RATE_WINDOW_S = 60.0
"""The window of ``rpm`` and ``tpm``, in seconds (a minute; tests shorten it)."""

_DECREASE = 0.5  # multiplicative decrease of adaptive concurrency on a rate-limited reply


@dataclasses.dataclass(frozen=True)
class Limits:
    """The limits of one model and endpoint, as a player's settings give them (picklable).

    Attributes:
        max_concurrency: calls in flight at once, at most.
        rpm: requests started per window (:data:`RATE_WINDOW_S`, a minute), at most; None: no limit.
        tpm: tokens per window, at most; None: no limit.
        adaptive: cut concurrency on rate-limited replies and let it recover after successes.
        retry_after_max_s: the longest pause a Retry-After header may impose on the whole key.
        window_s: the window of ``rpm`` and ``tpm`` in seconds.
    """

    max_concurrency: int = 4
    rpm: int | None = None
    tpm: int | None = None
    adaptive: bool = True
    retry_after_max_s: float = 300.0
    window_s: float = RATE_WINDOW_S


@dataclasses.dataclass(frozen=True)
class Grant:
    """Permission for one call to start, handed back to :meth:`Limiter.release` when it ends (picklable).

    Attributes:
        key: the limit key it was granted under.
        serial: its number, unique within the limiter that granted it.
        est_tokens: the tokens the call was estimated at (counted in the tokens window until corrected).
        granted_at: when it was granted, on the limiter's clock (``time.monotonic()`` where the limiter runs).
    """

    key: str
    serial: int
    est_tokens: int = 0
    granted_at: float = 0.0


@runtime_checkable
class Limiter(Protocol):
    """What :func:`llm_bots.transport.call.complete` needs from a limiter: acquire before an attempt, release after."""

    async def acquire(self, key: str, limits: Limits, est_tokens: int = 0) -> Grant:
        """Wait until a call under ``key`` may start within ``limits``; count it as started."""
        ...

    async def release(
        self,
        grant: Grant,
        used_tokens: int | None = None,
        rate_limited: bool = False,
        retry_after_s: float | None = None,
    ) -> None:
        """The call of ``grant`` ended: with a reply that used ``used_tokens`` tokens (None: no reply), rate
        limited or not (a 429), and the Retry-After the provider asked for (None: none)."""
        ...


def limit_key(config: ModelConfig) -> str:
    """The key a model's limits are kept under: its model string and endpoint (one per provider account)."""
    return f"{config.model} {config.api_base or ''}"


@functools.lru_cache(maxsize=1024)
def limits_of(config: ModelConfig) -> Limits:
    """The :class:`Limits` a model config sets (remembered per config: computed once per model)."""
    return Limits(
        max_concurrency=config.max_concurrency,
        rpm=config.rpm,
        tpm=config.tpm,
        adaptive=config.adaptive_concurrency,
        retry_after_max_s=config.retry_after_max_s,
        window_s=RATE_WINDOW_S,
    )


class _KeyState:
    """What a :class:`LocalLimiter` keeps for one key. Every field is guarded by the limiter's lock.

    A call counts against ``rpm`` and ``tpm`` from the moment it is granted until a window after its release: the
    request reached the provider somewhere in between, so however late it left this process (a stalled event loop,
    a slow first call), no window at the provider ever holds more than the limits allow.
    """

    __slots__ = (
        "cap",
        "cuts",
        "flight_tokens",
        "granted",
        "in_flight",
        "last_cut",
        "limits",
        "open_tokens",
        "paused_until",
        "rate_limited",
        "released",
        "slots",
        "token_sum",
        "tokens",
        "waiters",
    )

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.cap = float(limits.max_concurrency)  # the adaptive limit; whole calls: int(cap), at least 1
        self.slots = limits.max_concurrency  # allowed(): kept up to date by resize()
        self.in_flight = 0
        self.waiters: deque[asyncio.Future[None]] = deque()
        self.released: deque[float] = deque()  # release times of the calls still in the rpm window
        self.tokens: deque[tuple[float, float]] = deque()  # (release time, tokens) still in the tpm window
        self.token_sum = 0.0  # tokens of ``tokens``
        self.flight_tokens = 0.0  # estimates of the calls in flight
        self.open_tokens: dict[int, float] = {}  # serial -> its estimate, while in flight
        self.paused_until = 0.0
        self.last_cut = -math.inf
        self.cuts = 0
        self.granted = 0
        self.rate_limited = 0

    def allowed(self) -> int:
        """Calls that may be in flight now."""
        return self.slots

    def resize(self) -> None:
        """Work out :meth:`allowed` again (after ``cap`` or ``limits`` changed)."""
        if not self.limits.adaptive:
            self.slots = self.limits.max_concurrency
        else:
            self.slots = max(1, min(self.limits.max_concurrency, int(self.cap)))

    def delay(self, now: float, est_tokens: int) -> tuple[float, bool]:
        """When a call of ``est_tokens`` tokens may start: (seconds to wait, <= 0 for now; whether it must also
        wait for a call in flight to end)."""
        limits = self.limits
        wait = self.paused_until - now
        on_release = False
        horizon = now - limits.window_s
        if limits.rpm is not None:
            released = self.released
            while released and released[0] <= horizon:
                released.popleft()
            excess = self.in_flight + len(released) - limits.rpm + 1  # calls that must leave the window first
            if excess > len(released):
                on_release = True
            elif excess > 0:
                wait = max(wait, released[excess - 1] - horizon)
        if limits.tpm is not None:
            tokens = self.tokens
            while tokens and tokens[0][0] <= horizon:
                self.token_sum -= tokens.popleft()[1]
            total = self.token_sum + self.flight_tokens
            if total > 0 and total + est_tokens > limits.tpm:
                excess_tokens = total + est_tokens - limits.tpm
                freed = 0.0
                for released_at, amount in tokens:  # the oldest leave the window first
                    freed += amount
                    if freed >= excess_tokens:
                        wait = max(wait, released_at - horizon)
                        break
                else:
                    if self.flight_tokens > 0:
                        on_release = True
                    elif tokens:  # alone in an empty window, even a call larger than tpm may start
                        wait = max(wait, tokens[-1][0] - horizon)
        return wait, on_release

    def start(self, serial: int, est_tokens: int) -> None:
        """Count a call as started."""
        self.in_flight += 1
        self.granted += 1
        if self.limits.tpm is not None:
            self.flight_tokens += est_tokens
            self.open_tokens[serial] = float(est_tokens)

    def end(self, now: float, serial: int, used_tokens: int | None) -> None:
        """Count a call as ended: it stays in the rate windows for a window from now."""
        self.in_flight = max(0, self.in_flight - 1)
        if self.limits.rpm is not None:
            self.released.append(now)
        estimate = self.open_tokens.pop(serial, None) if self.open_tokens else None
        if estimate is not None:
            self.flight_tokens = max(0.0, self.flight_tokens - estimate)
            amount = float(used_tokens) if used_tokens is not None and used_tokens > 0 else estimate
            self.tokens.append((now, amount))
            self.token_sum += amount


class LocalLimiter:
    """The limiter of one process: the guarantees listed in :mod:`llm_bots.transport.limits`, per key.

    Safe to share between event loops and threads (a waiting call is woken on its own loop).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[str, _KeyState] = {}
        self._serials = itertools.count(1)

    def _state(self, key: str, limits: Limits) -> _KeyState:
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = _KeyState(limits)
        elif state.limits is not limits and state.limits != limits and state.in_flight == 0 and not state.waiters:
            # an idle key takes the newest settings (a later run of the process may set others); while calls
            # are in flight the first settings seen stay, so two players of one model share one set of limits
            state.limits = limits
            state.cap = float(limits.max_concurrency)
            state.resize()
        return state

    def try_acquire(self, key: str, limits: Limits, est_tokens: int = 0) -> Grant | None:
        """:meth:`acquire` when the call may start at once, without a coroutine; None when it would have to wait
        (then await :meth:`acquire`, which queues it)."""
        with self._lock:
            state = self._state(key, limits)
            if state.waiters:
                return None
            now = time.monotonic()
            if state.limits.rpm is None and state.limits.tpm is None:  # the key's settings, as delay() reads
                if state.paused_until > now:
                    return None
            else:
                wait, on_release = state.delay(now, est_tokens)
                if wait > 0 or on_release:
                    return None
            if state.in_flight >= state.allowed():
                return None
            serial = next(self._serials)
            state.start(serial, est_tokens)
            return Grant(key, serial, est_tokens, now)

    async def acquire(self, key: str, limits: Limits, est_tokens: int = 0) -> Grant:
        """Wait until a call under ``key`` may start within ``limits``; count it as started.

        A call that may not start waits in the key's queue until a call ends or, when only time holds it (a pause,
        a full rate window), until that time has passed, whichever comes first; then it looks again, first in line.
        """
        loop = asyncio.get_running_loop()
        front = False
        while True:
            with self._lock:
                state = self._state(key, limits)
                now = time.monotonic()
                wait, on_release = state.delay(now, est_tokens)
                if wait <= 0 and not on_release and state.in_flight < state.allowed() and (front or not state.waiters):
                    serial = next(self._serials)
                    state.start(serial, est_tokens)
                    if state.waiters:
                        self._wake(state)  # the next in line looks too, while slots are free
                    return Grant(key, serial, est_tokens, now)
                waiter = loop.create_future()
                if front:
                    state.waiters.appendleft(waiter)
                else:
                    state.waiters.append(waiter)
            timer = loop.call_later(wait, _set_if_pending, waiter) if wait > 0 else None
            try:
                await waiter
            except asyncio.CancelledError:
                with self._lock:
                    if waiter in state.waiters:
                        state.waiters.remove(waiter)
                    if waiter.done() and not waiter.cancelled():
                        self._wake(state)  # it was woken for a turn it will not take: pass the turn on
                raise
            finally:
                if timer is not None:
                    timer.cancel()
            with self._lock:
                if waiter in state.waiters:  # woken by its timer: it leaves the queue to look again
                    state.waiters.remove(waiter)
            front = True

    async def release(
        self,
        grant: Grant,
        used_tokens: int | None = None,
        rate_limited: bool = False,
        retry_after_s: float | None = None,
    ) -> None:
        """The call of ``grant`` ended (see :meth:`Limiter.release`)."""
        self.release_nowait(grant, used_tokens, rate_limited, retry_after_s)

    def release_nowait(
        self,
        grant: Grant,
        used_tokens: int | None = None,
        rate_limited: bool = False,
        retry_after_s: float | None = None,
    ) -> None:
        """:meth:`release` without a coroutine (for proxies that forward releases from another thread)."""
        with self._lock:
            state = self._states.get(grant.key)
            if state is None:
                return
            limits = state.limits
            saturated = state.in_flight >= state.allowed()
            now = time.monotonic()
            state.end(now, grant.serial, used_tokens)
            if rate_limited:
                state.rate_limited += 1
                if retry_after_s is not None and retry_after_s > 0:
                    pause = min(float(retry_after_s), limits.retry_after_max_s)
                    state.paused_until = max(state.paused_until, now + pause)
                if limits.adaptive and grant.granted_at >= state.last_cut:
                    state.cap = max(1.0, min(state.cap, float(limits.max_concurrency)) * _DECREASE)
                    state.resize()
                    state.last_cut = now
                    state.cuts += 1
                    logger.info(
                        "%s: rate limited; concurrency cut to %d%s",
                        grant.key.strip(),
                        state.allowed(),
                        f", paused {retry_after_s:.2f}s" if retry_after_s else "",
                    )
            elif used_tokens is not None and limits.adaptive and saturated and state.cap < limits.max_concurrency:
                state.cap = min(float(limits.max_concurrency), state.cap + 1.0 / state.cap)
                state.resize()
            if state.waiters:
                self._wake(state)

    def _wake(self, state: _KeyState) -> None:
        """Wake as many waiters as there are free slots (the caller holds the lock)."""
        free = state.allowed() - state.in_flight
        while free > 0 and state.waiters:
            waiter = state.waiters.popleft()
            if waiter.done():
                continue
            loop = waiter.get_loop()
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if loop is running:
                waiter.set_result(None)
            else:
                try:
                    loop.call_soon_threadsafe(_set_if_pending, waiter)
                except RuntimeError:  # its loop is closed: nobody waits there any more
                    continue
            free -= 1

    def snapshot(self, key: str) -> dict[str, Any]:
        """The state of ``key`` (for logs and tests): ``allowed``, ``in_flight``, ``waiting``, ``cuts``,
        ``granted``, ``rate_limited``, ``paused_s`` (pause left), ``tokens_in_window``."""
        with self._lock:
            state = self._states.get(key)
            if state is None:
                return {}
            return {
                "allowed": state.allowed(),
                "in_flight": state.in_flight,
                "waiting": len(state.waiters),
                "cuts": state.cuts,
                "granted": state.granted,
                "rate_limited": state.rate_limited,
                "paused_s": max(0.0, state.paused_until - time.monotonic()),
                "tokens_in_window": state.token_sum + state.flight_tokens,
            }


PROCESS_LIMITER: Limiter = LocalLimiter()
"""The limiter of this process's calls that are given none: a run's :class:`~llm_bots.llm_bot.ModelRuntime` in this
process (unless it is handed another) and a direct :func:`~llm_bots.transport.call.complete` call. Sharing it keeps
one model's limits (a local server's one slot, a provider's ``rpm``) across every run and call of the process; a
worker process's runtime carries its driver's proxy instead. It is never replaced: there is no setter."""


def _set_if_pending(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
