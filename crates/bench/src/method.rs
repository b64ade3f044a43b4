//! The capacity-test method: `run` (one point), `step` (stepped load to the knee, then a
//! confirmation run), `soak` (long fixed load with a drift verdict) and `sweep` (concurrencies ×
//! server configurations, with warm-up and repetitions).
//!
//! All of them drive an [`Engine`] through a [`Monitor`], which every `interval` turns counter
//! deltas, the interval latency histogram and a /proc sample into an [`Interval`] record,
//! prints it (sysbench-shaped lines with `--report-interval`, or a live status line on a
//! terminal), and warns loudly when the load generator itself is the bottleneck.
//!
//! * `run`: connect all clients first, take the "before" server snapshot, release the load,
//!   warm up (`--warmup-time`, window reset afterwards), measure, stop, take the "after"
//!   snapshot, then close. With no warm-up the snapshots bracket the load exactly; after a
//!   warm-up the window (counters, CPU sample, clock) opens first and the "before" snapshot is
//!   taken inside it, so however long the server takes to answer it, the window's TPS is its
//!   transactions over its own seconds.
//! * `step`: start with N clients, add M every `--step-time`; each step is one measurement
//!   window checked against the thresholds (CPU, I/O wait, success ratio, p90, memory). The
//!   first step that breaks one stops the test; the knee is the last healthy step. The knee is
//!   then re-run from scratch (`--confirm-time`) and must be healthy again to be confirmed.
//! * `soak`: a `run` whose intervals are fitted by least squares: TPS change over the run,
//!   server RSS and thread-count change, error count; any above its limit is drift.
//! * `sweep`: for each configuration (SET GLOBAL assignments, or a restart command template),
//!   for each concurrency, for each repetition: a `run`, saved as its own JSON.

use crate::client::ConnOpts;
use crate::engine::{close_all, Counts, Engine, EngineCfg, EngineError};
use crate::result::{
    linear_fit, Interval, ResultFile, RunResult, ServerSnapshot, SoakResult, SoakVerdict,
    StepRecord, StepResult, Thresholds,
};
use crate::server;
use crate::sysmon::{self, Sample};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, thiserror::Error)]
pub enum MethodError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("admin connection to {target}: {source}")]
    Admin {
        target: String,
        source: mysql_async::Error,
    },
    #[error("server configuration '{name}': {msg}")]
    Config { name: String, msg: String },
    #[error(transparent)]
    Result(#[from] crate::result::ResultError),
}

/// How a run reports while it runs.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// sysbench-shaped per-interval lines on stdout.
    pub lines: bool,
    /// A live status line on stderr (only when stderr is a terminal).
    pub progress: bool,
    /// Print the final sysbench-shaped summary.
    pub summary: bool,
}

/// One point's parameters.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub engine: EngineCfg,
    pub threads: usize,
    pub time_s: f64,
    pub warmup_s: f64,
    /// Stop after this many events (0 = no limit).
    pub events: u64,
    /// Seconds between interval records (also the printed lines' period).
    pub interval_s: f64,
    pub label: String,
    pub server_pid: Option<u32>,
    pub client_threads: usize,
    pub output: Output,
    /// Seconds between plain progress lines when stderr is not a terminal.
    pub progress_every_s: f64,
    /// What the progress line calls this run (e.g. `mariadb sweep oversub3`).
    pub tag: String,
}

fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn is_loopback(host: &str) -> bool {
    matches!(host, "127.0.0.1" | "localhost" | "::1" | "0.0.0.0") || host.starts_with("127.")
}

/// The server PID: given, or found from the listening port on this machine.
pub fn resolve_server_pid(conn: &ConnOpts, given: Option<u32>) -> Option<u32> {
    given.or_else(|| {
        if conn.socket.is_none() && is_loopback(&conn.host) {
            sysmon::find_pid_by_port(conn.port)
        } else {
            None
        }
    })
}

/// Per-interval recording and printing.
pub struct Monitor {
    pid: Option<u32>,
    workers: usize,
    start: Instant,
    interval: Duration,
    next: Instant,
    last_counts: Counts,
    last_sample: Sample,
    pub intervals: Vec<Interval>,
    pub warnings: Vec<String>,
    /// Warnings seen per category.
    warn_counts: std::collections::BTreeMap<String, usize>,
    output: Output,
    tty: bool,
    /// Total planned seconds (for the progress line).
    pub planned_s: f64,
    /// `planned_s` is an upper bound (a step test stops at the first broken threshold).
    pub planned_is_max: bool,
    /// What the progress line calls this run.
    pub tag: String,
    /// Seconds between plain progress lines when stderr is not a terminal.
    pub progress_every_s: f64,
    /// Intervals not yet summarised by a plain progress line.
    pending: usize,
    last_progress: Instant,
}

