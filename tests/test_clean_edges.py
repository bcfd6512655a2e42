"""Clean edges of the command line (issue 43): one message per mistake, in the project's words."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deepeval_games", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("game", "says"),
    [
        ("tic_tac_toe(foo=1)", "unknown parameter 'foo' (tic_tac_toe takes no parameters)"),
        ("deepeval_public_goods(playerz=4)", "unknown parameter 'playerz'; did you mean 'players'?"),
        ("deepeval_public_goods(players=x)", "parameter 'players' of deepeval_public_goods takes a whole number"),
    ],
)
def test_a_bad_game_parameter_is_one_message_in_our_words(game: str, says: str, tmp_path: Path) -> None:
    done = _cli("eval", game, "--model", "local/smollm2", "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "OpenSpiel exception" not in done.stderr  # OpenSpiel's own print, before its exception, is never reached
    assert done.stderr.count(says) == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_a_whole_number_for_a_real_parameter_is_taken_as_that_number() -> None:
    from deepeval_games import load_game

    assert load_game("deepeval_public_goods(alpha=2)").get_parameters()["alpha"] == 2.0


def test_a_local_models_cost_reads_no_price_beside_its_calls_and_tokens() -> None:
    from analysis.tables.usage import PlayerUsage
    from deepeval_games.app.reports.estimate import format_run_summary
    from deepeval_games.core.bot import Usage

    usage = PlayerUsage("local/smollm2", turns=3, usage=Usage(tokens_in=900, tokens_out=30, cached_tokens=600))
    line = format_run_summary([usage], {"local/smollm2": 3}, {})
    assert "local/smollm2: 3 calls, 0 cache hits, 900 tokens in (600 cached, 66.7%), 30 tokens out" in line
    assert "local model: no price" in line and "$" not in line and "rate unknown" not in line


def test_the_bound_printed_before_a_run_plays_says_what_is_about_to_happen() -> None:
    from deepeval_games.app.reports.estimate import DryRun, format_dry_run
    from deepeval_games.app.spec.spec import parse_spec

    spec = parse_spec(
        {
            "experiment": {
                "name": "p",
                "game": "tic_tac_toe",
                "until_stable": {"rule": "adaptive", "epsilon": 0.5, "budget_matches": 6},
            },
            "players": [{"name": "a", "bot": "random"}, {"name": "b", "bot": "random"}],
        }
    )
    before = format_dry_run(DryRun(300, 6, []), spec, before_play=True)
    assert before.startswith("About to play at most 6 matches") and "Dry run" not in before
    assert format_dry_run(DryRun(300, 6, []), spec).startswith("Dry run: 6 matches to play")


def test_a_run_refused_before_it_starts_names_no_run_directory(tmp_path: Path) -> None:
    env_less = {k: v for k, v in __import__("os").environ.items() if not k.endswith("_API_KEY")}
    done = subprocess.run(
        [sys.executable, "-m", "deepeval_games", "eval", "tic_tac_toe", "--model", "openai/gpt-4o-mini", "--out", "r"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env_less,
    )
    assert done.returncode == 2 and "no API key" in done.stderr
    assert "Run directory" not in done.stdout and "Dry run" not in done.stdout
    assert done.stdout.count("About to play at most") == 1
    assert not (tmp_path / "r").exists()


def _closed_early(*args: str, cwd: Path) -> tuple[int, str]:
    """Run the command line, read one line of its output and close the pipe, as ``| head -1`` does."""
    child = subprocess.Popen(
        [sys.executable, "-m", "deepeval_games", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.readline()
    child.stdout.close()
    err = child.stderr.read()
    return child.wait(timeout=120), err


def test_a_closed_pipe_ends_every_command_quietly(tmp_path: Path) -> None:
    spec = REPO / "examples" / "pgg_scripted.toml"
    status, err = _closed_early("run", str(spec), "--out", "run", "--no-progress", cwd=tmp_path)
    assert status in (0, 141) and "Traceback" not in err and "BrokenPipe" not in err, err
    assert (tmp_path / "run" / "results.sqlite").is_file()  # the results are kept whole
    for args in (("games", "--all"), ("report", "run"), ("bots",)):
        status, err = _closed_early(*args, cwd=tmp_path)
        assert status in (0, 141), (args, err)
        assert "Traceback" not in err and "BrokenPipe" not in err, (args, err)


def test_init_without_a_model_writes_a_study_that_plays_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No model named: the local model where it runs here, else the baselines alone; a hosted model's player is
    written commented out beside them (uncommented, the spec is still valid)."""
    import tomllib

    from deepeval_games.app.commands.cli import main
    from deepeval_games.app.spec.spec import parse_spec
    from llm_bots.local import server

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(server, "local_model_available", lambda model="local/smollm2": "not here")
    assert main(["init", "deepeval_public_goods", "--out", "offline.toml"]) == 0
    text = (tmp_path / "offline.toml").read_text()
    players = tomllib.loads(text)["players"]
    assert [p.get("bot") for p in players] == [
        "random",  # where the model would sit
        "pgg_free_rider",
        "pgg_conditional_cooperator",
        "pgg_full_contributor",
    ]
    hosted = text.replace("# [[players]]", "[[players]]").replace('# name = "gpt', 'name = "gpt')
    hosted = hosted.replace('# model = "openai', 'model = "openai')
    assert parse_spec(tomllib.loads(hosted)).players[-1].model == "openai/gpt-4o-mini"
    assert main(["run", "offline.toml", "--out", "run", "--no-progress"]) == 0
    played = re.search(r"(\d+) matches planned: (\d+) played now, 0 already in run, 0 failed", capsys.readouterr().out)
    assert played is not None and played.group(1) == played.group(2) and 0 < int(played.group(1)) <= 20
    capsys.readouterr()
    monkeypatch.setattr(server, "local_model_available", lambda model="local/smollm2": None)
    assert main(["init", "deepeval_public_goods", "--out", "local.toml"]) == 0
    players = tomllib.loads((tmp_path / "local.toml").read_text())["players"]
    assert players[0] == {"name": "smollm2", "model": "local/smollm2"}


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"name": "r", "bto": "random"}, "[[players]] 'r': unknown key 'bto' (did you mean 'bot'?)"),
        ({"name": "m", "modle": "openai/gpt-4o"}, "[[players]] 'm': unknown key 'modle' (did you mean 'model'?)"),
        ({"name": "p", "humn": True}, "[[players]] 'p': unknown key 'humn' (did you mean 'human'?)"),
        ({"name": "x", "colour": "red"}, "[[players]] 'x': unknown key 'colour'; give exactly one of 'bot'"),
    ],
)
def test_a_typo_in_a_players_kind_key_is_named(table: dict[str, object], says: str) -> None:
    """Issue 43: ``bto = ...`` was reported as "give exactly one of 'bot', 'model' or 'human'", not naming ``bto``."""
    from deepeval_games.app.spec.spec import parse_spec
    from deepeval_games.core.errors import SpecError

    with pytest.raises(SpecError) as raised:
        parse_spec({"experiment": {"game": "tic_tac_toe"}, "players": [table, {"name": "b", "bot": "random"}]})
    assert says in str(raised.value), str(raised.value)
    with pytest.raises(SpecError) as raised:  # the judge's table the same
        parse_spec(
            {
                "experiment": {"game": "tic_tac_toe"},
                "players": [{"name": "a", "bot": "random"}],
                "judge": {"bto": "judge_fixed"},
            }
        )
    assert "[judge]: unknown key 'bto' (did you mean 'bot'?)" in str(raised.value), str(raised.value)


