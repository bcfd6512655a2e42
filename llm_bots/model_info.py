"""Everything the code asks about a model string, answered in one place: the model facade.

Whether a model is local (:func:`is_local`, :func:`local_name`: a ``local/...`` string is served by a llama.cpp server
started for the run) or hosted, and, for a hosted one, what litellm knows of it. No other module tests the local
prefix or looks these facts up in litellm (only the transport, which makes the calls, imports litellm too, through
:func:`litellm`).

Facts needed before any call: which provider litellm routes a model string to (an unknown string is a spec
error, :func:`provider_error`), whether the provider can constrain replies to a JSON schema
(:func:`supports_json_schema`), the model's context window (:func:`context_window`: the one lookup the bot's
context policy, the call path and the dry run's estimate share) and its price per token
(:func:`list_price`; :func:`price` with what a model's config gives, :func:`needs_price` for a budget, and
:func:`closest_priced` for a name litellm cannot price). All come from litellm's tables, and importing litellm
takes seconds. So each fact is computed once per model string in a process, and written to ``model-info.json`` in
the user cache folder (``$XDG_CACHE_HOME/deepeval-games``), keyed by the installed litellm (its location and the size
and time of its files): a later run, for instance a rerun served entirely from the model-call cache, reads the facts
there and never imports litellm. Installing another litellm starts a new table. A file that cannot be read or
written is ignored (the facts are then computed in each process). Which API keys a model lacks
(:func:`missing_api_keys`) is read from the environment each time it is asked, since the environment may change; a
prompt's size in tokens (:func:`token_count`) is counted by litellm's tokenizers. Whether the model a reply names
is the configured one (:func:`model_id_matches`) is read from the two strings alone, up to prefixes, tags and dates.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib.util
import json
import os
import re
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from llm_bots import gc_policy

__all__ = [
    "INFO_NAME",
    "LOCAL_N_CTX",
    "LOCAL_PREFIX",
    "cache_read_price",
    "closest_priced",
    "context_window",
    "cost",
    "is_local",
    "list_price",
    "litellm",
    "local_name",
    "missing_api_keys",
    "model_id_matches",
    "needs_price",
    "price",
    "provider",
    "provider_error",
    "supports_json_schema",
    "token_count",
]

INFO_NAME = "model-info.json"
"""The file of remembered facts, in the user cache folder."""

LOCAL_PREFIX = "local/"
"""Model strings starting with this prefix are served by a llama.cpp server started for the run."""

LOCAL_N_CTX = 4096
"""The context window (tokens) the llama.cpp server of a local model is started with."""

_lock = threading.Lock()
_module: ModuleType | None = None
_memo: dict[str, dict[str, Any]] | None = None
_stamp: str | None = None


def litellm() -> ModuleType:
    """The litellm module, imported on first use with its price table read from disk (never fetched).

    After the first import the objects alive then (litellm's tables: hundreds of thousands of objects that live as
    long as the process) are moved out of the cyclic garbage collector's reach
    (:func:`llm_bots.gc_policy.freeze_loaded`).
    """
    global _module
    known = _module
    if known is not None:  # every model call asks: the import machinery and the setting only the first time
        return known
    first = "litellm" not in sys.modules
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before the import: no network at import
    import litellm as module

    if first:
        gc_policy.freeze_loaded()
    module.suppress_debug_info = True
    _module = module
    return module


def _litellm_stamp() -> str:
    """Names the installed litellm without importing it: its folder, and the size and time of its model table."""
    global _stamp
    if _stamp is None:
        spec = importlib.util.find_spec("litellm")
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        parts = [str(origin)]
        if origin is not None:
            for name in ("__init__.py", "model_prices_and_context_window_backup.json"):
                with contextlib.suppress(OSError):
                    stat = (origin.parent / name).stat()
                    parts.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}")
        _stamp = "|".join(parts)
    return _stamp


def _path() -> Path:
    from deepeval_games.infra.files import cache_dir

    return cache_dir() / INFO_NAME


def _load() -> dict[str, dict[str, Any]]:
    global _memo
    if _memo is None:
        _memo = {}
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            data = json.loads(_path().read_text(encoding="utf-8"))
            if data.get("litellm") == _litellm_stamp() and isinstance(data.get("models"), dict):
                _memo = data["models"]
    return _memo


def _save(memo: dict[str, dict[str, Any]]) -> None:
    path = _path()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".model-info-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"litellm": _litellm_stamp(), "models": memo}, handle, sort_keys=True)
        os.replace(tmp, path)


def _fact(model: str, name: str) -> Any:
    """The remembered fact ``name`` of ``model``, computed (and written down) when not known yet."""
    with _lock:
        memo = _load()
        entry = memo.get(model, {})
        if name in entry:
            return entry[name]
        value = _COMPUTE[name](model)
        memo[model] = {**entry, name: value}
        _save(memo)
        return value


def _provider_error(model: str) -> str | None:
    try:
        litellm().get_llm_provider(model)
    except Exception as exc:
        return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    return None


def _json_schema(model: str) -> bool:
    try:
        return bool(litellm().supports_response_schema(model=model))
    except Exception:
        return False


def _provider(model: str) -> str | None:
    try:
        return str(litellm().get_llm_provider(model)[1])
    except Exception:
        return None


def _context_window(model: str) -> int | None:
    try:
        info = litellm().get_model_info(model)
        limit = info.get("max_input_tokens") or info.get("max_tokens")
    except Exception:  # litellm does not know the model: no window, no check
        return None
    return int(limit) if isinstance(limit, int) and limit > 0 else None


def _priced(entry: Any) -> tuple[float, float] | None:
    """(input, output) USD per token of a price-table entry; None when it lists neither above 0 (litellm lists some
    models it cannot price at 0)."""
    if not isinstance(entry, dict) and not hasattr(entry, "get"):
        return None
    try:
        prices = float(entry.get("input_cost_per_token") or 0.0), float(entry.get("output_cost_per_token") or 0.0)
    except (TypeError, ValueError):
        return None
    return prices if any(p > 0.0 for p in prices) and all(p >= 0.0 and p == p for p in prices) else None


def _list_price(model: str) -> list[float] | None:
    try:
        info = litellm().get_model_info(model)
    except Exception:  # litellm does not know the model
        return None
    prices = _priced(info)
    return list(prices) if prices is not None else None


def _cache_read_price(model: str) -> float | None:
    try:
        value = litellm().get_model_info(model).get("cache_read_input_token_cost")
    except Exception:
        return None
    return float(value) if isinstance(value, (int, float)) and value >= 0 else None


_COMPUTE = {
    "provider_error": _provider_error,
    "json_schema": _json_schema,
    "provider": _provider,
    "context_window": _context_window,
    "list_price": _list_price,
    "cache_read_price": _cache_read_price,
}


def provider_error(model: str) -> str | None:
    """Why litellm cannot route ``model`` (the first line of its error), or None when it can (a local model is
    routed to its own server: None)."""
    if is_local(model):
        return None
    value = _fact(model, "provider_error")
    return str(value) if value is not None else None


def is_local(model: str) -> bool:
    """Whether ``model`` is a local model (``local/smollm2``, ``local/<path>.gguf``), served by a llama.cpp server
    started for the run; every other model string is hosted (routed by litellm)."""
    return model.startswith(LOCAL_PREFIX)


def local_name(model: str) -> str | None:
    """What follows the local prefix of a local model (``smollm2`` or a path to a ``.gguf`` file; empty when nothing
    does); None for a hosted model."""
    return model[len(LOCAL_PREFIX) :] if model.startswith(LOCAL_PREFIX) else None


def context_window(model: str, given: int | None = None) -> int | None:
    """The model's context window in tokens: ``given`` (the player's ``context_tokens``) where set, else the local
    server's (:data:`LOCAL_N_CTX`) for a local model, else litellm's model info (``max_input_tokens``, else
    ``max_tokens``, remembered across runs); None when litellm does not know the model.

    The one lookup of a context window: the bot's context policy, the call path and the dry run's estimate ask it.
    """
    if given is not None:
        return given
    if is_local(model):
        return LOCAL_N_CTX
    value = _fact(model, "context_window")
    return int(value) if value is not None else None


def provider(model: str) -> str | None:
    """The litellm provider that serves ``model`` (e.g. ``openai`` for ``openai/...`` and OpenAI's own models), or
    None when litellm cannot route it."""
    value = _fact(model, "provider")
    return str(value) if value is not None else None


def supports_json_schema(model: str) -> bool:
    """Whether the provider can constrain replies to a JSON schema (``response_format``): a local model's llama.cpp
    server can (as a grammar); else as litellm's table says. Never raises: False when unknown."""
    if is_local(model):
        return True
    return bool(_fact(model, "json_schema"))


def token_count(model: str, messages: Sequence[Mapping[str, str]], per_message: int = 0) -> int:
    """A hosted model's prompt size in tokens, by litellm's token counter (the model's own tokenizer where litellm
    has it; else its default, cl100k, over the text, plus ``per_message`` tokens a message for the framing)."""
    try:
        return int(litellm().token_counter(model=model, messages=list(messages)))
    except Exception:  # a model litellm has no tokenizer for
        text = "".join(m["content"] for m in messages)
        return int(litellm().token_counter(text=text)) + per_message * len(messages)


def missing_api_keys(model: str, api_base: str | None = None) -> list[str]:
    """The environment variables of API keys or tokens that litellm says ``model`` needs and the environment lacks
    (read now, never memoized: the environment may change); empty when litellm cannot tell."""
    try:
        missing = litellm().validate_environment(model=model, api_base=api_base).get("missing_keys", [])
    except Exception:  # litellm cannot tell: the first call will say
        return []
    return [str(name) for name in missing if "KEY" in str(name) or "TOKEN" in str(name)]


def list_price(model: str) -> tuple[float, float] | None:
    """litellm's list price of ``model``: (USD per prompt token, USD per generated token); None when its price table
    has none (an unknown or mistyped name, a self-hosted model, or one it lists at 0)."""
    value = _fact(model, "list_price")
    return (float(value[0]), float(value[1])) if value is not None else None


def price(model: str, given: tuple[float, float] | None = None) -> tuple[float, float] | None:
    """What a call of ``model`` costs per token (USD in, USD out): the price its config gives (``given``, from
    ``input_cost_per_token`` and ``output_cost_per_token``) where it gives one, nothing for a local model, else
    litellm's :func:`list_price`; None when none is known."""
    if given is not None:
        return given
    if is_local(model):
        return (0.0, 0.0)
    return list_price(model)


def cost(
    model: str, prompt_tokens: int, completion_tokens: int, given: tuple[float, float] | None = None
) -> float | None:
    """What ``prompt_tokens`` in and ``completion_tokens`` out of ``model`` cost in USD: at the ``given`` price per
    token where the model's config gives one, else as litellm prices them from its table (its tiers included); None
    for a model with no list price (a local one included: it has no price, it is not priced at 0 here)."""
    if given is not None:
        return prompt_tokens * given[0] + completion_tokens * given[1]
    if list_price(model) is None:
        return None
    try:
        prompt, completion = litellm().cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:
        return None
    return float(prompt) + float(completion)


def cache_read_price(model: str) -> float | None:
    """litellm's price of a prompt token read from the provider's cache (``cache_read_input_token_cost``, USD);
    None when its table lists none."""
    value = _fact(model, "cache_read_price")
    return float(value) if value is not None else None


def needs_price(model: str, given: tuple[float, float] | None = None) -> bool:
    """Whether a budget cannot count the calls of ``model``: no price given, not local, and none in litellm's table
    (each of its calls would count 0.0 and the budget would never stop them)."""
    return price(model, given) is None


def closest_priced(model: str, n: int = 3) -> list[str]:
    """Up to ``n`` names in litellm's price table closest to ``model`` that have a price, those of the same provider
    first, spelled as ``model`` is (``openai/gpt-4o-mini`` for ``openai/gpt-4o-mni``); [] when none is close."""
    table = litellm().model_cost
    prefix, _, bare = model.rpartition("/")
    wanted = provider(model) if prefix else None
    same: dict[str, str] = {}  # the bare name in the table -> how it is suggested
    other: dict[str, str] = {}
    for key, entry in table.items():
        if not isinstance(key, str) or _priced(entry) is None or entry.get("mode", "chat") not in _CHAT_MODES:
            continue
        owner = entry.get("litellm_provider")
        if wanted is not None and owner == wanted:
            name = key.split("/", 1)[1] if key.startswith(f"{owner}/") else key
            same.setdefault(name, f"{prefix}/{name}")
        else:
            other.setdefault(key, key)
    found = [same[name] for name in difflib.get_close_matches(bare, list(same), n=n)]
    if len(found) < n:
        extra = difflib.get_close_matches(model, list(other), n=n - len(found))
        found += [other[key] for key in extra if other[key] not in found]
    return found


_CHAT_MODES = ("chat", "completion", "responses")
"""The price-table modes of models that answer prompts (not embeddings, images or speech)."""


# -- whether a reply names the configured model ---------------------------------------------------------------

_DATE_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{3,4})$")


