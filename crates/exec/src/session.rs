//! [`TableEngine`] (one per server), [`TableSession`] (one per connection) and [`Plan`]
//! (a prepared table statement).
//!
//! Transactions follow InnoDB's rules as a client sees them:
//!
//! * autocommit=1 and no BEGIN: every statement runs in its own store transaction, committed at
//!   the end of the statement (rolled back if it fails);
//! * BEGIN / START TRANSACTION (or autocommit=0): statements share one transaction until
//!   COMMIT/ROLLBACK; each statement starts with a savepoint and a failing statement is undone
//!   back to it (its locks stay held, as in InnoDB) — this is how a lock wait timeout (1205)
//!   fails only the statement;
//! * a deadlock (1213) rolls back the whole transaction (the store already did); the session
//!   is then outside any transaction, like MySQL after `ER_LOCK_DEADLOCK`;
//! * DDL implicitly commits the open transaction first;
//! * dropping a session rolls back (the store transaction's `Drop`);
//! * [`KillHandle::kill`] from another thread interrupts the running statement, including a
//!   row-lock wait: it fails with 1317 and only that statement is undone.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shoal_sql::ast::Expr;
use shoal_sql::ast::TableLockKind;
use shoal_sql::catalog::{Catalog, CatalogError, SYSTEM_DATABASES};
use shoal_sql::eval::Context;
use shoal_sql::value::Value;
use shoal_sql::SqlError;
use shoal_store::{Engine, EngineConfig, Isolation, Savepoint, TableDef, Transaction};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

use crate::ast::*;
use crate::convert::{flags, store_err, ColumnInfo, WriteMode};
use crate::exec::{Exec, ExecOutput};
use crate::plan::{choose_access, Access};
use crate::query::QueryPlan;
use crate::show;
use crate::table_lock::{HeldIntents, IntentTargets, LockRequest, TableKey, TableLocks};
use crate::translate::{parse_table_statement, translate_tree};

mod alter;

/// The SQL table layer over one store [`Engine`].
pub struct TableEngine {
    store: Engine,
    /// Tables other subsystems provide (the thread pool's), for the query engine. Installed
    /// once, before sessions open; read by every statement, so a `OnceLock` (a plain load)
    /// rather than a lock and an `Arc` clone, whose shared counters bounced between the CPUs.
    system: std::sync::OnceLock<Arc<dyn crate::query::SystemTables>>,
    /// LOCK TABLES, the global read lock and the statements' intents (`table_lock.rs`).
    locks: TableLocks,
    /// The next [`TableSession`]'s id in `locks`.
    next_lock_id: AtomicU64,
}

impl TableEngine {
    /// Opens the store at `cfg.datadir`.
    pub fn open(cfg: EngineConfig) -> Result<Arc<TableEngine>, SqlError> {
        Ok(Self::new(Engine::open(cfg).map_err(store_err)?))
    }

    /// Wraps an already open store.
    pub fn new(store: Engine) -> Arc<TableEngine> {
        Arc::new(TableEngine {
            store,
            system: std::sync::OnceLock::new(),
            locks: TableLocks::default(),
            next_lock_id: AtomicU64::new(1),
        })
    }

    /// Installs the provider of other subsystems' tables (queries can then join, group and
    /// count them like stored tables). Once: a second provider is refused (returned).
    pub fn set_system_tables(
        &self,
        s: Arc<dyn crate::query::SystemTables>,
    ) -> Result<(), Arc<dyn crate::query::SystemTables>> {
        self.system.set(s)
    }

    /// The provider of other subsystems' tables, if installed.
    pub fn system_tables(&self) -> Option<Arc<dyn crate::query::SystemTables>> {
        self.system.get().cloned()
    }

    /// Whether `plan` still matches the catalog: every table it was bound to at PREPARE is
    /// unaltered. An execution rebinds a plan that is not (see `run_dml`), so a statement a
    /// session holds keeps working; a cache of plans builds a new one instead of handing out
    /// a plan that every execution would bind again.
    pub fn plan_is_current(&self, plan: &Plan) -> bool {
        let store = &self.store;
        if plan.query.as_ref().is_some_and(|q| q.is_stale(store))
            || plan.multi.as_ref().is_some_and(|m| m.is_stale(store))
        {
            return false;
        }
        let Some((old, _)) = &plan.access else {
            return true;
        };
        let table = match plan.stmt.planned() {
            TableStmt::Update(u) => &u.table,
            TableStmt::Delete(d) => &d.table,
            _ => return true,
        };
        resolve_db(table, &plan.db)
            .ok()
            .and_then(|d| store.table(&d, &table.name).ok())
            .is_some_and(|now| Arc::ptr_eq(&now, old) || *now == **old)
    }

    /// `BACKUP TO 'dir'`: a consistent physical copy of the store in `dir` (absolute, absent or
    /// empty) — a RocksDB checkpoint in `dir/rocksdb` (see `Engine::checkpoint`) and
    /// `dir/shoal-backup.info` naming what made it. `shoal --restore-from=dir --datadir=new`
    /// turns it into a data directory.
    pub fn backup_to(
        &self,
        dir: &std::path::Path,
        version: &str,
    ) -> Result<BackupReport, SqlError> {
        let bad = |m: String| SqlError::coded(shoal_errors::ER_WRONG_ARGUMENTS, m);
        if !dir.is_absolute() {
            return Err(bad(format!(
                "BACKUP TO needs an absolute directory on the server's host, not '{}'",
                dir.display()
            )));
        }
        if dir.exists() {
            let empty = std::fs::read_dir(dir)
                .map(|mut d| d.next().is_none())
                .unwrap_or(false);
            if !empty {
                return Err(SqlError::coded(
                    shoal_errors::ER_FILE_EXISTS_ERROR,
                    format!("File '{}' already exists", dir.display()),
                ));
            }
        }
        let t0 = std::time::Instant::now();
        let io = |e: std::io::Error| {
            SqlError::coded(
                shoal_errors::ER_GET_ERRNO,
                format!("Got error '{e}' from storage engine"),
            )
        };
        self.store.checkpoint(dir).map_err(store_err)?;
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let info = format!(
            "shoal backup\nformat=1\nserver_version={version}\ncreated_unix={created}\nsource_datadir={}\n",
            self.store.datadir().display()
        );
        let info_path = dir.join(BACKUP_INFO);
        std::fs::write(&info_path, info).map_err(io)?;
        std::fs::File::open(&info_path)
            .and_then(|f| f.sync_all())
            .map_err(io)?;
        std::fs::File::open(dir)
            .and_then(|f| f.sync_all())
            .map_err(io)?;
        let elapsed = t0.elapsed();
        let (mut files, mut bytes) = (0u64, 0u64);
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).map_err(io)? {
                let e = e.map_err(io)?;
                let m = e.metadata().map_err(io)?;
                if m.is_dir() {
                    stack.push(e.path());
                } else {
                    files += 1;
                    bytes += m.len();
                }
            }
        }
        Ok(BackupReport {
            files,
            bytes,
            elapsed,
        })
    }

    /// The table lock manager (LOCK TABLES, the global read lock; status rows).
    pub fn table_locks(&self) -> &TableLocks {
        &self.locks
    }

    /// The underlying store (status variables, settings).
    pub fn store(&self) -> &Engine {
        &self.store
    }

    /// The catalog boundary for the session layer (SHOW DATABASES, CREATE/DROP DATABASE).
    pub fn catalog(self: &Arc<Self>) -> Arc<dyn Catalog> {
        Arc::new(StoreCatalog {
            store: self.store.clone(),
        })
    }

    /// A new session (no open transaction, autocommit on, REPEATABLE READ).
    pub fn session(self: &Arc<Self>) -> TableSession {
        TableSession {
            engine: self.clone(),
            txn: None,
            explicit: false,
            autocommit: true,
            isolation: Isolation::RepeatableRead,
            lock_wait_timeout: None,
            write_limit: u64::MAX,
            restrictions: Restrictions::default(),
            txn_read_only: false,
            next_read_only: None,
            found_rows: None,
            select_limit: u64::MAX,
            write_mode: WriteMode::Strict,
            lock_id: self.next_lock_id.fetch_add(1, Ordering::Relaxed),
            held: HeldIntents::default(),
            locked: None,
            global_read: false,
            table_lock_timeout: Duration::from_secs(31_536_000),
            savepoints: Vec::new(),
            in_statement: false,
            visibility: None,
            kill: Arc::new(KillState {
                current: Mutex::new(None),
                killed: AtomicBool::new(false),
            }),
        }
    }
}

/// The file `BACKUP TO` writes next to the checkpoint (its presence marks a backup directory).
pub const BACKUP_INFO: &str = "shoal-backup.info";

/// What `BACKUP TO` made.
#[derive(Debug, Clone, Copy)]
pub struct BackupReport {
    /// Files in the backup directory.
    pub files: u64,
    /// Their total size (hard links count fully).
    pub bytes: u64,
    /// Time the checkpoint and the info file took.
    pub elapsed: Duration,
}

/// [`Catalog`] over the store: databases live in RocksDB; the system schemas always exist.
pub struct StoreCatalog {
    store: Engine,
}

fn is_system(db: &str) -> bool {
    SYSTEM_DATABASES.iter().any(|s| s.eq_ignore_ascii_case(db))
}

