//! Statement dispatch: COM_QUERY text to results, one statement at a time.
//!
//! `run_query` splits the text (`shoal_sql::split_statements`, with CLIENT_MULTI_STATEMENTS),
//! counts each statement in `Questions`, shows it in the process list and parses it once
//! (`shoal_sql::parse`); the parse keeps sqlparser's tree (`cur_tree`) so the table engine can
//! translate a table statement without parsing the text again. The first error stops the
//! rest, as in MySQL.
//!
//! `run` is what every statement, text or prepared, goes through: it counts `Com_*`, resets the
//! diagnostics (except for SHOW WARNINGS / ERRORS, which read them), arms `max_execution_time`
//! for a SELECT, executes, and turns the outcome into MySQL's: 3024 when the deadline (not a
//! KILL) stopped the statement, 1317 for a statement that finished although killed, except a
//! lone `SELECT SLEEP(n)`, which returns 1. The evaluator and the table engine look at the
//! deadline and the KILL flag through `Context::killed`. Results carry the statement's warning
//! count; an error becomes the statement's only diagnostic.
//!
//! `execute_statement` routes by the statement's kind, never by an error: queries and table
//! statements to the table engine (`tables.rs`), the session's own statements to the module
//! that owns their job.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use shoal_proto::{ErrorInfo, Response};
use shoal_sql::ast::{ShowKind, Statement};
use shoal_sql::eval::eval;
use shoal_sql::value::Value;
use shoal_sql::{split_statements, SqlError};

use super::wire::{ok, to_error_info};
use super::{now_datetime, Session};
use crate::status::com_index;
use crate::KILL_NONE;

impl Session {
    /// Runs COM_QUERY text (see [`Backend::query`](shoal_proto::Backend::query)).
    pub(super) fn run_query(&mut self, sql: &str, multi: bool) -> Vec<Result<Response, ErrorInfo>> {
        let parts = if multi {
            split_statements(sql)
        } else {
            vec![sql]
        };
        let mut out = Vec::with_capacity(parts.len());
        for part in parts {
            self.server
                .counters
                .questions
                .fetch_add(1, Ordering::Relaxed);
            let text: Arc<str> = Arc::from(part);
            self.set_process_text(Some(text.clone()));
            self.cur_sql = text;
            self.cur_stmt = None;
            if self.server.fault_injection() {
                crate::fault::check(&self.server, part);
            }
            // Routed by the statement's kind: the session's own statements here, queries and
            // table statements to the table engine.
            let r = match shoal_sql::parse(part) {
                Ok(p) if p.params > 0 => Err(SqlError::Syntax("?".into())),
                Ok(p) => {
                    self.cur_tree = p.tree;
                    let r = self.run(&p.statement, &[]);
                    self.cur_tree = None;
                    r
                }
                Err(e) => Err(e),
            };
            match r {
                Ok(resp) => out.push(Ok(resp)),
                Err(e) => {
                    self.diag.set_error(e.code(), e.to_string());
                    out.push(Err(to_error_info(&e)));
                    break;
                }
            }
        }
        out
    }

    /// Shows `text` (or nothing) as the connection's running statement in the process list.
    pub(super) fn set_process_text(&self, text: Option<Arc<str>>) {
        let mut info = self.entry.info();
        info.state = if text.is_some() { "executing" } else { "" };
        info.text = text;
    }

