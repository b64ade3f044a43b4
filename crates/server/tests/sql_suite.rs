//! The SQL behaviour suite over the wire: starts the real `shoal` binary (free port, temp datadir
//! and socket) once per thread handling and runs every fixture in `tests/sql/*.test` through the
//! `mysql` crate, one fresh connection per fixture file. Fixture format: tests/sql/README.md.
//!
//! Thread handlings come from `SHOAL_SUITE_THREAD_HANDLING` (comma-separated), default
//! `one-thread-per-connection`; add `pool-of-threads` once the pool is wired into the server.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use mysql::prelude::Queryable;
use mysql::{Conn, Value};
use support::Shoal;

/// One block of a fixture file.
#[derive(Debug)]
enum Block {
    Ok(String),
    Error(u16, String),
    Query {
        sql: String,
        columns: bool,
        rowcount: bool,
        expected: Vec<String>,
    },
}

fn parse_fixture(text: &str) -> Vec<(usize, Block)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim_end();
        if l.is_empty() || l.starts_with('#') {
            i += 1;
            continue;
        }
        let start = i + 1;
        let head: Vec<&str> = l.split_whitespace().collect();
        i += 1;
        let mut sql = Vec::new();
        while i < lines.len() && !lines[i].trim().is_empty() && lines[i].trim_end() != "----" {
            sql.push(lines[i]);
            i += 1;
        }
        let sql = sql.join("\n");
        let block = match head.as_slice() {
            ["statement", "ok"] => Block::Ok(sql),
            ["statement", "error", code] => Block::Error(code.parse().expect("error code"), sql),
            ["query", rest @ ..] => {
                let mut expected = Vec::new();
                if i < lines.len() && lines[i].trim_end() == "----" {
                    i += 1;
                    while i < lines.len() && !lines[i].trim().is_empty() {
                        expected.push(lines[i].trim_end().to_string());
                        i += 1;
                    }
                }
                Block::Query {
                    sql,
                    columns: rest.contains(&"columns"),
                    rowcount: rest.contains(&"rowcount"),
                    expected,
                }
            }
            other => panic!("line {start}: unknown directive {other:?}"),
        };
        out.push((start, block));
    }
    out
}

/// A connection with generous timeouts (a fixture may run slow statements).
fn connect(server: &Shoal) -> Conn {
    let opts = server
        .mysql_opts()
        .read_timeout(Some(Duration::from_secs(30)))
        .write_timeout(Some(Duration::from_secs(30)));
    Conn::new(opts).expect("connect to shoal")
}

fn render(v: &Value) -> String {
    match v {
        Value::NULL => "NULL".into(),
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Double(d) => d.to_string(),
        other => format!("{other:?}"),
    }
}

/// Runs one statement; rows rendered as ` | `-joined lines (plus the header line first).
fn run(conn: &mut Conn, sql: &str) -> Result<(String, Vec<String>), mysql::Error> {
    let mut result = conn.query_iter(sql)?;
    let mut header = String::new();
    let mut rows = Vec::new();
    if let Some(set) = result.iter() {
        header = set
            .columns()
            .as_ref()
            .iter()
            .map(|c| c.name_str().into_owned())
            .collect::<Vec<_>>()
            .join(" | ");
        for row in set {
            let row = row?;
            let vals: Vec<String> = row.unwrap().iter().map(render).collect();
            rows.push(vals.join(" | ").trim_end().to_string());
        }
    }
    drop(result);
    Ok((header, rows))
}

/// Runs one SELECT through the binary protocol (COM_STMT_PREPARE + EXECUTE).
fn run_prepared(conn: &mut Conn, sql: &str) -> Result<Vec<String>, mysql::Error> {
    let mut result = conn.exec_iter(sql, ())?;
    let mut rows = Vec::new();
    if let Some(set) = result.iter() {
        for row in set {
            let vals: Vec<String> = row?.unwrap().iter().map(render).collect();
            rows.push(vals.join(" | ").trim_end().to_string());
        }
    }
    Ok(rows)
}

fn run_fixture(conn: &mut Conn, path: &Path, failures: &mut Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let file = path.file_name().unwrap().to_string_lossy().into_owned();
    for (line, block) in parse_fixture(&text) {
        let name = format!("{file}:{line}");
        match &block {
            Block::Ok(sql) => {
                if let Err(e) = run(conn, sql) {
                    failures.push(format!("{name}: {sql}\n  expected success, got {e}"));
                }
            }
            Block::Error(code, sql) => match run(conn, sql) {
                Err(mysql::Error::MySqlError(e)) if e.code == *code => {}
                other => failures.push(format!(
                    "{name}: {sql}\n  expected error {code}, got {other:?}"
                )),
            },
            Block::Query {
                sql,
                columns,
                rowcount,
                expected,
            } => match run(conn, sql) {
                Ok((header, rows)) => {
                    let actual: Vec<String> = if *rowcount {
                        vec![rows.len().to_string()]
                    } else if *columns {
                        std::iter::once(header).chain(rows).collect()
                    } else {
                        rows
                    };
                    if &actual != expected {
                        failures.push(format!(
                            "{name}: {sql}\n  expected {expected:?}\n  actual   {actual:?}"
                        ));
                    }
                    // Plain SELECT results must be the same over the binary protocol.
                    let plain = !*rowcount && !*columns;
                    if plain && sql.trim_start().to_ascii_uppercase().starts_with("SELECT") {
                        match run_prepared(conn, sql) {
                            Ok(rows) if &rows == expected => {}
                            other => failures.push(format!(
                                "{name} (prepared): {sql}\n  expected {expected:?}\n  actual   {other:?}"
                            )),
                        }
                    }
                }
                Err(e) => failures.push(format!("{name}: {sql}\n  expected rows, got {e}")),
            },
        }
    }
}

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/sql");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "test"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "fixtures missing in {}", dir.display());
    files
}

#[test]
fn sql_suite() {
    let handlings = std::env::var("SHOAL_SUITE_THREAD_HANDLING")
        .unwrap_or_else(|_| "one-thread-per-connection,pool-of-threads".into());
    let mut failures = Vec::new();
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
        for f in fixtures() {
            let mut conn = connect(&server);
            let before = failures.len();
            run_fixture(&mut conn, &f, &mut failures);
            for x in &mut failures[before..] {
                *x = format!("[{handling}] {x}");
            }
        }
        if !failures.is_empty() {
            eprintln!("server log:\n{}", server.stderr());
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
