"""The word lists of docs/behaviour.md, copied literally from the contract.

Other tests loop over the implementation's own constants, so they cannot
notice an item dropped from one of them. Every list here is copied by hand
from docs/behaviour.md (never imported from membolt), and every item is checked
through public behaviour: which entry the ``<memory>`` block resumes from,
which error it reports, which entries a focus selects, what extraction
returns and what the agent integration captures.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from membolt import AgentMemory, MemoryStore, _core
from membolt.extract import Fact, extract_action, extract_files, extract_sections

# ---------------------------------------------------------------------------
# §5.5 done / not-done / reopened / resolved markers
# ---------------------------------------------------------------------------

# §5.5 is_done: "false if any not-done marker hits (...)".
SPEC_NOT_DONE_MARKERS = [
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
]
# §5.5 is_done: "else true if any done marker hits (...)".
SPEC_DONE_MARKERS = [
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
]
# §5.5 is_resolved: "false if any reopened marker hits (...)".
SPEC_REOPENED_MARKERS = [
    "reopened",
    "not fixed",
    "not resolved",
    "still failing",
    "still broken",
    "regressed",
]
# §5.5 is_resolved: "else true if any resolved marker hits (...)".
SPEC_RESOLVED_MARKERS = [
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
]


def resume_key(store: MemoryStore) -> str:
    """The key the ``<memory>`` block names as its resume point."""
    newest = max(entry.updated_at for entry in store.entries())
    map_line = store.render("", 500, now_ms=newest).split("\n")[2]
    resume = map_line.split("| resume: ", 1)[1]
    return resume.split(" (", 1)[0]


def error_key(store: MemoryStore) -> str | None:
    """The key the ``<memory>`` block reports as the newest unresolved error."""
    map_line = store.render("", 500, now_ms=0).split("\n")[2]
    if "| error: " not in map_line:
        return None
    return map_line.split("| error: ", 1)[1]


def case_forms(marker: str) -> list[str]:
    # Markers are tested on lower(value): any letter case hits.
    return [marker, marker.upper(), marker.title()]


def stores_per_case_form(tmp_path: Path, marker: str) -> Iterator[tuple[str, MemoryStore]]:
    """Each letter-case form of ``marker`` with a fresh store of its own."""
    for n, form in enumerate(case_forms(marker)):
        with MemoryStore(tmp_path / f"m{n}.redb") as store:
            yield form, store


@pytest.mark.parametrize("marker", SPEC_DONE_MARKERS)
def test_done_marker_makes_progress_done(tmp_path: Path, marker: str) -> None:
    for form, store in stores_per_case_form(tmp_path, marker):
        store.save("progress:old", "still going")
        store.save("progress:new", form)
        # A done entry is no resume point: the older, unfinished one is.
        assert resume_key(store) == "progress:old", form


@pytest.mark.parametrize("marker", SPEC_NOT_DONE_MARKERS)
def test_not_done_marker_wins_over_a_done_marker(tmp_path: Path, marker: str) -> None:
    for form, store in stores_per_case_form(tmp_path, marker):
        store.save("progress:old", "still going")
        store.save("progress:new", f"{form}, done")
        # "done" alone would make the entry done; the not-done marker keeps
        # it open, so the newest entry is the resume point.
        assert resume_key(store) == "progress:new", form


@pytest.mark.parametrize("marker", SPEC_NOT_DONE_MARKERS)
@pytest.mark.parametrize("entry_type", ["progress", "status", "result"])
def test_not_done_marker_alone_keeps_every_resume_type_open(
    store: MemoryStore, marker: str, entry_type: str
) -> None:
    store.save("progress:old", "still going")
    store.save(f"{entry_type}:new", marker, type=entry_type)
    assert resume_key(store) == f"{entry_type}:new"


@pytest.mark.parametrize("marker", SPEC_RESOLVED_MARKERS)
def test_resolved_marker_resolves_the_error(tmp_path: Path, marker: str) -> None:
    for form, store in stores_per_case_form(tmp_path, marker):
        store.save("error:old", "migrate step 3 panics")
        store.save("error:new", form)
        # A resolved error is skipped: the older one is reported.
        assert error_key(store) == "error:old", form


@pytest.mark.parametrize("marker", SPEC_RESOLVED_MARKERS)
def test_resolved_marker_alone_leaves_no_unresolved_error(store: MemoryStore, marker: str) -> None:
    store.save("error:only", marker)
    assert error_key(store) is None


@pytest.mark.parametrize("marker", SPEC_REOPENED_MARKERS)
def test_reopened_marker_wins_over_a_resolved_marker(tmp_path: Path, marker: str) -> None:
    for form, store in stores_per_case_form(tmp_path, marker):
        store.save("error:old", "migrate step 3 panics")
        store.save("error:new", f"{form}; fixed")
        # "fixed" alone would resolve it; the reopened marker keeps the
        # newest error unresolved.
        assert error_key(store) == "error:new", form


# ---------------------------------------------------------------------------
# §15.1 query stopwords (the §5.6 list and the §15.1 additions)
# ---------------------------------------------------------------------------

# Verbatim from §5.6 and §15.1.
FOCUS_STOPWORD_TEXT = """this that with from have what when where which would could should about
your please into then the and for are was you can how why who has had but not its out all any
one two now see off per via let did our yes too"""
MORE_STOPWORD_TEXT = """a an is are be been being do does i me my we us it he she they them his
her their there here of to in on at by as or if so than very just also will shall may might must"""
SPEC_STOPWORDS = sorted(set(FOCUS_STOPWORD_TEXT.split()) | set(MORE_STOPWORD_TEXT.split()))


def focus_kept_keys(store: MemoryStore, focus: str) -> list[str]:
    """Keys in a block with room for one of the two entries: the focus
    match, or with none the newest entry (the filler)."""
    block = store.render(focus, 35, now_ms=0).split("\n")
    return [line.split(" [", 1)[0] for line in block[3:-1]]


def test_spec_stopword_lists_are_complete() -> None:
    assert len(FOCUS_STOPWORD_TEXT.split()) == len(set(FOCUS_STOPWORD_TEXT.split())) == 47
    # "are" is on both lists.
    assert len(MORE_STOPWORD_TEXT.split()) == 43
    assert len(SPEC_STOPWORDS) == 47 + 43 - 1
    assert all(_core.query_terms(word) == [] for word in SPEC_STOPWORDS)


@pytest.mark.parametrize("word", SPEC_STOPWORDS)
def test_stopword_is_no_focus_word(store: MemoryStore, word: str) -> None:
    # The target's key and value both hold the stopword, so the word would
    # match it if it counted.
    store.save(f"{word}:target", f"{word} handler", type="decision", references=[])
    store.save("filler", "x" * 100, type="note", references=[])
    assert focus_kept_keys(store, "target") == [f"{word}:target"]  # a real word matches
    for form in (word, word.upper(), f"({word})", f"{word}?"):
        assert focus_kept_keys(store, form) == ["filler"], form
    # The stopword does not add to a real word's match either.
    assert focus_kept_keys(store, f"{word} handler") == [f"{word}:target"]


# ---------------------------------------------------------------------------
# §6.3 action verbs and §6.4 file verbs
# ---------------------------------------------------------------------------

SPEC_ACTION_VERBS = [
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
]
SPEC_FILE_VERBS = ["Edited", "Modified", "Created", "Read", "Wrote", "Updated", "Deleted"]


def test_spec_verb_lists_are_complete() -> None:
    assert len(SPEC_ACTION_VERBS) == 16
    assert len(SPEC_FILE_VERBS) == 7


@pytest.mark.parametrize("verb", SPEC_ACTION_VERBS)
def test_action_verb(verb: str) -> None:
    for form in (verb, verb.lower(), verb.upper()):
        response = f"Looking around first.\nWe {form} the rate limiter config.\n"
        assert extract_action(response) == [Fact("last_action", "the rate limiter config")], form
    # Whole words only (F10): the verb inside a longer word does not count.
    assert extract_action(f"We un{verb.lower()} the rate limiter config.") == []


@pytest.mark.parametrize("verb", SPEC_ACTION_VERBS)
def test_action_verb_through_after_turn(store: MemoryStore, verb: str) -> None:
    memory = AgentMemory(store)
    memory.after_turn("go", f"{verb} the rate limiter config.")
    entry = store.get("last_action")
    assert entry is not None
    assert entry.value == "the rate limiter config"
    assert entry.type == "action"


@pytest.mark.parametrize("verb", SPEC_FILE_VERBS)
def test_file_verb(verb: str) -> None:
    for form in (verb, verb.lower(), verb.upper()):
        text = f"I {form} src/api/handler.go and src/api/middleware.go today."
        assert extract_files(text) == [
            Fact("last_files", "src/api/handler.go, src/api/middleware.go")
        ], form
        assert extract_files(f"{form} file `~/.zshrc` to add paste.") == [
            Fact("last_files", "~/.zshrc")
        ], form


def test_updated_file_verb_with_a_comma_list() -> None:
    assert extract_files("Updated docs/README.md, setup.cfg") == [
        Fact("last_files", "docs/README.md, setup.cfg")
    ]


# ---------------------------------------------------------------------------
# §6.5 section headers
# ---------------------------------------------------------------------------

SPEC_SECTION_KEYS = [
    ("## Key Decisions", "decision:key-decisions"),
    ("## Progress", "progress:progress"),
    ("## Status", "status:status"),
    ("## Result", "result:result"),
    ("## Summary", "result:summary"),
    ("## Context", "context:context"),
    ("## Goal", "prompt:goal"),
]


@pytest.mark.parametrize(("header", "key"), SPEC_SECTION_KEYS)
def test_section_header_gives_its_key(header: str, key: str) -> None:
    response = f"Intro line.\n{header}\nthe body of this section\n## Other\nnot part of it\n"
    assert extract_sections(response) == [Fact(key, "the body of this section")]


@pytest.mark.parametrize(("header", "key"), SPEC_SECTION_KEYS)
def test_section_header_through_after_turn(store: MemoryStore, header: str, key: str) -> None:
    AgentMemory(store).after_turn("go", f"{header}\nthe body of this section\n")
    entry = store.get(key)
    assert entry is not None
    assert entry.value == "the body of this section"


def test_sections_are_processed_in_spec_order() -> None:
    response = "".join(f"{header}\nbody of {key}\n" for header, key in reversed(SPEC_SECTION_KEYS))
    assert extract_sections(response) == [
        Fact(key, f"body of {key}") for _, key in SPEC_SECTION_KEYS
    ]


# ---------------------------------------------------------------------------
# §6.6 the default capture list
# ---------------------------------------------------------------------------

SPEC_CAPTURED_TOOLS = [
    "write_file",
    "edit_file",
    "bash_exec",
    "sql_query",
    "http_request",
    "web_search",
    "web_scraper",
    "wikipedia",
]
SPEC_READ_ONLY_TOOLS = ["read_file", "list_files", "search_local"]
SPEC_MEMORY_TOOLS = [
    "memory_save",
    "memory_search",
    "memory_delete",
    "memory_list",
    "memory_query",
    "remember",
    "memorize",
    "recall",
    "forget",
]
# Would produce a marker, a KEY line, an action and a file reference if scanned.
SCANNABLE_RESULT = "contents\n[MEMORY: seen] yes\nOWNER: alice\nAdded a whole feature\nEdited a.py"


@pytest.mark.parametrize("tool", SPEC_CAPTURED_TOOLS)
def test_default_capture_list_tool_is_captured(store: MemoryStore, tool: str) -> None:
    memory = AgentMemory(store)
    assert memory.after_tool(tool, {}, SCANNABLE_RESULT) == 5
    entry = store.get(f"tool:{tool}:contents")
    assert entry is not None
    assert entry.type == "tool_result"
    assert entry.value == SCANNABLE_RESULT
    assert store.get("seen").value == "yes"  # type: ignore[union-attr]
    assert store.get("owner").value == "alice"  # type: ignore[union-attr]
    assert store.get("last_action").value == "a whole feature"  # type: ignore[union-attr]
    assert store.get("last_files").value == "a.py"  # type: ignore[union-attr]


@pytest.mark.parametrize("tool", SPEC_READ_ONLY_TOOLS + SPEC_MEMORY_TOOLS)
def test_read_only_and_memory_tools_get_no_extraction(store: MemoryStore, tool: str) -> None:
    memory = AgentMemory(store)
    assert memory.after_tool(tool, {}, SCANNABLE_RESULT) == 0
    assert len(store) == 0
