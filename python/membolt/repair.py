"""``membolt repair``: salvage a damaged store file into a new one.

:func:`salvage` copies every record that passes its checksum (the file's,
then the journal's records the file lacks) into a new store, with stamps and
references kept, and says what it could not save: damaged records, parts it
could not read, and acknowledged changes the journal cannot give back, with
the keys they rolled back. The damaged file and its companions are left
exactly as they were, so nothing is lost by trying.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from . import _core
from .store import DEFAULT_TIMEOUT


@dataclass(frozen=True)
class Salvage:
    """What :func:`salvage` wrote and what it could not save."""

    #: Entries written to the new store.
    saved: int
    #: Of those, the ones taken from the journal.
    from_journal: int
    #: Keys whose record failed its checksum.
    lost_keys: tuple[str, ...]
    #: Parts of the file or journal that could not be read at all.
    unreadable: tuple[str, ...]
    #: Acknowledged changes the journal cannot give back, described.
    lost_changes: tuple[str, ...] = ()
    #: Keys whose newest acknowledged change is among those lost: the new
    #: store has an older value for them, has them back after a delete, or
    #: lacks them.
    rolled_back: tuple[str, ...] = ()
    #: What was repaired without losing anything.
    notes: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Whether everything acknowledged that the file and journal held
        was saved (what ``doctor`` would count as lost, ``complete`` does)."""
        return not self.lost_keys and not self.unreadable and not self.lost_changes


def default_target(source: str | os.PathLike[str]) -> Path:
    """Where the repaired store goes by default: beside the damaged one,
    ``memory.redb`` -> ``memory.repaired.redb``."""
    path = Path(source)
    return path.with_name(f"{path.stem}.repaired{path.suffix}")


def salvage(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    timeout: float = DEFAULT_TIMEOUT,
) -> Salvage:
    """Salvages the store file ``source`` into a new store at ``target``
    (which must not exist yet), waiting up to ``timeout`` seconds for a
    process holding ``source``."""
    done = _core._salvage(source, target, timeout)
    return Salvage(
        saved=done["saved"],
        from_journal=done["from_journal"],
        lost_keys=tuple(done["lost_keys"]),
        unreadable=tuple(done["unreadable"]),
        lost_changes=tuple(done["lost_changes"]),
        rolled_back=tuple(done["rolled_back"]),
        notes=tuple(done["notes"]),
    )
