"""LangGraph's store suite (see test_langgraph_store.py) on PostgreSQL: each
store the suite opens, in memory or in a file, is a new project of the
session's throwaway server."""

from __future__ import annotations

import pytest

from support.peer_suites import MemboltStoreOnPostgres, export, load

pytestmark = pytest.mark.slow

suite = load(
    "langgraph_checkpoint_sqlite/tests/test_store.py",
    "peer_langgraph_store_postgres",
    SqliteStore=MemboltStoreOnPostgres,
)
globals().update(export(suite))


@pytest.fixture(autouse=True)
def _on_the_test_server(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MemboltStoreOnPostgres, "url", postgres_url)
