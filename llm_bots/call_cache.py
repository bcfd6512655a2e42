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
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from llm_bots.model_config import ModelConfig
from llm_bots.transport import Completion, Outcome, valid_completion

__all__ = ["CallCache", "call_key"]


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
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, completion TEXT NOT NULL)")
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
