//! String keys that follow the collation, over the wire (issue 16, step 10a):
//!
//! * an indexed string equality reads only the matching rows (`Innodb_rows_read` moves by the
//!   number of rows returned), through the text and the binary protocol (`?` bound as a
//!   string), while a number bound (`c = 0`, compared as numbers) scans;
//! * the 1062 message for a case variant is MariaDB's, word for word (checked against a
//!   private MariaDB when `mariadbd` is installed);
//! * a datadir whose catalog predates key formats (its table entry rewritten here the old way,
//!   with the server stopped) opens, keeps its binary keys, answers case-insensitively by
//!   scanning (never through the binary string key, never in binary order), and is moved to
//!   collated keys by a table copy (ALTER TABLE ... MODIFY), which first refuses the case
//!   variants the binary key held (1062).

mod support;

use mysql::prelude::Queryable;
use support::{temp_dir, Shoal as Srv};

fn rows_read(c: &mut mysql::Conn) -> u64 {
    let row: Option<(String, u64)> = c
        .query_first("SHOW GLOBAL STATUS LIKE 'Innodb_rows_read'")
        .unwrap();
    row.expect("Innodb_rows_read").1
}

/// The rows of `sql` (first column as text) and how many rows storage read for them.
fn read(c: &mut mysql::Conn, sql: &str) -> (Vec<String>, u64) {
    let before = rows_read(c);
    let ids: Vec<String> = c.query(sql).unwrap();
    (ids, rows_read(c) - before)
}

fn explain_key(c: &mut mysql::Conn, sql: &str) -> (String, Option<String>) {
    let row: mysql::Row = c.query_first(format!("EXPLAIN {sql}")).unwrap().unwrap();
    let ty: String = row.get("type").unwrap();
    let key: Option<String> = row.get("key").unwrap();
    (ty, key)
}

fn error_message(c: &mut mysql::Conn, sql: &str) -> (u16, String) {
    match c.query_drop(sql) {
        Err(mysql::Error::MySqlError(e)) => (e.code, e.message),
        other => panic!("{sql}: expected an error, got {other:?}"),
    }
}

