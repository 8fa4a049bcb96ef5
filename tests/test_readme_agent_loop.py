"""The README's agent-loop snippet, run as written against the real openai
SDK (its HTTP transport replaced by a scripted model, so nothing leaves the
process): tool outputs go back to the model as ``role: "tool"`` messages
with their ``tool_call_id``, and the loop runs until the model stops calling
tools."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import membolt
from membolt.tools import TOOL_NAMES

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")

README = Path(__file__).parent.parent / "README.md"


def readme_snippet() -> str:
    section = README.read_text(encoding="utf-8").split("## Use it in an agent loop", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None
    return found.group(1)


def completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
    }


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


class ScriptedModel:
    """Answers each chat.completions request in turn, keeping the bodies."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.replies = [
            completion(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        tool_call("call_1", "memory_search", {"query": "users"}),
                        tool_call("call_2", "bash_exec", {"cmd": "echo wrote handlers/users.go"}),
                    ],
                },
                "tool_calls",
            ),
            completion(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        tool_call(
                            "call_3",
                            "memory_save",
                            {"key": "progress:users", "value": "list handler written"},
                        )
                    ],
                },
                "tool_calls",
            ),
            completion({"role": "assistant", "content": "Wrote the list handler."}, "stop"),
        ]

    def __call__(self, request: Any) -> Any:
        self.requests.append(json.loads(request.content))
        return httpx.Response(200, json=self.replies[len(self.requests) - 1])


def test_readme_loop_completes_the_tool_round_trip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # get_or_create_store(): this "project"
    model = ScriptedModel()
    client = openai.OpenAI(
        api_key="test",
        base_url="http://scripted.invalid/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(model)),
    )
    ran: list[tuple[str, dict[str, Any]]] = []

    def run_my_tool(name: str, arguments: dict[str, Any]) -> str:
        ran.append((name, arguments))
        return "wrote handlers/users.go"

    bash_tool = {
        "type": "function",
        "function": {
            "name": "bash_exec",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
        },
    }
    code = readme_snippet()
    assert "model=..." in code  # the one placeholder a reader fills in
    namespace: dict[str, Any] = {
        "client": client,
        "my_tools": [bash_tool],
        "run_my_tool": run_my_tool,
        "BASE_PROMPT": "You are a coding agent.",
        "user_input": "Add a /users endpoint",
    }
    exec(compile(code.replace("model=...", 'model="gpt-4o"'), "README.md", "exec"), namespace)

    assert len(model.requests) == 3  # it looped until the model stopped calling tools
    assert ran == [("bash_exec", {"cmd": "echo wrote handlers/users.go"})]
    first, second, third = model.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["bash_exec", *TOOL_NAMES]
    system = first["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("You are a coding agent.\n\nCheck memory first.")
    # The assistant turn, then one tool message per call, answering its id.
    assistant, *tool_messages = second["messages"][2:]
    assert assistant["role"] == "assistant"
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_1", "call_2"]
    assert tool_messages == [
        {"role": "tool", "tool_call_id": "call_1", "content": "No memory entries found."},
        {"role": "tool", "tool_call_id": "call_2", "content": "wrote handlers/users.go"},
    ]
    assert third["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_3",
        "content": 'Saved memory entry "progress:users" (20 bytes)',
    }
    assert namespace["message"].content == "Wrote the list handler."
    store = membolt.get_or_create_store()
    assert store.get("progress:users").value == "list handler written"  # type: ignore[union-attr]
    assert any(key.startswith("tool:bash_exec:") for key in store.keys())  # after_tool
    assert store.get("turn:last") is not None  # after_turn
