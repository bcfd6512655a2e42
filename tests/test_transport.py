"""The model-call layer against injected failures: a scripted local OpenAI server and litellm's mocks.

No API keys, no internet. Retry delays are shrunk through the config (`backoff_base_s`), except where the test
measures that a Retry-After header was honoured.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_bots.model_config import ModelConfig, ModelConfigError
from llm_bots.model_info import model_id_matches, supports_json_schema
from llm_bots.transport.call import complete
from llm_bots.transport.errors import (
    BudgetExceeded,
    ErrorKind,
    FatalModelError,
    InfraError,
    ModelMismatchError,
    Outcome,
)
from llm_bots.transport.results import Budget
from llm_bots.transport.retries import classify_error
from tests.fake_openai_server import TRANSPORT_KEY_ENV, Behaviour, FakeOpenAIServer, transport_config

KEY_ENV = TRANSPORT_KEY_ENV
MESSAGES = [{"role": "user", "content": "How many coins do you give?"}]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key")
    with FakeOpenAIServer(max_hang_s=10) as fake:
        yield fake


def cfg(server: FakeOpenAIServer, **overrides: Any) -> ModelConfig:
    return transport_config(server, **{"timeout_s": 5.0, "max_retries": 2, "backoff_max_s": 0.05, **overrides})


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ----------------------------------------------------------------------------------------------------------
# behaviours of the fake server


def test_normal_reply(server: FakeOpenAIServer) -> None:
    server.script(Behaviour.reply("I give 5 coins."))
    result = run(complete(cfg(server, seed=7, temperature=0.0, max_tokens=20), MESSAGES))
    assert result.text == "I give 5 coins."
    assert result.outcome is Outcome.OK
    assert result.model == "fake-model"
    assert result.finish_reason == "stop"
    assert result.prompt_tokens == 11 and result.completion_tokens > 0
    assert result.cost_usd == 0.0  # unknown model: no price, no crash
    assert result.latency_s > 0 and result.attempts == 1
    assert server.request_count == 1
    sent = server.requests[0]
    assert sent["seed"] == 7 and sent["max_tokens"] == 20 and sent["temperature"] == 0.0
    assert sent["messages"] == MESSAGES


def test_rate_limit_honours_retry_after(server: FakeOpenAIServer) -> None:
    server.script(Behaviour.rate_limited(retry_after=1), Behaviour.reply("after the wait"))
    result = run(complete(cfg(server), MESSAGES))
    assert result.text == "after the wait" and result.attempts == 2
    assert server.request_count == 2
    gap = server.request_times[1] - server.request_times[0]
    assert gap >= 1.0, f"retried after {gap:.3f}s, before the Retry-After of 1s"
    assert result.elapsed_s >= 1.0


def test_server_errors_are_retried_then_succeed(server: FakeOpenAIServer) -> None:
    server.script(Behaviour.error(500), Behaviour.error(503), Behaviour.reply("third time"))
    result = run(complete(cfg(server, max_retries=2), MESSAGES))
    assert result.text == "third time" and result.attempts == 3
    assert server.request_count == 3  # no hidden SDK retries on top of ours


def test_persistent_server_errors_raise_infra_error(server: FakeOpenAIServer) -> None:
    server.default = Behaviour.error(500)
    with pytest.raises(InfraError) as info:
        run(complete(cfg(server, max_retries=2), MESSAGES))
    assert info.value.attempts == 3
    assert server.request_count == 3
    assert "fake-model" in str(info.value)


@pytest.mark.parametrize(
    "behaviour", [Behaviour.malformed_json(), Behaviour.empty_body()], ids=["malformed_json", "empty_body"]
)
def test_unparsable_replies_are_infrastructure_faults(server: FakeOpenAIServer, behaviour: Behaviour) -> None:
    server.script(behaviour, Behaviour.reply("clean"))
    result = run(complete(cfg(server), MESSAGES))
    assert result.text == "clean" and result.attempts == 2


def test_hung_socket_times_out_then_infra_error(server: FakeOpenAIServer) -> None:
    server.default = Behaviour.hang()
    started = time.monotonic()
    with pytest.raises(InfraError) as info:
        run(complete(cfg(server, timeout_s=0.5, max_retries=1), MESSAGES))
    elapsed = time.monotonic() - started
    assert info.value.attempts == 2 and server.request_count == 2
    assert classify_error(info.value.last_error) is ErrorKind.INFRA  # type: ignore[arg-type]
    assert elapsed < 5.0, f"a 0.5s timeout took {elapsed:.1f}s"


def test_connection_refused_is_infra_error(server: FakeOpenAIServer) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nobody listens here once the socket closes
    config = cfg(server, api_base=f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(InfraError) as info:
        run(complete(config, MESSAGES))
    assert info.value.attempts == 2


@pytest.mark.parametrize(
    ("status", "words"),
    [(401, "authentication"), (403, "permission"), (404, "not found"), (400, "bad request")],
)
def test_client_errors_are_fatal_and_name_the_model(server: FakeOpenAIServer, status: int, words: str) -> None:
    server.default = Behaviour.error(status, "The model `fake-model` does not exist or you lack access")
    with pytest.raises(FatalModelError) as info:
        run(complete(cfg(server), MESSAGES))
    message = str(info.value)
    assert "openai/fake-model" in message and words in message.lower()
    assert info.value.status_code == status
    assert server.request_count == 1  # never retried
    assert "sk-test-not-a-real-key" not in message


def test_key_echoed_by_the_provider_is_redacted(server: FakeOpenAIServer) -> None:
    server.default = Behaviour.error(401, "Incorrect API key provided: sk-test-not-a-real-key.")
    with pytest.raises(FatalModelError) as info:
        run(complete(cfg(server), MESSAGES))
    assert "sk-test-not-a-real-key" not in str(info.value) and "***" in str(info.value)


def test_missing_key_variable_is_fatal_before_any_request(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(FatalModelError, match=KEY_ENV):
        run(complete(cfg(server), MESSAGES))
    assert server.request_count == 0


def test_context_overflow_is_an_outcome(server: FakeOpenAIServer) -> None:
    server.script(Behaviour.context_overflow())
    result = run(complete(cfg(server), MESSAGES))
    assert result.outcome is Outcome.CONTEXT_OVERFLOW and result.text == ""
    assert server.request_count == 1


def test_content_filter_is_a_refusal(server: FakeOpenAIServer) -> None:
    server.script(Behaviour.refusal())
    result = run(complete(cfg(server), MESSAGES))
    assert result.outcome is Outcome.REFUSAL and result.finish_reason == "content_filter"


def test_empty_and_huge_replies_come_back_whole(server: FakeOpenAIServer) -> None:
    server.script(Behaviour.empty_content(), Behaviour.big_reply(100_000))
    empty = run(complete(cfg(server), MESSAGES))
    assert empty.outcome is Outcome.OK and empty.text == ""
    big = run(complete(cfg(server), MESSAGES))
    assert len(big.text) == 100_000


def test_wrong_model_stops_the_run(server: FakeOpenAIServer) -> None:
    server.script(Behaviour.wrong_model("gpt-3.5-turbo"))
    with pytest.raises(ModelMismatchError) as info:
        run(complete(cfg(server), MESSAGES))
    assert info.value.reported_model == "gpt-3.5-turbo"
    assert "openai/fake-model" in str(info.value) and "accept_model_ids" in str(info.value)
    assert server.request_count == 1


def test_wrong_model_accepted_when_listed(server: FakeOpenAIServer) -> None:
    server.script(Behaviour.wrong_model("gpt-3.5-turbo"))
    result = run(complete(cfg(server, accept_model_ids=("gpt-3.5-turbo",)), MESSAGES))
    assert result.model == "gpt-3.5-turbo"


@pytest.mark.parametrize("reported", ["fake-model-2024-08-06", "openai/fake-model", "fake-model:latest"])
def test_dated_and_tagged_variants_are_the_same_model(server: FakeOpenAIServer, reported: str) -> None:
    server.script(Behaviour.wrong_model(reported))
    assert run(complete(cfg(server), MESSAGES)).model == reported


def test_budget_stops_new_calls(server: FakeOpenAIServer) -> None:
    server.default = Behaviour.reply("priced")
    budget = Budget(limit_usd=1e-9)
    config = cfg(server, model="openai/gpt-4o")  # a model in litellm's price table
    first = run(complete(config, MESSAGES, budget=budget))
    assert first.cost_usd > 0 and budget.spent_usd == pytest.approx(first.cost_usd)
    with pytest.raises(BudgetExceeded):
        run(complete(config, MESSAGES, budget=budget))
    assert server.request_count == 1


def test_concurrency_is_limited_per_model(server: FakeOpenAIServer) -> None:
    server.default = Behaviour.slow_reply(0.2)
    config = cfg(server, max_concurrency=2)

    async def burst() -> list[Any]:
        return await asyncio.gather(*(complete(config, MESSAGES) for _ in range(6)))

    results = run(burst())
    assert len(results) == 6 and server.max_in_flight == 2


# ----------------------------------------------------------------------------------------------------------
# litellm's mock: no network at all


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def test_mock_response_needs_no_network(no_network: None) -> None:
    result = run(complete(ModelConfig("openai/gpt-4o"), MESSAGES, mock_response='{"coins": 3}'))
    assert result.text == '{"coins": 3}' and result.model == "gpt-4o" and result.outcome is Outcome.OK
    assert result.cost_usd > 0  # priced from litellm's local price table


def test_mock_exception_is_classified(no_network: None) -> None:
    import litellm  # after llm_bots.transport, which keeps litellm from fetching its price map online

    config = ModelConfig("openai/gpt-4o", max_retries=1, backoff_base_s=0.0)
    error = litellm.RateLimitError("slow down", llm_provider="openai", model="gpt-4o")
    with pytest.raises(InfraError) as info:
        run(complete(config, MESSAGES, mock_response=error))
    assert info.value.attempts == 2


def test_budget_with_mock_responses(no_network: None) -> None:
    budget = Budget(limit_usd=0.0005)
    config = ModelConfig("openai/gpt-4o")
    calls = 0
    with pytest.raises(BudgetExceeded):
        for _ in range(100):
            run(complete(config, MESSAGES, mock_response="ok", budget=budget))
            calls += 1
    assert 0 < calls < 100 and budget.calls == calls and budget.exhausted


# ----------------------------------------------------------------------------------------------------------
# pure helpers


@pytest.mark.parametrize(
    ("configured", "reported", "same"),
    [
        ("gpt-4o", "gpt-4o-2024-08-06", True),
        ("openai/gpt-4o", "gpt-4o", True),
        ("openai/foo", "foo", True),
        ("ollama/llama3", "llama3:latest", True),
        ("ollama/llama3:8b", "llama3:8b", True),
        ("anthropic/claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022", True),
        ("gpt-4", "gpt-4-0613", True),
        ("gpt-4o", "gpt-4o-mini", False),
        ("gpt-4o", "gpt-4o-mini-2024-07-18", False),
        ("gpt-4o-2024-05-13", "gpt-4o-2024-08-06", False),
        ("ollama/llama3:70b", "llama3:8b", False),
        ("openai/fake-model", "gpt-3.5-turbo", False),
    ],
)
def test_model_id_matches(configured: str, reported: str, same: bool) -> None:
    assert model_id_matches(configured, reported) is same


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-._:/", min_size=1, max_size=30))
def test_model_id_matches_itself(model: str) -> None:
    assert model_id_matches(model, model)
    assert model_id_matches("other-model", model, accept=(model,))


def test_supports_json_schema_never_raises() -> None:
    assert supports_json_schema("openai/gpt-4o") is True
    assert supports_json_schema("local/smollm2") is True
    assert supports_json_schema("no-such-provider/no-such-model") is False
    assert supports_json_schema("") is False


def test_config_from_mapping() -> None:
    config = ModelConfig.from_mapping(
        {"model": "openai/gpt-4o", "temperature": 1, "seed": 3, "accept_model_ids": ["gpt-4o-2024-08-06"]}
    )
    assert config.temperature == 1.0 and config.accept_model_ids == ("gpt-4o-2024-08-06",)
    assert config.sampling_params() == {"temperature": 1.0, "max_tokens": None, "seed": 3, "top_p": None}
    assert hash(config) == hash(ModelConfig.from_mapping(dict(config.__dict__)))


@pytest.mark.parametrize(
    ("mapping", "fragment"),
    [
        ({"model": "openai/gpt-4o", "temprature": 0.5}, "unknown key(s) temprature"),
        ({"temperature": 0.5}, "'model' key is required"),
        ({"model": "openai/gpt-4o", "api_key_env": "sk-abc123"}, "NAME of an environment variable"),
        ({"model": "openai/gpt-4o", "temperature": 3}, "temperature"),
        ({"model": "openai/gpt-4o", "max_tokens": 0}, "max_tokens"),
        ({"model": "openai/gpt-4o", "max_concurrency": 0}, "max_concurrency"),
        ({"model": "openai/gpt-4o", "timeout_s": 0}, "timeout_s"),
        ({"model": "openai/gpt-4o", "api_base": "localhost:8000"}, "api_base"),
        ({"model": "openai/gpt-4o", "seed": "7"}, "seed"),
        ({"model": "openai/gpt-4o", "accept_model_ids": "gpt-4o"}, "accept_model_ids"),
        ({"model": "local/"}, "local/"),
    ],
)
def test_config_rejects_bad_values(mapping: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ModelConfigError) as info:
        ModelConfig.from_mapping(mapping)
    assert fragment in str(info.value)


def test_errors_fit_the_runner() -> None:
    """The runner reschedules on InfrastructureError and stops on FatalRunError / SpecError."""
    from deepeval_games.core.errors import FatalRunError, InfrastructureError, SpecError

    assert issubclass(InfraError, InfrastructureError)
    assert issubclass(FatalModelError, FatalRunError) and issubclass(ModelMismatchError, FatalRunError)
    assert issubclass(BudgetExceeded, FatalRunError)
    assert issubclass(ModelConfigError, SpecError) and issubclass(ModelConfigError, ValueError)


def test_retry_after_is_read_from_litellm_provider_headers() -> None:
    """Providers outside the OpenAI SDK (Anthropic, ...) carry the real headers in litellm_response_headers."""
    from llm_bots.transport.retries import retry_after_s

    error = Exception("429 from the provider")
    error.response = None  # type: ignore[attr-defined]
    error.litellm_response_headers = {"Retry-After": "7"}  # type: ignore[attr-defined]
    assert retry_after_s(error) == 7.0
