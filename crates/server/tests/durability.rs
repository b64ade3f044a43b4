//! Durability a test can see: the real server runs under `strace`, and the WAL syncs it makes
//! are counted against the commits a client had acknowledged.
//!
//! With `innodb_flush_log_at_trx_commit=1` a commit is acknowledged only after the group
//! commit leader's write with `sync = true`, which RocksDB turns into an `fdatasync` (or
//! `fsync`) of the WAL file (`rocksdb/NNNNNN.log`); one client committing alone is a group of
//! one, so N autocommit INSERTs must show at least N WAL syncs, one started during each
//! INSERT's round trip. With `0` and `2` commits are not synced; the background syncer syncs
//! the WAL about once a second, so the count is bounded by the elapsed seconds and is nowhere
//! near one per commit, and a sync does follow the last INSERT (about a second later).
//!
//! `strace -f -y -ttt -e trace=fsync,fdatasync,sync_file_range,msync -o FILE` logs every sync
//! call of every thread with the path of its descriptor and a wall-clock timestamp; the test
//! counts the WAL's calls between the first INSERT's start and the last one's answer. The test
//! is skipped, saying why, only when strace is missing or cannot trace here (no ptrace).

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mysql::prelude::Queryable;
use support::{temp_dir, Shoal as Srv};

/// Autocommit INSERTs per mode.
const INSERTS: usize = 150;

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Why strace cannot be used here, if it cannot.
fn strace_unusable() -> Option<String> {
    match Command::new("strace")
        .args(["-f", "-o", "/dev/null", "true"])
        .output()
    {
        Err(e) => Some(format!(
            "strace not runnable ({e}); scripts/deps.sh installs it"
        )),
        Ok(o) if !o.status.success() => Some(format!(
            "strace cannot trace here: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Ok(_) => None,
    }
}

/// One completed sync call on a WAL file: its start time (seconds since the epoch).
fn wal_syncs(trace: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(trace).unwrap();
    text.lines()
        .filter_map(|l| {
            // `PID 1700000000.123456 fdatasync(12</dir/rocksdb/000004.log>) = 0` or the same
            // ending in `<unfinished ...>` (its `resumed` line carries no path).
            let mut f = l.split_whitespace();
            let _pid = f.next()?;
            let ts: f64 = f.next()?.parse().ok()?;
            let call = f.next()?;
            let is_sync = call.starts_with("fsync(") || call.starts_with("fdatasync(");
            let path = call.split('<').nth(1)?.split('>').next()?;
            let name = Path::new(path).file_name()?.to_str()?;
            let is_wal = path.contains("/rocksdb/")
                && name.ends_with(".log")
                && name[..name.len() - 4].bytes().all(|b| b.is_ascii_digit());
            (is_sync && is_wal).then_some(ts)
        })
        .collect()
}

/// What one run under strace saw.
struct Run {
    /// WAL sync start times between the first INSERT's start and the last one's answer.
    syncs: Vec<f64>,
    /// Each INSERT's (start, answer) wall-clock times.
    windows: Vec<(f64, f64)>,
    /// Seconds the INSERTs took.
    secs: f64,
    /// Under 0 and 2: seconds from the last INSERT's answer to the next WAL sync.
    background: Option<f64>,
}

impl Run {
    /// INSERTs during which no WAL sync started.
    fn uncovered(&self) -> usize {
        self.windows
            .iter()
            .filter(|(a, b)| !self.syncs.iter().any(|t| t >= a && t <= b))
            .count()
    }
}

/// Runs [`INSERTS`] autocommit INSERTs under `mode` with the server under strace.
fn run(mode: u8) -> Run {
    let dir = temp_dir(&format!("durability-{mode}"));
    let trace = dir.join("strace.out");
    let wrapper: Vec<String> = [
        "strace",
        "-f",
        "-y",
        "-ttt",
        "-e",
        "trace=fsync,fdatasync,sync_file_range,msync",
        "-o",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([trace.display().to_string()])
    .collect();
    let flush = format!("--innodb-flush-log-at-trx-commit={mode}");
    let mut s = Srv::start_wrapped(&dir, &wrapper, &[&flush]);
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE d").unwrap();
    c.query_drop("CREATE TABLE d.t (id INT PRIMARY KEY, k INT NOT NULL, KEY k_1 (k))")
        .unwrap();
    let t0 = now();
    let started = Instant::now();
    let mut windows = Vec::with_capacity(INSERTS);
    for i in 0..INSERTS {
        let a = now();
        c.exec_drop("INSERT INTO d.t VALUES (?, ?)", (i as i64, (i % 10) as i64))
            .unwrap();
        windows.push((a, now()));
    }
    let t1 = now();
    let secs = started.elapsed().as_secs_f64();
    // Under 0 and 2 the background syncer must sync what the INSERTs wrote about a second
    // later (strace writes each line as it happens, so the trace can be polled).
    let mut background = None;
    if mode != 1 {
        let deadline = Instant::now() + Duration::from_secs(30);
        while background.is_none() && Instant::now() < deadline {
            background = wal_syncs(&trace)
                .into_iter()
                .find(|&t| t > t1)
                .map(|t| t - t1);
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    drop(c);
    assert_eq!(s.stop(), Some(0), "shoal under strace: {}", s.stderr());
    let syncs: Vec<f64> = wal_syncs(&trace)
        .into_iter()
        .filter(|&t| t >= t0 && t <= t1)
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    Run {
        syncs,
        windows,
        secs,
        background,
    }
}

#[test]
fn every_acknowledged_commit_is_covered_by_a_wal_sync() {
    if let Some(why) = strace_unusable() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let r = run(1);
    let n = r.syncs.len();
    eprintln!(
        "innodb_flush_log_at_trx_commit=1: {n} WAL syncs for {INSERTS} commits in {:.2} s \
         ({:.2} per commit)",
        r.secs,
        n as f64 / INSERTS as f64
    );
    assert!(
        n >= INSERTS,
        "flush_log_at_trx_commit=1: {n} WAL syncs for {INSERTS} acknowledged commits"
    );
    assert_eq!(
        r.uncovered(),
        0,
        "flush_log_at_trx_commit=1: INSERTs answered without a WAL sync while they ran"
    );
    for mode in [0u8, 2] {
        let r = run(mode);
        let n = r.syncs.len();
        eprintln!(
            "innodb_flush_log_at_trx_commit={mode}: {n} WAL syncs for {INSERTS} commits in \
             {:.2} s ({:.3} per commit); the background sync came {:.2} s after the last",
            r.secs,
            n as f64 / INSERTS as f64,
            r.background.unwrap_or(f64::NAN)
        );
        assert!(
            r.background.is_some(),
            "flush_log_at_trx_commit={mode}: no background WAL sync within 30 s"
        );
        // The background syncer: about one a second (plus one at each edge of the window).
        let bound = r.secs.ceil() as usize + 2;
        assert!(
            n <= bound && n < INSERTS / 4,
            "flush_log_at_trx_commit={mode}: {n} WAL syncs for {INSERTS} commits in {:.2} s",
            r.secs
        );
    }
}
