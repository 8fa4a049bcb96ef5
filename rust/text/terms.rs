//! The terms of a text (§15.1): what the ranked search indexes and looks
//! up. One definition for keys, values and queries alike:
//!
//! 1. **split** at `:`, `_`, `-`, `/`, `.` and between a lower-case letter
//!    or a digit and a following upper-case letter (`error:ciRun` → `error`,
//!    `ci`, `Run`; `HTTPServer` stays whole);
//! 2. **words**: each piece's words by the Unicode word boundaries of
//!    UAX #29 (`unicode-segmentation`'s `unicode_words`), lowered;
//! 3. **CJK**: a run of Han, Hiragana, Katakana or Hangul characters becomes
//!    its overlapping two-character pairs (one character stays itself);
//! 4. **stem**: a word of ASCII letters and digits only goes through the
//!    English Snowball stemmer (`rust-stemmers`); other words stay lowered.
//!
//! Words are handed out before stemming ([`for_each_word`]) so that a
//! caller indexing many texts can stem each distinct word once
//! ([`term_of`]); [`for_each_term`] does both steps.
//!
//! ASCII text, nearly all of what agents save, takes a byte scan that gives
//! exactly what the general path gives (a test compares the two on random
//! text); the general path segments by UAX #29 and lowers with [`lower`].

use std::borrow::Cow;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

use super::lower;

/// What a word becomes as a term.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WordKind {
    /// ASCII letters and digits only: the term is the word's stem.
    Stemmed,
    /// Anything else (a word with an apostrophe, a non-ASCII word, a CJK
    /// pair): the term is the lowered word itself.
    AsIs,
}

/// §15.1 step 1: the characters a text is split at (and dropped).
pub const TERM_SEPARATORS: &[char] = &[':', '_', '-', '/', '.'];

/// Calls `visit(lowered word, kind)` for every word of `text`, in order
/// (§15.1 steps 1–3). A word may repeat.
pub fn for_each_word(text: &str, mut visit: impl FnMut(&str, WordKind)) {
    if text.is_ascii() {
        ascii_words(text.as_bytes(), &mut visit);
    } else {
        general_words(text, &mut visit);
    }
}

/// The term of a word from [`for_each_word`] (§15.1 step 4).
#[must_use]
pub fn term_of(word: &str, kind: WordKind) -> Cow<'_, str> {
    match kind {
        WordKind::Stemmed => stemmer().stem(word),
        WordKind::AsIs => Cow::Borrowed(word),
    }
}

/// Calls `visit(term, lowered word)` for every term of `text`, in order.
pub fn for_each_term(text: &str, mut visit: impl FnMut(&str, &str)) {
    for_each_word(text, |word, kind| visit(&term_of(word, kind), word));
}

/// Every term of `text`, in order, repeats included.
#[must_use]
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, |term, _| out.push(term.to_owned()));
    out
}

/// The significant terms of a query (§15.1): its terms whose lowered word
/// is not a query stopword ([`super::is_query_stopword`]), each once, in
/// order of first appearance.
#[must_use]
pub fn query_terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for_each_term(query, |term, word| {
        if !super::is_query_stopword(word) && !out.iter().any(|seen| seen == term) {
            out.push(term.to_owned());
        }
    });
    out
}

/// The English (Porter2) Snowball stemmer; it expects lowered input.
fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

// ---------------------------------------------------------------------------
// ASCII text: a byte scan
// ---------------------------------------------------------------------------

/// Words of ASCII text. After the separators are dropped, UAX #29 joins
/// only runs of letters and digits, and two runs across one character:
/// `'` between two letters or two digits, `,` or `;` between two digits
/// (its rules WB6/WB7 and WB11/WB12; the other joiners, `:` `.` `_`, are
/// separators here). The case-change split cuts a run in two.
fn ascii_words(bytes: &[u8], visit: &mut impl FnMut(&str, WordKind)) {
    let mut lowered = String::new();
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_alphanumeric() {
            at += 1;
            continue;
        }
        let start = at;
        let mut kind = WordKind::Stemmed;
        loop {
            // One run of letters and digits, up to a case change.
            let run_start = at;
            at += 1;
            while at < bytes.len()
                && bytes[at].is_ascii_alphanumeric()
                && !(at > run_start && is_case_change(bytes[at - 1], bytes[at]))
            {
                at += 1;
            }
            let joined = at + 1 < bytes.len()
                && bytes[at + 1].is_ascii_alphanumeric()
                && joins(bytes[at - 1], bytes[at], bytes[at + 1]);
            if !joined {
                break;
            }
            kind = WordKind::AsIs;
            at += 1;
        }
        lowered.clear();
        lowered.extend(
            bytes[start..at]
                .iter()
                .map(|b| char::from(b.to_ascii_lowercase())),
        );
        visit(&lowered, kind);
    }
}