/// One progress line: `[tag] elapsed 12s/60s (20%) clients 8 tps 812.3 p99 15.2 ms errors 0 (0.0/s)`.
/// `tps` and `err_per_s` are means and `p99` the worst over the intervals it covers;
/// `errors` is the run's total of failed events.
#[allow(clippy::too_many_arguments)]
pub fn progress_line(
    tag: &str,
    elapsed: f64,
    planned: f64,
    planned_is_max: bool,
    clients: usize,
    tps: f64,
    p99: f64,
    errors: u64,
    err_per_s: f64,
) -> String {
    let total = if planned > 0.0 {
        format!(
            "/{}{:.0}s ({:.0}%)",
            if planned_is_max { "≤" } else { "" },
            planned,
            (100.0 * elapsed / planned).min(100.0)
        )
    } else {
        String::new()
    };
    format!(
        "[{tag}] elapsed {elapsed:.0}s{total} clients {clients} tps {tps:.1} p99 {p99:.1} ms errors {errors} ({err_per_s:.1}/s)"
    )
}

impl Monitor {
    pub fn new(
        eng: &Engine,
        pid: Option<u32>,
        workers: usize,
        interval_s: f64,
        output: Output,
    ) -> Self {
        let now = Instant::now();
        let interval = Duration::from_secs_f64(interval_s.max(0.05));
        Self {
            pid,
            workers,
            start: now,
            interval,
            next: now + interval,
            last_counts: eng.counts(),
            last_sample: sysmon::sample(pid),
            intervals: Vec::new(),
            warnings: Vec::new(),
            warn_counts: Default::default(),
            output,
            tty: std::io::stderr().is_terminal(),
            planned_s: 0.0,
            planned_is_max: false,
            tag: String::new(),
            progress_every_s: 10.0,
            pending: 0,
            last_progress: now,
        }
    }

    /// Sets what the progress line calls the run and how often it is printed off a terminal.
    pub fn progress(&mut self, tag: &str, every_s: f64) {
        self.tag = tag.to_string();
        self.progress_every_s = every_s;
    }

    /// Records a warning; only the first one of a category is printed and stored, later ones
    /// are counted (see [`Monitor::finish`]).
    pub fn warn(&mut self, category: &str, w: String) {
        let n = self.warn_counts.entry(category.to_string()).or_insert(0);
        *n += 1;
        if *n == 1 {
            eprintln!("\nWARNING: {w}");
            self.warnings.push(w);
        }
    }

    /// Appends the counts of repeated warnings.
    pub fn finish(&mut self) {
        let total = self.intervals.len();
        for (cat, n) in &self.warn_counts {
            if *n > 1 {
                self.warnings
                    .push(format!("{cat}: in {n} of {total} intervals"));
            }
        }
    }

