//! Prepared statements, by the binary protocol's id (COM_STMT_*, `backend.rs`) and by SQL name
//! (`PREPARE s FROM ...`, `EXECUTE s USING ...`, `DEALLOCATE PREPARE s`, `EXECUTE IMMEDIATE`).
//!
//! Both kinds are the same [`Stmt`], built by [`Session::build_stmt`] and run by
//! [`Session::execute_stmt`], so a statement answers the same whichever way it was prepared;
//! only the result's encoding differs (binary rows for COM_STMT_EXECUTE, text rows for
//! EXECUTE, which arrives as COM_QUERY). Both count in `Prepared_stmt_count` and are bounded
//! by `max_prepared_stmt_count`. SQL names are case-insensitive, as in MariaDB; a PREPARE of a
//! name in use drops the old statement first, so a PREPARE that fails leaves no statement by
//! that name. The statement an EXECUTE runs counts in its own `Com_` counter as well as in
//! `Com_execute_sql`, and follows its own rule for clearing the last statement's diagnostics.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use shoal_proto::{Column, OkInfo, Response};
use shoal_sql::ast::{Expr, Statement};
use shoal_sql::eval::eval;
use shoal_sql::plan::Prepared;
use shoal_sql::value::Value;
use shoal_sql::{split_statements, SqlError};

use super::dispatch::clears_diagnostics;
use super::wire::{exec_column, ok};
use super::{Session, Stmt};
use crate::plans::StmtBody;

/// 1295: PREPARE, EXECUTE and DEALLOCATE cannot themselves be prepared.
fn unsupported_ps() -> SqlError {
    SqlError::coded(
        shoal_errors::ER_UNSUPPORTED_PS,
        "This command is not supported in the prepared statement protocol yet",
    )
}

/// 1243 for a statement name (or protocol id) `what` that `command` does not know.
pub(super) fn unknown_stmt(what: &str, command: &str) -> SqlError {
    SqlError::coded(
        shoal_errors::ER_UNKNOWN_STMT_HANDLER,
        format!("Unknown prepared statement handler ({what}) given to {command}"),
    )
}

/// 1210: an execution with the wrong number of parameters (`command`: `EXECUTE`,
/// `mysqld_stmt_execute`).
pub(super) fn wrong_arguments(command: &str) -> SqlError {
    SqlError::coded(
        shoal_errors::ER_WRONG_ARGUMENTS,
        format!("Incorrect arguments to {command}"),
    )
}

impl Session {
    /// Parses and plans `sql` as a prepared statement (the parts COM_STMT_PREPARE and PREPARE
    /// share), with its placeholder count: a query or table statement is planned on the table
    /// engine and its privileges checked now; its result columns are converted once.
    pub(super) fn build_stmt(&mut self, sql: &str) -> Result<(Stmt, usize), SqlError> {
        let max = self.server.vars.get("max_prepared_stmt_count").as_u64();
        let cur = self
            .server
            .counters
            .prepared_stmt_count
            .load(Ordering::Relaxed);
        if cur >= max {
            return Err(SqlError::coded(
                shoal_errors::ER_MAX_PREPARED_STMT_COUNT_REACHED,
                format!(
                    "Can't create more than max_prepared_stmt_count statements (current value: {max})"
                ),
            ));
        }
        let db = self.db.clone();
        // Shared with other sessions (see `crate::plans`), keyed by this session's sql_mode
        // too. Under LOCK TABLES a hit is checked against this session's locked set as a
        // plan built here is: a table outside it is 1100 at PREPARE, as in MariaDB.
        let mode = self
            .vars
            .get(&self.server.vars, "sql_mode")
            .map(|v| v.display())
            .unwrap_or_default();
        let engine = self.engine.clone();
        let hit = self.server.plans.get(db.as_deref(), &mode, sql, |b| {
            b.plan.as_ref().is_some_and(|p| engine.plan_is_current(p))
        });
        if let Some(body) = hit {
            self.refresh_grants();
            let plan = body.plan.as_ref().expect("shared bodies have a plan");
            self.check_plan(plan)?;
            self.table_session().check_locked_at_prepare(plan)?;
            let stmt = Stmt {
                text: Arc::from(sql),
                body,
            };
            let params = Self::stmt_params(&stmt);
            return Ok((stmt, params));
        }
        let parts = split_statements(sql);
        if parts.len() > 1 {
            return Err(SqlError::Syntax(parts[1].to_string()));
        }
        let parsed = shoal_sql::parse(sql)?;
        let (p, tree) = Prepared::parsed(sql, parsed);
        if matches!(
            p.statement,
            Statement::Prepare(..)
                | Statement::Execute(..)
                | Statement::ExecuteImmediate(..)
                | Statement::Deallocate(_)
        ) {
            return Err(unsupported_ps());
        }
        let is_table = matches!(
            &p.statement,
            Statement::TableStatement(_, _) | Statement::Query { .. }
        );
        let mut params = p.params;
        let mut table_plan = None;
        let mut columns: Arc<[Column]> = Arc::from([]);
        if is_table {
            let plan = self
                .table_session()
                .prepare_tree(sql, tree, db.as_deref())?;
            self.refresh_grants();
            self.check_plan(&plan)?;
            self.table_session().check_locked_at_prepare(&plan)?;
            // Only a plan's result sets use the converted columns.
            columns = plan.columns.iter().map(exec_column).collect();
            params = plan.param_count;
            table_plan = Some(plan);
        }
        let body = Arc::new(StmtBody {
            prepared: p,
            columns,
            plan: table_plan,
        });
        if body.plan.is_some() {
            self.server.plans.insert(db.as_deref(), &mode, sql, &body);
        }
        let stmt = Stmt {
            text: Arc::from(sql),
            body,
        };
        Ok((stmt, params))
    }

