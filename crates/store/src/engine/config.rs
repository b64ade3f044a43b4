//! Engine options, and the RocksDB options and block cache built from them.
//!
//! # Memory budget
//!
//! One LRU block cache of `block_cache_bytes` (`innodb_buffer_pool_size`) holds data, index and
//! filter blocks (`cache_index_and_filter_blocks`), so table-reader memory is inside the budget
//! too. Memtables are charged to the same cache through a RocksDB `WriteBufferManager` built on
//! it: their memory is reserved in the cache as dummy entries (evicting data blocks), a flush
//! starts when they reach [`memtable_budget`] (a quarter of the cache, 1..64 MiB), so data +
//! index + filter + memtables share one budget. Writers do not stall at it: memtables that open
//! transactions pin after their flush stay charged until those transactions end (like InnoDB's
//! undo history), and a stall behind them hung every writer (see [`db_options`]); at most
//! `max_write_buffer_number` (3) memtables are unflushed at a time. Outside
//! it, bounded: at most [`MAX_OPEN_FILES`] table readers (file metadata only), the lock table and
//! per-transaction write buffers (proportional to uncommitted writes), the in-memory catalog,
//! and allocator slack. The per-server overhead formula is in docs/ARCHITECTURE.md. With
//! `direct_reads` (`innodb_flush_method=O_DIRECT`) RocksDB reads SST files with `O_DIRECT`, so
//! the OS page cache does not act as a second, unbounded buffer pool and a data set larger than
//! the cache really waits on the disk.
//!
//! # The row cache
//!
//! RocksDB's row cache keeps the result of a point read per (SST file, key), so a point read
//! that hits it skips the file's bloom filter, index block and data block searches: in sysbench
//! point select that part was 6,700 of the worker's 24,100 instructions a statement, and with
//! the row cache the worker runs 20,200 (docs/perf-log, session 27). It is the same LRU cache
//! as the blocks (one `innodb_buffer_pool_size` budget; a cached row displaces blocks as any
//! block does). Entries name an immutable file, so writes never make one stale; a read at a
//! snapshot older than a file's newest write keys its entry by sequence number. The one
//! feature it cannot serve is `DeleteRange` (a hit skips the file's range tombstones), which
//! RocksDB then refuses: dropped tables' keys go with compaction instead (`dropped`).
//!
//! # Hot rows and hidden versions
//!
//! An UPDATE adds a version of the row to the memtable; the older ones stay there, hidden,
//! until a flush drops those no snapshot still needs. A range scan reads the newest visible
//! version of each key and then steps over every hidden one below it to reach the next key
//! (after eight RocksDB re-seeks, through every memtable and level-0 file). A workload that
//! updates a few hot rows again and again (sysbench's default `special` distribution sends
//! most writes to 1 % of the rows) thus makes every scan over them slower as the memtable
//! fills: in read-write at 64 clients a fifth of the server's CPU went into stepping over
//! versions, and the cost per transaction grew run after run until a flush. InnoDB updates in
//! place and keeps old versions in undo, which a current read never walks. RocksDB counts the
//! hidden entries its iterators step over in the active memtable and can flush a memtable that
//! scans find expensive ([`SCAN_FLUSH_TRIGGER`], [`SCAN_FLUSH_AVG_TRIGGER`], set by
//! [`apply_mutable_options`]): the flush leaves only the versions live snapshots need, so scans
//! over hot rows stay cheap at the price of more, smaller flushes.

use rocksdb::{BlockBasedOptions, Cache, LruCacheOptions, Options, WriteBufferManager};
use std::path::PathBuf;
use std::time::Duration;

/// Engine options (the `innodb_*` variables that concern storage).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Data directory (created if missing).
    pub datadir: PathBuf,
    /// Block cache size in bytes (`innodb_buffer_pool_size`).
    pub block_cache_bytes: usize,
    /// Read SST files with O_DIRECT (`innodb_flush_method=O_DIRECT`, the default). Falls back
    /// to buffered reads, with a warning, on file systems without O_DIRECT (tmpfs).
    pub direct_reads: bool,
    /// `innodb_flush_log_at_trx_commit`: 1 = fsync per commit (group commit), 0/2 = once a second.
    pub flush_log_at_trx_commit: u8,
    /// Default `innodb_lock_wait_timeout` for new transactions.
    pub lock_wait_timeout: Duration,
    /// Memtable size (bytes); at most 3 exist at a time.
    pub write_buffer_bytes: usize,
}

impl EngineConfig {
    /// Defaults for `datadir`: 128 MiB cache, direct reads, flush at every commit, 50 s lock
    /// wait timeout (InnoDB's defaults).
    pub fn new(datadir: impl Into<PathBuf>) -> EngineConfig {
        EngineConfig {
            datadir: datadir.into(),
            block_cache_bytes: 128 << 20,
            direct_reads: true,
            flush_log_at_trx_commit: 1,
            lock_wait_timeout: Duration::from_secs(50),
            write_buffer_bytes: 16 << 20,
        }
    }
}

