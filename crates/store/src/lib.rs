//! Durable storage on embedded RocksDB for shoal.
//!
//! # Using it (the SQL layer's view)
//!
//! ```text
//! let engine = Engine::open(EngineConfig::new("/var/lib/shoal"))?;      // one per server
//! engine.create_database("sbtest")?;
//! let t = engine.create_table("sbtest", TableSpec { .. })?;            // Arc<TableDef>
//! let mut txn = engine.begin(Isolation::RepeatableRead);
//! let sp = txn.begin_statement();                                       // per statement
//! match txn.insert(&t, vec![Datum::Null, Datum::Int(5), Datum::text("x")]) {
//!     Err(e) if !txn.is_active() => { /* deadlock: whole txn rolled back */ }
//!     Err(e) => txn.rollback_to(sp),                                    // statement-level
//!     Ok((key, auto_id)) => {}
//! }
//! let row = txn.get(&t, &[Datum::Int(5)], LockMode::Exclusive)?;       // current read + X lock
//! txn.update(&t, &row.unwrap().key, new_values)?;
//! for r in txn.scan_index(&t, "k_1", &KeyRange::between(lo, hi), LockMode::None, Some(100))? {}
//! txn.commit()?;                                                        // group-committed
//! ```
//!
//! Rows are `Vec<Datum>` in column order, always *full* rows: the SQL layer fills DEFAULTs and
//! evaluates expressions; storage coerces each value to its column type, enforces NOT NULL,
//! fills AUTO_INCREMENT (NULL or 0), keeps PRIMARY/UNIQUE uniqueness and the indexes.
//! Errors carry MySQL codes ([`StoreError::mysql_code`], [`StoreError::sqlstate`]).
//!
//! # Modules, and which uses which
//!
//! Dependencies flow one way, from the top of this list to the bottom; no module uses one
//! above it:
//!
//! - [`check`] (CHECK TABLE: rows against indexes) and [`system`] (records of the server:
//!   accounts, grants) read and write through the engine.
//! - [`txn`]: transactions (snapshot reads, write buffer, row locks, savepoints, commit);
//!   `Engine::begin` is defined here, so the engine knows nothing of transactions.
//! - [`engine`]: the shared state every transaction uses (open, catalog and DDL, counters,
//!   key-value reads, group commit), split by role under `engine/`.
//! - [`lock`] (row-lock manager) and [`stats`] (status counters).
//! - [`catalog`] (definitions and key layout), [`codec`] (key and row encodings), [`datum`]
//!   (values and types), [`error`].

pub mod catalog;
pub mod check;
pub mod codec;
pub mod datum;
pub mod engine;
pub mod error;
pub mod lock;
pub mod stats;
pub mod system;
pub mod txn;

pub use catalog::{
    ColumnDef, ColumnDefault, FkAction, ForeignKeyDef, ForeignKeySpec, IndexDef, IndexSpec,
    KeyFormat, TableDef, TableSpec,
};
pub use check::{CheckProblem, CheckReport};
pub use datum::{
    time_text, truncate_micro, ColumnType, Date, DateTime, Datum, Decimal, Misfit, MAX_TIME_MICROS,
};
pub use engine::{Engine, EngineConfig};
pub use error::{Result, StoreError};
pub use system::SystemWrite;
pub use txn::{
    InsertOutcome, Isolation, KeyRange, KillHandle, LockMode, LockWait, RawRow, Row, RowKey,
    Savepoint, ScanOpts, Transaction,
};
