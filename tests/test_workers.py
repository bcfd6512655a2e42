"""The process executor (``workers = N``): the same records as one process, failures of the same kinds, counters
summed, and a run killed at random points (driver or worker, SIGKILL) that resumes to the uninterrupted result."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import tests.worker_bots  # registers the bots below in this process too
from deepeval_games import FatalRunError, parse_spec, run_experiment
from deepeval_games.app.execution import process_executor
from deepeval_games.app.execution.process_executor import (
    AUTO_MIN_MATCHES,
    probe_matches,
    resolve_workers,
    workers_after_probe,
)
from deepeval_games.app.storage.store import DB_NAME, JSONL_NAME, Store
from deepeval_games.core.records import MatchRecord
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, first_legal_move, model_player
from tests.worker_io import slow_driver

REPO = Path(__file__).resolve().parent.parent
PGG = "deepeval_public_goods(players=2,mode=1,alpha=1.6)"
SHORT_PGG = "deepeval_public_goods(players=2,rounds=3,mode=1,alpha=1.6)"
"""For the LLM tests: fewer calls."""
NAMES = ("ann", "bob", "cy")


def _spec(repeats: int = 2, bot: str = "test_worker_random", seed: int = 0, **experiment: Any) -> dict[str, Any]:
    """Three players of two-seat PGG, every ordered pair: 6 matches a repeat."""
    players = [{"name": name, "bot": bot if name == "ann" else "test_worker_random"} for name in NAMES]
    return {
        "experiment": {"name": "w", "game": PGG, "repeats": repeats, "seed": seed, **experiment},
        "players": players,
    }


def _canonical(records: list[MatchRecord]) -> list[dict[str, Any]]:
    return sorted((r.canonical() for r in records), key=lambda d: d["match_id"])


def _returns(records: list[MatchRecord]) -> dict[str, float]:
    """Each player's total return (summed exactly: the commit order must not matter)."""
    values: dict[str, list[float]] = {}
    for record in records:
        for seat, value in zip(record.seats, record.returns, strict=True):
            values.setdefault(seat, []).append(value)
    return {seat: math.fsum(v) for seat, v in values.items()}


# -- the rule for the number of processes --------------------------------------------------------------------


def test_auto_uses_one_process_for_small_scripted_and_human_runs() -> None:
    scripted = parse_spec(_spec())
    assert resolve_workers(scripted, None, 10_000) == 1  # scripted: one process until its probe has timed it
    assert resolve_workers(scripted, 3, 10_000) == 3  # asked for: granted
    assert resolve_workers(scripted, 3, 2) == 2  # never more processes than matches
    llm = parse_spec({"experiment": {"game": PGG}, "players": [{"name": "m", "model": "openai/gpt-4o-mini"}]})
    assert resolve_workers(llm, "auto", AUTO_MIN_MATCHES - 1) == 1  # too small to win back start-up
    assert resolve_workers(llm, "auto", 100 * AUTO_MIN_MATCHES) == min(len(os.sched_getaffinity(0)), 100)
    human = parse_spec(
        {"experiment": {"game": PGG}, "players": [{"name": "me", "human": True}, {"name": "b", "bot": "pgg_random"}]}
    )
    assert resolve_workers(human, 4, 100) == 1  # a person at the table: always one process
    local = parse_spec({"experiment": {"game": PGG}, "players": [{"name": "l", "model": "local/smollm2-135m"}]})
    assert resolve_workers(local, 4, 100) == 1  # a local model's server belongs to one process


def test_auto_probes_scripted_runs_before_choosing_processes() -> None:
    scripted = parse_spec(_spec())
    cores = len(os.sched_getaffinity(0))
    assert probe_matches(scripted, None, 10_000) == (process_executor.AUTO_PROBE_MATCHES if cores > 1 else 0)
    assert probe_matches(scripted, 1, 10_000) == 0  # a number was asked for: no probe
    assert probe_matches(scripted, "auto", 1) == 0  # nothing to split
    llm = parse_spec({"experiment": {"game": PGG}, "players": [{"name": "m", "model": "openai/gpt-4o-mini"}]})
    assert probe_matches(llm, "auto", 10_000) == 0  # model players: resolve_workers decides
    # matches cheaper than committing a worker's record stay in the driver however many; costlier ones go to every
    # core: tic_tac_toe between random players (about 0.12 ms a match in the probe), four-seat PGG (about 0.28 ms)
    assert workers_after_probe(1_000_000, 50e-6) == 1
    assert workers_after_probe(19_800, 0.12e-3) == min(cores, 19_800)
    assert workers_after_probe(9_800, 0.28e-3) == min(cores, 9_800)
    assert workers_after_probe(100, 1e-3) == 1  # 0.1 s left: not worth starting processes
    # the rest of a run pays for workers from about half a second of it (process_executor.AUTO_SCRIPTED_MIN_WORK_S)
    assert workers_after_probe(9_800, 0.15e-3) == min(cores, 9_800)  # 1.5 s left
    assert workers_after_probe(4_000, 0.15e-3) == min(cores, 4_000)  # 0.6 s left
    assert workers_after_probe(1_800, 0.15e-3) == 1  # 0.27 s left
    assert workers_after_probe(10_000, 1e-3) == min(cores, 10_000)
    assert workers_after_probe(4, 5.0) == min(cores, 4)  # a few slow matches (sandboxed programs)


