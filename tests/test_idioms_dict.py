"""The idiom dictionary (from ``china-idiom-without-tone``'s CSV) and reply normalisation."""

from __future__ import annotations

import dataclasses
import random

import pytest

from game_defs.idiom_solitaire.dictionary import IdiomDictionary, ReplyMatch, load_idioms, toneless_syllables
from game_defs.idiom_solitaire.zh_text import cjk_runs, normalize_reply, to_simplified
from tests.idiom_helpers import idiom_id

# sha256 of china_idiom/idiom.csv in china-idiom-without-tone 0.1.0; pinned ids below hold for it.
_CSV_SHA_0_1_0 = "3cf528879761315aaf349f5b0b98ec2fb32e55ecfcee76c5cf8531112f379713"


def _texts(d: IdiomDictionary, ids: tuple[int, ...]) -> set[str]:
    return {d.text(i) for i in ids}


# --- contents and ids ------------------------------------------------------------------------------


def test_count_and_four_characters(d: IdiomDictionary) -> None:
    assert len(d) == 29_502
    assert all(len(i.text) == 4 and len(i.pinyin) == 4 for i in d)
    assert d.package_version and len(d.sha256) == 64 and d.source.endswith("idiom.csv")


def test_ids_are_sorted_order_and_round_trip(d: IdiomDictionary) -> None:
    texts = [i.text for i in d]
    assert texts == sorted(texts)
    assert all(d[n].id == n for n in range(0, len(d), 97))
    assert all(d.id_of(t) == n for n, t in enumerate(texts) if n % 97 == 0)
    with pytest.raises(IndexError):
        d[len(d)]


def test_ids_do_not_depend_on_input_order(d: IdiomDictionary) -> None:
    entries = [(i.text, i.pinyin_toned) for i in d]
    random.Random(7).shuffle(entries)
    rebuilt = IdiomDictionary(entries)
    assert [i.text for i in rebuilt] == [i.text for i in d]


def test_pinned_ids_for_the_pinned_csv(d: IdiomDictionary) -> None:
    if d.sha256 != _CSV_SHA_0_1_0:
        pytest.skip("a different idiom.csv: ids may have moved")
    assert {t: d.id_of(t) for t in ("一马当先", "先声夺人", "马到成功")} == {
        "一马当先": 585,
        "先声夺人": 3945,
        "马到成功": 28207,
    }


def test_idioms_are_immutable(d: IdiomDictionary) -> None:
    idiom = d[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        idiom.text = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        d[0] = idiom  # type: ignore[index]
    assert isinstance(d.successors(0), tuple)


def test_loaded_once(d: IdiomDictionary) -> None:
    assert load_idioms() is d


def test_idiom_record(d: IdiomDictionary) -> None:
    idiom = d[idiom_id(d, "一马当先")]
    assert idiom.pinyin == ("yi", "ma", "dang", "xian") and idiom.pinyin_toned == "yī mǎ dāng xiān"
    assert (idiom.first_char, idiom.last_char) == ("一", "先")
    assert (idiom.first_pinyin, idiom.last_pinyin) == ("yi", "xian")


# --- pinyin ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "tokens"),
    [
        ("yī mǎ dāng xiān", ["yi", "ma", "dang", "xian"]),
        ("diē dàng fēngliú", ["die", "dang", "fengliu"]),  # written together in the CSV
        ("zhuā?ěr sāo sāi", ["zhua", "er", "sao", "sai"]),  # stray '?' in the CSV
        ("xuán guī@jì yú", ["xuan", "gui", "ji", "yu"]),
        ("bì cōnɡ sè mínɡ", ["bi", "cong", "se", "ming"]),  # U+0261 for g
        ("diu1 hún sàng dǎn", ["diu", "hun", "sang", "dan"]),
        ("shēn móu yuǎn lǜ", ["shen", "mou", "yuan", "lü"]),
        ("xǘ jū", ["xu", "ju"]),  # ü is written u after j, q, x, y
    ],
)
def test_toneless_syllables(raw: str, tokens: list[str]) -> None:
    assert toneless_syllables(raw) == tokens


def test_run_together_syllables_are_split(d: IdiomDictionary) -> None:
    assert d[idiom_id(d, "跌宕风流")].pinyin == ("die", "dang", "feng", "liu")
    assert d[idiom_id(d, "改行自新")].pinyin == ("gai", "xing", "zi", "xin")


# --- chain rule ------------------------------------------------------------------------------------


def test_exact_successors(d: IdiomDictionary) -> None:
    succ = d.successors(idiom_id(d, "一马当先"))
    names = _texts(d, succ)
    assert {"先声夺人", "先发制人", "先入为主"} <= names
    assert all(t[0] == "先" for t in names)
    assert succ == tuple(sorted(succ)) and len(succ) == 34
    assert succ == tuple(i.id for i in d if i.text[0] == "先")  # the index is complete


def test_homophone_successors(d: IdiomDictionary) -> None:
    prev = idiom_id(d, "一马当先")  # ends in 先, xian
    homo = d.successors(prev, "homophone")
    names = _texts(d, homo)
    assert set(d.successors(prev)) <= set(homo)
    assert {"闲云野鹤", "显而易见"} <= names  # 闲 xián, 显 xiǎn
    assert "行云流水" not in names
    assert all(i.first_pinyin == "xian" or i.first_char == "先" for i in map(d.__getitem__, homo))


