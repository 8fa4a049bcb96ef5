"""Side-by-side store benchmark: membolt against the alternatives a user has.

    python benches/compare.py                 # 1k, 10k and 100k entries
    python benches/compare.py --sizes 1000    # quicker

Baselines, measured in the same run on the same data: stdlib ``sqlite3``
(WAL, ``synchronous=FULL``, ``LIKE`` search) and a Python dict scanned over
lowercased text. Figures are p50 (median) times; ratios are what to compare,
since absolute times drift between runs and machines. Needs a release build
(``maturin develop --release``).
"""

from __future__ import annotations

import argparse
import gc
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import membolt
from membolt import MemoryStore

sys.path.insert(0, str(Path(__file__).parent))
from workload import Workload, build_store


def p50(run: Callable[[int], object], repeat: int) -> float:
    """Median wall time of ``run(i)`` in milliseconds."""
    times = []
    for i in range(repeat):
        start = time.perf_counter_ns()
        run(i)
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e6


def times_alternating(
    first: Callable[[int], object], second: Callable[[int], object], repeat: int
) -> tuple[list[int], list[int]]:
    """Wall times in ns of ``first(i)`` and ``second(i)`` called in turn."""
    times: tuple[list[int], list[int]] = ([], [])
    for i in range(repeat):
        for run, out in ((first, times[0]), (second, times[1])):
            start = time.perf_counter_ns()
            run(i)
            out.append(time.perf_counter_ns() - start)
    return times


def p50_alternating(
    first: Callable[[int], object], second: Callable[[int], object], repeat: int
) -> tuple[float, float]:
    """Median wall times in ms of ``first(i)`` and ``second(i)`` called in turn."""
    times = times_alternating(first, second, repeat)
    return statistics.median(times[0]) / 1e6, statistics.median(times[1]) / 1e6


def times_back_to_back(run: Callable[[int], object], repeat: int, offset: int) -> list[int]:
    """Wall times in ns of ``run(offset + i)``, one after the other."""
    out = []
    for i in range(repeat):
        start = time.perf_counter_ns()
        run(offset + i)
        out.append(time.perf_counter_ns() - start)
    return out


def percentile_ms(times: list[int], fraction: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] / 1e6


def build_sqlite(path: Path, workload: Workload) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE memory (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("BEGIN")
    db.executemany("INSERT INTO memory VALUES (?, ?)", workload.entries())
    db.execute("COMMIT")
    return db


def sqlite_save(db: sqlite3.Connection, key: str, value: str) -> None:
    db.execute("BEGIN")
    db.execute("INSERT OR REPLACE INTO memory VALUES (?, ?)", (key, value))
    db.execute("COMMIT")


def dict_search(index: dict[str, tuple[str, str]], query: str) -> list[str]:
    needle = query.lower()
    return [key for key, (k, v) in index.items() if needle in k or needle in v]


CONCURRENT_WRITER = """
import sys, membolt
store = membolt.MemoryStore(sys.argv[1], timeout=120)
for i in range(int(sys.argv[3])):
    store.save(f"{sys.argv[2]}:{i}", "concurrent write " * 12)
"""

CONCURRENT_SQLITE_WRITER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=120)
db.execute("PRAGMA synchronous=FULL")
for i in range(int(sys.argv[3])):
    db.execute("BEGIN IMMEDIATE")
    row = (f"{sys.argv[2]}:{i}", "concurrent write " * 12)
    db.execute("INSERT OR REPLACE INTO memory VALUES (?, ?)", row)
    db.execute("COMMIT")
