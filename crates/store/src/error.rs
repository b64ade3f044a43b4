//! Typed storage errors, each mapped to the MySQL error code and SQLSTATE a client expects.

use std::path::PathBuf;

/// Every error the storage layer returns. The SQL layer forwards these to the client with
/// [`StoreError::mysql_code`] and [`StoreError::sqlstate`], using `to_string()` as the message
/// (the messages follow MySQL's wording where MySQL has one).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A primary or unique key value already exists (1062).
    #[error("Duplicate entry '{value}' for key '{key_name}'")]
    DuplicateKey {
        /// Index name, `PRIMARY` for the primary key.
        key_name: String,
        /// The key value as MySQL prints it (`-` separated for composite keys).
        value: String,
    },
    /// A row lock was not granted within `innodb_lock_wait_timeout` (1205). Only the statement
    /// fails: the transaction stays active and keeps its locks.
    #[error("Lock wait timeout exceeded; try restarting transaction")]
    LockWaitTimeout,
    /// This transaction closed a cycle in the waits-for graph (1213). It has been rolled back
    /// and its locks released.
    #[error("Deadlock found when trying to get lock; try restarting transaction")]
    Deadlock,
    /// The transaction was killed (client gone, `KILL`) while waiting or running (1317).
    #[error("Query execution was interrupted")]
    Interrupted,
    /// The transaction is no longer active (committed, rolled back or aborted by a deadlock).
    #[error("Transaction is not active (it was committed or rolled back)")]
    TxnNotActive,
    /// 1146.
    #[error("Table '{db}.{table}' doesn't exist")]
    NoSuchTable {
        /// Database name.
        db: String,
        /// Table name.
        table: String,
    },
    /// 1050.
    #[error("Table '{0}' already exists")]
    TableExists(String),
    /// 1049.
    #[error("Unknown database '{0}'")]
    NoSuchDatabase(String),
    /// 1007.
    #[error("Can't create database '{0}'; database exists")]
    DatabaseExists(String),
    /// 1061.
    #[error("Duplicate key name '{0}'")]
    IndexExists(String),
    /// 1091.
    #[error("Can't DROP '{0}'; check that column/key exists")]
    NoSuchIndex(String),
    /// 1054.
    #[error("Unknown column '{0}'")]
    NoSuchColumn(String),
    /// 1048.
    #[error("Column '{0}' cannot be null")]
    NullNotAllowed(String),
    /// A value of the wrong kind for a column, or a row with the wrong number of values (1366).
    #[error("Incorrect value for column '{column}': {detail}")]
    BadValue {
        /// Column name.
        column: String,
        /// What was wrong.
        detail: String,
    },
    /// A table definition the storage cannot hold (1075/1068/...: reported as 1064-free 1235).
    #[error("Invalid table definition: {0}")]
    BadDefinition(String),
    /// A FOREIGN KEY definition MySQL refuses (1822 missing index, 3780 incompatible columns,
    /// 1830 SET NULL on a NOT NULL column, 1826 duplicate name, 1091 no such constraint).
    #[error("{message}")]
    ForeignKey {
        /// MySQL error code.
        code: u16,
        /// MySQL's message.
        message: String,
    },
    /// A table definition MySQL refuses with a code of its own: 1060 duplicate column name,
    /// 1113 no columns, 1063 wrong column specifier.
    #[error("{message}")]
    Definition {
        /// MySQL error code.
        code: u16,
        /// SQLSTATE.
        state: &'static str,
        /// MySQL's message.
        message: String,
    },
    /// The on-disk data could not be decoded (1034-like; reported as 1030).
    #[error("Corrupt data: {0}")]
    Corrupt(String),
    /// Another process holds the data directory's LOCK file.
    #[error("Data directory {0} is locked by another process (LOCK file held)")]
    Locked(PathBuf),
    /// The commit's write or WAL sync failed (1180); the transaction is rolled back.
    #[error("Got error {0} during COMMIT")]
    CommitFailed(String),
    /// Filesystem error outside RocksDB (LOCK file, data directory).
    #[error("I/O error: {0}")]
    Io(std::io::Error),
    /// An error from RocksDB (1030 "Got error from storage engine").
    #[error("Got error from storage engine: {0}")]
    RocksDb(rocksdb::Error),
    /// The transaction's uncommitted writes passed `max_binlog_cache_size` (1197, MySQL's
    /// error for a transaction too big for its cache). The statement fails; the transaction
    /// may still commit what it wrote before, or roll back.
    #[error("Multi-statement transaction required more than 'max_binlog_cache_size' bytes of storage; increase this mysqld variable and try again")]
    TxnTooBig(u64),
    /// The row locks of one transaction passed `max_binlog_cache_size` (1206, InnoDB's error
    /// when its lock table fills the buffer pool): the statement fails, the locks it took stay
    /// until the transaction ends.
    #[error("The total number of locks exceeds the lock table size")]
    LockTableFull,
    /// A write found the data directory's file system full (ENOSPC): 1021, MySQL's disk-full
    /// error. The statement (or the COMMIT) failed and was rolled back; reads go on, and RocksDB
    /// resumes writing by itself once space is freed (docs/OPERATIONS.md, "Limits and failure
    /// behaviour").
    #[error("Disk full ({0}); the write was rolled back and writes resume once space is freed (errno: 28 \"No space left on device\")")]
    DiskFull(String),
}

