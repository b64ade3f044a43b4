//! Table locks: `LOCK TABLES`, `FLUSH TABLES WITH READ LOCK`, and the per-transaction intents
//! every table statement takes so that those two can wait for the transactions in flight.
//!
//! MySQL does this with metadata locks (MDL). We keep the part a client can observe:
//!
//! * **Intents.** Every table statement of a session that is not under `LOCK TABLES` takes an
//!   intent on each stored table it touches: *read* for the tables it only reads, *write* for the
//!   tables it changes (rows or definition). Intents are held until the transaction ends (at the
//!   end of the statement under autocommit), like MySQL's `MDL_SHARED_READ` /
//!   `MDL_SHARED_WRITE`. So `LOCK TABLES t READ` waits for a transaction that wrote `t` and has
//!   not committed yet, and a dump taken under it never sees half of a transaction that spans
//!   two locked tables.
//! * **Explicit locks** (`LOCK TABLES`), all taken at once or none: `READ` is shared with other
//!   readers and read intents; `WRITE` is exclusive. While a session holds them it may touch
//!   only the tables it locked (1100 otherwise) and may not change a READ-locked one (1099).
//! * **The global read lock** (`FLUSH TABLES WITH READ LOCK`): taken once no other session
//!   holds a write intent or a WRITE lock; while it is held every other session's write intent
//!   waits. Its holder's own writes fail with 1223, as in MySQL.
//!
//! Conflicts (rows: what is requested; "other" = held by another session):
//!
//! | request        | blocked by (held by another session)                         |
//! |----------------|--------------------------------------------------------------|
//! | read intent    | WRITE lock                                                   |
//! | write intent   | READ or WRITE lock, global read lock                         |
//! | READ lock      | WRITE lock, write intent                                     |
//! | WRITE lock     | any lock or intent                                           |
//! | global read    | WRITE lock, write intent                                     |
//!
//! **No starvation of a waiting lock.** Under a steady stream of short writers a `LOCK TABLES
//! ... READ` or a global read lock would rarely find a moment without a write intent, so a
//! request for an explicit or global lock is recorded while it waits, and *new* intents that
//! conflict with it wait behind it (MDL's priority for pending strong locks). A session that
//! already holds intents (an open transaction) is not held back by pending requests, only by
//! granted locks, so it can finish and cannot close a cycle with the request that waits for it.
//!
//! **Waiting** is a condition variable with the session's `lock_wait_timeout` (1205 when it
//! expires), checked every 100 ms against the session's KILL flag (1317), and reported to the
//! thread pool as a `TABLE_LOCK` (or `GLOBAL_LOCK`) wait so a blocked worker frees its slot.
//! Everything a session holds is keyed by its lock id and released by `UNLOCK TABLES`, by the end
//! of its transaction (intents), and when the session is dropped (disconnect).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use shoal_sql::SqlError;
use shoal_wait::WaitKind;

/// How many table entries the manager keeps when they fall empty (see [`State::release`]).
const KEEP_EMPTY_ENTRIES: usize = 256;

/// A table as the lock manager knows it: (database, table).
pub type TableKey = (String, String);

/// What a session asks for on one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockRequest {
    /// A statement reads the table.
    ReadIntent,
    /// A statement changes the table.
    WriteIntent,
    /// `LOCK TABLES t READ`.
    Read,
    /// `LOCK TABLES t WRITE`.
    Write,
}

/// Who holds what on one table.
#[derive(Default, Debug)]
struct Entry {
    /// The table, for taking the entry out of [`State::index`] when it is dropped.
    key: TableKey,
    /// Whether [`State::index`] points here (false: the slot is on the free list).
    live: bool,
    read_intents: HashSet<u64>,
    write_intents: HashSet<u64>,
    read_locks: HashSet<u64>,
    write_lock: Option<u64>,
}

impl Entry {
    fn is_empty(&self) -> bool {
        self.read_intents.is_empty()
            && self.write_intents.is_empty()
            && self.read_locks.is_empty()
            && self.write_lock.is_none()
    }
}

