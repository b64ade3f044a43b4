//! One connection's session: the [`Backend`] the protocol calls, and the executor of session
//! statements (SET, SHOW, USE, KILL, transaction control, CREATE/DROP DATABASE and USER).
//!
//! Life cycle: [`crate::Server::open_session`] registers a [`ProcessEntry`] and builds the
//! session; `authenticate` checks the account (`mysql_native_password`), `max_connections` (one
//! extra slot for a super user) and the initial database; every command is bracketed by
//! `command_begin`/`command_end`, which maintain the process list (`Command`, `Time`, `Info`),
//! `Threads_running`, and clear a KILL QUERY flag when the command ends; `disconnect` (or drop)
//! unregisters. KILL from another session flips the victim's flags through the shared
//! `ProcessEntry` and, for KILL CONNECTION, calls the network layer's `ConnectionControl::shutdown`.
//!
//! Statement execution: text is split (`shoal_sql::split_statements`), each statement parsed and
//! translated by `shoal_sql`, then executed here against the server state; expressions are
//! evaluated by `shoal_sql::eval` through the [`Ctx`] adapter, which exposes variables, user
//! variables, parameters and session facts. Errors are `SqlError`s (code + SQLSTATE) turned into
//! `ErrorInfo` at the seam; the last statement's diagnostics feed SHOW WARNINGS / SHOW ERRORS.
//!
//! Tables: the server has a table engine ([`crate::Server::set_table_engine`]); each session
//! lazily opens a `shoal_exec::TableSession`. Every query (`Statement::Query`: with or without
//! tables, on information_schema or another subsystem's virtual tables), the parser's
//! `TableStatement`s, SHOW TABLES / COLUMNS / CREATE TABLE / INDEX / TABLE STATUS and text the
//! session parser rejects (DESCRIBE, EXPLAIN, ALTER TABLE ...) go to the engine as text;
//! COM_STMT_PREPARE plans them once (`Arc<Plan>` kept per statement id) and COM_STMT_EXECUTE
//! binds parameters to that plan. BEGIN/COMMIT/ROLLBACK go to the
//! table session; autocommit, `transaction_isolation` and `innodb_lock_wait_timeout` are synced
//! to it before every use; the status flags' in-transaction bit is the table session's. KILL
//! reaches a row-lock wait through the `KillHandle` in the shared `ProcessEntry`; disconnect
//! and COM_RESET_CONNECTION roll back (freeing row locks).

mod access;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use shoal_proto::{
    AuthError, AuthPlugin, Backend, Column, ColumnFlags, ColumnType, Credentials, ErrorInfo,
    LoginRequest, OkInfo, PrepareOk, Response, ResultSet, SessionStatus, StmtMap, Value as PValue,
};
use shoal_sql::ast::{SetExpr, SetTarget, ShowFilter, ShowKind, Statement, VarScope};
use shoal_sql::eval::{eval, like, Context};
use shoal_sql::plan::Prepared;
use shoal_sql::result::{ColumnInfo, QueryResult};
use shoal_sql::value::{DateTime, SqlType, Value};
use shoal_sql::{split_statements, SqlError};

use shoal_exec::{ExecOutput, Isolation, Plan, TableSession};
use shoal_sched::{HighPrioMode, PrioHint, SessionPriority};

use crate::hooks::FlushFn;
use crate::status::com_index;
use crate::vars::{Scope, SessionVars, SetValue, VarError, VarValue, DEFAULT_SQL_MODE};
use crate::{ProcessEntry, Server, KILL_NONE, KILL_QUERY};

/// COM_QUERY.
const COM_QUERY: u8 = 0x03;
/// COM_STMT_EXECUTE.
const COM_STMT_EXECUTE: u8 = 0x17;

/// Character sets we accept in SET NAMES / SET CHARACTER SET, with their default collation.
const CHARSETS: &[(&str, &str, &str, u32)] = &[
    ("utf8mb4", "utf8mb4_general_ci", "UTF-8 Unicode", 4),
    ("utf8mb3", "utf8mb3_general_ci", "UTF-8 Unicode", 3),
    ("utf8", "utf8mb3_general_ci", "UTF-8 Unicode", 3),
    ("latin1", "latin1_swedish_ci", "cp1252 West European", 1),
    ("ascii", "ascii_general_ci", "US ASCII", 1),
    ("binary", "binary", "Binary pseudo charset", 1),
];

/// Collations: (name, charset, id, default).
const COLLATIONS: &[(&str, &str, u32, bool)] = &[
    ("ascii_general_ci", "ascii", 11, true),
    ("binary", "binary", 63, true),
    ("latin1_swedish_ci", "latin1", 8, true),
    ("latin1_bin", "latin1", 47, false),
    ("utf8mb3_general_ci", "utf8mb3", 33, true),
    ("utf8mb3_bin", "utf8mb3", 83, false),
    ("utf8mb4_general_ci", "utf8mb4", 45, false),
    ("utf8mb4_bin", "utf8mb4", 46, false),
    ("utf8mb4_unicode_ci", "utf8mb4", 224, false),
    ("utf8mb4_0900_ai_ci", "utf8mb4", 255, true),
];

/// sql_mode flags MySQL 8 knows, in the order of their bits (the order `@@sql_mode` prints).
const SQL_MODES: &[&str] = &[
    "REAL_AS_FLOAT",
    "PIPES_AS_CONCAT",
    "ANSI_QUOTES",
    "IGNORE_SPACE",
    "ONLY_FULL_GROUP_BY",
    "NO_UNSIGNED_SUBTRACTION",
    "NO_DIR_IN_CREATE",
    "ANSI",
    "NO_AUTO_VALUE_ON_ZERO",
    "NO_BACKSLASH_ESCAPES",
    "STRICT_TRANS_TABLES",
    "STRICT_ALL_TABLES",
    "NO_ZERO_IN_DATE",
    "NO_ZERO_DATE",
    "ALLOW_INVALID_DATES",
    "ERROR_FOR_DIVISION_BY_ZERO",
    "TRADITIONAL",
    "HIGH_NOT_PRECEDENCE",
    "NO_ENGINE_SUBSTITUTION",
    "PAD_CHAR_TO_FULL_LENGTH",
    "TIME_TRUNCATE_FRACTIONAL",
];

