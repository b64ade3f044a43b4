//! SQL values with MySQL semantics: NULL, signed/unsigned integers, exact DECIMAL, DOUBLE,
//! strings and temporal values, plus the coercions and comparisons MySQL applies to them.
//!
//! Strings come in two kinds, as in MySQL: [`Value::Str`] is utf8mb4 text (CHAR, VARCHAR, TEXT
//! columns, quoted literals) and [`Value::Bytes`] a binary string (BINARY, VARBINARY, BLOB
//! columns, `X'..'`/`0x..` literals, `_binary '..'`, `CAST(.. AS BINARY)`, UNHEX, and prepared
//! parameters whose bytes are not UTF-8). Bytes are never passed through a UTF-8 conversion on
//! their way between storage, the executor and the wire, so any byte sequence round-trips. A
//! comparison with a binary string on either side is binary (memcmp, trailing spaces
//! significant: the binary collation has no padding), as MySQL compares with the `binary`
//! collation when one operand has it; in numeric context bytes are read like text (their numeric
//! prefix). [`Value::to_text`] of bytes is lossy and only for display; functions that must keep
//! every byte use [`Value::to_bytes`].
//!
//! Coercion rules (a subset of MySQL's, enough to never give a *different* answer than MySQL for
//! what we accept): arithmetic on two integers stays integer (with overflow checks), any DECIMAL
//! operand makes it DECIMAL, any DOUBLE or string operand makes it DOUBLE (strings are parsed by
//! their longest numeric prefix, as MySQL does, `'12abc' + 1 = 13`). Comparisons: two strings
//! compare case-insensitively with trailing spaces ignored (utf8mb4_general_ci-like: we fold with
//! Unicode uppercase per char); a string against a number compares as DOUBLE; dates and
//! datetimes compare as datetimes (a string read as one, [`temporal_operand`]). A TIME
//! ([`Value::Time`]) compares by its signed microseconds: beside anything but a date the other
//! side is read as a time ([`crate::temporal::time_operand`]), beside a date it is taken on
//! today's date ([`time_on_today`]); in numeric context it is its `[-]hhmmss` number.

use std::cmp::Ordering;
use std::fmt;

use crate::decimal::Decimal;

/// Static type of a value or expression; decides the result column type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlType {
    /// Only NULL.
    Null,
    /// BIGINT.
    Int,
    /// BIGINT UNSIGNED.
    UInt,
    /// DECIMAL with this many fractional digits.
    Decimal(u8),
    /// DOUBLE.
    Double,
    /// VARCHAR.
    Str,
    /// VARBINARY (a binary string).
    Bytes,
    /// DATE.
    Date,
    /// DATETIME (or TIMESTAMP) with this many fractional digits.
    DateTime(u8),
    /// TIME with this many fractional digits.
    Time(u8),
}

/// A calendar date and time of day (no time zone; microseconds kept for NOW(6)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DateTime {
    /// Year.
    pub year: u16,
    /// Month 1-12.
    pub month: u8,
    /// Day 1-31.
    pub day: u8,
    /// Hour.
    pub hour: u8,
    /// Minute.
    pub minute: u8,
    /// Second.
    pub second: u8,
    /// Microsecond.
    pub micro: u32,
}

impl DateTime {
    /// The zero date, 0000-00-00 00:00:00.
    pub const ZERO: DateTime = DateTime {
        year: 0,
        month: 0,
        day: 0,
        hour: 0,
        minute: 0,
        second: 0,
        micro: 0,
    };

    /// From seconds (and microseconds) since the Unix epoch, in UTC.
    pub fn from_unix(secs: i64, micro: u32) -> DateTime {
        let days = secs.div_euclid(86400);
        let rem = secs.rem_euclid(86400);
        // Civil-from-days (Howard Hinnant's algorithm).
        let z = days + 719468;
        let era = z.div_euclid(146097);
        let doe = z - era * 146097;
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        let y = yoe + era * 400;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = if m <= 2 { y + 1 } else { y };
        DateTime {
            year: y as u16,
            month: m as u8,
            day: d as u8,
            hour: (rem / 3600) as u8,
            minute: (rem / 60 % 60) as u8,
            second: (rem % 60) as u8,
            micro,
        }
    }

