"""The PGG re-formatting stand-in reads the amount put into the pool as the paper's referee would (issue 29, item 7):
digits and number words, put-in and keep verbs, all / nothing / half, Chinese replies, amounts before punctuation;
an ambiguous reply (two amounts, out of range, not whole, none) is re-asked with the reason, never guessed."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepeval_games import load_game, observe
from deepeval_games.core.bot import Observation
from llm_bots.adapters import adapter_for
from llm_bots.prompts import load_prompts
from llm_bots.public_goods.adapter import reformat_coins
from llm_bots.public_goods.reading import read_amount

AMBIGUOUS, NONE, NOT_WHOLE, OUT = "ambiguous", "no_amount", "not_whole", "out_of_range"

# (reply, what it puts in with an endowment of 10: the amount, or the problem that has it re-asked)
PHRASINGS: list[tuple[str, int | str]] = [
    # digits, and amounts followed by punctuation
    ("I invest 5.", 5),
    ("Investment = 8.", 8),
    ("I choose 7", 7),
    ("7", 7),
    ("5 coins.", 5),
    ("Coins: 4", 4),
    ("**Investment:** 9", 9),
    ("My final answer is 6 coins.", 6),
    ("Amount to invest: 3!", 3),
    ("I'd say 6.", 6),
    ("6/10 seems fair", 6),
    ("投入３枚", 3),  # a full-width digit
    # number words
    ("five", 5),
    ("Five.", 5),
    ("I will invest five coins.", 5),
    ("Three", 3),
    ("I'll contribute two coins to the pool.", 2),
    ("zero coins", 0),
    # keep X and invest Y -> Y; keep alone -> E - X
    ("I keep 6 coins and invest 4", 4),
    ("I keep 6 coins and invest 4.", 4),
    ("I'm keeping 4 and investing 6", 6),
    ("I keep 5 coins and invest 3", 3),  # the amount put in is what is asked
    ("Investing 4 coins seems wise; I'll keep the remaining 6.", 4),
    ("I'll keep 7.", 3),
    ("I keep all 10 coins and invest 0 coins", 0),
    ("I'll keep everything this time.", 0),
    # put in, contribute, other put-in verbs
    ("I'll put in 7.", 7),
    ("Round 3: I put in 4 of my 10", 4),
    ("After some thought I will put 3 coins into the pool, keeping the rest of my 10.", 3),
    ("I contribute 3 coins to the pool.", 3),
    ("Contributing 2.", 2),
    ("Let's go with 3.", 3),
    ("I'll chip in 1 coin.", 1),
    ("My decision: invest 2 coins.", 2),
    ("I will invest 3 coins, which leaves me 7.", 3),
    ("I'll invest 3 of my 10 coins.", 3),
    ("I will invest 7 coins in round 2", 7),
    # all / everything -> E, nothing / none -> 0, half -> E / 2
    ("All.", 10),
    ("all in", 10),
    ("I'm going all in!", 10),
    ("I'll contribute everything.", 10),
    ("I'll put all my coins in", 10),
    ("I will invest all 10 coins", 10),
    ("I'll invest the maximum", 10),
    ("Nothing.", 0),
    ("None.", 0),
    ("none of my coins", 0),
    ("I invest nothing this round.", 0),
    ("I won't invest anything.", 0),
    ("I will not invest.", 0),
    ("Half.", 5),
    ("I'll invest half of my coins.", 5),
    ("I'll invest 50% of my coins.", 5),
    # Chinese
    ("我投资5个金币", 5),
    ("投入五", 5),
    ("全部", 10),
    ("不投", 0),
    ("我这轮不投。", 0),
    ("我一个金币都不投", 0),
    ("我决定投入全部金币。", 10),
    ("我全投", 10),
    ("保留6个，投入4个", 4),
    ("我投资5个金币，保留5个", 5),
    ("投资额：6", 6),
    ("我打算投两个", 2),
    ("我选择投入零个金币", 0),
    ("我投入十个金币", 10),
    ("我选择投入一半", 5),
    ("我会把3个金币放入公共池，因为合作更好。", 3),
    # what others do, hypotheses, questions and earlier rounds are not the answer
    ("If everyone invests 10, we each get 16. I'll invest 5.", 5),
    ("If I invest 10 I get 16; if I invest 0 I get 10 plus my share. I'll invest 0.", 0),
    ("Others may invest 0, but I will invest 6.", 6),
    ("Should I invest 10? No, I'll invest 4.", 4),
    ("Last round I put in 4. This round: 6.", 6),
    ("I invested 5 last round; now I'll invest 7", 7),
    ("In round 1 you received 6 coins from the pool. I'll invest 3.", 3),
    ("如果大家都投10个，每人得16个。我投5个。", 5),
    # ambiguous: re-asked, never guessed
    ("5 or 6", AMBIGUOUS),
    ("I'll invest 5 or 6 coins.", AMBIGUOUS),
    ("between 4 and 6", AMBIGUOUS),
    ("4-6", AMBIGUOUS),
    ("Maybe 5, maybe 6.", AMBIGUOUS),
    ("I think 7 is good since 16 is the total return", AMBIGUOUS),
    ("我投5或6个", AMBIGUOUS),
    ("I will invest 11", OUT),
    ("I invest -3 coins.", OUT),
    ("twenty-five", OUT),
    ("十五", OUT),
    ("I invest 4.5 coins", NOT_WHOLE),
    ("I'll invest 33% of my coins.", NOT_WHOLE),
    ("no number at all", NONE),
    ("I'll invest the same as last round.", NONE),
    ("If others cooperate I will invest 8, otherwise 2.", NONE),
]


def test_the_table_has_at_least_60_phrasings() -> None:
    assert len(PHRASINGS) >= 60 and len({reply for reply, _ in PHRASINGS}) == len(PHRASINGS)


@pytest.mark.parametrize(("reply", "expected"), PHRASINGS)
def test_each_phrasing_reads_as_the_referee_would(reply: str, expected: int | str) -> None:
    reading = read_amount(reply, 10)
    if isinstance(expected, int):
        assert (reading.amount, reading.problem) == (expected, None)
    else:
        assert (reading.amount, reading.problem) == (None, expected)


def test_half_is_ambiguous_when_the_endowment_is_odd_and_numbers_count_up_to_the_endowment() -> None:
    assert read_amount("Half.", 9).problem == NOT_WHOLE and read_amount("I'll invest half", 8).amount == 4
    assert read_amount("twenty-five", 30).amount == 25 and read_amount("我投入二十个金币", 20).amount == 20
    assert read_amount("all", 20).amount == 20 and read_amount("I'll invest everything", 3).amount == 3


def test_the_reasons_name_the_problem() -> None:
    reasons = load_prompts("public_goods").roles["reasons"]
    assert reformat_coins("I keep 6 coins and invest 4", 10) == (4, None)
    assert (
        reformat_coins("5 or 6", 10)[1]
        == "it names more than one amount (5 or 6); say the one amount you put into the pool."
    )
    assert "(4, 5 or 6)" in str(reformat_coins("Maybe 4, 5 or 6.", 10)[1])
    assert reformat_coins("I will invest 11", 10)[1] == "the amount must be from 0 to 10 coins, got 11."
    assert reformat_coins("I invest 4.5 coins", 10)[1] == "the amount must be a whole number of coins, got 4.5."
    assert reformat_coins("no number at all", 10)[1] == reasons["no_amount"]


def _observation(params: str, endowment: int = 10) -> Observation:
    game = load_game(f"deepeval_public_goods(players=2,rounds=1,endowment={endowment}{params})")
    return observe(game.new_initial_state(), 0)


@pytest.mark.parametrize(
    ("reply", "action"),
    [("I keep 6 coins and invest 4", 4), ('{"reason": "r", "coins": 7}', 7), ("Investment = 8.", 8), ("全部", 10)],
)
def test_a_free_text_seat_plays_the_amount_it_states(reply: str, action: int) -> None:
    adapter = adapter_for("deepeval_public_goods")
    parsed = adapter.parse(reply, _observation(",answer=free"))
    assert parsed.ok and parsed.action == action
    if not reply.startswith("{"):  # rewritten as the referee rewrites it; a JSON answer is kept as it is
        assert json.loads(parsed.text) == {"reason": reply, "coins": action, "reformatted": True}


@pytest.mark.parametrize("params", [",answer=free", ",unusable=reformat"])
def test_an_ambiguous_reply_is_reasked_with_the_reason_never_guessed(params: str) -> None:
    adapter = adapter_for("deepeval_public_goods")
    observation = _observation(params)
    parsed = adapter.parse("5 or 6", observation)
    assert not parsed.ok and parsed.action is None
    reasons = load_prompts("public_goods").roles["reasons"]
    if "answer=free" in params:  # asked in free text: the stand-in's reason, and a free-text re-ask
        assert parsed.error is not None and parsed.error.startswith("it names more than one amount (5 or 6)")
        assert "JSON" not in adapter.reask_text(observation, parsed.error)
    else:  # asked for JSON: re-asked for JSON, as before the stand-in
        assert parsed.error == reasons["no_json"]
    assert adapter.parse('{"coins": 12}', observation).error == '"coins" must be between 0 and 10, got 12.'


text_replies = st.one_of(
    st.text(max_size=200),
    st.lists(
        st.sampled_from(
            [
                "I",
                "invest",
                "keep",
                "put in",
                "5",
                "six",
                "or",
                "all",
                "half",
                "none",
                "if",
                "?",
                ".",
                ",",
                "投入",
                "五",
                "不投",
                "全部",
                "coins",
                "round",
                "-",
                "%",
                "between",
                "and",
                "保留",
                "十",
                "last round",
                "4.5",
                "99",
            ]
        ),
        max_size=25,
    ).map(" ".join),
)


@settings(max_examples=1500, deadline=None)
@given(text_replies, st.integers(1, 20))
def test_the_stand_in_never_raises_and_gives_one_defined_outcome(reply: str, endowment: int) -> None:
    reading = read_amount(reply, endowment)
    assert (reading.amount is None) != (reading.problem is None)
    if reading.amount is not None:
        assert 0 <= reading.amount <= endowment
    value, error = reformat_coins(reply, endowment)
    assert (value is None) != (error is None) and value == reading.amount


def test_long_replies_are_read_quickly() -> None:
    import time

    start = time.perf_counter()
    for reply in ("I will " * 2300, "1 " * 8000, "我决定" * 5000, "9" * 16_000, "invest " * 2300 + "5"):
        read_amount(reply[:16_000], 10)
    assert time.perf_counter() - start < 2.0
