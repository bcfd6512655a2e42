"""A JSON schema sent to a local model, bounded so that the reply it constrains always ends within its token cap.

llama.cpp's server turns a request's JSON schema into a grammar and samples only what the grammar allows, so a local
model's reply is always in the schema's shape: except when it is cut off at ``max_tokens`` first. A small model
sometimes loops inside a free-text field (SmolLM2-135M in the Public Goods Game's ``reason``: "the the the ...") until
the cap, and the turn ends with a cut-off reply that is not JSON at all. :func:`bounded_schema` gives every free
string of the schema a ``maxLength`` so that the whole object fits the cap: the grammar then closes the string where
the cap would have cut it, and the model still chooses every other field (the move) itself.

The bound only shortens a string that could not have fitted anyway: a token of ASCII text carries at least one
character, so a reply whose strings are within their bounds never needs more than ``max_tokens`` tokens, while a
reply whose string reaches ``(max_tokens - reserve) / n`` characters is near the cap (at four characters a token, a
quarter of it). It is applied to local models only (a remote provider may reject ``maxLength`` in a strict schema),
before the call's cache key is made: the key names the request that was sent.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["MIN_STRING_CHARS", "RESERVE_TOKENS", "RESERVE_TOKENS_PER_PROPERTY", "bounded_schema"]

RESERVE_TOKENS = 16
"""Tokens of a reply's cap kept for the object's braces and whatever follows it (an end-of-text token)."""
RESERVE_TOKENS_PER_PROPERTY = 8
"""Tokens kept for each property: its quoted name, the colon and comma, and a number or word value."""
MIN_STRING_CHARS = 16
"""Below this many characters a string bound would leave no room to say anything: the schema is sent unbounded."""

_STRING_KEYWORDS = ("maxLength", "enum", "const", "pattern", "format")
"""A string schema with any of these is already bounded (or shaped) by its author and is left as it is."""


def _walk(node: Any, strings: list[dict[str, Any]], reserve: list[int]) -> None:
    """Collect the free string schemas under ``node``, adding to ``reserve`` the tokens its other parts may take:
    :data:`RESERVE_TOKENS_PER_PROPERTY` a property, and the longest value of an ``enum`` (a move's name), a
    character a token."""
    if isinstance(node, list):
        for item in node:
            _walk(item, strings, reserve)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "string" and not any(key in node for key in _STRING_KEYWORDS):
        strings.append(node)
    if isinstance(node.get("enum"), list):
        reserve[0] += max((len(str(value)) for value in node["enum"]), default=0)
    props = node.get("properties")
    if isinstance(props, dict):
        reserve[0] += RESERVE_TOKENS_PER_PROPERTY * len(props)
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            _walk(list(value.values()), strings, reserve)
        elif key in ("items", "anyOf", "oneOf", "allOf", "prefixItems"):
            _walk(value, strings, reserve)


def bounded_schema(response_format: Mapping[str, Any] | None, max_tokens: int | None) -> Mapping[str, Any] | None:
    """``response_format`` (an OpenAI-style ``{"type": "json_schema", "json_schema": {"schema": ...}}``) with a
    ``maxLength`` on each free string, sharing ``max_tokens`` less the object's reserve (:data:`RESERVE_TOKENS`,
    :data:`RESERVE_TOKENS_PER_PROPERTY` a property, the longest name of each ``enum``) equally, one character a
    token. Returned unchanged (the same object) when there is no cap, no schema, no free string, or too little room
    for one (:data:`MIN_STRING_CHARS`); never modifies its argument."""
    if response_format is None or not max_tokens:
        return response_format
    spec = response_format.get("json_schema")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("schema"), Mapping):
        return response_format
    bounded = copy.deepcopy(dict(response_format))
    strings: list[dict[str, Any]] = []
    reserve = [RESERVE_TOKENS]
    _walk(bounded["json_schema"]["schema"], strings, reserve)
    if not strings:
        return response_format
    room = max_tokens - reserve[0]
    share = room // len(strings)
    if share < MIN_STRING_CHARS:
        return response_format
    for node in strings:
        node["maxLength"] = share
    return bounded
