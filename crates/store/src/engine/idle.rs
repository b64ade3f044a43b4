//! The idle flush: a memtable is flushed when writes go quiet.
//!
//! Old versions of updated rows stay in the active memtable, hidden, until a flush drops those
//! no snapshot needs, and every range scan over those rows steps over them (the engine's
//! config module, "Hot rows and hidden versions"). RocksDB's scan-triggered flush marks such
//! a memtable for flush, but the flush is only scheduled by the next *write*: after a burst of
//! updates, a read-only phase (reports after a batch job, sysbench's range statements alone)
//! kept paying for the burst's versions until the next write came, 2.5x the cost of the same
//! range on a clean memtable (docs/perf-log/2026-12-03-session-24-range-rows.md).
//!
//! So the engine's once-a-second background thread also watches the commit counter: when no
//! transaction has committed a write for [`IDLE_TICKS`] ticks in a row and the active memtable
//! holds at least [`IDLE_MIN_ENTRIES`] entries, it asks RocksDB for a flush (without waiting
//! for it). The idea is InnoDB's: its page cleaner flushes harder when the server is idle, and
//! its purge removes old versions in the background. A flushed memtable is empty, so a quiet
//! server flushes once per quiet spell; a server that writes never meets the condition.

use super::Inner;
use crate::stats::Stats;
use std::sync::atomic::Ordering;

/// Consecutive one-second ticks without a write commit before the memtable is flushed.
pub(super) const IDLE_TICKS: u32 = 2;

/// The fewest active-memtable entries worth a flush (fewer cost scans next to nothing, and
/// a flush of them would only add a tiny level-0 file).
pub(super) const IDLE_MIN_ENTRIES: u64 = 256;

/// The idle detector's state, kept by the background thread between its ticks.
#[derive(Debug, Default)]
pub(super) struct IdleFlush {
    /// `write_commits` at the previous tick.
    last_commits: u64,
    /// Ticks in a row that saw no new write commit.
    quiet_ticks: u32,
    /// The last flush request failed (warned once; quiet until one succeeds).
    failing: bool,
}

impl IdleFlush {
    /// One tick: flushes the active memtable if writes have been quiet long enough.
    pub(super) fn tick(&mut self, inner: &Inner) {
        let commits = inner.stats.write_commits.load(Ordering::Relaxed);
        if commits != self.last_commits {
            self.last_commits = commits;
            self.quiet_ticks = 0;
            return;
        }
        self.quiet_ticks = self.quiet_ticks.saturating_add(1);
        if self.quiet_ticks < IDLE_TICKS {
            return;
        }
        let entries = inner
            .db
            .property_int_value("rocksdb.num-entries-active-mem-table")
            .ok()
            .flatten()
            .unwrap_or(0);
        if entries < IDLE_MIN_ENTRIES {
            return;
        }
        let mut opts = rocksdb::FlushOptions::default();
        opts.set_wait(false);
        match inner.db.flush_opt(&opts) {
            Ok(()) => {
                self.failing = false;
                Stats::add(&inner.stats.idle_flushes, 1);
            }
            Err(e) if !self.failing => {
                self.failing = true;
                tracing::warn!(
                    "idle memtable flush failed (not reported again until one succeeds): {e}"
                );
            }
            Err(_) => {}
        }
        // Not again before the next quiet spell's full count.
        self.quiet_ticks = 0;
    }
}
