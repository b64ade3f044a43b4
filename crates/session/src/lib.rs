//! Sessions and server-wide state: the [`shoal_proto::Backend`] implementation.
//!
//! SEAM (fixed API, used by the network layer in `crates/server`):
//! - [`Server::new`] builds the server state from defaults.
//! - [`Server::set_startup_option`] applies one `name=value` from the command line or my.cnf
//!   (dashes and underscores interchangeable); unknown names or bad values are an `Err(message)`.
//! - typed getters used by the network layer (port, socket, max_connections, ...).
//! - [`Server::status`] exposes the counters the network layer maintains.
//! - [`Server::open_session`] creates the per-connection [`Session`] (a `Backend`).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

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
}

/// Server-wide state: variables, users, process list, status.
pub struct Server {
    net: NetStatus,
}

impl Server {
    /// Server state with compiled-in defaults.
    pub fn new() -> Arc<Server> {
        Arc::new(Server {
            net: NetStatus::default(),
        })
    }

    /// Applies a startup option (a system variable or a server option such as `root-password`).
    pub fn set_startup_option(&self, name: &str, value: &str) -> Result<(), String> {
        Err(format!("unknown variable '{name}={value}'"))
    }

    /// Network-layer counters.
    pub fn status(&self) -> &NetStatus {
        &self.net
    }
}
