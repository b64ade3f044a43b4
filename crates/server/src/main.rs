//! The `shoal` server binary: options, logging, listeners, connection handling, shutdown.
//!
//! Startup: parse the command line and option files ([`shoal_server::options`]), apply every option through
//! `Server::set_startup_option` (unknown option or bad value: message and exit status 1), bind
//! the TCP listener, the Unix socket and the optional admin port ([`shoal_server::listener`]), then accept until
//! SIGTERM/SIGINT. Each accepted socket becomes a [`shoal_server::client::Client`] and is handed to the
//! connection handler (`pool-of-threads` by default, [`shoal_server::handler::pool`], or
//! `one-thread-per-connection`, [`shoal_server::handler::per_thread`]); admin-port
//! connections always get their own thread and are admitted above `max_connections`.
//!
//! Shutdown: stop accepting, remove the Unix socket, shut idle connections down (their threads
//! see EOF), let running commands finish for a grace period (those connections get
//! ER_SERVER_SHUTDOWN after their reply), then exit 0.

use shoal_server::{handler, listener, options};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shoal_session::Server;

static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    SIGNALLED.store(true, Ordering::SeqCst);
}

fn install_signal_handlers() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

fn fail(msg: impl std::fmt::Display) -> ! {
    tracing::error!("{msg}");
    eprintln!("shoal: [ERROR] {msg}");
    tracing::error!("Aborting");
    std::process::exit(1);
}

/// Opens the table engine on `datadir` with the `innodb_*` variables, plugs it into the server
/// (catalog, sessions, `Innodb_*` status rows, live `SET GLOBAL innodb_*`). A datadir locked
/// by another running server stops startup (exit 1).
fn open_tables(server: &Arc<Server>, datadir: &std::path::Path) {
    let mut cfg = shoal_exec::EngineConfig::new(datadir);
    cfg.block_cache_bytes = server.vars.get("innodb_buffer_pool_size").as_u64() as usize;
    cfg.flush_log_at_trx_commit = server.vars.get("innodb_flush_log_at_trx_commit").as_u64() as u8;
    cfg.direct_reads = server
        .vars
        .get("innodb_flush_method")
        .display()
        .eq_ignore_ascii_case("O_DIRECT");
    cfg.lock_wait_timeout =
        Duration::from_secs(server.vars.get("innodb_lock_wait_timeout").as_u64());
    let engine = match shoal_exec::TableEngine::open(cfg) {
        Ok(e) => e,
        Err(e) => {
            let text = e.to_string();
            if text.contains("lock") || text.contains("Resource temporarily unavailable") {
                fail(format!(
                    "datadir '{}' is in use by another shoal server (its LOCK file is held): {text}",
                    datadir.display()
                ));
            }
            fail(format!(
                "cannot open the table engine in '{}': {text}",
                datadir.display()
            ));
        }
    };
    engine
        .store()
        .set_deadlock_detect(server.vars.get("innodb_deadlock_detect").as_bool());
    server.set_table_engine(engine.clone());
    let status_engine = engine.clone();
    server.add_status_provider(Box::new(move |out| {
        for (name, v) in status_engine.store().status() {
            out.push((name.to_string(), v.to_string()));
        }
        for (name, v) in status_engine.table_locks().status() {
            out.push((name.to_string(), v.to_string()));
        }
    }));
    let live = engine;
    server.subscribe_variables(Box::new(move |name, value| match name {
        "innodb_flush_log_at_trx_commit" => live
            .store()
            .set_flush_log_at_trx_commit(value.as_u64() as u8),
        "innodb_lock_wait_timeout" => live
            .store()
            .set_lock_wait_timeout(Duration::from_secs(value.as_u64())),
        "innodb_buffer_pool_size" => live.store().set_block_cache_bytes(value.as_u64() as usize),
        "innodb_deadlock_detect" => live.store().set_deadlock_detect(value.as_bool()),
        _ => {}
    }));
}

