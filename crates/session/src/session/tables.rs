//! The session's side of the table engine: its `TableSession` and the statements that run there.
//!
//! The table session is created at first use and holds the session's transaction, row locks,
//! table locks and savepoints. Its settings are the session's variables — autocommit,
//! `transaction_isolation`, `innodb_lock_wait_timeout`, `lock_wait_timeout`,
//! `sql_select_limit`, `max_binlog_cache_size`, `read_only` / `transaction_read_only`, the
//! strictness of `sql_mode` — pushed
//! into it each time it is fetched (`table_session`), read from the per-`SET` cache of hot
//! variables, so a SET never has to know which engine setting it touches. Its kill handle is
//! published in the shared `ProcessEntry` so that KILL reaches a row-lock wait.
//!
//! `run_table` runs the current statement: a prepared statement's plan when there is one, else
//! it plans the text from the tree the session's parse made. Every plan's privileges are
//! checked (`access.rs`) before it runs. While the engine executes, the table session is taken
//! out of the `Session` so the evaluator's [`super::Ctx`] can borrow the session mutably for
//! variables and warnings; it is put back before anything else can look. A prepared SELECT's
//! rows go out with the columns converted at PREPARE (compared by pointer), and a query's row
//! count (or its `SQL_CALC_FOUND_ROWS` count) becomes FOUND_ROWS().

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use shoal_exec::{ExecOutput, Plan, TableSession};
use shoal_proto::Response;
use shoal_sql::ast::{TableLockKind, TableName};
use shoal_sql::value::Value;
use shoal_sql::SqlError;

use super::wire::{exec_response, ok, rows_response};
use super::Session;

impl Session {
    /// The table session, created at first use. Its autocommit, isolation level, timeouts,
    /// limits and read-only restrictions follow the session's variables.
    pub(super) fn table_session(&mut self) -> &mut TableSession {
        if self.table.is_none() {
            let mut ts = self.engine.session();
            *self
                .entry
                .table_kill
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(ts.kill_handle());
            ts.set_visibility(self.visibility.clone());
            self.table = Some(ts);
        }
        let hot = self.hot();
        let (autocommit, iso, timeout) = (hot.autocommit, hot.isolation, hot.lock_wait_timeout);
        let table_timeout = hot.table_lock_wait_timeout;
        let restrictions = shoal_exec::Restrictions {
            server_read_only: self.server.read_only_for(self.is_super),
            session_read_only: hot.read_only,
        };
        let ts = self.table.as_mut().expect("created above");
        ts.set_restrictions(restrictions);
        if ts.autocommit() != autocommit {
            // Turning autocommit on commits; an error there is reported by the SET itself.
            let _ = ts.set_autocommit(autocommit);
        }
        ts.set_isolation(iso);
        ts.set_lock_wait_timeout(Duration::from_secs(timeout));
        ts.set_table_lock_timeout(Duration::from_secs(table_timeout));
        ts.set_select_limit(hot.select_limit);
        ts.set_write_limit(hot.write_limit);
        ts.set_write_mode(if hot.strict {
            shoal_exec::WriteMode::Strict
        } else {
            shoal_exec::WriteMode::Lenient
        });
        ts
    }

