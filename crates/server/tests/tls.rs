//! TLS against the real binary with real clients: the `mariadb` CLI (OpenSSL), PyMySQL and
//! mysql-connector-python (Python's ssl), the Rust `mysql` crate (rustls), and a raw rustls
//! client for what drivers never do (pipelining inside one record, stalling mid-handshake).
//! Covers certificate generation and reuse, verification against the generated CA, both
//! connection handlers, `require_secure_transport`, `REQUIRE SSL` accounts and the pool under
//! many TLS connections.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use support::{err_code, global_status, venv_python, Raw, Shoal};

const HANDLERS: [&str; 2] = ["one-thread-per-connection", "pool-of-threads"];

fn run(mut cmd: impl std::borrow::BorrowMut<Command>) -> (i32, String, String) {
    let cmd = cmd.borrow_mut();
    let out = cmd.stdin(Stdio::null()).output().expect("run client");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ca_of(srv: &Shoal) -> PathBuf {
    srv.dir.join("data").join("ca.pem")
}

fn mariadb(srv: &Shoal, user: &str, extra: &[&str]) -> Command {
    let mut c = Command::new("mariadb");
    c.args([
        "--no-defaults",
        "-h127.0.0.1",
        &format!("-P{}", srv.port),
        &format!("-u{user}"),
        "--connect-timeout=10",
        "-N",
    ]);
    c.args(extra);
    c
}

fn tls_opts(srv: &Shoal) -> mysql::OptsBuilder {
    srv.mysql_opts().ssl_opts(Some(
        mysql::SslOpts::default().with_root_cert_path(Some(ca_of(srv))),
    ))
}

fn session_status(c: &mut mysql::Conn, name: &str) -> String {
    let row: Option<(String, String)> = c
        .query_first(format!("SHOW SESSION STATUS LIKE '{name}'"))
        .unwrap();
    row.unwrap_or_else(|| panic!("no status {name}")).1
}

fn handler_arg(h: &str) -> String {
    format!("--thread-handling={h}")
}

#[test]
fn mariadb_cli_over_verified_tls_under_both_handlers() {
    for h in HANDLERS {
        let srv = Shoal::start("tls-cli", &[&handler_arg(h)]);
        let ca = ca_of(&srv);
        assert!(ca.exists(), "{h}: no generated ca.pem");
        for f in ["server-key.pem", "ca-key.pem"] {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(srv.dir.join("data").join(f))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "{h}: {f} readable by others: {mode:o}");
        }
        let mut c = srv.conn();
        let accepts = global_status(&mut c, "Ssl_accepts");
        let finished = global_status(&mut c, "Ssl_finished_accepts");
        let ca_arg = format!("--ssl-ca={}", ca.display());
        let (code, out, err) = run(mariadb(
            &srv,
            "root",
            &[
                "--ssl",
                "--ssl-verify-server-cert",
                &ca_arg,
                "-e",
                "SHOW STATUS LIKE 'Ssl_cipher'; SHOW STATUS LIKE 'Ssl_version'; \
                 SELECT @@have_ssl, @@have_openssl, @@ssl_ca = '' ; SELECT REPEAT('x', 100000) = \
                 REPEAT('x', 100000)",
            ],
        ));
        assert_eq!(code, 0, "{h}: {err}");
        let lines: Vec<&str> = out.lines().collect();
        let cipher = lines[0].strip_prefix("Ssl_cipher\t").unwrap();
        assert!(!cipher.is_empty(), "{h}: empty Ssl_cipher: {out}");
        assert!(
            lines[1] == "Ssl_version\tTLSv1.3" || lines[1] == "Ssl_version\tTLSv1.2",
            "{h}: {out}"
        );
        assert_eq!(lines[2], "YES\tYES\t0", "{h}: {out}");
        assert_eq!(lines[3], "1", "{h}: {out}");
        assert_eq!(global_status(&mut c, "Ssl_accepts"), accepts + 1, "{h}");
        assert_eq!(global_status(&mut c, "Ssl_finished_accepts"), finished + 1);
        // Without TLS the same statement shows an empty cipher.
        let (code, out, err) = run(mariadb(
            &srv,
            "root",
            &["--skip-ssl", "-e", "SHOW STATUS LIKE 'Ssl_cipher'"],
        ));
        assert_eq!((code, out.as_str()), (0, "Ssl_cipher\t\n"), "{h}: {err}");
        // The global value is empty (MySQL's), even with TLS sessions open.
        let (_, out, _) = run(mariadb(
            &srv,
            "root",
            &["--ssl", "-e", "SHOW GLOBAL STATUS LIKE 'Ssl_cipher'"],
        ));
        assert_eq!(out, "Ssl_cipher\t\n", "{h}");
    }
}

