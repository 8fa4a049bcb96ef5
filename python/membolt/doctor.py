"""``membolt doctor``: a read-only integrity check of a store file.

:func:`inspect` reads every record and checks the invariants of §1 through
the file's own engine, and redb's page checksums on a private copy of the
file (crash recovery and journal replay happen there too), so the store and
its companion files are never modified.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from . import _core
from .store import DEFAULT_TIMEOUT


@dataclass(frozen=True)
class DoctorReport:
    """What :func:`inspect` found."""

    file_bytes: int
    entries: int
    #: Entries per type (an empty type counts as ``note``).
    by_type: dict[str, int]
    #: Damage or broken invariants (at most 20 listed; see ``problem_count``).
    problems: tuple[str, ...]
    problem_count: int
    #: Legal states worth knowing (a crashed writer recovered, dangling links).
    notes: tuple[str, ...]

    @property
    def healthy(self) -> bool:
        return self.problem_count == 0


def inspect(path: str | os.PathLike[str], timeout: float = DEFAULT_TIMEOUT) -> DoctorReport:
    """Checks the store file at ``path``, waiting up to ``timeout`` seconds
    for a process that holds it."""
    report = _core._inspect(path, timeout)
    return DoctorReport(
        file_bytes=report["file_bytes"],
        entries=report["entries"],
        by_type=dict(report["by_type"]),
        problems=tuple(report["problems"]),
        problem_count=report["problem_count"],
        notes=tuple(report["notes"]),
    )
