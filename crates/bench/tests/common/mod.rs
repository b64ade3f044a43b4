//! What the integration tests share: private server processes (MariaDB with the test options,
//! or any server the test spawns), SQL through the `mariadb` CLI, temporary directories.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// A fresh, empty directory under the system's temp dir, unique per process and call.
pub fn tmpdir(prefix: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "{prefix}-{}-{}-{name}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A free port: bind :0, read it, release it (a tiny race with other processes;
/// [`Server::mariadb`] retries). Ports this process already gave out are not given again: the
/// kernel may hand a released port to the next caller on another test thread.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let p = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if !given.contains(&p) {
            given.push(p);
            return p;
        }
    }
}

/// The child is killed when the test process goes away without dropping its [`Server`].
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

fn mariadbd() -> Option<PathBuf> {
    [
        "/usr/sbin/mariadbd",
        "/usr/bin/mariadbd",
        "/usr/local/bin/mariadbd",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| Path::new(p).exists())
}

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
        let Some(bin) = mariadbd() else {
            eprintln!("SKIPPED: mariadbd is not installed (apt-get install mariadb-server)");
            return None;
        };
        let dir = tmpdir("shoal-bench-test", "mariadb");
        std::fs::create_dir_all(dir.join("data")).unwrap();
        for _attempt in 0..5 {
            let port = free_port();
            let mut cmd = Command::new(&bin);
            cmd.arg("--no-defaults")
                .arg(format!("--datadir={}", dir.join("data").display()))
                .arg(format!("--socket={}", dir.join("sock").display()))
                .arg(format!("--pid-file={}", dir.join("pid").display()))
                .arg(format!("--log-error={}", dir.join("err.log").display()))
                .arg(format!("--port={port}"))
                .args([
                    "--bind-address=127.0.0.1",
                    "--user=root",
                    "--skip-grant-tables",
                    "--skip-log-bin",
                    "--innodb-buffer-pool-size=32M",
                    "--innodb-log-file-size=16M",
                    "--innodb-flush-log-at-trx-commit=2",
                    "--max-prepared-stmt-count=1048576",
                    "--performance-schema=OFF",
                ])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            die_with_parent(&mut cmd);
            let mut s = Server {
                child: cmd.spawn().expect("spawn mariadbd"),
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
