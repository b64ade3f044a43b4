//! Prometheus text exposition on an HTTP port (`--metrics-port`, 0 = off).
//!
//! A monitoring system should not need a MySQL login, a connection slot or a pool worker to read
//! the server's counters — least of all when the pool is saturated, which is exactly when someone
//! wants to look. So the endpoint is a separate listener on its own thread, outside both
//! connection handlers: `GET /metrics` renders every numeric `SHOW GLOBAL STATUS` row as
//! `mysql_global_status_<name>` (the names mysqld_exporter uses, so existing dashboards work;
//! `Threadpool_*`, `Shoal_waits_*` and the pool's latency percentiles included) plus `mysql_up 1`.
//!
//! Limits, so that no client can starve the scrapes or the server's memory: each request runs on
//! its own short-lived thread, at most [`MAX_REQUESTS`] at once (one more gets `503` at once);
//! the request head (request line and headers) must arrive whole within [`REQUEST_TIMEOUT`]
//! (`408` otherwise: a client trickling a byte at a time gains nothing) and be at most
//! [`MAX_HEAD`] bytes (`431` otherwise; the server never buffers more than that). After an
//! error answer the rest of the input is read and discarded for a moment, so that closing does
//! not reset the connection before the client has read the answer.
//!
//! # Who may scrape
//!
//! The port is bound on `metrics_address` (127.0.0.1 unless configured: the counters tell an
//! outsider a lot about the load and the accounts' activity). With `--metrics-token=T` a
//! request must carry `Authorization: Bearer T`; with `--metrics-basic-auth=USER:PASSWORD`
//! `Authorization: Basic base64(USER:PASSWORD)` (what Prometheus' `authorization` and
//! `basic_auth` scrape options send); with both, either is accepted. Anything else gets `401`
//! with a `WWW-Authenticate` challenge. Credentials are compared in constant time. They are
//! startup options only, never shown by `SHOW VARIABLES` (put them in the option file rather
//! than on the command line, where `ps` shows them).
//!
//! Counters and gauges are not told apart (mysqld's status does not say which is which); every
//! series is exported `untyped`, as mysqld_exporter does for the status it does not know.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shoal_session::Server;

/// Most requests served at once; one more is answered `503` by the accept thread.
pub const MAX_REQUESTS: usize = 4;
/// Longest request head (request line and headers, with the blank line that ends them).
pub const MAX_HEAD: usize = 8 * 1024;
/// Time for the whole request head to arrive, counted from accept (not per read).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the input after an error answer is read and discarded before closing.
const DRAIN: Duration = Duration::from_secs(1);

/// Who may scrape (see the module doc); both `None`: anyone who reaches the port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetricsAuth {
    /// `--metrics-token`: the bearer token.
    pub token: Option<String>,
    /// `--metrics-basic-auth`: `user:password`.
    pub basic: Option<String>,
}

impl MetricsAuth {
    /// No credentials are asked for.
    pub fn is_open(&self) -> bool {
        self.token.is_none() && self.basic.is_none()
    }

    /// Whether the request head carries accepted credentials.
    pub fn allows(&self, head: &str) -> bool {
        use base64::Engine;
        if self.is_open() {
            return true;
        }
        for line in head.lines().skip(1) {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            if !name.trim().eq_ignore_ascii_case("authorization") {
                continue;
            }
            let value = value.trim();
            let Some((scheme, cred)) = value.split_once(' ') else {
                continue;
            };
            let cred = cred.trim();
            if scheme.eq_ignore_ascii_case("bearer") {
                if let Some(t) = &self.token {
                    if same(cred.as_bytes(), t.as_bytes()) {
                        return true;
                    }
                }
            } else if scheme.eq_ignore_ascii_case("basic") {
                if let (Some(b), Ok(decoded)) = (
                    &self.basic,
                    base64::engine::general_purpose::STANDARD.decode(cred),
                ) {
                    if same(&decoded, b.as_bytes()) {
                        return true;
                    }
                }
            }
        }
        false
    }

