//! One client connection: socket + protocol state + session, and the read/process/write cycle.
//!
//! # How it works
//!
//! [`Client`] bundles a [`Stream`] (TCP or Unix socket) with a `Connection<Session>` (all
//! protocol and session state). [`Client::serve_one_command`] runs the cycle for at most one
//! command:
//!
//! 1. flush pending reply bytes (a partial write leaves the rest buffered → [`Outcome::WantWrite`]);
//! 2. if a complete command is buffered, process it (the protocol calls into the session), then
//!    flush its reply and return [`Outcome::Continue`];
//! 3. otherwise read once from the socket and feed the bytes; `WouldBlock` on a non-blocking read
//!    (the pool's `MSG_DONTWAIT`) → [`Outcome::WantRead`]; a read timeout on a blocking socket →
//!    [`Outcome::TimedOut`]; EOF or an error → [`Outcome::Closed`].
//!
//! The same cycle serves both scheduling models. `one-thread-per-connection`
//! (`handler/per_thread.rs`) keeps the socket blocking with read/write timeouts and simply loops.
//! The thread pool reads and writes with `MSG_DONTWAIT` (the socket itself stays blocking, so that
//! [`Client::await_input`] can linger in `recv`), calls `serve_one_command` when epoll reports it
//! readable (or writable after `WantWrite`), and re-arms on `WantRead`. The connection never
//! depends on the thread that runs it.
//!
//! TLS: when the protocol answers a client's SSLRequest with `Progress::StartTls`, the client
//! puts a [`TlsLink`] between the socket and the protocol (see `crate::tls` for why every
//! decrypted byte moves into the protocol's buffer at once). Reads then pass through
//! [`TlsLink::absorb`] and writes through [`TlsLink::encrypt`]; the outcomes above are unchanged,
//! so both handlers serve TLS connections without knowing it.
//!
//! Accounting (`Bytes_received/sent`, `Aborted_clients`, `Aborted_connects`,
//! `Connection_errors_max_connections`) happens here, once, when the client finishes.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shoal_proto::{Admission, CloseReason, Connection, ErrorInfo, Progress, ProtoConfig};
use shoal_session::{ConnectionControl, Server, Session};

use crate::tls::{self, TlsLink};

/// A connected socket of either family.
#[derive(Debug)]
pub enum Stream {
    /// TCP.
    Tcp(TcpStream),
    /// Unix domain socket.
    Unix(UnixStream),
}

impl Stream {
    /// Another handle on the same socket (for KILL and shutdown).
    pub fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    /// Shuts both directions down; a blocked or future read returns EOF.
    pub fn shutdown(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }

