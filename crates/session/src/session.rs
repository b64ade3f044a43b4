//! One connection's session: the `Backend` the protocol calls.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shoal_proto::{
    Backend, Column, ErrorInfo, LoginRequest, PrepareOk, Response, SessionStatus,
};

use crate::vars::SessionVars;
use crate::{ProcessEntry, Server};

/// Per-connection state.
pub struct Session {
    server: Arc<Server>,
    entry: Arc<ProcessEntry>,
    vars: SessionVars,
    /// Authenticated user name.
    user: String,
    /// Whether the login set CLIENT_INTERACTIVE.
    interactive: bool,
    /// Whether a transaction is open.
    in_transaction: bool,
    /// Whether `disconnect` already ran.
    closed: bool,
}

impl Session {
    pub(crate) fn new(server: Arc<Server>, entry: Arc<ProcessEntry>) -> Session {
        let vars = server.vars.session_copy();
        Session {
            server,
            entry,
            vars,
            user: String::new(),
            interactive: false,
            in_transaction: false,
            closed: false,
        }
    }

    /// Connection id.
    pub fn id(&self) -> u32 {
        self.entry.id
    }

    /// How long the connection may stay idle: `wait_timeout`, or `interactive_timeout` for an
    /// interactive client.
    pub fn idle_timeout(&self) -> Duration {
        let name = if self.interactive {
            "interactive_timeout"
        } else {
            "wait_timeout"
        };
        Duration::from_secs(
            self.vars
                .get(&self.server.vars, name)
                .map(|v| v.as_u64())
                .unwrap_or(28800),
        )
    }

    /// Whether the connection was killed (KILL CONNECTION): the network layer closes it.
    pub fn killed(&self) -> bool {
        self.entry.connection_killed()
    }
}

impl Backend for Session {
    fn authenticate(&mut self, login: &LoginRequest<'_>) -> Result<(), ErrorInfo> {
        let _ = login;
        Err(ErrorInfo::new(1235, "42000", "not yet"))
    }
    fn query(&mut self, _sql: &str, _multi: bool) -> Vec<Result<Response, ErrorInfo>> {
        vec![Err(ErrorInfo::new(1235, "42000", "not yet"))]
    }
    fn init_db(&mut self, _database: &str) -> Result<(), ErrorInfo> {
        Err(ErrorInfo::new(1235, "42000", "not yet"))
    }
    fn field_list(&mut self, _table: &str, _wildcard: &str) -> Result<Vec<Column>, ErrorInfo> {
        Err(ErrorInfo::new(1235, "42000", "not yet"))
    }
    fn statistics(&mut self) -> String {
        String::new()
    }
    fn kill(&mut self, id: u32) -> Result<(), ErrorInfo> {
        self.server.kill(id, false, &self.user, true)
    }
    fn reset_connection(&mut self) {}
    fn prepare(&mut self, _stmt_id: u32, _sql: &str) -> Result<PrepareOk, ErrorInfo> {
        Err(ErrorInfo::new(1235, "42000", "not yet"))
    }
    fn execute(&mut self, _stmt_id: u32, _params: &[shoal_proto::Value]) -> Result<Response, ErrorInfo> {
        Err(ErrorInfo::new(1235, "42000", "not yet"))
    }
    fn close_statement(&mut self, _stmt_id: u32) {}
    fn command_begin(&mut self, _command: u8) {
        let _ = Instant::now();
        self.entry.running.store(true, Ordering::Release);
    }
    fn command_end(&mut self) {
        self.entry.running.store(false, Ordering::Release);
    }
    fn status(&self) -> SessionStatus {
        SessionStatus {
            in_transaction: self.in_transaction,
            autocommit: true,
        }
    }
    fn max_allowed_packet(&self) -> usize {
        self.server.max_allowed_packet()
    }
    fn disconnect(&mut self) {
        if !self.closed {
            self.closed = true;
            self.server.unregister(self.entry.id);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.disconnect();
    }
}
