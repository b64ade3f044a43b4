//! The pool proper: groups, workers, listener, connections (see the crate doc for the
//! design; this module performs the side effects the decisions in [`crate::core`] ask for).
//!
//! The public handle ([`Pool`]: start, add, kill, settings, stats, shutdown) is [`handle`], the
//! timer thread is [`timer`], balancing between groups (work stealing, age balancing) is
//! [`balance`]; each adds methods to `Shared`, the state every pool thread shares.
//!
//! ## Lock order
//!
//! `connection meta` → `registry shard` → `group` → `handles`. A group lock is never held while
//! taking a connection's meta lock: the listener claims connections *before* locking its group.
//! A connection's `conn` mutex (the handler object) is held only by the worker running it, and by
//! shutdown after every worker has been joined.

use std::os::fd::{BorrowedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use polling::{Event, Events, PollMode, Poller};
use rustc_hash::FxHashMap;
use shoal_wait::{WaitKind, WaitObserver};

use crate::adapt::{Controller, Reason as AdaptReason};
use crate::core::{
    next_priority, AfterPoll, CreateCtx, Decision, GroupCore, KillStep, Next, Phase, Prio, Reason,
    Settle,
};
use crate::stats::{Adjustment, ConnState, GroupStats, Percentiles, PoolStats, QueueEntryInfo};
use crate::{CloseReason, Config, Handler, HighPrioMode, Knob, Outcome, PoolError, PrioHint};

mod balance;
mod handle;
mod timer;

pub use handle::Pool;

const SHARDS: usize = 16;
const MAX_EVENTS: usize = 1024;
const BLOCKED_LOG_INTERVAL: Duration = Duration::from_secs(10);
/// The safety net recovers a readable idle connection no sooner than this after it first
/// found it so (see [`Shared::sweep`]): a genuinely lost report stays lost, so waiting costs
/// only the recovery's latency, and the margin covers a listener descheduled on a loaded
/// machine.
const RECOVER_AFTER: Duration = Duration::from_secs(1);
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
const THIEF_LOCK_SPINS: u32 = 50;

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
    /// When its previous command finished (not its login): a connection whose next command
    /// starts soon after is busy, and only a busy connection is worth a linger.
    last_end: Option<Instant>,
    /// The safety net found the connection idle with a readable socket: the group's poll
    /// count and the time then. Cleared when the connection runs (see [`Shared::sweep`]).
    suspect: Option<(u64, Instant)>,
    /// [`Pool::lose_next_report`]: the next report is dropped (fault injection for tests).
    lose_report: bool,
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

/// What [`Shared::linger`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Linger {
    /// Not allowed: go the normal way.
    No,
    /// The next command is here: run it now (the worker is active again).
    Run,
    /// Lingered, then gave up (timeout, work queued meanwhile, cap full, KILL): the worker
    /// stays counted lingering until `get_event` calls `linger_abandon`. `true`: input did
    /// arrive (and the handler may already hold it, so epoll would not report it again): queue
    /// the connection like a yield. `false`: re-arm.
    Abandoned(bool),
}

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

const WAKE_NONE: u8 = 0;
const WAKE_ACTIVE: u8 = 1;
const WAKE_LISTEN: u8 = 2;
/// Like [`WAKE_ACTIVE`], woken by another group's `wake_thief`: steal before anything else
/// (before taking the listener role of its own group, which would lose the steal).
const WAKE_STEAL: u8 = 3;

struct GroupInner<C> {
    core: GroupCore<Entry<C>, Arc<WorkerSlot>>,
    queue_hist: Histogram<u64>,
    exec_hist: Histogram<u64>,
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
    /// The adaptive controller's cap for this group (what `1 + oversubscribe` is otherwise);
    /// zero while adaptive mode is off. Written under the group lock by the timer, read
    /// without it wherever the cap applies.
    cap: AtomicUsize,
}

