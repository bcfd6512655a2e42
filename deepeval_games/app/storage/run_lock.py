"""The one-writer lock of a run directory (:class:`RunLock`): an ``flock`` on ``run.lock`` that the kernel releases
when its process dies, so a killed run never leaves a stale lock."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from deepeval_games.core.errors import DeepEvalError

__all__ = ["LOCK_NAME", "RunLock", "RunLockedError"]

LOCK_NAME = "run.lock"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class RunLockedError(DeepEvalError):
    """Another process is writing the run directory (its pid and host are in the message)."""


_HELD: dict[Path, tuple[int, int]] = {}
"""Run directories whose lock this process holds: resolved path -> (lock file descriptor, holders)."""
_HELD_GUARD = threading.Lock()


class RunLock:
    """The one-writer lock of a run directory: an exclusive ``flock`` on ``run.lock``, held by the driver process.

    The lock belongs to the process: within it, acquiring it again (a store re-opened by the same run, e.g. under
    ``until_stable``) nests. Another process waits up to ``wait_s`` seconds, then gets :class:`RunLockedError`
    naming the holder (pid, host, start time, command) that the holder wrote into the lock file. The kernel drops
    the lock when the holder dies, however it dies.
    """

    def __init__(self, run_dir: str | Path, *, wait_s: float = 0.0) -> None:
        """A lock for ``run_dir`` (nothing is created until :meth:`acquire`)."""
        self.run_dir = Path(run_dir)
        self.wait_s = wait_s
        self._key: Path | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._key is not None

    def acquire(self) -> RunLock:
        """Create the run directory if needed and take its lock (see the class).

        Raises:
            RunLockedError: another process holds it past ``wait_s``.
            DeepEvalError: the directory cannot be created or is not a directory.
        """
        if self._key is not None:
            return self
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            key = self.run_dir.resolve()
        except OSError as exc:
            raise DeepEvalError(f"cannot use {self.run_dir} as a run directory: {exc}") from exc
        with _HELD_GUARD:
            if key in _HELD:
                fd, count = _HELD[key]
                _HELD[key] = (fd, count + 1)
                self._key = key
                return self
            fd = self._lock_file(key, time.monotonic() + max(0.0, self.wait_s))
            info = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "since": _now(),
                "command": " ".join(sys.argv)[:500],
            }
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
            _HELD[key] = (fd, 1)
            self._key = key
        return self

    def _lock_file(self, key: Path, deadline: float) -> int:
        """Open ``run.lock`` and take its ``flock`` (waiting until ``deadline``); the descriptor, locked.

        A holder removes the file when it lets go (a finished run leaves no side file), so a lock taken on a file
        that is no longer the one at the path (it was removed meanwhile) is dropped and taken again on the new one.
        """
        while True:
            try:
                fd = os.open(key / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise DeepEvalError(f"cannot use {self.run_dir} as a run directory: {exc}") from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _read_holder(fd)
                    os.close(fd)
                    raise RunLockedError(
                        f"{self.run_dir} is being written by another run ({holder}); only one run may write a "
                        "run directory at a time: wait for it to finish, or use another --out directory"
                    ) from None
                os.close(fd)
                time.sleep(0.2)
                continue
            try:
                current = os.stat(key / LOCK_NAME).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(fd).st_ino:
                return fd
            os.close(fd)  # the holder before us removed the file we locked: lock the one at the path now

    def release(self) -> None:
        """Let go of the lock (the last holder in the process removes ``run.lock``, then unlocks it)."""
        if self._key is None:
            return
        with _HELD_GUARD:
            fd, count = _HELD[self._key]
            if count > 1:
                _HELD[self._key] = (fd, count - 1)
            else:
                del _HELD[self._key]
                try:
                    os.ftruncate(fd, 0)
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self._key / LOCK_NAME)
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
            self._key = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    """The holder of a lock file as a phrase (``pid 123 on host h since ...``)."""
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict) or "pid" not in info:
        return "holder unknown"
    text = f"pid {info.get('pid')} on host {info.get('host')} since {info.get('since')}"
    return text + (f": {info['command']}" if info.get("command") else "")
