"""Damage is found, never served (docs/behaviour.md §14).

The campaign: copies of a closed store and of a crashed one (a writer
SIGKILLed inside ``hold()``, its last changes only in the journal) get bits
flipped and files cut at seeded random places; one fresh process then runs
every read-only call and command on each copy. Every trial must end in the
values that were saved or in a ``MemboltError``, never a wrong value, a
panic or a hang; ``membolt doctor`` must exit 1 whenever a read failed or
lost something; and no file may change by a byte. Then ``membolt repair``
runs on each copy: it exits 1 exactly when the store it made differs from
what was saved or it could not tell (never when doctor found nothing), and
names every key whose saved value it could not give back.

``MEMBOLT_DAMAGE_TRIALS`` (default 40 per store) and ``MEMBOLT_DAMAGE_SEED``
run a longer or another campaign; the counts are printed (``pytest -s``).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import membolt
from membolt import MemoryStore

pytestmark = [pytest.mark.slow, pytest.mark.redb_only]

READER = str(Path(__file__).parent / "support" / "damage_reader.py")
TRIALS = int(os.environ.get("MEMBOLT_DAMAGE_TRIALS", "40"))
SEED = int(os.environ.get("MEMBOLT_DAMAGE_SEED", "1214"))
BLOCK = 4096  # a journal record takes whole blocks of this size

# Saves and overwrites, then (inside one lease) more saves, overwrites and a
# delete, then SIGKILL: the lease's changes exist only in the journal.
CRASHING_WRITER = """
import os, signal, sys
import membolt
from membolt import MemoryStore
store = membolt.MemoryStore(sys.argv[1])
with store.hold():
    for i in range(12):
        store.save(f"late:{i}", f"value late {i} " * (i + 1))
    store.save("early:3", "value early 3, overwritten in the lease")
    store.delete("early:5")
    store.save_many([("batch:a", "value a"), ("batch:b", "value b")], caps=False)
    print("saved", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def build_closed(path: Path) -> None:
    store = membolt.MemoryStore(path)
    store.save("goal", "value of the goal: keep every record honest", type="goal")
    for i in range(60):
        # A few long values, so that some records span pages.
        store.save(f"early:{i}", f"value early {i} " * (1 + (i % 7) * 40), type="progress")
    store.close()
    membolt._core._release_all()


def build_crashed(path: Path) -> None:
    build_closed(path)
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_WRITER, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.strip() == "saved"


def files_of(directory: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.iterdir())
        if p.is_file()
    }


