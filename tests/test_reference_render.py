"""Tests of the plain-Python reference renderer (§5, §15.2, §15.5, §11 (a)(b))."""

from __future__ import annotations

import math
import random

import pytest

from support.reference_render import (
    DONE_MARKERS,
    LEGEND,
    NOT_DONE_MARKERS,
    REOPENED_MARKERS,
    RESOLVED_MARKERS,
    WHITESPACE,
    Entry,
    ancestry_chain,
    entry_cost,
    escape_line,
    flatten,
    flatten_plain,
    focus_matches,
    is_done,
    is_resolved,
    marker_hits,
    newest_unresolved_error,
    normalize_value,
    parents_first,
    ranked,
    relative_age,
    render,
    resume_point,
    select_shown,
    split_whitespace,
    trim,
    truncate,
    word_tokens,
)

T0 = 1_700_000_000_000
MINUTE = 60_000
HOUR = 60 * MINUTE
DAY = 24 * HOUR


def note(
    key: str, value: str, at: int, refs: list[str] | None = None, type_: str = "note"
) -> Entry:
    return Entry(key, value, type_, "", list(refs or []), at, at)


def entry_lines(block: str) -> list[str]:
    """The entry lines of a block (without tags, legend, map, downstream)."""
    lines = block.split("\n")
    assert lines[0] == "<memory>"
    assert lines[1] == LEGEND
    assert lines[2].startswith("map: ")
    assert lines[-1] == "</memory>"
    return [line for line in lines[3:-1] if not line.startswith("downstream of ")]


def rendered_keys(block: str) -> list[str]:
    return [line.split(" [", 1)[0].split(": ", 1)[0] for line in entry_lines(block)]


# ---------------------------------------------------------------------------
# §11 golden examples, byte for byte
# ---------------------------------------------------------------------------

# (a) Three saves 2 ms apart. References as the §3 auto-parent rules give them:
# prompt -> no wanted parent type and an empty store -> no parent;
# tool_result -> wants `progress`, none -> newest of any type = prompt:build;
# result -> wants `tool_result` -> tool:write_users.
GOLDEN_A_ENTRIES = [
    Entry("prompt:build", "Add /users endpoint", "prompt", "", [], T0, T0),
    Entry(
        "tool:write_users",
        "wrote handlers/users.go",
        "tool_result",
        "",
        ["prompt:build"],
        T0 + 2,
        T0 + 2,
    ),
    Entry(
        "result:build",
        "compiles; tests pending",
        "result",
        "",
        ["tool:write_users"],
        T0 + 4,
        T0 + 4,
    ),
]

# (b) Then, 2 ms apart again: status -> wants `result` -> result:build;
# error -> wants `tool_result` -> tool:write_users.
GOLDEN_B_ENTRIES = [
    *GOLDEN_A_ENTRIES,
    Entry("status:ci", "waiting on CI", "status", "", ["result:build"], T0 + 6, T0 + 6),
    Entry(
        "error:migration",
        "migrate step 3 panics on nil column",
        "error",
        "",
        ["tool:write_users"],
        T0 + 8,
        T0 + 8,
    ),
]

# The expected blocks, copied from §11; long lines are split only to fit the
# source line length (adjacent string literals are joined).
LEGEND_LINE = (
    'Legend: workflow chain, parents before children. "key [type]: value"; '
    '"<- P" = derived from P; "(same as K)" = repeats K\'s fact; '
    '"<== RESUME" = continue here.'
)

GOLDEN_A_LINES = [
    "<memory>",
    LEGEND_LINE,
    "map: 1 prompt, 1 tool_result, 1 result | resume: result:build (2m ago)",
    "prompt:build [prompt]: Add /users endpoint",
    "tool:write_users [tool_result]: wrote handlers/users.go  <- prompt:build",
    "result:build [result]: compiles; tests pending  <- tool:write_users  <== RESUME",
    "</memory>",
]
GOLDEN_A = "\n".join(GOLDEN_A_LINES)

GOLDEN_B_LINES = [
    "<memory>",
    LEGEND_LINE,
    (
        "map: 1 prompt, 1 tool_result, 1 error, 1 result, 1 status"
        " | resume: status:ci (1m ago) | error: error:migration"
    ),
    "prompt:build [prompt]: Add /users endpoint",
    "tool:write_users [tool_result]: wrote handlers/users.go  <- prompt:build",
    "error:migration [error]: migrate step 3 panics on nil column  <- tool:write_users",
    "result:build [result]: compiles; tests pending  <- tool:write_users",
    "status:ci [status]: waiting on CI  <- result:build  <== RESUME",
    "</memory>",
]
GOLDEN_B = "\n".join(GOLDEN_B_LINES)


def test_golden_a() -> None:
    # Clock pinned to 2 minutes after the last save.
    assert render(GOLDEN_A_ENTRIES, "", 500, T0 + 4 + 2 * MINUTE) == GOLDEN_A


def test_golden_b() -> None:
    # Clock 1 minute after status:ci.
    assert render(GOLDEN_B_ENTRIES, "", 500, T0 + 6 + MINUTE) == GOLDEN_B


def test_golden_is_independent_of_input_order() -> None:
    shuffled = list(GOLDEN_B_ENTRIES)
    random.Random(7).shuffle(shuffled)
    assert render(shuffled, "", 500, T0 + 6 + MINUTE) == GOLDEN_B


