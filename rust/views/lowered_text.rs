//! Every entry's lowered key and value, packed into one buffer, so that a
//! search that reads most entries streams through memory instead of
//! following a pointer per entry.
//!
//! Texts are lowered as Python's `str.lower()` does (`text::lower`; ASCII
//! byte for byte), so a byte match of a lowered needle is exactly
//! `needle in text.lower()`: UTF-8 is self-synchronising, so a match of a
//! valid needle starts and ends on character boundaries.
//!
//! A slot's key and value sit side by side (`span`); a changed entry gets a
//! new span at the end and its old one becomes garbage, which a compaction
//! drops once it outweighs the live text. Matches that straddle two texts
//! are discarded, and the search after a discarded match resumes one byte
//! later, so no match inside a text can be hidden by one across texts.
//!
//! The buffer may begin with an image's bytes (`store/image/`), used where
//! they lie: offsets below `base_len` are in the image's section, the
//! others in `bytes` (at the offset less `base_len`). No span straddles the
//! two, and a compaction copies the live texts into `bytes` alone.
//!
//! Invariants: `spans[slot]` is the live span of `slot` (or `None`);
//! `order` lists every span ever appended since the last compaction, live
//! or dead, in buffer order, so it is sorted by start.

use std::ops::Range;
use std::sync::Arc;

use memchr::memmem::Finder;

use crate::store::image::Base;
use crate::text::lower;

/// Where one slot's lowered key and value are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: usize,
    key_len: u32,
    value_len: u32,
}

impl Span {
    fn key_end(self) -> usize {
        self.start + self.key_len as usize
    }

    fn end(self) -> usize {
        self.key_end() + self.value_len as usize
    }
}

/// Which text of an entry a match was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    Key,
    Value,
}

#[derive(Default)]
pub(crate) struct LoweredText {
    /// The image holding the first `base_len` bytes, and where they are.
    base: Option<(Arc<Base>, Range<usize>)>,
    base_len: usize,
    bytes: Vec<u8>,
    spans: Vec<Option<Span>>,
    /// `(start, slot)` of every span in the buffer, live or dead.
    order: Vec<(usize, u32)>,
    dead_bytes: usize,
}

impl LoweredText {
    /// Sets the texts of `slot` (growing the slot table as needed).
    pub(crate) fn set(&mut self, slot: u32, key: &str, value: &str) {
        self.clear(slot);
        let at = slot as usize;
        if self.spans.len() <= at {
            self.spans.resize(at + 1, None);
        }
        let start = self.base_len + self.bytes.len();
        let key_len = push_lowered(&mut self.bytes, key);
        let value_len = push_lowered(&mut self.bytes, value);
        self.spans[at] = Some(Span {
            start,
            key_len,
            value_len,
        });
        self.order.push((start, slot));
        if self.dead_bytes > self.len() / 2 {
            self.compact();
        }
    }

    /// Forgets the texts of `slot`.
    pub(crate) fn clear(&mut self, slot: u32) {
        if let Some(span) = self.spans.get_mut(slot as usize).and_then(Option::take) {
            self.dead_bytes += span.end() - span.start;
        }
    }

    /// The lowered key of `slot` (empty for a free slot).
    pub(crate) fn key(&self, slot: u32) -> &[u8] {
        self.span(slot)
            .map_or(&[], |span| self.slice(span.start..span.key_end()))
    }

    /// The lowered value of `slot` (empty for a free slot).
    pub(crate) fn value(&self, slot: u32) -> &[u8] {
        self.span(slot)
            .map_or(&[], |span| self.slice(span.key_end()..span.end()))
    }

    /// Bytes of the buffer, all on one side of `base_len`.
    fn slice(&self, range: Range<usize>) -> &[u8] {
        if range.start >= self.base_len {
            &self.bytes[range.start - self.base_len..range.end - self.base_len]
        } else {
            &self.base_bytes()[range]
        }
    }

