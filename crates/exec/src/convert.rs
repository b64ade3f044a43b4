//! Conversions between the SQL layer's [`Value`] and storage's [`Datum`], result-column
//! descriptions, and the mapping of storage errors to SQL errors.
//!
//! # Writing a value into a column
//!
//! [`store_value`] turns the value an INSERT or UPDATE computed into what its column holds, in
//! two steps: the value becomes a storage value of the column's kind (a string into a number
//! column is read as a number, into a date column as a date, bytes into a text column must be
//! UTF-8), then storage fits it to the column ([`ColumnType::fit`]: range, precision, length,
//! BINARY's padding). Either step can find that the value does not fit. What happens then is
//! MySQL's `sql_mode` ([`WriteMode`]):
//!
//! * **Strict** (`STRICT_TRANS_TABLES` / `STRICT_ALL_TABLES`): the statement fails with
//!   MariaDB's error — 1406 too long, 1264 out of range, 1265 a number followed by other
//!   characters, 1366 not a number or not UTF-8, 1292 not a date.
//! * **Lenient** (neither mode, or INSERT/UPDATE IGNORE): the nearest value the column holds is
//!   stored — the prefix that fits, the type's bound ([`Misfit`] carries both), the number a
//!   string starts with or 0, the zero date, `?` for each byte that is not UTF-8 — and a
//!   warning says so. MariaDB reports one problem per value, and so does this: a string whose
//!   bad bytes became `?` is then cut silently.
//!
//! Some losses are notes in both modes, because MySQL stores the value without complaint:
//! spaces after a number, decimals rounded away, a time dropped from a DATE, a VARCHAR cut only
//! at trailing spaces (a CHAR drops them anyway). Each diagnostic is a [`Warning`] the caller
//! forwards to the statement's diagnostics ([`to_column`], [`report`]), and the messages are
//! MariaDB's: some name the column (`Data truncated for column 'c' at row 2`), some qualify it
//! (``Incorrect integer value: 'x' for column `db`.`t`.`c` at row 2``); the row is the
//! statement's 1-based row (the n-th VALUES row, or the n-th row an UPDATE matched).
//!
//! Dates are read by the SQL layer's one date/time parser ([`shoal_sql::temporal`], whose
//! module doc lists MariaDB's forms and how each reader degrades them): any punctuation between
//! the parts, two-digit years, digits only; a day the month does not have is not a date. NULL is passed
//! through: whether a NOT NULL column takes the implicit default instead depends on the
//! statement (one row of VALUES refuses even when not strict), so the executor decides
//! ([`null_into_not_null`]). [`value_to_datum`] is the strict conversion for values that are
//! not row data (DEFAULT clauses, ALTER's copies).
//!
//! Storage keeps text and binary strings alike as `Datum::Bytes`; the column type tells them
//! apart on the way back ([`datum_to_value`]): BLOB, BINARY and VARBINARY read as
//! [`Value::Bytes`], exactly the stored bytes (a BINARY(n)'s `0x00` padding included),
//! CHAR/VARCHAR/TEXT as [`Value::Str`]. Into a binary string column bytes are stored as they
//! are, and text as its UTF-8 bytes.

use shoal_sql::decimal::Decimal as SqlDecimal;
use shoal_sql::temporal::Time as SqlTime;
use shoal_sql::value::{DateTime as SqlDateTime, SqlType, Value};
use shoal_sql::SqlError;
use shoal_store::{ColumnType, Date, DateTime, Datum, Decimal, Misfit, StoreError};

/// MySQL protocol column type codes (`enum_field_types`).
pub mod mysql_type {
    /// TINYINT.
    pub const TINY: u8 = 1;
    /// SMALLINT.
    pub const SHORT: u8 = 2;
    /// INT.
    pub const LONG: u8 = 3;
    /// FLOAT.
    pub const FLOAT: u8 = 4;
    /// DOUBLE.
    pub const DOUBLE: u8 = 5;
    /// NULL.
    pub const NULL: u8 = 6;
    /// TIMESTAMP.
    pub const TIMESTAMP: u8 = 7;
    /// BIGINT.
    pub const LONGLONG: u8 = 8;
    /// MEDIUMINT.
    pub const INT24: u8 = 9;
    /// DATE.
    pub const DATE: u8 = 10;
    /// TIME.
    pub const TIME: u8 = 11;
    /// DATETIME.
    pub const DATETIME: u8 = 12;
    /// DECIMAL.
    pub const NEWDECIMAL: u8 = 246;
    /// BLOB/TEXT.
    pub const BLOB: u8 = 252;
    /// VARCHAR.
    pub const VAR_STRING: u8 = 253;
    /// CHAR.
    pub const STRING: u8 = 254;
}

/// MySQL column flags.
pub mod flags {
    /// NOT NULL.
    pub const NOT_NULL: u16 = 1;
    /// Part of the primary key.
    pub const PRI_KEY: u16 = 2;
    /// Part of a unique key.
    pub const UNIQUE_KEY: u16 = 4;
    /// Part of a non-unique key.
    pub const MULTIPLE_KEY: u16 = 8;
    /// BLOB/TEXT.
    pub const BLOB: u16 = 16;
    /// UNSIGNED.
    pub const UNSIGNED: u16 = 32;
    /// Binary collation.
    pub const BINARY: u16 = 128;
    /// AUTO_INCREMENT.
    pub const AUTO_INCREMENT: u16 = 512;
    /// Numeric.
    pub const NUM: u16 = 32768;
}

/// A result-set column description (maps 1:1 onto `shoal_proto::Column`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnInfo {
    /// Database of the underlying table ("" for expressions).
    pub schema: String,
    /// Table alias as written ("" for expressions).
    pub table: String,
    /// Underlying table name.
    pub org_table: String,
    /// Column header.
    pub name: String,
    /// Underlying column name.
    pub org_name: String,
    /// MySQL type code ([`mysql_type`]).
    pub column_type: u8,
    /// Flags ([`flags`]).
    pub flags: u16,
    /// Display length.
    pub column_length: u32,
    /// Decimals (31 = not fixed).
    pub decimals: u8,
    /// Character set id (33 utf8 for text, 63 binary for numbers and blobs).
    pub charset: u16,
}

