"""Executors: where a run's matches are played. The process executor (``workers = N``) and the worker side that
every executor drives (:class:`MatchWorker`).

One process (the default for small runs) plays every match in the driver's event loop. With ``workers = N``
(``deepeval-games run --workers N``, ``run_experiment(..., workers=N)``) the driver starts N worker processes
(forked from a fork server that imported pyspiel, the tasks and, for model players, litellm once) and sends them
the planned matches over a socket, one JSON line each; each worker
plays many matches at once in its own event loop (the run's ``max_concurrency`` is shared out among the workers,
so LLM matches keep their concurrency) and sends back every finished record as JSON. The driver alone writes the
store (it holds the run directory's :class:`~deepeval_games.store.RunLock`): one writer, the same records and the
same match ids as one process, committed by the same :meth:`Store.commit <deepeval_games.store.Store.commit>`.

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
busy; scripted runs rarely gain (records must cross a pipe and be committed by one process). ``workers = "auto"``
(the default) applies :func:`resolve_workers`'s rule. A run with a person at the table, or a ``local/`` model (its
llama.cpp server belongs to one process), always runs in one process.

Another executor (Ray) drives :class:`MatchWorker` directly; see its docstring.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import importlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from deepeval_games.errors import DeepEvalError, FatalRunError, InfrastructureError, SpecError
from deepeval_games.match_play import MatchPlayer, open_runtime
from deepeval_games.records import MatchRecord
from deepeval_games.schedule import PlannedMatch
from deepeval_games.spec import ExperimentSpec, as_spec

__all__ = [
    "AUTO_MIN_MATCHES",
    "LimiterProxy",
    "MatchWorker",
    "ProcessExecutor",
    "WorkerError",
    "add_counters",
    "check_workers",
    "decode_planned",
    "encode_planned",
    "raise_for_result",
    "resolve_workers",
    "spec_modules",
]

log = logging.getLogger(__name__)

AUTO_MIN_MATCHES = 100
"""Under ``workers = "auto"``, matches to play per worker process: a small run is bound by the model's latency, not
by this machine's CPU, and does not win back the workers' start-up (the fork server imports litellm once, each
worker sets up its own connections)."""

ErrorKind = Literal["infra", "fatal", "spec", "error"]


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


def resolve_workers(spec: ExperimentSpec, workers: int | str | None, matches: int) -> int:
    """How many worker processes a run of ``matches`` matches uses (1: the driver plays them itself).

    ``workers`` overrides the spec's ``[experiment] workers`` (``"auto"`` or a number). Always 1 with a person at the
    table (a human seat or judge) or a ``local/`` model. An explicit number is capped by the matches to play.
    ``"auto"``: one process per core for a run with model players, but at most one per :data:`AUTO_MIN_MATCHES`
    matches to play (so a small run stays in one process); one process for a run without model players (a
    scripted match is too cheap to win back its trip through a pipe and the single writer).
    """
    setting = spec.experiment.workers if workers is None else workers
    if spec.has_humans() or any(p.model is not None and p.model.startswith("local/") for p in _seats(spec)):
        return 1
    if setting == "auto":
        if not spec.uses_models():
            return 1
        return max(1, min(_cores(), matches // AUTO_MIN_MATCHES))
    check_workers(setting)
    return max(1, min(int(setting), matches))


def _seats(spec: ExperimentSpec) -> tuple[Any, ...]:
    return (*spec.players, *([spec.judge] if spec.judge is not None else []))


def spec_modules(spec: ExperimentSpec, games: Iterable[Any] = ()) -> list[str]:
    """Modules a worker imports before playing: those defining the spec's scripted bots and the Python games, so a
    bot or game registered by the caller's own code (not through an entry point) exists in the worker too."""
    from deepeval_games.registry import lookup_bot

    modules: set[str] = set()
    for player in _seats(spec):
        if player.bot is not None:
            with contextlib.suppress(DeepEvalError):
                modules.add(lookup_bot(player.bot).cls.__module__)
    for game in games:
        modules.add(type(game).__module__)
    return sorted(m for m in modules if m not in ("__main__", "builtins") and not m.startswith("pyspiel"))


