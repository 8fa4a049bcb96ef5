//! What the builtin functions do (expr-lang semantics where §9 is
//! silent), plus indexing and slicing, which share their list/string
//! helpers. Their names and arities are in `functions.rs`.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::entry::Entry;

use super::ast::{BinaryOp, CompareOp, Expr, ExprKind, FieldName, PostfixOp};
use super::budget::Budget;
use super::error::{RunError, RunResult};
use super::functions::Builtin;
use super::json::to_json;
use super::ops::{self, cmp_numbers, member};
use super::relational::{self, Distinct, canonical_key};
use super::value::{EntryField, Map, Value};

/// What a builtin needs of the evaluator: its arguments evaluated, its
/// predicate run over the elements of a list, and the budget every step is
/// charged to. The evaluator implements it; builtins know nothing else of it.
pub(crate) trait Evaluate {
    fn eval(&mut self, expr: &Expr) -> RunResult<Value>;
    fn budget(&mut self) -> &mut Budget;
    /// Makes `items` the list `predicate` iterates.
    fn bind(&mut self, predicate: Predicate<'_>, items: &Arc<Vec<Value>>);
    /// Runs a predicate on element `index` of its bound list.
    fn apply(&mut self, predicate: Predicate<'_>, index: usize) -> RunResult<Value>;
    /// Runs a predicate that must give a bool.
    fn test(&mut self, predicate: Predicate<'_>, index: usize) -> RunResult<bool>;
    /// Drops the predicate's slots once a builtin is done with it.
    fn release(&mut self, predicate: Predicate<'_>);
}

/// A predicate argument of a builtin, with its first slot.
#[derive(Clone, Copy)]
pub(crate) struct Predicate<'e> {
    pub body: &'e Expr,
    pub slot: usize,
}

/// Evaluates a call. The parser guarantees the argument count.
pub(crate) fn call(
    ev: &mut impl Evaluate,
    func: Builtin,
    args: &[Expr],
    slot: usize,
) -> RunResult<Value> {
    if func.predicate_arg().is_some() {
        return call_with_predicate(ev, func, args, slot);
    }
    let values = args
        .iter()
        .map(|arg| ev.eval(arg))
        .collect::<RunResult<Vec<_>>>()?;
    let budget = ev.budget();
    let arg = |i: usize| values.get(i).unwrap_or(&Value::Nil);
    let name = func.name();
    match func {
        Builtin::Len => len(arg(0), budget),
        Builtin::First => first_last(arg(0), name, <[Value]>::first),
        Builtin::Last => first_last(arg(0), name, <[Value]>::last),
        Builtin::Take => take(arg(0), arg(1), budget),
        Builtin::Keys => keys_values(arg(0), true, budget),
        Builtin::Values => keys_values(arg(0), false, budget),
        Builtin::Concat => concat(&values, budget),
        Builtin::Uniq => {
            let mut distinct = Distinct::default();
            for item in list(arg(0), name)?.iter() {
                distinct.push(item.clone(), budget)?;
            }
            distinct.finish(budget)
        }
        Builtin::Lower => map_text(arg(0), name, budget, str::to_lowercase),
        Builtin::Upper => map_text(arg(0), name, budget, str::to_uppercase),
        Builtin::Trim => trim(arg(0), values.get(1), budget),
        Builtin::Split => split(arg(0), arg(1), values.get(2), budget),
        Builtin::StrJoin => str_join(arg(0), values.get(1), budget),
        Builtin::Union => relational::union(&values, budget),
        Builtin::Join => relational::join(arg(0), arg(1), arg(2), arg(3), budget),
        _ => Err(RunError::new(format!(
            "internal error: {name} has no predicate"
        ))),
    }
}

fn type_error(func: &str, what: &str, got: &Value) -> RunError {
    RunError::new(format!("{func} expects {what}, not {}", got.type_name()))
}

fn list<'v>(value: &'v Value, func: &str) -> RunResult<&'v Arc<Vec<Value>>> {
    match value {
        Value::List(items) => Ok(items),
        other => Err(type_error(func, "an array", other)),
    }
}

fn text<'v>(value: &'v Value, func: &str) -> RunResult<&'v str> {
    match value {
        Value::Str(s) => Ok(s),
        other => Err(type_error(func, "a string", other)),
    }
}

