"""A leaderboard over any number of run directories (``deepeval-games leaderboard DIR...``).

Committed matches of every run are merged, a match id seen in several directories once (a complete record wins
over an aborted one). Players are keyed by identity, not by name: a player's identity is its spec entry (name,
bot or model, the settings that change play, as in match ids) together with what its seat recorded (the bot's
kind, prompt version, the sampling settings the user chose). The same identity under the same name in two runs is
one row; two identities under one name (the same model with another temperature, say) are two rows, labelled by what
differs.

Each table is one game variant (data items pooled) and one role (``player`` for symmetric games), with per
player: the matches behind the row, the mean payoff (Eq. 1 / Eq. 2) with the one 95% interval that ``report`` prints
for it (:mod:`analysis.tables.scores`: anytime-valid where a stopping rule decided when a run stopped, fixed-n where
the number of matches was set in advance), and a rating as a point estimate (:mod:`analysis.stats.ratings`:
Bradley–Terry for two seats, Plackett–Luce for more, Bradley–Terry from paired comparisons per role for asymmetric
tasks). Rows are ranked by the mean. A seat's recorded identity is read without what the engine derived for its match
(:func:`~deepeval_games.core.records.player_identity`: a model's per-match sampling seed), so a model is one row
however many matches it played. Every statistic reads the records in the order of repetition, so the table depends
on which matches were merged, never on how they were split into directories.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepeval_games.app.reports.runs import (
    RunSource,
    SeatIdentities,
    identity_labels,
    open_runs,
    spec_intervals,
    stream_records,
)
from deepeval_games.core.errors import DeepEvalError
from deepeval_games.core.records import MatchRecord
from deepeval_games.core.registry.games import game_variant

if TYPE_CHECKING:
    from analysis.stats.intervals import IntervalPolicy

__all__ = ["Leaderboard", "Row", "build_leaderboard", "format_leaderboard", "merged_records"]

COLUMNS = (
    "task",
    "role",
    "player",
    "differs",
    "matches",
    "mean",
    "ci_low",
    "ci_high",
    "ci_kind",
    "ci_method",
    "rating",
    "rating_kind",
)
"""The columns of ``--format csv`` (and the keys of each row of ``--format json``)."""


@dataclass(frozen=True)
class Row:
    """One player in one task and role."""

    task: str
    role: str
    player: str
    """The row's name: the player's name, with what sets it apart when another identity shares that name."""
    differs: str
    """How this identity differs from the others of the same name in the table (``""`` when none shares it)."""
    matches: int
    mean: float
    ci_low: float
    """The 95% interval of the mean: the one that is valid for how the runs were collected (as ``report`` prints it:
    :class:`~analysis.stats.intervals.IntervalPolicy`)."""
    ci_high: float
    ci_kind: str
    """``anytime`` (a stopping rule looked at the results: the anytime-valid interval at the stopping time, its
    level shared by the players of the table) or ``fixed`` (a number of matches fixed in advance)."""
    ci_method: str
    """The interval method (name/version) of ``ci_low`` and ``ci_high``, for the methods section of a paper."""
    rating: float | None
    """A rating on the Elo scale (``rating_kind``), a point estimate: which players are told apart is read from the
    intervals of the means."""
    rating_kind: str
    identity: dict[str, Any]


@dataclass(frozen=True)
class Leaderboard:
    """Every row, sorted by task, role and mean (best first), with what was merged."""

    rows: list[Row]
    runs: int
    matches: int
    """Distinct matches merged (complete or aborted)."""
    duplicates: int
    """Records skipped because their match id was already merged from another directory."""


def merged_records(runs: Sequence[RunSource]) -> tuple[list[MatchRecord], dict[str, dict[str, Any]], int]:
    """The committed records of ``runs``, one per match id (:func:`~deepeval_games.app.reports.runs.stream_records`:
    the report's rule), in the order of repetition (repeat, game, match id), each seat renamed to its identity key;
    the identities by key; and how many duplicates were left out."""
    merged: dict[str, MatchRecord] = {}
    seats = SeatIdentities()
    duplicates = 0

    def duplicate(run: RunSource, record: MatchRecord) -> None:
        nonlocal duplicates
        duplicates += 1

    for run, record in stream_records(runs, on_duplicate=duplicate):
        record.seats = seats.keys(run, record)
        merged[record.match_id] = record
    ordered = sorted(merged.values(), key=lambda r: (r.repeat, r.game, r.match_id))
    return ordered, seats.identities, duplicates


def _ratings(records: list[MatchRecord], role: str, symmetric: bool) -> tuple[str, dict[str, float]]:
    """(kind, identity key -> rating) for one table's records."""
    from analysis.stats import ratings

    if not symmetric:
        return "Bradley-Terry per role (Elo scale)", dict(ratings.role_ratings(records).get(role, {}))
    if all(len(r.seats) == 2 for r in records):
        return "Bradley-Terry (Elo scale)", dict(ratings.bradley_terry(records))
    return "Plackett-Luce (Elo scale)", {k: r.mu for k, r in ratings.plackett_luce(records).items()}


def _table(
    task: str, records: list[MatchRecord], role_filter: str | None, intervals: IntervalPolicy
) -> list[tuple[str, str, dict[str, Any]]]:
    """(role, identity key, statistics) of every player of one task, its 95% interval by the runs' policy
    ``intervals`` (:func:`~deepeval_games.app.reports.runs.spec_intervals`), resolved once for the task's games:
    what ``report`` prints."""
    from analysis.tables.scores import role_scores, symmetric_scores

    done = [r for r in records if r.status == "complete"]
    symmetric = all(len(set(r.roles or ["player"])) <= 1 for r in done)
    policy = intervals.for_records(done)
    scores = symmetric_scores(done, policy=policy) if symmetric else role_scores(done, policy=policy)
    out = []
    roles = sorted({s.role or "player" for s in scores})
    for role in roles:
        if role_filter is not None and role != role_filter:
            continue
        kind, rated = _ratings(done, role, symmetric)
        for score in scores:
            if (score.role or "player") != role:
                continue
            rating = rated.get(score.player)
            stats = {
                "matches": score.n,
                "mean": score.mean,
                "ci_low": score.ci_low,
                "ci_high": score.ci_high,
                "ci_kind": "anytime" if policy.anytime else "fixed",
                "ci_method": policy.mean,
                "rating": rating,
                "rating_kind": kind if rating is not None else "",
            }
            out.append((role, score.player, stats))
    return out


def build_leaderboard(
    run_dirs: Sequence[str | Path], *, task: str | None = None, role: str | None = None
) -> Leaderboard:
    """The leaderboard of the committed matches of ``run_dirs`` (see the module docstring); ``task`` keeps one game
    variant (its name without data-item parameters, or the game's short name), ``role`` one role.

    Raises:
        DeepEvalError: a directory holds no results, or ``task`` / ``role`` matches nothing.
    """
    runs = open_runs(run_dirs)
    intervals = spec_intervals(runs)
    records, identities, duplicates = merged_records(runs)
    by_task: dict[str, list[MatchRecord]] = defaultdict(list)
    for record in records:
        variant = game_variant(record.game)
        if task is None or task in (variant, variant.split("(", 1)[0]):
            by_task[variant].append(record)
    if task is not None and not by_task:
        raise DeepEvalError(f"no match of task {task!r} in {', '.join(map(str, run_dirs))}")
    rows = []
    for variant, subset in sorted(by_task.items()):
        table = _table(variant, subset, role, intervals)
        labels = identity_labels((key for _, key, _ in table), identities)
        for row_role, key, stats in table:
            name, differs = labels[key]
            rows.append(Row(variant, row_role, name, differs, identity=identities[key], **stats))
    if role is not None and not rows:
        raise DeepEvalError(f"no player in role {role!r}")
    rows.sort(key=lambda r: (r.task, r.role, -r.mean, r.player))
    return Leaderboard(rows, runs=len(runs), matches=len(records), duplicates=duplicates)


def _number(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


LEADERBOARD_INTERVALS = {
    "anytime": "95% interval: where each player's true mean payoff lies, with 95% confidence for the players of a "
    "table at once; valid although the runs looked at their results to decide when to stop. A rating is a point "
    "estimate; which players are told apart, compared where they met, is said by 'deepeval-games report'",
    "fixed": "95% interval: where each player's true mean payoff lies, with 95% confidence, for the number of "
    "matches fixed in advance. A rating is a point estimate; which players are told apart, compared where they met, "
    "is said by 'deepeval-games report'",
    "mixed": "95% intervals: anytime-valid where a stopping rule decided when a run stopped, fixed-n elsewhere. "
    "Which players are told apart, compared where they met, is said by 'deepeval-games report'",
}
"""What the leaderboard's intervals are, said once under the tables, by their kind."""


def _runs(count: int) -> str:
    return f"{count} run director{'y' if count == 1 else 'ies'}"


def format_leaderboard(board: Leaderboard, fmt: str = "text") -> str:
    """The leaderboard as ``text`` (a table per task and role), ``csv`` (:data:`COLUMNS`) or ``json``."""
    if fmt == "json":
        return json.dumps(
            {
                "runs": board.runs,
                "matches": board.matches,
                "duplicates": board.duplicates,
                "rows": [asdict(row) for row in board.rows],
            },
            indent=1,
            default=str,
        )
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(COLUMNS)
        for row in board.rows:
            data = asdict(row)
            writer.writerow(["" if data[c] is None else data[c] for c in COLUMNS])
        return buffer.getvalue()
    lines = [
        f"Leaderboard: {board.matches} matches from {_runs(board.runs)}"
        + (
            f" ({board.duplicates} copies of matches already read from another directory left out)"
            if board.duplicates
            else ""
        )
    ]
    current = None
    width = max([len(row.player) for row in board.rows] + [6])
    for row in board.rows:
        if (row.task, row.role) != current:
            current = (row.task, row.role)
            lines.append("")
            lines.append(row.task + (f" [{row.role}]" if row.role != "player" else ""))
            lines.append(f"  {'player':<{width}}  {'matches':>7}  {'mean':>8}  {'95% interval':<19} rating")
        rating = "" if row.rating is None else f"{row.rating:+.0f}"
        lines.append(
            f"  {row.player:<{width}}  {row.matches:>7}  {row.mean:>8.3f}  "
            f"{f'[{row.ci_low:.2f}, {row.ci_high:.2f}]':<19} {rating}"
        )
    kinds = {row.ci_kind for row in board.rows}
    if kinds:
        lines.append("")
        lines.append(f"({LEADERBOARD_INTERVALS[kinds.pop() if len(kinds) == 1 else 'mixed']})")
    ratings = sorted({row.rating_kind for row in board.rows if row.rating_kind})
    if ratings:
        lines.append("Ratings: " + "; ".join(ratings))
    return "\n".join(lines)
