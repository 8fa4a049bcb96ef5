//! Entries as rows of `membolt_entries`, and back, with the §14 checksum.
//!
//! The checksum of a row is the CRC-32 of the entry's key, one byte 0xFF,
//! and the entry's record encoding (`Entry::encode`, entry.rs); of a
//! tombstone, the key and one byte 0xFE (neither byte occurs in UTF-8, so
//! the key's end is unambiguous). It is computed from the entry before its
//! text is escaped for the server (text.rs) and checked after the row is
//! read back, so a row changed on the way or by hand is found.

use std::collections::HashMap;
use std::sync::Arc;

use postgres::Row;

use super::text::{from_column, to_column};
use crate::entry::{Entry, Interner};
use crate::error::{Location, Result, StoreError};
use crate::store::change_set::Change;

const LIVE: u8 = 0xFF;
const TOMBSTONE: u8 = 0xFE;

pub(crate) fn checksum(key: &str, entry: Option<&Entry>) -> i64 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(key.as_bytes());
    match entry {
        Some(entry) => {
            hasher.update(&[LIVE]);
            hasher.update(&entry.encode());
        }
        None => hasher.update(&[TOMBSTONE]),
    }
    i64::from(hasher.finalize())
}

/// One change set as the columns of the write statement (one array per
/// column, a row per key): the last change of each key, which is its state
/// after the transaction.
#[derive(Default)]
pub(crate) struct Columns {
    pub keys: Vec<String>,
    pub values: Vec<String>,
    pub types: Vec<String>,
    pub namespaces: Vec<String>,
    /// Each entry's references as one array literal (`{"a","b"}`), cast to
    /// `text[]` by the statement: arrays of arrays must be rectangular.
    pub references: Vec<String>,
    pub created: Vec<i64>,
    pub updated: Vec<i64>,
    pub deleted: Vec<bool>,
    pub checksums: Vec<i64>,
}

impl Columns {
    /// `deleted_at` stamps the tombstones (the change set's clock).
    pub(crate) fn of(changes: &[Change], deleted_at: i64) -> Columns {
        let mut last: HashMap<&str, usize> = HashMap::with_capacity(changes.len());
        for (i, (key, _)) in changes.iter().enumerate() {
            last.insert(key, i);
        }
        let mut columns = Columns::default();
        for (i, (key, entry)) in changes.iter().enumerate() {
            if last[&**key] != i {
                continue;
            }
            columns.keys.push(to_column(key).into_owned());
            columns.checksums.push(checksum(key, entry.as_deref()));
            let (value, kind, namespace, references, created, updated) = match entry {
                Some(entry) => (
                    to_column(&entry.value).into_owned(),
                    to_column(&entry.kind).into_owned(),
                    to_column(&entry.namespace).into_owned(),
                    array_literal(&entry.references),
                    entry.created_at,
                    entry.updated_at,
                ),
                None => (
                    String::new(),
                    String::new(),
                    String::new(),
                    "{}".into(),
                    deleted_at,
                    deleted_at,
                ),
            };
            columns.values.push(value);
            columns.types.push(kind);
            columns.namespaces.push(namespace);
            columns.references.push(references);
            columns.created.push(created);
            columns.updated.push(updated);
            columns.deleted.push(entry.is_none());
        }
        columns
    }

    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }
}

/// A PostgreSQL array literal of `items`: each quoted, `\` and `"` escaped.
/// It is a parameter value (parsed by `array_in`), never SQL.
fn array_literal(items: &[Arc<str>]) -> String {
    let mut out = String::from("{");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        for c in to_column(item).chars() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
    }
    out.push('}');
    out
}

/// One row of an entry query (its columns in the order of statements.rs): the key, and the entry (`None`: a tombstone).
pub(crate) fn decode(
    row: &Row,
    interner: &mut Interner,
    store: &Location,
) -> Result<(Arc<str>, Option<Entry>)> {
    let damaged = |key: &str, why: &str| {
        StoreError::corrupt(store, format!("entry {key:?} is damaged: {why}"))
    };
    let text = |i: usize| -> Result<&str> {
        row.try_get::<_, &str>(i)
            .map_err(|e| StoreError::corrupt(store, format!("a row cannot be read: {e}")))
    };
    let stored_key = text(0)?;
    let key: Arc<str> = from_column(stored_key)
        .ok_or_else(|| damaged(stored_key, "its key is not membolt's text"))?
        .into();
    let number = |i: usize| -> Result<i64> {
        row.try_get::<_, i64>(i)
            .map_err(|e| damaged(&key, &e.to_string()))
    };
    let deleted: bool = row.try_get(7).map_err(|e| damaged(&key, &e.to_string()))?;
    let stored_checksum = number(8)?;
    if deleted {
        if checksum(&key, None) != stored_checksum {
            return Err(damaged(&key, "its tombstone fails its checksum"));
        }
        return Ok((key, None));
    }
    let field = |i: usize, name: &str| -> Result<Arc<str>> {
        from_column(text(i)?)
            .map(|t| Arc::from(&*t))
            .ok_or_else(|| damaged(&key, &format!("its {name} is not membolt's text")))
    };
    let value = field(1, "value")?;
    let kind = interner.intern(&field(2, "type")?);
    let namespace = interner.intern(&field(3, "namespace")?);
    let stored_refs: Vec<&str> = row.try_get(4).map_err(|e| damaged(&key, &e.to_string()))?;
    let references = stored_refs
        .into_iter()
        .map(|r| {
            from_column(r)
                .map(|t| Arc::from(&*t))
                .ok_or_else(|| damaged(&key, "a reference is not membolt's text"))
        })
        .collect::<Result<Vec<Arc<str>>>>()?;
    let entry = Entry {
        key: key.clone(),
        value,
        kind,
        namespace,
        references,
        created_at: number(5)?,
        updated_at: number(6)?,
    };
    if checksum(&key, Some(&entry)) != stored_checksum {
        return Err(damaged(&key, "it fails its checksum"));
    }
    Ok((key, Some(entry)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, refs: &[&str]) -> Arc<Entry> {
        crate::testing::entry(key, "note", "v", 7, refs)
    }

    #[test]
    fn the_last_change_of_a_key_is_the_one_written() {
        let changes: Vec<Change> = vec![
            ("a".into(), Some(entry("a", &[]))),
            ("b".into(), Some(entry("b", &["a"]))),
            ("a".into(), None),
        ];
        let columns = Columns::of(&changes, 99);
        assert_eq!(columns.keys, ["b", "a"]);
        assert_eq!(columns.deleted, [false, true]);
        assert_eq!(columns.updated[1], 99);
        assert_eq!(columns.references, [r#"{"a"}"#, "{}"]);
    }

    #[test]
    fn array_literals_quote_every_element() {
        let refs: Vec<Arc<str>> =
            vec!["x".into(), "q\"u\\o,te}".into(), "NULL".into(), "\0".into()];
        assert_eq!(
            array_literal(&refs),
            "{\"x\",\"q\\\"u\\\\o,te}\",\"NULL\",\"\u{FFFF}0\"}"
        );
    }

    #[test]
    fn checksums_tell_entries_and_tombstones_apart() {
        let live = entry("k", &["p"]);
        assert_ne!(checksum("k", Some(&live)), checksum("k", None));
        let mut changed = (*live).clone();
        changed.value = "w".into();
        assert_ne!(checksum("k", Some(&live)), checksum("k", Some(&changed)));
        assert_ne!(checksum("k", None), checksum("k2", None));
    }
}
