"""Resume benchmark (§13.1): does the next Claude Code session find the
errors, the fixes and the plan?

    maturin develop --release
    python benches/bench_resume.py                       # checklists, then latencies
    python benches/bench_resume.py --baseline fbd4b25    # the same beside an older membolt
    python benches/bench_resume.py --show                # print each hand-over block
    python benches/bench_resume.py --sizes 1000 10000 --rounds 7

**Checklists.** Each session is a script of Claude Code hook events in the
shapes Claude Code sends (``PostToolUse`` Bash ``{stdout, stderr,
interrupted, isImage}``, ``PostToolUseFailure`` with ``Exit code N`` and the
output, Edit with ``structuredPatch``, Write, MultiEdit, TodoWrite
``{oldTodos, newTodos}``, PostCompact ``compact_summary`` in Claude Code's
numbered sections, Stop with ``last_assistant_message``), each run through
a real ``membolt hook claude-code`` process in a fresh project, as Claude
Code runs them. The last event is the next session's ``SessionStart``
(``source: resume``); its context is the hand-over. Each session has a
checklist of what a person would write on a hand-over note: the open error,
the errors fixed, the plan, the files, the last thing done. A fact counts
when the ``<memory>`` block (not the key list after it) holds it; the block
is rendered at the default budget (500 tokens: its entry lines cost at most
2,000 bytes, §15.5), and the whole context stays under 10,000 characters.

**Latency.** Each event kind, run in a new process (the installed command,
``membolt hook claude-code``, the environment's script; bytecode may be
written and used, as an installed membolt has it) on a copy of an agent-shaped store of 1k, 10k
and 100k entries (``benches/bench_render.py``'s, built once and cached);
p50 of ``--rounds`` runs, each round running every case once in turn so
all see the same load. ``python -c pass`` is the floor a new interpreter
costs.

**Baseline.** ``--baseline REF`` runs everything again with the Python
package of git revision ``REF`` (say, the commit before §13.1) over this
build's core, a fair comparison only while the Rust core is the same in
both (checked: ``git diff REF -- rust`` must be empty).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUDGET_BYTES = 2_000
CONTEXT_CEILING = 10_000

# ----- payloads in Claude Code's shapes ----------------------------------------------


class Script:
    """The events of one Claude Code session on ``project``."""

    def __init__(
        self, project: Path, session: str = "3f0b2c9e-5d1a-4c2b-9e8f-0a1b2c3d4e5f"
    ) -> None:
        self.project = project
        self.session = session
        self.events: list[dict[str, Any]] = []
        self._todos: list[dict[str, str]] = []
        self._tool = 0

    def _common(self, event: str, cwd: Path | None = None) -> dict[str, Any]:
        return {
            "session_id": self.session,
            "transcript_path": f"~/.claude/projects/{self.project.name}/{self.session}.jsonl",
            "cwd": str(cwd or self.project),
            "permission_mode": "acceptEdits",
            "hook_event_name": event,
        }

    def _tool_id(self) -> str:
        self._tool += 1
        return f"toolu_01{self._tool:022d}"

    def start(self, source: str, model: str = "claude-sonnet-4-5") -> None:
        self.events.append({**self._common("SessionStart"), "source": source, "model": model})

    def prompt(self, text: str) -> None:
        self.events.append({**self._common("UserPromptSubmit"), "prompt": text})

    def bash(
        self,
        command: str,
        output: str,
        *,
        status: int = 0,
        cwd: Path | None = None,
        interrupted: bool = False,
        stderr: str = "",
    ) -> None:
        tool_input = {"command": command, "description": command.split(maxsplit=1)[0]}
        if status == 0:
            self.events.append(
                {
                    **self._common("PostToolUse", cwd),
                    "tool_name": "Bash",
                    "tool_input": tool_input,
                    "tool_response": {
                        "stdout": output,
                        "stderr": stderr,
                        "interrupted": interrupted,
                        "isImage": False,
                    },
                    "tool_use_id": self._tool_id(),
                }
            )
        else:
            text = "\n".join(part for part in (output, stderr) if part)
            self.events.append(
                {
                    **self._common("PostToolUseFailure", cwd),
                    "tool_name": "Bash",
                    "tool_input": tool_input,
                    "tool_use_id": self._tool_id(),
                    "error": f"Exit code {status}\n{text}",
                    "is_interrupt": False,
                }
            )

    def edit(self, path: str, old: str, new: str, *, before: str = "", start: int = 1) -> None:
        file_path = str(self.project / path)
        old_lines, new_lines = old.split("\n"), new.split("\n")
        context = [f" {line}" for line in before.split("\n")] if before else []
        lines = [*context, *(f"-{x}" for x in old_lines), *(f"+{x}" for x in new_lines)]
        self.events.append(
            {
                **self._common("PostToolUse"),
                "tool_name": "Edit",
                "tool_input": {
                    "file_path": file_path,
                    "old_string": old,
                    "new_string": new,
                    "replace_all": False,
                },
                "tool_response": {
                    "filePath": file_path,
                    "oldString": old,
                    "newString": new,
                    "originalFile": None,
                    "structuredPatch": [
                        {
                            "oldStart": start,
                            "oldLines": len(context) + len(old_lines),
                            "newStart": start,
                            "newLines": len(context) + len(new_lines),
                            "lines": lines,
                        }
                    ],
                    "userModified": False,
                    "replaceAll": False,
                },
                "tool_use_id": self._tool_id(),
            }
        )

    def multi_edit(self, path: str, edits: list[tuple[str, str]]) -> None:
        file_path = str(self.project / path)
        lines = [line for old, new in edits for line in (f"-{old}", f"+{new}")]
        self.events.append(
            {
                **self._common("PostToolUse"),
                "tool_name": "MultiEdit",
                "tool_input": {
                    "file_path": file_path,
                    "edits": [{"old_string": o, "new_string": n} for o, n in edits],
                },
                "tool_response": {
                    "filePath": file_path,
                    "edits": [
                        {"old_string": o, "new_string": n, "replace_all": False} for o, n in edits
                    ],
                    "originalFileContents": "",
                    "structuredPatch": [
                        {
                            "oldStart": 40,
                            "oldLines": len(edits),
                            "newStart": 40,
                            "newLines": len(edits),
                            "lines": lines,
                        }
                    ],
                    "userModified": False,
                },
                "tool_use_id": self._tool_id(),
            }
        )

    def write(self, path: str, content: str) -> None:
        file_path = str(self.project / path)
        self.events.append(
            {
                **self._common("PostToolUse"),
                "tool_name": "Write",
                "tool_input": {"file_path": file_path, "content": content},
                "tool_response": {
                    "type": "create",
                    "filePath": file_path,
                    "content": content,
                    "structuredPatch": [],
                    "originalFile": None,
                },
                "tool_use_id": self._tool_id(),
            }
        )

    def todos(self, *items: tuple[str, str]) -> None:
        old = self._todos
        new = [{"content": c, "status": s, "activeForm": f"Working on: {c}"} for c, s in items]
        self._todos = new
        self.events.append(
            {
                **self._common("PostToolUse"),
                "tool_name": "TodoWrite",
                "tool_input": {"todos": new},
                "tool_response": {"oldTodos": old, "newTodos": new},
                "tool_use_id": self._tool_id(),
            }
        )

    def compact(self, summary: str, trigger: str = "auto") -> None:
        self.events.append(
            {**self._common("PostCompact"), "trigger": trigger, "compact_summary": summary}
        )

    def stop(self, reply: str) -> None:
        self.events.append(
            {**self._common("Stop"), "stop_hook_active": False, "last_assistant_message": reply}
        )


# ----- checklists -----------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    """One line of a hand-over note, and how to find it in a block."""

    name: str
    holds: Callable[[Block], bool]


@dataclass
class Block:
    text: str
    lines: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lines = self.text.splitlines()

    @property
    def map_line(self) -> str:
        return next((line for line in self.lines if line.startswith("map: ")), "")

    def entry(self, key_pattern: str) -> list[str]:
        """The entry lines whose key matches ``key_pattern``."""
        return [line for line in self.lines if re.match(rf"(?:{key_pattern}) \[", line)]

    def has(self, pattern: str, key_pattern: str = r"\S+") -> bool:
        return any(re.search(pattern, line) for line in self.entry(key_pattern))

    def open_error(self, pattern: str) -> bool:
        """The map line names an open error whose line matches ``pattern``."""
        named = re.search(r"\| error: (\S+)", self.map_line)
        return bool(named) and self.has(pattern, re.escape(named.group(1)))

    def resume(self, pattern: str) -> bool:
        """The resume entry (or one of its ancestors shown) matches."""
        return any(re.search(pattern, line) for line in self.lines if "<== RESUME" in line)

    def entry_bytes(self, store_path: Path) -> int:
        """The entry lines' cost as §5.1 counts it (key, value, 30), the
        values read from the store; a value shown cut counts as shown."""
        import membolt

        store = membolt.MemoryStore(store_path)
        total = 0
        for line in self.lines:
            if line.startswith(("map: ", "Legend: ", "downstream of ", "<memory>", "</memory>")):
                continue
            key = re.split(r" \[|: ", line, maxsplit=1)[0]
            entry = store.get(html.unescape(key))
            if entry is None:
                continue
            shown = line.split(": ", 1)[1] if ": " in line else ""
            shown = re.sub(r"  (<- |\(same as |<== RESUME).*$", "", shown)
            shown = html.unescape(shown).replace(" / ", "\n")
            value = min(len(entry.value.encode()), len(shown.encode()))
            total += len(entry.key.encode()) + value + 30
        store.close()
        return total


def no_open_error(block: Block) -> bool:
    return "| error:" not in block.map_line


@dataclass(frozen=True)
class Session:
    name: str
    about: str
    script: Callable[[Script], None]
    checklist: tuple[Fact, ...]


PYTEST_HEADER = """============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0
rootdir: {root}
configfile: pyproject.toml
collected 4 items
"""


def calc_session(s: Script) -> None:
    """The session of the issue: add() and a ZeroDivisionError fixed and
    committed, a compaction, then resumed on a failing power() test."""
    header = PYTEST_HEADER.format(root="/home/dev/calc")
    s.start("startup")
    s.prompt(
        "tests/test_calc.py fails. Fix add(), divide() and power() in src/calc.py and "
        "commit after each fix; divide by zero should raise ValueError."
    )
    s.todos(
        ("Fix add()", "in_progress"),
        ("Fix divide() by zero", "pending"),
        ("Fix power()", "pending"),
        ("Commit each fix", "pending"),
    )
    s.bash(
        "python -m pytest -q",
        header
        + """
