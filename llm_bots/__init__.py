"""Players: LLM bots that call any model through litellm, and scripted baselines.

Importing this package registers the built-in scripted bots by name (see
:func:`deepeval_games.registry.registered_bots`).
"""

from llm_bots import scripted_pgg

__all__ = ["scripted_pgg"]
