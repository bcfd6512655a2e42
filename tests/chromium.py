"""Open a local page in headless Chromium (Debian package ``chromium``): its DOM after scripts ran, a screenshot,
and every request the page itself made.

Requests come from Chromium's net log: a ``URL_REQUEST_START_JOB`` whose network isolation key is the page's
``file://`` origin is a request of the page (Chromium's own background requests, to its update and account
services, carry other keys and are left out). ``.ci/run`` installs the package where it is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PageVisit", "chromium_binary", "visit"]

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
