//! Listening sockets: TCP (`bind_address`:`port`), the Unix socket (`socket`) and the optional
//! administrative TCP ports (`admin_port`, `extra_port`), with one accept loop polling all of
//! them.
//!
//! The accept loop uses `poll(2)` with a short timeout so it notices shutdown promptly. A stale
//! Unix socket file (nobody accepting on it) is removed before binding; a live one is an error
//! (another server is running). The socket file is removed again at shutdown.

use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use shoal_session::Server;

use crate::client::{Client, Stream};
use crate::handler::per_thread::serve;
use crate::handler::Dispatch;

/// Bind failures (startup stops with the message).
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// TCP bind failed.
    #[error("can't bind TCP {addr}: {source} (is another server running on that port?)")]
    Tcp {
        /// Address.
        addr: String,
        /// Cause.
        source: std::io::Error,
    },
    /// Unix socket bind failed.
    #[error("can't bind Unix socket '{path}': {reason}")]
    Unix {
        /// Path.
        path: String,
        /// Cause.
        reason: String,
    },
}

/// The bound listeners.
pub struct Listeners {
    tcp: TcpListener,
    unix: Option<(UnixListener, PathBuf)>,
    admin: Vec<TcpListener>,
}

fn bind_tcp(addr: &str, port: u16) -> Result<TcpListener, ListenError> {
    let a = if addr.contains(':') && !addr.starts_with('[') {
        format!("[{addr}]:{port}")
    } else {
        format!("{addr}:{port}")
    };
    TcpListener::bind(&a).map_err(|source| ListenError::Tcp { addr: a, source })
}

impl Listeners {
    /// Binds everything the configuration asks for.
    pub fn bind(server: &Server) -> Result<Listeners, ListenError> {
        let addr = server.bind_address();
        let tcp = bind_tcp(&addr, server.port())?;
        let mut admin = Vec::new();
        // admin_port (MySQL) and extra_port (MariaDB) are both served outside any pool, one
        // thread per connection, exempt from max_connections.
        for p in [server.admin_port(), server.extra_port()] {
            if p != 0 {
                admin.push(bind_tcp(&addr, p)?);
            }
        }
        let path = server.socket();
        let unix = if path.is_empty() {
            None
        } else {
            let p = PathBuf::from(&path);
            if p.exists() {
                if std::os::unix::net::UnixStream::connect(&p).is_ok() {
                    return Err(ListenError::Unix {
                        path,
                        reason: "another server is accepting on it".into(),
                    });
                }
                std::fs::remove_file(&p).map_err(|e| ListenError::Unix {
                    path: path.clone(),
                    reason: format!("cannot remove stale socket file: {e}"),
                })?;
            }
            let l = UnixListener::bind(&p).map_err(|e| ListenError::Unix {
                path: path.clone(),
                reason: e.to_string(),
            })?;
            Some((l, p))
        };
        tcp.set_nonblocking(true).ok();
        for a in &admin {
            a.set_nonblocking(true).ok();
        }
        if let Some((u, _)) = &unix {
            u.set_nonblocking(true).ok();
        }
        Ok(Listeners { tcp, unix, admin })
    }

    /// Starts the accept loop; it returns (and removes the socket file) once `shutdown` is set.
    pub fn spawn_accept_loop(
        self,
        server: Arc<Server>,
        handler: impl Into<Dispatch>,
        shutdown: Arc<AtomicBool>,
    ) -> JoinHandle<()> {
        let handler = handler.into();
        std::thread::Builder::new()
            .name("shoal-accept".into())
            .spawn(move || self.accept_loop(server, handler, shutdown))
            .expect("spawn accept thread")
    }

    fn accept_loop(self, server: Arc<Server>, handler: Dispatch, shutdown: Arc<AtomicBool>) {
        let mut fds = vec![libc::pollfd {
            fd: self.tcp.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        if let Some((u, _)) = &self.unix {
            fds.push(libc::pollfd {
                fd: u.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        for a in &self.admin {
            fds.push(libc::pollfd {
                fd: a.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        while !shutdown.load(Ordering::Acquire) {
            for f in fds.iter_mut() {
                f.revents = 0;
            }
            // SAFETY: `fds` is a valid array of pollfd for the duration of the call.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 100) };
            if n <= 0 {
                continue;
            }
            // TCP
            while let Ok((s, peer)) = self.tcp.accept() {
                let _ = s.set_nonblocking(false);
                let _ = s.set_nodelay(true);
                let c = Client::accept(&server, Stream::Tcp(s), peer.to_string(), false);
                handler.dispatch(c);
            }
            if let Some((u, _)) = &self.unix {
                while let Ok((s, _)) = u.accept() {
                    let _ = s.set_nonblocking(false);
                    let c = Client::accept(&server, Stream::Unix(s), "localhost".into(), false);
                    handler.dispatch(c);
                }
            }
            for a in &self.admin {
                while let Ok((s, peer)) = a.accept() {
                    let _ = s.set_nonblocking(false);
                    let _ = s.set_nodelay(true);
                    let c = Client::accept(&server, Stream::Tcp(s), peer.to_string(), true);
                    server
                        .status()
                        .threads_created
                        .fetch_add(1, Ordering::Relaxed);
                    let srv = server.clone();
                    let sd = shutdown.clone();
                    let _ = std::thread::Builder::new()
                        .name("shoal-admin".into())
                        .spawn(move || serve(c, &srv, &sd));
                }
            }
        }
        if let Some((_, p)) = &self.unix {
            let _ = std::fs::remove_file(p);
        }
    }
}
