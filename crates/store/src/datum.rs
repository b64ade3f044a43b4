//! The storage value type ([`Datum`]) and column types ([`ColumnType`]).
//!
//! The SQL layer maps its values to `Datum` before calling storage. Storage coerces every value
//! to its column's canonical variant ([`ColumnType::coerce`]) before encoding, so that every
//! value of one column has the same variant and scale: that is what makes the key encoding
//! order-preserving per column (see `codec`).
//!
//! Canonical variants: signed integer types -> `Int`, unsigned -> `UInt`, FLOAT/DOUBLE ->
//! `Double` (a FLOAT's rounded to single precision), DECIMAL(p,s) -> `Decimal` with scale exactly `s`, CHAR/VARCHAR/TEXT/BLOB/BINARY/
//! VARBINARY -> `Bytes` (compared as bytes: a binary collation), DATE -> `Date`, DATETIME/TIMESTAMP
//! -> `DateTime` with the fraction truncated to the column's precision (`DATETIME(2)` keeps two
//! digits; catalogs record the precision in variants of their own, so older entries read as
//! precision 0, which is what older builds stored), TIME(fsp) -> `Time` (signed microseconds,
//! the fraction truncated to the column's digits, within `±838:59:59.999999`; a catalog variant
//! no older entry has).
//!
//! A value the column cannot hold as given is refused with a typed [`Misfit`]
//! ([`ColumnType::fit`]): a string too long or a number out of range carries the nearest value
//! the column does hold (the prefix that fits, the type's bound), which the SQL layer stores
//! under MySQL's non-strict `sql_mode` (with a warning) and refuses under strict mode; storage
//! itself always refuses ([`ColumnType::coerce`]).
//!
//! BINARY(n) is fixed-length as in MySQL: a shorter value is right-padded with `0x00` bytes on
//! the way in and the padding is part of the stored value (read back, compared, indexed);
//! VARBINARY(n) holds at most `n` bytes, unpadded. CHAR(n) is stored without trailing spaces
//! (what MySQL's CHAR reads back), VARCHAR(n) as given. Catalogs written before these two types
//! existed recorded such columns as `Blob`, which they stay (`ColumnType` is serialised by
//! variant name, so the new variants never change what an old entry means).

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

/// A fixed-point decimal: `unscaled * 10^-scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Decimal {
    /// The value times `10^scale`.
    pub unscaled: i128,
    /// Digits after the decimal point.
    pub scale: u8,
}

impl Decimal {
    /// Rescales to `scale` digits, rounding half away from zero as MySQL does.
    pub fn rescale(self, scale: u8) -> Option<Decimal> {
        match scale.cmp(&self.scale) {
            Ordering::Equal => Some(self),
            Ordering::Greater => {
                let f = 10i128.checked_pow(u32::from(scale - self.scale))?;
                Some(Decimal {
                    unscaled: self.unscaled.checked_mul(f)?,
                    scale,
                })
            }
            Ordering::Less => {
                let f = 10i128.checked_pow(u32::from(self.scale - scale))?;
                let q = self.unscaled / f;
                let r = self.unscaled % f;
                let adj = if r.abs() * 2 >= f {
                    self.unscaled.signum()
                } else {
                    0
                };
                Some(Decimal {
                    unscaled: q + adj,
                    scale,
                })
            }
        }
    }

    /// Parses `-12.345` style text.
    pub fn parse(s: &str) -> Option<Decimal> {
        let s = s.trim();
        let (neg, body) = match s.strip_prefix('-') {
            Some(b) => (true, b),
            None => (false, s.strip_prefix('+').unwrap_or(s)),
        };
        let (int, frac) = body.split_once('.').unwrap_or((body, ""));
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let digits = format!("{int}{frac}");
        let v: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        Some(Decimal {
            unscaled: if neg { -v } else { v },
            scale: u8::try_from(frac.len()).ok()?,
        })
    }

    /// The value as a float (approximate).
    pub fn to_f64(self) -> f64 {
        self.unscaled as f64 / 10f64.powi(i32::from(self.scale))
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.scale == 0 {
            return write!(f, "{}", self.unscaled);
        }
        let p = 10u128.pow(u32::from(self.scale));
        let a = self.unscaled.unsigned_abs();
        let sign = if self.unscaled < 0 { "-" } else { "" };
        write!(
            f,
            "{sign}{}.{:0width$}",
            a / p,
            a % p,
            width = self.scale as usize
        )
    }
}

