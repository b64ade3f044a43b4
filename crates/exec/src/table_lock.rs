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
//! **Read intents without the mutex.** Most statements only read, and a read intent conflicts
//! with nothing but a WRITE lock, granted or waiting. So each table also has a pair of
//! counters ([`TableCounters`]): `readers`, the read intents taken without the manager's
//! mutex, and `strong`, the WRITE locks granted or waiting on the table. A statement whose
//! intents are all reads increments `readers` of each table and then checks `strong`; a WRITE
//! request increments `strong` (under the mutex) and then waits until `readers` is zero. Both
//! sides use sequentially consistent operations, so at least one of them sees the other (the
//! two halves of Dekker's algorithm): either the reader sees `strong` and backs out to the
//! mutex path, where it queues behind the request as before, or the writer sees the reader and
//! waits for it. A reader whose decrement empties `readers` while `strong` is set wakes the
//! waiters. The session keeps the counters it incremented in its [`HeldIntents`] and gives
//! them back at the end of its transaction; a statement that needs a write intent takes the
//! mutex path for all of its tables. This spares the common statement the mutex, two hashes of
//! table names and four hash-set operations (about 1,000 instructions a point select).
//!
//! Everything a session holds is keyed by its lock id and released by `UNLOCK TABLES`, by the end
//! of its transaction (intents), and when the session is dropped (disconnect).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
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

/// A table's counters for read intents taken without the manager's mutex (see the module
/// docs). One per table the manager has been asked about, shared by the plans that touch it.
#[derive(Debug)]
pub struct TableCounters {
    /// The table, for turning a held count into a mutex-path intent ([`TableLocks::demote`]).
    key: TableKey,
    /// Read intents held through the counters.
    readers: AtomicU64,
    /// WRITE locks granted or waiting on the table: while nonzero, read intents take the
    /// mutex path.
    strong: AtomicU64,
}

impl TableCounters {
    /// Takes a read intent without the mutex, or says the mutex path must be taken.
    fn try_read(&self) -> bool {
        if self.strong.load(Ordering::SeqCst) != 0 {
            return false;
        }
        self.readers.fetch_add(1, Ordering::SeqCst);
        if self.strong.load(Ordering::SeqCst) != 0 {
            // A WRITE request came in between: it may have seen this reader; give it back.
            self.readers.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }
}

/// The tables a statement takes intents on, with the counters of each (in the same order),
/// worked out once per plan ([`TableLocks::targets`]).
#[derive(Debug)]
pub struct IntentTargets {
    /// The tables and what the statement does to each.
    pub tables: Vec<(TableKey, LockRequest)>,
    /// Each table's counters.
    counters: Vec<Arc<TableCounters>>,
    /// Whether every request is a read intent (then the counters may serve them).
    reads_only: bool,
}

/// What a session holds in intents besides what the manager's state records: the read
/// intents taken through the counters, and whether it took any through the mutex path (so
/// the end of a read-only transaction need not take the mutex at all).
#[derive(Debug, Default)]
pub struct HeldIntents {
    /// Counters this session incremented, one entry per table.
    fast: Vec<Arc<TableCounters>>,
    /// Whether the session may hold intents in the manager's state.
    slow: bool,
}

impl HeldIntents {
    /// Whether the session holds any intent.
    pub fn any(&self) -> bool {
        self.slow || !self.fast.is_empty()
    }
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
    /// Each table's counters (see the module docs), kept while a plan or a request holds
    /// them; dead entries are pruned when the map has doubled since the last prune.
    counters: HashMap<TableKey, Weak<TableCounters>>,
    /// The map's size after its last prune.
    counters_pruned_at: usize,
    /// The counters whose `strong` each session raised for its granted WRITE locks.
    strong_held: HashMap<u64, Vec<Arc<TableCounters>>>,
    /// Threads waiting on [`TableLocks::changed`]: a release wakes them only if there are
    /// any (read and changed under the mutex, so no wake-up is lost), which spares the common
    /// statement its futex system call.
    waiters: usize,
}

fn others<'a>(set: &'a HashSet<u64>, me: u64) -> impl Iterator<Item = &'a u64> + 'a {
    set.iter().filter(move |s| **s != me)
}

impl State {
    /// The table's counters, made if no one holds them now.
    fn counters_for(&mut self, key: &TableKey) -> Arc<TableCounters> {
        if let Some(c) = self.counters.get(key).and_then(Weak::upgrade) {
            return c;
        }
        if self.counters.len() >= 2 * self.counters_pruned_at.max(64) {
            self.counters.retain(|_, w| w.strong_count() > 0);
            self.counters_pruned_at = self.counters.len();
        }
        let c = Arc::new(TableCounters {
            key: key.clone(),
            readers: AtomicU64::new(0),
            strong: AtomicU64::new(0),
        });
        self.counters.insert(key.clone(), Arc::downgrade(&c));
        c
    }

