//! The real `shoal` binary: options, listeners, admission (1040), bad input, shutdown. These
//! need nothing from the SQL layer except login.

mod support;

use std::io::{Read, Write};
use std::time::Duration;

use support::{err_code, run_shoal, temp_dir, Raw, Shoal};

#[test]
fn help_version_and_unknown_option() {
    let (code, out, _) = run_shoal(&["--help"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("--defaults-file"), "{out}");
    let (code, out, _) = run_shoal(&["--version"]);
    assert_eq!(code, Some(0));
    assert!(out.contains(env!("CARGO_PKG_VERSION")), "{out}");
    let (code, _, err) = run_shoal(&["--no-such-option=1"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("no_such_option") || err.contains("no-such-option"),
        "{err}"
    );
    let (code, _, err) = run_shoal(&["--max-connections=notanumber"]);
    assert_eq!(code, Some(1), "{err}");
    let (code, _, err) = run_shoal(&["stray-argument"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("stray-argument"), "{err}");
    let (code, _, err) = run_shoal(&["--defaults-file=/nonexistent/shoal.cnf"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("/nonexistent/shoal.cnf"), "{err}");
}

#[test]
fn option_file_is_applied_and_bad_file_refused() {
    let dir = temp_dir("cnf");
    let port = support::free_port();
    let cnf = dir.join("my.cnf");
    std::fs::write(
        &cnf,
        format!(
            "# test config\n[client]\nport=1\n[mysqld]\nport = {port}\nsocket = {}\n\
             datadir = {}\n[shoal]\nmax_connections = 7 # trailing comment\n",
            dir.join("s.sock").display(),
            dir.join("data").display()
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_shoal"))
        .arg(format!("--defaults-file={}", cnf.display()))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut ok = false;
    while std::time::Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            ok = true;
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let st = child.wait().unwrap();
    assert!(ok, "server did not listen on the port from my.cnf");
    assert_eq!(st.code(), Some(0));
    // An unknown option inside the file stops startup.
    std::fs::write(&cnf, "[mysqld]\nbogus_option = 3\n").unwrap();
    let (code, _, err) = run_shoal(&[&format!("--defaults-file={}", cnf.display())]);
    assert_eq!(code, Some(1));
    assert!(err.contains("bogus"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn greeting_over_tcp_and_unix_socket() {
    let srv = Shoal::start("greet", &[]);
    let mut r = Raw::connect(srv.port);
    let (_, g) = r.read_packet().unwrap();
    let version = String::from_utf8_lossy(&g[1..g[1..].iter().position(|&b| b == 0).unwrap() + 1])
        .into_owned();
    assert!(version.contains("shoal"), "{version}");
    // Unix socket.
    let mut u = std::os::unix::net::UnixStream::connect(&srv.socket).unwrap();
    u.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut h = [0u8; 5];
    std::io::Read::read_exact(&mut u, &mut h).unwrap();
    assert_eq!(h[3], 0);
    assert_eq!(h[4], 10);
    let err = srv.stderr();
    assert!(err.contains("ready for connections"), "{err}");
    assert!(err.contains(&srv.port.to_string()), "{err}");
}

#[test]
fn garbage_truncated_and_oversize_input() {
    let srv = Shoal::start("garbage", &[]);
    // Garbage: an error packet, then close.
    let mut r = Raw::connect(srv.port);
    r.greeting();
    r.s.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let (_, p) = r.read_packet().expect("error packet");
    assert_eq!(p[0], 0xFF);
    assert!(r.read_packet().is_none());
    // Absurd length before login: 1153 from the header alone.
    let mut r = Raw::connect(srv.port);
    r.greeting();
    r.s.write_all(&[0xFF, 0xFF, 0xFF, 1, 0, 0]).unwrap();
    let (_, p) = r.read_packet().expect("error packet");
    assert_eq!(err_code(&p), 1153);
    // Truncated packet then the client vanishes: the server must not hang on it.
    let mut r = Raw::connect(srv.port);
    r.greeting();
    r.s.write_all(&[50, 0, 0, 1, 1, 2, 3]).unwrap();
    drop(r);
    // Random bytes on many connections.
    let mut seed = 12345u64;
    for _ in 0..30 {
        let mut r = Raw::connect(srv.port);
        r.greeting();
        let bytes: Vec<u8> = (0..200)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                (seed >> 33) as u8
            })
            .collect();
        let _ = r.s.write_all(&bytes);
        let _ = r.s.shutdown(std::net::Shutdown::Write);
        while r.read_packet().is_some() {}
    }
    // The server still answers.
    let mut r = Raw::connect(srv.port);
    r.greeting();
}

#[test]
fn too_many_connections_then_keeps_serving() {
    let srv = Shoal::start("maxconn", &["--max-connections=2"]);
    // max_connections=2 plus one reserved for root: three handshakes in progress fill it.
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut r = Raw::connect(srv.port);
        r.greeting();
        held.push(r);
    }
    // The 4th (max_connections + 2) is refused with 1040 after its handshake response.
    let mut r = Raw::connect(srv.port);
    r.greeting();
    r.send_login("root");
    let (_, p) = r.read_packet().expect("1040");
    assert_eq!(err_code(&p), 1040);
    assert!(String::from_utf8_lossy(&p).contains("Too many connections"));
    // Release them; the server serves again.
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
    let mut r = Raw::connect(srv.port);
    r.greeting();
    r.send_login("nosuchuser");
    let (_, p) = r.read_packet().expect("reply");
    assert_ne!(err_code(&p), 1040);
}

#[test]
fn connect_timeout_closes_silent_clients() {
    let srv = Shoal::start("ctimeout", &["--connect-timeout=2"]);
    let mut r = Raw::connect(srv.port);
    r.greeting();
    let t = std::time::Instant::now();
    assert!(r.read_packet().is_none());
    let el = t.elapsed();
    assert!(
        el >= Duration::from_millis(1500) && el < Duration::from_secs(15),
        "{el:?}"
    );
}

#[test]
fn sigterm_exits_zero_and_removes_socket() {
    let mut srv = Shoal::start("sigterm", &[]);
    // An idle connection does not block shutdown.
    let mut r = Raw::connect(srv.port);
    r.greeting();
    assert!(srv.socket.exists());
    assert_eq!(srv.stop(), Some(0));
    assert!(!srv.socket.exists());
    assert!(r.read_packet().is_none());
}

/// At shutdown both handlers close as MariaDB does: an idle connection and one still in its
/// handshake get no packet, a running command finishes with its result, and a message the
/// client pipelined behind it, which will not be answered, gets ER_SERVER_SHUTDOWN (1053).
#[test]
fn shutdown_answers_only_what_the_client_sent() {
    use mysql::prelude::Queryable;
    for handling in ["one-thread-per-connection", "pool-of-threads"] {
        let mut srv = Shoal::start(
            "shutdown-answers",
            &[&format!("--thread-handling={handling}")],
        );
        let mut handshake = Raw::connect(srv.port);
        handshake.greeting();
        let mut idle = Raw::logged_in(srv.port, "root");
        let mut busy = Raw::logged_in(srv.port, "root");
        // COM_QUERY SELECT SLEEP(1) and a COM_PING behind it, in one write.
        let mut w = Vec::new();
        for (seq, payload) in [(0u8, &b"\x03SELECT SLEEP(1)"[..]), (0, b"\x0e")] {
            w.extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
            w.push(seq);
            w.extend_from_slice(payload);
        }
        busy.s.write_all(&w).unwrap();
        let mut c = srv.conn();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let n: u64 = c
                .query_first(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                     WHERE INFO = 'SELECT SLEEP(1)'",
                )
                .unwrap()
                .unwrap();
            if n == 1 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{handling}: never ran"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(c);
        assert_eq!(srv.stop(), Some(0), "{handling}");
        assert!(handshake.read_packet().is_none(), "{handling}: handshake");
        assert!(idle.read_packet().is_none(), "{handling}: idle");
        let mut got = Vec::new();
        while let Some((_, p)) = busy.read_packet() {
            got.push(p);
        }
        assert_eq!(got.len(), 6, "{handling}: {got:?}");
        assert_eq!(got[0], [1], "{handling}: the SLEEP's column count");
        assert_eq!(err_code(&got[5]), 1053, "{handling}: the PING's reply");
    }
}

#[test]
fn stale_socket_is_replaced() {
    let dir = temp_dir("stale");
    let sock = dir.join("stale.sock");
    {
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    } // listener closed: the file stays, stale
    assert!(sock.exists());
    let port = support::free_port();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args([
            format!("--port={port}"),
            format!("--socket={}", sock.display()),
            format!("--datadir={}", dir.join("d").display()),
            "--initialize-insecure".to_string(),
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut ok = false;
    while std::time::Instant::now() < deadline {
        if std::os::unix::net::UnixStream::connect(&sock).is_ok() {
            ok = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
    assert!(ok);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn admin_port_admits_root_above_max_connections() {
    let admin = support::free_port();
    let srv = Shoal::start(
        "admin",
        &["--max-connections=1", &format!("--admin-port={admin}")],
    );
    // Fill the normal port: 1 + the reserved root slot.
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut r = Raw::connect(srv.port);
        r.greeting();
        held.push(r);
    }
    let mut r = Raw::connect(srv.port);
    r.greeting();
    r.send_login("root");
    assert_eq!(err_code(&r.read_packet().unwrap().1), 1040);
    // The admin port still lets root in.
    let mut a = Raw::connect(admin);
    a.greeting();
    a.send_login("root");
    let (_, p) = a.read_packet().unwrap();
    assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
    a.write_packet(0, b"\x0e").unwrap();
    assert_eq!(a.read_packet().unwrap().1[0], 0);
}

/// `GET path` on the metrics port; (status line, body).
fn http_get(port: u16, path: &str) -> (String, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

fn metric(body: &str, name: &str) -> f64 {
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in:\n{body}"))
        .parse()
        .unwrap()
}

#[test]
fn prometheus_metrics_port_serves_global_status() {
    let mport = support::free_port();
    let srv = Shoal::start(
        "metrics",
        &[
            "--thread-handling=pool-of-threads",
            &format!("--metrics-port={mport}"),
        ],
    );
    let (st, body) = http_get(mport, "/metrics");
    assert!(st.contains("200"), "{st}");
    assert_eq!(metric(&body, "mysql_up"), 1.0);
    let q0 = metric(&body, "mysql_global_status_questions");
    assert!(body.contains("mysql_global_status_threadpool_threads "));
    // Queries move the counters the scrape shows.
    let mut c = mysql::Conn::new(srv.mysql_opts()).unwrap();
    for i in 0..5 {
        let _: Option<i64> =
            mysql::prelude::Queryable::query_first(&mut c, format!("SELECT {i}")).unwrap();
    }
    let (_, body) = http_get(mport, "/metrics");
    assert!(metric(&body, "mysql_global_status_questions") >= q0 + 5.0);
    assert!(metric(&body, "mysql_global_status_threads_connected") >= 1.0);
    // Other paths are refused, and a silent client does not block the endpoint.
    let _silent = std::net::TcpStream::connect(("127.0.0.1", mport)).unwrap();
    let (st, _) = http_get(mport, "/nope");
    assert!(st.contains("404"), "{st}");
    // The variable shows the port.
    let v: Option<u64> =
        mysql::prelude::Queryable::query_first(&mut c, "SELECT @@metrics_port").unwrap();
    assert_eq!(v, Some(mport as u64));
}
