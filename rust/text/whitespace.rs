//! The contract's "whitespace" and "trim" (the Unicode `White_Space` set).

/// The spec's "whitespace": the Unicode `White_Space` property.
#[must_use]
pub fn is_whitespace(c: char) -> bool {
    c.is_whitespace()
}

/// True when every character of `text` is whitespace (so also for `""`).
#[must_use]
pub fn is_whitespace_str(text: &str) -> bool {
    text.chars().all(char::is_whitespace)
}

/// The spec's "trim": removes whitespace (Unicode `White_Space`) at both ends.
#[must_use]
pub fn trim(text: &str) -> &str {
    text.trim()
}
