"""Bounded replies and prompts, and retries on record, end to end through the fake OpenAI endpoint.

A 10 MB reply is cut to the task's maximum before it is stored, cached or sent back, so the record stays small and
every later prompt stays under the cap; a prompt known not to fit the context is ``context_overflow`` without a
call; every transport attempt of a turn (429s, 5xxs, the final success) shows in the match record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deepeval_games import parse_spec, run_experiment
from deepeval_games.app.storage.store import JSONL_NAME
from deepeval_games.core.registry.games import load_game
from deepeval_games.core.task import max_reply_chars
from tests.fake_openai_server import (
    PGG_WITH_MODEL,
    Behaviour,
    FakeOpenAIServer,
    llm_turns,
    pgg_with_model,
)

GOOD = '{"reason": "keep most", "coins": 3}'
GAME = PGG_WITH_MODEL

pytestmark = pytest.mark.usefixtures("fake_provider_key")


def _spec(server: FakeOpenAIServer, tmp_path: Path, **model: Any) -> Any:
    return parse_spec(pgg_with_model(server, tmp_path / "calls.sqlite", **model))


_llm_turns = llm_turns


def _sent_chars(body: dict[str, Any]) -> int:
    return sum(len(message["content"]) for message in body["messages"])


def test_a_10_mb_reply_is_cut_before_it_is_stored_or_sent_back(tmp_path: Path) -> None:
    huge = GOOD + " " + "x" * 10_000_000  # a valid move, then 10 MB of padding
    cap = max_reply_chars(load_game(GAME))
    with FakeOpenAIServer(default=Behaviour.reply(huge), max_hang_s=5) as server:
        result = run_experiment(_spec(server, tmp_path), tmp_path / "run")
        requests = list(server.requests)
    assert result.played == 1 and not result.failed
    record = result.records[0]
    turns = _llm_turns(record)
    assert len(turns) == 3
    for turn in turns:
        assert turn.outcome == "ok" and turn.action == 3  # the move came from the kept part
        assert [len(reply) for reply in turn.raw_replies] == [cap]
        assert turn.cut_chars == [len(huge) - cap]
    line = (tmp_path / "run" / JSONL_NAME).read_text(encoding="utf-8").splitlines()[0]
    assert len(line.encode()) < 1_000_000, f"the stored record is {len(line.encode()):,} bytes"
    assert len(json.dumps(record.to_dict()).encode()) < 1_000_000
    # every later request carries the cut replies only: the rules, the turn texts and at most `cap` per reply
    assert len(requests) == 3
    first = _sent_chars(requests[0])
    for turn_index, body in enumerate(requests):
        assert _sent_chars(body) <= first * (turn_index + 1) + cap * turn_index, turn_index
        assert all(len(m["content"]) <= max(cap, first) for m in body["messages"])
    assert max(_sent_chars(body) for body in requests) < 100_000


def test_a_prompt_known_not_to_fit_is_context_overflow_without_a_call(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behaviour.reply(GOOD), max_hang_s=5) as server:
        result = run_experiment(_spec(server, tmp_path, context_tokens=20), tmp_path / "run")
        assert server.request_count == 0  # no request was sent
    turns = _llm_turns(result.records[0])
    assert [turn.outcome for turn in turns] == ["context_overflow"] * 3
    for turn in turns:
        assert turn.raw_replies == [] and turn.cut_chars == []
        # every context policy was tried, largest first, and none fit (llm_bots.context)
        assert [attempt.status for attempt in turn.attempts] == ["context_overflow"] * 3
        assert [str(a.error).split(" does")[0] for a in turn.attempts] == [
            "context full",
            "context window",
            "context state",
        ]
        assert turn.tokens_in == 0 and turn.cost_usd == 0.0


def test_retries_are_on_the_record(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behaviour.reply(GOOD), max_hang_s=5) as server:
        server.script(Behaviour.rate_limited(retry_after=0), Behaviour.error(503), Behaviour.reply("not a move"))
        result = run_experiment(_spec(server, tmp_path, max_retries=3), tmp_path / "run")
    assert result.played == 1 and not result.failed
    first, *later = _llm_turns(result.records[0])
    assert first.outcome == "reasked"  # the first reply was not a move; the re-ask's was
    attempts = [(a.ask, a.status, a.http_status, a.error) for a in first.attempts]
    assert attempts[0][:3] == (0, "infra", 429) and attempts[0][3]
    assert attempts[1][:3] == (0, "infra", 503) and attempts[1][3]
    assert attempts[2:] == [(0, "ok", None, None), (1, "ok", None, None)]
    assert first.attempts[0].wait_s >= 0 and first.attempts[-1].wait_s == 0
    assert all([a.status for a in turn.attempts] == ["ok"] for turn in later)
    line = json.loads((tmp_path / "run" / JSONL_NAME).read_text(encoding="utf-8").splitlines()[0])
    stored = next(t for t in line["turns"] if t.get("attempts"))
    assert [a["status"] for a in stored["attempts"]][:2] == ["infra", "infra"]  # in the file too, not only in logs
