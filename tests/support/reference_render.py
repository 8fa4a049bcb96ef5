"""Plain-Python reference model of membolt's ``<memory>`` block (§5).

This module is the *model* for a differential test against the Rust renderer:
it implements §5 (with §5.4 escaping, §5.5 markers, §5.7 ancestry, §5.8
relative age), the ranked focus of §15.2/§15.3 and the budget ceiling of
§15.5 directly and literally from the contract's text, independently of the
Rust code. Clarity and faithfulness matter here, speed does not.

One part is not modelled: the terms of a text (§15.1: UAX #29 words and the
Snowball stemmer, which the standard library lacks) come from
``membolt._core.terms`` / ``query_terms``, which ``tests/test_terms.py``
checks on their own (against the ``snowballstemmer`` package among others).
Everything built on the terms (BM25, the equal-score tiers, the tie-breaks,
the selection) is written here again from the contract.

Conventions of the spec, as implemented here:

* "bytes" are UTF-8 bytes: ``len(text.encode("utf-8"))``.
* "lower" is Python's ``str.lower()`` -- Python is the reference for it. (The
  Rust side uses ``str::to_lowercase``; the only known difference is Unicode
  version skew: Python 3.11 has Unicode 14.0 tables, so the few upper-case
  letters given a lower-case mapping later, e.g. U+A7CB, U+1C89, U+10D50, stay
  unchanged here and are lowered by Rust.)
* "whitespace" is the Unicode White_Space property (what Rust's
  ``char::is_whitespace`` tests), spelled out in :data:`WHITESPACE`. It is NOT
  Python's ``str.isspace()`` / ``str.split()`` / ``str.strip()`` set, which also
  holds U+001C-U+001F; so this module never calls those without arguments.
* "trim" removes whitespace at both ends.

Interpretations of the spec (where its text leaves room):

* "newest" is the largest ``updated_at``. The convention's "then the larger key"
  is the default tie-break; every rule of §5 that says "newest" states its own
  tie-break right after it (resume point: type rank then smaller key; error:
  larger key; focus matches: smaller key; candidates: smaller key first), and
  that stated tie-break is the one applied. (Reading "newest" there as already
  including "then the larger key" would make the stated "then smaller key"
  rules dead text.)
* Budget (§15.5): a ceiling. Priority entries are offered in order (resume
  point, focus matches in rank order, newest unresolved error, each once),
  then their ancestry chains round by round: a chain skips the ancestors
  already taken and offers its next one; an ancestor left out by one chain
  may be offered again by another (it is not "taken"). An offered entry is
  taken whole if it fits, else cut when at least 80 bytes are left for its
  value after key, the 30 bytes and ``...``, else left out. Then the newest
  first fill, whole entries only. Nothing taken, or ``max_tokens <= 0``: the
  resume point (else the newest entry) alone, value cut to 200 bytes.
* Parents-first order (§5.3): one depth-first walk over the whole graph (kept and
  not-kept entries alike; references to missing keys skipped) with a single
  ``visited`` set shared by the whole walk, started from each kept key in sorted
  order; references are followed in stored order; a key is marked visited when
  first entered (so a cycle is cut where it closes back onto a key that is still
  being walked), and a kept key is emitted after all its references have been
  walked (post-order). Every kept key is a start of the walk, so the
  "never reached" clause of §5.3 can never fire; it is implemented anyway.
  A per-start visited set would give the same output (everything reachable from
  an already visited key was visited, and emitted if kept, by the earlier walk).
* The map line counts raw types (empty counted as ``note``, so ``""`` and
  ``note`` share one count) and escapes each type when printing it.
* Equal scores (§15.2): walking the scores from the highest, a score more
  than 1e-9 (relative) below the previous one starts a new tier; a tier is
  ordered by the tie-breaks alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from membolt._core import query_terms, terms

# ---------------------------------------------------------------------------
# Constants from the spec
# ---------------------------------------------------------------------------

#: Unicode White_Space (the spec's "whitespace"): U+0009-U+000D, U+0020, U+0085,
#: U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
WHITESPACE: str = "".join(
    chr(code)
    for code in (
        *range(0x09, 0x0E),
        0x20,
        0x85,
        0xA0,
        0x1680,
        *range(0x2000, 0x200B),
        0x2028,
        0x2029,
        0x202F,
        0x205F,
        0x3000,
    )
)

LEGEND: str = (
    'Legend: workflow chain, parents before children. "key [type]: value"; '
    '"<- P" = derived from P; "(same as K)" = repeats K\'s fact; '
    '"<== RESUME" = continue here.'
)

BYTES_PER_TOKEN = 4
ENTRY_OVERHEAD = 30
MAX_FOCUS_MATCHES = 5
MAX_CHAIN = 8
MIN_DUPLICATE_BYTES = 12

RESUME_TYPES = ("progress", "result", "status")
#: §5.2.1 tie-break rank on equal ``updated_at``: progress > status > result.
RESUME_TYPE_RANK = {"progress": 3, "status": 2, "result": 1}

NOT_DONE_MARKERS = (
    "not done",
    "not complete",
    "not finished",
    "incomplete",
    "unfinished",
    "in progress",
    "in-progress",
    "pending",
    "todo",
    "to do",
    "wip",
    "blocked",
    "failed",
)
DONE_MARKERS = (
    "done",
    "complete",
    "finished",
    "success",
    "shipped",
    "merged",
    "cancelled",
    "canceled",
    "abandoned",
    "wontfix",
    "won't fix",
)
REOPENED_MARKERS = (
    "reopened",
    "not fixed",
    "not resolved",
    "still failing",
    "still broken",
    "regressed",
)
RESOLVED_MARKERS = (
    "resolved",
    "fixed",
    "closed",
    "no longer",
    "not an issue",
    "works now",
    "wontfix",
    "won't fix",
    "cancelled",
    "canceled",
    "abandoned",
)

#: §15.2: types that do not win a tie.
NO_BONUS_TYPES = ("", "note", "fact")
#: §15.2: BM25's constants, the key's weight and the equal-score tolerance.
BM25_K1 = 1.2
BM25_B = 0.75
KEY_REPEATS = 3
RELATIVE_TOLERANCE = 1e-9
#: §15.5: a priority entry is cut only with this many bytes for its value.
MIN_CUT_VALUE_BYTES = 80
#: §15.5: the value of an entry shown alone is cut to this many bytes.
ALONE_VALUE_BYTES = 200

#: §5.4: characters replaced by U+FFFD: U+0000-U+001F except tab, U+007F, the
#: bidi embeddings/overrides U+202A-U+202E and isolates U+2066-U+2069.
REPLACED_CHARS = frozenset(
    [chr(code) for code in range(0x20) if chr(code) != "\t"]
    + [chr(code) for code in range(0x7F, 0xA0)]  # DEL, C1 controls (0.2)
    + ["\u2028", "\u2029", "\u200e", "\u200f", "\u061c"]  # (0.2)
    + [chr(code) for code in range(0x202A, 0x202F)]
    + [chr(code) for code in range(0x2066, 0x206A)]
    + [chr(code) for code in range(0xE0000, 0xE0080)]  # tag characters (0.2)
)
#: §5.5: a marker of at most this many characters must equal a token.
SHORT_MARKER_CHARS = 3

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS


@dataclass
class Entry:
    """One stored entry, as the store gives it to the renderer (§1.2)."""

    key: str
    value: str
    type: str = ""
    namespace: str = ""
    references: list[str] = field(default_factory=list)
    created_at: int = 0
    updated_at: int = 0


# ---------------------------------------------------------------------------
# Text helpers
# ---------------------------------------------------------------------------


def utf8_len(text: str) -> int:
    """Length in bytes (UTF-8)."""
    return len(text.encode("utf-8"))


def lower(text: str) -> str:
    """The spec's "lower": Python's ``str.lower()`` (not ``casefold()``).

    Python is the reference for "lower". Note for the differential test against
    Rust's ``str::to_lowercase``: both apply the full Unicode lower-case mappings
    (``SpecialCasing``: ``"İ".lower() == "i\u0307"``) and the same final-sigma
    rule (``"ΟΔΟΣ".lower() == "οδος"``); they differ only where the Unicode
    versions differ. Python 3.11 has Unicode 14.0; Rust 1.95 also lowers the 55
    letters given lower-case mappings since then (U+1C89, U+A7CB, U+A7CC, U+A7CE,
    U+A7D2, U+A7D4, U+A7DA, U+A7DC, U+10D50-U+10D65, U+16EA0-U+16EB8), which
    Python 3.11 leaves unchanged. A differential test should avoid those.
    """
    return text.lower()


def trim(text: str) -> str:
    """Remove whitespace (Unicode White_Space) at both ends."""
    return text.strip(WHITESPACE)


def split_whitespace(text: str) -> list[str]:
    """Split on runs of whitespace, dropping empty pieces."""
    words: list[str] = []
    current: list[str] = []
    for char in text:
        if char in WHITESPACE:
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words


def flatten(text: str) -> str:
    """§5.4 flattening: lines joined with `` / ``; text without line breaks kept."""
    if "\n" not in text and "\r" not in text:
        return text
    parts = [trim(part) for part in re.split(r"[\r\n]+", text)]
    return " / ".join(part for part in parts if part)


def flatten_plain(text: str) -> str:
    """``memory_search``/``memory_list`` text (§4, §5.4 (0.2)): flattened and
    neutralised, no XML escaping."""
    return "".join("\ufffd" if is_replaced(char) else char for char in flatten(text))


def truncate(text: str, limit: int) -> str:
    """§6.8: unchanged when at most ``limit`` bytes, else cut at a character
    boundary ``<= limit`` bytes and ``...`` appended."""
    if utf8_len(text) <= limit:
        return text
    kept: list[str] = []
    used = 0
    for char in text:
        size = utf8_len(char)
        if used + size > limit:
            break
        kept.append(char)
        used += size
    return "".join(kept) + "..."


def is_replaced(char: str) -> bool:
    """§5.4: controls (but tab), U+007F, bidi overrides and isolates."""
    return char in REPLACED_CHARS


def escape_line(text: str) -> str:
    """§5.4 in full: flatten, then XML-escape ``& < >`` and replace controls/bidi."""
    out: list[str] = []
    for char in flatten(text):
        if char == "&":
            out.append("&amp;")
        elif char == "<":
            out.append("&lt;")
        elif char == ">":
            out.append("&gt;")
        elif is_replaced(char):
            out.append("\ufffd")
        else:
            out.append(char)
    return "".join(out)


def word_tokens(lowered: str) -> list[str]:
    """Maximal runs of ASCII ``[a-z0-9]``; every other character separates."""
    return re.findall(r"[a-z0-9]+", lowered)


def marker_hits(lowered: str, marker: str) -> bool:
    """§5.5 hit rule of one marker against a lowered value."""
    if " " in marker or "-" in marker or "'" in marker:
        return marker in lowered
    if len(marker) <= SHORT_MARKER_CHARS:
        return any(token == marker for token in word_tokens(lowered))
    return any(token.startswith(marker) for token in word_tokens(lowered))


def is_done(value: str) -> bool:
    """§5.5: not-done markers first, then done markers."""
    lowered = lower(value)
    if any(marker_hits(lowered, marker) for marker in NOT_DONE_MARKERS):
        return False
    return any(marker_hits(lowered, marker) for marker in DONE_MARKERS)


def is_resolved(value: str) -> bool:
    """§5.5: reopened markers first, then resolved markers."""
    lowered = lower(value)
    if any(marker_hits(lowered, marker) for marker in REOPENED_MARKERS):
        return False
    return any(marker_hits(lowered, marker) for marker in RESOLVED_MARKERS)


def ranked(entries: Sequence[Entry], query: str) -> list[tuple[Entry, float]]:
    """§15.2: the entries qualifying for ``query``, in rank order, with scores."""
    wanted = query_terms(query)
    if not wanted or not entries:
        return []
    documents: dict[str, list[str]] = {
        e.key: terms(e.key) * KEY_REPEATS + terms(e.value) for e in entries
    }
    n = len(entries)
    average_len = sum(len(d) for d in documents.values()) / n
    document_frequency = {t: sum(1 for d in documents.values() if t in d) for t in wanted}
    scored: list[tuple[Entry, float]] = []
    for entry in entries:
        document = documents[entry.key]
        if not any(t in document for t in wanted):
            continue
        score = 0.0
        for term in wanted:  # in the query's order, as the sum is taken
            tf = document.count(term)
            if tf == 0:
                continue
            df = document_frequency[term]
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            norm = BM25_K1 * (1 - BM25_B + BM25_B * len(document) / average_len)
            score += idf * tf * (BM25_K1 + 1) / (tf + norm)
        scored.append((entry, score))
    scored.sort(key=lambda pair: -pair[1])
    tiers: list[list[tuple[Entry, float]]] = []
    for pair in scored:
        if tiers and tiers[-1][-1][1] - pair[1] <= RELATIVE_TOLERANCE * abs(tiers[-1][-1][1]):
            tiers[-1].append(pair)
        else:
            tiers.append([pair])
    out: list[tuple[Entry, float]] = []
    for tier in tiers:
        tier.sort(key=lambda p: (p[0].type in NO_BONUS_TYPES, -p[0].updated_at, p[0].key))
        out.extend(tier)
    return out


def normalize_value(value: str) -> str:
    """§5.3 duplicates: collapse whitespace runs to one space, trim, lower."""
    return lower(" ".join(split_whitespace(value)))


def relative_age(now_ms: int, updated_at: int) -> str:
    """§5.8 relative age."""
    delta = max(0, now_ms - updated_at)
    if delta < MINUTE_MS:
        return "just now"
    if delta < HOUR_MS:
        return f"{delta // MINUTE_MS}m ago"
    if delta < DAY_MS:
        return f"{delta // HOUR_MS}h ago"
    return f"{delta // DAY_MS}d ago"


def entry_cost(entry: Entry) -> int:
    """§5.1: ``len(key) + len(value) + 30`` bytes, raw value."""
    return utf8_len(entry.key) + utf8_len(entry.value) + ENTRY_OVERHEAD


# ---------------------------------------------------------------------------
# §5.2 Which entries are kept
# ---------------------------------------------------------------------------


def resume_point(entries: Iterable[Entry]) -> Entry | None:
    """§5.2.1: newest not-done progress/result/status; ties: type rank, smaller key."""
    candidates = [e for e in entries if e.type in RESUME_TYPES and not is_done(e.value)]
    if not candidates:
        return None
    candidates.sort(key=lambda e: (-e.updated_at, -RESUME_TYPE_RANK[e.type], e.key))
    return candidates[0]


def newest_unresolved_error(entries: Iterable[Entry]) -> Entry | None:
    """§5.2.2: newest unresolved ``error`` entry; ties to the larger key."""
    candidates = [e for e in entries if e.type == "error" and not is_resolved(e.value)]
    if not candidates:
        return None
    return max(candidates, key=lambda e: (e.updated_at, e.key))


def focus_matches(entries: Sequence[Entry], focus: str) -> list[Entry]:
    """§15.3: the first five entries of the ranked search for the focus."""
    return [entry for entry, _ in ranked(entries, focus)[:MAX_FOCUS_MATCHES]]


def ancestry_chain(key: str, by_key: dict[str, Entry]) -> list[str]:
    """§5.7: breadth-first over references, nearest first, itself included, max 8."""
    if key not in by_key:
        return []
    chain: list[str] = []
    queued = {key}
    queue = [key]
    while queue and len(chain) < MAX_CHAIN:
        current = queue.pop(0)
        chain.append(current)
        for ref in by_key[current].references:
            if ref in by_key and ref not in queued:
                queued.add(ref)
                queue.append(ref)
    return chain


def shown_alone(entries: Sequence[Entry], resume: Entry | None) -> dict[str, str]:
    """§15.5: the resume point, else the newest entry, its value cut to 200 bytes."""
    entry = resume or min(entries, key=lambda e: (-e.updated_at, e.key))
    return {entry.key: truncate(entry.value, ALONE_VALUE_BYTES)}


def select_shown(
    entries: Sequence[Entry],
    anchors: Sequence[Entry],
    resume: Entry | None,
    max_tokens: int,
) -> dict[str, str]:
    """§15.5: the shown entries, each with the value it shows."""
    if max_tokens <= 0:
        return shown_alone(entries, resume)
    by_key = {e.key: e for e in entries}
    remaining = max_tokens * BYTES_PER_TOKEN
    shown: dict[str, str] = {}

    def offer(entry: Entry) -> None:
        nonlocal remaining
        if entry.key in shown:
            return
        cost = entry_cost(entry)
        if cost <= remaining:
            shown[entry.key] = entry.value
            remaining -= cost
            return
        room = remaining - utf8_len(entry.key) - ENTRY_OVERHEAD - len("...")
        if room >= MIN_CUT_VALUE_BYTES:
            value = truncate(entry.value, room)
            shown[entry.key] = value
            remaining -= utf8_len(entry.key) + ENTRY_OVERHEAD + utf8_len(value)

    order: list[Entry] = []
    for anchor in anchors:
        if anchor not in order:
            order.append(anchor)
    for anchor in order:
        offer(anchor)
    chains = [ancestry_chain(anchor.key, by_key)[1:] for anchor in order]
    cursors = [0] * len(chains)
    while True:
        offered = False
        for number, chain in enumerate(chains):
            while cursors[number] < len(chain) and chain[cursors[number]] in shown:
                cursors[number] += 1
            if cursors[number] < len(chain):
                key = chain[cursors[number]]
                cursors[number] += 1
                offered = True
                offer(by_key[key])
        if not offered:
            break
    for entry in sorted(entries, key=lambda e: (-e.updated_at, e.key)):
        if entry.key not in shown and entry_cost(entry) <= remaining:
            shown[entry.key] = entry.value
            remaining -= entry_cost(entry)
    return shown or shown_alone(entries, resume)


# ---------------------------------------------------------------------------
# §5.3 Order
# ---------------------------------------------------------------------------


def parents_first(kept: set[str], by_key: dict[str, Entry]) -> list[str]:
    """§5.3: kept keys sorted; DFS over references (whole graph); post-order emit.

    Equivalent to this recursive walk (written with an explicit stack so long
    reference chains do not hit Python's recursion limit)::

        visited = set()
        def visit(key):
            if key in visited: return
            visited.add(key)
            for ref in by_key[key].references:   # stored order
                if ref in by_key: visit(ref)     # missing keys skipped
            if key in kept and key not in emitted: emit(key)
        for key in sorted(kept): visit(key)
        for key in sorted(kept): if key not in emitted: emit(key)
    """
    order: list[str] = []
    emitted: set[str] = set()
    visited: set[str] = set()

    def emit(key: str) -> None:
        if key in kept and key not in emitted:
            emitted.add(key)
            order.append(key)

    for root in sorted(kept):
        if root in visited:
            continue
        visited.add(root)
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            key, index = stack[-1]
            references = by_key[key].references
            if index < len(references):
                stack[-1] = (key, index + 1)
                ref = references[index]
                if ref in by_key and ref not in visited:
                    visited.add(ref)
                    stack.append((ref, 0))
            else:
                stack.pop()
                emit(key)
    for key in sorted(kept):
        emit(key)  # kept entries never reached (cannot happen, see above)
    return order


# ---------------------------------------------------------------------------
# §5.3 Format
# ---------------------------------------------------------------------------


def map_line(
    order: Sequence[str],
    by_key: dict[str, Entry],
    resume: Entry | None,
    error: Entry | None,
    now_ms: int,
) -> str:
    """``map: <count> <type>, ... | resume: <key> (<age>) | error: <key>``."""
    counts: dict[str, int] = {}  # insertion order = order of first appearance
    for key in order:
        entry_type = by_key[key].type or "note"
        counts[entry_type] = counts.get(entry_type, 0) + 1
    line = "map: " + ", ".join(f"{n} {escape_line(t)}" for t, n in counts.items())
    if resume is not None:
        age = relative_age(now_ms, resume.updated_at)
        line += f" | resume: {escape_line(resume.key)} ({age})"
    if error is not None:
        line += f" | error: {escape_line(error.key)}"
    return line


def entry_line(
    entry: Entry, shown_value: str, kept: set[str], same_as: str | None, is_resume: bool
) -> str:
    """``<key> [<type>]: <value>`` plus annotations, each after two spaces."""
    line = escape_line(entry.key)
    if entry.type != "":
        line += f" [{escape_line(entry.type)}]"
    line += ": " + escape_line(shown_value)
    parents = [ref for ref in entry.references if ref in kept]
    if parents:
        line += "  <- " + ", ".join(escape_line(p) for p in parents)
    if same_as is not None:
        line += f"  (same as {escape_line(same_as)})"
    if is_resume:
        line += "  <== RESUME"
    return line


def render(entries: Sequence[Entry], focus: str, max_tokens: int, now_ms: int) -> str:
    """Render the ``<memory>`` block (§5) for a store holding ``entries``."""
    if not entries:
        return ""
    by_key: dict[str, Entry] = {}
    for entry in entries:
        if entry.key in by_key:
            raise ValueError(f"duplicate key {entry.key!r}")
        by_key[entry.key] = entry

    # §5.2 steps 1-3 and §15.5: the anchors, then what is shown.
    resume = resume_point(entries)
    error = newest_unresolved_error(entries)
    matches = focus_matches(entries, focus)
    anchors = [a for a in [resume, *matches, error] if a is not None]
    shown = select_shown(entries, anchors, resume, max_tokens)
    kept = set(shown)
    order = parents_first(kept, by_key)
    # §15.5: the map and downstream lines name only shown entries.
    if resume is not None and resume.key not in kept:
        resume = None
    if error is not None and error.key not in kept:
        error = None

    lines = ["<memory>", LEGEND, map_line(order, by_key, resume, error, now_ms)]
    first_with_value: dict[str, str] = {}
    for key in order:
        entry = by_key[key]
        same_as: str | None = None
        normalized = normalize_value(entry.value)
        if utf8_len(normalized) >= MIN_DUPLICATE_BYTES:
            if normalized in first_with_value:
                same_as = first_with_value[normalized]
            else:
                first_with_value[normalized] = key
        is_resume = resume is not None and key == resume.key
        lines.append(entry_line(entry, shown[key], kept, same_as, is_resume))

    if resume is not None:
        children = sorted(key for key in order if resume.key in by_key[key].references)
        if children:
            names = ", ".join(escape_line(child) for child in children)
            lines.append(f"downstream of {escape_line(resume.key)}: {names}")
    lines.append("</memory>")
    return "\n".join(lines)
