"""The lean per-call path of the transport (issue 14): the fast reads give what the plain ones gave."""

from __future__ import annotations

import asyncio
import dataclasses
import pickle
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from deepeval_games.core.bot import CallAttempt
from deepeval_games.core.errors import SpecError
from llm_bots.model_config import ModelConfig
from llm_bots.model_info import litellm
from llm_bots.transport import plan as transport_plan
from llm_bots.transport import responses
from llm_bots.transport.errors import Outcome
from llm_bots.transport.results import Completion
from llm_bots.transport.session import shared_session


def _response(**message: Any) -> Any:
    """A litellm response as litellm builds one from a provider's JSON."""
    return litellm().ModelResponse(
        id="x",
        model="gpt-x",
        system_fingerprint="fp_1",
        choices=[{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
        usage={"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    )


class _Extra(BaseModel):
    model_config = ConfigDict(extra="allow")
    kept: int = 1

    @property
    def computed(self) -> str:
        return "from a property"


@pytest.mark.parametrize("content", [{"content": "hi"}, {"content": None, "refusal": "no"}])
def test_field_reads_what_getattr_reads(content: dict[str, Any]) -> None:
    response = _response(**content)
    response._hidden_params["response_cost"] = 0.25
    message = response.choices[0].message
    objects: list[tuple[Any, tuple[str, ...]]] = [
        (response, ("choices", "model", "usage", "system_fingerprint", "_hidden_params", "nothing", "_nothing")),
        (response.choices[0], ("message", "finish_reason", "logprobs", "nothing")),
        (message, ("content", "refusal", "reasoning_content", "role", "tool_calls", "nothing")),
        (_Extra(more="x"), ("kept", "more", "computed", "nothing", "_nothing")),
        (SimpleNamespace(a=1), ("a", "b")),
        (None, ("content",)),
    ]
    for obj, names in objects:
        for name in names:
            assert responses.read_field(obj, name) == getattr(obj, name, None), (type(obj).__name__, name)


def test_a_parsed_reply_is_the_completion_the_constructor_makes() -> None:
    config = ModelConfig(model="openai/gpt-x")
    response = _response(content='{"coins": 3}')
    response._hidden_params["response_cost"] = 0.5
    made = responses.parse_response(config, config, response, 0.1, 1, 0.2)
    built = Completion(
        text='{"coins": 3}',
        model="gpt-x",
        finish_reason="stop",
        prompt_tokens=11,
        completion_tokens=7,
        cost_usd=0.5,
        latency_s=0.1,
        attempts=1,
        usage=made.usage,
        elapsed_s=0.2,
        requested_model="openai/gpt-x",
        attempt_log=(CallAttempt(status="ok"),),
        system_fingerprint="fp_1",
    )
    assert made == built
    assert repr(made) == repr(built)
    assert dataclasses.asdict(made) == dataclasses.asdict(built)
    assert pickle.loads(pickle.dumps(made)) == built
    assert dataclasses.replace(made, text="other").text == "other"
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.text = "changed"  # type: ignore[misc]
    refused = responses.parse_response(config, config, _response(content=None, refusal="no"), 0.1, 1, 0.2)
    assert refused.outcome is Outcome.REFUSAL and refused.attempt_log == (CallAttempt(status="refusal"),)


def test_one_session_per_event_loop() -> None:
    async def twice() -> tuple[Any, Any]:
        return shared_session(), shared_session()

    first, again = asyncio.run(twice())
    assert first is not None and first is again
    assert first.closed  # closed with its loop
    second, _ = asyncio.run(twice())
    assert second is not first and second.closed


def test_a_players_entry_is_checked_once_and_read_alike() -> None:
    from llm_bots.llm_bot import _player_config

    params = {"api_base": "http://127.0.0.1:9/v1", "temperature": 1, "accept_model_ids": ["a"], "max_reasks": 1}
    settings, config = _player_config("openai/gpt-x", params)
    assert _player_config("openai/gpt-x", dict(reversed(params.items()))) == (settings, config)
    model_keys = {k: v for k, v in params.items() if k != "max_reasks"}
    assert config == ModelConfig.from_mapping({"model": "openai/gpt-x", **model_keys})
    assert settings.max_reasks == 1
    assert _player_config("openai/gpt-x", {**params, "temperature": 0.5})[1].temperature == 0.5
    for bad in ({"max_tokens": True}, {"max_tokens": 0}, {"accept_model_ids": [["x"]]}):
        for _ in range(2):  # refused every time, never remembered
            with pytest.raises(SpecError):
                _player_config("openai/gpt-x", {"max_tokens": 1, **bad})


def test_a_config_copy_with_valid_values_is_what_replace_makes() -> None:
    config = ModelConfig(model="openai/gpt-x", temperature=0.5)
    assert config.with_valid(seed=7, max_tokens=64) == dataclasses.replace(config, seed=7, max_tokens=64)
    assert hash(config.with_valid(seed=7)) == hash(dataclasses.replace(config, seed=7))
    assert config.seed is None
    with pytest.raises(TypeError):
        config.with_valid(sed=7)


def _plain_kwargs(config: ModelConfig, api_key: str | None, messages: list[dict[str, str]]) -> dict[str, Any]:
    """The arguments litellm was given before the call plan (every one read from the config on every call)."""
    kwargs: dict[str, Any] = {
        "model": config.model,
        "messages": [dict(m) for m in messages],
        "timeout": config.timeout_s,
        "num_retries": 0,
        "max_retries": 0,
        "drop_params": True,
    }
    if config.api_base is not None:
        kwargs["api_base"] = config.api_base
    if api_key is not None:
        kwargs["api_key"] = api_key
    kwargs.update((k, v) for k, v in config.sampling_params().items() if v is not None)
    return kwargs


@pytest.mark.parametrize(
    "config",
    [
        ModelConfig(model="openai/gpt-x"),
        ModelConfig(model="openai/gpt-x", api_base="http://127.0.0.1:9/v1", temperature=0.3, seed=5, max_tokens=64),
        ModelConfig(model="openai/gpt-x", top_p=0.9, reasoning_effort="low", timeout_s=7, tpm=1000),
    ],
)
def test_the_call_plan_gives_litellm_the_arguments_read_per_call(config: ModelConfig) -> None:
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    for api_key in (None, "sk-1"):
        kwargs = transport_plan.plan_kwargs(transport_plan.call_plan(config), api_key, messages, None, None)
        assert kwargs == _plain_kwargs(config, api_key, messages)
        assert list(kwargs) == list(_plain_kwargs(config, api_key, messages))  # the same order too
        assert kwargs["messages"] is not messages and kwargs["messages"][0] is not messages[0]  # copies
    schema = {"type": "json_schema"}
    with_schema = transport_plan.plan_kwargs(transport_plan.call_plan(config), None, messages, schema, "mocked")
    assert with_schema["response_format"] is schema and with_schema["mock_response"] == "mocked"
    plan = transport_plan.call_plan(config)
    assert transport_plan.call_plan(config) is plan  # made once per config object
    assert plan.counts_tokens is (config.tpm is not None) and plan.guard_s == config.timeout_s + 2.0
    seeded = config.with_valid(seed=11)  # another match's seed: its own plan
    assert transport_plan.call_plan(seeded).sampling["seed"] == 11
    assert transport_plan.call_plan(config) is plan


def test_the_call_plans_are_bounded() -> None:
    configs = [ModelConfig(model="openai/gpt-x", seed=n) for n in range(transport_plan._PLANS_MAX + 5)]
    for config in configs:
        assert transport_plan.call_plan(config).sampling["seed"] == config.seed
    assert len(transport_plan._plans) <= transport_plan._PLANS_MAX


def test_a_schema_is_made_only_for_a_model_held_to_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from deepeval_games.core.registry.games import load_game
    from llm_bots import llm_bot
    from llm_bots.adapters import adapter_for

    game = load_game("deepeval_public_goods(players=4,rounds=5,mode=1,alpha=1.6)")
    observation = SimpleNamespace(fields={"endowment": 10}, params={})
    made: list[int] = []

    def bot(json_mode: str, model: str = "openai/gpt-x") -> llm_bot.LLMBot:
        adapter = adapter_for(game)
        plain = adapter.response_schema

        def counted(obs: Any) -> Any:
            made.append(1)
            return plain(obs)

        monkeypatch.setattr(adapter, "response_schema", counted)
        settings = llm_bot.BotSettings(json_mode=json_mode)
        config = ModelConfig(model=model, seed=1)
        return llm_bot.LLMBot(0, None, game=game, config=config, adapter=adapter, settings=settings)

    asked: list[str] = []

    def supports(model: str) -> bool:
        asked.append(model)
        return model == "openai/yes"

    monkeypatch.setattr(llm_bot.model_info, "supports_json_schema", supports)
    unsupported = bot("auto")
    assert [unsupported._response_format(observation) for _ in range(3)] == [None] * 3  # type: ignore[arg-type]
    assert len(made) == 1 and asked == ["openai/gpt-x"]  # asked once; no schema made once the answer is no
    made.clear()
    supported = bot("auto", "openai/yes")
    schemas = [supported._response_format(observation) for _ in range(2)]  # type: ignore[arg-type]
    assert schemas[0] == schemas[1] == adapter_for(game).response_schema(observation)  # type: ignore[arg-type]
    assert len(made) == 2
    assert bot("on")._response_format(observation) is not None  # type: ignore[arg-type]
    made.clear()
    assert bot("off")._response_format(observation) is None and not made  # type: ignore[arg-type]
