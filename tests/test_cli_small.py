"""The small fixes of issue 50 item 8: ``games --all`` kept in the user cache and quiet, ``export --out -``, ``init``
without a task, an interrupted run's manifest, and numeric flags checked as the command line is read."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import signal
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import llm_bots.players.classical
from deepeval_games import run_experiment
from deepeval_games.app.commands import listing
from deepeval_games.app.commands.cli import main
from deepeval_games.app.commands.playing import sigterm_as_interrupt
from deepeval_games.app.execution import repeats
from deepeval_games.app.spec.manifest import read_manifest

PGG_SPEC: dict[str, Any] = {
    "experiment": {"name": "small", "game": "deepeval_public_goods(players=2,rounds=1)", "repeats": 2},
    "players": [{"name": "free", "bot": "pgg_free_rider"}, {"name": "full", "bot": "pgg_full_contributor"}],
}


# -- games --all: cached, with progress, no escape codes --------------------------------------------------------------


class _FakeListing:
    """Stands for the probes of ``games --all``: counts its calls, reports progress, warns as gymnasium does."""

    def __init__(self) -> None:
        self.calls = 0

    def openspiel(self, *, progress: Callable[[str], None] | None = None) -> list[str]:
        self.calls += 1
        warnings.warn("\x1b[33mWARN: Box low's precision lowered\x1b[0m", UserWarning, stacklevel=2)
        if progress is not None:
            progress("tic_tac_toe")
        return ["tic_tac_toe  [LLM: yes; classical: random]", "    (no parameters)"]

    def families(self, prefix: str | None = None, *, progress: Callable[[str], None] | None = None) -> list[str]:
        if progress is not None:
            progress("pettingzoo:classic.go_v5")
        return ["\nPettingZoo (pettingzoo:..., 1 found):", "pettingzoo:classic.go_v5  [playable by LLM]"]


def test_games_all_is_served_from_the_user_cache_the_second_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    fake = _FakeListing()
    monkeypatch.setattr(llm_bots.players.classical, "openspiel_listing", fake.openspiel)
    monkeypatch.setattr(llm_bots.players.classical, "family_listing", fake.families)

    assert main(["games", "--all"]) == 0
    first_out, first_err = capsys.readouterr()
    assert fake.calls == 1 and (tmp_path / "deepeval-games" / listing.LISTING_CACHE_NAME).is_file()
    assert "probed 2 games" in first_err  # progress: a count line where standard error is no terminal
    assert "tic_tac_toe  [LLM: yes" in first_out and "pettingzoo:classic.go_v5  [playable by LLM]" in first_out

    assert main(["games", "--all"]) == 0
    second_out, second_err = capsys.readouterr()
    assert fake.calls == 1  # not probed again
    assert second_out == first_out and "probed" not in second_err
    for text in (first_out, first_err, second_out, second_err):
        assert "\x1b[" not in text and "WARN: Box" not in text  # the warning is logged (-v), never printed raw

    key = listing.listing_key()  # another version of a library: probed again
    monkeypatch.setattr(listing, "listing_key", lambda: {**key, "versions": {**key["versions"], "textarena": "9.9"}})
    assert main(["games", "--all"]) == 0
    assert fake.calls == 2 and capsys.readouterr().out == first_out


def test_the_listing_key_names_the_versions_it_depends_on() -> None:
    key = listing.listing_key()
    assert {"deepeval-games", "open_spiel", "textarena", "pettingzoo"} <= set(key["versions"])
    assert key == listing.listing_key() and json.loads(json.dumps(key)) == key  # stable, and stored as it is


def test_warnings_lose_their_colour_codes() -> None:
    assert listing.strip_ansi("\x1b[33mWARN: low\x1b[0m") == "WARN: low"


# -- export --out - ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of two scripted PGG matches."""
    out = tmp_path_factory.mktemp("run") / "run"
    run_experiment(PGG_SPEC, out)
    return out


def test_export_writes_csv_and_jsonl_to_standard_output(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(run_dir), "--format", "csv", "--out", "-"]) == 0
    out, err = capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 2 and "wrote 2 match rows" in err and "standard output" in err
    assert not (Path.cwd() / "-").exists()
    assert main(["export", str(run_dir), "--format", "jsonl", "--out", "-", "--level", "turn"]) == 0
    out, err = capsys.readouterr()
    assert all(json.loads(line) for line in out.splitlines()) and "turn rows" in err


@pytest.mark.parametrize("fmt", ["parquet", "inspect"])
def test_binary_exports_to_standard_output_are_refused(
    run_dir: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", str(run_dir), "--format", fmt, "--out", "-"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"--format {fmt} cannot be written to standard output" in err


# -- init without a task ------------------------------------------------------------------------------------------


def test_init_without_a_task_lists_the_tasks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "usage: deepeval-games init TASK" in err
    assert "deepeval_public_goods" in err and "DeepEval Public Goods Game" in err
    assert not list(tmp_path.iterdir())


# -- an interrupted run's manifest --------------------------------------------------------------------------------


def _stopped_by(signum: int) -> Callable[..., Any]:
    """A stand-in for the play of a run's matches: the process gets ``signum``, then the play waits."""

    async def play(*args: object) -> None:
        os.kill(os.getpid(), signum)
        await asyncio.sleep(30)

    return play


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_run_stopped_by_a_signal_is_interrupted_in_its_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: int
) -> None:
    monkeypatch.setattr(repeats, "_play", _stopped_by(signum))
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        run_experiment(PGG_SPEC, tmp_path / "run")
    assert [entry["status"] for entry in read_manifest(tmp_path / "run")["runs"]] == ["interrupted"]


def test_a_run_that_fails_is_still_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(repeats, "_play", broken)
    with pytest.raises(RuntimeError, match="boom"):
        run_experiment(PGG_SPEC, tmp_path / "run")
    assert [entry["status"] for entry in read_manifest(tmp_path / "run")["runs"]] == ["failed"]


def test_sigterm_is_left_as_it_was_after_the_run() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with sigterm_as_interrupt():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before


# -- numeric flags named in their errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval", "deepeval_public_goods", "--max-matches", "-5"], "--max-matches: must be at least 1, got -5"),
        (["eval", "deepeval_public_goods", "--max-matches", "two"], "argument --max-matches: must be a whole number"),
        (["eval", "deepeval_public_goods", "--budget", "-1"], "argument --budget: must be at least 0, got -1"),
        (["eval", "deepeval_public_goods", "--workers", "0"], "argument --workers: must be 'auto' or a number"),
        (["run", "spec.toml", "--out", "r", "--wait", "-2"], "argument --wait: must be at least 0, got -2"),
        (["report", "r", "--epsilon", "0"], "argument --epsilon: must be more than 0, got 0"),
        (["view", "r", "--epsilon", "nan"], "argument --epsilon: must be more than 0, got nan"),
    ],
)
def test_a_bad_number_is_named_by_its_flag(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_good_numbers_pass() -> None:
    from deepeval_games.app.commands.parser import command_parser

    args = command_parser().parse_args(["eval", "deepeval_public_goods", "--max-matches", "40", "--budget", "0.5"])
    assert args.max_matches == 40 and isinstance(args.max_matches, int) and args.budget == 0.5
