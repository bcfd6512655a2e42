"""What an executor's worker runs and what crosses a process boundary: :class:`MatchWorker` plays planned matches of
one spec in its process and returns each record as JSON text, and the helpers for what crosses (a planned match as
data, a failure as data and back as the same kind of exception, model-call counters, a worker's view of the driver's
limiter and budget).

The process executor (:mod:`deepeval_games.app.execution.process_executor`, its worker processes in
:mod:`deepeval_games.app.execution.fork_server`)
and the Ray executor (:mod:`deepeval_games.app.execution.ray_executor`) both drive it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, NoReturn

from deepeval_games.app.execution.one_match import MatchPlayer, open_runtime
from deepeval_games.app.spec.loading import as_spec
from deepeval_games.app.spec.schedule import PlannedMatch
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.core.errors import DeepEvalError, FatalRunError, InfrastructureError, SpecError
from deepeval_games.core.records import MatchRecord

__all__ = [
    "LimiterProxy",
    "MatchWorker",
    "RowReader",
    "RowWriter",
    "WorkerError",
    "add_counters",
    "decode_planned",
    "encode_planned",
    "error_result",
    "raise_for_result",
    "record_text",
    "spec_modules",
    "spec_seats",
]


ErrorKind = Literal["infra", "fatal", "spec", "error"]


def spec_seats(spec: ExperimentSpec) -> tuple[Any, ...]:
    """Every player of ``spec`` and its judge (if any): whoever a worker builds to play or judge its matches."""
    return (*spec.players, *([spec.judge] if spec.judge is not None else []))


def spec_modules(spec: ExperimentSpec, games: Iterable[Any] = ()) -> list[str]:
    """Modules a worker imports before playing: those defining the spec's scripted bots and the Python games, so a
    bot or game registered by the caller's own code (not through an entry point) exists in the worker too."""
    from deepeval_games.core.registry.bots import lookup_bot

    modules: set[str] = set()
    for player in spec_seats(spec):
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


class RowWriter:
    """Writes planned matches as compact rows for one worker: ``[match_id, game, seats, repeat, seed]`` with the game
    and each seat's player as an index into tables that grow as the connection goes and are sent once (what the
    process executor sends its workers, many rows in one message; :class:`RowReader` reads them)."""

    def __init__(self) -> None:
        """An empty writer (a new connection)."""
        self._games: dict[str, int] = {}
        self._names: dict[str, int] = {}
        self._seatings: dict[tuple[str, ...], list[int]] = {}
        self._new: dict[str, list[str]] = {}

    def row(self, planned: PlannedMatch) -> list[Any]:
        """The row of ``planned`` (JSON-able); the table entries it needs are among :meth:`take_tables`'s next."""
        game = self._games.get(planned.game)
        if game is None:
            game = self._games[planned.game] = len(self._games)
            self._new.setdefault("games", []).append(planned.game)
        seats = self._seatings.get(planned.seats)
        if seats is None:
            seats = []
            for name in planned.seats:
                index = self._names.get(name)
                if index is None:
                    index = self._names[name] = len(self._names)
                    self._new.setdefault("names", []).append(name)
                seats.append(index)
            self._seatings[planned.seats] = seats
        return [planned.match_id, game, seats, planned.repeat, planned.seed]

    def take_tables(self) -> dict[str, list[str]]:
        """The table entries added since the last call (``games``, ``names``: appended in order on the reader's
        side), to be sent before (or with) the rows that use them."""
        new, self._new = self._new, {}
        return new


