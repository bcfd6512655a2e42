"""TextArena's environments that ask a jury of models (issue 44): the spec's judge answers, every verdict a recorded
move, and ``rejudge`` asks another judge the same question."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textarena")

import game_defs.arena.textarena  # noqa: F401  (the entry point's module: registers the family)
from deepeval_games.app.commands.cli import main
from deepeval_games.app.execution.rejudge import judge_source, rejudge
from deepeval_games.app.storage.store import Store
from deepeval_games.core import task
from deepeval_games.core.records import JUDGE_SEAT
from deepeval_games.core.registry.games import load_game
from tests.arena_play import records, replayed, write_spec
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, last_user_message, model_player

SCENARIO = "textarena:ScenarioPlanning-v0"


def _jury_votes_for(label: str) -> Any:
    """A fake endpoint that plays the players (a strategy) and, asked as the jury, votes for ``label``."""

    def respond(body: dict[str, Any]) -> str:
        if "You are the jury" in last_user_message(body):
            return json.dumps({"move": label})
        return "Build a shelter on high ground, ration the water, and signal for rescue at dawn."

    return respond


def _judge(server: FakeOpenAIServer, name: str) -> dict[str, Any]:
    return model_player(name, server)


def test_the_jury_is_the_spec_judge_its_verdict_a_recorded_move_and_rejudge_asks_another(
    tmp_path: Path, fake_provider_key: str
) -> None:
    game = load_game(SCENARIO)
    assert task.is_judged(game)
    with FakeOpenAIServer(default=Behaviour.responder(_jury_votes_for("Player 2")), max_hang_s=5) as server:
        spec = write_spec(
            tmp_path / "spec.toml",
            {"name": "arena-jury", "game": SCENARIO, "repeats": 1, "seed": 1},
            [model_player("fake-a", server), model_player("fake-b", server)],
            judge=_judge(server, "fake-judge"),
        )
        assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    played = records(tmp_path / "run")
    assert len(played) == 2
    for record in played:
        verdicts = [t for t in record.turns if t.seat == JUDGE_SEAT]
        assert len(verdicts) == 1 and verdicts[0].action_string == "Player 2"
        assert verdicts[0].prompts  # the judge's exchange is in the record, as every model turn's
        brief = next(m for m in record.messages if m.get("kind") == "brief")
        assert "ScenarioPlanning" in str(brief["text"]) and "Player 0" not in str(brief["text"])
        assert list(record.returns) == [-1.0, 1.0]  # the jury voted for the second seat's strategy
        assert list(replayed(record).returns()) == list(record.returns)

    with FakeOpenAIServer(default=Behaviour.responder(_jury_votes_for("Player 1")), max_hang_s=5) as server:
        other = _judge(server, "fake-judge-2")
        source = judge_source(other["model"], {k: v for k, v in other.items() if k not in ("name", "model")})
        result = rejudge(tmp_path / "run", source)
    assert (result.planned, result.judged, result.failed) == (2, 2, [])
    with Store(tmp_path / "run", read_only=True) as store:
        judgements = list(store.judgements())
    assert {j.verdict_text for j in judgements} == {json.dumps({"move": "Player 1"})}
    assert all(j.scores == [0, 0] and j.turn is not None for j in judgements)  # option 0 ("Player 1") for every seat


def test_a_gamemaster_question_of_a_single_player_environment_is_a_judge_node() -> None:
    game = load_game("textarena:TwentyQuestions-v0")
    state = game.new_initial_state()
    state.apply_action(state.chance_outcomes()[0][0])  # the seed
    state.apply_action(task.intern_utterance(state, 0, "Is it an animal?"))
    assert task.is_judge_turn(state)
    assert [state.action_to_string(JUDGE_SEAT, a) for a, _ in state.chance_outcomes()] == ["Yes", "No", "I don't know"]
    assert "Is it an animal?" in task.judge_text(state)
    copy = state.clone()
    state.apply_action(state.chance_outcomes()[1][0])  # "No"
    assert not task.is_judge_turn(state) and "No" in state.observation_string(0)
    assert task.is_judge_turn(copy)  # the copy still waits: it replays to the question


def test_a_judged_environment_without_a_judge_is_refused_before_any_call(
    tmp_path: Path, fake_provider_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(_jury_votes_for("Player 1")), max_hang_s=5) as server:
        spec = write_spec(
            tmp_path / "spec.toml",
            {"name": "no-judge", "game": SCENARIO, "repeats": 1},
            [model_player("fake-a", server), model_player("fake-b", server)],
        )
        assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) != 0
        assert server.request_count == 0
    assert "judge" in capsys.readouterr().err
