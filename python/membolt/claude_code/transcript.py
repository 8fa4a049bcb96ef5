"""The last assistant message of a session, read from its transcript.

``Stop`` payloads carry ``last_assistant_message`` since Claude Code 2.1.47;
for older versions the hook falls back to the session's transcript (JSON
lines, one per message part). The reply of the turn is the run of
``assistant`` lines at the end that share one message id, each holding some
content blocks; its text is the ``text`` blocks of that run, in order. Only
the last :data:`TAIL_BYTES` of the file are read: a long session's
transcript runs to megabytes, and the reply is at its end.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Final

TAIL_BYTES: Final = 4 * 1024 * 1024


def last_assistant_text(path: str) -> str | None:
    """The text of the last assistant reply in the transcript at ``path``;
    None when the file cannot be read or ends with no such reply."""
    try:
        with open(path, "rb") as transcript:
            size = transcript.seek(0, os.SEEK_END)
            transcript.seek(max(0, size - TAIL_BYTES))
            tail = transcript.read()
    except OSError:
        return None
    if size > TAIL_BYTES:
        tail = tail.partition(b"\n")[2]  # the first line is cut
    texts: list[str] = []
    message_id: object = None
    found = False
    for line in reversed(tail.splitlines()):
        record = _record(line)
        if record is None:
            continue
        kind = record.get("type")
        message = record.get("message")
        if kind != "assistant" or not isinstance(message, Mapping):
            if found and kind == "user":
                break  # the prompt or a tool result: the reply began after it
            continue
        if found and message.get("id") != message_id:
            break
        found, message_id = True, message.get("id")
        texts[:0] = _text_blocks(message.get("content"))
    return "\n".join(texts) if found and texts else None


def _record(line: bytes) -> Mapping[str, object] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, Mapping) else None


def _text_blocks(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, Mapping)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
