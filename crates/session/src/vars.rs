//! System variables: definitions, the global store, per-session copies and change subscribers.
//!
//! Every variable has one [`VarDef`]: its mysqld name, type (with range or allowed values), scope
//! (GLOBAL only, SESSION only, or both), whether it can be changed at runtime, and its compiled-in
//! default. The registry ([`Vars`]) keeps the current GLOBAL values behind an `RwLock`; a session
//! copies the values of every session-capable variable when it opens (MySQL semantics: a later
//! `SET GLOBAL` does not change existing sessions) and keeps its own map ([`SessionVars`]).
//!
//! Values are stored normalised ([`VarValue`]): booleans as `Bool`, enums as their canonical
//! spelling, numbers clamped into their range is *not* done silently: an out-of-range value is
//! error 1231 (`Variable 'x' can't be set to the value of 'y'`), a wrong type 1232.
//!
//! Other layers (the thread pool, storage) observe `SET GLOBAL` through [`Vars::subscribe`]: the
//! callback runs after the new value is stored, on the thread that executed the statement.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

/// The registry's maps, looked up by name on every statement (a few times each): Fx hashing,
/// as the names are the server's own and short, where SipHash cost ~4 % of a point select's
/// instructions.
type Map<K, V> = HashMap<K, V, rustc_hash::FxBuildHasher>;

/// Type and domain of a variable.
#[derive(Debug, Clone)]
pub enum VarType {
    /// ON/OFF (also 1/0, TRUE/FALSE).
    Bool,
    /// Signed integer within `[min, max]`.
    Int { min: i64, max: i64 },
    /// Unsigned integer within `[min, max]`.
    UInt { min: u64, max: u64 },
    /// One of a fixed set of values (case-insensitive; stored in canonical spelling).
    Enum(&'static [&'static str]),
    /// Free text.
    Str,
    /// Floating point within `[min, max]`.
    Double { min: f64, max: f64 },
}

/// Which scopes a variable exists in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Only `@@global.x`; `SET SESSION x` is error 1229.
    Global,
    /// Only per session; `SET GLOBAL x` is error 1228.
    Session,
    /// Both: sessions start from the global value.
    Both,
}

/// A stored variable value.
#[derive(Debug, Clone, PartialEq)]
pub enum VarValue {
    /// A boolean (shown as ON/OFF by SHOW VARIABLES, 1/0 by SELECT @@x).
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// Text, and enum values in canonical spelling.
    Str(String),
    /// A floating-point value.
    Double(f64),
}

impl VarValue {
    /// The text SHOW VARIABLES displays.
    pub fn display(&self) -> String {
        match self {
            VarValue::Bool(b) => if *b { "ON" } else { "OFF" }.to_string(),
            VarValue::Int(i) => i.to_string(),
            VarValue::UInt(u) => u.to_string(),
            VarValue::Str(s) => s.clone(),
            VarValue::Double(d) => format!("{d:.6}"),
        }
    }

    /// As an unsigned number (booleans 0/1, text parsed, negatives 0).
    pub fn as_u64(&self) -> u64 {
        match self {
            VarValue::Bool(b) => *b as u64,
            VarValue::Int(i) => (*i).max(0) as u64,
            VarValue::UInt(u) => *u,
            VarValue::Str(s) => s.parse().unwrap_or(0),
            VarValue::Double(d) => d.max(0.0) as u64,
        }
    }

    /// As a boolean (non-zero numbers, "ON").
    pub fn as_bool(&self) -> bool {
        match self {
            VarValue::Bool(b) => *b,
            VarValue::Str(s) => s.eq_ignore_ascii_case("on"),
            other => other.as_u64() != 0,
        }
    }

    /// As text (same as [`VarValue::display`]).
    pub fn as_string(&self) -> String {
        self.display()
    }
}

/// The value a client assigns, before validation against the variable's type.
#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    /// A number without a fraction.
    Int(i128),
    /// A number with a fraction.
    Double(f64),
    /// A string or bare word (`ON`, `pool-of-threads`).
    Str(String),
    /// `DEFAULT`: the global value (SESSION) or the compiled-in default (GLOBAL).
    Default,
    /// SQL NULL.
    Null,
}

/// Errors of variable lookups and assignments, with their MySQL codes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VarError {
    /// 1193.
    #[error("Unknown system variable '{0}'")]
    Unknown(String),
    /// 1238.
    #[error("Variable '{0}' is a read only variable")]
    ReadOnly(String),
    /// 1229.
    #[error("Variable '{0}' is a GLOBAL variable and should be set with SET GLOBAL")]
    GlobalOnly(String),
    /// 1228.
    #[error("Variable '{0}' is a SESSION variable and can't be used with SET GLOBAL")]
    SessionOnly(String),
    /// 1621: `SET SESSION` of a variable whose session value is a read-only copy of the global
    /// one taken at connect time (`max_allowed_packet`, `net_buffer_length`).
    #[error("SESSION variable '{0}' is read-only. Use SET GLOBAL to assign the value")]
    SessionReadOnly(String),
    /// 1238 on read of a session-only variable as global (MySQL: 1238 with this text).
    #[error("Variable '{0}' is a SESSION variable")]
    NoGlobalValue(String),
    /// 1231.
    #[error("Variable '{0}' can't be set to the value of '{1}'")]
    BadValue(String, String),
    /// 1232.
    #[error("Incorrect argument type to variable '{0}'")]
    WrongType(String),
}

