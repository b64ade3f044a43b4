//! Hooks other subsystems (the thread pool first) use to contribute to what sessions show,
//! without the session layer knowing about them.
//!
//! # Virtual tables
//!
//! [`Server::add_virtual_table`] registers a read-only table `db.name` (case-insensitive) whose
//! content is produced by a callback at query time ([`VirtualTable`]: column names + rows). The
//! query engine of `crates/exec` reads it like any other row source ([`HookTables`], installed
//! by [`Server::set_table_engine`]): the callback runs once per statement, and WHERE, joins,
//! aggregates, ORDER BY and LIMIT work on it as on a stored table. This is how
//! `information_schema.THREAD_POOL_*` exist. Reading one needs PROCESS (the session's
//! privilege check of the plan).
//!
//! # Process-list state
//!
//! [`Server::set_process_state_provider`] installs one callback returning extra state text per
//! connection id (the pool says `queued (high)`, `running`, `waiting: ROW_LOCK`, ...). SHOW
//! PROCESSLIST shows it in the `State` column, after the session's own state if it has one.
//!
//! # Flushable tables
//!
//! [`Server::add_flushable`] registers a reset for `FLUSH name`, the way MariaDB lets an
//! information_schema plugin table be reset by name (`FLUSH THREAD_POOL_STATS`). The session
//! checks the RELOAD privilege and every name of the statement before running any reset.
//!
//! The registries are behind `RwLock`s taken only briefly; callbacks run without any session
//! lock held, so they may take their own locks (the pool takes its group locks).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use shoal_sql::value::Value;

use crate::Server;

/// The content of a virtual table at one moment.
#[derive(Debug, Clone, Default)]
pub struct VirtualTable {
    /// Column names, in order (upper case, as information_schema shows them).
    pub columns: Vec<String>,
    /// Rows; each has exactly `columns.len()` values.
    pub rows: Vec<Vec<Value>>,
}

/// Produces a virtual table's content when it is queried.
pub type VirtualTableFn = Arc<dyn Fn() -> VirtualTable + Send + Sync>;

/// Resets what `FLUSH name` names (statistics counters, histograms).
pub type FlushFn = Arc<dyn Fn() + Send + Sync>;

/// Extra process-list state per connection id.
pub type ProcessStateFn = Arc<dyn Fn() -> HashMap<u32, String> + Send + Sync>;

/// The virtual tables as the query engine's [`shoal_exec::query::SystemTables`].
pub struct HookTables(pub Arc<Hooks>);

impl shoal_exec::query::SystemTables for HookTables {
    fn get(&self, db: &str, table: &str) -> Option<(Vec<String>, Vec<Vec<Value>>)> {
        self.0.virtual_table(db, table).map(|f| {
            let t = f();
            (t.columns, t.rows)
        })
    }
}

/// The registries (one per [`Server`]).
#[derive(Default)]
pub struct Hooks {
    /// `(lower-case db, lower-case table)` → producer.
    tables: RwLock<HashMap<(String, String), VirtualTableFn>>,
    /// The process-state provider, if any.
    process_state: RwLock<Option<ProcessStateFn>>,
    /// Upper-case `FLUSH` option name → its reset.
    flushables: RwLock<HashMap<String, FlushFn>>,
}

impl Hooks {
    /// The producer registered for `db.table`, if any.
    pub fn virtual_table(&self, db: &str, table: &str) -> Option<VirtualTableFn> {
        self.tables
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(db.to_ascii_lowercase(), table.to_ascii_lowercase()))
            .cloned()
    }

    /// Names of the virtual tables of `db` (for SHOW TABLES-like listings).
    pub fn virtual_tables(&self, db: &str) -> Vec<String> {
        let db = db.to_ascii_lowercase();
        let mut v: Vec<String> = self
            .tables
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .filter(|(d, _)| *d == db)
            .map(|(_, t)| t.to_ascii_uppercase())
            .collect();
        v.sort();
        v
    }

    /// The reset registered for `FLUSH name`, if any.
    pub fn flushable(&self, name: &str) -> Option<FlushFn> {
        self.flushables
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&name.to_ascii_uppercase())
            .cloned()
    }

    /// Extra state text per connection id (empty without a provider).
    pub fn process_states(&self) -> HashMap<u32, String> {
        let f = self
            .process_state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        f.map(|f| f()).unwrap_or_default()
    }
}

impl Server {
    /// Registers (or replaces) the read-only virtual table `db.name`; see the module docs.
    pub fn add_virtual_table(&self, db: &str, name: &str, f: VirtualTableFn) {
        self.hooks
            .tables
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((db.to_ascii_lowercase(), name.to_ascii_lowercase()), f);
    }

    /// Registers (or replaces) the reset run by `FLUSH name`; see the module docs.
    pub fn add_flushable(&self, name: &str, f: FlushFn) {
        self.hooks
            .flushables
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_ascii_uppercase(), f);
    }

    /// Installs the provider of extra SHOW PROCESSLIST state (replaces a previous one).
    pub fn set_process_state_provider(&self, f: ProcessStateFn) {
        *self
            .hooks
            .process_state
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(f);
    }

    /// The hook registries.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }
}

#[cfg(test)]
mod hook_tests {
    use super::*;

    fn table() -> VirtualTable {
        VirtualTable {
            columns: vec!["GROUP_ID".into(), "THREADS".into()],
            rows: vec![
                vec![Value::Int(0), Value::Int(3)],
                vec![Value::Int(1), Value::Int(0)],
                vec![Value::Int(2), Value::Int(5)],
            ],
        }
    }

    #[test]
    fn registry_is_case_insensitive() {
        let server = Server::new();
        server.add_virtual_table("INFORMATION_SCHEMA", "Thread_Pool_Groups", Arc::new(table));
        assert!(server
            .hooks()
            .virtual_table("information_schema", "THREAD_POOL_GROUPS")
            .is_some());
        assert_eq!(
            server.hooks().virtual_tables("information_schema"),
            vec!["THREAD_POOL_GROUPS".to_string()]
        );
        assert!(server.hooks().process_states().is_empty());
        server.set_process_state_provider(Arc::new(|| HashMap::from([(7u32, "running".into())])));
        assert_eq!(server.hooks().process_states()[&7], "running");
    }
}
