//! Expression evaluation with MySQL semantics.
//!
//! [`eval`] walks our AST against a [`Context`] that supplies everything outside the expression:
//! variables, parameters of a prepared statement, the current row (for `SHOW ... WHERE`), session
//! facts (database, user, connection id, LAST_INSERT_ID), the kill flag (KILL QUERY and
//! `max_execution_time`, polled by `SLEEP()`, `BENCHMARK()` and `LIKE`), `max_allowed_packet`
//! and a sink for warnings (`SHOW WARNINGS`).
//!
//! Hardening rules: positions, lengths and counts from SQL are saturated, never wrapped (any
//! i128 is a valid argument); strings are cut by characters, never by a byte index inside one;
//! a string result over `max_allowed_packet` is NULL with warning 1301 (CONCAT, CONCAT_WS,
//! REPLACE, REPEAT, LPAD, RPAD, as MySQL); matching and trimming are polynomial (no
//! backtracking blow-up); the recursion in [`eval`] grows its stack when low
//! ([`crate::depth`]).
//!
//! Numeric rules (see `value.rs` for coercion): integer `+ - *` are checked and overflow is
//! error 1690 as in MySQL (`BIGINT value is out of range in '(a + b)'`); an UNSIGNED operand makes
//! the operation unsigned; `/` yields DECIMAL with `div_precision_increment` more digits (or DOUBLE
//! if an operand is DOUBLE/string); division or modulo by zero yields NULL. NULL propagates
//! through operators and most functions; AND/OR use three-valued logic.

use std::cmp::Ordering;
use std::time::{Duration, Instant};

use crate::ast::{AggFunc, BinOp, CastType, Expr, UnOp, VarScope};
use crate::decimal::Decimal;
use crate::error::SqlError;
use crate::value::{compare, format_double, str_to_f64, str_to_i128, DateTime, SqlType, Value};

/// What an expression may ask of its surroundings.
pub trait Context {
    /// `@@[scope.]name`.
    fn system_var(&mut self, scope: VarScope, name: &str) -> Result<Value, SqlError>;
    /// `@name` (NULL if unset).
    fn user_var(&self, name: &str) -> Value;
    /// `@name := v`.
    fn set_user_var(&mut self, name: &str, v: Value);
    /// The n-th placeholder value.
    fn param(&self, i: usize) -> Result<Value, SqlError> {
        Err(SqlError::WrongArguments(format!("parameter {}", i + 1)))
    }
    /// A column of the current row.
    fn column(&self, name: &str) -> Result<Value, SqlError> {
        Err(SqlError::UnknownColumn(
            name.to_string(),
            "field list".into(),
        ))
    }
    /// Slot `i` of the query engine's row frame (a bound column).
    fn slot(&self, i: usize) -> Result<Value, SqlError> {
        Err(SqlError::Unsupported(format!(
            "bound column #{i} outside a query"
        )))
    }
    /// The value of a subquery (the query engine runs it, with the current row as its outer
    /// row when correlated).
    fn subquery(&mut self, _q: &crate::ast::Subquery) -> Result<Value, SqlError> {
        Err(SqlError::Unsupported("subqueries here".into()))
    }
    /// Current database.
    fn database(&self) -> Option<String>;
    /// `USER()`: `user@client-host`.
    fn user(&self) -> String;
    /// `CURRENT_USER()`: `user@account-host`.
    fn current_user(&self) -> String;
    /// `CONNECTION_ID()`.
    fn connection_id(&self) -> u64;
    /// `LAST_INSERT_ID()`.
    fn last_insert_id(&self) -> u64;
    /// `LAST_INSERT_ID(expr)`.
    fn set_last_insert_id(&mut self, v: u64);
    /// `FOUND_ROWS()`: the rows the session's last SELECT returned, or with
    /// `SQL_CALC_FOUND_ROWS` would have returned without its LIMIT.
    fn found_rows(&self) -> u64;
    /// Statement start time (NOW() is constant within a statement).
    fn now(&self) -> DateTime;
    /// `VERSION()`.
    fn version(&self) -> String;
    /// Whether the running statement was killed.
    fn killed(&self) -> bool;
    /// `div_precision_increment`.
    fn div_precision(&self) -> u32 {
        4
    }
    /// Records a warning of the running statement (for `SHOW WARNINGS`). The default drops it.
    fn warn(&mut self, _code: u16, _message: String) {}
    /// Records a note (`SHOW WARNINGS` level `Note`, e.g. 1050 for `CREATE TABLE IF NOT
    /// EXISTS` of an existing table). The default records it as a warning.
    fn note(&mut self, code: u16, message: String) {
        self.warn(code, message)
    }
    /// `max_allowed_packet`: the largest string a function may build (larger results are NULL
    /// with warning 1301). The default reads the session variable.
    fn max_allowed_packet(&mut self) -> u64 {
        self.system_var(VarScope::Session, "max_allowed_packet")
            .ok()
            .and_then(|v| v.to_i128())
            .map(|v| v.clamp(1024, 1 << 30) as u64)
            .unwrap_or(DEFAULT_MAX_ALLOWED_PACKET)
    }
    /// The session's random generators (`RAND`); None: each call draws from a fresh one (a
    /// constant seed then yields its first number every time).
    fn rand_state(&mut self) -> Option<&mut crate::func::RandState> {
        None
    }
    /// `max_session_mem_used`: the most bytes of rows one statement may hold at once (result,
    /// sort, grouping and join buffers); past it the statement fails with 1290. The default
    /// reads the session variable (none: no limit).
    fn statement_memory_limit(&mut self) -> u64 {
        byte_limit(self.system_var(VarScope::Session, "max_session_mem_used"))
    }
    /// `global_connection_memory_limit`: the most bytes all running statements may hold
    /// together (4083 past it). The default reads the global variable (none: no limit).
    fn global_memory_limit(&mut self) -> u64 {
        byte_limit(self.system_var(VarScope::Global, "global_connection_memory_limit"))
    }
}

/// A byte limit read from a variable: its value clamped to `u64`, none (unknown or not a
/// number) as no limit.
fn byte_limit(v: Result<Value, SqlError>) -> u64 {
    v.ok()
        .and_then(|v| v.to_i128())
        .map_or(u64::MAX, |v| v.clamp(0, i128::from(u64::MAX)) as u64)
}

/// `max_allowed_packet` when the context cannot tell (shoal's default, 64 MiB).
pub const DEFAULT_MAX_ALLOWED_PACKET: u64 = 64 << 20;

/// The smallest `max_allowed_packet` MySQL accepts: shorter results need no look at the variable.
const MIN_MAX_ALLOWED_PACKET: u128 = 1024;

/// Whether a string result of `len` bytes built by `func` would exceed `max_allowed_packet`; if
/// so, pushes warning 1301 as MySQL does (the caller then returns NULL).
pub(crate) fn over_packet(ctx: &mut dyn Context, func: &str, len: u128) -> bool {
    if len <= MIN_MAX_ALLOWED_PACKET {
        return false;
    }
    let max = ctx.max_allowed_packet();
    if len <= max as u128 {
        return false;
    }
    ctx.warn(
        shoal_errors::ER_WARN_ALLOWED_PACKET_OVERFLOWED.code,
        format!("Result of {func}() was larger than max_allowed_packet ({max}) - truncated"),
    );
    true
}

/// An integer argument as a count of characters or repetitions: negative values are 0, values
/// beyond `usize` saturate (never wrap).
fn count_arg(n: i128) -> usize {
    usize::try_from(n.max(0)).unwrap_or(usize::MAX)
}

fn out_of_range(kind: &'static str, op: BinOp, a: &Expr, b: &Expr) -> SqlError {
    SqlError::OutOfRange(kind, format!("({a} {} {b})", op.symbol()))
}

enum NumClass {
    Int,
    Decimal,
    Double,
}

fn class(v: &Value) -> NumClass {
    match v {
        Value::Int(_) | Value::UInt(_) => NumClass::Int,
        // A TIME is `hhmmss`, a DATE `yyyymmdd`, a DATETIME `yyyymmddhhmmss`: an integer, or
        // a decimal of their fsp digits.
        Value::Time(t) if t.fsp == 0 => NumClass::Int,
        Value::Date(_) | Value::DateTime(_, 0) => NumClass::Int,
        Value::Decimal(_) | Value::Time(_) | Value::DateTime(..) => NumClass::Decimal,
        _ => NumClass::Double,
    }
}