def test_legend_is_exact() -> None:
    assert GOLDEN_A.split("\n")[1] == LEGEND
    assert len(LEGEND.encode("utf-8")) == 158


# ---------------------------------------------------------------------------
# Block shape
# ---------------------------------------------------------------------------


def test_empty_store_renders_nothing() -> None:
    assert render([], "anything", 500, T0) == ""
    assert render([], "", 0, T0) == ""


def test_no_trailing_newline() -> None:
    block = render([note("a", "b", T0)], "", 500, T0)
    assert block.endswith("</memory>")
    assert not block.endswith("\n")


def test_store_without_resume_or_error() -> None:
    block = render([note("a", "hello", T0)], "", 500, T0)
    assert block == f"<memory>\n{LEGEND}\nmap: 1 note\na [note]: hello\n</memory>"


def test_duplicate_keys_are_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate key"):
        render([note("a", "1", T0), note("a", "2", T0 + 1)], "", 500, T0)


# ---------------------------------------------------------------------------
# §5.1 / §5.2 budget
# ---------------------------------------------------------------------------


def test_entry_cost_uses_raw_utf8_bytes() -> None:
    assert entry_cost(note("k", "v", T0)) == 32
    assert entry_cost(note("世", "<&>", T0)) == 3 + 3 + 30
    assert entry_cost(note("k", "a\nb", T0)) == 1 + 3 + 30


def kept(entries: list[Entry], max_tokens: int, anchors: list[Entry] | None = None) -> set[str]:
    """The keys a block of ``max_tokens`` shows (resume point from ``entries``)."""
    resume = resume_point(entries)
    anchors = anchors if anchors is not None else [a for a in [resume] if a is not None]
    return set(select_shown(entries, anchors, resume, max_tokens))


def test_skip_not_stop() -> None:
    # Budget 100 bytes. newest (cost 40) fits, middle (cost 80) does not,
    # oldest (cost 40) still fits after the skip.
    entries = [
        note("newest", "x" * 4, T0 + 3),  # 6 + 4 + 30 = 40
        note("middle", "x" * 44, T0 + 2),  # 6 + 44 + 30 = 80
        note("oldest", "x" * 4, T0 + 1),  # 40
    ]
    block = render(entries, "", 25, T0)
    assert sorted(rendered_keys(block)) == ["newest", "oldest"]
    assert kept(entries, 25) == {"newest", "oldest"}


def test_exact_fit_is_kept() -> None:
    entries = [note("a", "x" * 9, T0 + 2), note("b", "x" * 9, T0 + 1)]  # cost 40 each
    assert kept(entries, 20) == {"a", "b"}  # budget 80: 40 + 40 fits exactly
    assert kept(entries, 19) == {"a"}  # budget 76


def test_no_candidate_is_kept_past_the_budget() -> None:
    # §15.5: the newest candidate is no longer kept whatever it costs; a
    # smaller, older one that fits is.
    entries = [note("big", "x" * 1000, T0 + 2), note("small", "s", T0 + 1)]
    assert kept(entries, 10) == {"small"}
    assert rendered_keys(render(entries, "", 10, T0)) == ["small"]


def test_nothing_fits_shows_the_newest_alone_cut_to_200_bytes() -> None:
    entries = [note("big", "x" * 1000, T0 + 2), note("bigger", "y" * 2000, T0 + 1)]
    assert select_shown(entries, [], None, 10) == {"big": "x" * 200 + "..."}
    block = render(entries, "", 10, T0)
    assert entry_lines(block) == ["big [note]: " + "x" * 200 + "..."]


def test_max_tokens_zero_or_negative_shows_the_newest_alone() -> None:
    entries = [note("a", "1", T0 + 1), note("b", "2", T0 + 2), note("c", "3", T0)]
    for max_tokens in (0, -1, -500):
        assert rendered_keys(render(entries, "", max_tokens, T0)) == ["b"]


def test_max_tokens_zero_shows_the_resume_point_alone() -> None:
    entries = [
        note("p", "goal", T0, type_="prompt"),
        note("r", "working on it " + "w" * 300, T0 + 1, ["p"], type_="progress"),
        note("z", "unrelated newest", T0 + 5),
    ]
    for max_tokens in (0, -3):
        block = render(entries, "", max_tokens, T0)
        assert rendered_keys(block) == ["r"]
        assert entry_lines(block)[0].endswith(
            truncate("working on it " + "w" * 300, 200) + "  <== RESUME"
        )


def test_priority_entries_are_cut_to_the_budget() -> None:
    # The resume point (5,000 bytes) is cut to what a 100-token budget
    # leaves: 400 - 1 (key) - 30 - 3 = 366 bytes of value, then "...".
    entries = [
        note("p", "x" * 5000, T0, type_="prompt"),
        note("r", "y" * 5000 + " pending", T0 + 1, ["p"], type_="result"),
        note("n", "small", T0 + 2),
    ]
    shown = select_shown(entries, [entries[1]], entries[1], 100)
    assert shown == {"r": "y" * 366 + "..."}
    block = render(entries, "", 100, T0)
    assert rendered_keys(block) == ["r"]


