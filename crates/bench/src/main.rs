//! The `shoal-bench` command line, in sysbench's shape:
//! `shoal-bench prepare|run|cleanup|step|soak|sweep WORKLOAD --mysql-host=... --threads=...`
//! and `shoal-bench report DIR... --output=report.html`.

use clap::{Args, Parser, Subcommand};
use shoal_bench::client::{ConnOpts, PsMode};
use shoal_bench::engine::EngineCfg;
use shoal_bench::method::{self, Output, RunSpec, ServerConfig, SoakLimits, StepSpec, SweepSpec};
use shoal_bench::plan::{self, Plan};
use shoal_bench::rand::{RandSpec, RandType};
use shoal_bench::result::{ResultFile, Thresholds};
use shoal_bench::workload::{Workload, WorkloadDef, WorkloadOpts};
use shoal_bench::{prepare, report, tpcc};
use std::path::PathBuf;
use std::process::ExitCode;

/// The load generator's allocator: jemalloc, as the server's (crates/server/src/main.rs).
///
/// Every statement allocates and frees its packets and rows in `mysql_async`, on the two
/// threads that run thousands of clients. With glibc's malloc that cost grew with the client
/// count (`malloc`, `cfree`, `_int_malloc`, `_int_free`, `unlink_chunk`: 1.8 µs a statement at
/// 512 I/O-bound point-select clients, 2.7 µs at 2048; perf, shoal-bench's threads only), and
/// every microsecond the load generator spends is one the server does not get on a shared
/// machine. jemalloc's per-thread caches serve those sizes without locks or chunk coalescing
/// (docs/PERFORMANCE.md, "shoal-bench's allocator").
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings for the load generator, read once at the first allocation:
/// transparent huge pages for its heap and its own metadata (`thp:always,metadata_thp:always`;
/// the kernel's default, `madvise`, leaves them on 4 KiB pages unless asked).
///
/// Thousands of clients keep thousands of connections' state (`mysql_async`'s connection,
/// its packet buffers, the client's task), each touched once a round of the whole client
/// set; at 2048 I/O-bound point-select clients a statement's state is some 90 ms cold, and
/// on 4 KiB pages spread over far more pages than a TLB holds (the likely cost: the VM this
/// was measured on has no counters to show TLB misses, so the effect was measured instead).
/// The load generator's CPU a statement grew 22.5 -> 27.5 µs from 512 to 2048 clients with
/// 4 KiB pages, 21.1 -> 23.9 with huge pages (medians of 6 runs; docs/PERFORMANCE.md,
/// "shoal-bench on huge pages"),
/// and on a machine the server shares every microsecond the generator saves is the
/// server's. The server's own heap did not gain from the same setting (session 44).
/// `MALLOC_CONF` in the environment is read after these and wins (`MALLOC_CONF=thp:default`
/// turns it off).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[no_mangle]
#[used]
pub static malloc_conf: JemallocConf = JemallocConf(c"thp:always,metadata_thp:always".as_ptr());

/// A `const char *` for jemalloc to read.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[repr(transparent)]
pub struct JemallocConf(*const std::ffi::c_char);
// SAFETY: points to a string literal, immutable for the life of the process.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe impl Sync for JemallocConf {}

#[derive(Parser)]
#[command(
    name = "shoal-bench",
    version,
    about = "sysbench-compatible OLTP load and the capacity-test method"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Create and fill the sbtestN tables (tpcc: its nine tables).
    Prepare(Common),
    /// One measured point.
    Run(Common),
    /// Drop the sbtestN tables (tpcc: its nine tables).
    Cleanup(Common),
    /// tpcc: check TPC-C's consistency conditions 1-4; exits non-zero naming each condition
    /// and district that fails.
    Check(Common),
    /// Stepped load until a health threshold breaks; knee and confirmation run.
    Step(StepArgs),
    /// Long fixed load with a drift verdict.
    Soak(SoakArgs),
    /// Concurrencies x server configurations, with warm-up and repetitions.
    Sweep(SweepArgs),
    /// Render stored results as HTML (SVG plots) and markdown; several inputs are overlaid.
    Report(ReportArgs),
    /// Run a whole capacity-test plan (TOML): prepare, environment, baseline, sweep, step,
    /// confirm, soak, report. Resumable: finished phases are not run again.
    Plan(PlanArgs),
}

