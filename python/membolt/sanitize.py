"""Python's side of the text conventions, in one place.

The Rust core owns the text *mechanisms* (truncation with ``...``,
flattening, escaping, terms); the Python rules (extraction, compaction, the
hooks, the tool-call log) need a few primitives of their own, and they all
come from here:

- **whitespace** is the Unicode White_Space set, what Rust's
  ``char::is_whitespace`` tests (``str.split()`` would also split on
  U+001C-U+001F, which are not whitespace for membolt);
- **byte cuts** (:func:`cut_bytes`) end at a character boundary and add
  nothing (``_core.truncate`` is the cut with ``...``);
- **text from the outside world** (:func:`clean_text`) is made storable: a
  Python ``str`` may hold lone surrogates (from ``os.fsdecode`` of a
  non-UTF-8 file name, ``surrogateescape`` decoding, or a JSON ``\\ud800``
  escape), which the core refuses, and an agent may hand a hook any object.
"""

from __future__ import annotations

import re
from typing import Final

REPLACEMENT: Final = "\ufffd"
_SURROGATE: Final = re.compile("[\ud800-\udfff]")

#: The 25 Unicode White_Space characters (what Rust's ``char::is_whitespace`` tests).
WHITESPACE: Final = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)
_WHITESPACE_SET: Final = frozenset(WHITESPACE)
#: Regex character-class body of :data:`WHITESPACE`.
WS_CLASS: Final = "".join(f"\\u{ord(c):04x}" for c in WHITESPACE)
#: Regex character-class body for whitespace other than ``\\n`` (within a line).
WS_NOT_NEWLINE_CLASS: Final = "".join(f"\\u{ord(c):04x}" for c in WHITESPACE if c != "\n")
#: A run of characters that are not whitespace.
NON_WS_RUN: Final = re.compile(f"[^{WS_CLASS}]+")


def clean_text(value: object) -> str:
    """``value`` as text that encodes as UTF-8: ``str(value)`` (or a
    placeholder naming its type when that fails), with each lone surrogate
    replaced by U+FFFD."""
    if isinstance(value, str):
        if value.isascii():  # O(1) in CPython, and most text is
            return value
        text = value
    else:
        try:
            text = str(value)
        except Exception:  # an object whose __str__ fails still gets a name
            return f"<{type(value).__name__}>"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, text)
    return text


def is_whitespace(char: str) -> bool:
    """Whether ``char`` is a Unicode White_Space character."""
    return char in _WHITESPACE_SET


def trim(text: str) -> str:
    """Strip Unicode whitespace from both ends (U+001C-U+001F are kept)."""
    return text.strip(WHITESPACE)


def split_whitespace(text: str) -> list[str]:
    """Split on runs of Unicode whitespace, dropping empty parts (like
    ``str.split()`` but without splitting on U+001C-U+001F)."""
    return NON_WS_RUN.findall(text)


def cut_bytes(text: str, limit: int) -> str:
    """The longest prefix of ``text`` of at most ``limit`` UTF-8 bytes that ends
    at a character boundary (no ``...`` appended); lone surrogates become
    U+FFFD first."""
    limit = max(limit, 0)
    # Only the first `limit` characters can fit, so never encode more than that;
    # "ignore" drops the partial character a byte cut may leave at the end.
    return clean_text(text[:limit]).encode()[:limit].decode("utf-8", "ignore")


def line_end(text: str, pos: int) -> int:
    """Index of the ``\\n`` ending the line that holds ``pos`` (or ``len(text)``)."""
    end = text.find("\n", pos)
    return len(text) if end == -1 else end


def first_line(text: str) -> str:
    """Everything before the first ``\\n``."""
    return text[: line_end(text, 0)]