/// A diagnostic of the last statement: (level, code, message).
type Diag = (&'static str, u16, String);

/// The variables read on every statement or by the pool after every command, converted once
/// per [`SessionVars::generation`] (that is, once per session `SET`). Looking them up by name
/// each time (a hash of the name, a clone, for two of them a string conversion) cost a few
/// percent of the server's CPU at hundreds of sessions, where each session's map is cold.
/// All are session-scoped (`Both`), so a `SET GLOBAL` cannot change them under the cache.
#[derive(Debug, Clone, Copy)]
struct HotVars {
    generation: u64,
    priority: SessionPriority,
    /// `None` when the variable is not defined: the pool's global mode applies.
    mode: Option<HighPrioMode>,
    /// `None` when the variable is not defined: the pool's global value applies.
    tickets: Option<u64>,
    /// `wait_timeout`, or `interactive_timeout` for interactive clients.
    idle_timeout: Duration,
    autocommit: bool,
    isolation: Isolation,
    /// `innodb_lock_wait_timeout`, seconds.
    lock_wait_timeout: u64,
    /// `lock_wait_timeout` (table locks), seconds.
    table_lock_wait_timeout: u64,
    /// `max_execution_time`, ms (0 = none).
    max_execution_time: u64,
    max_allowed_packet: u64,
    div_precision: u32,
    /// `max_binlog_cache_size`.
    write_limit: u64,
    /// `sql_select_limit`.
    select_limit: u64,
    /// `transaction_read_only` (the session's default access mode).
    read_only: bool,
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
    /// Whether a transaction is open.
    in_transaction: bool,
    /// User variables, keyed by lower-case name.
    user_vars: HashMap<String, Value>,
    /// Prepared statements by protocol id (shared: each execution takes a reference, not a
    /// copy of the text, statement, plan or column descriptions).
    prepared: StmtMap<Arc<Stmt>>,
    /// LAST_INSERT_ID().
    last_insert_id: u64,
    /// FOUND_ROWS(): rows of the last query (see `run_table`).
    found_rows: u64,
    /// Diagnostics of the last statement (SHOW WARNINGS / ERRORS).
    diag: Vec<Diag>,
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
    /// Table statements and transactions (created at first use when the server has a table
    /// engine).
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
    /// The statement's text (process list; the table engine's input when there is no plan).
    text: Arc<str>,
    /// The session parser's form of the statement.
    prepared: Prepared,
    /// The table engine's plan, for a table statement.
    plan: Option<Arc<Plan>>,
    /// `plan`'s result columns in protocol form: every result set of this statement shares
    /// them (compared by pointer with the columns the executor returns).
    columns: Arc<[Column]>,
}

fn now_datetime() -> DateTime {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    DateTime::from_unix(d.as_secs() as i64, d.subsec_micros())
}

fn var_to_value(v: VarValue) -> Value {
    match v {
        VarValue::Bool(b) => Value::Int(b as i64),
        VarValue::Int(i) => Value::Int(i),
        VarValue::UInt(u) => Value::UInt(u),
        VarValue::Str(s) => Value::Str(s),
        VarValue::Double(d) => Value::Double(d),
    }
}

fn var_err(e: VarError) -> SqlError {
    SqlError::other(e.code(), e.sqlstate(), e.to_string())
}

/// Converts an SQL error into the protocol's error.
pub fn to_error_info(e: &SqlError) -> ErrorInfo {
    ErrorInfo::new(e.code(), e.sqlstate(), e.to_string())
}

fn column_of(c: &ColumnInfo, values: &[&Value]) -> Column {
    let (ty, flags_extra, decimals) = match c.ty {
        SqlType::Null => (ColumnType::MYSQL_TYPE_NULL, ColumnFlags::empty(), 0),
        SqlType::Int => (ColumnType::MYSQL_TYPE_LONGLONG, ColumnFlags::empty(), 0),
        SqlType::UInt => (
            ColumnType::MYSQL_TYPE_LONGLONG,
            ColumnFlags::UNSIGNED_FLAG,
            0,
        ),
        SqlType::Decimal(s) => (ColumnType::MYSQL_TYPE_NEWDECIMAL, ColumnFlags::empty(), s),
        SqlType::Double => (ColumnType::MYSQL_TYPE_DOUBLE, ColumnFlags::empty(), 31),
        SqlType::Str => (ColumnType::MYSQL_TYPE_VAR_STRING, ColumnFlags::empty(), 31),
        SqlType::Bytes => (
            ColumnType::MYSQL_TYPE_VAR_STRING,
            ColumnFlags::BINARY_FLAG,
            31,
        ),
        SqlType::Date => (ColumnType::MYSQL_TYPE_DATE, ColumnFlags::BINARY_FLAG, 0),
        SqlType::DateTime => (ColumnType::MYSQL_TYPE_DATETIME, ColumnFlags::BINARY_FLAG, 0),
    };
    let mut col = Column::expr(c.name.clone(), ty);
    col.flags |= flags_extra;
    col.decimals = decimals;
    let maxlen = values
        .iter()
        .filter_map(|v| match v {
            Value::Bytes(b) => Some(b.len()),
            v => v.to_text().map(|s| s.chars().count()),
        })
        .max()
        .unwrap_or(0) as u32;
    col.column_length = match c.ty {
        SqlType::Str => maxlen.max(1) * 4,
        SqlType::Date => 10,
        SqlType::DateTime => 19,
        SqlType::Null => 0,
        _ => maxlen.max(1),
    };
    if c.ty == SqlType::Str {
        col.decimals = 31;
    }
    if matches!(c.ty, SqlType::Date | SqlType::DateTime | SqlType::Bytes) {
        col.charset = 63;
    }
    col
}

fn to_proto_value(v: Value) -> PValue {
    match v {
        Value::Null => PValue::NULL,
        Value::Int(i) => PValue::Int(i),
        Value::UInt(u) => PValue::UInt(u),
        Value::Double(d) => PValue::Double(d),
        Value::Decimal(d) => PValue::Bytes(d.to_string().into_bytes()),
        Value::Str(s) => PValue::Bytes(s.into_bytes()),
        Value::Bytes(b) => PValue::Bytes(b),
        Value::Date(d) | Value::DateTime(d) => {
            PValue::Date(d.year, d.month, d.day, d.hour, d.minute, d.second, d.micro)
        }
    }
}

fn from_proto_value(v: &PValue) -> Value {
    match v {
        PValue::NULL => Value::Null,
        // A string parameter is text when it is UTF-8, else a binary string (BLOB data).
        PValue::Bytes(b) => Value::from_utf8_or_bytes(b.clone()),
        PValue::Int(i) => Value::Int(*i),
        PValue::UInt(u) => Value::UInt(*u),
        PValue::Float(f) => Value::Double(*f as f64),
        PValue::Double(d) => Value::Double(*d),
        PValue::Date(y, m, d, h, mi, s, us) => Value::DateTime(DateTime {
            year: *y,
            month: *m,
            day: *d,
            hour: *h,
            minute: *mi,
            second: *s,
            micro: *us,
        }),
        PValue::Time(neg, days, h, m, s, us) => {
            let hours = *days * 24 + *h as u32;
            let mut t = format!("{}{hours:02}:{m:02}:{s:02}", if *neg { "-" } else { "" });
            if *us != 0 {
                t.push_str(&format!(".{us:06}"));
            }
            Value::Str(t)
        }
    }
}

/// Converts a materialised result into the protocol's result set.
pub fn to_result_set(r: QueryResult, warnings: u16) -> ResultSet {
    let columns: Arc<[Column]> = r
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let vals: Vec<&Value> = r.rows.iter().map(|row| &row[i]).collect();
            column_of(c, &vals)
        })
        .collect();
    let rows = r
        .rows
        .into_iter()
        .map(|row| row.into_iter().map(to_proto_value).collect())
        .collect();
    ResultSet {
        columns,
        rows,
        warnings,
    }
}

/// Converts an engine column description into the protocol's.
fn exec_column(c: &shoal_exec::ColumnInfo) -> Column {
    Column {
        schema: c.schema.clone(),
        table: c.table.clone(),
        org_table: c.org_table.clone(),
        name: c.name.clone(),
        org_name: c.org_name.clone(),
        column_type: ColumnType::try_from(c.column_type)
            .unwrap_or(ColumnType::MYSQL_TYPE_VAR_STRING),
        flags: ColumnFlags::from_bits_truncate(c.flags),
        column_length: c.column_length,
        decimals: c.decimals,
        charset: c.charset,
    }
}

/// Converts the engine's output into a protocol response.
fn exec_response(out: ExecOutput) -> Response {
    match out {
        ExecOutput::Rows { columns, rows } => {
            rows_response(columns.iter().map(exec_column).collect(), rows)
        }
        ExecOutput::Ok {
            affected_rows,
            last_insert_id,
            info,
            warnings,
        } => Response::Ok(OkInfo {
            affected_rows,
            last_insert_id,
            warnings,
            info,
        }),
    }
}

/// A result set of `columns` and the engine's `rows`.
fn rows_response(columns: Arc<[Column]>, rows: Vec<Vec<Value>>) -> Response {
    // A DATE in a column that is not temporal (CASE, COALESCE or UNION mixing dates with
    // strings or numbers make VARCHAR) goes out as the string MySQL shows: the protocol would
    // render a date value in such a column as a DATETIME.
    let date_as_text: Vec<bool> = columns
        .iter()
        .map(|c| {
            !matches!(
                c.column_type,
                ColumnType::MYSQL_TYPE_DATE
                    | ColumnType::MYSQL_TYPE_NEWDATE
                    | ColumnType::MYSQL_TYPE_DATETIME
                    | ColumnType::MYSQL_TYPE_TIMESTAMP
            )
        })
        .collect();
    Response::Rows(ResultSet {
        columns,
        rows: rows
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .enumerate()
                    .map(|(i, v)| match v {
                        Value::Date(_) if date_as_text.get(i) == Some(&true) => {
                            PValue::Bytes(v.to_text().unwrap_or_default().into_bytes())
                        }
                        v => to_proto_value(v),
                    })
                    .collect()
            })
            .collect(),
        warnings: 0,
    })
}