/// A request for explicit or global locks that is waiting (see the module docs).
#[derive(Debug)]
struct Pending {
    session: u64,
    /// Empty for the global read lock.
    tables: Vec<(TableKey, LockRequest)>,
}

#[derive(Default, Debug)]
struct State {
    /// Each known table's slot in `slots`. A statement looks its tables up here once to take
    /// its intents; the end of its transaction finds them by slot, with no key hashed or
    /// cloned (the lock manager is on every statement's path).
    index: HashMap<TableKey, usize>,
    /// The tables' entries; an emptied one is reused while the manager knows at most
    /// [`KEEP_EMPTY_ENTRIES`] tables, past that dropped from `index` and its slot freed.
    slots: Vec<Entry>,
    /// Freed slots, reused before `slots` grows.
    free: Vec<usize>,
    /// Holders of the global read lock.
    global_read: HashSet<u64>,
    /// Waiting LOCK TABLES / FTWRL requests, oldest first.
    pending: Vec<(u64, Pending)>,
    next_pending: u64,
    /// The slots of the tables on which each session holds an intent: a transaction's end
    /// visits only these, not every table. A session's list is emptied at the end of each
    /// transaction and kept (no allocation per statement) until the session ends.
    held: HashMap<u64, Vec<usize>>,
    /// Threads waiting on [`TableLocks::changed`]: a release wakes them only if there are
    /// any (read and changed under the mutex, so no wake-up is lost), which spares the common
    /// statement its futex system call.
    waiters: usize,
}

fn others<'a>(set: &'a HashSet<u64>, me: u64) -> impl Iterator<Item = &'a u64> + 'a {
    set.iter().filter(move |s| **s != me)
}

impl State {
    /// The table's entry, if the manager knows the table.
    fn entry(&self, key: &TableKey) -> Option<&Entry> {
        self.index.get(key).map(|&i| &self.slots[i])
    }