    /// Seconds since the Unix epoch (UTC).
    pub fn to_unix(&self) -> i64 {
        let (y, m, d) = (self.year as i64, self.month as i64, self.day as i64);
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = if m > 2 { m - 3 } else { m + 9 };
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146097 + doe - 719468;
        days * 86400 + self.hour as i64 * 3600 + self.minute as i64 * 60 + self.second as i64
    }

    /// As a number, `yyyymmddhhmmss`, as a DATETIME reads in numeric context (the fraction
    /// is `micro`).
    pub fn number(&self) -> i64 {
        let date =
            i64::from(self.year) * 10_000 + i64::from(self.month) * 100 + i64::from(self.day);
        let time =
            i64::from(self.hour) * 10_000 + i64::from(self.minute) * 100 + i64::from(self.second);
        date * 1_000_000 + time
    }

    /// `yyyy-mm-dd hh:mm:ss` and exactly `fsp` fractional digits (truncated), as a
    /// DATETIME(fsp) shows.
    pub fn text_fsp(&self, fsp: u8) -> String {
        let mut s = format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        );
        if fsp > 0 {
            s.push('.');
            s.push_str(&format!("{:06}", self.micro)[..usize::from(fsp.min(6))]);
        }
        s
    }

    /// The same datetime with its fraction truncated to `fsp` digits.
    pub fn truncated(self, fsp: u8) -> DateTime {
        DateTime {
            micro: crate::temporal::truncate_micro(self.micro, fsp),
            ..self
        }
    }
}

/// The fractional digits a datetime shows when nothing fixes them (a value read from a text or
/// a number, a binary-protocol parameter): six when it has a fraction, else none.
pub fn natural_fsp(d: &DateTime) -> u8 {
    if d.micro != 0 {
        6
    } else {
        0
    }
}

/// A value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// Signed 64-bit integer.
    Int(i64),
    /// Unsigned 64-bit integer.
    UInt(u64),
    /// Exact decimal.
    Decimal(Decimal),
    /// Double precision float.
    Double(f64),
    /// Character string (utf8mb4).
    Str(String),
    /// Binary string: any bytes, compared bytewise.
    Bytes(Vec<u8>),
    /// A date (time part zero and not shown).
    Date(DateTime),
    /// A date and time, with the fractional digits it shows (0..=6: a DATETIME(2) column's
    /// values show two, `NOW(3)` three); the fraction past them is zero. The fsp is display
    /// and type only: comparisons use the datetime.
    DateTime(DateTime, u8),
    /// A TIME (signed, up to 838 hours), with the fractional digits it shows.
    Time(crate::temporal::Time),
}

/// `int.micro` (both signed) as a DECIMAL of `fsp` digits, the fraction truncated to them.
fn fsp_decimal(int: i64, micro: i64, fsp: u8) -> Decimal {
    let scale = u32::from(fsp.min(6));
    let unit = 10i128.pow(6 - scale);
    Decimal::new(
        i128::from(int) * 10i128.pow(scale) + i128::from(micro) / unit,
        scale,
    )
}

/// Formats a double the way MySQL prints it: shortest round-trip digits, exponent form for very
/// large or very small magnitudes.
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if d == 0.0 {
        return "0".into();
    }
    let a = d.abs();
    if !(1e-15..1e15).contains(&a) {
        // Rust prints `1e20`, `1.5e-20`: same shape as MySQL.
        let s = format!("{d:e}");
        return s;
    }
    format!("{d}")
}

/// Formats a FLOAT column's value (its single-precision value, as a double) the way MariaDB
/// shows it as a string: with `decimals` fixed digits after the point (FLOAT(M,D)), or, with
/// 31 (none fixed), rounded to six significant digits (single precision's reliable ones,
/// `FLT_DIG`) and written as a double is. `1.1` reads `1.1`, not `1.100000023841858`.
/// The text protocol writes FLOAT columns by the same rule (`shoal_proto::values::single_text`).
pub fn format_float(d: f64, decimals: u8) -> String {
    if !d.is_finite() {
        return format_double(d);
    }
    if decimals < 31 {
        return format!("{d:.*}", usize::from(decimals));
    }
    // `{:.5e}` rounds the exact value to six significant digits.
    format_double(format!("{d:.5e}").parse().unwrap_or(d))
}

