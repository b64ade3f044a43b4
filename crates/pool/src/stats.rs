//! Snapshot types returned by [`crate::Pool::stats`] and the per-connection state.

use std::time::Duration;

use shoal_wait::WaitKind;

use crate::core::{Counters, Prio};

/// What a connection is doing (for `SHOW PROCESSLIST`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnState {
    /// Registered in epoll, waiting for the client.
    Idle,
    /// Waiting for the client to drain its socket (re-armed for writability).
    WaitWrite,
    /// In a queue.
    Queued(Prio),
    /// A worker is running it.
    Running,
    /// A worker is running it and it reported a wait.
    Waiting(WaitKind),
    /// Being closed.
    Closing,
}

impl ConnState {
    /// A short label ("idle", "queued", "running", "waiting: ROW_LOCK", ...).
    pub fn label(&self) -> String {
        match self {
            ConnState::Idle => "idle".into(),
            ConnState::WaitWrite => "waiting: NET".into(),
            ConnState::Queued(Prio::High) => "queued (high)".into(),
            ConnState::Queued(Prio::Low) => "queued (low)".into(),
            ConnState::Running => "running".into(),
            ConnState::Waiting(k) => format!("waiting: {}", k.name()),
            ConnState::Closing => "closing".into(),
        }
    }
}

/// p50/p95/p99 of a duration distribution, in microseconds (0 when empty).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Percentiles {
    /// Samples recorded.
    pub count: u64,
    /// Median, µs.
    pub p50_us: u64,
    /// 95th percentile, µs.
    pub p95_us: u64,
    /// 99th percentile, µs.
    pub p99_us: u64,
    /// Maximum, µs.
    pub max_us: u64,
}

/// One entry of `THREAD_POOL_QUEUES`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueEntryInfo {
    /// Group.
    pub group_id: usize,
    /// Position in the group (high queue first), from 0.
    pub position: usize,
    /// Priority (`PRIORITY` column: 0 high, 1 low).
    pub priority: Prio,
    /// Connection id.
    pub conn_id: u64,
    /// Time spent in the queue so far.
    pub queueing_time: Duration,
}

/// One group (`THREAD_POOL_GROUPS` and `THREAD_POOL_STATS` columns).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupStats {
    /// Group id.
    pub id: usize,
    /// Connections assigned to the group.
    pub connections: usize,
    /// All threads (active, waiting, standby, listener).
    pub threads: usize,
    /// Threads running and not inside a reported wait.
    pub active: usize,
    /// Idle (standby) threads asleep in the idle list.
    pub standby: usize,
    /// Threads inside a reported wait.
    pub waiting: usize,
    /// Threads lingering on the socket of the connection they just ran (not active).
    pub lingering: usize,
    /// Entries in the high queue.
    pub queue_high: usize,
    /// Entries in the low queue.
    pub queue_low: usize,
    /// A thread is the listener.
    pub has_listener: bool,
    /// The group is flagged stalled.
    pub is_stalled: bool,
    /// Event counters (including waits by kind).
    pub counters: Counters,
    /// Queueing time (enqueue to dequeue).
    pub queue_time: Percentiles,
    /// Execution time of one handler call.
    pub exec_time: Percentiles,
    /// The concurrency cap in force: the adaptive controller's, or `1 + oversubscribe`.
    pub cap: usize,
    /// The adaptive controller's last cap changes, oldest first (kept after it is switched off).
    pub adaptive_history: Vec<Adjustment>,
}

/// One cap change of a group's adaptive controller (`THREAD_POOL_ADAPTIVE_HISTORY`).
#[derive(Debug, Clone, PartialEq)]
pub struct Adjustment {
    /// When it was decided.
    pub at: std::time::SystemTime,
    /// The cap during the measured interval.
    pub old_cap: usize,
    /// The cap from then on.
    pub new_cap: usize,
    /// Why.
    pub reason: crate::adapt::Reason,
    /// What the interval measured.
    pub sample: crate::adapt::Sample,
}

/// A snapshot of the whole pool.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolStats {
    /// Current `size` (groups in use).
    pub size: usize,
    /// `Threadpool_threads`: all pool worker threads.
    pub threads: usize,
    /// `Threadpool_idle_threads` (MariaDB meaning): threads not active, i.e. idle, listening or
    /// inside a reported wait.
    pub idle_threads: usize,
    /// Connections in the pool.
    pub connections: usize,
    /// Groups `0..max(size, any group with threads or connections)`.
    pub groups: Vec<GroupStats>,
    /// Queue entries of every group.
    pub queue_entries: Vec<QueueEntryInfo>,
    /// Reported waits by kind, summed over groups (index = `WaitKind::index`).
    pub waits: [u64; 12],
    /// `Threadpool_sampled_seconds`: stall samples taken, about one a second since the start.
    pub sampled_seconds: u64,
    /// `Threadpool_stall_seconds`: sample intervals in which some group had work queued
    /// throughout while the process used under 10 % of the CPUs it may use (the crate doc's
    /// "Observability").
    pub stall_seconds: u64,
    /// `Threadpool_cpu_affinity_engaged`: CPU affinity pins the workers and steers local
    /// connections now (switched on, in effect, and the clients spread over the CPUs).
    pub affinity_engaged: bool,
    /// `Threadpool_adaptive_regroups`: times adaptive mode changed the number of groups (see
    /// `crate::regroup`); `size` is the number in use now.
    pub regroups: u64,
}

impl PoolStats {
    /// Sum of `active` over groups.
    pub fn active(&self) -> usize {
        self.groups.iter().map(|g| g.active).sum()
    }
    /// Sum of queue lengths over groups.
    pub fn queued(&self) -> usize {
        self.groups.iter().map(|g| g.queue_high + g.queue_low).sum()
    }
    /// Reported waits of one kind.
    pub fn waits_of(&self, kind: WaitKind) -> u64 {
        self.waits[kind.index()]
    }
    /// [`crate::Counters::recovered_events`] summed over groups: must stay zero.
    pub fn recovered_events(&self) -> u64 {
        self.groups
            .iter()
            .map(|g| g.counters.recovered_events)
            .sum()
    }
}
