//! Dropped tables' and indexes' keys: forgotten at once, reclaimed by compaction.
//!
//! # Why not a range delete
//!
//! RocksDB's row cache (see `config`, "The row cache") keeps the result of a point read per
//! (SST file, key), and a hit skips the file's range tombstones: a row cache and `DeleteRange`
//! together can return deleted rows, so RocksDB refuses `DeleteRange` writes while a row cache
//! is configured (facebook/rocksdb#4122, #12512). shoal never needs a range delete's
//! visibility, though: table and index ids come from one persistent counter and are never
//! reused, and once the catalog no longer names an id (DROP TABLE, DROP INDEX, the old ids of
//! an ALTER TABLE copy or a TRUNCATE, the ids of a failed build) no statement can read its
//! keys again. The keys only have to go, eventually, to give the space back.
//!
//! # How
//!
//! The statement that drops an id writes a meta record `0x01 'X' id` ([`dropped_key`]) in the
//! same synced batch as its catalog change, so the two are durable together; then the id joins
//! the in-memory set here (loaded from those records at open). A compaction filter
//! ([`Dropped::filter`]) removes every row (`0x02 id ...`) and index entry (`0x03 id ...`) of a
//! dropped id it meets, and the statement deletes the SST files that hold nothing but the
//! dropped range (`DeleteFilesInRange`) at once. A key filtered by a compaction is gone for good
//! (snapshots do not protect it, which is right: no reader can reach it). The records stay, 6
//! bytes an id: the set is what makes a key found in a compaction months later recognisable.
//!
//! TRUNCATE TABLE uses the same path: it gives the table fresh ids (as InnoDB gives a truncated
//! table a new tablespace) and drops the old ones, instead of deleting under the same id.
//!
//! # Data directories written with range deletes
//!
//! Earlier versions dropped and truncated with `DeleteRange`. A truncated table kept its id,
//! so its new rows can share an SST file with the tombstone and the old rows it covers, the
//! one case the row cache gets wrong. At open, [`super::Engine::open`] therefore flushes and
//! compacts the whole key space once if any range tombstone is left
//! ([`purge_range_tombstones`]): the compaction drops every covered key, and no later write
//! adds a tombstone.

use crate::catalog::{index_prefix, rows_prefix, SPACE_INDEX, SPACE_META, SPACE_ROWS};
use crate::codec::prefix_successor;
use rocksdb::compaction_filter::Decision;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// The meta record that marks `id` dropped: `0x01 'X' id(u32 BE)`.
pub(crate) fn dropped_key(id: u32) -> Vec<u8> {
    let mut k = vec![SPACE_META, b'X'];
    k.extend_from_slice(&id.to_be_bytes());
    k
}

/// The ids whose keys compactions remove.
#[derive(Default)]
pub(crate) struct Dropped {
    /// Dropped table and index ids (one id space: they come from one counter).
    ids: RwLock<HashSet<u32>>,
    /// Whether `ids` is non-empty: the filter's fast path, read without the lock.
    any: AtomicBool,
}

impl Dropped {
    /// Adds ids (after the batch naming them committed, or at open).
    pub(crate) fn insert(&self, ids: &[u32]) {
        if ids.is_empty() {
            return;
        }
        let mut set = self.ids.write().unwrap_or_else(|e| e.into_inner());
        set.extend(ids.iter().copied());
        self.any.store(true, Ordering::Release);
    }

    /// Whether `id` was dropped.
    pub(crate) fn contains(&self, id: u32) -> bool {
        self.any.load(Ordering::Acquire)
            && self
                .ids
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&id)
    }

    /// Whether `key` is a row or an index entry of a dropped id.
    pub(crate) fn covers(&self, key: &[u8]) -> bool {
        if !self.any.load(Ordering::Acquire) || key.len() < 5 {
            return false;
        }
        if key[0] != SPACE_ROWS && key[0] != SPACE_INDEX {
            return false;
        }
        let id = u32::from_be_bytes([key[1], key[2], key[3], key[4]]);
        self.contains(id)
    }

    /// The compaction filter RocksDB runs on every key a compaction rewrites.
    pub(crate) fn filter(
        this: Arc<Dropped>,
    ) -> impl FnMut(u32, &[u8], &[u8]) -> Decision + Send + 'static {
        move |_level, key, _value| {
            if this.covers(key) {
                Decision::Remove
            } else {
                Decision::Keep
            }
        }
    }
}

