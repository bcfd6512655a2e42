"""Records trusted only once checked (issue 51): every kind of bad record of the corruption kit
(``tests/corruption.py``) is quarantined when the run is resumed, its match played again, and the run's tables are
those of the clean run; readers of a run not yet repaired skip what admission refuses, with one warning line and no
traceback."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sqlite3
import subprocess
import sys
import traceback
from csv import DictReader
from pathlib import Path

import pytest

from deepeval_games.app.commands.cli import main
from deepeval_games.app.spec.manifest import MANIFEST_NAME, read_manifest
from deepeval_games.app.storage.admission import MAX_DEPTH, QUARANTINE_NAME, Admission, Refused, check_bounds
from deepeval_games.app.storage.index import UNREADABLE_SUFFIX
from tests.corruption import CORRUPTIONS, copy_run, records_of, unreadable_database

REPO = Path(__file__).resolve().parent.parent

SPEC = """
[experiment]
name = "ttt-admission"
game = "tic_tac_toe"
pairing = "round_robin"
repeats = 5
seed = 0

[[players]]
name = "mcts"
bot = "mcts"
params = { simulations = 20, uct_c = 2.0, rollouts = 1 }

[[players]]
name = "random"
bot = "random"
"""


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deepeval_games", *map(str, args)], cwd=REPO, capture_output=True, text=True, check=False
    )


def _in_process(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``deepeval-games ARGS`` run in this process (a reader: about a second less than a child process), with its
    output, and its log lines and any traceback as the command would print them on stderr. The resumes stay child
    processes, where a message OpenSpiel writes to file descriptor 2 is seen too."""
    out, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    handler.setLevel(logging.WARNING)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(arg) for arg in args])
            except Exception:
                traceback.print_exc()
                code = 1
    finally:
        root.removeHandler(handler)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, tuple[str, list[str]]]:
    """(spec, run directory, its tables) of a clean run of tic-tac-toe."""
    root = tmp_path_factory.mktemp("clean")
    spec = root / "ttt.toml"
    spec.write_text(SPEC, encoding="utf-8")
    run = root / "run"
    done = _cli("run", spec, "--out", run, "--no-progress")
    assert done.returncode == 0, done.stderr
    return spec, run, _tables(copy_run(run, root / "clean" / "run"))


