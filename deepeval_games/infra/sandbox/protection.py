"""Which protection bounds a sandbox's memory here, and how many sandboxes may run at once on this host.

Memory modes (:data:`MEMORY_MODE_ENV`, or ``run_tests(memory_mode=...)``):

* ``cgroup``: a memory cgroup per sandbox (:mod:`deepeval_games.infra.sandbox.cgroup`) bounds everything its
  processes hold, tmpfs and memfds included, to ``SandboxLimits.memory_bytes``; each process's address
  space is limited to the same number, so a single allocation fails fast with ``MemoryError``.
* ``seccomp``: where no memory cgroup works, a seccomp filter (:mod:`deepeval_games.infra.sandbox.seccomp`) refuses
  what no rlimit can count (new namespaces, mounts, memfds, SysV shared memory and message queues, POSIX
  message queues, io_uring, sockets, growing a pipe) and the address space of each process is
  ``memory_bytes / max_processes``, so the processes together stay within ``memory_bytes`` (plus the ``/tmp``
  tmpfs, whose size is capped). What stays outside the bound is small and counted: pipes of 64 KiB, at most
  ``open_files * max_processes / 2`` of them (16 MiB with the default limits).
* ``auto`` (default): ``cgroup`` where :func:`~deepeval_games.infra.sandbox.cgroup.probe` succeeds, else ``seccomp``.

Keyring calls are refused in both modes, so nothing a program puts in a kernel keyring reaches a later run.
Without bubblewrap (the unsafe opt-in) there is no seccomp filter: a cgroup still bounds memory where one
works, else only rlimits do.

Host-wide budget: ``share`` (:data:`MEMORY_SHARE_ENV`, default 0.5) of the machine's memory is cut into
units of :data:`UNIT_BYTES`, each a lock file in a per-user directory (:data:`SLOTS_DIR_ENV` overrides
it). A sandbox runs only while it holds as many units as its bound needs, so the bounds of the sandboxes
running at once, in every process of the user, fit in the share; the kernel frees a dead holder's locks.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from deepeval_games.infra.sandbox import cgroup, seccomp
from deepeval_games.infra.sandbox.bwrap import SandboxLimits, SandboxUnavailable

__all__ = [
    "MEMORY_MODE_ENV",
    "MEMORY_SHARE_ENV",
    "SLOTS_DIR_ENV",
    "MemoryMode",
    "Protection",
    "budget_slots",
    "describe",
    "memory_share",
    "requested_mode",
    "select",
    "slot",
]

MEMORY_MODE_ENV = "DEEPEVAL_GAMES_SANDBOX_MEMORY"
"""``auto`` (default), ``cgroup`` (required: refuse to run without one) or ``seccomp`` (force the fallback)."""
MEMORY_SHARE_ENV = "DEEPEVAL_GAMES_SANDBOX_MEMORY_SHARE"
"""Share of the machine's memory (0 < share <= 1, default 0.5) that running sandboxes' bounds may add up to."""
SLOTS_DIR_ENV = "DEEPEVAL_GAMES_SANDBOX_SLOTS_DIR"
"""Directory of the slot lock files (default: a per-user directory under the temporary directory)."""

MemoryMode = Literal["auto", "cgroup", "seccomp"]
"""How a sandbox's memory is bounded; ``auto`` picks ``cgroup`` where one works."""
_DEFAULT_SHARE = 0.5
UNIT_BYTES = 64 << 20
"""The budget's grain: a sandbox holds one lock file per started 64 MiB of its bound."""
_SLOT_WAIT_S = 3600.0


