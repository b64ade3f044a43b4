//! Mathematical functions over DOUBLE: SIGN, POW/POWER, SQRT, EXP, LN, LOG, LOG2, LOG10, PI,
//! the trigonometric functions, DEGREES, RADIANS.
//!
//! MySQL's rules: arguments are read as doubles (strings by their numeric prefix); a logarithm
//! of a value <= 0 (or to a base <= 0 or 1) is NULL with warning 1365 "Division by 0"; SQRT of a
//! negative and ASIN/ACOS outside [-1, 1] are NULL without one; a result that is not a finite
//! double (POW(10, 400), EXP(1000), COT(0), POW(0, -1)) is error 1690 naming the call.
//! PI() is the double pi: MariaDB shows it, and arithmetic on it, with six decimals
//! (`3.141593`, `PI() * 2` is `6.283185`) because its result carries a display scale shoal's
//! values do not have; shoal shows every digit of the same double (a counted fixture override).

use super::arity;
use crate::ast::Expr;
use crate::error::SqlError;
use crate::eval::Context;
use crate::value::{SqlType, Value};

/// Error 1690 for a call whose double result is not finite.
fn out_of_range(name: &str, args: &[Expr]) -> SqlError {
    let list: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    SqlError::OutOfRange(
        "DOUBLE",
        format!("{}({})", name.to_ascii_lowercase(), list.join(",")),
    )
}

/// A logarithm's argument outside its domain: NULL with MySQL's warning.
fn log_domain(ctx: &mut dyn Context) -> Value {
    ctx.warn(
        shoal_errors::ER_DIVISION_BY_ZERO.code,
        "Division by 0".into(),
    );
    Value::Null
}

pub(super) fn call(
    name: &str,
    args: &[Expr],
    vals: &[Value],
    ctx: &mut dyn Context,
) -> Result<Option<Value>, SqlError> {
    let unary = [
        "SQRT", "EXP", "LN", "LOG2", "LOG10", "SIN", "COS", "TAN", "ASIN", "ACOS", "COT",
        "DEGREES", "RADIANS", "SIGN",
    ];
    if unary.contains(&name) {
        arity(name, args, 1, 1)?;
    }
    if !matches!(
        name,
        "SQRT"
            | "EXP"
            | "LN"
            | "LOG2"
            | "LOG10"
            | "SIN"
            | "COS"
            | "TAN"
            | "ASIN"
            | "ACOS"
            | "COT"
            | "DEGREES"
            | "RADIANS"
            | "SIGN"
            | "POW"
            | "POWER"
            | "LOG"
            | "ATAN"
            | "ATAN2"
            | "PI"
    ) {
        return Ok(None);
    }
    match name {
        "POW" | "POWER" | "ATAN2" => arity(name, args, 2, 2)?,
        "LOG" | "ATAN" => arity(name, args, 1, 2)?,
        "PI" => arity(name, args, 0, 0)?,
        _ => {}
    }
    if name == "PI" {
        return Ok(Some(Value::Double(std::f64::consts::PI)));
    }
    if vals.iter().any(Value::is_null) {
        return Ok(Some(Value::Null));
    }
    let x = vals[0].to_f64().unwrap_or(0.0);
    let y = vals.get(1).and_then(Value::to_f64).unwrap_or(0.0);
    let r = match name {
        "SIGN" => {
            let s = match &vals[0] {
                Value::Int(i) => i.signum(),
                Value::UInt(u) => (*u > 0) as i64,
                Value::Decimal(d) => d.mant.signum() as i64,
                _ if x > 0.0 => 1,
                _ if x < 0.0 => -1,
                _ => 0,
            };
            return Ok(Some(Value::Int(s)));
        }
        "SQRT" if x < 0.0 => return Ok(Some(Value::Null)),
        "SQRT" => x.sqrt(),
        "EXP" => x.exp(),
        "LN" | "LOG" if args.len() == 1 => {
            if x <= 0.0 {
                return Ok(Some(log_domain(ctx)));
            }
            x.ln()
        }
        "LOG" => {
            // LOG(base, x).
            if y <= 0.0 || x <= 0.0 || x == 1.0 {
                return Ok(Some(log_domain(ctx)));
            }
            y.ln() / x.ln()
        }
        "LOG2" | "LOG10" => {
            if x <= 0.0 {
                return Ok(Some(log_domain(ctx)));
            }
            if name == "LOG2" {
                x.log2()
            } else {
                x.log10()
            }
        }
        "POW" | "POWER" => x.powf(y),
        "SIN" => x.sin(),
        "COS" => x.cos(),
        "TAN" => x.tan(),
        "ASIN" | "ACOS" if !(-1.0..=1.0).contains(&x) => return Ok(Some(Value::Null)),
        "ASIN" => x.asin(),
        "ACOS" => x.acos(),
        "ATAN" if args.len() == 1 => x.atan(),
        "ATAN" | "ATAN2" => x.atan2(y),
        "COT" => 1.0 / x.tan(),
        "DEGREES" => x.to_degrees(),
        "RADIANS" => x.to_radians(),
        _ => return Ok(None),
    };
    if !r.is_finite() {
        return Err(out_of_range(name, args));
    }
    // -0 prints as 0 in MySQL.
    Ok(Some(Value::Double(if r == 0.0 { 0.0 } else { r })))
}

pub(super) fn static_type(name: &str, _args: &[Expr]) -> Option<SqlType> {
    Some(match name {
        "SIGN" => SqlType::Int,
        "SQRT" | "EXP" | "LN" | "LOG" | "LOG2" | "LOG10" | "POW" | "POWER" | "SIN" | "COS"
        | "TAN" | "ASIN" | "ACOS" | "ATAN" | "ATAN2" | "COT" | "DEGREES" | "RADIANS" | "PI" => {
            SqlType::Double
        }
        _ => return None,
    })
}
