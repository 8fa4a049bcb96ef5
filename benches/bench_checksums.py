"""What the record checksums (§14) cost: open, get and save on a large store,
side by side with a build from before them.

    maturin develop --release
    python benches/bench_checksums.py --python /path/to/old-venv/bin/python
    python benches/bench_checksums.py --sizes 1000,10000,100000 --rounds 7

``--python`` adds an interpreter holding another build (for the "before"
figures, a venv with a release build of the commit before checksums:
``git worktree add ../before <commit> && cd ../before && python -m venv
.venv && .venv/bin/pip install maturin && .venv/bin/maturin develop
--release``). Each build writes its own store (formats differ), on the same
file system; rounds alternate between the builds so that both see the same
machine load, and every ratio is against the first interpreter of the same
run.

* ``import``: ``import membolt`` up to the store class (a build that
  imports its modules lazily pays the extension's loading here too);
* ``open``: a new interpreter opens the closed store and answers its first
  ``get``: the whole store is read from disk, every record checked against
  its checksum (median of the rounds);
* ``get``: ``get`` of random keys in that process afterwards (served from
  memory: no record is read from disk again, so no checksum is computed;
  the median call);
* ``save``: a durable save of a new key into the store (median call), on
  ``--dir`` (default: ``/dev/shm``, where the device costs nothing and what
  is left is CPU: the encoding and checksum of the record included).
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

# Builds the store (in the build under test, which writes its own format).
BUILD = r"""
import sys
import membolt
path, size = sys.argv[1], int(sys.argv[2])
store = membolt.MemoryStore(path, timeout=60)
words = ("alpha", "handler", "timeout", "retry", "cache", "parser", "socket", "queue")
for start in range(0, size, 10_000):
    store.save_many(
        [(f"fact:{i:07d}", f"{words[i % 8]} note {i}: " + "detail " * 30)
         for i in range(start, min(size, start + 10_000))],
        caps=False,
    )
store.close()
"""

# One round in a new interpreter: open + first get, then gets, then saves.
ROUND = r"""
import time
started = time.perf_counter()
import membolt
Store = membolt.MemoryStore  # a build may import its modules lazily
out = {"import_ms": (time.perf_counter() - started) * 1e3}
import json, random, statistics, sys
path, size, saves = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
started = time.perf_counter()
store = Store(path)
assert store.get("fact:0000000") is not None
out["open_ms"] = (time.perf_counter() - started) * 1e3
rng = random.Random(7)
keys = [f"fact:{rng.randrange(size):07d}" for _ in range(20_000)]
times = []
for key in keys:
    t = time.perf_counter_ns()
    store.get(key)
    times.append(time.perf_counter_ns() - t)
out["get_us"] = statistics.median(times) / 1e3
times = []
value = "saved by the benchmark " * 8
for i in range(saves):
    t = time.perf_counter_ns()
    store.save(f"bench:{time.time_ns()}:{i}", value)
    times.append(time.perf_counter_ns() - t)
out["save_us"] = statistics.median(times) / 1e3
store.close()
print(json.dumps(out))
"""


def run(python: str, script: str, *args: object) -> dict[str, float]:
    done = subprocess.run(
        [python, "-c", script, *map(str, args)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{python} failed:\n{done.stderr}")
    lines = done.stdout.strip().splitlines()
    result: dict[str, float] = json.loads(lines[-1]) if lines else {}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--saves", type=int, default=300)
    parser.add_argument("--python", action="append", help="another build's interpreter")
    parser.add_argument("--dir", default="/dev/shm", help="where the stores are written")
    args = parser.parse_args()
    pythons = [sys.executable, *(args.python or [])]
    print(f"load average: {os.getloadavg()}; {os.cpu_count()} cores", file=sys.stderr)
    print(
        "| entries | python | import ms | open + first get ms | get µs | save µs "
        "| ratios to first (import / open / get / save) |"
    )
    print("|---:|---|---:|---:|---:|---:|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="membolt-checksums-", dir=args.dir) as tmp:
            paths = {}
            for n, python in enumerate(pythons):
                paths[python] = Path(tmp) / f"build-{n}" / "memory.redb"
                paths[python].parent.mkdir()
                run(python, BUILD, paths[python], size)
            results: dict[str, list[dict[str, float]]] = {p: [] for p in pythons}
            for _ in range(args.rounds):
                for python in pythons:
                    results[python].append(run(python, ROUND, paths[python], size, args.saves))
            medians = {
                python: {
                    name: statistics.median(r[name] for r in got)
                    for name in ("import_ms", "open_ms", "get_us", "save_us")
                }
                for python, got in results.items()
            }
            first = medians[pythons[0]]
            for python in pythons:
                got = medians[python]
                ratios = " / ".join(f"{got[name] / first[name]:.2f}" for name in got)
                print(
                    f"| {size:,} | {python} | {got['import_ms']:.1f} | {got['open_ms']:.1f} | "
                    f"{got['get_us']:.2f} | "
                    f"{got['save_us']:.1f} | {ratios} |"
                )


if __name__ == "__main__":
    main()
