"""The TextArena study specs (examples/studies/textarena_local*.toml, issues 35 and 44): the local model in both
seats on at least 15 two-player environments, against ``random`` where the environment names its moves, and in
every seat of single-player, three- and four-seat and judged environments. The specs plan as the issues ask; a
marked test (``local_model``, ``study``; DEEPEVAL_GAMES_STUDIES=1) plays them with the real model and checks that
every match ends with returns and no player's name reaches a seat."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("textarena")

import game_defs.arena.textarena  # noqa: F401  (the entry point's module: registers the family)
from deepeval_games import load_game
from deepeval_games.app.commands.cli import main
from deepeval_games.app.execution.run import run_experiment
from deepeval_games.app.spec.loading import load_spec
from deepeval_games.core import task
from deepeval_games.core.testing import check_game
from llm_bots.players.classical import random_refusal
from tests.study_marks import local_model_study

SPECS = ("textarena_local.toml", "textarena_local_random.toml")
SEATS = "textarena_local_seats.toml"


def _games(repo_root: Path, name: str) -> list[str]:
    return list(load_spec(repo_root / "examples" / "studies" / name).experiment.games or [])


def test_the_study_names_fifteen_environments_and_random_meets_the_model_where_it_can_play(repo_root: Path) -> None:
    both, against_random = _games(repo_root, SPECS[0]), _games(repo_root, SPECS[1])
    assert len(set(both)) >= 15 and all(g.startswith("textarena:") for g in both)
    named = [g for g in both if random_refusal(load_game(g)) is None]
    assert against_random == named and len(named) >= 5


def test_every_environment_of_the_study_passes_the_conformance_kit(repo_root: Path) -> None:
    for name in _games(repo_root, SPECS[0]):  # TextArena's short variants too, which the adapter's tests do not name
        report = check_game(name, playouts=2)
        assert report.ok and report.checks["serialize"] >= 2, name


def test_the_seats_study_names_one_three_and_four_seat_and_judged_environments(repo_root: Path) -> None:
    games = [load_game(g) for g in _games(repo_root, SEATS)]
    assert {1, 3, 4} <= {game.num_players() for game in games}
    assert any(task.is_judged(game) for game in games)
    # not the conformance kit here: on a four-seat Poker it takes minutes (each state's serialized copy replays the
    # match, hundreds of moves); such environments are played through `run` and replayed in tests/test_arena_seats.py


@pytest.mark.parametrize("name", [*SPECS, SEATS])
def test_the_study_specs_plan_their_matches(
    repo_root: Path, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = repo_root / "examples" / "studies" / name
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--dry-run"]) == 0
    loaded = load_spec(spec)
    seatings = math.perm if loaded.pairing == "round_robin" else math.comb  # ordered choices, or sets, of players
    planned = sum(seatings(len(loaded.players), n) for n in map(_seats, _games(repo_root, name)))
    assert f"Dry run: {planned} matches to play" in capsys.readouterr().out


def _seats(game: str) -> int:
    return int(load_game(game).num_players())


@local_model_study("a TextArena study spec", minutes=18)
@pytest.mark.parametrize("name", [*SPECS, SEATS])
def test_the_local_model_plays_every_environment_of_the_study_to_the_end(
    repo_root: Path, tmp_path: Path, name: str
) -> None:
    """The must-show run of issue 35: every match complete, with the environment's returns, and anonymous."""
    spec = load_spec(repo_root / "examples" / "studies" / name)
    result = run_experiment(spec, tmp_path / "run")
    assert not result.failed, result.failed
    records = list(result.records)
    assert len(records) >= len(_games(repo_root, name)) and result.model_calls > 0
    players = [p.name for p in spec.players]
    for record in records:
        seats = load_game(record.game).num_players()
        assert record.status == "complete" and len(record.returns) == seats, record.game
        if seats == 2:
            assert sorted(record.returns) in ([-1.0, 1.0], [0.0, 0.0]), (record.game, record.returns)
        texts = [str(m.get("text", "")) for m in record.messages]
        assert not any(player in text for text in texts for player in players), record.game
