"""What a *fresh process* pays: open a closed store and serve the first search
or the first focused render; memory after the load; and the CPU cost of a
durable save (on tmpfs, where fsync is nearly free, so what is left is CPU).

    maturin develop --release
    python benches/bench_cold_start.py                       # 100k entries
    python benches/bench_cold_start.py --sizes 100000,1000000 --rounds 9
    python benches/bench_cold_start.py --python /other/venv/bin/python   # A/B
    python benches/bench_cold_start.py --image-off    # also each build with MEMBOLT_IMAGE=off

Every cold figure comes from a new interpreter (``subprocess``), so nothing
(allocator state, page cache of the extension, lazily built indexes) carries
over from a previous round. With several ``--python`` interpreters (e.g. a
venv holding the main-branch build and one holding this branch), rounds
alternate between them, so both see the same machine load; compare figures
of one run only. The load average is printed with the table: on a shared
machine, distrust a run taken while it is high.

Beside them, in the same rounds: stdlib ``sqlite3`` opening a database of
the same texts and answering the first query with ``LIKE`` (what a new
process of the simplest alternative pays). Each copied store is primed by
this interpreter's build, which takes the write lease once: a build that
keeps an image (``<store>.image``, docs/architecture.md) writes it then, as
the writer that last used a store would have; older builds ignore it.

Stores (built once, cached under ``$MEMBOLT_BENCH_CACHE``, default
``/tmp/membolt-bench-cache``, and copied to a temporary directory per run):
* ``workload``: ``benches/workload.py`` entries (~230 bytes, 6,000-word
  vocabulary), first search = the first workload query;
* ``agent``: the agent-shaped store of ``benches/bench_render.py`` (chains,
  overwritten status keys), first render = its mid-history focus, 500 tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("MEMBOLT_BENCH_CACHE", "/tmp/membolt-bench-cache"))

# Runs in the fresh interpreter; prints one JSON object.
CHILD = r"""
import json, os, sys, time

def rss_mib():
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(rest.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]

started = time.perf_counter()
import membolt
out = {"import_ms": (time.perf_counter() - started) * 1e3}
mode, path, argument = sys.argv[1], sys.argv[2], sys.argv[3]
out["rss_before_mib"] = rss_mib()[0]
cpu = time.process_time()
started = time.perf_counter()
store = membolt.MemoryStore(path)
query, focus = argument.split("|")
calls = {
    "search": lambda: store.search(query),
    "render": lambda: store.render(focus, 500, now_ms=0),
    # A key new to the store (a new process's first save of an entry; the
    # rounds share a copy of the store, and an overwrite asks less of it).
    "save": lambda: store.save(f"bench:first-save-{os.getpid()}", "a value of a first save"),
}
steps = [calls[name] for name in mode.split("+")]
def first():
    for step in steps:
        step()
first()
out["first_ms"] = (time.perf_counter() - started) * 1e3
out["first_cpu_ms"] = (time.process_time() - cpu) * 1e3
rss, hwm = rss_mib()
out["rss_mib"] = rss
out["hwm_mib"] = hwm
# Steady state right after: the same call again (indexes built, lease held
# or released; a few rounds, median).
times = []
for _ in range(21):
    started = time.perf_counter()
    first()
    times.append(time.perf_counter() - started)