fn int_result(r: i128, unsigned: bool, op: BinOp, a: &Expr, b: &Expr) -> Result<Value, SqlError> {
    if unsigned {
        if r < 0 || r > u64::MAX as i128 {
            return Err(out_of_range("BIGINT UNSIGNED", op, a, b));
        }
        Ok(Value::UInt(r as u64))
    } else {
        if r < i64::MIN as i128 || r > i64::MAX as i128 {
            return Err(out_of_range("BIGINT", op, a, b));
        }
        Ok(Value::Int(r as i64))
    }
}

fn double_result(d: f64, op: BinOp, a: &Expr, b: &Expr) -> Result<Value, SqlError> {
    if d.is_finite() {
        Ok(Value::Double(d))
    } else {
        Err(out_of_range("DOUBLE", op, a, b))
    }
}

/// Arithmetic on two non-NULL values.
pub fn arith(
    op: BinOp,
    x: &Value,
    y: &Value,
    a: &Expr,
    b: &Expr,
    div_prec: u32,
) -> Result<Value, SqlError> {
    let unsigned = matches!(x, Value::UInt(_)) || matches!(y, Value::UInt(_));
    match (class(x), class(y)) {
        (NumClass::Double, _) | (_, NumClass::Double) => {
            let (p, q) = (x.to_f64().unwrap_or(0.0), y.to_f64().unwrap_or(0.0));
            match op {
                BinOp::Add => double_result(p + q, op, a, b),
                BinOp::Sub => double_result(p - q, op, a, b),
                BinOp::Mul => double_result(p * q, op, a, b),
                BinOp::Div => {
                    if q == 0.0 {
                        Ok(Value::Null)
                    } else {
                        double_result(p / q, op, a, b)
                    }
                }
                BinOp::Mod => {
                    if q == 0.0 {
                        Ok(Value::Null)
                    } else {
                        Ok(Value::Double(p % q))
                    }
                }
                BinOp::IntDiv => {
                    if q == 0.0 {
                        Ok(Value::Null)
                    } else {
                        let r = (p / q).trunc();
                        if r.abs() > 9.2e18 {
                            return Err(out_of_range("BIGINT", op, a, b));
                        }
                        Ok(Value::Int(r as i64))
                    }
                }
                _ => unreachable!("not arithmetic"),
            }
        }
        (NumClass::Decimal, _) | (_, NumClass::Decimal) => {
            let (p, q) = (x.to_decimal().unwrap(), y.to_decimal().unwrap());
            let ovf = || out_of_range("DECIMAL", op, a, b);
            match op {
                BinOp::Add => p.checked_add(q).map(Value::Decimal).ok_or_else(ovf),
                BinOp::Sub => p.checked_sub(q).map(Value::Decimal).ok_or_else(ovf),
                BinOp::Mul => p.checked_mul(q).map(Value::Decimal).ok_or_else(ovf),
                BinOp::Div => {
                    if q.is_zero() {
                        return Ok(Value::Null);
                    }
                    p.checked_div(q, p.scale + div_prec)
                        .map(Value::Decimal)
                        .ok_or_else(ovf)
                }
                BinOp::Mod => {
                    if q.is_zero() {
                        return Ok(Value::Null);
                    }
                    p.checked_rem(q).map(Value::Decimal).ok_or_else(ovf)
                }
                BinOp::IntDiv => {
                    if q.is_zero() {
                        return Ok(Value::Null);
                    }
                    let t = p.checked_int_div(q).ok_or_else(ovf)?;
                    int_result(t, unsigned, op, a, b)
                }
                _ => unreachable!("not arithmetic"),
            }
        }
        (NumClass::Int, NumClass::Int) => {
            let (p, q) = (x.to_i128().unwrap(), y.to_i128().unwrap());
            match op {
                BinOp::Add => int_result(p + q, unsigned, op, a, b),
                BinOp::Sub => int_result(p - q, unsigned, op, a, b),
                BinOp::Mul => match p.checked_mul(q) {
                    Some(r) => int_result(r, unsigned, op, a, b),
                    None => Err(out_of_range(
                        if unsigned {
                            "BIGINT UNSIGNED"
                        } else {
                            "BIGINT"
                        },
                        op,
                        a,
                        b,
                    )),
                },
                BinOp::Div => {
                    if q == 0 {
                        return Ok(Value::Null);
                    }
                    Decimal::from_i128(p)
                        .checked_div(Decimal::from_i128(q), div_prec)
                        .map(Value::Decimal)
                        .ok_or_else(|| out_of_range("DECIMAL", op, a, b))
                }
                BinOp::IntDiv => {
                    if q == 0 {
                        return Ok(Value::Null);
                    }
                    int_result(p / q, unsigned, op, a, b)
                }
                BinOp::Mod => {
                    if q == 0 {
                        return Ok(Value::Null);
                    }
                    // MySQL: the result has the sign of the dividend; unsigned if the dividend is.
                    let r = p % q;
                    if matches!(x, Value::UInt(_)) {
                        Ok(Value::UInt(r as u64))
                    } else {
                        Ok(Value::Int(r as i64))
                    }
                }
                _ => unreachable!("not arithmetic"),
            }
        }
    }
}

fn args_exact(name: &str, args: &[Expr], n: usize) -> Result<(), SqlError> {
    if args.len() != n {
        return Err(SqlError::ParamCount(name.to_ascii_lowercase()));
    }
    Ok(())
}

fn args_range(name: &str, args: &[Expr], lo: usize, hi: usize) -> Result<(), SqlError> {
    if args.len() < lo || args.len() > hi {
        return Err(SqlError::ParamCount(name.to_ascii_lowercase()));
    }
    Ok(())
}

/// One element of a LIKE pattern over units `T` (characters, or bytes of a binary string).
#[derive(Clone, Copy, PartialEq)]
enum LikeTok<T> {
    /// A literal unit (a character already lower-cased).
    Lit(T),
    /// `_`: any one character.
    One,
    /// `%`: any run of characters.
    Any,
}

/// How many matcher steps pass between two looks at the kill flag.
const LIKE_KILL_CHECK: u64 = 1 << 16;

/// `LIKE` matching: `%` any run, `_` one character, `escape` quotes the next character;
/// case-insensitive like utf8mb4_general_ci.
pub fn like(s: &str, pattern: &str, escape: char) -> bool {
    like_interruptible(s, pattern, escape, &mut || false).unwrap_or(false)
}

/// [`like`] that asks `killed` every [`LIKE_KILL_CHECK`] steps and gives up (None) when it
/// says yes.
///
/// The classic greedy wildcard matcher: on a mismatch it backtracks only to the last `%`, which
/// is enough because an earlier `%` could only absorb less. Worst case O(len(s) * len(pattern))
/// steps, never exponential (the former recursive matcher was exponential in the number of `%`).
pub fn like_interruptible(
    s: &str,
    pattern: &str,
    escape: char,
    killed: &mut dyn FnMut() -> bool,
) -> Option<bool> {
    let s: Vec<char> = s.chars().flat_map(char::to_lowercase).collect();
    let mut p: Vec<LikeTok<char>> = Vec::new();
    let mut it = pattern.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            c if c == escape && it.peek().is_some() => {
                let q = it.next().unwrap_or(c);
                p.extend(q.to_lowercase().map(LikeTok::Lit));
            }
            '%' => {
                if p.last() != Some(&LikeTok::Any) {
                    p.push(LikeTok::Any);
                }
            }
            '_' => p.push(LikeTok::One),
            c => p.extend(c.to_lowercase().map(LikeTok::Lit)),
        }
    }
    like_match(&s, &p, killed)
}

/// `LIKE` on a binary string (either side binary, as MySQL): byte by byte, case-sensitive;
/// `_` is one byte. `escape` counts when it is one byte (ASCII).
pub fn like_bytes_interruptible(
    s: &[u8],
    pattern: &[u8],
    escape: char,
    killed: &mut dyn FnMut() -> bool,
) -> Option<bool> {
    let esc = u8::try_from(escape).ok().filter(u8::is_ascii);
    let mut p: Vec<LikeTok<u8>> = Vec::new();
    let mut it = pattern.iter().copied().peekable();
    while let Some(c) = it.next() {
        match c {
            c if Some(c) == esc && it.peek().is_some() => {
                p.push(LikeTok::Lit(it.next().unwrap_or(c)))
            }
            b'%' => {
                if p.last() != Some(&LikeTok::Any) {
                    p.push(LikeTok::Any);
                }
            }
            b'_' => p.push(LikeTok::One),
            c => p.push(LikeTok::Lit(c)),
        }
    }
    like_match(s, &p, killed)
}

