//! One connection's session: the [`shoal_proto::Backend`] the protocol calls, and the executor
//! of session statements (SET, SHOW, USE, KILL, transaction control, CREATE/DROP DATABASE and
//! USER); queries and table statements run on the table engine (`shoal_exec::TableSession`).
//!
//! This module holds the [`Session`] state and its small accessors for the network layer and
//! the pool; each job has a module of its own:
//!
//! | module | job |
//! |---|---|
//! | `backend` | the protocol's seam: login, COM_* commands, prepared statements, the process list's `Command` column, disconnect |
//! | `dispatch` | COM_QUERY text and one statement: Com_ counters, diagnostics, `max_execution_time`, routing by statement kind |
//! | `prepared` | prepared statements, by protocol id and by SQL name (PREPARE / EXECUTE / DEALLOCATE) |
//! | `tables` | the table session (created at first use, its settings synced from the variables) and running statements on it |
//! | `variables` | reading and setting system variables, the per-`SET` cache of the hot ones, user variables, `sql_mode` |
//! | `charset` | character sets and collations: SET NAMES, SET CHARACTER SET, SHOW CHARACTER SET / COLLATION |
//! | `context` | [`Ctx`], the evaluator's view of the session (variables, parameters, a SHOW row) |
//! | `show` | the SHOW statements the session answers itself |
//! | `admin` | server administration: USE, CREATE/DROP DATABASE and USER, KILL, FLUSH, BACKUP |
//! | `access` | cached grants, privilege checks and the account statements (GRANT, REVOKE, ...) |
//! | `wire` | SQL values, results and errors in the protocol's form |
//!
//! A session is owned by the protocol state of its connection and moved between threads
//! between commands (the pool runs any command on any worker); what other connections must
//! reach (KILL flags, the process list's row) is in the shared [`ProcessEntry`]. Errors are
//! `SqlError`s (code + SQLSTATE) up to the protocol seam, where `wire::to_error_info` turns
//! them into the protocol's `ErrorInfo`.

mod access;
mod admin;
mod backend;
mod charset;
mod context;
mod dispatch;
mod prepared;
mod show;
mod tables;
mod variables;
mod wire;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use shoal_proto::{Backend, StmtMap};
use shoal_sql::value::{DateTime, Value};

use shoal_exec::{TableEngine, TableSession};
use shoal_sched::PrioHint;
use shoal_sql::catalog::Catalog;

use crate::plans::StmtBody;
use crate::vars::SessionVars;
use crate::{ProcessEntry, Server};

pub use context::Ctx;
use variables::HotVars;
pub use wire::{to_error_info, to_result_set};

