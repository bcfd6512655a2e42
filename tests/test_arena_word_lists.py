"""TextArena's word games read NLTK's word list and tagger as data files (issue 44): listed by ``deepeval-games
data``, fetched once with their sha256 checked (from a server on 127.0.0.1 holding a small fixture of them, never
NLTK's own), then played offline."""

from __future__ import annotations

import dataclasses
import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("textarena")
pytest.importorskip("nltk")

import game_defs.arena.textarena  # noqa: F401  (the entry point's module: registers the family)
from deepeval_games.app.commands import data
from deepeval_games.app.commands.cli import main
from deepeval_games.core import task
from deepeval_games.core.registry.games import load_game
from deepeval_games.core.testing import check_game
from game_defs.arena import textarena_env
from game_defs.arena.word_lists import DATA_TASK, NLTK_PACKAGES, nltk_relpath
from tests.arena_play import bracketed_move, records, replayed, write_spec
from tests.fake_openai_server import Behaviour, FakeOpenAIServer, model_player
from tests.nltk_fixture import write_nltk_fixture

FILES = [nltk_relpath(package) for package in NLTK_PACKAGES]
WORD_GAMES = ["Hangman-v0", "Wordle-v0", "WordSearch-v0", "Codenames-v0", "DontSayIt-v0", "LetterAuction-v0"]


@pytest.fixture
def offline_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No data folder named, an empty user cache; the adapter's probes forgotten (they depend on the files)."""
    monkeypatch.delenv("DEEPEVAL_GAMES_DATA", raising=False)
    monkeypatch.delenv("DEEPEVAL_GAMES_OFFLINE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    textarena_env.facts.cache_clear()
    yield tmp_path / "cache" / "deepeval-games"
    textarena_env.facts.cache_clear()


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The fixture's zips served on 127.0.0.1, registered as the NLTK sources' URLs and sha256 (relpath -> sha256)."""
    root = tmp_path / "served"
    sums = write_nltk_fixture(root)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    data.sources()
    import game_defs.data_files as tables

    for relpath, sha256 in sums.items():
        source = next(s for s in task.data_sources() if s.name == relpath)
        monkeypatch.setitem(task._DATA_SOURCES, relpath, dataclasses.replace(source, url=base + relpath, sha256=sha256))
        monkeypatch.setitem(tables.CANONICAL_URLS, relpath, base + relpath)
        monkeypatch.setitem(tables.EXPECTED_SHA256, relpath, sha256)
    try:
        yield sums
    finally:
        server.shutdown()
        server.server_close()


def test_the_word_lists_are_data_sources_with_their_pinned_url_and_sha256(
    offline_machine: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEEPEVAL_GAMES_OFFLINE", "1")
    assert main(["data"]) == 0
    out = capsys.readouterr().out
    for relpath in FILES:
        assert f"{relpath}  [{DATA_TASK}]  MISSING (fetch: deepeval-games data fetch {relpath})" in out
    sources = {s.name: s for s in data.sources()}
    assert sources["nltk/corpora/words.zip"].sha256 == (
        "54ed02917d6771dcc3e8141218960d020947f7f2ccfd9ac9b320979349746015"
    )
    assert all("/nltk/nltk_data/" in str(sources[relpath].url) for relpath in FILES)


def test_without_the_files_a_word_game_is_refused_with_the_fetch_command(
    offline_machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPEVAL_GAMES_OFFLINE", "1")
    # in a fresh interpreter: a word list another test loaded stays in NLTK's memory for the rest of this process
    probe = "from game_defs.arena import textarena_env; print(textarena_env.facts('Hangman-v0').refusal)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, env=os.environ)
    assert f"deepeval-games data fetch {DATA_TASK}" in done.stdout, done.stdout + done.stderr


def test_after_data_fetch_the_word_games_play_offline(
    offline_machine: Path,
    mirror: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    fake_provider_key: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["data", "fetch", DATA_TASK]) == 0
    out = capsys.readouterr().out
    for relpath, sha256 in mirror.items():
        assert f"{relpath}: fetched to {offline_machine / relpath} (sha256 {sha256}, as published)" in out
    monkeypatch.setenv("DEEPEVAL_GAMES_OFFLINE", "1")  # no download from here on: the cache holds them
    with textarena_env.no_network():  # the probe and the kit with every socket refused
        for env_id in WORD_GAMES:
            report = check_game(f"textarena:{env_id}", playouts=1)
            assert report.ok, (env_id, report.failures)
    with FakeOpenAIServer(default=Behaviour.responder(bracketed_move), max_hang_s=5) as server:
        spec = write_spec(
            tmp_path / "spec.toml",
            {"name": "hangman", "game": "textarena:Hangman-v0", "repeats": 2, "seed": 0},
            [model_player("fake-model", server)],
        )
        assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    played = records(tmp_path / "run")
    assert len(played) == 2 and all(len(r.returns) == 1 for r in played)
    assert all(list(replayed(r).returns()) == list(r.returns) for r in played)
    assert load_game("textarena:Hangman-v0").num_players() == 1
