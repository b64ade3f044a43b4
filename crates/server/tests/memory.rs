//! Memory is bounded by the buffer pool (issue 3, "Memory and I/O"): the real `shoal` binary
//! with a 16 MiB `innodb_buffer_pool_size` and `innodb_flush_method=O_DIRECT` loads a table
//! about five times larger than the cache, then reads all of it (random point selects, ranges
//! and full scans) from several connections, while a sampler thread reads `VmRSS` from
//! `/proc/PID/status` every 50 ms. The peak must stay under the documented bound
//! (docs/ARCHITECTURE.md, "Memory budget"):
//!
//! ```text
//! RSS <= innodb_buffer_pool_size + FIXED_OVERHEAD + connections * PER_CONNECTION
//! ```
//!
//! and `Innodb_buffer_pool_reads` (block-cache misses) must have grown by thousands: the data
//! really did not fit, so the reads went to the disk instead of to memory.
//!
//! How we know the test can fail (what was tried, 2026-11-30):
//! - Before exec streamed scanned rows, the full-scan aggregate below materialised the whole
//!   table and this test failed: peak RSS 172 MiB against the 90 MiB bound.
//! - With the `WriteBufferManager` removed from `shoal_store::engine` (memtables 3 × 16 MiB
//!   outside the cache) the test still PASSED (peak 69 MiB; 79 MiB with it, in a slower run):
//!   16 MiB write buffers add at most 48 MiB, inside the 64 MiB fixed allowance, and memtable
//!   arenas are filled lazily. The bound therefore does not single out the WriteBufferManager;
//!   it does catch any memory that grows with the data set (materialised scans, a cache that
//!   ignores its capacity, page-cache-like buffering), and `Shoal_block_cache_usage` (which
//!   includes the memtables' reservations) is checked against the pool separately.
//! - jemalloc with its default four arenas per CPU (2026-12-03): peak 93 MiB, where two arenas
//!   give 80-88 MiB (the fixed allowance became 72 MiB then; the bound is 98 MiB).
//! - When pool-of-threads became the default (2026-12-06), this test failed under a CPU hog:
//!   peak 108 MiB (89-96 without the hog), idle 26 MiB against one thread per connection's
//!   18.5. The pool allocated two latency histograms for each of its 128 preallocated groups
//!   up front; allocated at their first sample, the pool's idle is 18.8 MiB and its peak
//!   81-88 MiB, with two CPU hogs beside it too.
//! - CI failed on it once more (2026-12-07): peak 98.7 MiB, 94.4 just after the load, where
//!   this machine measured 82-91 quiet and 85-93 beside a CPU hog. About 25 MiB of the peak
//!   was jemalloc's dirty pages (freed in the last second; 64-68 MiB with no decay), most of
//!   them flushed memtables' 2 MiB arena blocks. With jemalloc's oversize arena for 256 KiB
//!   and more (returned at once), the peak is 74-78 quiet and 71-83 beside the hog.

mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::Conn;
use support::Shoal;

/// `innodb_buffer_pool_size` for this test.
const POOL: u64 = 16 << 20;
/// Fixed overhead allowed on top of the pool (code and static data, the Rust and RocksDB
/// runtime, allocator slack, catalog, status, lock table; see docs/ARCHITECTURE.md). 72 MiB
/// since the server allocates with jemalloc, which returns freed pages after a second rather
/// than reusing them at once as glibc did: this test's peak went from 69-74 MiB (glibc, one arena
/// per CPU) to 80-88 MiB (63-65 with every free returned at once, at 1.7x the load time).
const FIXED_OVERHEAD: u64 = 72 << 20;
/// Allowed per open connection (thread stack pages touched, packet buffers, session state).
const PER_CONNECTION: u64 = 2 << 20;
/// Rows and row size: ~80 MB of row data, 5 × the pool.
const ROWS: u64 = 80_000;
const PAD: usize = 1000;
const LOADERS: u64 = 4;
const READERS: u64 = 4;

fn vm_rss(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn status(c: &mut Conn, name: &str) -> u64 {
    let row: Option<(String, String)> = c
        .query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
        .unwrap();
    row.map(|(_, v)| v.parse().unwrap())
        .unwrap_or_else(|| panic!("no status {name}"))
}

/// A deterministic pseudo-random generator (xorshift), so failures reproduce.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn pad_of(id: u64) -> String {
    let mut s = String::with_capacity(PAD);
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while s.len() < PAD {
        s.push(char::from(b'a' + (next(&mut x) % 26) as u8));
    }
    s
}