def test_a_priority_entry_is_cut_only_with_80_bytes_left_for_its_value() -> None:
    # Budget 200: the anchor takes 1 + 100 + 30 = 131; 69 are left. The
    # parent would need 1 + 30 + 3 + 80 = 114 to be cut: left out. The small
    # newest entry (cost 36) still fits.
    parent = note("p", "x" * 500, T0, type_="prompt")
    anchor = note("r", "y" * 92 + " pending", T0 + 1, ["p"], type_="progress")
    small = note("n", "tiny!", T0 + 2)
    assert kept([parent, anchor, small], 50) == {"r", "n"}
    # Budget 300: 169 left, 169 - 34 = 135 >= 80: the parent is cut to 135.
    shown = select_shown([parent, anchor, small], [anchor], anchor, 75)
    assert shown["p"] == "x" * 135 + "..."
    assert "n" not in shown


def test_priority_costs_use_up_the_budget() -> None:
    # Priority chain costs 1 + 9 + 30 = 40 (p) and 1 + 9 + 30 = 40 (r) = 80.
    entries = [
        note("p", "x" * 9, T0, type_="prompt"),
        note("r", "pending x", T0 + 1, ["p"], type_="progress"),
        note("n", "x" * 9, T0 + 2),  # cost 40
    ]
    assert kept(entries, 30) == {"n", "p", "r"}  # 120 - 80 = 40: fits
    assert "n" in rendered_keys(render(entries, "", 30, T0))
    assert kept(entries, 29) == {"p", "r"}  # 116 - 80 = 36 < 40
    assert "n" not in rendered_keys(render(entries, "", 29, T0))


def test_chains_are_offered_round_by_round() -> None:
    # Two anchors with chains a1 <- a2 <- a3 and b1 <- b2 <- b3 (cost 40
    # each); a budget of six entries takes both anchors, then a2, b2, then
    # a3, b3: not all of the first chain before the second.
    entries = [
        note("a3", "x" * 8, T0),
        note("a2", "x" * 8, T0 + 1, ["a3"]),
        note("a1", "pending", T0 + 20, ["a2"], type_="progress"),
        note("b3", "x" * 8, T0 + 3),
        note("b2", "x" * 8, T0 + 4, ["b3"]),
        note("b1", "boom boom", T0 + 5, ["b2"], type_="error"),
    ]
    a1, b1 = entries[2], entries[5]
    assert set(select_shown(entries, [a1, b1], a1, 40)) == {"a1", "b1", "a2", "b2"}
    shown = select_shown(entries, [a1, b1], a1, 50)
    assert set(shown) == {"a1", "b1", "a2", "b2", "a3"}


def test_the_entry_lines_never_exceed_the_budget_on_long_chains() -> None:
    entries = [note("t000", "turn zero " * 20, T0, type_="prompt")]
    for i in range(1, 300):
        entries.append(
            note(f"t{i:03}", f"turn {i} about deploy " * 10, T0 + i, [f"t{i - 1:03}"], type_="note")
        )
    entries.append(note("progress:now", "deploying, pending", T0 + 400, ["t299"], type_="progress"))
    for max_tokens in (50, 100, 200, 500, 2000):
        block = render(entries, "deploy turn", max_tokens, T0 + 500)
        shown = select_shown(
            entries,
            [resume_point(entries), *focus_matches(entries, "deploy turn")],
            resume_point(entries),
            max_tokens,
        )
        cost = sum(len(k.encode()) + len(v.encode()) + 30 for k, v in shown.items())
        assert cost <= max_tokens * 4, max_tokens
        assert len(rendered_keys(block)) == len(shown)
        for key, value in shown.items():
            raw = next(e.value for e in entries if e.key == key)
            assert value == raw or value.endswith("...")


def test_candidates_newest_first_ties_smaller_key_first() -> None:
    # Same updated_at: the smaller key is considered first and takes the budget.
    entries = [note("b", "x" * 9, T0), note("a", "x" * 9, T0)]  # cost 40 each
    assert kept(entries, 10) == {"a"}
    entries = [note("b", "x" * 9, T0 + 1), note("a", "x" * 9, T0)]
    assert kept(entries, 10) == {"b"}


# ---------------------------------------------------------------------------
# §5.2.1 resume point, §5.2.2 error
# ---------------------------------------------------------------------------


def test_resume_point_rules() -> None:
    entries = [
        note("p1", "still pending", T0 + 5, type_="progress"),
        note("r1", "all done", T0 + 9, type_="result"),  # done: not a candidate
        note("x", "pending", T0 + 10, type_="note"),  # wrong type
        note("e", "pending", T0 + 11, type_="error"),  # wrong type
    ]
    resume = resume_point(entries)
    assert resume is not None
    assert resume.key == "p1"
    assert resume_point([note("d", "done", T0, type_="status")]) is None
    assert resume_point([]) is None


def test_resume_ties_by_type_rank_then_smaller_key() -> None:
    tied = [
        note("a", "x", T0, type_="result"),
        note("b", "x", T0, type_="status"),
        note("c", "x", T0, type_="progress"),
        note("d", "x", T0, type_="progress"),
    ]
    resume = resume_point(tied)
    assert resume is not None
    assert resume.key == "c"
    resume = resume_point(tied[:2])
    assert resume is not None
    assert resume.key == "b"
    resume = resume_point([note("z", "x", T0, type_="status"), note("y", "x", T0, type_="status")])
    assert resume is not None
    assert resume.key == "y"
    # A newer entry wins over rank.
    resume = resume_point([note("a", "x", T0 + 1, type_="result"), *tied])
    assert resume is not None
    assert resume.key == "a"


