"""Helpers of the clembench tests: the test clemgames' folder, the ``clem:`` family's entry points where the
installed metadata predates them, and a fake model that answers a clemgame in the format its game master asks."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from tests.fake_openai_server import last_user_message

__all__ = ["CLEMGAMES", "clem_entry_points", "clem_reply"]

CLEMGAMES = Path(__file__).with_name("clemgames")
"""The folder of the test clemgames (``wordguess``)."""

_ENTRY_POINTS = """[deepeval_games.games]
clembench = game_defs.arena.clembench

[deepeval_games.bots]
clembench = llm_bots.clembench.scripted

[deepeval_games.tables]
clembench = analysis.tables.clembench
"""


@pytest.fixture
def clem_entry_points(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The entry points ``setup.cfg`` declares for the ``clem:`` family, added as a distribution on ``sys.path``
    where the installed metadata lacks them (an editable install made before they were declared)."""
    if any(e.name == "clembench" for e in metadata.entry_points(group="deepeval_games.tables")):
        yield
        return
    root = tmp_path_factory.mktemp("clem-dist")
    info = root / "deepeval_games_clembench_shim-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: deepeval-games-clembench-shim\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(_ENTRY_POINTS)
    sys.path.insert(0, str(root))
    try:
        yield
    finally:
        sys.path.remove(str(root))


def clem_reply(body: dict[str, Any]) -> str:
    """A reply to a clemgame's game master in the format its last message asks for: a clue, a guess, a five-letter
    word; the describer of ``wordguess`` gives a clue that does not name the word, its guesser guesses ``pear``."""
    text = last_user_message(body)
    if "describe the word" in text or "Give another clue" in text:
        return "CLUE: a fruit that grows on trees"
    if "GUESS:" in text or "guess a word" in text.lower():
        return "GUESS: pear"
    if re.search(r"\bguess:", text, re.IGNORECASE):
        return "explanation: common letters first\nguess: crane"  # wordle: the explanation comes first
    if re.search(r"\bclue:", text, re.IGNORECASE):
        return "CLUE: something you can find at home"
    return "GUESS: pear"
