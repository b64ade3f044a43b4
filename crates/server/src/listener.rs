//! Listening sockets: TCP (`bind_address`:`port`), the Unix socket (`socket`) and the optional
//! administrative TCP ports (`admin_port`, `extra_port`), with one accept loop polling all of
//! them.
//!
//! Every listener is created with `socket2` so that its listen queue is `back_log` long (std's
//! `TcpListener::bind` always asks for 128); the kernel caps it at `net.core.somaxconn`.
//!
//! The accept loop uses `poll(2)` with a short timeout so it notices shutdown promptly. A stale
//! Unix socket file (nobody accepting on it) is removed before binding; a live one is an error
//! (another server is running). The socket file is removed again at shutdown.
//!
//! # When `accept` fails
//!
//! Out of file descriptors (EMFILE, ENFILE) or kernel memory, `accept` fails while the
//! connection stays queued, so the listener stays readable and an accept loop that simply
//! polled again would spin at 100 % of a core. Instead a listener whose `accept` fails is left
//! out of the poll for a back-off that doubles from [`BACKOFF_MIN`] to [`BACKOFF_MAX`] (reset by
//! the next successful accept); the other listeners are polled meanwhile, and the queued clients
//! wait in the listen queue until descriptors are free again. The failure is logged at most
//! once a second per listener, with the number of failures since the last message. A
//! connection also needs a second descriptor (the handle KILL and shutdown use,
//! [`Client::accept_with_handle`]); a connection that cannot have it is closed and counted as a failure.
//!
//! So that an administrator can still get in when the server is out of descriptors, a few
//! descriptors ([`ADMIN_RESERVE`], opened on `/dev/null`) are held back while an admin port is
//! configured: when an admin port's `accept` fails for lack of descriptors they are given up
//! and the accept is retried, and they are taken back as soon as descriptors are free.

use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use shoal_session::Server;
use socket2::{Domain, SockAddr, Socket, Type};

use crate::client::{Client, Stream};
use crate::handler::per_thread::serve;
use crate::handler::Dispatch;

/// First back-off after a failed `accept`.
pub const BACKOFF_MIN: Duration = Duration::from_millis(5);
/// Longest back-off: how late, at worst, queued clients are noticed once descriptors are free.
pub const BACKOFF_MAX: Duration = Duration::from_millis(100);
/// Descriptors held back for the admin ports: two per admin connection (its socket and the
/// handle KILL uses), for two connections.
pub const ADMIN_RESERVE: usize = 4;

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

fn bind_tcp(addr: &str, port: u16, backlog: i32) -> Result<TcpListener, ListenError> {
    let a = if addr.contains(':') && !addr.starts_with('[') {
        format!("[{addr}]:{port}")
    } else {
        format!("{addr}:{port}")
    };
    let mut last = io::Error::new(io::ErrorKind::InvalidInput, "no address to bind");
    let addrs = a.to_socket_addrs().map_err(|source| ListenError::Tcp {
        addr: a.clone(),
        source,
    })?;
    // Like `TcpListener::bind`: the first address that binds.
    for sa in addrs {
        match listen_tcp(sa, backlog) {
            Ok(l) => return Ok(l),
            Err(e) => last = e,
        }
    }
    Err(ListenError::Tcp {
        addr: a,
        source: last,
    })
}

