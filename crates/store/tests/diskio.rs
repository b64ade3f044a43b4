//! A data set larger than a tiny block cache: reads miss the cache, are counted as
//! `Innodb_buffer_pool_reads` and reported as DISKIO waits; cached reads are not.

mod common;
use common::*;
use rand::{Rng, SeedableRng};
use shoal_store::*;
use shoal_wait::WaitKind;

#[test]
fn cache_misses_are_reported_as_diskio_waits() {
    let dir = TempDir::new("diskio");
    let rows = 20_000i64;
    {
        let e = open(dir.path());
        e.set_flush_log_at_trx_commit(2);
        e.create_database("db").unwrap();
        let t = e.create_table("db", sbtest_spec("t", false)).unwrap();
        let pad = "p".repeat(50);
        for chunk in 0..(rows / 1000) {
            let mut txn = e.begin(Isolation::RepeatableRead);
            for i in 0..1000 {
                let id = chunk * 1000 + i + 1;
                txn.insert(
                    &t,
                    vec![
                        Datum::Int(id),
                        Datum::Int(id % 100),
                        Datum::text(&"c".repeat(120)),
                        Datum::text(&pad),
                    ],
                )
                .unwrap();
            }
            txn.commit().unwrap();
        }
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
