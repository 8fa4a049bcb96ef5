//! Operator semantics, following expr-lang: no implicit string/number
//! conversion, `==` across types is false except that an int equals a float
//! of the same value, `<` on incompatible types is an error, `/` always
//! gives a float, `%` takes ints only, `**` gives a float.
//!
//! Integer overflow is a run error (Go would wrap silently; a wrong number
//! in an agent's memory is worse than an error).

use std::cmp::Ordering;
use std::hash::Hasher;
use std::sync::Arc;

use super::ast::{BinaryOp, CompareOp, FieldName, UnaryOp};
use super::budget::Budget;
use super::error::{RunError, RunResult};
use super::value::{EntryField, Value};

/// 2^63 as a float: the first float above every i64.
const I64_END: f64 = 9_223_372_036_854_775_808.0;

fn invalid(a: &Value, op: &str, b: &Value) -> RunError {
    RunError::new(format!(
        "invalid operation: {} {op} {}",
        a.type_name(),
        b.type_name()
    ))
}

/// The float's exact integer value, when it has one that fits in an i64.
pub(crate) fn float_as_int(f: f64) -> Option<i64> {
    (f.fract() == 0.0 && (-I64_END..I64_END).contains(&f)).then_some(f as i64)
}

// ---- equality and hashing ---------------------------------------------

/// Deep equality; one step per value visited.
pub(crate) fn equal(a: &Value, b: &Value, budget: &mut Budget) -> RunResult<bool> {
    budget.step()?;
    Ok(match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        // Exact float equality is the language's `==` (as in Go).
        #[allow(clippy::float_cmp)]
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Int(i), Value::Float(f)) | (Value::Float(f), Value::Int(i)) => {
            float_as_int(*f) == Some(*i)
        }
        (Value::Str(x), Value::Str(y)) => {
            if x.len() == y.len() {
                budget.scan(x.len())?;
            }
            x == y
        }
        (Value::List(x), Value::List(y)) => {
            if Arc::ptr_eq(x, y) {
                return Ok(true);
            }
            if x.len() != y.len() {
                return Ok(false);
            }
            for (p, q) in x.iter().zip(y.iter()) {
                if !equal(p, q, budget)? {
                    return Ok(false);
                }
            }
            true
        }
        (Value::Entry(x), Value::Entry(y)) => {
            if Arc::ptr_eq(x, y) {
                return Ok(true);
            }
            budget.scan(x.key.len() + x.value.len())?;
            x == y
        }
        (Value::Map(x), Value::Map(y)) => {
            if x.ptr_eq(y) {
                return Ok(true);
            }
            if x.len() != y.len() {
                return Ok(false);
            }
            for ((kx, vx), (ky, vy)) in x.iter().zip(y.iter()) {
                if kx != ky || !equal(vx, vy, budget)? {
                    return Ok(false);
                }
            }
            true
        }
        (Value::Map(map), Value::Entry(entry)) | (Value::Entry(entry), Value::Map(map)) => {
            if map.len() != EntryField::SORTED.len() {
                return Ok(false);
            }
            for field in EntryField::SORTED {
                match map.get(field.name()) {
                    Some(v) if equal(v, &field.get(entry), budget)? => {}
                    _ => return Ok(false),
                }
            }
            true
        }
        _ => false,
    })
}

/// Hashes consistently with `equal`: equal values hash alike (an int and
/// the equal float hash the same; a map and the equal entry hash the same).
pub(crate) fn hash_value(value: &Value, h: &mut impl Hasher, budget: &mut Budget) -> RunResult<()> {
    budget.step()?;
    match value {
        Value::Nil => h.write_u8(0),
        Value::Bool(b) => {
            h.write_u8(1);
            h.write_u8(u8::from(*b));
        }
        Value::Int(i) => {
            h.write_u8(2);
            h.write_i64(*i);
        }
        Value::Float(f) => {
            if let Some(i) = float_as_int(*f) {
                h.write_u8(2);
                h.write_i64(i);
            } else {
                h.write_u8(3);
                h.write_u64(f.to_bits());
            }
        }
        Value::Str(s) => hash_str(s, h, budget)?,
        Value::List(items) => {
            h.write_u8(5);
            h.write_usize(items.len());
            for item in items.iter() {
                hash_value(item, h, budget)?;
            }
        }
        Value::Map(map) => {
            h.write_u8(6);
            h.write_usize(map.len());
            for (k, v) in map.iter() {
                hash_str(k, h, budget)?;
                hash_value(v, h, budget)?;
            }
        }
        Value::Entry(entry) => {
            h.write_u8(6);
            h.write_usize(EntryField::SORTED.len());
            for field in EntryField::SORTED {
                hash_str(field.name(), h, budget)?;
                hash_value(&field.get(entry), h, budget)?;
            }
        }
    }
    Ok(())
}