#[derive(Args, Clone)]
struct PlanArgs {
    /// The plan file (TOML; keys in docs/BENCH.md).
    plan: PathBuf,
    /// Directory for the results, phase markers and the report.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Only validate the plan and print its phases and duration.
    #[arg(long)]
    check: bool,
    /// Continue in a directory that was started with a different version of the plan.
    #[arg(long)]
    accept_changed_plan: bool,
    /// No progress lines or phase messages.
    #[arg(long)]
    quiet: bool,
}

fn parse_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" => Ok(true),
        "off" | "false" | "0" | "no" => Ok(false),
        o => Err(format!("'{o}' is not on/off")),
    }
}

#[derive(Args, Clone)]
struct Common {
    /// Workload: oltp_read_write, oltp_read_only, oltp_write_only, oltp_point_select,
    /// oltp_update_index, oltp_update_non_index, oltp_insert, oltp_delete, tpcc.
    workload: Workload,
    #[arg(long, default_value = "127.0.0.1")]
    mysql_host: String,
    #[arg(long, default_value_t = 3306)]
    mysql_port: u16,
    /// Unix socket (used instead of TCP when given).
    #[arg(long)]
    mysql_socket: Option<String>,
    #[arg(long, default_value = "sbtest")]
    mysql_user: String,
    #[arg(long, default_value = "")]
    mysql_password: String,
    #[arg(long, default_value = "sbtest")]
    mysql_db: String,
    /// TLS: `on` (sysbench's spelling; also `off`).
    #[arg(long, default_value = "off")]
    mysql_ssl: String,
    /// CA file (PEM) to verify the server's certificate with under `--mysql-ssl=on`.
    #[arg(long)]
    mysql_ssl_ca: Option<String>,
    /// Errors that restart the event (comma-separated codes).
    #[arg(long, default_value = "1213,1020,1205")]
    mysql_ignore_errors: String,
    /// tpcc: warehouses to load (prepare; default 1). run/step/soak/sweep read it from the
    /// database; a value given there must match.
    #[arg(long)]
    warehouses: Option<u32>,
    /// tpcc: items, and stock rows per warehouse (prepare; default 100000 as in TPC-C).
    #[arg(long)]
    scale_items: Option<u32>,
    /// tpcc: customers and initial orders per district (prepare; default 3000 as in TPC-C).
    #[arg(long)]
    scale_customers: Option<u32>,
    #[arg(long, default_value_t = 1)]
    tables: u32,
    #[arg(long, default_value_t = 10_000)]
    table_size: u32,
    #[arg(long, default_value_t = 100)]
    range_size: u32,
    #[arg(long, default_value_t = 10)]
    point_selects: u32,
    #[arg(long, default_value_t = 1)]
    simple_ranges: u32,
    #[arg(long, default_value_t = 1)]
    sum_ranges: u32,
    #[arg(long, default_value_t = 1)]
    order_ranges: u32,
    #[arg(long, default_value_t = 1)]
    distinct_ranges: u32,
    #[arg(long, default_value_t = 1)]
    index_updates: u32,
    #[arg(long, default_value_t = 1)]
    non_index_updates: u32,
    #[arg(long, default_value_t = 1)]
    delete_inserts: u32,
    #[arg(long, default_value = "on", value_parser = parse_bool, num_args = 0..=1, default_missing_value = "on")]
    range_selects: bool,
    #[arg(long, default_value = "off", value_parser = parse_bool, num_args = 0..=1, default_missing_value = "on")]
    skip_trx: bool,
    #[arg(long, default_value = "on", value_parser = parse_bool, num_args = 0..=1, default_missing_value = "on")]
    auto_inc: bool,
    #[arg(long, default_value = "on", value_parser = parse_bool, num_args = 0..=1, default_missing_value = "on")]
    create_secondary: bool,
    #[arg(long, default_value = "off", value_parser = parse_bool, num_args = 0..=1, default_missing_value = "on")]
    secondary: bool,
    #[arg(long, default_value = "innodb")]
    mysql_storage_engine: String,
    #[arg(long, default_value = "special")]
    rand_type: RandType,
    #[arg(long, default_value_t = 12)]
    rand_spec_iter: u32,
    #[arg(long, default_value_t = 1)]
    rand_spec_pct: u32,
    #[arg(long, default_value_t = 75)]
    rand_spec_res: u32,
    #[arg(long, default_value_t = 0.2)]
    rand_pareto_h: f64,
    /// RNG seed; 0 = from the clock.
    #[arg(long, default_value_t = 0)]
    rand_seed: u64,
    /// Client connections (prepare/cleanup: parallel workers).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seconds of measurement (0 = until --events).
    #[arg(long, default_value_t = 10.0)]
    time: f64,
    /// Seconds of load before measuring (statistics reset afterwards).
    #[arg(long, default_value_t = 0.0)]
    warmup_time: f64,
    /// Stop after this many events (0 = no limit).
    #[arg(long, default_value_t = 0)]
    events: u64,
    /// Target events/s for an open loop (latency from intended start); 0 = closed loop.
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
    /// Seconds between printed per-interval lines (0 = none; intervals are still recorded every second).
    #[arg(long, default_value_t = 0.0)]
    report_interval: f64,
    #[arg(long, default_value = "auto")]
    db_ps_mode: PsMode,
    /// Directory for the result JSON.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Configuration label stored with the result.
    #[arg(long, default_value = "")]
    label: String,
    /// Server PID for /proc measurements (default: found from --mysql-port on this machine).
    #[arg(long)]
    server_pid: Option<u32>,
    /// tokio worker threads of the load generator.
    #[arg(long, default_value_t = 1)]
    client_threads: usize,
    /// Nice value for the load generator's worker threads (negative needs root or
    /// CAP_SYS_NICE), useful when the server runs on the same machine.
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    client_nice: i32,
    /// Connections opened concurrently while connecting clients.
    #[arg(long, default_value_t = 64)]
    connect_concurrency: usize,
    /// Seconds clients may finish their current event after the end before being cut off.
    #[arg(long, default_value_t = 5.0)]
    forced_shutdown: f64,
    /// Seconds between plain progress lines on stderr when it is not a terminal (on a
    /// terminal one status line is updated in place).
    #[arg(long, default_value_t = 10.0)]
    progress_interval: f64,
    /// No progress line, no per-table messages.
    #[arg(long)]
    quiet: bool,
}

