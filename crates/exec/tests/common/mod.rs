//! Shared test helpers: a temp-dir engine, a minimal evaluation context and a fixture runner.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::path::PathBuf;
use std::sync::Arc;

use shoal_exec::{ExecOutput, TableEngine, TableSession};
use shoal_sql::ast::VarScope;
use shoal_sql::eval::Context;
use shoal_sql::value::{DateTime, Value};
use shoal_sql::SqlError;

/// A data directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "shoal-exec-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn engine(tag: &str) -> (TempDir, Arc<TableEngine>) {
    let dir = TempDir::new(tag);
    let mut cfg = shoal_exec::EngineConfig::new(dir.0.join("data"));
    cfg.block_cache_bytes = 8 << 20;
    cfg.direct_reads = false;
    cfg.flush_log_at_trx_commit = 2;
    let e = TableEngine::open(cfg).expect("open engine");
    e.store().create_database("test").expect("create db");
    (dir, e)
}

/// The session-side context a real server supplies; here just enough for tests.
#[derive(Default)]
pub struct Ctx {
    pub last_id: u64,
    pub vars: std::collections::HashMap<String, Value>,
    /// Warnings the evaluator pushed.
    pub warnings: Vec<(u16, String)>,
}

impl Context for Ctx {
    fn system_var(&mut self, _s: VarScope, name: &str) -> Result<Value, SqlError> {
        Err(SqlError::other(
            1193,
            "HY000",
            format!("Unknown system variable '{name}'"),
        ))
    }
    fn user_var(&self, name: &str) -> Value {
        self.vars.get(name).cloned().unwrap_or(Value::Null)
    }
    fn set_user_var(&mut self, name: &str, v: Value) {
        self.vars.insert(name.to_string(), v);
    }
    fn database(&self) -> Option<String> {
        Some("test".into())
    }
    fn user(&self) -> String {
        "root@localhost".into()
    }
    fn current_user(&self) -> String {
        "root@localhost".into()
    }
    fn connection_id(&self) -> u64 {
        1
    }
    fn last_insert_id(&self) -> u64 {
        self.last_id
    }
    fn found_rows(&self) -> u64 {
        0
    }
    fn set_last_insert_id(&mut self, v: u64) {
        self.last_id = v;
    }
    fn now(&self) -> DateTime {
        DateTime::from_unix(1_700_000_000, 0)
    }
    fn version(&self) -> String {
        "8.0.36-shoal".into()
    }
    fn killed(&self) -> bool {
        false
    }
    fn warn(&mut self, code: u16, message: String) {
        self.warnings.push((code, message));
    }
}

/// Runs one statement, handling transaction control like the session layer will.
pub fn run(ts: &mut TableSession, ctx: &mut Ctx, sql: &str) -> Result<ExecOutput, SqlError> {
    match sql.trim().to_ascii_uppercase().as_str() {
        "BEGIN" | "START TRANSACTION" => ts.begin().map(|_| ok0()),
        "COMMIT" => ts.commit().map(|_| ok0()),
        "ROLLBACK" => {
            ts.rollback();
            Ok(ok0())
        }
        "SET AUTOCOMMIT=0" => ts.set_autocommit(false).map(|_| ok0()),
        "SET AUTOCOMMIT=1" => ts.set_autocommit(true).map(|_| ok0()),
        _ => ts.query(sql, Some("test"), ctx),
    }
}

fn ok0() -> ExecOutput {
    ExecOutput::Ok {
        affected_rows: 0,
        last_insert_id: 0,
        info: String::new(),
        warnings: 0,
    }
}

pub fn text(v: &Value) -> String {
    v.to_text().unwrap_or_else(|| "NULL".into())
}

pub fn rows(out: &ExecOutput) -> Vec<String> {
    match out {
        ExecOutput::Rows { rows, .. } => rows
            .iter()
            .map(|r| {
                let joined = r.iter().map(text).collect::<Vec<_>>().join("|");
                joined.split_whitespace().collect::<Vec<_>>().join(" ")
            })
            .collect(),
        other => panic!("expected rows, got {other:?}"),
    }
}
