"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for transport tests without keys or internet.

Each POST /v1/chat/completions takes the next `Behaviour` from a queue the test fills
(`server.script(...)`), or the default behaviour (a normal reply) when the queue is empty. A
`Behaviour.responder(fn)` answers with `fn(body)`, the reply text computed from the request's JSON body
(e.g. the first legal move named in the last user message: `first_legal_move`). The server counts
requests, keeps their JSON bodies, runs in a daemon thread, and stops itself (releasing hung connections)
when the context manager exits. ``GET /slots`` answers as llama.cpp's server does for one slot: busy while any request
is being answered (a hung one included).
With ``prefix_cache=True`` a reply's usage counts the prompt (:func:`prompt_usage`:
a token per 4 characters) and reports as ``prompt_tokens_details.cached_tokens`` the part it shares with an earlier
request, as a provider's prompt cache would.

    with FakeOpenAIServer() as server:
        server.script(Behaviour.rate_limited(retry_after=1), Behaviour.reply("hi"))
        config = ModelConfig("openai/fake-model", api_base=server.api_base, ...)
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "Behaviour",
    "FakeOpenAIServer",
    "common_prefix",
    "fake_eval_argv",
    "first_legal_move",
    "last_user_message",
    "model_player",
    "prompt_text",
    "prompt_usage",
]

DEFAULT_MODEL_ID = "fake-model"


