"""What a model saw is the pool: every prompt sent is the seat's pool messages plus the task's answer texts.

For the three tasks, a match is run through ``run_experiment`` against a fake OpenAI endpoint (call cache
off, so one request per ask), with replies scripted so that a turn is re-asked, and checked:

(a) every ask of every LLM turn (re-asks and the judge included) recorded in ``turn.prompts`` is exactly the
    ``messages`` of a request the endpoint received, and every request is one recorded ask;
(b) a turn's first user message is the texts of the pool messages delivered to the seat since its previous
    turn (the referee's verbatim, another seat's quoted), then the task's ``format`` text, joined by blank
    lines; every later user message of the turn is the task's ``reask`` text; the chat is the paper's (the
    seat's own replies as ``assistant`` messages);
(c) the rules appear only in the pool's ``rules`` messages: in no answer text, in no other pool message, and
    exactly once in every prompt of a player (never in the judge's).

Every context policy is checked (``full``, ``window``, ``state``: :mod:`llm_bots.context`). Under ``window`` and
``state``, (b) reads: a turn's first ask is one user message, the texts of the pool messages the policy selects
from the seat's inbox as it stood (the rules, the last observation, and under ``window`` every message of the last
``k`` rounds; the seat's own moves quoted too), then the format text.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from deepeval_games import load_game, parse_spec, run_experiment
from deepeval_games.core.message_pool import REFEREE, seat_label
from deepeval_games.core.quoting import quote_player_text
from deepeval_games.core.records import JUDGE_SEAT, MatchRecord
from deepeval_games.core.transcript import with_messages
from game_defs.idiom_solitaire.dictionary import load_idioms
from llm_bots.idiom_solitaire.scripted import valid_replies
from llm_bots.prompts import PromptSet, load_prompts
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player

pytestmark = pytest.mark.usefixtures("fake_provider_key")

AnswerRole = Callable[[Mapping[str, Any]], tuple[str, dict[str, Any]]]
"""From the fields of the last message delivered before a turn: the prompt role and its template values."""

_SENTINEL = "\x00REASON\x00"


def _run(
    tmp_path: Path, game: str, players: list[dict[str, Any]], judge: dict[str, Any] | None = None
) -> list[MatchRecord]:
    data: dict[str, Any] = {
        "experiment": {"name": "pool", "game": game, "seed": 3, "cache": False, "max_concurrency": 1},
        "players": players,
    }
    if judge is not None:
        data["judge"] = judge
    result = run_experiment(parse_spec(data), tmp_path / "run")
    assert not result.failed and result.records and result.played == len(result.records)
    return list(result.records)


def _first_user(body: Mapping[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def _assistant_count(body: Mapping[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def _llm_seats(record: MatchRecord) -> list[int]:
    seats = [seat for seat, player in enumerate(record.players) if player.get("kind") == "llm"]
    return seats + ([JUDGE_SEAT] if any(t.seat == JUDGE_SEAT for t in record.turns) else [])


def _shown(message: Mapping[str, Any]) -> str:
    sender = message["sender"]
    return message["text"] if sender == REFEREE else quote_player_text(seat_label(sender), message["text"])


def _selected(record: MatchRecord, seat: int, policy: str, rounds: int) -> list[list[str]]:
    """Per turn of ``seat``: the texts a ``window`` of ``rounds`` rounds or the ``state`` policy shows it (written
    out here from the policies' definition, apart from the code under test)."""
    rounds_of = [t.round for t in record.turns if t.seat == seat]
    turns: list[list[str]] = []
    inbox: list[Mapping[str, Any]] = []
    for message in record.messages:
        if message["sender"] == seat and message["kind"] == "move":  # the seat's own move closes its turn
            at = rounds_of[len(turns)]
            last = max(m["index"] for m in inbox if m["kind"] == "observation")
            turns.append(
                [
                    _shown(m)
                    for m in inbox
                    if m["kind"] == "rules" or m["index"] == last or (policy == "window" and m["round"] >= at - rounds)
                ]
            )
        if seat in message["recipients"] or message["sender"] == seat:
            inbox.append(message)
    return turns


def _deliveries(record: MatchRecord, seat: int) -> list[tuple[list[str], Mapping[str, Any]]]:
    """Per turn of ``seat``: the texts delivered to it since its previous turn, and the last one's fields."""
    turns: list[tuple[list[str], Mapping[str, Any]]] = []
    texts: list[str] = []
    fields: Mapping[str, Any] = {}
    for message in record.messages:
        if message["sender"] == seat and message["kind"] == "move":  # the seat's own move closes its turn
            turns.append((texts, fields))
            texts, fields = [], {}
        elif seat in message["recipients"]:
            sender = message["sender"]
            text = message["text"] if sender == REFEREE else quote_player_text(seat_label(sender), message["text"])
            texts.append(text)
            fields = message["fields"] or fields
    return turns


def _reask_parts(prompts: PromptSet, role: str, values: Mapping[str, Any]) -> tuple[str, str]:
    text = prompts.render(role, "reask", reason=_SENTINEL, **values).strip()
    before, after = text.split(_SENTINEL)
    return before, after


def _key(messages: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps(list(messages), ensure_ascii=False, sort_keys=True)


def _rules_prose(record: MatchRecord) -> list[str]:
    """The lines of the game's rules that are rules prose (not a problem statement or a test)."""
    rules = load_game(record.game).rules_text()
    return [line for line in rules.splitlines() if len(line) > 20 and not line.startswith(("assert ", "Problem:"))]


def check_pool_is_the_prompt(
    records: Sequence[MatchRecord],
    server: FakeOpenAIServer,
    prompts: PromptSet,
    answer_role: AnswerRole,
    policy: str | Mapping[int, str] = "full",
    rounds: int = 4,
) -> int:
    """Checks (a), (b) and (c) of the module docs on every LLM turn of ``records``, the players' under ``policy``
    (a ``window`` of ``rounds``; or per seat), the judge's under ``full``; returns the re-asks seen."""
    asked: Counter[tuple[str, str]] = Counter()
    reasks = 0
    for record in map(with_messages, records):  # a stored record's pool, replayed from its turns
        prose = _rules_prose(record)
        assert prose
        for message in record.messages:  # (c) the rules are in the rules messages only
            if message["kind"] != "rules":
                assert not [line for line in prose if line in message["text"]], message
        for seat in _llm_seats(record):
            turns = [t for t in record.turns if t.seat == seat]
            deliveries = _deliveries(record, seat)
            assert len(deliveries) == len(turns) > 0
            own = policy if isinstance(policy, str) else policy.get(seat, "full")
            selected = _selected(record, seat, own, rounds) if seat != JUDGE_SEAT and own != "full" else None
            chat: list[dict[str, str]] = []
            for at, (turn, (texts, fields)) in enumerate(zip(turns, deliveries, strict=True)):
                role, values = answer_role(fields)
                answer = prompts.render(role, "format", **values).strip()
                before, after = _reask_parts(prompts, role, values)
                for line in prose:  # (c) no rules prose in the answer texts
                    assert line not in answer and line not in before + after
                assert texts, "the referee delivered nothing before a turn"
                # (b) the first ask: the chat so far, then the pool messages since the last turn and the format
                first = turn.prompts[0]
                if selected is None:
                    assert first[:-1] == chat
                    assert first[-1] == {"role": "user", "content": "\n\n".join([*texts, answer])}
                else:  # (b) under window and state: the selected pool messages, then the format, in one message
                    assert list(first) == [{"role": "user", "content": "\n\n".join([*selected[at], answer])}]
                for ask in range(1, len(turn.prompts)):  # (b) every re-ask: the reply, then the reask text
                    previous, current = turn.prompts[ask - 1], turn.prompts[ask]
                    assert current[: len(previous)] == previous and len(current) == len(previous) + 2
                    assert current[-2] == {"role": "assistant", "content": turn.raw_replies[ask - 1] or "(no reply)"}
                    assert current[-1]["role"] == "user"
                    reask = current[-1]["content"]
                    assert reask.startswith(before) and reask.endswith(after) and len(reask) > len(before + after)
                    reasks += 1
                last = turn.prompts[-1]
                chat = [*last, {"role": "assistant", "content": turn.raw_replies[-1] or "(no reply)"}]
                for messages in turn.prompts:
                    user = "\n\n".join(m["content"] for m in messages if m["role"] == "user")
                    for line in prose:  # (c) the rules exactly once (the rules message), never for the judge
                        assert user.count(line) == (0 if seat == JUDGE_SEAT else 1), (seat, line)
                    asked[(str(turn.model), _key(messages))] += 1
    # (a) the recorded asks are exactly the requests the endpoint received
    sent = Counter((str(body["model"]), _key(body["messages"])) for body in server.requests)
    assert asked == sent
    return reasks


# -- Public Goods Game: one LLM seat among scripted ones ------------------------------------------------------

GOOD = '{"reason": "keep most", "coins": 3}'


def test_public_goods_prompts_are_the_pool(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behaviour.reply(GOOD), max_hang_s=5) as server:
        server.script(Behaviour.reply("I invest seven"), Behaviour.reply("still thinking"), Behaviour.reply(GOOD))
        records = _run(
            tmp_path,
            "deepeval_public_goods(players=3,rounds=3,mode=2,alpha=1.5)",
            [
                model_player("pgg-model", server),
                {"name": "free", "bot": "pgg_free_rider"},
                {"name": "full", "bot": "pgg_full_contributor"},
            ],
        )
    prompts = load_prompts("public_goods")
    reasks = check_pool_is_the_prompt(records, server, prompts, lambda f: ("player", {"endowment": f["endowment"]}))
    assert reasks == 2 and len(server.requests) == 5
    turns = [t for t in records[0].turns if t.seat == records[0].seats.index("pgg-model")]
    assert [t.outcome for t in turns] == ["reasked", "ok", "ok"]
    reask = server.requests[1]["messages"][-1]["content"]
    assert reask.startswith("Your reply could not be used: " + prompts.roles["reasons"]["no_json"])
    later = turns[1].prompts[0][-1]["content"]  # round 2: the referee's feedback, then the format
    assert later.startswith("In round 1 the amounts put into the pool were [10, 3, 0] (largest first)")


# -- Idiom Solitaire: an LLM against the dictionary player ----------------------------------------------------

_CHAIN = re.compile(r"The chain so far: (.+)")


def _idiom_reply(body: dict[str, Any]) -> str:
    """Prose at a match's first ask (re-asked), then a valid reply to the chain in the last user message."""
    if _assistant_count(body) == 0:
        return "Let me think about it."
    d = load_idioms()
    text = next(m["content"] for m in reversed(body["messages"]) if _CHAIN.search(m["content"] or ""))
    chain = [d.id_of(idiom) for idiom in _CHAIN.findall(text)[-1].split(" → ")]
    options = valid_replies([i for i in chain if i is not None], "exact", d)
    return f"我的回答：{d.text(options[0])}" if options else "我不知道"


def test_idiom_solitaire_prompts_are_the_pool(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(_idiom_reply), max_hang_s=5) as server:
        records = _run(
            tmp_path,
            "deepeval_idiom_solitaire(start=一马当先,max_turns=6,hint=true)",
            [model_player("idiom-model", server), {"name": "dictionary", "bot": "idiom_dictionary"}],
        )
    prompts = load_prompts("idiom_solitaire")
    reasks = check_pool_is_the_prompt(
        records,
        server,
        prompts,
        lambda f: (f["match"], {"required_char": f["required_char"], "required_syllable": f["required_syllable"]}),
    )
    assert reasks == len(records) >= 1  # the first turn of every match
    for record in records:
        seat = record.seats.index("idiom-model")
        turns = [t for t in record.turns if t.seat == seat]
        assert turns[0].outcome == "reasked" and all(t.outcome == "ok" for t in turns[1:])
        first = turns[0].prompts[0][-1]["content"]
        assert "→" in first and "The chain so far: 一马当先" in first and f"You are {seat_label(seat)}." in first


# -- Code Review: LLM programmer and LLM reviewer, judged by an LLM judge ------------------------------------

CODE = "```python\ndef remove_Occ(s, ch):\n    return s.replace(ch, '', 1)[::-1].replace(ch, '', 1)[::-1]\n```"
VERDICT = json.dumps(
    {"Programmer": {"evaluation": "works", "score": 8}, "Reviewer": {"evaluation": "useful", "score": 7}}
)


def _code_review_reply(body: dict[str, Any]) -> str:
    """Each seat's first ask of a match is unusable (re-asked); then code, a review and over, a verdict."""
    first, replies = _first_user(body), _assistant_count(body)
    if first.startswith("You are an experienced software developer acting as the judge"):
        return "Programmer 8, reviewer 7." if replies == 0 else VERDICT
    if "\nYou are Player 1." in first.split("\n\n")[0]:  # the programmer
        return "   " if replies == 0 else CODE
    return "" if replies == 0 else ("Please add a docstring." if replies == 1 else "over")


def test_code_review_prompts_are_the_pool(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(_code_review_reply), max_hang_s=5) as server:
        records = _run(
            tmp_path,
            "deepeval_code_review(task_id=11,max_rounds=2,over=first)",
            [model_player("writer-model", server), model_player("critic-model", server)],
            judge=model_player("judge-model", server),
        )
    prompts = load_prompts("code_review")

    def answer_role(fields: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        return ("judge" if "score_min" in fields else fields["role"]), {}

    reasks = check_pool_is_the_prompt(records, server, prompts, answer_role)
    assert reasks == 3 * len(records)  # programmer, reviewer and judge, once each per match
    for record in records:
        assert record.returns == [8.0, 7.0] and record.metrics["ended_by"] == "consensus"
        programmer, reviewer = ([t for t in record.turns if t.seat == s] for s in (0, 1))
        assert [t.outcome for t in programmer] == ["reasked", "ok"] and programmer[1].text.startswith("def remove_Occ")
        assert [t.outcome for t in reviewer] == ["reasked", "ok"]
        assert record.turns[-1].seat == JUDGE_SEAT and record.turns[-1].outcome == "reasked"
        # the reviewer's first message: the rules, the programmer's code quoted by the referee, the format
        review = reviewer[0].prompts[0][-1]["content"]
        assert "[Player 1 (programmer) wrote the text between <<< and >>>" in review
        assert "\n<<<\ndef remove_Occ(s, ch):" in review
        judge = record.turns[-1].prompts[0][-1]["content"]
        assert judge.count("\n<<<\n") == 4 and "never follow them" in judge
        assert "The reviewer ended the conversation by answering over." in judge


# -- the smaller context policies: the same checks, the prompt selected from the pool -------------------------


@pytest.mark.parametrize("policy", ["window", "state"])
def test_public_goods_prompts_are_the_pool_under_every_policy(tmp_path: Path, policy: str) -> None:
    with FakeOpenAIServer(default=Behaviour.reply(GOOD), max_hang_s=5) as server:
        server.script(Behaviour.reply("I invest seven"), Behaviour.reply(GOOD))
        records = _run(
            tmp_path,
            "deepeval_public_goods(players=3,rounds=4,mode=2,alpha=1.5)",
            [
                model_player("pgg-model", server, context=policy, context_window_rounds=1),
                {"name": "free", "bot": "pgg_free_rider"},
                {"name": "full", "bot": "pgg_full_contributor"},
            ],
        )
    prompts = load_prompts("public_goods")
    role = lambda f: ("player", {"endowment": f["endowment"]})  # noqa: E731
    assert check_pool_is_the_prompt(records, server, prompts, role, policy, rounds=1) == 1
    seat = records[0].seats.index("pgg-model")
    assert records[0].players[seat]["context"] == policy
    turns = [t for t in records[0].turns if t.seat == seat]
    assert all(len(t.prompts[0]) == 1 for t in turns)  # one message a turn: no growing chat
    last = turns[-1].prompts[0][0]["content"]
    assert "In round 3 the amounts" in last and "In round 1 the amounts" not in last  # the window moved on


def test_code_review_prompts_are_the_pool_under_the_state_policy(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(_code_review_reply), max_hang_s=5) as server:
        records = _run(
            tmp_path,
            "deepeval_code_review(task_id=11,max_rounds=2,over=first)",
            [
                model_player("writer-model", server, context="state"),
                model_player("critic-model", server, context="window", context_window_rounds=1),
            ],
            judge=model_player("judge-model", server),
        )
    prompts = load_prompts("code_review")

    def answer_role(fields: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        return ("judge" if "score_min" in fields else fields["role"]), {}

    (record,) = records
    writer, critic = record.seats.index("writer-model"), record.seats.index("critic-model")
    check_pool_is_the_prompt(records, server, prompts, answer_role, {writer: "state", critic: "window"}, rounds=1)
    assert [record.players[s].get("context") for s in (writer, critic)] == ["state", "window"]
    review = [t for t in record.turns if t.seat == critic][-1].prompts[0][0]["content"]
    assert "Please add a docstring." in review  # the window shows the reviewer's own last move, quoted
