//! The parts of the system-prompt section (§5.9) that come from the store:
//! the `<memory>` block, the newest keys and the entry count, read from one
//! state of the mirror so that they always describe the same store.

use std::sync::Arc;

use crate::store::mirror::Mirror;
use crate::views::render::render_with;
use crate::views::semantic::Meaning;

/// What [`prompt_parts`] reads.
pub struct PromptParts {
    pub block: String,
    /// The keys of the newest entries, newest first.
    pub newest_keys: Vec<Arc<str>>,
    pub total: usize,
}

/// The keys of the `limit` newest entries, newest first.
pub fn newest_keys(mirror: &Mirror, limit: usize) -> Vec<Arc<str>> {
    mirror
        .newest_first()
        .take(limit)
        .map(|e| e.key.clone())
        .collect()
}

/// The block for `focus` within `max_tokens` (ages relative to `now_ms`),
/// the keys of the `key_limit` newest entries and the entry count.
pub fn prompt_parts(
    mirror: &Mirror,
    focus: &str,
    max_tokens: i64,
    now_ms: i64,
    key_limit: usize,
) -> PromptParts {
    prompt_parts_with(mirror, focus, None, max_tokens, now_ms, key_limit)
}

/// [`prompt_parts`] whose focus is ranked with `meaning` too (§15.4).
pub fn prompt_parts_with(
    mirror: &Mirror,
    focus: &str,
    meaning: Option<&Meaning<'_>>,
    max_tokens: i64,
    now_ms: i64,
    key_limit: usize,
) -> PromptParts {
    PromptParts {
        block: render_with(mirror, focus, meaning, max_tokens, now_ms),
        newest_keys: newest_keys(mirror, key_limit),
        total: mirror.len(),
    }
}