    /// Records an interval if one is due.
    pub fn tick(&mut self, eng: &Engine) {
        let now = Instant::now();
        if now < self.next {
            return;
        }
        self.next += self.interval;
        if self.next < now {
            self.next = now + self.interval;
        }
        let c = eng.counts();
        let s = sysmon::sample(self.pid);
        let h = eng.take_interval_hist();
        let d = c.minus(&self.last_counts);
        let sys = sysmon::delta(&self.last_sample, &s, self.workers);
        let secs = sys.secs;
        let sum = d.summary(secs, &h, 0);
        let iv = Interval {
            t: now.duration_since(self.start).as_secs_f64(),
            threads: eng.clients(),
            tps: sum.tps,
            qps: sum.qps,
            reads_per_s: d.reads as f64 / secs,
            writes_per_s: d.writes as f64 / secs,
            other_per_s: d.other as f64 / secs,
            latency_ms: sum.latency_ms.clone(),
            errors_per_s: d.errors as f64 / secs,
            ignored_per_s: d.ignored as f64 / secs,
            reconnects_per_s: d.reconnects as f64 / secs,
            queue_depth: eng.queue_depth(),
            sys,
        };
        if let Some(w) = iv.sys.tool_bottleneck(self.workers) {
            self.warn(
                "load generator bottleneck",
                format!(
                    "[{:.0}s] {w}: results measure the load generator, not the server \
                 (give it priority with --client-nice=-10, raise --client-threads, or run \
                 it on another machine)",
                    iv.t
                ),
            );
        }
        if self.output.lines {
            println!(
                "[ {:.0}s ] thds: {} tps: {:.2} qps: {:.2} (r/w/o: {:.2}/{:.2}/{:.2}) lat (ms,95%): {:.2} err/s: {:.2} reconn/s: {:.2} | p99: {:.2} ms srv cpu: {} tool cpu: {:.0}%{}",
                iv.t,
                iv.threads,
                iv.tps,
                iv.qps,
                iv.reads_per_s,
                iv.writes_per_s,
                iv.other_per_s,
                iv.latency_ms.p95,
                iv.errors_per_s + iv.ignored_per_s,
                iv.reconnects_per_s,
                iv.latency_ms.p99,
                iv.sys
                    .server_cpu_user_pct
                    .zip(iv.sys.server_cpu_sys_pct)
                    .map(|(u, s)| format!("{:.0}%", u + s))
                    .unwrap_or_else(|| "n/a".into()),
                iv.sys.tool_cpu_pct,
                if eng.queue_depth() > 0 {
                    format!(" queue: {}", iv.queue_depth)
                } else {
                    String::new()
                }
            );
        } else if self.output.progress && self.tty {
            // One line, rewritten in place.
            let line = progress_line(
                &self.tag,
                iv.t,
                self.planned_s,
                self.planned_is_max,
                iv.threads,
                iv.tps,
                iv.latency_ms.p99,
                c.errors,
                iv.errors_per_s,
            );
            eprint!("\r{line}\x1b[K");
            let _ = std::io::stderr().flush();
        } else if self.output.progress {
            // Not a terminal: one plain line per progress period, over its intervals.
            self.pending += 1;
            if now.duration_since(self.last_progress).as_secs_f64() + 1e-3 >= self.progress_every_s
            {
                let n = self.pending;
                let recent = self.intervals[self.intervals.len() + 1 - n..]
                    .iter()
                    .chain(std::iter::once(&iv));
                let (mut tps, mut p99, mut eps) = (0.0, 0.0f64, 0.0);
                for i in recent {
                    tps += i.tps / n as f64;
                    eps += i.errors_per_s / n as f64;
                    p99 = p99.max(i.latency_ms.p99);
                }
                eprintln!(
                    "{}",
                    progress_line(
                        &self.tag,
                        iv.t,
                        self.planned_s,
                        self.planned_is_max,
                        iv.threads,
                        tps,
                        p99,
                        c.errors,
                        eps,
                    )
                );
                self.pending = 0;
                self.last_progress = now;
            }
        }
        self.intervals.push(iv);
        self.last_counts = c;
        self.last_sample = s;
    }

    pub fn finish_line(&self) {
        if self.output.progress && self.tty && !self.output.lines {
            eprintln!();
        }
    }
}

/// Drives the engine until `deadline` or `events` more completed events (0 = no limit).
async fn drive(eng: &Engine, mon: &mut Monitor, deadline: Instant, events: u64) {
    let base = eng.counts().events;
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        if events > 0 && eng.counts().events - base >= events {
            break;
        }
        let step = Duration::from_millis(50).min(deadline - now);
        tokio::time::sleep(step).await;
        mon.tick(eng);
    }
}

async fn admin(conn: &ConnOpts) -> Result<mysql_async::Conn, MethodError> {
    server::admin_conn(conn)
        .await
        .map_err(|e| MethodError::Admin {
            target: conn.describe(),
            source: e,
        })
}

async fn snap(a: &mut mysql_async::Conn, before: bool) -> ServerSnapshot {
    server::snapshot(a, before).await.unwrap_or_default()
}

