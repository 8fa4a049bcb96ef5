"""Any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, Azure, vLLM,
Ollama, llama.cpp's server, LM Studio, text-embeddings-inference …), over
the standard library's HTTP client.

``OpenAIEmbedder("http://localhost:8080/v1", "nomic-embed-text")`` posts
``{"model": ..., "input": [texts]}`` to ``URL/embeddings`` and reads
``data[i].embedding`` in ``index`` order. The key is sent as a bearer token
when given (default ``$MEMBOLT_EMBEDDER_API_KEY``, else
``$OPENAI_API_KEY``). ``dims`` is asked of the endpoint once, by embedding
one word, unless given; ``dimensions`` is sent only when asked for.
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

KEY_VARIABLES = ("MEMBOLT_EMBEDDER_API_KEY", "OPENAI_API_KEY")


class OpenAIEmbedder:
    def __init__(
        self,
        url: str,
        model: str,
        *,
        dims: int | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        send_dimensions: bool = False,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"an embeddings URL starts with http:// or https://, not {url!r}")
        if not model:
            raise ValueError("name the model: openai:URL#MODEL")
        self.url = url.rstrip("/") + "/embeddings"
        self.model = model
        self.name = f"openai:{model}" if dims is None else f"openai:{model}:{dims}"
        self.api_key = api_key or next(
            (os.environ[v] for v in KEY_VARIABLES if os.environ.get(v)), None
        )
        self.timeout = timeout
        self.send_dimensions = send_dimensions and dims is not None
        self._dims = dims

    @property
    def dims(self) -> int:
        if self._dims is None:
            self._dims = len(self._post(["dims"])[0])
        return self._dims

    def _post(self, texts: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": texts}
        if self.send_dimensions:
            body["dimensions"] = self._dims
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            answer = json.load(response)
        data = sorted(answer["data"], key=lambda item: item.get("index", 0))
        return [item["embedding"] for item in data]

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._post(texts)