times.sort()
out["again_ms"] = times[len(times) // 2] * 1e3
# After a moment (background work, if any, has finished).
time.sleep(float(os.environ.get("COLD_SETTLE_S", "1.5")))
out["rss_settled_mib"] = rss_mib()[0]
store.close()
print(json.dumps(out))
"""

SAVE_CHILD = r"""
import json, sqlite3, sys, time
import membolt

path, sqlite_path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = membolt.MemoryStore(path)
# What an agent's process has built by the time it saves: every index a
# write keeps up to date (a render with a focus, a search).
store.render("why does the handler time out", 500, now_ms=0)
store.search("handler")
value = "x" * 200
for i in range(50):  # warm up
    store.save(f"bench:warm-{i}", value)

def measure(save):
    wall, cpu = [], []
    for i in range(count):
        w, c = time.perf_counter_ns(), time.process_time_ns()
        save(i)
        cpu.append(time.process_time_ns() - c)
        wall.append(time.perf_counter_ns() - w)
    return statistics.median(wall) / 1e3, sum(cpu) / len(cpu) / 1e3

import statistics
out = {}
out["save_new_us"], out["save_new_cpu_us"] = measure(lambda i: store.save(f"bench:new-{i}", value))
out["save_overwrite_us"], out["save_overwrite_cpu_us"] = measure(
    lambda i: store.save(f"bench:new-{i % 50}", value + str(i)))
core, request = store._save, membolt._core.SaveRequest
out["core_save_us"], out["core_save_cpu_us"] = measure(
    lambda i: core(request(f"bench:core-{i}", value, inferred_type="note")))
store.close()

db = sqlite3.connect(sqlite_path, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=FULL")
db.execute("CREATE TABLE IF NOT EXISTS memory (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
def sqlite_save(i):
    db.execute("BEGIN")
    db.execute("INSERT OR REPLACE INTO memory VALUES (?, ?)", (f"bench:new-{i}", value))
    db.execute("COMMIT")
out["sqlite_save_us"], out["sqlite_save_cpu_us"] = measure(sqlite_save)
print(json.dumps(out))
"""


def build_workload_store(size: int) -> Path:
    cached = CACHE / f"workload-{size}.redb"
    if not cached.exists():
        sys.path.insert(0, str(HERE))
        from workload import Workload

        import membolt

        CACHE.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        store = membolt.MemoryStore(partial, timeout=60)
        chunk: list[tuple[str, str]] = []
        for item in Workload(size).entries():
            chunk.append(item)
            if len(chunk) == 10_000:
                store.save_many(chunk, caps=False)
                chunk = []
        if chunk:
            store.save_many(chunk, caps=False)
        store.close()
        membolt._core._release_all()
        partial.rename(cached)
        # Closed cleanly, the file alone is complete: drop its companions.
        for suffix in membolt._core.STORE_COMPANION_SUFFIXES:
            Path(f"{partial}{suffix}").unlink(missing_ok=True)
    return cached


def agent_store(size: int) -> tuple[Path, str]:
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent / "tests"))
    import bench_render

    return bench_render.store_path(size), bench_render.focus_for(size)


def first_query(size: int) -> str:
    sys.path.insert(0, str(HERE))
    from workload import Workload

    return Workload(size).queries()[0]


SQLITE_CHILD = r"""
import json, sqlite3, sys, time
path, query, mode = sys.argv[1], sys.argv[2], sys.argv[3]
started = time.perf_counter()
db = sqlite3.connect(path, isolation_level=None)
if mode == "search":
    db.execute(
        "SELECT key FROM memory WHERE key LIKE ?1 OR value LIKE ?1", (f"%{query}%",)
    ).fetchall()
else:
    db.execute("PRAGMA synchronous=FULL")
    db.execute("BEGIN")
    db.execute(
        "INSERT OR REPLACE INTO memory VALUES (?, ?)",
        ("bench:first-save", "a value of a first save"),
    )
    db.execute("COMMIT")
print(json.dumps({"first_ms": (time.perf_counter() - started) * 1e3}))
"""


def sqlite_copy(store: Path, size: int) -> Path:
    """A sqlite database (WAL) of the texts of the workload store of
    ``size`` entries, cached beside it."""
    cached = CACHE / f"workload-{size}.sqlite"
    if not cached.exists():
        import sqlite3

        import membolt

        partial = cached.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        reader = membolt.MemoryStore(store, timeout=60)
        db = sqlite3.connect(partial)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE memory (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.executemany(
            "INSERT INTO memory VALUES (?, ?)", ((e.key, e.value) for e in reader.entries())
        )
        db.commit()
        db.close()
        reader.close()
        partial.rename(cached)
    return cached


def image_sizes(path: Path) -> str:
    """The image's size beside the raw text (keys and values) it holds."""
    import membolt

    image = Path(f"{path}.image")
    if not image.exists():
        return "no image"
    reader = membolt.MemoryStore(path, timeout=60)
    raw = sum(len(e.key.encode()) + len(e.value.encode()) for e in reader.entries())
    reader.close()
    size = image.stat().st_size
    return f"image {size / 2**20:.1f} MiB = {size / raw:.2f}x the raw text ({raw / 2**20:.1f} MiB)"


def prime(path: Path) -> None:
    """Gives a copied store the `.sync` sidecar a store in use has, so that
    no build reloads the whole store on every call for want of one: taking
    the write lease initialises it (deleting a missing key commits
    nothing)."""
    import membolt

    store = membolt.MemoryStore(path, timeout=60)
    store.delete("\x00membolt-bench-prime")
    store.close()
    membolt._core._release_all()


def run_child(
    python: str, script: str, *args: str, env: dict[str, str] | None = None
) -> dict[str, float]:
    done = subprocess.run(
        [python, "-c", script, *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )
    if done.returncode != 0:
        raise RuntimeError(f"{python} failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--python", action="append", help="interpreter(s) to compare")
    parser.add_argument("--saves", type=int, default=500, help="saves per save measurement")
    parser.add_argument("--skip-save", action="store_true")
    parser.add_argument("--tmpfs", default="/dev/shm", help="where the save test runs")
    parser.add_argument(
        "--image-off", action="store_true", help="also run each build with MEMBOLT_IMAGE=off"
    )
    args = parser.parse_args()
    # Each variant: an interpreter and the environment it runs in.
    variants = [(python, "") for python in args.python or [sys.executable]]
    if args.image_off:
        variants += [(python, "MEMBOLT_IMAGE=off") for python, _ in variants]
    pythons = [f"{python} {setting}".strip() for python, setting in variants]
    environments = {
        f"{python} {setting}".strip(): dict([setting.split("=")]) if setting else {}
        for python, setting in variants
    }
    executables = {f"{python} {setting}".strip(): python for python, setting in variants}
    print(f"load average before: {loadavg()}", file=sys.stderr)
    rows: list[str] = []
    sizes_noted: list[str] = []
    with tempfile.TemporaryDirectory(prefix="membolt-cold-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            workload = Path(tmp) / f"workload-{size}" / "memory.redb"
            workload.parent.mkdir()
            shutil.copyfile(build_workload_store(size), workload)
            agent_path, focus = agent_store(size)
            agent = Path(tmp) / f"agent-{size}" / "memory.redb"
            agent.parent.mkdir()
            shutil.copyfile(agent_path, agent)
            query = first_query(size)
            both = f"{query}|{focus}"
            database = Path(tmp) / f"workload-{size}.sqlite"
            shutil.copyfile(sqlite_copy(workload, size), database)
            for sqlite_label, sqlite_mode in (
                ("sqlite3 open + LIKE", "search"),
                ("sqlite3 open + first save (WAL, FULL)", "save"),
            ):
                sqlite_times = sorted(
                    run_child(sys.executable, SQLITE_CHILD, str(database), query, sqlite_mode)[
                        "first_ms"
                    ]
                    for _ in range(args.rounds)
                )
                rows.append(
                    f"| {sqlite_label} | {size:,} | {sys.executable} | "
                    f"{statistics.median(sqlite_times):.0f} "
                    f"({sqlite_times[0]:.0f}-{sqlite_times[-1]:.0f}) | | | | | |"
                )
            cases = [
                ("open + first search", "search", workload, both),
                ("open + first render", "render", agent, both),
                ("open + render + search", "render+search", agent, both),
                ("open + first save", "save", workload, both),
            ]
            for case, (label, mode, path, argument) in enumerate(cases):
                # A copy per interpreter: a build must not find the sidecar
                # another build created (or anything else it left behind).
                copies = {}
                for n, python in enumerate(pythons):
                    copy = path.parent / f"{case}-{n}" / path.name
                    copy.parent.mkdir()
                    shutil.copyfile(path, copy)
                    prime(copy)
                    copies[python] = copy
                if case < 2:
                    sizes_noted.append(f"{label}, {size:,}: {image_sizes(copy)}")
                results: dict[str, list[dict[str, float]]] = {p: [] for p in pythons}
                for _ in range(args.rounds):
                    for python in pythons:
                        results[python].append(
                            run_child(
                                executables[python],
                                CHILD,
                                mode,
                                str(copies[python]),
                                argument,
                                env=environments[python],
                            )
                        )
                for python in pythons:
                    got = results[python]

                    def med(name: str, got: list[dict[str, float]] = got) -> float:
                        return statistics.median(r[name] for r in got)

                    firsts = sorted(r["first_ms"] for r in got)
                    rows.append(
                        f"| {label} | {size:,} | {python} | {med('first_ms'):.0f} "
                        f"({firsts[0]:.0f}-{firsts[-1]:.0f}) | {med('first_cpu_ms'):.0f} | "
                        f"{med('again_ms'):.3f} | {med('rss_mib') - med('rss_before_mib'):.0f} | "
                        f"{med('rss_settled_mib') - med('rss_before_mib'):.0f} | "
                        f"{med('hwm_mib'):.0f} |"
                    )
        print(
            "| case | entries | python | first ms p50 (min-max) | first CPU ms | again ms "
            "| RSS +MiB after | RSS +MiB settled | peak RSS MiB |"
        )
        print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
        print("\n".join(rows))
        print("\n" + "\n".join(sizes_noted))

        if not args.skip_save:
            save_rows = []
            size = int(args.sizes.split(",")[0])
            for python in pythons:
                with tempfile.TemporaryDirectory(prefix="membolt-save-", dir=args.tmpfs) as shm:
                    path = Path(shm) / "memory.redb"
                    shutil.copyfile(build_workload_store(size), path)
                    got = run_child(
                        executables[python],
                        SAVE_CHILD,
                        str(path),
                        str(Path(shm) / "s.db"),
                        str(args.saves),
                        env=environments[python],
                    )
                save_rows.append(
                    f"| {python} | {got['save_new_us']:.0f} / {got['save_new_cpu_us']:.0f} | "
                    f"{got['save_overwrite_us']:.0f} / {got['save_overwrite_cpu_us']:.0f} | "
                    f"{got['core_save_us']:.0f} / {got['core_save_cpu_us']:.0f} | "
                    f"{got['sqlite_save_us']:.0f} / {got['sqlite_save_cpu_us']:.0f} |"
                )
            print(
                f"\nsave on {args.tmpfs}, {size:,}-entry store, every index built: "
                "p50 wall µs / mean CPU µs"
            )
            print(
                "| python | save new key | overwrite | core _save (no classify) | sqlite WAL FULL |"
            )
            print("|---|---:|---:|---:|---:|")
            print("\n".join(save_rows))
    print(f"\nload average after: {loadavg()}; {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
