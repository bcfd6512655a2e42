"""The command line: the demo run, listings, and clear errors instead of tracebacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deepeval_games.app.commands.cli import main


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return str(path)


GOOD = """
[experiment]
name = "x"
game = "{game}"
repeats = 2
[[players]]
name = "a"
bot = "{bot}"
[[players]]
name = "b"
bot = "pgg_full_contributor"
"""


def test_demo_run_prints_eq1_table(repo_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["run", str(repo_root / "examples" / "pgg_scripted.toml"), "--out", str(tmp_path / "r"), "--no-progress"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "Eq. 1" in out and "20 matches planned: 20 played now" in out
    table = out.split("Eq. 1)\n", 1)[1].split("\n(", 1)[0]  # the table of means, up to its caption
    rows = [
        line.split()[0]
        for line in table.splitlines()
        if line.split() and line.split()[0] in ("free-rider", "full-contributor", "conditional", "random")
    ]
    assert rows[0] == "free-rider" and rows[-1] == "full-contributor"
    assert (tmp_path / "r" / "results.sqlite").exists() and (tmp_path / "r" / "matches.jsonl").exists()
    assert main(["report", str(tmp_path / "r")]) == 0
    assert "free-rider" in capsys.readouterr().out


def test_games_and_bots_listings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["games"]) == 0
    out = capsys.readouterr().out
    assert "deepeval_public_goods" in out and "alpha=1.6" in out
    assert main(["bots"]) == 0
    assert "pgg_conditional_cooperator" in capsys.readouterr().out


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            GOOD.format(game="deepeval_public_gods(players=2)", bot="pgg_free_rider"),
            "unknown game 'deepeval_public_gods'",
        ),
        (GOOD.format(game="deepeval_public_goods(players=2,mode=9)", bot="pgg_free_rider"), "mode must be 1 or 2"),
        (GOOD.format(game="deepeval_public_goods(players=2,colour=1)", bot="pgg_free_rider"), "parameter 'colour'"),
        (GOOD.format(game="deepeval_public_goods(players=2)", bot="pgg_free_ride"), "unknown bot 'pgg_free_ride'"),
        (GOOD.format(game="deepeval_public_goods(players=3)", bot="pgg_free_rider"), "lists only 2 players"),
        ("[experiment\nname=1", "is not valid TOML"),
        ("[[players]]\nname='a'\nbot='pgg_free_rider'", "needs an [experiment] table"),
        (
            "[experiment]\ngame='deepeval_public_goods'\nrepeat=3\n[[players]]\nname='a'\nbot='x'",
            "unknown key 'repeat'",
        ),
        (
            "[experiment]\ngame='deepeval_public_goods'\nrepeats='3'\n[[players]]\nname='a'\nbot='x'",
            "'repeats' must be an integer",
        ),
        ("[experiment]\ngame='deepeval_public_goods'\n[[players]]\nname='a'", "exactly one of 'bot'"),
        (
            "[experiment]\ngame='deepeval_public_goods(players=2)'\n[[players]]\nname='a'\nbot='pgg_random'\n"
            "[players.params]\nx=1\n[[players]]\nname='b'\nbot='pgg_random'",
            "takes no parameter x",
        ),
    ],
)
def test_bad_input_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, message: str
) -> None:
    code = main(["run", _write(tmp_path, spec), "--out", str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_missing_spec_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "r")]) == 2
    assert "spec file not found" in capsys.readouterr().err


def test_console_script_entry_point() -> None:
    done = subprocess.run([sys.executable, "-m", "deepeval_games", "games"], capture_output=True, text=True, check=True)
    assert "deepeval_public_goods" in done.stdout
