"""``membolt demo``: a short scripted agent session in a throwaway store.

It plays both sides of an agent loop (a user, and a model that calls the
memory tools) so a reader sees what membolt stores and what a model would
read back, without an API key or network access.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from .agent import AgentMemory
from .store import MemoryStore


def _show_call(memory: AgentMemory, name: str, arguments: dict[str, Any]) -> None:
    print(f"  model -> {name} {json.dumps(arguments, ensure_ascii=False)}")
    result = memory.call_tool(name, arguments)
    for line in result.rstrip("\n").split("\n"):
        print(f"     <- {line}")


def run_demo() -> None:
    with tempfile.TemporaryDirectory(prefix="membolt-demo-") as directory:
        path = Path(directory) / "memory.redb"
        print(f"membolt demo: a scripted agent session in a throwaway store ({path})\n")
        with MemoryStore(path) as store:
            memory = AgentMemory(store)

            print("1. The user states a goal; the model records it and its plan.")
            _show_call(
                memory, "memory_save", {"key": "prompt:users-api", "value": "Add a /users endpoint"}
            )
            _show_call(
                memory,
                "memory_save",
                {"key": "decision:storage", "value": "Reuse the Postgres pool; no ORM"},
            )

            print("\n2. A tool runs; its result is stored and linked into the causal chain.")
            store.save("tool:write_users", "wrote handlers/users.go (120 lines)")
            store.save("progress:users-api", "handler written; tests pending")
            for entry in store.entries():
                parents = ", ".join(entry.references) or "-"
                print(f"  {entry.key} [{entry.type}] <- {parents}")

            print("\n3. Later (even after a restart) the model looks memory up before acting.")
            _show_call(memory, "memory_search", {"query": "users"})
            _show_call(memory, "memory_list", {})

        print("\nThe store was temporary and is gone. Real stores live under ~/.membolt/memory.")
