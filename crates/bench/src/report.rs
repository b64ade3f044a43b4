//! `report`: renders stored results (JSON files, or directories of them) as one HTML page with
//! inline SVG plots, a markdown file with the same tables, and the SVG files themselves.
//!
//! Plots (plotters, SVG backend only, so no font or bitmap dependencies):
//! TPS, p95 and p99 versus connections, one line per configuration label (repetitions are
//! averaged for the line); a time series (TPS and p95/p99 per interval) for each run;
//! stepped-load curves (TPS and p90 per step, with the p90 threshold); soak time series
//! (TPS, server RSS and thread count).

use crate::result::{EnvInfo, ResultError, ResultFile, RunResult, SoakResult, StepResult};
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
/// [`Loaded::skipped`] with the reason, and [`write`] prints it as a warning. Fails when
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

/// Renders a line chart to an SVG string.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log_x: bool,
    hline: Option<(f64, &str)>,
) -> Result<String, ReportError> {
    let perr = |e: String| ReportError::Plot(title.to_string(), e);
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
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
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.1 };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 360)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| perr(e.to_string()))?;
        let mut b = ChartBuilder::on(&root);
        b.caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(64);
        let use_log = log_x && x0 > 0.0 && x1 / x0 >= 8.0;
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(x_label)
                    .y_desc(y_label)
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
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK)
                    .position(SeriesLabelPosition::UpperRight)
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
}

impl Table {
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
        let mut s = String::from("<table><thead><tr>");
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
        s.push_str("</tbody></table>");
        s
    }
}

fn f1(v: f64) -> String {
    format!("{v:.1}")
}

fn opt1(v: Option<f64>) -> String {
    v.map(f1).unwrap_or_else(|| "n/a".into())
}

