//! Closing connections: every connection a client closes (COM_QUIT, FIN, RST, half-close, in
//! the middle of a command, behind pipelined input) is closed by the server and leaves the
//! process list promptly, in both handlers and under every pool setting that changes how input
//! is noticed (lingering, edge-triggered sockets, work stealing, age balancing, a saturated and
//! stalled group). Afterwards no server socket is left in CLOSE-WAIT (a FIN the server never
//! read) and the pool's safety net (`Threadpool_recovered_events`) never had to act.
//!
//! The deterministic tests put input behind a command the client pipelined, while that command
//! runs (SLEEP): the input's only readiness report arrives while the connection is running and
//! must survive the connection being queued again for its buffered command. The randomized
//! test runs many clients in tight loops beside a CPU hog and closes them at random moments;
//! `scripts/close-stress.sh` runs it repeatedly, two copies at once, under a hog.

mod support;

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use rand::{Rng, SeedableRng};
use support::{global_status as status, Raw, Shoal};

/// The tests of this file run one at a time: the randomized one brings its own CPU hog, and
/// 128 sysbench threads logging in beside it and the suite's own hog could miss sysbench's
/// fixed 30-second start-up limit.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Server sockets on `port` in CLOSE-WAIT: the client's FIN arrived, the server never closed.
fn close_wait_sockets(port: u16) -> usize {
    let mut n = 0;
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() < 4 {
                continue;
            }
            let local_port = cols[1]
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            // 08 = TCP_CLOSE_WAIT
            if local_port == Some(port) && cols[3] == "08" {
                n += 1;
            }
        }
    }
    n
}

