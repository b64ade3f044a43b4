//! Snapshots and iterators on them that own what they borrow: the store's only lifetime
//! transmutes, and why they are sound.
//!
//! # The problem
//!
//! The `rocksdb` crate ties a snapshot and an iterator to the database by a borrow
//! (`SnapshotWithThreadMode<'a, DB>`, `DBRawIteratorWithThreadMode<'a, DB>`). A transaction
//! keeps its snapshot from its first read to its end, across statements and pool threads, and
//! keeps one iterator on it between range scans (creating a RocksDB iterator, an arena and a
//! merging iterator over every memtable and file, cost about 5 % of server CPU in sysbench
//! read-write, where each transaction runs four range scans on one snapshot). Neither can
//! borrow the database for that long: the database is in an `Arc<Inner>` the transaction
//! shares, and a struct cannot borrow from its own field.
//!
//! # The answer
//!
//! Two types hold the borrowed object with its lifetime erased to `'static`, next to an owning
//! handle to what it borrows:
//!
//! * [`Snapshot`] is an `Arc` of the RocksDB snapshot **and an `Arc<Inner>`**, the owner of the
//!   database. Cloning it is cheap; the snapshot is released when the last clone goes.
//! * [`SnapshotIter`] is a RocksDB iterator **and a [`Snapshot`]**, the one it reads.
//!
//! SAFETY, the invariants both transmutes rely on:
//!
//! 1. **What owns what.** The snapshot's borrow of `Inner::db` is covered by the `Arc<Inner>`
//!    in the same `Pinned`; the iterator's borrows (of `Inner::db`, and of the snapshot through
//!    its read options) by the `Snapshot` in the same `SnapshotIter`, which owns that
//!    `Arc<Inner>` in turn. `Inner` is heap-allocated in its `Arc` and never moves, so the
//!    `&DB` stays valid for as long as any of these lives, whatever order the owners (a
//!    transaction, the last `Engine` handle, a local in CHECK TABLE) are dropped in.
//! 2. **Drop order.** Rust drops struct fields in declaration order: `Pinned` releases the
//!    snapshot before its `Arc<Inner>` (which may be the last one, closing the database);
//!    `SnapshotIter` drops the iterator before its `Snapshot`. Reordering either pair's fields
//!    is the bug this module must never have.
//! 3. **Nothing escapes with `'static`.** The erased objects are private fields. Callers get
//!    the snapshot back only as `&SnapshotWithThreadMode<'_, DB>`, shortened to their borrow of
//!    the `Snapshot`, and the iterator only through [`SnapshotIter`]'s own methods: handing out
//!    `&mut` to the `'static` iterator would let safe code swap it with another one.
//! 4. **An iterator reads its own snapshot.** [`SnapshotIter::new`] sets the snapshot into the
//!    read options itself, so no iterator reads a snapshot it does not keep alive.
//!
//! Miri cannot run RocksDB's C++, so the tests drop engines, transactions, snapshots and
//! iterators in every order and read through the survivors, checking that the database stays
//! open (the datadir stays locked) exactly while anything needs it, that RocksDB's count of live
//! snapshots follows the holders, and that the database closes when the last one goes. Swapping
//! the fields of either pair makes that test crash (SIGSEGV, or SIGABRT with "pthread lock:
//! Invalid argument"), as tried when it was written.

use super::Inner;
use rocksdb::{DBRawIteratorWithThreadMode, ReadOptions, SnapshotWithThreadMode, DB};
use std::sync::{Arc, PoisonError, RwLock};

/// A RocksDB snapshot that keeps its database open (see the module docs). Cheap to clone.
#[derive(Clone)]
pub(crate) struct Snapshot(Arc<Pinned>);

/// The snapshot and the owner of the database it borrows.
struct Pinned {
    /// Borrows `inner.db`; declared first, so it is released before `inner` drops.
    snap: SnapshotWithThreadMode<'static, DB>,
    /// Keeps the database open while the snapshot lives.
    inner: Arc<Inner>,
}

impl Snapshot {
    /// A snapshot of the latest committed state of `inner`'s database.
    pub(crate) fn new(inner: &Arc<Inner>) -> Snapshot {
        let snap = inner.db.snapshot();
        // SAFETY: `snap` borrows `inner.db`; it is stored next to a clone of `inner`, which
        // keeps that database open and in place, and is dropped before the clone (field
        // order of `Pinned`). Invariants 1 and 2 of the module docs.
        let snap = unsafe {
            std::mem::transmute::<SnapshotWithThreadMode<'_, DB>, SnapshotWithThreadMode<'static, DB>>(
                snap,
            )
        };
        Snapshot(Arc::new(Pinned {
            snap,
            inner: inner.clone(),
        }))
    }

