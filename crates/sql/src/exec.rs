//! Executing table-less SELECT statements, and the result-set representation.
//!
//! A SELECT without FROM yields one row (zero if WHERE is false, LIMIT 0, or OFFSET >= 1).
//! Tables are read by the table engine (`crates/exec`), to which the session routes every
//! SELECT with a FROM (virtual tables aside: `crates/session/src/hooks.rs`) once the server has
//! plugged one in. Without one (a session with no storage behind it) a SELECT with a table
//! comes here and goes through the [`Catalog`]: a table the catalog does not know is 1146
//! `Table 'db.t' doesn't exist` (what MySQL says), an existing one is refused with 1235.
//!
//! Result column types are taken from the values (first non-NULL per column), falling back to the
//! expression's static type, so `SELECT 1` is LONGLONG, `SELECT 1.5` NEWDECIMAL, `SELECT 'a'`
//! VAR_STRING and `SELECT NULL` NULL — as MySQL reports them.

use crate::ast::{Expr, Select, TableName};
use crate::catalog::Catalog;
use crate::error::SqlError;
use crate::eval::{eval, static_type, Context};
use crate::value::{SqlType, Value};

/// A result column.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnInfo {
    /// Header (alias or expression text).
    pub name: String,
    /// Type.
    pub ty: SqlType,
}

/// A materialised result.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QueryResult {
    /// Columns.
    pub columns: Vec<ColumnInfo>,
    /// Rows.
    pub rows: Vec<Vec<Value>>,
}

/// Resolves the database of a table reference (1046 without a current database).
pub fn resolve_table(t: &TableName, ctx: &dyn Context) -> Result<(String, String), SqlError> {
    let db = match &t.db {
        Some(d) => d.clone(),
        None => ctx.database().ok_or(SqlError::NoDatabase)?,
    };
    Ok((db, t.name.clone()))
}

fn limit_value(e: &Option<Expr>, ctx: &mut dyn Context) -> Result<Option<u64>, SqlError> {
    match e {
        None => Ok(None),
        Some(e) => {
            let v = eval(e, ctx)?;
            match v {
                Value::Int(i) if i >= 0 => Ok(Some(i as u64)),
                Value::UInt(u) => Ok(Some(u)),
                _ => Err(SqlError::WrongArguments("LIMIT".into())),
            }
        }
    }
}

/// Runs a SELECT.
pub fn select(
    sel: &Select,
    ctx: &mut dyn Context,
    catalog: &dyn Catalog,
) -> Result<QueryResult, SqlError> {
    if let Some(t) = &sel.from {
        let (db, table) = resolve_table(t, ctx)?;
        if !catalog.database_exists(&db) || !catalog.table_exists(&db, &table) {
            return Err(SqlError::NoSuchTable(db, table));
        }
        return Err(SqlError::Unsupported(format!(
            "reading table '{db}.{table}' (storage engine not connected)"
        )));
    }
    let limit = limit_value(&sel.limit, ctx)?;
    let offset = limit_value(&sel.offset, ctx)?.unwrap_or(0);
    let mut rows = Vec::new();
    let pass = match &sel.filter {
        None => true,
        Some(f) => eval(f, ctx)?.truth() == Some(true),
    };
    if pass && limit != Some(0) && offset == 0 {
        let mut row = Vec::with_capacity(sel.items.len());
        for it in &sel.items {
            row.push(eval(&it.expr, ctx)?);
        }
        rows.push(row);
    } else {
        // MySQL still evaluates nothing, but checks expressions for errors at prepare; we only
        // validate that column references are absent.
        for it in &sel.items {
            if let Expr::Column(c) = &it.expr {
                return Err(SqlError::UnknownColumn(c.clone(), "field list".into()));
            }
        }
    }
    let columns = sel
        .items
        .iter()
        .enumerate()
        .map(|(i, it)| ColumnInfo {
            name: it.name.clone(),
            ty: column_type(&it.expr, rows.iter().map(|r| &r[i])),
        })
        .collect();
    Ok(QueryResult { columns, rows })
}

/// A column's type: from the first non-NULL value, else from the expression.
pub fn column_type<'a>(e: &Expr, mut values: impl Iterator<Item = &'a Value>) -> SqlType {
    match values.find(|v| !v.is_null()) {
        Some(v) => v.sql_type(),
        None => match e {
            Expr::Literal(Value::Null) => SqlType::Null,
            _ => static_type(e),
        },
    }
}