def test_error_rules() -> None:
    entries = [
        note("error:a", "boom", T0, type_="error"),
        note("error:b", "fixed now", T0 + 5, type_="error"),  # resolved
        note("error:c", "not a real error", T0 + 6, type_="note"),  # wrong type
    ]
    error = newest_unresolved_error(entries)
    assert error is not None
    assert error.key == "error:a"
    reopened = note("error:d", "was fixed, reopened", T0 + 7, type_="error")
    error = newest_unresolved_error([*entries, reopened])
    assert error is not None
    assert error.key == "error:d"
    assert newest_unresolved_error([entries[1]]) is None


def test_error_ties_go_to_larger_key() -> None:
    entries = [
        note("error:a", "boom", T0, type_="error"),
        note("error:b", "boom", T0, type_="error"),
    ]
    error = newest_unresolved_error(entries)
    assert error is not None
    assert error.key == "error:b"


def test_error_and_resume_chains_are_priority() -> None:
    entries = [
        note("root", "r" * 200, T0, type_="prompt"),
        note("tool", "t" * 200, T0 + 1, ["root"], type_="tool_result"),
        note("err", "boom " * 40, T0 + 2, ["tool"], type_="error"),
        note("filler", "f" * 10, T0 + 3),
    ]
    # 234 + 234 + 233 bytes: the error and its chain, nothing else.
    block = render(entries, "", 176, T0)
    assert sorted(rendered_keys(block)) == ["err", "root", "tool"]
    assert block.split("\n")[2] == "map: 1 prompt, 1 tool_result, 1 error | error: err"


# ---------------------------------------------------------------------------
# §5.6 focus
# ---------------------------------------------------------------------------


def test_ranked_is_bm25_with_the_key_counted_three_times() -> None:
    entries = [
        note("deploy:a", "x", T0),
        note("n1", "deploy", T0 + 1),
        note("n2", "deploy deploy", T0 + 1),
        note("n4", "unrelated", T0 + 9),
    ]
    scores = {e.key: score for e, score in ranked(entries, "deployed")}
    assert set(scores) == {"deploy:a", "n1", "n2"}
    # n = 4, df = 3: idf = ln(1 + 1.5 / 3.5); lengths 7, 4, 5, 4 (avg 5).
    idf = math.log(1 + 1.5 / 3.5)

    def bm25(tf: int, length: int) -> float:
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / 5))

    assert scores["deploy:a"] == pytest.approx(bm25(3, 7))
    assert scores["n1"] == pytest.approx(bm25(1, 4))
    assert scores["n2"] == pytest.approx(bm25(2, 5))
    assert [e.key for e, _ in ranked(entries, "deployed")] == ["deploy:a", "n2", "n1"]
    assert ranked(entries, "") == []
    assert ranked(entries, "the and") == []


def test_focus_ranking_ties_and_top_five() -> None:
    entries = [
        note("n1", "deploy", T0 + 1),
        note("n2", "deploy", T0 + 2),
        note("n3", "deploy", T0 + 2, type_="decision"),
        note("n0", "deploy", T0 + 2),  # ties n2 on time: smaller key first
        note("n5", "deploy", T0 + 3, type_="fact"),
        note("n6", "deploy", T0, type_="status"),
        note("n4", "unrelated", T0 + 9),
    ]
    # Equal scores: typed entries first, then newest, then smaller key.
    ranked_keys = [e.key for e in focus_matches(entries, "deploy")]
    assert ranked_keys == ["n3", "n6", "n5", "n0", "n2"]
    assert focus_matches(entries, "") == []


def test_focus_matches_and_their_chains_are_kept() -> None:
    entries = [
        note("root", "r" * 300, T0, type_="prompt"),
        note("mid", "m" * 300, T0 + 1, ["root"], type_="decision"),
        note("leaf", "uses redis cache", T0 + 2, ["mid"], type_="decision"),
        note("other", "o" * 10, T0 + 3),
    ]
    # 334 + 334 + 50 bytes: the focus match and its chain.
    block = render(entries, "Why the Redis?", 180, T0)
    assert rendered_keys(block) == ["root", "mid", "leaf"]


# ---------------------------------------------------------------------------
# §5.7 ancestry chain
# ---------------------------------------------------------------------------


def test_ancestry_chain_is_bfs_nearest_first_max_8() -> None:
    by_key = {
        "k": note("k", "", T0, ["a", "b", "gone"]),
        "a": note("a", "", T0, ["c"]),
        "b": note("b", "", T0, ["d", "a"]),
        "c": note("c", "", T0, ["e"]),
        "d": note("d", "", T0, ["k"]),
        "e": note("e", "", T0, ["f"]),
        "f": note("f", "", T0, ["g"]),
        "g": note("g", "", T0, ["h"]),
        "h": note("h", "", T0, ["i"]),
        "i": note("i", "", T0, []),
    }
    assert ancestry_chain("k", by_key) == ["k", "a", "b", "c", "d", "e", "f", "g"]
    assert ancestry_chain("h", by_key) == ["h", "i"]
    assert ancestry_chain("missing", by_key) == []


