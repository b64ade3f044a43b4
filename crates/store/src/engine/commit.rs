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
//! # Each committer is woken for its own news
//!
//! Every committer waits on a condition variable of its own, registered in the state under the
//! commit mutex ([`GcState::sleepers`]), and the leader wakes exactly the committers whose news
//! it posted: the members of its group when the sync is done, then the first committer queued
//! for the next group, which leads it. One shared condition variable woke every committer at
//! every post (twice a group: written, synced), including the next group's, which found
//! nothing for them and went back to sleep. No wake-up is lost: a committer checks its news and
//! registers under the mutex, and the leader posts under it. With the locks released by the
//! leader (below), a follower is woken once a commit: at 512 cached read-write clients the
//! server's context switches fell from a median 13.0 to 12.4 a transaction over 3 paired
//! rounds (throughput within the machine's noise; docs/perf-log, session 47).
//!
//! # Locks are released before the fsync
//!
//! A leader writes its group's batches first (each is in the WAL and visible to readers once
//! written), releases the row locks of every committer of the group ([`HeldLocks`], handed over
//! with the batch), then syncs; a committer returns when the sync is done. The leader releases
//! them, not each committer once woken for it: that was one more wake-up a commit, and a hot
//! row stayed locked until its committer got a CPU. So the next transaction waiting
//! for a hot row runs while this group's fsync is in flight, instead of after it: InnoDB
//! releases a committing transaction's locks before it flushes the redo log in the same way.
//! It is safe for the same reason: a transaction that takes over a released row commits into
//! the WAL after the one it waited for, and the sync that makes it durable makes the earlier
//! one durable too (the log is synced up to a point, never around a hole). Under sysbench
//! read-write at 64 clients, row-lock wait time was ten times MariaDB's before this
//! (docs/perf-log/2026-12-03-session-24-range-rows.md).
//!
//! # Relaxed modes
//!
//! `0` and `2`: batches are written without sync, and a background thread syncs the WAL once
//! per second (a crash of the machine may lose up to about a second of commits; a crash of the
//! process alone loses nothing, since the WAL is written to the OS at every commit). The same
//! thread flushes the memtable when writes go quiet, in every mode (the `idle` module).
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
    /// Batches waiting for the next leader, with their committers' tickets and row locks.
    queue: Vec<(u64, WriteBatch, HeldLocks)>,
    /// Whether a leader is writing and syncing a group now.
    leader: bool,
    /// The ticket of the next committer to queue.
    next_ticket: u64,
    /// Results posted by leaders, taken by their committers (an error as text: every committer
    /// of a failed group gets its own copy).
    results: HashMap<u64, std::result::Result<(), String>>,
    /// The condition variable of each committer waiting now, by ticket (see "Each committer is
    /// woken for its own news" in the module doc).
    sleepers: HashMap<u64, std::sync::Arc<Condvar>>,
}

impl GcState {
    /// Wakes the committer of `ticket` if it is waiting (it re-checks its news under the lock).
    fn wake(&self, ticket: u64) {
        if let Some(cv) = self.sleepers.get(&ticket) {
            cv.notify_one();
        }
    }
}

/// A committing transaction's row locks, handed to whoever writes its batch, who releases them
/// once the batch is written (or its write failed: the transaction is over either way).
pub(crate) struct HeldLocks {
    /// The transaction holding them.
    pub txn: crate::lock::TxnId,
    /// The locked keys.
    pub keys: std::collections::HashSet<Vec<u8>>,
}

/// Group commit: the queue and the committers waiting for their news.
#[derive(Default)]
pub(super) struct GroupCommit {
    state: Mutex<GcState>,
    /// Runs after a group's batches are written, before the sync (tests: to hold a group
    /// there, see [`Engine::set_before_sync_hook`]).
    before_sync: std::sync::RwLock<Option<SyncHook>>,
}

/// See [`Engine::set_before_sync_hook`].
pub type SyncHook = std::sync::Arc<dyn Fn() + Send + Sync>;

/// The engine's background thread, once a second until the last `Engine` handle drops the stop
/// channel's sender (or the engine is gone): syncs the WAL in flush modes 0 and 2, flushes
/// the memtable when writes have gone quiet (`idle`), and keeps the block cache's
/// prepopulation fitted to the data size (`warm`).
pub(super) fn wal_syncer(weak: Weak<Inner>, stop: mpsc::Receiver<()>) {
    let mut idle = super::idle::IdleFlush::default();
    let mut warmth = super::warm::Warmth::default();
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
        // Writes outside transactions (index builds) do not drop a stale kept snapshot.
        inner
            .shared_snapshot
            .forget_stale(inner.db.latest_sequence_number());
        idle.tick(&inner);
        warmth.tick(&inner);
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

    /// For tests: `hook` runs in every group commit (flush mode 1) after the group's batches
    /// are written and their committers may release their locks, before the WAL sync; a hook
    /// that blocks holds the group there. `None` removes it.
    #[doc(hidden)]
    pub fn set_before_sync_hook(&self, hook: Option<SyncHook>) {
        *self
            .inner
            .gc
            .before_sync
            .write()
            .unwrap_or_else(|e| e.into_inner()) = hook;
    }
}

