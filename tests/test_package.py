"""The package itself: every submodule reachable as an attribute of
``membolt`` after a plain ``import membolt``, although they load on first use."""

from __future__ import annotations

import subprocess
import sys

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
