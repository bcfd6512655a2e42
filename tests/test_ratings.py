"""Ratings for any number of seats, per role: α-Rank, Plackett–Luce for PGG, Bradley–Terry with CIs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis.stats.ratings import (
    ELO,
    MetaGame,
    alpha_rank,
    alpha_rank_records,
    bradley_terry,
    fit_strengths,
    meta_game,
    nash_averaging,
    paired_comparison,
    pairwise_outcomes,
    plackett_luce,
    points_share,
    role_ratings,
)
from deepeval_games import parse_spec, run_experiment
from deepeval_games.app.spec.schedule import count_matches, plan_matches
from deepeval_games.core.records import MatchRecord

PGG = "deepeval_public_goods(players=4,mode=1,alpha=1.6)"
PAIRING = "self_play"
POPULATION = {
    "free-rider": "pgg_free_rider",
    "full-contributor": "pgg_full_contributor",
    "conditional": "pgg_conditional_cooperator",
    "random": "pgg_random",
}


def _pgg_spec(pairing: str, repeats: int) -> dict[str, object]:
    return {
        "experiment": {"name": "ratings", "game": PGG, "repeats": repeats, "pairing": pairing},
        "players": [{"name": name, "bot": bot} for name, bot in POPULATION.items()],
    }


def _record(seats, returns, *, roles=None, repeat=0, game="g(x=1)", match_id="m"):
    return MatchRecord(
        match_id=match_id, game=game, seats=list(seats), returns=list(returns), turns=[], repeat=repeat,
        roles=list(roles or []),
    )  # fmt: skip


def test_alpha_rank_puts_a_dominant_strategy_first() -> None:
    # row player's payoffs; "defect" strictly dominates both others, "cooperate" beats "tit" only against tit
    table = np.array([[3.0, 0.0, 3.0], [5.0, 1.0, 4.0], [3.0, 0.5, 2.0]])
    ranking = alpha_rank(MetaGame(("cooperate", "defect", "tit"), ("player",), (table,))).ranking["player"]
    assert ranking[0][0] == "defect" and ranking[0][1] > 0.9
    # two roles: role 0 strictly prefers "a", role 1 strictly prefers "y" whatever the other does
    row = np.array([[2.0, 3.0], [0.0, 1.0]])
    col = np.array([[0.0, 1.0], [0.0, 1.0]])
    two = alpha_rank(MetaGame(("a", "y"), ("programmer", "reviewer"), (row, col))).ranking
    assert two["programmer"][0][0] == "a" and two["reviewer"][0][0] == "y"


def test_self_play_schedule_and_alpha_rank_of_the_pgg_population(tmp_path: Path) -> None:
    spec = parse_spec(_pgg_spec("self_play", 1))
    plan = plan_matches(spec)
    assert len(plan) == count_matches(spec) == 35  # multisets of 4 seats from 4 players
    assert any(len(set(m.seats)) == 1 for m in plan)  # a player against itself
    result = run_experiment(spec, tmp_path / "run")
    ranking = alpha_rank_records(result.records).ranking["player"]
    assert ranking[0][0] == "free-rider" and ranking[-1][0] == "full-contributor"
    with pytest.raises(ValueError, match="self_play"):  # a meta-game needs every seating with replacement
        meta_game([r for r in result.records if len(set(r.seats)) == 4])
    two_seat = parse_spec(
        {
            **_pgg_spec("self_play", 1),
            "experiment": {"game": "deepeval_public_goods(players=2)", "pairing": "self_play"},
        }
    )
    assert len(plan_matches(two_seat)) == count_matches(two_seat) == 16  # ordered pairs with replacement


def test_plackett_luce_rates_the_four_seat_pgg(tmp_path: Path) -> None:
    result = run_experiment(parse_spec(_pgg_spec("permute", 12)), tmp_path / "run")
    ratings = plackett_luce(result.records)
    order = sorted(ratings, key=lambda name: -ratings[name].mu)
    assert order[0] == "free-rider" and order[-1] == "full-contributor"
    assert all(r.matches == 12 and 0 < r.sigma < 200 for r in ratings.values())
    shuffled = list(reversed(result.records))  # one batched fit: the order of the matches does not matter
    for name, rating in plackett_luce(shuffled).items():
        assert (rating.mu, rating.sigma, rating.matches) == pytest.approx(
            (ratings[name].mu, ratings[name].sigma, ratings[name].matches), rel=1e-9
        )


def test_plackett_luce_is_bradley_terry_for_two_seats_and_its_sigma_is_the_spread_of_its_mu() -> None:
    rng = np.random.default_rng(0)
    names, strength = ["a", "b", "c", "d", "e"], np.array([0.0, 0.3, 0.6, 0.9, 1.2])
    two = [_record(["a", "b"], [1, 0], match_id="1"), _record(["b", "c"], [0, 0], match_id="2")]
    two += [_record(["c", "a"], [1, 0], match_id="3"), _record(["a", "c"], [0, 1], match_id="4")]
    assert {k: r.mu for k, r in plackett_luce(two).items()} == pytest.approx(bradley_terry(two), abs=1e-9)
    mus, sigmas = [], []
    for _ in range(120):  # Plackett–Luce draws of four seats of five players (the Gumbel trick)
        records = []
        for m in range(100):
            seats = rng.choice(5, 4, replace=False)
            places = np.argsort(np.argsort(-(strength[seats] + rng.gumbel(size=4))))
            records.append(_record([names[i] for i in seats], list(-places.astype(float)), match_id=str(m)))
        rated = plackett_luce(records, prior=1e-4)
        mus.append([rated[n].mu for n in names])
        sigmas.append([rated[n].sigma for n in names])
    truth = ELO * (strength - strength.mean())
    assert np.abs(np.mean(mus, axis=0) - truth).max() < 10  # consistent: no bias beyond the draws' noise
    # the sandwich standard error is the spread of the estimates (the pairs of a match are not independent)
    assert np.mean(sigmas, axis=0) == pytest.approx(np.std(mus, axis=0), rel=0.2)


def test_fit_strengths_finds_the_maximum_choix_finds() -> None:
    import choix

    rng = np.random.default_rng(1)
    for _ in range(40):
        size = int(rng.integers(2, 12))
        wins = np.zeros((size, size))
        for _ in range(int(rng.integers(1, 200))):
            a, b = rng.choice(size, 2, replace=False)
            wins[a, b] += rng.choice([1.0, 0.5, 0.25])
        wins[0, 1:] += 5  # a player who never lost: only the prior keeps its strength finite
        wins[1:, 0] = 0
        for prior in (0.5, 0.01):
            reference = choix.ilsr_pairwise_dense(wins + prior * (1 - np.eye(size)) / 2, tol=1e-12, max_iter=10000)
            assert fit_strengths(wins, prior=prior) == pytest.approx(reference - reference.mean(), abs=1e-8)


def test_asymmetric_tasks_are_rated_per_role_never_across_roles() -> None:
    # code-review-like records: a strong programmer "p", a weak one "w"; reviewer "r" is stricter than "s"
    records, n = [], 0
    for repeat in range(4):
        for programmer, reviewer in [("p", "r"), ("w", "r"), ("p", "s"), ("w", "s"), ("r", "p"), ("s", "p")]:
            quality = {"p": 8, "w": 3, "r": 6, "s": 5}[programmer]
            strict = {"r": 2, "s": 0, "p": 1, "w": 1}[reviewer]
            records.append(
                _record(
                    [programmer, reviewer],
                    [quality - strict, 5 + strict],
                    roles=["programmer", "reviewer"],
                    repeat=repeat,
                    game="deepeval_code_review(task_id=11)",
                    match_id=str(n := n + 1),
                )
            )
    ratings = role_ratings(records)
    assert set(ratings) == {"programmer", "reviewer"}
    assert ratings["programmer"]["p"] > ratings["programmer"]["r"] > ratings["programmer"]["w"]
    assert ratings["reviewer"]["r"] > ratings["reviewer"]["s"]
    assert pairwise_outcomes(records) == [] and bradley_terry(records) == {}  # no cross-role comparison
    with pytest.raises(ValueError, match="per role"):
        plackett_luce(records)
    with pytest.raises(ValueError, match="as programmer against"):  # the meta-game lacks (r, s), (w, p), ...
        meta_game(records)
    paired = paired_comparison(records, "p", "w", role="programmer")  # same task, repeat and reviewer
    assert paired.pairs == 8 and paired.mean_difference == 5.0 and paired.p_value < 0.01
    assert paired_comparison(records, "r", "s", role="reviewer").mean_difference == 2.0
    with pytest.raises(ValueError, match="never played the same item"):
        paired_comparison(records, "w", "s", role="reviewer")


def test_bradley_terry_orders_players_and_points_shares_have_valid_intervals() -> None:
    records = []
    for i in range(12):
        records += [
            _record(["s", "m"], [1, 0], match_id=f"a{i}"),
            _record(["m", "w"], [1, 0], match_id=f"b{i}"),
            _record(["w", "s"], [0, 1], match_id=f"c{i}"),
            _record(["w", "m"], [1 if i % 4 == 0 else 0, 0], match_id=f"d{i}"),
            _record(["s", "s"], [1, 0], match_id=f"e{i}"),  # self-play: no comparison
        ]
    rating = bradley_terry(records)
    assert rating["s"] > rating["m"] > rating["w"]
    shares = points_share(records)  # a draw is half a point; self-play is no comparison
    assert (shares["s"].n, shares["m"].n, shares["w"].n) == (24, 36, 36)
    assert shares["s"].mean == 1.0 and shares["m"].mean == pytest.approx(16.5 / 36)
    assert shares["w"].mean == pytest.approx(7.5 / 36)
    assert all(0.0 <= s.low < s.mean <= s.high <= 1.0 for s in shares.values() if s.mean < 1)
    assert shares["s"].low > shares["w"].high  # 24 wins against 3 in 24: told apart at 95%
    assert shares == points_share(list(reversed(records)))


def test_code_review_ratings_are_reported_per_role(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deepeval_games.app.commands.cli import main
    from deepeval_games.infra.sandbox import bubblewrap_usable

    if not bubblewrap_usable():
        pytest.skip("bubblewrap cannot create sandboxes here")
    players = {
        "reference": "cr_reference_programmer",
        "broken": "cr_broken_programmer",
        "test-reviewer": "cr_test_reviewer",
    }
    spec = {
        "experiment": {
            "name": "cr-ratings",
            "game": "deepeval_code_review(max_rounds=2)",
            "sweep": {"task_id": [11, 17]},
            "pairing": "round_robin",
        },
        "players": [{"name": name, "bot": bot} for name, bot in players.items()],
        "judge": {"bot": "judge_pass_rate"},
    }
    result = run_experiment(parse_spec(spec), tmp_path / "run")
    ratings = role_ratings(result.records)
    assert set(ratings) == {"programmer", "reviewer"}
    assert ratings["programmer"]["reference"] > ratings["programmer"]["broken"]
    assert pairwise_outcomes(result.records) == []  # a programmer's payoff is never compared with a reviewer's
    assert main(["report", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "programmer" in out and "reviewer" in out


def test_nash_averaging_spreads_mass_over_a_cycle_and_drops_a_dominated_player() -> None:
    pytest.importorskip("cvxpy")
    cycle = np.array([[0, -1, 1, 2], [1, 0, -1, 2], [-1, 1, 0, 2], [-2, -2, -2, 0]], dtype=float)
    result = nash_averaging(MetaGame(("rock", "paper", "scissors", "weak"), ("player",), (cycle,)))
    assert all(abs(result[p][0] - 1 / 3) < 1e-3 and abs(result[p][1]) < 1e-3 for p in ("rock", "paper", "scissors"))
    assert result["weak"][0] < 1e-3 and result["weak"][1] == pytest.approx(-2.0, abs=1e-3)
    with pytest.raises(ValueError, match="two-seat"):
        nash_averaging(MetaGame(("a", "b"), ("x", "y"), (cycle[:2, :2], cycle[:2, :2])))
