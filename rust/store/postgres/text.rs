//! Text as PostgreSQL stores it: everything but U+0000.
//!
//! A `text` value cannot hold U+0000, and membolt's keys and values may
//! (§1.2 puts no limit on their characters). So text is stored as it is,
//! except for two characters, each written as U+FFFF and one more:
//!
//! ```text
//! U+0000  ->  U+FFFF '0'
//! U+FFFF  ->  U+FFFF U+FFFF
//! ```
//!
//! U+FFFF is a noncharacter (never in real text), so a column reads as the
//! text itself for everything a person writes, and the mapping is one to
//! one: two keys stay two rows. Text without either character (nearly all)
//! is passed through without a copy.

use std::borrow::Cow;

const ESCAPE: char = '\u{FFFF}';
const ESCAPE_UTF8: &[u8] = "\u{FFFF}".as_bytes();

/// Whether `bytes` hold U+FFFF (EF BF BF): a scan for its first byte, rare
/// in text, then a look at the two after it.
fn holds_escape(bytes: &[u8]) -> bool {
    memchr::memchr_iter(ESCAPE_UTF8[0], bytes).any(|i| bytes[i..].starts_with(ESCAPE_UTF8))
}

/// `text` as stored.
pub(crate) fn to_column(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    if memchr::memchr(0, bytes).is_none() && !holds_escape(bytes) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\0' => {
                out.push(ESCAPE);
                out.push('0');
            }
            ESCAPE => {
                out.push(ESCAPE);
                out.push(ESCAPE);
            }
            other => out.push(other),
        }
    }
    Cow::Owned(out)
}

/// The text a column holds; `None` when it is no output of [`to_column`]
/// (an escape followed by anything else: the row was changed by hand).
pub(crate) fn from_column(column: &str) -> Option<Cow<'_, str>> {
    if !holds_escape(column.as_bytes()) {
        return Some(Cow::Borrowed(column));
    }
    let mut out = String::with_capacity(column.len());
    let mut chars = column.chars();
    while let Some(c) = chars.next() {
        if c == ESCAPE {
            match chars.next() {
                Some('0') => out.push('\0'),
                Some(ESCAPE) => out.push(ESCAPE),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_stored_as_it_is_without_a_copy() {
        for text in ["", "key:one", "世界 <memory>", "\u{FFFE}"] {
            assert!(matches!(to_column(text), Cow::Borrowed(t) if t == text));
            assert!(matches!(from_column(text), Some(Cow::Borrowed(t)) if t == text));
        }
    }

    #[test]
    fn nul_and_the_escape_round_trip_and_stay_distinct() {
        let texts = [
            "\0",
            "a\0b",
            "\u{FFFF}",
            "\u{FFFF}0",
            "\0\u{FFFF}\0",
            "x\u{FFFF}\u{FFFF}y",
        ];
        let stored: Vec<String> = texts.iter().map(|t| to_column(t).into_owned()).collect();
        for (text, column) in texts.iter().zip(&stored) {
            assert!(!column.contains('\0'), "{column:?}");
            assert_eq!(from_column(column).as_deref(), Some(*text));
        }
        let mut distinct = stored.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), stored.len());
    }

    #[test]
    fn a_column_no_write_produced_is_refused() {
        assert_eq!(from_column("a\u{FFFF}"), None);
        assert_eq!(from_column("a\u{FFFF}b"), None);
    }
}
