"""The process executor's batched path (issue 14, scripted runs): planned matches go to a worker as compact rows,
several in one message, without a future or coroutine per match; the records that arrive together are committed
with one ``writev`` (:meth:`Store.commit_many_json`), stored as the worker's bytes (as TEXT) without being decoded;
``max_concurrency`` still bounds the matches in flight, and model runs keep their match-at-a-time path."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from deepeval_games import parse_spec, run_experiment
from deepeval_games.app.execution.process_executor import ProcessExecutor
from deepeval_games.app.execution.worker_side import RowReader, RowWriter
from deepeval_games.app.spec.schedule import plan_matches
from deepeval_games.app.storage.store import DB_NAME, JSONL_NAME, Store
from tests.worker_io import read_line, slow_driver, worker_in_thread

PGG = "deepeval_public_goods(players=2,rounds=3,mode=1,alpha=1.6)"


def _spec(repeats: int, **experiment: Any) -> dict[str, Any]:
    players = [{"name": name, "bot": bot} for name, bot in (("a", "pgg_random"), ("b", "pgg_free_rider"))]
    return {"experiment": {"name": "p", "game": PGG, "repeats": repeats, "seed": 5, **experiment}, "players": players}


def _line(match_id: str, size: int = 3000) -> bytes:
    return json.dumps({"match_id": match_id, "payload": "x" * size, "text": "é ✓"}, ensure_ascii=False).encode()


# -- the store: several lines, one writev ------------------------------------------------------------------------


def test_commit_many_json_writes_new_lines_with_one_writev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = os.writev

    def writev(fd: int, buffers: list[bytes]) -> int:
        calls.append(len(buffers))
        return real(fd, buffers)

    with Store(tmp_path) as store:
        assert store.commit_json("a", _line("a"))
        monkeypatch.setattr(os, "writev", writev)
        items: list[tuple[str, str | bytes]] = [("b", _line("b")), ("a", _line("a")), ("c", _line("c") + b"\n")]
        items += [("b", _line("b")), ("d", "{}")]
        assert store.commit_many_json(items) == [True, False, True, False, True]  # stored, or came earlier
        assert calls == [6]  # three lines and their newlines, in one call
        assert store.commit_many_json([("a", _line("a"))]) == [False] and calls == [6]  # nothing to write
        monkeypatch.undo()
        assert store.completed_ids() == {"a", "b", "c", "d"}
    text = (tmp_path / JSONL_NAME).read_bytes()
    assert text == _line("a") + b"\n" + _line("b") + b"\n" + _line("c") + b"\n" + b"{}\n"
    db = sqlite3.connect(tmp_path / DB_NAME)
    rows = db.execute("SELECT match_id, typeof(record), record, json_extract(record, '$.text') FROM matches").fetchall()
    db.close()
    assert [row[:2] for row in rows] == [("a", "text"), ("b", "text"), ("c", "text"), ("d", "text")]
    assert rows[2][2] == _line("c").decode() and rows[2][3] == "é ✓"  # bytes stored as TEXT, read by SQLite itself
    with Store(tmp_path, read_only=True) as reader:
        assert [m for (m,) in reader._index.db.execute("SELECT match_id FROM matches ORDER BY seq")] == list("abcd")


def test_commit_many_json_refuses_a_line_that_is_not_one_line(tmp_path: Path) -> None:
    with Store(tmp_path) as store:
        with pytest.raises(ValueError, match="one line"):
            store.commit_many_json([("a", _line("a")), ("b", b'{"match_id":"b",\n"x":1}')])
        assert store.completed_ids() == set()  # nothing of the batch was stored
        with pytest.raises(UnicodeDecodeError):  # stored as TEXT undecoded: it would make the store unreadable
            store.commit_many_json([("a", _line("a")), ("c", b'{"match_id":"c","x":"\xff\xfe"}')])
        assert store.completed_ids() == set()
        assert store.commit_many_json([("a", _line("a"))]) == [True]
        assert store.commit_many_json([("u", '{"match_id":"u","x":"é"}'.encode())]) == [True]  # UTF-8: stored
    assert (tmp_path / JSONL_NAME).read_bytes() == _line("a") + b"\n" + '{"match_id":"u","x":"é"}\n'.encode()


def test_a_failed_batch_write_leaves_the_file_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.writev

    def short(fd: int, buffers: list[bytes]) -> int:
        return real(fd, [bytes(buffers[0])[:100]])

    def full(fd: int, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    with Store(tmp_path) as store:
        assert store.commit_json("a", _line("a"))
        monkeypatch.setattr(os, "writev", short)
        monkeypatch.setattr(os, "write", full)
        with pytest.raises(OSError):
            store.commit_many_json([("b", _line("b")), ("c", _line("c"))])
        monkeypatch.undo()
        assert store.commit_many_json([("c", _line("c")), ("b", _line("b"))]) == [True, True]  # not committed before
    assert (tmp_path / JSONL_NAME).read_bytes() == b"".join(_line(x) + b"\n" for x in "acb")


# -- the rows -----------------------------------------------------------------------------------------------------


def test_planned_rows_round_trip_through_json_with_tables_sent_once() -> None:
    spec = parse_spec(_spec(3))
    spec = parse_spec({**spec.source, "players": [*spec.source["players"], {"name": "c ü", "bot": "pgg_random"}]})
    plan = plan_matches(spec)
    writer, reader = RowWriter(), RowReader()
    read, seen = [], set[str]()
    for i, planned in enumerate(plan):
        row = json.loads(json.dumps(writer.row(planned)))
        tables = writer.take_tables()  # each name and game sent once, with the first row that uses it
        assert tables.get("names", []) == [n for n in dict.fromkeys(planned.seats) if n not in seen]
        assert tables.get("games", []) == ([planned.game] if i == 0 else [])
        seen.update(planned.seats)
        reader.add_tables(json.loads(json.dumps(tables)))
        read.append(reader.planned(row))
    assert read == plan
    assert len({id(p.game) for p in read}) == 1  # one string object for the game, not one a match
    with pytest.raises(ValueError, match="row"):
        reader.planned(["x", PGG])
    with pytest.raises(ValueError, match="row"):
        reader.planned(["x", 7, [0, 1], 0, 1])  # a game never sent


# -- the driver: batches, no future per match, max_concurrency ---------------------------------------------------


class _Bar:
    def __init__(self) -> None:
        self.n = 0

    def update(self, n: int) -> None:
        self.n += n

    def close(self) -> None:
        pass


def test_a_scripted_run_goes_to_workers_in_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deepeval_games.app.execution.play_and_commit import MatchRunner

    spec = _spec(30, max_concurrency=5)  # 30 matches, at most 5 in flight
    one = run_experiment(spec, tmp_path / "one", workers=1)

    async def no_future(self: ProcessExecutor, planned: Any) -> bytes:
        raise AssertionError("a scripted run in workers uses no future per match")

    peaks: list[int] = []
    submit = ProcessExecutor.submit_nowait

    def counted(self: ProcessExecutor, items: Any) -> bool:
        done = submit(self, items)
        peaks.append(sum(len(p.in_flight) for p in self._processes))
        return done

    batches: list[int] = []
    commit_many = Store.commit_many_json

    def committed(self: Store, items: Any) -> list[bool]:
        items = list(items)
        batches.append(len(items))
        assert all(isinstance(data, bytes) for _, data in items)  # the worker's bytes, never decoded
        return commit_many(self, items)

    bars: list[_Bar] = []
    monkeypatch.setattr(ProcessExecutor, "play_json", no_future)
    monkeypatch.setattr(ProcessExecutor, "submit_nowait", counted)
    monkeypatch.setattr(Store, "commit_many_json", committed)

    def bar(self: Any, total: int) -> _Bar:
        bars.append(_Bar())
        return bars[-1]

    monkeypatch.setattr(MatchRunner, "progress_bar", bar)
    here, theirs = slow_driver(monkeypatch)  # a worker surely plays some (the driver plays on while it starts)
    two = run_experiment(spec, tmp_path / "two", workers=2)
    monkeypatch.undo()
    assert two.played == 30 and not two.failed and theirs and len(here) + len(theirs) == 30
    assert sum(batches) == 30 and peaks and max(peaks) <= 5  # max_concurrency holds across the two workers
    assert bars[0].n == 30  # the progress bar counted every match
    assert sorted(r.canonical()["match_id"] for r in two.records) == sorted(one.match_ids)
    assert [r.canonical() for r in sorted(two.records, key=lambda r: r.match_id)] == [
        r.canonical() for r in sorted(one.records, key=lambda r: r.match_id)
    ]


def test_a_run_with_model_players_keeps_a_match_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deepeval_games.app.execution import play_and_commit
    from deepeval_games.app.execution.run_result import RunResult

    seen: list[str] = []

    class Executor:
        """Stands in for a ProcessExecutor (isinstance is all the runner asks)."""

        sink = None

        def submit_nowait(self, items: Any) -> bool:
            raise AssertionError("model matches are never batched")

        async def play_json(self, planned: Any) -> bytes:
            seen.append(planned.match_id)
            await asyncio.sleep(0)
            return b'{"match_id":"%s"}' % planned.match_id.encode()

    spec = parse_spec(
        {
            "experiment": {"name": "m", "game": PGG, "max_concurrency": 2},
            "players": [{"name": "m", "model": "openai/x"}, {"name": "r", "bot": "pgg_random"}],
        }
    )
    monkeypatch.setattr(play_and_commit, "ProcessExecutor", Executor)
    plan = plan_matches(spec)
    store = Store(tmp_path)
    try:
        run = play_and_commit.MatchRunner(spec, store, False, None)
        run.executor = Executor()  # type: ignore[assignment]
        result = RunResult(run_dir=tmp_path, planned=len(plan))
        asyncio.run(run.run(plan, result))
        assert result.played == len(plan) == len(seen)
    finally:
        store.close()


# -- the worker: a plays message ----------------------------------------------------------------------------------


def test_a_worker_plays_a_batch_of_rows_and_answers_a_bad_row_with_an_error() -> None:

    spec = parse_spec(_spec(2))
    plan = plan_matches(spec)
    with worker_in_thread(spec.source) as (ours, init, thread):
        writer = RowWriter()
        rows = [writer.row(p) for p in plan] + [["x", PGG]]  # the last row is not a planned match
        plays = {"op": "plays", **writer.take_tables(), "first": 10, "matches": rows}
        ours.sendall((json.dumps(init) + "\n" + json.dumps(plays) + "\n").encode())
        buffer = bytearray()
        records: dict[int, dict[str, Any]] = {}
        errors: dict[int, Any] = {}
        while len(records) + len(errors) < len(rows):
            line = read_line(ours, buffer)
            if line.startswith(b"R "):
                _, number, size = line.split()
                text = read_line(ours, buffer)
                assert len(text) + 1 == int(size)  # the header gives the line's size, newline included
                records[int(number)] = json.loads(text)
            else:
                message = json.loads(line)
                if message["op"] == "done":
                    errors[message["id"]] = message["error"]
    assert not thread.is_alive()
    assert {i: r["match_id"] for i, r in records.items()} == {10 + i: p.match_id for i, p in enumerate(plan)}
    assert list(errors) == [10 + len(plan)] and errors[10 + len(plan)]["kind"] == "error"


def test_a_worker_writes_parts_in_order_waiting_for_room() -> None:
    from deepeval_games.app.execution.fork_server import _write_parts

    ours, theirs = socket.socketpair()
    theirs.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    theirs.setblocking(False)
    parts = [bytes([65 + i % 26]) * (1000 + 997 * i) for i in range(40)]  # far more than the socket holds
    received = bytearray()

    def read() -> None:
        while len(received) < sum(map(len, parts)):
            chunk = ours.recv(3000)
            if not chunk:
                return
            received.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert _write_parts(theirs.fileno(), parts) == []
        reader.join(10)
        assert bytes(received) == b"".join(parts)  # all of it, in order
        ours.close()
        left = _write_parts(theirs.fileno(), [b"x" * 100_000, b"y"])  # the driver is gone: what is left comes back
        assert left and b"".join(left).endswith(b"y")
    finally:
        ours.close()
        theirs.close()
