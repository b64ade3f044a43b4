//! Shared fuzz harness: configuration from the environment, the in-process server with a real
//! table engine, a panic catcher, a watchdog for slow and hung inputs, RSS sampling, and the
//! checks every target applies to what the session answers.
//!
//! Environment (all optional):
//! * `SHOAL_FUZZ_SEED`: seed of the run (default fixed, so the suite's short run is stable).
//! * `SHOAL_FUZZ_ITERS`: inputs to run (default: the target's short-run size).
//! * `SHOAL_FUZZ_SLOW_MS`: an input running longer is reported as slow and killed with KILL
//!   QUERY (default 2000).
//! * `SHOAL_FUZZ_HANG_MS`: an input still running this long after it started is a hang: the
//!   process prints it and exits with status 86 (default 30000).
//! * `SHOAL_FUZZ_LAST`: a file that always holds the input being run (for crashes that kill
//!   the process, such as a stack overflow).
//! * `SHOAL_FUZZ_RSS_GROWTH_MB`: allowed RSS growth from the end of the warm-up (the first
//!   fifth of the inputs) to the end of the run (default 256).
//! * `SHOAL_FUZZ_SUMMARY`: a file to append the run's one-line summary to.
//! * `SHOAL_FUZZ_DIR`: where the table engine's data directories go (default `/dev/shm` when
//!   it exists, else the temp dir).
//! * `SHOAL_FUZZ_DUMP`: print every input with its outcome and time (generator tuning).
//! * `SHOAL_FUZZ_RSS_TRACE`: print the RSS every 20000 inputs.
#![allow(dead_code, reason = "each target uses a different subset")]

pub mod sqlgen;

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use shoal_proto::{Backend, ColumnFlags, ErrorInfo, LoginRequest, Response, Value as PValue};
use shoal_session::{ConnectionControl, Server, Session};

/// Run parameters.
#[derive(Debug, Clone)]
pub struct Config {
    pub seed: u64,
    pub iters: u64,
    pub slow: Duration,
    pub hang: Duration,
    pub last_input: Option<PathBuf>,
    pub rss_growth_kb: u64,
    pub summary: Option<PathBuf>,
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

impl Config {
    /// Reads the environment; `default_iters` is the suite's short run.
    pub fn from_env(default_iters: u64) -> Config {
        Config {
            seed: env_u64("SHOAL_FUZZ_SEED").unwrap_or(0x51DE_F022),
            iters: env_u64("SHOAL_FUZZ_ITERS").unwrap_or(default_iters),
            slow: Duration::from_millis(env_u64("SHOAL_FUZZ_SLOW_MS").unwrap_or(2000)),
            hang: Duration::from_millis(env_u64("SHOAL_FUZZ_HANG_MS").unwrap_or(30_000)),
            last_input: std::env::var_os("SHOAL_FUZZ_LAST").map(PathBuf::from),
            rss_growth_kb: env_u64("SHOAL_FUZZ_RSS_GROWTH_MB").unwrap_or(256) * 1024,
            summary: std::env::var_os("SHOAL_FUZZ_SUMMARY").map(PathBuf::from),
        }
    }
}

/// Resident set size of this process, in KiB (0 where /proc is missing), after giving freed
/// heap memory back to the system (glibc keeps it otherwise, and a burst of large statements
/// would look like a leak).
pub fn rss_kb() -> u64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator's arenas.
    unsafe {
        libc::malloc_trim(0);
    }
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// RSS bookkeeping over a run: start, after warm-up, peak, end.
#[derive(Debug, Default, Clone, Copy)]
pub struct Rss {
    pub start: u64,
    pub warm: u64,
    pub peak: u64,
    pub last: u64,
}

impl Rss {
    pub fn new() -> Rss {
        let r = rss_kb();
        Rss {
            start: r,
            warm: 0,
            peak: r,
            last: r,
        }
    }