def test_a_run_done_before_its_fork_server_answers_is_not_held_by_the_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's fork waits in a thread while the fork server imports; a run that finished meanwhile (its start
    cancelled) returns at once, and the worker forked later is let go (its socket closed)."""
    import asyncio
    import socket
    import threading

    release, forked, gave_up = threading.Event(), threading.Event(), threading.Event()
    made: list[socket.socket] = []

    class Importing:
        def fork(self) -> tuple[int, socket.socket]:
            if not release.wait(5):
                gave_up.set()
                raise OSError("the test never let the fork finish")
            ours, theirs = socket.socketpair()
            theirs.close()
            made.append(ours)
            forked.set()
            return 12345, ours

    monkeypatch.setattr(process_executor, "fork_server", lambda models: Importing())

    async def run() -> None:
        start = asyncio.ensure_future(process_executor._forked(False))
        await asyncio.sleep(0.05)
        start.cancel()
        with pytest.raises(asyncio.CancelledError):
            await start

    asyncio.run(run())  # asyncio.to_thread here would join the blocked thread until the fork gave up
    assert not gave_up.is_set() and not forked.is_set()
    release.set()
    assert forked.wait(30)
    deadline = time.monotonic() + 30
    while made[0].fileno() != -1 and time.monotonic() < deadline:  # closed by the thread: the loop is gone
        time.sleep(0.01)
    assert made[0].fileno() == -1


def test_a_fork_server_that_never_forked_is_killed_on_close_not_awaited() -> None:
    """Closing a fork server that has not forked a worker yet (it may still be importing) kills it; one that has
    forked stops by itself when its socket closes."""
    from deepeval_games.app.execution.fork_server import _ForkServer

    idle = _ForkServer(False)
    idle.close()
    assert idle.proc.returncode == -signal.SIGKILL
    used = _ForkServer(False)
    pid, sock = used.fork()
    sock.close()  # the worker ends: its input is closed
    used.close()
    assert used.proc.returncode == 0 and pid > 0


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: auto never starts worker processes")
def test_auto_moves_a_costly_scripted_run_to_worker_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    spec = _spec(repeats=4, max_concurrency=4)  # 24 matches
    one = run_experiment(spec, tmp_path / "one", workers=1)
    caplog.set_level(logging.INFO, logger="deepeval_games")
    from deepeval_games.app.execution import placement

    monkeypatch.setattr(placement, "AUTO_PROBE_S", 60.0)  # a slow machine still probes the 12 matches
    monkeypatch.setattr(process_executor, "AUTO_SCRIPTED_MIN_MATCH_S", 0.0)  # as if each match were costly
    monkeypatch.setattr(process_executor, "AUTO_SCRIPTED_MIN_WORK_S", 0.0)
    auto = run_experiment(spec, tmp_path / "auto")
    assert "12 matches took" in caplog.text  # the probe: half the run at most, in the driver
    processes = min(len(os.sched_getaffinity(0)), 12)
    if placement._plays_too(parse_spec(spec), processes):  # this one plays too, beside one worker fewer
        assert f"playing 12 matches in {processes} processes: this one and {processes - 1} worker" in caplog.text
    else:  # many cores for max_concurrency 4: the workers keep every match in flight
        assert f"playing 12 matches in {processes} worker processes" in caplog.text
    assert auto.played == 24 and not auto.failed
    assert _canonical(auto.records) == _canonical(one.records)

    caplog.clear()
    monkeypatch.setattr(process_executor, "AUTO_SCRIPTED_MIN_MATCH_S", 1.0)  # as if each match were cheap
    cheap = run_experiment(spec, tmp_path / "cheap")
    assert "1 process(es) play the 12 left" in caplog.text and "worker processes" not in caplog.text
    assert _canonical(cheap.records) == _canonical(one.records)


@pytest.mark.parametrize("bad", [0, -1, "many", True])
def test_bad_workers_settings_are_spec_errors(tmp_path: Path, bad: Any) -> None:
    from deepeval_games import SpecError

    with pytest.raises(SpecError, match="workers"):
        run_experiment(_spec(), tmp_path / "run", workers=bad)
    assert not (tmp_path / "run").exists()  # refused before anything was written


# -- same records as one process -------------------------------------------------------------------------------


def test_scripted_records_equal_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec(repeats=3, max_concurrency=4)
    one = run_experiment(spec, tmp_path / "one", workers=1)
    _, theirs = slow_driver(monkeypatch)  # a worker surely plays some (the driver plays on while it starts)
    two = run_experiment(spec, tmp_path / "two", workers=2)
    assert one.played == two.played == 18 and not two.failed and theirs
    assert _canonical(two.records) == _canonical(one.records)
    # the driver was the only writer: the JSONL holds each match once, in the store's commit order
    lines = (tmp_path / "two" / JSONL_NAME).read_text().splitlines()
    assert [json.loads(line)["match_id"] for line in lines] == [r.match_id for r in two.records]


def test_failures_come_back_as_the_same_kinds(tmp_path: Path) -> None:
    # infrastructure failures: rescheduled (in any worker), never scored; the records are those of a clean run
    infra = tmp_path / "infra-left"
    infra.write_text("3")
    os.environ[tests.worker_bots.INFRA_FILE_ENV] = str(infra)
    try:
        flaky = run_experiment(_spec(bot="test_worker_flaky"), tmp_path / "flaky", workers=2)
    finally:
        del os.environ[tests.worker_bots.INFRA_FILE_ENV]
    clean = run_experiment(_spec(bot="test_worker_flaky"), tmp_path / "clean", workers=1)
    assert infra.read_text() == "0" and not flaky.failed
    assert _canonical(flaky.records) == _canonical(clean.records)
    with Store(tmp_path / "flaky", read_only=True) as store:
        assert [kind for _, kind, _ in store.attempts()] == ["infra"] * 3

    # a bug in a bot: the match is reported, the tournament goes on; the worker's traceback is logged
    buggy = run_experiment(_spec(bot="test_worker_buggy"), tmp_path / "buggy", workers=2)
    assert len(buggy.failed) == 8 and buggy.played == 4  # ann sits in 8 of the 12 matches
    assert all("ZeroDivisionError: bug in a bot" in error for _, error in buggy.failed)
    with Store(tmp_path / "buggy", read_only=True) as store:
        assert all("bug in a bot" in error and "worker_bots.py" in error for _, _, error in store.attempts())

    # a fatal error stops the run, keeping what was committed
    with pytest.raises(FatalRunError, match="API key was refused"):
        run_experiment(_spec(bot="test_worker_fatal", max_concurrency=1), tmp_path / "fatal", workers=2)


def test_adaptive_stopping_rule_runs_with_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec(repeats=2, until_stable={"rule": "adaptive", "max_repeats": 6, "epsilon": 0.5, "alpha": 0.2})
    one = run_experiment(spec, tmp_path / "one", workers=1)
    _, theirs = slow_driver(monkeypatch)
    two = run_experiment(spec, tmp_path / "two", workers=2)
    assert theirs and two.stopping is not None and two.stopping.to_dict() == one.stopping.to_dict()
    assert _canonical(two.records) == _canonical(one.records)


def test_until_stable_recheck_rule_runs_with_workers(tmp_path: Path) -> None:
    spec = _spec(repeats=2, until_stable={"epsilon": 0.01, "max_repeats": 4, "step": 2, "rule": "recheck"})
    one = run_experiment(spec, tmp_path / "one", workers=1)
    two = run_experiment(spec, tmp_path / "two", workers=2)
    assert two.repeats == one.repeats == 4 and two.played == one.played == 24
    assert _canonical(two.records) == _canonical(one.records)


def test_llm_records_and_counters_equal_one_process(tmp_path: Path, fake_provider_key: str) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(first_legal_move)) as server:
        spec = {
            "experiment": {"name": "llm", "game": SHORT_PGG, "repeats": 2, "seed": 1, "cache": False},
            "players": [model_player("m1", server), model_player("m2", server), {"name": "r", "bot": "pgg_random"}],
        }
        one = run_experiment(spec, tmp_path / "one", workers=1)
        two = run_experiment(spec, tmp_path / "two", workers=2)
    assert one.played == two.played == 12 and not two.failed
    assert _canonical(two.records) == _canonical(one.records)
    assert two.model_calls == one.model_calls > 0
    assert two.calls_by_model == one.calls_by_model
    assert two.cache_hits == one.cache_hits


def test_workers_share_the_model_call_cache(tmp_path: Path, fake_provider_key: str) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(first_legal_move)) as server:
        spec = {
            "experiment": {"name": "cache", "game": SHORT_PGG, "seed": 4, "cache": str(tmp_path / "calls.sqlite")},
            "players": [model_player(name, server) for name in NAMES],
        }
        first = run_experiment(spec, tmp_path / "first", workers=2)
        sent = server.request_count
        again = run_experiment(spec, tmp_path / "again", workers=2)  # a new directory: every call from the cache
        assert server.request_count == sent == first.model_calls > 0
    assert again.model_calls == 0 and sum(again.cache_hits.values()) == sent
    assert _canonical(again.records) == _canonical(first.records)


def test_per_model_max_concurrency_holds_across_workers(tmp_path: Path, fake_provider_key: str) -> None:
    # 12 matches at once in 2 workers, every seat of every match asking the one model; it allows 3 calls at once
    with FakeOpenAIServer(default=Behaviour.responder(first_legal_move)) as server:
        server.default = Behaviour(kind="reply", delay_s=0.05, respond=first_legal_move)
        spec = {
            "experiment": {
                "name": "lim",
                "game": SHORT_PGG,
                "repeats": 2,
                "seed": 2,
                "cache": False,
                "max_concurrency": 12,
            },
            "players": [model_player(name, server, model="openai/shared", max_concurrency=3) for name in NAMES],
        }
        result = run_experiment(spec, tmp_path / "run", workers=2)
        assert not result.failed and result.played == 12
        assert server.max_in_flight == 3  # reached, never passed: one limit for the three processes


# -- SIGKILL at random points, then resume ---------------------------------------------------------------------

DRIVER = """
import json, sys
import tests.worker_bots
from deepeval_games import run_experiment
run_experiment(json.loads(sys.argv[1]), sys.argv[2], workers=2)
"""


def _children(pid: int) -> list[int]:
    """Children of ``pid`` (started by any of its threads)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(p) for p in (task / "children").read_text().split()]
    return found


