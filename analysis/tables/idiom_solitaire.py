"""The paper's score for Idiom Solitaire, wins per player, and its Tables 1 and 2: win rate and successful hits,
early vs late player.

Reads match records only. Idiom Solitaire is a symmetric task (both seats have the same moves and the same goal;
the records name the seats by position, ``early`` and ``late``), and the paper's score is the number of matches
a player wins: Eq. 1 with a win (1, else 0) as the per-match value, over both positions (:func:`headline`: the
share of its matches a player won, with the count; draws count for neither side; self-play matches, if any, are
left out). The report shows it as the task's headline; Tables 1 and 2 are the same results per position.

In Tables 1 and 2, rows are the player that moved first (early), columns the player that moved
second (late). Each cell holds the early player's score s_E and the late player's score s_L over the
matches of that ordered pair (every start idiom and repeat pooled):

* Table 1, win rate: the fraction of those matches each side won (draws count for neither side, so
  s_E + s_L <= 1);
* Table 2, successful hits: the mean number of valid idioms each side added to the chain per match
  (``record.metrics["hits"]``).

As in the paper, the last column is each row's mean of s_E over its cells (the player's mean score when it
moves first) and the last row each column's mean of s_L (its mean score when it moves second): unweighted
means of cell values. Self-play cells (same player both seats), if any, are shown but left out of the means.

Each cell's s_E and s_L have 95% intervals valid at any number of matches (:mod:`analysis.tables.payoffs`: on [0, 1]
for the
win rate, on [0, max_turns] for hits), and the cell is marked ``*`` when s_E - s_L, compared match by match, is
resolved (its interval excludes 0); the list of intervals follows each table. With a few matches per cell most cells
are unresolved.

Beside them, :func:`losses_by_cause` counts each player's lost matches by what broke the chain: ``not an idiom``
(a four-character answer outside the dictionary), ``wrong first character``, ``repeat``, ``judge refused`` (the
referee mode, ``validity=dictionary+judge``: an answer outside the dictionary that the judge did not accept), or
``format`` (no usable answer at all after the re-asks, a refusal or a reply cut by the token cap: the referee's
penalty).

Below them, :func:`validity_note` says who decided what is an idiom: the dictionary alone (the default, and
``preset = "paper"`` without a ``[judge]``), or the dictionary with a judge ruling on the answers outside it
(``validity=dictionary+judge``), the nearest to the paper, whose referee was a language model.

Print the tables for a run directory, and save the figure::

    deepeval-games tables idiom runs/idiom-demo --plot runs/idiom-demo/idiom_tables.png
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyspiel

from analysis.formatting import format_number
from analysis.stats.confseq import Interval
from analysis.tables.payoffs import (
    Bounds,
    PairTable,
    agg_figure,
    format_cell_intervals,
    format_pair_table,
    numbered_path,
    pair_heatmap,
    pool_pairs,
    role_seats,
    save_figure,
    task_groups,
    task_records,
)
from analysis.tables.scores import Headline, SeatValue, symmetric_scores
from deepeval_games.core.bot import Outcome
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.games import load_recorded_game

__all__ = [
    "GAME",
    "Cell",
    "EarlyLateTable",
    "early_late_table",
    "format_early_late_intervals",
    "format_early_late_table",
    "format_headline",
    "headline",
    "hit_table",
    "idiom_records",
    "plot_early_late_tables",
    "print_tables",
    "validity_note",
    "win_rate_table",
]

GAME = "deepeval_idiom_solitaire"
FIGURE_TITLE = "Early and late scores per pair of players (Tables 1 and 2)"
"""The title the HTML report gives this module's figure."""
"""Short name of the game whose records these tables read."""


@dataclass(frozen=True)
class Cell:
    """One ordered pair (early player, late player)."""

    early: float
    """s_E: the early player's mean score over the pair's matches."""
    late: float
    """s_L: the late player's mean score over the pair's matches."""
    matches: int
    early_ci: Interval
    """s_E with its 95% interval."""
    late_ci: Interval
    """s_L with its 95% interval."""
    difference: Interval
    """s_E - s_L, match by match, with its 95% interval (resolved when it excludes 0)."""


@dataclass(frozen=True)
class EarlyLateTable(PairTable[Cell]):
    """A table shaped like the paper's Tables 1 and 2."""

    metric: str
    """What the scores are (``win rate``, ``successful hits``)."""
    players: tuple[str, ...]
    """Row and column order."""
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    """Keyed by (early player, late player)."""

    def early_mean(self, player: str) -> float:
        """Mean of s_E over the row of ``player`` (self-play left out); NaN when the row is empty."""
        return self.row_mean(player, lambda c: c.early)

    def late_mean(self, player: str) -> float:
        """Mean of s_L over the column of ``player`` (self-play left out); NaN when the column is empty."""
        return self.column_mean(player, lambda c: c.late)


def idiom_records(records: Iterable[MatchRecord], game: str = GAME) -> list[MatchRecord]:
    """The complete two-seat records of ``game`` (any parameters: every start idiom pooled)."""
    return task_records(records, game)