impl VarError {
    /// The MySQL error of this error.
    pub fn error_code(&self) -> shoal_errors::Code {
        use shoal_errors as er;
        match self {
            VarError::Unknown(_) => er::ER_UNKNOWN_SYSTEM_VARIABLE,
            VarError::ReadOnly(_) | VarError::NoGlobalValue(_) => er::ER_INCORRECT_GLOBAL_LOCAL_VAR,
            VarError::SessionReadOnly(_) => er::ER_VARIABLE_IS_READONLY,
            VarError::GlobalOnly(_) => er::ER_GLOBAL_VARIABLE,
            VarError::SessionOnly(_) => er::ER_LOCAL_VARIABLE,
            VarError::BadValue(..) => er::ER_WRONG_VALUE_FOR_VAR,
            VarError::WrongType(_) => er::ER_WRONG_TYPE_FOR_VAR,
        }
    }

    /// MySQL error code.
    pub fn code(&self) -> u16 {
        self.error_code().code
    }

    /// SQLSTATE.
    pub fn sqlstate(&self) -> &'static str {
        self.error_code().state
    }
}

/// Variables of both scopes whose session value cannot be set: a session gets a copy of the
/// global value at connect time and keeps it (MySQL and MariaDB: `SET SESSION` is error 1621).
/// The protocol layer sizes its packet limit from the session's `max_allowed_packet`, so a
/// client may not raise its own.
/// `max_user_connections` too: its session value is the account's limit (or the global one),
/// shown, not set (MySQL: 1621 as well).
pub const SESSION_READ_ONLY: &[&str] = &[
    "max_allowed_packet",
    "net_buffer_length",
    "max_user_connections",
];

/// The smallest `thread_stack` shoal runs connection threads with (512 KiB). MySQL's minimum is
/// 128 KiB, but a Rust frame chain (session, executor, store, RocksDB) needs more before the SQL
/// layer's own stack growth (`shoal_sql::depth`, which adds segments when less than 64 KiB are
/// left) takes over; a smaller value is refused at startup (1231) rather than raised silently.
pub const MIN_THREAD_STACK: u64 = 512 << 10;

/// One variable's definition.
#[derive(Debug, Clone)]
pub struct VarDef {
    /// mysqld name, lower case with underscores.
    pub name: &'static str,
    /// Type and domain.
    pub ty: VarType,
    /// Scopes it exists in.
    pub scope: Scope,
    /// Whether `SET` may change it at runtime (otherwise only a startup option).
    pub dynamic: bool,
    /// Compiled-in default.
    pub default: VarValue,
}

/// Callback for GLOBAL changes: `(name, new value)`.
pub type Subscriber = Box<dyn Fn(&str, &VarValue) + Send + Sync>;

/// The registry: definitions and global values.
pub struct Vars {
    defs: Map<&'static str, VarDef>,
    /// Alternative names (`tx_isolation` -> `transaction_isolation`).
    aliases: Map<&'static str, &'static str>,
    global: RwLock<Map<&'static str, VarValue>>,
    subscribers: Mutex<Vec<Arc<Subscriber>>>,
    /// Upper bounds known only at run time, tighter than the definition's (`thread_pool_size`:
    /// the groups the pool allocated at startup). `SET GLOBAL` above one is refused (1231).
    runtime_max: RwLock<Map<&'static str, u64>>,
    /// Bumped by every change of a global value: a session's cache of the variables it reads
    /// on every statement (`HotVars`) is valid while this and its own generation hold.
    global_generation: std::sync::atomic::AtomicU64,
}

const ISOLATION: &[&str] = &[
    "READ-UNCOMMITTED",
    "READ-COMMITTED",
    "REPEATABLE-READ",
    "SERIALIZABLE",
];

/// Default `sql_mode` (MySQL 8.0).
pub const DEFAULT_SQL_MODE: &str = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION";

/// The machine's host name (`hostname` variable; the generated TLS certificate names it).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".to_string())
}

/// The server version string sent in the greeting and shown by `VERSION()`.
pub const VERSION: &str = "8.0.36-shoal";
/// `version_comment`.
pub const VERSION_COMMENT: &str = concat!(
    "shoal ",
    env!("CARGO_PKG_VERSION"),
    " (MySQL-compatible, Rust)"
);