    /// Samples every 500 inputs; the warm-up mark is the first sample after a fifth of the run.
    pub fn sample(&mut self, done: u64, total: u64) {
        if !done.is_multiple_of(500) {
            return;
        }
        let r = rss_kb();
        self.peak = self.peak.max(r);
        self.last = r;
        if self.warm == 0 && done >= total / 5 {
            self.warm = r;
        }
        if done.is_multiple_of(20_000) && std::env::var_os("SHOAL_FUZZ_RSS_TRACE").is_some() {
            println!("RSS {done} {r} kB");
        }
    }

    pub fn finish(&mut self) {
        let r = rss_kb();
        self.peak = self.peak.max(r);
        self.last = r;
        if self.warm == 0 {
            self.warm = self.start;
        }
    }

    /// Growth from the warm-up mark to the end, KiB.
    pub fn growth(&self) -> u64 {
        self.last.saturating_sub(self.warm)
    }
}

// ----- panics ------------------------------------------------------------------------------------

static PANIC_MSG: Mutex<Option<String>> = Mutex::new(None);

/// Installs (once) a panic hook that remembers the message and location of the last panic and
/// then prints it as usual.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = match info.payload().downcast_ref::<&str>() {
                Some(s) => s.to_string(),
                None => info
                    .payload()
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_else(|| "non-string panic".into()),
            };
            let loc = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            *PANIC_MSG.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(format!("{msg} at {loc}"));
            default(info);
        }));
    });
}

/// Message and location of the last panic (taken).
pub fn take_panic() -> String {
    PANIC_MSG
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
        .unwrap_or_else(|| "panic".into())
}

// ----- server ------------------------------------------------------------------------------------

/// A `ConnectionControl` that records KILL CONNECTION (the network layer would close).
#[derive(Default)]
pub struct Ctl(pub AtomicBool);