#[test]
fn verification_fails_against_another_ca_and_certificates_are_reused() {
    let dir = support::temp_dir("tls-reuse");
    let mut srv = Shoal::start_in(&dir, &[]);
    let other = Shoal::start("tls-other", &[]);
    let first = std::fs::read(ca_of(&srv)).unwrap();
    // The other server's CA did not sign this server's certificate: verification must fail.
    let wrong = format!("--ssl-ca={}", ca_of(&other).display());
    let (code, _, err) = run(mariadb(
        &srv,
        "root",
        &[
            "--ssl",
            "--ssl-verify-server-cert",
            &wrong,
            "-e",
            "SELECT 1",
        ],
    ));
    assert_ne!(code, 0, "verified against a foreign CA");
    assert!(err.contains("2026"), "{err}");
    srv.stop();
    let srv = Shoal::start_in(&dir, &[]);
    assert_eq!(std::fs::read(ca_of(&srv)).unwrap(), first, "regenerated");
    let right = format!("--ssl-ca={}", ca_of(&srv).display());
    let (code, out, err) = run(mariadb(
        &srv,
        "root",
        &[
            "--ssl",
            "--ssl-verify-server-cert",
            &right,
            "-e",
            "SELECT 7",
        ],
    ));
    assert_eq!((code, out.trim()), (0, "7"), "{err}");
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explicit_certificate_options_and_skip_ssl() {
    // The generated files of one server, given to another as --ssl-cert/--ssl-key/--ssl-ca
    // (in a defaults file, as an operator would).
    let gen = Shoal::start("tls-gen", &[]);
    let d = gen.dir.join("data");
    let cnf = gen.dir.join("tls.cnf");
    std::fs::write(
        &cnf,
        format!(
            "[mysqld]\nssl-cert={}\nssl-key={}\nssl-ca={}\ntls_version=TLSv1.2\n",
            d.join("server-cert.pem").display(),
            d.join("server-key.pem").display(),
            d.join("ca.pem").display()
        ),
    )
    .unwrap();
    let srv = Shoal::start(
        "tls-explicit",
        &[&format!("--defaults-extra-file={}", cnf.display())],
    );
    assert!(
        !srv.dir.join("data").join("ca.pem").exists(),
        "generated anyway"
    );
    let mut c = mysql::Conn::new(tls_opts(&gen).tcp_port(srv.port)).unwrap();
    assert_eq!(session_status(&mut c, "Ssl_version"), "TLSv1.2");
    let row: (String, String, String) = c
        .query_first("SELECT @@ssl_cert, @@ssl_key, @@tls_version")
        .unwrap()
        .unwrap();
    assert_eq!(row.0, d.join("server-cert.pem").display().to_string());
    assert_eq!(row.1, d.join("server-key.pem").display().to_string());
    assert_eq!(row.2, "TLSv1.2");
    // A key without certificate stops startup with a message.
    let (code, _, err) = support::run_shoal(&[
        "--ssl-key=/nonexistent.pem",
        &format!("--datadir={}", gen.dir.join("d2").display()),
        "--port=0",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--ssl-cert and --ssl-key"), "{err}");
    // --skip-ssl: no certificates, CLIENT_SSL not offered, have_ssl DISABLED.
    let off = Shoal::start("tls-off", &["--skip-ssl"]);
    assert!(!off.dir.join("data").join("ca.pem").exists());
    let mut c = off.conn();
    let v: String = c.query_first("SELECT @@have_ssl").unwrap().unwrap();
    assert_eq!(v, "DISABLED");
    let ca_arg = format!("--ssl-ca={}", d.join("ca.pem").display());
    let (code, _, err) = run(mariadb(
        &off,
        "root",
        &["--ssl-verify-server-cert", &ca_arg, "-e", "SELECT 1"],
    ));
    assert_ne!(code, 0, "TLS with --skip-ssl");
    assert!(err.contains("SSL"), "{err}");
}

#[test]
fn python_clients_with_ssl_contexts() {
    let Some(py) = venv_python() else {
        panic!("/var/tmp/shoal-venv missing: run scripts/deps.sh");
    };
    for h in HANDLERS {
        let srv = Shoal::start("tls-py", &[&handler_arg(h)]);
        let script = format!(
            r#"
import ssl, pymysql, mysql.connector
ctx = ssl.create_default_context(cafile={ca:?})
c = pymysql.connect(host="127.0.0.1", port={port}, user="root", password="", ssl=ctx)
cur = c.cursor()
cur.execute("SHOW STATUS LIKE 'Ssl_cipher'")
cipher = cur.fetchone()[1]
assert cipher, "empty Ssl_cipher"
cur.execute("SELECT %s, LENGTH(REPEAT('y', 300000))", ("z" * 70000,))
row = cur.fetchone()
assert row == ("z" * 70000, 300000), row[1]
for i in range(200):
    cur.execute("SELECT %s + 1", (i,))
    assert cur.fetchone()[0] == i + 1
c.close()
m = mysql.connector.connect(host="127.0.0.1", port={port}, user="root", password="",
                            ssl_ca={ca:?}, ssl_verify_cert=True, ssl_verify_identity=True)
cur = m.cursor()
cur.execute("SHOW STATUS LIKE 'Ssl_version'")
v = cur.fetchone()[1]
assert v in ("TLSv1.2", "TLSv1.3"), v
pc = m.cursor(prepared=True)
pc.execute("SELECT ? + 1", (41,))
assert pc.fetchone()[0] == 42
m.close()
print("ok", cipher)
"#,
            ca = ca_of(&srv).display().to_string(),
            port = srv.port
        );
        let (code, out, err) = run(Command::new(&py).arg("-c").arg(&script));
        assert_eq!(code, 0, "{h}: {out}{err}");
        assert!(out.starts_with("ok "), "{h}: {out}");
    }
}

#[test]
fn rust_mysql_crate_over_rustls() {
    for h in HANDLERS {
        let srv = Shoal::start("tls-rust", &[&handler_arg(h)]);
        let mut c = mysql::Conn::new(tls_opts(&srv)).expect("TLS connect");
        assert!(!session_status(&mut c, "Ssl_cipher").is_empty(), "{h}");
        let stmt = c.prep("SELECT ?, REPEAT('q', ?)").unwrap();
        for n in [0usize, 1, 20000, 70000] {
            let (a, b): (String, String) =
                c.exec_first(&stmt, (n.to_string(), n)).unwrap().unwrap();
            assert_eq!((a, b.len()), (n.to_string(), n), "{h}");
        }
        // A client that does not trust the CA is refused by its own verification.
        let untrusted = srv.mysql_opts().ssl_opts(Some(mysql::SslOpts::default()));
        assert!(
            mysql::Conn::new(untrusted).is_err(),
            "{h}: unverified TLS accepted"
        );
    }
}

#[test]
fn require_secure_transport_refuses_plain_tcp_with_3159() {
    for h in HANDLERS {
        let srv = Shoal::start(
            "tls-rst",
            &[&handler_arg(h), "--require-secure-transport=ON"],
        );
        let e = mysql::Conn::new(srv.mysql_opts()).unwrap_err();
        match &e {
            mysql::Error::MySqlError(me) => {
                assert_eq!(me.code, 3159, "{h}: {e}");
                assert_eq!(
                    me.message,
                    "Connections using insecure transport are prohibited while \
                     --require_secure_transport=ON."
                );
            }
            other => panic!("{h}: {other}"),
        }
        let (code, _, err) = run(mariadb(&srv, "root", &["--skip-ssl", "-e", "SELECT 1"]));
        assert_ne!(code, 0);
        assert!(err.contains("3159"), "{h}: {err}");
        // TLS and the Unix socket are secure transports.
        let mut c = mysql::Conn::new(tls_opts(&srv)).unwrap();
        let (code, out, err) = run(Command::new("mariadb").args([
            "--no-defaults",
            &format!("--socket={}", srv.socket.display()),
            "-uroot",
            "-N",
            "--skip-ssl",
            "-e",
            "SELECT @@require_secure_transport",
        ]));
        assert_eq!((code, out.trim()), (0, "1"), "{h}: {err}");
        c.query_drop("SET GLOBAL require_secure_transport = OFF")
            .unwrap();
        mysql::Conn::new(srv.mysql_opts()).expect("plain TCP after OFF");
        c.query_drop("SET GLOBAL require_secure_transport = ON")
            .unwrap();
        assert!(mysql::Conn::new(srv.mysql_opts()).is_err());
    }
}

#[test]
fn require_ssl_account_is_refused_over_plain_tcp() {
    let srv = Shoal::start("tls-req", &[]);
    let mut root = srv.conn();
    root.query_drop("CREATE USER 'sec'@'%' IDENTIFIED BY 'pw' REQUIRE SSL")
        .unwrap();
    let plain = || mysql::Conn::new(srv.mysql_opts().user(Some("sec")).pass(Some("pw")));
    let tls = || mysql::Conn::new(tls_opts(&srv).user(Some("sec")).pass(Some("pw")));
    let e = plain().unwrap_err();
    assert!(
        e.to_string()
            .contains("Access denied for user 'sec'@'127.0.0.1' (using password: YES)"),
        "{e}"
    );
    let mut c = tls().expect("REQUIRE SSL over TLS");
    assert!(!session_status(&mut c, "Ssl_cipher").is_empty());
    let (code, _, err) = run(mariadb(
        &srv,
        "sec",
        &["-ppw", "--skip-ssl", "-e", "SELECT 1"],
    ));
    assert_ne!(code, 0);
    assert!(err.contains("1045"), "{err}");
    let (code, out, err) = run(mariadb(&srv, "sec", &["-ppw", "--ssl", "-e", "SELECT 2"]));
    assert_eq!((code, out.trim()), (0, "2"), "{err}");
    root.query_drop("ALTER USER 'sec'@'%' REQUIRE NONE")
        .unwrap();
    plain().expect("REQUIRE NONE over plain TCP");
    root.query_drop("ALTER USER 'sec'@'%' IDENTIFIED BY 'pw2' REQUIRE SSL")
        .unwrap();
    assert!(tls().is_err(), "old password after ALTER USER");
    let e = mysql::Conn::new(srv.mysql_opts().user(Some("sec")).pass(Some("pw2"))).unwrap_err();
    assert!(e.to_string().contains("1045"), "{e}");
    mysql::Conn::new(tls_opts(&srv).user(Some("sec")).pass(Some("pw2"))).unwrap();
    let e = root
        .query_drop("ALTER USER 'nobody'@'%' REQUIRE SSL")
        .unwrap_err();
    assert!(e.to_string().contains("1396"), "{e}");
    root.query_drop("ALTER USER IF EXISTS 'nobody'@'%' REQUIRE SSL")
        .unwrap();
}

#[test]
fn many_tls_clients_on_the_pool_lose_nothing() {
    const CLIENTS: usize = 64;
    const QUERIES: usize = 200;
    let srv = Shoal::start(
        "tls-many",
        &[
            "--thread-handling=pool-of-threads",
            "--thread-pool-size=2",
            "--max-connections=200",
        ],
    );
    let opts = tls_opts(&srv);
    let barrier = Arc::new(std::sync::Barrier::new(CLIENTS));
    let threads: Vec<_> = (0..CLIENTS)
        .map(|t| {
            let opts = opts.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut c = mysql::Conn::new(opts).expect("TLS connect");
                barrier.wait();
                let stmt = c.prep("SELECT ?, LENGTH(?)").unwrap();
                let mut done = 0;
                for q in 0..QUERIES {
                    let v = (t * 100_000 + q) as i64;
                    if q % 50 == 7 {
                        // Now and then a reply of several TLS records.
                        let big = "b".repeat(40_000 + q);
                        let (x, n): (i64, usize) = c.exec_first(&stmt, (v, &big)).unwrap().unwrap();
                        assert_eq!((x, n), (v, big.len()));
                    } else {
                        let r: i64 = c.query_first(format!("SELECT {v} + 1")).unwrap().unwrap();
                        assert_eq!(r, v + 1);
                    }
                    done += 1;
                }
                done
            })
        })
        .collect();
    let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(total, CLIENTS * QUERIES);
    let mut c = srv.conn();
    assert!(global_status(&mut c, "Ssl_finished_accepts") >= CLIENTS as u64);
    assert_eq!(global_status(&mut c, "Threadpool_recovered_events"), 0);
}

// ----- a raw TLS client (rustls) ------------------------------------------------------------

const CLIENT_SSL: u32 = 0x0800;
const RAW_CAPS: u32 = 0x0200 | 0x8000 | 0x0008_0000 | 0x1 | 0x2000 | 0x0002_0000;

fn ssl_request() -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&(RAW_CAPS | CLIENT_SSL).to_le_bytes());
    p.extend_from_slice(&(16u32 << 20).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0u8; 23]);
    p
}