fn defs() -> Vec<VarDef> {
    use Scope::*;
    use VarType::*;
    use VarValue as V;
    let u = |min: u64, max: u64| UInt { min, max };
    let s = |x: &str| V::Str(x.to_string());
    let d = |name, ty, scope, dynamic, default| VarDef {
        name,
        ty,
        scope,
        dynamic,
        default,
    };
    const U32MAX: u64 = u32::MAX as u64;
    let mut defs = vec![
        d("version", Str, Global, false, s(VERSION)),
        d("version_comment", Str, Global, false, s(VERSION_COMMENT)),
        d("version_compile_os", Str, Global, false, s("Linux")),
        d("version_compile_machine", Str, Global, false, s(std::env::consts::ARCH)),
        d("protocol_version", u(0, 255), Global, false, V::UInt(10)),
        d("license", Str, Global, false, s("MIT OR Apache-2.0")),
        d("port", u(0, 65535), Global, false, V::UInt(3306)),
        d("socket", Str, Global, false, s("/tmp/shoal.sock")),
        d("bind_address", Str, Global, false, s("127.0.0.1")),
        d("datadir", Str, Global, false, s("./shoal-data")),
        d("hostname", Str, Global, false, s(&hostname())),
        d("server_id", u(0, U32MAX), Global, true, V::UInt(1)),
        d("pid_file", Str, Global, false, s("")),
        d("log_error", Str, Global, false, s("stderr")),
        d("tmpdir", Str, Global, false, s("/tmp")),
        d("basedir", Str, Global, false, s("/usr/")),
        d("max_connections", u(1, 100000), Global, true, V::UInt(151)),
        d("max_user_connections", u(0, U32MAX), Both, true, V::UInt(0)),
        d("max_connect_errors", u(1, u64::MAX), Global, true, V::UInt(100)),
        d("back_log", u(1, 65535), Global, false, V::UInt(151)),
        d(
            "thread_handling",
            Enum(&["one-thread-per-connection", "pool-of-threads", "no-threads"]),
            Global,
            false,
            s("pool-of-threads"),
        ),
        d("thread_cache_size", u(0, 16384), Global, true, V::UInt(9)),
        // The stack size of every connection thread and pool worker (see MIN_THREAD_STACK).
        d("thread_stack", u(MIN_THREAD_STACK, 1 << 30), Global, false, V::UInt(1048576)),
        d("wait_timeout", u(1, 31536000), Both, true, V::UInt(28800)),
        d("interactive_timeout", u(1, 31536000), Both, true, V::UInt(28800)),
        d("connect_timeout", u(2, 31536000), Global, true, V::UInt(10)),
        d("net_read_timeout", u(1, 31536000), Both, true, V::UInt(30)),
        d("net_write_timeout", u(1, 31536000), Both, true, V::UInt(60)),
        d("net_buffer_length", u(1024, 1048576), Both, true, V::UInt(16384)),
        d("net_retry_count", u(1, u64::MAX), Both, true, V::UInt(10)),
        d("max_allowed_packet", u(1024, 1073741824), Both, true, V::UInt(67108864)),
        d("admin_port", u(0, 65535), Global, false, V::UInt(0)),
        // shoal: Prometheus text on GET /metrics at metrics_address:metrics_port (0 = off).
        d("metrics_port", u(0, 65535), Global, false, V::UInt(0)),
        // The metrics port's address (not bind_address: loopback unless said otherwise).
        d("metrics_address", Str, Global, false, s("127.0.0.1")),
        d("admin_address", Str, Global, false, s("127.0.0.1")),
        d("extra_port", u(0, 65535), Global, false, V::UInt(0)),
        d("extra_max_connections", u(1, 100000), Global, true, V::UInt(1)),
        d("skip_networking", Bool, Global, false, V::Bool(false)),
        d("skip_name_resolve", Bool, Global, false, V::Bool(true)),
        d("autocommit", Bool, Both, true, V::Bool(true)),
        d("transaction_isolation", Enum(ISOLATION), Both, true, s("REPEATABLE-READ")),
        d("transaction_read_only", Bool, Both, true, V::Bool(false)),
        d("sql_mode", Str, Both, true, s(DEFAULT_SQL_MODE)),
        d("character_set_client", Str, Both, true, s("utf8mb4")),
        d("character_set_connection", Str, Both, true, s("utf8mb4")),
        d("character_set_results", Str, Both, true, s("utf8mb4")),
        d("character_set_database", Str, Both, true, s("utf8mb4")),
        d("character_set_server", Str, Both, true, s("utf8mb4")),
        d("character_set_system", Str, Global, false, s("utf8mb3")),
        d("character_set_filesystem", Str, Both, true, s("binary")),
        d("collation_connection", Str, Both, true, s("utf8mb4_general_ci")),
        d("collation_database", Str, Both, true, s("utf8mb4_general_ci")),
        d("collation_server", Str, Both, true, s("utf8mb4_general_ci")),
        d("default_collation_for_utf8mb4", Str, Both, true, s("utf8mb4_general_ci")),
        d("time_zone", Str, Both, true, s("SYSTEM")),
        d("system_time_zone", Str, Global, false, s("UTC")),
        d("lower_case_table_names", u(0, 2), Global, false, V::UInt(0)),
        d("lower_case_file_system", Bool, Global, false, V::Bool(false)),
        d("max_prepared_stmt_count", u(0, 4194304), Global, true, V::UInt(1048576)),
        d("sql_select_limit", u(0, u64::MAX), Both, true, V::UInt(u64::MAX)),
        d("max_execution_time", u(0, U32MAX), Both, true, V::UInt(0)),
        // MariaDB's limit of a session's memory; shoal counts the rows one statement holds
        // (crates/exec/src/budget.rs). MariaDB's default is unlimited; shoal's is 1 GiB so that
        // one query cannot exhaust the server's memory.
        d("max_session_mem_used", u(8192, u64::MAX), Both, true, V::UInt(1 << 30)),
        // MySQL's server-wide bound (default unlimited there): what all running statements hold
        // at once; shoal's default is half the machine's memory.
        // MySQL's bound on a transaction's binlog cache (unlimited there); shoal has no binlog,
        // but buffers a transaction's uncommitted writes in memory the same way: this bounds
        // them (1197), by default at a quarter of the machine's memory.
        d("max_binlog_cache_size", u(4096, u64::MAX), Global, true, V::UInt(half_of_memory() / 2)),
        d("global_connection_memory_limit", u(16 << 20, u64::MAX), Global, true, V::UInt(half_of_memory())),
        d("foreign_key_checks", Bool, Both, true, V::Bool(true)),
        d("unique_checks", Bool, Both, true, V::Bool(true)),
        d("sql_auto_is_null", Bool, Both, true, V::Bool(false)),
        d("sql_safe_updates", Bool, Both, true, V::Bool(false)),
        d("sql_notes", Bool, Both, true, V::Bool(true)),
        d("sql_warnings", Bool, Both, true, V::Bool(false)),
        d("sql_log_bin", Bool, Session, true, V::Bool(true)),
        d("sql_quote_show_create", Bool, Both, true, V::Bool(true)),
        d("big_tables", Bool, Both, true, V::Bool(false)),
        d("auto_increment_increment", u(1, 65535), Both, true, V::UInt(1)),
        d("auto_increment_offset", u(1, 65535), Both, true, V::UInt(1)),
        d("div_precision_increment", u(0, 30), Both, true, V::UInt(4)),
        d("explicit_defaults_for_timestamp", Bool, Both, true, V::Bool(true)),
        d("default_storage_engine", Str, Both, true, s("InnoDB")),
        d("default_tmp_storage_engine", Str, Both, true, s("InnoDB")),
        // Authentication (crates/proto/src/auth.rs, crates/server/src/rsa_keys.rs): the plugin of
        // new accounts and of the greeting; caching_sha2_password's RSA key files (relative
        // paths are in the datadir; generated on first start when absent).
        d("default_authentication_plugin", Str, Global, false, s("mysql_native_password")),
        d("caching_sha2_password_private_key_path", Str, Global, false, s("private_key.pem")),
        d("caching_sha2_password_public_key_path", Str, Global, false, s("public_key.pem")),
        d("caching_sha2_password_auto_generate_rsa_keys", Bool, Global, false, V::Bool(true)),
        d("init_connect", Str, Global, true, s("")),
        // TLS (crates/server/src/tls.rs): `ssl` OFF (`--skip-ssl`) turns it off; without
        // ssl_cert/ssl_key the server uses (and first generates) certificates in the datadir,
        // and shows their paths here.
        d("ssl", Bool, Global, false, V::Bool(true)),
        d("ssl_cert", Str, Global, false, s("")),
        d("ssl_key", Str, Global, false, s("")),
        d("ssl_ca", Str, Global, false, s("")),
        d("tls_version", Str, Global, false, s("TLSv1.2,TLSv1.3")),
        d("require_secure_transport", Bool, Global, true, V::Bool(false)),
        d("have_ssl", Str, Global, false, s("DISABLED")),
        d("have_openssl", Str, Global, false, s("DISABLED")),
        d("have_query_cache", Str, Global, false, s("NO")),
        d("query_cache_size", u(0, u64::MAX), Global, true, V::UInt(0)),
        d("query_cache_type", Enum(&["OFF", "ON", "DEMAND"]), Both, true, s("OFF")),
        d("read_only", Bool, Global, true, V::Bool(false)),
        d("super_read_only", Bool, Global, true, V::Bool(false)),
        d("long_query_time", Double { min: 0.0, max: 31536000.0 }, Both, true, V::Double(10.0)),
        d("slow_query_log", Bool, Global, true, V::Bool(false)),
        d("general_log", Bool, Global, true, V::Bool(false)),
        d("log_bin", Bool, Global, false, V::Bool(false)),
        d("binlog_format", Enum(&["ROW", "STATEMENT", "MIXED"]), Both, true, s("ROW")),
        d("gtid_mode", Str, Global, false, s("OFF")),
        d("open_files_limit", u(0, u64::MAX), Global, false, V::UInt(65535)),
        d("table_open_cache", u(1, 524288), Global, true, V::UInt(4000)),
        d("table_definition_cache", u(400, 524288), Global, true, V::UInt(2000)),
        d("sort_buffer_size", u(32768, u64::MAX), Both, true, V::UInt(262144)),
        d("join_buffer_size", u(128, u64::MAX), Both, true, V::UInt(262144)),
        d("read_buffer_size", u(8192, 2147479552), Both, true, V::UInt(131072)),
        d("tmp_table_size", u(1024, u64::MAX), Both, true, V::UInt(16777216)),
        d("max_heap_table_size", u(16384, u64::MAX), Both, true, V::UInt(16777216)),
        d("key_buffer_size", u(0, u64::MAX), Global, true, V::UInt(8388608)),
        d("performance_schema", Bool, Global, false, V::Bool(false)),
        d("innodb_buffer_pool_size", u(5242880, u64::MAX), Global, true, V::UInt(134217728)),
        d("innodb_flush_log_at_trx_commit", u(0, 2), Global, true, V::UInt(1)),
        d(
            "innodb_flush_method",
            Enum(&["O_DIRECT", "fsync", "O_DSYNC", "O_DIRECT_NO_FSYNC"]),
            Global,
            false,
            s("O_DIRECT"),
        ),
        d("innodb_lock_wait_timeout", u(1, 1073741824), Both, true, V::UInt(50)),
        d("lock_wait_timeout", u(1, 31536000), Both, true, V::UInt(31536000)),
        d("innodb_deadlock_detect", Bool, Global, true, V::Bool(true)),
        d("innodb_file_per_table", Bool, Global, true, V::Bool(true)),
        d("innodb_version", Str, Global, false, s("8.0.36")),
        d("innodb_log_file_size", u(1048576, u64::MAX), Global, false, V::UInt(50331648)),
        d("innodb_strict_mode", Bool, Both, true, V::Bool(true)),
        // shoal: each group's concurrency cap set by its own controller (docs/OPERATIONS.md).
        d("timestamp", Double { min: 0.0, max: 2147483647.0 }, Session, true, V::Double(0.0)),
        d("last_insert_id", u(0, u64::MAX), Session, true, V::UInt(0)),
        d("insert_id", u(0, u64::MAX), Session, true, V::UInt(0)),
        d("identity", u(0, u64::MAX), Session, true, V::UInt(0)),
        d("pseudo_thread_id", u(0, u64::MAX), Session, true, V::UInt(0)),
        d("warning_count", u(0, u64::MAX), Session, false, V::UInt(0)),
        d("error_count", u(0, u64::MAX), Session, false, V::UInt(0)),
        d("profiling", Bool, Session, true, V::Bool(false)),
        d("session_track_schema", Bool, Both, true, V::Bool(true)),
        d("session_track_state_change", Bool, Both, true, V::Bool(false)),
        d("session_track_system_variables", Str, Both, true, s("time_zone,autocommit,character_set_client,character_set_results,character_set_connection")),
        d("session_track_transaction_info", Enum(&["OFF", "STATE", "CHARACTERISTICS"]), Both, true, s("OFF")),
        d("max_sort_length", u(4, 8388608), Both, true, V::UInt(1024)),
        d("max_recursive_iterations", u(0, u64::MAX), Both, true, V::UInt(1000)),
        d("max_join_size", u(1, u64::MAX), Both, true, V::UInt(u64::MAX)),
        d("group_concat_max_len", u(4, u64::MAX), Both, true, V::UInt(1024)),
        d("old_passwords", u(0, 2), Both, true, V::UInt(0)),
    ];
    // The thread pool's variables: one table, defaults from the pool's `Config::default()`.
    defs.extend(shoal_sched::vars::VARIABLES.iter().map(pool_def));
    defs
}

