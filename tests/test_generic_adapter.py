"""The generic adapter: any OpenSpiel game's moves read back by name, its JSON schema, a parser that never crashes."""

from __future__ import annotations

import json

import msgspec
import pyspiel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import game_defs.openspiel_games  # noqa: F401  (rules cards, OpenSpiel's Python games)
from deepeval_games.core.bot import Observation, observe
from llm_bots.adapters import GenericAdapter, adapter_for

NAMES = {0: "Pass", 1: "Bet", 2: "x(0,1)", 3: "Raise 10"}


def _observation(names: dict[int, str] = NAMES) -> Observation:
    return Observation(
        seat=0,
        num_seats=2,
        game="test",
        params={},
        round=1,
        text="",
        fields={},
        legal_actions=tuple(names),
        inbox=(),
        action_to_string=names.__getitem__,
    )


ADAPTER = GenericAdapter()


@pytest.mark.parametrize(
    ("reply", "action"),
    [
        ("Pass", 0),
        ("Bet", 1),
        ("x(0,1)", 2),
        ("Raise 10", 3),
        # up to case, spaces, quotes, a final period, NFKC
        ("pass", 0),
        ("  BET.  ", 1),
        ('"Pass"', 0),
        ("'bet'.", 1),
        ("`Raise 10`", 3),
        ("raise   10", 3),
        ("x(0, 1)", 2),
        ("X( 0 , 1 )", 2),
        ("Ｂｅｔ", 1),  # full-width letters
        # JSON
        ('{"move": "Bet"}', 1),
        ('```json\n{"move": "pass"}\n```', 0),
        ('I think {"move": "Pass"} no wait, {"move": "Bet"}', 1),  # the last JSON answer wins
        ('{"move": "Pass"} {"note": "only the last object with a move counts"}', 0),
    ],
)
def test_reply_names_a_legal_move(reply: str, action: int) -> None:
    parsed = ADAPTER.parse(reply, _observation())
    assert parsed.ok and parsed.action == action and parsed.text == reply


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("Fold", "'Fold' is not one of the legal moves"),
        ("I will bet", "not one of the legal moves"),
        ('{"move": "Check"}', '"Check" is not one of the legal moves'),
        ('{"move": ["Bet"]}', 'no "move"'),
        ('{"move": null}', 'no "move"'),
        ("x" * 500, "..."),
    ],
)
def test_unknown_or_empty_reply_is_reasked_with_a_reason(reply: str, reason: str) -> None:
    observation = _observation()
    parsed = ADAPTER.parse(reply, observation)
    assert not parsed.ok and parsed.action is None
    assert reason.replace("'", '"') in parsed.error
    reask = ADAPTER.reask_text(observation, parsed.error)
    assert parsed.error in reask and json.dumps(list(NAMES.values())) in reask


def test_an_ambiguous_name_is_reasked_listing_the_candidates() -> None:
    observation = _observation({0: "bet", 1: "BET", 2: "Pass"})
    assert ADAPTER.parse("BET", observation).action == 1  # an exact name is never ambiguous
    parsed = ADAPTER.parse("Bet", observation)
    assert not parsed.ok and "could mean any of" in parsed.error
    assert '"bet"' in parsed.error and '"BET"' in parsed.error
    spaced = _observation({0: "a b", 1: "ab"})
    assert ADAPTER.parse("A B", spaced).action == 0  # the looser reading only when the stricter one finds none
    assert ADAPTER.parse("a  b ", _observation({0: "ab", 1: "a-b"})).action == 0
    assert "could mean any of" in ADAPTER.parse("abc", _observation({0: "a b c", 1: "ab c"})).error


def test_format_lists_the_legal_names_and_the_schema_is_exactly_them() -> None:
    game = pyspiel.load_game("tic_tac_toe")
    state = game.new_initial_state()
    state.apply_action(4)
    observation = observe(state, 1)
    adapter = adapter_for(game)
    assert isinstance(adapter, GenericAdapter)
    names = [state.action_to_string(1, a) for a in state.legal_actions()]
    assert f"Your legal moves now: {json.dumps(names)}" in adapter.format_text(observation)
    assert "You are Player 2" in adapter.format_text(observation)
    schema = adapter.response_schema(observation)
    move = schema["json_schema"]["schema"]["properties"]["move"]
    assert move["enum"] == names and "o(1,1)" not in move["enum"]
    assert schema["json_schema"]["schema"]["required"] == ["move"]


def test_free_text_turns_take_the_reply_and_have_no_schema() -> None:
    observation = msgspec.structs.replace(_observation(), free_text=True)
    assert ADAPTER.parse("  hello  ", observation).text == "hello"
    assert not ADAPTER.parse(" ", observation).ok
    assert ADAPTER.response_schema(observation) is None


_NAME_TEXT = st.sampled_from([*NAMES.values(), "pass", "x(0, 1)", "Fold", "", " "])
_REPLIES = st.one_of(
    st.text(max_size=300),
    st.builds(
        lambda a, m, b: f"{a}{json.dumps({'move': m})}{b}", st.text(max_size=40), _NAME_TEXT, st.text(max_size=40)
    ),
    st.builds(
        lambda a, v: f"{a}{json.dumps({'move': v})}",
        st.text(max_size=20),
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.lists(st.integers(), max_size=3)),
    ),
    st.builds(lambda parts: "".join(parts), st.lists(st.sampled_from(['{"move": ', '"', "}", "{", "Bet", "\\", "]"]))),
)


@settings(max_examples=400, deadline=None)
@given(reply=_REPLIES)
def test_random_replies_never_crash_the_parser(reply: str) -> None:
    parsed = ADAPTER.parse(reply, _observation())
    if parsed.ok:
        assert parsed.action in NAMES
    else:
        assert parsed.action is None and parsed.error
