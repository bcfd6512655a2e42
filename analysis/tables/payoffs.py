"""Plain-text tables of scores, as the CLI prints them, and the pairwise tables of the paper.

A pairwise table (Tables 1–6: early × late, reviewer × programmer, proofreader × translator) pools per-match values
per ordered pair of players (:func:`pool_pairs`), shows each pair's cell with the row and column means
(:func:`row_mean`, :func:`column_mean`: unweighted means of cell values, self-play cells left out) and prints as
fixed-width text (:func:`format_pair_table`). The task modules (:mod:`analysis.tables.idiom_solitaire`,
:mod:`analysis.tables.code_review`, :mod:`analysis.tables.translation`) say which seats are the row and the column
and which values to pool.

Every cell value has a 95% interval (:meth:`PairStats.interval`: the fixed-n betting interval of
:func:`analysis.stats.confseq.mean_interval` on the value's range, over the pair's matches in the order of repetition),
and
the two sides of a cell are compared *paired*, match by match (:meth:`PairStats.difference`: the interval of the
mean per-match difference, on the range a difference can take): a cell is *resolved* when that interval excludes 0,
and the table marks it ``*``. :func:`format_cell_intervals` lists them. At 6–10 matches a cell's interval is wide and
most cells are unresolved: that is what so few matches can say.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from analysis.formatting import format_number
from analysis.stats.confseq import Interval, mean_interval
from analysis.tables.scores import Score
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.games import game_variant

__all__ = [
    "INTERVAL_NOTE",
    "LABEL_CHARS",
    "PairKey",
    "PairStats",
    "PairTable",
    "agg_figure",
    "bounded_interval",
    "column_mean",
    "cut_label",
    "cut_labels",
    "format_cell_intervals",
    "format_interval",
    "format_pair_table",
    "format_scores",
    "metric_value",
    "numbered_path",
    "pair_heatmap",
    "pool_pairs",
    "resolved",
    "role_seats",
    "row_mean",
    "save_figure",
    "task_groups",
    "task_records",
    "variant_groups",
]

C = TypeVar("C")

PairKey = tuple[str, str]
"""An ordered pair of players: (row player, column player)."""


def _fmt(value: float) -> str:
    return f"{value:.2f}"


INTERVAL_NOTE = (
    "95% interval: where each player's true mean score lies, with 95% confidence; it assumes nothing of the scores "
    "but their range. Players whose intervals do not overlap are told apart"
)
"""The caption under a table of scores: what its intervals are."""


def format_interval(low: float, high: float, digits: int = 2) -> str:
    """``[low, high]``; ``n/a (no payoff range)`` for the unbounded interval of a game with no finite range, ``-``
    for none at all (no values)."""
    if math.isinf(low) or math.isinf(high):
        return "n/a (no payoff range)"
    if math.isnan(low) or math.isnan(high):
        return "-"
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def format_scores(scores: Sequence[Score], *, title: str = "", note: str = INTERVAL_NOTE) -> str:
    """A fixed-width table: player (role), matches, mean, std, 95% interval, min, max, and a caption saying what the
    intervals are (``note``: by default those of the betting method)."""
    with_role = any(s.role is not None for s in scores)
    header = ["player", *(["role"] if with_role else []), "matches", "mean", "std", "95% interval", "min", "max"]
    rows = [
        [
            s.player,
            *([s.role or ""] if with_role else []),
            str(s.n),
            _fmt(s.mean),
            _fmt(s.std),
            format_interval(s.ci_low, s.ci_high),
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
    out.append(f"({note})")
    return "\n".join(out)


def task_records(records: Iterable[MatchRecord], game: str) -> list[MatchRecord]:
    """The complete two-seat records of one task (game short name; every parameter variant pooled)."""
    return [
        r for r in records if r.status == "complete" and r.game.split("(", 1)[0].strip() == game and len(r.seats) == 2
    ]


def metric_value(record: MatchRecord, name: str) -> float | None:
    """``record.metrics[name]`` as a float; ``None`` when the match does not have it."""
    value = record.metrics.get(name)
    return None if value is None else float(value)


LABEL_CHARS = 40
"""The longest line of a plot's tick label or legend entry; a longer one is cut with an ellipsis."""


