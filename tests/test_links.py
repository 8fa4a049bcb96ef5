"""§3: the memory graph: wanted parent types, auto parents, the links of a
batch, explicit links."""

from __future__ import annotations

import pytest

from membolt import MemoryStore, parent_type


@pytest.mark.parametrize(
    ("child", "parent"),
    [
        ("prompt", None),
        ("purpose", "prompt"),
        ("context", "prompt"),
        ("preference", "prompt"),
        ("progress", "result"),
        ("status", "result"),
        ("file", "result"),
        ("decision", "result"),
        ("fact", "result"),
        ("note", "result"),
        ("tool_result", "progress"),
        ("result", "tool_result"),
        ("action", "tool_result"),
        ("error", "tool_result"),
        ("thinking", None),
        ("custom", None),
        ("", None),
    ],
)
def test_parent_type_table(child: str, parent: str | None) -> None:
    assert parent_type(child) == parent


class TestAutoParent:
    def test_empty_store_gives_no_parent(self, store: MemoryStore) -> None:
        assert store.save("prompt:build", "x").references == ()

    def test_newest_of_the_wanted_type(self, store: MemoryStore) -> None:
        store.save("prompt:a", "x")
        store.save("prompt:b", "x")
        store.save("note1", "x")
        assert store.save("purpose:y", "x").references == ("prompt:b",)

    def test_falls_back_to_the_newest_entry(self, store: MemoryStore) -> None:
        store.save("prompt:a", "x")
        store.save("note1", "x")
        # a tool result wants a progress entry; there is none
        assert store.save("tool:x:y", "x").references == ("note1",)

    def test_types_without_wanted_parent_link_to_newest(self, store: MemoryStore) -> None:
        store.save("note1", "x")
        assert store.save("prompt:p", "x").references == ("note1",)
        assert store.save("thinking:1:a", "x").references == ("prompt:p",)

    def test_explicit_type_decides_the_parent(self, store: MemoryStore) -> None:
        store.save("prompt:p", "x")
        store.save("result:r", "x")
        assert store.save("k", "x", type="purpose").references == ("prompt:p",)

    def test_golden_chain(self, store: MemoryStore) -> None:
        store.save("prompt:build", "Add /users endpoint")
        store.save("tool:write_users", "wrote handlers/users.go")
        store.save("result:build", "compiles; tests pending")
        store.save("status:ci", "waiting on CI")
        store.save("error:migration", "migrate step 3 panics on nil column")
        refs = {e.key: e.references for e in store.entries()}
        assert refs == {
            "prompt:build": (),
            "tool:write_users": ("prompt:build",),
            "result:build": ("tool:write_users",),
            "status:ci": ("result:build",),
            "error:migration": ("tool:write_users",),
        }

    def test_overwrite_gets_no_new_link(self, store: MemoryStore) -> None:
        store.save("note1", "x")
        store.save("result:r", "x")
        store.save("note1", "y")
        assert store.get("note1").references == ()  # type: ignore[union-attr]


class TestSaveMany:
    def test_chain_and_tool_fan_out(self, store: MemoryStore) -> None:
        store.save("progress:p", "working")
        saved = store.save_many(
            [
                ("decision:a", "use redb"),
                ("tool:bash_exec:ok", "ok"),
                ("last_action", "ran tests"),
                ("note_x", "n"),
            ]
        )
        refs = [e.references for e in saved]
        assert refs == [
            # first entry: its auto parent (decision wants result; none; newest)
            ("progress:p",),
            # tool results fan out from their type parent
            ("progress:p",),
            # every later non-tool entry links to the previous key
            ("tool:bash_exec:ok",),
            ("last_action",),
        ]

    def test_existing_keys_keep_created_and_references(self, store: MemoryStore) -> None:
        old = store.save("decision:a", "v1", references=["x"])
        saved = store.save_many([("note_y", "n"), ("decision:a", "v2")])
        assert saved[1].references == ("x",)
        assert saved[1].created_at == old.created_at
        assert saved[1].value == "v2"

    def test_every_entry_gets_its_own_increasing_stamp(self, store: MemoryStore) -> None:
        saved = store.save_many([(f"k{i}", "v") for i in range(30)], caps=False)
        stamps = [e.updated_at for e in saved]
        assert stamps == sorted(set(stamps))

    def test_explicit_types(self, store: MemoryStore) -> None:
        saved = store.save_many([("k", "v", "decision"), ("j", "w", None)])
        assert [e.type for e in saved] == ["decision", "note"]


class TestExplicitLinks:
    def test_link_requires_both_keys(self, store: MemoryStore) -> None:
        store.save("a", "x")
        with pytest.raises(KeyError, match="b"):
            store.link("a", "b")
        with pytest.raises(KeyError, match="c"):
            store.link("c", "a")

    def test_self_link_is_a_value_error(self, store: MemoryStore) -> None:
        store.save("a", "x")
        with pytest.raises(ValueError, match="itself"):
            store.link("a", "a")

    def test_link_bumps_updated_at_duplicate_changes_nothing(self, store: MemoryStore) -> None:
        store.save("a", "x", references=[])
        b = store.save("b", "x", references=[])
        assert store.link("b", "a") is True
        linked = store.get("b")
        assert linked is not None
        assert linked.updated_at > b.updated_at
        assert linked.references == ("a",)
        assert store.link("b", "a") is False
        assert store.get("b") == linked

    def test_unlink(self, store: MemoryStore) -> None:
        store.save("a", "x", references=[])
        store.save("b", "x", references=["a"])
        before = store.get("b")
        assert store.unlink("b", "zzz") is False
        assert store.unlink("missing", "a") is False
        assert store.get("b") == before
        assert store.unlink("b", "a") is True
        after = store.get("b")
        assert after is not None
        assert after.references == ()
        assert before is not None
        assert after.updated_at > before.updated_at

    def test_cycles_are_allowed(self, store: MemoryStore) -> None:
        store.save("a", "x", references=[])
        store.save("b", "x", references=["a"])
        store.link("a", "b")
        assert store.parents("a") == ["b"]
        assert store.parents("b") == ["a"]

    def test_parents_and_children(self, store: MemoryStore) -> None:
        store.save("p1", "x", references=[])
        store.save("p2", "x", references=[])
        store.save("c2", "x", references=["p2", "gone", "p1"])
        store.save("c1", "x", references=["p2"])
        assert store.parents("c2") == ["p2", "p1"]  # stored order, missing skipped
        assert store.children("p2") == ["c1", "c2"]  # sorted
        assert store.parents("nope") == []
        assert store.children("nope") == []
        store.delete("p1")
        assert store.get("c2").references == ("p2", "gone", "p1")  # type: ignore[union-attr]
        assert store.parents("c2") == ["p2"]
        assert store.children("p1") == []
