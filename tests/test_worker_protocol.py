"""Around the referee (issue 14): what the process executor's driver does with a worker's record (commits the
worker's JSON line as it is), the worker's side of the pipe (record lines, one write per event-loop turn, counters
only when they change), and the plan's ids written from parts (the same bytes as hashing the whole key)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deepeval_games import parse_spec, run_experiment
from deepeval_games.app.execution.worker_side import encode_planned
from deepeval_games.app.spec.schedule import _identity, _seatings, plan_matches, stable_hash
from deepeval_games.app.storage.store import JSONL_NAME, Store
from deepeval_games.core.records import MatchRecord
from tests.worker_io import read_exactly, read_line, slow_driver, worker_in_thread

PGG = "deepeval_public_goods(players=2,rounds=3,mode=1,alpha=1.6)"


def _spec(repeats: int) -> dict[str, Any]:
    players = [{"name": name, "bot": bot} for name, bot in (("a", "pgg_random"), ("b", "pgg_free_rider"))]
    return {"experiment": {"name": "p", "game": PGG, "repeats": repeats, "seed": 3}, "players": players}


def test_the_driver_commits_worker_lines_without_parsing_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    for name in ("to_json", "to_json_bytes", "model_dump_json", "to_dict"):
        original = getattr(MatchRecord, name)
        monkeypatch.setattr(
            MatchRecord, name, lambda self, *a, _o=original, _n=name, **k: (calls.append(_n), _o(self, *a, **k))[1]
        )
    original_from = MatchRecord.from_dict.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        MatchRecord, "from_dict", classmethod(lambda cls, d: (calls.append("from_dict"), original_from(cls, d))[1])
    )
    one = run_experiment(_spec(12), tmp_path / "one", workers=1)
    assert calls == ["to_json_bytes"] * 12  # one process: each record serialised once, here, never decoded
    calls.clear()
    slow_driver(monkeypatch)  # from its second match, the driver waits for a worker's record: the worker takes a share
    two = run_experiment(_spec(12), tmp_path / "two", workers=2)
    assert two.played == 12 and not two.failed
    # the driver plays some matches itself (serialising each once) beside one worker, whose records it commits as
    # they came: nothing was parsed, validated or serialised again in the driver
    assert calls == ["to_json_bytes"] * len(calls) and len(calls) < 12
    monkeypatch.undo()
    lines = (tmp_path / "two" / JSONL_NAME).read_text().splitlines()
    assert all(line.startswith('{"match_id":"') for line in lines)  # as MatchRecord.to_json writes it
    with Store(tmp_path / "two", read_only=True) as store:
        stored = [text for (text,) in store._index.db.execute("SELECT record FROM matches ORDER BY seq")]
        kinds = {kind for (kind,) in store._index.db.execute("SELECT typeof(record) FROM matches")}
    assert stored == lines
    assert kinds == {"text"}  # the worker's bytes are stored as TEXT (json_extract reads them), not as a BLOB
    canonical = sorted((r.canonical() for r in two.records), key=lambda d: d["match_id"])
    assert canonical == sorted((r.canonical() for r in one.records), key=lambda d: d["match_id"])


def test_the_adaptive_rule_reads_worker_records_from_their_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _spec(2)
    spec["experiment"]["until_stable"] = {"rule": "adaptive", "max_repeats": 8, "epsilon": 0.5, "alpha": 0.2}
    one = run_experiment(spec, tmp_path / "one", workers=1)
    _, theirs = slow_driver(monkeypatch)  # a worker surely plays some (the driver plays on while it starts)
    two = run_experiment(spec, tmp_path / "two", workers=2)
    assert theirs and two.stopping.to_dict() == one.stopping.to_dict()
    assert two.match_ids == one.match_ids


def test_a_worker_sends_record_lines_in_one_write_and_counters_when_they_change() -> None:
    spec = parse_spec(_spec(3))
    plan = plan_matches(spec)
    with worker_in_thread(spec.source) as (ours, init, thread):
        requests = [json.dumps(init)]
        requests += [json.dumps({"op": "play", "id": i, "match": encode_planned(m)}) for i, m in enumerate(plan)]
        requests.append(json.dumps({"op": "play", "id": 99, "match": {"match_id": "x"}}))  # malformed: an error
        ours.sendall(("\n".join(requests) + "\n").encode())
        buffer = bytearray()
        messages: list[str] = []
        texts: dict[int, str] = {}
        while len(texts) + ("done" in messages) < len(plan) + 1:
            line = read_line(ours, buffer)
            if line.startswith(b"R "):  # a record: "R <id> <size>", then its JSON line of that size
                _, number, size = line.split()
                data = read_exactly(ours, buffer, int(size))
                assert data.endswith(b"\n") and b"\n" not in data[:-1]
                texts[int(number)] = data[:-1].decode()
                messages.append("record")
            else:
                message = json.loads(line)
                messages.append(message["op"])
                if message["op"] == "done":
                    error = message
                else:
                    assert message["op"] == "counters" and message["counters"]["calls"] == 0
    assert not thread.is_alive()
    assert sorted(texts) == list(range(len(plan)))
    for i, planned in enumerate(plan):
        record = MatchRecord.from_dict(json.loads(texts[i]))
        assert record.match_id == planned.match_id and record.repeat == planned.repeat
        assert texts[i] == record.to_json()  # as to_json wrote it (a moves record's rebuilt turns left out again)
    assert error["id"] == 99 and error["error"]["kind"] == "error"
    # a scripted run's counters never change: they are sent once, before the first result
    assert messages[0] == "counters" and messages.count("counters") == 1


def test_match_ids_are_the_hash_of_the_whole_key() -> None:
    spec = parse_spec(
        {
            "experiment": {"name": "k", "game": "tic_tac_toe", "repeats": 2, "seed": 11},
            "players": [
                {"name": "m", "model": "openai/gpt-4o-mini", "temperature": 0.25, "api_key_env": "NONE_SET"},
                {"name": "r", "bot": "random"},
                {"name": "ü", "model": "openai/x", "seed": 5, "top_p": 0.5, "max_tokens": 64},
            ],
        }
    )
    from deepeval_games.core.registry.games import load_game

    game = load_game("tic_tac_toe")
    expected = []
    for repeat, seats in _seatings(spec, game):
        key = {
            "game": str(game),
            "seats": [_identity(spec.player(name), game, seat) for seat, name in enumerate(seats)],
            "seed": spec.seed,
            "repeat": repeat,
        }
        digest = stable_hash(key, 64)
        expected.append((digest[:20], int(digest[20:36], 16) & (2**63 - 1)))
    assert [(m.match_id, m.seed) for m in plan_matches(spec)] == expected
    assert len(expected) == 12


# -- reading records back: from the text in one pass when it is a current record -------------------------------

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _fixture_records() -> list[MatchRecord]:
    out = []
    for name in ("engine_records.jsonl", "runner_records.jsonl"):
        for line in (FIXTURES / name).read_text().splitlines():
            if line.strip():
                out.append(MatchRecord.from_dict(json.loads(line)["record"]))
    return out


def test_a_worker_sends_exactly_the_text_to_json_writes() -> None:
    records = _fixture_records()
    special = records[0].model_copy(deep=True)
    special.returns = [float("inf"), float("nan")]  # written as Infinity / NaN by both
    special.metrics = {"big": 2**70, "tiny": 5e-324, "text": 'ünïcode ✓ \u2028 \\ "'}
    for record in [*records, special]:
        assert record.to_json_bytes() == record.to_json().encode("utf-8")


def test_from_json_reads_what_from_dict_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    records = _fixture_records()
    assert len(records) >= 20
    special = records[0].model_copy(deep=True)
    special.returns = [float("inf"), float("-inf")]
    special.metrics = {"nan": float("nan"), "big": 2**70, "tiny": 5e-324, "text": 'é \u2028 \\ "'}
    slow: list[str] = []
    original = MatchRecord._validated.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        MatchRecord, "_validated", classmethod(lambda cls, d, **kw: (slow.append("x"), original(cls, d, **kw))[1])
    )
    for record in [*records, special]:
        text = record.to_json()
        read = MatchRecord.from_json(text)
        assert read.to_json() == text
        assert MatchRecord.from_json(text.encode()).to_json() == text
    assert slow == []  # current records never took the parse-then-validate path
    spaced = json.dumps(json.loads(records[1].to_json()))  # other spacing: the full path, the same record
    assert MatchRecord.from_json(spaced) == records[1] and slow == ["x"]


@pytest.mark.parametrize("version", ["v1", "v3"])
def test_from_json_migrates_old_lines_as_from_dict_does(version: str) -> None:
    lines = (FIXTURES / version / "pgg_llm" / "matches.jsonl").read_text().splitlines()
    assert lines
    for line in lines:
        assert MatchRecord.from_json(line) == MatchRecord.from_dict(json.loads(line))


def test_from_json_refuses_what_from_dict_refuses() -> None:
    from deepeval_games.core.records import SCHEMA_VERSION, RecordError

    text = _fixture_records()[0].to_json()
    broken = text.replace('"seats":[', '"seats":[3.5,', 1)
    with pytest.raises(RecordError, match="not a valid record"):
        MatchRecord.from_json(broken)
    newer = text.replace(f'"schema_version":{SCHEMA_VERSION},', '"schema_version":99,')
    with pytest.raises(RecordError, match="newer"):
        MatchRecord.from_json(newer)


def test_the_write_ahead_log_is_checkpointed_along_the_way(tmp_path: Path) -> None:
    from deepeval_games.app.storage.store import WAL_CHECKPOINT_BYTES

    record = _fixture_records()[0]
    text = record.to_json()
    count = 3 * WAL_CHECKPOINT_BYTES // len(text) + 1  # three times the log's limit
    store = Store(tmp_path / "run")
    try:
        for i in range(count):
            assert store.commit_json(f"{i:020x}", text.replace(record.match_id, f"{i:020x}", 1))
            if i % 50 == 0:
                store.flush()
        store.flush()
        wal = tmp_path / "run" / "results.sqlite-wal"
        # checkpointed whenever it held the limit: the log is reused, never as large as all the records
        assert wal.stat().st_size < 2 * WAL_CHECKPOINT_BYTES < count * len(text)
    finally:
        store.close()
    with Store(tmp_path / "run", read_only=True) as reader:
        assert sum(1 for _ in reader.records()) == count


# -- the driver's end of a worker's socket: messages cut out of what arrives, however it is split ----------------


class _Recorder:
    """Stands in for the executor: what the channel hands on."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def _finished_records(self, process: Any, records: list[tuple[int, bytes]]) -> None:
        assert records  # handed on only when there are some
        self.seen += [("record", (request_id, data.decode())) for request_id, data in records]

    def _handle(self, process: Any, message: dict[str, Any]) -> None:
        self.seen.append(("message", message))

    def _lost(self, process: Any) -> None:
        self.seen.append(("lost", None))


