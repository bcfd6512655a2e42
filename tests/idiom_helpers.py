"""Helpers shared by the idiom tests."""

from __future__ import annotations

from game_defs.idiom_solitaire.dictionary import IdiomDictionary


def idiom_id(d: IdiomDictionary, text: str) -> int:
    """The dictionary id of ``text``; the test fails if it is not an idiom."""
    found = d.id_of(text)
    assert found is not None, text
    return found
