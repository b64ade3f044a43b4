//! The network layer of the `shoal` server, as a library so that the binary, the thread pool
//! integration and tests share it.
//!
//! - [`options`]: mysqld-style command line and my.cnf parsing.
//! - [`client`]: one connection (socket + `Connection<Session>`) and its
//!   read → process one command → write cycle ([`client::Client::serve_one_command`]), usable on
//!   blocking sockets (one thread per connection) and with `MSG_DONTWAIT` reads and writes
//!   (the pool).
//! - [`handler`]: who runs that cycle; `per_thread` = one-thread-per-connection with a cache.
//! - [`listener`]: TCP, Unix socket and admin-port listeners and the accept loop.
//! - [`metrics`]: Prometheus text on an HTTP port, outside both connection handlers.
//! - [`restore`]: `--restore-from`, a `BACKUP TO` directory made into a datadir.
//! - [`rsa_keys`]: `caching_sha2_password`'s RSA key pair (given or generated).
//! - [`tls`]: TLS certificates (given or generated) and the per-connection TLS state.

pub mod client;
pub mod handler;
pub mod listener;
pub mod metrics;
pub mod options;
pub mod restore;
pub mod rsa_keys;
pub mod tls;
