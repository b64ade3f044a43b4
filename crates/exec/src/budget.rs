//! The statement memory budget: what keeps one query from exhausting the server's memory.
//!
//! Both executors materialize rows: the rows a scan reaches, join and grouping buffers, the
//! sorted result. Nothing else bounds them: a cross join of four small tables projecting a
//! megabyte string each asks for terabytes, and without a bound the allocator fails and the
//! process aborts, taking every connection with it (issue 17: "no input crashes the server").
//! So every buffer that lives for the statement charges its rows' [`row_mem_size`] here, and
//! a buffer that lives for one step of a nested loop (the rows of an inner leaf) is checked
//! against what is left; past `max_session_mem_used` (MariaDB's name and error, 1290) the
//! statement fails and its buffers are dropped, the transaction stays as after any failed
//! statement. The count is conservative: charges are not returned when a buffer is dropped
//! before the statement ends, so it bounds the statement's peak from above.
//!
//! One statement under its own limit is not enough: 150 connections each just under it still
//! exhaust memory. Every charge also goes to one process-wide count of what all running
//! statements hold, bounded by `global_connection_memory_limit` (MySQL's name; by default half
//! the machine's memory): past it the statement that asks fails with MySQL's 4083, and a
//! statement's charges leave the global count when its budget is dropped.
//!
//! The global count is one atomic shared by every core, and a budget charged it per row: a
//! 100-row range query bounced its cache line between the cores a hundred times. So a budget
//! takes the global count in grains of [`GRAIN`] bytes (one atomic add per grain) and checks
//! the limit against the count less its own unused part; every running statement's unused
//! part (under one grain each) is the inexactness this buys.

use std::sync::atomic::{AtomicU64, Ordering};

use shoal_sql::value::{row_mem_size, Value};
use shoal_sql::SqlError;

/// Bytes taken by every running statement's budget.
static GLOBAL_HELD: AtomicU64 = AtomicU64::new(0);

/// The unit in which a budget takes bytes from [`GLOBAL_HELD`].
const GRAIN: u64 = 16 << 10;

/// Bytes all running statements hold now (status `Memory_used`).
pub fn global_held() -> u64 {
    GLOBAL_HELD.load(Ordering::Relaxed)
}

/// The running statement's budget.
#[derive(Debug, Clone)]
pub struct MemBudget {
    /// `max_session_mem_used` at the statement's start.
    limit: u64,
    /// `global_connection_memory_limit` at the statement's start.
    global_limit: u64,
    /// Bytes charged by buffers that live until the statement ends.
    held: u64,
    /// Bytes this budget added to [`GLOBAL_HELD`]: `held` rounded up to [`GRAIN`]s.
    taken: u64,
}

impl MemBudget {
    /// A budget of `limit` bytes, no global limit.
    pub fn new(limit: u64) -> MemBudget {
        MemBudget::with_global(limit, u64::MAX)
    }

    /// A budget of `limit` bytes within a server-wide `global_limit`.
    pub fn with_global(limit: u64, global_limit: u64) -> MemBudget {
        MemBudget {
            limit,
            global_limit,
            held: 0,
            taken: 0,
        }
    }

    /// The budget of a statement run with `ctx`'s settings.
    pub fn of(ctx: &mut dyn shoal_sql::eval::Context) -> MemBudget {
        let limit = ctx.statement_memory_limit();
        let global = ctx.global_memory_limit();
        MemBudget::with_global(limit, global)
    }

