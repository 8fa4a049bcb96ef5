//! The `<memory>` block (§5): which entries are kept and how they
//! are written.
//!
//! Every text rule comes from [`crate::text`]; every lookup goes through the
//! indexes of [`RenderIndex`], so a render costs O(log n) per kept entry,
//! plus the postings of the focus words (bounded by a newest-first walk when
//! a word is frequent), plus the reference paths between kept entries that
//! the pruned parents-first walk still has to follow (see [`crate::graph`]),
//! not O(store). The adopted interpretations of the spec are those of the
//! plain-Python model `tests/reference_render.py`, which the tests compare
//! this renderer with byte for byte:
//! * priority entries' costs count against the budget;
//! * the first-candidate rule forces the newest candidate only when the
//!   priority set is empty;
//! * "newest" in §5.2 is the largest `updated_at`, with the tie-break each
//!   rule states.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::store::mirror::Mirror;
use crate::text::{
    MIN_DUPLICATE_BYTES, WordHit, distinct_focus_words, escape_line, focus_score_distinct,
    focus_score_of_hits, focus_words, normalize_value, relative_age,
};
use crate::views::graph::{ancestry_chain, parents_first};
use crate::views::render_index::RenderIndex;
use crate::views::token_index::{IdSet, Side};

/// The legend line, verbatim from §5.3.
pub const LEGEND: &str = "Legend: workflow chain, parents before children. \"key [type]: value\"; \"<- P\" = derived from P; \"(same as K)\" = repeats K's fact; \"<== RESUME\" = continue here.";

/// §5.1: budget bytes per token.
pub const BYTES_PER_TOKEN: i64 = 4;
/// §5.1: the budget of a block when the caller gives none.
pub const DEFAULT_MAX_TOKENS: i64 = 500;

/// §5.6: at most this many focus matches.
pub const MAX_FOCUS_MATCHES: usize = 5;

/// Renders the `<memory>` block of `mirror` for `focus` within `max_tokens`,
/// ages relative to `now_ms`. An empty store renders `""`.
pub fn render(mirror: &Mirror, focus: &str, max_tokens: i64, now_ms: i64) -> String {
    let words = focus_words(focus);
    let index = if words.is_empty() {
        crate::views::render_index(mirror)
    } else {
        crate::views::render_index_with_tokens(mirror)
    };
    if index.is_empty() {
        return String::new();
    }
    let resume = index.resume_point();
    let error = index.newest_unresolved_error();
    let matches = focus_matches(index, &words);

    // §5.2.4: the priority set, in a stable order (ids are only a set here).
    let mut priority = IdSet::default();
    for anchor in resume.into_iter().chain(matches).chain(error) {
        priority.extend(ancestry_chain(index, anchor));
    }
    let max_bytes = if max_tokens > 0 {
        max_tokens.saturating_mul(BYTES_PER_TOKEN)
    } else {
        0
    };
    let kept = fill(index, priority, max_bytes);
    let order = parents_first(index, &kept);
    format_block(index, &order, &kept, resume, error, now_ms)
}

/// Bounds of the newest-first focus path ([`newest_first_matches`]).
#[derive(Clone, Copy, Debug)]
struct FocusLimits {
    /// A word with more value postings than this is *frequent*.
    frequent_postings: usize,
    /// At most this many entries hitting an infrequent word are scored one
    /// by one.
    rare_entries: usize,
    /// At most this many entries are walked newest-first.
    walk: usize,
}

/// Above this many distinct focus words, the newest-first path (which
/// re-tokenises each entry it scores, once per word) gives way to the
/// postings.
const NEWEST_FIRST_MAX_WORDS: usize = 64;

const FOCUS_LIMITS: FocusLimits = FocusLimits {
    frequent_postings: 2048,
    rare_entries: 1024,
    walk: 512,
};

