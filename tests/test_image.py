"""The image beside a store file (docs/behaviour.md §1.4, §14): a cache a
new process maps instead of loading the whole file. It never changes what a
call returns, is ignored when it fails a check, is noted (not reported as
damage) by doctor, and a writer killed while writing it leaves a store that
opens correctly.

``MEMBOLT_IMAGE=always`` writes an image for a store of any size (by
default only from 2,000 entries on); ``MEMBOLT_IMAGE=off`` neither writes
nor reads one. Which calls the image served is checked by the Rust tests
(rust/tests/image.rs); here each answer is compared across processes.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import membolt
import membolt.doctor
from membolt import MemoryStore

pytestmark = pytest.mark.redb_only

# Prints, as JSON, what a new process answers about the store at argv[1].
READER = r"""
import json, sys
import membolt
project = sys.argv[2] if len(sys.argv) > 2 else None
store = membolt.MemoryStore(sys.argv[1], **({"project": project} if project else {}))
out = {
    "entries": [e.to_dict() for e in store.entries()],
    "search": [[e.key for e in store.search(q)] for q in ("alpha", "KEY:00", "é", "x")],
    "ranked": [
        [store.search_ranked(q, 5)[0], [e.key for e in store.search_ranked(q, 5)[1]]]
        for q in ("alpha", "value 1")
    ],
    "render": store.render("alpha beta", 300),
    "children": store.children("key:0003"),
    "words": [e.key for e in store.search_words("gamma delta", 5)],
}
store.close()
print(json.dumps(out, sort_keys=True))
"""


def image_of(path: Path) -> Path:
    return Path(f"{path}.image")


def new_process(path: Path | str, image: str, project: str = "") -> dict[str, object]:
    env = {**os.environ, "MEMBOLT_IMAGE": image}
    done = subprocess.run(
        [sys.executable, "-c", READER, str(path), project],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def value(i: int, round_: int = 0) -> str:
    words = ("alpha", "beta", "gamma", "delta", "épée")
    return f"value {i} {words[i % 5]} {words[i // 5 % 5]} round {round_}"


def fill(path: Path | str, count: int, project: str | None = None) -> None:
    store = MemoryStore(path, project=project) if project else MemoryStore(path)
    store.save_many([(f"key:{i:04}", value(i)) for i in range(count)], caps=False)
    store.close()
    membolt._core._release_all()


@pytest.fixture
def always(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBOLT_IMAGE", "always")


@pytest.mark.usefixtures("always")
def test_a_new_process_answers_the_same_with_and_without_the_image(store_path: Path) -> None:
    fill(store_path, 300)
    assert image_of(store_path).is_file()
    with_image = new_process(store_path, "always")
    assert with_image == new_process(store_path, "off")
    # Changes since the image (too few to write a new one) are applied on top.
    before = image_of(store_path).read_bytes()
    store = MemoryStore(store_path)
    store.save("key:0001", "alpha changed")
    store.delete("key:0002")
    store.save("new:key", "alpha new")
    store.link("new:key", "key:0003")
    store.close()
    membolt._core._release_all()
    assert image_of(store_path).read_bytes() == before
    changed = new_process(store_path, "always")
    assert changed == new_process(store_path, "off")
    assert changed != with_image


@pytest.mark.usefixtures("always")
@pytest.mark.parametrize(
    "damage", ["flip header", "flip entries", "flip end", "cut", "empty", "other store"]
)
def test_an_image_that_fails_a_check_is_ignored(
    store_path: Path, tmp_path: Path, damage: str
) -> None:
    fill(store_path, 200)
    image = image_of(store_path)
    good = image.read_bytes()
    expected = new_process(store_path, "off")
    if damage == "other store":
        other = tmp_path / "other" / "memory.redb"
        fill(other, 200)
        bad = image_of(other).read_bytes()
    elif damage == "cut":
        bad = good[: len(good) // 2]
    elif damage == "empty":
        bad = b""
    else:
        at = {"flip header": 30, "flip entries": 520, "flip end": len(good) - 3}[damage]
        bad = bytearray(good)
        bad[at] ^= 0x08
        bad = bytes(bad)
    image.write_bytes(bad)
    assert new_process(store_path, "always") == expected
    report = membolt.doctor.inspect(store_path)
    assert report.problems == ()
    if damage != "other store":
        assert any("image" in note and "cache" in note for note in report.notes), report.notes
    # The next write replaces a damaged image.
    store = MemoryStore(store_path)
    store.save("key:0001", "alpha again")
    store.close()
    membolt._core._release_all()
    assert new_process(store_path, "always") == new_process(store_path, "off")
    assert not any("image" in note for note in membolt.doctor.inspect(store_path).notes)


@pytest.mark.parametrize("setting", ["off", "OFF", "0", "false", " No "])
def test_images_off_writes_none(
    store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    # Big enough for an image by default (the control beside it).
    monkeypatch.setenv("MEMBOLT_IMAGE", setting)
    fill(store_path, 2500)
    assert not image_of(store_path).exists()
    monkeypatch.delenv("MEMBOLT_IMAGE")
    control = tmp_path / "control.redb"
    fill(control, 2500)
    assert image_of(control).exists()


def test_a_small_store_gets_no_image_by_default(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMBOLT_IMAGE", raising=False)
    fill(store_path, 50)
    assert not image_of(store_path).exists()


def test_readers_write_no_image(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBOLT_IMAGE", "off")
    fill(store_path, 50)
    new_process(store_path, "always")
    assert not image_of(store_path).exists()


# Saves COUNT entries in one batch, says so, then closes (writing the
# image) and exits; the test kills it somewhere in between.
IMAGE_WRITER = r"""
import sys
import membolt
path, count, round_ = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
store = membolt.MemoryStore(path)
store.save_many(
    [(f"key:{i:05}", f"value {i} round {round_} alpha") for i in range(count)], caps=False
)
print("saved", flush=True)
store.close()
membolt._core._release_all()
print("closed", flush=True)
"""


@pytest.mark.slow
@pytest.mark.usefixtures("always")
def test_a_writer_killed_while_writing_the_image_leaves_a_store_that_opens(
    store_path: Path,
) -> None:
    store_path.parent.mkdir(parents=True)
    rng = random.Random(24)
    count = 4000
    counts = {"kills": 0, "closed first": 0, "image left behind": 0}
    for round_ in range(12):
        writer = subprocess.Popen(
            [sys.executable, "-c", IMAGE_WRITER, str(store_path), str(count), str(round_)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "saved"
        time.sleep(rng.uniform(0, 0.05))
        writer.send_signal(signal.SIGKILL)
        out, errors = writer.communicate(timeout=60)
        counts["closed first" if "closed" in out else "kills"] += 1
        counts["image left behind"] += Path(f"{store_path}.image.new").exists()
        # The save returned: every entry of this round is there, whatever
        # became of the image, with it and without it.
        answers = new_process(store_path, "always")
        assert answers == new_process(store_path, "off"), errors[-2000:]
        entries = answers["entries"]
        assert isinstance(entries, list)
        assert len(entries) == count
        assert all(e["value"].endswith(f"round {round_} alpha") for e in entries)
        report = membolt.doctor.inspect(store_path)
        assert report.problems == (), report.problems
    print(f"\nimage kill campaign: {json.dumps(counts)}")


# Saves and deletes the JSON list of [key, value | null] in argv[2], in a
# process of its own (whose lease ends, writing an image when one is due).
WRITER = r"""
import json, sys
import membolt
store = membolt.MemoryStore(sys.argv[1])
for key, value in json.loads(sys.argv[2]):
    store.save(key, value) if value is not None else store.delete(key)
