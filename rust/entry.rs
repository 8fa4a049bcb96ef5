//! A memory entry and its on-disk encoding.
//!
//! The encoding is membolt's own (never redb's tuple types, whose layout has
//! changed between redb majors): a format byte, then the fields in a fixed
//! order. The key is not part of the encoded value; it is the table key.
//!
//! ```text
//! format 2:  0x02
//!            checksum    CRC-32 (u32 LE) of the key's bytes, then of every
//!                        byte of the record after this field
//!            created_at  zigzag LEB128 i64
//!            updated_at  zigzag LEB128 i64
//!            value       LEB128 length + UTF-8 bytes
//!            type        LEB128 length + UTF-8 bytes
//!            namespace   LEB128 length + UTF-8 bytes
//!            references  LEB128 count, then each as LEB128 length + UTF-8 bytes
//! format 1:  0x01, then the same fields without the checksum (stores of
//!            schema 2 and older; read only when the caller accepts them)
//! ```
//!
//! The checksum covers the key too, so a record that a damaged page has
//! moved under another key is caught as well as a changed value. A reader
//! refuses a checksum that does not match, any other format byte, trailing
//! bytes, truncated fields or invalid UTF-8: a damaged record is reported,
//! never half-read, and no value differing from what was saved is returned.

use std::fmt;
use std::sync::Arc;

/// The record format this version writes.
const FORMAT_V2: u8 = 2;
/// The format of the versions before record checksums.
const FORMAT_V1: u8 = 1;
const CHECKSUM_BYTES: usize = 4;

/// Which record formats a reader takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accept {
    /// Only checksummed records (format 2): every store of schema 3 on.
    Checksummed,
    /// Records of format 1 too, which carry no checksum (an older store not
    /// upgraded yet, or a journal record, which has a checksum of its own).
    Legacy,
}

/// One stored fact. Strings are shared (`Arc<str>`) because the same entry is
/// read by the mirror, search, rendering and the query engine without copies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub key: Arc<str>,
    pub value: Arc<str>,
    /// The entry's type (`kind` because `type` is a Rust keyword).
    pub kind: Arc<str>,
    pub namespace: Arc<str>,
    /// Keys of parent entries: insertion order, no duplicates, never `key`.
    pub references: Vec<Arc<str>>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A field of an entry under its name in the JSON form (exports, query
/// rows, `Entry.to_dict`): the one list of those names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    CreatedAt,
    Key,
    Namespace,
    References,
    Type,
    UpdatedAt,
    Value,
}

impl Field {
    /// Every field, sorted by name (the JSON and `keys()` order).
    pub const SORTED: [Field; 7] = [
        Field::CreatedAt,
        Field::Key,
        Field::Namespace,
        Field::References,
        Field::Type,
        Field::UpdatedAt,
        Field::Value,
    ];

    /// Every field in the order of the JSON form (§1.2).
    pub const JSON_ORDER: [Field; 7] = [
        Field::Key,
        Field::Value,
        Field::Namespace,
        Field::Type,
        Field::References,
        Field::CreatedAt,
        Field::UpdatedAt,
    ];

    pub fn from_name(name: &str) -> Option<Field> {
        Field::SORTED.into_iter().find(|f| f.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Field::CreatedAt => "createdAt",
            Field::Key => "key",
            Field::Namespace => "namespace",
            Field::References => "references",
            Field::Type => "type",
            Field::UpdatedAt => "updatedAt",
            Field::Value => "value",
        }
    }

    /// The field as text, for the text fields.
    pub fn text(self, entry: &Entry) -> Option<&str> {
        match self {
            Field::Key => Some(&entry.key),
            Field::Namespace => Some(&entry.namespace),
            Field::Type => Some(&entry.kind),
            Field::Value => Some(&entry.value),
            _ => None,
        }
    }
}

/// Why a stored record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

