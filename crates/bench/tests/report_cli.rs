//! `shoal-bench report` through the binary, on stored result files (no server needed).
//!
//! `data/run-x-oltp_read_write-64-errors.json` was written by `ResultFile::save` (the writer
//! of `run`/`sweep`), for a run at 64 clients that saw deadlocks (1213), lock wait timeouts
//! (1205), duplicate keys (1062) and reconnects: the kind of run that could not be reported.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_shoal-bench");
const RUN_WITH_ERRORS: &str = include_str!("data/run-x-oltp_read_write-64-errors.json");

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "shoal-bench-report-cli-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `shoal-bench report DIR --output=OUT`: (success, stderr).
fn report(dir: &Path, out: &Path) -> (bool, String) {
    let o = Command::new(BIN)
        .arg("report")
        .arg(dir)
        .arg(format!("--output={}", out.display()))
        .output()
        .expect("run shoal-bench");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn reports_a_run_with_errors_and_warns_about_a_corrupt_file() {
    let d = tmpdir("warn");
    std::fs::write(d.join("run-x-oltp_read_write-64-1.json"), RUN_WITH_ERRORS).unwrap();
    std::fs::write(d.join("corrupt.json"), "{\"kind\": \"run\",").unwrap();
    let out = d.join("out").join("report.html");
    let (ok, err) = report(&d, &out);
    assert!(ok, "{err}");
    let want = format!(
        "WARNING: skipped {}: not valid JSON",
        d.join("corrupt.json").display()
    );
    assert!(err.contains(&want), "{err}");
    let page = std::fs::read_to_string(&out).unwrap();
    assert!(page.contains("Skipped files") && page.contains("corrupt.json"));
    assert!(page.contains("oltp_read_write"));
    assert!(
        page.contains("1062: 3, 1205: 2, 1213: 18"),
        "no errors by code"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_directory_with_nothing_readable_fails_naming_each_file() {
    let d = tmpdir("nothing");
    std::fs::write(d.join("corrupt.json"), "{").unwrap();
    std::fs::write(d.join("other.json"), "{\"name\": 1}").unwrap();
    let (ok, err) = report(&d, &d.join("report.html"));
    assert!(!ok, "{err}");
    assert!(
        err.starts_with("FATAL: no result could be read from"),
        "{err}"
    );
    for want in [
        format!("{}: not valid JSON", d.join("corrupt.json").display()),
        format!(
            "{}: not a shoal-bench result (no \"kind\" field)",
            d.join("other.json").display()
        ),
    ] {
        assert!(err.contains(&want), "{err}");
    }
    assert!(!d.join("report.html").exists());
    let _ = std::fs::remove_dir_all(&d);
}
