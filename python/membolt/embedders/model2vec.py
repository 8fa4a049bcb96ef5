"""A static model2vec model (e.g. Minish Lab's potion models): a token
embedding table averaged per text, on CPU, with no network once the model
is on disk. Needs the ``model2vec`` extra (``pip install
'membolt[model2vec]'``).

``Model2VecEmbedder("/path/to/potion-base-8M")`` loads a local directory;
a Hugging Face id is fetched (and cached) by model2vec itself the first
time, which needs the network. The vectors are tagged
``model2vec:<the directory's or id's last part>``, so the same model under
another path on another machine reuses them.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any


class Model2VecEmbedder:
    def __init__(self, path_or_id: str) -> None:
        try:
            from model2vec import StaticModel
        except ImportError as error:
            raise ImportError(
                "the model2vec embedder needs the model2vec package: "
                "pip install 'membolt[model2vec]'"
            ) from error
        self.model = StaticModel.from_pretrained(path_or_id)
        self.name = f"model2vec:{PurePath(path_or_id.rstrip('/')).name}"
        self.dims = int(self.model.dim)

    def embed(self, texts: list[str]) -> Any:
        return self.model.encode(texts)
