"""The peers' own test suites (vendored unchanged under ``tests/peer/vendor/``),
loaded with their store or tool class swapped for membolt's adapter.

A vendored test module is executed as it is, then the names it imported
its implementation under (``SqliteStore``, ``BetaLocalFilesystemMemoryTool``
...) are rebound in it: its fixtures and tests look those names up when
they run, so they build the adapter instead. A test module in
``tests/peer/`` then takes the suite's tests and fixtures into its own
namespace with :func:`export`, where pytest collects them.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import types
import uuid
from collections.abc import Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, ClassVar

from membolt import MemoryStore
from membolt.integrations.anthropic import (
    ROOT,
    AsyncMemboltMemoryTool,
    MemboltMemoryTool,
)
from membolt.integrations.langgraph import AsyncMemboltStore, MemboltStore

VENDOR = Path(__file__).resolve().parent.parent / "peer" / "vendor"


def load(relative: str, name: str, **swaps: object) -> types.ModuleType:
    """The vendored module at ``VENDOR/relative``, imported as ``name``, with
    each ``swaps`` name rebound (a name the module lacks is an error, so a
    new peer version that renamed it fails loudly)."""
    spec = importlib.util.spec_from_file_location(name, VENDOR / relative)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    for attribute, replacement in swaps.items():
        if not hasattr(module, attribute):
            raise AttributeError(f"{relative} has no {attribute} to swap")
        setattr(module, attribute, replacement)
    return module


def provide_as(name: str, module: types.ModuleType) -> None:
    """Lets a vendored module import ``module`` under ``name`` (LangGraph's
    async suite imports ``tests.test_store``)."""
    parent = name.rpartition(".")[0]
    if parent and parent not in sys.modules:
        try:
            importlib.import_module(parent)
        except ImportError:
            sys.modules[parent] = types.ModuleType(parent)
    sys.modules[name] = module


def export(module: types.ModuleType) -> dict[str, Any]:
    """The names a test module needs to run ``module``'s suite: its tests,
    test classes, fixtures and helpers."""
    return {k: v for k, v in vars(module).items() if not k.startswith("__")}


def _project(conn_string: str) -> str:
    """The project on the test server that a suite's connection string names:
    a new one for ``":memory:"``, one per file name otherwise."""
    if conn_string == ":memory:":
        return f"peer-{uuid.uuid4().hex}"
    return f"peer-{hashlib.sha256(conn_string.encode()).hexdigest()[:24]}"


class MemboltStoreOnPostgres(MemboltStore):
    """:class:`MemboltStore` whose ``from_conn_string`` opens a project of the
    test server (``url``, set by the test module) for whatever the suite
    names: its in-memory and file stores become PostgreSQL projects."""

    url: ClassVar[str] = ""

    @classmethod
    @contextmanager
    def from_conn_string(  # type: ignore[override]
        cls, conn_string: str, **options: Any
    ) -> Iterator[MemboltStore]:
        assert cls.url, "set MemboltStoreOnPostgres.url first"
        with super().from_conn_string(cls.url, project=_project(conn_string), **options) as store:
            yield store


class AsyncMemboltStoreOnPostgres(AsyncMemboltStore):
    """:class:`AsyncMemboltStore` on the test server (see
    :class:`MemboltStoreOnPostgres`)."""

    url: ClassVar[str] = ""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(  # type: ignore[override]
        cls, conn_string: str, **options: Any
    ) -> Any:
        assert cls.url, "set AsyncMemboltStoreOnPostgres.url first"
        async with super().from_conn_string(
            cls.url, project=_project(conn_string), **options
        ) as store:
            yield store


# ----- the memory tool's suite --------------------------------------------------------

#: The stores the suite's tools were made on, by base_path, closed by the
#: conftest after each test.
stores: dict[str, MemoryStore] = {}


class StoreFiles:
    """A path-like view of a tool's files: the suite's ``tool.memory_root``,
    where it writes or reads bytes behind the tool's back (``memory_root /
    "crlf.txt"``) and checks that ``/memories`` is still there."""

    def __init__(self, tool: MemboltMemoryTool, folder: str, path: str = ROOT) -> None:
        self.tool = tool
        self.folder = folder  # a real directory, for str(): never a path outside tmp
        self.path = path

    def __truediv__(self, name: str) -> StoreFiles:
        return type(self)(self.tool, f"{self.folder}/{name}", f"{self.path}/{name}")

    def __str__(self) -> str:
        return self.folder

    def _key(self) -> str:
        return self.tool.key_prefix + self.path

    def write_bytes(self, data: bytes) -> int:
        self.tool.store.save(self._key(), data.decode(), type="memory_file")
        return len(data)

    def read_bytes(self) -> bytes:
        entry = self.tool.store.get(self._key())
        if entry is None:
            raise FileNotFoundError(self.path)
        return entry.value.encode()

    def is_dir(self) -> bool:
        return self.path == ROOT or bool(self.tool.store.keys_under(self._key() + "/"))


class AsyncStoreFiles(StoreFiles):
    async def is_dir(self) -> bool:  # type: ignore[override]
        return StoreFiles.is_dir(self)


def tool_factories(
    open_store: Callable[[str], MemoryStore],
) -> tuple[Callable[..., MemboltMemoryTool], Callable[..., AsyncMemboltMemoryTool]]:
    """Stand-ins for ``BetaLocalFilesystemMemoryTool(base_path=...)`` and its
    async twin: the adapter on ``open_store(base_path)``, with the
    reference's ``base_path`` and ``memory_root`` attributes."""

    def sync_tool(base_path: str = "./memory") -> MemboltMemoryTool:
        store = stores[base_path] = open_store(base_path)
        tool = MemboltMemoryTool(store)
        tool.base_path = Path(base_path)  # type: ignore[attr-defined]
        tool.memory_root = StoreFiles(tool, f"{base_path}/memories")  # type: ignore[attr-defined]
        return tool

    def async_tool(base_path: str = "./memory") -> AsyncMemboltMemoryTool:
        store = stores[base_path] = open_store(base_path)
        tool = AsyncMemboltMemoryTool(store)
        tool.base_path = Path(base_path)  # type: ignore[attr-defined]
        tool.memory_root = AsyncStoreFiles(tool.sync_tool, f"{base_path}/memories")  # type: ignore[attr-defined]
        return tool

    return sync_tool, async_tool


def store_snapshot(base_path: str) -> dict[str, str]:
    """The suite's ``get_directory_snapshot``: the files as
    ``{"memories/<path>": text}``."""
    store = stores[base_path]
    return {
        key[1:]: entry.value
        for key in store.keys_under(ROOT + "/")
        if (entry := store.get(key)) is not None
    }


def store_in_folder(base_path: str) -> MemoryStore:
    return MemoryStore(Path(base_path) / "memory.redb")


class PostgresProjects:
    """Opens a new project of the test server per base_path (``url`` set by
    the test module)."""

    url: ClassVar[str] = ""

    @classmethod
    def open(cls, base_path: str) -> MemoryStore:
        assert cls.url, "set PostgresProjects.url first"
        return MemoryStore(cls.url, project=_project(base_path))
