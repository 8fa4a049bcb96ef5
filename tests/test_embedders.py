"""§15.4's ready adapters and the setting that names one: an
OpenAI-compatible endpoint (against a local HTTP server), a model2vec
model on disk, feature hashing, ``module:attr``; and the setting read by
every command."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

import membolt
from membolt import embedders
from membolt.embedders.hashing import HashingEmbedder
from membolt.embedders.openai import OpenAIEmbedder
from membolt.embedding import Embedding, check_embedder

from support.embedders import TopicEmbedder


class _Embeddings(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        auth = self.headers.get("Authorization")
        type(self).requests.append({"path": self.path, "auth": auth, **body})
        embedder = TopicEmbedder()
        data = [
            {"object": "embedding", "index": i, "embedding": embedder.vector(text)}
            for i, text in enumerate(body["input"])
        ]
        answer = json.dumps({"object": "list", "data": data[::-1], "model": body["model"]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(answer.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Embeddings.requests = []
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_an_openai_compatible_endpoint(
    endpoint: str, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMBOLT_EMBEDDER_API_KEY", "sk-test")
    embedder = embedders.resolve(f"openai:{endpoint}#topic-model")
    assert isinstance(embedder, OpenAIEmbedder)
    assert (embedder.name, embedder.dims) == ("openai:topic-model", 8)
    with membolt.MemoryStore(store_path, embedder=embedder) as store:
        store.save("error:ci", "linker fails on libssl")
        store.save("note:lunch", "pizza on friday")
        assert store.search_words("what broke", limit=1)[0].key == "error:ci"
    last = _Embeddings.requests[-1]
    assert last["path"] == "/v1/embeddings"
    assert last["auth"] == "Bearer sk-test"
    assert last["model"] == "topic-model"
    # data[] came back in reverse: read in index order.
    out = OpenAIEmbedder(endpoint, "m", dims=8).embed(["pizza", "linker"])
    assert out[0][1] > 0
    assert out[1][0] > 0


def test_an_endpoint_that_is_down_loses_no_save(store_path: Path) -> None:
    embedder = OpenAIEmbedder("http://127.0.0.1:9/v1", "m", dims=8, timeout=1)
    with membolt.MemoryStore(store_path, embedder=embedder) as store:
        store.save("a", "alpha")
        assert store.get("a") is not None
        assert store.vector_status()["without_vector"] == 1
        assert store.embedding is not None
        assert "URLError" in (store.embedding.last_error or "")


def test_hashing_is_deterministic() -> None:
    one, two = HashingEmbedder(32), HashingEmbedder(32)
    assert one.embed(["tests failing"]) == two.embed(["tests failing"])
    assert one.embed(["tests"]) == one.embed(["testing"])  # §15.1 stems
    assert embedders.resolve("hashing:16").dims == 16


def test_settings_that_name_nothing_usable_are_refused() -> None:
    for setting in ("nope", "hashing:x", "membolt:nothing_here", "openai:ftp://x#m"):
        with pytest.raises(embedders.EmbedderSettingError):
            embedders.resolve(setting)
    with pytest.raises(TypeError):
        check_embedder(object())
    with pytest.raises(ValueError, match="dims"):
        Embedding(type("E", (), {"name": "e", "dims": 0, "embed": lambda s, t: t})())


def test_commands_read_the_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMBOLT_EMBEDDER", "support.embedders:topics")
    store = membolt.store.open_store(cwd=tmp_path)
    assert isinstance(store.embedder, TopicEmbedder)
    store.close()
    # A class is made with no arguments; an object is used as it is.
    assert isinstance(embedders.resolve("support.embedders:TopicEmbedder"), TopicEmbedder)
    assert embedders.resolve("support.embedders:READY").name == "ready-topics"
    # A setting naming nothing usable: the store opens without an embedder.
    monkeypatch.setenv("MEMBOLT_EMBEDDER", "missing_module_xyz:thing")
    with membolt.store.open_store(cwd=tmp_path) as plain:
        assert plain.embedder is None
    assert "no embedder" in capsys.readouterr().err


def test_a_model2vec_model_on_disk(tmp_path: Path, store_path: Path) -> None:
    pytest.importorskip("model2vec")
    np = pytest.importorskip("numpy")
    tokenizers = pytest.importorskip("tokenizers")
    from safetensors.numpy import save_file

    words = ["[UNK]", "[PAD]", "linker", "fails", "broke", "pizza", "friday", "lunch", "food"]
    vocab = {word: i for i, word in enumerate(words)}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = tokenizers.normalizers.Lowercase()
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    model = tmp_path / "tiny-static"
    model.mkdir()
    tokenizer.save(str(model / "tokenizer.json"))
    table = np.zeros((len(words), 4), dtype=np.float32)
    table[2:5, 0] = 1.0  # breaking
    table[5:9, 1] = 1.0  # food
    table[0, 3] = 0.1
    save_file({"embeddings": table}, str(model / "model.safetensors"))
    (model / "config.json").write_text(json.dumps({"normalize": True}))
    embedder = embedders.resolve(f"model2vec:{model}")
    assert (embedder.name, embedder.dims) == ("model2vec:tiny-static", 4)
    with membolt.MemoryStore(store_path, embedder=embedder) as store:
        store.save("error:ci", "linker fails")
        store.save("note:lunch", "pizza friday")
        assert store.search_words("what broke", limit=1)[0].key == "error:ci"
        assert store.search_words("food", limit=1)[0].key == "note:lunch"
