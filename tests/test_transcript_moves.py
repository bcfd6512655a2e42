"""Records of matches between fields bots kept as their moves (record version 5, ``transcript = "moves"``).

A match whose every seat moves from its observation fields (the Public Goods baselines) is stored as rows of moves;
reading it rebuilds its turns, and :func:`deepeval_games.core.transcript.with_messages` its message pool, by replaying
the
moves through the referee. The property that matters: the rebuilt record equals the one ``transcript = "full"``
stores for the same match, timings aside, across modes, seat counts, parameters, noise and random bots.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deepeval_games.app.execution.run import run_experiment
from deepeval_games.app.reports.html import transcript_json
from deepeval_games.app.spec.spec import parse_spec
from deepeval_games.app.storage.store import JSONL_NAME, Store
from deepeval_games.core.bot import FieldsBot, SyncBot
from deepeval_games.core.errors import UnknownGameError
from deepeval_games.core.records import CHANCE_SEAT, MatchRecord, RecordError
from deepeval_games.core.referee import TranscriptNotDerivable, play_match
from deepeval_games.core.registry.bots import make_bot, register_bot
from deepeval_games.core.registry.games import load_game
from deepeval_games.core.transcript import with_messages
from llm_bots.players.classical import RandomBot

PGG_BOTS = ("pgg_free_rider", "pgg_full_contributor", "pgg_conditional_cooperator", "pgg_random", "pgg_grim_trigger")


@register_bot("test_fields_illegal_in_round_2")
class IllegalInRound2(FieldsBot):
    """Invests 3, but answers 999 (never legal) in round 2."""

    def __init__(self, player_id: int, rng: Any = None, *, game: Any = None) -> None:
        super().__init__(player_id, rng)

    def move_from_fields(self, fields: Mapping[str, Any]) -> int:
        return 999 if fields["round"] == 2 else 3


class Talker(SyncBot):
    """Not a fields bot: answers through an observation."""

    def respond(self, observation: Any) -> Any:
        from deepeval_games.core.bot import Decision

        return Decision.move(observation.legal_actions[0])


def _bots(game: Any, names: list[str], seed: int, params: dict[str, Any] | None = None) -> list[Any]:
    return [
        make_bot(name, game, seat, np.random.default_rng([seed, seat]), params or {}) for seat, name in enumerate(names)
    ]


def _both(
    game_string: str, names: list[str], seed: int, params: dict[str, Any] | None = None
) -> tuple[MatchRecord, MatchRecord]:
    """The same match recorded in full and as its moves (new bots from the same seeds for each)."""
    game = load_game(game_string)
    full = asyncio.run(play_match(game, _bots(game, names, seed, params), seed=seed, match_id="m", seat_names=names))
    moves = asyncio.run(
        play_match(
            game, _bots(game, names, seed, params), seed=seed, match_id="m", seat_names=names, transcript="moves"
        )
    )
    return full, moves


CASES = [
    ("deepeval_public_goods(players=4,rounds=5,mode=1)", [0, 1, 2, 3], {}),
    ("deepeval_public_goods(players=4,rounds=5,mode=2)", [3, 2, 1, 0], {}),
    ("deepeval_public_goods(players=2,rounds=1)", [0, 3], {}),
    ("deepeval_public_goods(players=3,rounds=7,mode=2,alpha=2.5,endowment=7)", [2, 3, 4], {}),
    ("deepeval_public_goods(players=5,rounds=4,mode=1,goal=most)", [4, 3, 2, 1, 0], {"noise": 0.3}),
    ("deepeval_public_goods(players=4,rounds=6,mode=2)", [3, 3, 2, 4], {"noise": 0.5}),
]


@pytest.mark.parametrize("seed", [0, 7, 123])
@pytest.mark.parametrize(("game_string", "bots", "params"), CASES)
def test_a_moves_record_replays_to_the_full_record(
    game_string: str, bots: list[int], params: dict[str, Any], seed: int
) -> None:
    names = [PGG_BOTS[i] for i in bots]
    full, moves = _both(game_string, names, seed, params)
    assert full.transcript == "full" and full.moves is None and full.messages
    assert moves.transcript == "moves" and moves.messages == [] and moves.turns == []
    assert moves.moves is not None and len(moves.moves) == len(full.turns)
    assert len(moves.to_json()) * 5 < len(full.to_json())
    back = MatchRecord.from_json(moves.to_json())  # as the store reads it: turns rebuilt, messages not
    assert back.canonical() == moves.canonical()
    assert [t.model_dump(exclude={"latency_s"}) for t in back.turns] == [
        t.model_dump(exclude={"latency_s"}) for t in full.turns
    ]
    assert [t.latency_s for t in back.turns] == [row[3] for row in moves.moves]  # the recorded latencies kept
    for record in (back, moves, MatchRecord.from_dict(json.loads(moves.to_json()))):
        whole = with_messages(record)
        assert whole.transcript == "full" and whole.moves is None
        assert whole.canonical() == full.canonical()


def test_a_moves_record_read_back_is_written_as_it_was_stored(tmp_path: Path) -> None:
    """Reading rebuilds the turns; writing leaves them out again (the rows stand for them): a record read from one
    store and committed to another (as the Ray executor's records are) is stored as small as it was played."""
    _, moves = _both("deepeval_public_goods(players=4,rounds=5)", list(PGG_BOTS[:4]), 2)
    text = moves.to_json()
    back = MatchRecord.from_json(text)
    assert back.turns and back.to_json() == text and back.to_json_bytes() == text.encode()
    assert back.to_dict() == json.loads(text)
    with Store(tmp_path / "run") as store:
        store.commit(back)
    [line] = _lines(tmp_path / "run")
    assert line["turns"] == [] and line == json.loads(text)
    back.turns[0].latency_s = 9.0  # changed after reading: kept beside the rows, and read back as changed
    edited = MatchRecord.from_json(back.to_json())
    assert edited.turns[0].latency_s == 9.0 and edited.moves == moves.moves and edited.turns == back.turns


def test_the_report_keeps_no_rows_in_its_slim_records() -> None:
    from deepeval_games.app.reports.columns import slim

    _, moves = _both("deepeval_public_goods(players=4,rounds=5)", list(PGG_BOTS[:4]), 2)
    light = slim(MatchRecord.from_json(moves.to_json()))
    assert light.moves is None and len(light.turns) == 20


@pytest.mark.parametrize(("game_string", "bots", "params"), [CASES[0], CASES[4]])
def test_a_moves_record_read_as_stored_slims_to_the_slim_record_of_its_turns(
    game_string: str, bots: list[int], params: dict[str, Any]
) -> None:
    """The run summary reads moves records as stored (``rebuild_turns=False``: rows, no turns) and slims them from
    their rows: the very slim record the rebuilt turns give, sharing its turns with theirs."""
    from deepeval_games.app.reports.columns import slim

    _, moves = _both(game_string, [PGG_BOTS[i] for i in bots], 5, params)
    text = moves.to_json()
    rebuilt, stored = MatchRecord.from_json(text), MatchRecord.from_json(text, rebuild_turns=False)
    spaced = MatchRecord.from_json(json.dumps(json.loads(text), indent=1), rebuild_turns=False)  # the parsing path
    assert rebuilt.turns and stored.turns == [] == spaced.turns and stored.moves == spaced.moves == moves.moves
    assert slim(stored).model_dump() == slim(rebuilt).model_dump()
    interned: dict[Any, Any] = {}
    light = slim(rebuilt, interned)
    for record in (stored, spaced):
        again = slim(record, interned)
        assert again.model_dump() == light.model_dump() and all(
            a is b for a, b in zip(again.turns, light.turns, strict=True)
        )
    first: dict[Any, Any] = {}  # read as stored before any full record: the same slim turns
    assert slim(stored, first).model_dump() == light.model_dump()


def test_chance_rows_slim_as_a_full_record_s_chance_turns_without_names() -> None:
    """A slim turn keeps no move's name, a chance outcome's included (rows hold none since version 9; the report's
    tables read none): the slim turns of a Kuhn poker record's rows are those of its turns read back in full, the very
    same objects, though the full record names its deals."""
    from deepeval_games.app.reports.columns import slim

    game = load_game("kuhn_poker")
    bots = [RandomBot(seat, np.random.default_rng(seat), game=game) for seat in range(2)]
    moves = asyncio.run(play_match(game, bots, seed=3, match_id="kuhn", transcript="moves"))
    assert moves.moves is not None and [row[1] for row in moves.moves[:2]] == [CHANCE_SEAT, CHANCE_SEAT]
    stored = MatchRecord.from_json(moves.to_json(), rebuild_turns=False)
    rebuilt = MatchRecord.from_json(moves.to_json())
    assert [t.action_string for t in rebuilt.turns[:2]] == [f"Deal:{row[2]}" for row in moves.moves[:2]]
    interned: dict[Any, Any] = {}
    light, again = slim(rebuilt, interned), slim(stored, interned)
    assert [t.action_string for t in light.turns] == [""] * len(light.turns)
    assert all(a is b for a, b in zip(light.turns, again.turns, strict=True))


def test_a_replay_that_fails_any_other_way_is_a_record_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import deepeval_games.core.transcript as transcript

    _, moves = _both("deepeval_public_goods(players=2,rounds=2)", ["pgg_free_rider", "pgg_random"], 1)

    async def broken(*args: Any, **kwargs: Any) -> MatchRecord:
        raise RuntimeError("did not end within 3 rounds")

    monkeypatch.setattr(transcript, "play_match", broken)
    with pytest.raises(RecordError, match="does not replay: RuntimeError: did not end"):
        with_messages(moves)


def test_transcript_and_moves_must_agree() -> None:
    _, moves = _both("deepeval_public_goods(players=2,rounds=2)", ["pgg_free_rider", "pgg_random"], 1)
    data = json.loads(moves.to_json())
    with pytest.raises(RecordError, match="transcript 'full' with moves given"):
        MatchRecord.from_dict({**data, "transcript": "full"})
    with pytest.raises(RecordError, match="transcript 'moves' with moves None"):
        MatchRecord.from_dict({**data, "moves": None})


def test_a_full_record_is_its_own_transcript() -> None:
    full, _ = _both("deepeval_public_goods(players=2,rounds=2)", ["pgg_free_rider", "pgg_random"], 1)
    assert with_messages(full) is full


def test_an_illegal_answer_cannot_be_kept_as_moves() -> None:
    game = load_game("deepeval_public_goods(players=2,rounds=3)")
    names = ["pgg_free_rider", "test_fields_illegal_in_round_2"]
    with pytest.raises(TranscriptNotDerivable, match="999"):
        asyncio.run(play_match(game, _bots(game, names, 0), seed=0, transcript="moves"))


class Awaited(Talker):
    """Answers through an awaited ``act`` (as an LLM or a person does)."""

    async def act(self, observation: Any) -> Any:
        return self.respond(observation)


def test_matches_with_an_awaited_seat_are_recorded_in_full() -> None:
    """Since record version 7 a seat that answers at once through its observation (not a fields bot) is recorded as
    its moves too, and replays to the full record; a seat that is awaited makes the match recorded in full."""
    game = load_game("deepeval_public_goods(players=2,rounds=2)")
    played = {}
    for transcript in ("moves", "full"):
        bots = [make_bot("pgg_free_rider", game, 0, np.random.default_rng(0), {}), Talker(1)]
        played[transcript] = asyncio.run(play_match(game, bots, seed=0, transcript=transcript))
    assert played["moves"].transcript == "moves" and played["moves"].blind == []
    read = with_messages(MatchRecord.from_json(played["moves"].to_json()))
    assert read.canonical() == played["full"].canonical()
    bots = [make_bot("pgg_free_rider", game, 0, np.random.default_rng(0), {}), Awaited(1)]
    record = asyncio.run(play_match(game, bots, seed=0, transcript="moves"))
    assert record.transcript == "full" and record.messages and record.turns


def test_classical_players_are_recorded_as_their_moves_and_replay_without_views() -> None:
    """Since record version 7 a match of classical players (no seat awaited) is stored as its moves too, its seats
    that read no view named ``blind``; replayed, it is the match recorded in full, field for field."""
    kuhn = load_game("kuhn_poker")
    played = []
    for transcript in ("moves", "full"):
        bots = [make_bot("random", kuhn, seat, np.random.default_rng(seat), {}) for seat in range(2)]
        played.append(asyncio.run(play_match(kuhn, bots, seed=0, transcript=transcript)))
    moves, full = played
    assert moves.transcript == "moves" and moves.blind == [0, 1] and not moves.messages
    assert with_messages(MatchRecord.from_json(moves.to_json())).canonical() == full.canonical()


def _spec(name: str, players: list[str], **experiment: Any) -> dict[str, Any]:
    return {
        "experiment": {"name": name, "game": "deepeval_public_goods(players=4,rounds=3)", "repeats": 3, **experiment},
        "players": [{"name": bot, "bot": bot} for bot in players],
    }


def _lines(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / JSONL_NAME).read_text("utf-8").splitlines()]


