//! How many groups an adaptive pool runs (`thread_pool_adaptive_groups`): a pure state
//! machine the timer feeds once per tick with what the whole pool did over the interval
//! ([`Observation`]); its answer is the number of groups connections are placed in, between
//! [`merged`] and [`spread`] of `thread_pool_size`.
//!
//! # Why the number of groups, and not only the caps
//!
//! Each group's controller (`crate::adapt`) moves its group's concurrency cap. The whole
//! static grid (`thread_pool_size` 1, 2, 4, 8 x `thread_pool_oversubscribe` 1, 2, 3, 5, 10) showed
//! what caps alone cannot reach: at six of twelve points a static setting beat adaptive by 5-9 %
//! in paired rounds, and the winners differed from adaptive's two groups in their *number* of
//! groups (docs/perf-log/2026-12-07-session-52-the-base.md):
//!
//! * **Few connections: many groups.** Eight groups won at 8 cached point-select clients and 32
//!   read-write clients. With a connection or a few per group, a group's listener runs the
//!   event it polls itself, the cap never queues anybody, and lingering keeps one thread per busy
//!   connection: the schedule of one thread per connection, which is the best one while clients
//!   are fewer than the pool's slots. Two groups at their CPU-bound home (2 per CPU) queue the
//!   third busy connection of a group, and (our reading) each queued command costs a hand-off.
//! * **A read-bound load: many groups.** Uniform point selects on data 8x the buffer pool spend
//!   over 90 % of their time in disk reads; there eight groups (each with the read-bound floor of
//!   its CPU) ran as fast as the best static, two groups 0.91x of it, and one group 0.78x (one
//!   listener polls every connection).
//! * **Many connections, not read-bound: one group for two CPUs.** At 512 and 2048 clients, CPU-
//!   or lock-bound, a single group with a cap of 6 won three points (cached point select and
//!   I/O-bound read-write 512 and 2048). One queue ages every connection's commands together and
//!   shares every slot; two queues at the same total cap leave one group's commands waiting
//!   while the other's run. A merged group's floor and home are 3 per CPU it covers
//!   (`adapt::MERGED_PER_CPU`): the winning cap of 6 on two CPUs.
//!
//! Adaptive mode with `thread_pool_size` fixed at 8 matched the eight-group winners (1.03-1.04x)
//! and lost to the one-group winners (0.82x at I/O-bound read-write 512); fixed at 1 it was the
//! other way round (0.96-1.02x against the single groups, 0.78x at I/O-bound point select 512;
//! docs/perf-log/2026-12-07-session-53-groups.md).
//! No fixed number holds every point; the connections and the read share say which one a load
//! is, and both are cheap and stable to measure, unlike a throughput gradient over the number
//! of groups (a regroup moves connections, and interval noise of ±30 % hides a 5-10 % step).
//!
//! # The rule
//!
//! The pool's **read share** (time in disk reads over execution time, every group summed) and
//! its **other waits** (row locks, commits, sleeps) are averaged over intervals as the
//! controllers average theirs. The load is **read-bound** from an average read share of
//! [`READ_BOUND`] with other waits under [`OTHER_LOW`], until the read share falls under
//! [`READ_LEAVE`] or the other waits reach [`OTHER_HIGH`] (hysteresis, as the controllers'
//! verdict). The connections are **few** up to [`FEW_PER_CPU`] per CPU and **many** above
//! [`MANY_PER_CPU`] per CPU; in between, the previous answer stands.
//!
//! * read-bound with more than [`READ_SPREAD_MAX_PER_CPU`] connections per CPU:
//!   `thread_pool_size` groups. At 2048 uniform point-select clients on two CPUs eight groups
//!   ran as fast as two but with a p99 1.18x longer: every queue holds hundreds of
//!   connections, and the more queues, the more unevenly they age;
//! * read-bound, or few connections: [`spread`] groups (`4 x thread_pool_size`);
//! * many connections, not read-bound: [`merged`] groups (`thread_pool_size / 2`, rounded up);
//! * otherwise: no change.
//!
//! Only a **loaded** interval counts: at least [`MIN_STATEMENTS`] statements (whether or not
//! anything queued: at 8 clients nothing does, and eight groups still ran 4-5 % faster than
//! two). An idle or lightly used pool keeps the groups it has (nothing to gain, and
//! connections would move for nothing). A new answer is taken after
//! [`AGREE`] loaded intervals in a row agree on it, so a burst of connections or a cache
//! warming up does not move every connection twice.
//!
//! The thresholds were measured on two CPUs, where `merged` is one group and `spread` eight;
//! on more CPUs they are a guess scaled per CPU, and `thread_pool_adaptive_groups = OFF` keeps
//! `thread_pool_size` groups.

