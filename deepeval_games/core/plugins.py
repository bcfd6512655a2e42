"""Loading packages that add games, bots or adapters through entry points, and names imported on first use."""

from __future__ import annotations

import importlib.abc
import sys
import warnings
from collections.abc import Callable, Mapping
from importlib import import_module, metadata
from importlib.machinery import ModuleSpec
from importlib.util import spec_from_loader
from types import ModuleType
from typing import Any

__all__ = ["MovedModules", "lazy_names", "load_entry_points"]

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


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Keeps old module paths importable after a module moved (``deepeval_games.core.task`` is now
    ``deepeval_games.core.task``): importing an old path gives the module at its new one, with a
    :class:`DeprecationWarning`, so outside task packages written against the old layout keep working."""

    def __init__(self, moved: Mapping[str, str]) -> None:
        self.moved = dict(moved)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        """A spec for an old path; None for any other module."""
        return spec_from_loader(fullname, self) if fullname in self.moved else None

    def create_module(self, spec: ModuleSpec) -> None:
        """The import system's default module (replaced by the real one in :meth:`exec_module`)."""
        return None

    def exec_module(self, module: ModuleType) -> None:
        """Put the module at its new path in the old path's place (the import system returns what is there)."""
        new = self.moved[module.__name__]
        warnings.warn(f"{module.__name__} moved to {new}; import it from there", DeprecationWarning, stacklevel=2)
        sys.modules[module.__name__] = import_module(new)
