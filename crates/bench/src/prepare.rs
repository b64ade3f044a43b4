//! `prepare` and `cleanup`: create and fill (or drop) the `sbtestN` tables exactly as sysbench's
//! `oltp_common.lua` does (same DDL, same multi-row INSERTs of at most 512 KiB, `k` values from
//! the configured distribution, secondary index `k_N` created after the load), in parallel:
//! table i is handled by worker `(i - 1) % threads`, like sysbench's parallel prepare.
//! `tpcc` has its own schema and loader ([`crate::tpcc::load`]).

use crate::client::ConnOpts;
use crate::rand::{Rng, C_TEMPLATE, PAD_TEMPLATE};
use crate::tpcc;
use crate::workload::{Workload, WorkloadDef};
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use std::fmt::Write as _;

/// sysbench's bulk insert buffer (`BULK_PACKET_SIZE`).
const BULK_BYTES: usize = 512 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("connect to {target}: {source}")]
    Connect {
        target: String,
        source: mysql_async::Error,
    },
    #[error("table sbtest{table}: {source}")]
    Sql {
        table: u32,
        source: mysql_async::Error,
    },
    #[error("tpcc: {0}")]
    Tpcc(String),
}

async fn connect(c: &ConnOpts) -> Result<Conn, PrepareError> {
    match Conn::new(c.to_opts(true)).await {
        Ok(conn) => Ok(conn),
        Err(mysql_async::Error::Server(e)) if e.code == 1049 => {
            // Unknown database: create it (sysbench requires it to exist; we are kinder).
            let mut admin =
                Conn::new(c.to_opts(false))
                    .await
                    .map_err(|e| PrepareError::Connect {
                        target: c.describe(),
                        source: e,
                    })?;
            admin
                .query_drop(format!("CREATE DATABASE IF NOT EXISTS `{}`", c.db))
                .await
                .map_err(|e| PrepareError::Connect {
                    target: c.describe(),
                    source: e,
                })?;
            let _ = admin.disconnect().await;
            Conn::new(c.to_opts(true))
                .await
                .map_err(|e| PrepareError::Connect {
                    target: c.describe(),
                    source: e,
                })
        }
        Err(e) => Err(PrepareError::Connect {
            target: c.describe(),
            source: e,
        }),
    }
}

/// The CREATE TABLE statement of table `n`.
pub fn create_table_sql(def: &WorkloadDef, n: u32) -> String {
    let o = &def.opts;
    let id_def = if o.auto_inc {
        "INTEGER NOT NULL AUTO_INCREMENT"
    } else {
        "INTEGER NOT NULL"
    };
    let idx = if o.secondary {
        "KEY xid"
    } else {
        "PRIMARY KEY"
    };
    format!(
        "CREATE TABLE sbtest{n}(\n  id {id_def},\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  {idx} (id)\n) /*! ENGINE = {} */ ",
        o.mysql_storage_engine
    )
}

async fn create_table(
    conn: &mut Conn,
    def: &WorkloadDef,
    n: u32,
    seed: u64,
    quiet: bool,
) -> Result<(), PrepareError> {
    let o = &def.opts;
    let sql_err = |e| PrepareError::Sql {
        table: n,
        source: e,
    };
    if !quiet {
        println!("Creating table 'sbtest{n}'...");
    }
    conn.query_drop(create_table_sql(def, n))
        .await
        .map_err(sql_err)?;
    // oltp_insert with client ids starts empty, like sysbench.
    let rows = if def.workload == Workload::OltpInsert && !o.auto_inc {
        0
    } else {
        o.table_size
    };
    if rows > 0 && !quiet {
        println!("Inserting {rows} records into 'sbtest{n}'");
    }
    let head = if o.auto_inc {
        format!("INSERT INTO sbtest{n}(k, c, pad) VALUES")
    } else {
        format!("INSERT INTO sbtest{n}(id, k, c, pad) VALUES")
    };
    let mut rng = Rng::new(seed, 1_000_000 + u64::from(n));
    let mut q = String::with_capacity(BULK_BYTES + 1024);
    let mut c = String::new();
    let mut pad = String::new();
    for i in 1..=rows {
        if q.is_empty() {
            q.push_str(&head);
        } else {
            q.push(',');
        }
        rng.rand_string_into(C_TEMPLATE, &mut c);
        rng.rand_string_into(PAD_TEMPLATE, &mut pad);
        let k = rng.default_dist(1, o.table_size, &o.rand);
        if o.auto_inc {
            let _ = write!(q, "({k}, '{c}', '{pad}')");
        } else {
            let _ = write!(q, "({i}, {k}, '{c}', '{pad}')");
        }
        if q.len() >= BULK_BYTES {
            conn.query_drop(q.as_str()).await.map_err(sql_err)?;
            q.clear();
        }
    }
    if !q.is_empty() {
        conn.query_drop(q.as_str()).await.map_err(sql_err)?;
    }
    if o.create_secondary {
        if !quiet {
            println!("Creating a secondary index on 'sbtest{n}'...");
        }
        conn.query_drop(format!("CREATE INDEX k_{n} ON sbtest{n}(k)"))
            .await
            .map_err(sql_err)?;
    }
    Ok(())
}