/// The definition of one of the thread pool's variables ([`shoal_sched::vars`]).
fn pool_def(v: &shoal_sched::vars::Var) -> VarDef {
    use shoal_sched::vars::{Domain, Scope as PoolScope};
    VarDef {
        name: v.name,
        ty: match v.domain {
            Domain::Bool => VarType::Bool,
            Domain::UInt { min, max } => VarType::UInt { min, max },
            Domain::Enum(words) => VarType::Enum(words),
        },
        scope: match v.scope {
            PoolScope::Global => Scope::Global,
            PoolScope::Both => Scope::Both,
        },
        dynamic: v.dynamic,
        default: from_pool_value(v.default_value()),
    }
}

/// A pool table value as a stored variable value.
pub fn from_pool_value(v: shoal_sched::vars::Value) -> VarValue {
    use shoal_sched::vars::Value;
    match v {
        Value::Bool(b) => VarValue::Bool(b),
        Value::UInt(n) => VarValue::UInt(n),
        Value::Word(w) => VarValue::Str(w),
    }
}

/// A stored value of one of the pool's variables in the pool table's terms (what its
/// [`shoal_sched::vars::Var::set`] takes).
pub fn to_pool_value(v: &VarValue) -> shoal_sched::vars::Value {
    use shoal_sched::vars::Value;
    match v {
        VarValue::Bool(b) => Value::Bool(*b),
        VarValue::Str(s) => Value::Word(s.clone()),
        other => Value::UInt(other.as_u64()),
    }
}

