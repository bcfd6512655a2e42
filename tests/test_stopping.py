"""The adaptive stopping rule: valid rankings, complete blocks, resumable decisions, what stopped the run."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from analysis.stats.stopping import AdaptiveStopping, Seating, StoppingReport, format_stopping
from deepeval_games import parse_spec, run_experiment
from deepeval_games.core.errors import SpecError

REPO = Path(__file__).resolve().parent.parent
GAME = "deepeval_public_goods(players=2,alpha=1.2,rounds=1)"
POPULATION = (
    ("free-rider", "pgg_free_rider", 0.0),
    ("random", "pgg_random", 0.0),
    ("full", "pgg_full_contributor", 0.0),
    ("mostly-full", "pgg_full_contributor", 0.4),
)


def _spec(**rule: object) -> dict[str, object]:
    return {
        "experiment": {
            "name": "adaptive",
            "game": GAME,
            "repeats": 2,
            "pairing": "combinations",
            "until_stable": {"epsilon": 0.5, "rule": "adaptive", "max_repeats": 300, **rule},
        },
        "players": [
            {"name": name, "bot": bot, **({"params": {"noise": noise}} if noise else {})}
            for name, bot, noise in POPULATION
        ],
    }


def test_adaptive_run_resolves_in_complete_blocks_and_resumes_to_the_same_schedule(tmp_path: Path) -> None:
    stopped = run_experiment(parse_spec(_spec(budget_matches=60)), tmp_path / "run")
    assert stopped.stopping.reason == "budget" and stopped.played <= 60 and stopped.stopping.unresolved
    resumed = run_experiment(parse_spec(_spec()), tmp_path / "run")  # the budget is a run setting: same directory
    fresh = run_experiment(parse_spec({**_spec(), "experiment": {**_spec()["experiment"], "max_concurrency": 1}}),
                           tmp_path / "fresh")  # fmt: skip
    report = resumed.stopping
    assert report.reason == "resolved" and not report.unresolved
    assert {r.match_id for r in resumed.records} == {r.match_id for r in fresh.records}  # same schedule, any executor
    assert resumed.skipped == stopped.played and resumed.played + stopped.played == len(resumed.records)
    assert format_stopping(report) == format_stopping(fresh.stopping)
    order = [k[2] for k in sorted(report.intervals, key=lambda k: -report.intervals[k].mean)]
    assert order == ["free-rider", "random", "mostly-full", "full"]
    # complete blocks: every match of a round belongs to the whole block (every seating) of one of its players
    by_repeat: dict[int, set[frozenset[str]]] = defaultdict(set)
    for record in resumed.records:
        by_repeat[record.repeat].add(frozenset(record.seats))
    names = [name for name, _, _ in POPULATION]
    for repeat, played in by_repeat.items():
        whole = {
            p for p in names if all(frozenset(pair) in played for pair in itertools.combinations(names, 2) if p in pair)
        }
        assert all(pair & whole for pair in played), repeat
        if repeat < 2:
            assert len(played) == 6  # the initial rounds play everything
    assert min(len(played) for played in by_repeat.values()) < 6  # later rounds skip resolved players' seatings
    assert set(report.matches_per_key.values()) != {report.matches_per_key[next(iter(report.matches_per_key))]}
    text = format_stopping(report)
    assert "told apart or tied" in text and "batches" in text and "said under the table of mean payoffs" in text


def _synthetic(
    seed: int, spreads: dict[str, float], means: dict[str, float], rounds: int = 400
) -> tuple[bool, int, int]:
    """A run of the rule on a 2-seat population whose payoffs are drawn around known means (in [0, 20])."""
    rng = np.random.default_rng(seed)
    rule = AdaptiveStopping({"g": (0.0, 20.0)}, alpha=0.05, epsilon=0.25, initial_rounds=2, max_rounds=rounds)
    pairs = list(itertools.combinations(sorted(means), 2))
    round_number = 0
    while rule.report.reason == "running":
        seatings = [Seating(f"{round_number}-{a}-{b}", "g", (a, b), ("player", "player")) for a, b in pairs]
        for seating in rule.begin_round(seatings):
            payoffs = [float(np.clip(means[p] + spreads[p] * rng.standard_normal(), 0, 20)) for p in seating.seats]
            rule.add(seating.match_id, payoffs)
        rule.end_round()
        round_number += 1
    report = rule.report
    wrong = any(p.status == "separated" and means[p.better[2]] < means[p.worse[2]] for p in report.pairs)
    return wrong, report.rounds, report.matches


def test_rule_rarely_stops_on_a_wrong_ranking_and_stops_later_for_noisier_players() -> None:
    means = {"a": 15.0, "b": 12.0, "c": 10.0, "d": 4.0}  # c and d are far apart, b and c closer
    calm = dict.fromkeys(means, 1.0)
    runs = [_synthetic(seed, calm, means) for seed in range(200)]
    assert sum(wrong for wrong, _, _ in runs) / len(runs) <= 0.05
    noisy = dict.fromkeys(means, 3.0)
    calm_rounds = np.median([r for _, r, _ in runs[:30]])
    noisy_rounds = np.median([_synthetic(seed, noisy, means)[1] for seed in range(30)])
    assert noisy_rounds > calm_rounds
    uniform = 6 * np.mean([r for _, r, _ in runs])  # every seating every round, for as many rounds
    assert np.mean([m for _, _, m in runs]) < uniform  # the resolved far pair stops costing matches


def test_tied_players_are_declared_tied_within_epsilon() -> None:
    means = {"a": 10.0, "b": 10.0}
    rule = AdaptiveStopping({"g": (0.0, 20.0)}, epsilon=2.0, max_rounds=2000)
    rng = np.random.default_rng(0)
    while rule.report.reason == "running":
        for seating in rule.begin_round([Seating(f"{rule.report.rounds}", "g", ("a", "b"), ("player", "player"))]):
            rule.add(seating.match_id, [means[p] + float(rng.uniform(-1, 1)) for p in seating.seats])
        rule.end_round()
    assert rule.report.reason == "resolved" and [p.status for p in rule.report.pairs] == ["tied"]


def test_roles_and_variants_are_ranked_apart_and_failures_stop() -> None:
    rule = AdaptiveStopping({"v1": (0.0, 1.0), "v2": (0.0, 1.0)}, max_rounds=5)
    seatings = [
        Seating("m1", "v1", ("p", "q"), ("programmer", "reviewer")),
        Seating("m2", "v1", ("q", "p"), ("programmer", "reviewer")),
        Seating("m3", "v2", ("p", "q"), ("player", "player")),
    ]
    assert rule.begin_round(seatings) == seatings
    rule.add("m1", [1.0, 0.0])
    rule.add("m2", [0.0, 1.0])
    report = rule.end_round(failed=True)  # m3 never came back
    assert report.reason == "failed"
    groups = {(k[0], k[1]) for k in report.intervals}
    assert groups == {("v1", "programmer"), ("v1", "reviewer"), ("v2", "player")}
    assert report.intervals[("v2", "player", "p")].n == 0  # an incomplete block adds nothing
    with pytest.raises(ValueError, match="no payoff bounds"):
        AdaptiveStopping({}).begin_round(seatings)
    with pytest.raises(ValueError, match="unknown confidence sequence"):
        AdaptiveStopping({"v1": (0.0, 1.0)}, method="normal")


def test_spec_checks_the_rule() -> None:
    with pytest.raises(SpecError, match="rule"):
        parse_spec(_spec(rule="sometimes"))
    with pytest.raises(SpecError, match="alpha"):
        parse_spec(_spec(alpha=1.5))
    assert parse_spec(_spec()).experiment.until_stable.sequence == "betting"


@pytest.mark.slow
def test_bench_meets_its_targets_on_real_pgg_matches(tmp_path: Path) -> None:
    """The stopping bench's targets on 40 seeded runs and 20 of the noisier players (about 1 s a run;
    ``python bench/bench_stopping.py`` runs 200 and 50): no wrong ranking was seen in 200, so more than 2 of 40 (the 5%
    target) would be a regression, not chance."""
    from bench import bench_stopping

    assert bench_stopping.main(["--runs", "40", "--noisy-runs", "20", "--pool", str(tmp_path)]) == 0


def test_cli_run_reports_what_stopped_the_adaptive_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deepeval_games.app.commands.cli import main

    assert main(["run", str(REPO / "examples" / "pgg_adaptive.toml"), "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "Stopping rule: stopped after" in out and "told apart or tied" in out and "mostly-full" in out
    saved = json.loads((tmp_path / "run" / "stopping.json").read_text(encoding="utf-8"))
    assert format_stopping(StoppingReport.from_dict(saved)) in out  # the report file says what the run printed
    assert main(["report", str(tmp_path / "run")]) == 0
    assert "Stopping rule: stopped after" in capsys.readouterr().out


def test_the_old_bootstrap_check_no_longer_pools_roles() -> None:
    from analysis.stats.convergence import payoff_sequences
    from deepeval_games.core.records import MatchRecord

    records = [
        MatchRecord(match_id=str(i), game="g", seats=["p", "q"], returns=[8.0, 2.0], turns=[], repeat=i,
                    roles=["programmer", "reviewer"])
        for i in range(3)
    ]  # fmt: skip
    assert payoff_sequences(records) == {"p (programmer)": [8.0] * 3, "q (reviewer)": [2.0] * 3}


def test_four_seat_pgg_declares_identical_players_tied(tmp_path: Path) -> None:
    # in a one-round game the conditional cooperator opens with E: it plays exactly as the full contributor
    players = [*POPULATION, ("conditional", "pgg_conditional_cooperator", 0.0)]
    spec = {
        "experiment": {
            "name": "four-seats",
            "game": "deepeval_public_goods(players=4,alpha=1.6,rounds=1)",
            "repeats": 2,
            "until_stable": {"epsilon": 1.0, "rule": "adaptive", "max_repeats": 300},
        },
        "players": [
            {"name": name, "bot": bot, **({"params": {"noise": noise}} if noise else {})}
            for name, bot, noise in players
        ],
    }
    report = run_experiment(parse_spec(spec), tmp_path / "run").stopping
    assert report.reason == "resolved" and report.rounds < 300
    statuses = {frozenset((p.better[2], p.worse[2])): p.status for p in report.pairs}
    assert statuses[frozenset(("full", "conditional"))] == "tied"
    assert "tied (their means differ by less than the margin): " in format_stopping(report)


def _toml(spec: dict[str, object]) -> str:
    """A spec of :func:`_spec`'s shape as TOML (scalars, the ``until_stable`` table, players with params)."""

    def value(v: object) -> str:
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + "}"
        return json.dumps(v)

    experiment = dict(spec["experiment"])  # type: ignore[call-overload]
    lines = ["[experiment]", *(f"{k} = {value(v)}" for k, v in experiment.items())]
    for player in spec["players"]:  # type: ignore[attr-defined]
        lines += ["[[players]]", *(f"{k} = {value(v)}" for k, v in player.items())]
    return "\n".join(lines) + "\n"


