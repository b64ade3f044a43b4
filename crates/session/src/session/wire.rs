//! SQL values, results and errors in the protocol's form, and back.
//!
//! Two kinds of result meet the protocol: the engine's (`ExecOutput`), whose columns already
//! carry MySQL's types, lengths and flags (`exec_column` copies them), and the session's own
//! text results (SHOW, BACKUP), whose columns are described here from the SQL type and the
//! longest value (`column_of`: MySQL's display lengths, `binary` charset 63 for temporal and
//! byte columns). Values go out as the protocol's value, which the protocol encodes as text or
//! binary per command; a DATE in a column that is not temporal (CASE or UNION mixing dates with
//! strings) goes out as the text MySQL shows. A string parameter of COM_STMT_EXECUTE is text
//! when it is UTF-8, else a binary string.

use std::sync::Arc;

use shoal_exec::ExecOutput;
use shoal_proto::{
    Column, ColumnFlags, ColumnType, ErrorInfo, OkInfo, Response, ResultSet, Rows, Value as PValue,
};
use shoal_sql::result::{ColumnInfo, QueryResult};
use shoal_sql::temporal::Time;
use shoal_sql::value::{DateTime, SqlType, Value};
use shoal_sql::SqlError;

/// Converts an SQL error into the protocol's error.
pub fn to_error_info(e: &SqlError) -> ErrorInfo {
    ErrorInfo::new(e.code(), e.sqlstate(), e.to_string())
}

/// A protocol column describing `c`, sized for `values` (the column's values in the result).
fn column_of(c: &ColumnInfo, values: &[&Value]) -> Column {
    let (ty, flags_extra, decimals) = match c.ty {
        SqlType::Null => (ColumnType::MYSQL_TYPE_NULL, ColumnFlags::empty(), 0),
        SqlType::Int => (ColumnType::MYSQL_TYPE_LONGLONG, ColumnFlags::empty(), 0),
        SqlType::UInt => (
            ColumnType::MYSQL_TYPE_LONGLONG,
            ColumnFlags::UNSIGNED_FLAG,
            0,
        ),
        SqlType::Decimal(s) => (ColumnType::MYSQL_TYPE_NEWDECIMAL, ColumnFlags::empty(), s),
        SqlType::Double => (ColumnType::MYSQL_TYPE_DOUBLE, ColumnFlags::empty(), 31),
        SqlType::Str => (ColumnType::MYSQL_TYPE_VAR_STRING, ColumnFlags::empty(), 31),
        SqlType::Bytes => (
            ColumnType::MYSQL_TYPE_VAR_STRING,
            ColumnFlags::BINARY_FLAG,
            31,
        ),
        SqlType::Date => (ColumnType::MYSQL_TYPE_DATE, ColumnFlags::BINARY_FLAG, 0),
        SqlType::DateTime(n) => (ColumnType::MYSQL_TYPE_DATETIME, ColumnFlags::BINARY_FLAG, n),
        SqlType::Time(n) => (ColumnType::MYSQL_TYPE_TIME, ColumnFlags::BINARY_FLAG, n),
    };
    let mut col = Column::expr(c.name.clone(), ty);
    col.flags |= flags_extra;
    col.decimals = decimals;
    let maxlen = values
        .iter()
        .filter_map(|v| match v {
            Value::Bytes(b) => Some(b.len()),
            v => v.to_text().map(|s| s.chars().count()),
        })
        .max()
        .unwrap_or(0) as u32;
    col.column_length = match c.ty {
        SqlType::Str => maxlen.max(1) * 4,
        SqlType::Date => 10,
        SqlType::DateTime(0) => 19,
        SqlType::DateTime(n) => 20 + u32::from(n),
        SqlType::Time(0) => 10,
        SqlType::Time(n) => 11 + u32::from(n),
        SqlType::Null => 0,
        _ => maxlen.max(1),
    };
    if c.ty == SqlType::Str {
        col.decimals = 31;
    }
    if matches!(
        c.ty,
        SqlType::Date | SqlType::DateTime(_) | SqlType::Time(_) | SqlType::Bytes
    ) {
        col.charset = 63;
    }
    col
}