/// Polls `f` until it holds or `secs` pass; returns how long it took, or `None`.
fn poll_until(secs: u64, mut f: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    loop {
        if f() {
            return Some(start.elapsed());
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What the server still holds, for a failure message.
fn diagnosis(c: &mut mysql::Conn, port: u16) -> String {
    // (id, user, command, time, state, info)
    type Row = (u64, String, String, u64, Option<String>, Option<String>);
    let rows: Vec<Row> = c
        .query::<mysql::Row, _>("SHOW FULL PROCESSLIST")
        .map(|rows| {
            rows.into_iter()
                .map(|r| {
                    (
                        r.get::<u64, _>(0).unwrap_or(0),
                        r.get::<String, _>(1).unwrap_or_default(),
                        r.get::<String, _>(4).unwrap_or_default(),
                        r.get::<u64, _>(5).unwrap_or(0),
                        r.get::<Option<String>, _>(6).unwrap_or(None),
                        r.get::<Option<String>, _>(7).unwrap_or(None),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let pool: Vec<(String, String)> = c
        .query("SHOW GLOBAL STATUS LIKE 'Threadpool%'")
        .unwrap_or_default();
    format!(
        "Threads_connected {}, CLOSE-WAIT {}\nprocess list: {rows:?}\npool: {pool:?}",
        status(c, "Threads_connected"),
        close_wait_sockets(port)
    )
}

/// Waits until the monitoring connection `c` is the only one left and no server socket is in
/// CLOSE-WAIT; checks that the pool's safety net never acted. Returns how long the wait took.
fn assert_all_closed(c: &mut mysql::Conn, s: &Shoal, pool: bool, what: &str) -> Duration {
    let port = s.port;
    let took = poll_until(30, || status(c, "Threads_connected") == 1);
    let Some(took) = took else {
        panic!("{what}: connections left open\n{}", diagnosis(c, port));
    };
    assert!(
        poll_until(30, || close_wait_sockets(port) == 0).is_some(),
        "{what}: sockets left in CLOSE-WAIT\n{}",
        diagnosis(c, port)
    );
    if pool {
        assert_eq!(
            status(c, "Threadpool_recovered_events"),
            0,
            "{what}: the safety net found readable idle connections epoll never reported\n{}\n{}",
            diagnosis(c, port),
            s.stderr()
        );
    }
    took
}

fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut w = Vec::with_capacity(payload.len() + 4);
    w.extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
    w.push(seq);
    w.extend_from_slice(payload);
    w
}

fn com_query(sql: &str) -> Vec<u8> {
    let mut p = vec![3u8];
    p.extend_from_slice(sql.as_bytes());
    packet(0, &p)
}

const COM_QUIT: [u8; 5] = [1, 0, 0, 0, 1];
const COM_PING: [u8; 5] = [1, 0, 0, 0, 0x0e];

fn com_stmt_close(id: u32) -> Vec<u8> {
    let mut p = vec![0x19u8];
    p.extend_from_slice(&id.to_le_bytes());
    packet(0, &p)
}

fn com_stmt_execute_no_params(id: u32) -> Vec<u8> {
    let mut p = vec![0x17u8];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(0); // flags
    p.extend_from_slice(&1u32.to_le_bytes()); // iteration count
    packet(0, &p)
}

/// Reads one command's whole response (OK, ERR, or a text/binary result set without
/// CLIENT_DEPRECATE_EOF); returns the first packet. `None`: the connection ended.
fn read_response(r: &mut Raw) -> Option<Vec<u8>> {
    let (_, first) = r.read_packet()?;
    if matches!(first.first(), Some(0x00) | Some(0xFF)) {
        return Some(first);
    }
    // Column count, its definitions, EOF, rows, EOF.
    let n = first[0] as usize;
    for _ in 0..n {
        r.read_packet()?;
    }
    let (_, eof) = r.read_packet()?;
    assert_eq!(eof[0], 0xFE, "expected EOF after column definitions");
    loop {
        let (_, p) = r.read_packet()?;
        if (p[0] == 0xFE && p.len() < 9) || p[0] == 0xFF {
            return Some(first);
        }
    }
}

/// COM_STMT_PREPARE; reads the whole answer, returns the statement id.
fn prepare(r: &mut Raw, sql: &str) -> Option<u32> {
    let mut p = vec![0x16u8];
    p.extend_from_slice(sql.as_bytes());
    r.s.write_all(&packet(0, &p)).ok()?;
    let (_, ok) = r.read_packet()?;
    assert_eq!(
        ok[0],
        0,
        "prepare failed: {:?}",
        String::from_utf8_lossy(&ok)
    );
    let id = u32::from_le_bytes([ok[1], ok[2], ok[3], ok[4]]);
    let cols = u16::from_le_bytes([ok[5], ok[6]]);
    let params = u16::from_le_bytes([ok[7], ok[8]]);
    for n in [params, cols] {
        if n > 0 {
            for _ in 0..=n {
                r.read_packet()?; // definitions, then EOF
            }
        }
    }
    Some(id)
}

/// Waits until connection `id` runs a statement (its process-list INFO starts with `prefix`).
fn await_running(c: &mut mysql::Conn, id: u64, prefix: &str) {
    let found = poll_until(30, || {
        let rows: Vec<(u64, Option<String>)> = c
            .query::<mysql::Row, _>("SHOW FULL PROCESSLIST")
            .unwrap()
            .into_iter()
            .map(|r| {
                (
                    r.get::<u64, _>(0).unwrap_or(0),
                    r.get::<Option<String>, _>(7).unwrap_or(None),
                )
            })
            .collect();
        rows.iter()
            .any(|(i, info)| *i == id && info.as_deref().is_some_and(|s| s.starts_with(prefix)))
    });
    assert!(found.is_some(), "connection {id} never ran {prefix}");
}

fn connection_id(r: &mut Raw) -> u64 {
    r.s.write_all(&com_query("SELECT CONNECTION_ID()")).unwrap();
    r.single_value().parse().unwrap()
}

/// The servers every test here runs against: both handlers, and the pool with each way of
/// noticing input on or off. `SHOAL_CLOSE_CONFIG=text` keeps those whose description contains
/// `text`.
fn configurations() -> Vec<(&'static str, Vec<&'static str>)> {
    let only = std::env::var("SHOAL_CLOSE_CONFIG").unwrap_or_default();
    let all = vec![
        (
            "one-thread-per-connection",
            vec!["--thread-handling=one-thread-per-connection"],
        ),
        (
            "pool, defaults (lingering, balancing), 2 groups of cap 2",
            vec![
                "--thread-handling=pool-of-threads",
                "--thread-pool-size=2",
                "--thread-pool-oversubscribe=1",
            ],
        ),
        (
            "pool, edge-triggered only (no linger), work stealing, no balancing, 3 groups",
            vec![
                "--thread-handling=pool-of-threads",
                "--thread-pool-size=3",
                "--thread-pool-linger-usec=0",
                "--thread-pool-work-stealing=ON",
                "--thread-pool-balance-usec=0",
            ],
        ),
        (
            // The same without work stealing: scripts/steal-churn.sh compares the two.
            "pool, edge-triggered only (no linger), no stealing, no balancing, 3 groups",
            vec![
                "--thread-handling=pool-of-threads",
                "--thread-pool-size=3",
                "--thread-pool-linger-usec=0",
                "--thread-pool-work-stealing=OFF",
                "--thread-pool-balance-usec=0",
            ],
        ),
        (
            "pool, live resizes between 1 and 4 groups (connections migrate)",
            vec!["--thread-handling=pool-of-threads", "--thread-pool-size=2"],
        ),
        (
            "pool, one saturated group (cap 2, 4 threads, 10 ms stall limit)",
            vec![
                "--thread-handling=pool-of-threads",
                "--thread-pool-size=1",
                "--thread-pool-oversubscribe=1",
                "--thread-pool-max-threads=4",
                "--thread-pool-stall-limit=10",
            ],
        ),
    ];
    all.into_iter()
        .filter(|(what, _)| what.contains(&only))
        .collect()
}

/// Input that arrives while its connection runs a command, behind a command the client had
/// pipelined with it: the running command ends with the pipelined one still buffered, so the
/// connection is queued again (a yield) and its next run does not read the socket. The new
/// input's readiness was reported while the connection ran; it must still be read. Checked
/// with a third command (it must be answered) and with COM_QUIT + FIN (the connection must
/// leave), under every configuration.
#[test]
fn input_behind_a_pipelined_command_is_read_after_the_yield() {
    let _serial = serial();
    for (what, args) in configurations() {
        let pool = what.starts_with("pool");
        let s = Shoal::start("close-yield", &args);
        let mut mon = s.conn();
        for quit in [false, true] {
            let mut r = Raw::logged_in(s.port, "root");
            let id = connection_id(&mut r);
            let mut two = com_query("SELECT SLEEP(0.3)");
            two.extend_from_slice(&com_query("SELECT 1"));
            r.s.write_all(&two).unwrap();
            await_running(&mut mon, id, "SELECT SLEEP");
            if quit {
                r.s.write_all(&COM_QUIT).unwrap();
                r.s.shutdown(Shutdown::Write).unwrap();
            } else {
                r.s.write_all(&com_query("SELECT 2")).unwrap();
            }
            assert_eq!(r.single_value(), "0", "{what}: the sleep");
            assert_eq!(r.single_value(), "1", "{what}: the pipelined command");
            if quit {
                // The server closes: end of stream.
                let mut rest = Vec::new();
                let _ = r.s.read_to_end(&mut rest);
                assert!(rest.is_empty(), "{what}: bytes after COM_QUIT: {rest:?}");
                drop(r);
                assert_all_closed(&mut mon, &s, pool, what);
            } else {
                assert_eq!(
                    r.single_value(),
                    "2",
                    "{what}: the command sent during the run"
                );
            }
        }
    }
}

/// A command and the client's FIN arriving together: the last command before a half-close
/// (`shutdown(SHUT_WR)`, then read the answer) and a command sent just before closing without
/// reading its answer. The server answers and closes; nothing is left in CLOSE-WAIT.
#[test]
fn a_command_followed_by_end_of_file_is_answered_and_closed() {
    let _serial = serial();
    for (what, args) in configurations() {
        let pool = what.starts_with("pool");
        let s = Shoal::start("close-eof", &args);
        let mut mon = s.conn();
        for i in 0..10 {
            let mut r = Raw::logged_in(s.port, "root");
            r.s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            r.s.write_all(&com_query(&format!("SELECT {i}"))).unwrap();
            assert_eq!(r.single_value(), i.to_string());
            let mut w = com_query(&format!("SELECT {i} + 1"));
            if i % 2 == 0 {
                // Half-close: the answer must still come, then the end of the stream.
                r.s.write_all(&w).unwrap();
                r.s.shutdown(Shutdown::Write).unwrap();
                assert_eq!(r.single_value(), (i + 1).to_string(), "{what}");
                let mut rest = Vec::new();
                r.s.read_to_end(&mut rest)
                    .unwrap_or_else(|e| panic!("{what}: no end of stream after a half-close: {e}"));
                assert!(rest.is_empty(), "{what}: {rest:?}");
            } else {
                // Close without reading the answer.
                w.extend_from_slice(&COM_PING);
                r.s.write_all(&w).unwrap();
            }
        }
        assert_all_closed(&mut mon, &s, pool, what);
    }
}

/// What sysbench does when it stops: COM_STMT_CLOSE for each prepared statement (no answer),
/// then COM_QUIT and FIN, written back to back. Also the same while another command runs.
#[test]
fn statement_closes_then_quit_leave_nothing_behind() {
    let _serial = serial();
    for (what, args) in configurations() {
        let pool = what.starts_with("pool");
        let s = Shoal::start("close-stmts", &args);
        let mut mon = s.conn();
        let mut clients = Vec::new();
        for _ in 0..16 {
            let mut r = Raw::logged_in(s.port, "root");
            let ids: Vec<u32> = (0..8)
                .map(|i| prepare(&mut r, &format!("SELECT {i} + 1")).unwrap())
                .collect();
            for &i in &ids {
                r.s.write_all(&com_stmt_execute_no_params(i)).unwrap();
                read_response(&mut r).unwrap();
            }
            clients.push((r, ids));
        }
        for (mut r, ids) in clients {
            for i in ids {
                r.s.write_all(&com_stmt_close(i)).unwrap();
            }
            r.s.write_all(&COM_QUIT).unwrap();
        }
        let took = assert_all_closed(&mut mon, &s, pool, what);
        eprintln!("{what}: 16 connections gone {took:?} after their COM_QUIT");
    }
}

fn set_rst_on_close(s: &std::net::TcpStream) {
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket and a correctly sized `linger`.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&l as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// One client session of the randomized test: a few commands of random kinds, then a close of
/// a random kind. Counts what it did in `done`.
fn random_session(port: u16, rng: &mut rand::rngs::StdRng, slow: bool) {
    let Some(mut r) = std::panic::catch_unwind(|| Raw::logged_in(port, "root")).ok() else {
        return;
    };
    let mut stmts: Vec<u32> = Vec::new();
    for _ in 0..rng.gen_range(0..12) {
        let ok = match rng.gen_range(0..7) {
            0 => {
                r.s.write_all(&com_query(&format!("SELECT {}", rng.gen::<u16>())))
                    .is_ok()
                    && read_response(&mut r).is_some()
            }
            1 => {
                // Two or three pipelined queries in one write.
                let n = rng.gen_range(2..4);
                let mut w = Vec::new();
                for i in 0..n {
                    w.extend_from_slice(&com_query(&format!("SELECT {i}")));
                }
                r.s.write_all(&w).is_ok() && (0..n).all(|_| read_response(&mut r).is_some())
            }
            2 => match prepare(&mut r, "SELECT 1 + 1") {
                Some(id) => {
                    stmts.push(id);
                    r.s.write_all(&com_stmt_execute_no_params(id)).is_ok()
                        && read_response(&mut r).is_some()
                }
                None => false,
            },
            3 => {
                // Statement closes (no answer), then a ping, back to back.
                let mut w = Vec::new();
                for id in stmts.drain(..) {
                    w.extend_from_slice(&com_stmt_close(id));
                }
                w.extend_from_slice(&COM_PING);
                r.s.write_all(&w).is_ok() && read_response(&mut r).is_some()
            }
            4 if slow => {
                let ms = rng.gen_range(1..20);
                r.s.write_all(&com_query(&format!("SELECT SLEEP(0.0{ms:02})")))
                    .is_ok()
                    && read_response(&mut r).is_some()
            }
            5 if slow => {
                r.s.write_all(&com_query("SELECT BENCHMARK(20000, 1 + 1)"))
                    .is_ok()
                    && read_response(&mut r).is_some()
            }
            _ => r.s.write_all(&COM_PING).is_ok() && read_response(&mut r).is_some(),
        };
        if !ok {
            return;
        }
    }
    match rng.gen_range(0..7) {
        // COM_QUIT, then close.
        0 => {
            let _ = r.s.write_all(&COM_QUIT);
        }
        // sysbench: statement closes and COM_QUIT in separate writes, back to back.
        1 => {
            for id in stmts.drain(..) {
                let _ = r.s.write_all(&com_stmt_close(id));
            }
            let _ = r.s.write_all(&COM_QUIT);
        }
        // FIN only.
        2 => {}
        // RST.
        3 => set_rst_on_close(&r.s),
        // Half-close: the server must still answer what was sent, then close.
        4 => {
            let _ = r.s.write_all(&COM_PING);
            let _ = r.s.shutdown(Shutdown::Write);
            let _ = read_response(&mut r);
            let mut rest = Vec::new();
            let _ = r.s.read_to_end(&mut rest);
        }
        // In the middle of a command (its answer never read).
        5 => {
            let _ = r.s.write_all(&com_query("SELECT SLEEP(0.01)"));
        }
        // A query and COM_QUIT pipelined in one write.
        _ => {
            let mut w = com_query("SELECT 1");
            w.extend_from_slice(&COM_QUIT);
            let _ = r.s.write_all(&w);
        }
    }
    drop(r);
}

/// Many clients in tight loops beside a CPU hog, closing at random moments in every way a
/// client can; afterwards `Threads_connected` is back to 1 and no socket is in CLOSE-WAIT.
/// `SHOAL_CLOSE_SECS` sets the load time per configuration (default 2), `SHOAL_CLOSE_SEED`
/// the seed (default: from the clock, printed).
#[test]
fn clients_closing_at_random_moments_leave_nothing_behind() {
    let _serial = serial();
    let secs: u64 = std::env::var("SHOAL_CLOSE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let seed: u64 = std::env::var("SHOAL_CLOSE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("seed {seed} (SHOAL_CLOSE_SEED)");
    for (what, args) in configurations() {
        let pool = what.starts_with("pool");
        let slow = what.contains("saturated");
        let s = Shoal::start("close-random", &args);
        let mut mon = s.conn();
        mon.query_drop("SET GLOBAL max_connections = 1000").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        // The CPU hog: two spinning threads, as many as the machine has cores here.
        let hogs: Vec<_> = (0..2)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 1u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        let sessions = Arc::new(AtomicU64::new(0));
        let end = Instant::now() + Duration::from_secs(secs);
        // Live resizes: every connection moves to its new group at its next re-arm.
        let resizer = what.contains("resizes").then(|| {
            let opts = s.mysql_opts();
            std::thread::spawn(move || {
                let mut c = mysql::Conn::new(opts).unwrap();
                let mut n = 0;
                for size in [1, 4, 3, 1, 2].iter().cycle() {
                    if Instant::now() >= end {
                        break;
                    }
                    c.query_drop(format!("SET GLOBAL thread_pool_size = {size}"))
                        .unwrap();
                    n += 1;
                    std::thread::sleep(Duration::from_millis(150));
                }
                n
            })
        });
        let clients: Vec<_> = (0..48u64)
            .map(|t| {
                let sessions = sessions.clone();
                let port = s.port;
                std::thread::spawn(move || {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ (t << 32));
                    while Instant::now() < end {
                        random_session(port, &mut rng, slow);
                        sessions.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
        if let Some(r) = resizer {
            let n = r.join().unwrap();
            assert!(n >= 2, "{what}: only {n} resizes");
            let migrations = status(&mut mon, "Threadpool_migrations");
            assert!(migrations > 0, "{what}: no connection migrated");
        }
        stop.store(true, Ordering::Relaxed);
        for h in hogs {
            h.join().unwrap();
        }
        let took = assert_all_closed(&mut mon, &s, pool, what);
        let n = sessions.load(Ordering::Relaxed);
        assert!(n >= 48, "{what}: only {n} sessions ran");
        eprintln!("{what}: {n} sessions, all gone {took:?} after the last close");
    }
}

/// Real sysbench, as the defect was found: oltp_read_write on 128 threads, which ends each
/// thread with COM_STMT_CLOSE for its prepared statements and COM_QUIT. Every connection must
/// be gone afterwards. Skipped when sysbench is not installed.
#[test]
fn sysbench_read_write_leaves_no_connection_behind() {
    let _serial = serial();
    if std::process::Command::new("sysbench")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("sysbench not installed: skipped");
        return;
    }
    for (what, args) in configurations() {
        let pool = what.starts_with("pool");
        let s = Shoal::start("close-sysbench", &args);
        let mut mon = s.conn();
        mon.query_drop("CREATE DATABASE sbtest").unwrap();
        let port = format!("--mysql-port={}", s.port);
        let common = [
            "oltp_read_write",
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            &port,
            "--mysql-user=root",
            "--mysql-db=sbtest",
            "--tables=2",
            "--table-size=1000",
        ];
        let run = |extra: &[&str]| {
            let out = std::process::Command::new("timeout")
                .arg("120")
                .arg("sysbench")
                .args(common)
                .args(extra)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "{what}: sysbench {extra:?}: {text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            text
        };
        run(&["prepare"]);
        let text = run(&[
            "--threads=128",
            "--time=3",
            "--mysql-ignore-errors=1213,1205",
            "run",
        ]);
        assert!(text.contains("transactions:"), "{what}: {text}");
        let took = assert_all_closed(&mut mon, &s, pool, what);
        eprintln!("{what}: sysbench's 128 connections gone {took:?} after it exited");
    }
}
