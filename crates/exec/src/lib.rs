//! shoal's table statements: parse, plan and execute SQL on tables stored in `shoal-store`.
//!
//! # How it fits
//!
//! The session layer (`shoal-session`) handles its own statements (SET, SHOW VARIABLES,
//! transaction control, accounts, ...). Every query and every statement on tables comes here,
//! routed by its kind: as the tree the session's parse made (`shoal_sql::Tree`, translated
//! without parsing again: [`TableSession::prepare_tree`]) or, for the forms the hand-written
//! front reads, as text:
//!
//! ```text
//! let engine = TableEngine::open(EngineConfig::new(datadir))?;    // once per server
//! let catalog = engine.catalog();          // Arc<dyn shoal_sql::catalog::Catalog> for the session
//! let mut ts = engine.session();           // once per connection
//! // COM_QUERY:
//! let out = ts.query("SELECT c FROM sbtest1 WHERE id = 5", Some("sbtest"), &mut ctx)?;
//! // COM_STMT_PREPARE / EXECUTE:
//! let plan = ts.prepare("SELECT c FROM sbtest1 WHERE id = ?", Some("sbtest"))?;   // Arc<Plan>
//! plan.param_count; plan.columns;          // for the PREPARE response
//! let out = ts.execute(&plan, &[Value::Int(5)], &mut ctx)?;
//! // BEGIN / COMMIT / ROLLBACK / SET autocommit / isolation / lock wait timeout:
//! ts.begin()?; ts.commit()?; ts.rollback(); ts.set_autocommit(false)?;
//! ts.set_isolation(Isolation::ReadCommitted); ts.set_lock_wait_timeout(Duration::from_secs(5));
//! // KILL from another connection:
//! let k = ts.kill_handle();  /* elsewhere: */ k.kill();
//! ```
//!
//! `ctx` is the session's `shoal_sql::eval::Context` (variables, NOW(), LAST_INSERT_ID,
//! connection id): expressions are evaluated with the SQL crate's evaluator, so table queries
//! and table-less queries agree on every operator and function. An INSERT that generates an
//! AUTO_INCREMENT value calls `ctx.set_last_insert_id` and reports the value in its
//! [`ExecOutput::Ok`]. Errors are `shoal_sql::SqlError` with MySQL codes and SQLSTATEs
//! (storage errors keep their codes: 1062, 1205, 1213, 1146, ...).
//!
//! # Pipeline
//!
//! 1. [`translate`]: sqlparser (`MySqlDialect`) -> [`ast::TableStmt`], expressions into
//!    `shoal_sql::ast::Expr` through the SQL crate's one expression translator; a small
//!    hand-written front for SHOW/DESCRIBE/ANALYZE/CHECK. Every query (any FROM clause or none,
//!    UNION, subqueries) becomes [`ast::TableStmt::Query`] for the [`query`] engine, INSERT ...
//!    SELECT and multi-table UPDATE/DELETE run their query there too.
//! 2. [`plan`]: access path per statement (primary-key point/IN/range, secondary-index
//!    prefix/IN/range, full scan), chosen once at PREPARE; values bound at EXECUTE.
//! 3. [`query`]: every query — binds names to slots of one row frame, plans nested-loop joins
//!    with per-table access paths, streams a lone table's rows (LIMIT stops the read), runs
//!    subqueries (cached when uncorrelated), aggregates, sorts. [`exec`]: the single-table
//!    writes (INSERT/UPDATE/DELETE/REPLACE), scanning through the store transaction and
//!    re-applying the full WHERE.
//! 4. [`session`]: transactions per session (autocommit, statement savepoints, deadlock ends
//!    the transaction, KILL), DDL with implicit commit, SHOW statements ([`show`]) and
//!    `information_schema.SCHEMATA/TABLES/COLUMNS`.
//!
//! # Isolation levels
//!
//! REPEATABLE READ (default): plain SELECTs read one snapshot taken at the transaction's first
//! read; READ COMMITTED / READ UNCOMMITTED: a new snapshot per statement; SERIALIZABLE: plain
//! SELECTs take shared locks. Locking reads (FOR UPDATE, LOCK IN SHARE MODE, UPDATE, DELETE)
//! always read the latest committed row under its lock. There are no gap locks.

pub mod ast;
pub mod budget;
pub mod convert;
pub mod exec;
pub(crate) mod fk;
pub mod infoschema;
pub mod mysql_schema;
pub mod needs;
pub mod plan;
pub mod query;
pub mod session;
pub mod show;
pub mod table_lock;
pub mod translate;

pub use convert::{ColumnInfo, WriteMode};
pub use exec::ExecOutput;
pub use needs::{TableAccess, TableNeed};
pub use session::{
    read_only_error, read_only_transaction_error, BackupReport, KillHandle, Plan, Restrictions,
    StoreCatalog, TableEngine, TableSession, BACKUP_INFO,
};
pub use shoal_store::engine::MAX_OPEN_FILES;
pub use shoal_store::{EngineConfig, Isolation};