    /// Charges `bytes` for the rest of the statement.
    pub fn charge(&mut self, bytes: usize) -> Result<(), SqlError> {
        let bytes = bytes as u64;
        self.held = self.held.saturating_add(bytes);
        if self.held > self.limit {
            return Err(self.exceeded());
        }
        if self.held <= self.taken {
            return Ok(());
        }
        let more = (self.held - self.taken)
            .div_ceil(GRAIN)
            .saturating_mul(GRAIN);
        self.taken = self.taken.saturating_add(more);
        let taken_by_all = GLOBAL_HELD
            .fetch_add(more, Ordering::Relaxed)
            .saturating_add(more);
        // What every statement holds, less this one's grain not yet used.
        let all = taken_by_all - (self.taken - self.held).min(taken_by_all);
        if all > self.global_limit {
            return Err(SqlError::coded(
                shoal_errors::ER_DA_GLOBAL_CONN_LIMIT,
                format!(
                    "Global connection memory limit {} bytes exceeded. Consumed {all} bytes.",
                    self.global_limit
                ),
            ));
        }
        Ok(())
    }

    /// Charges a row of values for the rest of the statement.
    pub fn charge_row(&mut self, row: &[Value]) -> Result<(), SqlError> {
        self.charge(row_mem_size(row))
    }

    /// Whether a transient buffer of `bytes` fits beside what is held (this statement's and,
    /// against the global limit, everyone's).
    pub fn fits(&self, bytes: u64) -> bool {
        self.held.saturating_add(bytes) <= self.limit
            && global_held().saturating_add(bytes) <= self.global_limit
    }

    /// The error for a statement over its budget (1290, as MariaDB answers).
    pub fn exceeded(&self) -> SqlError {
        SqlError::coded(shoal_errors::ER_OPTION_PREVENTS_STATEMENT, format!(
                "The MySQL server is running with the --max-session-mem-used={} option so it cannot execute this statement",
                self.limit
            ),
        )
    }
}

/// Bytes a stored row occupies once read (its key and values).
pub fn stored_row_size(r: &shoal_store::Row) -> u64 {
    let values: usize = r
        .values
        .iter()
        .map(|d| {
            std::mem::size_of::<shoal_store::Datum>()
                + match d {
                    shoal_store::Datum::Bytes(b) => b.capacity(),
                    _ => 0,
                }
        })
        .sum();
    (std::mem::size_of::<shoal_store::Row>() + r.key.0.capacity() + values) as u64
}

impl Drop for MemBudget {
    fn drop(&mut self) {
        GLOBAL_HELD.fetch_sub(self.taken, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_until_the_limit_then_1290() {
        let mut b = MemBudget::new(1000);
        let row = vec![Value::Str("x".repeat(100)), Value::Int(1)];
        let mut n = 0;
        let err = loop {
            match b.charge_row(&row) {
                Ok(()) => n += 1,
                Err(e) => break e,
            }
        };
        assert!((1..10).contains(&n), "{n} rows of ~180 bytes fit in 1000");
        assert_eq!(err.code(), 1290);
        assert!(!b.fits(1));
        assert!(MemBudget::new(u64::MAX).fits(0));
    }

    #[test]
    fn the_global_limit_counts_every_budget_and_forgets_dropped_ones() {
        // Other tests in this process may hold budgets: limits are relative to what is held.
        let base = global_held();
        let mut a = MemBudget::with_global(u64::MAX, base + 10_000);
        let mut b = MemBudget::with_global(u64::MAX, base + 10_000);
        a.charge(6_000).unwrap();
        let err = b.charge(6_000).unwrap_err();
        assert_eq!(err.code(), 4083, "{err}");
        drop(a);
        drop(b);
        let mut c = MemBudget::with_global(u64::MAX, global_held() + 10_000);
        c.charge(9_000).unwrap();
    }

    /// Small charges take the global count a grain at a time, and give back what they took.
    #[test]
    fn the_global_count_moves_by_grains() {
        let mut b = MemBudget::new(u64::MAX);
        for _ in 0..100 {
            b.charge(100).unwrap();
        }
        assert_eq!((b.held, b.taken), (10_000, GRAIN));
        b.charge(GRAIN as usize).unwrap();
        assert_eq!(b.taken, 2 * GRAIN);
        b.charge(3 * GRAIN as usize).unwrap();
        assert_eq!(b.taken, 5 * GRAIN, "held {}", b.held);
        assert!(b.taken >= b.held && b.taken - b.held < GRAIN);
    }
}
