"""Data-file resolution and the MBPP loaders.

Reads the local copies in ``$DEEPEVAL_GAMES_DATA`` (default ``../shared/data``). Nothing here touches the
network: downloads are disabled for every test, except the download tests, which fetch from an
``http.server`` on 127.0.0.1 serving a temporary folder.
"""

from __future__ import annotations

import dataclasses
import functools
import http.server
import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from deepeval_games.infra.files import DatasetError, cache_dir
from game_defs import data_files as _files
from game_defs.code_review import mbpp
from game_defs.code_review.mbpp import SPLITS, load_mbpp, load_sanitized_mbpp, split_of
from game_defs.data_files import (
    CANONICAL_URLS,
    CLEMBENCH_RELPATH,
    EXPECTED_SHA256,
    iwslt2017_relpath,
    resolve_data_file,
)

_REPO = Path(__file__).resolve().parents[1]
_DATA = Path(os.environ.get("DEEPEVAL_GAMES_DATA") or _REPO.parent / "shared" / "data")
_MBPP_SHA = EXPECTED_SHA256["mbpp/mbpp.jsonl"]

pytestmark = pytest.mark.skipif(
    not (_DATA / "mbpp" / "mbpp.jsonl").is_file(), reason=f"no local data folder at {_DATA}"
)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every test: local data folder, an empty private cache, downloads off."""
    monkeypatch.setenv("DEEPEVAL_GAMES_DATA", str(_DATA))
    monkeypatch.setenv("DEEPEVAL_GAMES_OFFLINE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def _copy(tmp_path: Path, name: str = "mbpp.jsonl") -> Path:
    dest = tmp_path / name
    shutil.copyfile(_DATA / "mbpp" / name, dest)
    return dest


def _rewrite_lines(path: Path, edit: dict[int, str | None]) -> None:
    """Replace (str) or delete (None) 1-based lines of a JSONL file."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    out = []
    for lineno, line in enumerate(lines, start=1):
        if lineno not in edit:
            out.append(line)
        elif edit[lineno] is not None:
            out.append(edit[lineno] + "\n")
    path.write_text("".join(out), encoding="utf-8")


def _line(path: Path, lineno: int) -> dict:
    return json.loads(path.read_text(encoding="utf-8").splitlines()[lineno - 1])


# --- MBPP: shape, splits, provenance ---------------------------------------------------------------