def cut_label(text: str, limit: int = LABEL_CHARS) -> str:
    """``text`` with each line cut to ``limit`` characters (the last one an ellipsis), at most four lines: what a
    plot shows of a name, so matplotlib never lays out a long one whole."""
    lines = text.split("\n", 4)[:4]
    return "\n".join(line if len(line) <= limit else line[: limit - 1] + "\u2026" for line in lines)


def cut_labels(texts: Iterable[str], limit: int = LABEL_CHARS) -> list[str]:
    """:func:`cut_label` of each text, kept apart: two texts cut to the same label get `` #2``, `` #3`` added."""
    labels: list[str] = []
    seen: set[str] = set()
    for text in texts:
        label, count = cut_label(text, limit), 1
        while label in seen:
            count += 1
            label = cut_label(text, limit - len(f" #{count}")) + f" #{count}"
        seen.add(label)
        labels.append(label)
    return labels


def agg_figure(figsize: tuple[float, float]) -> Any:
    """A constrained-layout matplotlib figure on its own Agg canvas (no pyplot, no global backend change)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def save_figure(figure: Any, path: str | Path) -> Path:
    """Save a matplotlib figure (the folder is created) and return its path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=120, bbox_inches="tight")  # a legend or title outside the axes is kept
    return out


def variant_groups(records: Iterable[MatchRecord]) -> dict[str, list[MatchRecord]]:
    """Records grouped by game variant (:func:`~deepeval_games.core.registry.games.game_variant`), in sorted order."""
    groups: dict[str, list[MatchRecord]] = {}
    for record in records:
        groups.setdefault(game_variant(record.game), []).append(record)
    return dict(sorted(groups.items()))


def numbered_path(path: str | Path, index: int, count: int) -> Path:
    """``path`` itself for a single figure, else ``name-1.png``, ``name-2.png``, ..."""
    path = Path(path)
    return path if count == 1 else path.with_name(f"{path.stem}-{index + 1}{path.suffix}")


def task_groups(records: Iterable[MatchRecord], game: str, *, title: str = "") -> dict[str, list[MatchRecord]]:
    """The task's records grouped by game variant (one table set per variant); says so when there are none."""
    groups = variant_groups(task_records(records, game))
    if not groups:
        print(f"no {game} matches{' in ' + title if title else ''}")
    return groups


# -- pairwise tables ---------------------------------------------------------------------------------------


Bounds = tuple[float, float] | None
"""A value's range (None: unknown, and the interval is ``(-inf, inf)``)."""


def bounded_interval(values: Sequence[float], bounds: Bounds) -> Interval:
    """:func:`~analysis.stats.confseq.mean_interval` of ``values`` on ``bounds``; ``(-inf, inf)`` without bounds (no
    method
    bounds a mean of values with no known range from finitely many of them); NaNs without values."""
    if not values:
        return Interval(math.nan, math.nan, math.nan, 0)
    if bounds is None:
        return Interval(-math.inf, math.inf, sum(values) / len(values), len(values))
    return mean_interval(values, *bounds)