"""


def concurrent_throughput(script: str, path: Path, processes: int, saves: int) -> float:
    """Saves per second of `processes` writers started together."""
    start = time.perf_counter()
    workers = [
        subprocess.Popen([sys.executable, "-c", script, str(path), f"w{n}", str(saves)])
        for n in range(processes)
    ]
    for worker in workers:
        if worker.wait() != 0:
            raise RuntimeError("a concurrent writer failed")
    return processes * saves / (time.perf_counter() - start)


def measure(
    size: int, directory: Path, processes: int, saves: int
) -> list[tuple[str, str, float, str, float]]:
    """Rows of (operation, membolt figure, baseline name, baseline figure)."""
    workload = Workload(size)
    items = list(workload.entries())
    queries = workload.queries()
    rows: list[tuple[str, str, float, str, float]] = []

    store_path = directory / f"membolt-{size}.redb"
    sqlite_path = directory / f"sqlite-{size}.db"
    db = build_sqlite(sqlite_path, workload)
    rows.extend(measure_operations(build_store(store_path, workload), db, items, queries))
    db.close()
    # The store is closed and unreferenced now: reopening it reads the file.
    gc.collect()
    membolt._core._release_all()
    rows.append(measure_open(store_path, sqlite_path, queries[0]))
    rows.append(measure_concurrent(store_path, sqlite_path, processes, saves))
    return rows


def measure_concurrent(
    store_path: Path, sqlite_path: Path, processes: int, saves: int
) -> tuple[str, str, float, str, float]:
    """Fresh writer processes saving into the same store at once; each one
    opens the store, so the figure includes what a new process pays."""
    ours = concurrent_throughput(CONCURRENT_WRITER, store_path, processes, saves)
    theirs = concurrent_throughput(CONCURRENT_SQLITE_WRITER, sqlite_path, processes, saves)
    written = {f"w{n}:{i}" for n in range(processes) for i in range(saves)}
    check = MemoryStore(store_path)
    present = written & set(check.keys())
    check.close()
    if present != written:
        raise RuntimeError(f"{len(written - present)} concurrent saves are missing")
    return (
        f"{processes} processes × {saves} saves, per second",
        "membolt",
        ours,
        "sqlite WAL FULL",
        theirs,
    )


def measure_operations(
    store: MemoryStore,
    db: sqlite3.Connection,
    items: list[tuple[str, str]],
    queries: list[str],
) -> list[tuple[str, str, float, str, float]]:
    size = len(items)
    rows: list[tuple[str, str, float, str, float]] = []
    lowered = {key: (key.lower(), value.lower()) for key, value in items}

    # Durable save of a new key: one transaction with an fsync each; in
    # turn (machine drift lands on both alike), then back to back (each
    # side's own rhythm: the journal's periodic redb commit, sqlite's
    # checkpoints), with the tail (p99) beside the median.
    value = items[0][1]
    ours, theirs = times_alternating(
        lambda i: store.save(f"bench:new-{i}", value),
        lambda i: sqlite_save(db, f"bench:new-{i}", value),
        1000,
    )
    our_run = times_back_to_back(lambda i: store.save(f"bench:run-{i}", value), 1000, 0)
    their_run = times_back_to_back(lambda i: sqlite_save(db, f"bench:run-{i}", value), 1000, 0)
    for label, mine, other in (
        ("save (durable) p50 ms, in turn", ours, theirs),
        ("save (durable) p99 ms, in turn", ours, theirs),
        ("save (durable) p50 ms, back to back", our_run, their_run),
        ("save (durable) p99 ms, back to back", our_run, their_run),
    ):
        fraction = 0.99 if "p99" in label else 0.5
        rows.append(
            (
                label,
                "membolt",
                percentile_ms(mine, fraction),
                "sqlite WAL FULL",
                percentile_ms(other, fraction),
            )
        )
    keys = [key for key, _ in items]
    rows.append(
        (
            "get p50 ms",
            "membolt",
            p50(lambda i: store.get(keys[(i * 7919) % size]), 5000),
            "sqlite PK lookup",
            p50(
                lambda i: db.execute(
                    "SELECT value FROM memory WHERE key = ?", (keys[(i * 7919) % size],)
                ).fetchone(),
                5000,
            ),
        )
    )
    repeat = max(20, min(400, 4_000_000 // size))
    membolt_search = p50(lambda i: store.search(queries[i % len(queries)]), repeat)
    rows.append(
        (
            "search p50 ms",
            "membolt",
            membolt_search,
            "python dict scan",
            p50(lambda i: dict_search(lowered, queries[i % len(queries)]), repeat),
        )
    )
    rows.append(
        (
            "search p50 ms",
            "membolt",
            membolt_search,
            "sqlite LIKE",
            p50(
                lambda i: db.execute(
                    "SELECT key FROM memory WHERE key LIKE ?1 OR value LIKE ?1",
                    (f"%{queries[i % len(queries)]}%",),
                ).fetchall(),
                max(10, repeat // 4),
            ),
        )
    )

    store.close()
    return rows


def measure_open(
    store_path: Path, sqlite_path: Path, query: str
) -> tuple[str, str, float, str, float]:
    """Open a closed store and search it: what a fresh process does."""
    opens = []
    for _ in range(5):
        start = time.perf_counter_ns()
        reopened = MemoryStore(store_path)
        reopened.search(query)
        opens.append(time.perf_counter_ns() - start)
        reopened.close()
        del reopened
        gc.collect()
    sqlite_opens = []
    for _ in range(5):
        start = time.perf_counter_ns()
        conn = sqlite3.connect(sqlite_path)
        conn.execute(
            "SELECT key FROM memory WHERE key LIKE ?1 OR value LIKE ?1", (f"%{query}%",)
        ).fetchall()
        sqlite_opens.append(time.perf_counter_ns() - start)
        conn.close()
    return (
        "open + first search ms",
        "membolt",
        statistics.median(opens) / 1e6,
        "sqlite open + LIKE",
        statistics.median(sqlite_opens) / 1e6,
    )


def format_table(rows: Iterable[tuple[int, str, str, float, str, float]]) -> str:
    lines = [
        "| operation | entries | membolt | baseline | baseline figure | membolt vs baseline |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for size, operation, _, ours, baseline, theirs in rows:
        if "per second" in operation:
            ratio = f"{ours / theirs:.2f}× the throughput"
        elif ours <= theirs:
            ratio = f"{theirs / ours:.1f}× faster"
        else:
            ratio = f"{ours / theirs:.2f}× the time"
        lines.append(
            f"| {operation} | {size:,} | {ours:.4g} | {baseline} | {theirs:.4g} | {ratio} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--saves", type=int, default=500)
    args = parser.parse_args()
    if membolt._core.DEBUG_BUILD:
        sys.exit("compare.py: build the release extension first: maturin develop --release")
    table: list[tuple[int, str, str, float, str, float]] = []
    with tempfile.TemporaryDirectory(prefix="membolt-bench-") as tmp:
        directory = Path(tmp)
        for size in (int(s) for s in args.sizes.split(",")):
            print(f"measuring {size:,} entries ...", file=sys.stderr)
            rows = measure(size, directory, args.processes, args.saves)
            table.extend((size, *row) for row in rows)
    print(format_table(table))
    print(
        "\nEvery concurrent save was present afterwards; "
        f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}"
    )


if __name__ == "__main__":
    main()