def test_a_run_stores_moves_by_default_and_full_transcripts_on_request(tmp_path: Path) -> None:
    players = list(PGG_BOTS[:4])
    run_experiment(_spec("moves", players, repeats=12), tmp_path / "auto")
    run_experiment(_spec("moves", players, repeats=12, transcript="full"), tmp_path / "full")
    auto_lines, full_lines = _lines(tmp_path / "auto"), _lines(tmp_path / "full")
    assert len(auto_lines) == len(full_lines) == 12
    assert all(line["transcript"] == "moves" and not line["messages"] and not line["turns"] for line in auto_lines)
    assert all(line["transcript"] == "full" and line["messages"] and line["moves"] is None for line in full_lines)
    assert sum(map(len, map(json.dumps, auto_lines))) * 5 < sum(map(len, map(json.dumps, full_lines)))
    with Store(tmp_path / "auto", read_only=True) as store:
        auto = {record.match_id: record for record in store.records()}
    with Store(tmp_path / "full", read_only=True) as store:
        full = {record.match_id: record for record in store.records()}
    assert auto.keys() == full.keys()  # the same match ids: the setting is not part of the spec hash
    for match_id, record in auto.items():
        assert len(record.turns) == len(full[match_id].turns)  # turns rebuilt on reading
        assert with_messages(record).canonical() == full[match_id].canonical()


