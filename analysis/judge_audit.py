"""Judge audits: how far a run's judge scores can be trusted, from the match records and their re-judgements.

Reads match records and :class:`~deepeval_games.core.judgements.JudgementRecord` only (``deepeval-games rejudge``
writes the latter beside the matches). Every judge of a run is compared on the same transcripts; the judge
that scored the matches while they were played is called ``original``. The audit:

* **agreement** between every two judges: Spearman's rank correlation of their scores of the same (match,
  seat), with a 95% cluster-bootstrap interval over matches (approximate: it can under-cover at few matches), and
  their mean absolute difference per match, with the fixed-n betting 95% interval over matches (scores as played,
  averaged over repeats);
* **position/label bias** of every judge re-judged with ``--swap``: the score a seat gains when its role is
  introduced first under the first label rather than last under the last one (position and label swap
  together), per match averaged over seats, with a betting interval; and the share of matches whose
  preferred seat flips with the presentation (ties count as a preference of their own);
* **judge variance** of every judge re-judged with ``--repeat K`` (K >= 2): the share of its score variance,
  per role, that comes from judging again the same transcript rather than from the transcripts (mean
  within-transcript variance over total variance);
* **self-preference**, where a judge's model also played: the judge's score of its own model's seats minus
  the other judges' mean score of the same seats, with a betting interval;
* **ground truth**: per judge, the Pearson and Spearman correlation of a role's score with the task's measure
  where it has one (:data:`GROUND_TRUTH`: MBPP pass rate, chrF), via :mod:`analysis.stats.correlation`;
* **canaries**: a canary player (its identity names an honest twin in ``canary_of``) embeds a judge-directed
  instruction in otherwise ordinary output; per judge and role, the mean score it gets minus its twin's in the
  same cells (game, role, opponents), with a betting interval: the score shift the injection buys.

The betting intervals (:func:`analysis.stats.confseq.mean_interval`) are the fixed-n hedged-capital intervals on the
range
a difference of two scores can take (the judge's scale: the game's payoff range ``[low, high]`` gives
``[-(high - low), high - low]``); they hold at any number of matches, so at few matches they are wide. Without a
known scale no such interval exists and ``n/a`` is shown.

:func:`judge_audit` computes everything, :func:`format_audit` prints it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analysis.stats.confseq import mean_interval, records_bounds
from analysis.stats.correlation import Correlation, correlate, correlation_line
from deepeval_games.core.judgements import JudgementRecord
from deepeval_games.core.records import JUDGE_SEAT, MatchRecord

__all__ = [
    "GROUND_TRUTH",
    "ORIGINAL",
    "Agreement",
    "CanaryShift",
    "Interval",
    "JudgeAudit",
    "JudgeScore",
    "PositionBias",
    "SelfPreference",
    "Variance",
    "agreement",
    "canary_shifts",
    "format_audit",
    "judge_audit",
    "judge_scores",
    "judge_variance",
    "position_bias",
    "self_preference",
]

ORIGINAL = "original"
"""The name of the judge that scored the matches while they were played."""

GROUND_TRUTH: dict[str, str] = {
    "programmer": "pass_rate",
    "translator": "chrf_translation",
    "proofreader": "chrf_gain",
}
"""Per role, the ``metrics`` key of the task's own measure of that role's work (None in a record: unmeasured)."""

_BOOTSTRAP = 2000


@dataclass(frozen=True)
class JudgeScore:
    """One judge's score of one seat of one match."""

    match_id: str
    judge: str
    seat: int
    role: str
    player: str
    score: float
    first: bool
    """Whether the seat's role was introduced first."""
    swapped: bool
    """Whether the roles were shown in another order than the seats'."""
    repeat: int = 0
    judge_model: str | None = None


