//! `shoal-bench plan PLAN.toml --output=DIR`: the whole capacity-test sequence from one file.
//!
//! For every `[[server]]` of the plan, in order, these phases run (each one only if its section
//! is in the plan):
//!
//! 1. `prepare`: create and fill the tables (`if-missing`: only when they are not there with
//!    at least `table_size` rows; `always`; `never`).
//! 2. `environment`: server version and variables, the machine, data size vs buffer pool
//!    (`env.json`).
//! 3. `baseline`: one run at the server's own settings (`baseline.json`).
//! 4. `sweep`: concurrencies × configurations of server settings applied with `SET GLOBAL`
//!    (`sweep-CONFIG-THREADS-rREP.json`, one file per point; a point already on disk is
//!    not run again).
//! 5. `step`: stepped load from `start` clients, `+step` every `time` seconds, until a
//!    threshold breaks; the knee is the last healthy step (`step.json`).
//! 6. `confirm`: the knee again from scratch; must be healthy again (stored in `step.json`).
//! 7. `soak`: fixed load for a long time with a drift verdict (`soak.json`).
//!
//! then one report over everything (`DIR/report.html`, `.md`, `report_svg/`).
//!
//! Resuming: each finished phase writes a marker `DIR/SERVER/.phases/PHASE.done` (JSON: the
//! files it wrote, a note). A phase whose marker exists and whose files are all present is
//! skipped, so running the same plan into the same directory again continues where an
//! interruption stopped. Results and markers are written to a temporary name and renamed,
//! so an interruption never leaves a half-written file that looks finished.
//!
//! Settings: only variables the server can change at run time are accepted. Those that need
//! a restart (see [`RESTART_ONLY`]; and any the server reports read-only when the plan
//! checks it before running) are refused with an error naming them: run such alternatives
//! as separate `[[server]]` entries, each server started with its value.

use crate::client::{query_rows, ConnOpts, PsMode};
use crate::engine::EngineCfg;
use crate::method::{self, Output, RunSpec, SoakLimits, StepSpec};
use crate::rand::{RandSpec, RandType};
use crate::result::{EnvInfo, Machine, ResultFile, RunResult, StepResult, Thresholds};
use crate::server;
use crate::workload::{Workload, WorkloadDef, WorkloadOpts};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The copy of the plan kept in the output directory (and the mark of a plan directory).
pub const PLAN_COPY: &str = "plan.toml";
/// The directory of phase markers inside each server's directory.
pub const SERVER_MARK: &str = ".phases";

