//! The real Rust `mysql` client against `Connection` over TCP: login, text and binary protocol
//! for every value type, prepared statements, multi-statements, big values, errors.

mod common;

use common::TestServer;
use mysql::prelude::*;
use mysql::{Conn, OptsBuilder, Value};

fn opts(port: u16, user: &str, pass: Option<&str>) -> OptsBuilder {
    OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some(user))
        .pass(pass)
        .prefer_socket(false)
}

fn connect(port: u16) -> Conn {
    Conn::new(opts(port, "root", Some("pw"))).expect("connect")
}

fn expected_types() -> Vec<Value> {
    vec![
        Value::Int(-5),
        Value::UInt(250),
        Value::Int(-30000),
        Value::Int(-2_000_000_000),
        Value::UInt(4_000_000_000),
        Value::Int(i64::MIN),
        Value::UInt(u64::MAX),
        Value::Float(1.5),
        Value::Double(-2.25),
        Value::Bytes(b"12345.678".to_vec()),
        Value::Bytes("héllo wörld".as_bytes().to_vec()),
        Value::Bytes(vec![0, 1, 2, 255, 0]),
        Value::NULL,
        Value::Date(2024, 2, 29, 0, 0, 0, 0),
        Value::Date(1999, 12, 31, 23, 59, 58, 123456),
        Value::Time(true, 1, 2, 3, 4, 0),
    ]
}

#[test]
fn login_and_wrong_password() {
    let srv = TestServer::start(64 << 20);
    let mut c = connect(srv.port);
    c.ping().unwrap();
    let e = Conn::new(opts(srv.port, "root", Some("wrong"))).unwrap_err();
    let s = e.to_string();
    assert!(s.contains("1045") && s.contains("Access denied"), "{s}");
    let e = Conn::new(opts(srv.port, "nobody", None)).unwrap_err();
    assert!(e.to_string().contains("1045"), "{e}");
    let mut c = Conn::new(opts(srv.port, "nopw", None)).unwrap();
    assert_eq!(c.query_first::<i64, _>("SELECT 7").unwrap(), Some(7));
    // Initial database through CONNECT_WITH_DB, and 1049.
    let mut c = Conn::new(opts(srv.port, "nopw", None).db_name(Some("sbtest"))).unwrap();
    assert_eq!(
        c.query_first::<String, _>("SELECT DATABASE()").unwrap(),
        Some("sbtest".into())
    );
    let e = Conn::new(opts(srv.port, "nopw", None).db_name(Some("nosuchdb"))).unwrap_err();
    assert!(e.to_string().contains("1049"), "{e}");
}

#[test]
fn text_protocol_every_type() {
    let srv = TestServer::start(64 << 20);
    let mut c = connect(srv.port);
    let rows: Vec<mysql::Row> = c.query("types").unwrap();
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    // Text protocol: everything but NULL arrives as bytes; compare the text renderings.
    let got: Vec<Value> = row.clone().unwrap();
    let want = [
        "-5",
        "250",
        "-30000",
        "-2000000000",
        "4000000000",
        "-9223372036854775808",
        "18446744073709551615",
        "1.5",
        "-2.25",
        "12345.678",
        "héllo wörld",
    ];
    for (i, w) in want.iter().enumerate() {
        assert_eq!(got[i], Value::Bytes(w.as_bytes().to_vec()), "column {i}");
    }
    assert_eq!(got[11], Value::Bytes(vec![0, 1, 2, 255, 0]));
    assert_eq!(got[12], Value::NULL);
    assert_eq!(got[13], Value::Bytes(b"2024-02-29".to_vec()));
    assert_eq!(
        got[14],
        Value::Bytes(b"1999-12-31 23:59:58.123456".to_vec())
    );
    assert_eq!(got[15], Value::Bytes(b"-26:03:04".to_vec()));
    // Column definitions arrive intact.
    let cols = row.columns_ref();
    assert_eq!(cols.len(), 16);
    assert_eq!(cols[1].name_str(), "utiny");
    assert!(cols[1]
        .flags()
        .contains(mysql::consts::ColumnFlags::UNSIGNED_FLAG));
    assert_eq!(
        cols[14].column_type(),
        mysql::consts::ColumnType::MYSQL_TYPE_DATETIME
    );
}

#[test]
fn binary_protocol_every_type() {
    let srv = TestServer::start(64 << 20);
    let mut c = connect(srv.port);
    let rows: Vec<mysql::Row> = c.exec("TYPES", ()).unwrap();
    let got: Vec<Value> = rows[0].clone().unwrap();
    let mut want = expected_types();
    // The client decodes unsigned integers narrower than 64 bits as Int.
    want[1] = Value::Int(250);
    want[4] = Value::Int(4_000_000_000);
    assert_eq!(got, want);
}