@dataclass(frozen=True)
class Interval:
    """An estimate with its 95% interval."""

    value: float
    low: float
    high: float

    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly on one side of 0."""
        return self.low > 0 or self.high < 0

    def __str__(self) -> str:
        return self.text(signed=True)

    def text(self, *, signed: bool) -> str:
        """``value [95% CI low, high]`` with two decimals (``+`` signs when ``signed``); ``n/a`` when undefined, and
        ``[95% CI n/a]`` when the judge's scale is unknown."""
        if math.isnan(self.value):
            return "n/a"
        f = "+.2f" if signed else ".2f"
        if math.isinf(self.low) or math.isinf(self.high):
            return f"{self.value:{f}} [95% CI n/a: no score range]"
        return f"{self.value:{f}} [95% CI {self.low:{f}}, {self.high:{f}}]"


@dataclass(frozen=True)
class Agreement:
    """How far two judges agree on the same (match, seat) scores."""

    judges: tuple[str, str]
    n: int
    """(match, seat) pairs scored by both."""
    spearman: Interval
    mean_abs_diff: Interval
    """Per match the mean |difference| of the two judges' scores of its seats, averaged over matches."""


@dataclass(frozen=True)
class PositionBias:
    """What being introduced first is worth to a seat, for one judge."""

    judge: str
    matches: int
    """Matches judged in both presentations."""
    first_advantage: Interval
    """Mean over matches of the score a seat gains when presented first rather than last."""
    flip_rate: float
    """Share of matches whose preferred seat (or tie) changes with the presentation."""
    by_role: dict[str, float] = field(default_factory=dict)
    """Per role, its mean gain when presented first."""


@dataclass(frozen=True)
class Variance:
    """Share of one judge's score variance, in one role, that is due to judging rather than play."""

    judge: str
    role: str
    transcripts: int
    """Transcripts judged at least twice at the same settings."""
    repeats: float
    """Mean judgements per transcript."""
    within: float
    """Mean variance of the repeated scores of one transcript."""
    total: float
    """Variance of all the scores."""

    @property
    def share(self) -> float:
        """``within / total`` clipped to 0..1 (0 when every score is the same)."""
        return 0.0 if self.total <= 0 else min(1.0, self.within / self.total)


@dataclass(frozen=True)
class SelfPreference:
    """A judge's scores of its own model's seats, against the other judges' scores of the same seats."""

    judge: str
    model: str
    seats: int
    """(match, seat) pairs where the judge's model played and another judge scored them too."""
    difference: Interval


@dataclass(frozen=True)
class CanaryShift:
    """The score a canary's judge-directed injection buys it, for one judge and role."""

    judge: str
    canary: str
    twin: str
    role: str
    cells: int
    """Cells (game, role, opponents) played by both the canary and its twin."""
    shift: Interval


@dataclass
class JudgeAudit:
    """Everything :func:`judge_audit` measures."""

    judges: list[str]
    agreements: list[Agreement]
    biases: list[PositionBias]
    variances: list[Variance]
    self_preferences: list[SelfPreference]
    ground_truth: list[tuple[str, str, str, Correlation]]
    """(judge, role, measure, correlation)."""
    canaries: list[CanaryShift]


# -- collecting scores -------------------------------------------------------------------------------------


def _model_of(identity: Mapping[str, Any]) -> str | None:
    model = identity.get("model")
    return str(model) if model else None


def _original_scores(record: MatchRecord) -> list[float] | None:
    judged = [t for t in record.turns if t.seat == JUDGE_SEAT]
    if not judged or record.status != "complete":
        return None
    by_role = record.metrics.get("judge_scores")
    if isinstance(by_role, Mapping) and all(role in by_role for role in record.roles):
        return [float(by_role[role]) for role in record.roles]
    return [float(r) for r in record.returns]


