//! Real clients against the real binary: the `mariadb` CLI, PyMySQL, mysql-connector-python
//! (also `cursor(prepared=True)`), the Rust `mysql` crate, sysbench; plus wrong password,
//! a client vanishing mid-result, the idle timeout (4031) and many concurrent connections.
//! These need the session layer (login and SQL).

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use mysql::prelude::*;
use support::{cpu_time, err_code, global_status as status, venv_python, Raw, Shoal};

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.stdin(Stdio::null()).output().expect("run client");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn mariadb(srv: &Shoal) -> Command {
    let mut c = Command::new("mariadb");
    c.args([
        "--no-defaults",
        "-h127.0.0.1",
        &format!("-P{}", srv.port),
        "-uroot",
        "--connect-timeout=10",
    ]);
    c
}

#[test]
fn mariadb_cli_execute_and_batch() {
    let srv = Shoal::start("cli", &[]);
    let (code, out, err) = run(mariadb(&srv).args(["-N", "-e", "SELECT 1+1"]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "2");
    // Batch mode from stdin.
    let mut child = mariadb(&srv)
        .arg("--batch")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"SELECT 40+2 AS answer;\nSELECT DATABASE();\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(s.contains("answer\n42"), "{s}");
    // Over the Unix socket.
    let (code, out, err) = run(Command::new("mariadb").args([
        "--no-defaults",
        &format!("--socket={}", srv.socket.display()),
        "-uroot",
        "-N",
        "-e",
        "SELECT 3",
    ]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "3");
    // Wrong password: 1045.
    let (code, _, err) = run(mariadb(&srv).args(["-pwrong", "-e", "SELECT 1"]));
    assert_ne!(code, 0);
    assert!(err.contains("1045"), "{err}");
}

#[test]
fn mariadb_cli_interactive_chatter() {
    // `script` gives the client a tty, so it behaves interactively: @@version_comment,
    // show databases / show tables, COM_FIELD_LIST (auto-rehash), SELECT DATABASE(), COM_INIT_DB.
    let srv = Shoal::start("interactive", &[]);
    let cmd = format!(
        "mariadb --no-defaults -h127.0.0.1 -P{} -uroot --auto-rehash",
        srv.port
    );
    let mut child = Command::new("timeout")
        .args(["30", "script", "-qec", &cmd, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        for line in [
            "CREATE DATABASE IF NOT EXISTS d1;\n",
            "use d1\n",
            "SELECT 5*5;\n",
            "quit\n",
        ] {
            std::thread::sleep(Duration::from_millis(300));
            stdin.write_all(line.as_bytes()).unwrap();
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let o = child.wait_with_output().unwrap();
    let (code, out, err) = (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Welcome"), "{out}");
    assert!(out.contains("Database changed"), "{out}");
    assert!(out.contains("25"), "{out}");
    assert!(!out.contains("ERROR"), "{out}");
}

#[test]
fn rust_mysql_crate_text_and_binary() {
    let srv = Shoal::start("rustclient", &[]);
    let mut c = mysql::Conn::new(srv.mysql_opts()).unwrap();
    let v: Option<i64> = c.query_first("SELECT 1 + 2").unwrap();
    assert_eq!(v, Some(3));
    let v: Option<String> = c.query_first("SELECT CONCAT('a', 'b')").unwrap();
    assert_eq!(v.as_deref(), Some("ab"));
    let v: Option<(i64, String)> = c.exec_first("SELECT ? + 1, ?", (41, "x")).unwrap();
    assert_eq!(v, Some((42, "x".to_string())));
    let e = c.query_drop("SELEC 1").unwrap_err();
    assert!(e.to_string().contains("1064"), "{e}");
    c.ping().unwrap();
    let id: Option<u64> = c.query_first("SELECT CONNECTION_ID()").unwrap();
    assert_eq!(id, Some(c.connection_id() as u64));
    // Wrong password.
    let e = mysql::Conn::new(srv.mysql_opts().pass(Some("nope"))).unwrap_err();
    assert!(e.to_string().contains("1045"), "{e}");
}

#[test]
fn python_clients() {
    let Some(py) = venv_python() else {
        panic!("/var/tmp/shoal-venv missing: run scripts/deps.sh");
    };
    let srv = Shoal::start("python", &[]);
    let script = format!(
        r#"
import pymysql, mysql.connector
c = pymysql.connect(host="127.0.0.1", port={port}, user="root", password="")
cur = c.cursor()
cur.execute("SELECT 1 + %s", (41,))
assert cur.fetchone()[0] == 42
try:
    cur.execute("SELEC 1")
    raise SystemExit("no error")
except pymysql.err.ProgrammingError as e:
    assert e.args[0] == 1064, e
c.commit()
c.close()
m = mysql.connector.connect(host="127.0.0.1", port={port}, user="root", password="")
cur = m.cursor()
cur.execute("SELECT 2 * 21")
assert cur.fetchone()[0] == 42
pc = m.cursor(prepared=True)
pc.execute("SELECT ? + 1, ?", (41, "x"))
row = pc.fetchone()
assert int(row[0]) == 42 and row[1] in ("x", b"x"), row
pc.execute("SELECT ? + 1, ?", (1, "y"))
row = pc.fetchone()
assert int(row[0]) == 2, row
m.ping(reconnect=False)
m.close()
print("python ok")
"#,
        port = srv.port
    );
    let (code, out, err) = run(Command::new(py).args(["-c", &script]));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("python ok"));
}

#[test]
fn sysbench_connects_and_fails_only_on_tables() {
    let srv = Shoal::start("sysbench", &[]);
    let (_, out, err) = run(Command::new("timeout").args([
        "60",
        "sysbench",
        "oltp_read_only",
        "--mysql-host=127.0.0.1",
        &format!("--mysql-port={}", srv.port),
        "--mysql-user=root",
        "--mysql-db=sbtest",
        "--tables=1",
        "--time=2",
        "--threads=1",
        "run",
    ]));
    let all = format!("{out}{err}");
    // Connected and got as far as the statements needing sbtest1.
    assert!(
        all.contains("1146") || all.contains("1235") || all.contains("1049"),
        "{all}"
    );
    assert!(!all.contains("Can't connect"), "{all}");
}

#[test]
fn client_vanishing_mid_result_and_idle_timeout() {
    let srv = Shoal::start("vanish", &["--wait-timeout=2"]);
    // A client sends a query whose result is large and disappears without reading it.
    for _ in 0..3 {
        let mut c = mysql::Conn::new(srv.mysql_opts()).unwrap();
        let _: Option<String> = c.query_first("SELECT 1").unwrap();
        let mut r = Raw::connect(srv.port);
        r.greeting();
        r.send_login("root");
        let (_, ok) = r.read_packet().unwrap();
        assert_eq!(ok[0], 0, "{ok:?}");
        r.write_packet(0, b"\x03SELECT REPEAT('x', 4000000)")
            .unwrap();
        drop(r);
    }
    // The server keeps serving.
    let mut c = mysql::Conn::new(srv.mysql_opts()).unwrap();
    let v: Option<i64> = c.query_first("SELECT 7").unwrap();
    assert_eq!(v, Some(7));
    // An idle connection gets 4031 after wait_timeout, then EOF.
    let mut r = Raw::logged_in(srv.port, "root");
    let t = std::time::Instant::now();
    let (_, p) = r.read_packet().expect("4031 packet");
    assert_eq!(err_code(&p), 4031);
    assert!(t.elapsed() >= Duration::from_millis(1500));
    assert!(r.read_packet().is_none());
}

#[test]
fn many_concurrent_connections() {
    let srv = Shoal::start("many", &["--max-connections=400"]);
    let port = srv.port;
    let handles: Vec<_> = (0..16)
        .map(|t| {
            std::thread::spawn(move || {
                let mut conns: Vec<mysql::Conn> = (0..20)
                    .map(|_| {
                        mysql::Conn::new(
                            mysql::OptsBuilder::new()
                                .ip_or_hostname(Some("127.0.0.1"))
                                .tcp_port(port)
                                .user(Some("root"))
                                .prefer_socket(false),
                        )
                        .unwrap()
                    })
                    .collect();
                for (i, c) in conns.iter_mut().enumerate() {
                    let v: Option<i64> = c.query_first(format!("SELECT {t} * 1000 + {i}")).unwrap();
                    assert_eq!(v, Some(t * 1000 + i as i64));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn thread_cache_and_network_counters() {
    // The thread cache is one-thread-per-connection's (the pool keeps its own workers).
    let srv = Shoal::start(
        "counters",
        &[
            "--thread-handling=one-thread-per-connection",
            "--thread-cache-size=4",
        ],
    );
    let mut admin = mysql::Conn::new(srv.mysql_opts()).unwrap();
    let created0 = status(&mut admin, "Threads_created");
    let bytes0 = status(&mut admin, "Bytes_received");
    let conns0 = status(&mut admin, "Connections");
    // Sequential short connections reuse cached threads.
    for _ in 0..5 {
        let mut c = mysql::Conn::new(srv.mysql_opts()).unwrap();
        let _: Option<i64> = c.query_first("SELECT 1").unwrap();
        drop(c);
        std::thread::sleep(Duration::from_millis(50));
    }
    let created = status(&mut admin, "Threads_created");
    assert!(
        created - created0 <= 2,
        "threads not reused: {created0} -> {created}"
    );
    assert!(status(&mut admin, "Threads_cached") >= 1);
    assert!(status(&mut admin, "Connections") >= conns0 + 5);
    assert!(status(&mut admin, "Bytes_received") > bytes0);
    assert!(status(&mut admin, "Bytes_sent") > 0);
    // A client that disconnects without COM_QUIT counts as an aborted client; a failed login
    // as an aborted connect.
    let ac0 = status(&mut admin, "Aborted_clients");
    let an0 = status(&mut admin, "Aborted_connects");
    let r = Raw::logged_in(srv.port, "root");
    drop(r);
    let _ = mysql::Conn::new(srv.mysql_opts().pass(Some("bad")));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(status(&mut admin, "Aborted_clients"), ac0 + 1);
    assert_eq!(status(&mut admin, "Aborted_connects"), an0 + 1);
}

#[test]
fn flush_status_zeroes_the_cumulative_counters() {
    let srv = Shoal::start("flushstatus", &[]);
    let mut admin = mysql::Conn::new(srv.mysql_opts()).unwrap();
    // Three connections at once, two of them gone again: Max_used_connections stays at 3 until
    // FLUSH STATUS lowers it to the connections open then.
    let extra: Vec<mysql::Conn> = (0..2)
        .map(|_| mysql::Conn::new(srv.mysql_opts()).unwrap())
        .collect();
    for _ in 0..5 {
        let _: Option<i64> = admin.query_first("SELECT 1").unwrap();
    }
    drop(extra);
    std::thread::sleep(Duration::from_millis(200));
    assert!(status(&mut admin, "Max_used_connections") >= 3);
    assert!(status(&mut admin, "Com_select") >= 5);
    let conns = status(&mut admin, "Connections");
    let sent = status(&mut admin, "Bytes_sent");
    std::thread::sleep(Duration::from_millis(1100));
    assert!(status(&mut admin, "Uptime_since_flush_status") >= 1);
    admin.query_drop("FLUSH STATUS").unwrap();
    assert_eq!(status(&mut admin, "Com_select"), 0);
    assert_eq!(status(&mut admin, "Max_used_connections"), 1);
    assert_eq!(status(&mut admin, "Uptime_since_flush_status"), 0);
    // Since the flush: an OK packet and three small result sets, less than before it.
    assert!(status(&mut admin, "Bytes_sent") < sent);
    // Each SHOW STATUS since the flush is one question (the flush's own was reset with it).
    assert_eq!(status(&mut admin, "Questions"), 5);
    // Totals MySQL does not reset.
    assert_eq!(status(&mut admin, "Connections"), conns);
    assert!(status(&mut admin, "Uptime") >= 1);
    // Counting resumes; MariaDB 11.5's FLUSH GLOBAL STATUS is the same reset.
    let _: Option<i64> = admin.query_first("SELECT 2").unwrap();
    assert_eq!(status(&mut admin, "Com_select"), 1);
    admin.query_drop("FLUSH GLOBAL STATUS").unwrap();
    assert_eq!(status(&mut admin, "Com_select"), 0);
    // There are no per-session counters to reset: refused rather than resetting the global.
    let e = admin.query_drop("FLUSH SESSION STATUS").unwrap_err();
    assert!(e.to_string().contains("1235"), "{e}");
}

#[test]
fn com_field_list_replies_without_breaking_the_connection() {
    let srv = Shoal::start("fieldlist", &[]);
    let mut r = Raw::logged_in(srv.port, "root");
    // COM_FIELD_LIST of a table that does not exist: an ERR (1146/1046), not a hang.
    r.write_packet(0, b"\x04nosuchtable\x00").unwrap();
    let (seq, p) = r.read_packet().unwrap();
    assert_eq!(seq, 1);
    assert!(p[0] == 0xFF || p[0] == 0xFE || p[0] < 0xFB, "{p:?}");
    if p[0] != 0xFF {
        // Column definitions until EOF.
        loop {
            let (_, p) = r.read_packet().unwrap();
            if p[0] == 0xFE {
                break;
            }
        }
    }
    r.write_packet(0, b"\x0e").unwrap();
    assert_eq!(r.read_packet().unwrap().1[0], 0);
}

fn code_of<T: std::fmt::Debug>(r: mysql::Result<T>) -> u16 {
    match r {
        Err(mysql::Error::MySqlError(e)) => e.code,
        other => panic!("expected a server error, got {other:?}"),
    }
}

/// `max_execution_time` (ms, SELECT only) stops CPU-bound expressions and long table scans with
/// 3024, lets a lone SLEEP() return 1 as MySQL does, and leaves other statements alone; KILL QUERY
/// now interrupts a long scan too (1317).
#[test]
fn max_execution_time_and_kill_query_stop_long_selects() {
    let srv = Shoal::start("maxexec", &[]);
    let mut c = mysql::Conn::new(srv.mysql_opts()).unwrap();
    c.query_drop("CREATE DATABASE m").unwrap();
    c.query_drop("CREATE TABLE m.t (id INT PRIMARY KEY, v INT)")
        .unwrap();
    for chunk in 0..20 {
        let values: Vec<String> = (0..500)
            .map(|i| format!("({}, {})", chunk * 500 + i, i))
            .collect();
        c.query_drop(format!("INSERT INTO m.t VALUES {}", values.join(",")))
            .unwrap();
    }
    // A scan that is slow without any interruptible function: ~0.5 ms of CPU (memset) per row,
    // about 5 s of CPU for 10,000 rows. Only the scan loop's own check can stop it early. Time is
    // measured as the server's CPU time, not wall time: a loaded machine stretches wall time
    // (a 300 ms deadline can pass while the scan gets a sliver of a core), never the CPU a stopped
    // scan used.
    let slow_scan = "SELECT COUNT(*) FROM m.t WHERE LENGTH(REPEAT('x', 4000000 + v)) > 0";
    let pid = srv.child.as_ref().unwrap().id();
    let cpu = || cpu_time(pid);
    c.query_drop("SET SESSION max_execution_time = 300")
        .unwrap();
    let before = cpu();
    assert_eq!(code_of(c.query_drop(slow_scan)), 3024);
    let used = cpu() - before;
    assert!(
        used < Duration::from_millis(2500),
        "the stopped scan used {used:?} of CPU (the whole scan: about 5 s)"
    );
    let before = cpu();
    assert_eq!(
        code_of(c.query_drop("SELECT BENCHMARK(1000000000000, 1 + 1)")),
        3024
    );
    let used = cpu() - before;
    assert!(
        used < Duration::from_secs(4),
        "BENCHMARK used {used:?} of CPU"
    );
    // A lone SLEEP() interrupted returns 1; not interrupted it would take 60 s.
    let t = std::time::Instant::now();
    let v: Option<i64> = c.query_first("SELECT SLEEP(60)").unwrap();
    assert_eq!(v, Some(1), "an interrupted lone SLEEP() returns 1");
    assert!(t.elapsed() < Duration::from_secs(50), "{:?}", t.elapsed());
    // Fast statements are unaffected, and the limit does not apply to other statements.
    let n: Option<i64> = c.query_first("SELECT COUNT(*) FROM m.t").unwrap();
    assert_eq!(n, Some(10_000));
    c.query_drop("DO SLEEP(0)").unwrap();
    c.query_drop("UPDATE m.t SET v = v + 1 WHERE id < 3 AND SLEEP(0.2) = 0")
        .unwrap();
    let s: Option<i64> = c
        .query_first("SELECT SUM(v) FROM m.t WHERE id < 3")
        .unwrap();
    assert_eq!(
        s,
        Some(1 + 2 + 3),
        "UPDATE ran past 300 ms and was not stopped"
    );
    // KILL QUERY reaches a long scan (no limit this time): 1317, and the connection lives on.
    // The killer waits until the scan is seen running (process list), not a fixed time.
    c.query_drop("SET SESSION max_execution_time = 0").unwrap();
    let id = c.connection_id();
    let opts = srv.mysql_opts();
    let killer = std::thread::spawn(move || {
        let mut k = mysql::Conn::new(opts).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            let rows: Vec<mysql::Row> = k.query("SHOW PROCESSLIST").unwrap();
            let running = rows.iter().any(|r| {
                r.get::<u64, _>("Id") == Some(id as u64)
                    && r.get::<Option<String>, _>("Info")
                        .flatten()
                        .is_some_and(|q| q.contains("REPEAT"))
            });
            if running {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the scan never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        k.query_drop(format!("KILL QUERY {id}")).unwrap();
    });
    let before = cpu();
    assert_eq!(code_of(c.query_drop(slow_scan)), 1317);
    let used = cpu() - before;
    assert!(
        used < Duration::from_millis(2500),
        "the killed scan used {used:?} of CPU (the whole scan: about 5 s)"
    );
    killer.join().unwrap();
    let v: Option<i64> = c.query_first("SELECT 7").unwrap();
    assert_eq!(v, Some(7));
}