def test_ancestry_chain_cycle_terminates() -> None:
    by_key = {"a": note("a", "", T0, ["b"]), "b": note("b", "", T0, ["a"])}
    assert ancestry_chain("a", by_key) == ["a", "b"]


def test_long_chain_only_nearest_eight_are_priority() -> None:
    entries = [note("k00", "x" * 100, T0, type_="prompt")]
    for i in range(1, 20):
        entries.append(note(f"k{i:02}", "x" * 100, T0 + i, [f"k{i - 1:02}"], type_="progress"))
    # Only the newest is a resume candidate (all are progress, none done);
    # a budget for nine of them takes its chain of eight, then the newest
    # other entry that fits (the fill walks newest first).
    shown = select_shown(entries, [entries[-1]], entries[-1], 9 * 133 // 4 + 1)
    assert set(shown) == {f"k{i:02}" for i in range(11, 20)}


# ---------------------------------------------------------------------------
# §5.3 order
# ---------------------------------------------------------------------------


def test_parents_first_over_non_kept_entries() -> None:
    by_key = {
        "a": note("a", "", T0, ["x"]),
        "x": note("x", "", T0, ["z"]),  # not kept, walked through
        "z": note("z", "", T0, []),
    }
    assert parents_first({"a", "z"}, by_key) == ["z", "a"]


def test_parents_first_references_in_stored_order() -> None:
    by_key = {
        "a": note("a", "", T0, ["q", "p"]),
        "p": note("p", "", T0, []),
        "q": note("q", "", T0, []),
    }
    assert parents_first({"a", "p", "q"}, by_key) == ["q", "p", "a"]


def test_parents_first_skips_missing_references() -> None:
    by_key = {"a": note("a", "", T0, ["deleted", "b"]), "b": note("b", "", T0, ["gone"])}
    assert parents_first({"a", "b"}, by_key) == ["b", "a"]


def test_parents_first_cycle() -> None:
    # a -> b -> c -> a (each references the next); d -> c.
    by_key = {
        "a": note("a", "", T0, ["b"]),
        "b": note("b", "", T0, ["c"]),
        "c": note("c", "", T0, ["a"]),
        "d": note("d", "", T0, ["c"]),
    }
    # Walk from a: a, b, c; c's reference a is already visited -> emit c, b, a.
    assert parents_first({"a", "b", "c", "d"}, by_key) == ["c", "b", "a", "d"]
    # Starting points are the kept keys in sorted order.
    assert parents_first({"b", "c"}, by_key) == ["c", "b"]
    assert parents_first({"c", "d"}, by_key) == ["c", "d"]


def test_parents_first_self_reference_and_two_cycle() -> None:
    by_key = {"a": note("a", "", T0, ["a", "b"]), "b": note("b", "", T0, ["a"])}
    assert parents_first({"a", "b"}, by_key) == ["b", "a"]


def test_parents_first_diamond() -> None:
    by_key = {
        "child": note("child", "", T0, ["left", "right"]),
        "left": note("left", "", T0, ["top"]),
        "right": note("right", "", T0, ["top"]),
        "top": note("top", "", T0, []),
        "alone": note("alone", "", T0, []),
    }
    kept = set(by_key)
    assert parents_first(kept, by_key) == ["alone", "top", "left", "right", "child"]


def test_parents_first_deep_chain_no_recursion_limit() -> None:
    n = 5000
    by_key = {f"k{i}": note(f"k{i}", "", T0, [f"k{i - 1}"] if i else []) for i in range(n)}
    order = parents_first(set(by_key), by_key)
    assert order == [f"k{i}" for i in range(n)]


def test_render_cycle_terminates_and_shows_rendered_parents() -> None:
    entries = [note("a", "first", T0, ["b"]), note("b", "second", T0 + 1, ["a"])]
    block = render(entries, "", 500, T0)
    assert entry_lines(block) == ["b [note]: second  <- a", "a [note]: first  <- b"]


# ---------------------------------------------------------------------------
# §5.3 format: entry lines, map, duplicates, downstream
# ---------------------------------------------------------------------------


def test_entry_line_parents_only_rendered_in_stored_order() -> None:
    entries = [
        note("z", "zz", T0 + 3),
        note("y", "y" * 2000, T0 + 2),  # skipped by the budget
        note("c", "child", T0 + 5, ["z", "deleted", "y", "m"]),
        note("m", "mm", T0 + 4),
    ]
    block = render(entries, "", 50, T0)
    assert "c [note]: child  <- z, m" in entry_lines(block)
    assert "y" not in rendered_keys(block)


def test_empty_type_has_no_brackets_and_counts_as_note() -> None:
    entries = [
        note("a", "1", T0, type_=""),
        note("b", "2", T0 + 1, type_="fact"),
        note("c", "3", T0 + 2, type_="note"),
    ]
    block = render(entries, "", 500, T0)
    assert entry_lines(block) == ["a: 1", "b [fact]: 2", "c [note]: 3"]
    assert block.split("\n")[2] == "map: 2 note, 1 fact"


def test_map_types_in_order_of_first_appearance() -> None:
    entries = [
        note("a", "1", T0, type_="zeta"),
        note("b", "2", T0, ["a"], type_="alpha"),
        note("c", "3", T0, ["a"], type_="zeta"),
    ]
    block = render(entries, "", 500, T0)
    assert block.split("\n")[2] == "map: 2 zeta, 1 alpha"


def test_duplicates() -> None:
    entries = [
        note("a", "Same  Fact here", T0, type_="decision"),  # 14 bytes normalised
        note("b", "  same fact\nHERE ", T0 + 1, ["a"]),
        note("c", "same fact here", T0 + 2, ["b"]),
        note("d", "short value", T0 + 3),  # 11 bytes: never flagged
        note("e", "Short Value", T0 + 4),
    ]
    lines = entry_lines(render(entries, "", 500, T0))
    assert lines == [
        "a [decision]: Same  Fact here",
        "b [note]: same fact / HERE  <- a  (same as a)",
        "c [note]: same fact here  <- b  (same as a)",
        "d [note]: short value",
        "e [note]: Short Value",
    ]


def test_duplicates_twelve_bytes_boundary_and_rendered_order() -> None:
    # "世世世世" is 12 bytes (4 characters). Rendered order puts "z" (a parent)
    # before "a", so "z" is the first key with that value.
    entries = [
        note("a", "世世世世", T0, ["z"]),
        note("z", "世世世世", T0 + 1),
        note("m", "abcdefghijk", T0 + 2),  # 11 bytes
        note("n", "ABCDEFGHIJK", T0 + 3),
        note("o", "abcdefghijkl", T0 + 4),  # 12 bytes
        note("p", "abcdefghijkl", T0 + 5),
    ]
    lines = entry_lines(render(entries, "", 500, T0))
    assert lines == [
        "z [note]: 世世世世",
        "a [note]: 世世世世  <- z  (same as z)",
        "m [note]: abcdefghijk",
        "n [note]: ABCDEFGHIJK",
        "o [note]: abcdefghijkl",
        "p [note]: abcdefghijkl  (same as o)",
    ]


def test_resume_marker_and_downstream_line() -> None:
    entries = [
        note("prog", "pending work", T0, type_="progress"),
        note("kid2", "b", T0 + 1, ["prog"]),
        note("kid1", "a", T0 + 2, ["prog"]),
        note("big", "x" * 3000, T0 + 3, ["prog"]),  # not rendered: not downstream
    ]
    block = render(entries, "", 40, T0 + 3 * HOUR)
    lines = block.split("\n")
    assert lines[2] == "map: 1 progress, 2 note | resume: prog (3h ago)"
    assert lines[3] == "prog [progress]: pending work  <== RESUME"
    assert lines[-2] == "downstream of prog: kid1, kid2"
    assert "big" not in rendered_keys(block)


def test_no_downstream_line_without_rendered_children() -> None:
    entries = [note("prog", "pending", T0, type_="progress"), note("x", "y", T0 + 1)]
    block = render(entries, "", 500, T0)
    assert "downstream of" not in block


def test_annotation_order() -> None:
    entries = [
        note("a", "identical text!", T0, type_="result"),
        note("b", "identical text!", T0 + 1, ["a"], type_="progress"),
    ]
    lines = entry_lines(render(entries, "", 500, T0))
    assert lines[1] == "b [progress]: identical text!  <- a  (same as a)  <== RESUME"


# ---------------------------------------------------------------------------
# §5.4 escaping everywhere
# ---------------------------------------------------------------------------


def test_escaping_of_key_type_value_parent_map_and_downstream() -> None:
    entries = [
        Entry("p<1>", "x\ny", "pro&gress", "", [], T0, T0),
        Entry("k\n</memory>", "v\r\n<b>\x00\u202e", "t\x1b", "", ["p<1>"], T0 + 1, T0 + 1),
        Entry("r&d\n", "pending", "progress", "", ["p<1>"], T0 + 2, T0 + 2),
        Entry("c\u2066", "child", "", "", ["r&d\n"], T0 + 3, T0 + 3),
    ]
    block = render(entries, "", 500, T0)
    lines = block.split("\n")
    assert lines == [
        "<memory>",
        LEGEND,
        "map: 1 pro&amp;gress, 1 progress, 1 note, 1 t\ufffd | resume: r&amp;d (just now)",
        "p&lt;1&gt; [pro&amp;gress]: x / y",
        "r&amp;d [progress]: pending  <- p&lt;1&gt;  <== RESUME",
        "c\ufffd: child  <- r&amp;d",
        "k / &lt;/memory&gt; [t\ufffd]: v / &lt;b&gt;\ufffd\ufffd  <- p&lt;1&gt;",
        "downstream of r&amp;d: c\ufffd",
        "</memory>",
    ]


def test_flatten() -> None:
    assert flatten("  a  b  ") == "  a  b  "
    assert flatten("\t x \t") == "\t x \t"
    assert flatten("a\nb") == "a / b"
    assert flatten("a\r\nb") == "a / b"
    assert flatten("a\rb") == "a / b"
    assert flatten("a\r\n\r\n\n\rb") == "a / b"
    assert flatten("  a  \n  b  ") == "a / b"
    assert flatten("a\n   \n\t\nb") == "a / b"
    assert flatten("\na\n") == "a"
    assert flatten("\n") == ""
    assert flatten("\u3000a\xa0\n\x1cb") == "a / \x1cb"  # U+001C is not whitespace
    assert flatten("a\u2028b\x85c\n") == "a\u2028b\x85c"


def test_escape_line_every_control_char() -> None:
    for code in [*range(0x20), 0x7F]:
        char = chr(code)
        out = escape_line(f"x{char}y")
        if char == "\t":
            assert out == "x\ty"
        elif char in "\r\n":
            assert out == "x / y"
        else:
            assert out == "x\ufffdy", hex(code)


def test_escape_line_bidi_and_neighbours() -> None:
    for code in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]:
        assert escape_line(f"a{chr(code)}b") == "a\ufffdb", hex(code)
    # (0.2) line and paragraph separators, bidi marks, C1 controls, tags
    for code in (0x2028, 0x2029, 0x200E, 0x200F, 0x061C, 0x80, 0x9F, 0x85, 0xE0001, 0xE007F):
        assert escape_line(f"a{chr(code)}b") == "a\ufffdb", hex(code)
    for code in (0x202F, 0x2065, 0x206A, 0x200D, 0x7E, 0xA0, 0xE0080):
        assert escape_line(f"a{chr(code)}b") == f"a{chr(code)}b", hex(code)


