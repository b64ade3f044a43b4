//! Result files: what a run, step test, soak or sweep stores (JSON), so runs can be compared and
//! rendered later by `shoal-bench report`.

use crate::client::{ConnOpts, PsMode};
use crate::sysmon::SysDelta;
use crate::workload::WorkloadOpts;
use std::collections::BTreeMap;
use std::path::Path;

/// Latency distribution in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Latency {
    pub min: f64,
    pub avg: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Latency {
    /// From a histogram of microseconds.
    pub fn from_hist(h: &hdrhistogram::Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let ms = |v: u64| v as f64 / 1000.0;
        Self {
            min: ms(h.min()),
            avg: h.mean() / 1000.0,
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
        }
    }
}

/// Reading `errors_by_code`: keys are MySQL error codes written as JSON strings (`"1213"`);
/// integers are accepted too. serde_json parses string keys into integers only when it
/// deserializes the map itself; inside an internally tagged enum (how every result file is
/// read) serde first buffers the object and then offers the keys as plain strings, which
/// `u16` refuses ("invalid type: string \"1213\", expected u16").
pub mod error_codes {
    use serde::de::{Deserializer, Error, MapAccess, Visitor};
    use std::collections::BTreeMap;
    use std::fmt;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<u16, u64>, D::Error> {
        d.deserialize_map(Codes)
    }

    struct Codes;

    impl<'de> Visitor<'de> for Codes {
        type Value = BTreeMap<u16, u64>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map from MySQL error codes to counts")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((Code(c), n)) = m.next_entry::<Code, u64>()? {
                if out.insert(c, n).is_some() {
                    return Err(A::Error::custom(format!("error code {c} appears twice")));
                }
            }
            Ok(out)
        }
    }

    /// One key: "1213" or 1213.
    struct Code(u16);

    impl<'de> serde::Deserialize<'de> for Code {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(CodeVisitor)
        }
    }

    struct CodeVisitor;

    impl<'de> Visitor<'de> for CodeVisitor {
        type Value = Code;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a MySQL error code (0-65535), as a string or an integer")
        }

        fn visit_str<E: Error>(self, v: &str) -> Result<Code, E> {
            v.trim()
                .parse::<u16>()
                .map(Code)
                .map_err(|_| E::custom(format!("\"{v}\" is not a MySQL error code (0-65535)")))
        }

        fn visit_u64<E: Error>(self, v: u64) -> Result<Code, E> {
            u16::try_from(v)
                .map(Code)
                .map_err(|_| E::custom(format!("{v} is not a MySQL error code (0-65535)")))
        }

        fn visit_i64<E: Error>(self, v: i64) -> Result<Code, E> {
            u16::try_from(v)
                .map(Code)
                .map_err(|_| E::custom(format!("{v} is not a MySQL error code (0-65535)")))
        }
    }
}

/// Totals of a measurement window.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub secs: f64,
    /// Completed events (transactions for the multi-statement workloads).
    pub events: u64,
    /// Successful statements.
    pub queries: u64,
    pub reads: u64,
    pub writes: u64,
    pub other: u64,
    pub tps: f64,
    pub qps: f64,
    pub latency_ms: Latency,
    /// Errors sysbench ignores (1213/1205/1020 by default): the event was retried.
    pub ignored_errors: u64,
    /// Events that failed with another error.
    pub errors: u64,
    /// All errors (ignored and not) by MySQL error code. Written as a JSON object with
    /// string keys (`{"1213": 18}`), which a plain `BTreeMap<u16, _>` cannot read back once
    /// serde has buffered it (every file is read through the internally tagged
    /// [`ResultFile`]); [`error_codes`] reads string and integer keys.
    #[serde(deserialize_with = "error_codes::deserialize")]
    pub errors_by_code: BTreeMap<u16, u64>,
    pub reconnects: u64,
    /// Completed events / (completed + failed + retried), in %.
    pub success_pct: f64,
    /// Statement executions by kind (including failed ones), as sent to the server.
    pub statements_by_kind: BTreeMap<String, u64>,
    /// Open loop: largest number of events waiting for a free client.
    pub max_queue_depth: u64,
    /// tpcc: New-Order transactions committed per minute (TPC-C's tpmC, here without think
    /// times and at the configured scale).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpmc: Option<f64>,
    /// tpcc: completed transactions by type (`new_order`, `payment`, `order_status`,
    /// `delivery`, `stock_level`; New-Orders rolled back on their invalid item are counted
    /// under `new_order_rolled_back`, not `new_order`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub transactions_by_type: BTreeMap<String, u64>,
}

