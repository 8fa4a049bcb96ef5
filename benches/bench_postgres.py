"""§12 side by side: membolt on PostgreSQL against bare psycopg on the same
throwaway server, in one run.

    maturin develop --release
    pip install -e '.[bench]'              # psycopg, the baseline only (membolt needs none)
    python benches/bench_postgres.py                  # 10k and 100k entries
    python benches/bench_postgres.py --sizes 10000    # quicker

The server is started by the tests' helper (tests/support/postgres_server.py)
with PostgreSQL's defaults (fsync and synchronous commit on), on 127.0.0.1.
The baseline is what a hand-written client does: ``INSERT ... ON CONFLICT``
and a commit per save, one ``SELECT`` per get, on a ``(key, value)`` table of
as many rows. Figures are p50 times; ratios are what to compare.

* save: ``store.save`` (a transaction: lock, catch-up check, one write
  statement, commit) vs upsert + commit;
* get, render: served from the mirror after the freshness check;
* fresh: a read on an unchanged store (the freshness check alone) vs
  ``SELECT 1`` (one round trip);
* open: in a new process, open + load (connect, check the schema, read and
  check every row, build the mirror) vs connect + fetch every row with
  psycopg; then the first render (which builds the render indexes, as it
  does on a file); and open + catch up from the project's image on this
  machine (§1.4: the image mapped, the rows changed since fetched, here
  none) vs connect + fetch no row with psycopg;
* 4 x 500 saves: four processes saving into one project (serialised by its
  lock), and into four projects (which never wait for each other), vs four
  psycopg processes upserting into one table.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import membolt
from membolt import MemoryStore

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from compare import p50, p50_alternating
from workload import BUILD_CHUNK, Workload

from support.postgres_server import PostgresServer

VALUE = "v" * 200
PROCESSES, SAVES_EACH = 4, 500


def psycopg_connect(url: str):  # type: ignore[no-untyped-def]
    import psycopg

    return psycopg.connect(url)


def build(server: PostgresServer, size: int) -> tuple[str, str]:
    """A membolt project and a baseline table of ``size`` workload entries."""
    project, table = f"bench-{size}-{uuid.uuid4().hex[:6]}", f"bench_kv_{size}"
    store = MemoryStore(server.url(), project=project)
    chunk: list[tuple[str, str]] = []
    entries = list(Workload(size).entries())
    for item in entries:
        chunk.append(item)
        if len(chunk) == BUILD_CHUNK:
            store.save_many(chunk, caps=False)
            chunk = []
    if chunk:
        store.save_many(chunk, caps=False)
    with psycopg_connect(server.url()) as db:
        db.execute(f"DROP TABLE IF EXISTS {table}")
        db.execute(f"CREATE TABLE {table} (key text PRIMARY KEY, value text NOT NULL)")
        with db.cursor().copy(f"COPY {table} (key, value) FROM STDIN") as copy:
            for row in entries:
                copy.write_row(row)
    return project, table


UPSERT = (
    "INSERT INTO {table} (key, value) VALUES (%s, %s) "
    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
)


def in_process(
    server: PostgresServer, project: str, table: str, size: int, repeat: int
) -> list[tuple[str, float, float]]:
    store = MemoryStore(server.url(), project=project)
    len(store)  # loaded
    db = psycopg_connect(server.url())
    db.prepare_threshold = 0  # server-side prepared, as membolt's statements
    # Reads in autocommit: one round trip each, no BEGIN/COMMIT around them.
    reader = psycopg_connect(server.url())
    reader.autocommit = True
    reader.prepare_threshold = 0
    counter = itertools.count()
    upsert = UPSERT.format(table=table)

    def membolt_save(_: int) -> None:
        store.save(f"bench:{next(counter)}", VALUE)

    def psycopg_save(_: int) -> None:
        db.execute(upsert, (f"bench:{next(counter)}", VALUE))
        db.commit()

    results = []
    save = p50_alternating(membolt_save, psycopg_save, repeat)
    results.append(("save", *save))
    keys = store.keys()[:: max(1, size // 1000)]
    select = f"SELECT value FROM {table} WHERE key = %s"

    def psycopg_get(i: int) -> None:
        reader.execute(select, (keys[i % len(keys)],)).fetchone()

    get = p50_alternating(lambda i: store.get(keys[i % len(keys)]), psycopg_get, repeat)
    results.append(("get", *get))

    def one_round_trip(_: int) -> None:
        reader.execute("SELECT 1").fetchone()

    results.append(
        ("fresh (unchanged)", p50(lambda _: len(store), repeat), p50(one_round_trip, repeat))
    )
    results.append(("render", p50(lambda _: store.render("", 500), repeat), float("nan")))
    db.close()
    reader.close()
    return results


OPEN_MEMBOLT = """
import sys, time, membolt
start = time.perf_counter()
store = membolt.MemoryStore(sys.argv[1], project=sys.argv[2])
len(store)
loaded = time.perf_counter()
store.render("", 500)
print(loaded - start, time.perf_counter() - loaded)
"""

OPEN_PSYCOPG = """
import sys, time, psycopg
start = time.perf_counter()
with psycopg.connect(sys.argv[1]) as db:
    rows = db.execute("SELECT key, value FROM " + sys.argv[2] + sys.argv[3]).fetchall()
