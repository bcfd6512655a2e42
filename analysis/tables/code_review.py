"""The paper's Table 3 for Code Review, the same table of MBPP pass rates, and the judge's agreement with them.

Reads match records only. Rows are the reviewer, columns the programmer (the paper's layout). Each cell
pools the matches of that ordered pair (every MBPP task and repeat):

* the judge table: the programmer's mean score s_P and the reviewer's mean score s_R (the returns, which
  are the judge's verdict); the last column is each reviewer's mean s_R over its row, the last row each
  programmer's mean s_P over its column — unweighted means of cell values, self-play cells (if any) shown
  but left out of the means, as in the paper;
* the pass-rate table: the mean MBPP pass rate of the pair's final programs (``metrics["pass_rate"]``,
  from the sandbox), with the same row and column means. Matches whose pass rate could not be measured
  (``None``: no sandbox, or a sandbox infrastructure failure) are left out of this table and counted;
* the judge–ground-truth agreement: Pearson (with its 95% interval) and Spearman correlation
  (:mod:`analysis.stats.correlation`) between the judge's programmer score and the pass rate, over the matches
  that have both.

Each cell's s_P, s_R and pass rate have 95% intervals valid at any number of matches (:mod:`analysis.tables.payoffs`:
on the
judge's scale, the game's payoff range, and on [0, 1]), and a judge-table cell is marked ``*`` when s_P - s_R,
compared match by match, is resolved (its interval excludes 0). With a few matches per cell most are unresolved.

Print everything for a run directory, and save the figure::

    deepeval-games tables code-review runs/code-review-demo --plot runs/code-review-demo/table3.png
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis.formatting import format_number
from analysis.stats.confseq import Interval, records_bounds
from analysis.stats.correlation import Correlation, correlate, correlation_line, correlation_scatter
from analysis.tables.payoffs import (
    PairTable,
    agg_figure,
    format_cell_intervals,
    format_pair_table,
    metric_value,
    numbered_path,
    pair_heatmap,
    pool_pairs,
    role_seats,
    save_figure,
    task_groups,
    task_records,
)
from deepeval_games.core.records import MatchRecord

__all__ = [
    "GAME",
    "Correlation",
    "PairCell",
    "Table3",
    "code_review_records",
    "format_cell_intervals_table3",
    "format_correlation",
    "format_pass_rate_table",
    "format_score_table",
    "judge_pass_rate_correlation",
    "plot_table3",
    "print_tables",
    "table3",
]

GAME = "deepeval_code_review"
FIGURE_TITLE = "Judge scores and pass rates per pair of players (Table 3)"
"""The title the HTML report gives this module's figure."""
"""Short name of the game whose records these tables read."""


@dataclass(frozen=True)
class PairCell:
    """One ordered pair (reviewer, programmer)."""

    programmer_score: float
    """s_P: the judge's mean score of the programmer."""
    reviewer_score: float
    """s_R: the judge's mean score of the reviewer."""
    matches: int
    pass_rate: float
    """Mean pass rate of the final programs (NaN when none was measured)."""
    measured: int
    """Matches with a measured pass rate."""
    programmer_ci: Interval
    """s_P with its 95% interval."""
    reviewer_ci: Interval
    """s_R with its 95% interval."""
    difference: Interval
    """s_P - s_R, match by match, with its 95% interval (resolved when it excludes 0)."""
    pass_rate_ci: Interval
    """The pass rate with its 95% interval."""


@dataclass(frozen=True)
class Table3(PairTable[PairCell]):
    """Table 3 and its pass-rate twin: cells keyed by (reviewer, programmer)."""

    players: tuple[str, ...]
    cells: dict[tuple[str, str], PairCell] = field(default_factory=dict)
    unmeasured: int = 0
    """Matches whose pass rate is missing (``None``)."""

    def reviewer_mean(self, player: str) -> float:
        """Mean s_R over the row of ``player`` (self-play left out)."""
        return self.row_mean(player, lambda c: c.reviewer_score)

    def programmer_mean(self, player: str) -> float:
        """Mean s_P over the column of ``player`` (self-play left out)."""
        return self.column_mean(player, lambda c: c.programmer_score)

    def pass_rate_row_mean(self, reviewer: str) -> float:
        """Mean pass rate over the row of ``reviewer`` (self-play left out)."""
        return self.row_mean(reviewer, lambda c: c.pass_rate)

    def pass_rate_column_mean(self, programmer: str) -> float:
        """Mean pass rate over the column of ``programmer`` (self-play left out)."""
        return self.column_mean(programmer, lambda c: c.pass_rate)