impl ColumnInfo {
    /// A computed column of SQL type `ty`.
    pub fn expr(name: &str, ty: SqlType) -> ColumnInfo {
        let (column_type, len, dec, charset, fl) = match ty {
            SqlType::Null => (mysql_type::NULL, 0, 0, 63, flags::BINARY),
            SqlType::Int => (mysql_type::LONGLONG, 21, 0, 63, flags::NUM | flags::BINARY),
            SqlType::UInt => (
                mysql_type::LONGLONG,
                20,
                0,
                63,
                flags::NUM | flags::BINARY | flags::UNSIGNED,
            ),
            SqlType::Decimal(s) => (
                mysql_type::NEWDECIMAL,
                67,
                s,
                63,
                flags::NUM | flags::BINARY,
            ),
            SqlType::Double => (mysql_type::DOUBLE, 23, 31, 63, flags::NUM | flags::BINARY),
            SqlType::Str => (mysql_type::VAR_STRING, 1024, 31, 33, 0),
            SqlType::Bytes => (mysql_type::VAR_STRING, 1024, 31, 63, flags::BINARY),
            SqlType::Date => (mysql_type::DATE, 10, 0, 63, flags::BINARY),
            SqlType::DateTime(n) => (mysql_type::DATETIME, frac_len(19, n), n, 63, flags::BINARY),
            SqlType::Time(n) => (mysql_type::TIME, frac_len(10, n), n, 63, flags::BINARY),
        };
        ColumnInfo {
            schema: String::new(),
            table: String::new(),
            org_table: String::new(),
            name: name.to_string(),
            org_name: String::new(),
            column_type,
            flags: fl,
            column_length: len,
            decimals: dec,
            charset,
        }
    }

    /// A plain string column (SHOW results, information_schema).
    pub fn text(name: &str) -> ColumnInfo {
        ColumnInfo::expr(name, SqlType::Str)
    }

    /// A BIGINT column (SHOW results, information_schema).
    pub fn int(name: &str) -> ColumnInfo {
        ColumnInfo::expr(name, SqlType::Int)
    }

    /// The SQL type of the values this column carries (from its wire type).
    pub fn sql_type(&self) -> SqlType {
        match self.column_type {
            mysql_type::NULL => SqlType::Null,
            mysql_type::TINY
            | mysql_type::SHORT
            | mysql_type::INT24
            | mysql_type::LONG
            | mysql_type::LONGLONG
                if self.flags & flags::UNSIGNED != 0 =>
            {
                SqlType::UInt
            }
            mysql_type::TINY
            | mysql_type::SHORT
            | mysql_type::INT24
            | mysql_type::LONG
            | mysql_type::LONGLONG => SqlType::Int,
            mysql_type::FLOAT | mysql_type::DOUBLE => SqlType::Double,
            mysql_type::NEWDECIMAL => SqlType::Decimal(self.decimals),
            mysql_type::DATE => SqlType::Date,
            mysql_type::DATETIME | mysql_type::TIMESTAMP => SqlType::DateTime(self.decimals.min(6)),
            mysql_type::TIME => SqlType::Time(self.decimals.min(6)),
            _ if self.charset == 63 => SqlType::Bytes,
            _ => SqlType::Str,
        }
    }

    /// The column of a UNION: the left branch's when both branches' columns have the same wire
    /// type, else a computed column whose type holds both branches' values ([`merge_types`]):
    /// `SELECT int_col ... UNION SELECT 'x'` sent strings in a BIGINT column, which the binary
    /// protocol cannot encode.
    ///
    /// [`merge_types`]: shoal_sql::eval::merge_types
    pub fn union(&self, right: &ColumnInfo) -> ColumnInfo {
        let unsigned = |c: &ColumnInfo| c.flags & flags::UNSIGNED;
        if self.column_type == right.column_type
            && unsigned(self) == unsigned(right)
            && self.decimals == right.decimals
        {
            return self.clone();
        }
        let ty = shoal_sql::eval::merge_types(self.sql_type(), right.sql_type());
        ColumnInfo::expr(&self.name, ty)
    }
}

/// The SQL type a stored column's values have once read.
pub fn sql_type_of(ty: ColumnType) -> SqlType {
    match ty {
        ColumnType::Int { unsigned: true, .. } => SqlType::UInt,
        ColumnType::Int { .. } => SqlType::Int,
        ColumnType::Float(_) | ColumnType::Double(_) => SqlType::Double,
        ColumnType::Decimal { scale, .. } => SqlType::Decimal(scale),
        ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Text => SqlType::Str,
        ColumnType::Blob | ColumnType::Binary(_) | ColumnType::Varbinary(_) => SqlType::Bytes,
        ColumnType::Date => SqlType::Date,
        ColumnType::DateTime(f) | ColumnType::Timestamp(f) => SqlType::DateTime(f),
        ColumnType::Time(f) => SqlType::Time(f),
    }
}

/// The display length of a temporal type of `base` characters with `fsp` fractional digits.
fn frac_len(base: u32, fsp: u8) -> u32 {
    if fsp == 0 {
        base
    } else {
        base + 1 + u32::from(fsp)
    }
}

