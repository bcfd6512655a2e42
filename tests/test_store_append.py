"""The store's commit writes a record's line with one ``writev`` (the text and its newline, not copied together);
a short write is completed, and a failed one leaves ``matches.jsonl`` as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deepeval_games.app.storage.store import JSONL_NAME, Store

TEXT = '{"match_id":"%s","payload":"%s"}'


def _line(match_id: str, size: int = 5000) -> str:
    return TEXT % (match_id, "x" * size)


def test_a_commit_is_one_writev_of_the_line_and_its_newline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, ...]] = []
    real = os.writev

    def writev(fd: int, buffers: tuple[bytes, ...]) -> int:
        calls.append(tuple(bytes(b) for b in buffers))
        return real(fd, buffers)

    with Store(tmp_path) as store:
        monkeypatch.setattr(os, "writev", writev)
        assert store.commit_json("a1", _line("a1"))
        assert not store.commit_json("a1", _line("a1"))  # already stored: nothing written
    assert calls == [(_line("a1").encode(), b"\n")]
    assert (tmp_path / JSONL_NAME).read_text() == _line("a1") + "\n"


def test_a_short_write_is_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.writev

    def short(fd: int, buffers: tuple[bytes, ...]) -> int:
        return real(fd, [bytes(buffers[0])[:1000]])  # the disk took only part of the line

    with Store(tmp_path) as store:
        assert store.commit_json("a1", _line("a1"))
        monkeypatch.setattr(os, "writev", short)
        assert store.commit_json("b2", _line("b2"))
        monkeypatch.undo()
        assert store.completed_ids() == {"a1", "b2"}
    assert (tmp_path / JSONL_NAME).read_text() == _line("a1") + "\n" + _line("b2") + "\n"


def test_a_failed_write_leaves_the_file_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.writev

    def short(fd: int, buffers: tuple[bytes, ...]) -> int:
        return real(fd, [bytes(buffers[0])[:1000]])

    def full(fd: int, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    with Store(tmp_path) as store:
        assert store.commit_json("a1", _line("a1"))
        monkeypatch.setattr(os, "writev", short)
        monkeypatch.setattr(os, "write", full)
        with pytest.raises(OSError):
            store.commit_json("b2", _line("b2"))
        monkeypatch.undo()
        assert store.commit_json("b2", _line("b2"))  # not counted as committed: it can be committed again
    assert (tmp_path / JSONL_NAME).read_text() == _line("a1") + "\n" + _line("b2") + "\n"
