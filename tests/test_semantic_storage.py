"""§15.4: how vectors are kept: the companion file under several writers,
a crash in the middle of an append, damage (never served, counted), and a
damaged row on PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import membolt

from support.embedders import TopicEmbedder

TESTS = str(Path(__file__).parent)

WRITER = """
import sys, membolt
from support.embedders import TopicEmbedder
path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with membolt.MemoryStore(path, embedder=TopicEmbedder()) as store:
    for i in range(count):
        store.save(f"{name}:{i}", f"value {i} from {name}")
"""


def companion(store_path: Path) -> Path:
    return store_path.with_name(store_path.name + ".vectors")


@pytest.mark.slow
@pytest.mark.redb_only
def test_several_processes_append_at_once(store_path: Path) -> None:
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(store_path), f"w{n}", "40"],
            env={**os.environ, "PYTHONPATH": TESTS},
        )
        for n in range(4)
    ]
    for writer in writers:
        assert writer.wait(timeout=120) == 0
    with membolt.MemoryStore(store_path, embedder=TopicEmbedder()) as store:
        status = store.vector_status()
    assert (status["entries"], status["with_vector"], status["damaged"]) == (160, 160, 0)


@pytest.mark.redb_only
def test_a_torn_append_is_ignored_then_cut(store_path: Path) -> None:
    embedder = TopicEmbedder()
    with membolt.MemoryStore(store_path, embedder=embedder) as store:
        store.save("a", "alpha")
        store.save("b", "beta")
    vectors = companion(store_path)
    # A crash in the middle of the last record's write.
    with open(vectors, "r+b") as file:
        file.truncate(vectors.stat().st_size - 10)
    code = (
        "import sys, membolt; from support.embedders import TopicEmbedder;"
        f"s = membolt.MemoryStore({str(store_path)!r}, embedder=TopicEmbedder());"
        "print(s.vector_status()['with_vector'], s.vector_status()['damaged']);"
        "s.save('c', 'gamma');"
        "print(s.vector_status()['with_vector'], s.vector_status()['damaged'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": TESTS},
        timeout=60,
        check=True,
    )
    # The torn vector is not read; the next writer cuts it off and appends.
    assert done.stdout.split() == ["1", "0", "2", "0"]
    with membolt.MemoryStore(store_path, embedder=TopicEmbedder()) as store:
        # b is embedded again by a search's catch-up.
        assert store.search_words("beta")[0].key == "b"
        assert store.vector_status() | {"last_error": None} == {
            **store.vector_status(),
            "with_vector": 3,
            "without_vector": 0,
            "damaged": 0,
            "last_error": None,
        }


@pytest.mark.redb_only
def test_a_damaged_vector_is_counted_and_never_served(store_path: Path) -> None:
    with membolt.MemoryStore(store_path, embedder=TopicEmbedder()) as store:
        store.save("error:ci", "linker fails on libssl")
        store.save("note:lunch", "pizza on friday")
    vectors = companion(store_path)
    data = bytearray(vectors.read_bytes())
    # A bit of the first record's vector (after the 8-byte file header and
    # the 32-byte record header).
    data[8 + 32 + 4] ^= 0x40
    vectors.write_bytes(bytes(data))
    code = (
        "import membolt; from support.embedders import TopicEmbedder;"
        f"s = membolt.MemoryStore({str(store_path)!r}, embedder=TopicEmbedder(), "
        "embed_timeout=None);"
        "s._embedding.embedder.embed = None;"  # a search may not re-embed
        "st = s.vector_status(); print(st['with_vector'], st['damaged'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": TESTS},
        timeout=60,
        check=True,
    )
    assert done.stdout.split() == ["1", "1"]
    # doctor reports it; the entries are untouched.
    assert membolt.doctor.inspect(store_path).healthy


@pytest.mark.redb_only
def test_deleting_the_companion_file_loses_only_vectors(store_path: Path) -> None:
    with membolt.MemoryStore(store_path, embedder=TopicEmbedder()) as store:
        store.save("a", "alpha")
        companion(store_path).unlink()
        assert store.vector_status()["with_vector"] == 0
        assert store.get("a") is not None
        store.save("b", "beta")
        assert store.embed_missing() == 1
        assert store.vector_status()["with_vector"] == 2


def test_a_damaged_row_on_postgresql_is_not_served(
    postgres_server: object, postgres_url: str, project: str
) -> None:
    with membolt.MemoryStore(postgres_url, project=project, embedder=TopicEmbedder()) as store:
        store.save("error:ci", "linker fails on libssl")
        store.save("note:lunch", "pizza on friday")
    postgres_server.sql(  # type: ignore[attr-defined]
        "UPDATE membolt_vectors SET vector = set_byte(vector, 0, get_byte(vector, 0) # 1) "
        f"WHERE key = 'error:ci' AND project_id = (SELECT id FROM membolt_projects "
        f"WHERE name = '{project}')"
    )
    code = (
        "import membolt; from support.embedders import TopicEmbedder;"
        f"s = membolt.MemoryStore({postgres_url!r}, project={project!r}, "
        "embedder=TopicEmbedder());"
        "st = s.vector_status(); print(st['with_vector'], st['damaged'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": TESTS},
        timeout=60,
        check=True,
    )
    assert done.stdout.split() == ["1", "1"]
