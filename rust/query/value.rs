//! Runtime values.
//!
//! Every variant is cheap to clone (scalars or one `Arc`). A `memory` row is
//! `Value::Entry`, the store's own shared entry: field access reads it
//! directly, and it becomes a map only where a map is really needed.

use std::sync::Arc;

use crate::entry::Entry;

#[derive(Clone, Debug)]
pub enum Value {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Arc<str>),
    List(Arc<Vec<Value>>),
    Map(Map),
    /// A `memory` row: fields `key, value, namespace, type, references,
    /// createdAt, updatedAt`.
    Entry(Arc<Entry>),
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Int(n)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Float(f)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(Arc::from(s))
    }
}

impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Self {
        Value::List(Arc::new(items))
    }
}

impl From<Map> for Value {
    fn from(map: Map) -> Self {
        Value::Map(map)
    }
}

impl From<Arc<Entry>> for Value {
    fn from(entry: Arc<Entry>) -> Self {
        Value::Entry(entry)
    }
}

impl Value {
    /// A map row from `(name, value)` pairs (later duplicates win).
    pub fn row<K: AsRef<str>>(fields: impl IntoIterator<Item = (K, Value)>) -> Value {
        Value::Map(Map::from_pairs(
            fields.into_iter().map(|(k, v)| (Arc::from(k.as_ref()), v)),
        ))
    }

    /// The type name used in error messages (expr-lang's names).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::List(_) => "array",
            Value::Map(_) | Value::Entry(_) => "map",
        }
    }

    /// Whether this is a row (a map or a `memory` entry).
    pub fn is_row(&self) -> bool {
        matches!(self, Value::Map(_) | Value::Entry(_))
    }

    /// The field `name` of a row (`None` when absent or not a row).
    pub(crate) fn field(&self, name: &str, entry_field: Option<EntryField>) -> Option<Value> {
        match self {
            Value::Map(map) => map.get(name).cloned(),
            Value::Entry(entry) => entry_field.map(|field| field.get(entry)),
            _ => None,
        }
    }
}

/// A map value: fields sorted by key, keys unique. Rows are small and
/// many, so they are one shared sorted slice (one allocation, binary-search
/// lookup) rather than a tree.
#[derive(Clone, Debug, Default)]
pub struct Map(Arc<[(Arc<str>, Value)]>);

impl Map {
    /// Builds a map; for a repeated key the last value wins.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (Arc<str>, Value)>) -> Map {
        let mut pairs: Vec<(Arc<str>, Value)> = pairs.into_iter().collect();
        if !pairs.is_sorted_by(|a, b| a.0 < b.0) {
            // Stable, so among equal keys the last one given stays last.
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            pairs.reverse();
            pairs.dedup_by(|later, earlier| later.0 == earlier.0);
            pairs.reverse();
        }
        Map(pairs.into())
    }

    /// Wraps pairs already sorted by key with no duplicates (checked in
    /// debug builds).
    pub(crate) fn from_sorted(pairs: Vec<(Arc<str>, Value)>) -> Map {
        debug_assert!(pairs.is_sorted_by(|a, b| a.0 < b.0));
        Map(pairs.into())
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .and_then(|i| self.0.get(i))
            .map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Fields in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &Value)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// Whether both are the same shared map.
    pub(crate) fn ptr_eq(&self, other: &Map) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// A field of a `memory` row: the entry fields under their JSON names.
pub(crate) use crate::entry::Field as EntryField;

impl EntryField {
    pub fn get(self, entry: &Entry) -> Value {
        match self {
            EntryField::CreatedAt => Value::Int(entry.created_at),
            EntryField::Key => Value::Str(entry.key.clone()),
            EntryField::Namespace => Value::Str(entry.namespace.clone()),
            EntryField::References => Value::List(Arc::new(
                entry
                    .references
                    .iter()
                    .map(|r| Value::Str(r.clone()))
                    .collect(),
            )),
            EntryField::Type => Value::Str(entry.kind.clone()),
            EntryField::UpdatedAt => Value::Int(entry.updated_at),
            EntryField::Value => Value::Str(entry.value.clone()),
        }
    }
}
