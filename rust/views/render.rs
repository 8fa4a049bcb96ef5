//! The `<memory>` block (§5): which entries are kept and how they
//! are written.
//!
//! Every text rule comes from [`crate::text`]; every lookup goes through the
//! indexes of [`RenderIndex`], so a render costs O(log n) per kept entry,
//! plus the focus's ranked search (§15), plus the reference paths between
//! kept entries that the pruned parents-first walk still has to follow
//! (see [`crate::views::graph`]), not O(store). Which entries are kept, and
//! how much of each, is [`crate::views::selection`]'s job. The tests
//! compare this renderer byte for byte with a plain-Python model of §5 and
//! §15.5 (`tests/support/reference_render.py`).

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::store::mirror::Mirror;
use crate::text::{MIN_DUPLICATE_BYTES, escape_line, normalize_value, query_terms, relative_age};
use crate::views::graph::parents_first;
use crate::views::render_index::RenderIndex;
use crate::views::selection::{Anchors, Selection, select};
use crate::views::semantic::{self, Meaning};

pub use crate::views::selection::BYTES_PER_TOKEN;

/// The legend line, verbatim from §5.3.
pub const LEGEND: &str = "Legend: workflow chain, parents before children. \"key [type]: value\"; \"<- P\" = derived from P; \"(same as K)\" = repeats K's fact; \"<== RESUME\" = continue here.";

/// §5.1: the budget of a block when the caller gives none.
pub const DEFAULT_MAX_TOKENS: i64 = 500;

/// §15.3: the focus matches are the first this many of the ranked search.
pub const MAX_FOCUS_MATCHES: usize = 5;

/// Renders the `<memory>` block of `mirror` for `focus` within `max_tokens`,
/// ages relative to `now_ms`. An empty store renders `""`.
pub fn render(mirror: &Mirror, focus: &str, max_tokens: i64, now_ms: i64) -> String {
    render_with(mirror, focus, None, max_tokens, now_ms)
}

/// [`render`] whose focus matches are ranked with `meaning` too (§15.4).
pub fn render_with(
    mirror: &Mirror,
    focus: &str,
    meaning: Option<&Meaning<'_>>,
    max_tokens: i64,
    now_ms: i64,
) -> String {
    let terms = query_terms(focus);
    let index = if terms.is_empty() {
        crate::views::render_index(mirror)
    } else {
        crate::views::render_index_with_recall(mirror)
    };
    if index.is_empty() {
        return String::new();
    }
    let resume = index.resume_point();
    let error = index.newest_unresolved_error();
    let matches = focus_matches_with(index, &terms, meaning);
    let anchors = Anchors {
        resume,
        matches: &matches,
        error,
    };
    let selection = select(index, &anchors, max_tokens);
    let order = parents_first(index, &selection.kept);
    format_block(index, &order, &selection, resume, error, now_ms)
}

/// §15.3: the focus matches, the first [`MAX_FOCUS_MATCHES`] entries of the
/// ranked search for the focus's significant terms.
pub fn focus_matches(index: &RenderIndex, terms: &[String]) -> Vec<u32> {
    focus_matches_with(index, terms, None)
}

