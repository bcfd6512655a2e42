"""Bench: how wide each interval the report prints is against the t-interval (Wilson's for rates), beside its coverage,
and how many matches the anytime-valid rules need against a fixed-n design that knew the variance (issue 42).

    python bench/bench_width.py [--runs 300] [--sizes 6 10 30 100 300] [--stopping-runs 200] [--seed 0]

**Widths.** For each kind of result (a player's mean, a paired difference, a rate, GTBench's NRA, a ratings points
share, the anytime-valid sequence of the stopping rule read at n), each payoff shape of :data:`SHAPES` (on the
range ``[0, 1]``: every method is invariant to the range) and each n, ``runs`` seeded samples are drawn, and every
method of :data:`KINDS` is computed on each: its mean width over the mean width of the t-interval (Wilson's for a
rate; Wilson's on the decisive matches, mapped onto ``[-1, 1]``, for the NRA of a win/draw/loss game) on the same
samples, and the share of runs whose interval holds the true value. Methods marked ``measured`` are not printed by
any report: the conjectured-valid Gaffke bound (Learned-Miller and Thomas 2019; its validity is proven for two-point
payoffs only), kept as the tightest known candidate for comparison.

**Matches to decide.** Two players whose mean payoffs differ by 0.1 and 0.2 of the range (and two equal ones, to
be declared tied within ``epsilon = 0.1``), each round adding one payoff of each from its own distribution: the
stopping rule (``until_stable``: each player's anytime-valid sequence at ``alpha / 2``, separated when they do not
overlap, tied when both fit in ``epsilon``) and active matchmaking (``pairing = "active"``: the sequence of the
paired differences at ``alpha``, separated when it excludes 0, tied when narrower than ``epsilon``). It prints the
median rounds to a decision over ``--stopping-runs`` runs, the share of wrong separations, and the oracle: the fixed
n at which a z-interval of the difference, its standard deviation known in advance, excludes 0 in half the runs
(``(z sd / d)^2``, the median's counterpart) and in 80% of them; for a tie, the n at which its width is ``epsilon``.

Exit status 0 (a measurement, not a gate); ``bench/width_results.md`` keeps the numbers and the conclusions.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from analysis.stats.confseq import mean_intervals, ratio_intervals, sequence_intervals  # noqa: E402
from analysis.stats.exact import binomial_intervals  # noqa: E402
from analysis.stats.intervals import mean_intervals as named_intervals  # noqa: E402
from analysis.stats.intervals import win_loss_ratio_interval  # noqa: E402

ALPHA = 0.05
SIZES = (6, 10, 30, 100, 300)
EXACT_LIMIT = 100
"""The largest n at which the three-point exact tables are computed here (4 s of CPU at 100, ten times that at 300)."""
Sampler = Callable[[np.random.Generator, int, int], np.ndarray]


def _pgg(rng: np.random.Generator, runs: int, n: int) -> np.ndarray:
    return np.clip(rng.normal(60.0, 15.0, (runs, n)), 0.0, 110.0) / 110.0


def _skew(rng: np.random.Generator, runs: int, n: int) -> np.ndarray:
    return rng.beta(0.5, 4.0, (runs, n))


@dataclass(frozen=True)
class Shape:
    """A payoff distribution on ``[0, 1]``: its sampler, true mean and, where the game declares it, support."""

    name: str
    sample: Sampler
    mean: float
    support: tuple[float, ...] | None = None
    weights: tuple[float, ...] = ()
    """The probability of each point of ``support`` (a discrete shape)."""


def discrete(name: str, support: tuple[float, ...], weights: tuple[float, ...]) -> Shape:
    """A shape paying ``support[i]`` with probability ``weights[i]``."""

    def sample(rng: np.random.Generator, runs: int, n: int) -> np.ndarray:
        return rng.choice(np.asarray(support), p=np.asarray(weights), size=(runs, n))

    return Shape(name, sample, float(np.dot(support, weights)), support, weights)


def _clipped_normal_mean() -> float:
    from scipy.stats import norm

    mu, sd, top = 60.0, 15.0, 110.0
    a, b = (0.0 - mu) / sd, (top - mu) / sd
    inside = mu * (norm.cdf(b) - norm.cdf(a)) + sd * (norm.pdf(a) - norm.pdf(b))
    return float((inside + top * norm.sf(b)) / top)


SHAPES = (
    Shape("PGG-like N(60,15) on [0,110]", _pgg, math.nan),
    discrete("Bernoulli 0.3", (0.0, 1.0), (0.7, 0.3)),
    discrete("tic-tac-toe -1/0/1 (.3/.4/.3)", (0.0, 0.5, 1.0), (0.3, 0.4, 0.3)),
    discrete("mostly draws (.1/.8/.1)", (0.0, 0.5, 1.0), (0.1, 0.8, 0.1)),
    Shape("heavy skew Beta(0.5,4)", _skew, 0.5 / 4.5),
    discrete("two-point 0.1/0.6 (p=.3)", (0.1, 0.6), (0.7, 0.3)),
)
"""The payoff shapes of the width table, each on ``[0, 1]``."""


def gaffke_intervals(
    x: np.ndarray, alpha: float = ALPHA, draws: int = 1000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """The Gaffke / Learned-Miller–Thomas bound of each row of ``x`` (values in ``[0, 1]``), both ends at
    ``alpha / 2``: the ``1 - alpha / 2`` quantile of ``sum D_i z_(i)`` over Dirichlet(1, ..., 1) weights ``D`` on the
    sorted sample with the range's top appended (and the mirror image for the lower end), by Monte Carlo. Its
    coverage is conjectured, proven only for two-point payoffs: measured here, printed nowhere."""
    runs, n = x.shape
    weights = np.random.default_rng(seed).dirichlet(np.ones(n + 1), size=draws)  # draws x (n + 1)
    ordered = np.sort(x, axis=1)
    upper = np.concatenate([ordered, np.ones((runs, 1))], axis=1) @ weights.T
    lower = np.concatenate([np.zeros((runs, 1)), ordered], axis=1) @ weights.T
    return np.quantile(lower, alpha / 2, axis=1), np.quantile(upper, 1 - alpha / 2, axis=1)


def t_intervals(x: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Student's t-interval of each row's mean."""
    from scipy.stats import t

    n = x.shape[1]
    half = t.ppf(1 - alpha / 2, n - 1) * x.std(axis=1, ddof=1) / math.sqrt(n)
    return x.mean(axis=1) - half, x.mean(axis=1) + half


