//! Key-value access: point reads and chunked scans over RocksDB, block cache first.
//!
//! Every read first runs on the block cache alone (`ReadTier::BlockCache`): a hit costs no
//! wait. Only a miss reports a `DISKIO` wait to the pool (through `shoal-wait`) and then reads
//! from the disk, so a pool worker is known to be blocked exactly when it is. Scans return
//! chunks of entries, so the layers above (transactions, CHECK TABLE, index builds) merge,
//! lock and decode between chunks without holding an iterator across them, except the one
//! reusable iterator a transaction keeps on its snapshot: creating a RocksDB iterator is not
//! cheap (the `snapshot` module says how much, and how the iterator outlives the call).
//!
//! Reverse scans ([`Snapshot::scan_chunk_rev`], for `ORDER BY ... DESC` served by key order)
//! read a chunk on a fresh iterator bounded on both sides: cache first, and on a miss the whole
//! chunk again from the disk inside one DISKIO wait. They are rarer than forward scans and
//! usually short (`DESC LIMIT n`), so they keep no iterator between calls.

use super::snapshot::{Snapshot, SnapshotIter};
use super::{Engine, Inner};
use crate::catalog::{self, TableDef};
use crate::codec::prefix_successor;
use crate::error::Result;
use crate::stats::Stats;
use rocksdb::{ErrorKind, ReadOptions, ReadTier};
use shoal_wait::WaitKind;

impl Engine {
    /// Approximate on-disk bytes of a table's rows and of its secondary indexes, from RocksDB's
    /// estimate over the key ranges (SST files only: what is still in the memtable is not
    /// counted). For information_schema.TABLES' DATA_LENGTH / INDEX_LENGTH.
    pub fn approximate_sizes(&self, def: &TableDef) -> (u64, u64) {
        let mut bounds = vec![catalog::rows_prefix(def.id)];
        bounds.extend(def.indexes.iter().map(|ix| catalog::index_prefix(ix.id)));
        let ends: Vec<Vec<u8>> = bounds
            .iter()
            .map(|p| prefix_successor(p).expect("prefix has a successor"))
            .collect();
        let ranges: Vec<rocksdb::Range<'_>> = bounds
            .iter()
            .zip(&ends)
            .map(|(s, e)| rocksdb::Range::new(s, e))
            .collect();
        let sizes = self.inner.db.get_approximate_sizes(&ranges);
        let data = sizes.first().copied().unwrap_or(0);
        (data, sizes.iter().skip(1).sum())
    }

    /// About how many entries lie in the byte range `[from, to)` (see
    /// `Engine::estimate_rows`, which gives a key range's bytes): counted on a fresh snapshot
    /// of committed data up to [`ESTIMATE_SAMPLE`] entries (exact below that); past it, the
    /// count is scaled by RocksDB's approximate on-disk size of the whole range over that of
    /// the counted part. When those sizes say nothing (the data is still in the memtable,
    /// which they do not see), counting goes on up to [`ESTIMATE_MAX`].
    pub(crate) fn estimate_span(&self, from: &[u8], to: &[u8]) -> u64 {
        if from >= to {
            return 0;
        }
        let snap = Snapshot::latest(&self.inner);
        let mut n = 0u64;
        let mut at = Vec::new();
        let count = |limit: u64, from: &[u8], n: &mut u64, at: &mut Vec<u8>| {
            let _ = snap.scan_with(from, Some(to), false, None, &mut |k, _| {
                *n += 1;
                if *n >= limit {
                    *at = k.to_vec();
                    return Ok(false);
                }
                Ok(true)
            });
        };
        count(ESTIMATE_SAMPLE, from, &mut n, &mut at);
        if n < ESTIMATE_SAMPLE {
            return n;
        }
        let sizes = self.inner.db.get_approximate_sizes(&[
            rocksdb::Range::new(from, to),
            rocksdb::Range::new(from, &at),
        ]);
        if let [all, part] = sizes[..] {
            if part > 0 && all >= part {
                return (n as u128 * u128::from(all) / u128::from(part)) as u64;
            }
        }
        let resume = [at.as_slice(), &[0]].concat();
        count(ESTIMATE_MAX, &resume, &mut n, &mut at);
        n
    }

