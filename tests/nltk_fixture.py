"""A small stand-in for NLTK's ``words`` corpus and English tagger, laid out as ``deepeval-games data`` files.

Tests never download NLTK's data: :func:`write_nltk_fixture` writes ``nltk/corpora/words.zip`` and
``nltk/taggers/averaged_perceptron_tagger_eng.zip`` into a folder, in NLTK's own layout (the zips NLTK's index
serves), from the English dictionary that TextArena ships (``textarena/envs/utils/data/en_US.dic``): every plain
lower-case word of it is in ``words/en``, the first 150 of each length in ``words/en-basic``, and the tagger
tags every one of them a noun (``NN``, its tag dictionary; no weights). Returns each file's sha256, which a test
puts in place of the published one (:data:`game_defs.data_files.EXPECTED_SHA256`).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import zipfile
from pathlib import Path

__all__ = ["fixture_words", "write_nltk_fixture"]

_BASIC_PER_LENGTH = 150


def fixture_words() -> list[str]:
    """The fixture's words: TextArena's ``en_US.dic`` entries that are plain lower-case words of 3 to 9 letters."""
    text = importlib.resources.files("textarena.envs.utils.data").joinpath("en_US.dic").read_text(encoding="utf-8")
    words = []
    for line in text.splitlines()[1:]:
        word = line.split("/", 1)[0].strip()
        if word.isascii() and word.isalpha() and word.islower() and 3 <= len(word) <= 9:
            words.append(word)
    return sorted(set(words))


def _zip(path: Path, files: dict[str, str]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        folders = sorted({name.split("/", 1)[0] + "/" for name in files})
        for folder in folders:
            archive.writestr(folder, "")
        for name, text in files.items():
            archive.writestr(name, text)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_nltk_fixture(folder: Path) -> dict[str, str]:
    """Write the two zips under ``folder`` (a data folder); returns relpath -> sha256."""
    words = fixture_words()
    basic = [word for length in range(3, 10) for word in [w for w in words if len(w) == length][:_BASIC_PER_LENGTH]]
    tagger = "averaged_perceptron_tagger_eng"
    return {
        "nltk/corpora/words.zip": _zip(
            folder / "nltk" / "corpora" / "words.zip",
            {"words/en": "\n".join(words) + "\n", "words/en-basic": "\n".join(sorted(basic)) + "\n"},
        ),
        f"nltk/taggers/{tagger}.zip": _zip(
            folder / "nltk" / "taggers" / f"{tagger}.zip",
            {
                f"{tagger}/{tagger}.weights.json": json.dumps({}),
                f"{tagger}/{tagger}.tagdict.json": json.dumps(dict.fromkeys(words, "NN")),
                f"{tagger}/{tagger}.classes.json": json.dumps(["NN"]),
            },
        ),
    }
