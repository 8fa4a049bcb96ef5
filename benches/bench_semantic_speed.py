"""What recall by meaning (§15.4) costs the core: searches, a focused
render and saves with vectors, in one process and in a new one, against
the same store searched by words alone.

    pip install '.[bench]' numpy   # a release build
    python benches/bench_semantic_speed.py                    # 10k, 100k × 256
    python benches/bench_semantic_speed.py --sizes 100000 --dims 256 --rounds 201

Texts: REALTALK's turns repeated to size, questions cut to six words (as
``bench_recall_speed.py``). Vectors: a stand-in embedder gives each text a
pseudo-random vector seeded by its CRC-32 (numpy), so the figures are the
core's alone: a real model adds its own time (for model2vec's static
models, see ``bench_recall.py``'s embedding time). The query's vector is
computed before the clock starts and passed to the core's calls
(``embedding=(name, bytes)``).

Measured (p50 over ``--rounds`` calls after a warm-up):
* ``search_words(q, 20)``: by words, and hybrid;
* ``render(q, 500)``: by words, and hybrid;
* a save: ``store.save`` of a new key without an embedder, and with one whose
  ``embed`` returns a ready vector (so the difference is membolt's work per
  saved entry: the check for a vector, the append to the companion file);
  and ``save_many`` of 100 entries, per entry;
* a new process (``--cold`` rounds, each a new interpreter, words and hybrid
  alternating): open the closed store and serve the first search, by words
  and hybrid (the interpreter's start and ``import membolt`` excluded, the
  same for both).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

PRELUDE = r"""
import json, os, statistics, sys, time, zlib
import numpy as np
import membolt
from membolt import MemoryStore
from membolt._core import Store as Core

class StandIn:
    def __init__(self, dims):
        self.name, self.dims = f"stand-in:{dims}", dims
    def vector(self, text):
        rng = np.random.default_rng(zlib.crc32(text.encode()))
        return rng.standard_normal(self.dims).astype("<f4")
    def embed(self, texts):
        return np.stack([self.vector(t) for t in texts])

def p50(call, inputs, rounds):
    call(inputs[0])
    times = []
    for n in range(rounds):
        started = time.perf_counter()
        call(inputs[n % len(inputs)])
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3
"""

BUILD = (
    PRELUDE
    + r"""
spec = json.load(open(sys.argv[1]))
turns, questions, size, dims, rounds = (
    spec["turns"], spec["questions"], spec["size"], spec["dims"], spec["rounds"])
embedder = StandIn(dims)
path = spec["path"]
out = {}
store = MemoryStore(path, embedder=embedder, embed_timeout=None)
items, copy = [], 0
while len(items) < size:
    for key, value in turns:
        if len(items) == size:
            break
        items.append((f"{key}:c{copy}", value, "note"))
    copy += 1
plain = MemoryStore(path)
for start in range(0, size, 50_000):
    plain.save_many(items[start:start + 50_000])
started = time.perf_counter()
store.embed_missing(batch=8192)
out["embed_all_s"] = time.perf_counter() - started
assert store.vector_status()["without_vector"] == 0
queries = [(q, (embedder.name, embedder.vector(q).tobytes())) for q in questions]
out["words_search_ms"] = p50(lambda q: Core.search_words(store, q[0], 20), queries, rounds)
out["hybrid_search_ms"] = p50(
    lambda q: Core.search_words(store, q[0], 20, embedding=q[1]), queries, rounds)
out["words_render_ms"] = p50(lambda q: Core.render(store, q[0], 500, 0), queries, rounds)
out["hybrid_render_ms"] = p50(
    lambda q: Core.render(store, q[0], 500, 0, embedding=q[1]), queries, rounds)

class Ready:
    name, dims = embedder.name, dims
    def __init__(self):
        self.row = embedder.vector("ready")
    def embed(self, texts):
        return np.broadcast_to(self.row, (len(texts), dims))

ready = MemoryStore(path, embedder=Ready(), embed_timeout=None)
counter = iter(range(10**9))
out["save_words_us"] = 1e3 * p50(
    lambda _: plain.save(f"new:{next(counter)}", "a new turn about the support group"),
    [None], rounds)
out["save_vectors_us"] = 1e3 * p50(
    lambda _: ready.save(f"new:{next(counter)}", "a new turn about the support group"),
    [None], rounds)
