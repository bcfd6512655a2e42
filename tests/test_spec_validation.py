"""Validation before anything is written: every bad spec is exit status 2 with a message, never a traceback, a
hang or a run directory tied to the broken spec; game parameters that name files are confined to a data folder;
a fuzz test over generated specs finds only clean errors or runs."""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deepeval_games import DeepEvalError, run_experiment
from deepeval_games.app.commands.cli import main
from deepeval_games.app.spec.loading import load_spec
from deepeval_games.app.storage.store import DB_NAME, JSONL_NAME
from tests.conftest import PGG_SCRIPTED_PLAYERS

PGG = 'game = "deepeval_public_goods(players=4,rounds=2,mode=1,alpha=1.6)"'
GOOD = f"""
[experiment]
name = "validation"
{PGG}
repeats = 2
seed = 3
{{extra}}
{PGG_SCRIPTED_PLAYERS}
"""
"""The corrected spec: every bad spec below is a typo away from it."""

CODE_REVIEW = """
[experiment]
name = "validation"
game = "deepeval_code_review(task_id=11)"
{extra}

[[players]]
name = "programmer"
bot = "cr_reference_programmer"

[[players]]
name = "reviewer"
bot = "cr_test_reviewer"
"""

EFG = """EFG 2 R "matching pennies" { "P1" "P2" }
""

p "" 1 1 "" { "H" "T" } 0
p "" 2 1 "" { "h" "t" } 0
t "" 1 "Hh" { 1.0 -1.0 }
t "" 2 "Ht" { -1.0 1.0 }
p "" 2 1 "" { "h" "t" } 0
t "" 3 "Th" { -1.0 1.0 }
t "" 4 "Tt" { 1.0 -1.0 }
"""


def _good(extra: str = "") -> str:
    return GOOD.format(extra=extra)


BAD_SPECS: dict[str, tuple[str, str]] = {
    # name: (spec text, a fragment of the message)
    "a trillion repeats": (_good().replace("repeats = 2", "repeats = 1000000000000"), "split the experiment"),
    "a huge until_stable cap": (
        _good("[experiment.until_stable]\nepsilon = 0.5\nmax_repeats = 100000000"),
        "above the limit of 100,000",
    ),
    "a huge sweep": (_good("[experiment.sweep]\nendowment = {from = 1, to = 1000000000000}"), "above the limit"),
    "a match limit above the ceiling": (_good("max_matches = 1000000000000"), "max_matches"),
    "deeply nested TOML": (_good("nested = " + "[" * 3000 + "]" * 3000), "nested too deeply"),
    "nesting within the parser's reach": (_good("nested = " + "[" * 60 + "]" * 60), "more than 32 deep"),
    "epsilon = nan": (_good("[experiment.until_stable]\nepsilon = nan"), "finite"),
    "epsilon = inf": (_good("[experiment.until_stable]\nepsilon = inf"), "finite"),
    "negative budget": (_good("budget_usd = -1.0"), "budget_usd"),
    "NaN budget": (_good("budget_usd = nan"), "finite"),
    "negative match limit": (_good("max_matches = -5"), "max_matches"),
    "unknown bot": (_good().replace('"pgg_random"', '"pgg_randon"'), "pgg_randon"),
    "a bot for another game": (_good().replace('"pgg_random"', '"idiom_dictionary"'), "idiom_dictionary"),
    "a bad bot parameter": (
        _good().replace('bot = "pgg_random"', 'bot = "pgg_random"\nparams = {generosity = 3}'),
        "generosity",
    ),
    "a file named by a game parameter": (
        _good().replace(PGG, 'game = "efg_game(filename=/etc/passwd)"'),
        "names a file",
    ),
    "a nested game naming a file": (
        _good().replace(PGG, 'game = "turn_based_simultaneous_game(game=nfg_game(filename=/etc/passwd))"'),
        "names a file",
    ),
    "a game string nesting games too deep": (
        _good().replace(PGG, 'game = "' + "turn_based_simultaneous_game(game=" * 9 + "tic_tac_toe" + ")" * 9 + '"'),
        "nest games at most 8 deep",
    ),
    "a game string nesting a thousand games": (
        _good().replace(
            PGG, 'game = "' + "turn_based_simultaneous_game(game=" * 1000 + "tic_tac_toe" + ")" * 1000 + '"'
        ),
        "at most 4,000 characters",
    ),
    "a missing judge": (CODE_REVIEW.format(extra=""), "judge"),
    "an out-of-range scripted verdict": (
        CODE_REVIEW.format(extra="") + '\n[judge]\nbot = "judge_fixed"\nparams = {scores = [11, 3]}\n',
        "1..10",
    ),
    "a match too long for OpenSpiel's own game": (
        _good().replace(PGG, 'game = "hex(board_size=3000)"'),
        "over the bound of 100,000 moves a match",
    ),
    "too many distinct moves": (
        _good().replace(PGG, 'game = "first_sealed_auction(max_value=100000000)"'),
        "over the bound of 1,000,000",
    ),
    "players outside OpenSpiel's range": (
        _good().replace(PGG, 'game = "kuhn_poker(players=100000)"'),
        "players must be within 2..10",
    ),
    "a swept parameter out of the task's bounds": (
        _good("[experiment.sweep]\nrounds = [2, 5000]"),
        "rounds must be within 1..1000",
    ),
    "a data folder that does not exist": (_good('data_dir = "/nonexistent/data"'), "data_dir"),
    "a model string with control characters": (
        _good().replace('bot = "pgg_random"', 'model = "openai/gpt-4o\\u001b[2J"'),
        "control characters",
    ),
    "a missing API key": (
        _good().replace(
            'bot = "pgg_random"',
            'model = "openai/gpt-4o-mini"\napi_key_env = "DEEPEVAL_GAMES_TEST_NO_SUCH_KEY"',
        ),
        "DEEPEVAL_GAMES_TEST_NO_SUCH_KEY",
    ),
}


