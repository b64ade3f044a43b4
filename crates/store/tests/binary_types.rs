//! BINARY(n) / VARBINARY(n) columns in storage: BINARY pads with `0x00` to its length and
//! keeps the padding, VARBINARY refuses more than `n` bytes, both survive a reopen with their
//! lengths; and a catalog entry written before these types existed (such columns were recorded
//! as `Blob`: rewritten here the old way, with a raw RocksDB handle) still opens as the BLOB it
//! was, with no length limit and no padding.

mod common;
use common::*;
use shoal_store::*;
use std::path::Path;

/// `t(id BINARY(4) PRIMARY KEY, v VARBINARY(3), KEY k_v(v))`.
fn spec() -> TableSpec {
    TableSpec {
        name: "t".into(),
        columns: vec![
            col("id", ColumnType::Binary(4), false),
            col("v", ColumnType::Varbinary(3), true),
        ],
        primary_key: vec!["id".into()],
        indexes: vec![IndexSpec {
            name: "k_v".into(),
            columns: vec!["v".into()],
            unique: false,
        }],
        auto_increment_start: None,
        foreign_keys: Vec::new(),
    }
}

fn bytes(b: &[u8]) -> Datum {
    Datum::Bytes(b.to_vec())
}

#[test]
fn binary_pads_and_varbinary_limits_across_a_reopen() {
    let dir = TempDir::new("binary-types");
    {
        let e = open(dir.path());
        e.create_database("db").unwrap();
        let t = e.create_table("db", spec()).unwrap();
        let mut txn = e.begin(Isolation::RepeatableRead);
        txn.insert(&t, vec![bytes(b"a"), bytes(b"\x00\xFF")])
            .unwrap();
        // Five bytes into BINARY(4), four into VARBINARY(3): refused.
        assert!(txn.insert(&t, vec![bytes(b"abcde"), Datum::Null]).is_err());
        assert!(txn.insert(&t, vec![bytes(b"b"), bytes(b"abcd")]).is_err());
        txn.commit().unwrap();
    }
    let e = open(dir.path());
    let t = e.table("db", "t").unwrap();
    assert_eq!(t.columns[0].ty, ColumnType::Binary(4));
    assert_eq!(t.columns[1].ty, ColumnType::Varbinary(3));
    let mut txn = e.begin(Isolation::RepeatableRead);
    // The key is the padded value; a lookup value is coerced (padded) as a written one is.
    let row = txn
        .get(&t, &[bytes(b"a\0\0\0")], LockMode::None)
        .unwrap()
        .expect("padded key");
    assert_eq!(row.values, vec![bytes(b"a\0\0\0"), bytes(b"\x00\xFF")]);
    let padded = txn
        .get(&t, &[bytes(b"a")], LockMode::None)
        .unwrap()
        .expect("lookup padded");
    assert_eq!(padded.values, row.values);
    assert!(txn
        .get(&t, &[bytes(b"a\0\0\x01")], LockMode::None)
        .unwrap()
        .is_none());
    let via = txn
        .scan_index(
            &t,
            "k_v",
            &KeyRange::prefix(vec![bytes(b"\x00\xFF")]),
            LockMode::None,
            None,
        )
        .unwrap();
    assert_eq!(via.len(), 1);
    drop(txn);
    assert!(e.check_table("db", "t").unwrap().is_ok());
}

/// Rewrites the stored catalog entry of `db.t` as it was written before BINARY/VARBINARY
/// existed: both columns as `Blob`.
fn write_old_catalog(dir: &Path) {
    let db = rocksdb::DB::open_default(dir.join("rocksdb")).expect("raw open");
    let key = b"\x01Tdb\x00t".to_vec();
    let json = db.get(&key).unwrap().expect("catalog entry");
    let mut v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["columns"][0]["ty"]["Binary"], 4, "{v}");
    for c in v["columns"].as_array_mut().unwrap() {
        c["ty"] = serde_json::Value::String("Blob".into());
    }
    db.put(&key, serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn catalogs_from_before_binary_types_keep_blob_columns() {
    let dir = TempDir::new("binary-types-old");
    {
        let e = open(dir.path());
        e.create_database("db").unwrap();
        e.create_table("db", spec()).unwrap();
    }
    write_old_catalog(dir.path());
    let e = open(dir.path());
    let t = e.table("db", "t").unwrap();
    assert_eq!(t.columns[0].ty, ColumnType::Blob);
    assert_eq!(t.columns[1].ty, ColumnType::Blob);
    // A BLOB as before: no padding, no length limit.
    let mut txn = e.begin(Isolation::RepeatableRead);
    txn.insert(&t, vec![bytes(b"a"), bytes(b"longer than three")])
        .unwrap();
    txn.commit().unwrap();
    let mut txn = e.begin(Isolation::RepeatableRead);
    let row = txn
        .get(&t, &[bytes(b"a")], LockMode::None)
        .unwrap()
        .expect("unpadded key");
    assert_eq!(row.values[1], bytes(b"longer than three"));
    drop(txn);
    assert!(e.check_table("db", "t").unwrap().is_ok());
}