store.close()
"""


def write(path: Path, changes: list[tuple[str, str | None]]) -> None:
    subprocess.run(
        [sys.executable, "-c", WRITER, str(path), json.dumps(changes)],
        check=True,
        timeout=120,
        env={**os.environ, "MEMBOLT_IMAGE": "always"},
    )


def copy_store(source: Path, target: Path) -> None:
    """The store file and its companions, as a backup or a sync tool would
    copy them (over what is there, deleting nothing)."""
    for suffix in ("", *membolt._core.STORE_COMPANION_SUFFIXES):
        if Path(f"{source}{suffix}").exists():
            shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")


def assert_same_with_and_without_image(path: Path) -> None:
    assert Path(f"{path}.image").exists()
    assert new_process(path, "always") == new_process(path, "off")


@pytest.mark.usefixtures("always")
def test_a_copy_that_went_its_own_way_is_not_served_from_the_other_image(
    tmp_path: Path,
) -> None:
    # Two copies of one store (the same store id) change the same number of
    # entries; one copy's files are then put over the other's, image aside:
    # the same store id, change number, entry count and ring position, other
    # contents.
    first, second = tmp_path / "first.redb", tmp_path / "second.redb"
    fill(first, 10)
    Path(f"{first}.image").unlink()  # the first copy's next image: after they part
    copy_store(first, second)
    write(first, [("key:0001", "alpha changed in the first copy")])
    write(second, [("key:0005", "changed in the second copy")])
    copy_store(second, first)
    assert_same_with_and_without_image(first)
    entries = new_process(first, "always")["entries"]
    assert isinstance(entries, list)
    values = {e["key"]: e["value"] for e in entries}
    assert values["key:0001"] == value(1)
    assert values["key:0005"] == "changed in the second copy"


@pytest.mark.usefixtures("always")
def test_a_backup_put_back_under_a_newer_image_is_not_served_from_it(
    tmp_path: Path,
) -> None:
    store, backup = tmp_path / "m.redb", tmp_path / "backup.redb"
    fill(store, 10)
    Path(f"{store}.image").unlink()  # the backup predates the image
    copy_store(store, backup)
    write(store, [("key:0001", "alpha changed after the backup")])
    copy_store(backup, store)  # put back; the newer image stays
    write(store, [("key:0005", "after the restore"), ("key:0010", "new after the restore")])
    assert_same_with_and_without_image(store)
    entries = new_process(store, "always")["entries"]
    assert isinstance(entries, list)
    values = {e["key"]: e["value"] for e in entries}
    assert values["key:0001"] == value(1)
    assert values["key:0005"] == "after the restore"


@pytest.mark.usefixtures("always")
def test_a_change_ring_that_went_back_is_not_trusted_with_the_image(store_path: Path) -> None:
    # The ring is shared through the page cache and never synced: after a
    # machine crash its file may hold older pages than the image (synced)
    # remembers. New changes then reuse the ring numbers the image has seen.
    store_path.parent.mkdir(parents=True)
    fill(store_path, 10)
    Path(f"{store_path}.image").unlink()  # the next image: after the crash's ring
    ring = Path(f"{store_path}.sync")
    old_ring = ring.read_bytes()
    write(store_path, [("key:0001", "changed before the crash")])
    with ring.open("r+b") as file:  # the older pages, in place
        file.write(old_ring)
    write(store_path, [("key:0005", "after the crash"), ("key:0010", "new after the crash")])
    assert_same_with_and_without_image(store_path)
    entries = new_process(store_path, "always")["entries"]
    assert isinstance(entries, list)
    assert {e["key"]: e["value"] for e in entries}["key:0005"] == "after the crash"


@pytest.mark.usefixtures("always")
def test_a_postgresql_project_image_under_the_store_home(
    postgres_url: str, project: str, tmp_path: Path
) -> None:
    fill(postgres_url, 300, project)
    images = list((tmp_path / "home" / "postgresql-images").glob("*.image"))
    assert len(images) == 1
    with_image = new_process(postgres_url, "always", project)
    assert with_image == new_process(postgres_url, "off", project)
    # Changes by another process: read from the server on top of the image.
    store = MemoryStore(postgres_url, project=project)
    store.save("key:0001", "alpha changed")
    store.delete("key:0002")
    store.save("new:key", "alpha new")
    store.link("new:key", "key:0003")
    changed = new_process(postgres_url, "always", project)
    store.close()
    assert changed == new_process(postgres_url, "off", project)
    assert changed != with_image
    # A damaged image, or another project's, is not used.
    other = f"{project}-other"
    fill(postgres_url, 300, other)
    for bad in (images[0].read_bytes()[:-9], b"junk"):
        images[0].write_bytes(bad)
        assert new_process(postgres_url, "always", project) == changed
    others = [
        i for i in (tmp_path / "home" / "postgresql-images").glob("*.image") if i != images[0]
    ]
    images[0].write_bytes(others[0].read_bytes())
    assert new_process(postgres_url, "always", project) == changed
