"""Differential tests: the Rust renderer against the plain-Python model.

Random stores are built through the real API (saves with inferred and explicit
types, explicit references to existing and missing keys, batches, deletes,
links that make cycles, imports with old stamps), and after random steps the
block ``store.render(...)`` must equal ``reference_render.render(...)`` over
the store's entries, byte for byte, for many focus strings, budgets and clocks.
Renders happen between writes, so the indexes' incremental paths (not only
their bulk build) are what is compared.

Text is drawn from an explicit alphabet that mixes markers, focus words,
escaping hazards (``<``, ``&``, newlines, controls, bidi characters) and
non-ASCII letters with interesting lower-case mappings. It avoids the code
points whose lower-case mapping is newer than Python 3.11's Unicode tables
(see ``reference_render.lower``).
"""

from __future__ import annotations

import gc
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import membolt

from support import reference_render as ref

FRAGMENTS = [
    "done",
    "not done",
    "Done.",
    "complete",
    "incomplete",
    "pending",
    "wip",
    "WIP",
    "wipe",
    "in-progress",
    "to do",
    "won't fix",
    "wontfix",
    "merged",
    "failed",
    "fixed",
    "Fixed",
    "prefixed",
    "reopened",
    "still failing",
    "resolved",
    "unresolved",
    "no longer",
    "works now",
    "build",
    "builds",
    "users",
    "endpoint",
    "api",
    "API_v2",
    "migration",
    "migrate",
    "the",
    "and",
    "then",
    "thi",
    "ab",
    "x1",
    "result",
    "status",
    "progress",
    "tool",
    "error",
    "</memory>",
    "<memory>",
    "a&b",
    "<-",
    "\n",
    "\r\n",
    " \n ",
    "\t",
    "\x00",
    "\x1f",
    "\x7f",
    "\u202e",
    "\u2066",
    "\u3000",
    "\u0085",
    "\u00a0",
    "é",
    "École",
    "İ",
    "ΟΔΟΣ",
    "ß",
    "世界",
    "\u212a",  # Kelvin sign: lowers to ASCII k
    "same value text here",
    "Same  Value text HERE",
    ":",
    "_",
    "-",
    ".",
    "'",
    "(",
    ")",
    "!",
]

text = st.lists(st.sampled_from(FRAGMENTS), max_size=6).map(
    lambda parts: "".join(p if i == 0 else " " + p for i, p in enumerate(parts))
)
key_text = st.one_of(
    st.sampled_from(
        [
            "prompt:build",
            "tool:write_users",
            "result:build",
            "status:ci",
            "error:migration",
            "progress:api",
            "decision:db",
            "note",
            "a",
            "b",
            "z",
            "wip_status",
            "last_action",
            "k<1>",
            "k\nline",
            "é:clé",
            "世界:result",
            "progress:\u202e",
            "turn:last",
        ]
    ),
    text.filter(bool),
)
TYPES = ["progress", "result", "status", "error", "note", "fact", "", "prompt", "tool_result"]
type_choice = st.sampled_from([None, None, None, *TYPES, "decision", "<x>\ny", "a&b"])
reference_lists = st.lists(key_text, max_size=3)

op = st.one_of(
    st.tuples(st.just("save"), key_text, text, type_choice, st.none() | reference_lists),
    st.tuples(
        st.just("save_many"),
        st.lists(st.tuples(key_text, text, type_choice), min_size=1, max_size=4),
    ),
    st.tuples(st.just("delete"), key_text),
    st.tuples(st.just("link"), key_text, key_text),
    st.tuples(st.just("unlink"), key_text, key_text),
    # Import an entry with an old (or equal) stamp: out-of-order inserts.
    st.tuples(st.just("import"), key_text, text, type_choice, reference_lists, st.integers(0, 40)),
    st.tuples(st.just("render")),
)

