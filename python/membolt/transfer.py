"""Export and import: JSONL backups of a store, and the seed system's format.

An export is a header line naming the format and schema version, then one
entry per line in the JSON form of BEHAVIOUR §1.2::

    {"format": "membolt-export", "schema": 1}
    {"key": "...", "value": "...", "namespace": "", "type": "...", "references": [...],
     "createdAt": 1700000000000, "updatedAt": 1700000000000}

Import is lossless (timestamps, types and references kept), idempotent
(entries already identical are not written again) and all-or-nothing: every
line is checked first, and a malformed one is reported with its line number
before anything is written. Files without the header are read as the seed
system's memory format: one ``{"key", "value", "type", "references",
"createdAt", "updatedAt"}`` object per line, timestamps as Unix milliseconds
or RFC 3339 text, ``namespace`` absent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from typing import Any, Final, TextIO

from . import _core
from .classify import classify
from .errors import MemboltError
from .store import MemoryStore

EXPORT_FORMAT: Final = "membolt-export"
FIELDS: Final = ("key", "value", "namespace", "type", "references", "createdAt", "updatedAt")


class ImportFormatError(MemboltError, ValueError):
    """A line of an import file is not a valid entry; nothing was written."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")
        self.line = line


def export_lines(store: MemoryStore) -> Iterator[str]:
    """The export, line by line (without newlines), entries sorted by key."""
    yield json.dumps({"format": EXPORT_FORMAT, "schema": _core.SCHEMA_VERSION})
    for entry in store.entries():
        yield json.dumps(entry.to_dict(), ensure_ascii=False)


def export(store: MemoryStore, out: TextIO) -> int:
    """Write the export to ``out``; returns the number of entries."""
    count = -1
    for count, line in enumerate(export_lines(store)):  # noqa: B007 - count is the result
        out.write(line + "\n")
    return count


def parse(
    lines: Iterable[str], progress: Callable[[int], None] | None = None
) -> list[dict[str, Any]]:
    """Check every line and return the entries; raises ImportFormatError."""
    entries: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if progress is not None and number % 10_000 == 0:
            progress(number)
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ImportFormatError(number, f"not valid JSON ({error.msg})") from None
        if not isinstance(record, dict):
            raise ImportFormatError(number, "not a JSON object")
        if number == 1 and "format" in record and "key" not in record:
            _check_header(record)
            continue
        entry = _entry(record, number)
        if entry["key"] in seen:
            raise ImportFormatError(
                number, f"key {json.dumps(entry['key'])} already on line {seen[entry['key']]}"
            )
        seen[entry["key"]] = number
        entries.append(entry)
    return entries


def import_entries(store: MemoryStore, entries: list[dict[str, Any]]) -> int:
    """Write checked entries in one transaction; returns how many changed."""
    return store._put_exact(entries)


def _check_header(header: dict[str, Any]) -> None:
    if header.get("format") != EXPORT_FORMAT:
        raise ImportFormatError(1, f"unknown format {header.get('format')!r}")
    schema = header.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise ImportFormatError(1, "the header has no schema version")
    if schema > _core.SCHEMA_VERSION:
        raise ImportFormatError(
            1,
            f"written by a newer membolt (schema {schema}; this version reads up to "
            f"{_core.SCHEMA_VERSION})",
        )


def _entry(record: dict[str, Any], line: int) -> dict[str, Any]:
    """One entry in the §1.2 form, from a membolt or seed-format record."""
    key = record.get("key")
    if not isinstance(key, str) or not key:
        raise ImportFormatError(line, "key must be a non-empty string")
    if len(key.encode()) > _core.MAX_KEY_BYTES:
        raise ImportFormatError(line, f"key is longer than {_core.MAX_KEY_BYTES} bytes")
    value = record.get("value")
    if not isinstance(value, str):
        raise ImportFormatError(line, "value must be a string")
    entry_type = record.get("type", classify(key))
    namespace = record.get("namespace", "")
    for name, text in (("type", entry_type), ("namespace", namespace)):
        if not isinstance(text, str):
            raise ImportFormatError(line, f"{name} must be a string")
    references = record.get("references") or []
    if not isinstance(references, list) or not all(
        isinstance(r, str) and r and len(r.encode()) <= _core.MAX_KEY_BYTES for r in references
    ):
        raise ImportFormatError(line, "references must be a list of keys")
    created = _timestamp(record.get("createdAt"), "createdAt", line)
    updated = _timestamp(record.get("updatedAt", created), "updatedAt", line)
    return {
        "key": key,
        "value": value,
        "namespace": namespace,
        "type": entry_type,
        # Normalised as a save would store them: no self-reference, no duplicate.
        "references": list(dict.fromkeys(r for r in references if r != key)),
        "createdAt": created,
        "updatedAt": updated,
    }


_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})"
)
_MIN_MS: Final = -(2**63)
_MAX_MS: Final = 2**63 - 1


def _timestamp(value: object, name: str, line: int) -> int:
    """Unix milliseconds from an integer or RFC 3339 text."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not _MIN_MS <= value <= _MAX_MS:
            raise ImportFormatError(line, f"{name} is out of range")
        return value
    if isinstance(value, str):
        match = _RFC3339.fullmatch(value.strip())
        if match is None:
            raise ImportFormatError(line, f"{name} is not an RFC 3339 timestamp: {value!r}")
        year, month, day, hour, minute, second, fraction, zone = match.groups()
        try:
            moment = datetime(
                int(year), int(month), int(day), int(hour), int(minute), int(second),
                tzinfo=timezone.utc,
            )  # fmt: skip
        except ValueError:
            raise ImportFormatError(line, f"{name} is not a valid date: {value!r}") from None
        offset = 0
        if zone not in ("Z", "z"):
            sign = -1 if zone[0] == "-" else 1
            offset = sign * (int(zone[1:3]) * 60 + int(zone[4:6])) * 60_000
        # Go writes nanoseconds; milliseconds are what an entry keeps.
        millis = int((fraction or "0")[:3].ljust(3, "0"))
        return int(moment.timestamp()) * 1000 + millis - offset
    raise ImportFormatError(line, f"{name} must be Unix milliseconds or RFC 3339 text")