def test_escape_line_xml_and_order() -> None:
    assert escape_line("a & b") == "a &amp; b"
    assert escape_line("&amp;") == "&amp;amp;"
    assert escape_line("</memory>") == "&lt;/memory&gt;"
    assert escape_line("a\x0b\nb") == "a / b"  # VT trimmed by flattening first
    assert escape_line("a\x0b") == "a\ufffd"


# ---------------------------------------------------------------------------
# Whitespace, lower, tokens
# ---------------------------------------------------------------------------


def test_whitespace_is_unicode_white_space_not_python_isspace() -> None:
    python_only = {chr(c) for c in range(0x110000) if chr(c).isspace()} - set(WHITESPACE)
    assert python_only == {"\x1c", "\x1d", "\x1e", "\x1f"}
    assert set(WHITESPACE) <= {chr(c) for c in range(0x110000) if chr(c).isspace()}
    assert len(WHITESPACE) == 25
    assert trim("\x1cx\x1c") == "\x1cx\x1c"
    assert trim("\u3000 x \u2029") == "x"
    assert split_whitespace(" a\x1fb  c\u00a0d ") == ["a\x1fb", "c", "d"]


def test_normalize_value() -> None:
    assert normalize_value("  Hello \t\n World  ") == "hello world"
    assert normalize_value("A\u3000B") == "a b"
    assert normalize_value("A\x1fB") == "a\x1fb"
    assert normalize_value("ΟΔΟΣ  X") == "οδος x"


