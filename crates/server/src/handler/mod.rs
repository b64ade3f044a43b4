//! Connection handlers: who runs [`crate::client::Client::serve_one_command`] on which thread.
//!
//! `per_thread` implements `thread_handling=one-thread-per-connection` (with a thread cache).
//! The thread pool (`pool-of-threads`, crates/pool) plugs in next to it by driving the same
//! cycle on non-blocking sockets.

pub mod per_thread;