# -- what crosses the boundary ----------------------------------------------------------------------------------


def encode_planned(planned: PlannedMatch) -> dict[str, Any]:
    """A planned match as JSON-able data (what :meth:`MatchWorker.play` takes)."""
    return {
        "match_id": planned.match_id,
        "game": planned.game,
        "seats": list(planned.seats),
        "repeat": planned.repeat,
        "seed": planned.seed,
    }


def decode_planned(data: Mapping[str, Any]) -> PlannedMatch:
    """Inverse of :func:`encode_planned`."""
    return PlannedMatch(
        match_id=str(data["match_id"]),
        game=str(data["game"]),
        seats=tuple(data["seats"]),
        repeat=int(data["repeat"]),
        seed=int(data["seed"]),
    )


class WorkerError(Exception):
    """A match failed in a worker with an error that is neither infrastructure nor fatal (a bug in a bot or game):
    the message names the original type; the worker's traceback is chained as the cause."""


class _RemoteTraceback(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return "\n(the worker's traceback)\n" + self.text


def _error_kind(exc: BaseException) -> ErrorKind:
    if isinstance(exc, InfrastructureError):
        return "infra"
    if isinstance(exc, FatalRunError):
        return "fatal"
    if isinstance(exc, SpecError):
        return "spec"
    return "error"


def _error_result(match_id: str, exc: BaseException) -> dict[str, Any]:
    return {
        "match_id": match_id,
        "error": {
            "kind": _error_kind(exc),
            "type": type(exc).__name__,
            "message": str(exc),
            "traceback": "".join(traceback.format_exception(exc)),
        },
    }


def raise_for_result(result: Mapping[str, Any]) -> MatchRecord:
    """The record of a :meth:`MatchWorker.play` result, or its failure raised as the same kind of exception:
    :class:`InfrastructureError`, :class:`FatalRunError`, :class:`SpecError`, else :class:`WorkerError`."""
    error = result.get("error")
    if error is None:
        record = result["record"]
        return MatchRecord.from_dict(json.loads(record) if isinstance(record, str) else record)
    kind, message = error.get("kind"), str(error.get("message", ""))
    cause = _RemoteTraceback(str(error.get("traceback", "")))
    if kind == "infra":
        raise InfrastructureError(message) from cause
    if kind == "fatal":
        raise FatalRunError(message) from cause
    if kind == "spec":
        raise SpecError(message) from cause
    raise WorkerError(f"{error.get('type', 'Error')}: {message}") from cause


# -- the worker side --------------------------------------------------------------------------------------------


def _shared_budget(limit_usd: float, report: Callable[[float], None]) -> Any:
    """A worker's view of the driver's budget: calls are charged locally and reported to the driver (``report``),
    which sends back the run's total (``update``); a worker refuses new calls once the total it knows of is spent."""
    from llm_bots.transport import Budget

    class SharedBudget(Budget):
        def charge(self, cost_usd: float) -> None:
            super().charge(cost_usd)
            report(max(0.0, float(cost_usd)))

        def update(self, spent_usd: float) -> None:
            with self._lock:
                self._spent = max(self._spent, float(spent_usd))

    return SharedBudget(limit_usd)


class LimiterProxy:
    """A worker's limiter (:class:`llm_bots.limits.Limiter`): every ``acquire`` and ``release`` is forwarded to the
    limiter the driver hosts, so per-model limits (calls in flight, requests and tokens per minute, adaptive
    concurrency) hold across all workers. ``send`` delivers a JSON-able message to the driver; the driver's answer
    to an ``acquire`` comes back through :meth:`granted`.

    Messages: ``{"op": "acquire", "ask": n, "key", "limits": {...}, "est_tokens"}`` (answered by
    ``granted(n, grant)``) and ``{"op": "release", "grant": {...}, "used_tokens", "rate_limited", "retry_after_s"}``.
    """

    def __init__(self, send: Callable[[dict[str, Any]], None]) -> None:
        """A proxy sending its requests through ``send``."""
        self._send = send
        self._asks = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}

    async def acquire(self, key: str, limits: Any, est_tokens: int = 0) -> Any:
        """Ask the driver's limiter for a grant and wait for it."""
        import dataclasses

        self._asks += 1
        ask = self._asks
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[ask] = future
        limits_data = dataclasses.asdict(limits)
        self._send({"op": "acquire", "ask": ask, "key": key, "limits": limits_data, "est_tokens": est_tokens})
        try:
            return await future
        finally:
            self._pending.pop(ask, None)

    def denied(self, ask: int, error: str) -> None:
        """The driver's limiter failed for ask ``ask``: the call fails as an infrastructure fault."""
        future = self._pending.pop(ask, None)
        if future is not None and not future.done():
            future.set_exception(InfrastructureError(f"the run's limiter failed: {error}"))

    def granted(self, ask: int, grant: Mapping[str, Any]) -> None:
        """The driver granted ask ``ask``; a grant nobody waits for any more (cancelled) is handed back at once."""
        from llm_bots.limits import Grant

        value = Grant(**grant)
        future = self._pending.pop(ask, None)
        if future is None or future.done():
            self._send({"op": "release", "grant": dict(grant), "used_tokens": None, "rate_limited": False})
            return
        future.set_result(value)

    async def release(
        self,
        grant: Any,
        used_tokens: int | None = None,
        rate_limited: bool = False,
        retry_after_s: float | None = None,
    ) -> None:
        """Hand a grant back to the driver's limiter (returns at once)."""
        import dataclasses

        self._send(
            {
                "op": "release",
                "grant": dataclasses.asdict(grant),
                "used_tokens": used_tokens,
                "rate_limited": rate_limited,
                "retry_after_s": retry_after_s,
            }
        )