/// Server variables that cannot be changed with `SET GLOBAL` on MySQL/MariaDB/Percona
/// servers (or whose change only takes effect after a restart), with why.
pub const RESTART_ONLY: [(&str, &str); 14] = [
    (
        "thread_handling",
        "the thread model (one-thread-per-connection / pool-of-threads) is chosen at startup",
    ),
    ("thread_stack", "thread stack size is fixed at startup"),
    (
        "thread_pool_algorithm",
        "MySQL Enterprise: the pool algorithm is fixed at startup",
    ),
    ("innodb_buffer_pool_instances", "fixed at startup"),
    ("innodb_page_size", "fixed when the datadir is created"),
    ("innodb_log_files_in_group", "fixed at startup"),
    ("innodb_data_file_path", "fixed at startup"),
    ("performance_schema", "fixed at startup"),
    ("back_log", "fixed at startup (listen queue)"),
    ("port", "fixed at startup"),
    ("socket", "fixed at startup"),
    ("datadir", "fixed at startup"),
    ("large_pages", "fixed at startup"),
    ("open_files_limit", "fixed at startup"),
];

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{path}: {msg}")]
    Parse { path: String, msg: String },
    #[error("invalid plan: {0}")]
    Invalid(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("server '{server}': {msg}")]
    Server { server: String, msg: String },
    #[error(transparent)]
    Method(#[from] method::MethodError),
    #[error(transparent)]
    Prepare(#[from] crate::prepare::PrepareError),
    #[error(transparent)]
    Result(#[from] crate::result::ResultError),
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
}

fn io_err(p: &Path) -> impl FnOnce(std::io::Error) -> PlanError + '_ {
    move |e| PlanError::Io {
        path: p.display().to_string(),
        source: e,
    }
}

// ---------------------------------------------------------------------------------------------
// The plan file.

/// A capacity-test plan (TOML). Every key is documented in docs/BENCH.md.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub workload: WorkloadSection,
    #[serde(rename = "server")]
    pub servers: Vec<ServerSection>,
    #[serde(default)]
    pub load: LoadSection,
    pub baseline: Option<BaselineSection>,
    pub sweep: Option<SweepSection>,
    pub step: Option<StepSection>,
    #[serde(default)]
    pub thresholds: ThresholdSection,
    pub confirm: Option<ConfirmSection>,
    pub soak: Option<SoakSection>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSection {
    /// oltp_read_write, oltp_point_select, ...
    pub name: String,
    #[serde(default = "one")]
    pub tables: u32,
    #[serde(default = "d_table_size")]
    pub table_size: u32,
    #[serde(default = "d_ps_mode")]
    pub ps_mode: String,
    #[serde(default = "d_rand")]
    pub rand_type: String,
    pub range_size: Option<u32>,
    pub point_selects: Option<u32>,
    #[serde(default)]
    pub skip_trx: bool,
    /// if-missing | always | never
    #[serde(default = "d_prepare")]
    pub prepare: String,
    /// Parallel connections while preparing.
    #[serde(default = "d_prepare_threads")]
    pub prepare_threads: usize,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    pub name: String,
    #[serde(default = "d_host")]
    pub host: String,
    #[serde(default = "d_port")]
    pub port: u16,
    pub socket: Option<String>,
    #[serde(default = "d_user")]
    pub user: String,
    #[serde(default)]
    pub password: String,
    /// Environment variable holding the password (instead of `password`).
    pub password_env: Option<String>,
    #[serde(default = "d_db")]
    pub db: String,
    /// Server PID for /proc measurements (default: found from the port on this machine).
    pub pid: Option<u32>,
    /// SET GLOBAL assignments applied before every phase on this server.
    #[serde(default)]
    pub settings: BTreeMap<String, toml::Value>,
    /// Whether the sweep runs on this server (a one-thread-per-connection server has no
    /// pool to sweep); without it, step/confirm/soak use the server's own settings.
    #[serde(default = "yes")]
    pub sweep: bool,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSection {
    #[serde(default = "one_usize")]
    pub client_threads: usize,
    #[serde(default)]
    pub client_nice: i32,
    #[serde(default = "d_connect_concurrency")]
    pub connect_concurrency: usize,
    /// Seconds between recorded intervals (runs, sweep points, steps, confirmation).
    #[serde(default = "one_f64")]
    pub interval: f64,
    /// Seconds between progress lines when not on a terminal.
    #[serde(default = "d_progress")]
    pub progress_interval: f64,
    #[serde(default = "d_ignore")]
    pub ignore_errors: Vec<u16>,
    #[serde(default = "d_grace")]
    pub forced_shutdown: f64,
    /// RNG seed; 0 = from the clock.
    #[serde(default)]
    pub seed: u64,
}

impl Default for LoadSection {
    fn default() -> Self {
        Self {
            client_threads: 1,
            client_nice: 0,
            connect_concurrency: d_connect_concurrency(),
            interval: 1.0,
            progress_interval: d_progress(),
            ignore_errors: d_ignore(),
            forced_shutdown: d_grace(),
            seed: 0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineSection {
    pub threads: usize,
    pub time: f64,
    #[serde(default)]
    pub warmup: f64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepConfig {
    pub name: String,
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSection {
    pub threads: Vec<usize>,
    pub time: f64,
    #[serde(default)]
    pub warmup: f64,
    #[serde(default = "one_usize")]
    pub repeat: usize,
    #[serde(rename = "config")]
    pub configs: Vec<SweepConfig>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepSection {
    #[serde(default = "d_forty")]
    pub start: usize,
    #[serde(default = "d_forty")]
    pub step: usize,
    #[serde(default = "d_step_time")]
    pub time: f64,
    #[serde(default)]
    pub settle: f64,
    #[serde(default = "d_max_threads")]
    pub max_threads: usize,
    /// Settings for the step, confirm and soak phases: "best" (the sweep's best
    /// configuration), "server" (the server's own settings), or a sweep configuration's name.
    #[serde(default = "d_best")]
    pub config: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdSection {
    #[serde(default = "d_seventy")]
    pub max_cpu: f64,
    #[serde(default = "d_thirty")]
    pub max_iowait: f64,
    #[serde(default = "d_success")]
    pub min_success: f64,
    #[serde(default = "d_p90")]
    pub max_p90_ms: f64,
    #[serde(default = "d_seventy")]
    pub max_mem: f64,
    #[serde(default = "d_cpu_source")]
    pub cpu_source: String,
}

impl Default for ThresholdSection {
    fn default() -> Self {
        Self {
            max_cpu: 70.0,
            max_iowait: 30.0,
            min_success: 99.99,
            max_p90_ms: 100.0,
            max_mem: 70.0,
            cpu_source: d_cpu_source(),
        }
    }
}

impl ThresholdSection {
    pub fn thresholds(&self) -> Thresholds {
        Thresholds {
            max_cpu_pct: self.max_cpu,
            max_iowait_pct: self.max_iowait,
            min_success_pct: self.min_success,
            max_p90_ms: self.max_p90_ms,
            max_mem_pct: self.max_mem,
            cpu_source: self.cpu_source.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfirmSection {
    /// Seconds (default: the step time).
    pub time: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoakSection {
    pub time: f64,
    /// Clients; default: the knee × `knee_fraction`.
    pub threads: Option<usize>,
    #[serde(default = "one_f64")]
    pub knee_fraction: f64,
    /// Seconds per recorded interval (the drift fit's points).
    #[serde(default = "d_soak_interval")]
    pub interval: f64,
    #[serde(default)]
    pub warmup: f64,
    #[serde(default = "d_ten")]
    pub max_tps_drop: f64,
    #[serde(default = "d_twenty")]
    pub max_rss_growth: f64,
    #[serde(default = "d_sixteen")]
    pub max_thread_growth: f64,
    /// Default: thresholds.min_success.
    pub min_success: Option<f64>,
}

fn yes() -> bool {
    true
}
fn one() -> u32 {
    1
}
fn one_usize() -> usize {
    1
}
fn one_f64() -> f64 {
    1.0
}
fn d_table_size() -> u32 {
    10_000
}
fn d_ps_mode() -> String {
    "auto".into()
}
fn d_rand() -> String {
    "special".into()
}
fn d_prepare() -> String {
    "if-missing".into()
}
fn d_prepare_threads() -> usize {
    4
}
fn d_host() -> String {
    "127.0.0.1".into()
}
fn d_port() -> u16 {
    3306
}
fn d_user() -> String {
    "sbtest".into()
}
fn d_db() -> String {
    "sbtest".into()
}
fn d_connect_concurrency() -> usize {
    64
}
fn d_progress() -> f64 {
    10.0
}
fn d_ignore() -> Vec<u16> {
    vec![1213, 1020, 1205]
}
fn d_grace() -> f64 {
    5.0
}
fn d_forty() -> usize {
    40
}
fn d_step_time() -> f64 {
    300.0
}
fn d_max_threads() -> usize {
    4096
}
fn d_best() -> String {
    "best".into()
}
fn d_seventy() -> f64 {
    70.0
}
fn d_thirty() -> f64 {
    30.0
}
fn d_success() -> f64 {
    99.99
}
fn d_p90() -> f64 {
    100.0
}
fn d_cpu_source() -> String {
    "server".into()
}
fn d_soak_interval() -> f64 {
    60.0
}
fn d_ten() -> f64 {
    10.0
}
fn d_twenty() -> f64 {
    20.0
}
fn d_sixteen() -> f64 {
    16.0
}

/// A setting's value as an SQL literal: numbers as they are, booleans ON/OFF, strings quoted.
pub fn sql_literal(v: &toml::Value) -> Result<String, String> {
    match v {
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(if *b { "ON" } else { "OFF" }.into()),
        toml::Value::String(s) => Ok(quote(s)),
        other => Err(format!(
            "{other} is not a number, boolean or string ({})",
            other.type_str()
        )),
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// A value from SHOW GLOBAL VARIABLES as an SQL literal.
fn literal_of_shown(v: &str) -> String {
    if v.parse::<f64>().is_ok() || v.eq_ignore_ascii_case("on") || v.eq_ignore_ascii_case("off") {
        v.to_string()
    } else {
        quote(v)
    }
}

/// Whether a value read back equals the one set (case, ON/1/true, number formats).
pub fn same_setting(set: &str, got: &str) -> bool {
    let norm = |s: &str| -> String {
        let s = s.trim().trim_matches('\'').to_ascii_lowercase();
        match s.as_str() {
            "on" | "true" | "yes" => "1".into(),
            "off" | "false" | "no" => "0".into(),
            _ => match s.parse::<f64>() {
                Ok(f) => format!("{f}"),
                Err(_) => s,
            },
        }
    };
    norm(set) == norm(got)
}

fn valid_var_name(k: &str) -> bool {
    !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn check_settings(what: &str, set: &BTreeMap<String, toml::Value>) -> Result<(), String> {
    for (k, v) in set {
        if !valid_var_name(k) {
            return Err(format!("{what}: '{k}' is not a variable name"));
        }
        let lk = k.to_ascii_lowercase();
        if let Some((_, why)) = RESTART_ONLY.iter().find(|(n, _)| *n == lk) {
            return Err(format!(
                "{what}: '{k}' needs a server restart ({why}); SET GLOBAL cannot change it. \
                 Run each value as its own [[server]] entry, started with that value"
            ));
        }
        sql_literal(v).map_err(|e| format!("{what}: '{k}': {e}"))?;
    }
    Ok(())
}

impl Plan {
    /// Parses and validates a plan; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<Self, PlanError> {
        let p: Plan = toml::from_str(text).map_err(|e| PlanError::Parse {
            path: path.to_string(),
            msg: e.to_string(),
        })?;
        p.validate().map_err(PlanError::Invalid)?;
        Ok(p)
    }

    pub fn load(path: &Path) -> Result<(Self, String), PlanError> {
        let text = std::fs::read_to_string(path).map_err(io_err(path))?;
        Ok((Self::parse(&text, &path.display().to_string())?, text))
    }

    /// Checks what the types cannot: names, ranges, references, restart-only settings.
    pub fn validate(&self) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err("name is empty".into());
        }
        if self.workload.def()?.workload == Workload::Tpcc {
            return Err(
                "workload: tpcc is not supported in plans yet (use prepare/run/check tpcc)".into(),
            );
        }
        if self.workload.tables == 0 || self.workload.table_size == 0 {
            return Err("workload: tables and table_size must be > 0".into());
        }
        if !["if-missing", "always", "never"].contains(&self.workload.prepare.as_str()) {
            return Err(format!(
                "workload.prepare = '{}': one of if-missing, always, never",
                self.workload.prepare
            ));
        }
        if self.servers.is_empty() {
            return Err("no [[server]]".into());
        }
        let mut dirs = BTreeSet::new();
        for s in &self.servers {
            if s.name.trim().is_empty() {
                return Err("a [[server]] has an empty name".into());
            }
            if !dirs.insert(method::sanitize(&s.name)) {
                return Err(format!(
                    "server name '{}' is used twice (or maps to the same directory as another)",
                    s.name
                ));
            }
            check_settings(&format!("server '{}' settings", s.name), &s.settings)?;
        }
        let l = &self.load;
        if l.client_threads == 0 || l.interval <= 0.0 || l.progress_interval <= 0.0 {
            return Err("load: client_threads, interval and progress_interval must be > 0".into());
        }
        if let Some(b) = &self.baseline {
            if b.threads == 0 || b.time <= 0.0 || b.warmup < 0.0 {
                return Err("baseline: threads and time must be > 0, warmup >= 0".into());
            }
        }
        if let Some(sw) = &self.sweep {
            if sw.threads.is_empty() || sw.threads.contains(&0) {
                return Err("sweep.threads: give one or more concurrencies > 0".into());
            }
            if sw.time <= 0.0 || sw.warmup < 0.0 || sw.repeat == 0 {
                return Err("sweep: time and repeat must be > 0, warmup >= 0".into());
            }
            if sw.configs.is_empty() {
                return Err("sweep: no [[sweep.config]]".into());
            }
            let mut names = BTreeSet::new();
            for c in &sw.configs {
                if c.name.trim().is_empty() || !names.insert(method::sanitize(&c.name)) {
                    return Err(format!(
                        "sweep config name '{}' is empty or used twice",
                        c.name
                    ));
                }
                if c.name == "best" || c.name == "server" {
                    return Err(format!("sweep config name '{}' is reserved", c.name));
                }
                check_settings(&format!("sweep config '{}'", c.name), &c.set)?;
            }
        }
        if let Some(st) = &self.step {
            if st.start == 0 || st.time <= 0.0 || st.settle < 0.0 {
                return Err("step: start and time must be > 0, settle >= 0".into());
            }
            if st.max_threads < st.start {
                return Err(format!(
                    "step.max_threads ({}) is below step.start ({})",
                    st.max_threads, st.start
                ));
            }
            match st.config.as_str() {
                "server" => {}
                "best" if self.sweep.is_none() => {
                    return Err("step.config = \"best\" needs a [sweep]".into())
                }
                "best" => {}
                name => {
                    if !self
                        .sweep
                        .as_ref()
                        .is_some_and(|s| s.configs.iter().any(|c| c.name == name))
                    {
                        return Err(format!(
                            "step.config = '{name}': not a sweep config (or \"best\", \"server\")"
                        ));
                    }
                }
            }
        }
        let t = &self.thresholds;
        for (n, v) in [
            ("max_cpu", t.max_cpu),
            ("max_iowait", t.max_iowait),
            ("min_success", t.min_success),
            ("max_mem", t.max_mem),
        ] {
            if v < 0.0 || (n != "max_cpu" && v > 100.0) {
                return Err(format!("thresholds.{n} = {v}: a percentage (0-100)"));
            }
        }
        if t.max_p90_ms <= 0.0 {
            return Err("thresholds.max_p90_ms must be > 0".into());
        }
        if !["server", "machine"].contains(&t.cpu_source.as_str()) {
            return Err(format!(
                "thresholds.cpu_source = '{}': server or machine",
                t.cpu_source
            ));
        }
        if let Some(c) = &self.confirm {
            if self.step.is_none() {
                return Err("[confirm] needs a [step] (it re-runs the knee)".into());
            }
            if c.time.is_some_and(|t| t <= 0.0) {
                return Err("confirm.time must be > 0".into());
            }
        }
        if let Some(s) = &self.soak {
            if s.time <= 0.0 || s.interval <= 0.0 || s.warmup < 0.0 {
                return Err("soak: time and interval must be > 0, warmup >= 0".into());
            }
            if s.threads == Some(0) {
                return Err("soak.threads must be > 0".into());
            }
            if s.threads.is_none() && self.step.is_none() {
                return Err(
                    "soak.threads is needed without a [step] (no knee to start from)".into(),
                );
            }
            if !(s.knee_fraction > 0.0 && s.knee_fraction <= 2.0) {
                return Err("soak.knee_fraction must be in (0, 2]".into());
            }
            if s.time / s.interval < 3.0 {
                return Err(format!(
                    "soak: {} s at {} s intervals gives fewer than 3 points for the drift fit",
                    s.time, s.interval
                ));
            }
        }
        Ok(())
    }

    /// Phases that run per server, in order.
    pub fn phases(&self) -> Vec<&'static str> {
        let mut v = vec!["prepare", "environment"];
        if self.baseline.is_some() {
            v.push("baseline");
        }
        if self.sweep.is_some() {
            v.push("sweep");
        }
        if self.step.is_some() {
            v.push("step");
        }
        if self.confirm.is_some() {
            v.push("confirm");
        }
        if self.soak.is_some() {
            v.push("soak");
        }
        v
    }

    /// Measurement seconds per server: (lower bound, upper bound). The step phase runs
    /// until a threshold breaks, between one step and `max_threads`.
    pub fn duration_s(&self) -> (f64, f64) {
        self.servers.iter().fold((0.0, 0.0), |(lo, hi), s| {
            let (a, b) = self.server_duration_s(s);
            (lo + a, hi + b)
        })
    }

    fn server_duration_s(&self, srv: &ServerSection) -> (f64, f64) {
        let mut lo = 0.0;
        if let Some(b) = &self.baseline {
            lo += b.warmup + b.time;
        }
        if let (Some(s), true) = (&self.sweep, srv.sweep) {
            lo += (s.warmup + s.time) * (s.threads.len() * s.configs.len() * s.repeat) as f64;
        }
        let mut hi = lo;
        if let Some(st) = &self.step {
            let per = st.settle + st.time;
            let n = (st.max_threads - st.start)
                .checked_div(st.step)
                .map_or(1, |n| n + 1);
            lo += per;
            hi += per * n as f64;
            if self.confirm.is_some() {
                let c = self.confirm_time();
                lo += c + st.settle;
                hi += c + st.settle;
            }
        }
        if let Some(s) = &self.soak {
            lo += s.warmup + s.time;
            hi += s.warmup + s.time;
        }
        (lo, hi)
    }

    fn confirm_time(&self) -> f64 {
        self.confirm
            .as_ref()
            .and_then(|c| c.time)
            .or(self.step.as_ref().map(|s| s.time))
            .unwrap_or(0.0)
    }

    /// Every variable name the plan sets anywhere, lower-cased.
    fn swept_vars(&self) -> BTreeSet<String> {
        self.sweep
            .iter()
            .flat_map(|s| s.configs.iter())
            .flat_map(|c| c.set.keys())
            .map(|k| k.to_ascii_lowercase())
            .collect()
    }
}

impl WorkloadSection {
    pub fn def(&self) -> Result<WorkloadDef, String> {
        let w: Workload = self.name.parse()?;
        let kind: RandType = self.rand_type.parse()?;
        let mut o = WorkloadOpts {
            tables: self.tables,
            table_size: self.table_size,
            skip_trx: self.skip_trx,
            rand: RandSpec {
                kind,
                ..RandSpec::default()
            },
            ..WorkloadOpts::default()
        };
        if let Some(r) = self.range_size {
            o.range_size = r;
        }
        if let Some(p) = self.point_selects {
            o.point_selects = p;
        }
        Ok(WorkloadDef::new(w, o))
    }

    pub fn ps_mode(&self) -> Result<PsMode, String> {
        self.ps_mode.parse()
    }
}

impl ServerSection {
    pub fn conn(&self) -> Result<ConnOpts, String> {
        let password = match &self.password_env {
            Some(v) => std::env::var(v).map_err(|_| {
                format!(
                    "server '{}': password_env {v} is not set in the environment",
                    self.name
                )
            })?,
            None => self.password.clone(),
        };
        Ok(ConnOpts {
            host: self.host.clone(),
            port: self.port,
            socket: self.socket.clone(),
            user: self.user.clone(),
            password,
            db: self.db.clone(),
            ssl: false,
            ssl_ca: None,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Phases and their markers.

/// What a finished phase left behind.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Marker {
    pub phase: String,
    pub finished_unix: f64,
    /// Files the phase wrote, relative to the server's directory.
    pub files: Vec<String>,
    /// One line about the outcome (printed when the phase is skipped).
    #[serde(default)]
    pub note: String,
}

/// One server's directory of results and phase markers.
pub struct PhaseDir {
    pub dir: PathBuf,
}

fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), PlanError> {
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    std::fs::write(&tmp, bytes).map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))
}

/// Saves a result through a temporary file and a rename.
pub fn save_atomic(r: &ResultFile, path: &Path) -> Result<(), PlanError> {
    let s = serde_json::to_string_pretty(r).expect("results serialize");
    write_atomic(path, s.as_bytes())
}

impl PhaseDir {
    pub fn new(dir: PathBuf) -> Result<Self, PlanError> {
        let m = dir.join(SERVER_MARK);
        std::fs::create_dir_all(&m).map_err(io_err(&m))?;
        Ok(Self { dir })
    }

    pub fn marker_path(&self, phase: &str) -> PathBuf {
        self.dir.join(SERVER_MARK).join(format!("{phase}.done"))
    }

    /// The marker of a finished phase: it exists, reads, and every file it names exists.
    pub fn finished(&self, phase: &str) -> Option<Marker> {
        let text = std::fs::read_to_string(self.marker_path(phase)).ok()?;
        let m: Marker = serde_json::from_str(&text).ok()?;
        (m.phase == phase && m.files.iter().all(|f| self.dir.join(f).is_file())).then_some(m)
    }

    pub fn mark(&self, phase: &str, files: Vec<String>, note: String) -> Result<Marker, PlanError> {
        let m = Marker {
            phase: phase.to_string(),
            finished_unix: now_unix(),
            files,
            note,
        };
        write_atomic(
            &self.marker_path(phase),
            serde_json::to_string_pretty(&m).expect("marker").as_bytes(),
        )?;
        Ok(m)
    }
}

/// How a phase went.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// It ran now and finished.
    Ran(Marker),
    /// It had finished before: not run again.
    Skipped(Marker),
}

impl Outcome {
    pub fn marker(&self) -> &Marker {
        match self {
            Self::Ran(m) | Self::Skipped(m) => m,
        }
    }
}

/// Runs `f` as phase `name` unless it has finished before; a phase that fails leaves no
/// marker and runs again next time. `f` returns the files it wrote and a note.
pub async fn phase<F, Fut>(pd: &PhaseDir, name: &str, f: F) -> Result<Outcome, PlanError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<String>, String), PlanError>>,
{
    if let Some(m) = pd.finished(name) {
        return Ok(Outcome::Skipped(m));
    }
    let (files, note) = f().await?;
    Ok(Outcome::Ran(pd.mark(name, files, note)?))
}

// ---------------------------------------------------------------------------------------------
// Running a plan.

/// Options of `shoal-bench plan`.
#[derive(Debug, Clone)]
pub struct PlanOpts {
    pub dir: PathBuf,
    pub quiet: bool,
    /// Continue in a directory whose stored plan differs from this one.
    pub accept_changed_plan: bool,
}

/// What a plan run produced.
#[derive(Debug, Clone)]
pub struct PlanOutcome {
    pub report: PathBuf,
    /// Phases per server: (server, phase, ran now?, note).
    pub phases: Vec<(String, String, bool, String)>,
    /// Some soak found drift.
    pub drift: bool,
}

pub const BASELINE_FILE: &str = "baseline.json";
pub const ENV_FILE: &str = "env.json";
pub const STEP_FILE: &str = "step.json";
pub const SOAK_FILE: &str = "soak.json";

pub fn sweep_point_file(cfg: &str, threads: usize, rep: usize) -> String {
    format!("sweep-{}-{threads}-r{rep}.json", method::sanitize(cfg))
}

/// The directory of a server's results.
pub fn server_dir(dir: &Path, server: &str) -> PathBuf {
    dir.join(method::sanitize(server))
}

struct Ctx<'a> {
    plan: &'a Plan,
    server: &'a ServerSection,
    conn: ConnOpts,
    def: WorkloadDef,
    ps_mode: PsMode,
    quiet: bool,
    pd: PhaseDir,
}

fn say(quiet: bool, s: String) {
    if !quiet {
        println!("{s}");
    }
}

impl Ctx<'_> {
    fn spec(&self, threads: usize, time: f64, warmup: f64, interval: f64, label: &str) -> RunSpec {
        let l = &self.plan.load;
        let seed = if l.seed != 0 {
            l.seed
        } else {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        };
        RunSpec {
            engine: EngineCfg {
                conn: self.conn.clone(),
                def: self.def.clone(),
                ps_mode: self.ps_mode,
                ignore: l.ignore_errors.clone(),
                rate: 0.0,
                seed,
                connect_concurrency: l.connect_concurrency.max(1),
                grace: Duration::from_secs_f64(l.forced_shutdown.max(0.0)),
            },
            threads,
            time_s: time,
            warmup_s: warmup,
            events: 0,
            interval_s: interval,
            label: label.to_string(),
            server_pid: self.server.pid,
            client_threads: l.client_threads,
            output: Output {
                lines: false,
                progress: !self.quiet,
                summary: false,
            },
            progress_every_s: l.progress_interval,
            tag: format!("{} {label}", self.server.name),
        }
    }

    fn err(&self, msg: String) -> PlanError {
        PlanError::Server {
            server: self.server.name.clone(),
            msg,
        }
    }

    async fn admin(&self) -> Result<mysql_async::Conn, PlanError> {
        server::admin_conn(&self.conn)
            .await
            .map_err(|e| self.err(format!("connect to {}: {e}", self.conn.describe())))
    }

    /// Before anything runs: every variable the plan sets exists on the server and can be
    /// changed at run time (set to its current value; a read-only one is refused).
    async fn preflight(&self) -> Result<(), PlanError> {
        let mut names: BTreeSet<String> = if self.server.sweep {
            self.plan.swept_vars()
        } else {
            BTreeSet::new()
        };
        names.extend(self.server.settings.keys().map(|k| k.to_ascii_lowercase()));
        if names.is_empty() {
            return Ok(());
        }
        let mut a = self.admin().await?;
        let vars = server::global_variables(&mut a)
            .await
            .map_err(|e| self.err(format!("SHOW GLOBAL VARIABLES: {e}")))?;
        let vars: BTreeMap<String, String> = vars
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        for n in &names {
            let Some(cur) = vars.get(n) else {
                let _ = a.disconnect().await;
                return Err(self.err(format!(
                    "the plan sets '{n}', which the server does not have (not in SHOW GLOBAL VARIABLES)"
                )));
            };
            let sql = format!("SET GLOBAL {n} = {}", literal_of_shown(cur));
            if let Err(e) = mysql_async::prelude::Queryable::query_drop(&mut a, &sql).await {
                let _ = a.disconnect().await;
                let ro = matches!(&e, mysql_async::Error::Server(s) if s.code == 1238);
                return Err(self.err(if ro {
                    format!(
                        "'{n}' is read-only on this server: it needs a restart and cannot be \
                         swept with SET GLOBAL ({e}); run each value as its own [[server]]"
                    )
                } else {
                    format!("'{n}' cannot be set at run time: `{sql}` failed: {e}")
                }));
            }
        }
        let _ = a.disconnect().await;
        Ok(())
    }

    /// Applies the server's settings and, for a sweep configuration, its assignments; every
    /// swept variable the configuration does not set goes back to the value recorded by the
    /// environment phase. Each value is read back: a server that does not take it is an
    /// error, not silently ignored.
    async fn apply(&self, env: &EnvInfo, cfg: Option<&SweepConfig>) -> Result<(), PlanError> {
        let mut want: BTreeMap<String, String> = BTreeMap::new();
        let vars: BTreeMap<String, &String> = env
            .variables
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        for n in self.plan.swept_vars() {
            if let Some(v) = vars.get(&n) {
                want.insert(n, literal_of_shown(v));
            }
        }
        let lit = |v: &toml::Value| sql_literal(v).map_err(|e| self.err(e));
        for (k, v) in &self.server.settings {
            want.insert(k.to_ascii_lowercase(), lit(v)?);
        }
        if let Some(c) = cfg {
            for (k, v) in &c.set {
                want.insert(k.to_ascii_lowercase(), lit(v)?);
            }
        }
        if want.is_empty() {
            return Ok(());
        }
        let mut a = self.admin().await?;
        let asg: Vec<(String, String)> = want.clone().into_iter().collect();
        let name = cfg.map(|c| c.name.as_str()).unwrap_or("server settings");
        if let Err(e) = server::set_globals(&mut a, &asg).await {
            let _ = a.disconnect().await;
            return Err(self.err(format!("applying '{name}': SET GLOBAL: {e}")));
        }
        for (k, v) in &want {
            let got = query_rows(&mut a, &format!("SELECT @@global.{k}"))
                .await
                .map_err(|e| self.err(format!("reading back {k}: {e}")))?
                .1
                .into_iter()
                .next()
                .and_then(|r| r.into_iter().next().flatten())
                .unwrap_or_default();
            if !same_setting(v, &got) {
                let _ = a.disconnect().await;
                return Err(self.err(format!(
                    "applying '{name}': SET GLOBAL {k} = {v} was accepted but the server reports {got:?}"
                )));
            }
        }
        let _ = a.disconnect().await;
        Ok(())
    }

    fn save(&self, name: &str, r: ResultFile) -> Result<String, PlanError> {
        save_atomic(&r, &self.pd.dir.join(name))?;
        Ok(name.to_string())
    }

    fn load_env(&self) -> Result<EnvInfo, PlanError> {
        match ResultFile::load(&self.pd.dir.join(ENV_FILE))? {
            ResultFile::Env(e) => Ok(*e),
            _ => Err(self.err(format!("{ENV_FILE} is not an environment record"))),
        }
    }

    fn load_step(&self) -> Result<StepResult, PlanError> {
        match ResultFile::load(&self.pd.dir.join(STEP_FILE))? {
            ResultFile::Step(s) => Ok(*s),
            _ => Err(self.err(format!("{STEP_FILE} is not a step result"))),
        }
    }

    /// The sweep's runs on disk.
    fn sweep_runs(&self) -> Vec<RunResult> {
        let Some(sw) = &self.plan.sweep else {
            return vec![];
        };
        let mut v = Vec::new();
        for c in &sw.configs {
            for &t in &sw.threads {
                for rep in 1..=sw.repeat {
                    if let Ok(ResultFile::Run(r)) =
                        ResultFile::load(&self.pd.dir.join(sweep_point_file(&c.name, t, rep)))
                    {
                        v.push(*r);
                    }
                }
            }
        }
        v
    }

    /// The configuration for step, confirm and soak.
    fn chosen(&self) -> Option<&SweepConfig> {
        if !self.server.sweep {
            return None;
        }
        let st = self.plan.step.as_ref()?;
        let sw = self.plan.sweep.as_ref()?;
        match st.config.as_str() {
            "server" => None,
            "best" => {
                let name = best_config(&self.sweep_runs())?;
                sw.configs.iter().find(|c| c.name == name)
            }
            n => sw.configs.iter().find(|c| c.name == n),
        }
    }
}

/// The configuration with the highest mean relative TPS over the sweep's concurrencies (at
/// each concurrency a configuration scores its TPS / the best TPS there).
pub fn best_config(runs: &[RunResult]) -> Option<String> {
    let mut by: BTreeMap<usize, BTreeMap<&str, Vec<f64>>> = BTreeMap::new();
    for r in runs {
        by.entry(r.threads)
            .or_default()
            .entry(r.label.as_str())
            .or_default()
            .push(r.summary.tps);
    }
    let mut score: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
    for cfgs in by.values() {
        let means: Vec<(&str, f64)> = cfgs
            .iter()
            .map(|(c, v)| (*c, v.iter().sum::<f64>() / v.len() as f64))
            .collect();
        let top = means.iter().map(|m| m.1).fold(0.0f64, f64::max);
        for (c, m) in means {
            let e = score.entry(c).or_default();
            e.0 += if top > 0.0 { m / top } else { 0.0 };
            e.1 += 1;
        }
    }
    score
        .into_iter()
        .map(|(c, (s, n))| (c, s / n as f64))
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(a.0)))
        .map(|(c, _)| c.to_string())
}

async fn tables_ready(conn: &ConnOpts, tables: u32, size: u32) -> bool {
    let Ok(mut c) = mysql_async::Conn::new(conn.to_opts(true)).await else {
        return false;
    };
    let mut ok = true;
    for n in 1..=tables {
        let rows = query_rows(&mut c, &format!("SELECT COUNT(*) FROM sbtest{n}"))
            .await
            .ok()
            .and_then(|(_, r)| {
                r.into_iter()
                    .next()?
                    .into_iter()
                    .next()??
                    .parse::<u64>()
                    .ok()
            });
        if rows.is_none_or(|r| r < u64::from(size)) {
            ok = false;
            break;
        }
    }
    let _ = c.disconnect().await;
    ok
}

async fn environment(ctx: &Ctx<'_>) -> Result<EnvInfo, PlanError> {
    let mut a = ctx.admin().await?;
    let version = query_rows(&mut a, "SELECT VERSION()")
        .await
        .ok()
        .and_then(|(_, r)| r.into_iter().next()?.into_iter().next()?)
        .unwrap_or_default();
    let variables = server::global_variables(&mut a).await.unwrap_or_default();
    let data_bytes = query_rows(
        &mut a,
        &format!(
            "SELECT SUM(DATA_LENGTH + INDEX_LENGTH) FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = {} AND TABLE_NAME LIKE 'sbtest%'",
            quote(&ctx.conn.db)
        ),
    )
    .await
    .ok()
    .and_then(|(_, r)| {
        r.into_iter()
            .next()?
            .into_iter()
            .next()??
            .parse::<f64>()
            .ok()
    })
    .map(|b| b as u64);
    let _ = a.disconnect().await;
    let buffer_pool_bytes = variables
        .get("innodb_buffer_pool_size")
        .and_then(|v| v.parse::<u64>().ok());
    Ok(EnvInfo {
        server: ctx.server.name.clone(),
        plan: ctx.plan.name.clone(),
        started_unix: now_unix(),
        version,
        variables,
        machine: Machine::read(),
        workload: ctx.def.workload.name().into(),
        tables: ctx.plan.workload.tables,
        table_size: ctx.plan.workload.table_size,
        data_bytes,
        buffer_pool_bytes,
        conn: ctx.conn.clone(),
        client_threads: ctx.plan.load.client_threads,
        tool_version: env!("CARGO_PKG_VERSION").into(),
    })
}

fn run_line(r: &RunResult) -> String {
    format!(
        "{} clients: tps {:.1} p95 {:.1} ms p99 {:.1} ms success {:.3}% errors {}",
        r.threads,
        r.summary.tps,
        r.summary.latency_ms.p95,
        r.summary.latency_ms.p99,
        r.summary.success_pct,
        r.summary.errors
    )
}

async fn run_server(
    plan: &Plan,
    srv: &ServerSection,
    opts: &PlanOpts,
    out: &mut PlanOutcome,
) -> Result<(), PlanError> {
    let pd = PhaseDir::new(server_dir(&opts.dir, &srv.name))?;
    let ctx = Ctx {
        plan,
        server: srv,
        conn: srv.conn().map_err(PlanError::Invalid)?,
        def: plan.workload.def().map_err(PlanError::Invalid)?,
        ps_mode: plan.workload.ps_mode().map_err(PlanError::Invalid)?,
        quiet: opts.quiet,
        pd,
    };
    let q = opts.quiet;
    let name = &srv.name;
    say(q, format!("== server {name} ({})", ctx.conn.describe()));
    ctx.preflight().await?;
    let mut record = |phase: &str, o: Outcome| {
        let m = o.marker();
        let ran = matches!(o, Outcome::Ran(_));
        say(
            q,
            format!(
                "[{name}] {phase}: {}{}",
                if ran {
                    "done"
                } else {
                    "skipped (finished before)"
                },
                if m.note.is_empty() {
                    String::new()
                } else {
                    format!(": {}", m.note)
                }
            ),
        );
        out.phases
            .push((name.clone(), phase.to_string(), ran, m.note.clone()));
    };

    // prepare
    let o = phase(&ctx.pd, "prepare", || async {
        let w = &plan.workload;
        let need = match w.prepare.as_str() {
            "always" => true,
            "never" => false,
            _ => !tables_ready(&ctx.conn, w.tables, w.table_size).await,
        };
        if !need {
            return Ok((vec![], format!("tables present ({} prepare)", w.prepare)));
        }
        say(
            q,
            format!("[{name}] prepare: {} x {} rows", w.tables, w.table_size),
        );
        crate::prepare::cleanup(&ctx.conn, w.tables, w.prepare_threads, true).await?;
        crate::prepare::prepare(&ctx.conn, &ctx.def, w.prepare_threads, 1, true).await?;
        Ok((
            vec![],
            format!("prepared {} x {} rows", w.tables, w.table_size),
        ))
    })
    .await?;
    record("prepare", o);

    // environment
    let o = phase(&ctx.pd, "environment", || async {
        let e = environment(&ctx).await?;
        let (bytes, est) = e.data_size();
        let note = format!(
            "{}; data {}{}; buffer pool {}",
            e.version,
            crate::report::fmt_bytes(bytes),
            if est { " (estimated)" } else { "" },
            e.buffer_pool_bytes
                .map(crate::report::fmt_bytes)
                .unwrap_or_else(|| "n/a".into())
        );
        Ok((
            vec![ctx.save(ENV_FILE, ResultFile::Env(Box::new(e)))?],
            note,
        ))
    })
    .await?;
    record("environment", o);
    let env = ctx.load_env()?;

    // baseline
    if let Some(b) = &plan.baseline {
        let o = phase(&ctx.pd, "baseline", || async {
            ctx.apply(&env, None).await?;
            let r = method::run_point(&ctx.spec(
                b.threads,
                b.time,
                b.warmup,
                plan.load.interval,
                "baseline",
            ))
            .await?;
            let note = run_line(&r);
            Ok((
                vec![ctx.save(BASELINE_FILE, ResultFile::Run(Box::new(r)))?],
                note,
            ))
        })
        .await?;
        record("baseline", o);
    }

    // sweep
    if let (Some(sw), true) = (&plan.sweep, srv.sweep) {
        let o = phase(&ctx.pd, "sweep", || async {
            let mut files = Vec::new();
            for c in &sw.configs {
                let mut applied = false;
                for &t in &sw.threads {
                    for rep in 1..=sw.repeat {
                        let f = sweep_point_file(&c.name, t, rep);
                        if ctx.pd.dir.join(&f).is_file() {
                            say(
                                q,
                                format!("[{name}] sweep {} {t} clients r{rep}: on disk", c.name),
                            );
                            files.push(f);
                            continue;
                        }
                        if !applied {
                            ctx.apply(&env, Some(c)).await?;
                            applied = true;
                        }
                        let r = method::run_point(&ctx.spec(
                            t,
                            sw.time,
                            sw.warmup,
                            plan.load.interval,
                            &c.name,
                        ))
                        .await?;
                        say(
                            q,
                            format!("[{name}] sweep {} r{rep} {}", c.name, run_line(&r)),
                        );
                        files.push(ctx.save(&f, ResultFile::Run(Box::new(r)))?);
                    }
                }
            }
            let runs = ctx.sweep_runs();
            let best = best_config(&runs).unwrap_or_default();
            Ok((
                files,
                format!("{} points; best configuration: {best}", runs.len()),
            ))
        })
        .await?;
        record("sweep", o);
    }

    // step
    let chosen = ctx.chosen().cloned();
    let cfg_name = chosen
        .as_ref()
        .map(|c| c.name.clone())
        .unwrap_or_else(|| "server".into());
    if let Some(st) = &plan.step {
        let o = phase(&ctx.pd, "step", || async {
            ctx.apply(&env, chosen.as_ref()).await?;
            let label = format!("step ({cfg_name})");
            let base = ctx.spec(st.start, st.time, 0.0, plan.load.interval, &label);
            let spec = StepSpec {
                start_threads: st.start,
                step_threads: st.step,
                max_threads: st.max_threads,
                step_s: st.time,
                settle_s: st.settle,
                confirm_s: 0.0,
                thresholds: plan.thresholds.thresholds(),
                base,
            };
            let r = method::step(&spec).await?;
            for s in &r.steps {
                say(
                    q,
                    format!(
                        "[{name}] step {} clients: tps {:.1} p90 {:.1} ms cpu {:.1}% iowait {:.1}% -> {}",
                        s.threads,
                        s.summary.tps,
                        s.summary.latency_ms.p90,
                        s.cpu_pct,
                        s.sys.cpu_iowait_pct,
                        if s.healthy { "healthy".into() } else { format!("BROKEN: {}", s.broken.join("; ")) }
                    ),
                );
            }
            let note = match r.knee_threads {
                Some(k) => format!(
                    "config {cfg_name}; knee {k} clients ({:.1} TPS); {}",
                    r.knee_tps.unwrap_or(0.0),
                    r.stop_reason
                ),
                None => format!("config {cfg_name}; no healthy step: {}", r.stop_reason),
            };
            Ok((vec![ctx.save(STEP_FILE, ResultFile::Step(Box::new(r)))?], note))
        })
        .await?;
        record("step", o);
    }

    // confirm
    if plan.confirm.is_some() {
        let o = phase(&ctx.pd, "confirm", || async {
            let mut s = ctx.load_step()?;
            let Some(k) = s.knee_threads else {
                return Ok((
                    vec![STEP_FILE.to_string()],
                    "no knee: nothing to confirm".to_string(),
                ));
            };
            ctx.apply(&env, chosen.as_ref()).await?;
            let settle = plan.step.as_ref().map(|s| s.settle).unwrap_or(0.0);
            let label = format!("{} (confirmation)", s.label);
            let r = method::run_point(&ctx.spec(
                k,
                plan.confirm_time(),
                settle,
                plan.load.interval,
                &label,
            ))
            .await?;
            let (_, broken) = s.thresholds.check(&r.summary, &r.sys);
            let note = format!(
                "{} at the knee: {}",
                if broken.is_empty() {
                    "confirmed"
                } else {
                    "NOT confirmed"
                },
                if broken.is_empty() {
                    run_line(&r)
                } else {
                    broken.join("; ")
                }
            );
            s.confirmed = Some(broken.is_empty());
            s.confirmation_broken = broken;
            s.confirmation = Some(r);
            Ok((
                vec![ctx.save(STEP_FILE, ResultFile::Step(Box::new(s)))?],
                note,
            ))
        })
        .await?;
        record("confirm", o);
    }

    // soak
    if let Some(sk) = &plan.soak {
        let o = phase(&ctx.pd, "soak", || async {
            let threads = match sk.threads {
                Some(t) => t,
                None => {
                    let s = ctx.load_step()?;
                    let k = s.knee_threads.ok_or_else(|| {
                        ctx.err("soak.threads is not given and the step phase found no knee".into())
                    })?;
                    ((k as f64 * sk.knee_fraction).round() as usize).max(1)
                }
            };
            ctx.apply(&env, chosen.as_ref()).await?;
            let spec = ctx.spec(
                threads,
                sk.time,
                sk.warmup,
                sk.interval,
                &format!("soak ({cfg_name})"),
            );
            let lim = SoakLimits {
                max_tps_drop_pct: sk.max_tps_drop,
                max_rss_growth_pct: sk.max_rss_growth,
                max_thread_growth: sk.max_thread_growth,
                min_success_pct: sk.min_success.unwrap_or(plan.thresholds.min_success),
            };
            let r = method::soak(&spec, &lim).await?;
            let v = &r.verdict;
            let note = format!(
                "{} clients: {} (TPS change {:.1}%){}",
                threads,
                if v.pass { "PASS (no drift)" } else { "DRIFT" },
                v.tps_change_pct,
                if v.reasons.is_empty() {
                    String::new()
                } else {
                    format!(": {}", v.reasons.join("; "))
                }
            );
            Ok((
                vec![ctx.save(SOAK_FILE, ResultFile::Soak(Box::new(r)))?],
                note,
            ))
        })
        .await?;
        if o.marker().note.contains("DRIFT") {
            out.drift = true;
        }
        record("soak", o);
    }
    Ok(())
}

/// Runs (or resumes) a plan into `opts.dir` and writes the report.
pub async fn run(plan: &Plan, text: &str, opts: &PlanOpts) -> Result<PlanOutcome, PlanError> {
    let dir = &opts.dir;
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let copy = dir.join(PLAN_COPY);
    if copy.is_file() {
        let old_text = std::fs::read_to_string(&copy).map_err(io_err(&copy))?;
        let old = Plan::parse(&old_text, &copy.display().to_string())?;
        if old != *plan && !opts.accept_changed_plan {
            return Err(PlanError::Invalid(format!(
                "{} was started with a different plan ({}): finished phases would not match \
                 this one. Use another --output, or --accept-changed-plan to keep the finished \
                 phases and go on with this plan",
                dir.display(),
                copy.display()
            )));
        }
        if old != *plan {
            write_atomic(&copy, text.as_bytes())?;
        }
    } else {
        write_atomic(&copy, text.as_bytes())?;
    }
    let (lo, hi) = plan.duration_s();
    say(
        opts.quiet,
        format!(
            "plan '{}': {} server(s), phases {}; measurement {} (+ connecting, preparing)",
            plan.name,
            plan.servers.len(),
            plan.phases().join(", "),
            if (hi - lo).abs() < 0.5 {
                fmt_duration(lo)
            } else {
                format!("{} to {}", fmt_duration(lo), fmt_duration(hi))
            }
        ),
    );
    let mut out = PlanOutcome {
        report: dir.join("report.html"),
        phases: vec![],
        drift: false,
    };
    for s in &plan.servers {
        run_server(plan, s, opts, &mut out).await?;
    }
    crate::report::write(std::slice::from_ref(dir), &out.report)?;
    say(
        opts.quiet,
        format!("report written to {}", out.report.display()),
    );
    Ok(out)
}

/// `1h 05m`, `10m 00s`, `45s`.
pub fn fmt_duration(s: f64) -> String {
    let s = s.round() as u64;
    if s >= 3600 {
        format!("{}h {:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m {:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::fixtures;

    const MINIMAL: &str = r#"
name = "t"
[workload]
name = "oltp_read_only"
[[server]]
name = "a"
port = 3307
"#;

    fn full() -> String {
        format!(
            "{MINIMAL}{}",
            r#"
[baseline]
threads = 8
time = 10
[sweep]
threads = [8, 16]
time = 5
warmup = 1
[[sweep.config]]
name = "stall500"
set = { thread_pool_stall_limit = 500, thread_pool_priority = "auto", thread_pool_dedicated_listener = true }
[[sweep.config]]
name = "stall100"
set = { thread_pool_stall_limit = 100 }
[step]
start = 4
step = 4
time = 3
max_threads = 12
[confirm]
[soak]
time = 60
interval = 10
"#
        )
    }

    #[test]
    fn minimal_plan_gets_the_source_plan_defaults() {
        let p = Plan::parse(MINIMAL, "m.toml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.servers[0].port, 3307);
        assert_eq!(p.servers[0].host, "127.0.0.1");
        assert_eq!(p.workload.prepare, "if-missing");
        let t = p.thresholds.thresholds();
        assert_eq!(
            (
                t.max_cpu_pct,
                t.max_iowait_pct,
                t.min_success_pct,
                t.max_p90_ms
            ),
            (70.0, 30.0, 99.99, 100.0)
        );
        assert_eq!(p.phases(), ["prepare", "environment"]);
        assert_eq!(p.duration_s(), (0.0, 0.0));
    }

    #[test]
    fn full_plan_parses_with_phases_and_duration() {
        let p = Plan::parse(&full(), "f.toml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            p.phases(),
            [
                "prepare",
                "environment",
                "baseline",
                "sweep",
                "step",
                "confirm",
                "soak"
            ]
        );
        let sw = p.sweep.as_ref().unwrap();
        assert_eq!(sw.configs.len(), 2);
        assert_eq!(
            sql_literal(&sw.configs[0].set["thread_pool_priority"]).unwrap(),
            "'auto'"
        );
        assert_eq!(
            sql_literal(&sw.configs[0].set["thread_pool_dedicated_listener"]).unwrap(),
            "ON"
        );
        // baseline 10 + sweep 2 configs x 2 x (5+1) = 24, step 3 s per step: 1..3 steps,
        // confirm 3 (step time), soak 60
        assert_eq!(
            p.duration_s(),
            (
                10.0 + 24.0 + 3.0 + 3.0 + 60.0,
                10.0 + 24.0 + 9.0 + 3.0 + 60.0
            )
        );
        assert_eq!(p.step.as_ref().unwrap().config, "best");
    }

    fn invalid(text: &str) -> String {
        match Plan::parse(text, "x.toml") {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn invalid_plans_are_refused_with_the_reason() {
        let f = full();
        for (text, want) in [
            (
                f.replace("oltp_read_only", "oltp_nope"),
                "unknown workload 'oltp_nope'",
            ),
            (
                f.replace("oltp_read_only", "tpcc"),
                "tpcc is not supported in plans yet",
            ),
            (
                f.replace("port = 3307", "port = 3307\nprot = 1"),
                "unknown field `prot`",
            ),
            (
                f.replace("threads = [8, 16]", "threads = []"),
                "sweep.threads",
            ),
            (
                f.replace("name = \"stall100\"", "name = \"stall500\""),
                "used twice",
            ),
            (
                f.replace("[step]", "[step]\nconfig = \"nope\""),
                "step.config = 'nope'",
            ),
            (
                f.replace("interval = 10", "interval = 30"),
                "fewer than 3 points",
            ),
            (
                MINIMAL.replace("[[server]]", "[confirm]\n[[server]]"),
                "[confirm] needs a [step]",
            ),
            (
                format!("{MINIMAL}[soak]\ntime = 60\ninterval = 10\n"),
                "soak.threads is needed",
            ),
            (
                format!("{MINIMAL}[[server]]\nname = \"a\"\n"),
                "server name 'a' is used twice",
            ),
            (
                f.replace("max_threads = 12", "max_threads = 2"),
                "below step.start",
            ),
            (
                format!("{MINIMAL}[thresholds]\ncpu_source = \"disk\"\n"),
                "cpu_source",
            ),
            (
                f.replace(
                    "thread_pool_stall_limit = 100",
                    "\"thread_pool_stall_limit; DROP\" = 1",
                ),
                "not a variable name",
            ),
            (
                f.replace(
                    "thread_pool_stall_limit = 100",
                    "thread_pool_stall_limit = [1, 2]",
                ),
                "not a number, boolean or string",
            ),
        ] {
            let e = invalid(&text);
            assert!(e.contains(want), "want {want:?} in: {e}");
        }
    }

    #[test]
    fn restart_only_settings_are_refused_not_ignored() {
        let f = full().replace(
            "thread_pool_stall_limit = 100",
            "thread_handling = \"pool-of-threads\"",
        );
        let e = invalid(&f);
        assert!(
            e.contains("'thread_handling' needs a server restart")
                && e.contains("sweep config 'stall100'")
                && e.contains("[[server]]"),
            "{e}"
        );
        let s = MINIMAL.replace(
            "port = 3307",
            "port = 3307\nsettings = { Thread_Stack = 1048576 }",
        );
        let e = invalid(&s);
        assert!(e.contains("'Thread_Stack' needs a server restart"), "{e}");
    }

    #[test]
    fn settings_read_back_compare_loosely() {
        assert!(same_setting("ON", "1"));
        assert!(same_setting("OFF", "off"));
        assert!(same_setting("500", "500"));
        assert!(same_setting("'auto'", "AUTO"));
        assert!(same_setting("0.5", "0.500000"));
        assert!(!same_setting("500", "100"));
        assert!(!same_setting("'auto'", "high"));
        assert_eq!(literal_of_shown("500"), "500");
        assert_eq!(literal_of_shown("ON"), "ON");
        assert_eq!(literal_of_shown("auto"), "'auto'");
        assert_eq!(quote("it's"), "'it''s'");
    }

    #[test]
    fn best_config_is_the_best_on_average_over_concurrencies() {
        let r = |c: &str, t: usize, tps: f64| fixtures::run(c, t, tps);
        // a wins at 8 by a little, b wins at 512 by a lot: b is better on average
        let runs = vec![
            r("a", 8, 1000.0),
            r("b", 8, 950.0),
            r("a", 512, 300.0),
            r("b", 512, 600.0),
        ];
        assert_eq!(best_config(&runs).as_deref(), Some("b"));
        assert_eq!(best_config(&runs[..1]).as_deref(), Some("a"));
        assert_eq!(best_config(&[]), None);
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn a_finished_phase_is_not_run_again() {
        let d = fixtures::dir("resume");
        let pd = PhaseDir::new(d.join("srv")).unwrap();
        let runs = std::cell::Cell::new(0);
        let body = || async {
            runs.set(runs.get() + 1);
            let f = "baseline.json";
            save_atomic(
                &ResultFile::Run(Box::new(fixtures::run("baseline", 8, 100.0))),
                &pd.dir.join(f),
            )?;
            Ok((vec![f.to_string()], format!("run {}", runs.get())))
        };
        let rt = rt();
        let o = rt.block_on(phase(&pd, "baseline", body)).unwrap();
        assert!(matches!(&o, Outcome::Ran(m) if m.note == "run 1"), "{o:?}");
        assert!(pd.marker_path("baseline").is_file());
        // Again: skipped, the body does not run, the marker tells what it had done.
        let o = rt.block_on(phase(&pd, "baseline", body)).unwrap();
        assert_eq!(runs.get(), 1);
        assert!(
            matches!(&o, Outcome::Skipped(m) if m.note == "run 1" && m.files == ["baseline.json"])
        );
        // A phase whose file went missing runs again.
        std::fs::remove_file(pd.dir.join("baseline.json")).unwrap();
        let o = rt.block_on(phase(&pd, "baseline", body)).unwrap();
        assert_eq!(runs.get(), 2);
        assert!(matches!(o, Outcome::Ran(_)));
        // A corrupt marker does not count as finished.
        std::fs::write(pd.marker_path("baseline"), "{").unwrap();
        rt.block_on(phase(&pd, "baseline", body)).unwrap();
        assert_eq!(runs.get(), 3);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn an_interrupted_phase_leaves_no_marker_and_runs_again() {
        let d = fixtures::dir("interrupted");
        let pd = PhaseDir::new(d.join("srv")).unwrap();
        let rt = rt();
        let e = rt
            .block_on(phase(&pd, "sweep", || async {
                Err::<(Vec<String>, String), _>(PlanError::Invalid("connection lost".into()))
            }))
            .unwrap_err();
        assert!(e.to_string().contains("connection lost"));
        assert!(!pd.marker_path("sweep").exists());
        assert!(pd.finished("sweep").is_none());
        let ran = std::cell::Cell::new(false);
        let o = rt
            .block_on(phase(&pd, "sweep", || async {
                ran.set(true);
                Ok((vec![], String::new()))
            }))
            .unwrap();
        assert!(ran.get() && matches!(o, Outcome::Ran(_)));
        // Other phases are independent.
        assert!(pd.finished("step").is_none());
        // No temporary files are left behind.
        let left: Vec<_> = std::fs::read_dir(d.join("srv").join(SERVER_MARK))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["sweep.done"]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_directory_started_with_another_plan_is_refused() {
        let d = fixtures::dir("changed");
        let p = Plan::parse(MINIMAL, "m").unwrap();
        let opts = PlanOpts {
            dir: d.clone(),
            quiet: true,
            accept_changed_plan: false,
        };
        std::fs::write(d.join(PLAN_COPY), MINIMAL.replace("3307", "3308")).unwrap();
        let e = rt()
            .block_on(run(&p, MINIMAL, &opts))
            .unwrap_err()
            .to_string();
        assert!(e.contains("different plan"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn shipped_plans_are_valid_and_have_their_shape() {
        let src = Plan::parse(include_str!("../plans/source-shape.toml"), "source-shape")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(src.phases().len(), 7);
        let st = src.step.as_ref().unwrap();
        assert_eq!((st.start, st.step, st.time), (40, 40, 300.0));
        let t = src.thresholds.thresholds();
        assert_eq!(
            (
                t.max_cpu_pct,
                t.max_iowait_pct,
                t.min_success_pct,
                t.max_p90_ms
            ),
            (70.0, 30.0, 99.99, 100.0)
        );
        assert_eq!(src.confirm_time(), 300.0);
        assert!(src.soak.as_ref().unwrap().time >= 12.0 * 3600.0);
        let quick = Plan::parse(include_str!("../plans/quick.toml"), "quick")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(quick.phases(), src.phases());
        // About 10 minutes of measurement per server, whenever the step phase stops.
        let (lo, hi) = quick.duration_s();
        let n = quick.servers.len() as f64;
        assert!(lo / n >= 7.0 * 60.0 && hi / n <= 11.0 * 60.0, "{lo} {hi}");
    }

    #[test]
    fn a_server_without_sweep_skips_it() {
        let f = full().replace("port = 3307", "port = 3307\nsweep = false");
        let p = Plan::parse(&f, "f").unwrap();
        // no sweep time for it: 10 + 3..9 + 3 + 60
        assert_eq!(p.duration_s(), (76.0, 82.0));
    }

    #[test]
    fn durations_print_short() {
        assert_eq!(fmt_duration(45.0), "45s");
        assert_eq!(fmt_duration(600.0), "10m 00s");
        assert_eq!(fmt_duration(3900.0), "1h 05m");
    }
}
