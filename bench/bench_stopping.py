"""Bench: the adaptive stopping rule on scripted Public Goods Game populations with known means.

    python bench/bench_stopping.py [--runs 200] [--pool-repeats 120] [--pool DIR]

What it measures, side by side on the same data:

1. A *pool* of real matches is played once through the runner: a two-seat PGG (alpha 1.2) between scripted players
   whose ``noise`` parameter sets how often they invest at random, every pair of players in each repeat. The true
   mean of every player is the mean over the pool, known exactly.
2. Each seeded run draws its rounds from the pool (a whole repeat at a time, with replacement, so the pool is the
   population) and runs :class:`analysis.stats.stopping.AdaptiveStopping` until it stops. A run is *wrong* when it
   separates two players in the wrong order.
3. On the same draws, uniform repeats (every seating every round) run until every player's confidence sequence is as
   narrow as the adaptive run needed for its hardest pair (the widest half-width among the players still active in
   its last round): the precision at which uniform repeats resolve the same ranking.

It prints the wrong-ranking rate, the match saving against uniform repeats, and the median rounds of a calm and a
noisy population; it exits 1 when the wrong-ranking rate is above 5%, the saving below 30%, or the noisy population
does not stop later than the calm one.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.stats.confseq import make_sequence
from analysis.stats.stopping import AdaptiveStopping, Seating
from deepeval_games import parse_spec, run_experiment
from deepeval_games.core.registry.games import game_variant, load_game

GAME = "deepeval_public_goods(players=2,alpha=1.2,mode=1)"
CALM = (
    ("free-rider", "pgg_free_rider", 0.0),
    ("mostly-free", "pgg_free_rider", 0.5),
    ("random", "pgg_random", 0.0),
    ("mostly-full", "pgg_full_contributor", 0.3),
    ("full", "pgg_full_contributor", 0.0),
    ("conditional", "pgg_conditional_cooperator", 0.0),
)
"""The population: a player's name, its scripted bot and its ``noise``."""
NOISY = tuple((name, bot, min(1.0, noise + 0.3) if bot != "pgg_random" else noise) for name, bot, noise in CALM)
"""The same players, each 0.3 noisier (random is as noisy as it gets)."""
MAX_WRONG = 0.05
MIN_SAVING = 0.30


@dataclass(frozen=True)
class Pool:
    """Matches played once, by repeat: (seats, roles, returns) of every seating."""

    variant: str
    bounds: tuple[float, float]
    repeats: list[list[tuple[tuple[str, ...], tuple[str, ...], tuple[float, ...]]]]
    true_means: dict[str, float]


def play_pool(population: Sequence[tuple[str, str, float]], repeats: int, out_dir: str | Path, seed: int = 1) -> Pool:
    """Play every pair of ``population`` ``repeats`` times (real matches, scripted bots) and keep the payoffs."""
    spec = {
        "experiment": {
            "name": "stopping-pool",
            "game": GAME,
            "repeats": repeats,
            "pairing": "combinations",
            "seed": seed,
            "max_concurrency": 32,
        },
        "players": [
            {"name": name, "bot": bot, **({"params": {"noise": noise}} if noise else {})}
            for name, bot, noise in population
        ],
    }
    result = run_experiment(parse_spec(spec), out_dir)
    by_repeat: dict[int, list[tuple[tuple[str, ...], tuple[str, ...], tuple[float, ...]]]] = defaultdict(list)
    payoffs: dict[str, list[float]] = defaultdict(list)
    for record in sorted(result.records, key=lambda r: (r.repeat, r.match_id)):
        by_repeat[record.repeat].append((tuple(record.seats), tuple(record.roles), tuple(record.returns)))
        for name, payoff in zip(record.seats, record.returns, strict=True):
            payoffs[name].append(payoff)
    game = load_game(GAME)
    return Pool(
        variant=game_variant(str(game)),
        bounds=(float(game.min_utility()), float(game.max_utility())),
        repeats=[by_repeat[r] for r in sorted(by_repeat)],
        true_means={name: float(np.mean(values)) for name, values in payoffs.items()},
    )


@dataclass(frozen=True)
class Outcome:
    """One seeded run: the adaptive rule, then uniform repeats on the same draws."""

    matches: int
    rounds: int
    reason: str
    wrong: bool
    uniform_matches: int
    target_half_width: float


