//! Where the CPU went between two timer ticks, for the adaptive controller.
//!
//! The controller asks one question of the CPUs: could more active workers run? Two readings
//! answer it, and either one saying "yes" is enough:
//!
//! * **The machine's idle share**: `/proc/stat`'s aggregate `cpu` line (the jiffies every CPU
//!   spent in each state since boot), the share of the interval spent idle or in iowait (a CPU
//!   waiting for the disk is free to run a worker). Steal time (taken by the hypervisor)
//!   counts as busy: the guest cannot use it. An idle CPU is one a raised cap could use.
//! * **The server's own CPU share**: `getrusage(RUSAGE_SELF)` over the interval, as a share of
//!   the CPUs the process may use. On a machine that other processes keep busy the idle share
//!   is zero, yet a server whose workers are blocked (behind waits it reports or not) uses
//!   little CPU itself, and more active workers cost the neighbours little: below
//!   [`PROCESS_QUIET`] the server counts as "not using the CPU" as well.
//!
//! One read of a small procfs file per tick (every `thread_pool_stall_limit`, 500 ms by
//! default) by the timer thread. Where the file cannot be read
//! or parsed (not Linux, a locked-down procfs), the share is `None` and the controller holds:
//! adaptive mode then behaves like the static setting.

use std::time::{Duration, Instant};

/// A server using less than this share of the CPUs it may use counts as leaving them idle.
pub(super) const PROCESS_QUIET: f64 = 0.3;

/// Reads where the CPU went between calls.
pub(super) struct CpuMeter {
    /// `(idle + iowait, total)` jiffies at the previous reading.
    last: Option<(u64, u64)>,
    /// When the previous reading was taken, and the process's CPU time then.
    at: Instant,
    cpu: Duration,
}

impl CpuMeter {
    pub(super) fn new() -> CpuMeter {
        CpuMeter {
            last: read(),
            at: Instant::now(),
            cpu: super::sampler::process_cpu(),
        }
    }

    /// The share (0..=1) of the interval since the previous call in which the CPUs were free
    /// for more workers: the machine's idle share, raised to 1 when the server itself used
    /// less than [`PROCESS_QUIET`] of its CPUs. `None` when `/proc/stat` is unreadable, on the
    /// first readable call, or when no jiffy passed.
    pub(super) fn free_share(&mut self) -> Option<f64> {
        let now = read();
        let machine = match (self.last, now) {
            (Some(a), Some(b)) => share(a, b),
            _ => None,
        };
        self.last = now;
        let (at, cpu) = (Instant::now(), super::sampler::process_cpu());
        let wall = at.saturating_duration_since(self.at).as_secs_f64();
        let used = cpu.saturating_sub(self.cpu).as_secs_f64();
        (self.at, self.cpu) = (at, cpu);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let quiet = wall > 0.0 && used < PROCESS_QUIET * wall * cpus;
        machine.map(|m| if quiet { 1.0 } else { m })
    }
}

/// The idle share between two readings.
fn share((idle0, total0): (u64, u64), (idle1, total1): (u64, u64)) -> Option<f64> {
    let total = total1.checked_sub(total0)?;
    if total == 0 {
        return None;
    }
    let idle = idle1.saturating_sub(idle0).min(total);
    Some(idle as f64 / total as f64)
}

fn read() -> Option<(u64, u64)> {
    parse(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// `(idle + iowait, total)` from the aggregate `cpu` line of `/proc/stat`: user nice system
/// idle iowait irq softirq steal (guest time is already inside user and nice).
fn parse(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if v.len() < 5 {
        return None;
    }
    Some((v[3] + v[4], v.iter().sum()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_aggregate_line_and_counts_iowait_as_idle() {
        let stat = "cpu  100 0 50 800 40 5 5 0 0 0\ncpu0 50 0 25 400 20 2 3 0 0 0\nintr 1\n";
        assert_eq!(parse(stat), Some((840, 1000)));
        // Old kernels print only four fields: too few to tell iowait apart.
        assert_eq!(parse("cpu  1 2 3 4\n"), None);
        assert_eq!(parse("intr 5\n"), None);
        assert_eq!(parse("cpu  1 x 3 4 5\n"), None);
    }

    #[test]
    fn the_share_is_over_the_interval() {
        assert_eq!(share((840, 1000), (900, 1200)), Some(0.3));
        assert_eq!(share((840, 1000), (840, 1000)), None, "no time passed");
        assert_eq!(share((840, 1000), (800, 900)), None, "counters went back");
    }

    #[test]
    fn this_machine_is_readable() {
        // Linux CI: the file exists, and the share between two reads is a fraction.
        let mut m = CpuMeter::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            std::thread::sleep(Duration::from_millis(20));
            if let Some(s) = m.free_share() {
                assert!((0.0..=1.0).contains(&s), "{s}");
                break;
            }
            assert!(Instant::now() < deadline, "no jiffy passed in 30 s");
        }
    }
}