def judge_scores(records: Iterable[MatchRecord], judgements: Iterable[JudgementRecord]) -> list[JudgeScore]:
    """Every judge's score of every seat: the original verdicts (from the records) and every judgement."""
    by_id = {r.match_id: r for r in records}
    scores: list[JudgeScore] = []
    for record in by_id.values():
        original = _original_scores(record)
        if original is None:
            continue
        model = next((t.model for t in record.turns if t.seat == JUDGE_SEAT), None)
        for seat, score in enumerate(original):
            role = record.roles[seat] if seat < len(record.roles) else "player"
            scores.append(
                JudgeScore(record.match_id, ORIGINAL, seat, role, record.seats[seat], score, seat == 0, False, 0, model)
            )
    for judgement in judgements:
        judged = by_id.get(judgement.match_id)
        if judged is None:
            continue
        first = judgement.presented_order[0] if judgement.presented_order else 0
        for seat, score in enumerate(judgement.scores):
            role = judged.roles[seat] if seat < len(judged.roles) else "player"
            scores.append(
                JudgeScore(
                    judgement.match_id,
                    judgement.judge,
                    seat,
                    role,
                    judged.seats[seat],
                    float(score),
                    seat == first,
                    judgement.swapped,
                    judgement.repeat,
                    judgement.judge_model,
                )
            )
    return scores


def _as_played_means(scores: Iterable[JudgeScore], judge: str) -> dict[tuple[str, int], float]:
    """(match, seat) -> the judge's mean score as played (over repeats)."""
    groups: dict[tuple[str, int], list[float]] = defaultdict(list)
    for s in scores:
        if s.judge == judge and not s.swapped:
            groups[(s.match_id, s.seat)].append(s.score)
    return {key: float(np.mean(values)) for key, values in groups.items()}


def _cluster_bootstrap(
    clusters: Sequence[Sequence[tuple[float, float]]], statistic: Any, seed: int = 0
) -> tuple[float, float]:
    """Percentile 95% interval of ``statistic(xs, ys)`` resampling whole clusters (matches) with replacement."""
    xs = np.array([x for cluster in clusters for x, _ in cluster], dtype=float)
    ys = np.array([y for cluster in clusters for _, y in cluster], dtype=float)
    owner = np.repeat(np.arange(len(clusters)), [len(cluster) for cluster in clusters])
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(_BOOTSTRAP):
        times = np.bincount(rng.integers(0, len(clusters), len(clusters)), minlength=len(clusters))[owner]
        value = statistic(np.repeat(xs, times), np.repeat(ys, times))
        if not math.isnan(value):
            values.append(value)
    if not values:
        return (math.nan, math.nan)
    return (float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975)))


Scale = tuple[float, float] | None
"""The judge's score range (the game's payoff range), None when unknown."""


