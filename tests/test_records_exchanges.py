"""Records of version 8 (issue 41, item 1): a match where a model spoke is stored as its exchanges.

Its turns are kept as they were exchanged (prompts, replies, outcome, the move applied) and its message pool is not
stored: :func:`~deepeval_games.core.transcript.with_messages` replays the turns and gives the pool back, and the runner
stores a match so only when that replay gives back the very pool it played (else in full, and it says so). The
version-7 fixture (a full record of a model in a Public Goods Game, with an invalid reply and its penalty) loads, and
its spec played again now is stored as exchanges that read back as the version-7 record, field for field.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from deepeval_games.app.commands.cli import main
from deepeval_games.app.execution.run import run_experiment
from deepeval_games.app.spec.loading import load_spec, parse_spec
from deepeval_games.app.storage.store import Store
from deepeval_games.core.records import SCHEMA_VERSION, MatchRecord
from deepeval_games.core.transcript import with_messages, without_messages
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player

V7 = Path(__file__).resolve().parent / "fixtures" / "v7" / "llm_pgg"

REPLIES = [
    '{"reason": "build trust", "coins": 7}',
    "I would rather not say",
    "still no",
    "nope",
    '{"reason": "r", "coins": 3}',
    '{"reason": "r", "coins": 10}',
]
"""What the fixture's model answered, in order (the second round: three replies that are not a move, a penalty)."""


def _answering(replies: list[str]) -> Behaviour:
    answers = iter(replies * 10)
    return Behaviour.responder(lambda body: next(answers))


def _records(run: Path) -> list[MatchRecord]:
    with Store(run) as store:
        return list(store.records())


def test_the_v7_fixture_reads_as_it_was_stored(tmp_path: Path) -> None:
    (record,) = _records(Path(shutil.copytree(V7, tmp_path / "v7")))
    line = json.loads((V7 / "matches.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert line["schema_version"] == 7 and record.schema_version == SCHEMA_VERSION
    assert record.transcript == "full" and record.messages == line["messages"] and record.blind == []
    assert [t.model_dump(mode="json") for t in record.turns] == line["turns"]


def test_the_v7_spec_played_now_is_stored_as_exchanges_that_read_back_as_the_v7_record(
    tmp_path: Path, fake_provider_key: str
) -> None:
    (old,) = _records(Path(shutil.copytree(V7, tmp_path / "v7")))
    with FakeOpenAIServer(default=_answering(REPLIES)) as server:
        text = (V7 / "spec.toml").read_text(encoding="utf-8").replace("http://127.0.0.1:9/v1", server.api_base)
        (tmp_path / "spec.toml").write_text(text, encoding="utf-8")
        result = run_experiment(load_spec(tmp_path / "spec.toml"), tmp_path / "v8")
    (new,) = _records(tmp_path / "v8")
    assert not result.failed
    assert new.transcript == "exchanges" and new.messages == [] and new.moves is None
    assert [t.outcome for t in new.turns if t.seat == 0] == ["ok", "invalid", "ok"]
    # the pool replayed: field for field, timings aside (the match id hashes the endpoint's address, which differs)
    assert _unnamed(with_messages(new).canonical()) == _unnamed(old.canonical())
    assert len(new.to_json()) < 0.6 * len(old.to_json())  # the pool was 44 % of the version-7 line


def _unnamed(canonical: dict[str, Any]) -> dict[str, Any]:
    """A canonical record without what hangs on the match id, which hashes the model's endpoint address (the fixture's
    and this test's server differ): the id, the seed, and the model's sampling seed drawn from it."""
    players = [
        {**player, "sampling": {**player["sampling"], "seed": 0}} if "sampling" in player else player
        for player in canonical["players"]
    ]
    return {k: v for k, v in canonical.items() if k not in ("match_id", "seed", "players")} | {"players": players}


def _pgg_run(server: FakeOpenAIServer, tmp_path: Path, **experiment: Any) -> list[MatchRecord]:
    document = {
        "experiment": {"name": "exchanges", "game": "deepeval_public_goods(players=4,rounds=3,mode=2,alpha=1.6)"}
        | {"repeats": 2, "seed": 3, "cache": False, "max_concurrency": 1, **experiment},
        "players": [
            model_player("llm", server, model="openai/fake-model"),
            {"name": "random", "bot": "random"},  # a seat sent no views: named blind, and sent none on replay
            {"name": "full", "bot": "pgg_full_contributor"},
            {"name": "conditional", "bot": "pgg_conditional_cooperator"},
        ],
    }
    result = run_experiment(parse_spec(document), tmp_path / f"run-{len(experiment)}")
    assert not result.failed
    return _records(tmp_path / f"run-{len(experiment)}")


def test_a_model_beside_a_blind_seat_is_stored_as_exchanges_and_replays_its_pool(
    tmp_path: Path, fake_provider_key: str
) -> None:
    with FakeOpenAIServer(default=_answering(REPLIES)) as server:
        derived = _pgg_run(server, tmp_path)
        full = _pgg_run(server, tmp_path, transcript="full")
    assert [r.transcript for r in derived] == ["exchanges"] * 2 and [r.transcript for r in full] == ["full"] * 2
    for stored in derived:
        assert stored.blind == [stored.seats.index("random")]
    for played in full:  # stored as the runner would, then read back: the very record played
        seat = played.seats.index("random")
        assert played.blind == [] and sum(seat in m["recipients"] for m in played.messages) == 2  # rules, final view
        stored = without_messages(played, [seat])
        assert stored.transcript == "exchanges" and stored.blind == [seat]
        replayed = with_messages(stored)
        assert replayed.messages == played.messages and replayed.canonical() == played.canonical()
        assert without_messages(played) is played  # told no blind seat, the replay sends it views: kept in full


def test_a_record_whose_turns_do_not_give_its_pool_back_stays_in_full(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (record,) = _records(Path(shutil.copytree(V7, tmp_path / "v7")))
    tampered = record.model_copy(update={"messages": [*record.messages[:-1], {**record.messages[-1], "text": "?"}]})
    wrong_move = record.turns[0].model_copy(update={"action": 99})
    broken = record.model_copy(update={"turns": [wrong_move, *record.turns[1:]]})
    with caplog.at_level(logging.INFO, logger="deepeval_games.core.transcript"):
        kept = without_messages(tampered)
        assert kept is tampered and kept.transcript == "full"
        assert "stored in full: replaying its turns gives another message pool" in caplog.text
        assert without_messages(broken) is broken  # a move the record says that a replay does not make: full
        assert "its turns do not replay" in caplog.text
    assert without_messages(record).transcript == "exchanges"


def test_report_and_the_html_page_read_a_run_of_exchanges(
    tmp_path: Path, fake_provider_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(default=_answering(REPLIES)) as server:
        records = _pgg_run(server, tmp_path)
    assert {r.transcript for r in records} == {"exchanges"}
    run = tmp_path / "run-0"
    assert main(["report", str(run), "--html", str(tmp_path / "page")]) == 0
    pages = " ".join(p.read_text(encoding="utf-8") for p in (tmp_path / "page").rglob("*") if p.is_file())
    pool = with_messages(records[0]).messages
    observation = next(m["text"] for m in pool if m["kind"] == "observation" and "coins" in m["text"])
    assert json.dumps(observation)[1:30] in pages  # the replayed pool is on the page
