//! Keeping a cached data set cached while RocksDB rewrites it.
//!
//! InnoDB changes a page in place, in its buffer pool: a data set that fits in the pool stays
//! cached however much of it is written. An LSM tree never changes a file. Every flush writes
//! the memtable out as a new file, and every compaction rewrites its input files as new ones,
//! and RocksDB does not put what it writes into the block cache. So after each compaction the
//! first read of every block of the output reads it from the disk (O_DIRECT: no page cache in
//! between), and every row-cache entry (keyed by file) of the inputs is useless. The blocks and
//! entries of the deleted inputs stay in the cache, unreachable, until the LRU pushes them out.
//!
//! Under sysbench read-write at 64 clients a compaction ran every second or two (each one
//! rewrote the whole 19 MB of data, since every level-0 file spans every table). The cache
//! grew by about 110 MiB a 10-second run with blocks of dead files, the server's memory with
//! it, and every run after the first paid for the cold reads: CPU a transaction or statement
//! 4-7 % above the same build with the options below, more with every round (5 rounds,
//! docs/perf-log, session 37).
//!
//! Two RocksDB options fix this, and this module keeps them set:
//!
//! * `uncache_aggressiveness` (set once at open): when a file becomes obsolete, RocksDB erases
//!   its blocks from the cache, so dead blocks do not push live ones out and the cache holds
//!   as much of the live data as it can.
//! * `prepopulate_block_cache`: while the live data fits in half the block cache ([`fits`]),
//!   the blocks a flush or a compaction writes go into the cache as it writes them
//!   (`kFlushAndCompaction`), so a data set that fits stays cached through its rewrites, as
//!   InnoDB's does. A data set that does not fit is read back on demand, as before
//!   (`kDisable`): each compaction's output would push out blocks the reads want (RocksDB
//!   inserts them at the lowest priority, but a compaction writes far more than the cache's low
//!   end holds), and the copies churn the allocator: a bulk load of 80 MB into a 16 MiB buffer
//!   pool with warming on peaked 15-20 MiB higher in RSS (`tests/memory.rs`), with the cache
//!   itself at its capacity.
//!
//! The engine's background thread checks the live data size once a second ([`Warmth::tick`])
//! and switches the mode when the answer changes (one `SetOptions`, which also rewrites
//! RocksDB's OPTIONS file), so a growing data set or `SET GLOBAL innodb_buffer_pool_size`
//! moves it between the two. Its first check comes a second after open, not at open: an empty
//! data set "fits", and a bulk load that starts at once would be warmed until the next check.

use super::Inner;
use std::sync::atomic::Ordering;

/// `uncache_aggressiveness`: keep erasing an obsolete file's blocks while at least ~5 % of the
/// attempts find one cached (RocksDB's scale: 0.99^(a-1)).
pub(super) const UNCACHE_AGGRESSIVENESS: &str = "300";

/// Whether compaction output should be cached: the live data (`live` bytes of SST files) fits
/// in half the block cache (`capacity` bytes), leaving the other half for memtables (a quarter
/// at most), index and filter blocks, the row cache and the versions a compaction replaces.
pub(super) fn fits(live: u64, capacity: u64) -> bool {
    live <= capacity / 2
}

/// The `block_based_table_factory` option string for the mode.
fn table_option(warm: bool) -> &'static str {
    if warm {
        "{prepopulate_block_cache=kFlushAndCompaction;}"
    } else {
        "{prepopulate_block_cache=kDisable;}"
    }
}

/// The background thread's state: the mode last set.
#[derive(Debug, Default)]
pub(super) struct Warmth {
    /// `Some(true)`: flush and compaction output is cached; `None` before the first successful
    /// set (RocksDB's default: not cached).
    compaction: Option<bool>,
    /// The last attempt failed (warned once; quiet until one succeeds).
    failing: bool,
}

impl Warmth {
    /// Sets the mode the live data size asks for, if it is not set already.
    pub(super) fn tick(&mut self, inner: &Inner) {
        let live = inner
            .db
            .property_int_value("rocksdb.live-sst-files-size")
            .ok()
            .flatten()
            .unwrap_or(0);
        let capacity = inner.cache_capacity.load(Ordering::Relaxed) as u64;
        let want = fits(live, capacity);
        if self.compaction == Some(want) {
            return;
        }
        match inner
            .db
            .set_options(&[("block_based_table_factory", table_option(want))])
        {
            Ok(()) => {
                self.compaction = Some(want);
                self.failing = false;
                inner.warms_compactions.store(want, Ordering::Relaxed);
                tracing::debug!(
                    live,
                    capacity,
                    compaction = want,
                    "block cache prepopulation"
                );
            }
            Err(e) if !self.failing => {
                self.failing = true;
                tracing::warn!(
                    "setting the block cache prepopulation failed (not reported again until it succeeds): {e}"
                );
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fits;

    #[test]
    fn compactions_are_cached_while_the_data_fits_in_half_the_cache() {
        let mib = 1u64 << 20;
        assert!(fits(0, 128 * mib));
        assert!(fits(64 * mib, 128 * mib));
        assert!(!fits(64 * mib + 1, 128 * mib));
        assert!(!fits(1024 * mib, 128 * mib));
    }
}
