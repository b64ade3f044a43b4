//! The built-in function library beyond the core of `eval.rs`: hashing and identifiers
//! ([`hash`]), dates and times ([`date`]), strings ([`string`]) and mathematics ([`math`]).
//!
//! [`crate::eval`] evaluates a call's arguments and hands the call to [`call`] when it is not
//! one of its own (control flow, the core string functions, NOW()). Each module answers
//! `Ok(None)` for a name it does not know, so the dispatch is a chain of small matches and a
//! name no module knows is error 1305. [`static_type`] gives a call's result type the same way
//! (the column type of the wire's column definitions and of UNION/CASE typing).
//!
//! The expected behaviour is MariaDB 10.11's, checked by the fixture files
//! `tests/sql/functions.test` and `tests/sql/dates.test` against a private MariaDB: NULL in,
//! NULL out (unless MariaDB says otherwise, as `SHA2(s, NULL)`), arguments coerced as MariaDB
//! coerces them, its warnings, and no panic on any input: counts and positions are saturated,
//! string results over `max_allowed_packet` are NULL with warning 1301.

pub mod bytes;
pub mod date;
pub mod hash;
pub mod math;
pub mod string;
pub mod time;

pub use hash::{Rand, RandState};

use crate::ast::Expr;
use crate::error::SqlError;
use crate::eval::Context;
use crate::value::{SqlType, Value};

/// A call to a function `eval.rs` does not handle itself: `name` is upper case, `vals` are the
/// evaluated `args`. `Ok(None)`: no such function.
pub(crate) fn call(
    name: &str,
    args: &[Expr],
    vals: &[Value],
    ctx: &mut dyn Context,
) -> Result<Option<Value>, SqlError> {
    if let Some(v) = hash::call(name, args, vals, ctx)? {
        return Ok(Some(v));
    }
    if let Some(v) = time::call(name, args, vals, ctx)? {
        return Ok(Some(v));
    }
    if let Some(v) = date::call(name, args, vals, ctx)? {
        return Ok(Some(v));
    }
    if let Some(v) = string::call(name, args, vals, ctx)? {
        return Ok(Some(v));
    }
    math::call(name, args, vals, ctx)
}

/// The result type of a call to one of this library's functions (None: not one of them).
pub(crate) fn static_type(name: &str, args: &[Expr]) -> Option<SqlType> {
    hash::static_type(name)
        .or_else(|| time::static_type(name, args))
        .or_else(|| date::static_type(name, args))
        .or_else(|| string::static_type(name))
        .or_else(|| math::static_type(name, args))
}

/// Fails with 1582 unless the call has `lo..=hi` arguments.
pub(crate) fn arity(name: &str, args: &[Expr], lo: usize, hi: usize) -> Result<(), SqlError> {
    if args.len() < lo || args.len() > hi {
        return Err(SqlError::ParamCount(name.to_ascii_lowercase()));
    }
    Ok(())
}
