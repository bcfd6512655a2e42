"""How a number is written in a table, for both analysis folders: the tables (:mod:`analysis.tables`) and the
statistics that print their own (:mod:`analysis.stats`), so neither imports the other for it."""

from __future__ import annotations

import math

__all__ = ["format_number"]


def format_number(value: float, digits: int) -> str:
    """A table entry: ``-`` for NaN, else ``digits`` decimals."""
    return "-" if math.isnan(value) else f"{value:.{digits}f}"
