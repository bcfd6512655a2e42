"""Dataset loaders: typed, checked, provenance-recording access to the public data the games use.

- :mod:`.mbpp`: MBPP problems (code review task).
- :mod:`.idioms`: the Chinese idiom dictionary (idiom solitaire).
- :mod:`.iwslt`: IWSLT 2017 TED test sets and their paragraphs (machine translation).
- :mod:`.zh_text`: normalisation of Chinese replies.
- :mod:`._files`: where data files are found (``$DEEPEVAL_GAMES_DATA``, explicit path, user cache, download).
"""

from __future__ import annotations

from ._files import (
    CANONICAL_URLS,
    DATA_ENV,
    EXPECTED_SHA256,
    IWSLT2017_PAIRS,
    OFFLINE_ENV,
    DatasetError,
    ResolvedFile,
    cache_dir,
    data_sources,
    iwslt2017_relpath,
    resolve_data_file,
)
from .idioms import ChainMode, Idiom, IdiomDictionary, ReplyMatch, load_idioms
from .mbpp import (
    SPLITS,
    MBPPDataset,
    MBPPProblem,
    SanitizedMBPPDataset,
    SanitizedMBPPProblem,
    load_mbpp,
    load_sanitized_mbpp,
    split_of,
)
from .zh_text import normalize_reply, to_simplified

__all__ = [
    "CANONICAL_URLS",
    "DATA_ENV",
    "EXPECTED_SHA256",
    "IWSLT2017_PAIRS",
    "OFFLINE_ENV",
    "SPLITS",
    "ChainMode",
    "DatasetError",
    "Idiom",
    "IdiomDictionary",
    "MBPPDataset",
    "MBPPProblem",
    "ReplyMatch",
    "ResolvedFile",
    "SanitizedMBPPDataset",
    "SanitizedMBPPProblem",
    "cache_dir",
    "data_sources",
    "iwslt2017_relpath",
    "load_idioms",
    "load_mbpp",
    "load_sanitized_mbpp",
    "normalize_reply",
    "resolve_data_file",
    "split_of",
    "to_simplified",
]