impl Common {
    fn conn(&self) -> ConnOpts {
        ConnOpts {
            host: self.mysql_host.clone(),
            port: self.mysql_port,
            socket: self.mysql_socket.clone(),
            user: self.mysql_user.clone(),
            password: self.mysql_password.clone(),
            db: self.mysql_db.clone(),
            ssl: matches!(
                self.mysql_ssl.to_ascii_lowercase().as_str(),
                "on" | "1" | "true" | "required" | "verify_ca"
            ),
            ssl_ca: self.mysql_ssl_ca.clone(),
        }
    }

    fn def(&self) -> WorkloadDef {
        WorkloadDef::new(
            self.workload,
            WorkloadOpts {
                tables: self.tables,
                table_size: self.table_size,
                range_size: self.range_size,
                point_selects: self.point_selects,
                simple_ranges: self.simple_ranges,
                sum_ranges: self.sum_ranges,
                order_ranges: self.order_ranges,
                distinct_ranges: self.distinct_ranges,
                index_updates: self.index_updates,
                non_index_updates: self.non_index_updates,
                delete_inserts: self.delete_inserts,
                range_selects: self.range_selects,
                skip_trx: self.skip_trx,
                auto_inc: self.auto_inc,
                create_secondary: self.create_secondary,
                secondary: self.secondary,
                mysql_storage_engine: self.mysql_storage_engine.clone(),
                warehouses: self.warehouses.unwrap_or(1),
                scale_items: self.scale_items.unwrap_or(tpcc::SPEC_ITEMS),
                scale_customers: self.scale_customers.unwrap_or(tpcc::SPEC_CUSTOMERS),
                rand: RandSpec {
                    kind: self.rand_type,
                    iter: self.rand_spec_iter,
                    pct: self.rand_spec_pct,
                    res: self.rand_spec_res,
                    pareto_h: self.rand_pareto_h,
                },
            },
        )
    }

    fn seed(&self) -> u64 {
        if self.rand_seed != 0 {
            self.rand_seed
        } else {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        }
    }

