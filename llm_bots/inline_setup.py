"""litellm's synchronous set-up of a model call, run on the event loop's own thread when it cannot block.

``litellm.acompletion`` does not build its request on the event loop: it hands its synchronous ``completion()``
(provider lookup, parameter mapping, the HTTP client, and, for ``acompletion``, a coroutine to await) to the loop's
default executor with ``run_in_executor`` and waits for a worker thread to run it. For a provider whose set-up only
maps parameters, such as the OpenAI API and every OpenAI-compatible server (a ``local/`` model's llama.cpp server,
vLLM, any ``openai/...`` endpoint), that set-up does no I/O. The trip through a thread then costs more than it does:
two thread wake-ups, the GIL handed over twice, the work done on another core's cold caches. That was about 0.4 ms of
CPU per call on a 2-core machine, a tenth of a call (bench/README.md, 5 December 2026).

:func:`run` runs a coroutine, as :func:`asyncio.run` does, on a new event loop whose default executor is
:class:`SetupExecutor` (set through the loop's public ``set_default_executor`` before anything uses it). It is
asyncio's own thread pool for every task, with one exception: litellm's set-up of a call to a model named with
:func:`allow` runs at once, on the loop's thread. The loop is never blocked by it, since the set-up of those providers
does no I/O. A provider whose set-up may do I/O (Vertex AI and Bedrock fetch credentials, Azure AD tokens, ...) keeps
the thread, so a slow credential refresh never stalls the other matches. The set-up is recognised by its shape:
``ctx.run`` of a partial of ``litellm.main.completion``. A litellm whose ``acompletion`` hands over anything else
simply keeps the thread.

The engine runs its loops with :func:`run` (a run, a worker process, a re-judging); the call plan
(:mod:`llm_bots.transport.plan`) names the models whose provider is in :data:`INLINE_PROVIDERS`. A loop the engine
did not make (a program calling the transport from its own loop, a Ray actor's) keeps its own executor: its calls are
set up on a worker thread, as litellm does by itself. ``DEEPEVAL_GAMES_INLINE_SETUP=0`` turns it off (every set-up on
a thread).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import os
import sys
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["ENV_VAR", "INLINE_PROVIDERS", "SetupExecutor", "allow", "enabled", "run"]

ENV_VAR = "DEEPEVAL_GAMES_INLINE_SETUP"
"""Set to ``0`` to leave litellm's set-up of every call on a worker thread."""

INLINE_PROVIDERS = frozenset({"openai"})
"""litellm providers whose set-up of a call does no I/O (the API key is passed with the call): the OpenAI API and
every OpenAI-compatible server (``openai/...`` with an ``api_base``, and ``local/`` models, routed as such)."""

_models: set[str] = set()
"""The model strings (litellm's ``model`` argument) whose calls are set up on the loop's thread."""

_T = TypeVar("_T")


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


def run(main: Coroutine[Any, Any, _T]) -> _T:
    """Run ``main`` as :func:`asyncio.run` does, on a new event loop whose default executor is a
    :class:`SetupExecutor` (asyncio's plain one when :func:`enabled` says no); the loop is closed afterwards."""
    with asyncio.Runner() as runner:
        if enabled():
            loop = runner.get_loop()
            loop.set_default_executor(SetupExecutor(loop))
        return runner.run(main)
