//! DATE / DATETIME / TIMESTAMP / TIME columns as keys: the planner reads through their indexes, and
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

/// Row `id`'s TIME(1) in tenths of a second: spread over the whole range, negative and past
/// 24 hours, some with a fraction.
fn tenths(id: i64) -> i64 {
    const MAX: i64 = (838 * 3600 + 59 * 60 + 59) * 10 + 9; // 838:59:59.9 in tenths
    (id * 7_919_003) % (2 * MAX + 1) - MAX
}

/// `tenths` as the text a TIME(1) shows.
fn time_text(t: i64) -> String {
    let a = t.abs();
    let secs = a / 10;
    format!(
        "{}{:02}:{:02}:{:02}.{}",
        if t < 0 { "-" } else { "" },
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        a % 10
    )
}

/// TIME keys read like a scan: ranges over negative and long times through the index and the
/// primary key (a TIME(1) primary key), bounds written as text, numbers and TIME values, and a
/// bound with more digits than the column holds (no key value: the read widens, the WHERE
/// decides).
#[test]
fn time_indexes_answer_like_a_scan() {
    let (_dir, eng) = engine("time-keys");
    let mut ts = eng.session();
    let mut ctx = Ctx::default();
    let db = Some("test");
    ts.query(
        "CREATE TABLE tk (t TIME(1) PRIMARY KEY, id INT NOT NULL, s TIME, KEY ks (s))",
        db,
        &mut ctx,
    )
    .expect("create");
    let ids: Vec<i64> = (1..=400).collect();
    for chunk in ids.chunks(100) {
        let vals: Vec<String> = chunk
            .iter()
            .map(|&i| {
                let t = tenths(i);
                // `s` is the same time without its fraction (TIME(0) truncates).
                format!("('{}', {i}, '{}')", time_text(t), time_text(t))
            })
            .collect();
        ts.query(
            &format!("INSERT INTO tk VALUES {}", vals.join(",")),
            db,
            &mut ctx,
        )
        .expect("insert");
    }
    let count = |f: &dyn Fn(i64) -> bool| ids.iter().filter(|&&i| f(tenths(i))).count();
    // `s` holds whole seconds, truncated toward zero.
    let whole = |t: i64| t / 10 * 10;
    let h = |n: i64| n * 36_000;
    let time = |neg, h, m, s, micro| {
        Value::Time(shoal_sql::temporal::Time {
            neg,
            hour: h,
            minute: m,
            second: s,
            micro,
            fsp: 0,
        })
    };
    let cases: Vec<(&str, Vec<Value>, usize, &str)> = vec![
        (
            "t BETWEEN ? AND ?",
            vec![
                Value::Str("-50:00:00".into()),
                Value::Str("50:00:00".into()),
            ],
            count(&|t| (h(-50)..=h(50)).contains(&t)),
            "PRIMARY",
        ),
        (
            "t > ?",
            vec![Value::Str("100:00:00".into())],
            count(&|t| t > h(100)),
            "PRIMARY",
        ),
        (
            "t < ?",
            vec![Value::Int(-200_000)],
            count(&|t| t < h(-20)),
            "PRIMARY",
        ),
        (
            "t >= ? AND t < ?",
            vec![time(true, 500, 0, 0, 0), time(false, 0, 0, 0, 500_000)],
            count(&|t| t >= h(-500) && t < 5),
            "PRIMARY",
        ),
        // More digits than TIME(1) holds: no key bound, the WHERE decides.
        (
            "t < ?",
            vec![Value::Str("-800:00:00.05".into())],
            count(&|t| t * 100_000 < -(h(800) * 100_000 + 50_000)),
            "",
        ),
        (
            "s BETWEEN ? AND ?",
            vec![
                Value::Str("-838:59:59".into()),
                Value::Str("-400:00:00".into()),
            ],
            count(&|t| whole(t) <= h(-400)),
            "ks",
        ),
        (
            "s >= ?",
            vec![Value::Str("24:00:00".into())],
            count(&|t| whole(t) >= h(24)),
            "ks",
        ),
    ];
    for (cond, params, want, key) in cases {
        let sql = format!("SELECT id FROM tk WHERE {cond}");
        let p = ts.prepare(&sql, db).expect("prepare");
        if !key.is_empty() {
            let uses = match p.access() {
                Some(Access::Range { key: k, .. } | Access::In { key: k, .. }) => {
                    *k == if key == "PRIMARY" {
                        KeyName::Primary
                    } else {
                        KeyName::Index(key.into())
                    }
                }
                _ => false,
            };
            assert!(uses, "{sql}: {:?}", p.access());
        }
        let out = ts.execute(&p, &params, &mut ctx).expect("execute");
        assert!(
            want > 0 || cond.contains("0.05"),
            "{sql}: a case that selects nothing"
        );
        assert_eq!(rows(&out).len(), want, "{sql} with {params:?}");
    }
}