/// Parses the longest numeric prefix of a string as a double (MySQL's string-to-number rule).
/// Returns the number and whether the whole string (ignoring surrounding spaces) was numeric.
pub fn str_to_f64(s: &str) -> (f64, bool) {
    let t = s.trim_start();
    let b = t.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let ds = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i == ds || (i == ds + 1 && b[ds] == b'.') {
        return (0.0, false);
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let es = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > es {
            i = j;
        }
    }
    let v = t[..i].parse::<f64>().unwrap_or(0.0);
    (v, t[i..].trim().is_empty())
}

/// Parses a string as an integer the way `CAST(s AS SIGNED)` does (prefix, saturating).
pub fn str_to_i128(s: &str) -> i128 {
    let t = s.trim_start();
    let b = t.as_bytes();
    let mut i = 0;
    let neg = i < b.len() && b[i] == b'-';
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let mut v: i128 = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        v = (v * 10 + (b[i] - b'0') as i128).min(u64::MAX as i128 + 1);
        i += 1;
    }
    if neg {
        -v
    } else {
        v
    }
}

/// A string as an integer in numeric context: its numeric prefix rounded, or read exactly
/// when too large for a double to hold every digit.
fn str_to_int_rounded(s: &str) -> i128 {
    let (f, _) = str_to_f64(s);
    if f.abs() < 9.0e18 {
        f.round() as i128
    } else {
        str_to_i128(s)
    }
}

/// Case-insensitive, trailing-space-insensitive comparison (utf8mb4_general_ci-like).
pub fn collate_cmp(a: &str, b: &str) -> Ordering {
    // One definition for SQL and index keys (`shoal_collation`'s weights order the same way).
    shoal_collation::cmp(a, b)
}

/// A string without the trailing spaces the collation ignores (`shoal_collation::trim`).
pub fn collate_trim(s: &str) -> &str {
    shoal_collation::trim(s)
}

/// Bytes a row of values occupies in memory (the values and their heap parts), as the
/// statement memory budget counts them (`max_session_mem_used`).
pub fn row_mem_size(row: &[Value]) -> usize {
    row.iter().map(Value::mem_size).sum::<usize>() + std::mem::size_of::<Vec<Value>>()
}

impl Value {
    /// Bytes this value occupies in memory: its own size and its heap part.
    pub fn mem_size(&self) -> usize {
        std::mem::size_of::<Value>()
            + match self {
                Value::Str(s) => s.capacity(),
                Value::Bytes(b) => b.capacity(),
                _ => 0,
            }
    }

    /// Whether this is NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value's own type.
    pub fn sql_type(&self) -> SqlType {
        match self {
            Value::Null => SqlType::Null,
            Value::Int(_) => SqlType::Int,
            Value::UInt(_) => SqlType::UInt,
            Value::Decimal(d) => SqlType::Decimal(d.scale.min(30) as u8),
            Value::Double(_) => SqlType::Double,
            Value::Str(_) => SqlType::Str,
            Value::Bytes(_) => SqlType::Bytes,
            Value::Date(_) => SqlType::Date,
            Value::DateTime(_, fsp) => SqlType::DateTime(*fsp),
            Value::Time(t) => SqlType::Time(t.fsp),
        }
    }

    /// As a double (NULL -> None).
    pub fn to_f64(&self) -> Option<f64> {
        Some(match self {
            Value::Null => return None,
            Value::Int(i) => *i as f64,
            Value::UInt(u) => *u as f64,
            Value::Decimal(d) => d.to_f64(),
            Value::Double(d) => *d,
            Value::Str(s) => str_to_f64(s).0,
            // The numeric prefix is ASCII: a lossy view of the bytes reads it unchanged.
            Value::Bytes(b) => str_to_f64(&String::from_utf8_lossy(b)).0,
            // `[-]hhmmss.ffffff`, as MariaDB reads a TIME in numeric context.
            Value::Time(t) => {
                let (i, m) = t.number();
                i as f64 + m as f64 / 1e6
            }
            Value::Date(d) => (d.number() / 1_000_000) as f64,
            Value::DateTime(d, _) => d.number() as f64 + f64::from(d.micro) / 1e6,
        })
    }