def _workers(driver: int) -> list[int]:
    """The driver's worker processes: the children of its fork server (its only child that has children)."""
    return [worker for child in _children(driver) for worker in _children(child)]


def _wait_for_workers(driver: subprocess.Popen[bytes], timeout_s: float = 20) -> list[int]:
    """The driver's worker processes once it has some (the driver plays on while they start), or [] if it ended."""
    deadline = time.monotonic() + timeout_s
    while driver.poll() is None and time.monotonic() < deadline:
        workers = _workers(driver.pid)
        if workers:
            return workers
        time.sleep(0.01)
    return []


def _committed(out: Path) -> int:
    try:
        with sqlite3.connect(f"file:{out / DB_NAME}?mode=ro", uri=True, timeout=1) as db:
            return int(db.execute("SELECT count(*) FROM matches").fetchone()[0])
    except sqlite3.Error:
        return 0


def _wait_for_progress(driver: subprocess.Popen[bytes], out: Path, matches: int, timeout_s: float = 20) -> None:
    """Wait until ``matches`` more matches are committed (or the driver ended): a kill then lands mid-run."""
    target, deadline = _committed(out) + matches, time.monotonic() + timeout_s
    while driver.poll() is None and _committed(out) < target and time.monotonic() < deadline:
        time.sleep(0.02)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds worker processes through /proc")
