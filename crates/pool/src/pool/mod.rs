//! The pool proper: groups, workers, listener, connections (see the crate doc for the
//! design; this module performs the side effects the decisions in [`crate::core`] ask for).
//!
//! This file holds the state every pool thread shares (`Shared`, its groups and connection
//! registry) and the operations every role uses: waking or creating a worker, providing a
//! listener, adding, killing and closing a connection, snapshots. Each role adds its own
//! methods to `Shared` in its own file: the public handle ([`Pool`]: start, settings, shutdown)
//! in [`handle`], a worker thread's loop in [`worker`], the group's epoll (listener and socket
//! arming) in [`listener`], the timer thread in [`timer`] (and its stall sampler in
//! [`sampler`]), balancing between groups (work
//! stealing, age balancing) in [`balance`]. `model` (tests only) holds loom models of the
//! worker loop against `add`, a reported wait and shutdown (see `crate::loom`).
//!
//! ## Lock order
//!
//! `connection meta` → `registry shard` → `group` → `handles`. A group lock is never held while
//! taking a connection's meta lock: the listener claims connections *before* locking its group.
//! A connection's `conn` mutex (the handler object) is held only by the worker running it, and by
//! shutdown after every worker has been joined.

use std::os::fd::{BorrowedFd, RawFd};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use rustc_hash::FxHashMap;
use shoal_wait::{WaitKind, WaitObserver};

use crate::adapt::{Controller, Reason as AdaptReason};
use crate::core::{
    next_priority, AfterPoll, CreateCtx, Decision, GroupCore, KillStep, Next, Phase, Prio, Reason,
    Settle,
};
use crate::loom::thread::{self, JoinHandle};
use crate::loom::{
    Arc, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering, StdArc,
};
use crate::regroup::{self, Regroup};
use crate::stats::{Adjustment, ConnState, GroupStats, Percentiles, PoolStats, QueueEntryInfo};
use crate::{CloseReason, Config, Handler, HighPrioMode, Knob, Outcome, PoolError, PrioHint};
use epoll::{Events, Interest, Mode, Poller};
use sampler::Sampler;

mod affinity;
pub use affinity::{allowed_cpus, set_thread_cpus};
mod balance;
mod cpu;
mod epoll;
mod handle;
mod listener;
#[cfg(test)]
mod model;
mod sampler;
mod timer;
mod worker;

pub use handle::Pool;
pub use worker::poll_readable;

const SHARDS: usize = 16;
const MAX_EVENTS: usize = 1024;
const BLOCKED_LOG_INTERVAL: Duration = Duration::from_secs(10);
/// The safety net recovers a readable idle connection no sooner than this after it first
/// found it so (see [`Shared::sweep`]): a genuinely lost report stays lost, so waiting costs
/// only the recovery's latency, and the margin covers a listener descheduled on a loaded
/// machine.
const RECOVER_AFTER: Duration = Duration::from_secs(1);
/// The highest floor of the adaptive cap: `1 +` MariaDB's default `thread_pool_oversubscribe`
/// (3). The floor is `min(1 + oversubscribe, ADAPT_FLOOR)`: adaptive mode brings a higher
/// static cap down on a CPU-bound load, but never goes below the default concurrency, where
/// the static settings differed by less than their noise while every probe cost throughput
/// (docs/perf-log/2026-12-03-session-20-adaptive-confirm.md).
pub const ADAPT_FLOOR: usize = 4;
/// Decisions kept per group in the adaptive controller's history.
pub const ADAPT_HISTORY: usize = 32;
/// Shortest interval the adaptive controller judges (a tick sooner than this, e.g. after a
/// stall-limit change or with a tiny stall limit, keeps accumulating).
const ADAPT_MIN_INTERVAL: Duration = Duration::from_millis(100);
/// How many times `wake_thief` spins on a busy group lock before leaving that group to the
/// timer thread. It holds the victim's lock meanwhile, so it must never yield: on a loaded
/// machine every `yield_now` gave the core away for a time slice, the victim's own listener and
/// workers queued behind its lock, and work stealing cut the throughput of a connection-churn
/// load to a tenth (169-1,177 sessions in 4 s against about 10,000 without stealing).
///
/// Under loom two spins: each failed `try_lock` is a scheduling point loom explores, and two
/// already reach the path that leaves the group to the timer (`thief_pending`).
const THIEF_LOCK_SPINS: u32 = if cfg!(loom) { 2 } else { 50 };

/// What a queued entry asks the worker to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Login,
    Event,
    Kill,
    Timeout,
}