impl Entry {
    /// Encodes everything but the key (which is the table key), with the
    /// checksum over the key and the fields.
    pub fn encode(&self) -> Vec<u8> {
        let refs_len: usize = self.references.iter().map(|r| r.len() + 2).sum();
        let mut out = Vec::with_capacity(
            28 + self.value.len() + self.kind.len() + self.namespace.len() + refs_len,
        );
        out.push(FORMAT_V2);
        out.extend_from_slice(&[0; CHECKSUM_BYTES]);
        self.encode_fields(&mut out);
        let checksum = record_checksum(&self.key, &out[1 + CHECKSUM_BYTES..]);
        out[1..=CHECKSUM_BYTES].copy_from_slice(&checksum.to_le_bytes());
        out
    }

    /// Encodes in format 1 (no checksum), as the versions before 0.2 did.
    #[cfg(any(test, feature = "testing"))]
    pub fn encode_legacy(&self) -> Vec<u8> {
        let mut out = vec![FORMAT_V1];
        self.encode_fields(&mut out);
        out
    }

    fn encode_fields(&self, out: &mut Vec<u8>) {
        put_varint(out, zigzag(self.created_at));
        put_varint(out, zigzag(self.updated_at));
        put_str(out, &self.value);
        put_str(out, &self.kind);
        put_str(out, &self.namespace);
        put_varint(out, self.references.len() as u64);
        for reference in &self.references {
            put_str(out, reference);
        }
    }

    /// Decodes a checksummed record stored under `key`.
    pub fn decode(key: &str, bytes: &[u8]) -> Result<Entry, DecodeError> {
        Entry::decode_with(key, bytes, &mut Interner::default(), Accept::Checksummed)
    }

    /// Decodes with `interner` sharing the few distinct types and namespaces
    /// of a store between entries (a full load makes one allocation fewer
    /// per field and entry).
    pub fn decode_with(
        key: &str,
        bytes: &[u8],
        interner: &mut Interner,
        accept: Accept,
    ) -> Result<Entry, DecodeError> {
        let mut reader = Reader { bytes, pos: 0 };
        match reader.byte()? {
            FORMAT_V2 => {
                let stored = bytes
                    .get(1..=CHECKSUM_BYTES)
                    .ok_or_else(|| DecodeError("record ends early".into()))?;
                let stored = u32::from_le_bytes(stored.try_into().expect("4 bytes"));
                if record_checksum(key, &bytes[1 + CHECKSUM_BYTES..]) != stored {
                    return Err(DecodeError(
                        "its checksum does not match (the stored bytes changed)".into(),
                    ));
                }
                reader.pos = 1 + CHECKSUM_BYTES;
            }
            FORMAT_V1 if accept == Accept::Legacy => {}
            FORMAT_V1 => {
                return Err(DecodeError(
                    "it has no checksum, which every record of this store must have".into(),
                ));
            }
            other => {
                return Err(DecodeError(format!("unknown record format {other}")));
            }
        }
        let created_at = unzigzag(reader.varint()?);
        let updated_at = unzigzag(reader.varint()?);
        let value = reader.string()?;
        let kind = interner.intern(reader.str()?);
        let namespace = interner.intern(reader.str()?);
        let count = reader.varint()?;
        // Each reference takes at least one byte, so a count larger than what
        // is left is damage, not a reason to allocate.
        if count > (bytes.len() - reader.pos) as u64 {
            return Err(DecodeError(format!("reference count {count} is too large")));
        }
        let mut references = Vec::with_capacity(count as usize);
        for _ in 0..count {
            references.push(reader.string()?);
        }
        if reader.pos != bytes.len() {
            return Err(DecodeError("trailing bytes after the record".into()));
        }
        Ok(Entry {
            key: Arc::from(key),
            value,
            kind,
            namespace,
            references,
            created_at,
            updated_at,
        })
    }

    /// Bytes this entry costs in the `<memory>` budget (§5.1).
    pub fn render_cost(&self) -> usize {
        self.key.len() + self.value.len() + 30
    }
}

/// Shares equal strings of low cardinality (types, namespaces).
#[derive(Default)]
pub struct Interner(rustc_hash::FxHashSet<Arc<str>>);

impl Interner {
    pub fn intern(&mut self, text: &str) -> Arc<str> {
        if let Some(shared) = self.0.get(text) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(text);
        self.0.insert(shared.clone());
        shared
    }
}

