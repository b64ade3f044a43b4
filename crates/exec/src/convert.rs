//! Conversions between the SQL layer's [`Value`] and storage's [`Datum`], result-column
//! descriptions, and the mapping of storage errors to SQL errors.
//!
//! Writing a value into a column follows MySQL's strict mode: numbers go to storage as they are
//! and storage range-checks and rounds them (`ColumnType::coerce`); a string stored into a numeric
//! column must be entirely numeric (`'12'` is fine, `'12abc'` is error 1366, as strict mode
//! says); a string stored into a DATE/DATETIME column is parsed as `YYYY-MM-DD[ hh:mm:ss[.f]]`.
//!
//! Storage keeps text and binary strings alike as `Datum::Bytes`; the column type tells them
//! apart on the way back ([`datum_to_value`]): BLOB, BINARY and VARBINARY read as
//! [`Value::Bytes`], exactly the stored bytes (a BINARY(n)'s `0x00` padding included),
//! CHAR/VARCHAR/TEXT as [`Value::Str`]. A binary string stored into a text column must be UTF-8
//! (else 1366 `Incorrect string value`, strict mode as MariaDB's); into a binary string column
//! it is stored as it is, and text as its UTF-8 bytes; BINARY/VARBINARY check the length in
//! bytes (1406) and BINARY pads (`ColumnType::coerce`).

use shoal_sql::decimal::Decimal as SqlDecimal;
use shoal_sql::value::{DateTime as SqlDateTime, SqlType, Value};
use shoal_sql::SqlError;
use shoal_store::{ColumnType, Date, DateTime, Datum, Decimal, StoreError};

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
            SqlType::DateTime => (mysql_type::DATETIME, 19, 0, 63, flags::BINARY),
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
            mysql_type::DATETIME | mysql_type::TIMESTAMP => SqlType::DateTime,
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
        ColumnType::Float | ColumnType::Double => SqlType::Double,
        ColumnType::Decimal { scale, .. } => SqlType::Decimal(scale),
        ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Text => SqlType::Str,
        ColumnType::Blob | ColumnType::Binary(_) | ColumnType::Varbinary(_) => SqlType::Bytes,
        ColumnType::Date => SqlType::Date,
        ColumnType::DateTime | ColumnType::Timestamp => SqlType::DateTime,
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
        ColumnType::Float => (mysql_type::FLOAT, 12, 31, 63, flags::NUM | flags::BINARY),
        ColumnType::Double => (mysql_type::DOUBLE, 22, 31, 63, flags::NUM | flags::BINARY),
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
        ColumnType::DateTime => (mysql_type::DATETIME, 19, 0, 63, flags::BINARY),
        ColumnType::Timestamp => (mysql_type::TIMESTAMP, 19, 0, 63, flags::BINARY),
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
            Value::DateTime(v)
        }
    }
}

/// Parses `YYYY-MM-DD[ hh:mm:ss[.ffffff]]` (also `T` as the separator).
pub fn parse_datetime(s: &str) -> Option<DateTime> {
    let s = s.trim();
    let (d, t) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], s[i + 1..].trim()),
        None => (s, ""),
    };
    let mut dp = d.split('-');
    let year: u16 = dp.next()?.parse().ok()?;
    let month: u8 = dp.next()?.parse().ok()?;
    let day: u8 = dp.next()?.parse().ok()?;
    if dp.next().is_some() || month > 12 || day > 31 || year > 9999 {
        return None;
    }
    let (mut hour, mut minute, mut second, mut micro) = (0u8, 0u8, 0u8, 0u32);
    if !t.is_empty() {
        let (hms, frac) = t.split_once('.').unwrap_or((t, ""));
        let mut tp = hms.split(':');
        hour = tp.next()?.parse().ok()?;
        minute = tp.next().unwrap_or("0").parse().ok()?;
        second = tp.next().unwrap_or("0").parse().ok()?;
        if hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        if !frac.is_empty() {
            let f: String = frac.chars().chain("000000".chars()).take(6).collect();
            micro = f.parse().ok()?;
        }
    }
    Some(DateTime {
        date: Date { year, month, day },
        hour,
        minute,
        second,
        micro,
    })
}

fn incorrect(kind: &str, v: &Value, col: &str, row: usize) -> SqlError {
    SqlError::coded(
        shoal_errors::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD,
        format!(
            "Incorrect {kind} value: '{}' for column '{col}' at row {row}",
            v.to_text().unwrap_or_default()
        ),
    )
}