fn canonical_name(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace('-', "_")
}

impl Vars {
    /// The registry with compiled-in defaults.
    pub fn new() -> Vars {
        let mut map = Map::default();
        let mut global = Map::default();
        for d in defs() {
            if d.scope != Scope::Session {
                global.insert(d.name, d.default.clone());
            }
            map.insert(d.name, d);
        }
        let aliases = Map::from_iter([
            ("tx_isolation", "transaction_isolation"),
            ("tx_read_only", "transaction_read_only"),
            ("storage_engine", "default_storage_engine"),
        ]);
        Vars {
            defs: map,
            aliases,
            global: RwLock::new(global),
            subscribers: Mutex::new(Vec::new()),
            runtime_max: RwLock::new(Map::default()),
            global_generation: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Looks up a definition by any spelling (case, dashes, aliases).
    pub fn def(&self, name: &str) -> Option<&VarDef> {
        // The server's own lookups use canonical names: no allocation for them.
        if let Some(d) = self.defs.get(name) {
            return Some(d);
        }
        let n = canonical_name(name);
        let n = self.aliases.get(n.as_str()).copied().unwrap_or(&n);
        self.defs.get(n)
    }

    fn def_or_err(&self, name: &str) -> Result<&VarDef, VarError> {
        self.def(name)
            .ok_or_else(|| VarError::Unknown(canonical_name(name)))
    }

    /// All definitions, sorted by name.
    pub fn all(&self) -> Vec<&VarDef> {
        let mut v: Vec<&VarDef> = self.defs.values().collect();
        v.sort_by_key(|d| d.name);
        v
    }

    /// Current global value.
    pub fn global(&self, name: &str) -> Result<VarValue, VarError> {
        let d = self.def_or_err(name)?;
        if d.scope == Scope::Session {
            return Err(VarError::NoGlobalValue(d.name.to_string()));
        }
        Ok(self.global.read().unwrap_or_else(PoisonError::into_inner)[d.name].clone())
    }

    /// Global value of a variable known to exist (panics on a typo: for compiled-in names).
    pub fn get(&self, name: &str) -> VarValue {
        self.global(name).expect("known global variable")
    }

    /// Validates `value` for the variable `d` and converts it to its stored form.
    pub fn validate(
        &self,
        d: &VarDef,
        value: &SetValue,
        global: bool,
    ) -> Result<VarValue, VarError> {
        let name = d.name.to_string();
        let bad = |shown: String| VarError::BadValue(name.clone(), shown);
        match value {
            SetValue::Default => {
                if global || d.scope == Scope::Session {
                    Ok(d.default.clone())
                } else {
                    Ok(self.global.read().unwrap_or_else(PoisonError::into_inner)[d.name].clone())
                }
            }
            SetValue::Null => match d.ty {
                VarType::Str if d.name == "init_connect" => Ok(VarValue::Str(String::new())),
                _ => Err(bad("NULL".into())),
            },
            v => match &d.ty {
                VarType::Bool => match v {
                    SetValue::Int(0) => Ok(VarValue::Bool(false)),
                    SetValue::Int(1) => Ok(VarValue::Bool(true)),
                    SetValue::Int(i) => Err(bad(i.to_string())),
                    SetValue::Str(s) => match s.to_ascii_uppercase().as_str() {
                        "ON" | "TRUE" | "1" => Ok(VarValue::Bool(true)),
                        "OFF" | "FALSE" | "0" => Ok(VarValue::Bool(false)),
                        _ => Err(bad(s.clone())),
                    },
                    _ => Err(VarError::WrongType(name)),
                },
                VarType::Int { min, max } => match v {
                    SetValue::Int(i) if *i >= *min as i128 && *i <= *max as i128 => {
                        Ok(VarValue::Int(*i as i64))
                    }
                    SetValue::Int(i) => Err(bad(i.to_string())),
                    _ => Err(VarError::WrongType(name)),
                },
                VarType::UInt { min, max } => match v {
                    SetValue::Int(i) if *i >= *min as i128 && *i <= *max as i128 => {
                        Ok(VarValue::UInt(*i as u64))
                    }
                    SetValue::Int(i) => Err(bad(i.to_string())),
                    _ => Err(VarError::WrongType(name)),
                },
                VarType::Double { min, max } => {
                    let f = match v {
                        SetValue::Int(i) => *i as f64,
                        SetValue::Double(f) => *f,
                        _ => return Err(VarError::WrongType(name)),
                    };
                    if f < *min || f > *max {
                        return Err(bad(f.to_string()));
                    }
                    Ok(VarValue::Double(f))
                }
                VarType::Enum(choices) => match v {
                    SetValue::Str(s) => choices
                        .iter()
                        .find(|c| {
                            c.eq_ignore_ascii_case(s) || c.replace('-', "_").eq_ignore_ascii_case(s)
                        })
                        .map(|c| VarValue::Str(c.to_string()))
                        .ok_or_else(|| bad(s.clone())),
                    SetValue::Int(i) if *i >= 0 && (*i as usize) < choices.len() => {
                        Ok(VarValue::Str(choices[*i as usize].to_string()))
                    }
                    SetValue::Int(i) => Err(bad(i.to_string())),
                    _ => Err(VarError::WrongType(name)),
                },
                VarType::Str => match v {
                    SetValue::Str(s) => Ok(VarValue::Str(s.clone())),
                    SetValue::Int(i) => Ok(VarValue::Str(i.to_string())),
                    _ => Err(VarError::WrongType(name)),
                },
            },
        }
    }

    /// Tightens the upper bound of a global integer variable at run time (see `runtime_max`);
    /// an unknown name is ignored.
    pub fn set_runtime_max(&self, name: &str, max: u64) {
        if let Some(d) = self.def(name) {
            let n = d.name;
            self.runtime_max
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(n, max);
        }
    }

    /// `SET GLOBAL name = value` (runtime: read-only variables are refused).
    pub fn set_global(&self, name: &str, value: &SetValue) -> Result<(), VarError> {
        let d = self.def_or_err(name)?;
        if !d.dynamic {
            return Err(VarError::ReadOnly(d.name.to_string()));
        }
        if d.scope == Scope::Session {
            return Err(VarError::SessionOnly(d.name.to_string()));
        }
        let v = self.validate(d, value, true)?;
        let max = self
            .runtime_max
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(d.name)
            .copied();
        if let (Some(max), VarValue::UInt(n)) = (max, &v) {
            if *n > max {
                return Err(VarError::BadValue(d.name.to_string(), n.to_string()));
            }
        }
        self.store_global(d.name, v);
        Ok(())
    }

    /// Startup option: like `SET GLOBAL` but read-only variables may be set.
    pub fn set_startup(&self, name: &str, value: &str) -> Result<(), VarError> {
        let d = self.def_or_err(name)?;
        if d.scope == Scope::Session {
            return Err(VarError::SessionOnly(d.name.to_string()));
        }
        let sv = parse_option_value(&d.ty, value);
        let v = self.validate(d, &sv, true)?;
        self.store_global(d.name, v);
        Ok(())
    }

    fn store_global(&self, name: &'static str, v: VarValue) {
        // MySQL couples the two: super_read_only=ON turns read_only on, read_only=OFF turns
        // super_read_only off (both reported to subscribers).
        let coupled = match (name, &v) {
            ("super_read_only", VarValue::Bool(true)) => Some(("read_only", VarValue::Bool(true))),
            ("read_only", VarValue::Bool(false)) => {
                Some(("super_read_only", VarValue::Bool(false)))
            }
            _ => None,
        };
        if let Some((other, ov)) = coupled {
            if self.global(other).ok().as_ref() != Some(&ov) {
                self.store_one(other, ov);
            }
        }
        self.store_one(name, v);
    }

    /// Changes whenever a global value changes (see the field).
    pub fn global_generation(&self) -> u64 {
        self.global_generation
            .load(std::sync::atomic::Ordering::Acquire)
    }

    fn store_one(&self, name: &'static str, v: VarValue) {
        self.global
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name, v.clone());
        self.global_generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        let subs: Vec<Arc<Subscriber>> = self
            .subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for s in subs {
            s(name, &v);
        }
    }

    /// Registers a callback run after every change of a GLOBAL value (`SET GLOBAL`, startup).
    pub fn subscribe(&self, f: Subscriber) {
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::new(f));
    }