/// Level-0 files that start a compaction into the next level (RocksDB's default is 4; see
/// [`db_options`]).
pub const LEVEL0_COMPACTION_TRIGGER: i32 = 2;

/// Most SST files open at once (bounds the table cache; see the memory budget in the module docs).
pub const MAX_OPEN_FILES: i32 = 1024;

/// The memtables' share of the block cache: a quarter of it, at least 1 MiB and at most
/// 64 MiB (3 × the default 16 MiB write buffer, plus room for one being flushed).
pub(crate) fn memtable_budget(cache_bytes: usize) -> usize {
    (cache_bytes / 4).clamp(1 << 20, 64 << 20)
}

/// Smallest share of the cache one shard of it may have.
const MIN_CACHE_SHARD: usize = 8 << 20;

/// The block cache: an LRU cache in `2^bits` shards of at least [`MIN_CACHE_SHARD`] (at most
/// 64). RocksDB's default aims at 512 KiB shards, which splits a small cache (an 11 MiB buffer
/// pool: 16 shards of 704 KiB) so finely that one SST file's filter or index block (a few hundred
/// KiB for a 64 MiB file) fills half a shard, and the random data blocks that share its shard evict
/// it: every lookup then read it from the disk again
/// (docs/perf-log/2026-12-01-session-9-seventh-pass.md). Larger shards keep the hottest blocks
/// resident; a shard's mutex is held for a hash probe, and a 2-core machine has little to contend
/// with.
fn block_cache(bytes: usize) -> Cache {
    let mut o = LruCacheOptions::default();
    o.set_capacity(bytes);
    o.set_num_shard_bits(cache_shard_bits(bytes));
    Cache::new_lru_cache_opts(&o)
}

/// How many bits of shard index [`block_cache`] gives a cache of `bytes`.
fn cache_shard_bits(bytes: usize) -> i32 {
    let mut bits = 0;
    while bits < 6 && bytes >> (bits + 1) >= MIN_CACHE_SHARD {
        bits += 1;
    }
    bits
}

/// Hidden (older or deleted) versions one iterator step may walk over in the active memtable
/// before RocksDB flushes it (`memtable_op_scan_flush_trigger`; see "Hot rows and hidden
/// versions" above). Also the least a window of steps must walk before the average below counts.
pub const SCAN_FLUSH_TRIGGER: u32 = 128;

/// Average hidden versions per step between two seeks that flushes the active memtable
/// (`memtable_avg_op_scan_flush_trigger`): a range scan whose rows each carry this many old
/// versions. 2, not the 8 of session 22: once the executor's own per-row cost fell, two
/// hidden versions per row already made sysbench's 100-row ranges cost 2.5x what they cost on
/// a clean memtable, and read-write at 8 and 64 clients spent 9-11 % less server CPU per
/// transaction with 2 (docs/perf-log/2026-12-03-session-24-range-rows.md); 1 measured the same
/// with more flushes.
pub const SCAN_FLUSH_AVG_TRIGGER: u32 = 2;

/// Sets the options RocksDB only takes after open (`SetOptions`): the scan-triggered memtable
/// flush, and the erasure of obsolete files' cached blocks.
pub(super) fn apply_mutable_options(db: &rocksdb::DB) -> Result<(), rocksdb::Error> {
    db.set_options(&[
        (
            "memtable_op_scan_flush_trigger",
            &SCAN_FLUSH_TRIGGER.to_string(),
        ),
        (
            "memtable_avg_op_scan_flush_trigger",
            &SCAN_FLUSH_AVG_TRIGGER.to_string(),
        ),
        // Obsolete files' blocks leave the cache with them (see the `warm` module).
        (
            "uncache_aggressiveness",
            super::warm::UNCACHE_AGGRESSIVENESS,
        ),
    ])
}

