//! The protocol's seam: [`Backend`] for [`Session`].
//!
//! Life cycle: [`crate::Server::open_session`] registers a [`crate::ProcessEntry`] and builds
//! the session; `authenticate` checks, in MySQL's order, `require_secure_transport`, the
//! account and its password (by plugin, `verify_password`: `mysql_native_password`, and
//! `caching_sha2_password` with its fast-path cache), REQUIRE SSL and account locking, the
//! admin port's `extra_max_connections`, `max_connections` (one extra slot for a super user),
//! the initial database and `max_user_connections`. Every command is bracketed by
//! `command_begin` / `command_end`, which maintain the process list (`Command`, `Time`, `Info`)
//! and `Threads_running` (kept balanced by `in_command` if the connection dies mid-command),
//! and clear a KILL QUERY flag when the command ends; `disconnect` (or drop) rolls back, frees
//! row and table locks and unregisters. KILL from another session flips the victim's flags
//! through the shared `ProcessEntry` and, for KILL CONNECTION, calls the network layer's
//! `ConnectionControl::shutdown`.
//!
//! Prepared statements: COM_STMT_PREPARE parses once and, for a query or table statement,
//! plans it on the table engine (`Arc<Plan>`) and converts its result columns to protocol form
//! once; the session keeps all of it as one `Stmt` per statement id, so COM_STMT_EXECUTE binds
//! its parameters to that plan and copies nothing (`prepared.rs`, shared with SQL's PREPARE). COM_RESET_CONNECTION rolls back, drops the
//! prepared statements and user variables and takes fresh copies of the global variables.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use shoal_proto::{
    AuthError, AuthPlugin, Backend, Column, Credentials, ErrorInfo, LoginRequest, PrepareOk,
    Response, SessionStatus, Value as PValue,
};
use shoal_sql::value::Value;
use shoal_sql::SqlError;

use super::prepared::{unknown_stmt, wrong_arguments};
use super::wire::{exec_column, from_proto_value, to_error_info};
use super::Session;
use crate::{KILL_NONE, KILL_QUERY};

/// COM_QUERY.
const COM_QUERY: u8 = 0x03;
/// COM_STMT_EXECUTE.
const COM_STMT_EXECUTE: u8 = 0x17;

/// ER_SECURE_TRANSPORT_REQUIRED: a login without TLS (or a Unix socket) while
/// `require_secure_transport` is ON.
fn insecure_transport() -> ErrorInfo {
    ErrorInfo::coded(
        shoal_errors::ER_SECURE_TRANSPORT_REQUIRED,
        "Connections using insecure transport are prohibited while \
         --require_secure_transport=ON.",
    )
}

impl Session {
    /// Checks the password the client proved against the account, by plugin; a
    /// `caching_sha2_password` scramble the cache cannot vouch for asks for full
    /// authentication. Successful full authentications fill the cache.
    fn verify_password(
        &mut self,
        account: &crate::users::Account,
        login: &LoginRequest<'_>,
    ) -> Result<bool, AuthError> {
        use crate::users::Auth;
        let cache = self.server.accounts().sha2_cache();
        Ok(match (&account.auth, login.credentials) {
            (Auth::Native(stored), Credentials::Native(response)) => {
                crate::users::verify_native(stored.as_ref(), login.scramble, response)
            }
            (Auth::Sha2(None), Credentials::Sha2Scramble(_)) => !login.credentials.password_given(),
            (Auth::Sha2(Some(_)), Credentials::Sha2Scramble(response)) => {
                if !login.credentials.password_given() {
                    return Ok(false);
                }
                let stored = account.auth.auth_string();
                match cache.get(&account.user, &account.host, &stored) {
                    Some(stage2)
                        if shoal_proto::auth::verify_sha2_scramble(
                            &stage2,
                            login.scramble,
                            response,
                        ) =>
                    {
                        cache.count_fast();
                        true
                    }
                    _ => return Err(AuthError::FullAuthRequired),
                }
            }
            (auth @ Auth::Sha2(_), Credentials::Clear(password)) => {
                let ok = auth.verify_clear(password);
                if ok && auth.has_password() {
                    cache.insert(
                        &account.user,
                        &account.host,
                        &auth.auth_string(),
                        shoal_proto::auth::sha2_stage2(password),
                    );
                    cache.count_full();
                }
                ok
            }
            // The account's plugin changed between the protocol's question and the answer.
            _ => false,
        })
    }

