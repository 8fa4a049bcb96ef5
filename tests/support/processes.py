"""Child processes that hold a store, for the tests of waiting and busy stores."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: The worker script the multi-process tests run.
WORKER = str(Path(__file__).with_name("store_worker.py"))


def hold_store(path: Path | str, seconds: float) -> subprocess.Popen[str]:
    """A child process holding the store at ``path`` (see store_worker.py);
    returns once the child holds it."""
    holder = subprocess.Popen(
        [sys.executable, WORKER, "hold", str(path), str(seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    return holder


def stop(holder: subprocess.Popen[str]) -> None:
    holder.kill()
    holder.communicate(timeout=30)
