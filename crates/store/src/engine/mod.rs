//! The engine: one RocksDB per data directory, shared by every session through cheap
//! [`Engine`] handles.
//!
//! # Data directory
//!
//! `datadir/LOCK` is held with `flock(LOCK_EX|LOCK_NB)` for the engine's lifetime, so a second
//! server (or a second `Engine::open` in the same process) on the same directory fails with
//! [`StoreError::Locked`] instead of corrupting it. RocksDB lives in `datadir/rocksdb`.
//!
//! # Lifetime
//!
//! An [`Engine`] is an `Arc` of the shared state (`Inner`: the RocksDB handle, the catalog, the
//! lock manager, counters, the commit queue). Transactions and snapshots hold the same `Arc`, so
//! the database stays open while any of them lives; `Engine` handles are also counted, and the last one to go
//! stops and joins the background WAL syncer. RocksDB closes when the last `Arc` goes, and only
//! then is the LOCK file released (the field order of `Inner`).
//!
//! # Parts, by role
//!
//! Each file adds its own `impl Engine` / `impl Inner` block and explains itself:
//!
//! - `config`: [`EngineConfig`], the RocksDB options, the block cache and the memory budget.
//! - `dictionary`: the in-memory catalog loaded at open, and catalog reads.
//! - `ddl`: CREATE / DROP / TRUNCATE / ALTER of databases, tables and indexes, each one synced
//!   catalog write; `rebuild`: the DDL that reads every row (index builds, table copies);
//!   `foreign_keys`: foreign key definitions and their checks.
//! - `counters`: AUTO_INCREMENT and hidden row-id counters, reserved durably ahead of use.
//! - `kv`: key-value reads (point reads and chunked scans) through the block cache first;
//!   `snapshot`: snapshots and iterators that keep the database open (the lifetime transmutes).
//! - `commit`: group commit (row locks released before the WAL sync), the background thread
//!   (WAL syncer) and synced writes outside transactions; `idle`: that thread's flush of the
//!   memtable when writes go quiet.

mod commit;
mod config;
mod counters;
mod ddl;
mod dictionary;
mod dropped;
mod foreign_keys;
mod idle;
mod kv;
mod rebuild;
mod snapshot;
mod warm;

pub(crate) use commit::HeldLocks;
pub use commit::SyncHook;
pub use config::{EngineConfig, LEVEL0_COMPACTION_TRIGGER, MAX_OPEN_FILES};
pub(crate) use snapshot::{Snapshot, SnapshotIter};

use crate::error::{Result, StoreError};
use crate::lock::LockManager;
use crate::stats::Stats;
use commit::{wal_syncer, GroupCommit};
use counters::Counter;
use dictionary::{load_catalog, Catalog};
use rocksdb::{Cache, WriteBatch, DB};
use shoal_wait::WaitKind;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, RwLock, Weak};
use std::time::Duration;

