"""A writer for the kill campaign (tests/test_torn_records.py), run as a
script and SIGKILLed at a random moment:

    torn_writer.py PATH GENERATION

It applies :func:`operation` (GENERATION, 0), (GENERATION, 1), ... to the
store at PATH, inside ``hold()`` so that every change is a journal record,
and prints each operation's index once its call has returned (acknowledged).
The parent computes the same operations, so it knows what every key must
hold, and which one operation may have been in flight when the kill came.
"""

from __future__ import annotations

import random
import sys

import membolt

#: Keys the operations overwrite and delete, so that a lost change would
#: show as an older value or a key back after its delete.
KEYS = tuple(f"key:{i}" for i in range(6))
#: Value sizes: one page to many, so that a write cut short can land on any
#: page boundary of a record.
SMALLEST, LARGEST = 2_000, 300_000


def operation(generation: int, index: int) -> tuple[str, str | None]:
    """The ``index``-th operation of writer ``generation``: a key and the
    value it saves, or ``None`` for a delete."""
    rng = random.Random(f"{generation}/{index}")
    key = rng.choice(KEYS)
    if rng.random() < 0.1:
        return key, None
    size = rng.randint(SMALLEST, LARGEST)
    head = f"{generation}/{index}:"
    return key, head + "v" * (size - len(head))


def main(path: str, generation: int) -> None:
    store = membolt.MemoryStore(path, timeout=30)
    with store.hold():
        index = 0
        while True:
            key, value = operation(generation, index)
            if value is None:
                store.delete(key)
            else:
                store.save(key, value)
            print(index, flush=True)
            index += 1


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
