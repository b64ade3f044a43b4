//! TIME over the wire, through the real `shoal` binary: TIME and TIME(n) columns and TIME
//! expressions are described as MariaDB describes them (MYSQL_TYPE_TIME, display length,
//! decimals, flags), their values arrive as TIME values in the binary row format (negative,
//! past 24 hours, with a fraction) and as MariaDB's text in the text protocol, and TIME
//! parameters of prepared statements (binary-protocol TIME values, days included) are stored,
//! compared and looked up through a TIME key. The same observations are made against the
//! private MariaDB when it is installed and must be identical, so the expectations are
//! MariaDB's; a few are also asserted directly, so the test fails without MariaDB too.

mod support;

use mysql::prelude::Queryable;
use mysql::{Conn, Row, Value};
use support::Shoal;

/// A TIME column's description as a line: display length, decimals, and whether it is flagged
/// binary (the other flags, and other columns' descriptions, are not what this test is about:
/// shoal describes computed columns in its own way, `crates/exec/src/convert.rs`).
fn describe(c: &mysql::Column) -> String {
    if c.column_type() != mysql::consts::ColumnType::MYSQL_TYPE_TIME {
        return format!("{} not TIME", c.name_str());
    }
    format!(
        "{} TIME len={} dec={} binary={}",
        c.name_str(),
        c.column_length(),
        c.decimals(),
        c.flags().contains(mysql::consts::ColumnFlags::BINARY_FLAG)
    )
}

/// A value as a line: text bytes as text, a TIME by its parts.
fn value_line(v: Option<&Value>) -> String {
    match v {
        Some(Value::Bytes(b)) => format!("text {}", String::from_utf8_lossy(b)),
        Some(Value::Time(neg, d, h, m, s, us)) => {
            format!("time neg={neg} days={d} {h}:{m}:{s} us={us}")
        }
        Some(v) => format!("{v:?}"),
        None => "none".into(),
    }
}

/// A row's values as lines (their protocol form: text bytes, or TIME values).
fn values(r: &Row) -> Vec<String> {
    (0..r.len()).map(|i| value_line(r.as_ref(i))).collect()
}