    /// A snapshot of the latest committed state: the one the engine keeps from the last call
    /// if no write has committed since, else a new one, which the engine then keeps.
    ///
    /// Taking and releasing a RocksDB snapshot each lock the database's mutex (its list of
    /// snapshots), which RocksDB's writes and flushes take too: with every autocommit SELECT
    /// taking its own, that mutex was behind most of the server's futex calls under sysbench
    /// point selects (about one per statement, with the context switches they bring). Two
    /// snapshots at the same sequence number read the same data, so readers between two
    /// commits share one: a clone of an `Arc`, under a read lock.
    ///
    /// The kept one is tagged with the sequence number read *before* it was taken. If a write
    /// committed in between, it is newer than its tag, but then the latest sequence number has
    /// moved past the tag for good and no later caller matches it; a caller that does match
    /// knows nothing committed since the tag was read, so the snapshot is exactly the latest
    /// state. A kept snapshot that is no longer the latest is dropped by the next call, by
    /// every transaction commit ([`Shared::forget_stale`]) and by the engine's once-a-second
    /// thread, so it pins old row versions no longer than until the next commit.
    pub(crate) fn latest(inner: &Arc<Inner>) -> Snapshot {
        let seq = inner.db.latest_sequence_number();
        {
            let kept = inner
                .shared_snapshot
                .0
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            if let (true, Some(p)) = (kept.0 == seq, &kept.1) {
                return Snapshot(p.clone());
            }
        }
        let snap = Snapshot::new(inner);
        let old = {
            let mut kept = inner
                .shared_snapshot
                .0
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            // Without an `Engine` handle nothing would break the cycle `Inner` -> snapshot ->
            // `Inner` (the last handle empties this under the same lock; see `Engine::drop`).
            if inner
                .engine_handles
                .load(std::sync::atomic::Ordering::SeqCst)
                == 0
            {
                None
            } else {
                std::mem::replace(&mut *kept, (seq, Some(snap.0.clone()))).1
            }
        };
        // Released outside the lock: the last release takes RocksDB's mutex.
        drop(old);
        snap
    }

    /// The engine state the snapshot belongs to.
    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.0.inner
    }

    /// The RocksDB snapshot, for `ReadOptions::set_snapshot`; borrowed no longer than `self`.
    pub(crate) fn raw(&self) -> &SnapshotWithThreadMode<'_, DB> {
        &self.0.snap
    }

    /// Whether `self` and `other` are the same snapshot (clones of one).
    pub(crate) fn same_as(&self, other: &Snapshot) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The snapshot [`Snapshot::latest`] last took, by the sequence number read before it.
pub(crate) struct Shared(RwLock<(u64, Option<Arc<Pinned>>)>);

impl Default for Shared {
    fn default() -> Shared {
        Shared(RwLock::new((u64::MAX, None)))
    }
}

impl Shared {
    /// Drops the kept snapshot unless it is still the latest state (`latest` is the current
    /// sequence number): called after writes, so that it does not keep old row versions.
    pub(super) fn forget_stale(&self, latest: u64) {
        {
            let kept = self.0.read().unwrap_or_else(PoisonError::into_inner);
            if kept.1.is_none() || kept.0 == latest {
                return;
            }
        }
        let old = {
            let mut kept = self.0.write().unwrap_or_else(PoisonError::into_inner);
            if kept.0 == latest {
                None
            } else {
                kept.1.take()
            }
        };
        drop(old);
    }

    /// Drops the kept snapshot (the last `Engine` handle is going).
    pub(super) fn clear(&self) {
        let old = self
            .0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .1
            .take();
        drop(old);
    }
}

/// A RocksDB iterator that keeps the snapshot it reads, and with it its database, alive.
pub(crate) struct SnapshotIter {
    /// Borrows the database (and the snapshot, through its read options); declared first, so
    /// it is dropped before `snap`.
    it: DBRawIteratorWithThreadMode<'static, DB>,
    /// The snapshot `it` reads.
    snap: Snapshot,
}