    /// Runs one statement and records its diagnostics.
    pub(super) fn run(&mut self, stmt: &Statement, params: &[Value]) -> Result<Response, SqlError> {
        self.refresh_grants();
        self.stmt_time = now_datetime();
        self.rand.new_statement();
        let diagnostic = matches!(
            stmt,
            Statement::Show(ShowKind::Warnings | ShowKind::Errors, _)
        );
        if !diagnostic {
            self.diag.begin(clears_diagnostics(stmt));
        }
        let com = match stmt.com_name() {
            "drop_table_if_exists" => "drop_table",
            other => other,
        };
        self.server.counters.com[com_index(com)].fetch_add(1, Ordering::Relaxed);
        self.server.counters.queries.fetch_add(1, Ordering::Relaxed);
        self.arm_deadline(com == "select");
        let r = self.execute_statement(stmt, params);
        // A lone SLEEP() interrupted by KILL QUERY returns 1.
        let lone_sleep = matches!(
            stmt,
            Statement::Query {
                lone_sleep: true,
                ..
            }
        );
        let r = self.disarm_deadline(r, lone_sleep);
        match r {
            // SHOW WARNINGS lists the diagnostics; it raises none itself (as MariaDB counts).
            Ok(resp) if diagnostic => Ok(resp),
            Ok(resp) => Ok(self.with_warning_count(resp)),
            Err(e) => {
                self.diag.set_error(e.code(), e.to_string());
                Err(e)
            }
        }
    }

    /// Arms `max_execution_time` for the statement about to run. It applies to SELECT only (as
    /// in MySQL); SLEEP(), BENCHMARK() and table scans look at the deadline through
    /// `Context::killed`.
    fn arm_deadline(&mut self, select: bool) {
        let limit_ms = if select {
            self.hot().max_execution_time
        } else {
            0
        };
        self.stmt_deadline =
            (limit_ms > 0).then(|| std::time::Instant::now() + Duration::from_millis(limit_ms));
    }