def _split_model_id(model_id: str) -> tuple[str, str | None]:
    """Lower-case, drop provider prefixes (`openai/`, `ollama/`...), split off an Ollama-style `:tag`."""
    name = model_id.strip().lower().rsplit("/", 1)[-1]
    if ":" in name:
        name, tag = name.split(":", 1)
        return name, (tag or None)
    return name, None


def _undated(name: str) -> str:
    name = name.removesuffix("-latest")
    return _DATE_SUFFIX.sub("", name)


def model_id_matches(configured: str, reported: str, accept: Sequence[str] = ()) -> bool:
    """True if `reported` is the configured model or one of `accept`, up to prefixes, tags and dates (see
    :func:`_model_id_matches`); remembered per (configured, reported, accept), as every reply asks again."""
    return _model_id_matches(configured, reported, tuple(accept))


@functools.lru_cache(maxsize=1024)
def _model_id_matches(configured: str, reported: str, accept: tuple[str, ...] = ()) -> bool:
    """True if `reported` is the configured model or one of `accept`, up to prefixes, tags and dates.

    Tolerated: provider prefixes (`openai/foo` vs `foo`), an Ollama `:latest` tag or a tag on one side only,
    case, and a dated/numbered version of an undated configured id (`gpt-4o` vs `gpt-4o-2024-08-06`,
    `claude-3-5-sonnet-latest` vs `claude-3-5-sonnet-20241022`). Not tolerated: another model (`gpt-4o` vs
    `gpt-4o-mini`), another explicit tag (`llama3:70b` vs `llama3:8b`), another date when the config pins one.
    An empty reported id cannot be checked and matches.
    """
    if not reported or not reported.strip():
        return True
    rep_name, rep_tag = _split_model_id(reported)
    for candidate in (configured, *accept):
        cfg_name, cfg_tag = _split_model_id(candidate)
        if cfg_tag and rep_tag and cfg_tag != rep_tag and "latest" not in (cfg_tag, rep_tag):
            continue
        if rep_name == cfg_name:
            return True
        configured_is_undated = _undated(cfg_name) == cfg_name.removesuffix("-latest")
        if configured_is_undated and _undated(rep_name) == _undated(cfg_name):
            return True
    return False
