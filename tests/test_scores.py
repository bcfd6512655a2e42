"""Eq. 1 and Eq. 2 on hand-made records."""

from __future__ import annotations

import pytest

from analysis import bootstrap_ci, format_scores, role_scores, symmetric_scores
from deepeval_games.core.records import MatchRecord


def _record(seats: list[str], returns: list[float], roles: list[str] | None = None, status: str = "complete"):
    return MatchRecord(match_id="m", game="g", seats=seats, returns=returns, turns=[], roles=roles or [], status=status)


def test_eq1_mean_payoff_per_player() -> None:
    records = [
        _record(["a", "b"], [10, 2]),
        _record(["b", "a"], [4, 20]),
        _record(["a", "b"], [99, 99], status="aborted"),  # never scored
    ]
    scores = {s.player: s for s in symmetric_scores(records)}
    assert scores["a"].mean == pytest.approx(15.0) and scores["a"].n == 2
    assert scores["b"].mean == pytest.approx(3.0) and scores["b"].std == pytest.approx(1.4142135, rel=1e-6)
    assert [s.player for s in symmetric_scores(records)] == ["a", "b"]


def test_eq2_mean_payoff_per_role() -> None:
    records = [
        _record(["x", "y"], [8, 6], ["programmer", "reviewer"]),
        _record(["y", "x"], [4, 2], ["programmer", "reviewer"]),
        _record(["x", "y"], [6, 6], ["programmer", "reviewer"]),
    ]
    table = {(s.player, s.role): s.mean for s in role_scores(records)}
    assert table == {("x", "programmer"): 7.0, ("x", "reviewer"): 2.0, ("y", "programmer"): 4.0, ("y", "reviewer"): 6.0}
    assert "programmer" in format_scores(role_scores(records))


def test_intervals_do_not_depend_on_record_order() -> None:
    records = [_record(["a", "b"], [float(i * i % 7), float(i)]) for i in range(12)]
    forward = symmetric_scores(records)
    assert symmetric_scores(list(reversed(records))) == forward


def test_bootstrap_interval_contains_the_mean_and_is_seeded() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    low, high = bootstrap_ci(values)
    assert low < 4.0 < high
    assert bootstrap_ci(values) == (low, high)
    assert bootstrap_ci([5.0]) == (5.0, 5.0)
