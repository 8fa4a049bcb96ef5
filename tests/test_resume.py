"""Resume after a restart, end to end: a scripted agent works a few
turns in one process and stops mid-task; a second process builds the system
prompt, and its <memory> block marks the right entry with its chain above it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
pytestmark = pytest.mark.slow

FIRST_PROCESS = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[2])
    import membolt
    from agent_loop import Reply, ScriptedModel, ToolCall, agent_turn

    def call(id, name, **arguments):
        return ToolCall(id, name, json.dumps(arguments))

    store = membolt.MemoryStore(sys.argv[1])
    memory = membolt.AgentMemory(store)
    memory.start_session(model="scripted", backend="test")
    model = ScriptedModel([
        # turn 1: look memory up, record the goal, run a tool, answer
        Reply("", [call("1", "memory_search", query="users")]),
        Reply("", [call("2", "memory_save", key="prompt:users-api",
                        value="Add a /users endpoint with list and create")]),
        Reply("", [call("3", "bash_exec", cmd="echo wrote handlers/users.go")]),
        Reply("Created handlers/users.go.\\n## Progress\\nlist handler done; create handler to do"),
        # turn 2: more work; the progress moves on, a result is recorded
        Reply("", [call("4", "bash_exec", cmd="echo 3 passed")]),
        Reply("RESULT: list endpoint tests pass\\n"
              "## Status\\ncreate handler in progress, validation not written yet"),
        # turn 3: the agent is stopped mid-task (the process just ends)
        Reply("", [call("5", "bash_exec", cmd="echo editing handlers/users.go")]),
    ])
    agent_turn(model, memory, "Add a /users endpoint")
    agent_turn(model, memory, "continue")
    agent_turn(model, memory, "continue", max_steps=1)
    print(json.dumps(model.seen_system_prompts))
    """
)

SECOND_PROCESS = textwrap.dedent(
    """
    import json, sys
    import membolt
    store = membolt.MemoryStore(sys.argv[1])
    memory = membolt.AgentMemory(store)
    section = memory.system_prompt_section("continue the /users endpoint")
    chain = {e.key: list(store.parents(e.key)) for e in store.entries()}
    print(json.dumps({"section": section, "parents": chain,
                      "config": memory.restore_session_config()}))
    """
)


def test_a_second_process_resumes_where_the_first_stopped(tmp_path: Path) -> None:
    store_path = tmp_path / "memory.redb"
    first = subprocess.run(
        [sys.executable, "-c", FIRST_PROCESS, str(store_path), str(EXAMPLES)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    prompts = json.loads(first.stdout.strip().splitlines()[-1])
    # The first turn knew only the session; later turns saw the work so far.
    assert "prompt:users-api" not in prompts[0]
    assert "prompt:users-api [prompt]" in prompts[-1]

    second = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS, str(store_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(second.stdout)
    section: str = report["section"]
    assert section.startswith("Check memory first.")
    assert report["config"] == {"model": "scripted", "backend": "test"}

    block = section[section.index("<memory>\n") : section.index("</memory>")]
    lines = block.splitlines()
    resume_lines = [line for line in lines if line.endswith("<== RESUME")]
    assert len(resume_lines) == 1
    # The newest unfinished progress/status entry is the resume point.
    assert resume_lines[0].startswith("status:status [status]: create handler in progress")
    assert "| resume: status:status (" in block

    # Its ancestry chain is rendered above it, parents before children.
    position = {line.split(" [", 1)[0]: i for i, line in enumerate(lines)}
    key = "status:status"
    seen: set[str] = set()
    while report["parents"][key] and key not in seen:
        seen.add(key)
        parent = report["parents"][key][0]
        assert position[parent] < position[key], (parent, key)
        key = parent
    assert len(seen) >= 3
    # The finished list handler is not mistaken for the place to continue.
    assert not any(line.startswith("result:") and "RESUME" in line for line in lines)
