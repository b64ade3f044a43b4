//! sysbench's exact OLTP statements (oltp_common.lua), prepared once and executed with bound
//! parameters, checked against values computed independently in the test.
mod common;

use common::{engine, rows, Ctx};
use shoal_exec::plan::{Access, KeyName};
use shoal_exec::ExecOutput;
use shoal_sql::value::Value;

fn c_val(i: i64) -> String {
    format!(
        "{:0>11}-{:0>11}-{:0>11}-{:0>11}-{:0>11}-{:0>11}-{:0>11}-{:0>11}-{:0>11}-{:0>11}",
        i,
        i + 1,
        i + 2,
        i + 3,
        i + 4,
        i + 5,
        i + 6,
        i + 7,
        i + 8,
        i + 9
    )
}

#[test]
fn sysbench_statements() {
    let (_dir, eng) = engine("sysbench");
    let mut ts = eng.session();
    let mut ctx = Ctx::default();
    let db = Some("test");
    ts.query("DROP TABLE IF EXISTS sbtest1", db, &mut ctx)
        .expect("drop");
    ts.query(
        "CREATE TABLE sbtest1(\n  id INTEGER NOT NULL AUTO_INCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n) /*! ENGINE = innodb */ ",
        db,
        &mut ctx,
    )
    .expect("create");
    // Bulk insert like `sysbench prepare` (multi-row, no id: auto-increment).
    let n = 1000i64;
    let k_of = |i: i64| (i * 7919) % 500;
    for chunk in (1..=n).collect::<Vec<_>>().chunks(100) {
        let vals: Vec<String> = chunk
            .iter()
            .map(|&i| format!("({}, '{}', 'pad{i}')", k_of(i), c_val(i)))
            .collect();
        let out = ts
            .query(
                &format!("INSERT INTO sbtest1(k, c, pad) VALUES{}", vals.join(",")),
                db,
                &mut ctx,
            )
            .expect("insert");
        assert!(matches!(
            out,
            ExecOutput::Ok {
                affected_rows: 100,
                ..
            }
        ));
    }
    ts.query("CREATE INDEX k_1 ON sbtest1(k)", db, &mut ctx)
        .expect("index");

    let point = ts
        .prepare("SELECT c FROM sbtest1 WHERE id=?", db)
        .expect("prep");
    assert_eq!(point.param_count, 1);
    assert_eq!(point.columns.len(), 1);
    assert_eq!(point.columns[0].name, "c");
    assert!(matches!(point.access(), Some(Access::PkPoint(_))));
    for id in [1i64, 500, 1000] {
        let out = ts
            .execute(&point, &[Value::Int(id)], &mut ctx)
            .expect("point");
        assert_eq!(rows(&out), vec![c_val(id)]);
    }
    assert!(rows(
        &ts.execute(&point, &[Value::Int(5000)], &mut ctx)
            .expect("miss")
    )
    .is_empty());

    let range = ts
        .prepare("SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?", db)
        .expect("prep");
    assert!(matches!(
        range.access(),
        Some(Access::Range {
            key: KeyName::Primary,
            ..
        })
    ));
    let out = ts
        .execute(&range, &[Value::Int(10), Value::Int(109)], &mut ctx)
        .expect("range");
    assert_eq!(rows(&out), (10..=109).map(c_val).collect::<Vec<_>>());

    let sum = ts
        .prepare("SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?", db)
        .expect("prep");
    let want: i64 = (10..=109).map(k_of).sum();
    let out = ts
        .execute(&sum, &[Value::Int(10), Value::Int(109)], &mut ctx)
        .expect("sum");
    assert_eq!(rows(&out), vec![want.to_string()]);

    let order = ts
        .prepare(
            "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
            db,
        )
        .expect("prep");
    let out = ts
        .execute(&order, &[Value::Int(95), Value::Int(105)], &mut ctx)
        .expect("order");
    let mut want: Vec<String> = (95..=105).map(c_val).collect();
    want.sort();
    assert_eq!(rows(&out), want);

    let distinct = ts
        .prepare(
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
            db,
        )
        .expect("prep");
    let out = ts
        .execute(&distinct, &[Value::Int(95), Value::Int(105)], &mut ctx)
        .expect("distinct");
    assert_eq!(rows(&out), want);

    // select_random_points: secondary index IN list.
    let pts = ts
        .prepare("SELECT id, k, c, pad FROM sbtest1 WHERE k IN (?, ?, ?)", db)
        .expect("prep");
    assert!(matches!(
        pts.access(),
        Some(Access::In {
            key: KeyName::Index(_),
            ..
        })
    ));
    let out = ts
        .execute(
            &pts,
            &[
                Value::Int(k_of(3)),
                Value::Int(k_of(4)),
                Value::Int(k_of(3)),
            ],
            &mut ctx,
        )
        .expect("points");
    let mut want_ids: Vec<i64> = (1..=n)
        .filter(|&i| k_of(i) == k_of(3) || k_of(i) == k_of(4))
        .collect();
    want_ids.sort();
    let mut got_ids: Vec<i64> = rows(&out)
        .iter()
        .map(|r| r.split('|').next().unwrap_or("").parse().unwrap_or(-1))
        .collect();
    got_ids.sort();
    assert_eq!(got_ids, want_ids);

    // select_random_ranges: count over OR-ed index ranges (full scan + filter, still correct).
    let rr = ts
        .prepare(
            "SELECT count(k) FROM sbtest1 WHERE k BETWEEN ? AND ? OR k BETWEEN ? AND ?",
            db,
        )
        .expect("prep");
    let out = ts
        .execute(
            &rr,
            &[
                Value::Int(10),
                Value::Int(20),
                Value::Int(400),
                Value::Int(405),
            ],
            &mut ctx,
        )
        .expect("ranges");
    let want = (1..=n)
        .filter(|&i| (10..=20).contains(&k_of(i)) || (400..=405).contains(&k_of(i)))
        .count();
    assert_eq!(rows(&out), vec![want.to_string()]);

    // Writes, inside BEGIN/COMMIT like oltp_read_write.
    let upd_k = ts
        .prepare("UPDATE sbtest1 SET k=k+1 WHERE id=?", db)
        .expect("prep");
    let upd_c = ts
        .prepare("UPDATE sbtest1 SET c=? WHERE id=?", db)
        .expect("prep");
    let del = ts
        .prepare("DELETE FROM sbtest1 WHERE id=?", db)
        .expect("prep");
    let ins = ts
        .prepare(
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
            db,
        )
        .expect("prep");
    assert_eq!(ins.param_count, 4);
    ts.begin().expect("begin");
    let out = ts
        .execute(&upd_k, &[Value::Int(7)], &mut ctx)
        .expect("upd k");
    assert!(
        matches!(&out, ExecOutput::Ok { affected_rows: 1, info, .. } if info == "Rows matched: 1  Changed: 1  Warnings: 0")
    );
    ts.execute(
        &upd_c,
        &[Value::Str("new-c".into()), Value::Int(8)],
        &mut ctx,
    )
    .expect("upd c");
    let out = ts.execute(&del, &[Value::Int(9)], &mut ctx).expect("del");
    assert!(matches!(
        out,
        ExecOutput::Ok {
            affected_rows: 1,
            ..
        }
    ));
    ts.execute(
        &ins,
        &[
            Value::Int(9),
            Value::Int(42),
            Value::Str("re".into()),
            Value::Str("p".into()),
        ],
        &mut ctx,
    )
    .expect("ins");
    ts.commit().expect("commit");
    let out = ts
        .query(
            "SELECT id, k, c FROM sbtest1 WHERE id IN (7, 8, 9)",
            db,
            &mut ctx,
        )
        .expect("check");
    assert_eq!(
        rows(&out),
        vec![
            format!("7|{}|{}", k_of(7) + 1, c_val(7)),
            format!("8|{}|new-c", k_of(8)),
            "9|42|re".to_string()
        ]
    );
    // The secondary index follows the updates.
    let out = ts
        .query("SELECT id FROM sbtest1 WHERE k = 42", db, &mut ctx)
        .expect("k");
    assert!(rows(&out).contains(&"9".to_string()));
    ts.query("ANALYZE TABLE sbtest1", db, &mut ctx)
        .expect("analyze");
    ts.query("DROP TABLE IF EXISTS sbtest1", db, &mut ctx)
        .expect("drop");
    assert!(ts.execute(&point, &[Value::Int(1)], &mut ctx).is_err());
}