/// Connections per CPU up to which they count as few: 48 on two CPUs, so that 32 clients
/// with the sessions that watch them (a status poller, an operator's client) still count as
/// few. At 16 per CPU the two sessions of the benchmark's sampler tipped 32 cached
/// read-write clients (34 connections) out of the spread, and that point stayed on
/// `thread_pool_size` groups at 0.95x the eight-group static (p99 1.14x).
pub const FEW_PER_CPU: usize = 24;
/// Connections per CPU above which they count as many.
pub const MANY_PER_CPU: usize = 48;
/// Connections per CPU above which a read-bound load keeps `thread_pool_size` groups instead
/// of spreading (2048 clients on two CPUs; 512 still spread).
pub const READ_SPREAD_MAX_PER_CPU: usize = 512;
/// Average read share from which the pool counts as read-bound.
pub const READ_BOUND: f64 = 0.5;
/// Average read share under which a read-bound pool stops counting as read-bound.
pub const READ_LEAVE: f64 = 0.3;
/// Average share of other waits under which a pool may count as read-bound.
pub const OTHER_LOW: f64 = 0.03;
/// Average share of other waits from which a pool stops counting as read-bound.
pub const OTHER_HIGH: f64 = 0.06;
/// Statements an interval needs to count as loaded.
pub const MIN_STATEMENTS: u64 = 200;
/// Loaded intervals in a row that must agree on a new number of groups.
pub const AGREE: u32 = 4;
/// Weight of the newest interval in the averaged shares.
const ALPHA: f64 = 0.3;

/// Groups for few connections or a read-bound load: four per `thread_pool_size`, at most `max`.
pub fn spread(base: usize, max: usize) -> usize {
    (base.max(1) * 4).min(max).max(1)
}

/// Groups for many connections that are not read-bound: half of `thread_pool_size`, rounded up.
pub fn merged(base: usize) -> usize {
    base.max(1).div_ceil(2)
}

/// What the whole pool did over one timer interval.
#[derive(Debug, Clone, Copy, Default)]
pub struct Observation {
    /// Connections in the pool.
    pub connections: usize,
    /// CPUs the pool runs on.
    pub cpus: usize,
    /// Statements completed over the interval, every group.
    pub completed: u64,
    /// Execution time of those statements, µs.
    pub exec_us: u64,
    /// Of it, time in disk reads, µs.
    pub read_us: u64,
    /// Time in every reported wait, µs (reads included).
    pub wait_us: u64,
}

/// The chooser's state (one per pool, kept by the timer).
#[derive(Debug, Clone, Default)]
pub struct Regroup {
    /// Averaged read share, `None` before the first loaded interval.
    read_avg: Option<f64>,
    /// Averaged share of the other waits.
    other_avg: f64,
    /// The read-bound verdict.
    read_bound: bool,
    /// The answer loaded intervals are agreeing on, and how many in a row.
    pending: Option<(usize, u32)>,
}

impl Regroup {
    /// A fresh chooser (adaptive mode switched on, or `thread_pool_size` set).
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the load counts as read-bound.
    pub fn read_bound(&self) -> bool {
        self.read_bound
    }

