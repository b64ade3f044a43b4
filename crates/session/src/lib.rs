//! Sessions and server-wide state: the [`shoal_proto::Backend`] implementation.
//!
//! SEAM (fixed API, used by the network layer in `crates/server`):
//! - [`Server::new`] builds the server state from defaults.
//! - [`Server::set_startup_option`] applies one `name=value` from the command line or my.cnf
//!   (dashes and underscores interchangeable); unknown names or bad values are an `Err(message)`.
//! - typed getters used by the network layer (port, socket, max_connections, ...).
//! - [`Server::status`] exposes the counters the network layer maintains.
//! - [`Server::open_session`] creates the per-connection [`Session`] (a `Backend`).
//!
//! How it fits together: [`Server`] owns everything shared by connections — the system variable
//! registry ([`vars::Vars`]), accounts ([`users`]), the process list (one [`ProcessEntry`] per open
//! session, shared with the session through an `Arc` so KILL from another session can set flags and
//! shut the victim's socket down), status counters ([`status`]) and the table engine
//! (`shoal_exec::TableEngine`: tables, transactions and the catalog of databases, plugged in at
//! startup by [`Server::set_table_engine`], before the server accepts connections). A
//! [`Session`] is per connection, owned by the protocol state and moved between threads between
//! commands; it keeps its variable copy, user variables, prepared statements, current database and
//! table session, and executes statements (see `session/mod.rs` for its modules).
//!
//! Server-wide locks (process list, accounts, variables, hooks, counters) are taken with
//! `unwrap_or_else(PoisonError::into_inner)`: a connection that panics while holding one (the
//! handlers catch the panic and close only that connection) must not make every later
//! connection panic on the poisoned lock. Each critical section leaves its data consistent at
//! every point a panic could interrupt it (single inserts, removals and assignments).

pub mod accounts;
pub mod fault;
pub mod grant_tables;
pub mod hooks;
mod plans;
pub mod privileges;
pub mod session;
pub mod sha2_password;
pub mod status;
pub mod users;
pub mod vars;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

pub use session::Session;
use status::StatusCounters;
use users::Account;
use vars::{VarValue, Vars};

/// A handle the network layer gives each session so that KILL (from another session) can
/// interrupt it: `shutdown` must make the connection's next or current socket read fail.
pub trait ConnectionControl: Send + Sync {
    /// Shut the socket down (both directions) so whoever serves it notices.
    fn shutdown(&self);
}

/// Server-wide status counters the network layer updates directly (relaxed atomics).
#[derive(Debug, Default)]
pub struct NetStatus {
    /// `Connections`: connection attempts, successful or not.
    pub connections: AtomicU64,
    /// `Aborted_connects`: failed handshakes/logins.
    pub aborted_connects: AtomicU64,
    /// `Aborted_clients`: connections that died without COM_QUIT.
    pub aborted_clients: AtomicU64,
    /// `Threads_created`: threads created to serve connections.
    pub threads_created: AtomicU64,
    /// `Threads_cached`: idle threads in the thread cache (a gauge).
    pub threads_cached: AtomicU64,
    /// `Bytes_received`.
    pub bytes_received: AtomicU64,
    /// `Bytes_sent`.
    pub bytes_sent: AtomicU64,
    /// `Connection_errors_max_connections`: refused with 1040.
    pub connection_errors_max_connections: AtomicU64,
    /// `Connection_errors_host_blocked`: refused with 1129 (`max_connect_errors`).
    pub connection_errors_host_blocked: AtomicU64,
}

/// `read_only` / `super_read_only` as one atomic (read on every table statement): off,
/// `read_only` (users without SUPER are refused), `super_read_only` (everyone is).
const READ_ONLY_OFF: u8 = 0;
const READ_ONLY_ON: u8 = 1;
const READ_ONLY_SUPER: u8 = 2;

/// Kill state of a connection.
pub const KILL_NONE: u8 = 0;
/// KILL QUERY: interrupt the running statement only.
pub const KILL_QUERY: u8 = 1;
/// KILL CONNECTION: interrupt and close.
pub const KILL_CONNECTION: u8 = 2;

