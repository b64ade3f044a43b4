//! What the integration tests of several crates share: ports nobody else was given, fresh temp
//! directories, children that die with the test process, and a private MariaDB to compare with.
//!
//! MariaDB is the oracle of the SQL suite (`crates/server/tests/sql_suite.rs`) and the reference
//! server of shoal-bench's tests. [`MariaDb::start`] runs `mariadbd` on a private datadir, socket
//! and port, never touching a system instance; it returns `None` (after saying why) where MariaDB
//! is not installed, so a machine without it skips those comparisons instead of failing them.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A TCP port on 127.0.0.1 nothing listens on: bind :0, read it, release it. The kernel may hand
/// a released port to the next caller, and tests run on several threads, so a port this process
/// already gave out is never given again.
pub fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let p = TcpListener::bind("127.0.0.1:0")
            .expect("bind 127.0.0.1:0")
            .local_addr()
            .expect("local addr")
            .port();
        if !given.contains(&p) {
            given.push(p);
            return p;
        }
    }
}

/// A fresh, empty directory under the system's temp dir, unique per process and call.
pub fn tmpdir(prefix: &str, name: &str) -> PathBuf {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "{prefix}-{}-{}-{name}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// The child is killed when the test process goes away without cleaning up.
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: prctl in the child before exec; no allocation.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// The MariaDB server binary, if installed.
pub fn mariadbd() -> Option<PathBuf> {
    [
        "/usr/sbin/mariadbd",
        "/usr/bin/mariadbd",
        "/usr/local/bin/mariadbd",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

/// How to start a private MariaDB.
#[derive(Debug, Clone, Default)]
pub struct MariaDbOptions {
    /// Run `mariadb-install-db` first: system tables and accounts exist (root@localhost, empty
    /// password), so CREATE USER and GRANT work. Without it the server runs with
    /// `--skip-grant-tables` on an empty datadir (faster; enough for benchmarks).
    pub install: bool,
    /// More `mariadbd` options.
    pub extra: Vec<String>,
}

/// A private MariaDB process, killed and its directory removed on drop.
pub struct MariaDb {
    pub child: Child,
    pub dir: PathBuf,
    pub port: u16,
}

impl MariaDb {
    /// The `mariadbd` command line for a private server in `dir` on `port`.
    pub fn command(bin: &Path, dir: &Path, port: u16, o: &MariaDbOptions) -> Command {
        // Its private temporary directory (below) must exist before it starts.
        if let Err(e) = std::fs::create_dir_all(dir.join("tmp")) {
            eprintln!("cannot create {}: {e}", dir.join("tmp").display());
        }
        let mut cmd = Command::new(bin);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", dir.join("data").display()))
            .arg(format!("--socket={}", dir.join("sock").display()))
            .arg(format!("--pid-file={}", dir.join("pid").display()))
            .arg(format!("--log-error={}", dir.join("err.log").display()))
            // A private temporary directory: servers and installs running side by side never
            // meet in /tmp (an install once failed deleting its temporary table there).
            .arg(format!("--tmpdir={}", dir.join("tmp").display()))
            .arg(format!("--port={port}"))
            .args([
                "--bind-address=127.0.0.1",
                "--user=root",
                "--skip-log-bin",
                "--innodb-buffer-pool-size=32M",
                "--innodb-log-file-size=16M",
                "--innodb-flush-log-at-trx-commit=2",
                "--max-prepared-stmt-count=1048576",
                "--performance-schema=OFF",
            ]);
        if !o.install {
            cmd.arg("--skip-grant-tables");
        }
        cmd.args(&o.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        die_with_parent(&mut cmd);
        cmd
    }

    /// Starts a private MariaDB and waits until it accepts connections (a few tries on fresh
    /// ports); `None`, after printing why, if MariaDB is not installed.
    pub fn start(o: &MariaDbOptions) -> Option<MariaDb> {
        let Some(bin) = mariadbd() else {
            eprintln!("SKIPPED: mariadbd is not installed (apt-get install mariadb-server)");
            return None;
        };
        let dir = tmpdir("shoal-mariadb", "server");
        let data = dir.join("data");
        std::fs::create_dir_all(&data).expect("datadir");
        std::fs::create_dir_all(dir.join("tmp")).expect("tmpdir for the install");
        if o.install {
            let out = Command::new("mariadb-install-db")
                .args([
                    "--no-defaults",
                    "--user=root",
                    "--auth-root-authentication-method=normal",
                    "--skip-test-db",
                ])
                .arg(format!("--datadir={}", data.display()))
                .arg(format!("--tmpdir={}", dir.join("tmp").display()))
                .output()
                .expect("run mariadb-install-db");
            assert!(
                out.status.success(),
                "mariadb-install-db failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        for _attempt in 0..5 {
            let port = free_port();
            let mut s = MariaDb {
                child: MariaDb::command(&bin, &dir, port, o)
                    .spawn()
                    .expect("spawn mariadbd"),
                dir: dir.clone(),
                port,
            };
            if s.wait_ready(Duration::from_secs(60)) {
                return Some(s);
            }
            eprintln!(
                "mariadbd did not start on port {port}, retrying:\n{}",
                s.log()
            );
            let _ = s.child.kill();
            let _ = s.child.wait();
            std::mem::forget(s);
        }
        panic!("could not start mariadbd in {}", dir.display());
    }

    /// Waits until the server accepts a TCP connection and answers the MariaDB CLI's
    /// `SELECT 1`; `false` if it exits or `limit` passes.
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

    /// Runs SQL with the mariadb CLI as root: tab-separated output, `None` if it failed.
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

    /// Runs SQL with the mariadb CLI; panics if it fails.
    pub fn sql(&self, q: &str) -> String {
        self.try_sql(q)
            .unwrap_or_else(|| panic!("SQL failed on MariaDB: {q}\n{}", self.log()))
    }

    /// The server's error log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("err.log")).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
