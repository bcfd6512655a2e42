"""Test helpers for the worker protocol: a worker's ``_serve`` loop in a thread, and reading its socket."""

from __future__ import annotations

import asyncio
import socket
import threading


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
