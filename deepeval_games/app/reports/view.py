"""``deepeval-games view DIR...``: the HTML report served on ``127.0.0.1``, updated while a run writes.

The page is the one :mod:`deepeval_games.app.reports.html` writes (one owner of the layout), built with a version
stamp of the stores (``live``). A watcher thread reads each run directory's store read-only (no lock, no write:
:meth:`~deepeval_games.app.storage.store.Store.stamp`) and, when a match or a judgement was committed, builds the report
again into a fresh folder and swaps it in. The page asks ``version.json`` every second; when the stamp changed it
fetches the new ``index.html``, swaps its tables and figures in place and loads the new match index, so the filters,
the list's page and an open transcript stay. A rebuild reads every record again: the watcher waits at least twice the
last build's time before the next, so that a long run's report keeps up without taking the machine.

The server answers ``GET`` only, for the page, its data files and ``version.json``; it binds to the loopback
address and refuses a request naming another host (a web page elsewhere cannot read it through DNS rebinding).
"""

from __future__ import annotations

import html
import json
import logging
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from deepeval_games.app.reports.html import write_html_report
from deepeval_games.app.storage.store import DB_NAME, Store
from deepeval_games.core.errors import DeepEvalError

log = logging.getLogger(__name__)

__all__ = ["HOST", "ReportServer", "store_stamp"]

HOST = "127.0.0.1"
"""The only address the viewer listens on."""
_DATA_FILE = re.compile(r"^/data/[A-Za-z0-9_-]+\.js$")
_WAITING = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>deepeval-games view</title></head>
<body style="font:14px system-ui,sans-serif;margin:32px">
<h1>Waiting for the first match</h1><p>{dirs}: no committed match yet{error}. This page reloads when one is.</p>
<script>setInterval(function(){{fetch('version.json',{{cache:'no-store'}}).then(function(r){{return r.json();}})
.then(function(v){{if(v.built) location.reload();}}).catch(function(){{}});}}, 1000);</script>
</body></html>
"""


def store_stamp(run_dir: str | Path) -> str:
    """A stamp of what ``run_dir``'s store holds ("" when it has no store yet), read without a lock or a write."""
    if not (Path(run_dir) / DB_NAME).exists():
        return ""
    with Store(run_dir, read_only=True) as store:
        return store.stamp()


class ReportServer:
    """The live report of ``run_dirs``, served on ``http://127.0.0.1:PORT/`` (``port=0``: a free port)."""

    def __init__(
        self,
        run_dirs: Sequence[str | Path],
        *,
        port: int = 0,
        epsilon: float | None = None,
        interval_s: float = 0.5,
    ) -> None:
        """Bind the server (nothing is served until :meth:`start`).

        Raises:
            DeepEvalError: no run directory, or the port cannot be bound.
        """
        if not run_dirs:
            raise DeepEvalError("no run directory given")
        self.run_dirs = [Path(d) for d in run_dirs]
        self.epsilon = epsilon
        self.interval_s = interval_s
        self._root = Path(tempfile.mkdtemp(prefix="dg-view-"))
        self._state = threading.Lock()
        """Guards the folder being served (swapped by the watcher, read by the request threads)."""
        self._folder: Path | None = None
        self._built = ""
        """The stamp of the report being served ("" before the first one)."""
        self._error = ""
        self._builds = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        try:
            self._http = ThreadingHTTPServer((HOST, port), _handler(self))
        except OSError as exc:
            shutil.rmtree(self._root, ignore_errors=True)
            raise DeepEvalError(
                f"cannot serve on {HOST}:{port}: {exc} (choose another --port; 0 picks a free one)"
            ) from exc
        self._http.daemon_threads = True

    @property
    def url(self) -> str:
        """The page's address."""
        return f"http://{HOST}:{self._http.server_address[1]}/"

    @property
    def builds(self) -> int:
        """How many times the report was built."""
        return self._builds

    def stamp(self) -> str:
        """The stores' stamp now: changes with every commit to any of them."""
        return "|".join(store_stamp(d) for d in self.run_dirs)

    def build(self) -> bool:
        """Build the report again if the stores changed since the last build; True if it did."""
        stamp = self.stamp()
        if stamp == self._built:
            return False
        ready = [d for d in self.run_dirs if (d / DB_NAME).exists()]
        folder = self._root / f"build-{self._builds}"
        self._builds += 1
        try:
            if ready:
                write_html_report(ready, folder, epsilon=self.epsilon, live=stamp)
        except DeepEvalError as exc:  # e.g. a store of a newer version: said on the waiting page
            log.warning("view: %s", exc)
            self._error = str(exc)
            shutil.rmtree(folder, ignore_errors=True)
            return False
        with self._state:
            old, self._folder = self._folder, folder if ready else None
            self._built, self._error = stamp, ""
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        return True

    def _watch(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            try:
                built = self.build()
            except Exception:  # a failing build must not end the watcher: the last report stays served
                log.exception("view: the report could not be built")
                built = False
            spent = time.perf_counter() - started
            self._stop.wait(max(self.interval_s, 2 * spent) if built else self.interval_s)

    def start(self) -> ReportServer:
        """Build the report once and serve it (threads; returns at once)."""
        self.build()
        for target in (self._http.serve_forever, self._watch):
            thread = threading.Thread(target=target, name=f"dg-view-{target.__name__}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Stop serving and watching; remove the built reports."""
        self._stop.set()
        self._http.shutdown()
        self._http.server_close()
        for thread in self._threads:
            thread.join(timeout=10)
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> ReportServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def respond(self, path: str) -> tuple[int, str, bytes]:
        """(status, content type, body) of a ``GET`` of ``path``."""
        path = urlsplit(path).path
        if path == "/version.json":
            body = {"version": self._built, "built": self._folder is not None, "error": self._error}
            return 200, "application/json", json.dumps(body).encode()
        with self._state:
            folder = self._folder
            if path in ("/", "/index.html"):
                if folder is None:
                    dirs = html.escape(", ".join(str(d) for d in self.run_dirs))
                    error = f" ({html.escape(self._error)})" if self._error else ""
                    return 200, "text/html; charset=utf-8", _WAITING.format(dirs=dirs, error=error).encode()
                return 200, "text/html; charset=utf-8", (folder / "index.html").read_bytes()
            if folder is not None and _DATA_FILE.match(path) and (folder / path.lstrip("/")).is_file():
                return 200, "text/javascript; charset=utf-8", (folder / path.lstrip("/")).read_bytes()
        return 404, "text/plain; charset=utf-8", b"not found\n"


def _handler(server: ReportServer) -> type[BaseHTTPRequestHandler]:
    """The request handler class of ``server`` (``GET`` only: anything else is answered 501 by the base class)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
            if host not in (HOST, "localhost"):
                status, kind, body = 403, "text/plain; charset=utf-8", b"only this machine's address is served\n"
            else:
                status, kind, body = server.respond(self.path)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("view: " + format, *args)

    return Handler
