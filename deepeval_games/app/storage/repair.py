"""A writer's first step on a run directory: make the journal and the index agree again after a crash, and take out
what admission refuses.

``matches.jsonl`` is the store's write-ahead log (:mod:`~deepeval_games.app.storage.journal`). A writer opening the
directory, under its run lock, inserts the complete lines that the index lacks (a run killed mid-batch), drops a torn
last line (a run killed mid-write; that commit never returned) and rewrites the file from the index if the two
disagree otherwise. After a power loss the repaired files are consistent but may lack the newest matches (those of the
last batches), and a resume replays them, same seeds. A writer given an admission also admits every stored record
once and quarantines those refused, so that their matches are played again.
"""

from __future__ import annotations

import logging
from pathlib import Path

from deepeval_games.app.storage.admission import Admission, Refused, quarantine
from deepeval_games.app.storage.index import ResultIndex
from deepeval_games.app.storage.journal import JSONL_NAME, line_id

__all__ = ["admit_stored", "recover_journal", "rewrite_journal"]

log = logging.getLogger(__name__)


def recover_journal(run_dir: Path, index: ResultIndex, admission: Admission, refused_out: list[Refused]) -> None:
    """Make ``matches.jsonl`` and the index agree after a crash.

    Complete lines the index lacks (a batch a killed run had not inserted yet) are inserted, in file order; a torn
    last line (a run killed mid-write: its commit never returned) is cut off. If the two still disagree (lines missing
    or out of order, unreadable lines), the file is rewritten from the index. The file is streamed: memory does not
    grow with the run. Lines admission refuses are quarantined and added to ``refused_out``."""
    path = run_dir / JSONL_NAME
    if not path.exists():
        if not index.is_empty():
            rewrite_journal(run_dir, index)
        return
    stored = index.ids_in_order()
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
            match_id = line_id(line)
            row = stored.fetchone() if in_order and not missing else None
            if match_id is not None and row is not None and row[0] == match_id:
                continue
            if row is not None:  # the index has a match here that the file lacks
                in_order = False
            if match_id is not None and (match_id in missing_ids or index.holds(match_id)):
                in_order = False  # a stored match out of place
                continue
            admitted = _admitted_line(admission, line[:-1], match_id, refused)
            if admitted is None:
                in_order = False  # a refused line: the file is rewritten from the index
                continue
            missing.append(admitted)
            missing_ids.add(admitted[0])
    if in_order and not missing and stored.fetchone() is not None:
        in_order = False  # the index holds matches the file lacks
    stored.close()
    _quarantined(run_dir, admission, refused, refused_out)
    if missing:
        log.warning("%s: %d committed matches recovered from %s", run_dir, len(missing), JSONL_NAME)
        index.insert(missing)
    if not in_order:
        rewrite_journal(run_dir, index)
    elif torn_at is not None:
        with open(path, "r+b") as handle:
            handle.truncate(torn_at)


def _admitted_line(
    admission: Admission, line: bytes, match_id: str | None, refused: list[tuple[Refused, str | bytes]]
) -> tuple[str, str] | None:
    """(match id, text) of a ``matches.jsonl`` line the index lacks, if admission admits it; else None, the line
    added to ``refused``."""
    try:
        record = admission.admit(line, rebuild_turns=False)
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
    admission.admitted.add(match_id)
    return match_id, text


def admit_stored(run_dir: Path, index: ResultIndex, admission: Admission, refused_out: list[Refused]) -> None:
    """Admit every record of the index not admitted yet: those refused are taken out of the index and
    ``matches.jsonl`` and quarantined (added to ``refused_out``), so that their matches are played again."""
    admitted = admission.admitted
    refused: list[tuple[Refused, str | bytes]] = []
    seqs: list[int] = []
    for seq, match_id, text in index.rows():
        if match_id in admitted:
            continue
        try:
            record = admission.admit(text, rebuild_turns=False)
            if record.match_id != match_id:
                raise Refused(match_id, f"it is stored under another match id ({record.match_id!r})")
        except Refused as exc:
            refused.append((exc, text))
            seqs.append(seq)
            continue
        admitted.add(match_id)
    if not seqs:
        return
    index.delete(seqs)
    _quarantined(run_dir, admission, refused, refused_out)
    rewrite_journal(run_dir, index)


def _quarantined(
    run_dir: Path, admission: Admission, refused: list[tuple[Refused, str | bytes]], refused_out: list[Refused]
) -> None:
    """Move ``refused`` lines to the quarantine file, with one warning line naming it."""
    if not refused:
        return
    path = quarantine(run_dir, refused)
    refused_out += [error for error, _ in refused]
    admission.quarantined.update(error.match_id for error, _ in refused)
    count = len(refused)
    log.warning(
        "%s: %d record%s refused and moved to %s (first: %s); %s the run's plan has %s played again",
        run_dir,
        count,
        "" if count == 1 else "s",
        path,
        refused[0][0],
        "its match, if" if count == 1 else "those of their matches",
        "it, is" if count == 1 else "are",
    )


def rewrite_journal(run_dir: Path, index: ResultIndex) -> None:
    """Write ``matches.jsonl`` afresh from the index, in commit order (streamed)."""
    path = run_dir / JSONL_NAME
    tmp = path.with_suffix(".jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for record in index.record_texts():
            handle.write(record + "\n")
    tmp.replace(path)