@pytest.mark.usefixtures("fake_provider_key")
def test_the_progress_line_shows_the_turn_and_speed_of_a_model_answering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 43: a 7-minute match was silent. While a model answers, the progress line names the match's turn, the
    model, how long it has been answering and its output tokens per second so far (no timing is asserted: the
    slow replies only give the line time to be drawn)."""
    from deepeval_games import run_experiment
    from deepeval_games.app.execution import play_and_commit
    from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player

    monkeypatch.setattr(play_and_commit, "LIVE_TICK_S", 0.02)
    answer = '{"reason": "' + "r" * 80 + '", "coins": 3}'
    with FakeOpenAIServer(default=Behaviour.reply(answer)) as server:
        server.script(Behaviour.slow_reply(0.6, answer), Behaviour.slow_reply(0.6, answer))
        spec = {
            "experiment": {"game": "deepeval_public_goods(players=2,rounds=2)", "cache": False},
            "players": [model_player("slow-model", server), {"name": "free", "bot": "pgg_free_rider"}],
        }
        run_experiment(spec, tmp_path / "run", progress=True)
    drawn = capsys.readouterr().err
    assert "round 1 · openai/slow-model answering" in drawn, drawn
    assert "round 2 · openai/slow-model answering" in drawn, drawn
    assert " tok/s" in drawn, drawn  # the speed of its first reply, shown while it answers the second
