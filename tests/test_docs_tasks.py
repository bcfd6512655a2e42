"""The documentation has a page per task (docs/tasks/), each with its rules card, roles, score, data, the study
``eval`` plays and a link to its rows of docs/paper_choices.md; the study a page states is the one the task declares."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyspiel
import pytest

from deepeval_games.core.task import Study
from game_defs.code_review.game import CodeReviewGame
from game_defs.idiom_solitaire.game import IdiomSolitaireGame
from game_defs.openspiel_games import classical_study
from game_defs.public_goods.game import PublicGoodsGame
from game_defs.translation.game import TranslationGame

ROOT = Path(__file__).resolve().parents[1]
ROWS = ("seats and roles", "score", "the paper's result", "data", "`eval`'s default study", "paper choices")
"""The rows of the table at the top of every task page."""


def _study(game_class: Any) -> Study:
    """A task's default study, read from its class: it names no game state, so no data set is loaded for it."""
    return game_class.default_study(None)  # type: ignore[no-any-return]


PAGES = {
    "public_goods.md": ("deepeval_public_goods", lambda: _study(PublicGoodsGame)),
    "idiom_solitaire.md": ("deepeval_idiom_solitaire", lambda: _study(IdiomSolitaireGame)),
    "code_review.md": ("deepeval_code_review", lambda: _study(CodeReviewGame)),
    "translation.md": ("deepeval_translation", lambda: _study(TranslationGame)),
    "openspiel.md": (None, lambda: classical_study(pyspiel.load_game("tic_tac_toe"))),
}


def _row(page: str, name: str) -> str:
    found = re.search(rf"^\| {re.escape(name)} \| (.+) \|$", page, re.MULTILINE)
    assert found is not None, f"no row {name!r}"
    return found.group(1)


@pytest.mark.parametrize("file", PAGES)
def test_a_task_page_has_its_card_and_states_the_study_eval_plays(file: str) -> None:
    short_name, study = PAGES[file]
    page = (ROOT / "docs" / "tasks" / file).read_text(encoding="utf-8")
    title = page.splitlines()[0]
    assert short_name is None or f"`{short_name}`" in title
    assert "\n## Rules card\n" in page
    for name in ROWS:
        assert _row(page, name)
    stated = _row(page, "`eval`'s default study")
    declared = study()
    for opponent in declared.opponents:
        assert f"`{opponent['bot']}`" in stated, f"{file}: the study plays {opponent['bot']}, the page does not say so"
    assert f"up to {declared.budget_matches:,} matches" in stated
    assert f"epsilon {declared.epsilon:g}" in stated
    assert ("no preset" in stated) if declared.preset is None else (f'`preset = "{declared.preset}"`' in stated)
    judge = {"none": "", "optional": "a judge only when one is named", "required": "a judge is required"}
    assert judge[declared.judge] in stated
    assert all(f"`{name}`" in stated for name in declared.judges if "/" not in name)  # the offline judges


def test_every_task_page_is_in_the_site_and_links_its_paper_choices() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    choices = (ROOT / "docs" / "paper_choices.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r"\{#([\w-]+)\}$", choices, re.MULTILINE))
    anchors |= {re.sub(r"[^\w]+", "-", h.lower()).strip("-") for h in re.findall(r"^## ([^{\n]+)$", choices, re.M)}
    pages = sorted(p.name for p in (ROOT / "docs" / "tasks").glob("*.md"))
    assert pages == sorted([*PAGES, "index.md"])
    for file in pages:
        assert f": tasks/{file}" in nav
    for file in PAGES:
        page = (ROOT / "docs" / "tasks" / file).read_text(encoding="utf-8")
        links = re.findall(r"\(\.\./paper_choices\.md#([\w-]+)\)", _row(page, "paper choices"))
        assert links and set(links) <= anchors, (file, links)