fn new_text(s: String, budget: &mut Budget) -> RunResult<Value> {
    budget.text(s.len())?;
    Ok(Value::Str(Arc::from(s)))
}

fn new_list(items: Vec<Value>, budget: &mut Budget) -> RunResult<Value> {
    budget.container(items.len())?;
    Ok(Value::from(items))
}

// ---- predicate builtins ------------------------------------------------

fn call_with_predicate(
    ev: &mut impl Evaluate,
    func: Builtin,
    args: &[Expr],
    slot: usize,
) -> RunResult<Value> {
    let name = func.name();
    let input = match args.first() {
        Some(arg) => ev.eval(arg)?,
        None => Value::Nil,
    };
    let items = list(&input, name)?.clone();
    // `sortBy`'s order, evaluated before the predicate's slots are bound
    // (it was compiled outside the predicate's scope).
    let order = match args.get(2) {
        Some(arg) => Some(ev.eval(arg)?),
        None => None,
    };
    let predicate = args.get(1).map(|body| Predicate { body, slot });
    if let Some(p) = predicate {
        ev.bind(p, &items);
    }
    let result = match (func, predicate) {
        (Builtin::Count, None) => count_true(&items, ev.budget()),
        (Builtin::Sum, None) => sum(items.iter().cloned(), ev.budget()),
        (_, None) => Err(RunError::new(format!("{name} needs a predicate"))),
        (Builtin::Filter, Some(p)) => filter(ev, &items, p),
        (Builtin::Map, Some(p)) => map(ev, &items, p),
        (Builtin::All, Some(p)) => quantify(ev, &items, p, |hits, seen| hits == seen, None),
        (Builtin::Any, Some(p)) => quantify(ev, &items, p, |hits, _| hits > 0, Some(1)),
        (Builtin::None, Some(p)) => quantify(ev, &items, p, |hits, _| hits == 0, Some(1)),
        (Builtin::One, Some(p)) => quantify(ev, &items, p, |hits, _| hits == 1, Some(2)),
        (Builtin::Count, Some(p)) => count(ev, &items, p),
        (Builtin::Find, Some(p)) => find(ev, &items, p),
        (Builtin::Sum, Some(p)) => {
            let mapped = map(ev, &items, p)?;
            sum(list(&mapped, name)?.iter().cloned(), ev.budget())
        }
        (Builtin::GroupBy, Some(p)) => group_by(ev, &items, p),
        (Builtin::SortBy, Some(p)) => sort_by(ev, &items, p, order.as_ref()),
        (_, Some(_)) => Err(RunError::new(format!(
            "internal error: {name} takes no predicate"
        ))),
    };
    if let Some(p) = predicate {
        ev.release(p);
    }
    result
}

fn filter(ev: &mut impl Evaluate, items: &[Value], p: Predicate<'_>) -> RunResult<Value> {
    let fast = EntryTextTest::of(p);
    let mut kept = Vec::new();
    for (i, item) in items.iter().enumerate() {
        ev.budget().step()?;
        let passes = match (&fast, item) {
            (Some(test), Value::Entry(entry)) => match test.run(entry, ev.budget()) {
                Some(result) => result.map_err(|err| err.at(p.body.pos))?,
                None => ev.test(p, i)?,
            },
            _ => ev.test(p, i)?,
        };
        if passes {
            kept.push(item.clone());
        }
    }
    new_list(kept, ev.budget())
}

/// A predicate `.field OP "text"` on a text field of `memory` rows, the
/// typical filter (`.type == "error"`), resolved once for the whole list:
/// each row is then tested in place, without evaluating the predicate's
/// tree. It charges the budget what the tree's evaluation would (the
/// compare node, the field, the row, the text, and the text's scan).
struct EntryTextTest<'e> {
    field: EntryField,
    op: CompareOp,
    text: &'e str,
}

