"""A run without model players in worker processes: the driver plays matches too, beside one worker fewer
(``runner._executor``), and handles its own matches' failures as the workers' ones."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from deepeval_games import InfrastructureError, parse_spec, run_experiment
from deepeval_games.match_play import MatchPlayer
from deepeval_games.records import MatchRecord
from deepeval_games.schedule import PlannedMatch, plan_matches

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
    here = _count_here(monkeypatch)
    caplog.set_level(logging.INFO, logger="deepeval_games")
    two = run_experiment(spec, tmp_path / "two", workers=2)
    assert "playing 24 matches in 2 processes: this one and 1 worker process(es)" in caplog.text
    assert two.played == 24 and not two.failed
    assert 1 <= len(here) < 24  # the worker had the first ones sent to it; the driver played while it was full
    assert _canonical(two.records) == _canonical(one.records)


def test_with_one_match_at_a_time_the_driver_only_commits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = _count_here(monkeypatch)
    run = run_experiment(_spec(2, max_concurrency=1), tmp_path / "run", workers=2)
    assert run.played == 12 and here == []  # max_concurrency 1: the workers' one match is all there is room for


def test_the_driver_handles_its_own_matches_failures_as_the_workers_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _spec(4)
    plan = plan_matches(parse_spec(spec))
    first_here = plan[7].match_id  # the worker is sent the first 7 (max_concurrency 8, one kept for here)
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
