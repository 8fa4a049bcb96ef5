"""§6.7: the caps the extraction hooks apply after each batch, in the same
transaction. They are the hooks' policy, not the store's: the store applies
whatever caps it is handed (``AgentMemory`` hands it these through
``MemoryStore.save_many(items, caps=extraction_caps)``), and a plain
``save_many`` or ``save`` never deletes anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from ._core import Cap
from .classify import THINKING_TYPE
from .keys import tool_key_prefix, tool_of_key

#: At most this many ``tool:<name>:*`` results per tool; the oldest go first.
TOOL_RESULT_CAP: Final = 20
#: At most this many thoughts (type ``thinking``).
THINKING_CAP: Final = 20
#: At most this many low-signal entries, of these types together.
LOW_SIGNAL_CAP: Final = 50
LOW_SIGNAL_TYPES: Final = ("note", "fact")


def extraction_caps(keys: Iterable[str]) -> list[Cap]:
    """The caps for a batch that wrote ``keys``: one per tool whose results
    it holds, then the thinking and low-signal caps (structural types are
    never capped)."""
    tools = sorted({tool for key in keys if (tool := tool_of_key(key)) is not None})
    return [
        *(Cap.keys_under(tool_key_prefix(tool), TOOL_RESULT_CAP) for tool in tools),
        Cap.types([THINKING_TYPE], THINKING_CAP),
        Cap.types(list(LOW_SIGNAL_TYPES), LOW_SIGNAL_CAP),
    ]