/// §5.6 focus matches: the entries with a positive score, by score
/// descending, then newest, then smaller key; the first
/// [`MAX_FOCUS_MATCHES`].
fn focus_matches(index: &RenderIndex, words: &[String]) -> Vec<u32> {
    focus_matches_with(index, words, FOCUS_LIMITS)
}

fn focus_matches_with(index: &RenderIndex, words: &[String], limits: FocusLimits) -> Vec<u32> {
    if words.is_empty() {
        return Vec::new();
    }
    newest_first_matches(index, words, limits)
        .unwrap_or_else(|| matches_from_postings(index, words))
}

/// The focus matches when some words are frequent (in most entries, say),
/// without scoring every entry that holds them; `None` when that would not
/// be cheap, and then [`matches_from_postings`] answers.
///
/// Split the words into frequent and the rest. Entries holding an infrequent
/// word are few: score each. Every other entry can only score on frequent
/// words, so at most `ceiling` = the sum over frequent word occurrences of 2
/// (if the word starts any key token) or 1, plus the type bonus. Walk the
/// entries newest first (fill order, which is also the §5.6 tie-break order:
/// newer, then smaller key), scoring each; once five scored entries rank
/// above anything left unwalked (a score above `ceiling`, or `ceiling`
/// itself from an entry newer than the walk position), no older entry can
/// displace them. Scores come from the §5.6 rule itself ([`focus_score`]).
fn newest_first_matches(
    index: &RenderIndex,
    words: &[String],
    limits: FocusLimits,
) -> Option<Vec<u32>> {
    let distinct = distinct_focus_words(words);
    if distinct.len() > NEWEST_FIRST_MAX_WORDS {
        // Scoring one entry re-tokenises it per word: the postings answer.
        return None;
    }
    let tokens = index.tokens();
    let mut ceiling: u64 = 1;
    let mut any_frequent = false;
    let mut rare: Vec<&str> = Vec::new();
    for &(word, occurrences) in &distinct {
        if tokens.count_with_prefix(word, Side::Value) > limits.frequent_postings {
            any_frequent = true;
            let per_hit = if tokens.count_with_prefix(word, Side::Key) > 0 {
                2
            } else {
                1
            };
            ceiling += per_hit * occurrences;
        } else {
            rare.push(word);
        }
    }
    if !any_frequent {
        return None;
    }
    let mut rare_hits = IdSet::default();
    for word in rare {
        tokens.for_each_with_prefix(word, |id, _| {
            rare_hits.insert(id);
        });
        if rare_hits.len() > limits.rare_entries {
            return None;
        }
    }
    let fill = index.fill();
    let score_of = |id: u32| {
        let entry = index.entry(id);
        focus_score_distinct(&distinct, &entry.key, &entry.value, &entry.kind)
    };
    // (score, slot, id); a higher slot is newer, or as new with a smaller key.
    let mut scored: Vec<(u64, usize, u32)> = rare_hits
        .iter()
        .filter_map(|&id| {
            let score = score_of(id);
            (score > 0).then(|| (score, fill.slot(id).expect("live id has a slot"), id))
        })
        .collect();
    let above_ceiling = scored.iter().filter(|s| s.0 > ceiling).count();
    let mut rare_at_ceiling: Vec<usize> = scored
        .iter()
        .filter(|s| s.0 == ceiling)
        .map(|s| s.1)
        .collect();
    rare_at_ceiling.sort_unstable_by(|a, b| b.cmp(a));
    let (mut rare_settled, mut walked_settled) = (0, 0);
    let mut settled = above_ceiling >= MAX_FOCUS_MATCHES;
    for (step, (slot, id)) in fill.live_below(fill.slot_count()).enumerate() {
        if settled {
            break;
        }
        if step == limits.walk {
            return None;
        }
        if !rare_hits.contains(&id) {
            let score = score_of(id);
            if score > 0 {
                scored.push((score, slot, id));
                walked_settled += usize::from(score >= ceiling);
            }
        }
        // Unwalked entries now all sit below `slot`.
        while rare_at_ceiling
            .get(rare_settled)
            .is_some_and(|&s| s >= slot)
        {
            rare_settled += 1;
        }
        settled = above_ceiling + rare_settled + walked_settled >= MAX_FOCUS_MATCHES;
    }
    scored.sort_unstable_by_key(|&(score, slot, _)| std::cmp::Reverse((score, slot)));
    scored.truncate(MAX_FOCUS_MATCHES);
    Some(scored.into_iter().map(|(_, _, id)| id).collect())
}

