"""litellm's set-up of a call on the event loop's thread (``llm_bots.inline_setup``): only for allowed models, only
litellm's own set-up, the same results as on a worker thread."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from typing import Any

import pytest

from llm_bots import inline_setup
from llm_bots.model_config import ModelConfig
from llm_bots.model_info import litellm
from llm_bots.transport import call as transport
from llm_bots.transport.results import Completion
from tests.fake_openai_server import FakeOpenAIServer


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """No model allowed yet, and no loop looked at, in this test."""
    monkeypatch.setattr(inline_setup, "_models", set())
    monkeypatch.delenv(inline_setup.ENV_VAR, raising=False)


def _set_up_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads litellm's ``completion`` (the set-up ``acompletion`` hands over) runs on."""
    import litellm.main

    names: list[str] = []
    real = litellm.main.completion

    def recording(*args: Any, **kwargs: Any) -> Any:
        names.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm.main, "completion", recording)
    return names


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize("inline", [True, False])
def test_an_openai_compatible_call_is_set_up_on_the_loops_thread(
    monkeypatch: pytest.MonkeyPatch, fake_provider_key: str, inline: bool
) -> None:
    if not inline:
        monkeypatch.setenv(inline_setup.ENV_VAR, "0")
    litellm()
    threads = _set_up_threads(monkeypatch)
    messages = [{"role": "user", "content": "hi"}]
    with FakeOpenAIServer() as server:
        config = ModelConfig(
            model="openai/fake-model", api_base=server.api_base, max_retries=0, api_key_env=fake_provider_key
        )

        async def calls() -> list[Completion]:
            return [await transport.complete(config, messages) for _ in range(3)]

        completions = inline_setup.run(calls())
        assert [c.text for c in asyncio.run(calls())] == ["ok"] * 3  # a loop the engine did not make: a thread
    assert [c.text for c in completions] == ["ok"] * 3 and {c.prompt_tokens for c in completions} == {11}
    assert "openai/fake-model" in inline_setup._models  # allowed whatever the switch: the switch decides
    assert len(threads) == 6 and "MainThread" not in threads[3:]  # asyncio's own pool, as litellm does by itself
    if inline:
        assert threads[:3] == ["MainThread"] * 3
    else:
        assert "MainThread" not in threads[:3]


def _shaped(model: str, run: Any) -> Any:
    """A callable shaped as ``litellm.acompletion`` hands its set-up to ``run_in_executor``."""
    return functools.partial(contextvars.copy_context().run, functools.partial(run, model=model))


@pytest.mark.usefixtures("fresh")
def test_only_litellms_set_up_of_an_allowed_model_runs_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm.main

    def set_up(model: str) -> str:
        if model == "openai/broken":
            raise ValueError("bad parameter")
        return threading.current_thread().name

    monkeypatch.setattr(litellm.main, "completion", set_up)
    for model in ("openai/allowed", "openai/broken"):
        inline_setup.allow(model)

    def elsewhere(model: str) -> str:  # the same shape, but not litellm's set-up
        return threading.current_thread().name

    async def main() -> list[Any]:
        loop = asyncio.get_running_loop()
        got: list[Any] = [
            await loop.run_in_executor(None, _shaped("openai/allowed", set_up)),
            await loop.run_in_executor(None, _shaped("anthropic/other", set_up)),
            await loop.run_in_executor(None, _shaped("openai/allowed", elsewhere)),
            await asyncio.to_thread(threading.current_thread),
        ]
        with pytest.raises(ValueError, match="bad parameter"):
            await loop.run_in_executor(None, _shaped("openai/broken", set_up))
        return got

    inline, not_allowed, not_litellm, to_thread = inline_setup.run(main())
    assert inline == "MainThread"
    assert not_allowed != "MainThread" and not_litellm != "MainThread"
    assert to_thread is not threading.main_thread()
