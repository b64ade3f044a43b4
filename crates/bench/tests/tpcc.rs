//! The tpcc workload end to end, against a private MariaDB and a private shoal server: prepare
//! one warehouse at a small scale, `check` (the fresh population is consistent), run the mix
//! for a few seconds with 4 clients in both prepared-statement modes, `check` again (TPC-C's
//! consistency conditions 1-4 must still hold), tpmC > 0 and every transaction type ran; a
//! deliberately broken district must make `check` fail naming condition and district; then
//! `cleanup`.
//!
//! Skipped, with the reason printed, only when `mariadbd` or the shoal binary is missing. The
//! shoal binary: `$SHOAL_BIN`, else `shoal` next to `shoal-bench`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{free_port, Server};

const BIN: &str = env!("CARGO_BIN_EXE_shoal-bench");

/// The scale of the test population: 1 warehouse, 10 districts of 300 customers (and 300
/// initial orders, 90 undelivered), 2000 items.
const SCALE: [&str; 3] = [
    "--warehouses=1",
    "--scale-items=2000",
    "--scale-customers=300",
];

fn shoal() -> Option<Server> {
    let bin = std::env::var_os("SHOAL_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(BIN).with_file_name("shoal"));
    if !bin.exists() {
        eprintln!(
            "SKIPPED: no shoal server binary at {} (build it, or set SHOAL_BIN)",
            bin.display()
        );
        return None;
    }
    if Command::new("mariadb").arg("--version").output().is_err() {
        eprintln!("SKIPPED: the mariadb client is not installed");
        return None;
    }
    let dir = common::tmpdir("shoal-bench-tpcc", "shoal");
    let port = free_port();
    let mut cmd = Command::new(bin);
    cmd.arg(format!("--port={port}"))
        .arg(format!("--socket={}", dir.join("s.sock").display()))
        .arg(format!("--datadir={}", dir.join("data").display()))
        .arg("--initialize-insecure")
        .arg("--thread-handling=pool-of-threads")
        .arg("--innodb-flush-log-at-trx-commit=2");
    Some(Server::spawn(cmd, dir, port, "shoal"))
}

/// Runs shoal-bench (killed after 120 s); (exit code, stdout, stderr).
fn bench(srv: &Server, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(&args[..2])
        .args(srv.conn_args())
        .args(&args[2..])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn shoal-bench");
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn bench_ok(srv: &Server, args: &[&str]) -> String {
    let (code, out, err) = bench(srv, args);
    assert_eq!(
        code,
        Some(0),
        "shoal-bench {args:?} failed\nstdout:\n{out}\nstderr:\n{err}"
    );
    out
}

fn check_ok(srv: &Server, what: &str) {
    let out = bench_ok(srv, &["check", "tpcc"]);
    for n in 1..=4 {
        assert!(
            out.contains(&format!("condition {n} (")) && !out.contains("FAILED"),
            "{what}: {out}"
        );
    }
}

fn run_json(dir: &Path, label: &str) -> Value {
    let f = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("run-{label}-"))
        })
        .unwrap_or_else(|| panic!("no run-{label}-*.json in {}", dir.display()));
    serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap()
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The whole cycle against one server; `com_counters`: compare the statements sent with the
/// server's Com_* counters (MariaDB).
fn cycle(srv: &Server, name: &str, com_counters: bool) {
    let t0 = Instant::now();
    let dir = common::tmpdir("shoal-bench-tpcc-out", name);
    let mut prep = vec!["prepare", "tpcc", "--threads=2"];
    prep.extend(SCALE);
    let out = bench_ok(srv, &prep);
    assert!(out.contains("Creating table 'order_line'"), "{out}");
    let count = |t: &str| srv.sql(&format!("SELECT COUNT(*) FROM sbtest.{t}"));
    assert_eq!(count("warehouse").trim(), "1");
    assert_eq!(count("district").trim(), "10");
    assert_eq!(count("customer").trim(), "3000");
    assert_eq!(count("history").trim(), "3000");
    assert_eq!(count("orders").trim(), "3000");
    assert_eq!(count("new_order").trim(), "900");
    assert_eq!(count("item").trim(), "2000");
    assert_eq!(count("stock").trim(), "2000");
    check_ok(srv, &format!("{name} after prepare"));
    eprintln!("[{name}] prepared in {:.1}s", t0.elapsed().as_secs_f64());

    for (mode, time) in [("auto", "6"), ("disable", "3")] {
        let label = format!("{name}-{mode}");
        let out = bench_ok(
            srv,
            &[
                "run",
                "tpcc",
                "--threads=4",
                &format!("--time={time}"),
                &format!("--db-ps-mode={mode}"),
                &format!("--label={label}"),
                &format!("--output={}", dir.display()),
                "--quiet",
            ],
        );
        assert!(out.contains("tpmC:"), "{out}");
        let r = run_json(&dir, &label);
        let s = &r["summary"];
        let tpmc = s["tpmc"].as_f64().unwrap_or(0.0);
        let by = &s["transactions_by_type"];
        eprintln!(
            "[{label}] tpmC {tpmc:.0}, tps {:.1}, by type {by}, errors by code {}",
            s["tps"], s["errors_by_code"]
        );
        assert!(tpmc > 0.0, "[{label}] tpmC is 0: {s}");
        assert_eq!(n(&s["errors"]), 0, "[{label}] failed transactions: {s}");
        assert_eq!(r["workload"], "tpcc");
        assert_eq!(
            r["opts"]["scale_customers"], 300,
            "scale read from the database"
        );
        if mode == "auto" {
            // Every type ran (at 4 % each, a few seconds give dozens).
            for k in [
                "new_order",
                "payment",
                "order_status",
                "delivery",
                "stock_level",
            ] {
                assert!(n(&by[k]) > 0, "[{label}] no {k}: {by}");
            }
        }
        let events = n(&s["events"]);
        let typed: u64 = by.as_object().unwrap().values().map(n).sum();
        assert_eq!(events, typed, "[{label}] every event has a type");
        let kinds = &s["statements_by_kind"];
        let begins = n(&kinds["begin"]);
        assert!(begins >= events, "{kinds}");
        if com_counters {
            let delta = |k: &str| r["status_delta"][k].as_f64().unwrap_or(0.0) as u64;
            if mode == "auto" {
                let total: u64 = kinds.as_object().unwrap().values().map(n).sum();
                assert_eq!(
                    delta("Com_stmt_execute"),
                    total,
                    "[{label}] {}",
                    r["status_delta"]
                );
            } else {
                for (com, kind) in [
                    ("Com_begin", "begin"),
                    ("Com_commit", "commit"),
                    ("Com_rollback", "rollback"),
                    ("Com_select", "tpcc_select"),
                    ("Com_update", "tpcc_update"),
                    ("Com_insert", "tpcc_insert"),
                    ("Com_delete", "tpcc_delete"),
                ] {
                    assert_eq!(delta(com), n(&kinds[kind]), "[{label}] {com} vs {kind}");
                }
            }
        }
        check_ok(srv, &format!("{label} after the run"));
    }

    // A district whose next order id is off by one breaks condition 2 there.
    srv.sql(
        "UPDATE sbtest.district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 3",
    );
    let (code, out, err) = bench(srv, &["check", "tpcc"]);
    assert_ne!(code, Some(0), "check passed a broken district:\n{out}");
    assert!(
        err.contains("consistency condition 2 (D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)) fails for warehouse 1 district 3"),
        "{err}"
    );
    assert!(
        out.contains("condition 2 (") && out.contains("FAILED in 1 of 10 districts"),
        "{out}"
    );
    assert!(!err.contains("district 4"), "{err}");

    bench_ok(srv, &["cleanup", "tpcc"]);
    let tables = srv.sql("SHOW TABLES FROM sbtest");
    assert!(tables.trim().is_empty(), "tables left: {tables}");
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("[{name}] done in {:.1}s", t0.elapsed().as_secs_f64());
}

#[test]
fn tpcc_against_mariadb() {
    let Some(srv) = Server::mariadb(&["--thread-handling=pool-of-threads"]) else {
        return;
    };
    cycle(&srv, "mariadb", true);
}

#[test]
fn tpcc_against_shoal() {
    let Some(srv) = shoal() else {
        return;
    };
    cycle(&srv, "shoal", false);
}
