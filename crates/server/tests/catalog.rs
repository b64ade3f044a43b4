//! The catalog over the wire, where the SQL fixtures cannot reach: information_schema's catalog
//! tables and PROCESSLIST filtered by the account's privileges, and a copying ALTER TABLE
//! (MODIFY / DROP COLUMN) run while other connections keep inserting: every acknowledged row is
//! there afterwards, converted, and CHECK TABLE finds every index entry matching its row.

mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::Conn;
use support::Shoal;

fn exec(c: &mut Conn, q: &str) {
    c.query_drop(q).unwrap_or_else(|e| panic!("{q}: {e}"));
}

/// CHECK TABLE `t` (every index entry against its row) reports one row: status OK.
fn assert_check_ok(c: &mut Conn, t: &str) {
    let check: Vec<(String, String)> = c
        .query_map(format!("CHECK TABLE {t}"), |r: mysql::Row| {
            (r.get(2).unwrap(), r.get(3).unwrap())
        })
        .unwrap();
    assert_eq!(check, [("status".to_string(), "OK".to_string())], "{t}");
}

fn col(c: &mut Conn, q: &str) -> Vec<String> {
    c.query::<Option<String>, _>(q)
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .into_iter()
        .map(|v| v.unwrap_or_else(|| "NULL".into()))
        .collect()
}

fn user_conn(s: &Shoal, user: &str, pw: &str) -> Conn {
    Conn::new(s.mysql_opts().user(Some(user)).pass(Some(pw)))
        .unwrap_or_else(|e| panic!("login {user}: {e}"))
}

#[test]
fn catalog_tables_and_processlist_follow_privileges() {
    let s = Shoal::start("catalog-priv", &[]);
    let mut root = s.conn();
    for q in [
        "CREATE DATABASE d1",
        "CREATE DATABASE d2",
        "CREATE TABLE d1.p (id INT PRIMARY KEY, code VARCHAR(5), UNIQUE KEY uq (code))",
        "CREATE TABLE d1.t (id INT PRIMARY KEY, pid INT, KEY k (pid), \
         CONSTRAINT fk FOREIGN KEY (pid) REFERENCES d1.p (id))",
        "CREATE TABLE d2.x (a INT PRIMARY KEY)",
        "CREATE USER 'bob'@'%' IDENTIFIED BY 'pw'",
        "GRANT SELECT ON d1.t TO 'bob'@'%'",
    ] {
        exec(&mut root, q);
    }
    let mut bob = user_conn(&s, "bob", "pw");
    let q = |what: &str| {
        format!(
            "SELECT DISTINCT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM information_schema.{what} \
             WHERE TABLE_SCHEMA IN ('d1', 'd2') ORDER BY 1"
        )
    };
    for t in [
        "STATISTICS",
        "TABLE_CONSTRAINTS",
        "KEY_COLUMN_USAGE",
        "TABLES",
    ] {
        assert_eq!(col(&mut root, &q(t)), ["d1.p", "d1.t", "d2.x"], "root, {t}");
        assert_eq!(col(&mut bob, &q(t)), ["d1.t"], "bob, {t}");
    }
    assert_eq!(
        col(
            &mut bob,
            "SELECT CONCAT(CONSTRAINT_NAME, ':', UNIQUE_CONSTRAINT_NAME, ':', REFERENCED_TABLE_NAME) \
             FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = 'd1'"
        ),
        ["fk:PRIMARY:p"]
    );
    // Without PROCESS, PROCESSLIST shows one's own connections only, like SHOW PROCESSLIST.
    let users = "SELECT DISTINCT USER FROM information_schema.PROCESSLIST ORDER BY USER";
    assert_eq!(col(&mut bob, users), ["bob"]);
    assert_eq!(col(&mut root, users), ["bob", "root"]);
    let me = col(
        &mut bob,
        "SELECT CONCAT(COMMAND, ':', INFO) FROM information_schema.PROCESSLIST \
         WHERE ID = CONNECTION_ID()",
    );
    assert_eq!(
        me,
        [
            "Query:SELECT CONCAT(COMMAND, ':', INFO) FROM information_schema.PROCESSLIST \
          WHERE ID = CONNECTION_ID()"
        ]
    );
    let shown: Vec<String> = bob
        .query_map("SHOW PROCESSLIST", |r: mysql::Row| {
            r.get::<String, _>(1).unwrap_or_default()
        })
        .unwrap();
    assert_eq!(shown, ["bob"]);
    exec(&mut root, "GRANT PROCESS ON *.* TO 'bob'@'%'");
    assert_eq!(col(&mut bob, users), ["bob", "root"]);
}