/// The protocol description of a stored column.
pub fn column_info(
    db: &str,
    table: &str,
    name: &str,
    col: &shoal_store::ColumnDef,
    extra_flags: u16,
) -> ColumnInfo {
    let (t, len, dec, charset, mut fl) = match col.ty {
        ColumnType::Int { bytes, unsigned } => {
            let t = match bytes {
                1 => mysql_type::TINY,
                2 => mysql_type::SHORT,
                3 => mysql_type::INT24,
                4 => mysql_type::LONG,
                _ => mysql_type::LONGLONG,
            };
            let len = match bytes {
                1 => 4,
                2 => 6,
                3 => 9,
                4 => 11,
                _ => 20,
            };
            let u = if unsigned { flags::UNSIGNED } else { 0 };
            (t, len, 0, 63, flags::NUM | flags::BINARY | u)
        }
        ColumnType::Float(None) => (mysql_type::FLOAT, 12, 31, 63, flags::NUM | flags::BINARY),
        // FLOAT(M,D): M wide, D decimals shown.
        ColumnType::Float(Some((m, d))) => (
            mysql_type::FLOAT,
            u32::from(m),
            d,
            63,
            flags::NUM | flags::BINARY,
        ),
        ColumnType::Double(None) => (mysql_type::DOUBLE, 22, 31, 63, flags::NUM | flags::BINARY),
        ColumnType::Double(Some((m, d))) => (
            mysql_type::DOUBLE,
            u32::from(m),
            d,
            63,
            flags::NUM | flags::BINARY,
        ),
        ColumnType::Decimal { precision, scale } => (
            mysql_type::NEWDECIMAL,
            u32::from(precision) + 2,
            scale,
            63,
            flags::NUM | flags::BINARY,
        ),
        ColumnType::Char(n) => (mysql_type::STRING, n * 4, 0, 45, 0),
        ColumnType::Varchar(n) => (mysql_type::VAR_STRING, n * 4, 0, 45, 0),
        ColumnType::Text => (mysql_type::BLOB, 262_140, 0, 45, flags::BLOB),
        ColumnType::Blob => (mysql_type::BLOB, 65_535, 0, 63, flags::BLOB | flags::BINARY),
        // As MariaDB describes them: CHAR/VARCHAR wire types in the binary character set, the
        // length in bytes.
        ColumnType::Binary(n) => (mysql_type::STRING, n, 0, 63, flags::BINARY),
        ColumnType::Varbinary(n) => (mysql_type::VAR_STRING, n, 0, 63, flags::BINARY),
        ColumnType::Date => (mysql_type::DATE, 10, 0, 63, flags::BINARY),
        // The fraction's digits are the decimals (the wire shows exactly that many), and
        // the display length counts them with their point.
        ColumnType::DateTime(f) => (mysql_type::DATETIME, frac_len(19, f), f, 63, flags::BINARY),
        ColumnType::Timestamp(f) => (mysql_type::TIMESTAMP, frac_len(19, f), f, 63, flags::BINARY),
        // `-838:59:59` is ten characters.
        ColumnType::Time(f) => (mysql_type::TIME, frac_len(10, f), f, 63, flags::BINARY),
    };
    if !col.nullable {
        fl |= flags::NOT_NULL;
    }
    if col.auto_increment {
        fl |= flags::AUTO_INCREMENT;
    }
    ColumnInfo {
        schema: db.to_string(),
        table: table.to_string(),
        org_table: table.to_string(),
        name: name.to_string(),
        org_name: col.name.clone(),
        column_type: t,
        flags: fl | extra_flags,
        column_length: len,
        decimals: dec,
        charset,
    }
}

/// An SQL date/time as storage's.
fn sql_to_store(d: &SqlDateTime) -> DateTime {
    DateTime {
        date: Date {
            year: d.year,
            month: d.month,
            day: d.day,
        },
        hour: d.hour,
        minute: d.minute,
        second: d.second,
        micro: d.micro,
    }
}

fn date_to_sql(d: Date) -> SqlDateTime {
    SqlDateTime {
        year: d.year,
        month: d.month,
        day: d.day,
        hour: 0,
        minute: 0,
        second: 0,
        micro: 0,
    }
}

/// A stored value of a column of type `ty` as an SQL value (a BLOB's bytes as a binary
/// string, a text column's as text).
pub fn datum_to_value(d: &Datum, ty: ColumnType) -> Value {
    match d {
        Datum::Null => Value::Null,
        Datum::Int(v) => Value::Int(*v),
        Datum::UInt(v) => Value::UInt(*v),
        // A FLOAT's single-precision value, also for rows older builds wrote unrounded.
        Datum::Double(v) if matches!(ty, ColumnType::Float(_)) => {
            Value::Double(f64::from(*v as f32))
        }
        Datum::Double(v) => Value::Double(*v),
        Datum::Decimal(x) => Value::Decimal(SqlDecimal::new(x.unscaled, u32::from(x.scale))),
        Datum::Bytes(b) if ty.is_binary_string() => Value::Bytes(b.clone()),
        // Text columns hold UTF-8 (checked on the way in).
        Datum::Bytes(b) => Value::Str(String::from_utf8_lossy(b).into_owned()),
        Datum::Date(d) => Value::Date(date_to_sql(*d)),
        Datum::DateTime(dt) => {
            let mut v = date_to_sql(dt.date);
            v.hour = dt.hour;
            v.minute = dt.minute;
            v.second = dt.second;
            v.micro = dt.micro;
            let fsp = match ty {
                ColumnType::DateTime(f) | ColumnType::Timestamp(f) => f,
                _ => shoal_sql::value::natural_fsp(&v),
            };
            Value::DateTime(v, fsp)
        }
        Datum::Time(m) => {
            let fsp = match ty {
                ColumnType::Time(f) => f,
                _ => 6,
            };
            Value::Time(SqlTime::from_micros(*m, fsp))
        }
    }
}

/// [`datum_to_value`] of a datum the caller no longer needs: a string keeps its bytes (no
/// copy).
#[inline]
pub fn datum_into_value(d: Datum, ty: ColumnType) -> Value {
    match d {
        // The kinds every scan meets, without the general conversion's call.
        Datum::Null => Value::Null,
        Datum::Int(v) => Value::Int(v),
        Datum::UInt(v) => Value::UInt(v),
        Datum::Bytes(b) if ty.is_binary_string() => Value::Bytes(b),
        Datum::Bytes(b) => match shoal_collation::string_from_utf8(b) {
            Ok(s) => Value::Str(s),
            Err(e) => Value::Str(String::from_utf8_lossy(e.as_bytes()).into_owned()),
        },
        d => datum_to_value(&d, ty),
    }
}

/// How a write treats a value its column cannot hold as given: MySQL's `sql_mode` strictness.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WriteMode {
    /// `STRICT_TRANS_TABLES` or `STRICT_ALL_TABLES` (every table here is transactional, so
    /// either one): the statement fails (1406, 1264, 1366, 1292, ...).
    #[default]
    Strict,
    /// Neither, or INSERT/UPDATE IGNORE: the nearest value the column holds is stored and a
    /// warning says so (see the module doc).
    Lenient,
}

/// Where a value is written, for the messages: MariaDB names the column alone in some
/// (`Data truncated for column 'c' at row 2`) and qualified in others
/// (``Incorrect integer value: 'x' for column `db`.`t`.`c` at row 2``).
#[derive(Debug, Clone, Copy)]
pub struct Cell<'a> {
    /// Database of the table.
    pub db: &'a str,
    /// The table.
    pub table: &'a str,
    /// The column.
    pub column: &'a str,
    /// 1-based number of the row within the statement.
    pub row: u64,
}

type Diag = (shoal_errors::Code, String);

