//! SQL front end: parse with sqlparser, translate into our own AST, plan, execute.

pub mod catalog;
