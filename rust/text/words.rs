//! The contract's "lower" (Python's `str.lower()`) and word tokens (maximal
//! runs of `[a-z0-9]` in lowered text), shared by §5.5 and §5.6.

use std::borrow::Cow;

/// The spec's "lower": Python's `str.lower()` (not `casefold()`).
///
/// ASCII text takes a fast path (borrowed when already lower case). Other text
/// uses [`str::to_lowercase`], which applies the same full Unicode lower-case
/// mappings as Python (`SpecialCasing`, e.g. `İ` → `i̇`) and the same
/// context-sensitive final-sigma rule (`ΟΔΟΣ` → `οδος`). The only known
/// difference is Unicode version skew: Python 3.11 ships Unicode 14.0 tables
/// while Rust 1.95's are newer, so the 55 upper-case letters that got a
/// lower-case mapping after 14.0 (U+1C89, U+A7CB, U+A7CC, U+A7CE, U+A7D2,
/// U+A7D4, U+A7DA, U+A7DC, U+10D50–U+10D65, U+16EA0–U+16EB8) are lowered here
/// but left unchanged by Python 3.11. (Checked over every code point, alone and
/// after a letter, and over 200,000 random strings built around `Σ`, combining
/// and case-ignorable characters.)
#[must_use]
pub fn lower(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(text.to_ascii_lowercase())
        } else {
            Cow::Borrowed(text)
        }
    } else {
        let lowered = text.to_lowercase();
        if lowered == text {
            Cow::Borrowed(text)
        } else {
            Cow::Owned(lowered)
        }
    }
}

/// True for the characters of a word token: ASCII `[a-z0-9]`.
#[must_use]
pub fn is_token_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// The word tokens of an already lowered text: maximal runs of ASCII
/// `[a-z0-9]`; every other character (upper-case ASCII and non-ASCII letters
/// included) separates tokens. Never yields an empty token.
pub fn word_tokens(lowered: &str) -> impl Iterator<Item = &str> {
    // Scanning bytes is the same as scanning characters here: every byte of a
    // multi-byte UTF-8 character is >= 0x80, so never a token byte, and
    // token bytes are ASCII, so each token is a valid `&str` slice.
    let bytes = lowered.as_bytes();
    let mut pos = 0;
    std::iter::from_fn(move || {
        let start = pos + bytes[pos..].iter().position(|&b| is_token_byte(b))?;
        let end = bytes[start..]
            .iter()
            .position(|&b| !is_token_byte(b))
            .map_or(bytes.len(), |len| start + len);
        pos = end;
        lowered.get(start..end)
    })
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}
