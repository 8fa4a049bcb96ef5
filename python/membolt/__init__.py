"""membolt: persistent, project-scoped memory for LLM agents."""

from __future__ import annotations

import atexit
import os

from . import _core
from ._core import Entry, truncate
from .agent import AgentMemory
from .classify import classify, parent_type
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
    "get_or_create_store",
    "open_store",
    "parent_type",
    "project_store_path",
    "system_prompt_section",
    "truncate",
]

__version__ = "0.1.0"

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
