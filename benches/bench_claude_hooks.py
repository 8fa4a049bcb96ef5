"""What a Claude Code hook costs: each event of ``membolt hook claude-code``
run in a new process, on a 10k-entry project store, next to a bare
interpreter (§13 target: p50 <= 150 ms from a new process).

    maturin develop --release
    python benches/bench_claude_hooks.py                  # 10k entries, 21 rounds
    python benches/bench_claude_hooks.py --size 100000 --rounds 11
    python benches/bench_claude_hooks.py --python /other/venv/bin/python   # A/B

Each round runs every case once, in turn, so all cases see the same machine
load; compare the figures of one run only. A case is the command that
``membolt install claude-code`` writes for that interpreter (the
environment's ``membolt`` script: ``.../bin/membolt hook claude-code``)
with one event's JSON on stdin, in the project directory;
the baselines are ``python -c pass`` (the floor: the interpreter alone) and
``python -c "import membolt"``. "hook's own" is a case's p50 minus the
floor's. The store is the agent-shaped store of ``benches/bench_render.py``
(turns of auto-linked extraction batches), copied where the project's store
lives, so the hook finds it through ``cwd`` as it would under Claude Code.
Every run must exit 0 with an empty stderr, or the benchmark stops: it
would be timing a failure.

The child processes may write and use compiled bytecode (``__pycache__``)
even where ``PYTHONDONTWRITEBYTECODE`` is set, as an installed membolt has
it (pip compiles it at install time); ``--no-bytecode`` times the other
case, where every process compiles membolt's modules from source.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

RESPONSE = """I looked at the failing handler.
Fixed the nil check in the users handler before the migration step.
Edited src/api/handler.go and src/api/middleware.go
STATUS: tests green locally
"""
SUMMARY = """## Goal
Make the users endpoint pass its integration tests.
## Progress
Handler fixed, middleware updated; CI pending.
## Key Decisions
- **store**: keep redb for the session store
- **retries**: three retries with backoff
## Critical Context
- ci: the integration job needs the staging database
"""


def payloads(project: str, focus: str) -> dict[str, dict[str, object]]:
    """The events of one round, in order. Stop saves the turn of the prompt
    before it: the matching one, so that the other prompt's words stay out
    of the store (the turn record holds the prompt)."""
    common = {"session_id": "bench-session", "cwd": project, "transcript_path": "/dev/null"}
    bash_response = {"stdout": "12 passed in 0.41s\n", "stderr": "", "interrupted": False}
    return {
        "SessionStart": {**common, "hook_event_name": "SessionStart", "source": "startup"},
        "UserPromptSubmit (no match)": {
            **common,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Please zqxj the vwkp",
        },
        "UserPromptSubmit (matches)": {
            **common,
            "hook_event_name": "UserPromptSubmit",
            "prompt": focus,
        },
        "PostToolUse Bash (captured)": {
            **common,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q"},
            "tool_response": {**bash_response, "isImage": False},
        },
        "PostToolUse Read (not captured)": {
            **common,
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": f"{project}/README.md"},
            "tool_response": {"type": "text", "file": {"filePath": "README.md", "content": "x"}},
        },
        "PostCompact": {
            **common,
            "hook_event_name": "PostCompact",
            "trigger": "auto",
            "compact_summary": SUMMARY,
        },
        "Stop": {
            **common,
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": RESPONSE,
        },
    }


def time_run(argv: list[str], stdin: bytes, cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one run, in ms."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, cwd=cwd, env=env, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or done.stderr:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed * 1e3, cpu * 1e3


def installed_command(python: str) -> list[str]:
    """What ``membolt install claude-code`` run by ``python`` writes."""
    ask = (
        "import json\n"
        "from membolt.claude_code.install import membolt_argv\n"
        "print(json.dumps(membolt_argv()))"
    )
    done = subprocess.run([python, "-c", ask], capture_output=True, text=True, check=True)
    command: list[str] = json.loads(done.stdout)
    return command


def agent_store(size: int) -> tuple[Path, str]:
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent / "tests"))
    import bench_render

    return bench_render.store_path(size), bench_render.focus_for(size)


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--python", action="append", help="interpreter(s) to compare")
    parser.add_argument("--no-bytecode", action="store_true", help="compile from source each run")
    args = parser.parse_args()
    pythons = args.python or [sys.executable]

    import membolt
    from membolt.store import encode_cwd

    if membolt._core.DEBUG_BUILD:
        print(
            "warning: a debug build of the core; run `maturin develop --release`", file=sys.stderr
        )
    source, focus = agent_store(args.size)
    print(f"load average before: {loadavg()}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="membolt-hooks-") as tmp:
        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        setups = []
        for n, python in enumerate(pythons):
            project = Path(tmp) / f"project-{n}"
            project.mkdir()
            home = Path(tmp) / f"home-{n}"
            store = home / encode_cwd(str(project)) / "memory.redb"
            store.parent.mkdir(parents=True, mode=0o700)
            shutil.copyfile(source, store)
            env = {**os.environ, "MEMBOLT_HOME": str(home)}
            if args.no_bytecode:
                env["PYTHONDONTWRITEBYTECODE"] = "1"
            else:
                env.pop("PYTHONDONTWRITEBYTECODE", None)
            cases = {
                "python -c pass": ([python, "-c", "pass"], b""),
                "python -c 'import membolt'": ([python, "-c", "import membolt"], b""),
            }
            hook = [*installed_command(python), "hook", "claude-code"]
            for name, payload in payloads(str(project), focus).items():
                cases[name] = (hook, json.dumps(payload).encode())
            setups.append((python, str(project), env, cases))
            # The first run primes the store's sidecars and the page cache.
            time_run(hook, cases["SessionStart"][1], str(project), env)
        for _ in range(args.rounds):
            for python, project, env, cases in setups:
                for name, (argv, stdin) in cases.items():
                    results.setdefault((python, name), []).append(
                        time_run(argv, stdin, project, env)
                    )
        print(f"{args.size:,}-entry store, {args.rounds} rounds, new process per run")
        print(
            "| python | case | wall p50 ms | wall p95 ms | × python -c pass | hook's own ms "
            "| CPU p50 ms |"
        )
        print("|---|---|---:|---:|---:|---:|---:|")
        for python, _, _, cases in setups:
            floor = statistics.median(wall for wall, _ in results[python, "python -c pass"])
            for name in cases:
                times = sorted(wall for wall, _ in results[python, name])
                cpu = statistics.median(cpu for _, cpu in results[python, name])
                p50 = statistics.median(times)
                p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
                own = "" if name == "python -c pass" else f"{p50 - floor:.0f}"
                print(
                    f"| {python} | {name} | {p50:.0f} | {p95:.0f} | {p50 / floor:.1f}× | {own} "
                    f"| {cpu:.0f} |"
                )
    print(f"\nload average after: {loadavg()}; {os.cpu_count()} cores", file=sys.stderr)


if __name__ == "__main__":
    main()