/// One measured point.
pub async fn run_point(spec: &RunSpec) -> Result<RunResult, MethodError> {
    let started_unix = now_unix();
    let pid = resolve_server_pid(&spec.engine.conn, spec.server_pid);
    let mut adm = admin(&spec.engine.conn).await?;
    let variables = server::global_variables(&mut adm).await.unwrap_or_default();
    let mut eng = Engine::new(spec.engine.clone());
    let connect = eng.add_clients(spec.threads).await?;
    if spec.output.lines {
        println!(
            "Threads started! ({} clients connected in {:.2}s)\n",
            spec.threads,
            connect.as_secs_f64()
        );
    }
    let mut before = snap(&mut adm, true).await;
    let mut mon = Monitor::new(&eng, pid, spec.client_threads, spec.interval_s, spec.output);
    mon.planned_s = spec.warmup_s + spec.time_s;
    mon.progress(&spec.tag, spec.progress_every_s);
    let mut c0 = eng.counts();
    let mut s0 = sysmon::sample(pid);
    eng.go();
    let start = Instant::now();
    let mut mstart = start;
    if spec.warmup_s > 0.0 {
        drive(
            &eng,
            &mut mon,
            start + Duration::from_secs_f64(spec.warmup_s),
            0,
        )
        .await;
        // The window opens here: its counters, its CPU sample and its clock are read at the
        // same moment. The "before" snapshot is taken inside it, while the clients run on:
        // under load its queries queue behind theirs (1-2 s at 512 I/O-bound read-write
        // clients in a pool of cap 6, 6-7 s at 2048), and a clock started after it left that
        // time out of the window while its transactions stayed in: TPS read 8-55 % high, by
        // an amount that differed from one server setting to the next.
        eng.reset_window();
        c0 = eng.counts();
        s0 = sysmon::sample(pid);
        mstart = Instant::now();
    }
    let deadline = if spec.time_s > 0.0 {
        mstart + Duration::from_secs_f64(spec.time_s)
    } else {
        mstart + Duration::from_secs(365 * 86_400)
    };
    // The window closes when the load's deadline passes (its counters, CPU sample, clock and
    // histogram read together), even if the "before" snapshot is still waiting for the server:
    // the monitor keeps its intervals meanwhile.
    let window = async {
        drive(&eng, &mut mon, deadline, spec.events).await;
        let secs = mstart.elapsed().as_secs_f64();
        (
            secs,
            eng.counts(),
            sysmon::sample(pid),
            eng.window_hist(),
            eng.max_queue_depth(),
        )
    };
    let (secs, c1, s1, h, max_q) = if spec.warmup_s > 0.0 {
        let (b, w) = tokio::join!(snap(&mut adm, true), window);
        before = b;
        w
    } else {
        window.await
    };
    let (clients, aborted) = eng.stop(spec.engine.grace).await;
    let c_stop = eng.counts();
    let after = snap(&mut adm, false).await;
    close_all(clients).await;
    let _ = adm.disconnect().await;
    mon.finish_line();
    mon.finish();
    let mut summary = c1.minus(&c0).summary(secs, &h, max_q);
    // Statements as sent from the window's start to the "after" snapshot (in-flight events
    // included): with no warm-up, exactly those between the two snapshots.
    summary.statements_by_kind = c_stop
        .minus(&c0)
        .summary(secs, &h, max_q)
        .statements_by_kind;
    let sys = sysmon::delta(&s0, &s1, spec.client_threads);
    let mut warnings = mon.warnings.clone();
    if aborted > 0 {
        warnings.push(format!(
            "{aborted} clients were still inside an event {:.0}s after the end and were disconnected",
            spec.engine.grace.as_secs_f64()
        ));
    }
    if let Some(w) = sys.tool_bottleneck(spec.client_threads) {
        let w = format!("over the whole run, {w}");
        eprintln!("WARNING: {w}");
        warnings.push(w);
    }
    if summary.errors > 0 {
        if let Some(e) = eng.last_error() {
            warnings.push(format!("{} failed events; last error: {e}", summary.errors));
        }
    }
    let status_delta = server::status_delta(&before.status, &after.status);
    let r = RunResult {
        label: spec.label.clone(),
        workload: spec.engine.def.workload.name().into(),
        threads: spec.threads,
        rate: spec.engine.rate,
        ps_mode: spec.engine.ps_mode,
        opts: spec.engine.def.opts.clone(),
        conn: spec.engine.conn.clone(),
        server_pid: pid,
        started_unix,
        warmup_s: spec.warmup_s,
        connect_s: connect.as_secs_f64(),
        summary,
        sys,
        intervals: mon.intervals,
        before,
        after,
        status_delta,
        variables,
        warnings,
        client_threads: spec.client_threads,
    };
    if spec.output.summary {
        print_summary(&r);
    }
    Ok(r)
}