/// §15.1 step 1 on ASCII: a lower-case letter or digit, then an upper-case
/// letter.
fn is_case_change(before: u8, after: u8) -> bool {
    (before.is_ascii_lowercase() || before.is_ascii_digit()) && after.is_ascii_uppercase()
}

/// Whether UAX #29 keeps `before joiner after` in one word (ASCII only).
fn joins(before: u8, joiner: u8, after: u8) -> bool {
    let letters = before.is_ascii_alphabetic() && after.is_ascii_alphabetic();
    let digits = before.is_ascii_digit() && after.is_ascii_digit();
    match joiner {
        b'\'' => letters || digits,
        b',' | b';' => digits,
        _ => false,
    }
}

// ---------------------------------------------------------------------------
// Any text: pieces, CJK runs, UAX #29 words
// ---------------------------------------------------------------------------

fn general_words(text: &str, visit: &mut impl FnMut(&str, WordKind)) {
    for piece in pieces(text) {
        piece_words(piece, visit);
    }
}

/// §15.1 step 1: the pieces of `text`, empty ones included.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let mut previous: Option<char> = None;
        for (at, c) in rest.char_indices() {
            if TERM_SEPARATORS.contains(&c) {
                let piece = &rest[..at];
                rest = &rest[at + c.len_utf8()..];
                return Some(piece);
            }
            if let Some(before) = previous
                && (before.is_lowercase() || before.is_ascii_digit())
                && c.is_uppercase()
            {
                let piece = &rest[..at];
                rest = &rest[at..];
                return Some(piece);
            }
            previous = Some(c);
        }
        done = true;
        Some(rest)
    })
}

/// The words of one piece: its CJK runs as pairs, the text between them by
/// UAX #29.
fn piece_words(piece: &str, visit: &mut impl FnMut(&str, WordKind)) {
    let mut lowered = String::new();
    let mut other_start = 0;
    let mut chars = piece.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if !is_cjk(c) {
            continue;
        }
        uax29_words(&piece[other_start..at], &mut lowered, visit);
        // The CJK run from `at`: its character boundaries.
        let mut bounds = vec![at, at + c.len_utf8()];
        while let Some(&(next_at, next)) = chars.peek() {
            if !is_cjk(next) {
                break;
            }
            bounds.push(next_at + next.len_utf8());
            chars.next();
        }
        if bounds.len() == 2 {
            visit(&piece[bounds[0]..bounds[1]], WordKind::AsIs);
        } else {
            for pair in bounds.windows(3) {
                visit(&piece[pair[0]..pair[2]], WordKind::AsIs);
            }
        }
        other_start = *bounds.last().expect("a run has an end");
    }
    uax29_words(&piece[other_start..], &mut lowered, visit);
}

fn uax29_words(text: &str, lowered: &mut String, visit: &mut impl FnMut(&str, WordKind)) {
    for word in text.unicode_words() {
        let word = lower(word);
        let kind = if word.bytes().all(|b| b.is_ascii_alphanumeric()) {
            WordKind::Stemmed
        } else {
            WordKind::AsIs
        };
        lowered.clear();
        lowered.push_str(&word);
        visit(lowered, kind);
    }
}

