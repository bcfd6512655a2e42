"""Reading a spec: a TOML spec file (:func:`load_spec`), or whichever of a spec, a spec document or a file's path is
given (:func:`as_spec`)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deepeval_games.app.spec.spec import MAX_NESTING, ExperimentSpec, parse_spec
from deepeval_games.core.errors import SpecError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["as_spec", "load_spec"]


def load_spec(path: str | Path) -> ExperimentSpec:
    """Read and validate a TOML spec file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"spec file not found: {path}") from None
    except OSError as exc:
        raise SpecError(f"cannot read spec file {path}: {exc}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path} is not valid TOML: {exc}") from exc
    except RecursionError:  # the TOML parser recurses per nesting level
        raise SpecError(f"{path}: tables or lists nested too deeply to read (at most {MAX_NESTING})") from None
    return parse_spec(data)


def as_spec(spec: ExperimentSpec | Mapping[str, Any] | str | Path) -> ExperimentSpec:
    """An :class:`ExperimentSpec` from a spec, a spec document (a mapping) or the path of a TOML spec file.

    Raises:
        SpecError: the document or file is not a valid spec.
    """
    if isinstance(spec, ExperimentSpec):
        return spec
    if isinstance(spec, Mapping):
        return parse_spec(spec)
    if isinstance(spec, (str, Path)):
        return load_spec(spec)
    raise SpecError(f"a spec is an ExperimentSpec, a mapping or the path of a TOML file, got {type(spec).__name__}")
