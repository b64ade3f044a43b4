//! The one SQL fixture format and its checker, shared by every runner (`#[path]`-included):
//! in-process against the session layer with a real table engine
//! (`crates/session/src/tests.rs`), over the wire against the real `shoal` binary under both
//! thread handlings and against a private MariaDB (`crates/server/tests/sql_suite.rs`).
//!
//! The expected answer of a block is MariaDB's. Where shoal answers differently today, the block
//! carries shoal's present answer in a `shoal:` override: the shoal runners check that answer
//! (so a divergence cannot change silently) and the MariaDB runner ignores it. Every override is a
//! tracked divergence; the runners count them. Blocks about shoal-only behaviour (thread pool
//! variables, shoal's own status) are marked `# shoal-only` and skipped against MariaDB.
//! The format is described in `tests/sql/README.md`.
#![allow(dead_code, reason = "each runner uses a different subset")]

use std::path::Path;

/// How a `query` block compares rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Rows as text, in order (or sorted, with `rowsort`).
    Plain,
    /// The first expected line is the column headers.
    Columns,
    /// Only the number of rows.
    RowCount,
}

/// What a block expects.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// Success; the OK packet's fields when given (`affected:`, `insert_id:`, `info:`,
    /// `warnings:`).
    Ok {
        affected: Option<u64>,
        insert_id: Option<u64>,
        info: Option<String>,
        warnings: Option<u16>,
    },
    /// Failure with this MySQL error code.
    Error(u16),
    /// A result set (`query` blocks).
    Rows(Vec<String>),
}

/// One statement and what it must answer.
#[derive(Debug, Clone)]
pub struct Block {
    /// 1-based line of the block's directive.
    pub line: usize,
    pub sql: String,
    pub mode: Mode,
    /// Compare rows as a sorted multiset (results without a total ORDER BY).
    pub rowsort: bool,
    /// Columns (1-based, `mask=9,10`) whose values are not compared: each answer's value
    /// there reads `#` (EXPLAIN's `rows`, an estimate each server makes its own way).
    pub mask: Vec<usize>,
    /// MariaDB's answer.
    pub expect: Expect,
    /// shoal's present answer where it differs from MariaDB's (a tracked divergence).
    pub shoal: Option<Expect>,
    /// Skipped against MariaDB: the block tests shoal's own behaviour.
    pub shoal_only: bool,
}

/// Which server a runner talks to: picks the expectation (MariaDB ignores `shoal:` overrides and
/// skips `# shoal-only` blocks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Shoal,
    MariaDb,
}

/// What a statement answered, rendered as text.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub columns: Vec<String>,
    /// `None` for an OK packet; rows as rendered values (`None` = SQL NULL).
    pub rows: Option<Vec<Vec<Option<String>>>>,
    pub affected: u64,
    pub insert_id: u64,
    pub info: String,
    /// The OK packet's warning count.
    pub warnings: u16,
}

/// A server (or session) a fixture runs against.
pub trait Target {
    /// Runs one statement through the text protocol (or its in-process equivalent).
    fn run(&mut self, sql: &str) -> Result<Outcome, (u16, String)>;
    /// Runs a SELECT through the binary protocol, when the runner has one; rows rendered.
    fn run_prepared(&mut self, _sql: &str) -> Option<Result<Outcome, (u16, String)>> {
        None
    }
}

/// What running one file found.
#[derive(Debug, Default)]
pub struct Report {
    pub failures: Vec<String>,
    /// Blocks run.
    pub ran: usize,
    /// Blocks whose shoal answer is an override (divergences from MariaDB).
    pub divergences: usize,
    /// Blocks skipped (shoal-only against MariaDB).
    pub skipped: usize,
}

impl Report {
    pub fn absorb(&mut self, other: Report) {
        self.failures.extend(other.failures);
        self.ran += other.ran;
        self.divergences += other.divergences;
        self.skipped += other.skipped;
    }
}

/// Every `*.test` file of `tests/sql`, sorted.
pub fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "test"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "fixtures missing in {}", dir.display());
    files
}

fn is_shoal_line(l: &str) -> bool {
    l.starts_with("shoal:") || l == "shoal ----"
}

fn parse_ok_field(exp: &mut Expect, l: &str, at: usize) {
    let Expect::Ok {
        affected,
        insert_id,
        info,
        warnings,
    } = exp
    else {
        panic!("line {at}: `{l}` belongs to a `statement ok` block");
    };
    if let Some(n) = l.strip_prefix("affected: ") {
        *affected = Some(n.trim().parse().expect("affected: number"));
    } else if let Some(n) = l.strip_prefix("insert_id: ") {
        *insert_id = Some(n.trim().parse().expect("insert_id: number"));
    } else if let Some(s) = l.strip_prefix("info: ") {
        *info = Some(s.to_string());
    } else if let Some(n) = l.strip_prefix("warnings: ") {
        *warnings = Some(n.trim().parse().expect("warnings: number"));
    } else {
        panic!("line {at}: unknown result line `{l}` (affected:, insert_id:, info:, warnings:)");
    }
}