impl<'e> EntryTextTest<'e> {
    fn of(p: Predicate<'e>) -> Option<Self> {
        let ExprKind::Compare(left, rest) = &p.body.kind else {
            return None;
        };
        let [(op, right, _)] = rest.as_slice() else {
            return None;
        };
        let ExprKind::Literal(Value::Str(text)) = &right.kind else {
            return None;
        };
        let ExprKind::Postfix(base, postfix) = &left.kind else {
            return None;
        };
        let (
            ExprKind::Element(slot),
            [
                PostfixOp::Member {
                    field,
                    optional: false,
                    ..
                },
            ],
        ) = (&base.kind, postfix.as_slice())
        else {
            return None;
        };
        (*slot == p.slot).then_some(())?;
        Some(EntryTextTest {
            field: field.entry?,
            op: *op,
            text,
        })
    }

    /// The predicate's value for `entry`; `None` when this shape cannot
    /// say (the general path then evaluates it).
    fn run(&self, entry: &Entry, budget: &mut Budget) -> Option<RunResult<bool>> {
        let field_text = self.field.text(entry)?;
        let result = ops::compare_text(self.op, field_text, self.text, budget)?;
        Some(budget.steps(4).and(result))
    }
}

fn map(ev: &mut impl Evaluate, items: &[Value], p: Predicate<'_>) -> RunResult<Value> {
    ev.budget().container(items.len())?;
    let mut out = Vec::with_capacity(items.len());
    for i in 0..items.len() {
        ev.budget().step()?;
        out.push(ev.apply(p, i)?);
    }
    Ok(Value::from(out))
}

/// `all`, `any`, `none`, `one`: counts hits, stopping early once `stop_at`
/// hits settle the answer.
fn quantify(
    ev: &mut impl Evaluate,
    items: &[Value],
    p: Predicate<'_>,
    verdict: fn(usize, usize) -> bool,
    stop_at: Option<usize>,
) -> RunResult<Value> {
    let (mut hits, mut seen) = (0, 0);
    for i in 0..items.len() {
        ev.budget().step()?;
        seen += 1;
        if ev.test(p, i)? {
            hits += 1;
            if Some(hits) == stop_at {
                break;
            }
        } else if stop_at.is_none() {
            // `all`: one miss settles it.
            break;
        }
    }
    Ok(Value::Bool(verdict(hits, seen)))
}

fn count(ev: &mut impl Evaluate, items: &[Value], p: Predicate<'_>) -> RunResult<Value> {
    let mut hits = 0i64;
    for i in 0..items.len() {
        ev.budget().step()?;
        if ev.test(p, i)? {
            hits += 1;
        }
    }
    Ok(Value::Int(hits))
}

/// `count(list)` without a predicate counts the `true` elements.
fn count_true(items: &[Value], budget: &mut Budget) -> RunResult<Value> {
    let mut hits = 0i64;
    for item in items {
        budget.step()?;
        match item {
            Value::Bool(b) => hits += i64::from(*b),
            other => return Err(type_error("count", "an array of bools", other)),
        }
    }
    Ok(Value::Int(hits))
}

fn find(ev: &mut impl Evaluate, items: &[Value], p: Predicate<'_>) -> RunResult<Value> {
    for (i, item) in items.iter().enumerate() {
        ev.budget().step()?;
        if ev.test(p, i)? {
            return Ok(item.clone());
        }
    }
    Ok(Value::Nil)
}

/// Sum of numbers: an int while every term is an int, else a float.
fn sum(items: impl Iterator<Item = Value>, budget: &mut Budget) -> RunResult<Value> {
    let mut total = Value::Int(0);
    for item in items {
        budget.step()?;
        if !matches!(item, Value::Int(_) | Value::Float(_)) {
            return Err(type_error("sum", "numbers", &item));
        }
        total = ops::binary(BinaryOp::Add, &total, &item, budget)?;
    }
    Ok(total)
}

/// Groups keyed by the canonical text of the predicate's value (`nil` for
/// nil), each group in input order.
fn group_by(ev: &mut impl Evaluate, items: &[Value], p: Predicate<'_>) -> RunResult<Value> {
    let mut groups: BTreeMap<Arc<str>, Vec<Value>> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        ev.budget().step()?;
        let key = ev.apply(p, i)?;
        let name: Arc<str> = match (&key, canonical_key(&key)) {
            (Value::Str(s), _) => s.clone(),
            (_, Some(text)) => Arc::from(text.as_ref()),
            (Value::Nil, None) => Arc::from("nil"),
            (other, None) => {
                return Err(
                    type_error("groupBy", "a string, number, bool or nil key", other)
                        .at(p.body.pos),
                );
            }
        };
        // Finding the group compares the key with about log2(groups) others.
        let depth = u64::from(usize::BITS - groups.len().leading_zeros());
        ev.budget().compare_keys(name.len(), depth)?;
        groups.entry(name).or_default().push(item.clone());
    }
    ev.budget().container(groups.len() + items.len())?;
    let fields = groups
        .into_iter()
        .map(|(k, v)| (k, Value::from(v)))
        .collect::<Vec<_>>();
    Ok(Value::Map(Map::from_sorted(fields)))
}