    /// Sets the read timeout (`None` = block forever).
    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(d),
            Stream::Unix(s) => s.set_read_timeout(d),
        }
    }

    /// Sets the write timeout.
    pub fn set_write_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_write_timeout(d),
            Stream::Unix(s) => s.set_write_timeout(d),
        }
    }

    /// Switches non-blocking mode. The pool keeps sockets blocking and passes `MSG_DONTWAIT`
    /// ([`Client::set_dontwait`]); it makes one non-blocking only if that switch fails.
    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nonblocking(on),
            Stream::Unix(s) => s.set_nonblocking(on),
        }
    }

    /// `recv(2)` with `flags` (`MSG_DONTWAIT` for one non-blocking read of a blocking socket).
    fn recv(&self, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
        // SAFETY: `buf` is valid for `buf.len()` bytes; the fd is owned by `self`.
        let n = unsafe { libc::recv(self.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), flags) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    /// `send(2)` with `flags` (plus `MSG_NOSIGNAL`: a vanished peer is an error, not SIGPIPE).
    fn send(&self, buf: &[u8], flags: libc::c_int) -> io::Result<usize> {
        // SAFETY: `buf` is valid for `buf.len()` bytes; the fd is owned by `self`.
        let n = unsafe {
            libc::send(
                self.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                flags | libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

/// `io::Write` over [`Stream::send`] with fixed flags, for rustls's `write_tls`.
struct SendWith<'a> {
    stream: &'a Stream,
    flags: libc::c_int,
}

impl io::Write for SendWith<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.send(buf, self.flags)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The [`ConnectionControl`] given to the session: KILL and server shutdown shut the socket down.
pub struct SocketControl {
    stream: Option<Stream>,
    /// Set once shut down (so a graceful shutdown can tell who was interrupted).
    pub shut: AtomicBool,
    /// Extra action on shutdown (the thread pool routes KILL to `Pool::kill` through it).
    on_shutdown: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl SocketControl {
    /// A control for `stream` (a cloned handle is kept; without one, when no file descriptor
    /// is left for it, KILL and shutdown cannot interrupt a blocked read).
    pub fn new(stream: &Stream) -> SocketControl {
        SocketControl::with_handle(stream.try_clone().ok())
    }

    /// A control that shuts `handle` (another handle on the connection's socket) down.
    fn with_handle(handle: Option<Stream>) -> SocketControl {
        SocketControl {
            stream: handle,
            shut: AtomicBool::new(false),
            on_shutdown: std::sync::OnceLock::new(),
        }
    }

    /// Installs an action run (once per call) after the socket is shut down by KILL or server
    /// shutdown; only the first installed action is kept.
    pub fn set_on_shutdown(&self, f: Box<dyn Fn() + Send + Sync>) {
        let _ = self.on_shutdown.set(f);
    }
}

impl ConnectionControl for SocketControl {
    fn shutdown(&self) {
        self.shut.store(true, Ordering::Release);
        if let Some(s) = &self.stream {
            s.shutdown();
        }
        if let Some(f) = self.on_shutdown.get() {
            f();
        }
    }
}

/// Result of one [`Client::serve_one_command`] call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// One command (or login step) was processed and its reply fully written.
    Continue,
    /// Non-blocking read (the pool): nothing (complete) to process; wait until readable.
    WantRead,
    /// Non-blocking write (the pool): the reply is only partly written; wait until writable.
    WantWrite,
    /// Blocking socket: the read timed out (idle, connect or net_read timeout, see
    /// [`Client::read_timeout_now`]).
    TimedOut,
    /// The connection is finished; drop the client.
    Closed,
}

/// Which timeout applies to the next read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutKind {
    /// Before login completes: `connect_timeout`.
    Connect,
    /// Between commands: `wait_timeout` / `interactive_timeout`.
    Idle,
    /// Inside a partly received command: `net_read_timeout`.
    NetRead,
    /// A reply only partly written (the client does not read): `net_write_timeout`. Only the
    /// thread pool waits for writability with a deadline; one thread per connection blocks in
    /// `send` with `SO_SNDTIMEO` instead.
    NetWrite,
}

/// ER_CLIENT_INTERACTION_TIMEOUT, sent before closing an idle connection (MySQL 8).
pub fn interaction_timeout_error() -> ErrorInfo {
    ErrorInfo::coded(
        shoal_errors::ER_CLIENT_INTERACTION_TIMEOUT,
        "The client was disconnected by the server because of inactivity. See wait_timeout and \
         interactive_timeout for configuring this behavior.",
    )
}

/// ER_SERVER_SHUTDOWN.
pub fn shutdown_error() -> ErrorInfo {
    ErrorInfo::coded(
        shoal_errors::ER_SERVER_SHUTDOWN,
        "Server shutdown in progress",
    )
}

/// Refuses a connection before the greeting, as mysqld refuses a blocked host: one error
/// packet (sequence 0) in place of the handshake, then the socket is closed. Best effort: the
/// packet is small enough for an empty socket buffer, and a client that is already gone is
/// simply dropped.
pub fn refuse_before_greeting(server: &Server, mut stream: Stream, e: &ErrorInfo) {
    let st = server.status();
    st.connections.fetch_add(1, Ordering::Relaxed);
    st.aborted_connects.fetch_add(1, Ordering::Relaxed);
    // No `#SQLSTATE`: the client's capabilities are not known yet (mysqld sends the same
    // pre-4.1 form here).
    let mut body = vec![0xff];
    body.extend_from_slice(&e.code.to_le_bytes());
    body.extend_from_slice(e.message.as_bytes());
    let mut packet = Vec::with_capacity(body.len() + 4);
    packet.extend_from_slice(&(body.len() as u32).to_le_bytes()[..3]);
    packet.push(0);
    packet.extend_from_slice(&body);
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    if stream.write_all(&packet).is_ok() {
        st.bytes_sent
            .fetch_add(packet.len() as u64, Ordering::Relaxed);
    }
    stream.shutdown();
}

/// A receive buffer's first size; one that a read fills doubles, up to 1 MiB.
const RECV_BUF: usize = 16 * 1024;

/// What a thread lends the connection it is running a command for: a receive buffer and the
/// protocol's input, output and scratch buffers. With thousands of connections and a few
/// threads, a command then reads, parses and answers in memory the thread's previous command
/// left in the CPU's cache instead of in its own connection's cold buffers, and idle
/// connections hold no buffers (16 KiB of receive buffer each before). A buffer still holding
/// bytes (a partial message, a reply the socket did not take) stays with its connection.
#[derive(Default)]
struct Spare {
    /// The receive buffer (empty until a thread's first read gives it [`RECV_BUF`] bytes).
    recv: Vec<u8>,
    proto: shoal_proto::Buffers,
}

thread_local! {
    /// This thread's [`Spare`], `None` while lent (or before the thread's first command).
    static SPARE: std::cell::RefCell<Option<Spare>> = const { std::cell::RefCell::new(None) };
}

/// One client connection. See the module docs.
pub struct Client {
    server: Arc<Server>,
    stream: Stream,
    conn: Connection<Session>,
    control: Arc<SocketControl>,
    /// Refused by admission at accept time (counts in Connection_errors_max_connections; the
    /// session counts its own refusals).
    refusing: bool,
    /// The receive buffer: the running thread's while a command runs (see [`Spare`]), empty
    /// between commands.
    buf: Vec<u8>,
    /// Accounting done (exactly once).
    finished: bool,
    /// Set when the peer is gone (EOF, reset, write failure).
    peer_gone: bool,
    /// The client's address as accepted (`ip:port`, or `localhost` for the Unix socket).
    host: String,
    /// Thread-pool mode: the socket stays blocking (so [`Client::await_input`] can sleep in
    /// `recv` itself) and every other read and write passes `MSG_DONTWAIT`.
    dontwait: bool,
    /// The receive timeout last set on the socket for [`Client::await_input`].
    await_timeout: Option<Duration>,
    /// The last read filled the whole buffer: the socket may hold more (see
    /// [`Client::may_have_more_input`]).
    read_full: bool,
    /// TLS state once the client asked for it (boxed: most of its size is rustls buffers).
    tls: Option<Box<TlsLink>>,
    /// The TLS layer failed (bad record, failed handshake, or the client's close_notify):
    /// flush what rustls queued (an alert) and close.
    tls_ended: bool,
}

impl Client {
    /// Registers a new connection with the server, decides admission from the current
    /// connection count (`max_connections`, +1 reserved for root; `admin` connections are always
    /// admitted) and queues the greeting.
    pub fn accept(server: &Arc<Server>, stream: Stream, host: String, admin: bool) -> Client {
        let handle = stream.try_clone().ok();
        Client::accept_with(server, stream, handle, host, admin)
    }

    /// Like [`Client::accept`], with `handle`, a second handle on the socket (`try_clone`), for
    /// KILL and shutdown. Every connection costs these two file descriptors: the accept loop
    /// gets the handle itself and treats a failure like a failed `accept` (out of descriptors),
    /// rather than admit a connection that could not be interrupted.
    pub fn accept_with_handle(
        server: &Arc<Server>,
        stream: Stream,
        handle: Stream,
        host: String,
        admin: bool,
    ) -> Client {
        Client::accept_with(server, stream, Some(handle), host, admin)
    }

    fn accept_with(
        server: &Arc<Server>,
        stream: Stream,
        handle: Option<Stream>,
        host: String,
        admin: bool,
    ) -> Client {
        server.status().connections.fetch_add(1, Ordering::Relaxed);
        let count = server.connection_count();
        let max = server.max_connections();
        let too_many = ErrorInfo::coded(shoal_errors::ER_CON_COUNT_ERROR, "Too many connections");
        let admission = if admin {
            Admission::Open
        } else if count > max {
            Admission::Refuse(too_many)
        } else if count == max {
            Admission::RootOnly(too_many)
        } else {
            Admission::Open
        };
        let refusing = matches!(admission, Admission::Refuse(_));
        let id = server.next_connection_id();
        let control = Arc::new(SocketControl::with_handle(handle));
        let peer = host.clone();
        let mut session = server.open_session(id, host.clone(), control.clone());
        // Exempt from the session's own max_connections check.
        session.set_admin(admin);
        let conn = Connection::new(
            session,
            ProtoConfig {
                connection_id: id,
                server_version: server.version(),
                max_allowed_packet: server.max_allowed_packet(),
                host: host
                    .rsplit_once(':')
                    .map(|(h, _)| h.to_string())
                    .unwrap_or(host),
                admission,
                tls: tls::acceptor().is_some(),
                local_socket: matches!(stream, Stream::Unix(_)),
                default_auth_plugin: server.default_auth_plugin(),
                rsa: crate::rsa_keys::keys(),
            },
        );
        Client {
            server: server.clone(),
            stream,
            conn,
            control,
            refusing,
            host: peer,
            buf: Vec::new(),
            finished: false,
            peer_gone: false,
            dontwait: false,
            await_timeout: None,
            read_full: false,
            tls: None,
            tls_ended: false,
        }
    }

    /// Switches to thread-pool mode: the socket stays blocking, but every read and write of the
    /// command cycle is non-blocking (`MSG_DONTWAIT`), and [`Client::await_input`] is available.
    pub fn set_dontwait(&mut self) -> io::Result<()> {
        self.stream.set_nonblocking(false)?;
        self.dontwait = true;
        Ok(())
    }

    /// Waits up to `budget` for the next command's bytes by blocking in `recv` itself (with
    /// `SO_RCVTIMEO`), and keeps what arrives in the protocol buffer: the pool's lingering then
    /// costs the same one `recv` per command as a dedicated thread. `true` when bytes came, the
    /// peer hung up or the socket failed (the next [`Client::serve_one_command`] reports it);
    /// `false` on timeout. KILL and server shutdown end the wait by shutting the socket down.
    pub fn await_input(&mut self, budget: Duration) -> bool {
        self.with_spare(|c| c.await_input_here(budget))
    }

    fn await_input_here(&mut self, budget: Duration) -> bool {
        self.ensure_recv_buf();
        let budget = budget.max(Duration::from_micros(1));
        if self.await_timeout != Some(budget) {
            if self.stream.set_read_timeout(Some(budget)).is_err() {
                return false;
            }
            self.await_timeout = Some(budget);
        }
        match self.stream.recv(&mut self.buf, 0) {
            Ok(0) => true,
            Ok(n) => {
                self.received(n);
                true
            }
            Err(e) => !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
            ),
        }
    }

    /// Runs `f` with the thread's buffers lent to this connection (see [`Spare`]), and takes
    /// them back after.
    fn with_spare<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let mut spare = SPARE.with(|s| s.borrow_mut().take()).unwrap_or_default();
        self.exchange(&mut spare);
        let r = f(self);
        self.exchange(&mut spare);
        SPARE.with(|s| *s.borrow_mut() = Some(spare));
        r
    }

    /// Swaps this connection's empty buffers with `spare`'s (the same call lends and takes
    /// back, see `Connection::exchange_buffers`).
    fn exchange(&mut self, spare: &mut Spare) {
        self.conn.exchange_buffers(&mut spare.proto);
        std::mem::swap(&mut self.buf, &mut spare.recv);
    }

    /// Gives the connection a receive buffer if it has none (a thread's first command, whose
    /// spare has none yet): a read into an empty buffer would look like the peer's EOF.
    fn ensure_recv_buf(&mut self) {
        if self.buf.is_empty() {
            self.buf = vec![0u8; RECV_BUF];
        }
    }

    /// Accounts for and feeds `n` bytes just read into `buf`; grows `buf` after a full read.
    fn received(&mut self, n: usize) {
        self.server
            .status()
            .bytes_received
            .fetch_add(n as u64, Ordering::Relaxed);
        let Client { conn, buf, tls, .. } = self;
        match tls {
            None => conn.feed(&buf[..n]),
            Some(link) => match link.absorb(&buf[..n], &mut |plain| conn.feed(plain)) {
                Ok(a) => {
                    if a.handshake_done {
                        let (version, cipher) = link.session_names();
                        conn.backend_mut().set_tls(version, cipher);
                    }
                    if a.peer_closed {
                        self.tls_ended = true;
                    }
                }
                Err(e) => {
                    tracing::debug!("connection {}: TLS error: {e}", conn.connection_id());
                    self.tls_ended = true;
                }
            },
        }
        self.read_full = n == buf.len();
        if n == buf.len() && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
        }
    }

    /// Whether the socket may still hold input: the last read filled the whole buffer. When
    /// `false`, the last read came back short (or found nothing), so the socket was empty then
    /// and whatever arrives later is new: what the thread pool's edge-triggered registration
    /// needs to know before it stops watching for leftovers.
    pub fn may_have_more_input(&self) -> bool {
        self.read_full
    }

    /// Connection id.
    pub fn id(&self) -> u32 {
        self.conn.connection_id()
    }

    /// The socket (e.g. to register it with epoll).
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The protocol state.
    pub fn connection(&self) -> &Connection<Session> {
        &self.conn
    }

    /// The KILL/shutdown handle.
    pub fn control(&self) -> &Arc<SocketControl> {
        &self.control
    }

    /// Which timeout applies to the next read.
    pub fn timeout_kind(&self) -> TimeoutKind {
        if !self.conn.pending_output().is_empty() && self.conn.is_authenticated() {
            TimeoutKind::NetWrite
        } else if !self.conn.is_authenticated() {
            TimeoutKind::Connect
        } else if self.conn.buffered_input() > 0 {
            TimeoutKind::NetRead
        } else {
            TimeoutKind::Idle
        }
    }

    /// The duration of the timeout that applies to the next read.
    pub fn read_timeout_now(&self) -> Duration {
        let d = match self.timeout_kind() {
            TimeoutKind::Connect => self.server.connect_timeout(),
            TimeoutKind::NetRead => self.server.net_read_timeout(),
            TimeoutKind::NetWrite => self.conn.backend().net_write_timeout(),
            TimeoutKind::Idle => self.conn.backend().idle_timeout(),
        };
        d.max(Duration::from_millis(1))
    }

    /// Writes as much pending output as the socket takes. `Ok(true)` = all written.
    fn flush(&mut self) -> io::Result<bool> {
        if self.tls.is_some() {
            return self.flush_tls();
        }
        loop {
            let pending = self.conn.pending_output();
            if pending.is_empty() {
                return Ok(true);
            }
            let written = if self.dontwait {
                self.stream.send(pending, libc::MSG_DONTWAIT)
            } else {
                self.stream.write(pending)
            };
            match written {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.server
                        .status()
                        .bytes_sent
                        .fetch_add(n as u64, Ordering::Relaxed);
                    self.conn.consume_output(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
    }

    /// [`Client::flush`] through TLS: encrypt pending reply bytes, write the records.
    fn flush_tls(&mut self) -> io::Result<bool> {
        let flags = if self.dontwait { libc::MSG_DONTWAIT } else { 0 };
        let Some(link) = self.tls.as_mut() else {
            return Ok(true);
        };
        loop {
            if link.wants_write() {
                let mut sock = SendWith {
                    stream: &self.stream,
                    flags,
                };
                match link.write_to(&mut sock) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => {
                        self.server
                            .status()
                            .bytes_sent
                            .fetch_add(n as u64, Ordering::Relaxed);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) => return Err(e),
                }
                continue;
            }
            let pending = self.conn.pending_output();
            if pending.is_empty() {
                return Ok(true);
            }
            let n = link.encrypt(pending);
            if n == 0 {
                return Err(io::Error::other("TLS layer refused reply bytes"));
            }
            self.conn.consume_output(n);
        }
    }

    /// The client's SSLRequest was read: put TLS between socket and protocol. The bytes that
    /// came with the request are the start of the client's TLS handshake.
    fn start_tls(&mut self) -> bool {
        let Some(config) = tls::acceptor() else {
            return false;
        };
        let link = match TlsLink::new(config) {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("connection {}: cannot start TLS: {e}", self.id());
                return false;
            }
        };
        self.tls = Some(Box::new(link));
        let early = self.conn.take_unprocessed_input();
        if !early.is_empty() {
            let Client { conn, tls, .. } = self;
            if let Some(link) = tls {
                if link.absorb(&early, &mut |plain| conn.feed(plain)).is_err() {
                    self.tls_ended = true;
                }
            }
        }
        true
    }

    /// Runs the cycle for at most one command. See the module docs.
    pub fn serve_one_command(&mut self) -> Outcome {
        self.with_spare(Self::serve_one_command_here)
    }

    fn serve_one_command_here(&mut self) -> Outcome {
        self.ensure_recv_buf();
        let mut processed = false;
        loop {
            match self.flush() {
                Ok(true) => {}
                Ok(false) => return Outcome::WantWrite,
                Err(_) => {
                    // Blocking write timeout (net_write_timeout) or the peer vanished.
                    self.peer_gone = true;
                    self.conn.shutdown();
                    self.finish();
                    return Outcome::Closed;
                }
            }
            if self.conn.is_closed() {
                self.finish();
                return Outcome::Closed;
            }
            if processed {
                if self.conn.is_authenticated() && self.conn.backend().killed() {
                    self.conn.shutdown();
                    self.finish();
                    return Outcome::Closed;
                }
                return Outcome::Continue;
            }
            if self.tls_ended && !self.conn.has_command() {
                // TLS failed or the client said close_notify: what decrypted cleanly before
                // was run; now send rustls's alert (if any) and close like an end of file.
                let _ = self.flush();
                self.peer_gone = true;
                self.conn.shutdown();
                self.finish();
                return Outcome::Closed;
            }
            match self.conn.process() {
                Progress::Continue => processed = true,
                Progress::Close => {}
                Progress::StartTls => {
                    if !self.start_tls() {
                        self.conn.shutdown();
                        self.finish();
                        return Outcome::Closed;
                    }
                }
                Progress::NeedMore => match if self.dontwait {
                    self.stream.recv(&mut self.buf, libc::MSG_DONTWAIT)
                } else {
                    self.stream.read(&mut self.buf)
                } {
                    Ok(0) => {
                        self.peer_gone = true;
                        self.conn.shutdown();
                        self.finish();
                        return Outcome::Closed;
                    }
                    Ok(n) => self.received(n),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.read_full = false;
                        // Blocking sockets report an elapsed timeout as WouldBlock on Linux.
                        if self.nonblocking_hint() {
                            return Outcome::WantRead;
                        }
                        return Outcome::TimedOut;
                    }
                    Err(e) if e.kind() == io::ErrorKind::TimedOut => return Outcome::TimedOut,
                    Err(_) => {
                        self.peer_gone = true;
                        self.conn.shutdown();
                        self.finish();
                        return Outcome::Closed;
                    }
                },
            }
        }
    }

    fn nonblocking_hint(&self) -> bool {
        if self.dontwait {
            return true;
        }
        // SAFETY: F_GETFL on a valid, owned descriptor has no side effects.
        let flags = unsafe { libc::fcntl(self.stream.as_raw_fd(), libc::F_GETFL) };
        flags >= 0 && flags & libc::O_NONBLOCK != 0
    }

    /// Closes after a timeout: an idle authenticated connection gets ER_CLIENT_INTERACTION_TIMEOUT
    /// (4031) first, as MySQL 8 does; a handshake, a half-read command or a reply the client
    /// stopped reading (`net_write_timeout`) is just dropped. A logged-in connection closed here
    /// counts in `Aborted_clients`.
    pub fn close_timed_out(&mut self) {
        if self.timeout_kind() == TimeoutKind::Idle {
            self.conn.close_with_error(&interaction_timeout_error());
        } else {
            self.conn.shutdown();
        }
        let _ = self.flush();
        self.finish();
    }

    /// Closes at server shutdown, as MariaDB does: a client that sent something the server
    /// will not answer (read into the buffer already or still in the socket: a command, a
    /// login packet) gets ER_SERVER_SHUTDOWN (1053) as its reply; an idle client, or one whose
    /// handshake is waiting for its login, is closed without a packet. Both handlers close
    /// this way, after any running command has finished.
    pub fn close_at_shutdown(&mut self) {
        if self.conn.has_unprocessed_input() || self.socket_has_bytes() {
            self.close_with_error(&shutdown_error());
        } else {
            self.conn.shutdown();
            let _ = self.flush();
            self.finish();
        }
    }

    /// The socket holds bytes not read yet (a peek that never blocks; EOF and errors count as
    /// none).
    fn socket_has_bytes(&self) -> bool {
        let mut b = [0u8; 1];
        // SAFETY: a one-byte buffer we own; MSG_PEEK leaves the byte in the socket.
        let n = unsafe {
            libc::recv(
                self.stream.as_raw_fd(),
                b.as_mut_ptr().cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        n > 0
    }

    /// Closes with an error packet (e.g. 1053 at server shutdown), best effort.
    pub fn close_with_error(&mut self, e: &ErrorInfo) {
        self.conn.close_with_error(e);
        let _ = self.flush();
        self.finish();
    }

    /// Final accounting and socket shutdown; idempotent.
    fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.conn.shutdown();
        if let Some(link) = self.tls.as_mut() {
            if !self.peer_gone {
                // Best effort, never blocking: close_notify so the client sees a clean end.
                link.close_notify();
                let mut sock = SendWith {
                    stream: &self.stream,
                    flags: libc::MSG_DONTWAIT,
                };
                let _ = link.write_to(&mut sock);
            }
        }
        let st = self.server.status();
        // max_connect_errors: an attempt that ended before its handshake completed (the client
        // went away, timed out, or sent garbage) is a connection error of its host; a failed
        // login is not (MySQL counts those apart and does not block for them).
        if !self.conn.logged_in()
            && !matches!(
                self.conn.close_reason(),
                Some(CloseReason::LoginFailed | CloseReason::Quit)
            )
        {
            self.server.note_connect_error(&self.host);
        }
        match self.conn.close_reason() {
            Some(CloseReason::Quit) => {}
            Some(CloseReason::LoginFailed) => {
                st.aborted_connects.fetch_add(1, Ordering::Relaxed);
                if self.refusing {
                    st.connection_errors_max_connections
                        .fetch_add(1, Ordering::Relaxed);
                }
            }
            _ => {
                if self.conn.logged_in() {
                    st.aborted_clients.fetch_add(1, Ordering::Relaxed);
                } else {
                    st.aborted_connects.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        self.stream.shutdown();
    }

    /// Whether the peer went away (EOF, reset or failed write).
    pub fn peer_gone(&self) -> bool {
        self.peer_gone
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.finish();
    }
}
