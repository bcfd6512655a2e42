"""The lean per-call path of the transport (issue 14): the fast reads give what the plain ones gave."""

from __future__ import annotations

import asyncio
import dataclasses
import pickle
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from deepeval_games.bot import CallAttempt
from deepeval_games.errors import SpecError
from llm_bots import transport
from llm_bots.model_config import ModelConfig
from llm_bots.model_info import litellm


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
            assert transport._field(obj, name) == getattr(obj, name, None), (type(obj).__name__, name)


def test_a_parsed_reply_is_the_completion_the_constructor_makes() -> None:
    config = ModelConfig(model="openai/gpt-x")
    response = _response(content='{"coins": 3}')
    response._hidden_params["response_cost"] = 0.5
    made = transport._parse_response(config, config, response, 0.1, 1, 0.2)
    built = transport.Completion(
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
    refused = transport._parse_response(config, config, _response(content=None, refusal="no"), 0.1, 1, 0.2)
    assert refused.outcome is transport.Outcome.REFUSAL and refused.attempt_log == (CallAttempt(status="refusal"),)


def test_one_session_per_event_loop() -> None:
    async def twice() -> tuple[Any, Any]:
        return transport._shared_session(), transport._shared_session()

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
