
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
        plan.iter().map(|p| (p.0.as_str(), p.1.as_str())).collect::<Vec<_>>(),
        vec![("small", "ALL"), ("t", "ref")],
        "{plan:?}"
    );
    let (rows, read, _) = counted(&mut c, |c| {
        c.query::<(i64, i64), _>(format!("{sql} ORDER BY t.id")).unwrap()
    });
    assert_eq!(rows, vec![(10, 1), (1000, 2), (1999, 3)]);
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
