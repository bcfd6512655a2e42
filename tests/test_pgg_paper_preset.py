"""The Public Goods Game under ``preset = "paper"`` (issue 29, item 8): free-text answers read by the re-formatting
stand-in (no JSON schema, whatever ``json_mode``), and the paper's feedback after a round (mode 1: the income from
the pool; mode 2: the sorted investments), nothing of the seat's own. The ``project`` preset and the default keep
their prompts and match ids byte for byte: the pins below were computed before these options existed.

Re-pinned on purpose (the paper preset's prompts changed: free-text answer format, the paper's feedback):
``PAPER_PINS``. Never re-pin ``KEPT_PINS``: a change there renames the matches of earlier runs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from deepeval_games import load_game, parse_spec, run_experiment
from deepeval_games.app.spec.presets import apply_preset
from deepeval_games.app.spec.schedule import plan_matches
from deepeval_games.core.bot import observe
from llm_bots.adapters import adapter_for
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player

KEPT_PINS = {  # (preset, mode): (digest of the texts a seat is given, the match ids of a small spec)
    ("project", 1): ("820be919f3e69f6e", ["775ae61cfdb9200eabeb", "d7862e75901877ac0423"]),
    ("project", 2): ("56f6818ac9f8359e", ["e0718660fdd23c01ac42", "0047d5cf202d3d0636fc"]),
    (None, 1): ("5c4847dba2f9aad4", ["26ab078f8c1b3d9cbadf", "37879bb17a94ef5d76c4"]),
    (None, 2): ("4be3ebbcb42bc3e8", ["5abf0ecd4e9632f09093", "4dc8b4fdc6d5011ff781"]),
}
PAPER_PINS = {  # before: b705a649ad342b49 / 4003f3a01d209d1880bd..., 2dc88efafc450678 / ecf8712fd2cb60e4a70b...
    ("paper", 1): ("d726779cfdc54374", ["7aa4454cd00c2530556f", "60853edb23bf522ab5f5"]),
    ("paper", 2): ("b6b16da109eff265", ["2231ace985488a91beff", "068a0bb364506473e3d1"]),
}
LLM = {"name": "llm", "model": "openai/fake-model", "api_base": "http://127.0.0.1:9/v1", "max_tokens": 64}


def _texts(game_string: str) -> list[str]:
    """Everything an LLM seat is given over a 2-round game of 3 seats (a forfeit in round 2): the game string, the
    rules, each seat's observation at every node, and at every turn the answer format, a re-ask and the schema."""
    game = load_game(game_string)
    adapter = adapter_for(game)
    state = game.new_initial_state()
    out = [str(game), game.rules_text()]
    for joint in ([10, 4, 0], [3, 3, 11], None):
        for seat in range(3):
            observation = observe(state, seat)
            out.append(observation.text)
            if joint is not None:
                out.append(adapter.format_text(observation))
                out.append(adapter.reask_text(observation, "R"))
                out.append(json.dumps(adapter.response_schema(observation)))
        if joint is not None:
            state.apply_actions(joint)
    return out


def _pins(preset: str | None, mode: int) -> tuple[str, list[str]]:
    game = f"deepeval_public_goods(players=3,rounds=2,mode={mode})"
    digest = hashlib.sha256(json.dumps(_texts(apply_preset(game, preset))).encode()).hexdigest()[:16]
    experiment: dict[str, Any] = {"game": game, "seed": 3, "repeats": 2, "cache": False}
    if preset is not None:
        experiment["preset"] = preset
    players = [LLM, {"name": "free", "bot": "pgg_free_rider"}, {"name": "full", "bot": "pgg_full_contributor"}]
    spec = parse_spec({"experiment": experiment, "players": players})
    return digest, [m.match_id for m in plan_matches(spec)]


