"""Model ids: whether the model a response reports is the configured one (`model_id_matches`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

__all__ = ["model_id_matches"]


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
