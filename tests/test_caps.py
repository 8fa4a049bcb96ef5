"""§6.7: the caps the extraction hooks apply in their transaction, and the
plain writes that never apply them (§1.3)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import membolt
from membolt import MemoryStore, extraction_caps


class TestCaps:
    def test_per_tool_cap_keeps_20_newest(self, store: MemoryStore) -> None:
        for i in range(25):
            store.save_many([(f"tool:bash_exec:run_{i:02d}", f"out {i}")], caps=extraction_caps)
        keys = [k for k in store.keys() if k.startswith("tool:bash_exec:")]
        assert keys == [f"tool:bash_exec:run_{i:02d}" for i in range(5, 25)]

    def test_per_tool_cap_is_per_tool(self, store: MemoryStore) -> None:
        store.save_many([(f"tool:a:r{i}", "x") for i in range(20)], caps=extraction_caps)
        store.save_many([(f"tool:a:b:r{i}", "x") for i in range(20)], caps=extraction_caps)
        assert len(store) == 40

    def test_thinking_cap(self, store: MemoryStore) -> None:
        for i in range(23):
            store.save_many([(f"thinking:{i:03d}:r", "t", "thinking")], caps=extraction_caps)
        assert [k for k in store.keys() if k.startswith("thinking:")] == [
            f"thinking:{i:03d}:r" for i in range(3, 23)
        ]

    def test_low_signal_cap_counts_notes_and_facts(self, store: MemoryStore) -> None:
        store.save("prompt:keep", "structural")
        for i in range(30):
            store.save(f"n{i:02d}", "note")
        for i in range(30):
            store.save(f"f{i:02d}", "fact", type="fact")
        assert len(store) == 61  # plain saves apply no cap
        store.save_many([("decision:x", "d")], caps=extraction_caps)
        low = [e for e in store.entries() if e.type in ("note", "fact")]
        assert len(low) == 50
        assert {e.key for e in low} == {f"n{i:02d}" for i in range(10, 30)} | {
            f"f{i:02d}" for i in range(30)
        }
        assert "prompt:keep" in store
        assert "decision:x" in store

    def test_caps_are_durable(self, store_path: str) -> None:
        store = MemoryStore(store_path)
        for i in range(30):
            store.save_many([(f"tool:t:r{i:02d}", "x")], caps=extraction_caps)
        del store
        import subprocess
        import sys

        out = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, membolt; s = membolt.MemoryStore(sys.argv[1]); print(len(s))",
                str(store_path),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        assert out.stdout.strip() == "20"

    def test_caps_off(self, store: MemoryStore) -> None:
        store.save_many([(f"tool:t:r{i:02d}", "x") for i in range(30)], caps=False)
        assert len(store) == 30

    def test_a_plain_save_many_deletes_nothing(self, store: MemoryStore) -> None:
        # §10 (0.2): the caps are the extraction hooks' policy; a caller's own
        # batch never prunes the caller's entries.
        for i in range(60):
            store.save(f"n{i:02d}", "a note of the user's")
        for i in range(25):
            store.save_many([(f"tool:t:r{i:02d}", "x"), (f"thinking:{i}:r", "t")])
        store.save_many([("bulk1", "one more")])
        assert len(store) == 60 + 25 * 2 + 1

    def test_caps_must_be_caps_or_a_function_giving_them(self, store: MemoryStore) -> None:
        with pytest.raises(membolt.ArgumentTypeError, match="sequence of Cap, not str"):
            store.save_many([("k", "v")], caps="yes")  # type: ignore[arg-type]
        with pytest.raises(membolt.ArgumentTypeError, match="hold Cap objects, not int"):
            store.save_many([("k", "v")], caps=lambda keys: [1])  # type: ignore[list-item]
        # True named the store's own policy before 0.3; the store has none now.
        with pytest.raises(membolt.ArgumentTypeError, match=r"membolt\.extraction_caps"):
            store.save_many([("k", "v")], caps=True)
        assert len(store) == 0

    def test_the_store_applies_the_caps_it_is_handed(self, store: MemoryStore) -> None:
        """Caps are data: a list of Cap, or a function of the batch's keys."""
        for i in range(5):
            store.save(f"n{i}", "a note")
        store.save_many([("k", "v", "decision")], caps=[membolt.Cap.types(["note"], 2)])
        assert sorted(store.keys()) == ["k", "n3", "n4"]
        seen: list[list[str]] = []

        def policy(keys: Sequence[str]) -> list[membolt.Cap]:
            seen.append(list(keys))
            return [membolt.Cap.keys_under("tool:x:", 1)]

        store.save_many([("tool:x:a", "1"), ("tool:x:b", "2")], caps=policy)
        assert seen == [["tool:x:a", "tool:x:b"]]
        assert [k for k in store.keys() if k.startswith("tool:x:")] == ["tool:x:b"]

    def test_the_hooks_apply_the_caps(self, store: MemoryStore) -> None:
        memory = membolt.AgentMemory(store)
        for i in range(25):
            memory.after_tool("bash_exec", "{}", f"run {i:02d} done")
        assert len([k for k in store.keys() if k.startswith("tool:bash_exec:")]) == 20