    /// The table's slot, made (or a freed one reused) if the manager does not know it yet.
    fn slot(&mut self, key: &TableKey) -> usize {
        if let Some(&i) = self.index.get(key) {
            return i;
        }
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Entry::default());
                self.slots.len() - 1
            }
        };
        let e = &mut self.slots[i];
        e.key = key.clone();
        e.live = true;
        self.index.insert(key.clone(), i);
        i
    }

    /// Frees slot `i` if its entry is live and empty and the manager knows more tables than
    /// it keeps emptied entries for (`always`: whatever the count).
    fn maybe_free(&mut self, i: usize, always: bool) {
        let e = &mut self.slots[i];
        if e.live && e.is_empty() && (always || self.index.len() > KEEP_EMPTY_ENTRIES) {
            e.live = false;
            let key = std::mem::take(&mut e.key);
            self.index.remove(&key);
            self.free.push(i);
        }
    }

    /// Whether `me` holds an intent on some table.
    fn holds_intents(&self, me: u64) -> bool {
        self.held.get(&me).is_some_and(|v| !v.is_empty())
    }

    /// Whether `me` can be granted `req` on `key` given what is granted now.
    fn grantable(&self, me: u64, key: &TableKey, req: LockRequest) -> bool {
        let Some(e) = self.entry(key) else {
            return !(req == LockRequest::WriteIntent || req == LockRequest::Write)
                || others(&self.global_read, me).next().is_none();
        };
        let write_locked = e.write_lock.is_some_and(|s| s != me);
        match req {
            LockRequest::ReadIntent => !write_locked,
            LockRequest::WriteIntent => {
                !write_locked
                    && others(&e.read_locks, me).next().is_none()
                    && others(&self.global_read, me).next().is_none()
            }
            LockRequest::Read => !write_locked && others(&e.write_intents, me).next().is_none(),
            LockRequest::Write => {
                !write_locked
                    && others(&e.read_locks, me).next().is_none()
                    && others(&e.read_intents, me).next().is_none()
                    && others(&e.write_intents, me).next().is_none()
                    && others(&self.global_read, me).next().is_none()
            }
        }
    }

    /// Whether an intent of `me` must queue behind a pending explicit or global request that
    /// came first (`before`: only requests older than this pending id; `None`: all).
    fn behind_pending(&self, me: u64, key: &TableKey, req: LockRequest) -> bool {
        if self.holds_intents(me) {
            return false;
        }
        self.pending.iter().any(|(_, p)| {
            p.session != me
                && if p.tables.is_empty() {
                    req == LockRequest::WriteIntent
                } else {
                    p.tables.iter().any(|(k, r)| {
                        k == key && (*r == LockRequest::Write || req == LockRequest::WriteIntent)
                    })
                }
        })
    }

    fn global_grantable(&self, me: u64) -> bool {
        self.slots.iter().all(|e| {
            e.write_lock.is_none_or(|s| s == me) && others(&e.write_intents, me).next().is_none()
        })
    }

    fn grant(&mut self, me: u64, key: &TableKey, req: LockRequest) {
        let i = self.slot(key);
        let e = &mut self.slots[i];
        // Whether this is the first intent of `me` on the table (then `held` learns it).
        let first_intent = match req {
            LockRequest::ReadIntent => e.read_intents.insert(me) && !e.write_intents.contains(&me),
            LockRequest::WriteIntent => e.write_intents.insert(me) && !e.read_intents.contains(&me),
            LockRequest::Read => {
                e.read_locks.insert(me);
                false
            }
            LockRequest::Write => {
                e.write_lock = Some(me);
                false
            }
        };
        if first_intent {
            self.held.entry(me).or_default().push(i);
        }
    }

    /// Releases the intents of `me` (and, with `locks`, its explicit locks); `session_ends`
    /// forgets the session's list of held tables too.
    fn release(&mut self, me: u64, intents: bool, locks: bool, session_ends: bool) {
        if intents {
            let mut held = if session_ends {
                self.held.remove(&me).unwrap_or_default()
            } else {
                self.held
                    .get_mut(&me)
                    .map(std::mem::take)
                    .unwrap_or_default()
            };
            for &i in &held {
                let e = &mut self.slots[i];
                e.read_intents.remove(&me);
                e.write_intents.remove(&me);
                // An emptied entry is kept for the next statement on the table (no
                // allocation per statement) while the manager knows few tables.
                self.maybe_free(i, false);
            }
            held.clear();
            if let Some(v) = self.held.get_mut(&me) {
                *v = held;
            }
        }
        if locks {
            for i in 0..self.slots.len() {
                let e = &mut self.slots[i];
                e.read_locks.remove(&me);
                if e.write_lock == Some(me) {
                    e.write_lock = None;
                }
                self.maybe_free(i, true);
            }
        }
    }
}

/// The server-wide table lock manager (one per [`crate::TableEngine`]).
#[derive(Default)]
pub struct TableLocks {
    state: Mutex<State>,
    changed: Condvar,
    /// Requests granted without waiting (`Table_locks_immediate`).
    immediate: AtomicU64,
    /// Requests that waited (`Table_locks_waited`).
    waited: AtomicU64,
    /// Requests waiting now (`Shoal_table_lock_current_waits`).
    current_waits: AtomicU64,
}

/// Decrements the current-waits gauge when a wait ends, however it ends.
struct WaitingGauge<'a>(&'a AtomicU64);

impl Drop for WaitingGauge<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// 1205 `ER_LOCK_WAIT_TIMEOUT`.
pub fn lock_wait_timeout() -> SqlError {
    SqlError::coded(
        shoal_errors::ER_LOCK_WAIT_TIMEOUT,
        "Lock wait timeout exceeded; try restarting transaction",
    )
}

impl TableLocks {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Unlocks `st` after a change that may let a waiter go, and wakes the waiters if any.
    fn release_and_notify(&self, st: MutexGuard<'_, State>) {
        let any = st.waiters > 0;
        drop(st);
        if any {
            self.changed.notify_all();
        }
    }

