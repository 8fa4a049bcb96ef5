//! The write rules of §1.3 and §3 (stamps, overwrites, auto parents, batch
//! links, explicit links) and the caps a caller passes in, applied to the
//! mirror by one transaction.
//!
//! A [`Txn`] changes only the mirror and records what it did: the undo log
//! (to roll the mirror back if the change cannot be made durable) and the
//! change list the medium writes. It never touches a medium, so every
//! medium shares these rules and none can drift from them.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::entry::Entry;
use crate::error::{Result, StoreError};
use crate::store::change_set::{Change, ChangeSet};
use crate::store::mirror::Mirror;
use crate::store::request::{Cap, CapGroup, MAX_KEY_BYTES, SaveRequest};

/// The type of tool results, which fan out from their type parent instead
/// of joining a batch's chain (§3.3).
const TOOL_RESULT_TYPE: &str = "tool_result";

/// The invariants every stored entry keeps (§1.2, §1.3, §1.5), as problems
/// `membolt doctor` reports for an entry that breaks them (none for a
/// sound one). The media read entries; this is what they are checked by.
pub fn entry_problems(entry: &Entry) -> Vec<String> {
    let mut problems = Vec::new();
    let key = &entry.key;
    if key.len() > MAX_KEY_BYTES {
        problems.push(format!("key {key:?} is longer than {MAX_KEY_BYTES} bytes"));
    }
    if entry.created_at > entry.updated_at {
        problems.push(format!("entry {key:?} was updated before it was created"));
    }
    let mut seen = BTreeSet::new();
    for reference in &entry.references {
        if reference == key {
            problems.push(format!("entry {key:?} references itself"));
        } else if !seen.insert(reference.as_ref()) {
            problems.push(format!("entry {key:?} references {reference:?} twice"));
        }
    }
    problems
}

/// Unix time in milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// How a save links a new entry and treats given references.
#[derive(Clone, Debug)]
pub(crate) enum Linking {
    /// §1.3: given references replace the stored ones; a new key without
    /// them gets its auto parent.
    Plain,
    /// §3.3: a new key without given references links to `previous` (the
    /// previous key of the batch, when the chain rule applies) or its auto
    /// parent; an existing key keeps its references whatever is given.
    Extraction { previous: Option<Arc<str>> },
}

/// One transaction's view of the mirror.
pub struct Txn<'a> {
    pub(crate) mirror: &'a mut Mirror,
    undo: Vec<Change>,
    changes: Vec<Change>,
    deleted: bool,
    clock_before: i64,
}

impl<'a> Txn<'a> {
    pub(crate) fn new(mirror: &'a mut Mirror) -> Self {
        let clock_before = mirror.clock;
        Txn {
            mirror,
            undo: Vec::new(),
            changes: Vec::new(),
            deleted: false,
            clock_before,
        }
    }

    /// Whether the transaction changed anything so far.
    pub(crate) fn is_unchanged(&self) -> bool {
        self.changes.is_empty()
    }

    /// The changes made, for the medium.
    pub(crate) fn change_set(&self) -> ChangeSet {
        ChangeSet {
            changes: self.changes.clone(),
            clock: self.mirror.clock,
            deleted: self.deleted,
        }
    }

    /// Undoes every change in the mirror, newest first.
    pub(crate) fn roll_back(self) {
        self.mirror.roll_back(self.undo, self.clock_before);
    }

    /// A strictly increasing stamp (§1.3): `max(now, clock + 1)`.
    fn stamp(&mut self) -> i64 {
        let stamp = now_ms().max(self.mirror.clock.saturating_add(1));
        self.mirror.clock = stamp;
        stamp
    }

    /// Writes `entry` exactly as given (import keeps stamps and references).
    pub(crate) fn put(&mut self, entry: Entry) -> Arc<Entry> {
        // Imports may carry stamps beyond the clock; the clock never goes back.
        self.mirror.clock = self.mirror.clock.max(entry.updated_at);
        let entry = Arc::new(entry);
        let previous = self.mirror.insert(entry.clone());
        self.changes.push((entry.key.clone(), Some(entry.clone())));
        self.undo.push((entry.key.clone(), previous));
        entry
    }

    pub(crate) fn remove(&mut self, key: &str) -> Option<Arc<Entry>> {
        let previous = self.mirror.remove(key)?;
        self.deleted = true;
        self.changes.push((previous.key.clone(), None));
        self.undo
            .push((previous.key.clone(), Some(previous.clone())));
        Some(previous)
    }

