"""A child process for the multi-process tests (run as a script).

store_worker.py write-delete PATH NAME COUNT   write COUNT keys, delete every third
store_worker.py write-forever PATH NAME        save keys, printing each one after it returned
store_worker.py hold PATH SECONDS              hold the store, print "held", sleep
store_worker.py save PATH KEY VALUE            one save
store_worker.py capped PATH NAME COUNT         COUNT capped batches of tool results

PATH is a store file or a postgresql:// URL (the project then comes from
$MEMBOLT_PROJECT), opened as the CLI opens it.
"""

from __future__ import annotations

import sys
import time

import membolt


def open_store(path: str, timeout: float = 60) -> membolt.MemoryStore:
    return membolt.open_store(path, timeout=timeout)


def write_delete(path: str, name: str, count: int) -> None:
    store = open_store(path)
    for i in range(count):
        store.save(f"{name}:w{i}", f"value {i} from {name}")
        if i % 3 == 2:
            store.delete(f"{name}:w{i - 1}")


def write_forever(path: str, name: str) -> None:
    store = open_store(path)
    i = 0
    while True:
        key = f"{name}:{i}"
        if i % 5 == 4:
            store.save_many([(key, f"batch {i}"), (f"{key}:b", "second")], caps=False)
        else:
            store.save(key, f"value {i}")
        print(key, flush=True)
        i += 1


def capped(path: str, name: str, count: int) -> None:
    """Batches of one shared tool's results plus a plain key each, with the
    §6.7 caps: the cap must count every other process's results too."""
    store = open_store(path)
    for i in range(count):
        store.save_many(
            [(f"tool:shared:{name}-{i}", f"result {i}"), (f"{name}:status{i}", "kept")],
            caps=membolt.extraction_caps,
        )


def hold(path: str, seconds: float) -> None:
    store = open_store(path, membolt.store.DEFAULT_TIMEOUT)
    with store.hold():
        store.save("held-by-child", "yes")
        print("held", flush=True)
        time.sleep(seconds)


def main(argv: list[str]) -> None:
    mode, path, *rest = argv
    if mode == "write-delete":
        write_delete(path, rest[0], int(rest[1]))
    elif mode == "write-forever":
        write_forever(path, rest[0])
    elif mode == "hold":
        hold(path, float(rest[0]))
    elif mode == "save":
        open_store(path).save(rest[0], rest[1])
    elif mode == "capped":
        capped(path, rest[0], int(rest[1]))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1:])
