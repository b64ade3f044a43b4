//! The evaluator's view of a session: [`Ctx`] implements `shoal_sql::eval::Context` over a
//! session, the statement's parameters and, for SHOW ... WHERE, the row being filtered, so one
//! evaluator serves every expression the session evaluates (SET, DO, KILL, SHOW filters) and
//! the table engine's.

use shoal_sql::ast::VarScope;
use shoal_sql::eval::Context;
use shoal_sql::value::{DateTime, Value};
use shoal_sql::SqlError;

use super::Session;

/// Evaluation context: a session plus the statement's parameters and current row.
pub struct Ctx<'a> {
    pub(super) s: &'a mut Session,
    pub(super) params: &'a [Value],
    pub(super) row: Option<(&'a [&'a str], &'a [Value])>,
}

impl Context for Ctx<'_> {
    fn system_var(&mut self, scope: VarScope, name: &str) -> Result<Value, SqlError> {
        self.s.read_var(scope, name)
    }
    fn statement_memory_limit(&mut self) -> u64 {
        self.s.hot().statement_mem_limit
    }
    fn global_memory_limit(&mut self) -> u64 {
        self.s.hot().global_mem_limit
    }
    fn user_var(&self, name: &str) -> Value {
        self.s
            .user_vars
            .get(&name.to_ascii_lowercase())
            .cloned()
            .unwrap_or(Value::Null)
    }
    fn set_user_var(&mut self, name: &str, v: Value) {
        let v = shoal_sql::value::user_var_value(v);
        self.s.user_vars.insert(name.to_ascii_lowercase(), v);
    }
    fn param(&self, i: usize) -> Result<Value, SqlError> {
        self.params
            .get(i)
            .cloned()
            .ok_or_else(|| SqlError::WrongArguments("mysqld_stmt_execute".into()))
    }
    fn column(&self, name: &str) -> Result<Value, SqlError> {
        if let Some((names, vals)) = self.row {
            if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(name)) {
                return Ok(vals[i].clone());
            }
        }
        Err(SqlError::UnknownColumn(
            name.to_string(),
            if self.row.is_some() {
                "where clause"
            } else {
                "field list"
            }
            .into(),
        ))
    }
    fn database(&self) -> Option<String> {
        self.s.db.clone()
    }
    fn user(&self) -> String {
        format!("{}@{}", self.s.user, self.s.host)
    }
    fn current_user(&self) -> String {
        format!("{}@{}", self.s.user, self.s.account_host)
    }
    fn connection_id(&self) -> u64 {
        self.s.entry.id as u64
    }
    fn last_insert_id(&self) -> u64 {
        self.s.last_insert_id
    }
    fn found_rows(&self) -> u64 {
        self.s.found_rows
    }
    fn set_last_insert_id(&mut self, v: u64) {
        self.s.last_insert_id = v;
    }
    fn now(&self) -> DateTime {
        self.s.stmt_time
    }
    fn version(&self) -> String {
        self.s.server.version()
    }
    fn killed(&self) -> bool {
        self.s.entry.query_killed()
            || self
                .s
                .stmt_deadline
                .is_some_and(|d| std::time::Instant::now() >= d)
    }
    fn div_precision(&self) -> u32 {
        self.s.hot().div_precision
    }
    fn warn(&mut self, code: u16, message: String) {
        self.s.diag.push(("Warning", code, message));
    }
    fn note(&mut self, code: u16, message: String) {
        self.s.diag.push(("Note", code, message));
    }
    fn max_allowed_packet(&mut self) -> u64 {
        self.s.hot().max_allowed_packet
    }
    fn rand_state(&mut self) -> Option<&mut shoal_sql::func::RandState> {
        Some(&mut self.s.rand)
    }
}

impl Session {
    /// The evaluation context of a statement with these parameters (no current row).
    pub(super) fn ctx<'a>(&'a mut self, params: &'a [Value]) -> Ctx<'a> {
        Ctx {
            s: self,
            params,
            row: None,
        }
    }
}