impl Cell<'_> {
    /// A cell of an unnamed table (statements whose messages never name one).
    fn bare(column: &str, row: usize) -> Cell<'_> {
        Cell {
            db: "",
            table: "",
            column,
            row: row as u64,
        }
    }

    /// 1265 `Data truncated for column 'c' at row N`.
    fn truncated(&self) -> Diag {
        (
            shoal_errors::WARN_DATA_TRUNCATED,
            format!(
                "Data truncated for column '{}' at row {}",
                self.column, self.row
            ),
        )
    }

    /// 1264 `Out of range value for column 'c' at row N`.
    fn out_of_range(&self) -> Diag {
        (
            shoal_errors::ER_WARN_DATA_OUT_OF_RANGE,
            format!(
                "Out of range value for column '{}' at row {}",
                self.column, self.row
            ),
        )
    }

    /// 1406 `Data too long for column 'c' at row N`.
    fn too_long(&self) -> Diag {
        (
            shoal_errors::ER_DATA_TOO_LONG,
            format!(
                "Data too long for column '{}' at row {}",
                self.column, self.row
            ),
        )
    }

    /// ``Incorrect <kind> value: '<v>' for column `db`.`t`.`c` at row N`` with `code` (1366
    /// for numbers and strings, 1292 for dates).
    fn incorrect(&self, code: shoal_errors::Code, kind: &str, shown: &str) -> Diag {
        (
            code,
            format!(
                "Incorrect {kind} value: '{shown}' for column `{}`.`{}`.`{}` at row {}",
                self.db, self.table, self.column, self.row
            ),
        )
    }
}

/// A note or warning a conversion raised, for the statement's diagnostics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// Level `Note` (else `Warning`).
    pub note: bool,
    /// MySQL error code.
    pub code: u16,
    /// The message.
    pub message: String,
}

/// One value's conversion: refuse (strict) or store the nearest value with a warning
/// (lenient), and remember whether it warned (MySQL reports one problem per value).
struct Fit<'a, 'w> {
    at: &'a Cell<'a>,
    mode: WriteMode,
    out: &'w mut Vec<Warning>,
    warned: bool,
}

impl Fit<'_, '_> {
    /// A misfit strict mode refuses with `strict`; otherwise the warning `lenient`.
    fn refuse(&mut self, strict: Diag, lenient: Diag) -> Result<(), SqlError> {
        match self.mode {
            WriteMode::Strict => Err(SqlError::coded(strict.0, strict.1)),
            WriteMode::Lenient => {
                self.warned = true;
                self.out.push(Warning {
                    note: false,
                    code: lenient.0.code,
                    message: lenient.1,
                });
                Ok(())
            }
        }
    }

    /// A misfit with the same message either way.
    fn misfit(&mut self, d: Diag) -> Result<(), SqlError> {
        self.refuse(d.clone(), d)
    }

    /// A note, in either mode.
    fn note(&mut self, (code, message): Diag) {
        self.out.push(Warning {
            note: true,
            code: code.code,
            message,
        });
    }
}

/// 1366 for bytes that are not UTF-8 stored into a text column, with MariaDB's message: the
/// value from its first bad byte, at most 6 bytes, printable ASCII as itself and any other
/// byte as `\xHH`, `...` when cut.
fn incorrect_string(bad: &[u8], at: &Cell) -> Diag {
    let mut shown: String = bad
        .iter()
        .take(6)
        .map(|&b| match b {
            0x20..=0x7E => char::from(b).to_string(),
            _ => format!("\\x{b:02X}"),
        })
        .collect();
    if bad.len() > 6 {
        shown.push_str("...");
    }
    at.incorrect(
        shoal_errors::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD,
        "string",
        &shown,
    )
}

/// `b` with each byte that is not part of a UTF-8 character replaced by `?` (what a
/// non-strict write stores into a text column).
fn replace_bad_utf8(mut b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    loop {
        match std::str::from_utf8(b) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let good = e.valid_up_to();
                out.push_str(std::str::from_utf8(&b[..good]).expect("valid up to here"));
                let bad = e.error_len().unwrap_or(b.len() - good);
                out.extend(std::iter::repeat_n('?', bad));
                b = &b[good + bad..];
            }
        }
    }
}

/// What follows the number a string starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rest {
    /// Nothing.
    None,
    /// Spaces only (a note in MySQL).
    Spaces,
    /// Something else.
    Other,
}

/// The longest prefix of `s` (after leading whitespace) that reads as a number — sign,
/// digits, a point and digits, an exponent — and what follows it.
fn numeric_prefix(s: &str) -> (&str, Rest) {
    let ws = [' ', '\t', '\n', '\r'];
    let t = s.trim_start_matches(ws);
    let b = t.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits_from = i;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let mut digits = i - digits_from;
    if b.get(i) == Some(&b'.') {
        let mut j = i + 1;
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        digits += j - i - 1;
        if digits > 0 {
            i = j;
        }
    }
    if digits == 0 {
        return ("", Rest::Other);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp_from = j;
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        if j > exp_from {
            i = j;
        }
    }
    let rest = match &t[i..] {
        "" => Rest::None,
        r if r.trim_matches(ws).is_empty() => Rest::Spaces,
        _ => Rest::Other,
    };
    (&t[..i], rest)
}

/// A numeric string as a storage value: DECIMAL when it has no exponent (exact), else DOUBLE
/// (beyond a double: the largest one, or for a `floating` column the infinity its range refuses).
fn number_datum(t: &str, floating: bool) -> Option<Datum> {
    if let Some(x) = Decimal::parse(t) {
        return Some(Datum::Decimal(x));
    }
    match t.parse::<f64>() {
        Ok(f) if f.is_finite() => Some(Datum::Double(f)),
        // Beyond a double: the largest one of its sign, which every numeric column clips; but
        // FLOAT and DOUBLE see the infinity (out of their range: 1264 and that bound).
        Ok(f) if f.is_infinite() && floating => Some(Datum::Double(f)),
        Ok(f) if f.is_infinite() => Some(Datum::Double(f64::MAX.copysign(f))),
        _ => None,
    }
}

/// Whether storing `d` with `scale` fractional digits drops digits that are not zero (MySQL
/// notes it: `1.005` into DECIMAL(5,2)).
fn rounds_away(d: &Datum, scale: u8) -> bool {
    let x = match d {
        Datum::Decimal(x) => *x,
        // The shortest decimal that reads back as the double.
        Datum::Double(f) if f.is_finite() => match Decimal::parse(&format!("{f}")) {
            Some(x) => x,
            None => return false,
        },
        _ => return false,
    };
    x.scale > scale
        && x.rescale(scale)
            .and_then(|r| r.rescale(x.scale))
            .is_some_and(|r| r != x)
}

