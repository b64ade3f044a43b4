//! Transactions: snapshot reads, a private write buffer, row locks, savepoints, one-batch commit.
//!
//! # Reads
//!
//! * Plain reads (`LockMode::None`) see a RocksDB snapshot, merged with the transaction's own
//!   buffered writes (read-your-writes). Under REPEATABLE READ the snapshot is taken at the first
//!   read and kept to the end (InnoDB's consistent read); under READ COMMITTED / READ
//!   UNCOMMITTED it is refreshed at every [`Transaction::begin_statement`]; under SERIALIZABLE
//!   plain reads are shared-locking reads (as InnoDB does with autocommit off).
//! * Locking reads (`Shared` = LOCK IN SHARE MODE, `Exclusive` = FOR UPDATE, and every
//!   UPDATE/DELETE) lock the row first and then read the *latest committed* version (a "current
//!   read"), again merged with the own buffer. Scans lock each row as they reach it and re-read
//!   it; a row that vanished or (for index scans) no longer matches the index entry is skipped.
//!   There are no gap locks: a locking range scan does not block inserts into the range.
//!
//! # Writes
//!
//! Inserts, updates and deletes lock the row (exclusive) and every UNIQUE index value they
//! create or remove, check uniqueness against the latest committed state plus the own buffer,
//! and then only buffer the new row and index entries. Because the locks are held to the end
//! of the transaction, two transactions inserting the same key serialize: the second waits, then
//! sees the first one's committed row (1062) or, after a rollback, inserts. `commit` turns the
//! buffer into one `WriteBatch` (atomic), writes it through group commit, then releases the locks.
//!
//! # Statements, savepoints, errors
//!
//! Every buffer change is recorded in an undo list, so [`Transaction::savepoint`] is a position
//! in it and [`Transaction::rollback_to`] undoes the writes after it (locks are kept, as in
//! InnoDB). The SQL layer takes a savepoint per statement: a failed statement (duplicate key,
//! lock wait timeout) is undone alone. A deadlock instead rolls the whole transaction back and
//! releases its locks; the transaction is then inactive (`is_active() == false`). Dropping an
//! active transaction (client gone) rolls it back. [`KillHandle::kill`] interrupts the current
//! (or next) lock wait or operation with [`StoreError::Interrupted`].

use crate::catalog::{self, dup_error, index_entry_key, pk_of_row, row_key, TableDef};
use crate::codec::{
    decode_key, decode_stored, decode_stored_cols, decode_stored_each, encode_key,
    encode_key_weighted, encode_row, prefix_successor,
};
use crate::datum::{ColumnType, Datum};
use crate::engine::{Engine, Inner, Snapshot, SnapshotIter};
use crate::error::{Result, StoreError};
use crate::lock::{LockError, Strength, TxnId};
use crate::stats::Stats;
use rocksdb::WriteBatch;
use std::collections::{BTreeMap, HashSet};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Rows fetched per RocksDB iterator seek during scans.
const SCAN_CHUNK: usize = 128;

/// Transaction isolation level (`SET TRANSACTION ISOLATION LEVEL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// Treated as READ COMMITTED (no dirty reads are ever shown).
    ReadUncommitted,
    /// Plain reads see a snapshot refreshed at each statement.
    ReadCommitted,
    /// Plain reads see one snapshot for the whole transaction (InnoDB's default).
    #[default]
    RepeatableRead,
    /// Plain reads take shared locks.
    Serializable,
}

/// Row lock requested by a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Consistent (snapshot) read, no lock.
    None,
    /// `LOCK IN SHARE MODE` / `FOR SHARE`: shared lock, current read.
    Shared,
    /// `FOR UPDATE`: exclusive lock, current read.
    Exclusive,
}

/// What a locking read does with a row another transaction has locked (`FOR UPDATE` /
/// `FOR SHARE` and their `NOWAIT` / `SKIP LOCKED`), set per statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LockWait {
    /// Waits up to the lock wait timeout (1205 after it).
    #[default]
    Wait,
    /// Fails at once with 1205, as MariaDB's `NOWAIT`.
    NoWait,
    /// Passes the row by: it is not read.
    SkipLocked,
}

/// The encoded primary key of a row (opaque; from [`Row::key`] or [`RowKey::from_values`]).
/// It cannot be decoded back into values: a collated string column holds its collation weight
/// (see `codec`), so a row's key values are read from [`Row::values`].
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowKey(pub Vec<u8>);

impl RowKey {
    /// Encodes primary key values (coerced to the key column types). Tables without a primary
    /// key take `[Datum::UInt(hidden_row_id)]`.
    pub fn from_values(table: &TableDef, pk: &[Datum]) -> Result<RowKey> {
        // One pass, one allocation (the key): every point read and single-row write builds
        // one, and collecting the key's types, weighting and coerced values first cost three
        // more allocations a statement.
        let n = table.primary_key.as_ref().map_or(1, Vec::len);
        if pk.len() != n {
            return Err(StoreError::BadValue {
                column: "PRIMARY".into(),
                detail: format!("expected {n} key values, got {}", pk.len()),
            });
        }
        let mut out = Vec::with_capacity(n * 10);
        for (i, v) in pk.iter().enumerate() {
            let (ty, weighted) = match &table.primary_key {
                Some(cols) => {
                    let ty = table.columns[cols[i]].ty;
                    (ty, table.pk_format.weighs(ty))
                }
                None => (crate::catalog::HIDDEN_PK_TYPE, false),
            };
            let v = ty
                .coerce(v.clone())
                .map_err(|detail| StoreError::BadValue {
                    column: "PRIMARY".into(),
                    detail,
                })?;
            crate::codec::encode_key_col(&mut out, &v, weighted);
        }
        Ok(RowKey(out))
    }
}

/// A row as read: its key and its column values (in [`TableDef::columns`] order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    /// Primary key (pass to `update`/`delete`).
    pub key: RowKey,
    /// Column values.
    pub values: Vec<Datum>,
}

/// A range over the leading columns of the primary key or an index. Bounds are *prefixes*:
/// `Included([5])` on a `(a, b)` key starts at the first key with `a = 5`; `Excluded([5])` ends
/// (or starts) after every key with `a = 5`. Bound values are coerced to the column types; a
/// value that does not fit the column is an error (the SQL layer should clamp or decide).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyRange {
    /// Lower bound.
    pub start: Bound<Vec<Datum>>,
    /// Upper bound.
    pub end: Bound<Vec<Datum>>,
}

impl KeyRange {
    /// Every key.
    pub fn all() -> KeyRange {
        KeyRange {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        }
    }
    /// Keys whose leading columns equal `prefix`.
    pub fn prefix(prefix: Vec<Datum>) -> KeyRange {
        KeyRange {
            start: Bound::Included(prefix.clone()),
            end: Bound::Included(prefix),
        }
    }
    /// `lo <= key <= hi` on the leading columns (SQL BETWEEN).
    pub fn between(lo: Vec<Datum>, hi: Vec<Datum>) -> KeyRange {
        KeyRange {
            start: Bound::Included(lo),
            end: Bound::Included(hi),
        }
    }