/// Error 1366 for bytes that are not UTF-8 stored into a text column, with MariaDB's message
/// (the bytes from the first bad one, at most 6, as `\xHH`).
fn incorrect_string(bad: &[u8], col: &str, row: usize) -> SqlError {
    let shown: String = bad.iter().take(6).map(|b| format!("\\x{b:02X}")).collect();
    let more = if bad.len() > 6 { "..." } else { "" };
    SqlError::coded(
        shoal_errors::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD,
        format!("Incorrect string value: '{shown}{more}' for column '{col}' at row {row}"),
    )
}

/// Converts an SQL value to a storage value for a column of type `ty` (strict mode), then
/// coerces it to the column's canonical form. `row` is 1-based, for messages.
pub fn value_to_datum(v: &Value, ty: ColumnType, col: &str, row: usize) -> Result<Datum, SqlError> {
    let text;
    let v = match v {
        Value::Bytes(b) if ty == ColumnType::Blob => return Ok(Datum::Bytes(b.clone())),
        Value::Bytes(b) if ty.is_binary_string() => {
            return coerce(ty, Datum::Bytes(b.clone()), col, row)
        }
        // Anywhere else bytes are read as text, which they must be.
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => {
                text = Value::Str(s.to_string());
                &text
            }
            Err(e) => return Err(incorrect_string(&b[e.valid_up_to()..], col, row)),
        },
        v => v,
    };
    let d = match v {
        Value::Bytes(_) => unreachable!("read as text above"),
        Value::Null => return Ok(Datum::Null),
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
        Value::Date(d) | Value::DateTime(d) => {
            let dt = DateTime {
                date: Date {
                    year: d.year,
                    month: d.month,
                    day: d.day,
                },
                hour: d.hour,
                minute: d.minute,
                second: d.second,
                micro: d.micro,
            };
            match ty {
                ColumnType::Date => Datum::Date(dt.date),
                ColumnType::DateTime | ColumnType::Timestamp => Datum::DateTime(dt),
                _ => Datum::Bytes(v.to_text().unwrap_or_default().into_bytes()),
            }
        }
        Value::Str(s) => match ty {
            ColumnType::Int { .. }
            | ColumnType::Decimal { .. }
            | ColumnType::Float
            | ColumnType::Double => {
                let t = s.trim();
                if let Some(x) = Decimal::parse(t) {
                    Datum::Decimal(x)
                } else {
                    match t.parse::<f64>() {
                        Ok(f) if f.is_finite() => Datum::Double(f),
                        _ => {
                            let kind = if ty.is_integer() {
                                "integer"
                            } else {
                                "decimal"
                            };
                            return Err(incorrect(kind, v, col, row));
                        }
                    }
                }
            }
            ColumnType::Date => match parse_datetime(s) {
                Some(dt) => Datum::Date(dt.date),
                None => return Err(incorrect("date", v, col, row)),
            },
            ColumnType::DateTime | ColumnType::Timestamp => match parse_datetime(s) {
                Some(dt) => Datum::DateTime(dt),
                None => return Err(incorrect("datetime", v, col, row)),
            },
            _ => Datum::Bytes(s.clone().into_bytes()),
        },
    };
    coerce(ty, d, col, row)
}

/// [`ColumnType::coerce`] with its refusals as MySQL's errors (strict mode).
fn coerce(ty: ColumnType, d: Datum, col: &str, row: usize) -> Result<Datum, SqlError> {
    ty.coerce(d).map_err(|detail| {
        if detail.starts_with("data too long") {
            SqlError::coded(
                shoal_errors::ER_DATA_TOO_LONG,
                format!("Data too long for column '{col}' at row {row}"),
            )
        } else if detail.contains("out of range") {
            SqlError::coded(
                shoal_errors::ER_WARN_DATA_OUT_OF_RANGE,
                format!("Out of range value for column '{col}' at row {row}"),
            )
        } else {
            SqlError::coded(
                shoal_errors::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD,
                format!("Incorrect value for column '{col}' at row {row}: {detail}"),
            )
        }
    })
}

/// A storage error as an SQL error (same code, SQLSTATE and message).
pub fn store_err(e: StoreError) -> SqlError {
    match e {
        StoreError::Interrupted => SqlError::Interrupted,
        e => SqlError::other(e.mysql_code(), e.sqlstate(), e.to_string()),
    }
}