@dataclass(frozen=True)
class PairStats:
    """The pooled values of one ordered pair of players."""

    matches: int
    """Matches of the pair."""
    means: tuple[float, ...]
    """Mean of each value over the matches that have it (NaN when none has)."""
    counts: tuple[int, ...]
    """How many matches had each value (``None`` is no value)."""
    samples: tuple[tuple[float | None, ...], ...] = ()
    """Every match's values, in the order of repetition (repeat, game, match id)."""

    def values(self, index: int) -> list[float]:
        """The matches' values of entry ``index`` (those that have it), in the order of repetition."""
        return [v for row in self.samples if (v := row[index]) is not None]

    def interval(self, index: int, bounds: Bounds) -> Interval:
        """The 95% interval of the mean of entry ``index``, whose values lie in ``bounds``."""
        return bounded_interval(self.values(index), bounds)

    def difference(self, first: int, second: int, bounds: Bounds) -> Interval:
        """The paired difference ``first - second`` over the matches that have both (both in ``bounds``): its mean
        and 95% interval on ``[-(high - low), high - low]``."""
        diffs = [a - b for row in self.samples if (a := row[first]) is not None and (b := row[second]) is not None]
        span = None if bounds is None else (bounds[1] - bounds[0])
        return bounded_interval(diffs, None if span is None else (-span, span))


def resolved(interval: Interval) -> bool:
    """Whether an interval of a difference excludes 0 (NaN or unbounded: no)."""
    return interval.low > 0 or interval.high < 0


def role_seats(record: MatchRecord, first: str, second: str) -> tuple[int, int]:
    """The seats of roles ``first`` and ``second`` in a two-seat record; ``(0, 1)`` when it has no such roles."""
    roles = list(record.roles)
    if first in roles and second in roles:
        return roles.index(first), roles.index(second)
    return 0, 1


def pool_pairs(
    records: Iterable[MatchRecord],
    seats: Callable[[MatchRecord], tuple[int, int]],
    values: Callable[[MatchRecord, int, int], Sequence[float | None]],
    players: Sequence[str] | None = None,
) -> tuple[tuple[str, ...], dict[PairKey, PairStats]]:
    """Pool per-match values per ordered pair of players.

    Args:
        records: the records to pool (already filtered to one task).
        seats: a record's (row seat, column seat); the pair is the players in those seats.
        values: a record's values, given its row and column seats (the same number for every record);
            ``None`` is a value the match does not have.
        players: the row/column order (other players are dropped); by default every player seen, sorted.

    Returns:
        The row/column order and the cells of the pairs seen, keyed by (row player, column player).
    """
    sums: dict[PairKey, list[float]] = {}
    counts: dict[PairKey, list[int]] = {}
    matches: dict[PairKey, int] = {}
    samples: dict[PairKey, list[tuple[float | None, ...]]] = {}
    for record in sorted(records, key=lambda r: (r.repeat, r.game, r.match_id)):  # the order of repetition
        row, column = seats(record)
        key = (record.seats[row], record.seats[column])
        pooled = values(record, row, column)
        acc = sums.setdefault(key, [0.0] * len(pooled))
        seen = counts.setdefault(key, [0] * len(pooled))
        matches[key] = matches.get(key, 0) + 1
        samples.setdefault(key, []).append(tuple(None if v is None else float(v) for v in pooled))
        for i, value in enumerate(pooled):
            if value is not None:
                acc[i] += value
                seen[i] += 1
    order = tuple(players) if players is not None else tuple(sorted({name for pair in sums for name in pair}))
    cells = {
        key: PairStats(
            matches=matches[key],
            means=tuple(s / n if n else math.nan for s, n in zip(acc, counts[key], strict=True)),
            counts=tuple(counts[key]),
            samples=tuple(samples[key]),
        )
        for key, acc in sums.items()
        if key[0] in order and key[1] in order
    }
    return order, cells


