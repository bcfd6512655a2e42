"""Durable results: a SQLite store (WAL) plus ``matches.jsonl`` in the run directory.

A match is committed once, whole, in one transaction, keyed by its stable id; a killed run resumes
with only the missing ids. Records are stored as written (``MatchRecord.to_dict``) and read back through
``MatchRecord.from_dict``, which migrates records of an older schema version: the run directory of an older
version still loads, reports and resumes. The store remembers the hash of the spec that created it and refuses to
mix in results of a different spec. Aborted attempts (infrastructure failures, bugs) are logged in a
table of their own and never appear among the results.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from deepeval_games.errors import DeepEvalError, ResumeMismatchError
from deepeval_games.judgements import JudgementRecord
from deepeval_games.records import MatchRecord, RecordError

__all__ = ["DB_NAME", "JSONL_NAME", "Store"]

DB_NAME = "results.sqlite"
JSONL_NAME = "matches.jsonl"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS matches (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    match_id TEXT NOT NULL UNIQUE,
    record TEXT NOT NULL,
    committed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    match_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    error TEXT NOT NULL,
    at TEXT NOT NULL
);
"""


_JUDGEMENTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS judgements (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    judgement_id TEXT NOT NULL UNIQUE,
    match_id TEXT NOT NULL,
    record TEXT NOT NULL,
    committed_at TEXT NOT NULL
);
"""
"""Re-judged verdicts (``deepeval-games rejudge``), beside the matches; created when first used."""


def _jsonl_ids(text: str) -> list[str] | None:
    """Match ids of a ``matches.jsonl`` text in order; None if a line is torn or the last one unfinished."""
    if text and not text.endswith("\n"):
        return None
    ids = []
    for line in text.splitlines():
        try:
            ids.append(json.loads(line)["match_id"])
        except (ValueError, KeyError, TypeError):
            return None
    return ids


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Store:
    """The results of one run directory."""

    def __init__(self, run_dir: str | Path, *, spec_hash: str | None = None, spec_text: str | None = None) -> None:
        """Open (or create) the store in ``run_dir``.

        With ``spec_hash`` the store is bound to that spec: a new store records it, an existing one
        made by another spec raises :class:`ResumeMismatchError`.
        """
        self.run_dir = Path(run_dir)
        self._lock = threading.Lock()
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.run_dir / DB_NAME, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise DeepEvalError(f"cannot use {self.run_dir} as a run directory: {exc}") from exc
        if spec_hash is not None:
            self._bind(spec_hash, spec_text or "")
        self._sync_jsonl()

    def _bind(self, spec_hash: str, spec_text: str) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE key='spec_hash'").fetchone()
        if row is None:
            with self._lock:
                self._db.execute("BEGIN")
                self._db.execute("INSERT INTO meta VALUES ('spec_hash', ?)", (spec_hash,))
                self._db.execute("INSERT INTO meta VALUES ('spec', ?)", (spec_text,))
                self._db.execute("INSERT INTO meta VALUES ('created_at', ?)", (_now(),))
                self._db.execute("COMMIT")
        elif row[0] != spec_hash:
            raise ResumeMismatchError(
                f"{self.run_dir} holds results of a different experiment spec (hash {row[0]}, this spec {spec_hash}). "
                "Only 'repeats' and run settings may change between runs into one directory; "
                "use a new --out directory for a changed experiment."
            )

    def completed_ids(self) -> set[str]:
        """Ids of every committed match."""
        return {row[0] for row in self._db.execute("SELECT match_id FROM matches")}

    def commit(self, record: MatchRecord) -> bool:
        """Store a finished match once; returns False if its id was already stored."""
        text = json.dumps(record.to_dict(), ensure_ascii=False, sort_keys=True)
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute(
                    "INSERT INTO matches (match_id, record, committed_at) VALUES (?, ?, ?)",
                    (record.match_id, text, _now()),
                )
                self._db.execute("COMMIT")
            except sqlite3.IntegrityError:
                self._db.execute("ROLLBACK")
                return False
            with open(self.run_dir / JSONL_NAME, "a", encoding="utf-8") as handle:
                handle.write(text + "\n")
        return True

    def log_attempt(self, match_id: str, kind: str, error: str) -> None:
        """Remember a failed attempt (``infra`` or ``error``); it is not a result."""
        with self._lock:
            self._db.execute(
                "INSERT INTO attempts (match_id, kind, error, at) VALUES (?, ?, ?, ?)", (match_id, kind, error, _now())
            )

    def attempts(self) -> list[tuple[str, str, str]]:
        """Every failed attempt as (match_id, kind, error)."""
        return list(self._db.execute("SELECT match_id, kind, error FROM attempts ORDER BY id"))

    def records(self) -> Iterator[MatchRecord]:
        """Every committed match, in commit order, migrated to the current record version and validated.

        Raises:
            RecordError: a stored record is of a newer version than this code, or does not validate.
        """
        for (text,) in self._db.execute("SELECT record FROM matches ORDER BY seq"):
            try:
                yield MatchRecord.from_dict(json.loads(text))
            except RecordError as exc:
                raise RecordError(f"{self.run_dir}: {exc}") from exc

    # -- re-judged verdicts: a table of their own; the matches they score are never touched --------------

    def _judgements_table(self) -> None:
        self._db.executescript(_JUDGEMENTS_SCHEMA)

    def judgement_ids(self) -> set[str]:
        """Ids of every stored judgement."""
        with self._lock:
            self._judgements_table()
        return {row[0] for row in self._db.execute("SELECT judgement_id FROM judgements")}

    def commit_judgement(self, judgement: JudgementRecord) -> bool:
        """Store a judgement once (never a match record); returns False if its id was already stored."""
        text = json.dumps(judgement.to_dict(), ensure_ascii=False, sort_keys=True)
        with self._lock:
            self._judgements_table()
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute(
                    "INSERT INTO judgements (judgement_id, match_id, record, committed_at) VALUES (?, ?, ?, ?)",
                    (judgement.judgement_id, judgement.match_id, text, _now()),
                )
                self._db.execute("COMMIT")
            except sqlite3.IntegrityError:
                self._db.execute("ROLLBACK")
                return False
        return True

    def judgements(self) -> Iterator[JudgementRecord]:
        """Every stored judgement, in commit order (none for a run that was never re-judged).

        Raises:
            RecordError: a stored judgement does not validate, or is of a newer version than this code.
        """
        with self._lock:
            self._judgements_table()
        for (text,) in self._db.execute("SELECT record FROM judgements ORDER BY seq"):
            try:
                yield JudgementRecord.from_dict(json.loads(text))
            except RecordError as exc:
                raise RecordError(f"{self.run_dir}: {exc}") from exc

    def _sync_jsonl(self) -> None:
        """Rewrite ``matches.jsonl`` from the database if a crash left them apart (missing or torn lines)."""
        path = self.run_dir / JSONL_NAME
        rows = list(self._db.execute("SELECT match_id, record FROM matches ORDER BY seq"))
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if [match_id for match_id, _ in rows] == _jsonl_ids(text):
            return
        tmp = path.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(record + "\n" for _, record in rows), encoding="utf-8")
        tmp.replace(path)

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
