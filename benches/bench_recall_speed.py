"""What the ranked search (§15) costs: a word search, a save and a focused
render on stores of real conversation turns, and the memory they hold,
at several sizes, with rank_bm25 timed on the same texts in the same run.

    pip install -e '.[bench]' && maturin develop --release
    python benches/bench_recall_speed.py                          # 1k, 10k, 100k
    python benches/bench_recall_speed.py --sizes 1000000 --rounds 101
    python benches/bench_recall_speed.py --python /old/venv/bin/python  # A/B

Each (interpreter, size) runs in a new interpreter that builds its store
from nothing, so no index or allocator state carries over. With several
``--python`` interpreters (a venv holding an older build, say), each runs
the same workload; compare the figures of one run only.

Texts: the turns of REALTALK (see ``benches/bench_recall.py``, which
downloads them; ``--data`` names a local copy), repeated with a copy number
in the key until the store holds the size asked; questions: REALTALK's,
cut to their first six words. Measured, p50 over ``--rounds`` calls after
one warm-up call:

* ``search_words``: ``store.search_words(question, limit=20)``, the ranked
  search (in an 0.2 build, the word fallback it replaced);
* ``memory_search``: the tool text for the question (substring search
  first, then the ranked search);
* ``render``: ``render(question, 500)``, focus included;
* ``save``: a durable save of a new key on tmpfs (``--tmpfs``), where the
  fsync is nearly free, so what is measured is CPU, index upkeep included;
* ``rss``: resident memory of the process after the calls above, less
  what it held before opening the store;
* ``rank_bm25``: ``BM25Okapi.get_scores`` over the same texts (lowered
  ``\\w+`` words), the plain baseline a user would try (skipped above
  ``--bm25-max`` entries: it takes seconds per question there).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Runs in the new interpreter; prints one JSON object.
CHILD = r"""
import json, os, re, statistics, sys, tempfile, time

def rss_mib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0

spec = json.loads(sys.argv[1])
turns, questions, size, rounds = spec["turns"], spec["questions"], spec["size"], spec["rounds"]
import membolt
from membolt import AgentMemory, MemoryStore

def p50(call, inputs):
    call(inputs[0])
    times = []
    for n in range(rounds):
        started = time.perf_counter()
        call(inputs[n % len(inputs)])
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3

out = {}
with tempfile.TemporaryDirectory(dir=spec["tmpfs"]) as directory:
    before = rss_mib()
    store = MemoryStore(os.path.join(directory, "memory.redb"))
    items, copy = [], 0
    while len(items) < size:
        for key, value in turns:
            if len(items) == size:
                break
            items.append((f"{key}:c{copy}", value, "note"))
        copy += 1
    for start in range(0, size, 50_000):
        store.save_many(items[start:start + 50_000])
    del items
    memory = AgentMemory(store)
    out["search_words_ms"] = p50(lambda q: store.search_words(q, limit=20), questions)
    out["memory_search_ms"] = p50(
        lambda q: memory.call_tool("memory_search", {"query": q}), questions
    )
    out["render_ms"] = p50(lambda q: store.render(q, 500, now_ms=0), questions)
    counter = iter(range(10**9))
    out["save_ms"] = p50(
        lambda _: store.save(f"new:{next(counter)}", "a new turn about the support group"),
        [None],
    )
    out["rss_mib"] = rss_mib() - before
    out["text_mib"] = sum(len(k) + len(v) for k, v in turns) * size / len(turns) / 2**20
    store.close()
if spec["bm25"]:
    from rank_bm25 import BM25Okapi
    documents, copy = [], 0
    while len(documents) < size:
        documents.extend(f"{k}:c{copy} {v}".lower() for k, v in turns[: size - len(documents)])
        copy += 1
    index = BM25Okapi([re.findall(r"\w+", d) or [""] for d in documents])
    out["bm25_ms"] = p50(
        lambda q: index.get_scores(re.findall(r"\w+", q.lower())), questions[: max(5, rounds // 10)]
    )
print(json.dumps(out))
"""


def load_texts(data: Path | None) -> tuple[list[tuple[str, str]], list[str]]:
    sys.path.insert(0, str(HERE))
    from bench_recall import load

    conversations = load("realtalk", data, "turn")
    turns = [(f"{c.name[:7]}:{key}", value) for c in conversations for key, value in c.turns]
    questions = [" ".join(q.split()[:6]) for c in conversations for q, _ in c.questions]
    return turns, questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=201)
    parser.add_argument("--python", action="append", help="interpreter(s) to compare")
    parser.add_argument("--labels", help="names of the interpreters' builds, comma-separated")
    parser.add_argument("--data", type=Path, help="a local copy of REALTALK's data folder")
    parser.add_argument("--tmpfs", default="/dev/shm", help="where the stores are built")
    parser.add_argument("--bm25-max", type=int, default=100_000)
    args = parser.parse_args()
    turns, questions = load_texts(args.data)
    pythons = args.python or [sys.executable]
    labels = args.labels.split(",") if args.labels else pythons
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{len(turns)} distinct turns, {len(questions)} questions; load {os.getloadavg()[0]:.2f}")
    rows: dict[tuple[str, int], dict[str, float]] = {}
    for size in sizes:
        for n, python in enumerate(pythons):
            spec = {
                "turns": turns,
                "questions": questions,
                "size": size,
                "rounds": args.rounds,
                "tmpfs": args.tmpfs,
                "bm25": n == len(pythons) - 1 and size <= args.bm25_max,
            }
            with tempfile.NamedTemporaryFile("w", suffix=".json") as spec_file:
                json.dump(spec, spec_file)
                spec_file.flush()
                done = subprocess.run(
                    [python, "-c", CHILD.replace("sys.argv[1]", "open(sys.argv[1]).read()"),
                     spec_file.name],
                    capture_output=True, text=True, check=False,
                )  # fmt: skip
            if done.returncode != 0:
                raise SystemExit(f"{python} at {size}: {done.stderr}")
            rows[(python, size)] = json.loads(done.stdout)
            print(f"  {python} {size}: {rows[(python, size)]}", file=sys.stderr)
    header = ["size", "build"]
    columns = [
        ("search_words_ms", "`search_words` p50"),
        ("memory_search_ms", "`memory_search` p50"),
        ("render_ms", "`render(q, 500)` p50"),
        ("save_ms", "save p50 (tmpfs)"),
        ("rss_mib", "RSS added"),
        ("bm25_ms", "rank_bm25 `get_scores` p50"),
    ]
    print()
    print("| " + " | ".join(header + [title for _, title in columns]) + " |")
    print("|" + "---|" * (len(header) + len(columns)))
    for size in sizes:
        for python, label in zip(pythons, labels, strict=True):
            row = rows[(python, size)]
            cells = [f"{size:,}", label if len(pythons) > 1 else "this"]
            for name, _ in columns:
                value = row.get(name)
                if value is None:
                    cells.append("")
                elif name == "rss_mib":
                    cells.append(f"{value:.0f} MiB ({value / row['text_mib']:.1f}× the text)")
                else:
                    cells.append(f"{value:.3f} ms" if value < 1 else f"{value:.2f} ms")
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