/// A calendar date (no validation beyond ranges: MySQL allows zero dates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Date {
    /// 0..=9999.
    pub year: u16,
    /// 0..=12.
    pub month: u8,
    /// 0..=31.
    pub day: u8,
}

impl Date {
    /// Order-preserving packed form (`(year*13+month)*32+day`, as MySQL packs dates).
    pub fn pack(self) -> u32 {
        (u32::from(self.year) * 13 + u32::from(self.month)) * 32 + u32::from(self.day)
    }
    /// Inverse of [`Date::pack`].
    pub fn unpack(v: u32) -> Date {
        let day = (v % 32) as u8;
        let ym = v / 32;
        Date {
            year: (ym / 13) as u16,
            month: (ym % 13) as u8,
            day,
        }
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// A date and time with microseconds (DATETIME and TIMESTAMP; TIMESTAMP is stored as the
/// session's wall-clock value, no time-zone conversion).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DateTime {
    /// The date part.
    pub date: Date,
    /// 0..=23.
    pub hour: u8,
    /// 0..=59.
    pub minute: u8,
    /// 0..=59.
    pub second: u8,
    /// 0..=999_999.
    pub micro: u32,
}

impl DateTime {
    /// Order-preserving packed form.
    pub fn pack(self) -> u64 {
        let secs = ((u64::from(self.date.pack()) * 24 + u64::from(self.hour)) * 60
            + u64::from(self.minute))
            * 60
            + u64::from(self.second);
        secs * 1_000_000 + u64::from(self.micro)
    }
    /// Inverse of [`DateTime::pack`].
    pub fn unpack(v: u64) -> DateTime {
        let micro = (v % 1_000_000) as u32;
        let mut s = v / 1_000_000;
        let second = (s % 60) as u8;
        s /= 60;
        let minute = (s % 60) as u8;
        s /= 60;
        let hour = (s % 24) as u8;
        let date = Date::unpack((s / 24) as u32);
        DateTime {
            date,
            hour,
            minute,
            second,
            micro,
        }
    }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {:02}:{:02}:{:02}",
            self.date, self.hour, self.minute, self.second
        )?;
        if self.micro != 0 {
            write!(f, ".{:06}", self.micro)?;
        }
        Ok(())
    }
}

/// One value of a row or key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Datum {
    /// SQL NULL.
    Null,
    /// Signed integer (canonical for signed INT family columns).
    Int(i64),
    /// Unsigned integer (canonical for UNSIGNED columns and hidden row ids).
    UInt(u64),
    /// FLOAT/DOUBLE (NaN is rejected by [`ColumnType::coerce`]).
    Double(f64),
    /// DECIMAL.
    Decimal(Decimal),
    /// CHAR/VARCHAR/TEXT/BLOB bytes.
    Bytes(Vec<u8>),
    /// DATE.
    Date(Date),
    /// DATETIME/TIMESTAMP.
    DateTime(DateTime),
    /// TIME: signed microseconds (`-838:59:59.999999` .. `838:59:59.999999`).
    Time(i64),
}

impl Datum {
    /// Whether this is NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Datum::Null)
    }
    /// Convenience constructor for text.
    pub fn text(s: &str) -> Datum {
        Datum::Bytes(s.as_bytes().to_vec())
    }
}

impl fmt::Display for Datum {
    /// Formats as MySQL prints the value in messages (`Duplicate entry '...'`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Datum::Null => write!(f, "NULL"),
            Datum::Int(v) => write!(f, "{v}"),
            Datum::UInt(v) => write!(f, "{v}"),
            Datum::Double(v) => write!(f, "{v}"),
            Datum::Decimal(d) => write!(f, "{d}"),
            Datum::Bytes(b) => write!(f, "{}", String::from_utf8_lossy(b)),
            Datum::Date(d) => write!(f, "{d}"),
            Datum::DateTime(d) => write!(f, "{d}"),
            Datum::Time(m) => f.write_str(&time_text(*m, 6, true)),
        }
    }
}

