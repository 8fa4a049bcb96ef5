//! The relational additions of §9.1 (`join`, `union`), the
//! distinct-rows machinery they share with `uniq`, and the `memory`
//! relation's optional cap (§0 F12).

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;
use std::sync::Arc;

use super::ast::FieldName;
use super::budget::Budget;
use super::error::{RunError, RunResult};
use super::json::float_repr;
use super::ops::{equal, float_as_int, hash_value};
use super::value::{EntryField, Map, Value};

/// The `memory` relation: every entry sorted by key; with a cap, only the
/// newest `cap` (largest `updated_at`, then larger key), still sorted by key.
/// The caller hands the entries over sorted by key (checked in debug
/// builds only: the check alone would touch every entry's key).
pub(crate) fn memory_relation(rows: Arc<Vec<Value>>, cap: Option<usize>) -> Value {
    let Some(cap) = cap.filter(|&cap| rows.len() > cap) else {
        return Value::List(rows);
    };
    let stamp = |row: &Value| match row {
        Value::Entry(entry) => (entry.updated_at, entry.key.clone()),
        _ => (i64::MIN, Arc::from("")),
    };
    let mut newest: Vec<&Value> = rows.iter().collect();
    newest.sort_by_key(|row| std::cmp::Reverse(stamp(row)));
    newest.truncate(cap);
    let mut kept: Vec<Value> = newest.into_iter().cloned().collect();
    kept.sort_by_key(|row| stamp(row).1);
    Value::from(kept)
}

/// The canonical text of a join key (§9.1): strings as they are, integers
/// in decimal, integral floats without a fraction, other finite floats as
/// in JSON output, `true`/`false`. Nil, NaN, infinities, lists and rows
/// have none, so they never match.
pub(crate) fn canonical_key(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::Str(s) => Some(Cow::Borrowed(s)),
        Value::Int(i) => Some(Cow::Owned(i.to_string())),
        Value::Float(f) if f.is_finite() => Some(Cow::Owned(match float_as_int(*f) {
            Some(i) => i.to_string(),
            // Integral but beyond i64: Rust prints it without a fraction.
            None if f.fract() == 0.0 => format!("{f}"),
            None => float_repr(*f),
        })),
        Value::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        _ => None,
    }
}

/// A row's join key for `field`.
fn row_key<'v>(
    row: &'v Value,
    field: &FieldName,
    side: &str,
    index: usize,
) -> RunResult<Option<Cow<'v, str>>> {
    match row {
        Value::Map(map) => Ok(map.get(&field.name).and_then(canonical_key)),
        Value::Entry(entry) => Ok(field.entry.and_then(|f| match f.text(entry) {
            Some(text) => Some(Cow::Borrowed(text)),
            None => canonical_key(&f.get(entry)).map(|k| Cow::Owned(k.into_owned())),
        })),
        other => Err(not_a_row(side, index, other)),
    }
}

fn not_a_row(side: &str, index: usize, value: &Value) -> RunError {
    RunError::new(format!(
        "join: {side} row {index} is {}, not a map",
        value.type_name()
    ))
}

fn rows<'v>(value: &'v Value, what: &str) -> RunResult<&'v [Value]> {
    match value {
        Value::List(items) => Ok(items),
        other => Err(RunError::new(format!(
            "join expects {what} to be an array of rows, not {}",
            other.type_name()
        ))),
    }
}

fn field_name<'v>(value: &'v Value, what: &str) -> RunResult<&'v str> {
    match value {
        Value::Str(s) => Ok(s),
        other => Err(RunError::new(format!(
            "join expects {what} to be a string, not {}",
            other.type_name()
        ))),
    }
}

