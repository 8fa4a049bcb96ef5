"""§2: the type of a new key is the first matching rule."""

from __future__ import annotations

import pytest

from membolt import MemoryStore, classify


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("tool:bash_exec:ok", "tool_result"),
        ("tool:anything_prompt", "tool_result"),  # rule 1 beats rule 5
        ("thinking:1:round", "thinking"),
        ("last_action", "action"),
        ("last_action_2", "note"),  # equality, not prefix; "action" matches nothing
        ("last_files", "file"),
        ("user_prompt", "prompt"),
        ("goal", "prompt"),
        ("subtask", "prompt"),
        ("purpose", "purpose"),
        ("why_redb", "purpose"),
        ("reason", "purpose"),
        ("progress:api", "progress"),
        ("wip", "progress"),
        ("in_progress", "progress"),
        ("status:ci", "status"),
        ("state", "status"),
        ("decision:db", "decision"),
        ("decided", "decision"),
        ("preference", "preference"),
        ("prefer_tabs", "preference"),
        ("likes", "preference"),
        ("error:migration", "error"),
        ("failure", "error"),
        ("bug_42", "error"),
        ("file", "file"),
        ("config_path", "file"),  # rule 12 (file) before rule 13 (context)
        ("dir", "file"),
        ("context", "context"),
        ("env", "context"),
        ("session:config", "context"),
        ("result:build", "result"),
        ("output", "result"),
        ("abandoned", "result"),  # contains "done"
        ("error_status", "status"),  # rule 8 before rule 11
        ("session:started", "note"),
        ("anything", "note"),
        ("", "note"),
    ],
)
def test_first_matching_rule(key: str, expected: str) -> None:
    assert classify(key) == expected


def test_matching_is_case_sensitive() -> None:
    assert classify("TOOL:x") == "note"
    assert classify("Goal") == "note"
    assert classify("ERROR") == "note"


def test_fact_is_never_inferred(store: MemoryStore) -> None:
    assert classify("fact") == "note"
    assert store.save("fact", "x").type == "note"
    assert store.save("f2", "x", type="fact").type == "fact"


def test_store_uses_classification_for_new_keys(store: MemoryStore) -> None:
    assert store.save("session:config", "{}").type == "context"
    assert store.save("config_path", "/etc").type == "file"