#[test]
fn indexed_string_equality_reads_only_matching_rows() {
    let s = Srv::start("string-keys-read", &[]);
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE sk").unwrap();
    c.query_drop("USE sk").unwrap();
    c.query_drop(
        "CREATE TABLE cust (id INT PRIMARY KEY, last VARCHAR(16) NOT NULL, pad INT, KEY k_last (last))",
    )
    .unwrap();
    // 1000 rows, 100 last names, spelled in three cases and sometimes with trailing spaces.
    let vals: Vec<String> = (0..1000)
        .map(|i| {
            let name = format!("name{:03}", i % 100);
            let name = match i % 3 {
                0 => name,
                1 => name.to_uppercase(),
                _ => format!("Name{:03}  ", i % 100),
            };
            format!("({i}, '{name}', {i})")
        })
        .collect();
    c.query_drop(format!("INSERT INTO cust VALUES {}", vals.join(",")))
        .unwrap();

    let q = "SELECT id FROM cust WHERE last = 'NAME042 ' ORDER BY id";
    assert_eq!(
        explain_key(&mut c, q),
        ("ref".into(), Some("k_last".into()))
    );
    let (ids, read_n) = read(&mut c, q);
    let want: Vec<String> = (0..1000)
        .filter(|i| i % 100 == 42)
        .map(|i: i32| i.to_string())
        .collect();
    assert_eq!(ids, want);
    assert_eq!(read_n, 10, "rows read for 10 matching rows");

    // A range and an IN list with two spellings of one value (one lookup, no duplicates).
    let (ids, read_n) = read(
        &mut c,
        "SELECT id FROM cust WHERE last BETWEEN 'name010' AND 'NAME011' ORDER BY id",
    );
    assert_eq!(ids.len(), 20);
    assert_eq!(read_n, 20);
    let (ids, read_n) = read(
        &mut c,
        "SELECT id FROM cust WHERE last IN ('name007', 'NAME007', 'name008 ') ORDER BY id",
    );
    assert_eq!(ids.len(), 20);
    assert_eq!(read_n, 20);

    // The binary protocol: the `?` is bound as a string at execution.
    let before = rows_read(&mut c);
    let ids: Vec<i64> = c
        .exec(
            "SELECT id FROM cust WHERE last = ? ORDER BY id",
            ("nAmE099",),
        )
        .unwrap();
    assert_eq!(ids.len(), 10);
    assert_eq!(rows_read(&mut c) - before, 10);
    // Bound as a number it compares as numbers ('name..' is 0): every row is read.
    let before = rows_read(&mut c);
    let n: Vec<i64> = c
        .exec("SELECT COUNT(*) FROM cust WHERE last = ?", (0,))
        .unwrap();
    assert_eq!(n, [1000]);
    assert!(rows_read(&mut c) - before >= 1000);
    // A numeric literal is no key either, and EXPLAIN says so.
    assert_eq!(
        explain_key(&mut c, "SELECT id FROM cust WHERE last = 0"),
        ("ALL".into(), None)
    );

    // An index nested-loop join on the string key reads 1 + 10 rows per outer row.
    c.query_drop("CREATE TABLE o (oid INT PRIMARY KEY, who VARCHAR(16))")
        .unwrap();
    c.query_drop("INSERT INTO o VALUES (1, 'NAME001'), (2, 'name002 ')")
        .unwrap();
    let (ids, read_n) = read(
        &mut c,
        "SELECT c.id FROM o STRAIGHT_JOIN cust c ON c.last = o.who ORDER BY c.id",
    );
    assert_eq!(ids.len(), 20);
    assert_eq!(read_n, 2 + 20);
}

/// A 1062 for a case variant says what MariaDB says.
#[test]
fn duplicate_case_variant_message_is_mariadbs() {
    let stmts = [
        "CREATE TABLE u (code VARCHAR(10) PRIMARY KEY, name VARCHAR(10), UNIQUE KEY u_name (name))",
        "INSERT INTO u VALUES ('abc', 'x')",
    ];
    let dups = [
        "INSERT INTO u VALUES ('ABC', 'y')",
        "INSERT INTO u VALUES ('abc  ', 'y')",
        "INSERT INTO u VALUES ('b', 'X ')",
    ];
    let s = Srv::start("string-keys-dup", &[]);
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE d").unwrap();
    c.query_drop("USE d").unwrap();
    for q in stmts {
        c.query_drop(q).unwrap();
    }
    let ours: Vec<(u16, String)> = dups.iter().map(|q| error_message(&mut c, q)).collect();
    assert_eq!(
        ours,
        [
            (1062, "Duplicate entry 'ABC' for key 'PRIMARY'".to_string()),
            (
                1062,
                "Duplicate entry 'abc  ' for key 'PRIMARY'".to_string()
            ),
            (1062, "Duplicate entry 'X ' for key 'u_name'".to_string()),
        ]
    );
    let Some((_mariadb, opts)) = support::mariadb(false) else {
        eprintln!("SKIPPED the MariaDB comparison: no mariadbd");
        return;
    };
    let mut mc = mysql::Conn::new(opts).unwrap();
    mc.query_drop("CREATE DATABASE d").unwrap();
    mc.query_drop("USE d").unwrap();
    for q in stmts {
        mc.query_drop(q).unwrap();
    }
    let theirs: Vec<(u16, String)> = dups.iter().map(|q| error_message(&mut mc, q)).collect();
    assert_eq!(ours, theirs);
}

