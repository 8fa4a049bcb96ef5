"""What a turn leaves: the last action, and the last three turns (§13.1).

``last_action`` comes from Claude's reply at ``Stop``, not from tool output:
the reply's first sentence, when it starts (after an optional ``I ``) with
an action verb of §6.3 followed by more text. The verb is kept and
capitalised (``I fixed add() in src/calc.py.`` gives ``Fixed add() in
src/calc.py``), the §6.3 trailing characters are removed, and the value is
cut to 200 bytes (§6.8). A reply that starts otherwise leaves the last
action as it was.

A sentence ends at ``.``, ``!`` or ``?`` followed by whitespace, or at the
end of a line; markdown list and emphasis marks before the first word, and
bold marks anywhere in it, are passed over.

The turn record ``turn:last`` (§6.10) is kept with the two before it,
``turn:prev-1`` and ``turn:prev-2``: before a new ``turn:last`` is saved,
``turn:last`` becomes ``turn:prev-1`` and ``turn:prev-1`` becomes
``turn:prev-2``, each keeping its time (an older turn is no newer for being
moved), so that the newest-first fill of the block (§5.2) reaches what the
last turn did before the turns before it. A turn record already held by
one of the three is not saved again (a spooled event applied twice changes
nothing).
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Final

from .._core import Entry, truncate
from ..extract import ACTION_TRAILING_CHARS, ACTION_VERBS, trim

LAST_ACTION_KEY: Final = "last_action"
ACTION_BYTES: Final = 200
TURN_KEYS: Final = ("turn:last", "turn:prev-1", "turn:prev-2")

_VERBS: Final = "|".join(ACTION_VERBS)
# "I " is matched as written; the verb in any letter case, as a whole word.
_ACTION: Final = re.compile(rf"^(?:I\s+)?(?i:(?P<verb>{_VERBS}))\s+(?P<rest>\S.*)$", re.DOTALL)
_SENTENCE_END: Final = re.compile(r"[.!?](?=\s|$)|\n")
_LEADING_MARKS: Final = "*_#>-` \t\r\n"


def action_sentence(reply: str) -> str | None:
    """``last_action`` for a reply, or None when its first sentence does not
    start with an action verb."""
    text = reply.lstrip(_LEADING_MARKS)
    end = _SENTENCE_END.search(text)
    sentence = trim((text[: end.start()] if end else text).replace("**", ""))
    match = _ACTION.match(sentence)
    if match is None:
        return None
    rest = trim(match["rest"]).rstrip(ACTION_TRAILING_CHARS)
    if not rest:
        return None
    return truncate(f"{match['verb'].capitalize()} {rest}", ACTION_BYTES)


def rotated_turns(record_value: str, held: dict[str, Entry]) -> list[Entry] | None:
    """The entries that move ``turn:last`` and ``turn:prev-1`` one place back
    (their stamps kept), given the three turn entries ``held`` (by key); None
    when ``record_value`` is already one of them."""
    if any(entry.value == record_value for entry in held.values()):
        return None
    moved = []
    for source, target in pairwise(TURN_KEYS):
        entry = held.get(source)
        if entry is not None:
            data = entry.to_dict()
            data["key"] = target
            data["references"] = [r for r in entry.references if r != target]
            moved.append(Entry.from_dict(data))
    return moved