focus_text = st.one_of(
    st.just(""),
    text,
    st.sampled_from(
        [
            "fix the users endpoint",
            "build build API",
            "migration, please!",
            "(api) [users] {build}",
            "the and for",
            "thi",
            "wip progress status",
            "École résumé İstanbul",
            "kelvin \u212a",
        ]
    ),
)
budgets = st.sampled_from([-5, 0, 1, 8, 20, 50, 100, 500, 100_000])
AGES = [-10_000, 0, 59_999, 60_000, 3_599_999, 3_600_000, 86_399_999, 86_400_000, 10**10]


def model_entries(store: membolt.MemoryStore) -> list[ref.Entry]:
    return [
        ref.Entry(
            e.key, e.value, e.type, e.namespace, list(e.references), e.created_at, e.updated_at
        )
        for e in store.entries()
    ]


def assert_same_render(store: membolt.MemoryStore, focus: str, budget: int, age: int) -> str:
    entries = model_entries(store)
    newest = max((e.updated_at for e in entries), default=0)
    now = newest + age
    expected = ref.render(entries, focus, budget, now)
    actual = store.render(focus, budget, now_ms=now)
    assert actual == expected, f"focus={focus!r} budget={budget} now={now}"
    return actual


def apply(store: membolt.MemoryStore, operation: tuple[object, ...]) -> None:
    name = operation[0]
    if name == "save":
        _, key, value, kind, references = operation
        store.save(key, value, type=kind, references=references)  # type: ignore[arg-type]
    elif name == "save_many":
        store.save_many(operation[1], caps=False)  # type: ignore[arg-type]
    elif name == "delete":
        store.delete(operation[1])  # type: ignore[arg-type]
    elif name in ("link", "unlink"):
        _, key, parent = operation
        if key != parent and key in store and parent in store:
            getattr(store, name)(key, parent)
    elif name == "import":
        _, key, value, kind, references, back = operation
        entries = store.entries()
        newest = max((e.updated_at for e in entries), default=1_000)
        stamp = newest - int(back)  # type: ignore[call-overload]
        store.import_entries(
            membolt.Entry.from_dict(d)
            for d in [
                {
                    "key": key,
                    "value": value,
                    "type": kind or "",
                    "namespace": "",
                    "references": [r for r in references if r != key],  # type: ignore[attr-defined]
                    "createdAt": stamp - 5,
                    "updatedAt": stamp,
                }
            ]
        )


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    ops=st.lists(op, max_size=30),
    checks=st.lists(st.tuples(focus_text, budgets, st.sampled_from(AGES)), min_size=1, max_size=6),
)
def test_rust_render_equals_model(
    ops: list[tuple[object, ...]], checks: list[tuple[str, int, int]]
) -> None:
    run_and_compare(ops, checks)


def run_and_compare(ops: list[tuple[object, ...]], checks: list[tuple[str, int, int]]) -> None:
    """Applies ``ops`` to a new store, comparing renders on ``render`` steps
    and after the last step."""
    with tempfile.TemporaryDirectory() as tmp:
        store = membolt.MemoryStore(Path(tmp) / "memory.redb")
        try:
            for i, operation in enumerate(ops):
                if operation[0] == "render":
                    focus, budget, age = checks[i % len(checks)]
                    assert_same_render(store, focus, budget, age)
                else:
                    apply(store, operation)
            for focus, budget, age in checks:
                assert_same_render(store, focus, budget, age)
        finally:
            store.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op, min_size=1, max_size=25), focus=focus_text, budget=budgets)