    /// As an exact decimal when the value is integral or decimal (None for NULL, double, text).
    pub fn to_decimal(&self) -> Option<Decimal> {
        match self {
            Value::Int(i) => Some(Decimal::from_i128(*i as i128)),
            Value::UInt(u) => Some(Decimal::from_i128(*u as i128)),
            Value::Decimal(d) => Some(*d),
            // `[-]hhmmss` with the TIME's fsp as the scale (`TIME(2)'10:00:00.5' + 0` is
            // `100000.50`).
            Value::Time(t) => {
                let (i, m) = t.number();
                Some(fsp_decimal(i, m, t.fsp))
            }
            // `yyyymmdd`, `yyyymmddhhmmss` with the DATETIME's fsp as the scale.
            Value::Date(d) => Some(Decimal::from_i128(i128::from(d.number() / 1_000_000))),
            Value::DateTime(d, fsp) => Some(fsp_decimal(d.number(), i64::from(d.micro), *fsp)),
            _ => None,
        }
    }

    /// As an integer (rounded like MySQL's implicit conversion), None for NULL.
    pub fn to_i128(&self) -> Option<i128> {
        Some(match self {
            Value::Null => return None,
            Value::Int(i) => *i as i128,
            Value::UInt(u) => *u as i128,
            Value::Decimal(d) => d.round_int(),
            Value::Double(d) => d.round() as i128,
            Value::Str(s) => str_to_int_rounded(s),
            Value::Bytes(b) => str_to_int_rounded(&String::from_utf8_lossy(b)),
            Value::Date(_) | Value::DateTime(..) | Value::Time(_) => self.to_decimal()?.round_int(),
        })
    }

    /// SQL truth value: NULL -> None; numbers non-zero; strings by their numeric prefix.
    pub fn truth(&self) -> Option<bool> {
        match self {
            Value::Null => None,
            Value::Int(i) => Some(*i != 0),
            Value::UInt(u) => Some(*u != 0),
            Value::Decimal(d) => Some(!d.is_zero()),
            other => Some(other.to_f64().unwrap_or(0.0) != 0.0),
        }
    }

    /// Text form as MySQL's text protocol shows it (None for NULL). Bytes that are not UTF-8
    /// show as U+FFFD here: this is for display and messages; code that must keep every byte
    /// (the wire, storage, string functions) uses [`Value::to_bytes`] or matches `Bytes`.
    pub fn to_text(&self) -> Option<String> {
        Some(match self {
            Value::Null => return None,
            Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            Value::Int(i) => i.to_string(),
            Value::UInt(u) => u.to_string(),
            Value::Decimal(d) => d.to_string(),
            Value::Double(d) => format_double(*d),
            Value::Str(s) => s.clone(),
            Value::Date(d) => format!("{:04}-{:02}-{:02}", d.year, d.month, d.day),
            Value::Time(t) => t.text(),
            Value::DateTime(d, fsp) => d.text_fsp(*fsp),
        })
    }

    /// The bytes of the value's string form (None for NULL): a binary string's own bytes, a
    /// text's UTF-8 bytes, a number's or date's text.
    pub fn to_bytes(&self) -> Option<std::borrow::Cow<'_, [u8]>> {
        use std::borrow::Cow;
        Some(match self {
            Value::Null => return None,
            Value::Bytes(b) => Cow::Borrowed(b.as_slice()),
            Value::Str(s) => Cow::Borrowed(s.as_bytes()),
            other => Cow::Owned(other.to_text()?.into_bytes()),
        })
    }

    /// Whether this is a binary string.
    pub fn is_bytes(&self) -> bool {
        matches!(self, Value::Bytes(_))
    }

    /// Bytes as a value of the string kind MySQL gives data it has no charset for: text when
    /// the bytes are UTF-8, else a binary string (a prepared statement's string parameter).
    pub fn from_utf8_or_bytes(b: Vec<u8>) -> Value {
        match String::from_utf8(b) {
            Ok(s) => Value::Str(s),
            Err(e) => Value::Bytes(e.into_bytes()),
        }
    }

    /// From a bool (1/0 as BIGINT, like MySQL comparison results).
    pub fn from_bool(b: bool) -> Value {
        Value::Int(b as i64)
    }

    /// From an optional bool (None -> NULL).
    pub fn from_opt_bool(b: Option<bool>) -> Value {
        b.map(Value::from_bool).unwrap_or(Value::Null)
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_text() {
            Some(s) => f.write_str(&s),
            None => f.write_str("NULL"),
        }
    }
}

