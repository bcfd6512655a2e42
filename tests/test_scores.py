"""Eq. 1 and Eq. 2 on hand-made records."""

from __future__ import annotations

import math

import pytest

from analysis import format_scores, role_scores, symmetric_scores
from deepeval_games.core.records import MatchRecord


def _record(
    seats: list[str],
    returns: list[float],
    roles: list[str] | None = None,
    status: str = "complete",
    game: str = "g",
    match_id: str = "m",
    repeat: int = 0,
) -> MatchRecord:
    return MatchRecord(
        match_id=match_id,
        game=game,
        seats=seats,
        returns=returns,
        turns=[],
        roles=roles or [],
        status=status,
        repeat=repeat,
    )


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
    records = [
        _record(["a", "b"], [float(i % 3 - 1), float(1 - i % 3)], game="tic_tac_toe", match_id=f"m{i}", repeat=i)
        for i in range(12)
    ]
    forward = symmetric_scores(records)
    assert symmetric_scores(list(reversed(records))) == forward


def test_intervals_are_betting_intervals_on_the_game_range_and_unbounded_without_one() -> None:
    records = [
        _record(["a", "b"], [1.0, -1.0] if i % 4 else [-1.0, 1.0], game="tic_tac_toe", match_id=f"m{i}")
        for i in range(10)
    ]
    a = next(s for s in symmetric_scores(records) if s.player == "a")
    assert -1.0 <= a.ci_low < a.mean < a.ci_high <= 1.0  # the game's payoff range bounds the interval
    assert a.ci_high - a.ci_low > 0.8  # 10 matches: an honest interval is wide
    unknown = symmetric_scores([_record(["a", "b"], [1.0, 2.0])])  # game "g" is not a game: no payoff range
    assert all(math.isinf(s.ci_low) and math.isinf(s.ci_high) for s in unknown)
    text = format_scores(unknown)
    assert "n/a (no payoff range)" in text and "it assumes nothing of the scores but their range" in text


def test_each_interval_is_its_players_own_when_rows_are_computed_together() -> None:
    """Players with as many matches share one pass of the interval's bets; each interval is still the one
    ``mean_interval`` gives that player's payoffs alone, whatever the others scored (a and b play every match of a
    cycle of four, c three of them and d one: two players share a pass, two are alone)."""
    from analysis.stats.confseq import mean_interval

    seatings = [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "d"]]
    records = [
        _record(
            seatings[i % 4],
            [float(i % 3) - 1, float(i % 2), -float(i % 5 > 2)],
            game="tic_tac_toe",
            match_id=f"m{i:02}",
        )
        for i in range(24)
    ]
    rows: dict[str, list[float]] = {}
    for record in records:  # already in the order of repetition (repeat 0, one game, match ids in order)
        for name, payoff in zip(record.seats, record.returns, strict=True):
            rows.setdefault(name, []).append(payoff)
    scores = {s.player: s for s in symmetric_scores(records)}
    assert {name: s.n for name, s in scores.items()} == {"a": 24, "b": 24, "c": 18, "d": 6}
    for name, score in scores.items():
        alone = mean_interval(rows[name], -1.0, 1.0)
        assert (score.ci_low, score.ci_high, score.mean) == (alone.low, alone.high, alone.mean)