    fn ignore(&self) -> Result<Vec<u16>, String> {
        self.mysql_ignore_errors
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                s.trim()
                    .parse::<u16>()
                    .map_err(|_| format!("--mysql-ignore-errors: '{s}' is not an error code"))
            })
            .collect()
    }

    fn spec(&self, default_interval: f64) -> Result<RunSpec, String> {
        Ok(RunSpec {
            engine: EngineCfg {
                conn: self.conn(),
                def: self.def(),
                ps_mode: self.db_ps_mode,
                ignore: self.ignore()?,
                rate: self.rate,
                seed: self.seed(),
                connect_concurrency: self.connect_concurrency,
                grace: std::time::Duration::from_secs_f64(self.forced_shutdown.max(0.0)),
            },
            threads: self.threads.max(1),
            time_s: self.time,
            warmup_s: self.warmup_time,
            events: self.events,
            interval_s: if self.report_interval > 0.0 {
                self.report_interval
            } else {
                default_interval
            },
            label: self.label.clone(),
            server_pid: self.server_pid,
            client_threads: self.client_threads.max(1),
            output: Output {
                lines: self.report_interval > 0.0,
                progress: !self.quiet,
                summary: true,
            },
            progress_every_s: self.progress_interval,
            tag: if self.label.is_empty() {
                self.workload.name().to_string()
            } else {
                self.label.clone()
            },
        })
    }
}

#[derive(Args, Clone)]
struct StepArgs {
    #[command(flatten)]
    common: Common,
    /// Clients added at every step (the first step runs --threads clients).
    #[arg(long, default_value_t = 40)]
    step_threads: usize,
    /// Seconds per step.
    #[arg(long, default_value_t = 300.0)]
    step_time: f64,
    /// Seconds at the start of each step that are not measured.
    #[arg(long, default_value_t = 0.0)]
    settle_time: f64,
    #[arg(long, default_value_t = 4096)]
    max_threads: usize,
    /// Seconds of the confirmation run at the knee (default: --step-time; 0 = none).
    #[arg(long)]
    confirm_time: Option<f64>,
    #[arg(long, default_value_t = 70.0)]
    max_cpu: f64,
    #[arg(long, default_value_t = 30.0)]
    max_iowait: f64,
    #[arg(long, default_value_t = 99.99)]
    min_success: f64,
    #[arg(long, default_value_t = 100.0)]
    max_p90: f64,
    #[arg(long, default_value_t = 70.0)]
    max_mem: f64,
    /// CPU compared with --max-cpu: server (server process / CPUs; machine if the PID is unknown) or machine.
    #[arg(long, default_value = "server")]
    cpu_source: String,
}

#[derive(Args, Clone)]
struct SoakArgs {
    #[command(flatten)]
    common: Common,
    #[arg(long, default_value_t = 10.0)]
    max_tps_drop: f64,
    #[arg(long, default_value_t = 20.0)]
    max_rss_growth: f64,
    #[arg(long, default_value_t = 16.0)]
    max_thread_growth: f64,
    #[arg(long, default_value_t = 99.99)]
    min_success: f64,
}

#[derive(Args, Clone)]
struct SweepArgs {
    #[command(flatten)]
    common: Common,
    /// Concurrencies, comma-separated (e.g. 8,32,128,512).
    #[arg(long, value_delimiter = ',', required = true)]
    concurrency: Vec<usize>,
    /// Server configuration NAME[:var=value,...]; repeat for several.
    #[arg(long = "config")]
    configs: Vec<ServerConfig>,
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Shell command that restarts the server for a configuration; {name}, {args}, {assignments}
    /// are substituted. Without it, assignments are applied with SET GLOBAL.
    #[arg(long)]
    restart_cmd: Option<String>,
    #[arg(long, default_value_t = 120.0)]
    restart_timeout: f64,
}

#[derive(Args, Clone)]
struct ReportArgs {
    /// Result files or directories.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// HTML file to write (markdown next to it, SVGs in <stem>_svg/).
    #[arg(long, default_value = "report.html")]
    output: PathBuf,
}

/// The tokio runtime; `nice` (if non-zero) is applied to each worker thread, so that on a
/// machine shared with the server the few load-generator threads are not starved by the
/// server's many threads (a thread-per-connection client gets one CFS share per connection).
fn runtime(workers: usize, nice: i32) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .on_thread_start(move || {
            if nice != 0 {
                // SAFETY: setpriority has no memory-safety preconditions; with who=0 and
                // PRIO_PROCESS, Linux applies it to the calling thread only.
                let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
                if rc != 0 {
                    eprintln!(
                        "WARNING: --client-nice={nice}: {}",
                        std::io::Error::last_os_error()
                    );
                }
            }
        })
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn stamp() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("{t}")
}

