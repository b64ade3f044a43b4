//! Balancing between groups: work stealing and age balancing.
//!
//! A connection belongs to group `id % size`, so a group can have work queued that it cannot
//! start (its cap is reached) while another group idles, or one group's queue can age while
//! another's moves. Two mechanisms move work across, both off the common path:
//!
//! * **Work stealing** (`thread_pool_work_stealing`, off by default). A group that queues work
//!   it cannot start wakes an idle worker of another group (`wake_thief`), which then takes the
//!   entry (`try_steal`). The waker holds its own group's lock, so it may only `try_lock`
//!   the others, spinning a bounded number of times (`THIEF_LOCK_SPINS`; never yielding,
//!   because it holds a lock others wait for); a group it could not lock is left to the timer
//!   thread through `thief_pending`. The thief, in turn, holds no group lock while it locks
//!   each victim, so no thread ever waits for a group lock while holding another.
//! * **Age balancing** (`thread_pool_balance_usec`, on). Each group publishes when its next
//!   entry was queued (`publish_next`, a lock-free stamp in µs since the pool's epoch). A worker
//!   about to take its own group's next entry looks at one other group per dequeue, in turn
//!   (`balance_target`), and takes that group's entry instead when it has waited longer by
//!   more than the margin. Only a worker that may dequeue now and whose own group has work
//!   balances, so the caps still bound every group's concurrency and an idle group never pulls.
//!   A worker about to take a low-priority entry compares it with the other group's *low*
//!   queue (a second stamp, `low_since`): the high queue holds open transactions' statements,
//!   which stay with their group, and would otherwise hide the new transactions queued behind
//!   them, the longest waits of a transactional load.
//!
//! The decisions on a group's own state (`wants_thief`, `steal`, `take_older`) are
//! `crate::core::GroupCore`'s; this module picks the other group and does the locking.

use super::*;

impl<H: Handler> Shared<H> {
    /// Wakes one idle worker of another group to steal from `gid`.
    ///
    /// The caller holds `gid`'s lock, so the other groups can only be `try_lock`ed (blocking
    /// here could deadlock against a waker of that group doing the same towards `gid`). A
    /// `try_lock` that fails because the lock is briefly busy (its listener queueing events,
    /// the timer, a worker finishing a command) is retried a bounded number of times: giving up
    /// at once missed the thief and left the work to wait for the busy worker or the stall timer.
    pub(super) fn wake_thief(&self, gid: usize) {
        // Before looking at any idle list: a worker whose futile steal overlaps this look
        // sees the change before it parks and steals again (see `steal_seq`).
        self.steal_seq.fetch_add(1, Ordering::SeqCst);
        let size = self.size.load(Ordering::SeqCst);
        // A group whose lock stayed busy may have had an idle worker: the timer thread, which
        // holds no group lock and may wait for one, retries at once (`retry_thieves`).
        let mut busy = false;
        for k in 1..size {
            let v = (gid + k) % size;
            let mut other = None;
            for _ in 0..THIEF_LOCK_SPINS {
                match self.groups[v].inner.try_lock() {
                    Ok(g) => {
                        other = Some(g);
                        break;
                    }
                    Err(std::sync::TryLockError::Poisoned(p)) => {
                        other = Some(p.into_inner());
                        break;
                    }
                    Err(std::sync::TryLockError::WouldBlock) => crate::loom::spin_loop(),
                }
            }
            let Some(mut other) = other else {
                busy = true;
                continue;
            };
            if let Some(w) = other.core.idle.pop() {
                other.core.active += 1;
                other.core.counters.wakes += 1;
                w.wake.store(WAKE_STEAL, Ordering::SeqCst);
                w.cv.notify_one();
                return;
            }
        }
        if busy && gid < 64 {
            self.thief_pending.fetch_or(1 << gid, Ordering::SeqCst);
            let _g = lock(&self.timer_lock);
            self.timer_cv.notify_all();
        }
    }

