//! CHECK TABLE's checker (`Engine::check_table`): a consistent table is OK, including while
//! other transactions commit; and each kind of damage, written with a raw RocksDB handle
//! behind the engine's back (the engine closed, the key layout of `catalog.rs` spelled out
//! here), is found and named.

mod common;
use common::*;
use shoal_store::codec::{encode_key, encode_row};
use shoal_store::*;
use std::path::Path;

/// `0x02 table_id pk`.
fn row_key(t: &TableDef, pk: &[Datum]) -> Vec<u8> {
    let mut k = vec![0x02];
    k.extend_from_slice(&t.id.to_be_bytes());
    k.extend_from_slice(&encode_key(pk));
    k
}

/// `0x03 index_id cols [pk]`.
fn index_key(ix: &IndexDef, cols: &[Datum], pk: Option<&[Datum]>) -> Vec<u8> {
    let mut k = vec![0x03];
    k.extend_from_slice(&ix.id.to_be_bytes());
    k.extend_from_slice(&encode_key(cols));
    if let Some(pk) = pk {
        k.extend_from_slice(&encode_key(pk));
    }
    k
}

/// Writes and deletes raw keys with the engine closed.
fn tamper(dir: &Path, puts: &[(Vec<u8>, Vec<u8>)], deletes: &[Vec<u8>]) {
    let db = rocksdb::DB::open_default(dir.join("rocksdb")).expect("raw open");
    for (k, v) in puts {
        db.put(k, v).unwrap();
    }
    for k in deletes {
        db.delete(k).unwrap();
    }
}

/// A table `db.t` (sbtest shape, UNIQUE u_c) with rows 1..=n, k = id % 7, c = "c{id}"
/// (row 3's c is NULL, so u_c holds a NULL entry too), and a table `db.h` without a
/// primary key with one index.
fn setup(dir: &Path, n: i64) -> (Engine, std::sync::Arc<TableDef>) {
    let e = open(dir);
    e.create_database("db").unwrap();
    let t = e.create_table("db", sbtest_spec("t", true)).unwrap();
    let mut txn = e.begin(Isolation::RepeatableRead);
    for id in 1..=n {
        let mut r = row(id, id % 7, &format!("c{id}"));
        if id == 3 {
            r[2] = Datum::Null;
        }
        txn.insert(&t, r).unwrap();
    }
    txn.commit().unwrap();
    let h = e
        .create_table(
            "db",
            TableSpec {
                name: "h".into(),
                columns: vec![col("a", INT, true), col("b", INT, true)],
                primary_key: vec![],
                indexes: vec![IndexSpec {
                    name: "ia".into(),
                    columns: vec!["a".into()],
                    unique: false,
                }],
                auto_increment_start: None,
                foreign_keys: Vec::new(),
            },
        )
        .unwrap();
    let mut txn = e.begin(Isolation::RepeatableRead);
    for i in 0..20 {
        txn.insert(&h, vec![Datum::Int(i % 3), Datum::Int(i)])
            .unwrap();
    }
    txn.commit().unwrap();
    (e, t)
}

fn problems(e: &Engine) -> Vec<CheckProblem> {
    let r = e.check_table("db", "t").unwrap();
    assert_eq!(r.problems.len() as u64, r.problem_count);
    r.problems
}

#[test]
fn a_consistent_table_is_ok() {
    let dir = TempDir::new("check-ok");
    let (e, t) = setup(dir.path(), 300);
    let r = e.check_table("db", "t").unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    assert_eq!(r.rows, 300);
    assert_eq!(
        r.index_entries,
        vec![("k_1".to_string(), 300), ("u_c".to_string(), 300)]
    );
    let h = e.check_table("db", "h").unwrap();
    assert!(h.is_ok(), "{:?}", h.problems);
    assert_eq!((h.rows, h.index_entries[0].1), (20, 20));
    // Updates that move index entries and deletes keep it consistent.
    let mut txn = e.begin(Isolation::RepeatableRead);
    for id in (1..=300).step_by(3) {
        let key = RowKey::from_values(&t, &[Datum::Int(id)]).unwrap();
        txn.update(&t, &key, row(id, id + 1000, &format!("x{id}")))
            .unwrap();
    }
    for id in (2..=300).step_by(5) {
        let key = RowKey::from_values(&t, &[Datum::Int(id)]).unwrap();
        txn.delete(&t, &key).unwrap();
    }
    txn.commit().unwrap();
    let r = e.check_table("db", "t").unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    assert_eq!(r.rows, 300 - 60);
    // Missing table and database.
    assert!(matches!(
        e.check_table("db", "nope"),
        Err(StoreError::NoSuchTable { .. })
    ));
    assert!(matches!(
        e.check_table("nodb", "t"),
        Err(StoreError::NoSuchDatabase(_))
    ));
}

