//! What the integration tests share: private server processes (MariaDB with the test options,
//! or any server the test spawns), SQL through the `mariadb` CLI, temporary directories.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use shoal_testkit::{die_with_parent, free_port, tmpdir};

/// A private server process, killed and its directory removed on drop.
pub struct Server {
    pub child: Child,
    pub dir: PathBuf,
    pub port: u16,
}

impl Server {
    /// Spawns `cmd` (already given `port` and `dir`), waits until it answers `SELECT 1` and
    /// creates the `sbtest` schema; panics, naming `what`, if it exits or never answers.
    pub fn spawn(mut cmd: Command, dir: PathBuf, port: u16, what: &str) -> Server {
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        die_with_parent(&mut cmd);
        let mut s = Server {
            child: cmd.spawn().unwrap_or_else(|e| panic!("spawn {what}: {e}")),
            dir,
            port,
        };
        assert!(
            s.wait_ready(Duration::from_secs(60)),
            "{what} did not start"
        );
        s.sql("CREATE DATABASE IF NOT EXISTS sbtest");
        s
    }

    /// A private MariaDB (private datadir, free port, private socket, `--skip-grant-tables`)
    /// with the tests' options plus `extra`, ready with an `sbtest` schema; `None` (after
    /// printing why) if MariaDB is not installed.
    pub fn mariadb(extra: &[&str]) -> Option<Server> {
        let Some(bin) = shoal_testkit::mariadbd() else {
            eprintln!("SKIPPED: mariadbd is not installed (apt-get install mariadb-server)");
            return None;
        };
        let dir = tmpdir("shoal-bench-test", "mariadb");
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let opts = shoal_testkit::MariaDbOptions {
            install: false,
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        for _attempt in 0..5 {
            let port = free_port();
            let cmd = shoal_testkit::MariaDb::command(&bin, &dir, port, &opts);
            let mut s = Server {
                child: { cmd }.spawn().expect("spawn mariadbd"),
                dir: dir.clone(),
                port,
            };
            if s.wait_ready(Duration::from_secs(60)) {
                s.sql("CREATE DATABASE IF NOT EXISTS sbtest");
                return Some(s);
            }
            let log = std::fs::read_to_string(dir.join("err.log")).unwrap_or_default();
            eprintln!("mariadbd did not start on port {port}, retrying:\n{log}");
            let _ = s.child.kill();
            let _ = s.child.wait();
            std::mem::forget(s);
        }
        panic!("could not start mariadbd");
    }

    /// Waits until the server answers `SELECT 1`; `false` if it exits or `limit` passes.
    pub fn wait_ready(&mut self, limit: Duration) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
                && self.try_sql("SELECT 1").is_some()
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// Runs SQL with the mariadb CLI: tab-separated output, `None` if it failed.
    pub fn try_sql(&self, q: &str) -> Option<String> {
        let out = Command::new("mariadb")
            .args(["-h127.0.0.1", "-uroot", "-N", "-B"])
            .arg(format!("-P{}", self.port))
            .arg("-e")
            .arg(q)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs SQL with the mariadb CLI, returning tab-separated output; panics if it fails.
    pub fn sql(&self, q: &str) -> String {
        self.try_sql(q).unwrap_or_else(|| panic!("SQL failed: {q}"))
    }

    /// shoal-bench's connection options for this server's `sbtest`.
    pub fn conn_args(&self) -> Vec<String> {
        vec![
            format!("--mysql-port={}", self.port),
            "--mysql-host=127.0.0.1".into(),
            "--mysql-user=root".into(),
            "--mysql-db=sbtest".into(),
        ]
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
