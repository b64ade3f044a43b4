//! Collated string keys (`KeyFormat::Collated`): key equality and order are the collation's
//! (`shoal_collation`), so UNIQUE and PRIMARY KEY refuse case variants, lookups find every
//! variant, rows keep the values they were written with; binary strings keep binary keys; and
//! a table whose catalog entry predates key formats (written here the old way, with a raw
//! RocksDB handle) opens as `KeyFormat::Binary` and keeps its byte-encoded keys working.

mod common;
use common::*;
use shoal_store::*;
use std::path::Path;

/// `t(name VARCHAR(20) PRIMARY KEY, code VARCHAR(10), bin VARBINARY(10), n INT,
/// UNIQUE u_code(code), KEY k_bin(bin))`.
fn spec() -> TableSpec {
    TableSpec {
        name: "t".into(),
        columns: vec![
            col("name", ColumnType::Varchar(20), false),
            col("code", ColumnType::Varchar(10), true),
            col("bin", ColumnType::Blob, true),
            col("n", INT, true),
        ],
        primary_key: vec!["name".into()],
        indexes: vec![
            IndexSpec {
                name: "u_code".into(),
                columns: vec!["code".into()],
                unique: true,
            },
            IndexSpec {
                name: "k_bin".into(),
                columns: vec!["bin".into()],
                unique: false,
            },
        ],
        auto_increment_start: None,
        foreign_keys: Vec::new(),
    }
}

fn r(name: &str, code: Option<&str>, bin: &str, n: i64) -> Vec<Datum> {
    vec![
        Datum::text(name),
        code.map_or(Datum::Null, Datum::text),
        Datum::text(bin),
        Datum::Int(n),
    ]
}

fn dup(e: StoreError) -> (String, String) {
    match e {
        StoreError::DuplicateKey { key_name, value } => (key_name, value),
        other => panic!("expected 1062, got {other:?}"),
    }
}

fn texts(rows: &[Row], col: usize) -> Vec<String> {
    rows.iter()
        .map(|r| match &r.values[col] {
            Datum::Bytes(b) => String::from_utf8(b.clone()).unwrap(),
            other => other.to_string(),
        })
        .collect()
}