def wilson_intervals(k: np.ndarray, n: np.ndarray | int, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval of ``k / n`` (``[0, 1]`` where ``n`` is 0)."""
    from scipy.stats import norm

    z2 = norm.ppf(1 - alpha / 2) ** 2
    trials = np.maximum(np.asarray(n, dtype=float), 1e-300)
    share = np.asarray(k, dtype=float) / trials
    centre = (share + z2 / (2 * trials)) / (1 + z2 / trials)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        half = np.sqrt(share * (1 - share) / trials + z2 / (4 * trials**2)) * math.sqrt(z2) / (1 + z2 / trials)
    empty = np.asarray(n) == 0
    return np.where(empty, 0.0, centre - half), np.where(empty, 1.0, centre + half)


Bounds = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Method:
    """One interval of one kind: its name, whether a report prints it, and how it is computed on a shape's samples
    (``x``, ``y``: two independent samples; None where it does not apply)."""

    name: str
    compute: Callable[[Shape, np.ndarray, np.ndarray], Bounds | None]
    printed: bool = True


def _exact_mean(shape: Shape, x: np.ndarray, _: np.ndarray) -> Bounds | None:
    if shape.support is None or (len(shape.support) == 3 and x.shape[1] > EXACT_LIMIT):
        return None
    return named_intervals(x, 0.0, 1.0, method="exact-discrete/1", support=shape.support)


def _points(x: np.ndarray) -> np.ndarray:
    """A points share's comparisons: 1, 1/2 or 0 (the shape's values read as win, draw, loss)."""
    return np.where(x > 0.75, 1.0, np.where(x > 0.25, 0.5, 0.0))


def _exact_points(shape: Shape, x: np.ndarray, _: np.ndarray) -> Bounds | None:
    if shape.support is None or x.shape[1] > EXACT_LIMIT:
        return None
    return named_intervals(_points(x), 0.0, 1.0, method="exact-discrete/1", support=(0.0, 0.5, 1.0))


def _outcomes(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wins and losses of each run of a win/draw/loss shape (payoffs 1, 1/2, 0)."""
    return (x > 0.75).sum(axis=1), (x < 0.25).sum(axis=1)


