//! The planner's paths are used, not only printed: counted through the real `shoal` binary by
//! `Innodb_rows_read` (rows the store returned) and `Shoal_index_row_lookups` (rows a
//! secondary-index scan fetched by primary key for its entries).
//!
//! * OR-ed conditions on one key read the union of their ranges, each row once, as text and as
//!   a prepared statement, on the primary key and on a secondary index; a disjunct on another
//!   column makes it a full scan.
//! * A read whose columns a secondary index holds (its own and the primary key's) reads the
//!   index entries alone: no row is fetched, for ranges and for full scans (EXPLAIN: `Using
//!   index`, `type` `index`). Reading another column, a locking read, or a collated string
//!   column (the index holds its weight, not the string) fetches the rows.
//! * Joins run in the order the row estimates make cheapest; the estimates count what a path
//!   reads (EXPLAIN's `rows`, information_schema.TABLES' `TABLE_ROWS`).
//! * `col IS NULL` on an indexed nullable column is a lookup of the NULL key (`ref`), reading
//!   the NULL rows only; a WHERE that no row can satisfy (`1 = 0`, `id = 1 AND id = 2`) reads
//!   no row at all (EXPLAIN: `Impossible WHERE`).

mod support;

use mysql::prelude::Queryable;
use mysql::Conn;
use support::Shoal as Srv;

fn status(c: &mut Conn, name: &str) -> u64 {
    let r: Option<(String, u64)> = c
        .query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
        .unwrap();
    r.unwrap_or_else(|| panic!("no status variable {name}")).1
}

/// Runs `f`, returns what it returned and how much `Innodb_rows_read` and
/// `Shoal_index_row_lookups` grew meanwhile.
fn counted<T>(c: &mut Conn, f: impl FnOnce(&mut Conn) -> T) -> (T, u64, u64) {
    let (r0, l0) = (
        status(c, "Innodb_rows_read"),
        status(c, "Shoal_index_row_lookups"),
    );
    let out = f(c);
    let (r1, l1) = (
        status(c, "Innodb_rows_read"),
        status(c, "Shoal_index_row_lookups"),
    );
    (out, r1 - r0, l1 - l0)
}

/// EXPLAIN's (type, key, Extra) of the first table, by column name.
fn explain(c: &mut Conn, sql: &str) -> (String, Option<String>, String) {
    let row: mysql::Row = c.query_first(format!("EXPLAIN {sql}")).unwrap().unwrap();
    (
        row.get("type").unwrap(),
        row.get("key").unwrap(),
        row.get("Extra").unwrap(),
    )
}

fn setup(c: &mut Conn) {
    c.query_drop("CREATE DATABASE p").unwrap();
    c.query_drop(
        "CREATE TABLE p.t (id INT PRIMARY KEY, k INT, s VARCHAR(20), pad VARCHAR(100), \
         KEY kk (k), KEY ks (s))",
    )
    .unwrap();
    let values: Vec<String> = (1..=2000)
        .map(|i| format!("({i}, {}, 's{i:04}', REPEAT('x', 90))", 3 * i))
        .collect();
    c.query_drop(format!("INSERT INTO p.t VALUES {}", values.join(",")))
        .unwrap();
}