/// ER_SECURE_TRANSPORT_REQUIRED: a login without TLS (or a Unix socket) while
/// `require_secure_transport` is ON.
fn insecure_transport() -> ErrorInfo {
    ErrorInfo::coded(
        shoal_errors::ER_SECURE_TRANSPORT_REQUIRED,
        "Connections using insecure transport are prohibited while \
         --require_secure_transport=ON.",
    )
}

/// `transaction_isolation` text to the engine's level.
fn isolation_of(name: &str) -> Isolation {
    match name.to_ascii_uppercase().replace(' ', "-").as_str() {
        "READ-UNCOMMITTED" => Isolation::ReadUncommitted,
        "READ-COMMITTED" => Isolation::ReadCommitted,
        "SERIALIZABLE" => Isolation::Serializable,
        _ => Isolation::RepeatableRead,
    }
}

/// A text-only result (SHOW statements): every column VAR_STRING unless the value says otherwise.
fn text_result(names: &[&str], rows: Vec<Vec<Value>>) -> QueryResult {
    let columns = names
        .iter()
        .enumerate()
        .map(|(i, n)| ColumnInfo {
            name: n.to_string(),
            ty: rows
                .iter()
                .map(|r| r[i].sql_type())
                .find(|t| *t != SqlType::Null)
                .unwrap_or(SqlType::Str),
        })
        .collect();
    QueryResult { columns, rows }
}

fn ok(affected: u64) -> Response {
    Response::Ok(OkInfo {
        affected_rows: affected,
        ..OkInfo::default()
    })
}

/// Evaluation context: a session plus the statement's parameters and current row.
pub struct Ctx<'a> {
    s: &'a mut Session,
    params: &'a [Value],
    row: Option<(&'a [&'a str], &'a [Value])>,
}