def _main(argv: list[str], timeout_s: float = 120.0) -> int:
    """``main(argv)`` in a thread, failing the test if it does not return in time (a hang)."""
    status: list[int | BaseException] = []

    def target() -> None:
        try:
            status.append(main(argv))
        except BaseException as exc:  # reported below, with the argv
            status.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert not thread.is_alive(), f"{argv} did not finish within {timeout_s} s"
    if isinstance(status[0], BaseException):
        raise AssertionError(f"{argv} raised {status[0]!r}") from status[0]
    return status[0]


def test_each_bad_spec_exits_2_cleanly_and_leaves_the_directory_reusable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEEPEVAL_GAMES_TEST_NO_SUCH_KEY", raising=False)
    good = tmp_path / "good.toml"
    good.write_text(_good())
    used = tmp_path / "used"  # a run directory that already holds the corrected spec's results
    assert _main(["run", str(good), "--out", str(used), "--no-progress"]) == 0
    before = ((used / JSONL_NAME).read_text(), (used / DB_NAME).stat().st_mtime_ns)
    fresh = tmp_path / "fresh"  # a run directory no spec has made yet
    capsys.readouterr()
    for name, (text, fragment) in BAD_SPECS.items():
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        for out in (fresh, used):
            status = _main(["run", str(bad), "--out", str(out), "--no-progress"])
            err = capsys.readouterr().err
            assert status == 2, f"{name}: exit {status}\n{err}"
            assert err.startswith("error: ") and "Traceback" not in err, f"{name}: {err}"
            assert fragment in err, f"{name}: {err}"
        assert not fresh.exists(), f"{name} created {fresh}"
        assert ((used / JSONL_NAME).read_text(), (used / DB_NAME).stat().st_mtime_ns) == before, name
    for out in (fresh, used):  # the corrected spec runs into both
        assert _main(["run", str(good), "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "2 matches planned: 2 played now" in printed and "2 matches planned: 0 played now, 2 already in" in printed


def test_an_empty_out_is_refused_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    good = tmp_path / "good.toml"
    good.write_text(_good())
    monkeypatch.chdir(tmp_path)
    for out in ("", "  "):
        assert _main(["run", str(good), "--out", out, "--no-progress"]) == 2
        assert "--out" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.toml"]


def test_a_large_plan_runs_only_with_an_explicit_limit(tmp_path: Path) -> None:
    spec = load_spec_text(tmp_path, _good("max_matches = 1"))
    with pytest.raises(DeepEvalError, match=r"plans at least 2 matches .* above the limit of 1"):
        run_experiment(spec, tmp_path / "run")
    assert not (tmp_path / "run").exists()
    result = run_experiment(load_spec_text(tmp_path, _good("max_matches = 2")), tmp_path / "run")
    assert result.planned == result.played == 2  # 2 repeats of one seating


def load_spec_text(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return load_spec(path)


def test_files_named_by_game_parameters_stay_inside_the_data_folder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "pennies.efg").write_text(EFG)
    (tmp_path / "outside.efg").write_text(EFG)
    (data / "link.efg").symlink_to(tmp_path / "outside.efg")
    players = '[[players]]\nname = "a"\nbot = "random"\n\n[[players]]\nname = "b"\nbot = "random"\n'

    def spec(game: str, data_dir: str | None) -> Any:
        folder = f"data_dir = {data_dir!r}" if data_dir is not None else ""
        text = f'[experiment]\ngame = "{game}"\nrepeats = 2\n{folder}\n{players}'
        return load_spec_text(tmp_path, text)

    inside = f"efg_game(filename={data / 'pennies.efg'})"
    result = run_experiment(spec(inside, str(data)), tmp_path / "ok")
    assert result.played == 4 and not result.failed  # two repeats, both seatings (pennies has a first mover)
    refused = [
        (inside, None),  # no data folder named: no file at all
        (f"efg_game(filename={tmp_path / 'outside.efg'})", str(data)),
        (f"efg_game(filename={data}/../outside.efg)", str(data)),
        (f"efg_game(filename={data / 'link.efg'})", str(data)),  # a link out of the folder
        ("efg_game(filename=/etc/passwd)", str(data)),
    ]
    for game, folder in refused:
        with pytest.raises(DeepEvalError, match="names"):
            run_experiment(spec(game, folder), tmp_path / "refused")
        assert not (tmp_path / "refused").exists()


def test_records_naming_files_are_loaded_only_from_a_named_data_folder(tmp_path: Path, caplog: Any) -> None:
    """A run directory may come from anyone: its records' game strings get the spec's file check when read back."""
    from analysis.stats.confseq import anytime_scores
    from analysis.stats.exploitability import empirical_exploitability
    from deepeval_games.app.execution.rejudge import judge_source, rejudge
    from deepeval_games.core.errors import UnknownGameError
    from deepeval_games.core.registry.games import load_recorded_game

    data = tmp_path / "data"
    data.mkdir()
    (data / "pennies.efg").write_text(EFG)
    game = f"efg_game(filename={data / 'pennies.efg'})"
    players = '[[players]]\nname = "a"\nbot = "random"\n\n[[players]]\nname = "b"\nbot = "random"\n'
    text = f'[experiment]\ngame = "{game}"\nrepeats = 4\ndata_dir = {str(data)!r}\n{players}'
    result = run_experiment(load_spec_text(tmp_path, text), tmp_path / "run")
    records = list(result.iter_records())
    assert len(records) == 8 and all(r.game == game for r in records)

    with pytest.raises(UnknownGameError, match="names a file"):
        load_recorded_game(game)
    assert load_recorded_game(game, data_dir=data).num_players() == 2
    assert anytime_scores(records) == []  # the variant is left out, and the log says why
    assert "names a file" in caplog.text
    assert {s.player for s in anytime_scores(records, data_dir=data)} == {"a", "b"}
    with pytest.raises(UnknownGameError, match="names a file"):
        empirical_exploitability(records)
    judged = rejudge(tmp_path / "run", judge_source("judge_pass_rate"))  # refused before any replay, logged
    assert len(judged.failed) == len(records) and all("names a file" in why for _, why in judged.failed)


def test_chess_positions_with_slashes_are_not_files() -> None:
    from deepeval_games.core.registry.games import check_file_parameters

    check_file_parameters("chess(fen=rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1)")


# -- fuzzing: generated specs give a clean error or a run, nothing else ---------------------------------------

_NUMBERS = st.one_of(
    st.sampled_from([0, 1, 2, -1, 10**12, 2**63 - 1, 0.0, -0.5, math.nan, math.inf, -math.inf, 1e308, 0.5]),
    st.integers(-3, 3),
)
_VALUES = st.one_of(_NUMBERS, st.booleans(), st.text(max_size=6), st.none())
_GAMES = st.sampled_from(
    [
        "deepeval_public_goods(players=2,rounds=1,mode=1)",
        "deepeval_public_goods(players=3,rounds=2,mode=2,alpha=1.5)",
        "deepeval_public_goods(players=2,rounds=1,alpha=nan)",
        "tic_tac_toe",
        "kuhn_poker",
        "efg_game(filename=/etc/passwd)",
        "no_such_game",
        "deepeval_public_goods(players=",
        "",
    ]
)
_BOTS = st.sampled_from(["random", "pgg_free_rider", "pgg_random", "pgg_grim_trigger", "judge_fixed", "nobot", ""])


_PLAYABLE = {  # a game and scripted bots that play it: the valid base a generated spec mutates
    "deepeval_public_goods(players=2,rounds=1,mode=1)": ["pgg_free_rider", "pgg_random", "random"],
    "deepeval_public_goods(players=3,rounds=2,mode=2,alpha=1.5)": ["pgg_grim_trigger", "pgg_random", "random"],
    "tic_tac_toe": ["random"],
    "kuhn_poker": ["random"],
}
_EXPERIMENT_KEYS = {
    "repeats": st.sampled_from([1, 2, 0, -1, 10**12, 1.5, "2"]),
    "seed": _NUMBERS,
    "max_concurrency": st.sampled_from([1, 4, 0, 10**9]),
    "budget_usd": _NUMBERS,
    "max_matches": st.sampled_from([1, 5, 0, 10**12]),
    "pairing": st.sampled_from(["auto", "permute", "round_robin", "combinations", "bogus"]),
    "game": _GAMES,
    "data_dir": st.sampled_from(["/", "/etc", "", "relative"]),
    "until_stable": st.fixed_dictionaries(
        {"epsilon": _NUMBERS}, optional={"max_repeats": st.sampled_from([1, 3, 10**9]), "batch": _NUMBERS}
    ),
    "sweep": st.dictionaries(
        st.sampled_from(["rounds", "alpha", "endowment", "bogus"]),
        st.one_of(st.lists(_NUMBERS, max_size=3), st.fixed_dictionaries({"from": _NUMBERS, "to": _NUMBERS}), _VALUES),
        max_size=2,
    ),
    "unknown_key": _VALUES,
}


@st.composite
def _documents(draw: st.DrawFn) -> dict[str, Any]:
    """A valid spec of a small game, then zero to two mutations of it (a key, a player, the judge)."""
    game = draw(st.sampled_from(sorted(_PLAYABLE)))
    players: list[dict[str, Any]] = [
        {"name": f"p{i}", "bot": draw(st.sampled_from(_PLAYABLE[game]))} for i in range(draw(st.integers(2, 3)))
    ]
    document: dict[str, Any] = {
        "experiment": {"game": game, "repeats": 1, "seed": 0, "cache": False},
        "players": players,
    }
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["experiment", "experiment", "player", "judge", "drop"]))
        if kind == "experiment":
            key = draw(st.sampled_from(sorted(_EXPERIMENT_KEYS)))
            document["experiment"][key] = draw(_EXPERIMENT_KEYS[key])
        elif kind == "player":
            player = draw(st.sampled_from(players))
            field = draw(st.sampled_from(["bot", "name", "params", "model"]))
            player[field] = draw(
                {
                    "bot": _BOTS,
                    "name": st.sampled_from(["", "p0", " ", "x"]),
                    "params": st.dictionaries(st.sampled_from(["scores", "p", "seed"]), _VALUES, max_size=2),
                    "model": st.sampled_from(["", "nonsense", "local/none"]),
                }[field]
            )
        elif kind == "judge":
            document["judge"] = {"bot": draw(_BOTS), "params": {"scores": draw(st.lists(_NUMBERS, max_size=3))}}
        elif len(players) > 1:
            players.pop()
    return document


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=_documents())
def test_generated_specs_give_a_clean_error_or_a_run(document: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "fuzz"
    try:
        result = run_experiment(document, out)
    except DeepEvalError as exc:
        assert str(exc).strip()
        assert not (out / DB_NAME).exists() or _bound_before(out)
        return
    assert result.played + result.skipped + len(result.failed) == result.planned
    assert all(not error.startswith("Traceback") for _, error in result.failed)


def _bound_before(out: Path) -> bool:
    """True when ``out`` holds results of an earlier example (hypothesis reuses ``tmp_path``)."""
    return (out / JSONL_NAME).exists()


MODEL_SPEC = f"""
[experiment]
name = "validation"
{PGG}
{{extra}}
{PGG_SCRIPTED_PLAYERS.replace('bot = "pgg_random"', "{model}")}
"""
"""A spec with a model player (its key set): the cache path and the model string are checked too."""
KEYED = 'model = "openai/gpt-4o-mini"\napi_key_env = "DEEPEVAL_GAMES_TEST_KEY"'


def _issue_inputs(text_file: Path) -> dict[str, tuple[str, str]]:
    """The refused inputs of issue 32: (spec text, a fragment of the message)."""
    return {
        "rounds=1000000000": (_good().replace("rounds=2", "rounds=1000000000"), "rounds must be within 1..1000"),
        "cache = /dev/null": (MODEL_SPEC.format(extra='cache = "/dev/null"', model=KEYED), "/dev/null"),
        "cache = /proc/self/mem": (MODEL_SPEC.format(extra='cache = "/proc/self/mem"', model=KEYED), "/proc/self/mem"),
        "cache = a text file": (
            MODEL_SPEC.format(extra=f"cache = {str(text_file)!r}", model=KEYED),
            "not an SQLite database",
        ),
        "a path-traversing local model": (
            MODEL_SPEC.format(extra="", model='model = "local/../../../../etc/passwd"'),
            "a local model is",
        ),
    }


def test_refused_inputs_exit_2_fast_leave_nothing_and_a_valid_spec_then_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPEVAL_GAMES_TEST_KEY", "sk-test-not-a-secret")
    text_file = tmp_path / "notes.txt"
    text_file.write_text("x", encoding="utf-8")  # one byte: once overwritten with a database
    out = tmp_path / "out"
    for name, (text, fragment) in _issue_inputs(text_file).items():
        spec = tmp_path / "bad.toml"
        spec.write_text(text, encoding="utf-8")
        started = time.monotonic()
        status = _main(["run", str(spec), "--out", str(out), "--no-progress"], timeout_s=30)
        elapsed = time.monotonic() - started
        err = capsys.readouterr().err
        assert status == 2 and err.startswith("error: ") and "Traceback" not in err, f"{name}: {status} {err}"
        assert fragment in err, f"{name}: {err}"
        assert elapsed < 5.0, f"{name} took {elapsed:.1f} s"
        assert not out.exists(), f"{name} left {sorted(p.name for p in out.iterdir())}"
    assert text_file.read_text(encoding="utf-8") == "x"
    good = tmp_path / "good.toml"
    good.write_text(_good(), encoding="utf-8")
    assert _main(["run", str(good), "--out", str(out), "--no-progress"]) == 0
    assert "2 matches planned: 2 played now" in capsys.readouterr().out


def test_a_cache_path_is_a_database_an_empty_file_or_a_new_file(tmp_path: Path) -> None:
    from llm_bots.transport.call_cache import CallCache, cache_path_problem

    empty = tmp_path / "empty.sqlite"
    empty.touch()
    assert cache_path_problem(empty) is None
    assert cache_path_problem(tmp_path / "new" / "deeper" / "calls.sqlite") is None
    CallCache(empty).close()  # an empty file becomes a database
    assert empty.read_bytes().startswith(b"SQLite format 3\x00") and cache_path_problem(empty) is None
    assert "not a regular file" in (cache_path_problem(tmp_path) or "")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert "not a regular file" in (cache_path_problem(fifo) or "")  # checked without opening it (no hang)
    with pytest.raises(DeepEvalError, match="not an SQLite database"):
        (tmp_path / "text").write_text("hello", encoding="utf-8")
        CallCache(tmp_path / "text")
    assert (tmp_path / "text").read_text(encoding="utf-8") == "hello"