@pytest.mark.parametrize(("preset", "mode"), sorted(KEPT_PINS, key=str))
def test_the_project_preset_and_the_default_keep_their_prompts_and_match_ids(preset: str | None, mode: int) -> None:
    assert _pins(preset, mode) == KEPT_PINS[(preset, mode)]


@pytest.mark.parametrize(("preset", "mode"), sorted(PAPER_PINS))
def test_the_paper_preset_prompts_and_match_ids_are_pinned(preset: str, mode: int) -> None:
    assert _pins(preset, mode) == PAPER_PINS[(preset, mode)]


@pytest.mark.parametrize("mode", [1, 2])
def test_the_paper_preset_asks_in_free_text_and_tells_the_papers_feedback(mode: int) -> None:
    texts = _texts(apply_preset(f"deepeval_public_goods(players=3,rounds=2,mode={mode})", "paper"))
    assert "answer=free" in texts[0] and "feedback=paper" in texts[0]
    answer, reask, schema = texts[3:6]
    assert (
        answer
        == "How many of your 10 coins do you put into the pool this round? Give the amount and the reasons "
        + ("for your choice.")
    )
    assert "JSON" not in answer + reask and "could not be used: R" in reask and schema == "null"
    after_round_1 = texts[14:23:4]  # each seat's view after round 1 (observation, then its three answer texts)
    told = (
        "In round 1 you received 7.47 coins from the pool."  # 14 * 1.6 / 3
        if mode == 1
        else "In round 1 the amounts put into the pool were [10, 4, 0] (largest first)."
    )
    assert after_round_1 == [f"{told}\nRound 2 of 2: a new round begins and you receive 10 coins."] * 3
    assert not any("you invested" in t or "You now hold" in t or "forfeited" in t for t in texts)
    project = _texts(apply_preset(f"deepeval_public_goods(players=3,rounds=2,mode={mode})", "project"))
    assert project[14].startswith("In round 1 ") and "you invested 10 coins" in project[14]
    assert "You now hold" in project[14] and '"coins"' in project[3] and project[5] != "null"


@pytest.mark.usefixtures("fake_provider_key")
@pytest.mark.parametrize("preset", ["paper", "project"])
def test_json_mode_forces_a_schema_only_where_the_task_asks_for_json(preset: str, tmp_path: Path) -> None:
    """``json_mode = "on"`` sends the JSON schema under the project preset; under the paper preset the seat is asked
    in free text, so no schema is sent, and its replies in prose are read (the turn's text is the rewritten answer)."""
    replies = ["I keep 6 coins and invest 4.", "5 or 6", "Investment = 8."]
    with FakeOpenAIServer(default=Behaviour.reply('{"reason": "r", "coins": 2}'), max_hang_s=5) as server:
        server.script(*map(Behaviour.reply, replies))
        spec = {
            "experiment": {
                "game": "deepeval_public_goods(players=2,rounds=2)",
                "preset": preset,
                "seed": 1,
                "cache": False,
                "pairing": "fixed",
            },
            "players": [model_player("pgg-model", server, json_mode="on"), {"name": "b", "bot": "pgg_free_rider"}],
        }
        result = run_experiment(parse_spec(spec), tmp_path / "run")
        bodies = list(server.requests)
    assert not result.failed and len(result.records) == 1
    turns = [t for t in result.records[0].turns if t.seat == 0]
    if preset == "project":  # JSON asked for and enforced: the prose is re-asked for JSON, then forfeited
        assert all("response_format" in body for body in bodies)
        assert turns[0].action_string == "forfeit"
        return
    assert not any("response_format" in body for body in bodies)
    assert [t.action for t in turns] == [4, 8] and [t.outcome for t in turns] == ["ok", "reasked"]
    assert json.loads(turns[0].text) == {"reason": replies[0], "coins": 4, "reformatted": True}
    reask = bodies[2]["messages"][-1]["content"]
    assert reask.startswith("Your reply could not be used: it names more than one amount (5 or 6)")
    assert "JSON" not in bodies[0]["messages"][-1]["content"]