/// Parses a fixture file; panics with the line on a malformed block.
pub fn parse(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut shoal_only = false;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim_end();
        if l.is_empty() {
            i += 1;
            continue;
        }
        if l.starts_with('#') {
            if l.starts_with("# shoal-only") {
                shoal_only = true;
            }
            i += 1;
            continue;
        }
        let line = i + 1;
        let head: Vec<&str> = l.split_whitespace().collect();
        i += 1;
        let mut sql = Vec::new();
        while i < lines.len()
            && !lines[i].trim().is_empty()
            && lines[i].trim_end() != "----"
            && !is_shoal_line(lines[i].trim_end())
        {
            sql.push(lines[i]);
            i += 1;
        }
        let sql = sql.join("\n");
        assert!(!sql.trim().is_empty(), "line {line}: block without SQL");
        let mut mask = Vec::new();
        let (mut expect, mode, rowsort) = match head.as_slice() {
            ["statement", "ok"] => (
                Expect::Ok {
                    affected: None,
                    insert_id: None,
                    info: None,
                    warnings: None,
                },
                Mode::Plain,
                false,
            ),
            ["statement", "error", code] => (
                Expect::Error(code.parse().expect("error code")),
                Mode::Plain,
                false,
            ),
            ["query", rest @ ..] => {
                for w in rest {
                    if let Some(cols) = w.strip_prefix("mask=") {
                        mask = cols
                            .split(',')
                            .map(|c| match c.parse::<usize>() {
                                Ok(n) if n > 0 => n,
                                _ => panic!("line {line}: mask=N,M takes 1-based column numbers"),
                            })
                            .collect();
                        continue;
                    }
                    assert!(
                        ["columns", "rowcount", "rowsort"].contains(w),
                        "line {line}: unknown query option {w}"
                    );
                }
                let mode = if rest.contains(&"columns") {
                    Mode::Columns
                } else if rest.contains(&"rowcount") {
                    Mode::RowCount
                } else {
                    Mode::Plain
                };
                (Expect::Rows(Vec::new()), mode, rest.contains(&"rowsort"))
            }
            other => panic!("line {line}: unknown directive {other:?}"),
        };
        // The expected answer, then an optional `shoal:` override, up to a blank line.
        if i < lines.len() && lines[i].trim_end() == "----" {
            i += 1;
            while i < lines.len()
                && !lines[i].trim().is_empty()
                && !is_shoal_line(lines[i].trim_end())
            {
                let l = lines[i].trim_end();
                match &mut expect {
                    Expect::Rows(rows) => rows.push(l.to_string()),
                    Expect::Ok { .. } => parse_ok_field(&mut expect, l, i + 1),
                    Expect::Error(_) => panic!("line {}: an error block has no result", i + 1),
                }
                i += 1;
            }
        }
        let mut shoal = None;
        if i < lines.len() && is_shoal_line(lines[i].trim_end()) {
            let l = lines[i].trim_end();
            i += 1;
            let o = if l == "shoal ----" {
                let mut rows = Vec::new();
                while i < lines.len() && !lines[i].trim().is_empty() {
                    rows.push(lines[i].trim_end().to_string());
                    i += 1;
                }
                Expect::Rows(rows)
            } else {
                match l.trim_start_matches("shoal:").trim() {
                    "ok" => Expect::Ok {
                        affected: None,
                        insert_id: None,
                        info: None,
                        warnings: None,
                    },
                    e => Expect::Error(
                        e.strip_prefix("error ")
                            .and_then(|c| c.trim().parse().ok())
                            .unwrap_or_else(|| {
                                panic!("line {i}: `shoal: ok|error N` or `shoal ----`")
                            }),
                    ),
                }
            };
            assert!(
                o != expect,
                "line {line}: the shoal override equals the expected answer"
            );
            shoal = Some(o);
        }
        assert!(
            i >= lines.len() || lines[i].trim().is_empty(),
            "line {}: expected a blank line after the block",
            i + 1
        );
        out.push(Block {
            line,
            sql,
            mode,
            rowsort,
            mask,
            expect,
            shoal,
            shoal_only: std::mem::take(&mut shoal_only),
        });
    }
    out
}

/// A row as one fixture line: values joined by ` | `, NULL as `NULL`, newlines as `\n`, trailing
/// spaces trimmed.
pub fn row_line(row: &[Option<String>]) -> String {
    let vals: Vec<String> = row
        .iter()
        .map(|v| match v {
            None => "NULL".to_string(),
            Some(s) => s.replace('\n', "\\n"),
        })
        .collect();
    vals.join(" | ").trim_end().to_string()
}

