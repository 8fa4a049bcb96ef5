"""LangGraph's store suite (langgraph-checkpoint-sqlite 3.1.2,
``tests/test_store.py``, vendored unchanged) against :class:`MemboltStore`
on a redb file: the suite's ``SqliteStore`` is the adapter, nothing else
changes. Its tests of SQLite internals and of vector search are marked in
``conftest.py``, each with its reason."""

from __future__ import annotations

from membolt.integrations.langgraph import MemboltStore

from support.peer_suites import export, load

suite = load(
    "langgraph_checkpoint_sqlite/tests/test_store.py",
    "peer_langgraph_store",
    SqliteStore=MemboltStore,
)
globals().update(export(suite))