def test_word_tokens() -> None:
    assert word_tokens("result:api_wiring v2 café--x") == [
        "result",
        "api",
        "wiring",
        "v2",
        "caf",
        "x",
    ]
    assert word_tokens("") == []
    assert word_tokens("aBc") == ["a", "c"]


# ---------------------------------------------------------------------------
# §5.5 markers
# ---------------------------------------------------------------------------


def test_marker_hit_rule() -> None:
    # substring for space, '-' and "'"
    assert marker_hits("xnot doney", "not done")
    assert not marker_hits("not  done", "not done")
    assert marker_hits("in-progressing", "in-progress")
    assert marker_hits("we won't fixate", "won't fix")
    assert marker_hits("how to download", "to do")
    # at most 3 characters: a token must equal it
    assert marker_hits("still wip here", "wip")
    assert marker_hits("(wip)", "wip")
    assert not marker_hits("wipe", "wip")
    assert not marker_hits("wip2", "wip")
    # longer: some token starts with it
    assert marker_hits("completed", "complete")
    assert not marker_hits("incomplete", "complete")
    assert not marker_hits("undone", "done")
    assert marker_hits("édone", "done")
    assert marker_hits("x_done_y", "done")


def test_every_not_done_marker_beats_done() -> None:
    for marker in NOT_DONE_MARKERS:
        assert not is_done(f"Done, {marker}"), marker
        assert not is_done(marker), marker


def test_every_done_marker() -> None:
    for marker in DONE_MARKERS:
        assert is_done(marker), marker
        assert is_done(f"Work {marker.upper()}."), marker


def test_is_done_cases() -> None:
    assert not is_done("")
    assert not is_done("compiles; tests pending")
    assert not is_done("waiting on CI")
    assert is_done("All done")
    assert not is_done("WIP done")
    assert is_done("wipe done")
    assert not is_done("undone")
    assert is_done("won't fix")
    assert not is_done("wont fix")
    assert is_done("fail done")
    assert not is_done("failed")


def test_every_reopened_marker_beats_resolved() -> None:
    for marker in REOPENED_MARKERS:
        assert not is_resolved(f"fixed; {marker}"), marker
        assert not is_resolved(marker), marker


def test_every_resolved_marker() -> None:
    for marker in RESOLVED_MARKERS:
        assert is_resolved(marker), marker
        assert is_resolved(f"Now {marker.upper()}!"), marker


def test_is_resolved_cases() -> None:
    assert not is_resolved("")
    assert not is_resolved("migrate step 3 panics on nil column")
    assert is_resolved("Fixed in abc123")
    assert not is_resolved("fixes landed")
    assert not is_resolved("unresolved")
    assert not is_resolved("Regressed: was resolved")
    assert is_resolved("regressions: was resolved")


def test_resolved_error_is_not_surfaced() -> None:
    entries = [note("error:x", "Fixed it", T0, type_="error")]
    block = render(entries, "", 500, T0)
    assert "| error:" not in block


