"""The `membolt` command, run as a subprocess: every subcommand, its errors
and exit codes (0 success, 1 failure with one line on stderr, 2 usage)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from membolt import MemoryStore, cli

pytestmark = pytest.mark.slow


def membolt(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "membolt.cli", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
        check=False,
    )


def ok(*args: str) -> str:
    done = membolt(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def fails(*args: str, code: int = 1) -> str:
    done = membolt(*args)
    assert done.returncode == code, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    if code == 1:
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1
        assert lines[0].startswith("membolt: error: ")
    return done.stderr


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "cli" / "memory.redb"
    store = MemoryStore(path)
    store.save("prompt:build", "Add /users endpoint")
    store.save("tool:write_users", "wrote handlers/users.go")
    store.save("result:build", "compiles; tests pending")
    store.close()
    del store
    return str(path)


@pytest.mark.smoke
def test_save_get_delete_list(db: str) -> None:
    assert ok("--db", db, "save", "decision:db", "use redb") == 'saved "decision:db" [decision]\n'
    assert ok("get", "--db", db, "decision:db") == "use redb\n"
    assert ok("--db", db, "save", "k", "v", "--type", "fact") == 'saved "k" [fact]\n'
    assert ok("--db", db, "list").split() == [
        "decision:db", "k", "prompt:build", "result:build", "tool:write_users",
    ]  # fmt: skip
    assert ok("--db", db, "delete", "k") == 'deleted "k"\n'
    assert "missing" in fails("--db", db, "get", "missing")
    assert 'no memory entry "missing"' in fails("--db", db, "delete", "missing")


def test_search(db: str) -> None:
    assert ok("--db", db, "search", "BUILD") == (
        "Found 2 memory entries:\n"
        "- result:build: compiles; tests pending\n"
        "- prompt:build: Add /users endpoint\n"
    )
    assert ok("--db", db, "search", "zzz") == "No memory entries found.\n"


def test_cwd_selects_the_project_store(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    ok("--cwd", str(project), "save", "goal", "ship")
    assert ok("get", "goal", "--cwd", str(project)) == "ship\n"
    store = MemoryStore.for_project(cwd=project)
    assert store.get("goal") is not None


def test_stats(db: str) -> None:
    out = ok("--db", db, "stats")
    assert "entries: 3" in out
    assert "  prompt: 1" in out
    assert "  result: 1" in out
    assert "oldest:  prompt:build (" in out
    assert "newest:  result:build (" in out
    assert "size:" in out


def test_render(db: str) -> None:
    out = ok("--db", db, "render", "--now-ms", "99999999999999")
    assert out.startswith("<memory>\n")
    assert out.endswith("</memory>\n")
    assert "result:build [result]: compiles; tests pending  <- tool:write_users  <== RESUME" in out
    # A budget of 0 shows the resume point alone (§15.5).
    small = ok("--db", db, "render", "--max-tokens", "0", "--focus", "users")
    assert "result:build [result]" in small
    assert "prompt:build" not in small


@pytest.mark.smoke
def test_query(db: str) -> None:
    out = json.loads(ok("--db", db, "query", 'filter(memory, .type == "result")'))
    assert out["count"] == 1
    assert out["rows"][0]["key"] == "result:build"
    limited = json.loads(ok("--db", db, "query", "memory", "--limit", "1"))
    assert (limited["count"], len(limited["rows"]), limited["truncated"]) == (3, 1, True)
    assert "compile:" in fails("--db", db, "query", "filter((")
    assert "run:" in fails("--db", db, "query", "[1][3]")


def test_graph(db: str) -> None:
    assert ok("--db", db, "graph") == (
        "prompt:build [prompt]\n"
        "tool:write_users [tool_result]  <- prompt:build\n"
        "result:build [result]  <- tool:write_users\n"
    )
    dot = ok("--db", db, "graph", "result:build", "--format", "dot")
    assert dot.startswith("digraph memory {")
    assert '"tool:write_users" -> "result:build";' in dot
    mermaid = ok("--db", db, "graph", "--format", "mermaid")
    assert mermaid.startswith("flowchart TD\n")
    assert "n0 --> n1" in mermaid
    assert 'no memory entry "nope"' in fails("--db", db, "graph", "nope")
    fails("--db", db, "graph", "--format", "svg", code=2)


def test_export_import_round_trip(db: str, tmp_path: Path) -> None:
    exported = ok("--db", db, "export")
    lines = exported.splitlines()
    assert json.loads(lines[0]) == {"format": "membolt-export", "schema": 1}
    assert len(lines) == 4
    target = str(tmp_path / "copy.redb")
    file = tmp_path / "backup.jsonl"
    assert membolt("--db", db, "export", "-o", str(file)).returncode == 0
    assert ok("--db", target, "import", str(file)) == "imported 3 entries (3 new or changed)\n"
    assert ok("--db", target, "import", str(file)) == "imported 3 entries (0 new or changed)\n"
    assert ok("--db", target, "export") == exported


def test_import_errors_write_nothing(tmp_path: Path) -> None:
    target = str(tmp_path / "t.redb")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"key": "a", "value": "x", "createdAt": 1}\n{"key": "b", "value": 5, "createdAt": 1}\n'
    )
    assert "line 2: value must be a string" in fails("--db", target, "import", str(bad))
    assert MemoryStore(target).keys() == []
    assert "No such file" in fails("--db", target, "import", str(tmp_path / "missing.jsonl"))


def test_doctor(db: str, tmp_path: Path) -> None:
    out = ok("--db", db, "doctor")
    assert "entries: 3" in out
    assert "ok: no problems found" in out
    junk = tmp_path / "junk.redb"
    junk.write_text("not a database at all\n" * 50)
    assert "not a readable membolt store" in fails("--db", str(junk), "doctor")
    assert "no store at" in fails("--db", str(tmp_path / "none.redb"), "doctor")


def test_errors_are_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.redb"
    junk.write_text("garbage " * 100)
    for command in (["list"], ["get", "k"], ["save", "k", "v"], ["render"], ["stats"]):
        assert str(junk) in fails("--db", str(junk), *command)
    fails("--db", str(tmp_path / "x.redb"), "save", "", "v")


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    fails(code=2)
    fails("frobnicate", code=2)
    fails("--db", "a", "--cwd", "b", "list", code=2)
    fails("get", code=2)
    # --db and --cwd at different levels, or empty, are mistakes too.
    assert "give one" in fails("--db", "a", "list", "--cwd", "b", code=2)
    assert "--db needs a file path" in fails("--db", "", "list", code=2)
    fails("--db", str(tmp_path / "s.redb"), "--timeout", "x", "list", code=2)


def test_numbers_out_of_range(db: str) -> None:
    # The core checks every timeout; budgets, clocks and limits past 64 bits clamp.
    for timeout in ("1e300", "nan", "-1"):
        message = fails("--db", db, "--timeout", timeout, "save", "k", "v")
        assert "timeout must be a number of seconds" in message
    huge = "9" * 20
    assert "<== RESUME" in ok("--db", db, "render", "--max-tokens", huge, "--now-ms", huge)
    assert json.loads(ok("--db", db, "query", "memory", "--limit", huge))["count"] == 3


def test_export_never_destroys_a_file(db: str, tmp_path: Path) -> None:
    store_bytes = Path(db).read_bytes()
    assert "is the store itself" in fails("--db", db, "export", "-o", db)
    assert Path(db).read_bytes() == store_bytes
    for companion in (f"{db}.sync", f"{db}.journal"):  # they are part of the store
        before = Path(companion).read_bytes()
        assert "is the store itself" in fails("--db", db, "export", "-o", companion)
        assert Path(companion).read_bytes() == before
    # A failed export leaves the existing backup as it was.
    backup = tmp_path / "backup.jsonl"
    backup.write_text('{"precious": 1}\n')
    junk = tmp_path / "junk.redb"
    junk.write_text("garbage " * 100)
    fails("--db", str(junk), "export", "-o", str(backup))
    assert backup.read_text() == '{"precious": 1}\n'
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".backup")] == []
    # A successful one replaces it, private to the user like the store.
    assert membolt("--db", db, "export", "-o", str(backup)).returncode == 0
    assert len(backup.read_text().splitlines()) == 4
    assert backup.stat().st_mode & 0o077 == 0


def test_failed_export_to_stdout_prints_nothing(tmp_path: Path) -> None:
    junk = tmp_path / "junk.redb"
    junk.write_text("garbage " * 100)
    done = membolt("--db", str(junk), "export")
    assert done.returncode == 1
    assert done.stdout == ""


def test_output_problems(db: str) -> None:
    def listing(redirect: str) -> subprocess.CompletedProcess[str]:
        command = f"{sys.executable} -m membolt.cli --db {shlex.quote(db)} list {redirect}"
        return subprocess.run(
            command, shell=True, capture_output=True, text=True, check=False, timeout=120
        )

    # A closed stdout is one error line; a reader that stops early is no error.
    closed = listing(">&-")
    assert closed.returncode == 1
    assert closed.stderr == "membolt: error: standard output is closed\n"
    bulk = MemoryStore(db)
    bulk.save_many([(f"bulk:{i:05d}", "x") for i in range(3000)], caps=False)
    bulk.close()
    piped = listing("| head -1")
    assert piped.stdout == "bulk:00000\n"
    assert piped.stderr == ""


def test_reading_a_missing_store_file_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "memory.redb"
    for command in (
        ["list"],
        ["get", "k"],
        ["delete", "k"],
        ["search", "x"],
        ["stats"],
        ["render"],
        ["export"],
    ):
        assert f"no store at {missing}" in fails("--db", str(missing), *command)
    assert not (tmp_path / "typo").exists()  # nothing created on the way
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for command in (["list"], ["doctor"]):
        assert "is not a regular file" in fails("--db", str(fifo), *command)


def test_blank_search_query_is_one_error_line(db: str) -> None:
    assert "the search query is empty" in fails("--db", db, "search", "   ")


def test_import_errors_name_the_line(db: str, tmp_path: Path) -> None:
    before = ok("--db", db, "export")
    cases = {
        b'{"key": "k", "value": "\xa9", "createdAt": 1}\n': "line 1: not UTF-8",
        b"[" * 100_000 + b"\n": "line 1: not valid JSON",
        b'{"key": "y", "value": "v", "createdAt": 1, "updatedAt": 9223372036854775807}\n': (
            "line 1: updatedAt"
        ),
    }
    for content, message in cases.items():
        file = tmp_path / "in.jsonl"
        file.write_bytes(content)
        assert message in fails("--db", db, "import", str(file))
    assert ok("--db", db, "export") == before


def test_stats_shows_any_stored_stamp(tmp_path: Path) -> None:
    # A stamp outside what a calendar shows (an old version could import one).
    db = str(tmp_path / "s.redb")
    line = '{"key": "far", "value": "v", "createdAt": 1, "updatedAt": 253402300799999}'
    (tmp_path / "in.jsonl").write_text(line + "\n")
    ok("--db", db, "import", str(tmp_path / "in.jsonl"))
    assert "newest:  far (9999-12-31T23:59:59Z)" in ok("--db", db, "stats")
    assert cli._iso(2**62) == f"{2**62} ms since 1970"


def test_demo() -> None:
    out = ok("demo")
    assert "membolt demo" in out
    assert "<memory>" in out
    assert "Found" in out
    assert '"count"' in out


@pytest.mark.smoke
def test_a_panic_of_the_engine_is_one_error_line(tmp_path: Path) -> None:
    # Flipping the first byte (the page type) of B-tree pages makes redb
    # panic while reading them; the panic is caught and reported once, not
    # also printed by Rust.
    path = tmp_path / "s.redb"
    store = MemoryStore(path)
    store.save_many([(f"k{i}", "hello " * 20) for i in range(500)], caps=False)
    store.close()
    del store
    data = bytearray(path.read_bytes())
    for page in range(4096, len(data), 4096):
        if data[page] in (1, 2):  # a leaf or a branch: make it neither
            data[page] ^= 0x01
    path.write_bytes(bytes(data))
    for command in (["list"], ["doctor"]):
        message = fails("--db", str(path), *command)
        assert "panicked" not in message
        assert "not a readable membolt store" in message
