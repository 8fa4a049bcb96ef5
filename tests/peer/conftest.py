"""The peers' suites: their files stay under vendor/ (not collected there);
each test_*.py here loads one with membolt's adapter swapped in.

Every test of a suite that does not pass is marked below with its reason:
``skip`` for a test of the peer's own machinery that has no counterpart in
a membolt store (SQLite internals, a file system's links and modes), and a
strict ``xfail`` for a test that fails for a reason stated here (a test
that starts passing then fails the run, so the table stays true)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import peer_suites

collect_ignore = ["vendor"]

_SQLITE = "tests SQLite internals (its migrations, GLOB escaping, SQL it generates), not a store"
_SYMLINK = (
    "symbolic links in the tool's folder: a store has no links to follow; "
    "paths are normalised and '..' out of /memories is refused (tested above)"
)
#: (suite, class or "", test) -> (outcome, reason). The suite is the test
#: module's name less ``test_`` and ``_postgres`` (``langgraph_*``: all of
#: LangGraph's); the class ``"*"`` is any class.
MARKS: dict[tuple[str, str, str], tuple[str, str]] = {
    ("langgraph_store", "*", "test_nonnull_migrations"): ("skip", _SQLITE),
    ("langgraph_store", "*", "test_escape_glob_literal"): ("skip", _SQLITE),
    ("langgraph_store", "*", "test_namespace_match_pattern"): ("skip", _SQLITE),
    ("langgraph_store", "*", "test_list_namespaces_prefix_uses_indexable_condition"): (
        "skip",
        _SQLITE,
    ),
    ("langgraph_store", "*", "test_vector_store_initialization"): (
        "xfail",
        "its checks of the index config and store.embeddings pass; then it runs SQL on "
        "store.conn (sqlite_master) to find the SQLite store's vector tables, and a "
        "membolt store has no SQLite connection",
    ),
    (
        "anthropic_memory_tool",
        "*",
        "test_mkdir_parents_not_world_writable_under_permissive_umask",
    ): (
        "skip",
        "the modes of the tool's directories: the store's file and directory modes are "
        "§1.1's (0o600, 0o700)",
    ),
    ("anthropic_memory_tool", "*", "test_validate_path_returns_resolved_path_not_symlink_target"): (
        "skip",
        _SYMLINK,
    ),
    ("anthropic_memory_tool", "*", "test_read_rejects_symlink_created_after_validation"): (
        "skip",
        _SYMLINK,
    ),
    ("anthropic_memory_tool", "*", "test_read_rejects_file_replaced_with_symlink_before_open"): (
        "skip",
        _SYMLINK,
    ),
    (
        "anthropic_memory_tool",
        "*",
        "test_view_rejects_directory_symlink_created_after_validation",
    ): (
        "skip",
        _SYMLINK,
    ),
    (
        "anthropic_memory_tool",
        "*",
        "test_symlink_validation_reject_symlink_pointing_outside_memories",
    ): (
        "skip",
        _SYMLINK,
    ),
    (
        "anthropic_memory_tool",
        "*",
        "test_view_lists_symlinks_only_when_they_stay_inside_memories",
    ): (
        "skip",
        _SYMLINK,
    ),
    (
        "anthropic_memory_tool",
        "*",
        "test_symlink_validation_reject_creating_files_through_symlink_pointing_outside",
    ): ("skip", _SYMLINK),
    (
        "anthropic_memory_tool",
        "*",
        "test_symlink_validation_reject_parent_directory_that_is_symlink_pointing_outside",
    ): ("skip", _SYMLINK),
}
#: The exception an xfail test must fail with (any, when not listed): its
#: earlier checks failing instead fails the run.
RAISES: dict[str, type[BaseException]] = {"test_vector_store_initialization": AttributeError}

_BEHIND_THE_BACK = (
    "writes crlf.txt into the tool's folder through pathlib.Path(str(memory_root)), "
    "where no store is; the sync twin runs on the store's path-like memory_root, and "
    "tests/test_integrations_anthropic.py runs the case through AsyncMemboltMemoryTool"
)
for _name in (
    "test_view_preserves_crlf_line_endings",
    "test_str_replace_preserves_crlf_line_endings",
    "test_insert_preserves_crlf_line_endings",
):
    MARKS["anthropic_memory_tool", "TestBetaAsyncLocalFilesystemMemoryTool", _name] = (
        "skip",
        _BEHIND_THE_BACK,
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "flaky(retries): pytest-retry's marker in LangGraph's TTL suite; pytest-retry is "
        "not installed here, so nothing is retried",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not isinstance(item, pytest.Function) or item.path.parent != Path(__file__).parent:
            continue
        suite = item.path.stem.removeprefix("test_").removesuffix("_postgres")
        cls = item.cls.__name__ if item.cls else ""
        mark = next(
            (
                MARKS[key]
                for key in (
                    (suite, cls, item.originalname),
                    (suite, "*", item.originalname),
                    (suite.split("_")[0] + "_*", "*", item.originalname),
                )
                if key in MARKS
            ),
            None,
        )
        if mark is None:
            continue
        outcome, reason = mark
        if outcome == "skip":
            item.add_marker(pytest.mark.skip(reason=f"not applicable: {reason}"))
        else:
            raises = RAISES.get(item.originalname)
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True, raises=raises))


@pytest.fixture(autouse=True)
def _temporary_files_in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The suites make their stores with tempfile; a membolt store leaves its
    # companions (journal, lease) beside the file, and they go with tmp_path.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


@pytest.fixture(autouse=True)
def _close_suite_stores() -> Iterator[None]:
    yield
    while peer_suites.stores:
        peer_suites.stores.popitem()[1].close()
