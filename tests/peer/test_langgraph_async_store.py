"""LangGraph's async store suite (langgraph-checkpoint-sqlite 3.1.2,
``tests/test_async_store.py``, vendored unchanged) against
:class:`AsyncMemboltStore` on a redb file; only ``AsyncSqliteStore`` is
swapped. Vector-search tests are marked in ``conftest.py``."""

from __future__ import annotations

from membolt.integrations.langgraph import AsyncMemboltStore, MemboltStore

from support.peer_suites import export, load, provide_as

# The suite imports its embeddings helper from the sync suite as tests.test_store.
provide_as(
    "tests.test_store",
    load(
        "langgraph_checkpoint_sqlite/tests/test_store.py",
        "peer_langgraph_store_for_async",
        SqliteStore=MemboltStore,
    ),
)
suite = load(
    "langgraph_checkpoint_sqlite/tests/test_async_store.py",
    "peer_langgraph_async_store",
    AsyncSqliteStore=AsyncMemboltStore,
)
globals().update(export(suite))