fn hash_str(s: &str, h: &mut impl Hasher, budget: &mut Budget) -> RunResult<()> {
    budget.scan(s.len())?;
    h.write_u8(4);
    h.write(s.as_bytes());
    h.write_u8(0xff);
    Ok(())
}

// ---- ordering ----------------------------------------------------------

/// Exact comparison of an int with a float (`None` for NaN).
fn cmp_int_float(i: i64, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f >= I64_END {
        return Some(Ordering::Less);
    }
    if f < -I64_END {
        return Some(Ordering::Greater);
    }
    let whole = f.trunc();
    Some(i.cmp(&(whole as i64)).then_with(|| {
        // Same integer part: the fraction decides.
        0.0_f64.partial_cmp(&(f - whole)).unwrap_or(Ordering::Equal)
    }))
}

/// Numeric order of two numbers (`None` when unordered: NaN; `Err(())` when
/// either is not a number).
pub(crate) fn cmp_numbers(a: &Value, b: &Value) -> Result<Option<Ordering>, ()> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(Some(x.cmp(y))),
        (Value::Float(x), Value::Float(y)) => Ok(x.partial_cmp(y)),
        (Value::Int(i), Value::Float(f)) => Ok(cmp_int_float(*i, *f)),
        (Value::Float(f), Value::Int(i)) => Ok(cmp_int_float(*i, *f).map(Ordering::reverse)),
        _ => Err(()),
    }
}

// ---- operators ---------------------------------------------------------

pub(crate) fn unary(op: UnaryOp, v: &Value) -> RunResult<Value> {
    match (op, v) {
        (UnaryOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
        (UnaryOp::Neg, Value::Int(i)) => i.checked_neg().map(Value::Int).ok_or_else(overflow),
        (UnaryOp::Neg, Value::Float(f)) => Ok(Value::Float(-f)),
        (UnaryOp::Plus, Value::Int(_) | Value::Float(_)) => Ok(v.clone()),
        _ => {
            let symbol = match op {
                UnaryOp::Not => "not",
                UnaryOp::Neg => "-",
                UnaryOp::Plus => "+",
            };
            Err(RunError::new(format!(
                "invalid operation: {symbol} {}",
                v.type_name()
            )))
        }
    }
}

fn overflow() -> RunError {
    RunError::new("integer overflow")
}

/// Both operands as floats, when both are numbers.
fn floats(a: &Value, b: &Value) -> Option<(f64, f64)> {
    let f = |v: &Value| match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    };
    Some((f(a)?, f(b)?))
}

/// The eager binary operators (`and`, `or`, `??` are evaluated lazily by the
/// evaluator and never reach here).
pub(crate) fn binary(
    op: BinaryOp,
    lhs: &Value,
    rhs: &Value,
    budget: &mut Budget,
) -> RunResult<Value> {
    let symbol = match op {
        BinaryOp::Add => "+",
        BinaryOp::Sub => "-",
        BinaryOp::Mul => "*",
        BinaryOp::Div => "/",
        BinaryOp::Mod => "%",
        BinaryOp::Pow => "**",
        BinaryOp::Range => "..",
        BinaryOp::And | BinaryOp::Or | BinaryOp::Coalesce => {
            return Err(RunError::new(
                "internal error: lazy operator evaluated eagerly",
            ));
        }
    };
    let checked = |result: Option<i64>| result.map(Value::Int).ok_or_else(overflow);
    match (op, lhs, rhs) {
        (BinaryOp::Add, Value::Int(x), Value::Int(y)) => checked(x.checked_add(*y)),
        (BinaryOp::Sub, Value::Int(x), Value::Int(y)) => checked(x.checked_sub(*y)),
        (BinaryOp::Mul, Value::Int(x), Value::Int(y)) => checked(x.checked_mul(*y)),
        (BinaryOp::Add, Value::Str(x), Value::Str(y)) => {
            budget.text(x.len() + y.len())?;
            let mut joined = String::with_capacity(x.len() + y.len());
            joined.push_str(x);
            joined.push_str(y);
            Ok(Value::Str(Arc::from(joined)))
        }
        (BinaryOp::Mod, Value::Int(x), Value::Int(y)) => {
            if *y == 0 {
                return Err(RunError::new("integer divide by zero"));
            }
            Ok(Value::Int(x.wrapping_rem(*y)))
        }
        (BinaryOp::Range, Value::Int(x), Value::Int(y)) => range(*x, *y, budget),
        (BinaryOp::Mod | BinaryOp::Range, _, _) => Err(invalid(lhs, symbol, rhs)),
        _ => {
            let (x, y) = floats(lhs, rhs).ok_or_else(|| invalid(lhs, symbol, rhs))?;
            Ok(Value::Float(match op {
                BinaryOp::Add => x + y,
                BinaryOp::Sub => x - y,
                BinaryOp::Mul => x * y,
                BinaryOp::Div => x / y,
                _ => x.powf(y),
            }))
        }
    }
}

