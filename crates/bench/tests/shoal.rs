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
        // One directory a server: tests of one handling run at the same time in this process.
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "shoal-bench-vs-shoal-{}-{handling}-{}",
            std::process::id(),
            STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
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

/// A TCP proxy in front of the server that holds every `SHOW GLOBAL STATUS` for `delay`
/// before passing it on: a server that is slow to answer the benchmark's status snapshots,
/// as a pool is when hundreds of clients queue ahead of them. Every other byte passes at once.
fn slow_status_proxy(server_port: u16, delay: Duration) -> u16 {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut client) = c else { return };
            let Ok(mut server) = TcpStream::connect(("127.0.0.1", server_port)) else {
                return;
            };
            let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            // server -> client, as is
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut s2, &mut c2);
                let _ = c2.shutdown(std::net::Shutdown::Both);
            });
            // client -> server, a status query held for `delay`
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match client.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if buf[..n].windows(18).any(|w| w == b"SHOW GLOBAL STATUS") {
                        std::thread::sleep(delay);
                    }
                    if server.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = server.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    port
}

/// After the warm-up, the measurement window opens before the "before" snapshot, not after
/// it: a snapshot the server answers slowly (3 s here, longer than the 2 s window) must
/// neither add its transactions to the window without its seconds (the window's TPS then
/// read 2.5x the real rate), nor stretch the window, nor stop the per-interval records
/// meanwhile. The real rate is what the intervals say: the window's TPS is a mean over the
/// same time, so it cannot exceed their highest by more than the edge of a partial interval.
#[test]
fn a_slow_status_snapshot_stays_inside_the_measured_window() {
    let s = Shoal::start("pool-of-threads");
    let proxy = slow_status_proxy(s.port, Duration::from_secs(3));
    let out_dir = s.dir.join("results");
    let args = |cmd: &str, port: u16, extra: &[&str]| -> Vec<String> {
        let mut v = vec![cmd.to_string(), "oltp_point_select".to_string()];
        v.extend([
            "--mysql-host=127.0.0.1".to_string(),
            format!("--mysql-port={port}"),
            "--mysql-user=root".to_string(),
            "--mysql-db=sbtest".to_string(),
            "--tables=1".to_string(),
            "--table-size=1000".to_string(),
        ]);
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    bench_ok(&args("prepare", s.port, &["--threads=1"]));
    let out_arg = format!("--output={}", out_dir.display());
    bench_ok(&args(
        "run",
        proxy,
        &[
            "--threads=4",
            "--warmup-time=1",
            "--time=2",
            "--report-interval=1",
            &out_arg,
        ],
    ));
    let file = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("a result file");
    let r = match shoal_bench::result::ResultFile::load(&file).unwrap() {
        shoal_bench::result::ResultFile::Run(r) => r,
        other => panic!("not a run result: {other:?}"),
    };
    let window: Vec<f64> = r
        .intervals
        .iter()
        .filter(|i| i.t > r.warmup_s + 1e-9)
        .map(|i| i.tps)
        .collect();
    assert!(
        window.len() >= 2,
        "the monitor recorded {} intervals in the 2 s window (it must go on while the \
         snapshot waits): {:?}",
        window.len(),
        r.intervals.iter().map(|i| (i.t, i.tps)).collect::<Vec<_>>()
    );
    let best = window.iter().cloned().fold(0.0, f64::max);
    assert!(r.summary.events > 0 && best > 0.0, "no load measured");
    assert!(
        r.summary.tps <= 1.3 * best,
        "window TPS {:.0} ({} events in {:.2} s) above every interval's (highest {best:.0}): \
         transactions outside the window's seconds were counted",
        r.summary.tps,
        r.summary.events,
        r.summary.secs
    );
    assert!(
        (r.summary.secs - 2.0).abs() < 0.5,
        "window of {:.2} s for --time=2",
        r.summary.secs
    );
}