/// The stored form of a date and time in a column of type `ty` (DATE keeps the date).
fn temporal_datum(ty: ColumnType, dt: DateTime) -> Datum {
    match ty {
        ColumnType::Date => Datum::Date(dt.date),
        _ => Datum::DateTime(dt),
    }
}

/// Converts an SQL value to a storage value for a column of type `ty` in strict mode (the
/// messages name the column only), then coerces it to the column's canonical form. `row` is
/// 1-based, for messages. Notes (decimals rounded, a time dropped) are dropped: for values
/// that are not a statement's row data (DEFAULT clauses, ALTER's copies).
pub fn value_to_datum(v: &Value, ty: ColumnType, col: &str, row: usize) -> Result<Datum, SqlError> {
    store_value(
        v,
        ty,
        &Cell::bare(col, row),
        WriteMode::Strict,
        &mut Vec::new(),
    )
}

/// Converts an SQL value to the storage value column `at` of type `ty` holds (see the module
/// doc): in strict `mode` a value that does not fit is an error; in lenient mode it becomes
/// the nearest value the column holds and a warning is added to `out`. Notes (a VARCHAR value
/// cut at trailing spaces, decimals rounded, a time dropped from a date) are added in both
/// modes. NULL is returned as NULL (the caller knows whether the column takes it).
pub fn store_value(
    v: &Value,
    ty: ColumnType,
    at: &Cell,
    mode: WriteMode,
    out: &mut Vec<Warning>,
) -> Result<Datum, SqlError> {
    let mut fit = Fit {
        at,
        mode,
        out,
        warned: false,
    };
    let text;
    let v = match v {
        Value::Bytes(b) if ty.is_binary_string() => {
            return fit_column(ty, Datum::Bytes(b.clone()), &mut fit)
        }
        // Anywhere else bytes are read as text, which they must be: when not strict, each
        // byte that is not part of a character becomes `?`.
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => {
                text = Value::Str(s.to_string());
                &text
            }
            Err(e) => {
                fit.misfit(incorrect_string(&b[e.valid_up_to()..], at))?;
                text = Value::Str(replace_bad_utf8(b));
                &text
            }
        },
        v => v,
    };
    if let ColumnType::Time(_) = ty {
        if v.is_null() {
            return Ok(Datum::Null);
        }
        let d = time_write(v, at, &mut fit)?;
        return fit_column(ty, d, &mut fit);
    }
    let temporal = matches!(
        ty,
        ColumnType::Date | ColumnType::DateTime(_) | ColumnType::Timestamp(_)
    );
    let d = match v {
        Value::Bytes(_) => unreachable!("read as text above"),
        Value::Null => return Ok(Datum::Null),
        // A number as a date: YYYYMMDD[hhmmss] or YYMMDD[hhmmss], a fraction the microseconds.
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) if temporal => {
            let wrong = || {
                let kind = if ty == ColumnType::Date {
                    "date"
                } else {
                    "datetime"
                };
                let n = v.to_text().unwrap_or_default();
                at.incorrect(shoal_errors::ER_TRUNCATED_WRONG_VALUE, kind, &n)
            };
            temporal_write(
                ty,
                shoal_sql::temporal::datetime_of_number(v),
                wrong,
                &mut fit,
            )?
        }
        Value::Int(i) => Datum::Int(*i),
        Value::UInt(u) => Datum::UInt(*u),
        Value::Double(f) => Datum::Double(*f),
        Value::Decimal(x) => {
            let x = if x.scale > 38 {
                x.rescale(38).unwrap_or(*x)
            } else {
                *x
            };
            Datum::Decimal(Decimal {
                unscaled: x.mant,
                scale: x.scale as u8,
            })
        }
        // A TIME into another column: a date column takes it on today's date, as MariaDB
        // converts it; any other its number or text.
        Value::Time(t) => match ty {
            ColumnType::Date | ColumnType::DateTime(_) | ColumnType::Timestamp(_) => {
                let dt = sql_to_store(&shoal_sql::value::time_on_today(t));
                if ty == ColumnType::Date {
                    fit.note(at.truncated());
                }
                temporal_datum(ty, dt)
            }
            ColumnType::Int { .. } => Datum::Int(v.to_i128().unwrap_or(0) as i64),
            ColumnType::Decimal { .. } | ColumnType::Float(_) | ColumnType::Double(_) => {
                let x = v.to_decimal().unwrap_or(SqlDecimal::from_i128(0));
                Datum::Decimal(Decimal {
                    unscaled: x.mant,
                    scale: x.scale as u8,
                })
            }
            _ => Datum::Bytes(v.to_text().unwrap_or_default().into_bytes()),
        },
        Value::Date(d) | Value::DateTime(d, _) => {
            let dt = sql_to_store(d);
            match ty {
                ColumnType::Date => {
                    if (dt.hour, dt.minute, dt.second) != (0, 0, 0) {
                        fit.note(at.truncated());
                    }
                    Datum::Date(dt.date)
                }
                ColumnType::DateTime(_) => Datum::DateTime(dt),
                ColumnType::Timestamp(_) => {
                    let wrong = || {
                        let shown = v.to_text().unwrap_or_default();
                        at.incorrect(shoal_errors::ER_TRUNCATED_WRONG_VALUE, "datetime", &shown)
                    };
                    Datum::DateTime(timestamp_range(dt, wrong, &mut fit)?)
                }
                _ => Datum::Bytes(v.to_text().unwrap_or_default().into_bytes()),
            }
        }
        Value::Str(s) => match ty {
            ColumnType::Int { .. }
            | ColumnType::Decimal { .. }
            | ColumnType::Float(_)
            | ColumnType::Double(_) => {
                let (prefix, rest) = numeric_prefix(s);
                match (
                    number_datum(
                        prefix,
                        matches!(ty, ColumnType::Float(_) | ColumnType::Double(_)),
                    ),
                    rest,
                ) {
                    (Some(d), Rest::None) => d,
                    // `'7 '`: a note, in either mode.
                    (Some(d), Rest::Spaces) => {
                        fit.note(at.truncated());
                        d
                    }
                    // `'12abc'`: the number it starts with.
                    (Some(d), Rest::Other) => {
                        fit.misfit(at.truncated())?;
                        d
                    }
                    // `'abc'`, `''`: zero.
                    (None, _) => {
                        let kind = match ty {
                            ColumnType::Int { .. } => "integer",
                            ColumnType::Decimal { .. } => "decimal",
                            _ => "double",
                        };
                        fit.misfit(at.incorrect(
                            shoal_errors::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD,
                            kind,
                            s,
                        ))?;
                        Datum::Int(0)
                    }
                }
            }
            ColumnType::Date | ColumnType::DateTime(_) | ColumnType::Timestamp(_) => {
                let wrong = || {
                    let kind = if ty == ColumnType::Date {
                        "date"
                    } else {
                        "datetime"
                    };
                    at.incorrect(shoal_errors::ER_TRUNCATED_WRONG_VALUE, kind, s)
                };
                temporal_write(ty, shoal_sql::temporal::read_datetime(s), wrong, &mut fit)?
            }
            _ => Datum::Bytes(s.clone().into_bytes()),
        },
    };
    if let ColumnType::Decimal { scale, .. } = ty {
        if !fit.warned && rounds_away(&d, scale) {
            let r = fit_column(ty, d, &mut fit)?;
            if !fit.warned {
                fit.note(at.truncated());
            }
            return Ok(r);
        }
    }
    fit_column(ty, d, &mut fit)
}

