"""Bench: ``pairing = "active"`` against round robins, on 16 synthetic players of known strength.

    python -m bench.bench_active [--runs 200] [--players 16] [--step 40] [--epsilon 2.4] [--top 4]
        [--top-epsilon 1.1] [--max-rounds 400] [--rr R]

The players play a two-seat win/draw/loss game (payoffs -1, 0, 1): player ``i`` has a known Elo-scale strength
``i * step``, beats ``j`` with the Bradley–Terry probability ``1 / (1 + 10 ** ((s_j - s_i) / 400))`` and never
draws. Outcomes are drawn directly (no engine), so the schedules and rules are measured alone; what the runner adds
(the records, the store) does not change which seatings are chosen.

* ``round robin, R repeats``: every ordered pair plays R times; players are ranked by mean payoff (in a complete,
  balanced round robin the Bradley–Terry fit orders players by their totals, so this is its best ranking too).
* ``active``: :class:`analysis.stats.active.ActiveRanking`, the rule that ``pairing = "active"`` drives: the first round
  plays every seating, later rounds play each unresolved adjacent pair of the current Bradley–Terry order in both
  seat orders, until every adjacent pair is separated or its anytime-valid head-to-head interval is narrower than
  ``epsilon`` (``top_epsilon`` at the boundary of the top ``top``), or ``max_rounds``; players are ranked by the
  rule's Bradley–Terry scores.

A run is *accurate* when the ranking's Kendall tau to the true order is at least 0.9 and its top 4 are the true top 4
(as a set). It prints, per schedule: the share of accurate runs, the mean matches, and (active) the share of runs
that separated some pair in the wrong order; then the smallest round robin accurate in 95% of runs and the active
rule's matches as a share of it. Exit status 1 when the active rule is accurate in fewer than 95% of runs, makes a
wrong separation in more than 5%, or uses more than 40% of that round robin's matches.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import dataclass

import numpy as np

from analysis.stats.active import ActiveRanking
from analysis.stats.stopping import Seating


def kendall_tau(order: list[int], truth: list[int]) -> float:
    """Kendall's tau between two orderings of the same items (no ties)."""
    rank = {item: i for i, item in enumerate(truth)}
    positions = [rank[item] for item in order]
    concordant = discordant = 0
    for a, b in itertools.combinations(range(len(positions)), 2):
        if positions[a] < positions[b]:
            concordant += 1
        else:
            discordant += 1
    return (concordant - discordant) / max(1, concordant + discordant)


def accurate(order: list[int], truth: list[int]) -> bool:
    """Kendall tau >= 0.9 and the right top 4."""
    return kendall_tau(order, truth) >= 0.9 and set(order[:4]) == set(truth[:4])


def _win_matrix(strengths: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + 10.0 ** ((strengths[None, :] - strengths[:, None]) / 400.0))


def round_robin(rng: np.random.Generator, strengths: np.ndarray, repeats: int) -> tuple[list[int], int]:
    """(order best first, matches) of a round robin with ``repeats`` repeats."""
    n = len(strengths)
    p = _win_matrix(strengths)
    # ordered pairs (i, j), i != j, each `repeats` times; the game has no first-mover edge, so each is a draw of p
    wins = rng.binomial(repeats, p)
    np.fill_diagonal(wins, 0)
    games = repeats * np.ones((n, n))
    np.fill_diagonal(games, 0)
    payoff = (2 * wins - games).sum(axis=1) + (games - 2 * wins).sum(axis=0)  # as first seat and as second
    mean = payoff / (4 * repeats * (n - 1))
    order = sorted(range(n), key=lambda i: (-mean[i], rng.random()))
    return order, repeats * n * (n - 1)


@dataclass(frozen=True)
class ActiveRun:
    order: list[int]
    matches: int
    wrong: bool
    reason: str