    /// About how many entries of a key share one value of its first `parts` columns (InnoDB's
    /// records per key): from the first [`ESTIMATE_SAMPLE`] entries of the key, entries over
    /// distinct prefixes. At least 1; 1 for an empty key.
    pub fn rows_per_key(&self, table: &TableDef, index: Option<&str>, parts: usize) -> f64 {
        let (prefix, types) = match index {
            None => (catalog::rows_prefix(table.id), table.pk_types()),
            Some(n) => match table.index(n) {
                Some(ix) => (catalog::index_prefix(ix.id), table.index_types(ix)),
                None => return 1.0,
            },
        };
        // Collated strings decode as their weights: what tells keys apart here too.
        let parts = parts.min(types.len());
        let Some(end) = prefix_successor(&prefix) else {
            return 1.0;
        };
        let snap = Snapshot::latest(&self.inner);
        let (mut entries, mut distinct) = (0u64, 0u64);
        let mut last: Option<Vec<u8>> = None;
        let _ = snap.scan_with(&prefix, Some(&end), false, None, &mut |k, _| {
            entries += 1;
            let key = &k[prefix.len()..];
            let len = crate::codec::decode_key(&types[..parts], key).map_or(key.len(), |(_, l)| l);
            if last.as_deref() != Some(&key[..len]) {
                distinct += 1;
                last = Some(key[..len].to_vec());
            }
            Ok(entries < ESTIMATE_SAMPLE)
        });
        if distinct == 0 {
            return 1.0;
        }
        (entries as f64 / distinct as f64).max(1.0)
    }
}

/// Entries `Engine::estimate_rows` counts before it scales by approximate sizes.
pub const ESTIMATE_SAMPLE: u64 = 1000;
/// Entries `Engine::estimate_rows` counts at most when sizes are unknown.
pub const ESTIMATE_MAX: u64 = 5_000;

thread_local! {
    /// Block-cache-only read options for this thread's point reads, one set for reads at a
    /// snapshot (set again before every use) and one for reads without (never given one):
    /// creating and destroying them cost two C++ allocations and a constructor per read.
    static CACHE_ONLY: std::cell::RefCell<[Option<ReadOptions>; 2]> =
        const { std::cell::RefCell::new([None, None]) };
}

