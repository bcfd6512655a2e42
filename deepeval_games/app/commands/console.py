"""What the commands write to standard error: lines with their control characters escaped."""

from __future__ import annotations

import sys

from deepeval_games.core.quoting import visible

__all__ = ["print_error"]


def print_error(text: str) -> None:
    """A line on standard error, its control characters escaped (it may quote a name or a reply)."""
    print(visible(text), file=sys.stderr)