/// What a TIME column stores for a non-NULL value `v`, as MariaDB converts it: a TIME as it is;
/// a DATE or DATETIME, or a text or number written as a datetime, its time of day (with note
/// 1265, the date dropped); any other text or number read as a time ([`shoal_sql::temporal`]).
/// A text with something after the time, one that is no time, and a time past the range are
/// refused in strict mode (1292 `Incorrect time value`), and otherwise stored (the time read,
/// `00:00:00`, the range's bound) with warning 1265, 1265 and 1264 respectively. The fraction is
/// truncated to the column's digits silently, as MariaDB does.
fn time_write(v: &Value, at: &Cell, fit: &mut Fit) -> Result<Datum, SqlError> {
    use shoal_sql::temporal;
    let shown = || v.to_text().unwrap_or_default();
    let wrong = || at.incorrect(shoal_errors::ER_TRUNCATED_WRONG_VALUE, "time", &shown());
    let read = match v {
        Value::Time(t) => return Ok(Datum::Time(t.micros())),
        Value::Date(d) | Value::DateTime(d, _) => {
            fit.note(at.truncated());
            return Ok(Datum::Time(SqlTime::of(d).micros()));
        }
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => {
            let f = v.to_f64().unwrap_or(0.0);
            if f.abs() >= 1e7 {
                match temporal::datetime_of_number(v) {
                    Some(r) if !r.trailing => {
                        fit.note(at.truncated());
                        return Ok(Datum::Time(SqlTime::of(&r.value).micros()));
                    }
                    _ => {
                        fit.refuse(wrong(), at.out_of_range())?;
                        let max = shoal_store::MAX_TIME_MICROS;
                        return Ok(Datum::Time(if f < 0.0 { -max } else { max }));
                    }
                }
            }
            temporal::read_time(shown().as_bytes())
        }
        other => temporal::read_time(other.to_bytes().unwrap_or_default().as_ref()),
    };
    let Some(r) = read else {
        fit.refuse(wrong(), at.truncated())?;
        return Ok(Datum::Time(0));
    };
    if r.clipped {
        fit.refuse(wrong(), at.out_of_range())?;
        let max = shoal_store::MAX_TIME_MICROS;
        return Ok(Datum::Time(if r.value.neg { -max } else { max }));
    }
    if r.trailing {
        fit.refuse(wrong(), at.truncated())?;
    } else if r.datetime {
        fit.note(at.truncated());
    }
    Ok(Datum::Time(r.value.micros()))
}

/// What a date column stores for a text or number `read` as a date ([`shoal_sql::temporal`]):
/// the value, with a note when fraction digits past the sixth or (into a DATE) a time of day
/// were dropped; the value it starts with when something follows it, and the zero date when it
/// is no date, each refused in strict mode (`wrong`, 1292) and a warning 1265 otherwise.
fn temporal_write(
    ty: ColumnType,
    read: Option<shoal_sql::temporal::DateTimeRead>,
    wrong: impl Fn() -> Diag,
    fit: &mut Fit,
) -> Result<Datum, SqlError> {
    let Some(r) = read else {
        fit.refuse(wrong(), fit.at.truncated())?;
        return Ok(ty.implicit_default());
    };
    let dt = sql_to_store(&r.value);
    if r.trailing {
        // `'2024-01-02abc'`: the date it starts with.
        fit.refuse(wrong(), fit.at.truncated())?;
    } else {
        let time = (dt.hour, dt.minute, dt.second, dt.micro) != (0, 0, 0, 0);
        if r.extra_digits || (ty == ColumnType::Date && time) {
            fit.note(fit.at.truncated());
        }
    }
    if matches!(ty, ColumnType::Timestamp(_)) && !r.trailing {
        return Ok(Datum::DateTime(timestamp_range(dt, wrong, fit)?));
    }
    Ok(temporal_datum(ty, dt))
}

/// The first and last second a TIMESTAMP holds (UTC: shoal has no session time zone).
const TIMESTAMP_MIN: (u16, u8, u8, u8, u8, u8) = (1970, 1, 1, 0, 0, 1);
const TIMESTAMP_MAX: (u16, u8, u8, u8, u8, u8) = (2038, 1, 19, 3, 14, 7);

/// A value for a TIMESTAMP column: the zero value, or a real date (no zero month or day) within
/// [`TIMESTAMP_MIN`]..=[`TIMESTAMP_MAX`]. Anything else is refused in strict mode (`wrong`,
/// 1292) and stored as the zero value otherwise, with MariaDB's warning: 1265 for a zero part,
/// 1264 for out of range.
fn timestamp_range(
    dt: DateTime,
    wrong: impl Fn() -> Diag,
    fit: &mut Fit,
) -> Result<DateTime, SqlError> {
    let zero = sql_to_store(&SqlDateTime::ZERO);
    let secs = (
        dt.date.year,
        dt.date.month,
        dt.date.day,
        dt.hour,
        dt.minute,
        dt.second,
    );
    if secs == (0, 0, 0, 0, 0, 0) {
        return Ok(dt);
    }
    if dt.date.month == 0 || dt.date.day == 0 {
        fit.refuse(wrong(), fit.at.truncated())?;
        return Ok(zero);
    }
    if !(TIMESTAMP_MIN..=TIMESTAMP_MAX).contains(&secs) {
        fit.refuse(wrong(), fit.at.out_of_range())?;
        return Ok(zero);
    }
    Ok(dt)
}