fn save(dir: &Option<PathBuf>, r: ResultFile) -> Result<(), String> {
    if let Some(d) = dir {
        let p = d.join(r.file_name(&stamp()));
        r.save(&p).map_err(|e| e.to_string())?;
        eprintln!("result written to {}", p.display());
    }
    Ok(())
}

/// tpcc: the scale of the loaded database goes into the workload options (the keying of the
/// transactions depends on it); a scale option that was given must match it.
fn tpcc_scale(rt: &tokio::runtime::Runtime, c: &Common, spec: &mut RunSpec) -> Result<(), String> {
    if c.workload != Workload::Tpcc {
        return Ok(());
    }
    let s = rt.block_on(async {
        let mut conn = mysql_async::Conn::new(c.conn().to_opts(true))
            .await
            .map_err(|e| format!("connect to {}: {e}", c.conn().describe()))?;
        let s = tpcc::detect_scale(&mut conn).await;
        let _ = conn.disconnect().await;
        s
    })?;
    for (opt, given, found) in [
        ("--warehouses", c.warehouses, s.warehouses),
        ("--scale-items", c.scale_items, s.items),
        ("--scale-customers", c.scale_customers, s.customers),
    ] {
        if let Some(g) = given {
            if g != found {
                return Err(format!(
                    "{opt}={g}, but the database was prepared with {found} (leave it out to use the database's)"
                ));
            }
        }
    }
    let o = &mut spec.engine.def.opts;
    o.warehouses = s.warehouses;
    o.scale_items = s.items;
    o.scale_customers = s.customers;
    Ok(())
}

