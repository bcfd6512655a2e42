"""The model-call cache: SQLite, keyed by everything that determines a reply.

The key is a hash of (model, api_base, messages, sampling parameters, response format, match id, seat,
turn, ask). The match id and turn keep repeats independent: two repeats of one seating never share a
reply, while rerunning the same experiment replays every call from the cache, without the network.
Only finished calls are cached; failures are not.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
import stat
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from deepeval_games.core.errors import FatalRunError
from llm_bots.model_config import ModelConfig
from llm_bots.transport.errors import Outcome
from llm_bots.transport.results import Completion
from llm_bots.transport.unencodable import valid_completion

__all__ = ["SQLITE_HEADER", "CallCache", "cache_path_problem", "call_key"]

SQLITE_HEADER = b"SQLite format 3\x00"
"""How every SQLite database file begins."""
_SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")
"""Folders of the kernel's own files: no cache is kept there."""


def cache_path_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot hold the model-call cache, or None when it can; reads at most 16 bytes, writes nothing.

    It can when it is an SQLite database, an empty regular file, or a new file in a folder that can be made and
    written; never a device (``/dev/null``), a pipe, a folder, a file of ``/proc``, ``/sys`` or ``/dev``
    (``/proc/self/mem``), or a file holding anything else (a text file is never overwritten with a database).
    """
    resolved = Path(os.path.realpath(Path(path).expanduser()))
    if any(resolved == Path(top) or resolved.is_relative_to(top) for top in _SYSTEM_FOLDERS):
        return f"{path} is a file of the system ({resolved}), not a database"
    try:
        info = resolved.stat()
    except FileNotFoundError:
        folder = resolved.parent
        while not folder.exists():
            folder = folder.parent
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            return f"{path} cannot be created: {folder} is not a folder this process may write"
        return None
    except OSError as exc:
        return f"{path} cannot be used: {exc.strerror or exc}"
    if not stat.S_ISREG(info.st_mode):
        return f"{path} is not a regular file (a device, a pipe or a folder cannot hold the cache)"
    try:
        with open(resolved, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        return f"{path} cannot be read: {exc.strerror or exc}"
    if head and head != SQLITE_HEADER:
        return f"{path} exists and is not an SQLite database (it is left as it is: name another file)"
    if not os.access(resolved, os.W_OK):
        return f"{path} is not writable"
    return None


def call_key(
    config: ModelConfig,
    messages: Sequence[Mapping[str, Any]],
    *,
    response_format: Any,
    match_id: str,
    seat: int,
    turn: int,
    ask: int,
) -> str:
    """The cache key of one call."""
    payload = {
        "model": config.model,
        "api_base": config.api_base if not config.is_local else None,
        "messages": [dict(m) for m in messages],
        "sampling": config.sampling_params(),
        "response_format": response_format,
        "match_id": match_id,
        "seat": seat,
        "turn": turn,
        "ask": ask,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


class CallCache:
    """A persistent map from call keys to completions."""

    def __init__(self, path: str | Path) -> None:
        """Open (or create) the cache at ``path``.

        Raises:
            FatalRunError: ``path`` cannot hold the cache (:func:`cache_path_problem`), or SQLite cannot open it.
        """
        self.path = Path(path)
        problem = cache_path_problem(self.path)
        if problem is not None:
            raise FatalRunError(f"model-call cache: {problem}")
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, completion TEXT NOT NULL)")
        except (OSError, sqlite3.Error) as exc:
            raise FatalRunError(f"model-call cache {self.path}: {exc}") from exc
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Completion | None:
        """The cached completion, or None."""
        with self._lock:
            row = self._db.execute("SELECT completion FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        data = json.loads(row[0])
        data["outcome"] = Outcome(data["outcome"])
        # a reply cached before replies were made valid may hold a lone surrogate: replaced now, and noted
        return valid_completion(Completion(**data))

    def put(self, key: str, completion: Completion) -> None:
        """Remember a finished call."""
        data = dataclasses.asdict(completion)
        data["outcome"] = completion.outcome.value
        data["usage"] = json.loads(json.dumps(dict(completion.usage), default=str))
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO calls VALUES (?, ?)", (key, json.dumps(data, sort_keys=True)))

    def close(self) -> None:
        """Close the database."""
        self._db.close()
