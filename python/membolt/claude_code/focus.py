"""Whether any entry matches a prompt under the §5.6 focus rule.

The ``UserPromptSubmit`` hook adds a focused ``<memory>`` block only when
the prompt is about something memory holds. The renderer does not say
whether it found focus matches, so this module answers the question with
the store's public search:

- the significant words of the prompt (§5.6): ``lower(prompt)`` split on
  Unicode whitespace, each trimmed of ``.,!?;:"'()[]{}<>``, at least 3 bytes,
  not a stopword;
- an entry matches a word when a word token (a run of ``[a-z0-9]``) of its
  lowered key or value starts with it. Only a word made of ``[a-z0-9]`` can
  start a token, so the other words are dropped at once;
- such an entry contains the word as a case-insensitive substring, so
  ``store.search(word)`` (Rust, indexed) returns every candidate, and each is
  checked for a token that starts with the word.

The word rule mirrors the Rust renderer's (``focus_words`` in
``rust/text.rs``); a test compares the two on generated stores.
"""

from __future__ import annotations

from typing import Final

from .._core import Store

#: §5.6: characters trimmed from both ends of each word.
TRIM_CHARS: Final = ".,!?;:\"'()[]{}<>"
#: §5.6: the stopwords.
STOPWORDS: Final = frozenset(
    {
        "this", "that", "with", "from", "have", "what", "when", "where", "which", "would",
        "could", "should", "about", "your", "please", "into", "then", "the", "and", "for",
        "are", "was", "you", "can", "how", "why", "who", "has", "had", "but", "not", "its",
        "out", "all", "any", "one", "two", "now", "see", "off", "per", "via", "let", "did",
        "our", "yes", "too",
    }
)  # fmt: skip
MIN_WORD_BYTES: Final = 3
# Python's str.split() also splits on U+001C-U+001F, which are not
# whitespace for §5.6: a word holding one of them is kept whole there, and
# can then match nothing. Replacing them with a character that is neither
# whitespace nor a token character keeps such a word whole, and unmatched.
_NOT_WHITESPACE: Final = str.maketrans(dict.fromkeys("\x1c\x1d\x1e\x1f", "\x00"))


def matchable_words(prompt: str) -> list[str]:
    """The distinct significant words of ``prompt`` that can start a word
    token, in order of first appearance."""
    words: dict[str, None] = {}
    for raw in prompt.lower().translate(_NOT_WHITESPACE).split():
        word = raw.strip(TRIM_CHARS)
        if len(word) >= MIN_WORD_BYTES and word not in STOPWORDS and _is_token(word):
            words.setdefault(word)
    return list(words)


def _is_token(text: str) -> bool:
    """Whether ``text`` is made of token characters, ``[a-z0-9]`` (it is lowered)."""
    return text.isascii() and text.isalnum()


def starts_a_token(text: str, word: str) -> bool:
    """Whether a word token of ``text`` (lowered) starts with ``word`` (a
    token itself): ``word`` occurs where no token character precedes it."""
    at = text.find(word)
    while at != -1:
        if at == 0 or not _is_token(text[at - 1]):
            return True
        at = text.find(word, at + 1)
    return False


def any_entry_matches(store: Store, prompt: str) -> bool:
    """Whether some entry of ``store`` matches a significant word of ``prompt``."""
    for word in matchable_words(prompt):
        for entry in store.search(word):
            if starts_a_token(entry.key.lower(), word) or starts_a_token(entry.value.lower(), word):
                return True
    return False
