"""OpenSpiel's own games, made playable by LLM seats: rules cards, and OpenSpiel's Python games registered.

Some OpenSpiel games show a seat strings that mean nothing without a key (kuhn_poker's ``"011"``). Each file
``rules_cards/<short_name>.md`` beside this module is such a game's rules card, in plain words with the key to
its observation strings and move names; the referee broadcasts it as the game's rules
(:func:`deepeval_games.core.task.rules_text`). Importing this module registers every card and OpenSpiel's Python
games (``python_iterated_prisoners_dilemma``, ...), so that specs can name them.
"""

from __future__ import annotations

from importlib import resources

import open_spiel.python.games  # noqa: F401  (registers OpenSpiel's Python games with pyspiel)
import pyspiel

from deepeval_games.core.registry.games import register_payoff_support
from deepeval_games.core.task import ANY_GAME, Study, register_rules_card, register_study

__all__ = ["PAYOFF_SUPPORTS", "rules_card_names"]


def rules_card_names() -> list[str]:
    """Short names of the games that ship a rules card here."""
    folder = resources.files(__package__ or "game_defs") / "rules_cards"
    return sorted(p.name[:-3] for p in folder.iterdir() if p.name.endswith(".md"))


def _register_all() -> None:
    folder = resources.files(__package__ or "game_defs") / "rules_cards"
    for name in rules_card_names():
        register_rules_card(name, (folder / f"{name}.md").read_text(encoding="utf-8"))


def classical_study(game: pyspiel.Game) -> Study:
    """``eval`` on any game without a study of its own: the models against a uniformly random player and
    OpenSpiel's MCTS, every seating."""
    return Study(
        games=(game.get_type().short_name,),  # eval plays a string with parameters as given
        opponents=({"name": "random", "bot": "random"}, {"name": "mcts", "bot": "mcts"}),
        preset=None,
        repeats=2,
        epsilon=0.2,  # most of these games pay -1, 0 or +1
        budget_matches=100,
        note=f"{game.get_type().long_name} against OpenSpiel's classical players (random, MCTS), every seating",
    )


PAYOFF_SUPPORTS: dict[str, tuple[float, ...]] = {
    "tic_tac_toe": (-1.0, 0.0, 1.0),
    "connect_four": (-1.0, 0.0, 1.0),
    "hex": (-1.0, 1.0),
    "breakthrough": (-1.0, 1.0),
}
"""OpenSpiel's two-player games whose rules pay only a win, a draw or a loss (the values every payoff takes, any
parameters): their means get the exact interval (``exact-discrete/1``). Not kuhn_poker (it pays 1 or 2 chips
either way: four values) nor any game whose payoff counts something."""

_register_all()
register_study(ANY_GAME, classical_study)
for _name, _values in PAYOFF_SUPPORTS.items():
    register_payoff_support(_name, _values)
