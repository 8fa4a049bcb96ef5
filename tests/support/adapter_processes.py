"""Several processes writing through the framework adapters (see
adapter_worker.py), for tests/test_integrations_*.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support.postgres_server import PostgresServer

WORKER = str(Path(__file__).with_name("adapter_worker.py"))


def worker_location(
    medium: str, store_path: Path, request: pytest.FixtureRequest
) -> tuple[str, str]:
    """(the store file or server URL, the project or "-") the workers share."""
    if medium == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        return server.url(), request.getfixturevalue("project")
    store_path.parent.mkdir(parents=True)
    return str(store_path), "-"


def run_workers(command: str, location: str, project: str, count: int, rounds: int) -> None:
    """``count`` workers running ``command`` at once; each must finish cleanly."""
    workers = [
        subprocess.Popen(
            [sys.executable, WORKER, command, location, project, f"w{n}", str(rounds)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(count)
    ]
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
        assert out.strip() == "done"