class MatchWorker:
    """Plays planned matches of one spec in the current process and event loop; the worker side of every executor.

    How an executor drives it (the process executor below does exactly this in each worker process; a Ray actor
    does it in each actor)::

        worker = MatchWorker(spec.source, modules=spec_modules(spec, games), budget_usd=spec.budget_usd,
                             on_charge=report_cost)          # once per process / actor
        result = await worker.play(encode_planned(planned))   # many at once, in one event loop
        record = raise_for_result(result)                     # in the driver, which alone commits it
        counters = worker.counters()                          # any time: the run's model-call counters so far
        worker.update_budget(total_spent)                     # when the driver knows a new total
        worker.close()

    ``play`` never raises for a failed match: the result is ``{"match_id", "record"}`` with the record as JSON text
    (:meth:`MatchRecord.to_json`), or ``{"match_id", "error": {"kind", "type", "message", "traceback"}}`` with
    ``kind`` one of ``infra``, ``fatal``, ``spec``, ``error`` (:func:`raise_for_result` turns it back into the
    runner's exception). Results and counters are JSON-able. Only cancellation propagates.

    Args:
        spec: the spec (an :class:`ExperimentSpec` or its source document); the driver has checked it.
        modules: modules to import first (:func:`spec_modules`): bots and games registered outside entry points.
        budget_usd: the run's budget; with ``on_charge``, each call's cost is reported to the driver.
        on_charge: called with the cost (USD) of every model call this worker made.
        limiter: the limiter every model call of this process goes through (:func:`llm_bots.limits.set_limiter`):
            a proxy of the one the driver hosts (:class:`LimiterProxy`), so per-model limits hold across workers.
            None: the process's own (limits then hold per process only).
    """

    def __init__(
        self,
        spec: ExperimentSpec | Mapping[str, Any],
        *,
        modules: Iterable[str] = (),
        budget_usd: float | None = None,
        on_charge: Callable[[float], None] | None = None,
        limiter: Any = None,
    ) -> None:
        for module in modules:
            importlib.import_module(module)
        self.spec = as_spec(spec)
        self.runtime = open_runtime(self.spec)
        if self.runtime is not None and budget_usd is not None and on_charge is not None:
            self.runtime.budget = _shared_budget(budget_usd, on_charge)
        self._runner = MatchPlayer(self.spec, self.runtime)
        if limiter is not None and self.spec.uses_models():
            from llm_bots.limits import set_limiter

            set_limiter(limiter)

    async def play(self, planned: Mapping[str, Any]) -> dict[str, Any]:
        """Play one planned match (:func:`encode_planned`); the result as described in the class docstring."""
        match_id = str(planned.get("match_id", "?"))
        try:
            record = await self._runner.play(decode_planned(planned))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return _error_result(match_id, exc)
        return {"match_id": match_id, "record": record.to_json()}

    def counters(self) -> dict[str, Any]:
        """The model-call counters of this worker so far: ``calls`` (sent), ``sent`` and ``hits`` per model,
        ``reported`` (per model, the model ids and system fingerprints replies named)."""
        runtime = self.runtime
        if runtime is None:
            return {"calls": 0, "sent": {}, "hits": {}, "reported": {}}
        reported = {
            model: {key: sorted(values) for key, values in seen.items()} for model, seen in runtime.reported.items()
        }
        return {"calls": runtime.calls, "sent": dict(runtime.sent), "hits": dict(runtime.hits), "reported": reported}

    def update_budget(self, spent_usd: float) -> None:
        """Learn the run's total spent (from the driver)."""
        budget = self.runtime.budget if self.runtime is not None else None
        if budget is not None and hasattr(budget, "update"):
            budget.update(spent_usd)

    def close(self) -> None:
        """Close the model-call cache and any model server this worker started."""
        if self.runtime is not None:
            self.runtime.close()


