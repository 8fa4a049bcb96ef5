"""The Anthropic SDK's memory-tool suite (see test_anthropic_memory_tool.py)
on PostgreSQL: each tool's store is a new project of the session's
throwaway server."""

from __future__ import annotations

import pytest

from support.peer_suites import PostgresProjects, export, load, store_snapshot, tool_factories

pytestmark = pytest.mark.slow

sync_tool, async_tool = tool_factories(PostgresProjects.open)
suite = load(
    "anthropic/tests/test_filesystem.py",
    "peer_anthropic_memory_tool_postgres",
    BetaLocalFilesystemMemoryTool=sync_tool,
    BetaAsyncLocalFilesystemMemoryTool=async_tool,
    get_directory_snapshot=store_snapshot,
)
globals().update(export(suite))


@pytest.fixture(autouse=True)
def _on_the_test_server(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PostgresProjects, "url", postgres_url)
