"""Reading a model's response: the completion of a 200 response (`parse_response`, or `MalformedResponse` when it has
no usable choice), its cost as litellm priced it, its usage block and token counts, each field read without
pydantic's slow path (`read_field`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from deepeval_games.core.bot import CallAttempt
from llm_bots.model_config import ModelConfig
from llm_bots.model_info import litellm as _litellm
from llm_bots.model_info import model_id_matches
from llm_bots.transport.errors import ModelMismatchError, Outcome
from llm_bots.transport.results import Completion
from llm_bots.transport.unencodable import valid_reply

__all__ = ["MalformedResponse", "parse_response", "read_field"]

_ANSWERED = CallAttempt(status=Outcome.OK.value)
_REFUSED = CallAttempt(status=Outcome.REFUSAL.value)
"""The last attempt of a call that got a reply (frozen: one object serves every call)."""

_MISSING: Any = object()

_ABSENT: dict[type, dict[str, bool] | None] = {}
"""Per pydantic model class, per name: True when the class itself has no attribute ``name`` (no property, no class
default); None for a class that is no pydantic model (``isinstance`` against ``BaseModel``, an ABC, costs more)."""


def read_field(obj: Any, name: str) -> Any:
    """``getattr(obj, name, None)``, without a pydantic model's slow path for an unset name.

    litellm's responses are pydantic models that drop their unset optional fields (a message without ``refusal``
    or ``reasoning_content``): reading one raises AttributeError inside pydantic's ``__getattr__``, which is slow. A
    set field is in the instance's ``__dict__``, an extra one in ``__pydantic_extra__``, a private one in
    ``__pydantic_private__``; a name in none of them that the class does not define either is absent (None).
    Anything else (properties, class defaults, other objects) is read with ``getattr``.
    """
    values = getattr(obj, "__dict__", None)
    if values is not None and name in values:
        return values[name]
    cls = type(obj)
    absent = _ABSENT.get(cls, _MISSING)
    if absent is _MISSING:
        absent = _ABSENT[cls] = {} if issubclass(cls, BaseModel) else None
    if absent is not None:  # a pydantic model
        store = obj.__pydantic_private__ if name.startswith("_") else obj.__pydantic_extra__
        if store and name in store:
            return store[name]
        gone = absent.get(name)
        if gone is None:
            gone = absent[name] = not hasattr(cls, name)
        if gone:
            return None
    return getattr(obj, name, None)


def _count(value: Any) -> int:
    """A token count a usage block reported; 0 when absent or not a number."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def _reasoning_tokens(usage: Mapping[str, Any]) -> int:
    """Reasoning tokens of a usage block (``completion_tokens_details.reasoning_tokens``); 0 when not reported."""
    details = usage.get("completion_tokens_details")
    return _count(details.get("reasoning_tokens") if isinstance(details, Mapping) else None)


def _cached_tokens(usage: Mapping[str, Any]) -> int:
    """Prompt tokens read from the provider's cache: ``prompt_tokens_details.cached_tokens`` (OpenAI's, and litellm's
    for every provider it maps), else Anthropic's ``cache_read_input_tokens``; 0 when not reported."""
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens") if isinstance(details, Mapping) else None)
    return cached or _count(usage.get("cache_read_input_tokens"))


def _cost_usd(response: Any) -> float:
    """The call's cost as litellm priced it while answering (``response_cost``: None for a model it has no price
    for, which costs 0.0); priced again only when a response does not carry it."""
    hidden = read_field(response, "_hidden_params")
    if (type(hidden) is dict or isinstance(hidden, Mapping)) and "response_cost" in hidden:
        cost = hidden["response_cost"]
        if cost is None:
            return 0.0
    else:
        try:
            cost = _litellm().completion_cost(completion_response=response)
        except Exception:
            return 0.0
    try:
        cost = float(cost)
    except (TypeError, ValueError):
        return 0.0
    return cost if cost >= 0.0 and cost == cost else 0.0