def _difference_interval(values: Sequence[float], scale: Scale, *, absolute: bool = False) -> Interval:
    """The mean of per-match differences of two scores (``absolute``: of their sizes) with its betting interval on the
    range such a difference can take."""
    mean = float(np.mean(values))
    if scale is None:
        return Interval(mean, -math.inf, math.inf)
    span = scale[1] - scale[0]
    interval = mean_interval(values, 0.0 if absolute else -span, span)
    return Interval(mean, interval.low, interval.high)


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties given their average rank (as Spearman's rho needs)."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - counts + 1 + ends) / 2.0)[inverse]


def _spearman(xs: np.ndarray, ys: np.ndarray) -> float:
    if len(xs) < 3 or np.all(xs == xs[0]) or np.all(ys == ys[0]):
        return math.nan
    return float(np.corrcoef(_ranks(xs), _ranks(ys))[0, 1])


def _mad(xs: np.ndarray, ys: np.ndarray) -> float:
    return float(np.mean(np.abs(xs - ys))) if len(xs) else math.nan


# -- the audits ----------------------------------------------------------------------------------------


def agreement(scores: Sequence[JudgeScore], first: str, second: str, scale: Scale = None) -> Agreement:
    """Agreement of two judges on the same (match, seat), scores as played averaged over repeats; ``scale``: the
    judge's score range."""
    a, b = _as_played_means(scores, first), _as_played_means(scores, second)
    shared = sorted(set(a) & set(b))
    clusters: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for key in shared:
        clusters[key[0]].append((a[key], b[key]))
    xs, ys = np.array([a[k] for k in shared]), np.array([b[k] for k in shared])
    groups = list(clusters.values())
    rho = _spearman(xs, ys)
    rho_ci = _cluster_bootstrap(groups, _spearman) if not math.isnan(rho) else (math.nan, math.nan)
    per_match = [_mad(np.array([x for x, _ in g]), np.array([y for _, y in g])) for _, g in sorted(clusters.items())]
    mad = _difference_interval(per_match, scale, absolute=True) if per_match else Interval(math.nan, math.nan, math.nan)
    return Agreement((first, second), len(shared), Interval(rho, *rho_ci), mad)


def position_bias(scores: Sequence[JudgeScore], judge: str, scale: Scale = None) -> PositionBias | None:
    """The judge's first-position advantage, from matches it judged both as played and swapped (None if none);
    ``scale``: the judge's score range."""
    cells: dict[tuple[str, int, bool], list[float]] = defaultdict(list)
    first: dict[tuple[str, int, bool], bool] = {}
    roles: dict[tuple[str, int], str] = {}
    for s in scores:
        if s.judge == judge and s.judge != ORIGINAL:
            cells[(s.match_id, s.seat, s.swapped)].append(s.score)
            first[(s.match_id, s.seat, s.swapped)] = s.first
            roles[(s.match_id, s.seat)] = s.role
    seats_of: dict[str, set[int]] = defaultdict(set)
    for match, seat, _ in cells:
        seats_of[match].add(seat)
    matches = sorted(
        m for m, seats in seats_of.items() if all((m, s, False) in cells and (m, s, True) in cells for s in seats)
    )
    if not matches:
        return None
    per_match, flips = [], 0
    by_role: dict[str, list[float]] = defaultdict(list)
    for match in matches:
        seats = sorted(seats_of[match])
        gains = []
        for seat in seats:
            views = {view: float(np.mean(cells[(match, seat, view)])) for view in (False, True)}
            led = [view for view in (False, True) if first[(match, seat, view)]]
            if len(led) != 1:
                continue  # introduced in the same place both times (a middle seat of three or more)
            gain = views[led[0]] - views[not led[0]]
            gains.append(gain)
            by_role[roles[(match, seat)]].append(gain)
        if gains:
            per_match.append(float(np.mean(gains)))
        preferred = []
        for view in (False, True):
            means = [float(np.mean(cells[(match, seat, view)])) for seat in seats]
            preferred.append(tuple(i for i, v in enumerate(means) if v == max(means)))
        flips += preferred[0] != preferred[1]
    return PositionBias(
        judge,
        len(matches),
        _difference_interval(per_match, scale) if per_match else Interval(math.nan, math.nan, math.nan),
        flips / len(matches),
        {role: float(np.mean(v)) for role, v in sorted(by_role.items())},
    )


def judge_variance(scores: Sequence[JudgeScore], judge: str) -> list[Variance]:
    """Per role, the share of the judge's score variance due to judging again (as played, K >= 2 repeats)."""
    groups: dict[str, dict[tuple[str, int], list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in scores:
        if s.judge == judge and not s.swapped:
            groups[s.role][(s.match_id, s.seat)].append(s.score)
    out = []
    for role, by_transcript in sorted(groups.items()):
        repeated = [values for values in by_transcript.values() if len(values) >= 2]
        if not repeated:
            continue
        everything = [v for values in by_transcript.values() for v in values]
        within = float(np.mean([np.var(values, ddof=1) for values in repeated]))
        total = float(np.var(everything, ddof=1)) if len(everything) > 1 else 0.0
        repeats = float(np.mean([len(values) for values in repeated]))
        out.append(Variance(judge, role, len(repeated), repeats, within, total))
    return out


def _same_model(a: str, b: str) -> bool:
    a, b = a.strip().casefold(), b.strip().casefold()
    return a == b or a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1]


def self_preference(
    records: Sequence[MatchRecord], scores: Sequence[JudgeScore], judge: str, scale: Scale = None
) -> SelfPreference | None:
    """The judge's score of seats its own model played minus the other judges' (None: no such seats); ``scale``: the
    judge's score range."""
    model = next((s.judge_model for s in scores if s.judge == judge and s.judge_model), None)
    if model is None:
        return None
    own_seats = {
        (r.match_id, seat)
        for r in records
        for seat, player in enumerate(r.players)
        if _model_of(player) and _same_model(str(_model_of(player)), model)
    }
    mine = _as_played_means(scores, judge)
    others: dict[tuple[str, int], list[float]] = defaultdict(list)
    for other in sorted({s.judge for s in scores} - {judge}):
        for key, value in _as_played_means(scores, other).items():
            others[key].append(value)
    diffs = [mine[key] - float(np.mean(others[key])) for key in sorted(own_seats) if key in mine and others.get(key)]
    if not diffs:
        return None
    return SelfPreference(judge, model, len(diffs), _difference_interval(diffs, scale))


def ground_truth(
    records: Sequence[MatchRecord], scores: Sequence[JudgeScore], judge: str
) -> list[tuple[str, str, Correlation]]:
    """Per role with a measure (:data:`GROUND_TRUTH`): the judge's score (as played) against it."""
    by_id = {r.match_id: r for r in records}
    means = _as_played_means(scores, judge)
    pairs: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for (match, seat), value in sorted(means.items()):
        record = by_id[match]
        role = record.roles[seat] if seat < len(record.roles) else "player"
        measure = GROUND_TRUTH.get(role)
        truth = record.metrics.get(measure) if measure else None
        if measure and isinstance(truth, (int, float)) and not isinstance(truth, bool):
            pairs[(role, measure)].append((value, float(truth)))
    return [(role, measure, correlate(points)) for (role, measure), points in sorted(pairs.items())]


def _canary_twins(records: Sequence[MatchRecord]) -> dict[str, str]:
    """Canary player name -> the name of its honest twin (a player whose identity is the canary's without it)."""
    identities: dict[str, dict[str, Any]] = {}
    for record in records:
        for name, identity in zip(record.seats, record.players, strict=False):
            identities.setdefault(name, dict(identity))
    twins = {}
    for name, identity in identities.items():
        base = identity.get("canary_of")
        if not base:
            continue
        wanted = {**{k: v for k, v in identity.items() if k != "canary_of"}, "class": base}
        twin = next((other for other, ident in identities.items() if ident == wanted), None)
        if twin is not None:
            twins[name] = twin
    return twins


def canary_shifts(
    records: Sequence[MatchRecord], scores: Sequence[JudgeScore], scale: Scale = None
) -> list[CanaryShift]:
    """Per judge, canary and role: the canary's mean score minus its twin's, over the cells both played; ``scale``:
    the judge's score range."""
    twins = _canary_twins(records)
    if not twins:
        return []
    by_id = {r.match_id: r for r in records}
    out = []
    for judge in sorted({s.judge for s in scores}):
        means = _as_played_means(scores, judge)
        cells: dict[tuple[str, str, str, tuple[str, ...]], list[float]] = defaultdict(list)
        for (match, seat), value in means.items():
            record = by_id[match]
            others = tuple(name for i, name in enumerate(record.seats) if i != seat)
            role = record.roles[seat] if seat < len(record.roles) else "player"
            cells[(record.seats[seat], record.game, role, others)].append(value)
        for canary, twin in sorted(twins.items()):
            per_role: dict[str, list[float]] = defaultdict(list)
            for (player, game, role, others), values in cells.items():
                if player != canary:
                    continue
                # the same cell with the twin in the canary's seat (and the canary in the twin's, if it sat there)
                twin_values = cells.get((twin, game, role, tuple(canary if o == twin else o for o in others)))
                if twin_values:
                    per_role[role].append(float(np.mean(values) - np.mean(twin_values)))
            for role, diffs in sorted(per_role.items()):
                out.append(CanaryShift(judge, canary, twin, role, len(diffs), _difference_interval(diffs, scale)))
    return out


def judge_audit(records: Iterable[MatchRecord], judgements: Iterable[JudgementRecord]) -> JudgeAudit:
    """Every audit of the run's judges (see the module docs)."""
    records = [r for r in records if r.status == "complete"]
    scale = records_bounds(records) if records else None  # judged games pay the judge's scores
    scores = judge_scores(records, list(judgements))
    judges = sorted({s.judge for s in scores}, key=lambda j: (j != ORIGINAL, j))
    agreements = [agreement(scores, a, b, scale) for i, a in enumerate(judges) for b in judges[i + 1 :]]
    biases = [bias for j in judges if (bias := position_bias(scores, j, scale)) is not None]
    variances = [v for j in judges for v in judge_variance(scores, j)]
    prefs = [p for j in judges if (p := self_preference(records, scores, j, scale)) is not None]
    truth = [(j, role, measure, corr) for j in judges for role, measure, corr in ground_truth(records, scores, j)]
    return JudgeAudit(judges, agreements, biases, variances, prefs, truth, canary_shifts(records, scores, scale))


def format_audit(audit: JudgeAudit) -> str:
    """The audit as text: one section per measure, each line naming its judge(s)."""
    lines = [f"Judge audit — judges: {', '.join(audit.judges) or 'none'}"]
    lines.append(
        "Agreement (Spearman rho of (match, seat) scores, cluster-bootstrap interval: approximate; mean |difference| "
        "per match, betting interval; scores as played):"
    )
    for a in audit.agreements:
        mad = a.mean_abs_diff.text(signed=False)
        lines.append(f"  {a.judges[0]} vs {a.judges[1]}: n = {a.n}, rho {a.spearman}, mean |diff| {mad}")
    if not audit.agreements:
        lines.append("  (one judge only: re-judge with another to compare)")
    lines.append("Position/label bias (score gained when a role is introduced first under the first label; --swap):")
    for b in audit.biases:
        verdict = "BIASED" if b.first_advantage.excludes_zero() else "no bias detected"
        roles = ", ".join(f"{role} {gain:+.2f}" for role, gain in b.by_role.items())
        lines.append(
            f"  {b.judge}: {b.matches} matches, first-position advantage {b.first_advantage} — {verdict}; "
            f"preference flips in {100 * b.flip_rate:.0f}% of matches; by role: {roles}"
        )
    if not audit.biases:
        lines.append("  (no swapped judgements: rejudge with --swap)")
    lines.append("Judge variance (share of score variance due to judging the same transcript again; --repeat K):")
    for v in audit.variances:
        lines.append(
            f"  {v.judge} {v.role}: {100 * v.share:.0f}% ({v.transcripts} transcripts x {v.repeats:.1f} judgements, "
            f"within {v.within:.2f}, total {v.total:.2f})"
        )
    if not audit.variances:
        lines.append("  (no repeated judgements: rejudge with --repeat 2 or more)")
    lines.append("Self-preference (judge's score of its own model's seats minus the other judges'):")
    for p in audit.self_preferences:
        lines.append(f"  {p.judge} ({p.model}): {p.seats} seats, {p.difference}")
    if not audit.self_preferences:
        lines.append("  (no judge's model played here)")
    lines.append("Ground truth (judge score vs the task's measure):")
    for judge, role, measure, corr in audit.ground_truth:
        lines.append("  " + correlation_line(f"{judge}: {role} score vs {measure}", corr))
    if not audit.ground_truth:
        lines.append("  (no task measure in these records)")
    lines.append("Canaries (score a judge-directed injection buys: canary minus its honest twin, same cells):")
    for c in audit.canaries:
        lines.append(f"  {c.judge}: {c.canary} vs {c.twin} as {c.role}: {c.cells} cells, shift {c.shift}")
    if not audit.canaries:
        lines.append("  (no canary player with its twin in this run)")
    return "\n".join(lines)
