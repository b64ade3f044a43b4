//! Server-side observation: SHOW GLOBAL STATUS / VARIABLES snapshots and the thread-pool
//! tables of information_schema (MariaDB's `THREAD_POOL_GROUPS`, `_QUEUES`, `_STATS`, `_WAITS`,
//! which shoal also provides), taken over a separate admin connection so they never queue
//! behind the load's own connections longer than necessary.

use crate::client::{query_rows, ConnOpts};
use crate::result::ServerSnapshot;
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use std::collections::BTreeMap;

pub const THREAD_POOL_TABLES: [&str; 4] = [
    "THREAD_POOL_GROUPS",
    "THREAD_POOL_QUEUES",
    "THREAD_POOL_STATS",
    "THREAD_POOL_WAITS",
];

/// An admin connection (no default schema, so it works before `prepare` creates one).
pub async fn admin_conn(c: &ConnOpts) -> Result<Conn, mysql_async::Error> {
    Conn::new(c.to_opts(false)).await
}

async fn name_value(
    conn: &mut Conn,
    sql: &str,
) -> Result<BTreeMap<String, String>, mysql_async::Error> {
    let (_, rows) = query_rows(conn, sql).await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            let mut it = r.into_iter();
            let k = it.next()??;
            let v = it.next().flatten().unwrap_or_default();
            Some((k, v))
        })
        .collect())
}

pub async fn global_status(
    conn: &mut Conn,
) -> Result<BTreeMap<String, String>, mysql_async::Error> {
    name_value(conn, "SHOW GLOBAL STATUS").await
}

pub async fn global_variables(
    conn: &mut Conn,
) -> Result<BTreeMap<String, String>, mysql_async::Error> {
    name_value(conn, "SHOW GLOBAL VARIABLES").await
}

/// Status plus whichever thread-pool tables exist.
///
/// The thread-pool queries are SELECTs that count in `Com_select`; so that a run's before/after
/// deltas contain only the load, a "before" snapshot (`status_last`) reads the tables first and
/// the status last, an "after" snapshot the status first.
pub async fn snapshot(
    conn: &mut Conn,
    status_last: bool,
) -> Result<ServerSnapshot, mysql_async::Error> {
    let mut status = if status_last {
        BTreeMap::new()
    } else {
        global_status(conn).await?
    };
    let mut thread_pool = BTreeMap::new();
    for t in THREAD_POOL_TABLES {
        if let Ok((cols, rows)) =
            query_rows(conn, &format!("SELECT * FROM information_schema.{t}")).await
        {
            let rows = rows
                .into_iter()
                .map(|r| cols.iter().cloned().zip(r).collect::<BTreeMap<_, _>>())
                .collect();
            thread_pool.insert(t.to_string(), rows);
        }
    }
    if status_last {
        status = global_status(conn).await?;
    }
    Ok(ServerSnapshot {
        status,
        thread_pool,
    })
}

/// Numeric, non-zero, finite differences after - before. (Rust parses "nan" and "inf" as
/// numbers; JSON has no such values, so one would be written as null and the result file
/// would not read back.)
pub fn status_delta(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> BTreeMap<String, f64> {
    after
        .iter()
        .filter_map(|(k, v)| {
            let a: f64 = v.parse().ok()?;
            let b: f64 = before.get(k)?.parse().ok()?;
            let d = a - b;
            (d != 0.0 && d.is_finite()).then(|| (k.clone(), d))
        })
        .collect()
}

/// Runs `SET GLOBAL name=value` for each assignment.
pub async fn set_globals(
    conn: &mut Conn,
    assignments: &[(String, String)],
) -> Result<(), mysql_async::Error> {
    for (k, v) in assignments {
        conn.query_drop(format!("SET GLOBAL {k}={v}")).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_delta_keeps_finite_numeric_changes() {
        let m = |v: &[(&str, &str)]| -> BTreeMap<String, String> {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let before = m(&[
            ("Com_select", "100"),
            ("Uptime", "5"),
            ("Ssl_version", ""),
            ("Odd", "nan"),
            ("Huge", "1"),
        ]);
        let after = m(&[
            ("Com_select", "1900"),
            ("Uptime", "5"),
            ("Ssl_version", "TLSv1.3"),
            ("Odd", "nan"),
            ("Huge", "inf"),
            ("New", "7"),
        ]);
        let d = status_delta(&before, &after);
        assert_eq!(
            d,
            [("Com_select".to_string(), 1800.0)].into_iter().collect()
        );
        // Why: a NaN is written as null, and then the whole file does not read back.
        let mut r = crate::result::fixtures::run("x", 1, 1.0);
        r.status_delta.insert("Odd".into(), f64::NAN);
        let f = crate::result::ResultFile::Run(Box::new(r));
        let text = serde_json::to_string(&f).unwrap();
        assert!(text.contains("\"Odd\":null"), "{text}");
        assert!(crate::result::ResultFile::parse(&text).is_err());
    }
}
