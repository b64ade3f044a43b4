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
//! snapshots follows the holders, and that the database closes when the last one goes.

use super::Inner;
use rocksdb::{DBRawIteratorWithThreadMode, ReadOptions, SnapshotWithThreadMode, DB};
use std::sync::Arc;

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
