"""Plain-text tables of scores, as the CLI prints them."""

from __future__ import annotations

from collections.abc import Sequence

from analysis.scores import Score

__all__ = ["format_scores"]


def _fmt(value: float) -> str:
    return f"{value:.2f}"


def format_scores(scores: Sequence[Score], *, title: str = "") -> str:
    """A fixed-width table: player (role), matches, mean, std, 95% CI, min, max."""
    with_role = any(s.role is not None for s in scores)
    header = ["player", *(["role"] if with_role else []), "matches", "mean", "std", "95% CI", "min", "max"]
    rows = [
        [
            s.player,
            *([s.role or ""] if with_role else []),
            str(s.n),
            _fmt(s.mean),
            _fmt(s.std),
            f"[{_fmt(s.ci_low)}, {_fmt(s.ci_high)}]",
            _fmt(s.min),
            _fmt(s.max),
        ]
        for s in scores
    ]
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    numeric_from = 2 if with_role else 1

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(width) if i < numeric_from else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    out = [title] if title else []
    out += [line(header), line(["-" * w for w in widths]), *(line(row) for row in rows)]
    return "\n".join(out)
