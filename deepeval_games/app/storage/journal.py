"""The run directory's journal (``matches.jsonl``): a commit is one ``write()``, and a flusher thread group-commits
the lines into the index.

**Commits are batched** (issue 14). :meth:`Journal.append_many` writes the records' lines to ``matches.jsonl`` with
one ``writev`` (an ``O_APPEND`` descriptor held open) and only then returns: from that moment the matches survive a
``kill -9`` of the process, since the bytes are in the operating system. The index
(:class:`~deepeval_games.app.storage.index.ResultIndex`) receives the pending lines in one transaction per batch
(group commit, by a flusher thread): at most one batch per :attr:`Journal.flush_interval_s` (0.1 s; a commit after a
quiet spell goes at once), or every :attr:`Journal.batch_max` records, and at :meth:`Journal.flush` and
:meth:`Journal.close`. ``matches.jsonl`` is thus the store's write-ahead log; what a writer does with it when it opens
a directory a killed run left is :mod:`~deepeval_games.app.storage.repair`'s. Nothing is ``fsync``-ed per match.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from deepeval_games.app.storage.admission import check_bounds
from deepeval_games.app.storage.index import DB_NAME, ResultIndex
from deepeval_games.core.errors import DeepEvalError

__all__ = ["JSONL_NAME", "Journal", "line_id", "whole_record"]

JSONL_NAME = "matches.jsonl"
_IOV_MAX = 1024
"""The most parts one ``writev`` takes (Linux's ``IOV_MAX``)."""

log = logging.getLogger(__name__)

_ID_PREFIX = b'{"match_id":"'


def line_id(line: bytes) -> str | None:
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


def whole_record(line: bytes) -> str | None:
    """The text of a ``matches.jsonl`` line (without its newline), if it is a whole record (else None)."""
    try:
        text = line.decode("utf-8")
        check_bounds(line)
        data = json.loads(text)
    except ValueError:
        return None
    return text if isinstance(data, dict) and isinstance(data.get("match_id"), str) else None


def _one_line(match_id: str, text: str | bytes) -> bytes:
    """The UTF-8 bytes of a serialised record, without a final newline.

    Raises:
        ValueError: ``text`` is not one line, or bytes are not UTF-8.
    """
    if isinstance(text, str):
        data = text.encode("utf-8")
    else:  # stored as TEXT without being decoded: invalid UTF-8 would leave a store nobody can read
        data = text
        if not data.isascii():
            data.decode("utf-8")  # raises UnicodeDecodeError (a ValueError)
    end = data.find(b"\n")
    if end >= 0:
        if end != len(data) - 1:
            raise ValueError(f"match record {match_id!r}: a stored record is one line of JSON")
        data = data[:-1]
    return data


class Journal:
    """A writer's ``matches.jsonl``: the committed ids, the pending batch and the flusher thread that inserts it."""

    flush_interval_s: float = 0.1
    """Batches are inserted into the index at most this often (group commit): a match committed after a quiet
    spell is inserted at once, under a stream of commits each waits at most this long in ``matches.jsonl``."""
    batch_max: int = 256
    """A batch is inserted into the index at once when it holds this many matches."""

    def __init__(self, run_dir: Path, index: ResultIndex, ids: set[str]) -> None:
        """Open ``run_dir``'s ``matches.jsonl`` for appending (created if missing); ``ids`` are the committed ones.

        Raises:
            DeepEvalError: the file cannot be opened.
        """
        self.run_dir = run_dir
        self.index = index
        self._log = threading.Condition(threading.Lock())
        """Guards the descriptor, the pending batch, the committed ids, the flusher. Taken before the index's lock,
        never while holding it."""
        self._pending: list[tuple[str, str | bytes]] = []
        """(match id, record text or its UTF-8 bytes) written to ``matches.jsonl``, not yet inserted into the index."""
        self._last_insert = time.monotonic()
        """When the last batch was taken for the index (group commit: at most one batch per interval)."""
        self.ids = ids
        """Ids of every committed match (in the index or pending): a commit never asks the index. Read it, never
        change it."""
        self._flusher: threading.Thread | None = None
        self._closing = False
        try:
            self._fd: int | None = os.open(run_dir / JSONL_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise DeepEvalError(f"cannot use {run_dir} as a run directory: {exc}") from exc

    def holds(self, match_id: str) -> bool:
        """Whether ``match_id`` is committed (in the index or pending)."""
        with self._log:
            return match_id in self.ids

    def append_many(self, items: Iterable[tuple[str, str | bytes]]) -> list[bool]:
        """Write the lines of the records of ``items`` not committed yet with one ``writev`` (when it returns, each of
        them survives a ``kill -9``); they join the pending batch together. Per record, whether it was committed now.

        Raises:
            ValueError: a text is not one line, or bytes are not UTF-8 (nothing of ``items`` is written).
            OSError: ``matches.jsonl`` cannot be written (nothing of ``items`` is left in it).
            DeepEvalError: the journal is closed.
        """
        lines = [(match_id, _one_line(match_id, text)) for match_id, text in items]
        done = [False] * len(lines)
        with self._log:
            if self._fd is None:
                raise DeepEvalError(f"the store of {self.run_dir} is closed")
            ids = self.ids
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

    def _append(self, parts: list[bytes]) -> None:
        """Write ``parts`` (whole lines, newlines included) at the end of ``matches.jsonl`` with one ``writev`` (a
        line is not copied to add its newline, nor joined to the next); on failure cut the file back to where it
        ended."""
        assert self._fd is not None
        total = sum(map(len, parts))
        start = None
        try:
            written = os.writev(self._fd, parts[:_IOV_MAX])
            if written < total:  # a short write (a full disk, or more parts than one writev takes): the rest, or undo
                start = os.fstat(self._fd).st_size - written
                view = memoryview(b"".join(parts))
                while written < total:
                    step = os.write(self._fd, view[written:])
                    if step <= 0:
                        raise OSError(f"cannot write {self.run_dir / JSONL_NAME}")
                    written += step
        except OSError:
            if start is not None:
                os.ftruncate(self._fd, start)
            raise

    def flush(self) -> None:
        """Insert the pending batch into the index now, and wait for a batch being inserted.

        Raises:
            sqlite3.Error: the index refused the batch (its matches stay committed in ``matches.jsonl``).
        """
        self._drain(background=False)

    def _flush_loop(self) -> None:
        """The flusher thread: inserts the pending batch ``flush_interval_s`` after the previous one (at once after
        a quiet spell) or when it is ``batch_max`` long; ends after a second without commits (the next commit starts
        another) or when the journal closes."""
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
        """Take the pending batch and insert it in one transaction. Batches reach the index in the order of
        ``matches.jsonl``: the index's lock is taken before the journal's is let go."""
        with self._log:
            batch, self._pending = self._pending, []
            self._last_insert = time.monotonic()
            self.index.lock.acquire()
        try:
            failed = None
            try:
                self.index.insert_locked(batch)
            except sqlite3.Error as exc:
                failed = exc
        finally:
            self.index.lock.release()
        if failed is None:
            return
        with self._log:  # still committed (in matches.jsonl): inserted by a later batch, or when a writer opens
            self._pending[:0] = batch
        if not background:
            raise failed
        log.warning(
            "%s: could not insert %d committed matches into %s yet: %s", self.run_dir, len(batch), DB_NAME, failed
        )

    def close(self) -> None:
        """Stop the flusher, insert the pending batch (if the index refuses it, its lines stay for the next writer)
        and close ``matches.jsonl``."""
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
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None
