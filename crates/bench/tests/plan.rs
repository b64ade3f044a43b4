//! `shoal-bench plan` end to end: the shipped plans (`crates/bench/plans/*.toml`), reduced to
//! seconds per phase, tiny tables and few clients, run against a private MariaDB and a private
//! shoal server. Every phase's file must exist, the report must render, and a second run into
//! the same directory must skip every finished phase (and re-run only a removed one).
//!
//! Skipped, with the reason printed, only when `mariadbd` or the shoal binary is missing. The
//! shoal binary: `$SHOAL_BIN`, else `shoal` next to `shoal-bench`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{free_port, Server};

const BIN: &str = env!("CARGO_BIN_EXE_shoal-bench");
/// The shipped plans: the package directory as cargo gives it when it runs the test (a binary
/// built in another checkout keeps that checkout's path in `env!`), else as it was built.
fn plans_dir() -> std::path::PathBuf {
    Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("plans")
}

fn tmpdir(name: &str) -> PathBuf {
    common::tmpdir("shoal-bench-plan", name)
}

fn mariadb() -> Option<Server> {
    Server::mariadb(&["--thread-handling=pool-of-threads"])
}

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
    let dir = tmpdir("shoal");
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

/// A shipped plan cut down to seconds: same phases and sweep configurations (their settings
/// are applied to the server for real), one 1000-row table, 1-5 clients, lenient thresholds
/// so the knee is the last step, one server: the private one.
fn reduced(plan: &str, server: &str, port: u16) -> String {
    let text = std::fs::read_to_string(plans_dir().join(plan)).unwrap();
    let mut t: toml::Table = text.parse().unwrap();
    let set = |t: &mut toml::Table, sec: &str, k: &str, v: toml::Value| {
        t.get_mut(sec)
            .and_then(|s| s.as_table_mut())
            .unwrap_or_else(|| panic!("{plan} has no [{sec}]"))
            .insert(k.to_string(), v);
    };
    use toml::Value as V;
    set(&mut t, "workload", "tables", V::Integer(1));
    set(&mut t, "workload", "table_size", V::Integer(1000));
    set(&mut t, "workload", "prepare_threads", V::Integer(1));
    let mut srv = toml::Table::new();
    srv.insert("name".into(), V::String(server.into()));
    srv.insert("port".into(), V::Integer(i64::from(port)));
    srv.insert("user".into(), V::String("root".into()));
    t.insert("server".into(), V::Array(vec![V::Table(srv)]));
    set(&mut t, "load", "interval", V::Float(0.5));
    set(&mut t, "load", "progress_interval", V::Float(1.0));
    set(&mut t, "load", "client_threads", V::Integer(1));
    set(&mut t, "baseline", "threads", V::Integer(2));
    set(&mut t, "baseline", "time", V::Float(1.0));
    set(&mut t, "baseline", "warmup", V::Float(0.0));
    set(
        &mut t,
        "sweep",
        "threads",
        V::Array(vec![V::Integer(1), V::Integer(4)]),
    );
    set(&mut t, "sweep", "time", V::Float(1.0));
    set(&mut t, "sweep", "warmup", V::Float(0.0));
    set(&mut t, "step", "start", V::Integer(1));
    set(&mut t, "step", "step", V::Integer(2));
    set(&mut t, "step", "time", V::Float(1.0));
    set(&mut t, "step", "settle", V::Float(0.0));
    set(&mut t, "step", "max_threads", V::Integer(5));
    for (k, v) in [
        ("max_cpu", 1000.0),
        ("max_p90_ms", 100000.0),
        ("max_mem", 100.0),
        ("min_success", 0.0),
    ] {
        set(&mut t, "thresholds", k, V::Float(v));
    }
    set(&mut t, "confirm", "time", V::Float(1.0));
    set(&mut t, "soak", "time", V::Float(3.0));
    set(&mut t, "soak", "interval", V::Float(0.5));
    set(&mut t, "soak", "warmup", V::Float(0.0));
    for k in ["max_tps_drop", "max_rss_growth", "max_thread_growth"] {
        set(&mut t, "soak", k, V::Float(1e9));
    }
    toml::to_string(&t).unwrap()
}

