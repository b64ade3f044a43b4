//! The SQL behaviour suite over the wire: every fixture of `tests/sql/*.test` (format and checker:
//! `tests/sql/fixture.rs`, documented in tests/sql/README.md) through the `mysql` crate, one fresh
//! connection per file, plain SELECTs re-run through the binary protocol.
//!
//! - `sql_suite`: the real `shoal` binary (free port, temp datadir and socket) once per thread
//!   handling in `SHOAL_SUITE_THREAD_HANDLING` (comma-separated; default both).
//! - `sql_suite_against_mariadb`: the same fixtures against a private MariaDB, the oracle: every
//!   block's main expectation must be MariaDB's answer (`shoal:` overrides are ignored there,
//!   `# shoal-only` blocks skipped). Skips, saying so, where MariaDB is not installed.

mod support;

#[path = "../../../tests/sql/fixture.rs"]
mod fixture;

use std::path::{Path, PathBuf};
use std::time::Duration;

use fixture::{Outcome, Side, Target};
use mysql::prelude::Queryable;
use mysql::{Conn, Value};
use support::Shoal;

fn fixture_dir() -> PathBuf {
    // The package directory as cargo gives it when it runs the test (a binary built in another
    // checkout of the tree keeps that checkout's path in env!), else as it was built.
    Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../../tests/sql")
}

/// A connection with generous timeouts (a fixture may run slow statements).
fn connect(opts: mysql::OptsBuilder) -> Conn {
    let opts = opts
        .read_timeout(Some(Duration::from_secs(30)))
        .write_timeout(Some(Duration::from_secs(30)));
    Conn::new(opts).expect("connect")
}

/// A double as the text protocol shows it: exponent form (`1e20`, `1.5e-20`) for very large
/// and very small magnitudes, as MariaDB writes them.
fn double_text(d: f64) -> String {
    if d != 0.0 && !(1e-15..1e15).contains(&d.abs()) {
        format!("{d:e}")
    } else {
        d.to_string()
    }
}

/// A binary-protocol value as the text protocol shows it, which needs its column: a DATETIME
/// whose time is midnight travels in the date-only form, fractional seconds and a DOUBLE's
/// fixed decimals (MariaDB's `PI()`) are shown to the column's scale.
fn render(v: &Value, col: &mysql::Column) -> Option<String> {
    use mysql::consts::ColumnType as T;
    // The column's fractional digits when fixed (31: not fixed).
    let scale = (col.decimals() < 31).then_some(col.decimals() as usize);
    let frac = |us: u32| match scale {
        Some(n) if n > 0 => format!(".{}", &format!("{us:06}")[..n.min(6)]),
        // A column of unfixed digits (MariaDB's FROM_UNIXTIME of a double): six when there
        // is a fraction.
        _ if us != 0 => format!(".{us:06}"),
        _ => String::new(),
    };
    match v {
        Value::NULL => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::Int(i) => Some(i.to_string()),
        Value::UInt(u) => Some(u.to_string()),
        // A FLOAT (4 bytes) as MariaDB shows it: its fixed decimals, else six significant
        // digits written as a double is.
        Value::Float(f) => Some(match scale {
            Some(n) => format!("{:.n$}", f64::from(*f)),
            None => double_text(format!("{:.5e}", f64::from(*f)).parse().unwrap()),
        }),
        Value::Double(d) => Some(match scale {
            Some(n) if col.column_type() == T::MYSQL_TYPE_DOUBLE => format!("{d:.n$}"),
            _ => double_text(*d),
        }),
        Value::Date(y, m, d, h, i, s, us)
            if matches!(
                col.column_type(),
                T::MYSQL_TYPE_DATETIME | T::MYSQL_TYPE_TIMESTAMP
            ) =>
        {
            Some(format!(
                "{y:04}-{m:02}-{d:02} {h:02}:{i:02}:{s:02}{}",
                frac(*us)
            ))
        }
        Value::Time(neg, days, h, i, s, us) => Some(format!(
            "{}{:02}:{i:02}:{s:02}{}",
            if *neg { "-" } else { "" },
            *days as u64 * 24 + *h as u64,
            frac(*us)
        )),
        other => Some(other.as_sql(true).trim_matches('\'').to_string()),
    }
}

fn error_of(e: mysql::Error) -> (u16, String) {
    match e {
        mysql::Error::MySqlError(e) => (e.code, e.message),
        other => panic!("not a server error: {other}"),
    }
}

/// One connection as a fixture target.
struct Wire(Conn);