/// `1213: 18, 1205: 2` (empty when there were no errors).
fn error_codes(m: &BTreeMap<u16, u64>) -> String {
    m.iter()
        .map(|(c, n)| format!("{c}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn run_row(r: &RunResult) -> Vec<String> {
    let s = &r.summary;
    let y = &r.sys;
    vec![
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
        format!(
            "{:.0}/{:.0}/{:.0}",
            y.cpu_user_pct, y.cpu_sys_pct, y.cpu_iowait_pct
        ),
        f1(y.ctx_switches_per_s),
        opt1(
            y.server_cpu_user_pct
                .zip(y.server_cpu_sys_pct)
                .map(|(a, b)| a + b),
        ),
        y.server_threads
            .map(|t| t.to_string())
            .unwrap_or_else(|| "n/a".into()),
        f1(y.tool_cpu_pct),
        if r.warnings.is_empty() {
            String::new()
        } else {
            r.warnings.join("; ")
        },
    ]
}

const RUN_HEAD: [&str; 18] = [
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
    "cpu us/sy/wa %",
    "cs/s",
    "server cpu %",
    "server threads",
    "tool cpu %",
    "warnings",
];

/// What a rendered report consists of.
pub struct Rendered {
    pub html: String,
    pub markdown: String,
    /// (file name, svg)
    pub svgs: Vec<(String, String)>,
}

/// Renders loaded results.
pub fn render(l: &Loaded) -> Result<Rendered, ReportError> {
    let mut svgs: Vec<(String, String)> = Vec::new();
    let mut html = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>shoal-bench report</title>\
         <style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:12px}\
         td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}h2{margin-top:2em}\
         .plots svg{margin:4px}</style></head><body><h1>shoal-bench report</h1>",
    );
    let mut md = String::from("# shoal-bench report\n\n");
    let mut add_plot = |name: String, svg: String, html: &mut String, md: &mut String| {
        html.push_str("<div class=\"plots\">");
        html.push_str(&svg);
        html.push_str("</div>");
        let _ = writeln!(md, "![{name}](SVGDIR/{name})\n");
        svgs.push((name, svg));
    };

    if !l.skipped.is_empty() {
        let line = format!(
            "{} file(s) in the input directories were not loaded:",
            l.skipped.len()
        );
        let _ = write!(html, "<h2>Skipped files</h2><p>{}</p><ul>", esc(&line));
        let _ = writeln!(md, "## Skipped files\n\n{line}\n");
        for sk in &l.skipped {
            let _ = write!(
                html,
                "<li>{}: {}</li>",
                esc(&sk.path.display().to_string()),
                esc(&sk.reason)
            );
            let _ = writeln!(md, "- `{}`: {}", sk.path.display(), sk.reason);
        }
        html.push_str("</ul>");
        md.push('\n');
    }

    if !l.runs.is_empty() {
        html.push_str("<h2>Runs</h2>");
        md.push_str("## Runs\n\n");
        let mut runs: Vec<&RunResult> = l.runs.iter().collect();
        runs.sort_by(|a, b| a.label.cmp(&b.label).then(a.threads.cmp(&b.threads)));
        let t = Table {
            head: RUN_HEAD.iter().map(|s| s.to_string()).collect(),
            rows: runs.iter().map(|r| run_row(r)).collect(),
        };
        html.push_str(&t.html());
        md.push_str(&t.md());
        md.push('\n');
        // Versus connections, per label (means over repetitions).
        let mut by_label: BTreeMap<&str, BTreeMap<usize, Vec<&RunResult>>> = BTreeMap::new();
        for r in &runs {
            by_label
                .entry(r.label.as_str())
                .or_default()
                .entry(r.threads)
                .or_default()
                .push(r);
        }
        let series_of = |f: &dyn Fn(&RunResult) -> f64| -> Vec<Series> {
            by_label
                .iter()
                .map(|(label, pts)| Series {
                    name: if label.is_empty() {
                        "run".into()
                    } else {
                        label.to_string()
                    },
                    points: pts
                        .iter()
                        .map(|(t, rs)| {
                            (
                                *t as f64,
                                rs.iter().map(|r| f(r)).sum::<f64>() / rs.len() as f64,
                            )
                        })
                        .collect(),
                })
                .collect()
        };
        let distinct_threads = runs
            .iter()
            .map(|r| r.threads)
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        if distinct_threads > 1 {
            for (name, title, y, f) in [
                (
                    "tps_vs_connections.svg",
                    "TPS vs connections",
                    "transactions/s",
                    (|r: &RunResult| r.summary.tps) as fn(&RunResult) -> f64,
                ),
                (
                    "p95_vs_connections.svg",
                    "p95 latency vs connections",
                    "ms",
                    |r: &RunResult| r.summary.latency_ms.p95,
                ),
                (
                    "p99_vs_connections.svg",
                    "p99 latency vs connections",
                    "ms",
                    |r: &RunResult| r.summary.latency_ms.p99,
                ),
            ] {
                let svg = line_chart(title, "connections", y, &series_of(&f), true, None)?;
                add_plot(name.to_string(), svg, &mut html, &mut md);
            }
        }
        html.push_str("<h2>Time series</h2>");
        md.push_str("## Time series\n\n");
        for (i, r) in runs.iter().enumerate().take(24) {
            let tps = Series {
                name: "TPS".into(),
                points: r.intervals.iter().map(|iv| (iv.t, iv.tps)).collect(),
            };
            let title = format!("{} {} @ {} clients: TPS", r.label, r.workload, r.threads);
            let svg = line_chart(&title, "seconds", "transactions/s", &[tps], false, None)?;
            add_plot(format!("run{i}_tps.svg"), svg, &mut html, &mut md);
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
            let svg = line_chart(&title, "seconds", "ms", &lat, false, None)?;
            add_plot(format!("run{i}_latency.svg"), svg, &mut html, &mut md);
        }
    }

    for (i, s) in l.steps.iter().enumerate() {
        let _ = write!(
            html,
            "<h2>Stepped load: {} {}</h2>",
            esc(&s.label),
            esc(&s.workload)
        );
        let _ = writeln!(md, "## Stepped load: {} {}\n", s.label, s.workload);
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
            "{knee}. Stopped: {}. Thresholds: cpu <= {}% ({}), iowait <= {}%, success >= {}%, p90 <= {} ms, memory <= {}%.",
            s.stop_reason, th.max_cpu_pct, th.cpu_source, th.max_iowait_pct, th.min_success_pct, th.max_p90_ms, th.max_mem_pct
        );
        let _ = write!(html, "<p>{}</p>", esc(&line));
        let _ = writeln!(md, "{line}\n");
        let t = Table {
            head: [
                "clients",
                "TPS",
                "p90 ms",
                "p99 ms",
                "success %",
                "ignored / failed / reconn",
                "errors by code",
                "cpu %",
                "iowait %",
                "healthy",
                "broken",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows: s
                .steps
                .iter()
                .map(|st| {
                    vec![
                        st.threads.to_string(),
                        f1(st.summary.tps),
                        format!("{:.2}", st.summary.latency_ms.p90),
                        format!("{:.2}", st.summary.latency_ms.p99),
                        format!("{:.3}", st.summary.success_pct),
                        format!(
                            "{} / {} / {}",
                            st.summary.ignored_errors, st.summary.errors, st.summary.reconnects
                        ),
                        error_codes(&st.summary.errors_by_code),
                        f1(st.cpu_pct),
                        f1(st.sys.cpu_iowait_pct),
                        if st.healthy { "yes" } else { "no" }.into(),
                        st.broken.join("; "),
                    ]
                })
                .collect(),
        };
        html.push_str(&t.html());
        md.push_str(&t.md());
        md.push('\n');
        if let Some(c) = &s.confirmation {
            html.push_str("<p>Confirmation run:</p>");
            md.push_str("Confirmation run:\n\n");
            let t = Table {
                head: RUN_HEAD.iter().map(|s| s.to_string()).collect(),
                rows: vec![run_row(c)],
            };
            html.push_str(&t.html());
            md.push_str(&t.md());
            md.push('\n');
        }
        let tps = Series {
            name: "TPS".into(),
            points: s
                .steps
                .iter()
                .map(|st| (st.threads as f64, st.summary.tps))
                .collect(),
        };
        let svg = line_chart(
            "Stepped load: TPS per step",
            "clients",
            "transactions/s",
            &[tps],
            false,
            None,
        )?;
        add_plot(format!("step{i}_tps.svg"), svg, &mut html, &mut md);
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
        )?;
        add_plot(format!("step{i}_p90.svg"), svg, &mut html, &mut md);
    }

    for (i, s) in l.soaks.iter().enumerate() {
        let r = &s.run;
        let v = &s.verdict;
        let _ = write!(
            html,
            "<h2>Soak: {} {} @ {} clients</h2>",
            esc(&r.label),
            esc(&r.workload),
            r.threads
        );
        let _ = writeln!(
            md,
            "## Soak: {} {} @ {} clients\n",
            r.label, r.workload, r.threads
        );
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
        let _ = write!(html, "<p>{}</p>", esc(&line));
        let _ = writeln!(md, "{line}\n");
        let t = Table {
            head: RUN_HEAD.iter().map(|s| s.to_string()).collect(),
            rows: vec![run_row(r)],
        };
        html.push_str(&t.html());
        md.push_str(&t.md());
        md.push('\n');
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
        )?;
        add_plot(format!("soak{i}_tps.svg"), svg, &mut html, &mut md);
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
            )?;
            add_plot(format!("soak{i}_server.svg"), svg, &mut html, &mut md);
        }
    }
    html.push_str("</body></html>\n");
    Ok(Rendered {
        html,
        markdown: md,
        svgs,
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
        )
        .unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("polyline") || svg.contains("<path"));
        assert!(svg.contains("cfg-a"));
        assert!(svg.matches("<circle").count() >= 3);
    }
}
