"""OpenSpiel's own API test, ``open_spiel/integration_tests/api_test.py`` as the installed wheel ships it, on every
registered ``deepeval_`` game (the example package ``examples/ultimatum`` included once installed) and a few variants.

When api_test runs, it makes one test class per registered game: a subclass of its ``EnforceAPIOnPartialTreeBase``
with the class attributes ``game_name`` and ``game`` (its ``_create_test_case_classes``). Its run covers only the
games registered when it is imported, and only at their default parameters, so this module makes those classes
itself, the same way, for the project's games: pytest runs api_test's own checks on them, unchanged (observations
raise on an invalid seat, legal actions empty for a seat not to move, private observations empty in a game of
perfect information and present in one of imperfect information, public observations for every sampled state,
sequence lengths). Its states are sampled with Python's ``random`` module, seeded here so that CI runs the same states.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pyspiel
import pytest
from absl import flags
from open_spiel.integration_tests import api_test
from open_spiel.python.observation import make_observation

import tests.broken_games  # noqa: F401  (registers the testkit_ games)
from deepeval_games.core.observer import TextObserver
from deepeval_games.core.registry.games import load_game, registered_games

_VARIANTS = [
    "deepeval_public_goods(players=3,mode=2,rounds=2)",
    "deepeval_public_goods(players=2,endowment=3)",
    "deepeval_idiom_solitaire(validity=dictionary+judge,max_turns=4)",
    "deepeval_code_review(task_id=123,max_rounds=1)",
]
"""Variants beside each game's defaults: the other feedback mode, two seats, verdict nodes in Idiom Solitaire."""

if not flags.FLAGS.is_parsed():  # api_test reads its flag only when it builds its own classes; parse as absltest would
    flags.FLAGS(["api_test", "--test_only_games=^deepeval_"])


def _game_strings() -> list[str]:
    return [info.short_name for info in registered_games()] + _VARIANTS


def _api_test_class(game_string: str) -> type:
    """api_test's partial-tree test class for one game, made as its ``_create_test_case_classes`` makes them."""

    @classmethod  # type: ignore[misc]
    def set_up_class(cls: Any) -> None:
        random.seed(0)  # sample_some_states draws with the global generator
        api_test.EnforceAPIOnPartialTreeBase.setUpClass.__func__(cls)

    name = re.sub(r"\W+", "_", game_string).strip("_")
    attributes = {"game_name": game_string, "game": load_game(game_string), "setUpClass": set_up_class}
    return type(f"EnforceAPIPartialTree_{name}_Test", (api_test.EnforceAPIOnPartialTreeBase,), attributes)


_TESTED: dict[str, str] = {}
"""The api_test classes made here: class name -> game string."""
for _game_string in _game_strings():
    _class = _api_test_class(_game_string)
    globals()[_class.__name__] = _class  # pytest collects unittest classes from the module's names
    _TESTED[_class.__name__] = _game_string
del _class, _game_string


def test_every_registered_game_is_under_api_test() -> None:
    assert all(isinstance(globals()[name], type) for name in _TESTED)
    tested = set(_TESTED.values())
    assert {info.short_name for info in registered_games()} <= tested
    assert len(tested) >= 5 and set(_VARIANTS) <= tested


_P = pyspiel.PrivateInfoType


def _observation(game: pyspiel.Game, public: bool, private: pyspiel.PrivateInfoType, recall: bool = False) -> Any:
    kind = pyspiel.IIGObservationType(public_info=public, perfect_recall=recall, private_info=private)
    return make_observation(game, kind)


def test_public_goods_public_observation_hides_each_seats_own_investment() -> None:
    game = load_game("deepeval_public_goods(players=3,rounds=3,mode=1)")
    state = game.new_initial_state()
    state.apply_actions([3, 5, 11])  # seat 2 forfeits
    public = _observation(game, True, _P.NONE)
    texts = [public.string_from(state, seat) for seat in range(3)]
    assert texts[0] == texts[1] == texts[2]  # the same for every seat: nothing private in it
    assert "invested" not in texts[0] and "hold" not in texts[0] and "forfeit" not in texts[0]
    assert "In round 1 every participant received 4.27 coins from the pool." in texts[0]
    # the seats' own observation shows the seat's investment: the private part of it
    assert "you invested 3 coins" in state.observation_string(0)
    private = _observation(game, False, _P.SINGLE_PLAYER)
    assert private.string_from(state, 0) == "In round 1 Player 1 invested 3 coins.\nPlayer 1 holds 11.27 coins."
    assert "forfeited" in private.string_from(state, 2) and "pool" not in private.string_from(state, 2)
    every = _observation(game, True, _P.ALL_PLAYERS, recall=True).string_from(state, 0)
    assert all(f"Player {seat} holds" in every for seat in (1, 2, 3)) and texts[0].split("\n")[0] in every


