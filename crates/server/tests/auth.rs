//! Authentication against the real binary with real clients: `caching_sha2_password` (fast
//! path, full authentication in clear over TLS and the Unix socket, RSA-encrypted without TLS,
//! the public key on request) with PyMySQL, the Rust `mysql` crate and the `mariadb` CLI (its
//! `caching_sha2_password` client plugin), `default_authentication_plugin`, auth switches both
//! ways, wrong passwords; the first start's root password (generated and logged, or none with
//! `--initialize-insecure`); the metrics port's address and credentials.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use support::{free_port, global_status, venv_python, Shoal};

fn run(cmd: &mut Command) -> (i32, String, String) {
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

/// PyMySQL login as `user`/`password`; `how` is `tcp`, `tls` or `socket`. Prints
/// `CURRENT_USER()` or `ERR <code>`.
fn pymysql(srv: &Shoal, user: &str, password: &str, how: &str) -> String {
    let py = venv_python().expect("the venv /var/tmp/shoal-venv (PyMySQL, cryptography)");
    let script = r#"
import sys, pymysql
port, user, pw, how, sock, ca = sys.argv[1:7]
kw = dict(user=user, password=pw, connect_timeout=10)
if how == "socket":
    kw["unix_socket"] = sock
else:
    kw.update(host="127.0.0.1", port=int(port))
if how == "tls":
    kw["ssl"] = {"ca": ca}
try:
    c = pymysql.connect(**kw)
    cur = c.cursor()
    cur.execute("SELECT CURRENT_USER()")
    print(cur.fetchone()[0])
except pymysql.err.OperationalError as e:
    print("ERR", e.args[0])
"#;
    let (code, out, err) = run(Command::new(py).args([
        "-c",
        script,
        &srv.port.to_string(),
        user,
        password,
        how,
        &srv.socket.display().to_string(),
        &ca_of(srv).display().to_string(),
    ]));
    assert_eq!(code, 0, "pymysql: {err}");
    out.trim().to_string()
}

/// The Rust `mysql` crate's login; `Ok(CURRENT_USER())` or the server's error code.
fn rust_login(srv: &Shoal, user: &str, password: &str, tls: bool) -> Result<String, u16> {
    let mut opts = srv.mysql_opts().user(Some(user)).pass(Some(password));
    if tls {
        opts = opts.ssl_opts(Some(
            mysql::SslOpts::default().with_root_cert_path(Some(ca_of(srv))),
        ));
    }
    match mysql::Conn::new(opts) {
        Ok(mut c) => Ok(c.query_first("SELECT CURRENT_USER()").unwrap().unwrap()),
        Err(mysql::Error::MySqlError(e)) => Err(e.code),
        Err(e) => panic!("mysql crate: {e}"),
    }
}

/// `(fast, full)`: `Caching_sha2_password_fast_auths` / `_full_auths`.
fn sha2_counts(c: &mut mysql::Conn) -> (u64, u64) {
    (
        global_status(c, "Caching_sha2_password_fast_auths"),
        global_status(c, "Caching_sha2_password_full_auths"),
    )
}

fn mariadb_cli(srv: &Shoal, user: &str, password: &str, extra: &[&str]) -> (i32, String, String) {
    run(Command::new("mariadb")
        .args([
            "--no-defaults",
            "-h127.0.0.1",
            &format!("-P{}", srv.port),
            &format!("-u{user}"),
            &format!("-p{password}"),
            "--connect-timeout=10",
            "-N",
        ])
        .args(extra)
        .args(["-e", "SELECT CURRENT_USER()"]))
}

#[test]
fn caching_sha2_password_with_pymysql_the_rust_crate_and_the_mariadb_cli() {
    let srv = Shoal::start("auth-sha2", &[]);
    let mut root = srv.conn();
    root.query_drop("CREATE USER sha@'%' IDENTIFIED WITH caching_sha2_password BY 'pw1'")
        .unwrap();
    let (plugin, stored): (String, String) = root
        .query_first("SELECT plugin, authentication_string FROM mysql.user WHERE User = 'sha'")
        .unwrap()
        .unwrap();
    assert_eq!(plugin, "caching_sha2_password");
    assert!(stored.starts_with("$A$005$"), "{stored}");
    assert_eq!(stored.len(), 70, "{stored}");
    assert_eq!(sha2_counts(&mut root), (0, 0));

    // PyMySQL without TLS: switched from mysql_native_password (the greeting's plugin), then
    // full authentication with the public key asked for and the password RSA-encrypted.
    assert_eq!(pymysql(&srv, "sha", "pw1", "tcp"), "sha@%");
    assert_eq!(sha2_counts(&mut root), (0, 1));
    // The second login takes the fast path.
    assert_eq!(pymysql(&srv, "sha", "pw1", "tcp"), "sha@%");
    assert_eq!(sha2_counts(&mut root), (1, 1));
    // A wrong password: the scramble does not match the cache, full authentication, 1045.
    assert_eq!(pymysql(&srv, "sha", "wrong", "tcp"), "ERR 1045");
    assert_eq!(pymysql(&srv, "sha", "", "tcp"), "ERR 1045");
    assert_eq!(pymysql(&srv, "nobody", "pw1", "tcp"), "ERR 1045");
    assert_eq!(sha2_counts(&mut root), (1, 1));

    // A new password empties the account's cache entry (the plugin stays).
    root.query_drop("ALTER USER sha@'%' IDENTIFIED BY 'pw2'")
        .unwrap();
    let plugin: String = root
        .query_first("SELECT plugin FROM mysql.user WHERE User = 'sha'")
        .unwrap()
        .unwrap();
    assert_eq!(plugin, "caching_sha2_password");
    assert_eq!(pymysql(&srv, "sha", "pw1", "tcp"), "ERR 1045");
    // The Rust crate without TLS (RSA), then the fast path.
    assert_eq!(rust_login(&srv, "sha", "pw2", false).unwrap(), "sha@%");
    assert_eq!(sha2_counts(&mut root), (1, 2));
    assert_eq!(rust_login(&srv, "sha", "pw2", false).unwrap(), "sha@%");
    assert_eq!(sha2_counts(&mut root), (2, 2));
    assert_eq!(rust_login(&srv, "sha", "pw1", false), Err(1045));

    // Full authentication over TLS: the password in clear inside TLS.
    root.query_drop("SET PASSWORD FOR sha@'%' = 'pw3'").unwrap();
    assert_eq!(rust_login(&srv, "sha", "pw3", true).unwrap(), "sha@%");
    assert_eq!(sha2_counts(&mut root), (2, 3));
    root.query_drop("ALTER USER sha@'%' IDENTIFIED BY 'pw4'")
        .unwrap();
    assert_eq!(pymysql(&srv, "sha", "pw4", "tls"), "sha@%");
    assert_eq!(sha2_counts(&mut root), (2, 4));
    assert_eq!(pymysql(&srv, "sha", "pw4", "tls"), "sha@%");
    assert_eq!(sha2_counts(&mut root), (3, 4));
    // ... and over the Unix socket (secure transport: clear, as in MySQL).
    root.query_drop("ALTER USER sha@'%' IDENTIFIED BY 'pw5'")
        .unwrap();
    assert_eq!(pymysql(&srv, "sha", "pw5", "socket"), "sha@%");
    assert_eq!(sha2_counts(&mut root), (3, 5));

    // The mariadb CLI loads its caching_sha2_password client plugin for the switch; over TLS
    // it sends the password in clear, then takes the fast path.
    root.query_drop("ALTER USER sha@'%' IDENTIFIED BY 'pw6'")
        .unwrap();
    let (code, out, err) = mariadb_cli(&srv, "sha", "pw6", &["--ssl"]);
    assert_eq!((code, out.trim()), (0, "sha@%"), "{err}");
    assert_eq!(sha2_counts(&mut root), (3, 6));
    let (code, out, err) = mariadb_cli(&srv, "sha", "pw6", &["--skip-ssl"]);
    assert_eq!((code, out.trim()), (0, "sha@%"), "{err}");
    assert_eq!(sha2_counts(&mut root), (4, 6));
    let (code, _, err) = mariadb_cli(&srv, "sha", "bad", &["--ssl"]);
    assert_eq!(code, 1);
    assert!(err.contains("1045"), "{err}");

    // The stored form is MySQL's: copied with AS, the same password works.
    let stored: String = root
        .query_first("SELECT authentication_string FROM mysql.user WHERE User = 'sha'")
        .unwrap()
        .unwrap();
    root.query_drop(format!(
        "CREATE USER copy@'%' IDENTIFIED WITH caching_sha2_password AS '{stored}'"
    ))
    .unwrap();
    assert_eq!(rust_login(&srv, "copy", "pw6", false).unwrap(), "copy@%");
    let e = root
        .query_drop("CREATE USER bad@'%' IDENTIFIED WITH caching_sha2_password AS '$A$005$short'")
        .unwrap_err();
    assert!(
        matches!(e, mysql::Error::MySqlError(ref m) if m.code == 1827),
        "{e}"
    );
    let e = root
        .query_drop("CREATE USER bad@'%' IDENTIFIED WITH sha256_password BY 'x'")
        .unwrap_err();
    assert!(
        matches!(e, mysql::Error::MySqlError(ref m) if m.code == 1524),
        "{e}"
    );

    // Back to mysql_native_password; an account without password logs in at once.
    root.query_drop("ALTER USER sha@'%' IDENTIFIED WITH mysql_native_password BY 'n1'")
        .unwrap();
    assert_eq!(pymysql(&srv, "sha", "n1", "tcp"), "sha@%");
    root.query_drop("CREATE USER empty@'%' IDENTIFIED WITH caching_sha2_password")
        .unwrap();
    assert_eq!(rust_login(&srv, "empty", "", false).unwrap(), "empty@%");
    assert_eq!(pymysql(&srv, "empty", "", "tcp"), "empty@%");
    assert_eq!(pymysql(&srv, "empty", "x", "tcp"), "ERR 1045");

    // The public key is shown, and the key files were generated beside the certificates.
    let (_, key): (String, String) = root
        .query_first("SHOW GLOBAL STATUS LIKE 'Caching_sha2_password_rsa_public_key'")
        .unwrap()
        .unwrap();
    assert!(key.starts_with("-----BEGIN PUBLIC KEY-----"), "{key}");
    let data = srv.dir.join("data");
    assert_eq!(
        std::fs::read_to_string(data.join("public_key.pem")).unwrap(),
        key
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(data.join("private_key.pem"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(
            mode & 0o077,
            0,
            "private_key.pem readable by others: {mode:o}"
        );
    }
}

#[test]
fn default_authentication_plugin_caching_sha2_password() {
    let srv = Shoal::start(
        "auth-default",
        &[
            "--default-authentication-plugin=caching_sha2_password",
            "--thread-handling=pool-of-threads",
        ],
    );
    let mut root = srv.conn();
    let v: String = root
        .query_first("SELECT @@default_authentication_plugin")
        .unwrap()
        .unwrap();
    assert_eq!(v, "caching_sha2_password");
    // The fresh datadir's root uses it (with --initialize-insecure: no password).
    let plugin: String = root
        .query_first("SELECT plugin FROM mysql.user WHERE User = 'root'")
        .unwrap()
        .unwrap();
    assert_eq!(plugin, "caching_sha2_password");
    // New accounts use it; a native account is reached by a switch the other way.
    root.query_drop("CREATE USER d@'%' IDENTIFIED BY 'dpw'")
        .unwrap();
    root.query_drop("CREATE USER n@'%' IDENTIFIED WITH mysql_native_password BY 'npw'")
        .unwrap();
    let rows: Vec<(String, String)> = root
        .query("SELECT User, plugin FROM mysql.user WHERE User IN ('d', 'n') ORDER BY User")
        .unwrap();
    assert_eq!(
        rows,
        vec![
            ("d".into(), "caching_sha2_password".into()),
            ("n".into(), "mysql_native_password".into())
        ]
    );
    for _ in 0..2 {
        assert_eq!(pymysql(&srv, "d", "dpw", "tcp"), "d@%");
        assert_eq!(rust_login(&srv, "d", "dpw", false).unwrap(), "d@%");
        assert_eq!(pymysql(&srv, "n", "npw", "tcp"), "n@%");
        assert_eq!(rust_login(&srv, "n", "npw", false).unwrap(), "n@%");
        assert_eq!(rust_login(&srv, "n", "bad", false), Err(1045));
    }
    // First login full, the three others fast.
    assert_eq!(sha2_counts(&mut root), (3, 1));
    // A restart empties the cache (as MySQL's); the accounts and their plugins stay.
    drop(root);
    let dir = srv.dir.clone();
    let mut srv = srv;
    srv.stop();
    let srv2 = Shoal::start_in(
        &dir,
        &["--default-authentication-plugin=caching_sha2_password"],
    );
    assert_eq!(rust_login(&srv2, "d", "dpw", false).unwrap(), "d@%");
    let mut root = srv2.conn();
    assert_eq!(sha2_counts(&mut root), (0, 1));
    let (code, _, err) = support::run_shoal(&["--default-authentication-plugin=sha256_password"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("caching_sha2_password"), "{err}");
}

/// The password the first start wrote to the log.
fn logged_password(srv: &Shoal) -> String {
    let log = srv.stderr();
    let at = log
        .find("A temporary password is generated for root@localhost: ")
        .unwrap_or_else(|| panic!("no generated password in the log: {log}"));
    let rest = &log[at + "A temporary password is generated for root@localhost: ".len()..];
    rest.lines().next().unwrap().trim().to_string()
}

#[test]
fn first_start_generates_a_root_password_unless_initialize_insecure() {
    let dir = support::temp_dir("auth-first");
    let mut srv = Shoal::start_in(&dir, &["--skip-initialize-insecure"]);
    let pw = logged_password(&srv);
    assert_eq!(pw.len(), 20, "{pw:?}");
    // The empty password is refused; the logged one works (Rust crate, PyMySQL, CLI).
    assert_eq!(rust_login(&srv, "root", "", false), Err(1045));
    assert_eq!(
        rust_login(&srv, "root", &pw, false).unwrap(),
        "root@localhost"
    );
    assert_eq!(pymysql(&srv, "root", &pw, "tcp"), "root@localhost");
    let (code, out, err) = mariadb_cli(&srv, "root", &pw, &[]);
    assert_eq!((code, out.trim()), (0, "root@localhost"), "{err}");
    assert!(!srv.stderr().contains("NO PASSWORD"), "{}", srv.stderr());
    // A restart keeps it, and generates nothing new.
    srv.stop();
    let srv = Shoal::start_in(&dir, &["--skip-initialize-insecure"]);
    assert!(!srv.stderr().contains("temporary password"));
    assert_eq!(
        rust_login(&srv, "root", &pw, false).unwrap(),
        "root@localhost"
    );
    assert_eq!(rust_login(&srv, "root", "", false), Err(1045));

    // The development default: no password, and the log says so loudly.
    let insecure = Shoal::start("auth-insecure", &[]);
    let log = insecure.stderr();
    assert!(!log.contains("temporary password"), "{log}");
    assert!(
        log.contains("--initialize-insecure: account root@localhost has NO PASSWORD"),
        "{log}"
    );
    assert_eq!(
        rust_login(&insecure, "root", "", false).unwrap(),
        "root@localhost"
    );
    // --root-password chooses it instead.
    let chosen = Shoal::start(
        "auth-chosen",
        &["--skip-initialize-insecure", "--root-password=Ch0sen"],
    );
    assert!(!chosen.stderr().contains("temporary password"));
    assert_eq!(rust_login(&chosen, "root", "", false), Err(1045));
    assert_eq!(
        rust_login(&chosen, "root", "Ch0sen", false).unwrap(),
        "root@localhost"
    );
}

/// `GET /metrics` with extra header lines; the status code.
fn scrape(addr: (&str, u16), headers: &str) -> u16 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n{headers}\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let code = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("bad answer {out:?}"));
    if code == 200 {
        assert!(out.contains("mysql_up 1"), "{out}");
    }
    if code == 401 {
        assert!(out.contains("WWW-Authenticate: "), "{out}");
    }
    code
}

/// A non-loopback address of this machine, if it has one.
fn outside_address() -> Option<String> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback()).then(|| ip.to_string())
}