#[test]
fn prepared_params_roundtrip_every_type() {
    let srv = TestServer::start(64 << 20);
    let mut c = connect(srv.port);
    let params = vec![
        Value::Int(-1),
        Value::Int(i64::MAX),
        Value::UInt(u64::MAX),
        Value::Float(0.5),
        Value::Double(1e300),
        Value::Bytes(b"str'ing".to_vec()),
        Value::Bytes(vec![0, 255, 10]),
        Value::NULL,
        Value::Date(2000, 1, 1, 0, 0, 0, 0),
        Value::Date(2000, 1, 1, 12, 30, 45, 999999),
        Value::Time(false, 0, 1, 2, 3, 4),
    ];
    let stmt = c
        .prep(format!("ECHO {}", vec!["?"; params.len()].join(",")))
        .unwrap();
    for _ in 0..3 {
        let row: mysql::Row = c.exec_first(&stmt, params.clone()).unwrap().unwrap();
        let got: Vec<Value> = row.unwrap();
        assert_eq!(got, params);
    }
    // Same statement with different values (and types) again.
    let p2: Vec<Value> = (0..params.len() as i64).map(Value::Int).collect();
    let row: mysql::Row = c.exec_first(&stmt, p2.clone()).unwrap().unwrap();
    assert_eq!(row.unwrap(), p2);
    c.close(stmt).unwrap();
    // Executing a closed statement id fails cleanly; the connection stays usable.
    c.ping().unwrap();
}

#[test]
fn multi_statements_and_results() {
    let srv = TestServer::start(64 << 20);
    let mut c = connect(srv.port);
    let mut result = c
        .query_iter("SELECT 1; SELECT 2; INSERT x; SELECT 3")
        .unwrap();
    let mut sets = Vec::new();
    while let Some(set) = result.iter() {
        let affected = set.affected_rows();
        let rows: Vec<Vec<Value>> = set.map(|r| r.unwrap().unwrap()).collect();
        sets.push((rows, affected));
    }
    drop(result);
    assert_eq!(sets.len(), 4);
    assert_eq!(sets[0].0, vec![vec![Value::Bytes(b"1".to_vec())]]);
    assert_eq!(sets[1].0, vec![vec![Value::Bytes(b"2".to_vec())]]);
    assert!(sets[2].0.is_empty());
    assert_eq!(sets[2].1, 3);
    assert_eq!(sets[3].0, vec![vec![Value::Bytes(b"3".to_vec())]]);
    // An error in the middle stops the batch and is reported.
    let mut result = c.query_iter("SELECT 1; garbage; SELECT 3").unwrap();
    let first: Vec<Vec<Value>> = result
        .iter()
        .unwrap()
        .map(|r| r.unwrap().unwrap())
        .collect();
    assert_eq!(first, vec![vec![Value::Bytes(b"1".to_vec())]]);
    let mut second = result.iter().unwrap();
    let e = second.next().unwrap().unwrap_err();
    assert!(e.to_string().contains("1064"), "{e}");
    drop(second);
    drop(result);
    assert_eq!(c.query_first::<i64, _>("SELECT 9").unwrap(), Some(9));
    // OK packet fields.
    c.query_drop("INSERT something").unwrap();
    assert_eq!(c.affected_rows(), 3);
    assert_eq!(c.last_insert_id(), 42);
    assert_eq!(c.warnings(), 1);
}

#[test]
fn errors_keep_the_connection() {
    let srv = TestServer::start(64 << 20);
    let mut c = connect(srv.port);
    let e = c.query_drop("nonsense").unwrap_err();
    match e {
        mysql::Error::MySqlError(e) => {
            assert_eq!(e.code, 1064);
            assert_eq!(e.state, "42000");
        }
        other => panic!("{other:?}"),
    }
    let e = c.prep("NOT PREPARABLE").unwrap_err();
    assert!(e.to_string().contains("1064"));
    // A backend value that does not fit its column type is an error, not a wrong row.
    let e = c.exec_drop("BAD BINARY", ()).unwrap_err();
    assert!(e.to_string().contains("1105"), "{e}");
    let e = c.query_drop("RAGGED").unwrap_err();
    assert!(e.to_string().contains("1105"), "{e}");
    c.ping().unwrap();
    c.reset().unwrap();
    assert_eq!(c.query_first::<i64, _>("SELECT 4").unwrap(), Some(4));
}

#[test]
fn values_larger_than_16mb_both_directions() {
    let srv = TestServer::start(64 << 20);
    let mut c = connect(srv.port);
    let n = 17 * 1024 * 1024 + 3;
    // Server -> client: one row larger than a packet.
    let v: Vec<u8> = c.query_first(format!("REPEAT {n}")).unwrap().unwrap();
    assert_eq!(v.len(), n);
    assert!(v.iter().all(|&b| b == b'a'));
    // Exactly one full chunk (boundary case: an empty trailing packet).
    let v: Vec<u8> = c.query_first("REPEAT 16777200").unwrap().unwrap();
    assert_eq!(v.len(), 16_777_200);
    // Client -> server: a command larger than a packet.
    let big = "x".repeat(n);
    let len: u64 = c.query_first(format!("LEN {big}")).unwrap().unwrap();
    assert_eq!(len as usize, n);
    // And as a binary parameter.
    let stmt = c.prep("ECHO ?").unwrap();
    let row: mysql::Row = c.exec_first(&stmt, (big.clone(),)).unwrap().unwrap();
    let got: Vec<u8> = row.get(0).unwrap();
    assert_eq!(got.len(), n);
}

#[test]
fn many_rows_and_concurrent_clients() {
    let srv = TestServer::start(64 << 20);
    let port = srv.port;
    let handles: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = connect(port);
                for i in 0..20 {
                    let rows: Vec<i64> = c.query(format!("ROWS {}", 100 + i + t)).unwrap();
                    assert_eq!(rows.len(), 100 + i + t);
                    assert_eq!(
                        rows.iter().sum::<i64>(),
                        ((100 + i + t) * (99 + i + t) / 2) as i64
                    );
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