print(time.perf_counter() - start)
"""


def open_and_render(
    server: PostgresServer, project: str, table: str, repeat: int, image: bool
) -> tuple[float, float, float]:
    """p50 ms in a new process: membolt's open + load, its first render (which
    builds the render indexes, as on a file), psycopg's connect + fetch all;
    with ``image``, membolt's open + catch-up from the project's image (the
    first child, which writes it when it exits, not counted) and psycopg's
    connect + fetch of the rows changed since (none)."""
    setting = {"MEMBOLT_IMAGE": "always" if image else "off"}

    def child(code: str, *args: str) -> list[float]:
        out = subprocess.run(
            [sys.executable, "-c", code, server.url(), *args],
            capture_output=True, text=True, check=True, env={**os.environ, **setting},
        ).stdout  # fmt: skip
        return [float(part) * 1000 for part in out.split()]

    if image:
        child(OPEN_MEMBOLT, project)
    ours = [child(OPEN_MEMBOLT, project) for _ in range(repeat)]
    rows = " LIMIT 0" if image else ""
    theirs = [child(OPEN_PSYCOPG, table, rows)[0] for _ in range(repeat)]
    load = statistics.median(times[0] for times in ours)
    render = statistics.median(times[1] for times in ours)
    return load, render, statistics.median(theirs)


SAVER_MEMBOLT = """
import sys, membolt
store = membolt.MemoryStore(sys.argv[1], project=sys.argv[2], timeout=120)
len(store)
print("ready", flush=True); sys.stdin.readline()
for i in range(int(sys.argv[4])):
    store.save(f"{sys.argv[3]}:{i}", "v" * 200)
"""

SAVER_PSYCOPG = """
import sys, psycopg
db = psycopg.connect(sys.argv[1]); db.prepare_threshold = 0
upsert = ("INSERT INTO " + sys.argv[2] + " (key, value) VALUES (%s, %s) "
          "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value")
print("ready", flush=True); sys.stdin.readline()
for i in range(int(sys.argv[4])):
    db.execute(upsert, (f"{sys.argv[3]}:{i}", "v" * 200)); db.commit()
"""


def throughput(server: PostgresServer, code: str, targets: list[str]) -> float:
    """Saves per second of one process per target saving SAVES_EACH each."""
    run = uuid.uuid4().hex[:6]
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", code, server.url(), target, f"p{n}-{run}", str(SAVES_EACH)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n, target in enumerate(targets)
    ]
    for worker in workers:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready"
    start = time.perf_counter()
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
    for worker in workers:
        assert worker.wait(timeout=600) == 0
    return len(targets) * SAVES_EACH / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    if membolt._core.DEBUG_BUILD:
        sys.exit("benchmarks need a release build: maturin develop --release")
    # The project's image (§1.4) lives under the store home: a fresh one.
    os.environ["MEMBOLT_HOME"] = tempfile.mkdtemp(prefix="membolt-bench-home-")
    server = PostgresServer(durable=True)
    server.start()
    try:
        print(f"PostgreSQL {server.sql('SHOW server_version')[0][0]}, 127.0.0.1, fsync on")
        print(f"{'':22}{'membolt':>12}{'psycopg':>12}{'ratio':>8}")
        for size in args.sizes:
            project, table = build(server, size)
            print(f"-- {size:,} entries")
            for name, ours, theirs in in_process(server, project, table, size, args.repeat):
                if math.isnan(theirs):
                    print(f"{name:22}{ours:>10.3f}ms{'-':>12}{'-':>8}")
                else:
                    print(f"{name:22}{ours:>10.3f}ms{theirs:>10.3f}ms{ours / theirs:>8.2f}")
            for image, label in ((False, "open+load"), (True, "open+image")):
                load, render, theirs = open_and_render(server, project, table, 5, image)
                ratio = load / theirs
                print(f"{'new process: ' + label:22}{load:>10.1f}ms{theirs:>10.1f}ms{ratio:>8.2f}")
                print(f"{'  then first render':22}{render:>10.1f}ms{'-':>12}{'-':>8}")
        table = f"bench_kv_{args.sizes[0]}"
        project = f"bench-throughput-{uuid.uuid4().hex[:6]}"
        ours = throughput(server, SAVER_MEMBOLT, [project] * PROCESSES)
        theirs = throughput(server, SAVER_PSYCOPG, [table] * PROCESSES)
        apart = throughput(server, SAVER_MEMBOLT, [f"{project}-{n}" for n in range(PROCESSES)])
        print(f"-- {PROCESSES} processes x {SAVES_EACH} saves, one project / one table")
        print(f"{'saves per second':22}{ours:>12.0f}{theirs:>12.0f}{ours / theirs:>8.2f}")
        print(f"{'  (4 projects)':22}{apart:>12.0f}{theirs:>12.0f}{apart / theirs:>8.2f}")
    finally:
        server.destroy()


if __name__ == "__main__":
    main()
