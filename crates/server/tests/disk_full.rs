//! A full disk, for real (issue 17): the data directory is a small tmpfs mounted for the test,
//! filled by real clients until a write fails. What must hold: the failing write answers 1021
//! (MySQL's disk-full error) and leaves nothing behind (the statement, or the whole transaction
//! whose COMMIT failed, is rolled back); reads and new connections go on; the log says so once;
//! when space is freed (the tmpfs grown) writes resume without a restart; and everything that was
//! acknowledged is there, also after a kill -9 and restart.
//!
//! Mounting needs root (CAP_SYS_ADMIN), which the CI machine has; elsewhere the test fails
//! with that reason rather than passing without having run.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use support::{temp_dir, Shoal};

/// A tmpfs mounted at a directory, unmounted (lazily) on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size_mb: u32) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size_mb}m"), "tmpfs"])
            .arg(dir)
            .status()
            .expect("run mount");
        assert!(
            st.success(),
            "mounting a tmpfs at {} failed: this test needs root",
            dir.display()
        );
        Tmpfs(dir.to_path_buf())
    }

    fn resize(&self, size_mb: u32) {
        let st = Command::new("mount")
            .args(["-o", &format!("remount,size={size_mb}m")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(st.success(), "remount failed");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn code(e: &mysql::Error) -> Option<u16> {
    match e {
        mysql::Error::MySqlError(m) => Some(m.code),
        _ => None,
    }
}

/// Row `id`'s value: 800 pseudo-random hex digits (incompressible enough that the tmpfs fills).
fn value(id: u64) -> String {
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..50)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("{x:016x}")
        })
        .collect()
}

/// 50 rows, ids `first..first+50`.
fn batch(first: u64) -> String {
    let rows: Vec<String> = (first..first + 50)
        .map(|i| format!("({i}, '{}')", value(i)))
        .collect();
    format!("INSERT INTO d.t (id, v) VALUES {}", rows.join(", "))
}

#[test]
fn disk_full_fails_writes_with_1021_loses_nothing_and_recovers() {
    let dir = temp_dir("diskfull");
    let fs = Tmpfs::mount(&dir.join("data"), 40);
    let mut srv = Shoal::start_in(&dir, &["--innodb-buffer-pool-size=16M"]);
    let mut c = srv.conn();
    c.query_drop("CREATE DATABASE d").unwrap();
    c.query_drop("CREATE TABLE d.t (id BIGINT PRIMARY KEY, v VARCHAR(1000), KEY (v(20)))")
        .unwrap();

    // Fill with autocommit batches until one fails; every acknowledged batch is counted.
    let mut acked = 0u64;
    let err = loop {
        match c.query_drop(batch(acked)) {
            Ok(()) => acked += 50,
            Err(e) => break e,
        }
        assert!(acked < 1_000_000, "40 MB never filled up");
    };
    assert_eq!(code(&err), Some(1021), "the failed write: {err}");
    assert!(err.to_string().contains("Disk full"), "{err}");

    // The failed statement left nothing; reads and new connections go on.
    let count: u64 = c.query_first("SELECT COUNT(*) FROM d.t").unwrap().unwrap();
    assert_eq!(count, acked);
    let mut c2 = srv.conn();
    assert_eq!(c2.query_first::<u64, _>("SELECT 1").unwrap(), Some(1));
    // A transaction's COMMIT fails as a whole.
    c2.query_drop("BEGIN").unwrap();
    let mut txn_err = None;
    for k in 0..20 {
        if let Err(e) = c2.query_drop(batch(10_000_000 + k * 50)) {
            txn_err = Some(e);
            break;
        }
    }
    let txn_err = match txn_err {
        Some(e) => e,
        None => c2.query_drop("COMMIT").unwrap_err(),
    };
    assert_eq!(code(&txn_err), Some(1021), "{txn_err}");
    let _ = c2.query_drop("ROLLBACK");
    let big: u64 = c2
        .query_first("SELECT COUNT(*) FROM d.t WHERE id >= 10000000")
        .unwrap()
        .unwrap();
    assert_eq!(big, 0, "a transaction that failed for disk full left rows");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !srv.stderr().contains("disk full") {
        assert!(Instant::now() < deadline, "no disk-full line in the log");
        std::thread::sleep(Duration::from_millis(50));
    }

    // Space freed: writes resume without a restart (RocksDB recovers from ENOSPC by itself).
    fs.resize(200);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match c.query_drop(batch(acked)) {
            Ok(()) => {
                acked += 50;
                break;
            }
            Err(e) => {
                assert_eq!(code(&e), Some(1021), "{e}");
                assert!(Instant::now() < deadline, "writes did not resume: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    c.query_drop(batch(acked)).unwrap();
    acked += 50;

    // Everything acknowledged survives a kill -9.
    drop((c, c2));
    srv.stop_with(libc::SIGKILL);
    let srv = Shoal::start_in(&dir, &["--innodb-buffer-pool-size=16M"]);
    let mut c = srv.conn();
    let (n, lo, hi): (u64, u64, u64) = c
        .query_first("SELECT COUNT(*), MIN(id), MAX(id) FROM d.t")
        .unwrap()
        .unwrap();
    assert_eq!((n, lo, hi), (acked, 0, acked - 1));
    let rows: Vec<(u64, String)> = c.query("SELECT id, v FROM d.t").unwrap();
    let bad = rows.iter().filter(|(id, v)| *v != value(*id)).count();
    assert_eq!(bad, 0, "rows whose value changed");
    drop(c);
    drop(srv);
    drop(fs);
    let _ = std::fs::remove_dir_all(&dir);
}
