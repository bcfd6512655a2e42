"""The conformance kit passes on every registered task and rejects broken games clearly."""

from __future__ import annotations

import re

import pyspiel
import pytest

import tests.broken_games  # noqa: F401  (registers the testkit_ games)
from deepeval_games import ConformanceError, load_game, registered_games
from deepeval_games.core.testing import check_game, openspiel_random_sim_test

_VARIANTS = {
    "deepeval_public_goods": [
        "deepeval_public_goods(players=4,mode=1)",
        "deepeval_public_goods(players=3,mode=2,alpha=2.5,rounds=3)",
        "deepeval_public_goods(players=2,mode=1,alpha=3.0,endowment=5)",
        "deepeval_public_goods(players=3,mode=2,rounds=3,feedback=paper,answer=free,unusable=reformat)",
    ],
    "deepeval_code_review": [
        "deepeval_code_review",
        "deepeval_code_review(task_id=123,max_rounds=1)",
        "deepeval_code_review(task_id=510,max_rounds=4)",
    ],
    "deepeval_idiom_solitaire": [
        "deepeval_idiom_solitaire",
        "deepeval_idiom_solitaire(start=一马当先,max_turns=4,match=homophone)",
    ],
}


def _game_strings() -> list[str]:
    strings = []
    for info in registered_games():
        strings += _VARIANTS.get(info.short_name, [info.short_name])
    return strings


def test_every_task_has_variants_listed() -> None:
    assert {info.short_name for info in registered_games()} >= {"deepeval_public_goods"}


@pytest.mark.parametrize("game_string", _game_strings())
def test_conformance_kit_passes(game_string: str) -> None:
    report = check_game(game_string, playouts=8, forbidden=["free-rider", "pgg_free_rider", "gpt"])
    assert report.ok
    checks = ("terminates", "action_strings", "returns_bounded", "clone", "serialize", "deterministic")
    for check in (*checks, "observation_types"):
        assert report.checks.get(check, 0) > 0, check
    assert not report.notes


@pytest.mark.parametrize("game_string", _game_strings())
def test_openspiel_random_sim_test(game_string: str) -> None:
    game = load_game(game_string)
    openspiel_random_sim_test(game, num_sims=5, serialize=True)


def test_pgg_declares_hidden_moves_and_kit_checks_them() -> None:
    report = check_game("deepeval_public_goods(players=3,mode=1)", playouts=3)
    assert report.checks["no_leak"] > 0


@pytest.mark.parametrize("mode", [1, 2])
def test_kit_catches_a_leaky_observation(mode: int) -> None:
    with pytest.raises(ConformanceError, match=r"\[no_leak\] seat \d can tell joint moves"):
        check_game(f"testkit_leaky_public_goods(players=3,mode={mode})", playouts=2)


def test_kit_catches_returns_out_of_bounds() -> None:
    with pytest.raises(ConformanceError, match=r"\[returns_bounded\] seat \d returned"):
        check_game(pyspiel.load_game("testkit_counting(payout=5.0)"), playouts=5)


def test_kit_catches_a_game_longer_than_declared() -> None:
    with pytest.raises(ConformanceError, match=r"\[terminates\].*max_game_length=2"):
        check_game(pyspiel.load_game("testkit_counting(moves=6)"), playouts=2)


def test_kit_catches_empty_action_strings() -> None:
    with pytest.raises(ConformanceError, match=r"\[action_strings\] action \d of player \d has an empty string"):
        check_game(pyspiel.load_game("testkit_counting(empty_strings=true)"), playouts=2)


def test_kit_catches_forbidden_words() -> None:
    report = check_game("deepeval_public_goods(players=2)", playouts=1, forbidden=["Round"], raise_on_failure=False)
    assert not report.ok and "forbidden word 'Round'" in report.failures[0]


def test_correct_counting_game_passes() -> None:
    assert check_game(pyspiel.load_game("testkit_counting"), playouts=3).ok


def test_kit_passes_a_game_that_hides_chance_dealt_values() -> None:
    report = check_game("testkit_hidden_values", playouts=6)
    assert report.ok and report.checks["no_leak"] > 0 and report.checks["observation_types"] > 0


def test_kit_names_the_seat_and_the_chance_dealt_value_it_is_shown() -> None:
    report = check_game("testkit_hidden_values(leak=always)", playouts=2, raise_on_failure=False)
    # each seat is shown the other's value: Player 2 sees what chance dealt Player 1, and the other way round
    assert any(
        re.match(r"\[no_leak\] seat 1 \(Player 2\) is shown the hidden chance outcome 'deal \d to Player 1'", f)
        for f in report.failures
    ), report.failures
    assert any(
        "seat 0 (Player 1) is shown the hidden chance outcome 'deal" in f and "to Player 2'" in f
        for f in report.failures
    )
    with pytest.raises(ConformanceError, match=r"hidden chance outcome 'deal \d to Player"):
        check_game("testkit_hidden_values(leak=always)", playouts=1)


def test_kit_follows_the_other_outcomes_to_the_end_of_the_game() -> None:
    # the other seat's value shown only once the game is over: after a fold the rules still hide it
    with pytest.raises(ConformanceError, match=r"seat \d \(Player \d\) is shown the hidden chance outcome 'deal \d to"):
        check_game("testkit_hidden_values(leak=at_end)", playouts=10)


def test_kit_requires_the_observation_types_to_be_honoured() -> None:
    # an observer that ignores the type it is made for: its "public" text is each seat's own view
    report = check_game("testkit_hidden_values(typed=false)", playouts=2, raise_on_failure=False)
    assert any("public and private observations are the same text" in f for f in report.failures), report.failures
    assert any("the public observation tells seat 0 but not seat 1 whether chance gave" in f for f in report.failures)


def test_kit_requires_empty_private_observations_in_a_game_of_perfect_information() -> None:
    with pytest.raises(ConformanceError, match=r"\[observation_types\] seat 0's private observation is 'a secret'"):
        check_game("testkit_private_counting", playouts=1)


def test_kit_checks_openspiel_chance_games_and_notes_what_it_cannot() -> None:
    kuhn = check_game("kuhn_poker", playouts=4)  # chance moves do not count against max_game_length
    assert kuhn.ok and kuhn.checks["no_leak"] > 0 and kuhn.checks["observation_types"] > 0
    dice = check_game("liars_dice", playouts=2)  # its C++ observers serve only their own types
    assert dice.ok and "observation_types" not in dice.checks and "did not run" in dice.notes[0]
