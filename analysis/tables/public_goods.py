"""Game-theoretic reference points for the Public Goods Game, measured from match records.

Payoffs alone do not say whether a player is "cooperative" or "rational": a free rider's payoff depends on who it
played with. This module measures play against the game's two reference profiles instead:

* the **Nash profile**: with ``alpha < n`` investing nothing is a dominant strategy, so the unique equilibrium is
  "invest 0" in every round (with ``alpha > n`` investing everything dominates; with ``alpha == n`` every
  investment is a best reply and there is no reference);
* the **social optimum**: with ``alpha > 1`` the total payoff is largest when everyone invests everything (with
  ``alpha < 1`` when nobody invests; ``alpha == 1`` has no reference).

A player's *distance* to a profile is the mean, over every round it played, of ``|investment - reference| / E``:
0 when it always plays the profile's move, 1 when it always plays the opposite extreme. A forfeited round counts as
an investment of 0 (the forfeit puts nothing in the pool). Per-round *contribution curves* give each player's mean
investment in round 1, 2, ... . Everything is per game variant (mode 1 and mode 2 apart, never pooled) and read
from the records alone: the game string's parameters and the turns' actions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyspiel

from analysis.tables.payoffs import cut_label, save_figure, variant_groups
from analysis.tables.scores import Table
from deepeval_games.core.records import MatchRecord

__all__ = [
    "GAME",
    "PlayerReference",
    "format_reference_table",
    "plot_contribution_curves",
    "print_tables",
    "reference_points",
    "reference_table",
    "tables",
]

GAME = "deepeval_public_goods"
FIGURE_TITLE = "Contributions per round, beside the Nash and social-optimum investments"
"""The title the HTML report gives this module's figure."""
"""The task these reference points are for (``deepeval-games tables pgg RUN_DIR``)."""


@dataclass(frozen=True)
class PlayerReference:
    """One player's play in one game variant, against the reference profiles."""

    player: str
    rounds_played: int
    """Rounds the player played (one per seat it held per match)."""
    curve: tuple[float, ...]
    """Mean investment in round 1, 2, ... (coins)."""
    mean_investment: float
    """Mean investment over every round (coins)."""
    nash_distance: float | None
    """Mean ``|investment - Nash investment| / E``; None when the game has no dominant investment (alpha == n)."""
    optimum_distance: float | None
    """Mean ``|investment - social-optimum investment| / E``; None when alpha == 1."""


def _parameters(game: str) -> tuple[int, int, float, int]:
    """(players, endowment, alpha, rounds) from a canonical game string."""
    params = pyspiel.game_parameters_from_string(game)
    return int(params["players"]), int(params["endowment"]), float(params["alpha"]), int(params["rounds"])


def _reference(alpha: float, threshold: float, endowment: int) -> int | None:
    """The investment a profile prescribes: 0 below ``threshold``, E above it, None at it."""
    if alpha < threshold:
        return 0
    if alpha > threshold:
        return endowment
    return None


def reference_points(records: Iterable[MatchRecord]) -> dict[str, list[PlayerReference]]:
    """Per game variant of the Public Goods Game, each player's contribution curve and its distances to the Nash
    profile and the social optimum, sorted by player name. Records of other games and aborted matches are ignored.
    """
    out: dict[str, list[PlayerReference]] = {}
    mine = [r for r in records if r.status == "complete" and r.game.split("(", 1)[0].strip() == GAME]
    for variant, group in variant_groups(mine).items():
        n, endowment, alpha, rounds = _parameters(group[0].game)
        nash, optimum = _reference(alpha, n, endowment), _reference(alpha, 1.0, endowment)
        by_round: dict[str, list[list[int]]] = defaultdict(list)
        for record in group:
            for turn in record.turns:
                if turn.seat < 0 or not 1 <= turn.round <= rounds:
                    continue
                invested = 0 if turn.action > endowment else int(turn.action)  # E + 1 is the referee's forfeit
                per_round = by_round[record.seats[turn.seat]]
                per_round.extend([] for _ in range(rounds - len(per_round)))
                per_round[turn.round - 1].append(invested)
        rows = []
        for player in sorted(by_round):
            per_round = by_round[player]
            flat = np.asarray([x for values in per_round for x in values], dtype=float)
            rows.append(
                PlayerReference(
                    player=player,
                    rounds_played=int(flat.size),
                    curve=tuple(float(np.mean(v)) if v else float("nan") for v in per_round),
                    mean_investment=float(flat.mean()),
                    nash_distance=None if nash is None else float(np.mean(np.abs(flat - nash)) / endowment),
                    optimum_distance=None if optimum is None else float(np.mean(np.abs(flat - optimum)) / endowment),
                )
            )
        out[variant] = rows
    return out


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def reference_table(variant: str, rows: Sequence[PlayerReference]) -> Table:
    """The reference points of one variant as a table: each player's mean investment, its distances to the Nash
    profile and the social optimum, and its contribution curve."""
    cells = tuple(
        (
            r.player,
            f"{r.mean_investment:.2f}",
            _number(r.nash_distance),
            _number(r.optimum_distance),
            " ".join(f"{c:4.1f}" for c in r.curve),
        )
        for r in rows
    )
    header = ("player", "mean", "to Nash", "to optimum", "contribution per round")
    return Table("pgg_reference", f"PGG reference points: {variant}", header, cells)


