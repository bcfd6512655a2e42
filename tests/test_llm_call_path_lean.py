"""The per-call path of an LLM move, third pass (issue 14): each shortcut gives what the plain reading gave."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import pickle
import time
from typing import Any

import msgspec
import pytest
from pydantic import BaseModel, ConfigDict, Field

from deepeval_games.core.bot import CallAttempt, Decision, Outcome
from llm_bots.llm_bot import _Exchange
from llm_bots.model_config import ModelConfig
from llm_bots.model_info import litellm
from llm_bots.prompts import PromptError, load_prompts
from llm_bots.transport import call as transport
from llm_bots.transport import limits, responses, watchdog
from llm_bots.transport import plan as transport_plan
from llm_bots.transport.errors import InfraError
from llm_bots.transport.limits import Grant, Limits, LocalLimiter
from llm_bots.transport.results import Completion

# -- reading a reply's usage without pydantic's serializer


def _usage(**extra: Any) -> Any:
    return litellm().Usage(prompt_tokens=11, completion_tokens=7, total_tokens=18, **extra)


@pytest.mark.parametrize(
    "usage",
    [
        _usage(),
        _usage(completion_tokens_details={"reasoning_tokens": 3}, prompt_tokens_details={"cached_tokens": 2}),
        _usage(completion_tokens_details={"reasoning_tokens": 3}),
    ],
)
def test_a_usage_block_reads_as_model_dump(usage: Any) -> None:
    response = litellm().ModelResponse(id="x", model="gpt-x", choices=[], usage=usage)
    read = responses._usage_dict(response)
    assert read == usage.model_dump() and list(read) == list(usage.model_dump())
    assert responses._usage_dict(response) == read  # the second time, from the class known to dump as its fields
    assert responses._DUMPS_AS_FIELDS[type(usage)] is True  # read from the fields, not through model_dump


class _Hidden(BaseModel):
    prompt_tokens: int = 1
    secret: str = Field(default="s", exclude=True)


class _Extra(BaseModel):
    model_config = ConfigDict(extra="allow")
    prompt_tokens: int = 1


def test_a_model_that_does_not_dump_as_its_fields_is_dumped_by_pydantic() -> None:
    assert responses._dump(_Hidden()) is None  # an excluded field: pydantic's dump differs, so pydantic dumps it
    assert responses._dump(_Hidden()) is None  # and keeps doing so for the class
    extra = _Extra(prompt_tokens=3, cached=4)
    assert responses._dump(extra) == extra.model_dump() == {"prompt_tokens": 3, "cached": 4}
    assert responses._dump(_Extra(prompt_tokens=3, odd=[1])) is None  # not a plain value


# -- the guard behind litellm's own timeout


def test_the_guard_stops_a_call_that_outlives_litellms_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport_plan, "_GUARD_GRACE_S", 0.05)
    monkeypatch.setattr(watchdog, "_WATCH_S", 0.02)
    started: list[float] = []

    async def hangs(**_: Any) -> Any:  # a client that ignores its own timeout
        started.append(time.monotonic())
        await asyncio.sleep(3600)

    monkeypatch.setattr(litellm(), "acompletion", hangs)
    config = ModelConfig(model="openai/gpt-x", api_base="http://127.0.0.1:9/v1", timeout_s=0.05, max_retries=0)
    begun = time.monotonic()
    with pytest.raises(InfraError) as failed:
        asyncio.run(transport.complete(config, [{"role": "user", "content": "hi"}]))
    assert isinstance(failed.value.last_error, TimeoutError)
    assert time.monotonic() - begun < 2.0 and len(started) == 1


def test_a_guarded_call_cancelled_from_outside_is_cancelled_not_timed_out() -> None:
    async def main() -> None:
        task = asyncio.ensure_future(watchdog.guarded(asyncio.sleep(3600), 60.0))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await watchdog.guarded(asyncio.sleep(0, "ok"), 60.0) == "ok"
        dog = watchdog._watchdogs[asyncio.get_running_loop()]
        assert not dog.deadlines and not dog.expired  # nothing left behind

    asyncio.run(main())


def test_a_closed_event_loop_leaves_no_watchdog_behind() -> None:
    # DeepEvalBot.step() runs an event loop per move: the watchdogs of closed loops must go with them (loops that
    # earlier tests left alive elsewhere keep theirs: only these 50 are counted)
    gc.collect()
    before = len(watchdog._watchdogs), sum(isinstance(o, watchdog._Watchdog) for o in gc.get_objects())
    for _ in range(50):
        assert asyncio.run(watchdog.guarded(asyncio.sleep(0, "ok"), 60.0)) == "ok"
    gc.collect()
    assert len(watchdog._watchdogs) <= before[0] + 1
    assert sum(isinstance(o, watchdog._Watchdog) for o in gc.get_objects()) <= before[1] + 1


def test_the_guard_times_out_inside_an_outer_timeout_as_asyncio_timeout_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watchdog, "_WATCH_S", 0.01)

    async def main() -> None:
        async with asyncio.timeout(30):
            with pytest.raises(TimeoutError):
                await watchdog.guarded(asyncio.sleep(3600), 0.02)
            assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]

    asyncio.run(main())


# -- the process limiter's answer without a coroutine


def test_try_acquire_grants_only_what_acquire_would_grant_at_once() -> None:
    limiter = LocalLimiter()
    two = Limits(max_concurrency=2)
    first = limiter.try_acquire("k", two)
    second = limiter.try_acquire("k", two)
    assert first is not None and second is not None and first.serial != second.serial
    assert limiter.try_acquire("k", two) is None  # both slots taken: acquire would queue it
    assert first == Grant("k", first.serial, 0, first.granted_at) and pickle.loads(pickle.dumps(first)) == first
    assert hash(first) == hash(Grant("k", first.serial, 0, first.granted_at))
    limiter.release_nowait(first, 10)
    assert limiter.try_acquire("k", two) is not None
    paused = Limits(max_concurrency=4)
    grant = limiter.try_acquire("p", paused)
    assert grant is not None
    limiter.release_nowait(grant, None, rate_limited=True, retry_after_s=30)
    assert limiter.try_acquire("p", paused) is None  # paused by Retry-After
    rpm = Limits(max_concurrency=4, rpm=1)
    grant = limiter.try_acquire("r", rpm)
    assert grant is not None and limiter.try_acquire("r", rpm) is None  # the minute's one request is spent
    assert limiter.snapshot("k")["allowed"] == 2 and limiter.snapshot("p")["allowed"] == 2  # cut by the 429
    # two players of one model share the key's first settings while calls are in flight, as acquire keeps them: a
    # player without rpm still counts against the other's rpm
    held = limiter.try_acquire("s", Limits(max_concurrency=8, rpm=2))
    assert held is not None and limiter.try_acquire("s", Limits(max_concurrency=8, rpm=2)) is not None
    assert limiter.try_acquire("s", Limits(max_concurrency=8)) is None  # the minute's two requests are spent


def test_the_adaptive_limit_is_kept_up_to_date() -> None:
    limiter = LocalLimiter()
    four = Limits(max_concurrency=4)
    state_of = limiter._states.get

    def allowed() -> int:
        state = state_of("k")
        assert state is not None
        return max(1, min(4, int(state.cap)))  # what allowed() used to compute on every call

    grants = [limiter.try_acquire("k", four) for _ in range(4)]
    assert all(grants)
    limiter.release_nowait(grants[0], None, rate_limited=True)  # type: ignore[arg-type]  # 4 -> 2
    assert limiter.snapshot("k")["allowed"] == allowed() == 2
    for grant in grants[1:]:  # saturated while the limit was in use: it climbs back
        limiter.release_nowait(grant, 5)  # type: ignore[arg-type]
        assert limiter.snapshot("k")["allowed"] == allowed()
    for _ in range(6):
        more = [limiter.try_acquire("k", four) for _ in range(allowed())]
        for grant in more:
            limiter.release_nowait(grant, 5)  # type: ignore[arg-type]
            assert limiter.snapshot("k")["allowed"] == allowed()
    assert allowed() == 4
    fixed = Limits(max_concurrency=1, adaptive=False)
    other = limiter.try_acquire("o", fixed)
    assert other is not None and limiter.try_acquire("o", fixed) is None
    limiter.release_nowait(other, None, rate_limited=True)  # not adaptive: no cut
    assert limiter.snapshot("o")["allowed"] == 1
    wider = Limits(max_concurrency=3, adaptive=False)  # an idle key takes new limits
    assert limiter.try_acquire("o", wider) is not None and limiter.snapshot("o")["allowed"] == 3


# -- what a call plan shares between the configs of one player


def test_the_configs_of_one_player_share_their_plans_fixed_parts() -> None:
    base = ModelConfig(model="openai/gpt-x", api_base="http://127.0.0.1:9/v1", tpm=1000)
    first, second = base.with_valid(seed=1), base.with_valid(seed=2, max_tokens=64)
    plan_1, plan_2 = transport_plan.call_plan(first), transport_plan.call_plan(second)
    assert plan_1.tail is plan_2.tail and plan_1.call_limits is plan_2.call_limits
    assert plan_1.sampling == {"seed": 1} and plan_2.sampling == {"seed": 2, "max_tokens": 64}
    assert plan_2.limit_key == limits.limit_key(second) and plan_2.call_limits == limits.limits_of(second)
    other = transport_plan.call_plan(ModelConfig(model="openai/gpt-x", api_base="http://127.0.0.1:8/v1", seed=1))
    assert other.tail["api_base"] == "http://127.0.0.1:8/v1" and other.call_limits.tpm is None
    slower = transport_plan.call_plan(base.with_valid(seed=1, timeout_s=9.0))
    assert slower.tail["timeout"] == 9.0 and slower.guard_s == 9.0 + transport_plan._GUARD_GRACE_S


# -- a turn's decision and its answer format


def test_a_turns_decision_is_the_structs_own() -> None:
    turn = _Exchange()
    completion = Completion(
        **{
            **{f.name: f.default for f in dataclasses.fields(Completion) if f.default is not f.default_factory},
            "text": "r",
            "model": "m",
            "finish_reason": "stop",
            "prompt_tokens": 3,
            "completion_tokens": 4,
            "cost_usd": 0.25,
            "latency_s": 0.1,
            "attempts": 1,
            "usage": {},
            "attempt_log": (CallAttempt(status="ok"),),
        }
    )
    turn.add([{"role": "user", "content": "q"}], completion, 0)
    made = turn.decision(3, "r", Outcome.REASKED, "why")
    built = Decision(
        action=3,
        text="r",
        outcome=Outcome.REASKED,
        raw_replies=("r",),
        prompts=(({"role": "user", "content": "q"},),),
        model="m",
        tokens_in=3,
        tokens_out=4,
        cost_usd=0.25,
        error="why",
        attempts=(CallAttempt(status="ok"),),
        cut_chars=(0,),
        finish_reasons=("stop",),
        reasoning=("",),
    )
    assert made == built and repr(made) == repr(built) and not made.is_plain()
    assert pickle.loads(pickle.dumps(made)) == built
    assert msgspec.structs.replace(made, action=None).action is None


def test_a_rendered_prompt_is_remembered_by_its_values_as_text() -> None:
    prompts = load_prompts("public_goods")
    first = prompts.render("player", "format", endowment=10)
    assert prompts.render("player", "format", endowment=10) is first
    assert prompts.render("player", "format", endowment="10") is first  # the same text
    assert "7" in prompts.render("player", "format", endowment=7) != first
    with pytest.raises(PromptError):
        prompts.render("player", "reask", endowment=10)  # no reason: refused, whatever was rendered before


def test_a_parsed_move_is_the_dataclasss_own() -> None:
    from llm_bots.adapters import Parsed

    made = Parsed.move(3, "reply")
    assert made == Parsed(action=3, text="reply") and repr(made) == repr(Parsed(action=3, text="reply"))
    assert made.ok and pickle.loads(pickle.dumps(made)) == made
    assert dataclasses.replace(made, error="no").ok is False


@pytest.mark.parametrize("reply", ['```json\n{"coins": 3}\n```', ' {"coins": ３} ', "plain", "``", "", "a `b` c"])
def test_normalize_reads_fences_as_before(reply: str) -> None:
    import re
    import unicodedata

    from llm_bots.parsing import normalize

    assert normalize(reply) == re.sub(r"```[a-zA-Z0-9_-]*", "", unicodedata.normalize("NFKC", reply)).strip()


# -- a model litellm has no price for


def test_a_model_litellm_cannot_price_is_then_priced_at_zero_without_a_lookup(
    monkeypatch: pytest.MonkeyPatch, fake_provider_key: str
) -> None:
    """After litellm answers a call without a price, later calls of that model and endpoint carry a price of 0.0 a
    token (no price-table search in litellm); a model it prices never gets them; both cost what they cost before."""
    from tests.fake_openai_server import FakeOpenAIServer

    monkeypatch.setattr(transport_plan, "_unpriced", set())
    monkeypatch.setattr(transport_plan, "_plans", {})
    monkeypatch.setattr(transport_plan, "_fixed", {})
    sent: list[dict[str, Any]] = []
    real = litellm().acompletion

    async def spy(**kwargs: Any) -> Any:
        sent.append(kwargs)
        return await real(**kwargs)

    monkeypatch.setattr(litellm(), "acompletion", spy)
    messages = [{"role": "user", "content": "hi"}]
    with FakeOpenAIServer() as server:
        unpriced = ModelConfig(
            model="openai/fake-model", api_base=server.api_base, max_retries=0, api_key_env=fake_provider_key
        )
        priced = ModelConfig(
            model="openai/gpt-4o-mini", api_base=server.api_base, max_retries=0, api_key_env=fake_provider_key
        )

        async def calls() -> list[Completion]:
            done = []
            for config in (unpriced, priced, unpriced, priced, unpriced.with_valid(seed=3), priced.with_valid(seed=3)):
                done.append(await transport.complete(config, messages))
            # litellm's mock is not an answer of the model: nothing is learned from it
            mocked = ModelConfig(
                model="openai/mocked-model", api_base=server.api_base, max_retries=0, api_key_env=fake_provider_key
            )
            for _ in range(2):
                done.append(await transport.complete(mocked, messages, mock_response="ok"))
            return done

        completions = asyncio.run(calls())
    assert [kwargs["model"] for kwargs in sent] == ["openai/fake-model", "openai/gpt-4o-mini"] * 3 + [
        "openai/mocked-model"
    ] * 2
    no_price = [kwargs.get("input_cost_per_token") for kwargs in sent[0:6:2]]
    assert no_price == [None, 0.0, 0.0]  # learned from the first reply, shared with the seeded config's plan
    assert all(kwargs.get("output_cost_per_token") == 0.0 for kwargs in sent[2:6:2])
    assert all("input_cost_per_token" not in kwargs for kwargs in sent[1:6:2] + sent[6:])
    assert [c.cost_usd for c in completions[0:6:2]] == [0.0, 0.0, 0.0]
    assert all(c.cost_usd > 0.0 for c in completions[1:6:2])  # litellm's own price of gpt-4o-mini
    assert transport_plan._unpriced == {("openai/fake-model", server.api_base)}
