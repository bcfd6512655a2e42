"""The process executor's driver side: how many worker processes a run uses (:func:`resolve_workers`) and the
driver that hands them planned matches and takes their records back (:class:`ProcessExecutor`).

The worker processes and their fork server are in :mod:`~deepeval_games.app.execution.fork_server`; the worker side
that every executor drives (:class:`MatchWorker`, what crosses a process boundary) is in
:mod:`~deepeval_games.app.execution.worker_side` (its names are importable from here too).

One process (the default for small runs) plays every match in the driver's event loop. With ``workers = N``
(``deepeval-games run --workers N``, ``run_experiment(..., workers=N)``) the driver starts N worker processes (N - 1
for a run without model players when it plays matches too, see ``placement._plays_too``; forked from a fork server
that imported pyspiel, the tasks and, for model players, litellm once) and sends them the planned matches over a
socket, those of one turn of its event loop in one message of compact rows; each worker
plays many matches at once in its own event loop (the run's ``max_concurrency`` is shared out among the workers, so
LLM matches keep their concurrency) and sends back every finished record as the JSON line
:meth:`MatchRecord.to_json_bytes <deepeval_games.core.records.MatchRecord.to_json_bytes>` wrote. The driver alone writes
the store (it holds the run directory's :class:`~deepeval_games.app.storage.store.RunLock`): one writer, the same
records and the same match ids as one process. It commits a worker's line as it came (:meth:`Store.commit_many_json
<deepeval_games.app.storage.store.Store.commit_many_json>`: the records that arrive together with one ``writev``),
without parsing, decoding, validating or serialising the record again. A run without model players needs no future or
coroutine per match (:meth:`ProcessExecutor.submit_nowait`, outcomes to :attr:`ProcessExecutor.sink`); results are
cut from what arrives by an asyncio protocol, not read line by line through a stream.

What crosses the process boundary, and how it comes back:

- a failure of a match comes back as the same kind of exception (:class:`InfrastructureError`: rescheduled up to
  ``max_match_attempts``; :class:`FatalRunError` / :class:`SpecError`: the run stops; anything else: logged, the
  tournament goes on), so the runner's retry and stop logic is the one of a single process;
- a worker that dies (SIGKILL, the OOM killer) fails its matches in flight with an :class:`InfrastructureError`:
  they are rescheduled on a new worker (and reported failed after ``max_match_attempts``); workers that keep dying
  stop the run cleanly (:class:`FatalRunError`), keeping what was committed; a killed driver takes its workers
  with it (they stop when their input closes), and the run resumes like any killed run;
- the model-call counters of each worker (calls sent, per model calls and cache hits, the model ids replies
  reported) are summed into the driver's for the run summary and the manifest;
- the run's ``budget_usd`` is hosted by the driver: workers report each call's cost and learn the total spent.

When to use it: runs of many LLM matches whose Python work (litellm costs a few ms of CPU per call) keeps one core
busy, and long scripted runs of costly matches; cheap scripted matches do not gain (records must cross a socket and be
committed by one process). ``workers = "auto"`` (the default) applies :func:`resolve_workers`'s rule, and for a
scripted run :func:`probe_matches` and :func:`workers_after_probe`: the driver times matches drawn from all over the
plan itself.
A run with a person at the table, or a ``local/`` model (its llama.cpp server belongs to one process), always runs
in one process.

Another executor (Ray) drives :class:`MatchWorker` directly; see its docstring.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from deepeval_games.app.execution.fork_server import fork_server
from deepeval_games.app.execution.worker_side import (
    LimiterProxy,
    MatchWorker,
    RowWriter,
    WorkerError,
    add_counters,
    decode_planned,
    encode_planned,
    raise_for_result,
    record_text,
    spec_modules,
    spec_seats,
)
from deepeval_games.app.spec.schedule import PlannedMatch
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.core.errors import FatalRunError, InfrastructureError, SpecError
from deepeval_games.core.records import MatchRecord
from llm_bots.model_info import is_local

__all__ = [
    "AUTO_MIN_MATCHES",
    "AUTO_PROBE_MATCHES",
    "AUTO_PROBE_S",
    "AUTO_SCRIPTED_MIN_MATCH_S",
    "AUTO_SCRIPTED_MIN_WORK_S",
    "LimiterProxy",
    "MatchWorker",
    "ProcessExecutor",
    "WorkerError",
    "add_counters",
    "check_workers",
    "decode_planned",
    "encode_planned",
    "prestart",
    "probe_matches",
    "raise_for_result",
    "record_text",
    "resolve_workers",
    "spec_modules",
    "workers_after_probe",
]

log = logging.getLogger(__name__)


AUTO_MIN_MATCHES = 100
"""Under ``workers = "auto"``, matches to play per worker process: a small run is bound by the model's latency, not
by this machine's CPU, and does not win back the workers' start-up (the fork server imports litellm once, each
worker sets up its own connections)."""


# -- the rule for the number of processes ---------------------------------------------------------------------


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def check_workers(workers: int | str | None) -> None:
    """Refuse a ``workers`` setting that is neither ``"auto"`` nor a number >= 1 (None: the spec's).

    Raises:
        SpecError: what is wrong.
    """
    if workers is None or workers == "auto":
        return
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SpecError(f"workers must be 'auto' or a number of processes >= 1, got {workers!r}")


AUTO_PROBE_MATCHES = 200
"""Under ``workers = "auto"``, a run without model players first plays up to this many matches in the driver (or
:data:`AUTO_PROBE_S` seconds of them) and times them: a scripted match costs anything from tens of microseconds
(tic_tac_toe) to seconds (a sandboxed program), and only the run itself tells which."""
AUTO_PROBE_S = 0.25
"""The probe's time limit (it ends after the match that passes it)."""
AUTO_SCRIPTED_MIN_MATCH_S = 100e-6
"""Under ``"auto"``, the least CPU time a scripted match must take in the driver (its record committed included) for
worker processes to pay. The driver plays too, beside one worker fewer (``placement._plays_too``), and each match a
worker plays costs the driver its record's line instead of the match, so only matches dearer than a line gain
(measurements: ``bench/README.md``, "Constants measured here")."""
AUTO_SCRIPTED_MIN_WORK_S = 0.5
"""Under ``"auto"``, the least time the rest of a scripted run must take in one process for worker processes to
pay: forking a worker costs milliseconds, but a fork server not started yet imports the tasks first (:func:`prestart`
starts it while the run is planned and probed, and a driver that plays too plays on while its workers start:
:attr:`ProcessExecutor.lazy`), so workers are up some way into a first run (measurements: ``bench/README.md``,
"Constants measured here")."""
_PRESTART_MATCH_S = 300e-6
"""What :func:`prestart` supposes a scripted match may cost (a cheap scripted match of a few seats and rounds) when it
decides, before the probe, whether a run may use workers."""


def resolve_workers(spec: ExperimentSpec, workers: int | str | None, matches: int) -> int:
    """How many processes play a run of ``matches`` matches (1: the driver plays them itself; N: N worker processes,
    or the driver and N - 1 workers in a run without model players, see ``placement._plays_too``).

    ``workers`` overrides the spec's ``[experiment] workers`` (``"auto"`` or a number). Always 1 with a person at the
    table (a human seat or judge) or a ``local/`` model. An explicit number is capped by the matches to play.
    ``"auto"``: one process per core for a run with model players, but at most one per :data:`AUTO_MIN_MATCHES`
    matches to play (so a small run stays in one process); one process for a run without model players until its
    probe (:func:`probe_matches`) has timed its matches (:func:`workers_after_probe`).
    """
    setting = spec.experiment.workers if workers is None else workers
    if spec.has_humans() or any(p.model is not None and is_local(p.model) for p in spec_seats(spec)):
        return 1
    if setting == "auto":
        if not spec.uses_models():
            return 1
        return max(1, min(_cores(), matches // AUTO_MIN_MATCHES))
    check_workers(setting)
    return max(1, min(int(setting), matches))


def probe_matches(spec: ExperimentSpec, workers: int | str | None, matches: int) -> int:
    """How many of a run's ``matches`` matches the driver plays first, timing them, before
    :func:`workers_after_probe` decides how many worker processes play the rest: up to :data:`AUTO_PROBE_MATCHES`
    under ``workers = "auto"`` for a local run without model players or a person on a machine of several cores;
    0 (no probe: :func:`resolve_workers` decides) otherwise."""
    setting = spec.experiment.workers if workers is None else workers
    if setting != "auto" or spec.experiment.executor != "local" or spec.uses_models() or spec.has_humans():
        return 0
    if _cores() < 2 or matches < 2:
        return 0
    return min(AUTO_PROBE_MATCHES, matches // 2)


def workers_after_probe(matches: int, seconds_per_match: float) -> int:
    """Worker processes for the ``matches`` matches left of a scripted run after its probe, whose matches took
    ``seconds_per_match`` of the driver's CPU each: one per core when a match costs at least
    :data:`AUTO_SCRIPTED_MIN_MATCH_S` and the rest at least :data:`AUTO_SCRIPTED_MIN_WORK_S`, else 1 (the driver
    plays on)."""
    if seconds_per_match < AUTO_SCRIPTED_MIN_MATCH_S or matches * seconds_per_match < AUTO_SCRIPTED_MIN_WORK_S:
        return 1
    return max(1, min(_cores(), matches))


def prestart(spec: ExperimentSpec, workers: int | str | None, matches: int) -> None:
    """Start the fork server now if a run of ``matches`` matches will, or may after its probe, use worker processes
    here: it imports the tasks (and litellm, for model players) in its own process while this one plans, checks and
    probes the run, instead of after. Nothing is forked yet; a run that then plays in one process (a resume, or
    cheap scripted matches) leaves the server idle."""
    if spec.experiment.executor != "local":
        return
    may_pay = matches * _PRESTART_MATCH_S >= AUTO_SCRIPTED_MIN_WORK_S
    if resolve_workers(spec, workers, matches) > 1 or (may_pay and probe_matches(spec, workers, matches)):
        fork_server(spec.uses_models())


# -- the driver side ---------------------------------------------------------------------------------------------


async def _forked(models: bool) -> tuple[int, socket.socket]:
    """A worker forked by the fork server (in a thread of its own: the server may still be importing the tasks): its
    pid and the driver's end of its socket. Cancelled meanwhile, the fork still happens in its thread; its socket is
    then closed as soon as it comes, so the new worker ends at once (its input closed).

    The thread is a daemon, not one of the event loop's executor threads: a run that finishes before the server has
    imported (cheap matches the driver played on alone) is not held at ``asyncio.run``'s end, which joins those
    threads, until the server answers (about 0.2 s of a 0.4 s run of 1,500 PGG matches)."""
    loop = asyncio.get_running_loop()
    fork: asyncio.Future[tuple[int, socket.socket]] = loop.create_future()

    def work() -> None:
        outcome: tuple[tuple[int, socket.socket] | None, BaseException | None]
        try:
            outcome = (fork_server(models).fork(), None)
        except BaseException as exc:  # handed to the awaiting coroutine, as asyncio.to_thread would
            outcome = (None, exc)
        try:
            loop.call_soon_threadsafe(_settle_fork, fork, outcome)
        except RuntimeError:  # the loop is closed: nobody waits for this worker
            if outcome[0] is not None:
                outcome[0][1].close()

    threading.Thread(target=work, name="fork-worker", daemon=True).start()
    try:
        return await asyncio.shield(fork)
    except asyncio.CancelledError:
        fork.add_done_callback(_close_unwanted)
        raise


def _settle_fork(
    fork: asyncio.Future[tuple[int, socket.socket]],
    outcome: tuple[tuple[int, socket.socket] | None, BaseException | None],
) -> None:
    """Hand a fork's outcome to its future (in the loop's thread); a worker nobody can take any more is let go."""
    result, error = outcome
    if fork.done():
        if result is not None:
            result[1].close()
    elif error is not None:
        fork.set_exception(error)
    else:
        assert result is not None
        fork.set_result(result)


def _close_unwanted(fork: asyncio.Future[tuple[int, socket.socket]]) -> None:
    if not fork.cancelled() and fork.exception() is None:
        fork.result()[1].close()


@dataclass
class _Process:
    index: int
    pid: int
    transport: asyncio.Transport | None = None
    in_flight: dict[int, tuple[str, asyncio.Future[bytes] | None, Any]] = field(default_factory=dict)
    """Requests sent, by id (this process's own numbering): the match id, and where its outcome goes: the future of
    :meth:`ProcessExecutor.play_json`, or (None and) the tag of :meth:`ProcessExecutor.submit_nowait`."""
    next_id: int = 0
    """The id of the last request queued for this process."""
    counters: dict[str, Any] = field(default_factory=dict)
    closed: asyncio.Future[None] | None = None
    """Done when the worker's output has ended (it finished, or died) and its matches in flight were failed."""
    alive: bool = True
    grants: dict[int, Any] = field(default_factory=dict)
    """Grants of the driver's limiter held by this worker's calls (handed back for it if it dies)."""
    asking: set[asyncio.Task[None]] = field(default_factory=set)
    """Its acquire requests waiting at the driver's limiter."""
    outbox: list[bytes] = field(default_factory=list)
    """Messages queued in this turn of the event loop (they go out in one write at its end)."""
    rows: list[list[Any]] = field(default_factory=list)
    """Planned matches queued in this turn (rows of ``writer``), the ids ``next_id - len(rows) + 1 ...``: they go
    out as one ``plays`` message."""
    writer: RowWriter = field(default_factory=RowWriter)
    """Writes this worker's rows (its tables of games and names, sent once)."""
    drained: asyncio.Future[None] | None = None
    """While the socket's send buffer is full: done when it has room again."""


class _Channel(asyncio.Protocol):
    """The driver's end of one worker's socket: cuts what arrives into messages (a record is a header line
    ``R <id> <size>`` followed by ``size`` bytes, the record's JSON line; anything else is a JSON line) and hands
    them to the executor as they arrive, without a reader task or a stream's line buffer."""

    def __init__(self, executor: ProcessExecutor, process: _Process) -> None:
        self.executor = executor
        self.process = process
        self._parts: list[bytes] = []
        """The unread end of what arrived (an incomplete message)."""
        self._have = 0
        self._want = 0
        """Bytes in ``_parts``, and how many must be there before it is read again."""
        self._record: tuple[int, int] | None = None
        """(request id, size) of the record line awaited after its header."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.process.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._parts:
            self._parts.append(data)
            self._have += len(data)
            if self._have < self._want:
                return
            data = b"".join(self._parts)
            self._parts = []
        try:
            self._read(data)
        except Exception as exc:  # a worker that breaks the protocol is treated as dead: its matches are rescheduled
            log.error("worker process %d sent what cannot be read: %r", self.process.pid, exc)
            self._parts = []
            if self.process.transport is not None:
                self.process.transport.abort()

    def _read(self, data: bytes) -> None:
        size, pos = len(data), 0
        executor, process = self.executor, self.process
        records: list[tuple[int, bytes]] = []
        """The records read from ``data``: handed on together (one commit for all of them), in order with the other
        messages."""
        while pos < size:
            if self._record is not None:
                request_id, length = self._record
                stop = pos + length
                if stop > size:
                    break
                if data[stop - 1] != 10:  # b"\n"
                    raise ValueError(f"record {request_id} does not end its line")
                self._record = None
                # the record's line (its UTF-8 bytes, without the newline) as it arrived: neither parsed nor decoded
                records.append((request_id, data[pos : stop - 1]))
                pos = stop
                continue
            end = data.find(b"\n", pos)
            if end < 0:
                break
            if data[pos] == 82:  # b"R": a record's header
                _, number, count = data[pos:end].split()
                self._record = (int(number), int(count))
            else:
                message = json.loads(data[pos:end])
                if records:
                    executor._finished_records(process, records)
                    records = []
                executor._handle(process, message)
            pos = end + 1
        if records:
            executor._finished_records(process, records)
        if pos < size:
            rest = data[pos:] if pos else data
            self._parts = [rest]
            self._have = len(rest)
            self._want = self._record[1] if self._record is not None else self._have + 1

    def pause_writing(self) -> None:
        if self.process.drained is None:
            self.process.drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        drained, self.process.drained = self.process.drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.resume_writing()
        self.executor._lost(self.process)


class ProcessExecutor:
    """Plays a run's matches in ``workers`` worker processes (see the module docstring); the driver commits.

    Use as an async context manager around the runner: ``play(planned)`` returns the record (or raises as a
    single process would); on leaving, the workers are stopped and their counters added to ``runtime``.
    """

    def __init__(
        self, spec: ExperimentSpec, workers: int, runtime: Any, *, modules: Iterable[str] = (), lazy: bool = False
    ) -> None:
        """An executor of ``workers`` processes for ``spec``; ``runtime`` is the driver's model runtime (or None).
        ``lazy``: entering it starts no worker (:meth:`submit_nowait` refuses matches until the caller has started
        them with :meth:`start_missing`; :meth:`play_json` starts them itself), so a driver that plays too can play
        on while they start."""
        self.spec = spec
        self.workers = workers
        self.lazy = lazy
        self.runtime = runtime
        self.modules = list(modules)
        self.deaths = 0
        self.max_deaths = 2 * workers + spec.max_match_attempts
        """Worker deaths after which the run stops (a match that kills its worker is retried on a new one)."""
        self._processes: list[_Process] = []
        self._started = 0
        self.sink: Callable[[list[tuple[Any, bytes | BaseException]]], None] | None = None
        """Where the outcomes of :meth:`submit_nowait`'s matches go, several at once: ``(tag, outcome)`` pairs, the
        outcome the record's JSON line (UTF-8 bytes, as the worker wrote it, without its newline) or the match's
        failure as the exception one process would raise. Called from the event loop's reading of a worker's
        socket: it must not raise (nor await)."""
        self._broken: BaseException | None = None
        self._finished_counters: list[dict[str, Any]] = []
        self._releasing: set[asyncio.Future[None]] = set()

    async def __aenter__(self) -> ProcessExecutor:
        if not self.lazy:
            for _ in range(self.workers):
                await self._start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _start(self) -> _Process:
        models = self.spec.uses_models()
        try:
            pid, ours = await _forked(models)
        except OSError:  # the fork server died: start another once
            try:
                pid, ours = await _forked(models)
            except OSError as exc:
                raise FatalRunError(f"cannot start worker processes ({exc}); run with --workers 1") from exc
        process = _Process(self._started, pid)
        process.closed = asyncio.get_running_loop().create_future()
        try:
            await asyncio.get_running_loop().create_unix_connection(lambda: _Channel(self, process), sock=ours)
        except BaseException:  # cancelled (the run stopped while its workers started): the new worker ends on EOF
            ours.close()
            raise
        self._started += 1
        init = {
            "op": "init",
            "spec": self.spec.source,
            "modules": self.modules,
            "budget_usd": self.spec.budget_usd if self._budget() is not None else None,
            "environ": dict(os.environ),
            "cwd": os.getcwd(),
            "path": sys.path,
        }
        self._send(process, init)
        self._processes.append(process)
        return process

    def _budget(self) -> Any:
        return self.runtime.budget if self.runtime is not None else None

    def _send(self, process: _Process, message: Mapping[str, Any]) -> None:
        self._seal(process)  # in order after the matches queued before it
        self._queue(process, json.dumps(message).encode() + b"\n")

    def _queue(self, process: _Process, data: bytes) -> None:
        """Queue a message; what this turn of the event loop queued for a worker goes out in one write, in order."""
        if not process.outbox and not process.rows:
            asyncio.get_running_loop().call_soon(self._flush, process)
        process.outbox.append(data)

    def _queue_match(self, process: _Process, planned: PlannedMatch, future: Any, tag: Any) -> None:
        """Queue a planned match for ``process`` (the matches of one turn go out as one ``plays`` message)."""
        if not process.outbox and not process.rows:
            asyncio.get_running_loop().call_soon(self._flush, process)
        process.next_id += 1
        process.in_flight[process.next_id] = (planned.match_id, future, tag)
        process.rows.append(process.writer.row(planned))

    def _seal(self, process: _Process) -> None:
        """Turn the matches queued for ``process`` into their ``plays`` message."""
        rows = process.rows
        if rows:
            first = process.next_id - len(rows) + 1
            tables = process.writer.take_tables()
            extra = json.dumps(tables).encode()[1:-1] + b"," if tables else b""
            message = b'{"op":"plays",%b"first":%d,"matches":%b}\n' % (extra, first, json.dumps(rows).encode())
            process.outbox.append(message)
            process.rows = []

    def _flush(self, process: _Process) -> None:
        self._seal(process)
        transport = process.transport
        if process.outbox and transport is not None and not transport.is_closing():
            transport.write(b"".join(process.outbox) if len(process.outbox) > 1 else process.outbox[0])
        process.outbox.clear()

    def _deliver(self, outcomes: list[tuple[Any, bytes | BaseException]]) -> None:
        """Hand outcomes of :meth:`submit_nowait`'s matches to :attr:`sink` (which must not raise; if it does, the
        error is logged, not taken for the worker's)."""
        sink = self.sink
        if sink is None:  # nobody waits for them any more (the run stopped)
            return
        try:
            sink(outcomes)
        except Exception:
            log.exception("the process executor's sink failed")

    def _finished_records(self, process: _Process, records: list[tuple[int, bytes]]) -> None:
        """Matches of ``process`` ended with these records (request id, the record's JSON line without its
        newline)."""
        in_flight = process.in_flight
        outcomes: list[tuple[Any, bytes | BaseException]] = []
        for request_id, data in records:
            entry = in_flight.pop(request_id, None)
            if entry is None:
                continue
            future = entry[1]
            if future is None:
                outcomes.append((entry[2], data))
            elif not future.done():
                future.set_result(data)
        if outcomes:
            self._deliver(outcomes)

    def _finished(self, process: _Process, message: Mapping[str, Any]) -> None:
        """A match of ``process`` failed: the error in ``message`` (a ``done`` message)."""
        entry = process.in_flight.pop(int(message["id"]), None)
        if entry is None:
            return
        match_id, future, tag = entry
        if future is not None and future.done():
            return
        outcome: bytes | BaseException
        try:
            outcome = record_text({"match_id": match_id, **message}).encode()
        except Exception as exc:
            outcome = exc
        if future is None:
            self._deliver([(tag, outcome)])
        elif isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    def _fail(self, process: _Process, error: Callable[[str], BaseException]) -> None:
        """Fail every match ``process`` has in flight with ``error(match_id)``."""
        outcomes: list[tuple[Any, bytes | BaseException]] = []
        for match_id, future, tag in process.in_flight.values():
            if future is None:
                outcomes.append((tag, error(match_id)))
            elif not future.done():
                future.set_exception(error(match_id))
        process.in_flight.clear()
        if outcomes:
            self._deliver(outcomes)

    def _handle(self, process: _Process, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "done":
            self._finished(process, message)
        elif op == "counters":  # the worker's model-call counters, sent when they changed
            process.counters = message["counters"]
        elif op == "acquire":
            task = asyncio.create_task(self._acquire(process, message))
            process.asking.add(task)
            task.add_done_callback(process.asking.discard)
        elif op == "release":
            grant = process.grants.pop(int(message["grant"]["serial"]), None)
            if grant is not None:
                self._release(
                    grant, message.get("used_tokens"), bool(message.get("rate_limited")), message.get("retry_after_s")
                )
        elif op == "charge":
            budget = self._budget()
            if budget is not None:
                budget.charge(float(message["cost"]))
                for other in self._processes:
                    if other.alive:
                        self._send(other, {"op": "budget", "spent": budget.spent_usd})
        elif op == "failed":  # the worker could not start (a module or the spec would not load): stop the run
            try:
                raise_for_result(message)
            except Exception as exc:
                error: BaseException = exc
            if not isinstance(error, (FatalRunError, SpecError)):
                error = FatalRunError(f"a worker process could not start: {error}")
            self._broken = error
            self._fail(process, lambda _: error)

    def _limiter(self) -> Any:
        """The limiter the workers' calls go through: the driver's model runtime's, so its own calls share it."""
        if self.runtime is not None:
            return self.runtime.limiter
        from llm_bots.transport.limits import PROCESS_LIMITER

        return PROCESS_LIMITER

    def _release(
        self, grant: Any, used_tokens: int | None = None, rate_limited: bool = False, retry_after_s: float | None = None
    ) -> None:
        limiter = self._limiter()
        if hasattr(limiter, "release_nowait"):
            limiter.release_nowait(grant, used_tokens, rate_limited, retry_after_s)
            return
        task = asyncio.ensure_future(limiter.release(grant, used_tokens, rate_limited, retry_after_s))
        self._releasing.add(task)
        task.add_done_callback(self._releasing.discard)

    async def _acquire(self, process: _Process, message: Mapping[str, Any]) -> None:
        """Wait at the driver's limiter for a worker's call; send the grant (or hand it back if the worker died)."""
        import dataclasses

        from llm_bots.transport.limits import Limits

        limiter = self._limiter()
        try:
            grant = await limiter.acquire(str(message["key"]), Limits(**message["limits"]), int(message["est_tokens"]))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # never leave the worker's call waiting
            log.error("the limiter failed: %s", exc)
            self._send(process, {"op": "denied", "ask": message["ask"], "error": f"{type(exc).__name__}: {exc}"})
            return
        if not process.alive:
            self._release(grant)
            return
        process.grants[grant.serial] = grant
        self._send(process, {"op": "granted", "ask": message["ask"], "grant": dataclasses.asdict(grant)})

    def _lost(self, process: _Process) -> None:
        """The worker's output ended: it finished or died. Fail what it had in flight, so the runner reschedules."""
        if not process.alive:
            return
        process.alive = False
        if process.closed is not None and not process.closed.done():
            process.closed.set_result(None)
        for task in list(process.asking):
            task.cancel()
        for grant in process.grants.values():  # its calls in flight end with it: the slots go back to the others
            self._release(grant)
        process.grants.clear()
        if process.transport is not None:
            process.transport.close()
        self._finished_counters.append(process.counters)
        if process.in_flight:
            self.deaths += 1
            why = "ended (killed, or crashed)"
            log.warning(
                "worker process %d (pid %d) %s; %d match(es) in flight are rescheduled",
                process.index,
                process.pid,
                why,
                len(process.in_flight),
            )
            pid = process.pid
            self._fail(
                process, lambda match: InfrastructureError(f"worker process {pid} {why} while playing match {match}")
            )

    def _missing(self) -> bool:
        """Whether a worker must be started (or the run stopped, by :meth:`start_missing`) before matches are sent."""
        alive = sum(1 for p in self._processes if p.alive)
        return alive == 0 or (alive < self.workers and self.deaths < self.max_deaths)

    async def start_missing(self) -> None:
        """Start workers in place of those that died (see :meth:`submit_nowait`).

        Raises:
            FatalRunError: workers died too often, or cannot be started; or a worker could not start its run.
        """
        if self._broken is not None:
            raise self._broken
        await self._pick()

    def submit_nowait(self, items: Iterable[tuple[PlannedMatch, Any]]) -> bool:
        """Send planned matches to the workers without waiting (the way for runs whose matches do not wait for
        anything: no future or task per match), each ``(planned, tag)``: its outcome goes to :attr:`sink` with
        ``tag``. Each goes to the worker with the fewest matches in flight; the matches of one turn of the event loop
        go to a worker as one message. False (nothing sent) when a worker must be started first
        (:meth:`start_missing`).

        Raises:
            FatalRunError: a worker could not start its run (the run stops).
        """
        if self._broken is not None:
            raise self._broken
        if self._missing():
            return False
        alive = [p for p in self._processes if p.alive]
        if len(alive) == 1:
            process = alive[0]
            for planned, tag in items:
                self._queue_match(process, planned, None, tag)
            return True
        for planned, tag in items:
            process = min(alive, key=lambda p: len(p.in_flight))
            self._queue_match(process, planned, None, tag)
        return True

    def flush(self) -> None:
        """Send what was queued for the workers now, not at the end of this turn of the event loop."""
        for process in self._processes:
            if process.outbox or process.rows:
                self._flush(process)

    async def _pick(self) -> _Process:
        alive = [p for p in self._processes if p.alive]
        while len(alive) < self.workers:
            if self.deaths >= self.max_deaths:
                if alive:
                    break
                raise FatalRunError(
                    f"worker processes died {self.deaths} times; the run stops (committed matches are kept: run "
                    "again to resume, or use --workers 1)"
                )
            self._processes = [p for p in self._processes if p.alive]
            alive.append(await self._start())
        return min(alive, key=lambda p: len(p.in_flight))

    async def play(self, planned: PlannedMatch) -> MatchRecord:
        """Play ``planned`` in a worker; its record, or its failure raised as in one process."""
        return MatchRecord.from_json(await self.play_json(planned))

    async def play_json(self, planned: PlannedMatch) -> bytes:
        """Play ``planned`` in a worker; its record as the JSON line the worker wrote (UTF-8 bytes without the
        newline, for :meth:`Store.commit_json <deepeval_games.app.storage.store.Store.commit_json>`: the driver neither
        parses
        nor decodes it), or its failure raised as in one process."""
        if self._broken is not None:
            raise self._broken
        process = await self._pick()
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._queue_match(process, planned, future, None)
        if process.drained is not None:
            with contextlib.suppress(ConnectionError):
                await process.drained
        return await future

    async def close(self) -> None:
        """Stop the workers (closing their input), wait for them, add their counters to the runtime."""
        self.sink = None
        for process in self._processes:
            self._flush(process)
            if process.transport is not None and process.transport.can_write_eof():
                with contextlib.suppress(OSError):
                    process.transport.write_eof()
        for process in self._processes:
            if process.closed is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(process.closed), timeout=10)
                except asyncio.TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(process.pid, signal.SIGKILL)
                    with contextlib.suppress(Exception):
                        await process.closed
        add_counters(self.runtime, self._finished_counters)
        self._finished_counters = []
        self._processes = []
