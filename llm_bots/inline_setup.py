"""litellm's synchronous set-up of a model call, run on the event loop's own thread when it cannot block.

``litellm.acompletion`` does not build its request on the event loop: it hands its synchronous ``completion()``
(provider lookup, parameter mapping, the HTTP client, and, for ``acompletion``, a coroutine to await) to the loop's
default executor with ``run_in_executor`` and waits for a worker thread to run it. For a provider whose set-up only
maps parameters, such as the OpenAI API and every OpenAI-compatible server (a ``local/`` model's llama.cpp server,
vLLM, any ``openai/...`` endpoint), that set-up does no I/O. The trip through a thread then costs more than it does:
two thread wake-ups, the GIL handed over twice, the work done on another core's cold caches. That was about 0.4 ms of
CPU per call on a 2-core machine, a tenth of a call (bench/README.md, 5 December 2026).

:func:`install` gives a running event loop a default executor, :class:`SetupExecutor`. It is asyncio's own thread
pool for every task, with one exception: litellm's set-up of a call to a model named with :func:`allow` runs at once,
on the loop's thread. The loop is never blocked by it, since the set-up of those providers does no I/O. A provider
whose set-up may do I/O (Vertex AI and Bedrock fetch credentials, Azure AD tokens, ...) keeps the thread, so a slow
credential refresh never stalls the other matches. The set-up is recognised by its shape: ``ctx.run`` of a partial of
``litellm.main.completion``. A litellm whose ``acompletion`` hands over anything else simply keeps the thread.

The transport (:mod:`llm_bots.transport.call`) installs it on the loop of its first call and names the models whose
provider is in :data:`INLINE_PROVIDERS`. ``DEEPEVAL_GAMES_INLINE_SETUP=0`` turns it off (every set-up on a thread, as
litellm does by itself). A loop whose default executor is not asyncio's plain thread pool (one the program chose) is
left as it is.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import os
import sys
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["ENV_VAR", "INLINE_PROVIDERS", "SetupExecutor", "allow", "enabled", "install"]

ENV_VAR = "DEEPEVAL_GAMES_INLINE_SETUP"
"""Set to ``0`` to leave litellm's set-up of every call on a worker thread."""

INLINE_PROVIDERS = frozenset({"openai"})
"""litellm providers whose set-up of a call does no I/O (the API key is passed with the call): the OpenAI API and
every OpenAI-compatible server (``openai/...`` with an ``api_base``, and ``local/`` models, routed as such)."""

_models: set[str] = set()
"""The model strings (litellm's ``model`` argument) whose calls are set up on the loop's thread."""

_installed: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
"""The loops :func:`install` looked at (with its executor or, when the program chose another, without)."""

_T = TypeVar("_T")

_MISSING = object()
"""What :func:`install` reads from a loop without asyncio's ``_default_executor`` (another loop implementation)."""


def enabled() -> bool:
    """Whether set-ups may run on the loop's thread (``DEEPEVAL_GAMES_INLINE_SETUP`` is not ``0``)."""
    return os.environ.get(ENV_VAR, "1").strip() != "0"


def allow(model: str) -> None:
    """Set up every later call to ``model`` (litellm's model string) on the loop's thread."""
    _models.add(model)


def _setup_model(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The model of litellm's set-up of a call when ``fn`` is one (``ctx.run`` of a partial of its ``completion``),
    else None."""
    if args or kwargs or type(fn) is not functools.partial or len(fn.args) != 1 or fn.keywords:
        return None
    inner = fn.args[0]
    if type(inner) is not functools.partial:
        return None
    main = sys.modules.get("litellm.main")
    if main is None or inner.func is not getattr(main, "completion", None):
        return None
    model = inner.keywords.get("model")
    return model if isinstance(model, str) else None


class SetupExecutor(concurrent.futures.ThreadPoolExecutor):
    """An event loop's default executor: asyncio's own thread pool, except that litellm's set-up of a call to a model
    named with :func:`allow` runs at once on the loop's thread (see the module documentation)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(thread_name_prefix="asyncio")
        self._loop_ref = weakref.ref(loop)

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[_T]:
        """Run ``fn`` at once when it is an allowed set-up submitted from the loop's own thread; else in the pool."""
        model = _setup_model(fn, args, kwargs) if _models else None
        if model is not None and model in _models and asyncio._get_running_loop() is self._loop_ref():
            future: concurrent.futures.Future[_T] = concurrent.futures.Future()
            try:
                result = fn()
            except Exception as exc:  # handed to the awaiting coroutine, as a worker thread would
                future.set_exception(exc)
            else:
                future.set_result(result)
            return future
        return super().submit(fn, *args, **kwargs)


def install(loop: asyncio.AbstractEventLoop) -> bool:
    """Give ``loop`` a :class:`SetupExecutor` as its default executor, once; whether it has one.

    A loop that has not made its default executor yet, or made asyncio's plain one (e.g. for ``asyncio.to_thread``),
    gets one; the plain one is shut down without waiting (its threads finish what they were given). A loop with an
    executor the program set is left alone.
    """
    if loop in _installed:
        return isinstance(getattr(loop, "_default_executor", None), SetupExecutor)
    _installed.add(loop)
    if not enabled():
        return False
    current = getattr(loop, "_default_executor", _MISSING)
    if current is not None and type(current) is not concurrent.futures.ThreadPoolExecutor:
        return isinstance(current, SetupExecutor)  # another loop implementation, or the program's own executor
    loop.set_default_executor(SetupExecutor(loop))
    if current is not None:
        current.shutdown(wait=False)
    return True