tests/test_calc.py FF.F                                                  [100%]

=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

    def test_add():
>       assert add(2, 3) == 5
E       assert -1 == 5
E        +  where -1 = add(2, 3)

tests/test_calc.py:5: AssertionError
_________________________________ test_divide __________________________________

    def test_divide():
        with pytest.raises(ValueError):
>           divide(1, 0)

tests/test_calc.py:10: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 

a = 1, b = 0

    def divide(a, b):
>       return a / b
E       ZeroDivisionError: division by zero

src/calc.py:6: ZeroDivisionError
__________________________________ test_power __________________________________

    def test_power():
>       assert power(2, 3) == 8
E       assert 6 == 8
E        +  where 6 = power(2, 3)

tests/test_calc.py:18: AssertionError
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_add - assert -1 == 5
FAILED tests/test_calc.py::test_divide - ZeroDivisionError: division by zero
FAILED tests/test_calc.py::test_power - assert 6 == 8
========================= 3 failed, 1 passed in 0.05s ==========================""",
        status=1,
    )
    s.edit("src/calc.py", "    return a - b", "    return a + b", before="def add(a, b):", start=1)
    s.bash(
        "python -m pytest -q tests/test_calc.py::test_add",
        ".                                                                        [100%]\n1 passed in 0.01s",
    )
    s.todos(
        ("Fix add()", "completed"),
        ("Fix divide() by zero", "in_progress"),
        ("Fix power()", "pending"),
        ("Commit each fix", "pending"),
    )
    s.edit(
        "src/calc.py",
        "    return a / b",
        '    if b == 0:\n        raise ValueError("division by zero")\n    return a / b',
        before="def divide(a, b):",
        start=5,
    )
    s.bash(
        "python -m pytest -q tests/test_calc.py::test_divide",
        ".                                                                        [100%]\n1 passed in 0.01s",
    )
    s.bash(
        'git commit -am "Fix add() and divide() in src/calc.py"',
        "[main 1a2b3c4] Fix add() and divide() in src/calc.py\n 1 file changed, 4 insertions(+), 2 deletions(-)",
    )
    s.todos(
        ("Fix add()", "completed"),
        ("Fix divide() by zero", "completed"),
        ("Fix power()", "in_progress"),
        ("Commit each fix", "pending"),
    )
    s.stop(
        "Fixed add() and divide() in src/calc.py and committed both (1a2b3c4): add() "
        "subtracted its arguments, and divide() now raises ValueError for a zero divisor. "
        "test_power still fails: power() multiplies instead of raising to a power, so that "
        "is next."
    )
    s.prompt("ok, go on with power()")
    s.compact("""Analysis:
