"""Durable results: a SQLite store (WAL) plus ``matches.jsonl`` in the run directory.

A match is committed once, whole, keyed by its stable id; a killed run resumes with only the missing ids.

**Commits are batched** (issue 14). :meth:`Store.commit` writes the record's line to ``matches.jsonl`` with one
``write()`` (an ``O_APPEND`` descriptor held open) and only then returns True: from that moment the match survives a
``kill -9`` of the process, since the bytes are in the operating system. The database receives the pending lines in
one transaction per batch (group commit, by a flusher thread): at most one batch per
:attr:`Store.flush_interval_s` (0.1 s; a commit after a quiet spell goes at once), or every :attr:`Store.batch_max`
records, and at :meth:`Store.flush`, :meth:`Store.completed_ids`, :meth:`Store.records` and
:meth:`Store.close`. ``matches.jsonl`` is thus the store's write-ahead log: a writer opening the directory inserts
the complete lines that the database lacks (a run killed mid-batch), drops a torn last line (a run killed mid-write;
that commit never returned) and rewrites the file from the database if the two disagree otherwise. Nothing is
``fsync``-ed per match: after a power loss the repaired files are consistent but may lack the newest matches (those
of the last batches; SQLite runs in WAL mode with ``synchronous=NORMAL``), and a resume replays them, same seeds.
Readers see a committed match in the database at most one batch interval later.

Records are stored as written (``MatchRecord.to_json``) and read back through
``MatchRecord.from_dict``, which migrates records of an older schema version: the run directory of an older
version still loads, reports and resumes. The store remembers the hash of the spec that created it and refuses to
mix in results of a different spec. Aborted attempts (infrastructure failures, bugs) are logged in a
table of their own and never appear among the results.

One writer at a time: a writing store holds the run directory's :class:`RunLock` (``run.lock``, an ``flock`` that
the kernel releases when its process dies, so a killed run never leaves a stale lock). A second writer waits for it
up to its ``wait_s`` and then refuses with :class:`RunLockedError`, naming the holder's pid and host. Readers
(``Store(run_dir, read_only=True)``: ``report``, ``tables``, analysis) open the database read-only, take no lock
and never touch ``matches.jsonl``; only the writer, under its lock, completes the database from the JSONL and
repairs the JSONL from the database.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote

from deepeval_games.app.storage.admission import Admission, Refused, check_bounds, quarantine
from deepeval_games.app.storage.run_lock import LOCK_NAME, RunLock, RunLockedError
from deepeval_games.core.errors import DeepEvalError, ResumeMismatchError
from deepeval_games.core.judgements import JudgementRecord
from deepeval_games.core.records import MatchRecord, RecordError

__all__ = ["DB_NAME", "JSONL_NAME", "LOCK_NAME", "RunLock", "RunLockedError", "Store", "committed_ids"]

DB_NAME = "results.sqlite"
JSONL_NAME = "matches.jsonl"
PAGE_SIZE = 65536
"""SQLite page size of a new store: a record (tens of kB for a scripted match, more with prompts) spans one
or two pages instead of six overflow pages of 4 kB, which makes inserting and reading it back cheaper."""
_IOV_MAX = 1024
"""The most parts one ``writev`` takes (Linux's ``IOV_MAX``)."""
WAL_CHECKPOINT_BYTES = 4 << 20
"""The write-ahead log is copied into the database (a checkpoint, by the flusher thread after a batch) whenever it
holds this much: SQLite's own default (1,000 pages) meant 4 MB with its 4 kB pages, but 64 MB with :data:`PAGE_SIZE`,
so a run of a few thousand matches left its whole log for :meth:`Store.close` to copy and ``fsync``, blocking: about
0.1 s at 2,000 scripted matches, now about 0.03 s (the rest is done along the way, in the flusher thread)."""

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

_ID_PREFIX = b'{"match_id":"'


def _line_id(line: bytes) -> str | None:
    """The match id of one complete ``matches.jsonl`` line (None if it is no record). A record written by
    :meth:`MatchRecord.to_json` starts with its id (hex digits), read without parsing the line; older lines are
    parsed."""
    if line.startswith(_ID_PREFIX):
        end = line.find(b'"', len(_ID_PREFIX))
        if end > 0:
            return line[len(_ID_PREFIX) : end].decode("ascii", "replace")
    try:
        check_bounds(line)
        match_id = json.loads(line)["match_id"]
    except (ValueError, KeyError, TypeError):  # (a Refused line is a ValueError)
        return None
    return match_id if isinstance(match_id, str) else None


def committed_ids(run_dir: str | Path) -> set[str]:
    """Ids of every match committed to ``run_dir``, read without a lock or a write: those in the database and those
    whose whole line is in ``matches.jsonl`` but not yet in the database (a run killed between the two: the next
    writer inserts them). Empty for a directory without results."""
    ids: set[str] = set()
    if (Path(run_dir) / DB_NAME).exists():
        with Store(run_dir, read_only=True) as store:
            ids = store.completed_ids()
    path = Path(run_dir) / JSONL_NAME
    if path.exists():
        with open(path, "rb") as handle:
            for line in handle:
                if line.endswith(b"\n"):  # a torn last line was never committed
                    match_id = _line_id(line)
                    if match_id is not None and match_id not in ids and _whole_record(line[:-1]) is not None:
                        ids.add(match_id)
    return ids


def _whole_record(line: bytes) -> str | None:
    """The text of a ``matches.jsonl`` line the database lacks, if it is a whole record (else None)."""
    try:
        text = line.decode("utf-8")
        check_bounds(line)
        data = json.loads(text)
    except ValueError:
        return None
    return text if isinstance(data, dict) and isinstance(data.get("match_id"), str) else None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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
        admission: Admission | None = None,
    ) -> None:
        """Open (or create) the store in ``run_dir``.

        A writer (the default) holds the directory's :class:`RunLock`: ``run_lock`` when the caller holds one
        already, else its own, taken here (waiting up to ``wait_s``) and released by :meth:`close`. It then
        repairs ``matches.jsonl`` from the database if a crash left them apart. With ``spec_hash`` the store is
        bound to that spec: a new store records it, an existing one made by another spec raises
        :class:`ResumeMismatchError`.

        ``read_only``: open an existing store for reading only: no lock, no repair, no write of any kind.

        ``admission``: what a record read back must pass (:mod:`~deepeval_games.app.storage.admission`; None: all but
        the plan's check). A writer given one quarantines the stored records it refuses; readers skip them.

        Raises:
            RunLockedError: another process writes the directory.
            DeepEvalError: no store to read, or the directory cannot be used.
        """
        self.run_dir = Path(run_dir)
        self.read_only = read_only
        self._lock = threading.Lock()
        self._run_lock: RunLock | None = None
        self._owns_lock = False
        self._log = threading.Condition(threading.Lock())
        """Guards the commit log: ``matches.jsonl``'s descriptor, the pending batch, the committed ids, the flusher.
        Taken before ``self._lock`` (the database's), never while holding it."""
        self._pending: list[tuple[str, str | bytes]] = []
        """(match id, record text or its UTF-8 bytes) written to ``matches.jsonl``, not yet inserted into the
        database."""
        self._last_insert = time.monotonic()
        """When the last batch was taken for the database (group commit: at most one batch per interval)."""
        self._ids: set[str] = set()
        """Ids of every committed match (in the database or pending): a commit never asks the database."""
        self._flusher: threading.Thread | None = None
        self._closing = False
        self._jsonl_fd: int | None = None
        self.admission = admission if admission is not None else Admission()
        self.refused: list[Refused] = []
        """Records :meth:`records` skipped (and the lines the writer quarantined at open)."""
        if read_only:
            self._db = self._connect_read_only()
            return
        self._run_lock = run_lock if run_lock is not None else RunLock(self.run_dir, wait_s=wait_s)
        self._owns_lock = run_lock is None or not run_lock.held
        self._run_lock.acquire()
        try:
            try:
                self._db = sqlite3.connect(self.run_dir / DB_NAME, check_same_thread=False, isolation_level=None)
                self._db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # a new database only; an existing one keeps its
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.executescript(_SCHEMA)
                page_size = self._db.execute("PRAGMA page_size").fetchone()[0]
                self._db.execute(f"PRAGMA wal_autocheckpoint={max(1, WAL_CHECKPOINT_BYTES // int(page_size))}")
            except (OSError, sqlite3.Error) as exc:
                raise DeepEvalError(f"cannot use {self.run_dir} as a run directory: {exc}") from exc
            if spec_hash is not None:
                self._bind(spec_hash, spec_text or "")
            self._recover_jsonl()
            if admission is not None:
                self._admit_stored()
            self._ids = {row[0] for row in self._db.execute("SELECT match_id FROM matches")}
            try:
                self._jsonl_fd = os.open(self.run_dir / JSONL_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as exc:
                raise DeepEvalError(f"cannot use {self.run_dir} as a run directory: {exc}") from exc
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

    flush_interval_s: float = 0.1
    """Batches are inserted into the database at most this often (group commit): a match committed after a quiet
    spell is inserted at once, under a stream of commits each waits at most this long in ``matches.jsonl``."""
    batch_max: int = 256
    """A batch is inserted into the database at once when it holds this many matches."""

    def completed_ids(self) -> set[str]:
        """Ids of every committed match (a writer inserts its pending batch first)."""
        self.flush()
        return {row[0] for row in self._db.execute("SELECT match_id FROM matches")}

    def holds(self, match_id: str) -> bool:
        """Whether the match ``match_id`` is committed: a writer answers from the ids it keeps (those of
        :meth:`completed_ids`, pending ones included), without a query or a new string; a reader asks the database."""
        if not self.read_only:
            with self._log:
                return match_id in self._ids
        row = self._db.execute("SELECT 1 FROM matches WHERE match_id = ?", (match_id,)).fetchone()
        return row is not None

    def held_ids(self) -> AbstractSet[str]:
        """The ids a writer keeps of every committed match (those :meth:`holds` answers from), not a copy: read it,
        never change it (it grows with every commit). A run whose plan holds them all keeps this set as its
        :attr:`~deepeval_games.app.execution.run_result.RunResult.match_ids` rather than a second one."""
        self._writable()
        return self._ids

    def stamp(self) -> str:
        """A short text that changes whenever a match or a judgement reaches the database (rows are never
        removed, so their counts and last sequence numbers tell): how ``deepeval-games view`` notices a commit."""
        self.flush()
        matches = self._db.execute("SELECT count(*), coalesce(max(seq), 0) FROM matches").fetchone()
        judged = self._db.execute("SELECT 1 FROM sqlite_master WHERE name='judgements'").fetchone()
        judgements = self._db.execute("SELECT count(*) FROM judgements").fetchone()[0] if judged else 0
        return f"{matches[0]}.{matches[1]}.{judgements}"

    def commit(self, record: MatchRecord) -> bool:
        """Store a finished match once; returns False if its id was already stored.

        When it returns True the record's line is in ``matches.jsonl`` (one ``write()``): the match survives a
        ``kill -9``. It reaches the database with its batch (see the module documentation)."""
        return self.commit_json(record.match_id, record.to_json_bytes())  # serialised once, never decoded

    def commit_json(self, match_id: str, text: str | bytes) -> bool:
        """:meth:`commit` for a record already serialised by :meth:`MatchRecord.to_json` (``text``, one line; or
        its UTF-8 bytes, as :meth:`MatchRecord.to_json_bytes` writes them; a final newline is left out), e.g. in a
        worker process: the driver stores it without parsing, decoding or encoding it again. ``match_id`` must be the
        record's.

        Raises:
            ValueError: ``text`` is not one line.
            OSError: ``matches.jsonl`` cannot be written (nothing of the line is left in it).
        """
        return self.commit_many_json(((match_id, text),))[0]

    def commit_many_json(self, items: Iterable[tuple[str, str | bytes]]) -> list[bool]:
        """:meth:`commit_json` for several records at once (``(match_id, text)`` pairs): the lines of those not
        stored yet are written with one ``writev`` (when it returns, each of them survives a ``kill -9``) and join
        the pending batch together; per record, whether it was stored now (False: its id was stored already, or
        came earlier in ``items``).

        Raises:
            ValueError: a text is not one line, or bytes are not UTF-8 (nothing of ``items`` is stored).
            OSError: ``matches.jsonl`` cannot be written (nothing of ``items`` is left in it).
        """
        self._writable()
        lines: list[tuple[str, bytes]] = []
        for match_id, text in items:
            if isinstance(text, str):
                data = text.encode("utf-8")
            else:  # stored as TEXT without being decoded: invalid UTF-8 would leave a store nobody can read
                data = text
                if not data.isascii():
                    data.decode("utf-8")  # raises UnicodeDecodeError (a ValueError): nothing of items is stored
            end = data.find(b"\n")
            if end >= 0:
                if end != len(data) - 1:
                    raise ValueError(f"match record {match_id!r}: a stored record is one line of JSON")
                data = data[:-1]
            lines.append((match_id, data))
        done = [False] * len(lines)
        with self._log:
            if self._jsonl_fd is None:
                raise DeepEvalError(f"the store of {self.run_dir} is closed")
            ids = self._ids
            parts: list[bytes] = []
            new: list[tuple[str, bytes]] = []
            new_ids: set[str] = set()
            for i, (match_id, data) in enumerate(lines):
                if match_id in ids or match_id in new_ids:
                    continue
                parts += (data, b"\n")
                new.append((match_id, data))
                new_ids.add(match_id)
                done[i] = True
            if not new:
                return done
            self._append(parts)
            ids |= new_ids
            self._pending.extend(new)
            pending = len(self._pending)
            behind = pending >= 4 * self.batch_max  # the flusher cannot keep up (a starved thread)
            if self._flusher is None:
                self._flusher = threading.Thread(target=self._flush_loop, name="store-flusher", daemon=True)
                self._flusher.start()
            elif pending == len(new) or pending >= self.batch_max:
                self._log.notify()
        if behind:  # insert here: the pending batch, and memory, stay bounded
            self._drain(background=True)
        return done

    def commit_many(self, records: Iterable[MatchRecord]) -> list[bool]:
        """:meth:`commit` for several records; per record, whether it was stored now."""
        return self.commit_many_json((record.match_id, record.to_json_bytes()) for record in records)

    def _append(self, parts: list[bytes]) -> None:
        """Write ``parts`` (whole lines, newlines included) at the end of ``matches.jsonl`` with one ``writev`` (a
        line is not copied to add its newline, nor joined to the next); on failure cut the file back to where it
        ended."""
        assert self._jsonl_fd is not None
        total = sum(map(len, parts))
        start = None
        try:
            written = os.writev(self._jsonl_fd, parts[:_IOV_MAX])
            if written < total:  # a short write (a full disk, or more parts than one writev takes): the rest, or undo
                start = os.fstat(self._jsonl_fd).st_size - written
                view = memoryview(b"".join(parts))
                while written < total:
                    step = os.write(self._jsonl_fd, view[written:])
                    if step <= 0:
                        raise OSError(f"cannot write {self.run_dir / JSONL_NAME}")
                    written += step
        except OSError:
            if start is not None:
                os.ftruncate(self._jsonl_fd, start)
            raise

    def flush(self) -> None:
        """Insert the pending batch into the database now, and wait for a batch being inserted (a no-op for
        readers).

        Raises:
            sqlite3.Error: the database refused the batch (its matches stay committed in ``matches.jsonl``).
        """
        if not self.read_only:
            self._drain(background=False)

    def _flush_loop(self) -> None:
        """The flusher thread: inserts the pending batch ``flush_interval_s`` after the previous one (at once after
        a quiet spell) or when it is ``batch_max`` long; ends after a second without commits (the next commit starts
        another) or when the store closes."""
        while True:
            with self._log:
                if not self._pending:
                    if not self._closing:
                        self._log.wait(1.0)
                    if not self._pending:
                        self._flusher = None
                        return
                    continue
                wait = self._last_insert + self.flush_interval_s - time.monotonic()
                if wait > 0 and len(self._pending) < self.batch_max and not self._closing:
                    self._log.wait(wait)
                    continue
            self._drain(background=True)

    def _drain(self, *, background: bool) -> None:
        """Take the pending batch and insert it in one transaction. Batches reach the database in the order of
        ``matches.jsonl``: the database lock is taken before the commit log's is let go."""
        with self._log:
            batch, self._pending = self._pending, []
            self._last_insert = time.monotonic()
            self._lock.acquire()
        try:
            failed = None
            try:
                self._insert_locked(batch)
            except sqlite3.Error as exc:
                failed = exc
        finally:
            self._lock.release()
        if failed is None:
            return
        with self._log:  # still committed (in matches.jsonl): inserted by a later batch, or when a writer opens
            self._pending[:0] = batch
        if not background:
            raise failed
        log.warning(
            "%s: could not insert %d committed matches into %s yet: %s", self.run_dir, len(batch), DB_NAME, failed
        )

    def _insert_locked(self, batch: Sequence[tuple[str, str | bytes]]) -> None:
        """Insert ``batch`` in one transaction (the caller holds ``self._lock``). A record given as bytes (a line,
        its newline included or not) is stored as TEXT, read as UTF-8 by SQLite itself: it is never decoded here."""
        if not batch:
            return
        at = _now()
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany(
                "INSERT OR IGNORE INTO matches (match_id, record, committed_at) VALUES (?, CAST(? AS TEXT), ?)",
                [(match_id, text, at) for match_id, text in batch],
            )
            self._db.execute("COMMIT")
        except sqlite3.Error:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

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

    def records(self, *, rebuild_turns: bool = True) -> Iterator[MatchRecord]:
        """Every committed match, in commit order, migrated to the current record version and validated
        (``rebuild_turns``: see :meth:`MatchRecord.from_json`). A record the store's admission refuses is skipped
        (counted in :attr:`refused`, one warning line for all of them).
        """
        self.flush()
        refused = len(self.refused)
        for (text,) in self._db.execute("SELECT record FROM matches ORDER BY seq"):
            try:
                yield self.admission.admit(text, rebuild_turns=rebuild_turns)
            except Refused as exc:
                self.refused.append(exc)
        if len(self.refused) > refused:
            skipped = self.refused[refused:]
            log.warning(
                "skipped %d record%s of %s that admission refuses (first: %s); running its spec into it again "
                "quarantines %s and plays %s again",
                len(skipped),
                "" if len(skipped) == 1 else "s",
                self.run_dir,
                skipped[0],
                "it" if len(skipped) == 1 else "them",
                "its match" if len(skipped) == 1 else "their matches",
            )

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

    def _recover_jsonl(self) -> None:
        """Make ``matches.jsonl`` and the database agree after a crash (the writer, under its lock, at open).

        Complete lines the database lacks (a batch a killed run had not inserted yet) are inserted, in file
        order; a torn last line (a run killed mid-write: its commit never returned) is cut off. If the two still
        disagree (lines missing or out of order, unreadable lines), the file is rewritten from the database. The
        file is streamed: memory does not grow with the run."""
        path = self.run_dir / JSONL_NAME
        if not path.exists():
            if self._db.execute("SELECT 1 FROM matches LIMIT 1").fetchone():
                self._rewrite_jsonl()
            return
        stored = self._db.execute("SELECT match_id FROM matches ORDER BY seq")
        refused: list[tuple[Refused, str | bytes]] = []
        missing: list[tuple[str, str]] = []
        missing_ids: set[str] = set()
        in_order, torn_at, offset = True, None, 0
        with open(path, "rb") as handle:
            for line in handle:
                if not line.endswith(b"\n"):
                    torn_at = offset
                    break
                offset += len(line)
                match_id = _line_id(line)
                row = stored.fetchone() if in_order and not missing else None
                if match_id is not None and row is not None and row[0] == match_id:
                    continue
                if row is not None:  # the database has a match here that the file lacks
                    in_order = False
                if match_id is not None and (
                    match_id in missing_ids
                    or self._db.execute("SELECT 1 FROM matches WHERE match_id = ?", (match_id,)).fetchone()
                ):
                    in_order = False  # a stored match out of place
                    continue
                admitted = self._admitted_line(line[:-1], match_id, refused)
                if admitted is None:
                    in_order = False  # a refused line: the file is rewritten from the database
                    continue
                missing.append(admitted)
                missing_ids.add(admitted[0])
        if in_order and not missing and stored.fetchone() is not None:
            in_order = False  # the database holds matches the file lacks
        stored.close()
        self._quarantined(refused)
        if missing:
            log.warning("%s: %d committed matches recovered from %s", self.run_dir, len(missing), JSONL_NAME)
            with self._lock:
                self._insert_locked(missing)
        if not in_order:
            self._rewrite_jsonl()
        elif torn_at is not None:
            with open(path, "r+b") as handle:
                handle.truncate(torn_at)

    def _admitted_line(
        self, line: bytes, match_id: str | None, refused: list[tuple[Refused, str | bytes]]
    ) -> tuple[str, str] | None:
        """(match id, text) of a ``matches.jsonl`` line the database lacks, if admission admits it; else None, the
        line added to ``refused``."""
        try:
            record = self.admission.admit(line, rebuild_turns=False)
            if match_id is None:
                raise Refused(record.match_id, "its match id is not where a record has it")
            if record.match_id != match_id:
                raise Refused(match_id, f"the line names two match ids ({match_id!r}, {record.match_id!r})")
            text = line.decode("utf-8")
        except Refused as exc:
            refused.append((exc, line))
            return None
        except UnicodeDecodeError as exc:
            refused.append((Refused(match_id or "?", f"not UTF-8: {exc}"), line))
            return None
        self.admission.admitted.add(match_id)
        return match_id, text

    def _admit_stored(self) -> None:
        """Admit every record of the database not admitted yet (a writer given an admission, at open): those refused
        are taken out of the database and ``matches.jsonl`` and quarantined, so that their matches are played again."""
        admitted = self.admission.admitted
        refused: list[tuple[Refused, str | bytes]] = []
        seqs: list[int] = []
        for seq, match_id, text in self._db.execute("SELECT seq, match_id, record FROM matches ORDER BY seq"):
            if match_id in admitted:
                continue
            try:
                record = self.admission.admit(text, rebuild_turns=False)
                if record.match_id != match_id:
                    raise Refused(match_id, f"it is stored under another match id ({record.match_id!r})")
            except Refused as exc:
                refused.append((exc, text))
                seqs.append(seq)
                continue
            admitted.add(match_id)
        if not seqs:
            return
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("DELETE FROM matches WHERE seq = ?", [(seq,) for seq in seqs])
            self._db.execute("COMMIT")
        self._quarantined(refused)
        self._rewrite_jsonl()

    def _quarantined(self, refused: list[tuple[Refused, str | bytes]]) -> None:
        """Move ``refused`` lines to the quarantine file, with one warning line naming it."""
        if not refused:
            return
        path = quarantine(self.run_dir, refused)
        self.refused += [error for error, _ in refused]
        self.admission.quarantined.update(error.match_id for error, _ in refused)
        count = len(refused)
        log.warning(
            "%s: %d record%s refused and moved to %s (first: %s); %s the run's plan has %s played again",
            self.run_dir,
            count,
            "" if count == 1 else "s",
            path,
            refused[0][0],
            "its match, if" if count == 1 else "those of their matches",
            "it, is" if count == 1 else "are",
        )

    def _rewrite_jsonl(self) -> None:
        """Write ``matches.jsonl`` afresh from the database, in commit order (streamed)."""
        path = self.run_dir / JSONL_NAME
        tmp = path.with_suffix(".jsonl.tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            for (record,) in self._db.execute("SELECT record FROM matches ORDER BY seq"):
                handle.write(record + "\n")
        tmp.replace(path)

    def close(self) -> None:
        """Insert the pending batch, close the database (and let go of the run lock this store took)."""
        try:
            if not self.read_only:
                with self._log:
                    self._closing = True
                    self._log.notify_all()
                    flusher = self._flusher
                if flusher is not None:
                    flusher.join()
                try:
                    self.flush()
                except sqlite3.Error as exc:  # the lines are in matches.jsonl: the next writer inserts them
                    log.warning("%s: committed matches left to recover from %s: %s", self.run_dir, JSONL_NAME, exc)
                finally:
                    with self._log:
                        if self._jsonl_fd is not None:
                            os.close(self._jsonl_fd)
                            self._jsonl_fd = None
                self._leave_no_side_files()
                self.admission.admitted |= self._ids  # committed by this run: not checked when it opens the store again
            self._db.close()
        finally:
            if self._run_lock is not None and self._owns_lock:
                self._run_lock.release()
            self._run_lock = None

    def _leave_no_side_files(self) -> None:
        """A writer's last step: fold the write-ahead log into the database and leave WAL mode, so the run directory
        keeps no ``-wal``/``-shm`` files and a later reader creates none. While another connection reads (a live
        ``view``), SQLite refuses and the database stays in WAL mode; a crash leaves the log, which the next writer
        replays when it opens the store (and puts back in WAL mode)."""
        try:
            with self._lock:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self._db.execute("PRAGMA journal_mode=DELETE")
        except sqlite3.Error as exc:
            log.debug("%s: the store stays in WAL mode: %s", self.run_dir, exc)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
