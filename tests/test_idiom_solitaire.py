"""Idiom Solitaire as an OpenSpiel game: parameters, the three ways to lose, hits, replies, homophones."""

from __future__ import annotations

import asyncio

import numpy as np
import pyspiel
import pytest

from deepeval_games import Decision, DeepEvalBot, Observation, UnknownGameError, load_game, play_match
from deepeval_games.core.testing import check_game
from game_defs.idiom_solitaire.dictionary import IdiomDictionary
from game_defs.idiom_solitaire.dictionary_versions import load_dictionary
from game_defs.idiom_solitaire.game import (
    NOT_AN_IDIOM,
    REPEAT,
    WRONG_FIRST_CHAR,
    IdiomSolitaireState,
    reply_to_action,
)
from llm_bots.idiom_solitaire.scripted import valid_replies
from tests.idiom_helpers import idiom_id


@pytest.fixture(scope="module")
def d() -> IdiomDictionary:
    """The dictionary the game uses by default: the Xinhua list (same ids) with CC-CEDICT's idioms after it."""
    return load_dictionary()


def _state(game_string: str = "deepeval_idiom_solitaire(start=一马当先)") -> IdiomSolitaireState:
    return load_game(game_string).new_initial_state()


# --- parameters and game strings ----------------------------------------------------------------------


def test_chinese_start_round_trips_through_game_strings() -> None:
    game = load_game("deepeval_idiom_solitaire(start=一马当先,max_turns=6,match=homophone)")
    text = str(game)
    assert "start=一马当先" in text
    assert str(pyspiel.load_game(text)) == text
    assert str(load_game(text)) == text
    assert load_game(text).get_parameters() == {
        "start": "一马当先",
        "max_turns": 6,
        "match": "homophone",
        "hint": False,
        "dictionary": "xinhua+cedict+zdic-1",
    }


def test_sweep_override_and_traditional_start_are_canonical() -> None:
    game = load_game("deepeval_idiom_solitaire(max_turns=8)", {"start": "先聲奪人"})
    assert game.get_parameters()["start"] == "先声夺人"
    assert str(game) == str(load_game("deepeval_idiom_solitaire(max_turns=8,start=先声夺人)"))


@pytest.mark.parametrize(
    "bad",
    [
        "deepeval_idiom_solitaire(start=不是成语啊)",
        "deepeval_idiom_solitaire(match=rhyme)",
        "deepeval_idiom_solitaire(max_turns=0)",
    ],
)
def test_bad_parameters_are_reported(bad: str) -> None:
    with pytest.raises(UnknownGameError, match="cannot load"):
        load_game(bad)


def test_game_shape(d: IdiomDictionary) -> None:
    game = load_game("deepeval_idiom_solitaire(max_turns=7)")
    assert game.num_players() == 2 and game.max_game_length() == 7
    assert game.num_distinct_actions() == len(d) + 1
    assert (game.min_utility(), game.max_utility()) == (-1.0, 1.0)
    assert game.seat_roles() == ["early", "late"]
    assert "一马当先" in game.rules_text() and "7" in game.rules_text()
    state = game.new_initial_state()
    legal = state.legal_actions()
    assert len(legal) == len(d) + 1 and legal[-1] == state.invalid_action() == state.penalty_action(0)
    assert state.current_player() == 0 and state.action_to_string(0, state.invalid_action()) == "<not an idiom>"


# --- moves ------------------------------------------------------------------------------------------------


def test_a_valid_move_is_a_hit_and_the_observation_shows_the_chain(d: IdiomDictionary) -> None:
    state = _state("deepeval_idiom_solitaire(start=一马当先,hint=true)")
    state.apply_action(idiom_id(d, "先声夺人"))
    assert not state.is_terminal() and state.current_player() == 1
    assert state.match_metrics()["hits"] == [1, 0]
    obs = state.observation_string(0)
    assert obs == state.observation_string(1)  # perfect information
    assert "一马当先 → 先声夺人" in obs and "Player 2 to move" in obs and "start with 人" in obs
    fields = state.observation_fields(1)
    assert fields["chain"] == ["一马当先", "先声夺人"] and fields["required_char"] == "人"
    assert fields["to_move"] == 1 and fields["hits"] == [1, 0] and fields["chain_text"] == "一马当先 → 先声夺人"


def test_wrong_first_character_loses(d: IdiomDictionary) -> None:
    state = _state()
    state.apply_action(idiom_id(d, "天外有天"))
    assert state.is_terminal() and list(state.returns()) == [-1.0, 1.0]
    metrics = state.match_metrics()
    assert metrics["broken_by"] == 0 and metrics["break_reason"] == WRONG_FIRST_CHAR and metrics["hits"] == [0, 0]
    assert "Player 2 wins" in state.observation_string(1)


def test_repeating_the_start_idiom_loses(d: IdiomDictionary) -> None:
    state = _state("deepeval_idiom_solitaire(start=天外有天)")  # ends with its own first character
    assert state.why_invalid(idiom_id(d, "天外有天")) == REPEAT
    state.apply_action(idiom_id(d, "天外有天"))
    assert list(state.returns()) == [-1.0, 1.0] and state.match_metrics()["break_reason"] == REPEAT