/// Every observation made through `c`, in order.
fn observe(c: &mut Conn, what: &str) -> Vec<String> {
    let mut out = Vec::new();
    for q in [
        "DROP DATABASE IF EXISTS timewire",
        "CREATE DATABASE timewire",
        "USE timewire",
        "CREATE TABLE tm (id INT PRIMARY KEY, t TIME NOT NULL, t3 TIME(3), KEY kt (t))",
    ] {
        c.query_drop(q)
            .unwrap_or_else(|e| panic!("{what}: {q}: {e}"));
    }
    // Binary-protocol TIME parameters: negative, days, a fraction (cut to the column's
    // digits), and a string parameter read as a time.
    let params: Vec<(i64, Value, Value)> = vec![
        (
            1,
            Value::Time(true, 1, 2, 3, 4, 0),
            Value::Time(false, 0, 10, 0, 0, 123_456),
        ),
        (
            2,
            Value::Time(false, 4, 4, 0, 0, 0),
            Value::Time(true, 0, 0, 0, 0, 500_000),
        ),
        (
            3,
            Value::Time(false, 0, 0, 0, 0, 0),
            Value::Bytes(b"838:59:59.999".to_vec()),
        ),
        (4, Value::Bytes(b"-00:30".to_vec()), Value::NULL),
    ];
    for (id, t, t3) in params {
        c.exec_drop("INSERT INTO tm VALUES (?, ?, ?)", (id, t, t3))
            .unwrap_or_else(|e| panic!("{what}: prepared insert {id}: {e}"));
    }
    let select = "SELECT id, t, t3, t + 0, CONCAT(t3, ''), TIME'10:00:00', \
                  CAST('1:00' AS TIME(2)), SEC_TO_TIME(1.5), TIMEDIFF(t, t3), \
                  ADDTIME(t3, '00:00:01'), MAKETIME(1, 2, 3) FROM tm ORDER BY t";
    // Text protocol.
    let mut res = c.query_iter(select).unwrap();
    let cols: Vec<String> = res.columns().as_ref().iter().map(describe).collect();
    out.extend(cols.iter().map(|d| format!("text column {d}")));
    for r in res.by_ref() {
        out.extend(
            values(&r.unwrap())
                .into_iter()
                .map(|v| format!("text row {v}")),
        );
    }
    drop(res);
    // Binary protocol (a prepared statement), the same query.
    let st = c.prep(select).unwrap();
    out.extend(
        st.columns()
            .iter()
            .map(|c| format!("binary column {}", describe(c))),
    );
    let rows: Vec<Row> = c.exec(&st, ()).unwrap();
    for r in &rows {
        out.extend(values(r).into_iter().map(|v| format!("binary row {v}")));
    }
    // A TIME parameter compared with a TIME column, through its key and without.
    for q in [
        "SELECT id FROM tm WHERE t = ?",
        "SELECT id FROM tm WHERE t < ? ORDER BY t",
        "SELECT id FROM tm IGNORE INDEX (kt) WHERE t >= ? ORDER BY id",
    ] {
        for p in [
            Value::Time(true, 1, 2, 3, 4, 0),
            Value::Time(false, 0, 0, 0, 0, 0),
            Value::Bytes(b"100:00:00".to_vec()),
        ] {
            let ids: Vec<i64> = c.exec(q, (p.clone(),)).unwrap();
            out.push(format!("{q} [{}] -> {ids:?}", p.as_sql(false)));
        }
    }
    // A TIME result of a prepared statement with a parameter.
    let v: Option<Value> = c
        .exec_first(
            "SELECT ADDTIME(?, TIME'01:00:00')",
            (Value::Time(true, 0, 0, 30, 0, 0),),
        )
        .unwrap();
    out.push(format!("addtime param -> {}", value_line(v.as_ref())));
    c.query_drop("DROP DATABASE timewire").unwrap();
    out
}

#[test]
fn time_values_cross_both_protocols_as_in_mariadb() {
    let s = Shoal::start("time-values", &[]);
    let mut c = s.conn();
    let shoal = observe(&mut c, "shoal");
    // Without MariaDB: the essentials, directly.
    let has = |line: &str| shoal.iter().any(|l| l == line);
    assert!(
        shoal
            .iter()
            .any(|l| l == "binary column t TIME len=10 dec=0 binary=true"),
        "{shoal:#?}"
    );
    assert!(
        shoal
            .iter()
            .any(|l| l == "binary column t3 TIME len=14 dec=3 binary=true"),
        "{shoal:#?}"
    );
    assert!(
        has("binary row time neg=true days=1 2:3:4 us=0"),
        "{shoal:#?}"
    );
    assert!(has("text row text -26:03:04"), "{shoal:#?}");
    assert!(has("text row text 838:59:59.999"), "{shoal:#?}");
    assert!(
        has("binary row time neg=false days=4 4:0:0 us=0"),
        "{shoal:#?}"
    );
    assert!(
        has("binary row time neg=false days=0 10:0:0 us=123000"),
        "{shoal:#?}"
    );
    assert!(has("text row text 10:00:00.123"), "{shoal:#?}");
    let Some((_mariadb, opts)) = support::mariadb(false) else {
        return;
    };
    let mut c = Conn::new(opts).expect("connect to MariaDB");
    let mariadb = observe(&mut c, "mariadb");
    let differ: Vec<String> = shoal
        .iter()
        .zip(&mariadb)
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("shoal:   {a}\nmariadb: {b}"))
        .collect();
    assert!(
        differ.is_empty(),
        "differs from MariaDB:\n{}",
        differ.join("\n")
    );
    assert_eq!(shoal.len(), mariadb.len(), "{shoal:#?}\n{mariadb:#?}");
}