    /// The `WWW-Authenticate` challenges of a `401`.
    fn challenges(&self) -> String {
        let mut h = String::new();
        if self.token.is_some() {
            h.push_str("WWW-Authenticate: Bearer realm=\"shoal metrics\"\r\n");
        }
        if self.basic.is_some() {
            h.push_str("WWW-Authenticate: Basic realm=\"shoal metrics\"\r\n");
        }
        h
    }
}

/// Constant-time equality (the length is not hidden).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Binds `address:port` and serves scrapes until `shutdown` is set.
pub fn spawn(
    server: Arc<Server>,
    address: &str,
    port: u16,
    auth: MetricsAuth,
    shutdown: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let listener = TcpListener::bind((address, port))?;
    listener.set_nonblocking(true)?;
    let active = Arc::new(AtomicUsize::new(0));
    let auth = Arc::new(auth);
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            while !shutdown.load(Ordering::Acquire) {
                match listener.accept() {
                    Ok((stream, _)) => dispatch(&server, &auth, stream, &active),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    Err(e) => {
                        tracing::warn!("metrics accept: {e}");
                        std::thread::sleep(Duration::from_millis(200));
                    }
                }
            }
        })
}

/// Decrements the count of running requests when a request thread ends (even by a panic).
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Serves `stream` on a thread of its own, or answers `503` at once when [`MAX_REQUESTS`] run.
fn dispatch(
    server: &Arc<Server>,
    auth: &Arc<MetricsAuth>,
    stream: TcpStream,
    active: &Arc<AtomicUsize>,
) {
    if active.fetch_add(1, Ordering::AcqRel) >= MAX_REQUESTS {
        active.fetch_sub(1, Ordering::AcqRel);
        // Best effort and never blocking the accept thread.
        let _ = stream.set_nonblocking(true);
        let _ = respond(&stream, "503 Service Unavailable", "text/plain", "busy\n");
        return;
    }
    let slot = Slot(active.clone());
    let server = server.clone();
    let auth = auth.clone();
    let spawned = std::thread::Builder::new()
        .name("metrics-request".into())
        .spawn(move || {
            let _slot = slot;
            if let Err(e) = serve(&server, &auth, stream) {
                tracing::debug!("metrics request failed: {e}");
            }
        });
    if let Err(e) = spawned {
        // The closure (and its slot) was dropped: the count is right again.
        tracing::warn!("metrics: cannot start a request thread: {e}");
    }
}

/// The exposition text for the current global status.
pub fn render(server: &Server) -> String {
    let mut out = String::from("# TYPE mysql_up untyped\nmysql_up 1\n");
    for (name, value) in server.global_status() {
        let Ok(v) = value.trim().parse::<f64>() else {
            continue;
        };
        let metric = format!("mysql_global_status_{}", sanitize(&name));
        out.push_str(&format!("# TYPE {metric} untyped\n{metric} {v}\n"));
    }
    out
}

