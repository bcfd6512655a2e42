"""The evaluation tasks as OpenSpiel games.

Importing this package registers every task with ``pyspiel`` under a ``deepeval_`` short name, so that
``pyspiel.load_game("deepeval_public_goods(players=4,mode=2)")`` works.
"""

import game_defs.code_review.scorer  # (registers deepeval_code_review and its MBPP scorer)
import game_defs.idiom_solitaire.game  # (registers deepeval_idiom_solitaire)
import game_defs.translation.scorer  # noqa: F401  (registers deepeval_translation and its chrF/BLEU scorer)
from game_defs.public_goods import game as public_goods

__all__ = ["public_goods"]
