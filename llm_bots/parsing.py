"""Reading model replies: normalisation, JSON extraction (the last answer wins), quoting other seats.

Models wrap answers in prose, code fences and full-width characters. :func:`json_objects` finds every
JSON object in a reply after NFKC normalisation; tasks take the *last* well-formed answer. Text that
came from another seat is put inside :func:`quote_player_text` delimiters, which the quoted text can
never close or imitate.
"""

from __future__ import annotations

import json
import math
import re
import sys
import unicodedata
from typing import Any

from deepeval_games.core.quoting import QUOTE_CLOSE, QUOTE_OPEN, quote_player_text, valid_json_value

__all__ = [
    "QUOTE_CLOSE",
    "QUOTE_OPEN",
    "json_objects",
    "looks_like_refusal",
    "normalize",
    "quote_player_text",
    "strip_reasoning",
    "whole_number",
]

_WHOLE = re.compile(r"\s*-?\d+(\.0+)?\s*")
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*")
_REFUSAL = re.compile(
    r"^\s*(i(?:'m| am) sorry|i can(?:no|')t|i (?:won't|will not|must decline)|as an ai\b|i'm unable|i am unable)",
    re.IGNORECASE,
)


_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    """A reply without the reasoning a model wrote before its answer (``<think>...</think>`` blocks and the like).

    An unclosed block runs to the end of the reply (the model never got to its answer). The record keeps the raw
    reply; only the rest is read as a move, so reasoning that mentions moves is never taken for the answer.
    """
    if not text or "<" not in text:  # no tag at all: nothing to strip (the common reply)
        return (text or "").strip()
    return _REASONING.sub("", text).strip()


def normalize(text: str) -> str:
    """NFKC (full-width digits and punctuation become ASCII) with fences removed and ends stripped."""
    text = unicodedata.normalize("NFKC", text or "")
    return (_FENCE.sub("", text) if "```" in text else text).strip()


_DECODER = json.JSONDecoder()
"""One decoder serves every reply (it keeps nothing between calls; ``json.loads`` shares one the same way)."""


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in ``text``, in order of appearance."""
    decoder = _DECODER
    found: list[dict[str, Any]] = []
    index = 0
    while True:
        start = text.find("{", index)
        if start < 0:
            return found
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # malformed, or nested too deeply to decode
            index = start + 1
            continue
        if isinstance(value, dict):
            # "\ud83d" without its partner decodes to a lone surrogate, which nothing downstream can encode
            found.append(valid_json_value(value) if "\\u" in text[start:end] else value)
        index = end


def whole_number(value: Any) -> int | None:
    """A JSON value read as a whole number (``7``, ``7.0``, ``"7"``), else None; never raises.

    A numeric string of more than 18 digits is far out of any range here: it reads as ``±sys.maxsize``
    rather than asking ``int()`` for thousands of digits (which Python refuses).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _WHOLE.fullmatch(value):
        digits = value.strip().split(".", 1)[0]
        if len(digits.lstrip("-")) > 18:
            return -sys.maxsize if digits.startswith("-") else sys.maxsize
        return int(digits)
    return None


def looks_like_refusal(text: str) -> bool:
    """A reply that declines to play (``I'm sorry, I can't ...``)."""
    return bool(_REFUSAL.match(normalize(text)))
