//! Tests of the text rules.

use std::borrow::Cow;

use super::escape::FLATTEN_BREAKS;
use super::*;

// ----- truncation -----

#[test]
fn truncate_examples() {
    assert_eq!(truncate(&"世".repeat(10), 10), "世世世...");
    assert_eq!(truncate("abcdefghij", 5), "abcde...");
    assert_eq!(truncate("abcdefghij", 10), "abcdefghij");
    assert_eq!(truncate("abcdefghij", 11), "abcdefghij");
    assert_eq!(truncate("abcdefghij", 9), "abcdefghi...");
    assert_eq!(truncate("abc", 0), "...");
    assert_eq!(truncate("", 0), "");
    assert_eq!(truncate("", 5), "");
    assert_eq!(truncate("世", 2), "...");
    assert_eq!(truncate("世", 3), "世");
    assert_eq!(truncate("abc", usize::MAX), "abc");
}

#[test]
fn truncate_every_byte_offset_of_multibyte_text() {
    // 1-, 2-, 3- and 4-byte characters, plus a combining mark.
    let text = "a\u{e9}世😀e\u{301}z世";
    let boundaries: Vec<usize> = (0..=text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect();
    for limit in 0..=text.len() + 2 {
        let head = truncate_bytes_boundary(text, limit);
        let out = truncate(text, limit);
        if limit >= text.len() {
            assert_eq!(head, text);
            assert_eq!(out, text);
            continue;
        }
        let expected_cut = *boundaries.iter().rfind(|&&b| b <= limit).unwrap();
        assert_eq!(head.len(), expected_cut, "limit {limit}");
        assert_eq!(head, &text[..expected_cut]);
        assert_eq!(out, format!("{head}..."), "limit {limit}");
        assert!(out.len() <= limit + 3);
    }
}

#[test]
fn truncate_bytes_boundary_borrows_prefix() {
    assert_eq!(truncate_bytes_boundary("世界", 4), "世");
    assert_eq!(truncate_bytes_boundary("世界", 5), "世");
    assert_eq!(truncate_bytes_boundary("世界", 6), "世界");
    assert_eq!(truncate_bytes_boundary("世界", 2), "");
    assert_eq!(truncate_bytes_boundary("😀", 3), "");
    assert_eq!(truncate_bytes_boundary("😀", 4), "😀");
}

// ----- whitespace -----

#[test]
fn whitespace_is_unicode_white_space() {
    let expected: Vec<u32> = [
        0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003,
        0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f,
        0x3000,
    ]
    .to_vec();
    let actual: Vec<u32> = (0..=0x10_ffff_u32)
        .filter_map(char::from_u32)
        .filter(|&c| is_whitespace(c))
        .map(u32::from)
        .collect();
    assert_eq!(actual, expected);
    // Python's str.split() splits on these; the spec does not.
    for c in [
        '\u{1c}', '\u{1d}', '\u{1e}', '\u{1f}', '\u{200b}', '\u{feff}',
    ] {
        assert!(!is_whitespace(c));
    }
}

#[test]
fn whitespace_helpers() {
    assert!(is_whitespace_str(""));
    assert!(is_whitespace_str(" \t\n\u{3000}\u{85}"));
    assert!(!is_whitespace_str(" \u{1f} "));
    assert!(!is_whitespace_str(" x "));
    assert_eq!(trim("\u{a0} x y \u{2029}"), "x y");
    assert_eq!(trim("\u{1c}x\u{1c}"), "\u{1c}x\u{1c}");
}

// ----- flatten -----

#[test]
fn flatten_without_line_breaks_is_untouched() {
    assert!(matches!(flatten("  a  b  "), Cow::Borrowed("  a  b  ")));
    assert_eq!(flatten("\t x \t"), "\t x \t");
    assert_eq!(flatten(""), "");
    assert!(matches!(flatten_plain("  <a>  "), Cow::Borrowed("  <a>  ")));
}

#[test]
fn flatten_line_breaks() {
    assert_eq!(flatten("a\nb"), "a / b");
    assert_eq!(flatten("a\r\nb"), "a / b");
    assert_eq!(flatten("a\rb"), "a / b");
    assert_eq!(flatten("a\r\n\r\n\n\rb"), "a / b");
    assert_eq!(flatten("  a  \n  b  "), "a / b");
    assert_eq!(flatten("a\n   \n\t\nb"), "a / b");
    assert_eq!(flatten("\na\n"), "a");
    assert_eq!(flatten("\n"), "");
    assert_eq!(flatten("\r\n \r\n"), "");
    assert_eq!(flatten(" lead\n"), "lead");
    assert_eq!(flatten("x y\nz  w"), "x y / z  w");
    // Unicode whitespace is trimmed; U+001C is not whitespace.
    assert_eq!(flatten("\u{3000}a\u{a0}\n\u{1c}b"), "a / \u{1c}b");
    // Other line-like characters are not split on (the replacement step
    // handles them), though trimming removes them next to a split.
    assert_eq!(flatten("a\u{2028}b\u{85}c\n"), "a\u{2028}b\u{85}c");
    assert_eq!(flatten("a\u{2028}\nb"), "a / b");
    // No XML escaping, no replacement.
    assert_eq!(flatten("<a>\n&\u{0}"), "<a> / &\u{0}");
}

#[test]
fn flatten_plain_neutralises_without_xml_escaping() {
    assert_eq!(
        flatten_plain("<a>\n&\u{0}\u{202e}"),
        "<a> / &\u{fffd}\u{fffd}"
    );
    assert_eq!(
        flatten_plain("k\u{2028}v\u{85}w\u{e0041}\u{200f}"),
        "k\u{fffd}v\u{fffd}w\u{fffd}\u{fffd}"
    );
    // Trimmed next to a split, as in the block.
    assert_eq!(flatten_plain("a\u{2029}\r\nb"), "a / b");
    assert!(matches!(flatten_plain("  <a> & b  "), Cow::Borrowed(_)));
    // Flattened but nothing to replace: the flattened text as it is.
    assert_eq!(flatten_plain("a\nb"), "a / b");
}

#[test]
fn line_breaks_are_python_splitlines() {
    // The code points Python's str.splitlines() splits on.
    let expected: Vec<u32> = vec![
        0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029,
    ];
    let actual: Vec<u32> = (0..=0x10_ffff_u32)
        .filter_map(char::from_u32)
        .filter(|&c| is_line_break(c))
        .map(u32::from)
        .collect();
    assert_eq!(actual, expected);
}

#[test]
fn every_line_break_is_flattened_or_replaced() {
    for c in (0..=0x10_ffff_u32).filter_map(char::from_u32) {
        if !is_line_break(c) {
            continue;
        }
        assert!(
            FLATTEN_BREAKS.contains(&c) || is_replaced_char(c),
            "U+{:04X}",
            u32::from(c)
        );
        for out in [
            escape_line(&format!("a{c}b")),
            flatten_plain(&format!("a{c}b")),
        ] {
            assert!(!out.chars().any(is_line_break), "U+{:04X}", u32::from(c));
        }
    }
}

#[test]
fn replaced_chars_are_exactly_the_listed_ranges() {
    let replaced: Vec<u32> = (0..=0x10_ffff_u32)
        .filter_map(char::from_u32)
        .filter(|&c| is_replaced_char(c))
        .map(u32::from)
        .collect();
    let expected: Vec<u32> = (0x00..0x20_u32)
        .filter(|&c| c != 0x09)
        .chain(0x7f..=0x9f)
        .chain([0x061c, 0x200e, 0x200f])
        .chain([0x2028, 0x2029])
        .chain(0x202a..=0x202e)
        .chain(0x2066..=0x2069)
        .chain(0xe0000..=0xe007f)
        .collect::<std::collections::BTreeSet<u32>>()
        .into_iter()
        .collect();
    assert_eq!(replaced, expected);
}

// ----- escaping -----

#[test]
fn escape_line_xml() {
    assert_eq!(escape_line("a & b"), "a &amp; b");
    assert_eq!(escape_line("</memory>"), "&lt;/memory&gt;");
    assert_eq!(escape_line("&amp;"), "&amp;amp;");
    assert!(matches!(
        escape_line("plain text"),
        Cow::Borrowed("plain text")
    ));
    assert!(matches!(
        escape_line("  spaced  "),
        Cow::Borrowed("  spaced  ")
    ));
}

#[test]
fn escape_line_flattens_first() {
    assert_eq!(escape_line("a\n</memory>\r\nb"), "a / &lt;/memory&gt; / b");
    assert_eq!(escape_line("one\ntwo"), "one / two");
    // A vertical tab at the end of a line part is whitespace and trimmed by
    // flattening before the replacement step sees it.
    assert_eq!(escape_line("a\u{b}\nb"), "a / b");
    // Without a line break nothing is trimmed, so it is replaced.
    assert_eq!(escape_line("a\u{b}"), "a\u{fffd}");
}

#[test]
fn escape_line_replaces_every_control_char_but_tab() {
    for code in (0x00..0x20_u32).chain([0x7f]) {
        let c = char::from_u32(code).unwrap();
        let text = format!("x{c}y");
        let out = escape_line(&text);
        if c == '\t' {
            assert_eq!(out, "x\ty");
        } else if c == '\n' || c == '\r' {
            assert_eq!(out, "x / y");
        } else {
            assert_eq!(out, "x\u{fffd}y", "U+{code:04X}");
        }
    }
}

#[test]
fn escape_line_replaces_bidi_controls() {
    for code in (0x202a..=0x202e_u32).chain(0x2066..=0x2069) {
        let c = char::from_u32(code).unwrap();
        assert_eq!(escape_line(&format!("a{c}b")), "a\u{fffd}b", "U+{code:04X}");
    }
    // (0.2) The bidi marks, C1 controls, the line and paragraph
    // separators and the tag characters too.
    for code in [
        0x200e_u32, 0x200f, 0x061c, 0x80, 0x85, 0x9f, 0x2028, 0x2029, 0xe0000, 0xe0001, 0xe0041,
        0xe007f,
    ] {
        let c = char::from_u32(code).unwrap();
        assert_eq!(escape_line(&format!("a{c}b")), "a\u{fffd}b", "U+{code:04X}");
    }
    // Neighbours are kept.
    for code in [
        0x202f_u32, 0x2065, 0x206a, 0x200d, 0x2010, 0x061b, 0x061d, 0x7e, 0xa0, 0xdffff, 0xe0080,
    ] {
        let c = char::from_u32(code).unwrap();
        let text = format!("a{c}b");
        assert_eq!(escape_line(&text), text, "U+{code:04X}");
    }
}

#[test]
fn escape_line_output_is_one_safe_line() {
    let nasty = "\u{0}<x>\r\n&\u{202e}\t\u{7f}\n\n</memory>\u{2066}";
    let out = escape_line(nasty);
    assert_eq!(
        out,
        "\u{fffd}&lt;x&gt; / &amp;\u{fffd}\t\u{fffd} / &lt;/memory&gt;\u{fffd}"
    );
    assert!(!out.contains(['\n', '\r', '<', '>']));
    assert!(!out.chars().any(is_replaced_char));
}

#[test]
fn escape_xml_alone() {
    assert_eq!(escape_xml("a\nb"), "a\u{fffd}b");
    assert_eq!(escape_xml("<&>"), "&lt;&amp;&gt;");
}

// ----- lower -----

#[test]
fn lower_ascii_fast_path() {
    assert!(matches!(lower("already lower 123"), Cow::Borrowed(_)));
    assert_eq!(lower("MiXeD Case"), "mixed case");
    assert_eq!(lower(""), "");
}

#[test]
fn lower_unicode_like_python() {
    // Values checked against Python 3.11's str.lower().
    assert_eq!(lower("ÉCOLE"), "école");
    assert_eq!(lower("İ"), "i\u{307}");
    assert_eq!(lower("ΟΔΟΣ"), "οδος");
    assert_eq!(lower("Σ"), "σ");
    assert_eq!(lower("ΑΣ Β"), "ας β");
    assert_eq!(lower("ẞ"), "ß");
    assert_eq!(lower("ǅ"), "ǆ");
    assert_eq!(lower("K"), "k"); // Kelvin sign
    assert_eq!(lower("ß"), "ß"); // lower, not casefold
    assert!(matches!(lower("世界"), Cow::Borrowed(_)));
}

#[test]
fn lower_known_unicode_version_skew() {
    // Unicode 16 mappings: Python 3.11 (Unicode 14.0) leaves these as is.
    assert_eq!(lower("\u{a7cb}"), "\u{264}");
    assert_eq!(lower("\u{1c89}"), "\u{1c8a}");
    assert_eq!(lower("\u{10d50}"), "\u{10d70}");
}

// ----- word tokens -----

#[test]
fn word_tokens_rules() {
    let tokens: Vec<&str> = word_tokens("result:api_wiring v2 café--x").collect();
    assert_eq!(tokens, ["result", "api", "wiring", "v2", "caf", "x"]);
    assert_eq!(word_tokens("").count(), 0);
    assert_eq!(word_tokens(" _:-").count(), 0);
    // Upper-case ASCII separates (input is expected to be lowered).
    assert_eq!(word_tokens("aBc").collect::<Vec<_>>(), ["a", "c"]);
    assert_eq!(
        word_tokens("wontfix'd").collect::<Vec<_>>(),
        ["wontfix", "d"]
    );
}

#[test]
fn word_tokens_equal_a_character_split() {
    let samples = [
        "",
        "abc",
        "  a1 b2__c3  ",
        "école x_y-z 世界 ab\u{212a}cd İx ΟΔΟΣ 9",
        "trailing tok",
        "tok trailing ",
        "\u{10d50}ab\u{1f600}cd",
    ];
    for text in samples {
        let lowered = lower(text);
        let by_bytes: Vec<&str> = word_tokens(&lowered).collect();
        let by_chars: Vec<&str> = lowered
            .split(|c: char| !is_token_char(c))
            .filter(|t| !t.is_empty())
            .collect();
        assert_eq!(by_bytes, by_chars, "{text:?}");
    }
}

// ----- markers -----

#[test]
fn marker_hit_rule_substring_for_space_dash_quote() {
    assert!(marker_hits("this is not done yet", "not done"));
    assert!(marker_hits("xnot doney", "not done"));
    assert!(!marker_hits("not  done", "not done"));
    assert!(marker_hits("status: in-progressing", "in-progress"));
    assert!(marker_hits("we won't fixate", "won't fix"));
    assert!(marker_hits("how to download", "to do"));
}

#[test]
fn marker_hit_rule_short_markers_need_equal_token() {
    assert!(marker_hits("still wip here", "wip"));
    assert!(marker_hits("(wip)", "wip"));
    assert!(marker_hits("wip2 wip", "wip"));
    assert!(!marker_hits("wipe the disk", "wip"));
    assert!(!marker_hits("swip", "wip"));
    assert!(!marker_hits("wip2", "wip"));
    // Counted in characters, not bytes.
    assert!(marker_hits("x ab", "ab"));
    assert!(!marker_hits("abc", "ab"));
}

#[test]
fn marker_hit_rule_long_markers_are_token_prefixes() {
    assert!(marker_hits("completed the job", "complete"));
    assert!(marker_hits("done.", "done"));
    assert!(marker_hits("doneness", "done"));
    assert!(!marker_hits("undone", "done"));
    assert!(!marker_hits("incomplete", "complete"));
    assert!(marker_hits("incomplete", "incomplete"));
    assert!(marker_hits("successful", "success"));
    assert!(marker_hits("todos: 3", "todo"));
    assert!(!marker_hits("mastodon", "todo"));
    // Non-ASCII letters separate tokens.
    assert!(marker_hits("édone", "done"));
    assert!(marker_hits("x_done_y", "done"));
}

#[test]
fn every_not_done_marker_negates() {
    for marker in NOT_DONE_MARKERS {
        let value = format!("Done, {marker}");
        assert!(!is_done(&value), "{value}");
        assert!(!is_done(marker), "{marker}");
    }
}

#[test]
fn every_done_marker_completes() {
    for marker in DONE_MARKERS {
        assert!(is_done(marker), "{marker}");
        let upper = marker.to_uppercase();
        assert!(is_done(&format!("Work {upper}.")), "{upper}");
    }
}

#[test]
fn is_done_cases() {
    assert!(!is_done(""));
    assert!(!is_done("compiles; tests pending"));
    assert!(!is_done("waiting on CI"));
    assert!(is_done("All done"));
    assert!(is_done("Completed"));
    assert!(!is_done("not done"));
    assert!(!is_done("Not Complete"));
    assert!(!is_done("done but blocked"));
    assert!(!is_done("FAILED: done"));
    assert!(!is_done("in progress, almost done"));
    assert!(!is_done("in-progress done"));
    assert!(!is_done("to do: done"));
    assert!(!is_done("WIP done"));
    assert!(is_done("wipe done"));
    assert!(is_done("undone? no: done"));
    assert!(!is_done("undone"));
    assert!(is_done("mergedd"));
    assert!(is_done("won't fix"));
    assert!(!is_done("wont fix"));
    assert!(is_done("WONTFIX"));
    assert!(is_done("fail done")); // `fail` is not a marker, `failed` is
    assert!(!is_done("failed"));
    assert!(!is_done("failedover done"));
    assert!(!is_done("pendingdone"));
}

#[test]
fn every_reopened_marker_negates() {
    for marker in REOPENED_MARKERS {
        let value = format!("fixed; {marker}");
        assert!(!is_resolved(&value), "{value}");
        assert!(!is_resolved(marker), "{marker}");
    }
}

#[test]
fn every_resolved_marker_resolves() {
    for marker in RESOLVED_MARKERS {
        assert!(is_resolved(marker), "{marker}");
        let upper = marker.to_uppercase();
        assert!(is_resolved(&format!("Now {upper}!")), "{upper}");
    }
}

#[test]
fn is_resolved_cases() {
    assert!(!is_resolved(""));
    assert!(!is_resolved("migrate step 3 panics on nil column"));
    assert!(is_resolved("Fixed in abc123"));
    assert!(is_resolved("fixed-width font"));
    // `fixed` is a token-prefix marker: `fixes` and `prefixed` do not hit.
    assert!(!is_resolved("fixes landed"));
    assert!(!is_resolved("prefixed"));
    assert!(!is_resolved("unresolved"));
    assert!(is_resolved("closed"));
    assert!(is_resolved("no longer happens"));
    assert!(!is_resolved("no  longer"));
    assert!(!is_resolved("reopened: was fixed"));
    assert!(!is_resolved("Not fixed"));
    assert!(!is_resolved("still failing after fix"));
    assert!(!is_resolved("Regressed: was resolved"));
    // `regressions` does not start with `regressed`.
    assert!(is_resolved("regressions: was resolved"));
    assert!(is_resolved("WORKS NOW"));
    assert!(!is_resolved("works  now"));
}

// ----- duplicates, cost -----

#[test]
fn normalize_value_rules() {
    assert_eq!(normalize_value("  Hello \t\n World  "), "hello world");
    assert_eq!(normalize_value(""), "");
    assert_eq!(normalize_value("A\u{3000}B"), "a b");
    assert_eq!(normalize_value("A\u{1f}B"), "a\u{1f}b");
    assert_eq!(normalize_value("ΟΔΟΣ  X"), "οδος x");
}

#[test]
fn entry_cost_rule() {
    assert_eq!(entry_cost("k", "v"), 32);
    assert_eq!(entry_cost("世", ""), 33);
    assert_eq!(entry_cost("", ""), 30);
}

// ----- relative age -----

#[test]
fn relative_age_boundaries() {
    let cases: &[(i64, &str)] = &[
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
        (365 * 86_400_000, "365d ago"),
    ];
    let base = 1_700_000_000_000_i64;
    for &(delta, expected) in cases {
        assert_eq!(relative_age(base + delta, base), expected, "delta {delta}");
    }
}

#[test]
fn relative_age_negative_and_extreme() {
    assert_eq!(relative_age(0, 1), "just now");
    assert_eq!(relative_age(0, 10_000_000_000), "just now");
    assert_eq!(relative_age(i64::MIN, i64::MAX), "just now");
    assert_eq!(
        relative_age(i64::MAX, i64::MIN),
        format!("{}d ago", i64::MAX / 86_400_000)
    );
    assert_eq!(
        relative_age(i64::MAX, 0),
        format!("{}d ago", i64::MAX / 86_400_000)
    );
}