fn describe(r: &Result<Outcome, (u16, String)>) -> String {
    match r {
        Err((code, msg)) => format!("error {code} {msg}"),
        Ok(o) => match &o.rows {
            None => format!(
                "OK (affected {}, insert_id {}, info {:?}, warnings {})",
                o.affected, o.insert_id, o.info, o.warnings
            ),
            Some(rows) => format!(
                "{} rows {:?}",
                rows.len(),
                rows.iter().map(|r| row_line(r)).collect::<Vec<_>>()
            ),
        },
    }
}

/// The lines a result set is compared by, for `mode`.
fn actual_lines(b: &Block, o: &Outcome) -> Vec<String> {
    let rows = o.rows.as_deref().unwrap_or(&[]);
    let mut lines: Vec<String> = match b.mode {
        Mode::RowCount => return vec![rows.len().to_string()],
        _ => rows
            .iter()
            .map(|r| {
                let mut r = r.clone();
                for &m in &b.mask {
                    if let Some(v) = r.get_mut(m - 1) {
                        *v = Some("#".into());
                    }
                }
                row_line(&r)
            })
            .collect(),
    };
    if b.rowsort {
        lines.sort();
    }
    if b.mode == Mode::Columns {
        lines.insert(0, o.columns.join(" | ").trim_end().to_string());
    }
    lines
}

fn expected_lines(b: &Block, rows: &[String]) -> Vec<String> {
    let mut rows = rows.to_vec();
    if b.rowsort {
        let skip = usize::from(b.mode == Mode::Columns).min(rows.len());
        rows[skip..].sort();
    }
    rows
}

/// Whether `got` is the answer `want` describes; the reason when not.
fn check(b: &Block, want: &Expect, got: &Result<Outcome, (u16, String)>) -> Result<(), String> {
    match (want, got) {
        (Expect::Error(c), Err((code, _))) if c == code => Ok(()),
        (Expect::Error(c), _) => Err(format!("expected error {c}, got {}", describe(got))),
        (_, Err(_)) => Err(format!("expected success, got {}", describe(got))),
        (
            Expect::Ok {
                affected,
                insert_id,
                info,
                warnings,
            },
            Ok(o),
        ) => {
            let mut bad = Vec::new();
            if affected.is_some_and(|a| a != o.affected) {
                bad.push(format!(
                    "affected {} (want {})",
                    o.affected,
                    affected.unwrap()
                ));
            }
            if insert_id.is_some_and(|a| a != o.insert_id) {
                bad.push(format!(
                    "insert_id {} (want {})",
                    o.insert_id,
                    insert_id.unwrap()
                ));
            }
            if info.as_ref().is_some_and(|i| *i != o.info) {
                bad.push(format!(
                    "info {:?} (want {:?})",
                    o.info,
                    info.as_ref().unwrap()
                ));
            }
            if warnings.is_some_and(|w| w != o.warnings) {
                bad.push(format!(
                    "warnings {} (want {})",
                    o.warnings,
                    warnings.unwrap()
                ));
            }
            if bad.is_empty() {
                Ok(())
            } else {
                Err(bad.join(", "))
            }
        }
        (Expect::Rows(rows), Ok(o)) => {
            if o.rows.is_none() {
                return Err(format!("expected rows, got {}", describe(got)));
            }
            let want = expected_lines(b, rows);
            let actual = actual_lines(b, o);
            if want == actual {
                Ok(())
            } else {
                Err(format!("\n  expected {want:?}\n  actual   {actual:?}"))
            }
        }
    }
}

/// Runs every block of one file against `target`, as `side` sees it.
pub fn run_file(path: &Path, target: &mut dyn Target, side: Side) -> Report {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut report = Report::default();
    for b in parse(&text) {
        if side == Side::MariaDb && b.shoal_only {
            report.skipped += 1;
            continue;
        }
        let want = match (side, &b.shoal) {
            (Side::Shoal, Some(o)) => {
                report.divergences += 1;
                o
            }
            _ => &b.expect,
        };
        report.ran += 1;
        let name = format!("{file}:{}", b.line);
        let got = target.run(&b.sql);
        if let Err(why) = check(&b, want, &got) {
            let note = if b.shoal.is_some() && side == Side::Shoal {
                " (the block's `shoal:` override)"
            } else {
                ""
            };
            report
                .failures
                .push(format!("{name}{note}: {}\n  {why}", b.sql));
            continue;
        }
        // A plain SELECT (or WITH ... SELECT) answers the same through the binary protocol.
        let first = b.sql.trim_start();
        let select = ["select", "with "].iter().any(|k| {
            first
                .get(..k.len())
                .is_some_and(|w| w.eq_ignore_ascii_case(k))
        });
        if select && b.mode == Mode::Plain && matches!(want, Expect::Rows(_)) {
            if let Some(p) = target.run_prepared(&b.sql) {
                if let Err(why) = check(&b, want, &p) {
                    report
                        .failures
                        .push(format!("{name} (prepared): {}\n  {why}", b.sql));
                }
            }
        }
    }
    report
}

