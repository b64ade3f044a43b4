//! Prepared statements: a statement parsed once at PREPARE and executed many times.
//!
//! [`Prepared`] keeps the translated statement and its placeholder count. Execution binds
//! parameter values through the evaluation context (`Expr::Param(i)`), so nothing is re-parsed
//! per execute. Queries and table statements are planned by `crates/exec` (its `Plan`, kept in
//! the session's prepared statement, knows the result columns), not here.

use crate::ast::Statement;
use crate::error::SqlError;
use crate::translate::{parse, Parsed, Tree};

/// A prepared statement.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The statement's text (for the process list).
    pub sql: String,
    /// The parsed statement.
    pub statement: Statement,
    /// Number of `?` placeholders.
    pub params: usize,
}

impl Prepared {
    /// Parses `sql` for COM_STMT_PREPARE.
    pub fn new(sql: &str) -> Result<Prepared, SqlError> {
        Ok(Prepared::parsed(sql, parse(sql)?).0)
    }

    /// A prepared statement from `sql` parsed as `parsed`, and the tree the table engine
    /// plans it from (see [`Parsed::tree`]).
    pub fn parsed(sql: &str, parsed: Parsed) -> (Prepared, Option<Tree>) {
        let Parsed {
            statement,
            params,
            tree,
        } = parsed;
        (
            Prepared {
                sql: sql.to_string(),
                statement,
                params,
            },
            tree,
        )
    }
}
