"""Export and import: JSONL backups of a store, and the seed system's format.

An export is a header line naming the format and schema version, then one
entry per line in the JSON form of §1.2::

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

§15.4: an export of a store with an embedder gives each entry that has a
vector an optional field ``"embedding": {"model": NAME, "vector": BASE64}``
(the normalised float32 vector, little-endian); an import stores those
vectors beside the entries (under their model's name, whatever the
importing store's embedder), so a restored store needs no embedding. A
reader that knows nothing of the field ignores it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from typing import Any, BinaryIO, Final, TextIO

from . import _core
from ._core import Entry
from .classify import classify
from .errors import MemboltError
from .store import MemoryStore

EXPORT_FORMAT: Final = "membolt-export"
# The version of the export format (its header and entry objects), which is
# not the store file's schema: the journal changed the file, not this.
EXPORT_SCHEMA: Final = 1
#: The §1.2 JSON field names, from the one list the core keeps.
FIELDS: Final = _core.ENTRY_FIELDS
KEY, VALUE, NAMESPACE, TYPE, REFERENCES, CREATED_AT, UPDATED_AT = FIELDS
#: §15.4: the optional field holding an entry's vector.
EMBEDDING: Final = "embedding"
#: Vectors read from an import, by key: ``(model name, float32 bytes)``.
Vectors = dict[str, tuple[str, bytes]]


class ImportFormatError(MemboltError, ValueError):
    """A line of an import file is not a valid entry; nothing was written."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")
        self.line = line


def export_lines(store: MemoryStore) -> Iterator[str]:
    """The export, line by line (without newlines), entries sorted by key.

    The store is read before the first line is produced, so that a store
    that cannot be read yields nothing (not a header that looks like the
    export of an empty store)."""
    entries = store.entries()
    vectors = store.vectors_of(entries) if store.embedding is not None else []
    model = store.embedding.name if store.embedding is not None else ""
    yield json.dumps({"format": EXPORT_FORMAT, "schema": EXPORT_SCHEMA})
    for number, entry in enumerate(entries):
        record = entry.to_dict()
        vector = vectors[number] if vectors else None
        if vector is not None:
            record[EMBEDDING] = {"model": model, "vector": base64.b64encode(vector).decode()}
        yield json.dumps(record, ensure_ascii=False)


def export(store: MemoryStore, out: TextIO) -> int:
    """Write the export to ``out``; returns the number of entries."""
    count = -1
    for count, line in enumerate(export_lines(store)):  # noqa: B007 - count is the result
        out.write(line + "\n")
    return count