def format_reference_table(variant: str, rows: Sequence[PlayerReference]) -> str:
    """:func:`reference_table` as fixed-width text."""
    table = reference_table(variant, rows)
    width = max([len("player"), *(len(r.player) for r in rows)])
    lines = [table.title]
    for p, mean, nash, optimum, curve in [table.header, *table.rows]:
        lines.append(f"{p:<{width}}  {mean:>5}  {nash:>7}  {optimum:>10}  {curve}")
    return "\n".join(lines)


def tables(records: Iterable[MatchRecord]) -> list[Table]:
    """The reference-point table of every PGG variant of ``records`` (what the HTML report draws as tables)."""
    return [reference_table(variant, rows) for variant, rows in reference_points(records).items()]


def plot_contribution_curves(points: dict[str, list[PlayerReference]], path: str | Path) -> Path:
    """Draw every player's per-round contribution curve, one panel per game variant, with the Nash and
    social-optimum investments as dashed lines; save the figure to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    count = max(1, len(points))
    figure, axes = plt.subplots(1, count, figsize=(5.5 * count, 4.0), squeeze=False, sharey=True)
    for axis, (variant, rows) in zip(axes[0], sorted(points.items()), strict=False):
        params = pyspiel.game_parameters_from_string(variant)
        endowment, alpha, n = int(params["endowment"]), float(params["alpha"]), int(params["players"])
        for r in rows:
            axis.plot(range(1, len(r.curve) + 1), r.curve, marker="o", label=cut_label(r.player))
        for value, label, style in (
            (_reference(alpha, n, endowment), "Nash", ":"),
            (_reference(alpha, 1.0, endowment), "social optimum", "--"),
        ):
            if value is not None:
                axis.axhline(value, color="grey", linestyle=style, linewidth=1)
                axis.annotate(label, (1, value), textcoords="offset points", xytext=(2, 3), fontsize=8, color="grey")
        axis.set_title(f"mode {params.get('mode', '?')}, alpha={alpha:g}, n={n}", fontsize=10)
        axis.set_xlabel("round")
        axis.set_ylim(-0.5, endowment + 0.5)
        axis.xaxis.get_major_locator().set_params(integer=True)
    axes[0][0].set_ylabel("mean investment (coins)")
    # right of the last panel, off the curves (the figure is saved with a tight bounding box)
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0, frameon=False)
    figure.suptitle("Public Goods Game: contributions per round")
    figure.tight_layout()
    try:
        return save_figure(figure, path)
    finally:
        plt.close(figure)


def print_tables(
    records: Iterable[MatchRecord], *, players: Sequence[str] | None = None, plot: str | Path | None = None
) -> int:
    """Print the reference-point table of every PGG variant (``players`` keeps and orders rows); with ``plot`` also
    save the contribution curves. Returns 1 when there are no PGG matches."""
    points = reference_points(records)
    if not points:
        print(f"no {GAME} matches")
        return 1
    if players:
        order = {name: i for i, name in enumerate(players)}
        points = {
            v: sorted((r for r in rows if r.player in order), key=lambda r: order[r.player])
            for v, rows in points.items()
        }
    for variant, rows in points.items():
        print(format_reference_table(variant, rows))
        print()
    if plot:
        print(f"figure: {plot_contribution_curves(points, plot)}")
    return 0
