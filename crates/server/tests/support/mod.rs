//! Test support: start the real `shoal` binary on a free port with a temp datadir and socket,
//! stop it on drop; raw protocol helpers.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use shoal_testkit::free_port;

pub struct Shoal {
    pub port: u16,
    pub socket: PathBuf,
    pub dir: PathBuf,
    pub child: Option<Child>,
    pub log: PathBuf,
    /// Whether drop removes `dir` (servers from [`Shoal::start`]).
    pub owns_dir: bool,
    /// The server's own pid when `child` is a wrapper around it ([`Shoal::start_wrapped`]):
    /// signals go to the server, and the wrapper is waited for.
    pub server_pid: Option<u32>,
}

pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "shoal-test-{tag}-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

impl Shoal {
    /// Starts the server with extra arguments in a fresh temporary directory (removed on drop)
    /// and waits until it accepts connections.
    pub fn start(tag: &str, extra: &[&str]) -> Shoal {
        let mut s = Shoal::start_in(&temp_dir(tag), extra);
        s.owns_dir = true;
        s
    }

    /// Like [`Shoal::start`], with `configure` applied to the command before it is spawned
    /// (environment, resource limits: see [`limit_open_files`]).
    pub fn start_with(tag: &str, extra: &[&str], configure: impl Fn(&mut Command)) -> Shoal {
        let mut s = Shoal::start_in_with(&temp_dir(tag), extra, configure);
        s.owns_dir = true;
        s
    }

    /// Starts the server on the datadir inside `dir` (kept on drop, so a test can restart a
    /// server on the same data); socket and log are named after the port.
    pub fn start_in(dir: &Path, extra: &[&str]) -> Shoal {
        Shoal::launch(dir, &[], extra, |_| {})
    }

    /// [`Shoal::start_in`] with `configure` applied to the command before it is spawned.
    pub fn start_in_with(dir: &Path, extra: &[&str], configure: impl Fn(&mut Command)) -> Shoal {
        Shoal::launch(dir, &[], extra, configure)
    }

    /// [`Shoal::start_in`] under a wrapper program (`wrapper` is its command line, to which
    /// the server's command line is appended). The wrapper either becomes the server (`env
    /// VAR=value`, which execs it) or runs it as its direct child and exits when it exits
    /// (`strace -f -o FILE`).
    pub fn start_wrapped(dir: &Path, wrapper: &[String], extra: &[&str]) -> Shoal {
        Shoal::launch(dir, wrapper, extra, |_| {})
    }

    /// Starts the server; a port taken by another process between [`free_port`] and the
    /// server's bind (tests of two suites running at once) is retried on a fresh one.
    fn launch(
        dir: &Path,
        wrapper: &[String],
        extra: &[&str],
        configure: impl Fn(&mut Command),
    ) -> Shoal {
        for attempt in 1.. {
            match Shoal::launch_once(dir, wrapper, extra, &configure) {
                Ok(s) => return s,
                Err(log) if attempt < 5 && log.contains("in use") => {
                    eprintln!("shoal could not bind (attempt {attempt}), retrying: {log}");
                }
                Err(log) => panic!("shoal exited early: {log}"),
            }
        }
        unreachable!()
    }

