//! The thread pool's contract: the vocabulary the pool (`shoal-pool`) and the code it schedules
//! (the session layer, `shoal-session`) share, without either depending on the other.
//!
//! After every command the pool asks its handler for a [`PrioHint`]: whether the session is in
//! a transaction or holds locks (the lock-holder guarantee and the high queue) and the
//! session's own `thread_pool_priority` ([`SessionPriority`]), `thread_pool_high_prio_mode`
//! ([`HighPrioMode`]) and `thread_pool_high_prio_tickets`. The session computes the hint from
//! its variables; the server's pool handler passes it through untouched. Before this crate the
//! session defined mirror types (the mode as a string) that the handler converted back after
//! every command.
//!
//! The pool's [`Config`] lives here too, with the one table of its `thread_pool_*` variables
//! ([`vars`]): the session layer declares the variables from it, with `Config::default()` as
//! their defaults, and the server applies them to the pool through it.
//!
//! Why a crate of its own rather than `shoal-wait`, the other leaf both sides use: `shoal-wait`
//! is the contract of *blocking code* (storage, SQL functions) with whatever scheduler runs it,
//! and stays a few lines that every layer can afford; this crate is the contract of the *pool*
//! with the session layer, and it grows with the pool's knobs. Neither depends on anything.

#![warn(missing_docs)]

pub mod vars;

use std::time::Duration;

/// What the session holds after a command; decides priority and the lock-holder guarantee.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrioHint {
    /// The session is inside a transaction (what counts is the handler's call: the server also
    /// counts an implicit one under `autocommit=0`).
    pub in_transaction: bool,
    /// The session holds row, table, metadata or user locks.
    pub holds_locks: bool,
    /// The session's own priority (MariaDB `thread_pool_priority`): `High`/`Low` pick the queue
    /// outright, `Auto` applies the high-priority mode. Never affects `must_run`.
    pub priority: SessionPriority,
    /// The session's own `thread_pool_high_prio_mode` (Percona session scope); `None`: the
    /// pool's global mode.
    pub mode: Option<HighPrioMode>,
    /// The session's own `thread_pool_high_prio_tickets`; `None`: the pool's global value.
    pub tickets: Option<u64>,
}

impl PrioHint {
    /// Whether the session must always get a thread (see the `shoal-pool` crate doc).
    pub fn must_run(self) -> bool {
        self.in_transaction || self.holds_locks
    }
}

/// A session's requested queue (MariaDB `thread_pool_priority`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SessionPriority {
    /// Decided by the high-priority mode and tickets (the default).
    #[default]
    Auto,
    /// Always the high queue.
    High,
    /// Always the low queue (lock holders still get the lock-holder guarantee).
    Low,
}

impl SessionPriority {
    /// Every value, in the order of the variable's allowed values.
    pub const ALL: [SessionPriority; 3] = [
        SessionPriority::High,
        SessionPriority::Low,
        SessionPriority::Auto,
    ];

    /// The variable's spelling (`high`, `low`, `auto`).
    pub fn name(self) -> &'static str {
        match self {
            SessionPriority::High => "high",
            SessionPriority::Low => "low",
            SessionPriority::Auto => "auto",
        }
    }

    /// The value spelled `s` (any case); `None` for anything else.
    pub fn from_name(s: &str) -> Option<SessionPriority> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
    }
}

/// `thread_pool_high_prio_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HighPrioMode {
    /// High while in a transaction or holding locks, and tickets remain.
    #[default]
    Transactions,
    /// Every statement is high.
    Statements,
    /// Nothing is high (except login, KILL and timeouts).
    None,
}

impl HighPrioMode {
    /// Every value, in the order of the variable's allowed values.
    pub const ALL: [HighPrioMode; 3] = [
        HighPrioMode::Transactions,
        HighPrioMode::Statements,
        HighPrioMode::None,
    ];

    /// The variable's spelling (`transactions`, `statements`, `none`).
    pub fn name(self) -> &'static str {
        match self {
            HighPrioMode::Transactions => "transactions",
            HighPrioMode::Statements => "statements",
            HighPrioMode::None => "none",
        }
    }

    /// The value spelled `s` (any case); `None` for anything else.
    pub fn from_name(s: &str) -> Option<HighPrioMode> {
        Self::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
    }
}