/// The type of a result column fed by values of types `a` and `b` (a UNION column), MySQL's
/// aggregation for results: integers and decimals give DECIMAL with the larger scale (signed and
/// unsigned integers mixed too), a DOUBLE among numbers gives DOUBLE, DATE with DATETIME gives
/// DATETIME, and a string, or a temporal value among numbers, gives a string. NULL adds nothing.
pub fn aggregate_type(a: SqlType, b: SqlType) -> SqlType {
    use SqlType::*;
    match (a, b) {
        (Null, t) | (t, Null) => t,
        (x, y) if x == y => x,
        // A binary string among the branches makes the column binary (MySQL's binary
        // collation wins the aggregation).
        (Bytes, _) | (_, Bytes) => Bytes,
        (Str, _) | (_, Str) => Str,
        (Time(x), Time(y)) => Time(x.max(y)),
        (Date | DateTime(_) | Time(_), Date | DateTime(_) | Time(_)) => {
            DateTime(temporal_fsp(a).max(temporal_fsp(b)))
        }
        (Date | DateTime(_) | Time(_), _) | (_, Date | DateTime(_) | Time(_)) => Str,
        (Double, _) | (_, Double) => Double,
        (Decimal(x), Decimal(y)) => Decimal(x.max(y)),
        (Decimal(s), _) | (_, Decimal(s)) => Decimal(s),
        // INT with INT UNSIGNED.
        _ => Decimal(0),
    }
}

/// The fractional digits of a temporal type (0 for DATE and anything else).
pub fn temporal_fsp(t: SqlType) -> u8 {
    match t {
        SqlType::DateTime(n) | SqlType::Time(n) => n,
        _ => 0,
    }
}

/// `v` as a value of a column of type `ty` (see [`aggregate_type`]): what the client sees of a
/// UNION column, so `1` in a DECIMAL(.., 2) column is `1.00` and a date in a string column is its
/// text. Values that already fit are unchanged.
pub fn coerce_to(v: Value, ty: SqlType) -> Value {
    match (ty, v) {
        (_, Value::Null) => Value::Null,
        (SqlType::Str, v @ (Value::Str(_) | Value::Bytes(_))) => v,
        (SqlType::Str, v) => Value::Str(v.to_text().unwrap_or_default()),
        (SqlType::Bytes, v @ Value::Bytes(_)) => v,
        (SqlType::Bytes, v) => Value::Bytes(v.to_bytes().unwrap_or_default().into_owned()),
        (SqlType::Decimal(s), v @ (Value::Int(_) | Value::UInt(_) | Value::Decimal(_))) => {
            match v.to_decimal() {
                Some(d) if d.scale < u32::from(s) => {
                    d.rescale(u32::from(s)).map(Value::Decimal).unwrap_or(v)
                }
                Some(d) => Value::Decimal(d),
                None => v,
            }
        }
        (SqlType::Double, v @ (Value::Int(_) | Value::UInt(_) | Value::Decimal(_))) => {
            Value::Double(v.to_f64().unwrap_or(0.0))
        }
        (SqlType::DateTime(fsp), Value::Date(d)) => Value::DateTime(d, fsp),
        (SqlType::DateTime(fsp), Value::DateTime(d, _)) => Value::DateTime(d.truncated(fsp), fsp),
        (SqlType::DateTime(fsp), Value::Time(t)) => {
            Value::DateTime(time_on_today(&t).truncated(fsp), fsp)
        }
        (SqlType::Time(fsp), Value::Time(t)) => Value::Time(t.with_fsp(fsp)),
        (_, v) => v,
    }
}

fn is_numeric(v: &Value) -> bool {
    matches!(
        v,
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_)
    )
}

/// An integer read as a DATETIME, as MySQL does where it meets a temporal value
/// ([`crate::temporal::datetime_of_int`]); any number that is no such value (5, 691232,
/// 20201301) is the zero date 0000-00-00, before every real date (MySQL warns 1292 there).
pub fn datetime_of_number(n: i128) -> DateTime {
    crate::temporal::datetime_of_int(n).map_or(DateTime::ZERO, |(d, _)| d)
}

