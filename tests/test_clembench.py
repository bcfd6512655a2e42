"""clembench's games as ``clem:<game>`` (issue 54; game_defs/arena/clembench.py): the test clemgame ``wordguess``
(tests/clemgames, written against clemcore's API) through the kit, ``run``, ``report`` and ``leaderboard``; a model
seat beside the clemgame's programmatic player; the errors and the listing without a clembench folder; the pinned
release's check. No network: the models are the fake OpenAI server."""

from __future__ import annotations

import importlib.util
import tarfile
from pathlib import Path

import pytest

if importlib.util.find_spec("clemcore") is None:  # not imported here: its import reconfigures logging
    pytest.skip("clemcore is not installed", allow_module_level=True)

import game_defs.arena.clembench as clembench
import llm_bots.clembench.scripted  # noqa: F401  (registers clem_programmatic)
from deepeval_games.app.commands.cli import main
from deepeval_games.core.errors import UnknownGameError
from deepeval_games.core.registry.games import load_game
from deepeval_games.core.testing import check_game
from deepeval_games.core.transcript import with_messages
from game_defs.arena import clem_env
from tests.arena_play import records, replayed, write_spec
from tests.clem_play import CLEMGAMES, clem_entry_points, clem_reply
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player

__all__ = ["clem_entry_points"]


