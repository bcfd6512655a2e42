"""Batched commits (issue 14): a match is committed when its line is in ``matches.jsonl``; the database gets it
with its batch. A run killed with SIGKILL mid-batch keeps every match it counted as committed, exactly once."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from deepeval_games import DeepEvalError
from deepeval_games.app.execution.run import run_experiment
from deepeval_games.app.storage.store import DB_NAME, JSONL_NAME, Store
from deepeval_games.core.records import MatchRecord

ROOT = Path(__file__).resolve().parents[1]
BOTS = ("pgg_free_rider", "pgg_full_contributor", "pgg_conditional_cooperator", "pgg_random")


def _spec(repeats: int) -> dict[str, Any]:
    return {
        "experiment": {"name": "batching", "game": "deepeval_public_goods(players=4,rounds=3)", "repeats": repeats},
        "players": [{"name": bot, "bot": bot} for bot in BOTS],
    }


_CHILD = """
import json, sys, time
from deepeval_games.app.execution.run import run_experiment
from deepeval_games.app.storage.journal import Journal
from deepeval_games.app.storage.store import Store

Journal.flush_interval_s, Journal.batch_max = float(sys.argv[3]), int(sys.argv[4])
commit_json = Store.commit_json

def counted(self, match_id, text):
    done = commit_json(self, match_id, text)
    if done:  # what the run counts as committed, said only once commit returned
        print(match_id, flush=True)
        time.sleep(0.004)  # slow enough for the parent to kill it mid-run
    return done

