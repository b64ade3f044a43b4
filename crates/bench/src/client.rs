//! One benchmark client: a MySQL connection with the workload's statements prepared.
//!
//! Built on `mysql_async` (tokio): thousands of clients are tasks on a one- or two-thread
//! runtime instead of thousands of OS threads, which is what keeps the load generator light at
//! 4096 connections on a 2-core machine. Connection options are set so that connecting sends
//! nothing but the handshake (no `SELECT @@max_allowed_packet`/`@@socket` round trips), so
//! server-side `Com_*` counters see exactly the workload's statements.
//!
//! [`Client::exec_op`] runs one [`Op`] in the configured mode: a server-side prepared
//! statement (prepared once per table at connect time, like sysbench's `thread_init`) or a text
//! query with literal values. Errors are classified the way sysbench does: 1213 (deadlock),
//! 1205 (lock wait timeout) and 1020 (record changed) are "ignored" (the event is restarted),
//! lost connections are reconnected, everything else is an error of the event.

use crate::tpcc::txn::Stmt;
use crate::workload::{Op, Param, StmtKind, Workload, WorkloadDef, N_KINDS};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Params, Statement, Value};
use std::time::Duration;

/// How to reach the server (sysbench's `--mysql-*` options).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConnOpts {
    pub host: String,
    pub port: u16,
    /// Unix socket path; when set it is used instead of TCP.
    pub socket: Option<String>,
    pub user: String,
    #[serde(skip)]
    pub password: String,
    pub db: String,
    /// `--mysql-ssl=on`: connect over TLS (rustls). Verified against `ssl_ca` when given,
    /// else encrypted without verifying the server (sysbench's `--mysql-ssl=on`).
    #[serde(default)]
    pub ssl: bool,
    /// `--mysql-ssl-ca`: PEM CA file to verify the server with.
    #[serde(default)]
    pub ssl_ca: Option<String>,
}

impl ConnOpts {
    /// mysql_async options; `with_db` false connects without a default schema.
    pub fn to_opts(&self, with_db: bool) -> Opts {
        let mut b = OptsBuilder::default()
            .ip_or_hostname(self.host.clone())
            .tcp_port(self.port)
            .user(Some(self.user.clone()))
            .pass(if self.password.is_empty() {
                None
            } else {
                Some(self.password.clone())
            })
            .stmt_cache_size(0)
            .prefer_socket(false)
            .tcp_nodelay(true)
            .max_allowed_packet(Some(16 * 1024 * 1024))
            .wait_timeout(Some(28_800));
        if with_db {
            b = b.db_name(Some(self.db.clone()));
        }
        if let Some(s) = &self.socket {
            b = b.socket(Some(s.clone())).prefer_socket(true);
        }
        if self.ssl {
            let mut ssl = mysql_async::SslOpts::default();
            match &self.ssl_ca {
                Some(ca) => {
                    ssl = ssl.with_root_certs(vec![std::path::PathBuf::from(ca).into()]);
                }
                None => {
                    ssl = ssl
                        .with_danger_accept_invalid_certs(true)
                        .with_danger_skip_domain_validation(true);
                }
            }
            b = b.ssl_opts(Some(ssl));
        }
        b.into()
    }

    pub fn describe(&self) -> String {
        match &self.socket {
            Some(s) => format!("{}@unix:{s}/{}", self.user, self.db),
            None => format!("{}@{}:{}/{}", self.user, self.host, self.port, self.db),
        }
    }
}

/// Prepared-statement mode (`--db-ps-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PsMode {
    Auto,
    Disable,
}

impl std::str::FromStr for PsMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "disable" => Ok(Self::Disable),
            o => Err(format!("unknown --db-ps-mode '{o}' (auto, disable)")),
        }
    }
}