/// One row of the process list, shared between the session and the server.
pub struct ProcessEntry {
    /// Connection id.
    pub id: u32,
    /// Client host (`127.0.0.1:port` style as SHOW PROCESSLIST shows it, or `localhost`).
    pub host: String,
    /// Mutable parts (user, db, command, info), behind a mutex (short critical sections).
    pub info: Mutex<ProcessInfo>,
    /// [`KILL_NONE`], [`KILL_QUERY`] or [`KILL_CONNECTION`].
    pub kill: AtomicU8,
    /// Whether a statement is executing right now (KILL QUERY affects only a running one).
    pub running: AtomicBool,
    /// Lets KILL shut the victim's socket down.
    pub control: Arc<dyn ConnectionControl>,
    /// Interrupts the session's table statement (row-lock waits) on KILL; set once the
    /// session has a table session.
    pub table_kill: Mutex<Option<shoal_exec::KillHandle>>,
}

/// The mutable columns of a process-list row.
#[derive(Debug, Clone)]
pub struct ProcessInfo {
    /// Authenticated user ("unauthenticated user" before login).
    pub user: String,
    /// Host pattern of the account the connection logged in as (`None` before login): with
    /// `user`, the account `max_user_connections` counts connections of.
    pub account_host: Option<String>,
    /// Current database.
    pub db: Option<String>,
    /// `Sleep`, `Query`, `Execute`, `Connect`, `Killed`, ...
    pub command: &'static str,
    /// When the current command (or idle period) started.
    pub since: Instant,
    /// State column (`executing`, `User sleep`, ``).
    pub state: &'static str,
    /// Statement text being executed (shared with the statement: setting it copies nothing).
    pub text: Option<Arc<str>>,
}

impl ProcessEntry {
    /// The process-list row, locked (a poisoned lock is taken over: see the crate doc).
    pub fn info(&self) -> std::sync::MutexGuard<'_, ProcessInfo> {
        self.info.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the connection was killed (KILL CONNECTION).
    pub fn connection_killed(&self) -> bool {
        self.kill.load(Ordering::Acquire) == KILL_CONNECTION
    }

    /// Whether the running statement should stop (KILL QUERY or KILL CONNECTION).
    pub fn query_killed(&self) -> bool {
        self.kill.load(Ordering::Acquire) != KILL_NONE
    }
}

/// Server-wide state: variables, users, process list, status.
pub struct Server {
    net: NetStatus,
    /// System variables (definitions and global values).
    pub vars: Vars,
    /// Session-layer counters (Questions, Com_*, ...).
    pub counters: StatusCounters,
    /// Accounts and privileges, durable once the table engine is attached ([`accounts`]).
    accounts: Arc<accounts::Accounts>,
    processes: Mutex<HashMap<u32, Arc<ProcessEntry>>>,
    /// Sessions logged in through the admin/extra port (bounded by `extra_max_connections`).
    pub admin_sessions: std::sync::atomic::AtomicUsize,
    next_id: AtomicU32,
    started: Instant,
    /// When `FLUSH STATUS` last ran (`Uptime_since_flush_status`); the start until then.
    status_flushed: Mutex<Instant>,
    /// Virtual tables and process-state hooks (see [`hooks`]).
    hooks: Arc<hooks::Hooks>,
    /// The table engine (tables, transactions, the catalog); `None` only during startup, until
    /// [`Server::set_table_engine`], before connections are accepted.
    tables: RwLock<Option<Arc<shoal_exec::TableEngine>>>,
    /// Test-only fault injection is enabled ([`fault`], `SHOAL_FAULT_INJECTION=1`).
    fault_injection: bool,
    /// `read_only` / `super_read_only` (`READ_ONLY_*`), kept in step by a variable subscriber.
    read_only: Arc<AtomicU8>,
    /// Consecutive interrupted connection attempts per client IP (`max_connect_errors`).
    host_errors: Mutex<HashMap<String, u64>>,
    /// Prepared statements shared between sessions ([`plans`]).
    plans: Arc<plans::SharedPlans>,
}

/// Most client addresses whose connection errors are remembered (`max_connect_errors`).
const HOST_CACHE_MAX: usize = 1024;

