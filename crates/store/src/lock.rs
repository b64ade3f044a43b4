//! Row-lock manager: shared/exclusive locks on keys, FIFO wait queues, deadlock detection.
//!
//! # Model
//!
//! A lock is named by a byte string: the RocksDB key of a row (`0x02 table pk`) or of a UNIQUE
//! index slot (`0x03 index value`), so "lock the unique key value" and "lock the row" use the
//! same machinery. Each named lock has a list of holders and a FIFO queue of waiters. A request
//! is granted at once only if it is compatible with every holder *and nobody is queued* (strict
//! FIFO: a stream of shared requests cannot starve an exclusive one). A shared-to-exclusive
//! upgrade by a holder is granted when it is the only holder; otherwise it waits at the *front*
//! of the queue (it already holds the lock, so it must go first).
//!
//! # Deadlocks
//!
//! Before a request waits, the manager walks the waits-for graph from the requester: it waits
//! for every incompatible holder and every incompatible request queued ahead of it, and each of
//! those (if itself waiting) waits for its own blockers. If the walk reaches the requester, the
//! wait would close a cycle: the requester is the victim and gets [`LockError::Deadlock`]
//! without waiting (InnoDB picks a victim by weight; choosing the requester is simpler, always
//! breaks the cycle, and needs no cross-thread abort). The caller rolls its transaction back.
//! With detection off ([`LockManager::set_deadlock_detect`], `innodb_deadlock_detect=OFF`) the
//! walk is skipped: every member of a cycle waits until its lock wait timeout
//! ([`LockError::Timeout`], 1205), as in InnoDB.
//!
//! # Waiting
//!
//! One mutex protects the whole table (the graph walk needs a consistent view; critical
//! sections are short). Each waiter sleeps on its own condvar; a release grants queued requests
//! front-to-back while they are compatible and wakes exactly those. A waiter gives up after the
//! lock wait timeout ([`LockError::Timeout`]) or when interrupted (KILL). Every wait is reported
//! to the scheduler as `ROW_LOCK` through `shoal-wait` and counted in the status counters.

use crate::stats::Stats;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Transaction id.
pub type TxnId = u64;

/// Lock strength held by the manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Strength {
    /// Shared (LOCK IN SHARE MODE, unique checks by readers).
    Shared,
    /// Exclusive (writes, FOR UPDATE).
    Exclusive,
}

fn compatible(a: Strength, b: Strength) -> bool {
    a == Strength::Shared && b == Strength::Shared
}

/// Why a lock request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockError {
    /// Waiting would close a cycle; the requester is the victim.
    Deadlock,
    /// Not granted within the timeout.
    Timeout,
    /// The waiter was interrupted (KILL / client gone).
    Interrupted,
}

#[derive(Debug)]
struct Request {
    txn: TxnId,
    mode: Strength,
}

#[derive(Debug, Default)]
struct Entry {
    holders: Vec<(TxnId, Strength)>,
    queue: VecDeque<Request>,
}

struct Waiter {
    key: Vec<u8>,
    mode: Strength,
    cv: Arc<Condvar>,
    granted: bool,
}

#[derive(Default)]
struct State {
    locks: HashMap<Vec<u8>, Entry>,
    waiting: HashMap<TxnId, Waiter>,
    /// Transactions asked to stop waiting (KILL), checked by their waits.
    interrupted: HashSet<TxnId>,
}

/// The lock table. One per engine.
pub struct LockManager {
    state: Mutex<State>,
    /// `innodb_deadlock_detect`: when off, a request that would close a cycle waits like any
    /// other and fails with [`LockError::Timeout`] after the lock wait timeout (as InnoDB does
    /// with detection disabled).
    detect: AtomicBool,
}

impl Default for LockManager {
    fn default() -> Self {
        LockManager {
            state: Mutex::default(),
            detect: AtomicBool::new(true),
        }
    }
}

impl LockManager {
    fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Turns deadlock detection on or off (`innodb_deadlock_detect`); applies to waits that
    /// start afterwards.
    pub fn set_deadlock_detect(&self, on: bool) {
        self.detect.store(on, Ordering::Relaxed);
    }

    /// Whether deadlock detection is on.
    pub fn deadlock_detect(&self) -> bool {
        self.detect.load(Ordering::Relaxed)
    }

