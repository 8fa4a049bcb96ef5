//! What callers ask the store to do: saves, batch operations and caps, and
//! the argument rules checked before anything is written (§1.5).
//!
//! Requests arrive with the answers of the Python-side rule tables already
//! filled in (the inferred type, the wanted parent type, the caps): the core
//! keeps no copy of those tables.

use std::sync::Arc;

use crate::entry::Entry;
use crate::error::{Result, StoreError};

/// §1.5: the longest key (and reference) the store accepts, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;

/// Checks a key against §1.5; the message names the problem and `what`.
pub fn validate_key(key: &str, what: &str) -> Result<()> {
    if key.is_empty() {
        return Err(StoreError::invalid(format!("{what} must not be empty")));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(StoreError::invalid(format!(
            "{what} is {} bytes long; the limit is {MAX_KEY_BYTES}",
            key.len()
        )));
    }
    Ok(())
}

/// §12: a project name is data, of any characters but U+0000, up to the
/// key limit (§1.5).
pub fn validate_project(project: &str) -> Result<()> {
    validate_key(project, "project")?;
    if project.contains('\0') {
        return Err(StoreError::invalid("project must not contain U+0000"));
    }
    Ok(())
}

/// One save.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SaveRequest {
    pub key: String,
    pub value: String,
    /// An explicit type; `None` keeps an existing entry's type or uses
    /// `inferred_kind` for a new one.
    pub kind: Option<String>,
    /// `classify(key)`, used for a new key without an explicit type.
    pub inferred_kind: String,
    /// Kept on overwrite when `None`; `""` for a new key.
    pub namespace: Option<String>,
    /// Explicit parents (replacing the stored ones); `None` keeps them, or
    /// links a new key to its auto parent.
    pub references: Option<Vec<String>>,
    /// The wanted parent type (§3.1) of the new entry's type.
    pub parent_kind: Option<String>,
}

impl SaveRequest {
    /// The type a new entry made by this request gets.
    pub(crate) fn new_kind(&self) -> &str {
        self.kind.as_deref().unwrap_or(&self.inferred_kind)
    }

    pub(crate) fn validate(&self) -> Result<()> {
        validate_key(&self.key, "key")?;
        for reference in self.references.iter().flatten() {
            validate_key(reference, "reference")?;
        }
        Ok(())
    }
}

/// One operation of a `batch()` block.
#[derive(Clone, Debug)]
pub enum BatchOp {
    Save(SaveRequest),
    Delete(String),
    Link { key: String, parent: String },
    Unlink { key: String, parent: String },
}

/// What a `batch()` block did, per operation.
#[derive(Debug)]
pub enum BatchOutcome {
    Saved(Arc<Entry>),
    Deleted(bool),
    Linked(bool),
}

/// The entries a [`Cap`] counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CapGroup {
    /// Keys made of `prefix` and one more segment holding no `:` (the tool
    /// results of one tool are `tool:<name>:<slug>`, and a slug never holds
    /// `:` while a tool name may, so `tool:a:` must not count `tool:a:b:x`).
    KeysUnder(String),
    /// Entries of any of these types.
    Types(Vec<String>),
}

/// A limit applied after a batch, in its transaction: at most `keep`
/// entries of `group`; the oldest (the contract's conventions: smallest `updated_at`,
/// then smaller key) go first. Which limits exist is the caller's policy
/// (the extraction hooks' §6.7 table lives in Python).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cap {
    pub group: CapGroup,
    pub keep: usize,
}

impl Cap {
    pub(crate) fn validate(&self) -> Result<()> {
        match &self.group {
            CapGroup::KeysUnder(prefix) if prefix.is_empty() => {
                Err(StoreError::invalid("a cap's key prefix must not be empty"))
            }
            CapGroup::Types(kinds) if kinds.is_empty() => {
                Err(StoreError::invalid("a cap must name at least one type"))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked_by_length_and_emptiness() {
        assert!(validate_key("k", "key").is_ok());
        assert!(validate_key(&"k".repeat(MAX_KEY_BYTES), "key").is_ok());
        let long = validate_key(&"k".repeat(MAX_KEY_BYTES + 1), "reference").unwrap_err();
        assert!(
            long.to_string().starts_with("reference is 1025 bytes"),
            "{long}"
        );
        assert!(validate_key("", "key").is_err());
    }

    #[test]
    fn project_names_are_checked() {
        assert!(validate_project("acme; DROP TABLE x").is_ok());
        assert!(validate_project("").is_err());
        assert!(validate_project("a\0b").is_err());
        assert!(validate_project(&"p".repeat(1025)).is_err());
    }

    #[test]
    fn a_request_checks_its_references_too() {
        let request = SaveRequest {
            key: "k".into(),
            references: Some(vec!["ok".into(), String::new()]),
            ..SaveRequest::default()
        };
        assert!(request.validate().is_err());
    }

    #[test]
    fn caps_need_a_group() {
        let empty = Cap {
            group: CapGroup::Types(vec![]),
            keep: 1,
        };
        assert!(empty.validate().is_err());
        let prefix = Cap {
            group: CapGroup::KeysUnder(String::new()),
            keep: 1,
        };
        assert!(prefix.validate().is_err());
    }
}
