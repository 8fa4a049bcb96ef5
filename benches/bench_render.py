"""``render(focus, 500)`` at 1k, 10k, 100k and 1M entries, and the plain-Python
model at 100k in the same run (§5; the performance targets of the README).

Run (release build first; benchmarks are disabled in the default pytest run)::

    maturin develop --release
    pytest benches/bench_render.py --benchmark-enable --benchmark-time-unit=us \
        --benchmark-columns=median,mean,min,max,rounds --benchmark-sort=name

Stores are built the way an agent builds them: turns of extraction batches
(``save_many``, so every batch is an auto-linked chain and tool results fan out
from the newest progress entry), each turn also overwriting the same few
status keys (``turn:last``, ``last_action``, ``progress:progress``...), so
long-lived keys are the newest while created long ago. Values are ~230 bytes
of prose over a shared vocabulary plus a per-turn component name, so the
focus below matches a handful of entries from the middle of the history. A
second shape, one auto-linked chain through the whole store (every entry
reaches every older one), is the worst case of the parents-first walk.
Built stores are cached under ``$TMPDIR/membolt-bench`` (delete it to
rebuild). Caps are off while building: the sizes are the point.
"""

from __future__ import annotations

import gc
import os
import random
import tempfile
import time
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import membolt

from support import reference_render as ref

SIZES = [1_000, 10_000, 100_000, 1_000_000]
GENERATOR_VERSION = 2
TURNS_PER_BATCH = 50
BENCH_DIR = Path(os.environ.get("MEMBOLT_BENCH_DIR", Path(tempfile.gettempdir()) / "membolt-bench"))

VOCABULARY = [
    "the",
    "handler",
    "returns",
    "a",
    "paginated",
    "list",
    "of",
    "users",
    "and",
    "the",
    "client",
    "retries",
    "on",
    "timeout",
    "while",
    "the",
    "migration",
    "adds",
    "a",
    "nullable",
    "column",
    "to",
    "the",
    "orders",
    "table",
    "before",
    "deploy",
    "tests",
    "cover",
    "the",
    "webhook",
    "signature",
    "check",
    "and",
    "the",
    "cache",
    "invalidation",
    "path",
    "config",
    "loads",
    "from",
    "env",
    "with",
    "defaults",
    "for",
    "the",
    "database",
    "url",
    "and",
    "the",
    "queue",
    "name",
    "build",
    "pipeline",
    "runs",
    "lint",
    "then",
    "unit",
    "tests",
    "then",
    "integration",
    "tests",
    "in",
    "parallel",
    "we",
    "decided",
    "to",
    "keep",
    "the",
    "legacy",
    "endpoint",
    "until",
    "clients",
    "move",
    "to",
    "the",
    "new",
    "schema",
]
TOOLS = ["bash_exec", "write_file", "edit_file", "web_search", "sql_query"]


def component(turn: int) -> str:
    """A per-turn name: rare words that a focus can single out."""
    return f"svc{turn * 7919 % 100_003}"


def prose(rng: random.Random, turn: int, size: int = 220) -> str:
    words = [component(turn)]
    length = len(words[0])
    while length < size:
        word = rng.choice(VOCABULARY)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)


def turn_items(rng: random.Random, turn: int) -> list[tuple[str, str, str | None]]:
    """One agent turn: prompt, tool results, result, decision/file/note,
    errors now and then, and the overwritten status keys."""
    items: list[tuple[str, str, str | None]] = [
        (f"prompt:turn-{turn}", prose(rng, turn), None),
    ]
    for tool in rng.sample(TOOLS, 2):
        items.append((f"tool:{tool}:{component(turn)}_{turn}", prose(rng, turn), None))
    items.append((f"result:{component(turn)}-{turn}", prose(rng, turn), None))
    kind = rng.choice(["decision", "file", "note", "context"])
    items.append((f"{kind}:{component(turn)}-{turn}", prose(rng, turn), kind))
    if turn % 9 == 0:
        resolved = " fixed" if turn % 2 else ""
        items.append((f"error:{component(turn)}-{turn}", prose(rng, turn) + resolved, None))
    items.append(("progress:progress", f"turn {turn}: " + prose(rng, turn, 120), None))
    items.append(("last_action", f"updated {component(turn)} handler", None))
    items.append(("turn:last", f"turn at {turn} | " + prose(rng, turn, 150), "note"))
    return items


def build_store(path: Path, size: int) -> None:
    rng = random.Random(size)
    store = membolt.MemoryStore(path, timeout=60)
    turn = 0
    started = time.perf_counter()
    while len(store) < size:
        batch: list[tuple[str, str, str | None]] = []
        for _ in range(TURNS_PER_BATCH):
            batch.extend(turn_items(rng, turn))
            turn += 1
        missing = size - len(store)
        # New keys per turn = items minus the 3 overwritten ones (after turn 0).
        store.save_many(trim_batch(batch, missing, store), caps=False)
    store.close()
    print(f"built {size} entries in {time.perf_counter() - started:.1f} s")


