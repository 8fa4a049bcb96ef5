"""The ``<memory>`` block through the real store (§5, §11 (a)(b)).

Each test builds a store through the public API and checks the rendered
bytes; every render is also compared with the plain-Python model
(``reference_render``) so the two cannot drift apart silently.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import membolt
from membolt import MemoryStore

from support import reference_render as ref

MINUTE = 60_000
HOUR = 60 * MINUTE
DAY = 24 * HOUR
LEGEND = ref.LEGEND


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    with MemoryStore(tmp_path / "memory.redb") as opened:
        yield opened


def render(store: MemoryStore, focus: str = "", max_tokens: int = 500, now: int = 0) -> str:
    """``store.render`` checked against the model on the same entries."""
    entries = [
        ref.Entry(
            e.key, e.value, e.type, e.namespace, list(e.references), e.created_at, e.updated_at
        )
        for e in store.entries()
    ]
    block = store.render(focus, max_tokens, now_ms=now)
    assert block == ref.render(entries, focus, max_tokens, now)
    return block


def newest_stamp(store: MemoryStore) -> int:
    return max(e.updated_at for e in store.entries())


def lines(block: str) -> list[str]:
    return block.split("\n")


def entry_lines(block: str) -> list[str]:
    body = lines(block)[3:-1]
    return [line for line in body if not line.startswith("downstream of ")]


def keys_of(block: str) -> list[str]:
    return [line.split(" [", 1)[0].split(": ", 1)[0] for line in entry_lines(block)]


def note(store: MemoryStore, key: str, value: str = "v", **kwargs: object) -> membolt.Entry:
    kwargs.setdefault("type", "note")
    kwargs.setdefault("references", [])
    return store.save(key, value, **kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# §11 golden examples, through the real store and clock
# ---------------------------------------------------------------------------

GOLDEN_A = "\n".join(
    [
        "<memory>",
        LEGEND,
        "map: 1 prompt, 1 tool_result, 1 result | resume: result:build (2m ago)",
        "prompt:build [prompt]: Add /users endpoint",
        "tool:write_users [tool_result]: wrote handlers/users.go  <- prompt:build",
        "result:build [result]: compiles; tests pending  <- tool:write_users  <== RESUME",
        "</memory>",
    ]
)

GOLDEN_B = "\n".join(
    [
        "<memory>",
        LEGEND,
        "map: 1 prompt, 1 tool_result, 1 error, 1 result, 1 status"
        " | resume: status:ci (1m ago) | error: error:migration",
        "prompt:build [prompt]: Add /users endpoint",
        "tool:write_users [tool_result]: wrote handlers/users.go  <- prompt:build",
        "error:migration [error]: migrate step 3 panics on nil column  <- tool:write_users",
        "result:build [result]: compiles; tests pending  <- tool:write_users",
        "status:ci [status]: waiting on CI  <- result:build  <== RESUME",
        "</memory>",
    ]
)


@pytest.mark.smoke
def test_golden_examples_a_and_b(store: MemoryStore) -> None:
    store.save("prompt:build", "Add /users endpoint")
    time.sleep(0.002)
    store.save("tool:write_users", "wrote handlers/users.go")
    time.sleep(0.002)
    last = store.save("result:build", "compiles; tests pending")
    assert render(store, "", 500, last.updated_at + 2 * MINUTE) == GOLDEN_A

    time.sleep(0.002)
    status = store.save("status:ci", "waiting on CI")
    time.sleep(0.002)
    store.save("error:migration", "migrate step 3 panics on nil column")
    assert render(store, "", 500, status.updated_at + MINUTE) == GOLDEN_B
    # The default arguments are focus "" and 500 tokens.
    assert store.render(now_ms=status.updated_at + MINUTE) == GOLDEN_B


def test_golden_example_renders_from_a_reopened_store(tmp_path: Path) -> None:
    path = tmp_path / "memory.redb"
    with MemoryStore(path) as first:
        first.save("prompt:build", "Add /users endpoint")
        first.save("tool:write_users", "wrote handlers/users.go")
        last = first.save("result:build", "compiles; tests pending")
    with MemoryStore(path) as second:
        assert render(second, "", 500, last.updated_at + 2 * MINUTE) == GOLDEN_A


# ---------------------------------------------------------------------------
# Block shape
# ---------------------------------------------------------------------------


def test_empty_store_renders_nothing(store: MemoryStore) -> None:
    assert store.render("anything", 500, now_ms=0) == ""
    assert store.render() == ""
    note(store, "a")
    store.delete("a")
    assert store.render("a", 0, now_ms=0) == ""


def test_block_without_resume_or_error_and_no_trailing_newline(store: MemoryStore) -> None:
    note(store, "a", "hello")
    block = render(store)
    assert block == f"<memory>\n{LEGEND}\nmap: 1 note\na [note]: hello\n</memory>"


def test_now_defaults_to_the_current_time(store: MemoryStore) -> None:
    store.save("progress:x", "working")
    assert "resume: progress:x (just now)" in store.render()


# ---------------------------------------------------------------------------
# §5.5 done and resolved markers
# ---------------------------------------------------------------------------

DONE_CASES = [
    ("compiles; tests pending", False),
    ("waiting on CI", False),
    ("All done", True),
    ("Completed", True),
    ("not done", False),
    ("done but blocked", False),
    ("WIP done", False),
    ("wipe done", True),  # `wip` is a short marker: whole tokens only
    ("undone", False),  # long markers are token prefixes, not substrings
    ("doneness", True),
    ("mergedd", True),
    ("won't fix", True),  # contains `'`: substring rule
    ("wont fix", False),
    ("how to download", False),  # `to do` holds a space: substring rule
    ("in-progress done", False),
    ("failedover done", False),
    ("x_done_y", True),
    ("édone", True),  # non-ASCII letters separate tokens
    ("", False),
]


@pytest.mark.parametrize(("value", "done"), DONE_CASES)
def test_done_markers_decide_the_resume_point(store: MemoryStore, value: str, done: bool) -> None:
    store.save("progress:old", "still going")
    store.save("progress:new", value)
    block = render(store, now=newest_stamp(store))
    expected = "progress:old" if done else "progress:new"
    assert f"| resume: {expected} (just now)" in block
    assert f"{expected} [progress]: " in block
    assert sum(line.endswith("  <== RESUME") for line in lines(block)) == 1


def test_resume_point_only_from_progress_result_status(store: MemoryStore) -> None:
    store.save("note:a", "pending", type="note")
    store.save("decision:b", "pending", type="decision")
    assert "resume:" not in render(store)
    store.save("result:c", "pending", type="result")
    assert "| resume: result:c" in render(store)


RESOLVED_CASES = [
    ("migrate step 3 panics", False),
    ("Fixed in abc123", True),
    ("fixes landed", False),
    ("prefixed", False),
    ("unresolved", False),
    ("reopened: was fixed", False),
    ("still failing after fix", False),
    ("regressions: was resolved", True),
    ("no longer happens", True),
    ("no  longer", False),
    ("WORKS NOW", True),
    ("not an issue", True),
]


@pytest.mark.parametrize(("value", "resolved"), RESOLVED_CASES)
def test_resolved_markers_decide_the_error(store: MemoryStore, value: str, resolved: bool) -> None:
    store.save("error:old", "boom")
    store.save("error:new", value)
    block = render(store)
    expected = "error:old" if resolved else "error:new"
    assert lines(block)[2].endswith(f"| error: {expected}")


def test_ties_on_stamp_use_the_stated_tie_breaks(store: MemoryStore) -> None:
    # Imported entries can share a stamp: resume ties go to the type rank
    # (progress > status > result) then the smaller key; errors to the larger
    # key; candidates to the smaller key first.
    rows = [
        ("result:a", "result", "x"),
        ("status:b", "status", "x"),
        ("status:a", "status", "x"),
        ("error:a", "error", "x"),
        ("error:b", "error", "x"),
    ]
    store.import_entries(
        membolt.Entry.from_dict(d)
        for d in [
            {
                "key": key,
                "value": value,
                "type": kind,
                "namespace": "",
                "references": [],
                "createdAt": 100,
                "updatedAt": 100,
            }
            for key, kind, value in rows
        ]
    )
    block = render(store, now=100)
    assert "| resume: status:a (just now) | error: error:b" in block
    store.save("progress:z", "x", references=[])
    store.import_entries(
        membolt.Entry.from_dict(d)
        for d in [
            {
                "key": "progress:z",
                "value": "x",
                "type": "progress",
                "namespace": "",
                "references": [],
                "createdAt": 100,
                "updatedAt": 100,
            }
        ]
    )
    assert "| resume: progress:z" in render(store, now=100)


# ---------------------------------------------------------------------------
# §15.3 focus
# ---------------------------------------------------------------------------


def test_focus_terms_skip_stopwords_and_are_stemmed(store: MemoryStore) -> None:
    for i in range(6):
        note(store, f"filler:{i}", "x" * 300)
    note(store, "api:wiring", "x" * 300)
    note(store, "the:and", "x" * 300)
    note(store, "go:sql", "x" * 300)
    for i in range(6):
        note(store, f"newer:{i}", "y" * 300)
    # 85 tokens = 340 bytes: room for one 300-byte entry; no resume point,
    # so the first focus match, else the newest entry.
    assert keys_of(render(store, '"(API)!"', 85)) == ["api:wiring"]
    assert keys_of(render(store, "the and for", 85)) == ["newer:5"]  # stopwords only
    assert keys_of(render(store, "go ok", 85)) == ["go:sql"]  # short words count
    assert keys_of(render(store, "SQL", 85)) == ["go:sql"]
    # Terms, not prefixes: `wired` and `wiring` share the stem `wire`;
    # `wir` and `iring` are other terms.
    assert keys_of(render(store, "wired", 85)) == ["api:wiring"]
    assert keys_of(render(store, "wir", 85)) == ["newer:5"]
    assert keys_of(render(store, "iring", 85)) == ["newer:5"]


def test_focus_ranking_and_the_cap_of_five(store: MemoryStore) -> None:
    note(store, "m:value-only", "deploy")
    note(store, "m:deploy", "x")
    store.save("m:typed", "deploy", type="decision", references=[])
    note(store, "m:both-words", "deploy rollback")
    note(store, "deploy:rollback", "x")
    store.save("m:fact", "deploy", type="fact", references=[])
    store.save("m:empty-type", "deploy", type="", references=[])
    ranked = [e.key for e in store.search_words("deploy rollback")]
    entries = [ref.Entry(e.key, e.value, e.type) for e in store.entries()]
    assert ranked == [e.key for e, _ in ref.ranked(entries, "deploy rollback")]
    # Both words in the key (counted three times) rank first.
    assert ranked[:2] == ["deploy:rollback", "m:both-words"]
    # Seven entries match; a budget with room for the first five (and less
    # than 30 bytes more) shows exactly those five: the others are no anchors.
    assert len(ranked) == 7
    by_key = {e.key: e for e in store.entries()}
    five = sum(len(k) + len(by_key[k].value) + 30 for k in ranked[:5])
    block = render(store, "deploy rollback", -(-five // 4))
    assert sorted(keys_of(block)) == sorted(ranked[:5])


def test_repeated_focus_words_count_once(store: MemoryStore) -> None:
    for i in range(5):
        note(store, f"k:{i}", f"alpha v{i}")
    note(store, "beta:key", "x")
    for budget in (10, 40, 500):
        repeated = render(store, "alpha alpha alpha beta", budget)
        assert repeated == render(store, "beta alpha", budget)
    assert store.search_words("alpha alpha beta") == store.search_words("beta alpha")


# ---------------------------------------------------------------------------
# §5.7 ancestry and §5.2 priority
# ---------------------------------------------------------------------------


def test_ancestry_chain_is_capped_at_eight(store: MemoryStore) -> None:
    previous: list[str] = []
    for i in range(12):
        note(store, f"c{i:02d}", "x" * 50, references=previous[-1:])
        previous.append(f"c{i:02d}")
    store.save("progress:top", "working", references=["c11"])
    # The chain costs 49 + 7 × 83 = 630 bytes; 158 tokens leave 2 more.
    block = render(store, "", 158)
    assert keys_of(block) == ["c05", "c06", "c07", "c08", "c09", "c10", "c11", "progress:top"]


def test_ancestry_is_breadth_first_and_skips_missing_keys(store: MemoryStore) -> None:
    for key in ["p1", "p2", "g2", "g1"]:
        note(store, key)
    store.link("p1", "g1")
    store.link("p2", "g2")
    store.save("progress:x", "going", references=["gone", "p1", "p2"])
    # The chain (BFS) is progress:x, p1, p2, g1, g2: progress:x costs 45,
    # each note 33. 48 tokens = 192 bytes: the chain up to g1 (144), then
    # g2 is offered and fits (177); 47 tokens (188) too; 44 (176) not.
    assert keys_of(render(store, "", 48)) == ["g1", "g2", "p1", "p2", "progress:x"]
    assert keys_of(render(store, "", 44)) == ["g1", "p1", "p2", "progress:x"]
    assert "progress:x [progress]: going  <- p1, p2  <== RESUME" in render(store, "", 48)


def test_priority_entries_are_cut_to_the_budget_and_charged(store: MemoryStore) -> None:
    note(store, "old", "o" * 20)
    store.save("progress:big", "w" * 2000, references=[])
    note(store, "fits", "f" * 10)
    # §15.5: the resume point alone exceeds 100 tokens: it is cut to what
    # is left for its value (400 - 12 - 30 - 3 = 355 bytes), and nothing
    # else fits.
    block = render(store, "", 100)
    assert keys_of(block) == ["progress:big"]
    assert entry_lines(block) == ["progress:big [progress]: " + "w" * 355 + "...  <== RESUME"]
    # Costs: progress:big 2042, fits 44, old 53. 530 tokens = 2120 bytes
    # leave 78 after the priority entry: `fits` (newest) fits, `old` not.
    assert keys_of(render(store, "", 520)) == ["progress:big"]
    assert keys_of(render(store, "", 530)) == ["fits", "progress:big"]


def chained_store(store: MemoryStore, turns: int) -> None:
    """Saved turns, each a child of the one before (the shape that made 0.2
    overshoot its budget), a resume point at the end and an open error."""
    store.save_many(
        [
            (f"turn:{i:04d}", f"turn {i}: we talked about the deploy of service {i % 7} " * 3)
            for i in range(turns)
        ]
    )
    for i in range(1, turns):
        store.link(f"turn:{i:04d}", f"turn:{i - 1:04d}")
    store.save("progress:deploy", "deploy of service 3 pending " + "p" * 400)
    store.link("progress:deploy", f"turn:{turns - 1:04d}")
    store.save("error:deploy", "deploy of service 5 fails: " + "e" * 300)


@pytest.mark.parametrize("max_tokens", [0, 50, 100, 200, 500, 2000])
def test_the_budget_is_a_ceiling_on_chained_stores(store: MemoryStore, max_tokens: int) -> None:
    chained_store(store, 120)
    by_key = {e.key: e for e in store.entries()}
    for focus in ("", "what happened to the deploy of service 3?", "service turn talked"):
        block = render(store, focus, max_tokens, now=newest_stamp(store))
        shown = entry_lines(block)
        cost = 0
        for line in shown:
            key = line.split(" [", 1)[0]
            entry = by_key[key]
            value = line.split("]: ", 1)[1].split("  <- ", 1)[0].split("  <== RESUME")[0]
            # Values here have no characters that escaping changes.
            assert value == entry.value or (
                value.endswith("...") and entry.value.startswith(value[:-3])
            )
            cost += len(key) + len(value) + 30
        if max_tokens <= 0:
            # One entry alone: the resume point, its value cut to 200 bytes.
            assert [line.split(" [", 1)[0] for line in shown] == ["progress:deploy"]
            assert len(shown[0].split("]: ", 1)[1].split("  <")[0]) == 203
        else:
            assert cost <= max_tokens * 4, (focus, cost)
            assert shown


# ---------------------------------------------------------------------------
# §5.1/§5.2.5 budget fill
# ---------------------------------------------------------------------------


def test_fill_skips_rather_than_stops(store: MemoryStore) -> None:
    note(store, "small:old", "s")  # cost 9 + 1 + 30 = 40
    note(store, "large", "L" * 200)  # cost 235
    note(store, "medium", "m" * 50)  # cost 86
    # 40 tokens = 160 bytes: medium fits (86), large does not, small still does.
    assert keys_of(render(store, "", 40)) == ["medium", "small:old"]
    # Boundaries: 126 bytes are needed for both.
    assert keys_of(render(store, "", 32)) == ["medium", "small:old"]  # 128 bytes
    assert keys_of(render(store, "", 31)) == ["medium"]  # 124 bytes


def test_budget_cost_uses_raw_utf8_lengths(store: MemoryStore) -> None:
    note(store, "b", "世" * 10)  # 1 + 30 + 30 = 61 bytes
    note(store, "a", "x")  # 32 bytes, newest
    assert keys_of(render(store, "", 23)) == ["a"]  # 92 bytes < 32 + 61
    assert keys_of(render(store, "", 24)) == ["a", "b"]  # 96 bytes


def test_no_entry_is_kept_past_the_budget(store: MemoryStore) -> None:
    note(store, "older", "x")
    note(store, "huge", "h" * 5000)
    # §15.5: the newest candidate is no longer kept whatever it costs: the
    # older one that fits is shown.
    assert keys_of(render(store, "", 10)) == ["older"]
    # A budget of 0 (or less) shows the newest entry alone, cut to 200 bytes.
    for budget in (0, -3):
        assert entry_lines(render(store, "", budget)) == ["huge [note]: " + "h" * 200 + "..."]
    # With a resume point, that is the entry shown alone.
    store.save("status:s", "waiting", references=[])
    assert keys_of(render(store, "", 0)) == ["status:s"]
    assert keys_of(render(store, "", -100)) == ["status:s"]


def test_candidates_are_newest_first_with_smaller_key_on_ties(store: MemoryStore) -> None:
    store.import_entries(
        membolt.Entry.from_dict(d)
        for d in [
            {
                "key": key,
                "value": "x" * 40,
                "type": "note",
                "namespace": "",
                "references": [],
                "createdAt": 5,
                "updatedAt": 5,
            }
            for key in ["b", "a", "c"]
        ]
    )
    # Room for one (71 bytes each): the smaller key wins the tie.
    assert keys_of(render(store, "", 20)) == ["a"]
    assert keys_of(render(store, "", 40)) == ["a", "b"]


# ---------------------------------------------------------------------------
# §5.3 order
# ---------------------------------------------------------------------------


def test_parents_first_order_and_unrendered_parents(store: MemoryStore) -> None:
    note(store, "z:root", "root")
    note(store, "m:mid", "mid", references=["z:root"])
    note(store, "a:leaf", "leaf", references=["m:mid", "z:root"])
    block = render(store)
    assert keys_of(block) == ["z:root", "m:mid", "a:leaf"]
    assert "a:leaf [note]: leaf  <- m:mid, z:root" in block


def test_order_walks_through_entries_that_are_not_rendered(store: MemoryStore) -> None:
    note(store, "z:root", "root")
    note(store, "m:mid", "m" * 3000, references=["z:root"])
    note(store, "a:leaf", "leaf", references=["m:mid"])
    block = render(store, "", 30)
    # `m:mid` is not rendered, but the walk from `a:leaf` reaches `z:root`
    # through it, so the root still comes first; no edge is printed.
    assert keys_of(block) == ["z:root", "a:leaf"]
    assert "a:leaf [note]: leaf\n" in block


def test_walk_through_an_inverted_reference(store: MemoryStore) -> None:
    # u references z before z exists (an inverted edge once z is saved);
    # v -> u; a -> v. Only a and z are rendered. The walk from `a` reaches z
    # through v and u (neither rendered), so z comes before a.
    note(store, "u", "u" * 3000, references=["z"])
    note(store, "v", "v" * 3000, references=["u"])
    note(store, "z", "z")
    note(store, "a", "a", references=["v"])
    assert keys_of(render(store, "", 40)) == ["z", "a"]


def test_cycles_terminate_and_are_cut_where_they_close(store: MemoryStore) -> None:
    note(store, "a", "1")
    note(store, "b", "2", references=["a"])
    note(store, "c", "3", references=["b"])
    store.link("a", "c")  # a -> c -> b -> a
    block = render(store)
    assert keys_of(block) == ["b", "c", "a"]
    assert "a [note]: 1  <- c" in block
    assert "b [note]: 2  <- a" in block
    # A resume point inside the cycle: its chain is the whole cycle, and its
    # child in the cycle is downstream of it.
    store.save("c", "in progress", type="progress")
    block = render(store, "", 40)
    assert keys_of(block) == ["b", "c", "a"]
    assert lines(block)[-2] == "downstream of c: a"


def test_references_to_deleted_keys_are_skipped(store: MemoryStore) -> None:
    note(store, "parent")
    note(store, "child", "c", references=["parent", "other"])
    store.delete("parent")
    block = render(store)
    assert "child [note]: c\n" in block
    assert "parent [" not in block
    # The dangling reference stays stored and comes back with the key.
    note(store, "parent")
    assert "child [note]: c  <- parent" in render(store)


# ---------------------------------------------------------------------------
# §5.3 map line, duplicates, downstream line, §5.8 ages
# ---------------------------------------------------------------------------


def test_empty_type_renders_without_tag_and_counts_as_note(store: MemoryStore) -> None:
    store.save("plain", "no type", type="", references=[])
    note(store, "typed", "a note")
    block = render(store)
    assert "plain: no type" in block
    assert lines(block)[2] == "map: 2 note"


def test_map_counts_in_order_of_first_appearance(store: MemoryStore) -> None:
    note(store, "b", "x")
    store.save("a", "x", type="decision", references=["b"])
    note(store, "c", "x", references=["a"])
    assert lines(render(store))[2] == "map: 2 note, 1 decision"
    assert keys_of(render(store)) == ["b", "a", "c"]


def test_duplicates_are_flagged_from_12_bytes(store: MemoryStore) -> None:
    note(store, "a", "Same  Fact here")  # normalised: "same fact here" (14 bytes)
    note(store, "b", "same fact HERE ", references=["a"])
    note(store, "c", "short value", references=["b"])  # 11 bytes
    note(store, "d", "Short  value", references=["c"])
    note(store, "e", "twelve bytes", references=["d"])  # exactly 12
    note(store, "f", " Twelve\tbytes", references=["e"])
    block = render(store)
    assert "b [note]: same fact HERE   <- a  (same as a)" in block
    assert "d [note]: Short  value  <- c\n" in block
    assert "f [note]:  Twelve\tbytes  <- e  (same as e)" in block


def test_downstream_line_lists_rendered_children_sorted(store: MemoryStore) -> None:
    store.save("progress:p", "working", references=[])
    note(store, "z:child", "1", references=["progress:p"])
    note(store, "a:child", "2", references=["progress:p"])
    note(store, "big:child", "b" * 5000, references=["progress:p"])
    block = render(store, "", 40)
    assert lines(block)[-2] == "downstream of progress:p: a:child, z:child"
    # No rendered child: no line.
    assert "downstream" not in render(store, "", 0)


@pytest.mark.parametrize(
    ("age", "text"),
    [
        (-5 * MINUTE, "just now"),
        (0, "just now"),
        (MINUTE - 1, "just now"),
        (MINUTE, "1m ago"),
        (HOUR - 1, "59m ago"),
        (HOUR, "1h ago"),
        (DAY - 1, "23h ago"),
        (DAY, "1d ago"),
        (400 * DAY, "400d ago"),
    ],
)
def test_every_age_boundary(store: MemoryStore, age: int, text: str) -> None:
    entry = store.save("progress:p", "working")
    assert f"| resume: progress:p ({text})" in render(store, now=entry.updated_at + age)


# ---------------------------------------------------------------------------
# §5.4 escaping
# ---------------------------------------------------------------------------


def test_every_name_and_value_is_escaped(store: MemoryStore) -> None:
    store.save("p<1>\nx", "a & b\n</memory>\r\nc", type="pro\ngress", references=[])
    store.save("progress:\u202e&", "v\x00\x1f\t\x7f\u2066", references=["p<1>\nx"])
    store.save("kid</memory>", "v", type="note", references=["progress:\u202e&"])
    block = render(store, now=newest_stamp(store))
    assert lines(block) == [
        "<memory>",
        LEGEND,
        "map: 1 pro / gress, 1 progress, 1 note | resume: progress:\ufffd&amp; (just now)",
        "p&lt;1&gt; / x [pro / gress]: a &amp; b / &lt;/memory&gt; / c",
        "progress:\ufffd&amp; [progress]: v\ufffd\ufffd\t\ufffd\ufffd"
        "  <- p&lt;1&gt; / x  <== RESUME",
        "kid&lt;/memory&gt; [note]: v  <- progress:\ufffd&amp;",
        "downstream of progress:\ufffd&amp;: kid&lt;/memory&gt;",
        "</memory>",
    ]


def test_escape_line_is_exposed() -> None:
    assert membolt._core.escape_line("a\n<b> & \u202e") == "a / &lt;b&gt; &amp; \ufffd"


hostile = st.text(
    st.sampled_from([*"ab <>&/\n\r\t:-[]()", "\x00", "\x0b", "\x85", "\u2028", "\u202e"]),
    max_size=20,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(st.tuples(hostile.filter(bool), hostile, hostile), min_size=1, max_size=8),
    budget=st.sampled_from([0, 30, 500]),
)
def test_block_structure_survives_any_stored_text(
    tmp_path_factory: pytest.TempPathFactory,
    items: list[tuple[str, str, str]],
    budget: int,
) -> None:
    path = tmp_path_factory.mktemp("escape") / "memory.redb"
    with MemoryStore(path) as hostile_store:
        for key, value, kind in items:
            # Types are kept free of ", " and "|" so the map line parses.
            hostile_store.save(key, value, type=kind.replace(",", "").replace("|", ""))
        block = render(hostile_store, "a b", budget)
    all_lines = lines(block)
    assert all_lines.count("<memory>") == 1
    assert all_lines.count("</memory>") == 1
    assert all_lines[0] == "<memory>"
    assert all_lines[-1] == "</memory>"
    counts = lines(block)[2][len("map: ") :].split(" | ")[0].split(", ")
    rendered = sum(int(part.split(" ", 1)[0]) for part in counts)
    extra = len(all_lines) - 4 - rendered
    assert extra in (0, 1)
    if extra:
        assert all_lines[-2].startswith("downstream of ")


# ---------------------------------------------------------------------------
# Determinism
# ---------------------------------------------------------------------------


def test_same_store_same_bytes_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "memory.redb"
    with MemoryStore(path) as first:
        for i in range(40):
            first.save(f"k{(i * 7) % 40}", f"value {i} build users", type=None)
        first.link("k1", "k3")
        first.link("k3", "k1")
        here = [
            first.render(focus, budget, now_ms=10**13)
            for focus in ("", "build k1")
            for budget in (0, 50, 500)
        ]
    script = textwrap.dedent(
        f"""
        import json, membolt
        s = membolt.MemoryStore({str(path)!r})
        out = [s.render(f, b, now_ms=10**13) for f in ("", "build k1") for b in (0, 50, 500)]
        print(json.dumps(out))
        """
    )
    import json

    result = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    )
    assert json.loads(result.stdout) == here
    with MemoryStore(path) as again:
        assert [
            again.render(f, b, now_ms=10**13) for f in ("", "build k1") for b in (0, 50, 500)
        ] == here
