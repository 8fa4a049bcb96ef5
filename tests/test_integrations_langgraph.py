"""membolt.integrations.langgraph beyond LangGraph's own suites (tests/peer/):
the mapping onto entries, the ranked search, filters, TTL, on both media
(the ``store`` fixture), and several processes writing through the adapter."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

import membolt
from membolt import MemoryStore
from membolt.integrations.langgraph import AsyncMemboltStore, IndexEmbedder, MemboltStore

from support.adapter_processes import run_workers, worker_location


@pytest.fixture
def adapter(store: MemoryStore) -> MemboltStore:
    return MemboltStore(store)


# ----- keys_under ---------------------------------------------------------------------


def test_keys_under_gives_the_sorted_keys_of_a_prefix(store: MemoryStore) -> None:
    for key in ("a/x", "a/y", "a", "ab", "b/x", "a/\u00e9", "a/\U0001f600"):
        store.save(key, "v")
    assert store.keys_under("a/") == ["a/x", "a/y", "a/\u00e9", "a/\U0001f600"]
    assert store.keys_under("a") == ["a", "a/x", "a/y", "a/\u00e9", "a/\U0001f600", "ab"]
    assert store.keys_under("") == store.keys()
    assert store.keys_under("c") == []
    with pytest.raises(TypeError, match="prefix must be a str"):
        store.keys_under(1)  # type: ignore[arg-type]


# ----- the mapping --------------------------------------------------------------------


def test_an_item_is_an_entry_under_the_key_prefix(
    adapter: MemboltStore, store: MemoryStore
) -> None:
    adapter.put(("users", "42"), "prefs", {"theme": "dark", "size": 3})
    entry = store.get("langgraph:users/42/prefs")
    assert entry is not None
    assert json.loads(entry.value) == {"theme": "dark", "size": 3}
    assert entry.type == "langgraph"
    assert entry.namespace == "users/42"
    assert entry.references == ()  # the type has no automatic parent (§3.1)
    item = adapter.get(("users", "42"), "prefs")
    assert item is not None
    assert item.created_at.timestamp() * 1000 == pytest.approx(entry.created_at)
    assert item.updated_at.timestamp() * 1000 == pytest.approx(entry.updated_at)
    assert item.created_at.tzinfo is not None


def test_an_overwrite_keeps_created_at_and_moves_updated_at(adapter: MemboltStore) -> None:
    adapter.put(("n",), "k", {"v": 1})
    first = adapter.get(("n",), "k")
    adapter.put(("n",), "k", {"v": 2})
    second = adapter.get(("n",), "k")
    assert first is not None
    assert second is not None
    assert second.value == {"v": 2}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at


def test_separators_and_escapes_in_labels_and_keys_stay_apart(
    adapter: MemboltStore, store: MemoryStore
) -> None:
    places = [
        (("a/b",), "c"),
        (("a", "b"), "c"),
        (("a",), "b/c"),
        (("a%2Fb",), "c"),
        (("a%",), "%25"),
        ((), "a/b/c"),
    ]
    # batch(): put() refuses the empty namespace, the store does not.
    adapter.batch([PutOp(ns, key, {"n": n}) for n, (ns, key) in enumerate(places)])
    assert len(store.keys_under("langgraph:")) == len(places)
    for number, (namespace, key) in enumerate(places):
        item = adapter.batch([GetOp(namespace, key)])[0]
        assert item is not None
        assert (item.namespace, item.key, item.value) == (namespace, key, {"n": number})
    assert {i.namespace for i in adapter.search(("a",), limit=100)} == {("a", "b"), ("a",)}
    assert set(adapter.list_namespaces(prefix=("a/b",))) == {("a/b",)}


labels = st.text(min_size=1, max_size=8).filter(lambda s: "." not in s and "\0" not in s)


@settings(max_examples=60, deadline=None)
@given(
    places=st.lists(
        st.tuples(st.lists(labels, min_size=1, max_size=3).map(tuple), st.text(max_size=8)),
        min_size=1,
        max_size=6,
    )
)
def test_any_namespace_and_key_round_trip(tmp_path_factory: pytest.TempPathFactory, places) -> None:  # type: ignore[no-untyped-def]
    places = [(ns, key) for ns, key in places if not any("\ud800" <= c <= "\udfff" for c in key)]
    with MemboltStore.from_conn_string(str(tmp_path_factory.mktemp("rt") / "m.redb")) as adapter:
        expected = {}
        for number, (namespace, key) in enumerate(places):
            adapter.put(namespace, key, {"n": number})
            expected[namespace, key] = number
        for (namespace, key), number in expected.items():
            item = adapter.get(namespace, key)
            assert item is not None
            assert (item.namespace, item.key, item.value) == (namespace, key, {"n": number})
        assert set(adapter.list_namespaces(limit=1000)) == {ns for ns, _ in expected}
        for namespace, _ in expected:
            found = {(i.namespace, i.key) for i in adapter.search(namespace, limit=1000)}
            assert found == {place for place in expected if place[0][: len(namespace)] == namespace}


def test_a_batch_reads_before_it_writes_and_writes_in_one_transaction(
    adapter: MemboltStore, store: MemoryStore
) -> None:
    adapter.put(("n",), "k", {"v": "old"})
    got, _, searched = adapter.batch(
        [GetOp(("n",), "k"), PutOp(("n",), "k", {"v": "new"}), SearchOp(("n",))]
    )
    assert got is not None
    assert got.value == {"v": "old"}
    assert [i.value for i in searched] == [{"v": "old"}]  # type: ignore[union-attr]
    # The last put of a key wins; a failing op fails the batch before any write.
    adapter.batch([PutOp(("n",), "x", {"v": 1}), PutOp(("n",), "x", {"v": 2})])
    assert adapter.get(("n",), "x").value == {"v": 2}  # type: ignore[union-attr]
    before = store.keys()
    with pytest.raises(ValueError, match="Unsupported operator"):
        adapter.batch([PutOp(("n",), "y", {}), SearchOp(("n",), filter={"v": {"$in": [1]}})])
    with pytest.raises(InvalidNamespaceError):
        adapter.batch([PutOp(("n",), "y", {}), GetOp(("a.b",), "k")])
    assert store.keys() == before


def test_an_entry_under_the_prefix_that_is_no_item_is_named(
    adapter: MemboltStore, store: MemoryStore
) -> None:
    store.save("langgraph:n/k", "not json")
    with pytest.raises(ValueError, match="'langgraph:n/k' is not a LangGraph item"):
        adapter.get(("n",), "k")


def test_a_key_prefix_keeps_two_adapters_apart(store: MemoryStore) -> None:
    one, two = MemboltStore(store, key_prefix="one:"), MemboltStore(store, key_prefix="two:")
    one.put(("n",), "k", {"v": 1})
    assert two.get(("n",), "k") is None
    assert two.list_namespaces() == []
    with pytest.raises(ValueError, match="key_prefix"):
        MemboltStore(store, key_prefix="")


# ----- search -------------------------------------------------------------------------


def test_a_query_ranks_by_the_store_s_bm25_then_the_rest_newest_first(
    adapter: MemboltStore, store: MemoryStore
) -> None:
    store.save("error:ci", "pytest fails on the ci runner")  # outside the adapter's scope
    adapter.put(("docs",), "a", {"text": "the ci runner is slow"})
    adapter.put(("docs",), "b", {"text": "pytest fails with a timeout on ci"})
    adapter.put(("docs",), "c", {"text": "lunch menu"})
    adapter.put(("docs",), "d", {"text": "holiday plans"})
    adapter.put(("other",), "e", {"text": "pytest fails"})
    results = adapter.search(("docs",), query="pytest fails on ci", limit=10)
    scored = {e.key: s for e, s in store.search_words_scored("pytest fails on ci")}
    ranked = [e.key for e, _ in store.search_words_scored("pytest fails on ci")]
    in_scope = [k for k in ranked if k.startswith("langgraph:docs/")]
    assert [f"langgraph:docs/{r.key}" for r in results[:2]] == in_scope
    assert [r.score for r in results[:2]] == [scored[k] for k in in_scope]
    assert [(r.key, r.score) for r in results[2:]] == [("d", 0.0), ("c", 0.0)]
    # Pages of the same order; a filter applies to ranked and unranked items alike.
    assert [r.key for r in adapter.search(("docs",), query="pytest ci", limit=2, offset=1)] == [
        r.key for r in results[1:3]
    ]
    assert [
        r.key for r in adapter.search(("docs",), query="ci", filter={"text": "lunch menu"})
    ] == ["c"]


def test_without_a_query_items_come_newest_first_without_a_score(adapter: MemboltStore) -> None:
    for key in ("x", "y", "z"):
        adapter.put(("n",), key, {"k": key})
    adapter.put(("n",), "x", {"k": "x2"})
    results = adapter.search(("n",))
    assert [(r.key, r.score) for r in results] == [("x", None), ("z", None), ("y", None)]
    assert [r.key for r in adapter.search(("n",), query="")] == ["x", "z", "y"]


# ----- an index config: vector search --------------------------------------------------

VOCABULARY = ("coffee", "tea", "espresso", "desk", "window", "chair", "dog", "cat")


class WordEmbeddings(Embeddings):
    """One axis per word of VOCABULARY and one for every other word;
    counts the documents and queries it embeds."""

    def __init__(self) -> None:
        self.documents = 0
        self.queries = 0

    @staticmethod
    def vector(text: str) -> list[float]:
        out = [0.0] * (len(VOCABULARY) + 1)
        for word in re.findall(r"[a-z]+", text.lower()):
            out[VOCABULARY.index(word) if word in VOCABULARY else -1] += 1.0
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += len(texts)
        return [self.vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return self.vector(text)


def cosine(a: str, b: str) -> float:
    x, y = WordEmbeddings.vector(a), WordEmbeddings.vector(b)
    dot = sum(p * q for p, q in zip(x, y, strict=True))
    return dot / math.sqrt(sum(p * p for p in x) * sum(q * q for q in y))


def index_of(embed: object, fields: list[str], **more: object) -> Any:
    return {"dims": len(VOCABULARY) + 1, "embed": embed, "fields": fields, **more}


def test_an_index_scores_each_item_by_its_best_field(store: MemoryStore) -> None:
    embeddings = WordEmbeddings()
    adapter = MemboltStore(store, index=index_of(embeddings, ["text", "tags[*]"]))
    assert isinstance(store.embedder, IndexEmbedder)
    assert adapter.embeddings is embeddings
    adapter.put(("u",), "drink", {"text": "espresso every morning", "tags": ["coffee"]})
    adapter.put(("u",), "seat", {"text": "window desk", "tags": ["chair", "desk"]})
    adapter.put(("u",), "none", {"other": "coffee"})
    # Each put embedded its fields' texts once; the item without one has no vector.
    assert embeddings.documents == 2 + 3
    results = adapter.search(("u",), query="espresso desk")
    assert [r.key for r in results] == ["seat", "drink", "none"]
    assert results[0].score == pytest.approx(cosine("espresso desk", "desk"), abs=1e-6)
    assert results[1].score == pytest.approx(cosine("espresso desk", "espresso every morning"))
    assert results[2].score is None
    assert [r.key for r in adapter.search(("u",), query="espresso desk", offset=1, limit=1)] == [
        "drink"
    ]
    filtered = adapter.search(("u",), query="coffee", filter={"tags": ["chair", "desk"]})
    assert [(r.key, r.score) for r in filtered] == [("seat", 0.0)]
    # Nothing was embedded again by the searches: only their two queries.
    assert (embeddings.documents, embeddings.queries) == (5, 2)
    # membolt's own recall finds the items by the same vectors.
    assert store.search_words("which espresso")[0].key == "langgraph:u/drink"


def test_a_puts_index_argument_is_kept_and_followed(store: MemoryStore) -> None:
    adapter = MemboltStore(store, index=index_of(WordEmbeddings(), ["text"]))
    adapter.put(("u",), "a", {"text": "coffee", "title": "dog"})
    adapter.put(("u",), "b", {"text": "coffee", "title": "cat"}, index=False)
    adapter.put(("u",), "c", {"text": "tea", "title": "coffee"}, index=["title"])
    scores = {r.key: r.score for r in adapter.search(("u",), query="coffee")}
    assert scores == {"a": pytest.approx(1.0), "c": pytest.approx(1.0), "b": None}
    # The argument is an entry of the adapter's own, never an item.
    own = store.get("langgraph:.index/u/c")
    assert own is not None
    assert json.loads(own.value) == ["title"]
    assert adapter.list_namespaces() == [("u",)]
    assert len(adapter.search(("u",))) == 3
    # The same value with another argument is embedded again.
    adapter.put(("u",), "c", {"text": "tea", "title": "coffee"})
    adapter.put(("u",), "a", {"text": "coffee", "title": "dog"}, index=False)
    scores = {r.key: r.score for r in adapter.search(("u",), query="coffee")}
    assert scores == {"c": pytest.approx(0.0), "a": None, "b": None}
    assert store.get("langgraph:.index/u/c") is None
    # Another model embeds the items by the same arguments (the catch-up).
    store.embedder = None
    other = WordEmbeddings()
    again = MemboltStore(store, index=index_of(other, ["text"], name="words-v2"))
    scores = {r.key: r.score for r in again.search(("u",), query="tea")}
    assert scores == {"c": pytest.approx(1.0), "a": None, "b": None}
    assert other.documents == 1
    again.delete(("u",), "b")
    assert store.keys_under("langgraph:.index/") == ["langgraph:.index/u/a"]


async def test_an_async_embedding_function_serves_the_async_store() -> None:
    async def embed(texts: list[str]) -> list[list[float]]:
        return [WordEmbeddings.vector(text) for text in texts]

    index = index_of(embed, ["text"])
    async with AsyncMemboltStore.from_conn_string(":memory:", index=index) as adapter:
        await adapter.aput(("u",), "a", {"text": "coffee"})
        await adapter.aput(("u",), "b", {"text": "desk"})
        results = await adapter.asearch(("u",), query="coffee")
        assert [(r.key, r.score) for r in results] == [
            ("a", pytest.approx(1.0)),
            ("b", pytest.approx(0.0)),
        ]


def test_a_query_that_cannot_be_embedded_is_ranked_by_words(
    store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    class NoQueries(WordEmbeddings):
        def embed_query(self, text: str) -> list[float]:
            raise RuntimeError("the query model is down")

    adapter = MemboltStore(store, index=index_of(NoQueries(), ["text"]))
    adapter.put(("u",), "a", {"text": "fresh coffee beans"})
    adapter.put(("u",), "b", {"text": "desk"})
    with caplog.at_level(logging.WARNING, logger="membolt.integrations.langgraph"):
        results = adapter.search(("u",), query="coffee")
    assert [r.key for r in results] == ["a", "b"]
    assert results[0].score is not None
    assert results[0].score > 0
    assert results[1].score == 0.0
    assert "the query model is down" in caplog.text


def test_an_index_config_is_checked_and_shared(store: MemoryStore) -> None:
    embeddings = WordEmbeddings()
    with pytest.raises(ValueError, match="cosine"):
        MemboltStore(store, index=index_of(embeddings, ["text"], distance_type="l2"))
    with pytest.raises(ValueError, match="dims"):
        MemboltStore(store, index={"dims": 0, "embed": embeddings})
    assert store.embedder is None
    first = MemboltStore(store, index=index_of(embeddings, ["text"]))
    second = MemboltStore(store, index=index_of(embeddings, ["text"]))
    assert second.embeddings is first.embeddings
    # Another rule is another model: it needs a store of its own.
    with pytest.raises(ValueError, match="embeds with"):
        MemboltStore(store, index=index_of(embeddings, ["title"]))
    names = {
        IndexEmbedder(index_of(embeddings, fields), prefix).name
        for fields, prefix in ((["text"], "a:"), (["title"], "a:"), (["text"], "b:"))
    }
    assert len(names) == 3
    # A model's default name is the same in every process: no object's address.
    assert IndexEmbedder(index_of(embeddings, ["text"])).name == (
        f'langgraph {__name__}.WordEmbeddings fields=["text"] prefix=langgraph:'
    )
    assert "v2" in IndexEmbedder(index_of(embeddings, ["text"], name="v2")).name


@pytest.mark.parametrize(
    ("filter", "expected"),
    [
        ({"n": 1}, ["int1", "float1"]),
        ({"n": {"$eq": 1.0}}, ["int1", "float1"]),
        ({"n": True}, ["true"]),
        ({"n": {"$ne": 1}}, ["int2", "true", "text"]),
        ({"n": None}, ["null", "none"]),
        ({"n": {"$ne": None}}, ["int1", "float1", "int2", "true", "text"]),
        ({"n": {"$gt": 1}}, ["int2"]),
        ({"n": {"$gte": 1, "$lt": 2}}, ["int1", "float1"]),
        ({"n": {"$lt": "b"}}, []),
        ({"n": {"$gt": "a"}}, ["text"]),
        ({"n": {"$gt": float("nan")}}, []),
        ({"n": float("nan")}, []),
        ({"deep.er": [1, {"x": None}]}, ["int1"]),
        ({"deep.er": [1, {}]}, []),
        ({"deep": {"er": [1, {"x": None}]}}, ["int1"]),
    ],
)
def test_filters_compare_as_json(
    adapter: MemboltStore, filter: dict[str, object], expected: list[str]
) -> None:
    values = {
        "int1": {"n": 1, "deep": {"er": [1, {"x": None}]}},
        "float1": {"n": 1.0},
        "int2": {"n": 2},
        "true": {"n": True},
        "text": {"n": "b"},
        "null": {"n": None},
        "none": {},
    }
    for key, value in values.items():
        adapter.put(("f",), key, value)
    found = {r.key for r in adapter.search(("f",), filter=filter, limit=100)}
    assert found == set(expected)


def test_a_filter_key_outside_langgraph_s_alphabet_is_refused(adapter: MemboltStore) -> None:
    with pytest.raises(ValueError, match="Invalid filter key"):
        adapter.search(("n",), filter={"a b": 1})


def test_list_namespaces_with_wildcards_depth_and_pages(adapter: MemboltStore) -> None:
    for namespace in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "c", "f"), ("x", "b")]:
        adapter.put(namespace, "k", {})
    assert adapter.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
    ]
    assert adapter.list_namespaces(prefix=("*", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("x", "b"),
    ]
    assert adapter.list_namespaces(suffix=("*", "f")) == [("a", "c", "f")]
    assert adapter.list_namespaces(max_depth=1, limit=1, offset=1) == [("x",)]
    with pytest.raises(ValueError, match="Unsupported match type"):
        adapter.batch([ListNamespacesOp((MatchCondition("infix", ("a",)),))])  # type: ignore[arg-type]


# ----- TTL ----------------------------------------------------------------------------

TTL = 0.4 / 60  # minutes


def expiry_entries(store: MemoryStore) -> list[str]:
    return store.keys_under("langgraph:.ttl/")


def test_ttl_items_expire_at_the_sweep(store: MemoryStore) -> None:
    adapter = MemboltStore(store, ttl={"default_ttl": TTL})
    adapter.put(("t",), "default", {"v": 1})
    adapter.put(("t",), "forever", {"v": 2}, ttl=None)
    adapter.put(("t",), "long", {"v": 3}, ttl=10)
    assert expiry_entries(store) == ["langgraph:.ttl/t/default", "langgraph:.ttl/t/long"]
    assert adapter.sweep_ttl() == 0
    time.sleep(0.6)
    assert adapter.get(("t",), "default") is not None  # not omitted: the config does not ask
    assert adapter.sweep_ttl() == 1
    assert [i.key for i in adapter.search(("t",))] == ["long", "forever"]
    assert expiry_entries(store) == ["langgraph:.ttl/t/long"]
    # A put without TTL takes the expiry away; a delete takes both.
    adapter.put(("t",), "long", {"v": 4}, ttl=None)
    assert expiry_entries(store) == []
    adapter.put(("t",), "gone", {"v": 5}, ttl=10)
    adapter.delete(("t",), "gone")
    assert expiry_entries(store) == []
    assert store.keys_under("langgraph:") == ["langgraph:t/forever", "langgraph:t/long"]


def test_a_read_refreshes_an_expiry_without_touching_the_item(store: MemoryStore) -> None:
    adapter = MemboltStore(store, ttl={"default_ttl": TTL, "refresh_on_read": True})
    adapter.put(("t",), "k", {"v": 1})
    before = store.get("langgraph:t/k")
    expiry = json.loads(store.get("langgraph:.ttl/t/k").value)["expires_at"]  # type: ignore[union-attr]
    time.sleep(0.25)
    adapter.get(("t",), "k")
    renewed = json.loads(store.get("langgraph:.ttl/t/k").value)["expires_at"]  # type: ignore[union-attr]
    assert renewed >= expiry + 200
    assert store.get("langgraph:t/k") == before  # updated_at unchanged
    adapter.get(("t",), "k", refresh_ttl=False)
    adapter.search(("t",), refresh_ttl=False)
    assert json.loads(store.get("langgraph:.ttl/t/k").value)["expires_at"] == renewed  # type: ignore[union-attr]
    # A read that would move an expiry by less than 1% of its TTL writes nothing.
    adapter.put(("t",), "long", {"v": 2}, ttl=10)
    written = store.get("langgraph:.ttl/t/long")
    adapter.get(("t",), "long")
    adapter.search(("t",))
    assert store.get("langgraph:.ttl/t/long") == written


def test_omit_expired_hides_items_before_the_sweep(store: MemoryStore) -> None:
    adapter = MemboltStore(store, ttl={"default_ttl": TTL, "omit_expired": True})
    adapter.put(("t", "a"), "k", {"v": 1})
    adapter.put(("t", "b"), "k", {"v": 2}, ttl=None)
    time.sleep(0.6)
    assert adapter.get(("t", "a"), "k") is None
    assert [i.namespace for i in adapter.search(("t",))] == [("t", "b")]
    assert adapter.list_namespaces() == [("t", "b")]
    assert store.get("langgraph:t/a/k") is not None  # still there until swept


def test_the_sweeper_thread_sweeps_and_stops(tmp_path: Path) -> None:
    config = {"default_ttl": TTL, "sweep_interval_minutes": 0.2 / 60}
    with MemboltStore.from_conn_string(str(tmp_path / "m.redb"), ttl=config) as adapter:  # type: ignore[arg-type]
        future = adapter.start_ttl_sweeper()
        adapter.put(("t",), "k", {"v": 1})
        deadline = time.monotonic() + 10
        while adapter.get(("t",), "k") is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert adapter.get(("t",), "k") is None
        assert adapter.stop_ttl_sweeper(timeout=5)
        assert future.done()


def test_a_ttl_without_a_config_still_expires(store: MemoryStore) -> None:
    adapter = MemboltStore(store)
    adapter.put(("t",), "k", {"v": 1}, ttl=TTL)
    time.sleep(0.6)
    assert adapter.sweep_ttl() == 1


# ----- opening, async -----------------------------------------------------------------


def test_from_conn_string_memory_is_a_store_for_the_block() -> None:
    with MemboltStore.from_conn_string(":memory:") as adapter:
        adapter.put(("n",), "k", {"v": 1})
        location = Path(adapter.store.location)
        assert location.exists()
    assert not location.parent.exists()


def test_from_conn_string_opens_a_project_on_postgresql(postgres_url: str, project: str) -> None:
    with MemboltStore.from_conn_string(postgres_url, project=project) as adapter:
        adapter.put(("n",), "k", {"v": 1})
    with MemoryStore(postgres_url, project=project) as store:
        assert store.keys() == ["langgraph:n/k"]


def test_the_async_store_on_both_media(store: MemoryStore) -> None:
    async def scenario() -> None:
        adapter = AsyncMemboltStore(store, ttl={"default_ttl": 10})
        await adapter.aput(("n",), "k", {"text": "hello world"})
        items = await adapter.asearch(("n",), query="world")
        assert [(i.key, i.score is not None and i.score > 0) for i in items] == [("k", True)]
        # The sync methods work from other threads.
        got = await asyncio.to_thread(adapter.get, ("n",), "k")
        assert got is not None
        assert got.value == {"text": "hello world"}
        assert await adapter.sweep_ttl() == 0
        await adapter.adelete(("n",), "k")
        assert await adapter.aget(("n",), "k") is None

    asyncio.run(scenario())


# ----- several processes --------------------------------------------------------------


@pytest.fixture
def location(medium: str, store_path: Path, request: pytest.FixtureRequest) -> tuple[str, str]:
    return worker_location(medium, store_path, request)


@pytest.mark.slow
def test_processes_writing_through_the_adapter_keep_every_write_and_every_batch_whole(
    location: tuple[str, str],
) -> None:
    where, project = location
    run_workers("langgraph-pairs", where, project, count=4, rounds=25)
    with MemoryStore(where, project=None if project == "-" else project) as store:
        adapter = MemboltStore(store)
        for n in range(4):
            items = adapter.search(("worker", f"w{n}"), limit=100)
            assert sorted(i.key for i in items) == sorted(f"item-{i}" for i in range(25))
        a, b = adapter.get(("pairs",), "a"), adapter.get(("pairs",), "b")
        assert a is not None
        assert b is not None
        assert a.value == b.value  # the last batch is whole: both of its puts won
        assert len(adapter.list_namespaces()) == 5


def test_threads_share_an_adapter(adapter: MemboltStore) -> None:
    def write(n: int) -> None:
        for i in range(20):
            adapter.put(("thread", str(n)), str(i), {"i": i})

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(len(adapter.search(("thread", str(n)), limit=100)) for n in range(4)) == 80


def test_the_extra_is_importable_alone() -> None:
    script = (
        "import sys, membolt.integrations, membolt\n"
        "assert 'langgraph' not in sys.modules and 'anthropic' not in sys.modules\n"
        "from membolt.integrations.langgraph import MemboltStore\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    assert membolt.MemoryStore is MemoryStore
