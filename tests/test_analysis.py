"""Convergence, the stableness stopping rule, ratings, figures and the report command."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.stats.convergence import running_means, stableness
from analysis.stats.ratings import bradley_terry, elo
from deepeval_games import parse_spec, run_experiment
from deepeval_games.app.commands.cli import main
from deepeval_games.core.records import MatchRecord


def _record(seats, returns, repeat=0, game="g(x=1)", match_id="m"):
    return MatchRecord(match_id=match_id, game=game, seats=list(seats), returns=list(returns), turns=[], repeat=repeat)


def test_running_means_follow_repetition_order() -> None:
    records = [_record(["a", "b"], [4, 0], repeat=1), _record(["a", "b"], [2, 0], repeat=0)]
    assert running_means(records) == {"a": [2.0, 3.0], "b": [0.0, 0.0]}


PGG1 = "deepeval_public_goods(players=2,rounds=1)"  # payoffs in [0, 18]


def test_stableness_needs_narrow_intervals_and_a_steady_ranking() -> None:
    steady = [_record(["a", "b"], [10 + (r % 2), 5], repeat=r, game=PGG1, match_id=str(r)) for r in range(20)]
    check = stableness(steady, epsilon=2.5, batch=5)
    assert check.stable and check.matches == 20 and len(check.ranking_history) == 4
    assert not stableness(steady, epsilon=1.0).stable  # 20 payoffs on [0, 18]: no interval that narrow is valid
    swapping = [
        _record(["a", "b"], [10, 5] if r < 15 else [0, 18], repeat=r, game=PGG1, match_id=str(r)) for r in range(20)
    ]
    assert "ranking changed" in stableness(swapping, epsilon=100, batch=5).reason
    assert "fewer than" in stableness(steady[:6], epsilon=50, batch=5).reason
    unknown = stableness([_record(["a", "b"], [1, 2], repeat=r, match_id=str(r)) for r in range(20)], epsilon=50)
    assert not unknown.stable and "inf" in unknown.reason  # no payoff range ("g"): no interval, never stable


def test_bradley_terry_orders_by_strength_and_elo_agrees() -> None:
    records = []
    for i in range(10):
        records += [_record(["s", "m"], [1, -1]), _record(["m", "w"], [1, -1]), _record(["w", "s"], [-1, 1])]
        if i % 3 == 0:
            records.append(_record(["m", "s"], [1, -1]))
    ratings = bradley_terry(records)
    assert ratings["s"] > ratings["m"] > ratings["w"]
    assert abs(sum(ratings.values())) < 1e-6
    by_elo = elo(records)
    assert by_elo["s"] > by_elo["m"] > by_elo["w"]


def _pgg_spec(**experiment) -> dict:
    return {
        "experiment": {"name": "s", "game": "deepeval_public_goods(players=3,rounds=2)", "repeats": 4, **experiment},
        "players": [
            {"name": "free-rider", "bot": "pgg_free_rider"},
            {"name": "random", "bot": "pgg_random"},
            {"name": "full", "bot": "pgg_full_contributor"},
        ],
    }


def test_until_stable_adds_repeats_until_the_rule_holds(tmp_path: Path) -> None:
    spec = parse_spec(_pgg_spec(until_stable={"epsilon": 6.0, "max_repeats": 40, "rule": "recheck"}))
    result = run_experiment(spec, tmp_path / "run")
    [(variant, check)] = result.stableness.items()
    assert variant.startswith("deepeval_public_goods(") and "players=3" in variant
    assert check.stable and 4 < result.repeats <= 40
    assert result.played == len(result.records) == result.repeats
    narrow = parse_spec(_pgg_spec(until_stable={"epsilon": 0.01, "max_repeats": 12, "rule": "bootstrap"}))  # old name
    capped = run_experiment(narrow, tmp_path / "run2")
    assert capped.repeats == 12 and not next(iter(capped.stableness.values())).stable


@pytest.mark.parametrize(
    "rule, message",
    [({"max_repeats": 3}, "'epsilon'"), ({"epsilon": 1, "steps": 2}, "unknown key"), ({"epsilon": -1}, "> 0")],
)
def test_bad_stopping_rules_are_spec_errors(rule, message) -> None:
    from deepeval_games import SpecError

    with pytest.raises(SpecError, match=message):
        parse_spec(_pgg_spec(until_stable=rule))


def test_report_prints_ratings_stableness_and_writes_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _pgg_spec(game="deepeval_public_goods(players=2,rounds=2)", repeats=3)
    run_experiment(parse_spec(spec), tmp_path / "run")
    code = main(["report", str(tmp_path / "run"), "--epsilon", "50", "--plots", str(tmp_path / "plots")])
    out = capsys.readouterr().out
    assert code == 0 and "Bradley–Terry rating" in out and "Stableness (epsilon=50.0)" in out
    for name in ("deepeval_public_goods_payoffs.png", "deepeval_public_goods_convergence.png"):
        assert (tmp_path / "plots" / name).read_bytes()[:4] == b"\x89PNG"


def test_tables_pool_data_items_but_never_different_games(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deepeval_games.core.registry.games import game_variant

    assert game_variant("deepeval_code_review(max_rounds=3,task_id=12)") == "deepeval_code_review(max_rounds=3)"
    spec = {
        "experiment": {
            "name": "v",
            "game": "deepeval_idiom_solitaire(max_turns=8)",
            "pairing": "round_robin",
            "sweep": {"match": ["exact", "homophone"], "start": ["一马当先", "先声夺人"]},
        },
        "players": [{"name": "d", "bot": "idiom_dictionary"}, {"name": "s", "bot": "idiom_strategic"}],
    }
    run_experiment(parse_spec(spec), tmp_path / "run")
    assert main(["report", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert out.count("(2 data items pooled)") == 2 and "match=exact" in out and "match=homophone" in out
    assert main(["tables", "idiom", str(tmp_path / "run"), "--plot", str(tmp_path / "t.png")]) == 0
    out = capsys.readouterr().out
    assert out.count("Table 1.") == 2 and "(4 matches)" in out
    assert (tmp_path / "t-1.png").exists() and (tmp_path / "t-2.png").exists()


def test_turn_outcomes_of_shared_and_distinct_turns_equal_a_count_turn_by_turn() -> None:
    """Matches sharing their seat list and turns are counted by identity (each pair tallied once, times its matches),
    past 256 distinct pairs record by record: the counts and the players' order equal a plain count turn by turn."""
    import random
    from types import SimpleNamespace
    from typing import Any, cast

    from analysis.tables.outcomes import turn_outcomes

    draw = random.Random(7)
    outcomes = ["ok", "invalid", "reasked", "truncated"]

    def turns(seats: int) -> list[SimpleNamespace]:
        return [SimpleNamespace(seat=draw.randrange(-1, seats), outcome=draw.choice(outcomes)) for _ in range(6)]

    shared = [(["c", "a"], turns(2)), (["a", "b"], turns(2)), (["b", "c"], turns(2))]
    records: list[Any] = []
    for index in range(900):
        seats, played = shared[index % 3] if index % 2 else (["d", "e", "a"][: 2 + index % 2], turns(2 + index % 2))
        records.append(SimpleNamespace(seats=seats, turns=played))
    expected: dict[str, dict[str, int]] = {}
    for record in records:
        for name in record.seats:
            expected.setdefault(name, {})
        for turn in record.turns:
            if 0 <= turn.seat < len(record.seats):
                tally = expected[record.seats[turn.seat]]
                tally[turn.outcome] = tally.get(turn.outcome, 0) + 1
    counted = turn_outcomes(cast(list[MatchRecord], records))
    assert list(counted) == list(expected)
    assert {name: dict(tally.counts) for name, tally in counted.items()} == expected