def test_mbpp_shape_and_provenance() -> None:
    ds = load_mbpp()
    assert len(ds) == 974
    assert ds.task_ids() == tuple(range(1, 975))
    assert ds.sha256 == _MBPP_SHA
    assert ds.source == (_DATA / "mbpp" / "mbpp.jsonl").resolve()
    for problem in ds:
        assert isinstance(problem.text, str) and isinstance(problem.code, str)
        assert isinstance(problem.test_list, tuple) and len(problem.test_list) == 3
        assert all(t.startswith("assert") for t in problem.test_list)
        assert isinstance(problem.challenge_test_list, tuple)
    p = ds[11]
    assert p.task_id == 11 and "assert" in p.test_list[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.code = "x"  # type: ignore[misc]


def test_mbpp_splits() -> None:
    ds = load_mbpp()
    sizes = {name: len(ds.split(name)) for name in SPLITS}
    assert sizes == {"prompt": 10, "test": 500, "validation": 90, "train": 374}
    test = ds.split("test")
    assert (test[0].task_id, test[-1].task_id) == (11, 510)
    assert ds.split("validation")[0].task_id == 511 and ds.split("train")[0].task_id == 601
    assert [split_of(i) for i in (1, 10, 11, 510, 511, 600, 601, 974)] == [
        "prompt", "prompt", "test", "test", "validation", "validation", "train", "train",
    ]  # fmt: skip
    assert ds[600].split == "validation"
    with pytest.raises(ValueError, match="unknown MBPP split"):
        ds.split("dev")
    for bad in (0, 975):
        with pytest.raises(KeyError):
            ds[bad]
        with pytest.raises(KeyError):
            split_of(bad)


def test_mbpp_parsed_once_per_file_and_content() -> None:
    assert load_mbpp() is load_mbpp()
    info = mbpp._parse_mbpp.cache_info()
    load_mbpp()
    assert mbpp._parse_mbpp.cache_info().hits == info.hits + 1


def test_mbpp_explicit_path_file_or_folder(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    assert load_mbpp(copy).source == copy.resolve()
    (tmp_path / "root" / "mbpp").mkdir(parents=True)
    shutil.copyfile(copy, tmp_path / "root" / "mbpp" / "mbpp.jsonl")
    assert load_mbpp(tmp_path / "root").sha256 == _MBPP_SHA


def test_explicit_path_wins_over_env_and_must_exist(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"nowhere\.jsonl"):
        load_mbpp(tmp_path / "nowhere.jsonl")


def test_sanitized_mbpp() -> None:
    ds = load_sanitized_mbpp()
    assert len(ds) == 427
    assert ds.sha256 == EXPECTED_SHA256["mbpp/sanitized-mbpp.json"]
    assert 2 in ds and 1 not in ds
    p = ds[2]
    assert p.prompt.startswith("Write a function") and p.test_imports == ()
    assert isinstance(p.test_list, tuple) and p.source_file.endswith(".ipynb")
    assert all(p.task_id in range(1, 975) for p in ds)
    assert sum(len(ds.split(name)) for name in SPLITS) == 427
    assert load_sanitized_mbpp() is ds


# --- MBPP: damage ----------------------------------------------------------------------------------


def test_sha_mismatch_names_path_and_both_hashes(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    record = _line(copy, 20)
    record["text"] += " (edited)"
    _rewrite_lines(copy, {20: json.dumps(record)})
    with pytest.raises(DatasetError) as err:
        load_mbpp(copy)
    message = str(err.value)
    assert str(copy) in message and _MBPP_SHA in message and "verify=False" in message
    assert load_mbpp(copy, verify=False)[20].text.endswith("(edited)")


def test_bad_json_line_names_file_and_line(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    _rewrite_lines(copy, {37: '{"task_id": 37, "text": '})
    with pytest.raises(DatasetError, match=r"mbpp\.jsonl, line 37: not valid JSON"):
        load_mbpp(copy, verify=False)


@pytest.mark.parametrize(
    ("field", "value", "pattern"),
    [
        ("code", None, r"line 5: missing field 'code'"),
        ("test_list", "assert f() == 1", r"line 5: field 'test_list' should be a list of strings"),
        ("task_id", "5", r"line 5: field 'task_id' should be int"),
        ("task_id", True, r"line 5: field 'task_id' should be int"),
        ("task_id", 4, r"line 5: duplicate task_id 4 \(first at .*line 4\)"),
        ("task_id", 975, r"line 5: task_id 975 outside 1..974"),
    ],
)
def test_bad_record_names_line(tmp_path: Path, field: str, value: object, pattern: str) -> None:
    copy = _copy(tmp_path)
    record = _line(copy, 5)
    if value is None:
        del record[field]
    else:
        record[field] = value
    _rewrite_lines(copy, {5: json.dumps(record)})
    with pytest.raises(DatasetError, match=pattern):
        load_mbpp(copy, verify=False)


def test_truncated_file_is_a_count_error(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    _rewrite_lines(copy, {974: None})
    with pytest.raises(DatasetError, match=r"expected 974 records, found 973"):
        load_mbpp(copy, verify=False)


def test_corrupt_sanitized_file(tmp_path: Path) -> None:
    copy = _copy(tmp_path, "sanitized-mbpp.json")
    records = json.loads(copy.read_text(encoding="utf-8"))
    del records[3]["prompt"]
    copy.write_text(json.dumps(records, indent=1), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"record 3: missing field 'prompt'"):
        load_sanitized_mbpp(copy, verify=False)
    copy.write_text("[{", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"sanitized-mbpp\.json, line 1: not valid JSON"):
        load_sanitized_mbpp(copy, verify=False)


def test_missing_file_offline_names_every_place(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty-data"
    empty.mkdir()
    monkeypatch.setenv("DEEPEVAL_GAMES_DATA", str(empty))
    with pytest.raises(DatasetError) as err:
        load_mbpp()
    message = str(err.value)
    assert str(empty / "mbpp" / "mbpp.jsonl") in message
    assert str(tmp_path / "xdg-cache" / "deepeval-games" / "mbpp" / "mbpp.jsonl") in message
    assert "DEEPEVAL_GAMES_OFFLINE" in message and "set DEEPEVAL_GAMES_DATA" in message


def test_missing_env_var_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEEPEVAL_GAMES_DATA")
    with pytest.raises(DatasetError, match=r"\$DEEPEVAL_GAMES_DATA \(not set\)"):
        load_mbpp()


# --- URL table -------------------------------------------------------------------------------------


def test_canonical_urls() -> None:
    assert CANONICAL_URLS["mbpp/mbpp.jsonl"] == (
        "https://raw.githubusercontent.com/google-research/google-research/master/mbpp/mbpp.jsonl"
    )
    assert CANONICAL_URLS[iwslt2017_relpath("en-zh")] == (
        "https://raw.githubusercontent.com/hlt-mt/WIT3/master/archive/2017-01-ted-test/texts/en/zh/en-zh.tgz"
    )
    # clembench's release is an archive GitHub makes on request: its unpacked game files are checked instead
    assert set(EXPECTED_SHA256) == set(CANONICAL_URLS) - {CLEMBENCH_RELPATH}
    with pytest.raises(DatasetError, match="unknown IWSLT 2017 pair"):
        iwslt2017_relpath("en-xx")


def test_iwslt_tarballs_resolve_with_sha() -> None:
    for pair in _files.IWSLT2017_PAIRS:
        found = resolve_data_file(iwslt2017_relpath(pair))
        assert found.origin == "env" and found.sha256 == EXPECTED_SHA256[iwslt2017_relpath(pair)]


# --- download path, against a local server ---------------------------------------------------------


@pytest.fixture
def local_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """An HTTP server on 127.0.0.1 serving a temporary folder; downloads enabled, no data folder."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("DEEPEVAL_GAMES_DATA")
    monkeypatch.delenv("DEEPEVAL_GAMES_OFFLINE")
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", served
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def test_download_into_cache(local_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    base, served = local_server
    shutil.copyfile(_DATA / "mbpp" / "mbpp.jsonl", served / "mbpp.jsonl")
    monkeypatch.setitem(CANONICAL_URLS, "mbpp/mbpp.jsonl", f"{base}/mbpp.jsonl")

    ds = load_mbpp()
    cached = cache_dir() / "mbpp" / "mbpp.jsonl"
    assert ds.source == cached.resolve() and ds.sha256 == _MBPP_SHA and len(ds) == 974
    assert (cached.parent / "mbpp.jsonl.sha256").read_text(encoding="ascii").split()[0] == _MBPP_SHA
    assert sorted(p.name for p in cached.parent.iterdir()) == ["mbpp.jsonl", "mbpp.jsonl.sha256"]

    (served / "mbpp.jsonl").unlink()  # a second resolution uses the cache, not the server
    assert resolve_data_file("mbpp/mbpp.jsonl").origin == "cache"


def test_download_with_wrong_sha_saves_nothing(local_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    base, served = local_server
    (served / "mbpp.jsonl").write_text('{"task_id": 1}\n', encoding="utf-8")
    monkeypatch.setitem(CANONICAL_URLS, "mbpp/mbpp.jsonl", f"{base}/mbpp.jsonl")
    with pytest.raises(DatasetError, match=rf"sha256 mismatch for {base}/mbpp.jsonl.*expected {_MBPP_SHA}"):
        load_mbpp()
    cache = cache_dir() / "mbpp"
    assert not cache.exists() or list(cache.iterdir()) == []


def test_failed_download_names_places_and_url(local_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    base, _ = local_server
    monkeypatch.setitem(CANONICAL_URLS, "mbpp/mbpp.jsonl", f"{base}/missing.jsonl")
    with pytest.raises(DatasetError) as err:
        load_mbpp()
    message = str(err.value)
    assert f"{base}/missing.jsonl failed" in message and "404" in message
    assert "(user cache)" in message and "set DEEPEVAL_GAMES_DATA" in message


def test_explicit_url_and_unverified_file(local_server: tuple[str, Path]) -> None:
    base, served = local_server
    (served / "notes.txt").write_text("hello\n", encoding="utf-8")
    found = resolve_data_file("extra/notes.txt", url=f"{base}/notes.txt")
    assert found.origin == "download" and found.path.read_text(encoding="utf-8") == "hello\n"
    assert found.sha256 == "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
