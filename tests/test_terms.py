"""§15.1: the terms of a text, as the ranked search sees them.

``membolt._core.terms`` is the one implementation (Rust); these tests pin
its rules from the outside: the pieces a key is cut into, UAX #29 words,
lowering in every script, CJK pairs, and Snowball stems, checked against
the ``snowballstemmer`` package (the same Porter2 algorithm, another
implementation) on every English word of a real text.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
import snowballstemmer
from hypothesis import given
from hypothesis import strategies as st

from membolt import MemoryStore, _core

ENGLISH = snowballstemmer.stemmer("english")


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("error:ciRun", ["error", "ci", "run"]),
        ("HTTPServer", ["httpserver"]),
        ("users.go", ["user", "go"]),
        ("tool:Bash:pytest-q_x/y", ["tool", "bash", "pytest", "q", "x", "y"]),
        ("parseJSONValue", ["pars", "jsonvalu"]),
        ("v2Api", ["v2", "api"]),
        ("3.14", ["3", "14"]),
    ],
)
def test_keys_are_cut_at_separators_and_case_changes(text: str, terms: list[str]) -> None:
    assert _core.terms(text) == terms


def test_words_follow_uax29() -> None:
    assert _core.terms("don't stop") == ["don't", "stop"]
    assert _core.terms("1,000 and 2;3 a,b") == ["1,000", "and", "2;3", "a", "b"]
    assert _core.terms("  ¡¿ -- !! ") == []
    assert _core.terms("e-mail e.g. a/b") == ["e", "mail", "e", "g", "a", "b"]


def test_every_script_is_lowered_and_searchable() -> None:
    assert _core.terms("ÉCOLE Straße ΣΟΦΊΑ Москва") == ["école", "straße", "σοφία", "москва"]
    # Non-ASCII words are not stemmed: "écoles" stays itself.
    assert _core.terms("écoles") == ["écoles"]
    assert _core.terms("עברית العربية हिन्दी") == ["עברית", "العربية", "हिन्दी"]


def test_cjk_runs_become_overlapping_pairs() -> None:
    assert _core.terms("東京で会議") == ["東京", "京で", "で会", "会議"]
    assert _core.terms("会") == ["会"]
    assert _core.terms("서울에서 회의") == ["서울", "울에", "에서", "회의"]
    assert _core.terms("ビルドが失敗") == ["ビル", "ルド", "ドが", "が失", "失敗"]
    assert _core.terms("deploy東京v2") == ["deploy", "東京", "v2"]


def test_ascii_words_are_snowball_stems() -> None:
    # Every English word of the project's own contract and README.
    root = Path(__file__).resolve().parent.parent
    text = " ".join(
        [(root / "docs" / "behaviour.md").read_text(), (root / "README.md").read_text()]
    )
    words = sorted(set(re.findall(r"\b[a-z]+\b", text.lower())))
    words += ["running", "generously", "skies", "dying", "news", "cats", "fairly", "communism"]
    assert len(words) > 1500
    for word in words:
        assert _core.terms(word) == [ENGLISH.stemWord(word)], word


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=14))
def test_any_ascii_letter_word_stems_as_snowball_does(word: str) -> None:
    assert _core.terms(word) == [ENGLISH.stemWord(word)]


def test_query_terms_drop_stopwords_and_repeats_only() -> None:
    assert _core.query_terms("When did Caroline go to the LGBTQ support group?") == [
        "carolin",
        "go",
        "lgbtq",
        "support",
        "group",
    ]
    assert _core.query_terms("tests testing tested") == ["test"]
    # Stopwords are the words before stemming: "being" is one, "beings" not.
    assert _core.query_terms("being") == []
    assert _core.query_terms("beings") == ["be"]
    # Entries keep every term: a stopword still counts in a document.
    assert _core.terms("the db is up") == ["the", "db", "is", "up"]


def test_stopwords_are_dropped_from_queries_not_from_entries(store: MemoryStore) -> None:
    store.save("note:the-what", "it is what it is")
    store.save("note:other", "the what")
    # A query of stopwords only has no significant term.
    assert store.search_words("what is the") == []
    # The stopwords in an entry still count towards its length: the
    # shorter document ranks first for the same term.
    store.save("a", "deploy")
    store.save("b", "deploy the what is it")
    assert [e.key for e in store.search_words("deploy")] == ["a", "b"]


@given(st.text(max_size=60))
def test_terms_of_any_text_are_nonempty_lowered_and_never_fail(text: str) -> None:
    for term in _core.terms(text):
        assert term
        assert term == term.lower() or not term.isascii()
        assert not any(c in term for c in ":_-/.")


def test_terms_are_deterministic_across_random_text() -> None:
    rng = random.Random(5)
    alphabet = "aZ9 :_-/.'東京ßΣé,;"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert _core.terms(text) == _core.terms(text)
        assert set(_core.query_terms(text)) <= set(_core.terms(text))
