"""``deepeval-games eval`` and ``init``: a task's default study, the models added, played or written as a spec."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import jsonschema
import pytest
import tomllib

from deepeval_games.app.commands.cli import main
from deepeval_games.app.commands.study import JUDGE_ENV, plan_study, spec_toml
from deepeval_games.app.spec.loading import load_spec
from deepeval_games.app.spec.schedule import plan_matches
from deepeval_games.app.spec.spec import parse_spec
from deepeval_games.core.errors import DeepEvalError
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, first_legal_move


def _schema(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["schema"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_the_printed_spec_validates_and_plays_the_same_match_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "deepeval_public_goods", "--model", "openai/gpt-4o", "--print-spec"]) == 0
    printed = capsys.readouterr().out
    document = tomllib.loads(printed)
    jsonschema.validate(document, _schema(capsys))
    assert document["experiment"]["preset"] == "paper"
    assert document["experiment"]["until_stable"] == {"rule": "adaptive", "epsilon": 2.0, "budget_matches": 20}
    assert [p.get("bot", p.get("model")) for p in document["players"]] == [
        "openai/gpt-4o",
        "pgg_free_rider",
        "pgg_conditional_cooperator",
        "pgg_full_contributor",
    ]
    (tmp_path / "spec.toml").write_text(printed, encoding="utf-8")
    from_file = [m.match_id for m in plan_matches(load_spec(tmp_path / "spec.toml"))]
    from_eval = [m.match_id for m in plan_matches(plan_study("deepeval_public_goods", ["openai/gpt-4o"]).spec())]
    assert from_file == from_eval and len(from_file) == 2  # two rounds of the one seating before the rule chooses


def test_a_plain_openspiel_game_gets_the_classical_opponents() -> None:
    plan = plan_study("tic_tac_toe", ["local/smollm2", "openai/gpt-4o"])
    spec = plan.spec()
    assert [(p.name, p.model or p.bot) for p in spec.players] == [
        ("smollm2", "local/smollm2"),
        ("gpt-4o", "openai/gpt-4o"),
        ("random", "random"),
        ("mcts", "mcts"),
    ]
    assert spec.experiment.game == "tic_tac_toe" and spec.experiment.preset is None
    with_params = plan_study("kuhn_poker(players=3)", ["openai/gpt-4o"]).spec()
    assert with_params.experiment.game == "kuhn_poker(players=3)"


def test_names_are_checked_with_did_you_mean() -> None:
    with pytest.raises(DeepEvalError, match="Did you mean 'random'"):
        plan_study("tic_tac_toe", ["openai/gpt-4o"], against=["randm"])
    with pytest.raises(DeepEvalError, match="Did you mean 'deepeval_public_goods'"):
        plan_study("deepeval_public_good", ["openai/gpt-4o"])
    assert plan_study("public_goods", ["openai/gpt-4o"]).document["experiment"]["name"] == "eval-public_goods"


def test_a_judged_task_gets_a_judge_only_when_one_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    shared = os.environ.get("DEEPEVAL_GAMES_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data"
    if not (Path(shared) / "mbpp" / "mbpp.jsonl").is_file():
        pytest.skip("the MBPP file is not here")
    monkeypatch.setenv("DEEPEVAL_GAMES_DATA", str(shared))
    monkeypatch.delenv(JUDGE_ENV, raising=False)
    with pytest.raises(DeepEvalError, match=r"needs a judge and none is named.*judge_pass_rate"):
        plan_study("deepeval_code_review", ["openai/gpt-4o"])
    named = plan_study("deepeval_code_review", ["openai/gpt-4o"], judge="judge_pass_rate")
    assert named.document["judge"] == {"bot": "judge_pass_rate"}
    monkeypatch.setenv(JUDGE_ENV, "openai/gpt-4.1")
    configured = plan_study("deepeval_code_review", ["openai/gpt-4o"])
    assert configured.document["judge"] == {"model": "openai/gpt-4.1"}
    assert any(JUDGE_ENV in note for note in configured.notes)


def test_an_optional_judge_is_left_out_and_said_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JUDGE_ENV, raising=False)
    plan = plan_study("deepeval_idiom_solitaire", ["openai/gpt-4o"])
    assert "judge" not in plan.document and any(note.startswith("Judge: none") for note in plan.notes)
    assert len(plan.document["experiment"]["sweep"]["start"]) == 30
    with pytest.raises(DeepEvalError, match="not judged"):
        plan_study("tic_tac_toe", ["openai/gpt-4o"], judge="judge_fixed")


def test_init_writes_a_commented_spec_that_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pgg.toml"
    assert main(["init", "deepeval_public_goods", "--model", "openai/gpt-4o-mini", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# The default study of deepeval_public_goods")
    assert "# The experiment seed" in text  # the keys are explained beside them
    assert load_spec(out).players[0].model == "openai/gpt-4o-mini"
    assert main(["init", "deepeval_public_goods", "--out", str(out)]) == 2  # never overwritten silently
    assert "exists" in capsys.readouterr().err


def test_spec_toml_round_trips_awkward_values() -> None:
    document = {
        "experiment": {"name": 'a "quoted" name\n', "game": "tic_tac_toe", "sweep": {"x": [1.5, True]}},
        "players": [{"name": "b", "bot": "random", "params": {"weird key": "é"}}],
    }
    assert tomllib.loads(spec_toml(document)) == document
    parse_spec(tomllib.loads(spec_toml({"experiment": {"game": "tic_tac_toe"}, "players": document["players"][:1]})))


def test_eval_plays_resumes_and_prints_the_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_provider_key: str
) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(first_legal_move), max_hang_s=5) as server:
        argv = [
            "eval",
            "tic_tac_toe",
            "--model",
            "openai/fake-model",
            *("-M", f'api_base="{server.api_base}"', "-M", f'api_key_env="{fake_provider_key}"'),
            *("-M", "max_retries=0", "-M", "timeout_s=5"),
            *("--against", "random", "--max-matches", "8", "--out", str(tmp_path / "run"), "--no-progress"),
            "--workers",
            "1",
        ]
        assert main(argv) == 0
        first = capsys.readouterr().out
        sent = server.request_count
        assert main(argv) == 0
        again = capsys.readouterr().out
    assert "Players: fake-model (openai/fake-model), random (random)" in first
    assert "Stopping: the run stops once every player is told apart" in first and "Eq. 1" in first
    assert "Stopping rule: stopped" in first
    assert "played now" in first and "0 played now" in again  # the same command resumes: nothing replayed
    [usage] = [line for line in first.splitlines() if line.startswith("  openai/fake-model: ") and "cache hits" in line]
    calls = int(usage.split(": ", 1)[1].split(" calls")[0])
    assert calls == sent > 0  # the run summary counts the calls the adaptive run sent (it said 0)
    with sqlite3.connect(tmp_path / "run" / "results.sqlite") as db:
        played = db.execute("select count(*) from matches").fetchone()[0]
    assert 4 <= played <= 8


def test_the_estimate_counts_no_more_matches_than_the_budget() -> None:
    from deepeval_games.app.reports.estimate import dry_run

    # two models, random and MCTS: 12 seatings a round; a budget of 18 allows the first round and part of a second
    spec = plan_study("tic_tac_toe", ["openai/gpt-4o", "openai/gpt-4o-mini"], max_matches=18).spec()
    result = dry_run(spec)
    assert result.to_play == 18 and result.planned > 18
    assert sum(m.matches for m in result.models) == 36  # the costliest matches: a model in both seats


def test_a_budget_below_one_round_is_an_error_before_anything_is_played(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tic_tac_toe with a model, random and MCTS: 6 seatings a round; --max-matches 4 would have played nothing."""
    argv = ["eval", "tic_tac_toe", "--model", "openai/gpt-4o", "--max-matches", "4", "--out", str(tmp_path / "run")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "budget_matches = 4 (eval's --max-matches) is below one round of every seating (6 matches)" in err
    assert "set it to at least 6" in err and not (tmp_path / "run").exists()
