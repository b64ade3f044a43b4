//! Shared helpers for the storage tests: temp data directories and a sysbench-like table.
#![allow(dead_code)]

use shoal_store::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A data directory on the real disk (not tmpfs: O_DIRECT), removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let p = PathBuf::from(format!(
            "/var/tmp/shoal-store-test-{tag}-{}-{}-{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir);
    c.block_cache_bytes = 8 << 20;
    c.lock_wait_timeout = Duration::from_secs(10);
    c
}

pub fn open(dir: &Path) -> Engine {
    Engine::open(config(dir)).expect("open engine")
}

pub fn col(name: &str, ty: ColumnType, nullable: bool) -> ColumnDef {
    ColumnDef {
        name: name.into(),
        ty,
        nullable,
        default: None,
        auto_increment: false,
        added_default: None,
        max_bytes: None,
    }
}

pub const INT: ColumnType = ColumnType::Int {
    bytes: 4,
    unsigned: false,
};

/// `sbtest(id INT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, c CHAR(120), pad CHAR(60),
/// KEY k_1(k))`, plus an optional `UNIQUE KEY u_c(c)`.
pub fn sbtest_spec(name: &str, unique_c: bool) -> TableSpec {
    let mut id = col("id", INT, false);
    id.auto_increment = true;
    let mut indexes = vec![IndexSpec {
        name: "k_1".into(),
        columns: vec!["k".into()],
        unique: false,
    }];
    if unique_c {
        indexes.push(IndexSpec {
            name: "u_c".into(),
            columns: vec!["c".into()],
            unique: true,
        });
    }
    TableSpec {
        name: name.into(),
        columns: vec![
            id,
            col("k", INT, false),
            col("c", ColumnType::Char(120), true),
            col("pad", ColumnType::Char(60), true),
        ],
        primary_key: vec!["id".into()],
        indexes,
        auto_increment_start: None,
        foreign_keys: Vec::new(),
    }
}

pub fn row(id: i64, k: i64, c: &str) -> Vec<Datum> {
    vec![
        Datum::Int(id),
        Datum::Int(k),
        Datum::text(c),
        Datum::text("pad"),
    ]
}

/// Checks that every secondary index of `t` has exactly one entry per row, pointing at it.
pub fn check_indexes(engine: &Engine, t: &TableDef) {
    let mut txn = engine.begin(Isolation::RepeatableRead);
    let rows = txn
        .scan_pk(t, &KeyRange::all(), LockMode::None, None)
        .unwrap();
    for ix in &t.indexes {
        let via = txn
            .scan_index(t, &ix.name, &KeyRange::all(), LockMode::None, None)
            .unwrap();
        assert_eq!(via.len(), rows.len(), "index {} entry count", ix.name);
        let mut a: Vec<_> = rows.iter().map(|r| r.key.clone()).collect();
        let mut b: Vec<_> = via.iter().map(|r| r.key.clone()).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "index {} points at every row once", ix.name);
        // Index order: non-decreasing in the indexed columns.
        for w in via.windows(2) {
            let weighted = t.index_weighted(ix);
            let ka: Vec<u8> = shoal_store::codec::encode_key_weighted(
                &ix.columns
                    .iter()
                    .map(|&c| w[0].values[c].clone())
                    .collect::<Vec<_>>(),
                &weighted,
            );
            let kb: Vec<u8> = shoal_store::codec::encode_key_weighted(
                &ix.columns
                    .iter()
                    .map(|&c| w[1].values[c].clone())
                    .collect::<Vec<_>>(),
                &weighted,
            );
            assert!(ka <= kb, "index {} order", ix.name);
        }
        // Each entry found through a point lookup on its value.
        for r in rows.iter().take(50) {
            let vals: Vec<Datum> = ix.columns.iter().map(|&c| r.values[c].clone()).collect();
            let hits = txn
                .scan_index(t, &ix.name, &KeyRange::prefix(vals), LockMode::None, None)
                .unwrap();
            assert!(
                hits.iter().any(|h| h.key == r.key),
                "row reachable through {}",
                ix.name
            );
        }
    }
}
