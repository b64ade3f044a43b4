//! shoal-bench against the shoal server itself, under both thread handlings: prepare, a short
//! oltp_read_write run in both prepared-statement modes, cleanup. The `shoal` binary is the one
//! built next to `shoal-bench` (`./run-tests` builds every binary first).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_shoal-bench");

fn shoal_bin() -> PathBuf {
    let p = PathBuf::from(BIN).with_file_name("shoal");
    assert!(
        p.exists(),
        "{} missing: build it first (cargo build --release --workspace --bins)",
        p.display()
    );
    p
}

struct Shoal {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl Shoal {
    /// Starts a server and waits until it answers, through the real client, as itself: a
    /// bare TCP connect is not enough on a loaded machine (a port picked free can be taken by
    /// another test's client before the server binds it, and a connect to a port in the
    /// ephemeral range can even reach itself). A server that exits (its port lost) is started
    /// again on another port.
    fn start(handling: &str) -> Shoal {
        let dir = std::env::temp_dir().join(format!(
            "shoal-bench-vs-shoal-{}-{handling}",
            std::process::id()
        ));
        let t0 = Instant::now();
        let mut tries = 0;
        loop {
            tries += 1;
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let child = Command::new(shoal_bin())
                .arg(format!("--port={port}"))
                .arg(format!("--socket={}", dir.join("s.sock").display()))
                .arg(format!("--datadir={}", dir.join("data").display()))
                .arg("--initialize-insecure")
                .arg(format!("--thread-handling={handling}"))
                .arg("--innodb-flush-log-at-trx-commit=2")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start shoal");
            let mut s = Shoal {
                child,
                dir: dir.clone(),
                port,
            };
            loop {
                assert!(
                    t0.elapsed() < Duration::from_secs(120),
                    "shoal ({handling}) did not answer within 120 s ({tries} starts)"
                );
                if s.child.try_wait().unwrap().is_some() {
                    break; // exited: its port was taken; start it again on another
                }
                let out = Command::new("mariadb")
                    .args([
                        "-h127.0.0.1",
                        &format!("-P{port}"),
                        "-uroot",
                        "--connect-timeout=10",
                        "-N",
                        "-e",
                        "CREATE DATABASE IF NOT EXISTS sbtest; SELECT @@datadir",
                    ])
                    .stderr(Stdio::null())
                    .output()
                    .expect("mariadb client");
                let ours = String::from_utf8_lossy(&out.stdout)
                    .contains(&s.dir.join("data").display().to_string());
                if out.status.success() && ours {
                    return s;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            // Reaps the exited child and removes its directory.
            drop(s);
            assert!(
                tries < 10,
                "shoal ({handling}) exited {tries} times at start"
            );
        }
    }
}

impl Drop for Shoal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn bench_ok(args: &[String]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("spawn shoal-bench");
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "shoal-bench {args:?} failed\n{o}\n{e}"
    );
    o
}

fn transactions(out: &str) -> u64 {
    out.lines()
        .find_map(|l| l.trim().strip_prefix("transactions:"))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no transactions line in:\n{out}"))
}

fn run_against(handling: &str) {
    let s = Shoal::start(handling);
    let conn = |cmd: &str, extra: &[&str]| -> Vec<String> {
        let mut v = vec![cmd.to_string(), "oltp_read_write".to_string()];
        v.extend([
            "--mysql-host=127.0.0.1".to_string(),
            format!("--mysql-port={}", s.port),
            "--mysql-user=root".to_string(),
            "--mysql-db=sbtest".to_string(),
            "--tables=2".to_string(),
            "--table-size=1000".to_string(),
        ]);
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    bench_ok(&conn("prepare", &["--threads=2"]));
    for mode in ["auto", "disable"] {
        let out = bench_ok(&conn(
            "run",
            &["--threads=8", "--time=4", &format!("--db-ps-mode={mode}")],
        ));
        let n = transactions(&out);
        assert!(
            n > 0,
            "[{handling} {mode}] no transaction completed:\n{out}"
        );
    }
    bench_ok(&conn("cleanup", &["--threads=2"]));
}

#[test]
fn oltp_read_write_against_shoal_per_thread() {
    run_against("one-thread-per-connection");
}

#[test]
fn oltp_read_write_against_shoal_pool() {
    run_against("pool-of-threads");
}