fn real_main() -> Result<ExitCode, String> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Prepare(c) => {
            let rt = runtime(c.client_threads, c.client_nice);
            rt.block_on(prepare::prepare(
                &c.conn(),
                &c.def(),
                c.threads,
                c.seed(),
                c.quiet,
            ))
            .map_err(|e| e.to_string())?;
        }
        Cmd::Cleanup(c) => {
            let rt = runtime(c.client_threads, c.client_nice);
            if c.workload == Workload::Tpcc {
                rt.block_on(prepare::cleanup_tpcc(&c.conn(), c.quiet))
            } else {
                rt.block_on(prepare::cleanup(&c.conn(), c.tables, c.threads, c.quiet))
            }
            .map_err(|e| e.to_string())?;
        }
        Cmd::Check(c) => {
            if c.workload != Workload::Tpcc {
                return Err(format!(
                    "check: only tpcc has consistency conditions, not {}",
                    c.workload.name()
                ));
            }
            let rt = runtime(c.client_threads, c.client_nice);
            let rep = rt.block_on(async {
                let mut conn = mysql_async::Conn::new(c.conn().to_opts(true))
                    .await
                    .map_err(|e| format!("connect to {}: {e}", c.conn().describe()))?;
                let r = tpcc::check::check(&mut conn).await;
                let _ = conn.disconnect().await;
                r
            })?;
            for (i, cond) in tpcc::check::CONDITIONS.iter().enumerate() {
                let n = rep
                    .failures
                    .iter()
                    .filter(|f| usize::from(f.condition) == i + 1)
                    .count();
                let over = if i == 0 {
                    format!("{} warehouses", rep.warehouses)
                } else {
                    format!("{} districts", rep.districts)
                };
                if n == 0 {
                    println!("condition {} ({cond}): OK over {over}", i + 1);
                } else {
                    println!("condition {} ({cond}): FAILED in {n} of {over}", i + 1);
                }
            }
            if rep.empty_new_order > 0 {
                println!(
                    "({} districts have no undelivered order: max(NO_O_ID) was not compared there)",
                    rep.empty_new_order
                );
            }
            if !rep.failures.is_empty() {
                for f in &rep.failures {
                    eprintln!("FAILED: {f}");
                }
                return Ok(ExitCode::from(4));
            }
        }
        Cmd::Run(c) => {
            let mut spec = c.spec(1.0)?;
            let rt = runtime(spec.client_threads, c.client_nice);
            tpcc_scale(&rt, &c, &mut spec)?;
            let r = rt
                .block_on(method::run_point(&spec))
                .map_err(|e| e.to_string())?;
            save(&c.output, ResultFile::Run(Box::new(r)))?;
        }
        Cmd::Step(s) => {
            let mut base = s.common.spec(1.0)?;
            let rt = runtime(base.client_threads, s.common.client_nice);
            tpcc_scale(&rt, &s.common, &mut base)?;
            let spec = StepSpec {
                start_threads: base.threads,
                step_threads: s.step_threads,
                max_threads: s.max_threads,
                step_s: s.step_time,
                settle_s: s.settle_time,
                confirm_s: s.confirm_time.unwrap_or(s.step_time),
                thresholds: Thresholds {
                    max_cpu_pct: s.max_cpu,
                    max_iowait_pct: s.max_iowait,
                    min_success_pct: s.min_success,
                    max_p90_ms: s.max_p90,
                    max_mem_pct: s.max_mem,
                    cpu_source: s.cpu_source.clone(),
                },
                base,
            };
            let r = rt
                .block_on(method::step(&spec))
                .map_err(|e| e.to_string())?;
            save(&s.common.output, ResultFile::Step(Box::new(r)))?;
        }
        Cmd::Soak(s) => {
            let mut spec = s.common.spec(10.0)?;
            let rt = runtime(spec.client_threads, s.common.client_nice);
            tpcc_scale(&rt, &s.common, &mut spec)?;
            let lim = SoakLimits {
                max_tps_drop_pct: s.max_tps_drop,
                max_rss_growth_pct: s.max_rss_growth,
                max_thread_growth: s.max_thread_growth,
                min_success_pct: s.min_success,
            };
            let r = rt
                .block_on(method::soak(&spec, &lim))
                .map_err(|e| e.to_string())?;
            let pass = r.verdict.pass;
            save(&s.common.output, ResultFile::Soak(Box::new(r)))?;
            if !pass {
                return Ok(ExitCode::from(3));
            }
        }
        Cmd::Sweep(s) => {
            let mut base = s.common.spec(1.0)?;
            let rt = runtime(base.client_threads, s.common.client_nice);
            tpcc_scale(&rt, &s.common, &mut base)?;
            let configs = if s.configs.is_empty() {
                vec![ServerConfig {
                    name: "default".into(),
                    assignments: vec![],
                }]
            } else {
                s.configs.clone()
            };
            let spec = SweepSpec {
                base,
                threads: s.concurrency.clone(),
                configs,
                repeat: s.repeat,
                restart_cmd: s.restart_cmd.clone(),
                restart_timeout_s: s.restart_timeout,
                output_dir: s.common.output.clone(),
            };
            rt.block_on(method::sweep(&spec))
                .map_err(|e| e.to_string())?;
        }
        Cmd::Plan(p) => {
            let (plan, text) = Plan::load(&p.plan).map_err(|e| e.to_string())?;
            if p.check {
                let (lo, hi) = plan.duration_s();
                println!(
                    "plan '{}' is valid: {} server(s); phases per server: {}; measurement {} to {}",
                    plan.name,
                    plan.servers.len(),
                    plan.phases().join(", "),
                    plan::fmt_duration(lo),
                    plan::fmt_duration(hi)
                );
                return Ok(ExitCode::SUCCESS);
            }
            let dir = p
                .output
                .ok_or("plan: --output=DIR is required (results, phase markers, report)")?;
            let rt = runtime(plan.load.client_threads, plan.load.client_nice);
            let opts = plan::PlanOpts {
                dir,
                quiet: p.quiet,
                accept_changed_plan: p.accept_changed_plan,
            };
            let out = rt
                .block_on(plan::run(&plan, &text, &opts))
                .map_err(|e| e.to_string())?;
            if out.drift {
                return Ok(ExitCode::from(3));
            }
        }
        Cmd::Report(r) => {
            let out = report::write(&r.inputs, &r.output).map_err(|e| e.to_string())?;
            eprintln!(
                "report written to {} ({} plots; markdown {})",
                r.output.display(),
                out.svgs.len(),
                r.output.with_extension("md").display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    match real_main() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("FATAL: {e}");
            ExitCode::FAILURE
        }
    }
}