impl SnapshotIter {
    /// An iterator on `snap` with the other settings of `ro` (read tier, upper bound).
    pub(crate) fn new(snap: &Snapshot, mut ro: ReadOptions) -> SnapshotIter {
        ro.set_snapshot(snap.raw());
        let it = snap.0.inner.db.raw_iterator_opt(ro);
        // SAFETY: `it` borrows the database of `snap` and reads `snap`; it is stored next to a
        // clone of `snap`, which keeps both alive, and is dropped before it (field order of
        // `SnapshotIter`). Invariants 1, 2 and 4 of the module docs.
        let it = unsafe {
            std::mem::transmute::<
                DBRawIteratorWithThreadMode<'_, DB>,
                DBRawIteratorWithThreadMode<'static, DB>,
            >(it)
        };
        SnapshotIter {
            it,
            snap: snap.clone(),
        }
    }

    /// Whether this iterator reads `snap`.
    pub(crate) fn reads(&self, snap: &Snapshot) -> bool {
        self.snap.same_as(snap)
    }

    /// Positions the iterator at the first key at or after `key`.
    pub(crate) fn seek(&mut self, key: &[u8]) {
        self.it.seek(key);
    }

    /// Moves to the next key.
    pub(crate) fn next(&mut self) {
        self.it.next();
    }

    /// Positions the iterator at the last key at or before `key`.
    pub(crate) fn seek_for_prev(&mut self, key: &[u8]) {
        self.it.seek_for_prev(key);
    }

    /// Moves to the previous key.
    pub(crate) fn prev(&mut self) {
        self.it.prev();
    }

    /// Whether the iterator is on an entry.
    pub(crate) fn valid(&self) -> bool {
        self.it.valid()
    }

    /// The current key.
    pub(crate) fn key(&self) -> Option<&[u8]> {
        self.it.key()
    }

    /// The current value.
    pub(crate) fn value(&self) -> Option<&[u8]> {
        self.it.value()
    }

    /// Why the iterator stopped (`Incomplete` when a cache-only read needs the disk).
    pub(crate) fn status(&self) -> Result<(), rocksdb::Error> {
        self.it.status()
    }
}

#[cfg(test)]
mod tests {
    //! Drop-order tests: what can go wrong here is the database closing (or its snapshot being
    //! released) under a holder that still reads it, and a holder keeping it open for ever.
    //! Either shows: in reads through the survivors (a crash or wrong rows), in the datadir's
    //! LOCK (held exactly while the database is open), in RocksDB's count of live snapshots,
    //! and in whether the shared state is gone once the last holder is.