/// A sort key; all keys of one sort must be numbers, or all strings.
enum SortKeys {
    Numbers(Vec<Value>),
    Strings(Vec<Arc<str>>),
}

/// Stable sort by the predicate's value, `"asc"` (default) or `"desc"`.
fn sort_by(
    ev: &mut impl Evaluate,
    items: &[Value],
    p: Predicate<'_>,
    order: Option<&Value>,
) -> RunResult<Value> {
    let descending = match order {
        None => false,
        Some(Value::Str(s)) if &**s == "asc" => false,
        Some(Value::Str(s)) if &**s == "desc" => true,
        Some(other) => {
            return Err(RunError::new(format!(
                "sortBy order must be \"asc\" or \"desc\", not {}",
                to_json(other)
            )));
        }
    };
    let mut keys = None;
    for i in 0..items.len() {
        ev.budget().step()?;
        let key = ev.apply(p, i)?;
        let mismatch = |first: &str| {
            RunError::new(format!(
                "sortBy keys must be all numbers or all strings; found {first} and {}",
                key.type_name()
            ))
            .at(p.body.pos)
        };
        match (&mut keys, &key) {
            (None, Value::Int(_) | Value::Float(_)) => keys = Some(SortKeys::Numbers(vec![key])),
            (None, Value::Str(s)) => keys = Some(SortKeys::Strings(vec![s.clone()])),
            (Some(SortKeys::Numbers(k)), Value::Int(_) | Value::Float(_)) => k.push(key),
            (Some(SortKeys::Strings(k)), Value::Str(s)) => k.push(s.clone()),
            (Some(SortKeys::Numbers(_)), _) => return Err(mismatch("numbers")),
            (Some(SortKeys::Strings(_)), _) => return Err(mismatch("strings")),
            (None, _) => {
                return Err(type_error("sortBy", "number or string keys", &key).at(p.body.pos));
            }
        }
    }
    // Comparisons: about n log2 n, each over a whole key.
    let n = items.len() as u64;
    let key_bytes = match &keys {
        Some(SortKeys::Strings(k)) => k.iter().map(|s| s.len()).max().unwrap_or(0),
        _ => 0,
    };
    ev.budget()
        .compare_keys(key_bytes, n * u64::from(64 - n.leading_zeros()))?;
    ev.budget().container(items.len())?;
    let mut order: Vec<usize> = (0..items.len()).collect();
    match &keys {
        Some(SortKeys::Numbers(k)) => order.sort_by(|&a, &b| {
            let ord = total_number_order(k.get(a), k.get(b));
            if descending { ord.reverse() } else { ord }
        }),
        Some(SortKeys::Strings(k)) => order.sort_by(|&a, &b| {
            let ord = k.get(a).cmp(&k.get(b));
            if descending { ord.reverse() } else { ord }
        }),
        None => {}
    }
    let sorted = order
        .into_iter()
        .filter_map(|i| items.get(i).cloned())
        .collect::<Vec<_>>();
    Ok(Value::from(sorted))
}

/// A total order on numbers for sorting: numeric, with NaN after all
/// others (a sort comparator must be total).
fn total_number_order(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    let (Some(a), Some(b)) = (a, b) else {
        return Ordering::Equal;
    };
    let is_nan = |v: &Value| matches!(v, Value::Float(f) if f.is_nan());
    match cmp_numbers(a, b) {
        Ok(Some(ord)) => ord,
        _ => is_nan(a).cmp(&is_nan(b)),
    }
}

// ---- plain builtins ----------------------------------------------------