    /// Waits on the condition variable until `ready` holds, the deadline passes (1205) or the
    /// session is killed (1317). Reports the wait to the pool as `kind`.
    fn wait_until<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        timeout: Duration,
        killed: &AtomicBool,
        kind: WaitKind,
        mut ready: impl FnMut(&State) -> bool,
    ) -> Result<MutexGuard<'a, State>, (MutexGuard<'a, State>, SqlError)> {
        if ready(&st) {
            self.immediate.fetch_add(1, Ordering::Relaxed);
            return Ok(st);
        }
        self.waited.fetch_add(1, Ordering::Relaxed);
        self.current_waits.fetch_add(1, Ordering::Relaxed);
        let _gauge = WaitingGauge(&self.current_waits);
        let deadline = Instant::now().checked_add(timeout);
        let _wait = shoal_wait::wait(kind);
        st.waiters += 1;
        let outcome = loop {
            if killed.load(Ordering::SeqCst) {
                break Err(SqlError::Interrupted);
            }
            let now = Instant::now();
            let slice = match deadline {
                Some(d) if now >= d => break Err(lock_wait_timeout()),
                Some(d) => (d - now).min(Duration::from_millis(100)),
                None => Duration::from_millis(100),
            };
            st = self
                .changed
                .wait_timeout(st, slice)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            if ready(&st) {
                break Ok(());
            }
        };
        st.waiters -= 1;
        match outcome {
            Ok(()) => Ok(st),
            Err(e) => Err((st, e)),
        }
    }

    /// Status rows: `Table_locks_immediate`, `Table_locks_waited` (MySQL's names, counting
    /// every intent and lock request) and `Shoal_table_lock_current_waits`.
    pub fn status(&self) -> Vec<(&'static str, u64)> {
        vec![
            (
                "Table_locks_immediate",
                self.immediate.load(Ordering::Relaxed),
            ),
            ("Table_locks_waited", self.waited.load(Ordering::Relaxed)),
            (
                "Shoal_table_lock_current_waits",
                self.current_waits.load(Ordering::Relaxed),
            ),
        ]
    }

    /// Takes intents for one statement of session `me` (already held ones are kept).
    pub fn acquire_intents(
        &self,
        me: u64,
        tables: &[(TableKey, LockRequest)],
        timeout: Duration,
        killed: &AtomicBool,
    ) -> Result<(), SqlError> {
        let st = self.lock();
        let ready = |st: &State| {
            tables
                .iter()
                .all(|(k, r)| st.grantable(me, k, *r) && !st.behind_pending(me, k, *r))
        };
        let mut st = self
            .wait_until(st, timeout, killed, WaitKind::TableLock, ready)
            .map_err(|(_, e)| e)?;
        for (k, r) in tables {
            st.grant(me, k, *r);
        }
        Ok(())
    }

    /// `LOCK TABLES`: all of `tables` at once, or none (1205 / 1317 while waiting).
    pub fn lock_tables(
        &self,
        me: u64,
        tables: &[(TableKey, LockRequest)],
        timeout: Duration,
        killed: &AtomicBool,
    ) -> Result<(), SqlError> {
        self.wait_pending(
            me,
            tables.to_vec(),
            timeout,
            killed,
            WaitKind::TableLock,
            |st| tables.iter().all(|(k, r)| st.grantable(me, k, *r)),
            |st| {
                for (k, r) in tables {
                    st.grant(me, k, *r);
                }
            },
        )
    }

    /// `FLUSH TABLES WITH READ LOCK`.
    pub fn global_read_lock(
        &self,
        me: u64,
        timeout: Duration,
        killed: &AtomicBool,
    ) -> Result<(), SqlError> {
        self.wait_pending(
            me,
            Vec::new(),
            timeout,
            killed,
            WaitKind::GlobalLock,
            |st| st.global_grantable(me),
            |st| {
                st.global_read.insert(me);
            },
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn wait_pending(
        &self,
        me: u64,
        tables: Vec<(TableKey, LockRequest)>,
        timeout: Duration,
        killed: &AtomicBool,
        kind: WaitKind,
        ready: impl FnMut(&State) -> bool,
        grant: impl FnOnce(&mut State),
    ) -> Result<(), SqlError> {
        let mut st = self.lock();
        let id = st.next_pending;
        st.next_pending += 1;
        st.pending.push((
            id,
            Pending {
                session: me,
                tables,
            },
        ));
        let r = self.wait_until(st, timeout, killed, kind, ready);
        let (mut st, r) = match r {
            Ok(st) => (st, Ok(())),
            Err((st, e)) => (st, Err(e)),
        };
        st.pending.retain(|(i, _)| *i != id);
        if r.is_ok() {
            grant(&mut st);
        }
        // Intents queued behind this request may go now.
        self.release_and_notify(st);
        r
    }

    /// Releases the intents of `me` (its transaction ended).
    pub fn release_intents(&self, me: u64) {
        let mut st = self.lock();
        if !st.holds_intents(me) {
            return;
        }
        st.release(me, true, false, false);
        self.release_and_notify(st);
    }

    /// `UNLOCK TABLES`: the explicit locks and the global read lock of `me`.
    pub fn unlock(&self, me: u64) {
        let mut st = self.lock();
        st.release(me, false, true, false);
        st.global_read.remove(&me);
        self.release_and_notify(st);
    }

    /// The explicit locks of `me` only (START TRANSACTION keeps the global read lock).
    pub fn unlock_tables_only(&self, me: u64) {
        let mut st = self.lock();
        st.release(me, false, true, false);
        self.release_and_notify(st);
    }

    /// Everything `me` holds (the session ends).
    pub fn release_all(&self, me: u64) {
        let mut st = self.lock();
        st.release(me, true, true, true);
        st.global_read.remove(&me);
        self.release_and_notify(st);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(t: &str) -> TableKey {
        ("db".into(), t.into())
    }

    const SHORT: Duration = Duration::from_millis(50);

    #[test]
    fn conflicts_follow_the_table() {
        let l = TableLocks::default();
        let no = AtomicBool::new(false);
        l.lock_tables(1, &[(k("t"), LockRequest::Read)], SHORT, &no)
            .unwrap();
        // Readers share; writers wait and time out with 1205.
        l.acquire_intents(2, &[(k("t"), LockRequest::ReadIntent)], SHORT, &no)
            .unwrap();
        let e = l
            .acquire_intents(3, &[(k("t"), LockRequest::WriteIntent)], SHORT, &no)
            .unwrap_err();
        assert_eq!(e.code(), 1205);
        // Another table is free.
        l.acquire_intents(3, &[(k("u"), LockRequest::WriteIntent)], SHORT, &no)
            .unwrap();
        // A WRITE lock waits for 2's read intent.
        let e = l
            .lock_tables(4, &[(k("t"), LockRequest::Write)], SHORT, &no)
            .unwrap_err();
        assert_eq!(e.code(), 1205);
        l.release_intents(2);
        l.unlock(1);
        l.lock_tables(4, &[(k("t"), LockRequest::Write)], SHORT, &no)
            .unwrap();
        l.release_all(4);
        l.release_all(3);
        // Session 2 keeps its (empty) list of held tables until it ends.
        assert!(l.lock().held.get(&2).is_some_and(|v| v.is_empty()));
        l.release_all(2);
        assert!(l.lock().index.is_empty());
        assert!(l.lock().held.is_empty());
        assert_eq!(l.lock().waiters, 0);
    }

    #[test]
    fn global_read_lock_waits_for_writers_and_blocks_new_ones() {
        let l = TableLocks::default();
        let no = AtomicBool::new(false);
        l.acquire_intents(1, &[(k("t"), LockRequest::WriteIntent)], SHORT, &no)
            .unwrap();
        assert_eq!(l.global_read_lock(2, SHORT, &no).unwrap_err().code(), 1205);
        l.release_intents(1);
        l.global_read_lock(2, SHORT, &no).unwrap();
        assert_eq!(
            l.acquire_intents(1, &[(k("t"), LockRequest::WriteIntent)], SHORT, &no)
                .unwrap_err()
                .code(),
            1205
        );
        l.acquire_intents(1, &[(k("t"), LockRequest::ReadIntent)], SHORT, &no)
            .unwrap();
    }

    #[test]
    fn a_waiting_lock_is_not_starved_by_new_intents() {
        let l = std::sync::Arc::new(TableLocks::default());
        let no = AtomicBool::new(false);
        l.acquire_intents(1, &[(k("t"), LockRequest::WriteIntent)], SHORT, &no)
            .unwrap();
        let l2 = l.clone();
        let waiter = std::thread::spawn(move || {
            let no = AtomicBool::new(false);
            l2.lock_tables(
                2,
                &[(k("t"), LockRequest::Read)],
                Duration::from_secs(30),
                &no,
            )
        });
        // Wait until the request is pending.
        let deadline = Instant::now() + Duration::from_secs(30);
        while l.lock().pending.is_empty() {
            assert!(Instant::now() < deadline);
            std::thread::yield_now();
        }
        // A new writer queues behind it; the holder of an intent is not held back.
        let e = l
            .acquire_intents(3, &[(k("t"), LockRequest::WriteIntent)], SHORT, &no)
            .unwrap_err();
        assert_eq!(e.code(), 1205);
        l.acquire_intents(1, &[(k("u"), LockRequest::WriteIntent)], SHORT, &no)
            .unwrap();
        l.release_intents(1);
        waiter.join().unwrap().unwrap();
    }

    /// Past [`KEEP_EMPTY_ENTRIES`] tables, emptied entries are dropped and their slots reused,
    /// and a reused slot carries the new table's locks, never the old one's.
    #[test]
    fn many_tables_reuse_slots_and_keep_conflicts_per_table() {
        let l = TableLocks::default();
        let no = AtomicBool::new(false);
        let n = KEEP_EMPTY_ENTRIES + 100;
        // Session 1 holds a read intent on table 0 throughout (a transaction left open).
        l.acquire_intents(1, &[(k("t0"), LockRequest::ReadIntent)], SHORT, &no)
            .unwrap();
        for round in 0..3 {
            for i in 1..n {
                let t = k(&format!("t{i}"));
                l.acquire_intents(2, &[(t, LockRequest::WriteIntent)], SHORT, &no)
                    .unwrap();
                l.release_intents(2);
            }
            let st = l.lock();
            assert!(
                st.slots.len() <= KEEP_EMPTY_ENTRIES + 2,
                "round {round}: {} slots",
                st.slots.len()
            );
            assert_eq!(st.index.len() + st.free.len(), st.slots.len());
            for (key, &i) in &st.index {
                assert!(st.slots[i].live && st.slots[i].key == *key);
            }
        }
        // Table 0's intent survived the churn: a WRITE lock on it still waits for session 1.
        let e = l
            .lock_tables(3, &[(k("t0"), LockRequest::Write)], SHORT, &no)
            .unwrap_err();
        assert_eq!(e.code(), 1205);
        // A table whose slot was reused is free.
        l.lock_tables(
            3,
            &[(k(&format!("t{}", n - 1)), LockRequest::Write)],
            SHORT,
            &no,
        )
        .unwrap();
        l.release_all(3);
        l.release_intents(1);
        l.lock_tables(3, &[(k("t0"), LockRequest::Write)], SHORT, &no)
            .unwrap();
        l.release_all(3);
        l.release_all(2);
        l.release_all(1);
        let st = l.lock();
        assert!(st.index.is_empty() && st.held.is_empty());
    }

    #[test]
    fn kill_ends_the_wait() {
        let l = TableLocks::default();
        let no = AtomicBool::new(false);
        l.lock_tables(1, &[(k("t"), LockRequest::Write)], SHORT, &no)
            .unwrap();
        let killed = AtomicBool::new(true);
        let e = l
            .acquire_intents(
                2,
                &[(k("t"), LockRequest::ReadIntent)],
                Duration::from_secs(3600),
                &killed,
            )
            .unwrap_err();
        assert_eq!(e.code(), 1317);
    }
}