#[test]
fn rss_stays_within_buffer_pool_plus_documented_overhead() {
    let started = Instant::now();
    let mut srv = Shoal::start(
        "memory",
        &[
            "--innodb-buffer-pool-size=16M",
            "--innodb-flush-method=O_DIRECT",
            "--innodb-flush-log-at-trx-commit=2",
        ],
    );
    let pid = srv.child.as_ref().unwrap().id();
    let peak = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, stop) = (peak.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(r) = vm_rss(pid) {
                    peak.fetch_max(r, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let rss_idle = vm_rss(pid).unwrap();

    let mut c = Conn::new(srv.mysql_opts()).unwrap();
    c.query_drop("CREATE DATABASE m").unwrap();
    c.query_drop(
        "CREATE TABLE m.t (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, pad VARCHAR(1000) NOT NULL, KEY k_1 (k))",
    )
    .unwrap();

    // Load: LOADERS connections, multi-row INSERTs of 200 rows (~200 KB each).
    let loaders: Vec<_> = (0..LOADERS)
        .map(|w| {
            let opts = srv.mysql_opts();
            std::thread::spawn(move || {
                let mut c = Conn::new(opts).unwrap();
                let mut id = w;
                while id < ROWS {
                    let mut sql = String::from("INSERT INTO m.t (id, k, pad) VALUES ");
                    let mut n = 0;
                    while id < ROWS && n < 200 {
                        if n > 0 {
                            sql.push(',');
                        }
                        sql.push_str(&format!("({id},{},'{}')", id % 1000, pad_of(id)));
                        id += LOADERS;
                        n += 1;
                    }
                    c.query_drop(&sql).unwrap();
                }
            })
        })
        .collect();
    for l in loaders {
        l.join().unwrap();
    }
    let rss_loaded = vm_rss(pid).unwrap();
    let load_time = started.elapsed();

    // Read everything back, randomly, from READERS connections.
    let misses_before = status(&mut c, "Innodb_buffer_pool_reads");
    let deadline = Instant::now() + Duration::from_secs(15);
    let readers: Vec<_> = (0..READERS)
        .map(|w| {
            let opts = srv.mysql_opts();
            std::thread::spawn(move || {
                let mut c = Conn::new(opts).unwrap();
                let mut x = 0x2545_F491_4F6C_DD1D ^ (w + 1);
                let mut reads = 0u64;
                let stmt = c.prep("SELECT pad FROM m.t WHERE id = ?").unwrap();
                while reads < 4000 && Instant::now() < deadline {
                    let id = next(&mut x) % ROWS;
                    let pad: Option<String> = c.exec_first(&stmt, (id,)).unwrap();
                    assert_eq!(pad.as_deref(), Some(pad_of(id).as_str()), "row {id}");
                    reads += 1;
                    if reads.is_multiple_of(500) {
                        // A range over the secondary index (random rows of the whole table).
                        let k = next(&mut x) % 1000;
                        let n: u64 = c
                            .query_first(format!("SELECT COUNT(*) FROM m.t WHERE k = {k}"))
                            .unwrap()
                            .unwrap();
                        assert_eq!(n, ROWS / 1000, "k = {k}");
                    }
                }
                reads
            })
        })
        .collect();
    // Meanwhile, a full scan through the cache.
    let (n, bytes): (u64, u64) = c
        .query_first("SELECT COUNT(*), SUM(LENGTH(pad)) FROM m.t")
        .unwrap()
        .unwrap();
    assert_eq!((n, bytes), (ROWS, ROWS * PAD as u64));
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    let misses = status(&mut c, "Innodb_buffer_pool_reads") - misses_before;
    let cache_usage = status(&mut c, "Shoal_block_cache_usage");
    drop(c);

    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let peak = peak.load(Ordering::Relaxed);
    let connections = 1 + LOADERS.max(READERS);
    let bound = POOL + FIXED_OVERHEAD + connections * PER_CONNECTION;
    let mib = |b: u64| b as f64 / 1048576.0;
    eprintln!(
        "memory: idle {:.1} MiB, after load {:.1} MiB (load {:.1} s), peak {:.1} MiB, bound {:.1} MiB; \
         cache usage {:.1} MiB; {reads} random reads, {misses} block-cache misses; total {:.1} s",
        mib(rss_idle),
        mib(rss_loaded),
        load_time.as_secs_f64(),
        mib(peak),
        mib(bound),
        mib(cache_usage),
        started.elapsed().as_secs_f64()
    );
    assert!(
        misses > 2000,
        "only {misses} block-cache misses: the data fit in the cache?"
    );
    assert!(reads >= 1000, "only {reads} random reads in time");
    assert!(
        cache_usage <= POOL + POOL / 8,
        "block cache usage {cache_usage} over its capacity {POOL}"
    );
    assert!(
        peak <= bound,
        "peak RSS {:.1} MiB over the bound {:.1} MiB (pool {:.0} + fixed {:.0} + {connections} x {:.0})",
        mib(peak),
        mib(bound),
        mib(POOL),
        mib(FIXED_OVERHEAD),
        mib(PER_CONNECTION)
    );
    assert_eq!(srv.stop(), Some(0));
}

/// Open transactions do not stall the server's writers (issue 19: 291 COMMITs waited 143 s in
/// an I/O-bound read-write run with a 6 MiB buffer pool).
///
/// A transaction keeps one RocksDB iterator between its range scans, and an iterator pins the
/// memtables that existed when it was created. The memtables are charged to the buffer pool
/// through RocksDB's `WriteBufferManager`; when it was built to *stall* writers at its budget,
/// flushed memtables that idle transactions still pinned kept the charge at the budget, so
/// every write of every connection blocked until those transactions ended; and a transaction
/// waiting for a row lock held by a stalled committer (or queued behind it in the group
/// commit) never ended. Here a writer inserts 12 MB (six times the 2 MiB memtable budget of an
/// 8 MiB pool) in autocommit INSERTs, and every 700 rows (most of a 1 MiB memtable) opens one
/// more transaction that range-scans the table and stays idle, pinning the memtable of that
/// moment. With the stall, the writer blocked for good at 2,800 rows, with four transactions
/// open (tried when this test was written); now it finishes, each open transaction's snapshot
/// still reads the rows it saw, and all of them commit.
#[test]
fn idle_transactions_do_not_stall_writers() {
    let srv = Shoal::start(
        "memory-stall",
        &[
            "--innodb-buffer-pool-size=8M",
            "--innodb-flush-log-at-trx-commit=2",
        ],
    );
    let mut c = Conn::new(srv.mysql_opts()).unwrap();
    c.query_drop("CREATE DATABASE m").unwrap();
    c.query_drop("CREATE TABLE m.t (id INT NOT NULL PRIMARY KEY, pad VARCHAR(1000) NOT NULL)")
        .unwrap();

    const WRITE_ROWS: u64 = 12_000;
    const HOLDERS: usize = 6;
    let (progress_tx, progress_rx) = std::sync::mpsc::channel();
    let opts = srv.mysql_opts();
    let writer = std::thread::spawn(move || {
        let mut b = Conn::new(opts.clone()).unwrap();
        // (connection, rows it saw)
        let mut holders: Vec<(Conn, u64)> = Vec::new();
        let mut id = 0;
        while id < WRITE_ROWS {
            let mut sql = String::from("INSERT INTO m.t (id, pad) VALUES ");
            for i in 0..100 {
                if i > 0 {
                    sql.push(',');
                }
                sql.push_str(&format!("({},'{}')", id + i, pad_of(id + i)));
            }
            b.query_drop(&sql).unwrap();
            id += 100;
            if id % 700 == 0 && holders.len() < HOLDERS {
                let mut h = Conn::new(opts.clone()).unwrap();
                h.query_drop("BEGIN").unwrap();
                let seen: u64 = h
                    .query_first("SELECT COUNT(*) FROM m.t WHERE id BETWEEN 0 AND 1000000")
                    .unwrap()
                    .unwrap();
                assert_eq!(seen, id);
                holders.push((h, seen));
            }
            let _ = progress_tx.send(id);
        }
        holders
    });
    // Progress, not a time window: fail only when the writer made no progress for a long time
    // (a loaded machine writes 100 rows in milliseconds; a stall never ends).
    let mut written = 0;
    while written < WRITE_ROWS {
        match progress_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(n) => written = n,
            Err(_) => panic!(
                "the writer stalled after {written} of {WRITE_ROWS} rows: the memtable budget \
                 stalls writes behind memtables that idle transactions pin"
            ),
        }
    }
    let holders = writer.join().unwrap();
    assert_eq!(holders.len(), HOLDERS);
    for (mut h, seen) in holders {
        let still: u64 = h
            .query_first("SELECT COUNT(*) FROM m.t WHERE id BETWEEN 0 AND 1000000")
            .unwrap()
            .unwrap();
        assert_eq!(still, seen, "an open transaction's snapshot changed");
        h.query_drop("COMMIT").unwrap();
    }
    let all: u64 = c.query_first("SELECT COUNT(*) FROM m.t").unwrap().unwrap();
    assert_eq!(all, WRITE_ROWS);
}
