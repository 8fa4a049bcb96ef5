"""``membolt demo``: a scripted agent session in a throwaway store.

It plays both sides of an agent loop (a user, and a model that calls the
memory tools and a shell tool) so a reader sees, in a few seconds and
without an API key: what the hooks extract, what a compaction keeps, the
``<memory>`` block a model reads after a restart, a search and a query.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from .agent import AgentMemory
from .store import MemoryStore

TURN_1_REPLY = """\
I checked memory: nothing yet. Plan: a list handler first, then create.
Created handlers/users.go with the list handler.
[MEMORY: decision:users-storage] reuse the Postgres pool, no ORM
## Progress
list handler written; create handler still to do"""

TURN_2_REPLY = """\
Updated handlers/users.go: the create handler validates the email.
STATUS: create handler written, tests pending
ERROR_MIGRATION: migrate step 3 panics on a nil column"""

SUMMARY = """\
## Goal
Add a /users endpoint (list and create)
## Progress
list done; create written; tests pending
## Key Decisions
- Storage: reuse the Postgres pool, no ORM
## Critical Context
- API base path: /v2"""


def _heading(text: str) -> None:
    print(f"\n== {text}")


def _tool(memory: AgentMemory, name: str, arguments: dict[str, Any]) -> None:
    print(f"  model -> {name} {json.dumps(arguments, ensure_ascii=False)}")
    for line in memory.call_tool(name, arguments).rstrip("\n").split("\n"):
        print(f"     <- {line}")


def _new_entries(store: MemoryStore, before: set[str]) -> None:
    for entry in store.entries():
        if entry.key not in before:
            value = entry.value if len(entry.value) < 70 else entry.value[:67] + "..."
            print(f"  + {entry.key} [{entry.type}] = {value!r}")


def run_demo() -> None:
    with tempfile.TemporaryDirectory(prefix="membolt-demo-") as directory:
        path = Path(directory) / "memory.redb"
        print("membolt demo: a scripted agent session in a throwaway store")
        print(f"store: {path}")
        with MemoryStore(path) as store:
            memory = AgentMemory(store)
            memory.start_session(model="scripted-model", backend="demo", cwd=directory)

            _heading("Turn 1. User: 'Add a /users endpoint'. The model checks memory, then works.")
            _tool(memory, "memory_search", {"query": "users"})
            _tool(memory, "memory_save", {"key": "prompt:users-api", "value": "Add /users"})
            before = set(store.keys())
            memory.after_tool("bash_exec", {"cmd": "go build ./..."}, "build ok: 0 warnings")
            memory.after_turn("Add a /users endpoint", TURN_1_REPLY)
            print("  hooks extracted, with no LLM call:")
            _new_entries(store, before)

            _heading("Turn 2. The model writes the create handler and hits a migration bug.")
            before = set(store.keys())
            memory.after_turn("continue", TURN_2_REPLY)
            _new_entries(store, before)

            _heading("The conversation is compacted; the summary is captured.")
            before = set(store.keys())
            written = memory.auto_capture(SUMMARY)
            print(f"  auto_capture wrote {written} entries:")
            _new_entries(store, before)

        _heading("Restart (a new process, maybe another model). Its system prompt holds:")
        with MemoryStore(path) as store:
            memory = AgentMemory(store)
            section = memory.system_prompt_section("continue the /users endpoint")
            block = section[section.index("<memory>\n") : section.index("</memory>") + 9]
            for line in block.splitlines():
                print(f"  {line}")

            _heading("The model looks things up: a search and a relational query.")
            _tool(memory, "memory_search", {"query": "handler"})
            _tool(
                memory,
                "memory_query",
                {"query": 'map(filter(memory, .type in ["decision", "error"]), {key: .key})'},
            )
            restored = memory.restore_session_config()
            print(f"\n  session config restored after the restart: {restored}")

        print("\nThe store was temporary and is gone. Real stores live under ~/.membolt/memory.")