/// Creates and fills all tables with `threads` parallel connections.
pub async fn prepare(
    c: &ConnOpts,
    def: &WorkloadDef,
    threads: usize,
    seed: u64,
    quiet: bool,
) -> Result<(), PrepareError> {
    if def.workload == Workload::Tpcc {
        return prepare_tpcc(c, def, threads, seed, quiet).await;
    }
    let threads = threads.max(1).min(def.opts.tables as usize);
    // Make sure the schema exists before the workers connect.
    let first = connect(c).await?;
    let _ = first.disconnect().await;
    let mut hs = Vec::new();
    for w in 0..threads {
        let c = c.clone();
        let def = def.clone();
        hs.push(tokio::spawn(async move {
            let mut conn = connect(&c).await?;
            let mut n = w as u32 + 1;
            while n <= def.opts.tables {
                create_table(&mut conn, &def, n, seed, quiet).await?;
                n += threads as u32;
            }
            let _ = conn.disconnect().await;
            Ok::<(), PrepareError>(())
        }));
    }
    let mut res = Ok(());
    for h in hs {
        let r = h.await.expect("prepare task");
        if res.is_ok() {
            res = r;
        }
    }
    res
}

/// `prepare tpcc`: the nine tables, loaded by `threads` connections.
async fn prepare_tpcc(
    c: &ConnOpts,
    def: &WorkloadDef,
    threads: usize,
    seed: u64,
    quiet: bool,
) -> Result<(), PrepareError> {
    let scale = tpcc::Scale::from_opts(&def.opts);
    scale.validate().map_err(PrepareError::Tpcc)?;
    let mut first = connect(c).await?;
    let mut conns = Vec::new();
    for _ in 0..threads.max(1) {
        conns.push(connect(c).await?);
    }
    let r = tpcc::load::load(
        conns,
        &mut first,
        &def.opts.mysql_storage_engine,
        &scale,
        seed,
        quiet,
    )
    .await
    .map_err(|e| PrepareError::Tpcc(e.to_string()));
    let _ = first.disconnect().await;
    r
}

/// `cleanup tpcc`: drops the nine tables.
pub async fn cleanup_tpcc(c: &ConnOpts, quiet: bool) -> Result<(), PrepareError> {
    let mut conn = connect(c).await?;
    let r = tpcc::cleanup(&mut conn, quiet)
        .await
        .map_err(|e| PrepareError::Tpcc(e.to_string()));
    let _ = conn.disconnect().await;
    r
}

/// Drops all tables (`DROP TABLE IF EXISTS sbtestN`), in parallel.
pub async fn cleanup(
    c: &ConnOpts,
    tables: u32,
    threads: usize,
    quiet: bool,
) -> Result<(), PrepareError> {
    let threads = threads.max(1).min(tables.max(1) as usize);
    let mut hs = Vec::new();
    for w in 0..threads {
        let c = c.clone();
        hs.push(tokio::spawn(async move {
            let mut conn = Conn::new(c.to_opts(true))
                .await
                .map_err(|e| PrepareError::Connect {
                    target: c.describe(),
                    source: e,
                })?;
            let mut n = w as u32 + 1;
            while n <= tables {
                if !quiet {
                    println!("Dropping table 'sbtest{n}'...");
                }
                conn.query_drop(format!("DROP TABLE IF EXISTS sbtest{n}"))
                    .await
                    .map_err(|e| PrepareError::Sql {
                        table: n,
                        source: e,
                    })?;
                n += threads as u32;
            }
            let _ = conn.disconnect().await;
            Ok::<(), PrepareError>(())
        }));
    }
    let mut res = Ok(());
    for h in hs {
        let r = h.await.expect("cleanup task");
        if res.is_ok() {
            res = r;
        }
    }
    res
}