def add_counters(runtime: Any, counters: Iterable[Mapping[str, Any]]) -> None:
    """Add workers' :meth:`MatchWorker.counters` into the driver's model runtime (for the summary and manifest)."""
    if runtime is None:
        return
    for snapshot in counters:
        runtime.calls += int(snapshot.get("calls", 0))
        for total, part in ((runtime.sent, snapshot.get("sent", {})), (runtime.hits, snapshot.get("hits", {}))):
            for model, count in part.items():
                total[model] = total.get(model, 0) + int(count)
        for model, seen in snapshot.get("reported", {}).items():
            mine = runtime.reported.setdefault(model, {"models": set(), "system_fingerprints": set()})
            for key, values in seen.items():
                mine.setdefault(key, set()).update(values)


# -- the worker process ------------------------------------------------------------------------------------------


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The worker process's loop: read requests (JSON lines), play, write results (JSON lines) until input ends."""

    def send(text: str) -> None:
        if not writer.is_closing():
            writer.write(text.encode() + b"\n")

    first = await reader.readline()
    if not first:
        return
    init = json.loads(first)
    # the driver's environment, directory and import path now, not the fork server's when it started
    os.environ.clear()
    os.environ.update(init.get("environ", {}))
    sys.path[:] = init.get("path", sys.path)
    proxy = LimiterProxy(lambda message: send(json.dumps(message)))
    try:
        os.chdir(init.get("cwd", os.getcwd()))
        worker = MatchWorker(
            init["spec"],
            modules=init.get("modules", ()),
            budget_usd=init.get("budget_usd"),
            on_charge=lambda cost: send(json.dumps({"op": "charge", "cost": cost})),
            limiter=proxy,
        )
    except Exception as exc:
        send(json.dumps({"op": "failed", **_error_result("", exc)}))
        return
    tasks: set[asyncio.Task[None]] = set()

    async def play(request_id: int, planned: Mapping[str, Any]) -> None:
        result = await worker.play(planned)
        counters = json.dumps(worker.counters())
        if "record" in result:  # the record's JSON is written as it is, not parsed and written again
            send(f'{{"op":"done","id":{request_id},"counters":{counters},"record":{result["record"]}}}')
        else:
            send(
                json.dumps({"op": "done", "id": request_id, "error": result["error"], "counters": json.loads(counters)})
            )

    try:
        while True:
            line = await reader.readline()
            if not line:
                break  # the driver closed our input (finished, or died): stop
            message = json.loads(line)
            op = message.get("op")
            if op == "play":
                task = asyncio.create_task(play(int(message["id"]), message["match"]))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            elif op == "granted":
                proxy.granted(int(message["ask"]), message["grant"])
            elif op == "denied":
                proxy.denied(int(message["ask"]), str(message.get("error", "")))
            elif op == "budget":
                worker.update_budget(float(message["spent"]))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        worker.close()