    fn base_bytes(&self) -> &[u8] {
        self.base
            .as_ref()
            .map_or(&[], |(base, range)| &base.image().raw()[range.clone()])
    }

    /// The buffer's length, the image's bytes included.
    fn len(&self) -> usize {
        self.base_len + self.bytes.len()
    }

    fn span(&self, slot: u32) -> Option<Span> {
        self.spans.get(slot as usize).copied().flatten()
    }

    /// Calls `visit(slot, found)` once for every live slot whose key (else
    /// value) holds `finder`'s needle, in buffer order. One pass over the
    /// buffer: a slot is left as soon as it matched.
    pub(crate) fn scan(&self, finder: &Finder<'_>, mut visit: impl FnMut(u32, Found)) {
        let needle_len = finder.needle().len();
        let total = self.len();
        let base = self.base_bytes();
        let mut at = 0;
        // The span holding `at`: the last one starting at or before it.
        let mut span_index = 0;
        while at < total {
            // The image's bytes, then this buffer's: no span is in both.
            let (buffer, offset) = if at < self.base_len {
                (base, 0)
            } else {
                (self.bytes.as_slice(), self.base_len)
            };
            let Some(found) = finder.find(&buffer[at - offset..]) else {
                if offset == 0 && self.base_len > 0 {
                    at = self.base_len;
                    continue;
                }
                break;
            };
            let position = at + found;
            while span_index + 1 < self.order.len() && self.order[span_index + 1].0 <= position {
                span_index += 1;
            }
            let (start, slot) = self.order[span_index];
            let span = match self.span(slot) {
                Some(span) if span.start == start => span,
                // A dead span: go on after it.
                _ => {
                    at = self.order.get(span_index + 1).map_or(total, |next| next.0);
                    continue;
                }
            };
            let end = position + needle_len;
            let hit = if end <= span.key_end() {
                Some(Found::Key)
            } else if position >= span.key_end() && end <= span.end() {
                Some(Found::Value)
            } else {
                None // across two texts
            };
            match hit {
                Some(found) => {
                    visit(slot, found);
                    at = span.end();
                }
                None => at = position + 1,
            }
        }
    }

    /// Rewrites the buffer with live texts only, in slot order.
    fn compact(&mut self) {
        let mut bytes = Vec::with_capacity(self.len() - self.dead_bytes);
        let mut order = Vec::with_capacity(self.spans.len());
        let mut spans = std::mem::take(&mut self.spans);
        for (slot, span) in spans.iter_mut().enumerate() {
            if let Some(span) = span {
                let start = bytes.len();
                bytes.extend_from_slice(self.slice(span.start..span.end()));
                span.start = start;
                order.push((start, slot as u32));
            }
        }
        self.spans = spans;
        self.base = None;
        self.base_len = 0;
        self.bytes = bytes;
        self.order = order;
        self.dead_bytes = 0;
    }

    /// The texts of an image's slots: `bytes` (the range of the image
    /// holding every slot's lowered key and value, back to back) and
    /// `lengths` (per slot, the key's and the value's length, `u32` each,
    /// little-endian). `None` if they do not agree.
    pub(crate) fn from_image(
        base: &Arc<Base>,
        bytes: Range<usize>,
        lengths: &[u8],
    ) -> Option<LoweredText> {
        let count = lengths.len() / 8;
        let mut spans = Vec::with_capacity(count);
        let mut order = Vec::with_capacity(count);
        let mut start = 0usize;
        for (slot, pair) in lengths.chunks_exact(8).enumerate() {
            let key_len = u32::from_le_bytes(pair[..4].try_into().expect("4 bytes"));
            let value_len = u32::from_le_bytes(pair[4..].try_into().expect("4 bytes"));
            spans.push(Some(Span {
                start,
                key_len,
                value_len,
            }));
            order.push((start, slot as u32));
            start += key_len as usize + value_len as usize;
        }
        (start == bytes.len()).then(|| LoweredText {
            base: Some((base.clone(), bytes)),
            base_len: start,
            bytes: Vec::new(),
            spans,
            order,
            dead_bytes: 0,
        })
    }

