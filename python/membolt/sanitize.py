"""Text from the outside world made storable.

The Rust core takes UTF-8; a Python ``str`` may hold lone surrogates (from
``os.fsdecode`` of a non-UTF-8 file name, ``surrogateescape`` decoding, or a
JSON ``\\ud800`` escape), and an agent may hand a hook any object. Hooks and
the tool-call log must keep working on such input, so they pass it through
:func:`clean_text` first.
"""

from __future__ import annotations

import re
from typing import Final

REPLACEMENT: Final = "\ufffd"
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def clean_text(value: object) -> str:
    """``value`` as text that encodes as UTF-8: ``str(value)`` (or a
    placeholder naming its type when that fails), with each lone surrogate
    replaced by U+FFFD."""
    if isinstance(value, str):
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