def _nra_betting(shape: Shape, x: np.ndarray, _: np.ndarray) -> Bounds | None:
    if shape.support != (0.0, 0.5, 1.0):
        return None
    signs = np.where(x > 0.75, 1.0, np.where(x < 0.25, -1.0, 0.0))  # GTBench: +1 / -1, a draw scores 0 for both
    return ratio_intervals(2.0 * signs, 2.0 * np.abs(signs), 2.0)


def _nra_exact(shape: Shape, x: np.ndarray, _: np.ndarray) -> Bounds | None:
    if shape.support != (0.0, 0.5, 1.0):
        return None
    wins, losses = _outcomes(x)
    bounds = np.array([win_loss_ratio_interval(int(w), int(v)) for w, v in zip(wins, losses, strict=True)])
    return bounds[:, 0], bounds[:, 1]


def _rate_cp(shape: Shape, x: np.ndarray, _: np.ndarray) -> Bounds | None:
    if shape.support is None:
        return None
    return binomial_intervals((x >= shape.support[-1] - 1e-9).sum(axis=1), x.shape[1], ALPHA)


def _shifted(bounds: Bounds) -> Bounds:
    """An interval of a difference on ``[-1, 1]`` computed on ``(x - y + 1) / 2``, mapped back."""
    return 2.0 * bounds[0] - 1.0, 2.0 * bounds[1] - 1.0


KINDS: dict[str, tuple[Method, ...]] = {
    "player mean": (
        Method("betting-eb/1", lambda s, x, y: mean_intervals(x, 0.0, 1.0)),
        Method("exact-discrete/1", _exact_mean),
        Method("Gaffke (conjectured)", lambda s, x, y: gaffke_intervals(x), printed=False),
    ),
    "paired difference": (
        Method("betting-eb/1", lambda s, x, y: _shifted(mean_intervals((x - y + 1) / 2, 0.0, 1.0))),
        Method("Gaffke (conjectured)", lambda s, x, y: _shifted(gaffke_intervals((x - y + 1) / 2)), printed=False),
    ),
    "rate (win share)": (Method("clopper-pearson/1", _rate_cp),),
    "NRA (win/draw/loss)": (
        Method("betting-ratio/1", _nra_betting),
        Method("exact-conditional/1", _nra_exact),
    ),
    "points share (ratings)": (
        Method("betting-eb/1", lambda s, x, y: mean_intervals(_points(x), 0.0, 1.0) if s.support else None),
        Method("exact-discrete/1", _exact_points),
    ),
    "anytime sequence at n": (Method("betting/1", lambda s, x, y: mean_intervals(x, 0.0, 1.0, anytime=True)),),
}
"""Each kind of result and the methods measured for it."""


def _reference(kind: str, shape: Shape, x: np.ndarray, y: np.ndarray) -> tuple[Bounds, float]:
    """The t-interval (or Wilson's) of a kind on the samples, and the true value it estimates."""
    if kind == "paired difference":
        return t_intervals(x - y), 0.0
    if kind == "rate (win share)":
        top = shape.support[-1] if shape.support else 1.0
        return wilson_intervals((x >= top - 1e-9).sum(axis=1), x.shape[1]), shape.weights[-1]
    if kind == "NRA (win/draw/loss)":
        wins, losses = _outcomes(x)
        low, high = wilson_intervals(wins, wins + losses)
        loss, win = shape.weights[0], shape.weights[-1]
        return (2 * low - 1, 2 * high - 1), (win - loss) / (win + loss)
    if kind == "points share (ratings)":
        return t_intervals(_points(x)), shape.mean
    return t_intervals(x), shape.mean