def _usage_dict(response: Any) -> dict[str, Any]:
    usage = read_field(response, "usage")
    if usage is None:
        return {}
    if hasattr(usage, "model_dump"):
        try:
            if isinstance(usage, BaseModel):
                dumped = _dump(usage)
                if dumped is not None:
                    return dumped
            return dict(usage.model_dump())
        except Exception:
            pass
    return dict(usage) if isinstance(usage, Mapping) else {}


_SCALARS = frozenset({int, float, str, bool, type(None)})
_DUMPS_AS_FIELDS: dict[type, bool] = {}
"""Per pydantic class: whether ``model_dump()`` of its first instance read as :func:`_dump` does gave the same
dict, in the same order (no excluded field, serializer or alias of its own; checked once a class)."""


def _dump(model: BaseModel) -> dict[str, Any] | None:
    """``model.model_dump()`` read from the instance's fields and extras (pydantic's serializer costs more than
    the rest of reading a reply), nested models alike; None when a value is not plain or the class does not dump
    as its fields (then the caller asks ``model_dump``)."""
    cls = type(model)
    same = _DUMPS_AS_FIELDS.get(cls)
    if same is False:
        return None
    out: dict[str, Any] = {}
    extra = model.__pydantic_extra__
    for values in (model.__dict__, extra) if extra else (model.__dict__,):
        for name, value in values.items():
            if type(value) in _SCALARS:
                out[name] = value
            elif isinstance(value, BaseModel):
                nested = _dump(value)
                if nested is None:
                    return None
                out[name] = nested
            else:
                return None
    if same is None:
        dumped = model.model_dump()
        same = _DUMPS_AS_FIELDS[cls] = out == dumped and list(out) == list(dumped)
        if not same:
            return None
    return out


class MalformedResponse(Exception):
    """A 200 response without a usable choice: handled as an infrastructure fault."""


def parse_response(
    config: ModelConfig,
    original: ModelConfig,
    response: Any,
    latency: float,
    attempts: int,
    elapsed: float,
    log: Sequence[CallAttempt] = (),
) -> Completion:
    """The completion of a 200 response; ``log`` holds the attempts before this one (this one is added)."""
    # each field is read by read_field: from the object's own dict where it is set, without pydantic's slow path
    choices = read_field(response, "choices")
    if not choices:
        raise MalformedResponse(f"model {original.model!r}: response without choices")
    choice = choices[0]
    message = read_field(choice, "message")
    finish_reason = read_field(choice, "finish_reason")
    text = read_field(message, "content") or ""
    refusal_text = read_field(message, "refusal")
    reported = str(read_field(response, "model") or "")
    if not model_id_matches(config.model, reported, original.accept_model_ids):
        raise ModelMismatchError(
            f"model {original.model!r}: the response reports model {reported!r}, which is not the configured "
            f"model (nor a dated/tagged version of it). Refusing a silent fallback; if this is expected, add "
            f"{reported!r} to accept_model_ids of this player.",
            model=original.model,
            reported_model=reported,
        )
    usage = _usage_dict(response)
    refused = finish_reason == "content_filter" or bool(refusal_text)
    fingerprint = read_field(response, "system_fingerprint")
    reasoning = read_field(message, "reasoning_content")
    outcome, attempt = (Outcome.REFUSAL, _REFUSED) if refused else (Outcome.OK, _ANSWERED)
    text = text or (refusal_text or "")
    reasoning = reasoning if isinstance(reasoning, str) else ""
    if not (text.isascii() and reasoning.isascii()) or "\\u" in text:  # a lone surrogate, or its JSON escape
        text, reasoning, attempt = valid_reply(text, reasoning, attempt)
    return Completion(
        text=text,
        model=reported or config.model,
        finish_reason=finish_reason,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cost_usd=_cost_usd(response),
        latency_s=latency,
        attempts=attempts,
        outcome=outcome,
        usage=usage,
        elapsed_s=elapsed,
        requested_model=config.model,
        attempt_log=(*log, attempt),
        system_fingerprint=str(fingerprint) if fingerprint else None,
        reasoning_tokens=_reasoning_tokens(usage),
        reasoning=reasoning,
        cut_chars=0,
        cached_tokens=_cached_tokens(usage),
        cache_write_tokens=_count(usage.get("cache_creation_input_tokens")),
    )
