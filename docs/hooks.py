"""MkDocs hook (``hooks:`` in ``mkdocs.yml``): the reference pages are generated at build time, offline.

A page's ``<!-- reference: spec -->`` and ``<!-- reference: cli -->`` lines become the spec reference (from the
spec's JSON Schema) and the command-line reference (from the parser): :mod:`deepeval_games.app.commands.reference`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def on_config(config: Any) -> Any:
    """Import the package of this checkout (the one the site documents), ahead of any installed copy."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """The page with its reference markers replaced."""
    from deepeval_games.app.commands.reference import render_markers

    return render_markers(markdown)