def active(
    rng: np.random.Generator,
    strengths: np.ndarray,
    *,
    epsilon: float,
    max_rounds: int,
    alpha: float = 0.05,
    top: int | None = None,
    top_epsilon: float | None = None,
) -> ActiveRun:
    """One run of the active schedule (the rule ``pairing = "active"`` drives)."""
    n = len(strengths)
    p = _win_matrix(strengths)
    names = [f"p{i:02d}" for i in range(n)]
    rule = ActiveRanking(
        {"g": (-1.0, 1.0)},
        alpha=alpha,
        epsilon=epsilon,
        initial_rounds=1,
        max_rounds=max_rounds,
        top=top,
        top_epsilon=top_epsilon,
    )
    pairs = list(itertools.permutations(range(n), 2))
    round_number = 0
    while rule.report.reason == "running":
        seatings = [
            Seating(f"{round_number}-{a}-{b}", "g", (names[a], names[b]), ("player", "player")) for a, b in pairs
        ]
        for seating in rule.begin_round(seatings):
            a, b = (int(name[1:]) for name in seating.seats)
            first = 1.0 if rng.random() < p[a, b] else -1.0
            rule.add(seating.match_id, (first, -first))
        rule.end_round()
        round_number += 1
    report = rule.report
    means = {int(key[2][1:]): iv.mean for key, iv in report.intervals.items()}  # the Bradley–Terry scores
    order = sorted(range(n), key=lambda i: (-means[i], rng.random()))
    wrong = any(
        pair.status == "separated" and strengths[int(pair.better[2][1:])] < strengths[int(pair.worse[2][1:])]
        for pair in report.pairs
    )
    return ActiveRun(order, report.matches, wrong, report.reason)


def main(argv: list[str] | None = None) -> int:
    """Run the bench; exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--players", type=int, default=16)
    parser.add_argument("--step", type=float, default=40.0, help="Elo-scale gap between neighbouring players")
    parser.add_argument("--epsilon", type=float, default=2.4, help="width of a pair interval that ends its refinement")
    parser.add_argument("--max-rounds", type=int, default=400)
    parser.add_argument("--top", type=int, default=4, help="the top-k boundary resolved to --top-epsilon (0: none)")
    parser.add_argument("--top-epsilon", type=float, default=1.1)
    parser.add_argument("--rr", type=int, default=0, help="skip the round robin search and take this many repeats")
    parser.add_argument("--max-repeats", type=int, default=60, help="the largest round robin tried")
    args = parser.parse_args(argv)
    strengths = np.arange(args.players, dtype=float) * args.step
    truth = sorted(range(args.players), key=lambda i: -strengths[i])

    smallest = args.rr or None
    for repeats in range(1, 0 if args.rr else args.max_repeats + 1):
        rng = np.random.default_rng(1_000_000 + repeats)
        hits = sum(accurate(round_robin(rng, strengths, repeats)[0], truth) for _ in range(args.runs))
        if hits / args.runs >= 0.95:
            smallest = repeats
            break
    rr_matches = None if smallest is None else smallest * args.players * (args.players - 1)
    print(f"round robin: smallest accurate in >= 95% of {args.runs} runs: {smallest} repeats ({rr_matches} matches)")

    runs = [
        active(
            np.random.default_rng(seed),
            strengths,
            epsilon=args.epsilon,
            max_rounds=args.max_rounds,
            top=args.top or None,
            top_epsilon=args.top_epsilon,
        )
        for seed in range(args.runs)
    ]
    share = sum(accurate(r.order, truth) for r in runs) / args.runs
    wrong = sum(r.wrong for r in runs) / args.runs
    matches = float(np.mean([r.matches for r in runs]))
    reasons = {reason: sum(r.reason == reason for r in runs) for reason in sorted({r.reason for r in runs})}
    print(
        f"active: accurate in {share:.1%} of runs, wrong separation in {wrong:.1%}, mean {matches:.0f} matches "
        f"(median {np.median([r.matches for r in runs]):.0f}, max {max(r.matches for r in runs)}); stopped: {reasons}"
    )
    ratio = float("inf") if rr_matches is None else matches / rr_matches
    print(f"active / smallest accurate round robin: {ratio:.2f} of the matches (target <= 0.40)")
    return 0 if share >= 0.95 and wrong <= 0.05 and ratio <= 0.40 else 1


if __name__ == "__main__":
    sys.exit(main())