/// A diagnostic of the last statement: (level, code, message).
type Diag = (&'static str, u16, String);

/// How many diagnostics a statement keeps for SHOW WARNINGS (MariaDB's default
/// `max_error_count`); the ones past it are counted, not kept.
const MAX_ERROR_COUNT: usize = 64;

/// The last statement's diagnostics: what SHOW WARNINGS / SHOW ERRORS list (the first
/// [`MAX_ERROR_COUNT`]) and what `@@warning_count` and the OK packet count (all of them: a
/// non-strict INSERT of a million rows that do not fit warns a million times, and keeps 64).
///
/// When a statement starts ([`Diagnostics::begin`]) the list is cleared if the statement uses a
/// table; any other statement (`SELECT 1`, `SET`, `SELECT @@warning_count`) leaves it to be read
/// and only replaces it when it raises a condition itself. That is MariaDB's rule, and what
/// makes `@@warning_count` and `@@error_count` useful: they count the conditions of the
/// statement before, errors included in `@@warning_count`.
#[derive(Debug, Default)]
pub(super) struct Diagnostics {
    list: Vec<Diag>,
    /// Notes and warnings raised past the first [`MAX_ERROR_COUNT`].
    dropped: u64,
    /// The list is an earlier statement's, kept for reading: the running statement's first
    /// condition replaces it, and the running statement's OK packet counts none of it.
    stale: bool,
}

impl Diagnostics {
    pub(super) fn clear(&mut self) {
        self.list.clear();
        self.dropped = 0;
        self.stale = false;
    }

    /// A statement starts: `clears` (it uses a table) empties the list at once; otherwise the
    /// list stays until the statement raises a condition.
    pub(super) fn begin(&mut self, clears: bool) {
        if clears {
            self.clear();
        } else {
            self.stale = true;
        }
    }

    /// Adds a note or warning.
    pub(super) fn push(&mut self, d: Diag) {
        if self.stale {
            self.clear();
        }
        if self.list.len() < MAX_ERROR_COUNT {
            self.list.push(d);
        } else {
            self.dropped += 1;
        }
    }

    /// The statement failed: the error is its only diagnostic.
    pub(super) fn set_error(&mut self, code: u16, message: String) {
        self.list = vec![("Error", code, message)];
        self.dropped = 0;
        self.stale = false;
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Diag> {
        self.list.iter()
    }

    /// Every condition, errors included (`@@warning_count`).
    pub(super) fn warning_count(&self) -> u64 {
        self.list.len() as u64 + self.dropped
    }

    /// The notes and warnings the running statement raised (its OK / EOF packet's count).
    pub(super) fn raised_warnings(&self) -> u64 {
        if self.stale {
            return 0;
        }
        self.list.iter().filter(|d| d.0 != "Error").count() as u64 + self.dropped
    }

    /// Errors (`@@error_count`).
    pub(super) fn error_count(&self) -> u64 {
        self.list.iter().filter(|d| d.0 == "Error").count() as u64
    }
}

/// Per-connection state.
pub struct Session {
    server: Arc<Server>,
    entry: Arc<ProcessEntry>,
    /// This session's copy of the system variables.
    vars: SessionVars,
    /// Cache of the variables read on every statement (see [`HotVars`]).
    hot: std::cell::Cell<Option<HotVars>>,
    /// Authenticated user name.
    user: String,
    /// Client host (no port).
    host: String,
    /// Host pattern of the matched account (for CURRENT_USER()).
    account_host: String,
    /// Whether the account may kill anyone's threads and use the reserved connection slot
    /// (SUPER or CONNECTION_ADMIN), kept in step with `grants`.
    is_super: bool,
    /// The account's privileges as of `grants_version` (see `access.rs`).
    grants: Arc<crate::privileges::Grants>,
    /// The account store's version `grants` was read at.
    grants_version: u64,
    /// Whether the login sent a password (how 1045 says `using password`).
    password_used: bool,
    /// What information_schema shows this session (`None`: everything), from `grants`.
    visibility: Option<shoal_exec::show::Visibility>,
    /// The account's `MAX_USER_CONNECTIONS` (0: the global `max_user_connections` applies).
    account_limit: u64,
    /// Whether the login set CLIENT_INTERACTIVE.
    interactive: bool,
    /// `Ssl_version` and `Ssl_cipher` of the connection's TLS session (empty without TLS).
    tls: Option<(String, String)>,
    /// Connection arrived on the admin/extra port: not subject to max_connections.
    admin: bool,
    /// Counted in the server's `admin_sessions` (released at disconnect).
    admin_counted: bool,
    /// Current database.
    db: Option<String>,
    /// User variables, keyed by lower-case name.
    user_vars: HashMap<String, Value>,
    /// Prepared statements by protocol id (shared: each execution takes a reference, not a
    /// copy of the text, statement, plan or column descriptions).
    prepared: StmtMap<Arc<Stmt>>,
    /// SQL-level prepared statements (`PREPARE name FROM ...`), keyed by lower-case name.
    named: HashMap<String, Arc<Stmt>>,
    /// LAST_INSERT_ID().
    last_insert_id: u64,
    /// FOUND_ROWS(): rows of the last query (see `run_table`).
    found_rows: u64,
    /// Diagnostics of the last statement (SHOW WARNINGS / ERRORS).
    diag: Diagnostics,
    /// Start time of the running statement (NOW()).
    stmt_time: DateTime,
    /// RAND()'s generators: the session's and the running statement's seeded ones.
    rand: shoal_sql::func::RandState,
    /// When the running SELECT must stop (`max_execution_time`, milliseconds; 0 = never).
    stmt_deadline: Option<std::time::Instant>,
    /// Whether a command is between `command_begin` and `command_end` (keeps
    /// `Threads_running` balanced if the connection dies mid-command).
    in_command: bool,
    /// Whether `disconnect` already ran.
    closed: bool,
    /// The server's table engine: every query and table statement runs there.
    engine: Arc<TableEngine>,
    /// Table statements and transactions on `engine` (created at first use, see `tables.rs`).
    table: Option<TableSession>,
    /// Text of the statement being run (table statements without a plan are handed to the
    /// engine as text).
    cur_sql: Arc<str>,
    /// `cur_sql` as the session's parse read it, for the table engine to translate without
    /// parsing the text again (taken by `run_table`; `None` for the session's own statements).
    cur_tree: Option<shoal_sql::Tree>,
    /// The prepared statement being executed (its plan and protocol columns), if any.
    cur_stmt: Option<Arc<Stmt>>,
}

/// A prepared statement as a session keeps it: everything an execution needs, built once at
/// PREPARE, so that an execution touches one map entry and copies nothing.
struct Stmt {
    /// The statement's text (process list; the table engine's input when there is no plan):
    /// the session's own reference, so that executions write no count other sessions share.
    text: Arc<str>,
    /// What PREPARE built, shared with every session that prepared the same table statement
    /// in the same database (see [`crate::plans`]).
    body: Arc<StmtBody>,
}

fn now_datetime() -> DateTime {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    DateTime::from_unix(d.as_secs() as i64, d.subsec_micros())
}

impl Session {
    pub(crate) fn new(
        server: Arc<Server>,
        entry: Arc<ProcessEntry>,
        engine: Arc<TableEngine>,
    ) -> Session {
        let vars = server.vars.session_copy();
        let host = entry
            .host
            .rsplit_once(':')
            .map(|(h, _)| h.trim_matches(['[', ']']).to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| entry.host.clone());
        Session {
            server,
            entry,
            vars,
            hot: std::cell::Cell::new(None),
            user: String::new(),
            host,
            account_host: String::new(),
            is_super: false,
            grants: Arc::default(),
            grants_version: 0,
            password_used: false,
            visibility: None,
            account_limit: 0,
            interactive: false,
            tls: None,
            admin: false,
            admin_counted: false,
            db: None,
            user_vars: HashMap::new(),
            prepared: StmtMap::new(),
            named: HashMap::new(),
            last_insert_id: 0,
            found_rows: 0,
            diag: Diagnostics::default(),
            stmt_time: now_datetime(),
            rand: shoal_sql::func::RandState::default(),
            stmt_deadline: None,
            in_command: false,
            closed: false,
            engine,
            table: None,
            cur_sql: Arc::from(""),
            cur_tree: None,
            cur_stmt: None,
        }
    }

    /// Connection id.
    pub fn id(&self) -> u32 {
        self.entry.id
    }

    /// Marks the connection as arriving on the admin/extra port (exempt from
    /// `max_connections`).
    pub fn set_admin(&mut self, admin: bool) {
        self.admin = admin;
    }

    /// The network layer completed a TLS handshake: `Ssl_version` / `Ssl_cipher` (OpenSSL's
    /// names) for SHOW STATUS.
    pub fn set_tls(&mut self, version: String, cipher: String) {
        self.tls = Some((version, cipher));
    }

    /// How long the connection may stay idle: `wait_timeout`, or `interactive_timeout` for an
    /// interactive client.
    pub fn idle_timeout(&self) -> Duration {
        self.hot().idle_timeout
    }

    /// The session's `net_read_timeout`.
    pub fn net_read_timeout(&self) -> Duration {
        Duration::from_secs(self.var_u64("net_read_timeout", 30))
    }

    /// The session's `net_write_timeout`.
    pub fn net_write_timeout(&self) -> Duration {
        Duration::from_secs(self.var_u64("net_write_timeout", 60))
    }

    /// Whether the connection was killed (KILL CONNECTION): the network layer closes it.
    pub fn killed(&self) -> bool {
        self.entry.connection_killed()
    }

    /// Whether the running statement was interrupted (KILL QUERY or KILL CONNECTION).
    pub fn query_killed(&self) -> bool {
        self.entry.query_killed()
    }

    /// The session's value of a system variable, as text (for the network layer and pool).
    pub fn variable(&self, name: &str) -> Option<String> {
        self.vars
            .get(&self.server.vars, name)
            .ok()
            .map(|v| v.display())
    }

    /// What the thread pool needs to schedule this session's next command: its transaction
    /// and row-lock state (the lock-holder guarantee) and its own `thread_pool_priority`,
    /// `thread_pool_high_prio_mode` and `thread_pool_high_prio_tickets` (session values: copied
    /// from the globals at connect, changed by SET SESSION; SET GLOBAL affects new sessions).
    pub fn scheduling_hint(&self) -> PrioHint {
        let c = self.hot();
        PrioHint {
            in_transaction: self.in_transaction(),
            // Row locks live in the table engine's transaction; with autocommit=0 a locking
            // read opens one implicitly and it counts exactly like BEGIN.
            // So do LOCK TABLES and the global read lock: others wait for this session's
            // UNLOCK TABLES, which the pool must run even at thread_pool_max_threads.
            holds_locks: self
                .table
                .as_ref()
                .is_some_and(|ts| ts.holds_locks() || ts.holds_table_locks()),
            priority: c.priority,
            mode: c.mode,
            tickets: c.tickets,
        }
    }

    /// Current database.
    pub fn database(&self) -> Option<&str> {
        self.db.as_deref()
    }

    /// Authenticated user.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The table engine's catalog (databases and tables).
    fn catalog(&self) -> Arc<dyn Catalog> {
        self.engine.catalog()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.disconnect();
    }
}
