//! System-side measurements from /proc, for the machine, the server process and the tool itself.
//!
//! A capacity test is only valid when we know what the machine was doing: `/proc/stat` gives the
//! machine's CPU split (user/nice/system/iowait/irq/softirq/idle jiffies) and context switches
//! (`ctxt`); `/proc/PID/stat` gives a process's user and system CPU (utime/stime) and thread count;
//! `/proc/PID/status` its RSS and voluntary/involuntary context switches; `/proc/net/dev` the
//! network bytes (all interfaces, loopback included, since the benchmark runs over loopback).
//!
//! For the load generator itself we also read `/proc/self/task/*/schedstat`, whose second field
//! is the time the thread spent runnable but waiting for a CPU (run-queue delay). A tool whose
//! threads wait for CPU, or whose CPU use approaches its worker threads' capacity, measures its
//! own limits rather than the server's: [`SysDelta::tool_bottleneck`] says so, and the runner
//! prints a loud warning.
//!
//! The server PID is given (`--server-pid`) or found from the listening TCP port: the socket
//! inode of the LISTEN entry in `/proc/net/tcp{,6}` is searched among `/proc/*/fd` links.

use std::fs;
use std::path::Path;

/// Clock ticks per second (USER_HZ).
fn hz() -> f64 {
    // SAFETY: sysconf is thread-safe and has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 {
        v as f64
    } else {
        100.0
    }
}

/// One reading of a process.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProcSample {
    pub pid: u32,
    /// utime in ticks.
    pub utime: u64,
    /// stime in ticks.
    pub stime: u64,
    pub threads: u64,
    pub rss_kb: u64,
    /// voluntary + involuntary context switches of all threads.
    pub ctx_switches: u64,
    /// Sum over threads of run-queue wait (ns), from schedstat (tool only; 0 when unavailable).
    pub runq_wait_ns: u64,
}

/// Machine-wide counters.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MachineSample {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    pub ctxt: u64,
    pub net_bytes: u64,
    pub mem_total_kb: u64,
    pub mem_available_kb: u64,
}

#[derive(Debug, Clone)]
pub struct Sample {
    pub at: std::time::Instant,
    pub machine: MachineSample,
    pub server: Option<ProcSample>,
    pub tool: ProcSample,
}

/// What happened between two samples.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SysDelta {
    pub secs: f64,
    /// Machine CPU in % of all CPUs.
    pub cpu_user_pct: f64,
    pub cpu_sys_pct: f64,
    pub cpu_iowait_pct: f64,
    pub cpu_idle_pct: f64,
    /// Everything that is not idle or iowait.
    pub cpu_busy_pct: f64,
    pub ctx_switches_per_s: f64,
    pub net_bytes_per_s: f64,
    /// Machine memory in use (100 - MemAvailable/MemTotal), %.
    pub mem_used_pct: f64,
    /// Server process CPU in % of one core, user and system.
    pub server_cpu_user_pct: Option<f64>,
    pub server_cpu_sys_pct: Option<f64>,
    pub server_rss_mb: Option<f64>,
    pub server_threads: Option<u64>,
    pub server_ctx_switches_per_s: Option<f64>,
    /// The tool's CPU in % of one core.
    pub tool_cpu_pct: f64,
    /// The tool's run-queue wait, milliseconds per second per runtime worker thread.
    pub tool_runq_ms_per_s: f64,
    pub tool_threads: u64,
    pub cpus: u32,
}

impl SysDelta {
    /// A reason when the load generator itself was the bottleneck.
    pub fn tool_bottleneck(&self, worker_threads: usize) -> Option<String> {
        let cap = 100.0 * worker_threads as f64;
        if self.tool_cpu_pct >= 0.85 * cap {
            return Some(format!(
                "the load generator used {:.0}% CPU of its {} worker thread(s) ({:.0}% max)",
                self.tool_cpu_pct, worker_threads, cap
            ));
        }
        if self.tool_runq_ms_per_s >= 250.0 {
            return Some(format!(
                "the load generator's threads waited {:.0} ms/s for a CPU (scheduling delay)",
                self.tool_runq_ms_per_s
            ));
        }
        None
    }
}

fn read(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p).ok()
}

