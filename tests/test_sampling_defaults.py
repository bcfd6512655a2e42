"""Sampling defaults that do not distort: no temperature unless set, reply caps per task and role, cut replies as
their own outcome, reasoning text kept but never parsed, effective settings in the match ids (issue 12, item 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from analysis.tables.usage import format_usage, player_usage
from deepeval_games import parse_spec, run_experiment
from deepeval_games.app.commands.cli import main
from deepeval_games.app.spec.schedule import plan_matches
from deepeval_games.core.bot import Outcome
from llm_bots.model_config import DEFAULT_MAX_TOKENS, ModelSettings
from llm_bots.parsing import strip_reasoning
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player

pytestmark = pytest.mark.usefixtures("fake_provider_key")

PGG = "deepeval_public_goods(players=2,rounds=1)"
ANSWER = '{"reason": "r", "coins": 3}'


def _pgg_spec(server: FakeOpenAIServer, **settings: Any) -> dict[str, Any]:
    return {
        "experiment": {"name": "defaults", "game": PGG, "cache": False},
        "players": [model_player("fake-model", server, **settings), {"name": "free", "bot": "pgg_free_rider"}],
    }


def _llm_turns(result: Any) -> list[Any]:
    return [t for r in result.records for t in r.turns if t.seat >= 0 and r.seats[t.seat] == "fake-model"]


def test_no_temperature_is_sent_unless_the_spec_sets_one_and_the_cap_resolves(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behaviour.reply(ANSWER), max_hang_s=5) as server:
        run_experiment(_pgg_spec(server), tmp_path / "unset")
        unset = server.requests[-1]
        run_experiment(_pgg_spec(server, temperature=0.7, max_tokens=100), tmp_path / "set")
        chosen = server.requests[-1]
    assert "temperature" not in unset and "top_p" not in unset  # the provider's default
    assert unset["max_tokens"] == DEFAULT_MAX_TOKENS  # the PGG declares no reply limit: the default cap
    assert chosen["temperature"] == 0.7 and chosen["max_tokens"] == 100  # as set (a task limit would be a floor)
    assert ModelSettings().temperature is None and ModelSettings().max_tokens is None


def test_a_game_without_a_reply_limit_gets_the_default_cap(tmp_path: Path) -> None:
    spec = {
        "experiment": {"name": "ttt", "game": "tic_tac_toe", "cache": False, "pairing": "round_robin"},
        "players": [],
    }
    with FakeOpenAIServer(default=Behaviour.reply('{"move": "x(1,1)"}'), max_hang_s=5) as server:
        spec["players"] = [model_player("fake-model", server, max_reasks=0), {"name": "r", "bot": "random"}]
        run_experiment(spec, tmp_path / "run")
        assert server.requests and all(r["max_tokens"] == DEFAULT_MAX_TOKENS for r in server.requests)


def test_a_reply_cut_by_the_cap_is_reasked_then_recorded_as_truncated_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cut = Behaviour(kind="reply", text='{"reason": "I will put in', finish_reason="length")
    with FakeOpenAIServer(default=cut, max_hang_s=5) as server:
        server.script(cut)  # first: cut, then answered in full
        server.default = Behaviour.reply(ANSWER)
        recovered = run_experiment(_pgg_spec(server), tmp_path / "recovered")
        server.default = Behaviour(kind="reply", text=f"{ANSWER} and more", finish_reason="length")
        truncated = run_experiment(_pgg_spec(server, max_reasks=1), tmp_path / "truncated")
        reask = server.requests[-1]["messages"][-1]["content"]
    (turn,) = _llm_turns(recovered)
    assert turn.outcome == Outcome.REASKED and turn.finish_reasons == ["length", "stop"]
    (turn,) = _llm_turns(truncated)
    assert turn.outcome == Outcome.TRUNCATED and turn.finish_reasons == ["length", "length"]
    assert turn.action_string == "forfeit" and "cut off" in (turn.error or "")  # never read as a move: the penalty
    assert f"cut off at the limit of {DEFAULT_MAX_TOKENS} tokens" in reask
    assert main(["report", str(tmp_path / "truncated")]) == 0
    out = capsys.readouterr().out
    assert "Turn outcomes:" in out and "truncated 1 (of 1)" in out
    assert player_usage(truncated.records)["fake-model"].outcomes == {"truncated": 1}


def test_reasoning_text_is_kept_in_the_record_but_never_read_as_the_move(tmp_path: Path) -> None:
    # the model answers, then thinks aloud about another answer: only the answer outside the block counts
    reply = f'{ANSWER}\n<think>Or should it be {{"reason": "greed", "coins": 10}}? No.</think>'
    with FakeOpenAIServer(default=Behaviour.reply(reply), max_hang_s=5) as server:
        result = run_experiment(_pgg_spec(server), tmp_path / "run")
        second = server.requests
    (turn,) = _llm_turns(result)
    assert turn.outcome == Outcome.OK and turn.action == 3  # not 10, the last JSON object in the raw reply
    assert turn.raw_replies == [reply] and turn.reasoning_tokens > 0
    usage = player_usage(result.records)["fake-model"]  # counted in the report's usage table
    assert usage.reasoning_tokens == turn.reasoning_tokens and "reasoning tokens" in format_usage({"m": usage})
    assert "<think>" not in turn.text and len(second) == 1
    assert strip_reasoning("<think>unfinished thoughts {coins: 9}") == ""
    assert strip_reasoning("<THINKING>a</THINKING>Bonjour.") == "Bonjour."


def test_a_reasoning_models_thinking_stays_out_of_a_translation() -> None:
    import asyncio

    import numpy as np

    from deepeval_games import load_game, play_match
    from deepeval_games.app.execution.one_match import build_player
    from deepeval_games.app.spec.players import PlayerSpec
    from deepeval_games.core.registry.bots import scorers_for

    game = load_game("deepeval_translation(pair=en-fr,paragraph=2455-p2,words=40)")
    reply = "<think>The user wants French; keep it short.</think>\nBonjour."
    with FakeOpenAIServer(default=Behaviour.reply(reply), max_hang_s=5) as server:
        entry = model_player("fake-reasoner", server, reasoning_effort="low")
        params = {k: v for k, v in entry.items() if k not in ("name", "model")}
        bots = [
            build_player(PlayerSpec(name="m", model=entry["model"], params=params), game, 0, np.random.default_rng(0)),
            build_player(PlayerSpec(name="i", bot="mt_identity_proofreader"), game, 1, np.random.default_rng(1)),
        ]
        judge = build_player(PlayerSpec(name="j", bot="judge_chrf"), game, -2, np.random.default_rng(2))
        record = asyncio.run(play_match(game, bots, seed=1, judge=judge, scorers=scorers_for("deepeval_translation")))
        request = server.requests[0]
    turn = record.turns[0]
    assert turn.text == "Bonjour." and turn.outcome == Outcome.OK
    # kept in the record: in the raw reply, or apart from it where litellm split a leading block off
    assert any("keep it short" in text for text in (*turn.raw_replies, *turn.reasoning))
    assert request.get("reasoning_effort") == "low" and "temperature" not in request


def _ids(spec: dict[str, Any]) -> list[str]:
    return [m.match_id for m in plan_matches(parse_spec(spec))]


def test_changing_a_default_setting_changes_the_match_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    llm = {"name": "m", "model": "openai/gpt-4o", "timeout_s": 30}
    spec = {"experiment": {"game": PGG}, "players": [llm, {"name": "free", "bot": "pgg_free_rider"}]}
    scripted = {
        "experiment": {"game": PGG},
        "players": [{"name": "a", "bot": "pgg_free_rider"}, {"name": "free", "bot": "pgg_free_rider"}],
    }
    before, before_scripted = _ids(spec), _ids(scripted)
    assert _ids({**spec, "players": [{**llm, "timeout_s": 5}, spec["players"][1]]}) == before  # delivery only
    monkeypatch.setattr(ModelSettings.model_fields["max_reasks"], "default", 5)
    assert set(_ids(spec)).isdisjoint(before)  # a changed default: new matches, never mixed into old ones
    assert _ids(scripted) == before_scripted  # scripted players have no model settings
    monkeypatch.undo()
    assert _ids(spec) == before
    monkeypatch.setattr("llm_bots.model_config.DEFAULT_MAX_TOKENS", 300)  # the resolved cap is a setting too
    assert set(_ids(spec)).isdisjoint(before)


def test_reasoning_effort_is_validated() -> None:
    with pytest.raises(Exception, match="reasoning_effort"):
        parse_spec(
            {
                "experiment": {"game": PGG},
                "players": [
                    {"name": "m", "model": "openai/o3", "reasoning_effort": "max"},
                    {"name": "f", "bot": "pgg_free_rider"},
                ],
            }
        )
    spec = parse_spec(
        {
            "experiment": {"game": PGG},
            "players": [
                {"name": "m", "model": "openai/o3", "reasoning_effort": "high"},
                {"name": "f", "bot": "pgg_free_rider"},
            ],
        }
    )
    assert json.dumps(spec.players[0].identity()).count("reasoning_effort") == 1


def test_stop_texts_are_sent_only_when_set_and_are_part_of_the_match_identity(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behaviour.reply(ANSWER), max_hang_s=5) as server:
        plain = run_experiment(_pgg_spec(server), tmp_path / "plain")
        unset = server.requests[-1]
        stopped = run_experiment(_pgg_spec(server, stop=["\n", "###"]), tmp_path / "stop")
        chosen = server.requests[-1]
    assert "stop" not in unset and chosen["stop"] == ["\n", "###"]
    assert plain.match_ids.isdisjoint(stopped.match_ids)  # another setting, other matches
    with pytest.raises(ValueError, match="stop"):
        ModelSettings.model_validate({"stop": []})