def trim_batch(
    batch: list[tuple[str, str, str | None]], missing: int, store: membolt.MemoryStore
) -> list[tuple[str, str, str | None]]:
    """Cuts the batch so that the store ends at exactly the wanted size."""
    out = []
    new = 0
    for item in batch:
        is_new = item[0] not in store and all(item[0] != o[0] for o in out)
        if is_new:
            if new == missing:
                continue
            new += 1
        out.append(item)
    return out


def build_chain_store(path: Path, size: int) -> None:
    """The worst case for the parents-first walk: one auto-linked chain
    through the whole store (every entry a note whose parent is the newest
    entry), no overwrites, so every entry reaches every older one. Keys
    descend as the chain grows, so the walk starts from the newest kept
    entries and must go down the chain to the old matches."""
    rng = random.Random(size)
    store = membolt.MemoryStore(path, timeout=60)
    started = time.perf_counter()
    batch = 1000
    for start in range(0, size, batch):
        store.save_many(
            [
                (f"note:{size - i:07d}", prose(rng, i // 6), "note")
                for i in range(start, min(size, start + batch))
            ],
            caps=False,
        )
    store.close()
    print(f"built a {size}-entry chain in {time.perf_counter() - started:.1f} s")


def store_path(size: int, shape: str = "agent") -> Path:
    path = BENCH_DIR / f"render-v{GENERATOR_VERSION}-{shape}-{size}" / "memory.redb"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        if shape == "agent":
            build_store(path, size)
        else:
            build_chain_store(path, size)
    return path


def focus_for(size: int) -> str:
    """A user prompt naming the component of a turn in the middle of the
    history (matching the few entries of that turn); its other words are
    stopwords or match nothing."""
    turns = size // 6
    return f"Why does {component(turns // 2)} fail again?"


#: A broad focus: both words occur in most values of these stores, so every
#: entry is a candidate (the token index cannot narrow it down).
BROAD_FOCUS = "timeout handler"


_open: dict[tuple[int, str], membolt.MemoryStore] = {}


def opened(size: int, shape: str = "agent") -> membolt.MemoryStore:
    if (size, shape) not in _open:
        _open[size, shape] = membolt.MemoryStore(store_path(size, shape), timeout=60)
    return _open[size, shape]


def now_of(store: membolt.MemoryStore) -> int:
    return store.get("turn:last").updated_at + 90_000  # type: ignore[union-attr]


@pytest.mark.parametrize("size", SIZES, ids=[f"{n // 1000}k" for n in SIZES])
def test_render_rust(benchmark: BenchmarkFixture, size: int) -> None:
    store = opened(size)
    focus = focus_for(size)
    now = now_of(store)
    block = store.render(focus, 500, now_ms=now)  # warm: builds the lazy indexes
    assert block.startswith("<memory>")
    result = benchmark(store.render, focus, 500, now)
    assert result == block


def test_open_and_first_render_100k(benchmark: BenchmarkFixture) -> None:
    """A process opening a closed store: full load, index build, render."""
    path = store_path(100_000)
    focus = focus_for(100_000)
    cached = _open.pop((100_000, "agent"), None)
    if cached is not None:
        cached.close()
    del cached
    gc.collect()

    def cold_render() -> str:
        store = membolt.MemoryStore(path, timeout=60)
        try:
            return store.render(focus, 500, now_ms=0)
        finally:
            store.close()
            del store
            gc.collect()

    assert benchmark.pedantic(cold_render, rounds=3).startswith("<memory>")


@pytest.mark.parametrize("size", [100_000, 1_000_000], ids=["100k", "1000k"])
def test_render_rust_chain_worst_case(benchmark: BenchmarkFixture, size: int) -> None:
    store = opened(size, "chain")
    # The entries of turn size // 12 sit in the middle of the chain. With
    # 1000 tokens, their ancestry leaves room for the newest entries too, so
    # the walk must go from the newest kept entries down to the middle.
    focus = f"why does {component(size // 12)} fail?"
    now = 10**13
    block = store.render(focus, 1000, now_ms=now)
    newest = f"note:{1:07d} [note]"
    assert newest in block
    assert block.index(newest) > block.index(f"note:{size // 2:07d} [note]")
    assert benchmark(store.render, focus, 1000, now) == block


def test_render_rust_mixed_focus_100k(benchmark: BenchmarkFixture) -> None:
    """A rare component name and two words found in most values."""
    store = opened(100_000)
    focus = f"{component(100_000 // 12)} handler timeout"
    now = now_of(store)
    block = store.render(focus, 500, now_ms=now)
    assert benchmark(store.render, focus, 500, now) == block


def test_render_rust_broad_focus_100k(benchmark: BenchmarkFixture) -> None:
    store = opened(100_000)
    now = now_of(store)
    block = store.render(BROAD_FOCUS, 500, now_ms=now)
    assert benchmark(store.render, BROAD_FOCUS, 500, now) == block


def test_render_python_model_100k(benchmark: BenchmarkFixture) -> None:
    store = opened(100_000)
    focus = focus_for(100_000)
    now = now_of(store)
    entries = [
        ref.Entry(
            e.key, e.value, e.type, e.namespace, list(e.references), e.created_at, e.updated_at
        )
        for e in store.entries()
    ]
    result = benchmark.pedantic(ref.render, args=(entries, focus, 500, now), rounds=5)
    assert result == store.render(focus, 500, now_ms=now)