    /// §1.3, with the linking rules of `linking`.
    pub(crate) fn save(&mut self, request: SaveRequest, linking: Linking) -> Arc<Entry> {
        let (keeps_references, chain_to) = match linking {
            Linking::Plain => (false, None),
            Linking::Extraction { previous } => (true, previous),
        };
        let stamp = self.stamp();
        let entry = if let Some(old) = self.mirror.get(&request.key).cloned() {
            Entry {
                key: old.key.clone(),
                value: request.value.into(),
                kind: request.kind.map_or_else(|| old.kind.clone(), Arc::from),
                namespace: request
                    .namespace
                    .map_or_else(|| old.namespace.clone(), Arc::from),
                references: match request.references {
                    Some(refs) if !keeps_references => clean_references(&old.key, refs),
                    _ => old.references.clone(),
                },
                created_at: old.created_at,
                updated_at: stamp,
            }
        } else {
            let key: Arc<str> = request.key.into();
            let references = match request.references {
                Some(refs) => clean_references(&key, refs),
                None => chain_to
                    .or_else(|| self.auto_parent(request.parent_kind.as_deref()))
                    .filter(|parent| *parent != key)
                    .into_iter()
                    .collect(),
            };
            Entry {
                value: request.value.into(),
                kind: request.kind.unwrap_or(request.inferred_kind).into(),
                namespace: request.namespace.unwrap_or_default().into(),
                references,
                created_at: stamp,
                updated_at: stamp,
                key,
            }
        };
        self.put(entry)
    }

    /// §3.3: the extraction batch, in order, chained.
    pub(crate) fn save_batch(&mut self, requests: Vec<SaveRequest>) -> Vec<Arc<Entry>> {
        let mut saved = Vec::with_capacity(requests.len());
        let mut previous: Option<Arc<str>> = None;
        for request in requests {
            let chain_to = previous
                .clone()
                .filter(|_| request.new_kind() != TOOL_RESULT_TYPE);
            let entry = self.save(request, Linking::Extraction { previous: chain_to });
            previous = Some(entry.key.clone());
            saved.push(entry);
        }
        saved
    }

    /// §3.2: the newest entry of the wanted type, else the newest entry.
    fn auto_parent(&self, wanted: Option<&str>) -> Option<Arc<str>> {
        wanted
            .and_then(|kind| self.mirror.newest_of_type(kind))
            .or_else(|| self.mirror.newest())
            .map(|entry| entry.key.clone())
    }

    /// §3.4: both keys must exist; returns whether an edge was added.
    pub(crate) fn link(&mut self, key: &str, parent: &str) -> Result<bool> {
        if key == parent {
            return Err(StoreError::invalid(format!(
                "cannot link {key:?} to itself"
            )));
        }
        let entry = self
            .mirror
            .get(key)
            .cloned()
            .ok_or_else(|| StoreError::MissingKey(key.to_string()))?;
        if self.mirror.get(parent).is_none() {
            return Err(StoreError::MissingKey(parent.to_string()));
        }
        if entry.references.iter().any(|r| &**r == parent) {
            return Ok(false);
        }
        let mut updated = (*entry).clone();
        updated.references.push(parent.into());
        updated.updated_at = self.stamp();
        self.put(updated);
        Ok(true)
    }

    /// §3.4: returns whether an edge was removed.
    pub(crate) fn unlink(&mut self, key: &str, parent: &str) -> bool {
        let Some(entry) = self.mirror.get(key).cloned() else {
            return false;
        };
        if !entry.references.iter().any(|r| &**r == parent) {
            return false;
        }
        let mut updated = (*entry).clone();
        updated.references.retain(|r| &**r != parent);
        updated.updated_at = self.stamp();
        self.put(updated);
        true
    }

