"""Code Review end to end with scripted players and judges: pass rates, Eq. 2 and Table 3, scorer failures."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from analysis import role_scores
from analysis.tables.code_review import (
    format_pass_rate_table,
    format_score_table,
    judge_pass_rate_correlation,
    plot_table3,
    table3,
)
from deepeval_games import SpecError, parse_spec, run_experiment
from deepeval_games.infra.sandbox import UNSAFE_ENV, SandboxUnavailable, TestReport, TestResult, bubblewrap_usable
from game_defs.code_review import scorer as code_review_scorer

needs_sandbox = pytest.mark.skipif(not bubblewrap_usable(), reason="bubblewrap cannot create sandboxes here")
TASKS = [11, 17, 42]


def _spec(players: list[dict[str, Any]], judge: dict[str, Any] | None, *, tasks=TASKS, rounds: int = 2, **exp):
    data: dict[str, Any] = {
        "experiment": {
            "name": "cr",
            "game": f"deepeval_code_review(max_rounds={rounds})",
            "sweep": {"task_id": tasks},
            "pairing": "round_robin",
            **exp,
        },
        "players": players,
    }
    if judge is not None:
        data["judge"] = judge
    return parse_spec(data)


def _by_pair(records) -> dict[tuple[str, str], list]:
    out: dict[tuple[str, str], list] = {}
    for record in records:
        out.setdefault(tuple(record.seats), []).append(record)
    return out


@needs_sandbox
def test_reference_vs_test_reviewer_passes_and_broken_fails(tmp_path: Path) -> None:
    players = [
        {"name": "reference", "bot": "cr_reference_programmer"},
        {"name": "tests", "bot": "cr_test_reviewer"},
        {"name": "broken", "bot": "cr_broken_programmer"},
    ]
    result = run_experiment(_spec(players, {"bot": "judge_pass_rate"}), tmp_path / "run")
    assert not result.failed and result.played == 3 * 6
    pairs = _by_pair(result.records)
    for record in pairs[("reference", "tests")]:
        assert record.metrics["pass_rate"] == 1.0 and record.metrics["sandbox_status"] == "passed"
        # "over" ends the dialogue from the follow-up review on, as in the paper: the first one is a review
        assert record.metrics["ended_by"] == "consensus" and record.metrics["rounds"] == 2
        assert record.returns == [10.0, 10.0]
    for record in pairs[("broken", "tests")]:
        assert record.metrics["pass_rate"] == 0.0 and record.metrics["sandbox_status"] == "failed"
        assert record.metrics["ended_by"] == "round_cap" and record.metrics["rounds"] == 2
        review = next(t.text for t in record.turns if t.seat == 1)
        assert review.startswith("Correctness: the code fails the test `assert")
        assert record.returns == [1.0, 10.0]  # the test reviewer was right both times
    for record in pairs[("broken", "reference")]:  # the reference bot reviews with a blind "over"
        assert record.metrics["pass_rate"] == 0.0 and record.returns == [1.0, 1.0]


@needs_sandbox
def test_judge_scores_land_in_eq2_and_table3(tmp_path: Path) -> None:
    players = [
        {"name": "reference", "bot": "cr_reference_programmer"},
        {"name": "over", "bot": "cr_over_reviewer"},
    ]
    judge = {"bot": "judge_fixed", "params": {"scores": [8, 3]}}
    result = run_experiment(_spec(players, judge, tasks=[11, 12], rounds=1), tmp_path / "run")
    assert result.played == 4
    for record in result.records:
        assert record.returns == [8.0, 3.0] and record.metrics["judge_scores"] == {"programmer": 8, "reviewer": 3}
        verdict = record.turns[-1]
        assert verdict.seat == -2 and verdict.action_string == "verdict: programmer 8, reviewer 3"
        assert '"Programmer": {"evaluation"' in verdict.text
    scores = {(s.player, s.role): s.mean for s in role_scores(result.records)}
    assert scores == {
        ("reference", "programmer"): 8.0,
        ("over", "programmer"): 8.0,
        ("reference", "reviewer"): 3.0,
        ("over", "reviewer"): 3.0,
    }
    table = table3(result.records)
    cell = table.cell("over", "reference")  # reviewer "over", programmer "reference"
    assert cell is not None and (cell.programmer_score, cell.reviewer_score, cell.matches) == (8.0, 3.0, 2)
    assert cell.pass_rate == 1.0 and table.cell("reference", "over").pass_rate == 0.0
    assert table.programmer_mean("reference") == 8.0 and table.reviewer_mean("over") == 3.0
    text = format_score_table(table)
    assert "mean s_R" in text and "mean s_P" in text and "8.00  3.00" in text
    assert "1.00" in format_pass_rate_table(table)
    corr = judge_pass_rate_correlation(result.records)
    assert corr.n == 4  # constant judge: the correlation is undefined, and says so
    assert plot_table3(table, result.records, tmp_path / "t3.png").stat().st_size > 1000


def test_a_judged_game_without_a_judge_is_refused_before_playing(tmp_path: Path) -> None:
    players = [{"name": "a", "bot": "cr_reference_programmer"}, {"name": "b", "bot": "cr_over_reviewer"}]
    with pytest.raises(SpecError, match=r"is judged: add a \[judge\]"):
        run_experiment(_spec(players, None, tasks=[11]), tmp_path / "run")


def test_scorer_reports_infrastructure_failures_never_as_failed_tests(monkeypatch, caplog) -> None:
    tests = ["assert f(1) == 1"]
    broken = TestReport("infra_error", (TestResult(tests[0], "not_run"),), "could not start the sandbox")
    monkeypatch.setattr(code_review_scorer, "run_tests", lambda *a, **k: broken)
    with caplog.at_level(logging.ERROR):
        metrics = code_review_scorer.score_program("def f(x): return x", tests)
    assert metrics["pass_rate"] is None and metrics["tests_passed"] is None
    assert metrics["sandbox_status"] == "infra_error" and "infrastructure" in caplog.text


def test_scorer_runs_nothing_without_a_sandbox(monkeypatch, caplog) -> None:
    calls: list[bool] = []

    def unavailable(*args: Any, unsafe: bool = False, **kwargs: Any) -> TestReport:
        calls.append(unsafe)
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed")

    monkeypatch.setattr(code_review_scorer, "run_tests", unavailable)
    monkeypatch.delenv(UNSAFE_ENV, raising=False)
    with caplog.at_level(logging.WARNING):
        metrics = code_review_scorer.score_program("import os", ["assert 1 == 1"])
    assert calls == [False]  # never asked to run unsandboxed without the explicit opt-in
    assert metrics["pass_rate"] is None and metrics["sandbox_status"] == "unavailable"
    assert "no sandbox here" in caplog.text and UNSAFE_ENV in caplog.text


@needs_sandbox
def test_scorer_measures_partial_pass_rates() -> None:
    tests = ["assert f(1) == 1", "assert f(2) == 4", "assert f(3) == 9"]
    metrics = code_review_scorer.score_program("def f(x):\n    return x if x < 3 else 0", tests)
    assert metrics["tests_passed"] == 1 and metrics["pass_rate"] == pytest.approx(1 / 3)
    assert metrics["sandbox_status"] == "failed"
