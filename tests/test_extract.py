"""Tests of automatic fact extraction (§6, F6, F9, F10)."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membolt._core import truncate
from membolt.extract import (
    ACTION_VERBS,
    DEFAULT_CAPTURE_TOOLS,
    FILE_VERBS,
    MAX_FACTS_PER_TEXT,
    MEMORY_TOOLS,
    READ_ONLY_TOOLS,
    SECTION_KEYS,
    WHITESPACE,
    ExtractionConfig,
    Fact,
    cut_bytes,
    extract_action,
    extract_files,
    extract_key_lines,
    extract_markers,
    extract_sections,
    extract_thinking,
    extract_tool_result,
    extract_turn,
    find_sections,
    first_line,
    is_path_like,
    is_whitespace,
    iso_utc,
    keep_first_per_key,
    path_token,
    slug,
    split_whitespace,
    thinking_fact,
    tool_result_key,
    trim,
    turn_record,
)

# 2026-11-29T19:45:59Z
NOW_MS = 1_795_981_559_000


def values(facts: list[Fact]) -> dict[str, str]:
    return {fact.key: fact.value for fact in facts}


def action_of(response: str) -> str | None:
    return values(extract_action(response)).get("last_action")


def files_of(response: str) -> str | None:
    return values(extract_files(response)).get("last_files")


def utf8_len(text: str) -> int:
    return len(text.encode())


# --------------------------------------------------------------------------
# Text primitives and truncate (§6.8).
# --------------------------------------------------------------------------


class TestTextPrimitives:
    def test_whitespace_is_unicode_white_space_not_isspace(self) -> None:
        info_separators = {"\x1c", "\x1d", "\x1e", "\x1f"}
        for code in range(sys.maxunicode + 1):
            char = chr(code)
            expected = char.isspace() and char not in info_separators
            assert is_whitespace(char) == expected, hex(code)
        assert len(WHITESPACE) == 25

    def test_trim_keeps_information_separators(self) -> None:
        assert trim("\x1c a \x85\u3000\u2028") == "\x1c a"
        assert trim(" \t\r\n") == ""

    def test_split_whitespace_does_not_split_on_information_separators(self) -> None:
        assert split_whitespace("a\x1cb c\u00a0d\n") == ["a\x1cb", "c", "d"]
        assert split_whitespace("   ") == []

    def test_cut_bytes_never_splits_a_character(self) -> None:
        assert cut_bytes("世" * 10, 10) == "世世世"
        assert cut_bytes("abc", 10) == "abc"
        assert cut_bytes("abc", 0) == ""
        assert cut_bytes("abc", -5) == ""
        assert cut_bytes("a😀", 4) == "a"

    def test_first_line_ends_at_newline_only(self) -> None:
        assert first_line("a\u2028b\x1cc\rd\ne") == "a\u2028b\x1cc\rd"
        assert first_line("") == ""

    def test_truncate_spec_examples(self) -> None:
        assert truncate("世" * 10, 10) == "世世世..."
        assert truncate("abcdefghij", 5) == "abcde..."
        assert truncate("abcde", 5) == "abcde"
        assert truncate("", 0) == ""

    def test_keep_first_per_key(self) -> None:
        facts = [Fact("a", "1"), Fact("b", "2"), Fact("a", "3")]
        assert keep_first_per_key(facts) == [Fact("a", "1"), Fact("b", "2")]


# --------------------------------------------------------------------------
# §6.1 Markers.
# --------------------------------------------------------------------------


class TestMarkers:
    def test_seed_example(self) -> None:
        text = "[MEMORY: project_name] kdeps - Go module github.com/kdeps/kdeps/v2"
        assert extract_markers(text) == [
            Fact("project_name", "kdeps - Go module github.com/kdeps/kdeps/v2")
        ]

    def test_key_and_value_are_trimmed(self) -> None:
        assert values(extract_markers("[MEMORY:   a key \t]   the value \r\n")) == {
            "a key": "the value"
        }

    def test_no_space_needed(self) -> None:
        assert values(extract_markers("[MEMORY:k]v")) == {"k": "v"}

    def test_marker_may_sit_mid_line(self) -> None:
        assert values(extract_markers("Note: [MEMORY: db] postgres 16")) == {"db": "postgres 16"}

    def test_first_marker_on_a_line_wins(self) -> None:
        facts = extract_markers("[MEMORY: a] one [MEMORY: b] two")
        assert values(facts) == {"a": "one [MEMORY: b] two"}

    def test_one_marker_per_line_over_many_lines(self) -> None:
        text = "intro\n[MEMORY: a] 1\nmiddle\n[MEMORY: b] 2\n"
        assert values(extract_markers(text)) == {"a": "1", "b": "2"}

    @pytest.mark.parametrize(
        "line", ["[MEMORY: ] value", "[MEMORY:    ] value", "[MEMORY: key]", "[MEMORY: key]  \t "]
    )
    def test_empty_key_or_value_is_ignored(self, line: str) -> None:
        assert extract_markers(line) == []

    def test_key_up_to_1024_bytes(self) -> None:
        assert values(extract_markers(f"[MEMORY: {'k' * 1024}] v")) == {"k" * 1024: "v"}
        assert values(extract_markers(f"[MEMORY: {'é' * 512}] v")) == {"é" * 512: "v"}

    def test_key_over_1024_bytes_is_ignored(self) -> None:
        assert extract_markers(f"[MEMORY: {'k' * 1025}] v") == []
        assert extract_markers(f"[MEMORY: {'é' * 512}x] v") == []

    def test_unbalanced_marker_gives_nothing_but_later_lines_count(self) -> None:
        assert extract_markers("[MEMORY: key value") == []
        assert extract_markers("[MEMORY: ") == []
        assert values(extract_markers("[MEMORY: broken\n[MEMORY: ok] yes")) == {"ok": "yes"}

    def test_closing_bracket_on_a_later_line_does_not_close(self) -> None:
        assert values(extract_markers("[MEMORY: a\nb] c")) == {}

    def test_marker_is_case_sensitive(self) -> None:
        assert extract_markers("[memory: k] v") == []

    def test_repeated_key_keeps_the_first(self) -> None:
        assert values(extract_markers("[MEMORY: k] first\n[MEMORY: k] second")) == {"k": "first"}

    def test_value_is_capped_at_2000_bytes(self) -> None:
        (fact,) = extract_markers(f"[MEMORY: k] {'v' * 5000}")
        assert fact.value == "v" * 2000 + "..."

    def test_information_separators_are_not_trimmed(self) -> None:
        assert values(extract_markers("[MEMORY: \x1ck] \x1cv\x1f")) == {"\x1ck": "\x1cv\x1f"}

    def test_type_is_left_to_the_store(self) -> None:
        assert extract_markers("[MEMORY: k] v")[0].type is None

    def test_at_most_max_facts_per_text(self) -> None:
        text = "".join(f"[MEMORY: k{i}] v\n" for i in range(MAX_FACTS_PER_TEXT + 50))
        facts = extract_markers(text)
        assert len(facts) == MAX_FACTS_PER_TEXT
        assert facts[0].key == "k0"


# --------------------------------------------------------------------------
# §6.2 KEY lines.
# --------------------------------------------------------------------------


class TestKeyLines:
    def test_basic(self) -> None:
        assert extract_key_lines("GOAL: build the users endpoint") == [
            Fact("goal", "build the users endpoint")
        ]

    @pytest.mark.parametrize(
        ("name", "found"),
        [
            ("AB", False),  # letter + 1
            ("ABC", True),  # letter + 2
            ("A" + "B" * 40, True),  # letter + 40
            ("A" + "B" * 41, False),  # letter + 41
            ("A_B", True),
            ("A__", True),
            ("_AB", False),
            ("AB1", False),
            ("Abc", False),
            ("ÄBC", False),
        ],
    )
    def test_name_shape(self, name: str, found: bool) -> None:
        facts = extract_key_lines(f"{name}: value")
        assert facts == ([Fact(name.lower(), "value")] if found else [])

    def test_must_start_the_line(self) -> None:
        assert extract_key_lines("  GOAL: x") == []
        assert extract_key_lines("say GOAL: x") == []
        assert extract_key_lines("GOAL : x") == []

    def test_value_is_trimmed_rest_of_line(self) -> None:
        assert values(extract_key_lines("STATUS:   green  \r\nNEXT_STEP:deploy")) == {
            "status": "green",
            "next_step": "deploy",
        }

    def test_empty_value_is_skipped(self) -> None:
        assert extract_key_lines("GOAL:   \nGOAL: real") == [Fact("goal", "real")]

    def test_value_limit_is_500_bytes(self) -> None:
        assert values(extract_key_lines(f"NOTE: {'v' * 500}")) == {"note": "v" * 500}
        assert extract_key_lines(f"NOTE: {'v' * 501}") == []
        assert values(extract_key_lines(f"NOTE: {'é' * 250}")) == {"note": "é" * 250}
        assert extract_key_lines(f"NOTE: {'é' * 250}x") == []

    def test_first_of_a_repeated_key_wins(self) -> None:
        assert values(extract_key_lines("TODO: a\nTODO: b")) == {"todo": "a"}

    def test_first_and_later_lines(self) -> None:
        text = "ABC: 1\nxyz\nDEF_G: 2\n"
        assert values(extract_key_lines(text)) == {"abc": "1", "def_g": "2"}


# --------------------------------------------------------------------------
# §6.3 Action sentence.
# --------------------------------------------------------------------------


class TestAction:
    def test_spec_example(self) -> None:
        response = "Added rate limiting middleware to the HTTP handler"
        assert extract_action(response) == [
            Fact("last_action", "rate limiting middleware to the HTTP handler")
        ]

    def test_f10_verb_inside_a_word_does_not_match(self) -> None:
        assert extract_action("I reset the cache.") == []
        assert extract_action("The preset values stay.") == []
        assert extract_action("Settings are fine now.") == []

    @pytest.mark.parametrize("verb", ACTION_VERBS)
    def test_every_verb_in_any_case(self, verb: str) -> None:
        for form in (verb, verb.lower(), verb.upper()):
            assert action_of(f"We {form} the thing here.") == "the thing here"

    def test_value_is_rest_of_line_with_trailing_punctuation_removed(self) -> None:
        assert action_of("Fixed the login bug. Then ran tests!;:`*_") == (
            "the login bug. Then ran tests"
        )
        assert action_of("Fixed the bug   \r\nnext line") == "the bug"

    def test_verb_must_be_followed_by_whitespace_and_text(self) -> None:
        assert action_of("Fixed-the bug everywhere") is None
        assert action_of("We fixed\nthe bug everywhere") is None

    def test_the_verb_must_be_followed_by_whitespace(self) -> None:
        # §6.3: "followed by whitespace and text"; emphasis or a colon between
        # the verb and the text does not count, so the next line is tried.
        assert action_of("**Fixed** the login bug") is None
        assert action_of("**Fixed:** the login bug") is None
        assert action_of("Fixed: the login bug\nAdded the retry loop") == "the retry loop"
        assert action_of("**Fixed the login bug**") == "the login bug"

    def test_verb_inside_a_path_is_not_a_verb(self) -> None:
        assert action_of("see src/fixed/handler.go and more") is None

    def test_lower_bound_5_bytes(self) -> None:
        assert action_of("Fixed abcde") == "abcde"
        assert action_of("Fixed abcd") is None
        assert action_of("Fixed ééa") == "ééa"  # 3 characters, 5 bytes
        assert action_of("Fixed éé") is None  # 4 bytes
        assert action_of("Fixed abcd.") is None  # stripped to 4 bytes

    def test_upper_bound_200_bytes(self) -> None:
        assert action_of("Fixed " + "x" * 200) == "x" * 200
        assert action_of("Fixed " + "x" * 201) is None
        assert action_of("Fixed " + "é" * 100) == "é" * 100
        assert action_of("Fixed " + "é" * 100 + "x") is None

    def test_out_of_bounds_line_is_skipped_and_next_line_tried(self) -> None:
        response = "Fixed it\nUpdated the deployment docs\nAdded more tests"
        assert action_of(response) == "the deployment docs"

    def test_a_later_verb_on_a_skipped_line_is_not_tried(self) -> None:
        assert action_of("Fixed it; Added the retry loop") == "it; Added the retry loop"
        # The rest of the first verb's line is over 200 bytes, so the whole line
        # is skipped, "Added" included.
        assert action_of("Set " + "y" * 190 + " then Added the retry loop") is None

    def test_first_qualifying_line_wins(self) -> None:
        assert action_of("Installed redis 7\nDeployed the api") == "redis 7"

    def test_no_verb(self) -> None:
        assert extract_action("Nothing happened here.") == []
        assert extract_action("") == []

    def test_type_is_left_to_the_store(self) -> None:
        assert extract_action("Added the thing")[0].type is None


# --------------------------------------------------------------------------
# §6.4 File references.
# --------------------------------------------------------------------------


class TestFiles:
    def test_f9_spec_example(self) -> None:
        response = "Edited src/api/handler.go and src/api/middleware.go"
        assert extract_files(response) == [
            Fact("last_files", "src/api/handler.go, src/api/middleware.go")
        ]

    def test_second_spec_example(self) -> None:
        response = "Edited `~/.zshrc` to add bracketed paste. Also modified `/etc/hosts`."
        assert files_of(response) == "~/.zshrc, /etc/hosts"

    @pytest.mark.parametrize("verb", FILE_VERBS)
    def test_every_verb_in_any_case(self, verb: str) -> None:
        for form in (verb, verb.lower(), verb.upper()):
            assert files_of(f"I {form} main.py today") == "main.py"

    def test_optional_file_word(self) -> None:
        assert files_of("Created file src/app.py for you") == "src/app.py"
        assert files_of("Read files a.md, b.md: both fine") == "a.md, b.md"
        assert files_of("Created files: a.md") == "a.md"

    def test_commas_and_and_between_paths(self) -> None:
        assert files_of("Edited a.go, b.go, and c.go.") == "a.go, b.go, c.go"
        assert files_of("Edited a.go , b.go") == "a.go, b.go"
        assert files_of("Edited a.go AND b.go") == "a.go, b.go"

    def test_paths_directly_after_paths(self) -> None:
        assert files_of("Edited a.go b.go") == "a.go, b.go"

    def test_stops_at_the_first_other_word(self) -> None:
        assert files_of("Edited a.go then b.go") == "a.go"
        assert files_of("Edited a.go and the README") == "a.go"

    def test_path_must_directly_follow(self) -> None:
        assert files_of("Read the docs at docs/index.md") is None
        assert files_of("Edited and a.go") is None

    def test_run_stops_at_end_of_line(self) -> None:
        assert files_of("Edited a.go\nb.go") == "a.go"

    @pytest.mark.parametrize(
        ("token", "path"),
        [
            ("src/main.rs", "src/main.rs"),
            ("/etc/hosts", "/etc/hosts"),
            ("~", "~"),
            ("~/notes", "~/notes"),
            (".env", ".env"),
            ("Makefile.am", "Makefile.am"),
            ("archive.tar.gz", "archive.tar.gz"),
            ("notes.markdown", "notes.markdown"),  # 8-character extension
            ("notes.markdowns", None),  # 9 characters
            ("file.é", None),  # not ASCII
            ("file.a-b", None),
            ("README", None),
            ("`a.py`", "a.py"),
            ('"a.py"', "a.py"),
            ("'a.py'", "a.py"),
            ("\u201ca.py\u201d", "a.py"),
            ("a.py).", "a.py"),
            ("`a.py`.", "a.py"),
            ("a.py:", "a.py"),
            ("...", None),
            ("``", None),
        ],
    )
    def test_path_tokens(self, token: str, path: str | None) -> None:
        assert path_token(token) == path

    def test_is_path_like(self) -> None:
        assert is_path_like("a/b")
        assert is_path_like("~x")
        assert is_path_like(".x")
        assert is_path_like("x.y1")
        assert not is_path_like("plain")
        assert not is_path_like("x.")

    def test_distinct_paths_in_order_over_the_whole_text(self) -> None:
        response = "Read b.py and a.py.\nThen I edited a.py, c.py.\nWrote b.py."
        assert files_of(response) == "b.py, a.py, c.py"

    def test_whole_word_verbs_only(self) -> None:
        assert files_of("Reread a.py") is None
        assert files_of("unedited a.py") is None
        assert files_of("see src/read/x.go") is None

    def test_no_reference(self) -> None:
        assert extract_files("Nothing here") == []
        assert extract_files("") == []

    def test_value_is_capped_at_2000_bytes(self) -> None:
        response = "Edited " + ", ".join(f"src/file_{i}.py" for i in range(500))
        value = files_of(response)
        assert value is not None
        assert value.startswith("src/file_0.py, src/file_1.py")
        assert value.endswith("...")
        assert utf8_len(value) <= 2003

    def test_deleted_is_both_an_action_and_a_file_verb(self) -> None:
        facts = values(extract_turn("", "Deleted src/old.py"))
        assert facts == {"last_action": "src/old.py", "last_files": "src/old.py"}


# --------------------------------------------------------------------------
# §6.5 Sections.
# --------------------------------------------------------------------------


class TestSections:
    @pytest.mark.parametrize(("name", "key"), SECTION_KEYS)
    def test_each_header(self, name: str, key: str) -> None:
        assert extract_sections(f"## {name}\nten bytes!!\n") == [Fact(key, "ten bytes!!")]

    def test_processing_order_not_text_order(self) -> None:
        response = (
            "## Goal\nship the api\n## Progress\nhalf of it done\n## Key Decisions\nuse jwt auth"
        )
        assert [fact.key for fact in extract_sections(response)] == [
            "decision:key-decisions",
            "progress:progress",
            "prompt:goal",
        ]

    def test_body_of_10_bytes_is_kept_9_skipped(self) -> None:
        assert values(extract_sections("## Status\n0123456789")) == {"status:status": "0123456789"}
        assert extract_sections("## Status\n012345678") == []
        assert values(extract_sections("## Status\néééé56")) == {"status:status": "éééé56"}
        assert extract_sections("## Status\néééé5") == []

    def test_body_cut_to_500_bytes(self) -> None:
        (fact,) = extract_sections("## Summary\n" + "世" * 200)
        assert fact.value == "世" * 166 + "..."

    def test_body_runs_to_the_next_double_hash_line(self) -> None:
        response = "## Progress\nstep one done\n### detail\nmore detail\n## Unknown\nelsewhere"
        assert values(extract_sections(response)) == {
            "progress:progress": "step one done\n### detail\nmore detail"
        }

    def test_body_is_trimmed(self) -> None:
        response = "## Result\n\n   all tests pass   \n\n## Next\n"
        assert values(extract_sections(response)) == {"result:result": "all tests pass"}

    def test_header_must_be_exact(self) -> None:
        for header in ("##Progress", " ## Progress", "## progress", "## Progress:", "### Progress"):
            assert extract_sections(f"{header}\nlong enough body") == [], header

    def test_trailing_blanks_after_header_are_allowed(self) -> None:
        response = "## Progress \t\r\nlong enough body\r\n"
        assert values(extract_sections(response)) == {"progress:progress": "long enough body"}

    def test_first_header_counts(self) -> None:
        response = "## Status\nfirst status body\n## Status\nsecond status body"
        assert values(extract_sections(response)) == {"status:status": "first status body"}

    def test_header_without_body(self) -> None:
        assert extract_sections("text\n## Goal") == []
        assert find_sections("## Goal", ["Goal"]) == {"Goal": ""}
        assert find_sections("## Goal\n## Status\nx", ["Goal", "Status"]) == {
            "Goal": "",
            "Status": "x",
        }

    def test_double_hash_without_space_does_not_end_a_body(self) -> None:
        response = "## Context\nline one\n##not a header\nline three"
        assert values(extract_sections(response)) == {
            "context:context": "line one\n##not a header\nline three"
        }


# --------------------------------------------------------------------------
# §6 Turn.
# --------------------------------------------------------------------------


class TestTurn:
    def test_everything_from_one_response(self) -> None:
        response = (
            "[MEMORY: db] postgres 16\n"
            "STATUS: green\n"
            "Added rate limiting middleware to the HTTP handler.\n"
            "Edited src/api/handler.go and src/api/middleware.go\n"
            "## Progress\nmiddleware in place, tests next\n"
        )
        assert extract_turn("please add rate limiting", response) == [
            Fact("db", "postgres 16"),
            Fact("status", "green"),
            Fact("last_action", "rate limiting middleware to the HTTP handler"),
            Fact("last_files", "src/api/handler.go, src/api/middleware.go"),
            Fact("progress:progress", "middleware in place, tests next"),
        ]

    def test_user_input_gives_markers_and_key_lines_only(self) -> None:
        user = (
            "[MEMORY: pref] tabs\nGOAL: ship it\nAdded a thing for you\n"
            "Edited a.py\n## Goal\nlong goal body"
        )
        assert values(extract_turn(user, "")) == {"pref": "tabs", "goal": "ship it"}

    def test_first_producer_wins(self) -> None:
        user = "[MEMORY: k] from user marker\nGOAL: from user key line"
        response = (
            "[MEMORY: k] from response marker\n"
            "[MEMORY: goal] from response marker\n"
            "LAST_ACTION: from key line\n"
            "Added something else entirely\n"
            "[MEMORY: progress:progress] from marker\n"
            "## Progress\nfrom the section body"
        )
        assert values(extract_turn(user, response)) == {
            "k": "from user marker",
            "goal": "from response marker",  # markers run before KEY lines
            "progress:progress": "from marker",
            "last_action": "from key line",
        }

    def test_keys_are_unique(self) -> None:
        facts = extract_turn("[MEMORY: a] 1", "[MEMORY: a] 2\nABC: 3\nABC: 4")
        assert [fact.key for fact in facts] == ["a", "abc"]

    @pytest.mark.parametrize(
        ("switch", "gone"),
        [
            ("markers", "db"),
            ("key_lines", "status"),
            ("action", "last_action"),
            ("files", "last_files"),
            ("sections", "progress:progress"),
        ],
    )
    def test_each_mechanism_can_be_switched_off(self, switch: str, gone: str) -> None:
        response = (
            "[MEMORY: db] postgres\nSTATUS: green\nFixed the flaky test\n"
            "Edited a.py\n## Progress\nhalfway through it"
        )
        everything = {fact.key for fact in extract_turn("", response)}
        assert gone in everything
        config = ExtractionConfig(**{switch: False})  # type: ignore[arg-type]
        assert {fact.key for fact in extract_turn("", response, config)} == everything - {gone}

    def test_empty_turn(self) -> None:
        assert extract_turn("", "") == []


# --------------------------------------------------------------------------
# §6.6 Tool results.
# --------------------------------------------------------------------------


class TestSlug:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("Hello, World!", "hello__world"),
            ("  --hello--  ", "hello"),
            ("ERROR: Disk Full\nsecond line", "error__disk_full"),
            ("abc123", "abc123"),
            ("", "output"),
            ("   ", "output"),
            ("\nsecond line only", "output"),
            ("!!!", "output"),
            ("世界", "output"),
            ("\x1cabc\x1c", "abc"),  # U+001C is not whitespace but is not [a-z0-9]
            ("\u0130x", "i_x"),  # lower() gives "i" + U+0307
        ],
    )
    def test_rules(self, text: str, expected: str) -> None:
        assert slug(text) == expected

    def test_empty_replacement(self) -> None:
        assert slug("", empty="round") == "round"

    def test_cut_to_40_bytes_before_slugging(self) -> None:
        assert slug("é" * 19 + "ab") == "ab"  # exactly 40 bytes: all kept
        assert slug("é" * 20 + "ab") == "output"  # "ab" is past byte 40

    def test_40_byte_cut_respects_character_boundaries(self) -> None:
        assert slug("a" + "é" * 20 + "b") == "a"  # byte 40 falls inside an "é"
        assert slug("a" + "世" * 13 + "b") == "a"  # 40 bytes = "a" + 13 x 3
        assert slug("ab" + "世" * 13 + "c") == "ab"  # the 13th "世" would need byte 41

    def test_leading_whitespace_is_trimmed_before_the_cut(self) -> None:
        assert slug(" " * 100 + "hello") == "hello"

    def test_cut_to_30_after_trimming_underscores(self) -> None:
        assert slug("abcdefghij" * 5) == "abcdefghij" * 3
        assert slug("a" * 29 + " bc") == "a" * 29 + "_"  # the spec cuts after the trim


class TestToolResults:
    def test_key_value_and_type(self) -> None:
        facts = extract_tool_result("bash_exec", "total 42\ndrwx foo")
        assert facts == [Fact("tool:bash_exec:total_42", "total 42\ndrwx foo", "tool_result")]
        assert tool_result_key("bash_exec", "total 42\ndrwx foo") == "tool:bash_exec:total_42"

    @pytest.mark.parametrize("tool", sorted(DEFAULT_CAPTURE_TOOLS))
    def test_default_capture_list(self, tool: str) -> None:
        assert extract_tool_result(tool, "ok")[0].key == f"tool:{tool}:ok"

    @pytest.mark.parametrize("tool", sorted(READ_ONLY_TOOLS))
    def test_f6_read_only_tools_are_not_captured(self, tool: str) -> None:
        result = "contents\n[MEMORY: k] v\nAdded a whole feature\nEdited a.py"
        assert extract_tool_result(tool, result) == []

    def test_read_only_tool_captured_when_listed_explicitly(self) -> None:
        config = ExtractionConfig(capture_tools=frozenset({"read_file"}))
        assert extract_tool_result("read_file", "abc", config)[0].key == "tool:read_file:abc"

    @pytest.mark.parametrize("tool", sorted(MEMORY_TOOLS))
    def test_memory_tools_are_never_captured(self, tool: str) -> None:
        config = ExtractionConfig(capture_tools=frozenset(MEMORY_TOOLS))
        assert extract_tool_result(tool, "Saved [MEMORY: k] v", config) == []

    def test_unknown_tool_is_not_captured(self) -> None:
        assert extract_tool_result("my_tool", "[MEMORY: k] v") == []
        assert extract_tool_result("Bash_Exec", "x") == []

    def test_empty_result_is_not_captured(self) -> None:
        assert extract_tool_result("bash_exec", "") == []

    def test_whitespace_only_result_is_captured_as_output(self) -> None:
        assert extract_tool_result("bash_exec", " \n\t") == [
            Fact("tool:bash_exec:output", " \n\t", "tool_result")
        ]

    def test_value_cut_to_300_bytes(self) -> None:
        (fact,) = extract_tool_result("bash_exec", "é" * 200)
        assert fact.value == "é" * 150 + "..."
        (fact,) = extract_tool_result("bash_exec", "x" * 300)
        assert fact.value == "x" * 300

    def test_result_runs_through_markers_key_lines_action_and_files(self) -> None:
        result = (
            "build ok\n[MEMORY: build] green\nSTATUS: deployed\n"
            "Deployed version 1.2.3 to staging\nWrote dist/app.js\n"
            "## Progress\nnot scanned in tool output"
        )
        assert extract_tool_result("bash_exec", result) == [
            Fact("tool:bash_exec:build_ok", truncate(result, 300), "tool_result"),
            Fact("build", "green"),
            Fact("status", "deployed"),
            Fact("last_action", "version 1.2.3 to staging"),
            Fact("last_files", "dist/app.js"),
        ]

    def test_tool_results_switch_keeps_the_other_mechanisms(self) -> None:
        config = ExtractionConfig(tool_results=False)
        assert extract_tool_result("bash_exec", "[MEMORY: k] v", config) == [Fact("k", "v")]

    def test_huge_tool_name_gives_no_tool_fact(self) -> None:
        name = "t" * 2000
        config = ExtractionConfig(capture_tools=frozenset({name}))
        assert extract_tool_result(name, "[MEMORY: k] v", config) == [Fact("k", "v")]


# --------------------------------------------------------------------------
# §6.9 Thinking.
# --------------------------------------------------------------------------


class TestThinking:
    def test_key_value_and_type(self) -> None:
        assert thinking_fact("Let me check the schema.\nThen...", 1234) == Fact(
            "thinking:1234:let_me_check_the_schema",
            "Let me check the schema.\nThen...",
            "thinking",
        )

    def test_slug_round_when_empty(self) -> None:
        fact = thinking_fact("\nreasoning on line two", 5)
        assert fact is not None
        assert fact.key == "thinking:5:round"
        fact = thinking_fact("\x1c", 5)  # not whitespace, so not empty
        assert fact is not None
        assert fact.key == "thinking:5:round"

    @pytest.mark.parametrize("text", ["", " ", "\n\t\r\n", "\u3000\u2028"])
    def test_empty_or_whitespace_saves_nothing(self, text: str) -> None:
        assert thinking_fact(text, 1) is None
        assert extract_thinking(text, 1) == []

    def test_value_cut_to_300_bytes(self) -> None:
        fact = thinking_fact("x" * 1000, 1)
        assert fact is not None
        assert fact.value == "x" * 300 + "..."

    def test_switch(self) -> None:
        assert len(extract_thinking("hmm", 1)) == 1
        assert extract_thinking("hmm", 1, ExtractionConfig(thinking=False)) == []


# --------------------------------------------------------------------------
# §6.10 Turn record.
# --------------------------------------------------------------------------


class TestTurnRecord:
    def test_format(self) -> None:
        assert turn_record("add auth", "Added auth.", NOW_MS + 999) == Fact(
            "turn:last",
            "turn at 2026-11-29T19:45:59Z | input: add auth | response: Added auth.",
        )

    def test_first_200_characters(self) -> None:
        fact = turn_record("é" * 250, "x" * 201 + "\n", NOW_MS)
        assert fact.value == (
            f"turn at 2026-11-29T19:45:59Z | input: {'é' * 200} | response: {'x' * 200}"
        )

    def test_line_breaks_are_kept(self) -> None:
        assert (
            turn_record("a\nb", "", 0).value
            == "turn at 1970-01-01T00:00:00Z | input: a\nb | response: "
        )

    def test_iso_utc(self) -> None:
        assert iso_utc(0) == "1970-01-01T00:00:00Z"
        assert iso_utc(-1) == "1969-12-31T23:59:59Z"
        assert iso_utc(NOW_MS) == "2026-11-29T19:45:59Z"
        assert iso_utc(10**30) == "9999-12-31T23:59:59Z"
        assert iso_utc(-(10**30)) == "0001-01-01T00:00:00Z"


# --------------------------------------------------------------------------
# Robustness: hostile input never raises, stays bounded, and is fast enough.
# --------------------------------------------------------------------------

FRAGMENTS = [
    "[MEMORY:",
    "[MEMORY: k]",
    "]",
    "\n",
    "\r\n",
    " ",
    "\t",
    "\x00",
    "\x1c",
    "\x85",
    "\u2028",
    "\u3000",
    "\ud800",  # a lone surrogate: valid in a Python str, not in UTF-8
    "## ",
    "## Progress",
    "## Key Decisions",
    "## Status\n",
    "ABC_DEF:",
    "GOAL: ",
    "Added",
    "fixed",
    "SET",
    "**",
    ":",
    "Edited",
    "read",
    "file",
    "and",
    ",",
    "a.go",
    "src/x.py",
    "`",
    '"',
    "~",
    ".",
    "é",
    "世",
    "😀",
    "\u0130",
    "x" * 60,
    "é" * 30,
]
hostile_text = st.one_of(
    st.text(),
    st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=5)), max_size=40).map("".join),
)


def assert_bounded(facts: list[Fact]) -> None:
    keys = [fact.key for fact in facts]
    assert len(keys) == len(set(keys))
    for fact in facts:
        assert fact.key
        fact.key.encode()  # valid UTF-8: no lone surrogates reach the store
        fact.value.encode()
        assert utf8_len(fact.key) <= 1024
        size = utf8_len(fact.value)
        if fact.key == "last_action":
            assert 5 <= size <= 200
        elif fact.key.startswith("tool:"):
            assert size <= 303
        elif fact.key in dict(SECTION_KEYS).values():
            assert 10 <= size <= 503
        else:
            assert size <= 2003


@settings(max_examples=400, deadline=None)
@given(hostile_text, hostile_text)
def test_turn_never_raises_and_is_bounded(user_input: str, response: str) -> None:
    assert_bounded(extract_turn(user_input, response))
    for extractor in (
        extract_markers,
        extract_key_lines,
        extract_action,
        extract_files,
        extract_sections,
    ):
        assert_bounded(extractor(response))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(DEFAULT_CAPTURE_TOOLS)), hostile_text)
def test_tool_result_never_raises_and_is_bounded(tool: str, result: str) -> None:
    facts = extract_tool_result(tool, result)
    assert_bounded(facts)
    if result:
        assert facts[0].key.startswith(f"tool:{tool}:")
        assert facts[0].type == "tool_result"


@settings(max_examples=300, deadline=None)
@given(hostile_text)
def test_slug_shape(text: str) -> None:
    value = slug(text)
    assert value == "output" or (
        0 < len(value) <= 30
        and all(char in "abcdefghijklmnopqrstuvwxyz0123456789_" for char in value)
        and not value.startswith("_")
    )


@settings(max_examples=300, deadline=None)
@given(hostile_text, st.integers(min_value=0, max_value=2**63))
def test_thinking_and_turn_record_never_raise(text: str, now_ms: int) -> None:
    fact = thinking_fact(text, now_ms)
    if fact is not None:
        assert fact.key.startswith(f"thinking:{now_ms}:")
        assert utf8_len(fact.value) <= 303
        fact.value.encode()
    record = turn_record(text, text, now_ms)
    assert record.key == "turn:last"
    record.value.encode()
    assert len(record.value) <= len("turn at 0000-00-00T00:00:00Z | input:  | response: ") + 400


@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(min_value=0, max_value=50))
def test_cut_bytes_and_truncate(text: str, limit: int) -> None:
    cut = cut_bytes(text, limit)
    assert text.startswith(cut)
    assert utf8_len(cut) <= limit
    if cut != text:  # maximal: the next character would not fit
        assert utf8_len(text[: len(cut) + 1]) > limit
    truncated = truncate(text, limit)
    assert truncated == text if utf8_len(text) <= limit else truncated == cut + "..."


def test_lone_surrogates_are_replaced() -> None:
    assert values(extract_markers("[MEMORY: k\ud800] v\udfff")) == {"k\ufffd": "v\ufffd"}
    (fact,) = extract_tool_result("bash_exec", "\ud800")
    assert fact == Fact("tool:bash_exec:output", "\ufffd", "tool_result")


MB = 1_000_000
TEN_MEGABYTE_TEXTS = [
    pytest.param("x" * (10 * MB), id="one-huge-line"),
    pytest.param("[MEMORY: " + "k" * (10 * MB), id="unbalanced-marker"),
    pytest.param(
        (
            "[MEMORY: k] v\nSTATUS: ok\nSet x\nRead a.go a.go\nFixed a b\n"
            "## Progress\n- item: x\n\x00\x1c\u2028 plain log line\n"
        )
        * (10 * MB // 95),
        id="many-hostile-lines",
    ),
    pytest.param("Read " * (2 * MB), id="verbs-everywhere"),
    pytest.param("\n" * (10 * MB), id="blank-lines"),
]


@pytest.mark.parametrize("text", TEN_MEGABYTE_TEXTS)
def test_ten_megabyte_turn(text: str) -> None:
    assert_bounded(extract_turn("please look at this", text))
    fact = thinking_fact(text, NOW_MS)
    assert fact is None or utf8_len(fact.value) <= 303
    assert utf8_len(turn_record(text, text, NOW_MS).value) < 2000


@pytest.mark.parametrize("text", TEN_MEGABYTE_TEXTS)
def test_ten_megabyte_tool_result(text: str) -> None:
    assert_bounded(extract_tool_result("bash_exec", text))
