"""Match records: the current schema version round-trips, and run directories of versions 1 to 5 still load and report.

The rule (deepeval_games.core.records): a change to the record bumps its version, adds a migration and a small
checked-in run-directory fixture of the old version (``tests/fixtures/v<N>/``), loaded here.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from deepeval_games.app.commands.cli import main
from deepeval_games.app.storage.store import DB_NAME, JSONL_NAME, Store
from deepeval_games.core.bot import Outcome
from deepeval_games.core.records import MIGRATIONS, SCHEMA_VERSION, MatchRecord, RecordError, TurnRecord, migrate

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _copy(name: str, tmp_path: Path) -> Path:
    """A writable copy of a fixture run directory (the store writes: WAL, jsonl repair)."""
    return Path(shutil.copytree(FIXTURES / name, tmp_path / name.replace("/", "-")))


def _lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name / JSONL_NAME).read_text(encoding="utf-8").splitlines()]


def _migrated(name: str, version: int, tmp_path: Path) -> list[tuple[MatchRecord, dict]]:
    """Each record of a fixture run directory of record ``version`` as the store loads it now (migrated to the
    current version, in the same order), with the fixture's JSONL line it came from."""
    old = _lines(name)
    assert {line["schema_version"] for line in old} == {version}
    with Store(_copy(name, tmp_path)) as store:
        records = list(store.records())
    assert [r.match_id for r in records] == [line["match_id"] for line in old]
    assert all(record.schema_version == SCHEMA_VERSION for record in records)
    return list(zip(records, old, strict=True))


def test_every_old_version_has_a_migration_and_a_fixture() -> None:
    assert SCHEMA_VERSION == 9
    assert [version for version, _ in MIGRATIONS] == list(range(SCHEMA_VERSION))
    for version in range(1, SCHEMA_VERSION):
        runs = [p for p in (FIXTURES / f"v{version}").iterdir() if (p / DB_NAME).exists()]
        assert runs, f"no run-directory fixture of record version {version}"


@pytest.mark.parametrize("name", ["v1/pgg_scripted", "v1/pgg_llm"])
def test_v1_run_directories_load_migrated_and_validated(name: str, tmp_path: Path) -> None:
    for record, line in _migrated(name, 1, tmp_path):
        assert record.status == "complete"
        assert MatchRecord.model_validate(record.to_dict()) == record
        for turn, v1 in zip(record.turns, line["turns"], strict=True):
            assert isinstance(turn.outcome, Outcome) and turn.outcome == v1["outcome"]
            assert turn.prompts == ([v1["prompt"]] if v1["prompt"] else [])
            assert "prompt" not in turn.model_dump()


def test_the_reasked_llm_turn_keeps_its_first_prompt(tmp_path: Path) -> None:
    [line] = _lines("v1/pgg_llm")
    with Store(_copy("v1/pgg_llm", tmp_path)) as store:
        [record] = list(store.records())
    seat = record.seats.index("llm")
    first, second = [t for t in record.turns if t.seat == seat]
    v1_first = next(t for t in line["turns"] if t["seat"] == seat)
    assert first.outcome == "reasked" and first.retries == 1 and len(first.raw_replies) == 2
    assert first.prompts and first.prompts[0] == v1_first["prompt"]  # version 1 kept the first ask only
    assert first.prompts[0][-1]["role"] == "user" and second.outcome == Outcome.OK