Let me go through the conversation chronologically.
1. The user asked me to fix the failing tests in tests/test_calc.py.
2. I ran pytest: test_add, test_divide and test_power failed.
3. I fixed add() and divide() and committed them.

Summary:
1. Primary Request and Intent:
   The user wants every test in tests/test_calc.py to pass by fixing add(), divide() and power() in src/calc.py, with a commit after each fix; a zero divisor must raise ValueError.

2. Key Technical Concepts:
   - pytest, pytest.raises
   - Python arithmetic operators

3. Files and Code Sections:
   - src/calc.py
      - add() returned a - b; now returns a + b
      - divide() raises ValueError("division by zero") when b == 0
      - power() still returns a * b
      ```python
      def power(a, b):
          return a * b
      ```
   - tests/test_calc.py (read only)

4. Errors and fixes:
    - **test_add failed with `assert -1 == 5`**:
      - add() returned a - b; changed to return a + b.
    - **ZeroDivisionError: division by zero in divide()**:
      - divide() now raises ValueError("division by zero") when b == 0, as the user asked.

5. Problem Solving:
   add() and divide() are fixed and committed in 1a2b3c4. test_power still fails (assert 6 == 8).

6. All user messages:
    - "tests/test_calc.py fails. Fix add(), divide() and power() in src/calc.py and commit after each fix; divide by zero should raise ValueError."
    - "ok, go on with power()"

7. Pending Tasks:
   - Fix power() so that test_power passes
   - Commit the power() fix

8. Current Work:
   Fixing power() in src/calc.py, which returns a * b; test_power expects power(2, 3) == 8.

9. Optional Next Step:
   Change power() to return a ** b, run python -m pytest -q, then commit. The user said: "ok, go on with power()".
""")
    s.start("compact")
    s.bash(
        "python -m pytest -q",
        header
        + """
tests/test_calc.py ...F                                                  [100%]

=================================== FAILURES ===================================
__________________________________ test_power __________________________________

    def test_power():
>       assert power(2, 3) == 8
E       assert 6 == 8
E        +  where 6 = power(2, 3)

tests/test_calc.py:18: AssertionError
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_power - assert 6 == 8
========================= 1 failed, 3 passed in 0.03s ==========================""",
        status=1,
    )
    s.stop(
        "The suite still fails on test_power: power(2, 3) returns 6 because power() "
        "computes a * b. I'll change it to a ** b next, rerun the tests and commit."
    )
    s.start("resume")


CALC = Session(
    "calc (pytest)",
    "add() and a ZeroDivisionError fixed and committed, compacted, resumed on a failing power()",
    calc_session,
    (
        Fact(
            "open error: test_power fails (6 == 8)",
            lambda b: b.open_error(r"test_power") and b.has(r"6 == 8"),
        ),
        Fact("fixed: add() (assert -1 == 5)", lambda b: b.has(r"-1 == 5|return a \+ b")),
        Fact("fixed: divide() ZeroDivisionError", lambda b: b.has(r"ZeroDivisionError")),
        Fact("plan: fix power() next", lambda b: b.resume(r"power")),
        Fact("files: src/calc.py", lambda b: b.has(r"src/calc\.py")),
        Fact(
            "last decision: a zero divisor raises ValueError",
            lambda b: b.has(r"raises? ValueError"),
        ),
    ),
)


def api_session(s: Script) -> None:
    """A TypeScript API: a 500 turned into a 404, a type error fixed on the
    way, a new test file; the integration suite cannot reach its database."""
    s.start("startup")
    s.prompt(
        "GET /users/:id answers 500 for a user that does not exist. Make it 404 and add "
        "a test for it."
    )
    s.todos(
        ("Reproduce the 500 in a unit test", "in_progress"),
        ("Return 404 for a missing user", "pending"),
        ("Add a test for GET /users/:id", "pending"),
        ("Run the integration suite", "pending"),
    )
    s.bash(
        "npm test -- users",
        """