impl Catalog for StoreCatalog {
    fn database_exists(&self, name: &str) -> bool {
        is_system(name) || self.store.database_exists(name)
    }
    fn databases(&self) -> Vec<String> {
        show::all_databases(&self.store)
    }
    fn create_database(&self, name: &str) -> Result<(), CatalogError> {
        if is_system(name) {
            return Err(CatalogError::DatabaseExists(name.to_string()));
        }
        self.store.create_database(name).map_err(|e| match e {
            shoal_store::StoreError::DatabaseExists(d) => CatalogError::DatabaseExists(d),
            e => CatalogError::Storage(e.to_string()),
        })
    }
    fn drop_database(&self, name: &str) -> Result<(), CatalogError> {
        if is_system(name) {
            return Err(CatalogError::SystemDatabase(name.to_string()));
        }
        self.store
            .drop_database(name)
            .map(|_| ())
            .map_err(|e| match e {
                shoal_store::StoreError::NoSuchDatabase(d) => CatalogError::NoSuchDatabase(d),
                e => CatalogError::Storage(e.to_string()),
            })
    }
    fn tables(&self, db: &str) -> Vec<String> {
        self.store.tables(db).unwrap_or_default()
    }
    fn table_exists(&self, db: &str, table: &str) -> bool {
        self.store.table(db, table).is_ok()
    }
}

/// A prepared table statement: parsed, translated, its result columns known and its access
/// path chosen. Shared (`Arc`) and immutable; execute it any number of times.
#[derive(Debug)]
pub struct Plan {
    /// The statement text.
    pub sql: String,
    /// The translated statement.
    pub stmt: TableStmt,
    /// Number of `?` placeholders.
    pub param_count: usize,
    /// Result columns (empty for statements that return an OK packet). Shared with every
    /// result set this plan produces (no per-execution copy of the descriptions).
    pub columns: Arc<[ColumnInfo]>,
    /// Database the statement's unqualified tables resolve to (the current db at prepare).
    pub db: Option<String>,
    /// The table definition the access path was chosen for, and the path. Re-chosen at
    /// execution if the table was altered since.
    access: Option<(Arc<TableDef>, Access)>,
    /// The bound query of a [`TableStmt::Query`] or of an `INSERT ... SELECT`.
    pub(crate) query: Option<Arc<QueryPlan>>,
    /// A bound multi-table UPDATE/DELETE.
    pub(crate) multi: Option<Arc<crate::query::dml::MultiPlan>>,
    /// The tables the statement takes intents on (`table_lock.rs`), worked out at its first
    /// execution and reused by the next ones (no names copied per statement).
    lock_tables: std::sync::OnceLock<IntentTargets>,
}

impl Plan {
    /// The chosen access path: a single-table UPDATE/DELETE's, or a query's first stored
    /// table's (for tests and EXPLAIN-like diagnostics).
    pub fn access(&self) -> Option<&Access> {
        self.access
            .as_ref()
            .map(|(_, a)| a)
            .or_else(|| self.query.as_ref().and_then(|q| q.first_access()))
    }
}

struct KillState {
    /// The running transaction's store kill handle.
    current: Mutex<Option<shoal_store::KillHandle>>,
    /// Set by `kill()`; checked at statement start and cleared.
    killed: AtomicBool,
}

/// Interrupts a session's running statement from another thread (KILL QUERY / CONNECTION).
#[derive(Clone)]
pub struct KillHandle {
    state: Arc<KillState>,
}

impl KillHandle {
    /// Interrupts the running statement (a row-lock wait returns 1317 at once). A statement
    /// that is not running is unaffected.
    pub fn kill(&self) {
        self.state.killed.store(true, Ordering::SeqCst);
        if let Some(h) = self
            .state
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            h.kill();
        }
    }
}

/// One connection's table state: its open transaction and transaction settings.
pub struct TableSession {
    engine: Arc<TableEngine>,
    /// The open store transaction (None between autocommit statements).
    txn: Option<Transaction>,
    /// Opened by BEGIN / START TRANSACTION (stays open across statements).
    explicit: bool,
    /// `autocommit` session variable.
    autocommit: bool,
    /// Isolation level for the next transaction.
    isolation: Isolation,
    /// `innodb_lock_wait_timeout` for this session (None = engine default).
    lock_wait_timeout: Option<Duration>,
    /// `max_binlog_cache_size`: most bytes a transaction's uncommitted writes may hold.
    write_limit: u64,
    /// What the server's and the session's settings refuse (see [`Restrictions`]).
    restrictions: Restrictions,
    /// The open transaction is READ ONLY (decided when it opened).
    txn_read_only: bool,
    /// `SET TRANSACTION READ ONLY | READ WRITE` without a scope: the access mode of the next
    /// transaction only, consumed when it opens.
    next_read_only: Option<bool>,
    /// The row count without LIMIT of the last `SELECT SQL_CALC_FOUND_ROWS` (taken by the
    /// session for FOUND_ROWS()).
    found_rows: Option<u64>,
    /// `sql_select_limit`: most rows a SELECT without a LIMIT of its own returns.
    select_limit: u64,
    /// `sql_mode`'s strictness: what INSERT and UPDATE do with a value that does not fit.
    write_mode: WriteMode,
    /// This session's id in the engine's table lock manager.
    lock_id: u64,
    /// The intents this session holds that the lock manager does not record by its id (read
    /// intents taken through a table's counters).
    held: HeldIntents,
    /// The tables of `LOCK TABLES` while they are held (the session may touch no others), by
    /// (database, table, the name statements must use: the alias, else the table's name).
    locked: Option<HashMap<LockName, TableLockKind>>,
    /// Holds the global read lock (`FLUSH TABLES WITH READ LOCK`).
    global_read: bool,
    /// `lock_wait_timeout`: how long a table lock or intent is waited for (1205 after).
    table_lock_timeout: Duration,
    /// Named savepoints of the open transaction, oldest first.
    savepoints: Vec<(String, Savepoint)>,
    /// A table statement is executing (its intents outlive an implicit commit inside it).
    in_statement: bool,
    /// What information_schema shows this session (`None`: everything).
    visibility: Option<show::Visibility>,
    kill: Arc<KillState>,
}

/// The settings that refuse statements, synced by the session layer before every use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Restrictions {
    /// `read_only` applies to this user (no SUPER / CONNECTION_ADMIN), or `super_read_only` is
    /// on: the option to name in 1290. Row changes and DDL are refused, and so is the COMMIT of
    /// a transaction that changed rows (MySQL rolls it back).
    pub server_read_only: Option<&'static str>,
    /// The session's `transaction_read_only`: the access mode of transactions that do not
    /// choose their own, and of DDL (which commits first and runs outside any transaction).
    pub session_read_only: bool,
}

/// 1290 `ER_OPTION_PREVENTS_STATEMENT` for `option` (`--read-only`, `--super-read-only`).
pub fn read_only_error(option: &str) -> SqlError {
    SqlError::coded(shoal_errors::ER_OPTION_PREVENTS_STATEMENT, format!("The MySQL server is running with the {option} option so it cannot execute this statement"),
    )
}

/// 1792 `ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION`.
pub fn read_only_transaction_error() -> SqlError {
    SqlError::coded(
        shoal_errors::ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION,
        "Cannot execute statement in a READ ONLY transaction.",
    )
}

fn resolve_db(t: &TableRef, db: &Option<String>) -> Result<String, SqlError> {
    t.db.clone()
        .or_else(|| db.clone())
        .ok_or(SqlError::NoDatabase)
}

fn is_info_schema(db: &str) -> bool {
    db.eq_ignore_ascii_case("information_schema")
}

impl TableSession {
    /// Installs what information_schema shows this session (see [`show::Visibility`]).
    pub fn set_visibility(&mut self, v: Option<show::Visibility>) {
        self.visibility = v;
    }

    /// The engine this session belongs to.
    pub fn engine(&self) -> &Arc<TableEngine> {
        &self.engine
    }

    /// A handle to interrupt this session's running statement from another thread.
    pub fn kill_handle(&self) -> KillHandle {
        KillHandle {
            state: self.kill.clone(),
        }
    }

    /// `SET autocommit = on|off`. Turning it on commits an open transaction (as MySQL does).
    pub fn set_autocommit(&mut self, on: bool) -> Result<(), SqlError> {
        if on && !self.autocommit && !self.explicit {
            self.commit()?;
        }
        self.autocommit = on;
        Ok(())
    }

    /// Current autocommit setting.
    pub fn autocommit(&self) -> bool {
        self.autocommit
    }

    /// Isolation level for the next transaction (`SET TRANSACTION ISOLATION LEVEL`).
    pub fn set_isolation(&mut self, iso: Isolation) {
        self.isolation = iso;
    }

    /// `max_binlog_cache_size`: bounds the uncommitted writes of this session's next
    /// transactions (and of the open one).
    pub fn set_write_limit(&mut self, bytes: u64) {
        self.write_limit = bytes;
        if let Some(t) = self.txn.as_mut() {
            t.set_write_limit(bytes);
        }
    }