/// [`focus_matches`] ranked with `meaning` too (§15.4).
pub fn focus_matches_with(
    index: &RenderIndex,
    terms: &[String],
    meaning: Option<&Meaning<'_>>,
) -> Vec<u32> {
    semantic::ranked(index, terms, meaning, Some(MAX_FOCUS_MATCHES))
        .1
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

/// §5.3 format: tags, legend, map line, entry lines, downstream line.
fn format_block(
    index: &RenderIndex,
    order: &[u32],
    selection: &Selection,
    resume: Option<u32>,
    error: Option<u32>,
    now_ms: i64,
) -> String {
    let kept = &selection.kept;
    // §15.5: the map line names the resume point and the error, and the
    // downstream line appears, only when that entry is shown.
    let resume = resume.filter(|id| kept.contains(id));
    let error = error.filter(|id| kept.contains(id));
    let mut out = String::with_capacity(256 + 128 * order.len());
    out.push_str("<memory>\n");
    out.push_str(LEGEND);
    out.push('\n');

    // Map line: counts per type in order of first appearance ("" counts as
    // note).
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for &id in order {
        let kind = &*index.entry(id).kind;
        let kind = if kind.is_empty() { "note" } else { kind };
        match counts.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => counts.push((kind, 1)),
        }
    }
    out.push_str("map: ");
    for (i, (kind, n)) in counts.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{n} {}", escape_line(kind));
    }
    if let Some(resume) = resume {
        let entry = index.entry(resume);
        let _ = write!(
            out,
            " | resume: {} ({})",
            escape_line(&entry.key),
            relative_age(now_ms, entry.updated_at)
        );
    }
    if let Some(error) = error {
        let _ = write!(out, " | error: {}", escape_line(&index.entry(error).key));
    }
    out.push('\n');

    // Entry lines, with the first key seen for each normalised value.
    let mut first_with_value: HashMap<String, &str> = HashMap::new();
    for &id in order {
        let entry = index.entry(id);
        out.push_str(&escape_line(&entry.key));
        if !entry.kind.is_empty() {
            let _ = write!(out, " [{}]", escape_line(&entry.kind));
        }
        out.push_str(": ");
        out.push_str(&escape_line(selection.shown_value(id, &entry.value)));
        let mut parents = entry
            .references
            .iter()
            .filter(|reference| index.id(reference).is_some_and(|p| kept.contains(&p)))
            .peekable();
        if parents.peek().is_some() {
            out.push_str("  <- ");
            for (i, parent) in parents.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&escape_line(parent));
            }
        }
        let normalized = normalize_value(&entry.value);
        if normalized.len() >= MIN_DUPLICATE_BYTES {
            match first_with_value.get(&normalized) {
                Some(first) => {
                    let _ = write!(out, "  (same as {})", escape_line(first));
                }
                None => {
                    first_with_value.insert(normalized, &entry.key);
                }
            }
        }
        if resume == Some(id) {
            out.push_str("  <== RESUME");
        }
        out.push('\n');
    }

    // Downstream line: the rendered children of the resume entry, by key.
    if let Some(resume) = resume {
        let resume_key = &index.entry(resume).key;
        let mut children: Vec<&str> = order
            .iter()
            .map(|&id| index.entry(id))
            .filter(|entry| entry.references.contains(resume_key))
            .map(|entry| &*entry.key)
            .collect();
        if !children.is_empty() {
            children.sort_unstable();
            let _ = write!(out, "downstream of {}: ", escape_line(resume_key));
            for (i, child) in children.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&escape_line(child));
            }
            out.push('\n');
        }
    }
    out.push_str("</memory>");
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::entry::Entry;
    use crate::testing::entry;

    fn golden_a() -> Vec<Arc<Entry>> {
        vec![
            entry("prompt:build", "prompt", "Add /users endpoint", 0, &[]),
            entry(
                "tool:write_users",
                "tool_result",
                "wrote handlers/users.go",
                2,
                &["prompt:build"],
            ),
            entry(
                "result:build",
                "result",
                "compiles; tests pending",
                4,
                &["tool:write_users"],
            ),
        ]
    }

    fn golden_a_text() -> String {
        [
            "<memory>",
            LEGEND,
            "map: 1 prompt, 1 tool_result, 1 result | resume: result:build (2m ago)",
            "prompt:build [prompt]: Add /users endpoint",
            "tool:write_users [tool_result]: wrote handlers/users.go  <- prompt:build",
            "result:build [result]: compiles; tests pending  <- tool:write_users  <== RESUME",
            "</memory>",
        ]
        .join("\n")
    }

    #[test]
    fn golden_a_from_a_bulk_built_and_an_incremental_mirror() {
        let bulk = Mirror::from_entries(golden_a(), vec![1], 4);
        assert_eq!(render(&bulk, "", 500, 4 + 120_000), golden_a_text());
        let mut incremental = Mirror::default();
        for e in golden_a() {
            incremental.insert(e);
            // Build the lazy indexes early so later inserts update them.
            let _ = render(&incremental, "users", 500, 0);
        }
        assert_eq!(render(&incremental, "", 500, 4 + 120_000), golden_a_text());
    }

    #[test]
    fn empty_mirror_renders_nothing() {
        assert_eq!(render(&Mirror::default(), "x", 500, 0), "");
    }

    #[test]
    fn budget_edges_do_not_overflow() {
        let mirror = Mirror::from_entries(golden_a(), vec![1], 4);
        for max_tokens in [i64::MIN, -1, 0, 1, i64::MAX] {
            let block = render(&mirror, "users", max_tokens, i64::MAX);
            assert!(block.starts_with("<memory>\n") && block.ends_with("\n</memory>"));
        }
        let everything = render(&mirror, "", i64::MAX, i64::MIN);
        assert_eq!(everything.lines().count(), 3 + 3 + 1);
    }

    #[test]
    fn focus_matches_rank_by_score_then_type_then_newest_then_key() {
        let entries = vec![
            entry("b:alpha", "note", "x", 5, &[]),
            entry("a:alpha", "note", "x", 5, &[]),
            entry("c", "note", "alpha", 9, &[]),
            entry("d:alpha", "decision", "x", 1, &[]),
        ];
        let mirror = Mirror::from_entries(entries, vec![1], 9);
        let index = crate::views::render_index_with_recall(&mirror);
        let keys: Vec<&str> = focus_matches(index, &query_terms("the Alphas"))
            .into_iter()
            .map(|id| &*index.entry(id).key)
            .collect();
        // The key counts three times: the three key hits score alike and
        // above `c`; among them the typed one, then the newest, then by key.
        assert_eq!(keys, ["d:alpha", "a:alpha", "b:alpha", "c"]);
    }
}
