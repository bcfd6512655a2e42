"""Durable results of one run directory: a :class:`Store` composes its run lock, its SQLite index and its journal.

A match is committed once, whole, keyed by its stable id; a killed run resumes with only the missing ids. The pieces,
each a module of this folder:

- :mod:`~deepeval_games.app.storage.run_lock`: one writer at a time. A writing store holds the run directory's
  :class:`RunLock` (``run.lock``, an ``flock`` that the kernel releases when its process dies, so a killed run never
  leaves a stale lock). A second writer waits for it up to its ``wait_s`` and then refuses with
  :class:`RunLockedError`, naming the holder's pid and host.
- :mod:`~deepeval_games.app.storage.journal`: ``matches.jsonl``. :meth:`Store.commit` writes the record's line with
  one ``write()`` and only then returns True: from that moment the match survives a ``kill -9``. A flusher thread
  inserts the pending lines into the index in one transaction per batch (group commit): at most one batch per
  :attr:`Store.flush_interval_s` (0.1 s; a commit after a quiet spell goes at once), or every :attr:`Store.batch_max`
  records, and at :meth:`Store.flush`, :meth:`Store.completed_ids`, :meth:`Store.records` and :meth:`Store.close`.
  Readers see a committed match in the index at most one batch interval later.
- :mod:`~deepeval_games.app.storage.index`: ``results.sqlite`` (WAL, ``synchronous=NORMAL``), what readers query:
  the matches, the failed attempts (infrastructure failures, bugs: never among the results) and re-judged verdicts.
  It remembers the hash of the spec that created it and refuses to mix in results of a different spec.
- :mod:`~deepeval_games.app.storage.repair`: a writer opening the directory completes the index from the journal
  (a run killed mid-batch), drops a torn last line (a run killed mid-write) and rewrites the journal from the index
  if the two disagree otherwise. Nothing is ``fsync``-ed per match: after a power loss the repaired files are
  consistent but may lack the newest matches, and a resume replays them, same seeds.
- :mod:`~deepeval_games.app.storage.admission`: records are stored as written (``MatchRecord.to_json``) and read
  back through ``MatchRecord.from_dict``, which migrates records of an older schema version (the run directory of an
  older version still loads, reports and resumes); a record admission refuses is skipped, or quarantined by a writer.

Readers (``Store(run_dir, read_only=True)``: ``report``, ``tables``, analysis) open the index read-only, take no lock
and never touch ``matches.jsonl``; only the writer, under its lock, completes the index from the journal and repairs
the journal from the index.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path

from deepeval_games.app.storage.admission import Admission, Refused
from deepeval_games.app.storage.index import (
    DB_NAME,
    PAGE_SIZE,
    WAL_CHECKPOINT_BYTES,
    ResultIndex,
    open_read_only,
    set_aside,
    unreadable,
)
from deepeval_games.app.storage.journal import JSONL_NAME, Journal, line_id, whole_record
from deepeval_games.app.storage.repair import admit_stored, recover_journal
from deepeval_games.app.storage.run_lock import LOCK_NAME, RunLock, RunLockedError
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.judgements import JudgementRecord
from deepeval_games.core.records import MatchRecord

__all__ = [
    "DB_NAME",
    "JSONL_NAME",
    "LOCK_NAME",
    "PAGE_SIZE",
    "WAL_CHECKPOINT_BYTES",
    "RunLock",
    "RunLockedError",
    "Store",
    "committed_ids",
    "read_results",
    "require_results",
]

log = logging.getLogger(__name__)


def read_results(run_dir: str | Path) -> sqlite3.Connection:
    """A read-only connection to a run directory's database (:func:`~.index.open_read_only`; the caller closes it).

    Raises:
        DeepEvalError: the directory has no database, or SQLite cannot read it; where its ``matches.jsonl`` is there,
            the error says that the run's own command builds the database again from it.
    """
    try:
        return open_read_only(run_dir)
    except DeepEvalError as exc:
        raise _rebuild_hint(run_dir, exc) from exc


def _rebuild_hint(run_dir: str | Path, error: DeepEvalError) -> DeepEvalError:
    """``error`` (no database, or one SQLite cannot read), saying how to build it again where the journal is there
    (and a run could write the directory: an archived one is read as it is)."""
    if not (Path(run_dir) / JSONL_NAME).is_file() or not os.access(run_dir, os.W_OK):
        return error
    return DeepEvalError(
        f"{error}; its {JSONL_NAME} holds the matches: run the same `deepeval-games run` command again "
        f"to build {DB_NAME} from it"
    )


def require_results(run_dir: str | Path) -> None:
    """Check that a run directory has results a reader can open (:func:`read_results`'s errors)."""
    read_results(run_dir).close()


def committed_ids(run_dir: str | Path) -> set[str]:
    """Ids of every match committed to ``run_dir``, read without a lock or a write: those in the database and those
    whose whole line is in ``matches.jsonl`` but not yet in the database (a run killed between the two: the next
    writer inserts them; a database SQLite cannot read counts as empty: the next writer sets it aside and builds it
    again from the journal). Empty for a directory without results."""
    ids: set[str] = set()
    if (Path(run_dir) / DB_NAME).exists():
        try:
            with Store(run_dir, read_only=True) as store:
                ids = store.completed_ids()
        except DeepEvalError:
            ids = set()
    path = Path(run_dir) / JSONL_NAME
    if path.exists():
        with open(path, "rb") as handle:
            for line in handle:
                if line.endswith(b"\n"):  # a torn last line was never committed
                    match_id = line_id(line)
                    if match_id is not None and match_id not in ids and whole_record(line[:-1]) is not None:
                        ids.add(match_id)
    return ids


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
        check_rebuild: Callable[[], None] | None = None,
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

        A database SQLite cannot read (not a database, or malformed, found opening it or completing it from the
        journal) is moved aside (:func:`~.index.set_aside`, nothing deleted) and built again from ``matches.jsonl``.
        ``check_rebuild`` is called first, whenever the database is to be built from the journal (moved aside, or
        missing while the journal is there): it raises to refuse (the run's manifest names another spec, whose
        hash the database would have kept).

        Raises:
            RunLockedError: another process writes the directory.
            DeepEvalError: no store to read, or the directory cannot be used.
        """
        self.run_dir = Path(run_dir)
        self.read_only = read_only
        self._run_lock: RunLock | None = None
        self._owns_lock = False
        self._journal: Journal | None = None
        self.admission = admission if admission is not None else Admission()
        self.refused: list[Refused] = []
        """Records :meth:`records` skipped (and the lines the writer quarantined at open)."""
        if read_only:
            try:
                self._index = ResultIndex(self.run_dir, read_only=True)
            except DeepEvalError as exc:
                raise _rebuild_hint(self.run_dir, exc) from exc
            return
        self._run_lock = run_lock if run_lock is not None else RunLock(self.run_dir, wait_s=wait_s)
        self._owns_lock = run_lock is None or not run_lock.held
        self._run_lock.acquire()
        try:
            self._open_writer(spec_hash, spec_text, admission is not None, check_rebuild)
        except BaseException:
            if self._owns_lock:
                self._run_lock.release()
            raise

    def _open_writer(
        self, spec_hash: str | None, spec_text: str | None, admit: bool, check_rebuild: Callable[[], None] | None
    ) -> None:
        """Open the index, complete it from the journal and admit what is stored; a database SQLite cannot read is
        moved aside and built again from the journal, once."""
        rebuilt = False
        journal_only = (self.run_dir / JSONL_NAME).exists() and not (self.run_dir / DB_NAME).exists()
        if check_rebuild is not None and journal_only:
            check_rebuild()
        while True:
            index: ResultIndex | None = None
            try:
                index = ResultIndex(self.run_dir, read_only=False)
                if spec_hash is not None:
                    index.bind(spec_hash, spec_text or "")
                recover_journal(self.run_dir, index, self.admission, self.refused)
                if admit:
                    admit_stored(self.run_dir, index, self.admission, self.refused)
                self._index = index
                self._journal = Journal(self.run_dir, index, index.match_ids())
                return
            except (DeepEvalError, sqlite3.DatabaseError) as exc:
                if index is not None:
                    index.close()
                if not unreadable(exc):
                    raise
                if rebuilt:
                    raise DeepEvalError(f"cannot use {self.run_dir} as a run directory: {exc}") from exc
                if check_rebuild is not None:
                    check_rebuild()
                set_aside(self.run_dir, exc)
                rebuilt = True

    @property
    def flush_interval_s(self) -> float:
        """Batches are inserted into the database at most this often (group commit): a match committed after a quiet
        spell is inserted at once, under a stream of commits each waits at most this long in ``matches.jsonl``."""
        return self._journal.flush_interval_s if self._journal is not None else Journal.flush_interval_s

    @flush_interval_s.setter
    def flush_interval_s(self, value: float) -> None:
        self._writer().flush_interval_s = value

    @property
    def batch_max(self) -> int:
        """A batch is inserted into the database at once when it holds this many matches."""
        return self._journal.batch_max if self._journal is not None else Journal.batch_max

    @batch_max.setter
    def batch_max(self, value: int) -> None:
        self._writer().batch_max = value

    def _writer(self) -> Journal:
        if self._journal is None:
            raise DeepEvalError(f"the store of {self.run_dir} was opened read-only")
        return self._journal

    def completed_ids(self) -> set[str]:
        """Ids of every committed match (a writer inserts its pending batch first)."""
        self.flush()
        return self._index.match_ids()

    def holds(self, match_id: str) -> bool:
        """Whether the match ``match_id`` is committed: a writer answers from the ids it keeps (those of
        :meth:`completed_ids`, pending ones included), without a query or a new string; a reader asks the database."""
        if self._journal is not None:
            return self._journal.holds(match_id)
        return self._index.holds(match_id)

    def held_ids(self) -> AbstractSet[str]:
        """The ids a writer keeps of every committed match (those :meth:`holds` answers from), not a copy: read it,
        never change it (it grows with every commit). A run whose plan holds them all keeps this set as its
        :attr:`~deepeval_games.app.execution.run_result.RunResult.match_ids` rather than a second one."""
        return self._writer().ids

    def stamp(self) -> str:
        """A short text that changes whenever a match or a judgement reaches the database (rows are never
        removed, so their counts and last sequence numbers tell): how ``deepeval-games view`` notices a commit."""
        self.flush()
        return self._index.stamp()

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
        return self._writer().append_many(items)

    def commit_many(self, records: Iterable[MatchRecord]) -> list[bool]:
        """:meth:`commit` for several records; per record, whether it was stored now."""
        return self.commit_many_json((record.match_id, record.to_json_bytes()) for record in records)

    def flush(self) -> None:
        """Insert the pending batch into the database now, and wait for a batch being inserted (a no-op for
        readers).

        Raises:
            sqlite3.Error: the database refused the batch (its matches stay committed in ``matches.jsonl``).
        """
        if self._journal is not None:
            self._journal.flush()

    def log_attempt(self, match_id: str, kind: str, error: str) -> None:
        """Remember a failed attempt (``infra`` or ``error``); it is not a result."""
        self._writer()
        self._index.log_attempt(match_id, kind, error)

    def attempts(self) -> list[tuple[str, str, str]]:
        """Every failed attempt as (match_id, kind, error)."""
        return self._index.attempts()

    def records(self, *, rebuild_turns: bool = True) -> Iterator[MatchRecord]:
        """Every committed match, in commit order, migrated to the current record version and validated
        (``rebuild_turns``: see :meth:`MatchRecord.from_json`). A record the store's admission refuses is skipped
        (counted in :attr:`refused`, one warning line for all of them).
        """
        self.flush()
        refused = len(self.refused)
        for text in self._index.record_texts():
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

    def judgement_ids(self) -> set[str]:
        """Ids of every stored judgement."""
        return self._index.judgement_ids()

    def commit_judgement(self, judgement: JudgementRecord) -> bool:
        """Store a judgement once (never a match record); returns False if its id was already stored."""
        self._writer()
        return self._index.commit_judgement(judgement)

    def judgements(self) -> Iterator[JudgementRecord]:
        """Every stored judgement, in commit order (none for a run that was never re-judged).

        Raises:
            RecordError: a stored judgement does not validate, or is of a newer version than this code.
        """
        return self._index.judgements()

    def close(self) -> None:
        """Insert the pending batch, close the database (and let go of the run lock this store took)."""
        try:
            if self._journal is not None:
                self._journal.close()
                self._index.leave_no_side_files()
                # committed by this run: not checked when it opens the store again
                self.admission.admitted |= self._journal.ids
            self._index.close()
        finally:
            if self._run_lock is not None and self._owns_lock:
                self._run_lock.release()
            self._run_lock = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