    /// Enters or leaves a command: `Threads_running` counts the session once (`in_command`
    /// keeps it balanced whatever the order of calls), and the process entry's `running` flag
    /// tells KILL QUERY whether there is a statement to interrupt.
    fn set_in_command(&mut self, on: bool) {
        if self.in_command != on {
            self.in_command = on;
            let running = &self.server.counters.threads_running;
            if on {
                running.fetch_add(1, Ordering::Relaxed);
            } else {
                running.fetch_sub(1, Ordering::Relaxed);
            }
        }
        self.entry.running.store(on, Ordering::Release);
    }

    /// What COM_RESET_CONNECTION and a disconnect both give up: the transaction (rolled back),
    /// row and table locks, and the prepared statements (uncounted from
    /// `Prepared_stmt_count`).
    fn release_all(&mut self) {
        if let Some(ts) = self.table.as_mut() {
            ts.rollback();
            ts.release_table_locks();
        }
        let n = (self.prepared.len() + self.named.len()) as u64;
        self.prepared.clear();
        self.named.clear();
        self.count_prepared(false, n);
    }
}

impl Backend for Session {
    fn auth_plugin(&mut self, user: &str, host: &str) -> AuthPlugin {
        self.server
            .find_account(user, host)
            .map(|a| a.auth.plugin())
            .unwrap_or_else(|| self.server.default_auth_plugin())
    }

    fn authenticate(&mut self, login: &LoginRequest<'_>) -> Result<(), AuthError> {
        let host = login.host.to_string();
        self.host = host.clone();
        let denied = || {
            ErrorInfo::coded(
                shoal_errors::ER_ACCESS_DENIED_ERROR,
                format!(
                    "Access denied for user '{}'@'{}' (using password: {})",
                    login.user,
                    host,
                    if login.credentials.password_given() {
                        "YES"
                    } else {
                        "NO"
                    }
                ),
            )
        };
        if !login.secure_transport
            && self
                .server
                .variable_value("require_secure_transport")
                .is_some_and(|v| v.as_bool())
        {
            return Err(insecure_transport().into());
        }
        let Some(account) = self.server.find_account(login.user, &host) else {
            // caching_sha2_password: ask for the password as for an uncached account, so that
            // the exchange does not tell a probe whether the account exists.
            if matches!(login.credentials, Credentials::Sha2Scramble(_))
                && login.credentials.password_given()
            {
                return Err(AuthError::FullAuthRequired);
            }
            return Err(denied().into());
        };
        if !self.verify_password(&account, login)? {
            return Err(denied().into());
        }
        // REQUIRE SSL: the same 1045 as a wrong password (MySQL gives nothing more away).
        if account.require_ssl && !login.tls {
            return Err(denied().into());
        }
        if account.locked {
            return Err(AuthError::Denied(ErrorInfo::coded(
                shoal_errors::ER_ACCOUNT_HAS_BEEN_LOCKED,
                format!(
                    "Access denied for user '{}'@'{}'. Account is locked.",
                    login.user, host
                ),
            )));
        }
        if self.admin {
            // The administrative port is for administrators (MySQL: SERVICE_CONNECTION_ADMIN;
            // here SUPER or CONNECTION_ADMIN), at most `extra_max_connections` at once.
            if !account.is_super() {
                return Err(AuthError::Denied(ErrorInfo::coded(shoal_errors::ER_SPECIFIC_ACCESS_DENIED_ERROR, "Access denied; you need (at least one of) the SUPER or CONNECTION_ADMIN privilege(s) for this operation",
                )));
            }
            let max = self.server.vars.get("extra_max_connections").as_u64() as usize;
            let n = self.server.admin_sessions.fetch_add(1, Ordering::SeqCst);
            if n >= max {
                self.server.admin_sessions.fetch_sub(1, Ordering::SeqCst);
                return Err(ErrorInfo::coded(
                    shoal_errors::ER_CON_COUNT_ERROR,
                    "Too many connections",
                )
                .into());
            }
            self.admin_counted = true;
        }
        if !self.admin {
            let count = self.server.connection_count() as u64;
            let max = self.server.max_connections() as u64 + account.is_super() as u64;
            if count > max {
                self.server
                    .status()
                    .connection_errors_max_connections
                    .fetch_add(1, Ordering::Relaxed);
                return Err(ErrorInfo::coded(
                    shoal_errors::ER_CON_COUNT_ERROR,
                    "Too many connections",
                )
                .into());
            }
        }
        if let Some(db) = login.database.filter(|d| !d.is_empty()) {
            let checker = crate::privileges::Checker {
                grants: &account.grants,
                user: login.user,
                host: &host,
            };
            checker.enter_database(db).map_err(|e| to_error_info(&e))?;
            if !self.catalog().database_exists(db) {
                return Err(AuthError::Denied(ErrorInfo::coded(
                    shoal_errors::ER_BAD_DB_ERROR,
                    format!("Unknown database '{db}'"),
                )));
            }
            self.db = Some(db.to_string());
        }
        self.account_limit = account.max_user_connections;
        let limit = self.user_connection_limit();
        if !self
            .server
            .admit_user(&self.entry, login.user, &account.host, limit)
        {
            return Err(AuthError::Denied(ErrorInfo::coded(
                shoal_errors::ER_TOO_MANY_USER_CONNECTIONS,
                format!(
                    "User {} already has more than 'max_user_connections' active connections",
                    login.user
                ),
            )));
        }
        self.server.note_login(&self.entry.host);
        self.user = login.user.to_string();
        self.account_host = account.host.clone();
        self.set_account_grants(&account);
        self.password_used = login.credentials.password_given();
        self.interactive = login.interactive;
        self.hot.set(None);
        let mut info = self.entry.info();
        info.db = self.db.clone();
        info.command = "Sleep";
        info.state = "";
        info.since = std::time::Instant::now();
        Ok(())
    }