impl<C> Group<C> {
    fn new() -> Self {
        let hist = || Histogram::new_with_bounds(1, 3_600_000_000, 2).expect("valid bounds");
        Group {
            inner: Mutex::new(GroupInner {
                core: GroupCore::default(),
                queue_hist: hist(),
                exec_hist: hist(),
                adapt: None,
                history: std::collections::VecDeque::new(),
            }),
            poller: OnceLock::new(),
            next_since: AtomicU64::new(0),
            arms: AtomicU64::new(0),
            edge_idles: AtomicU64::new(0),
            edge_requeues: AtomicU64::new(0),
            polls: AtomicU64::new(0),
            cap: AtomicUsize::new(0),
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
    size: AtomicUsize,
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

/// Waits up to `timeout` for `fd` to become readable (or hung up / in error, which the handler
/// reports): the default [`Handler::await_input`], public for
/// handlers that override it only sometimes. Interrupted or failed waits count as "not readable".
pub fn poll_readable(fd: RawFd, timeout: Duration) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN | libc::POLLRDHUP,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().try_into().unwrap_or(libc::time_t::MAX),
        tv_nsec: timeout.subsec_nanos().into(),
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
    let r = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
    r > 0 && p.revents != 0
}

/// Whether the peer of socket `fd` has shut down its side (a FIN received), hung up or left an
/// error, whether or not data is still unread in front of it. A failed `poll` counts as a
/// hang-up: the caller then queues the connection, and the handler finds out.
fn peer_hung_up(fd: RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd; a zero timeout never blocks.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    r < 0 || p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

fn percentiles(h: &Histogram<u64>) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    Percentiles {
        count: h.len(),
        p50_us: h.value_at_quantile(0.50),
        p95_us: h.value_at_quantile(0.95),
        p99_us: h.value_at_quantile(0.99),
        max_us: h.max(),
    }
}

/// Installed on every worker thread: turns wait reports into group accounting.
struct Observer<H: Handler> {
    shared: Arc<Shared<H>>,
    gid: usize,
    current: Mutex<Option<Arc<ConnEntry<H::Conn>>>>,
    /// When the worker's current reported wait began (for the controller's wait share).
    wait_since: Mutex<Option<Instant>>,
}

impl<H: Handler> WaitObserver for Observer<H> {
    fn wait_begin(&self, kind: WaitKind) {
        if let Some(e) = lock(&self.current).as_ref() {
            lock(&e.meta).wait = Some(kind);
        }
        *lock(&self.wait_since) = Some(Instant::now());
        let mut inner = self.shared.groups[self.gid].lock();
        if inner.core.wait_begin(kind) {
            if inner.core.queued() == 0 {
                self.shared.provide_listener(self.gid, &mut inner.core);
            } else {
                self.shared
                    .wake_or_create(self.gid, &mut inner.core, Reason::Normal);
            }
        }
    }

    fn wait_end(&self, _kind: WaitKind) {
        let began = lock(&self.wait_since).take();
        {
            let mut inner = self.shared.groups[self.gid].lock();
            inner.core.wait_end();
            if let Some(t) = began {
                inner.core.meter.note_wait(t.elapsed());
            }
        }
        if let Some(e) = lock(&self.current).as_ref() {
            lock(&e.meta).wait = None;
        }
    }
}

impl<H: Handler> Shared<H> {
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

    /// The adaptive controller's turn for one group (at a timer tick, group lock held).
    fn adapt(&self, g: &Group<H::Conn>, inner: &mut GroupInner<H::Conn>, now: Instant) {
        let max_cap = self.max_cap();
        let Some((ctl, since)) = inner.adapt.as_mut() else {
            return;
        };
        let elapsed = now.saturating_duration_since(*since);
        if elapsed < ADAPT_MIN_INTERVAL {
            return;
        }
        let mut sample = std::mem::take(&mut inner.core.meter);
        sample.elapsed = elapsed;
        sample.queued = inner.core.queued();
        *since = now;
        let d = ctl.step(&sample, max_cap);
        g.cap.store(d.new, Ordering::SeqCst);
        if d.new == d.old {
            return;
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
        self: &Arc<Self>,
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
        self: &Arc<Self>,
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
        self: &Arc<Self>,
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
    fn spawn(self: &Arc<Self>, gid: usize, core: &mut GroupCore<Entry<H::Conn>, Arc<WorkerSlot>>) {
        self.total_threads.fetch_add(1, Ordering::SeqCst);
        let s = self.clone();
        let mut b = std::thread::Builder::new().name(format!("{}-g{gid}", self.thread_name));
        if let Some(size) = self.stack_size {
            b = b.stack_size(size);
        }
        let r = b.spawn(move || s.worker_main(gid));
        match r {
            Ok(h) => {
                let mut hs = lock(&self.handles);
                hs.retain(|h| !h.is_finished());
                hs.push(h);
            }
            Err(e) => {
                core.creation_failed();
                self.total_threads.fetch_sub(1, Ordering::SeqCst);
                tracing::warn!(group = gid, error = %e, "thread pool could not spawn a worker");
            }
        }
    }

    fn add(self: &Arc<Self>, id: u64, conn: H::Conn) -> Result<(), PoolError> {
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
                last_end: None,
                suspect: None,
                lose_report: false,
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

    fn kill(self: &Arc<Self>, id: u64) -> bool {
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
        }
        drop(m);
        lock(self.shard(e.id)).remove(&e.id);
        self.handler.close(conn, reason);
    }

    fn worker_main(self: Arc<Self>, gid: usize) {
        let slot = Arc::new(WorkerSlot {
            cv: Condvar::new(),
            wake: AtomicU8::new(WAKE_NONE),
            balance_turn: AtomicUsize::new(0),
        });
        let obs = Arc::new(Observer {
            shared: self.clone(),
            gid,
            current: Mutex::new(None),
            wait_since: Mutex::new(None),
        });
        let prev = shoal_wait::set_thread_observer(Some(obs.clone()));
        let mut events = Events::with_capacity(MAX_EVENTS.try_into().expect("non-zero"));
        let mut exec = None;
        // Set by `run` when a linger ended without running the next command: the worker is
        // still counted lingering until `get_event` takes the group lock.
        let mut lingered = false;
        while let Some((entry, action)) = self.get_event(
            gid,
            &slot,
            &mut events,
            exec.take(),
            std::mem::take(&mut lingered),
        ) {
            let mut next = Some((entry, action));
            while let Some((e, a)) = next.take() {
                // `Some` again when the worker lingered and the next command arrived.
                next = self
                    .run(gid, e, a, &obs, &mut exec, &mut lingered)
                    .map(|e| (e, Action::Event));
            }
        }
        shoal_wait::set_thread_observer(prev);
    }

    /// Finds the next entry to run, being the listener or sleeping idle meanwhile. `None`: the
    /// thread must exit (its accounting is already undone).
    fn get_event(
        self: &Arc<Self>,
        gid: usize,
        slot: &Arc<WorkerSlot>,
        events: &mut Events,
        exec: Option<Duration>,
        lingered: bool,
    ) -> Option<Entry<H::Conn>> {
        let group = &self.groups[gid];
        let mut inner = group.lock();
        if lingered {
            inner.core.linger_abandon();
        }
        // One steal attempt per round of looking for work (reset after each sleep).
        let mut tried_steal = false;
        // Woken as a thief: steal before taking our own group's listener role.
        let mut steal_first = false;
        if let Some(d) = exec {
            inner.core.meter.note_exec(d);
            if self.histograms.load(Ordering::Relaxed) {
                let _ = inner.exec_hist.record(us(d));
            }
        }
        loop {
            if inner.core.shutdown {
                inner.core.exit_active();
                self.total_threads.fetch_sub(1, Ordering::SeqCst);
                return None;
            }
            let now = Instant::now();
            // Woken as a thief: steal first. Taking our own group's work instead (its own
            // listener and workers look after it) lost the steal whenever our group was busy.
            if steal_first && !tried_steal && self.stealing.load(Ordering::Relaxed) {
                tried_steal = true;
                drop(inner);
                let stolen = self.try_steal(gid, now);
                inner = group.lock();
                if let Some((e, qt)) = stolen {
                    inner.core.counters.steals += 1;
                    if self.histograms.load(Ordering::Relaxed) {
                        let _ = inner.queue_hist.record(us(qt));
                    }
                    return Some(e);
                }
                continue;
            }
            // Age balancing: another group's next entry may have waited longer than ours.
            if let Some((v, older_than)) = self.balance_target(gid, &inner.core, slot) {
                drop(inner);
                let taken = {
                    let mut o = self.groups[v].lock();
                    let t = o.core.take_older(older_than, now);
                    if let Some((_, qt)) = &t {
                        if self.histograms.load(Ordering::Relaxed) {
                            let _ = o.queue_hist.record(us(*qt));
                        }
                    }
                    // Also after a futile look: a stamp left stale by a path that does not
                    // publish (a steal, a kill, a drain) is corrected here, once, instead of
                    // drawing every later dequeue of this group into the same futile lock.
                    self.publish_next(v, &o.core);
                    t
                };
                inner = group.lock();
                if let Some((e, _)) = taken {
                    return Some(e);
                }
            }
            if let Some((e, qt)) = inner.core.take_work(self.oversub(gid), now) {
                if self.histograms.load(Ordering::Relaxed) {
                    let _ = inner.queue_hist.record(us(qt));
                }
                self.publish_next(gid, &inner.core);
                // More queued and still under the cap: bring in one more worker, so a burst
                // queued at once fills the cap without waiting for a new event or the stall
                // timer (MariaDB leaves it to those; costs one comparison when the queue is empty).
                self.after_queue(gid, &mut inner.core);
                return Some(e);
            }
            let retired = gid >= self.size.load(Ordering::SeqCst) && inner.core.connections == 0;
            if retired {
                inner.core.exit_active();
                self.total_threads.fetch_sub(1, Ordering::SeqCst);
                return None;
            }
            // A worker with no work steals before sleeping (when its group has a listener).
            if !tried_steal
                && inner.core.listener
                && self.stealing.load(Ordering::Relaxed)
                && gid < self.size.load(Ordering::SeqCst)
            {
                // Steal without holding our own lock (see `try_steal`); we stay counted active
                // meanwhile, so nobody can hand us a role. Then look at our own group again:
                // work may have arrived while the lock was released.
                tried_steal = true;
                drop(inner);
                let stolen = self.try_steal(gid, now);
                inner = group.lock();
                if let Some((e, qt)) = stolen {
                    inner.core.counters.steals += 1;
                    if self.histograms.load(Ordering::Relaxed) {
                        let _ = inner.queue_hist.record(us(qt));
                    }
                    return Some(e);
                }
                continue;
            }
            if !inner.core.listener {
                inner.core.become_listener();
                drop(inner);
                match self.listen(gid, events) {
                    Some(e) => return Some(e),
                    None => return None,
                }
            }
            let surplus = self.total_threads.load(Ordering::SeqCst)
                > self.max_threads.load(Ordering::Relaxed)
                && inner.core.threads > 2;
            if surplus {
                inner.core.exit_active();
                self.total_threads.fetch_sub(1, Ordering::SeqCst);
                return None;
            }
            tried_steal = false;
            steal_first = false;
            slot.wake.store(WAKE_NONE, Ordering::SeqCst);
            inner.core.become_idle(slot.clone());
            let deadline =
                now + Duration::from_micros(self.idle_timeout_us.load(Ordering::Relaxed));
            loop {
                let wait = deadline.saturating_duration_since(Instant::now());
                inner = slot
                    .cv
                    .wait_timeout(inner, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                match slot.wake.swap(WAKE_NONE, Ordering::SeqCst) {
                    WAKE_ACTIVE => break, // the waker moved us to active
                    WAKE_STEAL => {
                        steal_first = true;
                        break;
                    }
                    WAKE_LISTEN => {
                        drop(inner);
                        return self.listen(gid, events);
                    }
                    _ => {}
                }
                if inner.core.shutdown || Instant::now() >= deadline {
                    if inner.core.idle_timed_out(|w| Arc::ptr_eq(w, slot)) {
                        self.total_threads.fetch_sub(1, Ordering::SeqCst);
                        return None;
                    }
                    // Not in the idle list: a waker took us out (its flag is already set,
                    // under this lock).
                    match slot.wake.swap(WAKE_NONE, Ordering::SeqCst) {
                        WAKE_LISTEN => {
                            drop(inner);
                            return self.listen(gid, events);
                        }
                        WAKE_STEAL => {
                            steal_first = true;
                            break;
                        }
                        _ => break,
                    }
                }
            }
        }
    }

    /// Claims the connections behind `events` (Idle → Queued) for group `gid`.
    fn claim(&self, gid: usize, events: &Events) -> Vec<(Entry<H::Conn>, Prio, bool, bool)> {
        let mut out = Vec::with_capacity(events.len());
        for ev in events.iter() {
            let Some(e) = self.lookup(ev.key as u64) else {
                continue;
            };
            let mut guard = lock(&e.meta);
            let m = &mut *guard;
            if std::mem::take(&mut m.lose_report) {
                continue;
            }
            if m.registered && m.group == gid && m.phase.report(m.edge, &mut m.pending) {
                m.writable = false;
                let (p, must, holder) = (m.prio, m.must_run, m.holder);
                drop(guard);
                out.push(((e, Action::Event), p, must, holder));
            }
        }
        out
    }

    /// The listener role: poll, claim, queue; returns an entry to execute or `None` to exit.
    fn listen(self: &Arc<Self>, gid: usize, events: &mut Events) -> Option<Entry<H::Conn>> {
        let group = &self.groups[gid];
        loop {
            events.clear();
            let polled = match group.poller() {
                Ok(p) => p.wait(events, None),
                Err(e) => Err(e),
            };
            if let Err(e) = polled {
                tracing::warn!(group = gid, error = %e, "thread pool poll failed");
                std::thread::sleep(Duration::from_millis(10));
            }
            let claimed = self.claim(gid, events);
            group.polls.fetch_add(1, Ordering::SeqCst);
            let mut inner = group.lock();
            let retired = gid >= self.size.load(Ordering::SeqCst) && inner.core.connections == 0;
            if inner.core.shutdown || retired {
                inner.core.listener = false;
                inner.core.threads -= 1;
                self.total_threads.fetch_sub(1, Ordering::SeqCst);
                return None;
            }
            let dedicated = self.dedicated.load(Ordering::Relaxed);
            match inner
                .core
                .after_poll(claimed, dedicated, self.oversub(gid), Instant::now())
            {
                AfterPoll::Execute(e) => {
                    if self.histograms.load(Ordering::Relaxed) {
                        let _ = inner.queue_hist.record(1);
                    }
                    if inner.core.needs_new_listener(self.oversub(gid)) {
                        self.provide_listener(gid, &mut inner.core);
                    }
                    return Some(e);
                }
                AfterPoll::Listen => {
                    self.publish_next(gid, &inner.core);
                    self.after_queue(gid, &mut inner.core)
                }
            }
        }
    }

    /// Runs one entry on the current worker (of group `gid`), leaving its execution time in
    /// `exec` unless a linger already recorded it. Returns the connection when the worker
    /// lingered on it and its next command arrived: the caller runs it again at once.
    fn run(
        self: &Arc<Self>,
        gid: usize,
        e: Arc<ConnEntry<H::Conn>>,
        action: Action,
        obs: &Observer<H>,
        exec: &mut Option<Duration>,
        lingered: &mut bool,
    ) -> Option<Arc<ConnEntry<H::Conn>>> {
        let started = Instant::now();
        let mut guard = lock(&e.conn);
        let conn = guard.as_mut()?;
        // Busy: this command started within a few linger budgets of the previous one's end
        // (the window allows for the queue and the client's own turn-around). A connection
        // that was quiet longer than that is not likely to send again at once, and a linger on
        // it would only hold a thread (and, for a lingering listener, create a stand-in).
        let window =
            Duration::from_micros(self.linger_us.load(Ordering::Relaxed).saturating_mul(4));
        let (killed, busy) = {
            let mut m = lock(&e.meta);
            m.phase = Phase::Running;
            m.wait = None;
            m.suspect = None;
            let busy = m
                .last_end
                .is_some_and(|t| started.saturating_duration_since(t) <= window);
            (m.killed, busy)
        };
        *lock(&obs.current) = Some(e.clone());
        let h = &self.handler;
        // A panicking handler costs its connection, not the worker (whose accounting must stay
        // right): the connection is closed with `CloseReason::Panicked`.
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let r = match action {
                Action::Kill => Err(CloseReason::Killed),
                Action::Timeout => {
                    h.timed_out(conn);
                    Err(CloseReason::TimedOut)
                }
                _ if killed => Err(CloseReason::Killed),
                Action::Login => Ok(h.login(conn)),
                Action::Event => Ok(h.handle(conn)),
            };
            match r {
                Ok(Outcome::Close) => Err(CloseReason::Handler),
                Ok(o) => Ok(o),
                Err(r) => Err(r),
            }
        }));
        if ran.is_err() {
            // Unwound out of a raw `wait_begin` without its `wait_end`: balance the accounting.
            while shoal_wait::in_wait() {
                shoal_wait::wait_end();
            }
        }
        *lock(&obs.current) = None;
        let ended = Instant::now();
        *exec = Some(ended.saturating_duration_since(started));
        // A login does not count: a client's first command often follows at once (drivers
        // send their setup queries), which says nothing about the connection being busy.
        if action == Action::Event {
            lock(&e.meta).last_end = Some(ended);
        }
        let result = match ran {
            Ok(Ok(o)) => {
                let mut o = o;
                // Only on a busy connection (see `busy` above; never after a login, which has
                // no previous command). Lingers on quiet connections (a monitoring client
                // pinging 4096 of them in turn, a burst of connects) would each hold a thread
                // for nothing, and a lingering listener has a stand-in created.
                if o == Outcome::Continue && busy {
                    match self.linger(gid, &e, conn, exec) {
                        Linger::Run => {
                            drop(guard);
                            return Some(e);
                        }
                        Linger::Abandoned(ready) => {
                            *lingered = true;
                            if ready {
                                o = Outcome::Yield;
                            }
                        }
                        Linger::No => {}
                    }
                }
                // Asked only now: a lingered command is never queued or armed, so it needs
                // neither (and the handler may have to look them up per call).
                let asked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    (h.priority(conn), h.idle_deadline(conn))
                }));
                // A connection that was not busy (its command came long after the previous
                // one: a loaded group, or a quiet client) will not linger next time either:
                // its socket may stay armed edge-triggered. A busy one stays one-shot, so that
                // its next linger needs no disarm.
                let edge = !busy && h.reads_to_end();
                match asked {
                    Ok((hint, deadline)) => self.rearm(&e, o, hint, deadline, edge),
                    Err(_) => Err(CloseReason::Panicked),
                }
            }
            Ok(Err(r)) => Err(r),
            Err(_) => Err(CloseReason::Panicked),
        };
        if let Err(reason) = result {
            let c = guard.take().expect("present");
            self.close_entry(&e, c, reason);
        }
        None
    }

    /// The low-concurrency fast path: after a command, if the group may (see
    /// [`GroupCore::linger_begin`]), watch this connection's socket alone for up to
    /// `linger_us` (see [`Linger`] for the outcomes). On [`Linger::Run`] the next command is
    /// there (or the peer hung up) and the connection was never re-armed. Records the execution
    /// time `exec` under the group lock it takes anyway.
    fn linger(
        self: &Arc<Self>,
        gid: usize,
        e: &Arc<ConnEntry<H::Conn>>,
        conn: &mut H::Conn,
        exec: &mut Option<Duration>,
    ) -> Linger {
        let budget = self.linger_us.load(Ordering::Relaxed);
        if budget == 0 || self.is_shutdown() {
            return Linger::No;
        }
        let size = self.size.load(Ordering::SeqCst);
        {
            let m = lock(&e.meta);
            // Stolen entries run on another group's worker; a resize moves the connection at
            // its re-arm; a KILL closes it there.
            if m.group != gid || (e.id % size as u64) as usize != gid || m.killed {
                return Linger::No;
            }
        }
        {
            let mut inner = self.groups[gid].lock();
            if let Some(d) = exec.take() {
                inner.core.meter.note_exec(d);
                if self.histograms.load(Ordering::Relaxed) {
                    let _ = inner.exec_hist.record(us(d));
                }
            }
            // The group's listener may be this very thread (it executed the event itself):
            // pass the role to an idle worker, or create one (the group stays within its
            // connections + 1 threads), so the other connections stay watched. A created thread
            // is not the listener yet: this command goes the normal way, the next ones linger.
            // Once every busy connection has a lingering worker the hand-offs stop: one thread
            // per connection, which the group can afford while nothing queues.
            let max_lingering = self.linger_threads.load(Ordering::Relaxed);
            if !inner.core.listener && inner.core.may_linger(max_lingering) {
                self.provide_listener(gid, &mut inner.core);
            }
            if !inner.core.linger_begin(max_lingering) {
                return Linger::No;
            }
        }
        {
            let mut m = lock(&e.meta);
            m.lingering = true;
            // An edge-triggered socket would report the awaited command to the listener too
            // (a wake-up for nothing, and a requeue after it): disarm it first.
            if m.edge {
                // SAFETY: the fd stays open until `Handler::close` (see `rearm`).
                let fd = unsafe { BorrowedFd::borrow_raw(e.fd) };
                if let Some(p) = self.groups[m.group].poller.get() {
                    if p.modify(fd, Event::none(e.id as usize)).is_ok() {
                        m.edge = false;
                        self.groups[m.group].arms.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        // After setting `lingering`: either `shutdown` sees the flag and shuts the socket down
        // for reading, or we see its `shutdown` flag here.
        let ready = !self.is_shutdown()
            && std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.handler
                    .await_input(conn, Duration::from_micros(budget))
            }))
            .unwrap_or(false);
        let hit = ready && !self.is_shutdown();
        let killed = {
            let mut m = lock(&e.meta);
            m.lingering = false;
            m.killed
        };
        let mut inner = self.groups[gid].lock();
        if !inner.core.linger_end(hit && !killed, self.oversub(gid)) {
            return Linger::Abandoned(ready);
        }
        if self.histograms.load(Ordering::Relaxed) {
            let _ = inner.queue_hist.record(1);
        }
        Linger::Run
    }

    /// Puts a connection back to wait for its next event (migrating it to its new group after a
    /// resize), or queues it again on [`Outcome::Yield`] or when input arrived while it ran.
    /// `prefer_edge`: when its socket must be armed for input, arm it edge-triggered (it then
    /// stays armed, and the following commands settle without an `epoll_ctl`) rather than one-shot.
    fn rearm(
        self: &Arc<Self>,
        e: &Arc<ConnEntry<H::Conn>>,
        outcome: Outcome,
        hint: PrioHint,
        deadline: Option<Instant>,
        prefer_edge: bool,
    ) -> Result<(), CloseReason> {
        let mut m = lock(&e.meta);
        let killed = m.killed;
        if !m.phase.rearm(killed) {
            return Err(CloseReason::Killed);
        }
        if self.is_shutdown() {
            return Err(CloseReason::Shutdown);
        }
        m.wait = None;
        m.deadline = deadline;
        m.must_run = hint.must_run();
        m.holder = hint.holds_locks;
        // The session's own mode and tickets (session scope) win over the pool's globals.
        let full = hint
            .tickets
            .unwrap_or_else(|| self.tickets.load(Ordering::Relaxed));
        m.tickets = m.tickets.min(full);
        let mode = hint
            .mode
            .unwrap_or_else(|| match self.prio_mode.load(Ordering::Relaxed) {
                1 => HighPrioMode::Statements,
                2 => HighPrioMode::None,
                _ => HighPrioMode::Transactions,
            });
        m.prio = next_priority(mode, hint, &mut m.tickets, full);
        let size = self.size.load(Ordering::SeqCst);
        let target = (e.id % size as u64) as usize;
        let old = m.group;
        let next = match outcome {
            Outcome::Continue => Next::Input,
            Outcome::WantWrite => Next::Write,
            Outcome::Yield => Next::Again,
            Outcome::Close => return Err(CloseReason::Handler),
        };
        {
            let m = &mut *m;
            let edge_armed = m.edge && m.registered && old == target;
            let mut settle = m.phase.settle(next, edge_armed, &mut m.pending);
            if settle == Settle::Idle && peer_hung_up(e.fd) {
                // The handler's last read came back short, which says nothing of an end of
                // file behind the data: `recv` stops at the peer's FIN and reports it only on
                // the next call, and a FIN that arrived with the data (before their one report
                // was collected) is reported no more. (Data is different: data that arrives
                // after a read is reported again, to a listener that finds the connection
                // running or idle.) One `poll(2)` for a hang-up, far cheaper than the re-arm
                // it replaces, decides: queue it again, and the next run reads the end of file.
                m.phase = Phase::Queued;
                settle = Settle::Requeue;
            }
            match settle {
                Settle::Requeue => {
                    if next == Next::Input {
                        self.groups[old]
                            .edge_requeues
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    let (gid, p, must, holder) = (m.group, m.prio, m.must_run, m.holder);
                    let mut inner = self.groups[gid].lock();
                    inner.core.push_placed(
                        (e.clone(), Action::Event),
                        p,
                        must,
                        holder,
                        Instant::now(),
                    );
                    self.after_queue(gid, &mut inner.core);
                    return Ok(());
                }
                Settle::Idle => {
                    self.groups[old].edge_idles.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Settle::Arm => {}
            }
        }
        // SAFETY: the fd stays open until `Handler::close`, which only runs after `close_entry`
        // deleted it from epoll.
        let fd = unsafe { BorrowedFd::borrow_raw(e.fd) };
        if old != target && m.registered {
            if let Some(p) = self.groups[old].poller.get() {
                let _ = p.delete(fd);
            }
            m.registered = false;
            m.edge = false;
        }
        let key = e.id as usize;
        let edge = prefer_edge && outcome != Outcome::WantWrite;
        let (ev, mode) = if outcome == Outcome::WantWrite {
            (Event::writable(key), PollMode::Oneshot)
        } else if edge {
            (Event::readable(key), PollMode::Edge)
        } else {
            (Event::readable(key), PollMode::Oneshot)
        };
        m.group = target;
        m.writable = outcome == Outcome::WantWrite;
        m.phase = Phase::Idle;
        let poller = self.groups[target]
            .poller()
            .map_err(|_| CloseReason::PollError)?;
        let r = if m.registered {
            poller.modify_with_mode(fd, ev, mode)
        } else {
            // SAFETY: as above; the fd is deleted from this poller before it is closed.
            unsafe { poller.add_with_mode(e.fd, ev, mode) }
        };
        self.groups[target].arms.fetch_add(1, Ordering::Relaxed);
        if let Err(err) = r {
            tracing::warn!(conn = e.id, error = %err, "thread pool could not arm a socket");
            m.phase = Phase::Running;
            m.group = old;
            m.edge = false;
            return Err(CloseReason::PollError);
        }
        m.registered = true;
        m.edge = edge;
        if old != target {
            {
                let mut o = self.groups[old].lock();
                o.core.connections = o.core.connections.saturating_sub(1);
            }
            if let Some(p) = self.groups[old].poller.get() {
                let _ = p.notify();
            }
            let mut t = self.groups[target].lock();
            t.core.connections += 1;
            t.core.counters.migrations_in += 1;
            if t.core.threads == 0 {
                self.wake_or_create(target, &mut t.core, Reason::Normal);
            }
        }
        Ok(())
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
        }
    }
}
