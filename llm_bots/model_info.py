"""What litellm knows about a model string, looked up once per model and remembered across runs.

Facts needed before any call: which provider litellm routes a model string to (an unknown string is a spec
error, :func:`provider_error`), whether the provider can constrain replies to a JSON schema
(:func:`supports_json_schema`) and the model's context window (:func:`context_window`). All come from litellm's
tables, and importing litellm takes seconds. So each fact is computed once per model string in a process, and
written to ``model-info.json`` in the user cache folder (``$XDG_CACHE_HOME/deepeval-games``), keyed by the installed
litellm (its location and the size and time of its files): a later run, for instance a rerun served entirely from the
model-call cache, reads the facts there and never imports litellm. Installing another litellm starts a new table. A
file that cannot be read or written is ignored (the facts are then computed in each process).
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import json
import os
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["INFO_NAME", "context_window", "litellm", "provider", "provider_error", "supports_json_schema"]

INFO_NAME = "model-info.json"
"""The file of remembered facts, in the user cache folder."""

_lock = threading.Lock()
_module: ModuleType | None = None
_memo: dict[str, dict[str, Any]] | None = None
_stamp: str | None = None


def litellm() -> ModuleType:
    """The litellm module, imported on first use with its price table read from disk (never fetched).

    After the first import the objects alive then (litellm's tables: hundreds of thousands of objects that live as
    long as the process) are moved out of the cyclic garbage collector's reach (``gc.freeze``): otherwise every full
    collection, which a run's allocations trigger again and again, walks all of them (tenths of a second each).
    """
    global _module
    known = _module
    if known is not None:  # every model call asks: the import machinery and the setting only the first time
        return known
    first = "litellm" not in sys.modules
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before the import: no network at import
    import litellm as module

    if first:
        gc.freeze()
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


_COMPUTE = {
    "provider_error": _provider_error,
    "json_schema": _json_schema,
    "provider": _provider,
    "context_window": _context_window,
}


def provider_error(model: str) -> str | None:
    """Why litellm cannot route ``model`` (the first line of its error), or None when it can."""
    value = _fact(model, "provider_error")
    return str(value) if value is not None else None


def context_window(model: str) -> int | None:
    """The model's context window in tokens as litellm's model info gives it (``max_input_tokens``, else
    ``max_tokens``); None when litellm does not know the model."""
    value = _fact(model, "context_window")
    return int(value) if value is not None else None


def provider(model: str) -> str | None:
    """The litellm provider that serves ``model`` (e.g. ``openai`` for ``openai/...`` and OpenAI's own models), or
    None when litellm cannot route it."""
    value = _fact(model, "provider")
    return str(value) if value is not None else None


def supports_json_schema(model: str) -> bool:
    """Whether litellm's table says the provider can constrain replies to a JSON schema; False when unknown."""
    return bool(_fact(model, "json_schema"))
