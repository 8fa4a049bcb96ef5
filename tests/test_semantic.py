"""§15.4: recall by meaning with an embedder, on both media: vectors kept
beside the entries and reused, the fused ranking, and every way an
embedder can fail losing nothing."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import membolt
from membolt import transfer
from membolt.semantic import CATCH_UP
from membolt.tools import memory_search

from support.embedders import FailingEmbedder, TopicEmbedder

TESTS = str(Path(__file__).parent)
#: The core's methods, which rank by words alone when given no embedding.
WORDS_ONLY = membolt._core.Store


@pytest.fixture
def where(medium: str, store_path: Path, request: pytest.FixtureRequest) -> dict[str, object]:
    """How to open the test's store, on either medium."""
    if medium == "postgres":
        return {
            "path": request.getfixturevalue("postgres_url"),
            "project": request.getfixturevalue("project"),
        }
    return {"path": store_path}


def opened(where: dict[str, object], **options: object) -> membolt.MemoryStore:
    kwargs = {k: v for k, v in where.items() if k != "path"}
    return membolt.MemoryStore(where["path"], **kwargs, **options)  # type: ignore[arg-type]


@pytest.fixture
def embedder() -> TopicEmbedder:
    return TopicEmbedder()


@pytest.fixture
def store(where: dict[str, object], embedder: TopicEmbedder) -> Iterator[membolt.MemoryStore]:
    with opened(where, embedder=embedder) as store:
        yield store


def fill(store: membolt.MemoryStore) -> None:
    store.save("error:ci", "linker fails on libssl")
    store.save("note:standup", "the build is slow on the old runners")
    store.save("note:lunch", "pizza on friday")


def keys(entries: list[membolt.Entry]) -> list[str]:
    return [e.key for e in entries]


def test_saves_embed_once_per_transaction_and_vectors_are_kept(
    store: membolt.MemoryStore, embedder: TopicEmbedder
) -> None:
    store.save("a", "alpha")
    store.save_many([("b", "beta"), ("c", "gamma")], then=[("d", "delta")])
    with store.batch() as b:
        b.save("e", "epsilon")
        b.save("f", "phi")
        b.delete("a")
    assert embedder.calls == 3
    assert embedder.texts == 1 + 3 + 2
    status = store.vector_status()
    assert (status["entries"], status["with_vector"], status["damaged"]) == (5, 5, 0)
    # An unchanged value is not embedded again; a changed one is.
    store.save("b", "beta")
    assert embedder.texts == 6
    store.save("b", "beta two")
    assert embedder.texts == 7
    assert store.vector_status()["without_vector"] == 0


def test_a_vector_alone_qualifies_and_both_rankings_fuse(store: membolt.MemoryStore) -> None:
    fill(store)
    # By words alone "what broke the build" finds the standup note only.
    words = WORDS_ONLY.search_words(store, "what broke the build")
    assert keys(words) == ["note:standup"]
    found = store.search_words_scored("what broke the build")
    # error:ci is first by meaning (rank 1: 1/61), note:standup first by
    # words (1/61) and second by meaning (1/62); the lunch note shares a
    # little of the query's direction (third by meaning) and qualifies by
    # its vector alone.
    assert [e.key for e, _ in found] == ["note:standup", "error:ci", "note:lunch"]
    assert [score for _, score in found] == pytest.approx([1 / 61 + 1 / 62, 1 / 61, 1 / 63])
    assert keys(store.search_words("what broke", limit=1)) == ["error:ci"]
    # The tool's fallback uses it too.
    assert "error:ci" in memory_search(store, {"query": "what broke yesterday"})


def test_the_focus_of_the_block_is_found_by_meaning(store: membolt.MemoryStore) -> None:
    store.save("note:lunch", "pizza on friday")
    store.save("note:standup", "the build is slow on the old runners")
    # 80 bytes: one entry. By words "food" matches nothing, so the newest
    # fills the block; by meaning the lunch note is the focus.
    assert "note:lunch" in store.render("food?", 20, 0)
    assert "note:lunch" not in WORDS_ONLY.render(store, "food?", 20, 0)


