"""NLTK's data packages that TextArena's word games read (``words``, and the English part-of-speech tagger), as data
files of ``deepeval-games data``: listed, fetched once with their sha256 checked, read offline after.

TextArena's word games (Hangman, Wordle, Codenames, SpellingBee, ...) call ``nltk.download(...)`` when they are
imported or built, which downloads into NLTK's own folders. While :func:`nltk_from_data_files` is open, that call
finds the package among this project's data files instead (the ``nltk/<folder>/<package>.zip`` of
:mod:`game_defs.data_files`: the folder ``DEEPEVAL_GAMES_DATA`` names, then the user cache; fetched from its
pinned URL and checked where downloads are allowed) and puts the folder holding it on ``nltk.data.path``, from which
NLTK reads the zip as it is. Nothing is written into NLTK's folders or into site-packages; the stand-in is put back
when the context closes. A package this module does not know fails with its name.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from deepeval_games.core.task import register_data_source
from deepeval_games.infra.files import DatasetError
from game_defs.data_files import file_sources, resolve_data_file

__all__ = ["DATA_TASK", "NLTK_PACKAGES", "WordListMissing", "nltk_from_data_files", "nltk_relpath"]

DATA_TASK = "textarena"
"""The name ``deepeval-games data fetch textarena`` selects these files by."""

NLTK_PACKAGES: dict[str, str] = {"words": "corpora", "averaged_perceptron_tagger_eng": "taggers"}
"""NLTK's package id -> its folder in NLTK's data layout, for the packages TextArena 0.7's environments download."""

_LOCK = threading.RLock()


class WordListMissing(LookupError):
    """An NLTK package an environment needs is not among the data files (or not one this module knows)."""


def nltk_relpath(package: str) -> str:
    """The data file of NLTK's ``package`` (``nltk/corpora/words.zip``)."""
    if package not in NLTK_PACKAGES:
        raise WordListMissing(
            f"NLTK's {package!r} is not a package deepeval-games fetches (known: {', '.join(sorted(NLTK_PACKAGES))})"
        )
    return f"nltk/{NLTK_PACKAGES[package]}/{package}.zip"


def _provide(package: str) -> None:
    """Find (or fetch, where allowed) ``package``'s zip and put its data folder on ``nltk.data.path``."""
    import nltk

    relpath = nltk_relpath(package)
    try:
        found = resolve_data_file(relpath)
    except DatasetError as exc:
        raise WordListMissing(
            f"NLTK's {package} ({relpath}) is not fetched; fetch it once with 'deepeval-games data fetch "
            f"{DATA_TASK}' ({str(exc).splitlines()[0]})"
        ) from exc
    folder = str(found.path.parents[1])  # <data folder>/nltk: NLTK looks for corpora/words.zip under it
    if folder not in nltk.data.path:
        nltk.data.path.insert(0, folder)


def _download(info_or_id: Any = None, *args: Any, **kwargs: Any) -> bool:
    """``nltk.download``'s stand-in: every package asked for is a data file; True once each is in place."""
    packages = [info_or_id] if isinstance(info_or_id, str) else list(info_or_id or [])
    for package in packages:
        _provide(str(package))
    return True


@contextmanager
def nltk_from_data_files() -> Iterator[None]:
    """While open, ``nltk.download`` reads this project's data files (see the module docs); nothing without NLTK."""
    try:
        import nltk
    except ImportError:
        yield
        return
    with _LOCK:
        original = nltk.download
        nltk.download = _download
        try:
            yield
        finally:
            nltk.download = original


for _source in file_sources(DATA_TASK, [nltk_relpath(package) for package in NLTK_PACKAGES]):
    register_data_source(_source)