/// One per-interval line.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Interval {
    /// Seconds since the start of the load at the end of this interval.
    pub t: f64,
    pub threads: usize,
    pub tps: f64,
    pub qps: f64,
    pub reads_per_s: f64,
    pub writes_per_s: f64,
    pub other_per_s: f64,
    pub latency_ms: Latency,
    pub errors_per_s: f64,
    pub ignored_per_s: f64,
    pub reconnects_per_s: f64,
    /// Open loop: events waiting for a client at the end of the interval.
    pub queue_depth: u64,
    pub sys: SysDelta,
}

/// Server-side snapshots.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServerSnapshot {
    /// SHOW GLOBAL STATUS.
    pub status: BTreeMap<String, String>,
    /// information_schema.THREAD_POOL_* tables (when the server has them): table -> rows.
    pub thread_pool: BTreeMap<String, Vec<BTreeMap<String, Option<String>>>>,
}

/// One measured point.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunResult {
    /// Server configuration label (sweep config name, or `--label`).
    pub label: String,
    pub workload: String,
    pub threads: usize,
    /// Target rate (events/s) for an open loop; 0 = closed loop.
    pub rate: f64,
    pub ps_mode: PsMode,
    pub opts: WorkloadOpts,
    pub conn: ConnOpts,
    pub server_pid: Option<u32>,
    /// Unix time at the start.
    pub started_unix: f64,
    pub warmup_s: f64,
    /// Time to connect all clients and prepare their statements.
    pub connect_s: f64,
    pub summary: Summary,
    /// System measurements over the measurement window.
    pub sys: SysDelta,
    pub intervals: Vec<Interval>,
    pub before: ServerSnapshot,
    pub after: ServerSnapshot,
    /// Numeric deltas of SHOW GLOBAL STATUS (after - before), non-zero ones.
    pub status_delta: BTreeMap<String, f64>,
    /// SHOW GLOBAL VARIABLES at the start.
    pub variables: BTreeMap<String, String>,
    /// Load-generator bottleneck and other warnings.
    pub warnings: Vec<String>,
    /// Runtime worker threads of the load generator.
    pub client_threads: usize,
}

/// One step of a stepped-load test.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepRecord {
    pub threads: usize,
    pub summary: Summary,
    pub sys: SysDelta,
    /// CPU % the CPU threshold was compared with.
    pub cpu_pct: f64,
    pub healthy: bool,
    /// Thresholds broken by this step.
    pub broken: Vec<String>,
}

/// Health thresholds (defaults from the source test plan).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Thresholds {
    pub max_cpu_pct: f64,
    pub max_iowait_pct: f64,
    pub min_success_pct: f64,
    pub max_p90_ms: f64,
    pub max_mem_pct: f64,
    /// Which CPU is compared: "server" (server process / CPUs) or "machine".
    pub cpu_source: String,
}

impl Thresholds {
    /// Broken thresholds for a window.
    pub fn check(&self, s: &Summary, sys: &SysDelta) -> (f64, Vec<String>) {
        let cpu = self.cpu_of(sys);
        let mut b = Vec::new();
        if cpu > self.max_cpu_pct {
            b.push(format!(
                "cpu {cpu:.1}% > {}% ({})",
                self.max_cpu_pct, self.cpu_source
            ));
        }
        if sys.cpu_iowait_pct > self.max_iowait_pct {
            b.push(format!(
                "iowait {:.1}% > {}%",
                sys.cpu_iowait_pct, self.max_iowait_pct
            ));
        }
        if s.success_pct < self.min_success_pct {
            b.push(format!(
                "success {:.3}% < {}%",
                s.success_pct, self.min_success_pct
            ));
        }
        if s.latency_ms.p90 > self.max_p90_ms {
            b.push(format!(
                "p90 {:.1} ms > {} ms",
                s.latency_ms.p90, self.max_p90_ms
            ));
        }
        if sys.mem_used_pct > self.max_mem_pct {
            b.push(format!(
                "memory {:.1}% > {}%",
                sys.mem_used_pct, self.max_mem_pct
            ));
        }
        if s.events == 0 {
            b.push("no transaction completed".into());
        }
        (cpu, b)
    }