/// The text RocksDB and the OS put in an ENOSPC error.
const ENOSPC_TEXT: &str = "No space left on device";

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        if e.raw_os_error() == Some(28) {
            StoreError::disk_full(e.to_string())
        } else {
            StoreError::Io(e)
        }
    }
}

impl From<rocksdb::Error> for StoreError {
    fn from(e: rocksdb::Error) -> Self {
        let text = e.to_string();
        if text.contains(ENOSPC_TEXT) {
            StoreError::disk_full(text)
        } else {
            StoreError::RocksDb(e)
        }
    }
}

impl StoreError {
    /// The error for a failed commit: [`StoreError::DiskFull`] when the file system is full,
    /// else [`StoreError::CommitFailed`].
    pub(crate) fn commit_failed(text: String) -> Self {
        if text.contains(ENOSPC_TEXT) {
            StoreError::disk_full(text)
        } else {
            StoreError::CommitFailed(text)
        }
    }

    /// [`StoreError::DiskFull`] for RocksDB's error text, logged at most once every 10 seconds
    /// (every writer fails while the disk is full; the log says it once).
    fn disk_full(text: String) -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::time::{SystemTime, UNIX_EPOCH};
        static LAST_LOGGED: AtomicU64 = AtomicU64::new(0);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let last = LAST_LOGGED.load(Ordering::Relaxed);
        if now >= last + 10
            && LAST_LOGGED
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::error!(
                "disk full: writes fail with 1021 until space is freed in the data directory: {text}"
            );
        }
        // The file RocksDB was writing, as MySQL names the file in its disk-full message.
        // ("IO error: No space left on device: While appending to file: PATH: No space left ..")
        let parts: Vec<&str> = text.split(": ").collect();
        let file = parts
            .windows(2)
            .find(|w| w[0].starts_with("While ") && w[1].starts_with('/'))
            .map(|w| w[1].to_string())
            .unwrap_or_default();
        StoreError::DiskFull(if file.is_empty() { text } else { file })
    }
}

impl StoreError {
    /// The MySQL error of this error.
    pub fn error_code(&self) -> shoal_errors::Code {
        use shoal_errors as er;
        match self {
            StoreError::DuplicateKey { .. } => er::ER_DUP_ENTRY,
            StoreError::LockWaitTimeout => er::ER_LOCK_WAIT_TIMEOUT,
            StoreError::Deadlock => er::ER_LOCK_DEADLOCK,
            StoreError::Interrupted => er::ER_QUERY_INTERRUPTED,
            StoreError::TxnNotActive | StoreError::Locked(_) => er::ER_UNKNOWN_ERROR,
            StoreError::NoSuchTable { .. } => er::ER_NO_SUCH_TABLE,
            StoreError::TableExists(_) => er::ER_TABLE_EXISTS_ERROR,
            StoreError::NoSuchDatabase(_) => er::ER_BAD_DB_ERROR,
            StoreError::DatabaseExists(_) => er::ER_DB_CREATE_EXISTS,
            StoreError::IndexExists(_) => er::ER_DUP_KEYNAME,
            StoreError::NoSuchIndex(_) => er::ER_CANT_DROP_FIELD_OR_KEY,
            StoreError::NoSuchColumn(_) => er::ER_BAD_FIELD_ERROR,
            StoreError::NullNotAllowed(_) => er::ER_BAD_NULL_ERROR,
            StoreError::BadValue { .. } => er::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD,
            StoreError::BadDefinition(_) => er::ER_NOT_SUPPORTED_YET,
            // 1451 / 1452 (23000), 3008 (HY000).
            StoreError::ForeignKey { code, .. } => er::Code::of(*code).unwrap_or(er::Code {
                code: *code,
                state: "HY000",
                name: "",
            }),
            StoreError::Definition { code, state, .. } => er::Code {
                code: *code,
                state,
                name: er::Code::of(*code).map_or("", |c| c.name),
            },
            StoreError::Corrupt(_) | StoreError::Io(_) | StoreError::RocksDb(_) => er::ER_GET_ERRNO,
            StoreError::CommitFailed(_) => er::ER_ERROR_DURING_COMMIT,
            StoreError::DiskFull(_) => er::ER_DISK_FULL,
            StoreError::TxnTooBig(_) => er::ER_TRANS_CACHE_FULL,
            StoreError::LockTableFull => er::ER_LOCK_TABLE_FULL,
        }
    }

    /// The MySQL error number for this error.
    pub fn mysql_code(&self) -> u16 {
        self.error_code().code
    }

    /// The SQLSTATE for this error.
    pub fn sqlstate(&self) -> &'static str {
        self.error_code().state
    }
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, StoreError>;
