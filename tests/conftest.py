"""Shared fixtures: every test gets its own store directory and MEMBOLT_HOME.

The ``store`` fixture is parametrised over the media (§12): each test that
uses it runs on a redb file and on a fresh project of a throwaway PostgreSQL
server (one per session, see support/postgres_server.py). A test about
files (bytes on disk, the journal, doctor, file modes) is marked
``@pytest.mark.redb_only`` and runs on the file only.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import membolt

from support.postgres_server import PostgresMissingError, PostgresServer

MEDIA = ("redb", "postgres")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBOLT_HOME", str(tmp_path / "home"))
    # A developer's team settings must not leak into the tests.
    monkeypatch.delenv(membolt.store.DATABASE_URL_VARIABLE, raising=False)
    monkeypatch.delenv(membolt.store.PROJECT_VARIABLE, raising=False)
    monkeypatch.delenv("MEMBOLT_EMBEDDER", raising=False)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "medium" in metafunc.fixturenames:
        redb_only = metafunc.definition.get_closest_marker("redb_only") is not None
        metafunc.parametrize("medium", MEDIA[:1] if redb_only else MEDIA)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's throwaway server. Without PostgreSQL binaries this is a
    failure (CI must not pass without the §12 tests), unless a local run
    sets ``MEMBOLT_SKIP_POSTGRES=1`` outside CI."""
    try:
        server = PostgresServer()
    except PostgresMissingError as missing:
        if os.environ.get("MEMBOLT_SKIP_POSTGRES") == "1" and not os.environ.get("CI"):
            pytest.skip(str(missing))
        pytest.fail(str(missing), pytrace=False)
    try:
        server.start()
        yield server
    finally:
        server.destroy()


@pytest.fixture
def project() -> str:
    """A project no other test uses (projects are isolated, §12)."""
    return f"test-{uuid.uuid4().hex}"


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    return postgres_server.url()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "memory.redb"


@pytest.fixture
def store(
    medium: str, store_path: Path, request: pytest.FixtureRequest
) -> Iterator[membolt.MemoryStore]:
    if medium == "postgres":
        url = request.getfixturevalue("postgres_url")
        opened = membolt.MemoryStore(url, project=request.getfixturevalue("project"))
    else:
        opened = membolt.MemoryStore(store_path)
    with opened:
        yield opened
