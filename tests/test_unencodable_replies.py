"""Replies holding code points UTF-8 cannot encode (a lone surrogate from a JSON ``"\\ud83d"``), end to end.

Such a reply used to be kept as it came: every later request of the match then failed to encode ("surrogates not
allowed"), the match was an infrastructure failure after every attempt, and so again on every resume (the call cache
replayed the reply). Now the transport replaces them by U+FFFD and the call's attempt records what was replaced; a
cached reply from before is made valid when it is read back; the same holds for an LLM judge.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from deepeval_games import parse_spec, run_experiment
from deepeval_games.core.quoting import REPLACEMENT, valid_text
from llm_bots.transport import call as transport
from llm_bots.transport import unencodable
from tests.fake_openai_server import (
    TRANSPORT_KEY_ENV,
    Behaviour,
    FakeOpenAIServer,
    llm_turns,
    model_player,
    pgg_with_model,
    transport_config,
)

pytestmark = pytest.mark.usefixtures("fake_provider_key")

LONE = "\ud83d"  # the high half of 😀 (U+1F600) without its low half
MOVE = '{"reason": "keep ' + LONE + ' most", "coins": 3}'


@pytest.mark.parametrize(
    ("text", "valid", "replaced"),
    [
        ("plain", "plain", ()),
        ("é and 成语", "é and 成语", ()),
        (f"a{LONE} b", f"a{REPLACEMENT} b", ("U+D83D",)),
        ("\ud83d\ude00!", "😀!", ()),  # a whole pair is the character it stands for
        ("x\ude00", f"x{REPLACEMENT}", ("U+DE00",)),
        (f"{LONE}\ud83d\ude00", f"{REPLACEMENT}😀", ("U+D83D",)),
        (f"é\ud800é\udfff{LONE}", f"é{REPLACEMENT}é{REPLACEMENT}{REPLACEMENT}", ("U+D800", "U+DFFF", "U+D83D")),
    ],
)
def test_valid_text_replaces_only_what_cannot_be_encoded(text: str, valid: str, replaced: tuple[str, ...]) -> None:
    assert valid_text(text) == (valid, replaced)
    valid_text(text)[0].encode("utf-8")  # never raises


def _pgg_spec(server: FakeOpenAIServer, cache: Path, **experiment: Any) -> Any:
    return parse_spec(pgg_with_model(server, cache, experiment))


_llm_turns = llm_turns


def test_a_reply_with_a_lone_surrogate_is_replaced_recorded_and_the_match_completes(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behaviour.reply(MOVE), max_hang_s=5) as server:
        result = run_experiment(_pgg_spec(server, tmp_path / "calls.sqlite"), tmp_path / "run")
        requests = list(server.requests)
    assert result.played == 1 and not result.failed
    turns = _llm_turns(result.records[0])
    assert [turn.outcome for turn in turns] == ["ok"] * 3 and [turn.action for turn in turns] == [3] * 3
    for turn in turns:
        assert turn.raw_replies == [MOVE.replace(LONE, REPLACEMENT)]
        (attempt,) = turn.attempts
        assert attempt.status == "ok"
        assert attempt.error is not None and attempt.error.startswith(unencodable.UNENCODABLE)
        assert "U+D83D" in attempt.error and "reply" in attempt.error
    # what went back to the model as its own earlier replies is the valid text
    assert REPLACEMENT in json.dumps(requests[-1], ensure_ascii=False)
    stored = (tmp_path / "run" / "matches.jsonl").read_text(encoding="utf-8")
    assert "UnencodableText" in stored and "U+D83D" in stored  # on the record in the file, not only in a log


def test_a_resumed_match_with_such_a_reply_in_the_call_cache_plays_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, run = tmp_path / "calls.sqlite", tmp_path / "run"
    with FakeOpenAIServer(default=Behaviour.reply(MOVE), max_hang_s=5) as server:
        with monkeypatch.context() as before:  # the transport as it was: replies kept as they came
            before.setattr(unencodable, "valid_text", lambda text: (text, ()))
            first = run_experiment(_pgg_spec(server, cache, max_match_attempts=1), run)
        assert first.played == 0 and len(first.failed) == 1
        assert "surrogates not allowed" in first.failed[0][1]  # what this test guards against
        sent_before = server.request_count
        server.default = Behaviour.reply('{"reason": "fine", "coins": 5}')
        resumed = run_experiment(_pgg_spec(server, cache, max_match_attempts=1), run)
        sent_after = server.request_count - sent_before
    assert resumed.played == 1 and not resumed.failed
    first_turn, *later = _llm_turns(resumed.records[0])
    assert first_turn.raw_replies == [MOVE.replace(LONE, REPLACEMENT)]  # replayed from the cache, made valid
    assert first_turn.attempts[-1].error is not None and "U+D83D" in first_turn.attempts[-1].error
    assert [turn.action for turn in later] == [5, 5] and sent_after == 2


VERDICT = json.dumps(
    {
        "Programmer": {"evaluation": f"correct {LONE} code", "score": 8},
        "Reviewer": {"evaluation": "fair", "score": 6},
    }
)  # json.dumps writes the lone surrogate as the escape "\ud83d", as a provider's JSON would


def test_an_llm_judge_replying_with_a_lone_surrogate_gives_its_verdict(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behaviour.reply(VERDICT), max_hang_s=5) as server:
        spec = parse_spec(
            {
                "experiment": {"name": "j", "game": "deepeval_code_review(task_id=11,max_rounds=1)", "cache": False},
                "players": [
                    {"name": "a", "bot": "cr_reference_programmer"},
                    {"name": "b", "bot": "cr_over_reviewer"},
                ],
                "judge": model_player("fake-judge", server),
            }
        )
        result = run_experiment(spec, tmp_path / "run")
    assert result.played == 1 and not result.failed
    verdict = result.records[0].turns[-1]
    assert verdict.seat == -2 and verdict.outcome == "ok" and result.records[0].returns == [8.0, 6.0]
    assert json.loads(verdict.text)["Programmer"]["evaluation"] == f"correct {REPLACEMENT} code"
    assert verdict.attempts[-1].error is not None and "U+D83D" in verdict.attempts[-1].error


def test_a_prompt_message_holding_a_lone_surrogate_is_sent_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRANSPORT_KEY_ENV, "sk-test-not-a-secret")
    with FakeOpenAIServer(default=Behaviour.reply("ok"), max_hang_s=5) as server:
        messages = [{"role": "user", "content": f"hi {LONE}"}]
        completion = asyncio.run(transport.complete(transport_config(server), messages))
        body = server.requests[-1]
    assert completion.text == "ok" and completion.attempt_log[-1].error is None
    assert body["messages"][-1]["content"] == f"hi {REPLACEMENT}"
