"""The report's sections of scores: Eq. 1 / Eq. 2 (or the task's own headline) with the one interval of each mean
that is valid for how the run was collected, ratings, two-player metrics and the fixed-sample stableness check. Each
registers on import (:func:`~deepeval_games.app.reports.sections.section`)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from deepeval_games.app.reports.sections import Block, ReportContext, section, table_block
from deepeval_games.app.reports.task_tables import variant_tables
from deepeval_games.core.records import MatchRecord

if TYPE_CHECKING:
    from analysis.stats.intervals import IntervalPolicy
    from analysis.tables.scores import Headline, Score


def _symmetric(records: Sequence[MatchRecord]) -> bool:
    return all(set(r.roles) <= {"player"} for r in records)


def _headline(ctx: ReportContext) -> Headline | None:
    """The task's own headline score from its tables module, or None (the default Eq. 1 / Eq. 2 table)."""
    for _, module in variant_tables(ctx.variant):
        found = getattr(module, "headline", None)
        if callable(found):
            return cast("Headline | None", found(ctx.records))
    return None


SCORES_TITLES = ("Mean payoff per player (the paper's Eq. 1)", "Mean payoff per player and role (the paper's Eq. 2)")
"""The titles of the default score tables: symmetric tasks, asymmetric ones."""


INTERVAL_HEADER = "95% interval"
"""The column of a mean's interval, on every surface (its caption says which kind it is)."""


@section("scores", "Scores", core=True)
def _scores(ctx: ReportContext) -> list[Block]:
    from analysis.stats.intervals import mean_caption
    from analysis.tables.payoffs import INTERVAL_NOTE, format_interval, format_scores
    from analysis.tables.scores import role_scores, symmetric_scores

    headline, note, caption = _headline(ctx), "", INTERVAL_NOTE
    if headline is not None:
        scores, title, note = headline.scores, headline.title, headline.note
    elif _symmetric(ctx.records):
        scores, title = symmetric_scores(ctx.records, policy=ctx.policy), SCORES_TITLES[0]
    else:
        scores, title = role_scores(ctx.records, policy=ctx.policy), SCORES_TITLES[1]
    if not scores:
        return []
    told: list[Block] = []
    if headline is None:
        roles: dict[str | None, int] = {}
        for s in scores:
            roles[s.role] = roles.get(s.role, 0) + 1
        policy = ctx.policy
        caption = mean_caption(policy, players=max(roles.values()), fewest=min(s.n for s in scores), paired=True)
        told = _told_apart(ctx.records, scores, policy)
    with_role = any(s.role is not None for s in scores)
    header = ("player", *(("role",) if with_role else ()), "matches", "mean", "std", INTERVAL_HEADER, "min", "max")
    rows = tuple(
        (
            s.player,
            *((s.role or "",) if with_role else ()),
            str(s.n),
            f"{s.mean:.2f}",
            f"{s.std:.2f}",
            format_interval(s.ci_low, s.ci_high),
            f"{s.min:.2f}",
            f"{s.max:.2f}",
        )
        for s in scores
    )
    text = format_scores(scores, title=title, note=caption) + (f"\n{note}" if note else "")
    return [Block("scores", title, text=text, header=header, rows=rows, note=caption), *told]


TOLD_APART_TITLE = "Who is told apart"
"""The title of the verdicts under a table of means."""


def _told_apart(records: Sequence[MatchRecord], scores: Sequence[Score], policy: IntervalPolicy) -> list[Block]:
    """Every pair of players of each ranking, told apart or not: compared where they met (who finished ahead in their
    shared matches: :mod:`analysis.stats.pairs`), or by their means' intervals where they never met."""
    from analysis.stats.pairs import comparisons, pair_count, shared_points

    players: dict[str, list[Score]] = {}
    for score in scores:
        players.setdefault(score.role or "player", []).append(score)
    compared = comparisons(shared_points(records), policy, {role: len(group) for role, group in players.items()})
    rows: list[tuple[str, str, str]] = []
    apart: list[tuple[str, str]] = []
    not_apart: list[tuple[str, str]] = []
    for role, group in players.items():
        for a, b in itertools.combinations(group, 2):  # best first, as the table ranks them
            first, second = sorted((a.player, b.player))
            comparison = compared.get((role, (first, second)))
            overlap = a.ci_low <= b.ci_high and b.ci_low <= a.ci_high
            high, low = (a, b) if a.mean >= b.mean else (b, a)
            if comparison is not None:  # where they met: who finished ahead, or (failing that) the means apart
                line, told = comparison.describe(), comparison.told_apart or not overlap
                if told and not comparison.told_apart:
                    line = f"{high.player} above {low.player}: their means' intervals do not overlap ({line})"
            else:
                line = f"{high.player} and {low.player} never met: " + (
                    "their means' intervals overlap"
                    if overlap
                    else f"{high.player}'s mean is above, the intervals apart"
                )
                told = not overlap
            (apart if told else not_apart).append(("  " + line, role))
            rows.append((role, line, "told apart" if told else "not yet"))
    if not rows:
        return []
    kind = (
        "valid although the run looked at its results to decide when to stop"
        if policy.anytime
        else "for the number of matches fixed in advance"
    )
    pairs = max(pair_count(len(group)) for group in players.values())
    with_role = len(players) > 1
    ranking = "each role's ranking" if with_role else "a ranking"
    head = (
        f"{TOLD_APART_TITLE} (compared where they met: who finished ahead in the matches both played, ties counting "
        f"half; 95% for all {pairs} pairs of {ranking} at once, {kind}):"
    )
    lines = [head, "told apart:" if apart else "told apart: no pair"]
    lines += [line + (f" [{role}]" if with_role else "") for line, role in apart]
    if not_apart:
        lines.append("not told apart yet:")
        lines += [line + (f" [{role}]" if with_role else "") for line, role in not_apart]
    header = ("role", "pair", "verdict")
    return [Block("told_apart", TOLD_APART_TITLE, text="\n".join(lines), header=header, rows=tuple(rows), note=head)]


