"""LLM adapter of the Public Goods Game: the answer format, a lenient JSON parser and the re-formatting stand-in.

The rules and each round's feedback reach the model through the message pool (the game's rules text and
observations); the prompt file (``llm_bots/public_goods/prompts.toml``) holds the answer formats, the re-ask texts
and the reasons a reply is not usable.

What a seat is asked for depends on the game parameter ``answer``:

* ``json`` (default): ``{"reason": "...", "coins": X}``, with its JSON schema where the player's ``json_mode``
  enforces one. Parsing normalises Unicode (full-width digits), ignores code fences and prose, and takes the *last*
  JSON object that has a ``coins`` key; the amount must be a whole number among the seat's legal investments.
  Anything else is re-asked with the reason.
* ``free`` (``preset = "paper"``): the amount and the reasons in the seat's own words, and no JSON schema whatever
  the ``json_mode``. A JSON answer is still read as above; any other reply is read by the referee's re-formatting
  stand-in (:func:`reformat_coins`, :mod:`llm_bots.public_goods.reading`).

With ``unusable=reformat`` (also set by ``preset = "paper"``) a reply outside the JSON format is read by the same
stand-in instead of being re-asked. A reply the stand-in reads is played, and the turn's text is the rewritten
answer, ``{"reason": <the reply>, "coins": X, "reformatted": true}`` (the raw reply stays among the turn's raw
replies); a reply that states no amount, or states it ambiguously (two amounts, out of range, not whole), is
re-asked, never guessed: with ``answer=free`` the re-ask gives the stand-in's reason, with ``answer=json`` the JSON
format's reason (as before the stand-in existed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, cast

from deepeval_games.core.bot import Observation
from game_defs.public_goods.game import PublicGoodsFields
from llm_bots.adapters import Parsed, TaskAdapter, register_adapter
from llm_bots.parsing import json_objects, normalize, whole_number
from llm_bots.prompts import load_prompts
from llm_bots.public_goods.reading import read_amount

__all__ = ["PublicGoodsAdapter", "parse_coins", "reformat_coins"]

_TASK = "public_goods"
_COINS_FIELD = re.compile(r'"?coins"?\s*[:=]\s*"?(-?\d+(?:\.\d+)?)')


def _reason(name: str, **values: Any) -> str:
    return load_prompts(_TASK).render("reasons", name, **values).strip()


def _stated_coins(text: str) -> Any:
    """The ``coins`` value of the last JSON object that has one, else of the last loose ``coins: X``; None if none."""
    candidates = [obj["coins"] for obj in json_objects(text) if "coins" in obj]
    if candidates:
        return candidates[-1]
    loose = _COINS_FIELD.findall(text)
    return loose[-1] if loose else None


def parse_coins(reply: str, endowment: int) -> tuple[int | None, str | None]:
    """The invested amount of a JSON answer, or None and the reason it cannot be used."""
    text = normalize(reply)
    if not text:
        return None, _reason("empty")
    stated = _stated_coins(text)
    if stated is None:
        return None, _reason("no_json")
    value = whole_number(stated)
    if value is None:
        return None, _reason("not_whole", got=repr(stated))
    if not 0 <= value <= endowment:
        return None, _reason("out_of_range", endowment=endowment, value=value)
    return value, None


def reformat_coins(reply: str, endowment: int) -> tuple[int | None, str | None]:
    """The amount a reply states in its own words, as the referee rewrites it (:func:`~llm_bots.public_goods.reading.
    read_amount`), or None and the reason it states none it could play (no amount, several, not whole, out of
    range)."""
    reading = read_amount(reply, endowment)
    if reading.amount is not None:
        return reading.amount, None
    if reading.problem == "ambiguous":
        amounts = ", ".join(reading.stated[:-1]) + " or " + reading.stated[-1]
        return None, _reason("ambiguous", amounts=amounts)
    if reading.problem == "not_whole":
        return None, _reason("amount_not_whole", got=reading.stated[0])
    if reading.problem == "out_of_range":
        return None, _reason("amount_out_of_range", endowment=endowment, value=reading.stated[0])
    return None, _reason("no_amount")


def _free_text(observation: Observation) -> bool:
    """Whether the seat is asked to answer in its own words (``answer=free``)."""
    return observation.params.get("answer") == "free"


@register_adapter("deepeval_public_goods")
class PublicGoodsAdapter(TaskAdapter):
    """Answer texts and parser for ``deepeval_public_goods``."""

    task = _TASK

    def values(self, observation: Observation) -> dict[str, Any]:
        return {"endowment": cast(PublicGoodsFields, observation.fields)["endowment"]}

    def format_text(self, observation: Observation) -> str:
        """The answer format: JSON, or the amount and reasons in the seat's own words (``answer=free``)."""
        name = "format_free" if _free_text(observation) else "format"
        return self.prompts.render("player", name, **self.values(observation)).strip()

    def reask_text(self, observation: Observation, error: str) -> str:
        """The re-ask, in the answer format of :meth:`format_text`."""
        name = "reask_free" if _free_text(observation) else "reask"
        return self.prompts.render("player", name, reason=error, **self.values(observation)).strip()

    def parse(self, reply: str, observation: Observation) -> Parsed:
        """A JSON answer; a reply in the seat's own words where the referee re-formats (see the module docs)."""
        endowment = cast(PublicGoodsFields, observation.fields)["endowment"]
        free = _free_text(observation)
        text = normalize(reply)
        if (free or observation.params.get("unusable") == "reformat") and text and _stated_coins(text) is None:
            value, error = reformat_coins(text, endowment)
            if value is not None and value in observation.legal_actions:
                answer = {"reason": (reply or "").strip(), "coins": value, "reformatted": True}
                return Parsed(action=value, text=json.dumps(answer, ensure_ascii=False))
            if free:
                return Parsed(error=error or _reason("not_legal", value=value))
        value, error = parse_coins(reply, endowment)  # a seat asked for JSON is re-asked for JSON
        if error is not None:
            return Parsed(error=error)
        if value not in observation.legal_actions:
            return Parsed(error=_reason("not_legal", value=value))
        return Parsed.move(value, reply)

    def response_schema(self, observation: Observation) -> Mapping[str, Any] | None:
        """The answer's JSON schema; none where the seat answers in its own words (``answer=free``)."""
        if _free_text(observation):
            return None
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
