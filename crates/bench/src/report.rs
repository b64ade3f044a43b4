//! `report`: renders stored results (JSON files, or directories of them) as one HTML page with
//! inline SVG plots, a markdown file with the same tables, and the SVG files themselves.
//!
//! Plots (plotters, SVG backend only, so no font or bitmap dependencies):
//! TPS, p95 and p99 versus connections, one line per configuration label (repetitions are
//! averaged for the line); a time series (TPS and p95/p99 per interval) for each run;
//! stepped-load curves (TPS and p90 per step, with the p90 threshold); soak time series
//! (TPS, server RSS and thread count).

use crate::result::{EnvInfo, ResultError, ResultFile, RunResult, SoakResult, StepResult};
use crate::sysmon::SysDelta;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Result(#[from] ResultError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// The inputs hold no `*.json` file at all.
    #[error("no result files (*.json) in {0}")]
    Empty(String),
    /// There were JSON files, but every one was skipped.
    #[error("no result could be read from {inputs}; skipped {}:{}", .skipped.len(), list_skipped(.skipped))]
    NothingLoaded {
        inputs: String,
        skipped: Vec<Skipped>,
    },
    #[error("plot '{0}': {1}")]
    Plot(String, String),
}

/// A file of a directory that [`load`] did not use, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

fn list_skipped(v: &[Skipped]) -> String {
    v.iter()
        .map(|s| format!("\n  {}: {}", s.path.display(), s.reason))
        .collect()
}

/// Loaded results, by kind.
#[derive(Default)]
pub struct Loaded {
    pub runs: Vec<RunResult>,
    pub steps: Vec<StepResult>,
    pub soaks: Vec<SoakResult>,
    /// Plans' records of the servers and machine.
    pub envs: Vec<EnvInfo>,
    /// Files found in the input directories that were not loaded (not JSON, not a result, or
    /// a result that does not read back). Files named on the command line are never skipped:
    /// any error with them fails the load.
    pub skipped: Vec<Skipped>,
}

fn io_err(p: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |e| ReportError::Io {
        path: p.display().to_string(),
        source: e,
    }
}

/// The `*.json` files of a directory (not recursive), sorted.
fn json_files(dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let mut v: Vec<PathBuf> = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io_err(dir))? {
        let path = e.map_err(io_err(dir))?.path();
        if path.extension().is_some_and(|e| e == "json") && !path.is_dir() {
            v.push(path);
        }
    }
    v.sort();
    Ok(v)
}

/// A plan's output directory: it holds the plan (`plan.toml`) and one subdirectory of
/// results per server.
pub fn is_plan_dir(p: &Path) -> bool {
    p.join(crate::plan::PLAN_COPY).is_file()
}

fn prefix_label(label: &mut String, source: &str) {
    if !source.is_empty() {
        *label = if label.is_empty() {
            source.to_string()
        } else {
            format!("{source}/{label}")
        };
    }
}

/// Loads result files from files or directories (a directory's `*.json` files, not
/// recursive; a plan's output directory also each server's subdirectory). A file given by
/// name must load; a directory's file that does not load is recorded in
/// [`Loaded::skipped`] with the reason, and [`write()`] prints it as a warning. Fails when
/// nothing at all loaded, naming every skipped file and why.
///
/// Sources: results of a plan's server subdirectory are labelled `SERVER/label`; with more
/// than one input, every label is also prefixed with the input's name (`A/...`, `B/...`), so
/// `report A/ B/` overlays the inputs as separate lines.
pub fn load(paths: &[PathBuf]) -> Result<Loaded, ReportError> {
    // (file, given by name, source)
    let mut files: Vec<(PathBuf, bool, String)> = Vec::new();
    let multi = paths.len() > 1;
    for p in paths {
        let input = if multi {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.display().to_string())
        } else {
            String::new()
        };
        if p.is_dir() {
            files.extend(
                json_files(p)?
                    .into_iter()
                    .map(|f| (f, false, input.clone())),
            );
            if is_plan_dir(p) {
                let mut subs: Vec<PathBuf> = std::fs::read_dir(p)
                    .map_err(io_err(p))?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|d| d.is_dir() && d.join(crate::plan::SERVER_MARK).exists())
                    .collect();
                subs.sort();
                for d in subs {
                    let server = d
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let src = if input.is_empty() {
                        server
                    } else {
                        format!("{input}/{server}")
                    };
                    files.extend(json_files(&d)?.into_iter().map(|f| (f, false, src.clone())));
                }
            }
        } else {
            files.push((p.clone(), true, input));
        }
    }
    let mut l = Loaded::default();
    for (f, named, src) in &files {
        match ResultFile::load(f) {
            Ok(ResultFile::Run(mut r)) => {
                prefix_label(&mut r.label, src);
                l.runs.push(*r)
            }
            Ok(ResultFile::Step(mut s)) => {
                prefix_label(&mut s.label, src);
                if let Some(c) = s.confirmation.as_mut() {
                    prefix_label(&mut c.label, src);
                }
                l.steps.push(*s)
            }
            Ok(ResultFile::Soak(mut s)) => {
                prefix_label(&mut s.run.label, src);
                l.soaks.push(*s)
            }
            Ok(ResultFile::Env(mut e)) => {
                if !src.is_empty() {
                    e.server = src.clone();
                }
                l.envs.push(*e)
            }
            Err(e) if *named => return Err(e.into()),
            Err(e) => l.skipped.push(Skipped {
                path: f.clone(),
                reason: e.reason(),
            }),
        }
    }
    if l.runs.is_empty() && l.steps.is_empty() && l.soaks.is_empty() {
        let inputs = paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(if l.skipped.is_empty() {
            ReportError::Empty(inputs)
        } else {
            ReportError::NothingLoaded {
                inputs,
                skipped: l.skipped,
            }
        });
    }
    Ok(l)
}

/// One line of a chart.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A marked point of a chart (the knee, a confirmation), drawn as a triangle with a label.
pub struct Mark {
    pub x: f64,
    pub y: f64,
    pub label: String,
}

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// An axis label: whole numbers without decimals, others with one.
fn axis_num(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Renders a line chart to an SVG string.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log_x: bool,
    hline: Option<(f64, &str)>,
    marks: &[Mark],
) -> Result<String, ReportError> {
    let perr = |e: String| ReportError::Plot(title.to_string(), e);
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .chain(marks.iter().map(|m| (m.x, m.y)))
        .collect();
    let (mut x0, mut x1) = all
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let mut y1 = all.iter().fold(0.0f64, |a, p| a.max(p.1));
    if let Some((h, _)) = hline {
        y1 = y1.max(h);
    }
    if all.is_empty() {
        x0 = 0.0;
        x1 = 1.0;
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if !marks.is_empty() {
        // Room for the marker at the right edge.
        x1 = if log_x && x0 > 0.0 && x1 / x0 >= 8.0 {
            x1 * 1.08
        } else {
            x1 + (x1 - x0) * 0.04
        };
    }
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.15 };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| perr(e.to_string()))?;
        let mut b = ChartBuilder::on(&root);
        b.caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70);
        let use_log = log_x && x0 > 0.0 && x1 / x0 >= 8.0;
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(x_label)
                    .y_desc(y_label)
                    .label_style(("sans-serif", 15))
                    .axis_desc_style(("sans-serif", 16))
                    .x_labels(8)
                    .y_labels(8)
                    .x_label_formatter(&|v| axis_num(*v))
                    .y_label_formatter(&|v| axis_num(*v))
                    .light_line_style(RGBColor(240, 240, 240))
                    .draw()
                    .map_err(|e| perr(e.to_string()))?;
                for (i, s) in series.iter().enumerate() {
                    let c = COLORS[i % COLORS.len()];
                    chart
                        .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))
                        .map_err(|e| perr(e.to_string()))?
                        .label(s.name.clone())
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                        });
                    chart
                        .draw_series(s.points.iter().map(|p| Circle::new(*p, 3, c.filled())))
                        .map_err(|e| perr(e.to_string()))?;
                }
                if let Some((h, name)) = hline {
                    let c = RGBColor(120, 120, 120);
                    chart
                        .draw_series(LineSeries::new(vec![(x0, h), (x1, h)], c.stroke_width(1)))
                        .map_err(|e| perr(e.to_string()))?
                        .label(name.to_string())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c));
                }
                for m in marks {
                    chart
                        .draw_series(std::iter::once(
                            EmptyElement::at((m.x, m.y))
                                + TriangleMarker::new((0, 0), 9, BLACK.filled())
                                + Text::new(m.label.clone(), (-60, -28), ("sans-serif", 15)),
                        ))
                        .map_err(|e| perr(e.to_string()))?;
                }
                chart
                    .configure_series_labels()
                    .label_font(("sans-serif", 14))
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .position(SeriesLabelPosition::LowerRight)
                    .draw()
                    .map_err(|e| perr(e.to_string()))?;
            }};
        }
        if use_log {
            draw!(b
                .build_cartesian_2d((x0..x1).log_scale(), 0.0..y1)
                .map_err(|e| perr(e.to_string()))?);
        } else {
            draw!(b
                .build_cartesian_2d(x0..x1, 0.0..y1)
                .map_err(|e| perr(e.to_string()))?);
        }
        root.present().map_err(|e| perr(e.to_string()))?;
    }
    Ok(svg)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A table rendered both as markdown and HTML.
