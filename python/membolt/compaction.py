"""Compaction capture (§7): pure functions, no LLM calls.

:func:`parse_summary` turns a compaction summary into facts; the caller saves
them. Order of the result: ``checkpoint:summary`` first, then the bullets of
``## Key Decisions``, then those of ``## Critical Context``. The caller saves the
checkpoint as a normal save (a new checkpoint gets its auto parent, an existing
one keeps its references) and then each bullet, a new bullet referencing
:data:`CHECKPOINT_KEY`. Bullets exist only when the checkpoint does, so the
first fact is the checkpoint whenever the list is not empty.

Sections are found as in §6.5 (:func:`find_sections`): a header is a line that is
exactly ``## <name>`` (trailing whitespace allowed, the first one counts) and its
body runs up to the next line starting with ``## ``, trimmed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from itertools import islice
from typing import TYPE_CHECKING

from ._core import truncate
from .caps import extraction_caps
from .extract import (
    MAX_CANDIDATES_PER_TEXT,
    MAX_FACTS_PER_TEXT,
    UNBOUNDED_VALUE_LIMIT,
    Fact,
    find_sections,
    keep_first_per_key,
)
from .sanitize import WS_NOT_NEWLINE_CLASS, trim

if TYPE_CHECKING:
    from .store import MemoryStore

__all__ = [
    "CHECKPOINT_KEY",
    "bullet_fact",
    "bullet_facts",
    "bullet_key",
    "capture_summary",
    "checkpoint_fact",
    "parse_summary",
]

CHECKPOINT_KEY = "checkpoint:summary"
CHECKPOINT_TYPE = "status"
#: The sections summarised in the checkpoint, in order; the label of each part
#: is the section name (``Goal: ...``).
CHECKPOINT_SECTIONS = ("Goal", "Progress", "Key Decisions", "Critical Context")
CHECKPOINT_SEPARATOR = " | "
#: Each checkpoint part's body is cut to this many bytes (the spec gives no
#: bound; this is the §6.5 section limit), so the checkpoint stays near 2 KB.
CHECKPOINT_PART_LIMIT = 500
#: Sections whose ``- `` bullets become entries, with the entry type (F7).
BULLET_SECTIONS = (("Key Decisions", "decision"), ("Critical Context", "context"))
BULLET_KEY_BYTES = 80
#: A bullet with this value (any letter case) records nothing.
NONE_VALUE = "(none)"

_LINE_BREAK = re.compile("\r\n|\r|\n")
_NOT_BULLET_KEY_CHAR = re.compile("[^a-z0-9_-]")
# A bullet: "- " at the start of a line (matched with the "\n" before it), after
# optional indentation (nested bullets count too), up to the end of the line.
# The indentation class has no "\n", so a match never spans lines.
_BULLET = re.compile(f"\n[{WS_NOT_NEWLINE_CLASS}]*- ([^\n]*)")


def checkpoint_fact(bodies: Mapping[str, str]) -> Fact | None:
    """``checkpoint:summary`` (type ``status``) from section bodies: one
    ``<name>: <body>`` part per :data:`CHECKPOINT_SECTIONS` section with a
    non-empty body, line breaks replaced by spaces, each body cut to 500 bytes,
    joined with ``" | "``. None when no such section has a body."""
    parts = [
        f"{name}: {truncate(_LINE_BREAK.sub(' ', body), CHECKPOINT_PART_LIMIT)}"
        for name in CHECKPOINT_SECTIONS
        if (body := bodies.get(name, ""))
    ]
    if not parts:
        return None
    return Fact(CHECKPOINT_KEY, CHECKPOINT_SEPARATOR.join(parts), CHECKPOINT_TYPE)


def bullet_key(text: str) -> str:
    """§7 bullet key: lowered, spaces to ``_``, only ``[a-z0-9_-]`` kept, cut to
    80 bytes (all ASCII by then). May be empty."""
    return _NOT_BULLET_KEY_CHAR.sub("", text.lower().replace(" ", "_"))[:BULLET_KEY_BYTES]


def bullet_fact(item: str, entry_type: str) -> Fact | None:
    """One bullet's fact from its text after ``- `` (§7): every ``**`` removed,
    split at the first ``": "`` into key and value, each trimmed (without
    ``": "`` both are the whole text, trimmed). None for an empty key (also after
    :func:`bullet_key`), an empty value or the value ``(none)`` in any letter
    case. The split comes before the trim, so ``Storage: `` has an empty value.
    The value is cut to :data:`UNBOUNDED_VALUE_LIMIT` bytes (the spec gives no
    bound)."""
    text = item.replace("**", "")
    name, separator, value = text.partition(": ")
    if not separator:
        value = text
    name, value = trim(name), trim(value)
    if not value or value.lower() == NONE_VALUE:
        return None
    key = bullet_key(name)
    if not key:
        return None
    return Fact(key, truncate(value, UNBOUNDED_VALUE_LIMIT), entry_type)


def bullet_facts(body: str, entry_type: str) -> list[Fact]:
    """The facts of the ``- `` bullet lines of a section body (continuation lines
    are ignored); repeated keys: the first wins; at most
    :data:`MAX_FACTS_PER_TEXT` facts from the first
    :data:`MAX_CANDIDATES_PER_TEXT` bullets."""
    found: dict[str, Fact] = {}
    lines = "\n" + body  # so that the first line also follows a "\n"
    for match in islice(_BULLET.finditer(lines), MAX_CANDIDATES_PER_TEXT):
        fact = bullet_fact(match.group(1), entry_type)
        if fact is not None and fact.key not in found:
            found[fact.key] = fact
            if len(found) >= MAX_FACTS_PER_TEXT:
                break
    return list(found.values())


def parse_summary(summary: str) -> list[Fact]:
    """The facts of a compaction summary (§7): the checkpoint, then the Key
    Decisions bullets (type ``decision``), then the Critical Context bullets
    (type ``context``); a key produced twice keeps its first fact. Empty when
    no summarised section has a body."""
    bodies = find_sections(summary, CHECKPOINT_SECTIONS)
    checkpoint = checkpoint_fact(bodies)
    if checkpoint is None:
        return []
    facts = [checkpoint]
    for section, entry_type in BULLET_SECTIONS:
        facts += bullet_facts(bodies.get(section, ""), entry_type)
    return keep_first_per_key(facts)


def capture_summary(store: MemoryStore, summary: str) -> int:
    """Saves the facts of a compaction summary (§7) in one batch with the
    extraction caps; returns the number of entries written. Raises what the
    store raises (``AgentMemory.auto_capture`` is the hook that does not)."""
    facts = parse_summary(summary)
    if not facts:
        return 0
    checkpoint, bullets = facts[0], facts[1:]
    items: list[tuple[str, str, str | None, list[str] | None]] = [
        (checkpoint.key, checkpoint.value, checkpoint.type, None)
    ]
    # A new bullet references the checkpoint; an existing one keeps its
    # references (the extraction batch rule, §3.3).
    items += [(b.key, b.value, b.type, [checkpoint.key]) for b in bullets]
    return len(store.save_many(items, caps=extraction_caps))