fn login_payload(user: &str) -> Vec<u8> {
    let mut p = ssl_request();
    p.extend_from_slice(user.as_bytes());
    p.push(0);
    p.push(0);
    p.extend_from_slice(b"mysql_native_password\0");
    p
}

fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut w = Vec::new();
    w.extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
    w.push(seq);
    w.extend_from_slice(payload);
    w
}

fn read_packet(r: &mut impl Read) -> (u8, Vec<u8>) {
    let mut h = [0u8; 4];
    r.read_exact(&mut h).expect("packet header");
    let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
    let mut p = vec![0u8; len];
    r.read_exact(&mut p).expect("packet body");
    (h[3], p)
}

fn client_config(ca: &Path) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// Greeting read, SSLRequest sent, TLS established, logged in as root: the TLS stream.
fn raw_tls_login(srv: &Shoal) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let mut raw = Raw::connect(srv.port);
    let (_, g) = raw.read_packet().unwrap();
    let nul = g[1..].iter().position(|&b| b == 0).unwrap();
    let caps = u16::from_le_bytes([g[1 + nul + 1 + 4 + 9], g[1 + nul + 1 + 4 + 10]]);
    assert_ne!(u32::from(caps) & CLIENT_SSL, 0, "CLIENT_SSL not offered");
    raw.write_packet(1, &ssl_request()).unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(client_config(&ca_of(srv)), name).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, raw.s);
    tls.write_all(&packet(2, &login_payload("root"))).unwrap();
    let (seq, ok) = read_packet(&mut tls);
    assert_eq!((seq, ok[0]), (3, 0), "{:?}", String::from_utf8_lossy(&ok));
    tls
}