/// The matcher behind [`like_interruptible`] and [`like_bytes_interruptible`].
fn like_match<T: Copy + PartialEq>(
    s: &[T],
    p: &[LikeTok<T>],
    killed: &mut dyn FnMut() -> bool,
) -> Option<bool> {
    let (mut i, mut j) = (0usize, 0usize);
    // After the last `%` seen: (pattern position after it, subject position it absorbs up to).
    let mut star: Option<(usize, usize)> = None;
    let mut steps = 0u64;
    while i < s.len() {
        steps += 1;
        if steps.is_multiple_of(LIKE_KILL_CHECK) && killed() {
            return None;
        }
        match p.get(j) {
            Some(LikeTok::Any) => {
                star = Some((j + 1, i));
                j += 1;
                continue;
            }
            Some(LikeTok::One) => {
                i += 1;
                j += 1;
                continue;
            }
            Some(LikeTok::Lit(c)) if *c == s[i] => {
                i += 1;
                j += 1;
                continue;
            }
            _ => {}
        }
        match star {
            Some((pj, si)) => {
                star = Some((pj, si + 1));
                i = si + 1;
                j = pj;
            }
            None => return Some(false),
        }
    }
    while p.get(j) == Some(&LikeTok::Any) {
        j += 1;
    }
    Some(j == p.len())
}

fn text(v: &Value) -> Option<String> {
    v.to_text()
}

fn sleep(ctx: &mut dyn Context, secs: f64) -> Value {
    let _w = shoal_wait::wait(shoal_wait::WaitKind::Sleep);
    // Longer than a Duration or an Instant can hold (`SLEEP(1e308)` panicked: found by
    // fuzzing): sleeps until killed, as MySQL in effect does.
    let deadline = Duration::try_from_secs_f64(secs.max(0.0))
        .ok()
        .and_then(|d| Instant::now().checked_add(d));
    loop {
        if ctx.killed() {
            return Value::Int(1);
        }
        let now = Instant::now();
        let left = match deadline {
            Some(d) if now >= d => return Value::Int(0),
            Some(d) => d - now,
            None => Duration::MAX,
        };
        std::thread::sleep(left.min(Duration::from_millis(10)));
    }
}

/// How many evaluations `BENCHMARK()` runs between two looks at the kill flag.
const BENCHMARK_KILL_CHECK: u64 = 1024;

/// `BENCHMARK(count, expr)`: evaluates `expr` `count` times and returns 0 (MySQL semantics).
///
/// Deliberately CPU-bound and silent towards the thread pool: unlike `SLEEP()` it reports no
/// wait, which is what the pool's stall and oversubscribe tests need. A NULL count yields NULL,
/// a negative count is error 1210. The kill flag is checked every [`BENCHMARK_KILL_CHECK`]
/// evaluations so `KILL QUERY` interrupts it with 1317.
fn benchmark(args: &[Expr], ctx: &mut dyn Context) -> Result<Value, SqlError> {
    args_exact("BENCHMARK", args, 2)?;
    let n = eval(&args[0], ctx)?;
    if n.is_null() {
        return Ok(Value::Null);
    }
    let count = match n.to_i128() {
        Some(c) if c >= 0 => c.min(u64::MAX as i128) as u64,
        _ => return Err(SqlError::WrongArguments("BENCHMARK".into())),
    };
    for i in 0..count {
        if i % BENCHMARK_KILL_CHECK == 0 && ctx.killed() {
            return Err(SqlError::Interrupted);
        }
        eval(&args[1], ctx)?;
    }
    Ok(Value::Int(0))
}

/// Bytes as upper-case hex digits.
fn hex_bytes(b: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(b.len() * 2);
    for &x in b {
        out.push(DIGITS[(x >> 4) as usize] as char);
        out.push(DIGITS[(x & 15) as usize] as char);
    }
    out
}

fn hex_of(v: &Value) -> Value {
    match v {
        Value::Null => Value::Null,
        Value::Str(s) => Value::Str(hex_bytes(s.as_bytes())),
        Value::Bytes(b) => Value::Str(hex_bytes(b)),
        Value::Int(i) => Value::Str(format!("{:X}", *i as u64)),
        Value::UInt(u) => Value::Str(format!("{u:X}")),
        other => {
            let i = other.to_i128().unwrap_or(0);
            Value::Str(format!("{:X}", i as i64 as u64))
        }
    }
}

/// `SUBSTRING(s, pos[, len])` by characters. Positions and lengths of any size (i128) are safe:
/// a position outside the string or a length <= 0 gives '', a length past the end gives the
/// rest of the string (MySQL/MariaDB).
fn chars_sub(s: &str, pos: i128, len: Option<i128>) -> String {
    let n = s.chars().count() as i128;
    let start = if pos > 0 {
        pos - 1
    } else if pos < 0 {
        n.saturating_add(pos)
    } else {
        return String::new();
    };
    if start < 0 || start >= n {
        return String::new();
    }
    let take = match len {
        Some(l) if l <= 0 => return String::new(),
        Some(l) => l.min(n - start),
        None => n - start,
    };
    s.chars().skip(start as usize).take(take as usize).collect()
}

/// `LPAD`/`RPAD`. `len` is in characters; NULL for a negative length, an empty pad string that
/// would be needed, or a result over `max_allowed_packet` (warning 1301; like MariaDB, the
/// limit is checked against `len` times the 4 bytes a utf8mb4 character may take).
fn pad(ctx: &mut dyn Context, func: &str, s: &str, len: i128, padstr: &str, left: bool) -> Value {
    if len < 0 {
        return Value::Null;
    }
    // MariaDB clamps the count to INT_MAX32.
    let len = count_arg(len.min(i32::MAX as i128));
    let have = s.chars().count();
    if have >= len {
        return Value::Str(s.chars().take(len).collect());
    }
    if over_packet(ctx, func, len as u128 * 4) {
        return Value::Null;
    }
    if padstr.is_empty() {
        return Value::Null;
    }
    let fill: String = padstr.chars().cycle().take(len - have).collect();
    Value::Str(if left {
        format!("{fill}{s}")
    } else {
        format!("{s}{fill}")
    })
}

fn round_value(v: &Value, d: i128, truncate: bool) -> Value {
    match v {
        Value::Null => Value::Null,
        Value::Int(_) | Value::UInt(_) if d >= 0 => v.clone(),
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) => {
            let dec = v.to_decimal().unwrap();
            let scale = d.clamp(-30, 30);
            if scale >= 0 {
                let s = scale as u32;
                let r = if truncate {
                    if s >= dec.scale {
                        dec.rescale(s)
                    } else {
                        let div = 10i128.pow(dec.scale - s);
                        Some(Decimal::new(dec.mant / div, s))
                    }
                } else {
                    dec.rescale(s)
                };
                r.map(Value::Decimal).unwrap_or(Value::Null)
            } else {
                let p = 10i128.pow((-scale) as u32);
                let i = dec.rescale(0).map(|x| x.mant).unwrap_or(0);
                let base = if truncate { dec.trunc() } else { i };
                let r = if truncate {
                    base / p * p
                } else {
                    let q = dec
                        .checked_div(Decimal::from_i128(p), 0)
                        .map(|x| x.mant)
                        .unwrap_or(0);
                    q * p
                };
                match v {
                    Value::Decimal(_) => Value::Decimal(Decimal::from_i128(r)),
                    Value::UInt(_) => Value::UInt(r.max(0) as u64),
                    _ => Value::Int(r as i64),
                }
            }
        }
        other => {
            let f = other.to_f64().unwrap_or(0.0);
            let p = 10f64.powi(d.clamp(-308, 308) as i32);
            let r = if truncate {
                (f * p).trunc() / p
            } else {
                let x = f * p;
                // MySQL rounds doubles half away from zero when the value is exact.
                x.round() / p
            };
            Value::Double(r)
        }
    }
}

