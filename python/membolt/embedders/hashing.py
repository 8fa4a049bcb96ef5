"""A deterministic embedder for tests: feature hashing of the §15.1 terms.

Each term adds ±1 to one of ``dims`` slots chosen by a stable hash (BLAKE2b
of the term), so equal texts get equal vectors on every machine and texts
sharing terms point the same way. It knows no meanings ("broke" and
"fails" are unrelated to it), so it is for testing the machinery, not for
recall.
"""

from __future__ import annotations

import hashlib

from .. import _core


class HashingEmbedder:
    def __init__(self, dims: int = 64) -> None:
        if not 1 <= dims <= 16_384:
            raise ValueError(f"dims must be 1 to 16384, not {dims}")
        self.dims = dims
        self.name = f"hashing:{dims}"

    def vector(self, text: str) -> list[float]:
        out = [0.0] * self.dims
        for term in _core.terms(text):
            digest = hashlib.blake2b(term.encode(), digest_size=8).digest()
            number = int.from_bytes(digest, "little")
            out[number % self.dims] += 1.0 if number >> 63 else -1.0
        return out

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(text) for text in texts]
