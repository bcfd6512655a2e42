"""A cgroup-v1 memory cgroup per sandbox: every page its processes hold, charged and bounded in one place.

Address-space limits bound each process's mappings only; pages a program holds outside them (tmpfs it
mounted in a nested namespace, memfds, SysV shared memory, page cache) escape such limits. A memory
cgroup charges all of them to the sandbox and, at its limit, the kernel reclaims and then OOM-kills inside
the cgroup, never outside it.

Where the cgroup lives: the memory controller's mount is read from ``/proc/self/mountinfo`` (a ``cgroup``
mount with the ``memory`` option; the cgroup2 mount of these hosts has no memory controller), this
process's own cgroup from ``/proc/self/cgroup``, and each sandbox gets a child of the latter, named
``deepeval-sandbox-<pid>-<n>``. :func:`probe` tries the whole cycle once (create, limit, join a process,
see it charged, remove) before anything relies on it. The sandbox's first process joins its cgroup before
it execs bwrap (:func:`join_argv`), so every process of the sandbox is born inside. After the run the
cgroup's peak usage and OOM-kill count are read, anything still inside is killed and the cgroup removed;
cgroups left by a process that died are removed the next time one is created.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["MemoryCgroup", "create", "join_argv", "own_memory_cgroup", "probe"]

_PREFIX = "deepeval-sandbox-"
_counter = itertools.count()
_swept = threading.Event()


def _mount_of_memory_controller(mountinfo: str) -> tuple[Path, str] | None:
    """(mount point, root of the mount inside the hierarchy) of the cgroup-v1 memory controller."""
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 10:
            continue
        post = line.split(" - ", 1)[1].split()
        if len(post) >= 3 and post[0] == "cgroup" and "memory" in post[2].split(","):
            return Path(fields[4]), fields[3]
    return None


def own_memory_cgroup(mountinfo: str | None = None, proc_cgroup: str | None = None) -> Path | None:
    """This process's cgroup directory in the memory controller's hierarchy, or None if there is none."""
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text() if mountinfo is None else mountinfo
        proc_cgroup = Path("/proc/self/cgroup").read_text() if proc_cgroup is None else proc_cgroup
    except OSError:
        return None
    found = _mount_of_memory_controller(mountinfo)
    if found is None:
        return None
    mount_point, mount_root = found
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and "memory" in parts[1].split(","):
            path = parts[2]
            if mount_root != "/" and (path == mount_root or path.startswith(mount_root + "/")):
                path = path[len(mount_root) :]
            return mount_point / path.lstrip("/")
    return None


def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="ascii") as file:
        file.write(value)


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class MemoryCgroup:
    """One sandbox's memory cgroup (created by :func:`create`; :meth:`remove` it when the run ends)."""

    path: Path
    limit_bytes: int

    @property
    def procs(self) -> Path:
        """``cgroup.procs``: a pid written here moves that process into the cgroup."""
        return self.path / "cgroup.procs"

    def peak_bytes(self) -> int | None:
        """Highest memory the cgroup's processes held at once (``memory.max_usage_in_bytes``)."""
        return _read_int(self.path / "memory.max_usage_in_bytes")

    def oom_kills(self) -> int:
        """Processes the kernel killed inside the cgroup for reaching its limit."""
        try:
            text = (self.path / "memory.oom_control").read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def limit_hit(self) -> bool:
        """Whether a charge ever failed at the limit (``memory.failcnt``), even if nothing was killed."""
        return (_read_int(self.path / "memory.failcnt") or 0) > 0

    def remove(self, wait_s: float = 5.0) -> bool:
        """Kill whatever still runs inside and remove the cgroup; False if it could not be removed."""
        return _remove(self.path, wait_s)


def _remove(path: Path, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return True
        except (OSError, ValueError):
            pids = []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)


def _sweep(parent: Path) -> None:
    """Remove cgroups that sandboxes of dead processes left behind (once per process)."""
    if _swept.is_set():
        return
    _swept.set()
    with contextlib.suppress(OSError):
        for child in parent.iterdir():
            owner = child.name.removeprefix(_PREFIX).split("-", 1)[0]
            if not child.name.startswith(_PREFIX) or not owner.isdigit() or int(owner) == os.getpid():
                continue
            try:
                os.kill(int(owner), 0)
            except ProcessLookupError:
                _remove(child, 1.0)
            except PermissionError:
                pass


def create(limit_bytes: int, parent: Path | None = None) -> MemoryCgroup:
    """A new memory cgroup under this process's own, limited to ``limit_bytes`` (swap included where counted).

    Raises:
        OSError: the cgroup could not be created or limited (then nothing is left behind).
    """
    parent = parent or own_memory_cgroup()
    if parent is None:
        raise OSError("no cgroup-v1 memory controller is mounted")
    _sweep(parent)
    path = parent / f"{_PREFIX}{os.getpid()}-{next(_counter)}"
    path.mkdir()
    try:
        _write(path / "memory.limit_in_bytes", str(limit_bytes))
        if (path / "memory.memsw.limit_in_bytes").exists():  # bounds swap too; must not be below the limit
            _write(path / "memory.memsw.limit_in_bytes", str(limit_bytes))
        with contextlib.suppress(OSError):
            _write(path / "memory.swappiness", "0")
        set_to = _read_int(path / "memory.limit_in_bytes")
        if set_to is None or set_to > limit_bytes:
            raise OSError(f"the memory limit did not hold (reads back {set_to})")
    except OSError:
        _remove(path, 1.0)
        raise
    return MemoryCgroup(path, limit_bytes)


def join_argv(cgroup: MemoryCgroup, *, gated: bool = False) -> list[str]:
    """Command prefix that moves the sandbox's first process into ``cgroup`` before it execs the rest.

    A shell writes its own pid to ``cgroup.procs`` and then execs the command, so bwrap and everything it
    starts are born inside the cgroup; if the write fails nothing runs (exit status 126). ``gated``: the
    shell then waits for one line on its stdin before it execs (so it can be started ahead of time).
    """
    gate = "read -r line || exit 126; " if gated else ""
    return ["/bin/sh", "-c", 'echo $$ >"$0" || exit 126; ' + gate + 'exec "$@"', str(cgroup.procs)]


@cache
def probe() -> str | None:
    """None if memory cgroups work here (create, limit, join, charge, remove), else the reason."""
    parent = own_memory_cgroup()
    if parent is None:
        return "no cgroup-v1 memory controller is mounted (see /proc/self/mountinfo)"
    if not os.access(parent, os.W_OK):
        return f"this process may not create cgroups under {parent}"
    try:
        cgroup = create(64 << 20, parent)
    except OSError as exc:
        return f"cannot create a memory cgroup under {parent}: {exc}"
    reason = None
    try:
        command = "head -c 4000000 /dev/zero >/dev/null; exit 0"
        proc = subprocess.run(
            [*join_argv(cgroup), "/bin/sh", "-c", command], capture_output=True, timeout=30, check=False
        )
        if proc.returncode != 0:
            reason = f"a process cannot join a memory cgroup: {proc.stderr.decode(errors='replace').strip()}"
        elif not cgroup.peak_bytes():
            reason = "a memory cgroup does not charge its processes' memory here"
    except (OSError, subprocess.SubprocessError) as exc:
        reason = f"a process cannot join a memory cgroup: {exc}"
    if not cgroup.remove():
        reason = reason or f"a memory cgroup could not be removed ({cgroup.path})"
    return reason
