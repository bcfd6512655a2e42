"""Players: LLM bots that call any model through litellm, and scripted baselines.

The built-in scripted bots, judges and task adapters register through the entry points in ``setup.cfg``
(``deepeval_games.bots``, ``deepeval_games.adapters``), like any outside package's; importing this package
imports none of them. The names below are imported on first use: :class:`LLMBot` and the model runtime need
litellm, which is slow to import and is loaded only through :func:`llm_bots.model_info.litellm` (which first tells
it to use its bundled model price list rather than fetch one from the internet). Everything asked about a model
string (local or hosted, provider, context window, price, credentials) is answered by :mod:`llm_bots.model_info`.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_bots.adapters import GenericAdapter, Parsed, TaskAdapter, adapter_for, register_adapter
    from llm_bots.llm_bot import BotSettings, LLMBot, ModelRuntime, make_llm_bot
    from llm_bots.model_config import ModelConfig

__all__ = [
    "BotSettings",
    "GenericAdapter",
    "LLMBot",
    "ModelConfig",
    "ModelRuntime",
    "Parsed",
    "TaskAdapter",
    "adapter_for",
    "make_llm_bot",
    "register_adapter",
]

_WHERE = {
    "BotSettings": "llm_bots.llm_bot",
    "LLMBot": "llm_bots.llm_bot",
    "ModelRuntime": "llm_bots.llm_bot",
    "make_llm_bot": "llm_bots.llm_bot",
    "ModelConfig": "llm_bots.model_config",
    "GenericAdapter": "llm_bots.adapters",
    "Parsed": "llm_bots.adapters",
    "TaskAdapter": "llm_bots.adapters",
    "adapter_for": "llm_bots.adapters",
    "register_adapter": "llm_bots.adapters",
}


def __getattr__(name: str) -> Any:
    """A name of the list above, imported on first use (litellm loads only when a model plays). Importing this
    package imports nothing else, so a process that needs one module of it (the local model's server,
    ``python -m llm_bots.local.serve``) does not load the engine."""
    from deepeval_games.core.registry.entry_points import lazy_names

    return lazy_names(__name__, _WHERE)(name)