def test_without_a_significant_term_nothing_is_found(store: membolt.MemoryStore) -> None:
    fill(store)
    assert store.search_words("the of and") == []
    assert store.search_words("") == []


def test_a_new_handle_reuses_the_vectors(
    where: dict[str, object], store: membolt.MemoryStore
) -> None:
    fill(store)
    store.close()
    code = (
        "import sys, membolt; from support.embedders import TopicEmbedder;"
        "e = TopicEmbedder();"
        f"s = membolt.MemoryStore({str(where['path'])!r}, **{json.dumps({k: str(v) for k, v in where.items() if k != 'path'})}, embedder=e);"  # noqa: E501
        "found = [x.key for x in s.search_words('what broke')];"
        "print(found[0], e.texts, s.vector_status()['with_vector'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": TESTS},
        timeout=60,
        check=True,
    )
    # Only the query was embedded: every entry's vector was read back.
    assert done.stdout.split() == ["error:ci", "1", "3"]


def test_a_change_of_model_is_caught_up_lazily_then_at_once(
    where: dict[str, object], store: membolt.MemoryStore
) -> None:
    store.save_many([(f"k{i}", f"value {i}") for i in range(CATCH_UP + 20)])
    other = TopicEmbedder(name="topics-v2")
    with opened(where, embedder=other) as renamed:
        assert renamed.vector_status()["with_vector"] == 0
        renamed.search_words("value")
        assert renamed.vector_status()["with_vector"] == CATCH_UP
        assert renamed.embed_missing() == 20
        assert renamed.vector_status()["without_vector"] == 0
    # The first model's vectors are still there for it.
    assert store.vector_status()["without_vector"] == 0


@pytest.mark.parametrize("mode", ["raise", "short", "nan", "inf", "count", "junk"])
def test_a_failing_embedder_never_fails_a_save(where: dict[str, object], mode: str) -> None:
    failing = FailingEmbedder(mode)
    with opened(where, embedder=failing) as store:
        fill(store)
        assert len(store) == 3
        status = store.vector_status()
        assert status["without_vector"] == 3
        assert status["embed_failures"] >= 1 or mode in ("nan", "inf")
        # Search works as without an embedder (the query's vector is refused
        # too, or finds no entry vector to compare).
        with opened(where) as plain:
            assert keys(store.search_words("build")) == keys(plain.search_words("build"))
            assert store.render("libssl", 100, 0) == plain.render("libssl", 100, 0)
        failing.failing = False
        assert store.embed_missing() == 3
        assert keys(store.search_words("what broke"))[0] == "error:ci"


def test_a_hanging_embedder_costs_one_timeout(where: dict[str, object]) -> None:
    hanging = FailingEmbedder("hang")
    with opened(where, embedder=hanging, embed_timeout=0.2) as store:
        started = time.monotonic()
        store.save("a", "alpha")
        assert time.monotonic() - started < 5
        # While the call hangs, the next ones are refused at once.
        started = time.monotonic()
        store.save("b", "beta")
        assert store.search_words("alpha")[0].key == "a"
        assert time.monotonic() - started < 0.15
        assert store.get("a") is not None
        assert store.get("b") is not None
        assert store.vector_status()["without_vector"] == 2
        hanging.failing = False
        hanging.release.set()
        deadline = time.monotonic() + 5
        while store.embed_missing() < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.vector_status()["without_vector"] == 0


def test_a_stale_vector_is_never_used(store: membolt.MemoryStore) -> None:
    store.save("k", "pizza on friday")
    # The vector of the old text stays stored, but the entry's text changed
    # (saved past the embedder): the entry has no vector at all.
    WORDS_ONLY._save(store, membolt.store.save_request("k", "linker"))
    assert store.vector_status()["with_vector"] == 0
    assert store.vectors_of([store.get("k")]) == [None]  # type: ignore[list-item]