    fn query(&mut self, sql: &str, multi_statements: bool) -> Vec<Result<Response, ErrorInfo>> {
        self.run_query(sql, multi_statements)
    }

    /// String literals whose bytes are not UTF-8 are read as the binary strings they hold
    /// (`shoal_sql::query_bytes`), so a dump's raw BLOB bytes are stored as they were.
    fn query_bytes(
        &mut self,
        sql: &[u8],
        multi_statements: bool,
    ) -> Vec<Result<Response, ErrorInfo>> {
        self.run_query(&shoal_sql::query_bytes::query_text(sql), multi_statements)
    }

    fn init_db(&mut self, database: &str) -> Result<(), ErrorInfo> {
        self.server.counters.com("change_db");
        self.use_db(database).map_err(|e| to_error_info(&e))
    }

    fn field_list(&mut self, table: &str, _wildcard: &str) -> Result<Vec<Column>, ErrorInfo> {
        self.server.counters.com("field_list");
        let db = self
            .db
            .clone()
            .ok_or_else(|| to_error_info(&SqlError::NoDatabase))?;
        // The table's columns as a query over it describes them (MySQL adds each column's
        // default value; clients use the names and types). SELECT privilege on it is needed.
        let sql = format!("SELECT * FROM `{}` LIMIT 0", table.replace('`', "``"));
        self.refresh_grants();
        let plan = self
            .table_session()
            .prepare(&sql, Some(&db))
            .and_then(|plan| self.check_plan(&plan).map(|()| plan))
            .map_err(|e| to_error_info(&e))?;
        Ok(plan.columns.iter().map(exec_column).collect())
    }

    fn statistics(&mut self) -> String {
        self.server.counters.com("statistics");
        let up = self.server.uptime().as_secs().max(1);
        let q = self.server.counters.questions.load(Ordering::Relaxed);
        format!(
            "Uptime: {up}  Threads: {}  Questions: {q}  Slow queries: 0  Opens: 0  Flush tables: 1  Open tables: 0  Queries per second avg: {:.3}",
            self.server.connection_count(),
            q as f64 / up as f64
        )
    }

    fn kill(&mut self, id: u32) -> Result<(), ErrorInfo> {
        self.server.counters.com("kill");
        self.server.kill(id, false, &self.user, self.is_super)
    }

    fn reset_connection(&mut self) {
        self.server.counters.com("reset_connection");
        self.release_all();
        self.user_vars.clear();
        self.vars = self.server.vars.session_copy();
        // A pending `SET TRANSACTION READ ...` goes too: the next transaction has the
        // session's (fresh) access mode.
        let read_only = self.hot().read_only;
        if let Some(ts) = self.table.as_mut() {
            ts.set_next_read_only(read_only);
        }
        self.diag.clear();
        self.last_insert_id = 0;
        self.found_rows = 0;
    }