@dataclass(frozen=True)
class Cell:
    """One method's width ratio and coverage on one shape at one n."""

    kind: str
    method: str
    shape: str
    n: int
    ratio: float
    coverage: float
    printed: bool


def measure_widths(runs: int, sizes: Sequence[int], seed: int = 0) -> list[Cell]:
    """Every kind, method, shape and size of the width table (module docstring)."""
    cells = []
    for s_index, shape in enumerate(SHAPES):
        if math.isnan(shape.mean):
            shape = Shape(shape.name, shape.sample, _clipped_normal_mean())
        for n in sizes:
            rng = np.random.default_rng([seed, s_index, n])
            x, y = shape.sample(rng, runs, n), shape.sample(rng, runs, n)
            for kind, methods in KINDS.items():
                if kind in ("NRA (win/draw/loss)", "points share (ratings)") and shape.support != (0.0, 0.5, 1.0):
                    continue
                if kind == "rate (win share)" and shape.support is None:
                    continue
                (ref_low, ref_high), truth = _reference(kind, shape, x, y)
                ref_width = float(np.mean(ref_high - ref_low))
                for method in methods:
                    bounds = method.compute(shape, x, y)
                    if bounds is None:
                        continue
                    low, high = bounds
                    covered = float(np.mean((low <= truth + 1e-12) & (truth - 1e-12 <= high)))
                    ratio = float(np.mean(high - low)) / ref_width
                    cells.append(Cell(kind, method.name, shape.name, n, ratio, covered, method.printed))
    return cells


def format_widths(cells: Sequence[Cell], sizes: Sequence[int]) -> str:
    """The width table: a row per kind, method and shape; per n the ratio and the coverage."""
    head = f"{'kind':<24} {'method':<21} {'shape':<30}" + "".join(f" {'n=' + str(n):>13}" for n in sizes)
    lines = [head, "-" * len(head)]
    rows: dict[tuple[str, str, str, bool], dict[int, Cell]] = {}
    for cell in cells:
        rows.setdefault((cell.kind, cell.method, cell.shape, cell.printed), {})[cell.n] = cell
    for (kind, method, shape, printed), by_n in rows.items():
        label = method if printed else method + "*"
        values = "".join(
            f" {by_n[n].ratio:5.2f}x {100 * by_n[n].coverage:5.1f}%" if n in by_n else f" {'-':>13}" for n in sizes
        )
        lines.append(f"{kind:<24} {label:<21} {shape:<30}{values}")
    lines.append(
        "(ratio: mean width / the t-interval's (Wilson's for rates and NRA) on the same samples; then coverage;"
    )
    lines.append(" * measured only, printed by no report: validity conjectured)")
    return "\n".join(lines)


# -- matches to decide --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """Rounds each rule needed to decide one scenario, against the oracle."""

    scenario: str
    rule: str
    median: float
    decided: float
    wrong: float
    oracle_half: float
    oracle_80: float