    /// `innodb_lock_wait_timeout` for this session.
    pub fn set_lock_wait_timeout(&mut self, d: Duration) {
        self.lock_wait_timeout = Some(d);
        if let Some(t) = &mut self.txn {
            t.set_lock_wait_timeout(d);
        }
    }

    /// Whether a transaction is open (BEGIN, or autocommit=0 after a statement).
    pub fn in_transaction(&self) -> bool {
        self.txn.as_ref().is_some_and(|t| t.is_active())
    }

    /// Whether the open transaction holds row locks (for the thread pool's priority rule).
    pub fn holds_locks(&self) -> bool {
        self.txn.as_ref().is_some_and(|t| t.locks_held() > 0)
    }

    /// BEGIN / START TRANSACTION: commits an open transaction, then opens a new one.
    pub fn begin(&mut self) -> Result<(), SqlError> {
        self.begin_with(None)
    }

    /// START TRANSACTION with an access mode (`Some(true)` = READ ONLY, `Some(false)` = READ
    /// WRITE; `None`: the next-transaction mode if one was set, else the session's).
    pub fn begin_with(&mut self, read_only: Option<bool>) -> Result<(), SqlError> {
        self.commit()?;
        // START TRANSACTION releases LOCK TABLES (not the global read lock), as in MySQL.
        if self.locked.take().is_some() {
            self.engine.locks.unlock_tables_only(self.lock_id);
        }
        if let Some(ro) = read_only {
            self.next_read_only = Some(ro);
        }
        self.open_txn();
        self.explicit = true;
        Ok(())
    }

    /// Settings that refuse statements (see [`Restrictions`]).
    pub fn set_restrictions(&mut self, r: Restrictions) {
        self.restrictions = r;
    }

    /// `SET TRANSACTION READ ONLY | READ WRITE` (no scope): the next transaction's access mode.
    pub fn set_next_read_only(&mut self, read_only: bool) {
        self.next_read_only = Some(read_only);
    }

    /// Whether the open transaction is READ ONLY.
    pub fn transaction_read_only(&self) -> bool {
        self.in_transaction() && self.txn_read_only
    }

    /// `sql_select_limit` (`u64::MAX`: none).
    pub fn set_select_limit(&mut self, limit: u64) {
        self.select_limit = limit;
    }

    /// Strict or not (`sql_mode` with or without `STRICT_TRANS_TABLES` / `STRICT_ALL_TABLES`):
    /// what INSERT and UPDATE do with a value that does not fit its column.
    pub fn set_write_mode(&mut self, mode: WriteMode) {
        self.write_mode = mode;
    }

    /// COMMIT (no-op without a transaction). Under `read_only` (see [`Restrictions`]) a transaction
    /// that changed rows is rolled back instead, with 1290, as MySQL does.
    pub fn commit(&mut self) -> Result<(), SqlError> {
        self.explicit = false;
        let r = match self.txn.take() {
            Some(mut t) if t.is_active() => match self.restrictions.server_read_only {
                Some(option) if t.has_writes() => {
                    t.rollback();
                    Err(read_only_error(option))
                }
                _ => t.commit().map_err(store_err),
            },
            _ => Ok(()),
        };
        self.clear_kill_handle();
        self.end_of_transaction();
        r
    }

    /// ROLLBACK (no-op without a transaction).
    pub fn rollback(&mut self) {
        self.explicit = false;
        if let Some(mut t) = self.txn.take() {
            if t.is_active() {
                t.rollback();
            }
        }
        self.clear_kill_handle();
        self.end_of_transaction();
    }

