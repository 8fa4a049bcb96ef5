"""Deterministic embedders for the §15.4 tests: one whose meanings are
known (topics), and ones that fail in each way an embedder can."""

from __future__ import annotations

import math
import threading
from typing import Any

from membolt import _core

#: Words of one meaning share an axis; every other word falls on the last.
TOPICS = (
    {"broke", "break", "fail", "fails", "failing", "linker", "crash", "error", "libssl"},
    {"lunch", "pizza", "food", "dinner", "friday"},
    {"deploy", "release", "ship", "rollout", "production"},
)


class TopicEmbedder:
    """Eight dimensions: one per topic, the rest words hashed (by their
    length) on the others; counts what it embeds."""

    def __init__(self, name: str = "topics", dims: int = 8) -> None:
        self.name, self.dims = name, dims
        self.calls = 0
        self.texts = 0

    def vector(self, text: str) -> list[float]:
        out = [0.0] * self.dims
        for word in _core.terms(text):
            axis = next((i for i, words in enumerate(TOPICS) if word in words), None)
            if axis is None:
                out[len(TOPICS) + len(word) % (self.dims - len(TOPICS))] += 0.2
            else:
                out[axis] += 1.0
        return out

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.texts += len(texts)
        return [self.vector(text) for text in texts]


class FailingEmbedder(TopicEmbedder):
    """Fails as ``mode`` says while ``failing`` is set: ``raise``, ``hang``
    (until released), ``short`` (a vector too short), ``nan``, ``inf``,
    ``count`` (one vector too few), ``junk`` (not numbers)."""

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode
        self.failing = True
        self.release = threading.Event()

    def embed(self, texts: list[str]) -> Any:
        good = super().embed(texts)
        if not self.failing:
            return good
        if self.mode == "raise":
            raise RuntimeError("the model server is down")
        if self.mode == "hang":
            self.release.wait(30)
            return good
        if self.mode == "short":
            return [v[:-1] for v in good]
        if self.mode == "nan":
            return [[math.nan, *v[1:]] for v in good]
        if self.mode == "inf":
            return [[math.inf, *v[1:]] for v in good]
        if self.mode == "count":
            return good[:-1]
        if self.mode == "junk":
            return [["x"] * self.dims for _ in good]
        raise AssertionError(self.mode)


def topics() -> TopicEmbedder:
    """For ``module:attr`` settings in child processes."""
    return TopicEmbedder()


#: An embedder object, for ``module:attr`` settings naming one.
READY = TopicEmbedder(name="ready-topics")
