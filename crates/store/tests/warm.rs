//! Flush and compaction output goes into the block cache while the data fits in half of it
//! (the engine's `warm` module): a cached data set stays cached through its compactions, and
//! the blocks of the files a compaction replaced leave the cache with them.

mod common;
use common::*;
use shoal_store::*;

const ROWS: i64 = 20_000;

/// Writes rows 1..=ROWS (about 4 MB) in transactions of 1000, `c` tagged with `tag`.
fn write_all(e: &Engine, t: &TableDef, tag: &str, update: bool) {
    for chunk in 0..(ROWS / 1000) {
        let mut txn = e.begin(Isolation::RepeatableRead);
        for i in 0..1000 {
            let id = chunk * 1000 + i + 1;
            let c = format!("{tag}{id:0>116}");
            if update {
                let key = RowKey::from_values(t, &[Datum::Int(id)]).unwrap();
                txn.update(t, &key, row(id, id % 100, &c)).unwrap();
            } else {
                txn.insert(t, row(id, id % 100, &c)).unwrap();
            }
        }
        txn.commit().unwrap();
    }
}

fn status(e: &Engine, name: &str) -> u64 {
    e.status_value(name).unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn a_data_set_that_fits_stays_cached_through_compaction() {
    let dir = TempDir::new("warm-fits");
    let mut cfg = config(dir.path());
    cfg.block_cache_bytes = 64 << 20;
    cfg.flush_log_at_trx_commit = 2;
    let e = Engine::open(cfg).unwrap();
    // The background thread's first check, a second after open: the (empty) data fits.
    wait_warms(&e, 1);
    e.create_database("db").unwrap();
    let t = e.create_table("db", sbtest_spec("t", false)).unwrap();
    // Two versions of every row in two level-0 files, then one compaction into a new file.
    write_all(&e, &t, "a", false);
    e.flush().unwrap();
    write_all(&e, &t, "b", true);
    e.flush().unwrap();
    let before = status(&e, "Shoal_block_cache_usage");
    e.compact();
    let after = status(&e, "Shoal_block_cache_usage");
    // The two input files' blocks left the cache with them, and the output's (half as many)
    // came in: less than before (with the inputs' blocks left behind: 16.5 MB against 12.9).
    assert!(
        after < before,
        "cache usage {before} before the compaction, {after} after"
    );
    // Every row of the compacted data set is read from the cache, none from the disk.
    let misses = status(&e, "Innodb_buffer_pool_reads");
    let mut txn = e.begin(Isolation::RepeatableRead);
    let all = txn
        .scan_pk(&t, &KeyRange::all(), LockMode::None, None)
        .unwrap();
    assert_eq!(all.len() as i64, ROWS);
    for id in (1..=ROWS).step_by(97) {
        let r = txn.get(&t, &[Datum::Int(id)], LockMode::None).unwrap();
        let r = r.expect("row");
        assert_eq!(r.values[2], Datum::text(&format!("b{id:0>116}")));
    }
    assert_eq!(
        status(&e, "Innodb_buffer_pool_reads"),
        misses,
        "reads after the compaction missed the cache"
    );
}

#[test]
fn a_data_set_larger_than_half_the_cache_is_not_prepopulated_by_compactions() {
    let dir = TempDir::new("warm-large");
    {
        let mut cfg = config(dir.path());
        cfg.flush_log_at_trx_commit = 2;
        let e = Engine::open(cfg).unwrap();
        e.create_database("db").unwrap();
        let t = e.create_table("db", sbtest_spec("t", false)).unwrap();
        write_all(&e, &t, "a", false);
        e.flush().unwrap();
        e.compact();
    }
    // About 4 MB of data, a 4 MiB cache: compaction output would push out what reads want.
    let mut cfg = config(dir.path());
    cfg.block_cache_bytes = 4 << 20;
    let e = Engine::open(cfg).unwrap();
    // Two background checks (once a second) later, still not warmed.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert_eq!(status(&e, "Shoal_block_cache_warms_compactions"), 0);
    // A larger buffer pool at run time: the background thread switches.
    e.set_block_cache_bytes(64 << 20);
    wait_warms(&e, 1);
    // And back when it shrinks again.
    e.set_block_cache_bytes(4 << 20);
    wait_warms(&e, 0);
}

/// Polls `Shoal_block_cache_warms_compactions` until it is `want` (deadline 30 s).
fn wait_warms(e: &Engine, want: u64) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while status(e, "Shoal_block_cache_warms_compactions") != want {
        assert!(
            std::time::Instant::now() < end,
            "Shoal_block_cache_warms_compactions never became {want}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