async def _worker_main_async(sock: socket.socket) -> None:
    reader, writer = await asyncio.open_unix_connection(sock=sock, limit=_LINE_LIMIT)
    with contextlib.suppress(ConnectionError):  # the driver is gone
        await _serve(reader, writer)


def worker_main(sock: socket.socket) -> None:
    """Entry point of a worker process: serve the driver over ``sock`` (JSON lines) until it closes it."""
    gc.freeze()  # what the fork server imported (pyspiel, litellm's tables) stays out of the collector's walks
    logging.basicConfig(level=os.environ.get("DEEPEVAL_GAMES_WORKER_LOG", "WARNING"), stream=sys.stderr)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the process group: the driver decides
    try:
        asyncio.run(_worker_main_async(sock))
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(0)  # no interpreter teardown: nothing is left to write


_LINE_LIMIT = 1 << 30
"""The longest message (a record as one JSON line) either side reads."""

_PRELOAD = ("deepeval_games.executors", "deepeval_games.runner", "llm_bots.llm_bot")
"""Modules the fork server imports once, so that each worker starts with them loaded (and litellm, for a run with
model players)."""


def _fork_server_main(fd: int, models: bool) -> None:
    """The fork server (``python -m deepeval_games.executors FD models|plain``): import the heavy modules once, then
    fork a worker for each socket the driver passes over ``fd``, and answer its pid; stop when the driver is gone.

    Like multiprocessing's fork server, minus its re-import of the caller's main script in every worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for module in _PRELOAD:
        importlib.import_module(module)
    if models:
        from llm_bots import model_info

        model_info.litellm()
    gc.collect()
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
            [sys.executable, "-m", "deepeval_games.executors", str(theirs.fileno()), mode],
            pass_fds=(theirs.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self.control = ours
        self.lock = threading.Lock()

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
        return int(answer), ours

    def close(self) -> None:
        self.control.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_server: _ForkServer | None = None
_server_guard = threading.Lock()


def _fork_server(models: bool) -> _ForkServer:
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


# -- the driver side ---------------------------------------------------------------------------------------------


@dataclass
class _Process:
    index: int
    pid: int
    stream: asyncio.StreamReader
    writer: asyncio.StreamWriter
    in_flight: dict[int, tuple[asyncio.Future[MatchRecord], str]] = field(default_factory=dict)
    counters: dict[str, Any] = field(default_factory=dict)
    reader: asyncio.Task[None] | None = None
    alive: bool = True
    grants: dict[int, Any] = field(default_factory=dict)
    """Grants of the driver's limiter held by this worker's calls (handed back for it if it dies)."""
    asking: set[asyncio.Task[None]] = field(default_factory=set)
    """Its acquire requests waiting at the driver's limiter."""


