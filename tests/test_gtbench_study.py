"""The GTBench study specs (examples/studies/gtbench*.toml, issue 30 item 5): every game they name loads and is
playable by name, the engine admits their players, and (a marked test, slow) the real local model plays the whole
random half to the end with no turn a stand-in for a context overflow."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from deepeval_games import load_game
from deepeval_games.app.commands.cli import main
from deepeval_games.app.spec.loading import load_spec
from deepeval_games.app.storage.store import Store
from deepeval_games.core.bot import Outcome
from llm_bots.players.classical import mcts_refusal
from tests.study_marks import local_model_study

GTBENCH = (
    "tic_tac_toe",
    "connect_four",
    "kuhn_poker",
    "breakthrough",
    "liars_dice",
    "first_sealed_auction",
    "negotiation",
    "nim",
    "pig",
    "python_iterated_prisoners_dilemma",
)
"""The GTBench games OpenSpiel provides."""


def _games(repo_root: Path, name: str) -> list[str]:
    spec = load_spec(repo_root / "examples" / "studies" / name)
    return list(spec.experiment.games or [])


def test_the_random_study_names_every_gtbench_game_and_each_plays_to_the_end(repo_root: Path) -> None:
    games = _games(repo_root, "gtbench.toml")
    assert sorted(re.sub(r"\(.*\)$", "", g) for g in games) == sorted(GTBENCH)
    rng = np.random.default_rng(0)
    for name in games:  # by name, as a spec names it: a random playout reaches the end with payoffs
        game = load_game(name)
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(rng.choice(outcomes, p=probs)))
            elif state.is_simultaneous_node():
                state.apply_actions([int(rng.choice(state.legal_actions(p))) for p in range(game.num_players())])
            else:
                state.apply_action(int(rng.choice(state.legal_actions())))
        assert len(state.returns()) == 2


def test_the_mcts_study_holds_exactly_the_games_mcts_may_search(repo_root: Path) -> None:
    games = _games(repo_root, "gtbench_mcts.toml")
    searchable = [g for g in _games(repo_root, "gtbench.toml") if mcts_refusal(load_game(g)) is None]
    assert games == searchable and len(games) == 6


@pytest.mark.parametrize("name", ["gtbench.toml", "gtbench_mcts.toml"])
def test_the_study_specs_plan(repo_root: Path, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    spec = repo_root / "examples" / "studies" / name
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--dry-run"]) == 0
    matches = 2 * 2 * len(_games(repo_root, name))  # 2 repeats x 2 seatings per game
    assert f"Dry run: {matches} matches to play" in capsys.readouterr().out


@local_model_study("the whole GTBench study", minutes=20)
def test_the_local_model_plays_the_random_study_without_overflow_stand_ins(
    repo_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The must-show run of issue 30: local/smollm2 against random, 2 matches per game and seat order."""
    spec = repo_root / "examples" / "studies" / "gtbench.toml"
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    with Store(tmp_path / "run", read_only=True) as store:
        records = list(store.records())
    games = _games(repo_root, "gtbench.toml")
    assert len(records) == 4 * len(games) and all(r.status == "complete" for r in records)
    own = {Outcome.OK, Outcome.REASKED, Outcome.INVALID}
    for record in records:
        seat = record.seats.index("smollm2")
        turns = [t for t in record.turns if t.seat == seat]
        assert turns, record.game
        assert all(Outcome(t.outcome) in own for t in turns), (record.game, [t.outcome for t in turns])
    assert out.count("NRA") >= len(games)  # the two-player metrics, NRA included, per game