def code_review_records(records: Iterable[MatchRecord], game: str = GAME) -> list[MatchRecord]:
    """The complete two-seat records of ``game`` (every task pooled)."""
    return task_records(records, game)


def _seats(record: MatchRecord) -> tuple[int, int]:
    """(programmer seat, reviewer seat)."""
    return role_seats(record, "programmer", "reviewer")


def _pass_rate(record: MatchRecord) -> float | None:
    return metric_value(record, "pass_rate")


def table3(records: Iterable[MatchRecord], players: Sequence[str] | None = None) -> Table3:
    """Pool the code review records per (reviewer, programmer) pair.

    ``players`` fixes the row/column order (and drops other players); by default every player seen, sorted.
    """
    task = code_review_records(records)
    scale = records_bounds(task) if task else None  # the judge's scale: the game pays its verdict
    order, pooled = pool_pairs(
        task,
        lambda r: _seats(r)[::-1],  # rows: the reviewer
        lambda r, reviewer, programmer: (
            float(r.returns[programmer]),
            float(r.returns[reviewer]),
            _pass_rate(r),
        ),
        players,
    )
    cells = {
        key: PairCell(
            programmer_score=s.means[0],
            reviewer_score=s.means[1],
            matches=s.matches,
            pass_rate=s.means[2],
            measured=s.counts[2],
            programmer_ci=s.interval(0, scale),
            reviewer_ci=s.interval(1, scale),
            difference=s.difference(0, 1, scale),
            pass_rate_ci=s.interval(2, (0.0, 1.0)),
        )
        for key, s in pooled.items()
    }
    return Table3(players=order, cells=cells, unmeasured=sum(_pass_rate(r) is None for r in task))


def judge_pass_rate_correlation(records: Iterable[MatchRecord]) -> Correlation:
    """Pearson and Spearman correlation of the judge's programmer score with the pass rate, per match.

    NaN coefficients when fewer than 3 matches have both, or when either side is constant.
    """
    return correlate((score, rate) for rate, score in _score_points(records))


def _score_points(records: Iterable[MatchRecord]) -> list[tuple[float, float]]:
    """(pass rate, judge's programmer score) of each match with a measured pass rate."""
    points = []
    for record in code_review_records(records):
        rate = _pass_rate(record)
        if rate is not None:
            points.append((rate, float(record.returns[_seats(record)[0]])))
    return points


def _grid(
    table: Table3,
    values: Callable[[PairCell], Sequence[float]],
    labels: Sequence[str],
    means: tuple[Callable[[str], float], Callable[[str], float]],
    mean_labels: tuple[str, str],
    title: str,
    digits: int,
    difference: tuple[str, Callable[[PairCell], Interval]] | None = None,
) -> str:
    return format_pair_table(
        table.players,
        table.cells,
        values,
        labels,
        means,
        corner="Rev \\ Prog",
        mean_labels=mean_labels,
        caption="rows: reviewer, columns: programmer",
        matches=lambda c: c.matches,
        title=title,
        digits=digits,
        difference=difference,
    )


def format_score_table(table: Table3, *, title: str = "", digits: int = 2) -> str:
    """Table 3: per pair the judge's s_P and s_R; last column mean s_R per reviewer, last row mean s_P."""
    return _grid(
        table,
        lambda c: (c.programmer_score, c.reviewer_score),
        ("s_P", "s_R"),
        (table.reviewer_mean, table.programmer_mean),
        ("mean s_R", "mean s_P"),
        title,
        digits,
        difference=("s_P - s_R", lambda c: c.difference),
    )


