"""clembench's scores of the ``clem:`` games, as its leaderboard gives them, with this project's intervals.

Per game variant (``clem:taboo``, ``clem:wordle(experiment=...)``) and player (and role, for a game of several):

* **episodes**: the matches the player played;
* **% played**: the share of episodes not aborted (clembench's "% played"), a rate with its interval;
* **quality**: the mean ``Main Score`` (0..100) over the episodes played (clembench's quality score), with the
  fixed-n interval of a mean on 0..100;
* **success**: the share of episodes the game counted a success, a rate with its interval;
* **clemscore**: quality times the share played, which is the mean payoff of :mod:`analysis.tables.scores` (an
  aborted episode pays 0), so its interval is the report's.

The numbers come from each record's match metrics (``clem_main_score``, ``clem_aborted``, ``clem_success``: the
clemgame's own scorer, :mod:`game_defs.arena.clembench`); records of other games and aborted matches are left out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.stats.confseq import Interval
from analysis.stats.intervals import LATEST_POLICY, IntervalPolicy
from analysis.tables.payoffs import variant_groups
from analysis.tables.scores import Table
from deepeval_games.core.records import MatchRecord

__all__ = ["GAME", "ClemScores", "clem_scores", "print_tables", "tables"]

GAME = "clem:"
"""The game family these tables are for: every ``clem:<game>`` (a name ending in ``:`` is a family's prefix)."""
MAX_SCORE = 100.0


@dataclass(frozen=True)
class ClemScores:
    """One player's clembench scores in one game variant (and role)."""

    player: str
    role: str
    episodes: int
    played: Interval
    """The share of episodes not aborted."""
    quality: Interval
    """The mean main score over the episodes played (0..100)."""
    success: Interval
    """The share of episodes the game counted a success."""
    clemscore: float
    """Quality times the share played (0..100)."""


def _flag(value: object) -> bool:
    return isinstance(value, (int, float)) and not math.isnan(float(value)) and float(value) > 0


def clem_scores(
    records: Iterable[MatchRecord], *, policy: IntervalPolicy = LATEST_POLICY
) -> dict[str, list[ClemScores]]:
    """Per game variant of a ``clem:`` game, each player's (and role's) scores, sorted by player and role, with the
    intervals of ``policy`` (a task's tables are not given the run's: the latest version's fixed-n methods)."""
    mine = [r for r in records if r.status == "complete" and r.game.startswith(GAME)]
    out: dict[str, list[ClemScores]] = {}
    for variant, group in variant_groups(mine).items():
        episodes: dict[tuple[str, str], list[MatchRecord]] = defaultdict(list)
        for record in group:
            roles = record.roles or ["player"] * len(record.seats)
            for seat, player in enumerate(record.seats):
                episodes[(player, roles[seat] if seat < len(roles) else "player")].append(record)
        rows = []
        for (player, role), played_in in sorted(episodes.items()):
            aborted = [_flag(r.metrics.get("clem_aborted")) for r in played_in]
            mains = [
                float(r.metrics["clem_main_score"])
                for r, stop in zip(played_in, aborted, strict=True)
                if not stop and isinstance(r.metrics.get("clem_main_score"), (int, float))
            ]
            successes = sum(_flag(r.metrics.get("clem_success")) for r in played_in)
            played = policy.rate_interval(len(played_in) - sum(aborted), len(played_in))
            quality = policy.mean_interval([min(MAX_SCORE, max(0.0, m)) for m in mains], 0.0, MAX_SCORE)
            clemscore = sum(mains) / len(played_in) if played_in else math.nan
            rows.append(
                ClemScores(
                    player,
                    role,
                    len(played_in),
                    played,
                    quality,
                    policy.rate_interval(successes, len(played_in)),
                    clemscore,
                )
            )
        out[variant] = rows
    return out


def _share(value: Interval) -> str:
    if math.isnan(value.mean):
        return "n/a"
    return f"{100 * value.mean:.0f}% [{100 * value.low:.0f}, {100 * value.high:.0f}]"


def _mean(value: Interval) -> str:
    if math.isnan(value.mean):
        return "n/a"
    return f"{value.mean:.1f} [{value.low:.1f}, {value.high:.1f}]"


NOTE = (
    "clembench's scores from the clemgame's own scorer: % played (episodes not aborted), quality (mean main score "
    "over the episodes played, 0..100), success (episodes won), clemscore (quality x share played, the mean payoff). "
    "Brackets: 95% intervals for the number of episodes played (Clopper-Pearson for the shares, the betting interval "
    "on 0..100 for quality)."
)


def _table(variant: str, rows: Sequence[ClemScores]) -> Table:
    cells = tuple(
        (
            r.player,
            r.role,
            str(r.episodes),
            _share(r.played),
            _mean(r.quality),
            _share(r.success),
            "n/a" if math.isnan(r.clemscore) else f"{r.clemscore:.1f}",
        )
        for r in rows
    )
    header = ("player", "role", "episodes", "% played", "quality", "success", "clemscore")
    return Table("clembench_scores", f"clembench scores: {variant}", header, cells, NOTE)


def tables(records: Iterable[MatchRecord]) -> list[Table]:
    """The clembench table of every ``clem:`` game variant of ``records``."""
    return [_table(variant, rows) for variant, rows in clem_scores(records).items()]


def format_table(table: Table) -> str:
    """A table as fixed-width text, its note under it."""
    widths = [max(len(row[i]) for row in (table.header, *table.rows)) for i in range(len(table.header))]
    lines = [table.title]
    lines += [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (table.header, *table.rows)
    ]
    return "\n".join([*lines, table.note])


def print_tables(
    records: Iterable[MatchRecord], *, players: Sequence[str] | None = None, plot: str | Path | None = None
) -> int:
    """Print the clembench table of every ``clem:`` game variant (``players`` keeps and orders rows; no figure).
    Returns 1 when there are no ``clem:`` matches."""
    found = tables(records)
    if not found:
        print("no clem: matches")
        return 1
    for table in found:
        rows = table.rows
        if players:
            rows = tuple(row for name in players for row in table.rows if row[0] == name)
        print(format_table(Table(table.key, table.title, table.header, rows, table.note)))
        print()
    return 0
