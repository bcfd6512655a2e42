"""Test helpers for the worker protocol: a worker's ``_serve`` loop in a thread, and reading its socket."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any


def serve_in_thread(sock: socket.socket) -> threading.Thread:
    """Run a worker process's loop (``fork_server._serve``) on ``sock`` in a daemon thread of this process."""
    from deepeval_games import fork_server

    def main() -> None:
        async def serve() -> None:
            await fork_server._serve(sock)

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


def ready_fork_server() -> None:
    """Wait until this process's fork server has imported the tasks, so a worker then starts in milliseconds (a
    driver that plays too plays on while its workers start: a small run could otherwise end before they are up)."""
    from deepeval_games.fork_server import fork_server

    _, ours = fork_server(False).fork()
    ours.close()  # that worker ends at once: its input is closed


def slow_driver(monkeypatch: Any, after: int = 1, delay_s: float = 0.002) -> list[str]:
    """Make the matches the driver plays itself, from its ``after``-th on, take ``delay_s`` longer (awaited), so its
    worker takes a share even of a small run; returns the ids of the matches the driver played, in order."""
    from deepeval_games.match_play import MatchPlayer

    here: list[str] = []
    play = MatchPlayer.play

    async def slow_play(self: Any, planned: Any) -> Any:
        here.append(planned.match_id)
        if len(here) > after:
            await asyncio.sleep(delay_s)
        return await play(self, planned)

    monkeypatch.setattr(MatchPlayer, "play", slow_play)
    return here