#[test]
fn or_conditions_read_the_union_of_their_ranges() {
    let s = Srv::start("planner-or", &[]);
    let mut c = s.conn();
    setup(&mut c);

    // Primary key: two points and a range, 12 rows of 2000.
    let (n, read, _) = counted(&mut c, |c| {
        c.query_first::<(i64, i64), _>(
            "SELECT COUNT(*), SUM(id) FROM p.t WHERE id = 5 OR id = 1500 OR id BETWEEN 100 AND 109",
        )
        .unwrap()
    });
    assert_eq!(n, Some((12, 5 + 1500 + (100..=109).sum::<i64>())));
    assert_eq!(
        read, 12,
        "three disjuncts on the primary key read {read} rows"
    );

    // Overlapping ranges and a repeated point: each row once.
    let (n, read, _) = counted(&mut c, |c| {
        c.query_first::<i64, _>(
            "SELECT COUNT(*) FROM p.t WHERE id BETWEEN 1 AND 10 OR id BETWEEN 5 AND 15 OR id = 7",
        )
        .unwrap()
    });
    assert_eq!(n, Some(15));
    assert_eq!(read, 15, "overlapping ranges read {read} rows");

    // Prepared, with parameters.
    let (n, read, _) = counted(&mut c, |c| {
        c.exec_first::<i64, _, _>("SELECT COUNT(*) FROM p.t WHERE id = ? OR id > ?", (3, 1990))
            .unwrap()
    });
    assert_eq!(n, Some(11));
    assert_eq!(read, 11, "prepared OR read {read} rows");

    // A secondary index (k = 3 * id): an equality and a range.
    let (ids, read, _) = counted(&mut c, |c| {
        c.query::<i64, _>("SELECT id FROM p.t WHERE k = 30 OR k > 5985 ORDER BY id")
            .unwrap()
    });
    assert_eq!(ids, vec![10, 1996, 1997, 1998, 1999, 2000]);
    assert_eq!(read, 6, "two disjuncts on an index read {read} rows");

    // In key order, descending, with LIMIT: stops early.
    let (ids, read, _) = counted(&mut c, |c| {
        c.query::<i64, _>("SELECT id FROM p.t WHERE id < 50 OR id > 1000 ORDER BY id DESC LIMIT 3")
            .unwrap()
    });
    assert_eq!(ids, vec![2000, 1999, 1998]);
    assert!(
        read <= 4,
        "ORDER BY DESC LIMIT 3 over a union read {read} rows"
    );

    // One disjunct on a column no key starts with: a full scan.
    let (n, read, _) = counted(&mut c, |c| {
        c.query_first::<i64, _>("SELECT COUNT(*) FROM p.t WHERE id = 1 OR pad = 'none'")
            .unwrap()
    });
    assert_eq!(n, Some(1));
    assert_eq!(read, 2000);

    assert_eq!(
        explain(
            &mut c,
            "SELECT * FROM p.t WHERE id = 5 OR id BETWEEN 100 AND 109"
        )
        .0,
        "range"
    );
    assert_eq!(
        explain(&mut c, "SELECT * FROM p.t WHERE k = 30 OR k > 5985").1,
        Some("kk".to_string())
    );
    assert_eq!(
        explain(&mut c, "SELECT * FROM p.t WHERE id = 1 OR pad = 'none'").0,
        "ALL"
    );
}

