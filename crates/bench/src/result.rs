//! Result files: what a run, step test, soak or sweep stores (JSON), so runs can be compared and
//! rendered later by `shoal-bench report`.

use crate::client::{ConnOpts, PsMode};
use crate::sysmon::SysDelta;
use crate::workload::WorkloadOpts;
use std::collections::BTreeMap;
use std::path::Path;

/// Latency distribution in milliseconds.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
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

/// Totals of a measurement window.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
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
    /// All errors (ignored and not) by MySQL error code.
    pub errors_by_code: BTreeMap<u16, u64>,
    pub reconnects: u64,
    /// Completed events / (completed + failed + retried), in %.
    pub success_pct: f64,
    /// Statement executions by kind (including failed ones), as sent to the server.
    pub statements_by_kind: BTreeMap<String, u64>,
    /// Open loop: largest number of events waiting for a free client.
    pub max_queue_depth: u64,
}

/// One per-interval line.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ServerSnapshot {
    /// SHOW GLOBAL STATUS.
    pub status: BTreeMap<String, String>,
    /// information_schema.THREAD_POOL_* tables (when the server has them): table -> rows.
    pub thread_pool: BTreeMap<String, Vec<BTreeMap<String, Option<String>>>>,
}

/// One measured point.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
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

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SoakResult {
    pub run: RunResult,
    pub verdict: SoakVerdict,
}

/// Any stored result file.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ResultFile {
    Run(Box<RunResult>),
    Step(Box<StepResult>),
    Soak(Box<SoakResult>),
}

#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a shoal-bench result: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
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
        serde_json::from_str(&s).map_err(|e| ResultError::Json {
            path: path.display().to_string(),
            source: e,
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

#[cfg(test)]
mod tests {
    use super::*;

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
