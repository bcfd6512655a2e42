"""The evaluation tasks as OpenSpiel games.

Importing this package registers the four built-in tasks (public goods, idiom solitaire, code review, translation)
with ``pyspiel`` under a ``deepeval_`` short name, so that ``pyspiel.load_game("deepeval_public_goods(players=4)")``
works. The other games (OpenSpiel's own with their rules cards, the TextArena, PettingZoo and clembench games) are
registered when the engine loads the ``deepeval_games.games`` entry points (``setup.cfg``), as an outside package's.
"""

import game_defs.code_review.scorer  # (registers deepeval_code_review and its MBPP scorer)
import game_defs.idiom_solitaire.game  # (registers deepeval_idiom_solitaire)
import game_defs.translation.scorer  # noqa: F401  (registers deepeval_translation and its chrF/BLEU scorer)
from game_defs.public_goods import game as public_goods

__all__ = ["public_goods"]