#[test]
fn covering_index_reads_fetch_no_rows() {
    let s = Srv::start("planner-covering", &[]);
    let mut c = s.conn();
    setup(&mut c);
    let expect: i64 = (34..=66).map(|i| 3 * i + i).sum();

    // A range of kk whose query reads k and id only: entries alone.
    let (sum, read, lookups) = counted(&mut c, |c| {
        c.query_first::<i64, _>("SELECT SUM(k + id) FROM p.t WHERE k BETWEEN 100 AND 200")
            .unwrap()
    });
    assert_eq!(sum, Some(expect));
    assert_eq!(
        (read, lookups),
        (33, 0),
        "covering range: (rows read, row lookups)"
    );
    assert_eq!(
        explain(
            &mut c,
            "SELECT SUM(k + id) FROM p.t WHERE k BETWEEN 100 AND 200"
        ),
        (
            "range".into(),
            Some("kk".into()),
            "Using where; Using index".into()
        )
    );

    // The same range reading another column fetches each row.
    let (n, read, lookups) = counted(&mut c, |c| {
        c.query_first::<i64, _>("SELECT SUM(LENGTH(pad)) FROM p.t WHERE k BETWEEN 100 AND 200")
            .unwrap()
    });
    assert_eq!(n, Some(33 * 90));
    assert_eq!((read, lookups), (33, 33), "non-covering range");

    // A full scan a secondary index covers reads that index (no row).
    let (n, read, lookups) = counted(&mut c, |c| {
        c.query_first::<(i64, i64), _>("SELECT COUNT(*), SUM(k) FROM p.t")
            .unwrap()
    });
    assert_eq!(n, Some((2000, 3 * 2000 * 2001 / 2)));
    assert_eq!((read, lookups), (2000, 0), "covering full scan");
    assert_eq!(
        explain(&mut c, "SELECT COUNT(*), SUM(k) FROM p.t"),
        ("index".into(), Some("kk".into()), "Using index".into())
    );

    // A locking read locks and reads the rows.
    c.query_drop("BEGIN").unwrap();
    let (n, _, lookups) = counted(&mut c, |c| {
        c.query::<i64, _>("SELECT k FROM p.t WHERE k < 30 FOR UPDATE")
            .unwrap()
            .len()
    });
    c.query_drop("COMMIT").unwrap();
    assert_eq!(n, 9);
    assert_eq!(lookups, 9, "a locking read fetches its rows");

    // The transaction's own writes are in the index entries a covering read returns.
    c.query_drop("BEGIN").unwrap();
    c.query_drop("UPDATE p.t SET k = 7 WHERE id = 1500")
        .unwrap();
    let (ids, _, lookups) = counted(&mut c, |c| {
        c.query::<(i64, i64), _>("SELECT id, k FROM p.t WHERE k < 10")
            .unwrap()
    });
    c.query_drop("ROLLBACK").unwrap();
    assert_eq!(ids, vec![(1, 3), (2, 6), (1500, 7), (3, 9)]);
    assert_eq!(lookups, 0);

    // A collated string column is held as its weight: read from the row.
    let (n, read, lookups) = counted(&mut c, |c| {
        c.query::<String, _>("SELECT s FROM p.t WHERE s BETWEEN 'S0100' AND 'S0104'")
            .unwrap()
    });
    assert_eq!(n, vec!["s0100", "s0101", "s0102", "s0103", "s0104"]);
    assert_eq!((read, lookups), (5, 5), "a collated string is not covered");
    // Filtering on it reads it too, whatever the select list.
    let (n, _, lookups) = counted(&mut c, |c| {
        c.query::<i64, _>("SELECT id FROM p.t WHERE s BETWEEN 'S0100' AND 'S0104'")
            .unwrap()
    });
    assert_eq!(n, vec![100, 101, 102, 103, 104]);
    assert_eq!(lookups, 5, "the WHERE reads s: not covered either");
}

/// Join order by estimated cost: a small table first, then index lookups into the large one
/// (the access paths' ranks alone read the large table's range first); of two tables no index
/// joins, the smaller is the one kept in a hash table.
#[test]
fn joins_are_ordered_by_estimated_rows() {
    let s = Srv::start("planner-joins", &[]);
    let mut c = s.conn();
    setup(&mut c);
    c.query_drop("CREATE TABLE p.small (id INT PRIMARY KEY, v INT)")
        .unwrap();
    c.query_drop("INSERT INTO p.small VALUES (30, 1), (3000, 2), (5997, 3)")
        .unwrap();
    let order = |c: &mut Conn, sql: &str| -> Vec<(String, String, String)> {
        c.query_map(format!("EXPLAIN {sql}"), |r: mysql::Row| {
            (
                r.get::<String, _>("table").unwrap(),
                r.get::<String, _>("type").unwrap(),
                r.get::<String, _>("Extra").unwrap(),
            )
        })
        .unwrap()
    };
    let sql = "SELECT t.id, small.v FROM p.t t, p.small small WHERE t.id > 10 AND t.k = small.id";
    let plan = order(&mut c, sql);
    assert_eq!(
        plan.iter()
            .map(|p| (p.0.as_str(), p.1.as_str()))
            .collect::<Vec<_>>(),
        vec![("small", "ALL"), ("t", "ref")],
        "{plan:?}"
    );
    let (rows, read, _) = counted(&mut c, |c| {
        c.query::<(i64, i64), _>(format!("{sql} ORDER BY t.id"))
            .unwrap()
    });
    // k = 30 is id 10, which `t.id > 10` leaves out.
    assert_eq!(rows, vec![(1000, 2), (1999, 3)]);
    assert!(read <= 6, "the join read {read} rows");

    // No index joins them: the larger table is read, the smaller hashed.
    let plan = order(
        &mut c,
        "SELECT COUNT(*) FROM p.small small JOIN p.t t ON t.pad = small.v",
    );
    assert_eq!(plan[0].0, "t", "{plan:?}");
    assert_eq!(plan[1].0, "small", "{plan:?}");
    assert!(plan[1].2.contains("hash join"), "{plan:?}");
}