fn read_machine() -> MachineSample {
    let mut m = MachineSample::default();
    if let Some(s) = read("/proc/stat") {
        for line in s.lines() {
            let mut it = line.split_ascii_whitespace();
            match it.next() {
                Some("cpu") => {
                    let v: Vec<u64> = it.filter_map(|x| x.parse().ok()).collect();
                    let g = |i: usize| v.get(i).copied().unwrap_or(0);
                    m.user = g(0);
                    m.nice = g(1);
                    m.system = g(2);
                    m.idle = g(3);
                    m.iowait = g(4);
                    m.irq = g(5);
                    m.softirq = g(6);
                    m.steal = g(7);
                }
                Some("ctxt") => m.ctxt = it.next().and_then(|x| x.parse().ok()).unwrap_or(0),
                _ => {}
            }
        }
    }
    if let Some(s) = read("/proc/net/dev") {
        for line in s.lines().skip(2) {
            if let Some((_, rest)) = line.split_once(':') {
                let v: Vec<u64> = rest
                    .split_ascii_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                m.net_bytes += v.first().copied().unwrap_or(0) + v.get(8).copied().unwrap_or(0);
            }
        }
    }
    if let Some(s) = read("/proc/meminfo") {
        for line in s.lines() {
            let kb = || {
                line.split_ascii_whitespace()
                    .nth(1)
                    .and_then(|x| x.parse().ok())
                    .unwrap_or(0)
            };
            if line.starts_with("MemTotal:") {
                m.mem_total_kb = kb();
            } else if line.starts_with("MemAvailable:") {
                m.mem_available_kb = kb();
            }
        }
    }
    m
}

/// Reads one process; `with_sched` also sums run-queue waits of its threads.
pub fn read_proc(pid: u32, with_sched: bool) -> Option<ProcSample> {
    let stat = read(format!("/proc/{pid}/stat"))?;
    // fields after the ")" of comm: state is field 3; utime 14, stime 15, num_threads 20
    let after = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after.split_ascii_whitespace().collect();
    let g = |i: usize| {
        f.get(i - 3)
            .and_then(|x| x.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let mut p = ProcSample {
        pid,
        utime: g(14),
        stime: g(15),
        threads: g(20),
        ..Default::default()
    };
    if let Some(s) = read(format!("/proc/{pid}/status")) {
        for line in s.lines() {
            let v = || {
                line.split_ascii_whitespace()
                    .nth(1)
                    .and_then(|x| x.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            if line.starts_with("VmRSS:") {
                p.rss_kb = v();
            }
        }
    }
    // /proc/PID/status counts the main thread's switches only: sum over every live thread
    // (a one-thread-per-connection server does all its switching in the connection threads).
    p.ctx_switches = task_ctx_switches(pid);
    if with_sched {
        if let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) {
            for e in dir.flatten() {
                // Only the runtime's worker threads carry the load; the main thread and
                // blocking helpers sleep most of the time.
                let comm = read(e.path().join("comm")).unwrap_or_default();
                if !(comm.starts_with("tokio-rt-worker") || comm.starts_with("tokio-runtime-w")) {
                    continue;
                }
                if let Some(s) = read(e.path().join("schedstat")) {
                    p.runq_wait_ns += s
                        .split_ascii_whitespace()
                        .nth(1)
                        .and_then(|x| x.parse::<u64>().ok())
                        .unwrap_or(0);
                }
            }
        }
    }
    Some(p)
}

/// Number of online CPUs.
pub fn cpus() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// Samples the machine, the server (if known) and this process.
pub fn sample(server_pid: Option<u32>) -> Sample {
    let me = std::process::id();
    Sample {
        at: std::time::Instant::now(),
        machine: read_machine(),
        server: server_pid.and_then(|p| read_proc(p, false)),
        tool: read_proc(me, true).unwrap_or_default(),
    }
}

/// The difference between two samples; `tool_workers` = runtime worker threads.
pub fn delta(a: &Sample, b: &Sample, tool_workers: usize) -> SysDelta {
    let secs = b.at.duration_since(a.at).as_secs_f64().max(1e-6);
    let (ma, mb) = (&a.machine, &b.machine);
    let d = |x: u64, y: u64| y.saturating_sub(x) as f64;
    let user = d(ma.user + ma.nice, mb.user + mb.nice);
    let sys = d(
        ma.system + ma.irq + ma.softirq,
        mb.system + mb.irq + mb.softirq,
    );
    let iowait = d(ma.iowait, mb.iowait);
    let idle = d(ma.idle, mb.idle);
    let steal = d(ma.steal, mb.steal);
    let total = (user + sys + iowait + idle + steal).max(1.0);
    let hz = hz();
    let mut out = SysDelta {
        secs,
        cpu_user_pct: 100.0 * user / total,
        cpu_sys_pct: 100.0 * sys / total,
        cpu_iowait_pct: 100.0 * iowait / total,
        cpu_idle_pct: 100.0 * idle / total,
        cpu_busy_pct: 100.0 * (user + sys + steal) / total,
        ctx_switches_per_s: d(ma.ctxt, mb.ctxt) / secs,
        net_bytes_per_s: d(ma.net_bytes, mb.net_bytes) / secs,
        mem_used_pct: if mb.mem_total_kb > 0 {
            100.0 - 100.0 * mb.mem_available_kb as f64 / mb.mem_total_kb as f64
        } else {
            0.0
        },
        tool_cpu_pct: 100.0 * d(a.tool.utime + a.tool.stime, b.tool.utime + b.tool.stime)
            / hz
            / secs,
        tool_runq_ms_per_s: d(a.tool.runq_wait_ns, b.tool.runq_wait_ns)
            / 1e6
            / secs
            / tool_workers.max(1) as f64,
        tool_threads: b.tool.threads,
        cpus: cpus(),
        ..Default::default()
    };
    if let (Some(sa), Some(sb)) = (&a.server, &b.server) {
        if sa.pid == sb.pid {
            out.server_cpu_user_pct = Some(100.0 * d(sa.utime, sb.utime) / hz / secs);
            out.server_cpu_sys_pct = Some(100.0 * d(sa.stime, sb.stime) / hz / secs);
            out.server_ctx_switches_per_s = Some(d(sa.ctx_switches, sb.ctx_switches) / secs);
        }
    }
    if let Some(sb) = &b.server {
        out.server_rss_mb = Some(sb.rss_kb as f64 / 1024.0);
        out.server_threads = Some(sb.threads);
    }
    out
}

fn listen_inodes(port: u16) -> Vec<u64> {
    let mut v = Vec::new();
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Some(s) = read(f) else { continue };
        for line in s.lines().skip(1) {
            let cols: Vec<&str> = line.split_ascii_whitespace().collect();
            if cols.len() < 10 || cols[3] != "0A" {
                continue;
            }
            let Some((_, p)) = cols[1].rsplit_once(':') else {
                continue;
            };
            if u16::from_str_radix(p, 16).ok() == Some(port) {
                if let Ok(inode) = cols[9].parse() {
                    v.push(inode);
                }
            }
        }
    }
    v
}

/// Finds the PID of the process listening on TCP `port` (None if not visible).
pub fn find_pid_by_port(port: u16) -> Option<u32> {
    let inodes = listen_inodes(port);
    if inodes.is_empty() {
        return None;
    }
    let targets: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    for e in fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(l) = fs::read_link(fd.path()) {
                if targets.iter().any(|t| l.as_os_str() == t.as_str()) {
                    return Some(pid);
                }
            }
        }
    }
    None
}