/// The host cache's view of a client: TCP connections from an address other than loopback.
/// MySQL leaves loopback (127.0.0.0/8, ::1) and Unix-socket connections out of the host cache,
/// so they are never blocked; a test server (fault injection on) counts loopback too, so that
/// the blocking can be tested on this machine.
fn host_cache_key(host: &str, include_loopback: bool) -> Option<&str> {
    let (ip, _port) = host.rsplit_once(':')?;
    let ip = ip.trim_matches(['[', ']']);
    let addr: std::net::IpAddr = ip.parse().ok()?;
    (include_loopback || !addr.is_loopback()).then_some(ip)
}

impl Server {
    /// Server state with compiled-in defaults.
    pub fn new() -> Arc<Server> {
        let read_only = Arc::new(AtomicU8::new(READ_ONLY_OFF));
        let vars = Vars::new();
        let ro = read_only.clone();
        vars.subscribe(Box::new(move |name, value| {
            // The store of a coupled pair reports both (see `Vars`); each updates its level.
            match (name, value.as_bool()) {
                ("read_only", true) => {
                    let _ = ro.compare_exchange(
                        READ_ONLY_OFF,
                        READ_ONLY_ON,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    );
                }
                ("read_only", false) => ro.store(READ_ONLY_OFF, Ordering::Release),
                ("super_read_only", true) => ro.store(READ_ONLY_SUPER, Ordering::Release),
                ("super_read_only", false) => {
                    let _ = ro.compare_exchange(
                        READ_ONLY_SUPER,
                        READ_ONLY_ON,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    );
                }
                _ => {}
            }
        }));
        let accounts = Arc::new(accounts::Accounts::new());
        let hooks = Arc::new(hooks::Hooks::default());
        let server = Arc::new(Server {
            net: NetStatus::default(),
            vars,
            counters: StatusCounters::new(),
            accounts: accounts.clone(),
            processes: Mutex::new(HashMap::new()),
            admin_sessions: std::sync::atomic::AtomicUsize::new(0),
            next_id: AtomicU32::new(1),
            started: Instant::now(),
            status_flushed: Mutex::new(Instant::now()),
            hooks,
            tables: RwLock::new(None),
            fault_injection: fault::enabled_from_env(),
            read_only,
            host_errors: Mutex::new(HashMap::new()),
            plans: Arc::new(plans::SharedPlans::new()),
        });
        let plans = server.plans.clone();
        server.add_status_provider(Box::new(move |rows| plans.status(rows)));
        grant_tables::register(&server, &accounts);
        // `mysql.general_log` / `slow_log`: MySQL's columns, never a row (no table log
        // output); see shoal_exec::mysql_schema.
        for t in shoal_exec::mysql_schema::LOG_TABLES {
            let columns: Vec<String> = t.columns.iter().map(|c| c.name.to_string()).collect();
            server.add_virtual_table(
                "mysql",
                t.name,
                Arc::new(move || hooks::VirtualTable {
                    columns: columns.clone(),
                    rows: Vec::new(),
                }),
            );
        }
        let a = accounts.clone();
        server.add_status_provider(Box::new(move |rows| {
            let c = a.sha2_cache();
            rows.push((
                "Caching_sha2_password_fast_auths".into(),
                c.fast_auths().to_string(),
            ));
            rows.push((
                "Caching_sha2_password_full_auths".into(),
                c.full_auths().to_string(),
            ));
            rows.push((
                "Caching_sha2_password_cached_accounts".into(),
                c.len().to_string(),
            ));
        }));
        server
    }

