//! The result-set representation of statements the session answers itself (SHOW, the
//! account statements): columns with SQL types, rows of values. Queries run in the table
//! engine's query engine (`crates/exec`), which has its own column descriptions.
//!
//! Result column types are taken from the values (first non-NULL per column), falling back to
//! the expression's static type, so `1` is LONGLONG, `1.5` NEWDECIMAL, `'a'` VAR_STRING and
//! `NULL` NULL — as MySQL reports them.

use crate::ast::{Expr, TableName};
use crate::error::SqlError;
use crate::eval::{static_type, Context};
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
