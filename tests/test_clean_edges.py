"""Clean edges of the command line (issue 43): one message per mistake, in the project's words."""

from __future__ import annotations

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
