//! Status counters (relaxed atomics), named as MySQL/InnoDB names them where a name exists.

use std::sync::atomic::{AtomicU64, Ordering};

/// Engine-wide counters; read with `Engine::status`.
#[derive(Default, Debug)]
pub struct Stats {
    /// Point reads and scanned entries served (`Innodb_buffer_pool_read_requests`).
    pub read_requests: AtomicU64,
    /// Reads that missed the block cache and went to disk (`Innodb_buffer_pool_reads`).
    pub disk_reads: AtomicU64,
    /// Lock requests that had to wait (`Innodb_row_lock_waits`).
    pub row_lock_waits: AtomicU64,
    /// Waits in progress (`Innodb_row_lock_current_waits`).
    pub row_lock_current_waits: AtomicU64,
    /// Total ms spent waiting for row locks (`Innodb_row_lock_time`).
    pub row_lock_time_ms: AtomicU64,
    /// Longest single wait in ms (`Innodb_row_lock_time_max`).
    pub row_lock_time_max_ms: AtomicU64,
    /// Deadlocks detected (`Innodb_deadlocks`).
    pub deadlocks: AtomicU64,
    /// Lock waits that timed out (`Innodb_row_lock_timeouts`, a Percona name).
    pub lock_timeouts: AtomicU64,
    /// Rows returned by reads (`Innodb_rows_read`).
    pub rows_read: AtomicU64,
    /// Rows a secondary-index scan fetched by primary key for its entries
    /// (`Shoal_index_row_lookups`); an index-only (covering) scan fetches none.
    pub index_row_lookups: AtomicU64,
    /// `Innodb_rows_inserted`.
    pub rows_inserted: AtomicU64,
    /// `Innodb_rows_updated`.
    pub rows_updated: AtomicU64,
    /// `Innodb_rows_deleted`.
    pub rows_deleted: AtomicU64,
    /// WAL fsyncs (`Innodb_data_fsyncs`).
    pub fsyncs: AtomicU64,
    /// Transactions committed with writes, plus read-only commits (`Handler_commit`).
    pub commits: AtomicU64,
    /// Transactions rolled back (`Handler_rollback`).
    pub rollbacks: AtomicU64,
    /// Commits that wrote a batch to RocksDB (`Shoal_store_write_commits`).
    pub write_commits: AtomicU64,
    /// Group-commit groups written (`Shoal_store_commit_groups`).
    pub commit_groups: AtomicU64,
    /// Memtables flushed because writes went quiet (`Shoal_store_idle_flushes`; see the
    /// engine's `idle` module).
    pub idle_flushes: AtomicU64,
    /// Quiet spells whose level 0 was compacted into the level below
    /// (`Shoal_store_idle_settles`; see the engine's `idle` module).
    pub idle_settles: AtomicU64,
}

impl Stats {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// The counters as `(name, value)` pairs.
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        vec![
            ("Innodb_buffer_pool_read_requests", g(&self.read_requests)),
            ("Innodb_buffer_pool_reads", g(&self.disk_reads)),
            ("Innodb_row_lock_waits", g(&self.row_lock_waits)),
            (
                "Innodb_row_lock_current_waits",
                g(&self.row_lock_current_waits),
            ),
            ("Innodb_row_lock_time", g(&self.row_lock_time_ms)),
            ("Innodb_row_lock_time_max", g(&self.row_lock_time_max_ms)),
            (
                "Innodb_row_lock_time_avg",
                g(&self.row_lock_time_ms) / g(&self.row_lock_waits).max(1),
            ),
            ("Innodb_row_lock_timeouts", g(&self.lock_timeouts)),
            ("Innodb_deadlocks", g(&self.deadlocks)),
            ("Innodb_rows_read", g(&self.rows_read)),
            ("Shoal_index_row_lookups", g(&self.index_row_lookups)),
            ("Innodb_rows_inserted", g(&self.rows_inserted)),
            ("Innodb_rows_updated", g(&self.rows_updated)),
            ("Innodb_rows_deleted", g(&self.rows_deleted)),
            ("Innodb_data_fsyncs", g(&self.fsyncs)),
            ("Handler_commit", g(&self.commits)),
            ("Handler_rollback", g(&self.rollbacks)),
            ("Shoal_store_write_commits", g(&self.write_commits)),
            ("Shoal_store_commit_groups", g(&self.commit_groups)),
            ("Shoal_store_idle_flushes", g(&self.idle_flushes)),
            ("Shoal_store_idle_settles", g(&self.idle_settles)),
        ]
    }
}