#[test]
fn pipelined_commands_in_one_tls_record_are_all_answered() {
    for h in HANDLERS {
        let srv = Shoal::start("tls-pipe", &[&handler_arg(h)]);
        let mut tls = raw_tls_login(&srv);
        // Forty queries in one write (one TLS record): after the first is run, the other 39
        // are decrypted and buffered while the socket has nothing more to read.
        let mut batch = Vec::new();
        for i in 0..40 {
            let mut q = vec![0x03];
            q.extend_from_slice(format!("SELECT {i}").as_bytes());
            batch.extend(packet(0, &q));
        }
        tls.write_all(&batch).unwrap();
        tls.flush().unwrap();
        for i in 0..40 {
            let (_, count) = read_packet(&mut tls);
            assert_eq!(count, [1], "{h}");
            read_packet(&mut tls); // column definition
            assert_eq!(read_packet(&mut tls).1[0], 0xFE);
            let (_, row) = read_packet(&mut tls);
            assert_eq!(&row[1..], i.to_string().as_bytes(), "{h}: reply {i}");
            assert_eq!(read_packet(&mut tls).1[0], 0xFE);
        }
        // COM_QUIT inside TLS closes cleanly.
        tls.write_all(&packet(0, &[0x01])).unwrap();
        let mut rest = Vec::new();
        let _ = tls.read_to_end(&mut rest);
        assert!(rest.is_empty(), "{h}: bytes after COM_QUIT");
    }
}

