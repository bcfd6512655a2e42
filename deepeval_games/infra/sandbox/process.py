"""Starting and watching the child: feed its stdin, collect its output under byte caps and a deadline, kill it.

On every exit, early or not, the sandbox's pid 1 is killed (the kernel then kills its whole pid namespace)
and bwrap is reaped, so no process the program started outlives the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass, field

from deepeval_games.infra.sandbox.bwrap import SandboxLimits

__all__ = ["Watch", "run_child", "start_child", "watch_child"]

Popen = subprocess.Popen[bytes]


@dataclass
class Watch:
    """What the parent saw while the sandbox ran."""

    results: bytearray = field(default_factory=bytearray)
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    info: bytearray = field(default_factory=bytearray)
    timed_out: bool = False
    overflow: str = ""
    returncode: int | None = None


def _sandbox_pid(info: bytes) -> int | None:
    try:
        pid = json.loads(info.decode()).get("child-pid")
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None
    return pid if type(pid) is int and pid > 1 else None


def start_child(argv: list[str], pass_fds: tuple[int, ...], close_on_error: tuple[int, ...] = ()) -> Popen:
    """Start ``argv`` in a new session with piped stdin/stdout/stderr and ``pass_fds`` (closed here after).

    On failure every descriptor of ``pass_fds`` and ``close_on_error`` is closed before the error propagates.
    """
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=pass_fds,
            start_new_session=True,
            env={"PATH": "/usr/bin:/bin"},
        )
    except OSError:
        for fd in (*pass_fds, *close_on_error):
            os.close(fd)
        raise
    for fd in pass_fds:
        os.close(fd)
    return proc


def run_child(
    argv: list[str],
    payload: bytes,
    result_fd_w: int,
    result_fd_r: int,
    info_fds: tuple[int, int] | None,
    deadline: float,
    limits: SandboxLimits,
    extra_fds: tuple[int, ...] = (),
) -> Watch:
    """Run ``argv`` with ``payload`` on its stdin until it ends, the deadline passes or a byte cap is hit.

    The child writes its records on ``result_fd_w`` (and bwrap its pid on ``info_fds[1]``); ``extra_fds``
    are handed to the child as they are (bwrap's seccomp filter). The parent's ends are read here and every
    descriptor is closed before this returns.
    """
    pass_fds = (result_fd_w,) + ((info_fds[1],) if info_fds else ()) + extra_fds
    proc = start_child(argv, pass_fds, (result_fd_r, *(info_fds[:1] if info_fds else ())))
    return watch_child(proc, payload, result_fd_r, info_fds[0] if info_fds else None, deadline, limits)


def watch_child(
    proc: Popen, payload: bytes, result_fd_r: int, info_fd_r: int | None, deadline: float, limits: SandboxLimits
) -> Watch:
    """Feed ``payload`` to a started child and collect what it writes (see :func:`run_child`); kills it after.

    ``result_fd_r`` and ``info_fd_r`` (the parent's ends of the result channel and of bwrap's info pipe)
    are closed before this returns.
    """
    watch = Watch()
    try:
        assert proc.stdin and proc.stdout and proc.stderr
        stdin_fd = proc.stdin.fileno()
        os.set_blocking(stdin_fd, False)
        buffers = {proc.stdout.fileno(): watch.stdout, proc.stderr.fileno(): watch.stderr}
        buffers[result_fd_r] = watch.results
        if info_fd_r is not None:
            buffers[info_fd_r] = watch.info
        with selectors.DefaultSelector() as selector:
            for fd in buffers:
                selector.register(fd, selectors.EVENT_READ)
            selector.register(stdin_fd, selectors.EVENT_WRITE)
            pending = memoryview(payload)
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    watch.timed_out = True
                    break
                for key, _ in selector.select(remaining):
                    if key.fd == stdin_fd:
                        try:
                            pending = pending[os.write(stdin_fd, pending[: 1 << 16]) :]
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:
                            pending = pending[:0]
                        if not pending:
                            selector.unregister(stdin_fd)
                            proc.stdin.close()
                        continue
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        selector.unregister(key.fd)
                        continue
                    buffers[key.fd] += chunk
                if len(watch.stdout) + len(watch.stderr) > limits.output_bytes:
                    watch.overflow = "stdout/stderr"
                elif len(watch.results) > limits.result_bytes:
                    watch.overflow = "result channel"
                if watch.overflow:
                    break
        if not watch.timed_out and not watch.overflow:
            watch.returncode = _wait(proc, deadline)
            watch.timed_out = watch.returncode is None
    finally:
        _kill(proc, _sandbox_pid(bytes(watch.info)))
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream and not stream.closed:
                stream.close()
        os.close(result_fd_r)
        if info_fd_r is not None:
            os.close(info_fd_r)
    return watch


def _wait(proc: Popen, deadline: float) -> int | None:
    """Exit status, or None at the deadline; a pidfd avoids ``Popen.wait(timeout)``'s sleep-polling."""
    remaining = max(0.0, deadline - time.monotonic())
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            return proc.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            return None
    try:
        ready, _, _ = select.select([pidfd], [], [], remaining)
    finally:
        os.close(pidfd)
    return proc.wait() if ready else None


def _kill(proc: Popen, sandbox_pid: int | None) -> None:
    """Kill the sandbox's pid 1 (the kernel then kills its whole pid namespace), then bwrap; reap."""
    if proc.poll() is None:
        if sandbox_pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(sandbox_pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
