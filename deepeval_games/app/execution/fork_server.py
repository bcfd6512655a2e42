"""The process executor's worker processes: a fork server (started once per driver process; it imports pyspiel,
the tasks and, for model players, litellm once) forks each worker, and each worker serves the driver over a socket
(:func:`worker_main`): JSON lines in, results out, one :class:`~deepeval_games.app.execution.worker_side.MatchWorker`
playing
many
matches at once in its event loop.

The protocol: the driver sends JSON lines: ``init`` (the spec, modules, environment), then ``plays`` (the planned
matches of one turn of its event loop as compact rows, :class:`~deepeval_games.app.execution.worker_side.RowWriter`,
numbered
from the message's ``first`` id on, with the table entries they use first sent) or ``play`` (an id and one planned
match), ``granted`` / ``denied`` (the driver's limiter answering an ``acquire``) and ``budget`` (the run's total
spent); closing the worker's input stops it. The worker sends ``acquire`` / ``release`` / ``charge`` (its model
calls), ``counters`` (its model-call counters, when they changed: once for a run without model players), ``failed``
(it could not start) and ``done`` (a failed match: its error, as data), each a JSON line, and for a finished match a
header line ``R <id> <size>`` followed by ``size`` bytes: the record's own JSON line, as :meth:`MatchRecord.to_json
<deepeval_games.core.records.MatchRecord.to_json>` wrote it, newline included, so the driver takes it without searching
for its end and commits that text without parsing it. What one turn of the worker's event loop sends goes out in one
write. Matches are played by a few long-lived player tasks, not a task per request.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import importlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from deepeval_games.app.execution.worker_side import LimiterProxy, MatchWorker, RowReader, error_result
from deepeval_games.core.quoting import escape_log_lines
from llm_bots import gc_policy

__all__ = ["LINE_LIMIT", "fork_server", "worker_main"]


# -- the worker process ------------------------------------------------------------------------------------------


class _Link(asyncio.Protocol):
    """A worker's end of the driver's socket, reading: cuts what arrives into JSON lines and hands each message to
    ``handle`` as it arrives (no reader task woken, no stream buffer); ``on_end`` is called when the input ends."""

    def __init__(self, handle: Callable[[dict[str, Any]], None], on_end: Callable[[], None]) -> None:
        self.handle = handle
        self.on_end = on_end
        self.transport: asyncio.Transport | None = None
        self._rest = b""
        """The start of a line whose end has not arrived yet."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._rest:
            data = self._rest + data
        pos = 0
        end = data.find(b"\n")
        while end >= 0:
            if end > pos:
                self.handle(json.loads(data[pos:end]))
            pos = end + 1
            end = data.find(b"\n", pos)
        self._rest = data[pos:] if pos else data
        if len(self._rest) > LINE_LIMIT:
            raise ValueError("the driver sent a line longer than LINE_LIMIT")

    def eof_received(self) -> bool:
        self.on_end()
        return True  # the results already queued still go out

    def connection_lost(self, exc: Exception | None) -> None:
        self.on_end()


