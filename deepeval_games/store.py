"""Durable results: a SQLite store (WAL) plus ``matches.jsonl`` in the run directory.

A match is committed once, whole, in one transaction, keyed by its stable id; a killed run resumes
with only the missing ids. Records are stored as written (``MatchRecord.to_dict``) and read back through
``MatchRecord.from_dict``, which migrates records of an older schema version: the run directory of an older
version still loads, reports and resumes. The store remembers the hash of the spec that created it and refuses to
mix in results of a different spec. Aborted attempts (infrastructure failures, bugs) are logged in a
table of their own and never appear among the results.

One writer at a time: a writing store holds the run directory's :class:`RunLock` (``run.lock``, an ``flock`` that
the kernel releases when its process dies, so a killed run never leaves a stale lock). A second writer waits for it
up to its ``wait_s`` and then refuses with :class:`RunLockedError`, naming the holder's pid and host. Readers
(``Store(run_dir, read_only=True)``: ``report``, ``tables``, analysis) open the database read-only, take no lock
and never touch ``matches.jsonl``; the JSONL is repaired from the database only by the writer, under its lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote

from deepeval_games.errors import DeepEvalError, ResumeMismatchError
from deepeval_games.judgements import JudgementRecord
from deepeval_games.records import MatchRecord, RecordError

__all__ = ["DB_NAME", "JSONL_NAME", "LOCK_NAME", "RunLock", "RunLockedError", "Store"]

DB_NAME = "results.sqlite"
JSONL_NAME = "matches.jsonl"
LOCK_NAME = "run.lock"

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


class RunLockedError(DeepEvalError):
    """Another process is writing the run directory (its pid and host are in the message)."""


_HELD: dict[Path, tuple[int, int]] = {}
"""Run directories whose lock this process holds: resolved path -> (lock file descriptor, holders)."""
_HELD_GUARD = threading.Lock()


class RunLock:
    """The one-writer lock of a run directory: an exclusive ``flock`` on ``run.lock``, held by the driver process.

    The lock belongs to the process: within it, acquiring it again (a store re-opened by the same run, e.g. under
    ``until_stable``) nests. Another process waits up to ``wait_s`` seconds, then gets :class:`RunLockedError`
    naming the holder (pid, host, start time, command) that the holder wrote into the lock file. The kernel drops
    the lock when the holder dies, however it dies.
    """

    def __init__(self, run_dir: str | Path, *, wait_s: float = 0.0) -> None:
        """A lock for ``run_dir`` (nothing is created until :meth:`acquire`)."""
        self.run_dir = Path(run_dir)
        self.wait_s = wait_s
        self._key: Path | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._key is not None

    def acquire(self) -> RunLock:
        """Create the run directory if needed and take its lock (see the class).

        Raises:
            RunLockedError: another process holds it past ``wait_s``.
            DeepEvalError: the directory cannot be created or is not a directory.
        """
        if self._key is not None:
            return self
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            key = self.run_dir.resolve()
        except OSError as exc:
            raise DeepEvalError(f"cannot use {self.run_dir} as a run directory: {exc}") from exc
        with _HELD_GUARD:
            if key in _HELD:
                fd, count = _HELD[key]
                _HELD[key] = (fd, count + 1)
                self._key = key
                return self
            try:
                fd = os.open(key / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise DeepEvalError(f"cannot use {self.run_dir} as a run directory: {exc}") from exc
            deadline = time.monotonic() + max(0.0, self.wait_s)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        holder = _read_holder(fd)
                        os.close(fd)
                        raise RunLockedError(
                            f"{self.run_dir} is being written by another run ({holder}); only one run may write a "
                            "run directory at a time: wait for it to finish, or use another --out directory"
                        ) from None
                    time.sleep(0.2)
            info = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "since": _now(),
                "command": " ".join(sys.argv)[:500],
            }
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
            _HELD[key] = (fd, 1)
            self._key = key
        return self

    def release(self) -> None:
        """Let go of the lock (the last holder in the process unlocks the file)."""
        if self._key is None:
            return
        with _HELD_GUARD:
            fd, count = _HELD[self._key]
            if count > 1:
                _HELD[self._key] = (fd, count - 1)
            else:
                del _HELD[self._key]
                try:
                    os.ftruncate(fd, 0)
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
            self._key = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    """The holder of a lock file as a phrase (``pid 123 on host h since ...``)."""
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict) or "pid" not in info:
        return "holder unknown"
    text = f"pid {info.get('pid')} on host {info.get('host')} since {info.get('since')}"
    return text + (f": {info['command']}" if info.get("command") else "")


class Store:
    """The results of one run directory."""

    def __init__(
        self,
        run_dir: str | Path,
        *,
        spec_hash: str | None = None,
        spec_text: str | None = None,
        read_only: bool = False,
        run_lock: RunLock | None = None,
        wait_s: float = 0.0,
    ) -> None:
        """Open (or create) the store in ``run_dir``.

        A writer (the default) holds the directory's :class:`RunLock`: ``run_lock`` when the caller holds one
        already, else its own, taken here (waiting up to ``wait_s``) and released by :meth:`close`. It then
        repairs ``matches.jsonl`` from the database if a crash left them apart. With ``spec_hash`` the store is
        bound to that spec: a new store records it, an existing one made by another spec raises
        :class:`ResumeMismatchError`.

        ``read_only``: open an existing store for reading only: no lock, no repair, no write of any kind.

        Raises:
            RunLockedError: another process writes the directory.
            DeepEvalError: no store to read, or the directory cannot be used.
        """
        self.run_dir = Path(run_dir)
        self.read_only = read_only
        self._lock = threading.Lock()
        self._run_lock: RunLock | None = None
        self._owns_lock = False
        if read_only:
            self._db = self._connect_read_only()
            return
        self._run_lock = run_lock if run_lock is not None else RunLock(self.run_dir, wait_s=wait_s)
        self._owns_lock = run_lock is None or not run_lock.held
        self._run_lock.acquire()
        try:
            try:
                self._db = sqlite3.connect(self.run_dir / DB_NAME, check_same_thread=False, isolation_level=None)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.executescript(_SCHEMA)
            except (OSError, sqlite3.Error) as exc:
                raise DeepEvalError(f"cannot use {self.run_dir} as a run directory: {exc}") from exc
            if spec_hash is not None:
                self._bind(spec_hash, spec_text or "")
            self._sync_jsonl()
        except BaseException:
            if self._owns_lock:
                self._run_lock.release()
            raise

    def _connect_read_only(self) -> sqlite3.Connection:
        path = self.run_dir / DB_NAME
        if not path.is_file():
            raise DeepEvalError(f"no results in {self.run_dir} (expected {DB_NAME})")
        uri = f"file:{quote(str(path.resolve()))}?mode=ro"
        # a directory nobody can write (an archived run) has no writer: read it as an immutable file
        modes = ("",) if os.access(self.run_dir, os.W_OK) else ("", "&immutable=1")
        for mode in modes:
            db = None
            try:
                db = sqlite3.connect(uri + mode, uri=True, check_same_thread=False, isolation_level=None)
                db.execute("SELECT 1 FROM matches LIMIT 1").fetchall()
                return db
            except sqlite3.Error as exc:
                error = exc
                if db is not None:
                    db.close()
        raise DeepEvalError(f"cannot read the results in {self.run_dir}: {error}") from error

    def _writable(self) -> None:
        if self.read_only:
            raise DeepEvalError(f"the store of {self.run_dir} was opened read-only")

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
        self._writable()
        text = record.to_json()  # serialised once, in one pass
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
        self._writable()
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
        if not self.read_only:
            self._db.executescript(_JUDGEMENTS_SCHEMA)
        elif not self._db.execute("SELECT 1 FROM sqlite_master WHERE name='judgements'").fetchone():
            # a reader writes nothing: a run never re-judged reads as an empty table of this connection's own
            self._db.executescript(_JUDGEMENTS_SCHEMA.replace("CREATE TABLE", "CREATE TEMP TABLE"))

    def judgement_ids(self) -> set[str]:
        """Ids of every stored judgement."""
        with self._lock:
            self._judgements_table()
        return {row[0] for row in self._db.execute("SELECT judgement_id FROM judgements")}

    def commit_judgement(self, judgement: JudgementRecord) -> bool:
        """Store a judgement once (never a match record); returns False if its id was already stored."""
        self._writable()
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
        """Close the database (and let go of the run lock this store took)."""
        try:
            self._db.close()
        finally:
            if self._run_lock is not None and self._owns_lock:
                self._run_lock.release()
            self._run_lock = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
