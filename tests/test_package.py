"""The package itself: every submodule reachable as an attribute of
``membolt`` after a plain ``import membolt``, although they load on first use;
and what a new process imports before its first save."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SUBMODULES = (
    "agent", "caps", "cli", "compaction", "demo", "doctor", "errors", "extract", "keys",
    "mcp", "prompt", "repair", "sanitize", "store", "tools", "transfer", "claude_code",
)  # fmt: skip


@pytest.mark.parametrize("name", SUBMODULES)
def test_a_submodule_is_an_attribute_after_import_membolt(name: str) -> None:
    script = (
        "import sys, types, membolt\n"
        f"module = getattr(membolt, {name!r})\n"
        "assert isinstance(module, types.ModuleType), module\n"
        f"assert sys.modules['membolt.{name}'] is module\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)


def test_classify_stays_the_function() -> None:
    script = "import membolt, membolt.classify\nassert callable(membolt.classify)\n"
    subprocess.run([sys.executable, "-c", script], check=True)


def test_a_first_save_imports_no_heavy_standard_module(tmp_path: Path) -> None:
    """A new process (a hook, a CLI call) pays for every import before its
    first store call: opening a store and saving must not pull in
    ``dataclasses`` (with ``inspect``, ``ast``, ``dis``, ~7 ms) nor, before a
    path is made, ``pathlib`` (with ``urllib.parse``, ~4 ms)."""
    script = (
        "import sys, membolt\n"
        "import membolt.store\n"
        "assert 'pathlib' not in sys.modules, 'pathlib at import'\n"
        "store = membolt.MemoryStore(sys.argv[1])\n"
        "store.save('goal:first', 'a first save')\n"
        "heavy = sorted({'dataclasses', 'inspect', 'ast'} & set(sys.modules))\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "m.redb")], check=True)