/// Pool configuration (`shoal_pool::Pool::start`). Everything but `max_size`, `thread_name` and
/// `stack_size` can be changed live with the pool's setters; the `thread_pool_*` variables
/// map onto it through [`vars::VARIABLES`], and their defaults are this type's [`Default`].
#[derive(Debug, Clone)]
pub struct Config {
    /// `thread_pool_size`: number of active groups.
    pub size: usize,
    /// Groups allocated up front; the upper bound for live resizes (default max(size, 128)).
    pub max_size: usize,
    /// `thread_pool_oversubscribe`: cap on active workers per group is 1 + this (the starting
    /// cap in adaptive mode).
    pub oversubscribe: usize,
    /// `thread_pool_adaptive`: each group's cap is set by its controller (see `shoal_pool::adapt`).
    pub adaptive: bool,
    /// `thread_pool_adaptive_groups`: in adaptive mode the pool also chooses how many groups
    /// connections are placed in, from `size / 2` (rounded up) to `4 x size` (see
    /// `shoal_pool::regroup`); off, adaptive mode runs `size` groups.
    pub adaptive_groups: bool,
    /// `thread_pool_stall_limit`: timer period.
    pub stall_limit: Duration,
    /// `thread_pool_max_threads`.
    pub max_threads: usize,
    /// `thread_pool_idle_timeout`: an idle worker exits after this.
    pub idle_timeout: Duration,
    /// `thread_pool_prio_kickup_timer`.
    pub prio_kickup_timer: Duration,
    /// `thread_pool_high_prio_mode`.
    pub high_prio_mode: HighPrioMode,
    /// `thread_pool_high_prio_tickets`.
    pub high_prio_tickets: u64,
    /// `thread_pool_dedicated_listener`.
    pub dedicated_listener: bool,
    /// `thread_pool_cpu_affinity`: each group's workers run on one CPU and each local client's
    /// connection moves to the group of its client's CPU (see `shoal_pool`'s `affinity`).
    pub cpu_affinity: bool,
    /// Record queueing/execution time histograms.
    pub histograms: bool,
    /// Work stealing between groups (see the crate doc); off by default (classic behaviour).
    pub work_stealing: bool,
    /// How long a worker may linger on the connection it just ran, while nothing is queued in
    /// its group (see the crate doc, "Lingering"); zero turns it off.
    pub linger: Duration,
    /// Most threads of one group that may linger at once (`thread_pool_linger_threads`); at
    /// least 1. Lingering needs an empty queue, so under load nothing lingers whatever this
    /// says; it bounds the extra threads lingering may keep at moderate concurrency.
    pub linger_threads: usize,
    /// Age balancing between busy groups (`thread_pool_balance_usec`; zero turns it off): a
    /// worker about to take its own group's next entry takes another group's instead when that
    /// one has been queued longer by more than this (see the crate doc, "Balancing").
    pub balance: Duration,
    /// Name prefix of pool threads.
    pub thread_name: String,
    /// Stack size of worker threads in bytes (`thread_stack`); `None`: Rust's default (2 MiB
    /// unless `RUST_MIN_STACK` says otherwise). Fixed at start.
    pub stack_size: Option<usize>,
}

impl Default for Config {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        Config {
            size: cpus,
            max_size: cpus.max(128),
            // MariaDB's and Percona's default. Every blocking point here reports its wait
            // (which frees the slot), so the slack is for what nothing reports (page faults,
            // preemption, RocksDB's own mutexes). From session 9 to 33 the default was 2 (at
            // 2048 I/O-bound clients 3 lengthened p99 by 10 %); the adaptive grids since then
            // chose a cap of 4 at every I/O-bound point, and adaptive mode, whose floor is
            // `1 +` this (at most 4), held its throughput target at 11 of 12 points with 3
            // against 9 of 12 with 2 (both of its targets: 7 against 6), by the median of
            // paired rounds (docs/perf-log/2026-12-05-session-34-floor-four.md).
            oversubscribe: 3,
            adaptive: true,
            adaptive_groups: true,
            stall_limit: Duration::from_millis(500),
            max_threads: 65536,
            idle_timeout: Duration::from_secs(60),
            prio_kickup_timer: Duration::from_millis(1000),
            high_prio_mode: HighPrioMode::default(),
            high_prio_tickets: u64::from(u32::MAX),
            dedicated_listener: false,
            // Measured: 1.4-1.5x the point-select TPS at 32-128 local clients, 1.2x read-write
            // at 8 and 64 (docs/perf-log/2026-12-04-session-29-cpu-affinity.md).
            cpu_affinity: true,
            histograms: true,
            work_stealing: false,
            linger: Duration::from_micros(2000),
            balance: Duration::from_micros(2000),
            linger_threads: 16,
            thread_name: "shoal-pool".into(),
            stack_size: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in SessionPriority::ALL {
            assert_eq!(SessionPriority::from_name(p.name()), Some(p));
            assert_eq!(
                SessionPriority::from_name(&p.name().to_uppercase()),
                Some(p)
            );
        }
        for m in HighPrioMode::ALL {
            assert_eq!(HighPrioMode::from_name(m.name()), Some(m));
        }
        assert_eq!(SessionPriority::from_name("bogus"), None);
        assert_eq!(HighPrioMode::from_name(""), None);
    }
}
