//! What the session layer needs from a catalog: databases (SHOW DATABASES, USE, CREATE / DROP
//! DATABASE) and whether a table exists (GRANT on a table not yet created).
//!
//! The one implementation is the table engine's, over the store (`StoreCatalog` in
//! `crates/exec`; `information_schema`, `mysql`, `performance_schema` and `sys` always exist,
//! as on a fresh mysqld): a session reaches it through its engine, which the server plugs in at
//! startup (`Server::set_table_engine` in `crates/session`). The trait lives here, with its
//! errors and their MySQL codes, so that the session layer names no storage type. Table access
//! (scans, lookups, writes, transactions) is not part of it: table statements go to
//! `crates/exec` as a whole.

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
