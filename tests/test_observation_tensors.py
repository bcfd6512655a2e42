"""The Public Goods Game and Idiom Solitaire give observation tensors through their observers, so OpenSpiel's
learning tools and PettingZoo (Shimmy's ``OpenSpielCompatibilityV0``, checked by PettingZoo's own ``api_test``)
can use them; the tensors hold what the strings say and nothing a seat may not see."""

from __future__ import annotations

import numpy as np
import pettingzoo.test as pettingzoo_test  # dev dependencies: a missing one fails the suite, never skips it
import pyspiel
import pytest
import shimmy

from deepeval_games.core.registry.games import load_game


@pytest.mark.parametrize(
    "game_string",
    [
        "deepeval_public_goods",
        "deepeval_public_goods(mode=2,players=3,rounds=3)",
        "deepeval_idiom_solitaire(max_turns=6)",
    ],
)
def test_pettingzoo_api_test_passes_through_shimmy(game_string: str) -> None:
    game = load_game(game_string)
    # Shimmy's reset() reloads the game by its short name: parameters go in as its config, never as a Game
    short = game.get_type().short_name
    env = shimmy.OpenSpielCompatibilityV0(game_name=short, config=dict(game.get_parameters()))
    agent = env.possible_agents[0]
    assert len(env.possible_agents) == game.num_players()
    assert env.observation_space(agent).shape == tuple(game.observation_tensor_shape())
    pettingzoo_test.api_test(env, num_cycles=100)
    env.reset(seed=0)
    assert env.observe(agent).shape == tuple(game.observation_tensor_shape())  # a tensor, not the string


def test_public_goods_tensor_holds_what_the_seat_is_told() -> None:
    game = load_game("deepeval_public_goods(players=3,rounds=2,endowment=4,alpha=1.5,mode=1)")
    state = game.new_initial_state()
    observer = game.make_py_observer()
    assert list(game.observation_tensor_shape()) == [3 + 1 + 6 + 1]
    state.apply_actions([4, 1, 5])  # seat 2 forfeits (action E + 1)
    observer.set_from(state, 2)
    assert list(observer.dict["round"]) == [0, 1, 0] and observer.dict["coins"][0] == pytest.approx(1.5 * 5 / 3)
    assert list(observer.dict["investment"][0]) == [0, 0, 0, 0, 0, 1] and observer.dict["pool_share"][0] == 2.5
    assert list(state.observation_tensor(2)) == list(observer.tensor)
    # mode 1 hides who gave what: seats 0 and 1 swapping their amounts leaves seat 2's tensor as it was
    other = game.new_initial_state()
    other.apply_actions([1, 4, 5])
    assert other.observation_tensor(2) == state.observation_tensor(2)
    assert other.observation_tensor(0) != state.observation_tensor(0)
    # perfect recall: every round; at the end, round "over"
    state.apply_actions([0, 0, 0])
    info = np.asarray(state.information_state_tensor(0))
    assert len(info) == game.information_state_tensor_size() == 3 + 1 + 2 * 6 + 2
    assert list(info[:3]) == [0, 0, 1] and list(info[4:10]) == [0, 0, 0, 0, 1, 0] and list(info[-2:]) == [2.5, 0]


def test_public_goods_mode_2_tensor_shows_sorted_amounts_only() -> None:
    game = load_game("deepeval_public_goods(players=3,rounds=2,endowment=4,mode=2)")
    first, second = game.new_initial_state(), game.new_initial_state()
    first.apply_actions([1, 4, 0])
    second.apply_actions([1, 0, 4])  # the same amounts, other seats
    observer = game.make_py_observer()
    observer.set_from(first, 0)
    assert list(observer.dict["investments"][0]) == [4, 1, 0]
    assert first.observation_tensor(0) == second.observation_tensor(0)


def test_idiom_tensor_shows_the_chain_end_and_the_used_idioms() -> None:
    game = load_game("deepeval_idiom_solitaire(max_turns=4)")
    state = game.new_initial_state()
    start = state.observation_fields(0)["chain_ids"][0]
    observer = game.make_py_observer()
    observer.set_from(state, 1)
    assert observer.dict["last"][start] == 1 and observer.dict["used"].sum() == 1
    assert list(observer.dict["to_move"]) == [1, 0] and observer.dict["turn"][0] == 1
    assert state.observation_tensor(0) == state.observation_tensor(1)  # perfect information
    state.apply_action(state.invalid_action())  # seat 0 concedes
    observer.set_from(state, 0)
    assert list(observer.dict["to_move"]) == [0, 0] and observer.dict["last"][start] == 1


def test_openspiel_rl_environment_plays_public_goods_from_the_tensor() -> None:
    from open_spiel.python import rl_environment

    game = load_game("deepeval_public_goods(players=2,rounds=3)")
    env = rl_environment.Environment(game, seed=0)
    rng = np.random.default_rng(0)
    step = env.reset()
    while not step.last():
        assert len(step.observations["info_state"][0]) == game.information_state_tensor_size()
        step = env.step([int(rng.choice(step.observations["legal_actions"][p])) for p in range(2)])
    assert len(step.rewards) == 2 and isinstance(pyspiel.load_game("tic_tac_toe"), pyspiel.Game)
