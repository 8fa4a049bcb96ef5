"""The ceiling on the context a hook adds (docs/behaviour.md §15.5).

The entry lines of a block keep their token budget, but the legend, the map
line and the downstream line are not counted in it, and a store can make
those long. Whatever the store holds, a hook adds at most
:data:`MAX_CONTEXT_CHARS` characters: a section that is longer is rendered
again with half the budget (rounded down) until it fits; a section still
too long at a budget of 0 is cut at its last line break before the ceiling.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

#: Most characters of context one hook event adds.
MAX_CONTEXT_CHARS: Final = 10_000


def within_ceiling(render: Callable[[int], str], max_tokens: int) -> str:
    """``render(budget)`` for the largest of ``max_tokens``, its halves and 0
    whose text fits :data:`MAX_CONTEXT_CHARS`; the text at 0 cut at a line
    break when even that does not fit."""
    budget = max_tokens
    while True:
        text = render(budget)
        if len(text) <= MAX_CONTEXT_CHARS:
            return text
        if budget <= 0:
            break
        budget //= 2
    # A cut after the last line break that keeps the text under the ceiling;
    # a first line longer than the ceiling is cut at the ceiling itself.
    end = text.rfind("\n", 0, MAX_CONTEXT_CHARS)
    return text[: end if end > 0 else MAX_CONTEXT_CHARS]