/// `len`: characters of a string, elements of an array, fields of a map.
fn len(value: &Value, budget: &mut Budget) -> RunResult<Value> {
    let n = match value {
        Value::Str(s) => {
            budget.scan(s.len())?;
            s.chars().count()
        }
        Value::List(items) => items.len(),
        Value::Map(map) => map.len(),
        Value::Entry(_) => EntryField::SORTED.len(),
        other => return Err(type_error("len", "a string, array or map", other)),
    };
    Ok(Value::Int(n as i64))
}

/// `first`/`last`: nil for an empty array (and for nil, as in expr-lang).
fn first_last(value: &Value, func: &str, pick: fn(&[Value]) -> Option<&Value>) -> RunResult<Value> {
    match value {
        Value::Nil => Ok(Value::Nil),
        other => Ok(pick(list(other, func)?).cloned().unwrap_or(Value::Nil)),
    }
}

fn take(value: &Value, n: &Value, budget: &mut Budget) -> RunResult<Value> {
    let items = list(value, "take")?;
    let n = match n {
        Value::Int(n) if *n >= 0 => usize::try_from(*n).unwrap_or(usize::MAX),
        Value::Int(_) => return Err(RunError::new("take expects a count of 0 or more")),
        other => return Err(type_error("take", "an int count", other)),
    };
    let taken = items.get(..n.min(items.len())).unwrap_or_default();
    budget.steps(taken.len() as u64)?;
    new_list(taken.to_vec(), budget)
}

/// `keys`/`values` of a map, in sorted key order.
fn keys_values(value: &Value, keys: bool, budget: &mut Budget) -> RunResult<Value> {
    let func = if keys { "keys" } else { "values" };
    let fields: Vec<Value> = match value {
        Value::Map(map) => {
            budget.steps(map.len() as u64)?;
            map.iter()
                .map(|(k, v)| {
                    if keys {
                        Value::Str(k.clone())
                    } else {
                        v.clone()
                    }
                })
                .collect()
        }
        Value::Entry(entry) => EntryField::SORTED
            .iter()
            .map(|f| {
                if keys {
                    Value::from(f.name())
                } else {
                    f.get(entry)
                }
            })
            .collect(),
        other => return Err(type_error(func, "a map", other)),
    };
    new_list(fields, budget)
}

fn concat(values: &[Value], budget: &mut Budget) -> RunResult<Value> {
    let mut out = Vec::new();
    for value in values {
        let items = list(value, "concat")?;
        budget.container(items.len())?;
        budget.steps(items.len() as u64)?;
        out.extend(items.iter().cloned());
    }
    Ok(Value::from(out))
}

fn map_text(
    value: &Value,
    func: &str,
    budget: &mut Budget,
    f: fn(&str) -> String,
) -> RunResult<Value> {
    let s = text(value, func)?;
    budget.scan(s.len())?;
    new_text(f(s), budget)
}

/// `trim(s)` strips whitespace; `trim(s, chars)` strips any of `chars`.
fn trim(value: &Value, chars: Option<&Value>, budget: &mut Budget) -> RunResult<Value> {
    let s = text(value, "trim")?;
    budget.scan(s.len())?;
    let trimmed = match chars {
        None => s.trim(),
        Some(chars) => {
            let set = text(chars, "trim")?;
            s.trim_matches(|c| set.contains(c))
        }
    };
    new_text(trimmed.to_string(), budget)
}

/// Go's `strings.Split`/`SplitN`: an empty separator splits into
/// characters; `n < 0` means no limit, `n == 0` gives no parts, `n > 0` at
/// most `n` parts with the rest in the last.
fn split(value: &Value, sep: &Value, n: Option<&Value>, budget: &mut Budget) -> RunResult<Value> {
    let s = text(value, "split")?;
    let sep = text(sep, "split")?;
    let limit = match n {
        None => None,
        Some(Value::Int(n)) if *n < 0 => None,
        Some(Value::Int(n)) => Some(usize::try_from(*n).unwrap_or(usize::MAX)),
        Some(other) => return Err(type_error("split", "an int count", other)),
    };
    budget.scan(s.len())?;
    let mut parts: Vec<&str> = Vec::new();
    if limit != Some(0) {
        let max = limit.unwrap_or(usize::MAX);
        if sep.is_empty() {
            let mut rest = s;
            while let Some(c) = rest.chars().next() {
                if parts.len() + 1 == max {
                    break;
                }
                let (head, tail) = rest.split_at(c.len_utf8());
                parts.push(head);
                rest = tail;
            }
            if !rest.is_empty() {
                parts.push(rest);
            }
        } else {
            parts.extend(s.splitn(max, sep));
        }
    }
    budget.container(parts.len())?;
    budget.text(s.len())?;
    Ok(Value::from(
        parts.into_iter().map(Value::from).collect::<Vec<_>>(),
    ))
}