    /// A session's initial copy of every session-capable variable.
    pub fn session_copy(&self) -> SessionVars {
        let g = self.global.read().unwrap_or_else(PoisonError::into_inner);
        let mut values = Map::default();
        for d in self.defs.values() {
            match d.scope {
                Scope::Both => {
                    values.insert(d.name, g[d.name].clone());
                }
                Scope::Session => {
                    values.insert(d.name, d.default.clone());
                }
                Scope::Global => {}
            }
        }
        SessionVars {
            values,
            generation: next_generation(),
        }
    }
}

impl Default for Vars {
    fn default() -> Self {
        Vars::new()
    }
}

/// Interprets a command-line/option-file value for a variable of type `ty`.
fn parse_option_value(ty: &VarType, value: &str) -> SetValue {
    let v = value.trim();
    match ty {
        VarType::Int { .. } | VarType::UInt { .. } => {
            // mysqld accepts K/M/G suffixes for sizes.
            let (num, mult) = match v.chars().last().map(|c| c.to_ascii_uppercase()) {
                Some('K') => (&v[..v.len() - 1], 1024i128),
                Some('M') => (&v[..v.len() - 1], 1024 * 1024),
                Some('G') => (&v[..v.len() - 1], 1024 * 1024 * 1024),
                _ => (v, 1),
            };
            match num.parse::<i128>() {
                Ok(n) => SetValue::Int(n * mult),
                Err(_) => SetValue::Str(v.to_string()),
            }
        }
        VarType::Double { .. } => match v.parse::<f64>() {
            Ok(f) => SetValue::Double(f),
            Err(_) => SetValue::Str(v.to_string()),
        },
        VarType::Bool if v.is_empty() => SetValue::Int(1),
        VarType::Bool => match v.parse::<i128>() {
            Ok(n) => SetValue::Int(n),
            Err(_) => SetValue::Str(v.to_string()),
        },
        _ => SetValue::Str(v.to_string()),
    }
}