#[test]
fn stalled_tls_handshakes_do_not_block_the_pool() {
    let srv = Shoal::start(
        "tls-stall",
        &[
            "--thread-handling=pool-of-threads",
            "--thread-pool-size=1",
            "--thread-pool-max-threads=1",
            // A worker blocked on a stalled client would get no help for a minute (no stall
            // detection) and the stalled clients are not timed out before then.
            "--thread-pool-stall-limit=60000",
            "--connect-timeout=60",
        ],
    );
    // One client stops after the SSLRequest, one in the middle of its ClientHello record, one
    // after a complete ClientHello (the server's reply unread).
    let mut stalled = Vec::new();
    for cut in [0usize, 40, usize::MAX] {
        let mut raw = Raw::connect(srv.port);
        raw.read_packet().unwrap();
        raw.write_packet(1, &ssl_request()).unwrap();
        if cut > 0 {
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
            let mut conn =
                rustls::ClientConnection::new(client_config(&ca_of(&srv)), name).unwrap();
            let mut hello = Vec::new();
            conn.write_tls(&mut hello).unwrap();
            raw.s.write_all(&hello[..cut.min(hello.len())]).unwrap();
        }
        stalled.push(raw);
    }
    // With one pool thread (at most two: the pool may add one), any of them blocking a
    // worker would stop these.
    let deadline = Instant::now() + Duration::from_secs(30);
    for round in 0..3 {
        let mut c = mysql::Conn::new(
            tls_opts(&srv)
                .read_timeout(Some(Duration::from_secs(20)))
                .tcp_connect_timeout(Some(Duration::from_secs(20))),
        )
        .unwrap_or_else(|e| panic!("round {round}: {e}"));
        let v: i64 = c.query_first("SELECT 40 + 2").unwrap().unwrap();
        assert_eq!(v, 42);
        let mut p = srv.conn();
        let v: i64 = p.query_first("SELECT 1").unwrap().unwrap();
        assert_eq!(v, 1);
        assert!(
            Instant::now() < deadline,
            "too slow: a stalled handshake held the pool"
        );
    }
    let mut c = srv.conn();
    assert!(global_status(&mut c, "Threadpool_threads") <= 2);
    assert_eq!(global_status(&mut c, "Threadpool_stalls"), 0);
    drop(stalled);
}