/// Prints a sysbench-shaped final report.
pub fn print_summary(r: &RunResult) {
    let s = &r.summary;
    let l = &s.latency_ms;
    println!("SQL statistics:");
    println!("    queries performed:");
    println!("        read:                            {}", s.reads);
    println!("        write:                           {}", s.writes);
    println!("        other:                           {}", s.other);
    println!("        total:                           {}", s.queries);
    println!(
        "    transactions:                        {:<8} ({:.2} per sec.)",
        s.events, s.tps
    );
    if let Some(tpmc) = s.tpmc {
        println!(
            "    tpmC:                                {tpmc:.1} (New-Order commits per minute)"
        );
        let t = &s.transactions_by_type;
        let n = |k: &str| t.get(k).copied().unwrap_or(0);
        println!(
            "    by type:                             new_order {} (+{} rolled back), payment {}, order_status {}, delivery {}, stock_level {}",
            n("new_order"),
            n("new_order_rolled_back"),
            n("payment"),
            n("order_status"),
            n("delivery"),
            n("stock_level")
        );
    }
    println!(
        "    queries:                             {:<8} ({:.2} per sec.)",
        s.queries, s.qps
    );
    println!(
        "    ignored errors:                      {:<8} ({:.2} per sec.)",
        s.ignored_errors,
        s.ignored_errors as f64 / s.secs
    );
    println!("    failed events:                       {}", s.errors);
    println!(
        "    reconnects:                          {:<8} ({:.2} per sec.)",
        s.reconnects,
        s.reconnects as f64 / s.secs
    );
    if !s.errors_by_code.is_empty() {
        println!(
            "    errors by code:                      {:?}",
            s.errors_by_code
        );
    }
    println!("\nGeneral statistics:");
    println!("    total time:                          {:.4}s", s.secs);
    println!("    total number of events:              {}", s.events);
    println!(
        "    connect + prepare time:              {:.2}s",
        r.connect_s
    );
    if r.rate > 0.0 {
        println!(
            "    target rate:                         {:.1}/s (latency from intended start; max queue {})",
            r.rate, s.max_queue_depth
        );
    }
    println!("\nLatency (ms):");
    println!("         min:                            {:.2}", l.min);
    println!("         avg:                            {:.2}", l.avg);
    println!("         max:                            {:.2}", l.max);
    println!("         50th percentile:                {:.2}", l.p50);
    println!("         90th percentile:                {:.2}", l.p90);
    println!("         95th percentile:                {:.2}", l.p95);
    println!("         99th percentile:                {:.2}", l.p99);
    println!("         99.9th percentile:              {:.2}", l.p999);
    let y = &r.sys;
    println!("\nSystem:");
    println!(
        "    machine cpu user/sys/iowait/idle %:  {:.1}/{:.1}/{:.1}/{:.1}  ({} CPUs)",
        y.cpu_user_pct, y.cpu_sys_pct, y.cpu_iowait_pct, y.cpu_idle_pct, y.cpus
    );
    println!(
        "    context switches/s:                  {:.0}",
        y.ctx_switches_per_s
    );
    if let (Some(u), Some(sy)) = (y.server_cpu_user_pct, y.server_cpu_sys_pct) {
        println!(
            "    server (pid {}) cpu user/sys % of a core: {:.1}/{:.1}, rss {:.0} MB, threads {}",
            r.server_pid.unwrap_or(0),
            u,
            sy,
            y.server_rss_mb.unwrap_or(0.0),
            y.server_threads.unwrap_or(0)
        );
    }
    println!(
        "    load generator cpu % of a core:      {:.1} ({} worker thread(s), run-queue wait {:.1} ms/s)",
        y.tool_cpu_pct, r.client_threads, y.tool_runq_ms_per_s
    );
    for w in &r.warnings {
        println!("    WARNING: {w}");
    }
}

/// Stepped-load parameters.
#[derive(Debug, Clone)]
pub struct StepSpec {
    pub base: RunSpec,
    pub start_threads: usize,
    pub step_threads: usize,
    pub max_threads: usize,
    pub step_s: f64,
    /// Seconds at the start of each step not counted (clients connecting, queues settling).
    pub settle_s: f64,
    pub confirm_s: f64,
    pub thresholds: Thresholds,
}