def batch(store):
    n = next(counter)
    store.save_many([(f"batch:{n}:{i}", f"turn {i} of batch {n}") for i in range(100)])
out["save_many_words_us"] = 10 * p50(lambda _: batch(plain), [None], max(11, rounds // 10))
out["save_many_vectors_us"] = 10 * p50(lambda _: batch(ready), [None], max(11, rounds // 10))
out["vectors_mib"] = os.path.getsize(path + ".vectors") / 2**20
for s in (store, plain, ready):
    s.close()
json.dump({"query": queries[0][0], "vector": queries[0][1][1].hex(), "name": embedder.name},
          open(spec["query_file"], "w"))
print(json.dumps(out))
"""
)

COLD = r"""
import json, sys, time
import membolt
from membolt._core import Store as Core
spec = json.load(open(sys.argv[1]))
query = json.load(open(spec["query_file"]))
embedding = (query["name"], bytes.fromhex(query["vector"])) if spec["hybrid"] else None
started = time.perf_counter()
store = membolt.MemoryStore(spec["path"])
found = Core.search_words(store, query["query"], 20, embedding=embedding)
print(json.dumps({"ms": (time.perf_counter() - started) * 1e3, "found": len(found)}))
"""


def load_texts(data: Path | None) -> tuple[list[tuple[str, str]], list[str]]:
    sys.path.insert(0, str(HERE))
    from bench_recall import load

    conversations = load("realtalk", data, "turn")
    turns = [(f"{c.name[:7]}:{key}", value) for c in conversations for key, value in c.turns]
    questions = [" ".join(q.split()[:6]) for c in conversations for q, _ in c.questions]
    return turns, questions


def run(script: str, spec: dict[str, object]) -> dict[str, float]:
    with tempfile.NamedTemporaryFile("w", suffix=".json") as spec_file:
        json.dump(spec, spec_file)
        spec_file.flush()
        done = subprocess.run(
            [sys.executable, "-c", script, spec_file.name],
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=201)
    parser.add_argument("--cold", type=int, default=11, help="new processes per figure")
    parser.add_argument("--data", type=Path, help="a local copy of REALTALK's data folder")
    parser.add_argument("--tmpfs", default="/dev/shm", help="where the stores are built")
    args = parser.parse_args()
    turns, questions = load_texts(args.data)
    print(f"{len(turns)} distinct turns; {args.dims} dims; load {os.getloadavg()[0]:.2f}")
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory(dir=args.tmpfs) as directory:
            spec: dict[str, object] = {
                "turns": turns,
                "questions": questions,
                "size": size,
                "dims": args.dims,
                "rounds": args.rounds,
                "path": os.path.join(directory, "memory.redb"),
                "query_file": os.path.join(directory, "query.json"),
            }
            row = run(BUILD, spec)
            # Alternating, so that the machine's load falls on both alike.
            cold: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.cold):
                for hybrid in (False, True):
                    cold[hybrid].append(run(COLD, {**spec, "hybrid": hybrid})["ms"])
            row["cold_words_ms"] = statistics.median(cold[False])
            row["cold_hybrid_ms"] = statistics.median(cold[True])
            print(f"  {size}: {row}", file=sys.stderr)
            rows.append((size, row))
    print()
    print(
        "| entries | `search_words` words / hybrid | `render(q, 500)` words / hybrid "
        "| new process: open + first search, words / hybrid | save words / vectors "
        "| `save_many` (100) per entry, words / vectors | vectors file |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for size, r in rows:
        print(
            f"| {size:,} | {r['words_search_ms']:.2f} / {r['hybrid_search_ms']:.2f} ms "
            f"| {r['words_render_ms']:.2f} / {r['hybrid_render_ms']:.2f} ms "
            f"| {r['cold_words_ms']:.0f} / {r['cold_hybrid_ms']:.0f} ms "
            f"({r['cold_hybrid_ms'] / r['cold_words_ms']:.2f}×) "
            f"| {r['save_words_us']:.0f} / {r['save_vectors_us']:.0f} µs "
            f"| {r['save_many_words_us']:.1f} / {r['save_many_vectors_us']:.1f} µs "
            f"| {r['vectors_mib']:.0f} MiB |"
        )


if __name__ == "__main__":
    main()
