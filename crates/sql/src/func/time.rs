//! The TIME functions: TIME(), TIMEDIFF, ADDTIME, SUBTIME, SEC_TO_TIME, TIME_TO_SEC, MAKETIME,
//! TIME_FORMAT, and TIME's interval arithmetic (`t + INTERVAL n unit`, `add_interval`).
//!
//! Each returns a [`Value::Time`] (or, where MariaDB 10.11 does, a DATETIME or a string: ADDTIME
//! of a DATETIME is a DATETIME, of a string a string). A result outside TIME's range,
//! `-838:59:59` to `838:59:59`, is clipped with warning 1292 `Truncated incorrect time value`,
//! except interval arithmetic, which is NULL with warning 1441, as MariaDB answers.
//!
//! # Fractional digits
//!
//! A TIME value carries the digits it shows ([`crate::temporal::Time::fsp`]), and a result
//! column its decimals ([`SqlType::Time`]); MariaDB decides both from the arguments' precision,
//! two ways:
//!
//! * functions that read an argument as a time (TIME(), TIMEDIFF, ADDTIME, TIME_TO_SEC) take a
//!   constant string's precision from the digits it writes (`TIME('10:00:00.50')` shows two),
//!   any other string's as 6 ([`time_precision`]);
//! * functions that read an argument as a number (SEC_TO_TIME, MAKETIME's seconds) take a
//!   decimal's scale and 6 for strings and doubles ([`number_precision`]).
//!
//! The same rules applied to values (`value_time_fsp`, `value_number_fsp`) give the value's
//! own fsp, so `CONCAT(TIME(x), '')` shows what the column shows.

use super::arity;
use crate::ast::Expr;
use crate::error::SqlError;
use crate::eval::{static_type as ty, Context};
use crate::temporal::{self, frac_digits, Time, MAX_TIME_MICROS};
use crate::value::{SqlType, Value};

/// A typed literal `TIME 'x'`, read strictly as MariaDB does: the whole string must be a time
/// within the range (not a datetime), else 1525 `Incorrect TIME value`; it shows the digits
/// it writes.
pub fn typed_literal(s: &str) -> Result<Value, SqlError> {
    match temporal::read_time(s.as_bytes()) {
        Some(r) if !r.trailing && !r.clipped && !r.datetime => Ok(Value::Time(r.value)),
        _ => Err(SqlError::coded(
            shoal_errors::ER_WRONG_VALUE,
            format!("Incorrect TIME value: '{s}'"),
        )),
    }
}

/// 1292 `Truncated incorrect time value: '<shown>'`.
fn warn_truncated(ctx: &mut dyn Context, shown: &str) {
    ctx.warn(
        shoal_errors::ER_TRUNCATED_WRONG_VALUE.code,
        format!("Truncated incorrect time value: '{shown}'"),
    );
}

/// `micros` as a TIME of `fsp` digits, clipped to TIME's range with warning 1292 (the message
/// shows the unclipped value, as MariaDB's does).
pub fn clip(ctx: &mut dyn Context, micros: i64, fsp: u8) -> Time {
    let (t, clipped) = Time::clipped(micros, fsp);
    if clipped {
        let t = Time::from_micros(micros, fsp);
        warn_truncated(ctx, &t.text_fsp(if t.micro != 0 { fsp } else { 0 }));
    }
    t
}

/// The precision MariaDB gives an expression read as a time (see the module doc).
pub fn time_precision(e: &Expr) -> u8 {
    match e {
        Expr::Literal(Value::Str(s)) => match temporal::read_time(s.as_bytes()) {
            Some(_) => frac_digits(s.as_bytes()),
            None => 6,
        },
        _ => type_precision(ty(e)),
    }
}

/// The precision MariaDB gives an expression read as a number (see the module doc).
pub fn number_precision(e: &Expr) -> u8 {
    type_precision(ty(e))
}

/// [`time_precision`] at run time, of argument `e` whose value is `v`: a constant string's
/// written digits, else the value's type's (a string's 6), so the value agrees with the
/// result column's static type.
pub fn value_precision(e: &Expr, v: &Value) -> u8 {
    match e {
        Expr::Literal(_) => time_precision(e),
        _ => type_precision(v.sql_type()),
    }
}

/// The fractional digits of a type: TIME's and DATETIME's own, a DECIMAL's scale, none for
/// integers and dates, 6 for anything else.
fn type_precision(t: SqlType) -> u8 {
    match t {
        SqlType::Time(n) | SqlType::DateTime(n) => n,
        SqlType::Decimal(s) => s.min(6),
        SqlType::Int | SqlType::UInt | SqlType::Null | SqlType::Date => 0,
        SqlType::Double | SqlType::Str | SqlType::Bytes => 6,
    }
}

