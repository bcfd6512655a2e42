"""Plain-text tables of scores, as the CLI prints them."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from analysis.scores import Score
from deepeval_games.errors import DeepEvalError
from deepeval_games.games import game_variant
from deepeval_games.records import MatchRecord

__all__ = [
    "format_scores",
    "load_task_records",
    "numbered_path",
    "save_figure",
    "table_command",
    "task_records",
    "variant_groups",
]


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


def task_records(records: Iterable[MatchRecord], game: str) -> list[MatchRecord]:
    """The complete two-seat records of one task (game short name; every parameter variant pooled)."""
    return [
        r for r in records if r.status == "complete" and r.game.split("(", 1)[0].strip() == game and len(r.seats) == 2
    ]


def load_task_records(run_dir: str | Path, game: str) -> list[MatchRecord]:
    """:func:`task_records` of a run directory; :class:`DeepEvalError` when it holds no results."""
    from deepeval_games.store import DB_NAME, Store

    if not (Path(run_dir) / DB_NAME).exists():
        raise DeepEvalError(f"no results in {run_dir} (expected {DB_NAME})")
    with Store(run_dir) as store:
        return task_records(store.records(), game)


def save_figure(figure: Any, path: str | Path) -> Path:
    """Save a matplotlib figure (the folder is created) and return its path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=120)
    return out


def variant_groups(records: Iterable[MatchRecord]) -> dict[str, list[MatchRecord]]:
    """Records grouped by game variant (:func:`~deepeval_games.games.game_variant`), in sorted order."""
    groups: dict[str, list[MatchRecord]] = {}
    for record in records:
        groups.setdefault(game_variant(record.game), []).append(record)
    return dict(sorted(groups.items()))


def numbered_path(path: str | Path, index: int, count: int) -> Path:
    """``path`` itself for a single figure, else ``name-1.png``, ``name-2.png``, ..."""
    path = Path(path)
    return path if count == 1 else path.with_name(f"{path.stem}-{index + 1}{path.suffix}")


def table_command(
    description: str, game: str, argv: Sequence[str] | None
) -> tuple[argparse.Namespace, dict[str, list[MatchRecord]]]:
    """The shared command line of the per-task table modules: ``RUN_DIR [--plot FILE] [--players ...]``.

    Returns the arguments and the task's records grouped by game variant (one table set per variant).
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("run_dir")
    parser.add_argument("--plot", metavar="FILE", help="save a figure of the tables (PNG, PDF, SVG ...)")
    parser.add_argument("--players", nargs="+", help="row/column order (default: every player, sorted)")
    args = parser.parse_args(argv)
    try:
        records = load_task_records(args.run_dir, game)
    except DeepEvalError as exc:
        parser.error(str(exc))
    if not records:
        print(f"no {game} matches in {args.run_dir}")
    return args, variant_groups(records)