    /// The image sections of a text built by [`LoweredText::build`] (slot
    /// `i` the `i`-th text, nothing dead): the bytes, and the lengths as
    /// [`LoweredText::from_image`] reads them.
    pub(crate) fn image_sections(&self) -> (Vec<u8>, Vec<u8>) {
        let mut bytes = Vec::with_capacity(self.len());
        let mut lengths = Vec::with_capacity(self.spans.len() * 8);
        for span in self.spans.iter().flatten() {
            bytes.extend_from_slice(self.slice(span.start..span.end()));
            lengths.extend_from_slice(&span.key_len.to_le_bytes());
            lengths.extend_from_slice(&span.value_len.to_le_bytes());
        }
        (bytes, lengths)
    }

    /// The texts of `texts` (slot `i` holds the i-th), in one pass.
    pub(crate) fn build<'a>(texts: impl ExactSizeIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut built = LoweredText {
            spans: Vec::with_capacity(texts.len()),
            order: Vec::with_capacity(texts.len()),
            ..LoweredText::default()
        };
        for (slot, (key, value)) in texts.enumerate() {
            let start = built.bytes.len();
            let key_len = push_lowered(&mut built.bytes, key);
            let value_len = push_lowered(&mut built.bytes, value);
            built.spans.push(Some(Span {
                start,
                key_len,
                value_len,
            }));
            built.order.push((start, slot as u32));
        }
        built
    }
}

/// Appends `lower(text)`; returns its length.
fn push_lowered(bytes: &mut Vec<u8>, text: &str) -> u32 {
    let start = bytes.len();
    if text.is_ascii() {
        bytes.extend_from_slice(text.as_bytes());
        bytes[start..].make_ascii_lowercase();
    } else {
        bytes.extend_from_slice(lower(text).as_bytes());
    }
    (bytes.len() - start) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanned(text: &LoweredText, needle: &str) -> Vec<(u32, Found)> {
        let mut out = Vec::new();
        text.scan(&Finder::new(needle.as_bytes()), |slot, found| {
            out.push((slot, found));
        });
        out.sort_by_key(|&(slot, _)| slot);
        out
    }

    #[test]
    fn a_match_across_two_texts_hides_no_match_inside_one() {
        let text = LoweredText::build([("xa", "aab"), ("A", "a")].into_iter());
        // "aa" straddles key and value of slot 0 at offset 1, and lies
        // inside the value at offset 2; slot 1's "a|a" straddles only.
        assert_eq!(scanned(&text, "aa"), [(0, Found::Value)]);
        assert_eq!(scanned(&text, "xa"), [(0, Found::Key)]);
    }

    #[test]
    fn changed_and_cleared_slots_answer_from_their_live_texts() {
        let mut text = LoweredText::default();
        text.set(0, "Alpha", "one");
        text.set(1, "beta", "ALPHA two");
        text.set(0, "gamma", "three");
        assert_eq!(scanned(&text, "alpha"), [(1, Found::Value)]);
        text.clear(1);
        assert!(scanned(&text, "alpha").is_empty());
        assert_eq!(text.key(0), b"gamma");
        assert_eq!(text.value(1), b"");
        for round in 0..50 {
            text.set(2, "k", &format!("value {round}"));
        }
        assert!(text.bytes.len() < 200, "compacted: {}", text.bytes.len());
        assert_eq!(scanned(&text, "value 49"), [(2, Found::Value)]);
        assert_eq!(scanned(&text, "gamma"), [(0, Found::Key)]);
    }

    #[test]
    fn texts_are_lowered_as_python_lowers() {
        let text = LoweredText::build([("ÉCOLE", "ΣΟΦΙΑ Kelvin")].into_iter());
        assert_eq!(text.key(0), "école".as_bytes());
        assert_eq!(scanned(&text, "σοφια"), [(0, Found::Value)]);
    }
}
