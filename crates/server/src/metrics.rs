//! Prometheus text exposition on an HTTP port (`--metrics-port`, 0 = off).
//!
//! A monitoring system should not need a MySQL login, a connection slot or a pool worker to read
//! the server's counters — least of all when the pool is saturated, which is exactly when someone
//! wants to look. So the endpoint is a separate listener on its own thread, outside both
//! connection handlers: `GET /metrics` renders every numeric `SHOW GLOBAL STATUS` row as
//! `mysql_global_status_<name>` (the names mysqld_exporter uses, so existing dashboards work;
//! `Threadpool_*`, `Shoal_waits_*` and the pool's latency percentiles included) plus `mysql_up 1`.
//! Requests are served one at a time with short socket timeouts: a scrape is small, and a client
//! that never sends its request line cannot hold the thread for more than a second.
//!
//! Counters and gauges are not told apart (mysqld's status does not say which is which); every
//! series is exported `untyped`, as mysqld_exporter does for the status it does not know.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shoal_session::Server;

/// Binds `address:port` and serves scrapes until `shutdown` is set.
pub fn spawn(
    server: Arc<Server>,
    address: &str,
    port: u16,
    shutdown: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let listener = TcpListener::bind((address, port))?;
    listener.set_nonblocking(true)?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            while !shutdown.load(Ordering::Acquire) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        if let Err(e) = serve(&server, stream) {
                            tracing::debug!("metrics request failed: {e}");
                        }
                    }
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

fn serve(server: &Server, stream: TcpStream) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // Drain the headers (bounded by the read timeout and a line count).
    for _ in 0..100 {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
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
    let mut w = stream;
    write!(
        w,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::sanitize;

    #[test]
    fn names_follow_prometheus_rules() {
        assert_eq!(sanitize("Threads_connected"), "threads_connected");
        assert_eq!(
            sanitize("Threadpool_queue_p99.9-ms"),
            "threadpool_queue_p99_9_ms"
        );
    }
}