/// Stepped load: add clients until a threshold breaks; the knee is the last healthy step.
pub async fn step(spec: &StepSpec) -> Result<StepResult, MethodError> {
    let base = &spec.base;
    let pid = resolve_server_pid(&base.engine.conn, base.server_pid);
    let mut eng = Engine::new(base.engine.clone());
    eng.add_clients(spec.start_threads.max(1)).await?;
    let mut mon = Monitor::new(&eng, pid, base.client_threads, base.interval_s, base.output);
    mon.progress(&base.tag, base.progress_every_s);
    let n_steps = (spec.max_threads.saturating_sub(spec.start_threads))
        .checked_div(spec.step_threads)
        .map_or(1, |n| n + 1);
    mon.planned_s = n_steps as f64 * (spec.settle_s + spec.step_s);
    mon.planned_is_max = true;
    eng.go();
    let mut steps: Vec<StepRecord> = Vec::new();
    let stop_reason;
    loop {
        let threads = eng.clients();
        if spec.settle_s > 0.0 {
            drive(
                &eng,
                &mut mon,
                Instant::now() + Duration::from_secs_f64(spec.settle_s),
                0,
            )
            .await;
        }
        eng.reset_window();
        let c0 = eng.counts();
        let s0 = sysmon::sample(pid);
        let t0 = Instant::now();
        drive(&eng, &mut mon, t0 + Duration::from_secs_f64(spec.step_s), 0).await;
        let c1 = eng.counts();
        let s1 = sysmon::sample(pid);
        let summary = c1.minus(&c0).summary(
            t0.elapsed().as_secs_f64(),
            &eng.window_hist(),
            eng.max_queue_depth(),
        );
        let sys = sysmon::delta(&s0, &s1, base.client_threads);
        let (cpu_pct, broken) = spec.thresholds.check(&summary, &sys);
        if let Some(w) = sys.tool_bottleneck(base.client_threads) {
            mon.warn(
                "load generator bottleneck",
                format!("step at {threads} clients: {w}"),
            );
        }
        let healthy = broken.is_empty();
        if base.output.lines || base.output.summary {
            println!(
                "step {:>5} clients: tps {:.1} p90 {:.1} ms p99 {:.1} ms success {:.3}% cpu {:.1}% iowait {:.1}% -> {}",
                threads,
                summary.tps,
                summary.latency_ms.p90,
                summary.latency_ms.p99,
                summary.success_pct,
                cpu_pct,
                sys.cpu_iowait_pct,
                if healthy { "healthy".to_string() } else { format!("BROKEN: {}", broken.join("; ")) }
            );
        }
        steps.push(StepRecord {
            threads,
            summary,
            sys,
            cpu_pct,
            healthy,
            broken: broken.clone(),
        });
        if !healthy {
            stop_reason = format!(
                "threshold broken at {threads} clients: {}",
                broken.join("; ")
            );
            break;
        }
        if threads + spec.step_threads > spec.max_threads || spec.step_threads == 0 {
            stop_reason = format!(
                "reached --max-threads={} without breaking a threshold",
                spec.max_threads
            );
            break;
        }
        if let Err(e) = eng.add_clients(spec.step_threads).await {
            stop_reason = format!("could not add clients beyond {threads}: {e}");
            break;
        }
    }
    let (clients, _) = eng.stop(base.engine.grace).await;
    close_all(clients).await;
    mon.finish_line();
    mon.finish();
    let knee = steps.iter().rev().find(|s| s.healthy).cloned();
    let mut res = StepResult {
        label: base.label.clone(),
        workload: base.engine.def.workload.name().into(),
        thresholds: spec.thresholds.clone(),
        start_threads: spec.start_threads,
        step_threads: spec.step_threads,
        step_s: spec.step_s,
        steps,
        stop_reason,
        knee_threads: knee.as_ref().map(|k| k.threads),
        knee_tps: knee.as_ref().map(|k| k.summary.tps),
        confirmation: None,
        confirmed: None,
        confirmation_broken: vec![],
        intervals: mon.intervals,
        warnings: mon.warnings,
    };
    if let (Some(k), true) = (&knee, spec.confirm_s > 0.0) {
        let mut c = base.clone();
        c.threads = k.threads;
        c.time_s = spec.confirm_s;
        c.warmup_s = spec.settle_s;
        c.output.summary = false;
        c.label = format!("{} (confirmation)", base.label);
        let r = run_point(&c).await?;
        let (_, broken) = spec.thresholds.check(&r.summary, &r.sys);
        res.confirmed = Some(broken.is_empty());
        res.confirmation_broken = broken;
        res.confirmation = Some(r);
    }
    if base.output.summary {
        match (&res.knee_threads, res.confirmed) {
            (Some(k), c) => println!(
                "knee: {k} clients ({:.1} tps); confirmation: {}",
                res.knee_tps.unwrap_or(0.0),
                match c {
                    Some(true) => "confirmed".to_string(),
                    Some(false) =>
                        format!("NOT confirmed ({})", res.confirmation_broken.join("; ")),
                    None => "not run".to_string(),
                }
            ),
            (None, _) => println!("no healthy step: {}", res.stop_reason),
        }
    }
    Ok(res)
}

/// Soak limits.
#[derive(Debug, Clone)]
pub struct SoakLimits {
    /// Max fitted TPS decline over the run, % of the mean.
    pub max_tps_drop_pct: f64,
    /// Max server RSS growth, %.
    pub max_rss_growth_pct: f64,
    /// Max server thread-count growth (threads).
    pub max_thread_growth: f64,
    pub min_success_pct: f64,
}