def _decide(low: np.ndarray, high: np.ndarray, tie: bool, epsilon: float, pair: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per run, the first round (1-based; 0: never) at which the rule decided, and whether it separated the pair the
    wrong way (player a has the lower mean; with equal means either way is wrong)."""
    if pair:  # low/high: the difference a - b, below 0 when the better player b is found better
        separated_right, separated_wrong = high[0] < 0, low[0] > 0
        tied = high[0] - low[0] <= epsilon
    else:  # low/high: [a, b]
        separated_right, separated_wrong = low[1] > high[0], low[0] > high[1]
        tied = np.maximum(high[0], high[1]) - np.minimum(low[0], low[1]) <= epsilon
    done = separated_right | separated_wrong | (tied if tie else False)
    first = np.where(done.any(axis=1), np.argmax(done, axis=1) + 1, 0)
    rows = np.arange(done.shape[0])
    wrong = (first > 0) & separated_wrong[rows, np.maximum(first - 1, 0)]
    if tie:  # no order is right
        wrong |= (first > 0) & separated_right[rows, np.maximum(first - 1, 0)]
    return first, wrong


def measure_decisions(runs: int, seed: int = 0, epsilon: float = 0.1) -> list[Decision]:
    """The stopping-rule table (module docstring)."""
    from scipy.stats import norm

    z, z80 = norm.ppf(1 - ALPHA / 2), norm.ppf(0.8)
    out = []
    for label, sd, make in (
        ("PGG-like (sd 0.136)", 15.0 / 110.0, _normal_pair),
        ("win/draw/loss (sd 0.39)", math.sqrt(0.15), _outcome_pair),
    ):
        for gap in (0.1, 0.2, 0.0) if sd < 0.2 else (0.1, 0.2):
            sd_difference = math.sqrt(2.0) * sd
            if gap:
                half, eighty = (z * sd_difference / gap) ** 2, ((z + z80) * sd_difference / gap) ** 2
            else:
                half = eighty = (2 * z * sd_difference / epsilon) ** 2
            horizon = int(3 * eighty) + 20
            rng = np.random.default_rng([seed, int(100 * gap), int(1000 * sd)])
            a, b = make(rng, runs, horizon, gap)
            name = f"{label}, gap {gap:.1f}" if gap else f"{label}, equal means (tie within {epsilon})"
            low_a, high_a = sequence_intervals(a, 0.0, 1.0, alpha=ALPHA / 2)
            low_b, high_b = sequence_intervals(b, 0.0, 1.0, alpha=ALPHA / 2)
            pairs = (a - b + 1) / 2
            for rule, (low, high) in (
                ("until_stable (two sequences)", (np.stack([low_a, low_b]), np.stack([high_a, high_b]))),
                ("active (pair sequence)", sequence_intervals(pairs, 0.0, 1.0, alpha=ALPHA)),
                ("active, aGRAPA bets*", agrapa_sequence(pairs, ALPHA)),
            ):
                pair = low.ndim == 2
                if pair:
                    low, high = 2 * low[None] - 1, 2 * high[None] - 1
                first, wrong = _decide(low, high, gap == 0.0, epsilon, pair)
                median = float(np.median(np.where(first > 0, first, horizon + 1)))
                out.append(Decision(name, rule, median, float(np.mean(first > 0)), float(wrong.mean()), half, eighty))
            if gap:
                bound = math.log(2 / ALPHA) / _kl_inf(pairs)
                out.append(Decision(name, "bound: log(2/alpha) / KL_inf", bound, 1.0, 0.0, half, eighty))
    return out


def _kl_inf(pairs: np.ndarray) -> float:
    """``KL_inf`` of the paired differences (on ``[0, 1]``) against equal means: ``max E log(1 + l (1/2 - D))`` over
    the bets ``l`` in ``[0, 2)`` that no payoff of the range can ruin (Honda and Takemura's ``KL_inf`` of bounded
    means), the best growth per round of any test by betting: with Wald's bound, ``log(2 / alpha) / KL_inf`` is about
    the fewest rounds any anytime-valid test of a bounded mean needs on average."""
    bets = np.linspace(0.0, 1.999, 400)
    sample = 0.5 - pairs.ravel()[:200_000]  # the better player second: the differences sit below 1/2
    return float(max(np.mean(np.log1p(bet * sample)) for bet in bets))


def agrapa_sequence(x: np.ndarray, alpha: float, grid: int = 1000, cap: float = 0.75) -> tuple[np.ndarray, np.ndarray]:
    """A hedged-capital sequence with growth-rate-adaptive bets (aGRAPA, Waudby-Smith and Ramdas 2023, section 5):
    against each candidate mean ``m``, the bet ``(mean - m) / (var + (mean - m)^2)`` of the predictable mean and
    variance (those of the betting sequence), capped at ``cap / m`` and ``cap / (1 - m)``; ``m`` is excluded for good
    once ``(K+ + K-) / 2 >= 1 / alpha``. Every bet is fixed before its value is seen, so it is anytime-valid like the
    printed sequence: measured here, printed nowhere. The interval after each value of each row of ``x``."""
    runs, n = x.shape
    means = (np.arange(grid) + 0.5) / grid
    up, down = np.zeros((runs, grid)), np.zeros((runs, grid))
    excluded = np.zeros((runs, grid), dtype=bool)
    low, high = np.empty((runs, n)), np.empty((runs, n))
    total, spread = np.zeros(runs), np.full(runs, 0.25)
    estimate = np.full(runs, 0.5)
    for t in range(n):
        gap = estimate[:, None] - means[None, :]
        bet = gap / (spread[:, None] / (t + 1) + gap * gap)
        step = x[:, t, None] - means[None, :]
        up += np.log1p(np.clip(bet, 0.0, cap / means) * step)
        down += np.log1p(-np.clip(-bet, 0.0, cap / (1.0 - means)) * step)
        excluded |= np.logaddexp(up, down) >= math.log(2.0 / alpha)
        kept = ~excluded
        kept[~kept.any(axis=1), grid // 2] = True  # never empty
        first, last = np.argmax(kept, axis=1), grid - 1 - np.argmax(kept[:, ::-1], axis=1)
        low[:, t], high[:, t] = means[first] - 0.5 / grid, means[last] + 0.5 / grid
        total += x[:, t]
        estimate = (0.5 + total) / (t + 2)
        spread += (x[:, t] - estimate) ** 2
    return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)


def _normal_pair(rng: np.random.Generator, runs: int, n: int, gap: float) -> tuple[np.ndarray, np.ndarray]:
    """Two PGG-like players (normal, sd 15 of 110) whose means differ by ``gap`` (a, the better, second)."""
    sd = 15.0 / 110.0
    return (
        np.clip(rng.normal(0.5 - gap / 2, sd, (runs, n)), 0.0, 1.0),
        np.clip(rng.normal(0.5 + gap / 2, sd, (runs, n)), 0.0, 1.0),
    )


def _outcome_pair(rng: np.random.Generator, runs: int, n: int, gap: float) -> tuple[np.ndarray, np.ndarray]:
    """Two win/draw/loss players (draws 0.4) whose means differ by ``gap`` (b, the better, second)."""
    values = np.array([0.0, 0.5, 1.0])
    worse = rng.choice(values, p=[0.3 + gap / 2, 0.4, 0.3 - gap / 2], size=(runs, n))
    better = rng.choice(values, p=[0.3 - gap / 2, 0.4, 0.3 + gap / 2], size=(runs, n))
    return worse, better


def format_decisions(rows: Sequence[Decision]) -> str:
    """The stopping-rule table."""
    head = (
        f"{'scenario':<52} {'rule':<29} {'median':>7} {'decided':>8} {'wrong':>6} "
        f"{'oracle50':>9} {'ratio':>6} {'oracle80':>9} {'ratio':>6}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.scenario:<52} {r.rule:<29} {r.median:7.0f} {100 * r.decided:7.1f}% {100 * r.wrong:5.1f}% "
            f"{r.oracle_half:9.1f} {r.median / r.oracle_half:5.2f}x {r.oracle_80:9.1f} {r.median / r.oracle_80:5.2f}x"
        )
    lines.append("(rounds: one payoff of each player, or one paired difference; wrong: separated the wrong way;")
    lines.append(" * measured only, printed by no report; the bound's row is a number of rounds, not a rule)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print both tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--stopping-runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    print(f"widths: {args.runs} runs a cell, level {1 - ALPHA:.0%}")
    print(format_widths(measure_widths(args.runs, args.sizes, args.seed), args.sizes), flush=True)
    print(f"\nmatches to decide: {args.stopping_runs} runs a scenario")
    print(format_decisions(measure_decisions(args.stopping_runs, args.seed)))
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
