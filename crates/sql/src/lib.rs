//! SQL front end: split, parse with sqlparser, translate into our own AST, evaluate.
//!
//! Pipeline: [`split::split_statements`] cuts a COM_QUERY text into statements (respecting
//! quotes and comments); [`translate::parse`] parses one statement with sqlparser's
//! `MySqlDialect` (plus a small hand-written front for SHOW/SET/KILL forms sqlparser does not
//! model the MySQL way) and says what kind of statement it is: a session statement translated
//! into [`ast::Statement`], or a query / table statement the table engine (`crates/exec`) plans
//! and runs — rejecting what nobody can run with 1064/1235. [`translate::query`] translates a
//! query into the [`ast::Query`] the query engine binds; [`eval`] evaluates expressions over an
//! [`eval::Context`] supplied by the session; [`plan::Prepared`] holds a parsed statement for
//! COM_STMT_PREPARE; [`result`] is the result set of what the session answers itself.
//! [`depth`] bounds expression nesting before anything recursive runs (1436 instead of a stack
//! overflow on a 2 MiB worker).

pub mod ast;
pub mod catalog;
pub mod decimal;
pub mod depth;
pub mod dialect;
pub mod error;
pub mod eval;
pub mod func;
pub mod plan;
pub mod query_bytes;
pub mod result;
pub mod split;
pub mod temporal;
pub mod translate;
pub mod value;

#[cfg(test)]
mod tests;

pub use error::SqlError;
pub use split::split_statements;
pub use translate::{parse, Parsed, Tree};