def _mean(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def row_mean(cells: Mapping[PairKey, C], player: str, value: Callable[[C], float]) -> float:
    """Mean of ``value`` over the row of ``player`` (self-play and NaN left out); NaN when nothing is left."""
    return _mean([value(c) for (row, column), c in cells.items() if row == player and column != player])


def column_mean(cells: Mapping[PairKey, C], player: str, value: Callable[[C], float]) -> float:
    """Mean of ``value`` over the column of ``player`` (self-play and NaN left out); NaN when nothing is left."""
    return _mean([value(c) for (row, column), c in cells.items() if column == player and row != player])


class PairTable(Generic[C]):
    """What the pairwise tables share: cells keyed by (row player, column player), and their row and column means.

    A task's table is a frozen dataclass with the fields ``players`` and ``cells`` that subclasses this.
    """

    players: tuple[str, ...]
    """Row and column order."""
    cells: dict[PairKey, C]

    def cell(self, row: str, column: str) -> C | None:
        """The cell of an ordered pair, or ``None`` when no record has it."""
        return self.cells.get((row, column))

    def row_mean(self, player: str, value: Callable[[C], float]) -> float:
        """Mean of ``value`` over the row of ``player`` (self-play and NaN left out); NaN when the row is empty."""
        return row_mean(self.cells, player, value)

    def column_mean(self, player: str, value: Callable[[C], float]) -> float:
        """Mean of ``value`` over the column of ``player`` (self-play and NaN left out); NaN when it is empty."""
        return column_mean(self.cells, player, value)


def format_pair_table(
    players: Sequence[str],
    cells: Mapping[PairKey, C],
    values: Callable[[C], Sequence[float]],
    labels: Sequence[str],
    means: tuple[Callable[[str], float], Callable[[str], float]],
    *,
    corner: str,
    mean_labels: tuple[str, str],
    caption: str,
    matches: Callable[[C], int],
    title: str = "",
    digits: int = 2,
    more_row_means: Sequence[tuple[str, Callable[[str], float]]] = (),
    column_mean_part: int | None = None,
    difference: tuple[str, Callable[[C], Interval]] | None = None,
) -> str:
    """A pairwise table as fixed-width text: a row per row player, a group of columns per column player.

    Args:
        players: the row/column order.
        cells: the cells, keyed by (row player, column player); a missing pair shows ``-``.
        values: the numbers a cell shows, one per entry of ``labels`` (the sub-header).
        means: the row mean and the column mean of a player (last column, last row).
        corner: the top-left label (``early \\ late``).
        mean_labels: the header of the last column and the label of the last row.
        caption: said in the last line, before the number of matches per cell.
        matches: the matches of a cell.
        title: a first line, if any.
        digits: decimals.
        more_row_means: further last columns after the first, each (header, mean of a row player).
        column_mean_part: the sub-column (index into ``labels``) under which the last row's column mean
            stands; by default at the right edge of the cell.
        difference: (label, a cell's paired difference of its two sides): the cells whose difference is resolved
            (:func:`resolved`) are marked ``*`` after their numbers, as the last line says.
    """
    row_means, column_means = means
    last_columns = [(mean_labels[0], row_means), *more_row_means]
    layout = _pair_layout(
        players, cells, values, labels, column_means, corner, mean_labels, digits, difference is not None
    )

    def show(row: str, column: str) -> str:
        cell = cells.get((row, column))
        if cell is None:
            return layout.cell_text(["-"] * len(labels), marked=False)
        marked = difference is not None and resolved(difference[1](cell))
        return layout.cell_text([format_number(v, digits) for v in values(cell)], marked=marked)

    # the column mean stands under the sub-column it averages, else at the cell's right edge
    pad = 0 if column_mean_part is None else (len(labels) - 1 - column_mean_part) * (layout.num + 1)
    lines = [title] if title else []
    lines += _pair_header(players, labels, corner, [label for label, _ in last_columns], layout)
    for row in players:
        text = row.ljust(layout.name) + "".join("  " + show(row, column) for column in players)
        lines.append(text + _row_means_text(row, last_columns, digits, layout))
    lines.append(_column_means_line(mean_labels[1], players, column_means, digits, layout, pad))
    lines += _pair_footer(cells, matches, caption, difference)
    return "\n".join(lines)


@dataclass(frozen=True)
class _PairLayout:
    """The widths of a pairwise table's text (:func:`format_pair_table`)."""

    num: int
    """One number (a sub-column)."""
    name: int
    """The first column: the row players' names."""
    cell: int
    """A column player's cell: its sub-columns and the mark."""
    mark: int
    """The ``*`` after a cell's numbers: 1 when the table marks resolved cells, else 0."""

    def cell_text(self, shown: Sequence[str], *, marked: bool) -> str:
        """A cell's numbers (or ``-`` each), right-aligned in their sub-columns, ``*`` after them when ``marked``."""
        return (" ".join(v.rjust(self.num) for v in shown) + ("*" if marked else " " * self.mark)).rjust(self.cell)


def _pair_layout(
    players: Sequence[str],
    cells: Mapping[PairKey, C],
    values: Callable[[C], Sequence[float]],
    labels: Sequence[str],
    column_means: Callable[[str], float],
    corner: str,
    mean_labels: tuple[str, str],
    digits: int,
    marks: bool,
) -> _PairLayout:
    """The widths of :func:`format_pair_table`'s text: every number of a cell, a sub-header and a column mean fits
    its sub-column (e.g. "100.00", "-11.17"); with ``marks`` each cell keeps a place for the ``*`` mark."""
    parts = len(labels)
    shown_values = [format_number(v, digits) for c in cells.values() for v in values(c)]
    shown_values += [format_number(column_means(p), digits) for p in players]
    num_width = max([digits + 3, 4, *(len(v) for v in shown_values), *(len(label) for label in labels)])
    name_width = max([len(corner), len(mean_labels[1]), *(len(p) for p in players)])
    mark_width = 1 if marks else 0
    cell_width = max([parts * num_width + parts - 1 + mark_width, *(len(p) for p in players)])
    return _PairLayout(num_width, name_width, cell_width, mark_width)


def _pair_header(
    players: Sequence[str], labels: Sequence[str], corner: str, last_columns: Sequence[str], layout: _PairLayout
) -> list[str]:
    """The two header lines of :func:`format_pair_table`: the players and the last columns, then the sub-header."""
    header = corner.ljust(layout.name) + "".join("  " + p.rjust(layout.cell) for p in players)
    first = (header + "".join("  " + label.rjust(layout.num) for label in last_columns)).rstrip()
    sub = " " * layout.name + "".join("  " + layout.cell_text(labels, marked=False) for _ in players)
    return [first, sub.rstrip()]


def _row_means_text(
    row: str, last_columns: Sequence[tuple[str, Callable[[str], float]]], digits: int, layout: _PairLayout
) -> str:
    """The last columns of a row of :func:`format_pair_table`: the row player's means, each under its header."""
    return "".join(
        "  " + format_number(mean(row), digits).rjust(max(len(label), layout.num)) for label, mean in last_columns
    )


def _column_means_line(
    label: str, players: Sequence[str], column_means: Callable[[str], float], digits: int, layout: _PairLayout, pad: int
) -> str:
    """The last row of :func:`format_pair_table`: each column player's mean in its cell, ``pad`` spaces (and the
    mark's) from the cell's right edge."""
    texts = (format_number(column_means(p), digits) + " " * (pad + layout.mark) for p in players)
    return (
        label.ljust(layout.name)
        + "".join("  " + text.rjust(layout.cell).rstrip().ljust(layout.cell) for text in texts).rstrip()
    )


def _pair_footer(
    cells: Mapping[PairKey, C],
    matches: Callable[[C], int],
    caption: str,
    difference: tuple[str, Callable[[C], Interval]] | None,
) -> list[str]:
    """The last line of :func:`format_pair_table` (none without cells): the caption, what ``*`` marks, and the
    matches per cell."""
    counts = sorted({matches(c) for c in cells.values()})
    if not counts:
        return []
    span = str(counts[0]) if len(counts) == 1 else f"{counts[0]}..{counts[-1]}"
    note = f"; * {difference[0]} resolved (its 95% interval, match by match, excludes 0)" if difference else ""
    return [f"({caption}{note}; {span} matches per cell)"]


def format_cell_intervals(
    players: Sequence[str],
    cells: Mapping[PairKey, C],
    entries: Callable[[C], Sequence[tuple[str, Interval]]],
    *,
    difference: tuple[str, Callable[[C], Interval]] | None = None,
    title: str = "95% intervals per cell (betting-eb/1, valid at any number of matches, so wide at few):",
    digits: int = 2,
) -> str:
    """Every cell's 95% intervals, a line per cell in row then column order: ``row \\ column (n matches): label mean
    [low, high]; ...`` (``entries``: a cell's labelled intervals) and, with ``difference``, the paired difference of
    the cell's two sides and whether it is resolved (its interval excludes 0)."""
    lines = [title] if title else []
    for row in players:
        for column in players:
            cell = cells.get((row, column))
            if cell is None:
                continue
            parts = [f"{label} {_shown(iv, digits)}" for label, iv in entries(cell)]
            if difference is not None:
                label, iv = difference[0], difference[1](cell)
                verdict = "resolved" if resolved(iv) else "unresolved"
                parts.append(f"{label} {_shown(iv, digits, signed=True)} {verdict}")
            count = max((iv.n for _, iv in entries(cell)), default=0)
            lines.append(f"  {row} \\ {column} ({count} match{'' if count == 1 else 'es'}): " + "; ".join(parts))
    return "\n".join(lines)


def _shown(interval: Interval, digits: int, *, signed: bool = False) -> str:
    if math.isnan(interval.mean):
        return "-"
    sign = "+" if signed else ""
    return f"{interval.mean:{sign}.{digits}f} {format_interval(interval.low, interval.high, digits)}"


def pair_heatmap(
    fig: Any,
    ax: Any,
    players: Sequence[str],
    cells: Mapping[PairKey, C],
    value: Callable[[C], float],
    text: Callable[[C], str],
    *,
    limits: tuple[float | None, float | None],
    colorbar: str,
    axis_labels: tuple[str, str],
    title: str,
    tick_labels: tuple[Sequence[str], Sequence[str]] | None = None,
    fontsize: int = 8,
    rotation: float = 0,
) -> None:
    """Draw a pairwise table as one heat-map panel of a matplotlib figure: rows down, columns across.

    Args:
        fig: the figure (for the colour bar); ``ax``: its panel.
        players: the row/column order; ``cells`` keyed by (row player, column player).
        value: a cell's colour (NaN: blank); ``text``: the words written in it.
        limits: the colour scale's (min, max); None lets matplotlib choose.
        colorbar: the colour bar's label; ``axis_labels``: (x label, y label); ``title``: the panel's.
        tick_labels: (column ticks, row ticks); by default the players' names.
        fontsize: of the cell texts; ``rotation``: of the column ticks.
    """
    n = len(players)
    place = {player: index for index, player in enumerate(players)}
    grid = [[math.nan] * n for _ in range(n)]
    for (row, column), cell in cells.items():
        grid[place[row]][place[column]] = value(cell)
    image = ax.imshow(grid, cmap="viridis", vmin=limits[0], vmax=limits[1])
    for (row, column), cell in cells.items():
        shade = value(cell)
        dark = not math.isnan(shade) and image.norm(shade) < 0.5  # light text on the dark end of viridis
        ax.text(
            place[column],
            place[row],
            text(cell),
            ha="center",
            va="center",
            fontsize=fontsize,
            color="white" if dark else "black",
        )
    fig.colorbar(image, ax=ax, shrink=0.8, label=colorbar)
    column_ticks, row_ticks = tick_labels or (players, players)
    ax.set_xticks(range(n), cut_labels(column_ticks), fontsize=8, rotation=rotation)
    ax.set_yticks(range(n), cut_labels(row_ticks), fontsize=8)
    ax.set_xlabel(axis_labels[0])
    ax.set_ylabel(axis_labels[1])
    ax.set_title(title, fontsize=10)
