//! DATE / DATETIME / TIMESTAMP columns as keys: the planner reads through their indexes, and
//! every answer equals the one computed here from the data (the bound values that do not map
//! to a key exactly — a time of day against a DATE, a string that is no date — must widen the
//! read, never lose a row).
mod common;

use common::{engine, rows, Ctx};
use shoal_exec::plan::{Access, KeyName};
use shoal_sql::value::Value;

/// Row `id`'s DATE: 2020-01-(1 + id % 30); its DATETIME: that day at (id % 24):00.
fn day(id: i64) -> i64 {
    1 + id % 30
}
fn hour(id: i64) -> i64 {
    id % 24
}

#[test]
fn temporal_indexes_answer_like_a_scan() {
    let (_dir, eng) = engine("temporal");
    let mut ts = eng.session();
    let mut ctx = Ctx::default();
    let db = Some("test");
    ts.query(
        "CREATE TABLE ev (id INT PRIMARY KEY, d DATE NOT NULL, dt DATETIME, ts TIMESTAMP NULL, \
         KEY kd (d), KEY kdt (dt), KEY kts (ts))",
        db,
        &mut ctx,
    )
    .expect("create");
    let ids: Vec<i64> = (1..=300).collect();
    for chunk in ids.chunks(100) {
        let vals: Vec<String> = chunk
            .iter()
            .map(|&i| {
                let (d, h) = (day(i), hour(i));
                format!("({i}, '2020-01-{d:02}', '2020-01-{d:02} {h:02}:00:00', '2020-01-{d:02} {h:02}:00:00')")
            })
            .collect();
        ts.query(
            &format!("INSERT INTO ev VALUES {}", vals.join(",")),
            db,
            &mut ctx,
        )
        .expect("insert");
    }
    let count = |f: &dyn Fn(i64) -> bool| ids.iter().filter(|&&i| f(i)).count();
    let cases: Vec<(&str, Vec<Value>, usize, Option<&str>)> = vec![
        (
            "d = ?",
            vec![Value::Str("2020-01-05".into())],
            count(&|i| day(i) == 5),
            Some("kd"),
        ),
        // Another spelling of the same date.
        (
            "d = ?",
            vec![Value::Str("2020-1-5".into())],
            count(&|i| day(i) == 5),
            Some("kd"),
        ),
        // A time of day: no DATE equals it.
        (
            "d = ?",
            vec![Value::Str("2020-01-05 10:00:00".into())],
            0,
            Some("kd"),
        ),
        // The upper bound has a time of day: the read widens, the WHERE decides.
        (
            "d BETWEEN ? AND ?",
            vec![
                Value::Str("2020-01-03".into()),
                Value::Str("2020-01-07 12:00".into()),
            ],
            count(&|i| (3..=7).contains(&day(i))),
            Some("kd"),
        ),
        (
            "d IN (?, ?)",
            vec![Value::Str("2020-01-02".into()), Value::Int(20200103)],
            count(&|i| day(i) == 2 || day(i) == 3),
            Some("kd"),
        ),
        // Trailing characters: the date it starts with ('2020-01-1x' is 2020-01-01, as MariaDB
        // reads it beside a date), so nothing is before it.
        (
            "d < ?",
            vec![Value::Str("2020-01-1x".into())],
            count(&|i| day(i) < 1),
            Some("kd"),
        ),
        (
            "d <= ?",
            vec![Value::Str("2020-01-1x".into())],
            count(&|i| day(i) <= 1),
            Some("kd"),
        ),
        (
            "dt >= ?",
            vec![Value::Str("2020-01-29 12:00:00".into())],
            count(&|i| day(i) > 29 || (day(i) == 29 && hour(i) >= 12)),
            Some("kdt"),
        ),
        (
            "dt < ?",
            vec![Value::Date(shoal_sql::value::DateTime {
                year: 2020,
                month: 1,
                day: 3,
                ..shoal_sql::value::DateTime::ZERO
            })],
            count(&|i| day(i) < 3),
            Some("kdt"),
        ),
        (
            "ts = ?",
            vec![Value::Str("2020-01-10 06:00:00".into())],
            count(&|i| day(i) == 10 && hour(i) == 6),
            Some("kts"),
        ),
        (
            "ts > ? AND ts <= ?",
            vec![Value::Int(20200130), Value::Int(20200131)],
            count(&|i| day(i) == 30),
            Some("kts"),
        ),
    ];
    for (cond, params, want, key) in cases {
        let sql = format!("SELECT id FROM ev WHERE {cond}");
        let p = ts.prepare(&sql, db).expect("prepare");
        if let Some(k) = key {
            let uses = match p.access() {
                Some(Access::Range { key, .. } | Access::In { key, .. }) => {
                    *key == KeyName::Index(k.into())
                }
                _ => false,
            };
            assert!(uses, "{sql}: {:?}", p.access());
        }
        let out = ts.execute(&p, &params, &mut ctx).expect("execute");
        assert_eq!(rows(&out).len(), want, "{sql} with {params:?}");
    }
}