/// A column type as declared in CREATE TABLE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "StoredType", into = "StoredType")]
pub enum ColumnType {
    /// TINYINT/SMALLINT/MEDIUMINT/INT/BIGINT; `bytes` is 1, 2, 3, 4 or 8.
    Int {
        /// Storage width in bytes (range check).
        bytes: u8,
        /// UNSIGNED.
        unsigned: bool,
    },
    /// FLOAT, or FLOAT(M,D) with `Some((M, D))`: single precision. Values are rounded to the
    /// nearest `f32` on the way in (FLOAT(M,D) first to D decimals, M digits at most) and held
    /// as that `f32`'s exact double, so arithmetic sees what MariaDB's 4-byte FLOAT holds
    /// (`0.1` is 0.10000000149011612). Rows an older build wrote hold the unrounded double:
    /// [`ColumnType::read`] rounds them the same way when they are read.
    Float(Option<(u8, u8)>),
    /// DOUBLE / REAL, or DOUBLE(M,D) with `Some((M, D))`: rounded to D decimals (ties to
    /// even, as MariaDB), at most M digits.
    Double(Option<(u8, u8)>),
    /// DECIMAL(precision, scale).
    Decimal {
        /// Total digits (1..=38 here).
        precision: u8,
        /// Digits after the point.
        scale: u8,
    },
    /// CHAR(n).
    Char(u32),
    /// VARCHAR(n).
    Varchar(u32),
    /// TEXT family (length limit not enforced).
    Text,
    /// BLOB family (and BINARY / VARBINARY columns of catalogs written before those types).
    Blob,
    /// BINARY(n): exactly `n` bytes (1..=255), right-padded with `0x00`.
    Binary(u32),
    /// VARBINARY(n): at most `n` bytes.
    Varbinary(u32),
    /// DATE.
    Date,
    /// DATETIME(fsp): `fsp` fractional digits of seconds (0..=6) are kept, the rest truncated
    /// on the way in (MariaDB's default, without TIME_ROUND_FRACTIONAL).
    DateTime(u8),
    /// TIMESTAMP(fsp) (stored like DATETIME).
    Timestamp(u8),
    /// TIME(fsp): signed microseconds, the fraction truncated to `fsp` digits on the way in.
    Time(u8),
}

/// How a [`ColumnType`] is written in the catalog. The variants are those catalogs have always
/// held, so every entry an older build wrote means what it meant (`"DateTime"` is DATETIME
/// without fractional seconds, which is what that build stored), and a column without
/// fractional seconds is still written the old way; the fractional-second types are new
/// variants of their own.
#[derive(Serialize, Deserialize)]
enum StoredType {
    Int { bytes: u8, unsigned: bool },
    Float,
    FloatFixed(u8, u8),
    Double,
    DoubleFixed(u8, u8),
    Decimal { precision: u8, scale: u8 },
    Char(u32),
    Varchar(u32),
    Text,
    Blob,
    Binary(u32),
    Varbinary(u32),
    Date,
    DateTime,
    Timestamp,
    DateTimeFrac(u8),
    TimestampFrac(u8),
    Time(u8),
}

impl From<StoredType> for ColumnType {
    fn from(t: StoredType) -> ColumnType {
        use StoredType as S;
        match t {
            S::Int { bytes, unsigned } => ColumnType::Int { bytes, unsigned },
            S::Float => ColumnType::Float(None),
            S::FloatFixed(m, d) => ColumnType::Float(Some((m, d))),
            S::Double => ColumnType::Double(None),
            S::DoubleFixed(m, d) => ColumnType::Double(Some((m, d))),
            S::Decimal { precision, scale } => ColumnType::Decimal { precision, scale },
            S::Char(n) => ColumnType::Char(n),
            S::Varchar(n) => ColumnType::Varchar(n),
            S::Text => ColumnType::Text,
            S::Blob => ColumnType::Blob,
            S::Binary(n) => ColumnType::Binary(n),
            S::Varbinary(n) => ColumnType::Varbinary(n),
            S::Date => ColumnType::Date,
            S::DateTime => ColumnType::DateTime(0),
            S::Timestamp => ColumnType::Timestamp(0),
            S::DateTimeFrac(f) => ColumnType::DateTime(f.min(6)),
            S::TimestampFrac(f) => ColumnType::Timestamp(f.min(6)),
            S::Time(f) => ColumnType::Time(f.min(6)),
        }
    }
}

