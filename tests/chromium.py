"""Open a local page in headless Chromium (Debian package ``chromium``): its DOM after scripts ran, a screenshot,
and every request the page itself made.

:class:`LivePage` keeps a page open and evaluates JavaScript in it while the test changes what the page shows (the
DevTools protocol over ``--remote-debugging-pipe``: JSON messages ended by a NUL byte on file descriptors 3 and 4,
no WebSocket client needed).

Requests come from Chromium's net log: a ``URL_REQUEST_START_JOB`` whose network isolation key is the page's
``file://`` origin is a request of the page (Chromium's own background requests, to its update and account
services, carry other keys and are left out). ``.ci/run`` installs the package where it is missing.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LivePage", "PageVisit", "chromium_binary", "visit"]

_FLAGS = [
    "--headless",
    "--no-sandbox",  # CI and test machines run as root
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--no-first-run",
    "--no-pings",
    "--hide-scrollbars",
]


def chromium_binary() -> str | None:
    """The Chromium executable on PATH, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass(frozen=True)
class PageVisit:
    """What a visit found."""

    dom: str
    """The serialised DOM after the page's scripts ran (``--dump-dom``)."""
    page_requests: list[str]
    """URLs the page requested over the network (``file://`` loads are not network requests)."""
    screenshot: Path | None
    seconds: float
    """Wall time of the DOM visit (Chromium start, load, scripts, dump)."""


def _page_requests(net_log: Path) -> list[str]:
    data = json.loads(net_log.read_text(encoding="utf-8"))
    types = {value: key for key, value in data["constants"]["logEventTypes"].items()}
    urls = []
    for event in data.get("events", []):
        params = event.get("params") or {}
        if types.get(event.get("type")) == "URL_REQUEST_START_JOB" and "file://" in str(
            params.get("network_isolation_key", "")
        ):
            urls.append(str(params.get("url")))
    return urls


def visit(
    path: Path, *, fragment: str = "", screenshot: Path | None = None, wait_ms: int = 10000, timeout_s: float = 120
) -> PageVisit:
    """Open ``path`` (with ``#fragment``) in headless Chromium; dump its DOM and optionally take a screenshot."""
    binary = chromium_binary()
    if binary is None:
        raise RuntimeError("chromium is not installed (apt-get install -y chromium)")
    url = path.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    with tempfile.TemporaryDirectory(prefix="dg-chromium-") as tmp:
        net_log = Path(tmp) / "net.json"
        profile = ["--user-data-dir=" + str(Path(tmp) / "profile")]
        start = time.perf_counter()
        done = subprocess.run(
            [
                binary,
                *_FLAGS,
                *profile,
                f"--virtual-time-budget={wait_ms}",
                f"--log-net-log={net_log}",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        seconds = time.perf_counter() - start
        if done.returncode != 0 or not done.stdout:
            raise RuntimeError(f"chromium failed ({done.returncode}): {done.stderr[-2000:]}")
        requests = _page_requests(net_log)
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                [
                    binary,
                    *_FLAGS,
                    *profile,
                    f"--virtual-time-budget={wait_ms}",
                    "--window-size=1280,2400",
                    f"--screenshot={screenshot}",
                    url,
                ],
                capture_output=True,
                timeout=timeout_s,
                check=False,
            )
    return PageVisit(done.stdout, requests, screenshot if screenshot and screenshot.exists() else None, seconds)


class LivePage:
    """A page kept open in headless Chromium: ``with LivePage(url) as page: page.evaluate("document.title")``."""

    def __init__(self, url: str, *, timeout_s: float = 30) -> None:
        binary = chromium_binary()
        if binary is None:
            raise RuntimeError("chromium is not installed (apt-get install -y chromium)")
        self.timeout_s = timeout_s
        self._tmp = tempfile.TemporaryDirectory(prefix="dg-chromium-")
        to_chrome, self._out = os.pipe()
        self._in, from_chrome = os.pipe()
        # bash (dash reads one-digit descriptors only) puts the pipe ends where --remote-debugging-pipe looks (3: read,
        # 4: write); they are moved above 9 first so that the redirections cannot overwrite each other
        low = [to_chrome, from_chrome]
        to_chrome, from_chrome = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in low)
        for fd in low:
            os.close(fd)
        command = [binary, *_FLAGS, f"--user-data-dir={self._tmp.name}/profile", "--remote-debugging-pipe"]
        self._proc = subprocess.Popen(
            ["bash", "-c", f'exec "$@" about:blank 3<&{to_chrome} 4>&{from_chrome}', "bash", *command],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(to_chrome, from_chrome),
        )
        os.close(to_chrome)
        os.close(from_chrome)
        self._buffer = b""
        self._next_id = 0
        target = self._call("Target.createTarget", {"url": url})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def _call(self, method: str, params: dict[str, Any], session: str | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._next_id:  # events and other sessions' messages are skipped
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return dict(reply.get("result", {}))
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise TimeoutError(f"chromium did not answer {method} in {self.timeout_s} s")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self._buffer += chunk

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able values)."""
        result = self._call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, self._session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout_s: float) -> float:
        """Seconds until ``expression`` is truthy in the page (checked every 50 ms); TimeoutError after
        ``timeout_s``."""
        start = time.monotonic()
        while not self.evaluate(expression):
            if time.monotonic() - start > timeout_s:
                raise TimeoutError(f"not true after {timeout_s} s: {expression}")
            time.sleep(0.05)
        return time.monotonic() - start

    def close(self) -> None:
        """End Chromium and remove its profile."""
        try:
            self.timeout_s = 5
            self._call("Browser.close", {})
        except (OSError, RuntimeError, TimeoutError):  # it may close before it answers
            self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        os.close(self._in)
        os.close(self._out)
        self._tmp.cleanup()

    def __enter__(self) -> LivePage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