@pytest.fixture
def clemgames(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test clemgames as the clembench folder."""
    monkeypatch.setenv(clem_env.CLEMBENCH_ENV, str(CLEMGAMES))
    return CLEMGAMES


@pytest.fixture
def no_clembench(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No clembench folder: the variable unset, an empty user cache and data folder."""
    monkeypatch.delenv(clem_env.CLEMBENCH_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("DEEPEVAL_GAMES_DATA", str(tmp_path / "data"))


def test_the_test_clemgame_passes_the_conformance_kit_and_its_scores_are_the_payoffs(clemgames: Path) -> None:
    check_game("clem:wordguess", playouts=3)
    state = load_game("clem:wordguess").new_initial_state()
    assert [p for _, p in state.chance_outcomes()] == [0.25] * 4  # the instances of both experiments
    state.apply_action(1)  # easy #1: the target is pear
    assert "describe the word 'pear'" in state.seat_view(0) and "pear" not in state.seat_view(1)
    for text in ("CLUE: green", "GUESS: apple", "CLUE: bell-shaped", "GUESS: pear"):
        state.apply_action(state.intern_utterance(state.current_player(), text))
    assert state.is_terminal() and list(state.returns()) == [50.0, 50.0]  # a guess in the second round
    metrics = state.match_metrics()
    assert metrics["clem_main_score"] == 50.0 and metrics["clem_success"] == 1.0 and metrics["clem_aborted"] == 0.0
    assert load_game("clem:wordguess(experiment=hard)").new_initial_state().chance_outcomes() == [(3, 1.0)]


def test_an_aborted_episode_pays_zero_and_keeps_no_main_score(clemgames: Path) -> None:
    state = load_game("clem:wordguess").new_initial_state()
    state.apply_action(0)
    state.apply_action(state.intern_utterance(0, "the word is apple"))  # no CLUE: prefix: clemgame aborts
    assert state.is_terminal() and list(state.returns()) == [0.0, 0.0]
    assert state.match_metrics()["clem_aborted"] == 1.0 and state.match_metrics()["clem_main_score"] is None


def test_a_clem_name_without_a_folder_is_a_clear_error_exit_2(
    no_clembench: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(UnknownGameError, match="no clembench folder is known: fetch the pinned clembench release"):
        load_game("clem:taboo")
    spec = write_spec(
        tmp_path / "spec.toml",
        {"name": "x", "game": "clem:taboo", "repeats": 1},
        [{"name": "a", "bot": "clem_programmatic"}, {"name": "b", "bot": "clem_programmatic"}],
    )
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "clem:taboo" in err and "deepeval-games data fetch clembench" in err and "DEEPEVAL_GAMES_CLEMBENCH" in err


def test_the_listing_says_how_to_get_the_games_and_lists_each_with_its_verdict(
    no_clembench: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llm_bots.players.classical import family_listing

    lines = family_listing("clem:")
    assert any(line.startswith("clem:*  [refused: no clembench folder is known: fetch") for line in lines)
    monkeypatch.setenv(clem_env.CLEMBENCH_ENV, str(CLEMGAMES))
    assert "clem:wordguess  [playable by LLM]" in family_listing("clem:")


def _fake_models(server: FakeOpenAIServer) -> list[dict[str, object]]:
    return [model_player("fake-a", server), model_player("fake-b", server)]


def test_wordguess_plays_through_run_report_and_leaderboard_and_replays(
    clemgames: Path,
    clem_entry_points: None,
    tmp_path: Path,
    fake_provider_key: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(clem_reply), max_hang_s=5) as server:
        spec = write_spec(
            tmp_path / "spec.toml",
            {"name": "wordguess", "game": "clem:wordguess(experiment=easy)", "repeats": 2, "seed": 1},
            _fake_models(server),
        )
        assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    done = records(tmp_path / "run")
    assert len(done) == 2 and all(r.status == "complete" for r in done)
    for record in done:
        state = replayed(record)  # the instance by its chance action, every reply by its text
        assert state.is_terminal() and list(state.returns()) == list(record.returns)
        assert record.metrics["clem_game"] == "wordguess" and record.roles == ["Describer", "Guesser"]
        assert any("describe the word" in str(m.get("text", "")) for m in with_messages(record).messages)
    capsys.readouterr()
    assert main(["report", str(tmp_path / "run")]) == 0
    report = capsys.readouterr().out
    assert "clembench scores: clem:wordguess(experiment=easy)" in report and "% played" in report
    assert main(["leaderboard", str(tmp_path / "run")]) == 0
    board = capsys.readouterr().out
    assert "clem:wordguess(experiment=easy)" in board and "fake-a" in board and "95% interval" in board


def test_a_model_seat_beside_the_clemgames_programmatic_player_scores_with_intervals(
    clemgames: Path,
    clem_entry_points: None,
    tmp_path: Path,
    fake_provider_key: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with FakeOpenAIServer(default=Behaviour.responder(clem_reply), max_hang_s=5) as server:
        spec = write_spec(
            tmp_path / "spec.toml",
            {"name": "mixed", "game": "clem:wordguess", "repeats": 2, "seed": 2, "pairing": "fixed"},
            [model_player("fake-describer", server), {"name": "guesser", "bot": "clem_programmatic"}],
        )
        assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    done = records(tmp_path / "run")
    assert done and all(r.seats == ["fake-describer", "guesser"] for r in done)
    guesses = [t.action_string for r in done for t in r.turns if t.seat == 1]
    assert guesses and all(g.startswith("GUESS: ") for g in guesses)  # the clemgame's own guesser
    capsys.readouterr()
    assert main(["report", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    table = out[out.index("clembench scores: clem:wordguess") :]
    row = next(line for line in table.splitlines() if line.startswith("fake-describer"))
    assert "Describer" in row and "% [" in row  # a share with its interval
    assert "95% intervals" in table


def test_data_fetch_clembench_downloads_nothing_offline(
    no_clembench: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEEPEVAL_GAMES_OFFLINE", "1")
    assert main(["data", "fetch", "clembench"]) == 2
    assert "downloads are disabled" in capsys.readouterr().err


def _release(tmp_path: Path, folder: Path) -> Path:
    """A tarball laid out as GitHub's archive of a commit (a top folder), holding ``folder``'s games and a
    ``static/`` folder, in the user cache where ``data fetch`` puts the release."""
    archive = tmp_path / "cache" / "deepeval-games" / clem_env.RELEASE_RELPATH
    archive.parent.mkdir(parents=True)
    top = f"clembench-{clem_env.RELEASE_COMMIT}"
    static = tmp_path / "static.json"
    static.write_text("{}")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=top)
        tar.add(static, arcname=f"{top}/static/bbh/in/instances.json")
    return archive


def test_the_fetched_release_unpacks_without_static_and_is_checked(
    no_clembench: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    archive = _release(tmp_path, CLEMGAMES)
    with pytest.raises(clem_env.ClembenchMissing, match="not the pinned one"):
        clem_env.clembench_folder()
    monkeypatch.setattr(clem_env, "RELEASE_GAMES_SHA256", clem_env.manifest_sha256(CLEMGAMES))
    folder = clem_env.clembench_folder()
    assert folder == archive.with_name(f"clembench-{clem_env.RELEASE_COMMIT}")
    assert (folder / "wordguess" / "clemgame.json").is_file() and not (folder / "static").exists()


def test_a_game_missing_nltk_data_is_refused_saying_what_and_how_to_get_it() -> None:
    hint = clem_env.nltk_hint(["stopwords", "wordnet"])
    assert "NLTK's data packages stopwords, wordnet" in hint and "python -m nltk.downloader stopwords wordnet" in hint
    assert "package wordnet, which is" in clem_env.nltk_hint(["wordnet"])
    nltk_error = LookupError("\n" + "*" * 70 + "\n  Resource wordnet not found.\n  Please use the NLTK Downloader\n")
    assert clem_env._why(nltk_error) == "LookupError: Resource wordnet not found."  # not a blank first line
    assert clem_env._why(NotImplementedError()) == "NotImplementedError"


def test_a_game_state_without_clemcores_base_fields_is_accepted() -> None:
    """clembench's wordle sets a state of its own without clemcore 3.7's base fields (``outcome``, ...)."""
    from types import SimpleNamespace

    clem_env._clemcore()  # imported as the project imports it
    from clemcore.clemgame.master import GameMaster, GameState

    clem_env._clemcore_compat()
    clem_env._clemcore_compat()  # once is enough; twice changes nothing
    base = GameState()
    base.game_name = "wordle"
    master = SimpleNamespace(_state=base)
    own = SimpleNamespace(target_word="crane")  # a state of a game's own, without the base fields
    GameMaster.state.fset(master, own)
    assert master._state is own and own.game_name == "wordle" and own.outcome == base.outcome
    full = GameState()
    full.game_name = "kept"
    GameMaster.state.fset(master, full)
    assert master._state is full and full.game_name == "kept"


@pytest.mark.slow
def test_every_game_of_a_clembench_clone_loads_and_plays_once(tmp_path: Path) -> None:
    """With ``DEEPEVAL_GAMES_CLEMBENCH`` naming a clone of clembench (never in CI: the repository is not on a
    package index), every game is listed with a verdict, and every playable one plays an episode with the
    clemgame's programmatic players in every seat, replayed from its record."""
    import os

    from deepeval_games.app.execution.run import run_experiment

    folder = os.environ.get(clem_env.CLEMBENCH_ENV, "")
    if not folder or Path(folder).resolve() == CLEMGAMES.resolve():
        pytest.skip(f"{clem_env.CLEMBENCH_ENV} names no clone of clembench")
    rows = clembench.listing()
    assert rows and all(name.startswith("clem:") for name, _ in rows)
    for name, refusal in rows:
        if refusal is not None:
            assert refusal.strip(), name  # a refusal says why
            continue
        seats = load_game(name).num_players()
        spec = {
            "experiment": {"name": name.replace(":", "-"), "game": name, "repeats": 1, "seed": 0},
            "players": [{"name": f"p{i}", "bot": "clem_programmatic"} for i in range(seats)],
        }
        result = run_experiment(spec, tmp_path / name.replace(":", "-"))
        assert result.played and not result.failed, name
        for record in result.records:
            assert list(replayed(record).returns()) == list(record.returns), name


@pytest.mark.slow
@pytest.mark.parametrize("game", ["taboo", "wordle"])
def test_taboo_and_wordle_play_through_run_with_fake_models_and_replay(
    game: str, clem_entry_points: None, tmp_path: Path, fake_provider_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 54's must-show, with ``DEEPEVAL_GAMES_CLEMBENCH`` naming a clone of clembench: ``taboo`` and ``wordle``
    through ``run`` with a fake model in every seat, each match replayed from its record, and the report. A game the
    listing refuses is not played: the test is skipped with the listing's reason (shown by ``-ra``)."""
    import os

    folder = os.environ.get(clem_env.CLEMBENCH_ENV, "")
    if not folder or Path(folder).resolve() == CLEMGAMES.resolve():
        pytest.skip(f"{clem_env.CLEMBENCH_ENV} names no clone of clembench")
    refusal = dict(clembench.listing()).get(f"clem:{game}", "not in the clone")
    if refusal is not None:
        pytest.skip(f"clem:{game} is refused: {refusal}")
    seats = load_game(f"clem:{game}").num_players()
    with FakeOpenAIServer(default=Behaviour.responder(clem_reply), max_hang_s=5) as server:
        players = [model_player(f"fake-{i}", server) for i in range(max(2, seats))][: max(2, seats)]
        spec = write_spec(
            tmp_path / "spec.toml", {"name": game, "game": f"clem:{game}", "repeats": 2, "seed": 3}, players
        )
        assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    done = records(tmp_path / "run")
    assert done and all(r.status == "complete" for r in done)
    for record in done:
        state = replayed(record)
        assert state.is_terminal() and list(state.returns()) == list(record.returns)
        assert record.metrics["clem_game"] == game
    capsys.readouterr()
    assert main(["report", str(tmp_path / "run")]) == 0
    assert f"clembench scores: clem:{game}" in capsys.readouterr().out


def test_loading_a_clemgame_leaves_the_process_logging_and_working_directory_alone(tmp_path: Path) -> None:
    """clemcore's import configures logging for the whole process (a ``clembench.log`` in the working directory,
    every earlier logger disabled); a clem game loaded here does neither."""
    import os
    import subprocess
    import sys

    script = (
        "import logging\n"
        "ours = logging.getLogger('deepeval_games.probe')\n"
        "root = (logging.getLogger().level, list(logging.getLogger().handlers))\n"
        "from deepeval_games.core.registry.games import load_game\n"
        "load_game('clem:wordguess').new_initial_state()\n"
        "assert not ours.disabled, 'a logger made before was disabled'\n"
        "assert (logging.getLogger().level, list(logging.getLogger().handlers)) == root, 'root logger changed'\n"
    )
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, clem_env.CLEMBENCH_ENV: str(CLEMGAMES), "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (tmp_path / "clembench.log").exists() and "clemcore" not in done.stdout