/// Evaluates a function call.
fn function(name: &str, args: &[Expr], ctx: &mut dyn Context) -> Result<Value, SqlError> {
    // Functions with lazy evaluation first.
    match name {
        "IF" => {
            args_exact(name, args, 3)?;
            let c = eval(&args[0], ctx)?;
            return if c.truth() == Some(true) {
                eval(&args[1], ctx)
            } else {
                eval(&args[2], ctx)
            };
        }
        "IFNULL" => {
            args_exact(name, args, 2)?;
            let a = eval(&args[0], ctx)?;
            return if a.is_null() {
                eval(&args[1], ctx)
            } else {
                Ok(a)
            };
        }
        "COALESCE" => {
            if args.is_empty() {
                return Err(SqlError::ParamCount("coalesce".into()));
            }
            for a in args {
                let v = eval(a, ctx)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            return Ok(Value::Null);
        }
        "BENCHMARK" => return benchmark(args, ctx),
        "COUNT" | "SUM" | "AVG" | "MIN" | "MAX" | "GROUP_CONCAT" | "BIT_AND" | "BIT_OR" | "STD"
        | "STDDEV" | "VARIANCE" => {
            return Err(SqlError::Unsupported(format!(
                "aggregate function {name}() without a table"
            )))
        }
        _ => {}
    }
    let vals: Vec<Value> = args
        .iter()
        .map(|a| eval(a, ctx))
        .collect::<Result<_, _>>()?;
    if vals.iter().any(Value::is_bytes) {
        if let Some(v) = crate::func::bytes::call(name, args, &vals, ctx)? {
            return Ok(v);
        }
    }
    let any_null = vals.iter().any(Value::is_null);
    let s = |i: usize| text(&vals[i]).unwrap_or_default();
    let int = |i: usize| vals[i].to_i128().unwrap_or(0);
    Ok(match name {
        "CONCAT" => {
            if args.is_empty() {
                return Err(SqlError::ParamCount("concat".into()));
            }
            if any_null {
                Value::Null
            } else {
                let parts: Vec<String> = vals.iter().filter_map(text).collect();
                let len: usize = parts.iter().map(String::len).sum();
                if over_packet(ctx, "concat", len as u128) {
                    Value::Null
                } else {
                    Value::Str(parts.concat())
                }
            }
        }
        "CONCAT_WS" => {
            if args.len() < 2 {
                return Err(SqlError::ParamCount("concat_ws".into()));
            }
            if vals[0].is_null() {
                Value::Null
            } else {
                let sep = s(0);
                let parts: Vec<String> = vals[1..].iter().filter_map(text).collect();
                let len = parts.iter().map(|p| p.len() as u128).sum::<u128>()
                    + sep.len() as u128 * parts.len().saturating_sub(1) as u128;
                if over_packet(ctx, "concat_ws", len) {
                    Value::Null
                } else {
                    Value::Str(parts.join(&sep))
                }
            }
        }
        "LENGTH" | "OCTET_LENGTH" => {
            args_exact(name, args, 1)?;
            if any_null {
                Value::Null
            } else {
                Value::Int(s(0).len() as i64)
            }
        }
        "CHAR_LENGTH" | "CHARACTER_LENGTH" => {
            args_exact(name, args, 1)?;
            if any_null {
                Value::Null
            } else {
                Value::Int(s(0).chars().count() as i64)
            }
        }
        "UPPER" | "UCASE" => {
            args_exact(name, args, 1)?;
            if any_null {
                Value::Null
            } else {
                Value::Str(s(0).to_uppercase())
            }
        }
        "LOWER" | "LCASE" => {
            args_exact(name, args, 1)?;
            if any_null {
                Value::Null
            } else {
                Value::Str(s(0).to_lowercase())
            }
        }
        "SUBSTRING" | "SUBSTR" | "MID" => {
            args_range(name, args, 2, 3)?;
            if any_null {
                Value::Null
            } else {
                Value::Str(chars_sub(
                    &s(0),
                    int(1),
                    if args.len() == 3 { Some(int(2)) } else { None },
                ))
            }
        }
        "LEFT" => {
            args_exact(name, args, 2)?;
            if any_null {
                Value::Null
            } else {
                Value::Str(s(0).chars().take(count_arg(int(1))).collect())
            }
        }
        "RIGHT" => {
            args_exact(name, args, 2)?;
            if any_null {
                Value::Null
            } else {
                let t = s(0);
                let skip = t.chars().count().saturating_sub(count_arg(int(1)));
                Value::Str(t.chars().skip(skip).collect())
            }
        }
        "TRIM" | "LTRIM" | "RTRIM" => {
            // TRIM([BOTH|LEADING|TRAILING] [remstr] FROM str) is translated into
            // TRIM(str, mode, remstr); LTRIM/RTRIM take one argument.
            args_range(name, args, 1, 3)?;
            if any_null {
                Value::Null
            } else {
                let mode = match name {
                    "LTRIM" => 1,
                    "RTRIM" => 2,
                    _ if args.len() >= 2 => int(1),
                    _ => 0,
                };
                let rem = if args.len() == 3 {
                    s(2)
                } else {
                    " ".to_string()
                };
                // Linear: move two byte offsets by whole `rem`s (so they stay on character
                // boundaries), copy once at the end.
                let t = s(0);
                let (mut a, mut z) = (0, t.len());
                if !rem.is_empty() {
                    if mode == 0 || mode == 1 {
                        while t[a..z].starts_with(rem.as_str()) {
                            a += rem.len();
                        }
                    }
                    if mode == 0 || mode == 2 {
                        while t[a..z].ends_with(rem.as_str()) {
                            z -= rem.len();
                        }
                    }
                }
                Value::Str(t[a..z].to_string())
            }
        }
        "REPLACE" => {
            args_exact(name, args, 3)?;
            if any_null {
                Value::Null
            } else if s(1).is_empty() {
                Value::Str(s(0))
            } else {
                let (t, from, to) = (s(0), s(1), s(2));
                let hits = t.matches(from.as_str()).count() as u128;
                let len = t.len() as u128 - hits * from.len() as u128 + hits * to.len() as u128;
                if over_packet(ctx, "replace", len) {
                    Value::Null
                } else {
                    Value::Str(t.replace(&from, &to))
                }
            }
        }
        "REPEAT" => {
            args_exact(name, args, 2)?;
            if any_null {
                Value::Null
            } else {
                // MariaDB clamps the count to INT_MAX32; a result over max_allowed_packet is NULL
                // with warning 1301.
                let n = count_arg(int(1).min(i32::MAX as i128));
                let t = s(0);
                if over_packet(ctx, "repeat", t.len() as u128 * n as u128) {
                    Value::Null
                } else {
                    Value::Str(t.repeat(n))
                }
            }
        }
        "LPAD" | "RPAD" => {
            args_exact(name, args, 3)?;
            if any_null {
                Value::Null
            } else {
                let func = name.to_ascii_lowercase();
                pad(ctx, &func, &s(0), int(1), &s(2), name == "LPAD")
            }
        }
        "HEX" => {
            args_exact(name, args, 1)?;
            hex_of(&vals[0])
        }
        "NOW" | "CURRENT_TIMESTAMP" | "LOCALTIME" | "LOCALTIMESTAMP" | "SYSDATE" => {
            args_range(name, args, 0, 1)?;
            let mut t = ctx.now();
            let fsp = if args.is_empty() { 0 } else { int(0) };
            if !(0..=6).contains(&fsp) {
                return Err(SqlError::coded(
                    shoal_errors::ER_TOO_BIG_PRECISION,
                    format!("Too-big precision {fsp} specified for 'now'. Maximum is 6."),
                ));
            }
            t.micro = crate::temporal::truncate_micro(t.micro, fsp as u8);
            Value::DateTime(t, fsp as u8)
        }
        "CURDATE" | "CURRENT_DATE" => {
            args_exact(name, args, 0)?;
            let mut t = ctx.now();
            t.hour = 0;
            t.minute = 0;
            t.second = 0;
            t.micro = 0;
            Value::Date(t)
        }
        "CURTIME" | "CURRENT_TIME" => {
            args_range(name, args, 0, 1)?;
            let fsp = if args.is_empty() { 0 } else { int(0) };
            if !(0..=6).contains(&fsp) {
                return Err(SqlError::coded(
                    shoal_errors::ER_TOO_BIG_PRECISION,
                    "Too big precision specified for 'curtime'. Maximum is 6".to_string(),
                ));
            }
            let t = crate::temporal::Time::of(&ctx.now());
            Value::Time(t.with_fsp(fsp as u8))
        }
        "UNIX_TIMESTAMP" => {
            args_range(name, args, 0, 1)?;
            if args.is_empty() {
                Value::Int(ctx.now().to_unix())
            } else {
                match &vals[0] {
                    Value::Null => Value::Null,
                    v => match crate::temporal::datetime_of(ctx, v) {
                        Some((d, _)) => {
                            let fsp = crate::func::time::value_precision(&args[0], v);
                            unix_timestamp(&d, fsp)
                        }
                        None => Value::Null,
                    },
                }
            }
        }
        "DATABASE" | "SCHEMA" => {
            args_exact(name, args, 0)?;
            ctx.database().map(Value::Str).unwrap_or(Value::Null)
        }
        "USER" | "SESSION_USER" | "SYSTEM_USER" => {
            args_exact(name, args, 0)?;
            Value::Str(ctx.user())
        }
        "CURRENT_USER" => {
            args_exact(name, args, 0)?;
            Value::Str(ctx.current_user())
        }
        "VERSION" => {
            args_exact(name, args, 0)?;
            Value::Str(ctx.version())
        }
        "CONNECTION_ID" => {
            args_exact(name, args, 0)?;
            Value::UInt(ctx.connection_id())
        }
        "FOUND_ROWS" => {
            args_exact(name, args, 0)?;
            Value::UInt(ctx.found_rows())
        }
        "LAST_INSERT_ID" => {
            args_range(name, args, 0, 1)?;
            if args.is_empty() {
                Value::UInt(ctx.last_insert_id())
            } else if vals[0].is_null() {
                ctx.set_last_insert_id(0);
                Value::Null
            } else {
                let v = int(0).clamp(0, u64::MAX as i128) as u64;
                ctx.set_last_insert_id(v);
                Value::UInt(v)
            }
        }
        "SLEEP" => {
            args_exact(name, args, 1)?;
            if any_null {
                return Err(SqlError::coded(
                    shoal_errors::ER_WRONG_ARGUMENTS,
                    "Incorrect arguments to sleep",
                ));
            }
            let secs = vals[0].to_f64().unwrap_or(0.0);
            if secs < 0.0 {
                return Err(SqlError::coded(
                    shoal_errors::ER_WRONG_ARGUMENTS,
                    "Incorrect arguments to sleep",
                ));
            }
            sleep(ctx, secs)
        }
        "NULLIF" => {
            args_exact(name, args, 2)?;
            if compare(&vals[0], &vals[1]) == Some(Ordering::Equal) {
                Value::Null
            } else {
                vals[0].clone()
            }
        }
        "ISNULL" => {
            args_exact(name, args, 1)?;
            Value::from_bool(vals[0].is_null())
        }
        "ABS" => {
            args_exact(name, args, 1)?;
            match &vals[0] {
                Value::Null => Value::Null,
                Value::Int(i) => match i.checked_abs() {
                    Some(x) => Value::Int(x),
                    None => {
                        return Err(SqlError::OutOfRange("BIGINT", format!("abs({})", args[0])))
                    }
                },
                Value::UInt(u) => Value::UInt(*u),
                Value::Decimal(d) => Value::Decimal(Decimal::new(d.mant.abs(), d.scale)),
                // A TIME's `hhmmss` number, as a DECIMAL of its fsp digits.
                t @ Value::Time(_) => {
                    let d = t.to_decimal().unwrap_or(Decimal::from_i128(0));
                    Value::Decimal(Decimal::new(d.mant.abs(), d.scale))
                }
                other => Value::Double(other.to_f64().unwrap_or(0.0).abs()),
            }
        }
        "CEIL" | "CEILING" | "FLOOR" => {
            args_exact(name, args, 1)?;
            let up = name != "FLOOR";
            match &vals[0] {
                Value::Null => Value::Null,
                Value::Time(t) => {
                    let m = t.micros();
                    let secs = if up {
                        m.div_euclid(1_000_000) + i64::from(m.rem_euclid(1_000_000) != 0)
                    } else {
                        m.div_euclid(1_000_000)
                    };
                    Value::Time(crate::temporal::Time::clipped(secs * 1_000_000, 0).0)
                }
                v @ (Value::Int(_) | Value::UInt(_)) => v.clone(),
                Value::Decimal(d) => {
                    let t = d.trunc();
                    let frac = d.mant != t * 10i128.pow(d.scale);
                    let r = if frac && up && d.mant > 0 {
                        t + 1
                    } else if frac && !up && d.mant < 0 {
                        t - 1
                    } else {
                        t
                    };
                    if r >= i64::MIN as i128 && r <= i64::MAX as i128 {
                        Value::Int(r as i64)
                    } else {
                        Value::Decimal(Decimal::from_i128(r))
                    }
                }
                other => {
                    let f = other.to_f64().unwrap_or(0.0);
                    Value::Double(if up { f.ceil() } else { f.floor() })
                }
            }
        }
        "ROUND" | "TRUNCATE" => {
            if name == "TRUNCATE" {
                args_exact(name, args, 2)?;
            } else {
                args_range(name, args, 1, 2)?;
            }
            if any_null {
                Value::Null
            } else {
                let d = if args.len() == 2 { int(1) } else { 0 };
                match &vals[0] {
                    // A TIME to `d` fractional digits (0..=6), still a TIME.
                    Value::Time(t) => {
                        let fsp = d.clamp(0, 6) as u32;
                        let unit = 10i64.pow(6 - fsp);
                        let m = t.micros();
                        let cut = m / unit * unit;
                        let r = if name == "ROUND" && (m - cut).abs() * 2 >= unit {
                            cut + unit * m.signum()
                        } else {
                            cut
                        };
                        Value::Time(crate::temporal::Time::clipped(r, fsp as u8).0)
                    }
                    v => round_value(v, d, name == "TRUNCATE"),
                }
            }
        }
        "MOD" => {
            args_exact(name, args, 2)?;
            if any_null {
                Value::Null
            } else {
                arith(
                    BinOp::Mod,
                    &vals[0],
                    &vals[1],
                    &args[0],
                    &args[1],
                    ctx.div_precision(),
                )?
            }
        }
        "GREATEST" | "LEAST" => {
            if args.len() < 2 {
                return Err(SqlError::ParamCount(name.to_ascii_lowercase()));
            }
            if any_null {
                Value::Null
            } else {
                let mut best = vals[0].clone();
                for v in &vals[1..] {
                    let o = compare(v, &best).unwrap_or(Ordering::Equal);
                    if (name == "GREATEST" && o == Ordering::Greater)
                        || (name == "LEAST" && o == Ordering::Less)
                    {
                        best = v.clone();
                    }
                }
                best
            }
        }
        "DATABASE_SIZE" => return Err(SqlError::UnknownFunction(name.into())),
        _ => match crate::func::call(name, args, &vals, ctx)? {
            Some(v) => v,
            // MySQL names the current database, if any: `FUNCTION test.f does not exist`,
            // `FUNCTION f does not exist` without one.
            None => {
                let f = name.to_ascii_lowercase();
                return Err(SqlError::UnknownFunction(match ctx.database() {
                    Some(db) => format!("{db}.{f}"),
                    None => f,
                }));
            }
        },
    })
}

/// Bytes that are not all UTF-8 as text, as MariaDB converts them to utf8mb4: each byte of an
/// invalid sequence becomes `?`, with warning 1300 naming the bytes from the first bad one.
fn text_of_bytes(ctx: &mut dyn Context, b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    let mut first_bad = None;
    let mut at = 0;
    for chunk in b.utf8_chunks() {
        out.push_str(chunk.valid());
        at += chunk.valid().len();
        if !chunk.invalid().is_empty() {
            first_bad.get_or_insert(at);
            out.extend(std::iter::repeat_n('?', chunk.invalid().len()));
            at += chunk.invalid().len();
        }
    }
    if let Some(i) = first_bad {
        let shown: String = b[i..]
            .iter()
            .take(32)
            .map(|x| format!("\\x{x:02X}"))
            .collect();
        let more = if b.len() - i > 32 { "..." } else { "" };
        ctx.warn(
            shoal_errors::ER_INVALID_CHARACTER_STRING.code,
            format!("Invalid utf8mb4 character string: '{shown}{more}'"),
        );
    }
    out
}

fn cast(ctx: &mut dyn Context, v: Value, t: CastType, e: &Expr) -> Result<Value, SqlError> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    Ok(match t {
        CastType::Signed => {
            let i = match &v {
                // A TIME's `hhmmss`, the fraction dropped.
                Value::Time(t) => i128::from(t.number().0),
                Value::Str(s) => str_to_i128(s),
                Value::Bytes(b) => str_to_i128(&String::from_utf8_lossy(b)),
                Value::Decimal(d) => d.round_int(),
                other => other.to_i128().unwrap_or(0),
            };
            Value::Int(i as i64)
        }
        CastType::Unsigned => {
            let i = match &v {
                Value::Time(t) => i128::from(t.number().0),
                Value::Str(s) => str_to_i128(s),
                Value::Bytes(b) => str_to_i128(&String::from_utf8_lossy(b)),
                Value::Decimal(d) => d.round_int(),
                other => other.to_i128().unwrap_or(0),
            };
            if i < 0 {
                // Negative values wrap to two's complement, as in MySQL.
                Value::UInt(i as i64 as u64)
            } else {
                Value::UInt(i.min(u64::MAX as i128) as u64)
            }
        }
        CastType::Char => match v {
            v @ Value::Str(_) => v,
            Value::Bytes(b) => match String::from_utf8(b) {
                Ok(s) => Value::Str(s),
                Err(e) => Value::Str(text_of_bytes(ctx, &e.into_bytes())),
            },
            v => Value::Str(v.to_text().unwrap_or_default()),
        },
        CastType::FloatText(decimals) => match v {
            Value::Double(d) => Value::Str(crate::value::format_float(d, decimals)),
            v => Value::Str(v.to_text().unwrap_or_default()),
        },
        CastType::Binary => match v {
            v @ Value::Bytes(_) => v,
            v => Value::Bytes(v.to_bytes().unwrap_or_default().into_owned()),
        },
        CastType::BinaryN(n) => {
            // Longer than max_allowed_packet: cut to it, with warning 1301, as MariaDB does.
            let n = if over_packet(ctx, "cast_as_binary", u128::from(n)) {
                u32::try_from(ctx.max_allowed_packet()).unwrap_or(u32::MAX)
            } else {
                n
            };
            let mut b = v.to_bytes().unwrap_or_default().into_owned();
            if b.len() > n as usize {
                ctx.warn(
                    shoal_errors::ER_TRUNCATED_WRONG_VALUE.code,
                    format!(
                        "Truncated incorrect BINARY({n}) value: '{}'",
                        v.to_text().unwrap_or_default()
                    ),
                );
                b.truncate(n as usize);
            }
            b.resize(n as usize, 0);
            Value::Bytes(b)
        }
        CastType::Double => Value::Double(v.to_f64().unwrap_or(0.0)),
        CastType::Decimal(scale) => {
            let text = match &v {
                Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            };
            let d = match (&v, &text) {
                (Value::Str(s), _) | (_, Some(s)) => {
                    Decimal::parse(s.trim()).unwrap_or_else(|| {
                        Decimal::parse(&format_double(str_to_f64(s).0))
                            .unwrap_or(Decimal::from_i128(0))
                    })
                }
                (Value::Double(f), _) => {
                    Decimal::parse(&format!("{f:.30}")).unwrap_or(Decimal::from_i128(0))
                }
                (other, _) => other.to_decimal().unwrap_or(Decimal::from_i128(0)),
            };
            Value::Decimal(
                d.rescale(scale as u32)
                    .ok_or_else(|| SqlError::OutOfRange("DECIMAL", e.to_string()))?,
            )
        }
        CastType::Time(fsp) => match crate::temporal::time_of(ctx, &v) {
            Some(t) => Value::Time(t.with_fsp(fsp)),
            None => Value::Null,
        },
        CastType::Date | CastType::DateTime(_) => {
            let d = crate::temporal::datetime_of(ctx, &v).map(|(d, _)| d);
            match d {
                None => Value::Null,
                Some(mut d) if t == CastType::Date => {
                    d.hour = 0;
                    d.minute = 0;
                    d.second = 0;
                    d.micro = 0;
                    Value::Date(d)
                }
                Some(d) => {
                    let fsp = match t {
                        CastType::DateTime(fsp) => fsp,
                        _ => 0,
                    };
                    Value::DateTime(d.truncated(fsp), fsp)
                }
            }
        }
    })
}