/// Runs `shoal-bench plan`; (success, stdout, stderr, seconds).
fn plan(file: &Path, out: &Path) -> (bool, String, String, f64) {
    let t0 = Instant::now();
    let mut child = Command::new(BIN)
        .arg("plan")
        .arg(file)
        .arg(format!("--output={}", out.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn shoal-bench");
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(600) {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        t0.elapsed().as_secs_f64(),
    )
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

const PHASES: [&str; 7] = [
    "prepare",
    "environment",
    "baseline",
    "sweep",
    "step",
    "confirm",
    "soak",
];

/// Runs the reduced plan and checks every phase's output; returns the output directory.
fn run_reduced(shipped: &str, server: &str, port: u16) -> PathBuf {
    let work = tmpdir(server);
    let file = work.join("plan.toml");
    let text = reduced(shipped, server, port);
    std::fs::write(&file, &text).unwrap();
    let out = work.join("out");
    let (ok, so, se, secs) = plan(&file, &out);
    assert!(
        ok,
        "plan failed after {secs:.1}s\nstdout:\n{so}\nstderr:\n{se}"
    );
    eprintln!("{shipped} against {server}: {secs:.1}s");
    let sd = out.join(server);
    for ph in PHASES {
        assert!(
            sd.join(".phases").join(format!("{ph}.done")).is_file(),
            "no marker for {ph}\n{so}"
        );
        assert!(so.contains(&format!("[{server}] {ph}: done")), "{so}");
    }
    let env = json(&sd.join("env.json"));
    assert_eq!(env["kind"], "env");
    assert!(!env["version"].as_str().unwrap().is_empty(), "{env}");
    assert!(env["variables"]["max_connections"].is_string());
    let base = json(&sd.join("baseline.json"));
    assert_eq!(base["threads"], 2);
    assert!(base["summary"]["events"].as_u64().unwrap() > 0);
    // Every sweep point, under its configuration's settings.
    let plan_t: toml::Table = text.parse().unwrap();
    let configs = plan_t["sweep"]["config"].as_array().unwrap();
    assert!(configs.len() >= 2);
    for c in configs {
        let name = c["name"].as_str().unwrap();
        for t in [1, 4] {
            let r = json(&sd.join(format!("sweep-{name}-{t}-r1.json")));
            assert_eq!(r["label"], name);
            assert_eq!(r["threads"], t);
            assert!(r["summary"]["events"].as_u64().unwrap() > 0, "{name} {t}");
            // The configuration was in force: the run's variables show its values.
            for (k, v) in c["set"].as_table().unwrap() {
                let got = r["variables"][k.as_str()].as_str().unwrap_or_default();
                assert_eq!(got, v.to_string(), "{name}: {k}");
            }
        }
    }
    let step = json(&sd.join("step.json"));
    let threads: Vec<u64> = step["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["threads"].as_u64().unwrap())
        .collect();
    assert_eq!(threads, [1, 3, 5]);
    assert_eq!(step["knee_threads"], 5);
    assert_eq!(step["confirmed"], true, "{}", step["confirmation_broken"]);
    assert_eq!(step["confirmation"]["threads"], 5);
    let soak = json(&sd.join("soak.json"));
    assert_eq!(soak["verdict"]["pass"], true, "{}", soak["verdict"]);
    assert!(soak["run"]["intervals"].as_array().unwrap().len() >= 3);
    // Not on a terminal: plain progress lines (progress_interval = 1 s), with elapsed/total,
    // TPS, p99 and errors; the step phase's total is an upper bound.
    let base_line = se
        .lines()
        .find(|l| l.starts_with(&format!("[{server} baseline] elapsed")))
        .unwrap_or_else(|| panic!("no baseline progress line:\n{se}"));
    for want in ["s/1s (", " clients 2 tps ", " p99 ", " ms errors 0 "] {
        assert!(base_line.contains(want), "{want:?} not in {base_line:?}");
    }
    assert!(
        se.lines()
            .any(|l| l.starts_with(&format!("[{server} step (")) && l.contains("s/≤3s")),
        "no step progress line:\n{se}"
    );
    assert!(!se.contains('\r'), "carriage returns off a terminal");
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    let version = env["version"].as_str().unwrap();
    for want in [
        server,
        "Environment",
        version,
        "TPS vs connections",
        "knee 5",
        "Stepped load",
        "Soak",
        "Best setting per concurrency band",
        "Capacity at the thresholds",
        "confirmed,",
        "Load generator",
    ] {
        assert!(page.contains(want), "report lacks {want:?}");
    }
    out
}

/// Second run: everything skipped, nothing rewritten; then a removed phase runs again alone.
fn check_resume(work_plan: &Path, out: &Path, server: &str) {
    let sd = out.join(server);
    let mtime = |f: &str| std::fs::metadata(sd.join(f)).unwrap().modified().unwrap();
    let before = mtime("baseline.json");
    let (ok, so, se, _) = plan(work_plan, out);
    assert!(ok, "{so}\n{se}");
    for ph in PHASES {
        assert!(
            so.contains(&format!("[{server}] {ph}: skipped (finished before)")),
            "{ph} not skipped:\n{so}"
        );
    }
    // Nothing ran again: every phase said so and no result was rewritten (no time bound: a
    // loaded machine may be slow even to skip).
    assert_eq!(mtime("baseline.json"), before);
    // An interrupted soak: its marker and file are gone; only the soak runs again.
    std::fs::remove_file(sd.join(".phases/soak.done")).unwrap();
    std::fs::remove_file(sd.join("soak.json")).unwrap();
    let (ok, so, se, _) = plan(work_plan, out);
    assert!(ok, "{so}\n{se}");
    assert!(so.contains(&format!("[{server}] soak: done")), "{so}");
    assert!(so.contains(&format!("[{server}] step: skipped")), "{so}");
    assert!(sd.join("soak.json").is_file());
    assert_eq!(mtime("baseline.json"), before);
}

#[test]
fn source_shape_plan_reduced_against_mariadb() {
    let Some(s) = mariadb() else { return };
    let out = run_reduced("source-shape.toml", "mariadb", s.port);
    check_resume(&out.with_file_name("plan.toml"), &out, "mariadb");
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

#[test]
fn quick_plan_reduced_against_shoal() {
    let Some(s) = shoal() else { return };
    let out = run_reduced("quick.toml", "shoal", s.port);
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

/// Each shipped plan against each kind of server: the other two pairings.
#[test]
fn quick_plan_reduced_against_mariadb() {
    let Some(s) = mariadb() else { return };
    let out = run_reduced("quick.toml", "mariadb", s.port);
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

#[test]
fn source_shape_plan_reduced_against_shoal() {
    let Some(s) = shoal() else { return };
    let out = run_reduced("source-shape.toml", "shoal", s.port);
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}
