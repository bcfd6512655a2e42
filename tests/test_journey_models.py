"""The journey tests' three fake models (tests/journey_models.py) really differ: ``strong`` out-scores ``weak`` and
``broken``'s every turn is counted invalid, in the two games the journeys play (tic-tac-toe and the Public Goods
Game), through ``deepeval-games eval`` as a user runs it; and each model's replies, one request at a time."""

from __future__ import annotations

import json
import re
from pathlib import Path
from statistics import mean
from typing import Any

import pytest

from deepeval_games.app.commands.cli import main
from deepeval_games.app.storage.store import Store
from deepeval_games.core.bot import Outcome
from deepeval_games.core.records import MatchRecord
from tests.journey_models import (
    BROKEN_REPLY,
    MODELS,
    broken_reply,
    eval_argv,
    respond,
    strong_reply,
    three_models,
    weak_reply,
)

TTT_MATCHES = 20
"""Tic-tac-toe's least budget: one round of every seating of five players (the three models, random, MCTS)."""
PGG_MATCHES = 15
"""The Public Goods Game's least budget: one round of every line-up of four of six players (the models, 3 baselines)."""


def _ttt_body(model: str, board: str, mark: str) -> dict[str, Any]:
    """A chat request as the generic adapter asks a tic-tac-toe move: ``board`` as three rows of three."""
    rows = "\n".join(board[i : i + 3] for i in (0, 3, 6))
    moves = [f"{mark}({i // 3},{i % 3})" for i, cell in enumerate(board) if cell == "."]
    text = (
        "Tic-tac-toe for two players on a 3x3 board. [...]\nYou are Player 1.\n\n"
        f"{rows}\n\nYou are Player 1. Your legal moves now: {json.dumps(moves)}\n"
        'Reply with a JSON object naming exactly one of them, written exactly as listed: {"move": "<legal move>"}'
    )
    return {"model": model, "messages": [{"role": "user", "content": text}]}


def _pgg_body(model: str, *, answer: str) -> dict[str, Any]:
    """A chat request as the Public Goods Game asks for an amount, in its ``free`` or ``json`` answer format."""
    ask = "How many of your 10 coins do you put into the pool this round?"
    if answer == "json":
        ask += ' Reply with a JSON object:\n{"reason": "<why>", "coins": <a whole number from 0 to 10>}'
    else:
        ask += " Give the amount and the reasons for your choice."
    return {"model": model, "messages": [{"role": "user", "content": "This game has 4 participants.\n\n" + ask}]}


def _move(reply: str) -> str:
    return str(json.loads(reply)["move"])


def test_strong_plays_perfect_tic_tac_toe_and_weak_its_worst_legal_move() -> None:
    win = "xx.oo...."  # x to move wins at (0,2)
    assert _move(strong_reply(_ttt_body("strong", win, "x"))) == "x(0,2)"
    block = "oo.x....x"  # x must block at (0,2)
    assert _move(strong_reply(_ttt_body("strong", block, "x"))) == "x(0,2)"
    assert _move(strong_reply(_ttt_body("strong", "....x....", "o"))) in {"o(0,0)", "o(0,2)", "o(2,0)", "o(2,2)"}
    # weak leaves the win and the block alike: a move after which the opponent wins
    assert _move(weak_reply(_ttt_body("weak", win, "x"))) != "x(0,2)"
    assert _move(weak_reply(_ttt_body("weak", block, "x"))) != "x(0,2)"
    # the route goes by the requested model, with or without its provider
    assert respond(_ttt_body("openai/strong", win, "x")) == strong_reply(_ttt_body("strong", win, "x"))
    assert respond(_ttt_body("weak", win, "x")) == weak_reply(_ttt_body("weak", win, "x"))
    assert respond(_ttt_body("broken", win, "x")) == BROKEN_REPLY
    assert "no fake model 'other'" in respond(_ttt_body("other", win, "x"))


def test_the_public_goods_answers_keep_or_give_all_in_the_format_asked() -> None:
    assert strong_reply(_pgg_body("strong", answer="free")).startswith("I put 0 coins into the pool.")
    assert weak_reply(_pgg_body("weak", answer="free")).startswith("I put 10 coins into the pool.")
    assert json.loads(strong_reply(_pgg_body("strong", answer="json")))["coins"] == 0
    assert json.loads(weak_reply(_pgg_body("weak", answer="json")))["coins"] == 10
    assert broken_reply(_pgg_body("broken", answer="json")) == BROKEN_REPLY