/// CRC-32 of the key, then of the encoded fields.
fn record_checksum(key: &str, fields: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(key.as_bytes());
    hasher.update(fields);
    hasher.finalize()
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8, DecodeError> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or_else(|| DecodeError("record ends early".into()))?;
        self.pos += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut n: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(DecodeError("varint longer than 64 bits".into()))
    }

    fn string(&mut self) -> Result<Arc<str>, DecodeError> {
        self.str().map(Arc::from)
    }

    fn str(&mut self) -> Result<&'a str, DecodeError> {
        let len = self.varint()?;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| self.pos.checked_add(len))
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| DecodeError("string runs past the record".into()))?;
        let bytes: &'a [u8] = self.bytes;
        let text = std::str::from_utf8(&bytes[self.pos..end])
            .map_err(|_| DecodeError("string is not UTF-8".into()))?;
        self.pos = end;
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Entry {
        Entry {
            key: "result:build".into(),
            value: "compiles; 世界 tests pending".into(),
            kind: "result".into(),
            namespace: "".into(),
            references: vec!["tool:write".into(), "prompt:build".into()],
            created_at: -5,
            updated_at: 1_700_000_000_123,
        }
    }

    fn legacy(bytes: &[u8], key: &str) -> Result<Entry, DecodeError> {
        Entry::decode_with(key, bytes, &mut Interner::default(), Accept::Legacy)
    }

    #[test]
    fn round_trips_every_field() {
        let entry = sample();
        let bytes = entry.encode();
        assert_eq!(bytes[0], FORMAT_V2);
        assert_eq!(Entry::decode("result:build", &bytes).unwrap(), entry);
    }

    #[test]
    fn extreme_timestamps_round_trip() {
        for t in [i64::MIN, -1, 0, 1, i64::MAX] {
            let mut entry = sample();
            entry.created_at = t;
            entry.updated_at = t;
            assert_eq!(
                Entry::decode("result:build", &entry.encode()).unwrap(),
                entry
            );
        }
    }

    /// Every single-bit flip of a record, and reading it under another key,
    /// is refused: no changed value is ever returned.
    #[test]
    fn every_flipped_bit_and_a_moved_key_are_refused() {
        let bytes = sample().encode();
        for bit in 0..bytes.len() * 8 {
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            let decoded = Entry::decode("result:build", &damaged);
            assert!(decoded.is_err(), "bit {bit} went unnoticed");
            if damaged[0] != FORMAT_V1 {
                assert!(legacy(&damaged, "result:build").is_err(), "bit {bit}");
            }
        }
        let error = Entry::decode("result:builds", &bytes).unwrap_err();
        assert!(error.0.contains("checksum"), "{error}");
    }

    #[test]
    fn format_1_is_read_only_when_accepted() {
        let entry = sample();
        let old = entry.encode_legacy();
        assert_eq!(old[0], FORMAT_V1);
        assert_eq!(legacy(&old, "result:build").unwrap(), entry);
        let refused = Entry::decode("result:build", &old).unwrap_err();
        assert!(refused.0.contains("no checksum"), "{refused}");
    }

    #[test]
    fn rejects_unknown_format_truncation_and_trailing_bytes() {
        for bytes in [sample().encode(), sample().encode_legacy()] {
            let mut future = bytes.clone();
            future[0] = 3;
            assert!(legacy(&future, "result:build").is_err());
            for cut in 0..bytes.len() {
                assert!(
                    legacy(&bytes[..cut], "result:build").is_err(),
                    "cut at {cut}"
                );
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(legacy(&longer, "result:build").is_err());
        }
    }

    #[test]
    fn rejects_invalid_utf8_and_huge_counts() {
        let mut entry = sample();
        entry.references.clear();
        let mut bytes = entry.encode_legacy();
        // The value string starts after format byte and two varints.
        let value_start = bytes.iter().position(|&b| b == b'c').unwrap();
        bytes[value_start] = 0xff;
        assert!(legacy(&bytes, "result:build").is_err());

        let mut bytes = entry.encode_legacy();
        let last = bytes.len() - 1;
        bytes[last] = 0x7f; // reference count 127 with nothing after it
        assert!(legacy(&bytes, "result:build").is_err());
    }
}