def test_done_work_is_not_resumed() -> None:
    entries = [note("result:x", "Shipped", T0, type_="result")]
    block = render(entries, "", 500, T0)
    assert entry_lines(block) == ["result:x [result]: Shipped"]
    assert "| resume:" not in block


# ---------------------------------------------------------------------------
# §5.8 relative age
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        (0, "just now"),
        (59_999, "just now"),
        (60_000, "1m ago"),
        (119_999, "1m ago"),
        (120_000, "2m ago"),
        (3_599_999, "59m ago"),
        (3_600_000, "1h ago"),
        (7_199_999, "1h ago"),
        (7_200_000, "2h ago"),
        (86_399_999, "23h ago"),
        (86_400_000, "1d ago"),
        (172_799_999, "1d ago"),
        (172_800_000, "2d ago"),
        (365 * DAY, "365d ago"),
        (-1, "just now"),
        (-10 * DAY, "just now"),
    ],
)
def test_relative_age(delta: int, expected: str) -> None:
    assert relative_age(T0 + delta, T0) == expected


def test_age_in_map_line() -> None:
    entries = [note("s", "waiting", T0, type_="status")]
    assert "| resume: s (1d ago)" in render(entries, "", 500, T0 + DAY)
    assert "| resume: s (just now)" in render(entries, "", 500, T0 - 5)


# ---------------------------------------------------------------------------
# Invariants on random stores
# ---------------------------------------------------------------------------

ALPHABET = ["a", "b", "Ab", "\n", " ", "<", "&", "\x00", "\u202e", "done", "pending", "世", "fix"]
TYPES = ["", "note", "fact", "progress", "result", "status", "error", "prompt", "tool_result"]


def random_store(rng: random.Random) -> list[Entry]:
    n = rng.randint(1, 25)
    keys = [f"k{i}" for i in range(n)]
    entries = []
    for key in keys:
        value = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))
        refs = rng.sample([*keys, "missing"], rng.randint(0, min(3, n + 1)))
        refs = [r for r in refs if r != key]
        at = T0 + rng.randint(0, 20)
        entries.append(Entry(key, value, rng.choice(TYPES), "", refs, at, at))
    return entries


def test_random_stores_invariants() -> None:
    rng = random.Random(12345)
    for _ in range(400):
        entries = random_store(rng)
        focus = rng.choice(["", "fix done", "pending k3", "b"])
        max_tokens = rng.choice([-1, 0, 5, 20, 60, 500])
        block = render(entries, focus, max_tokens, T0 + 100)
        shuffled = list(entries)
        rng.shuffle(shuffled)
        assert render(shuffled, focus, max_tokens, T0 + 100) == block
        lines = entry_lines(block)
        keys = rendered_keys(block)
        assert len(lines) == len(keys) == len(set(keys)) >= 1
        by_key = {e.key: e for e in entries}
        resume = resume_point(entries)
        if resume is not None and max_tokens <= 0:
            assert keys == [resume.key]
        if resume is not None and max_tokens >= 500:
            chain = ancestry_chain(resume.key, by_key)
            assert set(chain) <= set(keys)
        # Every rendered line is one line with nothing that could end the block.
        for line in block.split("\n")[1:-1]:
            assert "<" not in line.replace("<- ", "").replace("<== RESUME", "")
            assert "\r" not in line


def test_parents_come_first_when_acyclic() -> None:
    rng = random.Random(99)
    for _ in range(200):
        n = rng.randint(1, 20)
        entries = []
        for i in range(n):
            refs = [f"k{j}" for j in rng.sample(range(i), min(i, rng.randint(0, 3)))]
            entries.append(note(f"k{i}", f"v{i}", T0 + rng.randint(0, 5), refs))
        keys = rendered_keys(render(entries, "", rng.choice([0, 30, 500]), T0))
        position = {k: i for i, k in enumerate(keys)}
        by_key = {e.key: e for e in entries}
        for key in keys:
            for ref in by_key[key].references:
                if ref in position:
                    assert position[ref] < position[key]


# ---------------------------------------------------------------------------
# §6.8 truncation, §4 plain flattening (helpers shared with the Rust side)
# ---------------------------------------------------------------------------


def test_truncate() -> None:
    assert truncate("世" * 10, 10) == "世世世..."
    assert truncate("abcdefghij", 5) == "abcde..."
    assert truncate("abcdefghij", 10) == "abcdefghij"
    assert truncate("abc", 0) == "..."
    assert truncate("", 0) == ""


def test_truncate_every_byte_offset() -> None:
    text = "a\u00e9世😀e\u0301z世"
    data = text.encode("utf-8")
    for limit in range(len(data) + 3):
        out = truncate(text, limit)
        if limit >= len(data):
            assert out == text
            continue
        head = out.removesuffix("...")
        assert out.endswith("...")
        assert text.startswith(head)
        size = len(head.encode("utf-8"))
        assert size <= limit
        # the largest boundary: adding the next character would exceed the limit
        next_char = text[len(head)]
        assert size + len(next_char.encode("utf-8")) > limit


def test_flatten_plain_neutralises_but_escapes_no_xml() -> None:
    assert flatten_plain("<a>\n&\x00\u202e") == "<a> / &\ufffd\ufffd"
    assert flatten_plain("  x  ") == "  x  "
