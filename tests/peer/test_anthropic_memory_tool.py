"""The Anthropic SDK's memory-tool suite (anthropic 2.17.0,
``anthropic-2.17.0/tests/lib/tools/memory_tools/test_filesystem.py``, vendored unchanged)
against :class:`MemboltMemoryTool` and :class:`AsyncMemboltMemoryTool` on
a redb file.

The suite builds ``BetaLocalFilesystemMemoryTool(base_path=...)`` and reads
its results back from the folder (``get_directory_snapshot``; ``tool.
memory_root / name`` for bytes written behind the tool's back): those names
are swapped for the adapter on a store in ``base_path``, a snapshot of the
store's files and a path-like view of the store. The tests of file-system
matters (symbolic links, directory modes, the reference's private
``_validate_path``) are marked in ``conftest.py`` with their reasons."""

from __future__ import annotations

from support.peer_suites import export, load, store_in_folder, store_snapshot, tool_factories

sync_tool, async_tool = tool_factories(store_in_folder)
suite = load(
    "anthropic/tests/test_filesystem.py",
    "peer_anthropic_memory_tool",
    BetaLocalFilesystemMemoryTool=sync_tool,
    BetaAsyncLocalFilesystemMemoryTool=async_tool,
    get_directory_snapshot=store_snapshot,
)
globals().update(export(suite))