/// UNIX_TIMESTAMP of `d` with `fsp` fractional digits: an integer, or a DECIMAL of them.
fn unix_timestamp(d: &DateTime, fsp: u8) -> Value {
    let secs = d.to_unix();
    if fsp == 0 {
        return Value::Int(secs);
    }
    let scale = u32::from(fsp.min(6));
    let micros = i128::from(secs) * 1_000_000 + i128::from(d.micro);
    Value::Decimal(Decimal::new(micros / 10i128.pow(6 - scale), scale))
}

/// Evaluates an expression (on a new stack segment when the current one runs low: see
/// [`crate::depth`]).
pub fn eval(e: &Expr, ctx: &mut dyn Context) -> Result<Value, SqlError> {
    crate::depth::with_stack(|| eval_level(e, ctx))
}

fn eval_level(e: &Expr, ctx: &mut dyn Context) -> Result<Value, SqlError> {
    match e {
        Expr::Literal(v) => Ok(v.clone()),
        Expr::Column(c) | Expr::QColumn(_, c) => ctx.column(c),
        Expr::Slot(i) => ctx.slot(*i),
        Expr::Subquery(q) => ctx.subquery(q),
        Expr::Aggregate(_) => Err(SqlError::coded(
            shoal_errors::ER_INVALID_GROUP_FUNC_USE,
            "Invalid use of group function",
        )),
        Expr::Param(i) => ctx.param(*i),
        Expr::SysVar(scope, name) => ctx.system_var(*scope, name),
        Expr::UserVar(n) => Ok(ctx.user_var(n)),
        Expr::AssignUserVar(n, x) => {
            let v = eval(x, ctx)?;
            ctx.set_user_var(n, v.clone());
            Ok(v)
        }
        Expr::Unary(op, x) => {
            let v = eval(x, ctx)?;
            if v.is_null() {
                return Ok(Value::Null);
            }
            match op {
                UnOp::Not => Ok(Value::from_opt_bool(v.truth().map(|b| !b))),
                UnOp::BitNot => Ok(Value::UInt(!(v.to_i128().unwrap_or(0) as i64 as u64))),
                UnOp::Neg => match v {
                    Value::Int(i) => i
                        .checked_neg()
                        .map(Value::Int)
                        .ok_or_else(|| SqlError::OutOfRange("BIGINT", format!("-({x})"))),
                    Value::UInt(u) => {
                        if u <= i64::MAX as u64 + 1 {
                            Ok(Value::Int((-(u as i128)) as i64))
                        } else {
                            Ok(Value::Decimal(Decimal::from_i128(-(u as i128))))
                        }
                    }
                    Value::Decimal(d) => Ok(Value::Decimal(d.negated())),
                    // `-TIME` is `-hhmmss`, `-DATETIME` `-yyyymmddhhmmss`, exact.
                    t @ (Value::Time(_) | Value::Date(_) | Value::DateTime(..))
                        if matches!(class(&t), NumClass::Int) =>
                    {
                        Ok(Value::Int(-(t.to_i128().unwrap_or(0) as i64)))
                    }
                    t @ (Value::Time(_) | Value::DateTime(..)) => Ok(Value::Decimal(
                        t.to_decimal().unwrap_or(Decimal::from_i128(0)).negated(),
                    )),
                    other => Ok(Value::Double(-other.to_f64().unwrap_or(0.0))),
                },
            }
        }
        Expr::Binary(op, a, b) => {
            match op {
                BinOp::And => {
                    let x = eval(a, ctx)?.truth();
                    if x == Some(false) {
                        return Ok(Value::Int(0));
                    }
                    let y = eval(b, ctx)?.truth();
                    return Ok(match (x, y) {
                        (_, Some(false)) => Value::Int(0),
                        (Some(true), Some(true)) => Value::Int(1),
                        _ => Value::Null,
                    });
                }
                BinOp::Or => {
                    let x = eval(a, ctx)?.truth();
                    if x == Some(true) {
                        return Ok(Value::Int(1));
                    }
                    let y = eval(b, ctx)?.truth();
                    return Ok(match (x, y) {
                        (_, Some(true)) => Value::Int(1),
                        (Some(false), Some(false)) => Value::Int(0),
                        _ => Value::Null,
                    });
                }
                _ => {}
            }
            let x = eval(a, ctx)?;
            let y = eval(b, ctx)?;
            if *op == BinOp::NullSafeEq {
                return Ok(Value::from_bool(match (x.is_null(), y.is_null()) {
                    (true, true) => true,
                    (false, false) => compare(&x, &y) == Some(Ordering::Equal),
                    _ => false,
                }));
            }
            if x.is_null() || y.is_null() {
                return Ok(Value::Null);
            }
            match op {
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::IntDiv | BinOp::Mod => {
                    arith(*op, &x, &y, a, b, ctx.div_precision())
                }
                BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq => {
                    let o = compare(&x, &y).unwrap();
                    Ok(Value::from_bool(match op {
                        BinOp::Eq => o == Ordering::Equal,
                        BinOp::NotEq => o != Ordering::Equal,
                        BinOp::Lt => o == Ordering::Less,
                        BinOp::LtEq => o != Ordering::Greater,
                        BinOp::Gt => o == Ordering::Greater,
                        _ => o != Ordering::Less,
                    }))
                }
                BinOp::Xor => Ok(Value::from_bool(x.truth().unwrap() != y.truth().unwrap())),
                BinOp::BitAnd
                | BinOp::BitOr
                | BinOp::BitXor
                | BinOp::ShiftLeft
                | BinOp::ShiftRight => {
                    let p = x.to_i128().unwrap_or(0) as i64 as u64;
                    let q = y.to_i128().unwrap_or(0) as i64 as u64;
                    Ok(Value::UInt(match op {
                        BinOp::BitAnd => p & q,
                        BinOp::BitOr => p | q,
                        BinOp::BitXor => p ^ q,
                        BinOp::ShiftLeft => {
                            if q >= 64 {
                                0
                            } else {
                                p << q
                            }
                        }
                        _ => {
                            if q >= 64 {
                                0
                            } else {
                                p >> q
                            }
                        }
                    }))
                }
                _ => unreachable!("handled above"),
            }
        }
        Expr::IsNull(x, neg) => {
            let v = eval(x, ctx)?;
            Ok(Value::from_bool(v.is_null() != *neg))
        }
        Expr::IsBool(x, want, neg) => {
            let v = eval(x, ctx)?.truth();
            Ok(Value::from_bool((v == Some(*want)) != *neg))
        }
        Expr::InList(x, list, neg) => {
            let v = eval(x, ctx)?;
            if v.is_null() {
                return Ok(Value::Null);
            }
            let mut saw_null = false;
            for item in list {
                let w = eval(item, ctx)?;
                match compare(&v, &w) {
                    Some(Ordering::Equal) => return Ok(Value::from_bool(!*neg)),
                    None => saw_null = true,
                    _ => {}
                }
            }
            Ok(if saw_null {
                Value::Null
            } else {
                Value::from_bool(*neg)
            })
        }
        Expr::Between(x, lo, hi, neg) => {
            let (mut v, mut l, mut h) = (eval(x, ctx)?, eval(lo, ctx)?, eval(hi, ctx)?);
            // MySQL compares all three operands under one type (`agg_cmp_type`): strings among
            // numbers make it a comparison of doubles, the string pairs included, so
            // `'1' BETWEEN 1.00 AND 'abc'` is `1 <= 0`, false (not `'1' <= 'abc'` as strings).
            // With a date or datetime among them it is a temporal comparison, which `compare`
            // makes pair by pair.
            let ops = [&v, &l, &h];
            let num = |v: &&Value| {
                matches!(
                    v,
                    Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_)
                )
            };
            if ops.iter().any(num)
                && ops
                    .iter()
                    .any(|v| matches!(v, Value::Str(_) | Value::Bytes(_)))
                && !ops
                    .iter()
                    .any(|v| matches!(v, Value::Date(_) | Value::DateTime(..)))
            {
                for s in [&mut v, &mut l, &mut h] {
                    if matches!(s, Value::Str(_) | Value::Bytes(_)) {
                        *s = Value::Double(s.to_f64().unwrap_or(0.0));
                    }
                }
            }
            let ge = compare(&v, &l).map(|o| o != Ordering::Less);
            let le = compare(&v, &h).map(|o| o != Ordering::Greater);
            let r = match (ge, le) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            };
            Ok(Value::from_opt_bool(r.map(|b| b != *neg)))
        }
        Expr::Like(x, p, esc, neg) => {
            let v = eval(x, ctx)?;
            let pv = eval(p, ctx)?;
            if (v.is_bytes() || pv.is_bytes()) && !v.is_null() && !pv.is_null() {
                let (s, pat) = (
                    v.to_bytes().unwrap_or_default(),
                    pv.to_bytes().unwrap_or_default(),
                );
                let m =
                    like_bytes_interruptible(&s, &pat, esc.unwrap_or('\\'), &mut || ctx.killed())
                        .ok_or(SqlError::Interrupted)?;
                return Ok(Value::from_bool(m != *neg));
            }
            match (v.to_text(), pv.to_text()) {
                (Some(s), Some(pat)) => {
                    let m = like_interruptible(&s, &pat, esc.unwrap_or('\\'), &mut || ctx.killed())
                        .ok_or(SqlError::Interrupted)?;
                    Ok(Value::from_bool(m != *neg))
                }
                _ => Ok(Value::Null),
            }
        }
        Expr::Case(operand, whens, else_) => {
            let op = match operand {
                Some(o) => Some(eval(o, ctx)?),
                None => None,
            };
            for (w, t) in whens {
                let wv = eval(w, ctx)?;
                let hit = match &op {
                    Some(o) => compare(o, &wv) == Some(Ordering::Equal),
                    None => wv.truth() == Some(true),
                };
                if hit {
                    return eval(t, ctx);
                }
            }
            match else_ {
                Some(e) => eval(e, ctx),
                None => Ok(Value::Null),
            }
        }
        Expr::Function(name, args) => function(name, args, ctx),
        Expr::Cast(x, t) => {
            let v = eval(x, ctx)?;
            cast(ctx, v, *t, e)
        }
    }
}