def simulate(
    pool: Pool, seed: int, *, alpha: float = 0.05, epsilon: float = 1.0, initial_rounds: int = 2, max_rounds: int = 2000
) -> Outcome:
    """One seeded run of the adaptive rule on ``pool``, and the uniform comparison (see the module docstring)."""
    rng = np.random.default_rng(seed)
    rule = AdaptiveStopping(
        {pool.variant: pool.bounds},
        alpha=alpha,
        epsilon=epsilon,
        initial_rounds=initial_rounds,
        max_rounds=max_rounds,
    )
    draws: list[int] = []
    last_active: set[tuple[str, str, str]] = set()
    while True:
        draw = int(rng.integers(len(pool.repeats)))
        draws.append(draw)
        last_active = rule.active or last_active
        matches = pool.repeats[draw]
        seatings = [
            Seating(f"{len(draws)}-{i}", pool.variant, seats, roles) for i, (seats, roles, _) in enumerate(matches)
        ]
        chosen = {s.match_id for s in rule.begin_round(seatings)}
        for seating, (_, _, returns) in zip(seatings, matches, strict=True):
            if seating.match_id in chosen:
                rule.add(seating.match_id, returns)
        report = rule.end_round()
        if report.reason != "running":
            break
    truth = pool.true_means
    wrong = any(p.status == "separated" and truth[p.better[2]] < truth[p.worse[2]] for p in report.pairs)
    target = report.max_half_width(last_active or None)
    sequences = {name: make_sequence("betting", *pool.bounds, alpha=alpha / len(truth)) for name in sorted(truth)}
    uniform, index = 0, 0
    while uniform < 50 * report.matches + 1:
        draw = draws[index] if index < len(draws) else int(rng.integers(len(pool.repeats)))
        index += 1
        block: dict[str, list[float]] = defaultdict(list)
        for seats, _, returns in pool.repeats[draw]:
            for name, payoff in zip(seats, returns, strict=True):
                block[name].append(payoff)
        for name in sorted(block):
            sequences[name].update(float(np.mean(block[name])))
        uniform += len(pool.repeats[draw])
        if max(s.interval().half_width for s in sequences.values()) <= target:
            break
    return Outcome(report.matches, report.rounds, report.reason, wrong, uniform, target)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bench; 0 when every target is met."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="seeded runs of the calm population (default 200)")
    parser.add_argument("--noisy-runs", type=int, default=50, help="of the noisier population (default 50)")
    parser.add_argument("--pool-repeats", type=int, default=120)
    parser.add_argument("--pool", help="folder for the pools' run directories (default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.pool or tmp)
        started = time.perf_counter()
        calm = play_pool(CALM, args.pool_repeats, folder / "calm")
        noisy = play_pool(NOISY, args.pool_repeats, folder / "noisy")
        played = time.perf_counter() - started
    print(f"pools: {len(calm.repeats)} repeats x {len(calm.repeats[0])} matches each, played in {played:.0f} s")
    print(
        "true means (calm): "
        + ", ".join(f"{n} {m:.2f}" for n, m in sorted(calm.true_means.items(), key=lambda x: -x[1]))
    )
    started = time.perf_counter()
    outcomes = [simulate(calm, seed) for seed in range(args.runs)]
    noisy_outcomes = [simulate(noisy, seed) for seed in range(args.noisy_runs)]
    simulated = time.perf_counter() - started
    stopped = [o for o in outcomes if o.reason == "resolved"]
    wrong = sum(o.wrong for o in outcomes) / len(outcomes)
    adaptive, uniform = sum(o.matches for o in stopped), sum(o.uniform_matches for o in stopped)
    saving = 1.0 - adaptive / uniform if uniform else 0.0
    calm_rounds = float(np.median([o.rounds for o in outcomes]))
    noisy_rounds = float(np.median([o.rounds for o in noisy_outcomes]))
    print(f"seeded runs: {len(outcomes)} ({len(stopped)} resolved, the rest at the round limit); {simulated:.0f} s")
    print(f"wrong ranking: {wrong:.1%} of runs (target <= {MAX_WRONG:.0%})")
    print(
        f"matches: adaptive {adaptive / max(len(stopped), 1):.0f} per run, uniform repeats to the same half-width "
        f"{uniform / max(len(stopped), 1):.0f}: saving {saving:.1%} (target >= {MIN_SAVING:.0%})"
    )
    print(f"median rounds: calm population {calm_rounds:.0f}, noisier population {noisy_rounds:.0f}")
    missed = []
    if wrong > MAX_WRONG:
        missed.append("wrong-ranking rate")
    if saving < MIN_SAVING:
        missed.append("match saving")
    if not noisy_rounds > calm_rounds:
        missed.append("noisier players stop later")
    if missed:
        print("MISSED: " + ", ".join(missed))
        return 1
    print("all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