/// Source of [`SessionVars::generation`] values: unique across all sessions and copies.
static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_generation() -> u64 {
    GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// One session's variable values.
#[derive(Debug, Clone)]
pub struct SessionVars {
    values: Map<&'static str, VarValue>,
    /// Changes whenever a `SET [SESSION]` changes a value (and differs between copies), so a
    /// session can cache values derived from its variables. [`SessionVars::force`] (values the
    /// server maintains itself, such as `warning_count`) leaves it alone.
    generation: u64,
}

impl SessionVars {
    /// See the field: equal generations mean no `SET` happened in between.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Session value (for GLOBAL-only variables: the global value).
    pub fn get(&self, vars: &Vars, name: &str) -> Result<VarValue, VarError> {
        let d = vars.def_or_err(name)?;
        match self.values.get(d.name) {
            Some(v) => Ok(v.clone()),
            None => vars.global(d.name),
        }
    }

    /// `SET [SESSION] name = value`.
    pub fn set(&mut self, vars: &Vars, name: &str, value: &SetValue) -> Result<(), VarError> {
        let d = vars.def_or_err(name)?;
        if d.scope == Scope::Global {
            if !d.dynamic {
                return Err(VarError::ReadOnly(d.name.to_string()));
            }
            return Err(VarError::GlobalOnly(d.name.to_string()));
        }
        if !d.dynamic {
            return Err(VarError::ReadOnly(d.name.to_string()));
        }
        if SESSION_READ_ONLY.contains(&d.name) {
            return Err(VarError::SessionReadOnly(d.name.to_string()));
        }
        let v = vars.validate(d, value, false)?;
        self.values.insert(d.name, v);
        self.generation = next_generation();
        Ok(())
    }

    /// Stores a value without validation (server-maintained session variables such as
    /// `last_insert_id` or `warning_count`).
    pub fn force(&mut self, name: &'static str, v: VarValue) {
        self.values.insert(name, v);
        self.generation = next_generation();
    }
}

/// Half the machine's physical memory (`MemTotal` of /proc/meminfo), 4 GiB if unknown.
fn half_of_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kb| kb * 1024 / 2)
        .unwrap_or(4 << 30)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_scopes() {
        let v = Vars::new();
        assert_eq!(v.get("max_connections"), VarValue::UInt(151));
        assert_eq!(v.get("MAX-CONNECTIONS"), VarValue::UInt(151));
        assert_eq!(
            v.get("tx_isolation"),
            VarValue::Str("REPEATABLE-READ".into())
        );
        assert_eq!(v.get("max_prepared_stmt_count"), VarValue::UInt(1048576));
        let mut s = v.session_copy();
        assert_eq!(
            s.set(&v, "max_connections", &SetValue::Int(10)),
            Err(VarError::GlobalOnly("max_connections".into()))
        );
        assert_eq!(
            v.set_global("thread_handling", &SetValue::Str("pool-of-threads".into())),
            Err(VarError::ReadOnly("thread_handling".into()))
        );
        assert_eq!(
            v.set_global("nope", &SetValue::Int(1)).unwrap_err().code(),
            1193
        );
        assert_eq!(
            v.set_global("max_connections", &SetValue::Int(0))
                .unwrap_err()
                .code(),
            1231
        );
        // A bound known only at run time (the pool's allocated groups) tightens the range.
        v.set_runtime_max("thread_pool_size", 128);
        assert_eq!(
            v.set_global("thread_pool_size", &SetValue::Int(129))
                .unwrap_err()
                .code(),
            1231
        );
        v.set_global("thread_pool_size", &SetValue::Int(128))
            .unwrap();
        assert_eq!(v.get("thread_pool_size"), VarValue::UInt(128));
        assert_eq!(
            v.set_global("max_connections", &SetValue::Str("x".into()))
                .unwrap_err()
                .code(),
            1232
        );
        assert_eq!(
            s.set(&v, "max_allowed_packet", &SetValue::Int(4096))
                .unwrap_err()
                .code(),
            1621
        );
        assert_eq!(
            s.set(&v, "net_buffer_length", &SetValue::Default)
                .unwrap_err()
                .code(),
            1621
        );
        v.set_global("max_allowed_packet", &SetValue::Int(4096))
            .unwrap();
        s.set(&v, "autocommit", &SetValue::Str("off".into()))
            .unwrap();
        assert_eq!(s.get(&v, "autocommit").unwrap(), VarValue::Bool(false));
        assert_eq!(v.get("autocommit"), VarValue::Bool(true));
    }

    #[test]
    fn read_only_and_super_read_only_are_coupled() {
        let v = Vars::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        v.subscribe(Box::new(move |n, val| {
            s2.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((n.to_string(), val.as_bool()))
        }));
        let on = |x: &str| v.get(x).as_bool();
        v.set_global("super_read_only", &SetValue::Int(1)).unwrap();
        assert!(on("read_only") && on("super_read_only"));
        v.set_global("super_read_only", &SetValue::Int(0)).unwrap();
        assert!(on("read_only") && !on("super_read_only"));
        v.set_global("super_read_only", &SetValue::Str("ON".into()))
            .unwrap();
        v.set_global("read_only", &SetValue::Str("OFF".into()))
            .unwrap();
        assert!(!on("read_only") && !on("super_read_only"));
        v.set_startup("super-read-only", "").unwrap();
        assert!(on("read_only") && on("super_read_only"));
        // Subscribers see both halves, the implied one first.
        assert_eq!(
            seen.lock().unwrap_or_else(PoisonError::into_inner)[..3],
            [
                ("read_only".to_string(), true),
                ("super_read_only".to_string(), true),
                ("super_read_only".to_string(), false),
            ]
        );
        // max_user_connections: shown per session, set globally only.
        let mut s = v.session_copy();
        assert_eq!(
            s.set(&v, "max_user_connections", &SetValue::Int(3))
                .unwrap_err()
                .code(),
            1621
        );
        assert_eq!(
            v.set_startup("thread_stack", "128K").unwrap_err().code(),
            1231
        );
        v.set_startup("thread_stack", "512K").unwrap();
    }

    #[test]
    fn session_copy_is_isolated_from_later_global_changes() {
        let v = Vars::new();
        let s = v.session_copy();
        v.set_global("wait_timeout", &SetValue::Int(5)).unwrap();
        assert_eq!(s.get(&v, "wait_timeout").unwrap(), VarValue::UInt(28800));
        assert_eq!(
            v.session_copy().get(&v, "wait_timeout").unwrap(),
            VarValue::UInt(5)
        );
    }

    #[test]
    fn startup_options_and_subscribers() {
        let v = Vars::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        v.subscribe(Box::new(move |n, val| {
            s2.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((n.to_string(), val.clone()))
        }));
        v.set_startup("thread-handling", "pool-of-threads").unwrap();
        v.set_startup("innodb_buffer_pool_size", "1G").unwrap();
        assert_eq!(v.get("innodb_buffer_pool_size"), VarValue::UInt(1 << 30));
        assert!(v.set_startup("thread_handling", "bogus").is_err());
        v.set_global("thread_pool_size", &SetValue::Int(7)).unwrap();
        let seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[2], ("thread_pool_size".to_string(), VarValue::UInt(7)));
    }

    /// The pool's variables come from its table: every entry is defined with the table's
    /// domain and scope, and its default is what the pool's `Config::default()` holds.
    #[test]
    fn pool_variables_come_from_the_pool_table() {
        let v = Vars::new();
        let config = shoal_sched::Config::default();
        for p in shoal_sched::vars::VARIABLES {
            let d = v.def(p.name).expect(p.name);
            assert_eq!(d.dynamic, p.dynamic, "{}", p.name);
            assert_eq!(
                v.get(p.name),
                from_pool_value((p.get)(&config)),
                "{}",
                p.name
            );
            assert_eq!(
                to_pool_value(&v.get(p.name)),
                p.default_value(),
                "{}",
                p.name
            );
        }
        let defined = v
            .all()
            .iter()
            .filter(|d| d.name.starts_with("thread_pool_"))
            .count();
        assert_eq!(defined, shoal_sched::vars::VARIABLES.len());
        // Values outside the table's domain are refused as for any variable.
        assert!(v
            .set_global("thread_pool_oversubscribe", &SetValue::Int(0))
            .is_err());
        assert!(v
            .set_global("thread_pool_high_prio_mode", &SetValue::Str("bogus".into()))
            .is_err());
        assert!(v
            .set_global("thread_pool_exact_stats", &SetValue::Int(0))
            .is_err());
    }
}
