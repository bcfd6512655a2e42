"""Public Goods Game rules: payoffs and feedback computed by hand."""

from __future__ import annotations

import pytest

from deepeval_games import UnknownGameError, load_game


def _play(game_string: str, rounds: list[list[int]]):
    state = load_game(game_string).new_initial_state()
    for joint in rounds:
        state.apply_actions(joint)
    return state


def test_mode1_payoffs_by_hand() -> None:
    # n=3, E=10, alpha=1.2. Round 1: 10,5,0 -> pool 15*1.2/3 = 6 each.
    # Round 2: 0,0,0 -> pool 0. Totals: seat0 0+6 + 10 = 16; seat1 5+6 + 10 = 21; seat2 10+6 + 10 = 26.
    state = _play("deepeval_public_goods(players=3,rounds=2,alpha=1.2,mode=1)", [[10, 5, 0], [0, 0, 0]])
    assert state.is_terminal()
    assert list(state.returns()) == pytest.approx([16.0, 21.0, 26.0])


def test_mode2_payoffs_equal_mode1_payoffs() -> None:
    # Feedback differs between modes; payoffs do not. n=4, alpha=1.6, E=10: 10,10,0,4 -> pool 24*1.6/4 = 9.6.
    state = _play("deepeval_public_goods(players=4,rounds=1,alpha=1.6,mode=2)", [[10, 10, 0, 4]])
    assert list(state.returns()) == pytest.approx([9.6, 9.6, 19.6, 15.6])


def test_forfeit_loses_the_round_endowment_only() -> None:
    game = load_game("deepeval_public_goods(players=3,rounds=1,alpha=1.5,mode=1)")
    state = game.new_initial_state()
    forfeit = state.forfeit_action()
    assert forfeit == 11 and forfeit not in state.legal_actions(0)
    state.apply_actions([forfeit, 10, 0])  # pool 10 * 1.5 / 3 = 5
    assert list(state.returns()) == pytest.approx([5.0, 5.0, 15.0])
    assert state.action_to_string(0, forfeit) == "forfeit"


def test_mode1_feedback_string_and_fields() -> None:
    state = _play("deepeval_public_goods(players=3,rounds=3,alpha=1.2,mode=1)", [[10, 5, 0]])
    assert state.observation_string(1) == (
        "In round 1 you invested 5 coins, and you received 6 coins from the pool.\n"
        "You now hold 11 coins.\n"
        "Round 2 of 3: a new round begins and you receive 10 coins."
    )
    fields = state.observation_fields(1)
    assert fields["last_income"] == pytest.approx(6.0)
    assert "last_investments" not in fields


def test_mode2_feedback_is_sorted_descending_without_seats() -> None:
    state = _play("deepeval_public_goods(players=4,rounds=3,alpha=1.6,mode=2)", [[3, 10, 0, 7]])
    assert state.observation_string(0) == (
        "In round 1 the amounts put into the pool were [10, 7, 3, 0] (largest first); you invested 3 coins.\n"
        "You now hold 15 coins.\n"
        "Round 2 of 3: a new round begins and you receive 10 coins."
    )
    assert state.observation_fields(2)["last_investments"] == [10, 7, 3, 0]
    assert "last_income" not in state.observation_fields(2)


def test_information_state_has_perfect_recall() -> None:
    state = _play("deepeval_public_goods(players=2,rounds=3,alpha=1.5,mode=1)", [[10, 0], [4, 6]])
    info = state.information_state_string(0)
    assert info.startswith("In round 1 you invested 10 coins,") and "\nIn round 2 you invested 4 coins," in info
    assert "round 1" not in state.observation_string(0)  # the observation: the last round only


def test_bounds() -> None:
    game = load_game("deepeval_public_goods(players=4,rounds=5,alpha=1.6)")
    assert game.min_utility() == 0.0
    # best case per round: keep 10 and get 1.6 * 30 / 4 = 12 -> 22; five rounds -> 110.
    assert game.max_utility() == pytest.approx(110.0)


@pytest.mark.parametrize(
    "game_string, fragment",
    [
        ("deepeval_public_goods(players=1)", "players must be in 2..10"),
        ("deepeval_public_goods(mode=3)", "mode must be 1 or 2"),
        ("deepeval_public_goods(alpha=0.0)", "alpha must be > 0"),
        ("deepeval_public_goods(player=3)", "unknown parameter 'player'; did you mean 'players'?"),
    ],
)
def test_bad_parameters_are_clear_errors(game_string: str, fragment: str) -> None:
    with pytest.raises(UnknownGameError, match="cannot load") as info:
        load_game(game_string)
    assert fragment in str(info.value)


def test_unknown_game_suggests_a_name() -> None:
    with pytest.raises(UnknownGameError, match="Did you mean 'deepeval_public_goods'"):
        load_game("deepeval_public_good(players=3)")
