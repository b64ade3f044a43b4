//! CHECK TABLE over the wire, and `mariadb-check` (`mysqlcheck`) against shoal: what it sends
//! (`SHOW DATABASES`, `USE`, `SHOW /*!50002 FULL*/ TABLES`, `SHOW CREATE TABLE`,
//! ``CHECK TABLE `t` ``) works and its report reads as against MariaDB: `OK` per table, the
//! error for a missing table, and for an index damaged behind the server's back (a raw RocksDB
//! delete while it is stopped) the checker's `error` lines and `Corrupt`.

mod support;

use std::process::Command;

use mysql::prelude::Queryable;
use support::{temp_dir, Shoal as Srv};

/// Runs `mariadb-check` (or `mysqlcheck`) against the server; (exit code, stdout + stderr).
/// `None` when neither is installed.
fn mariadb_check(s: &Srv, args: &[&str]) -> Option<(Option<i32>, String)> {
    let bin = ["mariadb-check", "mysqlcheck"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok())?;
    let out = Command::new("timeout")
        .arg("60")
        .arg(bin)
        .args(["-h127.0.0.1", "-uroot", "--protocol=tcp"])
        .arg(format!("-P{}", s.port))
        .args(args)
        .output()
        .expect("run mariadb-check");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((out.status.code(), text))
}

/// The report line of `table` (`db.t   OK`), trimmed to single spaces.
fn line_of(out: &str, table: &str) -> Option<String> {
    out.lines()
        .find(|l| l.split_whitespace().next() == Some(table))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn setup(s: &Srv) {
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE ck").unwrap();
    c.query_drop(
        "CREATE TABLE ck.t1 (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(20), \
         KEY k_1 (k), UNIQUE KEY u_c (c))",
    )
    .unwrap();
    c.query_drop("CREATE TABLE ck.t2 (a INT, b VARCHAR(10), KEY ia (a))")
        .unwrap();
    for i in 1..=40 {
        c.query_drop(format!("INSERT INTO ck.t1 VALUES ({i}, {}, 'c{i}')", i % 5))
            .unwrap();
        c.query_drop(format!("INSERT INTO ck.t2 VALUES ({}, 'b{i}')", i % 3))
            .unwrap();
    }
    c.query_drop("UPDATE ck.t1 SET k = k + 10 WHERE id % 2 = 0")
        .unwrap();
    c.query_drop("DELETE FROM ck.t2 WHERE b = 'b7'").unwrap();
}

#[test]
fn check_table_statement() {
    let s = Srv::start("check-sql", &[]);
    setup(&s);
    let mut c = s.conn();
    let rows: Vec<(String, String, String, String)> = c
        .query("CHECK TABLE ck.t1, `ck`.`t2`, ck.nope, nodb.t QUICK")
        .unwrap();
    let want = [
        ("ck.t1", "status", "OK"),
        ("ck.t2", "status", "OK"),
        ("ck.nope", "Error", "Table 'ck.nope' doesn't exist"),
        ("ck.nope", "status", "Operation failed"),
        ("nodb.t", "Error", "Table 'nodb.t' doesn't exist"),
        ("nodb.t", "status", "Operation failed"),
    ];
    let got: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            assert_eq!(r.1, "check");
            (r.0.as_str(), r.2.as_str(), r.3.as_str())
        })
        .collect();
    assert_eq!(got, want);
    c.query_drop("USE ck").unwrap();
    for opt in [
        "",
        "FAST",
        "MEDIUM",
        "EXTENDED",
        "CHANGED",
        "FOR UPGRADE",
        "quick",
    ] {
        let rows: Vec<(String, String, String, String)> =
            c.query(format!("CHECK TABLE t1, t2 {opt}")).unwrap();
        assert_eq!(rows.len(), 2, "{opt}: {rows:?}");
        assert!(rows.iter().all(|r| r.3 == "OK"), "{opt}: {rows:?}");
    }
    // Without a default database, an unqualified name is 1046, as in MariaDB.
    let mut c = s.conn();
    match c.query_drop("CHECK TABLE t1") {
        Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1046, "{e:?}"),
        other => panic!("CHECK TABLE without a database: {other:?}"),
    }
    let com: Option<(String, String)> = c
        .query_first("SHOW GLOBAL STATUS LIKE 'Com_check'")
        .unwrap();
    assert!(com.is_some_and(|(_, v)| v.parse::<u64>().unwrap() >= 8));
}

#[test]
fn mariadb_check_reports_ok_missing_and_corrupt_tables() {
    let dir = temp_dir("check-client");
    let mut s = Srv::start_in(&dir, &[]);
    setup(&s);
    let Some((code, out)) = mariadb_check(&s, &["--all-databases"]) else {
        eprintln!("SKIPPED: neither mariadb-check nor mysqlcheck is installed (mariadb-client)");
        return;
    };
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(line_of(&out, "ck.t1").as_deref(), Some("ck.t1 OK"), "{out}");
    assert_eq!(line_of(&out, "ck.t2").as_deref(), Some("ck.t2 OK"), "{out}");
    assert!(!out.to_lowercase().contains("error"), "{out}");

    let (_, out) = mariadb_check(&s, &["ck", "t1", "nosuch"]).unwrap();
    assert_eq!(line_of(&out, "ck.t1").as_deref(), Some("ck.t1 OK"), "{out}");
    assert!(
        out.contains("Table 'ck.nosuch' doesn't exist"),
        "missing table not reported: {out}"
    );

    // Damage t1's k_1 behind the server's back: row 6 (k = 11 after the UPDATE) loses its entry.
    assert_eq!(s.stop(), Some(0));
    let data = dir.join("data");
    let k_1 = {
        let e = shoal_store::Engine::open(shoal_store::EngineConfig::new(&data)).unwrap();
        let t = e.table("ck", "t1").unwrap();
        let ix = t.index("k_1").unwrap().clone();
        e.close().unwrap();
        ix
    };
    {
        let db = rocksdb::DB::open_default(data.join("rocksdb")).unwrap();
        let mut key = vec![0x03];
        key.extend_from_slice(&k_1.id.to_be_bytes());
        key.extend_from_slice(&shoal_store::codec::encode_key(&[
            shoal_store::Datum::Int(11),
            shoal_store::Datum::Int(6),
        ]));
        assert!(
            db.get(&key).unwrap().is_some(),
            "the entry to delete exists"
        );
        db.delete(&key).unwrap();
    }
    let s = Srv::start_in(&dir, &[]);
    let (_, out) = mariadb_check(&s, &["ck", "t1", "t2"]).unwrap();
    eprintln!("mariadb-check ck t1 t2 after the damage:\n{out}");
    let lines: Vec<String> = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    for want in [
        "ck.t1",
        "error : Index 'k_1' has no entry for row (6)",
        "error : Index 'k_1' contains 39 entries, should be 40",
        "error : Corrupt",
        "ck.t2 OK",
    ] {
        assert!(
            lines.iter().any(|l| l == want),
            "no line {want:?} in:\n{out}"
        );
    }
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