    use super::{Snapshot, SnapshotIter};
    use crate::catalog::{ColumnDef, TableDef, TableSpec};
    use crate::codec::prefix_successor;
    use crate::datum::{ColumnType, Datum};
    use crate::engine::{Engine, EngineConfig, Inner};
    use crate::error::StoreError;
    use crate::txn::{Isolation, KeyRange, LockMode, RowKey, Transaction};
    use rocksdb::ReadOptions;
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Weak};

    /// Rows committed before the snapshots are taken, and after.
    const OLD: i64 = 20;
    const NEW: i64 = 5;

    /// A data directory on the real disk, removed on drop.
    struct Dir(PathBuf);

    impl Dir {
        fn new(n: usize) -> Dir {
            let p = PathBuf::from(format!(
                "/var/tmp/shoal-store-unit-snapshot-{}-{n}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn config(dir: &Path) -> EngineConfig {
        let mut c = EngineConfig::new(dir);
        c.block_cache_bytes = 8 << 20;
        c
    }

    fn insert(e: &Engine, t: &TableDef, ids: std::ops::Range<i64>) {
        let mut txn = e.begin(Isolation::RepeatableRead);
        for id in ids {
            txn.insert(t, vec![Datum::Int(id)]).unwrap();
        }
        txn.commit().unwrap();
    }

    fn all_rows(txn: &mut Transaction, t: &TableDef) -> usize {
        txn.scan_pk(t, &KeyRange::all(), LockMode::None, None)
            .unwrap()
            .len()
    }

    /// Creates database `d` and in it table `t` (one INT primary key `id`).
    fn table_d_t(engine: &Engine) -> Arc<TableDef> {
        engine.create_database("d").unwrap();
        let spec = TableSpec {
            name: "t".into(),
            columns: vec![ColumnDef {
                name: "id".into(),
                ty: ColumnType::Int {
                    bytes: 4,
                    unsigned: false,
                },
                nullable: false,
                default: None,
                auto_increment: false,
                added_default: None,
                max_bytes: None,
            }],
            primary_key: vec!["id".into()],
            indexes: Vec::new(),
            auto_increment_start: None,
            foreign_keys: Vec::new(),
        };
        engine.create_table("d", spec).unwrap()
    }

    /// Every order of `0..n`.
    fn permutations(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![Vec::new()];
        }
        let mut out = Vec::new();
        for p in permutations(n - 1) {
            for i in 0..=p.len() {
                let mut q = p.clone();
                q.insert(i, n - 1);
                out.push(q);
            }
        }
        out
    }

    /// The holders of the test, dropped one by one.
    struct Holders {
        engine: Option<Engine>,
        snap: Option<Snapshot>,
        iter: Option<SnapshotIter>,
        txn: Option<Transaction>,
    }

    impl Holders {
        fn drop_one(&mut self, which: usize) {
            match which {
                0 => drop(self.engine.take().expect("dropped once")),
                1 => drop(self.snap.take().expect("dropped once")),
                2 => drop(self.iter.take().expect("dropped once")),
                _ => drop(self.txn.take().expect("dropped once")),
            }
        }

        fn alive(&self) -> usize {
            [
                self.engine.is_some(),
                self.snap.is_some(),
                self.iter.is_some(),
                self.txn.is_some(),
            ]
            .into_iter()
            .filter(|a| *a)
            .count()
        }

        /// Snapshots RocksDB should count: one shared by `snap` and `iter`, one of `txn`, and
        /// while the engine lives the latest one it keeps (`Snapshot::latest`: taken by the
        /// fresh transaction of every [`Holders::read_through_survivors`]).
        fn snapshots(&self) -> u64 {
            u64::from(self.snap.is_some() || self.iter.is_some())
                + u64::from(self.txn.is_some())
                + u64::from(self.engine.is_some())
        }

        /// Every surviving holder still reads what it was taken on.
        fn read_through_survivors(&mut self, t: &TableDef) {
            let prefix = t.rows_prefix();
            let end = prefix_successor(&prefix).unwrap();
            if let Some(s) = &self.snap {
                let rows = s
                    .scan_chunk(&prefix, Some(&end), 1000, false, None)
                    .unwrap();
                assert_eq!(rows.len(), OLD as usize, "snapshot scan");
                let key = |id: i64| {
                    let pk = RowKey::from_values(t, &[Datum::Int(id)]).unwrap();
                    crate::catalog::row_key(t.id, &pk.0)
                };
                let read = |id: i64| s.inner().get(&key(id), Some(s)).unwrap();
                assert!(read(OLD - 1).is_some(), "snapshot point read, older row");
                assert!(read(OLD).is_none(), "snapshot point read, newer row");
            }
            if let Some(it) = &mut self.iter {
                it.seek(&prefix);
                let mut n = 0;
                while it.valid() && it.key().is_some_and(|k| k.starts_with(&prefix)) {
                    n += 1;
                    it.next();
                }
                it.status().unwrap();
                assert_eq!(n, OLD, "iterator walk");
            }
            if let Some(txn) = &mut self.txn {
                assert_eq!(all_rows(txn, t), OLD as usize, "transaction snapshot scan");
                assert!(txn.holds_snapshot_iterator());
            }
            if let Some(e) = &self.engine {
                let mut fresh = e.begin(Isolation::RepeatableRead);
                assert_eq!(
                    all_rows(&mut fresh, t),
                    (OLD + NEW) as usize,
                    "latest state"
                );
            }
        }
    }

    /// While any holder lives, the database is open (LOCK held, shared state alive, RocksDB
    /// counting the live snapshots); once none does, it is closed and reopens whole.
    fn check_open_exactly_while_needed(
        h: &Holders,
        weak: &Weak<Inner>,
        dir: &Path,
        order: &[usize],
    ) {
        let alive = h.alive();
        match weak.upgrade() {
            Some(inner) => {
                assert!(alive > 0, "{order:?}: the database outlived every holder");
                let live = inner
                    .db
                    .property_int_value("rocksdb.num-snapshots")
                    .unwrap()
                    .unwrap();
                assert_eq!(live, h.snapshots(), "{order:?}: live snapshots");
            }
            None => assert_eq!(alive, 0, "{order:?}: the database closed under a holder"),
        }
        match Engine::open(config(dir)) {
            Err(StoreError::Locked(_)) => {
                assert!(alive > 0, "{order:?}: LOCK outlived the holders")
            }
            Err(e) => panic!("{order:?}: reopen failed: {e}"),
            Ok(e) => {
                assert_eq!(
                    alive, 0,
                    "{order:?}: reopened while a holder reads the database"
                );
                let t = e.table("d", "t").unwrap();
                let mut txn = e.begin(Isolation::RepeatableRead);
                assert_eq!(
                    all_rows(&mut txn, &t),
                    (OLD + NEW) as usize,
                    "{order:?}: reopened"
                );
            }
        }
    }

    /// An engine handle, a snapshot, an iterator on it and a transaction (with its snapshot and
    /// cached iterator), dropped in each of the 24 orders, with reads through every survivor
    /// after each drop.
    #[test]
    fn holders_dropped_in_every_order_keep_reading_and_close_last() {
        for (n, order) in permutations(4).into_iter().enumerate() {
            let dir = Dir::new(n);
            let engine = Engine::open(config(&dir.0)).unwrap();
            let t = table_d_t(&engine);
            insert(&engine, &t, 0..OLD);
            let mut txn = engine.begin(Isolation::RepeatableRead);
            assert_eq!(all_rows(&mut txn, &t), OLD as usize);
            let snap = Snapshot::new(&engine.inner);
            let iter = SnapshotIter::new(&snap, ReadOptions::default());
            insert(&engine, &t, OLD..OLD + NEW);
            let weak = Arc::downgrade(&engine.inner);
            let mut h = Holders {
                engine: Some(engine),
                snap: Some(snap),
                iter: Some(iter),
                txn: Some(txn),
            };
            h.read_through_survivors(&t);
            check_open_exactly_while_needed(&h, &weak, &dir.0, &order);
            for &which in &order {
                h.drop_one(which);
                h.read_through_survivors(&t);
                check_open_exactly_while_needed(&h, &weak, &dir.0, &order);
            }
        }
    }

    #[test]
    fn permutations_are_all_distinct_orders() {
        let p = permutations(4);
        assert_eq!(p.len(), 24);
        let mut sorted = p.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 24);
        assert!(p.iter().all(|o| {
            let mut s = o.clone();
            s.sort();
            s == vec![0, 1, 2, 3]
        }));
    }

    /// Transactions that begin reading while nothing commits share one RocksDB snapshot; a
    /// commit between them gives the next one its own (which sees the commit, while the older
    /// still does not); the engine keeps the latest one until a commit makes it stale, and
    /// lets it go with its last handle.
    #[test]
    fn readers_share_a_snapshot_until_a_write_commits() {
        let dir = Dir::new(1000);
        let engine = Engine::open(config(&dir.0)).unwrap();
        let t = table_d_t(&engine);
        insert(&engine, &t, 0..OLD);
        let inner = engine.inner.clone();
        let live = || {
            inner
                .db
                .property_int_value("rocksdb.num-snapshots")
                .unwrap()
                .unwrap()
        };
        let mut a = engine.begin(Isolation::RepeatableRead);
        let mut b = engine.begin(Isolation::RepeatableRead);
        assert_eq!(all_rows(&mut a, &t), OLD as usize);
        assert_eq!(all_rows(&mut b, &t), OLD as usize);
        let (sa, sb) = (a.snapshot().unwrap(), b.snapshot().unwrap());
        assert!(sa.same_as(sb), "no commit between them: one snapshot");
        assert_eq!(live(), 1, "RocksDB holds one snapshot for both");
        insert(&engine, &t, OLD..OLD + NEW);
        let mut c = engine.begin(Isolation::RepeatableRead);
        assert_eq!(
            all_rows(&mut c, &t),
            (OLD + NEW) as usize,
            "after the commit"
        );
        assert!(!c.snapshot().unwrap().same_as(a.snapshot().unwrap()));
        assert_eq!(live(), 2);
        assert_eq!(all_rows(&mut a, &t), OLD as usize, "the older view is kept");
        drop((a, b));
        assert_eq!(live(), 1, "the stale one went with its last reader");
        let c_snap = c.snapshot().unwrap().clone();
        drop(c);
        assert_eq!(live(), 1, "the engine keeps the latest one");
        let mut d = engine.begin(Isolation::RepeatableRead);
        assert_eq!(all_rows(&mut d, &t), (OLD + NEW) as usize);
        assert!(
            d.snapshot().unwrap().same_as(&c_snap),
            "no commit since: shared"
        );
        drop((d, c_snap));
        insert(&engine, &t, OLD + NEW..OLD + NEW + 1);
        assert_eq!(live(), 0, "a commit makes the kept one stale: released");
        let mut e = engine.begin(Isolation::RepeatableRead);
        assert_eq!(all_rows(&mut e, &t), (OLD + NEW + 1) as usize);
        drop(e);
        assert_eq!(live(), 1);
        let weak = Arc::downgrade(&inner);
        drop(inner);
        drop(engine);
        assert!(
            weak.upgrade().is_none(),
            "the last handle lets the kept snapshot go"
        );
    }
}
