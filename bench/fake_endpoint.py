"""A local OpenAI-compatible chat endpoint for the benchmarks: fixed latency, one cheap reply, its own process.

``python bench/fake_endpoint.py --latency-ms 50`` prints ``PORT <n>`` on its first line, then serves
``POST /v1/chat/completions`` on 127.0.0.1 with HTTP/1.1 keep-alive until it is killed. Every request is answered,
after the configured latency, with a Public Goods Game move (``{"reason": "r", "coins": 3}``) reporting the requested
model. It is a bare asyncio server (no framework): a few thousand requests a second on one core, so in the benchmarks
the engine and the client, not the endpoint, are what is measured. No network beyond the loopback interface.

With ``--prefix-cache`` a reply's usage counts the prompt (a token per 4 characters) and reports as
``prompt_tokens_details.cached_tokens`` the prefix it shares with one of the last :data:`CACHE_DEPTH` requests, as a
provider's prompt cache would (``tests/fake_openai_server.prompt_usage``); without it every reply reports 11 prompt
tokens, so the benchmarks of the engine's own speed pay nothing for it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: the repository's tests package
from tests.fake_openai_server import prompt_text, prompt_usage

REPLY = '{"reason": "r", "coins": 3}'
CACHE_DEPTH = 64
"""Earlier requests a prompt's cached prefix is looked for in, under ``--prefix-cache``."""


def _body(model: str, prompt: tuple[int, int] | None = None) -> bytes:
    usage: dict[str, Any] = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    if prompt is not None:
        usage = {
            "prompt_tokens": prompt[0],
            "completion_tokens": 7,
            "total_tokens": prompt[0] + 7,
            "prompt_tokens_details": {"cached_tokens": prompt[1]},
        }
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}],
            "usage": usage,
        }
    ).encode()


async def _serve_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency_s: float, cache: deque[str] | None
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            payload = await reader.readexactly(length) if length else b""
            try:
                request = json.loads(payload)
            except ValueError:
                request = {}
            model = str(request.get("model", "fake-model"))
            prompt = None
            if cache is not None:
                text = prompt_text(request)
                prompt = prompt_usage(text, cache)
                cache.append(text)
            if latency_s > 0:
                await asyncio.sleep(latency_s)
            body = _body(model, prompt)
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: keep-alive\r\n\r\n"
                + body
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _main(latency_s: float, port: int, prefix_cache: bool = False) -> None:
    cache: deque[str] | None = deque(maxlen=CACHE_DEPTH) if prefix_cache else None
    server = await asyncio.start_server(
        lambda r, w: _serve_connection(r, w, latency_s, cache), "127.0.0.1", port, backlog=1024
    )
    bound = server.sockets[0].getsockname()[1]
    print(f"PORT {bound}", flush=True)
    async with server:
        await server.serve_forever()


class Endpoint:
    """The endpoint in a child process (a context manager): ``api_base`` to give litellm, ``latency_ms`` per reply."""

    def __init__(self, latency_ms: float, *, prefix_cache: bool = False) -> None:
        self.latency_ms = latency_ms
        self.prefix_cache = prefix_cache
        self.process: subprocess.Popen[str] | None = None
        self.port = 0

    @property
    def api_base(self) -> str:
        """Base URL ending in ``/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> Endpoint:
        argv = [sys.executable, str(Path(__file__).resolve()), "--latency-ms", str(self.latency_ms)]
        if self.prefix_cache:
            argv.append("--prefix-cache")
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"fake endpoint did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--prefix-cache", action="store_true", help="report cached prompt tokens (see above)")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main(args.latency_ms / 1000, args.port, args.prefix_cache))
