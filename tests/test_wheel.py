"""The wheel ships what a task package type-checked against the project needs: ``py.typed`` in every package."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_wheel_marks_every_package_typed(tmp_path: Path) -> None:
    had_build = (REPO / "build").exists()
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if not had_build:  # setuptools builds in the source tree: leave it as it was
        shutil.rmtree(REPO / "build", ignore_errors=True)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = tmp_path.glob("deepeval_games-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in ("deepeval_games", "game_defs", "llm_bots", "analysis"):
        assert f"{package}/py.typed" in names, sorted(n for n in names if n.endswith("py.typed"))
    assert {
        "deepeval_games/core/referee.py",
        "deepeval_games/app/commands/cli.py",
        "deepeval_games/core/task.py",
    } <= names
