//! The small rules of the block's text (§5.1, §5.3, §5.8): what an entry
//! costs, when two values repeat each other, how old an entry is.

use std::borrow::Cow;

use super::lower;

/// Fixed per-entry overhead of the `<memory>` budget (§5.1).
pub const ENTRY_OVERHEAD: usize = 30;

/// Minimum normalised length (bytes) of a value flagged `(same as K)` (§5.3).
pub const MIN_DUPLICATE_BYTES: usize = 12;

const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 60 * MINUTE_MS;
const DAY_MS: i64 = 24 * HOUR_MS;

/// §5.3 duplicate normalisation: collapse whitespace runs to one space, trim,
/// lower.
#[must_use]
pub fn normalize_value(value: &str) -> String {
    let mut collapsed = String::with_capacity(value.len());
    for word in value.split_whitespace() {
        if !collapsed.is_empty() {
            collapsed.push(' ');
        }
        collapsed.push_str(word);
    }
    match lower(&collapsed) {
        Cow::Borrowed(_) => collapsed,
        Cow::Owned(lowered) => lowered,
    }
}

/// §5.1 cost of an entry in budget bytes: `len(key) + len(value) + 30`, raw
/// (unescaped) UTF-8 lengths. Saturates instead of overflowing.
#[must_use]
pub fn entry_cost(key: &str, value: &str) -> usize {
    key.len()
        .saturating_add(value.len())
        .saturating_add(ENTRY_OVERHEAD)
}

/// §5.8 relative age of `updated_at` seen at `now_ms` (both Unix ms): from
/// `now - updated_at` (negative counts as 0): under 1 minute `just now`; under
/// 1 hour `<floor minutes>m ago`; under 24 hours `<floor hours>h ago`;
/// otherwise `<floor days>d ago`. Saturates on overflow.
#[must_use]
pub fn relative_age(now_ms: i64, updated_at: i64) -> String {
    let delta = now_ms.saturating_sub(updated_at).max(0);
    if delta < MINUTE_MS {
        "just now".to_owned()
    } else if delta < HOUR_MS {
        format!("{}m ago", delta / MINUTE_MS)
    } else if delta < DAY_MS {
        format!("{}h ago", delta / HOUR_MS)
    } else {
        format!("{}d ago", delta / DAY_MS)
    }
}