impl From<ColumnType> for StoredType {
    fn from(t: ColumnType) -> StoredType {
        use StoredType as S;
        match t {
            ColumnType::Int { bytes, unsigned } => S::Int { bytes, unsigned },
            ColumnType::Float(None) => S::Float,
            ColumnType::Float(Some((m, d))) => S::FloatFixed(m, d),
            ColumnType::Double(None) => S::Double,
            ColumnType::Double(Some((m, d))) => S::DoubleFixed(m, d),
            ColumnType::Decimal { precision, scale } => S::Decimal { precision, scale },
            ColumnType::Char(n) => S::Char(n),
            ColumnType::Varchar(n) => S::Varchar(n),
            ColumnType::Text => S::Text,
            ColumnType::Blob => S::Blob,
            ColumnType::Binary(n) => S::Binary(n),
            ColumnType::Varbinary(n) => S::Varbinary(n),
            ColumnType::Date => S::Date,
            ColumnType::DateTime(0) => S::DateTime,
            ColumnType::Timestamp(0) => S::Timestamp,
            ColumnType::DateTime(f) => S::DateTimeFrac(f),
            ColumnType::Timestamp(f) => S::TimestampFrac(f),
            ColumnType::Time(f) => S::Time(f),
        }
    }
}

/// A TIME of `micros` microseconds as text: `[-]hh:mm:ss` and `fsp` fractional digits, or
/// (`natural`) six digits when there is a fraction and none otherwise.
pub fn time_text(micros: i64, fsp: u8, natural: bool) -> String {
    let a = micros.unsigned_abs();
    let secs = a / 1_000_000;
    let mut s = format!(
        "{}{:02}:{:02}:{:02}",
        if micros < 0 { "-" } else { "" },
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    let micro = a % 1_000_000;
    let digits = if natural {
        if micro != 0 {
            6
        } else {
            0
        }
    } else {
        usize::from(fsp.min(6))
    };
    if digits > 0 {
        s.push('.');
        s.push_str(&format!("{micro:06}")[..digits]);
    }
    s
}

/// The largest TIME, `838:59:59.999999`, in microseconds.
pub const MAX_TIME_MICROS: i64 = (838 * 3600 + 59 * 60 + 59) * 1_000_000 + 999_999;

/// `micro` with only its first `fsp` digits (of six) kept: the fraction a column of that
/// precision holds, truncated as MariaDB stores it by default.
pub fn truncate_micro(micro: u32, fsp: u8) -> u32 {
    let unit = 10u32.pow(6 - u32::from(fsp.min(6)));
    micro - micro % unit
}

impl ColumnType {
    /// A character string type (CHAR, VARCHAR, TEXT): compared in the collation by SQL and
    /// encoded as its collation weight in collated keys. BLOB/BINARY/VARBINARY are not.
    pub fn is_text(&self) -> bool {
        matches!(
            self,
            ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Text
        )
    }

    /// A binary string type (BLOB, BINARY, VARBINARY): bytes compared bytewise, never weighed.
    pub fn is_binary_string(&self) -> bool {
        matches!(
            self,
            ColumnType::Blob | ColumnType::Binary(_) | ColumnType::Varbinary(_)
        )
    }

    /// The implicit default of a NOT NULL column of this type, what MySQL gives existing rows
    /// when such a column is added without a DEFAULT: 0, the empty string, the zero date.
    pub fn implicit_default(&self) -> Datum {
        match self {
            ColumnType::Int { unsigned: true, .. } => Datum::UInt(0),
            ColumnType::Int { .. } => Datum::Int(0),
            ColumnType::Float(_) | ColumnType::Double(_) => Datum::Double(0.0),
            ColumnType::Decimal { scale, .. } => Datum::Decimal(Decimal {
                unscaled: 0,
                scale: *scale,
            }),
            ColumnType::Char(_)
            | ColumnType::Varchar(_)
            | ColumnType::Text
            | ColumnType::Blob
            | ColumnType::Varbinary(_) => Datum::Bytes(Vec::new()),
            // The empty string, padded.
            ColumnType::Binary(n) => Datum::Bytes(vec![0; *n as usize]),
            ColumnType::Date => Datum::Date(Date::unpack(0)),
            ColumnType::DateTime(_) | ColumnType::Timestamp(_) => {
                Datum::DateTime(DateTime::unpack(0))
            }
            ColumnType::Time(_) => Datum::Time(0),
        }
    }

    /// `f` as this type holds it: a FLOAT's nearest single-precision value (as a double),
    /// anything else unchanged.
    fn single(self, f: f64) -> f64 {
        match self {
            ColumnType::Float(_) => f64::from(f as f32),
            _ => f,
        }
    }

    /// A stored value as this column type gives it: a FLOAT's value rounded to single
    /// precision (rows older builds wrote hold the double they were given), else unchanged.
    pub fn read(self, d: Datum) -> Datum {
        match (self, d) {
            (ColumnType::Float(_), Datum::Double(f)) => Datum::Double(self.single(f)),
            (_, d) => d,
        }
    }

    /// Whether values of this type are integers (AUTO_INCREMENT is allowed).
    pub fn is_integer(self) -> bool {
        matches!(self, ColumnType::Int { .. })
    }

    /// The MySQL spelling of the type, for SHOW CREATE TABLE / DESCRIBE.
    pub fn sql_name(self) -> String {
        match self {
            ColumnType::Int { bytes, unsigned } => {
                let n = match bytes {
                    1 => "tinyint",
                    2 => "smallint",
                    3 => "mediumint",
                    4 => "int",
                    _ => "bigint",
                };
                if unsigned {
                    format!("{n} unsigned")
                } else {
                    n.to_string()
                }
            }
            ColumnType::Float(None) => "float".into(),
            ColumnType::Float(Some((m, d))) => format!("float({m},{d})"),
            ColumnType::Double(None) => "double".into(),
            ColumnType::Double(Some((m, d))) => format!("double({m},{d})"),
            ColumnType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
            ColumnType::Char(n) => format!("char({n})"),
            ColumnType::Varchar(n) => format!("varchar({n})"),
            ColumnType::Text => "text".into(),
            ColumnType::Blob => "blob".into(),
            ColumnType::Binary(n) => format!("binary({n})"),
            ColumnType::Varbinary(n) => format!("varbinary({n})"),
            ColumnType::Date => "date".into(),
            ColumnType::DateTime(0) => "datetime".into(),
            ColumnType::Timestamp(0) => "timestamp".into(),
            ColumnType::DateTime(f) => format!("datetime({f})"),
            ColumnType::Timestamp(f) => format!("timestamp({f})"),
            ColumnType::Time(0) => "time".into(),
            ColumnType::Time(f) => format!("time({f})"),
        }
    }

    /// Converts `d` to this type's canonical variant, or explains why it cannot.
    /// NULL passes through (NOT NULL is checked by the caller). Integers are range-checked,
    /// decimals rescaled (rounded) to the column scale and checked against the precision,
    /// strings checked against CHAR/VARCHAR length (in characters) and BINARY/VARBINARY length
    /// (in bytes; BINARY then padded with `0x00` to its length).
    pub fn coerce(self, d: Datum) -> std::result::Result<Datum, String> {
        self.fit(d).map_err(|m| m.to_string())
    }

    /// [`ColumnType::coerce`] with the refusal typed: a value too long or out of range comes
    /// back with the nearest value the column holds ([`Misfit`]), which is what a write in
    /// MySQL's non-strict mode stores (with a warning) instead of failing.
    pub fn fit(self, d: Datum) -> std::result::Result<Datum, Misfit> {
        use ColumnType as T;
        Ok(match (self, d) {
            (_, Datum::Null) => Datum::Null,
            (T::Int { bytes, unsigned }, d) => {
                let v: i128 = match d {
                    Datum::Int(v) => i128::from(v),
                    Datum::UInt(v) => i128::from(v),
                    Datum::Decimal(x) => match x.rescale(0) {
                        Some(x) => x.unscaled,
                        // Too many digits to rescale: beyond every integer type.
                        None => x.unscaled.signum() * i128::from(u64::MAX),
                    },
                    // `as` saturates: a double beyond i128 is beyond every integer type too.
                    Datum::Double(f) if f.is_finite() => f.round() as i128,
                    other => {
                        return Err(Misfit::Invalid(format!(
                            "expected an integer, got {other:?}"
                        )))
                    }
                };
                let bits = u32::from(bytes) * 8;
                let (lo, hi) = if unsigned {
                    (0i128, (1i128 << bits) - 1)
                } else {
                    (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                };
                let int = |v: i128| {
                    if unsigned {
                        Datum::UInt(v as u64)
                    } else {
                        Datum::Int(v as i64)
                    }
                };
                if v < lo || v > hi {
                    return Err(Misfit::OutOfRange {
                        nearest: int(v.clamp(lo, hi)),
                        detail: format!("value {v} out of range"),
                    });
                }
                int(v)
            }
            (T::Float(_) | T::Double(_), d) => {
                let f = match d {
                    Datum::Double(f) => f,
                    Datum::Int(v) => v as f64,
                    Datum::UInt(v) => v as f64,
                    Datum::Decimal(x) => x.to_f64(),
                    other => {
                        return Err(Misfit::Invalid(format!("expected a number, got {other:?}")))
                    }
                };
                if f.is_nan() {
                    return Err(Misfit::Invalid("NaN is not a valid value".into()));
                }
                // FLOAT holds single precision's range, DOUBLE finite values: beyond them the
                // nearest is the bound of the value's sign (MySQL's 1264).
                let (f, max) = match self {
                    // FLOAT(M,D) / DOUBLE(M,D): D decimals (ties to even, as MariaDB
                    // rounds them), below 10^(M-D).
                    T::Float(Some((m, d))) | T::Double(Some((m, d))) => {
                        let scale = 10f64.powi(i32::from(d));
                        let f = (f * scale).round_ties_even() / scale;
                        (f, 10f64.powi(i32::from(m) - i32::from(d)) - 1.0 / scale)
                    }
                    T::Float(None) => (f, f64::from(f32::MAX)),
                    _ => (f, f64::MAX),
                };
                if f.abs() > max {
                    return Err(Misfit::OutOfRange {
                        nearest: Datum::Double(self.single(max.copysign(f))),
                        detail: format!("value {f} out of range"),
                    });
                }
                let f = self.single(f);
                // -0.0 and 0.0 must encode identically in keys.
                Datum::Double(if f == 0.0 { 0.0 } else { f })
            }
            (T::Decimal { precision, scale }, d) => {
                let limit = 10i128
                    .checked_pow(u32::from(precision))
                    .unwrap_or(i128::MAX);
                // The bound of the column's sign `neg`: 999.99 for DECIMAL(5,2).
                let bound = |neg: bool, detail: String| Misfit::OutOfRange {
                    nearest: Datum::Decimal(Decimal {
                        unscaled: if neg { -(limit - 1) } else { limit - 1 },
                        scale,
                    }),
                    detail,
                };
                let x = match d {
                    Datum::Decimal(x) => x,
                    Datum::Int(v) => Decimal {
                        unscaled: i128::from(v),
                        scale: 0,
                    },
                    Datum::UInt(v) => Decimal {
                        unscaled: i128::from(v),
                        scale: 0,
                    },
                    Datum::Double(f) if f.is_finite() => {
                        match Decimal::parse(&format!("{f:.*}", scale as usize)) {
                            Some(x) => x,
                            None => {
                                return Err(bound(
                                    f < 0.0,
                                    format!("cannot convert {f} to decimal"),
                                ))
                            }
                        }
                    }
                    other => {
                        return Err(Misfit::Invalid(format!(
                            "expected a decimal, got {other:?}"
                        )))
                    }
                };
                let Some(x) = x.rescale(scale) else {
                    return Err(bound(x.unscaled < 0, "decimal out of range".into()));
                };
                if x.unscaled.abs() >= limit {
                    return Err(bound(
                        x.unscaled < 0,
                        format!("value {x} out of range for decimal({precision},{scale})"),
                    ));
                }
                Datum::Decimal(x)
            }
            (T::Char(n) | T::Varchar(n), Datum::Bytes(mut b)) => {
                if let T::Char(_) = self {
                    // CHAR drops trailing spaces (MySQL pads to the length and strips them
                    // again on read; without PAD_CHAR_TO_FULL_LENGTH they never show).
                    let kept = b.iter().rposition(|&c| c != b' ').map_or(0, |i| i + 1);
                    b.truncate(kept);
                }
                let text = std::str::from_utf8(&b).ok();
                let chars = text.map_or(b.len(), |s| s.chars().count());
                if chars > n as usize {
                    // Where the n-th character ends.
                    let cut = text
                        .and_then(|s| s.char_indices().nth(n as usize))
                        .map_or(n as usize, |(i, _)| i);
                    let spaces_only = b[cut..].iter().all(|&c| c == b' ');
                    return Err(Misfit::TooLong {
                        nearest: Datum::Bytes(b[..cut].to_vec()),
                        spaces_only,
                        detail: format!("data too long ({chars} > {n} characters)"),
                    });
                }
                Datum::Bytes(b)
            }
            (T::Text | T::Blob, Datum::Bytes(b)) => Datum::Bytes(b),
            (T::Binary(n) | T::Varbinary(n), Datum::Bytes(mut b)) => {
                if b.len() > n as usize {
                    let detail = format!("data too long ({} > {n} bytes)", b.len());
                    b.truncate(n as usize);
                    return Err(Misfit::TooLong {
                        nearest: Datum::Bytes(b),
                        spaces_only: false,
                        detail,
                    });
                }
                if let T::Binary(_) = self {
                    b.resize(n as usize, 0);
                }
                Datum::Bytes(b)
            }
            (T::Binary(_) | T::Varbinary(_), other) => {
                return self.fit(Datum::Bytes(other.to_string().into_bytes()))
            }
            (T::Char(_) | T::Varchar(_), other) => {
                return self.fit(Datum::Bytes(other.to_string().into_bytes()))
            }
            (T::Text | T::Blob, other) => Datum::Bytes(other.to_string().into_bytes()),
            (T::Date, Datum::Date(d)) => Datum::Date(d),
            (T::Date, Datum::DateTime(dt)) => Datum::Date(dt.date),
            // Fractional seconds beyond the column's precision are truncated, as MariaDB
            // stores them (without TIME_ROUND_FRACTIONAL).
            (T::DateTime(fsp) | T::Timestamp(fsp), Datum::DateTime(dt)) => {
                Datum::DateTime(DateTime {
                    micro: truncate_micro(dt.micro, fsp),
                    ..dt
                })
            }
            (T::DateTime(_) | T::Timestamp(_), Datum::Date(d)) => Datum::DateTime(DateTime {
                date: d,
                hour: 0,
                minute: 0,
                second: 0,
                micro: 0,
            }),
            // The fraction truncated to the column's digits; beyond the range is refused with
            // the bound on the value's side.
            (T::Time(fsp), Datum::Time(m)) => {
                let max = MAX_TIME_MICROS - 999_999 + i64::from(truncate_micro(999_999, fsp));
                let sign = m.signum();
                let a = m.abs();
                let a =
                    a - (a % 1_000_000) + i64::from(truncate_micro((a % 1_000_000) as u32, fsp));
                if a > max {
                    return Err(Misfit::OutOfRange {
                        nearest: Datum::Time(sign * max),
                        detail: format!("time {} out of range", time_text(m, 6, true)),
                    });
                }
                Datum::Time(sign * a)
            }
            (t, other) => {
                return Err(Misfit::Invalid(format!(
                    "cannot store {other:?} in a {} column",
                    t.sql_name()
                )))
            }
        })
    }
}

/// Why a value does not fit its column as given ([`ColumnType::fit`]). The first two carry
/// the nearest value the column does hold.
#[derive(Debug, Clone, PartialEq)]
pub enum Misfit {
    /// Longer than CHAR/VARCHAR(n) (characters) or BINARY/VARBINARY(n) (bytes).
    TooLong {
        /// The prefix that fits (a BINARY's is exactly `n` bytes).
        nearest: Datum,
        /// Only trailing spaces of a CHAR/VARCHAR value were cut (MySQL stores such a value in
        /// strict mode too, with a note).
        spaces_only: bool,
        /// What was wrong, for storage's own messages.
        detail: String,
    },
    /// A number beyond the type's range (or precision, for DECIMAL).
    OutOfRange {
        /// The bound on the value's side.
        nearest: Datum,
        /// What was wrong, for storage's own messages.
        detail: String,
    },
    /// Not a value of this type at all.
    Invalid(String),
}

impl fmt::Display for Misfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Misfit::TooLong { detail, .. } | Misfit::OutOfRange { detail, .. } => {
                f.write_str(detail)
            }
            Misfit::Invalid(detail) => f.write_str(detail),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TIME keys sort as the times do (negative first, hours past 99 after 20:00:00), rows
    /// round-trip, and a column truncates the fraction to its digits and refuses the range's
    /// outside with the bound.
    #[test]
    fn time_values_order_round_trip_and_fit() {
        let h = |h: i64| h * 3_600_000_000;
        let times = [
            -MAX_TIME_MICROS,
            h(-1),
            -1,
            0,
            1,
            h(1) / 2,
            h(20),
            h(100),
            MAX_TIME_MICROS,
        ];
        let keys: Vec<Vec<u8>> = times
            .iter()
            .map(|&m| crate::codec::encode_key(&[Datum::Time(m)]))
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        let types = [ColumnType::Time(6); 9];
        let row: Vec<Datum> = times.iter().map(|&m| Datum::Time(m)).collect();
        let back = crate::codec::decode_row(&types, &crate::codec::encode_row(&row)).unwrap();
        assert_eq!(back, row);
        let (key, _) = crate::codec::decode_key(&types, &keys.concat()).unwrap();
        assert_eq!(key, row);
        assert_eq!(
            ColumnType::Time(2).fit(Datum::Time(-1_234_567)),
            Ok(Datum::Time(-1_230_000))
        );
        assert_eq!(
            ColumnType::Time(0).fit(Datum::Time(MAX_TIME_MICROS)),
            Ok(Datum::Time(MAX_TIME_MICROS - 999_999))
        );
        assert_eq!(
            ColumnType::Time(0).fit(Datum::Time(-MAX_TIME_MICROS - 1_000_000)),
            Err(Misfit::OutOfRange {
                nearest: Datum::Time(-MAX_TIME_MICROS + 999_999),
                detail: "time -839:00:00.999999 out of range".into(),
            })
        );
        assert_eq!(time_text(-1_230_000, 3, false), "-00:00:01.230");
        assert_eq!(ColumnType::Time(3).sql_name(), "time(3)");
    }

    /// Catalog entries written before fractional seconds and FLOAT(M,D) / DOUBLE(M,D) existed
    /// read as they did (precision 0, plain FLOAT / DOUBLE), and those are still written the
    /// old way.
    #[test]
    fn temporal_types_keep_their_catalog_form() {
        let old: Vec<ColumnType> =
            serde_json::from_str(r#"["DateTime","Timestamp","Date",{"Varchar":5}]"#).unwrap();
        assert_eq!(
            old,
            vec![
                ColumnType::DateTime(0),
                ColumnType::Timestamp(0),
                ColumnType::Date,
                ColumnType::Varchar(5)
            ]
        );
        assert_eq!(
            serde_json::to_string(&[ColumnType::DateTime(0), ColumnType::Timestamp(0)]).unwrap(),
            r#"["DateTime","Timestamp"]"#
        );
        let old: Vec<ColumnType> = serde_json::from_str(r#"["Float","Double"]"#).unwrap();
        assert_eq!(old, [ColumnType::Float(None), ColumnType::Double(None)]);
        assert_eq!(
            serde_json::to_string(&[ColumnType::Float(None), ColumnType::Double(None)]).unwrap(),
            r#"["Float","Double"]"#
        );
        for t in [
            ColumnType::DateTime(3),
            ColumnType::Timestamp(6),
            ColumnType::Float(Some((7, 3))),
            ColumnType::Double(Some((10, 2))),
            ColumnType::Time(0),
            ColumnType::Time(4),
        ] {
            let text = serde_json::to_string(&t).unwrap();
            assert_eq!(
                serde_json::from_str::<ColumnType>(&text).unwrap(),
                t,
                "{text}"
            );
        }
    }

    #[test]
    fn floats_are_single_precision_and_fixed_types_round() {
        let f = |ty: ColumnType, v: f64| match ty.coerce(Datum::Double(v)) {
            Ok(Datum::Double(x)) => Ok(x),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e),
        };
        assert_eq!(f(ColumnType::Float(None), 0.1), Ok(f64::from(0.1f32)));
        assert_eq!(f(ColumnType::Double(None), 0.1), Ok(0.1));
        assert_eq!(
            f(ColumnType::Float(Some((7, 3))), 1.23456),
            Ok(f64::from(1.235f32))
        );
        assert_eq!(f(ColumnType::Double(Some((7, 3))), 0.0025), Ok(0.002));
        assert!(f(ColumnType::Double(Some((7, 3))), 10000.0).is_err());
        // An older build's unrounded FLOAT reads as its single-precision value.
        assert_eq!(
            ColumnType::Float(None).read(Datum::Double(0.1)),
            Datum::Double(f64::from(0.1f32))
        );
    }

    #[test]
    fn fractions_are_truncated_to_the_precision() {
        let dt = DateTime {
            date: Date {
                year: 2020,
                month: 1,
                day: 1,
            },
            hour: 10,
            minute: 0,
            second: 0,
            micro: 789_999,
        };
        let micro = |ty: ColumnType| match ty.coerce(Datum::DateTime(dt)).unwrap() {
            Datum::DateTime(d) => d.micro,
            other => panic!("{other:?}"),
        };
        assert_eq!(micro(ColumnType::DateTime(0)), 0);
        assert_eq!(micro(ColumnType::DateTime(2)), 780_000);
        assert_eq!(micro(ColumnType::Timestamp(3)), 789_000);
        assert_eq!(micro(ColumnType::DateTime(6)), 789_999);
    }
}
