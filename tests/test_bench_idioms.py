"""bench/bench_idioms.py: the measuring lists keep what jieba and Wenlin agree on, and the report scores the default
dictionary against them (issue 29, item 6). A handful of hand-made entries stand in for the two packages."""

from __future__ import annotations

import json

import pytest

from bench import bench_idioms
from game_defs.idiom_solitaire.dictionary_versions import DEFAULT_DICTIONARY

JIEBA_LINES = [
    "一马当先 30 i",  # an idiom both sources call one
    "无冤无仇 75 i",  # the same, though no source of the dictionary holds it
    "令狐冲笑 162 i",  # jieba's tagger: a novel's "Linghu Chong laughed" as an idiom; Wenlin does not list it
    "一丝不紊 3 i",  # never counted by jieba: not common
    "人山人海 40 ns",  # jieba's tagger: an idiom as a place
    "云南大学 10 nt",  # a name both sources call one
    "乌鲁木齐 50 ns",
    "北京 100 ns",  # not four characters
]


def _wenlin(word: str, *senses: tuple[str, list[str]]) -> str:
    return json.dumps(
        {
            "simplified": word,
            "parts_of_speech": [
                {"part_of_speech": cls, "definitions": [{"definition": g} for g in glosses]} for cls, glosses in senses
            ],
        }
    )


WENLIN_ENTRIES = [
    _wenlin("一马当先", ("f.e.", ["take the lead"])),
    _wenlin("无冤无仇", ("f.e.", ["without any ill feeling"])),
    _wenlin("人山人海", ("f.e.", ["huge crowds of people"])),
    _wenlin("云南大学", ("p.w.", ["Yunnan University"])),
    _wenlin("乌鲁木齐", ("p.w.", ["Ürümqi"]), ("n.", ["(Uighur) Beautiful Pasture"])),
    _wenlin("百货商店", ("n.", ["department store"])),
]


def test_the_lists_keep_what_both_sources_agree_on() -> None:
    jieba = bench_idioms.parse_jieba(JIEBA_LINES)
    wenlin = bench_idioms.parse_wenlin(WENLIN_ENTRIES)
    assert "北京" not in jieba and jieba["一马当先"] == (30, "i")
    assert bench_idioms.wenlin_idiom(wenlin["人山人海"]) and not bench_idioms.wenlin_name(wenlin["人山人海"])
    assert bench_idioms.wenlin_name(wenlin["乌鲁木齐"])  # capitalised after a bracket still counts
    assert not bench_idioms.wenlin_name(wenlin["百货商店"])  # a common noun is no name
    lists = bench_idioms.build_lists(jieba, wenlin, min_count=20)
    assert lists.raw_idioms == ("令狐冲笑", "无冤无仇", "一马当先")  # by count, the uncounted one left out
    assert lists.idioms == ("无冤无仇", "一马当先")
    assert lists.raw_names == ("乌鲁木齐", "人山人海", "云南大学")
    assert lists.names == ("乌鲁木齐", "云南大学")


def test_the_report_scores_the_default_and_names_its_misses(capsys: pytest.CaptureFixture[str]) -> None:
    jieba = bench_idioms.parse_jieba(JIEBA_LINES)
    wenlin = bench_idioms.parse_wenlin(WENLIN_ENTRIES)
    met = bench_idioms.report(jieba, wenlin, [DEFAULT_DICTIONARY], min_count=20, show=5)
    out = capsys.readouterr().out
    assert not met  # 无冤无仇 is refused: 50% of the agreed idioms
    assert "50.00% (1/2)" in out and "100.00% (2/2)" in out  # idioms accepted; names refused
    assert "无冤无仇(75)" in out and "accepts these agreed names: none" in out
    assert "无冤无仇 (jieba i 75; Wenlin f.e.)" in out


def test_a_missing_measuring_package_is_named() -> None:
    with pytest.raises(bench_idioms.MissingSource, match="bench-idioms"):
        bench_idioms._data_file("no_such_module_for_idioms", "dict.txt", "no-such-package")