/// Voluntary + involuntary context switches of every live thread of `pid`.
fn task_ctx_switches(pid: u32) -> u64 {
    per_task_ctx_switches(pid).iter().map(|(_, n)| n).sum()
}

/// Context switches of each live thread of `pid`, as (tid, voluntary + involuntary).
fn per_task_ctx_switches(pid: u32) -> Vec<(u32, u64)> {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Some(tid) = e.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else {
            continue;
        };
        let Some(s) = read(e.path().join("status")) else {
            continue;
        };
        let mut total = 0;
        for line in s.lines() {
            if line.starts_with("voluntary_ctxt_switches:")
                || line.starts_with("nonvoluntary_ctxt_switches:")
            {
                total += line
                    .split_ascii_whitespace()
                    .nth(1)
                    .and_then(|x| x.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
        out.push((tid, total));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_switches_of_all_threads_are_counted() {
        let pid = std::process::id();
        let before = per_task_ctx_switches(pid);
        // A second thread blocks 50 times: each sleep is a voluntary switch of *that* thread,
        // which /proc/PID/status (main thread only) would not show. Other tests run threads in
        // this process too and may exit meanwhile, taking their counts out of the total, so the
        // check compares thread by thread: the growth of the threads alive at the end.
        let (after, total) = std::thread::spawn(|| {
            for _ in 0..50 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let pid = std::process::id();
            (per_task_ctx_switches(pid), task_ctx_switches(pid))
        })
        .join()
        .unwrap();
        let grown: u64 = after
            .iter()
            .map(|(tid, n)| {
                let was = before.iter().find(|(t, _)| t == tid).map_or(0, |(_, n)| *n);
                n.saturating_sub(was)
            })
            .sum();
        assert!(
            grown >= 50,
            "threads alive at the end switched {grown} times"
        );
        // The total is read while the sleeping thread is still alive, so it includes its 50.
        assert!(total >= 50, "total {total}");
    }

    #[test]
    fn reads_self_and_machine() {
        let a = sample(Some(std::process::id()));
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        let b = sample(Some(std::process::id()));
        let d = delta(&a, &b, 1);
        assert!(b.tool.threads >= 1);
        assert!(b.machine.user + b.machine.system > 0);
        assert!(d.server_rss_mb.unwrap() > 0.0);
        assert!(d.cpu_busy_pct >= 0.0 && d.cpu_busy_pct <= 100.0);
    }

    #[test]
    fn finds_listener_by_port() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(find_pid_by_port(port), Some(std::process::id()));
    }
}