    /// The range as the byte interval `[from, to)` of the encoded keys it covers in the
    /// primary key (`index` `None`) or the named index of `table`: two ranges of one key
    /// overlap exactly when their spans do, and spans sort in key order. For planners that
    /// merge the ranges of OR-ed conditions so no key is read twice.
    pub fn span(&self, table: &TableDef, index: Option<&str>) -> Result<(Vec<u8>, Vec<u8>)> {
        match index {
            None => encode_range(
                &table.rows_prefix(),
                &table.pk_types(),
                &table.pk_weighted(),
                self,
            ),
            Some(n) => {
                let ix = table
                    .index(n)
                    .ok_or_else(|| StoreError::NoSuchIndex(n.to_string()))?;
                encode_range(
                    &catalog::index_prefix(ix.id),
                    &table.index_types(ix),
                    &table.index_weighted(ix),
                    self,
                )
            }
        }
    }
}

impl Engine {
    /// About how many entries of the primary key (`index` `None`) or the named index of
    /// `table` lie in `range`: rows, for the planner's costs, EXPLAIN's `rows` and
    /// information_schema's `TABLE_ROWS`. Exact up to 1000 entries, then scaled by RocksDB's
    /// approximate sizes on disk (see `Engine::estimate_span`); 0 for a range that does not
    /// encode.
    pub fn estimate_rows(&self, table: &TableDef, index: Option<&str>, range: &KeyRange) -> u64 {
        match range.span(table, index) {
            Ok((from, to)) => self.estimate_span(&from, &to),
            Err(_) => 0,
        }
    }
}

/// A position in the transaction's undo list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Savepoint(usize);

/// Result of [`Transaction::try_insert`].
#[derive(Debug, Clone, PartialEq)]
pub enum InsertOutcome {
    /// The row was inserted.
    Inserted {
        /// Its primary key.
        key: RowKey,
        /// The AUTO_INCREMENT value generated for it (for LAST_INSERT_ID), if one was.
        auto_id: Option<u64>,
    },
    /// A row with the same PRIMARY or UNIQUE key exists (nothing was written). For INSERT
    /// IGNORE skip it, for ON DUPLICATE KEY UPDATE `update(existing.key, ..)`, for REPLACE
    /// `delete(existing.key)` and insert again.
    Duplicate {
        /// The index that collided (`PRIMARY` or the UNIQUE index name).
        key_name: String,
        /// The conflicting row (current committed version, or the own buffered one).
        existing: Row,
        /// The ready-made 1062 error for this collision.
        error_value: String,
    },
}

/// A key and its previous buffer entry (`None` = no entry; `Some(None)` = buffered delete).
type UndoEntry = (Vec<u8>, Option<Option<Vec<u8>>>);

/// Interrupts a transaction from another thread (KILL, client gone).
#[derive(Clone)]
pub struct KillHandle {
    inner: Arc<Inner>,
    txn: TxnId,
    flag: Arc<AtomicBool>,
}

