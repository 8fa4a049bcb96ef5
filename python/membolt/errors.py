"""membolt's exceptions.

One hierarchy, so callers can catch everything membolt raises with
``MemboltError`` or pick the precise case::

    MemboltError
    ├── StoreError                 the store cannot be used right now
    │   ├── StoreBusyError         another process kept it open (also a TimeoutError)
    │   ├── CorruptStoreError      damaged, or not a membolt store (never modified)
    │   └── StoreVersionError      written by a newer membolt
    └── QueryError                 a memory_query expression failed (also a ValueError)

Bad arguments raise ``ValueError`` (empty or oversized keys) or
``ArgumentTypeError`` (wrong types; both a ``TypeError`` and a ``ValueError``).
"""

from __future__ import annotations


class MemboltError(Exception):
    """Base class of every error membolt raises on purpose."""


class StoreError(MemboltError):
    """The store could not be read or written (I/O failure, closed store)."""


class StoreBusyError(StoreError, TimeoutError):
    """Another process held the store longer than the timeout allowed."""


class CorruptStoreError(StoreError):
    """The file is damaged or is not a membolt store; it was left untouched."""


class StoreVersionError(StoreError):
    """The file was written by a newer membolt (a higher schema version)."""


class QueryError(MemboltError, ValueError):
    """A ``memory_query`` expression failed to compile or to run.

    ``kind`` is ``"compile"`` or ``"run"``; ``position`` is ``(line, column)``
    (1-based) when the error points at a place in the query, else ``None``.
    """

    def __init__(
        self, message: str, *, kind: str = "run", position: tuple[int, int] | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.position = position


class ArgumentTypeError(TypeError, ValueError):
    """An argument has the wrong type (for example a non-``str`` key)."""