def test_repeating_an_earlier_move_loses(d: IdiomDictionary) -> None:
    state = _state("deepeval_idiom_solitaire(start=一手遮天)")
    state.apply_action(idiom_id(d, "天外有天"))  # 天 -> 天: a legal hit
    state.apply_action(idiom_id(d, "天外有天"))  # the same again: a repeat
    assert list(state.returns()) == [1.0, -1.0]
    assert state.match_metrics() | {"chain": None} == {
        "hits": [1, 0],
        "broken_by": 1,
        "break_reason": REPEAT,
        "turns": 2,
        "chain": None,
        "draw": False,
    }


def test_a_non_idiom_loses_and_its_raw_text_is_recorded() -> None:
    class Babbler(DeepEvalBot):
        async def act(self, observation: Observation) -> Decision:
            text = "我觉得应该是这个吧"
            return Decision(action=reply_to_action(game, text), text=text, raw_replies=(text,))

    game = load_game("deepeval_idiom_solitaire(start=一马当先)")
    bots = [Babbler(0, np.random.default_rng(0)), Babbler(1, np.random.default_rng(1))]
    record = asyncio.run(play_match(game, bots, seed=0))
    assert record.returns == [-1.0, 1.0]
    assert record.metrics["break_reason"] == NOT_AN_IDIOM and record.metrics["broken_by"] == 0
    (turn,) = record.turns
    assert turn.action == game.num_distinct_actions() - 1 and turn.action_string == "<not an idiom>"
    assert turn.text == "我觉得应该是这个吧" and turn.raw_replies == ["我觉得应该是这个吧"]


def test_turn_cap_is_a_draw(d: IdiomDictionary) -> None:
    state = _state("deepeval_idiom_solitaire(start=一马当先,max_turns=2)")
    state.apply_action(idiom_id(d, "先声夺人"))
    state.apply_action(idiom_id(d, "人山人海"))
    assert state.is_terminal() and list(state.returns()) == [0.0, 0.0]
    assert state.match_metrics()["draw"] and state.match_metrics()["hits"] == [1, 1]
    assert "draw" in state.observation_string(0)


# --- replies (the function the LLM layer uses) ---------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "先声夺人",
        "先聲奪人",  # traditional characters
        "好的，我的回答是：「先声夺人」。",  # words around the idiom
        "  先 声 夺 人 ！",  # spaces and punctuation
        "一马当先→先声夺人",  # the chain repeated: the last idiom counts
    ],
)
def test_replies_map_to_the_idiom(d: IdiomDictionary, reply: str) -> None:
    state = _state()
    action = reply_to_action(state, reply)
    assert action == idiom_id(d, "先声夺人")
    state.apply_action(action)
    assert state.match_metrics()["hits"] == [1, 0]


@pytest.mark.parametrize("reply", ["", "I don't know", "我不知道", "先声夺"])
def test_replies_without_an_idiom_map_to_the_invalid_action(reply: str) -> None:
    game = load_game("deepeval_idiom_solitaire")
    assert reply_to_action(game, reply) == game.num_distinct_actions() - 1


# --- homophone variant ------------------------------------------------------------------------------------


def test_homophone_accepts_a_same_sound_first_character(d: IdiomDictionary) -> None:
    homophone = idiom_id(d, "仙风道骨")
    assert d[homophone].first_pinyin == d[idiom_id(d, "一马当先")].last_pinyin == "xian"
    exact = _state("deepeval_idiom_solitaire(start=一马当先,match=exact)")
    assert exact.why_invalid(homophone) == WRONG_FIRST_CHAR
    state = _state("deepeval_idiom_solitaire(start=一马当先,match=homophone,hint=true)")
    assert "read 'xian'" in state.observation_string(0)
    assert state.why_invalid(homophone) is None and state.why_invalid(idiom_id(d, "先声夺人")) is None
    state.apply_action(homophone)
    assert not state.is_terminal() and state.match_metrics()["hits"] == [1, 0]
    assert state.why_invalid(idiom_id(d, "天外有天")) == WRONG_FIRST_CHAR


# --- long chains: copies, serialization, the kit ------------------------------------------------------------


@pytest.mark.parametrize("match", ["exact", "homophone"])
def test_long_chains_clone_and_serialize(d: IdiomDictionary, match: str) -> None:
    game = load_game(f"deepeval_idiom_solitaire(start=一马当先,max_turns=12,match={match})")
    rng = np.random.default_rng(3)
    state = game.new_initial_state()
    while not state.is_terminal():
        options = valid_replies(state.chain_ids(), match, d)  # type: ignore[arg-type]
        state.apply_action(int(rng.choice(options)) if options else state.invalid_action())
        for copy in (
            state.clone(),
            pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(game, state))[1],
        ):
            assert str(copy) == str(state) and copy.history() == state.history()
            assert copy.observation_string(1) == state.observation_string(1)
            assert list(copy.returns()) == list(state.returns())
            assert copy.match_metrics() == state.match_metrics()
    assert sum(state.match_metrics()["hits"]) >= 1


def test_conformance_kit_forbids_player_names() -> None:
    report = check_game(
        "deepeval_idiom_solitaire(max_turns=3)", playouts=5, forbidden=["idiom_strategic", "strategic", "limited"]
    )
    assert report.ok and report.checks["serialize"] > 0