    /// One interval: returns the number of groups to run, given the current one, the
    /// configured `thread_pool_size` (`base`) and the groups allocated (`max`).
    pub fn step(&mut self, o: &Observation, current: usize, base: usize, max: usize) -> usize {
        if o.completed < MIN_STATEMENTS || o.exec_us == 0 {
            self.pending = None;
            return current;
        }
        let exec = o.exec_us as f64;
        let read = (o.read_us as f64 / exec).min(1.0);
        let other = (o.wait_us.saturating_sub(o.read_us) as f64 / exec).min(1.0);
        let avg = |old: f64, new: f64| old + ALPHA * (new - old);
        self.read_avg = Some(self.read_avg.map_or(read, |r| avg(r, read)));
        self.other_avg = avg(self.other_avg, other);
        let r = self.read_avg.unwrap_or(0.0);
        if self.read_bound {
            if r < READ_LEAVE || self.other_avg >= OTHER_HIGH {
                self.read_bound = false;
            }
        } else if r >= READ_BOUND && self.other_avg < OTHER_LOW {
            self.read_bound = true;
        }
        let cpus = o.cpus.max(1);
        let want = if self.read_bound && o.connections > READ_SPREAD_MAX_PER_CPU * cpus {
            base.clamp(1, max)
        } else if self.read_bound || o.connections <= FEW_PER_CPU * cpus {
            spread(base, max)
        } else if o.connections > MANY_PER_CPU * cpus {
            merged(base)
        } else {
            current
        };
        if want == current {
            self.pending = None;
            return current;
        }
        let n = match self.pending {
            Some((w, n)) if w == want => n + 1,
            _ => 1,
        };
        if n >= AGREE {
            self.pending = None;
            want
        } else {
            self.pending = Some((want, n));
            current
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(connections: usize, read: f64, other: f64) -> Observation {
        let exec_us = 1_000_000;
        let read_us = (exec_us as f64 * read) as u64;
        Observation {
            connections,
            cpus: 2,
            completed: 10_000,
            exec_us,
            read_us,
            wait_us: read_us + (exec_us as f64 * other) as u64,
        }
    }

    /// Runs `o` for `n` intervals from `current`, returning the groups after each.
    fn run(r: &mut Regroup, o: Observation, mut current: usize, n: usize) -> Vec<usize> {
        (0..n)
            .map(|_| {
                current = r.step(&o, current, 2, 128);
                current
            })
            .collect()
    }

    /// Where a fresh chooser stands after `n` intervals of `o` from `current` groups.
    fn settle(o: Observation, current: usize, n: usize) -> usize {
        *run(&mut Regroup::new(), o, current, n).last().unwrap()
    }

    #[test]
    fn few_connections_spread_after_the_intervals_agree() {
        let mut r = Regroup::new();
        let g = run(&mut r, loaded(8, 0.0, 0.0), 2, 5);
        assert_eq!(g, vec![2, 2, 2, 8, 8]);
    }

    #[test]
    fn many_cpu_bound_connections_merge_and_many_reading_ones_spread() {
        assert_eq!(settle(loaded(512, 0.0, 0.0), 2, 4), 1);
        // Read-write on data 8x the cache: reads most of the time, but also waits on locks
        // and commits: not read-bound, stays merged.
        assert_eq!(settle(loaded(512, 0.8, 0.1), 2, 8), 1);
        // Uniform point selects on the same data: read-bound, spread.
        assert_eq!(settle(loaded(512, 0.9, 0.0), 1, 8), 8);
        // At 2048 of them, `thread_pool_size` groups.
        assert_eq!(settle(loaded(2048, 0.9, 0.0), 8, 8), 2);
    }

    #[test]
    fn thirty_two_clients_and_their_watchers_count_as_few() {
        assert_eq!(settle(loaded(34, 0.0, 0.3), 2, 4), 8);
        assert_eq!(settle(loaded(49, 0.0, 0.3), 2, 8), 2);
    }

    #[test]
    fn between_few_and_many_the_answer_stands() {
        for start in [1, 8] {
            let mut r = Regroup::new();
            let g = run(&mut r, loaded(64, 0.0, 0.0), start, 10);
            assert!(g.iter().all(|&n| n == start), "{start}: {g:?}");
        }
    }

    #[test]
    fn an_idle_pool_keeps_its_groups() {
        let mut r = Regroup::new();
        let mut o = loaded(8, 0.0, 0.0);
        o.completed = MIN_STATEMENTS - 1;
        assert!(run(&mut r, o, 2, 10).iter().all(|&n| n == 2));
    }

    #[test]
    fn an_interrupted_agreement_starts_over() {
        let mut r = Regroup::new();
        let few = loaded(8, 0.0, 0.0);
        let mut quiet = few;
        quiet.completed = 0;
        let mut current = 2;
        for o in [few, few, few, quiet, few, few, few] {
            current = r.step(&o, current, 2, 128);
        }
        assert_eq!(current, 2, "three, a gap, three: never four in a row");
        assert_eq!(r.step(&few, current, 2, 128), 8);
    }

    #[test]
    fn the_read_bound_verdict_has_hysteresis() {
        let mut r = Regroup::new();
        run(&mut r, loaded(512, 0.9, 0.0), 2, 8);
        assert!(r.read_bound());
        // A read share between the two thresholds keeps the verdict.
        run(&mut r, loaded(512, 0.4, 0.0), 8, 20);
        assert!(r.read_bound());
        run(&mut r, loaded(512, 0.1, 0.0), 8, 20);
        assert!(!r.read_bound());
        // Other waits end it too.
        let mut r = Regroup::new();
        run(&mut r, loaded(512, 0.9, 0.0), 2, 8);
        run(&mut r, loaded(512, 0.9, 0.2), 8, 20);
        assert!(!r.read_bound());
    }

    #[test]
    fn spread_and_merged_respect_their_bounds() {
        assert_eq!(spread(2, 128), 8);
        assert_eq!(spread(64, 128), 128);
        assert_eq!(spread(0, 128), 4);
        assert_eq!(merged(1), 1);
        assert_eq!(merged(2), 1);
        assert_eq!(merged(5), 3);
    }
}