    /// Read intents held on `key` through its counters (never the asking session's: a session
    /// gives its own back to the mutex path before it asks for a WRITE lock).
    fn fast_readers(&self, key: &TableKey) -> u64 {
        self.counters
            .get(key)
            .and_then(Weak::upgrade)
            .map_or(0, |c| c.readers.load(Ordering::SeqCst))
    }

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
        if req == LockRequest::Write && self.fast_readers(key) != 0 {
            return false;
        }
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
    fn behind_pending(&self, me: u64, holds_fast: bool, key: &TableKey, req: LockRequest) -> bool {
        if holds_fast || self.holds_intents(me) {
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
            for c in self.strong_held.remove(&me).unwrap_or_default() {
                c.strong.fetch_sub(1, Ordering::SeqCst);
            }
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

    /// The tables of a statement with their counters, for [`Self::acquire_intents`]: worked
    /// out once per plan.
    pub fn targets(&self, tables: Vec<(TableKey, LockRequest)>) -> IntentTargets {
        let mut st = self.lock();
        let counters = tables.iter().map(|(k, _)| st.counters_for(k)).collect();
        let reads_only = tables.iter().all(|(_, r)| *r == LockRequest::ReadIntent);
        IntentTargets {
            tables,
            counters,
            reads_only,
        }
    }

    /// Takes intents for one statement of session `me` (already held ones are kept): read
    /// intents alone through the tables' counters when no WRITE lock is granted or waiting on
    /// them, otherwise (and for any write intent) through the mutex.
    pub fn acquire_intents(
        &self,
        me: u64,
        targets: &IntentTargets,
        held: &mut HeldIntents,
        timeout: Duration,
        killed: &AtomicBool,
    ) -> Result<(), SqlError> {
        if targets.reads_only {
            let start = held.fast.len();
            let mut all = true;
            for c in &targets.counters {
                if held.fast.iter().any(|h| Arc::ptr_eq(h, c)) {
                    continue;
                }
                if !c.try_read() {
                    all = false;
                    break;
                }
                held.fast.push(c.clone());
            }
            if all {
                self.immediate.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            // Some table has a WRITE lock granted or waiting: this statement's tables go the
            // mutex path (what it took above goes back).
            for c in held.fast.drain(start..) {
                self.release_fast(&c);
            }
        }
        let holds_fast = !held.fast.is_empty();
        let tables = &targets.tables;
        let st = self.lock();
        let ready = |st: &State| {
            tables
                .iter()
                .all(|(k, r)| st.grantable(me, k, *r) && !st.behind_pending(me, holds_fast, k, *r))
        };
        let mut st = self
            .wait_until(st, timeout, killed, WaitKind::TableLock, ready)
            .map_err(|(_, e)| e)?;
        for (k, r) in tables {
            st.grant(me, k, *r);
        }
        held.slow = true;
        Ok(())
    }

    /// Gives back a read intent taken through `c`, waking waiters if it was the last one a
    /// WRITE request waits for.
    fn release_fast(&self, c: &TableCounters) {
        if c.readers.fetch_sub(1, Ordering::SeqCst) == 1 && c.strong.load(Ordering::SeqCst) != 0 {
            let st = self.lock();
            self.release_and_notify(st);
        }
    }

    /// Turns the read intents `me` holds through counters into intents in the manager's
    /// state, where its own requests do not conflict with them: before the session asks for a
    /// WRITE lock on a table it may have read in the same transaction (DDL's exclusive lock).
    pub fn demote(&self, me: u64, held: &mut HeldIntents) {
        if held.fast.is_empty() {
            return;
        }
        let mut st = self.lock();
        for c in held.fast.drain(..) {
            st.grant(me, &c.key, LockRequest::ReadIntent);
            c.readers.fetch_sub(1, Ordering::SeqCst);
        }
        held.slow = true;
        self.release_and_notify(st);
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
        // Read intents stop taking the counters of a table this request would WRITE-lock; the
        // ones held now are waited for by `grantable`.
        let strong: Vec<Arc<TableCounters>> = tables
            .iter()
            .filter(|(_, r)| *r == LockRequest::Write)
            .map(|(k, _)| st.counters_for(k))
            .collect();
        for c in &strong {
            c.strong.fetch_add(1, Ordering::SeqCst);
        }
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
            if !strong.is_empty() {
                st.strong_held.entry(me).or_default().extend(strong);
            }
        } else {
            for c in strong {
                c.strong.fetch_sub(1, Ordering::SeqCst);
            }
        }
        // Intents queued behind this request may go now.
        self.release_and_notify(st);
        r
    }

    /// Releases the intents of `me` (its transaction ended); takes the mutex only if some
    /// were taken through it.
    pub fn release_intents(&self, me: u64, held: &mut HeldIntents) {
        for c in held.fast.drain(..) {
            self.release_fast(&c);
        }
        if !std::mem::take(&mut held.slow) {
            return;
        }
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

    /// Everything `me` holds (the session ends, or it resets).
    pub fn release_all(&self, me: u64, held: &mut HeldIntents) {
        for c in held.fast.drain(..) {
            self.release_fast(&c);
        }
        held.slow = false;
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

    /// The manager with each session's [`HeldIntents`] kept beside it, as `TableSession`
    /// keeps its own.
    #[derive(Default)]
    struct Locks {
        l: TableLocks,
        held: Mutex<std::collections::HashMap<u64, HeldIntents>>,
    }

    impl std::ops::Deref for Locks {
        type Target = TableLocks;
        fn deref(&self) -> &TableLocks {
            &self.l
        }
    }

    impl Locks {
        fn acquire_intents(
            &self,
            me: u64,
            tables: &[(TableKey, LockRequest)],
            timeout: Duration,
            killed: &AtomicBool,
        ) -> Result<(), SqlError> {
            let t = self.l.targets(tables.to_vec());
            let mut h = std::mem::take(self.held.lock().unwrap().entry(me).or_default());
            let r = self.l.acquire_intents(me, &t, &mut h, timeout, killed);
            self.held.lock().unwrap().insert(me, h);
            r
        }

        fn with_held(&self, me: u64, f: impl FnOnce(&TableLocks, &mut HeldIntents)) {
            let mut h = std::mem::take(self.held.lock().unwrap().entry(me).or_default());
            f(&self.l, &mut h);
            self.held.lock().unwrap().insert(me, h);
        }

        fn release_intents(&self, me: u64) {
            self.with_held(me, |l, h| l.release_intents(me, h));
        }

        fn release_all(&self, me: u64) {
            self.with_held(me, |l, h| l.release_all(me, h));
        }

        fn fast_held(&self, me: u64) -> usize {
            self.held
                .lock()
                .unwrap()
                .get(&me)
                .map_or(0, |h| h.fast.len())
        }
    }

    const SHORT: Duration = Duration::from_millis(50);

    /// No table's counters record a reader or a WRITE lock.
    fn assert_counters_idle(l: &TableLocks) {
        let st = l.lock();
        for (key, w) in &st.counters {
            if let Some(c) = w.upgrade() {
                assert_eq!(c.readers.load(Ordering::SeqCst), 0, "{key:?}");
                assert_eq!(c.strong.load(Ordering::SeqCst), 0, "{key:?}");
            }
        }
    }

    #[test]
    fn conflicts_follow_the_table() {
        let l = Locks::default();
        let no = AtomicBool::new(false);
        l.lock_tables(1, &[(k("t"), LockRequest::Read)], SHORT, &no)
            .unwrap();
        // Readers share (without the mutex: a READ lock does not stop the counters); writers
        // wait and time out with 1205.
        l.acquire_intents(2, &[(k("t"), LockRequest::ReadIntent)], SHORT, &no)
            .unwrap();
        assert_eq!(l.fast_held(2), 1);
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
        assert_eq!(l.fast_held(2), 0);
        l.release_intents(3);
        // Session 3 keeps its (empty) list of held tables until it ends.
        assert!(l.lock().held.get(&3).is_some_and(|v| v.is_empty()));
        l.release_all(3);
        l.release_all(2);
        assert!(l.lock().index.is_empty());
        assert!(l.lock().held.is_empty());
        assert_eq!(l.lock().waiters, 0);
    }

    #[test]
    fn global_read_lock_waits_for_writers_and_blocks_new_ones() {
        let l = Locks::default();
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
        let l = std::sync::Arc::new(Locks::default());
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
        let l = Locks::default();
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
        let l = Locks::default();
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

    /// A read intent taken through the counters is invisible in the manager's state, yet a
    /// WRITE lock waits for it; while a WRITE lock is held or waited for, read intents go
    /// through the mutex and wait behind it.
    #[test]
    fn counted_read_intents_hold_write_locks_off() {
        let l = Locks::default();
        let no = AtomicBool::new(false);
        l.acquire_intents(1, &[(k("t"), LockRequest::ReadIntent)], SHORT, &no)
            .unwrap();
        // A second statement on the same table in the same transaction counts once.
        l.acquire_intents(1, &[(k("t"), LockRequest::ReadIntent)], SHORT, &no)
            .unwrap();
        assert_eq!(l.fast_held(1), 1);
        assert!(l.lock().index.is_empty() && l.lock().held.is_empty());
        let e = l
            .lock_tables(2, &[(k("t"), LockRequest::Write)], SHORT, &no)
            .unwrap_err();
        assert_eq!(e.code(), 1205);
        // The failed request left no trace on the counters.
        l.release_intents(1);
        l.acquire_intents(1, &[(k("t"), LockRequest::ReadIntent)], SHORT, &no)
            .unwrap();
        assert_eq!(l.fast_held(1), 1);
        l.release_intents(1);
        l.lock_tables(2, &[(k("t"), LockRequest::Write)], SHORT, &no)
            .unwrap();
        let e = l
            .acquire_intents(1, &[(k("t"), LockRequest::ReadIntent)], SHORT, &no)
            .unwrap_err();
        assert_eq!(e.code(), 1205);
        assert_eq!(l.fast_held(1), 0);
        l.unlock(2);
        l.acquire_intents(1, &[(k("t"), LockRequest::ReadIntent)], SHORT, &no)
            .unwrap();
        assert_eq!(l.fast_held(1), 1);
        l.release_all(1);
        l.release_all(2);
        assert_counters_idle(&l);
        assert!(l.lock().strong_held.is_empty());
    }

    /// DDL in a transaction that read its table: the session's own counted intent is turned
    /// into a mutex-path intent first, so its WRITE lock does not wait for itself.
    #[test]
    fn demoted_intents_do_not_block_their_own_session() {
        let l = Locks::default();
        let no = AtomicBool::new(false);
        l.acquire_intents(1, &[(k("t"), LockRequest::ReadIntent)], SHORT, &no)
            .unwrap();
        let e = l
            .lock_tables(1, &[(k("t"), LockRequest::Write)], SHORT, &no)
            .unwrap_err();
        assert_eq!(
            e.code(),
            1205,
            "without demotion the session waits for itself"
        );
        l.with_held(1, |l, h| l.demote(1, h));
        assert_eq!(l.fast_held(1), 0);
        l.lock_tables(1, &[(k("t"), LockRequest::Write)], SHORT, &no)
            .unwrap();
        // Another session's WRITE lock still waits for the demoted intent.
        l.unlock_tables_only(1);
        let e = l
            .lock_tables(2, &[(k("t"), LockRequest::Write)], SHORT, &no)
            .unwrap_err();
        assert_eq!(e.code(), 1205);
        l.release_intents(1);
        l.lock_tables(2, &[(k("t"), LockRequest::Write)], SHORT, &no)
            .unwrap();
        l.release_all(2);
        l.release_all(1);
    }

    /// Readers on the counters and a WRITE-lock holder never overlap: reader threads take and
    /// release read intents in a loop, a writer takes and drops the WRITE lock, and each side
    /// checks a flag the other sets while it holds its lock. Both sides make progress.
    #[test]
    fn counted_readers_and_a_writer_never_overlap() {
        use std::sync::atomic::AtomicUsize;
        let l = Arc::new(Locks::default());
        let writing = Arc::new(AtomicBool::new(false));
        let reading = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let long = Duration::from_secs(60);
        let mut readers = Vec::new();
        for me in 10..13u64 {
            let (l, writing, reading, stop) =
                (l.clone(), writing.clone(), reading.clone(), stop.clone());
            readers.push(std::thread::spawn(move || {
                let no = AtomicBool::new(false);
                let mut n = 0u64;
                loop {
                    l.acquire_intents(me, &[(k("t"), LockRequest::ReadIntent)], long, &no)
                        .unwrap();
                    reading.fetch_add(1, Ordering::SeqCst);
                    assert!(
                        !writing.load(Ordering::SeqCst),
                        "a reader beside the writer"
                    );
                    std::thread::yield_now();
                    reading.fetch_sub(1, Ordering::SeqCst);
                    l.release_intents(me);
                    n += 1;
                    if stop.load(Ordering::SeqCst) {
                        return n;
                    }
                }
            }));
        }
        let no = AtomicBool::new(false);
        for _ in 0..200 {
            l.lock_tables(1, &[(k("t"), LockRequest::Write)], long, &no)
                .unwrap();
            writing.store(true, Ordering::SeqCst);
            assert_eq!(
                reading.load(Ordering::SeqCst),
                0,
                "the writer beside a reader"
            );
            std::thread::yield_now();
            writing.store(false, Ordering::SeqCst);
            l.unlock(1);
        }
        stop.store(true, Ordering::SeqCst);
        for r in readers {
            assert!(r.join().unwrap() > 0);
        }
        assert_counters_idle(&l);
    }
}
