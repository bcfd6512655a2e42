"""IWSLT 2017 TED test sets (document level), read from the official WIT3 tarballs, and their paragraphs.

Each direction ``<src>-<tgt>`` pairs two tarballs, one side each, as sacrebleu pairs them for ``iwslt17``:
the source side is ``<src>-<tgt>.tgz`` (``<src>-<tgt>/IWSLT17.TED.<split>.<src>-<tgt>.<src>.xml``), the
reference side ``<tgt>-<src>.tgz`` (``<tgt>-<src>/IWSLT17.TED.<split>.<tgt>-<src>.<tgt>.xml``). Both hold a
``<doc docid=...>`` per talk and a ``<seg id=...>`` per sentence; talk and segment ids must match on both
sides (a :class:`~deepeval_games.infra.files.DatasetError` otherwise). The tarballs are found by
:func:`~game_defs.data_files.resolve_data_file` (explicit path, ``$DEEPEVAL_GAMES_DATA``, the user
cache, then the WIT3 download) and their sha256 is checked and kept.

Segment text: white space collapsed; on a Chinese side no space is kept next to a non-ASCII character
(CJK characters and full-width punctuation are written without spaces).

**Paragraphs** are built at run time (the TED license forbids redistributing modified texts): runs of
consecutive segments inside one talk, never across talks. Segments are taken greedily until the run
holds at least ``words`` source words (white-space separated; no source language here is Chinese); a
talk's last run, when shorter than half of ``words``, joins the run before it. A paragraph is named
``<talk id>-p<k>``, ``k`` counting from 1 inside the talk (``2455-p1``). (A name of only digits and
``-`` would be read back as a number by OpenSpiel's game-string parser, hence the ``p``.) Segments are
joined with a space, or with nothing on a Chinese side.

Known sizes of ``tst2017`` (checked on load): en-zh 12 talks / 1,459 segments, en-fr 12 / 1,455,
de-en 10 / 1,138.
"""

from __future__ import annotations

import functools
import io
import re
import tarfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from deepeval_games.infra.files import DatasetError, PathLike
from game_defs.data_files import iwslt2017_relpath, resolve_data_file

__all__ = [
    "DEFAULT_WORDS",
    "PAIRS",
    "SPLITS",
    "IWSLTTestSet",
    "Paragraph",
    "Talk",
    "build_paragraphs",
    "check_pair",
    "join_segments",
    "load_iwslt2017",
    "sample_paragraphs",
]

PAIRS: tuple[str, ...] = ("de-en", "en-fr", "en-zh")
"""The translation directions of the task (source-target)."""
SPLITS: tuple[str, ...] = ("tst2017", "tst2016")
"""The test sets each tarball holds."""
DEFAULT_WORDS = 120
"""Default paragraph size, in source words."""

_EXPECTED_SIZES: dict[tuple[str, str], tuple[int, int]] = {
    ("en-zh", "tst2017"): (12, 1459),
    ("en-fr", "tst2017"): (12, 1455),
    ("de-en", "tst2017"): (10, 1138),
}
_SPACE = re.compile(r"\s+")
_SPACE_BY_WIDE = re.compile(r"(?<=[^\x00-\x7f]) | (?=[^\x00-\x7f])")
_PARAGRAPH_ID = re.compile(r"^(?P<talk>[^-\s]+)-p(?P<k>[1-9][0-9]*)$")


def check_pair(pair: str) -> tuple[str, str]:
    """``(source, target)`` languages of a direction; ``ValueError`` naming the known ones otherwise."""
    if pair not in PAIRS:
        raise ValueError(f"unknown translation pair {pair!r}; pairs: {', '.join(PAIRS)}")
    src, tgt = pair.split("-")
    return src, tgt


def _tidy(text: str, lang: str) -> str:
    text = _SPACE.sub(" ", text).strip()
    return _SPACE_BY_WIDE.sub("", text) if lang == "zh" else text


def join_segments(texts: Sequence[str], lang: str) -> str:
    """Consecutive segments as one text: joined by a space, or (Chinese) by nothing next to a wide character."""
    return _tidy(" ".join(t for t in texts if t), lang)


@dataclass(frozen=True)
class Talk:
    """One TED talk of a test set: its segments on both sides, in document order."""

    talk_id: str
    seg_ids: tuple[int, ...]
    source: tuple[str, ...]
    reference: tuple[str, ...]


@dataclass(frozen=True)
class Paragraph:
    """A run of consecutive segments of one talk (see the module docs).

    Attributes:
        paragraph_id: ``<talk id>-p<k>``.
        talk_id: the talk it belongs to.
        seg_ids: the segment ids it spans, in order.
        source: the source text.
        reference: the reference translation.
        source_words: white-space separated words of the source.
    """

    paragraph_id: str
    talk_id: str
    seg_ids: tuple[int, ...]
    source: str
    reference: str
    source_words: int