class RowReader:
    """Reads the rows of a :class:`RowWriter` (one per connection): each game string and name is one object, made
    once, so a match's strings are not parsed, hashed or compared anew."""

    def __init__(self) -> None:
        """An empty reader (a new connection)."""
        self._games: list[str] = []
        self._names: list[str] = []
        self._seatings: dict[tuple[int, ...], tuple[str, ...]] = {}

    def add_tables(self, tables: Mapping[str, Any]) -> None:
        """Append the table entries of a message (:meth:`RowWriter.take_tables`)."""
        self._games += map(str, tables.get("games", ()))
        self._names += map(str, tables.get("names", ()))

    def planned(self, row: Sequence[Any]) -> PlannedMatch:
        """The planned match of ``row``.

        Raises:
            ValueError: the row is not a planned match's (or names a table entry never sent).
        """
        try:
            match_id, game, seats, repeat, seed = row
            key = tuple(seats)
            names = self._seatings.get(key)
            if names is None:
                names = self._seatings[key] = tuple(self._names[i] for i in key)
            return PlannedMatch(str(match_id), self._games[game], names, int(repeat), int(seed))
        except (ValueError, TypeError, IndexError) as exc:
            raise ValueError(f"not a planned match's row: {row!r:.200}") from exc


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


def error_result(match_id: str, exc: BaseException) -> dict[str, Any]:
    """A failed match's result as data (what :meth:`MatchWorker.play` returns instead of a record, and a worker sends
    when it cannot start): the error's kind, type, message and traceback (:func:`raise_for_result` raises it
    again)."""
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
        return MatchRecord.from_json(record) if isinstance(record, str) else MatchRecord.from_dict(record)
    _raise_error(error)


def record_text(result: Mapping[str, Any]) -> str:
    """The record of a :meth:`MatchWorker.play` result as the JSON text the worker wrote (what
    :meth:`Store.commit_json <deepeval_games.app.storage.store.Store.commit_json>` takes, neither parsed nor validated
    here), or
    its failure raised as :func:`raise_for_result` raises it."""
    error = result.get("error")
    if error is None:
        record = result["record"]
        return record if isinstance(record, str) else MatchRecord.from_dict(record).to_json()
    _raise_error(error)


def _raise_error(error: Mapping[str, Any]) -> NoReturn:
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
    from llm_bots.transport.results import Budget

    class SharedBudget(Budget):
        def charge(self, cost_usd: float) -> None:
            super().charge(cost_usd)
            report(max(0.0, float(cost_usd)))

        def update(self, spent_usd: float) -> None:
            with self._lock:
                self._spent = max(self._spent, float(spent_usd))

    return SharedBudget(limit_usd)


class LimiterProxy:
    """A worker's limiter (:class:`llm_bots.transport.limits.Limiter`): every ``acquire`` and ``release`` is forwarded
    to the
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
        from llm_bots.transport.limits import Grant

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
        limiter: the limiter every model call of this worker goes through (its model runtime's
            :attr:`~llm_bots.llm_bot.ModelRuntime.limiter`): a proxy of the one the driver hosts
            (:class:`LimiterProxy`), so per-model limits hold across workers. None: the runtime's own (limits then
            hold per process only).
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
        if limiter is not None and self.runtime is not None:
            self.runtime.limiter = limiter

    async def play(self, planned: Mapping[str, Any], *, as_bytes: bool = False) -> dict[str, Any]:
        """Play one planned match (:func:`encode_planned`); the result as described in the class docstring.
        ``as_bytes``: the record's JSON as UTF-8 bytes (:meth:`MatchRecord.to_json_bytes`; what a socket sends)
        instead of text."""
        match_id = str(planned.get("match_id", "?"))
        try:
            record = await self._runner.play(decode_planned(planned))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return error_result(match_id, exc)
        return {"match_id": match_id, "record": record.to_json_bytes() if as_bytes else record.to_json()}

    async def play_row(self, row: Sequence[Any], rows: RowReader) -> bytes | dict[str, Any]:
        """Play one planned match given as a row of :class:`RowWriter` (read by ``rows``): its record's JSON as
        UTF-8 bytes (:meth:`MatchRecord.to_json_bytes`), or its failure as :meth:`play`'s error result."""
        try:
            record = await self._runner.play(rows.planned(row))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            match_id = str(row[0]) if isinstance(row, Sequence) and row else "?"
            return error_result(match_id, exc)
        return record.to_json_bytes()

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
