"""Loading outside packages that add games or bots through entry points."""

from __future__ import annotations

from importlib import metadata

__all__ = ["load_entry_points"]

_loaded: set[str] = set()


def load_entry_points(group: str) -> None:
    """Import every module registered under the entry point ``group``, once per process."""
    if group in _loaded:
        return
    _loaded.add(group)
    for entry in metadata.entry_points(group=group):
        entry.load()
