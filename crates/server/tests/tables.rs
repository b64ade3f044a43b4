//! Tables through the real `shoal` binary: sysbench 1.0 OLTP workloads end to end, row-lock
//! concurrency over the wire (lost update, deadlock 1213, lock wait timeout 1205, a client gone
//! mid-transaction), restart durability, datadir locking, and `kill -9` crash recovery.
//!
//! Every test starts its own server on a free port with a temporary datadir and stops it
//! (SIGTERM, or SIGKILL for the crash test) before returning.

mod support;

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::Conn;
use support::{free_port, temp_dir, Shoal as Srv};

fn err_code(e: &mysql::Error) -> u16 {
    match e {
        mysql::Error::MySqlError(m) => m.code,
        other => panic!("not a server error: {other}"),
    }
}

/// Runs sysbench; returns its stdout. Panics with the output on failure.
fn sysbench(port: u16, test: &str, cmd: &str, extra: &[&str]) -> String {
    let mut args = vec![
        test.to_string(),
        "--db-driver=mysql".into(),
        "--mysql-host=127.0.0.1".into(),
        format!("--mysql-port={port}"),
        "--mysql-user=root".into(),
        "--mysql-db=sbtest".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push(cmd.into());
    let out = Command::new("timeout")
        .arg("120")
        .arg("sysbench")
        .args(&args)
        .output()
        .expect("run sysbench");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "sysbench {test} {cmd} failed: {text}");
    text
}

/// Parses "transactions: N", "ignored errors: N" and the fatal "FATAL" lines of a run.
fn check_run(text: &str, what: &str) -> u64 {
    assert!(!text.contains("FATAL"), "{what}: fatal error: {text}");
    let num_after = |key: &str| -> Option<u64> {
        let l = text.lines().find(|l| l.trim_start().starts_with(key))?;
        l.split_whitespace()
            .nth(key.split_whitespace().count())
            .and_then(|n| n.parse().ok())
    };
    let tx = num_after("transactions:").unwrap_or(0);
    let events = num_after("total number of events:").unwrap_or(0);
    assert!(tx > 0 || events > 0, "{what}: no transactions ran: {text}");
    // Ignored errors are only the retried ones (sysbench ignores 1213/1205 by default).
    if let Some(l) = text.lines().find(|l| l.contains("ignored errors:")) {
        let n: u64 = l
            .split_whitespace()
            .nth(2)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(n <= tx.max(events), "{what}: too many ignored errors: {l}");
    }
    tx.max(events)
}

fn sbtest_db(s: &Srv) {
    s.conn()
        .query_drop("CREATE DATABASE IF NOT EXISTS sbtest")
        .unwrap();
}

#[test]
fn sysbench_oltp_read_write_prepared_and_text() {
    sysbench_read_write("one-thread-per-connection");
}

#[test]
fn sysbench_oltp_read_write_under_the_pool() {
    sysbench_read_write("pool-of-threads");
}