Store.commit_json = counted
run_experiment(json.loads(sys.argv[1]), sys.argv[2])
print("finished", flush=True)
"""


def _db_ids(run_dir: Path) -> list[str]:
    if not (run_dir / DB_NAME).exists():
        return []
    db = sqlite3.connect(f"file:{run_dir / DB_NAME}?mode=ro", uri=True)
    try:
        return [row[0] for row in db.execute("SELECT match_id FROM matches ORDER BY seq")]
    except sqlite3.OperationalError:  # killed before the tables were made
        return []
    finally:
        db.close()


def _killed_run(run_dir: Path, spec: dict[str, Any], after: int, interval_s: float, batch_max: int) -> list[str]:
    """Start a run in a child process and SIGKILL it once it has counted ``after`` matches as committed; return the
    ids it counted (every complete line it printed)."""
    args = [sys.executable, "-c", _CHILD, json.dumps(spec), str(run_dir), str(interval_s), str(batch_max)]
    child = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None
    counted: list[str] = []
    try:
        while len(counted) < after:
            line = child.stdout.readline()
            assert line.endswith(b"\n") and line != b"finished\n", child.communicate()[1].decode()[-2000:]
            counted.append(line.decode().strip())
        os.kill(child.pid, signal.SIGKILL)
        rest, _ = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL
    # what it printed before it died: complete lines only (a torn last line was never counted)
    counted += [line.decode().strip() for line in rest.splitlines(keepends=True) if line.endswith(b"\n")]
    assert "finished" not in counted, "the run ended before it was killed"
    return counted


def test_sigkill_mid_batch_keeps_every_counted_match_exactly_once(tmp_path: Path) -> None:
    spec = _spec(120)
    clean = tmp_path / "clean"
    run_experiment(spec, clean)
    with Store(clean, read_only=True) as store:
        expected = {record.match_id: record.canonical() for record in store.records()}
    assert len(expected) == 120

    rng = random.Random(14)
    out = tmp_path / "killed"
    # first no batch reaches the database before the kill; then batches of random sizes and short intervals
    kills = [(3600.0, 10**6), (0.02, rng.randint(2, 9)), (0.05, rng.randint(2, 9))]
    counted: set[str] = set()
    for interval_s, batch_max in kills:
        before = set(_db_ids(out))
        now = _killed_run(out, spec, rng.randint(4, 30), interval_s, batch_max)
        assert len(now) == len(set(now)) and not set(now) & counted  # nothing counted twice
        counted |= set(now)
        if batch_max == 10**6:  # killed mid-batch: the database lacks what the run counted, the log has it
            assert set(_db_ids(out)) == before and set(now) - before
        with Store(out) as store:  # the writer recovers the batch from matches.jsonl
            ids = [record.match_id for record in store.records()]
        assert counted <= set(ids) and len(ids) == len(set(ids))
        lines = (out / JSONL_NAME).read_bytes().splitlines(keepends=True)
        assert [json.loads(line)["match_id"] for line in lines] == ids and all(line.endswith(b"\n") for line in lines)

    result = run_experiment(spec, out)  # resume: only the missing matches are played
    assert result.skipped >= len(counted) and result.played + result.skipped == 120 and not result.failed
    with Store(out, read_only=True) as store:
        records = list(store.records())
    assert len(records) == 120 and {r.match_id: r.canonical() for r in records} == expected
    texts = (out / JSONL_NAME).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["match_id"] for line in texts] == [r.match_id for r in records]


def _record(match_id: str) -> MatchRecord:
    return MatchRecord(match_id=match_id, game="g", seats=["a"], returns=[1.0], turns=[])


def _eventually(check: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_commits_are_batched_by_count_and_time_and_flushed_on_read(tmp_path: Path) -> None:
    run = tmp_path / "run"
    store = Store(run)
    store.flush_interval_s, store.batch_max = 3600.0, 3
    try:
        assert store.commit(_record("a")) and store.commit(_record("b"))
        time.sleep(0.2)
        assert _db_ids(run) == []  # pending: in the log only
        assert (run / JSONL_NAME).read_text().count("\n") == 2
        assert not store.commit(_record("a"))  # a pending id is already committed
        assert store.commit(_record("c"))
        assert _eventually(lambda: _db_ids(run) == ["a", "b", "c"])  # the batch is full: inserted in the background
        assert store.commit_json("d", _record("d").to_json()) and store.completed_ids() == {"a", "b", "c", "d"}
        with pytest.raises(ValueError, match="one line"):
            store.commit_json("e", '{"match_id": "e",\n"game": "g"}')
        store.flush_interval_s = 0.05
        assert store.commit(_record("e"))
        assert _eventually(lambda: _db_ids(run) == ["a", "b", "c", "d", "e"])  # by time, nobody flushing
        assert store.commit_many([_record("f"), _record("a")]) == [True, False]
    finally:
        store.close()
    assert _db_ids(run) == ["a", "b", "c", "d", "e", "f"]  # close inserts the pending batch
    with pytest.raises(DeepEvalError, match="closed"):
        store.commit(_record("g"))


def test_recovery_inserts_missing_lines_cuts_a_torn_tail_and_rewrites_a_disordered_log(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with Store(out) as store:
        store.commit_many([_record(i) for i in "abc"])
    jsonl = out / JSONL_NAME
    lines = jsonl.read_text().splitlines(keepends=True)
    with sqlite3.connect(out / DB_NAME) as db:  # killed mid-batch: the database lacks the last two
        db.execute("DELETE FROM matches WHERE match_id != 'a'")
    jsonl.write_text("".join(lines) + lines[0][:20])  # and the next line torn mid-write
    with Store(out) as store:
        assert [r.match_id for r in store.records()] == ["a", "b", "c"]
    assert jsonl.read_text() == "".join(lines)
    jsonl.write_text("".join([lines[1], lines[0], "not json\n"]))  # lost and disordered: the database is the truth
    with Store(out) as store:
        assert store.completed_ids() == {"a", "b", "c"}
    assert jsonl.read_text() == "".join(lines)
    jsonl.unlink()  # lost altogether: written again from the database
    with Store(out):
        pass
    assert jsonl.read_text() == "".join(lines)


def test_a_committer_inserts_itself_when_the_flusher_falls_behind(tmp_path: Path) -> None:
    store = Store(tmp_path / "run")
    store.batch_max = 2
    journal = store._journal
    assert journal is not None
    journal._flusher = threading.current_thread()  # as if the flusher thread were starved: nobody else inserts
    try:
        for name in "abcdefg":
            assert store.commit(_record(name))
        assert _db_ids(tmp_path / "run") == []
        assert store.commit(_record("h"))  # 4 x batch_max pending: this commit inserts them
        assert _db_ids(tmp_path / "run") == list("abcdefgh") and not journal._pending
    finally:
        journal._flusher = None
        store.close()