struct Table {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
    /// `kv`: cells wrap and are left-aligned (long text).
    class: &'static str,
}

impl Table {
    fn new(head: &[&str]) -> Self {
        Self {
            head: head.iter().map(|s| s.to_string()).collect(),
            rows: vec![],
            class: "",
        }
    }

    fn kv(mut self) -> Self {
        self.class = "kv";
        self
    }

    fn md(&self) -> String {
        let mut s = format!("| {} |\n", self.head.join(" | "));
        let _ = writeln!(
            s,
            "|{}",
            self.head.iter().map(|_| "---|").collect::<String>()
        );
        for r in &self.rows {
            let _ = writeln!(s, "| {} |", r.join(" | "));
        }
        s
    }

    fn html(&self) -> String {
        let mut s = format!(
            "<div class=\"tw\"><table class=\"{}\"><thead><tr>",
            self.class
        );
        for h in &self.head {
            let _ = write!(s, "<th>{}</th>", esc(h));
        }
        s.push_str("</tr></thead><tbody>");
        for r in &self.rows {
            s.push_str("<tr>");
            for c in r {
                let _ = write!(s, "<td>{}</td>", esc(c));
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table></div>");
        s
    }
}

fn f1(v: f64) -> String {
    format!("{v:.1}")
}

fn opt1(v: Option<f64>) -> String {
    v.map(f1).unwrap_or_else(|| "n/a".into())
}

/// `1.5 GB`, `200 MB`, `12 KB`.
pub fn fmt_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1073741824.0)
    } else if b >= 1e6 {
        format!("{:.0} MB", b / 1048576.0)
    } else {
        format!("{:.0} KB", b / 1024.0)
    }
}

