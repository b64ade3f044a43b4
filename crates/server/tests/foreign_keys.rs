//! Foreign keys under concurrency, through the real binary: a child row being inserted holds its
//! parent (a concurrent DELETE of the parent waits, then fails with 1451), and a storm of
//! inserts, deletes and updates from several connections never leaves an orphan behind.
//! (Single-connection behaviour is in tests/sql/foreign_keys.test.)

mod support;

use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use rand::{Rng, SeedableRng};
use support::Shoal;

fn err_code(e: &mysql::Error) -> u16 {
    match e {
        mysql::Error::MySqlError(e) => e.code,
        other => panic!("not a server error: {other}"),
    }
}

fn status(c: &mut mysql::Conn, name: &str) -> u64 {
    let row: Option<(String, String)> = c
        .query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
        .unwrap();
    row.map(|(_, v)| v.parse().unwrap()).unwrap_or(0)
}

fn setup(c: &mut mysql::Conn) {
    for sql in [
        "CREATE DATABASE fk",
        "CREATE TABLE fk.p (id INT PRIMARY KEY, v INT)",
        "CREATE TABLE fk.c (id INT PRIMARY KEY, pid INT, \
         FOREIGN KEY (pid) REFERENCES fk.p (id) ON DELETE CASCADE)",
        "CREATE TABLE fk.r (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES fk.p (id))",
    ] {
        c.query_drop(sql).unwrap();
    }
}

#[test]
fn a_child_insert_holds_its_parent_until_commit() {
    for handling in ["one-thread-per-connection", "pool-of-threads"] {
        let s = Shoal::start("fk-hold", &[&format!("--thread-handling={handling}")]);
        let mut c = s.conn();
        setup(&mut c);
        c.query_drop("INSERT INTO fk.p VALUES (1, 0)").unwrap();
        let mut a = s.conn();
        a.query_drop("BEGIN").unwrap();
        a.query_drop("INSERT INTO fk.r VALUES (1, 1)").unwrap();
        let waits_before = status(&mut c, "Innodb_row_lock_waits");
        let mut b = s.conn();
        let deleter = std::thread::spawn(move || {
            let r = b.query_drop("DELETE FROM fk.p WHERE id = 1");
            (b, r)
        });
        // The DELETE must be waiting on the parent row the child insert locked.
        let deadline = Instant::now() + Duration::from_secs(30);
        while status(&mut c, "Innodb_row_lock_current_waits") == 0 {
            assert!(
                !deleter.is_finished(),
                "[{handling}] the parent was deleted while a transaction's child row used it"
            );
            assert!(Instant::now() < deadline, "[{handling}] no lock wait seen");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(status(&mut c, "Innodb_row_lock_waits") > waits_before);
        a.query_drop("COMMIT").unwrap();
        let (_b, r) = deleter.join().unwrap();
        assert_eq!(err_code(&r.unwrap_err()), 1451, "[{handling}]");
        let n: u64 = c
            .query_first("SELECT COUNT(*) FROM fk.r JOIN fk.p ON fk.p.id = fk.r.pid")
            .unwrap()
            .unwrap();
        assert_eq!(n, 1, "[{handling}] the child keeps its parent");
    }
}

#[test]
fn concurrent_writers_leave_no_orphans() {
    let seed: u64 = std::env::var("SHOAL_FK_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let s = Shoal::start("fk-storm", &["--thread-handling=pool-of-threads"]);
    let mut c = s.conn();
    setup(&mut c);
    for id in 1..=20 {
        c.query_drop(format!("INSERT INTO fk.p VALUES ({id}, 0)"))
            .unwrap();
    }
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let mut conn = s.conn();
            std::thread::spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed * 31 + t);
                conn.query_drop("SET innodb_lock_wait_timeout = 5").unwrap();
                let mut refused = 0u32;
                for i in 0..150u32 {
                    let id = 1 + rng.gen_range(0..20);
                    let row = t * 10_000 + u64::from(i);
                    let sql = match rng.gen_range(0..5) {
                        0 => format!("DELETE FROM fk.p WHERE id = {id}"),
                        1 => format!("INSERT IGNORE INTO fk.p VALUES ({id}, {i})"),
                        2 => format!("INSERT INTO fk.c VALUES ({row}, {id})"),
                        3 => format!("INSERT INTO fk.r VALUES ({row}, {id})"),
                        _ => format!("UPDATE fk.c SET pid = {id} WHERE id % 7 = {}", i % 7),
                    };
                    if let Err(e) = conn.query_drop(&sql) {
                        // 1452: no such parent, 1451: the parent has RESTRICT children,
                        // 1213/1205: lock conflicts between the writers.
                        let code = err_code(&e);
                        assert!(
                            [1451, 1452, 1213, 1205].contains(&code),
                            "{sql}: unexpected {e}"
                        );
                        refused += 1;
                    }
                }
                refused
            })
        })
        .collect();
    let refused: u32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    for child in ["c", "r"] {
        let orphans: u64 = c
            .query_first(format!(
                "SELECT COUNT(*) FROM fk.{child} x WHERE x.pid IS NOT NULL \
                 AND NOT EXISTS (SELECT 1 FROM fk.p WHERE fk.p.id = x.pid)"
            ))
            .unwrap()
            .unwrap();
        assert_eq!(orphans, 0, "orphans in fk.{child} (seed {seed})");
    }
    let children: u64 = c
        .query_first("SELECT (SELECT COUNT(*) FROM fk.c) + (SELECT COUNT(*) FROM fk.r)")
        .unwrap()
        .unwrap();
    eprintln!("seed {seed}: {children} children survive, {refused} statements refused");
    assert!(
        refused > 0,
        "the storm never hit a constraint (seed {seed})"
    );
}