/// §15.1 step 3: the characters of the Han, Hiragana, Katakana and Hangul
/// blocks (the Katakana block's prolonged sound mark `ー` included, its
/// middle dot `・`, a separator of names, not).
#[must_use]
pub fn is_cjk(c: char) -> bool {
    matches!(u32::from(c),
        0x1100..=0x11FF          // Hangul Jamo
        | 0x2E80..=0x2FDF        // CJK and Kangxi radicals
        | 0x3005..=0x3007        // 々 〆 〇
        | 0x3021..=0x3029        // Hangzhou numerals
        | 0x3038..=0x303B
        | 0x3041..=0x309F        // Hiragana
        | 0x30A0..=0x30FA        // Katakana
        | 0x30FC..=0x30FF
        | 0x3130..=0x318F        // Hangul compatibility Jamo
        | 0x31F0..=0x31FF        // Katakana phonetic extensions
        | 0x3400..=0x4DBF        // CJK extension A
        | 0x4E00..=0x9FFF        // CJK unified ideographs
        | 0xA960..=0xA97F        // Hangul Jamo extended A
        | 0xAC00..=0xD7AF        // Hangul syllables
        | 0xD7B0..=0xD7FF        // Hangul Jamo extended B
        | 0xF900..=0xFAFF        // CJK compatibility ideographs
        | 0xFF66..=0xFF9F        // halfwidth Katakana
        | 0xFFA0..=0xFFDC        // halfwidth Hangul
        | 0x1B000..=0x1B16F      // Kana supplement and extended
        | 0x20000..=0x3134F      // CJK extensions B–G, compatibility supplement
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<(String, WordKind)> {
        let mut out = Vec::new();
        for_each_word(text, |word, kind| out.push((word.to_owned(), kind)));
        out
    }

    fn general(text: &str) -> Vec<(String, WordKind)> {
        let mut out = Vec::new();
        general_words(text, &mut |word: &str, kind| {
            out.push((word.to_owned(), kind));
        });
        out
    }

    #[test]
    fn keys_split_at_separators_and_case_changes() {
        assert_eq!(terms("error:ciRun"), ["error", "ci", "run"]);
        assert_eq!(terms("HTTPServer"), ["httpserver"]);
        assert_eq!(terms("users.go"), ["user", "go"]);
        assert_eq!(
            terms("tool:Bash:pytest-q_x/y"),
            ["tool", "bash", "pytest", "q", "x", "y"]
        );
        assert_eq!(terms("v2Api"), ["v2", "api"]);
        assert_eq!(terms("3.14"), ["3", "14"]);
    }

    #[test]
    fn words_are_stemmed_lowered_and_keep_inner_apostrophes() {
        assert_eq!(terms("Tests testing TESTED"), ["test", "test", "test"]);
        assert_eq!(terms("don't"), ["don't"]);
        assert_eq!(terms("1,000 x;y"), ["1,000", "x", "y"]);
        assert_eq!(terms("caroline went"), ["carolin", "went"]);
        // Words of one or two characters count.
        assert_eq!(terms("db go a"), ["db", "go", "a"]);
        // Punctuation alone makes no word.
        assert!(terms(" ,;!? ").is_empty());
    }

    #[test]
    fn any_script_is_searchable() {
        assert_eq!(terms("Ünïcödé CAFÉ straße"), ["ünïcödé", "café", "straße"]);
        assert_eq!(terms("ΣΟΦΙΑ"), ["σοφια"]);
        assert_eq!(terms("Привет, мир"), ["привет", "мир"]);
        // The Kelvin sign lowers to an ASCII `k`, which is then stemmed.
        assert_eq!(terms("\u{212A}ings"), ["king"]);
    }

    #[test]
    fn cjk_runs_become_pairs() {
        assert_eq!(terms("東京で会議"), ["東京", "京で", "で会", "会議"]);
        assert_eq!(terms("東"), ["東"]);
        assert_eq!(terms("コーヒー"), ["コー", "ーヒ", "ヒー"]);
        assert_eq!(terms("서울 회의"), ["서울", "회의"]);
        assert_eq!(terms("abc東京Tower"), ["abc", "東京", "tower"]);
        // A separator ends a run.
        assert_eq!(terms("東京:大阪"), ["東京", "大阪"]);
    }

    #[test]
    fn query_terms_drop_stopwords_and_repeats() {
        assert_eq!(
            query_terms("When did Caroline go to the LGBTQ support group?"),
            ["carolin", "go", "lgbtq", "support", "group"]
        );
        assert_eq!(query_terms("tests testing"), ["test"]);
        // Stopwords are checked on the word, before stemming.
        assert_eq!(query_terms("the is was being"), Vec::<String>::new());
        assert_eq!(query_terms("beings"), ["be"]);
    }

    #[test]
    fn ascii_scan_equals_the_general_path() {
        let mut next = crate::test_rng::xorshift(0x5eed_1234_abcd_0001);
        let alphabet: &[u8] = b"aZbY09xQ ':;,._-/!?\"()A1z";
        for round in 0..20_000 {
            let len = next(24) as usize;
            let text: String = (0..len)
                .map(|_| char::from(alphabet[next(alphabet.len() as u64) as usize]))
                .collect();
            assert_eq!(words(&text), general(&text), "round {round}: {text:?}");
        }
    }

    #[test]
    fn general_path_agrees_with_unicode_words_on_one_piece() {
        // Without separators, case changes or CJK, the words are exactly
        // UAX #29's, lowered.
        for text in ["naïve café, ok", "don't stop", "1,000.5", "ÀB ça"] {
            let want: Vec<String> = text
                .unicode_words()
                .flat_map(|w| w.split(TERM_SEPARATORS))
                .filter(|w| !w.is_empty())
                .map(|w| lower(w).into_owned())
                .collect();
            let got: Vec<String> = general(text).into_iter().map(|(w, _)| w).collect();
            assert_eq!(got, want, "{text:?}");
        }
    }
}
