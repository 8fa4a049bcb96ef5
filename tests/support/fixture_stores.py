"""Store files the public API cannot make, committed under
``tests/fixtures/stores/`` (written by ``rust/tests/fixture_files.rs``)."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURE_STORES = Path(__file__).resolve().parent.parent / "fixtures" / "stores"


def copy_fixture_store(name: str, destination: Path) -> Path:
    """A private copy of the fixture store ``name`` (``foreign``, ``schema_1``,
    ``newer_schema``) at ``destination``."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURE_STORES / f"{name}.redb", destination)
    return destination
