"""Shared test set-up: data from ../shared/data, never the network."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from game_defs.idiom_solitaire.dictionary import IdiomDictionary, load_idioms

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"

os.environ.setdefault("DEEPEVAL_GAMES_DATA", str(SHARED_DATA))
os.environ.setdefault("DEEPEVAL_GAMES_OFFLINE", "1")
# a private user cache: no test reads or fills the real model-call or data cache
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="deepeval-games-test-cache-")


PGG_SCRIPTED_PLAYERS = """
[[players]]
name = "free-rider"
bot = "pgg_free_rider"

[[players]]
name = "full-contributor"
bot = "pgg_full_contributor"

[[players]]
name = "conditional"
bot = "pgg_conditional_cooperator"

[[players]]
name = "random"
bot = "pgg_random"
"""
"""The four scripted Public Goods players as a spec's ``[[players]]`` tables (append to an ``[experiment]``)."""

FAKE_KEY_ENV = "FAKE_PROVIDER_KEY"
"""Variable that specs talking to the fake OpenAI server name in ``api_key_env``."""


@pytest.fixture
def fake_provider_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A dummy API key for the local fake OpenAI server (litellm refuses to call without one)."""
    monkeypatch.setenv(FAKE_KEY_ENV, "sk-test-not-a-secret")
    return FAKE_KEY_ENV


@pytest.fixture(scope="session")
def d() -> IdiomDictionary:
    """The idiom dictionary (loaded once per test session)."""
    return load_idioms()


@pytest.fixture
def repo_root() -> Path:
    """The repository root."""
    return REPO
