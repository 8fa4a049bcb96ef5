"""A process writing through one of membolt's framework adapters, for the
tests of several processes (tests/test_integrations_*.py).

    python adapter_worker.py langgraph-pairs LOCATION PROJECT WORKER ROUNDS
        ROUNDS batches, each putting the pair ("pairs", "a") and ("pairs", "b")
        with the same value, and ROUNDS items ("worker", WORKER) of its own.
    python adapter_worker.py memory-insert LOCATION PROJECT WORKER ROUNDS
        ROUNDS inserts of the line "WORKER-i" at the top of /memories/shared.md.

LOCATION is a store file or a postgresql:// URL (then PROJECT names the
project; "-" for a file). Prints "done" at the end.
"""

from __future__ import annotations

import sys

from membolt import MemoryStore


def main(command: str, location: str, project: str, worker: str, rounds: int) -> None:
    store = MemoryStore(location, project=None if project == "-" else project, timeout=60)
    if command == "langgraph-pairs":
        from langgraph.store.base import PutOp

        from membolt.integrations.langgraph import MemboltStore

        adapter = MemboltStore(store)
        for i in range(rounds):
            value = {"worker": worker, "round": i}
            adapter.batch(
                [
                    PutOp(("pairs",), "a", value),
                    PutOp(("pairs",), "b", value),
                    PutOp(("worker", worker), f"item-{i}", {"text": f"note {i} of {worker}"}),
                ]
            )
    elif command == "memory-insert":
        from anthropic.types.beta import BetaMemoryTool20250818InsertCommand

        from membolt.integrations.anthropic import MemboltMemoryTool

        tool = MemboltMemoryTool(store)
        for i in range(rounds):
            tool.insert(
                BetaMemoryTool20250818InsertCommand(
                    command="insert",
                    path="/memories/shared.md",
                    insert_line=0,
                    insert_text=f"{worker}-{i}",
                )
            )
    else:
        raise SystemExit(f"unknown command {command}")
    store.close()
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
