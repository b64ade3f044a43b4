//! A data set larger than a tiny block cache: reads miss the cache, are counted as
//! `Innodb_buffer_pool_reads` and reported as DISKIO waits; cached reads are not.

mod common;
use common::*;
use rand::{Rng, SeedableRng};
use shoal_store::*;
use shoal_wait::WaitKind;

/// Inserts rows 1..=`rows` (about 200 bytes each) into sbtest table `t`, 1,000 a transaction;
/// with `flush_every: Some(n)`, flushes the memtable after every `n` transactions.
fn load_rows(e: &Engine, t: &TableDef, rows: i64, flush_every: Option<i64>) {
    let (c, pad) = ("c".repeat(120), "p".repeat(50));
    for chunk in 0..(rows / 1000) {
        let mut txn = e.begin(Isolation::RepeatableRead);
        for i in 0..1000 {
            let id = chunk * 1000 + i + 1;
            let row = vec![
                Datum::Int(id),
                Datum::Int(id % 100),
                Datum::text(&c),
                Datum::text(&pad),
            ];
            txn.insert(t, row).unwrap();
        }
        txn.commit().unwrap();
        if flush_every.is_some_and(|n| chunk % n == n - 1) {
            e.flush().unwrap();
        }
    }
}

#[test]
fn cache_misses_are_reported_as_diskio_waits() {
    let dir = TempDir::new("diskio");
    let rows = 20_000i64;
    {
        let e = open(dir.path());
        e.set_flush_log_at_trx_commit(2);
        e.create_database("db").unwrap();
        let t = e.create_table("db", sbtest_spec("t", false)).unwrap();
        load_rows(&e, &t, rows, None);
        e.flush().unwrap();
        e.compact();
    }
    // Reopen with a 1 MiB cache: ~4 MB of rows cannot fit.
    let mut cfg = config(dir.path());
    cfg.block_cache_bytes = 1 << 20;
    let e = Engine::open(cfg).unwrap();
    let t = e.table("db", "t").unwrap();
    let waits_before = shoal_wait::count(WaitKind::DiskIo);
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let mut txn = e.begin(Isolation::RepeatableRead);
    for _ in 0..500 {
        let id = rng.gen_range(1..=rows);
        let r = txn
            .get(&t, &[Datum::Int(id)], LockMode::None)
            .unwrap()
            .unwrap();
        assert_eq!(r.values[0], Datum::Int(id));
    }
    let misses = e.status_value("Innodb_buffer_pool_reads").unwrap();
    let requests = e.status_value("Innodb_buffer_pool_read_requests").unwrap();
    let waits = shoal_wait::count(WaitKind::DiskIo) - waits_before;
    eprintln!(
        "point reads: {requests} requests, {misses} misses, {waits} DISKIO waits, direct={}",
        e.direct_reads_active()
    );
    assert!(
        misses > 100,
        "random reads over a 4x larger data set must miss: {misses}"
    );
    assert!(waits >= misses, "every miss is a reported wait");
    assert!(misses <= requests);
    // A full scan also reads from disk, and still returns every row in order.
    let before = e.status_value("Innodb_buffer_pool_reads").unwrap();
    let all = txn
        .scan_pk(&t, &KeyRange::all(), LockMode::None, None)
        .unwrap();
    assert_eq!(all.len() as i64, rows);
    assert!(all.windows(2).all(|w| w[0].key < w[1].key));
    assert!(e.status_value("Innodb_buffer_pool_reads").unwrap() > before);
    // Re-reading one hot row hits the cache: no new misses.
    txn.get(&t, &[Datum::Int(1)], LockMode::None).unwrap();
    let m1 = e.status_value("Innodb_buffer_pool_reads").unwrap();
    for _ in 0..50 {
        txn.get(&t, &[Datum::Int(1)], LockMode::None).unwrap();
    }
    assert_eq!(e.status_value("Innodb_buffer_pool_reads").unwrap(), m1);
}

/// Flushed and compacted data stays in the cache when it fits: a compaction rewrites its
/// input files into new ones, and a cached block names its file, so without warming the
/// cache with the output (`prepopulate_block_cache`) every read after a compaction went to
/// the disk again (in sysbench read-write, 500 reads a second, each a DISKIO wait).
#[test]
fn compacted_data_that_fits_the_cache_is_read_from_it() {
    let dir = TempDir::new("warm");
    let mut cfg = config(dir.path());
    cfg.block_cache_bytes = 64 << 20;
    cfg.flush_log_at_trx_commit = 2;
    let e = Engine::open(cfg).unwrap();
    e.create_database("db").unwrap();
    let t = e.create_table("db", sbtest_spec("t", false)).unwrap();
    let rows = 20_000i64;
    // Several files, so that the compaction below has inputs to merge.
    load_rows(&e, &t, rows, Some(5));
    e.flush().unwrap();
    e.compact();
    let before = e.status_value("Innodb_buffer_pool_reads").unwrap();
    let mut txn = e.begin(Isolation::RepeatableRead);
    let all = txn
        .scan_pk(&t, &KeyRange::all(), LockMode::None, None)
        .unwrap();
    assert_eq!(all.len() as i64, rows);
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for _ in 0..500 {
        let id = rng.gen_range(1..=rows);
        let r = txn
            .get(&t, &[Datum::Int(id)], LockMode::None)
            .unwrap()
            .unwrap();
        assert_eq!(r.values[0], Datum::Int(id));
    }
    let misses = e.status_value("Innodb_buffer_pool_reads").unwrap() - before;
    assert_eq!(
        misses, 0,
        "4 MB of rows in a 64 MiB cache, just compacted: every read must hit the cache"
    );
}
