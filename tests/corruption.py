"""A corruption kit for run directories (issue 51): each function makes one kind of bad record in a finished run's
``matches.jsonl`` or ``results.sqlite``, as a careless tool or a hostile hand would, and returns the match id it
names. ``tests/test_journal_admission.py`` resumes the run and checks that its tables are those of the clean run."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["CORRUPTIONS", "copy_run", "records_of", "unreadable_database"]

JSONL = "matches.jsonl"
DB = "results.sqlite"


def copy_run(source: Path, target: Path) -> Path:
    """A copy of a finished run directory."""
    shutil.copytree(source, target)
    return target


def records_of(run: Path) -> list[dict[str, Any]]:
    """The run's journal lines, parsed."""
    return [json.loads(line) for line in (run / JSONL).read_text(encoding="utf-8").splitlines()]


def _append(run: Path, line: str) -> None:
    with open(run / JSONL, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def _rewrite_row(run: Path, record: dict[str, Any]) -> None:
    """Put ``record`` (a planned match's id) in the database in place of the match's row."""
    db = sqlite3.connect(run / DB)
    with db:
        db.execute("UPDATE matches SET record = ? WHERE match_id = ?", (json.dumps(record), record["match_id"]))
    db.close()


def _rewrite_journal_without_db(run: Path, record: dict[str, Any]) -> None:
    """Put ``record`` in the journal in place of its match's line, and delete the database (recovered from it)."""
    lines = records_of(run)
    out = [record if each["match_id"] == record["match_id"] else each for each in lines]
    (run / JSONL).write_text("".join(json.dumps(each) + "\n" for each in out), encoding="utf-8")
    (run / DB).unlink()


def negated_copy(run: Path) -> str:
    """A copy of a match under a new id with its returns negated (appended to the journal)."""
    record = records_of(run)[0]
    record["match_id"] = "f" * 20
    record["returns"] = [-value for value in record["returns"]]
    _append(run, json.dumps(record))
    return record["match_id"]


def nan_returns(run: Path) -> str:
    """A new line whose returns are ``NaN`` (Python's ``json`` writes them so)."""
    record = records_of(run)[1]
    record["match_id"] = "e" * 20
    record["returns"] = [float("nan")] * len(record["returns"])
    _append(run, json.dumps(record))
    return record["match_id"]


def nan_returns_stored(run: Path) -> str:
    """A planned match whose row in the database has ``NaN`` returns (what an earlier resume let in)."""
    record = records_of(run)[2]
    record["returns"] = [float("nan")] * len(record["returns"])
    _rewrite_row(run, record)
    return record["match_id"]


def deep_line(run: Path) -> str:
    """A line nested 200,000 deep."""
    depth = 200_000
    _append(run, '{"match_id":"dddddddddddddddddddd","x":' + "[" * depth + "]" * depth + "}")
    return "d" * 20


def forged_returns(run: Path) -> str:
    """A planned match's row with returns of +100 and -100 (tic-tac-toe pays -1, 0 or 1)."""
    record = records_of(run)[3]
    record["returns"] = [100.0 if value >= 0 else -100.0 for value in record["returns"]]
    _rewrite_row(run, record)
    return record["match_id"]


def illegal_move_without_db(run: Path) -> str:
    """A planned match's line whose second move repeats the first (illegal), the database deleted."""
    record = records_of(run)[4]
    record["moves"][1][2] = record["moves"][0][2]
    _rewrite_journal_without_db(run, record)
    return record["match_id"]


def other_game(run: Path) -> str:
    """A planned match's row claiming another game (``misere(tic_tac_toe())``)."""
    record = records_of(run)[5]
    record["game"] = "misere(game=tic_tac_toe())"
    _rewrite_row(run, record)
    return record["match_id"]


def other_game_appended(run: Path) -> str:
    """A new line claiming another game."""
    record = records_of(run)[6]
    record["match_id"] = "c" * 20
    record["game"] = "misere(game=tic_tac_toe())"
    _append(run, json.dumps(record))
    return record["match_id"]


def not_an_object(run: Path) -> str:
    """A line that is JSON but no object (an array); it names no match."""
    _append(run, "[]")
    return "?"


def unreadable_database(run: Path) -> None:
    """The database overwritten with bytes SQLite cannot read (the journal kept): not a bad record, so not one of
    :data:`CORRUPTIONS`; readers refuse the directory and the next writer builds the database again."""
    (run / DB).write_bytes(b"not a database " * 100)


CORRUPTIONS: dict[str, Callable[[Path], str]] = {
    "negated_copy": negated_copy,
    "nan_returns": nan_returns,
    "nan_returns_stored": nan_returns_stored,
    "deep_line": deep_line,
    "forged_returns": forged_returns,
    "illegal_move_without_db": illegal_move_without_db,
    "other_game": other_game,
    "other_game_appended": other_game_appended,
    "not_an_object": not_an_object,
}
"""Every kind of bad record, by name."""
