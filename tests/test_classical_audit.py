"""Issue 9, checked end to end: both seatings of a two-player game are played under the default pairing (so the
report's first-mover split has both halves), ``play`` confines file-naming game parameters as ``run`` does, and the
documentation's table (docs/tasks/openspiel.md) of which classical bot plays which game is what
:func:`classical_support` says."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from analysis.tables.two_player import format_two_player
from deepeval_games.app.commands.cli import main
from deepeval_games.app.commands.play import play_spec
from deepeval_games.app.execution.run import run_experiment
from deepeval_games.app.spec import schedule
from deepeval_games.app.spec.schedule import plan_matches
from deepeval_games.app.spec.spec import parse_spec
from deepeval_games.app.storage.store import Store
from deepeval_games.core.errors import UnknownGameError
from deepeval_games.core.records import MatchRecord, RecordError
from deepeval_games.core.referee import play_match
from deepeval_games.core.registry.games import load_game
from deepeval_games.core.transcript import with_messages
from llm_bots.players.classical import RandomBot, classical_support


def _spec(game: str, *, repeats: int, pairing: str = "auto", players: tuple[str, ...] = ("a", "b")) -> dict:
    experiment = {"name": "seatings", "game": game, "repeats": repeats, "seed": 3, "pairing": pairing}
    return {"experiment": experiment, "players": [{"name": name, "bot": "random"} for name in players]}


# -- both seatings, always (the default pairing of a two-player game with a first mover) -------------------------


@pytest.mark.parametrize("game", ["kuhn_poker", "tic_tac_toe", "breakthrough(rows=6,columns=6)"])
def test_auto_pairing_plays_both_seatings_every_repeat_and_keeps_the_permuted_ids(game: str) -> None:
    plan = plan_matches(parse_spec(_spec(game, repeats=4)))
    assert len(plan) == 8
    by_repeat: dict[int, set[tuple[str, ...]]] = {}
    for match in plan:
        by_repeat.setdefault(match.repeat, set()).add(match.seats)
    assert by_repeat == {r: {("a", "b"), ("b", "a")} for r in range(4)}
    # the seating permute drew for each repeat (the old default) keeps its match id and seed
    permuted = plan_matches(parse_spec(_spec(game, repeats=4, pairing="permute")))
    assert len(permuted) == 4 and set(permuted) <= set(plan)
    assert schedule.count_matches(parse_spec(_spec(game, repeats=4))) == 8


@pytest.mark.parametrize(
    ("game", "pairing"),
    [
        ("deepeval_public_goods(players=2,rounds=2)", "auto"),  # simultaneous moves: no first mover
        ("deepeval_idiom_solitaire(max_turns=4)", "auto"),  # seats with roles (early, late): the paper's schedule
        ("kuhn_poker", "permute"),  # asked for by name
        ("kuhn_poker", "fixed"),
    ],
)
def test_one_match_a_repeat_where_no_seat_moves_first_or_the_spec_says_so(game: str, pairing: str) -> None:
    plan = plan_matches(parse_spec(_spec(game, repeats=4, pairing=pairing)))
    assert sorted(m.repeat for m in plan) == [0, 1, 2, 3]


def test_a_run_planned_under_the_old_default_resumes_with_the_other_seatings_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _spec("tic_tac_toe", repeats=6)
    with monkeypatch.context() as patched:  # the default before: a random seating per repeat
        patched.setattr(schedule, "_has_first_mover", lambda game: False)
        before = run_experiment(spec, tmp_path / "run")
    assert before.played == 6
    after = run_experiment(spec, tmp_path / "run")
    assert (after.played, after.skipped, after.failed) == (6, 6, [])
    with Store(tmp_path / "run", read_only=True) as store:
        records = list(store.records())
    assert Counter(tuple(r.seats) for r in records) == {("a", "b"): 6, ("b", "a"): 6}


def test_the_report_shows_the_first_mover_split_of_a_default_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        '[experiment]\nname = "first-mover"\ngame = "tic_tac_toe"\nrepeats = 10\nseed = 0\n'
        '[[players]]\nname = "mcts"\nbot = "mcts"\nparams = { simulations = 200 }\n'
        '[[players]]\nname = "random"\nbot = "random"\n'
    )
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    assert main(["report", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    report = out.split("Wins, draws, losses and advantage per pair", 2)[
        2
    ]  # the report's block (the run printed one too)
    row = re.search(r"\n +mcts +random +20 +(.*)", report)
    assert row is not None, report
    cells = re.findall(r"-?\d+% \[\d+, \d+\]", row.group(1))
    assert len(cells) == 5, row.group(1)  # win, draw, loss, win moving 1st, win moving 2nd: all measured
    assert "nan" not in row.group(1)
    first = re.search(r"first mover: seat 0 wins (\d+)% .* over 20 matches", report)
    assert first is not None and int(first.group(1)) > 0


def test_a_seating_never_played_reads_n_a_in_the_report() -> None:
    records = [  # pairing "fixed": a always first
        MatchRecord(match_id=str(i), game="g()", seats=["a", "b"], returns=[1.0, -1.0], turns=[], status="complete")
        for i in range(3)
    ]
    text = format_two_player(records)
    assert "nan" not in text
    row = next(line for line in text.splitlines() if line.split()[:2] == ["a", "b"])
    assert row.split()[-4:] == [
        "100%",
        "[29,",
        "100]",
        "n/a",
    ]  # 3 of 3 moving first (Clopper-Pearson); never second


# -- play confines file-naming game parameters as run does -----------------------------------------------------


EFG = """EFG 2 R "pennies" { "P1" "P2" } ""
p "" 1 1 "" { "H" "T" } 0
p "" 2 1 "" { "h" "t" } 0
t "" 1 "" { 1, -1 }
t "" 2 "" { -1, 1 }
p "" 2 1 "" { "h" "t" } 0
t "" 3 "" { -1, 1 }
t "" 4 "" { 1, -1 }
"""


def test_play_refuses_a_file_outside_its_data_folder_before_reading_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the first line of a private file\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "pennies.efg").write_text(EFG)
    code = main(["play", f"efg_game(filename={secret})", "--against", "random", "--out", str(tmp_path / "p")])
    out, err = capsys.readouterr()
    assert code == 2 and "names a file" in err and "[experiment] data_dir" in err, err
    assert "private file" not in out + err and "Traceback" not in err  # OpenSpiel never opened it
    assert not (tmp_path / "p").exists()
    for folder in (None, str(data)):  # not without a data folder, not outside the one named
        with pytest.raises(UnknownGameError, match="names"):
            play_spec(f"efg_game(filename={secret})", data_dir=folder)
    with pytest.raises(UnknownGameError, match="outside the data folder"):
        play_spec(f"efg_game(filename={data}/../secret.txt)", data_dir=data)
    spec = play_spec(f"efg_game(filename={data / 'pennies.efg'})", against=["random"], data_dir=data)
    assert spec.experiment.data_dir == str(data) and spec.pairing == "fixed"
    argv = ["play", f"efg_game(filename={secret})", "--data-dir", str(data), "--out", str(tmp_path / "p")]
    assert main(argv) == 2 and "outside the data folder" in capsys.readouterr().err  # --data-dir: the same rule


def test_a_game_that_names_a_file_is_stored_in_full_and_reading_a_record_never_opens_a_file(tmp_path: Path) -> None:
    """Reading a ``moves`` record replays its game (records v9: the moves' names), and a run directory may come from
    anyone: a game that names a file is never loaded for that (as re-judging loads none). So the referee stores such a
    game's matches in full, and a ``moves`` record naming a file reads as its rows, its turns and messages refused."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "pennies.efg").write_text(EFG)
    game = load_game(f"efg_game(filename={data / 'pennies.efg'})")
    bots = [RandomBot(seat, np.random.default_rng(seat), game=game) for seat in range(2)]
    record = asyncio.run(play_match(game, bots, seed=1, match_id="efg", transcript="moves"))
    assert record.transcript == "full" and record.moves is None and record.turns
    secret = tmp_path / "secret.txt"
    secret.write_text("the first line of a private file\n")
    rows = [[turn.round, turn.seat, turn.action, turn.latency_s] for turn in record.turns]
    crafted = {**json.loads(record.to_json()), "game": f"efg_game(filename={secret})", "transcript": "moves"}
    text = json.dumps({**crafted, "moves": rows, "turns": [], "messages": []})
    assert MatchRecord.from_json(text, rebuild_turns=False).moves == [tuple(row) for row in rows]
    with pytest.raises(RecordError, match="names a file") as refused:
        MatchRecord.from_json(text)
    assert "private file" not in str(refused.value)
    with pytest.raises(UnknownGameError, match="names a file"):
        with_messages(MatchRecord.from_json(text, rebuild_turns=False))


# -- the documentation's table of classical bots is what the code says --------------------------------------------


def test_the_readme_table_of_classical_bots_matches_the_code(repo_root: Path) -> None:
    readme = (repo_root / "docs" / "tasks" / "openspiel.md").read_text(encoding="utf-8")
    header = "| game | `random` | `mcts` | `exact` |"
    assert header in readme
    rows = readme.split(header, 1)[1].split("\n\n", 1)[0].strip().splitlines()[1:]  # below the |---| line
    table = {}
    for row in rows:
        game, *cells = (cell.strip() for cell in row.strip("|").split("|"))
        table[game.strip("`")] = {
            kind: cell.startswith("yes") for kind, cell in zip(("random", "mcts", "exact"), cells, strict=True)
        }
    assert set(table) == {
        "tic_tac_toe",
        "connect_four",
        "kuhn_poker",
        "liars_dice",
        "breakthrough(rows=6,columns=6)",
        "python_iterated_prisoners_dilemma",
        "first_sealed_auction",
    }
    for game, claimed in table.items():
        support = classical_support(load_game(game), search=True)
        assert {kind: reason is None for kind, reason in support.items()} == claimed, (game, support)


# -- the study spec in examples/ ---------------------------------------------------------------------------------


def test_the_study_spec_plays_every_pair_in_both_seatings_on_the_three_games(repo_root: Path) -> None:
    from deepeval_games.app.spec.loading import load_spec

    spec = load_spec(repo_root / "examples" / "classical_baselines.toml")
    assert {p.name: p.kind for p in spec.players} == {"smollm2": "model", "mcts": "bot", "random": "bot"}
    assert spec.player("smollm2").model == "local/smollm2"  # the real local model, offline
    assert spec.player("mcts").params["simulations"] == 1000
    plan = plan_matches(spec)
    assert len(plan) == 36  # 3 games x 6 ordered pairs x 2 repeats
    counts = Counter((m.game, m.seats) for m in plan)
    assert set(counts.values()) == {2} and {game for game, _ in counts} == {
        "tic_tac_toe()",
        "connect_four()",
        "kuhn_poker()",
    }