    pub fn cpu_of(&self, sys: &SysDelta) -> f64 {
        match (
            self.cpu_source.as_str(),
            sys.server_cpu_user_pct,
            sys.server_cpu_sys_pct,
        ) {
            ("server", Some(u), Some(s)) => (u + s) / f64::from(sys.cpus.max(1)),
            _ => sys.cpu_busy_pct,
        }
    }
}

/// A stepped-load test.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepResult {
    pub label: String,
    pub workload: String,
    pub thresholds: Thresholds,
    pub start_threads: usize,
    pub step_threads: usize,
    pub step_s: f64,
    pub steps: Vec<StepRecord>,
    /// Why stepping stopped.
    pub stop_reason: String,
    /// Last healthy step's concurrency.
    pub knee_threads: Option<usize>,
    pub knee_tps: Option<f64>,
    /// The confirmation run at the knee, if any.
    pub confirmation: Option<RunResult>,
    pub confirmed: Option<bool>,
    pub confirmation_broken: Vec<String>,
    pub intervals: Vec<Interval>,
    pub warnings: Vec<String>,
}

/// Soak verdict.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SoakVerdict {
    pub pass: bool,
    pub reasons: Vec<String>,
    /// Fitted TPS change from first to last interval, % of the mean.
    pub tps_change_pct: f64,
    pub tps_slope_per_hour: f64,
    pub rss_change_pct: Option<f64>,
    pub threads_change: Option<f64>,
    pub errors: u64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SoakResult {
    pub run: RunResult,
    pub verdict: SoakVerdict,
}

/// The machine the tool ran on (the server's too when it is reached over loopback).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cpus: u32,
    pub mem_total_mb: f64,
    pub kernel: String,
}

impl Machine {
    /// From /proc.
    pub fn read() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == "model name").then(|| v.trim().to_string())
            })
            .unwrap_or_default();
        let mem_total_mb = std::fs::read_to_string("/proc/meminfo")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(0.0);
        Self {
            cpu_model,
            cpus: crate::sysmon::cpus(),
            mem_total_mb,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim()
                .to_string(),
        }
    }
}

/// What a plan's `environment` phase records about one server: version, variables, the
/// machine, and the data size against the buffer pool.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EnvInfo {
    /// The plan's name for the server.
    pub server: String,
    pub plan: String,
    pub started_unix: f64,
    /// `SELECT VERSION()`.
    pub version: String,
    /// SHOW GLOBAL VARIABLES.
    pub variables: BTreeMap<String, String>,
    pub machine: Machine,
    pub workload: String,
    pub tables: u32,
    pub table_size: u32,
    /// Data + index bytes of the sbtest tables from information_schema.TABLES, when the
    /// server reports them.
    pub data_bytes: Option<u64>,
    /// `innodb_buffer_pool_size`, when the server has it.
    pub buffer_pool_bytes: Option<u64>,
    pub conn: ConnOpts,
    /// The load generator's runtime worker threads.
    pub client_threads: usize,
    pub tool_version: String,
}

impl EnvInfo {
    /// Data size: reported by the server, or estimated from the rows (sysbench rows are about
    /// 190 bytes of data plus the secondary index, ~230 bytes per row in InnoDB). The flag
    /// says whether it is an estimate.
    pub fn data_size(&self) -> (u64, bool) {
        match self.data_bytes {
            Some(b) if b > 0 => (b, false),
            _ => (
                u64::from(self.tables) * u64::from(self.table_size) * 230,
                true,
            ),
        }
    }
}

/// Any stored result file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ResultFile {
    Run(Box<RunResult>),
    Step(Box<StepResult>),
    Soak(Box<SoakResult>),
    /// A plan's record of the server and machine.
    Env(Box<EnvInfo>),
}

