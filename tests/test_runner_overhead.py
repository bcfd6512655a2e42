"""The runner's per-match work around the engine (issue 14): bots resolved once per player and game, each seat's
generator derived without spawning the others, the same records as before.

``tests/fixtures/runner_records.jsonl`` holds the canonical records (no timings) that ``run_experiment`` wrote for
:data:`SPECS` before this change (commit ``128ca1d``): seats whose bots draw from their generators (``pgg_random``,
OpenSpiel's ``random`` at kuhn_poker's chance nodes) and a judge that does (``judge_position_biased`` with noise).
Regenerate only on purpose, when a change of the records is intended::

    python -m tests.test_runner_overhead --write
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deepeval_games.app.execution.run import run_experiment
from deepeval_games.app.storage.store import Store
from deepeval_games.core.records import migrate
from deepeval_games.core.registry import bots as registry
from deepeval_games.core.transcript import with_messages

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "runner_records.jsonl"
PGG = ("pgg_random", "pgg_conditional_cooperator", "pgg_free_rider", "pgg_full_contributor")

SPECS: dict[str, dict[str, Any]] = {
    "pgg": {
        "experiment": {"name": "pgg", "game": "deepeval_public_goods(players=4,rounds=3)", "repeats": 2, "seed": 7},
        "players": [{"name": bot, "bot": bot} for bot in PGG],
    },
    "kuhn": {
        "experiment": {"name": "kuhn", "game": "kuhn_poker", "repeats": 3, "seed": 3, "pairing": "permute"},
        "players": [{"name": "r1", "bot": "random"}, {"name": "r2", "bot": "random"}],
    },
    "judged": {
        "experiment": {
            "name": "judged",
            "game": "deepeval_code_review(max_rounds=1)",
            "sweep": {"task_id": [11]},
            "pairing": "round_robin",
            "seed": 5,
        },
        "players": [
            {"name": "ref", "bot": "cr_reference_programmer"},
            {"name": "rev", "bot": "cr_test_reviewer"},
        ],
        "judge": {"name": "noisy", "bot": "judge_position_biased", "params": {"noise": 3}},
    },
}


def _records(name: str, out: Path) -> list[dict[str, Any]]:
    """The canonical records of ``SPECS[name]`` run into ``out``, by match id."""
    with warnings.catch_warnings():  # turn outcomes are Outcome members: pydantic writes them without a complaint
        warnings.filterwarnings("error", message="Pydantic serializer warnings")
        result = run_experiment(SPECS[name], out)
    assert not result.failed, result.failed
    with Store(out, read_only=True) as store:
        # a match of fields bots is stored as its moves: its transcript replayed is what was stored in full before
        records = (with_messages(record).canonical() for record in store.records())
        return sorted(records, key=lambda r: r["match_id"])


def test_a_seat_generator_is_its_spawned_child() -> None:
    from deepeval_games.app.execution.one_match import seat_rng

    for seed in (0, 1, 7, 2**40 + 3, 2**63 - 1):
        children = np.random.SeedSequence(seed).spawn(5)
        for seat in range(5):
            expected = np.random.default_rng(children[seat]).integers(0, 2**62, 8)
            assert (seat_rng(seed, seat).integers(0, 2**62, 8) == expected).all()


@pytest.mark.parametrize("name", sorted(SPECS))
def test_records_are_those_written_before(name: str, tmp_path: Path) -> None:
    expected = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    # written at record version 4: as canonical() gives such a record now (its moves are its turns)
    expected = [{k: v for k, v in migrate(e["record"]).items() if k != "moves"} for e in expected if e["spec"] == name]
    assert expected and _records(name, tmp_path / name) == expected


def test_bots_are_resolved_once_per_player_and_game(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    looked_up: list[str] = []
    lookup = registry.lookup_bot

    def counting(name: str, game: Any = None) -> registry.BotEntry:
        looked_up.append(name)
        return lookup(name, game)

    monkeypatch.setattr(registry, "lookup_bot", counting)
    spec = {**SPECS["pgg"], "experiment": {**SPECS["pgg"]["experiment"], "repeats": 5}}
    result = run_experiment(spec, tmp_path / "run")
    assert result.played == 5
    # the check before the run builds every player once, the runner resolves each once more: not per match
    assert sorted(looked_up) == sorted(PGG * 2)


def _write() -> None:
    lines = []
    with tempfile.TemporaryDirectory() as work:
        for name in sorted(SPECS):
            for record in _records(name, Path(work) / name):
                lines.append(json.dumps({"spec": name, "record": record}, ensure_ascii=False, sort_keys=True))
    FIXTURE.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__" and "--write" in sys.argv:
    _write()


def test_plans_are_those_planned_before() -> None:
    """Identities per player and seat and the permutation hash per group are computed once per game now; the plans
    (ids, seatings, seeds) are those the planner made per match before (digests taken then)."""
    from deepeval_games.app.spec.schedule import plan_matches
    from deepeval_games.app.spec.spec import parse_spec

    game = "deepeval_public_goods(players=4,rounds=5)"
    scripted = {"experiment": {"game": game, "repeats": 2000, "max_matches": 2000}, "players": [*map(_bot, PGG)]}
    models = [{"name": f"m{i}", "model": f"openai/m{i}", "api_base": "http://127.0.0.1:9/v1"} for i in range(2)]
    mixed = {
        "experiment": {"game": game, "repeats": 500, "max_matches": 100000},
        "players": [*models, _bot("pgg_free_rider", "f"), _bot("pgg_random", "r")],
    }
    for spec, digest in ((scripted, "0aa5f98315638164"), (mixed, "e750c947811a8ff4")):
        plan = [(m.match_id, m.seats, m.seed) for m in plan_matches(parse_spec(spec))]
        assert hashlib.sha256(json.dumps(plan).encode()).hexdigest()[:16] == digest


def _bot(bot: str, name: str | None = None) -> dict[str, str]:
    return {"name": name or bot, "bot": bot}