fn sysbench_read_write(handling: &str) {
    if Command::new("sysbench").arg("--version").output().is_err() {
        panic!("sysbench is not installed");
    }
    let dir = temp_dir(&format!("tables-sb-rw-{handling}"));
    let th = format!("--thread-handling={handling}");
    let s = Srv::start_in(&dir, &["--innodb-flush-log-at-trx-commit=2", &th]);
    sbtest_db(&s);
    let common = ["--tables=8", "--table-size=10000"];
    sysbench(s.port, "oltp_read_write", "prepare", &common);
    let mut c = s.conn();
    let n: u64 = c
        .query_first("SELECT COUNT(*) FROM sbtest.sbtest8")
        .unwrap()
        .unwrap();
    assert_eq!(n, 10000);
    for mode in ["auto", "disable"] {
        let ps = format!("--db-ps-mode={mode}");
        let mut args = common.to_vec();
        args.extend([
            "--threads=16",
            "--time=30",
            "--mysql-ignore-errors=1213,1205",
            &ps,
        ]);
        let text = sysbench(s.port, "oltp_read_write", "run", &args);
        let tx = check_run(&text, &format!("oltp_read_write ps-mode={mode}"));
        eprintln!("oltp_read_write {handling} ps-mode={mode}: {tx} transactions");
    }
    sysbench(s.port, "oltp_read_write", "cleanup", &common);
    let left: Vec<String> = c.query("SHOW TABLES FROM sbtest").unwrap();
    assert!(left.is_empty(), "cleanup left tables: {left:?}");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sysbench_other_workloads() {
    sysbench_others("one-thread-per-connection");
}

#[test]
fn sysbench_other_workloads_under_the_pool() {
    sysbench_others("pool-of-threads");
}

fn sysbench_others(handling: &str) {
    let dir = temp_dir(&format!("tables-sb-other-{handling}"));
    let th = format!("--thread-handling={handling}");
    let s = Srv::start_in(&dir, &["--innodb-flush-log-at-trx-commit=2", &th]);
    sbtest_db(&s);
    let common = ["--tables=2", "--table-size=2000"];
    sysbench(s.port, "oltp_read_write", "prepare", &common);
    for test in [
        "oltp_point_select",
        "oltp_read_only",
        "oltp_write_only",
        "oltp_update_index",
        "oltp_update_non_index",
        "oltp_insert",
        "oltp_delete",
        "select_random_points",
        "select_random_ranges",
    ] {
        let mut args = common.to_vec();
        args.extend(["--threads=4", "--time=3"]);
        let text = sysbench(s.port, test, "run", &args);
        check_run(&text, test);
    }
    sysbench(s.port, "oltp_read_write", "cleanup", &common);
    // bulk_insert has its own tables.
    sysbench(s.port, "bulk_insert", "prepare", &["--threads=2"]);
    let text = sysbench(s.port, "bulk_insert", "run", &["--threads=2", "--time=3"]);
    check_run(&text, "bulk_insert");
    let n: u64 = s
        .conn()
        .query_first("SELECT COUNT(*) FROM sbtest.sbtest1")
        .unwrap()
        .unwrap();
    assert!(n > 0, "bulk_insert inserted nothing");
    sysbench(s.port, "bulk_insert", "cleanup", &["--threads=2"]);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

fn counter_table(s: &Srv) -> Conn {
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE t").unwrap();
    c.query_drop("CREATE TABLE t.k (id INT PRIMARY KEY, v INT NOT NULL)")
        .unwrap();
    c.query_drop("INSERT INTO t.k VALUES (1, 0), (2, 0)")
        .unwrap();
    c
}

#[test]
fn concurrency_over_the_wire() {
    let dir = temp_dir("tables-conc");
    let s = Srv::start_in(&dir, &[]);
    let mut c = counter_table(&s);

    // Lost update: N clients x M increments in transactions with SELECT ... FOR UPDATE.
    let (clients, each) = (8, 25);
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let opts = s.mysql_opts();
            std::thread::spawn(move || {
                let mut c = Conn::new(opts).unwrap();
                for _ in 0..each {
                    c.query_drop("BEGIN").unwrap();
                    let v: i64 = c
                        .query_first("SELECT v FROM t.k WHERE id = 1 FOR UPDATE")
                        .unwrap()
                        .unwrap();
                    c.exec_drop("UPDATE t.k SET v = ? WHERE id = 1", (v + 1,))
                        .unwrap();
                    c.query_drop("COMMIT").unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let v: i64 = c
        .query_first("SELECT v FROM t.k WHERE id = 1")
        .unwrap()
        .unwrap();
    assert_eq!(v, clients * each);

    // Deadlock: a locks 1 then 2, b locks 2 then 1; exactly one gets 1213, the other commits.
    let mut a = s.conn();
    let mut b = s.conn();
    a.query_drop("BEGIN").unwrap();
    b.query_drop("BEGIN").unwrap();
    a.query_drop("UPDATE t.k SET v = v + 100 WHERE id = 1")
        .unwrap();
    b.query_drop("UPDATE t.k SET v = v + 100 WHERE id = 2")
        .unwrap();
    let ta = std::thread::spawn(move || {
        let r = a.query_drop("UPDATE t.k SET v = v + 100 WHERE id = 2");
        (a, r)
    });
    std::thread::sleep(Duration::from_millis(300));
    let rb = b.query_drop("UPDATE t.k SET v = v + 100 WHERE id = 1");
    let (mut a, ra) = ta.join().unwrap();
    let codes: Vec<Option<u16>> = [&ra, &rb]
        .iter()
        .map(|r| r.as_ref().err().map(err_code))
        .collect();
    assert_eq!(
        codes.iter().filter(|c| **c == Some(1213)).count(),
        1,
        "{codes:?}"
    );
    assert_eq!(codes.iter().filter(|c| c.is_none()).count(), 1, "{codes:?}");
    a.query_drop("COMMIT").unwrap();
    b.query_drop("COMMIT").unwrap();
    let sum: i64 = c.query_first("SELECT SUM(v) FROM t.k").unwrap().unwrap();
    assert_eq!(
        sum,
        clients * each + 200,
        "the survivor's two updates committed"
    );

    // Lock wait timeout: 1205 after about a second.
    a.query_drop("BEGIN").unwrap();
    a.query_drop("UPDATE t.k SET v = v WHERE id = 2").unwrap();
    b.query_drop("SET innodb_lock_wait_timeout = 1").unwrap();
    let t0 = Instant::now();
    let e = b
        .query_drop("UPDATE t.k SET v = 0 WHERE id = 2")
        .unwrap_err();
    assert_eq!(err_code(&e), 1205);
    assert!(t0.elapsed() < Duration::from_secs(10));

    // KILL QUERY interrupts a row-lock wait at once (1317); the connection stays usable.
    b.query_drop("SET innodb_lock_wait_timeout = 50").unwrap();
    let b_id = b.connection_id();
    let waiter = std::thread::spawn(move || {
        let t0 = Instant::now();
        let r = b.query_drop("UPDATE t.k SET v = 0 WHERE id = 2");
        (b, r, t0.elapsed())
    });
    // Kill only once the UPDATE is waiting for the row (a KILL QUERY before it started would be
    // a no-op and the wait would run into the 50 s timeout).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let row: Option<(String, String)> = c
            .query_first("SHOW GLOBAL STATUS LIKE 'Innodb_row_lock_current_waits'")
            .unwrap();
        if row.is_some_and(|(_, v)| v != "0") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the UPDATE never waited for the row"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    c.query_drop(format!("KILL QUERY {b_id}")).unwrap();
    let (mut b, r, waited) = waiter.join().unwrap();
    assert_eq!(err_code(&r.unwrap_err()), 1317);
    assert!(waited < Duration::from_secs(20), "{waited:?}");
    let one: i64 = b.query_first("SELECT 1").unwrap().unwrap();
    assert_eq!(one, 1);

    // A client gone mid-transaction frees its locks: `a` holds row 2 and disappears.
    drop(a);
    b.query_drop("SET innodb_lock_wait_timeout = 5").unwrap();
    b.query_drop("UPDATE t.k SET v = 7 WHERE id = 2").unwrap();
    let v: i64 = c
        .query_first("SELECT v FROM t.k WHERE id = 2")
        .unwrap()
        .unwrap();
    assert_eq!(v, 7);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn restart_keeps_data_and_datadir_is_locked() {
    let dir = temp_dir("tables-restart");
    let mut s = Srv::start_in(&dir, &[]);
    let mut c = counter_table(&s);
    c.query_drop("INSERT INTO t.k VALUES (3, 33)").unwrap();
    // SET GLOBAL innodb_buffer_pool_size resizes the block cache live.
    c.query_drop("SET GLOBAL innodb_buffer_pool_size = 67108864")
        .unwrap();
    let cap: Option<(String, u64)> = c
        .query_first("SHOW GLOBAL STATUS LIKE 'Shoal_block_cache_capacity'")
        .unwrap();
    assert_eq!(cap.map(|r| r.1), Some(67108864));
    let commits: Option<(String, u64)> = c
        .query_first("SHOW GLOBAL STATUS LIKE 'Innodb_rows_inserted'")
        .unwrap();
    assert!(commits.unwrap().1 >= 3);
    drop(c);
    // A second server on the same datadir is refused with a clear message.
    let port2 = free_port();
    let out = Command::new("timeout")
        .arg("60")
        .arg(env!("CARGO_BIN_EXE_shoal"))
        .arg(format!("--port={port2}"))
        .arg(format!("--socket={}", dir.join("second.sock").display()))
        .arg(format!("--datadir={}", dir.join("data").display()))
        .arg("--initialize-insecure")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in use by another shoal server"), "{err}");

    s.stop();
    let s = Srv::start_in(&dir, &[]);
    let v: i64 = s
        .conn()
        .query_first("SELECT v FROM t.k WHERE id = 3")
        .unwrap()
        .unwrap();
    assert_eq!(v, 33);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn crash_recovery_keeps_acknowledged_commits() {
    let dir = temp_dir("tables-crash");
    let mut s = Srv::start_in(&dir, &[]);
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE t").unwrap();
    c.query_drop(
        "CREATE TABLE t.w (id INT PRIMARY KEY, k INT NOT NULL, pad VARCHAR(60), KEY k_idx (k))",
    )
    .unwrap();
    drop(c);
    let acked: Arc<Mutex<Vec<i64>>> = Arc::new(Mutex::new(Vec::new()));
    for round in 0..3i64 {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let before = acked.lock().unwrap().len();
        let writers: Vec<_> = (0..4i64)
            .map(|w| {
                let opts = s.mysql_opts();
                let acked = acked.clone();
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let Ok(mut c) = Conn::new(opts) else { return };
                    let mut i = 0i64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let id = round * 1_000_000 + w * 100_000 + i;
                        let r = c
                            .query_drop("BEGIN")
                            .and_then(|_| {
                                c.exec_drop("INSERT INTO t.w VALUES (?, ?, 'x')", (id, id % 97))
                            })
                            .and_then(|_| c.query_drop("COMMIT"));
                        match r {
                            Ok(()) => acked.lock().unwrap().push(id),
                            Err(_) => return,
                        }
                        i += 1;
                    }
                })
            })
            .collect();
        // Mid-load: once some commits were acknowledged (polled, not a fixed time: a loaded
        // machine may take long to get there), then 200 ms more of load.
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while acked.lock().unwrap().len() < before + 20 {
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: no commits acknowledged"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(200));
        s.stop_with(libc::SIGKILL); // kill -9 mid-load
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
        s = Srv::start_in(&dir, &[]);
        let mut c = s.conn();
        let ids: Vec<i64> = c.query("SELECT id FROM t.w").unwrap();
        let present: std::collections::HashSet<i64> = ids.iter().copied().collect();
        let acked = acked.lock().unwrap();
        assert!(!acked.is_empty(), "round {round}: nothing acknowledged");
        for id in acked.iter() {
            assert!(
                present.contains(id),
                "round {round}: acknowledged {id} lost"
            );
        }
        // The secondary index agrees with the table.
        let by_index: u64 = c
            .query_first("SELECT COUNT(*) FROM t.w WHERE k >= 0")
            .unwrap()
            .unwrap();
        let by_pk: u64 = c.query_first("SELECT COUNT(*) FROM t.w").unwrap().unwrap();
        assert_eq!(by_index, by_pk, "round {round}");
        assert_eq!(by_pk as usize, ids.len());
    }
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `ORDER BY <next key column> LIMIT n FOR UPDATE` reads in key order and stops after n rows,
/// so it locks those rows only (TPC-C's Delivery: the oldest new order of a district); another
/// transaction can change the next row meanwhile. A full read-then-sort would lock the whole
/// range and make the second UPDATE wait for the lock timeout (1205).
#[test]
fn ordered_limit_for_update_locks_only_the_rows_it_returns() {
    let s = Srv::start("tables-ordered-lock", &[]);
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE o").unwrap();
    c.query_drop("CREATE TABLE o.no (w INT, d INT, o INT, PRIMARY KEY (w, d, o))")
        .unwrap();
    c.query_drop("INSERT INTO o.no VALUES (1, 1, 3), (1, 1, 4), (1, 1, 5), (1, 2, 1)")
        .unwrap();
    let mut a = s.conn();
    a.query_drop("BEGIN").unwrap();
    let first: Option<i64> = a
        .query_first("SELECT o FROM o.no WHERE w = 1 AND d = 1 ORDER BY o LIMIT 1 FOR UPDATE")
        .unwrap();
    assert_eq!(first, Some(3));
    // Same answers whatever the order the rows are read in.
    let all: Vec<i64> = a
        .query("SELECT o FROM o.no WHERE w = 1 AND d = 1 ORDER BY o LIMIT 1, 5")
        .unwrap();
    assert_eq!(all, vec![4, 5]);
    let mut b = s.conn();
    b.query_drop("SET innodb_lock_wait_timeout = 1").unwrap();
    b.query_drop("UPDATE o.no SET o = 40 WHERE w = 1 AND d = 1 AND o = 4")
        .unwrap();
    assert_eq!(
        err_code(
            &b.query_drop("UPDATE o.no SET o = 30 WHERE w = 1 AND d = 1 AND o = 3")
                .unwrap_err()
        ),
        1205,
        "the row the locking read returned is locked"
    );
    a.query_drop("COMMIT").unwrap();
}

/// `ORDER BY ... DESC LIMIT n` reads the key backwards and stops after n rows (TPC-C's
/// Order-Status: a customer's newest order): it reads n rows, not the range, and its locking
/// form locks only them, so another transaction can still change the row below.
#[test]
fn descending_limit_reads_and_locks_only_the_rows_it_returns() {
    let s = Srv::start("tables-desc-limit", &[]);
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE o").unwrap();
    c.query_drop(
        "CREATE TABLE o.ord (w INT, d INT, o INT, c INT, PRIMARY KEY (w, d, o), KEY byc (w, c, o))",
    )
    .unwrap();
    let values: Vec<String> = (1..=3000)
        .map(|i| format!("(1, {}, {i}, {})", 1 + i % 3, i % 50))
        .collect();
    c.query_drop(format!("INSERT INTO o.ord VALUES {}", values.join(",")))
        .unwrap();
    let read = |c: &mut Conn| -> u64 {
        let r: Option<(String, u64)> = c
            .query_first("SHOW GLOBAL STATUS LIKE 'Innodb_rows_read'")
            .unwrap();
        r.map(|r| r.1).unwrap_or(0)
    };
    for (sql, expect) in [
        (
            "SELECT o FROM o.ord WHERE w = 1 AND d = 2 ORDER BY o DESC LIMIT 1",
            2998,
        ),
        (
            "SELECT o FROM o.ord WHERE w = 1 AND c = 7 ORDER BY c DESC, o DESC LIMIT 1",
            2957,
        ),
        (
            "SELECT o FROM o.ord ORDER BY w DESC, d DESC, o DESC LIMIT 1",
            2999,
        ),
    ] {
        let before = read(&mut c);
        let got: Option<i64> = c.query_first(sql).unwrap();
        let rows_read = read(&mut c) - before;
        assert_eq!(got, Some(expect), "{sql}");
        assert!(
            rows_read <= 2,
            "{sql}: read {rows_read} rows of a 1000-row range"
        );
    }
    let mut a = s.conn();
    a.query_drop("BEGIN").unwrap();
    let newest: Option<i64> = a
        .query_first("SELECT o FROM o.ord WHERE w = 1 AND d = 1 ORDER BY o DESC LIMIT 1 FOR UPDATE")
        .unwrap();
    assert_eq!(newest, Some(3000));
    let mut b = s.conn();
    b.query_drop("SET innodb_lock_wait_timeout = 1").unwrap();
    b.query_drop("UPDATE o.ord SET c = 99 WHERE w = 1 AND d = 1 AND o = 2997")
        .unwrap();
    assert_eq!(
        err_code(
            &b.query_drop("UPDATE o.ord SET c = 99 WHERE w = 1 AND d = 1 AND o = 3000")
                .unwrap_err()
        ),
        1205,
        "the row the locking read returned is locked"
    );
    a.query_drop("COMMIT").unwrap();
}

/// `name LIKE 'prefix%'` reads the prefix's range of a string index, as text and as a prepared
/// statement's parameter: it reads the few matching rows of 2000, and EXPLAIN says `range` on
/// the index. A pattern with a leading wildcard still reads them all.
#[test]
fn like_prefix_reads_the_index_range() {
    let s = Srv::start("tables-like-range", &[]);
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE l").unwrap();
    c.query_drop("CREATE TABLE l.p (id INT PRIMARY KEY, name VARCHAR(20), KEY byname (name))")
        .unwrap();
    let values: Vec<String> = (1..=2000).map(|i| format!("({i}, 'n{i:04}')")).collect();
    c.query_drop(format!("INSERT INTO l.p VALUES {}", values.join(",")))
        .unwrap();
    let read = |c: &mut Conn| -> u64 {
        let r: Option<(String, u64)> = c
            .query_first("SHOW GLOBAL STATUS LIKE 'Innodb_rows_read'")
            .unwrap();
        r.map(|r| r.1).unwrap_or(0)
    };
    let before = read(&mut c);
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM l.p WHERE name LIKE 'N012%'")
        .unwrap();
    let rows_read = read(&mut c) - before;
    assert_eq!(n, Some(10));
    assert!(rows_read <= 11, "LIKE 'N012%' read {rows_read} rows");
    let before = read(&mut c);
    let n: Option<i64> = c
        .exec_first("SELECT COUNT(*) FROM l.p WHERE name LIKE ?", ("n19%",))
        .unwrap();
    let rows_read = read(&mut c) - before;
    assert_eq!(n, Some(100));
    assert!(rows_read <= 101, "LIKE ? read {rows_read} rows");
    let before = read(&mut c);
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM l.p WHERE name LIKE '%012%'")
        .unwrap();
    assert_eq!(n, Some(12));
    assert_eq!(
        read(&mut c) - before,
        2000,
        "a leading wildcard reads every row"
    );
    let plan: Option<mysql::Row> = c
        .query_first("EXPLAIN SELECT id FROM l.p WHERE name LIKE 'n01%'")
        .unwrap();
    let plan = plan.unwrap();
    let text = |i: usize| match &plan[i] {
        mysql::Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        other => format!("{other:?}"),
    };
    assert_eq!(
        (text(3), text(5)),
        ("range".to_string(), "byname".to_string())
    );
}

/// Inner joins run in the order that makes index lookups of them, not FROM order: TPC-C's
/// `FROM customer, warehouse WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?`
/// reads one warehouse row, then one customer by its primary key — a handful of rows, where
/// FROM order scans every customer (counted by Innodb_rows_read).
#[test]
fn inner_joins_are_ordered_for_index_lookups() {
    let s = Srv::start("tables-join-order", &[]);
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE j").unwrap();
    c.query_drop("CREATE TABLE j.w (w_id INT PRIMARY KEY, w_tax DECIMAL(4,4))")
        .unwrap();
    c.query_drop(
        "CREATE TABLE j.c (c_w_id INT, c_d_id INT, c_id INT, c_last VARCHAR(16), \
         PRIMARY KEY (c_w_id, c_d_id, c_id))",
    )
    .unwrap();
    c.query_drop("INSERT INTO j.w VALUES (1, 0.1), (2, 0.2)")
        .unwrap();
    let values: Vec<String> = (1..=2000)
        .map(|i| format!("({}, {}, {}, 'n{i}')", 1 + i % 2, 1 + i % 10, i))
        .collect();
    c.query_drop(format!("INSERT INTO j.c VALUES {}", values.join(",")))
        .unwrap();
    let read = |c: &mut Conn| -> u64 {
        let r: Option<(String, u64)> = c
            .query_first("SHOW GLOBAL STATUS LIKE 'Innodb_rows_read'")
            .unwrap();
        r.map(|r| r.1).unwrap_or(0)
    };
    let before = read(&mut c);
    let row: Option<(String, String)> = c
        .query_first(
            "SELECT c.c_last, w.w_tax FROM j.c c, j.w w \
             WHERE w.w_id = 2 AND c.c_w_id = w.w_id AND c.c_d_id = 6 AND c.c_id = 5",
        )
        .unwrap();
    let rows_read = read(&mut c) - before;
    assert_eq!(row, Some(("n5".into(), "0.2000".into())));
    assert!(rows_read <= 10, "the join read {rows_read} rows");
}

/// EXPLAIN shows the plan the query engine runs: tables in the order they are read, each with
/// its access path (MariaDB's columns: `type` is the 4th, `key` the 6th).
/// One EXPLAIN row: id, select_type, table, type, key.
type PlanRow = (Option<i64>, String, String, String, Option<String>);

#[test]
fn explain_shows_join_order_and_access_paths() {
    let s = Srv::start("tables-explain", &[]);
    let mut c = s.conn();
    for sql in [
        "CREATE DATABASE x",
        "CREATE TABLE x.w (w_id INT PRIMARY KEY, t INT)",
        "CREATE TABLE x.c (w INT, d INT, id INT, v INT, PRIMARY KEY (w, d, id), KEY kv (v))",
    ] {
        c.query_drop(sql).unwrap();
    }
    let plan: Vec<PlanRow> = c
        .query(
            "EXPLAIN SELECT * FROM x.c, x.w WHERE w.w_id = 1 AND c.w = w.w_id AND c.d = 2 AND c.id = 3",
        )
        .unwrap()
        .into_iter()
        .map(|r: mysql::Row| {
            let r = r.unwrap();
            let text = |v: &mysql::Value| match v {
                mysql::Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            };
            let id = match &r[0] {
                mysql::Value::Int(i) => Some(*i),
                mysql::Value::Bytes(b) => String::from_utf8_lossy(b).parse().ok(),
                _ => None,
            };
            (
                id,
                text(&r[1]).unwrap_or_default(),
                text(&r[2]).unwrap_or_default(),
                text(&r[3]).unwrap_or_default(),
                text(&r[5]),
            )
        })
        .collect();
    assert_eq!(
        plan,
        vec![
            (
                Some(1),
                "SIMPLE".into(),
                "w".into(),
                "const".into(),
                Some("PRIMARY".into())
            ),
            (
                Some(1),
                "SIMPLE".into(),
                "c".into(),
                "eq_ref".into(),
                Some("PRIMARY".into())
            ),
        ]
    );
    let types: Vec<String> = c
        .query_map(
            "EXPLAIN SELECT id FROM x.c WHERE v BETWEEN 1 AND 5",
            |r: mysql::Row| {
                let v: Option<String> = r.get(3);
                v.unwrap_or_default()
            },
        )
        .unwrap();
    assert_eq!(types, vec!["range".to_string()]);
}

/// Common table expressions through COM_STMT_PREPARE: `?`s are numbered in textual order, the
/// WITH clause first; a CTE read twice reads the same parameter; a prepared recursive CTE
/// re-runs with new bounds.
#[test]
fn prepared_common_table_expressions_bind_their_placeholders() {
    let dir = temp_dir("tables-cte");
    let s = Srv::start_in(&dir, &[]);
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE t").unwrap();
    c.query_drop("CREATE TABLE t.n (id INT PRIMARY KEY)")
        .unwrap();
    c.query_drop("INSERT INTO t.n VALUES (1), (2), (3), (4)")
        .unwrap();
    let rec = c
        .prep("WITH RECURSIVE c (n) AS (SELECT ? UNION ALL SELECT n + 1 FROM c WHERE n < ?) SELECT CAST(SUM(n) AS SIGNED), COUNT(*) FROM c")
        .unwrap();
    let r: Option<(i64, i64)> = c.exec_first(&rec, (1, 10)).unwrap();
    assert_eq!(r, Some((55, 10)));
    let r: Option<(i64, i64)> = c.exec_first(&rec, (5, 10)).unwrap();
    assert_eq!(r, Some((45, 6)));
    let twice = c
        .prep("WITH c AS (SELECT id FROM t.n WHERE id > ?) SELECT COUNT(*) FROM c a JOIN c b ON a.id < b.id WHERE a.id <> ?")
        .unwrap();
    let r: Option<i64> = c.exec_first(&twice, (1, 2)).unwrap();
    // c = {2, 3, 4}; pairs (2,3) (2,4) (3,4); without a.id = 2: one.
    assert_eq!(r, Some(1));
    let r: Option<i64> = c.exec_first(&twice, (0, 9)).unwrap();
    assert_eq!(r, Some(6));
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