/// `from..to`: the ints from `from` to `to` inclusive (empty when
/// `to < from`).
fn range(from: i64, to: i64, budget: &mut Budget) -> RunResult<Value> {
    let len = (i128::from(to) - i128::from(from) + 1).max(0);
    // Charged before allocating; the budget is far below usize::MAX.
    budget.container(usize::try_from(len).unwrap_or(usize::MAX))?;
    Ok(Value::from((from..=to).map(Value::Int).collect::<Vec<_>>()))
}

/// `a op b` for the comparison operators.
pub(crate) fn compare(op: CompareOp, a: &Value, b: &Value, budget: &mut Budget) -> RunResult<bool> {
    if let (Value::Str(x), Value::Str(y)) = (a, b)
        && let Some(result) = compare_text(op, x, y, budget)
    {
        return result;
    }
    let symbol = match op {
        CompareOp::Eq => return equal(a, b, budget),
        CompareOp::Ne => return Ok(!equal(a, b, budget)?),
        CompareOp::In => return contains_element(b, a, budget),
        CompareOp::Not(positive) => return Ok(!compare(positive.op(), a, b, budget)?),
        CompareOp::Lt => "<",
        CompareOp::Gt => ">",
        CompareOp::Le => "<=",
        CompareOp::Ge => ">=",
        // Strings only, and two strings were handled above.
        CompareOp::Contains => return Err(invalid(a, "contains", b)),
        CompareOp::StartsWith => return Err(invalid(a, "startsWith", b)),
        CompareOp::EndsWith => return Err(invalid(a, "endsWith", b)),
    };
    // Unordered (NaN) compares false, as in Go.
    let order = cmp_numbers(a, b).map_err(|()| invalid(a, symbol, b))?;
    Ok(order.is_some_and(|order| match op {
        CompareOp::Lt => order.is_lt(),
        CompareOp::Gt => order.is_gt(),
        CompareOp::Le => order.is_le(),
        _ => order.is_ge(),
    }))
}

/// `a op b` for two strings (byte order, as Go compares strings); `None`
/// for `in`, whose right side must be an array or a map.
pub(crate) fn compare_text(
    op: CompareOp,
    a: &str,
    b: &str,
    budget: &mut Budget,
) -> Option<RunResult<bool>> {
    let result = match op {
        CompareOp::Eq => a == b,
        CompareOp::Ne => a != b,
        CompareOp::Lt => a < b,
        CompareOp::Gt => a > b,
        CompareOp::Le => a <= b,
        CompareOp::Ge => a >= b,
        CompareOp::Contains => a.contains(b),
        CompareOp::StartsWith => a.starts_with(b),
        CompareOp::EndsWith => a.ends_with(b),
        CompareOp::In => return None,
        CompareOp::Not(positive) => {
            return compare_text(positive.op(), a, b, budget).map(|hit| hit.map(|hit| !hit));
        }
    };
    Some(budget.scan(a.len().max(b.len())).map(|()| result))
}

/// `needle in haystack`: element equality for lists, key membership for
/// rows.
pub(crate) fn contains_element(
    haystack: &Value,
    needle: &Value,
    budget: &mut Budget,
) -> RunResult<bool> {
    match (haystack, needle) {
        (Value::List(items), _) => {
            for item in items.iter() {
                if equal(item, needle, budget)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        (Value::Map(map), Value::Str(key)) => Ok(map.contains_key(key)),
        (Value::Entry(_), Value::Str(key)) => Ok(EntryField::from_name(key).is_some()),
        _ => Err(invalid(needle, "in", haystack)),
    }
}

/// `row.field`: a missing field is nil; fields of anything but a row are
/// an error (expr-lang: "cannot fetch").
pub(crate) fn member(holder: &Value, field: &FieldName) -> RunResult<Value> {
    match holder {
        Value::Map(_) | Value::Entry(_) => {
            Ok(holder.field(&field.name, field.entry).unwrap_or(Value::Nil))
        }
        other => Err(RunError::new(format!(
            "cannot fetch {} from {}",
            field.name,
            other.type_name()
        ))),
    }
}