def build_paragraphs(talk: Talk, words: int, source_lang: str, target_lang: str) -> tuple[Paragraph, ...]:
    """The paragraphs of one talk for a size of ``words`` source words (see the module docs)."""
    if words < 1:
        raise ValueError(f"paragraph size must be >= 1 source word, got {words}")
    runs: list[list[int]] = []
    current: list[int] = []
    count = 0
    for index, text in enumerate(talk.source):
        current.append(index)
        count += len(text.split())
        if count >= words:
            runs.append(current)
            current, count = [], 0
    if current:
        if runs and count < words / 2:
            runs[-1].extend(current)
        else:
            runs.append(current)
    out = []
    for k, run in enumerate(runs, start=1):
        source = join_segments([talk.source[i] for i in run], source_lang)
        out.append(
            Paragraph(
                paragraph_id=f"{talk.talk_id}-p{k}",
                talk_id=talk.talk_id,
                seg_ids=tuple(talk.seg_ids[i] for i in run),
                source=source,
                reference=join_segments([talk.reference[i] for i in run], target_lang),
                source_words=len(source.split()),
            )
        )
    return tuple(out)


class IWSLTTestSet:
    """One direction of an IWSLT 2017 test set: its talks, both sides, and where they were read from."""

    def __init__(
        self, pair: str, split: str, talks: tuple[Talk, ...], sources: tuple[Path, Path], sha256s: tuple[str, str]
    ):
        self.pair = pair
        self.split = split
        self.source_lang, self.target_lang = check_pair(pair)
        self.talks = talks
        #: The source-side and reference-side tarballs that were read.
        self.sources = sources
        #: Their hex sha256, in the same order.
        self.sha256 = sha256s

    def __len__(self) -> int:
        return len(self.talks)

    def __iter__(self) -> Iterator[Talk]:
        return iter(self.talks)

    @property
    def segment_count(self) -> int:
        """Segments over all talks."""
        return sum(len(t.seg_ids) for t in self.talks)

    def paragraphs(self, words: int = DEFAULT_WORDS) -> tuple[Paragraph, ...]:
        """Every paragraph of every talk, in document order, for a size of ``words`` source words."""
        return _paragraphs(self, words)

    def paragraph(self, paragraph_id: str, words: int = DEFAULT_WORDS) -> Paragraph:
        """The paragraph named ``paragraph_id``; ``ValueError`` saying what exists otherwise."""
        match = _PARAGRAPH_ID.match(paragraph_id)
        if match is None:
            raise ValueError(f"paragraph {paragraph_id!r} is not a name <talk id>-p<k> (e.g. 2455-p1)")
        for p in self.paragraphs(words):
            if p.paragraph_id == paragraph_id:
                return p
        talk = match["talk"]
        known = [p.paragraph_id for p in self.paragraphs(words) if p.talk_id == talk]
        if not known:
            talks = ", ".join(t.talk_id for t in self.talks)
            raise ValueError(f"{self.pair} {self.split} has no talk {talk} (talks: {talks})")
        raise ValueError(
            f"talk {talk} has {len(known)} paragraph(s) of about {words} words: {known[0]}..{known[-1]}; "
            f"no {paragraph_id}"
        )

    def __repr__(self) -> str:
        return f"IWSLTTestSet({self.pair} {self.split}: {len(self)} talks, {self.segment_count} segments)"


@functools.lru_cache(maxsize=32)
def _paragraphs(test_set: IWSLTTestSet, words: int) -> tuple[Paragraph, ...]:
    return tuple(
        p for talk in test_set.talks for p in build_paragraphs(talk, words, test_set.source_lang, test_set.target_lang)
    )


def _read_side(tarball: Path, member: str, lang: str) -> dict[str, tuple[tuple[int, ...], tuple[str, ...]]]:
    """Talk id -> (segment ids, texts) of one XML file inside a tarball."""
    try:
        with tarfile.open(tarball, "r:gz") as archive:
            handle = archive.extractfile(member)
            if handle is None:
                raise DatasetError(f"{tarball}: {member} is not a file")
            data = handle.read()
    except KeyError:
        raise DatasetError(f"{tarball}: no member {member} (not the WIT3 IWSLT 2017 tarball?)") from None
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        raise DatasetError(f"{tarball}: not a readable .tgz archive, truncated or corrupt ({exc})") from exc
    try:
        root = ElementTree.parse(io.BytesIO(data)).getroot()
    except ElementTree.ParseError as exc:
        raise DatasetError(f"{tarball}: {member} is not well-formed XML ({exc})") from exc
    talks: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {}
    for doc in root.iter("doc"):
        talk_id = (doc.get("docid") or "").strip()
        if not talk_id or talk_id in talks:
            raise DatasetError(f"{tarball}: {member} has a talk without a docid, or a docid twice ({talk_id!r})")
        ids, texts = [], []
        for seg in doc.iter("seg"):
            try:
                ids.append(int(seg.get("id") or ""))
            except ValueError:
                raise DatasetError(f"{tarball}: talk {talk_id} has a segment without a numeric id") from None
            texts.append(_tidy(seg.text or "", lang))
        talks[talk_id] = (tuple(ids), tuple(texts))
    return talks