/// Shared engine state, owned by every [`Engine`] handle, transaction and snapshot through an
/// `Arc`. Field order matters: see `_lock_file`.
pub(crate) struct Inner {
    db: DB,
    cache: Cache,
    /// Charges memtables to `cache`; resized with it.
    wbm: rocksdb::WriteBufferManager,
    /// Current block cache capacity (RocksDB's C API has no getter).
    cache_capacity: std::sync::atomic::AtomicUsize,
    /// Flush and compaction output goes into the cache (see `warm`): set by the background
    /// thread, read by `Shoal_block_cache_warms_compactions`.
    warms_compactions: std::sync::atomic::AtomicBool,
    /// RocksDB's level-0 compaction trigger as last set: lowered to 1 while a quiet spell
    /// settles (see `idle`), read by `Shoal_store_level0_compaction_trigger`.
    level0_trigger: std::sync::atomic::AtomicU32,
    catalog: RwLock<Catalog>,
    /// Serializes DDL statements (see `ddl`).
    ddl: Mutex<()>,
    pub(crate) locks: LockManager,
    /// The commit queue and its leader flag (see `commit`).
    gc: GroupCommit,
    pub(crate) stats: Stats,
    /// AUTO_INCREMENT and hidden row-id counters by (kind, table id) (see `counters`).
    counters: Mutex<HashMap<(u8, u32), Counter>>,
    /// The next transaction id.
    next_txn: AtomicU64,
    /// `innodb_flush_log_at_trx_commit` (0, 1 or 2).
    flush_mode: AtomicU8,
    /// Default `innodb_lock_wait_timeout` of new transactions, in milliseconds.
    lock_wait_timeout_ms: AtomicU64,
    /// Whether O_DIRECT reads are in use (false after a fallback).
    direct_reads: bool,
    datadir: PathBuf,
    /// Dropping the sender stops the background WAL syncer.
    stop_flusher: Mutex<Option<mpsc::Sender<()>>>,
    /// The background WAL syncer, joined when the last `Engine` handle goes away.
    flusher: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Live `Engine` handles (transactions hold `Inner` too, but do not count here).
    engine_handles: std::sync::atomic::AtomicUsize,
    /// The snapshot readers share while nothing commits (see `Snapshot::latest`).
    shared_snapshot: snapshot::Shared,
    /// Dropped table and index ids, whose keys compactions remove (see `dropped`).
    dropped: Arc<dropped::Dropped>,
    /// Holds the `flock` on `datadir/LOCK`; declared last so it is released after `db` closes.
    _lock_file: File,
}

/// The storage engine. Cheap to clone (an `Arc`); share one per server. When the last handle
/// (and the last transaction) is dropped, RocksDB is closed and the LOCK file released.
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

impl Clone for Engine {
    fn clone(&self) -> Engine {
        self.inner.engine_handles.fetch_add(1, Ordering::SeqCst);
        Engine {
            inner: self.inner.clone(),
        }
    }
}

impl Drop for Engine {
    /// The last handle stops and joins the WAL syncer first, so that (with no transactions
    /// left) the database is closed by the time `drop` returns and can be reopened at once.
    fn drop(&mut self) {
        if self.inner.engine_handles.fetch_sub(1, Ordering::SeqCst) == 1 {
            // The kept snapshot holds `Inner` (see `Snapshot::latest`): without this, the
            // database would never close.
            self.inner.shared_snapshot.clear();
            drop(lock_mutex(&self.inner.stop_flusher).take());
            if let Some(h) = lock_mutex(&self.inner.flusher).take() {
                let _ = h.join();
            }
        }
    }
}

