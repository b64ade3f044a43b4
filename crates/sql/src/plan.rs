//! Prepared statements: a statement parsed once at PREPARE and executed many times.
//!
//! [`Prepared`] keeps the translated statement, its placeholder count and the result columns
//! known at prepare time (static types). Execution binds parameter values through the
//! evaluation context (`Expr::Param(i)`), so nothing is re-parsed per execute. Table statements
//! choose and cache their access path in `crates/exec` (its `Plan`, kept in the session's
//! prepared statement), not here.

use crate::ast::Statement;
use crate::error::SqlError;
use crate::eval::static_type;
use crate::exec::ColumnInfo;
use crate::translate::{parse, Parsed};

/// A prepared statement.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The statement's text (for the process list).
    pub sql: String,
    /// The parsed statement.
    pub statement: Statement,
    /// Number of `?` placeholders.
    pub params: usize,
    /// Result columns known at prepare time (empty for statements without rows).
    pub columns: Vec<ColumnInfo>,
}

impl Prepared {
    /// Parses `sql` for COM_STMT_PREPARE.
    pub fn new(sql: &str) -> Result<Prepared, SqlError> {
        let Parsed { statement, params } = parse(sql)?;
        let columns = match &statement {
            Statement::Select(s) => s
                .items
                .iter()
                .map(|it| ColumnInfo {
                    name: it.name.clone(),
                    ty: static_type(&it.expr),
                })
                .collect(),
            _ => Vec::new(),
        };
        Ok(Prepared {
            sql: sql.to_string(),
            statement,
            params,
            columns,
        })
    }
}
