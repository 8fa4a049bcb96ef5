"""Claude Code's compaction summary, section by section (§13.1).

Claude Code compacts a conversation by asking the model for a summary in
numbered sections, and hands it to ``PostCompact`` as ``compact_summary``::

    <analysis> ... </analysis>            (or "Analysis:" once formatted)
    <summary>                             (or "Summary:")
    1. Primary Request and Intent:
       The user asked ...
    ...
    4. Errors and fixes:
       - ZeroDivisionError in divide():
         - Fixed by checking b == 0 ...
    ...
    7. Pending Tasks:
       - Fix power()
    8. Current Work:
       ...
    9. Optional Next Step:
       ...
    </summary>

Only the summary part is read (the analysis before it numbers its own
points). A section header is a line holding one of the nine section names
(any letter case, ``&`` for ``and``) after a number (``4.``), a markdown
header (``##``) or bold markers, or alone before a colon; its body runs to
the next such header, or to a numbered or ``#`` header of another name at
the start of a line (a ``#`` header deeper than the section's own, or than
``##`` under a numbered header, is an item of it: ``### Error 1`` under
``## 4. Errors and fixes``). The body may begin on the header's own line.

What the sections become (each value on one line, bullets joined with
``; ``):

- "Primary Request and Intent" -> ``goal:request``;
- "Errors and fixes" -> ``decision:fix-1``, ``decision:fix-2`` ... one per
  item (a top-level bullet with its sub-bullets);
- "Pending Tasks" -> ``progress:pending`` (``pending: ...``);
- "Current Work" -> ``progress:current`` (``in progress: ...``);
- "Optional Next Step" -> ``progress:next`` (``to do next: ...``).

A progress section that says ``None`` (or "No next step", "No pending
tasks") is saved as ``done: none``. The
labels keep the values not done (§5.5) whatever words the model chose (a
next step to "run the complete suite" is still to do), so the newest of
them, the next step, is the resume point. The entries are saved in that
order as one batch, so that they form one chain (§3.3), the next step
last: the resume point's ancestry is the hand-over note.

A summary with none of these sections is not Claude Code's: it goes to
``auto_capture`` (§7) as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from .._core import truncate

GOAL_KEY: Final = "goal:request"
FIX_KEY_PREFIX: Final = "decision:fix-"
PENDING_KEY: Final = "progress:pending"
CURRENT_KEY: Final = "progress:current"
NEXT_KEY: Final = "progress:next"
#: Values are cut to these many bytes: the block holds 2,000 (§5.1).
GOAL_BYTES: Final = 200
FIX_BYTES: Final = 160
PROGRESS_BYTES: Final = 200
DONE_NONE: Final = "done: none"

REQUEST: Final = "primary request and intent"
ERRORS: Final = "errors and fixes"
PENDING: Final = "pending tasks"
CURRENT: Final = "current work"
NEXT: Final = "optional next step"
#: The nine sections of Claude Code's summary, lowered.
SECTION_NAMES: Final = (
    REQUEST,
    "key technical concepts",
    "files and code sections",
    ERRORS,
    "problem solving",
    "all user messages",
    PENDING,
    CURRENT,
    NEXT,
)
#: The section -> (key, type, label of its value).
PROGRESS_SECTIONS: Final = (
    (PENDING, PENDING_KEY, "pending: "),
    (CURRENT, CURRENT_KEY, "in progress: "),
    (NEXT, NEXT_KEY, "to do next: "),
)

_NAME: Final = "|".join(
    re.escape(name).replace(r"\ and\ ", r"\s+(?:and|&)\s+").replace(r"\ ", r"\s+")
    for name in SECTION_NAMES
)
# "4. Errors and fixes:", "## 4. Errors and Fixes", "**Pending Tasks:**",
# "Current Work:", each possibly followed by the body's first words.
_HEADER: Final = re.compile(
    rf"^\s*(?P<hash>#{{1,6}}\s*)?(?P<bold>\*\*)?\s*(?P<number>\d{{1,2}}[.)]\s*)?(?:\*\*)?\s*"
    rf"(?P<name>{_NAME})\s*(?:\*\*)?\s*(?P<colon>:)?\s*(?:\*\*)?\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
# A header of some other section: ends the one before it.
_OTHER_HEADER: Final = re.compile(r"^(?:(?P<hashes>#{1,6})\s|\d{1,2}\.\s+\S[^:]{0,80}:\s*$)")
_SUMMARY_TAG: Final = re.compile(r"<summary>(.*?)(?:</summary>|\Z)", re.DOTALL)
_SUMMARY_LINE: Final = re.compile(r"^\s*Summary:\s*$", re.MULTILINE)
_BULLET: Final = re.compile(r"^(?P<indent>\s*)(?:[-*\u2022]|\d{1,2}[.)])\s+(?P<text>.*)$")
_SUB_HEADER: Final = re.compile(r"^\s*#{2,6}\s+(?P<text>.*)$")
_BOLD: Final = re.compile(r"\*\*(\S(?:.*?\S)?)\*\*")
_CODE: Final = re.compile(r"`([^`]+)`")
# "None.", "- None - all merged", "No next step", "No pending tasks".
_NONE: Final = re.compile(
    r"^\W*(?:none|n/a|nothing"
    r"|no (?:further |more |pending |remaining |next )?(?:steps?|tasks?|work))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SummaryFact:
    key: str
    value: str
    type: str


def summary_facts(summary: str) -> list[SummaryFact]:
    """The entries of a Claude Code summary, in batch order; ``[]`` for a
    summary that has none of the sections used."""
    sections = sections_of(summary)
    facts: list[SummaryFact] = []
    request = sections.get(REQUEST)
    if request and not _NONE.match(request):
        facts.append(SummaryFact(GOAL_KEY, truncate(_one_line(request), GOAL_BYTES), "prompt"))
    errors = sections.get(ERRORS)
    if errors and not _NONE.match(errors):
        for number, item in enumerate(_items(errors), start=1):
            value = truncate(item, FIX_BYTES)
            facts.append(SummaryFact(f"{FIX_KEY_PREFIX}{number}", value, "decision"))
    for name, key, label in PROGRESS_SECTIONS:
        body = sections.get(name)
        if body is None:
            continue
        if not body or _NONE.match(body):
            facts.append(SummaryFact(key, DONE_NONE, "progress"))
        else:
            value = truncate(label + _one_line(body), PROGRESS_BYTES)
            facts.append(SummaryFact(key, value, "progress"))
    return facts


def sections_of(summary: str) -> dict[str, str]:
    """The body of each of the nine sections present (the first of a name),
    by lowered name; bodies trimmed, possibly empty."""
    lines = _summary_part(summary).splitlines()
    bodies: dict[str, list[str]] = {}
    current: list[str] | None = None
    level = 0  # the "#" marks of the current section's header
    for line in lines:
        header = _header(line)
        if header is not None:
            name, rest, level = header
            current = bodies.setdefault(name, []) if name not in bodies else None
            if current is not None and rest:
                current.append(rest)
            continue
        other = _OTHER_HEADER.match(line)
        # A deeper "#" header ("### Error 1" under "## 4. Errors and fixes",
        # or under a numbered header) is an item of the section.
        if other and (not other["hashes"] or len(other["hashes"]) <= max(level, 2)):
            current = None
            continue
        if current is not None:
            current.append(line)
    return {name: _trim_lines(body) for name, body in bodies.items()}


# ----- helpers -------------------------------------------------------------


def _summary_part(summary: str) -> str:
    tagged = _SUMMARY_TAG.search(summary)
    if tagged:
        return tagged.group(1)
    formatted = _SUMMARY_LINE.search(summary)
    return summary[formatted.end() :] if formatted else summary


def _header(line: str) -> tuple[str, str, int] | None:
    """The lowered name, the text after it and the ``#`` level of a header."""
    match = _HEADER.match(line)
    if match is None:
        return None
    marked = match["hash"] or match["number"] or match["bold"]
    rest = match["rest"].strip().strip("*").strip()
    # "Current work on the parser" is prose; "Current Work:" and
    # "8. Current Work" are headers.
    if not match["colon"] and (rest or not marked):
        return None
    name = " ".join(match["name"].lower().replace("&", "and").split())
    return name, rest, (match["hash"] or "").count("#")