def read_back(trials: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs damage_reader.py over ``trials`` in one new process."""
    done = subprocess.run(
        [sys.executable, READER, "/dev/stdin"],
        input=json.dumps(trials),
        capture_output=True,
        text=True,
        timeout=600,  # a hang fails the test
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(results) == len(trials)
    return results


@dataclass
class Pristine:
    """A store before damage: its files, and every entry as saved."""

    directory: Path
    entries: dict[str, dict[str, Any]]
    journal_spans: list[tuple[int, int]]

    @property
    def store_name(self) -> str:
        return "memory.redb"


def pristine(tmp_path: Path, kind: str) -> Pristine:
    directory = tmp_path / f"pristine-{kind}"
    directory.mkdir()
    path = directory / "memory.redb"
    (build_closed if kind == "closed" else build_crashed)(path)
    # The reference is read by a fresh process, as the trials are.
    [reference] = read_back([{"path": str(path), "keys": []}])
    assert reference["errors"] == []
    assert reference["escaped"] == []
    assert reference["doctor"] == 0
    entries = {e["key"]: e for e in reference["answers"]["entries"]}
    if kind == "crashed":  # what the killed writer was told
        assert entries["early:3"]["value"] == "value early 3, overwritten in the lease"
        assert "early:5" not in entries
        assert entries["batch:b"]["value"] == "value b"
    assert files_of(directory) == files_of(directory)  # stable to read
    journal = directory / "memory.redb.journal"
    data = journal.read_bytes() if journal.exists() else b""
    spans = []  # (offset, length) of the bytes written in each block
    for start in range(0, len(data), BLOCK):
        length = len(data[start : start + BLOCK].rstrip(b"\0"))
        if length:
            spans.append((start, length))
    return Pristine(directory, entries, journal_spans=spans)


def damage(rng: random.Random, source: Pristine, target: Path) -> str:
    """Copies ``source`` to ``target`` with one kind of damage; says which."""
    shutil.copytree(source.directory, target)
    store = target / source.store_name
    journal = target / (source.store_name + ".journal")
    kinds = ["flip store", "flip value", "cut store"]
    if journal.exists():
        kinds += ["flip journal", "cut journal"]
    kind = rng.choice(kinds)
    victim = journal if "journal" in kind else store
    data = bytearray(victim.read_bytes())
    if kind.startswith("cut"):
        del data[rng.randrange(len(data)) :]
    elif kind == "flip value":
        # A bit inside the bytes of one stored value (in every copy of
        # them), where a mistake would show as a wrong value.
        entry = rng.choice(list(source.entries.values()))
        needle = entry["value"].encode()[:40]
        at = data.find(needle)
        while at >= 0:
            data[at + rng.randrange(len(needle))] ^= 1 << rng.randrange(8)
            at = data.find(needle, at + 1)
    elif victim is journal and source.journal_spans and rng.random() < 0.8:
        # Mostly inside the records: most of a journal is zeros.
        for _ in range(rng.randint(1, 4)):
            start, length = rng.choice(source.journal_spans)
            data[start + rng.randrange(length)] ^= 1 << rng.randrange(8)
    else:
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    victim.write_bytes(bytes(data))
    return kind


@dataclass
class Outcome:
    """How one trial went, judged against what was saved."""

    kind: str
    wrong: list[str] = field(default_factory=list)  # a value that was not saved
    lost: list[str] = field(default_factory=list)  # a saved key absent, no error
    errors: int = 0
    doctor: int | None = None

    @property
    def noticed(self) -> bool:
        return self.errors > 0 or bool(self.lost)


def judge(kind: str, expected: dict[str, dict[str, Any]], result: dict[str, Any]) -> Outcome:
    outcome = Outcome(kind, errors=len(result["errors"]), doctor=result["doctor"])
    answers = result["answers"]

    def compare(call: str, found: dict[str, Any]) -> None:
        saved = expected.get(found["key"])
        if saved != found:
            outcome.wrong.append(f"{call} {found['key']!r}: {found} (saved: {saved})")

    for key, found in answers.get("get", {}).items():
        if found is None:
            outcome.lost.append(key)
        else:
            compare("get", found)
    for call in ("entries", "search", "export"):
        listed = answers.get(call)
        if listed is None:
            continue
        for found in listed:
            compare(call, found)
        if call == "entries":
            outcome.lost += sorted(set(expected) - {e["key"] for e in listed})
    return outcome


#: What repair says when it cannot tell which keys it lost: a statement
#: about every key.
UNTOLD = (
    "failed part way",
    "read one by one",
    "cannot be matched",
    "cannot be told",
)
DAMAGED_RANGE = re.compile(
    r'records between (?:the start|"(?P<low>[^"]*)") and (?:the end|"(?P<high>[^"]*)") '
    r"lie in damaged pages"
)


@dataclass
class Repaired:
    """How ``membolt repair`` did on one trial."""

    status: int
    doctor: int | None
    # Keys whose value in the new store is not the saved one (absent, older,
    # or back after a delete).
    differing: list[str]
    # Of those, the ones repair did not name.
    unnamed: list[str]


def flipped(key: str, name: str) -> bool:
    """Whether ``name`` is ``key`` with a few bits flipped (1 to 4 bytes)."""
    a, b = key.encode(), name.encode(errors="surrogatepass")
    return len(a) == len(b) and 0 < sum(x != y for x, y in zip(a, b, strict=True)) <= 4


def judge_repair(expected: dict[str, dict[str, Any]], result: dict[str, Any]) -> Repaired:
    repair = result["repair"]
    output: str = repair["output"]
    made = {e["key"]: e for e in repair["entries"] or []}
    differing = sorted(k for k in set(expected) | set(made) if expected.get(k) != made.get(k))
    named = {
        line.split(":", 1)[1].strip()
        for line in output.splitlines()
        if line.startswith(("lost:", "rolled back:"))
    }
    ranges = [(m["low"], m["high"]) for m in DAMAGED_RANGE.finditer(output)]

    def told(key: str) -> bool:
        if key in named or any(phrase in output for phrase in UNTOLD):
            return True
        if any(flipped(key, name) for name in named):
            return True  # the record's key is what was damaged: named as read
        return any(
            (low is None or low < key) and (high is None or key < high) for low, high in ranges
        )

    return Repaired(
        status=repair["status"],
        doctor=result["doctor"],
        differing=differing,
        unnamed=[key for key in differing if not told(key)],
    )


def campaign(tmp_path: Path, kind: str) -> list[Outcome]:
    source = pristine(tmp_path, kind)
    rng = random.Random(f"{SEED}-{kind}")
    trials: list[dict[str, Any]] = []
    kinds: list[str] = []
    before: list[dict[str, str]] = []
    for number in range(TRIALS):
        target = tmp_path / "trials" / f"{kind}-{number}"
        target.parent.mkdir(exist_ok=True)
        kinds.append(damage(rng, source, target))
        before.append(files_of(target))
        trials.append(
            {
                "path": str(target / source.store_name),
                "keys": sorted(source.entries),
                "repair_to": str(tmp_path / "repaired" / f"{kind}-{number}.redb"),
            }
        )
    (tmp_path / "repaired").mkdir(exist_ok=True)
    results = read_back(trials)
    outcomes = []
    repairs: Counter[str] = Counter()
    for spec, what, files, result in zip(trials, kinds, before, results, strict=True):
        name = f"{kind} trial {spec['path']} ({what})"
        assert result["escaped"] == [], f"{name}: {result['escaped']}"
        outcome = judge(what, source.entries, result)
        assert outcome.wrong == [], f"{name}: {outcome.wrong[:3]}"
        if outcome.noticed:
            assert outcome.doctor == 1, f"{name}: doctor said {outcome.doctor}; {result['errors']}"
        assert files_of(Path(spec["path"]).parent) == files, f"{name}: a file changed"
        outcomes.append(outcome)
        repaired = judge_repair(source.entries, result)
        says = f"{name}: repair exited {repaired.status}, doctor {repaired.doctor}"
        assert repaired.unnamed == [], f"{says}; not named: {repaired.unnamed}"
        if repaired.differing:
            assert repaired.status == 1, f"{says} with {repaired.differing} not saved"
        if repaired.doctor == 0:
            assert repaired.status == 0, f"{says}: {result['repair']['output']}"
        if repaired.status == 1:
            assert repaired.doctor == 1, says
        repairs[
            f"exit {repaired.status}, "
            + ("complete" if not repaired.differing else "keys rolled back or lost")
        ] += 1
    counts = Counter(
        (o.kind, "error" if o.errors else "lost" if o.lost else "intact") for o in outcomes
    )
    print(f"\n{kind} store, {TRIALS} trials, seed {SEED}: " + json.dumps(sorted(counts.items())))
    print(f"{kind} store, repair: " + json.dumps(sorted(repairs.items())))
    return outcomes


@pytest.mark.parametrize("kind", ["closed", "crashed"])
def test_a_damaged_store_never_serves_a_wrong_value(tmp_path: Path, kind: str) -> None:
    outcomes = campaign(tmp_path, kind)
    # The campaign must have reached damage, not only unused bytes.
    assert sum(o.errors > 0 for o in outcomes) >= TRIALS // 5
    # A read that lost a saved key without an error is not allowed either.
    assert [o for o in outcomes if o.lost and not o.errors] == []


# ----- membolt repair --------------------------------------------------------


def membolt_command(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "membolt", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def value_of(store: MemoryStore, key: str) -> str | None:
    entry = store.get(key)
    return None if entry is None else entry.value


def flip_every_copy(path: Path, needle: bytes) -> None:
    """Flips one bit inside every copy of ``needle`` in the file."""
    data = bytearray(path.read_bytes())
    at = data.find(needle)
    assert at >= 0, needle
    while at >= 0:
        data[at + len(needle) // 2] ^= 0x04
        at = data.find(needle, at + 1)
    path.write_bytes(bytes(data))


def test_repair_salvages_every_record_that_passes_its_checksum(tmp_path: Path) -> None:
    source = pristine(tmp_path, "crashed")
    path = source.directory / source.store_name
    # One value damaged in the file, and one journal record damaged in the
    # middle of the killed writer's lease: the records after it are stranded
    # (no replay reaches them) but valid, so repair keeps them.
    flip_every_copy(path, b"value early 17 value early 17")
    flip_every_copy(path.with_name(path.name + ".journal"), b"value late 4 value late 4")
    before = files_of(source.directory)
    target = tmp_path / "repaired.redb"
    done = membolt_command("repair", "--db", path, "-o", target)
    assert done.returncode == 1, done.stderr  # something could not be saved
    assert "lost:    early:17" in done.stdout
    assert "could not be saved" in done.stderr
    assert files_of(source.directory) == before  # the damaged store as it was
    saved = {e.key: e.to_dict() for e in MemoryStore(target).entries()}
    expected = {k: v for k, v in source.entries.items() if k not in ("early:17", "late:4")}
    assert saved == expected  # stamps and references included
    assert membolt_command("doctor", "--db", target).returncode == 0
    # The new file is refused as a target the second time: nothing is overwritten.
    again = membolt_command("repair", "--db", path, "-o", target)
    assert again.returncode == 1
    assert "exists" in again.stderr


def test_repair_of_an_intact_store_saves_everything_beside_it(tmp_path: Path) -> None:
    source = pristine(tmp_path, "crashed")
    path = source.directory / source.store_name
    before = files_of(source.directory)
    done = membolt_command("repair", "--db", path)
    assert done.returncode == 0, done.stderr
    target = path.with_name("memory.repaired.redb")
    assert f"repaired into {target}" in done.stdout
    assert "lost:" not in done.stdout
    assert {e.key: e.to_dict() for e in MemoryStore(target).entries()} == source.entries
    membolt._core._release_all()
    assert {k: v for k, v in files_of(source.directory).items() if "repaired" not in k} == before


# Ten committed saves, then inside one lease 22 acknowledged changes (saves,
# overwrites of committed keys and of the lease's own, a delete), then
# SIGKILL: the 22 exist only in the journal.
KILLED_WITH_22 = """
import os, signal, sys
import membolt
store = membolt.MemoryStore(sys.argv[1])
for i in range(10):
    store.save(f"base:{i}", f"committed value {i}")
store.close()
membolt._core._release_all()
store = membolt.MemoryStore(sys.argv[1])
with store.hold():
    for i in range(18):
        store.save(f"late:{i}", f"late value {i} " * 40)
    store.save("base:1", "overwritten in the lease")
    store.delete("base:2")
    store.save("base:3", "overwritten in the lease")
    store.save("late:0", "overwritten again")
    print("saved", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def acknowledged_by_the_killed_writer() -> dict[str, str]:
    values = {f"base:{i}": f"committed value {i}" for i in range(10)}
    values.update({f"late:{i}": f"late value {i} " * 40 for i in range(18)})
    values.update({"base:1": "overwritten in the lease", "base:3": "overwritten in the lease"})
    values["late:0"] = "overwritten again"
    del values["base:2"]
    return values


def repaired_values(target: Path) -> dict[str, str]:
    store = MemoryStore(target)
    values = {e.key: e.value for e in store.entries()}
    store.close()
    membolt._core._release_all()
    return values


def named_by(output: str) -> set[str]:
    return {
        line.split(":", 1)[1].strip()
        for line in output.splitlines()
        if line.startswith(("lost:", "rolled back:"))
    }


def test_repair_says_so_and_names_the_keys_when_acknowledged_changes_are_cut_away(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store" / "memory.redb"
    path.parent.mkdir()
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_WITH_22, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    journal = path.with_name(path.name + ".journal")
    journal.write_bytes(journal.read_bytes()[: 8 << 10])  # two records survive
    doctor = membolt_command("doctor", "--db", path)
    assert doctor.returncode == 1
    target = tmp_path / "repaired.redb"
    done = membolt_command("repair", "--db", path, "-o", target)
    assert done.returncode == 1, done.stdout
    assert "acknowledged" in done.stdout
    expected = acknowledged_by_the_killed_writer()
    got = repaired_values(target)
    differing = {k for k in set(expected) | set(got) if expected.get(k) != got.get(k)}
    assert len(differing) >= 18  # 20 changes are lost: older values, base:2 back
    assert "base:2" in got  # brought back: the delete was lost
    assert differing <= named_by(done.stdout), done.stdout


def test_repair_raises_no_alarm_for_journal_records_that_held_nothing_acknowledged(
    tmp_path: Path,
) -> None:
    # A closed store: every journal record is in the file already. One of
    # them damaged costs nothing, and neither doctor nor repair say otherwise.
    source = pristine(tmp_path, "closed")
    path = source.directory / source.store_name
    journal = path.with_name(path.name + ".journal")
    data = bytearray(journal.read_bytes())
    start, length = source.journal_spans[len(source.journal_spans) // 2]
    data[start + length // 2] ^= 0x20
    journal.write_bytes(bytes(data))
    assert membolt_command("doctor", "--db", path).returncode == 0
    target = tmp_path / "repaired.redb"
    done = membolt_command("repair", "--db", path, "-o", target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "lost:" not in done.stdout
    saved = {e.key: e.to_dict() for e in MemoryStore(target).entries()}
    assert saved == source.entries


def flip_until(path: Path, symptom: str) -> Path:
    """Flips one bit, trying page after page from the end, until opening
    the store fails with ``symptom``; returns the damaged copy."""
    data = path.read_bytes()
    trial = path.parent.parent / f"{path.parent.name}-{symptom.split(maxsplit=1)[0]}"
    for page in range(len(data) - BLOCK, BLOCK - 1, -BLOCK):
        for inner in (*range(0, 64, 8), 512, 1024):
            shutil.rmtree(trial, ignore_errors=True)
            shutil.copytree(path.parent, trial)
            damaged = bytearray(data)
            damaged[page + inner] ^= 0x10
            (trial / path.name).write_bytes(bytes(damaged))
            try:
                MemoryStore(trial / path.name).keys()
            except membolt.CorruptStoreError as error:
                if symptom in str(error):
                    return trial / path.name
            finally:
                membolt._core._release_all()
    raise AssertionError(f"no bit gives {symptom!r}")


@pytest.mark.parametrize("kind", ["closed", "crashed"])
def test_repair_reads_a_file_whose_allocator_state_is_damaged(tmp_path: Path, kind: str) -> None:
    source = pristine(tmp_path, kind)
    damaged = flip_until(source.directory / source.store_name, "Malformed allocator state")
    before = files_of(damaged.parent)
    target = tmp_path / "repaired.redb"
    done = membolt_command("repair", "--db", damaged, "-o", target)
    # Every record is copied. Whether repair can vouch for that depends on
    # what redb's recovery falls back to: a commit the journal has caught
    # up with since (exit 0, with a note), or one it cannot tell about.
    assert {e.key: e.to_dict() for e in MemoryStore(target).entries()} == source.entries
    if done.returncode == 0:
        assert "note:" in done.stdout
    else:
        assert "read one by one" in done.stdout
    assert files_of(damaged.parent) == before


@pytest.mark.parametrize("kind", ["closed", "crashed"])
def test_repair_reads_the_pages_of_a_file_redb_cannot_open(tmp_path: Path, kind: str) -> None:
    source = pristine(tmp_path, kind)
    path = source.directory / source.store_name
    data = bytearray(path.read_bytes())
    data[:BLOCK] = bytes(BLOCK)  # redb's header, both commit slots with it
    path.write_bytes(bytes(data))
    with pytest.raises(membolt.CorruptStoreError):
        MemoryStore(path).keys()
    membolt._core._release_all()
    target = tmp_path / "repaired.redb"
    done = membolt_command("repair", "--db", path, "-o", target)
    assert done.returncode == 1  # which keys exist is no longer certain
    assert "read one by one" in done.stdout
    # Every record passed its checksum, the killed writer's delete included.
    assert {e.key: e.to_dict() for e in MemoryStore(target).entries()} == source.entries


# ----- writes into damage, old schemas ---------------------------------------


def test_a_damaged_store_refuses_every_write_and_stays_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A process that reads the file: one that maps an intact image (§1.4)
    # reads no record until it changes, and serves the image's copy.
    monkeypatch.setenv("MEMBOLT_IMAGE", "off")
    source = pristine(tmp_path, "closed")
    path = source.directory / source.store_name
    flip_every_copy(path, b"value early 24 value early 24")
    before = files_of(source.directory)
    store = MemoryStore(path)
    for write in (
        lambda: store.save("new", "value"),
        lambda: store.save_many([("a", "1"), ("b", "2")], caps=False),
        lambda: store.delete("early:1"),
        lambda: store.link("early:2", "goal"),
    ):
        with pytest.raises(membolt.CorruptStoreError, match=r"memory\.redb"):
            write()
    with pytest.raises(membolt.CorruptStoreError, match="early:24"):
        store.get("early:24")
    store.close()
    membolt._core._release_all()
    assert files_of(source.directory) == before
    assert membolt_command("doctor", "--db", path).returncode == 1


def test_an_old_schema_is_read_as_it_is_and_checksummed_from_its_first_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from support.fixture_stores import copy_fixture_store

    # Damage found by a process that reads the file (not an image, §1.4).
    monkeypatch.setenv("MEMBOLT_IMAGE", "off")

    path = tmp_path / "old.redb"
    copy_fixture_store("schema_2", path)
    before = path.read_bytes()
    store = MemoryStore(path)
    assert value_of(store, "old:07") == "from schema 2, number 7"  # no checksum to check
    assert len(store) == 30
    store.close()
    membolt._core._release_all()
    assert path.read_bytes() == before  # reading upgrades nothing
    store = MemoryStore(path)
    store.save("new", "written by this version")
    store.close()
    membolt._core._release_all()
    # The first write rewrote every record with its checksum: damage to an
    # old one is now found (by a new process: this one's mirror is current).
    flip_every_copy(path, b"from schema 2, number 7")
    [result] = read_back([{"path": str(path), "keys": ["old:07"]}])
    assert "get" not in result["answers"]
    assert result["errors"][0][:2] == ["get", "CorruptStoreError"]
    assert "old:07" in result["errors"][0][2]


# ----- hard links ------------------------------------------------------------


def test_a_store_file_with_two_names_is_refused_under_either(tmp_path: Path) -> None:
    path = tmp_path / "a" / "memory.redb"
    path.parent.mkdir()
    # A writer killed inside its lease: its changes are only in the journal,
    # found beside the name it used.
    killed = subprocess.run(
        [sys.executable, "-c", CRASHING_WRITER, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    other = tmp_path / "b.redb"
    os.link(path, other)
    for name in (other, path):
        with pytest.raises(membolt.StoreError, match="hard links"):
            MemoryStore(name).get("late:3")
        with pytest.raises(membolt.StoreError, match="hard links"):
            MemoryStore(name).save("k", "v")
    doctor = membolt_command("doctor", "--db", other)
    assert doctor.returncode == 1
    assert "hard links" in doctor.stdout
    membolt._core._release_all()
    other.unlink()
    # Nothing was lost meanwhile: the killed writer's changes are all there.
    store = MemoryStore(path)
    assert value_of(store, "late:11") == "value late 11 " * 12
    assert value_of(store, "batch:b") == "value b"


# ----- a full disk -----------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    """A 16 MiB tmpfs mounted for the test (root only)."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount_point)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {mounted.stderr!r}")
    try:
        yield mount_point
    finally:
        membolt._core._release_all()
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(directory: Path) -> Path:
    """Fills the file system of ``directory`` to the last byte."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 4096, 1):
            while True:
                try:
                    os.write(fd, b"\xff" * size)
                except OSError:
                    break
    finally:
        os.close(fd)
    assert os.statvfs(directory).f_bavail == 0
    return filler


def test_a_full_disk_still_reads_and_a_failed_save_leaves_nothing_behind(
    small_disk: Path,
) -> None:
    path = small_disk / "memory.redb"
    build_crashed(path)
    filler = fill(small_disk)
    before = files_of(small_disk)
    # A new process reads the killed writer's changes (recovered in memory:
    # nothing needs to be written).
    [result] = read_back([{"path": str(path), "keys": ["late:11", "early:3"]}])
    assert result["errors"] == []
    assert result["escaped"] == []
    got = result["answers"]["get"]
    assert got["late:11"]["value"] == "value late 11 " * 12
    assert got["early:3"]["value"] == "value early 3, overwritten in the lease"
    assert files_of(small_disk) == before
    # A writer must first finish the crash recovery on disk, and cannot.
    store = MemoryStore(path)
    with pytest.raises(membolt.StoreError):
        store.save("big", "x" * 3_000_000)
    membolt._core._release_all()
    assert sorted(p.name for p in small_disk.iterdir()) == sorted(before)  # no .journal.new
    # With room again, nothing acknowledged is missing and writes work.
    filler.unlink()
    store = MemoryStore(path)
    store.save("after", "room again")
    assert value_of(store, "late:11") == "value late 11 " * 12
    assert store.get("big") is None


def test_a_journal_that_cannot_be_made_on_a_full_disk_leaves_no_file_behind(
    small_disk: Path,
) -> None:
    path = small_disk / "memory.redb"
    build_closed(path)
    path.with_name(path.name + ".journal").unlink()
    filler = fill(small_disk)
    names = sorted(p.name for p in small_disk.iterdir())
    store = MemoryStore(path)
    try:
        store.save("big", "x" * 3_000_000)
    except membolt.StoreError:
        assert MemoryStore(path).get("big") is None
    membolt._core._release_all()
    assert sorted(p.name for p in small_disk.iterdir()) == names  # no .journal.new
    filler.unlink()
    assert MemoryStore(path).get("early:59") is not None
