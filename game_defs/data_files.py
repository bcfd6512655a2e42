"""The public data files the built-in tasks read: MBPP (code review), the IWSLT 2017 test sets (translation),
NLTK's word list and tagger (TextArena's word games, :mod:`game_defs.arena.word_lists`) and a clembench release
(the ``clem:`` games, :mod:`game_defs.arena.clem_env`), each with its canonical URL
and published sha256. Finding, downloading and checking a file is
:mod:`deepeval_games.infra.files`'s job; :func:`resolve_data_file` hands it this table's URL and checksum.
"""

from __future__ import annotations

from deepeval_games.core.task import DataSource
from deepeval_games.infra.files import DatasetError, PathLike, ResolvedFile, find_data_file, note_data_source

__all__ = [
    "CANONICAL_URLS",
    "CLEMBENCH_COMMIT",
    "CLEMBENCH_RELPATH",
    "EXPECTED_SHA256",
    "EXPECTED_SIZE",
    "IWSLT2017_PAIRS",
    "NLTK_DATA_REVISION",
    "file_sources",
    "iwslt2017_relpath",
    "resolve_data_file",
]

_MBPP_BASE = "https://raw.githubusercontent.com/google-research/google-research/master/mbpp/"
_WIT3_BASE = "https://raw.githubusercontent.com/hlt-mt/WIT3/master/archive/2017-01-ted-test/texts/"
NLTK_DATA_REVISION = "550b6625bcef1f2abff2ff770a5a0d272c9c6b2a"
"""The commit of NLTK's data repository the NLTK packages are fetched from (fixed: its files never change)."""
_NLTK_BASE = f"https://raw.githubusercontent.com/nltk/nltk_data/{NLTK_DATA_REVISION}/packages/"
CLEMBENCH_COMMIT = "a717f23808f4865631ffde81c37b60c7da3f5ec3"
"""The clembench commit ``data fetch clembench`` gets (2025-09-25; it asks for clemcore >= 3.2, < 4)."""
CLEMBENCH_RELPATH = f"clembench/clembench-{CLEMBENCH_COMMIT}.tar.gz"
"""GitHub's archive of that commit. Its bytes are not promised stable, so no sha256 of the archive is pinned: the
game files it unpacks to are checked instead (:data:`game_defs.arena.clem_env.RELEASE_GAMES_SHA256`)."""

#: IWSLT 2017 tarballs, one per direction (``<src>-<tgt>``), as in the WIT3 archive.
IWSLT2017_PAIRS: tuple[str, ...] = ("de-en", "en-de", "en-fr", "fr-en", "en-zh", "zh-en")


def iwslt2017_relpath(pair: str) -> str:
    """The relative path of the IWSLT 2017 tarball for ``pair`` (e.g. ``"en-zh"``)."""
    if pair not in IWSLT2017_PAIRS:
        raise DatasetError(f"unknown IWSLT 2017 pair {pair!r}; known pairs: {', '.join(IWSLT2017_PAIRS)}")
    return f"iwslt2017/{pair}.tgz"


def _wit3_url(pair: str) -> str:
    src, tgt = pair.split("-")
    return f"{_WIT3_BASE}{src}/{tgt}/{pair}.tgz"


#: Canonical download location of each known file, by relative path. A plain dict on purpose: a mirror
#: (or a test serving files on 127.0.0.1) may replace entries.
CANONICAL_URLS: dict[str, str] = {
    "mbpp/mbpp.jsonl": _MBPP_BASE + "mbpp.jsonl",
    "mbpp/sanitized-mbpp.json": _MBPP_BASE + "sanitized-mbpp.json",
    **{iwslt2017_relpath(pair): _wit3_url(pair) for pair in IWSLT2017_PAIRS},
    "nltk/corpora/words.zip": _NLTK_BASE + "corpora/words.zip",
    "nltk/taggers/averaged_perceptron_tagger_eng.zip": _NLTK_BASE + "taggers/averaged_perceptron_tagger_eng.zip",
    CLEMBENCH_RELPATH: f"https://github.com/clp-research/clembench/archive/{CLEMBENCH_COMMIT}.tar.gz",
}

