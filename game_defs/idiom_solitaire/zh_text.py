"""Normalising Chinese replies: Unicode, whitespace, punctuation, traditional -> simplified characters.

Policy (the idiom game's rules card refers to it):

1. Unicode NFKC (full-width letters and digits become ASCII; compatibility ideographs become unified ones).
2. Whitespace (including the ideographic space U+3000), zero-width and other control/format characters,
   punctuation of every script (Chinese ，。：；！？、 and ASCII, quotes “”‘’「」『』《》〈〉【】,
   brackets) and symbols (→ ★ ~ emoji) are removed.
3. Traditional characters are converted to simplified ones with ``zhconv`` (MediaWiki conversion tables,
   ``zh-hans`` target: script only, no regional vocabulary changes), e.g. 一馬當先 -> 一马当先.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

__all__ = ["cjk_runs", "is_cjk", "normalize_reply", "to_simplified"]

# CJK Unified Ideographs (basic, extensions A-H) and the two compatibility blocks; 〇 (U+3007) too.
_CJK_CLASS = (
    "\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef\U0002f800-\U0002fa1f\U00030000-\U000323af"
)
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
_CJK_CHAR = re.compile(f"[{_CJK_CLASS}]")
# Unicode general categories dropped by normalize_reply: punctuation, symbols, separators, control/format.
_DROP_CATEGORIES = ("P", "S", "Z", "C")


def is_cjk(char: str) -> bool:
    """True when ``char`` (one character) is a CJK ideograph."""
    return _CJK_CHAR.fullmatch(char) is not None


@functools.cache
def _converter() -> Callable[[str, str], str]:
    import zhconv  # imported on first use: loading its tables takes ~0.25 s

    return zhconv.convert


def to_simplified(text: str) -> str:
    """Convert traditional Chinese characters to simplified ones (other characters are kept)."""
    if not text:
        return text
    return _converter()(text, "zh-hans")


def _drop(char: str) -> bool:
    return unicodedata.category(char)[0] in _DROP_CATEGORIES


def normalize_reply(text: str) -> str:
    """NFKC, remove whitespace/punctuation/symbols/control characters, then convert to simplified.

    >>> normalize_reply(" 「一馬當先」。")
    '一马当先'
    """
    nfkc = unicodedata.normalize("NFKC", text)
    kept = "".join(c for c in nfkc if not _drop(c))
    return to_simplified(kept)


def cjk_runs(text: str) -> list[str]:
    """The maximal runs of CJK ideographs in ``text`` after NFKC, in order of appearance.

    Whitespace and invisible (control/format) characters are removed first, so ``一 马 当 先`` is one run;
    anything else that is not an ideograph (punctuation, Latin letters, digits) separates runs. The runs are
    not converted to simplified characters.
    """
    nfkc = unicodedata.normalize("NFKC", text)
    joined = "".join(c for c in nfkc if not (c.isspace() or unicodedata.category(c)[0] in ("Z", "C")))
    return _CJK_RUN.findall(joined)
