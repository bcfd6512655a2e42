"""The entry point of a run (:func:`run_experiment`): checks the spec, locks the run directory and plays the plan
under its stopping rule, concurrently, durably, resumable.

The default executor is asyncio in one process: up to ``max_concurrency`` matches at once (LLM bots
add per-model limits of their own). A run with a person at the table (a human seat or judge) plays its matches
one at a time, with no model-call cache and no progress bar; nothing times the person out, and Ctrl-C leaves the
match in progress uncommitted (the run resumes). Each finished match is committed to the store at once. A match
whose model infrastructure fails is logged and rescheduled (up to ``max_match_attempts``), never
scored; a fatal error (bad credentials, unknown model) stops the run after keeping what was committed;
any other error in one match is logged and the tournament goes on.

Nothing is written before the spec has passed every check: the plan's size, its games and data files, every
player and judge built once per game, model strings and API keys, a price for every model under a budget
(:func:`check_run`). Only then is the run
directory created and locked (:class:`~deepeval_games.app.storage.store.RunLock`, held by this process for the whole
run), so a spec with a typo leaves nothing behind and its corrected version runs into the same directory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from deepeval_games.app.execution.adaptive_rounds import run_adaptive
from deepeval_games.app.execution.play_and_commit import MatchRunner
from deepeval_games.app.execution.process_executor import check_workers, prestart
from deepeval_games.app.execution.repeats import run_once, run_until_stable
from deepeval_games.app.execution.run_result import RunResult, RunSetup
from deepeval_games.app.spec.extends import with_pool
from deepeval_games.app.spec.loading import as_spec
from deepeval_games.app.spec.manifest import check_budget_prices
from deepeval_games.app.spec.schedule import (
    Plan,
    PlanIndex,
    check_plan_size,
    check_round_budget,
    count_matches,
    plan_matches,
)
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.app.spec.stopping import stopping_rule
from deepeval_games.app.storage.admission import Admission
from deepeval_games.app.storage.store import RunLock
from deepeval_games.core.errors import DeepEvalError, SpecError

__all__ = ["check_run", "run_experiment", "run_experiment_async"]


def _out_dir(out_dir: str | Path) -> Path:
    """The run directory, refused when it is no directory: an empty name (never the current directory) or a
    file."""
    if not str(out_dir).strip():
        raise SpecError("the run directory (--out) must be named: an empty name would write into the current directory")
    path = Path(out_dir)
    if path.exists() and not path.is_dir():
        raise DeepEvalError(f"cannot use {path} as a run directory: it exists and is not a directory")
    return path


def check_run(spec: ExperimentSpec | Mapping[str, Any] | str | Path, out_dir: str | Path) -> Plan:
    """Every check that can fail a run, before anything is written; returns the plan.

    The run directory's name; the data folder; the plan's size (under ``until_stable``, at its ``max_repeats``)
    against ``[experiment] max_matches``; every game string with its sweep values (files named by game parameters,
    data files, parameters within the bounds the task declares, a match's estimated length and memory); every player
    and the judge, built once per game (bots and their parameters, model strings, settings, judge rules); API keys of
    model players and the files of local models; the model-call cache's path; under a budget, a price for every
    model (:func:`~deepeval_games.app.spec.manifest.check_budget_prices`).

    Raises:
        DeepEvalError: what is wrong (a :class:`SpecError`, :class:`UnknownGameError`, :class:`FatalRunError`...).
    """
    spec = with_pool(as_spec(spec))
    _out_dir(out_dir)
    data_dir = spec.experiment.data_dir
    if data_dir is not None and not Path(data_dir).is_dir():
        raise SpecError(f"[experiment] data_dir: {data_dir!r} is not a folder")
    rule = stopping_rule(spec)
    if rule is not None:
        check_plan_size(spec, repeats=max(spec.repeats, rule.max_repeats))
        check_round_budget(spec, rule)
    plan = plan_matches(spec)
    MatchRunner(spec, None, False, None).validate(plan)
    check_budget_prices(spec)  # a budget must be able to count every model's calls
    return plan


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
    on_commit: Callable[[str | bytes], None] | None = None,
) -> RunResult:
    """Play every match of ``spec`` that ``out_dir`` does not hold yet; see :func:`run_experiment`."""
    spec = _with_executor(with_pool(as_spec(spec)), executor, ray_address)
    check_workers(workers)
    with contextlib.suppress(Exception):  # best effort: a bad spec is check_run's to report, and clearly
        # worker processes get ready while the run is planned (a plan too large is refused uncounted)
        prestart(spec, workers, count_matches(spec, stop_above=spec.experiment.max_matches))
    plan = check_run(spec, out_dir)  # nothing is written before this passes
    with _ray_connection(spec), RunLock(_out_dir(out_dir), wait_s=wait_s) as run_lock:
        setup = RunSetup(out_dir, run_lock, progress, workers, on_commit, Admission(PlanIndex(spec, plan)))
        return await _run_locked(spec, setup, plan)


async def _run_locked(spec: ExperimentSpec, setup: RunSetup, plan: Plan) -> RunResult:
    """Play the run (its directory locked): its repeats once, or as its stopping rule extends them."""
    rule = stopping_rule(spec)
    if rule is None:
        return await run_once(spec, setup, plan)
    if rule.rule == "adaptive":
        return await run_adaptive(spec, rule, setup)
    return await run_until_stable(spec, rule, setup, plan)


def run_experiment(
    spec: ExperimentSpec | Mapping[str, Any] | str | Path,
    out_dir: str | Path,
    *,
    progress: bool = False,
    wait_s: float = 0.0,
    workers: int | str | None = None,
    executor: str | None = None,
    ray_address: str | None = None,
    on_commit: Callable[[str | bytes], None] | None = None,
) -> RunResult:
    """Run an experiment into the run directory ``out_dir`` (created if needed) and return its results.

    ``spec`` is an :class:`ExperimentSpec`, a spec document as a mapping (validated by
    :func:`~deepeval_games.app.spec.spec.parse_spec`) or the path of a TOML spec file.

    Resumes: matches already committed there are skipped. Raises
    :class:`~deepeval_games.core.errors.ResumeMismatchError` if ``out_dir`` belongs to another spec, and
    :class:`~deepeval_games.app.storage.store.RunLockedError` if another process is writing it (after waiting up to
    ``wait_s`` seconds for it to finish). Every check of :func:`check_run` runs before anything is written.

    ``workers``: processes that play the matches (a number or ``"auto"``), overriding ``[experiment] workers``;
    see :mod:`deepeval_games.app.execution.process_executor`. The records and match ids do not depend on it.

    ``executor``: ``"local"`` or ``"ray"`` (actors on a Ray cluster, :mod:`deepeval_games.app.execution.ray_executor`),
    and
    ``ray_address``: the cluster to join; both override ``[experiment] executor`` / ``ray_address``. Under Ray,
    ``workers`` (a number) is the number of actors, by default one per CPU of the cluster.

    ``on_commit``: handed the JSON line of every record the run commits, once it is stored, in commit order (what
    :meth:`MatchRecord.from_json <deepeval_games.core.records.MatchRecord.from_json>` reads back); it must not
    raise. The command's summary is fed this way while the run plays.
    """
    from llm_bots import inline_setup  # stdlib only: its loop sets up OpenAI-compatible calls on its own thread

    return inline_setup.run(
        run_experiment_async(
            spec,
            out_dir,
            progress=progress,
            wait_s=wait_s,
            workers=workers,
            executor=executor,
            ray_address=ray_address,
            on_commit=on_commit,
        )
    )