@dataclass(frozen=True)
class Protection:
    """The protection a sandbox gets here."""

    memory: Literal["cgroup", "seccomp", "rlimits"]
    """What bounds the sandbox's memory: its own cgroup, the seccomp fallback, or rlimits alone (unsafe)."""
    seccomp_filter: bytes | None
    """The filter bwrap loads (None without bubblewrap or on an unsupported architecture)."""
    detail: str
    """Why this mode (the cgroup probe's reason when it is the fallback)."""

    def address_space(self, limits: SandboxLimits) -> int:
        """``RLIMIT_AS`` of each process: the whole bound under a cgroup, its share of it otherwise."""
        if self.memory == "cgroup":
            return limits.memory_bytes
        return max(1, limits.memory_bytes // max(1, limits.max_processes))


def requested_mode() -> MemoryMode:
    """The mode :data:`MEMORY_MODE_ENV` asks for (``auto`` when unset).

    Raises:
        ValueError: the variable holds something else.
    """
    value = os.environ.get(MEMORY_MODE_ENV, "").strip().lower() or "auto"
    if value not in get_args(MemoryMode):
        raise ValueError(f"{MEMORY_MODE_ENV}={value!r}: expected one of {', '.join(get_args(MemoryMode))}")
    return value  # type: ignore[return-value]


def select(mode: MemoryMode | None = None, *, bubblewrap: bool = True) -> Protection:
    """The protection for ``mode`` (:func:`requested_mode` when None); ``bubblewrap``: whether bwrap runs it.

    Raises:
        SandboxUnavailable: the mode was forced and cannot be had here.
        ValueError: :data:`MEMORY_MODE_ENV` is malformed.
    """
    mode = mode or requested_mode()
    if mode not in get_args(MemoryMode):
        raise ValueError(f"memory mode {mode!r}: expected one of {', '.join(get_args(MemoryMode))}")
    why_no_cgroup = cgroup.probe() if mode != "seccomp" else f"{MEMORY_MODE_ENV}=seccomp forces the fallback"
    why_no_seccomp = seccomp.unsupported() if bubblewrap else "no bubblewrap to load a seccomp filter"
    if mode == "cgroup" and why_no_cgroup is not None:
        raise SandboxUnavailable(f"a memory cgroup was required but does not work here: {why_no_cgroup}")
    if mode == "seccomp" and not bubblewrap:  # the unsafe opt-in: no sandbox was asked for, none to filter
        return Protection("rlimits", None, f"rlimits only: {why_no_cgroup}; {why_no_seccomp}")
    if mode == "seccomp" and why_no_seccomp is not None:
        raise SandboxUnavailable(f"the seccomp fallback was required but cannot be had: {why_no_seccomp}")
    if why_no_cgroup is None:
        program = seccomp.filter_program(seccomp.KEYRING, namespaces=False) if why_no_seccomp is None else None
        return Protection("cgroup", program, f"a memory cgroup per sandbox under {cgroup.own_memory_cgroup()}")
    if why_no_seccomp is None:
        program = seccomp.filter_program(seccomp.KEYRING | seccomp.UNBOUNDED, namespaces=True, pipe_growth=False)
        return Protection("seccomp", program, f"seccomp fallback: {why_no_cgroup}")
    return Protection("rlimits", None, f"rlimits only: {why_no_cgroup}; {why_no_seccomp}")


def memory_share() -> float:
    """:data:`MEMORY_SHARE_ENV` as a number in (0, 1].

    Raises:
        ValueError: the variable is not such a number.
    """
    raw = os.environ.get(MEMORY_SHARE_ENV, "").strip()
    if not raw:
        return _DEFAULT_SHARE
    try:
        share = float(raw)
    except ValueError:
        share = float("nan")
    if not 0 < share <= 1:  # also refuses nan
        raise ValueError(f"{MEMORY_SHARE_ENV}={raw!r}: expected a number above 0 and at most 1")
    return share


def _mem_total() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def budget_units(share: float | None = None, total_bytes: int | None = None) -> int:
    """Units of :data:`UNIT_BYTES` in ``share`` of the machine's memory (at least one)."""
    share = memory_share() if share is None else share
    total = _mem_total() if total_bytes is None else total_bytes
    return max(1, int(share * total) // UNIT_BYTES)


def units_needed(bound: int, units: int) -> int:
    """Units a sandbox of ``bound`` bytes holds while it runs (all of them if it alone exceeds the budget)."""
    return min(units, max(1, -(-bound // UNIT_BYTES)))


def budget_slots(bound: int, share: float | None = None, total_bytes: int | None = None) -> int:
    """How many sandboxes bounded by ``bound`` bytes may run at once (at least one)."""
    units = budget_units(share, total_bytes)
    return max(1, units // units_needed(bound, units))


def bound_bytes(limits: SandboxLimits) -> int:
    """The most memory one sandbox may hold: its bound plus the ``/tmp`` tmpfs (charged within a cgroup)."""
    return limits.memory_bytes + limits.tmpfs_bytes


def _slots_dir() -> Path:
    configured = os.environ.get(SLOTS_DIR_ENV, "").strip()
    path = (
        Path(configured) if configured else Path(tempfile.gettempdir()) / f"deepeval-games-sandbox-slots-{os.getuid()}"
    )
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def slot(bound: int, wait_s: float = _SLOT_WAIT_S) -> Iterator[int]:
    """Hold ``bound`` bytes of the host's budget while a sandbox runs; waits while too little is free.

    The budget is :func:`budget_units` lock files; a sandbox holds :func:`units_needed` of them at once
    or none (taken without blocking and all handed back if too few are free, so waiters never deadlock).
    Yields the number of units held.

    Raises:
        TimeoutError: too little came free within ``wait_s``.
    """
    units = budget_units()
    need = units_needed(bound, units)
    directory = _slots_dir()
    deadline = time.monotonic() + wait_s
    pause = 0.002
    start = (os.getpid() * 7919 + time.monotonic_ns() // 1000) % units  # spread first tries over the units
    while True:
        held: list[int] = []
        for step in range(units):
            if len(held) == need:
                break
            fd = os.open(directory / f"unit-{(start + step) % units}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            held.append(fd)
        try:
            if len(held) == need:
                yield need
                return
        finally:
            for fd in held:
                os.close(fd)  # releases its lock
        if time.monotonic() >= deadline:
            raise TimeoutError(f"the sandbox budget had no {need} free units in {wait_s:.0f} s ({directory})")
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def describe(limits: SandboxLimits | None = None) -> list[tuple[str, str]]:
    """What ``deepeval-games sandbox-info`` prints: (label, value) pairs about this host's protection."""
    from deepeval_games.infra.sandbox import bwrap

    limits = limits or SandboxLimits()
    rows: list[tuple[str, str]] = []
    reason = bwrap.probe()
    rows.append(("bubblewrap", "usable" if reason is None else f"UNUSABLE: {reason}"))
    rows.append(("identity", "root mode (harness drops to a spare uid)" if os.geteuid() == 0 else "non-root mode"))
    try:
        mode = requested_mode()
        rows.append(("memory mode requested", f"{mode} ({MEMORY_MODE_ENV})"))
        chosen = select(mode, bubblewrap=reason is None)
        rows.append(("memory protection", f"{chosen.memory}: {chosen.detail}"))
        rows.append(("per-process address space", f"{chosen.address_space(limits) >> 20} MiB"))
        keyring = "refused (seccomp)" if chosen.seccomp_filter else "NOT protected (no seccomp filter)"
        rows.append(("keyring calls", keyring))
    except (SandboxUnavailable, ValueError) as exc:
        rows.append(("memory protection", f"UNAVAILABLE: {exc}"))
    rows.append(("cgroup probe", cgroup.probe() or f"works under {cgroup.own_memory_cgroup()}"))
    rows.append(("seccomp filter", seccomp.unsupported() or "can be built for this machine"))
    try:
        share = memory_share()
        slots = budget_slots(bound_bytes(limits), share)
        rows.append(
            (
                "host budget",
                f"{slots} sandboxes at once ({bound_bytes(limits) >> 20} MiB each, share {share:g} of "
                f"{_mem_total() >> 20} MiB; {MEMORY_SHARE_ENV})",
            )
        )
    except ValueError as exc:
        rows.append(("host budget", f"UNAVAILABLE: {exc}"))
    rows.append(("sandbox memory bound", f"{limits.memory_bytes >> 20} MiB, {limits.max_processes} processes"))
    return rows