    fn launch_once(
        dir: &Path,
        wrapper: &[String],
        extra: &[&str],
        configure: &dyn Fn(&mut Command),
    ) -> Result<Shoal, String> {
        let port = free_port();
        let socket = dir.join(format!("s{port}.sock"));
        let log = dir.join(format!("stderr-{port}.log"));
        let mut args: Vec<String> = vec![
            format!("--port={port}"),
            format!("--socket={}", socket.display()),
            format!("--datadir={}", dir.join("data").display()),
            // The documented development default: root without a password (a test that wants
            // the generated one passes --skip-initialize-insecure, which comes later and wins).
            "--initialize-insecure".to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        // The readiness line below is logged at info by the `shoal` target: keep it whatever
        // filter the caller set.
        let filter = match std::env::var("SHOAL_LOG") {
            Ok(f) if !f.is_empty() => format!("{f},shoal=info"),
            _ => "info".to_string(),
        };
        let mut cmd = match wrapper.split_first() {
            Some((program, wargs)) => {
                let mut c = Command::new(program);
                c.args(wargs).arg(shoal_binary());
                c
            }
            None => Command::new(shoal_binary()),
        };
        cmd.args(&args)
            .env("SHOAL_LOG", filter)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        configure(&mut cmd);
        let child = cmd.spawn().expect("spawn shoal");
        let mut s = Shoal {
            port,
            socket,
            dir: dir.to_path_buf(),
            child: Some(child),
            log,
            owns_dir: false,
            server_pid: None,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            // Ready when *this* child says so: it logs that after binding every listener, so
            // connections queue from then on. No probe connection: a connect that never logs in
            // would count as an interrupted handshake (max_connect_errors) and could reach
            // another process that took the port.
            if s.stderr().contains("ready for connections") {
                break;
            }
            if let Some(st) = s.child.as_mut().unwrap().try_wait().unwrap() {
                s.child = None;
                return Err(format!("({st}) {}", s.stderr()));
            }
            assert!(
                Instant::now() < deadline,
                "shoal did not start: {}",
                s.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let exe = |pid: u32| std::fs::canonicalize(format!("/proc/{pid}/exe")).ok();
        let shoal = std::fs::canonicalize(env!("CARGO_BIN_EXE_shoal")).ok();
        let pid = s.child.as_ref().unwrap().id();
        if !wrapper.is_empty() && exe(pid) != shoal {
            let children =
                std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
            s.server_pid = children
                .split_whitespace()
                .next()
                .map(|p| p.parse().unwrap());
            assert!(s.server_pid.is_some(), "wrapper {wrapper:?} has no child");
        }
        Ok(s)
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM and wait (bounded); returns the exit status code.
    pub fn stop(&mut self) -> Option<i32> {
        self.stop_with(libc::SIGTERM)
    }

    /// Sends `signal` (SIGTERM, or SIGKILL for crash tests) and waits, bounded (then SIGKILL);
    /// returns the exit status code.
    pub fn stop_with(&mut self, signal: i32) -> Option<i32> {
        let mut child = self.child.take()?;
        let pid = self.server_pid.unwrap_or(child.id());
        unsafe {
            libc::kill(pid as i32, signal);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                return st.code();
            }
            if Instant::now() > deadline {
                unsafe {
                    libc::kill(pid as i32, libc::SIGKILL);
                }
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A connection with the default options.
    pub fn conn(&self) -> mysql::Conn {
        mysql::Conn::new(self.mysql_opts()).expect("connect to shoal")
    }

    /// Client options for root over TCP.
    pub fn mysql_opts(&self) -> mysql::OptsBuilder {
        root_over_tcp(self.port)
    }
}

/// Client options for `root` (no password) on 127.0.0.1:`port`, over TCP even where the
/// driver would prefer the server's socket.
pub fn root_over_tcp(port: u16) -> mysql::OptsBuilder {
    mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some("root"))
        .prefer_socket(false)
}

/// A private MariaDB, the oracle of the tests that compare answers, started with shoal's
/// character set and collation (`utf8mb4`, `utf8mb4_general_ci`; MariaDB's own default is
/// latin1), and client options for its root. `install`: with system tables and accounts (see
/// `MariaDbOptions::install`). `None` when `mariadbd` is not installed (`MariaDb::start` says
/// SKIPPED); the process is killed when the returned `MariaDb` drops.
pub fn mariadb(install: bool) -> Option<(shoal_testkit::MariaDb, mysql::OptsBuilder)> {
    let m = shoal_testkit::MariaDb::start(&shoal_testkit::MariaDbOptions {
        install,
        extra: vec![
            "--character-set-server=utf8mb4".into(),
            "--collation-server=utf8mb4_general_ci".into(),
        ],
    })?;
    let opts = root_over_tcp(m.port);
    Some((m, opts))
}

impl Shoal {
    /// `Threadpool_recovered_events` of a running pool server: `None` when the server is not
    /// running, does not run the pool, or no connection can be had.
    pub fn recovered_events(&self) -> Option<u64> {
        use mysql::prelude::Queryable;
        self.child.as_ref()?;
        let opts = mysql::OptsBuilder::from_opts(self.mysql_opts())
            .tcp_connect_timeout(Some(Duration::from_secs(5)))
            .read_timeout(Some(Duration::from_secs(10)));
        let mut c = mysql::Conn::new(opts).ok()?;
        let row: Option<(String, String)> = c
            .query_first("SHOW GLOBAL STATUS LIKE 'Threadpool_recovered_events'")
            .ok()?;
        row?.1.parse().ok()
    }
}

impl Drop for Shoal {
    /// Stops the server; first checks that the pool's safety net never had to act (a lost
    /// wake-up: a bug, whatever the test was about).
    fn drop(&mut self) {
        let recovered = if std::thread::panicking() {
            None
        } else {
            self.recovered_events()
        };
        self.stop();
        if let Some(n) = recovered.filter(|&n| n > 0) {
            let log = self.stderr();
            if self.owns_dir {
                let _ = std::fs::remove_dir_all(&self.dir);
            }
            panic!("Threadpool_recovered_events = {n}: the pool lost readiness reports\n{log}");
        }
        if self.owns_dir {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The binary the tests start: `SHOAL_TEST_BINARY` when set (for instance an older build, to
/// see a new test fail on it), else the one cargo built.
pub fn shoal_binary() -> PathBuf {
    match std::env::var_os("SHOAL_TEST_BINARY") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_shoal")),
    }
}

/// Makes `cmd` start with `RLIMIT_NOFILE` = `n` (soft and hard: the server cannot raise it).
pub fn limit_open_files(cmd: &mut Command, n: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only setrlimit(2), async-signal-safe, runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A `/proc/PID/status` value in kB (`VmRSS`, `VmHWM`, ...).
pub fn proc_status_kb(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// CPU time (user + system) the process `pid` used so far.
pub fn cpu_time(pid: u32) -> Duration {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command name in parentheses: state is field 3, utime 14 and stime 15.
    let rest = &text[text.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_ascii_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no side effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_nanos(ticks * 1_000_000_000 / hz)
}

/// Runs the shoal binary with arguments to completion (bounded); (status, stdout, stderr).
pub fn run_shoal(args: &[&str]) -> (Option<i32>, String, String) {
    let mut child = Command::new(shoal_binary())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A raw protocol client.
pub struct Raw {
    pub s: TcpStream,
}

impl Raw {
    pub fn connect(port: u16) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Raw { s }
    }

    pub fn read_packet(&mut self) -> Option<(u8, Vec<u8>)> {
        let mut h = [0u8; 4];
        self.s.read_exact(&mut h).ok()?;
        let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
        let mut p = vec![0u8; len];
        self.s.read_exact(&mut p).ok()?;
        Some((h[3], p))
    }

    pub fn write_packet(&mut self, seq: u8, payload: &[u8]) -> std::io::Result<()> {
        let mut w = Vec::new();
        w.extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
        w.push(seq);
        w.extend_from_slice(payload);
        self.s.write_all(&w)
    }

    /// Connects and logs in as `user` (empty password), asserting the server's OK.
    pub fn logged_in(port: u16, user: &str) -> Raw {
        let mut r = Raw::connect(port);
        r.greeting();
        r.send_login(user);
        let (_, ok) = r.read_packet().expect("login reply");
        assert_eq!(
            ok[0],
            0,
            "login refused: {:?}",
            String::from_utf8_lossy(&ok)
        );
        r
    }

    /// Reads one text result set of a single-column, single-row query (no
    /// `CLIENT_DEPRECATE_EOF`): the row's value.
    pub fn single_value(&mut self) -> String {
        let (_, count) = self.read_packet().expect("column count");
        assert_eq!(count, [1], "{:?}", String::from_utf8_lossy(&count));
        self.read_packet().expect("column definition");
        assert_eq!(self.read_packet().expect("EOF").1[0], 0xFE);
        let (_, row) = self.read_packet().expect("row");
        assert_eq!(self.read_packet().expect("EOF").1[0], 0xFE);
        let len = row[0] as usize;
        String::from_utf8_lossy(&row[1..1 + len]).into_owned()
    }

    /// Reads the greeting, returns the 20-byte scramble.
    pub fn greeting(&mut self) -> Vec<u8> {
        let (seq, g) = self.read_packet().expect("greeting");
        assert_eq!(seq, 0);
        assert_eq!(g[0], 10, "not a HandshakeV10: {g:?}");
        let nul = g[1..].iter().position(|&b| b == 0).unwrap();
        let mut pos = 1 + nul + 1 + 4;
        let mut s = g[pos..pos + 8].to_vec();
        pos += 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
        s.extend_from_slice(&g[pos..pos + 12]);
        s
    }

    /// Sends a handshake response for `user` with an empty password.
    pub fn send_login(&mut self, user: &str) {
        let caps: u32 = 0x0200 | 0x8000 | 0x0008_0000 | 0x1 | 0x2000 | 0x0002_0000;
        let mut p = Vec::new();
        p.extend_from_slice(&caps.to_le_bytes());
        p.extend_from_slice(&(16u32 << 20).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&[0u8; 23]);
        p.extend_from_slice(user.as_bytes());
        p.push(0);
        p.push(0);
        p.extend_from_slice(b"mysql_native_password\0");
        self.write_packet(1, &p).unwrap();
    }
}

pub fn err_code(p: &[u8]) -> u16 {
    assert_eq!(
        p[0],
        0xFF,
        "not an ERR packet: {:?}",
        String::from_utf8_lossy(p)
    );
    u16::from_le_bytes([p[1], p[2]])
}

pub fn venv_python() -> Option<PathBuf> {
    let p = PathBuf::from("/var/tmp/shoal-venv/bin/python");
    if p.exists() {
        Some(p)
    } else {
        None
    }
}

/// A numeric `SHOW GLOBAL STATUS` value (panics if the variable is missing or not a number).
pub fn global_status(c: &mut mysql::Conn, name: &str) -> u64 {
    use mysql::prelude::Queryable;
    let row: Option<(String, String)> = c
        .query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
        .unwrap();
    let (_, v) = row.unwrap_or_else(|| panic!("no status variable {name}"));
    v.parse()
        .unwrap_or_else(|_| panic!("status {name} = {v:?} is not a number"))
}

/// Rewrites the catalog entry (JSON) of table `db.t` in a stopped server's datadir with
/// `edit`: how the tests make a datadir as an older build left it.
pub fn edit_catalog_entry(
    data: &Path,
    db: &str,
    t: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) {
    let rdb = rocksdb::DB::open_default(data.join("rocksdb")).unwrap();
    let mut key = vec![0x01, b'T'];
    key.extend_from_slice(db.as_bytes());
    key.push(0);
    key.extend_from_slice(t.as_bytes());
    let json = rdb.get(&key).unwrap().expect("catalog entry");
    let mut v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    edit(&mut v);
    rdb.put(&key, serde_json::to_vec(&v).unwrap()).unwrap();
}