@functools.lru_cache(maxsize=16)
def _parse(pair: str, split: str, src_file: Path, src_sha: str, tgt_file: Path, tgt_sha: str) -> IWSLTTestSet:
    src, tgt = check_pair(pair)
    source = _read_side(src_file, f"{src}-{tgt}/IWSLT17.TED.{split}.{src}-{tgt}.{src}.xml", src)
    reference = _read_side(tgt_file, f"{tgt}-{src}/IWSLT17.TED.{split}.{tgt}-{src}.{tgt}.xml", tgt)
    if list(source) != list(reference):
        raise DatasetError(
            f"{src_file} and {tgt_file}: the talks differ ({sorted(source)} vs {sorted(reference)}); "
            "not the two sides of one test set"
        )
    talks = []
    for talk_id, (ids, texts) in source.items():
        ref_ids, ref_texts = reference[talk_id]
        if ids != ref_ids:
            raise DatasetError(f"{src_file} and {tgt_file}: the segment ids of talk {talk_id} do not line up")
        talks.append(Talk(talk_id=talk_id, seg_ids=ids, source=texts, reference=ref_texts))
    test_set = IWSLTTestSet(pair, split, tuple(talks), (src_file, tgt_file), (src_sha, tgt_sha))
    expected = _EXPECTED_SIZES.get((pair, split))
    if expected is not None and (len(test_set), test_set.segment_count) != expected:
        raise DatasetError(
            f"{src_file} and {tgt_file}: {pair} {split} should hold {expected[0]} talks and {expected[1]} segments, "
            f"found {len(test_set)} and {test_set.segment_count} (truncated or altered)"
        )
    return test_set


def load_iwslt2017(
    pair: str, split: str = "tst2017", path: PathLike | None = None, *, verify: bool = True
) -> IWSLTTestSet:
    """Load one direction of an IWSLT 2017 test set (``pair``: de-en, en-fr or en-zh) and check its shape.

    Args:
        pair: ``<source>-<target>``.
        split: ``tst2017`` (the paper's) or ``tst2016``.
        path: a data folder holding ``iwslt2017/<pair>.tgz`` and the reverse direction's tarball; by default
            both are resolved from ``$DEEPEVAL_GAMES_DATA``, the user cache, or downloaded from WIT3.
        verify: check each tarball's sha256 against the published one.

    Raises:
        DatasetError: a tarball is missing, has the wrong sha256 (the message names the file and the
            checksum expected), is truncated or malformed, or the two sides do not line up.
        ValueError: an unknown pair or split.
    """
    src, tgt = check_pair(pair)
    if path is not None and not Path(path).expanduser().is_dir():
        raise DatasetError(
            f"IWSLT 2017: {path} is not a data folder (it must hold iwslt2017/{pair}.tgz and its reverse)"
        )
    if split not in SPLITS:
        raise ValueError(f"unknown IWSLT 2017 split {split!r}; splits: {', '.join(SPLITS)}")
    src_found = resolve_data_file(iwslt2017_relpath(f"{src}-{tgt}"), path, verify=verify)
    tgt_found = resolve_data_file(iwslt2017_relpath(f"{tgt}-{src}"), path, verify=verify)
    return _parse(pair, split, src_found.path, src_found.sha256, tgt_found.path, tgt_found.sha256)


def sample_paragraphs(
    pair: str, count: int, seed: int = 0, words: int = DEFAULT_WORDS, split: str = "tst2017"
) -> list[str]:
    """``count`` distinct paragraph ids of a direction drawn uniformly with ``numpy.random.default_rng(seed)``.

    Returned in draw order. The sample depends on the test set and on NumPy's ``Generator.choice``.
    """
    paragraphs = load_iwslt2017(pair, split).paragraphs(words)
    if not 1 <= count <= len(paragraphs):
        raise ValueError(f"count must be in 1..{len(paragraphs)} for {pair} {split} at {words} words, got {count}")
    picks = np.random.default_rng(seed).choice(len(paragraphs), size=count, replace=False)
    return [paragraphs[int(k)].paragraph_id for k in picks]
