"""Context policies (``llm_bots.context``): match ids, the fit before each call, the fallback and its report.

A tic-tac-toe seat played by a fake endpoint (the first legal move) against ``random``: with a context window
(``context_tokens``) that the growing chat outgrows, a turn falls back from ``full`` to ``window`` (the skipped
policy on record as a ``context_overflow`` attempt that sent nothing); with one that not even ``state`` fits, every
turn is a stand-in and no request is sent. Every prompt on record is a request the endpoint received.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from analysis.tables.context_use import context_use, format_context_use, turn_policy
from analysis.tables.usage import player_usage
from deepeval_games import parse_spec, run_experiment
from deepeval_games.app.spec.schedule import plan_matches
from deepeval_games.core.records import MatchRecord
from llm_bots.context import count_tokens
from llm_bots.model_config import ModelConfig
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, first_legal_move, model_player

pytestmark = pytest.mark.usefixtures("fake_provider_key")


def _spec(player: dict[str, Any], game: str = "tic_tac_toe") -> dict[str, Any]:
    return {
        "experiment": {
            "name": "ctx",
            "game": game,
            "seed": 1,
            "cache": False,
            "max_concurrency": 1,
            "pairing": "fixed",
        },
        "players": [player, {"name": "random", "bot": "random"}],
    }


def _play(tmp_path: Path, **settings: Any) -> tuple[MatchRecord, list[dict[str, Any]]]:
    with FakeOpenAIServer(default=Behaviour.responder(first_legal_move), max_hang_s=5) as server:
        result = run_experiment(parse_spec(_spec(model_player("llm", server, max_tokens=16, **settings))), tmp_path)
        requests = list(server.requests)
    assert not result.failed and len(result.records) == 1
    return result.records[0], requests


def _key(messages: Any) -> str:
    return json.dumps(list(messages), sort_keys=True)


def test_the_task_default_written_out_keeps_the_match_ids() -> None:
    def ids(**settings: Any) -> list[str]:
        player = {"name": "llm", "model": "openai/gpt-4o-mini", **settings}
        return [m.match_id for m in plan_matches(parse_spec(_spec(player)))]

    assert ids() == ids(context="full")  # the paper's policy, written or not: today's ids
    assert ids(context="window") != ids() and ids(context="state") != ids()
    assert ids(context="window") != ids(context="window", context_window_rounds=2)


def test_a_chat_that_outgrows_the_window_falls_back_and_every_prompt_was_sent(tmp_path: Path) -> None:
    record, requests = _play(tmp_path, context_tokens=420)
    turns = [t for t in record.turns if t.seat == 0]
    used = [turn_policy(t) for t in turns]
    assert used[:2] == ["full", "full"] and "window" in used and "stand-in" not in used
    assert all(t.outcome == "ok" for t in turns)
    fell = next(t for t in turns if turn_policy(t) == "window")
    assert [a.status for a in fell.attempts] == ["context_overflow", "ok"]
    assert str(fell.attempts[0].error).startswith("context full does not fit (")
    assert len(fell.prompts[0]) == 1  # one user message: the selected pool messages and the format
    config = ModelConfig("openai/llm")
    for turn in turns:  # every prompt sent fit: its tokens and the reply's 16 within the window
        assert asyncio.run(count_tokens(config, turn.prompts[0])) + 16 <= 420
    sent = Counter(_key(body["messages"]) for body in requests)
    assert sent == Counter(_key(p) for t in turns for p in t.prompts)
    use = context_use([record])
    assert use["llm"]["full"] == 2 and use["llm"].get("stand-in", 0) == 0
    assert "stand-in 0" in format_context_use(use)


def test_only_when_not_even_the_state_fits_is_a_turn_a_stand_in(tmp_path: Path) -> None:
    record, requests = _play(tmp_path, context_tokens=200)
    turns = [t for t in record.turns if t.seat == 0]
    assert requests == [] and all(t.outcome == "context_overflow" for t in turns)
    assert all([a.status for a in t.attempts] == ["context_overflow"] * 3 for t in turns)
    usage = player_usage([record])["llm"]
    assert usage.stand_ins == len(turns) and usage.invalid == 0  # a stand-in is not the model's invalid move
    assert context_use([record]) == {"llm": {"stand-in": len(turns)}}


def test_a_provider_overflow_falls_back_to_a_smaller_prompt(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(first_legal_move), max_hang_s=5) as server:
        server.script(Behaviour.responder(first_legal_move), Behaviour.context_overflow())
        spec = _spec(model_player("llm", server, max_tokens=16, context_window_rounds=1))
        record = run_experiment(parse_spec(spec), tmp_path).records[0]
    second = [t for t in record.turns if t.seat == 0][1]
    assert second.outcome == "ok" and turn_policy(second) == "window"
    assert [a.status for a in second.attempts] == ["context_overflow", "ok"]
    assert len(second.prompts) == 2 and len(second.prompts[0]) == 3 and len(second.prompts[1]) == 1


def test_a_state_policy_prompt_stays_flat_over_a_long_game(tmp_path: Path) -> None:
    record, _ = _play(tmp_path, context="state")
    sizes = [len(t.prompts[0][0]["content"]) for t in record.turns if t.seat == 0]
    assert len(sizes) >= 3 and max(sizes) <= 1.2 * min(sizes)
    assert record.players[0]["context"] == "state"
