//! Cutting text to a byte budget (§6.8).

/// Marker appended by [`truncate`] when it cuts (§6.8).
pub const ELLIPSIS: &str = "...";

/// The longest prefix of `text` that is at most `limit` bytes long and ends on
/// a character boundary (`text` itself when it already fits).
#[must_use]
pub fn truncate_bytes_boundary(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    // Back off to a character boundary (at most 3 steps; 0 is a boundary).
    // (`str::floor_char_boundary` needs Rust 1.91; the crate's MSRV is 1.90.)
    let mut cut = limit;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    // `cut` is a char boundary < len, so `get` always succeeds.
    text.get(..cut).unwrap_or_default()
}

/// §6.8: `text` unchanged when it is at most `limit` bytes; otherwise cut at the
/// largest character boundary `<= limit` bytes with `...` appended. Never splits
/// a character: `"世"×10` at 10 gives `世世世...`.
#[must_use]
pub fn truncate(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let head = truncate_bytes_boundary(text, limit);
    let mut out = String::with_capacity(head.len() + ELLIPSIS.len());
    out.push_str(head);
    out.push_str(ELLIPSIS);
    out
}