impl Inner {
    /// A synced write outside transactions (DDL, counters): reported as a `Sync` wait.
    pub(super) fn write_sync(&self, b: WriteBatch) -> Result<()> {
        let _w = shoal_wait::wait(WaitKind::Sync);
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.db.write_opt(b, &wo)?;
        self.shared_snapshot
            .forget_stale(self.db.latest_sequence_number());
        Stats::add(&self.stats.fsyncs, 1);
        Ok(())
    }
    /// Writes a transaction's batch according to `innodb_flush_log_at_trx_commit`, and releases
    /// its row locks once the batch is written (visible to readers), before the fsync that makes
    /// it durable is waited for (see "Locks are released before the fsync"), or once its write
    /// failed.
    pub(crate) fn commit_batch(&self, batch: WriteBatch, locks: HeldLocks) -> Result<()> {
        Stats::add(&self.stats.write_commits, 1);
        if self.flush_mode.load(Ordering::Relaxed) != 1 {
            // Flush modes 0 and 2: no fsync, but the WAL write itself can block (a RocksDB
            // write stall, the kernel throttling dirty pages): reported as disk I/O so the
            // pool sees it like the synced path's `GroupCommit`/`Sync` waits.
            let _w = shoal_wait::wait(WaitKind::DiskIo);
            let r = self.db.write_opt(batch, &WriteOptions::default());
            if r.is_ok() {
                self.shared_snapshot
                    .forget_stale(self.db.latest_sequence_number());
            }
            self.locks.release_all(locks.txn, locks.keys.iter());
            r?;
            return Ok(());
        }
        let gc = &self.gc;
        let mut st = lock_mutex(&gc.state);
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.queue.push((ticket, batch, locks));
        let mut follower_wait = None;
        // This committer's own condition variable, made when it first has to wait.
        let mut cv: Option<std::sync::Arc<Condvar>> = None;
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
                for (t, r) in results {
                    st.wake(t);
                    st.results.insert(t, r);
                }
                // The next group's first committer leads it.
                if let Some(&(next, _, _)) = st.queue.first() {
                    st.wake(next);
                }
                continue;
            }
            if follower_wait.is_none() {
                follower_wait = Some(shoal_wait::wait(WaitKind::GroupCommit));
            }
            let me = cv.get_or_insert_with(Default::default).clone();
            st.sleepers.insert(ticket, me.clone());
            st = me.wait(st).unwrap_or_else(|e| e.into_inner());
            st.sleepers.remove(&ticket);
        }
    }

    /// Writes `group`, releases its committers' row locks, then syncs the WAL once: the
    /// results.
    fn write_group(
        &self,
        group: Vec<(u64, WriteBatch, HeldLocks)>,
    ) -> Vec<(u64, std::result::Result<(), String>)> {
        Stats::add(&self.stats.commit_groups, 1);
        let n = group.len();
        let mut results = Vec::with_capacity(n);
        let _w = shoal_wait::wait(WaitKind::Sync);
        let mut pending_sync: Vec<u64> = Vec::with_capacity(n);
        let mut locks = Vec::with_capacity(n);
        for (ticket, batch, held) in group {
            match self.db.write_opt(batch, &WriteOptions::default()) {
                Ok(()) => pending_sync.push(ticket),
                Err(e) => results.push((ticket, Err(e.to_string()))),
            }
            locks.push(held);
        }
        if !pending_sync.is_empty() {
            self.shared_snapshot
                .forget_stale(self.db.latest_sequence_number());
        }
        // Written and visible (or failed): the row locks go while this group syncs.
        for held in locks {
            self.locks.release_all(held.txn, held.keys.iter());
        }
        let hook = self
            .gc
            .before_sync
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(h) = hook {
            h();
        }
        // One sync makes every write of the group durable (RocksDB syncs the whole log).
        let synced = if pending_sync.is_empty() {
            Ok(())
        } else {
            self.db.flush_wal(true).map_err(|e| e.to_string())
        };
        Stats::add(&self.stats.fsyncs, 1);
        for t in pending_sync {
            results.push((t, synced.clone()));
        }
        results
    }
}
