"""Shared test set-up: data from ../shared/data, never the network."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"

os.environ.setdefault("DEEPEVAL_GAMES_DATA", str(SHARED_DATA))
os.environ.setdefault("DEEPEVAL_GAMES_OFFLINE", "1")


@pytest.fixture
def repo_root() -> Path:
    """The repository root."""
    return REPO