/// `join(left, right, leftField, rightField)`: a hash equi-join. Every
/// matching pair gives a row with the left fields renamed `left_<f>` and
/// the right fields `right_<f>`, in left order, then right order.
pub(crate) fn join(
    left: &Value,
    right: &Value,
    left_field: &Value,
    right_field: &Value,
    budget: &mut Budget,
) -> RunResult<Value> {
    let left = rows(left, "the left side")?;
    let right = rows(right, "the right side")?;
    let left_field = FieldName::new(field_name(left_field, "leftField")?);
    let right_field = FieldName::new(field_name(right_field, "rightField")?);

    // Hash the left side: key -> left row indices.
    let mut index: HashMap<Cow<'_, str>, Vec<usize>> = HashMap::new();
    for (i, row) in left.iter().enumerate() {
        budget.step()?;
        if let Some(key) = row_key(row, &left_field, "left", i)? {
            budget.scan(key.len())?;
            index.entry(key).or_default().push(i);
        }
    }
    // Probe with the right side in order; pairs come out grouped by right
    // row, so a stable sort by left row gives left-major, then right order.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (j, row) in right.iter().enumerate() {
        budget.step()?;
        let Some(key) = row_key(row, &right_field, "right", j)? else {
            continue;
        };
        budget.scan(key.len())?;
        if let Some(matches) = index.get(key.as_ref()) {
            budget.values(matches.len() as u64)?;
            pairs.extend(matches.iter().map(|&i| (i, j)));
        }
    }
    pairs.sort_by_key(|&(i, _)| i);

    let mut names = PrefixedNames::default();
    let mut out = Vec::with_capacity(pairs.len());
    for (i, j) in pairs {
        let (Some(l), Some(r)) = (left.get(i), right.get(j)) else {
            continue;
        };
        // Every `left_` name sorts before every `right_` name, and a common
        // prefix keeps each side's sorted order: the row is born sorted.
        let mut row = Vec::new();
        names.add_fields(&mut row, "left_", l, "left", i)?;
        names.add_fields(&mut row, "right_", r, "right", j)?;
        budget.container(row.len())?;
        out.push(Value::Map(Map::from_sorted(row)));
    }
    Ok(Value::from(out))
}

/// Caches `left_<f>` / `right_<f>` names so each is allocated once per join.
#[derive(Default)]
struct PrefixedNames {
    map_fields: HashMap<(&'static str, Arc<str>), Arc<str>>,
    entry_fields: HashMap<(&'static str, EntryField), Arc<str>>,
}

impl PrefixedNames {
    fn add_fields(
        &mut self,
        row: &mut Vec<(Arc<str>, Value)>,
        prefix: &'static str,
        source: &Value,
        side: &str,
        index: usize,
    ) -> RunResult<()> {
        match source {
            Value::Map(map) => {
                for (k, v) in map.iter() {
                    let name = self
                        .map_fields
                        .entry((prefix, k.clone()))
                        .or_insert_with(|| Arc::from(format!("{prefix}{k}")));
                    row.push((name.clone(), v.clone()));
                }
            }
            Value::Entry(entry) => {
                for field in EntryField::SORTED {
                    let name = self
                        .entry_fields
                        .entry((prefix, field))
                        .or_insert_with(|| Arc::from(format!("{prefix}{}", field.name())));
                    row.push((name.clone(), field.get(entry)));
                }
            }
            other => return Err(not_a_row(side, index, other)),
        }
        Ok(())
    }
}

/// `union(a, b, ...)`: `a`, then `b`, ..., without any row equal to an
/// earlier one.
pub(crate) fn union(lists: &[Value], budget: &mut Budget) -> RunResult<Value> {
    let mut distinct = Distinct::default();
    for (n, list) in lists.iter().enumerate() {
        let Value::List(items) = list else {
            return Err(RunError::new(format!(
                "union expects arrays, but argument {} is {}",
                n + 1,
                list.type_name()
            )));
        };
        for item in items.iter() {
            distinct.push(item.clone(), budget)?;
        }
    }
    distinct.finish(budget)
}

/// Values in first-seen order without repeats (by `==`: `1` equals `1.0`,
/// a map equals an entry row with the same fields).
#[derive(Default)]
pub(crate) struct Distinct {
    /// Hash -> the indices into `kept` of the values with that hash.
    seen: HashMap<u64, Bucket>,
    kept: Vec<Value>,
}

/// Almost every hash has one value: no allocation for it.
enum Bucket {
    One(usize),
    Many(Vec<usize>),
}

impl Bucket {
    fn indices(&self) -> &[usize] {
        match self {
            Bucket::One(i) => std::slice::from_ref(i),
            Bucket::Many(all) => all,
        }
    }
}

impl Distinct {
    pub fn push(&mut self, value: Value, budget: &mut Budget) -> RunResult<()> {
        let mut hasher = DefaultHasher::new();
        hash_value(&value, &mut hasher, budget)?;
        let hash = hasher.finish();
        if let Some(bucket) = self.seen.get(&hash) {
            for &i in bucket.indices() {
                if let Some(earlier) = self.kept.get(i)
                    && equal(earlier, &value, budget)?
                {
                    return Ok(());
                }
            }
        }
        // Charged as it grows, not only at the end.
        budget.values(1)?;
        let index = self.kept.len();
        match self.seen.get_mut(&hash) {
            None => {
                self.seen.insert(hash, Bucket::One(index));
            }
            Some(bucket) => {
                let mut all = bucket.indices().to_vec();
                all.push(index);
                *bucket = Bucket::Many(all);
            }
        }
        self.kept.push(value);
        Ok(())
    }

    pub fn finish(self, budget: &mut Budget) -> RunResult<Value> {
        budget.values(1)?; // the list; its elements were charged by push
        Ok(Value::from(self.kept))
    }
}
