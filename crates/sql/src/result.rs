//! The result-set representation of statements the session answers itself (SHOW, the
//! account statements): columns with SQL types, rows of values. Queries run in the table
//! engine's query engine (`crates/exec`), which has its own column descriptions.
//!
//! Result column types are taken from the values (first non-NULL per column), falling back to
//! the expression's static type, so `1` is LONGLONG, `1.5` NEWDECIMAL, `'a'` VAR_STRING and
//! `NULL` NULL — as MySQL reports them.

use crate::ast::Expr;
use crate::eval::static_type;
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
