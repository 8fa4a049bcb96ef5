//! JSON output exactly as Python's
//! `json.dumps(v, sort_keys=True, ensure_ascii=False)` prints it, and a
//! bound on how large a result may print.

use std::fmt::Write as _;

use super::value::{EntryField, Value};

/// The largest result `run` returns, in estimated bytes of JSON. Values
/// share structure (`let x = [...]; [x, x, x]`), so a result built within
/// the budgets can still print far larger than it is in memory; past this
/// bound it is refused instead of printed.
pub(crate) const MAX_RESULT_BYTES: u64 = 256 << 20;

pub fn to_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => write_float(*f, out),
        Value::Str(s) => write_str(s, out),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Map(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str(k, out);
                out.push_str(": ");
                write_value(v, out);
            }
            out.push('}');
        }
        Value::Entry(entry) => {
            out.push('{');
            for (i, field) in EntryField::SORTED.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str(field.name(), out);
                out.push_str(": ");
                write_value(&field.get(entry), out);
            }
            out.push('}');
        }
    }
}

/// Python's JSON float: `repr`, with `NaN`/`Infinity`/`-Infinity`.
fn write_float(f: f64, out: &mut String) {
    if f.is_nan() {
        out.push_str("NaN");
    } else if f.is_infinite() {
        out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
    } else {
        out.push_str(&float_repr(f));
    }
}

/// Python's `repr` of a finite float: the shortest digits that read back
/// as the same float, in positional form when the decimal exponent is in
/// `-4 < decpt <= 16` (always with a fraction, `2.0`), else `1e+16` form.
pub(crate) fn float_repr(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    let sci = shortest_scientific(f.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let mut digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    let exponent: i32 = exponent.parse().unwrap_or(0);
    // The value is 0.DIGITS × 10^decpt.
    let decpt = exponent + 1;
    let mut out = String::new();
    if f < 0.0 {
        out.push('-');
    }
    let (head, tail) = digits.split_at(1.min(digits.len()));
    if decpt > 16 || decpt <= -4 {
        out.push_str(head);
        if !tail.is_empty() {
            out.push('.');
            out.push_str(tail);
        }
        let _ = write!(
            out,
            "e{}{:02}",
            if exponent < 0 { '-' } else { '+' },
            exponent.unsigned_abs()
        );
    } else if decpt <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', decpt.unsigned_abs() as usize));
        out.push_str(&digits);
    } else {
        let point = decpt as usize;
        if point >= digits.len() {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', point - digits.len()));
            out.push_str(".0");
        } else {
            let (whole, fraction) = digits.split_at(point);
            out.push_str(whole);
            out.push('.');
            out.push_str(fraction);
        }
    }
    out
}

/// `d.ddde±x` with the fewest digits that read back as `f` and, among
/// those, the ones closest to `f` (Python's choice). Rust's `{:e}` finds
/// the fewest digits but breaks ties upwards (`…618.3` where Python prints
/// `…618.2` for a value ending in `.25`); formatting to that many digits,
/// which rounds exactly, picks the closest.
fn shortest_scientific(f: f64) -> String {
    let shortest = format!("{f:e}");
    let digits = shortest
        .split('e')
        .next()
        .map_or(1, |m| m.chars().filter(char::is_ascii_digit).count());
    let closest = format!("{:.*e}", digits.saturating_sub(1), f);
    if closest.parse::<f64>() == Ok(f) {
        closest
    } else {
        shortest
    }
}

/// A JSON string as Python writes it with `ensure_ascii=False`.
fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Whether `value` prints within `MAX_RESULT_BYTES` (estimated). Visits at
/// most about that many bytes' worth of values, however much is shared.
pub(crate) fn fits_result_limit(value: &Value) -> bool {
    let mut remaining = MAX_RESULT_BYTES;
    fits(value, &mut remaining)
}

fn fits(value: &Value, remaining: &mut u64) -> bool {
    match value {
        Value::Nil | Value::Bool(_) => take(remaining, 5),
        Value::Int(_) | Value::Float(_) => take(remaining, 24),
        Value::Str(s) => take(remaining, s.len() + 2),
        Value::List(items) => {
            take(remaining, 2 + 2 * items.len()) && items.iter().all(|v| fits(v, remaining))
        }
        Value::Map(map) => {
            let keys: usize = map.iter().map(|(k, _)| k.len() + 4).sum();
            take(remaining, 2 + keys) && map.iter().all(|(_, v)| fits(v, remaining))
        }
        Value::Entry(entry) => take(
            remaining,
            160 + entry.key.len()
                + entry.value.len()
                + entry.kind.len()
                + entry.namespace.len()
                + entry.references.iter().map(|r| r.len() + 4).sum::<usize>(),
        ),
    }
}

fn take(remaining: &mut u64, bytes: usize) -> bool {
    let bytes = bytes as u64;
    if *remaining < bytes {
        return false;
    }
    *remaining -= bytes;
    true
}
