//! Binary strings over the wire, through the real `shoal` binary: every one of the 256 byte
//! values survives a prepared INSERT (a binary-protocol BLOB parameter) into a BLOB column and
//! reads back byte-identical through the text protocol and the binary protocol, with the
//! column described as MariaDB describes it (BLOB, charset 63 `binary`); a hex literal reads
//! back as the same bytes; a parameter that is not UTF-8 into a text column is error 1366
//! (strict mode), as in MariaDB. The same checks run against the private MariaDB when it is
//! installed, so the expectations are MariaDB's.

mod support;

use mysql::prelude::Queryable;
use mysql::{Conn, Value};
use support::Shoal;

/// Every byte value, twice, in an order that puts invalid UTF-8 sequences everywhere.
fn all_bytes() -> Vec<u8> {
    let mut v: Vec<u8> = (0..=255u8).collect();
    v.extend((0..=255u8).rev());
    v
}

fn err_code(e: &mysql::Error) -> u16 {
    match e {
        mysql::Error::MySqlError(m) => m.code,
        other => panic!("not a server error: {other}"),
    }
}

/// The checks, on any server reachable through `c`.
fn round_trip(c: &mut Conn, what: &str) {
    let data = all_bytes();
    for q in [
        "DROP DATABASE IF EXISTS bin",
        "CREATE DATABASE bin",
        "USE bin",
        "CREATE TABLE b (id INT PRIMARY KEY, v BLOB, t TEXT)",
    ] {
        c.query_drop(q)
            .unwrap_or_else(|e| panic!("{what}: {q}: {e}"));
    }
    // Binary protocol in: the mysql crate sends Vec<u8> as MYSQL_TYPE_BLOB... parameters.
    c.exec_drop(
        "INSERT INTO b (id, v) VALUES (?, ?)",
        (1, Value::Bytes(data.clone())),
    )
    .unwrap_or_else(|e| panic!("{what}: prepared insert: {e}"));
    // Text protocol out.
    let text: Vec<u8> = c
        .query_first("SELECT v FROM b WHERE id = 1")
        .unwrap()
        .expect("a row");
    assert_eq!(text, data, "{what}: text protocol read");
    // Binary protocol out.
    let bin: Vec<u8> = c
        .exec_first("SELECT v FROM b WHERE id = ?", (1,))
        .unwrap()
        .expect("a row");
    assert_eq!(bin, data, "{what}: binary protocol read");
    // SQL sees the bytes too.
    let (len, hex): (i64, String) = c
        .query_first("SELECT LENGTH(v), HEX(v) FROM b WHERE id = 1")
        .unwrap()
        .unwrap();
    assert_eq!(len, 512, "{what}");
    let want: String = data.iter().map(|b| format!("{b:02X}")).collect();
    assert_eq!(hex, want, "{what}");
    // A hex literal, and a comparison with a parameter, are exact.
    let n: i64 = c
        .exec_first(
            "SELECT COUNT(*) FROM b WHERE v = ?",
            (Value::Bytes(data.clone()),),
        )
        .unwrap()
        .unwrap();
    assert_eq!(n, 1, "{what}: = parameter");
    let lit: Vec<u8> = c.query_first("SELECT X'00FF80' AS x").unwrap().unwrap();
    assert_eq!(lit, vec![0x00, 0xFF, 0x80], "{what}: hex literal");
    // Column metadata: a BLOB column of the binary charset, and a binary expression.
    let res = c
        .query_iter("SELECT v, X'00FF' AS x, t FROM b WHERE id = 1")
        .unwrap();
    let cols: Vec<(mysql::consts::ColumnType, u16)> = res
        .columns()
        .as_ref()
        .iter()
        .map(|col| (col.column_type(), col.character_set()))
        .collect();
    drop(res);
    use mysql::consts::ColumnType as T;
    assert_eq!(cols[0], (T::MYSQL_TYPE_BLOB, 63), "{what}: BLOB column");
    assert_eq!(cols[1], (T::MYSQL_TYPE_VAR_STRING, 63), "{what}: X'..'");
    assert_ne!(cols[2].1, 63, "{what}: TEXT column is not binary");
    // Bytes that are not UTF-8 into a text column: strict mode refuses them.
    let e = c
        .exec_drop(
            "INSERT INTO b (id, t) VALUES (?, ?)",
            (2, Value::Bytes(vec![b'a', 0xFF, 0x80])),
        )
        .unwrap_err();
    assert_eq!(err_code(&e), 1366, "{what}: {e}");
    // UTF-8 bytes are text.
    c.exec_drop(
        "INSERT INTO b (id, t) VALUES (?, ?)",
        (3, Value::Bytes("é".as_bytes().to_vec())),
    )
    .unwrap();
    let t: String = c
        .query_first("SELECT t FROM b WHERE id = 3")
        .unwrap()
        .unwrap();
    assert_eq!(t, "é", "{what}");
    c.query_drop("DROP DATABASE bin").unwrap();
}

#[test]
fn every_byte_value_round_trips_through_both_protocols() {
    let s = Shoal::start("binary-strings", &[]);
    let mut c = s.conn();
    round_trip(&mut c, "shoal");
    // The expectations are MariaDB's: the same checks against the private one (its
    // `start` says SKIPPED itself when mariadbd is missing).
    let Some((_mariadb, opts)) = support::mariadb(false) else {
        return;
    };
    let mut c = Conn::new(opts).expect("connect to MariaDB");
    round_trip(&mut c, "mariadb");
}
