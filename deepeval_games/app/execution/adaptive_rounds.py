"""The adaptive stopping rule's run: ``until_stable`` with ``rule = "adaptive"``, and ``pairing = "active"``
(:func:`run_adaptive`). Round ``r`` plays the seatings of repeat ``r`` that the rule selects
(:class:`~analysis.stats.stopping.AdaptiveStopping`: whole blocks of unresolved players;
:class:`~analysis.stats.active.ActiveRanking`: pairs), until the rule stops; what stopped it is written to the run
directory (:data:`STOPPING_FILE`)."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepeval_games.app.execution.one_match import open_runtime
from deepeval_games.app.execution.placement import worker_pool
from deepeval_games.app.execution.play_and_commit import MatchRunner
from deepeval_games.app.execution.run_result import RunResult, RunSetup, ended_status, finish_manifest, open_store
from deepeval_games.app.spec.manifest import RunManifest
from deepeval_games.app.spec.schedule import Plan, count_matches, plan_matches
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.app.spec.stopping import ACTIVE_DEFAULT_EPSILON, ACTIVE_MARGIN, StoppingRule
from deepeval_games.app.storage.store import Store
from deepeval_games.core.records import MatchRecord

if TYPE_CHECKING:
    from analysis.stats.active import ActiveRanking
    from analysis.stats.stopping import AdaptiveStopping, StoppingReport

__all__ = ["STOPPING_FILE", "run_adaptive"]

STOPPING_FILE = "stopping.json"
"""The adaptive stopping rule's report in a run directory (:meth:`analysis.stats.stopping.StoppingReport.to_dict`)."""

log = logging.getLogger(__name__)


def _default_epsilon(bounds: Iterable[tuple[float, float]]) -> float:
    return ACTIVE_MARGIN * max((high - low for low, high in bounds), default=1.0)


class _RecordingRunner(MatchRunner):
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
        self.sink(MatchRecord.model_validate({"match_id": match_id, "turns": [], **fields}))


async def run_adaptive(spec: ExperimentSpec, rule: StoppingRule, setup: RunSetup) -> RunResult:
    """``until_stable`` with ``rule = "adaptive"``: round ``r`` plays the seatings of repeat ``r`` that
    :class:`~analysis.stats.stopping.AdaptiveStopping` selects. Its decisions depend only on the payoffs of earlier
    rounds, so a resumed run replays the committed rounds (reading the store once) and continues with the same
    schedule. ``rule`` is the run's resolved rule (:func:`~deepeval_games.app.spec.stopping.stopping_rule`)."""
    assert rule.rule == "adaptive"
    store = open_store(spec, setup)
    runtime = None
    try:
        runtime = open_runtime(spec)
        committed = {r.match_id: r.returns for r in store.records() if r.status == "complete"}  # one pass, payoffs only
        result = RunResult(run_dir=Path(setup.out_dir), planned=0)
        if setup.admission is not None:
            result.quarantined = frozenset(setup.admission.quarantined)
        first_round = plan_matches(spec, only_repeat=0)
        runner = _RecordingRunner(spec, store, setup.progress, runtime, sink=lambda record: stopping.add_record(record))
        runner.on_commit = setup.on_commit
        runner.load_games(first_round)
        stopping = _stopping(spec, rule, runner.games)
        limit = count_matches(spec, repeats=max(rule.max_repeats, spec.repeats))
        manifest = RunManifest(setup.out_dir, spec, runner.games.values(), limit)
        manifest.start()
        status = "failed"
        pool = contextlib.AsyncExitStack()  # the worker processes, if any, live through every round
        try:
            await pool.enter_async_context(worker_pool(runner, setup.workers, max(0, limit - len(committed))))
            selected_ids = await _play_rounds(runner, stopping, first_round, committed, result)
            result.match_ids = frozenset(i for i in selected_ids if store.holds(i))
            status = "finished"
        except BaseException as exc:  # interrupted (Ctrl-C, SIGTERM) or failed: the manifest says which
            status = ended_status(exc)
            raise
        finally:
            await pool.aclose()
            finish_manifest(manifest, status, runtime, result)
        result.count_calls(runtime)
        result.repeats = stopping.report.rounds
        result.stopping = stopping.report
        _write_report(Path(setup.out_dir), stopping.report)
        log.info("adaptive stopping rule: %s after %d rounds", stopping.report.reason, stopping.report.rounds)
        return result
    finally:
        if runtime is not None:
            runtime.close()
        store.close()


def _stopping(spec: ExperimentSpec, rule: StoppingRule, games: Mapping[str, Any]) -> ActiveRanking | AdaptiveStopping:
    """The stopping rule's state for the run's ``games`` (by game string): their payoff bounds, ``rule``'s settings;
    for ``pairing = "active"`` pair-level selection (:mod:`analysis.stats.active`), otherwise whole blocks of
    unresolved players."""
    from analysis.stats.active import ActiveRanking
    from analysis.stats.stopping import AdaptiveStopping
    from deepeval_games.core.registry.games import game_variant

    bounds = {
        game_variant(name): (float(game.min_utility()), float(game.max_utility())) for name, game in games.items()
    }
    settings: dict[str, Any] = {
        "alpha": rule.alpha,
        "epsilon": rule.epsilon if rule.epsilon != ACTIVE_DEFAULT_EPSILON else _default_epsilon(bounds.values()),
        "initial_rounds": spec.repeats,
        "max_rounds": max(rule.max_repeats, spec.repeats),
        "budget": rule.budget_matches,
        "method": rule.sequence,
    }
    if spec.pairing == "active":
        return ActiveRanking(bounds, top=rule.top, top_epsilon=rule.top_epsilon, **settings)
    return AdaptiveStopping(bounds, **settings)


async def _play_rounds(
    runner: MatchRunner,
    stopping: ActiveRanking | AdaptiveStopping,
    first_round: Plan,
    committed: Mapping[str, Any],
    result: RunResult,
) -> set[str]:
    """Play rounds until ``stopping`` stops: each round the seatings of the next repeat that it selects, those
    ``committed`` already (their payoffs) replayed into it rather than played; returns the ids selected."""
    from analysis.stats.stopping import Seating
    from deepeval_games.core import task
    from deepeval_games.core.registry.games import game_variant

    selected_ids: set[str] = set()
    round_plan, repeat = first_round, 0
    while stopping.report.reason == "running":
        if repeat:
            round_plan = plan_matches(runner.spec, only_repeat=repeat)
        seatings = [
            Seating(m.match_id, game_variant(m.game), m.seats, tuple(task.seat_roles(runner.game(m.game))), m.game)
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
    return selected_ids


def _write_report(run_dir: Path, report: StoppingReport) -> None:
    """Write what stopped the run (:data:`STOPPING_FILE`, for ``report``), whole or not at all."""
    target = run_dir / STOPPING_FILE
    partial = target.with_suffix(".json.tmp")
    partial.write_text(json.dumps(report.to_dict(), indent=1), encoding="utf-8")
    partial.replace(target)
