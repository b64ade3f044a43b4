//! Status counters (`SHOW STATUS`): server-maintained counters, `Com_*` per statement kind, and
//! a registry of providers through which other crates (storage, thread pool) add their rows.
//!
//! Counters are relaxed atomics: they are statistics, read while being updated, and exactness
//! across counters is not promised (MySQL gives no such promise either).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Statement kinds counted as `Com_<name>`; index = position.
pub const COM_NAMES: &[&str] = &[
    "admin_commands",
    "alter_user",
    "analyze",
    "begin",
    "change_db",
    "check",
    "commit",
    "create_db",
    "create_index",
    "create_table",
    "create_user",
    "delete",
    "drop_db",
    "drop_index",
    "drop_table",
    "drop_user",
    "empty_query",
    "insert",
    "kill",
    "ping",
    "quit",
    "replace",
    "rollback",
    "select",
    "set_option",
    "show_charsets",
    "show_collations",
    "show_databases",
    "show_engines",
    "show_errors",
    "show_processlist",
    "show_status",
    "show_table_status",
    "show_tables",
    "show_variables",
    "show_warnings",
    "stmt_close",
    "stmt_execute",
    "stmt_fetch",
    "stmt_prepare",
    "stmt_reset",
    "truncate",
    "update",
    "field_list",
    "statistics",
    "init_db",
    "reset_connection",
    "flush",
    "lock_tables",
    "unlock_tables",
    "savepoint",
    "rollback_to_savepoint",
    "release_savepoint",
    "alter_table",
    "show_create_db",
    "grant",
    "revoke",
    "show_grants",
    "show_create_user",
    "alter_user",
    "rename_user",
    "prepare_sql",
    "execute_sql",
    "execute_immediate",
    "dealloc_sql",
    "optimize",
];

/// Index of `Com_<name>` in [`COM_NAMES`] (panics on an unknown name: compile-time names only).
pub fn com_index(name: &str) -> usize {
    COM_NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("unknown Com_ counter {name}"))
}

/// A status provider: appends `(Variable_name, Value)` rows.
pub type StatusProvider = Box<dyn Fn(&mut Vec<(String, String)>) + Send + Sync>;

/// Server-wide counters maintained by the session layer.
pub struct StatusCounters {
    /// `Questions`: statements sent by clients (COM_QUERY statements, COM_STMT_EXECUTE).
    pub questions: AtomicU64,
    /// `Queries`: every statement executed, including those inside prepared statements.
    pub queries: AtomicU64,
    /// `Threads_running`: sessions currently executing a command.
    pub threads_running: AtomicU64,
    /// `Max_used_connections`: peak of simultaneous sessions.
    pub max_used_connections: AtomicU64,
    /// `Prepared_stmt_count`: prepared statements currently open, server-wide.
    pub prepared_stmt_count: AtomicU64,
    /// `Slow_queries` (always 0: no slow log yet).
    pub slow_queries: AtomicU64,
    /// `Com_*` counters in [`COM_NAMES`] order.
    pub com: Vec<AtomicU64>,
    providers: Mutex<Vec<Arc<StatusProvider>>>,
}

impl StatusCounters {
    /// All zero.
    pub fn new() -> Self {
        StatusCounters {
            questions: AtomicU64::new(0),
            queries: AtomicU64::new(0),
            threads_running: AtomicU64::new(0),
            max_used_connections: AtomicU64::new(0),
            prepared_stmt_count: AtomicU64::new(0),
            slow_queries: AtomicU64::new(0),
            com: COM_NAMES.iter().map(|_| AtomicU64::new(0)).collect(),
            providers: Mutex::new(Vec::new()),
        }
    }

    /// Bumps `Com_<name>`.
    pub fn com(&self, name: &str) {
        self.com[com_index(name)].fetch_add(1, Ordering::Relaxed);
    }

    /// Registers a provider of extra status rows.
    pub fn add_provider(&self, p: StatusProvider) {
        self.providers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::new(p));
    }

    /// Runs every provider.
    pub fn provided(&self, out: &mut Vec<(String, String)>) {
        let ps: Vec<Arc<StatusProvider>> = self
            .providers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for p in ps {
            p(out);
        }
    }
}

impl Default for StatusCounters {
    fn default() -> Self {
        Self::new()
    }
}