impl super::Inner {
    /// Called once the batch that marked `ids` dropped has committed: compactions remove their
    /// keys from now on, and the SST files that hold nothing else go at once.
    pub(super) fn forget_ids(&self, ids: &[u32]) {
        self.dropped.insert(ids);
        for &id in ids {
            for start in [rows_prefix(id), index_prefix(id)] {
                let end = prefix_successor(&start).expect("an id prefix has a successor");
                if let Err(e) = self.db.delete_file_in_range(&start, &end) {
                    tracing::warn!("deleting the files of dropped id {id}: {e}");
                }
            }
        }
    }
}

/// Range tombstones in the store's SST files (RocksDB's aggregated table properties).
fn range_deletions(db: &rocksdb::DB) -> Result<u64, rocksdb::Error> {
    let props = db
        .property_value("rocksdb.aggregated-table-properties")?
        .unwrap_or_default();
    Ok(props
        .split(';')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| k.trim() == "# range deletions")
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0))
}

/// Flushes the memtables and, if any range tombstone is left in the store (a data directory
/// written by an earlier version), compacts the whole key space, which drops every key a
/// tombstone covers. Returns how many tombstones there were.
pub(crate) fn purge_range_tombstones(db: &rocksdb::DB) -> Result<u64, rocksdb::Error> {
    let mut fo = rocksdb::FlushOptions::default();
    fo.set_wait(true);
    db.flush_opt(&fo)?;
    let n = range_deletions(db)?;
    if n > 0 {
        tracing::info!("compacting the store once: {n} range tombstone(s) from an earlier version");
        let mut co = rocksdb::CompactOptions::default();
        co.set_bottommost_level_compaction(rocksdb::BottommostLevelCompaction::Force);
        db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &co);
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_rows_and_entries_of_dropped_ids_only() {
        let d = Dropped::default();
        let row = crate::catalog::row_key(7, b"pk");
        let entry = crate::catalog::index_prefix(7);
        assert!(!d.covers(&row), "nothing dropped yet");
        d.insert(&[7, 9]);
        assert!(d.covers(&row));
        assert!(d.covers(&entry));
        assert!(!d.covers(&crate::catalog::row_key(8, b"pk")));
        // Meta records (the drop markers themselves, counters) are never filtered.
        assert!(!d.covers(&dropped_key(7)));
        assert!(!d.covers(&crate::catalog::counter_key(b'A', 7)));
        assert!(!d.covers(&[SPACE_ROWS, 0, 0]));
    }

    /// A store with range tombstones (as earlier versions wrote) is compacted clean, and the
    /// covered keys are gone from the files, not only hidden.
    #[test]
    fn purge_compacts_range_tombstones_away() {
        let dir = std::env::temp_dir().join(format!("shoal-dropped-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        let db = rocksdb::DB::open(&opts, &dir).unwrap();
        for i in 0..100u32 {
            db.put(crate::catalog::row_key(3, &i.to_be_bytes()), b"old")
                .unwrap();
        }
        db.flush().unwrap();
        let start = crate::catalog::rows_prefix(3);
        let end = crate::catalog::rows_prefix(4);
        let mut b = rocksdb::WriteBatch::default();
        b.delete_range(&start, &end);
        db.write(b).unwrap();
        db.put(crate::catalog::row_key(3, &5u32.to_be_bytes()), b"new")
            .unwrap();
        db.flush().unwrap();
        assert!(
            range_deletions(&db).unwrap() > 0,
            "the setup wrote a tombstone"
        );
        assert!(purge_range_tombstones(&db).unwrap() > 0);
        assert_eq!(range_deletions(&db).unwrap(), 0);
        let live: Vec<_> = db
            .iterator(rocksdb::IteratorMode::Start)
            .map(|kv| kv.unwrap())
            .collect();
        assert_eq!(live.len(), 1, "only the row written after the delete");
        assert_eq!(&live[0].1[..], b"new");
        // A clean store is left alone.
        assert_eq!(purge_range_tombstones(&db).unwrap(), 0);
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
