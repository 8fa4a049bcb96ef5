//! Flattening and escaping everything written into the `<memory>` block and
//! the tool texts (§5.4): no stored text can end a line or the block early,
//! or reorder it visually.

use std::borrow::Cow;

/// Separator that [`flatten`] puts between the non-empty lines of a text.
pub const FLATTEN_SEPARATOR: &str = " / ";

/// Replacement for control and bidi characters in the `<memory>` block (§5.4).
pub const REPLACEMENT_CHAR: char = '\u{FFFD}';

/// The characters flattening splits on (§5.4): `\n` and `\r`.
pub(super) const FLATTEN_BREAKS: [char; 2] = ['\n', '\r'];

fn has_line_break(text: &str) -> bool {
    // A byte scan: both breaks are ASCII, and no byte of a multi-byte
    // character maps to an ASCII character.
    text.bytes()
        .any(|b| FLATTEN_BREAKS.contains(&char::from(b)))
}

/// The one definition of "a line break" for membolt's output: every character
/// that some reader ends a line at. That is exactly what Python's
/// `str.splitlines()` splits on: `\n`, `\r`, U+000B, U+000C, U+001C–U+001E,
/// U+0085, U+2028 and U+2029 (a superset of Unicode's mandatory breaks).
///
/// §5.4 keeps the structure of a text line by handling each of them: the two
/// [`FLATTEN_BREAKS`] are flattened to ` / `, every other one is an
/// [`is_replaced_char`] and becomes U+FFFD.
#[must_use]
pub fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\u{b}' | '\u{c}' | '\r' | '\u{1c}'..='\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// §5.4 flattening only: if `text` holds `\n` or `\r`, split on runs of them,
/// trim each part, drop empty parts and join the rest with ` / `. Text without
/// line breaks is returned as it is (borrowed, *not* trimmed).
#[must_use]
pub fn flatten(text: &str) -> Cow<'_, str> {
    if !has_line_break(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    // Splitting on single characters and dropping the empty parts is the same
    // as splitting on runs of them.
    for part in text.split(FLATTEN_BREAKS) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str(FLATTEN_SEPARATOR);
        }
        out.push_str(part);
    }
    Cow::Owned(out)
}

/// A key or value as the `memory_search` and `memory_list` texts show it
/// (§4, §5.4 (0.2)): [`flatten`], then every [`is_replaced_char`] replaced by
/// U+FFFD; no XML escaping (a tool result is not inside the `<memory>` block,
/// and `&`, `<`, `>` shown as they are let the model quote a plain key
/// exactly). The result is one line for every reader ([`is_line_break`]) and
/// cannot reorder the text around it.
#[must_use]
pub fn flatten_plain(text: &str) -> Cow<'_, str> {
    let flat = flatten(text);
    if !flat.chars().any(is_replaced_char) {
        return flat;
    }
    Cow::Owned(
        flat.chars()
            .map(|c| {
                if is_replaced_char(c) {
                    REPLACEMENT_CHAR
                } else {
                    c
                }
            })
            .collect(),
    )
}

/// True for the characters §5.4 replaces by U+FFFD:
/// * the controls U+0000–U+001F except tab, U+007F and the C1 controls
///   U+0080–U+009F;
/// * every [`is_line_break`] character that flattening does not handle
///   (U+000B, U+000C, U+001C–U+001E and U+0085 are controls already; U+2028,
///   U+2029);
/// * the bidi marks U+200E, U+200F, U+061C, embeddings and overrides
///   U+202A–U+202E and isolates U+2066–U+2069;
/// * the tag characters U+E0000–U+E007F (invisible text).
///
/// `\n` and `\r` are in the first group: only text that skipped flattening
/// ([`escape_xml`] alone) still holds them.
#[must_use]
pub fn is_replaced_char(c: char) -> bool {
    (c < '\u{20}' && c != '\t')
        || ('\u{7f}'..='\u{9f}').contains(&c)
        || (is_line_break(c) && !FLATTEN_BREAKS.contains(&c))
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{61c}')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
        || ('\u{e0000}'..='\u{e007f}').contains(&c)
}

fn needs_escape(c: char) -> bool {
    matches!(c, '&' | '<' | '>') || is_replaced_char(c)
}

/// §5.4 escaping without flattening: `&` → `&amp;`, `<` → `&lt;`, `>` → `&gt;`,
/// and every [`is_replaced_char`] character → U+FFFD.
#[must_use]
pub fn escape_xml(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c if is_replaced_char(c) => out.push(REPLACEMENT_CHAR),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// §5.4 in full, in the spec's order: [`flatten`], then [`escape_xml`]. This is
/// what every key, type, value and parent name of the `<memory>` block (and
/// every key and type on its map and downstream lines) goes through. The
/// result never contains an [`is_line_break`] character, `<`, `>` or an
/// unescaped `&`.
#[must_use]
pub fn escape_line(text: &str) -> Cow<'_, str> {
    match flatten(text) {
        Cow::Borrowed(flat) => escape_xml(flat),
        Cow::Owned(flat) => match escape_xml(&flat) {
            Cow::Borrowed(_) => Cow::Owned(flat),
            Cow::Owned(escaped) => Cow::Owned(escaped),
        },
    }
}