/// The type of a value that is one of `results` (IF, IFNULL, COALESCE, CASE): their types
/// aggregated ([`crate::value::aggregate_type`]).
pub fn result_type<'e>(results: impl Iterator<Item = &'e Expr>) -> SqlType {
    results
        .map(static_type)
        .fold(SqlType::Null, crate::value::aggregate_type)
}

/// The type of a result that is one of several values passed through unchanged (CASE, IF,
/// IFNULL, COALESCE, GREATEST, LEAST, the branches of a UNION): MySQL's aggregation of result
/// types, simplified. NULL does not count; one type stays itself; integers of both signs need a
/// DECIMAL, integers with a DECIMAL are DECIMAL, any number with a DOUBLE is DOUBLE; DATE with
/// DATETIME is DATETIME; any other mix (a string, a date with a number) is VARCHAR. The column
/// type must be able to carry every branch's value: the binary protocol encodes values by their
/// column's type, and a BIGINT column cannot carry a string (the client got "internal error"
/// instead of the row).
pub fn merge_types(a: SqlType, b: SqlType) -> SqlType {
    use SqlType::*;
    match (a, b) {
        (Null, t) | (t, Null) => t,
        (a, b) if a == b => a,
        (Int, UInt) | (UInt, Int) => Decimal(0),
        (Decimal(x), Decimal(y)) => Decimal(x.max(y)),
        (Decimal(x), Int | UInt) | (Int | UInt, Decimal(x)) => Decimal(x),
        (Double, Int | UInt | Decimal(_)) | (Int | UInt | Decimal(_), Double) => Double,
        (Time(x), Time(y)) => Time(x.max(y)),
        (Date | DateTime(_) | Time(_), Date | DateTime(_) | Time(_)) => {
            DateTime(crate::value::temporal_fsp(a).max(crate::value::temporal_fsp(b)))
        }
        (Bytes, _) | (_, Bytes) => Bytes,
        _ => Str,
    }
}