/// The outcome class of a failed statement.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// Errors sysbench ignores and retries the event for (`--mysql-ignore-errors`).
    #[error("ignored server error {code}: {msg}")]
    Ignored { code: u16, msg: String },
    /// The connection broke (CR_SERVER_LOST and friends): reconnect and restart the event.
    #[error("connection lost: {0}")]
    Lost(String),
    /// Any other server error: counted, the event fails.
    #[error("server error {code} ({state}): {msg}")]
    Server {
        code: u16,
        state: String,
        msg: String,
    },
    /// Client-side errors (driver, protocol).
    #[error("client error: {0}")]
    Client(String),
}

impl ExecError {
    /// Error code for "errors by code" (2013 for lost connections, 2000 for client errors).
    pub fn code(&self) -> u16 {
        match self {
            Self::Ignored { code, .. } | Self::Server { code, .. } => *code,
            Self::Lost(_) => 2013,
            Self::Client(_) => 2000,
        }
    }
}

/// Classifies a mysql_async error; `ignore` is the list of ignored server codes.
pub fn classify(e: mysql_async::Error, ignore: &[u16]) -> ExecError {
    match e {
        mysql_async::Error::Server(se) => {
            if ignore.contains(&se.code) {
                ExecError::Ignored {
                    code: se.code,
                    msg: se.message,
                }
            } else if matches!(se.code, 1927 | 1053 | 2006 | 2013) {
                // 1927 ER_CONNECTION_KILLED, 1053 ER_SERVER_SHUTDOWN
                ExecError::Lost(se.message)
            } else {
                ExecError::Server {
                    code: se.code,
                    state: se.state,
                    msg: se.message,
                }
            }
        }
        mysql_async::Error::Io(io) => ExecError::Lost(io.to_string()),
        mysql_async::Error::Driver(d) => {
            let s = d.to_string();
            if matches!(d, mysql_async::DriverError::ConnectionClosed) {
                ExecError::Lost(s)
            } else {
                ExecError::Client(s)
            }
        }
        other => ExecError::Client(other.to_string()),
    }
}

/// A connected client with its prepared statements.
pub struct Client {
    pub conn: Conn,
    /// `stmts[kind][table-1]` (tables only for per-table kinds; BEGIN/COMMIT at index 0).
    stmts: Vec<Vec<Statement>>,
    /// tpcc: its own statements, indexed like [`crate::tpcc::txn::Stmt::ALL`].
    own: Vec<Statement>,
    mode: PsMode,
    /// Scratch buffer for text queries.
    sql: String,
    /// Scratch parameter vector.
    params: Vec<Value>,
}

impl Client {
    /// Connects and prepares the workload's statements (sysbench `thread_init`).
    pub async fn connect(
        opts: &Opts,
        def: &WorkloadDef,
        mode: PsMode,
        ignore: &[u16],
    ) -> Result<Self, ExecError> {
        let conn = Conn::new(opts.clone())
            .await
            .map_err(|e| classify(e, ignore))?;
        let mut c = Self {
            conn,
            stmts: (0..N_KINDS).map(|_| Vec::new()).collect(),
            own: Vec::new(),
            mode,
            sql: String::with_capacity(512),
            params: Vec::with_capacity(4),
        };
        if mode == PsMode::Auto {
            for kind in def.prepared_kinds() {
                let tables = if kind.per_table() { def.opts.tables } else { 1 };
                for t in 1..=tables {
                    let st = c
                        .conn
                        .prep(kind.ps_sql(t))
                        .await
                        .map_err(|e| classify(e, ignore))?;
                    c.stmts[kind as usize].push(st);
                }
            }
            if def.workload == Workload::Tpcc {
                for s in Stmt::ALL {
                    let st = c
                        .conn
                        .prep(s.sql())
                        .await
                        .map_err(|e| classify(e, ignore))?;
                    c.own.push(st);
                }
            }
        }
        Ok(c)
    }

