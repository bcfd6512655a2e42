"""Runs an experiment: every planned match, concurrently, durably, resumable.

The default executor is asyncio in one process: up to ``max_concurrency`` matches at once (LLM bots
add per-model limits of their own). A run with a person at the table (a human seat or judge) plays its matches
one at a time, with no model-call cache and no progress bar; nothing times the person out, and Ctrl-C leaves the
match in progress uncommitted (the run resumes). Each finished match is committed to the store at once. A match
whose model infrastructure fails is logged and rescheduled (up to ``max_match_attempts``), never
scored; a fatal error (bad credentials, unknown model) stops the run after keeping what was committed;
any other error in one match is logged and the tournament goes on.

Nothing is written before the spec has passed every check: the plan's size, its games and data files, every
player and judge built once per game, model strings and API keys (:func:`check_run`). Only then is the run
directory created and locked (:class:`~deepeval_games.app.storage.store.RunLock`, held by this process for the whole
run), so a
spec with a typo leaves nothing behind and its corrected version runs into the same directory.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import math
import sys
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from deepeval_games.app.execution.executors import (
    AUTO_PROBE_S,
    ProcessExecutor,
    check_workers,
    prestart,
    probe_matches,
    resolve_workers,
    spec_modules,
    workers_after_probe,
)
from deepeval_games.app.execution.match_play import MatchPlayer, build_player, open_runtime
from deepeval_games.app.spec.extends import with_pool
from deepeval_games.app.spec.loading import as_spec
from deepeval_games.app.spec.manifest import RunManifest
from deepeval_games.app.spec.schedule import (
    PlannedMatch,
    check_plan_size,
    check_round_budget,
    count_matches,
    plan_matches,
)
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.app.spec.stopping import StoppingRule
from deepeval_games.app.storage.store import RunLock, Store
from deepeval_games.core.errors import DeepEvalError, FatalRunError, InfrastructureError, SpecError
from deepeval_games.core.quoting import visible
from deepeval_games.core.records import MatchRecord

if TYPE_CHECKING:
    from deepeval_games.app.execution.ray_executor import RayExecutor

__all__ = ["STOPPING_FILE", "RunResult", "build_player", "check_run", "run_experiment", "run_experiment_async"]

STOPPING_FILE = "stopping.json"
"""The adaptive stopping rule's report in a run directory (:meth:`analysis.stats.stopping.StoppingReport.to_dict`)."""

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    """What a run did."""

    run_dir: Path
    planned: int
    played: int = 0
    """Matches committed by this run."""
    skipped: int = 0
    """Matches already in the store (resumed)."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """(match id, error) of matches that could not be completed."""
    match_ids: frozenset[str] = field(default_factory=frozenset, repr=False)
    """Ids of the run's matches (old and new) committed in the store: what :attr:`records` reads."""
    model_calls: int = 0
    """Model calls sent by this run (cache hits not counted)."""
    calls_by_model: dict[str, int] = field(default_factory=dict)
    """Per configured model string, the calls sent by this run."""
    cache_hits: dict[str, int] = field(default_factory=dict)
    """Per configured model string, the asks answered from the model-call cache instead of a call."""
    repeats: int = 0
    """Repeats finally played (grows under ``until_stable``)."""
    stableness: dict[str, Any] = field(default_factory=dict)
    """Per task, the stableness check of ``until_stable`` (empty without that rule)."""
    stopping: Any = None
    """Under ``until_stable`` with ``rule = "adaptive"``, the rule's :class:`~analysis.stats.stopping.StoppingReport`:
    what
    stopped the run, matches per player, intervals, what is unresolved (None otherwise)."""

    @property
    def records(self) -> list[MatchRecord]:
        """Every committed record of the run, old and new, in commit order: read from the store at each access (the
        runner keeps no finished record; :meth:`iter_records` streams them instead)."""
        return list(self.iter_records())

    def iter_records(self, *, rebuild_turns: bool = True) -> Iterator[MatchRecord]:
        """The run's committed records streamed from the store in commit order, one at a time
        (``rebuild_turns``: see :meth:`MatchRecord.from_json`)."""
        if not self.match_ids:
            return
        store = Store(self.run_dir, read_only=True)
        try:
            for record in store.records(rebuild_turns=rebuild_turns):
                if record.match_id in self.match_ids:
                    yield record
        finally:
            store.close()