impl Wire {
    fn collect<P: mysql::prelude::Protocol>(
        mut r: mysql::QueryResult<'_, '_, '_, P>,
    ) -> Result<Outcome, mysql::Error> {
        let mut o = Outcome {
            affected: r.affected_rows(),
            insert_id: r.last_insert_id().unwrap_or(0),
            info: r.info_str().into_owned(),
            warnings: r.warnings(),
            ..Outcome::default()
        };
        let columns = r.columns();
        if !columns.as_ref().is_empty() {
            o.columns = columns
                .as_ref()
                .iter()
                .map(|c| c.name_str().into_owned())
                .collect();
            let mut rows = Vec::new();
            for row in r.by_ref() {
                let row = row?;
                let cols = row.columns();
                rows.push(
                    row.unwrap()
                        .iter()
                        .zip(cols.iter())
                        .map(|(v, c)| render(v, c))
                        .collect(),
                );
            }
            o.rows = Some(rows);
        }
        // Drain further result sets (multi-statement texts are not fixtures, but be safe).
        while r.iter().is_some() {
            for row in r.by_ref() {
                row?;
            }
        }
        Ok(o)
    }
}

impl Target for Wire {
    fn run(&mut self, sql: &str) -> Result<Outcome, (u16, String)> {
        self.0
            .query_iter(sql)
            .and_then(Wire::collect)
            .map_err(error_of)
    }

    fn run_prepared(&mut self, sql: &str) -> Option<Result<Outcome, (u16, String)>> {
        Some(
            self.0
                .exec_iter(sql, ())
                .and_then(Wire::collect)
                .map_err(error_of),
        )
    }
}

fn finish(what: &str, report: fixture::Report, extra: &str) {
    eprintln!(
        "{what}: {} blocks ran, {} divergences from MariaDB (shoal: overrides), {} skipped, {} failures",
        report.ran,
        report.divergences,
        report.skipped,
        report.failures.len()
    );
    assert!(report.ran > 100, "only {} blocks ran", report.ran);
    assert!(
        report.failures.is_empty(),
        "{what}: {} failures:\n{}\n{extra}",
        report.failures.len(),
        report.failures.join("\n")
    );
}

#[test]
fn sql_suite() {
    let handlings = std::env::var("SHOAL_SUITE_THREAD_HANDLING")
        .unwrap_or_else(|_| "one-thread-per-connection,pool-of-threads".into());
    for handling in handlings
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
    {
        let server = Shoal::start(
            "sql-suite",
            &[
                "--bind-address=127.0.0.1",
                &format!("--thread-handling={handling}"),
            ],
        );
        let mut report = fixture::Report::default();
        for f in fixture::files(&fixture_dir()) {
            let mut target = Wire(connect(server.mysql_opts()));
            report.absorb(fixture::run_file(&f, &mut target, Side::Shoal));
        }
        let log = if report.failures.is_empty() {
            String::new()
        } else {
            format!("server log:\n{}", server.stderr())
        };
        finish(&format!("shoal [{handling}]"), report, &log);
    }
}

#[test]
fn sql_suite_against_mariadb() {
    let Some((m, opts)) = support::mariadb(true) else {
        return;
    };
    let mut report = fixture::Report::default();
    for f in fixture::files(&fixture_dir()) {
        let mut target = Wire(connect(opts.clone()));
        report.absorb(fixture::run_file(&f, &mut target, Side::MariaDb));
    }
    finish("MariaDB", report, &m.log());
}

/// The SQLSTATE of the errors a write can raise is MariaDB's (the fixtures compare codes only):
/// the same statements on both servers give the same (code, SQLSTATE).
#[test]
fn write_errors_carry_mariadbs_sqlstate() {
    use mysql::prelude::Queryable;
    let Some((_m, opts)) = support::mariadb(true) else {
        return;
    };
    let server = Shoal::start("sqlstate", &["--bind-address=127.0.0.1"]);
    let statements = [
        "INSERT INTO n (a) VALUES ('abc')",
        "INSERT INTO n (a) VALUES (99999999999)",
        "INSERT INTO n (c) VALUES ('too long for it')",
        "INSERT INTO n (d) VALUES ('2024-02-30')",
        "INSERT INTO n (a) VALUES (NULL)",
    ];
    let mut answers = Vec::new();
    for opts in [opts, server.mysql_opts()] {
        let mut c = connect(opts);
        c.query_drop("DROP DATABASE IF EXISTS sqlstate_t").unwrap();
        c.query_drop("CREATE DATABASE sqlstate_t").unwrap();
        c.query_drop("USE sqlstate_t").unwrap();
        c.query_drop("CREATE TABLE n (id INT AUTO_INCREMENT PRIMARY KEY, a INT NOT NULL DEFAULT 0, c VARCHAR(4), d DATE)")
            .unwrap();
        let got: Vec<(u16, String)> = statements
            .iter()
            .map(|sql| match c.query_drop(sql) {
                Err(mysql::Error::MySqlError(e)) => (e.code, e.state),
                other => panic!("{sql}: {other:?}"),
            })
            .collect();
        c.query_drop("DROP DATABASE sqlstate_t").unwrap();
        answers.push(got);
    }
    assert_eq!(answers[1], answers[0], "shoal (left) vs MariaDB (right)");
}
