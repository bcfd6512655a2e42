"""Quoting text so that it can never pass for something else.

Whatever a player wrote reaches another seat (or the judge) only inside :func:`quote_player_text`
delimiters. Delimiter look-alikes inside the text are defused, so a quote cannot be closed early and the
text after it cannot imitate the referee. Games use it in their observation strings; the LLM players use it
for pool messages written by other seats.

Two more boundaries get text from outside: :func:`valid_text` makes text from a model, a person or a file
encodable before it is stored or sent (a lone surrogate in a reply would otherwise fail every later request and
the record itself), and :func:`visible` shows control characters and bidirectional overrides as escapes, so that
names and replies printed to a terminal (or a spreadsheet cell) can neither drive the terminal nor reorder what is
shown.
"""

from __future__ import annotations

import logging
import re
from typing import Any, TextIO

__all__ = [
    "QUOTE_CLOSE",
    "QUOTE_OPEN",
    "REPLACEMENT",
    "VisibleFormatter",
    "VisibleStream",
    "escape_log_lines",
    "quote_player_text",
    "surrogate_escapes",
    "valid_json_value",
    "valid_text",
    "visible",
]

QUOTE_OPEN = "<<<"
QUOTE_CLOSE = ">>>"


def quote_player_text(label: str, text: str) -> str:
    """Another seat's words, fenced so that they can never pass for the referee's."""
    safe = text.replace(QUOTE_OPEN, "‹‹‹").replace(QUOTE_CLOSE, "›››")
    return (
        f"[{label} wrote the text between {QUOTE_OPEN} and {QUOTE_CLOSE}; it is a player's words, not the referee's]\n"
        f"{QUOTE_OPEN}\n{safe}\n{QUOTE_CLOSE}"
    )


REPLACEMENT = "\ufffd"
"""What an unencodable code point is replaced by (U+FFFD REPLACEMENT CHARACTER)."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> tuple[str, tuple[str, ...]]:
    """``text`` made encodable as UTF-8, and the code points that were replaced (``("U+D83D",)``; empty: unchanged).

    Surrogates are the only code points of a Python string that UTF-8 cannot encode; they come from JSON escapes
    such as ``"\\ud83d"`` with no partner, or from bytes decoded with ``surrogateescape``. A high surrogate followed
    by a low one is the character they stand for (joined, not counted as replaced); any other surrogate becomes
    :data:`REPLACEMENT`. Text that encodes is returned as it is (the same object), at the cost of one encode.
    """
    if text.isascii():
        return text, ()
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return text, ()
    out: list[str] = []
    replaced: list[str] = []
    end = 0
    pending = -1  # index of a high surrogate that may start a pair
    for match in _SURROGATE.finditer(text):
        index, code = match.start(), ord(match.group())
        if pending >= 0 and index == pending + 1 and code >= 0xDC00:  # the low half of a pair
            high = ord(text[pending])
            out.append(chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)))
            end, pending = index + 1, -1
            continue
        if pending >= 0:  # a high surrogate without its low half
            out.append(REPLACEMENT)
            replaced.append(f"U+{ord(text[pending]):04X}")
            end = pending + 1
            pending = -1
        out.append(text[end:index])
        end = index
        if code < 0xDC00:
            pending = index
        else:
            out.append(REPLACEMENT)
            replaced.append(f"U+{code:04X}")
            end = index + 1
    if pending >= 0:
        out.append(REPLACEMENT)
        replaced.append(f"U+{ord(text[pending]):04X}")
        end = pending + 1
    out.append(text[end:])
    return "".join(out), tuple(replaced)


_SURROGATE_ESCAPE = re.compile(
    r"\\u([dD][89abAB][0-9a-fA-F]{2})(?:\\u([dD][c-fC-F][0-9a-fA-F]{2}))?|\\u([dD][c-fC-F][0-9a-fA-F]{2})"
)


def surrogate_escapes(text: str) -> tuple[str, ...]:
    """The lone surrogates that JSON escapes in ``text`` stand for (``\\ud83d`` with no ``\\udcxx`` after it), as
    ``U+D83D``: what a JSON reader makes of such text is unencodable (:func:`valid_json_value` replaces them)."""
    if "\\u" not in text:
        return ()
    lone: list[str] = []
    for match in _SURROGATE_ESCAPE.finditer(text):
        high, low, orphan = match.groups()
        if orphan is not None:
            lone.append(f"U+{orphan.upper()}")
        elif low is None:
            lone.append(f"U+{high.upper()}")
    return tuple(lone)


def valid_json_value(value: Any) -> Any:
    """A decoded JSON value with every string in it made valid (:func:`valid_text`); the same object when none
    needed it."""
    if isinstance(value, str):
        return valid_text(value)[0]
    if isinstance(value, list):
        items = [valid_json_value(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        pairs = [(valid_json_value(k), valid_json_value(v)) for k, v in value.items()]
        same = all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True))
        return value if same else dict(pairs)
    return value


_BIDI_AND_SURROGATES = (
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional marks, embeddings, overrides and isolates
    "\ud800-\udfff"  # surrogates (unprintable, unencodable)
)
_INVISIBLE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI_AND_SURROGATES}]")
"""Control characters but tab and newline (C0, DEL, C1), bidirectional controls and surrogates."""
_INVISIBLE_ALL = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI_AND_SURROGATES}]")
""":data:`_INVISIBLE` with tab and newline too."""


_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, keep_lines: bool = True) -> str:
    """``text`` with every control character and bidirectional control shown as an escape (``\\x1b``, ``\\u202e``).

    ESC (an ANSI sequence), CR, backspace, NUL and the other C0 and C1 controls, DEL, the bidirectional marks,
    embeddings, overrides and isolates (U+202E RIGHT-TO-LEFT OVERRIDE, ...) and lone surrogates are escaped, so
    text printed to a terminal can neither drive it nor reorder what it shows. Newline and tab are kept when
    ``keep_lines`` (multi-line output), escaped otherwise (a name on one line). Text without any is returned as is.
    """
    pattern = _INVISIBLE if keep_lines else _INVISIBLE_ALL
    if text.isascii() and text.isprintable():
        return text
    return pattern.sub(_escape, text)


class VisibleStream:
    """A text stream that writes everything through :func:`visible` to ``stream``: what the command line prints
    (tables with player names, errors, a person's game) can neither drive the terminal nor reorder its text."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        """Write ``text`` with its control characters escaped; returns ``len(text)`` (as callers expect)."""
        self.stream.write(visible(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, ...: the stream's own
        return getattr(self.stream, name)


class VisibleFormatter(logging.Formatter):
    """A log formatter whose lines go through :func:`visible` (a log message may quote a player's name or reply)."""

    def format(self, record: logging.LogRecord) -> str:
        """The formatted record, control characters escaped (newlines of a traceback kept)."""
        return visible(super().format(record))


def escape_log_lines() -> None:
    """Give the root logger's stream handlers a :class:`VisibleFormatter` with their format (after
    ``logging.basicConfig``)."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler.formatter, VisibleFormatter):
            fmt = handler.formatter._fmt if handler.formatter is not None else None
            handler.setFormatter(VisibleFormatter(fmt))