@dataclasses.dataclass(frozen=True)
class Behaviour:
    """What the server does with one request.

    kind: reply | status | hang | malformed_json | empty_body (a refusal is a reply with finish_reason
    content_filter). `delay_s` holds the answer back that long (bounded by the server's stop).
    """

    kind: str = "reply"
    text: str = "ok"
    model_id: str | None = None  # the model the reply reports; None echoes the requested one
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    finish_reason: str = "stop"
    error_message: str = "injected error"
    delay_s: float = 0.0
    respond: Callable[[dict[str, Any]], str] | None = None  # computes the reply text from the request body

    @classmethod
    def responder(cls, fn: Callable[[dict[str, Any]], str]) -> Behaviour:
        """A normal reply whose text is ``fn(body)``, ``body`` being the request's JSON body."""
        return cls(kind="reply", respond=fn)

    @classmethod
    def reply(cls, text: str = "ok", *, model_id: str | None = None) -> Behaviour:
        """A normal chat completion carrying `text`, reporting `model_id` (default: the requested model)."""
        return cls(kind="reply", text=text, model_id=model_id)

    @classmethod
    def slow_reply(cls, delay_s: float, text: str = "ok") -> Behaviour:
        """A normal reply sent after `delay_s` seconds."""
        return cls(kind="reply", text=text, delay_s=delay_s)

    @classmethod
    def big_reply(cls, size: int = 100_000) -> Behaviour:
        """A normal reply of `size` characters."""
        return cls(kind="reply", text=("0123456789" * (size // 10 + 1))[:size])

    @classmethod
    def empty_content(cls) -> Behaviour:
        """A well-formed completion whose message content is the empty string."""
        return cls(kind="reply", text="")

    @classmethod
    def refusal(cls, text: str = "") -> Behaviour:
        """A completion stopped by the provider's content filter."""
        return cls(kind="reply", text=text, finish_reason="content_filter")

    @classmethod
    def wrong_model(cls, model_id: str, text: str = "ok") -> Behaviour:
        """A normal reply that reports another model than the one requested."""
        return cls(kind="reply", text=text, model_id=model_id)

    @classmethod
    def rate_limited(cls, retry_after: float | None = 1) -> Behaviour:
        """HTTP 429, with a Retry-After header in seconds unless `retry_after` is None."""
        headers = () if retry_after is None else (("Retry-After", f"{retry_after:g}"),)
        return cls(kind="status", status=429, headers=headers, error_message="Rate limit reached (injected)")

    @classmethod
    def error(cls, status: int, message: str = "injected error") -> Behaviour:
        """An OpenAI-style JSON error with this HTTP status (500, 401, 404, 400...)."""
        return cls(kind="status", status=status, error_message=message)

    @classmethod
    def context_overflow(cls) -> Behaviour:
        """HTTP 400 with the provider message litellm maps to ContextWindowExceededError."""
        return cls(
            kind="status",
            status=400,
            error_message="This model's maximum context length is 4096 tokens. However, your messages "
            "resulted in 9000 tokens. Please reduce the length of the messages.",
        )

    @classmethod
    def hang(cls) -> Behaviour:
        """Accept the request and never answer (until the server stops)."""
        return cls(kind="hang")

    @classmethod
    def malformed_json(cls) -> Behaviour:
        """HTTP 200 whose body is not JSON."""
        return cls(kind="malformed_json")

    @classmethod
    def empty_body(cls) -> Behaviour:
        """HTTP 200 with an empty body."""
        return cls(kind="empty_body")


def prompt_text(body: dict[str, Any]) -> str:
    """A request's messages as one string, in order (roles and contents): what a prompt cache matches on."""
    parts = []
    for message in body.get("messages") or []:
        content = message.get("content")
        parts.append(f"<{message.get('role')}>{content if isinstance(content, str) else json.dumps(content)}")
    return "".join(parts)


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of two strings."""
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def prompt_usage(text: str, earlier: Iterable[str]) -> tuple[int, int]:
    """``(prompt_tokens, cached_tokens)`` of a prompt: a token per 4 characters (rounded up), and the whole tokens
    of the longest prefix it shares with any ``earlier`` prompt (a provider caches a prompt's prefix for the next
    requests that start the same way)."""
    shared = max((common_prefix(text, other) for other in earlier), default=0)
    return -(-len(text) // 4), shared // 4


class _Server(ThreadingHTTPServer):
    """A threading HTTP server whose listen queue holds hundreds of connections: a test that opens 256 at once must
    not see connects dropped and retried by the kernel (socketserver's default queue is 5)."""

    request_queue_size = 1024


class FakeOpenAIServer:
    """A threaded OpenAI-compatible server on a free port of 127.0.0.1. Use as a context manager."""

    def __init__(
        self, *, default: Behaviour | None = None, max_hang_s: float = 30.0, prefix_cache: bool = False
    ) -> None:
        self.default = default or Behaviour.reply()
        self.prefix_cache = prefix_cache
        self.prompts: list[str] = []
        """Under ``prefix_cache``: every request's :func:`prompt_text`, in order of arrival."""
        self.max_hang_s = max_hang_s
        self.requests: list[dict[str, Any]] = []
        self.request_times: list[float] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.arrivals: list[tuple[float, int, int]] = []
        """Per request: arrival time (monotonic), requests in flight with it, HTTP status answered (429 or 200)."""
        self.usage_log: list[tuple[float, int]] = []
        """Per reply with usage: arrival time of its request and the total tokens the reply reported."""
        self._overload: tuple[int, float | None, float] | None = None
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting --

    def script(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next requests, in order."""
        with self._lock:
            self._queue.extend(behaviours)

    def _next_behaviour(self, body: dict[str, Any]) -> Behaviour:
        with self._lock:
            self.requests.append(body)
            self.request_times.append(time.monotonic())
            return self._queue.popleft() if self._queue else self.default

    def overload(self, max_in_flight: int, *, retry_after: float | None = None, for_s: float = 1.0) -> None:
        """For the next ``for_s`` seconds, answer HTTP 429 (with Retry-After unless None) to a request that arrives
        while ``max_in_flight`` others are in flight: a provider's rate limit, as it answers when one is passed."""
        with self._lock:
            self._overload = (max_in_flight, retry_after, time.monotonic() + for_s)

    def _admit(self, body: dict[str, Any]) -> Behaviour:
        """Count a request in; its behaviour (a 429 while overloaded)."""
        behaviour = self._next_behaviour(body)
        with self._lock:
            now = time.monotonic()
            over = self._overload
            limited = over is not None and now < over[2] and self.in_flight >= over[0]
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.arrivals.append((now, self.in_flight, 429 if limited else 200))
        if limited and over is not None:
            return Behaviour.rate_limited(retry_after=over[1])
        return behaviour

    def in_flight_between(self, start: float, end: float) -> int:
        """The most requests in flight at an arrival between ``start`` and ``end`` (monotonic), 429s left out."""
        with self._lock:
            return max((n for t, n, status in self.arrivals if start <= t < end and status == 200), default=0)

    @property
    def request_count(self) -> int:
        """How many chat-completion requests arrived so far."""
        with self._lock:
            return len(self.requests)

    # -- lifecycle --

    @property
    def port(self) -> int:
        """The bound port."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def api_base(self) -> str:
        """Base URL to give litellm as `api_base` (ends in /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAIServer:
        """Bind a free port and serve in a daemon thread."""
        handler = _make_handler(self)
        httpd = _Server(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release hung requests, stop serving and close the socket."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def last_user_message(body: dict[str, Any]) -> str:
    """The text of the last ``user`` message of a chat request body ("" when there is none)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


_MOVES = "Your legal moves now: "


def first_legal_move(body: dict[str, Any]) -> str:
    """A reply naming the first legal move listed in the last user message (``Your legal moves now: [...]``).

    The generic adapter's prompt lists the moves as a JSON array; the reply is ``{"move": "<first>"}``.
    """
    text = last_user_message(body)
    start = text.rfind(_MOVES)
    if start < 0:
        return "no legal moves were listed"
    moves, _ = json.JSONDecoder().raw_decode(text, start + len(_MOVES))
    return json.dumps({"move": moves[0]})


FAKE_FINGERPRINT = "fp_fake_1"
"""The ``system_fingerprint`` every reply reports."""


def _completion_body(
    behaviour: Behaviour, requested_model: str, prompt: tuple[int, int] | None = None
) -> dict[str, Any]:
    """A chat completion of ``behaviour``; ``prompt``: the ``(prompt_tokens, cached_tokens)`` its usage reports
    (None: 11 prompt tokens, no cache figures)."""
    text = behaviour.text
    thought = text.split("</think>", 1)[0] if "<think>" in text else ""  # a reasoning model's thinking
    prompt_tokens = 11 if prompt is None else prompt[0]
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "system_fingerprint": FAKE_FINGERPRINT,
        "model": behaviour.model_id or requested_model or DEFAULT_MODEL_ID,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": behaviour.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": max(1, len(text) // 4),
            "total_tokens": prompt_tokens + max(1, len(text) // 4),
            "completion_tokens_details": {"reasoning_tokens": len(thought) // 4},
        },
    }
    if prompt is not None:
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": prompt[1]}
    return body


def _make_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # silence per-request logging
            return

        def _send(self, status: int, body: bytes, headers: tuple[tuple[str, str], ...] = ()) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for key, value in headers:
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (its timeout): nothing to answer

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                data = {"object": "list", "data": [{"id": DEFAULT_MODEL_ID, "object": "model"}]}
                self._send(200, json.dumps(data).encode())
            elif self.path.rstrip("/") == "/health":
                self._send(200, b'{"status":"ok"}')
            elif self.path.rstrip("/") == "/slots":  # as llama.cpp's server: one slot, busy while a request is in
                with server._lock:
                    busy = server.in_flight > 0
                self._send(200, json.dumps([{"id": 0, "is_processing": busy}]).encode())
            else:
                self._send(404, b'{"error":{"message":"not found"}}')

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_unparsable": raw.decode("utf-8", "replace")}
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._send(404, b'{"error":{"message":"unknown path"}}')
                return
            behaviour = server._admit(body)
            arrived = time.monotonic()
            prompt = None
            if server.prefix_cache:
                text = prompt_text(body)
                with server._lock:
                    prompt = prompt_usage(text, server.prompts)
                    server.prompts.append(text)
            if behaviour.respond is not None:
                behaviour = dataclasses.replace(behaviour, text=behaviour.respond(body), respond=None)
            try:
                self._answer(behaviour, str(body.get("model", "")), arrived, prompt)
            finally:
                with server._lock:
                    server.in_flight -= 1

        def _answer(self, behaviour: Behaviour, requested: str, arrived: float, prompt: tuple[int, int] | None) -> None:
            if behaviour.delay_s > 0:
                server._stopping.wait(min(behaviour.delay_s, server.max_hang_s))
            if behaviour.kind == "hang":
                server._stopping.wait(server.max_hang_s)
                self.close_connection = True
                return
            if behaviour.kind == "malformed_json":
                self._send(200, b'{"id": "chatcmpl-fake", "choices": [ {"message": tru')
            elif behaviour.kind == "empty_body":
                self._send(200, b"")
            elif behaviour.kind == "status":
                error = {"error": {"message": behaviour.error_message, "type": "fake_error", "code": None}}
                self._send(behaviour.status, json.dumps(error).encode(), behaviour.headers)
            else:
                body = _completion_body(behaviour, requested, prompt)
                with server._lock:
                    server.usage_log.append((arrived, int(body["usage"]["total_tokens"])))
                self._send(200, json.dumps(body).encode(), behaviour.headers)

    return Handler


def model_player(name: str, server: FakeOpenAIServer, *, model: str | None = None, **extra: Any) -> dict[str, Any]:
    """A ``[[players]]`` (or ``[judge]``) table for a model served by ``server``: fast retries, short timeouts.

    The model string is ``openai/<name>`` unless ``model`` is given; the key is read from ``FAKE_PROVIDER_KEY``
    (the ``fake_provider_key`` fixture sets it).
    """
    return {
        "name": name,
        "model": model or f"openai/{name}",
        "api_base": server.api_base,
        "api_key_env": "FAKE_PROVIDER_KEY",
        "max_retries": 1,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        "timeout_s": 5,
        **extra,
    }


PGG_WITH_MODEL = "deepeval_public_goods(players=4,rounds=3,mode=2,alpha=1.6)"
"""The game of :func:`pgg_with_model`."""


def pgg_with_model(
    server: FakeOpenAIServer, cache: Any, experiment: dict[str, Any] | None = None, **model: Any
) -> dict[str, Any]:
    """A spec document: a three-round Public Goods Game of ``openai/fake-model`` at ``server`` (named ``llm``, its
    table updated with ``model``) against the three scripted baselines, the call cache at ``cache``."""
    return {
        "experiment": {"name": "fake", "game": PGG_WITH_MODEL, "seed": 1, "cache": str(cache), **(experiment or {})},
        "players": [
            {**model_player("llm", server, model="openai/fake-model"), **model},
            {"name": "free-rider", "bot": "pgg_free_rider"},
            {"name": "full", "bot": "pgg_full_contributor"},
            {"name": "conditional", "bot": "pgg_conditional_cooperator"},
        ],
    }


def llm_turns(record: Any) -> list[Any]:
    """The turns of the seat named ``llm`` in a match record."""
    seat = record.seats.index("llm")
    return [turn for turn in record.turns if turn.seat == seat]


TRANSPORT_KEY_ENV = "DEEPEVAL_FAKE_OPENAI_KEY"
"""The variable the transport-level tests (tests/test_transport.py, tests/test_limits.py) name in ``api_key_env``."""


def transport_config(server: FakeOpenAIServer, **overrides: Any) -> Any:
    """A :class:`~llm_bots.model_config.ModelConfig` of ``openai/fake-model`` at ``server``, its key in
    :data:`TRANSPORT_KEY_ENV`, with quick retries; ``overrides`` set any other field."""
    from llm_bots.model_config import ModelConfig

    values: dict[str, Any] = {
        "model": "openai/fake-model",
        "api_base": server.api_base,
        "api_key_env": TRANSPORT_KEY_ENV,
        "backoff_base_s": 0.01,
        **overrides,
    }
    return ModelConfig(**values)


def fake_eval_argv(
    game: str,
    out: str | Path,
    api_base: str,
    key_env: str,
    *extra: str,
    models: tuple[str, ...] = (f"openai/{DEFAULT_MODEL_ID}",),
    settings: tuple[str, ...] = (),
) -> list[str]:
    """The argv of ``deepeval-games eval GAME`` (for :func:`deepeval_games.app.commands.cli.main`) with ``models`` at
    this server's ``api_base`` (key read from the variable ``key_env``), no transport retries, a 5 s timeout, one
    worker, no progress bar, the run in ``out``; ``settings`` are more ``-M`` settings (``"temperature=0.2"``),
    ``extra`` is appended (``--max-matches 6``)."""
    return [
        "eval",
        game,
        *(part for model in models for part in ("--model", model)),
        *("-M", f'api_base="{api_base}"', "-M", f'api_key_env="{key_env}"'),
        *("-M", "max_retries=0", "-M", "timeout_s=5"),
        *(part for setting in settings for part in ("-M", setting)),
        *("--out", str(out), "--no-progress", "--workers", "1", *extra),
    ]
