"""LangGraph's async store suite (see test_langgraph_async_store.py) on
PostgreSQL: each store the suite opens is a new project of the session's
throwaway server."""

from __future__ import annotations

import pytest

from support.peer_suites import (
    AsyncMemboltStoreOnPostgres,
    MemboltStoreOnPostgres,
    export,
    load,
    provide_as,
)

pytestmark = pytest.mark.slow

provide_as(
    "tests.test_store",
    load(
        "langgraph_checkpoint_sqlite/tests/test_store.py",
        "peer_langgraph_store_for_async_postgres",
        SqliteStore=MemboltStoreOnPostgres,
    ),
)
suite = load(
    "langgraph_checkpoint_sqlite/tests/test_async_store.py",
    "peer_langgraph_async_store_postgres",
    AsyncSqliteStore=AsyncMemboltStoreOnPostgres,
)
globals().update(export(suite))


@pytest.fixture(autouse=True)
def _on_the_test_server(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AsyncMemboltStoreOnPostgres, "url", postgres_url)