/// The checker reads one snapshot: commits that run meanwhile (each one atomic) never look
/// like damage.
#[test]
fn commits_during_the_check_are_not_corruption() {
    let dir = TempDir::new("check-concurrent");
    let (e, t) = setup(dir.path(), 2000);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (e, t, stop) = (e.clone(), t.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0i64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let mut txn = e.begin(Isolation::RepeatableRead);
                for j in 0..5 {
                    let id = 1 + (i * 5 + j) % 2000;
                    let key = RowKey::from_values(&t, &[Datum::Int(id)]).unwrap();
                    txn.update(&t, &key, row(id, i + j, &format!("w{i}-{j}")))
                        .unwrap();
                }
                txn.commit().unwrap();
                i += 1;
            }
            i
        })
    };
    for _ in 0..5 {
        let r = e.check_table("db", "t").unwrap();
        assert!(r.is_ok(), "{:?}", r.problems);
        assert_eq!(r.rows, 2000);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(writer.join().unwrap() > 0);
}

#[test]
fn a_missing_index_entry_is_reported() {
    let dir = TempDir::new("check-missing");
    let (e, t) = setup(dir.path(), 50);
    let k_1 = t.index("k_1").unwrap().clone();
    drop((e, t));
    // Row 10 (k = 3) loses its k_1 entry.
    tamper(
        dir.path(),
        &[],
        &[index_key(&k_1, &[Datum::Int(3)], Some(&[Datum::Int(10)]))],
    );
    let e = open(dir.path());
    assert_eq!(
        problems(&e),
        vec![
            CheckProblem::MissingEntry {
                index: "k_1".into(),
                key: "10".into()
            },
            CheckProblem::EntryCount {
                index: "k_1".into(),
                entries: 49,
                rows: 50
            },
        ]
    );
    assert_eq!(
        problems(&e)[0].to_string(),
        "Index 'k_1' has no entry for row (10)"
    );
    // The other table is untouched.
    assert!(e.check_table("db", "h").unwrap().is_ok());
}

#[test]
fn orphan_and_stale_entries_are_reported() {
    let dir = TempDir::new("check-orphan");
    let (e, t) = setup(dir.path(), 50);
    let k_1 = t.index("k_1").unwrap().clone();
    let pk = |id: i64| encode_key(&[Datum::Int(id)]);
    drop((e, t));
    tamper(
        dir.path(),
        &[
            // An entry for row 999, which does not exist.
            (
                index_key(&k_1, &[Datum::Int(5)], Some(&[Datum::Int(999)])),
                pk(999),
            ),
            // A second entry for row 20 (k = 6) under k = 4: stale, and one too many.
            (
                index_key(&k_1, &[Datum::Int(4)], Some(&[Datum::Int(20)])),
                pk(20),
            ),
        ],
        &[],
    );
    let e = open(dir.path());
    let p = problems(&e);
    assert_eq!(
        p,
        vec![
            CheckProblem::StaleEntry {
                index: "k_1".into(),
                key: "20".into()
            },
            CheckProblem::OrphanEntry {
                index: "k_1".into(),
                key: "999".into()
            },
            CheckProblem::EntryCount {
                index: "k_1".into(),
                entries: 52,
                rows: 50
            },
        ]
    );
    assert_eq!(
        p[1].to_string(),
        "Index 'k_1' has an entry for missing row (999)"
    );
}

#[test]
fn a_duplicate_in_a_unique_index_is_reported() {
    let dir = TempDir::new("check-dup");
    let (e, t) = setup(dir.path(), 50);
    let t = (*t).clone();
    drop(e);
    // Row 60 with c = 'c7' (row 7's unique value) and k = 4, with its k_1 entry but no u_c
    // entry of its own (there is only one slot per unique value).
    let k_1 = t.index("k_1").unwrap().clone();
    tamper(
        dir.path(),
        &[
            (
                row_key(&t, &[Datum::Int(60)]),
                encode_row(&row(60, 4, "c7")),
            ),
            (
                index_key(&k_1, &[Datum::Int(4)], Some(&[Datum::Int(60)])),
                encode_key(&[Datum::Int(60)]),
            ),
        ],
        &[],
    );
    let e = open(dir.path());
    assert_eq!(
        problems(&e),
        vec![
            CheckProblem::DuplicateUnique {
                index: "u_c".into(),
                key: "60".into(),
                owner: "7".into()
            },
            CheckProblem::EntryCount {
                index: "u_c".into(),
                entries: 50,
                rows: 51
            },
        ]
    );
}

#[test]
fn undecodable_and_misfiled_rows_are_reported() {
    let dir = TempDir::new("check-rows");
    let (e, t) = setup(dir.path(), 10);
    let t = (*t).clone();
    drop(e);
    tamper(
        dir.path(),
        &[
            // Row 4's value replaced by garbage.
            (row_key(&t, &[Datum::Int(4)]), vec![7, 7, 7]),
            // Row 8's value says id = 9 (its key is 8), k = 1 as before.
            (row_key(&t, &[Datum::Int(8)]), encode_row(&row(9, 1, "c8"))),
        ],
        &[],
    );
    let e = open(dir.path());
    let p = problems(&e);
    assert!(
        matches!(&p[0], CheckProblem::UndecodableRow { key, .. } if key == "4"),
        "{p:?}"
    );
    assert_eq!(
        p[1],
        CheckProblem::KeyMismatch {
            key: "8".into(),
            columns: "9".into()
        }
    );
    // Row 8's index entries are computed with its stored key and still match; row 4's are
    // left without a decodable row (pass 2 does not report them twice).
    assert_eq!(p.len(), 2, "{p:?}");
}
