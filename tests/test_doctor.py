"""The read-only integrity check behind `membolt doctor`."""

from __future__ import annotations

from pathlib import Path

import pytest

import membolt
from membolt import MemoryStore


def test_a_healthy_store(store: MemoryStore) -> None:
    store.save("prompt:x", "goal")
    store.save("note", "n", references=["prompt:x", "gone"])
    report = membolt._core._inspect(store.path)
    assert report["entries"] == 2
    assert report["problem_count"] == 0
    assert report["by_type"] == {"prompt": 1, "note": 1}
    assert any("1 referenced keys do not exist" in note for note in report["notes"])


def test_doctor_never_modifies_the_file(store: MemoryStore) -> None:
    store.save("k", "v")
    membolt._core._release_all()
    before = Path(store.path).read_bytes()
    membolt._core._inspect(store.path)
    assert Path(store.path).read_bytes() == before


def test_foreign_and_damaged_files(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.redb"
    membolt._core._write_test_fixture(str(foreign), "foreign")
    with pytest.raises(membolt.CorruptStoreError, match="without membolt's tables"):
        membolt._core._inspect(foreign)
    text = tmp_path / "text.redb"
    text.write_text("hello " * 500)
    with pytest.raises(membolt.CorruptStoreError):
        membolt._core._inspect(text)
    newer = tmp_path / "newer.redb"
    membolt._core._write_test_fixture(str(newer), "newer_schema")
    with pytest.raises(membolt.StoreVersionError):
        membolt._core._inspect(newer)


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.redb"
    empty.write_bytes(b"")
    report = membolt._core._inspect(empty)
    assert report["entries"] == 0
    assert report["problem_count"] == 0
