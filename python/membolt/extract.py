"""Automatic fact extraction (§6): pure functions, no LLM calls.

Every function here turns text into :class:`Fact` records; the caller writes them
to the store in one batch (``save_many``), which infers types, links entries and
applies the caps of §6.7. Nothing here touches a store.

Text conventions (docs/behaviour.md, Conventions):

- "whitespace" is the Unicode White_Space set (:data:`WHITESPACE`), not Python's
  ``str.isspace()``, which also accepts U+001C-U+001F;
- "trim" strips whitespace at both ends (:func:`trim`);
- "bytes" are UTF-8 bytes; "lower" is ``str.lower()``;
- a "line" ends at ``\\n`` only. A ``\\r`` before it is whitespace and is trimmed
  like any other; other separators (U+2028, U+001C, form feed, ...) do not end
  a line, unlike ``str.splitlines()``.

Robustness: every public function accepts any ``str`` (10 MB tool output, huge
single lines, control characters, unbalanced markers) without raising. Lone
surrogates, which a Python ``str`` may hold but UTF-8 (and the Rust core) cannot,
are replaced by U+FFFD first. Time is linear in the input: plain ``find`` scans
and regexes without nested repetition; each mechanism examines at most
:data:`MAX_CANDIDATES_PER_TEXT` candidates and keeps at most
:data:`MAX_FACTS_PER_TEXT` facts per text. Keys are at most :data:`MAX_KEY_BYTES`
bytes; values are bounded by the spec's limit where it gives one, else by
:data:`UNBOUNDED_VALUE_LIMIT`. A value cut by :func:`truncate` may be 3 bytes
longer than its limit (the ``...``).

Structure: each public ``extract_*`` function cleans its input and calls a
private worker of the same name that expects clean text; the combined entry
points (:func:`extract_turn`, :func:`extract_tool_result`) clean once.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from itertools import islice

from . import keys
from ._core import MAX_KEY_BYTES as _CORE_MAX_KEY_BYTES
from ._core import truncate
from .classify import THINKING_TYPE
from .sanitize import (
    NON_WS_RUN,
    WHITESPACE,
    WS_CLASS,
    WS_NOT_NEWLINE_CLASS,
    clean_text,
    cut_bytes,
    first_line,
    is_whitespace,
    split_whitespace,
    trim,
)
from .sanitize import (
    line_end as end_of_line,
)
from .tool_names import MEMORY_TOOLS

__all__ = [
    "DEFAULT_CAPTURE_TOOLS",
    "DEFAULT_CONFIG",
    "MAX_CANDIDATES_PER_TEXT",
    "MAX_FACTS_PER_TEXT",
    "MAX_KEY_BYTES",
    "MEMORY_TOOLS",
    "READ_ONLY_TOOLS",
    "UNBOUNDED_VALUE_LIMIT",
    "WHITESPACE",
    "ExtractionConfig",
    "Fact",
    "cut_bytes",
    "extract_action",
    "extract_files",
    "extract_key_lines",
    "extract_markers",
    "extract_sections",
    "extract_thinking",
    "extract_tool_result",
    "extract_turn",
    "find_sections",
    "first_line",
    "is_path_like",
    "is_whitespace",
    "iso_utc",
    "keep_first_per_key",
    "path_token",
    "slug",
    "split_whitespace",
    "thinking_fact",
    "tool_result_key",
    "trim",
    "turn_record",
]

# --------------------------------------------------------------------------
# Limits. One constant per rule; the spec section is named next to each.
# --------------------------------------------------------------------------

#: Longest key the store accepts (§1.5).
MAX_KEY_BYTES = _CORE_MAX_KEY_BYTES  # one source of truth: the store's limit
#: Values the spec does not bound (marker values, ``last_files``, compaction
#: bullets) are cut to this many bytes with ``truncate``, so that hostile text
#: cannot create huge entries.
UNBOUNDED_VALUE_LIMIT = 2000
#: At most this many distinct keys come from one mechanism scanning one text
#: (markers, KEY lines, compaction bullets): a hostile 10 MB text could
#: otherwise produce hundreds of thousands of entries in one batch.
MAX_FACTS_PER_TEXT = 1000
#: Each mechanism examines at most this many candidates (marker lines, KEY
#: lines, verb occurrences and the tokens after them, bullet lines) in one text
#: and treats the rest of the text as absent. No real text comes near it; it
#: keeps a pathological 10 MB input (a million ``Set x`` lines) from costing
#: seconds of Python work.
MAX_CANDIDATES_PER_TEXT = 100_000

KEY_LINE_VALUE_LIMIT = 500  # §6.2: longer values are skipped, not cut
ACTION_MIN_BYTES = 5  # §6.3
ACTION_MAX_BYTES = 200  # §6.3
SECTION_MIN_BYTES = 10  # §6.5: shorter bodies are skipped
SECTION_VALUE_LIMIT = 500  # §6.5: longer bodies are cut
TOOL_VALUE_LIMIT = 300  # §6.6
SLUG_SOURCE_BYTES = 40  # §6.6: the first line is cut to this before slugging
SLUG_BYTES = 30  # §6.6: the slug itself
THINKING_VALUE_LIMIT = 300  # §6.9
TURN_EXCERPT_CHARS = 200  # §6.10: characters (code points), not bytes

# --------------------------------------------------------------------------
# Keys, words and types fixed by the spec.
# --------------------------------------------------------------------------

LAST_ACTION_KEY = "last_action"
LAST_FILES_KEY = "last_files"
TURN_KEY = "turn:last"
TOOL_RESULT_TYPE = "tool_result"
MARKER_OPEN = "[MEMORY:"
MARKER_CLOSE = "]"

#: §6.3, matched case-insensitively as whole words.
ACTION_VERBS = (
    "Added",
    "Fixed",
    "Changed",
    "Updated",
    "Created",
    "Removed",
    "Deleted",
    "Set",
    "Configured",
    "Installed",
    "Built",
    "Deployed",
    "Refactored",
    "Migrated",
    "Patched",
    "Resolved",
)
#: §6.3: removed from the end of an action value (after trimming).
ACTION_TRAILING_CHARS = ".!;:`*_"

#: §6.4, matched case-insensitively as whole words.
FILE_VERBS = ("Edited", "Modified", "Created", "Read", "Wrote", "Updated", "Deleted")
#: §6.4: the optional word between the verb and the paths.
FILE_WORDS = frozenset({"file", "files"})
#: §6.4: stripped from the end of a token before it is tested.
PATH_TRAILING_CHARS = ".,;:)"
#: §6.4: a path may be wrapped in backticks or quotes (opening, closing).
PATH_WRAPPERS = (("`", "`"), ('"', '"'), ("'", "'"), ("\u201c", "\u201d"), ("\u2018", "\u2019"))
PATH_EXTENSION_MAX = 8  # §6.4: ".<1-8 ASCII letters or digits>"
PATH_SEPARATOR = ", "  # §6.4: between the paths of the value

#: §6.5: header name -> key, in processing order.
SECTION_KEYS = (
    ("Key Decisions", "decision:key-decisions"),
    ("Progress", "progress:progress"),
    ("Status", "status:status"),
    ("Result", "result:result"),
    ("Summary", "result:summary"),
    ("Context", "context:context"),
    ("Goal", "prompt:goal"),
)

#: §6.6 default capture list: tools that write, execute or search.
DEFAULT_CAPTURE_TOOLS = frozenset(
    {
        "write_file",
        "edit_file",
        "bash_exec",
        "sql_query",
        "http_request",
        "web_search",
        "web_scraper",
        "wikipedia",
    }
)
#: §6.6: read-only lookups. Not in the default list; captured only when a
#: caller adds them to ``capture_tools`` explicitly (F6).
READ_ONLY_TOOLS = frozenset({"read_file", "list_files", "search_local"})

# --------------------------------------------------------------------------
# Records.
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fact:
    """One entry to save. ``type`` None lets the store infer it from the key (§2);
    it is set only where the spec fixes a type."""

    key: str
    value: str
    type: str | None = None


@dataclass(frozen=True, slots=True)
class ExtractionConfig:
    """Switches for each extraction mechanism (§6: each can be turned off).

    ``capture_tools`` is the §6.6 capture list. Tool names are compared exactly
    (case-sensitive). The memory tools (:data:`MEMORY_TOOLS`, aliases included)
    are never captured, even when listed. The read-only tools
    (:data:`READ_ONLY_TOOLS`) are left out of the default list and are captured
    only when a caller lists them explicitly.

    ``tool_results`` switches off the ``tool:<name>:<slug>`` entry only: the other
    mechanisms (markers, KEY lines, action, files) still scan the result of a
    captured tool while their own switches are on. ``thinking`` is honoured by
    :func:`extract_thinking`.
    """

    markers: bool = True
    key_lines: bool = True
    action: bool = True
    files: bool = True
    sections: bool = True
    tool_results: bool = True
    thinking: bool = True
    capture_tools: frozenset[str] = DEFAULT_CAPTURE_TOOLS

    def captures(self, tool_name: str) -> bool:
        """Whether results of ``tool_name`` are kept and scanned (§6.6)."""
        return tool_name in self.capture_tools and tool_name not in MEMORY_TOOLS


DEFAULT_CONFIG = ExtractionConfig()

# --------------------------------------------------------------------------
# Text primitives.
# --------------------------------------------------------------------------


def keep_first_per_key(facts: Iterable[Fact]) -> list[Fact]:
    """Drop every fact whose key was already produced: the first producer of a
    key wins (§6 intro)."""
    kept: dict[str, Fact] = {}
    for fact in facts:
        kept.setdefault(fact.key, fact)
    return list(kept.values())


def _fits(text: str, limit: int) -> bool:
    """``len(text.encode()) <= limit``, without encoding texts that cannot fit."""
    return len(text) <= limit and len(text.encode()) <= limit


def _with_leading_newline(text: str) -> str:
    """``text`` with a ``\\n`` in front, so that every line, the first included,
    starts right after a ``\\n``. Line-start patterns can then begin with the
    literal ``\\n``, which ``re`` finds fast, instead of testing ``^`` at every
    position (ten times slower on 10 MB)."""
    return "\n" + text


class _Budget:
    """How many more candidates a mechanism may examine in one text
    (:data:`MAX_CANDIDATES_PER_TEXT`)."""

    def __init__(self) -> None:
        self._left = MAX_CANDIDATES_PER_TEXT

    def spend(self) -> bool:
        """Use one candidate; False when none was left."""
        self._left -= 1
        return self._left >= 0


def _is_word_char(char: str) -> bool:
    """A regex ``\\w`` character: Unicode letter or digit, or ``_``."""
    return char == "_" or char.isalnum()


# After a verb: whitespace (§6.3, §6.4). Not "Fixed:" nor "**Fixed**": the
# contract is a verb followed by whitespace and text, nothing in between.
_AFTER_VERB = re.compile(f"(?=[{WS_CLASS}])")


class _VerbFinder:
    """Finds whole-word verbs, in any ASCII letter case, that are followed by
    whitespace, in text order (§6.3, §6.4).

    Whole word: not preceded by a word character, so ``reset`` does not hold
    ``set`` (F10); the whitespace after the verb (see ``_AFTER_VERB``) also
    rules out ``settings`` and ``src/read/x``.

    Why not one regex: Python's ``re`` tries a 16-way alternation at every
    position, which costs about a second per 10 MB; ``bytes.find`` per verb is
    two orders of magnitude faster. Each verb's next occurrence sits in a heap,
    so every verb's occurrences are found once in total: linear time.
    """

    def __init__(self, text: str, verbs: Iterable[str], budget: _Budget) -> None:
        self._text = text
        self._budget = budget
        # One byte per character (non-ASCII becomes b"?"), so byte offsets are
        # character offsets, and ASCII-only lowering makes the search
        # case-insensitive without matching look-alikes such as U+212A KELVIN SIGN.
        self._folded = text.encode("ascii", "replace").lower()
        self._next: list[tuple[int, bytes]] = []  # heap of (position, verb)
        for verb in verbs:
            self._push(verb.lower().encode(), 0)

    def _push(self, verb: bytes, start: int) -> None:
        position = self._folded.find(verb, start)
        if position != -1:
            heapq.heappush(self._next, (position, verb))

    def _verb_end(self, position: int, length: int) -> int | None:
        """End of the verb, or None when it is not a whole word followed by
        whitespace."""
        if position > 0 and _is_word_char(self._text[position - 1]):
            return None
        after = _AFTER_VERB.match(self._text, position + length)
        return None if after is None else after.end()

    def find(self, start: int) -> int | None:
        """The end of the first verb at or after ``start``, or None.
        ``start`` must not decrease between calls."""
        while self._next:
            position, verb = heapq.heappop(self._next)
            if position < start:
                self._push(verb, start)
                continue
            if not self._budget.spend():
                return None
            self._push(verb, position + 1)
            end = self._verb_end(position, len(verb))
            if end is not None:
                return end
        return None


# --------------------------------------------------------------------------
# §6.1 Markers.
# --------------------------------------------------------------------------


def extract_markers(text: str) -> list[Fact]:
    """``[MEMORY: key] value`` lines (§6.1).

    The marker may sit anywhere on its line; the first ``[MEMORY:`` of a line is
    its marker (a later one is part of the value) and the first ``]`` after it
    closes the key. Lines whose marker has no ``]``, an empty key or value, or a
    key over 1,024 bytes give nothing. Values are cut to
    :data:`UNBOUNDED_VALUE_LIMIT` bytes (the spec gives no bound). Repeated keys:
    the first wins.
    """
    return _markers(clean_text(text))


def _markers(text: str) -> list[Fact]:
    found: dict[str, Fact] = {}
    pos = 0
    # A find loop, not a regex: a regex retried at every "[MEMORY:" of a line
    # without "]" would rescan that line each time (quadratic).
    for _ in range(MAX_CANDIDATES_PER_TEXT):
        start = text.find(MARKER_OPEN, pos)
        if start == -1:
            break
        line_end = end_of_line(text, start)
        pos = line_end + 1  # one marker per line
        close = text.find(MARKER_CLOSE, start + len(MARKER_OPEN), line_end)
        if close == -1:
            continue
        key = trim(text[start + len(MARKER_OPEN) : close])
        value = trim(text[close + len(MARKER_CLOSE) : line_end])
        if key and value and _fits(key, MAX_KEY_BYTES) and key not in found:
            found[key] = Fact(key, truncate(value, UNBOUNDED_VALUE_LIMIT))
            if len(found) >= MAX_FACTS_PER_TEXT:
                break
    return list(found.values())


# --------------------------------------------------------------------------
# §6.2 KEY lines.
# --------------------------------------------------------------------------

# At the very start of a line (matched with the "\n" before it; no indentation):
# an upper-case ASCII letter and 2-40 more of [A-Z_], then ':'. The bounded
# repeat keeps backtracking tiny.
_KEY_LINE = re.compile(r"\n([A-Z][A-Z_]{2,40}):")


def extract_key_lines(text: str) -> list[Fact]:
    """``NAME: value`` lines (§6.2): key = lower(NAME), value = trimmed rest of
    the line; skipped when the value is empty or over 500 bytes. Repeated keys:
    the first wins."""
    return _key_lines(clean_text(text))


def _key_lines(text: str) -> list[Fact]:
    lines = _with_leading_newline(text)
    found: dict[str, Fact] = {}
    for match in islice(_KEY_LINE.finditer(lines), MAX_CANDIDATES_PER_TEXT):
        key = match.group(1).lower()
        value = trim(lines[match.end() : end_of_line(lines, match.end())])
        if value and _fits(value, KEY_LINE_VALUE_LIMIT) and key not in found:
            found[key] = Fact(key, value)
            if len(found) >= MAX_FACTS_PER_TEXT:
                break
    return list(found.values())


# --------------------------------------------------------------------------
# §6.3 Action sentence.
# --------------------------------------------------------------------------


def extract_action(response: str) -> list[Fact]:
    """``last_action`` from the first line holding an action verb followed by
    whitespace and text (§6.3); the value is the rest of that line, trimmed, with
    trailing ``.!;:`*_`` removed. When it is outside 5-200 bytes, the next line
    is tried (not a later verb on the same line)."""
    return _action(clean_text(response))


def _action_value(rest_of_line: str) -> str | None:
    """The §6.3 value from the text after the verb, or None when out of bounds."""
    value = trim(rest_of_line).rstrip(ACTION_TRAILING_CHARS)
    in_bounds = _fits(value, ACTION_MAX_BYTES) and len(value.encode()) >= ACTION_MIN_BYTES
    return value if in_bounds else None


def _action(text: str) -> list[Fact]:
    verbs = _VerbFinder(text, ACTION_VERBS, _Budget())
    pos = 0
    while (verb_end := verbs.find(pos)) is not None:
        line_end = end_of_line(text, verb_end)
        value = _action_value(text[verb_end:line_end])
        if value is not None:
            return [Fact(LAST_ACTION_KEY, value)]
        pos = line_end + 1
    return []


# --------------------------------------------------------------------------
# §6.4 File references.
# --------------------------------------------------------------------------


def extract_files(response: str) -> list[Fact]:
    """``last_files`` (§6.4): the distinct paths following the file verbs anywhere
    in the text, in order of first appearance, joined with ``", "``.

    After a verb (and an optional ``file``/``files``) come whitespace-separated
    tokens up to the end of the line: path-like tokens are taken, ``,`` and
    ``and`` are skipped once a path has been taken, and any other token ends the
    run. The value is cut to :data:`UNBOUNDED_VALUE_LIMIT` bytes (the spec gives
    no bound).
    """
    return _files(clean_text(response))


def _unwrap(token: str) -> str:
    """``token`` without one pair of surrounding backticks or quotes."""
    for opening, closing in PATH_WRAPPERS:
        if len(token) >= 2 and token.startswith(opening) and token.endswith(closing):
            return token[len(opening) : -len(closing)]
    return token


def _has_extension(text: str) -> bool:
    """Whether ``text`` ends in ``.`` and 1-8 ASCII letters or digits."""
    dot = text.rfind(".")
    extension = text[dot + 1 :]
    return (
        dot != -1
        and 1 <= len(extension) <= PATH_EXTENSION_MAX
        and extension.isascii()
        and extension.isalnum()
    )


def is_path_like(text: str) -> bool:
    """§6.4: holds ``/``, starts with ``~`` or ``.``, or ends in ``.<extension>``."""
    return "/" in text or text.startswith(("~", ".")) or _has_extension(text)


def path_token(token: str) -> str | None:
    """The path a whitespace-delimited token stands for, or None (§6.4): trailing
    ``.,;:)`` stripped first, then one pair of backticks or quotes."""
    path = _unwrap(token.rstrip(PATH_TRAILING_CHARS))
    return path if path and is_path_like(path) else None


def _is_connector(token: str) -> bool:
    """``,`` or ``and`` (any case) between two paths."""
    return token.rstrip(",").lower() in ("", "and")


def _path_run(text: str, start: int, end: int, budget: _Budget) -> Iterator[tuple[str, int]]:
    """The paths directly following a verb that ends at ``start``, on a line
    that ends at ``end``, each with the index just after its token."""
    taken_path = False
    for position, match in enumerate(NON_WS_RUN.finditer(text, start, end)):
        token = match.group()
        if not budget.spend():
            return
        if position == 0 and token.rstrip(PATH_TRAILING_CHARS).lower() in FILE_WORDS:
            continue
        if taken_path and _is_connector(token):
            continue
        path = path_token(token)
        if path is None:
            return
        taken_path = True
        yield path, match.end()


def _files(text: str) -> list[Fact]:
    budget = _Budget()  # shared by verb occurrences and the tokens after them
    verbs = _VerbFinder(text, FILE_VERBS, budget)
    paths: dict[str, None] = {}  # insertion-ordered set
    joined_bytes = -len(PATH_SEPARATOR)  # len(PATH_SEPARATOR.join(paths).encode())
    pos = 0
    line_end = -1  # end of the line being scanned, found once per line
    # Once the joined value is past its limit, more paths would be cut off anyway.
    while joined_bytes <= UNBOUNDED_VALUE_LIMIT and (verb_end := verbs.find(pos)) is not None:
        if verb_end > line_end:
            line_end = end_of_line(text, verb_end)
        pos = verb_end  # the next verb search starts after the paths taken here
        for path, token_end in _path_run(text, verb_end, line_end, budget):
            pos = token_end
            if path not in paths:
                paths[path] = None
                joined_bytes += len(PATH_SEPARATOR) + len(path.encode())
                if joined_bytes > UNBOUNDED_VALUE_LIMIT:
                    break
    if not paths:
        return []
    return [Fact(LAST_FILES_KEY, truncate(PATH_SEPARATOR.join(paths), UNBOUNDED_VALUE_LIMIT))]


# --------------------------------------------------------------------------
# §6.5 Sections (shared with compaction, §7).
# --------------------------------------------------------------------------

# Any line starting with "## " ends a section body (matched with its "\n").
_SECTION_START = re.compile("\n## ")


@lru_cache(maxsize=8)
def _header_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """A ``\\n`` and a line that is exactly ``## <name>`` plus trailing blanks."""
    alternatives = "|".join(re.escape(name) for name in names)
    return re.compile(f"\n## ({alternatives})[{WS_NOT_NEWLINE_CLASS}]*(?=\n|\\Z)")


def find_sections(text: str, names: Iterable[str]) -> dict[str, str]:
    """Trimmed bodies of the ``## <name>`` sections present in ``text``.

    A header is a line that is exactly ``## <name>`` (case-sensitive, no
    indentation, trailing whitespace allowed); the first such line of a name
    counts. Its body runs from the next line up to (not including) the next
    line starting with ``## `` (any header, known or not; ``### `` does not end
    it), or to the end of the text. A present header with an empty body maps to
    ``""``.
    """
    return _sections(clean_text(text), tuple(names))


def _sections(text: str, names: tuple[str, ...]) -> dict[str, str]:
    lines = _with_leading_newline(text)
    bodies: dict[str, str] = {}
    headers = _header_pattern(names).finditer(lines)
    for header in islice(headers, MAX_CANDIDATES_PER_TEXT):
        name = header.group(1)
        if name in bodies:
            continue
        # The header match stops before its line's "\n", so the body (starting
        # with that "\n", trimmed away) ends at the next "\n## ".
        next_section = _SECTION_START.search(lines, header.end())
        body_end = len(lines) if next_section is None else next_section.start()
        bodies[name] = trim(lines[header.end() : body_end])
        if len(bodies) == len(names):
            break  # later headers could only repeat a name
    return bodies


def extract_sections(response: str) -> list[Fact]:
    """§6.5: one fact per known ``## `` section whose body has at least 10 bytes,
    in :data:`SECTION_KEYS` order; the value is the body cut to 500 bytes."""
    return _section_facts(clean_text(response))


def _section_facts(text: str) -> list[Fact]:
    bodies = _sections(text, tuple(name for name, _ in SECTION_KEYS))
    facts: list[Fact] = []
    for name, key in SECTION_KEYS:
        body = bodies.get(name, "")
        if len(body.encode()) >= SECTION_MIN_BYTES:
            facts.append(Fact(key, truncate(body, SECTION_VALUE_LIMIT)))
    return facts


# --------------------------------------------------------------------------
# §6 Turn.
# --------------------------------------------------------------------------


def _explicit_facts(texts: tuple[str, ...], config: ExtractionConfig) -> list[Fact]:
    """Markers of every text, then KEY lines of every text (clean texts)."""
    facts: list[Fact] = []
    if config.markers:
        for text in texts:
            facts += _markers(text)
    if config.key_lines:
        for text in texts:
            facts += _key_lines(text)
    return facts


def _narrative_facts(text: str, config: ExtractionConfig) -> list[Fact]:
    """The action sentence, then the file references (clean text)."""
    facts: list[Fact] = []
    if config.action:
        facts += _action(text)
    if config.files:
        facts += _files(text)
    return facts


def extract_turn(
    user_input: str, response: str, config: ExtractionConfig = DEFAULT_CONFIG
) -> list[Fact]:
    """The facts of one turn (§6), without ``turn:last`` (see :func:`turn_record`).

    Producers run from most to least explicit, and the first producer of a key
    wins: markers (user input, then response), KEY lines (user input, then
    response), the action sentence, file references, sections (the last three
    scan the response only). The returned order is the batch order.
    """
    user_input, response = clean_text(user_input), clean_text(response)
    facts = _explicit_facts((user_input, response), config)
    facts += _narrative_facts(response, config)
    if config.sections:
        facts += _section_facts(response)
    return keep_first_per_key(facts)


# --------------------------------------------------------------------------
# §6.6 Tool results and §6.9 thinking.
# --------------------------------------------------------------------------

_NOT_SLUG_CHAR = re.compile("[^a-z0-9]")


def slug(text: str, empty: str = "output") -> str:
    """§6.6 slug of the first line of ``text``: trimmed, cut to 40 bytes at a
    character boundary, lowered, every character outside ``[a-z0-9]`` replaced by
    ``_``, ``_`` trimmed from both ends, cut to 30 bytes; ``empty`` when nothing
    is left. Used for tool results (``output``) and thinking (``round``)."""
    line = trim(first_line(text))
    replaced = _NOT_SLUG_CHAR.sub("_", cut_bytes(line, SLUG_SOURCE_BYTES).lower())
    # Only ASCII is left, so cutting characters cuts bytes.
    return replaced.strip("_")[:SLUG_BYTES] or empty


def tool_result_key(tool_name: str, result: str) -> str:
    """The §6.6 key of ``result`` (``tool:<tool name>:<slug>``, see ``keys``).
    Not bounded: a huge tool name gives a huge key, which
    :func:`extract_tool_result` refuses to produce."""
    return keys.tool_result_key(clean_text(tool_name), slug(result))


def extract_tool_result(
    tool_name: str, result: str, config: ExtractionConfig = DEFAULT_CONFIG
) -> list[Fact]:
    """The facts of one tool call (§6.6).

    Nothing for tools that are not captured (see :class:`ExtractionConfig`) or
    for an empty result. Otherwise: the ``tool:<name>:<slug>`` fact (type
    ``tool_result``, value cut to 300 bytes; skipped when the tool name makes the
    key longer than 1,024 bytes), then the result's markers, KEY lines, action
    sentence and file references, the first producer of a key winning.
    """
    if result == "" or not config.captures(tool_name):
        return []
    text = clean_text(result)
    facts: list[Fact] = []
    if config.tool_results:
        key = tool_result_key(tool_name, text)
        if _fits(key, MAX_KEY_BYTES):
            facts.append(Fact(key, truncate(text, TOOL_VALUE_LIMIT), TOOL_RESULT_TYPE))
    facts += _explicit_facts((text,), config)
    facts += _narrative_facts(text, config)
    return keep_first_per_key(facts)


def thinking_fact(text: str, now_ms: int) -> Fact | None:
    """``thinking:<now_ms>:<slug>`` (§6.9; slug ``round`` when empty), value cut to
    300 bytes, type ``thinking``; None for empty or whitespace-only text."""
    text = clean_text(text)
    if not trim(text):
        return None
    key = keys.thinking_key(now_ms, slug(text, empty="round"))
    return Fact(key, truncate(text, THINKING_VALUE_LIMIT), THINKING_TYPE)


def extract_thinking(
    text: str, now_ms: int, config: ExtractionConfig = DEFAULT_CONFIG
) -> list[Fact]:
    """:func:`thinking_fact` as a list, honouring ``config.thinking``."""
    fact = thinking_fact(text, now_ms) if config.thinking else None
    return [] if fact is None else [fact]


# --------------------------------------------------------------------------
# §6.10 Turn record.
# --------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# datetime covers years 1-9999; clamp so that no clock value can raise.
_MIN_SECONDS = int((datetime(1, 1, 1, tzinfo=timezone.utc) - _EPOCH).total_seconds())
_MAX_SECONDS = int(
    (datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc) - _EPOCH).total_seconds()
)


def iso_utc(now_ms: int) -> str:
    """Unix ms as ISO-8601 UTC with second precision, e.g. ``2026-11-29T19:45:59Z``
    (milliseconds are dropped, rounding down; years outside 1-9999 are clamped)."""
    seconds = min(max(now_ms // 1000, _MIN_SECONDS), _MAX_SECONDS)
    moment = _EPOCH + timedelta(seconds=seconds)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}Z"
    )


def turn_record(user_input: str, response: str, now_ms: int) -> Fact:
    """``turn:last`` (§6.10): ``turn at <ISO-8601 UTC> | input: <first 200
    characters> | response: <first 200 characters>``. The excerpts are cut by
    code points and kept as they are (line breaks included; rendering flattens
    them). Type left to the store (it infers ``note``)."""
    user_excerpt = clean_text(user_input[:TURN_EXCERPT_CHARS])
    response_excerpt = clean_text(response[:TURN_EXCERPT_CHARS])
    value = f"turn at {iso_utc(now_ms)} | input: {user_excerpt} | response: {response_excerpt}"
    return Fact(TURN_KEY, value)