/// The datetime a value compares as beside a date or datetime, as in MariaDB
/// (`DATE '2020-01-05' = '2020-1-5'`, `< '2020-01-05 10:00'`, `= '2020-01-05abc'`, and the zero
/// date for a string that is no date: [`crate::temporal::compare_operand`]). `None` for anything
/// else (then [`compare`] compares text).
pub fn temporal_operand(v: &Value) -> Option<DateTime> {
    match v {
        Value::Date(d) | Value::DateTime(d, _) => Some(*d),
        Value::Str(s) => crate::temporal::compare_operand(s.as_bytes()),
        Value::Bytes(b) => crate::temporal::compare_operand(b),
        _ => None,
    }
}

/// A value as a user variable holds it: a TIME, DATE or DATETIME as its text, with its digits
/// (MariaDB keeps no temporal value in a user variable, so `@t + 0` reads the text's numeric
/// prefix), anything else as it is.
pub fn user_var_value(v: Value) -> Value {
    match v {
        v @ (Value::Time(_) | Value::Date(_) | Value::DateTime(..)) => {
            Value::Str(v.to_text().unwrap_or_default())
        }
        v => v,
    }
}

/// A TIME as a datetime: that long after today's midnight (UTC).
pub fn time_on_today(t: &crate::temporal::Time) -> DateTime {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let micros = now.div_euclid(86400) * 86400 * 1_000_000 + t.micros();
    DateTime::from_unix(
        micros.div_euclid(1_000_000),
        micros.rem_euclid(1_000_000) as u32,
    )
}