    /// The option that refuses writes for a user (`is_super`: SUPER / CONNECTION_ADMIN):
    /// `--super-read-only` for everyone while `super_read_only` is on, `--read-only` for users
    /// without SUPER while `read_only` is on; `None` when writes are allowed.
    pub fn read_only_for(&self, is_super: bool) -> Option<&'static str> {
        match self.read_only.load(Ordering::Acquire) {
            READ_ONLY_SUPER => Some("--super-read-only"),
            READ_ONLY_ON if !is_super => Some("--read-only"),
            _ => None,
        }
    }

    /// `max_connect_errors`: whether the client at `host` (`ip:port` as accepted) is blocked,
    /// with the error to send it instead of the greeting (1129). See `host_cache_key`.
    pub fn host_blocked(&self, host: &str) -> Option<shoal_proto::ErrorInfo> {
        let ip = host_cache_key(host, self.fault_injection)?;
        let max = self.uint("max_connect_errors");
        let errors = self
            .host_errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(ip)
            .copied()
            .unwrap_or(0);
        (errors >= max).then(|| {
            shoal_proto::ErrorInfo::coded(shoal_errors::ER_HOST_IS_BLOCKED, format!("Host '{ip}' is blocked because of many connection errors; unblock with 'mysqladmin flush-hosts'"),
            )
        })
    }

    /// A connection attempt from `host` ended before its handshake completed (the client went
    /// away, timed out, or sent garbage): one more consecutive error for its address. Failed
    /// logins (wrong password, unknown database, too many connections) do not count, as in
    /// MySQL.
    pub fn note_connect_error(&self, host: &str) {
        if let Some(ip) = host_cache_key(host, self.fault_injection) {
            let mut h = self
                .host_errors
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // Bounded like MySQL's host cache: a new address past the bound replaces the one
            // with the fewest errors.
            if h.len() >= HOST_CACHE_MAX && !h.contains_key(ip) {
                if let Some(k) = h.iter().min_by_key(|(_, n)| **n).map(|(k, _)| k.clone()) {
                    h.remove(&k);
                }
            }
            *h.entry(ip.to_string()).or_insert(0) += 1;
        }
    }

    /// A login from `host` succeeded: its address's error count starts over.
    pub fn note_login(&self, host: &str) {
        if let Some(ip) = host_cache_key(host, self.fault_injection) {
            let mut h = self
                .host_errors
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if !h.is_empty() {
                h.remove(ip);
            }
        }
    }

    /// `FLUSH HOSTS`: forgets every address's errors (unblocks all hosts).
    pub fn flush_hosts(&self) {
        self.host_errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Admits a login of `user`@`account_host` on the connection `entry` if the account has
    /// fewer than `limit` connections (0 = no limit), and records the account in `entry`: the
    /// count and the record happen under the process-list lock, so concurrent logins cannot
    /// both take the last slot.
    pub(crate) fn admit_user(
        &self,
        entry: &ProcessEntry,
        user: &str,
        account_host: &str,
        limit: u64,
    ) -> bool {
        let p = self
            .processes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if limit > 0 {
            let count = p
                .values()
                .filter(|e| e.id != entry.id)
                .filter(|e| {
                    let i = e.info.lock().unwrap_or_else(PoisonError::into_inner);
                    i.user == user && i.account_host.as_deref() == Some(account_host)
                })
                .count() as u64;
            if count >= limit {
                return false;
            }
        }
        let mut info = entry.info.lock().unwrap_or_else(PoisonError::into_inner);
        info.user = user.to_string();
        info.account_host = Some(account_host.to_string());
        true
    }

    /// Applies a startup option (a system variable or a server option such as `root-password`).
    pub fn set_startup_option(&self, name: &str, value: &str) -> Result<(), String> {
        let n = name.trim().to_ascii_lowercase().replace('-', "_");
        match n.as_str() {
            "root_password" => {
                self.accounts.set_root_password(value);
                Ok(())
            }
            "initialize_insecure" => {
                let on = match value.to_ascii_uppercase().as_str() {
                    "ON" | "1" | "TRUE" | "" => true,
                    "OFF" | "0" | "FALSE" => false,
                    _ => {
                        return Err(format!(
                            "option '--initialize-insecure={value}': not a boolean"
                        ))
                    }
                };
                self.accounts.set_initialize_insecure(on);
                Ok(())
            }
            "default_authentication_plugin" => {
                let plugin = shoal_proto::AuthPlugin::from_name(value.trim()).ok_or_else(|| {
                    format!(
                        "option '--default-authentication-plugin={value}': supported plugins are \
                         mysql_native_password and caching_sha2_password"
                    )
                })?;
                self.accounts.set_default_plugin(plugin);
                self.vars
                    .set_startup(&n, plugin.name())
                    .map_err(|e| format!("{e} (option '--default-authentication-plugin')"))
            }
            _ => self
                .vars
                .set_startup(&n, value)
                .map_err(|e| format!("{e} (option '--{}={value}')", n.replace('_', "-"))),
        }
    }

    /// Checks option combinations after all startup options were applied.
    pub fn finish_startup(&self) -> Result<(), String> {
        let port = self.port();
        let admin = self.admin_port();
        if admin != 0 && admin == port {
            return Err(format!(
                "admin_port ({admin}) must differ from port ({port})"
            ));
        }
        let extra = self.vars.get("extra_port").as_u64() as u16;
        if extra != 0 && (extra == port || extra == admin) {
            return Err(format!(
                "extra_port ({extra}) must differ from port and admin_port"
            ));
        }
        Ok(())
    }

    fn uint(&self, name: &str) -> u64 {
        self.vars.get(name).as_u64()
    }

    fn string(&self, name: &str) -> String {
        self.vars.get(name).as_string()
    }

    /// `port`.
    pub fn port(&self) -> u16 {
        self.uint("port") as u16
    }
    /// `bind_address`.
    pub fn bind_address(&self) -> String {
        self.string("bind_address")
    }
    /// `socket` (Unix socket path; empty = none).
    pub fn socket(&self) -> String {
        self.string("socket")
    }
    /// `admin_port` (0 = disabled).
    pub fn admin_port(&self) -> u16 {
        self.uint("admin_port") as u16
    }
    /// `extra_port` (MariaDB's name for an extra one-thread-per-connection port; 0 = disabled).
    pub fn extra_port(&self) -> u16 {
        self.uint("extra_port") as u16
    }
    /// `max_connections`.
    pub fn max_connections(&self) -> u32 {
        self.uint("max_connections") as u32
    }
    /// `thread_handling` (`one-thread-per-connection` or `pool-of-threads`).
    pub fn thread_handling(&self) -> String {
        self.string("thread_handling")
    }
    /// `thread_stack`: the stack size of every connection thread (one-thread-per-connection,
    /// admin and extra ports) and pool worker, in bytes (at least [`vars::MIN_THREAD_STACK`]).
    pub fn thread_stack(&self) -> usize {
        self.uint("thread_stack").max(vars::MIN_THREAD_STACK) as usize
    }
    /// `thread_cache_size`.
    pub fn thread_cache_size(&self) -> u32 {
        self.uint("thread_cache_size") as u32
    }
    /// Global `connect_timeout`.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs(self.uint("connect_timeout"))
    }
    /// Global `wait_timeout`.
    pub fn wait_timeout(&self) -> Duration {
        Duration::from_secs(self.uint("wait_timeout"))
    }
    /// Global `interactive_timeout`.
    pub fn interactive_timeout(&self) -> Duration {
        Duration::from_secs(self.uint("interactive_timeout"))
    }
    /// Global `net_read_timeout`.
    pub fn net_read_timeout(&self) -> Duration {
        Duration::from_secs(self.uint("net_read_timeout"))
    }
    /// Global `net_write_timeout`.
    pub fn net_write_timeout(&self) -> Duration {
        Duration::from_secs(self.uint("net_write_timeout"))
    }
    /// Global `max_allowed_packet`.
    pub fn max_allowed_packet(&self) -> usize {
        self.uint("max_allowed_packet") as usize
    }
    /// `datadir`.
    pub fn datadir(&self) -> PathBuf {
        PathBuf::from(self.string("datadir"))
    }
    /// The version string for the greeting (`version`).
    pub fn version(&self) -> String {
        self.string("version")
    }
    /// Time since the server state was created.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// Whether test-only fault injection is enabled (see [`fault`]).
    pub fn fault_injection(&self) -> bool {
        self.fault_injection
    }

    /// A fresh connection id (never 0).
    pub fn next_connection_id(&self) -> u32 {
        loop {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            if id != 0 {
                return id;
            }
        }
    }

    /// Network-layer counters.
    pub fn status(&self) -> &NetStatus {
        &self.net
    }

    /// Number of open sessions (`Threads_connected`).
    pub fn connection_count(&self) -> u32 {
        self.processes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len() as u32
    }

    /// Registers a connection in the process list and returns its session.
    ///
    /// # Panics
    ///
    /// Without a table engine ([`Server::set_table_engine`]): a session runs its statements
    /// there, and the server plugs it in before it accepts connections, so this is a bug of the
    /// caller, never a client's doing.
    pub fn open_session(
        self: &Arc<Self>,
        id: u32,
        host: String,
        control: Arc<dyn ConnectionControl>,
    ) -> Session {
        let engine = self
            .table_engine()
            .expect("Server::set_table_engine runs before sessions open");
        let entry = Arc::new(ProcessEntry {
            id,
            host,
            info: Mutex::new(ProcessInfo {
                user: "unauthenticated user".into(),
                account_host: None,
                db: None,
                command: "Connect",
                since: Instant::now(),
                state: "login",
                text: None,
            }),
            kill: AtomicU8::new(KILL_NONE),
            running: AtomicBool::new(false),
            control,
            table_kill: Mutex::new(None),
        });
        let n = {
            let mut p = self
                .processes
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            p.insert(id, entry.clone());
            p.len() as u64
        };
        self.counters
            .max_used_connections
            .fetch_max(n, Ordering::Relaxed);
        Session::new(self.clone(), entry, engine)
    }

    pub(crate) fn unregister(&self, id: u32) {
        self.processes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
    }

    /// The process-list entry of connection `id`.
    pub fn process(&self, id: u32) -> Option<Arc<ProcessEntry>> {
        self.processes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
            .cloned()
    }

    /// Snapshot of the process list, ordered by id.
    pub fn processes(&self) -> Vec<Arc<ProcessEntry>> {
        let mut v: Vec<Arc<ProcessEntry>> = self
            .processes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        v.sort_by_key(|p| p.id);
        v
    }

    /// The connections as PROCESSLIST shows them (SHOW PROCESSLIST and
    /// `information_schema.PROCESSLIST`), by id; `only_user`: just that user's (an account
    /// without PROCESS). The state is the session's own, followed by what the pool's
    /// process-state hook says (`queued (high)`, ...).
    pub fn process_rows(&self, only_user: Option<&str>) -> Vec<shoal_exec::infoschema::ProcessRow> {
        let extra_states = self.hooks().process_states();
        self.processes()
            .into_iter()
            .filter_map(|p| {
                let i = p.info().clone();
                if only_user.is_some_and(|u| u != i.user) {
                    return None;
                }
                let command = if p.connection_killed() {
                    "Killed"
                } else {
                    i.command
                };
                Some(shoal_exec::infoschema::ProcessRow {
                    id: u64::from(p.id),
                    user: i.user,
                    host: p.host.clone(),
                    db: i.db,
                    command: command.to_string(),
                    time_ms: i.since.elapsed().as_millis().min(u128::from(u64::MAX)) as u64,
                    state: match extra_states.get(&p.id) {
                        Some(x) if i.state.is_empty() => x.clone(),
                        Some(x) => format!("{} ({x})", i.state),
                        None => i.state.to_string(),
                    },
                    info: i.text.map(|t| t.to_string()),
                })
            })
            .collect()
    }

    /// KILL \[QUERY\] `id`, issued by `by_user` (`is_super` may kill anyone's).
    pub fn kill(
        &self,
        id: u32,
        query_only: bool,
        by_user: &str,
        is_super: bool,
    ) -> Result<(), shoal_proto::ErrorInfo> {
        let entry = self.process(id).ok_or_else(|| {
            shoal_proto::ErrorInfo::coded(
                shoal_errors::ER_NO_SUCH_THREAD,
                format!("Unknown thread id: {id}"),
            )
        })?;
        if !is_super && entry.info().user != by_user {
            return Err(shoal_proto::ErrorInfo::coded(
                shoal_errors::ER_KILL_DENIED_ERROR,
                format!("You are not owner of thread {id}"),
            ));
        }
        if query_only {
            if entry.running.load(Ordering::Acquire) {
                let _ = entry.kill.compare_exchange(
                    KILL_NONE,
                    KILL_QUERY,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }
        } else {
            entry.kill.store(KILL_CONNECTION, Ordering::Release);
            entry.control.shutdown();
        }
        if entry.running.load(Ordering::Acquire) || !query_only {
            if let Some(k) = entry
                .table_kill
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
            {
                k.kill();
            }
        }
        Ok(())
    }

    /// Plugs in the table engine, before any session opens: every session runs its queries,
    /// table statements and transactions in a [`shoal_exec::TableSession`] of it, and its
    /// catalog holds the databases.
    ///
    /// The accounts are loaded from (or, on a fresh datadir, written to) the engine's store; a
    /// datadir whose account records cannot be read stops the server (panics) rather than
    /// start with the development root account.
    pub fn set_table_engine(&self, engine: Arc<shoal_exec::TableEngine>) {
        if let Err(e) = self.accounts.attach(engine.store().clone()) {
            panic!("cannot load the accounts of the datadir: {e}");
        }
        // The query engine reads the virtual tables (the pool's information_schema tables) too.
        if engine
            .set_system_tables(Arc::new(hooks::HookTables(self.hooks.clone())))
            .is_err()
        {
            // An engine plugged into a second server keeps the first one's tables.
            tracing::warn!("the table engine already reads another server's virtual tables");
        }
        *self.tables.write().unwrap_or_else(PoisonError::into_inner) = Some(engine);
    }

    /// The table engine, if one is plugged in.
    pub fn table_engine(&self) -> Option<Arc<shoal_exec::TableEngine>> {
        self.tables
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Registers a callback for changes of GLOBAL variables (thread pool, storage).
    pub fn subscribe_variables(&self, f: vars::Subscriber) {
        self.vars.subscribe(f);
    }

    /// Registers a provider of extra `SHOW STATUS` rows.
    pub fn add_status_provider(&self, p: status::StatusProvider) {
        self.counters.add_provider(p);
    }

    /// Finds the account for `user` connecting from `host` (most specific host pattern first:
    /// patterns without wildcards before those with).
    pub fn find_account(&self, user: &str, host: &str) -> Option<Account> {
        self.accounts.find(user, host)
    }

    /// The account store (accounts and privileges).
    pub fn accounts(&self) -> &accounts::Accounts {
        &self.accounts
    }

    /// CREATE USER; false if it exists already.
    pub fn create_account(&self, user: &str, host: &str, password: &str) -> bool {
        self.create_account_with(user, host, password, 0)
    }

    /// CREATE USER ... WITH MAX_USER_CONNECTIONS `max_user_connections` (0 = the global
    /// `max_user_connections` applies); false if it exists already or cannot be stored.
    pub fn create_account_with(
        &self,
        user: &str,
        host: &str,
        password: &str,
        max_user_connections: u64,
    ) -> bool {
        let auth = users::Auth::new(self.default_auth_plugin(), password);
        self.create_account_opts(user, host, auth, false, max_user_connections)
    }

    /// `default_authentication_plugin`.
    pub fn default_auth_plugin(&self) -> shoal_proto::AuthPlugin {
        shoal_proto::AuthPlugin::from_name(
            &self.vars.get("default_authentication_plugin").display(),
        )
        .unwrap_or_default()
    }

    /// CREATE USER with its options: `REQUIRE SSL` and `MAX_USER_CONNECTIONS`; false if it
    /// exists already or cannot be stored.
    pub fn create_account_opts(
        &self,
        user: &str,
        host: &str,
        auth: users::Auth,
        require_ssl: bool,
        max_user_connections: u64,
    ) -> bool {
        self.accounts
            .modify(|l| {
                if l.iter().any(|a| a.is(user, host)) {
                    return Ok(false);
                }
                let mut a = Account::new(user, host, auth);
                a.max_user_connections = max_user_connections;
                a.require_ssl = require_ssl;
                l.push(a);
                Ok(true)
            })
            .unwrap_or(false)
    }

    /// DROP USER; false if it did not exist.
    pub fn drop_account(&self, user: &str, host: &str) -> bool {
        self.accounts
            .modify(|l| {
                let before = l.len();
                l.retain(|a| !a.is(user, host));
                Ok(l.len() != before)
            })
            .unwrap_or(false)
    }

    /// All `SHOW GLOBAL STATUS` rows, sorted by name (session rows are layered on top by the
    /// session).
    pub fn global_status(&self) -> Vec<(String, String)> {
        let r = Ordering::Relaxed;
        let c = &self.counters;
        let n = &self.net;
        let mut rows: Vec<(String, String)> = vec![
            ("Aborted_clients", n.aborted_clients.load(r)),
            ("Aborted_connects", n.aborted_connects.load(r)),
            ("Bytes_received", n.bytes_received.load(r)),
            ("Bytes_sent", n.bytes_sent.load(r)),
            ("Connections", n.connections.load(r)),
            (
                "Connection_errors_max_connections",
                n.connection_errors_max_connections.load(r),
            ),
            (
                "Connection_errors_host_blocked",
                n.connection_errors_host_blocked.load(r),
            ),
            ("Max_used_connections", c.max_used_connections.load(r)),
            // Bytes of rows the running statements hold (crates/exec/src/budget.rs).
            ("Memory_used", shoal_exec::budget::global_held()),
            ("Prepared_stmt_count", c.prepared_stmt_count.load(r)),
            ("Queries", c.queries.load(r)),
            ("Questions", c.questions.load(r)),
            ("Slow_queries", c.slow_queries.load(r)),
            ("Threads_cached", n.threads_cached.load(r)),
            ("Threads_connected", self.connection_count() as u64),
            ("Threads_created", n.threads_created.load(r)),
            ("Threads_running", c.threads_running.load(r)),
            ("Uptime", self.uptime().as_secs()),
            (
                "Uptime_since_flush_status",
                self.status_flushed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .elapsed()
                    .as_secs(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for (i, name) in status::COM_NAMES.iter().enumerate() {
            rows.push((format!("Com_{name}"), c.com[i].load(r).to_string()));
        }
        for k in shoal_wait::WaitKind::ALL {
            rows.push((
                format!("Shoal_waits_{}", k.name().to_ascii_lowercase()),
                shoal_wait::count(k).to_string(),
            ));
        }
        c.provided(&mut rows);
        rows.sort_by_key(|a| a.0.to_ascii_lowercase());
        rows
    }

    /// `FLUSH STATUS`: zeroes the cumulative counters (`Aborted_*`, `Bytes_*`,
    /// `Connection_errors_*`, `Questions`, `Queries`, `Slow_queries`, `Com_*`, `Shoal_waits_*`),
    /// sets `Max_used_connections` to the connections open now and restarts
    /// `Uptime_since_flush_status`. Gauges (`Threads_*`, `Prepared_stmt_count`) and the counters
    /// MySQL keeps as totals (`Connections`, `Threads_created`, `Uptime`) are left alone, and so
    /// are the providers' rows (`Threadpool_*` have `FLUSH THREAD_POOL_STATS`).
    pub fn flush_status(&self) {
        let r = Ordering::Relaxed;
        let n = &self.net;
        let c = &self.counters;
        for a in [
            &n.aborted_connects,
            &n.aborted_clients,
            &n.bytes_received,
            &n.bytes_sent,
            &n.connection_errors_max_connections,
            &n.connection_errors_host_blocked,
            &c.questions,
            &c.queries,
            &c.slow_queries,
        ]
        .into_iter()
        .chain(c.com.iter())
        {
            a.store(0, r);
        }
        shoal_wait::reset_counts();
        c.max_used_connections
            .store(u64::from(self.connection_count()), r);
        *self
            .status_flushed
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    /// Current global value of a variable as text (for other crates).
    pub fn variable(&self, name: &str) -> Option<String> {
        self.vars.global(name).ok().map(|v| v.display())
    }

    /// Current global value of a variable (for other crates).
    pub fn variable_value(&self, name: &str) -> Option<VarValue> {
        self.vars.global(name).ok()
    }
}
