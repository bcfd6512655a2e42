"""The journey tests' three fake models (tests/journey_models.py), one request at a time: ``strong`` plays perfect
tic-tac-toe and keeps its coins, ``weak`` plays its worst legal move and gives them all, ``broken`` never answers in
the format. How they play through ``eval`` is checked on the journeys' own runs (tests/test_journeys.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.journey_models import (
    BROKEN_REPLY,
    MODELS,
    broken_reply,
    eval_argv,
    respond,
    strong_reply,
    weak_reply,
)


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