def test_eval_argv_names_the_three_models_at_the_endpoint() -> None:
    argv = eval_argv("tic_tac_toe", Path("/tmp/run"), "http://127.0.0.1:1/v1", "KEY", "--max-matches", "20")
    assert argv[:2] == ["eval", "tic_tac_toe"]
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--model"] == [f"openai/{m}" for m in MODELS]
    settings = [argv[i + 1] for i, a in enumerate(argv) if a == "-M"]
    assert settings == ['api_base="http://127.0.0.1:1/v1"', 'api_key_env="KEY"', "max_retries=0", "timeout_s=5"]
    assert argv[-5:] == ["--no-progress", "--workers", "1", "--max-matches", "20"]
    assert argv[argv.index("--out") + 1] == "/tmp/run"


def _play(game: str, out: Path, key: str, matches: int, capsys: pytest.CaptureFixture[str]) -> list[MatchRecord]:
    """``eval`` of the three models on ``game`` into ``out`` (its output checked), the records it stored."""
    with three_models() as server:
        assert main(eval_argv(game, out, server.api_base, key, "--max-matches", str(matches))) == 0
    played = capsys.readouterr().out
    assert f"{matches} matches planned: {matches} played now" in played
    with Store(out, read_only=True) as store:
        records = list(store.records())
    assert len(records) == matches and all(r.status == "complete" for r in records)
    return records


def _payoffs(records: list[MatchRecord], player: str) -> list[float]:
    return [r.returns[r.seats.index(player)] for r in records if player in r.seats]


def _turns(records: list[MatchRecord], player: str) -> list[Any]:
    return [t for r in records if player in r.seats for t in r.turns if t.seat == r.seats.index(player)]


def _outcomes_reported(out: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """``report OUT``'s turn outcomes: player -> its line's counts (``invalid 20 (of 20)``)."""
    assert main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    block = text.split("Turn outcomes:\n", 1)[1].split("\n\n", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"^  (\S+) +(.*)$", block, re.M)}


def _check_broken(records: list[MatchRecord], out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every turn of ``broken`` is invalid (after its re-asks, its prose kept), ``strong``'s and ``weak``'s ok; the
    report says so."""
    broken = _turns(records, "broken")
    assert broken and all(t.outcome == Outcome.INVALID for t in broken)
    assert all(t.retries >= 1 and set(t.raw_replies) == {BROKEN_REPLY} for t in broken)
    for name in ("strong", "weak"):
        assert all(t.outcome == Outcome.OK for t in _turns(records, name)), name
    outcomes = _outcomes_reported(out, capsys)
    assert outcomes["broken"] == f"invalid {len(broken)} (of {len(broken)})"
    assert outcomes["strong"].startswith("ok ") and outcomes["weak"].startswith("ok ")


def test_tic_tac_toe_strong_beats_weak_and_broken_is_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_provider_key: str
) -> None:
    out = tmp_path / "ttt"
    records = _play("tic_tac_toe", out, fake_provider_key, TTT_MATCHES, capsys)
    strong, weak = _payoffs(records, "strong"), _payoffs(records, "weak")
    assert len(strong) == len(weak) == 8  # every other player, both seats
    assert min(strong) >= 0.0  # perfect play never loses
    assert mean(strong) > mean(weak)
    head_to_head = [r.returns[r.seats.index("strong")] for r in records if set(r.seats) == {"strong", "weak"}]
    assert head_to_head == [1.0, 1.0]
    _check_broken(records, out, capsys)


def test_public_goods_strong_keeps_everything_and_out_earns_weak(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_provider_key: str
) -> None:
    out = tmp_path / "pgg"
    records = _play("deepeval_public_goods", out, fake_provider_key, PGG_MATCHES, capsys)
    strong, weak = _payoffs(records, "strong"), _payoffs(records, "weak")
    assert len(strong) == len(weak) == 10  # the line-ups of four of six that seat each
    assert mean(strong) > mean(weak)
    assert {t.action_string for t in _turns(records, "strong")} == {"invest 0"}
    assert {t.action_string for t in _turns(records, "weak")} == {"invest 10"}
    assert {t.action_string for t in _turns(records, "broken")} == {"forfeit"}
    _check_broken(records, out, capsys)
