"""Test helpers for the worker protocol: a worker's ``_Session`` loop in a thread, and reading its socket."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any


def serve_in_thread(sock: socket.socket) -> threading.Thread:
    """Run a worker process's loop (``fork_server._Session``) on ``sock`` in a daemon thread of this process."""
    from deepeval_games.app.execution import fork_server

    def main() -> None:
        async def serve() -> None:
            await fork_server._Session(sock).serve()

        asyncio.run(serve())

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    return thread


def read_line(sock: socket.socket, buffer: bytearray) -> bytes:
    """The next line from ``sock`` (without its newline); what arrived after it stays in ``buffer``."""
    while b"\n" not in buffer:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise EOFError
        buffer += chunk
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return line


def read_exactly(sock: socket.socket, buffer: bytearray, size: int) -> bytes:
    """The next ``size`` bytes from ``sock``; what arrived after them stays in ``buffer``."""
    while len(buffer) < size:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise EOFError
        buffer += chunk
    data = bytes(buffer[:size])
    del buffer[:size]
    return data


@contextlib.contextmanager
def worker_in_thread(spec: Mapping[str, Any]) -> Iterator[tuple[socket.socket, dict[str, Any], threading.Thread]]:
    """A worker's loop serving a socket pair in a thread: yields the driver's end, the ``init`` message for ``spec``
    (this process's environment, directory and import path) and the thread. On leaving, the driver closes the
    worker's input (it stops) and the thread is waited for; the environment and directory the worker's ``init`` set
    are put back."""
    ours, theirs = socket.socketpair()
    environ, cwd = dict(os.environ), os.getcwd()
    init = {"op": "init", "spec": spec, "modules": [], "environ": environ, "cwd": cwd, "path": sys.path}
    thread = serve_in_thread(theirs)
    try:
        yield ours, init, thread
        ours.shutdown(socket.SHUT_WR)
        thread.join(10)
    finally:
        ours.close()
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(cwd)


def slow_driver(monkeypatch: Any, after: int = 1, timeout_s: float = 30.0) -> tuple[list[str], list[str]]:
    """Make the driver, from the ``after``-th match it plays itself on, wait before each of its matches until its
    workers are up (at most ``timeout_s``), so that a worker surely takes a share of even a small run (a driver that
    plays too plays on while its workers start, and then sends them matches). Returns the ids of the matches the
    driver played and of those sent to a worker, in order."""
    from deepeval_games.app.execution.one_match import MatchPlayer
    from deepeval_games.app.execution.process_executor import ProcessExecutor

    here: list[str] = []
    theirs: list[str] = []
    play, submit_nowait = MatchPlayer.play, ProcessExecutor.submit_nowait

    async def slow_play(self: Any, planned: Any) -> Any:  # self: the runner (a MatchPlayer)
        here.append(planned.match_id)
        executor = getattr(self, "executor", None)
        if len(here) > after and executor is not None:
            deadline = time.monotonic() + timeout_s
            while executor._missing() and time.monotonic() < deadline:  # (the driver then sends the worker matches)
                await asyncio.sleep(0.001)
        return await play(self, planned)

    def noting(self: Any, items: Any) -> bool:  # the matches sent to the workers (a batched run)
        items = list(items)
        sent = submit_nowait(self, items)
        if sent:
            theirs.extend(planned.match_id for planned, _ in items)
        return sent

    monkeypatch.setattr(MatchPlayer, "play", slow_play)
    monkeypatch.setattr(ProcessExecutor, "submit_nowait", noting)
    return here, theirs