#: The sha256 of each known file (those of ``../shared/data``, identical to the canonical files).
EXPECTED_SHA256: dict[str, str] = {
    "mbpp/mbpp.jsonl": "ccf64ceae9c5403bf50a044cb6d505bfd2a2963ee58338ba268fd65beab92a9f",
    "mbpp/sanitized-mbpp.json": "7fec016546acaee11dbe14f9f0bb670e59f41919f7b522a59fba34871da78551",
    "iwslt2017/de-en.tgz": "b0034e3c957da26eaf3c573390c3fc669d509ea94c0b398889ad74bddadb4974",
    "iwslt2017/en-de.tgz": "0c786a6905618af716da365592594473481ba9548a922506aaf6c17f1aee27e4",
    "iwslt2017/en-fr.tgz": "755b1061ff258686d8c906525dc75035304b292320d59e5a78802b2923c204ad",
    "iwslt2017/en-zh.tgz": "f1416f28a569f646be16188d7394e783fb0c87d5489a4878c74a84b565b41cd5",
    "iwslt2017/fr-en.tgz": "8393e55847ba750290180f1fb62684abb8c09b890c52d4ebc5c2376e8e722e93",
    "iwslt2017/zh-en.tgz": "73a7091216c328cca357644524efb35905f27482676ec5901797832764012a38",
    # NLTK's packages at NLTK_DATA_REVISION, as NLTK's own index lists them
    "nltk/corpora/words.zip": "54ed02917d6771dcc3e8141218960d020947f7f2ccfd9ac9b320979349746015",
    "nltk/taggers/averaged_perceptron_tagger_eng.zip": (
        "6025f530624335c67d6547d44757b357b4e79bae030a0383e9887a92c1718f0b"
    ),
}


#: The size in bytes of each known file: one far larger (:func:`deepeval_games.infra.files.size_limit`) is refused
#: before it is hashed.
EXPECTED_SIZE: dict[str, int] = {
    "mbpp/mbpp.jsonl": 563_743,
    "mbpp/sanitized-mbpp.json": 300_253,
    "iwslt2017/de-en.tgz": 104_049,
    "iwslt2017/en-de.tgz": 96_074,
    "iwslt2017/en-fr.tgz": 110_973,
    "iwslt2017/en-zh.tgz": 110_748,
    "iwslt2017/fr-en.tgz": 118_247,
    "iwslt2017/zh-en.tgz": 124_688,
    "nltk/corpora/words.zip": 757_777,
    "nltk/taggers/averaged_perceptron_tagger_eng.zip": 1_539_115,
}


def resolve_data_file(
    relpath: str,
    path: PathLike | None = None,
    *,
    verify: bool = True,
    url: str | None = None,
) -> ResolvedFile:
    """Find (or fetch) the data file ``relpath``, check its sha256 and note it (:func:`data_sources`).

    Args:
        relpath: path inside a data folder, e.g. ``"mbpp/mbpp.jsonl"``.
        path: an explicit file, or a data folder holding ``relpath``. When given it is the only place tried.
        verify: check the sha256 against :data:`EXPECTED_SHA256` and the size against :data:`EXPECTED_SIZE` (when
            known for ``relpath``).
        url: download location; defaults to :data:`CANONICAL_URLS` ``[relpath]``.

    Raises:
        DatasetError: the file is nowhere and cannot be downloaded (the message names every place looked
            at and how to fix it), or its sha256 is wrong.
    """
    expected = EXPECTED_SHA256.get(relpath) if verify else None
    size = EXPECTED_SIZE.get(relpath) if verify else None
    found = find_data_file(
        relpath, path, expected_sha256=expected, url=url or CANONICAL_URLS.get(relpath), expected_size=size
    )
    note_data_source(relpath, path=str(found.path), sha256=found.sha256, origin=found.origin)
    return found


def file_sources(task: str, relpaths: list[str]) -> list[DataSource]:
    """The data sources of ``task`` (a game short name) for known files: URL, sha256 and size from the tables
    above."""
    return [
        DataSource(
            name=rel,
            task=task,
            url=CANONICAL_URLS.get(rel),
            sha256=EXPECTED_SHA256.get(rel),
            size=EXPECTED_SIZE.get(rel),
        )
        for rel in relpaths
    ]