> api@2.3.0 test
> jest users

 FAIL  src/api/users.test.ts
  GET /users/:id
    ✓ returns the user (18 ms)
    ✕ returns 404 for a missing user (9 ms)

  ● GET /users/:id › returns 404 for a missing user

    expect(received).toBe(expected) // Object.is equality

    Expected: 404
    Received: 500

      41 |     const res = await request(app).get("/users/nope");
    > 42 |     expect(res.status).toBe(404);
         |                        ^

      at Object.<anonymous> (src/api/users.test.ts:42:24)

Test Suites: 1 failed, 1 total
Tests:       1 failed, 11 passed, 12 total
Snapshots:   0 total
Time:        2.114 s""",
        status=1,
    )
    s.edit(
        "src/api/users.ts",
        '  if (!user) throw new Error("not found");',
        '  if (!user) return res.status(404).json({ error: "not found" });',
        before="  const user = await db.users.find(req.params.id);",
        start=12,
    )
    s.bash(
        "npx tsc --noEmit",
        "src/api/users.ts(14,12): error TS2322: Type 'Response<any, Record<string, any>>' is not assignable to type 'User'.",
        status=2,
    )
    s.edit(
        "src/api/users.ts",
        "export async function getUser(req: Request, res: Response): Promise<User> {",
        "export async function getUser(req: Request, res: Response): Promise<void> {",
        start=10,
    )
    s.bash("npx tsc --noEmit", "")
    s.bash(
        "npm test -- users",
        """
> api@2.3.0 test
> jest users

 PASS  src/api/users.test.ts
Test Suites: 1 passed, 1 total
Tests:       12 passed, 12 total
Snapshots:   0 total
Time:        1.982 s""",
    )
    s.write(
        "src/api/users.404.test.ts",
        'import request from "supertest";\nimport { app } from "../app";\n\n'
        + "\n".join(f"// case {n}" for n in range(22))
        + "\n",
    )
    s.todos(
        ("Reproduce the 500 in a unit test", "completed"),
        ("Return 404 for a missing user", "completed"),
        ("Add a test for GET /users/:id", "completed"),
        ("Run the integration suite", "in_progress"),
        ("Add a test for DELETE /users/:id", "pending"),
    )
    s.bash(
        "npm run test:integration",
        """
> api@2.3.0 test:integration
> jest -c jest.integration.config.js

 FAIL  tests/integration/users.int.test.ts
  ● users › DELETE /users/:id removes the user

    connect ECONNREFUSED 127.0.0.1:5432

Test Suites: 1 failed, 1 total
Tests:       1 failed, 7 passed, 8 total""",
        status=1,
    )
    s.stop(
        "Changed GET /users/:id to answer 404 for a missing user and added "
        "src/api/users.404.test.ts; the unit tests and tsc pass. The integration suite "
        "fails because nothing listens on 127.0.0.1:5432: it needs the Postgres "
        "container (docker compose up db) before it can run."
    )
    s.start("resume")


API = Session(
    "api (jest, tsc)",
    "a 500 made a 404, a TS2322 fixed on the way, a new test; integration cannot reach Postgres",
    api_session,
    (
        Fact(
            "open error: integration suite, ECONNREFUSED",
            lambda b: b.open_error(r"ECONNREFUSED|users\.int\.test"),
        ),
        Fact("fixed: TS2322 type error", lambda b: b.has(r"TS2322")),
        Fact("fixed: missing user answers 404", lambda b: b.has(r"404")),
        Fact(
            "plan: integration suite, then DELETE test",
            lambda b: b.resume(r"integration") and b.resume(r"DELETE"),
        ),
        Fact("files: src/api/users.ts", lambda b: b.has(r"src/api/users\.ts")),
        Fact("files: the new test file", lambda b: b.has(r"users\.404\.test\.ts")),
        Fact(
            "last done: 404 for a missing user",
            lambda b: b.has(r"Changed GET /users/:id", "last_action"),
        ),
    ),
)


def rust_session(s: Script) -> None:
    """A dependency upgrade in Rust: a type error fixed, an interrupted test
    run, a failing test fixed after a compaction, clippy failing at the end."""
    s.start("startup")
    s.prompt(
        "Upgrade toml from 0.5 to 0.8 in the config loader and keep cargo test and clippy green."
    )
    s.edit("Cargo.toml", 'toml = "0.5"', 'toml = "0.8"', before="[dependencies]", start=9)
    s.bash(
        "cargo build",
        stderr="""   Compiling toml v0.8.19
   Compiling loader v0.4.0 (/home/dev/loader)
error[E0308]: mismatched types
  --> src/config.rs:42:23
   |
42 |     let value: toml::Value = text.parse()?;
   |                -----------   ^^^^^^^^^^^^ expected `Value`, found `Table`
   |                |
   |                expected due to this

For more information about this error, try `rustc --explain E0308`.
error: could not compile `loader` (lib) due to 1 previous error""",
        output="",
        status=101,
    )
    s.multi_edit(
        "src/config.rs",
        [
            (
                "    let value: toml::Value = text.parse()?;",
                "    let value: toml::Table = text.parse()?;",
            ),
            ("    let section = value.as_table()?;", "    let section = &value;"),
        ],
    )
    s.bash(
        "cargo build",
        "",
        stderr="   Compiling loader v0.4.0 (/home/dev/loader)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 4.21s",
    )
    s.bash(
        "cargo test",
        "running 48 tests\ntest config::tests::parses_defaults ... ok\ntest config::tests::parses_overrides ... ok",
        interrupted=True,
    )
    s.bash(
        "cargo test config::",
        """running 12 tests
test config::tests::parses_defaults ... ok
test config::tests::rejects_unknown_keys ... FAILED

