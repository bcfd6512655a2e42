"""``--executor ray``: the same schedule played by Ray actors on a local Ray instance gives the local executor's
records (timings aside) and match ids, into the same store, resumable across executors; without Ray installed it
is a clear error.

One local Ray instance (two CPUs, no dashboard) serves the whole module; a run finds it already initialised and
leaves it running.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from deepeval_games import parse_spec, run_experiment
from deepeval_games.app.commands.cli import main
from deepeval_games.app.execution.ray_executor import RAY_INSTALL_HINT, forwarded_env
from deepeval_games.app.spec.schedule import plan_matches
from deepeval_games.app.storage.store import DB_NAME, JSONL_NAME, Store
from deepeval_games.core.errors import FatalRunError, SpecError
from tests.conftest import FAKE_KEY_ENV
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, last_user_message, model_player

SCRIPTED = [
    {"name": "free-rider", "bot": "pgg_free_rider"},
    {"name": "full-contributor", "bot": "pgg_full_contributor"},
    {"name": "conditional", "bot": "pgg_conditional_cooperator"},
    {"name": "random", "bot": "pgg_random"},
]
PGG = "deepeval_public_goods(players=4,mode=1,alpha=1.6,rounds=3)"


def _spec(players: list[dict[str, Any]], repeats: int, **experiment: Any) -> dict[str, Any]:
    return {
        "experiment": {"name": "ray", "game": PGG, "repeats": repeats, "seed": 7, "cache": False, **experiment},
        "players": players,
    }


@pytest.fixture(scope="module")
def ray_local():
    """A local Ray instance for the module (two CPUs, no dashboard)."""
    ray = pytest.importorskip("ray", reason=f"Ray is not installed ({RAY_INSTALL_HINT})")
    ray.init(address="local", num_cpus=2, include_dashboard=False, configure_logging=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _canonical(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Every committed record of a run directory, timings aside, by match id; each id once in the JSONL."""
    lines = (run_dir / JSONL_NAME).read_text(encoding="utf-8").splitlines()
    ids = [json.loads(line)["match_id"] for line in lines]
    assert len(ids) == len(set(ids)), "a match was committed twice"
    with sqlite3.connect(run_dir / DB_NAME) as db:
        assert db.execute("SELECT COUNT(*) FROM matches").fetchone()[0] == len(ids)
    with Store(run_dir, read_only=True) as store:
        return {record.match_id: json.loads(json.dumps(record.canonical())) for record in store.records()}