/// The fsp a value read as a time gives a result: a TIME's own, a text's written digits.
fn value_time_fsp(v: &Value) -> u8 {
    match v {
        Value::Time(t) => t.fsp,
        Value::Str(s) => frac_digits(s.as_bytes()),
        Value::Bytes(b) => frac_digits(b),
        Value::DateTime(_, fsp) => *fsp,
        v => value_number_fsp(v),
    }
}

/// The fsp a value read as a number gives a result.
fn value_number_fsp(v: &Value) -> u8 {
    match v {
        Value::Time(t) => t.fsp,
        Value::Decimal(d) => d.scale.min(6) as u8,
        Value::Double(f) if f.fract() != 0.0 => 6,
        Value::Str(_) | Value::Bytes(_) => 6,
        _ => 0,
    }
}

/// A number of seconds (SEC_TO_TIME's argument, MAKETIME's seconds) as microseconds, `None`
/// for NULL; strings are read as DECIMAL (with MariaDB's warning for what is no number).
fn seconds_micros(ctx: &mut dyn Context, v: &Value) -> Option<i128> {
    let d = match v {
        Value::Null => return None,
        Value::Double(f) => return Some((f * 1e6).round().clamp(-1e30, 1e30) as i128),
        Value::Str(_) | Value::Bytes(_) => {
            let s = v.to_text().unwrap_or_default();
            match crate::decimal::Decimal::parse(s.trim()) {
                Some(d) => d,
                None => {
                    let (f, whole) = crate::value::str_to_f64(&s);
                    if !whole {
                        ctx.warn(
                            shoal_errors::ER_TRUNCATED_WRONG_VALUE.code,
                            format!("Truncated incorrect DECIMAL value: '{s}'"),
                        );
                    }
                    return Some((f * 1e6).round().clamp(-1e30, 1e30) as i128);
                }
            }
        }
        v => v.to_decimal()?,
    };
    let scale = d.scale.min(30);
    let micros = if scale <= 6 {
        d.mant.saturating_mul(10i128.pow(6 - scale))
    } else {
        d.mant / 10i128.pow(scale - 6)
    };
    Some(micros)
}

/// An `i128` of microseconds as an `i64` (saturated: anything near the bounds is far past
/// TIME's range and clips all the same).
fn saturate(m: i128) -> i64 {
    m.clamp(i128::from(i64::MIN / 2), i128::from(i64::MAX / 2)) as i64
}

/// What a value is for ADDTIME/SUBTIME/TIMEDIFF: a datetime (a DATETIME, or a text that
/// writes a date and a time) or a time.
enum Operand {
    DateTime(crate::value::DateTime),
    Time(Time),
}

fn operand(ctx: &mut dyn Context, v: &Value) -> Option<Operand> {
    match v {
        Value::Null => None,
        Value::DateTime(d, _) => Some(Operand::DateTime(*d)),
        Value::Str(_) | Value::Bytes(_) => {
            let b = v.to_bytes().unwrap_or_default().into_owned();
            // A text the time reader takes as a datetime (a date and a time) is one.
            if temporal::read_time(&b).is_some_and(|r| r.datetime) {
                if let Some(r) = temporal::read_datetime_bytes(&b).filter(|r| r.has_time) {
                    if r.trailing {
                        ctx.warn(
                            shoal_errors::ER_TRUNCATED_WRONG_VALUE.code,
                            format!(
                                "Truncated incorrect datetime value: '{}'",
                                v.to_text().unwrap_or_default()
                            ),
                        );
                    }
                    return Some(Operand::DateTime(r.value));
                }
            }
            temporal::time_of(ctx, v).map(Operand::Time)
        }
        v => temporal::time_of(ctx, v).map(Operand::Time),
    }
}

/// A datetime in microseconds since year 0 (for differences and sums).
fn datetime_micros(d: &crate::value::DateTime) -> i128 {
    let days = super::date::day_number(d);
    (i128::from(days) * 86_400 + i128::from(d.hour) * 3600 + i128::from(d.minute) * 60) * 1_000_000
        + i128::from(d.second) * 1_000_000
        + i128::from(d.micro)
}

