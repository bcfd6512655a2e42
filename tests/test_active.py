"""The active rule (analysis.stats.active): paired observations, pair-level selection in complete blocks, its stop."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from analysis.stats.active import ActiveRanking
from analysis.stats.stopping import Seating, StoppingReport, format_stopping


def _round(r: int, names: list[str]) -> list[Seating]:
    return [Seating(f"{r}-{a}-{b}", "g", (a, b), ("player", "player")) for a, b in itertools.permutations(names, 2)]


def _play(rule: ActiveRanking, strengths: dict[str, float], rng: np.random.Generator, rounds: int) -> list[set[str]]:
    """Play until the rule stops (or ``rounds``); the match ids selected in each round."""
    chosen = []
    for r in range(rounds):
        selected = rule.begin_round(_round(r, sorted(strengths)))
        chosen.append({s.match_id for s in selected})
        for s in selected:
            a, b = s.seats
            first = 1.0 if rng.random() < 1 / (1 + 10 ** ((strengths[b] - strengths[a]) / 400)) else -1.0
            rule.add(s.match_id, (first, -first))
        if rule.end_round().reason != "running":
            break
    return chosen


def test_paired_observations_rank_and_separate_clear_differences() -> None:
    strengths = {"a": 0.0, "b": 400.0, "c": 800.0, "d": 1200.0}
    rule = ActiveRanking({"g": (-1.0, 1.0)}, epsilon=0.05, max_rounds=200)
    _play(rule, strengths, np.random.default_rng(1), 200)
    report = rule.report
    assert report.reason == "resolved"
    assert [p.status for p in report.pairs] == ["separated"] * 3
    assert [(p.better[2], p.worse[2]) for p in report.pairs] == [("d", "c"), ("c", "b"), ("b", "a")]
    # what is printed: the fit's order, and the payoff-difference interval of each pair of neighbours (the fit's
    # score is given no payoff-unit interval)
    assert all(p.difference is not None and p.difference.low > 0 for p in report.pairs)
    text = format_stopping(report)
    for p in report.pairs:
        assert p.difference is not None
        gap = f"{p.better[2]} minus {p.worse[2]}: 95% interval [{p.difference.low:.3f}, {p.difference.high:.3f}]"
        assert any(line.strip() == gap for line in text.splitlines())
        assert f"{p.better[2]} above {p.worse[2]}" in text
    assert "ranking: d, c, b, a" in text and "anytime interval" not in text
    assert StoppingReport.from_dict(report.to_dict()) == report


def test_later_rounds_play_complete_windows_of_unresolved_pairs_only() -> None:
    # two close pairs far apart: after the first round only the seatings inside each close pair are worth playing
    strengths = {"a": 0.0, "b": 10.0, "c": 2000.0, "d": 2010.0, "e": 4000.0}
    rule = ActiveRanking({"g": (-1.0, 1.0)}, epsilon=0.01, max_rounds=40)
    chosen = _play(rule, strengths, np.random.default_rng(2), 40)
    assert len(chosen[0]) == 20  # the first round: every seating
    for ids in chosen[1:]:
        pairs = {tuple(i.split("-")[1:]) for i in ids}
        assert all((b, a) in pairs for a, b in pairs)  # both seat orders: a complete block
    assert {tuple(i.split("-")[1:]) for i in chosen[-1]} == {("a", "b"), ("b", "a"), ("c", "d"), ("d", "c")}
    assert rule.report.reason == "max_rounds" and len(rule.report.unresolved) == 2


def test_equal_players_are_tied_never_separated() -> None:
    strengths = dict.fromkeys("abcde", 0.0)
    for seed in range(3):
        rule = ActiveRanking({"g": (-1.0, 1.0)}, epsilon=1.5, max_rounds=300)
        _play(rule, strengths, np.random.default_rng(seed), 300)
        assert rule.report.reason == "resolved"
        assert {p.status for p in rule.report.pairs} == {"tied"}


def test_decisions_are_a_function_of_the_results_and_the_budget_stops() -> None:
    strengths = {"a": 0.0, "b": 60.0, "c": 120.0, "d": 180.0}
    first = _play(ActiveRanking({"g": (-1.0, 1.0)}, epsilon=0.5), strengths, np.random.default_rng(3), 30)
    again = _play(ActiveRanking({"g": (-1.0, 1.0)}, epsilon=0.5), strengths, np.random.default_rng(3), 30)
    assert first == again
    budget = ActiveRanking({"g": (-1.0, 1.0)}, epsilon=0.5, budget=30)
    _play(budget, strengths, np.random.default_rng(3), 30)
    assert budget.report.reason == "budget" and budget.report.matches <= 30


def test_three_seat_games_pair_by_the_same_players_in_other_seat_orders() -> None:
    names = ["a", "b", "c", "d"]
    rule = ActiveRanking({"g": (0.0, 3.0)}, epsilon=0.01, max_rounds=40)
    skill = {"a": 0.0, "b": 1.0, "c": 2.0, "d": 3.0}
    for r in range(40):
        offered = [Seating(f"{r}-{''.join(t)}", "g", t, ("player",) * 3) for t in itertools.combinations(names, 3)]
        for s in rule.begin_round(offered):
            rule.add(s.match_id, [skill[n] for n in s.seats])  # a player's payoff is its skill
        if rule.end_round().reason != "running":
            break
    assert rule.report.reason == "resolved" and rule.report.rounds < 40
    assert [p.better[2] for p in rule.report.pairs] == ["d", "c", "b"]
    assert {p.status for p in rule.report.pairs} == {"separated"}


def test_the_top_boundary_is_resolved_finer_and_the_rest_as_before() -> None:
    strengths = {"a": 0.0, "b": 40.0, "c": 80.0, "d": 120.0, "e": 160.0}
    plain = ActiveRanking({"g": (-1.0, 1.0)}, epsilon=2.4, max_rounds=400)
    _play(plain, strengths, np.random.default_rng(5), 400)
    top = ActiveRanking({"g": (-1.0, 1.0)}, epsilon=2.4, max_rounds=400, top=2, top_epsilon=1.2)
    _play(top, strengths, np.random.default_rng(5), 400)
    assert plain.report.reason == top.report.reason == "resolved"
    assert top.report.matches > plain.report.matches + 100  # the boundary pair plays on
    boundary = top.report.pairs[1]  # second and third of the final order
    assert boundary.status in {"separated", "tied"}
    assert {boundary.better[2], boundary.worse[2]} <= {"b", "c", "d"}
    assert len(top.report.intervals) == 5


def test_the_bradley_terry_order_is_not_skewed_by_who_met_whom() -> None:
    # b met only the strongest (and lost), c only the weakest (and won): by mean payoff c would look better; the fit,
    # which knows whom each met, puts b above c
    rule = ActiveRanking({"g": (-1.0, 1.0)}, epsilon=0.5)
    rule.begin_round(_round(0, ["a", "b", "c", "d"]))
    results = {("a", "b"): 0.6, ("c", "d"): 0.6, ("a", "d"): 0.8}
    for (x, y), share in results.items():  # share: x's payoff share against y, the same in both seat orders
        payoff = 2.0 * share - 1.0
        rule.add(f"0-{x}-{y}", (payoff, -payoff))
        rule.add(f"0-{y}-{x}", (-payoff, payoff))
    rule.end_round()  # the seatings without a result were not played
    scores = {key[2]: iv.mean for key, iv in rule.report.intervals.items()}
    assert sorted(scores, key=lambda k: -scores[k]) == ["a", "b", "c", "d"]


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError):
        ActiveRanking({"g": (0.0, 1.0)}, top=0)
    with pytest.raises(ValueError):
        ActiveRanking({"g": (0.0, 1.0)}, top_epsilon=-1.0)
    with pytest.raises(ValueError):
        ActiveRanking({"g": (0.0, 1.0)}, method="normal")
    with pytest.raises(ValueError):
        ActiveRanking({}).begin_round(_round(0, ["a", "b"]))


def test_the_betting_sequence_extends_in_one_pass_as_it_updates_one_by_one() -> None:
    from analysis.stats.confseq import BettingConfidenceSequence

    rng = np.random.default_rng(4)
    one, many = BettingConfidenceSequence(-2.0, 2.0, alpha=0.01), BettingConfidenceSequence(-2.0, 2.0, alpha=0.01)
    for size in (1, 29, 5, 60):
        values = rng.choice([-2.0, 0.0, 2.0], size=size, p=[0.2, 0.3, 0.5])
        for v in values:
            expected = one.update(v)
        assert many.extend(values) == expected
    assert expected.high - expected.low < 1.5
