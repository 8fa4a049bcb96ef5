"""Events kept for a store that could not take them yet (§13.1).

A Claude Code hook gives up on a store that stays busy for a second (or, on
PostgreSQL, a server it cannot reach) rather than hold up the session; it
appends its event to the store's spool instead, and the next process that
writes the store (the API, the CLI, the MCP server, another hook: every
write of ``MemoryStore`` goes through :meth:`MemoryStore.apply_spool`)
applies the spooled events first, in the order they were appended.

The spool is a file of JSON lines, one record per event: ``{"id", "at",
"source", "data"}``: a random id, the time of the event (Unix ms), the name
of the component whose event it is, and the event. This module knows how to
keep and read records, not what they mean: :data:`APPLIERS` names, for each
source, the function that applies its records to a store, imported only
when a spool has records of that source.

Each record is applied once, even when several processes write at once or
one dies in the middle:

- every reader and writer of the spool takes an exclusive ``flock`` on it
  first; a drainer holds the store (``hold()``) before it locks the spool
  and appenders never wait for the store, so no two processes wait on each
  other in a cycle;
- after each record is applied, its id is written (and synced) to
  ``<spool>.applied``; a drain starts after the id found there, so a
  drainer that dies leaves at most the record it was applying to apply
  again, and the appliers make a second application of the last record
  change nothing (see the Claude Code hook);
- the spool is emptied (truncated, in place, under the lock) only after
  every record in it was applied; a waiting drainer then finds it empty,
  and an appender that waited appends to the empty file. An id in
  ``<spool>.applied`` that the spool does not hold is stale (ids are
  random and never repeat), and the whole spool is applied.

A record that its applier refuses (bad data: any exception that is not a
``MemboltError`` or an ``OSError``) is skipped with a warning on the
``membolt`` logger, so one bad record cannot stop a store's writes; a
store that is busy or unreachable again stops the drain where it is, with
the store's error.

The files are private like the store (0600, in a 0700 directory): events
hold prompts and command output. Lines are ASCII JSON, so any text (lone
surrogates included) round-trips.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import importlib
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from .errors import MemboltError
from .private_files import make_private_dirs

if TYPE_CHECKING:
    from .store import MemoryStore

#: The suffix of a store file's spool, and of the file holding the id of
#: the last record applied.
SPOOL_SUFFIX: Final = ".spool"
APPLIED_SUFFIX: Final = ".applied"
#: Longest wait for another process's lock on the spool (a drainer applying
#: records), in seconds.
LOCK_WAIT_S: Final = 10.0
LOCK_POLL_S: Final = 0.01
#: source -> "module:function" applying one of its records to a store.
APPLIERS: Final[dict[str, str]] = {"claude-code": "membolt.claude_code.hook:apply_spooled"}

logger = logging.getLogger("membolt")


class SpoolLockTimeoutError(OSError):
    """Another process kept the spool locked longer than :data:`LOCK_WAIT_S`."""


@dataclass(frozen=True)
class Record:
    """One spooled event."""

    id: str
    at: int
    source: str
    data: Mapping[str, Any]


def append(path: Path, source: str, data: Mapping[str, Any], at_ms: int) -> Record:
    """Appends one record to the spool at ``path`` (created private when
    missing) and syncs it; returns the record."""
    record = Record(uuid.uuid4().hex, at_ms, source, data)
    line = json.dumps(
        {"id": record.id, "at": record.at, "source": record.source, "data": record.data},
        ensure_ascii=True,
        separators=(",", ":"),
    )
    make_private_dirs(path.parent)
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(path, flags, 0o600)
    try:
        _lock(descriptor)
        size = os.fstat(descriptor).st_size
        # A writer that died mid-line left no line break: end its line, so
        # that this record starts a line of its own.
        prefix = b"\n" if size and os.pread(descriptor, 1, size - 1) != b"\n" else b""
        _write_all(descriptor, prefix + line.encode("ascii") + b"\n")
        os.fsync(descriptor)
    finally:
        os.close(descriptor)  # releases the lock
    return record


def pending(path: Path) -> bool:
    """Whether the spool at ``path`` holds anything (one ``stat``)."""
    try:
        return os.stat(path).st_size > 0
    except OSError:
        return False


def drain(path: Path, apply: Callable[[Record], None]) -> int:
    """Applies the records of the spool at ``path`` in order with ``apply``,
    then empties it; returns how many were applied. The caller holds the
    store. An exception from ``apply`` that is a ``MemboltError`` or an
    ``OSError`` stops the drain and propagates (the records not applied stay
    in the spool); any other skips that record."""
    try:
        descriptor = os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return 0
    try:
        _lock(descriptor)
        data = _read_all(descriptor)
        if not data:
            return 0
        applied_path = Path(f"{path}{APPLIED_SUFFIX}")
        records = list(_records(data, path))
        done = _read_applied(applied_path)
        ids = [record.id for record in records]
        start = ids.index(done) + 1 if done in ids else 0
        count = 0
        for record in records[start:]:
            try:
                apply(record)
                count += 1
            except (MemboltError, OSError):
                raise
            except Exception:
                logger.warning(
                    "membolt: a spooled %s event could not be applied and was dropped",
                    record.source,
                    exc_info=True,
                )
            _write_applied(applied_path, record.id)
        os.ftruncate(descriptor, 0)
        os.fsync(descriptor)
        with contextlib.suppress(FileNotFoundError):
            applied_path.unlink()
        return count
    finally:
        os.close(descriptor)


def apply_record(store: MemoryStore, record: Record) -> None:
    """Applies one record with the applier of its source."""
    target = APPLIERS.get(record.source)
    if target is None:
        raise ValueError(f"no applier for spooled events of {record.source!r}")
    module_name, _, function_name = target.partition(":")
    applier: Callable[[MemoryStore, Record], None] = getattr(
        importlib.import_module(module_name), function_name
    )
    applier(store, record)


# ----- helpers -------------------------------------------------------------


def _records(data: bytes, path: Path) -> Iterator[Record]:
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            record = Record(str(raw["id"]), int(raw["at"]), str(raw["source"]), dict(raw["data"]))
        except (ValueError, KeyError, TypeError):
            # A line cut by a crash, or not one of ours: nothing to apply.
            logger.warning("membolt: line %d of %s is not a spooled event; skipped", number, path)
            continue
        yield record


def _read_applied(path: Path) -> str | None:
    try:
        return path.read_text("ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _write_applied(path: Path, record_id: str) -> None:
    """Writes ``record_id`` to ``path`` durably, replacing it atomically."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(temporary, flags, 0o600)
    try:
        _write_all(descriptor, record_id.encode("ascii"))
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    os.replace(temporary, path)


def _lock(descriptor: int) -> None:
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
        if time.monotonic() >= deadline:
            raise SpoolLockTimeoutError(f"the spool stayed locked for {LOCK_WAIT_S:g} s")
        time.sleep(LOCK_POLL_S)


def _read_all(descriptor: int) -> bytes:
    chunks = []
    offset = 0
    while chunk := os.pread(descriptor, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]