pub(super) fn call(
    name: &str,
    args: &[Expr],
    vals: &[Value],
    ctx: &mut dyn Context,
) -> Result<Option<Value>, SqlError> {
    Ok(Some(match name {
        "TIME" => {
            arity(name, args, 1, 1)?;
            match temporal::time_of(ctx, &vals[0]) {
                None => Value::Null,
                Some(t) => Value::Time(Time {
                    fsp: value_time_fsp(&vals[0]),
                    ..t
                }),
            }
        }
        "TIMEDIFF" => {
            arity(name, args, 2, 2)?;
            let fsp = value_time_fsp(&vals[0]).max(value_time_fsp(&vals[1]));
            let (Some(a), Some(b)) = (operand(ctx, &vals[0]), operand(ctx, &vals[1])) else {
                return Ok(Some(Value::Null));
            };
            let diff = match (a, b) {
                (Operand::Time(a), Operand::Time(b)) => {
                    i128::from(a.micros()) - i128::from(b.micros())
                }
                (Operand::DateTime(a), Operand::DateTime(b)) => {
                    datetime_micros(&a) - datetime_micros(&b)
                }
                // A time and a datetime: MariaDB answers NULL.
                _ => return Ok(Some(Value::Null)),
            };
            Value::Time(clip(ctx, saturate(diff), fsp))
        }
        "ADDTIME" | "SUBTIME" => {
            arity(name, args, 2, 2)?;
            let sign: i128 = if name == "SUBTIME" { -1 } else { 1 };
            let fsp = value_time_fsp(&vals[0]).max(value_time_fsp(&vals[1]));
            let first_is_time = matches!(vals[0], Value::Time(_));
            let (Some(a), Some(Operand::Time(b))) =
                (operand(ctx, &vals[0]), operand(ctx, &vals[1]))
            else {
                return Ok(Some(Value::Null));
            };
            let b = i128::from(b.micros()) * sign;
            match a {
                Operand::Time(a) => {
                    let sum = saturate(i128::from(a.micros()) + b);
                    if first_is_time {
                        Value::Time(clip(ctx, sum, fsp))
                    } else {
                        // A string argument: the result is text (MariaDB cannot type it), of
                        // six digits when it has a fraction.
                        let t = clip(ctx, sum, 6);
                        Value::Str(t.text_fsp(if t.micro != 0 { 6 } else { 0 }))
                    }
                }
                Operand::DateTime(d) => {
                    let total = datetime_micros(&d) + b;
                    let Some(r) = super::date::datetime_of_micros(total) else {
                        return Ok(Some(Value::Null));
                    };
                    if matches!(vals[0], Value::DateTime(..)) {
                        Value::DateTime(r.truncated(fsp), fsp)
                    } else {
                        Value::Str(r.text_fsp(crate::value::natural_fsp(&r)))
                    }
                }
            }
        }
        "SEC_TO_TIME" => {
            arity(name, args, 1, 1)?;
            match seconds_micros(ctx, &vals[0]) {
                None => Value::Null,
                Some(m) => {
                    let fsp = value_number_fsp(&vals[0]);
                    let m = saturate(m);
                    let m = m - m % 10i64.pow(6 - u32::from(fsp));
                    let (t, clipped) = Time::clipped(m, fsp);
                    if clipped {
                        ctx.warn(
                            shoal_errors::ER_TRUNCATED_WRONG_VALUE.code,
                            format!(
                                "Truncated incorrect seconds value: '{}'",
                                vals[0].to_text().unwrap_or_default()
                            ),
                        );
                    }
                    Value::Time(t)
                }
            }
        }
        "TIME_TO_SEC" => {
            arity(name, args, 1, 1)?;
            match temporal::time_of(ctx, &vals[0]) {
                None => Value::Null,
                Some(t) => {
                    let fsp = value_time_fsp(&vals[0]);
                    let m = t.micros();
                    if fsp == 0 && t.micro == 0 {
                        Value::Int(m / 1_000_000)
                    } else {
                        let fsp = fsp.max(1);
                        let d = crate::decimal::Decimal::new(i128::from(m), 6);
                        d.rescale(u32::from(fsp))
                            .map_or(Value::Null, Value::Decimal)
                    }
                }
            }
        }
        "MAKETIME" => {
            arity(name, args, 3, 3)?;
            if vals.iter().any(Value::is_null) {
                return Ok(Some(Value::Null));
            }
            let h = vals[0].to_i128().unwrap_or(0);
            let m = vals[1].to_i128().unwrap_or(0);
            let Some(s) = seconds_micros(ctx, &vals[2]) else {
                return Ok(Some(Value::Null));
            };
            if !(0..=59).contains(&m) || !(0..60_000_000).contains(&s) {
                return Ok(Some(Value::Null));
            }
            let fsp = value_number_fsp(&vals[2]);
            let s = s - s % 10i128.pow(6 - u32::from(fsp));
            let total = (h.abs().min(1_000_000) * 3600 + m * 60) * 1_000_000 + s;
            let total = if h < 0 { -total } else { total };
            let (t, clipped) = Time::clipped(saturate(total), fsp);
            if clipped {
                let shown = format!("{h}:{m:02}:{:02}", s / 1_000_000);
                warn_truncated(ctx, &shown);
            }
            Value::Time(t)
        }
        "TIME_FORMAT" => {
            arity(name, args, 2, 2)?;
            if vals[1].is_null() {
                return Ok(Some(Value::Null));
            }
            match temporal::time_of(ctx, &vals[0]) {
                None => Value::Null,
                Some(t) => format_time(&t, &vals[1].to_text().unwrap_or_default())
                    .map_or(Value::Null, Value::Str),
            }
        }
        _ => return Ok(None),
    }))
}

