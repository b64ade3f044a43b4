//! FLOAT columns hold single precision (MariaDB's 4-byte FLOAT): a value is stored as the
//! nearest `f32` and computed with as that float's double. Builds before this stored a FLOAT
//! column's values as the doubles they were given; such rows must read as the new ones do.
//! The test makes that datadir as those builds left it: a table whose column is DOUBLE gets
//! rows, then its catalog entry is rewritten to say FLOAT (the same encoding: the old build
//! wrote FLOAT rows exactly as DOUBLE rows), and the restarted server must answer as MariaDB.

mod support;

use mysql::prelude::Queryable;
use support::{temp_dir, Shoal as Srv};

/// Rewrites column `col` of `db.t` in the stopped server's datadir from DOUBLE to FLOAT, as
/// the catalog of an older build named a FLOAT column.
fn make_column_float(data: &std::path::Path, db: &str, t: &str, col: &str) {
    support::edit_catalog_entry(data, db, t, |v| {
        let c = v["columns"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|c| c["name"] == col)
            .expect("the column");
        assert_eq!(c["ty"], "Double");
        c["ty"] = "Float".into();
    });
}

#[test]
fn float_rows_from_before_single_precision_read_as_single() {
    let dir = temp_dir("float-old");
    let mut s = Srv::start_in(&dir, &[]);
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE old").unwrap();
    c.query_drop("CREATE TABLE old.t (id INT PRIMARY KEY, f DOUBLE, KEY kf (f))")
        .unwrap();
    c.query_drop("INSERT INTO old.t VALUES (1, 0.1), (2, 123456789), (3, 0.5)")
        .unwrap();
    drop(c);
    assert_eq!(s.stop(), Some(0));
    make_column_float(&dir.join("data"), "old", "t", "f");

    let mut s = Srv::start_in(&dir, &[]);
    let mut c = s.conn();
    // The answers MariaDB gives for these rows in a FLOAT column.
    let rows: Vec<(i64, String, i64, String)> = c
        .query("SELECT id, f, f IN (0.1, 0.5), f * 3 FROM old.t ORDER BY id")
        .unwrap();
    assert_eq!(
        rows,
        [
            (1, "0.1".into(), 0, "0.30000000447034836".into()),
            (2, "123457000".into(), 0, "370370376".into()),
            (3, "0.5".into(), 1, "1.5".into()),
        ]
    );
    // Read from the index's entries (which hold the old doubles) the same.
    let v: Vec<String> = c
        .query("SELECT f * 1 FROM old.t WHERE f > 0.09 ORDER BY f")
        .unwrap();
    assert_eq!(v, ["0.10000000149011612", "0.5", "123456792"]);
    // An old row and a new one holding the same single-precision value are equal.
    c.query_drop("INSERT INTO old.t VALUES (4, 0.1)").unwrap();
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM old.t a JOIN old.t b ON a.f = b.f AND a.id < b.id")
        .unwrap();
    assert_eq!(n, Some(1));
    // Rewriting an old row with its own value changes nothing.
    let r = c
        .query_iter("UPDATE old.t SET f = 0.1 WHERE id = 1")
        .unwrap();
    assert_eq!(r.affected_rows(), 0);
    drop(r);
    let ck: mysql::Row = c.query_first("CHECK TABLE old.t").unwrap().unwrap();
    assert_eq!(ck.get::<String, _>("Msg_text").unwrap(), "OK");
    drop(c);
    assert_eq!(s.stop(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}