    fn clear_kill_handle(&self) {
        *self.kill.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn open_txn(&mut self) {
        self.txn_read_only = self
            .next_read_only
            .take()
            .unwrap_or(self.restrictions.session_read_only);
        let mut t = self.engine.store.begin(self.isolation);
        if let Some(d) = self.lock_wait_timeout {
            t.set_lock_wait_timeout(d);
        }
        t.set_write_limit(self.write_limit);
        *self.kill.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(t.kill_handle());
        self.txn = Some(t);
    }

    /// Parses, translates and plans a table statement. `current_db` resolves unqualified
    /// table names (for this plan's whole life, as MySQL resolves at PREPARE).
    pub fn prepare(&mut self, sql: &str, current_db: Option<&str>) -> Result<Arc<Plan>, SqlError> {
        self.prepare_tree(sql, None, current_db)
    }

    /// [`Self::prepare`] of a statement the session already parsed: `tree` (if any) is `sql`
    /// as sqlparser read it, translated here without parsing the text again.
    pub fn prepare_tree(
        &mut self,
        sql: &str,
        tree: Option<shoal_sql::Tree>,
        current_db: Option<&str>,
    ) -> Result<Arc<Plan>, SqlError> {
        let r = match tree {
            Some(tree) => translate_tree(sql, tree),
            None => parse_table_statement(sql),
        }
        .and_then(|(stmt, n)| self.prepare_parsed(sql, stmt, n, current_db));
        // Under LOCK TABLES a table that is not locked is 1100 even when it does not exist:
        // MySQL and MariaDB look in the locked set before the catalog.
        match r {
            Err(e) if self.locked.is_some() && e.code() == 1146 => {
                Err(not_locked(&missing_table_name(&e)))
            }
            r => r,
        }
    }

    /// [`Self::prepare`] after parsing.
    fn prepare_parsed(
        &mut self,
        sql: &str,
        stmt: TableStmt,
        param_count: usize,
        current_db: Option<&str>,
    ) -> Result<Arc<Plan>, SqlError> {
        let db = current_db.map(str::to_string);
        let mut columns = Vec::new();
        let mut access = None;
        let store = &self.engine.store;
        let system = self.engine.system_tables();
        let table_of = |t: &TableRef| -> Result<(String, Arc<TableDef>), SqlError> {
            let d = resolve_db(t, &db)?;
            let def = store.table(&d, &t.name).map_err(store_err)?;
            Ok((d, def))
        };
        let mut query = None;
        let mut multi = None;
        // EXPLAIN UPDATE / DELETE plans the statement inside as if it were to run.
        if let TableStmt::ExplainDml(_) = &stmt {
            columns = crate::query::explain::columns();
        }
        match stmt.planned() {
            TableStmt::Query(q) => {
                let qp = crate::query::prepare(store, system.as_ref(), q, db.as_deref())?;
                if q.into.is_empty() {
                    columns = qp.columns.clone();
                } else if q.into.len() != qp.columns.len() {
                    return Err(SqlError::coded(
                        shoal_errors::ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT,
                        "The used SELECT statements have a different number of columns",
                    ));
                }
                query = Some(Arc::new(qp));
            }
            TableStmt::Explain(q) => {
                let qp = crate::query::prepare(store, system.as_ref(), q, db.as_deref())?;
                columns = crate::query::explain::columns();
                query = Some(Arc::new(qp));
            }
            TableStmt::Multi(m) => {
                multi = Some(Arc::new(crate::query::dml::prepare_multi(
                    store,
                    m,
                    db.as_deref(),
                )?));
            }
            TableStmt::Insert(i) if i.select.is_some() => {
                table_of(&i.table)?;
                let q = i.select.as_ref().expect("checked");
                query = Some(Arc::new(crate::query::prepare(
                    store,
                    system.as_ref(),
                    q,
                    db.as_deref(),
                )?));
            }
            TableStmt::Update(u) => {
                let (_, def) = table_of(&u.table)?;
                crate::exec::check_dml_columns(stmt.planned(), &def)?;
                access = Some((def.clone(), choose_access(&def, u.filter.as_ref())));
            }
            TableStmt::Delete(dl) => {
                let (_, def) = table_of(&dl.table)?;
                crate::exec::check_dml_columns(stmt.planned(), &def)?;
                access = Some((def.clone(), choose_access(&def, dl.filter.as_ref())));
            }
            TableStmt::Insert(i) => {
                table_of(&i.table)?;
            }
            _ => {}
        }
        Ok(Arc::new(Plan {
            sql: sql.to_string(),
            stmt,
            param_count,
            columns: columns.into(),
            db,
            access,
            query,
            multi,
            lock_tables: std::sync::OnceLock::new(),
        }))
    }

    /// Prepare + execute of a statement without parameters (COM_QUERY).
    pub fn query(
        &mut self,
        sql: &str,
        current_db: Option<&str>,
        ctx: &mut dyn Context,
    ) -> Result<ExecOutput, SqlError> {
        let plan = self.prepare(sql, current_db)?;
        self.execute(&plan, &[], ctx)
    }

    /// Executes a plan with bound parameters, in the session's transaction (see module docs),
    /// after the table-lock checks: under LOCK TABLES only locked tables (1100, 1099), under
    /// the session's own global read lock no writes (1223), otherwise intents on the tables it
    /// touches, held until the transaction ends (`table_lock.rs`).
    pub fn execute(
        &mut self,
        plan: &Plan,
        params: &[Value],
        ctx: &mut dyn Context,
    ) -> Result<ExecOutput, SqlError> {
        let targets = self.lock_targets(plan)?;
        let tables = &targets.tables;
        if !tables.is_empty() {
            if self.locked.is_some() {
                self.check_locked(plan, true)?;
            } else {
                let writes = tables.iter().any(|(_, r)| *r == LockRequest::WriteIntent);
                if self.global_read && writes {
                    return Err(conflicting_read_lock());
                }
                self.kill.killed.store(false, Ordering::SeqCst);
                self.engine.locks.acquire_intents(
                    self.lock_id,
                    targets,
                    &mut self.held,
                    self.table_lock_timeout,
                    &self.kill.killed,
                )?;
            }
        }
        // DDL's implicit commit inside must not drop the intents taken for the DDL itself.
        self.in_statement = true;
        let r = self.execute_inner(plan, params, ctx);
        self.in_statement = false;
        if !self.in_transaction() {
            self.end_of_transaction();
        }
        r
    }

    /// The tables `plan` takes table locks on, computed once per plan.
    fn lock_targets<'p>(&self, plan: &'p Plan) -> Result<&'p IntentTargets, SqlError> {
        Ok(match plan.lock_tables.get() {
            Some(t) => t,
            None => {
                let t = self.engine.locks.targets(plan_tables(plan)?);
                plan.lock_tables.get_or_init(|| t)
            }
        })
    }

    /// Under LOCK TABLES: every table `plan` touches must be in the locked set, under the name
    /// (or alias) it was locked as (1100); with `writes`, a table the statement changes must
    /// not be READ-locked (1099). Outside LOCK TABLES, nothing to check.
    fn check_locked(&self, plan: &Plan, writes: bool) -> Result<(), SqlError> {
        let Some(locked) = &self.locked else {
            return Ok(());
        };
        let tables = &self.lock_targets(plan)?.tables;
        let creates = matches!(plan.stmt, TableStmt::CreateTable { .. });
        for (key, write) in plan_lock_names(plan, tables)? {
            match locked.get(&key) {
                None if creates => {}
                None => return Err(not_locked(&key.2)),
                Some(TableLockKind::Read) if write && writes => return Err(read_locked(&key.2)),
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// PREPARE's table-lock check: under LOCK TABLES a statement naming a table outside the
    /// locked set is refused now (1100), as MySQL and MariaDB open a statement's tables at
    /// PREPARE. A write to a READ-locked table is refused at execution (1099), as there: its
    /// PREPARE succeeds. Also for a plan another session built (shared statements).
    pub fn check_locked_at_prepare(&self, plan: &Plan) -> Result<(), SqlError> {
        self.check_locked(plan, false)
    }

    /// The transaction ended: its savepoints go, and its intents unless a statement that
    /// holds them is still running.
    fn end_of_transaction(&mut self) {
        self.savepoints.clear();
        if !self.in_statement {
            self.engine
                .locks
                .release_intents(self.lock_id, &mut self.held);
        }
    }

    /// Releases every table lock, the global read lock and the intents (disconnect, reset).
    pub fn release_table_locks(&mut self) {
        self.locked = None;
        self.global_read = false;
        self.engine.locks.release_all(self.lock_id, &mut self.held);
    }

    /// `lock_wait_timeout` for this session.
    pub fn set_table_lock_timeout(&mut self, d: Duration) {
        self.table_lock_timeout = d;
    }

    /// Whether the session holds LOCK TABLES locks or the global read lock.
    pub fn holds_table_locks(&self) -> bool {
        self.locked.is_some() || self.global_read
    }

    /// `LOCK TABLES`: commits the open transaction and releases the tables locked before, then
    /// takes every lock at once (1146 for a missing table, 1205 after `lock_wait_timeout`).
    pub fn lock_tables(
        &mut self,
        list: &[(Option<String>, String, Option<String>, TableLockKind)],
        current_db: Option<&str>,
    ) -> Result<(), SqlError> {
        self.unlock_tables()?;
        self.commit()?;
        // The names statements will use (alias, else table name) must be unique, as in one
        // FROM clause: MySQL answers 1066 before locking anything.
        let mut names: HashMap<LockName, TableLockKind> = HashMap::new();
        let mut want: HashMap<TableKey, TableLockKind> = HashMap::new();
        for (db, name, alias, kind) in list {
            let d = db
                .clone()
                .or_else(|| current_db.map(str::to_string))
                .ok_or(SqlError::NoDatabase)?;
            let def = self.engine.store.table(&d, name).map_err(store_err)?;
            let shown = alias.clone().unwrap_or_else(|| def.name.clone());
            if names
                .keys()
                .any(|(kd, _, kn)| *kn == shown && (alias.is_some() || *kd == def.db))
            {
                return Err(SqlError::coded(
                    shoal_errors::ER_NONUNIQ_TABLE,
                    format!("Not unique table/alias: '{shown}'"),
                ));
            }
            names.insert((def.db.clone(), def.name.clone(), shown), *kind);
            let e = want
                .entry((def.db.clone(), def.name.clone()))
                .or_insert(*kind);
            if *kind == TableLockKind::Write {
                *e = TableLockKind::Write;
            }
        }
        if self.global_read && want.values().any(|k| *k == TableLockKind::Write) {
            return Err(conflicting_read_lock());
        }
        let req: Vec<(TableKey, LockRequest)> = want
            .iter()
            .map(|(k, v)| {
                let r = match v {
                    TableLockKind::Read => LockRequest::Read,
                    TableLockKind::Write => LockRequest::Write,
                };
                (k.clone(), r)
            })
            .collect();
        self.kill.killed.store(false, Ordering::SeqCst);
        self.engine.locks.lock_tables(
            self.lock_id,
            &req,
            self.table_lock_timeout,
            &self.kill.killed,
        )?;
        self.locked = Some(names);
        Ok(())
    }

    /// `UNLOCK TABLES`: releases LOCK TABLES locks (committing the open transaction, as MySQL
    /// does when LOCK TABLES was used) and the global read lock. Without either, a no-op (a
    /// transaction stays open: `mysqldump --single-transaction` sends it right after START
    /// TRANSACTION).
    pub fn unlock_tables(&mut self) -> Result<(), SqlError> {
        let r = if self.locked.take().is_some() {
            self.commit()
        } else {
            Ok(())
        };
        if self.global_read || r.is_ok() {
            self.global_read = false;
            self.engine.locks.unlock(self.lock_id);
        }
        r
    }

    /// `FLUSH TABLES WITH READ LOCK`: releases LOCK TABLES locks, then waits for every other
    /// session's writing transaction to end and blocks new ones until UNLOCK TABLES.
    pub fn global_read_lock(&mut self) -> Result<(), SqlError> {
        if self.locked.is_some() {
            self.unlock_tables()?;
        }
        if self.global_read {
            return Ok(());
        }
        self.kill.killed.store(false, Ordering::SeqCst);
        self.engine.locks.global_read_lock(
            self.lock_id,
            self.table_lock_timeout,
            &self.kill.killed,
        )?;
        self.global_read = true;
        Ok(())
    }

    /// `FLUSH TABLES`: shoal caches no open tables, so there is nothing to close; under LOCK
    /// TABLES it is refused as MySQL refuses it (1192).
    pub fn flush_tables(&mut self) -> Result<(), SqlError> {
        if self.locked.is_some() {
            return Err(SqlError::coded(shoal_errors::ER_LOCK_OR_ACTIVE_TRANSACTION, "Can't execute the given command because you have active locked tables or an active transaction",
            ));
        }
        Ok(())
    }

    /// `SAVEPOINT name` (outside a transaction a no-op, as in MySQL with autocommit on).
    pub fn savepoint(&mut self, name: &str) -> Result<(), SqlError> {
        if self.txn.is_none() && !self.autocommit {
            self.open_txn();
        }
        let Some(t) = self.txn.as_ref().filter(|t| t.is_active()) else {
            return Ok(());
        };
        let sp = t.savepoint();
        self.savepoints
            .retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.savepoints.push((name.to_string(), sp));
        Ok(())
    }

    fn find_savepoint(&self, name: &str) -> Result<usize, SqlError> {
        self.savepoints
            .iter()
            .position(|(n, _)| n.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                SqlError::coded(
                    shoal_errors::ER_SP_DOES_NOT_EXIST,
                    format!("SAVEPOINT {name} does not exist"),
                )
            })
    }

    /// `ROLLBACK TO SAVEPOINT name`: undoes the transaction's changes since the savepoint (its
    /// snapshot and row locks stay); later savepoints go, this one stays (1305 if unknown).
    pub fn rollback_to_savepoint(&mut self, name: &str) -> Result<(), SqlError> {
        let i = self.find_savepoint(name)?;
        let sp = self.savepoints[i].1;
        self.savepoints.truncate(i + 1);
        if let Some(t) = self.txn.as_mut().filter(|t| t.is_active()) {
            t.rollback_to(sp);
        }
        Ok(())
    }

    /// `RELEASE SAVEPOINT name`: forgets it and the later ones (1305 if unknown).
    pub fn release_savepoint(&mut self, name: &str) -> Result<(), SqlError> {
        let i = self.find_savepoint(name)?;
        self.savepoints.truncate(i);
        Ok(())
    }

    /// `ALTER TABLE t DISABLE|ENABLE KEYS`: checks the table (and the LOCK TABLES rules for a
    /// change) and does nothing else: the store maintains its indexes in every write.
    pub fn alter_keys(&mut self, db: Option<&str>, name: &str) -> Result<(), SqlError> {
        let d = db.ok_or(SqlError::NoDatabase)?;
        let def = self.engine.store.table(d, name).map_err(store_err)?;
        if let Some(locked) = &self.locked {
            match locked.get(&(def.db.clone(), def.name.clone(), name.to_string())) {
                None => return Err(not_locked(name)),
                Some(TableLockKind::Read) => return Err(read_locked(name)),
                Some(TableLockKind::Write) => {}
            }
        } else if self.global_read {
            return Err(conflicting_read_lock());
        }
        Ok(())
    }

    fn execute_inner(
        &mut self,
        plan: &Plan,
        params: &[Value],
        ctx: &mut dyn Context,
    ) -> Result<ExecOutput, SqlError> {
        if params.len() != plan.param_count {
            return Err(SqlError::WrongArguments("mysqld_stmt_execute".into()));
        }
        // Borrowed, not cloned: an `Engine` clone and drop are four atomic operations on
        // counters every session shares. The borrow is of the `engine` field alone, so the
        // statement path below may still take `self.txn` and set other fields (but calls no
        // `&mut self` method while it reads rows).
        let store = &self.engine.store;
        // Statements that do not touch rows.
        match &plan.stmt {
            s if s.is_ddl() => {
                let store = store.clone();
                if let Some(option) = self.restrictions.server_read_only {
                    return Err(read_only_error(option));
                }
                self.commit()?;
                // The implicit commit ended any transaction: DDL runs in the session's mode.
                self.next_read_only = None;
                if self.restrictions.session_read_only {
                    return Err(read_only_transaction_error());
                }
                return self.ddl(&store, plan, ctx);
            }
            TableStmt::ShowTables { db, full, like } => {
                let d = db
                    .clone()
                    .or_else(|| plan.db.clone())
                    .ok_or(SqlError::NoDatabase)?;
                if is_info_schema(&d) {
                    return Ok(ExecOutput::Rows {
                        columns: vec![ColumnInfo::text("Tables_in_information_schema")].into(),
                        rows: ["COLUMNS", "SCHEMATA"]
                            .iter()
                            .chain(crate::infoschema::names())
                            .chain(show::EMPTY_TABLES.iter().map(|(n, _, _)| n))
                            .map(|t| vec![Value::Str(t.to_string())])
                            .collect(),
                    });
                }
                return show::show_tables(store, &d, *full, like);
            }
            TableStmt::ShowCreateTable(t) => {
                let d = resolve_db(t, &plan.db)?;
                if let Some(log) = crate::mysql_schema::log_table(&d, &t.name) {
                    return Ok(show::show_create_log_table(log));
                }
                let def = store.table(&d, &t.name).map_err(store_err)?;
                return Ok(show::show_create(store, &def));
            }
            TableStmt::ShowColumns { table, full, like } => {
                let d = resolve_db(table, &plan.db)?;
                let def = store.table(&d, &table.name).map_err(store_err)?;
                return Ok(show::show_columns(&def, *full, like));
            }
            TableStmt::ShowIndex(t) => {
                let d = resolve_db(t, &plan.db)?;
                let def = store.table(&d, &t.name).map_err(store_err)?;
                return Ok(show::show_index(&def));
            }
            TableStmt::Analyze(ts) | TableStmt::Optimize(ts) | TableStmt::Check(ts) => {
                let store = store.clone();
                // Table maintenance commits the open transaction first, as in MariaDB.
                self.commit()?;
                self.next_read_only = None;
                let list = ts
                    .iter()
                    .map(|t| Ok((resolve_db(t, &plan.db)?, t.name.clone())))
                    .collect::<Result<Vec<_>, SqlError>>()?;
                return Ok(match &plan.stmt {
                    TableStmt::Analyze(_) => show::analyze(&store, &list),
                    TableStmt::Optimize(_) => show::optimize(&store, &list),
                    _ => show::check(&store, &list),
                });
            }
            _ => {}
        }
        if self.txn.as_ref().is_some_and(|t| !t.is_active()) {
            self.txn = None;
            self.explicit = false;
        }
        if self.txn.is_none()
            && matches!(plan.stmt, TableStmt::Query(_))
            && plan.query.as_ref().is_some_and(|q| q.tables.is_empty())
        {
            // A query that reads no stored table (`SELECT 1`, `SELECT @@x`, a virtual table)
            // opens no transaction, as with InnoDB: a pending `SET TRANSACTION READ ONLY` stays
            // for the next one, and no snapshot is taken.
            let mut txn = store.begin(self.isolation);
            let result = run_counted(
                store,
                self.engine.system.get(),
                self.visibility.clone(),
                self.write_mode,
                &mut self.found_rows,
                (plan, &mut txn, params, ctx),
            );
            txn.rollback();
            return self.limited(plan, result);
        }
        let writes = plan.stmt.writes_rows();
        if writes {
            if let Some(option) = self.restrictions.server_read_only {
                return Err(read_only_error(option));
            }
        }
        // The access mode of the open transaction, or of the one this statement would open.
        // Refused before that transaction opens, a statement leaves a `SET TRANSACTION READ
        // ONLY` for the next one (MySQL and MariaDB).
        let read_only = match &self.txn {
            Some(_) => self.txn_read_only,
            None => self
                .next_read_only
                .unwrap_or(self.restrictions.session_read_only),
        };
        if (writes || plan.stmt.locks_for_update()) && read_only {
            return Err(read_only_transaction_error());
        }
        if self.txn.is_none() {
            self.open_txn();
        }
        self.kill.killed.store(false, Ordering::SeqCst);
        let mut txn = self.txn.take().expect("opened above");
        let sp = txn.begin_statement();
        txn.set_lock_wait(plan.stmt.lock_wait());
        let result = run_counted(
            &self.engine.store,
            self.engine.system.get(),
            self.visibility.clone(),
            self.write_mode,
            &mut self.found_rows,
            (plan, &mut txn, params, ctx),
        );
        txn.set_lock_wait(shoal_store::LockWait::Wait);
        let result = self.limited(plan, result);
        let autocommit_stmt = self.autocommit && !self.explicit;
        match result {
            Ok(out) => {
                if autocommit_stmt {
                    let r = txn.commit().map_err(store_err);
                    self.clear_kill_handle();
                    r?;
                } else {
                    self.txn = Some(txn);
                }
                Ok(out)
            }
            Err(e) => {
                if !txn.is_active() {
                    // Deadlock: the store rolled the whole transaction back.
                    self.explicit = false;
                    self.clear_kill_handle();
                } else if autocommit_stmt {
                    txn.rollback();
                    self.clear_kill_handle();
                } else {
                    txn.rollback_to(sp);
                    self.txn = Some(txn);
                }
                Err(e)
            }
        }
    }

    /// The row count without LIMIT / OFFSET of the last `SELECT SQL_CALC_FOUND_ROWS` this
    /// session ran (once: taken).
    pub fn take_found_rows(&mut self) -> Option<u64> {
        self.found_rows.take()
    }

    /// After a `SELECT SQL_CALC_FOUND_ROWS ... LIMIT`: runs the query again without its LIMIT,
    /// OFFSET and ORDER BY, in the same transaction and snapshot, and keeps the count for
    /// FOUND_ROWS() (MySQL reads on past the LIMIT the same way).
    #[allow(clippy::too_many_arguments)]
    fn count_found_rows(
        found_rows: &mut Option<u64>,
        result: Result<ExecOutput, SqlError>,
        store: &Engine,
        system: Option<&Arc<dyn crate::query::SystemTables>>,
        plan: &Plan,
        txn: &mut Transaction,
        params: &[Value],
        ctx: &mut dyn Context,
    ) -> Result<ExecOutput, SqlError> {
        *found_rows = None;
        let (Ok(ExecOutput::Rows { rows, .. }), TableStmt::Query(q)) = (&result, &plan.stmt) else {
            return result;
        };
        if !q.calc_found_rows {
            return result;
        }
        if q.limit.is_none() && q.offset.is_none() {
            *found_rows = Some(rows.len() as u64);
            return result;
        }
        let mut all = (**q).clone();
        all.limit = None;
        all.offset = None;
        all.order_by.clear();
        let counted = crate::query::prepare(store, system, &all, plan.db.as_deref())
            .and_then(|qp| crate::query::execute(&qp, store, txn, params, ctx));
        match counted {
            Ok(rows) => {
                *found_rows = Some(rows.len() as u64);
                result
            }
            Err(e) => Err(e),
        }
    }

    /// A SELECT's rows cut to `sql_select_limit` unless it has its own LIMIT.
    fn limited(
        &self,
        plan: &Plan,
        result: Result<ExecOutput, SqlError>,
    ) -> Result<ExecOutput, SqlError> {
        match result {
            Ok(ExecOutput::Rows { columns, mut rows })
                if self.select_limit < rows.len() as u64 && plan.stmt.unlimited_select() =>
            {
                rows.truncate(self.select_limit as usize);
                Ok(ExecOutput::Rows { columns, rows })
            }
            other => other,
        }
    }

    /// Runs `f` holding `tables` exclusively: the metadata lock of DDL that changes what rows
    /// or index entries a table has (an index build, a copy, TRUNCATE, DROP). It waits until
    /// no other transaction holds an intent on them (every statement takes one until its
    /// transaction ends) and holds new statements on them off until `f` returns, so no write
    /// lands beside the change (a CREATE INDEX scan used to miss rows written behind it).
    /// Under LOCK TABLES the session's WRITE lock is that guarantee already.
    pub(crate) fn exclusively<T>(
        &mut self,
        tables: Vec<TableKey>,
        f: impl FnOnce(&mut Self) -> Result<T, SqlError>,
    ) -> Result<T, SqlError> {
        let exclusive = self.locked.is_none();
        if exclusive {
            // Its own read intents on these tables (read earlier in the transaction) must not
            // be waited for.
            self.engine.locks.demote(self.lock_id, &mut self.held);
            let requests: Vec<_> = tables
                .into_iter()
                .map(|k| (k, LockRequest::Write))
                .collect();
            self.engine.locks.lock_tables(
                self.lock_id,
                &requests,
                self.table_lock_timeout,
                &self.kill.killed,
            )?;
        }
        let r = f(self);
        if exclusive {
            self.engine.locks.unlock_tables_only(self.lock_id);
        }
        r
    }

    fn ddl(
        &mut self,
        store: &Engine,
        plan: &Plan,
        ctx: &mut dyn Context,
    ) -> Result<ExecOutput, SqlError> {
        let db = |t: &TableRef| resolve_db(t, &plan.db);
        // DDL that changes a table's rows or index entries holds it exclusively.
        let keys: Vec<TableKey> = match &plan.stmt {
            TableStmt::CreateIndex { table, .. }
            | TableStmt::DropIndex { table, .. }
            | TableStmt::Truncate(table) => vec![(db(table)?, table.name.clone())],
            TableStmt::AlterTable { table, ops } if !ops.iter().any(AlterOp::changes_columns) => {
                vec![(db(table)?, table.name.clone())]
            }
            TableStmt::DropTable { tables, .. } => tables
                .iter()
                .map(|t| Ok((db(t)?, t.name.clone())))
                .collect::<Result<_, SqlError>>()?,
            _ => Vec::new(),
        };
        if keys.is_empty() {
            self.ddl_unlocked(store, plan, ctx)
        } else {
            self.exclusively(keys, |me| me.ddl_unlocked(store, plan, ctx))
        }
    }

    fn ddl_unlocked(
        &mut self,
        store: &Engine,
        plan: &Plan,
        ctx: &mut dyn Context,
    ) -> Result<ExecOutput, SqlError> {
        let db = |t: &TableRef| resolve_db(t, &plan.db);
        match &plan.stmt {
            TableStmt::CreateTable {
                db: d,
                if_not_exists,
                spec,
                deferred,
            } => {
                let d = d
                    .clone()
                    .or_else(|| plan.db.clone())
                    .ok_or(SqlError::NoDatabase)?;
                if is_info_schema(&d) {
                    return Err(access_denied(&d));
                }
                // `mysql.general_log` / `slow_log` always exist (crate::mysql_schema).
                if crate::mysql_schema::log_table(&d, &spec.name).is_some() {
                    let exists = format!("Table '{}' already exists", spec.name);
                    if *if_not_exists {
                        ctx.note(shoal_errors::ER_TABLE_EXISTS_ERROR.code, exists);
                        return Ok(ExecOutput::ok(0));
                    }
                    return Err(SqlError::coded(shoal_errors::ER_TABLE_EXISTS_ERROR, exists));
                }
                if let Some(e) = deferred {
                    return Err(e.clone());
                }
                // InnoDB's limit (MySQL and MariaDB answer 1117). The store's checks are
                // quadratic in the column count: 64000 columns took 8 s (found by fuzzing).
                if spec.columns.len() > MAX_COLUMNS {
                    return Err(SqlError::coded(
                        shoal_errors::ER_TOO_MANY_FIELDS,
                        "Too many columns",
                    ));
                }
                match store.create_table_with(&d, spec.clone(), crate::fk::checks_on(ctx)) {
                    Ok(_) => Ok(ExecOutput::ok(0)),
                    Err(shoal_store::StoreError::TableExists(_)) if *if_not_exists => {
                        ctx.note(
                            shoal_errors::ER_TABLE_EXISTS_ERROR.code,
                            format!("Table '{}' already exists", spec.name),
                        );
                        Ok(ExecOutput::ok(0))
                    }
                    Err(e) => Err(store_err(e)),
                }
            }
            TableStmt::CreateIndex { table, spec } => {
                store
                    .create_index(&db(table)?, &table.name, spec.clone())
                    .map_err(store_err)?;
                Ok(ExecOutput::ok(0))
            }
            TableStmt::DropIndex { table, name } => {
                store
                    .drop_index(&db(table)?, &table.name, name)
                    .map_err(store_err)?;
                Ok(ExecOutput::ok(0))
            }
            TableStmt::DropTable { tables, if_exists } => {
                let mut missing = Vec::new();
                for t in tables {
                    let d = db(t)?;
                    if store.table(&d, &t.name).is_err() {
                        missing.push(format!("{d}.{}", t.name));
                    }
                }
                if !missing.is_empty() && !*if_exists {
                    return Err(SqlError::coded(
                        shoal_errors::ER_BAD_TABLE_ERROR,
                        format!("Unknown table '{}'", missing.join(",")),
                    ));
                }
                if crate::fk::checks_on(ctx) {
                    // A table other tables reference stays (unless they go with it).
                    let dropping: Vec<(String, String)> = tables
                        .iter()
                        .map(|t| Ok((db(t)?, t.name.to_ascii_lowercase())))
                        .collect::<Result<_, SqlError>>()?;
                    for (d, n) in &dropping {
                        for (child, fi) in store.referencing(d, n) {
                            let child_key = (child.db.clone(), child.name.to_ascii_lowercase());
                            if !dropping.contains(&child_key) {
                                return Err(SqlError::coded(shoal_errors::ER_FK_CANNOT_DROP_PARENT, format!(
                                        "Cannot drop table '{n}' referenced by a foreign key constraint '{}' on table '{}'.",
                                        child.foreign_keys[fi].name, child.name
                                    ),
                                ));
                            }
                        }
                    }
                }
                for t in tables {
                    let d = db(t)?;
                    match store.drop_table(&d, &t.name) {
                        Ok(()) | Err(shoal_store::StoreError::NoSuchTable { .. }) => {}
                        Err(e) => return Err(store_err(e)),
                    }
                }
                Ok(ExecOutput::Ok {
                    affected_rows: 0,
                    last_insert_id: 0,
                    info: String::new(),
                    warnings: missing.len() as u16,
                })
            }
            TableStmt::Truncate(t) => {
                store.truncate_table(&db(t)?, &t.name).map_err(store_err)?;
                Ok(ExecOutput::ok(0))
            }
            TableStmt::AlterTable { table, ops } => {
                let d = db(table)?;
                if ops.iter().any(AlterOp::changes_columns) {
                    return self.alter_columns(store, &d, &table.name, ops, ctx);
                }
                // Column names are checked before anything changes: an ALTER that would fail
                // on its third column must not have added the first two.
                let def = store.table(&d, &table.name).map_err(store_err)?;
                let mut names: Vec<&str> = def.columns.iter().map(|c| c.name.as_str()).collect();
                for op in ops {
                    if let AlterOp::AddColumn { column, .. } = op {
                        if names.iter().any(|n| n.eq_ignore_ascii_case(&column.name)) {
                            return Err(SqlError::coded(
                                shoal_errors::ER_DUP_FIELDNAME,
                                format!("Duplicate column name '{}'", column.name),
                            ));
                        }
                        names.push(&column.name);
                    }
                }
                for op in ops {
                    match op {
                        AlterOp::AddColumn {
                            column,
                            if_not_exists,
                        } => {
                            let mut column = column.clone();
                            column.added_default = alter::added_default(&column, ctx)?;
                            store
                                .add_column(&d, &table.name, column, *if_not_exists)
                                .map_err(store_err)?;
                        }
                        AlterOp::AddIndex(spec) => {
                            let mut spec = spec.clone();
                            if spec.name.is_empty() {
                                spec.name = spec.columns.first().cloned().unwrap_or_default();
                            }
                            store
                                .create_index(&d, &table.name, spec)
                                .map_err(store_err)?;
                        }
                        AlterOp::DropIndex(n) => {
                            store.drop_index(&d, &table.name, n).map_err(store_err)?;
                        }
                        AlterOp::AddForeignKey(spec) => {
                            self.add_foreign_key(store, &d, &table.name, spec, ctx)?;
                        }
                        AlterOp::DropForeignKey(n) => {
                            store
                                .drop_foreign_key(&d, &table.name, n)
                                .map_err(store_err)?;
                        }
                        AlterOp::DropColumn { .. } | AlterOp::ChangeColumn { .. } => {
                            unreachable!("column changes go to alter_columns")
                        }
                    }
                }
                Ok(ExecOutput::Ok {
                    affected_rows: 0,
                    last_insert_id: 0,
                    info: "Records: 0  Duplicates: 0  Warnings: 0".into(),
                    warnings: 0,
                })
            }
            _ => Err(SqlError::Unsupported("statement".into())),
        }
    }
}

impl TableSession {
    /// ALTER TABLE ADD FOREIGN KEY: the child's index first (InnoDB adds one when none has the
    /// key's columns leading), then, under `foreign_key_checks`, every existing row must find
    /// its parent (1452), then the key itself.
    fn add_foreign_key(
        &mut self,
        store: &Engine,
        db: &str,
        table: &str,
        spec: &shoal_store::ForeignKeySpec,
        ctx: &mut dyn Context,
    ) -> Result<(), SqlError> {
        let def = store.table(db, table).map_err(store_err)?;
        let cols = spec
            .columns
            .iter()
            .map(|c| {
                def.column_index(c).ok_or_else(|| {
                    SqlError::coded(
                        shoal_errors::ER_KEY_COLUMN_DOES_NOT_EXITS,
                        format!("Key column '{c}' doesn't exist in table"),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if def.key_with_prefix(&cols).is_none() {
            let name = spec.name.clone().unwrap_or_else(|| spec.columns[0].clone());
            store
                .create_index(
                    db,
                    table,
                    shoal_store::IndexSpec {
                        name,
                        columns: spec.columns.clone(),
                        unique: false,
                    },
                )
                .map_err(store_err)?;
        }
        if crate::fk::checks_on(ctx) && !spec.columns.is_empty() {
            let q = |n: &str| format!("`{}`", n.replace('`', "``"));
            let pdb = spec.ref_db.clone().unwrap_or_else(|| db.to_string());
            let not_null: Vec<String> = spec
                .columns
                .iter()
                .map(|c| format!("c.{} IS NOT NULL", q(c)))
                .collect();
            let eqs: Vec<String> = spec
                .columns
                .iter()
                .zip(&spec.ref_columns)
                .map(|(c, r)| format!("p.{} = c.{}", q(r), q(c)))
                .collect();
            let sql = format!(
                "SELECT 1 FROM {}.{} AS c WHERE {} AND NOT EXISTS (SELECT 1 FROM {}.{} AS p WHERE {}) LIMIT 1",
                q(db),
                q(table),
                not_null.join(" AND "),
                q(&pdb),
                q(&spec.ref_table),
                eqs.join(" AND ")
            );
            let (stmt, _) = parse_table_statement(&sql)?;
            if let TableStmt::Query(query) = stmt {
                let plan = crate::query::prepare(store, None, &query, Some(db))?;
                let mut txn = store.begin(shoal_store::Isolation::ReadCommitted);
                let rows = crate::query::execute(&plan, store, &mut txn, &[], ctx)?;
                txn.rollback();
                if !rows.is_empty() {
                    let name = spec.name.clone().unwrap_or_else(|| format!("{table}_ibfk"));
                    return Err(SqlError::coded(shoal_errors::ER_NO_REFERENCED_ROW_2, format!(
                            "Cannot add or update a child row: a foreign key constraint fails (`{db}`.`{table}`, CONSTRAINT `{name}` FOREIGN KEY ({}) REFERENCES {} ({}))",
                            spec.columns.iter().map(|c| q(c)).collect::<Vec<_>>().join(", "),
                            q(&spec.ref_table),
                            spec.ref_columns.iter().map(|c| q(c)).collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            }
        }
        store.add_foreign_key(db, table, spec).map_err(store_err)?;
        Ok(())
    }
}

impl Drop for TableSession {
    fn drop(&mut self) {
        self.rollback();
        self.engine.locks.release_all(self.lock_id, &mut self.held);
    }
}

/// (database, table, name in statements): how LOCK TABLES entries and statements' table
/// references are matched. The name is the alias when one is given, else the table's name;
/// aliases compare case-sensitively, as MariaDB and MySQL compare them on Linux.
type LockName = (String, String, String);

/// Every table reference of a plan as LOCK TABLES sees it, with whether it is written:
/// aliases of the query engine's tables and of single-table SELECT / UPDATE / DELETE count,
/// every other table a statement touches goes by its name (`tables`: [`plan_tables`]).
fn plan_lock_names(
    plan: &Plan,
    tables: &[(TableKey, LockRequest)],
) -> Result<Vec<(LockName, bool)>, SqlError> {
    let mut out: Vec<(LockName, bool)> = Vec::new();
    let mut add = |d: &str, t: &str, shown: &str, write: bool| {
        if is_info_schema(d) {
            return;
        }
        let key = (d.to_string(), t.to_string(), shown.to_string());
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, w)) => *w |= write,
            None => out.push((key, write)),
        }
    };
    if let Some(q) = &plan.query {
        for (d, t, shown) in q.table_refs() {
            add(d, t, shown, false);
        }
    }
    if let Some(m) = &plan.multi {
        let targets: Vec<(&str, &str)> = m.targets().collect();
        for (d, t, shown) in m.query().table_refs() {
            add(d, t, shown, targets.contains(&(d, t)));
        }
    }
    let mut single = |t: &TableRef, write: bool| -> Result<(), SqlError> {
        let d = resolve_db(t, &plan.db)?;
        add(&d, &t.name, t.alias.as_deref().unwrap_or(&t.name), write);
        Ok(())
    };
    match plan.stmt.planned() {
        TableStmt::Update(u) => single(&u.table, true)?,
        TableStmt::Delete(dl) => single(&dl.table, true)?,
        TableStmt::Insert(i) => single(&i.table, true)?,
        _ => {}
    }
    // Whatever else the statement touches (DDL's tables, foreign-key parents) by name.
    for ((d, t), r) in tables {
        if !out.iter().any(|((od, ot, _), _)| od == d && ot == t) {
            out.push((
                (d.clone(), t.clone(), t.clone()),
                *r == LockRequest::WriteIntent,
            ));
        }
    }
    Ok(out)
}

/// The table a 1146 names (`Table 'db.t' doesn't exist` -> `t`).
fn missing_table_name(e: &SqlError) -> String {
    if let SqlError::NoSuchTable(_, t) = e {
        return t.clone();
    }
    let m = e.to_string();
    let quoted = m.split('\'').nth(1).unwrap_or_default();
    quoted.rsplit('.').next().unwrap_or_default().to_string()
}

/// 1100 `ER_TABLE_NOT_LOCKED`.
fn not_locked(t: &str) -> SqlError {
    SqlError::coded(
        shoal_errors::ER_TABLE_NOT_LOCKED,
        format!("Table '{t}' was not locked with LOCK TABLES"),
    )
}

/// 1099 `ER_TABLE_NOT_LOCKED_FOR_WRITE`.
fn read_locked(t: &str) -> SqlError {
    SqlError::coded(
        shoal_errors::ER_TABLE_NOT_LOCKED_FOR_WRITE,
        format!("Table '{t}' was locked with a READ lock and can't be updated"),
    )
}

/// 1223 `ER_CANT_UPDATE_WITH_READLOCK`.
pub fn conflicting_read_lock() -> SqlError {
    SqlError::coded(
        shoal_errors::ER_CANT_UPDATE_WITH_READLOCK,
        "Can't execute the query because you have a conflicting read lock",
    )
}

/// The stored tables a plan touches and how: a write intent where rows or the definition
/// change, a read intent elsewhere. SHOW, ANALYZE and CHECK take none (MySQL lets them look at
/// any table under LOCK TABLES); information_schema is never locked.
fn plan_tables(plan: &Plan) -> Result<Vec<(TableKey, LockRequest)>, SqlError> {
    let mut out: Vec<(TableKey, LockRequest)> = Vec::new();
    let mut add = |d: String, n: String, write: bool| {
        if is_info_schema(&d) {
            return;
        }
        let r = if write {
            LockRequest::WriteIntent
        } else {
            LockRequest::ReadIntent
        };
        match out.iter_mut().find(|((od, on), _)| *od == d && *on == n) {
            Some((_, old)) => {
                if write {
                    *old = r;
                }
            }
            None => out.push(((d, n), r)),
        }
    };
    let db = |t: &TableRef| resolve_db(t, &plan.db);
    if let Some(q) = &plan.query {
        for (d, n, _) in &q.tables {
            add(d.clone(), n.clone(), false);
        }
    }
    match plan.stmt.planned() {
        TableStmt::Multi(_) => {
            if let Some(m) = &plan.multi {
                for (d, n, w) in m.tables() {
                    add(d, n, w);
                }
            }
        }
        TableStmt::Insert(i) => add(db(&i.table)?, i.table.name.clone(), true),
        TableStmt::Update(u) => add(db(&u.table)?, u.table.name.clone(), true),
        TableStmt::Delete(dl) => add(db(&dl.table)?, dl.table.name.clone(), true),
        TableStmt::CreateTable { db: d, spec, .. } => {
            let d = d
                .clone()
                .or_else(|| plan.db.clone())
                .ok_or(SqlError::NoDatabase)?;
            add(d, spec.name.clone(), true);
        }
        TableStmt::CreateIndex { table, .. }
        | TableStmt::DropIndex { table, .. }
        | TableStmt::Truncate(table)
        | TableStmt::AlterTable { table, .. } => add(db(table)?, table.name.clone(), true),
        TableStmt::DropTable { tables, .. } => {
            for t in tables {
                add(db(t)?, t.name.clone(), true);
            }
        }
        _ => {}
    }
    Ok(out)
}

fn access_denied(db: &str) -> SqlError {
    SqlError::coded(
        shoal_errors::ER_DBACCESS_DENIED_ERROR,
        format!("Access denied for user to database '{db}'"),
    )
}

/// The current definition of the plan's table, and the access path for it (re-chosen if the
/// table changed since PREPARE).
fn current_access<'p>(
    store: &Engine,
    plan: &'p Plan,
    t: &TableRef,
    filter: Option<&Expr>,
) -> Result<(Arc<TableDef>, Cow<'p, Access>), SqlError> {
    let d = resolve_db(t, &plan.db)?;
    let def = store.table(&d, &t.name).map_err(store_err)?;
    if let Some((old, a)) = &plan.access {
        // The catalog hands out the same `Arc` until the table is altered: compare pointers
        // before the definitions.
        if Arc::ptr_eq(old, &def) || **old == *def {
            return Ok((def, Cow::Borrowed(a)));
        }
    }
    // Altered since PREPARE: the statement is bound again.
    crate::exec::check_dml_columns(plan.stmt.planned(), &def)?;
    let a = choose_access(&def, filter);
    Ok((def, Cow::Owned(a)))
}

/// `SELECT ... INTO @a, @b`: its one row's values go to the user variables (none: warning
/// 1329 and the variables keep their values; more than one: 1172), as MariaDB does.
fn select_into(
    into: &[String],
    rows: Vec<Vec<Value>>,
    ctx: &mut dyn Context,
) -> Result<ExecOutput, SqlError> {
    match rows.as_slice() {
        [] => {
            ctx.warn(
                shoal_errors::ER_SP_FETCH_NO_DATA.code,
                "No data - zero rows fetched, selected, or processed".into(),
            );
            Ok(ExecOutput::ok(0))
        }
        [row] => {
            for (name, v) in into.iter().zip(row) {
                ctx.set_user_var(name, v.clone());
            }
            Ok(ExecOutput::ok(1))
        }
        _ => Err(SqlError::coded(
            shoal_errors::ER_TOO_MANY_ROWS,
            "Result consisted of more than one row",
        )),
    }
}

fn query_is_stale(store: &Engine, qp: &QueryPlan) -> bool {
    qp.is_stale(store)
}

/// EXPLAIN UPDATE / DELETE: the rows describing how `inner` would read its rows (a
/// multi-table statement's query as EXPLAIN SELECT shows it), nothing changed.
fn explain_dml(
    store: &Engine,
    plan: &Plan,
    inner: &TableStmt,
    txn: &mut Transaction,
    params: &[Value],
    ctx: &mut dyn Context,
    mode: WriteMode,
) -> Result<ExecOutput, SqlError> {
    let out = |rows: Vec<Vec<Value>>| -> Result<ExecOutput, SqlError> {
        Ok(ExecOutput::Rows {
            columns: plan.columns.clone(),
            rows,
        })
    };
    let (table, filter) = match (inner, &plan.multi) {
        (TableStmt::Multi(m), Some(mp)) => {
            if mp.is_stale(store) {
                let fresh = crate::query::dml::prepare_multi(store, m, plan.db.as_deref())?;
                return out(crate::query::explain::rows(fresh.query(), store, ctx));
            }
            return out(crate::query::explain::rows(mp.query(), store, ctx));
        }
        (TableStmt::Update(u), _) => (&u.table, &u.filter),
        (TableStmt::Delete(d), _) => (&d.table, &d.filter),
        _ => return Err(SqlError::Unsupported("EXPLAIN of this statement".into())),
    };
    let (def, access) = current_access(store, plan, table, filter.as_ref())?;
    let mut ex = Exec {
        store,
        txn,
        ctx,
        params,
        mode,
    };
    out(ex.explain(inner, &def, &access)?)
}

/// Runs a row statement with the session's information_schema visibility, then counts
/// FOUND_ROWS() for a `SELECT SQL_CALC_FOUND_ROWS` (see `TableSession::count_found_rows`).
/// Takes the session's fields apart, so that the store stays borrowed, not cloned.
fn run_counted(
    store: &Engine,
    system: Option<&Arc<dyn crate::query::SystemTables>>,
    visibility: Option<show::Visibility>,
    mode: WriteMode,
    found_rows: &mut Option<u64>,
    (plan, txn, params, ctx): (&Plan, &mut Transaction, &[Value], &mut dyn Context),
) -> Result<ExecOutput, SqlError> {
    let result = show::with_visibility(visibility, || {
        run_dml(store, system, plan, txn, params, ctx, mode)
    });
    TableSession::count_found_rows(found_rows, result, store, system, plan, txn, params, ctx)
}

fn run_dml(
    store: &Engine,
    system: Option<&Arc<dyn crate::query::SystemTables>>,
    plan: &Plan,
    txn: &mut Transaction,
    params: &[Value],
    ctx: &mut dyn Context,
    mode: WriteMode,
) -> Result<ExecOutput, SqlError> {
    if let (TableStmt::Explain(q), Some(qp)) = (&plan.stmt, &plan.query) {
        let fresh;
        let qp = if qp.is_stale(store) {
            fresh = crate::query::prepare(store, system, q, plan.db.as_deref())?;
            &fresh
        } else {
            &**qp
        };
        return Ok(ExecOutput::Rows {
            columns: plan.columns.clone(),
            rows: crate::query::explain::rows(qp, store, ctx),
        });
    }
    if let TableStmt::ExplainDml(inner) = &plan.stmt {
        return explain_dml(store, plan, inner, txn, params, ctx, mode);
    }
    if let (TableStmt::Multi(m), Some(mp)) = (&plan.stmt, &plan.multi) {
        if mp.is_stale(store) {
            let fresh = crate::query::dml::prepare_multi(store, m, plan.db.as_deref())?;
            return crate::query::dml::execute_multi(&fresh, store, txn, params, ctx, mode);
        }
        return crate::query::dml::execute_multi(mp, store, txn, params, ctx, mode);
    }
    if let (TableStmt::Query(q), Some(qp)) = (&plan.stmt, &plan.query) {
        // Re-bound when a table it reads was altered since PREPARE.
        // Borrowed, not cloned: a plan sessions share (the session layer's shared prepared
        // statements) would have its count written from every CPU.
        let fresh;
        let (qp, columns) = if query_is_stale(store, qp) {
            fresh = crate::query::prepare(store, system, q, plan.db.as_deref())?;
            let cols: Arc<[ColumnInfo]> = fresh.columns.clone().into();
            (&fresh, cols)
        } else {
            (&**qp, plan.columns.clone())
        };
        let rows = crate::query::execute(qp, store, txn, params, ctx)?;
        if !q.into.is_empty() {
            return select_into(&q.into, rows, ctx);
        }
        let columns = if qp.param_typed && !params.is_empty() {
            crate::query::bind::typed_by_values(&columns, &rows).into()
        } else {
            columns
        };
        return Ok(ExecOutput::Rows { columns, rows });
    }
    let mut ex = Exec {
        store,
        txn,
        ctx,
        params,
        mode,
    };
    match &plan.stmt {
        TableStmt::Update(u) => {
            if is_info_schema(&resolve_db(&u.table, &plan.db)?) {
                return Err(access_denied("information_schema"));
            }
            let (def, access) = current_access(store, plan, &u.table, u.filter.as_ref())?;
            ex.update(u, &def, &access)
        }
        TableStmt::Delete(dl) => {
            if is_info_schema(&resolve_db(&dl.table, &plan.db)?) {
                return Err(access_denied("information_schema"));
            }
            let (def, access) = current_access(store, plan, &dl.table, dl.filter.as_ref())?;
            ex.delete(dl, &def, &access)
        }
        TableStmt::Insert(i) => {
            let d = resolve_db(&i.table, &plan.db)?;
            if is_info_schema(&d) {
                return Err(access_denied(&d));
            }
            let def = store.table(&d, &i.table.name).map_err(store_err)?;
            match (&i.select, &plan.query) {
                (Some(q), Some(qp)) => {
                    // INSERT ... SELECT: the query's rows are read completely first (so
                    // selecting from the target table sees none of the new rows), then
                    // inserted as if they were a VALUES list.
                    let fresh;
                    let qp = if query_is_stale(store, qp) {
                        fresh = crate::query::prepare(store, system, q, plan.db.as_deref())?;
                        &fresh
                    } else {
                        &**qp
                    };
                    let rows = crate::query::execute(qp, store, ex.txn, params, &mut *ex.ctx)?;
                    let mut with_rows = (**i).clone();
                    with_rows.select = None;
                    with_rows.rows = rows
                        .into_iter()
                        .map(|r| r.into_iter().map(|v| Some(Expr::Literal(v))).collect())
                        .collect();
                    ex.insert(&with_rows, &def, true)
                }
                _ => ex.insert(i, &def, false),
            }
        }
        _ => Err(SqlError::Unsupported("statement".into())),
    }
}

pub(crate) fn key_flags(def: &TableDef, i: usize) -> u16 {
    let mut fl = 0;
    if def.primary_key.as_ref().is_some_and(|pk| pk.contains(&i)) {
        fl |= flags::PRI_KEY;
    }
    for ix in &def.indexes {
        if ix.columns.contains(&i) {
            fl |= if ix.unique {
                flags::UNIQUE_KEY
            } else {
                flags::MULTIPLE_KEY
            };
        }
    }
    fl
}

/// Most columns a table may have (InnoDB's limit).
const MAX_COLUMNS: usize = 1017;
