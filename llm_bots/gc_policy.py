"""Every setting of the cyclic garbage collector the engine makes, in one module: what a run raises while it is on,
and what is moved out of the collector's reach for good (:func:`freeze_loaded`).

**Long-lived tables.** :func:`freeze_loaded` collects once, then moves every object alive (``gc.freeze``) out of the
collector's walks: after the first import of litellm (:func:`llm_bots.model_info.litellm`; its tables are hundreds of
thousands of objects that live as long as the process, and every full collection a run triggers would otherwise walk
them, tenths of a second each) and in the fork server before it forks its workers (pyspiel, the tasks, litellm).

**During a run.**

Every model call allocates thousands of short-lived container objects (litellm's response, logging and pydantic
objects, the HTTP client's), and a run keeps many more alive for a while (matches in flight, their chats and
records). With CPython's default thresholds ``(700, 10, 10)`` the collector walks the youngest generation every
700 net new objects, the middle one every tenth time and the whole heap every hundredth: at 64 matches in flight
that is about a sixth of a run's CPU, though almost nothing it walks is cyclic garbage (reference counting frees
the rest at once).

While a run with model players is on (:meth:`llm_bots.llm_bot.ModelRuntime.open` until its :meth:`close`), the
older generations' thresholds are raised to :data:`RUN_THRESHOLDS` (a middle collection every 100th young one
instead of every 10th, a full one after 100 middle ones instead of 10), the kind of setting long-running Python
servers use for the same reason. The young collections stay as frequent as before: they are cheap, and they free
cyclic garbage while its memory is still in the CPU's caches, so new objects reuse warm memory. (Raising the young
threshold instead, to 50,000, removed even more collector time from a run of 64 matches at once, but made a run of
one match at a time slower: garbage lingered, new objects went to cold memory.) Cyclic garbage that lives through
a young collection waits longer to be freed; nothing is frozen and nothing else changes. When the last open
runtime closes, the middle collection the run put off, if the old thresholds make it due, is made (on the run's time,
not on whatever the process does next) and the thresholds the process had before are put back, unless the program
changed them meanwhile. A full collection is never forced: CPython makes one only once a quarter of the long-lived
heap is new since the last. Forcing one whenever the old thresholds made it due walked every object in the process:
in a program that imported litellm before the engine (so its tables were not frozen, :func:`model_info.litellm`),
about 430,000 objects, 0.2 s at the end of one run in three of a sequence of runs.

Set ``DEEPEVAL_GAMES_GC`` to three numbers (``700,100,100``) to use other thresholds during runs, or to ``0`` to
leave the collector alone. A process whose collector is off is left as it is, and a threshold already higher than
the run's stays.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import threading
from collections.abc import Iterator

__all__ = ["ENV_VAR", "RUN_THRESHOLDS", "freeze_loaded", "hold", "release", "run_policy"]

log = logging.getLogger(__name__)

RUN_THRESHOLDS = (700, 100, 100)
"""The collector's thresholds while a run is on (CPython's defaults: 700, 10, 10); each is a floor: a process's
own higher threshold stays."""

ENV_VAR = "DEEPEVAL_GAMES_GC"
"""Environment variable: other thresholds for runs (``a,b,c``), or ``0`` to leave the collector's setting alone."""

_lock = threading.Lock()
_holders = 0
_saved: tuple[int, int, int] | None = None
"""The thresholds before the first holder raised them (None: nothing was changed)."""
_raised: tuple[int, int, int] | None = None
"""The thresholds the first holder set."""


def freeze_loaded(collect: bool = False) -> None:
    """Move every object alive now out of the collector's walks for the rest of the process (``gc.freeze``);
    ``collect``: collect the garbage first (a fork server, before its workers share its memory)."""
    if collect:
        gc.collect()
    gc.freeze()


def _wanted() -> tuple[int, int, int] | None:
    """The thresholds for runs (None: leave the collector alone)."""
    value = os.environ.get(ENV_VAR, "").strip()
    if not value:
        return RUN_THRESHOLDS
    if value == "0":
        return None
    try:
        first, second, third = (int(part) for part in value.split(","))
    except ValueError:
        log.warning("%s=%r is not three whole numbers (or 0); the collector's setting is left alone", ENV_VAR, value)
        return None
    if min(first, second, third) < 1:
        log.warning("%s=%r: every threshold must be >= 1; the collector's setting is left alone", ENV_VAR, value)
        return None
    return first, second, third


def hold() -> None:
    """A run starts: raise the collector's thresholds (the first holder only). Pair with :func:`release`."""
    global _holders, _saved, _raised
    with _lock:
        _holders += 1
        if _holders > 1:
            return
        wanted = _wanted()
        current = gc.get_threshold()
        if wanted is None or not gc.isenabled():
            return
        raised = (max(current[0], wanted[0]), max(current[1], wanted[1]), max(current[2], wanted[2]))
        if raised != current:
            _saved, _raised = current, raised
            gc.set_threshold(*raised)


def release() -> None:
    """A run ended: when no other run holds the setting, make the middle collection the old thresholds make due
    and restore them (unless the program set its own meanwhile). A full collection is left to CPython's own rule.
    An extra call does nothing."""
    global _holders, _saved, _raised
    with _lock:
        if _holders == 0:
            return
        _holders -= 1
        if _holders or _saved is None:
            return
        saved, raised, _saved, _raised = _saved, _raised, None, None
        if gc.get_threshold() != raised:  # someone else set the collector meanwhile: theirs stays
            return
        if gc.get_count()[1] > saved[1] and gc.isenabled():  # what the run put off is collected on its own time
            gc.collect(1)
        gc.set_threshold(*saved)


@contextlib.contextmanager
def run_policy() -> Iterator[None]:
    """:func:`hold` on entry, :func:`release` on exit."""
    hold()
    try:
        yield
    finally:
        release()
