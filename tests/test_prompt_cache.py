"""Provider prompt caching (issue 30 item 4): a seat's successive prompts share the longest prefix they can, the
cached prompt tokens a provider reports are recorded per turn and priced at the cached rate, the run summary and the
usage table show them, and ``cache_control`` marks an Anthropic prompt's end.

The fake endpoint runs with ``prefix_cache=True``: it counts a prompt at 4 characters a token and reports the prefix
shared with an earlier request as ``prompt_tokens_details.cached_tokens``, as a provider's cache would.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from analysis.tables.usage import format_usage, player_usage
from deepeval_games import parse_spec, run_experiment
from deepeval_games.app.commands.cli import main
from deepeval_games.app.reports.estimate import cache_saving
from llm_bots.model_config import ModelConfig, effective_settings
from llm_bots.model_info import litellm
from llm_bots.transport import plan, responses
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player, prompt_text, prompt_usage

pytestmark = pytest.mark.usefixtures("fake_provider_key")

PRICED = "openai/gpt-4o-mini"
"""A model litellm's price table knows, with a cached input rate (the fake endpoint answers in its name)."""
GOOD = '{"reason": "r", "coins": 3}'


def _spec(server: FakeOpenAIServer, rounds: int = 5, **extra: Any) -> dict[str, Any]:
    return {
        "experiment": {
            "name": "cache",
            "game": f"deepeval_public_goods(players=2,rounds={rounds})",
            "seed": 1,
            "cache": False,
            "max_concurrency": 1,
        },
        "players": [{"name": "free", "bot": "pgg_free_rider"}, model_player("llm", server, model=PRICED, **extra)],
    }


def test_prompt_usage_counts_the_shared_prefix() -> None:
    assert prompt_usage("abcdefgh", []) == (2, 0)
    assert prompt_usage("abcdefghij", ["abcdefgX", "abcd"]) == (3, 1)  # 7 shared characters: one whole token


def test_full_pool_prompts_extend_each_other_and_cached_tokens_are_recorded_and_priced(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behaviour.reply(GOOD), prefix_cache=True) as server:
        server.script(Behaviour.reply("nonsense"))  # the first turn is re-asked: its re-ask extends the first ask
        result = run_experiment(parse_spec(_spec(server)), tmp_path / "run")
        bodies = list(server.requests)
    [record] = result.records
    seat = record.seats.index("llm")
    turns = [t for t in record.turns if t.seat == seat]
    asks = [ask for t in turns for ask in t.prompts]
    assert len(asks) == len(bodies) == 6
    for before, after in itertools.pairwise(asks):  # messages only appended, never rewritten or reordered
        assert after[: len(before)] == before and len(after) > len(before)
    # what the endpoint reported is what the record holds, ask by ask (a turn sums its asks)
    texts = [prompt_text(body) for body in bodies]
    reported = [prompt_usage(text, texts[:i]) for i, text in enumerate(texts)]
    assert turns[0].tokens_in == reported[0][0] + reported[1][0]
    assert [t.cached_tokens for t in turns] == [reported[0][1] + reported[1][1], *(r[1] for r in reported[2:])]
    assert turns[0].cached_tokens > 0 and all(t.cached_tokens > 0.5 * t.tokens_in for t in turns[1:])
    assert all(t.cache_write_tokens == 0 for t in turns)
    # litellm prices the cached part at its cached rate: cheaper than the same tokens at the full rate
    for turn in turns:
        prompt, completion = litellm().cost_per_token(
            model=PRICED, prompt_tokens=turn.tokens_in, completion_tokens=turn.tokens_out
        )
        assert turn.cost_usd < prompt + completion
    saved = cache_saving(PRICED, sum(t.cached_tokens for t in turns))
    assert saved is not None and saved > 0
    usage = player_usage([record])["llm"]
    assert usage.cached_tokens == sum(t.cached_tokens for t in turns)
    assert "cached share" in format_usage({"llm": usage}) and f"{100 * usage.cached_share:.1f}%" in format_usage(
        {"llm": usage}
    )


def test_the_run_summary_prints_the_cached_share_and_its_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(default=Behaviour.reply(GOOD), prefix_cache=True) as server:
        data = _spec(server, rounds=3)
        tables = [("[experiment]", data["experiment"]), *(("[[players]]", p) for p in data["players"])]
        # scalar values in JSON are TOML values too (strings, numbers, booleans)
        text = "\n".join(f"{head}\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in t.items()) for head, t in tables)
        spec = tmp_path / "spec.toml"
        spec.write_text(text)
        assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.strip().startswith(PRICED))
    assert " cached, " in line and "cached tokens at the cached rate" in line and " saved" in line


