"""The run directory's SQLite index (``results.sqlite``): committed matches by id, failed attempts, re-judged verdicts.

The index is what readers query. A writer opens it in WAL mode with ``synchronous=NORMAL`` and receives the
committed matches from the journal (:mod:`~deepeval_games.app.storage.journal`) one batch, one transaction, at a
time; a reader opens it read-only (an archived directory nobody can write, as an immutable file) and writes nothing.
The index remembers the hash of the spec that created it and refuses another spec. Nothing here knows of
``matches.jsonl``, of the run lock or of admission: :class:`~deepeval_games.app.storage.store.Store` composes them.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote

from deepeval_games.core.errors import DeepEvalError, ResumeMismatchError
from deepeval_games.core.judgements import JudgementRecord
from deepeval_games.core.records import RecordError

__all__ = [
    "DB_NAME",
    "PAGE_SIZE",
    "UNREADABLE_SUFFIX",
    "WAL_CHECKPOINT_BYTES",
    "ResultIndex",
    "UnreadableDatabase",
    "open_read_only",
    "set_aside",
    "unreadable",
]

DB_NAME = "results.sqlite"
PAGE_SIZE = 65536
"""SQLite page size of a new store: a record (tens of kB for a scripted match, more with prompts) spans one
or two pages instead of six overflow pages of 4 kB, which makes inserting and reading it back cheaper."""
WAL_CHECKPOINT_BYTES = 4 << 20
"""The write-ahead log is copied into the database (a checkpoint, by the flusher thread after a batch) whenever it
holds this much: SQLite's own default (1,000 pages) meant 4 MB with its 4 kB pages, but 64 MB with :data:`PAGE_SIZE`,
so a run of a few thousand matches left its whole log for :meth:`Store.close` to copy and ``fsync``, blocking: about
0.1 s at 2,000 scripted matches, now about 0.03 s (the rest is done along the way, in the flusher thread)."""

UNREADABLE_SUFFIX = ".unreadable"
"""A database SQLite cannot read (not a database, or a malformed one) is moved aside by the next writer, to its name
with this suffix (and a number, when that name is taken), and a new one is built: nothing of it is deleted."""

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


log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class UnreadableDatabase(DeepEvalError):
    """The run directory's database is a file SQLite cannot read: not a database, or a malformed one."""

    def __init__(self, run_dir: Path, error: BaseException) -> None:
        super().__init__(f"{run_dir / DB_NAME} cannot be read ({error})")
        self.error = error