    /// Runs the current statement (`cur_stmt`'s plan, else the text `cur_sql`) on the table engine.
    pub(super) fn run_table(&mut self, params: &[Value]) -> Result<Response, SqlError> {
        self.refresh_grants();
        self.table_session();
        let mut ts = self.table.take().expect("created above");
        let stmt = self.cur_stmt.clone();
        let plan = stmt.as_ref().and_then(|s| s.body.plan.as_ref());
        let is_query = |p: &Plan| matches!(p.stmt, shoal_exec::ast::TableStmt::Query(_));
        let mut query = plan.is_some_and(|p| is_query(p));
        let r = {
            match plan {
                Some(p) => match self.check_plan(p) {
                    Ok(()) => {
                        let mut ctx = self.ctx(params);
                        ts.execute(p, params, &mut ctx)
                    }
                    Err(e) => Err(e),
                },
                None => {
                    let sql = self.cur_sql.clone();
                    let db = self.db.clone();
                    let tree = self.cur_tree.take();
                    match ts.prepare_tree(&sql, tree, db.as_deref()) {
                        Ok(p) => match self.check_plan(&p) {
                            Ok(()) => {
                                query = is_query(&p);
                                let mut ctx = self.ctx(params);
                                ts.execute(&p, params, &mut ctx)
                                    .map(|out| self.filter_show_tables(&p, out))
                            }
                            Err(e) => Err(e),
                        },
                        Err(e) => Err(e),
                    }
                }
            }
        };
        let calc_found_rows = ts.take_found_rows();
        self.table = Some(ts);
        let r = r.map(|out| match (out, plan) {
            // A prepared statement's rows: the columns converted at PREPARE, unless the
            // executor returned other ones.
            (ExecOutput::Rows { columns, rows }, Some(p)) if Arc::ptr_eq(&columns, &p.columns) => {
                let s = stmt.as_ref().expect("plan comes from the statement");
                rows_response(s.body.columns.clone(), rows)
            }
            (out, _) => exec_response(out),
        });
        // FOUND_ROWS(): what the last query returned, or counted without its LIMIT.
        if let (true, Ok(Response::Rows(rs))) = (query, &r) {
            self.found_rows = calc_found_rows.unwrap_or(rs.rows.len() as u64);
        }
        r
    }

    /// The value of a one-column query (`SELECT <expr>`: a SET value with a subquery) run on
    /// the table engine with the session's privileges: its first row's, NULL for no row.
    pub(super) fn query_value(&mut self, sql: &str) -> Result<Value, SqlError> {
        self.refresh_grants();
        let db = self.db.clone();
        let plan = self.table_session().prepare(sql, db.as_deref())?;
        self.check_plan(&plan)?;
        let mut ts = self.table.take().expect("created above");
        let r = {
            let mut ctx = self.ctx(&[]);
            ts.execute(&plan, &[], &mut ctx)
        };
        self.table = Some(ts);
        Ok(match r? {
            ExecOutput::Rows { rows, .. } => rows
                .into_iter()
                .next()
                .and_then(|r| r.into_iter().next())
                .unwrap_or(Value::Null),
            ExecOutput::Ok { .. } => Value::Null,
        })
    }

    /// Whether a transaction is open (explicit, or implicit under autocommit=0). There is
    /// none before the table session exists: every transaction is the table session's.
    pub(super) fn in_transaction(&self) -> bool {
        self.table.as_ref().is_some_and(|ts| ts.in_transaction())
    }

    /// 1568 when a transaction is open (a change of the next transaction's characteristics).
    pub(super) fn check_no_transaction(&self) -> Result<(), SqlError> {
        if self.in_transaction() {
            return Err(SqlError::coded(
                shoal_errors::ER_CANT_CHANGE_TX_CHARACTERISTICS,
                "Transaction characteristics can't be changed while a transaction is in progress",
            ));
        }
        Ok(())
    }

    /// `SET TRANSACTION READ ONLY | READ WRITE` / `SET @@transaction_read_only` (no scope):
    /// the next transaction's access mode.
    pub(super) fn set_next_read_only(&mut self, read_only: bool) {
        self.table_session().set_next_read_only(read_only);
    }

    /// `LOCK TABLES t [AS a] READ | WRITE, ...`: LOCK TABLES in each table's database and
    /// SELECT on the table, then the table engine's locks.
    pub(super) fn lock_tables(
        &mut self,
        list: &[(TableName, Option<String>, TableLockKind)],
    ) -> Result<Response, SqlError> {
        let list: Vec<_> = list
            .iter()
            .map(|(t, alias, k)| (t.db.clone(), t.name.clone(), alias.clone(), *k))
            .collect();
        let db = self.db.clone();
        // MySQL: LOCK TABLES in the table's database (1044) and SELECT on the table.
        for (d, t, _, _) in &list {
            let d = d
                .clone()
                .or_else(|| db.clone())
                .ok_or(SqlError::NoDatabase)?;
            let c = self.checker();
            c.database(&d, crate::privileges::LOCK_TABLES)?;
            c.table(&d, t, crate::privileges::SELECT, "SELECT")?;
        }
        self.table_session().lock_tables(&list, db.as_deref())?;
        Ok(ok(0))
    }
}