struct ConnMeta {
    phase: Phase,
    /// Queue the connection goes to on its next event.
    prio: Prio,
    /// The next event may bypass the concurrency cap (transaction open / locks held).
    must_run: bool,
    /// It holds row locks: its next event goes ahead of the other high entries.
    holder: bool,
    /// The wait the running worker reported, if any.
    wait: Option<WaitKind>,
    /// Armed for writability rather than readability.
    writable: bool,
    /// The group that counts this connection (and whose epoll has it, when `registered`).
    group: usize,
    /// The fd is in `group`'s epoll.
    registered: bool,
    /// Registered edge-triggered for readability: armed for good, so the connection goes back
    /// to `Idle` after a command with no `epoll_ctl` (see the crate doc, "Edge-triggered sockets").
    /// `false`: one-shot, disarmed from its first report until the next `epoll_ctl`.
    edge: bool,
    /// An edge report arrived while the connection was queued or running ([`Phase::report`]):
    /// it is queued again after its command instead of going idle ([`Phase::settle`]).
    pending: bool,
    /// Idle deadline (`wait_timeout`).
    deadline: Option<Instant>,
    /// `kill` was called.
    killed: bool,
    /// High-priority tickets left (Percona semantics).
    tickets: u64,
    /// Its worker lingers on the socket (shown as idle; see [`crate::core::GroupCore::linger_begin`]).
    lingering: bool,
    /// A TCP connection from this host: CPU affinity moves it to its client's CPU's group
    /// (see [`affinity`]).
    local: bool,
    /// Commands re-armed since its client's CPU was last asked (`SO_INCOMING_CPU` is read on
    /// every [`affinity::PROBE_EVERY`]-th; see [`Shared::home_group`]).
    probes: u8,
    /// When its previous command finished (not its login): a connection whose next command
    /// starts soon after is busy, and only a busy connection is worth a linger.
    last_end: Option<Instant>,
    /// The affinity judgement's round ([`Shared::judge_round`]) in which this connection last
    /// ran a command: it counts once per round in its group's `busy`.
    busy_round: u64,
    /// The safety net found the connection idle with a readable socket: the group's poll
    /// count and the time then. Cleared when the connection runs (see [`Shared::sweep`]).
    suspect: Option<(u64, Instant)>,
    /// [`Pool::lose_next_report`]: the next report is dropped (fault injection for tests).
    lose_report: bool,
    /// A readiness report collected for this socket said its peer had shut down its side, hung
    /// up or left an error ([`Events::reports`]). Never cleared: a FIN stays. Until then an
    /// edge-triggered settle needs no `poll(2)` for a hang-up (crate doc, "Edge-triggered
    /// sockets").
    hup_reported: bool,
}

struct ConnEntry<C> {
    id: u64,
    fd: RawFd,
    meta: Mutex<ConnMeta>,
    /// The handler's object; `None` once closed.
    conn: Mutex<Option<C>>,
}

type Entry<C> = (Arc<ConnEntry<C>>, Action);

/// One shard of the connection registry (id → connection). Looked up for every epoll event:
/// Fx hashing of the integer id, not SipHash (ids come from the server, not from clients).
type Shard<C> = Mutex<FxHashMap<u64, Arc<ConnEntry<C>>>>;

/// An idle worker's wake-up channel.
struct WorkerSlot {
    cv: Condvar,
    /// Set under the group lock by the waker, which already moved the worker out of the idle
    /// list: [`WAKE_ACTIVE`] (counted active), [`WAKE_STEAL`] (counted active, steal first) or
    /// [`WAKE_LISTEN`] (made the listener).
    wake: AtomicU8,
    /// Age balancing's turn: which other group this worker looks at next (only its own
    /// thread touches it).
    balance_turn: AtomicUsize,
}

impl WorkerSlot {
    fn new() -> Self {
        WorkerSlot {
            cv: Condvar::new(),
            wake: AtomicU8::new(WAKE_NONE),
            balance_turn: AtomicUsize::new(0),
        }
    }
}

const WAKE_NONE: u8 = 0;
const WAKE_ACTIVE: u8 = 1;
const WAKE_LISTEN: u8 = 2;
/// Like [`WAKE_ACTIVE`], woken by another group's `wake_thief`: steal before anything else
/// (before taking the listener role of its own group, which would lose the steal).
const WAKE_STEAL: u8 = 3;

struct GroupInner<C> {
    core: GroupCore<Entry<C>, Arc<WorkerSlot>>,
    queue_hist: LazyHist,
    exec_hist: LazyHist,
    /// The adaptive controller (`None` while `thread_pool_adaptive` is off) and when its
    /// current measuring interval began.
    adapt: Option<(Controller, Instant)>,
    /// The controller's last [`ADAPT_HISTORY`] cap changes, oldest first.
    history: std::collections::VecDeque<Adjustment>,
}

struct Group<C> {
    inner: Mutex<GroupInner<C>>,
    /// The group's epoll, created on first use.
    poller: OnceLock<Poller>,
    /// When the group's next entry was queued, in µs since the pool's `epoch`, plus one; zero
    /// when nothing is queued. Written under the group lock after the worker and listener paths
    /// change the queue, read without it by other groups' workers for age balancing: a stale
    /// value costs at most a futile lock of this group (the thief re-checks under the lock).
    next_since: AtomicU64,
    /// The same for the low-priority queue's next entry (see `Shared::balance_target`).
    low_since: AtomicU64,
    /// [`crate::Counters::arms`], [`crate::Counters::edge_idles`] and
    /// [`crate::Counters::edge_requeues`] of this group: counted outside the group lock, which
    /// the edge-triggered path does not take.
    arms: AtomicU64,
    edge_idles: AtomicU64,
    edge_requeues: AtomicU64,
    /// Polls of the group's epoll that returned and whose events were claimed (the listener's
    /// and the timer's rescue polls): the safety net's evidence that epoll had its chance to
    /// report a connection (see [`Shared::sweep`]).
    polls: AtomicU64,
    /// [`crate::Counters::steering_refused`] of this group (counted at the re-arm, outside the
    /// group lock).
    steering_refused: AtomicU64,
    /// The group's connections (`GroupCore::connections`), mirrored after every change under
    /// the group lock, for CPU affinity's steering to read without it
    /// (`affinity::room_in`).
    conns: AtomicUsize,
    /// The adaptive controller's cap for this group (what `1 + oversubscribe` is otherwise);
    /// zero while adaptive mode is off. Written under the group lock by the timer, read
    /// without it wherever the cap applies.
    cap: AtomicUsize,
    /// Commands of local connections re-armed in this group, by the allowed CPU (index) their
    /// client sent from, since the timer's last look: CPU affinity engages only while the
    /// clients are spread over the CPUs (see [`affinity`]).
    /// Inline (the group is cache-padded): counters of two groups side by side in one heap
    /// line bounced between the CPUs on every command and cost a fifth of the throughput.
    seen: [AtomicU64; affinity::SEEN_CPUS],
    /// Local connections that ran a command in this group since the timer's last look, each
    /// counted once (lingered commands too): how many clients keep the server busy, which
    /// decides, with `seen`, whether CPU affinity engages (see [`affinity::judge`]).
    busy: AtomicU64,
    /// The kernel thread ids of the group's live threads, and the placement the timer last
    /// gave them all (`None` until its first pass; see [`Shared::place_groups`]). A thread
    /// also places itself before each entry it runs; this lets the timer move the ones that
    /// sleep (idle workers, a listener that only dispatches) when affinity engages or lets go.
    threads: Mutex<(Vec<i32>, Option<Option<usize>>)>,
}

