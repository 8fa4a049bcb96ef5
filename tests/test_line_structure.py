"""§5.4 (0.2): no stored text can add a line to what a model reads.

Every character some reader ends a line at (Python's ``str.splitlines()``
set) is flattened or replaced in the ``<memory>`` block and in the
``memory_search`` / ``memory_list`` texts, with the C1 controls, the bidi
marks and the tag characters; the JSON the tools print escapes the
separators JSON itself leaves raw. Invariant, for any stored keys and
values: ``splitlines()`` of each text yields exactly the text's own lines.
"""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import membolt
from membolt import MemoryStore
from membolt.agent import AgentMemory

#: What Python's str.splitlines() splits on.
LINE_BREAKS = [c for c in map(chr, range(sys.maxunicode + 1)) if len(f"a{c}b".splitlines()) > 1]
C1 = [chr(code) for code in range(0x80, 0xA0)]
BIDI = ["\u200e", "\u200f", "\u061c", "\u202a", "\u202e", "\u2066", "\u2069"]
TAGS = ["\U000e0000", "\U000e0001", "\U000e0041", "\U000e007f"]
#: Every character §5.4 replaces by U+FFFD (0.1 and 0.2).
REPLACED = frozenset(
    [chr(c) for c in range(0x20) if c != 0x09]
    + [chr(c) for c in range(0x7F, 0xA0)]
    + ["\u2028", "\u2029", "\u200e", "\u200f", "\u061c"]
    + [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2066, 0x206A)]
    + [chr(c) for c in range(0xE0000, 0xE0080)]
)

HOSTILE = [*LINE_BREAKS, *C1, *BIDI, *TAGS, *"ab \t<>&:/[]()-", "\u3000", "\xa0", "世"]
text = st.text(st.one_of(st.sampled_from(HOSTILE), st.characters(codec="utf-8")), max_size=12)
#: Types the map line can be read back from (no ", " or " | " in them).
kinds = st.sampled_from(["", "note", "progress", "error", "decision", "status", "x"])


def test_the_line_break_set_is_what_the_contract_lists() -> None:
    assert LINE_BREAKS == [
        "\n", "\x0b", "\x0c", "\r", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"
    ]  # fmt: skip


def own_lines(text: str) -> list[str]:
    """``text`` split at its ``\\n`` characters only (a last ``\\n`` ends the
    last line), which is how membolt writes its lines."""
    parts = text.split("\n")
    return parts[:-1] if text.endswith("\n") else parts


def fill(store: MemoryStore, items: list[tuple[str, str, str]], link: bool) -> None:
    previous = None
    for key, value, kind in items:
        try:
            references = [previous] if link and previous else None
            store.save(key, value, type=kind, references=references)
        except ValueError:  # an empty key: not storable, nothing to check
            continue
        previous = key


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(st.tuples(text, text, kinds), min_size=1, max_size=8),
    link=st.booleans(),
    focus=text,
    budget=st.sampled_from([0, 40, 500]),
)
def test_block_lines_are_its_own(
    tmp_path_factory: pytest.TempPathFactory,
    items: list[tuple[str, str, str]],
    link: bool,
    focus: str,
    budget: int,
) -> None:
    with MemoryStore(tmp_path_factory.mktemp("lines") / "memory.redb") as store:
        fill(store, items, link)
        assume(len(store) > 0)
        block = store.render(focus, budget, now_ms=0)
    lines = block.splitlines()
    assert lines == block.split("\n")
    assert lines[0] == "<memory>"
    assert lines[1].startswith("Legend: ")
    assert lines[2].startswith("map: ")
    assert lines[-1] == "</memory>"
    counts = lines[2][len("map: ") :].split(" | ")[0].split(", ")
    rendered = sum(int(part.split(" ", 1)[0]) for part in counts)
    downstream = lines[-2].startswith("downstream of ")
    assert len(lines) == 4 + rendered + downstream
    assert not REPLACED & set(block.replace("\n", ""))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(st.tuples(text, text, kinds), min_size=1, max_size=25))
def test_tool_text_lines_are_their_own(
    tmp_path_factory: pytest.TempPathFactory, items: list[tuple[str, str, str]]
) -> None:
    with MemoryStore(tmp_path_factory.mktemp("tools") / "memory.redb") as store:
        fill(store, items, link=False)
        assume(len(store) > 0)
        memory = AgentMemory(store)
        listing = memory.call_tool("memory_list", {})
        assert listing.splitlines() == own_lines(listing)
        assert len(own_lines(listing)) == 1 + len(store)
        assert not REPLACED & set(listing.replace("\n", ""))
        for key in store.keys():
            found = memory.call_tool("memory_search", {"query": key})
            if found.startswith('{"error"'):  # a blank key is no query
                assert not key.strip()
                continue
            assert found.splitlines() == own_lines(found)
            total = int(found.split(" ", 2)[1])
            assert len(own_lines(found)) == 1 + min(total, 20) + (total > 20)
            assert not REPLACED & set(found.replace("\n", ""))
        # The JSON texts: one line each, and the data exactly as stored.
        rows = memory.call_tool("memory_query", {"query": "map(memory, .key)", "limit": 500})
        assert len(rows.splitlines()) == 1
        assert json.loads(rows) == store.keys()
        for key in store.keys():
            for name in ("memory_delete", "memory_save"):
                out = memory.call_tool(name, {"key": key, "value": key or "v"})
                assert len(out.splitlines()) == 1, out


def test_examples_of_each_kind() -> None:
    """What the model sees for one character of each kind (the property
    tests above check the structure; these the exact text)."""
    for char in ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x9b", "\u200f", "\U000e0041"]:
        assert membolt._core.flatten_plain(f"k{char}v") == "k\ufffdv", hex(ord(char))
        assert membolt._core.escape_line(f"k{char}v") == "k\ufffdv", hex(ord(char))
    # Flattening comes first: next to a split, trimming removes a separator.
    assert membolt._core.escape_line("a\u2028\nb") == "a / b"
    assert membolt._core.flatten_plain("a \x85\r\n b") == "a / b"  # NEL is whitespace
    assert membolt._core.flatten_plain("a \x9b\r\n b") == "a \ufffd / b"  # CSI is not


def test_listing_and_search_text(store: MemoryStore) -> None:
    memory = AgentMemory(store)
    store.save("k\u2028ey", "v\u2029al\x85ue <b> & \u202e")
    assert memory.call_tool("memory_list", {}) == "1 memory entries:\n- k\ufffdey\n"
    assert memory.call_tool("memory_search", {"query": "UE <B>"}) == (
        "Found 1 memory entries:\n- k\ufffdey: v\ufffdal\ufffdue <b> & \ufffd\n"
    )
    # The quoted key stays JSON for the same key, on one line.
    out = memory.call_tool("memory_delete", {"key": "k\u2028ey"})
    assert out == 'Deleted memory entry "k\\u2028ey".'
    assert json.loads(out[len("Deleted memory entry ") : -1]) == "k\u2028ey"


def test_error_texts_stay_one_line(store: MemoryStore) -> None:
    memory = AgentMemory(store)
    out = memory.call_tool("memory\u2028save", {})
    assert len(out.splitlines()) == 1
    assert json.loads(out)["error"].startswith("memory\u2028save: unknown memory tool")
