"""A run without model players in worker processes: the driver plays matches too, beside one worker fewer
(``placement.worker_pool``), and handles its own matches' failures as the workers' ones."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from deepeval_games import InfrastructureError, parse_spec, run_experiment
from deepeval_games.app.execution.one_match import MatchPlayer
from deepeval_games.app.spec.schedule import PlannedMatch, plan_matches
from deepeval_games.app.storage.store import Store
from deepeval_games.core.records import MatchRecord
from tests.worker_io import slow_driver

PGG = "deepeval_public_goods(players=2,rounds=3,mode=1,alpha=1.6)"


def _spec(repeats: int, **experiment: Any) -> dict[str, Any]:
    """Three scripted players of two-seat PGG, every ordered pair: 6 matches a repeat."""
    players = [{"name": n, "bot": b} for n, b in (("a", "pgg_random"), ("b", "pgg_free_rider"), ("c", "pgg_random"))]
    return {"experiment": {"name": "d", "game": PGG, "repeats": repeats, "seed": 5, **experiment}, "players": players}


def _canonical(records: list[MatchRecord]) -> list[dict[str, Any]]:
    return sorted((r.canonical() for r in records), key=lambda d: d["match_id"])


def _count_here(monkeypatch: pytest.MonkeyPatch, fail: dict[str, BaseException] | None = None) -> list[str]:
    """Note the matches this process plays (the workers' are played in theirs); ``fail``: raise for these ids,
    once each."""
    here: list[str] = []
    original = MatchPlayer.play

    async def play(self: MatchPlayer, planned: PlannedMatch) -> MatchRecord:
        here.append(planned.match_id)
        if fail and planned.match_id in fail:
            raise fail.pop(planned.match_id)
        return await original(self, planned)

    monkeypatch.setattr(MatchPlayer, "play", play)
    return here


def test_the_driver_plays_beside_one_worker_fewer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    spec = _spec(4)  # 24 matches, 7 in flight in the worker at most
    one = run_experiment(spec, tmp_path / "one", workers=1)
    here, theirs = slow_driver(monkeypatch)  # from its second match, the driver waits for a worker's record
    caplog.set_level(logging.INFO, logger="deepeval_games")
    two = run_experiment(spec, tmp_path / "two", workers=2)
    assert "playing 24 matches in 2 processes: this one and 1 worker process(es)" in caplog.text
    assert two.played == 24 and not two.failed
    assert here and theirs and sorted(here + theirs) == sorted(m.match_id for m in plan_matches(parse_spec(spec)))
    assert _canonical(two.records) == _canonical(one.records)


def test_the_driver_plays_while_its_workers_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that takes long to start (a fork server still importing the tasks) costs the run no time: the driver
    plays the first matches meanwhile, and the worker its share once it is up."""
    import asyncio

    from deepeval_games.app.execution.process_executor import ProcessExecutor

    spec = _spec(20)  # 120 matches
    here, theirs = slow_driver(monkeypatch, after=30)  # from the 31st, the driver waits for a worker's record
    start = ProcessExecutor._start

    async def slow_start(self: ProcessExecutor) -> Any:
        while len(here) < 30:  # up only once the driver has played 30 matches
            await asyncio.sleep(0.001)
        return await start(self)

    monkeypatch.setattr(ProcessExecutor, "_start", slow_start)
    run = run_experiment(spec, tmp_path / "run", workers=2)
    plan = [m.match_id for m in plan_matches(parse_spec(spec))]
    assert run.played == 120 and not run.failed
    assert here[:30] == plan[:30] and theirs and sorted(here + theirs) == sorted(plan)


def test_with_one_match_at_a_time_the_driver_only_commits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = _count_here(monkeypatch)
    run = run_experiment(_spec(2, max_concurrency=1), tmp_path / "run", workers=2)
    assert run.played == 12 and here == []  # max_concurrency 1: the workers' one match is all there is room for


def test_the_driver_handles_its_own_matches_failures_as_the_workers_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _spec(4)
    plan = plan_matches(parse_spec(spec))
    first_here = plan[0].match_id  # the driver plays the first while its worker starts
    one = run_experiment(spec, tmp_path / "one", workers=1)

    here = _count_here(monkeypatch, {first_here: ValueError("a bug in a bot")})
    bug = run_experiment(spec, tmp_path / "bug", workers=2)
    assert here[0] == first_here
    assert [m for m, _ in bug.failed] == [first_here] and "a bug in a bot" in bug.failed[0][1]  # logged, not stored
    assert _canonical(bug.records) == [r for r in _canonical(one.records) if r["match_id"] != first_here]

    here = _count_here(monkeypatch, {first_here: InfrastructureError("connection reset")})
    infra = run_experiment(spec, tmp_path / "infra", workers=2)
    assert here[0] == first_here and not infra.failed  # aborted once, rescheduled, played again
    assert _canonical(infra.records) == _canonical(one.records)


def test_workers_that_cannot_start_stop_the_run_while_the_driver_plays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The driver played on while its workers failed to start: the run stops with the failure, keeps what the driver
    committed, and no failure is left unread (asyncio's "Task exception was never retrieved")."""
    import asyncio
    import gc

    from deepeval_games import FatalRunError
    from deepeval_games.app.execution.process_executor import ProcessExecutor

    async def cannot_start(self: ProcessExecutor) -> Any:
        await asyncio.sleep(0.01)
        raise FatalRunError("cannot start worker processes (injected)")

    monkeypatch.setattr(ProcessExecutor, "_start", cannot_start)
    caplog.set_level(logging.ERROR, logger="asyncio")
    with pytest.raises(FatalRunError, match="injected"):
        run_experiment(_spec(100), tmp_path / "run", workers=2)
    gc.collect()
    assert "never retrieved" not in caplog.text
    with Store(tmp_path / "run", read_only=True) as store:
        assert 0 < len(store.completed_ids()) < 600  # the driver's own matches, committed before the run stopped
