"""Realistic memory workloads shared by the benchmarks.

Entries look like an agent's: typed keys (``progress:…``, ``tool:…``) and
~200-byte values drawn from a 6,000-word vocabulary, so that a search for a
real word hits a handful of entries, as it does in a real store.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import membolt

PREFIXES = (
    "prompt", "purpose", "progress", "status", "decision", "error", "file",
    "context", "result", "note", "tool:bash_exec", "tool:write_file",
)  # fmt: skip
VALUE_BYTES = 200


def _vocabulary(rng: random.Random, size: int = 6000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 10))))
    return sorted(words)


@dataclass(frozen=True)
class Workload:
    """`n` entries of ~230 bytes, plus queries that hit and miss."""

    n: int
    seed: int = 1

    def entries(self) -> Iterator[tuple[str, str]]:
        rng = random.Random(self.seed)
        vocabulary = _vocabulary(rng)
        for i in range(self.n):
            prefix = PREFIXES[i % len(PREFIXES)]
            key = f"{prefix}:{rng.choice(vocabulary)}-{i:07d}"
            words: list[str] = []
            length = 0
            while length < VALUE_BYTES:
                word = rng.choice(vocabulary)
                words.append(word.capitalize() if rng.random() < 0.1 else word)
                length += len(word) + 1
            yield key, " ".join(words)[:VALUE_BYTES]

    def queries(self) -> list[str]:
        """Ten queries: five vocabulary words (hits), five strings nothing contains."""
        rng = random.Random(self.seed + 1)
        vocabulary = _vocabulary(random.Random(self.seed))
        hits = [rng.choice(vocabulary) for _ in range(5)]
        misses = ["".join(rng.choices("qxzj", k=7)) for _ in range(5)]
        return [q for pair in zip(hits, misses, strict=True) for q in pair]


BUILD_CHUNK = 10_000


def build_store(path: Path, workload: Workload) -> membolt.MemoryStore:
    """A store at `path` holding the workload, written in big batches."""
    store = membolt.MemoryStore(path)
    chunk: list[tuple[str, str]] = []
    for item in workload.entries():
        chunk.append(item)
        if len(chunk) == BUILD_CHUNK:
            store.save_many(chunk, caps=False)
            chunk = []
    if chunk:
        store.save_many(chunk, caps=False)
    return store