def decoded_lines(source: BinaryIO) -> Iterator[str]:
    """The lines of a UTF-8 file (a leading byte-order mark dropped); a line
    that is not UTF-8 is an ImportFormatError naming it."""
    for number, raw in enumerate(source, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ImportFormatError(
                number, f"not UTF-8 text (byte {error.start + 1} of the line)"
            ) from None
        yield line.removeprefix("\ufeff") if number == 1 else line


def parse(
    lines: Iterable[str],
    progress: Callable[[int], None] | None = None,
    vectors: Vectors | None = None,
) -> list[Entry]:
    """Check every line and return the entries; raises ImportFormatError.
    The entries' vectors (§15.4) are put in ``vectors`` when it is given."""
    entries: list[Entry] = []
    seen: dict[str, int] = {}
    first_record = True
    for number, line in enumerate(lines, start=1):
        if progress is not None and number % 10_000 == 0:
            progress(number)
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ImportFormatError(number, f"not valid JSON ({error.msg})") from None
        except RecursionError:
            raise ImportFormatError(number, "not valid JSON (nested too deeply)") from None
        except ValueError as error:  # e.g. an integer of thousands of digits
            raise ImportFormatError(number, f"not valid JSON ({error})") from None
        if not isinstance(record, dict):
            raise ImportFormatError(number, "not a JSON object")
        is_header = first_record and "format" in record and KEY not in record
        first_record = False
        if is_header:
            _check_header(record, number)
            continue
        entry = _entry(record, number)
        if entry.key in seen:
            raise ImportFormatError(
                number, f"{KEY} {json.dumps(entry.key)} already on line {seen[entry.key]}"
            )
        seen[entry.key] = number
        entries.append(entry)
        if vectors is not None and record.get(EMBEDDING) is not None:
            vectors[entry.key] = _embedding(record[EMBEDDING], number)
    return entries


def import_entries(store: MemoryStore, entries: list[Entry], vectors: Vectors | None = None) -> int:
    """Write checked entries in one transaction; returns how many changed.
    Then the vectors of ``vectors`` (from :func:`parse`) are stored beside
    them; a failure to store them (a cache) loses no entry and is not
    raised."""
    written = store.import_entries(entries)
    groups: dict[tuple[str, int], list[tuple[Entry, bytes]]] = {}
    for entry in entries:
        if vectors and entry.key in vectors:
            model, vector = vectors[entry.key]
            groups.setdefault((model, len(vector) // 4), []).append((entry, vector))
    for (model, dims), items in groups.items():
        pairs = [(entry.key, entry.value) for entry, _ in items]
        with contextlib.suppress(MemboltError, OSError, ValueError):
            store._vectors_put(model, dims, pairs, b"".join(v for _, v in items))
    return written


def _embedding(field: object, line: int) -> tuple[str, bytes]:
    """The ``embedding`` field of an entry: ``(model, float32 bytes)``."""
    problem = f"{EMBEDDING} must be {{'model': NAME, 'vector': BASE64 of float32s}}"
    if not isinstance(field, dict):
        raise ImportFormatError(line, problem)
    model, vector = field.get("model"), field.get("vector")
    if not isinstance(model, str) or not model or not isinstance(vector, str):
        raise ImportFormatError(line, problem)
    try:
        data = base64.b64decode(vector, validate=True)
    except (binascii.Error, ValueError):
        raise ImportFormatError(line, problem) from None
    if not data or len(data) % 4 or len(data) > 4 * 16_384:
        raise ImportFormatError(line, problem)
    return model, data


def _check_header(header: dict[str, Any], line: int) -> None:
    if header.get("format") != EXPORT_FORMAT:
        raise ImportFormatError(line, f"unknown format {header.get('format')!r}")
    schema = header.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise ImportFormatError(line, "the header has no schema version")
    if schema > EXPORT_SCHEMA:
        raise ImportFormatError(
            line,
            f"written by a newer membolt (schema {schema}; this version reads up to "
            f"{EXPORT_SCHEMA})",
        )


def _entry(record: dict[str, Any], line: int) -> Entry:
    """One entry in the §1.2 form, from a membolt or seed-format record."""
    key = record.get(KEY)
    if not isinstance(key, str) or not key:
        raise ImportFormatError(line, f"{KEY} must be a non-empty string")
    if len(key.encode("utf-8", "surrogatepass")) > _core.MAX_KEY_BYTES:
        raise ImportFormatError(line, f"{KEY} is longer than {_core.MAX_KEY_BYTES} bytes")
    value = record.get(VALUE)
    if not isinstance(value, str):
        raise ImportFormatError(line, f"{VALUE} must be a string")
    entry_type = record.get(TYPE, classify(key))
    namespace = record.get(NAMESPACE, "")
    for name, text in ((TYPE, entry_type), (NAMESPACE, namespace)):
        if not isinstance(text, str):
            raise ImportFormatError(line, f"{name} must be a string")
    references = record.get(REFERENCES)
    if references is None:  # absent, or null in the seed format
        references = []
    if not isinstance(references, list) or not all(
        isinstance(r, str) and r and len(r.encode("utf-8", "surrogatepass")) <= _core.MAX_KEY_BYTES
        for r in references
    ):
        raise ImportFormatError(line, f"{REFERENCES} must be a list of keys")
    for name, text in ((KEY, key), (VALUE, value), (TYPE, entry_type), (NAMESPACE, namespace)):
        _check_unicode(text, name, line)
    for reference in references:
        _check_unicode(reference, REFERENCES, line)
    created = _timestamp(record.get(CREATED_AT), CREATED_AT, line)
    updated = _timestamp(record.get(UPDATED_AT, created), UPDATED_AT, line)
    return Entry.from_dict(
        {
            KEY: key,
            VALUE: value,
            NAMESPACE: namespace,
            TYPE: entry_type,
            # Normalised as a save would store them: no self-reference, no duplicate.
            REFERENCES: list(dict.fromkeys(r for r in references if r != key)),
            CREATED_AT: created,
            UPDATED_AT: updated,
        }
    )


def _check_unicode(text: str, name: str, line: int) -> None:
    """JSON's \\ud800 escapes give lone surrogates, which no store can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ImportFormatError(line, f"{name} holds a lone UTF-16 surrogate") from None


_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})"
)
# Years 1 to 9999, the range every date library can show. Beyond it a stamp
# is a mistake (microseconds or nanoseconds taken for milliseconds), and it
# would drag the store's clock (§1.3: stamps never go back) along with it.
_MIN_MS: Final = -62_135_596_800_000
_MAX_MS: Final = 253_402_300_799_999


def _timestamp(value: object, name: str, line: int) -> int:
    """Unix milliseconds from an integer or RFC 3339 text."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not _MIN_MS <= value <= _MAX_MS:
            raise ImportFormatError(
                line, f"{name} {value} is not Unix milliseconds of the years 1 to 9999"
            )
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
            hours, minutes = int(zone[1:3]), int(zone[4:6])
            if hours > 23 or minutes > 59:
                raise ImportFormatError(line, f"{name} has an invalid zone offset: {value!r}")
            sign = -1 if zone[0] == "-" else 1
            offset = sign * (hours * 60 + minutes) * 60_000
        # Go writes nanoseconds; milliseconds are what an entry keeps.
        millis = int((fraction or "0")[:3].ljust(3, "0"))
        return _timestamp(int(moment.timestamp()) * 1000 + millis - offset, name, line)
    raise ImportFormatError(line, f"{name} must be Unix milliseconds or RFC 3339 text")
