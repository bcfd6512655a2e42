"""A local model's JSON schema is bounded so the reply it constrains ends within its cap (llm_bots.local.grammar).

The unit tests run everywhere; the `local_model` test asks the real SmolLM2-135M to ramble and finds the reply
complete JSON, ended by the model (finish_reason ``stop``), its string no longer than the bound.
"""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest

from deepeval_games.core.registry.games import load_game
from llm_bots import llm_bot
from llm_bots.adapters import adapter_for
from llm_bots.judge.schema import verdict_response_format
from llm_bots.local import server as local_server
from llm_bots.local.grammar import (
    MIN_STRING_CHARS,
    RESERVE_TOKENS,
    RESERVE_TOKENS_PER_PROPERTY,
    bounded_schema,
)
from llm_bots.model_config import ModelConfig
from llm_bots.transport.call import complete
from llm_bots.transport.errors import Outcome
from tests.test_local_server import needs_model

PGG = "deepeval_public_goods(players=4,rounds=5,mode=2,alpha=1.6)"
OBSERVATION = SimpleNamespace(fields={"endowment": 10}, params={})


def pgg_schema() -> Any:
    return adapter_for(load_game(PGG)).response_schema(OBSERVATION)  # type: ignore[arg-type]


def props(response_format: Any) -> dict[str, Any]:
    return dict(response_format["json_schema"]["schema"]["properties"])


def test_the_free_string_shares_the_cap_less_the_objects_reserve() -> None:
    plain = pgg_schema()
    before = json.dumps(plain, sort_keys=True)
    bounded = bounded_schema(plain, 256)
    assert props(bounded)["reason"]["maxLength"] == 256 - RESERVE_TOKENS - 2 * RESERVE_TOKENS_PER_PROPERTY == 224
    assert props(bounded)["coins"] == props(plain)["coins"]  # the move is the model's, within its own bounds
    assert json.dumps(plain, sort_keys=True) == before  # the argument is not modified


def test_nested_strings_share_it_equally_and_shaped_strings_are_left_alone() -> None:
    verdict = verdict_response_format(["programmer", "reviewer"], 1, 10)
    bounded = bounded_schema(verdict, 512)
    strings: list[dict[str, Any]] = []

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string":
                strings.append(node)
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(bounded["json_schema"]["schema"])  # type: ignore[index]
    free = [s for s in strings if "enum" not in s and "const" not in s and "pattern" not in s]
    assert free and len({s["maxLength"] for s in free}) == 1
    share = free[0]["maxLength"]
    assert share * len(free) <= 512 - RESERVE_TOKENS
    already = {"type": "json_schema", "json_schema": {"schema": {"type": "string", "maxLength": 9}}}
    assert bounded_schema(already, 512) is already


@pytest.mark.parametrize("cap", [None, 0, RESERVE_TOKENS + 2 * RESERVE_TOKENS_PER_PROPERTY + MIN_STRING_CHARS - 1])
def test_no_cap_or_no_room_sends_the_schema_as_it_is(cap: int | None) -> None:
    plain = pgg_schema()
    assert bounded_schema(plain, cap) is plain
    assert bounded_schema(None, 256) is None
    free_form = {"type": "json_object"}
    assert bounded_schema(free_form, 256) is free_form


def test_only_a_local_models_turn_is_bounded() -> None:
    game = load_game(PGG)

    def bot(model: str) -> llm_bot.LLMBot:
        config = ModelConfig(model=model, seed=1, max_tokens=256)
        settings = llm_bot.BotSettings(json_mode="on")
        return llm_bot.LLMBot(0, None, game=game, config=config, adapter=adapter_for(game), settings=settings)

    local = bot("local/smollm2")
    turn = local.turn_config(OBSERVATION)  # type: ignore[arg-type]
    assert props(local._response_format(OBSERVATION, turn))["reason"]["maxLength"] == 224  # type: ignore[arg-type]
    remote = bot("openai/gpt-4o-mini")
    turn = remote.turn_config(OBSERVATION)  # type: ignore[arg-type]
    assert "maxLength" not in props(remote._response_format(OBSERVATION, turn))["reason"]  # type: ignore[arg-type]


@needs_model
def test_a_rambling_local_model_still_ends_its_json_reply_itself() -> None:
    cap = 64  # a 1000-word story does not fit (the premise holds for any reason over ~40 tokens), its bound of 32 does
    plain = pgg_schema()
    response_format = bounded_schema(plain, cap)
    bound = props(response_format)["reason"]["maxLength"]
    ask = "Reason: write a 1000-word story about a dragon who hoards coins. Then the coins you invest (0-10)."
    config = ModelConfig("local/smollm2", max_tokens=cap, temperature=0.0, seed=0, timeout_s=300)
    messages = [{"role": "user", "content": ask}]
    try:
        # the premise: held to the plain schema, the story runs on in its reason (at 96: "10.10.10...") to the cap
        unbounded = asyncio.run(complete(config, messages, response_format=plain))
        assert unbounded.finish_reason == "length"
        completion = asyncio.run(complete(config, messages, response_format=response_format))
    finally:
        local_server.shutdown_all()
    assert completion.outcome is Outcome.OK
    assert completion.finish_reason == "stop" and completion.completion_tokens < cap
    answer = json.loads(completion.text)
    assert len(answer["reason"]) <= bound and 0 <= answer["coins"] <= 10


def test_a_moves_longest_name_is_kept_out_of_the_message_bound() -> None:
    """A combined turn (a message and a move named from an enum): the message leaves room for the longest name."""
    names = ["accept", "offer 10 of 100 to the other player"]
    combined = {
        "type": "json_schema",
        "json_schema": {
            "schema": {
                "type": "object",
                "properties": {"message": {"type": "string"}, "move": {"type": "string", "enum": names}},
            }
        },
    }
    bounded = bounded_schema(combined, 200)
    assert props(bounded)["message"]["maxLength"] == 200 - RESERVE_TOKENS - 2 * RESERVE_TOKENS_PER_PROPERTY - 35
    assert "maxLength" not in props(bounded)["move"]