/// expr-lang's `join(list[, sep])`: a list of strings joined by `sep`
/// (empty by default).
fn str_join(value: &Value, sep: Option<&Value>, budget: &mut Budget) -> RunResult<Value> {
    let items = list(value, "join")?;
    let sep = sep.map_or(Ok(""), |sep| text(sep, "join"))?;
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        budget.step()?;
        let part = text(item, "join")?;
        budget.text(part.len() + sep.len())?;
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(part);
    }
    new_text(out, budget)
}

// ---- indexing ----------------------------------------------------------

/// Resolves a possibly negative index against `len` (expr-lang: `-1` is
/// the last element).
fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let i = if index < 0 {
        index.checked_add(len)?
    } else {
        index
    };
    usize::try_from(i).ok().filter(|&i| (i as i64) < len)
}

/// `value[index]`: arrays and strings by (negative-from-the-end) position,
/// rows by field name.
pub(crate) fn index(value: &Value, index: &Value, budget: &mut Budget) -> RunResult<Value> {
    match (value, index) {
        (Value::List(items), Value::Int(i)) => resolve_index(*i, items.len())
            .and_then(|i| items.get(i).cloned())
            .ok_or_else(|| {
                RunError::new(format!(
                    "index {i} out of range (array of length {})",
                    items.len()
                ))
            }),
        (Value::Str(s), Value::Int(i)) => {
            budget.scan(s.len())?;
            let count = s.chars().count();
            let c = resolve_index(*i, count).and_then(|i| s.chars().nth(i));
            match c {
                Some(c) => new_text(c.to_string(), budget),
                None => Err(RunError::new(format!(
                    "index {i} out of range (string of length {count})"
                ))),
            }
        }
        (Value::Map(_) | Value::Entry(_), Value::Str(name)) => {
            budget.compare_keys(name.len(), 1)?;
            member(value, &FieldName::new(name))
        }
        (Value::List(_) | Value::Str(_), other) => Err(RunError::new(format!(
            "index must be an int, not {}",
            other.type_name()
        ))),
        (Value::Map(_) | Value::Entry(_), other) => Err(RunError::new(format!(
            "map key must be a string, not {}",
            other.type_name()
        ))),
        (other, _) => Err(RunError::new(format!("cannot index {}", other.type_name()))),
    }
}

/// `value[from:to]` on arrays and strings; bounds may be negative (from the
/// end) and are clamped, as in expr-lang.
pub(crate) fn slice(
    value: &Value,
    from: &Value,
    to: &Value,
    budget: &mut Budget,
) -> RunResult<Value> {
    let bound = |v: &Value, default: i64| match v {
        Value::Nil => Ok(default),
        Value::Int(i) => Ok(*i),
        other => Err(RunError::new(format!(
            "slice bounds must be ints, not {}",
            other.type_name()
        ))),
    };
    let clamp = |i: i64, len: usize| -> usize {
        let len_i = i64::try_from(len).unwrap_or(i64::MAX);
        let i = if i < 0 { i.saturating_add(len_i) } else { i };
        usize::try_from(i.clamp(0, len_i)).unwrap_or(0)
    };
    match value {
        Value::List(items) => {
            let start = clamp(bound(from, 0)?, items.len());
            let end = clamp(bound(to, i64::MAX)?, items.len()).max(start);
            let part = items.get(start..end).unwrap_or_default();
            budget.steps(part.len() as u64)?;
            new_list(part.to_vec(), budget)
        }
        Value::Str(s) => {
            budget.scan(s.len())?;
            let count = s.chars().count();
            let start = clamp(bound(from, 0)?, count);
            let end = clamp(bound(to, i64::MAX)?, count).max(start);
            new_text(s.chars().skip(start).take(end - start).collect(), budget)
        }
        other => Err(RunError::new(format!("cannot slice {}", other.type_name()))),
    }
}