    /// As [`Self::query_bytes`]: literals whose bytes are not UTF-8 are the binary strings
    /// they hold.
    fn prepare_bytes(&mut self, stmt_id: u32, sql: &[u8]) -> Result<PrepareOk, ErrorInfo> {
        self.prepare(stmt_id, &shoal_sql::query_bytes::query_text(sql))
    }

    fn prepare(&mut self, stmt_id: u32, sql: &str) -> Result<PrepareOk, ErrorInfo> {
        self.server.counters.com("stmt_prepare");
        let (stmt, params) = self.build_stmt(sql).map_err(|e| to_error_info(&e))?;
        let params = param_count(params)?;
        let columns = stmt.body.columns.to_vec();
        if self.prepared.insert(stmt_id, Arc::new(stmt)).is_none() {
            self.count_prepared(true, 1);
        }
        Ok(PrepareOk { params, columns })
    }

    fn execute(&mut self, stmt_id: u32, params: &[PValue]) -> Result<Response, ErrorInfo> {
        self.server.counters.com("stmt_execute");
        self.server
            .counters
            .questions
            .fetch_add(1, Ordering::Relaxed);
        let p = self.prepared.get(stmt_id).cloned().ok_or_else(|| {
            to_error_info(&unknown_stmt(&stmt_id.to_string(), "mysqld_stmt_execute"))
        })?;
        if params.len() != Self::stmt_params(&p) {
            return Err(to_error_info(&wrong_arguments("mysqld_stmt_execute")));
        }
        self.set_process_text(Some(p.text.clone()));
        let values: Vec<Value> = params.iter().map(from_proto_value).collect();
        self.execute_stmt(p, &values).map_err(|e| to_error_info(&e))
    }

    fn close_statement(&mut self, stmt_id: u32) {
        self.server.counters.com("stmt_close");
        if self.prepared.remove(stmt_id).is_some() {
            self.count_prepared(false, 1);
        }
    }

    fn command_begin(&mut self, command: u8) {
        self.set_in_command(true);
        let mut info = self.entry.info();
        info.command = match command {
            COM_QUERY => "Query",
            COM_STMT_EXECUTE => "Execute",
            0x16 => "Prepare",
            0x0e => "Ping",
            0x02 => "Init DB",
            0x04 => "Field List",
            0x09 => "Statistics",
            0x0c => "Kill",
            0x19 => "Close stmt",
            0x1a => "Reset stmt",
            0x1f => "Reset connection",
            _ => "Query",
        };
        info.since = std::time::Instant::now();
    }

    fn command_end(&mut self) {
        self.set_in_command(false);
        let _ = self.entry.kill.compare_exchange(
            KILL_QUERY,
            KILL_NONE,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        let mut info = self.entry.info();
        info.command = "Sleep";
        info.state = "";
        info.text = None;
        info.since = std::time::Instant::now();
    }

    fn status(&self) -> SessionStatus {
        SessionStatus {
            in_transaction: self.in_transaction(),
            autocommit: self.autocommit(),
        }
    }

    fn max_allowed_packet(&self) -> usize {
        self.hot().max_allowed_packet as usize
    }

    fn disconnect(&mut self) {
        if !self.closed {
            self.closed = true;
            if std::mem::take(&mut self.admin_counted) {
                self.server.admin_sessions.fetch_sub(1, Ordering::SeqCst);
            }
            self.command_end();
            // A client gone mid-transaction: roll back and free its row and table locks.
            self.release_all();
            *self
                .entry
                .table_kill
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = None;
            self.server.unregister(self.entry.id);
        }
    }
}

/// A prepared statement's placeholder count as the protocol's 16-bit field, or MySQL's 1390:
/// past 65535, `as u16` announced 0 parameters for 65536 (found by fuzzing).
fn param_count(n: usize) -> Result<u16, ErrorInfo> {
    u16::try_from(n).map_err(|_| {
        ErrorInfo::coded(
            shoal_errors::ER_PS_MANY_PARAM,
            "Prepared statement contains too many placeholders",
        )
    })
}