    /// The number of placeholders an execution of `p` must bind.
    pub(super) fn stmt_params(p: &Stmt) -> usize {
        p.body
            .plan
            .as_ref()
            .map_or(p.body.prepared.params, |plan| plan.param_count)
    }

    /// Counts `n` prepared statements made (`made`) or dropped in `Prepared_stmt_count`.
    pub(super) fn count_prepared(&self, made: bool, n: u64) {
        let c = &self.server.counters.prepared_stmt_count;
        if made {
            c.fetch_add(n, Ordering::Relaxed);
        } else {
            c.fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// Runs the prepared statement `p` with `values` bound to its placeholders (counted
    /// already): its plan when it has one, else its text.
    pub(super) fn execute_stmt(
        &mut self,
        p: Arc<Stmt>,
        values: &[Value],
    ) -> Result<Response, SqlError> {
        let saved_sql = p
            .body
            .plan
            .is_none()
            .then(|| std::mem::replace(&mut self.cur_sql, p.text.clone()));
        let saved_stmt = self.cur_stmt.replace(p.clone());
        let r = self.run(&p.body.prepared.statement, values);
        self.cur_stmt = saved_stmt;
        if let Some(s) = saved_sql {
            self.cur_sql = s;
        }
        r
    }

    /// The SQL text a PREPARE or EXECUTE IMMEDIATE names: the value of `text` as a string
    /// (NULL reads as the word, which then fails to parse, as in MariaDB).
    fn statement_text(&mut self, text: &Expr) -> Result<String, SqlError> {
        Ok(match eval(text, &mut self.ctx(&[]))? {
            Value::Null => "NULL".to_string(),
            v => v.to_text().unwrap_or_default(),
        })
    }

    /// The values of EXECUTE's USING list.
    fn using_values(&mut self, using: &[Expr]) -> Result<Vec<Value>, SqlError> {
        let mut ctx = self.ctx(&[]);
        using.iter().map(|e| eval(e, &mut ctx)).collect()
    }

    /// `PREPARE name FROM text`.
    pub(super) fn sql_prepare(&mut self, name: &str, text: &Expr) -> Result<Response, SqlError> {
        let sql = self.statement_text(text)?;
        let key = name.to_lowercase();
        if self.named.remove(&key).is_some() {
            self.count_prepared(false, 1);
        }
        let (stmt, _) = self.build_stmt(&sql)?;
        // Preparing a statement that clears the diagnostics (one on tables) clears them.
        if clears_diagnostics(&stmt.body.prepared.statement) {
            self.diag.begin(true);
        }
        self.named.insert(key, Arc::new(stmt));
        self.count_prepared(true, 1);
        Ok(Response::Ok(OkInfo {
            info: "Statement prepared".into(),
            ..OkInfo::default()
        }))
    }

    /// `EXECUTE name [USING ...]`.
    pub(super) fn sql_execute(&mut self, name: &str, using: &[Expr]) -> Result<Response, SqlError> {
        let p = self
            .named
            .get(&name.to_lowercase())
            .cloned()
            .ok_or_else(|| unknown_stmt(name, "EXECUTE"))?;
        if Self::stmt_params(&p) != using.len() {
            return Err(wrong_arguments("EXECUTE"));
        }
        let values = self.using_values(using)?;
        self.execute_stmt(p, &values)
    }

    /// `EXECUTE IMMEDIATE text [USING ...]`: a statement prepared, run and dropped.
    pub(super) fn sql_execute_immediate(
        &mut self,
        text: &Expr,
        using: &[Expr],
    ) -> Result<Response, SqlError> {
        let sql = self.statement_text(text)?;
        let (stmt, params) = self.build_stmt(&sql)?;
        if params != using.len() {
            return Err(wrong_arguments("EXECUTE"));
        }
        let values = self.using_values(using)?;
        self.execute_stmt(Arc::new(stmt), &values)
    }

    /// `DEALLOCATE PREPARE name` / `DROP PREPARE name`.
    pub(super) fn sql_deallocate(&mut self, name: &str) -> Result<Response, SqlError> {
        if self.named.remove(&name.to_lowercase()).is_none() {
            return Err(unknown_stmt(name, "DEALLOCATE PREPARE"));
        }
        self.count_prepared(false, 1);
        Ok(ok(0))
    }
}
