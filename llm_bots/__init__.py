"""Players: LLM bots that call any model through litellm, and scripted baselines.

Importing this package registers the built-in scripted bots by name (see
:func:`deepeval_games.registry.registered_bots`). litellm is imported only through
:mod:`llm_bots.transport`, which first tells it to use its bundled model price list rather than fetch one
from the internet.
"""

import llm_bots.scripted_code_review  # (registers the code review bots and judges)
import llm_bots.scripted_idiom  # noqa: F401  (registers the idiom solitaire bots)
from llm_bots import scripted_pgg

__all__ = ["scripted_pgg"]
