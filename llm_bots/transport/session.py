"""The connection pool: one aiohttp session per event loop that every litellm call of the loop goes through
(`shared_session`), with no connection limit of its own, closed when its loop shuts down."""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from llm_bots.model_info import litellm as _litellm

__all__ = ["shared_session"]


_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
_closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
_recent: tuple[weakref.ref[asyncio.AbstractEventLoop], Any] | None = None
"""The loop and session of the last lookup (a run asks from one loop, once per call)."""


def shared_session() -> Any:
    """The aiohttp session every litellm call of the running event loop goes through (litellm's ``shared_session``).

    Its connector has no connection limit of its own: the limiter (:mod:`llm_bots.transport.limits`) already bounds the
    calls in flight per model, so the pool holds exactly the connections the limits admit. litellm's own pool (1,000
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