/// Column `col` of `table`'s value at statement row `row` ([`store_value`]); its notes and
/// warnings go to the statement's diagnostics and are counted in `count`.
pub fn to_column(
    v: &Value,
    table: &shoal_store::TableDef,
    col: usize,
    row: usize,
    mode: WriteMode,
    ctx: &mut dyn shoal_sql::eval::Context,
    count: &mut u64,
) -> Result<Datum, SqlError> {
    let c = &table.columns[col];
    let at = Cell {
        db: &table.db,
        table: &table.name,
        column: &c.name,
        row: row as u64,
    };
    let mut out = Vec::new();
    let d = store_value(v, c.ty, &at, mode, &mut out)?;
    let d = fit_size(d, c, &at, mode, &mut out, true)?;
    report(out, ctx, count);
    Ok(d)
}

/// A TEXT / BLOB value within its column's declared size ([`shoal_store::ColumnDef::max_bytes`]):
/// longer is 1406 in strict `mode`, otherwise cut to the size (at a character boundary for
/// text) with warning 1265, as MariaDB does. MariaDB's INSERT and UPDATE (`write`, not ALTER)
/// warn 1366 `Incorrect string value` instead when the limit falls inside a character.
pub fn fit_size(
    d: Datum,
    col: &shoal_store::ColumnDef,
    at: &Cell,
    mode: WriteMode,
    out: &mut Vec<Warning>,
    write: bool,
) -> Result<Datum, SqlError> {
    let max = match (col.max_bytes, &d) {
        (Some(max), Datum::Bytes(b)) if b.len() > max as usize => max as usize,
        _ => return Ok(d),
    };
    let Datum::Bytes(mut b) = d else {
        return Ok(d);
    };
    let mut fit = Fit {
        at,
        mode,
        out,
        warned: false,
    };
    let mut cut = max;
    if col.ty.is_text() {
        // Back to the start of the character the limit falls in.
        while cut > 0 && (b[cut] & 0xC0) == 0x80 {
            cut -= 1;
        }
    }
    let lenient = if write && cut < max {
        incorrect_string(&b[cut..], at)
    } else {
        at.truncated()
    };
    fit.refuse(at.too_long(), lenient)?;
    b.truncate(cut);
    Ok(Datum::Bytes(b))
}

/// NULL stored into NOT NULL column `col`: error 1048, or where MySQL lets it pass
/// (`lenient`: not strict and several rows or an UPDATE, or IGNORE) the type's implicit
/// default (0, '', the zero date) with warning 1048. A TIMESTAMP column takes the current time
/// instead, silently and in every mode, as MariaDB assigns it (even with
/// `explicit_defaults_for_timestamp`).
pub fn null_into_not_null(
    col: &shoal_store::ColumnDef,
    lenient: bool,
    ctx: &mut dyn shoal_sql::eval::Context,
    count: &mut u64,
) -> Result<Datum, SqlError> {
    if matches!(col.ty, ColumnType::Timestamp(_)) {
        let mut now = sql_to_store(&ctx.now());
        now.micro = 0;
        return Ok(Datum::DateTime(now));
    }
    if !lenient {
        return Err(store_err(StoreError::NullNotAllowed(col.name.clone())));
    }
    let w = Warning {
        note: false,
        code: shoal_errors::ER_BAD_NULL_ERROR.code,
        message: StoreError::NullNotAllowed(col.name.clone()).to_string(),
    };
    report(vec![w], ctx, count);
    Ok(col.ty.implicit_default())
}

/// Adds `warnings` to the statement's diagnostics, counting them in `count`.
pub fn report(warnings: Vec<Warning>, ctx: &mut dyn shoal_sql::eval::Context, count: &mut u64) {
    for w in warnings {
        *count += 1;
        if w.note {
            ctx.note(w.code, w.message);
        } else {
            ctx.warn(w.code, w.message);
        }
    }
}

/// [`ColumnType::fit`] with its refusals as MySQL's: too long is 1406 (strict) or 1265 and
/// the prefix that fits — but a VARCHAR value cut at trailing spaces only is stored with note
/// 1265 in either mode, and a CHAR value so cut silently (CHAR drops trailing spaces anyway);
/// out of range is 1264 and the type's bound.
fn fit_column(ty: ColumnType, d: Datum, fit: &mut Fit) -> Result<Datum, SqlError> {
    match ty.fit(d) {
        Ok(d) => Ok(d),
        Err(Misfit::TooLong {
            nearest,
            spaces_only: true,
            ..
        }) => {
            if matches!(ty, ColumnType::Varchar(_)) {
                fit.note(fit.at.truncated());
            }
            Ok(nearest)
        }
        // One problem per value: a string whose bad bytes were replaced is cut silently.
        Err(Misfit::TooLong { nearest, .. }) if fit.warned => Ok(nearest),
        Err(Misfit::TooLong { nearest, .. }) => {
            fit.refuse(fit.at.too_long(), fit.at.truncated())?;
            Ok(nearest)
        }
        Err(Misfit::OutOfRange { nearest, .. }) => {
            fit.misfit(fit.at.out_of_range())?;
            Ok(nearest)
        }
        Err(Misfit::Invalid(detail)) => Err(SqlError::coded(
            shoal_errors::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD,
            format!(
                "Incorrect value for column '{}' at row {}: {detail}",
                fit.at.column, fit.at.row
            ),
        )),
    }
}