class _Runner(MatchPlayer):
    """Plays a list of planned matches, many at once, committing each record to the store as it finishes; matches
    are played here (:class:`MatchPlayer`) or by an executor's workers."""

    def __init__(self, spec: ExperimentSpec, store: Store | None, progress: bool, runtime: Any) -> None:
        super().__init__(spec, runtime)
        self.store = store
        self.progress = progress
        self.executor: ProcessExecutor | RayExecutor | None = None
        """Where matches are played when not in this process (:mod:`deepeval_games.app.execution.executors`)."""
        self.plays_too = False
        """Whether this process plays matches too while worker processes play theirs (a run without model players:
        one core is this process's, see :func:`_executor`)."""

    async def play(self, planned: PlannedMatch) -> MatchRecord:
        """Play one planned match, here or in a worker process (whose record comes back here to be committed)."""
        if self.executor is not None:
            record = await self.executor.play(planned)
        else:
            record = await super().play(planned)
        self.played(record)
        return record

    def played(self, record: MatchRecord) -> None:
        """A record played (here, or in a worker and read back), before it is committed (a subclass may read it)."""

    async def play_and_commit(self, planned: PlannedMatch) -> bool:
        """Play one planned match and commit its record; True if it was stored now (False: its id was stored
        already). A worker process's record is committed as the JSON text the worker wrote, never parsed here."""
        assert self.store is not None
        if isinstance(self.executor, ProcessExecutor):
            text = await self.executor.play_json(planned)
            self.played_json(planned.match_id, text)
            return self.store.commit_json(planned.match_id, text)
        return self.store.commit(await self.play(planned))

    def played_json(self, match_id: str, text: str | bytes) -> None:
        """A record played in a worker process, as its JSON line (UTF-8 bytes), before it is committed (a subclass
        may read it)."""

    def progress_bar(self, total: int) -> tqdm:
        """The run's progress bar over ``total`` matches (drawn only with ``progress``, and never over a person's
        prompts)."""
        hidden = not self.progress or self.spec.has_humans()
        name = visible(self.spec.name, keep_lines=False)  # the bar is drawn raw: the name must not drive the terminal
        return tqdm(total=total, disable=hidden, file=sys.stderr, unit="match", desc=name)

    async def run(self, todo: list[PlannedMatch], result: RunResult, *, bar: tqdm | None = None) -> None:
        """Play and commit ``todo`` (up to ``max_concurrency`` at once), counting into ``result``; ``bar``: the run's
        progress bar when it spans more than this call (else one is drawn for ``todo`` and closed)."""
        if isinstance(self.executor, ProcessExecutor) and not self.spec.uses_models() and todo:
            shown = bar if bar is not None else self.progress_bar(len(todo))
            try:
                await self._run_batched(self.executor, todo, result, shown)
            finally:
                if bar is None:
                    shown.close()
            return
        queue: asyncio.Queue[tuple[PlannedMatch, int]] = asyncio.Queue()
        for planned in todo:
            queue.put_nowait((planned, 1))
        humans = self.spec.has_humans()  # a person plays one match at a time
        shown = bar if bar is not None else self.progress_bar(len(todo))
        fatal: list[BaseException] = []

        async def worker() -> None:
            while not fatal:
                try:
                    planned, attempt = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                try:
                    committed = await self.play_and_commit(planned)
                except Exception as exc:
                    settled = self._failed(planned, attempt, exc, result, queue.put_nowait, fatal)
                    if settled:
                        shown.update(settled)
                    continue  # the loop ends when the run stops (a fatal error)
                if committed:
                    result.played += 1
                shown.update(1)

        workers = 1 if humans else max(1, min(self.spec.max_concurrency, len(todo)))
        try:
            await asyncio.gather(*(worker() for _ in range(workers)))
        finally:
            if bar is None:
                shown.close()
        if fatal:
            raise fatal[0]

    def _failed(
        self,
        planned: PlannedMatch,
        attempt: int,
        exc: BaseException,
        result: RunResult,
        retry: Callable[[tuple[PlannedMatch, int]], Any],
        fatal: list[BaseException],
    ) -> int:
        """What a run does with a match that failed with ``exc`` at attempt ``attempt``; how many matches it settled
        (0: rescheduled, or the run stops). An infrastructure fault is logged and the match handed to ``retry`` (its
        next attempt) until ``max_match_attempts``, then counted failed; a fatal or spec error is appended to
        ``fatal`` (the run stops); anything else (a bug in a bot or game) is logged and counted failed, and the
        tournament goes on."""
        assert self.store is not None
        if isinstance(exc, InfrastructureError):
            self.store.log_attempt(planned.match_id, "infra", str(exc))
            if attempt < self.spec.max_match_attempts:
                log.warning("match %s aborted (%s); rescheduled", planned.match_id, exc)
                retry((planned, attempt + 1))
                return 0
            result.failed.append((planned.match_id, f"infrastructure: {exc}"))
            return 1
        if isinstance(exc, (FatalRunError, SpecError)):
            fatal.append(exc)
            return 0
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        self.store.log_attempt(planned.match_id, "error", "".join(traceback.format_exception(exc)))
        log.error("match %s failed: %s", planned.match_id, detail)
        result.failed.append((planned.match_id, detail))
        return 1

    async def _run_batched(
        self, executor: ProcessExecutor, todo: list[PlannedMatch], result: RunResult, shown: tqdm
    ) -> None:
        """:meth:`run` for a run without model players in worker processes: its matches never wait for this
        process, so they are handed to the workers as they have room (up to ``max_concurrency`` in flight, as
        :meth:`run` keeps) without a coroutine or future per match, and the records that arrive together are
        committed together (:meth:`Store.commit_many_json <deepeval_games.app.storage.store.Store.commit_many_json>`:
        one
        ``writev``). Failures are handled as :meth:`run` handles them: rescheduled, logged, or stopping the run."""
        store = self.store
        assert store is not None
        waiting: collections.deque[tuple[PlannedMatch, int]] = collections.deque((planned, 1) for planned in todo)
        here = self.plays_too
        limit = max(1, min(self.spec.max_concurrency - (1 if here else 0), len(todo)))  # one is played here
        in_flight = 0
        fatal: list[BaseException] = []
        loop = asyncio.get_running_loop()
        wake: asyncio.Future[None] | None = None

        def refill() -> bool:
            """Send waiting matches while fewer than ``limit`` are in flight; False: a worker must be started."""
            nonlocal in_flight
            count = min(limit - in_flight, len(waiting))
            if count <= 0 or fatal:
                return True
            batch = [waiting.popleft() for _ in range(count)]
            try:
                sent = executor.submit_nowait([(item[0], item) for item in batch])
            except (FatalRunError, SpecError) as exc:
                fatal.append(exc)
                return True
            if not sent:
                waiting.extendleft(reversed(batch))
                return False
            in_flight += count
            return True

        def failed(planned: PlannedMatch, attempt: int, exc: BaseException) -> int:
            return self._failed(planned, attempt, exc, result, waiting.append, fatal)

        def settle(outcomes: list[tuple[Any, bytes | BaseException]]) -> None:
            """Outcomes that arrived together: send more matches first (the workers play on), then commit."""
            nonlocal in_flight
            in_flight -= len(outcomes)
            lines: list[tuple[str, bytes]] = []
            played: list[PlannedMatch] = []
            settled = 0
            try:
                for (planned, attempt), outcome in outcomes:
                    if isinstance(outcome, BaseException):
                        settled += failed(planned, attempt, outcome)
                    else:
                        lines.append((planned.match_id, outcome))
                        played.append(planned)
                started = refill()
                executor.flush()
                if lines:
                    for match_id, data in lines:
                        self.played_json(match_id, data)
                    try:
                        committed = store.commit_many_json(lines)
                    except Exception:  # one at a time, so that only the faulty ones fail, as in run()
                        committed = []
                        for planned, (match_id, data) in zip(played, lines, strict=True):
                            try:
                                committed.append(store.commit_json(match_id, data))
                            except Exception as exc:
                                committed.append(False)
                                settled += failed(planned, 1, exc) - 1
                    result.played += sum(committed)
                    settled += len(lines)
            except BaseException as exc:  # never raised into the worker's socket: the run stops with it
                fatal.append(exc)
                started = False
            if settled:
                shown.update(settled)
            if wake is not None and not wake.done() and (fatal or not started or not (waiting or in_flight)):
                wake.set_result(None)

        starting: asyncio.Future[None] | None = None  # workers being started (start_missing)

        async def started() -> None:
            """Wait for the workers being started; a failure to start them stops the run."""
            nonlocal starting
            assert starting is not None
            try:
                await starting
            except (FatalRunError, SpecError) as exc:
                fatal.append(exc)
            finally:
                starting = None

        executor.sink = settle
        try:
            while True:
                pending = starting is not None and not starting.done()  # (refill would only be refused meanwhile)
                if not fatal and waiting and (pending or not refill()):  # a worker must be started first
                    if starting is None:
                        starting = asyncio.ensure_future(executor.start_missing())
                        starting.add_done_callback(_retrieved)  # its failure is read here, or left when stopping
                    if not here or starting.done():  # (a driver that plays plays on meanwhile)
                        await started()
                        continue
                if not in_flight and (fatal or not waiting):
                    if starting is not None:  # the driver played everything, or stopped, while they started
                        starting.cancel()  # (a worker forked meanwhile ends at once; the executor closes the rest)
                        await asyncio.wait([starting])
                    break  # done; or stopped, once the matches in flight are committed (as run() lets them finish)
                if here and waiting and not fatal:  # the workers have their fill: play one here, then take theirs
                    planned, attempt = waiting.popleft()
                    try:
                        record = await MatchPlayer.play(self, planned)
                        self.played(record)
                        committed = store.commit(record)
                    except Exception as exc:
                        settled = failed(planned, attempt, exc)
                    else:
                        result.played += committed
                        settled = 1
                    if settled:
                        shown.update(settled)
                    await asyncio.sleep(0)
                    continue
                wake = loop.create_future()
                await wake
                wake = None
        finally:
            executor.sink = None
            if starting is not None:  # stopped from outside: the executor closes what started
                starting.cancel()
        if fatal:
            raise fatal[0]


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Read a finished future's failure so that asyncio never reports it as unretrieved (its owner may have stopped
    waiting for it)."""
    if not future.cancelled():
        future.exception()


def _out_dir(out_dir: str | Path) -> Path:
    """The run directory, refused when it is no directory: an empty name (never the current directory) or a
    file."""
    if not str(out_dir).strip():
        raise SpecError("the run directory (--out) must be named: an empty name would write into the current directory")
    path = Path(out_dir)
    if path.exists() and not path.is_dir():
        raise DeepEvalError(f"cannot use {path} as a run directory: it exists and is not a directory")
    return path


def check_run(spec: ExperimentSpec | Mapping[str, Any] | str | Path, out_dir: str | Path) -> list[PlannedMatch]:
    """Every check that can fail a run, before anything is written; returns the plan.

    The run directory's name; the data folder; the plan's size (under ``until_stable``, at its ``max_repeats``)
    against ``[experiment] max_matches``; every game string with its sweep values (files named by game parameters,
    data files, parameters within the bounds the task declares, a match's estimated length and memory); every player
    and the judge, built once per game (bots and their parameters, model strings, settings, judge rules); API keys of
    model players and the files of local models; the model-call cache's path.

    Raises:
        DeepEvalError: what is wrong (a :class:`SpecError`, :class:`UnknownGameError`, :class:`FatalRunError`...).
    """
    spec = with_pool(as_spec(spec))
    _out_dir(out_dir)
    data_dir = spec.experiment.data_dir
    if data_dir is not None and not Path(data_dir).is_dir():
        raise SpecError(f"[experiment] data_dir: {data_dir!r} is not a folder")
    rule = _stopping_rule(spec)
    if rule is not None:
        check_plan_size(spec, repeats=max(spec.repeats, rule.max_repeats))
        check_round_budget(spec, rule)
    plan = plan_matches(spec)
    _Runner(spec, None, False, None).validate(plan)
    return plan


def _plays_too(spec: ExperimentSpec, processes: int) -> bool:
    """Whether the driver plays matches too, beside ``processes - 1`` worker processes, in a run of ``processes``
    processes: for a run without model players (its matches keep a core busy, and this process would otherwise
    only commit what the workers send, while a third process shares two cores with the workers), when each
    worker still has at least two matches in flight out of ``max_concurrency`` (one is kept for this process),
    so that no worker waits while this process plays one."""
    if spec.uses_models() or processes < 2:
        return False
    return (spec.max_concurrency - 1) // (processes - 1) >= 2


@contextlib.asynccontextmanager
async def _executor(runner: _Runner, workers: int | str | None, matches: int) -> AsyncIterator[None]:
    """Play the runner's matches in worker processes while inside
    (:func:`~deepeval_games.app.execution.executors.resolve_workers`
    decides how many; one: in this process). Leaving it stops the workers and adds their call counters to the
    runner's model runtime."""
    if runner.spec.experiment.executor == "ray":
        async with _ray_executor(runner, workers, matches):
            yield
        return
    count = resolve_workers(runner.spec, workers, matches)
    if count <= 1:
        yield
        return
    plays_too = _plays_too(runner.spec, count)
    started = count - 1 if plays_too else count
    if plays_too:
        log.info("playing %d matches in %d processes: this one and %d worker process(es)", matches, count, started)
    else:
        log.info("playing %d matches in %d worker processes", matches, count)
    modules = spec_modules(runner.spec, runner.games.values())
    # the driver that plays too plays on while its workers start (the fork server may still be importing the tasks)
    async with ProcessExecutor(runner.spec, started, runner.runtime, modules=modules, lazy=plays_too) as executor:
        runner.executor, runner.plays_too = executor, plays_too
        try:
            yield
        finally:
            runner.executor, runner.plays_too = None, False


@contextlib.asynccontextmanager
async def _ray_executor(runner: _Runner, workers: int | str | None, matches: int) -> AsyncIterator[None]:
    """Play the runner's matches in actors on a Ray cluster while inside
    (:mod:`deepeval_games.app.execution.ray_executor`): one
    actor per CPU of the cluster, or ``workers`` when it is a number; none when nothing is left to play."""
    if matches <= 0:
        yield
        return
    from deepeval_games.app.execution.ray_executor import RayExecutor

    setting = runner.spec.experiment.workers if workers is None else workers
    actors = setting if isinstance(setting, int) else None
    modules = spec_modules(runner.spec, runner.games.values())
    address = runner.spec.experiment.ray_address
    async with RayExecutor(
        runner.spec, runner.runtime, address=address, actors=actors, modules=modules, matches=matches
    ) as executor:
        runner.executor = executor
        try:
            yield
        finally:
            runner.executor = None


def _finish_manifest(manifest: RunManifest, status: str, runtime: Any, result: RunResult) -> None:
    """Close the run's manifest: how it ended, what it played, and what the providers reported (the runtime has
    noted every reply, cache hits and workers' included: no record is read back)."""
    manifest.finish(
        status=status,
        reported=runtime.reported if runtime is not None else None,
        played=result.played,
        failed=len(result.failed),
    )


async def _run_once(
    spec: ExperimentSpec,
    out_dir: str | Path,
    *,
    progress: bool,
    run_lock: RunLock,
    plan: list[PlannedMatch] | None,
    workers: int | str | None = None,
) -> RunResult:
    if plan is None:  # a later round of until_stable: the first was checked in full
        plan = plan_matches(spec)
        _Runner(spec, None, False, None).validate(plan)
    store = Store(
        out_dir, spec_hash=spec.content_hash(), spec_text=json.dumps(spec.source, sort_keys=True), run_lock=run_lock
    )
    runtime = None
    try:
        runtime = open_runtime(spec)
        done = store.completed_ids()
        todo = [m for m in plan if m.match_id not in done]
        result = RunResult(
            run_dir=Path(out_dir), planned=len(plan), skipped=len(plan) - len(todo), repeats=spec.repeats
        )
        runner = _Runner(spec, store, progress, runtime)
        for game_string in sorted({m.game for m in plan}):
            runner.game(game_string)
        manifest = RunManifest(out_dir, spec, runner.games.values(), len(plan))
        manifest.start()
        status = "failed"
        try:
            probe = probe_matches(spec, workers, len(todo))
            bar = runner.progress_bar(len(todo)) if probe else None  # one bar over the probe and the rest
            try:
                count: int | str | None = workers
                if probe:
                    todo, count = await _probe(runner, todo, probe, result, bar)
                async with _executor(runner, count, len(todo)):
                    await runner.run(todo, result, bar=bar)
            finally:
                if bar is not None:
                    bar.close()
            result.match_ids = frozenset({m.match_id for m in plan} & store.completed_ids())
            status = "finished"
        finally:
            _finish_manifest(manifest, status, runtime, result)
        if runtime is not None:
            result.model_calls = runtime.calls
            result.calls_by_model, result.cache_hits = dict(runtime.sent), dict(runtime.hits)
        return result
    finally:
        if runtime is not None:
            runtime.close()
        store.close()


async def _probe(
    runner: _Runner, todo: list[PlannedMatch], limit: int, result: RunResult, bar: tqdm | None
) -> tuple[list[PlannedMatch], int]:
    """Play the first matches of ``todo`` in this process, timing them: up to ``limit`` matches, in chunks of 1, 2,
    4... until :data:`~deepeval_games.app.execution.executors.AUTO_PROBE_S` has passed; return the matches left and the
    worker
    processes that play them (:func:`~deepeval_games.app.execution.executors.workers_after_probe`). A match is timed by
    the CPU
    this process spent on it (what worker processes would share out), not by the wall clock: matches that wait
    (a bot's I/O, a sandboxed program's own process) already overlap in one event loop. The probed matches are
    drawn from all over ``todo`` (:func:`_spread`), so a sweep whose first game is cheap and whose last is costly is
    judged by both."""
    sample = [todo[i] for i in _spread(min(limit, len(todo)), len(todo))]
    played, size, start, cpu = 0, 1, time.perf_counter(), time.process_time()
    while played < len(sample):
        chunk = sample[played : played + size]
        await runner.run(chunk, result, bar=bar)
        played += len(chunk)
        size *= 2
        if time.perf_counter() - start >= AUTO_PROBE_S:
            break
    seconds = (time.process_time() - cpu) / max(1, played)
    probed = {id(m) for m in sample[:played]}
    rest = [m for m in todo if id(m) not in probed]
    count = workers_after_probe(len(rest), seconds)
    log.info(
        "%d matches took %.2f ms of CPU each here: %d process(es) play the %d left",
        played,
        seconds * 1e3,
        count,
        len(rest),
    )
    return rest, count


def _spread(count: int, size: int) -> list[int]:
    """``count`` distinct positions in ``range(size)`` (``count <= size``), in an order whose every prefix covers the
    whole range evenly: position ``k * φ`` modulo ``size`` (the golden-ratio sequence), skipping repeats."""
    golden = (math.sqrt(5) - 1) / 2
    seen: set[int] = set()
    order: list[int] = []
    k = 0
    while len(order) < count:
        position = int(((k * golden) % 1.0) * size)
        k += 1
        if position not in seen:
            seen.add(position)
            order.append(position)
    return order


_ACTIVE_EPSILON = 1e-300
"""The marker of ``pairing = "active"`` without ``until_stable``: the indifference margin is then
:data:`ACTIVE_MARGIN` of the widest payoff range."""
ACTIVE_MARGIN = 1.2
"""``pairing = "active"`` without ``until_stable``: an adjacent pair stops being refined once the anytime-valid
interval of its payoff difference (which spans twice the payoff range) is narrower than this multiple of the payoff
range: ``bench/bench_active.py``'s ``epsilon`` (2.4 on payoffs in [-1, 1])."""


def _stopping_rule(spec: ExperimentSpec) -> StoppingRule | None:
    """The rule that extends the run: ``until_stable``, or for ``pairing = "active"`` the adaptive rule (with its
    defaults when ``until_stable`` is left out)."""
    if spec.pairing == "active" and spec.until_stable is None:
        return StoppingRule(epsilon=_ACTIVE_EPSILON, rule="adaptive")
    return spec.until_stable


def _default_epsilon(bounds: Iterable[tuple[float, float]]) -> float:
    return ACTIVE_MARGIN * max((high - low for low, high in bounds), default=1.0)


def _stableness(spec: ExperimentSpec, records: list[MatchRecord]) -> dict[str, Any]:
    from analysis.stats.convergence import stableness

    rule = spec.until_stable
    assert rule is not None
    from deepeval_games.core.registry.games import game_variant

    tasks = sorted({game_variant(r.game) for r in records})
    return {
        task: stableness(records, epsilon=rule.epsilon, batch=rule.batch, window=rule.window, task=task)
        for task in tasks
    }


def _with_executor(spec: ExperimentSpec, executor: str | None, ray_address: str | None) -> ExperimentSpec:
    """``spec`` with the caller's executor settings (run settings: the spec hash and match ids stay the same);
    under Ray, what it cannot run is refused here, before anything is written."""
    changes: dict[str, Any] = {}
    if executor is not None:
        changes["executor"] = executor
    if ray_address is not None:
        changes["ray_address"] = ray_address
    if changes:
        spec = spec.with_experiment(**changes)
    if spec.experiment.executor == "ray":
        from deepeval_games.app.execution.ray_executor import check_ray_run

        check_ray_run(spec)
    return spec


def _ray_connection(spec: ExperimentSpec) -> contextlib.AbstractContextManager[Any]:
    """Under Ray, the run's connection to it, opened before the run directory is (a cluster that cannot be reached
    leaves nothing behind) and kept for every round of the run; else nothing."""
    if spec.experiment.executor != "ray":
        return contextlib.nullcontext()
    from deepeval_games.app.execution.ray_executor import RayCluster

    return RayCluster(spec.experiment.ray_address)


async def run_experiment_async(
    spec: ExperimentSpec | Mapping[str, Any] | str | Path,
    out_dir: str | Path,
    *,
    progress: bool = False,
    wait_s: float = 0.0,
    workers: int | str | None = None,
    executor: str | None = None,
    ray_address: str | None = None,
) -> RunResult:
    """Play every match of ``spec`` that ``out_dir`` does not hold yet; see :func:`run_experiment`."""
    spec = _with_executor(with_pool(as_spec(spec)), executor, ray_address)
    check_workers(workers)
    with contextlib.suppress(Exception):  # best effort: a bad spec is check_run's to report, and clearly
        # worker processes get ready while the run is planned (a plan too large is refused uncounted)
        prestart(spec, workers, count_matches(spec, stop_above=spec.experiment.max_matches))
    plan = check_run(spec, out_dir)  # nothing is written before this passes
    with _ray_connection(spec), RunLock(_out_dir(out_dir), wait_s=wait_s) as run_lock:
        return await _run_locked(spec, out_dir, progress=progress, run_lock=run_lock, plan=plan, workers=workers)


async def _run_locked(
    spec: ExperimentSpec,
    out_dir: str | Path,
    *,
    progress: bool,
    run_lock: RunLock,
    plan: list[PlannedMatch],
    workers: int | str | None = None,
) -> RunResult:
    rule = _stopping_rule(spec)
    if rule is None:
        return await _run_once(spec, out_dir, progress=progress, run_lock=run_lock, plan=plan, workers=workers)
    if rule.rule == "adaptive":
        return await _run_adaptive(spec, out_dir, progress=progress, run_lock=run_lock, workers=workers)
    repeats, played, model_calls = spec.repeats, 0, 0
    sent: dict[str, int] = {}
    hits: dict[str, int] = {}
    first: list[PlannedMatch] | None = plan
    while True:
        result = await _run_once(
            spec.with_experiment(repeats=repeats),
            out_dir,
            progress=progress,
            run_lock=run_lock,
            plan=first,
            workers=workers,
        )
        first = None
        played, model_calls = played + result.played, model_calls + result.model_calls
        for total, now in ((sent, result.calls_by_model), (hits, result.cache_hits)):
            for model, count in now.items():
                total[model] = total.get(model, 0) + count
        result.stableness = _stableness(spec, result.records)
        stable = bool(result.stableness) and all(check.stable for check in result.stableness.values())
        if stable or repeats >= rule.max_repeats or result.failed:
            result.played, result.model_calls, result.repeats = played, model_calls, repeats
            result.calls_by_model, result.cache_hits = sent, hits
            result.skipped = result.planned - played - len(result.failed)
            return result
        repeats = min(repeats + (rule.step or spec.repeats), rule.max_repeats)
        log.info("results not yet stable; extending to %d repeats", repeats)


class _RecordingRunner(_Runner):
    """A runner that also hands every record it plays to ``sink`` (the adaptive stopping rule streams them)."""

    def __init__(
        self, spec: ExperimentSpec, store: Store, progress: bool, runtime: Any, sink: Callable[[MatchRecord], None]
    ) -> None:
        super().__init__(spec, store, progress, runtime)
        self.sink = sink

    def played(self, record: MatchRecord) -> None:
        self.sink(record)

    def played_json(self, match_id: str, text: str | bytes) -> None:
        data = json.loads(text)  # the fields the sink reads (the adaptive stopping rule: status and payoffs)
        fields = {key: data.get(key) for key in ("game", "seats", "returns", "status")}
        self.sink(MatchRecord.model_construct(match_id=match_id, turns=[], **fields))


async def _run_adaptive(
    spec: ExperimentSpec, out_dir: str | Path, *, progress: bool, run_lock: RunLock, workers: int | str | None = None
) -> RunResult:
    """``until_stable`` with ``rule = "adaptive"``: round ``r`` plays the seatings of repeat ``r`` that
    :class:`~analysis.stats.stopping.AdaptiveStopping` selects. Its decisions depend only on the payoffs of earlier
    rounds,
    so a resumed run replays the committed rounds (reading the store once) and continues with the same schedule."""
    from analysis.stats.active import ActiveRanking
    from analysis.stats.stopping import AdaptiveStopping, Seating
    from deepeval_games.app.spec.schedule import count_matches
    from deepeval_games.core import task
    from deepeval_games.core.registry.games import game_variant

    rule = _stopping_rule(spec)
    assert rule is not None and rule.rule == "adaptive"
    store = Store(
        out_dir, spec_hash=spec.content_hash(), spec_text=json.dumps(spec.source, sort_keys=True), run_lock=run_lock
    )
    runtime = None
    try:
        runtime = open_runtime(spec)
        committed = {r.match_id: r.returns for r in store.records() if r.status == "complete"}  # one pass, payoffs only
        selected_ids: set[str] = set()
        result = RunResult(run_dir=Path(out_dir), planned=0)
        round_plan = plan_matches(spec, only_repeat=0)
        runner = _RecordingRunner(spec, store, progress, runtime, sink=lambda record: stopping.add_record(record))
        for game_string in sorted({m.game for m in round_plan}):
            runner.game(game_string)
        bounds = {
            game_variant(name): (float(game.min_utility()), float(game.max_utility()))
            for name, game in runner.games.items()
        }
        # pairing = "active": pair-level selection (analysis.stats.active); otherwise whole blocks of unresolved players
        settings: dict[str, Any] = {
            "alpha": rule.alpha,
            "epsilon": rule.epsilon if rule.epsilon != _ACTIVE_EPSILON else _default_epsilon(bounds.values()),
            "initial_rounds": spec.repeats,
            "max_rounds": max(rule.max_repeats, spec.repeats),
            "budget": rule.budget_matches,
            "method": rule.sequence,
        }
        if spec.pairing == "active":
            stopping: ActiveRanking | AdaptiveStopping = ActiveRanking(
                bounds, top=rule.top, top_epsilon=rule.top_epsilon, **settings
            )
        else:
            stopping = AdaptiveStopping(bounds, **settings)
        limit = count_matches(spec, repeats=max(rule.max_repeats, spec.repeats))
        manifest = RunManifest(out_dir, spec, runner.games.values(), limit)
        manifest.start()
        status = "failed"
        pool = contextlib.AsyncExitStack()  # the worker processes, if any, live through every round
        try:
            await pool.enter_async_context(_executor(runner, workers, max(0, limit - len(committed))))
            repeat = 0
            while stopping.report.reason == "running":
                if repeat:
                    round_plan = plan_matches(spec, only_repeat=repeat)
                seatings = [
                    Seating(m.match_id, game_variant(m.game), m.seats, tuple(task.seat_roles(runner.game(m.game))))
                    for m in round_plan
                ]
                chosen = {s.match_id for s in stopping.begin_round(seatings)}
                if stopping.report.reason != "running":  # the budget does not allow this round
                    break
                todo = [m for m in round_plan if m.match_id in chosen]
                selected_ids |= chosen
                result.planned += len(todo)
                for planned in todo:
                    if planned.match_id in committed:
                        stopping.add(planned.match_id, committed[planned.match_id])
                missing = [m for m in todo if m.match_id not in committed]
                result.skipped += len(todo) - len(missing)
                failed_before = len(result.failed)
                await runner.run(missing, result)
                stopping.end_round(failed=len(result.failed) > failed_before)
                repeat += 1
            result.match_ids = frozenset(selected_ids & store.completed_ids())
            status = "finished"
        finally:
            await pool.aclose()
            _finish_manifest(manifest, status, runtime, result)
        if runtime is not None:
            result.model_calls = runtime.calls
            result.calls_by_model, result.cache_hits = dict(runtime.sent), dict(runtime.hits)
        result.repeats = stopping.report.rounds
        result.stopping = stopping.report
        target = Path(out_dir) / STOPPING_FILE  # for 'report': what stopped the run, written whole or not at all
        partial = target.with_suffix(".json.tmp")
        partial.write_text(json.dumps(stopping.report.to_dict(), indent=1), encoding="utf-8")
        partial.replace(target)
        log.info("adaptive stopping rule: %s after %d rounds", stopping.report.reason, stopping.report.rounds)
        return result
    finally:
        if runtime is not None:
            runtime.close()
        store.close()


def run_experiment(
    spec: ExperimentSpec | Mapping[str, Any] | str | Path,
    out_dir: str | Path,
    *,
    progress: bool = False,
    wait_s: float = 0.0,
    workers: int | str | None = None,
    executor: str | None = None,
    ray_address: str | None = None,
) -> RunResult:
    """Run an experiment into the run directory ``out_dir`` (created if needed) and return its results.

    ``spec`` is an :class:`ExperimentSpec`, a spec document as a mapping (validated by
    :func:`~deepeval_games.app.spec.spec.parse_spec`) or the path of a TOML spec file.

    Resumes: matches already committed there are skipped. Raises
    :class:`~deepeval_games.core.errors.ResumeMismatchError` if ``out_dir`` belongs to another spec, and
    :class:`~deepeval_games.app.storage.store.RunLockedError` if another process is writing it (after waiting up to
    ``wait_s`` seconds for it to finish). Every check of :func:`check_run` runs before anything is written.

    ``workers``: processes that play the matches (a number or ``"auto"``), overriding ``[experiment] workers``;
    see :mod:`deepeval_games.app.execution.executors`. The records and match ids do not depend on it.

    ``executor``: ``"local"`` or ``"ray"`` (actors on a Ray cluster, :mod:`deepeval_games.app.execution.ray_executor`),
    and
    ``ray_address``: the cluster to join; both override ``[experiment] executor`` / ``ray_address``. Under Ray,
    ``workers`` (a number) is the number of actors, by default one per CPU of the cluster.
    """
    return asyncio.run(
        run_experiment_async(
            spec,
            out_dir,
            progress=progress,
            wait_s=wait_s,
            workers=workers,
            executor=executor,
            ray_address=ray_address,
        )
    )