/// What `TcpListener::bind` does (`SO_REUSEADDR`, bind, listen), with our listen queue length.
fn listen_tcp(sa: SocketAddr, backlog: i32) -> io::Result<TcpListener> {
    let s = Socket::new(Domain::for_address(sa), Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    s.bind(&sa.into())?;
    s.listen(backlog)?;
    Ok(s.into())
}

fn listen_unix(path: &std::path::Path, backlog: i32) -> io::Result<UnixListener> {
    let s = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    s.bind(&SockAddr::unix(path)?)?;
    s.listen(backlog)?;
    Ok(UnixListener::from(OwnedFd::from(s)))
}

impl Listeners {
    /// Binds everything the configuration asks for.
    pub fn bind(server: &Server) -> Result<Listeners, ListenError> {
        let addr = server.bind_address();
        // `back_log` is 1..=65535; the kernel silently caps it at `net.core.somaxconn`.
        let backlog = server
            .vars
            .get("back_log")
            .as_u64()
            .clamp(1, i32::MAX as u64) as i32;
        let tcp = bind_tcp(&addr, server.port(), backlog)?;
        let mut admin = Vec::new();
        // admin_port (MySQL; on admin_address, 127.0.0.1 by default) and extra_port (MariaDB;
        // on bind_address) are both served outside any pool, one thread per connection, exempt
        // from max_connections, for SUPER / CONNECTION_ADMIN accounts only, at most
        // extra_max_connections at once (checked at login).
        let admin_addr = server.vars.get("admin_address").display();
        for (a, p) in [
            (admin_addr, server.admin_port()),
            (addr.clone(), server.extra_port()),
        ] {
            if p != 0 {
                admin.push(bind_tcp(&a, p, backlog)?);
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
            let l = listen_unix(&p, backlog).map_err(|e| ListenError::Unix {
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
        // Poll slots: 0 = TCP, then the Unix socket if any, then the admin ports.
        let mut ports: Vec<Port> = vec![Port::new(Kind::Tcp, self.tcp.as_raw_fd(), server.port())];
        if let Some((u, _)) = &self.unix {
            ports.push(Port::new(Kind::Unix, u.as_raw_fd(), 0));
        }
        for (i, a) in self.admin.iter().enumerate() {
            let port = a.local_addr().map(|x| x.port()).unwrap_or(0);
            ports.push(Port::new(Kind::Admin(i), a.as_raw_fd(), port));
        }
        let mut fds: Vec<libc::pollfd> = ports
            .iter()
            .map(|p| libc::pollfd {
                fd: p.fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let mut reserve = Reserve::new(if self.admin.is_empty() {
            0
        } else {
            ADMIN_RESERVE
        });
        while !shutdown.load(Ordering::Acquire) {
            reserve.fill();
            let now = Instant::now();
            let mut timeout = Duration::from_millis(100);
            for (f, p) in fds.iter_mut().zip(&ports) {
                f.revents = 0;
                // A negative fd is skipped by poll(2): a listener backing off is not watched.
                f.fd = match p.paused_until {
                    Some(t) if t > now => {
                        timeout = timeout.min(t - now);
                        -1
                    }
                    _ => p.fd,
                };
            }
            let ms = timeout.as_millis().clamp(1, 100) as libc::c_int;
            // SAFETY: `fds` is a valid array of pollfd for the duration of the call.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if n <= 0 {
                continue;
            }
            // Only listeners with a connection waiting: out of descriptors, `accept` fails even
            // on an empty queue (the descriptor is allocated first), and an admin port would
            // give up its reserve for nobody.
            for (p, f) in ports.iter_mut().zip(&fds) {
                if f.revents == 0 {
                    continue;
                }
                p.paused_until = None;
                loop {
                    match self.accept_client(p.kind, &server, &mut reserve) {
                        // Refused before the greeting (a blocked host).
                        Ok(None) => p.backoff = Duration::ZERO,
                        Ok(Some(c)) => {
                            p.backoff = Duration::ZERO;
                            if p.kind.is_admin() {
                                server
                                    .status()
                                    .threads_created
                                    .fetch_add(1, Ordering::Relaxed);
                                let srv = server.clone();
                                let sd = shutdown.clone();
                                let _ = std::thread::Builder::new()
                                    .name("shoal-admin".into())
                                    .stack_size(server.thread_stack())
                                    .spawn(move || serve(c, &srv, &sd));
                            } else {
                                handler.dispatch(c);
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        // The client gave up while queued, or a signal: the next one.
                        Err(e)
                            if matches!(
                                e.kind(),
                                io::ErrorKind::ConnectionAborted | io::ErrorKind::Interrupted
                            ) => {}
                        Err(e) => {
                            p.failed(e, Instant::now());
                            break;
                        }
                    }
                }
            }
        }
        if let Some((_, p)) = &self.unix {
            let _ = std::fs::remove_file(p);
        }
    }

    /// Accepts one connection on the listener of `kind` and gets the second handle on its
    /// socket ([`Client::accept_with_handle`]). Out of descriptors on an admin port, the
    /// reserve is given up for it (see the module docs).
    fn accept_client(
        &self,
        kind: Kind,
        server: &Arc<Server>,
        reserve: &mut Reserve,
    ) -> io::Result<Option<Client>> {
        let admin = kind.is_admin();
        let (stream, host) = match self.accept(kind) {
            Err(e) if admin && out_of_fds(&e) && reserve.release() => self.accept(kind)?,
            r => r?,
        };
        // max_connect_errors: a blocked host gets 1129 instead of the greeting.
        if let Some(e) = server.host_blocked(&host) {
            server
                .status()
                .connection_errors_host_blocked
                .fetch_add(1, Ordering::Relaxed);
            crate::client::refuse_before_greeting(server, stream, &e);
            return Ok(None);
        }
        let handle = match stream.try_clone() {
            Err(e) if admin && out_of_fds(&e) && reserve.release() => stream.try_clone()?,
            // Dropping `stream` closes the connection: the client sees it closed at once.
            r => r?,
        };
        Ok(Some(Client::accept_with_handle(
            server, stream, handle, host, admin,
        )))
    }

    /// One non-blocking `accept` on the listener of `kind`: the socket, switched to blocking, and
    /// the client's host as the process list shows it.
    fn accept(&self, kind: Kind) -> io::Result<(Stream, String)> {
        match kind {
            Kind::Tcp | Kind::Admin(_) => {
                let l = match kind {
                    Kind::Admin(i) => &self.admin[i],
                    _ => &self.tcp,
                };
                let (s, peer) = l.accept()?;
                let _ = s.set_nonblocking(false);
                let _ = s.set_nodelay(true);
                Ok((Stream::Tcp(s), peer.to_string()))
            }
            Kind::Unix => {
                let Some((u, _)) = &self.unix else {
                    return Err(io::ErrorKind::WouldBlock.into());
                };
                let (s, _) = u.accept()?;
                let _ = s.set_nonblocking(false);
                Ok((Stream::Unix(s), "localhost".into()))
            }
        }
    }
}

/// Which listener a poll slot is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tcp,
    Unix,
    /// Index into `Listeners::admin`.
    Admin(usize),
}

impl Kind {
    fn is_admin(self) -> bool {
        matches!(self, Kind::Admin(_))
    }
}

/// Accept-loop state of one listener: its back-off and its rate-limited error log.
struct Port {
    kind: Kind,
    fd: RawFd,
    /// TCP port, for the log (0 for the Unix socket).
    port: u16,
    /// The last back-off (zero after a successful accept).
    backoff: Duration,
    /// Not polled before this.
    paused_until: Option<Instant>,
    /// When the last failure was logged.
    logged: Option<Instant>,
    /// Failures since then.
    unlogged: u64,
}

impl Port {
    fn new(kind: Kind, fd: RawFd, port: u16) -> Port {
        Port {
            kind,
            fd,
            port,
            backoff: Duration::ZERO,
            paused_until: None,
            logged: None,
            unlogged: 0,
        }
    }

    /// A failed accept: back off, and log (at most once a second, with the count).
    fn failed(&mut self, e: io::Error, now: Instant) {
        self.backoff = (self.backoff * 2).clamp(BACKOFF_MIN, BACKOFF_MAX);
        self.paused_until = Some(now + self.backoff);
        self.unlogged += 1;
        if self
            .logged
            .is_some_and(|t| now.duration_since(t) < Duration::from_secs(1))
        {
            return;
        }
        let what = match self.kind {
            Kind::Tcp => format!("port {}", self.port),
            Kind::Unix => "the Unix socket".to_string(),
            Kind::Admin(_) => format!("admin port {}", self.port),
        };
        let hint = if out_of_fds(&e) {
            " (raise the open files limit, see open_files_limit, or lower max_connections)"
        } else {
            ""
        };
        tracing::error!(
            "accept() on {what} failed: {e}{hint}; {} failure(s) since the last such message, \
             retrying in {:?}; waiting clients stay queued",
            self.unlogged,
            self.backoff
        );
        self.logged = Some(now);
        self.unlogged = 0;
    }
}

/// Whether `e` means the process or the system is out of file descriptors.
fn out_of_fds(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// Descriptors held back for the admin ports (see the module docs).
struct Reserve {
    fds: Vec<std::fs::File>,
    want: usize,
}

impl Reserve {
    fn new(want: usize) -> Reserve {
        let mut r = Reserve {
            fds: Vec::new(),
            want,
        };
        r.fill();
        r
    }

    /// Takes descriptors back while fewer than `want` are held (one failed `open` when none
    /// are free).
    fn fill(&mut self) {
        while self.fds.len() < self.want {
            match std::fs::File::open("/dev/null") {
                Ok(f) => self.fds.push(f),
                Err(_) => return,
            }
        }
    }

    /// Gives the held descriptors up; `false` if there were none.
    fn release(&mut self) -> bool {
        let had = !self.fds.is_empty();
        self.fds.clear();
        had
    }
}