impl<C> Group<C> {
    fn new() -> Self {
        Group {
            inner: Mutex::new(GroupInner {
                core: GroupCore::default(),
                queue_hist: LazyHist::default(),
                exec_hist: LazyHist::default(),
                adapt: None,
                history: std::collections::VecDeque::new(),
            }),
            poller: OnceLock::new(),
            next_since: AtomicU64::new(0),
            low_since: AtomicU64::new(0),
            arms: AtomicU64::new(0),
            edge_idles: AtomicU64::new(0),
            edge_requeues: AtomicU64::new(0),
            polls: AtomicU64::new(0),
            steering_refused: AtomicU64::new(0),
            conns: AtomicUsize::new(0),
            cap: AtomicUsize::new(0),
            seen: std::array::from_fn(|_| AtomicU64::new(0)),
            busy: AtomicU64::new(0),
            threads: Mutex::new((Vec::new(), None)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, GroupInner<C>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn poller(&self) -> std::io::Result<&Poller> {
        if let Some(p) = self.poller.get() {
            return Ok(p);
        }
        let p = Poller::new()?;
        let _ = self.poller.set(p);
        Ok(self.poller.get().expect("just set"))
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn us(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

struct Shared<H: Handler> {
    handler: H,
    groups: Vec<CachePadded<Group<H::Conn>>>,
    registry: Vec<Shard<H::Conn>>,
    /// The groups connections are placed in now: `thread_pool_size`, or in adaptive mode with
    /// `adaptive_groups` the number `crate::regroup` chose.
    size: AtomicUsize,
    /// `thread_pool_size` as set (what `SHOW VARIABLES` reports, and the base of
    /// `crate::regroup`'s choice).
    size_set: AtomicUsize,
    /// `thread_pool_adaptive_groups`: adaptive mode also chooses the number of groups.
    adaptive_groups: AtomicBool,
    /// The number-of-groups chooser, fed by the timer (reset when adaptive mode or the size
    /// is set).
    regroup: Mutex<Regroup>,
    /// Times the chooser changed the number of groups (`Threadpool_adaptive_regroups`).
    regroups: AtomicU64,
    oversubscribe: AtomicUsize,
    /// `thread_pool_adaptive`: each group's cap comes from its controller (see `crate::adapt`).
    adaptive: AtomicBool,
    stall_limit_us: AtomicU64,
    max_threads: AtomicUsize,
    idle_timeout_us: AtomicU64,
    kickup_us: AtomicU64,
    prio_mode: AtomicU8,
    tickets: AtomicU64,
    dedicated: AtomicBool,
    /// `thread_pool_cpu_affinity` as set (in effect only as [`affinity::effective`] says).
    cpu_affinity: AtomicBool,
    /// The CPUs the server was allowed at start: group `g` runs on `cpus[g % cpus.len()]`
    /// while affinity is in effect, on all of them otherwise (see [`affinity`]).
    cpus: Vec<usize>,
    /// Workers paired with a client on each of `cpus` (same index; see
    /// `Shared::pair_with_client`): a CPU takes no more than its share of the paired workers.
    paired: Vec<AtomicUsize>,
    /// When a lingering worker last found its client sending from each of `cpus` (same index),
    /// in µs since `epoch` plus one (0: never). A worker pairs only while clients send from
    /// more than one CPU at once (see `Shared::pair_with_client`).
    client_seen_at: Vec<AtomicU64>,
    /// Thread ids of the workers paired beside a client now. The timer's `place_groups`
    /// leaves them where they are: moved, a paired worker believed it still was, never pinned
    /// itself again, and its count in `paired` refused other workers their pairing.
    paired_tids: Mutex<Vec<i32>>,
    /// The clients are spread over the CPUs (the timer's judgement of the groups' `seen`):
    /// affinity pins and steers only while this holds (see [`affinity`]).
    engaged: AtomicBool,
    /// The timer's affinity judgements so far (from 1): a connection counts in its group's
    /// `busy` once per round.
    judge_round: AtomicU64,
    histograms: AtomicBool,
    stealing: AtomicBool,
    /// `Config::balance` in µs (0 = off).
    balance_us: AtomicU64,
    /// Origin of the groups' `next_since` stamps.
    epoch: Instant,
    /// How long a worker may linger on the connection it just ran, µs (0 = never).
    linger_us: AtomicU64,
    /// `Config::linger_threads` (at least 1).
    linger_threads: AtomicUsize,
    total_threads: AtomicUsize,
    shutdown: AtomicBool,
    handles: Mutex<Vec<JoinHandle<()>>>,
    /// The timer sleeps on this (woken early by a stall-limit change, shutdown or a pending
    /// thief).
    timer_cv: Condvar,
    /// Groups (bit g for group g < 64) whose queued work wanted a thief that `wake_thief` could
    /// not wake because another group's lock was busy: the timer thread retries them at once.
    thief_pending: AtomicU64,
    /// Bumped by every `wake_thief`, after the work that wants a thief is queued and before
    /// the other groups' idle lists are looked at. A worker reads it before a steal attempt
    /// and again, under its own group's lock, just before it parks: a change means a waker
    /// looked for a thief while the steal was in flight (and may have found nobody idle), so
    /// the worker tries again instead of parking. See "Parking and waking" in `worker`.
    steal_seq: AtomicU64,
    /// Stall samples taken (`Threadpool_sampled_seconds`) and those that were stall seconds
    /// (`Threadpool_stall_seconds`): see [`sampler`].
    sampled_seconds: AtomicU64,
    stall_seconds: AtomicU64,
    timer_lock: Mutex<()>,
    last_blocked_log: Mutex<Option<Instant>>,
    thread_name: String,
    /// Worker stack size (`Config::stack_size`).
    stack_size: Option<usize>,
}

fn mode_to_u8(m: HighPrioMode) -> u8 {
    match m {
        HighPrioMode::Transactions => 0,
        HighPrioMode::Statements => 1,
        HighPrioMode::None => 2,
    }
}

fn state_of(m: &ConnMeta) -> ConnState {
    match m.phase {
        Phase::Idle if m.writable => ConnState::WaitWrite,
        Phase::Idle => ConnState::Idle,
        Phase::Running if m.lingering => ConnState::Idle,
        Phase::Queued => ConnState::Queued(m.prio),
        Phase::Running => m.wait.map_or(ConnState::Running, ConnState::Waiting),
        Phase::Closed => ConnState::Closing,
    }
}

/// A latency histogram (1 µs .. 1 h, two significant digits: about 26 KiB of counts) that is
/// allocated at its first sample. Every one of the `max_size` groups (at least 128, so that a
/// runtime resize never reallocates the group array) has two; allocated up front, they were
/// 6.5 MiB of the pool's resident memory at idle (`tests/memory.rs`: 26 MiB at idle against
/// 18.5 MiB for one thread per connection), though only the groups in use ever record.
#[derive(Default)]
struct LazyHist(Option<Box<Histogram<u64>>>);

impl LazyHist {
    fn record(&mut self, v: u64) -> Result<(), hdrhistogram::RecordError> {
        self.0
            .get_or_insert_with(|| {
                Box::new(Histogram::new_with_bounds(1, 3_600_000_000, 2).expect("valid bounds"))
            })
            .record(v)
    }

    fn reset(&mut self) {
        if let Some(h) = self.0.as_mut() {
            h.reset();
        }
    }
}

fn percentiles(h: &LazyHist) -> Percentiles {
    let Some(h) = h.0.as_deref().filter(|h| !h.is_empty()) else {
        return Percentiles::default();
    };
    Percentiles {
        count: h.len(),
        p50_us: h.value_at_quantile(0.50),
        p95_us: h.value_at_quantile(0.95),
        p99_us: h.value_at_quantile(0.99),
        max_us: h.max(),
    }
}

impl<H: Handler> Shared<H> {
    /// The shared state of a pool with `config` (already checked): every group allocated,
    /// no thread started, no poller created.
    fn new(config: &Config, handler: H) -> Self {
        let cpus = affinity::allowed_cpus();
        Shared {
            handler,
            groups: (0..config.max_size)
                .map(|_| CachePadded::new(Group::new()))
                .collect(),
            registry: (0..SHARDS)
                .map(|_| Mutex::new(FxHashMap::default()))
                .collect(),
            size: AtomicUsize::new(config.size),
            size_set: AtomicUsize::new(config.size),
            adaptive_groups: AtomicBool::new(config.adaptive_groups),
            regroup: Mutex::new(Regroup::new()),
            regroups: AtomicU64::new(0),
            oversubscribe: AtomicUsize::new(config.oversubscribe),
            adaptive: AtomicBool::new(false),
            stall_limit_us: AtomicU64::new(us(config.stall_limit)),
            max_threads: AtomicUsize::new(config.max_threads),
            idle_timeout_us: AtomicU64::new(us(config.idle_timeout)),
            kickup_us: AtomicU64::new(us(config.prio_kickup_timer)),
            prio_mode: AtomicU8::new(mode_to_u8(config.high_prio_mode)),
            tickets: AtomicU64::new(config.high_prio_tickets),
            dedicated: AtomicBool::new(config.dedicated_listener),
            cpu_affinity: AtomicBool::new(config.cpu_affinity),
            paired: cpus.iter().map(|_| AtomicUsize::new(0)).collect(),
            client_seen_at: cpus.iter().map(|_| AtomicU64::new(0)).collect(),
            paired_tids: Mutex::new(Vec::new()),
            cpus,
            engaged: AtomicBool::new(false),
            judge_round: AtomicU64::new(1),
            histograms: AtomicBool::new(config.histograms),
            stealing: AtomicBool::new(config.work_stealing),
            balance_us: AtomicU64::new(
                u64::try_from(config.balance.as_micros()).unwrap_or(u64::MAX),
            ),
            epoch: Instant::now(),
            linger_us: AtomicU64::new(u64::try_from(config.linger.as_micros()).unwrap_or(u64::MAX)),
            linger_threads: AtomicUsize::new(config.linger_threads.max(1)),
            total_threads: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
            handles: Mutex::new(Vec::new()),
            timer_cv: Condvar::new(),
            thief_pending: AtomicU64::new(0),
            steal_seq: AtomicU64::new(0),
            sampled_seconds: AtomicU64::new(0),
            stall_seconds: AtomicU64::new(0),
            timer_lock: Mutex::new(()),
            last_blocked_log: Mutex::new(None),
            thread_name: config.thread_name.clone(),
            stack_size: config.stack_size,
        }
    }

    /// Where group `gid`'s workers should run now: `Some(cpu)` while CPU affinity is in
    /// effect, `None` (every allowed CPU) otherwise.
    fn placement(&self, gid: usize) -> Option<usize> {
        let n = self.cpus.len();
        let on = self.cpu_affinity.load(Ordering::Relaxed) && self.engaged.load(Ordering::Relaxed);
        affinity::effective(on, self.size.load(Ordering::Relaxed), n)
            .then(|| self.cpus[affinity::cpu_of_group(gid, n)])
    }

    /// The group connection `e` (now in group `old`) belongs in for its next command, in a
    /// pool of `size` groups: with CPU affinity engaged, a local connection goes to a group of
    /// the CPU its client last sent from; every other connection to `id % size` (see
    /// [`affinity`]). Counts where local clients send from, for the engagement. The client's
    /// CPU is asked on one command in [`affinity::PROBE_EVERY`] (`probes` counts them), each
    /// answer counted for that many: between answers the connection stays where it is.
    fn home_group(
        &self,
        e: &ConnEntry<H::Conn>,
        local: bool,
        probes: &mut u8,
        old: usize,
        size: usize,
    ) -> usize {
        let by_id = (e.id % size as u64) as usize;
        let n = self.cpus.len();
        if !local || !affinity::effective(self.cpu_affinity.load(Ordering::Relaxed), size, n) {
            return by_id;
        }
        let engaged = self.engaged.load(Ordering::Relaxed);
        let due = *probes == 0;
        *probes = (*probes + 1) % affinity::PROBE_EVERY;
        let cpu = if due {
            affinity::incoming_cpu(e.fd).and_then(|c| self.cpus.iter().position(|&a| a == c))
        } else {
            None
        };
        let Some(cpu) = cpu else {
            return if engaged && old < size { old } else { by_id };
        };
        if let Some(g) = self.groups.get(old) {
            g.seen[cpu % affinity::SEEN_CPUS]
                .fetch_add(u64::from(affinity::PROBE_EVERY), Ordering::Relaxed);
        }
        if !engaged {
            return by_id;
        }
        let to = affinity::home_group(e.id, cpu, size, n);
        if to == old || old >= size {
            return to;
        }
        // Steering must not herd: an event-loop client's threads can all run on one CPU for a
        // while, and every connection would follow them into one group (see `room_in`).
        let total = self.groups[..size]
            .iter()
            .map(|g| g.conns.load(Ordering::Relaxed))
            .sum();
        if affinity::room_in(self.groups[to].conns.load(Ordering::Relaxed), total, size) {
            to
        } else {
            self.groups[to]
                .steering_refused
                .fetch_add(1, Ordering::Relaxed);
            old
        }
    }

    /// The concurrency cap of group `gid` minus one (what the core's decisions take as
    /// `oversubscribe`): the controller's cap in adaptive mode, else the static setting.
    fn oversub(&self, gid: usize) -> usize {
        if self.adaptive.load(Ordering::Relaxed) {
            let cap = self.groups[gid].cap.load(Ordering::Relaxed);
            if cap > 0 {
                return cap - 1;
            }
        }
        self.oversubscribe.load(Ordering::Relaxed)
    }

    /// The highest cap the controller may set: `max_threads / size`, at least 1.
    fn max_cap(&self) -> usize {
        let size = self.size.load(Ordering::Relaxed).max(1);
        (self.max_threads.load(Ordering::Relaxed) / size).max(1)
    }

    fn set_adaptive(&self, on: bool) {
        let was = self.adaptive.swap(on, Ordering::SeqCst);
        if was == on {
            return;
        }
        *lock(&self.regroup) = Regroup::new();
        if !on {
            // Back to `thread_pool_size` groups (the pollers exist: it was the size before).
            let _ = self.resize(self.size_set.load(Ordering::SeqCst));
        }
        let start = (1 + self.oversubscribe.load(Ordering::SeqCst)).min(self.max_cap());
        let now = Instant::now();
        for g in &self.groups {
            let mut inner = g.lock();
            if on {
                inner.adapt = Some((Controller::new(start), now));
                inner.core.meter = Default::default();
                g.cap.store(start, Ordering::SeqCst);
            } else {
                inner.adapt = None;
                g.cap.store(0, Ordering::SeqCst);
            }
        }
    }

    /// Places connections in `size` groups from now on (each moves at its next re-arm):
    /// creates the pollers it needs and tells the listeners of groups beyond it to look
    /// whether they may exit.
    fn resize(&self, size: usize) -> Result<(), PoolError> {
        let max = self.groups.len();
        if size == 0 || size > max {
            return Err(PoolError::InvalidConfig(format!(
                "size {size} must be in 1..={max}"
            )));
        }
        for g in &self.groups[..size] {
            g.poller()?;
        }
        let old = self.size.swap(size, Ordering::SeqCst);
        for g in &self.groups[size.min(old)..old.max(size)] {
            if let Some(p) = g.poller.get() {
                let _ = p.notify();
            }
        }
        Ok(())
    }

    /// Whether adaptive mode chooses the number of groups now.
    fn regrouping(&self) -> bool {
        self.adaptive.load(Ordering::Relaxed) && self.adaptive_groups.load(Ordering::Relaxed)
    }

    /// The number-of-groups chooser's turn (at a timer tick, no group lock held): `o` sums
    /// the adaptive groups' intervals just judged.
    fn regroup(&self, mut o: regroup::Observation) {
        if !self.regrouping() {
            return;
        }
        o.cpus = if self.cpus.is_empty() {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            self.cpus.len()
        };
        let current = self.size.load(Ordering::SeqCst);
        let base = self.size_set.load(Ordering::SeqCst);
        let want = lock(&self.regroup).step(&o, current, base, self.groups.len());
        if want != current && self.resize(want).is_ok() {
            self.regroups.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(from = current, to = want, "adaptive pool: regrouped");
        }
    }

    /// The adaptive controller's turn for one group (at a timer tick, group lock held).
    /// `cpu_idle`: the share of the CPUs left free over the tick's interval (see [`cpu`]).
    fn adapt(
        &self,
        g: &Group<H::Conn>,
        inner: &mut GroupInner<H::Conn>,
        now: Instant,
        cpu_idle: Option<f64>,
        pool_completed: u64,
    ) -> Option<regroup::Observation> {
        let max_cap = self.max_cap();
        let floor = (1 + self.oversubscribe.load(Ordering::Relaxed)).min(ADAPT_FLOOR);
        let (ctl, since) = inner.adapt.as_mut()?;
        let elapsed = now.saturating_duration_since(*since);
        if elapsed < ADAPT_MIN_INTERVAL {
            return None;
        }
        let mut sample = std::mem::take(&mut inner.core.meter);
        sample.elapsed = elapsed;
        sample.queued = inner.core.queued();
        sample.cpu_idle = cpu_idle;
        sample.pool_completed = pool_completed;
        *since = now;
        let cpus = if self.cpus.is_empty() {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            self.cpus.len()
        };
        let size = self.size.load(Ordering::Relaxed).max(1);
        ctl.set_cpus_per_group(cpus.div_ceil(size));
        ctl.set_merged(size < self.size_set.load(Ordering::Relaxed));
        let d = ctl.step(&sample, floor, max_cap);
        g.cap.store(d.new, Ordering::SeqCst);
        let seen = regroup::Observation {
            completed: sample.completed,
            exec_us: sample.exec_us,
            read_us: sample.read_wait_us,
            wait_us: sample.wait_us,
            ..Default::default()
        };
        if d.new == d.old {
            return Some(seen);
        }
        let c = &mut inner.core.counters;
        if d.new > d.old {
            c.adaptive_raises += 1;
        } else {
            c.adaptive_lowers += 1;
        }
        if matches!(
            d.reason,
            AdaptReason::RevertRaise | AdaptReason::RevertLower
        ) {
            c.adaptive_reverts += 1;
        }
        if inner.history.len() >= ADAPT_HISTORY {
            inner.history.pop_front();
        }
        inner.history.push_back(Adjustment {
            at: std::time::SystemTime::now(),
            old_cap: d.old,
            new_cap: d.new,
            reason: d.reason,
            sample,
        });
        Some(seen)
    }
    fn stall_limit(&self) -> Duration {
        Duration::from_micros(self.stall_limit_us.load(Ordering::Relaxed))
    }
    fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    fn ctx(&self, gid: usize, now: Instant) -> CreateCtx {
        CreateCtx {
            now,
            total_threads: self.total_threads.load(Ordering::SeqCst),
            max_threads: self.max_threads.load(Ordering::Relaxed),
            oversubscribe: self.oversub(gid),
            stall_limit: self.stall_limit(),
        }
    }

    fn shard(&self, id: u64) -> &Shard<H::Conn> {
        &self.registry[(id % SHARDS as u64) as usize]
    }

    fn lookup(&self, id: u64) -> Option<Arc<ConnEntry<H::Conn>>> {
        lock(self.shard(id)).get(&id).cloned()
    }

    fn all_entries(&self) -> Vec<Arc<ConnEntry<H::Conn>>> {
        let mut v = Vec::new();
        for s in &self.registry {
            v.extend(lock(s).values().cloned());
        }
        v
    }

    /// Wakes or creates a worker for group `gid` (whose core the caller holds locked), applying
    /// the lock-holder rule when the normal path is throttled or refused.
    fn wake_or_create(
        self: &StdArc<Self>,
        gid: usize,
        core: &mut GroupCore<Entry<H::Conn>, Arc<WorkerSlot>>,
        reason: Reason,
    ) {
        if core.shutdown {
            return;
        }
        let now = Instant::now();
        match core.wake_or_create(&self.ctx(gid, now), reason) {
            Decision::Wake(w) => {
                w.wake.store(WAKE_ACTIVE, Ordering::SeqCst);
                w.cv.notify_one();
            }
            Decision::Create => self.spawn(gid, core),
            Decision::Throttled => {}
            Decision::Refused => {
                if core.force_create(now) {
                    self.spawn(gid, core);
                } else if core.queued() > 0 {
                    // Refused for having more threads than connections is no shortage (a
                    // lingering worker, for one, takes the work when its linger ends).
                    if self.total_threads.load(Ordering::SeqCst)
                        >= self.max_threads.load(Ordering::Relaxed)
                    {
                        self.log_blocked(gid);
                    }
                    if core.listener && core.active == 0 {
                        // No thread can be added: the listener stops listening and runs the
                        // queued work (the timer polls for it meanwhile).
                        if let Some(p) = self.groups[gid].poller.get() {
                            let _ = p.notify();
                        }
                    }
                }
            }
        }
    }

    /// Gives the group a listener: an idle worker takes the role directly, else a worker is
    /// woken or created (it becomes the listener when it finds no work).
    fn provide_listener(
        self: &StdArc<Self>,
        gid: usize,
        core: &mut GroupCore<Entry<H::Conn>, Arc<WorkerSlot>>,
    ) {
        if let Some(w) = core.hand_listener() {
            w.wake.store(WAKE_LISTEN, Ordering::SeqCst);
            w.cv.notify_one();
        } else if !core.listener {
            self.wake_or_create(gid, core, Reason::Normal);
        }
    }

    /// After queueing: make sure somebody will run the queue.
    fn after_queue(
        self: &StdArc<Self>,
        gid: usize,
        core: &mut GroupCore<Entry<H::Conn>, Arc<WorkerSlot>>,
    ) {
        if core.listener_wants_worker(self.oversub(gid)) {
            self.wake_or_create(gid, core, Reason::Normal);
        } else if self.stealing.load(Ordering::Relaxed) && core.wants_thief(self.oversub(gid)) {
            self.wake_thief(gid);
        }
    }

    fn log_blocked(&self, gid: usize) {
        let mut last = lock(&self.last_blocked_log);
        let now = Instant::now();
        if last.is_none_or(|t| now.duration_since(t) >= BLOCKED_LOG_INTERVAL) {
            *last = Some(now);
            tracing::warn!(
                group = gid,
                threads = self.total_threads.load(Ordering::Relaxed),
                max_threads = self.max_threads.load(Ordering::Relaxed),
                "thread pool could not create a thread it needs: thread_pool_max_threads reached; \
                 queued work waits (use the admin port to investigate)"
            );
        }
    }

    /// Spawns a worker for `gid`; the core already counts it as active.
    fn spawn(
        self: &StdArc<Self>,
        gid: usize,
        core: &mut GroupCore<Entry<H::Conn>, Arc<WorkerSlot>>,
    ) {
        self.total_threads.fetch_add(1, Ordering::SeqCst);
        let s = self.clone();
        let mut b = thread::Builder::new().name(format!("{}-g{gid}", self.thread_name));
        if let Some(size) = self.stack_size {
            b = b.stack_size(size);
        }
        let r = b.spawn(move || s.worker_main(gid));
        match r {
            Ok(h) => {
                let mut hs = lock(&self.handles);
                hs.retain(|h| !crate::loom::is_finished(h));
                hs.push(h);
            }
            Err(e) => {
                core.creation_failed();
                self.total_threads.fetch_sub(1, Ordering::SeqCst);
                tracing::warn!(group = gid, error = %e, "thread pool could not spawn a worker");
            }
        }
    }

    fn add(self: &StdArc<Self>, id: u64, conn: H::Conn) -> Result<(), PoolError> {
        if self.is_shutdown() {
            self.handler.close(conn, CloseReason::Rejected);
            return Err(PoolError::ShutDown);
        }
        let fd = self.handler.fd(&conn);
        let gid = (id % self.size.load(Ordering::SeqCst) as u64) as usize;
        let entry = Arc::new(ConnEntry {
            id,
            fd,
            meta: Mutex::new(ConnMeta {
                phase: Phase::Queued,
                prio: Prio::High,
                must_run: false,
                holder: false,
                wait: None,
                writable: false,
                group: gid,
                registered: false,
                edge: false,
                pending: false,
                deadline: None,
                killed: false,
                tickets: self.tickets.load(Ordering::Relaxed),
                lingering: false,
                local: affinity::is_local_tcp(fd),
                probes: 0,
                last_end: None,
                busy_round: 0,
                suspect: None,
                lose_report: false,
                hup_reported: false,
            }),
            conn: Mutex::new(Some(conn)),
        });
        {
            let mut shard = lock(self.shard(id));
            if shard.contains_key(&id) {
                drop(shard);
                let c = lock(&entry.conn).take().expect("fresh");
                self.handler.close(c, CloseReason::Rejected);
                return Err(PoolError::DuplicateConnection(id));
            }
            shard.insert(id, entry.clone());
        }
        let meta = lock(&entry.meta);
        let mut inner = self.groups[gid].lock();
        inner.core.connections += 1;
        self.groups[gid]
            .conns
            .store(inner.core.connections, Ordering::Relaxed);
        inner.core.push(
            (entry.clone(), Action::Login),
            Prio::High,
            false,
            Instant::now(),
        );
        self.after_queue(gid, &mut inner.core);
        drop(inner);
        drop(meta);
        Ok(())
    }

    fn kill(self: &StdArc<Self>, id: u64) -> bool {
        let Some(e) = self.lookup(id) else {
            return false;
        };
        let mut m = lock(&e.meta);
        let m = &mut *m;
        match m.phase.kill(&mut m.killed) {
            KillStep::Gone => return false,
            KillStep::QueueKill => {
                m.prio = Prio::High;
                let gid = m.group;
                let mut inner = self.groups[gid].lock();
                // A killed lock holder must run too: closing it releases its locks.
                let must = m.must_run;
                inner
                    .core
                    .push((e.clone(), Action::Kill), Prio::High, must, Instant::now());
                self.after_queue(gid, &mut inner.core);
            }
            KillStep::Expedite => {
                m.prio = Prio::High;
                let mut inner = self.groups[m.group].lock();
                let low = &mut inner.core.queues[Prio::Low as usize];
                if let Some(i) = low.iter().position(|q| Arc::ptr_eq(&q.item.0, &e)) {
                    let q = low.remove(i).expect("found");
                    inner.core.queues[Prio::High as usize].push_back(q);
                }
            }
            KillStep::AfterRun => {}
        }
        true
    }

    /// Step 1 of the shutdown protocol (crate doc): the pool-wide flag, then each group's
    /// (under its lock, where every worker checks it before it parks or takes work).
    fn begin_shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        for g in &self.groups {
            g.lock().core.shutdown = true;
        }
    }

    /// Step 3 of the shutdown protocol: wake every idle worker (under its group's lock, so a
    /// worker that parks after `begin_shutdown` saw the flag instead) and every listener.
    fn wake_every_thread(&self) {
        for g in &self.groups {
            let inner = g.lock();
            for w in &inner.core.idle {
                w.cv.notify_one();
            }
            drop(inner);
            if let Some(p) = g.poller.get() {
                let _ = p.notify();
            }
        }
    }

    /// Removes the connection from epoll, the registry and its group's count, then hands it to
    /// the handler. The caller has taken `conn` out of the entry.
    fn close_entry(&self, e: &Arc<ConnEntry<H::Conn>>, conn: H::Conn, reason: CloseReason) {
        let mut m = lock(&e.meta);
        if m.registered {
            if let Some(p) = self.groups[m.group].poller.get() {
                // SAFETY: the fd is still open (the handler closes it only in `close` below).
                let _ = p.delete(unsafe { BorrowedFd::borrow_raw(e.fd) });
            }
            m.registered = false;
        }
        m.phase = Phase::Closed;
        let gid = m.group;
        {
            let mut inner = self.groups[gid].lock();
            inner.core.connections = inner.core.connections.saturating_sub(1);
            self.groups[gid]
                .conns
                .store(inner.core.connections, Ordering::Relaxed);
        }
        drop(m);
        lock(self.shard(e.id)).remove(&e.id);
        self.handler.close(conn, reason);
    }

    fn stats(&self) -> PoolStats {
        let size = self.size.load(Ordering::SeqCst);
        let mut groups = Vec::new();
        let mut queue_entries = Vec::new();
        let mut waits = [0u64; 12];
        let now = Instant::now();
        for (gid, g) in self.groups.iter().enumerate() {
            let inner = g.lock();
            let c = &inner.core;
            if gid >= size && c.threads == 0 && c.connections == 0 && c.queued() == 0 {
                continue;
            }
            let mut pos = 0;
            for (qi, q) in c.queues.iter().enumerate() {
                for e in q {
                    queue_entries.push(QueueEntryInfo {
                        group_id: gid,
                        position: pos,
                        priority: if qi == 0 { Prio::High } else { Prio::Low },
                        conn_id: e.item.0.id,
                        queueing_time: now.saturating_duration_since(e.since),
                    });
                    pos += 1;
                }
            }
            for (w, n) in waits.iter_mut().zip(c.counters.waits.iter()) {
                *w += n;
            }
            groups.push(GroupStats {
                id: gid,
                connections: c.connections,
                threads: c.threads,
                active: c.active,
                standby: c.idle.len(),
                waiting: c.waiting,
                lingering: c.lingering,
                queue_high: c.queues[0].len(),
                queue_low: c.queues[1].len(),
                has_listener: c.listener,
                is_stalled: c.stalled,
                counters: {
                    let mut k = c.counters.clone();
                    k.arms = g.arms.load(Ordering::Relaxed);
                    k.edge_idles = g.edge_idles.load(Ordering::Relaxed);
                    k.edge_requeues = g.edge_requeues.load(Ordering::Relaxed);
                    k.steering_refused = g.steering_refused.load(Ordering::Relaxed);
                    k
                },
                queue_time: percentiles(&inner.queue_hist),
                exec_time: percentiles(&inner.exec_hist),
                cap: 1 + self.oversub(gid),
                adaptive_history: inner.history.iter().cloned().collect(),
            });
        }
        let threads: usize = groups.iter().map(|g| g.threads).sum();
        let active: usize = groups.iter().map(|g| g.active).sum();
        PoolStats {
            size,
            threads,
            idle_threads: threads - active.min(threads),
            connections: groups.iter().map(|g| g.connections).sum(),
            groups,
            queue_entries,
            waits,
            sampled_seconds: self.sampled_seconds.load(Ordering::Relaxed),
            regroups: self.regroups.load(Ordering::Relaxed),
            stall_seconds: self.stall_seconds.load(Ordering::Relaxed),
            affinity_engaged: self.placement(0).is_some(),
        }
    }
}
