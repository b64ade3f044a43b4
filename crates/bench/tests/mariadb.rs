//! Integration tests against a real MariaDB server started by each test (private datadir,
//! free port, private socket, `--skip-grant-tables`), driven through the `shoal-bench` binary.
//! Skipped, with a message, only when `mariadbd` is not installed.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_shoal-bench");

mod common;

use common::Server;

/// Runs shoal-bench with a time limit; returns (success, stdout, stderr).
fn bench(args: &[String], limit: Duration) -> (bool, String, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn shoal-bench");
    let t0 = Instant::now();
    loop {
        if let Some(_st) = child.try_wait().unwrap() {
            break;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "shoal-bench {:?} timed out\nstdout:\n{}\nstderr:\n{}",
                args,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn bench_ok(args: &[String], limit: Duration) -> String {
    let (ok, out, err) = bench(args, limit);
    assert!(
        ok,
        "shoal-bench {args:?} failed\nstdout:\n{out}\nstderr:\n{err}"
    );
    out
}

fn args(base: &[String], extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    // command and workload first
    v.extend(extra.iter().take(2).map(|s| s.to_string()));
    v.extend(base.iter().cloned());
    v.extend(extra.iter().skip(2).map(|s| s.to_string()));
    v
}

/// The only JSON file in `dir` whose name starts with `prefix`.
fn load_json(dir: &Path, prefix: &str) -> Value {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().unwrap().to_string_lossy().starts_with(prefix)
                && p.extension().is_some_and(|e| e == "json")
        })
        .collect();
    assert_eq!(
        files.len(),
        1,
        "expected one {prefix}* in {}: {files:?}",
        dir.display()
    );
    serde_json::from_str(&std::fs::read_to_string(files.pop().unwrap()).unwrap()).unwrap()
}

fn tmpdir(name: &str) -> PathBuf {
    common::tmpdir("shoal-bench-out", name)
}

fn delta(r: &Value, name: &str) -> u64 {
    r["status_delta"][name].as_f64().unwrap_or(0.0) as u64
}

fn kind(r: &Value, k: &str) -> u64 {
    r["summary"]["statements_by_kind"][k].as_u64().unwrap_or(0)
}

const T: Duration = Duration::from_secs(120);

#[test]
fn every_workload_prepares_runs_and_cleans_up() {
    let Some(srv) = Server::mariadb(&["--max-connections=2000"]) else {
        return;
    };
    let c = srv.conn_args();
    let out = bench_ok(
        &args(
            &c,
            &[
                "prepare",
                "oltp_read_write",
                "--tables=2",
                "--table-size=2000",
                "--threads=2",
            ],
        ),
        T,
    );
    assert!(out.contains("Creating table 'sbtest1'"), "{out}");
    assert_eq!(
        srv.sql("SELECT COUNT(*) FROM sbtest.sbtest1").trim(),
        "2000"
    );
    assert_eq!(
        srv.sql("SELECT COUNT(*) FROM sbtest.sbtest2").trim(),
        "2000"
    );
    let idx = srv.sql("SHOW INDEX FROM sbtest.sbtest2");
    assert!(idx.contains("k_2"), "secondary index missing: {idx}");
    let dir = tmpdir("workloads");
    for (w, mode) in [
        ("oltp_read_write", "auto"),
        ("oltp_read_write", "disable"),
        ("oltp_read_only", "auto"),
        ("oltp_write_only", "auto"),
        ("oltp_point_select", "auto"),
        ("oltp_update_index", "auto"),
        ("oltp_update_non_index", "disable"),
        ("oltp_insert", "auto"),
        ("oltp_delete", "auto"),
    ] {
        let label = format!("{w}-{mode}");
        let out = bench_ok(
            &args(
                &c,
                &[
                    "run",
                    w,
                    "--tables=2",
                    "--table-size=2000",
                    "--threads=4",
                    "--time=1",
                    &format!("--db-ps-mode={mode}"),
                    &format!("--label={label}"),
                    &format!("--output={}", dir.display()),
                    "--quiet",
                ],
            ),
            T,
        );
        assert!(out.contains("transactions:"), "{out}");
        let r = load_json(&dir, &format!("run-{label}-"));
        let s = &r["summary"];
        assert!(s["events"].as_u64().unwrap() > 0, "{label}: no events: {s}");
        assert_eq!(s["errors"].as_u64().unwrap(), 0, "{label}: errors {s}");
        assert!(s["latency_ms"]["p99"].as_f64().unwrap() > 0.0);
        assert_eq!(r["workload"], w);
        // the server PID was found from the port and measured
        assert_eq!(
            r["server_pid"].as_u64(),
            Some(u64::from(srv.pid())),
            "{label}"
        );
        assert!(r["sys"]["server_rss_mb"].as_f64().unwrap() > 1.0);
        assert!(!r["intervals"].as_array().unwrap().is_empty());
        assert!(r["before"]["status"]["Com_select"].is_string());
    }
    let ins = load_json(&dir, "run-oltp_insert-auto-");
    assert!(kind(&ins, "insert_text") > 0);
    bench_ok(
        &args(
            &c,
            &["cleanup", "oltp_read_write", "--tables=2", "--threads=2"],
        ),
        T,
    );
    let tables = srv.sql("SHOW TABLES FROM sbtest");
    assert!(tables.trim().is_empty(), "tables left: {tables}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn com_counters_match_the_statement_mix() {
    let Some(srv) = Server::mariadb(&["--max-connections=2000"]) else {
        return;
    };
    let c = srv.conn_args();
    bench_ok(
        &args(
            &c,
            &["prepare", "oltp_read_write", "--table-size=5000", "--quiet"],
        ),
        T,
    );
    let dir = tmpdir("com");
    // Server-side prepared statements: every statement is one COM_STMT_EXECUTE.
    bench_ok(
        &args(
            &c,
            &[
                "run",
                "oltp_read_write",
                "--table-size=5000",
                "--threads=2",
                "--time=2",
                "--label=ps",
                &format!("--output={}", dir.display()),
                "--quiet",
            ],
        ),
        T,
    );
    let r = load_json(&dir, "run-ps-");
    let events = r["summary"]["events"].as_u64().unwrap();
    assert!(events > 10, "too few transactions: {events}");
    let total: u64 = r["summary"]["statements_by_kind"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(
        delta(&r, "Com_stmt_execute"),
        total,
        "{}",
        r["status_delta"]
    );
    assert_eq!(
        delta(&r, "Com_stmt_prepare"),
        0,
        "prepares belong before the window"
    );
    let begins = kind(&r, "begin");
    assert!(begins >= events);
    // 10 point selects, 1 of each range query, 2 updates, 1 delete, 1 insert per transaction.
    assert_eq!(kind(&r, "point_select"), 10 * begins);
    for k in [
        "simple_range",
        "sum_range",
        "order_range",
        "distinct_range",
        "index_update",
        "non_index_update",
        "delete",
        "insert",
        "commit",
    ] {
        // a transaction cut by a retry has fewer statements, never more
        assert!(
            kind(&r, k) <= begins && kind(&r, k) + 5 >= begins,
            "{k}: {} vs {begins}",
            kind(&r, k)
        );
    }
    // Text protocol: the server's per-statement Com_* counters.
    bench_ok(
        &args(
            &c,
            &[
                "run",
                "oltp_read_write",
                "--table-size=5000",
                "--threads=2",
                "--time=2",
                "--db-ps-mode=disable",
                "--label=text",
                &format!("--output={}", dir.display()),
                "--quiet",
            ],
        ),
        T,
    );
    let r = load_json(&dir, "run-text-");
    let begins = kind(&r, "begin");
    assert!(begins > 10);
    assert_eq!(delta(&r, "Com_stmt_execute"), 0);
    assert_eq!(delta(&r, "Com_begin"), begins);
    assert_eq!(delta(&r, "Com_commit"), kind(&r, "commit"));
    let selects = [
        "point_select",
        "simple_range",
        "sum_range",
        "order_range",
        "distinct_range",
    ]
    .iter()
    .map(|k| kind(&r, k))
    .sum::<u64>();
    assert_eq!(delta(&r, "Com_select"), selects, "{}", r["status_delta"]);
    assert_eq!(kind(&r, "point_select"), 10 * begins);
    assert_eq!(
        delta(&r, "Com_update"),
        kind(&r, "index_update") + kind(&r, "non_index_update")
    );
    assert_eq!(delta(&r, "Com_delete"), kind(&r, "delete"));
    assert_eq!(delta(&r, "Com_insert"), kind(&r, "insert"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn open_loop_measures_from_intended_start() {
    let Some(srv) = Server::mariadb(&["--max-connections=2000"]) else {
        return;
    };
    let c = srv.conn_args();
    bench_ok(
        &args(
            &c,
            &[
                "prepare",
                "oltp_point_select",
                "--table-size=1000",
                "--quiet",
            ],
        ),
        T,
    );
    let dir = tmpdir("open");
    // A modest rate is met.
    bench_ok(
        &args(
            &c,
            &[
                "run",
                "oltp_point_select",
                "--table-size=1000",
                "--threads=4",
                "--time=3",
                "--rate=200",
                "--label=rate200",
                &format!("--output={}", dir.display()),
                "--quiet",
            ],
        ),
        T,
    );
    let r = load_json(&dir, "run-rate200-");
    let tps = r["summary"]["tps"].as_f64().unwrap();
    assert!((140.0..260.0).contains(&tps), "rate 200 gave {tps} tps");
    // Far above capacity with one client: queueing shows up as latency.
    bench_ok(
        &args(
            &c,
            &[
                "run",
                "oltp_read_write",
                "--table-size=1000",
                "--threads=1",
                "--time=2",
                "--label=closed",
                &format!("--output={}", dir.display()),
                "--quiet",
            ],
        ),
        T,
    );
    bench_ok(
        &args(
            &c,
            &[
                "run",
                "oltp_read_write",
                "--table-size=1000",
                "--threads=1",
                "--time=3",
                "--rate=100000",
                "--label=flood",
                &format!("--output={}", dir.display()),
                "--quiet",
            ],
        ),
        T,
    );
    let closed = load_json(&dir, "run-closed-");
    let flood = load_json(&dir, "run-flood-");
    let p50c = closed["summary"]["latency_ms"]["p50"].as_f64().unwrap();
    let p50f = flood["summary"]["latency_ms"]["p50"].as_f64().unwrap();
    assert!(
        // The backlog grows for the whole run, so the median waits about half of it.
        p50f > 3.0 * p50c && p50f > 600.0,
        "open loop p50 {p50f} ms vs closed {p50c} ms"
    );
    assert!(flood["summary"]["max_queue_depth"].as_u64().unwrap() > 1000);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sweep_step_soak_and_report() {
    let Some(srv) = Server::mariadb(&["--max-connections=2000"]) else {
        return;
    };
    let c = srv.conn_args();
    bench_ok(
        &args(
            &c,
            &["prepare", "oltp_read_only", "--table-size=1000", "--quiet"],
        ),
        T,
    );
    let dir = tmpdir("method");
    // sweep: 2 configurations applied with SET GLOBAL x 2 concurrencies
    let out = bench_ok(
        &args(
            &c,
            &[
                "sweep",
                "oltp_read_only",
                "--table-size=1000",
                "--time=1",
                "--concurrency=1,4",
                "--config=small:max_connections=500",
                "--config=large:max_connections=1500",
                &format!("--output={}", dir.display()),
                "--quiet",
            ],
        ),
        T,
    );
    assert!(out.contains("small") && out.contains("large"), "{out}");
    assert_eq!(srv.sql("SELECT @@global.max_connections").trim(), "1500");
    for f in [
        "run-small-1-r1.json",
        "run-small-4-r1.json",
        "run-large-1-r1.json",
        "run-large-4-r1.json",
    ] {
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap();
        assert!(v["summary"]["tps"].as_f64().unwrap() > 0.0, "{f}");
    }
    let large4: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run-large-4-r1.json")).unwrap())
            .unwrap();
    assert_eq!(large4["variables"]["max_connections"], "1500");
    // step: lenient thresholds -> runs to --max-threads, knee = last step, confirmed
    let out = bench_ok(
        &args(
            &c,
            &[
                "step",
                "oltp_read_only",
                "--table-size=1000",
                "--threads=1",
                "--step-threads=2",
                "--step-time=1",
                "--max-threads=5",
                "--confirm-time=1",
                "--max-cpu=1000",
                "--max-p90=100000",
                "--max-mem=100",
                "--min-success=0",
                "--label=lenient",
                &format!("--output={}", dir.display()),
                "--quiet",
            ],
        ),
        T,
    );
    assert!(out.contains("knee: 5 clients"), "{out}");
    let s = load_json(&dir, "step-lenient-");
    let steps = s["steps"].as_array().unwrap();
    assert_eq!(
        steps
            .iter()
            .map(|s| s["threads"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![1, 3, 5]
    );
    assert_eq!(s["knee_threads"], 5);
    assert_eq!(s["confirmed"], true);
    assert_eq!(s["confirmation"]["threads"], 5);
    // step: impossible p90 -> the first step breaks, no knee
    let out = bench_ok(
        &args(
            &c,
            &[
                "step",
                "oltp_read_only",
                "--table-size=1000",
                "--threads=2",
                "--step-threads=2",
                "--step-time=1",
                "--max-threads=8",
                "--max-p90=0.001",
                "--max-cpu=1000",
                "--max-mem=100",
                "--label=strict",
                &format!("--output={}", dir.display()),
                "--quiet",
            ],
        ),
        T,
    );
    assert!(out.contains("no healthy step"), "{out}");
    let s = load_json(&dir, "step-strict-");
    assert_eq!(s["steps"].as_array().unwrap().len(), 1);
    assert!(s["knee_threads"].is_null());
    assert!(s["stop_reason"].as_str().unwrap().contains("p90"));
    // soak: short, 1 s intervals; lenient drift limits -> PASS with a fitted verdict
    let out = bench_ok(
        &args(
            &c,
            &[
                "soak",
                "oltp_read_only",
                "--table-size=1000",
                "--threads=2",
                "--time=4",
                "--report-interval=1",
                "--max-tps-drop=1000",
                "--max-rss-growth=1000",
                "--max-thread-growth=1000",
                "--label=soak",
                &format!("--output={}", dir.display()),
                "--quiet",
            ],
        ),
        T,
    );
    assert!(out.contains("soak verdict: PASS"), "{out}");
    let k = load_json(&dir, "soak-soak-");
    assert_eq!(k["verdict"]["pass"], true);
    assert!(k["run"]["intervals"].as_array().unwrap().len() >= 3);
    assert!(k["verdict"]["rss_change_pct"].is_number());
    // soak with a zero tolerance for thread growth is allowed to fail only through drift
    // reasons; exit code 3 signals drift.
    // a run that sees errors (such results once could not be read back for the report):
    // without AUTO_INCREMENT, every oltp_insert after the first inserts id 0 again and fails
    // with a duplicate key (1062)
    srv.sql("ALTER TABLE sbtest.sbtest1 MODIFY id INTEGER NOT NULL");
    bench_ok(
        &args(
            &c,
            &[
                "run",
                "oltp_insert",
                "--table-size=1000",
                "--threads=2",
                "--time=1",
                "--label=dupkey",
                &format!("--output={}", dir.display()),
                "--quiet",
            ],
        ),
        T,
    );
    let e = load_json(&dir, "run-dupkey-");
    let dups = e["summary"]["errors_by_code"]["1062"].as_u64().unwrap_or(0);
    assert!(dups > 0, "no duplicate keys: {}", e["summary"]);
    assert_eq!(e["summary"]["errors"].as_u64().unwrap(), dups);
    // report over everything: every file loads (none skipped)
    let html = dir.join("out").join("report.html");
    let (ok, out, err) = bench(
        &[
            "report".into(),
            dir.display().to_string(),
            format!("--output={}", html.display()),
        ],
        T,
    );
    assert!(ok, "report failed\nstdout:\n{out}\nstderr:\n{err}");
    assert!(!err.contains("skipped"), "{err}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("dupkey") && page.contains(&format!("1062: {dups}")));
    assert!(page.contains("<svg"), "no svg in report");
    assert!(page.contains("TPS vs connections"));
    assert!(page.contains("Stepped load"));
    assert!(page.contains("Soak"));
    assert!(page.contains("small") && page.contains("large"));
    // the connection plot has one point per (config, concurrency)
    let svg = std::fs::read_to_string(dir.join("out/report_svg/tps_vs_connections.svg")).unwrap();
    assert!(svg.matches("<circle").count() >= 4, "{svg}");
    let md = std::fs::read_to_string(dir.join("out/report.md")).unwrap();
    assert!(md.contains("| config |") && md.contains("report_svg/tps_vs_connections.svg"));
    let _ = std::fs::remove_dir_all(&dir);
}
