"""LLM adapter of the Public Goods Game: the paper's prompts (in our words) and a lenient JSON parser.

The reply format is ``{"reason": "...", "coins": X}``. Parsing normalises Unicode (full-width digits),
ignores code fences and prose, and takes the *last* JSON object that has a ``coins`` key; the amount
must be a whole number among the seat's legal investments. Anything else is re-asked with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from deepeval_games.bot import Observation
from llm_bots.adapters import Parsed, TaskAdapter, register_adapter
from llm_bots.parsing import json_objects, normalize, whole_number

__all__ = ["PublicGoodsAdapter", "parse_coins"]

_COINS_FIELD = re.compile(r'"?coins"?\s*[:=]\s*"?(-?\d+(?:\.\d+)?)')


def _format_number(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def parse_coins(reply: str, endowment: int) -> tuple[int | None, str | None]:
    """The invested amount in a reply, or None and the reason it cannot be used."""
    text = normalize(reply)
    if not text:
        return None, "the reply was empty."
    candidates = [obj["coins"] for obj in json_objects(text) if "coins" in obj]
    if not candidates:
        loose = _COINS_FIELD.findall(text)
        if not loose:
            return None, 'no JSON object with a "coins" field was found.'
        candidates = [loose[-1]]
    value = whole_number(candidates[-1])
    if value is None:
        return None, f'"coins" must be a whole number, got {candidates[-1]!r}.'
    if not 0 <= value <= endowment:
        return None, f'"coins" must be between 0 and {endowment}, got {value}.'
    return value, None


@register_adapter("deepeval_public_goods")
class PublicGoodsAdapter(TaskAdapter):
    """Prompts and parser for ``deepeval_public_goods``."""

    task = "public_goods"

    def values(self, observation: Observation) -> dict[str, Any]:
        fields = observation.fields
        return {
            "players": fields["players"],
            "rounds": fields["rounds"],
            "endowment": fields["endowment"],
            "alpha": _format_number(float(fields["alpha"])),
            "seat_label": self.seat_label(observation),
            "round": fields["round"],
        }

    def turn_prompt(self, observation: Observation, first_turn: bool) -> str:
        fields = observation.fields
        values = self.values(observation)
        mode = int(fields["mode"])
        parts = []
        if first_turn:
            parts.append(self.prompts.render("player", f"rules_mode{mode}", **values))
        if "last_income" in fields:
            parts.append(
                self.prompts.render(
                    "player", "next_round_mode1", income=_format_number(fields["last_income"]), **values
                )
            )
        elif "last_investments" in fields:
            investments = "[" + ", ".join(str(x) for x in fields["last_investments"]) + "]"
            parts.append(self.prompts.render("player", "next_round_mode2", investments=investments, **values))
        else:
            parts.append(self.prompts.render("player", "first_round", **values))
        parts.append(self.prompts.render("player", "answer_format", **values))
        return "\n\n".join(part.strip() for part in parts)

    def parse(self, reply: str, observation: Observation) -> Parsed:
        value, error = parse_coins(reply, int(observation.fields["endowment"]))
        if error is not None:
            return Parsed(error=error)
        if value not in observation.legal_actions:
            return Parsed(error=f"{value} coins is not a legal investment now.")
        return Parsed(action=value, text=reply)

    def response_schema(self, observation: Observation) -> Mapping[str, Any]:
        endowment = int(observation.fields["endowment"])
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
