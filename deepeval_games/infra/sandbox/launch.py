"""Starting a sandbox: its cgroup, pipes and bwrap process, made ready before the program is known.

Nothing of a launch depends on the program (it arrives later on stdin), so in ``cgroup`` mode launches are
made ahead as spares. Moving a process into a cgroup-v1 cgroup waits for an RCU grace period (about 10 ms
on an idle host) that would otherwise sit on every run's critical path: a spare's first process joins its
cgroup and then waits, blocked on reading one line of its stdin, until a run takes it
(:func:`take`), and a single long-lived thread makes the next spare meanwhile. That thread is the parent
of every spare (``bwrap --die-with-parent`` watches the thread that started it). Spares are keyed by
everything their command line depends on; at most :data:`MAX_SPARES` wait at once; at exit they are
killed and their cgroups removed.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import signal
import threading
from dataclasses import dataclass

from deepeval_games.infra.sandbox import bwrap, cgroup
from deepeval_games.infra.sandbox.bwrap import SandboxLimits
from deepeval_games.infra.sandbox.process import Popen, start_child
from deepeval_games.infra.sandbox.protection import Protection
from deepeval_games.infra.sandbox.protocol import BOOTSTRAP

__all__ = ["MAX_SPARES", "Launch", "LaunchKey", "discard_spares", "launch", "spare_pids", "take"]

log = logging.getLogger(__name__)

MAX_SPARES = 8
"""Most spare launches waiting at once (all keys together)."""


@dataclass(frozen=True)
class LaunchKey:
    """Everything a launch's command line depends on."""

    limits: SandboxLimits
    protection: Protection
    bubblewrap: bool
    as_root: bool


@dataclass
class Launch:
    """A started sandbox process, waiting for its payload."""

    proc: Popen
    cgroup: cgroup.MemoryCgroup | None
    result_r: int
    result_fd: int
    """The child's number of the result channel's write end."""
    info_r: int | None
    gated: bool
    """Whether the first process waits for one line on stdin before it execs bwrap (send a newline first)."""

    def discard(self) -> None:
        """Kill the process, close the parent's ends and remove the cgroup."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream and not stream.closed:
                stream.close()
        for fd in (self.result_r, self.info_r):
            if fd is not None:
                os.close(fd)
        self.release()

    def release(self) -> None:
        """Remove the cgroup (after the run; see :func:`launch`)."""
        if self.cgroup is not None and not self.cgroup.remove():
            log.error("could not remove the sandbox's memory cgroup %s", self.cgroup.path)


def launch(key: LaunchKey) -> Launch:
    """Start a sandbox for ``key``: cgroup (in ``cgroup`` mode), pipes, then the process.

    The uid the harness drops to (as root) is not part of a launch: the run picks it when it starts, so a
    run made ahead gets the same uid as one made on the spot (no sign of how a run was started).

    Raises:
        OSError: something could not be created; nothing is left behind then.
    """
    group = cgroup.create(key.limits.memory_bytes) if key.protection.memory == "cgroup" else None
    opened: list[int] = []
    try:
        result_r, result_w = os.pipe()
        opened += [result_r, result_w]
        argv = cgroup.join_argv(group, gated=True) if group is not None else []
        info_r: int | None = None
        pass_fds = [result_w]
        if key.bubblewrap:
            info_r, info_w = os.pipe()
            opened += [info_r, info_w]
            pass_fds.append(info_w)
            filter_fd = None
            if key.protection.seccomp_filter:
                filter_fd, filter_w = os.pipe()
                opened += [filter_fd, filter_w]
                os.write(filter_w, key.protection.seccomp_filter)  # a few hundred bytes: fits the pipe
                os.close(filter_w)
                opened.remove(filter_w)
                pass_fds.append(filter_fd)
            argv += bwrap.bwrap_argv(key.as_root, key.limits, info_w, filter_fd)
        argv += [bwrap.interpreter(), "-I", "-S", "-B", "-c", BOOTSTRAP]
        close_on_error = tuple(fd for fd in opened if fd not in pass_fds)
        opened.clear()  # start_child closes them all, whatever happens
        proc = start_child(argv, tuple(pass_fds), close_on_error)
    except BaseException:
        for fd in opened:
            os.close(fd)
        if group is not None:
            group.remove()
        raise
    return Launch(proc, group, result_r, result_w, info_r, gated=group is not None)


_lock = threading.Lock()
_spares: dict[LaunchKey, list[Launch]] = {}
_requests: queue.SimpleQueue[LaunchKey | None] = queue.SimpleQueue()
_maker: threading.Thread | None = None
_owner = os.getpid()


def _make_spares() -> None:
    while (key := _requests.get()) is not None:
        with _lock:
            if sum(len(v) for v in _spares.values()) >= MAX_SPARES:
                continue
        try:
            spare = launch(key)
        except OSError as exc:
            log.debug("no spare sandbox made: %s", exc)
            continue
        with _lock:
            _spares.setdefault(key, []).append(spare)


def take(key: LaunchKey) -> Launch:
    """A launch for ``key``: a waiting spare in ``cgroup`` mode if there is one, else a new one.

    In ``cgroup`` mode the next spare is requested at once.

    Raises:
        OSError: a new launch could not be made.
    """
    global _maker, _owner
    if key.protection.memory != "cgroup":
        return launch(key)
    spare = None
    with _lock:
        if _owner != os.getpid():  # a forked child: the spares and the maker thread belong to the parent
            _spares.clear()
            _maker, _owner = None, os.getpid()
        while _spares.get(key):
            candidate = _spares[key].pop()
            if candidate.proc.poll() is None:
                spare = candidate
                break
            threading.Thread(target=candidate.discard, daemon=True).start()
        if _maker is None:
            _maker = threading.Thread(target=_make_spares, name="sandbox-spares", daemon=True)
            _maker.start()
    _requests.put(key)
    return spare if spare is not None else launch(key)


def spare_pids() -> set[int]:
    """Pids of the spares waiting now (their first process; no program has reached them)."""
    with _lock:
        return {s.proc.pid for waiting in _spares.values() for s in waiting} if _owner == os.getpid() else set()


def discard_spares() -> None:
    """Kill every waiting spare and remove its cgroup (new ones are made on the next :func:`take`)."""
    if _owner != os.getpid():
        return
    with _lock:
        spares = [s for waiting in _spares.values() for s in waiting]
        _spares.clear()
    for spare in spares:
        with contextlib.suppress(Exception):
            spare.discard()


def _forget_in_child() -> None:
    """In a forked child: close its copies of the spares' pipes (a copy of a spare's stdin would keep the
    harness waiting for the end of its payload) and forget them; they belong to the parent."""
    global _lock
    _lock = threading.Lock()  # another thread of the parent may have held it at the fork
    for waiting in list(_spares.values()):
        for spare in list(waiting):
            for stream in (spare.proc.stdin, spare.proc.stdout, spare.proc.stderr):
                with contextlib.suppress(Exception):
                    if stream:
                        stream.close()
            for fd in (spare.result_r, spare.info_r):
                with contextlib.suppress(OSError, TypeError):
                    os.close(fd)  # type: ignore[arg-type]
    _spares.clear()


os.register_at_fork(after_in_child=_forget_in_child)


@atexit.register
def _at_exit() -> None:
    """At exit: stop the maker thread and discard the spares."""
    if _owner == os.getpid():
        _requests.put(None)
        discard_spares()
