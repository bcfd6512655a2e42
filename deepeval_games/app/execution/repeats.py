"""A run of a fixed number of repeats (:func:`run_once`), and under ``until_stable`` (not the adaptive rule) the
same run extended by more repeats until every task's results are stable (:func:`run_until_stable`)."""

from __future__ import annotations

import logging
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from deepeval_games.app.execution.one_match import open_runtime
from deepeval_games.app.execution.placement import run_probe, worker_pool
from deepeval_games.app.execution.play_and_commit import MatchRunner
from deepeval_games.app.execution.process_executor import probe_matches
from deepeval_games.app.execution.run_result import RunResult, RunSetup, ended_status, finish_manifest, open_store
from deepeval_games.app.spec.manifest import RunManifest
from deepeval_games.app.spec.schedule import Plan, plan_matches
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.app.spec.stopping import StoppingRule
from deepeval_games.app.storage.store import Store
from deepeval_games.core.records import MatchRecord

__all__ = ["run_once", "run_until_stable"]

log = logging.getLogger(__name__)


async def run_once(spec: ExperimentSpec, setup: RunSetup, plan: Plan | None) -> RunResult:
    """Play the matches of ``plan`` (None: ``spec``'s plan, checked here) that the store does not hold yet, and commit
    them; the run's manifest says how it ended."""
    if plan is None:  # a later round of until_stable: the first was checked in full
        plan = plan_matches(spec)
        MatchRunner(spec, None, False, None).validate(plan)
    store = open_store(spec, setup)
    runtime = None
    try:
        runtime = open_runtime(spec)
        done = store.completed_ids()
        todo = plan.without(done)
        result = RunResult(
            run_dir=Path(setup.out_dir), planned=len(plan), skipped=len(plan) - len(todo), repeats=spec.repeats
        )
        if setup.admission is not None:
            result.quarantined = frozenset(setup.admission.quarantined)
        runner = MatchRunner(spec, store, setup.progress, runtime)
        runner.on_commit = setup.on_commit
        runner.load_games(plan)
        manifest = RunManifest(setup.out_dir, spec, runner.games.values(), len(plan))
        manifest.start()
        status = "failed"
        try:
            await _play(runner, todo, setup.workers, result)
            result.match_ids = _run_ids(plan, store)
            status = "finished"
        except BaseException as exc:  # interrupted (Ctrl-C, SIGTERM) or failed: the manifest says which
            status = ended_status(exc)
            raise
        finally:
            finish_manifest(manifest, status, runtime, result)
        result.count_calls(runtime)
        return result
    finally:
        if runtime is not None:
            runtime.close()
        store.close()


def _run_ids(plan: Plan, store: Store) -> AbstractSet[str]:
    """The ids of ``plan``'s matches that ``store`` holds: the store's own set when it holds no other match (no second
    set of the run's ids), else a new one."""
    held = sum(1 for match_id in plan.match_ids() if store.holds(match_id))
    ids = store.held_ids()
    return ids if held == len(ids) else frozenset(i for i in plan.match_ids() if store.holds(i))


async def _play(runner: MatchRunner, todo: Plan, workers: int | str | None, result: RunResult) -> None:
    """Play and commit ``todo``: under ``workers = "auto"``, first the probe's matches here
    (:func:`~deepeval_games.app.execution.placement.run_probe`), then the rest where
    :func:`~deepeval_games.app.execution.placement.worker_pool` plays them, under one progress bar."""
    probe = probe_matches(runner.spec, workers, len(todo))
    bar = runner.progress_bar(len(todo)) if probe else None  # one bar over the probe and the rest
    try:
        count: int | str | None = workers
        if probe:
            todo, count = await run_probe(runner, todo, probe, result, bar)
        async with worker_pool(runner, count, len(todo)):
            await runner.run(todo, result, bar=bar)
    finally:
        if bar is not None:
            bar.close()


async def run_until_stable(spec: ExperimentSpec, rule: StoppingRule, setup: RunSetup, plan: Plan) -> RunResult:
    """``until_stable`` (``rule``, not the adaptive rule): play ``spec``'s repeats (``plan``), then more repeats, a
    ``step`` at a time, until every task's results are stable, ``max_repeats`` is reached or a match failed; the
    result counts every round."""
    repeats, played, model_calls = spec.repeats, 0, 0
    sent: dict[str, int] = {}
    hits: dict[str, int] = {}
    first: Plan | None = plan
    while True:
        result = await run_once(spec.with_experiment(repeats=repeats), setup, first)
        first = None
        played, model_calls = played + result.played, model_calls + result.model_calls
        for total, now in ((sent, result.calls_by_model), (hits, result.cache_hits)):
            for model, count in now.items():
                total[model] = total.get(model, 0) + count
        result.stableness = _stableness(rule, result.records)
        stable = bool(result.stableness) and all(check.stable for check in result.stableness.values())
        if stable or repeats >= rule.max_repeats or result.failed:
            result.played, result.model_calls, result.repeats = played, model_calls, repeats
            result.calls_by_model, result.cache_hits = sent, hits
            result.skipped = result.planned - played - len(result.failed)
            return result
        repeats = min(repeats + (rule.step or spec.repeats), rule.max_repeats)
        log.info("results not yet stable; extending to %d repeats", repeats)


def _stableness(rule: StoppingRule, records: list[MatchRecord]) -> dict[str, Any]:
    from analysis.stats.convergence import stableness
    from deepeval_games.core.registry.games import game_variant

    tasks = sorted({game_variant(r.game) for r in records})
    return {
        task: stableness(records, epsilon=rule.epsilon, batch=rule.batch, window=rule.window, task=task)
        for task in tasks
    }
