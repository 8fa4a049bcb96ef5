"""Export and import: lossless, idempotent, all-or-nothing, and the
seed system's JSONL format."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import membolt
from membolt import MemoryStore, StoreError
from membolt.transfer import ImportFormatError, decoded_lines, export, import_entries, parse


def exported(store: MemoryStore) -> list[str]:
    out = io.StringIO()
    export(store, out)
    return out.getvalue().splitlines()


def test_round_trip_keeps_every_field(store: MemoryStore, tmp_path: Path) -> None:
    store.save("prompt:x", "goal", namespace="ns")
    store.save("note é", "multi\nline ünïcode", references=["prompt:x", "gone"])
    store.link("note é", "prompt:x")
    store.save("custom", "v", type="")
    lines = exported(store)
    copy = MemoryStore(tmp_path / "copy.redb")
    assert import_entries(copy, parse(lines)) == 3
    assert [e.to_dict() for e in copy.entries()] == [e.to_dict() for e in store.entries()]
    assert import_entries(copy, parse(lines)) == 0  # importing twice changes nothing
    assert exported(copy) == lines
    # ... not even the file's bytes: nothing to write takes no write lease.
    copy.close()
    membolt._core._release_all()
    before = (tmp_path / "copy.redb").read_bytes()
    again = MemoryStore(tmp_path / "copy.redb")
    assert import_entries(again, parse(lines)) == 0
    again.close()
    membolt._core._release_all()
    assert (tmp_path / "copy.redb").read_bytes() == before


def test_import_never_moves_the_clock_back(store: MemoryStore, tmp_path: Path) -> None:
    far = 4_000_000_000_000
    line = json.dumps(
        {"key": "future", "value": "v", "createdAt": far, "updatedAt": far, "type": "note"}
    )
    import_entries(store, parse([line]))
    assert store.save("after", "x").updated_at > far


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "line 1: not valid JSON"),
        ("[1]", "line 1: not a JSON object"),
        ('{"value": "x"}', "line 1: key must be a non-empty string"),
        ('{"key": "", "value": "x"}', "line 1: key must be a non-empty string"),
        ('{"key": "k"}', "line 1: value must be a string"),
        ('{"key": "k", "value": "v", "references": "p"}', "line 1: references must be a list"),
        ('{"key": "k", "value": "v", "createdAt": "yesterday"}', "line 1: createdAt is not"),
        ('{"key": "k", "value": "v", "createdAt": true}', "line 1: createdAt must be"),
        ('{"key": "k", "value": "v", "type": 3}', "line 1: type must be a string"),
        ('{"format": "membolt-export", "schema": 99}', "line 1: written by a newer membolt"),
        ('{"format": "other", "schema": 1}', "line 1: unknown format"),
        (
            '{"key": "a", "value": "1", "createdAt": 1}\n'
            '{"key": "a", "value": "2", "createdAt": 1}',
            'line 2: key "a" already',
        ),
        ('{"key": "k", "value": "v"}', "line 1: createdAt must be"),
        # A stamp beyond year 9999 (here microseconds) would drag the clock.
        ('{"key": "k", "value": "v", "createdAt": 1700000000000000}', "line 1: createdAt 17"),
        ('{"key": "k", "value": "v", "createdAt": 9223372036854775807}', "years 1 to 9999"),
        ('{"key": "k", "value": "v", "createdAt": "2024-01-01T00:00:00+99:99"}', "zone offset"),
        ('{"key": "k", "value": "v", "createdAt": 1, "references": 0}', "references must be"),
        ('{"key": "k", "value": "v", "createdAt": 1, "references": {}}', "references must be"),
        ('{"key": "k\\ud800", "value": "v", "createdAt": 1}', "key holds a lone UTF-16"),
        ('{"key": "k", "value": "\\udfff", "createdAt": 1}', "value holds a lone UTF-16"),
        ('{"key": "k", "value": "v", "createdAt": ' + "9" * 5000 + "}", "line 1: not valid JSON"),
        ("[" * 100_000, "line 1: not valid JSON (nested too deeply"),
        ('\n\n{"format": "membolt-export", "schema": 99}', "line 3: written by a newer"),
    ],
)
def test_malformed_lines_are_reported_with_their_number(text: str, message: str) -> None:
    with pytest.raises(ImportFormatError, match=message.replace("(", r"\(")):
        parse(text.splitlines())


def test_header_after_blank_lines_and_null_references() -> None:
    lines = ["", '{"format": "membolt-export", "schema": 1}']
    lines.append('{"key": "k", "value": "v", "createdAt": 1, "references": null}')
    assert [list(e.references) for e in parse(lines)] == [[]]


def test_decoded_lines_name_the_line_that_is_not_utf8() -> None:
    source = io.BytesIO(b'\xef\xbb\xbf{"key": "a"}\n{"key": "\xa9"}\n')
    lines = decoded_lines(source)
    assert next(lines) == '{"key": "a"}\n'  # the byte-order mark dropped
    with pytest.raises(ImportFormatError, match="line 2: not UTF-8 text"):
        next(lines)


def test_export_reads_the_store_before_writing(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "s.redb")
    store.close()
    out = io.StringIO()
    with pytest.raises(StoreError):
        export(store, out)
    assert out.getvalue() == ""  # not a header that looks like an empty export


def test_a_malformed_file_writes_nothing(store: MemoryStore) -> None:
    lines = [
        json.dumps({"key": "a", "value": "1", "createdAt": 1, "updatedAt": 1}),
        "{broken",
    ]
    with pytest.raises(ImportFormatError, match="line 2"):
        import_entries(store, parse(lines))
    assert len(store) == 0


def test_seed_format(store: MemoryStore) -> None:
    seed = [
        {
            "key": "project_name",
            "value": "kdeps",
            "type": "note",
            "references": [],
            "createdAt": "2024-01-02T03:04:05.123456789Z",
            "updatedAt": "2024-01-02T05:04:05+02:00",
        },
        {
            "key": "error:build",
            "value": "fails",
            "type": "error",
            "references": ["project_name", "error:build"],
            "createdAt": 1704164645000,
            "updatedAt": 1704164646000,
        },
        {"key": "goal", "value": "ship", "createdAt": 5},
    ]
    entries = parse(json.dumps(record) for record in seed)
    assert import_entries(store, entries) == 3
    project = store.get("project_name")
    assert project is not None
    assert (project.created_at, project.updated_at) == (1704164645123, 1704164645000)
    assert project.namespace == ""
    build = store.get("error:build")
    assert build is not None
    assert build.references == ("project_name",)
    goal = store.get("goal")
    assert goal is not None
    assert (goal.type, goal.created_at, goal.updated_at) == ("prompt", 5, 5)