def test_a_match_with_an_illegal_answer_is_played_again_and_recorded_in_full(tmp_path: Path) -> None:
    spec = _spec("illegal", ["pgg_free_rider", "test_fields_illegal_in_round_2"], repeats=2)
    spec["experiment"]["game"] = "deepeval_public_goods(players=2,rounds=3)"
    result = run_experiment(spec, tmp_path / "run")
    assert result.played == 2 and result.failed == []
    for line in _lines(tmp_path / "run"):
        assert line["transcript"] == "full"
        seat = line["seats"].index("test_fields_illegal_in_round_2")
        outcomes = [t["outcome"] for t in line["turns"] if t["seat"] == seat]
        assert outcomes == ["ok", "invalid", "ok"]  # the same match as a full record would hold


def test_a_record_whose_moves_do_not_replay_is_refused() -> None:
    _, moves = _both("deepeval_public_goods(players=3,rounds=3)", ["pgg_free_rider", "pgg_random", "pgg_random"], 4)
    assert moves.moves is not None
    rows = [list(row) for row in moves.moves]
    changed = [*rows[:1], [rows[1][0], rows[1][1], (rows[1][2] + 1) % 11, rows[1][3]], *rows[2:]]
    for bad in (changed, rows[:-1], [*rows, rows[-1]]):
        record = moves.model_copy(update={"moves": [tuple(row) for row in bad]})
        with pytest.raises(RecordError, match="does not replay"):
            with_messages(record)
    with pytest.raises(UnknownGameError):
        with_messages(moves.model_copy(update={"game": "deepeval_no_such_game()"}))
    with pytest.raises(RecordError, match="moves are not rows"):
        MatchRecord.from_dict({**json.loads(moves.to_json()), "moves": [[1, 2]]})


def test_the_html_report_shows_a_moves_record_with_its_replayed_messages(caplog: pytest.LogCaptureFixture) -> None:
    full, moves = _both("deepeval_public_goods(players=2,rounds=2)", ["pgg_free_rider", "pgg_full_contributor"], 3)
    shown = transcript_json(MatchRecord.from_json(moves.to_json()), "run")
    assert shown["messages"] == transcript_json(full, "run")["messages"] and shown["messages"]
    broken = moves.model_copy(update={"game": "deepeval_no_such_game()"})
    with caplog.at_level(logging.WARNING, logger="deepeval_games.app.reports.html"):
        assert transcript_json(broken, "run")["messages"] == []
    assert "shown without messages" in caplog.text


def test_the_transcript_setting_is_checked_and_stays_out_of_the_spec_hash() -> None:
    base = _spec("hash", list(PGG_BOTS[:4]))
    full = _spec("hash", list(PGG_BOTS[:4]), transcript="full")
    assert parse_spec(base).content_hash() == parse_spec(full).content_hash()
    with pytest.raises(Exception, match="transcript"):
        parse_spec(_spec("hash", list(PGG_BOTS[:4]), transcript="some"))
