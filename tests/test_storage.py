"""§1: where stores live, entries, writes, bad input."""

from __future__ import annotations

import math
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import membolt
from membolt import MemoryStore

from support.fixture_stores import copy_fixture_store


class TestLocation:
    @pytest.mark.parametrize(
        ("path", "encoded"),
        [
            ("/Users/joel/Projects/foo", "--Users-joel-Projects-foo--"),
            ("C:\\Users\\foo", "--C--Users-foo--"),
            ("relative/path", "--relative-path--"),
            ("", "----"),
            ("//\\\\lead", "--lead--"),
            ("a:b", "--a-b--"),
            ("keep spaces. and dots", "--keep spaces. and dots--"),
        ],
    )
    def test_encode_cwd(self, path: str, encoded: str) -> None:
        assert membolt.encode_cwd(path) == encoded

    def test_for_project_uses_membolt_home(self, tmp_path: Path) -> None:
        store = MemoryStore.for_project(cwd="/work/proj")
        expected = tmp_path / "home" / "--work-proj--" / "memory.redb"
        assert Path(store.path) == expected.resolve()

    def test_for_project_default_base_is_home(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("MEMBOLT_HOME")
        monkeypatch.setenv("HOME", str(tmp_path / "user"))
        path = membolt.project_store_path(cwd="/p")
        assert path == tmp_path / "user" / ".membolt" / "memory" / "--p--" / "memory.redb"

    def test_membolt_home_expands_a_tilde_and_refuses_a_relative_path(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HOME", str(tmp_path / "user"))
        monkeypatch.setenv("MEMBOLT_HOME", "~/memories")
        path = membolt.project_store_path(cwd="/p")
        assert path == tmp_path / "user" / "memories" / "--p--" / "memory.redb"
        monkeypatch.chdir(tmp_path)
        for relative in ("memories", "./memories", "../memories"):
            monkeypatch.setenv("MEMBOLT_HOME", relative)
            with pytest.raises(ValueError, match="MEMBOLT_HOME must be an absolute path"):
                MemoryStore.for_project(cwd="/p")
        assert not (tmp_path / "memories").exists()
        done = subprocess.run(
            [sys.executable, "-m", "membolt", "list"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "MEMBOLT_HOME": "relative/home"},
        )
        assert done.returncode == 1
        assert done.stderr.count("\n") == 1
        assert "MEMBOLT_HOME must be an absolute path" in done.stderr
        assert not (tmp_path / "relative").exists()

    def test_for_project_explicit_base_dir_and_working_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        project = tmp_path / "proj"
        project.mkdir()
        monkeypatch.chdir(project)
        store = MemoryStore.for_project(base_dir=tmp_path / "base")
        assert Path(store.path).parent.name == membolt.encode_cwd(str(project))

    @pytest.mark.smoke
    def test_directories_0700_and_file_0600(self, tmp_path: Path) -> None:
        store = MemoryStore.for_project(cwd="/x/y", base_dir=tmp_path / "b")
        store.save("k", "v")
        path = Path(store.path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE((tmp_path / "b").stat().st_mode) == 0o700

    def test_reading_a_missing_store_creates_no_file(self, store_path: Path) -> None:
        store = MemoryStore(store_path)
        assert len(store) == 0
        assert store.get("k") is None
        assert store.keys() == []
        assert not store_path.exists()

    def test_get_or_create_store_is_one_per_cwd(self, tmp_path: Path) -> None:
        a = membolt.get_or_create_store(tmp_path / "a")
        assert membolt.get_or_create_store(tmp_path / "a") is a
        assert membolt.get_or_create_store(tmp_path / "b") is not a


class TestEntry:
    @pytest.mark.smoke
    def test_fields_and_json_form(self, store: MemoryStore) -> None:
        e = store.save("decision:db", "use redb", namespace="ns", references=["x"])
        assert (e.key, e.value, e.type, e.namespace, e.references) == (
            "decision:db",
            "use redb",
            "decision",
            "ns",
            ("x",),
        )
        assert e.created_at == e.updated_at
        assert e.to_dict() == {
            "key": "decision:db",
            "value": "use redb",
            "namespace": "ns",
            "type": "decision",
            "references": ["x"],
            "createdAt": e.created_at,
            "updatedAt": e.updated_at,
        }

    def test_entry_is_frozen_and_comparable(self, store: MemoryStore) -> None:
        e = store.save("k", "v")
        with pytest.raises(AttributeError):
            e.value = "w"  # type: ignore[misc]
        assert store.get("k") == e
        assert hash(store.get("k")) == hash(e)
        assert e != store.save("k", "w")


class TestWrites:
    def test_new_key_gets_inferred_type_and_stamps(self, store: MemoryStore) -> None:
        e = store.save("task:main", "ship it")
        assert e.type == "prompt"
        assert e.created_at == e.updated_at > 0

    def test_overwrite_keeps_created_type_namespace_references(self, store: MemoryStore) -> None:
        first = store.save("notes", "a", type="fact", namespace="n", references=["p"])
        second = store.save("notes", "b")
        assert second.value == "b"
        assert second.created_at == first.created_at
        assert second.updated_at > first.updated_at
        assert (second.type, second.namespace, second.references) == ("fact", "n", ("p",))

    def test_overwrite_with_explicit_type_namespace_references(self, store: MemoryStore) -> None:
        store.save("notes", "a", references=["p"])
        e = store.save("notes", "b", type="", namespace="m", references=[])
        assert (e.type, e.namespace, e.references) == ("", "m", ())

    def test_explicit_empty_type_is_kept_as_is(self, store: MemoryStore) -> None:
        assert store.save("error_x", "v", type="").type == ""

    def test_explicit_references_drop_self_and_duplicates_keep_order(
        self, store: MemoryStore
    ) -> None:
        e = store.save("k", "v", references=["b", "k", "a", "b", "missing"])
        assert e.references == ("b", "a", "missing")

    def test_explicit_empty_references_means_no_parent(self, store: MemoryStore) -> None:
        store.save("prompt:x", "p")
        assert store.save("purpose:y", "why", references=[]).references == ()

    def test_updated_at_strictly_increases_within_a_millisecond(self, store: MemoryStore) -> None:
        stamps = [store.save(f"k{i}", "v").updated_at for i in range(50)]
        assert stamps == sorted(set(stamps))

    def test_clock_survives_deletes_and_reopen(self, store_path: Path) -> None:
        store = MemoryStore(store_path)
        last = store.save("k", "v").updated_at
        store.delete("k")
        store.close()
        reopened = MemoryStore(store_path)
        assert reopened.save("j", "v").updated_at > last

    def test_empty_value_is_allowed_in_the_api(self, store: MemoryStore) -> None:
        assert store.save("k", "").value == ""

    def test_delete(self, store: MemoryStore) -> None:
        store.save("k", "v")
        assert store.delete("k") is True
        assert store.delete("k") is False
        assert "k" not in store
        assert store.get("k") is None

    def test_keys_entries_len_contains_sorted(self, store: MemoryStore) -> None:
        for key in ["b", "a", "c"]:
            store.save(key, key)
        assert store.keys() == ["a", "b", "c"]
        assert [e.key for e in store.entries()] == ["a", "b", "c"]
        assert len(store) == 3
        assert "a" in store
        assert 3 not in store

    @pytest.mark.smoke
    def test_batch_commits_together(self, store: MemoryStore) -> None:
        store.save("old", "x")
        with store.batch() as b:
            b.save("a", "1")
            b.save("b", "2", type="fact")
            b.delete("old")
            b.link("b", "a")
        assert store.keys() == ["a", "b"]
        assert store.get("b").references == ("a",)  # type: ignore[union-attr]
        assert b.results[2] is True

    def test_batch_exception_commits_nothing(self, store: MemoryStore) -> None:
        with pytest.raises(RuntimeError), store.batch() as b:
            b.save("a", "1")
            raise RuntimeError("boom")
        assert "a" not in store

    def test_batch_failing_operation_commits_nothing(self, store: MemoryStore) -> None:
        store.save("keep", "x")
        with pytest.raises(KeyError), store.batch() as b:
            b.save("a", "1")
            b.delete("keep")
            b.link("a", "missing")
        assert store.keys() == ["keep"]

    def test_nested_batch_joins_the_outer_one(self, store: MemoryStore) -> None:
        with pytest.raises(RuntimeError), store.batch():
            with store.batch() as inner:
                inner.save("n2", "1")
            assert "n2" not in store  # not written yet: it joined the outer batch
            raise RuntimeError("boom")
        assert "n2" not in store
        with store.batch() as outer:
            outer.save("a", "1")
            with store.batch() as inner:
                inner.save("b", "2")
                inner.link("b", "a")
        assert store.get("b").references == ("a",)  # type: ignore[union-attr]

    @pytest.mark.parametrize(
        ("items", "then", "error", "message"),
        [
            (["ab"], (), membolt.ArgumentTypeError, "save_many item must be a tuple, not str"),
            ([{"key": "k", "value": "v"}], (), membolt.ArgumentTypeError, "not dict"),
            ([("a",)], (), ValueError, "must have 2 to 4 fields, not 1"),
            ([("a", "1", None, None, "x")], (), ValueError, "must have 2 to 4 fields, not 5"),
            ([("a", "1")], ["cd"], membolt.ArgumentTypeError, "then item must be a tuple"),
            ([("a", "1")], [("c", "d", "e")], ValueError, "then item must have 2 fields"),
            ([1], (), membolt.ArgumentTypeError, "not int"),
        ],
    )
    def test_save_many_refuses_malformed_items(
        self, store: MemoryStore, items: list[object], then: object, error: type, message: str
    ) -> None:
        with pytest.raises(error, match=message):
            store.save_many(items, then=then)  # type: ignore[arg-type]
        assert len(store) == 0

    def test_closed_store_raises(self, store_path: Path) -> None:
        store = MemoryStore(store_path)
        store.save("k", "v")
        store.close()
        with pytest.raises(membolt.StoreError, match="closed"):
            store.get("k")
        assert MemoryStore(store_path).get("k") is not None


class TestBadInput:
    @pytest.mark.parametrize(
        ("key", "error", "message"),
        [
            ("", ValueError, "key must not be empty"),
            ("k" * 1025, ValueError, "1025 bytes"),
            ("é" * 513, ValueError, "1026 bytes"),
            (1, ValueError, "key must be a str"),
            (None, ValueError, "key must be a str"),
            (b"k", TypeError, "key must be a str"),
        ],
    )
    def test_bad_keys_write_nothing(
        self, store: MemoryStore, key: object, error: type[Exception], message: str
    ) -> None:
        with pytest.raises(error, match=message):
            store.save(key, "v")  # type: ignore[arg-type]
        assert len(store) == 0

    def test_lone_surrogates_are_named(self, store: MemoryStore) -> None:
        with pytest.raises(ValueError, match="key holds a lone UTF-16 surrogate"):
            store.save("k\ud800", "v")
        with pytest.raises(ValueError, match="value holds a lone UTF-16 surrogate"):
            store.save("k", "\udfff")
        with pytest.raises(ValueError, match="focus holds a lone UTF-16 surrogate"):
            store.render("\ud800")
        assert len(store) == 0

    def test_numbers_are_ints_and_beyond_64_bits_clamp(self, store: MemoryStore) -> None:
        store.save("k", "v")
        # A budget or a clock past 64 bits means the same as the largest one.
        assert store.render("", 2**64, 2**64) == store.render("", 2**63 - 1, 2**63 - 1)
        assert store.render("", -(2**70)) == store.render("", -1)
        assert store.newest_keys(10**30) == ["k"]
        assert membolt.truncate("abcdef", 2**70) == "abcdef"
        for call in (
            lambda: store.render("", 1.5),
            lambda: store.render(1),
            lambda: store.graph(1),
            lambda: membolt.classify(5),
        ):
            with pytest.raises(membolt.ArgumentTypeError):
                call()  # type: ignore[no-untyped-call]
        for call in (
            lambda: store.newest_keys(-1),
            lambda: store.search_ranked("k", -1),
            lambda: membolt.truncate("abc", -1),
            lambda: membolt.AgentMemory(store).query("1", memory_cap=-1),
        ):
            with pytest.raises(ValueError, match="must not be negative"):
                call()  # type: ignore[no-untyped-call]

    def test_key_of_exactly_1024_bytes_is_fine(self, store: MemoryStore) -> None:
        assert store.save("k" * 1024, "v").key == "k" * 1024

    @pytest.mark.parametrize("value", [1, None, b"v", ["v"]])
    def test_non_string_value(self, store: MemoryStore, value: object) -> None:
        with pytest.raises(ValueError, match="value must be a str"):
            store.save("k", value)  # type: ignore[arg-type]
        assert len(store) == 0

    def test_bad_references_and_types(self, store: MemoryStore) -> None:
        with pytest.raises(TypeError, match="references must be a list"):
            store.save("k", "v", references="abc")
        with pytest.raises(ValueError, match="reference must not be empty"):
            store.save("k", "v", references=[""])
        with pytest.raises(TypeError, match="type must be a str"):
            store.save("k", "v", type=3)  # type: ignore[arg-type]
        assert len(store) == 0

    def test_bad_item_in_save_many_writes_nothing(self, store: MemoryStore) -> None:
        with pytest.raises(ValueError, match="key must not be empty"):
            store.save_many([("a", "1"), ("", "2")])
        assert len(store) == 0

    def test_bad_path(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="directory"):
            MemoryStore(tmp_path)
        os.mkfifo(tmp_path / "fifo")
        for special in (tmp_path / "fifo", Path("/dev/zero")):
            with pytest.raises(ValueError, match="is not a regular file"):
                MemoryStore(special)
        for timeout in (-1, math.nan, math.inf, 1e300):
            with pytest.raises(ValueError, match="timeout must be a number of seconds"):
                MemoryStore(tmp_path / "m.redb", timeout=timeout)


class TestForeignAndCorruptFiles:
    def _assert_untouched(self, path: Path, before: bytes, error: type[Exception]) -> None:
        with pytest.raises(error, match=str(path)):
            MemoryStore(path).get("k")
        with pytest.raises(error):
            MemoryStore(path).save("k", "v")
        assert path.read_bytes() == before

    def test_text_file(self, tmp_path: Path) -> None:
        path = tmp_path / "notes.redb"
        path.write_text("hello, not a database\n" * 100)
        self._assert_untouched(path, path.read_bytes(), membolt.CorruptStoreError)
        assert not path.with_name("notes.redb.sync").exists()  # no file of ours beside it

    def test_truncated_store(self, store_path: Path) -> None:
        MemoryStore(store_path).save("k", "v" * 1000)
        membolt._core._release_all()
        data = store_path.read_bytes()
        store_path.write_bytes(data[:100])
        self._assert_untouched(store_path, data[:100], membolt.CorruptStoreError)

    def test_damaged_pages(self, store_path: Path) -> None:
        store = MemoryStore(store_path)
        for i in range(200):
            store.save(f"key{i}", f"value {i} " * 20)
        # Drop the handle (and with it this process's mirror): the damage is
        # done behind membolt's back, as another program would.
        del store
        data = bytearray(store_path.read_bytes())
        for offset in range(8192, len(data), 97):
            data[offset] ^= 0xFF
        store_path.write_bytes(bytes(data))
        self._assert_untouched(store_path, bytes(data), membolt.CorruptStoreError)

    def test_foreign_redb_database(self, tmp_path: Path) -> None:
        path = tmp_path / "other.redb"
        copy_fixture_store("foreign", path)
        self._assert_untouched(path, path.read_bytes(), membolt.CorruptStoreError)
        assert not path.with_name("other.redb.sync").exists()

    def test_newer_schema_is_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "future.redb"
        copy_fixture_store("newer_schema", path)
        before = path.read_bytes()
        with pytest.raises(membolt.StoreVersionError, match="newer membolt"):
            MemoryStore(path).get("k")
        with pytest.raises(membolt.StoreVersionError):
            MemoryStore(path).save("k", "v")
        assert path.read_bytes() == before
        assert not path.with_name("future.redb.sync").exists()

    def test_empty_file_is_a_new_store(self, store_path: Path) -> None:
        store_path.parent.mkdir(parents=True)
        store_path.write_bytes(b"")
        store = MemoryStore(store_path)
        assert len(store) == 0
        store.save("k", "v")
        assert store.get("k") is not None