/// Row estimates: exact for small ranges (counted), the table's rows for a full scan, shown in
/// EXPLAIN's `rows` and information_schema.TABLES' `TABLE_ROWS`.
#[test]
fn row_estimates_count_what_the_paths_read() {
    let s = Srv::start("planner-estimates", &[]);
    let mut c = s.conn();
    setup(&mut c);
    let rows = |c: &mut Conn, sql: &str| -> Vec<Option<u64>> {
        c.query_map(format!("EXPLAIN {sql}"), |r: mysql::Row| {
            r.get::<Option<u64>, _>("rows").unwrap()
        })
        .unwrap()
    };
    assert_eq!(rows(&mut c, "SELECT * FROM p.t"), vec![Some(2000)]);
    assert_eq!(
        rows(&mut c, "SELECT * FROM p.t WHERE id BETWEEN 100 AND 109"),
        vec![Some(10)]
    );
    assert_eq!(
        rows(
            &mut c,
            "SELECT * FROM p.t WHERE id = 5 OR id > 1990 OR id IN (7, 8)"
        ),
        vec![Some(13)]
    );
    assert_eq!(
        rows(&mut c, "SELECT * FROM p.t WHERE k = 30"),
        vec![Some(1)]
    );
    assert_eq!(
        rows(&mut c, "SELECT * FROM p.t WHERE id = 5"),
        vec![Some(1)]
    );
    let n: Option<u64> = c
        .query_first(
            "SELECT TABLE_ROWS FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = 'p' AND TABLE_NAME = 't'",
        )
        .unwrap();
    assert_eq!(n, Some(2000));
    c.query_drop("DELETE FROM p.t WHERE id > 1500").unwrap();
    assert_eq!(rows(&mut c, "SELECT * FROM p.t"), vec![Some(1500)]);
}