failures:

---- config::tests::rejects_unknown_keys stdout ----

thread 'config::tests::rejects_unknown_keys' panicked at src/config.rs:88:9:
assertion failed: err.to_string().contains("unknown field")
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

failures:
    config::tests::rejects_unknown_keys

test result: FAILED. 11 passed; 1 failed; 0 ignored; 0 measured; 36 filtered out; finished in 0.02s""",
        stderr="error: test failed, to rerun pass `--lib`",
        status=101,
    )
    s.compact("""<analysis>
The user asked for a toml upgrade. The build broke with E0308 and I fixed it; one test fails.
</analysis>
<summary>
1. Primary Request and Intent:
   Upgrade the toml crate from 0.5 to 0.8 in the config loader, keeping cargo test and cargo clippy green.

2. Key Technical Concepts:
   - toml 0.8 parses a document into toml::Table rather than toml::Value

3. Files and Code Sections:
   - Cargo.toml: toml = "0.8"
   - src/config.rs: parse into toml::Table (line 42)

4. Errors and fixes:
   - error[E0308] mismatched types at src/config.rs:42 (expected `Value`, found `Table`):
     - Fixed by parsing into toml::Table and dropping the as_table() call.
   - cargo test timed out once; reran with a filter.

5. Problem Solving:
   The build is green again; config::tests::rejects_unknown_keys fails because toml 0.8 words the error differently.

6. All user messages:
   - "Upgrade toml from 0.5 to 0.8 in the config loader and keep cargo test and clippy green."

7. Pending Tasks:
   - Make config::tests::rejects_unknown_keys pass with toml 0.8's error text
   - Run cargo clippy -- -D warnings

8. Current Work:
   Looking at the assertion in config::tests::rejects_unknown_keys (src/config.rs:88), which expects "unknown field".

9. Optional Next Step:
   Print the new error text, update the assertion at src/config.rs:88, and rerun cargo test config::.
</summary>""")
    s.start("compact")
    s.todos(
        ("Update the rejects_unknown_keys assertion", "in_progress"),
        ("Run cargo clippy -- -D warnings", "pending"),
        ("Run the full cargo test", "pending"),
    )
    s.edit(
        "src/config.rs",
        '        assert!(err.to_string().contains("unknown field"));',
        '        assert!(err.to_string().contains("unknown key"));',
        start=88,
    )
    s.bash(
        "cargo test config::",
        "running 12 tests\n"
        + "\n".join(f"test config::tests::case_{n} ... ok" for n in range(12))
        + "\n\ntest result: ok. 12 passed; 0 failed; 0 ignored; 0 measured; 36 filtered out; finished in 0.02s",
    )
    s.todos(
        ("Update the rejects_unknown_keys assertion", "completed"),
        ("Run cargo clippy -- -D warnings", "in_progress"),
        ("Run the full cargo test", "pending"),
    )
    s.bash(
        "cargo clippy -- -D warnings",
        "",
        stderr="""    Checking loader v0.4.0 (/home/dev/loader)
error: this `if` has identical blocks
  --> src/config.rs:61:27
   |