class _Session:
    """A worker process's session with the driver over its socket: read requests (JSON lines, each handled as it
    arrives), play, write results until the input ends (:meth:`serve`). Results are written with ``writev`` of the
    queued parts (not joined into one copy first), waiting for room when the socket is full (:func:`_write_parts`)
    rather than handing the rest to the transport's buffer (which copies it, and moves what is left to its front
    after every partial send).

    Matches are played by a few long-lived player tasks (as many as were ever needed at once), not a task per
    request: a player takes requests from the queue until it is empty; while requests wait, one player is always
    scheduled to take them, so a match that waits (a model call) never holds up the next. A player that takes a
    request while others wait asks for that at the next turn of the loop (:meth:`check`): by then it has either
    played them all (a match that never waits, a scripted one: no other player is woken) or is waiting itself."""

    transport: asyncio.Transport
    """The worker's end of the socket (set by :meth:`serve` once connected)."""
    worker: MatchWorker
    """What plays the matches (set by :meth:`serve` once ``init`` has arrived)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.outbox: list[bytes] = []
        self.loop = asyncio.get_running_loop()
        self.started: asyncio.Future[None] = self.loop.create_future()
        """Done when the first message (``init``) has arrived, or the input ended before it."""
        self.ended: asyncio.Future[None] = self.loop.create_future()
        self.inbox: list[dict[str, Any]] = []
        """Messages that arrived before the worker could handle them (``init``, and what came with it)."""
        self.handling = False
        """Whether messages are handled as they arrive (:meth:`on_message`) rather than kept in :attr:`inbox`."""
        self.proxy = LimiterProxy(self.send_json)
        self.sent_counters = ""
        self.counted = False
        """Whether model calls can change the counters (a run without model players sends them once)."""
        self.rows = RowReader()
        """Reads the rows of ``plays`` messages (this connection's tables of games and names)."""
        self.queue: collections.deque[tuple[int, Any]] = collections.deque()
        """Requests to play: (id, a planned match as a row of a ``plays`` message, or as a ``play`` message's dict)."""
        self.idle: list[asyncio.Future[None]] = []
        self.players: set[asyncio.Task[None]] = set()
        self.scheduled = 0
        """Players woken (or started) that have not taken a request yet."""
        self.checking = False
        """Whether :meth:`check` is scheduled."""

    async def serve(self) -> None:
        """Serve the driver until it closes the worker's input (finished, or died)."""
        self.transport, _ = await self.loop.create_unix_connection(
            lambda: _Link(self.handle, self.on_end), sock=self.sock
        )
        await self.started
        if not self.inbox:
            self.transport.close()
            return
        if not self.start(self.inbox.pop(0)):
            return
        try:
            self.handling = True
            for message in self.inbox:  # what came with init
                self.on_message(message)
            self.inbox.clear()
            await self.ended  # the driver closed our input (finished, or died): stop
        finally:
            for task in self.players:
                task.cancel()
            await asyncio.gather(*self.players, return_exceptions=True)
            self.worker.close()
            self.transport.close()

    def start(self, init: dict[str, Any]) -> bool:
        """Start the worker from the driver's ``init`` message; False: it could not start (the driver is told)."""
        # the driver's environment, directory and import path now, not the fork server's when it started
        os.environ.clear()
        os.environ.update(init.get("environ", {}))
        sys.path[:] = init.get("path", sys.path)
        try:
            os.chdir(init.get("cwd", os.getcwd()))
            self.worker = MatchWorker(
                init["spec"],
                modules=init.get("modules", ()),
                budget_usd=init.get("budget_usd"),
                on_charge=lambda cost: self.send_json({"op": "charge", "cost": cost}),
                limiter=self.proxy,
            )
        except Exception as exc:
            self.send_json({"op": "failed", **error_result("", exc)})
            self.flush()
            self.transport.close()
            return False
        self.counted = self.worker.runtime is not None
        return True

    def handle(self, message: dict[str, Any]) -> None:
        """A message from the driver, as it arrives: handled, or kept until the worker has started."""
        if self.handling:
            self.on_message(message)
            return
        self.inbox.append(message)
        if not self.started.done():
            self.started.set_result(None)

    def on_end(self) -> None:
        """The driver's input ended."""
        for future in (self.started, self.ended):
            if not future.done():
                future.set_result(None)

    def flush(self) -> None:
        """Write what was queued."""
        outbox, transport = self.outbox, self.transport
        if outbox and not transport.is_closing():
            rest = _write_parts(self.fd, outbox) if transport.get_write_buffer_size() == 0 else outbox
            if rest:  # the socket failed (the driver is gone): the transport's write reports it as before
                transport.write(b"".join(rest))
        outbox.clear()

    def send(self, *parts: bytes) -> None:
        """Queue a message; what this turn of the event loop queued goes out in one write, in order."""
        if not self.outbox:
            self.loop.call_soon(self.flush)
        self.outbox.extend(parts)

    def send_json(self, message: Mapping[str, Any]) -> None:
        """Queue a message as a JSON line."""
        self.send(json.dumps(message).encode(), b"\n")

    def finished(self, request_id: int, result: bytes | Mapping[str, Any]) -> None:
        """Send a match's outcome: its record (the JSON's bytes, never parsed or written again), or its error."""
        if self.counted or not self.sent_counters:
            counters = json.dumps(self.worker.counters())
            if counters != self.sent_counters:
                self.send(b'{"op":"counters","counters":%b}\n' % counters.encode())
                self.sent_counters = counters
        if isinstance(result, bytes):
            self.send(b"R %d %d\n" % (request_id, len(result) + 1), result, b"\n")
        elif "record" in result:
            data = result["record"]
            self.send(b"R %d %d\n" % (request_id, len(data) + 1), data, b"\n")
        else:
            self.send_json({"op": "done", "id": request_id, "error": result["error"]})

    def schedule_player(self) -> None:
        """Have one player take the waiting requests: an idle one woken, or a new one."""
        if self.scheduled:
            return
        self.scheduled += 1
        if self.idle:
            self.idle.pop().set_result(None)
        else:
            self.players.add(asyncio.create_task(self.player()))

    def check(self) -> None:
        """A player took a request while others waited: schedule one for those still waiting."""
        self.checking = False
        if self.queue:
            self.schedule_player()

    async def player(self) -> None:
        """A long-lived player task: plays requests from the queue until it is empty, then waits to be woken."""
        queue, worker = self.queue, self.worker
        while True:
            self.scheduled -= 1
            while queue:
                request_id, planned = queue.popleft()
                if queue and not self.checking:
                    self.checking = True
                    self.loop.call_soon(self.check)
                if isinstance(planned, list):
                    self.finished(request_id, await worker.play_row(planned, self.rows))
                else:
                    self.finished(request_id, await worker.play(planned, as_bytes=True))
            waiter = self.loop.create_future()
            self.idle.append(waiter)
            await waiter

    def on_message(self, message: dict[str, Any]) -> None:
        """Handle a message from the driver (after ``init``)."""
        op = message.get("op")
        if op == "plays":  # several planned matches, as rows, with the ids first, first + 1, ...
            self.rows.add_tables(message)
            self.queue.extend(enumerate(message["matches"], int(message["first"])))
            self.schedule_player()
        elif op == "play":
            self.queue.append((int(message["id"]), message["match"]))
            self.schedule_player()
        elif op == "granted":
            self.proxy.granted(int(message["ask"]), message["grant"])
        elif op == "denied":
            self.proxy.denied(int(message["ask"]), str(message.get("error", "")))
        elif op == "budget":
            self.worker.update_budget(float(message["spent"]))


async def _worker_main_async(sock: socket.socket) -> None:
    with contextlib.suppress(ConnectionError):  # the driver is gone
        await _Session(sock).serve()


def worker_main(sock: socket.socket) -> None:
    """Entry point of a worker process: serve the driver over ``sock`` (JSON lines) until it closes it."""
    gc_policy.freeze_loaded()  # what the fork server imported (pyspiel, litellm's tables) stays out of its walks
    logging.basicConfig(level=os.environ.get("DEEPEVAL_GAMES_WORKER_LOG", "WARNING"), stream=sys.stderr)
    escape_log_lines()  # a log line may quote a player's name or reply
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the process group: the driver decides
    try:
        from llm_bots import inline_setup  # stdlib only: its loop sets up OpenAI-compatible calls on its own thread

        inline_setup.run(_worker_main_async(sock))
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(0)  # no interpreter teardown: nothing is left to write


def _write_parts(fd: int, parts: list[bytes]) -> list[bytes]:
    """Write ``parts`` to the non-blocking socket ``fd`` with ``writev``, in order, waiting for room whenever it is
    full: a worker's results wait for the driver to read them (the driver never waits for a worker, so this cannot
    deadlock), and nothing is copied on the way. Returns what could not be written because the socket failed (empty
    when all was written)."""
    rest: list[Any] = parts
    first, poller = 0, None
    while first < len(rest):
        try:
            sent = os.writev(fd, rest[first : first + _IOV_MAX])
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            return [bytes(part) for part in rest[first:]]
        while sent:
            size = len(rest[first])
            if sent < size:  # the socket took part of this one
                if rest is parts:
                    rest = list(parts)
                rest[first] = memoryview(rest[first])[sent:]
                break
            sent -= size
            first += 1
        if first < len(rest):
            if poller is None:
                poller = select.poll()
                poller.register(fd, select.POLLOUT)
            poller.poll(1000)
    return []


_IOV_MAX = 1024
"""The most parts one ``writev`` takes (Linux's ``IOV_MAX``); what is left is written when the socket has room
(:func:`_write_parts`)."""

LINE_LIMIT = 1 << 30
"""The longest message (a record as one JSON line) either side reads."""

_PRELOAD = ("deepeval_games.app.execution.process_executor", "deepeval_games.app.execution.run", "llm_bots.llm_bot")
"""Modules the fork server imports once, so that each worker starts with them loaded (and litellm, for a run with
model players)."""


def _load_registries() -> None:
    """Load the games, bots and task adapters registered through entry points (the built-in tasks are among them),
    as the first match of every worker would otherwise do (about 0.3 s a worker: it imports the tasks)."""
    from deepeval_games.core.registry.bots import registered_bots
    from deepeval_games.core.registry.games import registered_games
    from llm_bots.adapters import registered_adapters

    registered_games()
    registered_bots()
    registered_adapters()


def _fork_server_main(fd: int, models: bool) -> None:
    """The fork server (``python -m deepeval_games.app.execution.fork_server FD models|plain``): import the heavy
    modules once,
    then fork a worker for each socket the driver passes over ``fd``, and answer its pid; stop when the driver is gone.

    Like multiprocessing's fork server, minus its re-import of the caller's main script in every worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for module in _PRELOAD:
        importlib.import_module(module)
    _load_registries()
    if models:
        from llm_bots import model_info

        model_info.litellm()
    gc_policy.freeze_loaded(collect=True)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the workers: no zombies
    control = socket.socket(fileno=fd)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 64, 1)
        except OSError:
            break
        if not message or not fds:
            break  # the driver closed the socket (it finished, or died)
        pid = os.fork()
        if pid == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a worker waits for its own subprocesses (the sandbox)
            worker_main(socket.socket(fileno=fds[0]))
        for descriptor in fds:
            os.close(descriptor)
        try:
            control.sendall(f"{pid}\n".encode())
        except OSError:
            break
    os._exit(0)


class _ForkServer:
    """The driver's handle on its fork server (one per driver process, reused by every run of the process)."""

    def __init__(self, models: bool) -> None:
        self.models = models
        ours, theirs = socket.socketpair()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        mode = "models" if models else "plain"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "deepeval_games.app.execution.fork_server", str(theirs.fileno()), mode],
            pass_fds=(theirs.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self.control = ours
        self.lock = threading.Lock()
        self.answered = False
        """Whether the server has forked a worker yet (until then it may still be importing)."""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def fork(self) -> tuple[int, socket.socket]:
        """A new worker: its pid and the driver's end of its socket (blocks while the server still imports)."""
        ours, theirs = socket.socketpair()
        try:
            with self.lock:
                socket.send_fds(self.control, [b"fork"], [theirs.fileno()])
                answer = b""
                while not answer.endswith(b"\n"):
                    chunk = self.control.recv(64)
                    if not chunk:
                        raise OSError("the fork server is gone")
                    answer += chunk
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        self.answered = True
        return int(answer), ours

    def close(self) -> None:
        """Stop the server. One that has forked a worker stops as soon as its socket closes; one that has not may
        still be importing (a run that ended before it was needed), and is killed rather than waited for: it has
        made nothing yet. Its workers are processes of their own, stopped by their own sockets."""
        self.control.close()
        if not self.answered:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_server: _ForkServer | None = None
_server_guard = threading.Lock()


def fork_server(models: bool) -> _ForkServer:
    """The process's fork server, started (or restarted with litellm, for model players) when needed."""
    global _server
    with _server_guard:
        if _server is not None and (not _server.alive() or (models and not _server.models)):
            _server.close()
            _server = None
        if _server is None:
            _server = _ForkServer(models)
            atexit.register(_server.close)
        return _server


if __name__ == "__main__":
    if len(sys.argv) != 3 or not sys.argv[1].isdigit():
        sys.exit("the fork server of the process executor: started by deepeval-games itself, not by hand")
    _fork_server_main(int(sys.argv[1]), sys.argv[2] == "models")
