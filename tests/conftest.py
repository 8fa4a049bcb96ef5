"""Shared fixtures: every test gets its own store directory and MEMBOLT_HOME."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import membolt


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBOLT_HOME", str(tmp_path / "home"))


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "memory.redb"


@pytest.fixture
def store(store_path: Path) -> Iterator[membolt.MemoryStore]:
    with membolt.MemoryStore(store_path) as opened:
        yield opened