#[cfg(test)]
mod format_tests {
    use super::*;

    #[test]
    fn blocks_overrides_and_markers_parse() {
        let text = "# c\nstatement ok\nINSERT INTO t\nVALUES (1)\n----\naffected: 1\ninfo: x  y\nwarnings: 2\n\n\
                    # shoal-only: pool\nquery columns rowsort\nSELECT a\n----\na\n2\n1\nshoal ----\na\n1\n\n\
                    statement error 1064\nFOO\nshoal: ok\n\nquery\nSELECT 1\n----\n1\nshoal: error 1235\n";
        let b = parse(text);
        assert_eq!(b.len(), 4);
        assert_eq!(b[0].sql, "INSERT INTO t\nVALUES (1)");
        assert_eq!(
            b[0].expect,
            Expect::Ok {
                affected: Some(1),
                insert_id: None,
                info: Some("x  y".into()),
                warnings: Some(2),
            }
        );
        assert!(!b[0].shoal_only && b[1].shoal_only && !b[2].shoal_only);
        assert_eq!(b[1].mode, Mode::Columns);
        assert!(b[1].rowsort);
        assert_eq!(
            b[1].expect,
            Expect::Rows(vec!["a".into(), "2".into(), "1".into()])
        );
        assert_eq!(b[1].shoal, Some(Expect::Rows(vec!["a".into(), "1".into()])));
        assert_eq!(
            b[2].shoal,
            Some(Expect::Ok {
                affected: None,
                insert_id: None,
                info: None,
                warnings: None,
            })
        );
        assert_eq!(b[3].shoal, Some(Expect::Error(1235)));
    }

    struct Canned(Vec<Result<Outcome, (u16, String)>>);
    impl Target for Canned {
        fn run(&mut self, _sql: &str) -> Result<Outcome, (u16, String)> {
            self.0.remove(0)
        }
    }

    fn rows(r: &[&[Option<&str>]]) -> Result<Outcome, (u16, String)> {
        Ok(Outcome {
            columns: vec!["a".into(), "b".into()],
            rows: Some(
                r.iter()
                    .map(|r| r.iter().map(|v| v.map(str::to_string)).collect())
                    .collect(),
            ),
            ..Outcome::default()
        })
    }

    #[test]
    fn checker_compares_sorted_rows_errors_and_overrides() {
        let dir = std::env::temp_dir().join(format!("shoal-fixture-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("x.test");
        std::fs::write(
            &f,
            "query rowsort\nSELECT a, b\n----\n1 | NULL\n2 | x\n\n\
             query\nSELECT 2\n----\n2\nshoal: error 1235\n\n\
             statement error 1146\nSELECT * FROM nope\n",
        )
        .unwrap();
        let answers = || {
            vec![
                rows(&[&[Some("2"), Some("x")], &[Some("1"), None]]),
                Err((1235, "no".into())),
                Err((1146, "missing".into())),
            ]
        };
        let r = run_file(&f, &mut Canned(answers()), Side::Shoal);
        assert!(r.failures.is_empty(), "{:?}", r.failures);
        assert_eq!((r.ran, r.divergences), (3, 1));
        // MariaDB's side must give the main answer: the 1235 is a failure there.
        let r = run_file(&f, &mut Canned(answers()), Side::MariaDb);
        assert_eq!(r.failures.len(), 1, "{:?}", r.failures);
        // A wrong row fails.
        let mut a = answers();
        a[0] = rows(&[&[Some("2"), Some("y")], &[Some("1"), None]]);
        assert_eq!(run_file(&f, &mut Canned(a), Side::Shoal).failures.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `mask=2` compares every column but the second, whatever either answer has there.
    #[test]
    fn masked_columns_are_not_compared() {
        let dir = std::env::temp_dir().join(format!("shoal-fixture-mask-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("m.test");
        std::fs::write(&f, "query mask=2\nEXPLAIN x\n----\n1 | # | a\n").unwrap();
        let got = |b: Option<&str>, c: &str| rows(&[&[Some("1"), b, Some(c)]]);
        for (b, c, failures) in [
            (Some("17"), "a", 0),
            (None, "a", 0),
            (Some("#"), "a", 0),
            (Some("17"), "b", 1),
        ] {
            let r = run_file(&f, &mut Canned(vec![got(b, c)]), Side::Shoal);
            assert_eq!(r.failures.len(), failures, "{b:?} {c}: {:?}", r.failures);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