/// File descriptors the server needs: mysqld sizes `open_files_limit` as at least
/// `10 + max_connections + 2 * table_open_cache`; counted the same way for shoal:
///
/// - 2 per connection: its socket and the second handle on it that KILL and shutdown use
///   (`Client::accept_with_handle`). The handlers add none (a thread per connection needs no
///   descriptor; the pool's are per group, below). Connections: `max_connections`, + 1 for the
///   root reserve, + `extra_max_connections` (the extra port), + [`listener::ADMIN_RESERVE`]
///   descriptors held back for the admin ports;
/// - RocksDB (our table cache): at most `MAX_OPEN_FILES` SST files open, + 32 for its own (WAL,
///   MANIFEST, CURRENT, LOCK, info LOG, directories, files being written by a flush or
///   compaction);
/// - the thread pool: 2 per group (its epoll and the eventfd that wakes it), `thread_pool_size`
///   groups (a group added later with `SET GLOBAL thread_pool_size` costs 2 more);
/// - 20 fixed: stdin/stdout/stderr (3), the listeners (TCP, Unix socket, admin port, extra port,
///   metrics: 5), metrics requests in flight (`MAX_REQUESTS` = 4), slack (8).
///
/// With the defaults and `pool-of-threads` on 2 CPUs (151 connections, 2 groups):
/// 2 * (151 + 1 + 1) + 4 + (1024 + 32) + 2 * 2 + 20 = 1390. (Until issue 17 the need was taken
/// as `max_connections + extra_max_connections + 1024`, one descriptor per connection: 1176,
/// short by 214.)
fn open_files_needed(vars: &shoal_session::vars::Vars) -> u64 {
    let connections =
        vars.get("max_connections").as_u64() + 1 + vars.get("extra_max_connections").as_u64();
    let pool_groups = if vars
        .get("thread_handling")
        .display()
        .eq_ignore_ascii_case("pool-of-threads")
    {
        vars.get("thread_pool_size").as_u64()
    } else {
        0
    };
    let rocksdb = shoal_exec::MAX_OPEN_FILES as u64 + 32;
    2 * connections + listener::ADMIN_RESERVE as u64 + rocksdb + 2 * pool_groups + 20
}

/// Like mysqld: raise the soft RLIMIT_NOFILE to what the configuration needs
/// ([`open_files_needed`]) or `open_files_limit` if larger, up to the hard limit, and show the
/// limit obtained in `open_files_limit`. A shell default of 1024 would otherwise refuse the
/// 500th client with EMFILE. Short of the need, a warning says how many connections fit.
fn raise_open_files_limit(server: &Server) {
    let vars = &server.vars;
    let needed = open_files_needed(vars);
    let wanted = vars.get("open_files_limit").as_u64().max(needed);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read/write the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return;
    }
    let target = wanted.min(lim.rlim_max);
    if target > lim.rlim_cur {
        let new = libc::rlimit {
            rlim_cur: target,
            rlim_max: lim.rlim_max,
        };
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0 {
            lim.rlim_cur = target;
        }
    }
    if lim.rlim_cur < needed {
        let max = vars.get("max_connections").as_u64();
        let short = needed - lim.rlim_cur;
        tracing::warn!(
            "could not raise the open files limit to {needed} (hard limit {}): it is {}; \
             about {} of max_connections={max} connections fit (2 descriptors each), those \
             beyond fail to connect until others close",
            lim.rlim_max,
            lim.rlim_cur,
            max.saturating_sub(short.div_ceil(2))
        );
    }
    let _ = vars.set_startup("open_files_limit", &lim.rlim_cur.to_string());
}

/// The allocator of the whole process: jemalloc, built into the binary without a symbol prefix,
/// so it also serves RocksDB's C++ `operator new` and every `malloc` in linked C code, not only
/// Rust's allocations.
///
/// glibc's malloc cost shoal about 9 % of its CPU in sysbench read-write (`_int_malloc`,
/// `_int_free`, `malloc_consolidate` when a RocksDB iterator's arena asks for a large block
/// after a statement freed its rows' small ones, `unlink_chunk`); jemalloc's per-thread caches
/// and size classes cut that share to about 4 % in the same profile, and the transaction's
/// CPU with it (docs/PERFORMANCE.md, "jemalloc"). Capping glibc's arenas, the earlier answer
/// to RSS growth (tests/memory.rs), is moot: jemalloc returns freed pages after its decay time.
///
/// Its settings ([`malloc_conf`]): two arenas (jemalloc's default is four per CPU, and each arena
/// keeps slabs and dirty pages of its own: `tests/memory.rs` peaked at 93 MiB with eight arenas
/// on two CPUs, 80-82 with two), and freed pages returned after one second by jemalloc's
/// background thread instead of ten seconds by whichever thread next allocates. Threads
/// allocate from their own caches first, so two arenas are locked only to refill or flush a
/// cache. Allocations of 256 KiB and more (memtable arena blocks, flush and compaction
/// buffers, buffers of packets over 256 KiB) come from jemalloc's dedicated "oversize" arena, which
/// returns their pages as soon as they are freed (its default threshold is 8 MiB): a flushed
/// memtable's 16 MiB otherwise stayed resident for the decay second. `tests/memory.rs` peaked
/// at 85-93 MiB beside a CPU hog without it (98.7 once in CI, over its bound), 71-83 with it;
/// OLTP statements allocate nothing that large, and point select and read-write TPS did not
/// move (paired rounds, docs/PERFORMANCE.md). `MALLOC_CONF` in the environment is read after
/// these and wins (e.g. `MALLOC_CONF=narenas:16` on a large machine).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings, read once at the process's first allocation (before `main`, so they
/// cannot depend on the machine: a C++ library's static initializer allocates before any code
/// of this binary runs).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[no_mangle]
#[used]
pub static malloc_conf: JemallocConf =
    JemallocConf(c"narenas:2,background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,oversize_threshold:262144".as_ptr());