def test_cache_control_marks_the_end_of_an_anthropic_prompt_only() -> None:
    messages = [
        {"role": "user", "content": "rules"},
        {"role": "assistant", "content": "3"},
        {"role": "user", "content": "go"},
    ]

    def sent(model: str, **settings: Any) -> list[dict[str, Any]]:
        made = plan.call_plan(ModelConfig(model, **settings))
        return plan.plan_kwargs(made, None, messages, None, None)["messages"]

    marked = sent("anthropic/claude-3-5-haiku-20241022", cache_control=True)
    assert marked[:2] == messages[:2]
    assert marked[2] == {
        "role": "user",
        "content": [{"type": "text", "text": "go", "cache_control": {"type": "ephemeral"}}],
    }
    assert messages[2] == {"role": "user", "content": "go"}  # the recorded prompt is untouched
    assert sent("anthropic/claude-3-5-haiku-20241022") == messages  # not asked for
    assert sent("openai/gpt-4o-mini", cache_control=True) == messages  # OpenAI caches prefixes on its own
    # a delivery setting: the player's identity (and its match ids) does not change
    assert effective_settings({"cache_control": True}) == effective_settings({})


def test_anthropic_cache_reads_and_writes_are_read_from_the_usage_block() -> None:
    assert responses._cached_tokens({"prompt_tokens_details": {"cached_tokens": 7}}) == 7
    assert responses._cached_tokens({"prompt_tokens_details": None, "cache_read_input_tokens": 5}) == 5
    assert responses._cached_tokens({}) == 0
    assert responses._count("x") == 0 and responses._count(None) == 0 and responses._count(12) == 12


def test_the_run_summary_counts_a_model_once_per_model_and_no_stand_in_as_its_invalid_move() -> None:
    from deepeval_games.app.reports.estimate import format_run_summary, run_summary
    from deepeval_games.app.spec.players import PlayerSpec
    from deepeval_games.core.records import JUDGE_SEAT, MatchRecord, TurnRecord

    def turn(seat: int, outcome: str, tokens: int) -> TurnRecord:
        return TurnRecord(
            index=0, round=1, seat=seat, action=0, action_string="x", outcome=outcome, model="m", tokens_in=tokens
        )

    record = MatchRecord(
        match_id="m1",
        game="g",
        seats=["a", "b", "bot"],
        returns=[0.0, 0.0, 0.0],
        turns=[
            turn(0, "ok", 10),
            turn(1, "invalid", 20),
            turn(1, "context_overflow", 0),  # the referee's stand-in: not the model's move
            turn(2, "ok", 0),
            turn(JUDGE_SEAT, "ok", 5),
        ],
    )
    players = [
        PlayerSpec(name="a", model="openai/m"),
        PlayerSpec(name="b", model="openai/m"),
        PlayerSpec(name="bot", bot="random"),
    ]
    judge = PlayerSpec(name="judge", model="openai/j")
    [judged, played] = run_summary([record], players, judge)
    assert (judged.player, judged.tokens_in, judged.turns) == ("openai/j", 5, 0)
    assert (played.player, played.tokens_in, played.turns, played.invalid, played.stand_ins) == (
        "openai/m",
        30,
        3,
        1,
        1,
    )
    line = format_run_summary([played], {}, {})
    assert "invalid turns 50.0% (1 of 2), 1 stand-ins (no prompt fit)" in line


def test_usage_is_one_value_that_adds_up_field_by_field() -> None:
    """A completion, a decision, a turn record and a player's table give their tokens and cost as one Usage."""
    from analysis.tables.usage import PlayerUsage
    from deepeval_games.core.bot import USAGE_FIELDS, Decision, Usage
    from llm_bots.transport.results import Completion

    a = Usage(tokens_in=10, tokens_out=2, cost_usd=0.5, reasoning_tokens=1, cached_tokens=4, cache_write_tokens=3)
    b = Usage(tokens_in=1, tokens_out=1, cost_usd=0.25)
    assert a + b == Usage(11, 3, 0.75, 1, 4, 3) and Usage.total([a, b, b]) == a + b + b and Usage.total([]) == Usage()
    assert USAGE_FIELDS == (
        "tokens_in",
        "tokens_out",
        "cost_usd",
        "reasoning_tokens",
        "cached_tokens",
        "cache_write_tokens",
    )
    completion = Completion(
        "x", "m", "stop", 10, 2, 0.5, 0.1, 1, reasoning_tokens=1, cached_tokens=4, cache_write_tokens=3
    )
    assert completion.spent == a
    decision = Decision(1, "x", **a.fields())
    assert decision.usage == a and not decision.is_plain() and Decision.move(1).is_plain()
    one, two = PlayerUsage("p", turns=1, usage=a), PlayerUsage("p", turns=2, usage=b)
    one.add(two)
    assert one.usage == a + b and one.turns == 3 and one.tokens_in == 11 and one.cost_usd == 0.75