/// A storage error as an SQL error (same code, SQLSTATE and message).
pub fn store_err(e: StoreError) -> SqlError {
    match e {
        StoreError::Interrupted => SqlError::Interrupted,
        e => SqlError::other(e.mysql_code(), e.sqlstate(), e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dt(y: u16, mo: u8, d: u8, h: u8, mi: u8, s: u8, micro: u32) -> DateTime {
        DateTime {
            date: Date {
                year: y,
                month: mo,
                day: d,
            },
            hour: h,
            minute: mi,
            second: s,
            micro,
        }
    }

    #[test]
    fn numeric_prefixes() {
        for (s, prefix, rest) in [
            ("12", "12", Rest::None),
            ("  -1.5e3", "-1.5e3", Rest::None),
            ("7 ", "7", Rest::Spaces),
            ("\t7\n", "7", Rest::Spaces),
            ("12abc", "12", Rest::Other),
            ("1e", "1", Rest::Other),
            ("1e+", "1", Rest::Other),
            (".5", ".5", Rest::None),
            ("7.", "7.", Rest::None),
            ("0x1A", "0", Rest::Other),
            ("--1", "", Rest::Other),
            ("-", "", Rest::Other),
            (".", "", Rest::Other),
            ("", "", Rest::Other),
        ] {
            assert_eq!(numeric_prefix(s), (prefix, rest), "{s:?}");
        }
    }

    fn run(v: Value, ty: ColumnType, mode: WriteMode) -> (Result<Datum, SqlError>, Vec<Warning>) {
        let at = Cell {
            db: "d",
            table: "t",
            column: "c",
            row: 3,
        };
        let mut out = Vec::new();
        let r = store_value(&v, ty, &at, mode, &mut out);
        (r, out)
    }

    fn codes(w: &[Warning]) -> Vec<(bool, u16)> {
        w.iter().map(|w| (w.note, w.code)).collect()
    }

    /// The same values refused in strict mode and stored as near as they fit otherwise, with
    /// MariaDB's codes; notes in both modes.
    #[test]
    fn strict_refuses_what_lenient_stores_with_a_warning() {
        use WriteMode::*;
        let s = |x: &str| Value::Str(x.to_string());
        let tiny = ColumnType::Int {
            bytes: 1,
            unsigned: false,
        };
        let dec = ColumnType::Decimal {
            precision: 5,
            scale: 2,
        };
        let d = |x: &str| Datum::Decimal(Decimal::parse(x).unwrap());
        for (v, ty, stored, code) in [
            (s("abcdef"), ColumnType::Char(3), Datum::text("abc"), 1406),
            (
                Value::Bytes(vec![1, 2, 3]),
                ColumnType::Varbinary(2),
                Datum::Bytes(vec![1, 2]),
                1406,
            ),
            (Value::Int(300), tiny, Datum::Int(127), 1264),
            (s("12abc"), tiny, Datum::Int(12), 1265),
            (s("abc"), tiny, Datum::Int(0), 1366),
            (s("x"), dec, d("0.00"), 1366),
            (s("9999"), dec, d("999.99"), 1264),
            (
                s("abc"),
                ColumnType::Date,
                Datum::Date(Date::unpack(0)),
                1292,
            ),
            (
                s("2024-01-02abc"),
                ColumnType::Date,
                Datum::Date(dt(2024, 1, 2, 0, 0, 0, 0).date),
                1292,
            ),
            (
                Value::Int(20240230),
                ColumnType::Date,
                Datum::Date(Date::unpack(0)),
                1292,
            ),
            (
                Value::Bytes(vec![0x61, 0xFF, 0x62]),
                ColumnType::Text,
                Datum::text("a?b"),
                1366,
            ),
        ] {
            let (r, _) = run(v.clone(), ty, Strict);
            assert_eq!(
                r.map_err(|e| e.code()),
                Err(code),
                "strict {v:?} into {ty:?}"
            );
            let (r, w) = run(v.clone(), ty, Lenient);
            assert_eq!(r.unwrap(), stored, "lenient {v:?} into {ty:?}");
            assert_eq!(w.len(), 1, "{v:?}: {w:?}");
            assert!(!w[0].note);
            // Lenient mode's code for a cut string and a non-date is 1265.
            let lenient_code = match code {
                1406 | 1292 => 1265,
                c => c,
            };
            assert_eq!(w[0].code, lenient_code, "{v:?}: {w:?}");
        }
        // Notes, in both modes.
        for mode in [Strict, Lenient] {
            let (r, w) = run(s("7 "), tiny, mode);
            assert_eq!((r.unwrap(), codes(&w)), (Datum::Int(7), vec![(true, 1265)]));
            let (r, w) = run(s("1.005"), dec, mode);
            assert_eq!((r.unwrap(), codes(&w)), (d("1.01"), vec![(true, 1265)]));
            let (r, w) = run(s("1.2500"), dec, mode);
            assert_eq!((r.unwrap(), codes(&w)), (d("1.25"), vec![]));
            let (r, w) = run(s("ab  "), ColumnType::Varchar(2), mode);
            assert_eq!(
                (r.unwrap(), codes(&w)),
                (Datum::text("ab"), vec![(true, 1265)])
            );
            let (r, w) = run(s("ab  "), ColumnType::Char(2), mode);
            assert_eq!((r.unwrap(), codes(&w)), (Datum::text("ab"), vec![]));
            let (r, w) = run(s("2024-01-02 03:04:05"), ColumnType::Date, mode);
            assert_eq!(
                (r.unwrap(), codes(&w)),
                (
                    Datum::Date(dt(2024, 1, 2, 0, 0, 0, 0).date),
                    vec![(true, 1265)]
                )
            );
        }
        // One problem per value: bad bytes replaced, then cut without a second warning.
        let (r, w) = run(
            Value::Bytes(vec![0x61, 0xE2, 0x82, 0xFF, 0x62]),
            ColumnType::Varchar(3),
            Lenient,
        );
        assert_eq!(r.unwrap(), Datum::text("a??"));
        assert_eq!(codes(&w), vec![(false, 1366)]);
        // MariaDB's messages.
        let (_, w) = run(s("abc"), tiny, Lenient);
        assert_eq!(
            w[0].message,
            "Incorrect integer value: 'abc' for column `d`.`t`.`c` at row 3"
        );
        let (_, w) = run(
            Value::Bytes(vec![0xE2, 0x82, 0xFF, 0xFF, 0x41, 0xC3, 0xA9]),
            ColumnType::Text,
            Lenient,
        );
        assert_eq!(
            w[0].message,
            "Incorrect string value: '\\xE2\\x82\\xFF\\xFFA\\xC3...' for column `d`.`t`.`c` at row 3"
        );
        let (r, _) = run(s("abcdef"), ColumnType::Char(3), Strict);
        assert_eq!(
            r.unwrap_err().to_string(),
            "Data too long for column 'c' at row 3"
        );
    }
}