def test_sigkill_driver_and_workers_at_random_points_then_resume(tmp_path: Path) -> None:
    spec = _spec(repeats=8, seed=7, max_concurrency=6)
    spec["players"] = [{"name": n, "bot": "test_worker_random", "params": {"delay_s": 0.03}} for n in NAMES]
    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    rng = random.Random(14)
    kills: Counter[str] = Counter()
    # each round: start the driver, let a random few matches commit, then SIGKILL a worker and/or the driver; the
    # last rounds let the driver finish on its own (after losing a worker), then resume whatever is left
    for kill_worker, kill_driver in [(True, True), (False, True), (True, True), (False, True), (True, False), (0, 0)]:
        driver = subprocess.Popen(
            [sys.executable, "-c", DRIVER, json.dumps(spec), str(out)], cwd=REPO, env=env, stderr=subprocess.DEVNULL
        )
        _wait_for_progress(driver, out, rng.randint(1, 3))
        if kill_worker and driver.poll() is None:
            workers = _wait_for_workers(driver)
            if workers:
                os.kill(rng.choice(workers), signal.SIGKILL)
                kills["worker"] += 1
        if kill_driver and driver.poll() is None:
            _wait_for_progress(driver, out, rng.randint(0, 3))
            if driver.poll() is None:
                driver.kill()
                kills["driver"] += 1
        driver.wait(timeout=120)
    assert kills["driver"] >= 3 and kills["worker"] >= 2, kills  # the kills landed mid-run
    with Store(out, read_only=True) as store:
        records = list(store.records())
    whole = run_experiment(spec, tmp_path / "whole", workers=1)
    ids = [r.match_id for r in records]
    assert len(ids) == len(set(ids)) == whole.played == 48  # every match exactly once
    lines = (out / JSONL_NAME).read_text().splitlines()
    assert sorted(json.loads(line)["match_id"] for line in lines) == sorted(ids)
    assert _returns(records) == _returns(whole.records)  # aggregates of an uninterrupted single-process run
    assert _canonical(records) == _canonical(whole.records)