#[test]
fn new_tables_have_collated_keys_and_refuse_case_variants() {
    let dir = TempDir::new("collated-unique");
    let e = open(dir.path());
    e.create_database("db").unwrap();
    let t = e.create_table("db", spec()).unwrap();
    assert_eq!(t.pk_format, KeyFormat::Collated);
    assert!(t.indexes.iter().all(|ix| ix.format == KeyFormat::Collated));
    let mut txn = e.begin(Isolation::RepeatableRead);
    txn.insert(&t, r("abc", Some("x1"), "b", 1)).unwrap();
    // PRIMARY: case and trailing spaces do not make another key; the message names the new
    // value, as MariaDB's does.
    for v in ["ABC", "abc  ", "aBc "] {
        let err = txn.insert(&t, r(v, None, "b", 2)).unwrap_err();
        assert_eq!(dup(err), ("PRIMARY".into(), v.into()));
    }
    // UNIQUE on a VARCHAR likewise.
    let err = txn.insert(&t, r("other", Some("X1 "), "b", 3)).unwrap_err();
    assert_eq!(dup(err), ("u_code".into(), "X1 ".into()));
    // 'ß' folds to "SS".
    txn.insert(&t, r("strasse", Some("y"), "b", 4)).unwrap();
    let err = txn.insert(&t, r("STRAßE", None, "b", 5)).unwrap_err();
    assert_eq!(dup(err).0, "PRIMARY");
    // A binary column is not collated: its non-unique index keeps 'b' and 'B' apart.
    txn.insert(&t, r("bb", None, "B", 6)).unwrap();
    txn.commit().unwrap();

    let mut txn = e.begin(Isolation::RepeatableRead);
    // A point read by any variant finds the row, with the value it was written with.
    let row = txn
        .get(&t, &[Datum::text("ABC   ")], LockMode::None)
        .unwrap()
        .expect("found by a case variant");
    assert_eq!(row.values[0], Datum::text("abc"));
    // Index lookups: the collated one finds every variant, the binary one only its bytes.
    let via = txn
        .scan_index(
            &t,
            "u_code",
            &KeyRange::prefix(vec![Datum::text("x1")]),
            LockMode::None,
            None,
        )
        .unwrap();
    assert_eq!(texts(&via, 1), ["x1"]);
    let via = txn
        .scan_index(
            &t,
            "k_bin",
            &KeyRange::prefix(vec![Datum::text("b")]),
            LockMode::None,
            None,
        )
        .unwrap();
    assert_eq!(texts(&via, 0), ["abc", "strasse"]);
    // Key order is collation order: 'abc' < 'bb' < 'strasse' whatever the case.
    txn.insert(&t, r("Bz", None, "b", 7)).unwrap();
    txn.insert(&t, r("aZ", None, "b", 8)).unwrap();
    let all = txn
        .scan_pk(&t, &KeyRange::all(), LockMode::None, None)
        .unwrap();
    assert_eq!(texts(&all, 0), ["abc", "aZ", "bb", "Bz", "strasse"]);
    // A range with an excluded bound excludes every variant of it.
    let range = KeyRange {
        start: std::ops::Bound::Excluded(vec![Datum::text("ABC ")]),
        end: std::ops::Bound::Included(vec![Datum::text("BZ")]),
    };
    let some = txn.scan_pk(&t, &range, LockMode::None, None).unwrap();
    assert_eq!(texts(&some, 0), ["aZ", "bb", "Bz"]);
    // An update to a case variant keeps the row's key and stores the new spelling.
    assert!(txn
        .update(&t, &row.key, r("ABC", Some("X1"), "b", 1))
        .unwrap());
    let again = txn
        .get(&t, &[Datum::text("abc")], LockMode::Exclusive)
        .unwrap()
        .unwrap();
    assert_eq!(again.key, row.key);
    assert_eq!(again.values[0], Datum::text("ABC"));
    assert_eq!(again.values[1], Datum::text("X1"));
    txn.commit().unwrap();
    check_indexes(&e, &t);
    let report = e.check_table("db", "t").unwrap();
    assert!(report.is_ok(), "{report:?}");
}

#[test]
fn unique_case_variants_serialize_on_one_lock() {
    // Two transactions inserting 'k' and 'K' contend for one UNIQUE slot: the second waits
    // and then gets 1062 (the first committed), never a second row.
    let dir = TempDir::new("collated-lock");
    let e = open(dir.path());
    e.create_database("db").unwrap();
    let t = e.create_table("db", spec()).unwrap();
    let mut a = e.begin(Isolation::RepeatableRead);
    a.insert(&t, r("k", None, "b", 1)).unwrap();
    let e2 = e.clone();
    let t2 = t.clone();
    let waiter = std::thread::spawn(move || {
        let mut b = e2.begin(Isolation::RepeatableRead);
        b.insert(&t2, r("K", None, "b", 2)).map(|_| ())
    });
    // The second insert is blocked until `a` ends: wait until it waits on the lock.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while e.status_value("Innodb_row_lock_current_waits") == Some(0) {
        assert!(std::time::Instant::now() < deadline, "no lock wait seen");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    a.commit().unwrap();
    let err = waiter.join().unwrap().unwrap_err();
    assert_eq!(dup(err).0, "PRIMARY");
}

