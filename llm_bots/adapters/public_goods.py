"""LLM adapter of the Public Goods Game: the answer format and a lenient JSON parser.

The rules and each round's feedback reach the model through the message pool (the game's rules text and
observations); the prompt file (``llm_bots/prompts/public_goods.toml``) holds the answer format, the
re-ask text and the reasons a reply is not usable.

The reply format is ``{"reason": "...", "coins": X}``. Parsing normalises Unicode (full-width digits),
ignores code fences and prose, and takes the *last* JSON object that has a ``coins`` key; the amount
must be a whole number among the seat's legal investments. Anything else is re-asked with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from deepeval_games.bot import Observation
from game_defs.public_goods import PublicGoodsFields
from llm_bots.adapters import Parsed, TaskAdapter, register_adapter
from llm_bots.parsing import json_objects, normalize, whole_number
from llm_bots.prompts import load_prompts

__all__ = ["PublicGoodsAdapter", "parse_coins"]

_TASK = "public_goods"
_COINS_FIELD = re.compile(r'"?coins"?\s*[:=]\s*"?(-?\d+(?:\.\d+)?)')


def _reason(name: str, **values: Any) -> str:
    return load_prompts(_TASK).render("reasons", name, **values).strip()


def parse_coins(reply: str, endowment: int) -> tuple[int | None, str | None]:
    """The invested amount in a reply, or None and the reason it cannot be used."""
    text = normalize(reply)
    if not text:
        return None, _reason("empty")
    candidates = [obj["coins"] for obj in json_objects(text) if "coins" in obj]
    if not candidates:
        loose = _COINS_FIELD.findall(text)
        if not loose:
            return None, _reason("no_json")
        candidates = [loose[-1]]
    value = whole_number(candidates[-1])
    if value is None:
        return None, _reason("not_whole", got=repr(candidates[-1]))
    if not 0 <= value <= endowment:
        return None, _reason("out_of_range", endowment=endowment, value=value)
    return value, None


@register_adapter("deepeval_public_goods")
class PublicGoodsAdapter(TaskAdapter):
    """Answer texts and parser for ``deepeval_public_goods``."""

    task = _TASK

    def values(self, observation: Observation) -> dict[str, Any]:
        return {"endowment": cast(PublicGoodsFields, observation.fields)["endowment"]}

    def parse(self, reply: str, observation: Observation) -> Parsed:
        value, error = parse_coins(reply, cast(PublicGoodsFields, observation.fields)["endowment"])
        if error is not None:
            return Parsed(error=error)
        if value not in observation.legal_actions:
            return Parsed(error=_reason("not_legal", value=value))
        return Parsed(action=value, text=reply)

    def response_schema(self, observation: Observation) -> Mapping[str, Any]:
        endowment = cast(PublicGoodsFields, observation.fields)["endowment"]
        return {
            "type": "json_schema",
            "json_schema": {
                "name": "investment",
                "strict": True,
                "schema": {
                    "type": "object",
                    "properties": {
                        "reason": {"type": "string"},
                        "coins": {"type": "integer", "minimum": 0, "maximum": endowment},
                    },
                    "required": ["reason", "coins"],
                    "additionalProperties": False,
                },
            },
        }
