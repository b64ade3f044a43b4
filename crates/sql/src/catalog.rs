//! What the SQL layer needs from a catalog: databases, and whether a table exists.
//!
//! [`MemCatalog`] keeps databases in memory (`information_schema`, `mysql`, `performance_schema`
//! and `sys` always exist, like on a fresh mysqld): it is the catalog a server starts with and
//! the one this crate's tests use. The table engine implements [`Catalog`] over RocksDB
//! (`StoreCatalog` in `crates/exec`), and the server installs it at startup with the engine
//! (`Server::set_table_engine` in `crates/session`). Table access (scans, lookups, writes,
//! transactions) is not part of this trait: table statements go to `crates/exec` as a whole.
//! The SQL layer reports `1146 Table 'db.t' doesn't exist` for any table the catalog does not
//! know.

use std::collections::BTreeSet;
use std::sync::RwLock;

/// Catalog errors, with MySQL codes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// 1007.
    #[error("Can't create database '{0}'; database exists")]
    DatabaseExists(String),
    /// 1008.
    #[error("Can't drop database '{0}'; database doesn't exist")]
    NoSuchDatabase(String),
    /// 1044-like refusal to touch a system schema.
    #[error("Access denied for user to database '{0}'")]
    SystemDatabase(String),
    /// Storage failure (1030-like).
    #[error("Got error from storage engine: {0}")]
    Storage(String),
}

impl CatalogError {
    /// The MySQL error of this error.
    pub fn error_code(&self) -> shoal_errors::Code {
        use shoal_errors as er;
        match self {
            CatalogError::DatabaseExists(_) => er::ER_DB_CREATE_EXISTS,
            CatalogError::NoSuchDatabase(_) => er::ER_DB_DROP_EXISTS,
            CatalogError::SystemDatabase(_) => er::ER_DBACCESS_DENIED_ERROR,
            CatalogError::Storage(_) => er::ER_GET_ERRNO,
        }
    }

    /// MySQL error code.
    pub fn code(&self) -> u16 {
        self.error_code().code
    }

    /// SQLSTATE.
    pub fn sqlstate(&self) -> &'static str {
        self.error_code().state
    }
}

/// Databases and tables, as the SQL layer sees them.
pub trait Catalog: Send + Sync {
    /// Whether database `name` exists (case-sensitive, `lower_case_table_names=0`).
    fn database_exists(&self, name: &str) -> bool;
    /// All databases, sorted.
    fn databases(&self) -> Vec<String>;
    /// CREATE DATABASE.
    fn create_database(&self, name: &str) -> Result<(), CatalogError>;
    /// DROP DATABASE (with its tables).
    fn drop_database(&self, name: &str) -> Result<(), CatalogError>;
    /// Tables of `db`, sorted.
    fn tables(&self, db: &str) -> Vec<String>;
    /// Whether `db.table` exists.
    fn table_exists(&self, db: &str, table: &str) -> bool;
}

/// Names of the always-present system schemas.
pub const SYSTEM_DATABASES: &[&str] = &["information_schema", "mysql", "performance_schema", "sys"];

/// In-memory catalog (databases, no tables): the server's until a table engine is plugged in.
pub struct MemCatalog {
    dbs: RwLock<BTreeSet<String>>,
}

impl MemCatalog {
    /// Only the system schemas.
    pub fn new() -> Self {
        MemCatalog {
            dbs: RwLock::new(SYSTEM_DATABASES.iter().map(|s| s.to_string()).collect()),
        }
    }
}

impl Default for MemCatalog {
    fn default() -> Self {
        Self::new()
    }
}

impl Catalog for MemCatalog {
    fn database_exists(&self, name: &str) -> bool {
        self.dbs.read().unwrap().contains(name)
    }
    fn databases(&self) -> Vec<String> {
        self.dbs.read().unwrap().iter().cloned().collect()
    }
    fn create_database(&self, name: &str) -> Result<(), CatalogError> {
        if !self.dbs.write().unwrap().insert(name.to_string()) {
            return Err(CatalogError::DatabaseExists(name.to_string()));
        }
        Ok(())
    }
    fn drop_database(&self, name: &str) -> Result<(), CatalogError> {
        if SYSTEM_DATABASES.contains(&name) {
            return Err(CatalogError::SystemDatabase(name.to_string()));
        }
        if !self.dbs.write().unwrap().remove(name) {
            return Err(CatalogError::NoSuchDatabase(name.to_string()));
        }
        Ok(())
    }
    fn tables(&self, _db: &str) -> Vec<String> {
        Vec::new()
    }
    fn table_exists(&self, _db: &str, _table: &str) -> bool {
        false
    }
}
