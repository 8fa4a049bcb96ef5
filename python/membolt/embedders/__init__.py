"""Ready embedders for recall by meaning (§15.4), and the setting that
names one (``--embedder NAME`` / ``$MEMBOLT_EMBEDDER``):

=============================  ==================================================
``model2vec:PATH_OR_ID``       a static model2vec model on CPU (the ``model2vec``
                               extra); a local directory needs no network
``openai:URL#MODEL``           any OpenAI-compatible ``/embeddings`` endpoint
                               (stdlib HTTP; key from ``$MEMBOLT_EMBEDDER_API_KEY``
                               or ``$OPENAI_API_KEY``)
``hashing:DIMS``               feature hashing of the words: deterministic and
                               free, for tests; it knows no meanings
``module:attr``                your own object (or a class or function called
                               with no arguments to make one)
=============================  ==================================================
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Final

from ..embedding import Embedder, check_embedder

#: The setting commands, the MCP server and the hooks read.
EMBEDDER_VARIABLE: Final = "MEMBOLT_EMBEDDER"


class EmbedderSettingError(ValueError):
    """A setting names no usable embedder."""


def resolve(setting: str) -> Embedder:
    """The embedder a setting names (see the module's table); raises
    :class:`EmbedderSettingError` saying why not."""
    scheme, _, rest = setting.partition(":")
    if not rest:
        raise EmbedderSettingError(
            f"{setting!r} names no embedder: use model2vec:PATH, openai:URL#MODEL, "
            "hashing:DIMS or module:attr"
        )
    try:
        if scheme == "model2vec":
            from .model2vec import Model2VecEmbedder

            embedder: object = Model2VecEmbedder(rest)
        elif scheme == "openai":
            from .openai import OpenAIEmbedder

            url, _, model = rest.partition("#")
            embedder = OpenAIEmbedder(url, model)
        elif scheme == "hashing":
            from .hashing import HashingEmbedder

            embedder = HashingEmbedder(int(rest))
        else:
            found = getattr(importlib.import_module(scheme), rest)
            # A class, or a function making one, is called; an object is used.
            made = isinstance(found, type) or not hasattr(found, "embed")
            embedder = found() if made else found
        check_embedder(embedder)
    except EmbedderSettingError:
        raise
    except Exception as error:
        raise EmbedderSettingError(
            f"embedder {setting!r}: {type(error).__name__}: {error}"
        ) from error
    return embedder  # type: ignore[return-value]


#: Embedders made from settings, once per process (a model loads once).
_chosen: dict[str, Embedder | None] = {}


def choose(embedder: Embedder | str | None) -> Embedder | None:
    """What ``open_store`` uses: ``embedder`` itself, the one a setting
    names, or (``None``) the one ``$MEMBOLT_EMBEDDER`` names; each setting
    made once per process. A setting that names no usable embedder is
    reported on stderr and answered with ``None``: memory never depends on
    a model."""
    if embedder is not None and not isinstance(embedder, str):
        return embedder
    setting = embedder if embedder is not None else os.environ.get(EMBEDDER_VARIABLE)
    if not setting:
        return None
    if setting not in _chosen:
        try:
            _chosen[setting] = resolve(setting)
        except EmbedderSettingError as error:
            print(f"membolt: no embedder: {error}", file=sys.stderr)
            _chosen[setting] = None
    return _chosen[setting]


def from_environment() -> Embedder | None:
    """The embedder ``$MEMBOLT_EMBEDDER`` names, ``None`` when it is unset."""
    setting = os.environ.get(EMBEDDER_VARIABLE)
    return resolve(setting) if setting else None


__all__ = ["EMBEDDER_VARIABLE", "EmbedderSettingError", "choose", "from_environment", "resolve"]
