"""Chooses the executor of a run and opens it around the run's matches (:func:`worker_pool`): this process, worker
processes (:class:`~deepeval_games.app.execution.process_executor.ProcessExecutor`, the driver playing too in a run
without model players) or actors on a Ray cluster (:mod:`~deepeval_games.app.execution.ray_executor`); and the probe
of ``workers = "auto"``, which times a run's first matches here to choose how many processes play the rest
(:func:`run_probe`)."""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Sequence

from tqdm import tqdm

from deepeval_games.app.execution.play_and_commit import MatchRunner
from deepeval_games.app.execution.process_executor import (
    AUTO_PROBE_S,
    ProcessExecutor,
    resolve_workers,
    spec_modules,
    workers_after_probe,
)
from deepeval_games.app.execution.run_result import RunResult
from deepeval_games.app.spec.plan import Plan, PlannedMatch, as_plan
from deepeval_games.app.spec.spec import ExperimentSpec

__all__ = ["run_probe", "worker_pool"]

log = logging.getLogger(__name__)


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
async def worker_pool(runner: MatchRunner, workers: int | str | None, matches: int) -> AsyncIterator[None]:
    """Play the runner's matches in worker processes while inside
    (:func:`~deepeval_games.app.execution.process_executor.resolve_workers` decides how many; one: in this process),
    or in
    actors on a Ray cluster under ``executor = "ray"``. Leaving it stops the workers and adds their call counters to
    the runner's model runtime."""
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
async def _ray_executor(runner: MatchRunner, workers: int | str | None, matches: int) -> AsyncIterator[None]:
    """Play the runner's matches in actors on a Ray cluster while inside
    (:mod:`deepeval_games.app.execution.ray_executor`): one actor per CPU of the cluster, or ``workers`` when it is a
    number; none when nothing is left to play."""
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


async def run_probe(
    runner: MatchRunner, todo: Sequence[PlannedMatch], limit: int, result: RunResult, bar: tqdm | None
) -> tuple[Plan, int]:
    """Play the first matches of ``todo`` in this process, timing them: up to ``limit`` matches, in chunks of 1, 2,
    4... until :data:`~deepeval_games.app.execution.process_executor.AUTO_PROBE_S` has passed; return the matches left
    and the worker processes that play them
    (:func:`~deepeval_games.app.execution.process_executor.workers_after_probe`). A match is
    timed by the CPU this process spent on it (what worker processes would share out), not by the wall clock: matches
    that wait (a bot's I/O, a sandboxed program's own process) already overlap in one event loop. The probed matches
    are drawn from all over ``todo`` (:func:`_spread`), so a sweep whose first game is cheap and whose last is costly
    is judged by both."""
    positions = _spread(min(limit, len(todo)), len(todo))
    sample = [todo[i] for i in positions]
    played, size, start, cpu = 0, 1, time.perf_counter(), time.process_time()
    while played < len(sample):
        chunk = sample[played : played + size]
        await runner.run(chunk, result, bar=bar)
        played += len(chunk)
        size *= 2
        if time.perf_counter() - start >= AUTO_PROBE_S:
            break
    seconds = (time.process_time() - cpu) / max(1, played)
    probed = set(positions[:played])
    rest = as_plan(todo).take(i for i in range(len(todo)) if i not in probed)
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
