"""The names the five memory tools answer to (§4): one table for the
dispatcher (``tools.py``), which defines each tool under its name, and for
the extraction rules (``extract.py``), which never capture a memory tool's
own result. A test pins these names to the tools ``tools.py`` defines.

A leaf module: the extraction heuristics import it without importing the
tools (and through them the store).
"""

from __future__ import annotations

from typing import Final

#: The tools, in the order their schemas are exported.
TOOL_NAMES: Final = (
    "memory_save",
    "memory_search",
    "memory_delete",
    "memory_list",
    "memory_query",
)
#: Other names a model may call them by.
ALIASES: Final[dict[str, str]] = {
    "remember": "memory_save",
    "memorize": "memory_save",
    "recall": "memory_search",
    "forget": "memory_delete",
}
#: Every name of a memory tool, aliases included.
MEMORY_TOOLS: Final = frozenset(TOOL_NAMES) | frozenset(ALIASES)
