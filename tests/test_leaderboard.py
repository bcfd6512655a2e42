"""Leaderboards that grow (issue 34): merging run directories by player identity."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path
from typing import Any

import pytest

from deepeval_games.app.commands.cli import main
from deepeval_games.app.execution.run import run_experiment
from deepeval_games.app.execution.run_result import stored_source
from deepeval_games.app.reports.leaderboard import build_leaderboard, format_leaderboard
from deepeval_games.app.reports.report import load_report, text_report
from deepeval_games.app.spec.schedule import plan_matches
from deepeval_games.app.spec.spec import ExperimentSpec, parse_spec
from deepeval_games.app.storage.store import Store
from deepeval_games.core.errors import SpecError

PLAYERS: dict[str, dict[str, Any]] = {
    "r1": {"name": "r1", "bot": "random"},
    "r2": {"name": "r2", "bot": "random"},
    "m5": {"name": "m5", "bot": "mcts", "params": {"simulations": 5}},
    "m50": {"name": "m50", "bot": "mcts", "params": {"simulations": 50}},
    "m20": {"name": "m20", "bot": "mcts", "params": {"simulations": 20}},
}


def _spec(*names: str, repeats: int = 2, **players: dict[str, Any]) -> ExperimentSpec:
    entries = [PLAYERS[n] for n in names] + list(players.values())
    experiment = {"name": "lb", "game": "tic_tac_toe", "repeats": repeats, "seed": 3, "pairing": "round_robin"}
    return parse_spec({"experiment": experiment, "players": entries})


def _run(spec: ExperimentSpec, path: Path) -> Path:
    run_experiment(spec, path, workers=1)
    return path


def _ids(path: Path) -> set[str]:
    with Store(path, read_only=True) as store:
        return {r.match_id for r in store.records()}


def test_two_directories_that_share_players_rate_as_one_run_holding_their_matches(tmp_path: Path) -> None:
    a = _run(_spec("r1", "m5", "m50"), tmp_path / "a")
    b = _run(_spec("m5", "m50", "r2"), tmp_path / "b")
    shared = _ids(a) & _ids(b)
    assert shared  # m5 against m50: the same match ids in both
    # one run directory holding every match of both, once
    whole = _spec("r1", "m5", "m50", "r2")
    text = json.dumps(stored_source(whole))  # as a run records its spec: with its interval version
    with Store(tmp_path / "one", spec_hash=whole.content_hash(), spec_text=text) as one:
        for path in (a, b):
            with Store(path, read_only=True) as store:
                one.commit_many(store.records())
    merged = build_leaderboard([a, b])
    single = build_leaderboard([tmp_path / "one"])
    assert merged.duplicates == len(shared) and single.duplicates == 0
    assert merged.matches == single.matches == len(_ids(a) | _ids(b))
    assert merged.rows == single.rows
    assert {r.player for r in merged.rows} == {"r1", "r2", "m5", "m50"}
    counts = {r.player: r.matches for r in merged.rows}
    assert counts == {"r1": 8, "r2": 8, "m5": 12, "m50": 12}  # shared matches counted once
    assert all(r.rating is not None for r in merged.rows)  # a rating; the valid intervals are the mean payoff's

    # the report of the same two directories counts each match once too: the players of both, whose matches
    # against each other are in both, have the leaderboard's counts and means there
    report = text_report(load_report([a, b]))
    table = report.split("(the paper's Eq. 1)\n", 1)[1].split("\n(", 1)[0].splitlines()[2:]
    means = {line.split()[0]: (int(line.split()[1]), float(line.split()[2])) for line in table}
    for row in merged.rows:
        if row.player in ("m5", "m50"):
            assert means[row.player] == (row.matches, round(row.mean, 2))
    assert f"{len(shared)} copies of matches already read from an earlier run directory were left out" in report
    exported = tmp_path / "both.csv"
    assert main(["export", str(a), str(b), "--format", "csv", "--out", str(exported)]) == 0
    with open(exported, encoding="utf-8", newline="") as handle:
        assert sorted(row["match_id"] for row in csv.DictReader(handle)) == sorted(_ids(a) | _ids(b))

    # with the one seating neither holds, the directories are a full round robin of the four players
    c = _run(_spec("r1", "r2"), tmp_path / "c")
    full = _run(_spec("r1", "m5", "m50", "r2"), tmp_path / "full")
    three = build_leaderboard([a, b, c])
    assert three.rows == build_leaderboard([full]).rows
    assert three.rows != merged.rows


def test_players_differing_only_in_settings_are_rows_of_their_own(tmp_path: Path) -> None:
    fast = _run(_spec("r1", m=dict(PLAYERS["m5"], name="m")), tmp_path / "fast")
    slow = _run(_spec("r1", m=dict(PLAYERS["m50"], name="m")), tmp_path / "slow")
    board = build_leaderboard([fast, slow], task="tic_tac_toe", role="player")
    assert board.duplicates == 0  # another identity, other match ids
    rows = {r.player: r for r in board.rows}
    assert set(rows) == {"r1", "m [simulations=5]", "m [simulations=50]"}
    assert rows["m [simulations=5]"].differs == "simulations=5"
    assert rows["r1"].differs == "" and rows["r1"].matches == 8
    assert rows["m [simulations=50]"].matches == 4


def test_cli_writes_csv_and_json_and_filters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _run(_spec("r1", "m5"), tmp_path / "a")
    b = _run(_spec("m5", "m50"), tmp_path / "b")
    out = tmp_path / "board.csv"
    assert main(["leaderboard", str(a), str(b), "--format", "csv", "--out", str(out)]) == 0
    assert "wrote 3 rows" in capsys.readouterr().out
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert {r["player"]: int(r["matches"]) for r in rows} == {"r1": 4, "m5": 8, "m50": 4}
    assert main(["leaderboard", str(a), str(b), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["matches"] == 8 and data["runs"] == 2 and len(data["rows"]) == 3
    assert main(["leaderboard", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "tic_tac_toe" in text and "Bradley-Terry" in text
    assert main(["leaderboard", str(a), "--task", "kuhn_poker"]) == 2
    assert format_leaderboard(build_leaderboard([a], task="tic_tac_toe")).startswith("Leaderboard: 4 matches")


def _extending(pool: Path, *names: str, **changes: Any) -> ExperimentSpec:
    experiment = {"name": "lb", "game": "tic_tac_toe", "repeats": 2, "seed": 3, "pairing": "round_robin"}
    return parse_spec(
        {"experiment": {**experiment, "extends": [str(pool)], **changes}, "players": [PLAYERS[n] for n in names]}
    )


def test_extending_a_finished_study_plays_exactly_the_new_players_seatings(tmp_path: Path) -> None:
    study = _run(_spec("r1", "r2", "m5", "m50"), tmp_path / "study")
    extension = _extending(study, "m20")
    planned = plan_matches(extension)
    full = [m for m in plan_matches(_spec("r1", "r2", "m5", "m50", "m20")) if "m20" in m.seats]
    assert [(m.match_id, m.seats, m.seed, m.repeat) for m in planned] == [
        (m.match_id, m.seats, m.seed, m.repeat) for m in full
    ]
    assert len(planned) == 4 * 2 * 2  # every pool player, both seat orders, both repeats
    result = run_experiment(extension, tmp_path / "new", workers=1)
    assert result.played == len(planned) and _ids(tmp_path / "new") == {m.match_id for m in full}
    # the merged study is the five-player round robin, match for match
    whole = _run(_spec("r1", "r2", "m5", "m50", "m20"), tmp_path / "whole")
    assert _ids(study) | _ids(tmp_path / "new") == _ids(whole)
    assert build_leaderboard([study, tmp_path / "new"]).rows == build_leaderboard([whole]).rows
    # the extended run is a pool of its own; resuming it plays nothing
    assert run_experiment(extension, tmp_path / "new", workers=1).played == 0
    sixth = _extending(tmp_path / "new", "m5")  # m5 is the pool's: nothing new to play
    assert plan_matches(sixth) == []


def test_an_extension_keeps_the_pools_settings(tmp_path: Path) -> None:
    study = _run(_spec("r1", "r2", repeats=1), tmp_path / "study")
    with pytest.raises(SpecError, match="seed: 3 there, 4 here"):
        plan_matches(_extending(study, "m5", seed=4))
    clash = parse_spec(
        {
            "experiment": {"game": "tic_tac_toe", "seed": 3, "pairing": "round_robin", "extends": [str(study)]},
            "players": [{"name": "r1", "bot": "mcts"}],
        }
    )
    with pytest.raises(SpecError, match="another player of that name"):
        plan_matches(clash)
    with pytest.raises(SpecError, match="no results"):
        plan_matches(_extending(tmp_path / "missing", "m5"))


class _Killed(BaseException):
    """Stands for the process being killed between two commits."""


ACTIVE_GAME = "deepeval_public_goods(players=2,alpha=1.2,rounds=1)"
POPULATION = [
    {"name": "free-rider", "bot": "pgg_free_rider"},
    {"name": "random", "bot": "pgg_random"},
    {"name": "full", "bot": "pgg_full_contributor"},
    {"name": "mostly-full", "bot": "pgg_full_contributor", "params": {"noise": 0.4}},
]


def _active(**rule: Any) -> ExperimentSpec:
    experiment: dict[str, Any] = {"name": "act", "game": ACTIVE_GAME, "repeats": 1, "seed": 5, "pairing": "active"}
    if rule:
        experiment["until_stable"] = {"rule": "adaptive", **rule}
    return parse_spec({"experiment": experiment, "players": POPULATION})


def test_a_killed_active_run_resumes_to_the_same_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _active(epsilon=0.5, max_repeats=300)
    whole = run_experiment(spec, tmp_path / "whole", workers=1)
    assert whole.stopping is not None and whole.stopping.rounds > 1
    by_repeat: dict[int, int] = {}
    for record in whole.records:
        by_repeat[record.repeat] = by_repeat.get(record.repeat, 0) + 1
    assert by_repeat[0] == 12 and min(by_repeat.values()) < 12  # later rounds leave resolved players out

    from deepeval_games.app.execution import adaptive_rounds

    original = adaptive_rounds._RecordingRunner.played
    rng = random.Random(7)
    kills = 0
    while True:
        left = rng.randint(1, 60)  # commits until the process is killed

        def played(self: Any, record: Any, _left: list[int] = [left]) -> None:  # noqa: B006
            original(self, record)
            _left[0] -= 1
            if _left[0] == 0:
                raise _Killed

        monkeypatch.setattr(adaptive_rounds._RecordingRunner, "played", played)
        try:
            run_experiment(spec, tmp_path / "killed", workers=1)
            break
        except _Killed:
            kills += 1
    assert kills >= 3

    def content(path: Path) -> dict[str, tuple[Any, ...]]:
        with Store(path, read_only=True) as store:
            return {r.match_id: (r.seats, r.returns, r.repeat) for r in store.records()}

    assert content(tmp_path / "killed") == content(tmp_path / "whole")


def test_active_pairing_checks_its_rule_and_defaults() -> None:
    with pytest.raises(SpecError, match='must be "adaptive"'):
        parse_spec(
            {
                "experiment": {
                    "game": "tic_tac_toe",
                    "pairing": "active",
                    "until_stable": {"epsilon": 0.1, "rule": "recheck"},
                },
                "players": [PLAYERS["r1"], PLAYERS["r2"]],
            }
        )
    with pytest.raises(SpecError, match="top and top_epsilon are used with"):
        parse_spec(
            {
                "experiment": {"game": "tic_tac_toe", "until_stable": {"epsilon": 0.1, "top": 4}},
                "players": [PLAYERS["r1"], PLAYERS["r2"]],
            }
        )
    assert _active(epsilon=0.5, top=2, top_epsilon=0.2).experiment.until_stable is not None
    plan = plan_matches(_active())
    assert len(plan) == 12  # the first round: every seating, both seat orders


def test_bench_active_measures_what_it_says() -> None:
    import numpy as np

    from bench.bench_active import accurate, active, kendall_tau, round_robin

    truth = list(range(6))
    assert kendall_tau(truth, truth) == 1.0 and kendall_tau(truth[::-1], truth) == -1.0
    assert accurate([1, 0, 2, 3, 4, 5, 6, 7], list(range(8))) and not accurate([4, 1, 2, 3, 0, 5], truth)
    strengths = np.array([600.0, 300.0, 0.0])
    run = active(np.random.default_rng(0), strengths, epsilon=0.2, max_rounds=40)
    assert run.order == [0, 1, 2] and not run.wrong and run.matches % 2 == 0
    assert round_robin(np.random.default_rng(0), strengths, 3)[1] == 3 * 3 * 2


def test_active_top_boundary_reaches_the_rule(tmp_path: Path) -> None:
    players = [
        {"name": "random-1", "bot": "pgg_random"},
        {"name": "random-2", "bot": "pgg_random"},
        {"name": "full", "bot": "pgg_full_contributor"},
    ]

    def stopped(name: str, **top: Any) -> Any:
        rule = {"epsilon": 10.0, "max_repeats": 300, **top}
        experiment = {"name": "t", "game": ACTIVE_GAME, "seed": 5, "pairing": "active", "until_stable": rule}
        result = run_experiment(parse_spec({"experiment": experiment, "players": players}), tmp_path / name, workers=1)
        assert result.stopping is not None and result.stopping.reason == "resolved"
        return result.stopping

    plain, top = stopped("plain"), stopped("top", top=1, top_epsilon=4.0)
    assert top.matches > plain.matches  # the two random players, tied at the top, are resolved to the finer width
    assert {top.pairs[0].better[2], top.pairs[0].worse[2]} == {"random-1", "random-2"}


def test_a_match_in_two_directories_is_its_first_complete_record(tmp_path: Path) -> None:
    """A match id held by two directories is one record wherever it is read: the first complete copy in the order
    the directories are given (an aborted copy only where no complete one exists)."""
    import sqlite3

    from deepeval_games.app.reports.runs import open_runs, stream_records

    a = _run(_spec("r1", "m5", repeats=1), tmp_path / "a")
    b = _run(_spec("r1", "m5", repeats=1), tmp_path / "b")
    with Store(a, read_only=True) as store:
        first = next(iter(store.records()))
    aborted = first.model_copy(update={"status": "aborted", "error": "a timeout"})
    db = sqlite3.connect(a / "results.sqlite")
    with db:
        db.execute("UPDATE matches SET record = ? WHERE match_id = ?", (aborted.to_json(), first.match_id))
    db.close()
    left_out: list[str] = []
    for order in ([a, b], [b, a]):
        left_out.clear()
        records = [
            record
            for _, record in stream_records(open_runs(order), on_duplicate=lambda run, r: left_out.append(r.match_id))
        ]
        assert len(records) == len(_ids(a)) and len({r.match_id for r in records}) == len(records)
        assert {r.status for r in records if r.match_id == first.match_id} == {"complete"}
        assert sorted(left_out) == sorted(_ids(a))  # every match of one directory is the other's copy
    assert build_leaderboard([a, b]).matches == len(_ids(a))


def test_a_copy_passed_over_for_one_admission_refuses_is_read_in_its_place(tmp_path: Path) -> None:
    import sqlite3

    from deepeval_games.app.reports.runs import open_runs, stream_records

    a = _run(_spec("r1", "m5", repeats=1), tmp_path / "a")
    b = _run(_spec("r1", "m5", repeats=1), tmp_path / "b")
    with Store(a, read_only=True) as store:
        first = next(iter(store.records()))
    forged = first.model_copy(update={"returns": [100.0, -100.0]})  # tic-tac-toe pays -1, 0, 1: refused
    for run, record in ((a, first.model_copy(update={"status": "aborted", "error": "a timeout"})), (b, forged)):
        db = sqlite3.connect(run / "results.sqlite")
        with db:
            db.execute("UPDATE matches SET record = ? WHERE match_id = ?", (record.to_json(), first.match_id))
        db.close()
    records = [record for _, record in stream_records(open_runs([a, b]))]
    assert sorted(r.match_id for r in records) == sorted(_ids(a))  # none lost: the aborted copy is read
    assert {r.status for r in records if r.match_id == first.match_id} == {"aborted"}


def test_the_report_names_players_per_game_as_the_leaderboard_does(tmp_path: Path) -> None:
    """A search bot records a different search per game (MCTS in tic-tac-toe, ISMCTS in Kuhn poker): the report's
    rows of two directories are the leaderboard's, per game."""
    players = [{"name": "m", "bot": "mcts", "params": {"simulations": 5}}, {"name": "r", "bot": "random"}]
    runs = []
    for name, games, repeats in (("both", ["tic_tac_toe", "kuhn_poker"], 2), ("kuhn", ["kuhn_poker"], 3)):
        experiment = {"name": "x", "games": games, "repeats": repeats, "seed": 3, "pairing": "round_robin"}
        runs.append(_run(parse_spec({"experiment": experiment, "players": players}), tmp_path / name))
    data = load_report(runs)
    board = build_leaderboard(runs)
    for variant, records in data.variants.items():
        counts: dict[str, int] = {}
        for record in records:
            for seat in record.seats:
                counts[seat] = counts.get(seat, 0) + 1
        assert counts == {r.player: r.matches for r in board.rows if r.task == variant}, variant