def test_render_after_reopen_equals_model(
    ops: list[tuple[object, ...]], focus: str, budget: int
) -> None:
    """A store loaded from its file (the bulk index build) renders the same."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory.redb"
        store = membolt.MemoryStore(path)
        for operation in ops:
            if operation[0] != "render":
                apply(store, operation)
        before = store.render(focus, budget, now_ms=10**13)
        store.close()
        del store
        gc.collect()
        reopened = membolt.MemoryStore(path)
        try:
            after = assert_same_render(reopened, focus, budget, 0)
            entries = model_entries(reopened)
            now = max((e.updated_at for e in entries), default=0)
            assert before == reopened.render(focus, budget, now_ms=10**13)
            del after, now
        finally:
            reopened.close()


# Agent-like histories: auto-linked saves of many distinct keys (key order
# unrelated to history order), values of varied size naming a few topics,
# overwrites that make old entries the newest, deletes that cut chains, and
# links. Tight budgets then keep entries far apart in the graph, so the order
# depends on walks through entries that are not rendered.
chain_key = st.builds(
    lambda letter, n: f"{letter}{n}", st.sampled_from("abcdefghmnpqrstuvwxyz"), st.integers(0, 40)
)
chain_value = st.builds(
    lambda topic, size, marker: f"topic{topic} " + "x" * size + marker,
    st.integers(0, 6),
    st.integers(0, 120),
    st.sampled_from(["", " done", " pending", " fixed", " reopened"]),
)
chain_op = st.one_of(
    st.tuples(st.just("save"), chain_key, chain_value, type_choice, st.none()),
    st.tuples(st.just("save"), chain_key, chain_value, type_choice, st.none()),
    st.tuples(st.just("save"), chain_key, chain_value, type_choice, st.none()),
    st.tuples(
        st.just("save_many"),
        st.lists(st.tuples(chain_key, chain_value, type_choice), min_size=1, max_size=5),
    ),
    st.tuples(st.just("delete"), chain_key),
    st.tuples(st.just("link"), chain_key, chain_key),
    st.tuples(
        st.just("save"), chain_key, chain_value, type_choice, st.lists(chain_key, max_size=2)
    ),
    st.tuples(
        st.just("import"),
        chain_key,
        chain_value,
        type_choice,
        st.lists(chain_key, max_size=2),
        st.integers(0, 200),
    ),
    st.tuples(st.just("render")),
)
chain_focus = st.builds(
    lambda topics: " ".join(f"topic{t}" for t in topics), st.lists(st.integers(0, 7), max_size=3)
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    ops=st.lists(chain_op, min_size=5, max_size=80),
    checks=st.lists(
        st.tuples(chain_focus, st.sampled_from([0, 10, 30, 60, 120, 400]), st.just(0)),
        min_size=1,
        max_size=5,
    ),
)
def test_rust_render_equals_model_on_agent_like_histories(
    ops: list[tuple[object, ...]], checks: list[tuple[str, int, int]]
) -> None:
    run_and_compare(ops, checks)


def test_catch_up_of_another_process_batch_in_key_order(tmp_path: Path) -> None:
    """Another process's batch is applied here in key order, not stamp order:
    the fill index must place (or rebuild) them right."""
    path = tmp_path / "memory.redb"
    store = membolt.MemoryStore(path)
    for i in range(30):
        store.save(f"note:{i:03d}", f"value {i} build")
    assert_same_render(store, "build", 300, 0)  # builds the lazy indexes here
    for count in (3, 100):
        script = textwrap.dedent(
            f"""
            import membolt
            s = membolt.MemoryStore({str(path)!r})
            # Keys descending while stamps ascend.
            s.save_many([(f"z{{i:04d}}", f"other build {{i}}") for i in range({count}, 0, -1)],
                         caps=False)
            s.close()
            """
        )
        subprocess.run([sys.executable, "-c", script], check=True)
        for budget in (0, 60, 300, 5000):
            assert_same_render(store, "build other", budget, 0)
    store.close()


def test_a_focus_of_many_distinct_words_equals_the_model(tmp_path: Path) -> None:
    # A pasted log as the prompt: thousands of distinct words, many repeated.
    # Scoring stays in proportion to the words' postings (it once compared
    # every word with every other one).
    store = membolt.MemoryStore(tmp_path / "many.redb")
    store.save("tool:edit:f17", "edited src/f17.go and src/f4000.go", type="tool_result")
    store.save("progress:files", "f17 and f23 pending; see f4000", type="progress")
    store.save("note:other", "nothing about files")
    store.save("prompt:users", "users endpoint", type="prompt")
    words = [f"src/f{i}.go" for i in range(6000)] + ["users"] * 3 + ["f17"] * 2
    focus = " and ".join(words)
    assert "tool:edit:f17" in assert_same_render(store, focus, 500, 0)
    assert_same_render(store, focus, 20, 60_000)
