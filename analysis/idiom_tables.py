"""The paper's Tables 1 and 2 for Idiom Solitaire: win rate and successful hits, early vs late player.

Reads match records only. Rows are the player that moved first (early), columns the player that moved
second (late). Each cell holds the early player's score s_E and the late player's score s_L over the
matches of that ordered pair (every start idiom and repeat pooled):

* Table 1, win rate: the fraction of those matches each side won (draws count for neither side, so
  s_E + s_L <= 1);
* Table 2, successful hits: the mean number of valid idioms each side added to the chain per match
  (``record.metrics["hits"]``).

As in the paper, the last column is each row's mean of s_E over its cells (the player's mean score when it
moves first) and the last row each column's mean of s_L (its mean score when it moves second): unweighted
means of cell values. Self-play cells (same player both seats), if any, are shown but left out of the means.

Print both tables for a run directory, and save the figure::

    python -m analysis.idiom_tables runs/idiom-demo --plot runs/idiom-demo/idiom_tables.png
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis.tables import numbered_path, save_figure, table_command, task_records
from deepeval_games.records import MatchRecord

__all__ = [
    "GAME",
    "Cell",
    "EarlyLateTable",
    "early_late_table",
    "format_early_late_table",
    "hit_table",
    "idiom_records",
    "plot_early_late_tables",
    "win_rate_table",
]

GAME = "deepeval_idiom_solitaire"
"""Short name of the game whose records these tables read."""

SeatScore = Callable[[MatchRecord, int], float]
"""Score of the seat with the given index in one record."""


@dataclass(frozen=True)
class Cell:
    """One ordered pair (early player, late player)."""

    early: float
    """s_E: the early player's mean score over the pair's matches."""
    late: float
    """s_L: the late player's mean score over the pair's matches."""
    matches: int


@dataclass(frozen=True)
class EarlyLateTable:
    """A table shaped like the paper's Tables 1 and 2."""

    metric: str
    """What the scores are (``win rate``, ``successful hits``)."""
    players: tuple[str, ...]
    """Row and column order."""
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    """Keyed by (early player, late player)."""

    def cell(self, early: str, late: str) -> Cell | None:
        """The cell of an ordered pair, or ``None`` when no record has it."""
        return self.cells.get((early, late))

    def early_mean(self, player: str) -> float:
        """Mean of s_E over the row of ``player`` (self-play left out); NaN when the row is empty."""
        values = [c.early for (e, late), c in self.cells.items() if e == player and late != player]
        return sum(values) / len(values) if values else math.nan

    def late_mean(self, player: str) -> float:
        """Mean of s_L over the column of ``player`` (self-play left out); NaN when the column is empty."""
        values = [c.late for (early, lt), c in self.cells.items() if lt == player and early != player]
        return sum(values) / len(values) if values else math.nan


def idiom_records(records: Iterable[MatchRecord], game: str = GAME) -> list[MatchRecord]:
    """The complete two-seat records of ``game`` (any parameters: every start idiom pooled)."""
    return task_records(records, game)


def _early_late_seats(record: MatchRecord) -> tuple[int, int]:
    roles = list(record.roles)
    if "early" in roles and "late" in roles:
        return roles.index("early"), roles.index("late")
    return 0, 1


def early_late_table(
    records: Iterable[MatchRecord], score: SeatScore, metric: str, players: Sequence[str] | None = None
) -> EarlyLateTable:
    """Pool ``score`` per (early, late) pair over the idiom solitaire records.

    ``players`` fixes the row/column order (and drops other players); by default every player seen, sorted.
    """
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for record in idiom_records(records):
        e_seat, l_seat = _early_late_seats(record)
        key = (record.seats[e_seat], record.seats[l_seat])
        acc = sums[key]
        acc[0] += score(record, e_seat)
        acc[1] += score(record, l_seat)
        acc[2] += 1
    seen = sorted({name for pair in sums for name in pair})
    order = tuple(players) if players is not None else tuple(seen)
    cells = {
        key: Cell(early=acc[0] / acc[2], late=acc[1] / acc[2], matches=int(acc[2]))
        for key, acc in sums.items()
        if key[0] in order and key[1] in order
    }
    return EarlyLateTable(metric=metric, players=order, cells=cells)


def _won(record: MatchRecord, seat: int) -> float:
    return 1.0 if record.returns[seat] > 0 else 0.0


def _hits(record: MatchRecord, seat: int) -> float:
    hits = record.metrics.get("hits")
    if hits is None:
        raise ValueError(f"record {record.match_id} has no 'hits' metric")
    return float(hits[seat])


def win_rate_table(records: Iterable[MatchRecord], players: Sequence[str] | None = None) -> EarlyLateTable:
    """Table 1: the fraction of matches each side of a pair won."""
    return early_late_table(records, _won, "win rate", players)


