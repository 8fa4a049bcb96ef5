"""Broad searches and queries, side by side with a Python dict scan.

    python benches/bench_broad.py                        # 1k, 10k, 100k
    python benches/bench_broad.py --sizes 1000000 --rounds 5

The store holds agent-shaped entries whose values are 6 to 60 words drawn
from a vocabulary of 32 common words, so that a search for one of them
(``DEPLOY``) matches most entries: the case a trigram filter cannot narrow.
Each figure is measured twice: on the store as the process that wrote it
holds it, and on the same file loaded by a fresh handle. Baselines in the
same run: a Python dict scan over pre-lowercased text, and (for the type
filter) a list comprehension over the same dicts. Figures are p50 in ms.
Needs a release build (``maturin develop --release``).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import membolt
from membolt import AgentMemory, MemoryStore

VOCABULARY = [
    *("deploy", "build", "test", "error", "billing", "provider", "decision", "user"),
    *("api", "handler", "config", "database", "cache", "request", "response", "server"),
    *("client", "queue", "worker", "retry", "timeout", "release", "branch", "merge"),
    *("review", "schema", "migration", "index", "token", "session", "metric", "log"),
]
TYPES = ("note", "progress", "result", "error", "decision", "status", "context", "file")
QUERY = "DEPLOY"
MISS = "qzxjq"


def broad_entries(n: int, seed: int = 7) -> Iterator[tuple[str, str, str]]:
    """(key, value, type): values of 6-60 vocabulary words, ~230 bytes on average."""
    rng = random.Random(seed)
    for i in range(n):
        kind = TYPES[i % len(TYPES)]
        words = rng.choices(VOCABULARY, k=rng.randint(6, 60))
        yield f"{kind}:{rng.choice(VOCABULARY)}-{i:07d}", " ".join(words), kind


def p50(run: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        run()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e6


RSS_CHILD = """
import json, sys, membolt
def rss():
    with open("/proc/self/status") as f:
        return {l.split(":")[0]: int(l.split()[1]) for l in f if l.startswith("VmRSS")}["VmRSS"]
before = rss()
s = membolt.MemoryStore(sys.argv[1])
s.search(sys.argv[2]); s.render("deploy the api", 500)
print(json.dumps({"kib": rss() - before}))
"""


def measure(size: int, rounds: int, work: Path) -> dict[str, float]:
    path = work / f"broad-{size}" / "memory.redb"
    entries = list(broad_entries(size))
    raw_bytes = sum(len(k.encode()) + len(v.encode()) for k, v, _ in entries)
    store = MemoryStore(path, timeout=60)
    for start in range(0, size, 10_000):
        store.save_many(entries[start : start + 10_000], caps=False)
    copy = work / f"broad-{size}-reloaded" / "memory.redb"
    copy.parent.mkdir(parents=True)
    membolt._core._release_all()
    shutil.copyfile(path, copy)
    reloaded = MemoryStore(copy, timeout=60)
    reloaded.keys()
    lowered = {k: (k.lower(), v.lower(), t) for k, v, t in entries}
    needle = QUERY.lower()
    out: dict[str, float] = {"size": size, "raw_bytes": raw_bytes}
    out["hits"] = len(store.search(QUERY))
    out["dict_scan"] = p50(
        lambda: [k for k, (lk, lv, _) in lowered.items() if needle in lk or needle in lv], rounds
    )
    out["dict_filter"] = p50(
        lambda: [k for k, (_, _, t) in lowered.items() if t == "error"], rounds
    )
    for name, handle in (("built", store), ("reloaded", reloaded)):
        memory = AgentMemory(handle)
        out[f"{name}_search"] = p50(lambda h=handle: h.search(QUERY), rounds)
        out[f"{name}_miss"] = p50(lambda h=handle: h.search(MISS), rounds)
        out[f"{name}_tool"] = p50(
            lambda m=memory: m.call_tool("memory_search", {"query": QUERY}), rounds
        )
        out[f"{name}_words"] = p50(
            lambda h=handle: h.search_words_ranked("deploy billing qqqq", 20), rounds
        )
        out[f"{name}_filter"] = p50(
            lambda m=memory: m.query('filter(memory, .type == "error")'), rounds
        )
    child = subprocess.run(
        [sys.executable, "-c", RSS_CHILD, str(copy), QUERY],
        check=True,
        capture_output=True,
        text=True,
    )
    out["rss_bytes_per_raw_byte"] = json.loads(child.stdout)["kib"] * 1024 / raw_bytes
    store.close()
    reloaded.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    if membolt._core.DEBUG_BUILD:
        sys.exit("bench_broad.py: build with `maturin develop --release` first")
    print(
        "| entries | hits | dict scan | search (built / reloaded) | ×dict | miss | "
        "memory_search tool | words fallback | filter .type (built / reloaded) | "
        "list-comp filter | RSS ×raw text |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="membolt-broad-") as work:
            r = measure(size, args.rounds, Path(work))
        worst = max(r["built_search"], r["reloaded_search"])
        print(
            f"| {size:,} | {r['hits']:,.0f} | {r['dict_scan']:.2f} ms | "
            f"{r['built_search']:.2f} / {r['reloaded_search']:.2f} ms | "
            f"{r['dict_scan'] / worst:.1f}× | "
            f"{max(r['built_miss'], r['reloaded_miss']):.3f} ms | "
            f"{r['built_tool']:.2f} / {r['reloaded_tool']:.2f} ms | "
            f"{r['built_words']:.2f} / {r['reloaded_words']:.2f} ms | "
            f"{r['built_filter']:.2f} / {r['reloaded_filter']:.2f} ms | "
            f"{r['dict_filter']:.2f} ms | {r['rss_bytes_per_raw_byte']:.1f}× |"
        )


if __name__ == "__main__":
    main()