/// CREATE INDEX, DROP INDEX and TRUNCATE beside sessions that insert, update (moving rows
/// between index keys) and delete: afterwards every index has exactly one entry per row
/// (CHECK TABLE compares them entry by entry) and the new index finds what a scan finds. The
/// index build used to scan the table while writers went on, missing the rows they wrote
/// after its scan passed them (or leaving entries of rows they deleted).
#[test]
fn index_ddl_beside_writers_keeps_every_index_exact() {
    let s = Shoal::start("catalog-index-ddl", &[]);
    let mut c = s.conn();
    exec(&mut c, "CREATE DATABASE x");
    exec(
        &mut c,
        "CREATE TABLE x.t (id INT PRIMARY KEY, k INT NOT NULL, v VARCHAR(20), KEY kk (k))",
    );
    let initial = 30_000u64;
    for chunk in 0..(initial / 1000) {
        let values: Vec<String> = (0..1000)
            .map(|i| {
                let n = chunk * 1000 + i;
                format!("({n}, {}, 'v{}')", n % 1000, n % 97)
            })
            .collect();
        exec(
            &mut c,
            &format!("INSERT INTO x.t VALUES {}", values.join(",")),
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..2u64)
        .map(|w| {
            let (stop, done) = (stop.clone(), done.clone());
            let mut wc = s.conn();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let id = 1_000_000 + w * 1_000_000 + n;
                    let old = (n * 7919 + w * 13) % initial;
                    for q in [
                        format!("INSERT INTO x.t VALUES ({id}, {}, 'w{w}')", n % 50),
                        format!("UPDATE x.t SET v = CONCAT('u', v), k = k + 1 WHERE id = {old}"),
                        format!("DELETE FROM x.t WHERE id = {}", id.saturating_sub(3)),
                    ] {
                        wc.query_drop(&q)
                            .unwrap_or_else(|e| panic!("writer {w}: {q}: {e}"));
                    }
                    n += 1;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    let wait_writes = |at: u64, what: &str| {
        while done.load(Ordering::Relaxed) < at + 20 {
            assert!(Instant::now() < deadline, "writers stalled after {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    wait_writes(0, "start");
    for q in [
        "CREATE INDEX kv ON x.t (v)",
        "DROP INDEX kk ON x.t",
        "CREATE INDEX kk2 ON x.t (k, v)",
    ] {
        exec(&mut c, q);
        wait_writes(done.load(Ordering::Relaxed), q);
    }
    stop.store(true, Ordering::Relaxed);
    for h in writers {
        h.join().unwrap();
    }
    let count = |c: &mut Conn, q: &str| -> u64 { c.query_first(q).unwrap().unwrap() };
    let rows = count(&mut c, "SELECT COUNT(*) FROM x.t IGNORE INDEX (kv, kk2)");
    assert_eq!(
        count(&mut c, "SELECT COUNT(*) FROM x.t WHERE v >= ''"),
        rows
    );
    assert_eq!(count(&mut c, "SELECT COUNT(*) FROM x.t WHERE k >= 0"), rows);
    assert_check_ok(&mut c, "x.t");
    // TRUNCATE beside a writer leaves no entry of a row that is gone.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let mut wc = s.conn();
        std::thread::spawn(move || {
            let mut n = 5_000_000u64;
            while !stop.load(Ordering::Relaxed) {
                wc.query_drop(format!("INSERT INTO x.t VALUES ({n}, 1, 'z')"))
                    .unwrap();
                n += 1;
            }
        })
    };
    exec(&mut c, "TRUNCATE TABLE x.t");
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert_check_ok(&mut c, "x.t");
    assert_eq!(
        count(&mut c, "SELECT COUNT(*) FROM x.t WHERE v = 'z'"),
        count(&mut c, "SELECT COUNT(*) FROM x.t")
    );
}

#[test]
fn copying_alter_beside_writers_loses_nothing() {
    let s = Shoal::start("catalog-alter", &[]);
    let mut c = s.conn();
    exec(&mut c, "CREATE DATABASE a");
    exec(
        &mut c,
        "CREATE TABLE a.t (id INT PRIMARY KEY AUTO_INCREMENT, k INT NOT NULL, v VARCHAR(20), \
         extra INT DEFAULT 1, KEY kk (k), KEY kv (v, k))",
    );
    let initial = 20_000u64;
    for chunk in 0..(initial / 1000) {
        let values: Vec<String> = (0..1000)
            .map(|i| {
                let n = chunk * 1000 + i;
                format!("({n}, 'v{}')", n % 97)
            })
            .collect();
        exec(
            &mut c,
            &format!("INSERT INTO a.t (k, v) VALUES {}", values.join(",")),
        );
    }

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (stop, done) = (stop.clone(), done.clone());
            let mut wc = s.conn();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let k = 1_000_000 + w * 1_000_000 + n;
                    wc.query_drop(format!("INSERT INTO a.t (k, v) VALUES ({k}, 'w{w}')"))
                        .unwrap_or_else(|e| panic!("writer {w}: {e}"));
                    n += 1;
                    done.fetch_add(1, Ordering::Relaxed);
                }
                n
            })
        })
        .collect();
    // The ALTERs start while the writers are writing.
    let deadline = Instant::now() + Duration::from_secs(60);
    while done.load(Ordering::Relaxed) < 50 {
        assert!(Instant::now() < deadline, "writers made no progress");
        std::thread::sleep(Duration::from_millis(5));
    }
    for q in [
        "ALTER TABLE a.t MODIFY k BIGINT NOT NULL",
        "ALTER TABLE a.t DROP COLUMN extra",
        "ALTER TABLE a.t CHANGE v v VARCHAR(30)",
    ] {
        exec(&mut c, q);
        // Some writes land between the ALTERs too.
        let at = done.load(Ordering::Relaxed);
        while done.load(Ordering::Relaxed) < at + 20 {
            assert!(Instant::now() < deadline, "writers stalled after {q}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let written: u64 = writers.into_iter().map(|h| h.join().unwrap()).sum();

    let count = |c: &mut Conn, q: &str| -> u64 { c.query_first(q).unwrap().unwrap() };
    assert_eq!(count(&mut c, "SELECT COUNT(*) FROM a.t"), initial + written);
    // Through each index.
    assert_eq!(
        count(&mut c, "SELECT COUNT(*) FROM a.t WHERE k >= 0"),
        initial + written
    );
    assert_eq!(
        count(&mut c, "SELECT COUNT(*) FROM a.t WHERE v = 'w1'"),
        count(&mut c, "SELECT COUNT(*) FROM a.t WHERE k >= 2000000")
    );
    assert_check_ok(&mut c, "a.t");
    assert_eq!(
        col(
            &mut c,
            "SELECT CONCAT(COLUMN_NAME, ' ', COLUMN_TYPE) FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = 'a' AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION"
        ),
        ["id int", "k bigint", "v varchar(30)"]
    );
    // AUTO_INCREMENT carried over the copies: the next id is above every one handed out.
    exec(&mut c, "INSERT INTO a.t (k, v) VALUES (-1, 'last')");
    assert_eq!(
        count(&mut c, "SELECT id FROM a.t WHERE k = -1"),
        initial + written + 1
    );
}