/// Drift verdict of a run's intervals.
pub fn soak_verdict(r: &RunResult, lim: &SoakLimits) -> SoakVerdict {
    // Skip warm-up intervals.
    let iv: Vec<&Interval> = r
        .intervals
        .iter()
        .filter(|i| i.t > r.warmup_s + 1e-9)
        .collect();
    let mut v = SoakVerdict {
        errors: r.summary.errors,
        ..Default::default()
    };
    let xs: Vec<f64> = iv.iter().map(|i| i.t).collect();
    let span = match (xs.first(), xs.last()) {
        (Some(a), Some(b)) if b > a => b - a,
        _ => 0.0,
    };
    if iv.len() < 3 {
        v.reasons.push(format!(
            "only {} intervals: too short to judge drift",
            iv.len()
        ));
    }
    let tps: Vec<f64> = iv.iter().map(|i| i.tps).collect();
    let mean = tps.iter().sum::<f64>() / tps.len().max(1) as f64;
    let (slope, _) = linear_fit(&xs, &tps);
    v.tps_slope_per_hour = slope * 3600.0;
    v.tps_change_pct = if mean > 0.0 {
        100.0 * slope * span / mean
    } else {
        0.0
    };
    if -v.tps_change_pct > lim.max_tps_drop_pct {
        v.reasons.push(format!(
            "TPS fell {:.1}% over the run (limit {}%)",
            -v.tps_change_pct, lim.max_tps_drop_pct
        ));
    }
    if mean <= 0.0 {
        v.reasons.push("no throughput".into());
    }
    let rss: Vec<f64> = iv.iter().filter_map(|i| i.sys.server_rss_mb).collect();
    if rss.len() == iv.len() && rss.len() >= 2 {
        let (s, b) = linear_fit(&xs, &rss);
        let first = s * xs[0] + b;
        let pct = if first > 0.0 {
            100.0 * s * span / first
        } else {
            0.0
        };
        v.rss_change_pct = Some(pct);
        if pct > lim.max_rss_growth_pct {
            v.reasons.push(format!(
                "server RSS grew {pct:.1}% (limit {}%)",
                lim.max_rss_growth_pct
            ));
        }
    }
    let th: Vec<f64> = iv
        .iter()
        .filter_map(|i| i.sys.server_threads.map(|t| t as f64))
        .collect();
    if th.len() == iv.len() && th.len() >= 2 {
        let (s, _) = linear_fit(&xs, &th);
        let growth = s * span;
        v.threads_change = Some(growth);
        if growth > lim.max_thread_growth {
            v.reasons.push(format!(
                "server threads grew by {growth:.1} (limit {})",
                lim.max_thread_growth
            ));
        }
    }
    if r.summary.success_pct < lim.min_success_pct {
        v.reasons.push(format!(
            "success {:.3}% < {}% ({} failed events)",
            r.summary.success_pct, lim.min_success_pct, r.summary.errors
        ));
    }
    v.pass = v.reasons.is_empty();
    v
}

pub async fn soak(spec: &RunSpec, lim: &SoakLimits) -> Result<SoakResult, MethodError> {
    let run = run_point(spec).await?;
    let verdict = soak_verdict(&run, lim);
    if spec.output.summary {
        println!(
            "soak verdict: {} (TPS change {:.1}%, RSS change {}, threads change {}, failed events {})",
            if verdict.pass { "PASS (no drift)" } else { "DRIFT" },
            verdict.tps_change_pct,
            verdict.rss_change_pct.map(|p| format!("{p:.1}%")).unwrap_or_else(|| "n/a".into()),
            verdict.threads_change.map(|p| format!("{p:.1}")).unwrap_or_else(|| "n/a".into()),
            verdict.errors
        );
        for r in &verdict.reasons {
            println!("  - {r}");
        }
    }
    Ok(SoakResult { run, verdict })
}

/// A server configuration of a sweep.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub name: String,
    pub assignments: Vec<(String, String)>,
}

impl std::str::FromStr for ServerConfig {
    type Err = String;
    /// `NAME` or `NAME:var=value,var=value`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, rest) = s.split_once(':').unwrap_or((s, ""));
        if name.is_empty() {
            return Err(format!("config '{s}': empty name"));
        }
        let mut assignments = Vec::new();
        for a in rest.split(',').filter(|a| !a.trim().is_empty()) {
            let (k, v) = a
                .split_once('=')
                .ok_or_else(|| format!("config '{s}': '{a}' is not var=value"))?;
            assignments.push((k.trim().to_string(), v.trim().to_string()));
        }
        Ok(Self {
            name: name.to_string(),
            assignments,
        })
    }
}

/// Sweep parameters.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    pub base: RunSpec,
    pub threads: Vec<usize>,
    pub configs: Vec<ServerConfig>,
    pub repeat: usize,
    /// Shell template run to (re)start the server for each config: `{name}`, `{args}`
    /// (`--var=value ...`) and `{assignments}` (`var=value ...`) are substituted.
    pub restart_cmd: Option<String>,
    pub restart_timeout_s: f64,
    pub output_dir: Option<PathBuf>,
}