impl Context for Ctx<'_> {
    fn system_var(&mut self, scope: VarScope, name: &str) -> Result<Value, SqlError> {
        self.s.read_var(scope, name)
    }
    fn user_var(&self, name: &str) -> Value {
        self.s
            .user_vars
            .get(&name.to_ascii_lowercase())
            .cloned()
            .unwrap_or(Value::Null)
    }
    fn set_user_var(&mut self, name: &str, v: Value) {
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
    pub(crate) fn new(server: Arc<Server>, entry: Arc<ProcessEntry>) -> Session {
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
            in_transaction: false,
            user_vars: HashMap::new(),
            prepared: StmtMap::new(),
            last_insert_id: 0,
            found_rows: 0,
            diag: Vec::new(),
            stmt_time: now_datetime(),
            rand: shoal_sql::func::RandState::default(),
            stmt_deadline: None,
            in_command: false,
            closed: false,
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

    fn var_u64(&self, name: &str, default: u64) -> u64 {
        self.vars
            .get(&self.server.vars, name)
            .map(|v| v.as_u64())
            .unwrap_or(default)
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
        let in_transaction = match &self.table {
            Some(ts) => ts.in_transaction(),
            None => self.in_transaction,
        };
        let c = self.hot();
        PrioHint {
            in_transaction,
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

    /// The variables read on every statement, looked up once per `SET` (see [`HotVars`]).
    fn hot(&self) -> HotVars {
        let generation = self.vars.generation();
        if let Some(c) = self.hot.get() {
            if c.generation == generation {
                return c;
            }
        }
        let text = |name: &str| {
            self.vars
                .get(&self.server.vars, name)
                .map(|v| v.display().to_ascii_lowercase())
                .unwrap_or_default()
        };
        let idle_name = if self.interactive {
            "interactive_timeout"
        } else {
            "wait_timeout"
        };
        let c = HotVars {
            generation,
            priority: SessionPriority::from_name(&text("thread_pool_priority")).unwrap_or_default(),
            mode: HighPrioMode::from_name(&text("thread_pool_high_prio_mode")),
            tickets: self
                .vars
                .get(&self.server.vars, "thread_pool_high_prio_tickets")
                .ok()
                .map(|v| v.as_u64()),
            idle_timeout: Duration::from_secs(self.var_u64(idle_name, 28800)),
            autocommit: self
                .vars
                .get(&self.server.vars, "autocommit")
                .map(|v| v.as_bool())
                .unwrap_or(true),
            isolation: self
                .vars
                .get(&self.server.vars, "transaction_isolation")
                .map(|v| isolation_of(&v.display()))
                .unwrap_or_default(),
            lock_wait_timeout: self.var_u64("innodb_lock_wait_timeout", 50),
            table_lock_wait_timeout: self.var_u64("lock_wait_timeout", 31_536_000),
            max_execution_time: self.var_u64("max_execution_time", 0),
            max_allowed_packet: self.var_u64("max_allowed_packet", 64 << 20),
            div_precision: self.var_u64("div_precision_increment", 4) as u32,
            select_limit: self.var_u64("sql_select_limit", u64::MAX),
            write_limit: self.var_u64("max_binlog_cache_size", u64::MAX),
            read_only: self
                .vars
                .get(&self.server.vars, "transaction_read_only")
                .map(|v| v.as_bool())
                .unwrap_or(false),
        };
        self.hot.set(Some(c));
        c
    }

    /// The connection limit of this session's account: its own `MAX_USER_CONNECTIONS`, else
    /// the global `max_user_connections` (0 = none).
    fn user_connection_limit(&self) -> u64 {
        if self.account_limit > 0 {
            self.account_limit
        } else {
            self.server.vars.get("max_user_connections").as_u64()
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

    fn autocommit(&self) -> bool {
        self.hot().autocommit
    }

    fn read_var(&mut self, scope: VarScope, name: &str) -> Result<Value, SqlError> {
        let vars = &self.server.vars;
        let def = vars
            .def(name)
            .ok_or_else(|| var_err(VarError::Unknown(name.to_string())))?;
        let lname = def.name;
        match scope {
            VarScope::Global => return vars.global(lname).map(var_to_value).map_err(var_err),
            VarScope::Session if def.scope == Scope::Global => {
                return Err(SqlError::coded(
                    shoal_errors::ER_INCORRECT_GLOBAL_LOCAL_VAR,
                    format!("Variable '{lname}' is a GLOBAL variable"),
                ))
            }
            _ => {}
        }
        Ok(match lname {
            "warning_count" => {
                Value::UInt(self.diag.iter().filter(|d| d.0 != "Error").count() as u64)
            }
            "error_count" => {
                Value::UInt(self.diag.iter().filter(|d| d.0 == "Error").count() as u64)
            }
            "last_insert_id" | "identity" => Value::UInt(self.last_insert_id),
            "timestamp" => Value::Double(self.stmt_time.to_unix() as f64),
            "pseudo_thread_id" => Value::UInt(self.entry.id as u64),
            // The account's limit if it has one, else the current global value (MySQL).
            "max_user_connections" => Value::UInt(self.user_connection_limit()),
            _ => var_to_value(self.vars.get(vars, lname).map_err(var_err)?),
        })
    }

    fn ctx<'a>(&'a mut self, params: &'a [Value]) -> Ctx<'a> {
        Ctx {
            s: self,
            params,
            row: None,
        }
    }

    /// The table session, created at first use; `None` without a table engine. Its
    /// autocommit, isolation level and lock wait timeout follow the session's variables.
    fn table_session(&mut self) -> Option<&mut TableSession> {
        if self.table.is_none() {
            let engine = self.server.table_engine()?;
            let ts = engine.session();
            *self
                .entry
                .table_kill
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(ts.kill_handle());
            let mut ts = ts;
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
        let ts = self.table.as_mut()?;
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
        Some(ts)
    }

    /// Runs the current statement (`cur_stmt`'s plan, else the text `cur_sql`) on the table engine.
    fn run_table(&mut self, params: &[Value]) -> Result<Response, SqlError> {
        self.refresh_grants();
        if self.table_session().is_none() {
            return Err(SqlError::Unsupported("tables (no storage engine)".into()));
        }
        let mut ts = self.table.take().expect("created above");
        let stmt = self.cur_stmt.clone();
        let plan = stmt.as_ref().and_then(|s| s.plan.as_ref());
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
                rows_response(s.columns.clone(), rows)
            }
            (out, _) => exec_response(out),
        });
        // FOUND_ROWS(): what the last query returned, or counted without its LIMIT.
        if let (true, Ok(Response::Rows(rs))) = (query, &r) {
            self.found_rows = calc_found_rows.unwrap_or(rs.rows.len() as u64);
        }
        r
    }

    /// The table session, or 1235 naming `what` when no storage engine is plugged in.
    fn tables_or_unsupported(&mut self, what: &str) -> Result<&mut TableSession, SqlError> {
        self.table_session()
            .ok_or_else(|| SqlError::Unsupported(format!("{what} (no storage engine)")))
    }

    fn set_process_text(&self, text: Option<Arc<str>>) {
        let mut info = self
            .entry
            .info
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        info.state = if text.is_some() { "executing" } else { "" };
        info.text = text;
    }

    /// Runs one statement and records its diagnostics.
    fn run(&mut self, stmt: &Statement, params: &[Value]) -> Result<Response, SqlError> {
        self.refresh_grants();
        self.stmt_time = now_datetime();
        self.rand.new_statement();
        let diagnostic = matches!(
            stmt,
            Statement::Show(ShowKind::Warnings | ShowKind::Errors, _)
        );
        if !diagnostic {
            self.diag.clear();
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
        let lone_sleep = matches!(stmt, Statement::Query { lone_sleep: true });
        let r = self.disarm_deadline(r, lone_sleep);
        match r {
            Ok(resp) => Ok(self.with_warning_count(resp)),
            Err(e) => {
                self.diag = vec![("Error", e.code(), e.to_string())];
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

    fn warn(&mut self, code: u16, msg: String) {
        self.diag.push(("Note", code, msg));
    }

    /// A response with the statement's warning count (notes and warnings in `diag`).
    fn with_warning_count(&self, mut resp: Response) -> Response {
        let w = self.diag.iter().filter(|d| d.0 != "Error").count() as u16;
        match &mut resp {
            Response::Ok(o) => o.warnings = w,
            Response::Rows(rs) => rs.warnings = w,
        }
        resp
    }

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
            Statement::Set(assignments) => {
                for (target, value) in assignments {
                    self.assign(target, value, params)?;
                }
                Ok(ok(0))
            }
            Statement::SetNames(cs, coll) => {
                let (cs, default_coll) = self.charset(cs.as_deref())?;
                let coll = match coll {
                    Some(c) => {
                        let found = COLLATIONS
                            .iter()
                            .find(|x| x.0.eq_ignore_ascii_case(c))
                            .ok_or_else(|| {
                                SqlError::coded(
                                    shoal_errors::ER_UNKNOWN_COLLATION,
                                    format!("Unknown collation: '{c}'"),
                                )
                            })?;
                        let same = found.1.eq_ignore_ascii_case(&cs)
                            || (cs == "utf8" && found.1 == "utf8mb3");
                        if !same {
                            return Err(SqlError::coded(
                                shoal_errors::ER_COLLATION_CHARSET_MISMATCH,
                                format!(
                                    "COLLATION '{}' is not valid for CHARACTER SET '{cs}'",
                                    found.0
                                ),
                            ));
                        }
                        found.0.to_string()
                    }
                    None => default_coll,
                };
                let vars = &self.server.vars;
                for n in [
                    "character_set_client",
                    "character_set_connection",
                    "character_set_results",
                ] {
                    self.vars
                        .set(vars, n, &SetValue::Str(cs.clone()))
                        .map_err(var_err)?;
                }
                self.vars
                    .set(vars, "collation_connection", &SetValue::Str(coll))
                    .map_err(var_err)?;
                Ok(ok(0))
            }
            Statement::SetCharset(cs) => {
                let (cs, _) = self.charset(cs.as_deref())?;
                let vars = &self.server.vars;
                for n in ["character_set_client", "character_set_results"] {
                    self.vars
                        .set(vars, n, &SetValue::Str(cs.clone()))
                        .map_err(var_err)?;
                }
                let db_cs = self
                    .vars
                    .get(vars, "character_set_database")
                    .map_err(var_err)?
                    .display();
                self.vars
                    .set(vars, "character_set_connection", &SetValue::Str(db_cs))
                    .map_err(var_err)?;
                Ok(ok(0))
            }
            Statement::SetTransaction(scope, level, ro) => {
                if scope.is_none() {
                    self.check_no_transaction()?;
                }
                let global = *scope == Some(VarScope::Global);
                if let Some(l) = level {
                    // Without a scope MySQL sets the next transaction's level only; shoal sets
                    // the session's (see docs/OPERATIONS.md).
                    self.set_system(global, "transaction_isolation", SetValue::Str(l.clone()))?;
                }
                if let Some(r) = ro {
                    if scope.is_none() {
                        // The next transaction only (MySQL and MariaDB).
                        self.set_next_read_only(*r);
                    } else {
                        self.set_system(
                            global,
                            "transaction_read_only",
                            SetValue::Int(*r as i128),
                        )?;
                    }
                }
                Ok(ok(0))
            }
            Statement::Use(db) => {
                self.use_db(db)?;
                Ok(ok(0))
            }
            Statement::Show(kind, filter) => self.show(kind, filter),
            Statement::Kill(id, query_only) => {
                let v = eval(id, &mut self.ctx(params))?;
                let id = v.to_i128().unwrap_or(-1);
                if id < 0 || id > u32::MAX as i128 {
                    return Err(SqlError::coded(
                        shoal_errors::ER_NO_SUCH_THREAD,
                        format!("Unknown thread id: {id}"),
                    ));
                }
                self.server
                    .kill(id as u32, *query_only, &self.user, self.is_super)
                    .map_err(|e| SqlError::other(e.code, "HY000", e.message))?;
                Ok(ok(0))
            }
            Statement::Flush(options) => self.flush(options),
            Statement::CreateDatabase(name, if_not_exists) => {
                self.checker().database(name, crate::privileges::CREATE)?;
                self.check_ddl_allowed()?;
                check_db_name(name)?;
                let catalog = self.server.catalog();
                match catalog.create_database(name) {
                    Ok(()) => Ok(ok(1)),
                    Err(e)
                        if *if_not_exists && e.code() == shoal_errors::ER_DB_CREATE_EXISTS.code =>
                    {
                        self.warn(shoal_errors::ER_DB_CREATE_EXISTS.code, e.to_string());
                        Ok(ok(0))
                    }
                    Err(e) => Err(e.into()),
                }
            }
            Statement::DropDatabase(name, if_exists) => {
                self.checker().database(name, crate::privileges::DROP)?;
                self.check_ddl_allowed()?;
                let catalog = self.server.catalog();
                let tables = catalog.tables(name).len() as u64;
                match catalog.drop_database(name) {
                    Ok(()) => {
                        if self.db.as_deref() == Some(name.as_str()) {
                            self.db = None;
                            self.entry
                                .info
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .db = None;
                        }
                        Ok(ok(tables))
                    }
                    Err(e) if *if_exists && e.code() == shoal_errors::ER_DB_DROP_EXISTS.code => {
                        self.warn(shoal_errors::ER_DB_DROP_EXISTS.code, e.to_string());
                        Ok(ok(0))
                    }
                    Err(e) => Err(e.into()),
                }
            }
            Statement::Begin(read_only) => {
                // BEGIN inside a transaction commits it first (implicit commit).
                if let Some(ts) = self.table_session() {
                    ts.begin_with(*read_only)?;
                }
                self.in_transaction = true;
                Ok(ok(0))
            }
            Statement::Commit => {
                self.in_transaction = false;
                if let Some(ts) = self.table_session() {
                    ts.commit()?;
                }
                Ok(ok(0))
            }
            Statement::Rollback => {
                self.in_transaction = false;
                if let Some(ts) = self.table_session() {
                    ts.rollback();
                }
                Ok(ok(0))
            }
            Statement::CreateUser(users, if_not_exists, options) => {
                self.require_global(crate::privileges::CREATE_USER, "CREATE USER")?;
                self.check_writes_allowed()?;
                for u in users {
                    let (name, host) = (&u.user, &u.host);
                    let spec = match &u.plugin {
                        Some(plugin) => shoal_sql::ast::PasswordSpec::With {
                            plugin: plugin.clone(),
                            password: u.password.clone(),
                            stored: u.stored.clone(),
                        },
                        None => shoal_sql::ast::PasswordSpec::Clear(
                            u.password.clone().unwrap_or_default(),
                        ),
                    };
                    let auth = access::auth_of(&spec, self.server.default_auth_plugin())?;
                    if !self.server.create_account_opts(
                        name,
                        host,
                        auth,
                        options.require_ssl.unwrap_or(false),
                        options.max_user_connections.unwrap_or(0),
                    ) {
                        if *if_not_exists {
                            self.warn(
                                shoal_errors::ER_USER_ALREADY_EXISTS.code,
                                format!("Authorization ID '{name}'@'{host}' already exists."),
                            );
                        } else {
                            return Err(SqlError::coded(
                                shoal_errors::ER_CANNOT_USER,
                                format!("Operation CREATE USER failed for '{name}'@'{host}'"),
                            ));
                        }
                    } else if options.locked == Some(true) {
                        self.server.accounts().modify(|l| {
                            if let Some(a) = l.iter_mut().find(|a| a.is(name, host)) {
                                a.locked = true;
                            }
                            Ok(())
                        })?;
                    }
                }
                Ok(ok(0))
            }
            Statement::DropUser(users, if_exists) => {
                self.require_global(crate::privileges::CREATE_USER, "CREATE USER")?;
                self.check_writes_allowed()?;
                for (u, h) in users {
                    if !self.server.drop_account(u, h) {
                        if *if_exists {
                            self.warn(
                                shoal_errors::ER_USER_DOES_NOT_EXIST.code,
                                format!("Authorization ID '{u}'@'{h}' does not exist."),
                            );
                        } else {
                            return Err(SqlError::coded(
                                shoal_errors::ER_CANNOT_USER,
                                format!("Operation DROP USER failed for '{u}'@'{h}'"),
                            ));
                        }
                    }
                }
                Ok(ok(0))
            }
            Statement::LockTables(list) => {
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
                self.tables_or_unsupported("LOCK TABLES")?
                    .lock_tables(&list, db.as_deref())?;
                Ok(ok(0))
            }
            Statement::UnlockTables => {
                if let Some(ts) = self.table_session() {
                    ts.unlock_tables()?;
                }
                Ok(ok(0))
            }
            Statement::Savepoint(name) => {
                self.tables_or_unsupported("SAVEPOINT")?.savepoint(name)?;
                Ok(ok(0))
            }
            Statement::RollbackToSavepoint(name) => {
                self.tables_or_unsupported("ROLLBACK TO SAVEPOINT")?
                    .rollback_to_savepoint(name)?;
                Ok(ok(0))
            }
            Statement::ReleaseSavepoint(name) => {
                self.tables_or_unsupported("RELEASE SAVEPOINT")?
                    .release_savepoint(name)?;
                Ok(ok(0))
            }
            Statement::AlterTableKeys(t, _) => {
                let db = t.db.clone().or_else(|| self.db.clone());
                self.tables_or_unsupported("ALTER TABLE")?
                    .alter_keys(db.as_deref(), &t.name)?;
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
            Statement::Backup(dir) => {
                self.require_global(crate::privileges::SUPER, "SUPER")?;
                let engine = self
                    .server
                    .table_engine()
                    .ok_or_else(|| SqlError::Unsupported("BACKUP (no storage engine)".into()))?;
                let r = engine.backup_to(std::path::Path::new(dir), &self.server.version())?;
                let rows = vec![vec![
                    Value::Str(dir.clone()),
                    Value::UInt(r.files),
                    Value::UInt(r.bytes),
                    Value::Str(format!("{:.3}", r.elapsed.as_secs_f64())),
                ]];
                Ok(Response::Rows(to_result_set(
                    text_result(&["Directory", "Files", "Bytes", "Seconds"], rows),
                    0,
                )))
            }
            Statement::Account(a) => self.account_statement(a),
            Statement::TableStatement(..) => self.run_table(params),
        }
    }

    /// `FLUSH option, ...`: `STATUS` (also `GLOBAL STATUS`) resets the server's counters
    /// ([`Server::flush_status`]); the options registered by other subsystems (the thread
    /// pool's `THREAD_POOL_STATS`, `THREAD_POOL_WAITS`, `THREAD_POOL_LATENCY`) are reset; MySQL's
    /// other options are not implemented and say so (1235); anything else is a syntax error, as
    /// in MariaDB. Every option is checked before any is run, so a bad list changes nothing.
    fn flush(&mut self, options: &[String]) -> Result<Response, SqlError> {
        self.require_global(crate::privileges::RELOAD, "RELOAD")?;
        /// First words of the FLUSH options MySQL and MariaDB define.
        const SERVER_OPTIONS: &[&str] = &[
            "BINARY",
            "CHANGED_PAGE_BITMAPS",
            "CLIENT_STATISTICS",
            "DES_KEY_FILE",
            "ENGINE",
            "ERROR",
            "GENERAL",
            "HOSTS",
            "INDEX_STATISTICS",
            "LOGS",
            "MASTER",
            "OPTIMIZER_COSTS",
            "PRIVILEGES",
            "QUERY",
            "QUERY_RESPONSE_TIME",
            "RELAY",
            "SLAVE",
            "SESSION",
            "SLOW",
            "SSL",
            "TABLE",
            "TABLES",
            "TABLE_STATISTICS",
            "USER_RESOURCES",
            "USER_STATISTICS",
            "USER_VARIABLES",
        ];
        let mut resets = Vec::with_capacity(options.len());
        for o in options {
            // MySQL's FLUSH STATUS; `GLOBAL STATUS` is MariaDB 11.5's name for the same reset.
            // There are no per-session counters to reset (SHOW SESSION STATUS shows the
            // global ones), so `SESSION STATUS` is refused below rather than reset the global.
            if o == "STATUS" || o == "GLOBAL STATUS" {
                let server = self.server.clone();
                resets.push(Arc::new(move || server.flush_status()) as FlushFn);
                continue;
            }
            // MySQL's FLUSH HOSTS (deprecated there in favour of TRUNCATE TABLE
            // performance_schema.host_cache, which shoal does not have): unblocks every host
            // `max_connect_errors` blocked.
            if o == "HOSTS" {
                let server = self.server.clone();
                resets.push(Arc::new(move || server.flush_hosts()) as FlushFn);
                continue;
            }
            // No table cache to close; under LOCK TABLES refused (1192) as in MySQL.
            if o == "TABLES" || o == "TABLE" {
                if let Some(ts) = self.table_session() {
                    ts.flush_tables()?;
                }
                continue;
            }
            // The global read lock (table_lock.rs in shoal-exec). Taken at once, so a
            // failure (1205) leaves the other options of the statement undone.
            if o == "TABLES WITH READ LOCK" || o == "TABLE WITH READ LOCK" {
                self.tables_or_unsupported("FLUSH TABLES WITH READ LOCK")?
                    .global_read_lock()?;
                continue;
            }
            if let Some(f) = self.server.hooks().flushable(o) {
                resets.push(f);
                continue;
            }
            let first = o.split(' ').next().unwrap_or_default();
            return Err(if SERVER_OPTIONS.contains(&first) {
                SqlError::Unsupported(format!("FLUSH {o}"))
            } else {
                SqlError::Syntax(o.clone())
            });
        }
        for f in resets {
            f();
        }
        Ok(ok(0))
    }

    /// 1290 while `read_only` applies to this user or `super_read_only` is on.
    fn check_writes_allowed(&self) -> Result<(), SqlError> {
        match self.server.read_only_for(self.is_super) {
            Some(option) => Err(shoal_exec::read_only_error(option)),
            None => Ok(()),
        }
    }

    /// CREATE / DROP DATABASE: 1290 under `read_only`, 1792 when the session's access mode
    /// (`transaction_read_only`) is READ ONLY (DDL commits first and runs in the session's
    /// mode, as in MySQL).
    fn check_ddl_allowed(&self) -> Result<(), SqlError> {
        self.check_writes_allowed()?;
        if self.hot().read_only {
            return Err(shoal_exec::read_only_transaction_error());
        }
        Ok(())
    }

    /// 1568 when a transaction is open (a change of the next transaction's characteristics).
    fn check_no_transaction(&self) -> Result<(), SqlError> {
        let open = match &self.table {
            Some(ts) => ts.in_transaction(),
            None => self.in_transaction,
        };
        if open {
            return Err(SqlError::coded(
                shoal_errors::ER_CANT_CHANGE_TX_CHARACTERISTICS,
                "Transaction characteristics can't be changed while a transaction is in progress",
            ));
        }
        Ok(())
    }

    /// `SET TRANSACTION READ ONLY | READ WRITE` / `SET @@transaction_read_only` (no scope):
    /// the next transaction's access mode.
    fn set_next_read_only(&mut self, read_only: bool) {
        if let Some(ts) = self.table_session() {
            ts.set_next_read_only(read_only);
        }
    }

    /// `sql_select_limit` applied to a result the session computed itself (no table engine, or
    /// a virtual table): a SELECT without a LIMIT of its own returns at most that many rows.
    fn charset(&self, cs: Option<&str>) -> Result<(String, String), SqlError> {
        let cs = match cs {
            Some(c) => c.to_string(),
            None => "utf8mb4".to_string(),
        };
        let found = CHARSETS
            .iter()
            .find(|x| x.0.eq_ignore_ascii_case(&cs))
            .ok_or_else(|| {
                SqlError::coded(
                    shoal_errors::ER_UNKNOWN_CHARACTER_SET,
                    format!("Unknown character set: '{cs}'"),
                )
            })?;
        let name = if found.0 == "utf8" {
            "utf8mb3"
        } else {
            found.0
        };
        let coll = if found.0 == "utf8mb4" {
            "utf8mb4_general_ci"
        } else {
            found.1
        };
        Ok((name.to_string(), coll.to_string()))
    }

    fn use_db(&mut self, db: &str) -> Result<(), SqlError> {
        self.refresh_grants();
        self.checker().enter_database(db)?;
        if !self.server.catalog().database_exists(db) {
            return Err(SqlError::UnknownDatabase(db.to_string()));
        }
        self.db = Some(db.to_string());
        self.entry
            .info
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .db = Some(db.to_string());
        Ok(())
    }

    fn set_value(&mut self, v: &SetExpr, params: &[Value]) -> Result<SetValue, SqlError> {
        Ok(match v {
            SetExpr::Default => SetValue::Default,
            SetExpr::Word(w) => SetValue::Str(w.clone()),
            SetExpr::Expr(e) => match eval(e, &mut self.ctx(params))? {
                Value::Null => SetValue::Null,
                Value::Int(i) => SetValue::Int(i as i128),
                Value::UInt(u) => SetValue::Int(u as i128),
                Value::Decimal(d) => {
                    if d.mant % 10i128.pow(d.scale) == 0 {
                        SetValue::Int(d.trunc())
                    } else {
                        SetValue::Double(d.to_f64())
                    }
                }
                Value::Double(d) => SetValue::Double(d),
                other => SetValue::Str(other.to_text().unwrap_or_default()),
            },
        })
    }

    fn set_system(&mut self, global: bool, name: &str, value: SetValue) -> Result<(), SqlError> {
        let vars = &self.server.vars;
        let def = vars
            .def(name)
            .ok_or_else(|| var_err(VarError::Unknown(name.to_string())))?;
        let canonical = def.name;
        let value = if canonical == "sql_mode" {
            normalize_sql_mode(&value)?
        } else {
            value
        };
        if global {
            self.require_super_for_global()?;
            if matches!(canonical, "read_only" | "super_read_only") {
                let d = vars.def(canonical).expect("known variable");
                let on = vars.validate(d, &value, true).map_err(var_err)?.as_bool();
                // MySQL: turning read-only mode on needs the session to hold no transaction.
                let open = match &self.table {
                    Some(ts) => ts.in_transaction(),
                    None => self.in_transaction,
                };
                if on && open {
                    return Err(SqlError::coded(shoal_errors::ER_LOCK_OR_ACTIVE_TRANSACTION, "Can't execute the given command because you have active locked tables or an active transaction",
                    ));
                }
            }
            return vars.set_global(canonical, &value).map_err(var_err);
        }
        match canonical {
            "last_insert_id" | "identity" => {
                if let SetValue::Int(i) = value {
                    self.last_insert_id = i.clamp(0, u64::MAX as i128) as u64;
                    return Ok(());
                }
                return Err(var_err(VarError::WrongType(canonical.to_string())));
            }
            "autocommit" => {
                let was = self.autocommit();
                self.vars.set(vars, canonical, &value).map_err(var_err)?;
                // Turning autocommit on commits an open transaction.
                if !was && self.autocommit() {
                    self.in_transaction = false;
                    if let Some(ts) = self.table.as_mut() {
                        ts.set_autocommit(true)?;
                    }
                }
                return Ok(());
            }
            "transaction_read_only" => {
                self.vars.set(vars, canonical, &value).map_err(var_err)?;
                // Outside a transaction the session's mode is also the next transaction's
                // (replacing a `SET TRANSACTION READ ...` made before), as in MySQL.
                let ro = self.hot().read_only;
                if let Some(ts) = self.table.as_mut() {
                    if !ts.in_transaction() {
                        ts.set_next_read_only(ro);
                    }
                }
                return Ok(());
            }
            _ => {}
        }
        self.vars.set(vars, canonical, &value).map_err(var_err)
    }

    fn require_super_for_global(&self) -> Result<(), SqlError> {
        self.require_global(
            crate::privileges::SUPER | crate::privileges::SYSTEM_VARIABLES_ADMIN,
            "SUPER or SYSTEM_VARIABLES_ADMIN",
        )
    }

    fn assign(
        &mut self,
        target: &SetTarget,
        value: &SetExpr,
        params: &[Value],
    ) -> Result<(), SqlError> {
        match target {
            SetTarget::User(n) => {
                let v = match value {
                    SetExpr::Expr(e) => eval(e, &mut self.ctx(params))?,
                    SetExpr::Word(w) => {
                        return Err(SqlError::UnknownColumn(w.clone(), "field list".into()))
                    }
                    SetExpr::Default => return Err(SqlError::Syntax("DEFAULT".into())),
                };
                // User variables live as long as the session: together they are bounded by
                // `max_session_mem_used`, as in MariaDB (a session could otherwise keep
                // thousands of max_allowed_packet-sized values).
                let limit = self.var_u64("max_session_mem_used", u64::MAX);
                let name = n.to_ascii_lowercase();
                let others: usize = self
                    .user_vars
                    .iter()
                    .filter(|(k, _)| **k != name)
                    .map(|(k, v)| k.len() + v.mem_size())
                    .sum();
                if (others + name.len() + v.mem_size()) as u64 > limit {
                    return Err(SqlError::coded(shoal_errors::ER_OPTION_PREVENTS_STATEMENT, format!("The MySQL server is running with the --max-session-mem-used={limit} option so it cannot execute this statement"),
                    ));
                }
                self.user_vars.insert(name, v);
                Ok(())
            }
            SetTarget::System(scope, name) => {
                let v = self.set_value(value, params)?;
                let def = self.server.vars.def(name);
                if *scope == VarScope::Default
                    && def.is_some_and(|d| d.name == "transaction_read_only")
                {
                    // `SET @@transaction_read_only`: the next transaction only (MySQL and
                    // MariaDB), refused inside one.
                    let d = def.expect("checked");
                    let ro = self
                        .server
                        .vars
                        .validate(d, &v, false)
                        .map_err(var_err)?
                        .as_bool();
                    self.check_no_transaction()?;
                    self.set_next_read_only(ro);
                    return Ok(());
                }
                let def_scope = def.map(|d| d.scope);
                let global = match scope {
                    VarScope::Global => true,
                    VarScope::Session => false,
                    // `SET x = v` on a GLOBAL-only variable is error 1229 (like MySQL).
                    VarScope::Default => false,
                };
                if !global && def_scope == Some(Scope::Global) {
                    let d = self.server.vars.def(name).unwrap();
                    if !d.dynamic {
                        return Err(var_err(VarError::ReadOnly(d.name.to_string())));
                    }
                    return Err(var_err(VarError::GlobalOnly(d.name.to_string())));
                }
                self.set_system(global, name, v)
            }
        }
    }

    fn filter_rows(
        &mut self,
        names: &[&str],
        rows: Vec<Vec<Value>>,
        filter: &ShowFilter,
        like_col: usize,
    ) -> Result<Vec<Vec<Value>>, SqlError> {
        match filter {
            ShowFilter::None => Ok(rows),
            ShowFilter::Like(p) => Ok(rows
                .into_iter()
                .filter(|r| like(&r[like_col].to_text().unwrap_or_default(), p, '\\'))
                .collect()),
            ShowFilter::Where(e) => {
                let mut out = Vec::new();
                for r in rows {
                    let keep = {
                        let mut ctx = Ctx {
                            s: self,
                            params: &[],
                            row: Some((names, &r)),
                        };
                        eval(e, &mut ctx)?.truth() == Some(true)
                    };
                    if keep {
                        out.push(r);
                    }
                }
                Ok(out)
            }
        }
    }

    fn show(&mut self, kind: &ShowKind, filter: &ShowFilter) -> Result<Response, SqlError> {
        let s = |x: &str| Value::Str(x.to_string());
        let (names, rows, like_col): (Vec<&str>, Vec<Vec<Value>>, usize) = match kind {
            ShowKind::Databases => (
                vec!["Database"],
                self.server
                    .catalog()
                    .databases()
                    .into_iter()
                    .filter(|d| self.sees_database(d))
                    .map(|d| vec![Value::Str(d)])
                    .collect(),
                0,
            ),
            // The table engine's: its catalog, privileges and information_schema.
            ShowKind::Tables { .. } | ShowKind::TableInfo(_) => return self.run_table(&[]),
            ShowKind::TableStatus { db } => {
                // Answered from information_schema.TABLES; the database must exist (1049) and
                // be named or current (1046), as in MariaDB.
                return match db.as_ref().or(self.db.as_ref()) {
                    None => Err(SqlError::NoDatabase),
                    Some(d) if !self.server.catalog().database_exists(d) => {
                        Err(SqlError::UnknownDatabase(d.clone()))
                    }
                    Some(_) => self.run_table(&[]),
                };
            }
            ShowKind::Variables(scope) => {
                let server = self.server.clone();
                let vars = &server.vars;
                let mut rows = Vec::new();
                for d in vars.all() {
                    let v = match scope {
                        VarScope::Global => match vars.global(d.name) {
                            Ok(v) => v.display(),
                            Err(_) => continue,
                        },
                        _ => match d.name {
                            "warning_count" | "error_count" | "last_insert_id" | "identity"
                            | "timestamp" | "pseudo_thread_id" => self
                                .read_var(VarScope::Default, d.name)?
                                .to_text()
                                .unwrap_or_default(),
                            _ => self.vars.get(vars, d.name).map_err(var_err)?.display(),
                        },
                    };
                    rows.push(vec![s(d.name), Value::Str(v)]);
                }
                (vec!["Variable_name", "Value"], rows, 0)
            }
            ShowKind::Status(scope) => {
                let mut st = self.server.global_status();
                // Session-level rows MySQL shows as session values.
                for (k, v) in st.iter_mut() {
                    if k == "Last_query_cost" {
                        *v = "0.000000".into();
                    }
                }
                // The TLS session's names: the session's own, empty in GLOBAL (as in MySQL).
                let (version, cipher) = match (scope, &self.tls) {
                    (VarScope::Global, _) | (_, None) => (String::new(), String::new()),
                    (_, Some((v, c))) => (v.clone(), c.clone()),
                };
                st.push(("Ssl_cipher".into(), cipher));
                st.push(("Ssl_version".into(), version));
                st.sort_by_key(|a| a.0.to_ascii_lowercase());
                (
                    vec!["Variable_name", "Value"],
                    st.into_iter()
                        .map(|(k, v)| vec![Value::Str(k), Value::Str(v)])
                        .collect(),
                    0,
                )
            }
            ShowKind::Processlist { full } => {
                // Without PROCESS a user sees only its own threads (MySQL).
                let everyone = self.grants.global & crate::privileges::PROCESS != 0;
                let rows = self
                    .server
                    .process_rows((!everyone).then_some(self.user.as_str()))
                    .into_iter()
                    .map(|p| {
                        let text = p.info.map(|t| {
                            if *full {
                                t
                            } else {
                                t.chars().take(100).collect()
                            }
                        });
                        vec![
                            Value::Int(p.id as i64),
                            Value::Str(p.user),
                            Value::Str(p.host),
                            p.db.map(Value::Str).unwrap_or(Value::Null),
                            Value::Str(p.command),
                            Value::Int((p.time_ms / 1000) as i64),
                            Value::Str(p.state),
                            text.map(Value::Str).unwrap_or(Value::Null),
                        ]
                    })
                    .collect();
                (
                    vec![
                        "Id", "User", "Host", "db", "Command", "Time", "State", "Info",
                    ],
                    rows,
                    1,
                )
            }
            ShowKind::Warnings | ShowKind::Errors => {
                let errors_only = matches!(kind, ShowKind::Errors);
                let rows = self
                    .diag
                    .iter()
                    .filter(|d| !errors_only || d.0 == "Error")
                    .map(|d| vec![s(d.0), Value::UInt(d.1 as u64), Value::Str(d.2.clone())])
                    .collect();
                (vec!["Level", "Code", "Message"], rows, 0)
            }
            ShowKind::Collation => (
                vec![
                    "Collation",
                    "Charset",
                    "Id",
                    "Default",
                    "Compiled",
                    "Sortlen",
                    "Pad_attribute",
                ],
                COLLATIONS
                    .iter()
                    .map(|(n, cs, id, def)| {
                        vec![
                            s(n),
                            s(cs),
                            Value::UInt(*id as u64),
                            s(if *def { "Yes" } else { "" }),
                            s("Yes"),
                            Value::UInt(1),
                            s(if n.contains("0900") {
                                "NO PAD"
                            } else {
                                "PAD SPACE"
                            }),
                        ]
                    })
                    .collect(),
                0,
            ),
            ShowKind::Charset => (
                vec!["Charset", "Description", "Default collation", "Maxlen"],
                CHARSETS
                    .iter()
                    .filter(|c| c.0 != "utf8")
                    .map(|(n, coll, desc, max)| {
                        vec![s(n), s(desc), s(coll), Value::UInt(*max as u64)]
                    })
                    .collect(),
                0,
            ),
            ShowKind::Engines => (
                vec![
                    "Engine",
                    "Support",
                    "Comment",
                    "Transactions",
                    "XA",
                    "Savepoints",
                ],
                vec![vec![
                    s("InnoDB"),
                    s("DEFAULT"),
                    s("shoal transactional storage on RocksDB (accepted as ENGINE=InnoDB)"),
                    s("YES"),
                    s("NO"),
                    s("YES"),
                ]],
                0,
            ),
            ShowKind::CreateDatabase(db, if_not_exists) => {
                if !self.server.catalog().database_exists(db) {
                    return Err(SqlError::UnknownDatabase(db.clone()));
                }
                let ine = if *if_not_exists {
                    "/*!32312 IF NOT EXISTS*/ "
                } else {
                    ""
                };
                let create = format!(
                    "CREATE DATABASE {ine}`{}` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci */",
                    db.replace('`', "``")
                );
                (
                    vec!["Database", "Create Database"],
                    vec![vec![s(db), s(&create)]],
                    0,
                )
            }
        };
        let rows = self.filter_rows(&names, rows, filter, like_col)?;
        Ok(Response::Rows(to_result_set(text_result(&names, rows), 0)))
    }

    /// Runs COM_QUERY text (see [`Backend::query`]).
    fn run_query(&mut self, sql: &str, multi: bool) -> Vec<Result<Response, ErrorInfo>> {
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
                    self.diag = vec![("Error", e.code(), e.to_string())];
                    out.push(Err(to_error_info(&e)));
                    break;
                }
            }
        }
        out
    }
}

fn check_db_name(name: &str) -> Result<(), SqlError> {
    if name.is_empty() || name.len() > 64 || name.ends_with(' ') || name.contains('/') {
        return Err(SqlError::coded(
            shoal_errors::ER_WRONG_DB_NAME,
            format!("Incorrect database name '{name}'"),
        ));
    }
    Ok(())
}

fn normalize_sql_mode(v: &SetValue) -> Result<SetValue, SqlError> {
    let text = match v {
        SetValue::Str(s) => s.clone(),
        SetValue::Default => return Ok(SetValue::Str(DEFAULT_SQL_MODE.into())),
        SetValue::Int(0) => String::new(),
        other => {
            return Err(SqlError::coded(
                shoal_errors::ER_WRONG_VALUE_FOR_VAR,
                format!("Variable 'sql_mode' can't be set to the value of '{other:?}'"),
            ))
        }
    };
    // MySQL stores the modes as bits and prints them in bit order (the order of SQL_MODES);
    // the combination modes add their parts and keep their own bit.
    let mut on = [false; SQL_MODES.len()];
    let mut set = |m: &str| {
        if let Some(i) = SQL_MODES.iter().position(|x| *x == m) {
            on[i] = true;
        }
    };
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match SQL_MODES.iter().find(|m| m.eq_ignore_ascii_case(part)) {
            Some(m) => {
                set(m);
                let parts: &[&str] = match *m {
                    "ANSI" => &[
                        "REAL_AS_FLOAT",
                        "PIPES_AS_CONCAT",
                        "ANSI_QUOTES",
                        "IGNORE_SPACE",
                        "ONLY_FULL_GROUP_BY",
                    ],
                    "TRADITIONAL" => &[
                        "STRICT_TRANS_TABLES",
                        "STRICT_ALL_TABLES",
                        "NO_ZERO_IN_DATE",
                        "NO_ZERO_DATE",
                        "ERROR_FOR_DIVISION_BY_ZERO",
                        "NO_ENGINE_SUBSTITUTION",
                    ],
                    _ => &[],
                };
                parts.iter().for_each(|p| set(p));
            }
            None => {
                return Err(SqlError::coded(
                    shoal_errors::ER_WRONG_VALUE_FOR_VAR,
                    format!("Variable 'sql_mode' can't be set to the value of '{part}'"),
                ))
            }
        }
    }
    let out: Vec<&str> = SQL_MODES
        .iter()
        .zip(on)
        .filter_map(|(m, on)| on.then_some(*m))
        .collect();
    Ok(SetValue::Str(out.join(",")))
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
            if !self.server.catalog().database_exists(db) {
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
        let mut info = self
            .entry
            .info
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        info.db = self.db.clone();
        info.command = "Sleep";
        info.state = "";
        info.since = std::time::Instant::now();
        Ok(())
    }

    fn query(&mut self, sql: &str, multi_statements: bool) -> Vec<Result<Response, ErrorInfo>> {
        self.run_query(sql, multi_statements)
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
            .tables_or_unsupported("COM_FIELD_LIST")
            .and_then(|ts| ts.prepare(&sql, Some(&db)))
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
        self.in_transaction = false;
        if let Some(ts) = self.table.as_mut() {
            ts.rollback();
            ts.release_table_locks();
        }
        self.user_vars.clear();
        let n = self.prepared.len() as u64;
        self.prepared.clear();
        self.server
            .counters
            .prepared_stmt_count
            .fetch_sub(n, Ordering::Relaxed);
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

    fn prepare(&mut self, stmt_id: u32, sql: &str) -> Result<PrepareOk, ErrorInfo> {
        self.server.counters.com("stmt_prepare");
        let max = self.server.vars.get("max_prepared_stmt_count").as_u64();
        let cur = self
            .server
            .counters
            .prepared_stmt_count
            .load(Ordering::Relaxed);
        if cur >= max {
            return Err(ErrorInfo::coded(shoal_errors::ER_MAX_PREPARED_STMT_COUNT_REACHED, format!("Can't create more than max_prepared_stmt_count statements (current value: {max})"),
            ));
        }
        let parts = split_statements(sql);
        if parts.len() > 1 {
            return Err(to_error_info(&SqlError::Syntax(parts[1].to_string())));
        }
        let parsed = shoal_sql::parse(sql).map_err(|e| to_error_info(&e))?;
        let (p, tree) = Prepared::parsed(sql, parsed);
        let is_table = matches!(
            &p.statement,
            Statement::TableStatement(_, _) | Statement::Query { .. }
        );
        let mut columns: Vec<Column> = Vec::new();
        let mut params = param_count(p.params)?;
        let mut table_plan = None;
        if is_table && self.table_session().is_some() {
            let db = self.db.clone();
            let ts = self.table.as_mut().expect("created above");
            let plan = ts
                .prepare_tree(sql, tree, db.as_deref())
                .map_err(|e| to_error_info(&e))?;
            self.refresh_grants();
            self.check_plan(&plan).map_err(|e| to_error_info(&e))?;
            columns = plan.columns.iter().map(exec_column).collect();
            params = param_count(plan.param_count)?;
            table_plan = Some(plan);
        }
        let stmt = Stmt {
            text: Arc::from(sql),
            prepared: p,
            // Only a plan's result sets use the converted columns.
            columns: if table_plan.is_some() {
                columns.clone().into()
            } else {
                Arc::from([])
            },
            plan: table_plan,
        };
        if self.prepared.insert(stmt_id, Arc::new(stmt)).is_none() {
            self.server
                .counters
                .prepared_stmt_count
                .fetch_add(1, Ordering::Relaxed);
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
            ErrorInfo::coded(
                shoal_errors::ER_UNKNOWN_STMT_HANDLER,
                format!(
                    "Unknown prepared statement handler ({stmt_id}) given to mysqld_stmt_execute"
                ),
            )
        })?;
        let expected = p.plan.as_ref().map_or(p.prepared.params, |p| p.param_count);
        if params.len() != expected {
            return Err(ErrorInfo::coded(
                shoal_errors::ER_WRONG_ARGUMENTS,
                "Incorrect arguments to mysqld_stmt_execute",
            ));
        }
        self.set_process_text(Some(p.text.clone()));
        if p.plan.is_none() {
            self.cur_sql = p.text.clone();
        }
        self.cur_stmt = Some(p.clone());
        let values: Vec<Value> = params.iter().map(from_proto_value).collect();
        let r = self
            .run(&p.prepared.statement, &values)
            .map_err(|e| to_error_info(&e));
        self.cur_stmt = None;
        r
    }

    fn close_statement(&mut self, stmt_id: u32) {
        self.server.counters.com("stmt_close");
        if self.prepared.remove(stmt_id).is_some() {
            self.server
                .counters
                .prepared_stmt_count
                .fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn command_begin(&mut self, command: u8) {
        if !self.in_command {
            self.in_command = true;
            self.server
                .counters
                .threads_running
                .fetch_add(1, Ordering::Relaxed);
        }
        self.entry.running.store(true, Ordering::Release);
        let mut info = self
            .entry
            .info
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
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
        if self.in_command {
            self.in_command = false;
            self.server
                .counters
                .threads_running
                .fetch_sub(1, Ordering::Relaxed);
        }
        self.entry.running.store(false, Ordering::Release);
        let _ = self.entry.kill.compare_exchange(
            KILL_QUERY,
            KILL_NONE,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        let mut info = self
            .entry
            .info
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        info.command = "Sleep";
        info.state = "";
        info.text = None;
        info.since = std::time::Instant::now();
    }

    fn status(&self) -> SessionStatus {
        SessionStatus {
            in_transaction: match &self.table {
                Some(ts) => ts.in_transaction(),
                None => self.in_transaction,
            },
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
            self.in_transaction = false;
            // A client gone mid-transaction: roll back and free its row and table locks.
            if let Some(ts) = self.table.as_mut() {
                ts.rollback();
                ts.release_table_locks();
            }
            *self
                .entry
                .table_kill
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = None;
            let n = self.prepared.len() as u64;
            self.prepared.clear();
            self.server
                .counters
                .prepared_stmt_count
                .fetch_sub(n, Ordering::Relaxed);
            self.server.unregister(self.entry.id);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.disconnect();
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

/// A SELECT ran past `max_execution_time`.
fn query_timeout() -> SqlError {
    SqlError::coded(
        shoal_errors::ER_QUERY_TIMEOUT,
        "Query execution was interrupted, maximum statement execution time exceeded",
    )
}
