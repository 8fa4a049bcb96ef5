"""The README's two adapter snippets, run as written: LangGraph's store on a
file, and Anthropic's tool runner (the real SDK, its HTTP transport replaced
by a scripted model, so nothing leaves the process) calling the memory tool."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import membolt

README = Path(__file__).parent.parent / "README.md"


def snippets() -> list[str]:
    section = README.read_text(encoding="utf-8").split("## Framework adapters", 1)[1]
    section = section.split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def test_the_langgraph_snippet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(snippets()[0], "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.startswith("coffee {'text': 'dark roast, no sugar'} 1.089")
    with membolt.MemoryStore(tmp_path / "memory.redb") as store:
        assert store.keys() == ["langgraph:users/42/coffee", "langgraph:users/42/desk"]


def message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": "claude-scripted",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def test_the_anthropic_snippet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    anthropic = pytest.importorskip("anthropic")
    httpx = pytest.importorskip("httpx2")  # the SDK's HTTP client
    monkeypatch.chdir(tmp_path)
    requests: list[dict[str, Any]] = []
    replies = [
        message(
            [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "memory",
                    "input": {
                        "command": "create",
                        "path": "/memories/deploys.md",
                        "file_text": "Deploys happen on Fridays.\n",
                    },
                }
            ],
            "tool_use",
        ),
        message([{"type": "text", "text": "Noted: you deploy on Fridays."}], "end_turn"),
    ]

    def model(request: Any) -> Any:
        requests.append(json.loads(request.content))
        return httpx.Response(200, json=replies[len(requests) - 1])

    real_client = anthropic.Anthropic

    def scripted_client() -> Any:
        return real_client(
            api_key="test", http_client=httpx.Client(transport=httpx.MockTransport(model))
        )

    monkeypatch.setattr(anthropic, "Anthropic", scripted_client)
    code = snippets()[1]
    assert "model=..." in code
    exec(compile(code.replace("model=...", 'model="claude-scripted"'), "README.md", "exec"), {})

    assert len(requests) == 2
    assert requests[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    result = requests[1]["messages"][-1]["content"][0]
    assert result["tool_use_id"] == "toolu_1"
    assert "File created successfully at: /memories/deploys.md" in json.dumps(result)
    assert "Noted: you deploy on Fridays." in capsys.readouterr().out
    store = membolt.MemoryStore.for_project()
    assert store.get("/memories/deploys.md").value == "Deploys happen on Fridays.\n"  # type: ignore[union-attr]