/// The type a value of type `t` computes as in arithmetic: a TIME is its `hhmmss` number, an
/// integer or a DECIMAL of its fsp digits ([`Value::to_decimal`]).
fn numeric_view(t: SqlType) -> SqlType {
    match t {
        SqlType::Time(0) | SqlType::DateTime(0) | SqlType::Date => SqlType::Int,
        SqlType::Time(n) | SqlType::DateTime(n) => SqlType::Decimal(n),
        t => t,
    }
}

/// Best-effort static type of an expression (for column metadata at PREPARE time and for
/// all-NULL result columns).
pub fn static_type(e: &Expr) -> SqlType {
    crate::depth::with_stack(|| static_type_level(e))
}

fn static_type_level(e: &Expr) -> SqlType {
    match e {
        Expr::Literal(v) => v.sql_type(),
        Expr::Binary(op, a, b) => match op {
            // `arith` computes in DOUBLE unless both operands are exact numbers (strings and
            // dates included).
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Mod => {
                match (numeric_view(static_type(a)), numeric_view(static_type(b))) {
                    (SqlType::Double | SqlType::Str | SqlType::Bytes, _)
                    | (_, SqlType::Double | SqlType::Str | SqlType::Bytes) => SqlType::Double,
                    // A product's scale is the sum of its factors' (as its value's is).
                    (SqlType::Decimal(x), SqlType::Decimal(y)) if *op == BinOp::Mul => {
                        SqlType::Decimal(x.saturating_add(y).min(30))
                    }
                    (SqlType::Decimal(x), SqlType::Decimal(y)) => SqlType::Decimal(x.max(y)),
                    (SqlType::Decimal(x), _) | (_, SqlType::Decimal(x)) => SqlType::Decimal(x),
                    // An integer remainder has the dividend's sign and signedness.
                    (SqlType::Int, _) if *op == BinOp::Mod => SqlType::Int,
                    (SqlType::UInt, _) | (_, SqlType::UInt) => SqlType::UInt,
                    _ => SqlType::Int,
                }
            }
            BinOp::Div => match (numeric_view(static_type(a)), numeric_view(static_type(b))) {
                (SqlType::Double | SqlType::Str | SqlType::Bytes, _)
                | (_, SqlType::Double | SqlType::Str | SqlType::Bytes) => SqlType::Double,
                (SqlType::Decimal(x), _) => SqlType::Decimal(x + 4),
                _ => SqlType::Decimal(4),
            },
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::ShiftLeft | BinOp::ShiftRight => {
                SqlType::UInt
            }
            // An integer, unsigned if either operand is at run time: a BIGINT column could not
            // carry `@v DIV 1` of an unsigned user variable (found by fuzzing). Operands of no
            // known integer type (strings, user variables, parameters, decimals) may be either:
            // both signs fit a DECIMAL.
            BinOp::IntDiv => match (static_type(a), static_type(b)) {
                (SqlType::Int | SqlType::Null, SqlType::Int | SqlType::Null) => SqlType::Int,
                (
                    SqlType::Int | SqlType::UInt | SqlType::Null,
                    SqlType::Int | SqlType::UInt | SqlType::Null,
                ) => SqlType::UInt,
                _ => SqlType::Decimal(0),
            },
            _ => SqlType::Int,
        },
        // -u of an unsigned value past 2^63 is a DECIMAL; -'x', -date are DOUBLE (as `eval`).
        Expr::Unary(UnOp::Neg, x) => match numeric_view(static_type(x)) {
            SqlType::UInt => SqlType::Decimal(0),
            t @ (SqlType::Null | SqlType::Int | SqlType::Decimal(_) | SqlType::Double) => t,
            _ => SqlType::Double,
        },
        Expr::Unary(UnOp::BitNot, _) => SqlType::UInt,
        Expr::Unary(UnOp::Not, _)
        | Expr::IsNull(..)
        | Expr::IsBool(..)
        | Expr::InList(..)
        | Expr::Between(..)
        | Expr::Like(..) => SqlType::Int,
        Expr::Cast(_, t) => match t {
            CastType::Signed => SqlType::Int,
            CastType::Unsigned => SqlType::UInt,
            CastType::Char | CastType::FloatText(_) => SqlType::Str,
            CastType::Binary | CastType::BinaryN(_) => SqlType::Bytes,
            CastType::Decimal(s) => SqlType::Decimal(*s),
            CastType::Double => SqlType::Double,
            CastType::Date => SqlType::Date,
            CastType::DateTime(n) => SqlType::DateTime(*n),
            CastType::Time(n) => SqlType::Time(*n),
        },
        Expr::Function(name, args) => match name.as_str() {
            "NOW" | "CURRENT_TIMESTAMP" | "LOCALTIME" | "LOCALTIMESTAMP" | "SYSDATE" => {
                SqlType::DateTime(match args.first() {
                    Some(Expr::Literal(v)) => v.to_i128().unwrap_or(0).clamp(0, 6) as u8,
                    _ => 0,
                })
            }
            "UNIX_TIMESTAMP" => match args.first().map_or(0, crate::func::time::time_precision) {
                0 => SqlType::Int,
                n => SqlType::Decimal(n),
            },
            "CURDATE" | "CURRENT_DATE" => SqlType::Date,
            "LENGTH" | "OCTET_LENGTH" | "CHAR_LENGTH" | "CHARACTER_LENGTH" | "SLEEP" | "ISNULL"
            | "BENCHMARK" => SqlType::Int,
            "CONNECTION_ID" | "LAST_INSERT_ID" | "FOUND_ROWS" => SqlType::UInt,
            // As the values are: of a string a DOUBLE; CEIL/FLOOR of a DECIMAL an integer;
            // ROUND/TRUNCATE of a DECIMAL to n places DECIMAL(.., n).
            "ABS" | "CEIL" | "CEILING" | "FLOOR" | "ROUND" | "TRUNCATE" => {
                match (
                    name.as_str(),
                    args.first().map(static_type).unwrap_or(SqlType::Int),
                    args.get(1),
                ) {
                    ("ABS", SqlType::Time(n), _) => SqlType::Decimal(n),
                    ("CEIL" | "CEILING" | "FLOOR", SqlType::Time(_), _) => SqlType::Time(0),
                    ("ROUND" | "TRUNCATE", SqlType::Time(_), None) => SqlType::Time(0),
                    ("ROUND" | "TRUNCATE", SqlType::Time(_), Some(Expr::Literal(v))) => {
                        SqlType::Time(v.to_i128().unwrap_or(0).clamp(0, 6) as u8)
                    }
                    (
                        _,
                        SqlType::Str | SqlType::Bytes | SqlType::Date | SqlType::DateTime(_),
                        _,
                    ) => SqlType::Double,
                    ("CEIL" | "CEILING" | "FLOOR", SqlType::Decimal(_), _) => SqlType::Int,
                    ("ROUND", SqlType::Decimal(_), None) => SqlType::Decimal(0),
                    ("ROUND" | "TRUNCATE", SqlType::Decimal(_), Some(Expr::Literal(v))) => {
                        SqlType::Decimal(v.to_i128().unwrap_or(0).clamp(0, 30) as u8)
                    }
                    (_, t, _) => t,
                }
            }
            "MOD" if args.len() == 2 => static_type(&Expr::Binary(
                BinOp::Mod,
                Box::new(args[0].clone()),
                Box::new(args[1].clone()),
            )),
            // Typed by all of their possible results, as MySQL does (`IFNULL(int, 1.75)` is
            // DECIMAL(.., 2); `IF(c, 'x', date)` a string).
            "MOD" => SqlType::Int,
            // These return one of their arguments' values unchanged: typed by all of their
            // possible results, as MySQL does (`IFNULL(int, 1.75)` is DECIMAL(.., 2);
            // `IF(c, 'x', date)` a string), so the column's type holds every one of them.
            "IF" => result_type(args.iter().skip(1)),
            "IFNULL" | "COALESCE" | "GREATEST" | "LEAST" => result_type(args.iter()),
            "NULLIF" => args.first().map(static_type).unwrap_or(SqlType::Str),
            // Binary when a string argument is (see `func::bytes`).
            "CONCAT" | "CONCAT_WS" | "REPLACE" | "LPAD" | "RPAD" | "INSERT" | "TRIM" | "LTRIM"
            | "RTRIM" | "SUBSTRING_INDEX"
                if args.iter().any(|a| static_type(a) == SqlType::Bytes) =>
            {
                SqlType::Bytes
            }
            "SUBSTRING" | "SUBSTR" | "MID" | "LEFT" | "RIGHT" | "REVERSE" | "UPPER" | "UCASE"
            | "LOWER" | "LCASE" | "REPEAT" | "QUOTE"
                if args.first().map(static_type) == Some(SqlType::Bytes) =>
            {
                SqlType::Bytes
            }
            "ELT"
                if args
                    .iter()
                    .skip(1)
                    .any(|a| static_type(a) == SqlType::Bytes) =>
            {
                SqlType::Bytes
            }
            _ => crate::func::static_type(name, args).unwrap_or(SqlType::Str),
        },
        Expr::Case(_, whens, el) => result_type(whens.iter().map(|(_, t)| t).chain(el.as_deref())),
        Expr::AssignUserVar(_, x) => static_type(x),
        Expr::Aggregate(a) => {
            let arg = a.arg.as_ref().map(static_type).unwrap_or(SqlType::Int);
            match a.func {
                AggFunc::Count => SqlType::Int,
                AggFunc::Min | AggFunc::Max => arg,
                // SUM and AVG add a TIME's `hhmmss` number.
                AggFunc::Sum => match numeric_view(arg) {
                    SqlType::Int | SqlType::UInt => SqlType::Decimal(0),
                    SqlType::Decimal(s) => SqlType::Decimal(s),
                    _ => SqlType::Double,
                },
                AggFunc::Avg => match numeric_view(arg) {
                    SqlType::Int | SqlType::UInt => SqlType::Decimal(4),
                    SqlType::Decimal(s) => SqlType::Decimal(s + 4),
                    _ => SqlType::Double,
                },
                AggFunc::GroupConcat => SqlType::Str,
            }
        }
        _ => SqlType::Str,
    }
}