impl KillHandle {
    /// Makes the transaction's current lock wait, or its next operation, fail with
    /// [`StoreError::Interrupted`]. The transaction stays active: roll it back for KILL
    /// CONNECTION, or just fail the statement for KILL QUERY.
    pub fn kill(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.inner.locks.interrupt(self.txn);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TxnState {
    Active,
    Finished,
}

/// A transaction. `Send` (a session may move between pool threads); its methods take
/// `&mut self`, so one thread uses it at a time. Dropping it rolls back.
pub struct Transaction {
    /// A cache-only (`ReadTier::BlockCache`), unbounded iterator on `snap`, kept between range
    /// scans (see `engine::snapshot` for why); reset whenever `snap` is.
    snap_iter: Option<SnapshotIter>,
    /// Consistent-read snapshot (it keeps the database open by itself, so the field order of
    /// a transaction does not matter for safety).
    snap: Option<Snapshot>,
    inner: Arc<Inner>,
    id: TxnId,
    isolation: Isolation,
    state: TxnState,
    /// Buffered writes: key -> new value, `None` = delete.
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Undo list: (key, previous buffer entry) for every buffer change, in order.
    undo: Vec<UndoEntry>,
    /// Keys this transaction holds locks on.
    held: HashSet<Vec<u8>>,
    lock_timeout: Duration,
    /// What the current statement's locking reads do with a locked row.
    lock_wait: LockWait,
    killed: Arc<AtomicBool>,
    /// Bytes buffered by this transaction's writes so far (keys, values, undo), never
    /// decreased: what its uncommitted changes hold in memory at most.
    write_bytes: u64,
    /// `max_binlog_cache_size`: past it the next row write fails with 1197, and the next new
    /// row lock (with `lock_bytes`) with 1206.
    write_limit: u64,
    /// Bytes the row locks this transaction holds take (its set and the lock manager's).
    lock_bytes: u64,
}

fn coerce_values(types: &[ColumnType], vals: &[Datum], what: &str) -> Result<Vec<Datum>> {
    types
        .iter()
        .zip(vals)
        .map(|(t, v)| {
            t.coerce(v.clone()).map_err(|detail| StoreError::BadValue {
                column: what.to_string(),
                detail,
            })
        })
        .collect()
}

fn column_types(t: &TableDef) -> Vec<ColumnType> {
    t.columns.iter().map(|c| c.ty).collect()
}

impl Engine {
    /// Starts a transaction. Plain reads see a snapshot taken at the first read (REPEATABLE
    /// READ) or at each [`Transaction::begin_statement`] (READ COMMITTED).
    pub fn begin(&self, isolation: Isolation) -> Transaction {
        Transaction::new(self.inner.clone(), isolation)
    }
}

/// Turns RocksDB's per-thread perf counters off for the calling thread, once per thread.
///
/// RocksDB counts every block read, comparison and key skipped into a thread-local
/// `PerfContext` unless the thread's perf level is below `kEnableCount`, its default. The
/// counts are never read here (no `PerfContext` is taken anywhere), but each one went through
/// the thread-local's lazy-initialisation wrapper (`__tls_init`): 1.5 % of read-write's
/// instructions and 1.3 % of a point select's under callgrind. A transaction is where a thread
/// starts using the engine, so its start switches them off for the thread (a thread-local flag
/// makes it one FFI call per thread).
fn quiet_perf_counters() {
    thread_local! {
        static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    QUIET.with(|q| {
        if !q.get() {
            rocksdb::perf::set_perf_stats(rocksdb::perf::PerfStatsLevel::Disable);
            q.set(true);
        }
    });
}

impl Transaction {
    fn new(inner: Arc<Inner>, isolation: Isolation) -> Transaction {
        quiet_perf_counters();
        let id = inner.next_txn_id();
        let lock_timeout = inner.default_lock_wait_timeout();
        Transaction {
            snap_iter: None,
            snap: None,
            inner,
            id,
            isolation,
            state: TxnState::Active,
            writes: BTreeMap::new(),
            undo: Vec::new(),
            held: HashSet::new(),
            lock_timeout,
            lock_wait: LockWait::Wait,
            killed: Arc::new(AtomicBool::new(false)),
            write_bytes: 0,
            write_limit: u64::MAX,
            lock_bytes: 0,
        }
    }

    /// Transaction id (unique per engine run).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether the transaction can still be used (not committed, rolled back or a deadlock
    /// victim).
    pub fn is_active(&self) -> bool {
        self.state == TxnState::Active
    }

    /// Whether the transaction has buffered writes.
    pub fn has_writes(&self) -> bool {
        !self.writes.is_empty()
    }

    /// Number of row locks held.
    pub fn locks_held(&self) -> usize {
        self.held.len()
    }

    /// The isolation level.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// Sets this transaction's `innodb_lock_wait_timeout`.
    pub fn set_lock_wait_timeout(&mut self, d: Duration) {
        self.lock_timeout = d;
    }

    /// Bounds the memory this transaction's uncommitted writes may hold
    /// (`max_binlog_cache_size`): once past `bytes`, every further row write fails with
    /// [`StoreError::TxnTooBig`] (1197) until the transaction ends.
    pub fn set_write_limit(&mut self, bytes: u64) {
        self.write_limit = bytes;
    }

    /// Refuses a row write once the buffered writes passed the limit.
    fn check_write_limit(&self) -> Result<()> {
        if self.write_bytes > self.write_limit {
            return Err(StoreError::TxnTooBig(self.write_limit));
        }
        Ok(())
    }

    /// A handle to interrupt this transaction from another thread.
    pub fn kill_handle(&self) -> KillHandle {
        KillHandle {
            inner: self.inner.clone(),
            txn: self.id,
            flag: self.killed.clone(),
        }
    }

    /// Marks a statement boundary: refreshes the read snapshot under READ COMMITTED and returns
    /// a savepoint for statement-level rollback.
    pub fn begin_statement(&mut self) -> Savepoint {
        if matches!(
            self.isolation,
            Isolation::ReadCommitted | Isolation::ReadUncommitted
        ) {
            self.snap_iter = None;
            self.snap = None;
        }
        self.savepoint()
    }

    /// The current position in the undo list.
    pub fn savepoint(&self) -> Savepoint {
        Savepoint(self.undo.len())
    }

    /// Undoes every write made after `sp` (locks stay held).
    pub fn rollback_to(&mut self, sp: Savepoint) {
        while self.undo.len() > sp.0 {
            let (k, prev) = self.undo.pop().expect("len checked");
            match prev {
                None => {
                    self.writes.remove(&k);
                }
                Some(p) => {
                    self.writes.insert(k, p);
                }
            }
        }
    }

    /// Commits: writes the buffer as one atomic batch (durably per
    /// `innodb_flush_log_at_trx_commit`) and releases all locks, as soon as the batch is
    /// written, before its fsync is waited for (see `engine/commit.rs`).
    pub fn commit(&mut self) -> Result<()> {
        self.check_active()?;
        let result = if self.writes.is_empty() {
            Ok(())
        } else {
            let mut b = WriteBatch::default();
            for (k, v) in &self.writes {
                match v {
                    Some(v) => b.put(k, v),
                    None => b.delete(k),
                }
            }
            // Its writer releases the locks once the batch is written (or failed).
            let keys = std::mem::take(&mut self.held);
            self.inner
                .commit_batch(b, crate::engine::HeldLocks { txn: self.id, keys })
        };
        self.finish();
        match &result {
            Ok(()) => Stats::add(&self.inner.stats.commits, 1),
            Err(_) => Stats::add(&self.inner.stats.rollbacks, 1),
        }
        result
    }

    /// Rolls back: discards the buffer and releases all locks. Idempotent.
    pub fn rollback(&mut self) {
        if self.state == TxnState::Active {
            self.finish();
            Stats::add(&self.inner.stats.rollbacks, 1);
        }
    }

    fn finish(&mut self) {
        self.writes.clear();
        self.undo.clear();
        let held = std::mem::take(&mut self.held);
        if !held.is_empty() || self.killed.swap(false, Ordering::SeqCst) {
            self.inner.locks.release_all(self.id, held.iter());
        }
        self.snap_iter = None;
        self.snap = None;
        self.state = TxnState::Finished;
    }

    fn check_active(&mut self) -> Result<()> {
        if self.state != TxnState::Active {
            return Err(StoreError::TxnNotActive);
        }
        if self.killed.swap(false, Ordering::SeqCst) {
            self.inner.locks.clear_interrupt(self.id);
            return Err(StoreError::Interrupted);
        }
        Ok(())
    }

    /// What the following locking reads do with a row another transaction has locked (the
    /// executor sets it for one statement and back to `Wait` after).
    pub fn set_lock_wait(&mut self, w: LockWait) {
        self.lock_wait = w;
    }

    /// The row lock of a locking read under the statement's [`LockWait`]: `Ok(false)` when
    /// `SKIP LOCKED` passes the row by.
    fn lock_read(&mut self, key: &[u8], strength: Strength) -> Result<bool> {
        if self.lock_wait == LockWait::Wait {
            return self.lock(key, strength).map(|()| true);
        }
        let new = !self.held.contains(key);
        if new && self.lock_bytes > self.write_limit {
            return Err(StoreError::LockTableFull);
        }
        match self.inner.locks.try_acquire(self.id, key, strength) {
            Ok(true) => {
                if new {
                    self.lock_bytes += 2 * key.len() as u64 + 128;
                    self.held.insert(key.to_vec());
                }
                Ok(true)
            }
            Ok(false) if self.lock_wait == LockWait::SkipLocked => Ok(false),
            Ok(false) => {
                Stats::add(&self.inner.stats.lock_timeouts, 1);
                Err(StoreError::LockWaitTimeout)
            }
            Err(LockError::Interrupted) => Err(StoreError::Interrupted),
            Err(_) => Err(StoreError::LockWaitTimeout),
        }
    }

    fn lock(&mut self, key: &[u8], strength: Strength) -> Result<()> {
        let new = !self.held.contains(key);
        if new && self.lock_bytes > self.write_limit {
            return Err(StoreError::LockTableFull);
        }
        match self
            .inner
            .locks
            .acquire(self.id, key, strength, self.lock_timeout, &self.inner.stats)
        {
            Ok(_) => {
                if new {
                    // The key in `held` and in the lock manager's table, with their overhead.
                    self.lock_bytes += 2 * key.len() as u64 + 128;
                    self.held.insert(key.to_vec());
                }
                Ok(())
            }
            Err(LockError::Deadlock) => {
                self.rollback();
                Err(StoreError::Deadlock)
            }
            Err(LockError::Timeout) => {
                Stats::add(&self.inner.stats.lock_timeouts, 1);
                Err(StoreError::LockWaitTimeout)
            }
            Err(LockError::Interrupted) => {
                self.killed.store(false, Ordering::SeqCst);
                Err(StoreError::Interrupted)
            }
        }
    }

    /// Whether the transaction keeps a snapshot and an iterator on it (for the drop-order
    /// tests of `engine::snapshot`).
    #[cfg(test)]
    pub(crate) fn holds_snapshot_iterator(&self) -> bool {
        self.snap.is_some() && self.snap_iter.is_some()
    }

    /// The transaction's snapshot, if it has read (tests of `engine::snapshot`).
    #[cfg(test)]
    pub(crate) fn snapshot(&self) -> Option<&Snapshot> {
        self.snap.as_ref()
    }

    fn ensure_snapshot(&mut self) {
        if self.snap.is_none() {
            self.snap = Some(Snapshot::latest(&self.inner));
        }
    }

    fn buf_put(&mut self, key: Vec<u8>, val: Option<Vec<u8>>) {
        // The key twice (buffer and undo), the value, the previous value kept for undo, and
        // the tree's and list's per-entry overhead.
        let len = |v: &Option<Vec<u8>>| v.as_ref().map_or(0, Vec::len) as u64;
        self.write_bytes += 2 * key.len() as u64 + len(&val) + 96;
        let prev = self.writes.insert(key.clone(), val);
        if let Some(p) = &prev {
            self.write_bytes += len(p);
        }
        self.undo.push((key, prev));
    }

    /// Latest committed value merged with the own buffer (current read).
    fn read_latest(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(v) = self.writes.get(key) {
            return Ok(v.clone());
        }
        self.inner.get(key, None)
    }

    /// Snapshot value merged with the own buffer (consistent read). Call `ensure_snapshot` first.
    fn read_snap(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(v) = self.writes.get(key) {
            return Ok(v.clone());
        }
        self.inner.get(key, self.snap.as_ref())
    }

    fn effective_lock(&self, lock: LockMode) -> LockMode {
        if lock == LockMode::None && self.isolation == Isolation::Serializable {
            LockMode::Shared
        } else {
            lock
        }
    }

    fn decode(t: &TableDef, types: &[ColumnType], pk: &[u8], v: &[u8]) -> Result<Row> {
        Self::decode_cols(t, types, pk, v, None)
    }

    /// The row an index entry (`ik` under the index's prefix, its value the primary key `pk`)
    /// gives: the index's and the primary key's columns, every other column NULL. Collated
    /// string columns come out as their weights: callers read them only where
    /// [`TableDef::index_covers`] says they are not wanted.
    fn decode_entry(
        t: &TableDef,
        ix: &catalog::IndexDef,
        index_types: &[ColumnType],
        pk_types: &[ColumnType],
        ik: &[u8],
        pk: &[u8],
    ) -> Result<Row> {
        let corrupt = |e: String| StoreError::Corrupt(format!("index {}: {e}", ix.name));
        let plen = catalog::index_prefix(ix.id).len();
        let (ivals, _) = decode_key(index_types, &ik[plen..]).map_err(corrupt)?;
        let mut values = vec![Datum::Null; t.columns.len()];
        for (&c, v) in ix.columns.iter().zip(ivals) {
            values[c] = v;
        }
        if let Some(cols) = &t.primary_key {
            let (pvals, _) = decode_key(pk_types, pk).map_err(corrupt)?;
            for (&c, v) in cols.iter().zip(pvals) {
                values[c] = v;
            }
        }
        Ok(Row {
            key: RowKey(pk.to_vec()),
            values,
        })
    }

    /// [`Self::decode`] of the columns `want` marks (the rest read as NULL; see
    /// [`decode_stored_cols`]).
    fn decode_cols(
        t: &TableDef,
        types: &[ColumnType],
        pk: &[u8],
        v: &[u8],
        want: Option<&[bool]>,
    ) -> Result<Row> {
        let values = decode_stored_cols(t, types, v, want).map_err(StoreError::Corrupt)?;
        Ok(Row {
            key: RowKey(pk.to_vec()),
            values,
        })
    }

    /// Point read by primary key values (`[Datum::UInt(id)]` for tables without a primary
    /// key). A key value that cannot be stored in the key column matches nothing.
    pub fn get(&mut self, table: &TableDef, pk: &[Datum], lock: LockMode) -> Result<Option<Row>> {
        self.get_cols(table, pk, lock, None)
    }

    /// [`Self::get`] decoding only the columns `want` marks (the others read as NULL): for
    /// readers that know which columns they use.
    pub fn get_cols(
        &mut self,
        table: &TableDef,
        pk: &[Datum],
        lock: LockMode,
        want: Option<&[bool]>,
    ) -> Result<Option<Row>> {
        match self.point_key(table, pk)? {
            Some(k) => self.get_by_key_cols(table, &k, lock, want),
            None => Ok(None),
        }
    }

    /// The primary key a point read by `pk` looks up; `None` when a value cannot be stored
    /// in its key column (such a key matches no row).
    fn point_key(&mut self, table: &TableDef, pk: &[Datum]) -> Result<Option<RowKey>> {
        match RowKey::from_values(table, pk) {
            Ok(k) => Ok(Some(k)),
            Err(StoreError::BadValue { .. }) => {
                self.check_active()?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// [`Self::get_cols`] handing the row undecoded to `f` ([`RawRow`], whose
    /// [`RawRow::decode_each`] visits the columns `want` marks): `None` when there is no such
    /// row, else what `f` returned.
    pub fn get_each<R>(
        &mut self,
        table: &TableDef,
        pk: &[Datum],
        lock: LockMode,
        want: Option<&[bool]>,
        f: impl FnOnce(&RawRow<'_>) -> R,
    ) -> Result<Option<R>> {
        let Some(key) = self.point_key(table, pk)? else {
            return Ok(None);
        };
        self.check_active()?;
        let t = self.inner.table_by_id(table)?;
        let Some(v) = self.read_row(t.id, &key, lock)? else {
            return Ok(None);
        };
        Stats::add(&self.inner.stats.rows_read, 1);
        Ok(Some(f(&RawRow {
            def: &t,
            key: &key.0,
            data: &v,
            want,
        })))
    }

    /// The stored row under primary key `key` of table `id`, read as `lock` says (a locking
    /// read that finds the row gone or locked past a skip returns `None`).
    fn read_row(&mut self, id: u32, key: &RowKey, lock: LockMode) -> Result<Option<Vec<u8>>> {
        let dk = row_key(id, &key.0);
        match self.effective_lock(lock) {
            LockMode::None => {
                self.ensure_snapshot();
                self.read_snap(&dk)
            }
            lock => {
                let s = if lock == LockMode::Shared {
                    Strength::Shared
                } else {
                    Strength::Exclusive
                };
                if !self.lock_read(&dk, s)? {
                    return Ok(None);
                }
                self.read_latest(&dk)
            }
        }
    }

    /// Point read by encoded primary key.
    pub fn get_by_key(
        &mut self,
        table: &TableDef,
        key: &RowKey,
        lock: LockMode,
    ) -> Result<Option<Row>> {
        self.get_by_key_cols(table, key, lock, None)
    }

    fn get_by_key_cols(
        &mut self,
        table: &TableDef,
        key: &RowKey,
        lock: LockMode,
        want: Option<&[bool]>,
    ) -> Result<Option<Row>> {
        self.check_active()?;
        let t = self.inner.table_by_id(table)?;
        match self.read_row(t.id, key, lock)? {
            None => Ok(None),
            Some(v) => {
                Stats::add(&self.inner.stats.rows_read, 1);
                Ok(Some(Self::decode_cols(
                    &t,
                    &column_types(&t),
                    &key.0,
                    &v,
                    want,
                )?))
            }
        }
    }

    /// Validates and coerces a full row; fills the AUTO_INCREMENT column when it is NULL or 0.
    /// `assign_auto`: fill a NULL/0 AUTO_INCREMENT value (INSERT); UPDATE stores values as given.
    fn prepare_row(
        &self,
        t: &TableDef,
        mut values: Vec<Datum>,
        assign_auto: bool,
    ) -> Result<(Vec<Datum>, Option<u64>)> {
        if values.len() != t.columns.len() {
            return Err(StoreError::BadValue {
                column: t.name.clone(),
                detail: format!("expected {} values, got {}", t.columns.len(), values.len()),
            });
        }
        let mut auto_id = None;
        if let Some(ai) = t.auto_increment_column().filter(|_| assign_auto) {
            let zero = matches!(values[ai], Datum::Null | Datum::Int(0) | Datum::UInt(0));
            if zero {
                let id = self.inner.alloc_counter(b'A', t, 1)?;
                values[ai] = Datum::UInt(id);
                auto_id = Some(id);
            }
        }
        let mut out = Vec::with_capacity(values.len());
        for (c, v) in t.columns.iter().zip(values) {
            let v = c.ty.coerce(v).map_err(|detail| StoreError::BadValue {
                column: c.name.clone(),
                detail,
            })?;
            if v.is_null() && !c.nullable {
                return Err(StoreError::NullNotAllowed(c.name.clone()));
            }
            out.push(v);
        }
        if auto_id.is_none() {
            if let Some(ai) = t.auto_increment_column() {
                let used = match out[ai] {
                    Datum::Int(v) if v > 0 => Some(v as u64),
                    Datum::UInt(v) => Some(v),
                    _ => None,
                };
                if let Some(u) = used {
                    self.inner.observe_counter(b'A', t, u)?;
                }
            }
        }
        Ok((out, auto_id))
    }

    /// If the unique slot `ik` is taken by a row other than `own_pk`, returns that row.
    fn unique_owner(&self, t: &TableDef, ik: &[u8], own_pk: Option<&[u8]>) -> Result<Option<Row>> {
        let Some(pk) = self.read_latest(ik)? else {
            return Ok(None);
        };
        if Some(&pk[..]) == own_pk {
            return Ok(None);
        }
        match self.read_latest(&row_key(t.id, &pk))? {
            Some(v) => Ok(Some(Self::decode(t, &column_types(t), &pk, &v)?)),
            None => Ok(None),
        }
    }

    /// Inserts a full row (values for every column, in order). Fails with
    /// [`StoreError::DuplicateKey`] (1062) on a PRIMARY/UNIQUE collision.
    pub fn insert(
        &mut self,
        table: &TableDef,
        values: Vec<Datum>,
    ) -> Result<(RowKey, Option<u64>)> {
        match self.try_insert(table, values)? {
            InsertOutcome::Inserted { key, auto_id } => Ok((key, auto_id)),
            InsertOutcome::Duplicate {
                key_name,
                error_value,
                ..
            } => Err(StoreError::DuplicateKey {
                key_name,
                value: error_value,
            }),
        }
    }

    /// Inserts a full row, or reports the conflicting row (see [`InsertOutcome`]).
    pub fn try_insert(&mut self, table: &TableDef, values: Vec<Datum>) -> Result<InsertOutcome> {
        self.check_active()?;
        self.check_write_limit()?;
        let t = self.inner.table_by_id(table)?;
        let (row, auto_id) = self.prepare_row(&t, values, true)?;
        let pk = match pk_of_row(&t, &row) {
            Some(pk) => {
                let dk = row_key(t.id, &pk);
                self.lock(&dk, Strength::Exclusive)?;
                if let Some(v) = self.read_latest(&dk)? {
                    let existing = Self::decode(&t, &column_types(&t), &pk, &v)?;
                    let StoreError::DuplicateKey { key_name, value } = dup_error(&t, None, &row)
                    else {
                        unreachable!()
                    };
                    return Ok(InsertOutcome::Duplicate {
                        key_name,
                        existing,
                        error_value: value,
                    });
                }
                pk
            }
            None => {
                let id = self.inner.alloc_counter(b'H', &t, 1)?;
                encode_key(&[Datum::UInt(id)])
            }
        };
        let mut entries = Vec::with_capacity(t.indexes.len());
        for ix in &t.indexes {
            let (ik, slot) = index_entry_key(&t, ix, &row, &pk);
            if slot {
                self.lock(&ik, Strength::Exclusive)?;
                if let Some(existing) = self.unique_owner(&t, &ik, None)? {
                    let StoreError::DuplicateKey { key_name, value } =
                        dup_error(&t, Some(ix), &row)
                    else {
                        unreachable!()
                    };
                    return Ok(InsertOutcome::Duplicate {
                        key_name,
                        existing,
                        error_value: value,
                    });
                }
            }
            entries.push(ik);
        }
        self.buf_put(row_key(t.id, &pk), Some(encode_row(&row)));
        for ik in entries {
            self.buf_put(ik, Some(pk.clone()));
        }
        Stats::add(&self.inner.stats.rows_inserted, 1);
        Ok(InsertOutcome::Inserted {
            key: RowKey(pk),
            auto_id,
        })
    }

    /// Replaces the row with key `key` by `new_values` (a full row; the primary key may change).
    /// Locks the row and reads its latest version; returns `false` if it no longer exists.
    /// Index entries are maintained; a new PRIMARY/UNIQUE value that collides fails with 1062.
    pub fn update(
        &mut self,
        table: &TableDef,
        key: &RowKey,
        new_values: Vec<Datum>,
    ) -> Result<bool> {
        self.check_active()?;
        self.check_write_limit()?;
        let t = self.inner.table_by_id(table)?;
        let types = column_types(&t);
        let old_dk = row_key(t.id, &key.0);
        self.lock(&old_dk, Strength::Exclusive)?;
        let Some(old_v) = self.read_latest(&old_dk)? else {
            return Ok(false);
        };
        let old = decode_stored(&t, &types, &old_v).map_err(StoreError::Corrupt)?;
        let (row, _) = self.prepare_row(&t, new_values, false)?;
        let new_pk = pk_of_row(&t, &row).unwrap_or_else(|| key.0.clone());
        let new_dk = row_key(t.id, &new_pk);
        if new_pk != key.0 {
            self.lock(&new_dk, Strength::Exclusive)?;
            if self.read_latest(&new_dk)?.is_some() {
                return Err(dup_error(&t, None, &row));
            }
        }
        let mut changes: Vec<(Option<Vec<u8>>, Vec<u8>)> = Vec::new();
        for ix in &t.indexes {
            let (old_ik, old_slot) = index_entry_key(&t, ix, &old, &key.0);
            let (new_ik, new_slot) = index_entry_key(&t, ix, &row, &new_pk);
            if old_ik == new_ik && new_pk == key.0 {
                continue;
            }
            if new_slot && new_ik != old_ik {
                self.lock(&new_ik, Strength::Exclusive)?;
                if self.unique_owner(&t, &new_ik, Some(&key.0))?.is_some() {
                    return Err(dup_error(&t, Some(ix), &row));
                }
            }
            if old_slot {
                self.lock(&old_ik, Strength::Exclusive)?;
            }
            changes.push(((old_ik != new_ik).then_some(old_ik), new_ik));
        }
        if new_pk != key.0 {
            self.buf_put(old_dk, None);
        }
        for (old_ik, new_ik) in changes {
            if let Some(o) = old_ik {
                self.buf_put(o, None);
            }
            self.buf_put(new_ik, Some(new_pk.clone()));
        }
        self.buf_put(new_dk, Some(encode_row(&row)));
        Stats::add(&self.inner.stats.rows_updated, 1);
        Ok(true)
    }

    /// Deletes the row with key `key` (locking it); returns `false` if it does not exist.
    pub fn delete(&mut self, table: &TableDef, key: &RowKey) -> Result<bool> {
        self.check_active()?;
        self.check_write_limit()?;
        let t = self.inner.table_by_id(table)?;
        let dk = row_key(t.id, &key.0);
        self.lock(&dk, Strength::Exclusive)?;
        let Some(v) = self.read_latest(&dk)? else {
            return Ok(false);
        };
        let old = decode_stored(&t, &column_types(&t), &v).map_err(StoreError::Corrupt)?;
        let mut entries = Vec::new();
        for ix in &t.indexes {
            let (ik, slot) = index_entry_key(&t, ix, &old, &key.0);
            if slot {
                self.lock(&ik, Strength::Exclusive)?;
            }
            entries.push(ik);
        }
        for ik in entries {
            self.buf_put(ik, None);
        }
        self.buf_put(dk, None);
        Stats::add(&self.inner.stats.rows_deleted, 1);
        Ok(true)
    }

    /// Primary-key range scan in key order, up to `limit` rows.
    pub fn scan_pk(
        &mut self,
        table: &TableDef,
        range: &KeyRange,
        lock: LockMode,
        limit: Option<usize>,
    ) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        let limit = limit.unwrap_or(usize::MAX);
        if limit == 0 {
            return Ok(out);
        }
        let opts = ScanOpts::default();
        self.scan_pk_inner(table, range, lock, limit.min(SCAN_CHUNK), opts, |r| {
            out.push(std::mem::take(r));
            Ok(out.len() < limit)
        })?;
        Ok(out)
    }

    /// Primary-key range scan calling `f` per row in key order until it returns `false`.
    pub fn scan_pk_with(
        &mut self,
        table: &TableDef,
        range: &KeyRange,
        lock: LockMode,
        mut f: impl FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        self.scan_pk_inner(table, range, lock, SCAN_CHUNK, ScanOpts::default(), |r| {
            f(std::mem::take(r))
        })
    }

    /// [`Self::scan_pk_with`] with [`ScanOpts`]: only some columns decoded, or in descending
    /// key order.
    pub fn scan_pk_opts(
        &mut self,
        table: &TableDef,
        range: &KeyRange,
        lock: LockMode,
        opts: ScanOpts<'_>,
        mut f: impl FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        self.scan_pk_inner(table, range, lock, SCAN_CHUNK, opts, |r| {
            f(std::mem::take(r))
        })
    }

    /// [`Self::scan_pk_opts`] handing each row undecoded ([`RawRow`]): `f` decodes the
    /// columns it reads straight into its own row form ([`RawRow::decode_each`]), with no row
    /// vector built and emptied per row.
    pub fn scan_pk_each(
        &mut self,
        table: &TableDef,
        range: &KeyRange,
        lock: LockMode,
        opts: ScanOpts<'_>,
        f: impl FnMut(&RawRow<'_>) -> Result<bool>,
    ) -> Result<()> {
        self.scan_pk_raw(table, range, lock, SCAN_CHUNK, opts, f)
    }

    /// [`Self::scan_pk_raw`] decoding each row into one reused [`Row`].
    fn scan_pk_inner(
        &mut self,
        table: &TableDef,
        range: &KeyRange,
        lock: LockMode,
        chunk: usize,
        opts: ScanOpts<'_>,
        mut f: impl FnMut(&mut Row) -> Result<bool>,
    ) -> Result<()> {
        let mut row = Row::default();
        self.scan_pk_raw(table, range, lock, chunk, opts, |raw| {
            row.key.0.clear();
            row.key.0.extend_from_slice(raw.key);
            row.values.clear();
            row.values.resize(raw.def.columns.len(), Datum::Null);
            raw.decode_each(|i, d| row.values[i] = d)?;
            f(&mut row)
        })
    }

    fn scan_pk_raw(
        &mut self,
        table: &TableDef,
        range: &KeyRange,
        lock: LockMode,
        chunk: usize,
        opts: ScanOpts<'_>,
        mut f: impl FnMut(&RawRow<'_>) -> Result<bool>,
    ) -> Result<()> {
        self.check_active()?;
        let t = self.inner.table_by_id(table)?;
        let prefix = t.rows_prefix();
        let (from, to) = encode_range(&prefix, &t.pk_types(), &t.pk_weighted(), range)?;
        let lock = self.effective_lock(lock);
        let strength = match lock {
            LockMode::None => None,
            LockMode::Shared => Some(Strength::Shared),
            LockMode::Exclusive => Some(Strength::Exclusive),
        };
        if strength.is_none() {
            self.ensure_snapshot();
            let span = (Bound::Included(&from[..]), Bound::Excluded(&to[..]));
            let own_writes = self.writes.range::<[u8], _>(span).next().is_some();
            if !opts.reverse && !own_writes {
                // A plain read of committed rows only: each row is handed over straight from
                // the iterator (no chunk, no copies of keys and values).
                let snap = self.snap.clone().expect("snapshot taken above");
                let iter = Some(&mut self.snap_iter);
                let mut read = 0u64;
                let r = snap.scan_with(&from, Some(&to), true, iter, &mut |k, v| {
                    read += 1;
                    f(&RawRow {
                        def: &t,
                        key: opts.key_of(&k[prefix.len()..]),
                        data: v,
                        want: opts.cols,
                    })
                });
                // Counted once per scan: a shared counter bumped per row bounced its cache
                // line between the cores running scans.
                Stats::add(&self.inner.stats.rows_read, read);
                return r;
            }
        }
        let mut read = 0u64;
        let r = self.scan_pk_chunks(
            &t,
            &prefix,
            (from, to),
            strength,
            chunk,
            opts,
            &mut read,
            &mut f,
        );
        Stats::add(&self.inner.stats.rows_read, read);
        r
    }

    /// The chunked part of [`Self::scan_pk_inner`] (locking reads, reverse order, or a range
    /// with the transaction's own writes), counting the rows it hands over in `read`.
    #[allow(clippy::too_many_arguments)]
    fn scan_pk_chunks(
        &mut self,
        t: &TableDef,
        prefix: &[u8],
        (mut from, mut to): (Vec<u8>, Vec<u8>),
        strength: Option<Strength>,
        chunk: usize,
        opts: ScanOpts<'_>,
        read: &mut u64,
        f: &mut impl FnMut(&RawRow<'_>) -> Result<bool>,
    ) -> Result<()> {
        loop {
            let (entries, next) =
                self.chunk(&from, &to, opts.reverse, strength.is_none(), chunk)?;
            for (k, v) in entries {
                let v = match strength {
                    None => v,
                    Some(s) => {
                        if !self.lock_read(&k, s)? {
                            continue;
                        }
                        match self.read_latest(&k)? {
                            Some(v) => v,
                            None => continue,
                        }
                    }
                };
                *read += 1;
                let raw = RawRow {
                    def: t,
                    key: opts.key_of(&k[prefix.len()..]),
                    data: &v,
                    want: opts.cols,
                };
                if !f(&raw)? {
                    return Ok(());
                }
            }
            match next {
                Some(c) if opts.reverse => to = c,
                Some(c) => from = c,
                None => return Ok(()),
            }
        }
    }

    /// Secondary-index range scan (by index name) in index order, up to `limit` rows.
    pub fn scan_index(
        &mut self,
        table: &TableDef,
        index: &str,
        range: &KeyRange,
        lock: LockMode,
        limit: Option<usize>,
    ) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        let limit = limit.unwrap_or(usize::MAX);
        if limit == 0 {
            return Ok(out);
        }
        self.scan_index_inner(
            table,
            index,
            range,
            lock,
            limit.min(SCAN_CHUNK),
            ScanOpts::default(),
            |r| {
                out.push(r);
                Ok(out.len() < limit)
            },
        )?;
        Ok(out)
    }

    /// Secondary-index range scan calling `f` per row (index order, then primary key order for
    /// equal index values) until it returns `false`.
    pub fn scan_index_with(
        &mut self,
        table: &TableDef,
        index: &str,
        range: &KeyRange,
        lock: LockMode,
        f: impl FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        self.scan_index_inner(
            table,
            index,
            range,
            lock,
            SCAN_CHUNK,
            ScanOpts::default(),
            f,
        )
    }

    /// [`Self::scan_index_with`] with [`ScanOpts`] (descending: index order reversed, equal
    /// index values by descending primary key).
    pub fn scan_index_opts(
        &mut self,
        table: &TableDef,
        index: &str,
        range: &KeyRange,
        lock: LockMode,
        opts: ScanOpts<'_>,
        f: impl FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        self.scan_index_inner(table, index, range, lock, SCAN_CHUNK, opts, f)
    }

    #[allow(clippy::too_many_arguments)]
    fn scan_index_inner(
        &mut self,
        table: &TableDef,
        index: &str,
        range: &KeyRange,
        lock: LockMode,
        chunk: usize,
        opts: ScanOpts<'_>,
        mut f: impl FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        self.check_active()?;
        let t = self.inner.table_by_id(table)?;
        let ix = t
            .index(index)
            .cloned()
            .ok_or_else(|| StoreError::NoSuchIndex(index.to_string()))?;
        let types = column_types(&t);
        let prefix = catalog::index_prefix(ix.id);
        let (from, to) = encode_range(&prefix, &t.index_types(&ix), &t.index_weighted(&ix), range)?;
        let lock = self.effective_lock(lock);
        let strength = match lock {
            LockMode::None => None,
            LockMode::Shared => Some(Strength::Shared),
            LockMode::Exclusive => Some(Strength::Exclusive),
        };
        if strength.is_none() {
            self.ensure_snapshot();
        }
        // A plain read whose columns the entries hold reads the index alone (no row fetch).
        let covering = strength.is_none() && opts.cols.is_some_and(|w| t.index_covers(&ix, w));
        let (index_types, pk_types) = (t.index_types(&ix), t.pk_types());
        let (mut from, mut to) = (from, to);
        // Counted once per scan, not per row (see `scan_pk_inner`).
        let (mut read, mut lookups) = (0u64, 0u64);
        let mut scan = || -> Result<()> {
            loop {
                let (entries, next) =
                    self.chunk(&from, &to, opts.reverse, strength.is_none(), chunk)?;
                for (ik, pk) in entries {
                    if covering {
                        let row = Self::decode_entry(&t, &ix, &index_types, &pk_types, &ik, &pk)?;
                        read += 1;
                        if !f(row)? {
                            return Ok(());
                        }
                        continue;
                    }
                    lookups += 1;
                    let dk = row_key(t.id, &pk);
                    let v = match strength {
                        None => match self.read_snap(&dk)? {
                            Some(v) => v,
                            None => continue,
                        },
                        Some(s) => {
                            if !self.lock_read(&dk, s)? {
                                continue;
                            }
                            match self.read_latest(&dk)? {
                                Some(v) => v,
                                None => continue,
                            }
                        }
                    };
                    let want = if strength.is_some() { None } else { opts.cols };
                    let row = Self::decode_cols(&t, &types, &pk, &v, want)?;
                    if strength.is_some() && index_entry_key(&t, &ix, &row.values, &pk).0 != ik {
                        continue; // changed since the index entry was read
                    }
                    read += 1;
                    if !f(row)? {
                        return Ok(());
                    }
                }
                match next {
                    Some(c) if opts.reverse => to = c,
                    Some(c) => from = c,
                    None => return Ok(()),
                }
            }
        };
        let r = scan();
        Stats::add(&self.inner.stats.rows_read, read);
        Stats::add(&self.inner.stats.index_row_lookups, lookups);
        r
    }

    /// Up to one chunk of entries in `[from, to)`: committed entries (snapshot or latest)
    /// merged with the buffer (buffer wins; deletions hide). Returns the cursor to continue
    /// from, or `None` when the range is exhausted.
    /// The next chunk of `[from, to)` in the scan's direction, and the bound to continue from
    /// (the new `from` going forward, the new `to` in reverse), `None` when the range is done.
    #[allow(clippy::type_complexity)]
    fn chunk(
        &mut self,
        from: &[u8],
        to: &[u8],
        reverse: bool,
        use_snapshot: bool,
        chunk: usize,
    ) -> Result<(Vec<(Vec<u8>, Vec<u8>)>, Option<Vec<u8>>)> {
        if reverse {
            self.merged_chunk_rev(from, to, use_snapshot, chunk)
        } else {
            self.merged_chunk(from, to, use_snapshot, chunk)
        }
    }

    /// [`Self::merged_chunk`] in descending key order: up to `chunk` committed entries of
    /// `[from, to)` from the top, merged with the buffer over the same span. The returned bound
    /// is the lowest key read: the next chunk is `[from, that)`.
    #[allow(clippy::type_complexity)]
    fn merged_chunk_rev(
        &mut self,
        from: &[u8],
        to: &[u8],
        use_snapshot: bool,
        chunk: usize,
    ) -> Result<(Vec<(Vec<u8>, Vec<u8>)>, Option<Vec<u8>>)> {
        let chunk = chunk.max(1);
        let db = match (use_snapshot, &self.snap) {
            (true, Some(snap)) => snap.scan_chunk_rev(from, to, chunk, true)?,
            _ => Snapshot::new(&self.inner).scan_chunk_rev(from, to, chunk, true)?,
        };
        let (low, next) = match (db.len() == chunk, db.last()) {
            (true, Some((last, _))) => (last.clone(), Some(last.clone())),
            _ => (from.to_vec(), None),
        };
        if self.writes.is_empty() {
            return Ok((db, next));
        }
        let mut buf = self
            .writes
            .range::<Vec<u8>, _>((Bound::Included(low), Bound::Excluded(to.to_vec())))
            .rev()
            .peekable();
        let mut out = Vec::with_capacity(db.len());
        let mut dbi = db.into_iter().peekable();
        loop {
            // Highest key first; on a tie the buffer's version wins.
            let ord = match (dbi.peek(), buf.peek()) {
                (None, None) => break,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some((dk, _)), Some((bk, _))) => (*bk).cmp(dk),
            };
            if ord == std::cmp::Ordering::Equal {
                dbi.next();
            }
            if ord != std::cmp::Ordering::Less {
                let (k, v) = buf.next().expect("peeked");
                if let Some(v) = v {
                    out.push((k.clone(), v.clone()));
                }
            } else {
                out.push(dbi.next().expect("peeked"));
            }
        }
        Ok((out, next))
    }

    #[allow(clippy::type_complexity)]
    fn merged_chunk(
        &mut self,
        from: &[u8],
        to: &[u8],
        use_snapshot: bool,
        chunk: usize,
    ) -> Result<(Vec<(Vec<u8>, Vec<u8>)>, Option<Vec<u8>>)> {
        let chunk = chunk.max(1);
        let db = match (use_snapshot, &self.snap) {
            (true, Some(snap)) => {
                snap.scan_chunk(from, Some(to), chunk, true, Some(&mut self.snap_iter))?
            }
            // Current reads: the latest committed state, on a snapshot of its own.
            _ => Snapshot::new(&self.inner).scan_chunk(from, Some(to), chunk, true, None)?,
        };
        let full = db.len() == chunk;
        let (buf_end, next) = match (full, db.last()) {
            (true, Some((last, _))) => {
                let mut n = last.clone();
                n.push(0);
                (Bound::Included(last.clone()), Some(n))
            }
            _ => (Bound::Excluded(to.to_vec()), None),
        };
        if self.writes.is_empty() {
            // Nothing of ours to merge (every read-only transaction).
            return Ok((db, next));
        }
        let mut buf = self
            .writes
            .range::<Vec<u8>, _>((Bound::Included(from.to_vec()), buf_end))
            .peekable();
        let mut out = Vec::with_capacity(db.len());
        let mut dbi = db.into_iter().peekable();
        loop {
            let ord = match (dbi.peek(), buf.peek()) {
                (None, None) => break,
                (Some(_), None) => std::cmp::Ordering::Greater,
                (None, Some(_)) => std::cmp::Ordering::Less,
                (Some((dk, _)), Some((bk, _))) => (*bk).cmp(dk),
            };
            if ord == std::cmp::Ordering::Equal {
                dbi.next(); // overridden by the buffer
            }
            let take_buf = ord != std::cmp::Ordering::Greater;
            if take_buf {
                let (k, v) = buf.next().expect("peeked");
                if let Some(v) = v {
                    out.push((k.clone(), v.clone()));
                }
            } else {
                out.push(dbi.next().expect("peeked"));
            }
        }
        Ok((out, next))
    }
}

/// How a range scan reads (see [`Transaction::scan_pk_opts`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct ScanOpts<'a> {
    /// The columns to decode, by position; the others read as NULL (`None`: every column). A
    /// locking index scan decodes every column anyway, to recheck the index entry.
    pub cols: Option<&'a [bool]>,
    /// Descending key order: `ORDER BY key DESC` without a sort.
    pub reverse: bool,
    /// The caller never reads [`Row::key`] (a query's reads; not UPDATE or DELETE, which
    /// write back by key): rows come with an empty key, sparing a copy per row.
    pub no_keys: bool,
}

impl ScanOpts<'_> {
    /// The primary key a scanned row carries: `pk`, or nothing when the caller reads no keys.
    fn key_of<'k>(&self, pk: &'k [u8]) -> &'k [u8] {
        if self.no_keys {
            &[]
        } else {
            pk
        }
    }
}

/// A row as a primary-key scan reads it ([`Transaction::scan_pk_each`]): its key and its
/// stored bytes, decoded by the one who reads it.
pub struct RawRow<'a> {
    def: &'a TableDef,
    /// The primary key, as [`Row::key`] (empty with [`ScanOpts::no_keys`]).
    key: &'a [u8],
    /// The stored row ([`crate::codec`]'s row format).
    data: &'a [u8],
    /// The scan's [`ScanOpts::cols`].
    want: Option<&'a [bool]>,
}

impl RawRow<'_> {
    /// The row's primary key (see [`Row::key`]).
    pub fn key(&self) -> &[u8] {
        self.key
    }

    /// `f(i, value)` for each column `i` the scan's [`ScanOpts::cols`] marks (every column
    /// without it), in column order ([`crate::codec::decode_stored_each`]).
    #[inline]
    pub fn decode_each(&self, f: impl FnMut(usize, Datum)) -> Result<()> {
        decode_stored_each(self.def, self.data, self.want, f).map_err(StoreError::Corrupt)
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        self.rollback();
    }
}

/// Encodes a [`KeyRange`] under `prefix` into a byte range `[from, to)` (`weighted`: which key
/// columns are collation weights).
fn encode_range(
    prefix: &[u8],
    types: &[ColumnType],
    weighted: &[bool],
    r: &KeyRange,
) -> Result<(Vec<u8>, Vec<u8>)> {
    let enc = |vals: &Vec<Datum>| -> Result<Vec<u8>> {
        if vals.len() > types.len() {
            return Err(StoreError::BadValue {
                column: "key".into(),
                detail: format!(
                    "range has {} values for a {}-column key",
                    vals.len(),
                    types.len()
                ),
            });
        }
        let vals = coerce_values(&types[..vals.len()], vals, "key")?;
        let mut k = prefix.to_vec();
        k.extend_from_slice(&encode_key_weighted(&vals, weighted));
        Ok(k)
    };
    let end_all = prefix_successor(prefix).expect("prefix has a successor");
    let from = match &r.start {
        Bound::Unbounded => prefix.to_vec(),
        Bound::Included(v) => enc(v)?,
        Bound::Excluded(v) => prefix_successor(&enc(v)?).unwrap_or_else(|| end_all.clone()),
    };
    let to = match &r.end {
        Bound::Unbounded => end_all.clone(),
        Bound::Included(v) => prefix_successor(&enc(v)?).unwrap_or_else(|| end_all.clone()),
        Bound::Excluded(v) => enc(v)?,
    };
    Ok((from, to))
}