61 |       if section.is_empty() {
   |  ___________________________^
62 | |         return Ok(Config::default());
63 | |     } else {
   | |_____^
   |
   = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#if_same_then_else
   = note: `-D clippy::if-same-then-else` implied by `-D warnings`

error: could not compile `loader` (lib) due to 1 previous error""",
        status=101,
    )
    s.stop(
        "Updated the rejects_unknown_keys assertion for toml 0.8's wording; cargo test "
        "config:: passes. Clippy now fails on an if with identical blocks at "
        "src/config.rs:61, which I will merge into one branch next."
    )
    s.start("resume")


RUST = Session(
    "rust (cargo, clippy)",
    "toml upgrade: E0308 fixed, an interrupted run, a failing test fixed after compaction, "
    "clippy failing",
    rust_session,
    (
        Fact("open error: clippy identical blocks", lambda b: b.open_error(r"identical blocks")),
        Fact("fixed: E0308 mismatched types", lambda b: b.has(r"E0308")),
        Fact("fixed: rejects_unknown_keys", lambda b: b.has(r"rejects_unknown_keys")),
        Fact(
            "plan: clippy, then the full cargo test",
            lambda b: b.resume(r"clippy") and b.resume(r"full cargo test"),
        ),
        Fact("files: src/config.rs", lambda b: b.has(r"src/config\.rs")),
        Fact(
            "last done: updated the assertion",
            lambda b: b.has(r"Updated the rejects_unknown_keys assertion", "last_action"),
        ),
    ),
)


def docs_session(s: Script) -> None:
    """Documentation only: no error at all, the task list finished."""
    s.start("startup")
    s.prompt(
        "Document the new --local flag of `install` in README.md and add a short "
        "docs/install.md guide."
    )
    s.todos(
        ("Document --local in README.md", "in_progress"),
        ("Write docs/install.md", "pending"),
        ("Check the links", "pending"),
    )
    s.edit(
        "README.md",
        "membolt install claude-code --scope user",
        "membolt install claude-code --scope user\nmembolt install claude-code --local",
        before="```sh",
        start=254,
    )
    s.write(
        "docs/install.md",
        "# Installing membolt for Claude Code\n\n"
        + "\n".join(f"Step {n}." for n in range(30))
        + "\n",
    )
    s.bash(
        "npx markdown-link-check README.md docs/install.md",
        "FILE: README.md\n  [✓] docs/install.md\n\n  12 links checked.\n\nFILE: docs/install.md\n  [✓] ../README.md\n\n  3 links checked.",
    )
    s.todos(
        ("Document --local in README.md", "completed"),
        ("Write docs/install.md", "completed"),
        ("Check the links", "completed"),
    )
    s.stop("Added the --local flag to README.md and wrote docs/install.md; every link checks.")
    s.start("resume")


DOCS = Session(
    "docs (no error)",
    "two documentation changes, the task list finished, nothing failing",
    docs_session,
    (
        Fact("no open error", no_open_error),
        Fact("plan: the task list is done", lambda b: b.has(r"done: 3", "progress:todos")),
        Fact(
            "files: README.md and docs/install.md",
            lambda b: b.has(r"README\.md") and b.has(r"docs/install\.md"),
        ),
        Fact(
            "last done: the --local flag documented",
            lambda b: b.has(r"Added the --local flag", "last_action"),
        ),
    ),
)


def go_session(s: Script) -> None:
    """A Go service: a nil map panic and a vet error fixed before a long,
    verbose compaction summary (every section a paragraph or more, code
    included), then a race found after the resume."""
    s.start("startup")
    s.prompt(
        "The rate limiter panics under load (assignment to entry in nil map). Fix it, keep "
        "go vet and go test -race green, and don't change the public API of package ratelimit."
    )
    s.todos(
        ("Reproduce the panic with a test", "in_progress"),
        ("Fix the nil map in NewLimiter", "pending"),
        ("Run go vet and go test -race", "pending"),
    )
    s.bash(
        "go test ./internal/ratelimit/...",
        "--- FAIL: TestLimiterConcurrentKeys (0.00s)\n"
        "panic: assignment to entry in nil map [recovered]\n"
        "\tpanic: assignment to entry in nil map\n\n"
        "goroutine 7 [running]:\n"
        "github.com/acme/gateway/internal/ratelimit.(*Limiter).Allow(0xc000124000, {0x6b2f40, 0x5})\n"
        "\t/home/dev/gateway/internal/ratelimit/limiter.go:48 +0x1a5\n"
        "FAIL\tgithub.com/acme/gateway/internal/ratelimit\t0.012s\nFAIL",
        status=1,
    )
    s.edit(
        "internal/ratelimit/limiter.go",
        "\treturn &Limiter{rate: rate, burst: burst}",
        "\treturn &Limiter{rate: rate, burst: burst, buckets: make(map[string]*bucket)}",
        before="func NewLimiter(rate float64, burst int) *Limiter {",
        start=31,
    )
    s.bash(
        "go vet ./...",
        "# github.com/acme/gateway/internal/ratelimit\n"
        "internal/ratelimit/limiter.go:52:2: copylocks: Allow passes lock by value: "
        "ratelimit.bucket contains sync.Mutex",
        status=1,
    )
    s.edit(
        "internal/ratelimit/limiter.go",
        "\tb := l.buckets[key]\n\tif b.tokens < 1 {",
        "\tb := l.bucket(key)\n\tif b.tokens < 1 {",
        start=50,
    )
    s.bash("go vet ./...", "")
    s.bash(
        "go test ./internal/ratelimit/...",
        "ok  \tgithub.com/acme/gateway/internal/ratelimit\t0.015s",
    )
    s.stop(
        "Fixed the nil map panic: NewLimiter now makes the buckets map, and Allow takes the "
        "bucket through a pointer (go vet's copylocks). go vet and the package tests pass; "
        "next I'll run the race detector."
    )
    s.prompt("good, carry on with -race")
    s.compact(
        """<analysis>
Chronologically: the user reported a panic in the rate limiter under load. I reproduced it with
TestLimiterConcurrentKeys, found the nil buckets map, fixed NewLimiter, then go vet complained
about copylocks and I changed Allow to use a pointer. Tests pass. The user asked to continue with
the race detector.
</analysis>
<summary>
1. Primary Request and Intent:
   The user reported that the rate limiter in internal/ratelimit panics under load with
   "assignment to entry in nil map". They asked me to fix it while keeping `go vet` and
   `go test -race` green and without changing the public API of package ratelimit (NewLimiter,
   Limiter.Allow, Limiter.Reset must keep their signatures). They later said "good, carry on
   with -race".

2. Key Technical Concepts:
   - Go maps must be initialised with make before assignment
   - sync.Mutex must not be copied (go vet copylocks)
   - The race detector (go test -race)
   - Token bucket rate limiting

3. Files and Code Sections:
   - internal/ratelimit/limiter.go
      - NewLimiter now initialises the buckets map:
      ```go
      func NewLimiter(rate float64, burst int) *Limiter {
          return &Limiter{rate: rate, burst: burst, buckets: make(map[string]*bucket)}
      }
      ```
      - Allow now takes the bucket through l.bucket(key), which returns a *bucket, so the
        mutex inside is never copied.
   - internal/ratelimit/limiter_test.go
      - TestLimiterConcurrentKeys reproduces the panic with 50 goroutines and 5 keys.

4. Errors and fixes:
    - **panic: assignment to entry in nil map in Limiter.Allow (limiter.go:48)**:
      - NewLimiter never made the buckets map; fixed by initialising it with make in
        NewLimiter. TestLimiterConcurrentKeys now passes.
    - **go vet copylocks: Allow passes lock by value (limiter.go:52)**:
      - bucket holds a sync.Mutex and Allow copied it out of the map; fixed by storing *bucket
        values and reading them through a new l.bucket(key) helper.

5. Problem Solving:
   The panic and the vet warning are fixed; go test ./internal/ratelimit/... passes. The race
   detector has not been run yet; Allow reads l.buckets without holding l.mu, which may race
   with Reset.

6. All user messages:
    - "The rate limiter panics under load (assignment to entry in nil map). Fix it, keep go vet
      and go test -race green, and don't change the public API of package ratelimit."
    - "good, carry on with -race"

7. Pending Tasks:
   - Run go test -race ./internal/ratelimit/... and fix any race it reports
   - Keep the public API of package ratelimit unchanged

8. Current Work:
   I had just finished the go vet fix (Allow now works on *bucket through l.bucket(key)) and
   was about to run the race detector, as the user asked with "good, carry on with -race".
   I suspect Allow's unguarded read of l.buckets races with Reset, which replaces the map
   while holding l.mu.

9. Optional Next Step:
   Run `go test -race ./internal/ratelimit/...`; if it reports the suspected race between
   Allow and Reset, take l.mu (or an RWMutex read lock) around the map lookup in l.bucket.
   The user's last request: "good, carry on with -race".
</summary>"""
    )
    s.start("compact")
    s.todos(
        ("Reproduce the panic with a test", "completed"),
        ("Fix the nil map in NewLimiter", "completed"),
        ("Run go vet and go test -race", "in_progress"),
        ("Guard the map read in l.bucket if -race complains", "pending"),
    )
    s.bash(
        "go test -race ./internal/ratelimit/...",
        "==================\nWARNING: DATA RACE\n"
        "Read at 0x00c0001a2030 by goroutine 9:\n"
        "  github.com/acme/gateway/internal/ratelimit.(*Limiter).bucket()\n"
        "      /home/dev/gateway/internal/ratelimit/limiter.go:61 +0x64\n"
        "Previous write at 0x00c0001a2030 by goroutine 12:\n"
        "  github.com/acme/gateway/internal/ratelimit.(*Limiter).Reset()\n"
        "      /home/dev/gateway/internal/ratelimit/limiter.go:74 +0x9c\n"
        "==================\n"
        "--- FAIL: TestLimiterConcurrentKeys (0.03s)\n"
        "    testing.go:1399: race detected during execution of test\n"
        "FAIL\nFAIL\tgithub.com/acme/gateway/internal/ratelimit\t0.051s\nFAIL",
        status=1,
    )
    s.stop(
        "The race detector confirms it: l.bucket reads l.buckets at limiter.go:61 while Reset "
        "replaces the map at limiter.go:74. I'll take l.mu.RLock around the lookup next and "
        "rerun go test -race."
    )
    s.start("resume")


GO = Session(
    "go (verbose summary)",
    "a nil map panic and a vet error fixed, a long compaction summary, a data race open",
    go_session,
    (
        Fact(
            "open error: data race in TestLimiterConcurrentKeys",
            lambda b: b.open_error(r"TestLimiterConcurrentKeys|race"),
        ),
        Fact("fixed: nil map panic", lambda b: b.has(r"nil map")),
        Fact("fixed: go vet copylocks", lambda b: b.has(r"copylocks")),
        Fact(
            "plan: guard the map read, rerun -race", lambda b: b.resume(r"l\.bucket|RLock|[Gg]uard")
        ),
        Fact("files: internal/ratelimit/limiter.go", lambda b: b.has(r"limiter\.go")),
        Fact("last decision: keep the public API", lambda b: b.has(r"public API")),
    ),
)


SESSIONS = (CALC, API, RUST, GO, DOCS)

# ----- running hooks ---------------------------------------------------------------------


@dataclass(frozen=True)
class Membolt:
    """How to run one membolt: its label, interpreter and extra environment."""

    label: str
    python: str
    env: dict[str, str]

    def command(self) -> list[str]:
        """What the project-scope install registers: ``membolt hook
        claude-code``, the environment's ``membolt`` script."""
        script = Path(self.python).parent / "membolt"
        if script.is_file():
            return [str(script), "hook", "claude-code"]
        return [self.python, "-m", "membolt.cli", "hook", "claude-code"]


def run_hook(membolt: Membolt, payload: dict[str, Any], cwd: Path, home: Path) -> tuple[str, float]:
    # The hooks may write and use compiled bytecode, as an installed membolt
    # has it (pip compiles it at install time).
    unwanted = ("CLAUDE_PROJECT_DIR", "MEMBOLT_DATABASE_URL", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in unwanted}
    env.update(membolt.env, MEMBOLT_HOME=str(home))
    started = time.perf_counter()
    done = subprocess.run(
        membolt.command(),
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=cwd,
        env=env,
        check=False,
    )
    elapsed = (time.perf_counter() - started) * 1e3
    if done.returncode != 0 or done.stderr:
        raise RuntimeError(
            f"{membolt.label}: {payload['hook_event_name']} exited "
            f"{done.returncode}: {done.stderr.decode()}"
        )
    return done.stdout.decode(), elapsed


def hand_over(membolt: Membolt, session: Session, tmp: Path) -> tuple[str, Block, Path]:
    """Runs the session; the context of its last event, the block in it and
    the store."""
    project = tmp / f"{membolt.label}-{session.name.split()[0]}"
    project.mkdir(parents=True)
    (project / ".git").mkdir()  # a repository, so that the hooks find it from any directory
    home = tmp / f"home-{membolt.label}-{session.name.split()[0]}"
    script = Script(project)
    session.script(script)
    output = ""
    for payload in script.events:
        output, _ = run_hook(membolt, payload, project, home)
    context = json.loads(output)["hookSpecificOutput"]["additionalContext"] if output else ""
    found = re.search(r"<memory>\n.*?\n</memory>", context, re.DOTALL)
    from membolt.store import encode_cwd

    store = home / encode_cwd(str(project)) / "memory.redb"
    return context, Block(found.group(0) if found else ""), store


# ----- latency ---------------------------------------------------------------------------


def latency_cases(project: Path) -> dict[str, dict[str, Any]]:
    """One event of each kind the hooks handle."""
    script = Script(project)
    script.start("resume")
    script.prompt("why does test_power fail after the compaction?")
    script.bash("python -m pytest -q", "....\n4 passed in 0.03s")
    script.bash(
        "python -m pytest -q tests/test_x.py",
        "F\nFAILED tests/test_x.py::test_a - assert 1 == 2\n1 failed in 0.02s",
        status=1,
    )
    script.edit(
        "src/calc.py", "    return a * b", "    return a ** b", before="def power(a, b):", start=9
    )
    script.todos(("Fix power()", "in_progress"), ("Commit the fix", "pending"))
    calc = Script(project)
    calc_session(calc)
    (summary,) = [e for e in calc.events if e["hook_event_name"] == "PostCompact"]
    script.events.append(summary)
    script.stop(
        "Fixed power() in src/calc.py: it multiplied. All four tests pass; next is the commit."
    )
    names = [
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse Bash",
        "PostToolUseFailure Bash",
        "PostToolUse Edit",
        "PostToolUse TodoWrite",
        "PostCompact",
        "Stop",
    ]
    return dict(zip(names, script.events, strict=True))


def agent_store(size: int) -> Path:
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT / "tests"))
    import bench_render

    path: Path = bench_render.store_path(size)
    return path