impl ConnectionControl for Ctl {
    fn shutdown(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A server with a real table engine in a fresh temp directory (removed on drop).
pub struct Rig {
    pub server: Arc<Server>,
    pub dir: PathBuf,
}

static RIG_SERIAL: AtomicU32 = AtomicU32::new(0);

impl Rig {
    pub fn new(tag: &str) -> Rig {
        // tmpfs when there is one: DDL syncs the catalog, and durability is not under test.
        let base = std::env::var_os("SHOAL_FUZZ_DIR")
            .map(PathBuf::from)
            .or_else(|| {
                let shm = PathBuf::from("/dev/shm");
                shm.is_dir().then_some(shm)
            })
            .unwrap_or_else(std::env::temp_dir);
        sweep_dead(&base);
        let dir = base.join(format!(
            "shoal-fuzz-{tag}-{}-{}",
            std::process::id(),
            RIG_SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let mut cfg = shoal_exec::EngineConfig::new(&dir);
        cfg.direct_reads = false;
        cfg.block_cache_bytes = 8 << 20;
        cfg.write_buffer_bytes = 4 << 20;
        cfg.flush_log_at_trx_commit = 2;
        cfg.lock_wait_timeout = Duration::from_secs(1);
        let engine = shoal_exec::TableEngine::open(cfg).expect("table engine");
        let server = Server::new();
        // The development default: a fresh datadir's root has no password.
        server.accounts().set_initialize_insecure(true);
        server.set_table_engine(engine);
        // Values up to 4 MiB (REPEAT, CONCAT, long data): RSS stays comparable between runs.
        server
            .set_startup_option("max_allowed_packet", "4M")
            .expect("max_allowed_packet");
        server.create_account("fuzz", "%", "pw");
        Rig { server, dir }
    }

    /// Opens a session and logs in as root (no password) in the fuzz database, if it exists.
    pub fn root_session(&self) -> (Session, Arc<Ctl>) {
        let ctl = Arc::new(Ctl::default());
        let id = self.server.next_connection_id();
        let mut s = self
            .server
            .open_session(id, "127.0.0.1:4000".into(), ctl.clone());
        let scramble = [7u8; 20];
        s.authenticate(&LoginRequest {
            user: "root",
            host: "127.0.0.1",
            scramble: &scramble,
            credentials: shoal_proto::Credentials::Native(&[]),
            database: None,
            interactive: false,
            attributes: &[],
            tls: false,
            secure_transport: false,
        })
        .expect("root login");
        (s, ctl)
    }

    /// (Re)creates the fuzz schema and restores the globals generated statements may change.
    pub fn setup_schema(&self) {
        // Globals first, then a fresh session (sessions take the globals when they open).
        let (mut s, _) = self.root_session();
        for sql in sqlgen::RESTORE_GLOBALS {
            if let Some(Err(e)) = run_query(&mut s, sql, false).first() {
                panic!("restoring a global failed: {sql}: {e}");
            }
        }
        s.disconnect();
        let (mut s, _) = self.root_session();
        for sql in sqlgen::SETUP {
            let t = Instant::now();
            let r = run_query(&mut s, sql, false);
            if std::env::var_os("SHOAL_FUZZ_DUMP").is_some() {
                println!("SETUP {:?} {sql}", t.elapsed());
            }
            if let Some(Err(e)) = r.first() {
                panic!("setup statement failed: {sql}: {e}");
            }
        }
        s.disconnect();
    }
}

/// Removes data directories of fuzz processes that are gone (a hang or a crash exits without
/// dropping its rig): `shoal-fuzz-<tag>-<pid>-<n>` whose pid has no /proc entry.
fn sweep_dead(base: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("shoal-fuzz-") else {
            continue;
        };
        let mut parts = rest.rsplitn(3, '-');
        let (_n, pid) = (parts.next(), parts.next());
        if let Some(pid) = pid.and_then(|p| p.parse::<u32>().ok()) {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One COM_QUERY as the protocol layer runs it.
pub fn run_query(s: &mut Session, sql: &str, multi: bool) -> Vec<Result<Response, ErrorInfo>> {
    s.command_begin(0x03);
    let r = s.query(sql, multi);
    s.command_end();
    r
}

// ----- watchdog ----------------------------------------------------------------------------------

struct WatchState {
    /// Milliseconds since `epoch` when the running input started; 0 when idle.
    started_ms: AtomicU64,
    /// Connection to KILL QUERY when the input is slow.
    conn: AtomicU32,
    killed: AtomicBool,
    input: Mutex<String>,
    stop: AtomicBool,
    epoch: Instant,
    slow: Duration,
    hang: Duration,
    target: &'static str,
    server: Mutex<Arc<Server>>,
}

/// Watches the running input: past `slow` it sends KILL QUERY to the input's connection (once),
/// past `hang` it prints the input and exits the process with status 86.
pub struct Watchdog {
    st: Arc<WatchState>,
    thread: Option<std::thread::JoinHandle<()>>,
    last_file: Option<std::fs::File>,
    began: Instant,
}

impl Watchdog {
    pub fn start(target: &'static str, cfg: &Config, server: Arc<Server>) -> Watchdog {
        let st = Arc::new(WatchState {
            started_ms: AtomicU64::new(0),
            conn: AtomicU32::new(0),
            killed: AtomicBool::new(false),
            input: Mutex::new(String::new()),
            stop: AtomicBool::new(false),
            epoch: Instant::now(),
            slow: cfg.slow,
            hang: cfg.hang,
            target,
            server: Mutex::new(server),
        });
        let w = st.clone();
        let thread = std::thread::spawn(move || {
            while !w.stop.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(25));
                let started = w.started_ms.load(Ordering::Acquire);
                if started == 0 {
                    continue;
                }
                let now = w.epoch.elapsed().as_millis() as u64;
                let ran = Duration::from_millis(now.saturating_sub(started));
                if ran >= w.slow && !w.killed.swap(true, Ordering::AcqRel) {
                    let srv = w
                        .server
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clone();
                    let _ = srv.kill(w.conn.load(Ordering::Acquire), true, "root", true);
                }
                if ran >= w.hang {
                    let input = w.input.lock().unwrap_or_else(PoisonError::into_inner);
                    eprintln!(
                        "FUZZ HANG target={} after {:?}: input {:?}",
                        w.target, ran, *input
                    );
                    std::process::exit(86);
                }
            }
        });
        let last_file = cfg.last_input.as_ref().and_then(|p| {
            std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .open(p)
                .ok()
        });
        Watchdog {
            st,
            thread: Some(thread),
            last_file,
            began: Instant::now(),
        }
    }

    /// The server whose connections a slow input is killed on changes (after a panic the
    /// targets build a fresh one).
    pub fn set_server(&self, server: &Arc<Server>) {
        *self
            .st
            .server
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = server.clone();
    }

    /// An input starts on connection `conn`.
    pub fn begin(&mut self, conn: u32, input: &str) {
        if let Some(f) = self.last_file.as_mut() {
            use std::io::Seek;
            let _ = f.set_len(0);
            let _ = f.seek(std::io::SeekFrom::Start(0));
            let _ = f.write_all(input.as_bytes());
        }
        {
            let mut i = self.st.input.lock().unwrap_or_else(PoisonError::into_inner);
            i.clear();
            i.push_str(input);
        }
        self.st.conn.store(conn, Ordering::Release);
        self.st.killed.store(false, Ordering::Release);
        let now = (self.st.epoch.elapsed().as_millis() as u64).max(1);
        self.st.started_ms.store(now, Ordering::Release);
        self.began = Instant::now();
    }

    /// The input finished; returns how long it ran (to the microsecond).
    pub fn end_precise(&mut self) -> Duration {
        let took = self.began.elapsed();
        self.st.started_ms.store(0, Ordering::Release);
        took
    }

    /// The input finished; returns how long it ran.
    pub fn end(&mut self) -> Duration {
        let started = self.st.started_ms.swap(0, Ordering::AcqRel);
        let now = self.st.epoch.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(started))
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.st.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

// ----- checks ------------------------------------------------------------------------------------

/// What a run found.
#[derive(Debug, Default)]
pub struct Findings {
    /// (input, panic message).
    pub crashes: Vec<(String, String)>,
    /// (input, milliseconds).
    pub slow: Vec<(String, u128)>,
    /// (input, what is wrong): errors that are not MySQL errors, malformed replies, ...
    pub violations: Vec<(String, String)>,
    /// Outcomes: statements answered with rows / OK, and errors by code.
    pub rows: u64,
    pub oks: u64,
    pub errors: std::collections::BTreeMap<u16, u64>,
}

impl Findings {
    pub fn crash(&mut self, input: &str, msg: String) {
        eprintln!("FUZZ CRASH: {msg}\n  input: {input:?}");
        self.crashes.push((input.to_string(), msg));
    }

    pub fn violation(&mut self, input: &str, what: String) {
        if self.violations.len() < 1000 {
            eprintln!("FUZZ VIOLATION: {what}\n  input: {input:?}");
            self.violations.push((input.to_string(), what));
        }
    }

    /// Counts one statement's outcome.
    pub fn outcome(&mut self, r: &Result<Response, ErrorInfo>) {
        match r {
            Ok(Response::Rows(_)) => self.rows += 1,
            Ok(Response::Ok(_)) => self.oks += 1,
            Err(e) => *self.errors.entry(e.code).or_default() += 1,
        }
    }

    /// The most frequent error codes, `code:count` by decreasing count.
    pub fn top_errors(&self, n: usize) -> String {
        let mut v: Vec<(u16, u64)> = self.errors.iter().map(|(c, n)| (*c, *n)).collect();
        v.sort_by_key(|x| std::cmp::Reverse(x.1));
        v.iter()
            .take(n)
            .map(|(c, n)| format!("{c}:{n}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn slow(&mut self, input: &str, d: Duration) {
        eprintln!("FUZZ SLOW ({} ms): {input:?}", d.as_millis());
        self.slow.push((input.to_string(), d.as_millis()));
    }
}

/// With every session closed, the server's gauges must be back at zero: connections, running
/// commands, prepared statements (a leak there ends in ER 1461 for everybody).
pub fn check_idle(server: &Server, when: &str, f: &mut Findings) {
    let status = server.global_status();
    for name in [
        "Threads_connected",
        "Threads_running",
        "Prepared_stmt_count",
    ] {
        let v = status
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or("?");
        if v != "0" {
            f.violation(when, format!("{name} is {v} with no session open"));
        }
    }
}

/// An error crossing the protocol seam must be a MySQL error: a server error number, a
/// five-character SQLSTATE of digits and upper-case letters, a message, and never an
/// "internal error".
pub fn check_error(e: &ErrorInfo) -> Result<(), String> {
    if !(1000..=4999).contains(&e.code) {
        return Err(format!(
            "error code {} outside MySQL's server range",
            e.code
        ));
    }
    if !e
        .state
        .iter()
        .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
    {
        return Err(format!("bad SQLSTATE {:?}", e.state));
    }
    if &e.state == b"00000" {
        return Err("SQLSTATE 00000 on an error".into());
    }
    if e.message.is_empty() {
        return Err(format!("error {} without a message", e.code));
    }
    if e.message.contains("internal error") {
        return Err(format!("internal error: {}", e.message));
    }
    Ok(())
}

/// A response must be encodable in both protocols: rows as wide as the columns, every value
/// representable by its column type.
pub fn check_response(r: &Response) -> Result<(), String> {
    let Response::Rows(rs) = r else {
        return Ok(());
    };
    let mut buf = Vec::new();
    for (i, row) in rs.rows.iter().enumerate() {
        if row.len() != rs.columns.len() {
            return Err(format!(
                "row {i} has {} values for {} columns",
                row.len(),
                rs.columns.len()
            ));
        }
        for (v, c) in row.iter().zip(rs.columns.iter()) {
            let _ = shoal_proto::values::text_of(v, c.column_type, c.decimals);
            if matches!(v, PValue::NULL) {
                continue;
            }
            buf.clear();
            let unsigned = c.flags.contains(ColumnFlags::UNSIGNED_FLAG);
            if let Err(e) =
                shoal_proto::values::encode_binary(&mut buf, v, c.column_type, unsigned, c.decimals)
            {
                return Err(format!(
                    "column '{}' ({:?}) cannot encode {v:?}: {e}",
                    c.name, c.column_type
                ));
            }
        }
    }
    Ok(())
}

/// Prints the run's summary line (and appends it to `SHOAL_FUZZ_SUMMARY`).
pub fn summary(target: &str, cfg: &Config, done: u64, elapsed: Duration, f: &Findings, rss: &Rss) {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let line = format!(
        "FUZZ target={target} seed={} inputs={done} secs={secs:.1} rate={:.0}/s crashes={} \
         violations={} slow={} rss_start_kb={} rss_warm_kb={} rss_peak_kb={} rss_end_kb={} \
         rss_growth_kb={}",
        cfg.seed,
        done as f64 / secs,
        f.crashes.len(),
        f.violations.len(),
        f.slow.len(),
        rss.start,
        rss.warm,
        rss.peak,
        rss.last,
        rss.growth()
    );
    println!("{line}");
    println!(
        "FUZZ outcomes target={target}: rows={} ok={} errors={} top_errors={}",
        f.rows,
        f.oks,
        f.errors.values().sum::<u64>(),
        f.top_errors(15)
    );
    if let Some(p) = &cfg.summary {
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
        {
            let _ = writeln!(file, "{line}");
        }
    }
}

/// Fails the test on crashes, violations or an RSS leak.
pub fn assert_clean(target: &str, cfg: &Config, f: &Findings, rss: &Rss) {
    let mut problems = Vec::new();
    for (input, msg) in f.crashes.iter().take(5) {
        problems.push(format!("crash: {msg}\n    input: {input:?}"));
    }
    for (input, what) in f.violations.iter().take(5) {
        problems.push(format!("violation: {what}\n    input: {input:?}"));
    }
    if rss.growth() > cfg.rss_growth_kb {
        problems.push(format!(
            "RSS grew by {} KiB after warm-up (limit {} KiB): a leak?",
            rss.growth(),
            cfg.rss_growth_kb
        ));
    }
    assert!(
        problems.is_empty(),
        "{target} fuzz (seed {}): {} crashes, {} violations\n{}",
        cfg.seed,
        f.crashes.len(),
        f.violations.len(),
        problems.join("\n")
    );
}

/// Runs `f` on a thread with a pool worker's stack (2 MiB, std's default for spawned threads:
/// what the server's workers get), so that deep recursion fails as it would in the server.
pub fn on_worker_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .name("fuzz-worker".into())
        .stack_size(2 << 20)
        .spawn(f)
        .expect("spawn")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
}