class ProcessExecutor:
    """Plays a run's matches in ``workers`` worker processes (see the module docstring); the driver commits.

    Use as an async context manager around the runner: ``play(planned)`` returns the record (or raises as a
    single process would); on leaving, the workers are stopped and their counters added to ``runtime``.
    """

    def __init__(self, spec: ExperimentSpec, workers: int, runtime: Any, *, modules: Iterable[str] = ()) -> None:
        """An executor of ``workers`` processes for ``spec``; ``runtime`` is the driver's model runtime (or None)."""
        self.spec = spec
        self.workers = workers
        self.runtime = runtime
        self.modules = list(modules)
        self.deaths = 0
        self.max_deaths = 2 * workers + spec.max_match_attempts
        """Worker deaths after which the run stops (a match that kills its worker is retried on a new one)."""
        self._processes: list[_Process] = []
        self._started = 0
        self._next_id = 0
        self._broken: BaseException | None = None
        self._finished_counters: list[dict[str, Any]] = []
        self._releasing: set[asyncio.Future[None]] = set()

    async def __aenter__(self) -> ProcessExecutor:
        for _ in range(self.workers):
            await self._start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _start(self) -> _Process:
        models = self.spec.uses_models()
        try:
            pid, ours = await asyncio.to_thread(lambda: _fork_server(models).fork())
        except OSError:  # the fork server died: start another once
            try:
                pid, ours = await asyncio.to_thread(lambda: _fork_server(models).fork())
            except OSError as exc:
                raise FatalRunError(f"cannot start worker processes ({exc}); run with --workers 1") from exc
        stream, writer = await asyncio.open_unix_connection(sock=ours, limit=_LINE_LIMIT)
        process = _Process(self._started, pid, stream, writer)
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
        process.reader = asyncio.create_task(self._read(process))
        self._processes.append(process)
        return process

    def _budget(self) -> Any:
        return self.runtime.budget if self.runtime is not None else None

    def _send(self, process: _Process, message: Mapping[str, Any]) -> None:
        if not process.writer.is_closing():
            process.writer.write(json.dumps(message).encode() + b"\n")

    async def _read(self, process: _Process) -> None:
        try:
            while True:
                try:
                    line = await process.stream.readline()
                except (ValueError, asyncio.LimitOverrunError, ConnectionError):
                    line = b""
                if not line:
                    break
                self._handle(process, json.loads(line))
        finally:
            await self._lost(process)

    def _handle(self, process: _Process, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "done":
            process.counters = message.get("counters") or process.counters
            entry = process.in_flight.pop(int(message["id"]), None)
            if entry is None:
                return
            future, match_id = entry
            if future.done():
                return
            try:
                future.set_result(raise_for_result({"match_id": match_id, **message}))
            except Exception as exc:
                future.set_exception(exc)
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
            for future, _ in process.in_flight.values():
                if not future.done():
                    future.set_exception(error)
            process.in_flight.clear()

    def _limiter(self) -> Any:
        from llm_bots.limits import get_limiter

        return get_limiter()

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

        from llm_bots.limits import Limits

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

    async def _lost(self, process: _Process) -> None:
        """The worker's output ended: it finished or died. Fail what it had in flight, so the runner reschedules."""
        if not process.alive:
            return
        process.alive = False
        for task in list(process.asking):
            task.cancel()
        for grant in process.grants.values():  # its calls in flight end with it: the slots go back to the others
            self._release(grant)
        process.grants.clear()
        process.writer.close()
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
            for future, match_id in process.in_flight.values():
                if not future.done():
                    future.set_exception(
                        InfrastructureError(f"worker process {process.pid} {why} while playing match {match_id}")
                    )
            process.in_flight.clear()

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
        if self._broken is not None:
            raise self._broken
        process = await self._pick()
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[MatchRecord] = asyncio.get_running_loop().create_future()
        process.in_flight[request_id] = (future, planned.match_id)
        self._send(process, {"op": "play", "id": request_id, "match": encode_planned(planned)})
        with contextlib.suppress(ConnectionError):
            await process.writer.drain()
        return await future

    async def close(self) -> None:
        """Stop the workers (closing their input), wait for them, add their counters to the runtime."""
        for process in self._processes:
            if process.writer.can_write_eof():
                with contextlib.suppress(OSError):
                    process.writer.write_eof()
        for process in self._processes:
            if process.reader is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(process.reader), timeout=10)
                except asyncio.TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(process.pid, signal.SIGKILL)
                    with contextlib.suppress(Exception):
                        await process.reader
        add_counters(self.runtime, self._finished_counters)
        self._finished_counters = []
        self._processes = []


if __name__ == "__main__":
    if len(sys.argv) != 3 or not sys.argv[1].isdigit():
        sys.exit("the fork server of the process executor: started by deepeval-games itself, not by hand")
    _fork_server_main(int(sys.argv[1]), sys.argv[2] == "models")
