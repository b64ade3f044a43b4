//! The engine: opening a data directory, the catalog and DDL, counters, group commit, status.
//!
//! # Data directory
//!
//! `datadir/LOCK` is held with `flock(LOCK_EX|LOCK_NB)` for the engine's lifetime, so a second
//! server (or a second `Engine::open` in the same process) on the same directory fails with
//! [`StoreError::Locked`] instead of corrupting it. RocksDB lives in `datadir/rocksdb`.
//!
//! # Memory budget
//!
//! One LRU block cache of `block_cache_bytes` (`innodb_buffer_pool_size`) holds data, index and
//! filter blocks (`cache_index_and_filter_blocks`), so table-reader memory is inside the budget
//! too. Memtables are charged to the same cache through a RocksDB `WriteBufferManager` built on
//! it: their memory is reserved in the cache as dummy entries (evicting data blocks), a flush
//! starts when they reach [`memtable_budget`] (a quarter of the cache, 1..64 MiB), and writers
//! stall rather than exceed it, so data + index + filter + memtables share one budget. Outside
//! it, bounded: at most `MAX_OPEN_FILES` table readers (file metadata only), the lock table and
//! per-transaction write buffers (proportional to uncommitted writes), the in-memory catalog,
//! and allocator slack. The per-server overhead formula is in docs/ARCHITECTURE.md. With `direct_reads` (`innodb_flush_method=O_DIRECT`)
//! RocksDB reads SST files with `O_DIRECT`, so the OS page cache does not act as a second,
//! unbounded buffer pool and a data set larger than the cache really waits on the disk.
//!
//! # Durability and group commit
//!
//! `flush_log_at_trx_commit = 1`: every commit is durable when `commit()` returns. Committers
//! queue their `WriteBatch`es; the first one to find no active leader becomes the leader, takes
//! the whole queue, writes every batch (each one atomic) and syncs the WAL once with the last
//! write. Followers sleep (reported as `GROUP_COMMIT` waits) until the leader posts their
//! result; the leader's write+fsync is reported as a `SYNC` wait. Commits arriving while a
//! group is being synced form the next group, so under concurrency fsyncs < commits.
//! `0` and `2`: batches are written without sync, and a background thread syncs the WAL once
//! per second (a crash of the machine may lose up to about a second of commits; a crash of the
//! process alone loses nothing, since the WAL is written to the OS at every commit).
//!
//! # Auto-increment
//!
//! Counters live in memory and are made durable ahead of use: before a value beyond the
//! persisted high-water mark is handed out, the mark is raised by a chunk (1024) and written
//! synchronously. After a crash, counting resumes at the mark, so no value that may have been
//! used by a committed row is ever issued again (gaps are allowed, as in InnoDB).

use crate::catalog::{self, ColumnDef, IndexDef, IndexSpec, TableDef, TableSpec, SPACE_META};
use crate::codec::{decode_stored, prefix_successor};
use crate::datum::{ColumnType, Datum};
use crate::error::{Result, StoreError};
use crate::lock::LockManager;
use crate::stats::Stats;
use crate::txn::{Isolation, Transaction};
use rocksdb::{
    BlockBasedOptions, Cache, ErrorKind, LruCacheOptions, Options, ReadOptions, ReadTier,
    WriteBatch, WriteOptions, DB,
};

/// Smallest share of the cache one shard of it may have.
const MIN_CACHE_SHARD: usize = 8 << 20;

/// The block cache: an LRU cache in `2^bits` shards of at least [`MIN_CACHE_SHARD`] (at most
/// 64). RocksDB's default aims at 512 KiB shards, which splits a small cache (an 11 MiB buffer
/// pool: 16 shards of 704 KiB) so finely that one SST file's filter or index block (a few hundred
/// KiB for a 64 MiB file) fills half a shard, and the random data blocks that share its shard evict
/// it: every lookup then read it from the disk again
/// (docs/perf-log/2026-12-01-session-9-seventh-pass.md). Larger shards keep the hottest blocks
/// resident; a shard's mutex is held for a hash probe, and a 2-core machine has little to contend
/// with.
fn block_cache(bytes: usize) -> Cache {
    let mut o = LruCacheOptions::default();
    o.set_capacity(bytes);
    o.set_num_shard_bits(cache_shard_bits(bytes));
    Cache::new_lru_cache_opts(&o)
}

/// How many bits of shard index [`block_cache`] gives a cache of `bytes`.
fn cache_shard_bits(bytes: usize) -> i32 {
    let mut bits = 0;
    while bits < 6 && bytes >> (bits + 1) >= MIN_CACHE_SHARD {
        bits += 1;
    }
    bits
}
use shoal_wait::WaitKind;
use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, RwLock, Weak};
use std::time::Duration;

/// A RocksDB snapshot that lives as long as the transaction holding it (see `Transaction`).
pub(crate) type Snap = rocksdb::SnapshotWithThreadMode<'static, DB>;

/// A cache-only (`ReadTier::BlockCache`), unbounded iterator on a transaction's snapshot, kept
/// by the transaction between range scans: creating a RocksDB iterator (arena, merging
/// iterator over every memtable and file) cost about 5 % of server CPU in sysbench
/// read-write, where each transaction runs four range scans on one snapshot. It must be
/// dropped before the snapshot it reads (see `Transaction`'s field order).
pub(crate) type SnapIter = rocksdb::DBRawIteratorWithThreadMode<'static, DB>;

/// Most SST files open at once (bounds the table cache; see the memory budget above).
pub const MAX_OPEN_FILES: i32 = 1024;

/// The memtables' share of the block cache: a quarter of it, at least 1 MiB and at most
/// 64 MiB (3 × the default 16 MiB write buffer, plus room for one being flushed).
pub(crate) fn memtable_budget(cache_bytes: usize) -> usize {
    (cache_bytes / 4).clamp(1 << 20, 64 << 20)
}

/// How many auto-increment values are reserved (durably) at a time.
const AUTOINC_CHUNK: u64 = 1024;

/// Engine options (the `innodb_*` variables that concern storage).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Data directory (created if missing).
    pub datadir: PathBuf,
    /// Block cache size in bytes (`innodb_buffer_pool_size`).
    pub block_cache_bytes: usize,
    /// Read SST files with O_DIRECT (`innodb_flush_method=O_DIRECT`, the default). Falls back
    /// to buffered reads, with a warning, on file systems without O_DIRECT (tmpfs).
    pub direct_reads: bool,
    /// `innodb_flush_log_at_trx_commit`: 1 = fsync per commit (group commit), 0/2 = once a second.
    pub flush_log_at_trx_commit: u8,
    /// Default `innodb_lock_wait_timeout` for new transactions.
    pub lock_wait_timeout: Duration,
    /// Memtable size (bytes); at most 3 exist at a time.
    pub write_buffer_bytes: usize,
}

impl EngineConfig {
    /// Defaults for `datadir`: 128 MiB cache, direct reads, flush at every commit, 50 s lock
    /// wait timeout (InnoDB's defaults).
    pub fn new(datadir: impl Into<PathBuf>) -> EngineConfig {
        EngineConfig {
            datadir: datadir.into(),
            block_cache_bytes: 128 << 20,
            direct_reads: true,
            flush_log_at_trx_commit: 1,
            lock_wait_timeout: Duration::from_secs(50),
            write_buffer_bytes: 16 << 20,
        }
    }
}

