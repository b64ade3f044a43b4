//! AUTO_INCREMENT values and hidden row ids: per-table counters, reserved durably ahead of use.
//!
//! Counters live in memory and are made durable ahead of use: before a value beyond the
//! persisted high-water mark is handed out, the mark is raised by a chunk (1024) and written
//! (synchronously under `innodb_flush_log_at_trx_commit = 1`). After a crash, counting resumes
//! at the mark, so no value that may have been used by a committed row is ever issued again
//! (gaps are allowed, as in InnoDB). Two kinds share the mechanism, keyed by (kind, table id):
//! `A`, the AUTO_INCREMENT column, and `H`, the hidden row id of a table without a PRIMARY KEY.

use super::{lock_mutex, Engine, Inner};
use crate::catalog::{self, TableDef};
use crate::error::{Result, StoreError};
use rocksdb::WriteBatch;
use std::sync::atomic::Ordering;

/// How many auto-increment values are reserved (durably) at a time.
const AUTOINC_CHUNK: u64 = 1024;

/// One table's counter of one kind.
#[derive(Clone, Copy)]
pub(super) struct Counter {
    /// The value issued next.
    next: u64,
    /// The persisted high-water mark: values below it may be issued without a write.
    reserved: u64,
}

impl Engine {
    /// Reserves `n` consecutive AUTO_INCREMENT values for `table` and returns the first. Values
    /// are never handed out twice, even across crashes (rolled-back inserts leave gaps).
    pub fn next_auto_increment(&self, table: &TableDef, n: u64) -> Result<u64> {
        self.inner.alloc_counter(b'A', table, n)
    }

    /// The value the next AUTO_INCREMENT insert would get (for SHOW TABLE STATUS).
    pub fn peek_auto_increment(&self, table: &TableDef) -> Result<u64> {
        self.inner.peek_counter(b'A', table)
    }
}

impl Inner {
    /// Drops the in-memory counters of a table (dropped, truncated or rewritten).
    pub(super) fn forget_counters(&self, table_id: u32) {
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

    /// The value counter `kind` would issue next.
    pub(super) fn peek_counter(&self, kind: u8, table: &TableDef) -> Result<u64> {
        let mut map = lock_mutex(&self.counters);
        let c = match map.get(&(kind, table.id)) {
            Some(c) => *c,
            None => self.load_counter(kind, table)?,
        };
        map.insert((kind, table.id), c);
        Ok(c.next)
    }
}
