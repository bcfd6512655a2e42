"""``deepeval-games data``: the data sources the tasks register, where they are, and fetching them (no network:
a local HTTP server on 127.0.0.1 serves the files)."""

from __future__ import annotations

import dataclasses
import functools
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from deepeval_games.app.commands import data
from deepeval_games.app.commands.cli import main
from deepeval_games.core import task
from deepeval_games.infra.files import DatasetError
from game_defs.data_files import resolve_data_file

SHARED = Path(os.environ.get("DEEPEVAL_GAMES_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
"""The data folder (as ``../shared/data`` is laid out); the tests that need its files skip without it."""
MBPP = "mbpp/mbpp.jsonl"


@pytest.fixture
def empty_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No data folder named, an empty user cache, downloads off."""
    monkeypatch.delenv("DEEPEVAL_GAMES_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("DEEPEVAL_GAMES_OFFLINE", "1")
    return tmp_path / "cache" / "deepeval-games"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTP server on 127.0.0.1 serving a folder (its base URL, the folder)."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", root
    finally:
        server.shutdown()
        server.server_close()


def test_every_task_registers_its_sources() -> None:
    by_task = {}
    for source in data.sources():
        by_task.setdefault(source.task, []).append(source.name)
    assert by_task["deepeval_code_review"] == [MBPP, "mbpp/sanitized-mbpp.json"]
    assert len(by_task["deepeval_translation"]) == 6 and len(by_task["deepeval_idiom_solitaire"]) == 3


def test_without_the_files_they_are_listed_missing_with_the_fetch_command(
    empty_machine: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data"]) == 0
    out = capsys.readouterr().out
    assert f"{MBPP}  [deepeval_code_review]  MISSING (fetch: deepeval-games data fetch {MBPP})" in out
    count = len([s for s in data.sources() if s.url])  # 10, and the clembench release where its family loaded
    assert f"{count} file(s) missing: 'deepeval-games data fetch' downloads and checks them all." in out
    assert "installed (package china-idiom-without-tone" in out


@pytest.mark.skipif(not (SHARED / MBPP).is_file(), reason="the shared data folder is not here")
def test_with_the_data_folder_every_file_is_present_with_its_sha256(
    empty_machine: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEEPEVAL_GAMES_DATA", str(SHARED))
    assert main(["data"]) == 0
    out = capsys.readouterr().out
    unshared = ("nltk/", "clembench/")  # NLTK's and the clembench release: not in that folder
    files = [s for s in data.sources() if s.url and not s.name.startswith(unshared)]
    assert len(files) == 8
    for source in files:
        assert (
            f"{source.name}  [{source.task}]  present, sha256 ok ($DEEPEVAL_GAMES_DATA: {SHARED / source.name})" in out
        )
        assert f"sha256 {source.sha256}" in out
    missing = [s for s in data.sources() if s.url and s.name.startswith(unshared)]
    assert out.count("MISSING") == len(missing) >= 2  # NLTK's word list and tagger, the clembench release


def test_the_missing_data_error_names_the_fetch_command(empty_machine: Path) -> None:
    with pytest.raises(DatasetError, match=f"deepeval-games data fetch {MBPP}"):
        resolve_data_file(MBPP)


def _serve_from(monkeypatch: pytest.MonkeyPatch, base: str) -> task.DataSource:
    """Both MBPP files from a mirror on 127.0.0.1 (what it does not hold is a 404 there, never the network)."""
    for name in (MBPP, "mbpp/sanitized-mbpp.json"):
        source = next(s for s in task.data_sources() if s.name == name)
        monkeypatch.setitem(task._DATA_SOURCES, name, dataclasses.replace(source, url=base + name))
    moved = task._DATA_SOURCES[MBPP]
    monkeypatch.delenv("DEEPEVAL_GAMES_OFFLINE", raising=False)  # data fetch downloads only when not offline
    return moved


@pytest.mark.skipif(not (SHARED / MBPP).is_file(), reason="the shared data folder is not here")
def test_fetch_downloads_checks_and_then_finds_the_file(
    empty_machine: Path, served: tuple[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    base, root = served
    (root / "mbpp").mkdir()
    (root / MBPP).write_bytes((SHARED / MBPP).read_bytes())
    data.sources()
    _serve_from(monkeypatch, base)
    assert main(["data", "fetch", MBPP]) == 0
    assert f"{MBPP}: fetched to {empty_machine / MBPP}" in capsys.readouterr().out
    assert (empty_machine / MBPP).read_bytes() == (SHARED / MBPP).read_bytes()
    assert main(["data", "fetch", "code_review"]) == 2  # the other file is not served: a clear error
    assert "mbpp/sanitized-mbpp.json: the download from" in capsys.readouterr().err
    assert main(["data"]) == 0
    assert f"{MBPP}  [deepeval_code_review]  present, sha256 ok (user cache" in capsys.readouterr().out
    assert resolve_data_file(MBPP).origin == "cache"  # the loaders find it there, offline


def test_a_file_that_is_not_the_published_one_is_refused(
    empty_machine: Path, served: tuple[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    base, root = served
    (root / "mbpp").mkdir()
    (root / MBPP).write_text('{"task_id": 1}\n', encoding="utf-8")
    data.sources()
    _serve_from(monkeypatch, base)
    assert main(["data", "fetch", MBPP]) == 2
    assert "sha256 mismatch" in capsys.readouterr().err
    assert not (empty_machine / MBPP).exists()