#[derive(Default)]
pub(crate) struct Catalog {
    pub(crate) databases: HashSet<String>,
    pub(crate) tables: HashMap<(String, String), Arc<TableDef>>,
    pub(crate) by_id: HashMap<u32, Arc<TableDef>>,
    pub(crate) next_id: u32,
}

#[derive(Clone, Copy)]
struct Counter {
    next: u64,
    reserved: u64,
}

#[derive(Default)]
struct GcState {
    queue: Vec<(u64, WriteBatch)>,
    leader: bool,
    next_ticket: u64,
    results: HashMap<u64, std::result::Result<(), String>>,
}

#[derive(Default)]
struct GroupCommit {
    state: Mutex<GcState>,
    cv: Condvar,
}

/// Shared engine state. Field order matters: `db` closes before the LOCK file is released.
pub(crate) struct Inner {
    pub(crate) db: DB,
    cache: Cache,
    /// Charges memtables to `cache`; resized with it.
    wbm: rocksdb::WriteBufferManager,
    /// Current block cache capacity (RocksDB's C API has no getter).
    cache_capacity: std::sync::atomic::AtomicUsize,
    pub(crate) catalog: RwLock<Catalog>,
    ddl: Mutex<()>,
    pub(crate) locks: LockManager,
    gc: GroupCommit,
    pub(crate) stats: Stats,
    counters: Mutex<HashMap<(u8, u32), Counter>>,
    next_txn: AtomicU64,
    flush_mode: AtomicU8,
    lock_wait_timeout_ms: AtomicU64,
    direct_reads: bool,
    datadir: PathBuf,
    /// Dropping the sender stops the background WAL syncer.
    stop_flusher: Mutex<Option<mpsc::Sender<()>>>,
    /// The background WAL syncer, joined when the last `Engine` handle goes away.
    flusher: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Live `Engine` handles (transactions hold `Inner` too, but do not count here).
    engine_handles: std::sync::atomic::AtomicUsize,
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
        let cache = block_cache(cfg.block_cache_bytes.max(1 << 20));
        // Memtables are charged to the same cache (dummy entries evict blocks as they grow),
        // and writes stall rather than let memtables exceed their share.
        let wbm_bytes = memtable_budget(cfg.block_cache_bytes);
        let wbm = rocksdb::WriteBufferManager::new_write_buffer_manager_with_cache(
            wbm_bytes,
            true,
            cache.clone(),
        );
        let mut bbo = BlockBasedOptions::default();
        bbo.set_block_cache(&cache);
        bbo.set_cache_index_and_filter_blocks(true);
        bbo.set_pin_l0_filter_and_index_blocks_in_cache(true);
        bbo.set_bloom_filter(10.0, false);
        bbo.set_block_size(16 << 10);
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.set_block_based_table_factory(&bbo);
        opts.set_write_buffer_manager(&wbm);
        opts.set_write_buffer_size(cfg.write_buffer_bytes.min(wbm_bytes / 2).max(1 << 20));
        opts.set_max_write_buffer_number(3);
        // Table readers (file metadata; their index/filter blocks are in the cache) for at
        // most this many files.
        opts.set_max_open_files(MAX_OPEN_FILES);
        opts.set_max_background_jobs(2);
        opts.set_compression_type(rocksdb::DBCompressionType::None);
        opts.set_keep_log_file_num(3);
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
        let catalog = load_catalog(&db)?;
        let (tx, rx) = mpsc::channel::<()>();
        let inner = Arc::new(Inner {
            db,
            cache,
            wbm,
            cache_capacity: std::sync::atomic::AtomicUsize::new(cfg.block_cache_bytes.max(1 << 20)),
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
            _lock_file: lock_file,
        });
        let weak: Weak<Inner> = Arc::downgrade(&inner);
        let handle = std::thread::Builder::new()
            .name("shoal-wal-sync".into())
            .spawn(move || wal_syncer(weak, rx))?;
        *lock_mutex(&inner.flusher) = Some(handle);
        Ok(Engine { inner })
    }

    /// Starts a transaction. Plain reads see a snapshot taken at the first read (REPEATABLE
    /// READ) or at each [`Transaction::begin_statement`] (READ COMMITTED).
    pub fn begin(&self, isolation: Isolation) -> Transaction {
        let id = self.inner.next_txn.fetch_add(1, Ordering::Relaxed);
        Transaction::new(self.inner.clone(), id, isolation)
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

    /// Changes `innodb_flush_log_at_trx_commit` at run time (0, 1 or 2).
    pub fn set_flush_log_at_trx_commit(&self, v: u8) {
        self.inner.flush_mode.store(v.min(2), Ordering::Relaxed);
    }

    /// Current `innodb_flush_log_at_trx_commit`.
    pub fn flush_log_at_trx_commit(&self) -> u8 {
        self.inner.flush_mode.load(Ordering::Relaxed)
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
        self.inner.wbm.set_buffer_size(memtable_budget(bytes));
        self.inner
            .cache_capacity
            .store(bytes.max(1 << 20), Ordering::Relaxed);
    }

    // ----- catalog reads -----

    /// Database names, sorted.
    pub fn databases(&self) -> Vec<String> {
        let cat = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<String> = cat.databases.iter().cloned().collect();
        v.sort();
        v
    }

    /// Whether a database exists.
    pub fn database_exists(&self, db: &str) -> bool {
        self.inner
            .catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .databases
            .contains(db)
    }

    /// Table names of `db`, sorted.
    pub fn tables(&self, db: &str) -> Result<Vec<String>> {
        let cat = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        if !cat.databases.contains(db) {
            return Err(StoreError::NoSuchDatabase(db.to_string()));
        }
        let mut v: Vec<String> = cat
            .tables
            .keys()
            .filter(|(d, _)| d == db)
            .map(|(_, t)| t.clone())
            .collect();
        v.sort();
        Ok(v)
    }

    /// The current definition of `db.name`.
    pub fn table(&self, db: &str, name: &str) -> Result<Arc<TableDef>> {
        self.inner.table(db, name)
    }

    // ----- DDL (each statement is one synced catalog write; DDL statements are serialized) -----

    /// CREATE DATABASE. Errors with `DatabaseExists` if it exists.
    pub fn create_database(&self, name: &str) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        if self.database_exists(name) {
            return Err(StoreError::DatabaseExists(name.to_string()));
        }
        let mut b = WriteBatch::default();
        b.put(catalog::db_key(name), b"{}");
        self.inner.write_sync(b)?;
        self.inner.catalog_mut().databases.insert(name.to_string());
        Ok(())
    }

    /// DROP DATABASE with all its tables. Returns the number of tables dropped.
    pub fn drop_database(&self, name: &str) -> Result<usize> {
        let _ddl = self.inner.lock_ddl();
        let tables = self.tables(name)?;
        let mut b = WriteBatch::default();
        let mut defs = Vec::new();
        for t in &tables {
            let def = self.inner.table(name, t)?;
            drop_table_writes(&mut b, &def);
            defs.push(def);
        }
        b.delete(catalog::db_key(name));
        self.inner.write_sync(b)?;
        let mut cat = self.inner.catalog_mut();
        for d in &defs {
            cat.tables.remove(&(d.db.clone(), d.name.clone()));
            cat.by_id.remove(&d.id);
        }
        cat.databases.remove(name);
        drop(cat);
        for d in &defs {
            self.inner.forget_counters(d.id);
        }
        Ok(tables.len())
    }

    /// CREATE TABLE. Validates the spec (names, key columns, AUTO_INCREMENT on an integer
    /// key column) and assigns key-space ids.
    pub fn create_table(&self, db: &str, spec: TableSpec) -> Result<Arc<TableDef>> {
        self.create_table_with(db, spec, true)
    }

    /// CREATE TABLE; with `fk_checks` false (`foreign_key_checks = 0`) a foreign key may name
    /// a parent table that does not exist yet, as MySQL allows: dump files create tables in
    /// name order, children before their parents. The key is then checked against the parent
    /// only when rows are (and the parent must exist by then).
    pub fn create_table_with(
        &self,
        db: &str,
        spec: TableSpec,
        fk_checks: bool,
    ) -> Result<Arc<TableDef>> {
        let _ddl = self.inner.lock_ddl();
        if !self.database_exists(db) {
            return Err(StoreError::NoSuchDatabase(db.to_string()));
        }
        if self.inner.table(db, &spec.name).is_ok() {
            return Err(StoreError::TableExists(spec.name.clone()));
        }
        validate_columns(&spec.columns)?;
        let find = |n: &str| {
            spec.columns
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(n))
                .ok_or_else(|| StoreError::NoSuchColumn(n.to_string()))
        };
        let mut columns = spec.columns.clone();
        let primary_key = if spec.primary_key.is_empty() {
            None
        } else {
            let pk = spec
                .primary_key
                .iter()
                .map(|n| find(n))
                .collect::<Result<Vec<_>>>()?;
            for &i in &pk {
                columns[i].nullable = false; // PRIMARY KEY implies NOT NULL
            }
            Some(pk)
        };
        let mut next_id = self.inner.catalog_read().next_id;
        let table_id = next_id;
        next_id += 1;
        let mut indexes: Vec<IndexDef> = Vec::new();
        for ix in &spec.indexes {
            if ix.name.eq_ignore_ascii_case("PRIMARY")
                || indexes
                    .iter()
                    .any(|i| i.name.eq_ignore_ascii_case(&ix.name))
            {
                return Err(StoreError::IndexExists(ix.name.clone()));
            }
            if ix.columns.is_empty() {
                return Err(StoreError::BadDefinition(format!(
                    "index '{}' has no columns",
                    ix.name
                )));
            }
            let cols = ix
                .columns
                .iter()
                .map(|n| find(n))
                .collect::<Result<Vec<_>>>()?;
            indexes.push(IndexDef {
                id: next_id,
                name: ix.name.clone(),
                columns: cols,
                unique: ix.unique,
            });
            next_id += 1;
        }
        let mut def = TableDef {
            id: table_id,
            db: db.to_string(),
            name: spec.name.clone(),
            columns,
            primary_key,
            indexes,
            auto_increment_start: spec.auto_increment_start.unwrap_or(1).max(1),
            foreign_keys: Vec::new(),
        };
        validate_auto_increment(&def)?;
        for fk in &spec.foreign_keys {
            // InnoDB creates the index a foreign key needs when the table has none (named
            // after the constraint, else after its first column).
            let cols = fk
                .columns
                .iter()
                .map(|n| find(n))
                .collect::<Result<Vec<_>>>()?;
            if def.key_with_prefix(&cols).is_none() {
                let name = fk.name.clone().unwrap_or_else(|| fk.columns[0].clone());
                def.indexes.push(IndexDef {
                    id: next_id,
                    name,
                    columns: cols,
                    unique: false,
                });
                next_id += 1;
            }
            let parent_db = fk.ref_db.clone().unwrap_or_else(|| db.to_string());
            let parent = if parent_db == db && fk.ref_table.eq_ignore_ascii_case(&def.name) {
                Some(Arc::new(def.clone()))
            } else {
                match self.inner.table(&parent_db, &fk.ref_table) {
                    Ok(p) => Some(p),
                    Err(_) if !fk_checks => None,
                    Err(_) => {
                        return Err(fk_error(
                            shoal_errors::ER_FK_CANNOT_OPEN_PARENT.code,
                            format!("Failed to open the referenced table '{}'", fk.ref_table),
                        ))
                    }
                }
            };
            let names = self.fk_names(db);
            let f = foreign_key(&def, fk, parent.as_deref(), &names)?;
            def.foreign_keys.push(f);
        }
        let mut b = WriteBatch::default();
        b.put(
            catalog::table_key(db, &def.name),
            serde_json::to_vec(&def).expect("serializable"),
        );
        b.put(catalog::next_id_key(), next_id.to_be_bytes());
        self.inner.write_sync(b)?;
        let def = Arc::new(def);
        let mut cat = self.inner.catalog_mut();
        cat.next_id = next_id;
        cat.tables
            .insert((db.to_string(), def.name.clone()), def.clone());
        cat.by_id.insert(def.id, def.clone());
        Ok(def)
    }

    /// DROP TABLE: removes the definition and (with a range delete) all rows and index entries.
    pub fn drop_table(&self, db: &str, name: &str) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, name)?;
        let mut b = WriteBatch::default();
        drop_table_writes(&mut b, &def);
        self.inner.write_sync(b)?;
        let mut cat = self.inner.catalog_mut();
        cat.tables.remove(&(db.to_string(), name.to_string()));
        cat.by_id.remove(&def.id);
        drop(cat);
        self.inner.forget_counters(def.id);
        Ok(())
    }

    /// TRUNCATE TABLE: deletes all rows and index entries and resets AUTO_INCREMENT.
    pub fn truncate_table(&self, db: &str, name: &str) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, name)?;
        let mut b = WriteBatch::default();
        delete_prefix(&mut b, &catalog::rows_prefix(def.id));
        for ix in &def.indexes {
            delete_prefix(&mut b, &catalog::index_prefix(ix.id));
        }
        b.delete(catalog::counter_key(b'A', def.id));
        b.delete(catalog::counter_key(b'H', def.id));
        self.inner.write_sync(b)?;
        self.inner.forget_counters(def.id);
        Ok(())
    }

    /// CREATE INDEX / ALTER TABLE ADD INDEX: builds the index over the existing rows. A UNIQUE
    /// index over duplicate values fails with `DuplicateKey` and leaves nothing behind.
    /// Concurrent writes to the table during the build are not supported (no metadata locks
    /// yet): the SQL layer should not run DDL and DML on one table at the same time.
    pub fn create_index(&self, db: &str, table: &str, spec: IndexSpec) -> Result<Arc<TableDef>> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, table)?;
        if spec.name.eq_ignore_ascii_case("PRIMARY") || def.index(&spec.name).is_some() {
            return Err(StoreError::IndexExists(spec.name.clone()));
        }
        if spec.columns.is_empty() {
            return Err(StoreError::BadDefinition(format!(
                "index '{}' has no columns",
                spec.name
            )));
        }
        let cols = spec
            .columns
            .iter()
            .map(|n| {
                def.column_index(n)
                    .ok_or_else(|| StoreError::NoSuchColumn(n.clone()))
            })
            .collect::<Result<Vec<_>>>()?;
        let next_id = self.inner.catalog_read().next_id;
        let index = IndexDef {
            id: next_id,
            name: spec.name.clone(),
            columns: cols,
            unique: spec.unique,
        };
        // Reserve the id first, so a crash mid-build never reuses it.
        let mut b = WriteBatch::default();
        b.put(catalog::next_id_key(), (next_id + 1).to_be_bytes());
        self.inner.write_sync(b)?;
        self.inner.catalog_mut().next_id = next_id + 1;

        let types: Vec<_> = def.columns.iter().map(|c| c.ty).collect();
        let prefix = def.rows_prefix();
        let end = prefix_successor(&prefix).expect("prefix has a successor");
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        let mut batch = WriteBatch::default();
        let mut cursor = prefix.clone();
        let mut failure = None;
        'outer: loop {
            let chunk = self
                .inner
                .scan_chunk(&cursor, Some(&end), None, 512, false, None)?;
            let Some(last) = chunk.last() else { break };
            cursor = prefix_successor_key(&last.0);
            for (k, v) in &chunk {
                let row = decode_stored(&def, &types, v).map_err(StoreError::Corrupt)?;
                let pk = &k[prefix.len()..];
                let (ik, unique_slot) = catalog::index_entry_key(&index, &row, pk);
                if unique_slot && !seen.insert(ik.clone()) {
                    failure = Some(dup_error(&def, Some(&index), &row));
                    break 'outer;
                }
                batch.put(ik, pk);
                if batch.len() >= 10_000 {
                    self.inner.db.write(std::mem::take(&mut batch))?;
                }
            }
        }
        if let Some(err) = failure {
            let mut b = WriteBatch::default();
            delete_prefix(&mut b, &catalog::index_prefix(index.id));
            self.inner.db.write(b)?;
            return Err(err);
        }
        self.inner.db.write(batch)?;
        let mut new_def = (*def).clone();
        new_def.indexes.push(index);
        self.inner.replace_table(new_def)
    }

    /// ALTER TABLE ADD [CONSTRAINT name] FOREIGN KEY: the child needs an index whose leading
    /// columns are the foreign key's (create it first); existing rows are not checked here
    /// (the SQL layer does, under `foreign_key_checks`).
    pub fn add_foreign_key(
        &self,
        db: &str,
        table: &str,
        spec: &catalog::ForeignKeySpec,
    ) -> Result<Arc<TableDef>> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, table)?;
        let parent_db = spec.ref_db.clone().unwrap_or_else(|| db.to_string());
        let parent = if parent_db == db && spec.ref_table.eq_ignore_ascii_case(table) {
            def.clone()
        } else {
            self.inner.table(&parent_db, &spec.ref_table).map_err(|_| {
                fk_error(
                    shoal_errors::ER_FK_CANNOT_OPEN_PARENT.code,
                    format!("Failed to open the referenced table '{}'", spec.ref_table),
                )
            })?
        };
        let f = foreign_key(&def, spec, Some(&parent), &self.fk_names(db))?;
        let cols = f.columns.clone();
        if def.key_with_prefix(&cols).is_none() {
            return Err(fk_error(
                shoal_errors::ER_FK_NO_INDEX_PARENT.code,
                format!(
                    "Failed to add the foreign key constraint. Missing index for constraint '{}' in the referenced table '{}'",
                    f.name, table
                ),
            ));
        }
        let mut new_def = (*def).clone();
        new_def.foreign_keys.push(f);
        self.inner.replace_table(new_def)
    }

    /// ALTER TABLE DROP FOREIGN KEY name (its index stays, as in InnoDB).
    pub fn drop_foreign_key(&self, db: &str, table: &str, name: &str) -> Result<Arc<TableDef>> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, table)?;
        if !def
            .foreign_keys
            .iter()
            .any(|f| f.name.eq_ignore_ascii_case(name))
        {
            return Err(fk_error(
                shoal_errors::ER_CANT_DROP_FIELD_OR_KEY.code,
                format!("Can't DROP '{name}'; check that column/key exists"),
            ));
        }
        let mut new_def = (*def).clone();
        new_def
            .foreign_keys
            .retain(|f| !f.name.eq_ignore_ascii_case(name));
        self.inner.replace_table(new_def)
    }

    /// The foreign keys of other tables (and of the table itself) that reference `db.table`:
    /// (the referencing table, the position of the key in its `foreign_keys`).
    pub fn referencing(&self, db: &str, table: &str) -> Vec<(Arc<TableDef>, usize)> {
        let cat = self.inner.catalog_read();
        let mut out = Vec::new();
        for def in cat.tables.values() {
            for (i, f) in def.foreign_keys.iter().enumerate() {
                if f.ref_db == db && f.ref_table.eq_ignore_ascii_case(table) {
                    out.push((def.clone(), i));
                }
            }
        }
        out
    }

    /// Foreign key names in `db` (they are unique per database in InnoDB).
    fn fk_names(&self, db: &str) -> Vec<String> {
        let cat = self.inner.catalog_read();
        cat.tables
            .values()
            .filter(|d| d.db == db)
            .flat_map(|d| d.foreign_keys.iter().map(|f| f.name.to_ascii_lowercase()))
            .collect()
    }

    /// ALTER TABLE ADD COLUMN at the end, instantly: only the definition changes. Rows stored
    /// before stop short of the new column and read its `added_default` (which the SQL layer
    /// sets: the DEFAULT, the implicit zero of a NOT NULL column, or NULL). A name already there
    /// is 1060 (or nothing, with `if_not_exists`).
    pub fn add_column(
        &self,
        db: &str,
        table: &str,
        column: ColumnDef,
        if_not_exists: bool,
    ) -> Result<Arc<TableDef>> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, table)?;
        if def.column_index(&column.name).is_some() && if_not_exists {
            return Ok(def);
        }
        let mut new_def = (*def).clone();
        new_def.columns.push(column);
        validate_columns(&new_def.columns)?;
        self.inner.replace_table(new_def)
    }

    /// An ALTER TABLE that changes what rows store (DROP COLUMN, MODIFY / CHANGE COLUMN to
    /// another type): InnoDB's copy algorithm. Every row of `old` is decoded, passed through
    /// `convert` and written, encoded for `new_def`'s columns, under a fresh table id, with
    /// fresh index ids and every index entry built again from the new row (a type change may
    /// change how an indexed value or the primary key encodes; a dropped column leaves its
    /// indexes). Then one synced write switches the definition to `new_def` with the new ids,
    /// carries the AUTO_INCREMENT and hidden row-id counters over and range-deletes the old
    /// rows and entries. A `convert` error (a value the new type cannot hold) or a duplicate in
    /// the primary key or a UNIQUE index (1062) removes the copy and leaves the table as it
    /// was; so does a crash before the switch, except that the copied keys stay under ids
    /// nothing names (ids are never reused).
    ///
    /// `new_def` gives positions in its own columns; its ids are replaced here. `old` must
    /// still be the table's definition (the caller planned against it); the caller keeps
    /// writers out of the table while it runs.
    pub fn rewrite_table(
        &self,
        old: &Arc<TableDef>,
        mut new_def: TableDef,
        convert: &mut dyn FnMut(Vec<Datum>) -> Result<Vec<Datum>>,
    ) -> Result<Arc<TableDef>> {
        let _ddl = lock_mutex(&self.inner.ddl);
        let def = self.inner.table(&old.db, &old.name)?;
        if *def != **old {
            return Err(StoreError::BadDefinition(format!(
                "table '{}' changed during ALTER TABLE",
                old.name
            )));
        }
        validate_columns(&new_def.columns)?;
        let first_id = self.inner.catalog_read().next_id;
        let next_id = first_id + 1 + new_def.indexes.len() as u32;
        // Reserve the ids first, so a crash mid-copy never reuses them.
        let mut b = WriteBatch::default();
        b.put(catalog::next_id_key(), next_id.to_be_bytes());
        self.inner.write_sync(b)?;
        self.inner.catalog_mut().next_id = next_id;
        new_def.id = first_id;
        for (i, ix) in new_def.indexes.iter_mut().enumerate() {
            ix.id = first_id + 1 + i as u32;
        }
        for c in &mut new_def.columns {
            // Every copied row stores every column.
            c.added_default = None;
        }
        validate_auto_increment(&new_def)?;
        let pk_types = |d: &TableDef| {
            d.primary_key
                .as_ref()
                .map(|pk| pk.iter().map(|&i| d.columns[i].ty).collect::<Vec<_>>())
        };
        // The primary key's values can collide only if their type changed.
        let check_pk = pk_types(&def) != pk_types(&new_def);

        let types: Vec<_> = def.columns.iter().map(|c| c.ty).collect();
        let prefix = def.rows_prefix();
        let end = prefix_successor(&prefix).expect("prefix has a successor");
        let mut batch = WriteBatch::default();
        let mut cursor = prefix.clone();
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        let copied: Result<()> = (|| {
            loop {
                let chunk = self
                    .inner
                    .scan_chunk(&cursor, Some(&end), None, 512, false, None)?;
                let Some(last) = chunk.last() else { break };
                cursor = prefix_successor_key(&last.0);
                for (k, v) in &chunk {
                    let row = decode_stored(&def, &types, v).map_err(StoreError::Corrupt)?;
                    let row = convert(row)?;
                    let pk = catalog::pk_of_row(&new_def, &row)
                        .unwrap_or_else(|| k[prefix.len()..].to_vec());
                    let key = catalog::row_key(new_def.id, &pk);
                    if check_pk && !seen.insert(key.clone()) {
                        return Err(dup_error(&new_def, None, &row));
                    }
                    for ix in &new_def.indexes {
                        let (ik, unique_slot) = catalog::index_entry_key(ix, &row, &pk);
                        if unique_slot && !seen.insert(ik.clone()) {
                            return Err(dup_error(&new_def, Some(ix), &row));
                        }
                        batch.put(ik, &pk);
                    }
                    batch.put(key, crate::codec::encode_row(&row));
                    if batch.len() >= 10_000 {
                        self.inner.db.write(std::mem::take(&mut batch))?;
                    }
                }
            }
            self.inner.db.write(std::mem::take(&mut batch))?;
            Ok(())
        })();
        if let Err(e) = copied {
            let mut b = WriteBatch::default();
            delete_prefix(&mut b, &catalog::rows_prefix(new_def.id));
            for ix in &new_def.indexes {
                delete_prefix(&mut b, &catalog::index_prefix(ix.id));
            }
            self.inner.db.write(b)?;
            return Err(e);
        }
        let mut b = WriteBatch::default();
        b.put(
            catalog::table_key(&new_def.db, &new_def.name),
            serde_json::to_vec(&new_def).expect("serializable"),
        );
        for kind in [b'A', b'H'] {
            let next = self.inner.peek_counter(kind, &def)?;
            b.put(catalog::counter_key(kind, new_def.id), next.to_be_bytes());
            b.delete(catalog::counter_key(kind, def.id));
        }
        delete_prefix(&mut b, &prefix);
        for ix in &def.indexes {
            delete_prefix(&mut b, &catalog::index_prefix(ix.id));
        }
        self.inner.write_sync(b)?;
        self.inner.forget_counters(def.id);
        let new_def = Arc::new(new_def);
        let mut cat = self.inner.catalog_mut();
        cat.tables
            .insert((new_def.db.clone(), new_def.name.clone()), new_def.clone());
        cat.by_id.remove(&def.id);
        cat.by_id.insert(new_def.id, new_def.clone());
        Ok(new_def)
    }

    /// An ALTER TABLE that changes only the definition (renamed columns, new defaults, columns
    /// added at the end): `new_def` replaces `old`, which must still be the table's definition.
    /// No stored row changes, so the caller must not change a stored column's type or make a
    /// nullable one NOT NULL (that is [`Engine::rewrite_table`]).
    pub fn replace_definition(
        &self,
        old: &Arc<TableDef>,
        new_def: TableDef,
    ) -> Result<Arc<TableDef>> {
        let _ddl = lock_mutex(&self.inner.ddl);
        let def = self.inner.table(&old.db, &old.name)?;
        if *def != **old || new_def.id != def.id {
            return Err(StoreError::BadDefinition(format!(
                "table '{}' changed during ALTER TABLE",
                old.name
            )));
        }
        validate_columns(&new_def.columns)?;
        validate_auto_increment(&new_def)?;
        self.inner.replace_table(new_def)
    }

    /// DROP INDEX / ALTER TABLE DROP INDEX.
    pub fn drop_index(&self, db: &str, table: &str, name: &str) -> Result<Arc<TableDef>> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, table)?;
        let Some(ix) = def.index(name).cloned() else {
            return Err(StoreError::NoSuchIndex(name.to_string()));
        };
        let mut new_def = (*def).clone();
        new_def.indexes.retain(|i| i.id != ix.id);
        let new = self.inner.replace_table(new_def)?;
        let mut b = WriteBatch::default();
        delete_prefix(&mut b, &catalog::index_prefix(ix.id));
        self.inner.db.write(b)?;
        Ok(new)
    }

    // ----- auto-increment -----

    /// Reserves `n` consecutive AUTO_INCREMENT values for `table` and returns the first. Values
    /// are never handed out twice, even across crashes (rolled-back inserts leave gaps).
    pub fn next_auto_increment(&self, table: &TableDef, n: u64) -> Result<u64> {
        self.inner.alloc_counter(b'A', table, n)
    }

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

    /// The value the next AUTO_INCREMENT insert would get (for SHOW TABLE STATUS).
    pub fn peek_auto_increment(&self, table: &TableDef) -> Result<u64> {
        self.inner.peek_counter(b'A', table)
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

fn prefix_successor_key(k: &[u8]) -> Vec<u8> {
    // The smallest key strictly greater than `k`.
    let mut v = k.to_vec();
    v.push(0);
    v
}

fn delete_prefix(b: &mut WriteBatch, prefix: &[u8]) {
    let end = prefix_successor(prefix).expect("prefix has a successor");
    b.delete_range(prefix, &end[..]);
}

fn drop_table_writes(b: &mut WriteBatch, def: &TableDef) {
    b.delete(catalog::table_key(&def.db, &def.name));
    delete_prefix(b, &catalog::rows_prefix(def.id));
    for ix in &def.indexes {
        delete_prefix(b, &catalog::index_prefix(ix.id));
    }
    b.delete(catalog::counter_key(b'A', def.id));
    b.delete(catalog::counter_key(b'H', def.id));
}

fn validate_columns(cols: &[ColumnDef]) -> Result<()> {
    if cols.is_empty() {
        return Err(StoreError::Definition {
            code: shoal_errors::ER_TABLE_MUST_HAVE_COLUMNS.code,
            state: shoal_errors::ER_TABLE_MUST_HAVE_COLUMNS.state,
            message: "A table must have at least 1 column".into(),
        });
    }
    for (i, c) in cols.iter().enumerate() {
        if cols[..i]
            .iter()
            .any(|d| d.name.eq_ignore_ascii_case(&c.name))
        {
            return Err(StoreError::Definition {
                code: shoal_errors::ER_DUP_FIELDNAME.code,
                state: shoal_errors::ER_DUP_FIELDNAME.state,
                message: format!("Duplicate column name '{}'", c.name),
            });
        }
        if c.auto_increment && !c.ty.is_integer() {
            return Err(StoreError::Definition {
                code: shoal_errors::ER_WRONG_FIELD_SPEC.code,
                state: shoal_errors::ER_WRONG_FIELD_SPEC.state,
                message: format!("Incorrect column specifier for column '{}'", c.name),
            });
        }
    }
    if cols.iter().filter(|c| c.auto_increment).count() > 1 {
        return Err(StoreError::BadDefinition(
            "Incorrect table definition; there can be only one auto column and it must be defined as a key".into(),
        ));
    }
    Ok(())
}

fn validate_auto_increment(def: &TableDef) -> Result<()> {
    let Some(ai) = def.auto_increment_column() else {
        return Ok(());
    };
    let in_pk = def
        .primary_key
        .as_ref()
        .is_some_and(|pk| pk.first() == Some(&ai));
    let in_ix = def.indexes.iter().any(|i| i.columns.first() == Some(&ai));
    if !in_pk && !in_ix {
        return Err(StoreError::BadDefinition(
            "Incorrect table definition; there can be only one auto column and it must be defined as a key".into(),
        ));
    }
    Ok(())
}

/// Builds the 1062 error for `row` colliding on `index` (None = PRIMARY).
pub(crate) fn dup_error(def: &TableDef, index: Option<&IndexDef>, row: &[Datum]) -> StoreError {
    let (name, cols): (String, Vec<usize>) = match index {
        Some(ix) => (ix.name.clone(), ix.columns.clone()),
        None => (
            "PRIMARY".into(),
            def.primary_key.clone().unwrap_or_default(),
        ),
    };
    let value = cols
        .iter()
        .map(|&i| row[i].to_string())
        .collect::<Vec<_>>()
        .join("-");
    StoreError::DuplicateKey {
        key_name: name,
        value,
    }
}

fn load_catalog(db: &DB) -> Result<Catalog> {
    let mut cat = Catalog {
        next_id: 1,
        ..Default::default()
    };
    let meta_end = [SPACE_META + 1];
    for item in db.iterator(rocksdb::IteratorMode::From(
        &[SPACE_META],
        rocksdb::Direction::Forward,
    )) {
        let (k, v) = item?;
        if k.as_ref() >= &meta_end[..] {
            break;
        }
        match k.get(1) {
            Some(b'D') => {
                let name = String::from_utf8(k[2..].to_vec())
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?;
                cat.databases.insert(name);
            }
            Some(b'T') => {
                let def: TableDef = serde_json::from_slice(&v)
                    .map_err(|e| StoreError::Corrupt(format!("table definition: {e}")))?;
                let def = Arc::new(def);
                cat.tables
                    .insert((def.db.clone(), def.name.clone()), def.clone());
                cat.by_id.insert(def.id, def);
            }
            Some(b'M') => {
                let arr: [u8; 4] = v
                    .as_ref()
                    .try_into()
                    .map_err(|_| StoreError::Corrupt("next id".into()))?;
                cat.next_id = u32::from_be_bytes(arr);
            }
            _ => {}
        }
    }
    Ok(cat)
}

fn wal_syncer(weak: Weak<Inner>, stop: mpsc::Receiver<()>) {
    loop {
        match stop.recv_timeout(Duration::from_secs(1)) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        let Some(inner) = weak.upgrade() else { return };
        if inner.flush_mode.load(Ordering::Relaxed) != 1 {
            if let Err(e) = inner.db.flush_wal(true) {
                tracing::warn!("background WAL sync failed: {e}");
            } else {
                Stats::add(&inner.stats.fsyncs, 1);
            }
        }
    }
}

impl Inner {
    pub(crate) fn catalog_read(&self) -> std::sync::RwLockReadGuard<'_, Catalog> {
        self.catalog.read().unwrap_or_else(|e| e.into_inner())
    }

    fn catalog_mut(&self) -> std::sync::RwLockWriteGuard<'_, Catalog> {
        self.catalog.write().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn table(&self, db: &str, name: &str) -> Result<Arc<TableDef>> {
        let cat = self.catalog_read();
        if let Some(t) = cat.tables.get(&(db.to_string(), name.to_string())) {
            return Ok(t.clone());
        }
        if !cat.databases.contains(db) {
            return Err(StoreError::NoSuchDatabase(db.to_string()));
        }
        Err(StoreError::NoSuchTable {
            db: db.to_string(),
            table: name.to_string(),
        })
    }

    /// The current definition of a table by id (DML always uses the latest definition, so
    /// index maintenance follows CREATE/DROP INDEX).
    pub(crate) fn table_by_id(&self, t: &TableDef) -> Result<Arc<TableDef>> {
        self.catalog_read()
            .by_id
            .get(&t.id)
            .cloned()
            .ok_or_else(|| StoreError::NoSuchTable {
                db: t.db.clone(),
                table: t.name.clone(),
            })
    }

    fn replace_table(&self, def: TableDef) -> Result<Arc<TableDef>> {
        let mut b = WriteBatch::default();
        b.put(
            catalog::table_key(&def.db, &def.name),
            serde_json::to_vec(&def).expect("serializable"),
        );
        self.write_sync(b)?;
        let def = Arc::new(def);
        let mut cat = self.catalog_mut();
        cat.tables
            .insert((def.db.clone(), def.name.clone()), def.clone());
        cat.by_id.insert(def.id, def.clone());
        Ok(def)
    }

    /// Serializes DDL statements. Waiting behind another DDL (a synced catalog write, or a
    /// long ALTER) is reported as a metadata-lock wait, so a pool worker stuck here frees its
    /// group's slot; the uncontended case costs one `try_lock` and reports nothing.
    fn lock_ddl(&self) -> MutexGuard<'_, ()> {
        match self.ddl.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                let _w = shoal_wait::wait(WaitKind::MetaDataLock);
                lock_mutex(&self.ddl)
            }
        }
    }

    /// A synced write outside transactions (DDL, counters): reported as a `Sync` wait.
    fn write_sync(&self, b: WriteBatch) -> Result<()> {
        let _w = shoal_wait::wait(WaitKind::Sync);
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.db.write_opt(b, &wo)?;
        Stats::add(&self.stats.fsyncs, 1);
        Ok(())
    }

    fn forget_counters(&self, table_id: u32) {
        let mut c = lock_mutex(&self.counters);
        c.remove(&(b'A', table_id));
        c.remove(&(b'H', table_id));
    }

    fn load_counter(&self, kind: u8, table: &TableDef) -> Result<Counter> {
        let start = if kind == b'A' {
            table.auto_increment_start
        } else {
            1
        };
        let v = self.db.get(catalog::counter_key(kind, table.id))?;
        let reserved = match v {
            Some(b) => u64::from_be_bytes(
                b.as_slice()
                    .try_into()
                    .map_err(|_| StoreError::Corrupt("counter".into()))?,
            ),
            None => start,
        };
        Ok(Counter {
            next: reserved.max(start),
            reserved: reserved.max(start),
        })
    }

    fn persist_counter(&self, kind: u8, table_id: u32, reserved: u64) -> Result<()> {
        let mut b = WriteBatch::default();
        b.put(catalog::counter_key(kind, table_id), reserved.to_be_bytes());
        if self.flush_mode.load(Ordering::Relaxed) == 1 {
            self.write_sync(b)
        } else {
            self.db.write(b)?;
            Ok(())
        }
    }

    /// Allocates `n` values of counter `kind` (`A` auto-increment, `H` hidden row id).
    pub(crate) fn alloc_counter(&self, kind: u8, table: &TableDef, n: u64) -> Result<u64> {
        let mut map = lock_mutex(&self.counters);
        let c = match map.get(&(kind, table.id)) {
            Some(c) => *c,
            None => self.load_counter(kind, table)?,
        };
        let first = c.next;
        let next = first.checked_add(n).ok_or_else(|| StoreError::BadValue {
            column: table.name.clone(),
            detail: "auto-increment counter exhausted".into(),
        })?;
        let mut reserved = c.reserved;
        if next > reserved {
            reserved = next.saturating_add(AUTOINC_CHUNK);
            self.persist_counter(kind, table.id, reserved)?;
        }
        map.insert((kind, table.id), Counter { next, reserved });
        Ok(first)
    }

    /// Makes sure counter `kind` never issues `used` or anything below it again.
    pub(crate) fn observe_counter(&self, kind: u8, table: &TableDef, used: u64) -> Result<()> {
        let mut map = lock_mutex(&self.counters);
        let c = match map.get(&(kind, table.id)) {
            Some(c) => *c,
            None => self.load_counter(kind, table)?,
        };
        if used < c.next {
            map.insert((kind, table.id), c);
            return Ok(());
        }
        let next = used.saturating_add(1);
        let mut reserved = c.reserved;
        if next > reserved {
            reserved = next.saturating_add(AUTOINC_CHUNK);
            self.persist_counter(kind, table.id, reserved)?;
        }
        map.insert((kind, table.id), Counter { next, reserved });
        Ok(())
    }

    fn peek_counter(&self, kind: u8, table: &TableDef) -> Result<u64> {
        let mut map = lock_mutex(&self.counters);
        let c = match map.get(&(kind, table.id)) {
            Some(c) => *c,
            None => self.load_counter(kind, table)?,
        };
        map.insert((kind, table.id), c);
        Ok(c.next)
    }

    pub(crate) fn default_lock_wait_timeout(&self) -> Duration {
        Duration::from_millis(self.lock_wait_timeout_ms.load(Ordering::Relaxed))
    }

    pub(crate) fn snapshot(&self) -> Snap {
        // SAFETY: the snapshot borrows `self.db`. Every `Snap` is stored in a `Transaction`
        // (or a local) that also holds an `Arc<Inner>` and drops the snapshot first, so the
        // database outlives it; `Inner` is heap-allocated in an `Arc` and never moves.
        unsafe {
            std::mem::transmute::<rocksdb::SnapshotWithThreadMode<'_, DB>, Snap>(self.db.snapshot())
        }
    }

    /// A point read: probes the block cache first; only on a miss reports a DISKIO wait and
    /// reads from disk.
    pub(crate) fn get(&self, key: &[u8], snap: Option<&Snap>) -> Result<Option<Vec<u8>>> {
        Stats::add(&self.stats.read_requests, 1);
        let mut ro = ReadOptions::default();
        ro.set_read_tier(ReadTier::BlockCache);
        if let Some(s) = snap {
            ro.set_snapshot(s);
        }
        match self.db.get_pinned_opt(key, &ro) {
            Ok(v) => Ok(v.map(|p| p.to_vec())),
            Err(e) if e.kind() == ErrorKind::Incomplete => {
                Stats::add(&self.stats.disk_reads, 1);
                let mut ro = ReadOptions::default();
                if let Some(s) = snap {
                    ro.set_snapshot(s);
                }
                let _w = shoal_wait::wait(WaitKind::DiskIo);
                Ok(self.db.get_pinned_opt(key, &ro)?.map(|p| p.to_vec()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Reads up to `max` committed entries with keys in `[from, to)` (from the snapshot, or the
    /// latest committed state when `snap` is None). Like [`Inner::get`], iteration runs on the
    /// block cache only; when it hits a block that is not cached, the next entry is read with a
    /// normal iterator inside a DISKIO wait and the cache-only iterator resumes after it.
    pub(crate) fn scan_chunk(
        &self,
        from: &[u8],
        to: Option<&[u8]>,
        snap: Option<&Snap>,
        max: usize,
        count_requests: bool,
        mut cache: Option<&mut Option<SnapIter>>,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let local;
        let snap = match snap {
            Some(s) => s,
            None => {
                local = self.snapshot();
                &local
            }
        };
        // A reusable iterator (`cache` given) has no upper bound: the bound is checked here.
        let manual_bound = cache.is_some() && to.is_some();
        let mk = |cache_only: bool, bounded: bool| -> SnapIter {
            let mut ro = ReadOptions::default();
            if cache_only {
                ro.set_read_tier(ReadTier::BlockCache);
            }
            ro.set_snapshot(snap);
            if let (Some(t), true) = (to, bounded) {
                ro.set_iterate_upper_bound(t.to_vec());
            }
            // SAFETY: the iterator borrows `self.db` (and reads `snap`). A local one drops at
            // the end of this call, before `local`; one handed back through `cache` lives in a
            // `Transaction`, which declares it before its snapshot and its `Arc<Inner>` and
            // drops it whenever the snapshot is replaced, so both outlive it.
            unsafe {
                std::mem::transmute::<rocksdb::DBRawIteratorWithThreadMode<'_, DB>, SnapIter>(
                    self.db.raw_iterator_opt(ro),
                )
            }
        };
        let beyond = |k: &[u8]| manual_bound && to.is_some_and(|t| k >= t);
        let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut reusable = cache.is_some();
        let mut it = match cache.as_mut().and_then(|c| c.take()) {
            Some(i) => i,
            None => mk(true, !manual_bound),
        };
        it.seek(from);
        while out.len() < max {
            if it.valid() {
                let k = it.key().unwrap_or_default();
                if reusable && beyond(k) {
                    break;
                }
                out.push((k.to_vec(), it.value().unwrap_or_default().to_vec()));
                it.next();
                continue;
            }
            match it.status() {
                Ok(()) => break,
                Err(e) if e.kind() == ErrorKind::Incomplete && reusable => {
                    // The unbounded iterator may have run into an uncached block past the
                    // range: continue with a bounded one, which stops at the bound.
                    reusable = false;
                    let (pos, skip) = match out.last() {
                        Some((k, _)) => (k.clone(), true),
                        None => (from.to_vec(), false),
                    };
                    it = mk(true, true);
                    it.seek(&pos);
                    if skip && it.valid() && it.key() == Some(&pos[..]) {
                        it.next();
                    }
                }
                Err(e) if e.kind() == ErrorKind::Incomplete => {
                    Stats::add(&self.stats.disk_reads, 1);
                    let (pos, skip) = match out.last() {
                        Some((k, _)) => (k.clone(), true),
                        None => (from.to_vec(), false),
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
                        out.push((
                            full.key().unwrap_or_default().to_vec(),
                            full.value().unwrap_or_default().to_vec(),
                        ));
                    }
                    let last = out.last().map(|(k, _)| k.clone()).unwrap_or_default();
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
            Stats::add(&self.stats.read_requests, out.len() as u64);
        }
        Ok(out)
    }

    /// Writes a transaction's batch according to `innodb_flush_log_at_trx_commit`.
    pub(crate) fn commit_batch(&self, batch: WriteBatch) -> Result<()> {
        Stats::add(&self.stats.write_commits, 1);
        if self.flush_mode.load(Ordering::Relaxed) != 1 {
            // Flush modes 0 and 2: no fsync, but the WAL write itself can block (a RocksDB
            // write stall, the kernel throttling dirty pages): reported as disk I/O so the
            // pool sees it like the synced path's `GroupCommit`/`Sync` waits.
            let _w = shoal_wait::wait(WaitKind::DiskIo);
            self.db.write_opt(batch, &WriteOptions::default())?;
            return Ok(());
        }
        let gc = &self.gc;
        let mut st = lock_mutex(&gc.state);
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.queue.push((ticket, batch));
        let mut follower_wait = None;
        loop {
            if let Some(r) = st.results.remove(&ticket) {
                drop(st);
                drop(follower_wait);
                return r.map_err(StoreError::commit_failed);
            }
            if !st.leader {
                // Lead: take every queued batch, write them all, sync once.
                drop(follower_wait.take());
                st.leader = true;
                let group = std::mem::take(&mut st.queue);
                drop(st);
                let results = self.write_group(group);
                st = lock_mutex(&gc.state);
                st.leader = false;
                st.results.extend(results);
                gc.cv.notify_all();
                continue;
            }
            if follower_wait.is_none() {
                follower_wait = Some(shoal_wait::wait(WaitKind::GroupCommit));
            }
            st = gc.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn write_group(
        &self,
        group: Vec<(u64, WriteBatch)>,
    ) -> Vec<(u64, std::result::Result<(), String>)> {
        Stats::add(&self.stats.commit_groups, 1);
        let n = group.len();
        let mut results = Vec::with_capacity(n);
        let _w = shoal_wait::wait(WaitKind::Sync);
        let mut pending_sync: Vec<u64> = Vec::new();
        for (i, (ticket, batch)) in group.into_iter().enumerate() {
            let mut wo = WriteOptions::default();
            // The last write of the group syncs the WAL, which makes every earlier write of the
            // group durable too (RocksDB syncs the whole log up to this write).
            wo.set_sync(i + 1 == n);
            match self.db.write_opt(batch, &wo) {
                Ok(()) => pending_sync.push(ticket),
                Err(e) => results.push((ticket, Err(e.to_string()))),
            }
        }
        // If the last (syncing) write failed, sync explicitly for the earlier ones.
        let synced =
            if results.iter().any(|(t, _)| !pending_sync.contains(t)) && !pending_sync.is_empty() {
                self.db.flush_wal(true).map_err(|e| e.to_string())
            } else {
                Ok(())
            };
        Stats::add(&self.stats.fsyncs, 1);
        for t in pending_sync {
            results.push((t, synced.clone()));
        }
        results
    }
}

fn fk_error(code: u16, message: String) -> StoreError {
    StoreError::ForeignKey { code, message }
}

/// Whether a referencing and a referenced column can form a foreign key (InnoDB: same integer
/// size and sign, same DECIMAL, any pair of CHAR/VARCHAR, otherwise the same type).
fn fk_compatible(a: ColumnType, b: ColumnType) -> bool {
    use ColumnType as T;
    match (a, b) {
        (T::Char(_) | T::Varchar(_), T::Char(_) | T::Varchar(_)) => true,
        (x, y) => x == y,
    }
}

/// Validates a foreign key of `child` referencing `parent` and gives it its name.
/// Validates a foreign key of `child` against its parent (`None`: the parent does not exist
/// yet, under `foreign_key_checks = 0`: only the child's side is checked).
fn foreign_key(
    child: &TableDef,
    spec: &catalog::ForeignKeySpec,
    parent: Option<&TableDef>,
    taken: &[String],
) -> Result<catalog::ForeignKeyDef> {
    let name = match &spec.name {
        Some(n) => n.clone(),
        None => {
            let mut n = child.foreign_keys.len() + 1;
            loop {
                let cand = format!("{}_ibfk_{n}", child.name);
                if !taken.contains(&cand.to_ascii_lowercase()) {
                    break cand;
                }
                n += 1;
            }
        }
    };
    if spec.name.is_some() && taken.contains(&name.to_ascii_lowercase()) {
        return Err(fk_error(
            shoal_errors::ER_FK_DUP_NAME.code,
            format!("Duplicate foreign key constraint name '{name}'"),
        ));
    }
    let cols = spec
        .columns
        .iter()
        .map(|n| {
            child.column_index(n).ok_or_else(|| {
                fk_error(
                    shoal_errors::ER_KEY_COLUMN_DOES_NOT_EXITS.code,
                    format!("Key column '{n}' doesn't exist in table"),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if spec.ref_columns.len() != cols.len() {
        return Err(fk_error(
            shoal_errors::ER_WRONG_FK_DEF.code,
            format!(
                "Incorrect foreign key definition for '{name}': Key reference and table reference don't match"
            ),
        ));
    }
    let Some(parent) = parent else {
        return Ok(catalog::ForeignKeyDef {
            name,
            columns: cols,
            ref_db: spec.ref_db.clone().unwrap_or_else(|| child.db.clone()),
            ref_table: spec.ref_table.clone(),
            ref_columns: spec.ref_columns.clone(),
            on_delete: spec.on_delete,
            on_update: spec.on_update,
        });
    };
    let mut ref_pos = Vec::new();
    for r in &spec.ref_columns {
        ref_pos.push(parent.column_index(r).ok_or_else(|| {
            fk_error(
                shoal_errors::ER_FK_NO_INDEX_PARENT.code,
                format!(
                    "Failed to add the foreign key constraint. Missing column '{r}' for constraint '{name}' in the referenced table '{}'",
                    parent.name
                ),
            )
        })?);
    }
    if parent.key_with_prefix(&ref_pos).is_none() {
        return Err(fk_error(
            shoal_errors::ER_FK_NO_INDEX_PARENT.code,
            format!(
                "Failed to add the foreign key constraint. Missing index for constraint '{name}' in the referenced table '{}'",
                parent.name
            ),
        ));
    }
    for (&c, &p) in cols.iter().zip(&ref_pos) {
        if !fk_compatible(child.columns[c].ty, parent.columns[p].ty) {
            return Err(fk_error(
                shoal_errors::ER_FK_INCOMPATIBLE_COLUMNS.code,
                format!(
                    "Referencing column '{}' and referenced column '{}' in foreign key constraint '{name}' are incompatible.",
                    child.columns[c].name, parent.columns[p].name
                ),
            ));
        }
        let set_null = spec.on_delete == catalog::FkAction::SetNull
            || spec.on_update == catalog::FkAction::SetNull;
        if set_null && !child.columns[c].nullable {
            return Err(fk_error(
                shoal_errors::ER_FK_COLUMN_NOT_NULL.code,
                format!(
                    "Column '{}' cannot be NOT NULL: needed in a foreign key constraint '{name}' SET NULL",
                    child.columns[c].name
                ),
            ));
        }
    }
    Ok(catalog::ForeignKeyDef {
        name,
        columns: cols,
        ref_db: parent.db.clone(),
        ref_table: parent.name.clone(),
        ref_columns: ref_pos
            .iter()
            .map(|&p| parent.columns[p].name.clone())
            .collect(),
        on_delete: spec.on_delete,
        on_update: spec.on_update,
    })
}

#[cfg(test)]
mod tests {
    use super::cache_shard_bits;

    /// Shards of at least 8 MiB, at most 64: a small buffer pool stays one LRU (where an SST
    /// file's filter block of a few hundred KiB is a small share), a large one is split.
    #[test]
    fn cache_shards_are_at_least_eight_mib() {
        let mib = 1usize << 20;
        for (size, bits) in [
            (mib, 0),
            (11 * mib, 0),
            (16 * mib, 1),
            (128 * mib, 4),
            (1024 * mib, 6),
            (64 * 1024 * mib, 6),
        ] {
            assert_eq!(cache_shard_bits(size), bits, "{} MiB", size / mib);
            assert!(bits == 6 || size >> bits >= 8 * mib || bits == 0);
        }
    }
}
