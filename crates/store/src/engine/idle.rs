//! The idle flush and settle: when writes go quiet, the memtable is flushed and level 0 is
//! compacted into the level below.
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
//!
//! ## The settle
//!
//! The flush leaves its rows in a level-0 file, and level 0 is only compacted once it holds
//! [`LEVEL0_COMPACTION_TRIGGER`] files, that is at the next flush, which a quiet server never
//! makes. Until then every point read looks in that file first: a row-cache lookup that
//! misses (the row cache keeps rows found, per file) and a bloom filter probe, before the row
//! is found in the level below. After a read-write burst the level-0 file covers the whole key
//! range (sysbench updates random rows), so every read pays for it: point select at 64 clients
//! cost 0.5 us (5 %) more a statement than on the same data compacted into one level, in
//! interleaved runs against a server that never took the writes (docs/perf-log, session 39).
//!
//! So once the quiet spell has lasted [`IDLE_TICKS`], the memtable holds fewer than
//! [`IDLE_MIN_ENTRIES`] entries (flushed, or too few to flush; no immutable one left) and level
//! 0 holds a file, the tick lowers RocksDB's level-0 trigger to 1
//! (`SetOptions`, which schedules the compaction RocksDB's own picker chooses: level 0 into the
//! base level, with only the base-level files it overlaps). The trigger goes back to
//! [`LEVEL0_COMPACTION_TRIGGER`] at the first tick that finds level 0 empty or a write
//! committed, and a spell settles once. The cost is one compaction per quiet spell that
//! follows writes, bounded by level 0 and the part of the base level it overlaps; a server
//! that keeps writing never settles, and its level 0 is compacted as before.

use super::config::LEVEL0_COMPACTION_TRIGGER;
use super::Inner;
use crate::stats::Stats;
use std::sync::atomic::Ordering;

/// Consecutive one-second ticks without a write commit before the memtable is flushed.
pub(super) const IDLE_TICKS: u32 = 2;

/// The fewest active-memtable entries worth a flush (fewer cost scans next to nothing, and
/// a flush of them would only add a tiny level-0 file).
pub(super) const IDLE_MIN_ENTRIES: u64 = 256;

/// The idle detector's state, kept by the background thread between its ticks (one per
/// engine; a reopened datadir whose level 0 holds files settles after its first quiet ticks).
#[derive(Debug, Default)]
pub(super) struct IdleFlush {
    /// `write_commits` at the previous tick.
    last_commits: u64,
    /// Ticks in a row that saw no new write commit.
    quiet_ticks: u32,
    /// The last flush request failed (warned once; quiet until one succeeds).
    failing: bool,
    /// The level-0 trigger is lowered to 1 (a settle is under way).
    settling: bool,
    /// This quiet spell has settled (not again before a write commits).
    settled: bool,
    /// The last change of the level-0 trigger failed (warned once).
    trigger_failing: bool,
}

impl IdleFlush {
    /// One tick: flushes the active memtable if writes have been quiet long enough; once it
    /// is flushed, settles level 0 (lowers the trigger), and puts the trigger back when level
    /// 0 is empty or a write commits.
    pub(super) fn tick(&mut self, inner: &Inner) {
        let commits = inner.stats.write_commits.load(Ordering::Relaxed);
        let prop = |p: &str| inner.db.property_int_value(p).ok().flatten().unwrap_or(0);
        if commits != self.last_commits {
            self.last_commits = commits;
            self.quiet_ticks = 0;
            self.settled = false;
            if self.settling {
                self.set_trigger(inner, LEVEL0_COMPACTION_TRIGGER);
            }
            return;
        }
        if self.settling {
            if prop("rocksdb.num-files-at-level0") == 0 {
                self.set_trigger(inner, LEVEL0_COMPACTION_TRIGGER);
            }
            return;
        }
        self.quiet_ticks = self.quiet_ticks.saturating_add(1);
        if self.quiet_ticks < IDLE_TICKS {
            return;
        }
        let entries = prop("rocksdb.num-entries-active-mem-table");
        if entries < IDLE_MIN_ENTRIES {
            if !self.settled
                && prop("rocksdb.num-entries-imm-mem-tables") == 0
                && prop("rocksdb.num-files-at-level0") > 0
            {
                self.settled = true;
                if self.set_trigger(inner, 1) {
                    Stats::add(&inner.stats.idle_settles, 1);
                }
            }
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

    /// Sets RocksDB's level-0 compaction trigger; `settling` follows it. `false` if refused.
    fn set_trigger(&mut self, inner: &Inner, files: i32) -> bool {
        let value = files.to_string();
        match inner
            .db
            .set_options(&[("level0_file_num_compaction_trigger", value.as_str())])
        {
            Ok(()) => {
                self.settling = files != LEVEL0_COMPACTION_TRIGGER;
                inner
                    .level0_trigger
                    .store(files.unsigned_abs(), Ordering::Relaxed);
                self.trigger_failing = false;
                true
            }
            Err(e) => {
                if !self.trigger_failing {
                    self.trigger_failing = true;
                    tracing::warn!(
                        "could not set the level-0 compaction trigger to {files} \
                         (not reported again until it succeeds): {e}"
                    );
                }
                false
            }
        }
    }
}