    /// Acquires `key` in `mode` for `txn`, waiting up to `timeout`. Re-acquiring a lock already
    /// held at the same or a stronger level returns at once. Returns whether the call waited.
    pub fn acquire(
        &self,
        txn: TxnId,
        key: &[u8],
        mode: Strength,
        timeout: Duration,
        stats: &Stats,
    ) -> Result<bool, LockError> {
        let mut st = self.lock_state();
        if st.interrupted.remove(&txn) {
            return Err(LockError::Interrupted);
        }
        let upgrade = match take_if_free(&mut st, txn, key, mode) {
            Free::Taken => return Ok(false),
            Free::Busy { upgrade } => upgrade,
        };
        // Must wait: first make sure waiting cannot deadlock.
        let pos = if upgrade {
            0
        } else {
            st.locks.get(key).map_or(0, |e| e.queue.len())
        };
        if self.detect.load(Ordering::Relaxed) && st.would_deadlock(txn, key, mode, pos) {
            stats.deadlocks.fetch_add(1, Ordering::Relaxed);
            if let Some(e) = st.locks.get(key) {
                if e.holders.is_empty() && e.queue.is_empty() {
                    st.locks.remove(key);
                }
            }
            return Err(LockError::Deadlock);
        }
        let entry = st.locks.get_mut(key).expect("entry exists");
        if upgrade {
            entry.queue.push_front(Request { txn, mode });
        } else {
            entry.queue.push_back(Request { txn, mode });
        }
        let cv = Arc::new(Condvar::new());
        st.waiting.insert(
            txn,
            Waiter {
                key: key.to_vec(),
                mode,
                cv: cv.clone(),
                granted: false,
            },
        );

        stats.row_lock_waits.fetch_add(1, Ordering::Relaxed);
        stats.row_lock_current_waits.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let deadline = started + timeout;
        let guard = shoal_wait::wait(shoal_wait::WaitKind::RowLock);
        let result = loop {
            if st.waiting.get(&txn).is_some_and(|w| w.granted) {
                st.waiting.remove(&txn);
                break Ok(true);
            }
            let failure = if st.interrupted.remove(&txn) {
                Some(LockError::Interrupted)
            } else if Instant::now() >= deadline {
                Some(LockError::Timeout)
            } else {
                None
            };
            if let Some(err) = failure {
                st.waiting.remove(&txn);
                if let Some(e) = st.locks.get_mut(key) {
                    e.queue.retain(|r| r.txn != txn);
                }
                // Requests queued behind this one may now be grantable.
                st.grant(key);
                break Err(err);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            st = cv
                .wait_timeout(st, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        drop(st);
        drop(guard);
        let ms = started.elapsed().as_millis() as u64;
        stats.row_lock_current_waits.fetch_sub(1, Ordering::Relaxed);
        stats.row_lock_time_ms.fetch_add(ms, Ordering::Relaxed);
        stats.row_lock_time_max_ms.fetch_max(ms, Ordering::Relaxed);
        result
    }

    /// Acquires `key` in `mode` for `txn` only if that needs no wait (`NOWAIT`, `SKIP
    /// LOCKED`): `Ok(true)` when held, `Ok(false)` when another transaction's lock (or an
    /// earlier waiter) is in the way. Never waits, so never deadlocks.
    pub fn try_acquire(&self, txn: TxnId, key: &[u8], mode: Strength) -> Result<bool, LockError> {
        let mut st = self.lock_state();
        if st.interrupted.remove(&txn) {
            return Err(LockError::Interrupted);
        }
        match take_if_free(&mut st, txn, key, mode) {
            Free::Taken => Ok(true),
            Free::Busy { .. } => {
                if let Some(e) = st.locks.get(key) {
                    if e.holders.is_empty() && e.queue.is_empty() {
                        st.locks.remove(key);
                    }
                }
                Ok(false)
            }
        }
    }

    /// Releases every lock in `keys` held by `txn` and grants what can now be granted. Also
    /// clears an interrupt flag for `txn`.
    pub fn release_all<'a>(&self, txn: TxnId, keys: impl IntoIterator<Item = &'a Vec<u8>>) {
        let mut st = self.lock_state();
        for key in keys {
            if let Some(e) = st.locks.get_mut(key) {
                e.holders.retain(|(t, _)| *t != txn);
                st.grant(key);
            }
        }
        st.interrupted.remove(&txn);
    }

    /// Makes `txn`'s current or next lock wait fail with [`LockError::Interrupted`] (KILL).
    pub fn interrupt(&self, txn: TxnId) {
        let mut st = self.lock_state();
        st.interrupted.insert(txn);
        if let Some(w) = st.waiting.get(&txn) {
            w.cv.notify_one();
        }
    }

    /// Clears an interrupt flag (the transaction ended).
    pub fn clear_interrupt(&self, txn: TxnId) {
        self.lock_state().interrupted.remove(&txn);
    }

    /// Number of keys with holders or waiters (for tests and status).
    pub fn locked_keys(&self) -> usize {
        self.lock_state().locks.len()
    }
}

impl State {
    /// Grants queued requests on `key` front-to-back while compatible; drops empty entries.
    fn grant(&mut self, key: &[u8]) {
        let Some(e) = self.locks.get_mut(key) else {
            return;
        };
        while let Some(front) = e.queue.front() {
            let t = front.txn;
            let mode = front.mode;
            let own = e.holders.iter().position(|(h, _)| *h == t);
            let ok = match own {
                // Upgrade: only when it is the sole holder.
                Some(_) => e.holders.len() == 1,
                None => e.holders.iter().all(|(_, m)| compatible(*m, mode)),
            };
            if !ok {
                break;
            }
            e.queue.pop_front();
            match own {
                Some(i) => e.holders[i].1 = mode,
                None => e.holders.push((t, mode)),
            }
            if let Some(w) = self.waiting.get_mut(&t) {
                w.granted = true;
                w.cv.notify_one();
            }
        }
        if e.holders.is_empty() && e.queue.is_empty() {
            self.locks.remove(key);
        }
    }

    /// Transactions that a request by `txn` for `key`/`mode`, queued at `pos`, waits for.
    fn blockers(&self, txn: TxnId, key: &[u8], mode: Strength, pos: usize, out: &mut Vec<TxnId>) {
        let Some(e) = self.locks.get(key) else { return };
        for (h, m) in &e.holders {
            if *h != txn && !compatible(*m, mode) {
                out.push(*h);
            }
        }
        for r in e.queue.iter().take(pos) {
            if r.txn != txn && !compatible(r.mode, mode) {
                out.push(r.txn);
            }
        }
    }

    fn would_deadlock(&self, txn: TxnId, key: &[u8], mode: Strength, pos: usize) -> bool {
        let mut stack = Vec::new();
        self.blockers(txn, key, mode, pos, &mut stack);
        let mut seen = HashSet::new();
        while let Some(u) = stack.pop() {
            if u == txn {
                return true;
            }
            if !seen.insert(u) {
                continue;
            }
            if let Some(w) = self.waiting.get(&u) {
                if w.granted {
                    continue;
                }
                let upos = self
                    .locks
                    .get(&w.key)
                    .and_then(|e| e.queue.iter().position(|r| r.txn == u))
                    .unwrap_or(0);
                self.blockers(u, &w.key, w.mode, upos, &mut stack);
            }
        }
        false
    }
}

/// What [`take_if_free`] found.
enum Free {
    /// Held by the caller now (or already, at that strength).
    Taken,
    /// Another transaction's lock or an earlier waiter is in the way; `upgrade`: the caller
    /// holds a weaker lock on it.
    Busy { upgrade: bool },
}

/// Grants `key` in `mode` to `txn` if no wait is needed (the part of an acquisition that
/// never blocks).
fn take_if_free(st: &mut State, txn: TxnId, key: &[u8], mode: Strength) -> Free {
    let entry = st.locks.entry(key.to_vec()).or_default();
    let held = entry.holders.iter().position(|(t, _)| *t == txn);
    match held {
        Some(i) if entry.holders[i].1 >= mode => Free::Taken,
        Some(i) => {
            if entry.holders.len() == 1 {
                entry.holders[i].1 = mode;
                return Free::Taken;
            }
            Free::Busy { upgrade: true }
        }
        None => {
            if entry.queue.is_empty() && entry.holders.iter().all(|(_, m)| compatible(*m, mode)) {
                entry.holders.push((txn, mode));
                return Free::Taken;
            }
            Free::Busy { upgrade: false }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread;

    const T: Duration = Duration::from_secs(10);

    fn wait_for_waiters(lm: &LockManager, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while lm.lock_state().waiting.len() < n {
            assert!(Instant::now() < deadline, "waiters never queued");
            thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn shared_locks_are_compatible_exclusive_are_not() {
        let lm = LockManager::default();
        let st = Stats::default();
        assert_eq!(lm.acquire(1, b"k", Strength::Shared, T, &st), Ok(false));
        assert_eq!(lm.acquire(2, b"k", Strength::Shared, T, &st), Ok(false));
        assert_eq!(
            lm.acquire(3, b"k", Strength::Exclusive, Duration::from_millis(20), &st),
            Err(LockError::Timeout)
        );
        // The timed-out request left the queue: a new shared request is granted at once.
        assert_eq!(lm.acquire(4, b"k", Strength::Shared, T, &st), Ok(false));
        // Re-acquiring a held lock (same or weaker) is immediate.
        assert_eq!(lm.acquire(1, b"k", Strength::Shared, T, &st), Ok(false));
        for t in 1..=4 {
            lm.release_all(t, [&b"k".to_vec()]);
        }
        assert_eq!(lm.locked_keys(), 0);
    }

    #[test]
    fn three_way_cycle_is_detected_by_the_closing_requester() {
        let lm = Arc::new(LockManager::default());
        let st = Arc::new(Stats::default());
        for (t, k) in [(1u64, "a"), (2, "b"), (3, "c")] {
            lm.acquire(t, k.as_bytes(), Strength::Exclusive, T, &st)
                .unwrap();
        }
        // 1 waits for b (held by 2), 2 waits for c (held by 3).
        let h1 = {
            let (lm, st) = (lm.clone(), st.clone());
            thread::spawn(move || lm.acquire(1, b"b", Strength::Exclusive, T, &st))
        };
        wait_for_waiters(&lm, 1);
        let h2 = {
            let (lm, st) = (lm.clone(), st.clone());
            thread::spawn(move || lm.acquire(2, b"c", Strength::Exclusive, T, &st))
        };
        wait_for_waiters(&lm, 2);
        // 3 asking for a closes the cycle 3 -> 1 -> 2 -> 3.
        assert_eq!(
            lm.acquire(3, b"a", Strength::Exclusive, T, &st),
            Err(LockError::Deadlock)
        );
        assert_eq!(st.deadlocks.load(Ordering::Relaxed), 1);
        // The victim releases; 2 gets c, then releases everything; 1 gets b.
        lm.release_all(3, [&b"c".to_vec()]);
        assert_eq!(h2.join().unwrap(), Ok(true));
        lm.release_all(2, [&b"b".to_vec(), &b"c".to_vec()]);
        assert_eq!(h1.join().unwrap(), Ok(true));
        lm.release_all(1, [&b"a".to_vec(), &b"b".to_vec()]);
        assert_eq!(lm.locked_keys(), 0);
    }

    #[test]
    fn two_shared_holders_upgrading_deadlock() {
        let lm = Arc::new(LockManager::default());
        let st = Arc::new(Stats::default());
        lm.acquire(1, b"k", Strength::Shared, T, &st).unwrap();
        lm.acquire(2, b"k", Strength::Shared, T, &st).unwrap();
        let h = {
            let (lm, st) = (lm.clone(), st.clone());
            thread::spawn(move || lm.acquire(1, b"k", Strength::Exclusive, T, &st))
        };
        wait_for_waiters(&lm, 1);
        assert_eq!(
            lm.acquire(2, b"k", Strength::Exclusive, T, &st),
            Err(LockError::Deadlock)
        );
        lm.release_all(2, [&b"k".to_vec()]);
        assert_eq!(
            h.join().unwrap(),
            Ok(true),
            "the upgrade is granted once 2 is gone"
        );
        // A sole holder upgrades without waiting.
        lm.release_all(1, [&b"k".to_vec()]);
        lm.acquire(5, b"k", Strength::Shared, T, &st).unwrap();
        assert_eq!(lm.acquire(5, b"k", Strength::Exclusive, T, &st), Ok(false));
    }

    #[test]
    fn interrupt_ends_a_wait_once() {
        let lm = Arc::new(LockManager::default());
        let st = Arc::new(Stats::default());
        lm.acquire(1, b"k", Strength::Exclusive, T, &st).unwrap();
        let h = {
            let (lm, st) = (lm.clone(), st.clone());
            thread::spawn(move || lm.acquire(2, b"k", Strength::Exclusive, T, &st))
        };
        wait_for_waiters(&lm, 1);
        lm.interrupt(2);
        assert_eq!(h.join().unwrap(), Err(LockError::Interrupted));
        lm.release_all(1, [&b"k".to_vec()]);
        // Consumed: the next request of 2 is granted normally.
        assert_eq!(lm.acquire(2, b"k", Strength::Exclusive, T, &st), Ok(false));
    }
}
