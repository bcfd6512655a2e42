"""PGG reference points: distances to the Nash profile and the social optimum, contribution curves, in both modes."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.tables.public_goods import print_tables, reference_points
from deepeval_games import parse_spec, run_experiment

POPULATION = {
    "free-rider": "pgg_free_rider",
    "full-contributor": "pgg_full_contributor",
    "conditional": "pgg_conditional_cooperator",
    "random": "pgg_random",
}


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list:
    spec = {
        "experiment": {
            "name": "reference",
            "games": [f"deepeval_public_goods(players=4,alpha=1.6,mode={mode})" for mode in (1, 2)],
            "repeats": 4,
        },
        "players": [{"name": name, "bot": bot} for name, bot in POPULATION.items()],
    }
    return run_experiment(parse_spec(spec), tmp_path_factory.mktemp("pgg") / "run").records


def test_free_rider_is_nash_full_contributor_is_optimal_conditional_between(records: list) -> None:
    points = reference_points(records)
    assert sorted(v.split("mode=")[1][0] for v in points) == ["1", "2"]  # both modes, never pooled
    for rows in points.values():
        by_name = {r.player: r for r in rows}
        assert by_name["free-rider"].nash_distance == 0.0 and by_name["free-rider"].optimum_distance == 1.0
        assert by_name["full-contributor"].optimum_distance == 0.0 and by_name["full-contributor"].nash_distance == 1
        conditional = by_name["conditional"]
        assert conditional.nash_distance is not None and conditional.optimum_distance is not None
        assert 0.0 < conditional.nash_distance < 1.0 and 0.0 < conditional.optimum_distance < 1.0
        assert conditional.curve[0] == 10.0 and conditional.curve[-1] < 10.0  # opens fully, then follows the mean
        assert all(r.rounds_played == 4 * 5 and len(r.curve) == 5 for r in rows)


def test_references_follow_alpha() -> None:
    from deepeval_games.core.records import MatchRecord, TurnRecord

    def match(alpha: float, action: int) -> MatchRecord:
        game = f"deepeval_public_goods(alpha={alpha},endowment=10,goal=most,mode=1,players=2,rounds=1)"
        turns = [TurnRecord(index=i, round=1, seat=i, action=action, action_string="") for i in range(2)]
        return MatchRecord(match_id=str(alpha), game=game, seats=["a", "b"], returns=[0, 0], turns=turns)

    high = reference_points([match(3.0, 10)])  # alpha > n: investing everything dominates
    assert high[next(iter(high))][0].nash_distance == 0.0
    tie = reference_points([match(2.0, 11)])  # alpha == n: no dominant move; a forfeit (E + 1) invests 0
    row = tie[next(iter(tie))][0]
    assert row.nash_distance is None and row.mean_investment == 0.0 and row.optimum_distance == 1.0


def test_curves_are_drawn_and_printed(records: list, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    figure = tmp_path / "curves.png"
    assert print_tables(records, plot=figure, players=["free-rider", "conditional"]) == 0
    out = capsys.readouterr().out
    assert out.count("PGG reference points") == 2 and "full-contributor" not in out
    assert figure.stat().st_size > 10_000
    assert print_tables([]) == 1


def test_tables_command_and_report_show_the_reference_points(
    records: list, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deepeval_games.app.commands.cli import main
    from deepeval_games.app.storage.store import Store
    from deepeval_games.core.records import MatchRecord

    run = tmp_path / "run"
    with Store(run, spec_hash="x", spec_text="{}") as store:
        for record in records:
            store.commit(MatchRecord.from_dict(record.to_dict()))
    assert main(["tables", "pgg", str(run), "--plot", str(tmp_path / "curves.svg")]) == 0
    assert "to Nash" in capsys.readouterr().out and (tmp_path / "curves.svg").exists()
    assert main(["report", str(run)]) == 0
    assert "PGG reference points" in capsys.readouterr().out