#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// Not JSON at all.
    #[error("{path}: not valid JSON: {source}")]
    NotJson {
        path: String,
        source: serde_json::Error,
    },
    /// JSON, but not a result file (no string `kind` field).
    #[error("{path}: not a shoal-bench result (no \"kind\" field)")]
    NotAResult { path: String },
    /// A result file (it has a `kind`) whose content does not read back.
    #[error("{path}: unreadable shoal-bench result (kind \"{kind}\"): {source}")]
    Json {
        path: String,
        kind: String,
        source: serde_json::Error,
    },
}

impl ResultError {
    /// The file the error is about.
    pub fn path(&self) -> &str {
        match self {
            Self::Io { path, .. }
            | Self::NotJson { path, .. }
            | Self::NotAResult { path }
            | Self::Json { path, .. } => path,
        }
    }

    /// The same error about `path`.
    fn at(mut self, p: &Path) -> Self {
        match &mut self {
            Self::Io { path, .. }
            | Self::NotJson { path, .. }
            | Self::NotAResult { path }
            | Self::Json { path, .. } => *path = p.display().to_string(),
        }
        self
    }

    /// Why the file could not be used, without the path.
    pub fn reason(&self) -> String {
        match self {
            Self::Io { source, .. } => source.to_string(),
            Self::NotJson { source, .. } => format!("not valid JSON: {source}"),
            Self::NotAResult { .. } => "not a shoal-bench result (no \"kind\" field)".into(),
            Self::Json { kind, source, .. } => {
                format!("unreadable shoal-bench result (kind \"{kind}\"): {source}")
            }
        }
    }
}

impl ResultFile {
    /// The file name `run`, `step` and `soak` save a result under (`stamp`: something unique,
    /// the tool uses Unix milliseconds). Sweeps name theirs with [`crate::method::sweep_file_name`].
    pub fn file_name(&self, stamp: &str) -> String {
        use crate::method::sanitize;
        match self {
            Self::Run(r) => format!(
                "run-{}-{}-{}-{stamp}.json",
                sanitize(&r.label),
                r.workload,
                r.threads
            ),
            Self::Step(s) => format!("step-{}-{}-{stamp}.json", sanitize(&s.label), s.workload),
            Self::Soak(s) => format!(
                "soak-{}-{}-{stamp}.json",
                sanitize(&s.run.label),
                s.run.workload
            ),
            Self::Env(e) => format!("env-{}-{stamp}.json", sanitize(&e.server)),
        }
    }

    pub fn save(&self, path: &Path) -> Result<(), ResultError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| ResultError::Io {
                path: dir.display().to_string(),
                source: e,
            })?;
        }
        let s = serde_json::to_string_pretty(self).expect("results serialize");
        std::fs::write(path, s).map_err(|e| ResultError::Io {
            path: path.display().to_string(),
            source: e,
        })
    }

    pub fn load(path: &Path) -> Result<Self, ResultError> {
        let s = std::fs::read_to_string(path).map_err(|e| ResultError::Io {
            path: path.display().to_string(),
            source: e,
        })?;
        Self::parse(&s).map_err(|e| e.at(path))
    }

    /// Parses the text of a result file; errors carry an empty path (see `ResultError::at`).
    pub fn parse(s: &str) -> Result<Self, ResultError> {
        serde_json::from_str(s).map_err(|source| {
            // Only on failure: tell "not JSON" and "not ours" apart from a broken result.
            match serde_json::from_str::<serde_json::Value>(s) {
                Err(source) => ResultError::NotJson {
                    path: String::new(),
                    source,
                },
                Ok(v) => match v.get("kind").and_then(|k| k.as_str()) {
                    None => ResultError::NotAResult {
                        path: String::new(),
                    },
                    Some(kind) => ResultError::Json {
                        path: String::new(),
                        kind: kind.to_string(),
                        source,
                    },
                },
            }
        })
    }
}

