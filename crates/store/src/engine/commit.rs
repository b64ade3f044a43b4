//! Durability: group commit, the background WAL syncer, synced writes outside transactions.
//!
//! # Group commit
//!
//! `flush_log_at_trx_commit = 1`: every commit is durable when `commit()` returns. Committers
//! queue their `WriteBatch`es; the first one to find no active leader becomes the leader, takes
//! the whole queue, writes every batch (each one atomic) and syncs the WAL once with the last
//! write. Followers sleep (reported as `GROUP_COMMIT` waits) until the leader posts their
//! result; the leader's write+fsync is reported as a `SYNC` wait. Commits arriving while a
//! group is being synced form the next group, so under concurrency fsyncs < commits.
//!
//! # Relaxed modes
//!
//! `0` and `2`: batches are written without sync, and a background thread syncs the WAL once
//! per second (a crash of the machine may lose up to about a second of commits; a crash of the
//! process alone loses nothing, since the WAL is written to the OS at every commit).
//!
//! # Outside transactions
//!
//! DDL statements (in every mode) and counter reservations (in mode 1) are written with a synced
//! write of their own (`Inner::write_sync`), reported as a `SYNC` wait.

use super::{lock_mutex, Engine, Inner};
use crate::error::{Result, StoreError};
use crate::stats::Stats;
use rocksdb::{WriteBatch, WriteOptions};
use shoal_wait::WaitKind;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Condvar, Mutex, Weak};
use std::time::Duration;

/// The commit queue, under [`GroupCommit::state`].
#[derive(Default)]
struct GcState {
    /// Batches waiting for the next leader, with their committers' tickets.
    queue: Vec<(u64, WriteBatch)>,
    /// Whether a leader is writing and syncing a group now.
    leader: bool,
    /// The ticket of the next committer to queue.
    next_ticket: u64,
    /// Results posted by leaders, taken by their committers (an error as text: every committer
    /// of a failed group gets its own copy).
    results: HashMap<u64, std::result::Result<(), String>>,
}

/// Group commit: the queue and the condition variable followers sleep on.
#[derive(Default)]
pub(super) struct GroupCommit {
    state: Mutex<GcState>,
    /// Signalled by a leader when it has posted its group's results.
    cv: Condvar,
}

/// The background WAL syncer of flush modes 0 and 2: once a second, until the last `Engine`
/// handle drops the stop channel's sender (or the engine is gone).
pub(super) fn wal_syncer(weak: Weak<Inner>, stop: mpsc::Receiver<()>) {
    loop {
        match stop.recv_timeout(Duration::from_secs(1)) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        let Some(inner) = weak.upgrade() else { return };
        if inner.flush_mode.load(Ordering::Relaxed) != 1 {
            if let Err(e) = inner.db.flush_wal(true) {
                tracing::warn!("background WAL sync failed: {e}");
            } else {
                Stats::add(&inner.stats.fsyncs, 1);
            }
        }
    }
}

impl Engine {
    /// Changes `innodb_flush_log_at_trx_commit` at run time (0, 1 or 2).
    pub fn set_flush_log_at_trx_commit(&self, v: u8) {
        self.inner.flush_mode.store(v.min(2), Ordering::Relaxed);
    }

    /// Current `innodb_flush_log_at_trx_commit`.
    pub fn flush_log_at_trx_commit(&self) -> u8 {
        self.inner.flush_mode.load(Ordering::Relaxed)
    }
}

impl Inner {
    /// A synced write outside transactions (DDL, counters): reported as a `Sync` wait.
    pub(super) fn write_sync(&self, b: WriteBatch) -> Result<()> {
        let _w = shoal_wait::wait(WaitKind::Sync);
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.db.write_opt(b, &wo)?;
        Stats::add(&self.stats.fsyncs, 1);
        Ok(())
    }
    /// Writes a transaction's batch according to `innodb_flush_log_at_trx_commit`.
    pub(crate) fn commit_batch(&self, batch: WriteBatch) -> Result<()> {
        Stats::add(&self.stats.write_commits, 1);
        if self.flush_mode.load(Ordering::Relaxed) != 1 {
            // Flush modes 0 and 2: no fsync, but the WAL write itself can block (a RocksDB
            // write stall, the kernel throttling dirty pages): reported as disk I/O so the
            // pool sees it like the synced path's `GroupCommit`/`Sync` waits.
            let _w = shoal_wait::wait(WaitKind::DiskIo);
            self.db.write_opt(batch, &WriteOptions::default())?;
            return Ok(());
        }
        let gc = &self.gc;
        let mut st = lock_mutex(&gc.state);
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.queue.push((ticket, batch));
        let mut follower_wait = None;
        loop {
            if let Some(r) = st.results.remove(&ticket) {
                drop(st);
                drop(follower_wait);
                return r.map_err(StoreError::commit_failed);
            }
            if !st.leader {
                // Lead: take every queued batch, write them all, sync once.
                drop(follower_wait.take());
                st.leader = true;
                let group = std::mem::take(&mut st.queue);
                drop(st);
                let results = self.write_group(group);
                st = lock_mutex(&gc.state);
                st.leader = false;
                st.results.extend(results);
                gc.cv.notify_all();
                continue;
            }
            if follower_wait.is_none() {
                follower_wait = Some(shoal_wait::wait(WaitKind::GroupCommit));
            }
            st = gc.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn write_group(
        &self,
        group: Vec<(u64, WriteBatch)>,
    ) -> Vec<(u64, std::result::Result<(), String>)> {
        Stats::add(&self.stats.commit_groups, 1);
        let n = group.len();
        let mut results = Vec::with_capacity(n);
        let _w = shoal_wait::wait(WaitKind::Sync);
        let mut pending_sync: Vec<u64> = Vec::new();
        for (i, (ticket, batch)) in group.into_iter().enumerate() {
            let mut wo = WriteOptions::default();
            // The last write of the group syncs the WAL, which makes every earlier write of the
            // group durable too (RocksDB syncs the whole log up to this write).
            wo.set_sync(i + 1 == n);
            match self.db.write_opt(batch, &wo) {
                Ok(()) => pending_sync.push(ticket),
                Err(e) => results.push((ticket, Err(e.to_string()))),
            }
        }
        // If the last (syncing) write failed, sync explicitly for the earlier ones.
        let synced =
            if results.iter().any(|(t, _)| !pending_sync.contains(t)) && !pending_sync.is_empty() {
                self.db.flush_wal(true).map_err(|e| e.to_string())
            } else {
                Ok(())
            };
        Stats::add(&self.stats.fsyncs, 1);
        for t in pending_sync {
            results.push((t, synced.clone()));
        }
        results
    }
}
