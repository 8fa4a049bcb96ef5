"""Tests of compaction capture (§7, F7)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membolt import AgentMemory, MemoryStore
from membolt.compaction import (
    CHECKPOINT_KEY,
    bullet_fact,
    bullet_key,
    parse_summary,
)
from membolt.extract import MAX_FACTS_PER_TEXT, Fact

SUMMARY = """\
## Goal
Add a /users endpoint
with pagination

## Progress
Handlers written; tests pending.

## Key Decisions
- **Auth**: use JWT bearer tokens
- Storage: Postgres 16
- Use cursor pagination
- Caching: (none)

## Critical Context
- DB URL: postgres://localhost:5432/app
- (none)

## Next Steps
- Deploy: after review
"""


def values(facts: list[Fact]) -> dict[str, str]:
    return {fact.key: fact.value for fact in facts}


class TestCheckpoint:
    def test_full_summary(self) -> None:
        assert parse_summary(SUMMARY) == [
            Fact(
                "checkpoint:summary",
                "Goal: Add a /users endpoint with pagination"
                " | Progress: Handlers written; tests pending."
                " | Key Decisions: - **Auth**: use JWT bearer tokens - Storage: Postgres 16"
                " - Use cursor pagination - Caching: (none)"
                " | Critical Context: - DB URL: postgres://localhost:5432/app - (none)",
                "status",
            ),
            Fact("auth", "use JWT bearer tokens", "decision"),
            Fact("storage", "Postgres 16", "decision"),
            Fact("use_cursor_pagination", "Use cursor pagination", "decision"),
            Fact("db_url", "postgres://localhost:5432/app", "context"),
        ]

    def test_no_section_no_checkpoint(self) -> None:
        assert parse_summary("") == []
        assert parse_summary("Just prose.\n- Key: value\n## Next Steps\n- a: b") == []

    def test_parts_in_fixed_order_for_the_sections_present(self) -> None:
        summary = "## Critical Context\nprod is on v2\n## Goal\nship v3"
        assert parse_summary(summary) == [
            Fact(CHECKPOINT_KEY, "Goal: ship v3 | Critical Context: prod is on v2", "status")
        ]

    def test_single_section(self) -> None:
        assert values(parse_summary("## Progress\nhalf done")) == {
            CHECKPOINT_KEY: "Progress: half done"
        }

    def test_line_breaks_become_spaces(self) -> None:
        summary = "## Goal\r\nline one\r\nline two\rline three\nline four"
        assert values(parse_summary(summary)) == {
            CHECKPOINT_KEY: "Goal: line one line two line three line four"
        }

    def test_section_with_empty_body_is_left_out(self) -> None:
        assert parse_summary("## Goal\n\n## Progress\n   \n") == []
        assert values(parse_summary("## Goal\n## Progress\nsome")) == {
            CHECKPOINT_KEY: "Progress: some"
        }

    def test_part_body_cut_to_500_bytes(self) -> None:
        (fact,) = parse_summary("## Goal\n" + "x" * 600)
        assert fact.value == "Goal: " + "x" * 500 + "..."

    def test_headers_follow_section_rules(self) -> None:
        assert parse_summary("## goal\nlowercase is not a header") == []
        assert parse_summary(" ## Goal\nindented is not a header") == []
        assert values(parse_summary("## Goal  \t\nx\n## Goal\ny")) == {CHECKPOINT_KEY: "Goal: x"}

    def test_checkpoint_comes_first(self) -> None:
        summary = "## Key Decisions\n- a: 1\n## Goal\ng"
        facts = parse_summary(summary)
        assert [fact.key for fact in facts] == [CHECKPOINT_KEY, "a"]


class TestBullets:
    def test_f7_types(self) -> None:
        facts = parse_summary("## Key Decisions\n- a: 1\n## Critical Context\n- b: 2")
        assert [(fact.key, fact.type) for fact in facts] == [
            (CHECKPOINT_KEY, "status"),
            ("a", "decision"),
            ("b", "context"),
        ]

    def test_bullets_of_other_sections_are_ignored(self) -> None:
        summary = "## Goal\n- a: 1\n## Progress\n- b: 2\n## Other\n- c: 3"
        assert [fact.key for fact in parse_summary(summary)] == [CHECKPOINT_KEY]

    @pytest.mark.parametrize(
        ("item", "key", "value"),
        [
            ("Auth: JWT", "auth", "JWT"),
            ("**Auth**: JWT", "auth", "JWT"),
            ("**Auth:** JWT", "auth", "JWT"),
            ("Auth: **JWT** only", "auth", "JWT only"),
            ("a: b: c", "a", "b: c"),  # the first ": " splits
            ("  Padded  :   value  ", "padded", "value"),
            ("Use cursor pagination", "use_cursor_pagination", "Use cursor pagination"),
            ("url:http://x", "urlhttpx", "url:http://x"),  # ":" without a space
            ("API Version (v2): 2.1", "api_version_v2", "2.1"),
            ("co-op_mode: on", "co-op_mode", "on"),
            ("Größe: 5", "gre", "5"),
            ("Tab\tName: x", "tabname", "x"),
            ("Storage:", "storage", "Storage:"),  # no ": ", so key = value = text
        ],
    )
    def test_key_and_value(self, item: str, key: str, value: str) -> None:
        assert bullet_fact(item, "decision") == Fact(key, value, "decision")

    @pytest.mark.parametrize(
        "item",
        [
            "",
            "   ",
            "(none)",
            "(None)",
            "Caching: (none)",
            ": value",
            "Storage: ",
            "Storage:    ",
            "日本語: value",  # the key keeps no character
            "****",
        ],
    )
    def test_skipped(self, item: str) -> None:
        assert bullet_fact(item, "context") is None

    def test_key_cut_to_80_bytes(self) -> None:
        fact = bullet_fact("k" * 100 + ": v", "decision")
        assert fact is not None
        assert fact.key == "k" * 80

    def test_value_capped_at_2000_bytes(self) -> None:
        fact = bullet_fact("k: " + "v" * 3000, "decision")
        assert fact is not None
        assert fact.value == "v" * 2000 + "..."

    def test_bullet_key_rules(self) -> None:
        assert bullet_key("Hello World") == "hello_world"
        assert bullet_key("A.B/C:D") == "abcd"
        assert bullet_key("\u0130") == "i"  # lower() gives "i" + U+0307

    def test_only_dash_space_bullets(self) -> None:
        summary = "## Key Decisions\n* star: no\n-dash: no\n+ plus: no\n- yes: yes\n  - nested: yes"
        assert values(parse_summary(summary))["yes"] == "yes"
        assert [fact.key for fact in parse_summary(summary)[1:]] == ["yes", "nested"]

    def test_continuation_lines_are_ignored(self) -> None:
        summary = "## Key Decisions\n- a: first line\n  continued here\n- b: two"
        assert values(parse_summary(summary)[1:]) == {"a": "first line", "b": "two"}

    def test_first_bullet_of_a_key_wins(self) -> None:
        summary = "## Key Decisions\n- Auth: JWT\n- auth: sessions\n## Critical Context\n- AUTH: x"
        assert parse_summary(summary)[1:] == [Fact("auth", "JWT", "decision")]

    def test_bullet_key_never_is_the_checkpoint_key(self) -> None:
        facts = parse_summary("## Key Decisions\n- checkpoint:summary: x\n- checkpoint: summary")
        assert [fact.key for fact in facts] == [CHECKPOINT_KEY, "checkpointsummary", "checkpoint"]

    def test_at_most_max_facts_per_section(self) -> None:
        bullets = "".join(f"- k{i}: v\n" for i in range(MAX_FACTS_PER_TEXT + 10))
        facts = parse_summary("## Critical Context\n" + bullets)
        assert len(facts) == 1 + MAX_FACTS_PER_TEXT


FRAGMENTS = [
    "## Goal",
    "## Progress",
    "## Key Decisions",
    "## Critical Context",
    "## Other",
    "\n",
    "\r\n",
    "- ",
    "**",
    ": ",
    "(none)",
    " ",
    "\t",
    "\x00",
    "\x1c",
    "\u2028",
    "\ud800",
    "é",
    "世",
    "key",
    "Value",
]
hostile_summary = st.one_of(
    st.text(),
    st.lists(st.sampled_from(FRAGMENTS), max_size=80).map("".join),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=5)), max_size=50).map("".join),
)
BULLET_KEY = re.compile("[a-z0-9_-]{1,80}")


@settings(max_examples=500, deadline=None)
@given(hostile_summary)
def test_parse_summary_never_raises_and_is_well_formed(summary: str) -> None:
    facts = parse_summary(summary)
    if not facts:
        return
    checkpoint, *bullets = facts
    assert checkpoint.key == CHECKPOINT_KEY
    assert checkpoint.type == "status"
    assert len(checkpoint.value.encode()) <= 4 * (len("Critical Context: ") + 503) + 3 * 3
    checkpoint.value.encode()
    keys = [fact.key for fact in bullets]
    assert len(keys) == len(set(keys))
    for fact in bullets:
        assert BULLET_KEY.fullmatch(fact.key)
        assert fact.type in ("decision", "context")
        assert fact.value
        assert fact.value.lower() != "(none)"
        assert len(fact.value.encode()) <= 2003


@pytest.mark.parametrize(
    "summary",
    [
        pytest.param("## Key Decisions\n" + "- a: b\n" * 1_400_000, id="bullets"),
        pytest.param("## Progress\n" * 800_000, id="headers"),
        pytest.param("## Goal\n" + "x" * 10_000_000, id="one-huge-line"),
        pytest.param("## Critical Context\n" + "- " + "**" * 5_000_000, id="bold-bullet"),
    ],
)
def test_ten_megabytes(summary: str) -> None:
    facts = parse_summary(summary)
    assert len(facts) <= 1 + 2 * MAX_FACTS_PER_TEXT


# ---------------------------------------------------------------------------
# §7: re-capturing a summary keeps an existing bullet entry's references
# ---------------------------------------------------------------------------

RECAPTURED_SUMMARY = (
    "## Goal\nship the users endpoint\n"
    "## Key Decisions\n- **Use redb**: one file per project\n"
    "## Critical Context\n- Deploy target: fly.io\n"
)


def test_recapture_keeps_the_references_of_an_existing_bullet(store: MemoryStore) -> None:
    store.save("prompt:users", "ship it")
    store.save("use_redb", "sqlite", type="decision", references=["prompt:users"])
    store.save("deploy_target", "heroku", type="context", references=[])
    memory = AgentMemory(store)
    assert memory.auto_capture(RECAPTURED_SUMMARY) == 3
    decision = store.get("use_redb")
    context = store.get("deploy_target")
    assert decision is not None
    assert context is not None
    assert decision.value == "one file per project"
    assert context.value == "fly.io"
    # Existing entries keep their references: no link to the checkpoint added.
    assert decision.references == ("prompt:users",)
    assert context.references == ()
    assert store.children("checkpoint:summary") == []


def test_recapture_keeps_references_changed_after_the_first_capture(store: MemoryStore) -> None:
    memory = AgentMemory(store)
    assert memory.auto_capture(RECAPTURED_SUMMARY) == 3
    assert store.get("use_redb").references == ("checkpoint:summary",)  # type: ignore[union-attr]
    store.save("prompt:users", "ship it")
    store.unlink("use_redb", "checkpoint:summary")
    store.link("use_redb", "prompt:users")
    checkpoint_refs = store.get("checkpoint:summary").references  # type: ignore[union-attr]
    assert memory.auto_capture(RECAPTURED_SUMMARY.replace("one file", "a file")) == 3
    assert store.get("use_redb").value == "a file per project"  # type: ignore[union-attr]
    assert store.get("use_redb").references == ("prompt:users",)  # type: ignore[union-attr]
    assert store.get("deploy_target").references == ("checkpoint:summary",)  # type: ignore[union-attr]
    assert store.get("checkpoint:summary").references == checkpoint_refs  # type: ignore[union-attr]