async fn wait_for_server(conn: &ConnOpts, timeout: Duration) -> Result<(), String> {
    let t0 = Instant::now();
    loop {
        match server::admin_conn(conn).await {
            Ok(c) => {
                let _ = c.disconnect().await;
                return Ok(());
            }
            Err(e) if t0.elapsed() > timeout => return Err(format!("server not reachable: {e}")),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Applies a configuration: restart command, or SET GLOBAL.
pub async fn apply_config(
    cfg: &ServerConfig,
    conn: &ConnOpts,
    restart_cmd: Option<&str>,
    timeout: Duration,
) -> Result<(), MethodError> {
    let err = |msg: String| MethodError::Config {
        name: cfg.name.clone(),
        msg,
    };
    if let Some(tpl) = restart_cmd {
        let args = cfg
            .assignments
            .iter()
            .map(|(k, v)| format!("--{}={v}", k.replace('_', "-")))
            .collect::<Vec<_>>()
            .join(" ");
        let asg = cfg
            .assignments
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let cmd = tpl
            .replace("{name}", &cfg.name)
            .replace("{args}", &args)
            .replace("{assignments}", &asg);
        let st = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .status()
            .await
            .map_err(|e| err(format!("restart command failed to start: {e}")))?;
        if !st.success() {
            return Err(err(format!("restart command `{cmd}` exited with {st}")));
        }
        wait_for_server(conn, timeout).await.map_err(err)?;
    } else if !cfg.assignments.is_empty() {
        let mut a = admin(conn).await?;
        server::set_globals(&mut a, &cfg.assignments)
            .await
            .map_err(|e| err(format!("SET GLOBAL: {e}")))?;
        let _ = a.disconnect().await;
    }
    Ok(())
}

/// Runs the sweep; returns the results (also saved under the output directory).
pub async fn sweep(spec: &SweepSpec) -> Result<Vec<RunResult>, MethodError> {
    let mut out = Vec::new();
    let timeout = Duration::from_secs_f64(spec.restart_timeout_s);
    for cfg in &spec.configs {
        apply_config(
            cfg,
            &spec.base.engine.conn,
            spec.restart_cmd.as_deref(),
            timeout,
        )
        .await?;
        for &t in &spec.threads {
            for rep in 0..spec.repeat.max(1) {
                let mut r = spec.base.clone();
                r.threads = t;
                r.label = cfg.name.clone();
                // A restart may change the server PID.
                r.server_pid = if spec.restart_cmd.is_some() {
                    None
                } else {
                    r.server_pid
                };
                if spec.base.output.summary {
                    println!(
                        "== sweep: config {} threads {t} repetition {}",
                        cfg.name,
                        rep + 1
                    );
                }
                let res = run_point(&r).await?;
                println!(
                    "{:<12} {:>6} clients rep {}: tps {:.1} qps {:.1} p95 {:.1} ms p99 {:.1} ms errors {}",
                    cfg.name,
                    t,
                    rep + 1,
                    res.summary.tps,
                    res.summary.qps,
                    res.summary.latency_ms.p95,
                    res.summary.latency_ms.p99,
                    res.summary.errors
                );
                if let Some(dir) = &spec.output_dir {
                    let p = dir.join(sweep_file_name(&cfg.name, t, rep + 1));
                    ResultFile::Run(Box::new(res.clone())).save(&p)?;
                }
                out.push(res);
            }
        }
    }
    Ok(out)
}

/// The file a sweep saves the run of configuration `config` at `threads` clients, repetition
/// `rep` (from 1) under: `run-NAME-THREADS-rREP.json`.
pub fn sweep_file_name(config: &str, threads: usize, rep: usize) -> String {
    format!("run-{}-{threads}-r{rep}.json", sanitize(config))
}

/// A file-name-safe version of a label.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line_has_elapsed_total_tps_p99_errors() {
        let l = progress_line(
            "mariadb sweep a",
            12.4,
            60.0,
            false,
            8,
            812.34,
            15.25,
            3,
            0.5,
        );
        assert_eq!(
            l,
            "[mariadb sweep a] elapsed 12s/60s (21%) clients 8 tps 812.3 p99 15.2 ms errors 3 (0.5/s)"
        );
        let l = progress_line("step", 30.0, 300.0, true, 80, 1.0, 2.0, 0, 0.0);
        assert!(l.contains("elapsed 30s/≤300s (10%)"), "{l}");
        let l = progress_line("run", 5.0, 0.0, false, 1, 1.0, 2.0, 0, 0.0);
        assert!(l.contains("elapsed 5s clients"), "{l}");
    }

    #[test]
    fn parses_configs() {
        let c: ServerConfig = "pool:thread_pool_size=4,thread_pool_oversubscribe=3"
            .parse()
            .unwrap();
        assert_eq!(c.name, "pool");
        assert_eq!(c.assignments.len(), 2);
        assert_eq!(
            c.assignments[1],
            ("thread_pool_oversubscribe".into(), "3".into())
        );
        let d: ServerConfig = "baseline".parse().unwrap();
        assert!(d.assignments.is_empty());
        assert!("x:novalue".parse::<ServerConfig>().is_err());
    }
}
