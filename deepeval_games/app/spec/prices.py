"""A budget holds only where every model it counts has a price: each call's cost is charged to it, and a model litellm
cannot price costs 0.0 a call, so a mistyped or new model name would play to the end under any budget.

:func:`check_budget_prices` refuses such a spec (or a re-judging budget, :func:`check_prices`) before any model call,
naming each unpriced model, the closest priced names in litellm's price table, and the settings that give a price
(``input_cost_per_token`` and ``output_cost_per_token``, :class:`llm_bots.model_config.ModelSettings`). Local models
(``local/...``) cost nothing and scripted bots make no calls. The price knowledge itself is
:mod:`llm_bots.model_info`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from deepeval_games.app.spec.players import PlayerSpec
from deepeval_games.app.spec.spec import ExperimentSpec
from deepeval_games.core.errors import UnpricedModelError
from llm_bots import model_info

__all__ = ["PRICE_KEYS", "check_budget_prices", "check_prices", "given_price", "price_message", "unpriced_models"]

PRICE_KEYS = ("input_cost_per_token", "output_cost_per_token")
"""The model settings that give a model's price (USD per token), both or neither."""


def given_price(params: dict[str, Any]) -> tuple[float, float] | None:
    """The price per token a model player's settings give (``input_cost_per_token``, ``output_cost_per_token``);
    None unless both are numbers."""
    values = [params.get(key) for key in PRICE_KEYS]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return None
    return float(values[0]), float(values[1])  # type: ignore[arg-type]


def unpriced_models(players: Iterable[PlayerSpec | None]) -> list[str]:
    """The model strings among ``players`` (the judge included) whose calls no price is known for, each once, in
    order."""
    found: list[str] = []
    for player in players:
        if player is None or player.model is None or player.model in found:
            continue
        if model_info.needs_price(player.model, given_price(player.params)):
            found.append(player.model)
    return found


def check_prices(players: Iterable[PlayerSpec | None], budget: str) -> None:
    """Refuse a budget (``budget``: how the user set it, for the message) that counts a model with no price.

    Raises:
        UnpricedModelError: one or more models have no price; the message names each with the closest priced names
            and says how to give a price.
    """
    models = unpriced_models(players)
    if models:
        raise UnpricedModelError(price_message(models, budget))


def check_budget_prices(spec: ExperimentSpec) -> None:
    """Refuse a spec with a budget (``[experiment] budget_usd``, eval's ``--budget``) and a model with no price.

    Raises:
        UnpricedModelError: as :func:`check_prices`.
    """
    if spec.budget_usd is None:
        return
    check_prices([*spec.players, spec.judge], f"a budget of ${spec.budget_usd:,.2f} (budget_usd, eval's --budget)")


def price_message(models: list[str], budget: str) -> str:
    """The refusal: what has no price, what it may have meant, and how to give a price."""
    names = ", ".join(models)
    lines = [
        f"{budget} is set, and litellm has no price for {names}: its calls would count $0 and the budget would "
        "never stop them. Nothing was sent."
    ]
    for model in models:
        close = model_info.closest_priced(model)
        lines.append(
            f"  {model}: closest priced names: {', '.join(close)}" if close else f"  {model}: no priced name is close"
        )
    lines.append(
        "  To give a price, set input_cost_per_token and output_cost_per_token (USD per token; 0 for a model that "
        "costs nothing, such as a self-hosted one): with eval, e.g. -M input_cost_per_token=1.5e-07 "
        "-M output_cost_per_token=6e-07 ($0.15 and $0.60 per million tokens); in a spec, those keys in the "
        "player's table (or [judge]); with rejudge, --param."
    )
    return "\n".join(lines)