    /// Disarms the deadline and gives the statement's outcome: 3024 instead of 1317 when the
    /// deadline, not a KILL, stopped it; 1317 (or 3024) for a statement that finished although
    /// interrupted, except a lone SLEEP() (`lone_sleep`), which returns 1.
    fn disarm_deadline(
        &mut self,
        r: Result<Response, SqlError>,
        lone_sleep: bool,
    ) -> Result<Response, SqlError> {
        let timed_out = self
            .stmt_deadline
            .take()
            .is_some_and(|d| std::time::Instant::now() >= d)
            && self.entry.kill.load(Ordering::Acquire) == KILL_NONE;
        match r {
            Err(SqlError::Interrupted) if timed_out => Err(query_timeout()),
            Ok(resp) => {
                if lone_sleep {
                    Ok(resp)
                } else if self.entry.kill.load(Ordering::Acquire) != KILL_NONE {
                    Err(SqlError::Interrupted)
                } else if timed_out {
                    Err(query_timeout())
                } else {
                    Ok(resp)
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Adds a note to the statement's diagnostics.
    pub(super) fn warn(&mut self, code: u16, msg: String) {
        self.diag.push(("Note", code, msg));
    }

    /// A response with the statement's warning count (notes and warnings in `diag`).
    fn with_warning_count(&self, mut resp: Response) -> Response {
        let w = u16::try_from(self.diag.raised_warnings()).unwrap_or(u16::MAX);
        match &mut resp {
            Response::Ok(o) => o.warnings = w,
            Response::Rows(rs) => rs.warnings = w,
        }
        resp
    }

    /// Executes one parsed statement: the session's own here or in the module that owns its
    /// job, queries and table statements on the table engine.
    fn execute_statement(
        &mut self,
        stmt: &Statement,
        params: &[Value],
    ) -> Result<Response, SqlError> {
        match stmt {
            // Every query runs in the table engine's query engine, whatever it reads (stored
            // tables, information_schema, other subsystems' virtual tables, no table).
            Statement::Query { .. } => self.run_table(params),
            Statement::Do(exprs) => {
                let mut ctx = self.ctx(params);
                for e in exprs {
                    eval(e, &mut ctx)?;
                }
                Ok(ok(0))
            }
            Statement::Set(assignments) => self.set(assignments, params),
            Statement::SetNames(cs, coll) => self.set_names(cs, coll),
            Statement::SetCharset(cs) => self.set_charset(cs),
            Statement::SetTransaction(scope, level, ro) => self.set_transaction(scope, level, ro),
            Statement::Use(db) => {
                self.use_db(db)?;
                Ok(ok(0))
            }
            Statement::Show(kind, filter) => self.show(kind, filter),
            Statement::Kill(id, query_only) => self.kill_statement(id, *query_only, params),
            Statement::Flush(options) => self.flush(options),
            Statement::CreateDatabase(name, if_not_exists) => {
                self.create_database(name, *if_not_exists)
            }
            Statement::DropDatabase(name, if_exists) => self.drop_database(name, *if_exists),
            Statement::Begin(read_only) => {
                // BEGIN inside a transaction commits it first (implicit commit).
                self.table_session().begin_with(*read_only)?;
                Ok(ok(0))
            }
            Statement::Commit => {
                self.table_session().commit()?;
                Ok(ok(0))
            }
            Statement::Rollback => {
                self.table_session().rollback();
                Ok(ok(0))
            }
            Statement::CreateUser(users, if_not_exists, options) => {
                self.create_users(users, *if_not_exists, options)
            }
            Statement::DropUser(users, if_exists) => self.drop_users(users, *if_exists),
            Statement::LockTables(list) => self.lock_tables(list),
            Statement::UnlockTables => {
                self.table_session().unlock_tables()?;
                Ok(ok(0))
            }
            Statement::Savepoint(name) => {
                self.table_session().savepoint(name)?;
                Ok(ok(0))
            }
            Statement::RollbackToSavepoint(name) => {
                self.table_session().rollback_to_savepoint(name)?;
                Ok(ok(0))
            }
            Statement::ReleaseSavepoint(name) => {
                self.table_session().release_savepoint(name)?;
                Ok(ok(0))
            }
            Statement::AlterTableKeys(t, _) => {
                let db = t.db.clone().or_else(|| self.db.clone());
                self.table_session().alter_keys(db.as_deref(), &t.name)?;
                // MySQL's answer for InnoDB: the store keeps its indexes current always.
                self.warn(
                    shoal_errors::ER_ILLEGAL_HA.code,
                    format!(
                        "Table storage engine for '{}' doesn't have this option",
                        t.name
                    ),
                );
                Ok(ok(0))
            }
            Statement::Backup(dir) => self.backup(dir),
            Statement::Prepare(name, text) => self.sql_prepare(name, text),
            Statement::Execute(name, using) => self.sql_execute(name, using),
            Statement::ExecuteImmediate(text, using) => self.sql_execute_immediate(text, using),
            Statement::Deallocate(name) => self.sql_deallocate(name),
            Statement::Account(a) => self.account_statement(a),
            Statement::TableStatement(..) => self.run_table(params),
        }
    }
}

/// A SELECT ran past `max_execution_time`.
fn query_timeout() -> SqlError {
    SqlError::coded(
        shoal_errors::ER_QUERY_TIMEOUT,
        "Query execution was interrupted, maximum statement execution time exceeded",
    )
}

/// Whether `stmt` clears the last statement's diagnostics as it starts (MariaDB's rule): a
/// statement that reads or writes a table, SHOW (which reads information_schema) and the
/// statements on accounts and tables do; a query without a table, SET, DO, USE, transaction
/// control and database DDL do not: the list stays for `SHOW WARNINGS` and `@@warning_count`
/// until such a statement raises a condition of its own, which replaces it.
pub(super) fn clears_diagnostics(stmt: &Statement) -> bool {
    !matches!(
        stmt,
        Statement::Query { tables: false, .. }
            | Statement::Set(_)
            | Statement::SetNames(..)
            | Statement::SetCharset(_)
            | Statement::SetTransaction(..)
            | Statement::Use(_)
            | Statement::Do(_)
            | Statement::Begin(_)
            | Statement::Commit
            | Statement::Rollback
            | Statement::CreateDatabase(..)
            | Statement::DropDatabase(..)
            | Statement::Savepoint(_)
            | Statement::RollbackToSavepoint(_)
            | Statement::ReleaseSavepoint(_)
            // The statement an EXECUTE runs decides for itself; a PREPARE on tables clears.
            | Statement::Prepare(..)
            | Statement::Execute(..)
            | Statement::ExecuteImmediate(..)
            | Statement::Deallocate(_)
    )
}