fn lock_mutex<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Engine {
    /// Opens (creating if needed) the data directory.
    pub fn open(cfg: EngineConfig) -> Result<Engine> {
        std::fs::create_dir_all(&cfg.datadir)?;
        let lock_path = cfg.datadir.join("LOCK");
        let lock_file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)?;
        // SAFETY: flock on a valid, owned file descriptor.
        let rc = unsafe { libc::flock(lock_file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Err(StoreError::Locked(cfg.datadir.clone()));
            }
            return Err(err.into());
        }
        let (mut opts, cache, wbm) = config::db_options(&cfg);
        let dropped = Arc::new(dropped::Dropped::default());
        opts.set_compaction_filter(
            "shoal_dropped_ids",
            dropped::Dropped::filter(dropped.clone()),
        );
        let rdir = cfg.datadir.join("rocksdb");
        let mut direct = cfg.direct_reads;
        opts.set_use_direct_reads(direct);
        let db = match DB::open(&opts, &rdir) {
            Ok(db) => db,
            Err(e) if direct && e.to_string().to_lowercase().contains("direct") => {
                tracing::warn!(
                    "O_DIRECT reads not supported under {}: {e}; using buffered reads",
                    rdir.display()
                );
                direct = false;
                opts.set_use_direct_reads(false);
                DB::open(&opts, &rdir)?
            }
            Err(e) => return Err(e.into()),
        };
        config::apply_mutable_options(&db)?;
        dropped::purge_range_tombstones(&db)?;
        let catalog = load_catalog(&db, &dropped)?;
        let (tx, rx) = mpsc::channel::<()>();
        let inner = Arc::new(Inner {
            db,
            cache,
            wbm,
            cache_capacity: std::sync::atomic::AtomicUsize::new(cfg.block_cache_bytes.max(1 << 20)),
            warms_compactions: std::sync::atomic::AtomicBool::new(false),
            level0_trigger: std::sync::atomic::AtomicU32::new(
                config::LEVEL0_COMPACTION_TRIGGER as u32,
            ),
            catalog: RwLock::new(catalog),
            ddl: Mutex::new(()),
            locks: LockManager::default(),
            gc: GroupCommit::default(),
            stats: Stats::default(),
            counters: Mutex::new(HashMap::new()),
            next_txn: AtomicU64::new(1),
            flush_mode: AtomicU8::new(cfg.flush_log_at_trx_commit.min(2)),
            lock_wait_timeout_ms: AtomicU64::new(cfg.lock_wait_timeout.as_millis() as u64),
            direct_reads: direct,
            datadir: cfg.datadir.clone(),
            stop_flusher: Mutex::new(Some(tx)),
            flusher: Mutex::new(None),
            engine_handles: std::sync::atomic::AtomicUsize::new(1),
            shared_snapshot: snapshot::Shared::default(),
            dropped,
            _lock_file: lock_file,
        });
        let weak: Weak<Inner> = Arc::downgrade(&inner);
        let handle = std::thread::Builder::new()
            .name("shoal-wal-sync".into())
            .spawn(move || wal_syncer(weak, rx))?;
        *lock_mutex(&inner.flusher) = Some(handle);
        Ok(Engine { inner })
    }

    /// A consistent physical copy of the store in `dir/rocksdb` (which must not exist), made
    /// with RocksDB's checkpoint: the memtables are flushed, then every live SST file is
    /// hard-linked (copied across file systems) and the manifest written, all at one sequence
    /// number. Every commit is one atomic WriteBatch, so the copy holds each transaction
    /// committed before that point whole and none after it, catalog and auto-increment
    /// reservations included. Writers go on meanwhile (they may stall briefly on the flush).
    pub fn checkpoint(&self, dir: &std::path::Path) -> Result<()> {
        std::fs::create_dir_all(dir)?;
        let cp = rocksdb::checkpoint::Checkpoint::new(&self.inner.db)?;
        cp.create_checkpoint(dir.join("rocksdb"))?;
        Ok(())
    }

    /// The data directory.
    pub fn datadir(&self) -> &std::path::Path {
        &self.inner.datadir
    }

    /// Whether O_DIRECT reads are really in use.
    pub fn direct_reads_active(&self) -> bool {
        self.inner.direct_reads
    }
    /// Changes the default `innodb_lock_wait_timeout` for transactions begun later.
    pub fn set_lock_wait_timeout(&self, d: Duration) {
        self.inner
            .lock_wait_timeout_ms
            .store(d.as_millis() as u64, Ordering::Relaxed);
    }

    /// `innodb_deadlock_detect`: off, lock waits that would close a cycle are not refused with
    /// 1213 but wait, and time out with 1205 after `innodb_lock_wait_timeout`.
    pub fn set_deadlock_detect(&self, on: bool) {
        self.inner.locks.set_deadlock_detect(on);
    }

    /// Current `innodb_deadlock_detect`.
    pub fn deadlock_detect(&self) -> bool {
        self.inner.locks.deadlock_detect()
    }

    /// Status counters (MySQL names where they exist) plus block cache usage/capacity.
    pub fn status(&self) -> Vec<(&'static str, u64)> {
        let mut v = self.inner.stats.snapshot();
        v.push((
            "Shoal_block_cache_usage",
            self.inner.cache.get_usage() as u64,
        ));
        v.push((
            "Shoal_block_cache_capacity",
            self.inner.cache_capacity.load(Ordering::Relaxed) as u64,
        ));
        v.push(("Shoal_row_lock_keys", self.inner.locks.locked_keys() as u64));
        v.push((
            "Shoal_block_cache_pinned",
            self.inner.cache.get_pinned_usage() as u64,
        ));
        // RocksDB's own gauges: what keeps old row versions alive (snapshots) and how many
        // versions a scan may have to step over (memtable entries, level-0 files).
        let prop = |p: &str| {
            self.inner
                .db
                .property_int_value(p)
                .ok()
                .flatten()
                .unwrap_or(0)
        };
        v.push(("Shoal_store_snapshots", prop("rocksdb.num-snapshots")));
        let oldest = prop("rocksdb.oldest-snapshot-time");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        v.push((
            "Shoal_store_oldest_snapshot_seconds",
            if oldest == 0 {
                0
            } else {
                now.saturating_sub(oldest)
            },
        ));
        v.push((
            "Shoal_store_memtable_entries",
            prop("rocksdb.num-entries-active-mem-table")
                + prop("rocksdb.num-entries-imm-mem-tables"),
        ));
        v.push((
            "Shoal_store_level0_files",
            prop("rocksdb.num-files-at-level0"),
        ));
        v.push((
            "Shoal_store_level0_compaction_trigger",
            u64::from(self.inner.level0_trigger.load(Ordering::Relaxed)),
        ));
        // 1 while compaction output goes into the block cache (the data fits; see `warm`).
        v.push((
            "Shoal_block_cache_warms_compactions",
            u64::from(self.inner.warms_compactions.load(Ordering::Relaxed)),
        ));
        v
    }

    /// One status counter by name.
    pub fn status_value(&self, name: &str) -> Option<u64> {
        self.status()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }

    /// Changes the block cache capacity at run time (`SET GLOBAL innodb_buffer_pool_size`).
    pub fn set_block_cache_bytes(&self, bytes: usize) {
        let mut c = self.inner.cache.clone();
        c.set_capacity(bytes.max(1 << 20));
        self.inner
            .wbm
            .set_buffer_size(config::memtable_budget(bytes));
        self.inner
            .cache_capacity
            .store(bytes.max(1 << 20), Ordering::Relaxed);
    }

    /// Makes everything written durable and quiesces RocksDB before the process exits: stops
    /// the WAL syncer, syncs the WAL (covers `innodb_flush_log_at_trx_commit` 0 and 2), and waits
    /// for flushes/compactions to stop. A process that exits while RocksDB background threads still
    /// run can abort in C++ static destructors ("pthread lock: Invalid argument"), so the server
    /// calls this at shutdown even though other handles may still be alive. Later writes through
    /// any handle still work but nothing syncs them in the background.
    pub fn close(&self) -> Result<()> {
        drop(lock_mutex(&self.inner.stop_flusher).take());
        if let Some(h) = lock_mutex(&self.inner.flusher).take() {
            let _ = h.join();
        }
        self.inner.db.flush_wal(true)?;
        self.inner.db.cancel_all_background_work(true);
        Ok(())
    }

    /// The RocksDB handle (for [`crate::system`]).
    pub(crate) fn raw_db(&self) -> &DB {
        &self.inner.db
    }

    /// Writes `b` with a synced WAL write (for [`crate::system`]).
    pub(crate) fn write_batch_sync(&self, b: WriteBatch) -> Result<()> {
        self.inner.write_sync(b)
    }

    /// Flushes memtables to SST files (used by tests that want on-disk data).
    pub fn flush(&self) -> Result<()> {
        let _w = shoal_wait::wait(WaitKind::DiskIo);
        self.inner.db.flush()?;
        Ok(())
    }

    /// Compacts the whole key space (tests; `OPTIMIZE TABLE`).
    pub fn compact(&self) {
        // A full compaction reads and rewrites every file: reported as disk I/O.
        let _w = shoal_wait::wait(WaitKind::DiskIo);
        self.inner.db.compact_range::<&[u8], &[u8]>(None, None);
    }
}

impl Inner {
    /// A new transaction id (unique per engine run).
    pub(crate) fn next_txn_id(&self) -> u64 {
        self.next_txn.fetch_add(1, Ordering::Relaxed)
    }

    /// `innodb_lock_wait_timeout` for a transaction begun now.
    pub(crate) fn default_lock_wait_timeout(&self) -> Duration {
        Duration::from_millis(self.lock_wait_timeout_ms.load(Ordering::Relaxed))
    }
}