def _tables(run: Path) -> tuple[str, list[str]]:
    """The report's text (its score tables) and the CSV export's rows, sorted; every reader exits 0 (their files
    written beside the run directory)."""
    tmp = run.parent
    report = _in_process("report", run)
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
    html = _in_process("report", run, "--html", tmp / f"{run.name}.html")
    assert html.returncode == 0 and "Traceback" not in html.stderr, html.stderr
    csv = tmp / f"{run.name}.csv"
    exported = _in_process("export", run, "--format", "csv", "--out", csv)
    assert exported.returncode == 0 and "Traceback" not in exported.stderr, exported.stderr
    inspect = _in_process("export", run, "--format", "inspect", "--out", tmp / f"{run.name}-inspect")
    assert inspect.returncode == 0 and "Traceback" not in inspect.stderr, inspect.stderr
    with open(csv, encoding="utf-8", newline="") as handle:  # a replayed match is the same but for its timing
        rows = sorted(
            json.dumps({k: v for k, v in row.items() if k not in ("wall_time_s", "started_at")}, sort_keys=True)
            for row in DictReader(handle)
        )
    return report.stdout, rows


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_a_resumed_run_quarantines_the_bad_record_and_its_tables_are_the_clean_runs(
    kind: str, clean: tuple[Path, Path, tuple[str, list[str]]], tmp_path: Path
) -> None:
    spec, source, tables = clean
    run = copy_run(source, tmp_path / "corrupted" / "run")
    match_id = CORRUPTIONS[kind](run)
    resumed = _cli("run", spec, "--out", run, "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert "Traceback" not in resumed.stderr and "OpenSpiel" not in resumed.stderr
    warnings = [line for line in resumed.stderr.splitlines() if QUARANTINE_NAME in line]
    assert len(warnings) == 1 and "refused" in warnings[0]
    entries = [json.loads(line) for line in (run / QUARANTINE_NAME).read_text(encoding="utf-8").splitlines()]
    assert len(entries) == 1 and entries[0]["reason"] and entries[0]["line"]
    assert entries[0]["match_id"] == match_id
    assert _tables(run) == tables
    assert sorted(r["match_id"] for r in records_of(run)) == sorted(r["match_id"] for r in records_of(source))
    again = _in_process("run", spec, "--out", run, "--no-progress")  # repaired: nothing more to quarantine or play
    assert again.returncode == 0 and QUARANTINE_NAME not in again.stderr
    assert "0 played now" in again.stdout


@pytest.mark.parametrize("kind", ["nan_returns_stored", "forged_returns", "other_game"])
def test_readers_of_a_run_not_yet_repaired_skip_the_bad_record(
    kind: str, clean: tuple[Path, Path, tuple[str, list[str]]], tmp_path: Path
) -> None:
    _, source, _ = clean
    run = copy_run(source, tmp_path / "run")
    CORRUPTIONS[kind](run)
    csv = tmp_path / "x.csv"
    for args in (("report", run), ("export", run, "--format", "csv", "--out", csv), ("leaderboard", run)):
        done = _in_process(*args)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr and "could not be computed" not in done.stdout
        skipped = [line for line in done.stderr.splitlines() if "skipped 1 record" in line]
        assert len(skipped) == 1, done.stderr


def test_an_unreadable_database_is_refused_by_readers_and_built_again_by_the_run(
    clean: tuple[Path, Path, tuple[str, list[str]]], tmp_path: Path
) -> None:
    spec, source, tables = clean
    run = copy_run(source, tmp_path / "unreadable" / "run")
    unreadable_database(run)
    csv = tmp_path / "x.csv"
    for args in (
        ("report", run),
        ("export", run, "--format", "csv", "--out", csv),
        ("leaderboard", run),
        ("view", run),
    ):
        done = _in_process(*args)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "run the same" in done.stderr, done.stderr
    resumed = _cli("run", spec, "--out", run, "--no-progress")
    assert resumed.returncode == 0 and "Traceback" not in resumed.stderr, resumed.stderr
    assert "moved to" in resumed.stderr and "0 played now" in resumed.stdout
    assert (run / f"results.sqlite{UNREADABLE_SUFFIX}").read_bytes().startswith(b"not a database")  # kept, not deleted
    assert _tables(run) == tables


def test_admission_bounds_are_checked_before_parsing() -> None:
    with pytest.raises(Refused, match="deeper"):
        check_bounds("[" * 100_000 + "]" * 100_000)
    check_bounds("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    check_bounds('{"a": "[[[[' + "[" * 1000 + '"}')  # brackets inside a string are no nesting
    for bad in ('{"x": NaN}', '{"x": -Infinity}', '{"x": 1e999}'):
        with pytest.raises(Refused, match="finite"):
            check_bounds(bad)
    check_bounds('{"x": "NaN and Infinity are words", "y": 1e-300}')
    with pytest.raises(Refused, match="not a valid record"):
        Admission().admit('{"match_id": "x"}')
    for text, kind in (("[]", "an array"), ('"x"', "a string"), ("5", "a number"), ("null", "null")):
        with pytest.raises(Refused, match=f"a JSON object, not {kind}"):
            Admission().admit(text)


def _deep(depth: int = 100_000) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("text", ["garbage{", '{"entries": []}', _deep()])
def test_an_unreadable_manifest_is_moved_aside_and_the_run_resumes(
    text: str,
    clean: tuple[Path, Path, tuple[str, list[str]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    spec, source, _ = clean
    run = copy_run(source, tmp_path / "run")
    (run / MANIFEST_NAME).write_text(text, encoding="utf-8")
    assert main(["report", str(run)]) == 0  # the report leaves the partial note out
    assert main(["run", str(spec), "--out", str(run), "--no-progress"]) == 0
    assert "0 played now" in capsys.readouterr().out
    assert [r.message for r in caplog.records if "manifest" in r.message and "moved to" in r.message]
    assert (run / f"{MANIFEST_NAME}.unreadable").read_text(encoding="utf-8") == text  # kept, not deleted
    assert read_manifest(run)["runs"][-1]["status"] == "finished"


def test_a_stored_spec_or_stopping_report_nested_past_the_stack_is_no_traceback(
    clean: tuple[Path, Path, tuple[str, list[str]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, source, _ = clean
    run = copy_run(source, tmp_path / "run")
    (run / "stopping.json").write_text(_deep(), encoding="utf-8")
    db = sqlite3.connect(run / "results.sqlite")
    with db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'spec'", (_deep(),))
    db.close()
    for args in (("report", run), ("leaderboard", run), ("run", spec, "--out", run, "--no-progress")):
        assert main([str(a) for a in args]) == 0
        assert "mcts" in capsys.readouterr().out  # the tables, from the records (the spec's settings unknown)


def test_a_database_damaged_inside_is_refused_by_readers_and_built_again_by_the_run(
    clean: tuple[Path, Path, tuple[str, list[str]]], tmp_path: Path
) -> None:
    """A page of the matches' table overwritten: SQLite opens the file and fails only while reading it."""
    spec, source, tables = clean
    run = copy_run(source, tmp_path / "damaged" / "run")
    with open(run / "results.sqlite", "r+b") as handle:  # the fourth page of 64 KiB: a page of the matches' rows
        handle.seek(3 * 65536)
        handle.write(b"\xff" * 64)
    for args in (("report", run), ("leaderboard", run), ("export", run, "--format", "csv", "--out", tmp_path / "x")):
        done = _in_process(*args)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "run the same" in done.stderr, done.stderr
    resumed = _in_process("run", spec, "--out", run, "--no-progress")
    assert resumed.returncode == 0 and "moved to" in resumed.stderr, resumed.stderr
    assert _tables(run) == tables


def test_another_spec_cannot_take_over_a_directory_whose_database_is_unreadable(
    clean: tuple[Path, Path, tuple[str, list[str]]], tmp_path: Path
) -> None:
    spec, source, tables = clean
    run = copy_run(source, tmp_path / "taken" / "run")
    other = tmp_path / "other.toml"
    other.write_text(
        SPEC.replace("repeats = 5", "repeats = 5\ngame = 'connect_four'").replace('game = "tic_tac_toe"\n', ""),
        encoding="utf-8",
    )
    for damage in (unreadable_database, lambda r: (r / "results.sqlite").unlink()):
        damage(run)
        refused = _in_process("run", other, "--out", run, "--no-progress")
        assert refused.returncode == 2 and "different experiment spec" in refused.stderr, refused.stderr
        assert not (run / QUARANTINE_NAME).exists()  # nothing of the run's own was refused or moved
    resumed = _in_process("run", spec, "--out", run, "--no-progress")
    assert resumed.returncode == 0 and "0 played now" in resumed.stdout, resumed.stderr
    assert _tables(run) == tables