#[test]
fn metrics_port_is_loopback_and_asks_for_credentials() {
    let mport = free_port();
    let srv = Shoal::start(
        "auth-metrics",
        &[
            "--bind-address=0.0.0.0",
            &format!("--metrics-port={mport}"),
            "--metrics-token=s3cr3t-t0ken",
            "--metrics-basic-auth=prom:pr0m pw",
        ],
    );
    let lo = ("127.0.0.1", mport);
    assert_eq!(scrape(lo, ""), 401);
    assert_eq!(scrape(lo, "Authorization: Bearer s3cr3t-t0ken\r\n"), 200);
    assert_eq!(scrape(lo, "Authorization: Bearer s3cr3t-t0keN\r\n"), 401);
    // base64("prom:pr0m pw")
    assert_eq!(scrape(lo, "Authorization: Basic cHJvbTpwcjBtIHB3\r\n"), 200);
    assert_eq!(scrape(lo, "Authorization: Basic cHJvbTpwcjBt\r\n"), 401);
    // bind_address=0.0.0.0 does not move it: only loopback listens.
    if let Some(ip) = outside_address() {
        let refused = TcpStream::connect_timeout(
            &format!("{ip}:{mport}").parse().unwrap(),
            Duration::from_secs(5),
        );
        assert!(refused.is_err(), "metrics reachable on {ip}");
    }
    let mut c = srv.conn();
    let v: String = c.query_first("SELECT @@metrics_address").unwrap().unwrap();
    assert_eq!(v, "127.0.0.1");
    // Secrets are no variables.
    let rows: Vec<(String, String)> = c.query("SHOW VARIABLES LIKE 'metrics%'").unwrap();
    assert!(rows.iter().all(|(_, v)| !v.contains("s3cr3t")), "{rows:?}");

    // Without credentials configured, open (as before); --metrics-address moves it.
    let mport2 = free_port();
    let open = Shoal::start(
        "auth-metrics-open",
        &[
            &format!("--metrics-port={mport2}"),
            "--metrics-address=0.0.0.0",
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let addr = outside_address().unwrap_or_else(|| "127.0.0.1".into());
    while TcpStream::connect((addr.as_str(), mport2)).is_err() {
        assert!(Instant::now() < deadline, "metrics not on {addr}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(scrape((addr.as_str(), mport2), ""), 200);
    drop(open);
    let (code, _, err) = support::run_shoal(&["--metrics-basic-auth=nocolon", "--port=0"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("USER:PASSWORD"), "{err}");
}
