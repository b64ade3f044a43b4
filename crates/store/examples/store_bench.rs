//! Micro-benchmark of the storage engine alone (no SQL, no network): cached point reads,
//! sysbench-style index updates, and group-committed inserts with several threads.
//!
//! `cargo run --release -p shoal-store --example store_bench -- [rows] [threads] [seconds]`

use shoal_store::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rows: i64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let threads: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(4);
    let secs: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    let dir =
        std::path::PathBuf::from(format!("/var/tmp/shoal-store-bench-{}", std::process::id()));
    let mut cfg = EngineConfig::new(&dir);
    cfg.block_cache_bytes = 512 << 20;
    let e = Engine::open(cfg).expect("open");
    e.create_database("sbtest").unwrap();
    let int = ColumnType::Int {
        bytes: 4,
        unsigned: false,
    };
    let col = |n: &str, ty| ColumnDef {
        name: n.into(),
        ty,
        nullable: false,
        default: None,
        auto_increment: false,
        added_default: None,
        max_bytes: None,
    };
    let t = e
        .create_table(
            "sbtest",
            TableSpec {
                name: "sbtest1".into(),
                columns: vec![
                    col("id", int),
                    col("k", int),
                    col("c", ColumnType::Char(120)),
                    col("pad", ColumnType::Char(60)),
                ],
                primary_key: vec!["id".into()],
                indexes: vec![IndexSpec {
                    name: "k_1".into(),
                    columns: vec!["k".into()],
                    unique: false,
                }],
                auto_increment_start: None,
                foreign_keys: Vec::new(),
            },
        )
        .unwrap();
    let start = Instant::now();
    e.set_flush_log_at_trx_commit(2);
    for chunk in 0..(rows + 999) / 1000 {
        let mut txn = e.begin(Isolation::RepeatableRead);
        for i in 0..1000 {
            let id = chunk * 1000 + i + 1;
            if id > rows {
                break;
            }
            txn.insert(
                &t,
                vec![
                    Datum::Int(id),
                    Datum::Int(id % 1000),
                    Datum::text(&"c".repeat(119)),
                    Datum::text(&"p".repeat(59)),
                ],
            )
            .unwrap();
        }
        txn.commit().unwrap();
    }
    e.set_flush_log_at_trx_commit(1);
    println!("load: {rows} rows in {:.2?}", start.elapsed());

    type Op = fn(&Engine, &TableDef, i64, u64) -> bool;
    let point: Op = |e, t, rows, r| {
        let mut txn = e.begin(Isolation::RepeatableRead);
        let id = (r % rows as u64) as i64 + 1;
        let ok = txn
            .get(t, &[Datum::Int(id)], LockMode::None)
            .unwrap()
            .is_some();
        txn.commit().unwrap();
        ok
    };
    let update: Op = |e, t, rows, r| {
        let mut txn = e.begin(Isolation::RepeatableRead);
        let id = (r % rows as u64) as i64 + 1;
        let Some(row) = txn.get(t, &[Datum::Int(id)], LockMode::Exclusive).unwrap() else {
            return false;
        };
        let mut v = row.values.clone();
        if let Datum::Int(k) = v[1] {
            v[1] = Datum::Int(k + 1);
        }
        match txn.update(t, &row.key, v).and_then(|_| txn.commit()) {
            Ok(()) => true,
            Err(StoreError::Deadlock) => false,
            Err(err) => panic!("{err}"),
        }
    };
    for (name, op) in [
        ("point select", point),
        ("update index (fsync/commit)", update),
    ] {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let hs: Vec<_> = (0..threads)
            .map(|th| {
                let (e, t, stop, done) = (e.clone(), t.clone(), stop.clone(), done.clone());
                std::thread::spawn(move || {
                    let mut r: u64 = 0x9E37_79B9_7F4A_7C15 ^ th as u64;
                    while !stop.load(Ordering::Relaxed) {
                        r ^= r << 13;
                        r ^= r >> 7;
                        r ^= r << 17;
                        if op(&e, &t, rows, r) {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        let fs0 = e.status_value("Innodb_data_fsyncs").unwrap();
        std::thread::sleep(Duration::from_secs(secs));
        stop.store(true, Ordering::Relaxed);
        for h in hs {
            h.join().unwrap();
        }
        let n = done.load(Ordering::Relaxed);
        let fs = e.status_value("Innodb_data_fsyncs").unwrap() - fs0;
        println!(
            "{name}: {threads} threads, {:.0} ops/s, {:.1} us/op/thread, {fs} fsyncs",
            n as f64 / secs as f64,
            secs as f64 * 1e6 * threads as f64 / n.max(1) as f64
        );
    }
    for (k, v) in e.status() {
        println!("{k} = {v}");
    }
    drop(t);
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}
