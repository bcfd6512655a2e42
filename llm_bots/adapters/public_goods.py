"""LLM adapter of the Public Goods Game: the answer format and a lenient JSON parser.

The rules and each round's feedback reach the model through the message pool (the game's rules text and
observations); the prompt file (``llm_bots/prompts/public_goods.toml``) holds the answer format, the
re-ask text and the reasons a reply is not usable.

The reply format is ``{"reason": "...", "coins": X}``. Parsing normalises Unicode (full-width digits),
ignores code fences and prose, and takes the *last* JSON object that has a ``coins`` key; the amount
must be a whole number among the seat's legal investments. Anything else is re-asked with the reason.

With the game parameter ``unusable=reformat`` (``preset = "paper"``) the referee rewrites a reply that is not in
the format instead, as the paper's referee does (:func:`reformat_coins`): the amount it states in prose is played,
and the turn's text is the rewritten answer, ``{"reason": ..., "coins": X, "reformatted": true}`` (the raw reply
stays among the turn's raw replies). A reply that states no amount from 0 to E is re-asked as before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, cast

from deepeval_games.core.bot import Observation
from game_defs.public_goods import PublicGoodsFields
from llm_bots.adapters import Parsed, TaskAdapter, register_adapter
from llm_bots.parsing import json_objects, normalize, whole_number
from llm_bots.prompts import load_prompts

__all__ = ["PublicGoodsAdapter", "parse_coins", "reformat_coins"]

_TASK = "public_goods"
_COINS_FIELD = re.compile(r'"?coins"?\s*[:=]\s*"?(-?\d+(?:\.\d+)?)')
_NUMBER = re.compile(r"(?<![\d.])(\d+)(?![\d.])")
_OUT_OF = re.compile(r"(?:\bout of|\bof(?: my| the)?|/)\s*\d+", re.IGNORECASE)
_NUMBER_OF_COINS = re.compile(r"(?<![\d.])(\d+)\s*(?:coins?|枚|个金币|金币)", re.IGNORECASE)


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


def reformat_coins(reply: str, endowment: int) -> int | None:
    """The amount a reply outside the format states, as the referee rewrites it; None when it states none.

    The last whole number followed by "coin(s)" that lies in 0..``endowment``; without one, the last whole
    number in that range anywhere in the reply. A total such as "out of 10", "of my 10" or "/10" is not an amount.
    """
    text = _OUT_OF.sub(" ", normalize(reply))
    for pattern in (_NUMBER_OF_COINS, _NUMBER):
        amounts = [int(m) for m in pattern.findall(text) if 0 <= int(m) <= endowment]
        if amounts:
            return amounts[-1]
    return None


@register_adapter("deepeval_public_goods")
class PublicGoodsAdapter(TaskAdapter):
    """Answer texts and parser for ``deepeval_public_goods``."""

    task = _TASK

    def values(self, observation: Observation) -> dict[str, Any]:
        return {"endowment": cast(PublicGoodsFields, observation.fields)["endowment"]}

    def parse(self, reply: str, observation: Observation) -> Parsed:
        endowment = cast(PublicGoodsFields, observation.fields)["endowment"]
        value, error = parse_coins(reply, endowment)
        if error is not None and observation.params.get("unusable") == "reformat":
            rewritten = reformat_coins(reply, endowment)
            if rewritten is not None and rewritten in observation.legal_actions:
                text = {"reason": (reply or "").strip(), "coins": rewritten, "reformatted": True}
                return Parsed(action=rewritten, text=json.dumps(text, ensure_ascii=False))
        if error is not None:
            return Parsed(error=error)
        if value not in observation.legal_actions:
            return Parsed(error=_reason("not_legal", value=value))
        return Parsed.move(value, reply)

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