/// Least-squares slope and intercept of y over x.
pub fn linear_fit(xs: &[f64], ys: &[f64]) -> (f64, f64) {
    let n = xs.len().min(ys.len());
    if n < 2 {
        return (0.0, ys.first().copied().unwrap_or(0.0));
    }
    let mx = xs[..n].iter().sum::<f64>() / n as f64;
    let my = ys[..n].iter().sum::<f64>() / n as f64;
    let mut num = 0.0;
    let mut den = 0.0;
    for i in 0..n {
        num += (xs[i] - mx) * (ys[i] - my);
        den += (xs[i] - mx) * (xs[i] - mx);
    }
    let slope = if den > 0.0 { num / den } else { 0.0 };
    (slope, my - slope * mx)
}

/// Results with every field filled in (errors by code, reconnects, server measurements,
/// snapshots, warnings), for the round-trip tests here and in [`crate::report`]. Values are
/// short decimals, which JSON represents exactly.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use crate::client::{ConnOpts, PsMode};
    use crate::rand::{RandSpec, RandType};
    use crate::workload::WorkloadOpts;
    use std::path::PathBuf;

    /// A fresh, empty directory under the system temp directory.
    pub fn dir(name: &str) -> PathBuf {
        static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!(
            "shoal-bench-unit-{}-{}-{name}",
            std::process::id(),
            SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    pub fn codes(v: &[(u16, u64)]) -> BTreeMap<u16, u64> {
        v.iter().copied().collect()
    }

    pub fn summary(tps: f64, codes: BTreeMap<u16, u64>, reconnects: u64) -> Summary {
        let ignored = codes
            .iter()
            .filter(|(c, _)| [1213, 1205, 1020].contains(*c))
            .map(|(_, n)| n)
            .sum();
        let errors = codes.values().sum::<u64>() - ignored;
        Summary {
            secs: 5.0,
            events: (tps * 5.0) as u64,
            queries: (tps * 5.0) as u64 * 18,
            reads: (tps * 5.0) as u64 * 14,
            writes: (tps * 5.0) as u64 * 4,
            other: 0,
            tps,
            qps: tps * 18.0,
            latency_ms: Latency {
                min: 0.5,
                avg: 12.25,
                p50: 10.5,
                p90: 25.75,
                p95: 30.5,
                p99: 48.25,
                p999: 90.125,
                max: 120.5,
            },
            ignored_errors: ignored,
            errors,
            errors_by_code: codes,
            reconnects,
            success_pct: 99.5,
            statements_by_kind: [("point_select".to_string(), 1000), ("commit".into(), 100)]
                .into_iter()
                .collect(),
            max_queue_depth: 7,
            tpmc: Some(tps * 0.45 * 60.0),
            transactions_by_type: [("new_order".to_string(), 45), ("payment".into(), 43)]
                .into_iter()
                .collect(),
        }
    }

    pub fn sys() -> SysDelta {
        SysDelta {
            secs: 1.0,
            cpu_user_pct: 40.5,
            cpu_sys_pct: 20.25,
            cpu_iowait_pct: 1.5,
            cpu_idle_pct: 37.75,
            cpu_busy_pct: 60.75,
            ctx_switches_per_s: 12000.5,
            net_bytes_per_s: 1048576.0,
            mem_used_pct: 42.5,
            server_cpu_user_pct: Some(80.5),
            server_cpu_sys_pct: Some(30.25),
            server_rss_mb: Some(512.5),
            server_threads: Some(70),
            server_ctx_switches_per_s: Some(9000.5),
            tool_cpu_pct: 15.5,
            tool_runq_ms_per_s: 2.5,
            tool_threads: 3,
            cpus: 2,
        }
    }

    pub fn interval(t: f64, codes_per_s: f64) -> Interval {
        Interval {
            t,
            threads: 64,
            tps: 1000.0 - t,
            qps: 18000.0 - t,
            reads_per_s: 14000.0,
            writes_per_s: 4000.0,
            other_per_s: 0.5,
            latency_ms: summary(1.0, BTreeMap::new(), 0).latency_ms,
            errors_per_s: codes_per_s,
            ignored_per_s: codes_per_s * 2.0,
            reconnects_per_s: 0.25,
            queue_depth: 3,
            sys: SysDelta {
                server_rss_mb: Some(500.0 + t),
                ..sys()
            },
        }
    }

    /// A run at `threads` clients that saw deadlocks, lock wait timeouts, a duplicate key and
    /// reconnects.
    pub fn run(label: &str, threads: usize, tps: f64) -> RunResult {
        let snap = |n: &str| ServerSnapshot {
            status: [
                ("Com_select".to_string(), n.to_string()),
                ("Threadpool_threads".into(), "8".into()),
            ]
            .into_iter()
            .collect(),
            thread_pool: [(
                "THREAD_POOL_GROUPS".to_string(),
                vec![[
                    ("GROUP_ID".to_string(), Some("0".to_string())),
                    ("QUEUE_LENGTH".into(), None),
                ]
                .into_iter()
                .collect()],
            )]
            .into_iter()
            .collect(),
        };
        RunResult {
            label: label.into(),
            workload: "oltp_read_write".into(),
            threads,
            rate: 0.0,
            ps_mode: PsMode::Auto,
            opts: WorkloadOpts {
                tables: 4,
                rand: RandSpec {
                    kind: RandType::Pareto,
                    pareto_h: 0.25,
                    ..RandSpec::default()
                },
                ..WorkloadOpts::default()
            },
            conn: ConnOpts {
                host: "127.0.0.1".into(),
                port: 3307,
                socket: Some("/tmp/shoal.sock".into()),
                user: "sbtest".into(),
                password: String::new(),
                db: "sbtest".into(),
                ssl: false,
                ssl_ca: None,
            },
            server_pid: Some(4242),
            started_unix: 1700000000.5,
            warmup_s: 2.0,
            connect_s: 0.75,
            summary: summary(tps, codes(&[(1213, 18), (1205, 2), (1062, 3)]), 4),
            sys: sys(),
            intervals: (1..=5)
                .map(|t| interval(f64::from(t), 0.5 * f64::from(t)))
                .collect(),
            before: snap("100"),
            after: snap("1900"),
            status_delta: [("Com_select".to_string(), 1800.0)].into_iter().collect(),
            variables: [("thread_handling".to_string(), "pool-of-threads".to_string())]
                .into_iter()
                .collect(),
            warnings: vec!["3 failed events; last error: duplicate key".into()],
            client_threads: 2,
        }
    }

    pub fn step() -> StepResult {
        let step =
            |threads: usize, tps: f64, codes: BTreeMap<u16, u64>, healthy: bool| StepRecord {
                threads,
                summary: summary(tps, codes, 1),
                sys: sys(),
                cpu_pct: 55.5,
                healthy,
                broken: if healthy {
                    vec![]
                } else {
                    vec!["success 97.500% < 99.99%".into()]
                },
            };
        let mut confirmation = run("stepped (confirmation)", 80, 950.0);
        confirmation.summary.errors_by_code = codes(&[(1213, 5), (2013, 1)]);
        StepResult {
            label: "stepped".into(),
            workload: "oltp_read_write".into(),
            thresholds: Thresholds {
                max_cpu_pct: 70.0,
                max_iowait_pct: 30.0,
                min_success_pct: 99.99,
                max_p90_ms: 100.0,
                max_mem_pct: 70.0,
                cpu_source: "server".into(),
            },
            start_threads: 40,
            step_threads: 40,
            step_s: 300.0,
            steps: vec![
                step(40, 500.0, codes(&[(1213, 1)]), true),
                step(80, 900.0, codes(&[(1213, 9), (1205, 4)]), true),
                step(
                    120,
                    920.0,
                    codes(&[(1213, 250), (1020, 7), (1062, 11)]),
                    false,
                ),
            ],
            stop_reason: "threshold broken at 120 clients: success".into(),
            knee_threads: Some(80),
            knee_tps: Some(900.0),
            confirmation: Some(confirmation),
            confirmed: Some(false),
            confirmation_broken: vec!["p90 125.0 ms > 100 ms".into()],
            intervals: (1..=3).map(|t| interval(f64::from(t), 1.0)).collect(),
            warnings: vec!["load generator bottleneck: in 2 of 3 intervals".into()],
        }
    }

    pub fn env() -> EnvInfo {
        EnvInfo {
            server: "srv".into(),
            plan: "fixture plan".into(),
            started_unix: 1700000000.5,
            version: "10.11.19-MariaDB".into(),
            variables: [
                ("thread_handling".to_string(), "pool-of-threads".to_string()),
                ("thread_pool_size".into(), "2".into()),
                ("innodb_buffer_pool_size".into(), "33554432".into()),
            ]
            .into_iter()
            .collect(),
            machine: Machine {
                cpu_model: "Test CPU".into(),
                cpus: 2,
                mem_total_mb: 24000.0,
                kernel: "6.1".into(),
            },
            workload: "oltp_read_write".into(),
            tables: 4,
            table_size: 100000,
            data_bytes: Some(100_000_000),
            buffer_pool_bytes: Some(33554432),
            conn: run("x", 1, 1.0).conn,
            client_threads: 2,
            tool_version: "0.1.0".into(),
        }
    }

    pub fn soak() -> SoakResult {
        let mut run = run("soaked", 52, 700.0);
        run.summary.errors_by_code = codes(&[(1213, 40), (1205, 6), (1927, 2)]);
        run.summary.reconnects = 2;
        SoakResult {
            run,
            verdict: SoakVerdict {
                pass: false,
                reasons: vec!["server RSS grew 25.5% (limit 20%)".into()],
                tps_change_pct: -3.5,
                tps_slope_per_hour: -12.25,
                rss_change_pct: Some(25.5),
                threads_change: Some(1.5),
                errors: 2,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Saves `r` with the tool's writer under the tool's file name in a fresh directory and
    /// reads it back with the tool's reader; returns what was read and the file's text.
    fn round_trip(r: &ResultFile, name: &str) -> (ResultFile, String) {
        let d = fixtures::dir(name);
        let p = d.join(r.file_name("1700000000000"));
        r.save(&p).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let back = ResultFile::load(&p).unwrap_or_else(|e| panic!("{e}"));
        let _ = std::fs::remove_dir_all(&d);
        (back, text)
    }

    #[test]
    fn run_with_errors_and_reconnects_reads_back() {
        let mut r = fixtures::run("cfg", 64, 1000.0);
        r.rate = 1500.0;
        let f = ResultFile::Run(Box::new(r.clone()));
        let (back, text) = round_trip(&f, "run");
        assert_eq!(back, f);
        // The format users see is unchanged: error codes are string keys.
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["kind"], "run");
        assert_eq!(v["summary"]["errors_by_code"]["1213"], 18);
        assert_eq!(v["summary"]["errors_by_code"]["1062"], 3);
        assert_eq!(v["summary"]["reconnects"], 4);
    }

    #[test]
    fn run_file_does_not_store_the_password() {
        let mut r = fixtures::run("cfg", 8, 100.0);
        r.conn.password = "s3cret-pw".into();
        let (back, text) = round_trip(&ResultFile::Run(Box::new(r.clone())), "password");
        assert!(!text.contains("s3cret-pw"));
        r.conn.password = String::new();
        assert_eq!(back, ResultFile::Run(Box::new(r)));
    }

    #[test]
    fn step_with_errors_and_confirmation_reads_back() {
        let f = ResultFile::Step(Box::new(fixtures::step()));
        let (back, text) = round_trip(&f, "step");
        assert_eq!(back, f);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["steps"][2]["summary"]["errors_by_code"]["1062"], 11);
        assert_eq!(v["confirmation"]["summary"]["errors_by_code"]["2013"], 1);
    }

    #[test]
    fn soak_with_errors_reads_back() {
        let f = ResultFile::Soak(Box::new(fixtures::soak()));
        let (back, text) = round_trip(&f, "soak");
        assert_eq!(back, f);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["run"]["summary"]["errors_by_code"]["1927"], 2);
    }

    #[test]
    fn env_reads_back() {
        let f = ResultFile::Env(Box::new(fixtures::env()));
        let (back, text) = round_trip(&f, "env");
        assert_eq!(back, f);
        assert!(text.contains("\"kind\": \"env\""));
        let ResultFile::Env(e) = back else { panic!() };
        assert_eq!(e.data_size(), (100_000_000, false));
        let est = EnvInfo {
            data_bytes: None,
            ..*e
        };
        assert_eq!(est.data_size(), (4 * 100_000 * 230, true));
    }

    #[test]
    fn sweep_runs_read_back() {
        let d = fixtures::dir("sweep");
        for (cfg, t) in [("pool size=4", 8), ("per-conn", 512)] {
            let f = ResultFile::Run(Box::new(fixtures::run(cfg, t, 800.0)));
            let p = d.join(crate::method::sweep_file_name(cfg, t, 2));
            f.save(&p).unwrap();
            assert_eq!(ResultFile::load(&p).unwrap_or_else(|e| panic!("{e}")), f);
        }
        assert!(d.join("run-pool_size_4-8-r2.json").exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn error_codes_accept_string_and_integer_keys_only_when_valid() {
        use serde::de::value::{Error, MapDeserializer};
        let from_ints = error_codes::deserialize(MapDeserializer::<_, Error>::new(
            [(1213u64, 2u64), (1205, 1)].into_iter(),
        ))
        .unwrap();
        assert_eq!(from_ints, fixtures::codes(&[(1213, 2), (1205, 1)]));
        let from_strs = error_codes::deserialize(MapDeserializer::<_, Error>::new(
            [("1213", 2u64), ("2013", 5)].into_iter(),
        ))
        .unwrap();
        assert_eq!(from_strs, fixtures::codes(&[(1213, 2), (2013, 5)]));
        for bad in ["deadlock", "70000", "-1"] {
            let e = error_codes::deserialize(MapDeserializer::<_, Error>::new(
                [(bad, 1u64)].into_iter(),
            ))
            .unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn unreadable_files_say_why() {
        let d = fixtures::dir("why");
        let mut broken =
            serde_json::to_value(ResultFile::Run(Box::new(fixtures::run("x", 1, 1.0)))).unwrap();
        broken["summary"]["errors_by_code"]["deadlock"] = 1.into();
        let bad = broken.to_string();
        for (name, text, want) in [
            (
                "trunc.json",
                "{\"kind\": \"run\", \"label\":",
                "not valid JSON",
            ),
            ("other.json", "{\"name\": \"x\"}", "no \"kind\" field"),
            ("bad.json", bad.as_str(), "kind \"run\""),
        ] {
            let p = d.join(name);
            std::fs::write(&p, text).unwrap();
            let e = ResultFile::load(&p).unwrap_err();
            assert_eq!(e.path(), p.display().to_string());
            assert!(e.reason().contains(want), "{name}: {}", e.reason());
            assert!(e.to_string().starts_with(&p.display().to_string()), "{e}");
        }
        assert!(ResultFile::load(&d.join("bad.json"))
            .unwrap_err()
            .reason()
            .contains("\"deadlock\" is not a MySQL error code"));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn fit_recovers_a_line() {
        let xs: Vec<f64> = (0..10).map(f64::from).collect();
        let ys: Vec<f64> = xs.iter().map(|x| 3.0 * x + 2.0).collect();
        let (s, i) = linear_fit(&xs, &ys);
        assert!((s - 3.0).abs() < 1e-9 && (i - 2.0).abs() < 1e-9);
    }

    #[test]
    fn thresholds_flag_p90_and_errors() {
        let t = Thresholds {
            max_cpu_pct: 70.0,
            max_iowait_pct: 30.0,
            min_success_pct: 99.99,
            max_p90_ms: 100.0,
            max_mem_pct: 100.0,
            cpu_source: "machine".into(),
        };
        let mut s = Summary {
            events: 10,
            success_pct: 100.0,
            ..Default::default()
        };
        s.latency_ms.p90 = 150.0;
        let sys = SysDelta {
            cpu_busy_pct: 50.0,
            ..Default::default()
        };
        let (_, b) = t.check(&s, &sys);
        assert_eq!(b.len(), 1, "{b:?}");
        s.latency_ms.p90 = 10.0;
        s.success_pct = 99.0;
        assert_eq!(t.check(&s, &sys).1.len(), 1);
        s.success_pct = 100.0;
        assert!(t.check(&s, &sys).1.is_empty());
    }
}
