"""Papercuts a newcomer met (issue 31, item 6): each fixed, each with a test that fails on the old behaviour."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from deepeval_games.app.commands.cli import main
from deepeval_games.app.execution.run import run_experiment
from deepeval_games.app.reports.html import for_people, transcript_json
from deepeval_games.app.spec.spec import parse_spec
from deepeval_games.core.bot import Outcome, observe
from deepeval_games.core.registry.games import load_game
from llm_bots.players.human import HumanBot, Terminal, _numbered_move

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_dry_run_of_a_local_model_spec_prints_no_litellm_banner(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deepeval_games", "run", "examples/pgg_local_model.toml", "--dry-run"]  # noqa: RUF005
        + ["--out", str(tmp_path / "run")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "Provider List" not in said
    assert said.count("local model: no price") == 1  # one quiet line: a local model has no price


def _pgg_record(tmp_path: Path) -> object:
    spec = parse_spec(
        {
            "experiment": {"game": "deepeval_public_goods(players=2,rounds=1,alpha=1.2)", "seed": 0},
            "players": [
                {"name": "free-rider", "bot": "pgg_free_rider"},
                {"name": "full", "bot": "pgg_full_contributor"},
            ],
        }
    )
    return run_experiment(spec, tmp_path / "run", progress=False).records[0]


def test_transcripts_show_floats_rounded_and_the_record_keeps_them(tmp_path: Path) -> None:
    record = _pgg_record(tmp_path).model_copy(  # type: ignore[attr-defined]
        update={"returns": [48.00000000000001, 1 / 3], "metrics": {"mean": [0.1 + 0.2]}}
    )
    shown = transcript_json(record, "run")
    assert shown["returns"] == [48.0, 0.333333333333] and shown["metrics"] == {"mean": [0.3]}
    assert record.returns[0] == 48.00000000000001  # full precision stays in the record
    assert for_people(float("inf")) == float("inf") and for_people("48.00000000000001") == "48.00000000000001"


def test_an_unknown_player_name_gets_did_you_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _pgg_record(tmp_path)
    assert main(["tables", "pgg", str(tmp_path / "run"), "--players", "free-ridr", "full"]) == 2
    assert "no player 'free-ridr' in" in capsys.readouterr().err
    assert main(["tables", "pgg", str(tmp_path / "run"), "--players", "free-ridr", "full"]) == 2
    assert "Did you mean 'free-rider'?" in capsys.readouterr().err


def test_an_unknown_key_gets_did_you_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('[experiment]\ngame = "tic_tac_toe"\nrepeat = 2\n[[players]]\nname = "r"\nbot = "random"\n')
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--dry-run"]) == 2
    assert "unknown key 'repeat' (did you mean 'repeats'?)" in capsys.readouterr().err


def test_a_person_may_type_a_bare_number_where_the_moves_are_numbered() -> None:
    game = load_game("deepeval_public_goods(players=2,rounds=1)")
    state = game.new_initial_state()
    names = {state.action_to_string(0, a): a for a in state.legal_actions(0)}
    assert _numbered_move(" 4 ", names) == names["invest 4"] and _numbered_move("4.0", names) == names["invest 4"]
    assert _numbered_move("11", names) is None and _numbered_move("four", names) is None
    ttt = load_game("tic_tac_toe").new_initial_state()
    assert _numbered_move("1", {ttt.action_to_string(0, a): a for a in ttt.legal_actions()}) is None  # x(0,1)...
    out = io.StringIO()
    bot = HumanBot(0, game=game, terminal=Terminal(stdin=io.StringIO("4\n"), stdout=out))
    decision = asyncio.run(bot.act(observe(state, 0)))
    assert decision.outcome == Outcome.OK and decision.action == names["invest 4"]


def test_the_demo_spec_lets_the_local_model_finish_its_answer() -> None:
    spec = tomllib.loads((REPO / "examples" / "pgg_local_model.toml").read_text(encoding="utf-8"))
    model = next(p for p in spec["players"] if p.get("model") == "local/smollm2")
    assert model.get("max_tokens", 512) >= 256  # 96 cut a third of its answers (finish_reason "length")
