"""A seccomp filter for the sandbox, written here as a classic BPF program and loaded by ``bwrap --seccomp``.

Two sets of refused system calls:

* :data:`KEYRING` (always): ``add_key``, ``request_key``, ``keyctl``. Kernel keys outlive the process
  that made them (a session or user keyring is shared with later processes), so a program could leave a
  note for the next run; refusing the calls leaves nothing to find.
* :data:`UNBOUNDED` (the fallback when no memory cgroup works): what holds memory that no rlimit counts:
  new namespaces (``unshare``/``clone`` with a ``CLONE_NEW*`` flag, ``setns``; ``clone3`` answers
  ``ENOSYS`` so the C library falls back to ``clone``, whose flags the filter can read), mounts (``mount``
  and the new mount API), ``memfd_create``/``memfd_secret``, SysV ``shmget``/``msgget``, POSIX ``mq_open``,
  ``io_uring`` (its rings and registered buffers) and sockets (``socket``, ``socketpair``: a Unix datagram
  pair queues up to twice ``wmem_max``, 8 MiB here, in the kernel; the code under test needs none, and the
  sandbox has no network to reach), and a pipe's growth past its 64 KiB (``fcntl(F_SETPIPE_SZ)``).

What a program can still make the kernel hold in the fallback, counted: its processes' address spaces
(each ``memory_bytes / max_processes``, so ``memory_bytes`` together), the ``/tmp`` tmpfs (``tmpfs_bytes``),
and pipe buffers: at most ``open_files * max_processes / 2`` pipes of 64 KiB (16 MiB with the default limits),
besides a few pages of kernel bookkeeping per process and descriptor.

Refused calls fail with ``EPERM``; a call made with another architecture's numbering (x32, or i386 from a
64-bit process) fails with ``ENOSYS``. The program's format is the kernel's ``struct sock_filter`` array,
which is what bwrap reads from the descriptor. Supported: x86_64 and aarch64.
"""

from __future__ import annotations

import errno
import platform
import struct

__all__ = ["KEYRING", "PIPE_BYTES", "UNBOUNDED", "filter_program", "unsupported"]

KEYRING = frozenset({"add_key", "request_key", "keyctl"})
"""Keyring calls: refused in every mode."""
UNBOUNDED = frozenset(
    {
        "setns",
        "mount",
        "umount2",
        "pivot_root",
        "open_tree",
        "move_mount",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "mount_setattr",
        "memfd_create",
        "memfd_secret",
        "shmget",
        "msgget",
        "mq_open",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        "socket",
        "socketpair",
    }
)
"""Calls refused outright in the fallback mode (plus namespace flags on ``clone``/``unshare``, ``clone3``, and
``fcntl(F_SETPIPE_SZ)``)."""
PIPE_BYTES = 64 << 10
"""A pipe's buffer, which the fallback does not let a program grow (``F_SETPIPE_SZ`` is refused)."""

_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "clone": 56,
            "clone3": 435,
            "unshare": 272,
            "setns": 308,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "memfd_create": 319,
            "memfd_secret": 447,
            "shmget": 29,
            "msgget": 68,
            "mq_open": 240,
            "socket": 41,
            "socketpair": 53,
            "fcntl": 72,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "clone": 220,
            "clone3": 435,
            "unshare": 97,
            "setns": 268,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "memfd_create": 279,
            "memfd_secret": 447,
            "shmget": 194,
            "msgget": 186,
            "mq_open": 180,
            "socket": 198,
            "socketpair": 199,
            "fcntl": 25,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
        },
    ),
}
_NEW_MOUNT_API = {"open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433}
_NEW_MOUNT_API["mount_setattr"] = 442  # the same number on every architecture
_NEW_MOUNT_API.update(io_uring_setup=425, io_uring_enter=426, io_uring_register=427)  # also the same everywhere
_F_SETPIPE_SZ = 1031

_X32_BIT = 0x40000000
_CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80
"""CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET and NEWTIME."""

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_OFF_NR, _OFF_ARCH, _OFF_ARG0_LOW, _OFF_ARG1_LOW = 0, 4, 16, 24  # struct seccomp_data; args: little-endian u64


def _machine() -> str:
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def unsupported() -> str | None:
    """None if a filter can be built for this machine, else the reason."""
    machine = _machine()
    if machine not in _ARCHES:
        return f"no seccomp syscall table for {machine} (supported: {', '.join(_ARCHES)})"
    if struct.pack("=I", 1) != struct.pack("<I", 1):
        return "seccomp filter written for little-endian machines only"
    return None


def filter_program(refuse: frozenset[str], namespaces: bool, pipe_growth: bool = True) -> bytes:
    """The filter as ``struct sock_filter`` records: refuse ``refuse``; with ``namespaces``, new namespaces too;
    without ``pipe_growth``, ``fcntl(F_SETPIPE_SZ)``.

    Raises:
        ValueError: this machine's architecture is unsupported, or a name is unknown.
    """
    reason = unsupported()
    if reason is not None:
        raise ValueError(reason)
    machine = _machine()
    arch, table = _ARCHES[machine]
    table = {**table, **_NEW_MOUNT_API}
    unknown = sorted(set(refuse) - set(table))
    if unknown:
        raise ValueError(f"unknown system calls: {unknown}")
    # Instructions as (code, jump-if-true label, jump-if-false label, k); labels resolve to offsets below.
    program: list[tuple[int, str | None, str | None, int]] = [
        (_LD_W_ABS, None, None, _OFF_ARCH),
        (_JEQ_K, None, "enosys", arch),
        (_LD_W_ABS, None, None, _OFF_NR),
    ]
    if machine == "x86_64":
        program.append((_JGE_K, "enosys", None, _X32_BIT))
    if namespaces:
        program += [
            (_JEQ_K, "enosys", None, table["clone3"]),
            (_JEQ_K, "flags", None, table["clone"]),
            (_JEQ_K, "flags", None, table["unshare"]),
        ]
    if not pipe_growth:
        program.append((_JEQ_K, "fcntl", None, table["fcntl"]))
    program += [(_JEQ_K, "eperm", None, table[name]) for name in sorted(refuse)]
    program.append((_RET_K, None, None, _RET_ALLOW))
    labels = {"flags": len(program)}
    program += [(_LD_W_ABS, None, None, _OFF_ARG0_LOW), (_JSET_K, "eperm", None, _CLONE_NEW_FLAGS)]
    program.append((_RET_K, None, None, _RET_ALLOW))
    labels["fcntl"] = len(program)
    program += [(_LD_W_ABS, None, None, _OFF_ARG1_LOW), (_JEQ_K, "eperm", None, _F_SETPIPE_SZ)]
    program.append((_RET_K, None, None, _RET_ALLOW))
    labels["eperm"] = len(program)
    program.append((_RET_K, None, None, _RET_ERRNO | errno.EPERM))
    labels["enosys"] = len(program)
    program.append((_RET_K, None, None, _RET_ERRNO | errno.ENOSYS))

    def offset(index: int, label: str | None) -> int:
        if label is None:
            return 0
        jump = labels[label] - index - 1
        if not 0 <= jump <= 255:
            raise ValueError("seccomp filter too long for a short jump")
        return jump

    return b"".join(
        struct.pack("=HBBI", code, offset(i, jt), offset(i, jf), k) for i, (code, jt, jf, k) in enumerate(program)
    )