def latencies(
    membolts: list[Membolt], sizes: list[int], rounds: int, tmp: Path
) -> dict[tuple[str, int, str], list[float]]:
    from membolt.store import encode_cwd

    timings: dict[tuple[str, int, str], list[float]] = {}
    for size in sizes:
        source = agent_store(size)
        setups = []
        for membolt in membolts:
            project = tmp / f"latency-{membolt.label}-{size}"
            project.mkdir()
            home = tmp / f"latency-home-{membolt.label}-{size}"
            store = home / encode_cwd(str(project)) / "memory.redb"
            store.parent.mkdir(parents=True, mode=0o700)
            shutil.copyfile(source, store)
            cases = latency_cases(project)
            run_hook(membolt, cases["SessionStart"], project, home)  # warms the sidecars
            setups.append((membolt, project, home, cases))
        for _ in range(rounds):
            for membolt, project, home, cases in setups:
                floor_started = time.perf_counter()
                subprocess.run([membolt.python, "-c", "pass"], check=True)
                timings.setdefault((membolt.label, size, "python -c pass"), []).append(
                    (time.perf_counter() - floor_started) * 1e3
                )
                for name, payload in cases.items():
                    _, elapsed = run_hook(membolt, payload, project, home)
                    timings.setdefault((membolt.label, size, name), []).append(elapsed)
    return timings