/// Lower-case, with every character outside `[a-z0-9_]` turned into `_`.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Why a request head could not be read.
#[derive(Debug, thiserror::Error)]
enum HeadError {
    /// Longer than [`MAX_HEAD`].
    #[error("request head longer than {MAX_HEAD} bytes")]
    TooLarge,
    /// Not complete within [`REQUEST_TIMEOUT`].
    #[error("request head not complete within {REQUEST_TIMEOUT:?}")]
    Timeout,
    /// The client closed before the head was complete.
    #[error("client closed before the end of the request head")]
    Closed,
    /// A socket error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Reads the request head (up to and without the blank line that ends it) by `deadline`,
/// never buffering more than [`MAX_HEAD`] bytes.
fn read_head(stream: &mut TcpStream, deadline: Instant) -> Result<Vec<u8>, HeadError> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    loop {
        if let Some(end) = head_end(&head) {
            head.truncate(end);
            return Ok(head);
        }
        if head.len() >= MAX_HEAD {
            return Err(HeadError::TooLarge);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(HeadError::Timeout);
        }
        stream.set_read_timeout(Some(left))?;
        let want = buf.len().min(MAX_HEAD - head.len());
        match stream.read(&mut buf[..want]) {
            Ok(0) => return Err(HeadError::Closed),
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(HeadError::Timeout)
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Where the head ends: the first empty line (`\r\n\r\n`, or bare `\n\n`).
fn head_end(head: &[u8]) -> Option<usize> {
    let crlf = head.windows(4).position(|w| w == b"\r\n\r\n");
    let lf = head.windows(2).position(|w| w == b"\n\n");
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn respond(w: &TcpStream, status: &str, ctype: &str, body: &str) -> std::io::Result<()> {
    respond_with(w, status, "", ctype, body)
}

/// An answer with extra header lines (`extra`: each ending in CRLF).
fn respond_with(
    mut w: &TcpStream,
    status: &str,
    extra: &str,
    ctype: &str,
    body: &str,
) -> std::io::Result<()> {
    write!(
        w,
        "HTTP/1.1 {status}\r\n{extra}Content-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    w.flush()
}

fn serve(server: &Server, auth: &MetricsAuth, mut stream: TcpStream) -> std::io::Result<()> {
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let head = match read_head(&mut stream, deadline) {
        Ok(h) => h,
        Err(e) => {
            let status = match e {
                HeadError::TooLarge => "431 Request Header Fields Too Large",
                HeadError::Timeout => "408 Request Timeout",
                HeadError::Closed | HeadError::Io(_) => return Ok(()),
            };
            tracing::debug!("metrics request refused: {e}");
            respond(&stream, status, "text/plain", &format!("{e}\n"))?;
            drain(&mut stream);
            return Ok(());
        }
    };
    let head = String::from_utf8_lossy(&head);
    if !auth.allows(&head) {
        return respond_with(
            &stream,
            "401 Unauthorized",
            &auth.challenges(),
            "text/plain",
            "credentials required\n",
        );
    }
    let request = head.lines().next().unwrap_or("");
    let mut parts = request.split_ascii_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method, path) {
        ("GET", "/metrics") => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            render(server),
        ),
        ("GET", _) => (
            "404 Not Found",
            "text/plain",
            "only /metrics is served here\n".to_string(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "only GET is served here\n".to_string(),
        ),
    };
    respond(&stream, status, ctype, &body)
}

/// After an error answer: stop sending, then read and discard what the client still sends,
/// for up to [`DRAIN`], so that the close does not reset the connection (and lose the answer)
/// while its input is unread.
fn drain(stream: &mut TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let until = Instant::now() + DRAIN;
    let mut buf = [0u8; 8192];
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{head_end, sanitize, MetricsAuth};

    #[test]
    fn credentials() {
        let open = MetricsAuth::default();
        assert!(open.allows("GET /metrics HTTP/1.1\r\n"));
        let a = MetricsAuth {
            token: Some("t0k".into()),
            basic: Some("prom:pw".into()),
        };
        assert!(!a.allows("GET /metrics HTTP/1.1\r\nHost: x\r\n"));
        assert!(a.allows("GET /metrics HTTP/1.1\r\nauthorization: Bearer t0k\r\n"));
        assert!(!a.allows("GET /metrics HTTP/1.1\r\nAuthorization: Bearer t0K\r\n"));
        // base64("prom:pw") = cHJvbTpwdw==
        assert!(a.allows("GET /metrics HTTP/1.1\r\nAuthorization: Basic cHJvbTpwdw==\r\n"));
        assert!(!a.allows("GET /metrics HTTP/1.1\r\nAuthorization: Basic cHJvbTpwdx==\r\n"));
        assert!(!a.allows("GET /metrics HTTP/1.1\r\nX-Authorization: Bearer t0k\r\n"));
    }

    #[test]
    fn the_head_ends_at_the_first_empty_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nrest"), Some(23));
        assert_eq!(head_end(b"GET / HTTP/1.0\n\n"), Some(14));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n"), None);
    }

    #[test]
    fn names_follow_prometheus_rules() {
        assert_eq!(sanitize("Threads_connected"), "threads_connected");
        assert_eq!(
            sanitize("Threadpool_queue_p99.9-ms"),
            "threadpool_queue_p99_9_ms"
        );
    }
}
