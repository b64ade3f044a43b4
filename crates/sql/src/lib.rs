//! SQL front end: parse with sqlparser, translate into our own AST, plan, execute.
//!
//! Pipeline: [`split::split_statements`] cuts a COM_QUERY text into statements (respecting
//! quotes and comments); [`translate::parse`] parses one statement with sqlparser's
//! `MySqlDialect` (plus a small hand-written front for SHOW/SET/KILL forms sqlparser does not
//! model the MySQL way) and translates it into [`ast::Statement`], rejecting what we cannot run
//! with 1064/1235; [`plan::Prepared`] holds a parsed statement for COM_STMT_PREPARE so it is parsed
//! once; [`exec`] evaluates SELECTs over a [`eval::Context`] supplied by the session and reports
//! table access through the [`catalog::Catalog`] boundary. [`depth`] bounds expression nesting
//! before anything recursive runs (1436 instead of a stack overflow on a 2 MiB worker).

pub mod ast;
pub mod catalog;
pub mod decimal;
pub mod depth;
pub mod dialect;
pub mod error;
pub mod eval;
pub mod exec;
pub mod func;
pub mod plan;
pub mod split;
pub mod translate;
pub mod value;

#[cfg(test)]
mod tests;

pub use error::SqlError;
pub use split::split_statements;
pub use translate::{parse, Parsed};