def unreadable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database file itself cannot be read (SQLite's plain ``DatabaseError``: "file is not a
    database", "database disk image is malformed"), not that it is locked, read-only or out of space."""
    return isinstance(exc, UnreadableDatabase) or type(exc) is sqlite3.DatabaseError


def set_aside(run_dir: Path, error: BaseException) -> Path:
    """Move a database SQLite cannot read (and its log files) to :data:`UNREADABLE_SUFFIX` (numbered when that name is
    taken), logging where; the path it was moved to."""
    path = run_dir / DB_NAME
    target = path.with_name(DB_NAME + UNREADABLE_SUFFIX)
    number = 1
    while target.exists():
        number += 1
        target = path.with_name(f"{DB_NAME}{UNREADABLE_SUFFIX}-{number}")
    for suffix in ("", "-wal", "-shm"):
        if path.with_name(DB_NAME + suffix).exists():
            os.replace(path.with_name(DB_NAME + suffix), target.with_name(target.name + suffix))
    reason = error.error if isinstance(error, UnreadableDatabase) else error
    log.warning("%s: %s could not be read (%s); moved to %s and built again", run_dir, DB_NAME, reason, target)
    return target


def open_read_only(run_dir: str | Path, *, check_same_thread: bool = True) -> sqlite3.Connection:
    """A read-only connection to a run directory's database, checked to be one SQLite reads (the caller closes it);
    a directory nobody can write (an archived run, which has no writer) is read as an immutable file.

    Raises:
        DeepEvalError: the directory has no database, or SQLite cannot read it.
    """
    path = Path(run_dir) / DB_NAME
    if not path.is_file():
        raise DeepEvalError(f"no results in {run_dir} (expected {DB_NAME})")
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    modes = ("",) if os.access(run_dir, os.W_OK) else ("", "&immutable=1")
    for mode in modes:
        db = None
        try:
            db = sqlite3.connect(uri + mode, uri=True, check_same_thread=check_same_thread, isolation_level=None)
            db.execute("SELECT 1 FROM matches LIMIT 1").fetchall()
            return db
        except sqlite3.Error as exc:
            error = exc
            if db is not None:
                db.close()
    raise DeepEvalError(f"cannot read the results in {run_dir}: {error}") from error


class ResultIndex:
    """The SQLite database of one run directory (a writer's, or a reader's)."""

    def __init__(self, run_dir: Path, *, read_only: bool) -> None:
        """Open (a writer: create) ``run_dir``'s database.

        Raises:
            DeepEvalError: no database to read, or the directory cannot be used.
        """
        self.run_dir = run_dir
        self.read_only = read_only
        self.lock = threading.Lock()
        """Guards the connection's transactions. A journal's own lock is taken before it, never while holding it."""
        self.db = self._connect_read_only() if read_only else self._connect_writer()

    def _connect_writer(self) -> sqlite3.Connection:
        try:
            return self._writer_connection()
        except (OSError, sqlite3.Error) as exc:
            if unreadable(exc):
                raise UnreadableDatabase(self.run_dir, exc) from exc
            raise DeepEvalError(f"cannot use {self.run_dir} as a run directory: {exc}") from exc

    def _writer_connection(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.run_dir / DB_NAME, check_same_thread=False, isolation_level=None)
        try:
            db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # a new database only; an existing one keeps its
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            page_size = db.execute("PRAGMA page_size").fetchone()[0]
            db.execute(f"PRAGMA wal_autocheckpoint={max(1, WAL_CHECKPOINT_BYTES // int(page_size))}")
        except BaseException:
            db.close()
            raise
        return db

    def _connect_read_only(self) -> sqlite3.Connection:
        return open_read_only(self.run_dir, check_same_thread=False)

    def bind(self, spec_hash: str, spec_text: str) -> None:
        """Record the spec of a new store; refuse an existing store made by another spec.

        Raises:
            ResumeMismatchError: the store holds results of a different spec.
        """
        row = self.db.execute("SELECT value FROM meta WHERE key='spec_hash'").fetchone()
        if row is None:
            with self.lock:
                self.db.execute("BEGIN")
                self.db.execute("INSERT INTO meta VALUES ('spec_hash', ?)", (spec_hash,))
                self.db.execute("INSERT INTO meta VALUES ('spec', ?)", (spec_text,))
                self.db.execute("INSERT INTO meta VALUES ('created_at', ?)", (_now(),))
                self.db.execute("COMMIT")
        elif row[0] != spec_hash:
            raise ResumeMismatchError(
                f"{self.run_dir} holds results of a different experiment spec (hash {row[0]}, this spec {spec_hash}). "
                "Only 'repeats' and run settings may change between runs into one directory; "
                "use a new --out directory for a changed experiment."
            )

    # -- matches --------------------------------------------------------------------------------------------------

    def match_ids(self) -> set[str]:
        """Ids of every match in the database."""
        return {row[0] for row in self.db.execute("SELECT match_id FROM matches")}

    def holds(self, match_id: str) -> bool:
        """Whether the database holds the match ``match_id``."""
        return self.db.execute("SELECT 1 FROM matches WHERE match_id = ?", (match_id,)).fetchone() is not None

    def is_empty(self) -> bool:
        """Whether the database holds no match."""
        return self.db.execute("SELECT 1 FROM matches LIMIT 1").fetchone() is None

    def ids_in_order(self) -> sqlite3.Cursor:
        """A cursor over ``(match_id,)`` rows in commit order (close it when done early)."""
        return self.db.execute("SELECT match_id FROM matches ORDER BY seq")

    def rows(self) -> sqlite3.Cursor:
        """A cursor over ``(seq, match_id, record)`` rows in commit order."""
        return self.db.execute("SELECT seq, match_id, record FROM matches ORDER BY seq")

    def record_texts(self) -> Iterator[str]:
        """The text of every stored record, in commit order (streamed)."""
        for (text,) in self.db.execute("SELECT record FROM matches ORDER BY seq"):
            yield text

    def stamp(self) -> str:
        """A short text that changes whenever a match or a judgement reaches the database (rows are never
        removed, so their counts and last sequence numbers tell)."""
        matches = self.db.execute("SELECT count(*), coalesce(max(seq), 0) FROM matches").fetchone()
        judged = self.db.execute("SELECT 1 FROM sqlite_master WHERE name='judgements'").fetchone()
        judgements = self.db.execute("SELECT count(*) FROM judgements").fetchone()[0] if judged else 0
        return f"{matches[0]}.{matches[1]}.{judgements}"

    def insert(self, batch: Sequence[tuple[str, str | bytes]]) -> None:
        """:meth:`insert_locked`, taking the lock."""
        with self.lock:
            self.insert_locked(batch)

    def insert_locked(self, batch: Sequence[tuple[str, str | bytes]]) -> None:
        """Insert ``batch`` in one transaction (the caller holds :attr:`lock`). A record given as bytes (a line,
        its newline included or not) is stored as TEXT, read as UTF-8 by SQLite itself: it is never decoded here."""
        if not batch:
            return
        at = _now()
        try:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.executemany(
                "INSERT OR IGNORE INTO matches (match_id, record, committed_at) VALUES (?, CAST(? AS TEXT), ?)",
                [(match_id, text, at) for match_id, text in batch],
            )
            self.db.execute("COMMIT")
        except sqlite3.Error:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def delete(self, seqs: Sequence[int]) -> None:
        """Take the matches of sequence numbers ``seqs`` out of the database, in one transaction."""
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.executemany("DELETE FROM matches WHERE seq = ?", [(seq,) for seq in seqs])
            self.db.execute("COMMIT")

    # -- failed attempts -------------------------------------------------------------------------------------------

    def log_attempt(self, match_id: str, kind: str, error: str) -> None:
        """Remember a failed attempt (``infra`` or ``error``); it is not a result."""
        with self.lock:
            self.db.execute(
                "INSERT INTO attempts (match_id, kind, error, at) VALUES (?, ?, ?, ?)", (match_id, kind, error, _now())
            )

    def attempts(self) -> list[tuple[str, str, str]]:
        """Every failed attempt as (match_id, kind, error)."""
        return list(self.db.execute("SELECT match_id, kind, error FROM attempts ORDER BY id"))

    # -- re-judged verdicts: a table of their own; the matches they score are never touched --------------

    def _judgements_table(self) -> None:
        if not self.read_only:
            self.db.executescript(_JUDGEMENTS_SCHEMA)
        elif not self.db.execute("SELECT 1 FROM sqlite_master WHERE name='judgements'").fetchone():
            # a reader writes nothing: a run never re-judged reads as an empty table of this connection's own
            self.db.executescript(_JUDGEMENTS_SCHEMA.replace("CREATE TABLE", "CREATE TEMP TABLE"))

    def judgement_ids(self) -> set[str]:
        """Ids of every stored judgement."""
        with self.lock:
            self._judgements_table()
        return {row[0] for row in self.db.execute("SELECT judgement_id FROM judgements")}

    def commit_judgement(self, judgement: JudgementRecord) -> bool:
        """Store a judgement once; returns False if its id was already stored."""
        text = json.dumps(judgement.to_dict(), ensure_ascii=False, sort_keys=True)
        with self.lock:
            self._judgements_table()
            try:
                self.db.execute("BEGIN IMMEDIATE")
                self.db.execute(
                    "INSERT INTO judgements (judgement_id, match_id, record, committed_at) VALUES (?, ?, ?, ?)",
                    (judgement.judgement_id, judgement.match_id, text, _now()),
                )
                self.db.execute("COMMIT")
            except sqlite3.IntegrityError:
                self.db.execute("ROLLBACK")
                return False
        return True

    def judgements(self) -> Iterator[JudgementRecord]:
        """Every stored judgement, in commit order (none for a run that was never re-judged).

        Raises:
            RecordError: a stored judgement does not validate, or is of a newer version than this code.
        """
        with self.lock:
            self._judgements_table()
        for (text,) in self.db.execute("SELECT record FROM judgements ORDER BY seq"):
            try:
                yield JudgementRecord.from_dict(json.loads(text))
            except RecordError as exc:
                raise RecordError(f"{self.run_dir}: {exc}") from exc

    # -- closing ---------------------------------------------------------------------------------------------------

    def leave_no_side_files(self) -> None:
        """A writer's last step: fold the write-ahead log into the database and leave WAL mode, so the run directory
        keeps no ``-wal``/``-shm`` files and a later reader creates none. While another connection reads (a live
        ``view``), SQLite refuses and the database stays in WAL mode; a crash leaves the log, which the next writer
        replays when it opens the store (and puts back in WAL mode)."""
        try:
            with self.lock:
                self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self.db.execute("PRAGMA journal_mode=DELETE")
        except sqlite3.Error as exc:
            log.debug("%s: the store stays in WAL mode: %s", self.run_dir, exc)

    def close(self) -> None:
        """Close the connection."""
        self.db.close()