/// A SQL value as the protocol sends it (text or binary encoding is the protocol's choice).
fn to_proto_value(v: Value) -> PValue {
    match v {
        Value::Null => PValue::NULL,
        Value::Int(i) => PValue::Int(i),
        Value::UInt(u) => PValue::UInt(u),
        Value::Double(d) => PValue::Double(d),
        Value::Decimal(d) => PValue::Bytes(d.to_string().into_bytes()),
        Value::Str(s) => PValue::Bytes(s.into_bytes()),
        Value::Bytes(b) => PValue::Bytes(b),
        Value::Date(d) | Value::DateTime(d, _) => {
            PValue::Date(d.year, d.month, d.day, d.hour, d.minute, d.second, d.micro)
        }
        Value::Time(t) => time_value(&t),
    }
}

/// A TIME as the protocol's value (days and hours of the day, as the binary format has them).
fn time_value(t: &Time) -> PValue {
    PValue::Time(
        t.neg,
        t.hour / 24,
        (t.hour % 24) as u8,
        t.minute,
        t.second,
        t.micro,
    )
}

/// A value of a TIME result column as the protocol's: a TIME as it is, anything else (a
/// string of a CASE or UNION branch) read as a time so the binary format can carry it.
fn time_column_value(v: Value) -> PValue {
    match v {
        Value::Time(t) => time_value(&t),
        Value::Null => PValue::NULL,
        v => match shoal_sql::temporal::read_time(&v.to_bytes().unwrap_or_default()) {
            Some(r) => time_value(&r.value),
            None => to_proto_value(v),
        },
    }
}

/// A parameter of COM_STMT_EXECUTE as a SQL value.
pub(super) fn from_proto_value(v: &PValue) -> Value {
    match v {
        PValue::NULL => Value::Null,
        // A string parameter is text when it is UTF-8, else a binary string (BLOB data).
        PValue::Bytes(b) => Value::from_utf8_or_bytes(b.clone()),
        PValue::Int(i) => Value::Int(*i),
        PValue::UInt(u) => Value::UInt(*u),
        PValue::Float(f) => Value::Double(*f as f64),
        PValue::Double(d) => Value::Double(*d),
        // A DATETIME parameter shows six digits when it has a fraction.
        PValue::Date(y, m, d, h, mi, s, us) => {
            let d = DateTime {
                year: *y,
                month: *m,
                day: *d,
                hour: *h,
                minute: *mi,
                second: *s,
                micro: *us,
            };
            Value::DateTime(d, shoal_sql::value::natural_fsp(&d))
        }
        // A TIME parameter is a TIME value (clipped to the range), with six digits when it
        // has a fraction.
        PValue::Time(neg, days, h, m, s, us) => {
            let micros = ((i64::from(*days) * 24 + i64::from(*h)) * 3600
                + i64::from(*m) * 60
                + i64::from(*s))
                * 1_000_000
                + i64::from(*us);
            let micros = if *neg { -micros } else { micros };
            Value::Time(Time::clipped(micros, if *us != 0 { 6 } else { 0 }).0)
        }
    }
}

/// Converts a materialised result into the protocol's result set.
pub fn to_result_set(r: QueryResult, warnings: u16) -> ResultSet {
    let columns: Arc<[Column]> = r
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let vals: Vec<&Value> = r.rows.iter().map(|row| &row[i]).collect();
            column_of(c, &vals)
        })
        .collect();
    let mut rows = Rows::with_capacity(columns.len(), r.rows.len());
    for row in r.rows {
        rows.push_row(row.into_iter().map(to_proto_value));
    }
    ResultSet {
        columns,
        rows,
        warnings,
    }
}

