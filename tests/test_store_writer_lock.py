"""One writer per run directory: the run lock, read-only readers, and an export that is never behind.

The main test plays a run in a child process and, while it runs, prints ``report`` of the same directory again and
again and starts a second ``run`` into it; afterwards ``matches.jsonl`` and the database agree line for line.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deepeval_games import DeepEvalError
from deepeval_games.app.commands.cli import main
from deepeval_games.app.execution.run import run_experiment
from deepeval_games.app.storage.store import DB_NAME, JSONL_NAME, LOCK_NAME, RunLock, RunLockedError, Store
from tests.conftest import PGG_SCRIPTED_PLAYERS

REPO = Path(__file__).resolve().parent.parent

SPEC = (
    """
[experiment]
name = "lock-test"
game = "deepeval_public_goods(players=4,mode=1,alpha=1.6)"
repeats = {repeats}
seed = 0
max_concurrency = 2
"""
    + PGG_SCRIPTED_PLAYERS
)


def _spec_file(tmp_path: Path, repeats: int) -> Path:
    path = tmp_path / f"spec-{repeats}.toml"
    path.write_text(SPEC.format(repeats=repeats))
    return path


def _db_rows(run_dir: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(f"file:{run_dir / DB_NAME}?mode=ro", uri=True)
    try:
        return list(db.execute("SELECT match_id, record FROM matches ORDER BY seq"))
    finally:
        db.close()


def _committed(run_dir: Path) -> int:
    """Matches committed so far: lines of ``matches.jsonl`` (the database takes them in batches, up to 0.1 s
    later)."""
    path = run_dir / JSONL_NAME
    if not path.exists():
        return 0
    return path.read_bytes().count(b"\n")


def _child(*code_or_args: str, env_extra: dict[str, str] | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, **(env_extra or {})}
    return subprocess.Popen(
        [sys.executable, *code_or_args], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_reports_and_a_second_run_against_a_live_run_lose_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    spec = _spec_file(tmp_path, 2000)  # a few seconds of play: long enough to try a second run meanwhile
    writer = _child("-m", "deepeval_games", "run", str(spec), "--out", str(out), "--no-progress")
    try:
        deadline = time.monotonic() + 120
        while _committed(out) < 1:
            assert writer.poll() is None, writer.communicate()
            assert time.monotonic() < deadline, "the run committed nothing"
            time.sleep(0.05)
        reports = 0
        second = None
        while writer.poll() is None or reports < 2:
            if second is None and writer.poll() is None:  # first, while the run surely goes on
                assert main(["run", str(spec), "--out", str(out), "--no-progress"]) == 2
                second = capsys.readouterr().err
            assert main(["report", str(out)]) == 0  # a reader: read-only, never rewrites matches.jsonl
            reports += 1
        stdout, stderr = writer.communicate(timeout=120)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert writer.returncode == 0, stderr
    assert second is not None, "the run ended before the second run could try"
    assert "being written by another run" in second and f"pid {writer.pid}" in second
    assert socket.gethostname() in second and "Traceback" not in second
    assert reports >= 2
    rows = _db_rows(out)
    lines = (out / JSONL_NAME).read_text(encoding="utf-8").splitlines()
    assert len(rows) == 2000
    assert lines == [record for _, record in rows]  # line for line, in commit order
    assert "2000 matches planned: 2000 played now" in stdout


def test_a_second_writer_is_refused_naming_the_holder_and_may_wait(tmp_path: Path) -> None:
    out = tmp_path / "run"
    holder = _child(
        "-c",
        "import sys, time\n"
        "from deepeval_games.app.storage.store import RunLock\n"
        f"lock = RunLock({str(out)!r}).acquire()\n"
        "print('held', flush=True)\n"
        "time.sleep(float(sys.argv[1]))\n",
        "2.5",
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLockedError, match=rf"pid {holder.pid} on host {socket.gethostname()}"):
            Store(out)
        with pytest.raises(RunLockedError):
            run_experiment(_spec_file(tmp_path, 1), out)
        assert not (out / DB_NAME).exists()  # the refused writers created nothing
        started = time.monotonic()
        with Store(out, wait_s=60) as store:  # waits for the holder to finish
            assert time.monotonic() - started > 0.5
            assert store.completed_ids() == set()
    finally:
        holder.kill()
        holder.wait()


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    out = tmp_path / "run"
    holder = _child(
        "-c",
        "from deepeval_games.app.storage.store import Store\n"
        f"s = Store({str(out)!r})\nprint('held', flush=True)\ninput()\n",
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(RunLockedError):
        Store(out)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    with Store(out) as store:  # the kernel released the dead holder's lock
        assert store.completed_ids() == set()
    holder.communicate()


def test_the_lock_nests_within_one_process_and_is_released_by_the_last_holder(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with RunLock(out) as outer:
        with Store(out, run_lock=outer) as store:
            store.completed_ids()
        with Store(out) as again:  # the same process: nested, not refused
            again.completed_ids()
        assert outer.held
        assert json.loads((out / LOCK_NAME).read_text())["pid"] == os.getpid()
    assert not (out / LOCK_NAME).exists()  # released: the last holder removes the lock file
    probe = _child(
        "-c", f"from deepeval_games.app.storage.store import Store\nStore({str(out)!r}).close()\nprint('ok')"
    )
    assert probe.communicate(timeout=60)[0].strip() == "ok"


def test_readers_write_nothing_and_never_repair(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_experiment(_spec_file(tmp_path, 3), out)
    jsonl = out / JSONL_NAME
    text = jsonl.read_text()
    jsonl.write_text(text[:-30])  # torn, as if a writer had been killed mid-line
    with Store(out, read_only=True) as reader:
        assert len(list(reader.records())) == 3 and list(reader.judgements()) == []
        with pytest.raises(DeepEvalError, match="read-only"):
            reader.log_attempt("x", "infra", "no")
    assert jsonl.read_text() == text[:-30]  # a reader never repairs
    assert main(["report", str(out)]) == 0
    assert jsonl.read_text() == text[:-30]
    with Store(out):  # the writer repairs, under its lock
        pass
    assert jsonl.read_text() == text
    with pytest.raises(DeepEvalError, match="no results"):
        Store(tmp_path / "nothing", read_only=True)
    assert not (tmp_path / "nothing").exists()


def test_a_store_left_in_wal_mode_by_a_crash_is_recovered_and_left_clean(tmp_path: Path) -> None:
    """A writer killed mid-run leaves the write-ahead log and the lock file; the next writer replays the log, and its
    clean close leaves neither."""
    out = tmp_path / "run"
    writer = _child(
        "-c",
        "import os, signal\n"
        "from deepeval_games.app.storage.store import Store\n"
        f"s = Store({str(out)!r})\n"
        "s.commit_json('a' * 20, '{\"match_id\": \"' + 'a' * 20 + '\"}')\n"
        "s.flush()\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n",
    )
    writer.communicate(timeout=60)
    assert {p.name for p in out.iterdir()} >= {DB_NAME, DB_NAME + "-wal", LOCK_NAME}
    with Store(out) as store:
        assert store.completed_ids() == {"a" * 20}
    assert sorted(p.name for p in out.iterdir()) == [JSONL_NAME, DB_NAME]
    with Store(out, read_only=True) as reader:  # a reader of a finished run makes no side file either
        assert reader.completed_ids() == {"a" * 20}
    assert sorted(p.name for p in out.iterdir()) == [JSONL_NAME, DB_NAME]