def hit_table(records: Iterable[MatchRecord], players: Sequence[str] | None = None) -> EarlyLateTable:
    """Table 2: the mean number of successful hits each side of a pair made per match."""
    return early_late_table(records, _hits, "successful hits", players)


def _fmt(value: float, digits: int) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def format_early_late_table(table: EarlyLateTable, *, title: str = "", digits: int = 2) -> str:
    """Fixed-width text: a row per early player, a pair of columns (s_E, s_L) per late player, and the means."""
    players = table.players
    num_width = max(digits + 3, 4)
    name_width = max([len("early \\ late"), len("mean s_L"), *(len(p) for p in players)])
    pair_width = max([2 * num_width + 1, *(len(p) for p in players)])

    def pair(early: str, late: str) -> str:
        c = table.cell(early, late)
        if c is None:
            text = "-".rjust(num_width) + " " + "-".rjust(num_width)
        else:
            text = _fmt(c.early, digits).rjust(num_width) + " " + _fmt(c.late, digits).rjust(num_width)
        return text.rjust(pair_width)

    header = "early \\ late".ljust(name_width) + "".join("  " + p.rjust(pair_width) for p in players)
    header += "  " + "mean s_E"
    sub = " " * name_width + "".join(
        "  " + ("s_E".rjust(num_width) + " " + "s_L".rjust(num_width)).rjust(pair_width) for _ in players
    )
    lines = [title] if title else []
    lines += [header.rstrip(), sub.rstrip()]
    for early in players:
        row = early.ljust(name_width) + "".join("  " + pair(early, late) for late in players)
        lines.append(row + "  " + _fmt(table.early_mean(early), digits).rjust(len("mean s_E")))
    means = "mean s_L".ljust(name_width) + "".join(
        "  " + _fmt(table.late_mean(p), digits).rjust(pair_width) for p in players
    )
    lines.append(means)
    counts = sorted({c.matches for c in table.cells.values()})
    if counts:
        span = str(counts[0]) if len(counts) == 1 else f"{counts[0]}..{counts[-1]}"
        lines.append(f"({table.metric}; rows: early player, columns: late player; {span} matches per cell)")
    return "\n".join(lines)


def plot_early_late_tables(tables: Sequence[EarlyLateTable], path: str | Path, *, digits: int = 2) -> Path:
    """Save one heat-map panel per table (colour: s_E; text: s_E / s_L; means in the labels) to ``path``.

    Uses matplotlib's Agg canvas directly (no pyplot, no global backend change). Returns the path written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.2 * len(tables), 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(tables), squeeze=False)[0]
    for ax, table in zip(axes, tables, strict=True):
        players = table.players
        n = len(players)
        grid = [[math.nan] * n for _ in range(n)]
        for (early, late), cell in table.cells.items():
            grid[players.index(early)][players.index(late)] = cell.early
        image = ax.imshow(grid, cmap="viridis", vmin=0.0, vmax=1.0 if table.metric == "win rate" else None)
        for (early, late), cell in table.cells.items():
            dark = image.norm(cell.early) < 0.5  # light text on the dark end of viridis
            ax.text(
                players.index(late),
                players.index(early),
                f"{cell.early:.{digits}f} / {cell.late:.{digits}f}",
                ha="center",
                va="center",
                fontsize=9,
                color="white" if dark else "black",
            )
        fig.colorbar(image, ax=ax, shrink=0.8, label=f"s_E ({table.metric})")
        ax.set_xticks(range(n), [f"{p}\nmean s_L {_fmt(table.late_mean(p), digits)}" for p in players], fontsize=8)
        ax.set_yticks(range(n), [f"{p}\nmean s_E {_fmt(table.early_mean(p), digits)}" for p in players], fontsize=8)
        ax.set_xlabel("late player")
        ax.set_ylabel("early player")
        ax.set_title(f"Idiom Solitaire: {table.metric} (s_E / s_L)", fontsize=10)
    return save_figure(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    """Print Tables 1 and 2 for a run directory; with ``--plot FILE`` also save the figure."""
    args, groups = table_command("Idiom Solitaire Tables 1 and 2 (early/late) from a run directory.", GAME, argv)
    if not groups:
        return 1
    for index, (variant, records) in enumerate(groups.items()):
        print(f"{variant} ({len(records)} matches)\n")
        wins, hits = win_rate_table(records, args.players), hit_table(records, args.players)
        print(format_early_late_table(wins, title="Table 1. Idiom Solitaire: win rate"))
        print()
        print(format_early_late_table(hits, title="Table 2. Idiom Solitaire: successful hits"))
        if args.plot:
            path = numbered_path(args.plot, index, len(groups))
            print(f"\nfigure: {plot_early_late_tables([wins, hits], path)}")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