impl Inner {
    /// A point read: probes the block cache first; only on a miss reports a DISKIO wait and
    /// reads from disk.
    pub(crate) fn get(&self, key: &[u8], snap: Option<&Snapshot>) -> Result<Option<Vec<u8>>> {
        Stats::add(&self.stats.read_requests, 1);
        let cached = CACHE_ONLY.with(|c| {
            let mut c = c.borrow_mut();
            let ro = c[usize::from(snap.is_some())].get_or_insert_with(|| {
                let mut ro = ReadOptions::default();
                ro.set_read_tier(ReadTier::BlockCache);
                ro
            });
            if let Some(s) = snap {
                ro.set_snapshot(s.raw());
            }
            self.db
                .get_pinned_opt(key, ro)
                .map(|v| v.map(|p| p.to_vec()))
        });
        match cached {
            Ok(v) => Ok(v),
            Err(e) if e.kind() == ErrorKind::Incomplete => {
                Stats::add(&self.stats.disk_reads, 1);
                let mut ro = ReadOptions::default();
                if let Some(s) = snap {
                    ro.set_snapshot(s.raw());
                }
                let _w = shoal_wait::wait(WaitKind::DiskIo);
                Ok(self.db.get_pinned_opt(key, &ro)?.map(|p| p.to_vec()))
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Receives scanned entries (key, value); `false` ends the scan.
pub(crate) type EntrySink<'a> = dyn FnMut(&[u8], &[u8]) -> Result<bool> + 'a;

impl Snapshot {
    /// Reads up to `max` committed entries of this snapshot with keys in `[from, to)`. Like
    /// [`Inner::get`], iteration runs on the block cache only; when it hits a block that is not
    /// cached, the next entry is read with a normal iterator inside a DISKIO wait and the
    /// cache-only iterator resumes after it. With `cache`, the iterator is taken from there (if
    /// it reads this snapshot) and put back for the next call.
    pub(crate) fn scan_chunk(
        &self,
        from: &[u8],
        to: Option<&[u8]>,
        max: usize,
        count_requests: bool,
        cache: Option<&mut Option<SnapshotIter>>,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        // Sized for a chunk up front: growing it row by row reallocated (and moved) it ~8 times
        // per chunk (2 % of the server's CPU under sysbench read-write).
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(max.min(128));
        if max > 0 {
            self.scan_with(from, to, count_requests, cache, &mut |k, v| {
                out.push((k.to_vec(), v.to_vec()));
                Ok(out.len() < max)
            })?;
        }
        Ok(out)
    }

    /// [`Self::scan_chunk`] handing each entry to `sink` as it is read, without copying it,
    /// until the range ends or `sink` returns `false` (or an error, which is returned).
    pub(crate) fn scan_with(
        &self,
        from: &[u8],
        to: Option<&[u8]>,
        count_requests: bool,
        mut cache: Option<&mut Option<SnapshotIter>>,
        sink: &mut EntrySink<'_>,
    ) -> Result<()> {
        let snap = self;
        let stats = &self.inner().stats;
        // A reusable iterator (`cache` given) has no upper bound: the bound is checked here.
        let manual_bound = cache.is_some() && to.is_some();
        let mk = |cache_only: bool, bounded: bool| -> SnapshotIter {
            let mut ro = ReadOptions::default();
            if cache_only {
                ro.set_read_tier(ReadTier::BlockCache);
            }
            if let (Some(t), true) = (to, bounded) {
                ro.set_iterate_upper_bound(t.to_vec());
            }
            SnapshotIter::new(snap, ro)
        };
        let beyond = |k: &[u8]| manual_bound && to.is_some_and(|t| k >= t);
        // Entries handed over, and the last one's key (where a miss resumes).
        let mut n = 0u64;
        let mut last: Vec<u8> = Vec::new();
        let mut reusable = cache.is_some();
        let mut it = match cache.as_mut().and_then(|c| c.take()) {
            Some(i) if i.reads(snap) => i,
            _ => mk(true, !manual_bound),
        };
        it.seek(from);
        let mut result = Ok(());
        loop {
            if it.valid() {
                let k = it.key().unwrap_or_default();
                if reusable && beyond(k) {
                    break;
                }
                n += 1;
                match sink(k, it.value().unwrap_or_default()) {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
                last.clear();
                last.extend_from_slice(k);
                it.next();
                continue;
            }
            match it.status() {
                Ok(()) => break,
                Err(e) if e.kind() == ErrorKind::Incomplete && reusable => {
                    // The unbounded iterator may have run into an uncached block past the
                    // range: continue with a bounded one, which stops at the bound.
                    reusable = false;
                    let (pos, skip) = if n > 0 {
                        (last.clone(), true)
                    } else {
                        (from.to_vec(), false)
                    };
                    it = mk(true, true);
                    it.seek(&pos);
                    if skip && it.valid() && it.key() == Some(&pos[..]) {
                        it.next();
                    }
                }
                Err(e) if e.kind() == ErrorKind::Incomplete => {
                    Stats::add(&stats.disk_reads, 1);
                    let (pos, skip) = if n > 0 {
                        (last.clone(), true)
                    } else {
                        (from.to_vec(), false)
                    };
                    {
                        let _w = shoal_wait::wait(WaitKind::DiskIo);
                        let mut full = mk(false, true);
                        full.seek(&pos);
                        if skip && full.valid() && full.key() == Some(&pos[..]) {
                            full.next();
                        }
                        if !full.valid() {
                            full.status()?;
                            break;
                        }
                        let k = full.key().unwrap_or_default();
                        n += 1;
                        match sink(k, full.value().unwrap_or_default()) {
                            Ok(true) => {}
                            Ok(false) => break,
                            Err(e) => {
                                result = Err(e);
                                break;
                            }
                        }
                        last.clear();
                        last.extend_from_slice(k);
                    }
                    // A fresh cache-only iterator: an old one may keep per-file error state
                    // from the miss.
                    it = mk(true, true);
                    it.seek(&last);
                    if it.valid() && it.key() == Some(&last[..]) {
                        it.next();
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        if reusable {
            if let Some(c) = cache {
                *c = Some(it);
            }
        }
        if count_requests {
            Stats::add(&stats.read_requests, n);
        }
        result
    }

    /// Reads up to `max` committed entries of this snapshot with keys in `[from, to)`, in
    /// descending key order (the highest first).
    pub(crate) fn scan_chunk_rev(
        &self,
        from: &[u8],
        to: &[u8],
        max: usize,
        count_requests: bool,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let stats = &self.inner().stats;
        let read = |cache_only: bool| -> std::result::Result<_, rocksdb::Error> {
            let mut ro = ReadOptions::default();
            if cache_only {
                ro.set_read_tier(ReadTier::BlockCache);
            }
            ro.set_iterate_lower_bound(from.to_vec());
            ro.set_iterate_upper_bound(to.to_vec());
            let mut it = SnapshotIter::new(self, ro);
            it.seek_for_prev(to);
            let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(max.min(128));
            while out.len() < max && it.valid() {
                let k = it.key().unwrap_or_default();
                if k < to && k >= from {
                    out.push((k.to_vec(), it.value().unwrap_or_default().to_vec()));
                }
                it.prev();
            }
            it.status()?;
            Ok(out)
        };
        let out = match read(true) {
            Ok(out) => out,
            Err(e) if e.kind() == ErrorKind::Incomplete => {
                Stats::add(&stats.disk_reads, 1);
                let _w = shoal_wait::wait(WaitKind::DiskIo);
                read(false)?
            }
            Err(e) => return Err(e.into()),
        };
        if count_requests {
            Stats::add(&stats.read_requests, out.len() as u64);
        }
        Ok(out)
    }
}