/// Converts an engine column description into the protocol's.
pub(super) fn exec_column(c: &shoal_exec::ColumnInfo) -> Column {
    Column {
        schema: c.schema.clone(),
        table: c.table.clone(),
        org_table: c.org_table.clone(),
        name: c.name.clone(),
        org_name: c.org_name.clone(),
        column_type: ColumnType::try_from(c.column_type)
            .unwrap_or(ColumnType::MYSQL_TYPE_VAR_STRING),
        flags: ColumnFlags::from_bits_truncate(c.flags),
        column_length: c.column_length,
        decimals: c.decimals,
        charset: c.charset,
    }
}

/// Converts the engine's output into a protocol response.
pub(super) fn exec_response(out: ExecOutput) -> Response {
    match out {
        ExecOutput::Rows { columns, rows } => {
            rows_response(columns.iter().map(exec_column).collect(), rows)
        }
        ExecOutput::Ok {
            affected_rows,
            last_insert_id,
            info,
            warnings,
        } => Response::Ok(OkInfo {
            affected_rows,
            last_insert_id,
            warnings,
            info,
        }),
    }
}

/// A result set of `columns` and the engine's `rows`.
pub(super) fn rows_response(columns: Arc<[Column]>, rows: Vec<Vec<Value>>) -> Response {
    // A DATE in a column that is not temporal (CASE, COALESCE or UNION mixing dates with
    // strings or numbers make VARCHAR) goes out as the string MySQL shows: the protocol would
    // render a date value in such a column as a DATETIME. A FLOAT column's values go out as
    // single precision: the protocol shows them as MariaDB shows a FLOAT (six significant
    // digits, or the column's fixed decimals) and sends 4 bytes. The column's type is looked
    // at per value, not gathered into per-column vectors first (allocated per statement).
    let ty = |i: usize| columns.get(i).map(|c| c.column_type);
    let mut out = Rows::with_capacity(columns.len(), rows.len());
    for r in rows {
        out.push_row(r.into_iter().enumerate().map(|(i, v)| match v {
            Value::Date(_)
                if ty(i).is_some_and(|t| {
                    !matches!(
                        t,
                        ColumnType::MYSQL_TYPE_DATE
                            | ColumnType::MYSQL_TYPE_NEWDATE
                            | ColumnType::MYSQL_TYPE_DATETIME
                            | ColumnType::MYSQL_TYPE_TIMESTAMP
                    )
                }) =>
            {
                PValue::Bytes(v.to_text().unwrap_or_default().into_bytes())
            }
            Value::Double(d) if ty(i) == Some(ColumnType::MYSQL_TYPE_FLOAT) => {
                PValue::Float(d as f32)
            }
            v if ty(i) == Some(ColumnType::MYSQL_TYPE_TIME) => time_column_value(v),
            // A TIME in a column of another type (a string column of a CASE or
            // UNION) as the text it shows.
            Value::Time(t) => PValue::Bytes(t.text().into_bytes()),
            v => to_proto_value(v),
        }));
    }
    Response::Rows(ResultSet {
        columns,
        rows: out,
        warnings: 0,
    })
}

/// A text-only result (SHOW statements): every column VAR_STRING unless the value says otherwise.
pub(super) fn text_result(names: &[&str], rows: Vec<Vec<Value>>) -> QueryResult {
    let columns = names
        .iter()
        .enumerate()
        .map(|(i, n)| ColumnInfo {
            name: n.to_string(),
            ty: rows
                .iter()
                .map(|r| r[i].sql_type())
                .find(|t| *t != SqlType::Null)
                .unwrap_or(SqlType::Str),
        })
        .collect();
    QueryResult { columns, rows }
}

/// An OK packet reporting `affected` rows.
pub(super) fn ok(affected: u64) -> Response {
    Response::Ok(OkInfo {
        affected_rows: affected,
        ..OkInfo::default()
    })
}
