"""docs/paper_choices.md agrees with the code: every parameter a task's presets set is named in that task's section
with the value the preset gives it, and every file the page names exists (issue 29, item 8)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deepeval_games.core import task
from game_defs.code_review.game import CodeReviewGame
from game_defs.idiom_solitaire.game import IdiomSolitaireGame
from game_defs.public_goods.game import PublicGoodsGame
from game_defs.translation.game import TranslationGame

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "paper_choices.md").read_text(encoding="utf-8")
TASKS = {  # the game classes, not loaded games: no data set is needed to read what a class declares
    "deepeval_public_goods": PublicGoodsGame,
    "deepeval_idiom_solitaire": IdiomSolitaireGame,
    "deepeval_code_review": CodeReviewGame,
    "deepeval_translation": TranslationGame,
}


def _section(short_name: str) -> str:
    """The page's section of a task: from its heading (which names the game) to the next heading."""
    found = re.search(rf"^## [^\n]*`{short_name}`[^\n]*\n(.*?)(?=^## |\Z)", PAGE, re.MULTILINE | re.DOTALL)
    assert found is not None, f"no section for {short_name}"
    return found.group(1)


def _value(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@pytest.mark.parametrize("short_name", TASKS)
def test_every_preset_parameter_is_named_in_its_tasks_section_with_its_value(short_name: str) -> None:
    presets = task.presets(TASKS[short_name])  # the class declares what its games do
    assert {"paper", "project"} <= set(presets)
    section = _section(short_name)
    named = {f"{k}={_value(v)}" for entries in presets.values() for k, v in entries.items()}
    missing = sorted(n for n in named if f"`{n}`" not in section and f"`{n}:" not in section)
    assert missing == [], f"{short_name}: preset parameters the page does not name: {missing}"


def test_every_row_has_the_four_cells_and_every_difference_a_switch_cell() -> None:
    rows = [line for line in PAGE.splitlines() if line.startswith("| ") and not line.startswith("| point |")]
    assert len(rows) > 30
    for row in rows:
        if set(row) <= set("|- "):
            continue
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(cells) == 4 and all(cells), row[:80]  # point, paper, default here, switch ("—" when none)


def test_the_files_the_page_names_exist() -> None:
    paths = set(re.findall(r"`((?:[a-z_]+/)+[\w.]*)`", PAGE))
    assert "deepeval_games/app/spec/presets.py" in paths
    assert [p for p in sorted(paths) if not (ROOT / p).exists()] == []
