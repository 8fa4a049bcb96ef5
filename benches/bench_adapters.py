"""What the framework adapters add to membolt's own calls: LangGraph's
``put``/``get``/``search`` through :class:`MemboltStore` against the
``save``/``get``/``search_words_scored`` they map onto, and the memory
tool's ``view``/``create`` through :class:`MemboltMemoryTool`, in one run,
side by side (target: a ``put`` or ``get`` within 1.5x of membolt's call).

    pip install -e '.[test]' && maturin develop --release
    python benches/bench_adapters.py                     # store on disk, 10k entries
    python benches/bench_adapters.py --dir /dev/shm      # fsync nearly free: CPU only
    python benches/bench_adapters.py --sizes 1000 100000 --rounds 2001

Each pair runs interleaved (adapter, baseline, adapter, ...) on one store
of SIZE entries (plus 100 LangGraph items in the namespace read and
searched), and the p50 over ``--rounds`` calls is reported, after a
warm-up. The baselines:

* ``save``: ``store.save(key, json.dumps(value))``, a durable save of the
  same bytes;
* ``get``: ``store.get(key)``; ``get+json``: ``json.loads(store.get(key)
  .value)``, what a caller of membolt storing JSON itself does;
* ``search_words_scored``: the ranked search the adapter's query search
  calls (the adapter also lists the keys under the namespace, which is
  ``keys()`` of the whole store, reads its items, filters and pages);
* memory tool ``view``: ``store.get``; ``create``: ``store.save``; a
  ``create`` holds the store (``hold()``) to check and write as one step.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import membolt
from membolt import MemoryStore

NAMESPACE = ("users", "42", "memories")
VALUE = {"text": "prefers dark roast coffee, no sugar; asks for the window seat", "n": 7}


def median_pair(
    adapter: Callable[[], object], baseline: Callable[[], object], rounds: int
) -> tuple[float, float]:
    """p50 seconds of each, the two calls interleaved."""
    adapter()
    baseline()
    mine, theirs = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        adapter()
        mine.append(time.perf_counter() - start)
        start = time.perf_counter()
        baseline()
        theirs.append(time.perf_counter() - start)
    return statistics.median(mine), statistics.median(theirs)


def fill(store: MemoryStore, size: int) -> None:
    batch = [
        (f"note:{i}", f"entry {i} about topic {i % 97} and more words", "note", [])
        for i in range(size)
    ]
    for start in range(0, size, 10_000):
        store.save_many(batch[start : start + 10_000])


def run(size: int, directory: Path, rounds: int) -> list[tuple[str, str, float, float]]:
    from anthropic.types.beta import (
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818ViewCommand,
    )

    from membolt.integrations.anthropic import MemboltMemoryTool
    from membolt.integrations.langgraph import MemboltStore

    rows = []
    with tempfile.TemporaryDirectory(dir=directory) as folder:
        store = MemoryStore(Path(folder) / "memory.redb")
        fill(store, size)
        adapter = MemboltStore(store)
        for i in range(100):
            adapter.put(NAMESPACE, f"item-{i}", {**VALUE, "n": i})
        text = json.dumps(VALUE)
        counter = itertools.count()

        def put() -> None:  # into a namespace of its own: the one read keeps 100 items
            adapter.put(("users", "42", "puts"), f"put-{next(counter)}", VALUE)

        def save() -> None:
            store.save(f"save:{next(counter)}", text, type="langgraph")

        rows.append(("put", "save", *median_pair(put, save, rounds)))
        keys = itertools.cycle(range(100))
        rows.append(
            (
                "get",
                "get",
                *median_pair(
                    lambda: adapter.get(NAMESPACE, f"item-{next(keys)}"),
                    lambda: store.get(f"langgraph:users/42/memories/item-{next(keys)}"),
                    rounds * 10,
                ),
            )
        )
        rows.append(
            (
                "get",
                "get+json",
                *median_pair(
                    lambda: adapter.get(NAMESPACE, f"item-{next(keys)}"),
                    lambda: json.loads(
                        store.get(f"langgraph:users/42/memories/item-{next(keys)}").value  # type: ignore[union-attr]
                    ),
                    rounds * 10,
                ),
            )
        )
        rows.append(
            (
                "search(query, limit=10)",
                "search_words_scored",
                *median_pair(
                    lambda: adapter.search(NAMESPACE, query="dark roast coffee", limit=10),
                    lambda: store.search_words_scored("dark roast coffee", limit=10),
                    max(rounds // 10, 11),
                ),
            )
        )
        tool = MemboltMemoryTool(store)
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create", path="/memories/notes.md", file_text=text
            )
        )
        view = BetaMemoryTool20250818ViewCommand(command="view", path="/memories/notes.md")
        rows.append(
            (
                "memory view",
                "get",
                *median_pair(
                    lambda: tool.view(view), lambda: store.get("/memories/notes.md"), rounds * 10
                ),
            )
        )

        def create() -> None:
            tool.create(
                BetaMemoryTool20250818CreateCommand(
                    command="create", path=f"/memories/n{next(counter)}.md", file_text=text
                )
            )

        rows.append(("memory create", "save", *median_pair(create, save, max(rounds // 10, 11))))
        store.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--rounds", type=int, default=501)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    if membolt._core.DEBUG_BUILD:
        print(
            "note: a debug build; benchmark a release build (maturin develop --release)",
            file=sys.stderr,
        )
    print(f"store in {args.dir}, p50 of {args.rounds} rounds (get: x10, search and create: /10)\n")
    print("| entries | adapter call | membolt call | adapter p50 | membolt p50 | ratio |")
    print("|---:|---|---|---:|---:|---:|")
    for size in args.sizes:
        for name, baseline, mine, theirs in run(size, args.dir, args.rounds):
            print(
                f"| {size:,} | {name} | {baseline} | {mine * 1e6:,.1f} µs | "
                f"{theirs * 1e6:,.1f} µs | {mine / theirs:.2f}× |"
            )


if __name__ == "__main__":
    main()
