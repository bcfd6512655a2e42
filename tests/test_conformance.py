"""The conformance kit passes on every registered task and rejects broken games clearly."""

from __future__ import annotations

import pyspiel
import pytest

import tests.broken_games  # noqa: F401  (registers the testkit_ games)
from deepeval_games import ConformanceError, load_game, registered_games
from deepeval_games.testing import check_game, openspiel_random_sim_test

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
    for check in ("terminates", "action_strings", "returns_bounded", "clone", "serialize", "deterministic"):
        assert report.checks.get(check, 0) > 0, check


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
