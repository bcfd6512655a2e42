"""The IWSLT 2017 loader: sizes, aligned sides, paragraphs inside talks, Chinese joining, corrupt tarballs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from deepeval_games.infra.files import DatasetError
from game_defs.data_files import EXPECTED_SHA256
from game_defs.translation.iwslt import (
    PAIRS,
    Talk,
    build_paragraphs,
    join_segments,
    load_iwslt2017,
    sample_paragraphs,
)
from tests.conftest import SHARED_DATA

SIZES = {"en-zh": (12, 1459), "en-fr": (12, 1455), "de-en": (10, 1138)}


@pytest.mark.parametrize("pair", PAIRS)
def test_tst2017_sizes_and_aligned_segment_ids(pair: str) -> None:
    test_set = load_iwslt2017(pair)
    assert (len(test_set), test_set.segment_count) == SIZES[pair]
    for talk in test_set:
        assert len(talk.seg_ids) == len(talk.source) == len(talk.reference)
        assert list(talk.seg_ids) == sorted(set(talk.seg_ids))  # in document order, no repeats
        assert all(talk.source) and sum(bool(t) for t in talk.reference) >= len(talk.reference) - 2
    names = {path.name for path in test_set.sources}
    assert names == {f"{pair}.tgz", "-".join(reversed(pair.split("-"))) + ".tgz"}


@pytest.mark.parametrize("words", [30, 120])
def test_paragraphs_are_consecutive_runs_inside_one_talk(words: int) -> None:
    test_set = load_iwslt2017("de-en")
    paragraphs = test_set.paragraphs(words)
    assert len({p.paragraph_id for p in paragraphs}) == len(paragraphs)
    for talk in test_set:
        mine = [p for p in paragraphs if p.talk_id == talk.talk_id]
        assert [p.paragraph_id for p in mine] == [f"{talk.talk_id}-p{k}" for k in range(1, len(mine) + 1)]
        assert [s for p in mine for s in p.seg_ids] == list(talk.seg_ids)  # every segment once, in order
        assert all(p.source_words >= words / 2 for p in mine)
        assert all(p.source_words >= words for p in mine[:-1])
    first = paragraphs[0]
    assert test_set.paragraph(first.paragraph_id, words) == first


def test_chinese_is_joined_without_spaces_between_characters() -> None:
    assert (
        join_segments(["好吧， 我要讲个故事。", "这个故事 是关于她。"], "zh")
        == "好吧，我要讲个故事。这个故事是关于她。"
    )
    assert join_segments(["It was 2006 in", "Canada."], "zh") == "It was 2006 in Canada."
    assert join_segments(["So, this is", " a story. "], "en") == "So, this is a story."
    paragraph = load_iwslt2017("en-zh").paragraphs()[0]
    assert " " not in paragraph.reference[:200] and "。" in paragraph.reference
    assert paragraph.source.count(" ") > 50


def test_a_short_tail_joins_the_paragraph_before_it() -> None:
    talk = Talk("7", (1, 2, 3), ("one two three four", "five six seven eight", "nine"), ("a", "b", "c"))
    assert [p.seg_ids for p in build_paragraphs(talk, 4, "en", "fr")] == [(1,), (2, 3)]
    assert [p.seg_ids for p in build_paragraphs(talk, 2, "en", "fr")] == [(1,), (2,), (3,)]


def test_unknown_paragraphs_get_a_clear_error() -> None:
    test_set = load_iwslt2017("en-fr")
    with pytest.raises(ValueError, match="not a name <talk id>-p<k>"):
        test_set.paragraph("2455-1")
    with pytest.raises(ValueError, match="has no talk 9999"):
        test_set.paragraph("9999-p1")
    with pytest.raises(ValueError, match=r"talk 2455 has \d+ paragraph"):
        test_set.paragraph("2455-p999")
    with pytest.raises(ValueError, match="unknown translation pair"):
        load_iwslt2017("fr-de")


def _copy_data(tmp_path: Path) -> Path:
    folder = tmp_path / "data" / "iwslt2017"
    folder.mkdir(parents=True)
    for name in ("en-zh.tgz", "zh-en.tgz"):
        shutil.copyfile(SHARED_DATA / "iwslt2017" / name, folder / name)
    return tmp_path / "data"


def test_a_truncated_tarball_names_the_file_and_the_checksum_it_expected(tmp_path: Path) -> None:
    data = _copy_data(tmp_path)
    target = data / "iwslt2017" / "zh-en.tgz"
    target.write_bytes(target.read_bytes()[:5000])
    with pytest.raises(DatasetError) as caught:
        load_iwslt2017("en-zh", path=data)
    message = str(caught.value)
    assert str(target) in message and EXPECTED_SHA256["iwslt2017/zh-en.tgz"] in message
    with pytest.raises(DatasetError, match=r"zh-en\.tgz: not a readable \.tgz archive, truncated or corrupt"):
        load_iwslt2017("en-zh", path=data, verify=False)


def test_a_corrupted_tarball_names_the_file_and_the_checksum_it_expected(tmp_path: Path) -> None:
    data = _copy_data(tmp_path)
    target = data / "iwslt2017" / "en-zh.tgz"
    raw = bytearray(target.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    target.write_bytes(bytes(raw))
    with pytest.raises(DatasetError, match="sha256 mismatch") as caught:
        load_iwslt2017("en-zh", path=data)
    assert str(target) in str(caught.value) and EXPECTED_SHA256["iwslt2017/en-zh.tgz"] in str(caught.value)
    with pytest.raises(DatasetError, match=r"en-zh\.tgz"):
        load_iwslt2017("en-zh", path=data, verify=False)


def test_sampling_is_seeded_and_distinct() -> None:
    first = sample_paragraphs("en-zh", 5, seed=3)
    assert first == sample_paragraphs("en-zh", 5, seed=3) != sample_paragraphs("en-zh", 5, seed=4)
    assert len(set(first)) == 5
    with pytest.raises(ValueError, match="count must be"):
        sample_paragraphs("de-en", 10_000)
