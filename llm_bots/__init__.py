"""Players: LLM bots that call any model through litellm, and scripted baselines.

Importing this package registers the built-in scripted bots by name (see
:func:`deepeval_games.registry.registered_bots`). It also tells litellm to use its bundled model price
list rather than fetch one from the internet at import time.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from llm_bots import scripted_pgg

__all__ = ["scripted_pgg"]