/// A `const char *` for jemalloc to read.
#[repr(transparent)]
pub struct JemallocConf(*const std::ffi::c_char);
// SAFETY: points to a string literal, immutable for the life of the process.
unsafe impl Sync for JemallocConf {}

fn main() {
    // First of all: a SIGTERM/SIGINT at any point of startup means a clean exit 0.
    install_signal_handlers();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match options::parse_args(&args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("shoal: [ERROR] {e}");
            std::process::exit(1);
        }
    };
    if parsed.help {
        print!("{}", options::help_text());
        return;
    }
    if parsed.version {
        println!(
            "shoal  Ver {} (MySQL-compatible 8.0.36) for Linux on {}",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::ARCH
        );
        return;
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SHOAL_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();

    let server = Server::new();
    // Secrets of the metrics port: startup options of this binary, never variables.
    let mut metrics_auth = shoal_server::metrics::MetricsAuth::default();
    for opt in &parsed.options {
        match opt.name.as_str() {
            "metrics_token" => {
                metrics_auth.token = Some(opt.value.clone()).filter(|v| !v.is_empty());
                continue;
            }
            "metrics_basic_auth" => {
                if !opt.value.is_empty() && !opt.value.contains(':') {
                    fail(format!(
                        "--metrics-basic-auth wants USER:PASSWORD [from {}]",
                        opt.origin
                    ));
                }
                metrics_auth.basic = Some(opt.value.clone()).filter(|v| !v.is_empty());
                continue;
            }
            _ => {}
        }
        if let Err(e) = server.set_startup_option(&opt.name, &opt.value) {
            if opt.loose {
                tracing::warn!("ignoring option '--{}' ({}): {e}", opt.name, opt.origin);
            } else {
                fail(format!("{e} [from {}]", opt.origin));
            }
        }
    }
    if let Err(e) = server.finish_startup() {
        fail(e);
    }
    let handling = server.thread_handling();
    if handling != "one-thread-per-connection" && handling != "pool-of-threads" {
        fail(format!(
            "thread_handling={handling} is not available in this build \
             (use one-thread-per-connection or pool-of-threads)"
        ));
    }
    if let Some(from) = &parsed.restore_from {
        let datadir = server.datadir();
        match shoal_server::restore::restore(std::path::Path::new(from), &datadir) {
            Ok(r) => {
                println!(
                    "shoal: restored {} files ({} bytes) from '{from}' into '{}'",
                    r.files,
                    r.bytes,
                    datadir.display()
                );
                return;
            }
            Err(e) => fail(format!("restore failed: {e}")),
        }
    }
    raise_open_files_limit(&server);
    let datadir = server.datadir();
    if let Err(e) = std::fs::create_dir_all(&datadir) {
        fail(format!(
            "cannot create datadir '{}': {e}",
            datadir.display()
        ));
    }

    open_tables(&server, &datadir);
    match shoal_server::tls::configure(&server, &datadir) {
        Ok(Some(files)) => tracing::info!(
            "TLS on: certificate '{}', key '{}'",
            files.cert.display(),
            files.key.display()
        ),
        Ok(None) => tracing::info!("TLS off (--skip-ssl)"),
        Err(e) => fail(e),
    }
    if let Err(e) = shoal_server::rsa_keys::configure(&server, &datadir) {
        fail(e);
    }

    let shutdown = Arc::new(AtomicBool::new(false));
    // Metrics first: by the time clients can connect, the scrape endpoint is up too.
    let metrics_port = server.vars.get("metrics_port").as_u64() as u16;
    let metrics_thread = if metrics_port != 0 {
        let address = server.variable("metrics_address").unwrap_or_default();
        if metrics_auth.is_open() {
            tracing::info!("metrics on {address}:{metrics_port} without credentials");
        }
        match shoal_server::metrics::spawn(
            server.clone(),
            &address,
            metrics_port,
            metrics_auth,
            shutdown.clone(),
        ) {
            Ok(h) => Some(h),
            Err(e) => fail(format!(
                "cannot listen for metrics on {address}:{metrics_port}: {e}"
            )),
        }
    } else {
        None
    };
    let handler = handler::per_thread::PerThread::new(server.clone(), shutdown.clone());
    // pool-of-threads: the pool takes every non-admin connection (admin/extra port connections
    // still get their own thread in the accept loop). Started before the listeners are bound:
    // once a client can connect, the pool's status, information_schema tables and metrics
    // exist (a scrape right after the port opened once missed every `Threadpool_*` row).
    let pool = if handling == "pool-of-threads" {
        match handler::pool::PoolHandling::start(&server) {
            Ok(p) => Some(p),
            Err(e) => fail(e),
        }
    } else {
        None
    };
    let listeners = match listener::Listeners::bind(&server) {
        Ok(l) => l,
        Err(e) => fail(e),
    };
    let dispatch: handler::Dispatch = match &pool {
        Some(p) => p.clone().into(),
        None => handler.clone().into(),
    };

    tracing::info!(
        "shoal {} starting: version '{}', port {} ({}), socket '{}', admin_port {}, \
         thread_handling {}, max_connections {}, datadir '{}'",
        env!("CARGO_PKG_VERSION"),
        server.version(),
        server.port(),
        server.bind_address(),
        server.socket(),
        server.admin_port(),
        handling,
        server.max_connections(),
        datadir.display()
    );
    let accept_thread = listeners.spawn_accept_loop(server.clone(), dispatch, shutdown.clone());
    tracing::info!("ready for connections");

    while !SIGNALLED.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
    }
    tracing::info!("received shutdown signal: closing listeners and connections");
    shutdown.store(true, Ordering::SeqCst);
    let _ = accept_thread.join();
    if let Some(h) = metrics_thread {
        let _ = h.join();
    }
    handler.stop_cache();
    if let Some(p) = pool {
        // Running commands finish, then every connection is closed (1053 to a client whose
        // message goes unanswered); bounded like the per-thread grace period.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            p.shutdown();
            let _ = tx.send(());
        });
        let _ = rx.recv_timeout(Duration::from_secs(5));
    }
    // Idle connections are shut down at once; running ones finish their command first.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let procs = server.processes();
        if procs.is_empty() {
            break;
        }
        let force = Instant::now() >= deadline;
        for p in &procs {
            if force || !p.running.load(Ordering::Acquire) {
                p.control.shutdown();
            }
        }
        if force {
            std::thread::sleep(Duration::from_millis(200));
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Sync the WAL and stop RocksDB's background threads, then leave without running C++ static
    // destructors (they race with RocksDB's thread pool and can abort an otherwise clean exit).
    if let Some(engine) = server.table_engine() {
        if let Err(e) = engine.store().close() {
            tracing::error!("closing the table engine: {e}");
            std::process::exit(1);
        }
    }
    tracing::info!("shutdown complete");
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: _exit ends the process at once; every durable write has been synced above.
    unsafe { libc::_exit(0) }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// Resident set size of this process, bytes (`/proc/self/statm`, second field, pages).
    fn rss() -> u64 {
        let s = std::fs::read_to_string("/proc/self/statm").unwrap();
        let pages: u64 = s.split_whitespace().nth(1).unwrap().parse().unwrap();
        pages * 4096
    }

    /// This test binary links the same `#[global_allocator]` and `malloc_conf` as the server.
    /// Blocks of 512 KiB (a memtable's arena blocks are 2 MiB) are returned to the OS when
    /// they are freed: 64 MiB of them written and freed leave the RSS where it was. With
    /// jemalloc's default oversize threshold (8 MiB) they sit in an ordinary arena as dirty
    /// pages for the one-second decay: without `oversize_threshold` in `malloc_conf` this
    /// test fails with 52 MiB still resident just after the free (3 MiB before, 68 with them).
    #[test]
    fn large_blocks_are_returned_when_freed() {
        // Unless MALLOC_CONF in the environment overrides the built-in settings.
        if std::env::var_os("MALLOC_CONF").is_some() {
            return;
        }
        let before = rss();
        let mut blocks: Vec<Vec<u8>> = (0..128).map(|_| vec![1u8; 512 << 10]).collect();
        let touched: u64 = blocks.iter_mut().map(|b| b[b.len() - 1] as u64).sum();
        assert_eq!(touched, 128);
        let peak = rss();
        assert!(
            peak >= before + (48 << 20),
            "64 MiB written, RSS {before} -> {peak}: the measurement does not see them"
        );
        drop(blocks);
        let after = rss();
        assert!(
            after < before + (16 << 20),
            "RSS {} MiB just after freeing 64 MiB of 512 KiB blocks (was {} MiB, {} MiB with \
             them): large blocks stayed resident",
            after >> 20,
            before >> 20,
            peak >> 20
        );
    }
}