BT_MEANING = (
    "Bradley–Terry rating, Elo scale centred on 0 (a player 100 points above another is expected to score 64% of the "
    "points between them, 200 points 76%; a win scores 1, a draw 1/2)"
)
"""What a Bradley–Terry rating means, in one line."""
PL_MEANING = (
    "Plackett–Luce rating, Elo scale centred on 0 (a player 100 points above another finishes ahead of it 64% of the "
    "time), from the order in which the players finished each match; who is told apart is said with the mean payoffs"
)
"""What a Plackett–Luce rating means, in one line."""


@section("ratings", "Ratings", core=True)
def _ratings(ctx: ReportContext) -> list[Block]:
    """Bradley–Terry with intervals (two seats, one role), Plackett–Luce (more seats, one role), Bradley–Terry
    per role from paired comparisons (asymmetric tasks), and α-Rank where the seatings allow it
    (:mod:`analysis.stats.ratings`)."""
    from analysis import views
    from analysis.stats import ratings

    done = views.complete(ctx.records)  # (the summary's columns select themselves: no list of records)
    if not done:
        return []
    blocks = []
    if not _symmetric(done):
        per_role = ratings.role_ratings(done)
        rows = tuple(
            (role, p, f"{v:+.0f}")
            for role, table in per_role.items()
            for p, v in sorted(table.items(), key=lambda item: -item[1])
        )
        if rows:
            text = "Bradley–Terry rating per role (Elo scale, paired comparisons): " + "; ".join(
                f"{role}: " + ", ".join(f"{p} {v:+.0f}" for p, v in sorted(t.items(), key=lambda i: -i[1]))
                for role, t in per_role.items()
            )
            title = "Bradley–Terry rating per role (Elo scale)"
            blocks.append(Block("ratings", title, text=text, header=("role", "player", "rating"), rows=rows))
    elif all(len(r.seats) == 2 for r in done):
        points = ratings.points_share(done, policy=ctx.policy)
        rated = sorted(ratings.bradley_terry(done).items(), key=lambda item: -item[1])
        shares = {p: f"{points[p].mean:.2f} [{points[p].low:.2f}, {points[p].high:.2f}]" for p, _ in rated}
        text = f"{BT_MEANING}, with each player's points share and its 95% interval: " + ", ".join(
            f"{p} {v:+.0f} (points {shares[p]})" for p, v in rated
        )
        rows = tuple((p, f"{v:+.0f}", shares[p]) for p, v in rated)
        title = "Bradley–Terry rating (Elo scale)"
        blocks.append(
            Block("ratings", title, text=text, header=("player", "rating", "points share [95% interval]"), rows=rows)
        )
    else:
        pl = sorted(ratings.plackett_luce(done).items(), key=lambda item: (-item[1].mu, item[0]))
        text = f"{PL_MEANING}: " + ", ".join(f"{p} {r.mu:+.0f}" for p, r in pl)
        pl_rows = tuple((p, f"{r.mu:+.0f}", str(r.matches)) for p, r in pl)
        header = ("player", "rating", "matches")
        blocks.append(Block("ratings", "Plackett–Luce rating", text=text, header=header, rows=pl_rows))
    try:  # α-Rank needs every seating with replacement (pairing "self_play"); without it there is none
        ranked = ratings.alpha_rank_records(done)
    except (ValueError, KeyError, IndexError):
        return blocks
    rows = tuple((role, p, f"{mass:.3f}") for role, order in ranked.ranking.items() for p, mass in order)
    text = "α-Rank (stationary mass): " + "; ".join(
        f"{role}: " + ", ".join(f"{p} {m:.3f}" for p, m in order) for role, order in ranked.ranking.items()
    )
    blocks.append(Block("alpha_rank", "α-Rank", text=text, header=("population", "player", "mass"), rows=rows))
    return blocks


@section("two_player", "Wins, draws, losses and advantage per pair of players", core=True)  # two_player.TITLE
def _two_player(ctx: ReportContext) -> list[Block]:
    from analysis.tables.two_player import TITLE, format_two_player, two_player_summary, two_player_tables

    if not ctx.records or not all(len(r.seats) == 2 for r in ctx.records) or not _symmetric(ctx.records):
        return []
    summary = two_player_summary(ctx.records, policy=ctx.policy)
    text = format_two_player(ctx.records, summary=summary)
    if not summary.matches:
        return [Block("two_player", TITLE, text=text)]
    pairs, *rest = two_player_tables(summary)
    return [table_block(pairs, text), *(table_block(table) for table in rest)]  # the text says all the tables


@section("stableness", "Stableness", core=True)
def _stableness(ctx: ReportContext) -> list[Block]:
    from analysis.stats.convergence import stableness

    if ctx.epsilon is None or not ctx.records:
        return []
    check = stableness(ctx.records, epsilon=ctx.epsilon)
    verdict = "stable" if check.stable else "not yet stable"
    text = (
        f"Stableness (epsilon={ctx.epsilon}): {verdict} — {check.reason} (a fixed-sample check: looked at again "
        "after more matches it is not valid under repeated looks)"
    )
    rows = tuple((name, f"{half:.3f}") for name, half in sorted(check.half_widths.items()))
    return [Block("stableness", text, text=text, header=("player", "95% interval half-width"), rows=rows)]
