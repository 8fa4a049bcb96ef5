"""An agent loop with membolt memory, for any OpenAI-compatible chat API.

    python examples/agent_loop.py "Add a /users endpoint"            # scripted model, offline
    OPENAI_API_KEY=... python examples/agent_loop.py --live "..."   # a real model
    python examples/agent_loop.py --live --base-url http://localhost:11434/v1 --model llama3 "..."

What membolt adds to an ordinary loop is marked ``# memory``: the memory
section of the system prompt, the five memory tools, and three hooks that
extract facts from every turn and tool result. Without ``--live``, a scripted
model plays canned replies (including tool calls), so the example runs
without network access; the tests use it to check that an agent resumes
after a restart.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import membolt
from membolt.agent import AgentMemory

BASE_PROMPT = "You are a coding agent. Work step by step and use tools."

# The agent's own tool; its results are captured into memory (§6.6).
BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash_exec",
        "description": "Run a shell command in the project directory.",
        "parameters": {
            "type": "object",
            "properties": {"cmd": {"type": "string"}},
            "required": ["cmd"],
        },
    },
}


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as chat APIs send it


@dataclass
class Reply:
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)


class ChatModel(Protocol):
    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply: ...


class OpenAICompatibleModel:
    """``POST {base_url}/chat/completions`` with the standard JSON body."""

    def __init__(self, model: str, base_url: str, api_key: str) -> None:
        self.model, self.base_url, self.api_key = model, base_url.rstrip("/"), api_key

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        body = json.dumps({"model": self.model, "messages": messages, "tools": tools}).encode()
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=body,
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {self.api_key}",
            },
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            message = json.load(response)["choices"][0]["message"]
        calls = [
            ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"] or "{}")
            for c in message.get("tool_calls") or []
        ]
        return Reply(message.get("content") or "", calls)


class ScriptedModel:
    """A fake model replaying canned replies, one per call, in order."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        self._replies: Iterator[Reply] = iter(replies)
        self.seen_system_prompts: list[str] = []

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        self.seen_system_prompts.append(messages[0]["content"])
        return next(self._replies, Reply("I have nothing more to do."))


def run_bash(cmd: str) -> str:
    """The agent's own tool (a real shell command, with a timeout)."""
    done = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60, check=False)
    return (done.stdout + done.stderr).strip() or f"(exit status {done.returncode})"


def agent_turn(model: ChatModel, memory: AgentMemory, user_input: str, max_steps: int = 8) -> str:
    """One user turn: the model may call tools several times, then answers."""
    system = BASE_PROMPT + "\n\n" + memory.system_prompt_section(user_input)  # memory
    tools = [BASH_TOOL, *memory.tool_schemas("openai")]  # memory
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": user_input},
    ]
    reply = Reply("")
    for _ in range(max_steps):
        reply = model.complete(messages, tools)
        if not reply.tool_calls:
            break
        messages.append(
            {
                "role": "assistant",
                "content": reply.content,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in reply.tool_calls
                ],
            }
        )
        for call in reply.tool_calls:
            if call.name.startswith("memory_"):
                output = memory.call_tool(call.name, call.arguments)  # memory
            else:
                output = run_bash(json.loads(call.arguments).get("cmd", "true"))
                memory.after_tool(call.name, call.arguments, output)  # memory
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    memory.after_turn(user_input, reply.content)  # memory
    return reply.content


def demo_script() -> list[Reply]:
    """A few steps of work on a task, stopping half-way."""
    return [
        Reply(
            "",
            [ToolCall("1", "memory_search", json.dumps({"query": "users"}))],
        ),
        Reply(
            "",
            [
                ToolCall(
                    "2",
                    "memory_save",
                    json.dumps({"key": "prompt:users-api", "value": "Add a /users endpoint"}),
                ),
                ToolCall("3", "bash_exec", json.dumps({"cmd": "echo wrote handlers/users.go"})),
            ],
        ),
        Reply(
            "Created handlers/users.go with the list handler.\n"
            "## Progress\nlist handler written; create handler and tests still to do\n"
            "[MEMORY: decision:users-storage] reuse the Postgres pool, no ORM"
        ),
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("task", nargs="?", default="Add a /users endpoint")
    parser.add_argument("--db", help="store file (default: this project's store)")
    parser.add_argument("--live", action="store_true", help="call a real model")
    parser.add_argument("--model", default=os.environ.get("MEMBOLT_MODEL", "gpt-4o-mini"))
    parser.add_argument("--base-url", default="https://api.openai.com/v1")
    args = parser.parse_args(argv)

    store = membolt.MemoryStore(Path(args.db)) if args.db else membolt.get_or_create_store()
    memory = AgentMemory(store)
    resumed = len(store) > 0
    memory.start_session(model=args.model, backend="openai", resumed=resumed)
    if args.live:
        api_key = os.environ.get("OPENAI_API_KEY", "")
        model: ChatModel = OpenAICompatibleModel(args.model, args.base_url, api_key)
    else:
        model = ScriptedModel(demo_script())
    print(agent_turn(model, memory, args.task))


if __name__ == "__main__":
    sys.exit(main())
