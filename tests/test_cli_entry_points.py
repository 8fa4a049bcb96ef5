"""How the command is started and told where the store is: ``--version``,
``python -m membolt``, and ``--cwd`` naming a directory that is not there
(a typo in an MCP client's configuration must not open a new, empty store
and make the project's memory seem gone)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import membolt

pytestmark = pytest.mark.slow

COMMANDS = [
    ["list"],
    ["get", "k"],
    ["save", "k", "v"],
    ["delete", "k"],
    ["search", "q"],
    ["stats"],
    ["render"],
    ["query", "memory"],
    ["graph"],
    ["export"],
    ["import", "some.jsonl"],
    ["doctor"],
    ["demo"],
    ["mcp"],
]


def run(*args: str, module: str = "membolt.cli", home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env={"MEMBOLT_HOME": str(home), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_version(tmp_path: Path) -> None:
    for module in ("membolt.cli", "membolt"):
        done = run("--version", module=module, home=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (
            0,
            f"membolt {membolt.__version__}\n",
            "",
        )


def test_python_dash_m_membolt_is_the_command(tmp_path: Path) -> None:
    db = str(tmp_path / "m.redb")
    saved = run("--db", db, "save", "decision:db", "use redb", module="membolt", home=tmp_path)
    assert (saved.returncode, saved.stdout) == (0, 'saved "decision:db" [decision]\n')
    assert run("--db", db, "get", "decision:db", module="membolt", home=tmp_path).stdout == (
        "use redb\n"
    )
    usage = run(module="membolt", home=tmp_path)
    assert usage.returncode == 2
    assert usage.stderr.startswith("usage: membolt ")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("where", ["before", "after"])
def test_cwd_that_does_not_exist_is_refused(tmp_path: Path, command: list[str], where: str) -> None:
    home = tmp_path / "home"
    missing = tmp_path / "projetc"  # a typo of a project directory
    option = ["--cwd", str(missing)]
    args = [*option, *command] if where == "before" else [*command, *option]
    done = run(*args, home=home)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == f"membolt: error: --cwd {missing}: no such directory\n"
    assert not missing.exists()
    assert not home.exists()  # no store directory was made for it


def test_cwd_that_is_a_file_is_refused(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "notes.txt"
    not_a_directory.write_text("x")
    done = run("--cwd", str(not_a_directory), "list", home=tmp_path / "home")
    assert done.returncode == 1
    assert done.stderr == f"membolt: error: --cwd {not_a_directory}: is not a directory\n"


def test_cwd_that_exists_still_works(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    assert run("--cwd", str(project), "save", "k", "v", home=home).returncode == 0
    assert run("list", "--cwd", str(project), home=home).stdout == "k\n"
    store = membolt.MemoryStore.for_project(project, base_dir=home)
    assert store.keys() == ["k"]


def test_one_version_in_every_declaration() -> None:
    """The package, the crate and ``membolt.__version__`` name one release."""
    import re

    root = Path(__file__).resolve().parent.parent

    def declared(file: str) -> str:
        # The first `version = "..."` line: the [project] / [package] table's.
        match = re.search(r'^version = "([^"]+)"', (root / file).read_text(), re.MULTILINE)
        assert match, file
        return match[1]

    assert declared("pyproject.toml") == declared("Cargo.toml") == membolt.__version__