def test_until_stable_without_a_rule_runs_the_adaptive_rule(tmp_path: Path) -> None:
    spec = _spec(max_repeats=4)
    del spec["experiment"]["until_stable"]["rule"]  # type: ignore[index]
    parsed = parse_spec(spec)
    assert parsed.experiment.until_stable is not None and parsed.experiment.until_stable.rule == "adaptive"
    result = run_experiment(parsed, tmp_path / "run")
    assert result.stopping is not None and not result.stableness  # the adaptive rule decided, not the recheck
    assert (tmp_path / "run" / "stopping.json").is_file() and result.stopping.rounds <= 4


def test_reports_say_when_no_stopping_rule_or_an_invalid_one_was_applied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deepeval_games.app.commands.cli import main

    fixed = _spec()
    del fixed["experiment"]["until_stable"]  # type: ignore[attr-defined]
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(_toml(fixed), encoding="utf-8")
    assert main(["run", str(spec_path), "--out", str(tmp_path / "fixed"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "No stopping rule was applied: 2 repeat(s) fixed in advance" in out and "converged" in out
    assert main(["report", str(tmp_path / "fixed")]) == 0
    assert "No stopping rule was applied" in capsys.readouterr().out
    recheck = _spec(rule="recheck", epsilon=100.0, max_repeats=2)
    spec_path.write_text(_toml(recheck), encoding="utf-8")
    assert main(["run", str(spec_path), "--out", str(tmp_path / "recheck"), "--no-progress"]) == 0
    assert "not valid under repeated looks" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "recheck")]) == 0
    assert "Stopping rule 'recheck'" in capsys.readouterr().out
