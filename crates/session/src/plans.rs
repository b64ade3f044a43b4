//! Shared prepared statements: one parse, plan and set of column descriptions for every
//! session that prepares the same text in the same database.
//!
//! # Why
//!
//! A pooled OLTP application opens thousands of connections, and each prepares the same dozen
//! statements (sysbench prepares its point select on every connection). Built per session,
//! each copy is its own tree of small heap objects: its plan, its bound query, its column
//! descriptions. At 2048 connections an execution then walks a cold copy of that tree, one
//! cache miss after another; in process (`statement_bench`, one thread, no network) a point
//! select cost 2.4 µs with one session and 5.3-7.1 µs with 2048, and about 2 µs of the
//! difference went away when the sessions shared one plan (3.0-3.6 µs). The copies also cost
//! memory (every connection's copy of every statement) and time at connect (each PREPARE
//! parses and plans again).
//!
//! # How
//!
//! [`SharedPlans`] maps `(current database, sql_mode, statement text)` to a weak reference to the
//! [`StmtBody`] a session built for it: the session parser's form, the table engine's plan
//! and the protocol column descriptions. What a session keeps per statement is a small
//! [`super::session`] `Stmt`: its own reference to the text (the process list's) and a
//! strong reference to the shared body. Executions clone only the session's own references,
//! so no reference count shared between sessions (and so between CPUs) is written on the
//! statement path. The body lives while any session holds the statement; the map's entries
//! for bodies nobody holds are swept when it has doubled since the last sweep.
//!
//! What may be shared: a plan is built from the text, the current database and the catalog
//! only (`TableSession::prepare_parsed` reads nothing else of its session), so only table
//! statements are shared (those with a plan). LOCK TABLES needs no exception: a hit is checked
//! against the preparing session's locked set as a plan built there is (1100 at PREPARE for a
//! table outside it). `sql_mode` is in the key as well, although no plan depends on it today:
//! the day the parser honours `ANSI_QUOTES`, a session in that mode must not take another's
//! plan of the same text. What is checked per session at
//! every PREPARE, hit or not: the privileges (`check_plan`), `max_prepared_stmt_count`. A
//! hit whose plan a DDL made stale (`TableEngine::plan_is_current`) is built again and
//! replaces the entry; sessions that hold the old body keep it and rebind at execution, as
//! before.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use shoal_exec::Plan;
use shoal_proto::Column;
use shoal_sql::plan::Prepared;

/// What PREPARE builds for a statement, shared by every session that prepares the same text
/// in the same database (when it has a plan; see the module doc).
pub(crate) struct StmtBody {
    /// The session parser's form of the statement.
    pub prepared: Prepared,
    /// The table engine's plan, for a table statement.
    pub plan: Option<Arc<Plan>>,
    /// `plan`'s result columns in protocol form: every result set of this statement shares
    /// them (compared by pointer with the columns the executor returns).
    pub columns: Arc<[Column]>,
}

/// Fewest entries the map holds before its first sweep of bodies nobody holds.
const SWEEP_FLOOR: usize = 256;

/// The server's shared statements (see the module doc).
pub(crate) struct SharedPlans {
    inner: Mutex<Inner>,
    /// `Shoal_shared_plan_hits`: PREPAREs that took a shared body.
    hits: AtomicU64,
    /// `Shoal_shared_plan_builds`: bodies built and shared (first PREPAREs, and rebuilds of
    /// stale plans).
    builds: AtomicU64,
}

/// What a shared body is found by.
#[derive(Hash, PartialEq, Eq)]
struct Key {
    /// The preparing session's current database.
    db: Option<String>,
    /// Its `sql_mode` (see the module doc).
    sql_mode: String,
    /// The statement's text.
    sql: String,
}

impl Key {
    fn new(db: Option<&str>, sql_mode: &str, sql: &str) -> Key {
        Key {
            db: db.map(str::to_string),
            sql_mode: sql_mode.to_string(),
            sql: sql.to_string(),
        }
    }
}

struct Inner {
    /// The body each key was built into, while some session holds it.
    map: HashMap<Key, Weak<StmtBody>>,
    /// The map's size at which the next insert sweeps it.
    sweep_at: usize,
}

impl SharedPlans {
    pub(crate) fn new() -> Self {
        SharedPlans {
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                sweep_at: SWEEP_FLOOR,
            }),
            hits: AtomicU64::new(0),
            builds: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The shared body for `sql` prepared in `db` under `sql_mode`, if a session holds one
    /// and `current` accepts it (its plan still matches the catalog).
    pub(crate) fn get(
        &self,
        db: Option<&str>,
        sql_mode: &str,
        sql: &str,
        current: impl FnOnce(&StmtBody) -> bool,
    ) -> Option<Arc<StmtBody>> {
        let body = self
            .lock()
            .map
            .get(&Key::new(db, sql_mode, sql))
            .and_then(Weak::upgrade)?;
        if !current(&body) {
            return None;
        }
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(body)
    }

    /// Shares `body`, built for `sql` in `db` under `sql_mode` (replacing a stale or dropped
    /// entry).
    pub(crate) fn insert(&self, db: Option<&str>, sql_mode: &str, sql: &str, body: &Arc<StmtBody>) {
        self.builds.fetch_add(1, Ordering::Relaxed);
        let mut inner = self.lock();
        inner
            .map
            .insert(Key::new(db, sql_mode, sql), Arc::downgrade(body));
        if inner.map.len() >= inner.sweep_at {
            inner.map.retain(|_, w| w.strong_count() > 0);
            inner.sweep_at = (inner.map.len() * 2).max(SWEEP_FLOOR);
        }
    }

    /// Status rows: `Shoal_shared_plans` (bodies a PREPARE can take: held by some session and
    /// not replaced by a rebuild), hits and builds.
    pub(crate) fn status(&self, rows: &mut Vec<(String, String)>) {
        let live = self
            .lock()
            .map
            .values()
            .filter(|w| w.strong_count() > 0)
            .count();
        rows.push(("Shoal_shared_plans".into(), live.to_string()));
        rows.push((
            "Shoal_shared_plan_hits".into(),
            self.hits.load(Ordering::Relaxed).to_string(),
        ));
        rows.push((
            "Shoal_shared_plan_builds".into(),
            self.builds.load(Ordering::Relaxed).to_string(),
        ));
    }
}