#[test]
fn garbage_instead_of_a_client_hello_closes_only_that_connection() {
    for h in HANDLERS {
        let srv = Shoal::start("tls-garbage", &[&handler_arg(h)]);
        let mut c = srv.conn();
        let aborted = global_status(&mut c, "Aborted_connects");
        let mut raw = Raw::connect(srv.port);
        raw.read_packet().unwrap();
        raw.write_packet(1, &ssl_request()).unwrap();
        raw.s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        let mut rest = Vec::new();
        let _ = raw.s.read_to_end(&mut rest); // an alert at most, then end of file
        let deadline = Instant::now() + Duration::from_secs(20);
        while global_status(&mut c, "Aborted_connects") == aborted {
            assert!(Instant::now() < deadline, "{h}: not counted");
            std::thread::sleep(Duration::from_millis(20));
        }
        let v: i64 = c.query_first("SELECT 3").unwrap().unwrap();
        assert_eq!(v, 3);
        // A plain login that claims SSL inside... is refused as a bad handshake.
        let mut raw = Raw::connect(srv.port);
        raw.read_packet().unwrap();
        raw.write_packet(1, &login_payload("root")).unwrap();
        let (_, e) = raw.read_packet().unwrap();
        assert_eq!(err_code(&e), 1043, "{h}");
    }
}