@pytest.mark.parametrize(
    "name",
    [f"v{version}/pgg_{kind}" for version in range(1, 6) for kind in ("scripted", "llm")],
)
def test_report_reads_v1_run_directories(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _copy(name, tmp_path)
    assert main(["report", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "Eq. 1" in out and "deepeval_public_goods" in out
    for seat in _lines(name)[0]["seats"]:
        assert seat in out


def _v2_record() -> MatchRecord:
    ask = [{"role": "user", "content": "How many coins?"}]
    reask = [*ask, {"role": "assistant", "content": "many"}, {"role": "user", "content": "A number, please."}]
    turns = [
        TurnRecord.model_construct(
            index=0,
            round=1,
            seat=0,
            action=3,
            action_string="invest 3",
            text="3",
            outcome=Outcome.REASKED,
            raw_replies=["many", "3"],
            prompts=[ask, reask],
            retries=1,
            model="fake-model",
            tokens_in=20,
            tokens_out=2,
            cost_usd=0.001,
            latency_s=0.5,
        ),
        TurnRecord.model_construct(index=1, round=1, seat=-1, action=0, action_string="chance"),
    ]
    return MatchRecord(match_id="m", game="g()", seats=["a"], returns=[1.5], turns=turns, seed=3, wall_time_s=1.0)


def test_v2_round_trip() -> None:
    record = _v2_record()
    data = record.to_dict()
    assert data["schema_version"] == SCHEMA_VERSION and data["turns"][0]["outcome"] == "reasked"
    assert data["turns"][0]["prompts"][1][-1]["content"] == "A number, please."
    text = json.dumps(data, sort_keys=True)
    back = MatchRecord.from_dict(json.loads(text))
    assert back == record and back.to_dict() == data
    assert back.turns[0].outcome is Outcome.REASKED and back.turns[1].outcome == "ok"
    assert "latency_s" not in back.canonical()["turns"][0] and "wall_time_s" not in back.canonical()
    back.experiment, back.repeat = "e", 2  # records are mutable: the runner fills these in
    assert back.to_dict()["experiment"] == "e"


def test_a_newer_record_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {**_v2_record().to_dict(), "schema_version": SCHEMA_VERSION + 1}
    with pytest.raises(
        RecordError, match=rf"schema version {SCHEMA_VERSION + 1}, newer than .* reads \({SCHEMA_VERSION}\)"
    ):
        MatchRecord.from_dict(data)
    run_dir = _copy("v1/pgg_scripted", tmp_path)
    with sqlite3.connect(run_dir / DB_NAME) as db:
        db.execute("UPDATE matches SET record = ? WHERE seq = 1", (json.dumps(data),))
    assert main(["report", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "newer" in err and "Traceback" not in err


def test_invalid_records_and_versions_are_clear_errors() -> None:
    data = _v2_record().to_dict()
    with pytest.raises(RecordError, match="not a valid record"):
        MatchRecord.from_dict({**data, "status": "done"})
    with pytest.raises(RecordError, match="bad schema_version"):
        MatchRecord.from_dict({**data, "schema_version": "2"})
    unversioned = {k: v for k, v in data.items() if k != "schema_version"}  # version 0: the layout of version 1
    unversioned["turns"] = [{**{k: v for k, v in t.items() if k != "prompts"}, "prompt": []} for t in data["turns"]]
    assert migrate(unversioned)["schema_version"] == SCHEMA_VERSION
    assert MatchRecord.from_dict(unversioned).turns[0].prompts == []


@pytest.mark.usefixtures("fake_provider_key")
def test_new_records_keep_the_messages_of_every_ask(tmp_path: Path) -> None:
    from deepeval_games.app.execution.run import run_experiment
    from tests.fake_openai_server import Behaviour, FakeOpenAIServer

    good = '{"reason": "r", "coins": 3}'
    with FakeOpenAIServer(default=Behaviour.reply(good), max_hang_s=5) as server:
        server.script(Behaviour.reply("nonsense"))
        llm = {
            "name": "llm",
            "model": "openai/fake-model",
            "api_base": server.api_base,
            "api_key_env": "FAKE_PROVIDER_KEY",
            "max_retries": 0,
            "timeout_s": 5,
        }
        spec = {
            "experiment": {"game": "deepeval_public_goods(players=2,rounds=2)", "cache": False},
            "players": [{"name": "free", "bot": "pgg_free_rider"}, llm],
        }
        result = run_experiment(spec, tmp_path / "run")
        requests = [body["messages"] for body in server.requests]
    [record] = result.records
    seat = record.seats.index("llm")
    turns = [t for t in record.turns if t.seat == seat]
    assert turns[0].outcome == "reasked" and len(turns[0].prompts) == 2 and len(turns[1].prompts) == 1
    assert [ask for t in turns for ask in t.prompts] == requests  # exactly what was sent, ask by ask
    with Store(tmp_path / "run") as store:
        assert [r.to_dict() for r in store.records()] == [record.to_dict()]


@pytest.mark.parametrize("name", ["v2/pgg_scripted", "v2/pgg_llm"])
def test_v2_run_directories_gain_empty_attempts_and_cuts(name: str, tmp_path: Path) -> None:
    for record, line in _migrated(name, 2, tmp_path):
        for turn, v2 in zip(record.turns, line["turns"], strict=True):
            assert turn.attempts == [] and turn.cut_chars == []
            assert turn.prompts == v2["prompts"] and turn.raw_replies == v2["raw_replies"]


@pytest.mark.parametrize("name", ["v3/pgg_scripted", "v3/pgg_llm"])
def test_v3_run_directories_gain_empty_finish_reasons(name: str, tmp_path: Path) -> None:
    migrated = _migrated(name, 3, tmp_path)
    for record, line in migrated:
        for turn, v3 in zip(record.turns, line["turns"], strict=True):
            assert turn.finish_reasons == [] and turn.reasoning_tokens == 0
            assert turn.outcome == v3["outcome"] and turn.raw_replies == v3["raw_replies"]
    if name.endswith("llm"):
        assert any(t.outcome == "reasked" for t in migrated[0][0].turns)


@pytest.mark.parametrize("name", ["v4/pgg_scripted", "v4/pgg_llm"])
def test_v4_run_directories_are_full_transcripts(name: str, tmp_path: Path) -> None:
    """Every version-4 record kept its whole transcript: it reads as ``transcript = "full"``, unchanged otherwise
    (but for the turn fields of later versions)."""
    from deepeval_games.core.transcript import with_messages

    later = ("cached_tokens", "cache_write_tokens")  # version 6 (and "blind", version 7)
    for record, line in _migrated(name, 4, tmp_path):
        assert record.transcript == "full" and record.moves is None
        assert with_messages(record) is record  # nothing to rebuild
        data = record.to_dict()
        data["turns"] = [{k: v for k, v in turn.items() if k not in later} for turn in data["turns"]]
        assert {k: v for k, v in data.items() if k not in ("transcript", "moves", "blind", "schema_version")} == {
            k: v for k, v in line.items() if k != "schema_version"
        }


@pytest.mark.parametrize("name", ["v5/pgg_scripted", "v5/pgg_llm"])
def test_v5_run_directories_gain_no_cached_tokens(name: str, tmp_path: Path) -> None:
    """Version 5 recorded no prompt-cache figures: its turns read 0 cached and 0 cache-written tokens, the rest as
    stored (a record stored as its moves rebuilds its turns as before)."""
    for record, line in _migrated(name, 5, tmp_path):
        assert record.transcript == line["transcript"]
        assert all(t.cached_tokens == 0 and t.cache_write_tokens == 0 for t in record.turns)
        if line["transcript"] == "full":
            assert [t.tokens_in for t in record.turns] == [t["tokens_in"] for t in line["turns"]]
            assert [t.raw_replies for t in record.turns] == [t["raw_replies"] for t in line["turns"]]
        else:
            assert len(record.turns) == len(line["moves"])


@pytest.mark.parametrize("name", ["v6/ttt_classical", "v6/pgg_scripted"])
def test_v6_run_directories_read_with_no_blind_seats(name: str, tmp_path: Path) -> None:
    """Version 6 named no seat that was sent no views: its records read ``blind`` empty, the rest as stored."""
    for record, line in _migrated(name, 6, tmp_path):
        assert record.blind == [] and record.transcript == line["transcript"]
        assert record.returns == line["returns"]
        if line["transcript"] == "full":
            assert [t.model_dump(mode="json") for t in record.turns] == line["turns"]
            assert record.messages == line["messages"]
        else:
            assert len(record.turns) == len(line["moves"])


@pytest.mark.parametrize("name", ["v6/ttt_classical", "v6/pgg_scripted"])
def test_v7_plays_the_v6_spec_to_the_same_records(name: str, tmp_path: Path) -> None:
    """The spec that wrote a version-6 run, played again now: the same match ids, each stored as its moves, and each
    record read back and replayed (:func:`with_messages`) equal to the version-6 one, field for field, timings aside
    (a classical player's match was stored in full then)."""
    from deepeval_games.core.transcript import with_messages

    out = tmp_path / "v7"
    assert main(["run", str(FIXTURES / name / "spec.toml"), "--out", str(out)]) == 0
    with Store(out) as store:
        now = {record.match_id: record for record in store.records()}
    then = {record.match_id: record for record, _ in _migrated(name, 6, tmp_path)}
    assert sorted(now) == sorted(then)
    for match_id, old in then.items():
        new = now[match_id]
        assert new.transcript == "moves" and new.messages == []
        assert with_messages(new).canonical() == with_messages(old).canonical()


V8_RUNS = ["v8/ttt_classical", "v8/pgg_scripted", "v8/kuhn_classical"]


@pytest.mark.parametrize("name", V8_RUNS)
def test_v8_rows_lose_their_names_and_reading_replays_the_same_names(name: str, tmp_path: Path) -> None:
    """Version 8 wrote each move's name in its row; version 9 drops the column and names the moves by replaying them
    (sequential moves of a C++ game, simultaneous moves of a Python game, chance outcomes): every name read back is
    the one version 8 stored, and the rows, latencies and returns are as stored."""
    for record, line in _migrated(name, 8, tmp_path):
        old = line["moves"]
        assert line["transcript"] == record.transcript == "moves" and all(len(row) == 5 for row in old)
        assert record.moves == [(r, seat, action, latency) for r, seat, action, _, latency in old]
        assert [t.action_string for t in record.turns] == [row[3] for row in old]
        assert [t.text for t in record.turns] == [row[3] if row[1] >= 0 else "" for row in old]
        assert [t.latency_s for t in record.turns] == [row[4] if row[1] >= 0 else 0.0 for row in old]
        assert record.returns == line["returns"] and record.blind == line["blind"]
        stored = json.loads(record.to_json())
        assert stored["turns"] == [] and [len(row) for row in stored["moves"]] == [4] * len(old)
    if name == "v8/kuhn_classical":
        assert any(row[1] == -1 for line in _lines(name) for row in line["moves"])  # deals named by replaying


@pytest.mark.parametrize("name", V8_RUNS)
def test_v9_plays_the_v8_spec_to_the_same_records(name: str, tmp_path: Path) -> None:
    """The spec that wrote a version-8 run, played again now: the same match ids and moves, and each record read back
    (its names replayed) and replayed in full equal to the version-8 one, field for field, timings aside."""
    from deepeval_games.core.transcript import with_messages

    out = tmp_path / "v9"
    assert main(["run", str(FIXTURES / name / "spec.toml"), "--out", str(out)]) == 0
    with Store(out) as store:
        now = {record.match_id: record for record in store.records()}
    then = {record.match_id: record for record, _ in _migrated(name, 8, tmp_path)}
    assert sorted(now) == sorted(then)
    for match_id, old in then.items():
        new = now[match_id]
        assert new.canonical() == old.canonical()
        assert with_messages(new).canonical() == with_messages(old).canonical()
    lines = (out / JSONL_NAME).read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line)["schema_version"] == SCHEMA_VERSION for line in lines)
    assert sum(map(len, lines)) < sum(len(json.dumps(line, separators=(",", ":"))) for line in _lines(name))


def test_a_record_of_a_game_not_loaded_here_reads_as_stored_and_says_why_its_turns_cannot_be_rebuilt(
    tmp_path: Path,
) -> None:
    """Reading the names replays the game: a record of a game not registered here (a plugin since removed) still
    reads as stored (its rows, for the report's tables), and rebuilding its turns is a clear :class:`RecordError`."""
    [line, *_] = _lines("v8/ttt_classical")
    data = migrate({**line, "game": "deepeval_no_such_game()"})
    text = json.dumps(data)
    stored = MatchRecord.from_json(text, rebuild_turns=False)
    assert stored.moves is not None and stored.turns == []
    with pytest.raises(RecordError, match="does not load here"):
        MatchRecord.from_json(text)
    bad_rows = (
        [[1, 0, 99, 0.0]],  # no such square (the replay checks every move before the game's C++ is given it)
        [[1, 1, 4, 0.0]],  # the seat not to move
        [[1, 0, 4, 0.0], [2, 1, 4, 0.0]],  # a square taken
        [[1, -1, 0, 0.0]],  # a chance outcome where the game has no chance node
        [[1, 0, "4", 0.0]],  # not a move
    )
    for rows in bad_rows:
        with pytest.raises(RecordError, match="does not replay"):
            MatchRecord.from_json(json.dumps({**migrate(line), "moves": rows}))