/// Rewrites the catalog entry of `db.t` in the stopped server's datadir as catalogs were
/// written before key formats existed: no `pk_format`, no index `format`.
fn make_catalog_old(data: &std::path::Path, db: &str, t: &str) {
    support::edit_catalog_entry(data, db, t, |v| {
        assert_eq!(v["pk_format"], "Collated");
        v.as_object_mut().unwrap().remove("pk_format");
        for ix in v["indexes"].as_array_mut().unwrap() {
            ix.as_object_mut().unwrap().remove("format");
        }
    });
}

#[test]
fn datadir_from_before_collated_keys_keeps_working() {
    let dir = temp_dir("string-keys-old");
    let mut s = Srv::start_in(&dir, &[]);
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE old").unwrap();
    c.query_drop("USE old").unwrap();
    c.query_drop("CREATE TABLE t (k VARCHAR(10) PRIMARY KEY, v INT, w VARCHAR(10), KEY kw (w))")
        .unwrap();
    drop(c);
    assert_eq!(s.stop(), Some(0));
    make_catalog_old(&dir.join("data"), "old", "t");
    let mut s = Srv::start_in(&dir, &[]);
    let mut c = s.conn();
    c.query_drop("USE old").unwrap();
    // Binary keys, as the old server had them: case variants are two keys.
    c.query_drop(
        "INSERT INTO t VALUES ('b', 1, 'x'), ('abc', 2, 'X'), ('ABC', 3, 'y'), ('C', 4, 'x ')",
    )
    .unwrap();
    // Lookups answer in the collation, by scanning: the binary keys are not used.
    let q = "SELECT v FROM t WHERE k = 'abc' ORDER BY v";
    assert_eq!(explain_key(&mut c, q), ("ALL".into(), None));
    let (vals, read_n) = read(&mut c, q);
    assert_eq!(vals, ["2", "3"]);
    assert_eq!(read_n, 4);
    let q = "SELECT v FROM t WHERE w = 'X' ORDER BY v";
    assert_eq!(explain_key(&mut c, q), ("ALL".into(), None));
    assert_eq!(read(&mut c, q).0, ["1", "2", "4"]);
    // ORDER BY the key column sorts in the collation, not in the key's binary order.
    let ks: Vec<String> = c.query("SELECT k FROM t ORDER BY k, v").unwrap();
    assert_eq!(ks, ["abc", "ABC", "b", "C"]);
    // The datadir survives another restart unchanged.
    drop(c);
    assert_eq!(s.stop(), Some(0));
    let mut s = Srv::start_in(&dir, &[]);
    let mut c = s.conn();
    c.query_drop("USE old").unwrap();
    let n: Option<u64> = c.query_first("SELECT COUNT(*) FROM t").unwrap();
    assert_eq!(n, Some(4));
    let ck: mysql::Row = c.query_first("CHECK TABLE t").unwrap().unwrap();
    assert_eq!(ck.get::<String, _>("Msg_text").unwrap(), "OK");
    // A table copy rebuilds every key collated: first refused over 'abc' / 'ABC'.
    let (code, msg) = error_message(&mut c, "ALTER TABLE t MODIFY v BIGINT");
    assert_eq!(code, 1062, "{msg}");
    c.query_drop("DELETE FROM t WHERE v = 3").unwrap();
    c.query_drop("ALTER TABLE t MODIFY v BIGINT").unwrap();
    let q = "SELECT v FROM t WHERE k = 'ABC '";
    assert_eq!(
        explain_key(&mut c, q),
        ("const".into(), Some("PRIMARY".into()))
    );
    assert_eq!(read(&mut c, q), (vec!["2".to_string()], 1));
    let q = "SELECT v FROM t WHERE w = 'x' ORDER BY v";
    assert_eq!(explain_key(&mut c, q).1.as_deref(), Some("kw"));
    assert_eq!(read(&mut c, q).0, ["1", "2", "4"]);
    let (code, _) = error_message(&mut c, "INSERT INTO t VALUES ('Abc', 9, NULL)");
    assert_eq!(code, 1062);
    drop(c);
    assert_eq!(s.stop(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}