    /// Takes an entry another group cannot start now (work stealing).
    ///
    /// The caller must hold NO group lock: each victim is locked in turn with a blocking lock,
    /// one at a time, so no thread ever waits for a group lock while holding another (the
    /// wakers, which do hold one, only `try_lock`). The first version `try_lock`ed the victim
    /// while holding its own group's lock, and the victim's lock is typically still held by the
    /// very waker that just woke the thief: under load the thief lost that race, found nothing,
    /// went back to sleep and the work waited behind the victim's busy worker.
    pub(super) fn try_steal(&self, gid: usize, now: Instant) -> Option<(Entry<H::Conn>, Duration)> {
        let size = self.size.load(Ordering::SeqCst);
        for k in 1..size {
            let v = (gid + k) % size;
            let mut other = self.groups[v].lock();
            if let Some(x) = other.core.steal(self.oversub(v), now) {
                return Some(x);
            }
        }
        None
    }

    /// Age balancing: the group whose next entry this worker of `gid` should take instead of
    /// its own, the stamp that entry must be no younger than, and whether it is that group's
    /// low-priority queue's next entry. One other group is looked at per dequeue, in turn,
    /// through its published stamps (no lock); only a worker that may dequeue now and whose own
    /// group has work balances, so an idle group never pulls (that is work stealing's job) and
    /// the caps still bound every group's concurrency.
    ///
    /// A worker whose next entry is low-priority (its high queue is empty) compares it with the
    /// other group's low queue: that group's high queue, an open transaction's statements that
    /// stay with their group, would hide the new transactions waiting behind it, which are the
    /// longest waits of a transactional load. A worker about to take a high entry compares it
    /// with the other group's next entry, whichever queue it is in.
    pub(super) fn balance_target(
        &self,
        gid: usize,
        core: &GroupCore<Entry<H::Conn>, Arc<WorkerSlot>>,
        slot: &WorkerSlot,
    ) -> Option<(usize, Instant, bool)> {
        let margin = self.balance_us.load(Ordering::Relaxed);
        let size = self.size.load(Ordering::Relaxed);
        if margin == 0 || size < 2 || gid >= size || !core.may_dequeue(self.oversub(gid)) {
            return None;
        }
        let own = core.next_since()?;
        let low = core.queues[0].is_empty();
        // The worker's own turn counter (it outlives `get_event` calls): 1..size-1 added to
        // `gid`, so every other group gets looked at, not only the next one.
        let turn = slot.balance_turn.fetch_add(1, Ordering::Relaxed);
        let v = (gid + 1 + turn % (size - 1)) % size;
        let theirs = if low {
            self.groups[v].low_since.load(Ordering::Relaxed)
        } else {
            self.groups[v].next_since.load(Ordering::Relaxed)
        };
        let own_stamp = self.stamp(own);
        if theirs == 0 || theirs.saturating_add(margin) >= own_stamp {
            return None;
        }
        Some((v, own.checked_sub(Duration::from_micros(margin))?, low))
    }

    /// µs since the pool's epoch, plus one (zero means "nothing queued").
    fn stamp(&self, t: Instant) -> u64 {
        us(t.saturating_duration_since(self.epoch)) + 1
    }

    /// Publishes group `gid`'s next entry and its low queue's for age balancing (a no-op while
    /// balancing is off).
    pub(super) fn publish_next(
        &self,
        gid: usize,
        core: &GroupCore<Entry<H::Conn>, Arc<WorkerSlot>>,
    ) {
        if self.balance_us.load(Ordering::Relaxed) != 0 {
            let v = core.next_since().map_or(0, |t| self.stamp(t));
            self.groups[gid].next_since.store(v, Ordering::Relaxed);
            let v = core.low_since().map_or(0, |t| self.stamp(t));
            self.groups[gid].low_since.store(v, Ordering::Relaxed);
        }
    }
}