def test_scripted_tournament_on_ray_equals_the_local_executor(
    ray_local, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(SCRIPTED, repeats=6)
    local = run_experiment(spec, tmp_path / "local")
    toml = tmp_path / "spec.toml"
    toml.write_text(_toml(spec), encoding="utf-8")
    argv = ["run", str(toml), "--out", str(tmp_path / "ray"), "--executor", "ray", "--workers", "2", "--no-progress"]
    assert main(argv) == 0
    assert "6 matches planned: 6 played now, 0 already in" in capsys.readouterr().out
    planned = {m.match_id for m in plan_matches(parse_spec(spec))}
    assert _canonical(tmp_path / "ray") == _canonical(tmp_path / "local")
    assert set(_canonical(tmp_path / "ray")) == planned == local.match_ids and len(planned) == 6


def _toml(spec: dict[str, Any]) -> str:
    """A spec document of scalar experiment keys and scripted players as TOML."""
    lines = ["[experiment]", *(f"{key} = {json.dumps(value)}" for key, value in spec["experiment"].items())]
    for player in spec["players"]:
        lines += ["", "[[players]]", *(f"{key} = {json.dumps(value)}" for key, value in player.items())]
    return "\n".join(lines) + "\n"


def _coins(body: dict[str, Any]) -> str:
    """A deterministic reply from the prompt: 0..11 coins (11 is out of range: the referee re-asks)."""
    text = last_user_message(body)
    coins = int(hashlib.sha256(text.encode()).hexdigest(), 16) % 12
    return json.dumps({"reason": "from the prompt's hash", "coins": coins})


class _Concurrency:
    """A responder (:func:`_coins`, answered after 20 ms) that counts, per model, the most requests in flight.

    The first request of ``held`` is held until another request of that model arrives (at most ``hold_s``): two
    actors that each kept their own limit of one call would be caught with two calls in flight, however far apart
    they started (an actor's first match waits for litellm's import)."""

    def __init__(self, held: str, hold_s: float = 3.0) -> None:
        self.lock = threading.Lock()
        self.now: dict[str, int] = {}
        self.most: dict[str, int] = {}
        self.held, self.hold_s = held, hold_s
        self.seen = 0
        self.second = threading.Event()

    def __call__(self, body: dict[str, Any]) -> str:
        model = str(body.get("model"))
        with self.lock:
            self.now[model] = self.now.get(model, 0) + 1
            self.most[model] = max(self.most.get(model, 0), self.now[model])
            first = model == self.held and self.seen == 0
            if model == self.held:
                self.seen += 1
                if self.seen == 2:
                    self.second.set()
        time.sleep(0.02)
        if first:
            self.second.wait(self.hold_s)
        with self.lock:
            self.now[model] -= 1
        return _coins(body)

    def reset(self, held: str) -> None:
        """Forget what was counted (before the next run), and hold the first request of ``held``."""
        with self.lock:
            self.held = held
            self.most.clear()
            self.seen = 0
            self.second.clear()


def test_llm_seats_on_ray_equal_the_local_executor_and_limits_hold_across_actors(
    ray_local, tmp_path: Path, fake_provider_key: str
) -> None:
    counter = _Concurrency(held="")  # the local run holds nothing
    with FakeOpenAIServer(default=Behaviour.responder(counter), max_hang_s=5) as server:
        players = [
            model_player("fake-a", server, max_concurrency=1),  # one call in flight at a time, cluster-wide
            model_player("fake-b", server),
            *SCRIPTED[:2],
        ]
        spec = _spec(players, repeats=4, max_concurrency=4)
        local = run_experiment(spec, tmp_path / "local")
        local_requests = server.request_count
        counter.reset(held="fake-a")
        cached = {**spec, "experiment": {**spec["experiment"], "cache": True}}  # the user cache (a run setting)
        remote = run_experiment(cached, tmp_path / "ray", executor="ray", workers=2)
        assert server.request_count == 2 * local_requests
        replay = run_experiment(cached, tmp_path / "replay")  # here, from what the actors cached
        assert server.request_count == 2 * local_requests
    assert not local.failed and not remote.failed and remote.played == 4
    assert remote.calls_by_model == local.calls_by_model and remote.model_calls == local.model_calls > 0
    assert counter.most["fake-a"] == 1 < counter.most["fake-b"]  # two actors, one limiter for the cluster
    assert _canonical(tmp_path / "ray") == _canonical(tmp_path / "local") == _canonical(tmp_path / "replay")
    assert replay.model_calls == 0 and sum(replay.cache_hits.values()) == local.model_calls
    records = _canonical(tmp_path / "ray")
    turns = [turn for record in records.values() for turn in record["turns"]]
    assert any(len(turn.get("raw_replies") or []) > 1 for turn in turns), "no re-ask exercised"


def test_the_budget_holds_across_actors(ray_local, tmp_path: Path, fake_provider_key: str) -> None:
    import litellm

    reply = json.dumps({"reason": "steady", "coins": 5})  # every call costs the same (the server's usage)
    prompt_cost, reply_cost = litellm.cost_per_token(
        model="gpt-4o-mini", prompt_tokens=11, completion_tokens=len(reply) // 4
    )
    with FakeOpenAIServer(default=Behaviour.reply(reply), max_hang_s=5) as server:
        priced = model_player("priced", server, model="openai/gpt-4o-mini", max_concurrency=1)
        spec = _spec([priced, *SCRIPTED[:3]], repeats=4, budget_usd=3.5 * (prompt_cost + reply_cost))
        with pytest.raises(FatalRunError, match="budget"):  # 12 calls planned
            run_experiment(spec, tmp_path / "ray", executor="ray", workers=2)
        sent = server.request_count
    # two actors that each kept their own budget would make 4 calls each (8 or more); one budget for the run lets
    # a call start only while the run's total is below it: 4
    assert 4 <= sent <= 5
    records = _canonical(tmp_path / "ray")  # what was committed is whole
    assert all(len(record["turns"]) == 12 for record in records.values())


def test_a_run_resumes_across_executors_each_match_once(ray_local, tmp_path: Path) -> None:
    full = _spec(SCRIPTED, repeats=6)
    reference = _canonical_run(full, tmp_path / "reference")
    # some matches committed by a local run, the rest by Ray
    first = run_experiment(_spec(SCRIPTED, repeats=3), tmp_path / "a")
    rest = run_experiment(full, tmp_path / "a", executor="ray", workers=3)  # three actors share two CPUs
    assert (first.played, rest.skipped, rest.played, len(rest.failed)) == (3, 3, 3, 0)
    assert _canonical(tmp_path / "a") == reference
    # and the other way round: Ray first, then a local run
    run_experiment(_spec(SCRIPTED, repeats=2), tmp_path / "b", executor="ray", workers=2)
    last = run_experiment(full, tmp_path / "b")
    assert (last.skipped, last.played) == (2, 4)
    assert _canonical(tmp_path / "b") == reference
    # nothing left: Ray is not even asked for actors, and nothing is played twice
    again = run_experiment(full, tmp_path / "b", executor="ray")
    assert (again.skipped, again.played) == (6, 0)
    assert _canonical(tmp_path / "b") == reference


def _canonical_run(spec: dict[str, Any], run_dir: Path) -> dict[str, dict[str, Any]]:
    run_experiment(spec, run_dir)
    return _canonical(run_dir)


def test_an_actor_killed_mid_match_is_restarted_and_its_matches_replayed(ray_local, tmp_path: Path) -> None:
    import tests.ray_bots  # noqa: F401  (registers the bot here too)

    marker = tmp_path / "died"
    players = [*SCRIPTED[:3], {"name": "mortal", "bot": "test_ray_dies_once", "params": {"marker": str(marker)}}]
    spec = _spec(players, repeats=16, max_concurrency=16)  # the actor dies with several matches in flight
    remote = run_experiment(spec, tmp_path / "ray", executor="ray", workers=2)
    assert marker.exists()  # an actor died
    assert (remote.played, remote.failed) == (16, [])
    run_experiment(spec, tmp_path / "local")  # the marker exists: nobody dies here
    assert _canonical(tmp_path / "ray") == _canonical(tmp_path / "local")
    with Store(tmp_path / "ray", read_only=True) as store:
        aborted = store.attempts()
    assert aborted and all(kind == "infra" and "Ray actor" in error for _, kind, error in aborted)


# -- without Ray, and what Ray cannot run ------------------------------------------------------------------


def _write_spec(tmp_path: Path, extra: str = "") -> Path:
    spec = tmp_path / "spec.toml"
    players = "".join(f'\n[[players]]\nname = "{p["name"]}"\nbot = "{p["bot"]}"\n' for p in SCRIPTED)
    spec.write_text(f'[experiment]\ngame = "{PGG}"\n{extra}{players}', encoding="utf-8")
    return spec


def test_executor_ray_without_ray_installed_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocked = (
        "import sys; sys.modules['ray'] = None; "
        "import deepeval_games.app.commands.cli, deepeval_games.app.execution.ray_executor"
    )
    subprocess.run([sys.executable, "-c", blocked], check=True, timeout=120)  # the project imports without Ray
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails as if it were not installed
    out = tmp_path / "run"
    code = main(["run", str(_write_spec(tmp_path)), "--out", str(out), "--executor", "ray", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert 'pip install "deepeval-games[ray]"' in err and "Traceback" not in err
    assert not out.exists()  # refused before anything was written
    # the spec's own executor key is refused the same way
    spec = _write_spec(tmp_path, 'executor = "ray"\n')
    assert main(["run", str(spec), "--out", str(out), "--no-progress"]) == 2
    assert RAY_INSTALL_HINT in capsys.readouterr().err and not out.exists()


def test_ray_address_needs_executor_ray(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    code = main(["run", str(_write_spec(tmp_path)), "--out", str(out), "--ray-address", "auto", "--no-progress"])
    assert code == 2 and "ray_address" in capsys.readouterr().err and not out.exists()


def test_a_cluster_that_does_not_answer_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ray")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    out = tmp_path / "run"
    argv = ["run", str(_write_spec(tmp_path)), "--out", str(out), "--executor", "ray", "--no-progress"]
    assert main([*argv, "--ray-address", address]) == 2
    assert f"cannot reach the Ray cluster at {address}" in capsys.readouterr().err and not out.exists()
    assert main([*argv, "--ray-address", "nonsense"]) == 2
    assert "expected host:port" in capsys.readouterr().err and not out.exists()


def test_a_person_at_the_table_is_refused_under_ray(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    spec = _spec([*SCRIPTED[:3], {"name": "me", "human": True}], repeats=1)
    with pytest.raises(SpecError, match="person at the table"):
        run_experiment(spec, tmp_path / "run", executor="ray")
    assert not (tmp_path / "run").exists()


def test_the_actors_get_the_settings_and_keys_the_spec_needs() -> None:
    environ = {
        "DEEPEVAL_GAMES_DATA": "/data",
        "MY_KEY": "k1",
        "OPENAI_API_KEY": "k2",
        "ANTHROPIC_API_KEY": "k3",
        "HOME": "/home/me",
        "UNSET_KEY": "",
    }
    env = forwarded_env(["MY_KEY", "UNSET_KEY"], ["openai/gpt-4o", "local/smollm2"], environ)
    assert env == {"DEEPEVAL_GAMES_DATA": "/data", "MY_KEY": "k1", "OPENAI_API_KEY": "k2"}
    assert FAKE_KEY_ENV  # the fake provider's key reaches the actors through api_key_env (tests above)
