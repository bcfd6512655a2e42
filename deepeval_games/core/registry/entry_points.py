"""Loading packages that add games, bots or adapters through entry points, and names imported on first use."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module, metadata
from typing import Any

__all__ = ["lazy_names", "load_entry_points"]

_loaded: set[str] = set()


def load_entry_points(group: str) -> None:
    """Import every module registered under the entry point ``group``, once per process."""
    if group in _loaded:
        return
    _loaded.add(group)
    for entry in metadata.entry_points(group=group):
        entry.load()


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports each name of ``where`` (name -> module) on first use.

    A package exports heavy or higher-layer names this way, so that importing it imports none of them.
    """

    def __getattr__(name: str) -> Any:
        if name in where:
            return getattr(import_module(where[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