# ----- the baseline ------------------------------------------------------------------------


def baseline(ref: str, tmp: Path) -> Membolt:
    """``ref``'s Python package over this build's core."""
    import membolt

    changed = subprocess.run(["git", "diff", "--quiet", ref, "--", "rust"], cwd=ROOT, check=False)
    if changed.returncode != 0:
        raise SystemExit(f"the Rust core differs from {ref}'s: a baseline needs the same core")
    target = tmp / "baseline"
    target.mkdir()
    archive = subprocess.run(
        ["git", "archive", ref, "python/membolt"], cwd=ROOT, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    core = Path(membolt._core.__file__)
    shutil.copyfile(core, target / "python" / "membolt" / core.name)
    return Membolt(f"{ref} (before)", sys.executable, {"PYTHONPATH": str(target / "python")})


# ----- report ------------------------------------------------------------------------------


def p50(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--baseline", metavar="REF", help="compare with this git revision")
    parser.add_argument("--show", action="store_true", help="print each hand-over block")
    args = parser.parse_args()

    import membolt

    if membolt._core.DEBUG_BUILD:
        print(
            "warning: a debug build of the core; run `maturin develop --release`", file=sys.stderr
        )
    with tempfile.TemporaryDirectory(prefix="membolt-resume-") as name:
        tmp = Path(name)
        membolts = [Membolt("this", sys.executable, {})]
        if args.baseline:
            membolts.append(baseline(args.baseline, tmp))
        rows = []
        for session in SESSIONS:
            for membolt in membolts:
                context, block, store = hand_over(membolt, session, tmp)
                held = [fact.name for fact in session.checklist if fact.holds(block)]
                missed = [fact.name for fact in session.checklist if fact.name not in held]
                cost = block.entry_bytes(store)
                rows.append((session, membolt, len(held), missed, cost, context))
                if args.show:
                    print(f"\n### {session.name}, {membolt.label}\n\n{block.text}\n")
        print(
            f"Hand-over checklists: the `<memory>` block of the next SessionStart "
            f"(budget 500 tokens = {BUDGET_BYTES:,} bytes of entry lines).\n"
        )
        print("| session | membolt | facts held | entry bytes | context chars | missed |")
        print("|---|---|---:|---:|---:|---|")
        for session, membolt, held_count, missed, cost, context in rows:
            print(
                f"| {session.name}: {session.about} | {membolt.label} | "
                f"{held_count}/{len(session.checklist)} | {cost:,} | "
                f"{len(context):,} | {'; '.join(missed) or '-'} |"
            )
        if not args.sizes:
            return
        timings = latencies(membolts, args.sizes, args.rounds, tmp)
        print(
            f"\nHook latency, p50 ms of {args.rounds} runs, a new process per run "
            f"({os.cpu_count()} cores).\n"
        )
        sizes = args.sizes
        header = " | ".join(f"{m.label} {s // 1000}k" for s in sizes for m in membolts)
        print(f"| event | {header} |")
        print("|---|" + "---:|" * (len(sizes) * len(membolts)))
        names = ["python -c pass", *latency_cases(tmp / "names")]
        for event in names:
            cells = " | ".join(
                f"{p50(timings[m.label, s, event]):.0f}" for s in sizes for m in membolts
            )
            print(f"| {event} | {cells} |")


if __name__ == "__main__":
    main()