def _trim_lines(lines: list[str]) -> str:
    """The lines without the blank ones at both ends (indentation kept: it
    tells the items of a list apart)."""
    kept = [line.rstrip() for line in lines]
    while kept and not kept[0].strip():
        kept.pop(0)
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept)


def _clean(text: str) -> str:
    """Markdown emphasis and code marks dropped, whitespace collapsed."""
    return " ".join(_CODE.sub(r"\1", _BOLD.sub(r"\1", text)).split())


def _one_line(body: str) -> str:
    """A body on one line: bullet marks and blank lines dropped; a line that
    continues a paragraph joined with a space, the others with ``; ``."""
    return _join(_parts(body.splitlines()))


def _parts(lines: list[str]) -> list[str]:
    """The paragraphs and bullets of ``lines``, each cleaned on one line."""
    parts: list[str] = []
    continues = False
    for line in lines:
        bullet = _BULLET.match(line)
        sub_header = _SUB_HEADER.match(line)
        text = _clean(sub_header["text"] if sub_header else bullet["text"] if bullet else line)
        if not text:
            continues = False
            continue
        if continues and not bullet and not sub_header and parts:
            parts[-1] += " " + text
        else:
            parts.append(text)
        continues = not sub_header
    return parts


def _join(parts: list[str]) -> str:
    joined = ""
    for part in parts:
        if not joined:
            joined = part
        elif joined.endswith((":", ";", ",", ".")):
            joined += " " + part
        else:
            joined += "; " + part
    return joined


def _items(body: str) -> list[str]:
    """The items of a list section: each ``##``-``######`` sub-header with
    the lines under it when there are sub-headers, else each top-level
    bullet with the lines under it; the whole body when it has neither."""
    lines = body.splitlines()
    by_header = any(_SUB_HEADER.match(line) for line in lines)
    indents = [len(m["indent"]) for line in lines if (m := _BULLET.match(line))]
    top = min(indents) if indents else None
    items: list[list[str]] = []
    for line in lines:
        bullet = _BULLET.match(line)
        if by_header:
            starts = _SUB_HEADER.match(line) is not None
        else:
            starts = bullet is not None and len(bullet["indent"]) == top
        if starts or not items:
            items.append([line])
        else:
            items[-1].append(line)
    return [text for item in items if (text := _join(_parts(item)))]