/// Rewrites the stored catalog entry of `db.t` as catalogs were written before key formats:
/// without `pk_format` and the indexes' `format`.
fn write_old_catalog(dir: &Path) {
    let db = rocksdb::DB::open_default(dir.join("rocksdb")).expect("raw open");
    let key = b"\x01Tdb\x00t".to_vec();
    let json = db.get(&key).unwrap().expect("catalog entry");
    let mut v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["pk_format"], "Collated");
    v.as_object_mut().unwrap().remove("pk_format");
    for ix in v["indexes"].as_array_mut().unwrap() {
        ix.as_object_mut().unwrap().remove("format");
    }
    db.put(&key, serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn tables_from_before_key_formats_keep_binary_keys() {
    let dir = TempDir::new("collated-old");
    {
        let e = open(dir.path());
        e.create_database("db").unwrap();
        e.create_table("db", spec()).unwrap();
    }
    write_old_catalog(dir.path());
    {
        let e = open(dir.path());
        let t = e.table("db", "t").unwrap();
        assert_eq!(t.pk_format, KeyFormat::Binary);
        assert!(t.indexes.iter().all(|ix| ix.format == KeyFormat::Binary));
        // Binary keys, as before: case variants are distinct keys.
        let mut txn = e.begin(Isolation::RepeatableRead);
        txn.insert(&t, r("abc", Some("x"), "b", 1)).unwrap();
        txn.insert(&t, r("ABC", Some("X"), "b", 2)).unwrap();
        txn.commit().unwrap();
    }
    let e = open(dir.path());
    let t = e.table("db", "t").unwrap();
    assert_eq!(t.pk_format, KeyFormat::Binary);
    let mut txn = e.begin(Isolation::RepeatableRead);
    let one = txn
        .get(&t, &[Datum::text("abc")], LockMode::None)
        .unwrap()
        .unwrap();
    assert_eq!(one.values[3], Datum::Int(1));
    assert!(txn
        .get(&t, &[Datum::text("Abc")], LockMode::None)
        .unwrap()
        .is_none());
    let all = txn
        .scan_pk(&t, &KeyRange::all(), LockMode::None, None)
        .unwrap();
    assert_eq!(texts(&all, 0), ["ABC", "abc"]);
    drop(txn);
    check_indexes(&e, &t);
    assert!(e.check_table("db", "t").unwrap().is_ok());
    // A new index on the old table is collated; the old ones stay binary.
    let t = e
        .create_index(
            "db",
            "t",
            IndexSpec {
                name: "k_n".into(),
                columns: vec!["name".into()],
                unique: false,
            },
        )
        .unwrap();
    assert_eq!(t.index("k_n").unwrap().format, KeyFormat::Collated);
    assert_eq!(t.index("u_code").unwrap().format, KeyFormat::Binary);
    let mut txn = e.begin(Isolation::RepeatableRead);
    let via = txn
        .scan_index(
            &t,
            "k_n",
            &KeyRange::prefix(vec![Datum::text("aBc")]),
            LockMode::None,
            None,
        )
        .unwrap();
    assert_eq!(via.len(), 2);
    drop(txn);
    // A table copy (ALTER TABLE's copy algorithm) rebuilds every key collated, and refuses
    // the case variants the binary keys held (1062) until one is gone.
    let mut keep = |row: Vec<Datum>| Ok(row);
    let err = e.rewrite_table(&t, (*t).clone(), &mut keep).unwrap_err();
    assert_eq!(dup(err).0, "PRIMARY");
    let mut txn = e.begin(Isolation::RepeatableRead);
    let k = txn
        .get(&t, &[Datum::text("ABC")], LockMode::Exclusive)
        .unwrap()
        .unwrap()
        .key;
    txn.delete(&t, &k).unwrap();
    txn.commit().unwrap();
    let t = e.rewrite_table(&t, (*t).clone(), &mut keep).unwrap();
    assert_eq!(t.pk_format, KeyFormat::Collated);
    assert!(t.indexes.iter().all(|ix| ix.format == KeyFormat::Collated));
    let mut txn = e.begin(Isolation::RepeatableRead);
    assert!(txn
        .get(&t, &[Datum::text("ABC")], LockMode::None)
        .unwrap()
        .is_some());
    drop(txn);
    check_indexes(&e, &t);
}