def format_cell_intervals_table3(table: Table3, *, digits: int = 2) -> str:
    """Every cell's s_P, s_R and pass rate with their 95% intervals, and whether s_P - s_R is resolved."""
    return format_cell_intervals(
        table.players,
        table.cells,
        lambda c: (("s_P", c.programmer_ci), ("s_R", c.reviewer_ci), ("pass", c.pass_rate_ci)),
        difference=("s_P - s_R", lambda c: c.difference),
        digits=digits,
    )


def format_pass_rate_table(table: Table3, *, title: str = "", digits: int = 2) -> str:
    """The pass rate of the final programs per pair, with row (reviewer) and column (programmer) means."""
    text = _grid(
        table,
        lambda c: (c.pass_rate,),
        ("pass",),
        (table.pass_rate_row_mean, table.pass_rate_column_mean),
        ("mean", "mean"),
        title,
        digits,
    )
    if table.unmeasured:
        text += f"\n({table.unmeasured} match(es) without a measured pass rate left out)"
    return text


def format_correlation(corr: Correlation) -> str:
    """One line: the judge's programmer score against the pass rate."""
    return correlation_line("Judge programmer score vs MBPP pass rate", corr)


def plot_table3(table: Table3, records: Iterable[MatchRecord], path: str | Path, *, digits: int = 2) -> Path:
    """Save three panels to ``path``: judge scores (colour s_P), pass rates, and score vs pass rate per match.

    Uses matplotlib's Agg canvas directly (no pyplot, no global backend change). Returns the path written.
    """
    fig = agg_figure((16, 4.8))
    axes = fig.subplots(1, 3)
    players = table.players

    def scores_text(c: PairCell) -> str:
        return f"{c.programmer_score:.{digits}f} / {c.reviewer_score:.{digits}f}"

    panels: list[tuple[str, Callable[[PairCell], float], Callable[[PairCell], str], tuple[float, float], str]] = [
        ("Judge: s_P / s_R", lambda c: c.programmer_score, scores_text, (1.0, 10.0), "s_P (judge)"),
        (
            "MBPP pass rate of the final program",
            lambda c: c.pass_rate,
            lambda c: format_number(c.pass_rate, digits),
            (0.0, 1.0),
            "pass rate",
        ),
    ]
    for ax, (title, value, text, limits, label) in zip(axes[:2], panels, strict=True):
        pair_heatmap(
            fig,
            ax,
            players,
            table.cells,
            value,
            text,
            limits=limits,
            colorbar=label,
            axis_labels=("programmer", "reviewer"),
            title=title,
            rotation=20,
        )
    records = list(records)
    correlation_scatter(
        axes[2],
        _score_points(records),
        judge_pass_rate_correlation(records),
        labels=("MBPP pass rate of the final program", "judge's programmer score"),
        limits=((-0.05, 1.05), (0.5, 10.5)),
    )
    return save_figure(fig, path)


def print_tables(
    records: Iterable[MatchRecord], *, players: Sequence[str] | None = None, plot: str | Path | None = None
) -> int:
    """Print Table 3, the pass-rate table and the correlation (per game variant); ``plot`` saves a figure."""
    groups = task_groups(records, GAME)
    if not groups:
        return 1
    for index, (variant, records) in enumerate(groups.items()):
        if players:  # the correlation and its plot cover the same players as the tables
            records = [r for r in records if set(r.seats) <= set(players)]
        print(f"{variant} ({len(records)} matches)\n")
        table = table3(records, players)
        print(format_score_table(table, title="Table 3. Code Review: judge scores"))
        print(format_cell_intervals_table3(table))
        print()
        print(format_pass_rate_table(table, title="Code Review: MBPP pass rate of the final program"))
        print()
        print(format_correlation(judge_pass_rate_correlation(records)))
        if plot:
            print(f"\nfigure: {plot_table3(table, records, numbered_path(plot, index, len(groups)))}")
        print()
    return 0