    /// Runs one of the workload's own statements ([`Stmt`]) with `params` and returns its
    /// rows: as the prepared statement (`--db-ps-mode=auto`), or as a text query with the
    /// values written as literals. `self.conn.affected_rows()` tells what it changed.
    pub async fn exec_own(
        &mut self,
        s: Stmt,
        params: Vec<Value>,
        ignore: &[u16],
    ) -> Result<Vec<Vec<Value>>, ExecError> {
        let rows: Vec<mysql_async::Row> = match self.own.get(s as usize) {
            Some(st) if self.mode == PsMode::Auto => {
                let st = st.clone();
                let params = if params.is_empty() {
                    Params::Empty
                } else {
                    Params::Positional(params)
                };
                self.conn.exec(&st, params).await
            }
            _ => {
                self.sql.clear();
                let mut vals = params.iter();
                for ch in s.sql().chars() {
                    match ch {
                        '?' => match vals.next() {
                            Some(v) => self.sql.push_str(&v.as_sql(false)),
                            None => self.sql.push_str("NULL"),
                        },
                        c => self.sql.push(c),
                    }
                }
                let sql = std::mem::take(&mut self.sql);
                let r = self.conn.query(sql.as_str()).await;
                self.sql = sql;
                r
            }
        }
        .map_err(|e| classify(e, ignore))?;
        Ok(rows.into_iter().map(|r| r.unwrap()).collect())
    }

    /// Executes one operation, reading (and discarding) its result set.
    pub async fn exec_op(&mut self, op: &Op, ignore: &[u16]) -> Result<(), ExecError> {
        let prepared = match (self.mode, op.kind) {
            (PsMode::Disable, _) | (_, StmtKind::InsertText) => None,
            (PsMode::Auto, k) => {
                let idx = if k.per_table() {
                    op.table as usize - 1
                } else {
                    0
                };
                self.stmts[k as usize].get(idx).cloned()
            }
        };
        let r = match prepared {
            Some(st) => {
                self.params.clear();
                for p in &op.params {
                    self.params.push(match p {
                        Param::Int(v) => Value::Int(*v),
                        Param::Str(s) => Value::Bytes(s.as_bytes().to_vec()),
                    });
                }
                let params = if self.params.is_empty() {
                    Params::Empty
                } else {
                    Params::Positional(std::mem::take(&mut self.params))
                };
                self.conn.exec_drop(&st, params).await
            }
            None => {
                op.text_sql(&mut self.sql);
                let sql = std::mem::take(&mut self.sql);
                let r = self.conn.query_drop(sql.as_str()).await;
                self.sql = sql;
                r
            }
        };
        r.map_err(|e| classify(e, ignore))
    }

    /// Rolls back an open transaction after a failed statement.
    pub async fn rollback(&mut self) -> Result<(), mysql_async::Error> {
        self.conn.query_drop("ROLLBACK").await
    }

    /// Closes the prepared statements and the connection (sysbench `thread_done`).
    pub async fn close(mut self) {
        let own = std::mem::take(&mut self.own);
        for list in std::mem::take(&mut self.stmts).into_iter().chain([own]) {
            for st in list {
                if self.conn.close(st).await.is_err() {
                    return;
                }
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), self.conn.disconnect()).await;
    }
}

/// Runs a query and returns all rows as strings (NULL as None).
pub async fn query_rows(
    conn: &mut Conn,
    sql: &str,
) -> Result<(Vec<String>, Vec<Vec<Option<String>>>), mysql_async::Error> {
    let mut res = conn.query_iter(sql).await?;
    let cols: Vec<String> = res
        .columns()
        .map(|c| c.iter().map(|c| c.name_str().into_owned()).collect())
        .unwrap_or_default();
    let rows: Vec<mysql_async::Row> = res.collect().await?;
    let rows = rows
        .into_iter()
        .map(|r| {
            r.unwrap()
                .into_iter()
                .map(|v| match v {
                    Value::NULL => None,
                    Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                    other => Some(other.as_sql(true).trim_matches('\'').to_string()),
                })
                .collect()
        })
        .collect();
    Ok((cols, rows))
}