/// The focus matches from the token-prefix index alone: only entries holding
/// a token that starts with some significant word can score, so the
/// candidates are those postings, together with which words hit the key and
/// which the value; the score itself is the single §5.6 rule,
/// [`focus_score_with`].
fn matches_from_postings(index: &RenderIndex, words: &[String]) -> Vec<u32> {
    // Repeated words score once per occurrence but are looked up once.
    let distinct = distinct_focus_words(words);
    // Every posting of every word, as (candidate entry, word slot, side),
    // grouped by candidate and slot: memory and time in proportion to the
    // postings, whatever the number of words.
    let mut postings: Vec<(u32, u32, bool)> = Vec::new();
    let tokens = index.tokens();
    for (slot, &(word, _)) in distinct.iter().enumerate() {
        tokens.for_each_with_prefix(word, |id, side| {
            postings.push((id, slot as u32, side == Side::Key));
        });
    }
    postings.sort_unstable();
    let mut candidates: Vec<(u32, u64)> = Vec::new();
    for same_entry in postings.chunk_by(|a, b| a.0 == b.0) {
        let id = same_entry[0].0;
        let hits = same_entry
            .chunk_by(|a, b| a.1 == b.1)
            .map(|same_word| WordHit {
                occurrences: distinct[same_word[0].1 as usize].1,
                in_key: same_word.iter().any(|p| p.2),
                in_value: same_word.iter().any(|p| !p.2),
            });
        candidates.push((id, focus_score_of_hits(hits, index.focus_bonus(id))));
    }
    // Ranked by (score, updated_at) first, both inline in the index; keys
    // are read only to break exact ties.
    let mut scored: Vec<(u64, i64, u32)> = candidates
        .into_iter()
        .filter(|&(_, score)| score > 0)
        .map(|(id, score)| (score, index.updated_at(id), id))
        .collect();
    let best_first = |a: &(u64, i64, u32), b: &(u64, i64, u32)| (b.0, b.1).cmp(&(a.0, a.1));
    if scored.len() > MAX_FOCUS_MATCHES {
        // Keep the first MAX_FOCUS_MATCHES by (score, updated_at) and
        // everything tied with the last of them.
        let (_, &mut cutoff, _) = scored.select_nth_unstable_by(MAX_FOCUS_MATCHES - 1, best_first);
        scored.retain(|candidate| best_first(candidate, &cutoff).is_le());
    }
    scored.sort_unstable_by(|a, b| {
        best_first(a, b).then_with(|| index.entry(a.2).key.cmp(&index.entry(b.2).key))
    });
    scored.truncate(MAX_FOCUS_MATCHES);
    scored.into_iter().map(|(_, _, id)| id).collect()
}

/// §5.1/§5.2.4–5: the priority entries (kept even past the budget, their
/// costs charged first), then the other entries newest first, each kept if
/// it fits in what is left (skipped otherwise: a smaller, older one may still
/// fit). With no priority entry, the newest candidate is kept whatever its
/// cost.
fn fill(index: &RenderIndex, mut kept: IdSet, max_bytes: i64) -> IdSet {
    let used: u64 = kept
        .iter()
        .map(|&id| index.cost(id))
        .fold(0, u64::saturating_add);
    let mut remaining = i128::from(max_bytes) - i128::from(used);
    let tree = index.fill();
    let mut pos = tree.slot_count();
    if kept.is_empty() {
        // First-candidate rule: the newest entry, whatever it costs.
        if let Some(slot) = tree.last_fitting_below(pos, u64::MAX) {
            let id = tree.id_at(slot).expect("a fitting slot is live");
            kept.insert(id);
            remaining -= i128::from(index.cost(id));
            pos = slot;
        }
    }
    while remaining >= 0 {
        let limit = u64::try_from(remaining).unwrap_or(u64::MAX);
        let Some(slot) = tree.last_fitting_below(pos, limit) else {
            break;
        };
        pos = slot;
        let id = tree.id_at(slot).expect("a fitting slot is live");
        if kept.insert(id) {
            remaining -= i128::from(index.cost(id));
        }
        // else: a priority entry, already kept and charged.
    }
    kept
}

