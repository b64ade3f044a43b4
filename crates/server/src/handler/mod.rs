//! Connection handlers: who runs [`crate::client::Client::serve_one_command`] on which thread.
//!
//! `per_thread` implements `thread_handling=one-thread-per-connection` (with a thread cache).
//! `pool` implements `pool-of-threads` (crates/pool) by driving the same cycle with non-blocking
//! reads and writes (`MSG_DONTWAIT`) on sockets that stay blocking. [`Dispatch`] is what the accept
//! loop calls; admin-port connections bypass it.

pub mod per_thread;
pub mod pool;

use std::sync::Arc;

use crate::client::Client;

/// Where the accept loop sends new (non-admin) connections: the configured `thread_handling`.
#[derive(Clone)]
pub enum Dispatch {
    /// `one-thread-per-connection`.
    PerThread(per_thread::PerThread),
    /// `pool-of-threads`.
    Pool(Arc<pool::PoolHandling>),
}

impl Dispatch {
    /// Hands an accepted connection to its handler.
    pub fn dispatch(&self, client: Client) {
        match self {
            Dispatch::PerThread(h) => h.dispatch(client),
            Dispatch::Pool(p) => p.dispatch(client),
        }
    }
}

impl From<per_thread::PerThread> for Dispatch {
    fn from(h: per_thread::PerThread) -> Dispatch {
        Dispatch::PerThread(h)
    }
}

impl From<Arc<pool::PoolHandling>> for Dispatch {
    fn from(p: Arc<pool::PoolHandling>) -> Dispatch {
        Dispatch::Pool(p)
    }
}
