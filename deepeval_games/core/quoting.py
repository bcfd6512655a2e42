"""Quoting a seat's words, so that they can never pass for the referee's.

Whatever a player wrote reaches another seat (or the judge) only inside :func:`quote_player_text`
delimiters. Delimiter look-alikes inside the text are defused, so a quote cannot be closed early and the
text after it cannot imitate the referee. Games use it in their observation strings; the LLM players use it
for pool messages written by other seats.
"""

from __future__ import annotations

__all__ = ["QUOTE_CLOSE", "QUOTE_OPEN", "quote_player_text"]

QUOTE_OPEN = "<<<"
QUOTE_CLOSE = ">>>"


def quote_player_text(label: str, text: str) -> str:
    """Another seat's words, fenced so that they can never pass for the referee's."""
    safe = text.replace(QUOTE_OPEN, "‹‹‹").replace(QUOTE_CLOSE, "›››")
    return (
        f"[{label} wrote the text between {QUOTE_OPEN} and {QUOTE_CLOSE}; it is a player's words, not the referee's]\n"
        f"{QUOTE_OPEN}\n{safe}\n{QUOTE_CLOSE}"
    )