/// §5.3 format: tags, legend, map line, entry lines, downstream line.
fn format_block(
    index: &RenderIndex,
    order: &[u32],
    kept: &IdSet,
    resume: Option<u32>,
    error: Option<u32>,
    now_ms: i64,
) -> String {
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
        out.push_str(&escape_line(&entry.value));
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
    fn focus_matches_rank_by_score_then_newest_then_key() {
        let entries = vec![
            entry("b:alpha", "note", "x", 5, &[]),
            entry("a:alpha", "note", "x", 5, &[]),
            entry("c", "note", "alpha", 9, &[]),
            entry("d:alpha", "decision", "x", 1, &[]),
        ];
        let mirror = Mirror::from_entries(entries, vec![1], 9);
        let index = crate::views::render_index(&mirror);
        let keys: Vec<&str> = focus_matches(index, &["alpha".to_string()])
            .into_iter()
            .map(|id| &*index.entry(id).key)
            .collect();
        assert_eq!(keys, ["d:alpha", "a:alpha", "b:alpha", "c"]);
    }

    /// The newest-first focus path (forced here with tiny limits) agrees
    /// with scoring every candidate, on random stores and focus strings.
    #[test]
    fn newest_first_focus_path_agrees_with_full_scoring() {
        let mut next = crate::test_rng::xorshift(0x2545_f491_4f6c_dd1d);
        let vocabulary = [
            "alpha", "alps", "beta", "gamma", "gam", "delta", "omega", "zeta",
        ];
        let kinds = ["note", "fact", "", "decision", "result"];
        let mut forced = 0;
        for round in 0..300 {
            let size = 1 + next(60) as usize;
            let mut mirror = Mirror::default();
            for i in 0..size {
                let mut value = String::new();
                for _ in 0..next(5) {
                    value.push_str(vocabulary[next(8) as usize]);
                    value.push(' ');
                }
                let key_word = if next(4) == 0 {
                    vocabulary[next(8) as usize]
                } else {
                    "k"
                };
                let key = format!("{key_word}:{}", next(40));
                // Few distinct stamps, so ties on updated_at are common.
                let at = next(size as u64 / 2 + 1) as i64;
                mirror.insert(Arc::new(Entry {
                    kind: kinds[next(5) as usize].into(),
                    ..(*entry(&key, "", &value, at, &[])).clone()
                }));
                if i % 7 == 0 {
                    let _ = render(&mirror, "alpha", 50, 0);
                }
            }
            let index = crate::views::render_index(&mirror);
            let words: Vec<String> = (0..=next(4))
                .map(|_| {
                    let word = vocabulary[next(8) as usize];
                    word[..word.len().min(3 + next(2) as usize)].to_string()
                })
                .collect();
            let limits = FocusLimits {
                frequent_postings: next(6) as usize,
                rare_entries: 1 + next(30) as usize,
                walk: 1 + next(40) as usize,
            };
            let full = matches_from_postings(index, &words);
            if let Some(fast) = newest_first_matches(index, &words, limits) {
                forced += 1;
                assert_eq!(fast, full, "round {round}: {words:?} {limits:?}");
            }
            assert_eq!(focus_matches_with(index, &words, limits), full);
        }
        assert!(forced > 50, "the newest-first path ran only {forced} times");
    }
}