def test_export_and_import_carry_the_vectors(store: membolt.MemoryStore, tmp_path: Path) -> None:
    fill(store)
    out = io.StringIO()
    assert transfer.export(store, out) == 3
    lines = out.getvalue().splitlines()
    assert all("embedding" in json.loads(line) for line in lines[1:])
    vectors: transfer.Vectors = {}
    entries = transfer.parse(lines, vectors=vectors)
    assert set(vectors) == {"error:ci", "note:standup", "note:lunch"}
    counting = TopicEmbedder()
    with membolt.MemoryStore(tmp_path / "copy.redb", embedder=counting) as copy:
        transfer.import_entries(copy, entries, vectors)
        assert copy.vector_status()["without_vector"] == 0
        assert keys(copy.search_words("what broke"))[0] == "error:ci"
    # Only the query was embedded.
    assert counting.texts == 1
    # A reader of the field gets what was stored; a bad field is refused.
    record = json.loads(lines[1])
    record["embedding"]["vector"] = "not base64!"
    with pytest.raises(transfer.ImportFormatError, match="line 1"):
        transfer.parse([json.dumps(record)], vectors={})


def test_doctor_counts_entries_without_vectors(
    where: dict[str, object], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with opened(where, embedder=FailingEmbedder("raise")) as store:
        fill(store)
    monkeypatch.setenv("MEMBOLT_EMBEDDER", "support.embedders:topics")
    monkeypatch.setenv("PYTHONPATH", TESTS)
    monkeypatch.syspath_prepend(TESTS)
    args = ["--embedder", "support.embedders:topics"]
    if "project" in where:
        args += ["--db", str(where["path"]), "--project", str(where["project"])]
    else:
        args += ["--db", str(where["path"])]
    assert membolt.cli.main([*args, "doctor"]) == 0
    out = capsys.readouterr().out
    assert "vectors: 0 of 3 entries have a vector of topics" in out
    assert "3 entries have no vector" in out
    assert membolt.cli.main([*args, "embed"]) == 0
    assert "embedded 3; 3 of 3" in capsys.readouterr().out
    assert membolt.cli.main([*args, "search", "what broke"]) == 0
    assert "error:ci" in capsys.readouterr().out


@pytest.mark.redb_only
def test_the_prompt_hook_finds_by_meaning_with_the_setting(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with membolt.MemoryStore.for_project(project) as store:
        store.save("note:lunch", "pizza on friday")
    membolt._core._release_all()
    payload = {
        "session_id": "s1",
        "transcript_path": str(tmp_path / "t.jsonl"),
        "cwd": str(project),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "any food plans?",
    }

    def prompt_hook(**env: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "membolt.cli", "hook", "claude-code"],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            cwd=project,
            env={**os.environ, "PYTHONPATH": TESTS, **env},
            timeout=120,
            check=True,
        )
        assert done.stderr == ""
        return done.stdout

    # By words "food" and "plans" match nothing: no block.
    assert prompt_hook() == ""
    # With an embedder, the lunch note is found by its meaning.
    assert "note:lunch" in prompt_hook(MEMBOLT_EMBEDDER="support.embedders:topics")


# ----- an embedder's choice of texts, meaning alone (§15.4, §10) -------------------


class ChoosingEmbedder(TopicEmbedder):
    """Embeds each ``|``-separated part of a ``parts:`` entry's value, nothing
    of a ``skip:`` entry, and the default text of the others; queries go
    through ``embed_query`` (counted)."""

    def __init__(self, name: str = "choosing") -> None:
        super().__init__(name)
        self.queries = 0
        #: Read by entry_texts: a rule that depends on more than the entry.
        self.parts_only = False

    def entry_texts(self, key: str, value: str) -> list[str]:
        if key.startswith("skip:"):
            return []
        if key.startswith("parts:"):
            parts = value.split("|")
            return parts[:1] if self.parts_only else parts
        return [f"{key}\n{value}"]

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return self.vector(text)


def test_an_entry_has_the_vectors_of_the_texts_its_embedder_chooses(
    where: dict[str, object],
) -> None:
    embedder = ChoosingEmbedder()
    with opened(where, embedder=embedder) as store:
        with store.batch() as b:
            b.save("parts:plans", "the release goes to production|pizza on friday")
            b.save("skip:lunch", "pizza on friday")
            b.save("note:ci", "linker fails on libssl")
        # One call for the batch: two parts, nothing of the skipped entry, one default.
        assert (embedder.calls, embedder.texts) == (1, 3)
        status = store.vector_status()
        assert (status["with_vector"], status["without_vector"]) == (3, 0)
        # An entry's cosine is the best of its vectors; an entry embedded as
        # nothing is left out of recall by meaning (and is not caught up).
        found = store.search_vectors_scored("pizza on friday")
        assert [e.key for e, _ in found] == ["parts:plans", "note:ci"]
        assert found[0][1] == pytest.approx(1.0, abs=1e-6)
        assert (embedder.calls, embedder.queries) == (1, 1)
        # The fused ranking uses the best of a set too.
        assert keys(store.search_words("pizza for dinner"))[:2] == ["parts:plans", "skip:lunch"]
        # An entry of several vectors, or none, is exported without them.
        exported = store.vectors_of(store.entries())  # note:ci, parts:plans, skip:lunch
        assert [v is not None for v in exported] == [True, False, False]
    # A new handle reads the sets back: nothing is embedded again.
    again = ChoosingEmbedder()
    with opened(where, embedder=again) as store:
        assert store.vector_status()["without_vector"] == 0
        assert [e.key for e, _ in store.search_vectors_scored("pizza")][:1] == ["parts:plans"]
        assert (again.texts, again.queries) == (0, 1)


def test_meaning_alone_ranks_the_chosen_keys_by_cosine(store: membolt.MemoryStore) -> None:
    fill(store)
    store.save("note:deploy", "ship the release to production")
    found = store.search_vectors_scored("what broke")
    assert found[0][0].key == "error:ci"
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    # Every entry with a vector is given, whatever its cosine.
    assert len(found) == 4
    chosen = store.search_vectors_scored("what broke", keys=["note:lunch", "nothing", "error:ci"])
    assert [e.key for e, _ in chosen] == ["error:ci", "note:lunch"]
    assert len(store.search_vectors_scored("what broke", limit=1)) == 1
    assert store.search_vectors_scored("  ") == []


def test_meaning_alone_needs_an_embedder_and_an_embedded_query(where: dict[str, object]) -> None:
    with opened(where) as plain:
        with pytest.raises(ValueError, match="no embedder"):
            plain.search_vectors_scored("x")
        with pytest.raises(ValueError, match="no embedder"):
            plain.embed_entries(["x"])
    failing = FailingEmbedder("raise")
    failing.failing = False
    with opened(where, embedder=failing) as store:
        fill(store)
        failing.failing = True
        with pytest.raises(membolt.embedding.EmbedderError, match="the model server is down"):
            store.search_vectors_scored("what broke")


def test_embed_entries_embeds_again_after_the_rule_changed(store: membolt.MemoryStore) -> None:
    embedder = ChoosingEmbedder()
    store.embedder = embedder
    store.save("parts:plans", "the release goes to production|pizza on friday")
    assert store.search_vectors_scored("pizza on friday")[0][1] == pytest.approx(1.0, abs=1e-6)
    embedder.parts_only = True
    # The stored set is the entry text's: the rule's change is not seen...
    assert store.search_vectors_scored("pizza on friday")[0][1] == pytest.approx(1.0, abs=1e-6)
    # ...until the entry is embedded again.
    assert store.embed_entries(["parts:plans", "parts:plans", "missing"]) == 1
    assert store.search_vectors_scored("pizza on friday")[0][1] < 0.5


def test_an_embedder_can_be_given_to_an_open_store(where: dict[str, object]) -> None:
    with opened(where, embed_timeout=5.0) as store:
        assert store.embedder is None
        store.save("error:ci", "linker fails on libssl")
        embedder = TopicEmbedder()
        store.embedder = embedder
        assert store.embedder is embedder
        assert store.embedding is not None
        assert store.embedding.timeout == 5.0
        store.save("note:lunch", "pizza on friday")
        assert embedder.texts == 1
        # The entry saved before is caught up by the next search.
        assert keys(store.search_words("what broke"))[0] == "error:ci"
        assert store.vector_status()["without_vector"] == 0
        store.embedder = None
        store.save("note:deploy", "ship it")
        assert embedder.texts == 3  # the save, the catch-up and the query