    /// Applies `cap`: removes the oldest entries of its group beyond
    /// `cap.keep`.
    pub(crate) fn apply_cap(&mut self, cap: &Cap) {
        let excess: Vec<Arc<str>> = match &cap.group {
            CapGroup::KeysUnder(prefix) => {
                let mut matching: Vec<(i64, Arc<str>)> = self
                    .mirror
                    .with_prefix(prefix)
                    .filter(|e| !e.key[prefix.len()..].contains(':'))
                    .map(|e| (e.updated_at, e.key.clone()))
                    .collect();
                let excess = matching.len().saturating_sub(cap.keep);
                matching.sort_unstable();
                matching.into_iter().take(excess).map(|(_, k)| k).collect()
            }
            CapGroup::Types(kinds) => {
                let kinds: BTreeSet<&str> = kinds.iter().map(String::as_str).collect();
                let total: usize = kinds.iter().map(|k| self.mirror.count_of_type(k)).sum();
                let excess = total.saturating_sub(cap.keep);
                // The oldest `excess` of each type hold the oldest `excess`
                // of them all.
                let mut candidates: Vec<(i64, Arc<str>)> = kinds
                    .iter()
                    .flat_map(|kind| {
                        self.mirror
                            .oldest_of_type(kind, excess)
                            .into_iter()
                            .map(|e| (e.updated_at, e.key.clone()))
                    })
                    .collect();
                candidates.sort_unstable();
                candidates
                    .into_iter()
                    .take(excess)
                    .map(|(_, k)| k)
                    .collect()
            }
        };
        for key in excess {
            self.remove(&key);
        }
    }
}

/// §1.3: drop the entry's own key and duplicates, keep first-seen order.
fn clean_references(key: &str, references: Vec<String>) -> Vec<Arc<str>> {
    let mut seen = BTreeSet::new();
    references
        .into_iter()
        .filter(|r| r != key && seen.insert(r.clone()))
        .map(Arc::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(key: &str, kind: &str) -> SaveRequest {
        SaveRequest {
            key: key.into(),
            value: format!("value of {key}"),
            inferred_kind: kind.into(),
            ..SaveRequest::default()
        }
    }

    #[test]
    fn a_rolled_back_transaction_leaves_the_mirror_as_it_was() {
        let mut mirror = Mirror::default();
        Txn::new(&mut mirror).save(request("a", "note"), Linking::Plain);
        let clock = mirror.clock;
        let mut txn = Txn::new(&mut mirror);
        txn.save(request("b", "note"), Linking::Plain);
        txn.remove("a");
        assert_eq!(txn.change_set().changes.len(), 2);
        txn.roll_back();
        assert_eq!(mirror.len(), 1);
        assert!(mirror.get("a").is_some());
        assert_eq!(mirror.clock, clock);
    }

    #[test]
    fn key_caps_count_one_tool_and_not_deeper_names() {
        let mut mirror = Mirror::default();
        let mut txn = Txn::new(&mut mirror);
        for i in 0..5 {
            txn.save(
                request(&format!("tool:a:r{i}"), "tool_result"),
                Linking::Plain,
            );
        }
        txn.save(request("tool:a:b:deep", "tool_result"), Linking::Plain);
        txn.apply_cap(&Cap {
            group: CapGroup::KeysUnder("tool:a:".into()),
            keep: 2,
        });
        let keys: Vec<String> = mirror.iter().map(|e| e.key.to_string()).collect();
        assert_eq!(keys, ["tool:a:b:deep", "tool:a:r3", "tool:a:r4"]);
    }

    #[test]
    fn type_caps_count_the_types_together_oldest_out() {
        let mut mirror = Mirror::default();
        let mut txn = Txn::new(&mut mirror);
        for (key, kind) in [
            ("n1", "note"),
            ("f1", "fact"),
            ("n2", "note"),
            ("x", "error"),
        ] {
            txn.save(request(key, kind), Linking::Plain);
        }
        txn.apply_cap(&Cap {
            group: CapGroup::Types(vec!["note".into(), "fact".into()]),
            keep: 1,
        });
        let keys: Vec<String> = mirror.iter().map(|e| e.key.to_string()).collect();
        assert_eq!(keys, ["n2", "x"]);
    }

    #[test]
    fn entry_problems_name_each_broken_invariant() {
        let sound = crate::testing::entry("k", "note", "v", 5, &["p", "q"]);
        assert!(entry_problems(&sound).is_empty());
        let broken = Entry {
            key: "k".repeat(MAX_KEY_BYTES + 1).into(),
            created_at: 9,
            updated_at: 5,
            ..(*sound).clone()
        };
        let problems = entry_problems(&broken);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("longer than 1024 bytes"));
        assert!(problems[1].contains("updated before it was created"));
        let looped = crate::testing::entry("k", "note", "v", 5, &["k", "p", "p"]);
        let problems = entry_problems(&looped);
        assert_eq!(
            problems,
            [
                "entry \"k\" references itself",
                "entry \"k\" references \"p\" twice"
            ]
        );
    }
}
