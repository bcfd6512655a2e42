"""The cyclic garbage collector's setting while a run with model players is on.

Every model call allocates thousands of short-lived container objects (litellm's response, logging and pydantic
objects, the HTTP client's), and a run keeps many more alive for a while (matches in flight, their chats and
records). With CPython's default thresholds ``(700, 10, 10)`` the collector walks the youngest generation every
700 net new objects, the middle one every tenth time and the whole heap every hundredth: at 64 matches in flight
that is about a sixth of a run's CPU, though almost nothing it walks is cyclic garbage (reference counting frees
the rest at once).

While a run with model players is on (:meth:`llm_bots.llm_bot.ModelRuntime.open` until its :meth:`close`), the
youngest generation's threshold is raised to :data:`RUN_GEN0_THRESHOLD`, the setting many long-running Python
servers use for the same reason: young collections are rarer (each one walks more objects, so their total cost
hardly changes) and middle and full collections, which cost the most, become rare. Cyclic garbage still gets
collected, only later: at most the threshold's worth of objects wait (a few MB). Nothing is frozen and nothing
else changes. When the last open runtime closes, the youngest generation is collected (on the run's time, not
whatever the process does next) and the thresholds the process had before are put back.

Set ``DEEPEVAL_GAMES_GC_GEN0`` to a number to use another threshold, or to ``0`` to leave the collector alone. A
process whose collector is off, or whose youngest threshold is already at least this high, is left as it is.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import threading
from collections.abc import Iterator

__all__ = ["ENV_VAR", "RUN_GEN0_THRESHOLD", "hold", "release", "run_policy"]

log = logging.getLogger(__name__)

RUN_GEN0_THRESHOLD = 50_000
"""The youngest generation's threshold while a run is on (CPython's default: 700)."""

ENV_VAR = "DEEPEVAL_GAMES_GC_GEN0"
"""Environment variable: another threshold for runs, or ``0`` to leave the collector's setting alone."""

_lock = threading.Lock()
_holders = 0
_saved: tuple[int, int, int] | None = None
"""The thresholds before the first holder raised them (None: nothing was changed)."""
_raised = 0
"""The youngest threshold the first holder set."""


def _wanted() -> int:
    value = os.environ.get(ENV_VAR, "").strip()
    if not value:
        return RUN_GEN0_THRESHOLD
    try:
        return max(0, int(value))
    except ValueError:
        log.warning("%s=%r is not a whole number; the collector's setting is left alone", ENV_VAR, value)
        return 0


def hold() -> None:
    """A run starts: raise the youngest generation's threshold (the first holder only). Pair with :func:`release`."""
    global _holders, _saved, _raised
    with _lock:
        _holders += 1
        if _holders > 1:
            return
        wanted = _wanted()
        current = gc.get_threshold()
        if wanted and gc.isenabled() and current[0] < wanted:
            _saved, _raised = current, wanted
            gc.set_threshold(wanted, current[1], current[2])


def release() -> None:
    """A run ended: when no other run holds the setting, collect the youngest generation and restore the
    thresholds the process had before. An extra call does nothing."""
    global _holders, _saved
    with _lock:
        if _holders == 0:
            return
        _holders -= 1
        if _holders or _saved is None:
            return
        saved, _saved = _saved, None
        if gc.get_threshold()[0] != _raised:  # someone else set the collector meanwhile: theirs stays
            return
        if gc.isenabled():
            gc.collect(0)
        gc.set_threshold(*saved)


@contextlib.contextmanager
def run_policy() -> Iterator[None]:
    """:func:`hold` on entry, :func:`release` on exit."""
    hold()
    try:
        yield
    finally:
        release()