#[test]
fn null_lookups_and_impossible_where_read_only_what_can_match() {
    let s = Srv::start("planner-null", &[]);
    let mut c = s.conn();
    setup(&mut c);
    c.query_drop("UPDATE p.t SET k = NULL WHERE id % 100 = 0")
        .unwrap();

    // The NULL key of kk: 20 rows, fetched by primary key (the select list needs pad).
    let (n, read, lookups) = counted(&mut c, |c| {
        c.query_first::<(i64, i64), _>("SELECT COUNT(*), SUM(LENGTH(pad)) FROM p.t WHERE k IS NULL")
            .unwrap()
    });
    assert_eq!(n, Some((20, 20 * 90)));
    assert_eq!(
        (read, lookups),
        (20, 20),
        "k IS NULL: (rows read, row lookups)"
    );
    assert_eq!(
        explain(&mut c, "SELECT * FROM p.t WHERE k IS NULL"),
        (
            "ref".into(),
            Some("kk".into()),
            "Using index condition".into()
        )
    );
    // Covering, prepared, and as the prefix of an ORDER BY served by the key.
    let (ids, read, lookups) = counted(&mut c, |c| {
        c.exec::<i64, _, _>(
            "SELECT id FROM p.t WHERE k IS NULL AND id > ? ORDER BY id LIMIT 3",
            (1000,),
        )
        .unwrap()
    });
    assert_eq!(ids, vec![1100, 1200, 1300]);
    assert_eq!(lookups, 0, "id and k are in kk's entries");
    assert!(read <= 20, "k IS NULL AND id > 1000 read {read} rows");
    // DELETE and UPDATE find their rows the same way.
    let (_, read, _) = counted(&mut c, |c| {
        c.query_drop("UPDATE p.t SET pad = 'n' WHERE k IS NULL")
            .unwrap()
    });
    assert_eq!(read, 20, "UPDATE ... WHERE k IS NULL read {read} rows");

    // Impossible WHERE: nothing is read.
    for sql in [
        "SELECT * FROM p.t WHERE 1 = 0",
        "SELECT * FROM p.t WHERE id = 1 AND id = 2",
        "SELECT * FROM p.t WHERE k = 3 AND k = 6 AND pad > ''",
        "SELECT * FROM p.t WHERE s = 's0001' AND s = 's0002'",
        "SELECT * FROM p.t WHERE id IS NULL",
        "SELECT * FROM p.t WHERE @undefined = 5",
    ] {
        let (rows, read, _) = counted(&mut c, |c| c.query::<mysql::Row, _>(sql).unwrap().len());
        assert_eq!((rows, read), (0, 0), "{sql}: (rows, rows read)");
        let row: mysql::Row = c.query_first(format!("EXPLAIN {sql}")).unwrap().unwrap();
        let table: Option<String> = row.get("table").unwrap();
        let extra: String = row.get("Extra").unwrap();
        assert_eq!((table, extra.as_str()), (None, "Impossible WHERE"), "{sql}");
    }
    // Prepared: decided per execution.
    let (n, read, _) = counted(&mut c, |c| {
        c.exec_first::<i64, _, _>("SELECT COUNT(*) FROM p.t WHERE ? = 1 AND k > 0", (0,))
            .unwrap()
    });
    assert_eq!((n, read), (Some(0), 0));
    let (n, _, _) = counted(&mut c, |c| {
        c.exec_first::<i64, _, _>("SELECT COUNT(*) FROM p.t WHERE ? = 1 AND k > 0", (1,))
            .unwrap()
    });
    assert_eq!(n, Some(1980));
    // 'a' and 'A' are one string in the collation: not impossible.
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM p.t WHERE s = 's0001' AND s = 'S0001'")
        .unwrap();
    assert_eq!(n, Some(1));

    // UPDATE and DELETE read (and lock) nothing for an impossible WHERE either, and change
    // nothing; the same statements with a WHERE that can hold do.
    for (sql, possible) in [
        (
            "UPDATE p.t SET pad = 'x' WHERE 1 = 0",
            "UPDATE p.t SET pad = 'x' WHERE 1 = 1 AND id = 7",
        ),
        (
            "UPDATE p.t SET pad = 'x' WHERE id = 1 AND id = 2",
            "UPDATE p.t SET pad = 'x' WHERE id = 2 AND id = 2",
        ),
        (
            "DELETE FROM p.t WHERE id IS NULL",
            "DELETE FROM p.t WHERE id = 3 AND id IS NOT NULL",
        ),
        (
            "DELETE FROM p.t WHERE @undefined = 5 AND k > 0",
            "DELETE FROM p.t WHERE @undefined IS NULL AND id = 4",
        ),
    ] {
        let changed = |c: &mut Conn, sql: &str| {
            c.query_drop(sql).unwrap();
            c.affected_rows()
        };
        let (n, read, _) = counted(&mut c, |c| changed(c, sql));
        assert_eq!((read, n), (0, 0), "{sql}: (rows read, changed)");
        let (n, read, _) = counted(&mut c, |c| changed(c, possible));
        assert_eq!((read, n), (1, 1), "{possible}: (rows read, changed)");
    }
    // Prepared: decided per execution.
    let (n, read, _) = counted(&mut c, |c| {
        c.exec_drop("UPDATE p.t SET pad = 'y' WHERE ? = 1 AND k > 0", (0,))
            .unwrap();
        c.affected_rows()
    });
    assert_eq!((read, n), (0, 0));
    let (n, read, _) = counted(&mut c, |c| {
        c.exec_drop("UPDATE p.t SET pad = 'y' WHERE ? = 1 AND id = 9", (1,))
            .unwrap();
        c.affected_rows()
    });
    assert_eq!((read, n), (1, 1));
}