class _Transport:
    aborted = False

    def abort(self) -> None:
        self.aborted = True


def _stream() -> tuple[bytes, list[tuple[str, Any]]]:
    records = [r.to_json() for r in _fixture_records()[:4]]
    records.append('{"match_id":"ü","text":"é \\u2028 ✓"}')  # not ASCII: sizes are in bytes
    data, expected = b"", list[tuple[str, Any]]()
    for i, text in enumerate(records):
        counters = {"op": "counters", "counters": {"calls": i}}
        data += json.dumps(counters).encode() + b"\n"
        expected.append(("message", counters))
        line = text.encode() + b"\n"
        data += b"R %d %d\n" % (i + 1, len(line)) + line
        expected.append(("record", (i + 1, text)))
    done = {"op": "done", "id": 9, "error": {"kind": "error", "type": "X", "message": "m", "traceback": ""}}
    data += json.dumps(done).encode() + b"\n"
    expected.append(("message", done))
    return data, expected


@pytest.mark.parametrize("seed", range(6))
def test_the_driver_reads_messages_split_anywhere(seed: int) -> None:
    import random

    from deepeval_games.app.execution.process_executor import _Channel, _Process

    data, expected = _stream()
    recorder = _Recorder()
    channel = _Channel(recorder, _Process(0, 1))  # type: ignore[arg-type]
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(data)), 40)) if seed else list(range(1, len(data)))  # seed 0: byte by byte
    for start, stop in zip([0, *cuts], [*cuts, len(data)], strict=True):
        channel.data_received(data[start:stop])
    assert recorder.seen == expected
    whole = _Recorder()
    _Channel(whole, _Process(0, 1)).data_received(data)  # type: ignore[arg-type]
    assert whole.seen == expected


def test_a_worker_that_breaks_the_framing_is_dropped() -> None:
    from deepeval_games.app.execution.process_executor import _Channel, _Process

    recorder = _Recorder()
    process = _Process(0, 1)
    channel = _Channel(recorder, process)  # type: ignore[arg-type]
    transport = _Transport()
    process.transport = transport  # type: ignore[assignment]
    channel.data_received(b"R 1 5\nabcdefgh\n")  # the size does not end the record's line
    assert transport.aborted and recorder.seen == []
    transport.aborted = False
    channel = _Channel(recorder, process)  # type: ignore[arg-type]
    channel.data_received(b"not json\n")
    assert transport.aborted and recorder.seen == []