/// The RocksDB options for `cfg`, with the block cache and the write buffer manager they
/// share (kept by the engine: `SET GLOBAL innodb_buffer_pool_size` resizes both). Direct
/// reads are left to [`super::Engine::open`], which falls back when the file system refuses them.
pub(super) fn db_options(cfg: &EngineConfig) -> (Options, Cache, WriteBufferManager) {
    let cache = block_cache(cfg.block_cache_bytes.max(1 << 20));
    // Memtables are charged to the same cache (dummy entries evict blocks as they grow), and
    // reaching their share starts a flush. Writers never *stall* on it (`allow_stall` false):
    // the charge includes flushed memtables that open transactions' iterators still pin, which
    // no flush can free, so a stall at the budget waited for those transactions to end, while
    // they waited for the stalled writers (their commits queue behind them, their row locks are
    // held by them): every writer of the server hung (tests/memory.rs,
    // `idle_transactions_do_not_stall_writers`). Unflushed memtables stay bounded by
    // `max_write_buffer_number`.
    let wbm_bytes = memtable_budget(cfg.block_cache_bytes);
    let wbm =
        WriteBufferManager::new_write_buffer_manager_with_cache(wbm_bytes, false, cache.clone());
    let mut bbo = BlockBasedOptions::default();
    bbo.set_block_cache(&cache);
    bbo.set_cache_index_and_filter_blocks(true);
    bbo.set_pin_l0_filter_and_index_blocks_in_cache(true);
    bbo.set_bloom_filter(10.0, false);
    bbo.set_block_size(16 << 10);
    // A full key every 4 entries of a data block instead of RocksDB's 16: a point read
    // binary-searches those restart keys, then decodes and compares the prefix-compressed
    // entries after one in turn, on average half an interval (8 entries at 16, 2 at 4). Point
    // select's instructions in the worker -6.3 %, read-write's -1.1 % (callgrind, 1 client);
    // data 1-5 % larger (less prefix sharing). 2 and 1 saved no more; the data block hash
    // index saved 2.3 % alone and nothing on top of 4 (docs/perf-log, session 26).
    bbo.set_block_restart_interval(4);
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_block_based_table_factory(&bbo);
    // Point reads answered from the same cache without searching a block (see "The row cache").
    opts.set_row_cache(&cache);
    opts.set_write_buffer_manager(&wbm);
    opts.set_write_buffer_size(cfg.write_buffer_bytes.min(wbm_bytes / 2).max(1 << 20));
    opts.set_max_write_buffer_number(3);
    // A bloom filter of whole keys per memtable: a point read of a key the memtable does not
    // hold (most of them: a memtable holds the last few thousand writes) skips the skip-list
    // search, 2,600 instructions a read in sysbench read-write. Its bits (2 % of the write
    // buffer) live in the memtable's arena, charged like the rest of it.
    opts.set_memtable_prefix_bloom_ratio(0.02);
    opts.set_memtable_whole_key_filtering(true);
    // Table readers (file metadata; their index/filter blocks are in the cache) for at
    // most this many files.
    opts.set_max_open_files(MAX_OPEN_FILES);
    // Level 0 compacts at 2 files, not RocksDB's 4. Each level-0 file (the scan-triggered
    // flushes make many small ones under updates) is one more sorted run that every range scan
    // and point read merges; the compactions that keep it short cost less. sysbench, 3 rounds
    // against 4 (docs/perf-log, session 37): read-write CPU a transaction 0.90-0.94x at 64
    // clients and 0.95-0.97x at 8; point select 0.93-1.04x. 8 instead cost 1.08-1.22x.
    opts.set_level_zero_file_num_compaction_trigger(LEVEL0_COMPACTION_TRIGGER);
    opts.set_max_background_jobs(2);
    opts.set_compression_type(rocksdb::DBCompressionType::None);
    opts.set_keep_log_file_num(3);
    (opts, cache, wbm)
}

#[cfg(test)]
mod tests {
    use super::{cache_shard_bits, db_options, EngineConfig};

    /// The options reach the files RocksDB writes: its OPTIONS file records the data block
    /// restart interval the engine chose (4, not RocksDB's 16) and the level-0 compaction
    /// trigger (2, not 4).
    #[test]
    fn data_block_and_level0_options_reach_the_options_file() {
        let dir = std::env::temp_dir().join(format!("shoal-config-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut cfg = EngineConfig::new(&dir);
        cfg.block_cache_bytes = 8 << 20;
        let (opts, _cache, _wbm) = db_options(&cfg);
        let db = rocksdb::DB::open(&opts, &dir).unwrap();
        drop(db);
        let options: String = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("OPTIONS-"))
            })
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            options
                .lines()
                .any(|l| l.trim() == "block_restart_interval=4"),
            "OPTIONS file: {options}"
        );
        assert!(
            options
                .lines()
                .any(|l| l.trim() == "level0_file_num_compaction_trigger=2"),
            "OPTIONS file: {options}"
        );
    }

    /// Shards of at least 8 MiB, at most 64: a small buffer pool stays one LRU (where an SST
    /// file's filter block of a few hundred KiB is a small share), a large one is split.
    #[test]
    fn cache_shards_are_at_least_eight_mib() {
        let mib = 1usize << 20;
        for (size, bits) in [
            (mib, 0),
            (11 * mib, 0),
            (16 * mib, 1),
            (128 * mib, 4),
            (1024 * mib, 6),
            (64 * 1024 * mib, 6),
        ] {
            assert_eq!(cache_shard_bits(size), bits, "{} MiB", size / mib);
            assert!(bits == 6 || size >> bits >= 8 * mib || bits == 0);
        }
    }
}