/// Connections that prepare the same statement in the same database share its plan
/// (`Shoal_shared_plan_hits`), over the binary protocol of a real driver: each gets the right
/// rows, an ALTER TABLE makes the next PREPARE build a plan with the new columns while a
/// statement prepared before it still runs, and closing every connection's statement drops
/// the shared one (`Shoal_shared_plans`).
#[test]
fn connections_share_prepared_plans() {
    let s = Srv::start("planner-shared", &[]);
    let mut admin = s.conn();
    admin.query_drop("CREATE DATABASE sh").unwrap();
    admin
        .query_drop("CREATE TABLE sh.t (id INT PRIMARY KEY, v VARCHAR(10))")
        .unwrap();
    admin
        .query_drop("INSERT INTO sh.t VALUES (1, 'a'), (2, 'b')")
        .unwrap();
    let open = || {
        let mut c = s.conn();
        c.query_drop("USE sh").unwrap();
        c
    };
    let sql = "SELECT * FROM t WHERE id = ?";
    let (h0, b0) = (
        status(&mut admin, "Shoal_shared_plan_hits"),
        status(&mut admin, "Shoal_shared_plan_builds"),
    );
    let mut conns: Vec<Conn> = (0..4).map(|_| open()).collect();
    let stmts: Vec<mysql::Statement> = conns.iter_mut().map(|c| c.prep(sql).unwrap()).collect();
    assert_eq!(status(&mut admin, "Shoal_shared_plan_builds") - b0, 1);
    assert_eq!(status(&mut admin, "Shoal_shared_plan_hits") - h0, 3);
    for (i, (c, st)) in conns.iter_mut().zip(&stmts).enumerate() {
        let id = 1 + (i % 2) as i64;
        let row: Option<(i64, String)> = c.exec_first(st, (id,)).unwrap();
        assert_eq!(row, Some((id, ["a", "b"][i % 2].to_string())));
    }
    admin
        .query_drop("ALTER TABLE sh.t ADD COLUMN w INT DEFAULT 5")
        .unwrap();
    let mut late = open();
    let st = late.prep(sql).unwrap();
    assert_eq!(st.columns().len(), 3, "built for the altered table");
    assert_eq!(status(&mut admin, "Shoal_shared_plan_builds") - b0, 2);
    let row: Option<(i64, String, i64)> = late.exec_first(&st, (2,)).unwrap();
    assert_eq!(row, Some((2, "b".to_string(), 5)));
    // A statement prepared before the ALTER is bound again: the row has the new column.
    let row: Option<(i64, String, i64)> = conns[0].exec_first(&stmts[0], (1,)).unwrap();
    assert_eq!(row, Some((1, "a".to_string(), 5)));
    // The rebuilt plan replaced the old one in the cache: one shared plan a PREPARE can take
    // (the old one lives on in the connections that hold it).
    assert_eq!(status(&mut admin, "Shoal_shared_plans"), 1);
    for (c, st) in conns.iter_mut().zip(stmts) {
        c.close(st).unwrap();
    }
    late.close(st).unwrap();
    // COM_STMT_CLOSE has no reply: the server may still be running the closes when the admin
    // connection asks, so poll (with a deadline) until they are done.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut live = status(&mut admin, "Shoal_shared_plans");
    while live != 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        live = status(&mut admin, "Shoal_shared_plans");
    }
    assert_eq!(
        live, 0,
        "shared plans left after every holder closed its statement"
    );
}