/// TIME_FORMAT: the hour, minute, second and fraction specifiers (`%H %k %h %I %l %i %s %S %f
/// %p %r %T %%`); any other specifier makes the result NULL, as MariaDB answers. A negative
/// time starts with `-`.
fn format_time(t: &Time, fmt: &str) -> Option<String> {
    let mut out = String::new();
    if t.neg {
        out.push('-');
    }
    let h12 = |h: u32| if h.is_multiple_of(12) { 12 } else { h % 12 };
    let ampm = |h: u32| if h % 24 < 12 { "AM" } else { "PM" };
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(spec) = chars.next() else {
            break;
        };
        match spec {
            'H' => out.push_str(&format!("{:02}", t.hour)),
            'k' => out.push_str(&t.hour.to_string()),
            'h' | 'I' => out.push_str(&format!("{:02}", h12(t.hour))),
            'l' => out.push_str(&h12(t.hour).to_string()),
            'i' => out.push_str(&format!("{:02}", t.minute)),
            's' | 'S' => out.push_str(&format!("{:02}", t.second)),
            'f' => out.push_str(&format!("{:06}", t.micro)),
            'p' => out.push_str(ampm(t.hour)),
            'r' => out.push_str(&format!(
                "{:02}:{:02}:{:02} {}",
                h12(t.hour),
                t.minute,
                t.second,
                ampm(t.hour)
            )),
            'T' => out.push_str(&format!("{:02}:{:02}:{:02}", t.hour, t.minute, t.second)),
            'a' | 'b' | 'c' | 'D' | 'd' | 'e' | 'j' | 'M' | 'm' | 'U' | 'u' | 'V' | 'v' | 'W'
            | 'w' | 'X' | 'x' | 'Y' | 'y' => return None,
            other => out.push(other),
        }
    }
    Some(out)
}

/// `t + INTERVAL amount unit` (negated for a subtraction) for the units below a month, given as
/// microseconds (`micros`) with the digits the amount shows: a TIME of the larger fsp, or NULL
/// with warning 1441 past TIME's range.
pub(super) fn add_interval(ctx: &mut dyn Context, t: &Time, micros: i128, fsp: u8) -> Value {
    let r = i128::from(t.micros()) + micros;
    if r.abs() > i128::from(MAX_TIME_MICROS) {
        overflow(ctx);
        return Value::Null;
    }
    Value::Time(Time::from_micros(r as i64, t.fsp.max(fsp)))
}

/// Warning 1441 for a TIME moved out of its range (or by months).
pub(super) fn overflow(ctx: &mut dyn Context) {
    ctx.warn(
        shoal_errors::ER_DATETIME_FUNCTION_OVERFLOW.code,
        "Datetime function: time field overflow".into(),
    );
}

pub(super) fn static_type(name: &str, args: &[Expr]) -> Option<SqlType> {
    let arg = |i: usize| args.get(i);
    Some(match name {
        "TIME" => SqlType::Time(arg(0).map_or(0, time_precision)),
        "TIMEDIFF" => SqlType::Time(
            arg(0)
                .map_or(0, time_precision)
                .max(arg(1).map_or(0, time_precision)),
        ),
        "ADDTIME" | "SUBTIME" => match arg(0).map(ty) {
            Some(SqlType::Time(n)) => SqlType::Time(n.max(arg(1).map_or(0, time_precision))),
            Some(SqlType::DateTime(n)) => {
                SqlType::DateTime(n.max(arg(1).map_or(0, time_precision)))
            }
            _ => SqlType::Str,
        },
        "SEC_TO_TIME" => SqlType::Time(arg(0).map_or(0, number_precision)),
        "MAKETIME" => SqlType::Time(arg(2).map_or(0, number_precision)),
        "TIME_TO_SEC" => match arg(0).map_or(0, time_precision) {
            0 => SqlType::Int,
            n => SqlType::Decimal(n),
        },
        "TIME_FORMAT" => SqlType::Str,
        "CURTIME" | "CURRENT_TIME" => SqlType::Time(match arg(0) {
            Some(Expr::Literal(v)) => v.to_i128().unwrap_or(0).clamp(0, 6) as u8,
            _ => 0,
        }),
        _ => return None,
    })
}