def test_homophone_follows_each_idioms_own_reading(d: IdiomDictionary) -> None:
    # 一意孤行 ends in 行 read xíng: 兴高采烈 (xìng) may follow; 行家里手 (háng) follows as an exact match.
    prev = idiom_id(d, "一意孤行")
    assert d.follows(prev, idiom_id(d, "兴高采烈"), "homophone")
    assert not d.follows(prev, idiom_id(d, "兴高采烈"), "exact")
    assert d.follows(prev, idiom_id(d, "行家里手"), "exact")
    # 深谋远虑 ends in lǜ: 履险如夷 (lǚ) follows, 路不拾遗 (lù) does not.
    worry = idiom_id(d, "深谋远虑")
    assert d.follows(worry, idiom_id(d, "履险如夷"), "homophone")
    assert not d.follows(worry, idiom_id(d, "路不拾遗"), "homophone")


def test_follows_agrees_with_successors(d: IdiomDictionary) -> None:
    rng = random.Random(3)
    for prev in rng.sample(range(len(d)), 20):
        for mode in ("exact", "homophone"):
            succ = set(d.successors(prev, mode))  # type: ignore[arg-type]
            for nxt in rng.sample(range(len(d)), 200):
                assert d.follows(prev, nxt, mode) == (nxt in succ)  # type: ignore[arg-type]


def test_self_loop_and_dead_end(d: IdiomDictionary) -> None:
    sky = idiom_id(d, "天外有天")
    assert sky in d.successors(sky)  # the no-repeat rule is the game's
    assert d.successors(idiom_id(d, "一丘之貉")) == ()  # nothing starts with 貉
    assert d.successors(idiom_id(d, "一丘之貉"), "homophone") != ()  # but something starts with "he"
    with pytest.raises(ValueError, match="unknown chain mode"):
        d.successors(sky, "rhyme")  # type: ignore[arg-type]


def test_pinyin_and_char_indexes(d: IdiomDictionary) -> None:
    assert idiom_id(d, "马到成功") in d.ids_starting_with("马")
    assert idiom_id(d, "马到成功") in d.ids_ending_with("功")
    assert idiom_id(d, "马到成功") in d.ids_ending_with_pinyin("gong")
    assert idiom_id(d, "闲云野鹤") in d.ids_starting_with_pinyin("xian")
    assert d.ids_starting_with("x") == ()


# --- normalisation and replies ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "normalised"),
    [
        ("一馬當先", "一马当先"),
        ("「一馬當先」！", "一马当先"),
        ("《一马当先》。", "一马当先"),
        ("“一马当先”，", "一马当先"),
        ('"一马当先".', "一马当先"),
        ("【一马当先】\u3000\n", "一马当先"),
        (" 一 马\t当\u200b先 ", "一马当先"),
        ("ＡＢＣ１２３", "ABC123"),
        ("→一马当先★", "一马当先"),
    ],
)
def test_normalize_reply(reply: str, normalised: str) -> None:
    assert normalize_reply(reply) == normalised


def test_cjk_runs_split_at_punctuation_not_spaces() -> None:
    assert cjk_runs("我的回答是：一 马 当 先。OK") == ["我的回答是", "一马当先"]
    assert to_simplified("") == ""


@pytest.mark.parametrize(
    ("reply", "idiom"),
    [
        ("一马当先", "一马当先"),
        ("我的回答是：一马当先。", "一马当先"),
        ("我選擇「一馬當先」！", "一马当先"),
        ("好的，接龙：先声夺人", "先声夺人"),
        ("先声夺人？不，我说一马当先。", "一马当先"),  # the last idiom wins
        ("答案是一马当先吧", "一马当先"),  # inside a run of characters
        ("一 马 当 先", "一马当先"),
        ("Answer: 马到成功 (mǎ dào chéng gōng)", "马到成功"),
        ("不脩边幅", "不脩边幅"),  # a variant spelling that is itself in the dictionary keeps its id
        ("不修邊幅", "不修边幅"),
    ],
)
def test_parse_reply_finds_the_idiom(d: IdiomDictionary, reply: str, idiom: str) -> None:
    found = d.parse_reply(reply)
    assert found == ReplyMatch(idiom_id(d, idiom), idiom)
    assert found.in_dictionary and d.extract_idiom(reply) == idiom


@pytest.mark.parametrize(
    ("reply", "text"),
    [
        ("我不知道", "我不知道"),
        ("嗯……我認輸了。", "我认输了"),
        ("我不知道答案是什么", None),
        ("I give up.", None),
        ("", None),
    ],
)
def test_parse_reply_without_an_idiom(d: IdiomDictionary, reply: str, text: str | None) -> None:
    found = d.parse_reply(reply)
    assert found == ReplyMatch(None, text) and not found.in_dictionary


def test_id_of_normalises(d: IdiomDictionary) -> None:
    assert d.id_of("「一馬當先」") == d.id_of(" 一马当先。") == d.id_of("一马当先") is not None
    assert d.id_of("一马当先吧") is None
    assert "一马当先" in d and "一馬當先" not in d
