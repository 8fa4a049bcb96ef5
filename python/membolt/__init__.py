"""membolt: persistent, project-scoped memory for LLM agents."""

from __future__ import annotations

import atexit
import os
from typing import TYPE_CHECKING, Any

from . import _core

# Eager, and before anything imports the submodule of the same name: the
# import system binds a package attribute to each submodule it loads, which
# would make ``membolt.classify`` the module instead of the function.
from .classify import classify, parent_type

if TYPE_CHECKING:
    from ._core import Cap, Entry, truncate
    from .agent import AgentMemory
    from .caps import extraction_caps
    from .errors import (
        ArgumentTypeError,
        CorruptStoreError,
        MemboltError,
        QueryError,
        StoreBusyError,
        StoreError,
        StoreVersionError,
    )
    from .extract import ExtractionConfig
    from .prompt import system_prompt_section
    from .store import (
        Batch,
        MemoryStore,
        encode_cwd,
        get_or_create_store,
        open_store,
        project_store_path,
    )

__all__ = [
    "AgentMemory",
    "ArgumentTypeError",
    "Batch",
    "Cap",
    "CorruptStoreError",
    "Entry",
    "ExtractionConfig",
    "MemboltError",
    "MemoryStore",
    "QueryError",
    "StoreBusyError",
    "StoreError",
    "StoreVersionError",
    "classify",
    "encode_cwd",
    "extraction_caps",
    "get_or_create_store",
    "open_store",
    "parent_type",
    "project_store_path",
    "system_prompt_section",
    "truncate",
]

__version__ = "0.3.0"

# The public names, each imported from its module on first use: a process
# that needs only part of membolt (a Claude Code hook runs in a new process
# for every event) does not pay for importing the rest. Every name of
# __all__ is here or imported above; a test checks that the lists agree.
_LAZY: dict[str, str] = {
    "AgentMemory": "agent",
    "ArgumentTypeError": "errors",
    "Batch": "store",
    "Cap": "_core",
    "CorruptStoreError": "errors",
    "Entry": "_core",
    "ExtractionConfig": "extract",
    "MemboltError": "errors",
    "MemoryStore": "store",
    "QueryError": "errors",
    "StoreBusyError": "errors",
    "StoreError": "errors",
    "StoreVersionError": "errors",
    "encode_cwd": "store",
    "extraction_caps": "caps",
    "get_or_create_store": "store",
    "open_store": "store",
    "project_store_path": "store",
    "system_prompt_section": "prompt",
    "truncate": "_core",
}


#: Submodules, loaded on first use too: ``import membolt`` then
#: ``membolt.store.DEFAULT_TIMEOUT`` works as when everything was eager.
_SUBMODULES = frozenset(
    {
        "agent", "caps", "cli", "compaction", "demo", "doctor", "errors",
        "extract", "keys", "mcp", "prompt", "repair", "sanitize", "store", "tools",
        "transfer", "claude_code",
    }
)  # fmt: skip


def __getattr__(name: str) -> Any:
    from importlib import import_module

    if name in _SUBMODULES:
        return import_module(f".{name}", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


# Leases (a store kept open during a burst of calls) are closed cleanly at
# exit, and never carried across fork() into a child; fork() waits for store
# calls running in other threads (a lock they hold would never be released
# in the child).
atexit.register(_core._release_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_core._before_fork,
        after_in_parent=_core._after_fork_in_parent,
        after_in_child=_core._after_fork_in_child,
    )