/// `1213: 18, 1205: 2` (empty when there were no errors).
fn error_codes(m: &BTreeMap<u16, u64>) -> String {
    m.iter()
        .map(|(c, n)| format!("{c}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// CPU user/sys/iowait, context switches, server CPU and threads, the load generator's CPU
/// and run-queue wait, and whether it was saturated: the columns beside every point.
fn sys_cells(y: &SysDelta, workers: usize) -> Vec<String> {
    vec![
        format!(
            "{:.0}/{:.0}/{:.0}",
            y.cpu_user_pct, y.cpu_sys_pct, y.cpu_iowait_pct
        ),
        format!("{:.0}", y.ctx_switches_per_s),
        opt1(
            y.server_cpu_user_pct
                .zip(y.server_cpu_sys_pct)
                .map(|(a, b)| a + b),
        ),
        y.server_ctx_switches_per_s
            .map(|c| format!("{c:.0}"))
            .unwrap_or_else(|| "n/a".into()),
        y.server_threads
            .map(|t| t.to_string())
            .unwrap_or_else(|| "n/a".into()),
        format!("{:.0}", y.tool_cpu_pct),
        format!("{:.0}", y.tool_runq_ms_per_s),
        if y.tool_bottleneck(workers).is_some() {
            "SATURATED".into()
        } else {
            "ok".into()
        },
    ]
}

const SYS_HEAD: [&str; 8] = [
    "cpu us/sy/wa %",
    "cs/s",
    "server cpu %",
    "server cs/s",
    "server threads",
    "tool cpu %",
    "tool runq ms/s",
    "generator",
];

fn run_row(r: &RunResult) -> Vec<String> {
    let s = &r.summary;
    let mut v = vec![
        r.label.clone(),
        r.workload.clone(),
        r.threads.to_string(),
        if r.rate > 0.0 {
            f1(r.rate)
        } else {
            "closed".into()
        },
        f1(s.tps),
        f1(s.qps),
        format!("{:.2}", s.latency_ms.p50),
        format!("{:.2}", s.latency_ms.p95),
        format!("{:.2}", s.latency_ms.p99),
        format!("{:.2}", s.latency_ms.max),
        format!("{} / {} / {}", s.ignored_errors, s.errors, s.reconnects),
        error_codes(&s.errors_by_code),
    ];
    v.extend(sys_cells(&r.sys, r.client_threads));
    v.push(r.warnings.join("; "));
    v
}

fn run_head() -> Vec<&'static str> {
    let mut h = vec![
        "config",
        "workload",
        "clients",
        "rate",
        "TPS",
        "QPS",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "ignored / failed / reconn",
        "errors by code",
    ];
    h.extend(SYS_HEAD);
    h.push("warnings");
    h
}

/// What a rendered report consists of.
pub struct Rendered {
    pub html: String,
    pub markdown: String,
    /// (file name, svg)
    pub svgs: Vec<(String, String)>,
}

/// The page and the markdown being written.
struct Doc {
    html: String,
    md: String,
    svgs: Vec<(String, String)>,
}

impl Doc {
    fn h2(&mut self, id: &str, t: &str) {
        let _ = write!(self.html, "<h2 id=\"{id}\">{}</h2>", esc(t));
        let _ = writeln!(self.md, "## {t}\n");
    }
    fn h3(&mut self, t: &str) {
        let _ = write!(self.html, "<h3>{}</h3>", esc(t));
        let _ = writeln!(self.md, "### {t}\n");
    }
    fn p(&mut self, t: &str) {
        let _ = write!(self.html, "<p>{}</p>", esc(t));
        let _ = writeln!(self.md, "{t}\n");
    }
    fn p_class(&mut self, class: &str, t: &str) {
        let _ = write!(self.html, "<p class=\"{class}\">{}</p>", esc(t));
        let _ = writeln!(self.md, "**{t}**\n");
    }
    fn table(&mut self, t: &Table) {
        self.html.push_str(&t.html());
        self.md.push_str(&t.md());
        self.md.push('\n');
    }
    fn plot(&mut self, name: String, svg: String) {
        self.html.push_str("<div class=\"plot\">");
        self.html.push_str(&svg);
        self.html.push_str("</div>");
        let _ = writeln!(self.md, "![{name}](SVGDIR/{name})\n");
        self.svgs.push((name, svg));
    }
}

const CSS: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1120px;\
padding:12px 16px;line-height:1.45;color:#222}\
h1{font-size:1.7em;margin:.4em 0}h2{margin-top:1.8em;border-bottom:2px solid #ddd;padding-bottom:.2em}\
h3{margin-top:1.3em}\
.tw{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:.6em 0;max-width:100%}\
table{border-collapse:collapse;font-size:13px}\
td,th{border:1px solid #ccc;padding:3px 7px;text-align:right;white-space:nowrap}\
th{background:#f2f4f7}td:first-child,th:first-child{text-align:left}\
.plot{margin:.5em 0}.plot svg{width:100%;max-width:720px;height:auto;display:block}\
.plots2{display:flex;flex-wrap:wrap;gap:8px}.plots2 .plot{flex:1 1 360px}\
.pass{color:#176b1e;font-weight:bold}.fail{color:#b00020;font-weight:bold}\
.note{color:#555;font-size:.92em}nav{display:flex;flex-wrap:wrap;gap:.2em 1em}nav a{white-space:nowrap}\
table.kv td{white-space:normal;text-align:left;min-width:7em}table.kv th{text-align:left}\
details{margin:.6em 0}summary{cursor:pointer;font-weight:bold}\
@media (max-width:640px){body{padding:8px 10px;font-size:15px}h1{font-size:1.35em}\
h2{font-size:1.2em}table{font-size:12px}td,th{padding:2px 5px}}";

/// A line of the overlay charts: a configuration's runs, or a step test's steps.
struct Curve {
    name: String,
    /// clients -> (TPS, p95, p99) of each repetition
    pts: BTreeMap<usize, Vec<(f64, f64, f64)>>,
    from_step: bool,
}

impl Curve {
    fn mean(&self, t: usize, f: fn(&(f64, f64, f64)) -> f64) -> Option<f64> {
        let v = self.pts.get(&t)?;
        Some(v.iter().map(f).sum::<f64>() / v.len() as f64)
    }
    fn series(&self, f: fn(&(f64, f64, f64)) -> f64) -> Series {
        Series {
            name: if self.name.is_empty() {
                "run".into()
            } else {
                self.name.clone()
            },
            points: self
                .pts
                .keys()
                .map(|t| (*t as f64, self.mean(*t, f).unwrap_or(0.0)))
                .collect(),
        }
    }
}

fn curves(l: &Loaded) -> Vec<Curve> {
    let mut by: BTreeMap<String, Curve> = BTreeMap::new();
    for r in &l.runs {
        let c = by.entry(r.label.clone()).or_insert_with(|| Curve {
            name: r.label.clone(),
            pts: BTreeMap::new(),
            from_step: false,
        });
        let s = &r.summary;
        c.pts
            .entry(r.threads)
            .or_default()
            .push((s.tps, s.latency_ms.p95, s.latency_ms.p99));
    }
    for st in &l.steps {
        let c = by.entry(st.label.clone()).or_insert_with(|| Curve {
            name: st.label.clone(),
            pts: BTreeMap::new(),
            from_step: true,
        });
        for s in &st.steps {
            let m = &s.summary;
            c.pts
                .entry(s.threads)
                .or_default()
                .push((m.tps, m.latency_ms.p95, m.latency_ms.p99));
        }
    }
    by.into_values().collect()
}

fn pct(v: f64) -> String {
    format!("{v:.0}%")
}

fn environment(d: &mut Doc, envs: &[EnvInfo]) {
    d.h2("environment", "Environment");
    let mut head = vec!["".to_string()];
    head.extend(envs.iter().map(|e| e.server.clone()));
    let var = |e: &EnvInfo, k: &str| e.variables.get(k).cloned().unwrap_or_else(|| "–".into());
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut row = |name: &str, f: &dyn Fn(&EnvInfo) -> String| {
        let mut r = vec![name.to_string()];
        r.extend(envs.iter().map(f));
        rows.push(r);
    };
    row("server version", &|e| e.version.clone());
    row("address", &|e| e.conn.describe());
    for k in [
        "thread_handling",
        "thread_pool_size",
        "thread_pool_oversubscribe",
        "thread_pool_adaptive",
        "thread_pool_stall_limit",
        "thread_pool_max_threads",
        "thread_pool_idle_timeout",
        "thread_pool_priority",
        "max_connections",
        "innodb_buffer_pool_size",
        "innodb_flush_log_at_trx_commit",
        "max_prepared_stmt_count",
    ] {
        row(k, &|e| var(e, k));
    }
    row("machine CPU", &|e| {
        format!("{} × {}", e.machine.cpus, e.machine.cpu_model)
    });
    row("machine memory", &|e| {
        format!("{:.1} GB", e.machine.mem_total_mb / 1024.0)
    });
    row("kernel", &|e| e.machine.kernel.clone());
    row("workload", &|e| {
        format!(
            "{}, {} table(s) × {} rows",
            e.workload, e.tables, e.table_size
        )
    });
    row("data size", &|e| {
        let (b, est) = e.data_size();
        format!("{}{}", fmt_bytes(b), if est { " (estimated)" } else { "" })
    });
    row("data vs buffer pool", &|e| match e.buffer_pool_bytes {
        Some(bp) if bp > 0 => {
            let (b, _) = e.data_size();
            let r = b as f64 / bp as f64;
            format!(
                "{:.2}× — {}",
                r,
                if r <= 0.8 {
                    "fits in memory (CPU-bound reads)"
                } else {
                    "larger than the pool (reads hit the disk)"
                }
            )
        }
        _ => "n/a (no innodb_buffer_pool_size)".into(),
    });
    row("load generator", &|e| {
        format!(
            "shoal-bench {}, {} worker thread(s), same machine: {}",
            e.tool_version,
            e.client_threads,
            if e.conn.socket.is_some()
                || matches!(e.conn.host.as_str(), "127.0.0.1" | "localhost" | "::1")
            {
                "yes"
            } else {
                "no"
            }
        )
    });
    d.table(&Table {
        head,
        rows,
        class: "kv",
    });
    d.p_class(
        "note",
        "The machine rows describe the load generator's machine, which is the server's too when it is reached over loopback (then both share the CPUs: see the generator columns).",
    );
}

/// The overlay charts (TPS / p95 / p99 vs clients, every configuration and step test on one
/// set of axes, knees marked) and the comparison tables with ratio columns.
fn overlay(d: &mut Doc, l: &Loaded, cs: &[Curve]) -> Result<(), ReportError> {
    let xs: std::collections::BTreeSet<usize> =
        cs.iter().flat_map(|c| c.pts.keys().copied()).collect();
    if xs.len() < 2 {
        return Ok(());
    }
    d.h2("curves", "Throughput and latency vs clients");
    d.p("Every configuration (sweep points, averaged over repetitions) and every stepped-load test on one set of axes per metric; ▲ marks the knee of a step test (the last step within all thresholds).");
    let knee_marks = |f: fn(&crate::result::Summary) -> f64| -> Vec<Mark> {
        l.steps
            .iter()
            .filter_map(|s| {
                let k = s.knee_threads?;
                let st = s.steps.iter().find(|x| x.threads == k)?;
                Some(Mark {
                    x: k as f64,
                    y: f(&st.summary),
                    label: format!(
                        "knee {k}{}",
                        match s.confirmed {
                            Some(true) => " ✓",
                            Some(false) => " ✗",
                            None => "",
                        }
                    ),
                })
            })
            .collect()
    };
    for (name, title, y, f, m) in [
        (
            "tps_vs_connections.svg",
            "TPS vs connections",
            "transactions/s",
            (|p: &(f64, f64, f64)| p.0) as fn(&(f64, f64, f64)) -> f64,
            knee_marks(|s| s.tps),
        ),
        (
            "p95_vs_connections.svg",
            "p95 latency vs connections",
            "ms",
            |p: &(f64, f64, f64)| p.1,
            knee_marks(|s| s.latency_ms.p95),
        ),
        (
            "p99_vs_connections.svg",
            "p99 latency vs connections",
            "ms",
            |p: &(f64, f64, f64)| p.2,
            knee_marks(|s| s.latency_ms.p99),
        ),
    ] {
        let series: Vec<Series> = cs.iter().map(|c| c.series(f)).collect();
        let svg = line_chart(title, "clients (connections)", y, &series, true, None, &m)?;
        d.plot(name.to_string(), svg);
    }
    // Ratio columns against the first curve, at the concurrencies it shares with others.
    let shared: Vec<usize> = xs
        .iter()
        .copied()
        .filter(|t| cs.iter().filter(|c| c.pts.contains_key(t)).count() >= 2)
        .collect();
    // The reference: the measured (non-step) curve with the most concurrencies, the first
    // by name among equals (with `report A/ B/`, A's); curves of a single point (a baseline)
    // are left out of the ratios unless nothing else is there.
    let mut cmp: Vec<&Curve> = cs.iter().filter(|c| c.pts.len() >= 2).collect();
    if cmp.len() < 2 {
        cmp = cs.iter().collect();
    }
    if let Some(i) = (0..cmp.len())
        .filter(|&i| !cmp[i].from_step)
        .max_by(|&a, &b| cmp[a].pts.len().cmp(&cmp[b].pts.len()).then(b.cmp(&a)))
    {
        let r = cmp.remove(i);
        cmp.insert(0, r);
    }
    let shared: Vec<usize> = shared
        .into_iter()
        .filter(|t| cmp[0].pts.contains_key(t))
        .collect();
    if cmp.len() >= 2 && !shared.is_empty() {
        let cs = &cmp;
        let reference = cs[0];
        d.h3("Comparison");
        d.p(&format!(
            "Ratios are against “{}” at the same number of clients (TPS: above 1 is faster; p99: below 1 is better).",
            reference.name
        ));
        for (what, f) in [
            (
                "TPS",
                (|p: &(f64, f64, f64)| p.0) as fn(&(f64, f64, f64)) -> f64,
            ),
            ("p99 ms", |p: &(f64, f64, f64)| p.2),
        ] {
            let mut head = vec!["clients".to_string(), format!("{} {what}", reference.name)];
            for c in &cs[1..] {
                head.push(format!("{} {what}", c.name));
                head.push(format!("{} ÷ {}", c.name, reference.name));
            }
            let rows = shared
                .iter()
                .map(|&t| {
                    let r = reference.mean(t, f);
                    let mut row = vec![t.to_string(), r.map(f1).unwrap_or_else(|| "–".into())];
                    for c in &cs[1..] {
                        let v = c.mean(t, f);
                        row.push(v.map(f1).unwrap_or_else(|| "–".into()));
                        row.push(match (v, r) {
                            (Some(v), Some(r)) if r > 0.0 => format!("{:.2}×", v / r),
                            _ => "–".into(),
                        });
                    }
                    row
                })
                .collect();
            d.table(&Table {
                head,
                rows,
                class: "",
            });
        }
    }
    Ok(())
}

/// The conclusion: best setting per concurrency band, capacity at the thresholds, the
/// soak verdicts, the load generator.
fn conclusion(d: &mut Doc, l: &Loaded, cs: &[Curve]) {
    d.h2("conclusion", "Conclusion");
    // Best setting per concurrency (measured runs only: sweep points and baselines).
    let runs: Vec<&Curve> = cs.iter().filter(|c| !c.from_step).collect();
    let xs: std::collections::BTreeSet<usize> =
        runs.iter().flat_map(|c| c.pts.keys().copied()).collect();
    let tps = |p: &(f64, f64, f64)| p.0;
    let p99 = |p: &(f64, f64, f64)| p.2;
    let mut bands: Vec<(usize, usize, String, Vec<String>)> = Vec::new();
    for t in xs {
        let mut at: Vec<(&Curve, f64)> = runs
            .iter()
            .filter_map(|c| c.mean(t, tps).map(|v| (*c, v)))
            .collect();
        if at.len() < 2 {
            continue;
        }
        at.sort_by(|a, b| b.1.total_cmp(&a.1));
        let (best, bt) = at[0];
        let (second, st) = at[1];
        let detail = vec![
            format!("{bt:.1}"),
            f1(best.mean(t, p99).unwrap_or(0.0)),
            second.name.clone(),
            if st > 0.0 {
                format!("+{:.1}%", 100.0 * (bt / st - 1.0))
            } else {
                "–".into()
            },
        ];
        match bands.last_mut() {
            Some(b) if b.2 == best.name => {
                b.1 = t;
                b.3 = detail;
            }
            _ => bands.push((t, t, best.name.clone(), detail)),
        }
    }
    if !bands.is_empty() {
        d.h3("Best setting per concurrency band");
        let mut t = Table::new(&[
            "clients",
            "best setting (TPS)",
            "TPS at the band's top",
            "p99 ms there",
            "runner-up there",
            "lead",
        ])
        .kv();
        for (a, b, name, det) in &bands {
            let mut row = vec![
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}–{b}")
                },
                name.clone(),
            ];
            row.extend(det.iter().cloned());
            t.rows.push(row);
        }
        d.table(&t);
    }
    if !l.steps.is_empty() {
        d.h3("Capacity at the thresholds");
        let mut t = Table::new(&[
            "step test",
            "thresholds",
            "knee (clients)",
            "TPS at knee",
            "p90 ms at knee",
            "confirmation",
            "what broke next",
        ])
        .kv();
        for s in &l.steps {
            let th = &s.thresholds;
            let k = s
                .knee_threads
                .and_then(|k| s.steps.iter().find(|x| x.threads == k));
            let next = s.steps.iter().find(|x| !x.healthy);
            t.rows.push(vec![
                s.label.clone(),
                format!(
                    "cpu ≤ {}% ({}), iowait ≤ {}%, success ≥ {}%, p90 ≤ {} ms",
                    th.max_cpu_pct,
                    th.cpu_source,
                    th.max_iowait_pct,
                    th.min_success_pct,
                    th.max_p90_ms
                ),
                s.knee_threads
                    .map(|k| k.to_string())
                    .unwrap_or_else(|| "none".into()),
                k.map(|k| f1(k.summary.tps)).unwrap_or_else(|| "–".into()),
                k.map(|k| format!("{:.2}", k.summary.latency_ms.p90))
                    .unwrap_or_else(|| "–".into()),
                match (&s.confirmation, s.confirmed) {
                    (Some(c), Some(true)) => format!("confirmed, {:.1} TPS", c.summary.tps),
                    (Some(c), Some(false)) => format!(
                        "NOT confirmed ({:.1} TPS): {}",
                        c.summary.tps,
                        s.confirmation_broken.join("; ")
                    ),
                    _ => "not run".into(),
                },
                match next {
                    Some(n) => format!("{} clients: {}", n.threads, n.broken.join("; ")),
                    None => s.stop_reason.clone(),
                },
            ]);
        }
        d.table(&t);
    }
    if !l.soaks.is_empty() {
        d.h3("Stability (soak)");
        let mut t = Table::new(&[
            "soak",
            "clients",
            "duration",
            "TPS",
            "verdict",
            "TPS change",
            "RSS change",
            "threads change",
        ])
        .kv();
        for s in &l.soaks {
            t.rows.push(vec![
                s.run.label.clone(),
                s.run.threads.to_string(),
                crate::plan::fmt_duration(s.run.summary.secs),
                f1(s.run.summary.tps),
                if s.verdict.pass {
                    "PASS (no drift)".into()
                } else {
                    format!("DRIFT: {}", s.verdict.reasons.join("; "))
                },
                format!("{:.1}%", s.verdict.tps_change_pct),
                s.verdict
                    .rss_change_pct
                    .map(|p| format!("{p:.1}%"))
                    .unwrap_or_else(|| "n/a".into()),
                opt1(s.verdict.threads_change),
            ]);
        }
        d.table(&t);
    }
    // The load generator's own saturation over every measured point.
    let mut pts: Vec<(String, &SysDelta, usize)> = Vec::new();
    for r in &l.runs {
        pts.push((
            format!("{} @ {}", r.label, r.threads),
            &r.sys,
            r.client_threads,
        ));
    }
    for s in &l.steps {
        let w = s
            .confirmation
            .as_ref()
            .map(|c| c.client_threads)
            .unwrap_or(1);
        for x in &s.steps {
            pts.push((format!("{} @ {}", s.label, x.threads), &x.sys, w));
        }
    }
    for s in &l.soaks {
        pts.push((
            format!("{} @ {}", s.run.label, s.run.threads),
            &s.run.sys,
            s.run.client_threads,
        ));
    }
    if !pts.is_empty() {
        d.h3("Load generator");
        let sat: Vec<&String> = pts
            .iter()
            .filter(|(_, y, w)| y.tool_bottleneck(*w).is_some())
            .map(|(n, _, _)| n)
            .collect();
        let max_cpu = pts.iter().map(|p| p.1.tool_cpu_pct).fold(0.0, f64::max);
        let max_rq = pts
            .iter()
            .map(|p| p.1.tool_runq_ms_per_s)
            .fold(0.0, f64::max);
        let line = format!(
            "Highest load-generator CPU {} of a core, highest run-queue wait {:.0} ms/s over {} points.",
            pct(max_cpu),
            max_rq,
            pts.len()
        );
        if sat.is_empty() {
            d.p_class(
                "pass",
                &format!("{line} Never saturated: the numbers measure the server."),
            );
        } else {
            d.p_class(
                "fail",
                &format!(
                    "{line} Saturated at {} point(s): {} — there the numbers partly measure the load generator.",
                    sat.len(),
                    sat.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                ),
            );
        }
    }
}

/// Renders loaded results.
pub fn render(l: &Loaded) -> Result<Rendered, ReportError> {
    let plan_names: std::collections::BTreeSet<&str> =
        l.envs.iter().map(|e| e.plan.as_str()).collect();
    let title = if plan_names.is_empty() {
        "shoal-bench report".to_string()
    } else {
        format!(
            "Capacity test: {}",
            plan_names.into_iter().collect::<Vec<_>>().join(", ")
        )
    };
    let mut d = Doc {
        html: format!(
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{}</title><style>{CSS}</style></head><body><h1>{}</h1>",
            esc(&title),
            esc(&title)
        ),
        md: format!("# {title}\n\n"),
        svgs: Vec::new(),
    };
    let cs = curves(l);
    let mut nav = vec![];
    if !l.envs.is_empty() {
        nav.push(("environment", "Environment"));
    }
    if cs
        .iter()
        .flat_map(|c| c.pts.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        >= 2
    {
        nav.push(("curves", "Curves"));
    }
    if !l.steps.is_empty() {
        nav.push(("steps", "Stepped load"));
    }
    if !l.soaks.is_empty() {
        nav.push(("soak", "Soak"));
    }
    if !l.runs.is_empty() {
        nav.push(("runs", "Runs"));
    }
    nav.push(("conclusion", "Conclusion"));
    d.html.push_str("<nav>");
    for (id, t) in &nav {
        let _ = write!(d.html, "<a href=\"#{id}\">{t}</a>");
    }
    d.html.push_str("</nav>");

    if !l.skipped.is_empty() {
        let line = format!(
            "{} file(s) in the input directories were not loaded:",
            l.skipped.len()
        );
        let _ = write!(d.html, "<h2>Skipped files</h2><p>{}</p><ul>", esc(&line));
        let _ = writeln!(d.md, "## Skipped files\n\n{line}\n");
        for sk in &l.skipped {
            let _ = write!(
                d.html,
                "<li>{}: {}</li>",
                esc(&sk.path.display().to_string()),
                esc(&sk.reason)
            );
            let _ = writeln!(d.md, "- `{}`: {}", sk.path.display(), sk.reason);
        }
        d.html.push_str("</ul>");
        d.md.push('\n');
    }

    if !l.envs.is_empty() {
        environment(&mut d, &l.envs);
    }
    overlay(&mut d, l, &cs)?;

    if !l.steps.is_empty() {
        d.h2("steps", "Stepped load");
    }
    for (i, s) in l.steps.iter().enumerate() {
        d.h3(&format!("Stepped load: {} {}", s.label, s.workload));
        let knee = match (s.knee_threads, s.confirmed) {
            (Some(k), Some(true)) => format!(
                "knee {k} clients ({:.1} TPS), confirmed",
                s.knee_tps.unwrap_or(0.0)
            ),
            (Some(k), Some(false)) => format!(
                "knee {k} clients ({:.1} TPS), NOT confirmed: {}",
                s.knee_tps.unwrap_or(0.0),
                s.confirmation_broken.join("; ")
            ),
            (Some(k), None) => format!(
                "knee {k} clients ({:.1} TPS), no confirmation run",
                s.knee_tps.unwrap_or(0.0)
            ),
            (None, _) => "no healthy step".into(),
        };
        let th = &s.thresholds;
        let line = format!(
            "{knee}. Stopped: {}. Thresholds: cpu <= {}% ({}), iowait <= {}%, success >= {}%, p90 <= {} ms, memory <= {}%. {} clients to start, +{} every {} s.",
            s.stop_reason, th.max_cpu_pct, th.cpu_source, th.max_iowait_pct, th.min_success_pct, th.max_p90_ms, th.max_mem_pct, s.start_threads, s.step_threads, s.step_s
        );
        d.p(&line);
        let w = s
            .confirmation
            .as_ref()
            .map(|c| c.client_threads)
            .unwrap_or(1);
        let mut head = vec![
            "clients",
            "TPS",
            "p90 ms",
            "p95 ms",
            "p99 ms",
            "success %",
            "ignored / failed / reconn",
            "errors by code",
            "cpu % (checked)",
        ];
        head.extend(SYS_HEAD);
        head.extend(["healthy", "broken"]);
        let mut t = Table::new(&head);
        for st in &s.steps {
            let mut row = vec![
                format!(
                    "{}{}",
                    st.threads,
                    if Some(st.threads) == s.knee_threads {
                        " (knee)"
                    } else {
                        ""
                    }
                ),
                f1(st.summary.tps),
                format!("{:.2}", st.summary.latency_ms.p90),
                format!("{:.2}", st.summary.latency_ms.p95),
                format!("{:.2}", st.summary.latency_ms.p99),
                format!("{:.3}", st.summary.success_pct),
                format!(
                    "{} / {} / {}",
                    st.summary.ignored_errors, st.summary.errors, st.summary.reconnects
                ),
                error_codes(&st.summary.errors_by_code),
                f1(st.cpu_pct),
            ];
            row.extend(sys_cells(&st.sys, w));
            row.push(if st.healthy { "yes" } else { "no" }.into());
            row.push(st.broken.join("; "));
            t.rows.push(row);
        }
        d.table(&t);
        if let Some(c) = &s.confirmation {
            d.p("Confirmation run:");
            let mut t = Table::new(&run_head());
            t.rows.push(run_row(c));
            d.table(&t);
        }
        let marks: Vec<Mark> = s
            .knee_threads
            .and_then(|k| s.steps.iter().find(|x| x.threads == k))
            .map(|k| Mark {
                x: k.threads as f64,
                y: k.summary.tps,
                label: format!("knee {}", k.threads),
            })
            .into_iter()
            .collect();
        let tps = Series {
            name: "TPS".into(),
            points: s
                .steps
                .iter()
                .map(|st| (st.threads as f64, st.summary.tps))
                .collect(),
        };
        d.html.push_str("<div class=\"plots2\">");
        let svg = line_chart(
            "Stepped load: TPS per step",
            "clients",
            "transactions/s",
            &[tps],
            false,
            None,
            &marks,
        )?;
        d.plot(format!("step{i}_tps.svg"), svg);
        let p90 = Series {
            name: "p90".into(),
            points: s
                .steps
                .iter()
                .map(|st| (st.threads as f64, st.summary.latency_ms.p90))
                .collect(),
        };
        let svg = line_chart(
            "Stepped load: p90 per step",
            "clients",
            "ms",
            &[p90],
            false,
            Some((th.max_p90_ms, "p90 limit")),
            &[],
        )?;
        d.plot(format!("step{i}_p90.svg"), svg);
        d.html.push_str("</div>");
    }

    if !l.soaks.is_empty() {
        d.h2("soak", "Soak");
    }
    for (i, s) in l.soaks.iter().enumerate() {
        let r = &s.run;
        let v = &s.verdict;
        d.h3(&format!(
            "Soak: {} {} @ {} clients",
            r.label, r.workload, r.threads
        ));
        let line = format!(
            "Verdict: {}. TPS change {:.1}% ({:.1} TPS/h), RSS change {}%, thread change {}, failed events {}.{}",
            if v.pass { "PASS (no drift)" } else { "DRIFT" },
            v.tps_change_pct,
            v.tps_slope_per_hour,
            opt1(v.rss_change_pct),
            opt1(v.threads_change),
            v.errors,
            if v.reasons.is_empty() { String::new() } else { format!(" Reasons: {}", v.reasons.join("; ")) }
        );
        d.p_class(if v.pass { "pass" } else { "fail" }, &line);
        let mut t = Table::new(&run_head());
        t.rows.push(run_row(r));
        d.table(&t);
        d.html.push_str("<div class=\"plots2\">");
        let tps = Series {
            name: "TPS".into(),
            points: r.intervals.iter().map(|iv| (iv.t, iv.tps)).collect(),
        };
        let svg = line_chart(
            "Soak: TPS",
            "seconds",
            "transactions/s",
            &[tps],
            false,
            None,
            &[],
        )?;
        d.plot(format!("soak{i}_tps.svg"), svg);
        let lat = Series {
            name: "p99".into(),
            points: r
                .intervals
                .iter()
                .map(|iv| (iv.t, iv.latency_ms.p99))
                .collect(),
        };
        let svg = line_chart("Soak: p99", "seconds", "ms", &[lat], false, None, &[])?;
        d.plot(format!("soak{i}_p99.svg"), svg);
        let rss: Vec<(f64, f64)> = r
            .intervals
            .iter()
            .filter_map(|iv| iv.sys.server_rss_mb.map(|m| (iv.t, m)))
            .collect();
        let thr: Vec<(f64, f64)> = r
            .intervals
            .iter()
            .filter_map(|iv| iv.sys.server_threads.map(|m| (iv.t, m as f64)))
            .collect();
        if !rss.is_empty() {
            let svg = line_chart(
                "Soak: server RSS and threads",
                "seconds",
                "MB / threads",
                &[
                    Series {
                        name: "RSS MB".into(),
                        points: rss,
                    },
                    Series {
                        name: "threads".into(),
                        points: thr,
                    },
                ],
                false,
                None,
                &[],
            )?;
            d.plot(format!("soak{i}_server.svg"), svg);
        }
        d.html.push_str("</div>");
    }

    if !l.runs.is_empty() {
        d.h2("runs", "Runs");
        let mut runs: Vec<&RunResult> = l.runs.iter().collect();
        runs.sort_by(|a, b| a.label.cmp(&b.label).then(a.threads.cmp(&b.threads)));
        let mut t = Table::new(&run_head());
        t.rows = runs.iter().map(|r| run_row(r)).collect();
        d.table(&t);
        d.html
            .push_str("<details><summary>Time series of every run</summary><div class=\"plots2\">");
        d.md.push_str("### Time series\n\n");
        for (i, r) in runs.iter().enumerate().take(24) {
            let tps = Series {
                name: "TPS".into(),
                points: r.intervals.iter().map(|iv| (iv.t, iv.tps)).collect(),
            };
            let title = format!("{} {} @ {} clients: TPS", r.label, r.workload, r.threads);
            let svg = line_chart(
                &title,
                "seconds",
                "transactions/s",
                &[tps],
                false,
                None,
                &[],
            )?;
            d.plot(format!("run{i}_tps.svg"), svg);
            let lat = vec![
                Series {
                    name: "p95".into(),
                    points: r
                        .intervals
                        .iter()
                        .map(|iv| (iv.t, iv.latency_ms.p95))
                        .collect(),
                },
                Series {
                    name: "p99".into(),
                    points: r
                        .intervals
                        .iter()
                        .map(|iv| (iv.t, iv.latency_ms.p99))
                        .collect(),
                },
            ];
            let title = format!(
                "{} {} @ {} clients: latency",
                r.label, r.workload, r.threads
            );
            let svg = line_chart(&title, "seconds", "ms", &lat, false, None, &[])?;
            d.plot(format!("run{i}_latency.svg"), svg);
        }
        d.html.push_str("</div></details>");
    }

    conclusion(&mut d, l, &cs);
    d.html.push_str("</body></html>\n");
    Ok(Rendered {
        html: d.html,
        markdown: d.md,
        svgs: d.svgs,
    })
}

/// Renders and writes `out` (HTML), `out` with `.md`, and the SVGs in `<stem>_svg/`.
/// Warns on stderr about every skipped file.
pub fn write(paths: &[PathBuf], out: &Path) -> Result<Rendered, ReportError> {
    let l = load(paths)?;
    for sk in &l.skipped {
        eprintln!("WARNING: skipped {}: {}", sk.path.display(), sk.reason);
    }
    let mut r = render(&l)?;
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let svgdir_name = format!("{stem}_svg");
    let svgdir = dir.join(&svgdir_name);
    std::fs::create_dir_all(&svgdir).map_err(io_err(&svgdir))?;
    for (name, svg) in &r.svgs {
        let p = svgdir.join(name);
        std::fs::write(&p, svg).map_err(io_err(&p))?;
    }
    r.markdown = r.markdown.replace("SVGDIR", &svgdir_name);
    std::fs::write(out, &r.html).map_err(io_err(out))?;
    let mdp = out.with_extension("md");
    std::fs::write(&mdp, &r.markdown).map_err(io_err(&mdp))?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::result::fixtures;

    /// Writes a run (closed loop, one open loop), the runs of a 2 x 2 sweep, a step test and
    /// a soak, all of which saw errors, the way the tool saves them.
    fn write_results(dir: &Path) -> Vec<ResultFile> {
        let mut files = Vec::new();
        let mut open = fixtures::run("open", 64, 1100.0);
        open.rate = 1200.0;
        for (i, f) in [
            ResultFile::Run(Box::new(fixtures::run("", 64, 1000.0))),
            ResultFile::Run(Box::new(open)),
            ResultFile::Step(Box::new(fixtures::step())),
            ResultFile::Soak(Box::new(fixtures::soak())),
        ]
        .into_iter()
        .enumerate()
        {
            f.save(&dir.join(f.file_name(&format!("17000000000{i:02}"))))
                .unwrap();
            files.push(f);
        }
        for cfg in ["oversub3", "oversub10"] {
            for t in [8, 512] {
                let mut r = fixtures::run(cfg, t, 100.0 + t as f64);
                r.summary.errors_by_code.insert(1040, t as u64);
                let f = ResultFile::Run(Box::new(r));
                f.save(&dir.join(crate::method::sweep_file_name(cfg, t, 1)))
                    .unwrap();
                files.push(f);
            }
        }
        files
    }

    #[test]
    fn results_with_errors_load_from_a_directory_and_report() {
        let d = fixtures::dir("report");
        let written = write_results(&d);
        let l = load(std::slice::from_ref(&d)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(l.skipped, vec![]);
        // Everything written was read, equal field for field.
        let mut read: Vec<ResultFile> = l
            .runs
            .iter()
            .map(|r| ResultFile::Run(Box::new(r.clone())))
            .chain(
                l.steps
                    .iter()
                    .map(|s| ResultFile::Step(Box::new(s.clone()))),
            )
            .chain(
                l.soaks
                    .iter()
                    .map(|s| ResultFile::Soak(Box::new(s.clone()))),
            )
            .collect();
        assert_eq!(read.len(), written.len());
        for w in &written {
            let i = read
                .iter()
                .position(|r| r == w)
                .unwrap_or_else(|| panic!("not read back: {w:?}"));
            read.remove(i);
        }
        // The report shows the errors by code of runs, steps, the confirmation run and the soak.
        let out = d.join("out").join("report.html");
        let r = write(std::slice::from_ref(&d), &out).unwrap_or_else(|e| panic!("{e}"));
        let page = std::fs::read_to_string(&out).unwrap();
        assert_eq!(page, r.html);
        for want in [
            "errors by code",
            "1062: 3, 1205: 2, 1213: 18",
            "1040: 512, 1062: 3, 1205: 2, 1213: 18",
            "1020: 7, 1062: 11, 1213: 250",
            "1213: 5, 2013: 1",
            "1205: 6, 1213: 40, 1927: 2",
            "TPS vs connections",
            "oversub10",
            "Stepped load",
            "Confirmation run",
            "Soak",
            "DRIFT",
        ] {
            assert!(page.contains(want), "report lacks {want:?}");
        }
        assert!(!page.contains("Skipped files"));
        let md = std::fs::read_to_string(out.with_extension("md")).unwrap();
        assert!(md.contains("| 1213: 5, 2013: 1 |"), "{md}");
        assert!(d.join("out/report_svg/tps_vs_connections.svg").exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn directory_load_names_every_skipped_file_and_why() {
        let d = fixtures::dir("skipped");
        let good = ResultFile::Run(Box::new(fixtures::run("good", 16, 500.0)));
        good.save(&d.join("run-good.json")).unwrap();
        std::fs::write(
            d.join("corrupt.json"),
            "{\"kind\": \"run\", \"label\": \"tru",
        )
        .unwrap();
        std::fs::write(d.join("notes.json"), "[1, 2, 3]").unwrap();
        let mut v = serde_json::to_value(&good).unwrap();
        v["summary"]["errors_by_code"] = serde_json::json!({"1213": "many"});
        std::fs::write(d.join("run-edited.json"), v.to_string()).unwrap();
        std::fs::write(d.join("README.txt"), "not looked at").unwrap();
        let l = load(std::slice::from_ref(&d)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(l.runs.len(), 1);
        assert_eq!(ResultFile::Run(Box::new(l.runs[0].clone())), good);
        let names: Vec<String> = l
            .skipped
            .iter()
            .map(|s| s.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["corrupt.json", "notes.json", "run-edited.json"]);
        assert!(
            l.skipped[0].reason.contains("not valid JSON"),
            "{:?}",
            l.skipped
        );
        assert!(l.skipped[1].reason.contains("not a shoal-bench result"));
        assert!(
            l.skipped[2].reason.contains("kind \"run\"") && l.skipped[2].reason.contains("many"),
            "{:?}",
            l.skipped
        );
        // The report says so too.
        let html = render(&l).unwrap().html;
        assert!(html.contains("Skipped files"));
        for s in &l.skipped {
            assert!(html.contains(&esc(&s.path.display().to_string())));
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn directory_with_nothing_readable_fails_naming_each_file() {
        let d = fixtures::dir("nothing");
        std::fs::write(d.join("a.json"), "{").unwrap();
        std::fs::write(d.join("b.json"), "{\"kind\": \"sweep\"}").unwrap();
        let e = load(std::slice::from_ref(&d))
            .err()
            .expect("nothing loadable must fail");
        let msg = e.to_string();
        assert!(matches!(&e, ReportError::NothingLoaded { skipped, .. } if skipped.len() == 2));
        for want in [
            d.join("a.json").display().to_string(),
            "not valid JSON".into(),
            d.join("b.json").display().to_string(),
            "unknown variant `sweep`".into(),
        ] {
            assert!(msg.contains(&want), "{msg}");
        }
        // A file named on the command line is not skipped: its error is the error.
        let e = load(&[d.join("b.json")]).err().unwrap().to_string();
        assert!(e.contains("b.json") && e.contains("sweep"), "{e}");
        // A directory without any JSON file says that.
        let empty = fixtures::dir("empty");
        let e = load(std::slice::from_ref(&empty))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no result files (*.json)"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
        let _ = std::fs::remove_dir_all(&empty);
    }

    /// `report A/ B/`: the same configuration from two directories becomes two lines, and
    /// the comparison has ratio columns; the knee is marked; the conclusion names the best
    /// setting per band and the capacity.
    #[test]
    fn two_inputs_are_overlaid_with_ratios_and_a_conclusion() {
        let root = fixtures::dir("compare");
        let (a, b) = (root.join("mariadb-pool"), root.join("shoal-pool"));
        for (dir, factor) in [(&a, 1.0), (&b, 1.5)] {
            std::fs::create_dir_all(dir).unwrap();
            for t in [8usize, 64, 512] {
                for (cfg, extra) in [("stall500", 0.0), ("stall60", 50.0)] {
                    let mut r = fixtures::run(cfg, t, (1000.0 + extra) * factor);
                    r.summary.latency_ms.p99 = 10.0 * t as f64 / factor;
                    r.sys.tool_cpu_pct = 5.0;
                    r.sys.tool_runq_ms_per_s = 1.0;
                    let f = ResultFile::Run(Box::new(r));
                    f.save(&dir.join(crate::method::sweep_file_name(cfg, t, 1)))
                        .unwrap();
                }
            }
        }
        let mut st = fixtures::step();
        st.confirmed = Some(true);
        ResultFile::Step(Box::new(st))
            .save(&b.join("step.json"))
            .unwrap();
        let l = load(&[a.clone(), b.clone()]).unwrap_or_else(|e| panic!("{e}"));
        assert!(l.runs.iter().any(|r| r.label == "mariadb-pool/stall500"));
        assert!(l.runs.iter().any(|r| r.label == "shoal-pool/stall500"));
        assert_eq!(l.steps[0].label, "shoal-pool/stepped");
        let r = render(&l).unwrap();
        let h = &r.html;
        // Reference: the first input's configuration with the most points.
        assert!(
            h.contains("Ratios are against “mariadb-pool/stall500”"),
            "no reference"
        );
        assert!(h.contains("shoal-pool/stall500 ÷ mariadb-pool/stall500"));
        // 1.5 × the TPS; p99 divided by 1.5 (0.67×); stall60 is 1.05× in the same server.
        assert!(h.contains("<td>1.50×</td>"), "no TPS ratio");
        assert!(h.contains("<td>0.67×</td>"), "no p99 ratio");
        assert!(h.contains("<td>1.05×</td>"));
        // The knee marked on the overlay chart (fixture: knee 80, confirmed).
        let tps_svg = &r
            .svgs
            .iter()
            .find(|s| s.0 == "tps_vs_connections.svg")
            .unwrap()
            .1;
        assert!(tps_svg.contains("knee 80 ✓"), "knee not marked");
        for name in [
            "mariadb-pool/stall60",
            "shoal-pool/stall500",
            "shoal-pool/stepped",
        ] {
            assert!(tps_svg.contains(name), "{name} not on the chart");
        }
        // Conclusion: shoal-pool/stall60 wins every band (1575 TPS vs 1500), 4.8 % ahead
        // of shoal-pool/stall500; the step test's capacity and the generator verdict.
        let concl = &h[h.find("id=\"conclusion\"").unwrap()..];
        assert!(
            concl.contains("<td>8–512</td><td>shoal-pool/stall60</td><td>1575.0</td>"),
            "{concl}"
        );
        assert!(concl.contains("+5.0%"));
        assert!(concl.contains("<td>shoal-pool/stepped</td>"));
        assert!(concl.contains("confirmed, 950.0 TPS"));
        assert!(concl.contains("120 clients: success 97.500% &lt; 99.99%"));
        assert!(concl.contains("Never saturated") || concl.contains("Saturated at"));
        // Phone width: a viewport, scrollable tables, charts that scale.
        assert!(h.contains("width=device-width"));
        assert!(h.contains("overflow-x:auto") && h.contains("height:auto"));
        let _ = std::fs::remove_dir_all(&root);
    }

    /// Width, height and the share of non-white pixels of an 8-bit RGB/RGBA PNG.
    fn png_stats(p: &Path) -> (u32, u32, f64) {
        let b = std::fs::read(p).unwrap();
        assert_eq!(
            &b[..8],
            b"\x89PNG\r\n\x1a\n",
            "{} is not a PNG",
            p.display()
        );
        let be = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let (w, h) = (be(16), be(20));
        let (depth, color) = (b[24], b[25]);
        assert_eq!(depth, 8);
        let bpp = match color {
            2 => 3,
            6 => 4,
            c => panic!("colour type {c}"),
        };
        let mut idat = Vec::new();
        let mut i = 8;
        while i + 8 <= b.len() {
            let len = be(i) as usize;
            if &b[i + 4..i + 8] == b"IDAT" {
                idat.extend_from_slice(&b[i + 8..i + 8 + len]);
            }
            i += 12 + len;
        }
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(&idat[..]), &mut raw)
            .unwrap();
        let stride = w as usize * bpp;
        let mut prev = vec![0u8; stride];
        let mut cur = vec![0u8; stride];
        let mut dark = 0usize;
        for row in raw.chunks(stride + 1).take(h as usize) {
            let (f, data) = (row[0], &row[1..]);
            for x in 0..stride {
                let a = if x >= bpp { cur[x - bpp] as i32 } else { 0 };
                let up = prev[x] as i32;
                let c = if x >= bpp { prev[x - bpp] as i32 } else { 0 };
                let pred = match f {
                    0 => 0,
                    1 => a,
                    2 => up,
                    3 => (a + up) / 2,
                    4 => {
                        let p = a + up - c;
                        let (pa, pb, pc) = ((p - a).abs(), (p - up).abs(), (p - c).abs());
                        if pa <= pb && pa <= pc {
                            a
                        } else if pb <= pc {
                            up
                        } else {
                            c
                        }
                    }
                    _ => panic!("filter {f}"),
                };
                cur[x] = (data[x] as i32 + pred) as u8;
            }
            dark += cur
                .chunks(bpp)
                .filter(|px| px[..3].iter().any(|&v| v < 200))
                .count();
            std::mem::swap(&mut prev, &mut cur);
        }
        (w, h, dark as f64 / (w as f64 * h as f64))
    }

    /// The report in a real browser: headless Chromium screenshots at desktop and at phone
    /// width must be written, have the asked size and show content (not a blank page).
    #[test]
    fn report_renders_in_chromium_at_desktop_and_phone_width() {
        let Some(chromium) = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
            .iter()
            .map(Path::new)
            .find(|p| p.exists())
        else {
            eprintln!("SKIPPED: chromium is not installed (apt-get install chromium)");
            return;
        };
        let d = fixtures::dir("browser");
        write_results(&d);
        let mut env = fixtures::env();
        env.server = "mariadb".into();
        ResultFile::Env(Box::new(env))
            .save(&d.join("env.json"))
            .unwrap();
        let out = d.join("out").join("report.html");
        write(std::slice::from_ref(&d), &out).unwrap_or_else(|e| panic!("{e}"));
        for (name, w, h) in [("desktop", 1280u32, 1600u32), ("phone", 390, 1400)] {
            let png = d.join(format!("{name}.png"));
            let t0 = std::time::Instant::now();
            let mut child = std::process::Command::new(chromium)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--no-zygote",
                    "--hide-scrollbars",
                    "--disable-dev-shm-usage",
                ])
                .arg(format!(
                    "--user-data-dir={}",
                    d.join(format!("ud-{name}")).display()
                ))
                .arg(format!("--window-size={w},{h}"))
                .arg(format!("--screenshot={}", png.display()))
                .arg(format!("file://{}", out.display()))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("start chromium");
            while child.try_wait().unwrap().is_none() {
                if t0.elapsed() > std::time::Duration::from_secs(240) {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("chromium took more than 240 s for the {name} screenshot");
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            let size = std::fs::metadata(&png)
                .unwrap_or_else(|e| panic!("no {name} screenshot: {e}"))
                .len();
            let (pw, ph, ink) = png_stats(&png);
            eprintln!(
                "{name}: {pw}x{ph}, {size} bytes, {:.1}% non-white, {:.1}s",
                100.0 * ink,
                t0.elapsed().as_secs_f64()
            );
            assert_eq!((pw, ph), (w, h), "{name} screenshot size");
            assert!(size > 20_000, "{name} screenshot only {size} bytes");
            assert!((0.01..0.6).contains(&ink), "{name}: {:.3} non-white", ink);
            if let Ok(keep) = std::env::var("SHOAL_BENCH_KEEP_SCREENSHOTS") {
                let _ = std::fs::copy(&png, Path::new(&keep).join(format!("{name}.png")));
            }
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn chart_contains_data() {
        let s = Series {
            name: "cfg-a".into(),
            points: vec![(8.0, 100.0), (64.0, 900.0), (512.0, 700.0)],
        };
        let svg = line_chart(
            "TPS",
            "connections",
            "tps",
            &[s],
            true,
            Some((800.0, "limit")),
            &[Mark {
                x: 64.0,
                y: 900.0,
                label: "knee 64".into(),
            }],
        )
        .unwrap();
        assert!(svg.contains("knee 64"));
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("polyline") || svg.contains("<path"));
        assert!(svg.contains("cfg-a"));
        assert!(svg.matches("<circle").count() >= 3);
    }
}
