"""LangGraph's store TTL suite (langgraph-checkpoint-sqlite 3.1.2,
``tests/test_ttl.py``, vendored unchanged) against :class:`MemboltStore`
and :class:`AsyncMemboltStore` on a redb file. It sleeps through real
expiries (about 40 s), so it runs on redb only; the TTL tests of
``tests/test_integrations_langgraph.py`` cover PostgreSQL with short TTLs."""

from __future__ import annotations

import pytest

from membolt.integrations.langgraph import AsyncMemboltStore, MemboltStore

from support.peer_suites import export, load

pytestmark = pytest.mark.slow

suite = load(
    "langgraph_checkpoint_sqlite/tests/test_ttl.py",
    "peer_langgraph_ttl",
    SqliteStore=MemboltStore,
    AsyncSqliteStore=AsyncMemboltStore,
)
globals().update(export(suite))
