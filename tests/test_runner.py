"""Experiment runs: stable ids, permuted seats, durable store, resume, rescheduling, failures kept apart."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from analysis import symmetric_scores
from deepeval_games import (
    Decision,
    DeepEvalBot,
    InfrastructureError,
    Observation,
    ResumeMismatchError,
    load_spec,
    parse_spec,
    register_bot,
    run_experiment,
)
from deepeval_games.app.spec.schedule import plan_matches
from deepeval_games.app.storage.store import DB_NAME, JSONL_NAME


@register_bot("test_flaky_free_rider")
class FlakyFreeRider(DeepEvalBot):
    """Invests 0, but the model service fails ``failures_left`` times first."""

    failures_left = 0

    def __init__(self, player_id, rng=None, *, game=None) -> None:
        super().__init__(player_id, rng)

    async def act(self, observation: Observation) -> Decision:
        if FlakyFreeRider.failures_left > 0:
            FlakyFreeRider.failures_left -= 1
            raise InfrastructureError("injected 503 from the model service")
        return Decision(action=0)


@register_bot("test_buggy")
class Buggy(DeepEvalBot):
    """Crashes in round 2 of every match."""

    def __init__(self, player_id, rng=None, *, game=None) -> None:
        super().__init__(player_id, rng)

    async def act(self, observation: Observation) -> Decision:
        if observation.fields["round"] == 2:
            raise ZeroDivisionError("bug in a bot")
        return Decision(action=0)


def _spec(players: list[tuple[str, str]], repeats: int = 6, seed: int = 0, game: str | None = None, **extra):
    return parse_spec(
        {
            "experiment": {
                "name": "t",
                "game": game or f"deepeval_public_goods(players={len(players)},mode=1,alpha=1.6)",
                "repeats": repeats,
                "seed": seed,
                **extra,
            },
            "players": [{"name": n, "bot": b} for n, b in players],
        }
    )


MIXED = [
    ("free-rider", "pgg_free_rider"),
    ("full-contributor", "pgg_full_contributor"),
    ("conditional", "pgg_conditional_cooperator"),
    ("random", "pgg_random"),
]


def test_example_spec_free_rider_out_earns_full_contributor(repo_root: Path, tmp_path: Path) -> None:
    result = run_experiment(load_spec(repo_root / "examples" / "pgg_scripted.toml"), tmp_path / "run")
    assert result.played == result.planned == 20 and not result.failed
    scores = {s.player: s for s in symmetric_scores(result.records)}
    assert scores["free-rider"].mean > scores["full-contributor"].mean
    assert scores["free-rider"].ci_low > scores["full-contributor"].ci_high
    lines = (tmp_path / "run" / JSONL_NAME).read_text().splitlines()
    assert len(lines) == 20
    row = json.loads(lines[0])
    assert {"match_id", "game", "seats", "returns", "turns", "schema_version"} <= set(row)
    assert len(row["seats"]) == len(row["returns"]) == 4
    assert row["transcript"] == "moves" and row["turns"] == [] and len(row["moves"]) == 20  # scripted: the moves
    # a finished run folds its write-ahead log into the database and leaves no side file (lock, -wal, -shm)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["manifest.json", JSONL_NAME, DB_NAME]
    with sqlite3.connect(tmp_path / "run" / DB_NAME) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert db.execute("SELECT COUNT(*) FROM matches").fetchone()[0] == 20


def test_seats_are_permuted_across_repeats_from_the_seed() -> None:
    plan = plan_matches(_spec(MIXED, repeats=12))
    assert len({m.seats for m in plan}) > 4
    assert [m.seats for m in plan] == [m.seats for m in plan_matches(_spec(MIXED, repeats=12))]
    assert [m.seats for m in plan] != [m.seats for m in plan_matches(_spec(MIXED, repeats=12, seed=1))]


def test_match_ids_do_not_depend_on_listing_order() -> None:
    forward = {m.match_id: m.seats for m in plan_matches(_spec(MIXED))}
    backward = {m.match_id: m.seats for m in plan_matches(_spec(list(reversed(MIXED))))}
    assert forward == backward and len(forward) == 6


def test_round_robin_plays_all_pairs_both_orders() -> None:
    spec = _spec(MIXED[:3], repeats=2, game="deepeval_public_goods(players=2)")
    plan = plan_matches(spec)
    assert len(plan) == 3 * 2 * 2
    assert {m.seats for m in plan} == {(a, b) for a, _ in MIXED[:3] for b, _ in MIXED[:3] if a != b}


def test_same_seed_gives_identical_records(tmp_path: Path) -> None:
    first = run_experiment(_spec(MIXED, seed=11), tmp_path / "a").records
    second = run_experiment(_spec(MIXED, seed=11), tmp_path / "b").records
    by_id = {r.match_id: r.canonical() for r in second}
    assert len(first) == 6 and all(by_id[r.match_id] == r.canonical() for r in first)


def test_resume_plays_only_missing_matches(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_experiment(_spec(MIXED, repeats=6), out)
    with sqlite3.connect(out / DB_NAME) as db:  # as if the run had been killed after 4 matches
        db.execute("DELETE FROM matches WHERE seq > 4")
    lines = (out / JSONL_NAME).read_text().splitlines(keepends=True)
    (out / JSONL_NAME).write_text("".join(lines[:4]))  # the store's write-ahead log: it had the same 4
    result = run_experiment(_spec(MIXED, repeats=6), out)
    assert (result.played, result.skipped) == (2, 4)
    assert len((out / JSONL_NAME).read_text().splitlines()) == 6
    extended = run_experiment(_spec(MIXED, repeats=9), out)  # more repeats extend the same run
    assert (extended.played, extended.skipped, len(extended.records)) == (3, 6, 9)


def test_changed_spec_refuses_to_resume(tmp_path: Path) -> None:
    run_experiment(_spec(MIXED, repeats=2), tmp_path / "run")
    changed = _spec(MIXED, repeats=2, game="deepeval_public_goods(players=4,mode=2)")
    with pytest.raises(ResumeMismatchError, match="different experiment spec"):
        run_experiment(changed, tmp_path / "run")


def test_infrastructure_failures_are_rescheduled_not_scored(tmp_path: Path) -> None:
    players = [("flaky", "test_flaky_free_rider"), *MIXED[1:]]
    FlakyFreeRider.failures_left = 0
    clean = run_experiment(_spec(players, repeats=5), tmp_path / "clean")
    FlakyFreeRider.failures_left = 4
    flaky = run_experiment(_spec(players, repeats=5, max_match_attempts=5, max_concurrency=1), tmp_path / "flaky")
    assert not flaky.failed and flaky.played == 5
    assert {r.match_id: r.canonical() for r in flaky.records} == {r.match_id: r.canonical() for r in clean.records}
    from deepeval_games.app.storage.store import Store

    with Store(tmp_path / "flaky") as store:
        attempts = store.attempts()
    assert len(attempts) == 4 and all(kind == "infra" for _, kind, _ in attempts)


def test_infrastructure_failures_beyond_the_attempt_limit_are_reported(tmp_path: Path) -> None:
    players = [("flaky", "test_flaky_free_rider"), *MIXED[1:]]
    FlakyFreeRider.failures_left = 10**6
    try:
        result = run_experiment(_spec(players, repeats=2, max_match_attempts=2), tmp_path / "run")
    finally:
        FlakyFreeRider.failures_left = 0
    assert result.played == 0 and len(result.failed) == 2 and "infrastructure" in result.failed[0][1]


def test_a_crashing_bot_loses_only_its_match(tmp_path: Path) -> None:
    players = [("buggy", "test_buggy"), *MIXED[1:]]
    result = run_experiment(_spec(players, repeats=3, game="deepeval_public_goods(players=4,rounds=1)"), tmp_path / "a")
    assert result.played == 3  # one-round games never reach the bug
    result = run_experiment(_spec(players, repeats=3), tmp_path / "b")
    assert result.played == 0 and len(result.failed) == 3
    assert "ZeroDivisionError: bug in a bot" in result.failed[0][1]


def test_sweep_varies_game_parameters() -> None:
    spec = _spec(MIXED, repeats=2, sweep={"alpha": [1.2, 2.0], "rounds": {"from": 1, "to": 3}})
    plan = plan_matches(spec)
    assert len(plan) == 2 * 3 * 2
    assert len({m.game for m in plan}) == 6
    assert any("alpha=1.2" in m.game and "rounds=3" in m.game for m in plan)


@pytest.mark.parametrize(
    "sweep, message",
    [({"alpha": "x"}, "give a list"), ({"alpha": {"from": 1}}, "a range is written"), ({"alpha": []}, "no values")],
)
def test_bad_sweeps_are_spec_errors(sweep, message) -> None:
    from deepeval_games import SpecError

    with pytest.raises(SpecError, match=message):
        _spec(MIXED, sweep=sweep)


def test_delivery_settings_and_listing_order_do_not_block_resume() -> None:
    base = [{"name": "m", "model": "openai/x", "timeout_s": 10}, {"name": "b", "bot": "pgg_free_rider"}]
    changed = [
        {"name": "b", "bot": "pgg_free_rider"},
        {"name": "m", "model": "openai/x", "timeout_s": 99, "max_concurrency": 2, "api_key_env": "K"},
    ]
    game = {"name": "t", "game": "deepeval_public_goods(players=2)"}
    first = parse_spec({"experiment": game, "players": base})
    second = parse_spec({"experiment": game, "players": changed})
    assert first.content_hash() == second.content_hash()
    assert first.player("m").identity() == second.player("m").identity()
    hotter = parse_spec({"experiment": game, "players": [{**base[0], "temperature": 1.0}, base[1]]})
    assert hotter.content_hash() != first.content_hash()


def test_negative_seed_is_a_spec_error() -> None:
    from deepeval_games import SpecError

    with pytest.raises(SpecError, match="'seed' must be >= 0"):
        _spec(MIXED, seed=-1)


def test_out_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    from deepeval_games import DeepEvalError

    (tmp_path / "afile").write_text("x")
    with pytest.raises(DeepEvalError, match=r"cannot use .* as a run directory"):
        run_experiment(_spec(MIXED, repeats=1), tmp_path / "afile")


def test_a_torn_jsonl_line_is_repaired_on_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_experiment(_spec(MIXED, repeats=3), out)
    path = out / JSONL_NAME
    text = path.read_text()
    path.write_text(text[: len(text) - 40])  # as if killed while writing the last line
    result = run_experiment(_spec(MIXED, repeats=4), out)
    lines = path.read_text().splitlines()
    assert result.played == 1 and len(lines) == 4
    assert [json.loads(line)["match_id"] for line in lines] == [r.match_id for r in result.records]