def _early_late_seats(record: MatchRecord) -> tuple[int, int]:
    return role_seats(record, "early", "late")


def early_late_table(
    records: Iterable[MatchRecord],
    score: SeatValue,
    metric: str,
    players: Sequence[str] | None = None,
    bounds: Bounds = None,
) -> EarlyLateTable:
    """Pool ``score`` per (early, late) pair over the idiom solitaire records.

    ``players`` fixes the row/column order (and drops other players); by default every player seen, sorted.
    ``bounds``: the range of a score (None: unknown, so no interval).
    """
    order, pooled = pool_pairs(
        idiom_records(records), _early_late_seats, lambda r, e, late: (score(r, e), score(r, late)), players
    )
    cells = {
        key: Cell(
            early=s.means[0],
            late=s.means[1],
            matches=s.matches,
            early_ci=s.interval(0, bounds),
            late_ci=s.interval(1, bounds),
            difference=s.difference(0, 1, bounds),
        )
        for key, s in pooled.items()
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
    return early_late_table(records, _won, "win rate", players, (0.0, 1.0))


def _most_hits(records: Sequence[MatchRecord]) -> float | None:
    """The most idioms a seat can add in one match of ``records``: half the largest ``max_turns`` of their games,
    rounded up (the seats move in turn and each move adds at most one); None when a game cannot be loaded."""
    most = 0.0
    for game_string in sorted({r.game for r in records}):
        try:
            game = load_recorded_game(game_string)
        except DeepEvalError:  # a record from elsewhere: no range, so no interval (said in the table)
            return None
        most = max(most, float(math.ceil(int(game.get_parameters().get("max_turns", game.max_game_length())) / 2)))
    return most or None


HEADLINE_TITLE = "Eq. 1 — wins per player over both positions (the paper's score; per position: Tables 1 and 2)"
"""The title of the task's headline."""


def headline(records: Iterable[MatchRecord], players: Sequence[str] | None = None) -> Headline | None:
    """The paper's score, Eq. 1 by wins: each player's share of the matches it won, early and late pooled.

    Over the complete two-seat records of the task between two different players (``players``: only matches
    between those); a draw is a match neither side won. The note counts the wins. None when there is no match.
    """
    task = [r for r in idiom_records(records) if r.seats[0] != r.seats[1]]
    if players is not None:
        task = [r for r in task if set(r.seats) <= set(players)]
    scores = symmetric_scores(task, _won, bounds=(0.0, 1.0))  # a win is 1, else 0
    if not scores:
        return None
    wins = ", ".join(f"{s.player} {round(s.mean * s.n)} of {s.n}" for s in scores)
    return Headline(HEADLINE_TITLE, scores, note=f"Wins (matches won of matches played, draws won by neither): {wins}")


def _columns(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Fixed-width lines: the first column left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    return [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in (header, *rows)
    ]


def format_headline(found: Headline, *, digits: int = 2) -> str:
    """The headline as fixed-width text: per player its matches, wins, win rate and the interval of the rate."""
    header = ("player", "matches", "wins", "win rate", "95% CI")
    rows = [
        (
            s.player,
            str(s.n),
            str(round(s.mean * s.n)),
            f"{s.mean:.{digits}f}",
            f"[{s.ci_low:.{digits}f}, {s.ci_high:.{digits}f}]",
        )
        for s in found.scores
    ]
    return "\n".join(["Eq. 1. Idiom Solitaire: " + found.title.removeprefix("Eq. 1 — "), *_columns(header, rows)])


def hit_table(records: Iterable[MatchRecord], players: Sequence[str] | None = None) -> EarlyLateTable:
    """Table 2: the mean number of successful hits each side of a pair made per match."""
    task = idiom_records(records)
    most = _most_hits(task)
    return early_late_table(task, _hits, "successful hits", players, None if most is None else (0.0, most))


def format_early_late_table(table: EarlyLateTable, *, title: str = "", digits: int = 2) -> str:
    """Fixed-width text: a row per early player, a pair of columns (s_E, s_L) per late player, and the means."""
    return format_pair_table(
        table.players,
        table.cells,
        lambda c: (c.early, c.late),
        ("s_E", "s_L"),
        (table.early_mean, table.late_mean),
        corner="early \\ late",
        mean_labels=("mean s_E", "mean s_L"),
        caption=f"{table.metric}; rows: early player, columns: late player",
        matches=lambda c: c.matches,
        title=title,
        digits=digits,
        difference=("s_E - s_L", lambda c: c.difference),
    )


def format_early_late_intervals(table: EarlyLateTable, *, digits: int = 2) -> str:
    """Every cell's s_E and s_L with their 95% intervals, and whether s_E - s_L is resolved."""
    return format_cell_intervals(
        table.players,
        table.cells,
        lambda c: (("s_E", c.early_ci), ("s_L", c.late_ci)),
        difference=("s_E - s_L", lambda c: c.difference),
        title=f"95% intervals per cell ({table.metric}; betting-eb/1, valid at any number of matches, so wide at few):",
        digits=digits,
    )


def plot_early_late_tables(tables: Sequence[EarlyLateTable], path: str | Path, *, digits: int = 2) -> Path:
    """Save one heat-map panel per table (colour: s_E; text: s_E / s_L; means in the labels) to ``path``.

    Uses matplotlib's Agg canvas directly (no pyplot, no global backend change). Returns the path written.
    """
    fig = agg_figure((5.2 * len(tables), 4.6))
    axes = fig.subplots(1, len(tables), squeeze=False)[0]
    for ax, table in zip(axes, tables, strict=True):
        pair_heatmap(
            fig,
            ax,
            table.players,
            table.cells,
            lambda c: c.early,
            lambda c: f"{c.early:.{digits}f} / {c.late:.{digits}f}",
            limits=(0.0, 1.0 if table.metric == "win rate" else None),
            colorbar=f"s_E ({table.metric})",
            axis_labels=("late player", "early player"),
            title=f"Idiom Solitaire: {table.metric} (s_E / s_L)",
            tick_labels=(
                [f"{p}\nmean s_L {format_number(table.late_mean(p), digits)}" for p in table.players],
                [f"{p}\nmean s_E {format_number(table.early_mean(p), digits)}" for p in table.players],
            ),
            fontsize=9,
        )
    return save_figure(fig, path)


LOSS_CAUSES = ("not an idiom", "wrong first character", "repeat", "judge refused", "format")
"""Why a player lost a chain, in the order the table shows them."""
_BREAK_CAUSE = {
    "not_an_idiom": "not an idiom",
    "wrong_first_char": "wrong first character",
    "repeat": "repeat",
    "judge_refused": "judge refused",
}
_NO_ANSWER = ("invalid", "refusal", "context_overflow", "truncated")


def losses_by_cause(records: Iterable[MatchRecord]) -> dict[str, dict[str, int]]:
    """Per player (sorted), its lost matches by cause (see the module docs); every cause present, 0 when none."""
    out: dict[str, dict[str, int]] = {}
    for record in task_records(records, GAME):
        for name in record.seats:
            out.setdefault(name, dict.fromkeys(LOSS_CAUSES, 0))
        loser = record.metrics.get("broken_by")
        if loser is None or not 0 <= int(loser) < len(record.seats):
            continue
        moves = [t for t in record.turns if t.seat == int(loser)]
        last = Outcome(moves[-1].outcome).value if moves else ""
        cause = "format" if last in _NO_ANSWER else _BREAK_CAUSE.get(str(record.metrics.get("break_reason")), "format")
        out[record.seats[int(loser)]][cause] += 1
    return dict(sorted(out.items()))


def format_losses(losses: dict[str, dict[str, int]]) -> str:
    """The losses-by-cause table as fixed-width text."""
    header = ("player", *LOSS_CAUSES, "lost")
    rows = [(name, *(str(c[k]) for k in LOSS_CAUSES), str(sum(c.values()))) for name, c in losses.items()]
    return "\n".join(["Losses by cause:", *_columns(header, rows)])


def validity_note(variant: str) -> str:
    """One line on who decided what is an idiom in the matches of ``variant`` (a game string)."""
    params = pyspiel.game_parameters_from_string(variant)
    dictionary = params.get("dictionary", "xinhua-1")  # games made before the parameter had that list only
    if params.get("validity") == "dictionary+judge":
        return (
            f"Idiom validity: the dictionary {dictionary}, and the judge ruled on every answer outside it "
            "(the paper's referee, a language model, decided alone)."
        )
    return (
        f"Idiom validity: the dictionary {dictionary} alone; an answer outside it lost as not an idiom (the paper's "
        'referee was a language model: preset "paper" with a [judge] lets the judge rule on such answers).'
    )


def print_tables(
    records: Iterable[MatchRecord], *, players: Sequence[str] | None = None, plot: str | Path | None = None
) -> int:
    """Print the wins per player (Eq. 1) and Tables 1 and 2 of the idiom records (per game variant); with ``plot``
    also save the figure."""
    groups = task_groups(records, GAME)
    if not groups:
        return 1
    for index, (variant, records) in enumerate(groups.items()):
        print(f"{variant} ({len(records)} matches)\n")
        found = headline(records, players)
        if found is not None:
            print(format_headline(found))
            print()
        wins, hits = win_rate_table(records, players), hit_table(records, players)
        print(format_early_late_table(wins, title="Table 1. Idiom Solitaire: win rate"))
        print(format_early_late_intervals(wins))
        print()
        print(format_early_late_table(hits, title="Table 2. Idiom Solitaire: successful hits"))
        print(format_early_late_intervals(hits))
        print()
        print(format_losses(losses_by_cause(records)))
        print(validity_note(variant))
        if plot:
            path = numbered_path(plot, index, len(groups))
            print(f"\nfigure: {plot_early_late_tables([wins, hits], path)}")
        print()
    return 0
