"""Bubblewrap: the sandbox's limits, its command line, the uid it runs as, and whether it works here.

One ``bwrap`` runs this interpreter's base ``python -I -S`` in new mount, pid, network, IPC, UTS and
cgroup namespaces, with read-only binds of ``/usr`` (plus the ``/bin``, ``/lib*`` links),
``/etc/ld.so.cache`` and the interpreter's prefix only, a fresh ``/proc``, a minimal ``/dev``, a
size-capped private ``/tmp`` (the root and ``/dev`` read-only) and a cleared environment. As root it
runs privileged without a user namespace, and the harness drops to an unused uid of this process's
block (:func:`acquire_uid`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = [
    "SandboxLimits",
    "SandboxUnavailable",
    "acquire_uid",
    "bubblewrap_usable",
    "bwrap_argv",
    "interpreter",
    "probe",
    "release_uid",
    "uid_block",
]


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandboxed run (the wall-clock limit is ``run_tests(timeout_s=...)``)."""

    memory_bytes: int = 1 << 30
    """``RLIMIT_AS`` of every process in the sandbox."""
    max_processes: int = 8
    """``RLIMIT_NPROC``: processes and threads of the sandbox uid, harness included."""
    file_size_bytes: int = 16 << 20
    """``RLIMIT_FSIZE``: largest file the program may write (only ``/tmp`` is writable)."""
    tmpfs_bytes: int = 32 << 20
    """Size of the private ``/tmp``."""
    open_files: int = 64
    """``RLIMIT_NOFILE``."""
    output_bytes: int = 1 << 20
    """Cap on stdout plus stderr; more kills the run with status ``output_limit``."""
    result_bytes: int = 4 << 20
    """Cap on the result channel (the reported values); more is also ``output_limit``."""


class SandboxUnavailable(RuntimeError):
    """Bubblewrap is missing or cannot create namespaces here, and ``unsafe=True`` was not given."""


_UID_BASE = 1_900_000_000
_uid_lock = threading.Lock()
_uids_in_use: set[int] = set()


def interpreter() -> str:
    """The base interpreter (a venv's python is a symlink whose venv the sandbox does not mount)."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _mounts() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    if os.path.exists("/etc/ld.so.cache"):
        args += ["--perms", "0755", "--dir", "/etc", "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    mounted = ["/usr"]
    for path in (os.path.realpath(sys.base_prefix), os.path.dirname(interpreter())):
        if any(path == m or path.startswith(m + "/") for m in mounted):
            continue
        mounted.append(path)
        parts = Path(path).parts
        for depth in range(2, len(parts)):  # directories bwrap would otherwise create with the host's modes
            args += ["--perms", "0755", "--dir", str(Path(*parts[:depth]))]
        args += ["--ro-bind", path, path]
    return args


def bwrap_argv(as_root: bool, limits: SandboxLimits, info_fd: int, seccomp_fd: int | None = None) -> list[str]:
    """The ``bwrap ... --`` prefix of the child's command line.

    ``info_fd``: where bwrap writes its child pid; ``seccomp_fd``: where it reads the seccomp filter to load.
    """
    identity = (
        ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        if as_root
        else ["--unshare-user", "--uid", "65534", "--gid", "65534", *_disable_userns()]
    )
    return [
        shutil.which("bwrap") or "bwrap",
        *identity,
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--info-fd",
        str(info_fd),
        *(["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []),
        *_mounts(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--perms",
        "1777",
        "--size",
        str(limits.tmpfs_bytes),
        "--tmpfs",
        "/tmp",
        "--remount-ro",  # the root and /dev are tmpfs without a size cap (writable as a non-root user's
        "/dev",  # mapped uid): read-only, so only the capped /tmp holds files
        "--remount-ro",
        "/",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--chdir",
        "/tmp",
        "--",
    ]


@cache
def _disable_userns() -> list[str]:
    """``--disable-userns`` where bwrap has it (0.8+): no nested user namespaces inside the sandbox."""
    try:
        usage = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return ["--disable-userns"] if "--disable-userns" in usage.stdout + usage.stderr else []


def uid_block() -> range:
    """The uids this process hands to sandboxes in root mode (a block per pid, so sessions rarely share)."""
    start = _UID_BASE + (os.getpid() % 65536) * 128
    return range(start, start + 128)


def acquire_uid() -> int:
    """A uid no other sandbox of this process uses now (RLIMIT_NPROC counts per uid in root mode)."""
    block = uid_block()
    with _uid_lock:
        uid = next((u for u in block if u not in _uids_in_use), block[0])
        _uids_in_use.add(uid)
        return uid


def release_uid(uid: int) -> None:
    """Hand back a uid from :func:`acquire_uid`."""
    with _uid_lock:
        _uids_in_use.discard(uid)


@cache
def probe() -> str | None:
    """None if bwrap can run the harness interpreter in the namespaces we use, else the reason."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed; Debian/Ubuntu: apt-get install bubblewrap"
    argv = bwrap_argv(os.geteuid() == 0, SandboxLimits(), 2)
    try:
        proc = subprocess.run(
            [*argv, interpreter(), "-I", "-S", "-c", "pass"],
            capture_output=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin"},
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap could not start: {exc}"
    if proc.returncode != 0:
        return f"bwrap cannot create the sandbox here: {proc.stderr.decode(errors='replace').strip()}"
    return None


def bubblewrap_usable() -> bool:
    """Whether bubblewrap is installed and can create the sandbox on this machine (probed once)."""
    return probe() is None