def test_public_goods_tensors_follow_the_observation_type() -> None:
    game = load_game("deepeval_public_goods(players=3,rounds=2,endowment=4,mode=2)")
    state = game.new_initial_state()
    state.apply_actions([1, 4, 0])
    public = _observation(game, True, _P.NONE)
    public.set_from(state, 0)
    assert set(public.dict) == {"round", "investments"} and list(public.dict["investments"][0]) == [4, 1, 0]
    private = _observation(game, False, _P.SINGLE_PLAYER)
    private.set_from(state, 1)
    assert set(private.dict) == {"coins", "investment"} and private.dict["investment"][0, 4] == 1
    every = _observation(game, False, _P.ALL_PLAYERS, recall=True)
    every.set_from(state, 0)
    assert every.dict["investment"].shape == (2, 3, 6) and list(every.dict["investment"][0].argmax(axis=1)) == [1, 4, 0]
    assert list(every.dict["coins"]) == pytest.approx([3 + 1.6 * 5 / 3, 0 + 1.6 * 5 / 3, 4 + 1.6 * 5 / 3])
    # the seats' own types keep the layout OpenSpiel's tools were given before
    assert list(game.observation_tensor_shape()) == [3 + 1 + 6 + 3]


@pytest.mark.parametrize(
    "game_string",
    ["deepeval_idiom_solitaire(max_turns=4)", "deepeval_code_review(max_rounds=1)", "deepeval_translation"],
)
def test_perfect_information_private_views_are_empty_and_public_ones_whole(game_string: str) -> None:
    game = load_game(game_string)
    state = game.new_initial_state()
    for seat in (0, 1):
        assert _observation(game, False, _P.SINGLE_PLAYER).string_from(state, seat) == ""
        assert _observation(game, True, _P.NONE).string_from(state, seat) == state.observation_string(seat)
        assert _observation(game, True, _P.NONE, True).string_from(state, seat) == state.information_state_string(seat)


@pytest.mark.parametrize(
    ("game_string", "info_tensor", "observation_tensor"),
    [
        ("deepeval_idiom_solitaire(max_turns=4)", False, True),
        ("deepeval_code_review(max_rounds=1)", False, False),
        ("deepeval_translation", False, False),
        ("deepeval_public_goods(players=2)", True, True),
    ],
)
def test_a_tensor_the_game_does_not_provide_raises(
    game_string: str, info_tensor: bool, observation_tensor: bool
) -> None:
    game = load_game(game_string)
    game_type, state = game.get_type(), game.new_initial_state()
    assert (game_type.provides_information_state_tensor, game_type.provides_observation_tensor) == (
        info_tensor,
        observation_tensor,
    )
    for provided, method, kind in [
        (info_tensor, state.information_state_tensor, "InformationStateTensor"),
        (observation_tensor, state.observation_tensor, "ObservationTensor"),
    ]:
        if provided:
            assert len(method(0)) > 0
        else:  # as OpenSpiel's C++ games raise (tic_tac_toe's information_state_tensor), never an empty list
            with pytest.raises(pyspiel.SpielError, match=f"{kind} unimplemented"):
                method(0)


def test_a_perfect_information_view_that_names_the_seat_is_made_public_line_by_line() -> None:
    if "deepeval_ultimatum" not in {info.short_name for info in registered_games()}:
        pytest.skip("the example package is not installed: python -m pip install -e examples/ultimatum")
    game = load_game("deepeval_ultimatum")
    state = game.new_initial_state()
    state.apply_action(state.intern_utterance(0, "Half each?"))
    public = _observation(game, True, _P.NONE)
    text = public.string_from(state, 0)
    assert text == public.string_from(state, 1)  # the same for both seats
    assert text.startswith(
        "Player 1 is shown: Pot: 10 coins. You are Player 1, the proposer.\n"
        "Player 2 is shown: Pot: 10 coins. You are Player 2, the responder.\n"
    )
    assert text.split("\n")[2:] == state.observation_string(0).split("\n")[1:]  # the lines both seats are shown
    assert _observation(game, False, _P.SINGLE_PLAYER, recall=True).string_from(state, 1) == ""


def test_an_imperfect_information_observer_must_say_what_is_public_and_private() -> None:
    class Bare(TextObserver):
        def string_from(self, state: pyspiel.State, player: int) -> str:
            return "everything"

    state = pyspiel.load_game("testkit_hidden_values").new_initial_state()
    state.apply_action(1)
    state.apply_action(2)
    kind = pyspiel.IIGObservationType(public_info=True, perfect_recall=False, private_info=_P.NONE)
    with pytest.raises(NotImplementedError, match="imperfect information: it must give public_string_from"):
        Bare(kind, None).string_from(state, 0)
    seats = pyspiel.IIGObservationType(perfect_recall=True)  # the seats' own type needs neither hook
    assert Bare(seats, None).string_from(state, 0) == "everything"