/// Compares two non-NULL values with MySQL's rules; `None` if either is NULL.
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    if a.is_null() || b.is_null() {
        return None;
    }
    use Value::*;
    Some(match (a, b) {
        (Int(x), Int(y)) => x.cmp(y),
        (UInt(x), UInt(y)) => x.cmp(y),
        (Int(x), UInt(y)) => (*x as i128).cmp(&(*y as i128)),
        (UInt(x), Int(y)) => (*x as i128).cmp(&(*y as i128)),
        (Str(x), Str(y)) => collate_cmp(x, y),
        // A binary string on either side: bytewise, trailing spaces significant.
        (Bytes(x), Bytes(y)) => x.as_slice().cmp(y.as_slice()),
        (Bytes(x), Str(y)) => x.as_slice().cmp(y.as_bytes()),
        (Str(x), Bytes(y)) => x.as_bytes().cmp(y.as_slice()),
        // A TIME beside a date: the time on today's date (UTC, as NOW()), as MariaDB
        // compares them.
        (Time(t), Date(d) | DateTime(d, _)) => time_on_today(t).cmp(d),
        (Date(d) | DateTime(d, _), Time(t)) => d.cmp(&time_on_today(t)),
        // A TIME beside anything else: the other side read as a time.
        (Time(_), _) | (_, Time(_)) => {
            let x = crate::temporal::time_operand(a).unwrap_or(0);
            let y = crate::temporal::time_operand(b).unwrap_or(0);
            x.cmp(&y)
        }
        (Date(_) | DateTime(..), Date(_) | DateTime(..) | Str(_) | Bytes(_))
        | (Str(_) | Bytes(_), Date(_) | DateTime(..)) => {
            if let (Some(x), Some(y)) = (temporal_operand(a), temporal_operand(b)) {
                return Some(x.cmp(&y));
            }
            // Anything else (not a date at all) as text, as before.
            let (x, y) = (a.to_text().unwrap(), b.to_text().unwrap());
            // Dates compare as datetimes: `2020-01-01` == `2020-01-01 00:00:00`.
            let norm = |s: String| {
                if s.len() == 10 {
                    format!("{s} 00:00:00")
                } else {
                    s
                }
            };
            norm(x).cmp(&norm(y))
        }
        // An integer against a date or datetime is read as one, as MySQL reads it
        // (`DATE '2020-01-02' = 200102`, `> 5`: see `datetime_of_number`).
        (Date(d) | DateTime(d, _), Int(_) | UInt(_)) => {
            d.cmp(&datetime_of_number(b.to_i128().unwrap_or(0)))
        }
        (Int(_) | UInt(_), Date(d) | DateTime(d, _)) => {
            datetime_of_number(a.to_i128().unwrap_or(0)).cmp(d)
        }
        _ if is_numeric(a)
            && is_numeric(b)
            && !matches!(a, Double(_))
            && !matches!(b, Double(_)) =>
        {
            a.to_decimal().unwrap().cmp(&b.to_decimal().unwrap())
        }
        _ => {
            let x = a.to_f64().unwrap();
            let y = b.to_f64().unwrap();
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_number_coercion() {
        assert_eq!(str_to_f64("12abc"), (12.0, false));
        assert_eq!(str_to_f64(" 1.5e2 "), (150.0, true));
        assert_eq!(str_to_f64("abc"), (0.0, false));
        assert_eq!(Value::Str("3".into()).to_i128(), Some(3));
    }

    #[test]
    fn comparisons() {
        let s = |x: &str| Value::Str(x.into());
        assert_eq!(compare(&s("abc"), &s("ABC ")), Some(Ordering::Equal));
        assert_eq!(compare(&s("a"), &s("b")), Some(Ordering::Less));
        assert_eq!(
            compare(&Value::Int(-1), &Value::UInt(u64::MAX)),
            Some(Ordering::Less)
        );
        assert_eq!(compare(&s("10"), &Value::Int(9)), Some(Ordering::Greater));
        assert_eq!(compare(&Value::Null, &Value::Int(9)), None);
        let d = Value::Decimal(Decimal::parse("1.0").unwrap());
        assert_eq!(compare(&d, &Value::Int(1)), Some(Ordering::Equal));
    }

    #[test]
    fn numbers_as_dates() {
        let d = |y, m, day| {
            Value::Date(DateTime {
                year: y,
                month: m,
                day,
                hour: 0,
                minute: 0,
                second: 0,
                micro: 0,
            })
        };
        let i = Value::Int;
        assert_eq!(compare(&d(2020, 1, 2), &i(200102)), Some(Ordering::Equal));
        assert_eq!(compare(&d(2020, 1, 2), &i(20200102)), Some(Ordering::Equal));
        assert_eq!(compare(&d(1999, 12, 31), &i(991231)), Some(Ordering::Equal));
        assert_eq!(compare(&d(1999, 12, 31), &i(101)), Some(Ordering::Less));
        // Not a date: the zero date.
        assert_eq!(compare(&d(1999, 12, 31), &i(5)), Some(Ordering::Greater));
        assert_eq!(compare(&i(691232), &d(1999, 12, 31)), Some(Ordering::Less));
        assert_eq!(compare(&d(2020, 1, 2), &i(0)), Some(Ordering::Greater));
    }

    #[test]
    fn dates_roundtrip() {
        let d = DateTime::from_unix(1_700_000_000, 0);
        assert_eq!(
            Value::DateTime(d, 0).to_text().unwrap(),
            "2023-11-14 22:13:20"
        );
        let f = DateTime::from_unix(1_700_000_000, 120_000);
        assert_eq!(
            Value::DateTime(f, 2).to_text().unwrap(),
            "2023-11-14 22:13:20.12"
        );
        assert_eq!(
            Value::DateTime(f, 3).to_text().unwrap(),
            "2023-11-14 22:13:20.120"
        );
        assert_eq!(
            Value::DateTime(f, 2).to_decimal().unwrap().to_string(),
            "20231114221320.12"
        );
        assert_eq!(Value::DateTime(d, 0).to_i128(), Some(20231114221320));
        assert_eq!(d.to_unix(), 1_700_000_000);
        assert_eq!(DateTime::from_unix(0, 0).year, 1970);
    }

    #[test]
    fn doubles_print_like_mysql() {
        assert_eq!(format_double(2.0), "2");
        assert_eq!(format_double(0.1), "0.1");
        assert_eq!(format_double(1e20), "1e20");
        assert_eq!(format_double(-1.5), "-1.5");
        let single = |x: f64, d: u8| format_float(f64::from(x as f32), d);
        assert_eq!(single(1.1, 31), "1.1");
        assert_eq!(single(0.1, 31), "0.1");
        assert_eq!(single(123456.789, 31), "123457");
        assert_eq!(single(16777217.0, 31), "16777200");
        assert_eq!(single(1e20, 31), "1e20");
        assert_eq!(single(-3.4e38, 31), "-3.4e38");
        assert_eq!(single(0.000123456789, 31), "0.000123457");
        assert_eq!(single(1.1, 2), "1.10");
        assert_eq!(single(-99999.99, 2), "-99999.99");
        assert_eq!(single(0.0, 2), "0.00");
    }
}
