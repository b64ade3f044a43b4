//! The per-group state machine, as plain data: no locks, no threads, no sockets.
//!
//! Everything a thread group decides — who may dequeue, who becomes the listener, whether to wake
//! an idle worker or create a thread, when a group is stalled — is a method on [`GroupCore`].
//! The pool wraps one `GroupCore` in the group's mutex and performs the side effects (spawning,
//! condvar signals, epoll) that a method's return value asks for. Keeping the decisions pure makes
//! them testable deterministically (the unit tests below) and model-checkable with loom
//! (`tests` in `crate::model`), while the pool code stays a thin shell.
//!
//! ## Thread accounting (the invariant)
//!
//! Every thread of a group is in exactly one of five roles, and under the group lock
//! `threads == active + waiting + lingering + idle.len() + listener as usize` holds at all times:
//!
//! * **active** — running a connection or looking for work, and not inside a reported wait;
//! * **waiting** — running a connection that reported a wait (`shoal_wait::wait_begin`);
//! * **lingering** — just answered a connection and watches its socket alone for the next
//!   command (the low-concurrency fast path, see [`GroupCore::linger_begin`]);
//! * **idle** — asleep on its own condvar in the LIFO idle list;
//! * **listener** — blocked in the group's epoll.
//!
//! A waker moves a worker from `idle` to `active` itself (before the woken thread runs), and a
//! new thread is counted `active` from the moment it is decided, so the counts never lag behind.
//!
//! ## Concurrency limit
//!
//! `cap = 1 + oversubscribe`. A worker (itself counted active) may dequeue when the *other*
//! active workers are fewer than `cap`, or the group is stalled. The one exception: a thread
//! created past `max_threads` for a lock holder (`force_create`) takes the first `must_run` entry
//! regardless of the cap (see the crate essay on the lock-holder guarantee).
//!
//! ## Thread creation throttling
//!
//! [`throttle_interval`]: no delay while the group has fewer than `2 + oversubscribe` threads (the
//! active cap plus a listener); then 50 ms below 8 threads, 100 ms below 16, 200 ms from 16 on, but
//! never more than one stall limit (so a stall tick can always add a thread). When the group has
//! no active thread at all, creation is never throttled (everyone is blocked).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use shoal_wait::WaitKind;

use crate::{HighPrioMode, PrioHint, SessionPriority};

/// Where a connection is in its life. The rule that keeps events, KILL and timeouts from
/// running a connection twice: only the party that moves it out of `Idle` ([`Phase::claim`]) may
/// queue it; the worker that runs it is the only one that moves it back ([`Phase::rearm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Armed in epoll, waiting for the client.
    Idle,
    /// In a queue (or about to be pushed by its claimant).
    Queued,
    /// A worker runs it.
    Running,
    /// Removed from the pool.
    Closed,
}

/// What `kill` must do, from [`Phase::kill`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillStep {
    /// It was idle and is now claimed: queue a KILL entry (high).
    QueueKill,
    /// It is queued: move its entry to the high queue; the worker closes it instead of running.
    Expedite,
    /// It is running: the worker closes it when the handler returns.
    AfterRun,
    /// Already closed.
    Gone,
}

impl Phase {
    /// Claims an idle connection for queueing; `false` if someone else already did.
    pub fn claim(&mut self) -> bool {
        if *self == Phase::Idle {
            *self = Phase::Queued;
            true
        } else {
            false
        }
    }

    /// `kill`: marks the connection killed and says what to do.
    pub fn kill(&mut self, killed: &mut bool) -> KillStep {
        if *self == Phase::Closed {
            return KillStep::Gone;
        }
        *killed = true;
        match self {
            Phase::Idle => {
                *self = Phase::Queued;
                KillStep::QueueKill
            }
            Phase::Queued => KillStep::Expedite,
            _ => KillStep::AfterRun,
        }
    }

    /// The worker finished a command: re-arm (`true`), or close it because it was killed
    /// meanwhile (`false`, the phase becomes `Closed`).
    pub fn rearm(&mut self, killed: bool) -> bool {
        if killed {
            *self = Phase::Closed;
            false
        } else {
            *self = Phase::Idle;
            true
        }
    }

    /// The group's epoll reported the connection (the listener, or the timer's rescue poll):
    /// claims it when idle (`true`: the caller queues it, as [`Phase::claim`]). A one-shot
    /// socket only reports while idle. An edge-triggered one (`edge`) reports whenever input
    /// arrives, also while the connection is queued or running, and such a report must not be
    /// lost: no other will come for the same bytes. It sets `pending`, which the worker reads
    /// in [`Phase::settle`].
    pub fn report(&mut self, edge: bool, pending: &mut bool) -> bool {
        if self.claim() {
            return true;
        }
        if edge && matches!(self, Phase::Queued | Phase::Running) {
            *pending = true;
        }
        false
    }

    /// The worker finished a command: decides how the connection waits for its next one.
    /// `next` is what the handler asked for; `edge_armed`: the socket is still registered
    /// edge-triggered for readability in the group it belongs to. See [`Settle`].
    ///
    /// `pending` (an edge report that found the connection queued or running) is consumed only
    /// here, and only by a requeue after a command that ended wanting input: a report means
    /// input arrived after the handler's last read, and only a run that reads the socket to
    /// the end ([`Next::Input`]) has certainly seen it. A yield ([`Next::Again`]) queues the
    /// connection for input the handler already holds, and that run may never read the
    /// socket: the report must outlive it. (Clearing it there stranded a client's next input,
    /// or its COM_QUIT and FIN, in a socket whose only report was gone; issue 15.) A write
    /// ([`Next::Write`]) keeps it too: the run after the write is again not known to read.
    pub fn settle(&mut self, next: Next, edge_armed: bool, pending: &mut bool) -> Settle {
        match next {
            Next::Again => {
                *self = Phase::Queued;
                Settle::Requeue
            }
            Next::Write => Settle::Arm,
            Next::Input => {
                if std::mem::take(pending) {
                    *self = Phase::Queued;
                    Settle::Requeue
                } else if edge_armed {
                    *self = Phase::Idle;
                    Settle::Idle
                } else {
                    Settle::Arm
                }
            }
        }
    }
}

/// What a handler's command left the connection wanting (the pool's `Outcome`, as far as the
/// phase machine cares).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// More input from the socket: its handler read the socket to the end, or the socket is
    /// armed one-shot, which reports input already there.
    Input,
    /// Writability: the socket's send buffer is full.
    Write,
    /// Another run at once: the handler holds input it has not run yet (a yield).
    Again,
}

/// What [`Phase::settle`] decided for a connection after its command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// The phase is `Queued`: queue it again. Either the handler yielded, or input arrived
    /// while it was queued or running (an edge report found it busy): the next run reads the
    /// input, or finds none and settles.
    Requeue,
    /// Its socket stays armed edge-triggered and its input was read to the end: the phase is
    /// `Idle` and the next arrival reports it. No syscall.
    Idle,
    /// Arm the socket (one-shot, or a change of mode or group, or for writability: one
    /// `epoll_ctl`), then make it `Idle`. The phase is unchanged.
    Arm,
}

/// Queue index: high priority entries are always dequeued before low ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Prio {
    /// Login, KILL, timeouts, statements of sessions in a transaction (with tickets).
    High = 0,
    /// Everything else.
    Low = 1,
}

/// One queued unit of work.
#[derive(Debug)]
pub struct Queued<E> {
    /// The work item (in the pool: connection + action).
    pub item: E,
    /// When it was queued (for queueing-time statistics and kick-up).
    pub since: Instant,
    /// The connection holds locks or an open transaction: it may bypass the concurrency cap.
    pub must_run: bool,
    /// A row-lock holder in the high queue: placed ahead of the other high entries.
    pub holder: bool,
}

/// Event counters of one group (MariaDB's `THREAD_POOL_STATS` columns plus ours).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Threads created.
    pub thread_creations: u64,
    /// Threads created because the timer found the group stalled.
    pub thread_creations_due_to_stall: u64,
    /// Idle workers woken.
    pub wakes: u64,
    /// Idle workers woken because the timer found the group stalled.
    pub wakes_due_to_stall: u64,
    /// Creations refused or delayed by the throttling interval.
    pub throttles: u64,
    /// Timer ticks that found the group stalled.
    pub stalls: u64,
    /// Polls done by the listener.
    pub polls_by_listener: u64,
    /// Non-blocking polls done by the timer on a group without a listener.
    pub polls_by_worker: u64,
    /// Entries the listener executed itself.
    pub dequeues_by_listener: u64,
    /// Entries dequeued by workers.
    pub dequeues_by_worker: u64,
    /// Low entries moved to the high queue by the kick-up timer.
    pub prio_kickups: u64,
    /// Threads created beyond `max_threads`/throttling so a lock holder could run.
    pub creations_for_lock_holders: u64,
    /// Lock-holder entries taken first by a thread forced into existence for them.
    pub cap_bypasses: u64,
    /// Creations refused because `max_threads` was reached.
    pub creations_refused: u64,
    /// Connections that moved into this group after a resize.
    pub migrations_in: u64,
    /// Moves of a local connection into this group, its client's CPU's, that CPU affinity
    /// refused because the group already held its share of the connections and the slack
    /// (`pool::affinity::room_in`): the connection stayed where it was.
    pub steering_refused: u64,
    /// Entries this group's workers stole from other groups (`work_stealing`).
    pub steals: u64,
    /// Entries other groups' workers stole from this group.
    pub stolen: u64,
    /// Entries busy workers of other groups took from this group by age balancing (its next
    /// entry was older than theirs by more than `balance`).
    pub balanced: u64,
    /// Times a worker lingered on the connection it had just run.
    pub lingers: u64,
    /// Lingers that saw the next command arrive (and ran it without epoll or a queue).
    pub linger_hits: u64,
    /// `epoll_ctl` calls that armed, re-armed or disarmed a connection's socket (one-shot
    /// re-arms after a command, switches to and from edge-triggered, moves between groups).
    pub arms: u64,
    /// Commands after which the connection went back to waiting with no `epoll_ctl` (and no
    /// system call unless a report said the peer hung up): its socket stayed armed
    /// edge-triggered (see the crate doc, "Edge-triggered sockets").
    pub edge_idles: u64,
    /// Edge reports that found their connection queued or running: it was queued again after
    /// its command, for input that may already have been read with it.
    pub edge_requeues: u64,
    /// Idle connections whose socket was readable (or closed) but which epoll never reported:
    /// found by the timer's safety net and queued (see the crate doc, "The safety net"). Any
    /// value above zero is a bug in the pool or its handler's `reads_to_end` promise.
    pub recovered_events: u64,
    /// Reported waits by kind (index = `WaitKind::index`).
    pub waits: [u64; 12],
    /// The adaptive controller raised the group's cap (`Threadpool_adaptive_raises`).
    pub adaptive_raises: u64,
    /// The adaptive controller lowered the group's cap (`Threadpool_adaptive_lowers`).
    pub adaptive_lowers: u64,
    /// Probes the controller reversed (`Threadpool_adaptive_reverts`): a raise that did not
    /// pay or a lowering that cost throughput.
    pub adaptive_reverts: u64,
}

/// Why a wake-or-create was requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Ordinary: work queued, nobody active; a wait began; a listener is missing.
    Normal,
    /// The timer found the group stalled.
    Stall,
}

/// Inputs from pool-wide state for a creation decision.
#[derive(Debug, Clone, Copy)]
pub struct CreateCtx {
    /// Now.
    pub now: Instant,
    /// Threads in the whole pool.
    pub total_threads: usize,
    /// `thread_pool_max_threads`.
    pub max_threads: usize,
    /// `thread_pool_oversubscribe`.
    pub oversubscribe: usize,
    /// `thread_pool_stall_limit`.
    pub stall_limit: Duration,
}

/// What the caller must do after [`GroupCore::wake_or_create`].
#[derive(Debug, PartialEq, Eq)]
pub enum Decision<W> {
    /// Signal this worker (already moved from idle to active).
    Wake(W),
    /// Spawn a thread for the group (already counted as active).
    Create,
    /// Too soon after the previous creation.
    Throttled,
    /// `max_threads` reached, or more threads than connections.
    Refused,
}

/// What the listener must do with the events it just queued.
#[derive(Debug, PartialEq, Eq)]
pub enum AfterPoll<E> {
    /// Execute this entry itself (it is no longer the listener, and is active again).
    Execute(E),
    /// Stay listener; the queue holds the events.
    Listen,
}

/// The queue for a connection's next event (Percona's `high_prio_mode` and tickets):
/// `Statements` → high; `None` → low; `Transactions` → high while the session is in a
/// transaction or holds locks and has tickets left (each high placement spends one); going low
/// refills the tickets to `full`.
///
/// A session priority of `High` or `Low` (MariaDB `thread_pool_priority`) overrides the mode and
/// spends no tickets.
pub fn next_priority(mode: HighPrioMode, hint: PrioHint, tickets: &mut u64, full: u64) -> Prio {
    match hint.priority {
        SessionPriority::High => return Prio::High,
        SessionPriority::Low => return Prio::Low,
        SessionPriority::Auto => {}
    }
    match mode {
        HighPrioMode::Statements => Prio::High,
        HighPrioMode::None => Prio::Low,
        HighPrioMode::Transactions => {
            if hint.must_run() && *tickets > 0 {
                *tickets -= 1;
                Prio::High
            } else {
                *tickets = full;
                Prio::Low
            }
        }
    }
}

/// The throttling interval for a group with `threads` threads (see the module doc).
pub fn throttle_interval(threads: usize, oversubscribe: usize, stall_limit: Duration) -> Duration {
    let tier = if threads < 2 + oversubscribe {
        return Duration::ZERO;
    } else if threads < 8 {
        Duration::from_millis(50)
    } else if threads < 16 {
        Duration::from_millis(100)
    } else {
        Duration::from_millis(200)
    };
    tier.min(stall_limit)
}

/// The state of one thread group (see the module doc).
#[derive(Debug)]
pub struct GroupCore<E, W> {
    /// `queues[Prio::High as usize]` and `queues[Prio::Low as usize]`, FIFO.
    pub queues: [VecDeque<Queued<E>>; 2],
    /// Idle workers, most recently idle last (LIFO).
    pub idle: Vec<W>,
    /// A thread is blocked in the group's epoll.
    pub listener: bool,
    /// All threads of the group.
    pub threads: usize,
    /// Threads running or looking for work, outside reported waits.
    pub active: usize,
    /// Threads inside a reported wait.
    pub waiting: usize,
    /// Of `waiting`, the threads inside a disk read ([`WaitKind::DiskIo`]): they keep their
    /// slot as far as waking another worker goes (see [`GroupCore::listener_wants_worker`]).
    pub waiting_disk: usize,
    /// Threads lingering on the socket of the connection they just ran.
    pub lingering: usize,
    /// Connections assigned to this group.
    pub connections: usize,
    /// The timer found the queue stuck: workers may dequeue past the cap until the next dequeue.
    pub stalled: bool,
    /// Something was dequeued since the previous timer tick.
    pub dequeued_since_tick: bool,
    /// The listener saw events since the previous timer tick.
    pub io_since_tick: bool,
    /// Queued entries with `must_run`.
    pub must_run_queued: usize,
    /// Row-lock holders at the front of the high queue (`queues[0][..holders_high]`).
    ///
    /// Why: in `transactions` mode every statement of an open transaction is high, so under
    /// heavy transactional load (thousands of sessions, all inside BEGIN ... COMMIT) the high
    /// queue is as long as the low one used to be, and a session holding row locks waits its
    /// turn behind sessions that hold none, while others block on its locks and pile up as
    /// waiting threads. Holders first keeps lock hold times near their execution time.
    pub holders_high: usize,
    /// Threads forced into existence for lock holders whose holder entry is not taken yet.
    pub forced_pending: usize,
    /// When this group last created a thread.
    pub last_creation: Option<Instant>,
    /// The pool is shutting down.
    pub shutdown: bool,
    /// Event counters.
    pub counters: Counters,
    /// What the adaptive controller measures, accumulated since its last decision
    /// (`elapsed` and `queued` are filled in by the timer when it takes the sample).
    pub meter: crate::adapt::Sample,
    /// The queue was non-empty at the stall sampler's previous look ([`GroupCore::sample_queued`]).
    pub queued_at_sample: bool,
    /// The queue became empty (its last entry was taken) since the stall sampler's previous look.
    pub emptied_since_sample: bool,
}

impl<E, W> Default for GroupCore<E, W> {
    fn default() -> Self {
        GroupCore {
            queues: [VecDeque::new(), VecDeque::new()],
            idle: Vec::new(),
            listener: false,
            threads: 0,
            active: 0,
            waiting: 0,
            waiting_disk: 0,
            lingering: 0,
            connections: 0,
            stalled: false,
            dequeued_since_tick: false,
            io_since_tick: false,
            must_run_queued: 0,
            holders_high: 0,
            forced_pending: 0,
            last_creation: None,
            shutdown: false,
            counters: Counters::default(),
            meter: Default::default(),
            queued_at_sample: false,
            emptied_since_sample: false,
        }
    }
}

impl<E, W> GroupCore<E, W> {
    /// Entries in both queues.
    pub fn queued(&self) -> usize {
        self.queues[0].len() + self.queues[1].len()
    }

    /// Whether the thread accounting invariant holds.
    pub fn invariant_holds(&self) -> bool {
        self.threads
            == self.active
                + self.waiting
                + self.lingering
                + self.idle.len()
                + usize::from(self.listener)
            && self.waiting_disk <= self.waiting
    }

    /// Appends an entry to a queue.
    pub fn push(&mut self, item: E, prio: Prio, must_run: bool, now: Instant) {
        self.push_placed(item, prio, must_run, false, now);
    }

    /// Queues an entry; a row-lock `holder` going to the high queue is placed after the
    /// holders already there and before every other entry (see [`GroupCore::holders_high`]).
    pub fn push_placed(&mut self, item: E, prio: Prio, must_run: bool, holder: bool, now: Instant) {
        if must_run {
            self.must_run_queued += 1;
        }
        let holder = holder && prio == Prio::High;
        let e = Queued {
            item,
            since: now,
            must_run,
            holder,
        };
        if holder {
            self.queues[0].insert(self.holders_high, e);
            self.holders_high += 1;
        } else {
            self.queues[prio as usize].push_back(e);
        }
    }

    fn pop_at(&mut self, q: usize, i: usize) -> Option<Queued<E>> {
        let e = self.queues[q].remove(i)?;
        if q == 0 && i < self.holders_high {
            debug_assert!(e.holder);
            self.holders_high -= 1;
        }
        if e.must_run {
            self.must_run_queued -= 1;
            self.forced_pending = self.forced_pending.min(self.must_run_queued);
        }
        if self.queued() == 0 {
            self.emptied_since_sample = true;
        }
        Some(e)
    }

    /// The stall sampler's look at this group, once per sample interval: whether the queue
    /// was non-empty during the *whole* interval since the previous look (non-empty then, never
    /// emptied since, non-empty now). A busy queue that drains and refills counts only if it
    /// never reached zero. Resets the interval.
    pub fn sample_queued(&mut self) -> bool {
        let now = self.queued() > 0;
        let whole = self.queued_at_sample && !self.emptied_since_sample && now;
        self.queued_at_sample = now;
        self.emptied_since_sample = false;
        whole
    }

    /// A worker (counted active) looks for work. Returns the entry and its queueing time.
    pub fn take_work(&mut self, oversubscribe: usize, now: Instant) -> Option<(E, Duration)> {
        let cap = 1 + oversubscribe;
        let others = self.active.saturating_sub(1);
        let entry = if self.forced_pending > 0 && self.must_run_queued > 0 {
            // A thread was forced into existence for a lock holder: run the holder first.
            self.forced_pending -= 1;
            let found = (0..2).find_map(|q| {
                self.queues[q]
                    .iter()
                    .position(|e| e.must_run)
                    .map(|i| (q, i))
            });
            let (q, i) = found?;
            self.counters.cap_bypasses += 1;
            self.pop_at(q, i)
        } else if others < cap || self.stalled {
            if !self.queues[0].is_empty() {
                self.pop_at(0, 0)
            } else {
                self.pop_at(1, 0)
            }
        } else {
            None
        }?;
        self.stalled = false;
        self.dequeued_since_tick = true;
        self.counters.dequeues_by_worker += 1;
        let qt = now.saturating_duration_since(entry.since);
        self.meter.note_dequeue(qt);
        Some((entry.item, qt))
    }

    /// When the entry [`take_work`](Self::take_work) would pop next was queued (`None`: both
    /// queues are empty). Published for age balancing between groups.
    pub fn next_since(&self) -> Option<Instant> {
        self.queues[0]
            .front()
            .or_else(|| self.queues[1].front())
            .map(|e| e.since)
    }

    /// When the low-priority queue's next entry was queued (`None`: it is empty). Published
    /// for age balancing: the high queue's entries are mostly an open transaction's statements,
    /// which stay with their group, and while any is queued it hides the low queue's head from
    /// [`next_since`](Self::next_since), where the longest waits are (a new transaction's first
    /// statement waits behind every open transaction's).
    pub fn low_since(&self) -> Option<Instant> {
        self.queues[1].front().map(|e| e.since)
    }

    /// Whether a worker of this group may dequeue now (below the cap, or the group is stalled),
    /// with nothing forced ahead of the queue order (a lock holder's forced thread).
    pub fn may_dequeue(&self, oversubscribe: usize) -> bool {
        let others = self.active.saturating_sub(1);
        !(self.forced_pending > 0 && self.must_run_queued > 0)
            && (others < 1 + oversubscribe || self.stalled)
    }

    /// Age balancing: a busy worker of another group takes this group's next entry, queued at
    /// `since` or earlier (the thief saw it older than its own group's next entry). `None`
    /// when the next entry is younger by now (taken meanwhile) or is a lock holder's, which
    /// stays with its group (its forced thread may be on the way).
    /// With `low`, the entry is the low-priority queue's next one instead (see
    /// [`low_since`](Self::low_since)).
    pub fn take_older(&mut self, since: Instant, low: bool, now: Instant) -> Option<(E, Duration)> {
        let q = if low || self.queues[0].is_empty() {
            1
        } else {
            0
        };
        let head = self.queues[q].front()?;
        if head.since > since || head.must_run {
            return None;
        }
        let e = self.pop_at(q, 0)?;
        self.dequeued_since_tick = true;
        self.counters.balanced += 1;
        let qt = now.saturating_duration_since(e.since);
        self.meter.note_dequeue(qt);
        Some((e.item, qt))
    }

    /// Whether a worker of another group should help: work is queued that this group cannot
    /// start now (at its cap and not stalled; its own idle workers may not start it either).
    pub fn wants_thief(&self, oversubscribe: usize) -> bool {
        self.queued() > 0
            && !self.stalled
            && self.active > oversubscribe
            && self.must_run_queued <= self.forced_pending
    }

    /// Work stealing: hands the next entry to a worker of another group, if this group cannot
    /// start it now (see [`GroupCore::wants_thief`]). Counts as progress for stall detection.
    pub fn steal(&mut self, oversubscribe: usize, now: Instant) -> Option<(E, Duration)> {
        if !self.wants_thief(oversubscribe) {
            return None;
        }
        let q = if self.queues[0].is_empty() { 1 } else { 0 };
        let e = self.pop_at(q, 0)?;
        self.dequeued_since_tick = true;
        self.counters.stolen += 1;
        let qt = now.saturating_duration_since(e.since);
        self.meter.note_dequeue(qt);
        Some((e.item, qt))
    }

    /// An active worker found no work and no listener: it becomes the listener.
    pub fn become_listener(&mut self) {
        debug_assert!(!self.listener);
        self.listener = true;
        self.active -= 1;
    }

    /// An active worker found no work: it goes to sleep in the idle list.
    pub fn become_idle(&mut self, w: W) {
        self.active -= 1;
        self.idle.push(w);
    }

    /// A thread of the group exits (it was active).
    pub fn exit_active(&mut self) {
        self.active -= 1;
        self.threads -= 1;
    }

    /// The listener returns from its poll with `events` (already claimed connections), each
    /// with its priority, `must_run` and `holder` flags. Queues them and decides who runs what.
    pub fn after_poll(
        &mut self,
        events: Vec<(E, Prio, bool, bool)>,
        dedicated: bool,
        oversubscribe: usize,
        now: Instant,
    ) -> AfterPoll<E> {
        self.counters.polls_by_listener += 1;
        if !events.is_empty() {
            self.io_since_tick = true;
        }
        // Execute itself when the queue was empty (saves a wake-up), or when nobody is active:
        // then the queued work is waiting for a thread the pool could not provide.
        let may_execute = self.queued() == 0 || self.active == 0;
        for (e, p, m, h) in events {
            self.push_placed(e, p, m, h, now);
        }
        if may_execute && self.queued() > 0 && !dedicated && self.active < 1 + oversubscribe {
            let q = if self.queues[0].is_empty() { 1 } else { 0 };
            if let Some(e) = self.pop_at(q, 0) {
                self.listener = false;
                self.active += 1;
                self.stalled = false;
                self.dequeued_since_tick = true;
                self.counters.dequeues_by_listener += 1;
                return AfterPoll::Execute(e.item);
            }
        }
        AfterPoll::Listen
    }

    /// Whether the listener that just took an event for itself should wake an idle worker to
    /// take over the listener role: only when the group is now at its cap, because then the
    /// running workers may stay busy long and events would otherwise go unseen until the timer
    /// notices the missing listener (one wake per event at the cap, none below it).
    pub fn needs_new_listener(&self, oversubscribe: usize) -> bool {
        !self.listener && self.active > oversubscribe && !self.idle.is_empty()
    }

    /// Hands the listener role to the most recently idle worker, if the group has no listener.
    /// The worker goes straight from idle to listener (never counted active in between).
    pub fn hand_listener(&mut self) -> Option<W> {
        if self.listener {
            return None;
        }
        let w = self.idle.pop()?;
        self.listener = true;
        self.counters.wakes += 1;
        Some(w)
    }

    /// Whether the listener, after queueing (or a worker, after taking work with more
    /// queued), should wake or create a worker: work is queued and the group is under its cap,
    /// counting the workers inside a disk read as holding their slot.
    ///
    /// Why a disk read keeps its slot here: a read is short (tens of µs on an SSD), and the
    /// slot it frees is worth a wake-up only if no other worker would fill it. Woken for it,
    /// a parked worker ran one statement, and the reader, back before long, found the group
    /// over its cap and parked in turn: a wake and a park (two futex calls, two context
    /// switches and, on a VM, an interrupt between CPUs) for one statement's worth of overlap.
    /// At 2048 I/O-bound point-select clients that was 0.2 wake-ups a statement; counting the
    /// readers cut it to 0.02, the context switches a statement by a third, and raised
    /// throughput by a median 4 % over 7 paired rounds
    /// (docs/perf-log/2026-12-06-session-45-readers-keep-their-slot.md). The readers' slots are
    /// not lost: the workers already running take the queue's next entries as before
    /// ([`GroupCore::take_work`] counts only `active`), and [`GroupCore::wait_begin`] still
    /// wakes a worker when the last active one begins any wait with work queued (MariaDB's
    /// rule, and on a slow disk the way more readers come to overlap). The other waits (row
    /// locks, commits, sleeps) last as long as somebody else decides, and free their slot.
    pub fn listener_wants_worker(&self, oversubscribe: usize) -> bool {
        self.queued() > 0 && self.active + self.waiting_disk < 1 + oversubscribe
    }

    /// A running worker reports a wait. Returns whether a worker should be woken or created.
    pub fn wait_begin(&mut self, kind: WaitKind) -> bool {
        self.active -= 1;
        self.waiting += 1;
        if kind == WaitKind::DiskIo {
            self.waiting_disk += 1;
        }
        self.counters.waits[kind.index()] += 1;
        self.active == 0 && (self.queued() > 0 || !self.listener)
    }

    /// The wait of `kind` ended (the worker runs again; this may exceed the cap, as in
    /// MariaDB).
    pub fn wait_end(&mut self, kind: WaitKind) {
        if kind == WaitKind::DiskIo {
            self.waiting_disk -= 1;
        }
        self.waiting -= 1;
        self.active += 1;
    }

    /// A worker (active) that just ran a command asks to linger on that connection's socket.
    ///
    /// Allowed only when nobody is waiting for a slot (nothing queued), a listener watches the
    /// group's other connections, and fewer than `max_lingering` threads of the group already
    /// linger. Then giving this connection its thread for a moment costs nobody anything, and
    /// saves what the epoll round trip costs at low concurrency: the re-arm, the listener's
    /// wake-up and the hand-off between threads. The lingering thread is not active (it holds
    /// no slot) until [`GroupCore::linger_end`], which applies the concurrency cap.
    ///
    /// `max_lingering` bounds threads, not concurrency: a lingering thread is blocked on its
    /// socket. It is its own setting (`Config::linger_threads`), not `1 + oversubscribe`: with
    /// that bound, 32 busy connections on 2 groups had at most 8 lingering threads, the other
    /// commands paid the queued path, and the client-observed p99 was 3× one thread per
    /// connection's (docs/perf-log/2026-11-30-session-5-fourth-pass.md).
    pub fn linger_begin(&mut self, max_lingering: usize) -> bool {
        if !self.listener || !self.may_linger(max_lingering) {
            return false;
        }
        self.active -= 1;
        self.lingering += 1;
        self.counters.lingers += 1;
        true
    }

    /// Whether lingering is allowed, listener aside (see [`GroupCore::linger_begin`]).
    pub fn may_linger(&self, max_lingering: usize) -> bool {
        !self.shutdown && self.queued() == 0 && self.lingering < max_lingering
    }

    /// The linger ended (`readable`: the connection's next command arrived). Returns whether
    /// the worker may run that command at once, which makes it active again: only if nobody
    /// queued meanwhile (they came first: the connection then goes back through epoll and the
    /// queue) and the group is below its cap. Running it counts as progress for stall
    /// detection. Otherwise the worker stays counted `lingering` while it re-arms the
    /// connection, until [`GroupCore::linger_abandon`] under the lock where it looks for work,
    /// so that `active` never shows more than the cap.
    pub fn linger_end(&mut self, readable: bool, oversubscribe: usize) -> bool {
        let run = readable && self.queued() == 0 && self.active < 1 + oversubscribe;
        if run {
            self.lingering -= 1;
            self.active += 1;
            self.counters.linger_hits += 1;
            self.dequeued_since_tick = true;
        }
        run
    }

    /// A worker whose linger did not run the next command looks for work (active again).
    pub fn linger_abandon(&mut self) {
        self.lingering -= 1;
        self.active += 1;
    }

    /// An idle worker's sleep timed out: if it is still in the idle list it leaves the group and
    /// the caller's thread exits (`true`); otherwise it was woken meanwhile (`false`).
    pub fn idle_timed_out(&mut self, is_me: impl Fn(&W) -> bool) -> bool {
        if let Some(i) = self.idle.iter().position(is_me) {
            self.idle.remove(i);
            self.threads -= 1;
            true
        } else {
            false
        }
    }

    /// Wakes the most recently idle worker, or decides to create a thread.
    pub fn wake_or_create(&mut self, ctx: &CreateCtx, reason: Reason) -> Decision<W> {
        if let Some(w) = self.idle.pop() {
            self.active += 1;
            self.counters.wakes += 1;
            if reason == Reason::Stall {
                self.counters.wakes_due_to_stall += 1;
            }
            return Decision::Wake(w);
        }
        if self.threads > self.connections.max(1) {
            return Decision::Refused;
        }
        if ctx.total_threads >= ctx.max_threads && self.threads >= 2 {
            self.counters.creations_refused += 1;
            return Decision::Refused;
        }
        if self.active > 0 {
            let interval = throttle_interval(self.threads, ctx.oversubscribe, ctx.stall_limit);
            if let Some(last) = self.last_creation {
                if ctx.now.saturating_duration_since(last) < interval {
                    self.counters.throttles += 1;
                    return Decision::Throttled;
                }
            }
        }
        self.count_creation(ctx.now);
        if reason == Reason::Stall {
            self.counters.thread_creations_due_to_stall += 1;
        }
        Decision::Create
    }

    /// Creates a thread regardless of throttling and `max_threads`, because a `must_run` entry
    /// is queued and nothing else can run it.
    pub fn force_create(&mut self, now: Instant) -> bool {
        if self.must_run_queued <= self.forced_pending || !self.idle.is_empty() {
            return false;
        }
        self.count_creation(now);
        self.forced_pending += 1;
        self.counters.creations_for_lock_holders += 1;
        true
    }

    fn count_creation(&mut self, now: Instant) {
        self.threads += 1;
        self.active += 1;
        self.last_creation = Some(now);
        self.counters.thread_creations += 1;
    }

    /// Spawning the thread decided by [`Decision::Create`] failed: undo the accounting.
    pub fn creation_failed(&mut self) {
        self.threads -= 1;
        self.active -= 1;
    }

    /// Moves low entries older than `kickup` to the end of the high queue.
    pub fn kick_up(&mut self, kickup: Duration, now: Instant) {
        while let Some(front) = self.queues[1].front() {
            if now.saturating_duration_since(front.since) < kickup {
                break;
            }
            let e = self.queues[1].pop_front().expect("front exists");
            self.queues[0].push_back(e);
            self.counters.prio_kickups += 1;
        }
    }

    /// The timer's stall check: returns `(stalled_now, listener_missing)`; resets tick flags.
    pub fn tick(&mut self) -> (bool, bool) {
        let stalled = self.queued() > 0 && !self.dequeued_since_tick;
        if stalled {
            self.stalled = true;
            self.counters.stalls += 1;
        }
        let missing = !self.listener && !self.io_since_tick && self.connections > 0;
        self.dequeued_since_tick = false;
        self.io_since_tick = false;
        (stalled, missing)
    }

    /// Removes and returns every queued entry (shutdown).
    pub fn drain(&mut self) -> Vec<E> {
        self.must_run_queued = 0;
        self.holders_high = 0;
        self.forced_pending = 0;
        let mut out: Vec<E> = self.queues[0].drain(..).map(|q| q.item).collect();
        out.extend(self.queues[1].drain(..).map(|q| q.item));
        self.emptied_since_sample = true;
        out
    }
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;

    type G = GroupCore<u32, u32>;

    fn ctx(now: Instant) -> CreateCtx {
        CreateCtx {
            now,
            total_threads: 0,
            max_threads: 1000,
            oversubscribe: 0,
            stall_limit: Duration::from_millis(500),
        }
    }

    #[test]
    fn high_queue_first_and_cap() {
        let now = Instant::now();
        let mut g = G::default();
        g.threads = 2;
        g.active = 2;
        g.connections = 3;
        g.push(1, Prio::Low, false, now);
        g.push(2, Prio::High, false, now);
        // two active, cap 1: the caller may not dequeue
        assert!(g.take_work(0, now).is_none());
        g.active = 1;
        g.threads = 1;
        assert_eq!(g.take_work(0, now).map(|x| x.0), Some(2));
        assert_eq!(g.take_work(0, now).map(|x| x.0), Some(1));
        assert!(g.take_work(0, now).is_none());
        assert!(g.invariant_holds());
    }

    #[test]
    fn stalled_group_lifts_cap_until_next_dequeue() {
        let now = Instant::now();
        let mut g = G::default();
        g.threads = 2;
        g.active = 2;
        g.connections = 2;
        g.push(7, Prio::Low, false, now);
        g.push(8, Prio::Low, false, now);
        let (stalled, _) = g.tick();
        assert!(stalled && g.stalled);
        assert_eq!(g.take_work(0, now).map(|x| x.0), Some(7));
        assert!(!g.stalled);
        assert!(g.take_work(0, now).is_none());
    }

    #[test]
    fn forced_thread_runs_lock_holder_first() {
        let now = Instant::now();
        let mut g = G::default();
        g.threads = 2;
        g.active = 0;
        g.waiting = 2; // everyone blocked on the holder's lock
        g.connections = 4;
        g.push(1, Prio::Low, false, now);
        g.push(2, Prio::Low, true, now);
        let mut c = ctx(now);
        c.total_threads = 2;
        c.max_threads = 2;
        // in a transaction but no pressure: no bypass of the normal order
        assert_eq!(g.wake_or_create(&c, Reason::Normal), Decision::Refused);
        assert!(g.force_create(now));
        assert!(!g.force_create(now), "one forced thread per queued holder");
        assert_eq!(g.counters.creations_for_lock_holders, 1);
        assert_eq!(g.take_work(0, now).map(|x| x.0), Some(2));
        assert_eq!(g.counters.cap_bypasses, 1);
        assert_eq!((g.must_run_queued, g.forced_pending), (0, 0));
        assert!(g.invariant_holds());
        // a must_run entry does not bypass the cap by itself
        let mut h = G::default();
        h.threads = 3;
        h.active = 3;
        h.push(5, Prio::High, true, now);
        assert!(h.take_work(0, now).is_none());
    }

    #[test]
    fn listener_executes_only_when_queue_was_empty_and_under_cap() {
        let now = Instant::now();
        let mut g = G::default();
        g.threads = 1;
        g.connections = 2;
        g.listener = true;
        assert!(g.invariant_holds());
        let r = g.after_poll(
            vec![(1, Prio::Low, false, false), (2, Prio::Low, false, false)],
            false,
            0,
            now,
        );
        assert_eq!(r, AfterPoll::Execute(1));
        assert!(!g.listener && g.active == 1 && g.invariant_holds());
        // queue not empty now and a worker is active: a second listener poll only queues
        g.become_listener();
        g.threads += 1;
        g.active += 1;
        let r = g.after_poll(vec![(3, Prio::High, false, false)], false, 0, now);
        assert_eq!(r, AfterPoll::Listen);
        assert_eq!(g.queued(), 2);
        assert!(!g.listener_wants_worker(0), "at the cap");
        assert!(g.listener_wants_worker(1), "below the cap");
        // dedicated listener never executes
        let mut d = G::default();
        d.threads = 1;
        d.listener = true;
        assert_eq!(
            d.after_poll(vec![(1, Prio::Low, false, false)], true, 0, now),
            AfterPoll::Listen
        );
    }

    /// A worker inside a disk read keeps its slot for the wake-up decision; one waiting for a
    /// row lock (or anything else) frees it. The last active worker beginning either wait
    /// with work queued still asks for a worker.
    #[test]
    fn a_disk_read_keeps_its_slot_other_waits_free_it() {
        let now = Instant::now();
        for (kind, frees) in [
            (WaitKind::DiskIo, false),
            (WaitKind::RowLock, true),
            (WaitKind::Sleep, true),
        ] {
            let mut g = G::default();
            g.threads = 3;
            g.active = 2;
            g.listener = true;
            g.connections = 4;
            // Cap 2 (oversubscribe 1): both slots taken, one worker then waits.
            g.push(7, Prio::Low, false, now);
            assert!(!g.listener_wants_worker(1), "at the cap");
            assert!(!g.wait_begin(kind), "{kind:?}: another worker is active");
            assert!(g.invariant_holds());
            assert_eq!(g.listener_wants_worker(1), frees, "{kind:?}");
            // The other active worker waits too: nobody active, work queued.
            assert!(g.wait_begin(kind), "{kind:?}: the last active worker waits");
            g.wait_end(kind);
            g.wait_end(kind);
            assert_eq!((g.active, g.waiting, g.waiting_disk), (2, 0, 0));
            assert!(g.invariant_holds());
            assert!(!g.listener_wants_worker(1));
        }
    }

    #[test]
    fn wait_accounting_requests_worker_when_last_active_waits() {
        let now = Instant::now();
        let mut g = G::default();
        g.threads = 2;
        g.active = 1;
        g.listener = true;
        g.connections = 2;
        assert!(
            !g.wait_begin(WaitKind::Sleep),
            "listener present, queue empty"
        );
        g.wait_end(WaitKind::Sleep);
        g.push(5, Prio::Low, false, now);
        assert!(g.wait_begin(WaitKind::RowLock));
        assert_eq!(g.counters.waits[WaitKind::RowLock.index()], 1);
        assert!(g.invariant_holds());
        match g.wake_or_create(&ctx(now), Reason::Normal) {
            Decision::Create => {}
            d => panic!("expected Create, got {d:?}"),
        }
        assert!(g.invariant_holds());
    }

    #[test]
    fn creation_limits_and_throttling() {
        let now = Instant::now();
        let mut g = G::default();
        g.connections = 100;
        g.threads = 2;
        g.active = 2;
        let mut c = ctx(now);
        c.total_threads = 10;
        c.max_threads = 10;
        assert_eq!(g.wake_or_create(&c, Reason::Normal), Decision::Refused);
        // a group with fewer than 2 threads may always grow
        let mut h = G::default();
        h.connections = 5;
        h.threads = 1;
        h.active = 1;
        assert_eq!(h.wake_or_create(&c, Reason::Normal), Decision::Create);
        // throttling: third thread in a group with oversubscribe 0 waits 50 ms
        c.max_threads = 1000;
        assert_eq!(h.wake_or_create(&c, Reason::Normal), Decision::Throttled);
        c.now = now + Duration::from_millis(60);
        assert_eq!(h.wake_or_create(&c, Reason::Stall), Decision::Create);
        assert_eq!(h.counters.thread_creations_due_to_stall, 1);
        // idle workers are woken LIFO before anything is created
        h.become_idle(41);
        h.become_idle(42);
        assert_eq!(h.wake_or_create(&c, Reason::Normal), Decision::Wake(42));
        assert!(h.invariant_holds());
    }

    #[test]
    fn priority_modes_and_tickets() {
        let tx = PrioHint {
            in_transaction: true,
            ..Default::default()
        };
        let plain = PrioHint::default();
        let mut t = 2;
        let m = HighPrioMode::Transactions;
        assert_eq!(next_priority(m, tx, &mut t, 2), Prio::High);
        assert_eq!(next_priority(m, tx, &mut t, 2), Prio::High);
        assert_eq!(t, 0);
        assert_eq!(next_priority(m, tx, &mut t, 2), Prio::Low, "tickets spent");
        assert_eq!(t, 2, "refilled when going low");
        assert_eq!(next_priority(m, plain, &mut t, 2), Prio::Low);
        let mut z = 0;
        assert_eq!(
            next_priority(m, tx, &mut z, 0),
            Prio::Low,
            "0 tickets: no high queue"
        );
        assert_eq!(
            next_priority(HighPrioMode::Statements, plain, &mut t, 2),
            Prio::High
        );
        assert_eq!(next_priority(HighPrioMode::None, tx, &mut t, 2), Prio::Low);
        // thread_pool_priority overrides the mode and spends no tickets.
        let high = PrioHint {
            priority: SessionPriority::High,
            ..plain
        };
        let low_tx = PrioHint {
            priority: SessionPriority::Low,
            ..tx
        };
        let mut t = 2;
        assert_eq!(
            next_priority(HighPrioMode::None, high, &mut t, 2),
            Prio::High
        );
        assert_eq!(next_priority(m, low_tx, &mut t, 2), Prio::Low);
        assert_eq!(t, 2);
        assert!(
            low_tx.must_run(),
            "a low-priority lock holder keeps its guarantee"
        );
    }

    #[test]
    fn balancing_takes_only_an_entry_old_enough_and_not_a_forced_holder() {
        let t0 = Instant::now();
        let later = t0 + Duration::from_millis(10);
        let mut g = G::default();
        assert_eq!(g.next_since(), None);
        g.threads = 1;
        g.active = 1;
        g.push(1, Prio::Low, false, later);
        g.push(2, Prio::High, false, later + Duration::from_millis(5));
        // The next entry is the high one, whatever its age.
        assert_eq!(g.next_since(), Some(later + Duration::from_millis(5)));
        assert_eq!(g.low_since(), Some(later));
        assert!(
            g.take_older(later, false, later).is_none(),
            "younger than asked"
        );
        assert_eq!(
            g.take_older(later + Duration::from_millis(5), false, later)
                .map(|x| x.0),
            Some(2)
        );
        assert_eq!(g.take_older(later, false, later).map(|x| x.0), Some(1));
        assert_eq!(g.counters.balanced, 2);
        assert!(g.take_older(later, false, later).is_none(), "empty");
        assert_eq!(g.low_since(), None);
        // A lock holder's forced entry stays with its group.
        g.push(3, Prio::High, true, t0);
        assert!(g.take_older(later, false, later).is_none());
        // The low queue's entry, asked for as such, past the transaction's statement ahead of it.
        g.push(4, Prio::Low, false, later);
        assert!(
            g.take_older(later, false, later).is_none(),
            "the holder is next"
        );
        assert_eq!(g.take_older(later, true, later).map(|x| x.0), Some(4));
        assert_eq!(g.queues[0].len(), 1, "the holder stays");
        assert_eq!(g.counters.balanced, 3);
        // may_dequeue: the cap (1 + oversubscribe), the stall flag, a forced holder first.
        g.forced_pending = 0;
        assert!(g.may_dequeue(0), "alone under a cap of 1");
        g.active = 2;
        assert!(!g.may_dequeue(0));
        assert!(g.may_dequeue(1));
        g.stalled = true;
        assert!(g.may_dequeue(0));
        g.stalled = false;
        g.active = 1;
        g.forced_pending = 1;
        assert!(!g.may_dequeue(0), "the forced thread runs the holder first");
    }

    #[test]
    fn steal_only_what_the_group_cannot_start() {
        let now = Instant::now();
        let mut g = G::default();
        g.threads = 2;
        g.active = 1;
        g.listener = true;
        g.push(1, Prio::Low, false, now);
        g.push(2, Prio::High, false, now);
        assert_eq!(g.steal(0, now).map(|x| x.0), Some(2), "high first");
        assert_eq!(g.counters.stolen, 1);
        assert!(
            g.steal(1, now).is_none(),
            "below its cap the group runs it itself"
        );
        g.stalled = true;
        assert!(
            g.steal(0, now).is_none(),
            "a stalled group runs past its cap itself"
        );
        g.stalled = false;
        g.become_idle(5);
        g.threads += 1;
        g.active += 1;
        assert!(g.invariant_holds());
        assert_eq!(
            g.steal(0, now).map(|x| x.0),
            Some(1),
            "its idle workers are capped too"
        );
        assert!(g.steal(0, now).is_none(), "empty");
    }

    #[test]
    fn throttle_tiers() {
        let s = Duration::from_millis(500);
        assert_eq!(throttle_interval(3, 3, s), Duration::ZERO);
        assert_eq!(throttle_interval(5, 3, s), Duration::from_millis(50));
        assert_eq!(throttle_interval(8, 3, s), Duration::from_millis(100));
        assert_eq!(throttle_interval(16, 3, s), Duration::from_millis(200));
        assert_eq!(
            throttle_interval(16, 3, Duration::from_millis(30)),
            Duration::from_millis(30)
        );
    }

    #[test]
    fn listener_handoff_skips_active() {
        let mut g = G::default();
        g.threads = 2;
        g.active = 2;
        g.become_idle(3);
        assert_eq!(g.hand_listener(), Some(3));
        assert!(g.listener && g.active == 1 && g.invariant_holds());
        g.become_idle(4);
        assert_eq!(g.hand_listener(), None, "there is a listener already");
    }

    #[test]
    fn kick_up_moves_old_low_entries() {
        let t0 = Instant::now();
        let mut g = G::default();
        g.push(1, Prio::Low, false, t0);
        g.push(2, Prio::Low, false, t0 + Duration::from_millis(900));
        g.kick_up(Duration::from_millis(500), t0 + Duration::from_millis(1000));
        assert_eq!(g.queues[0].len(), 1);
        assert_eq!(g.queues[0][0].item, 1);
        assert_eq!(g.counters.prio_kickups, 1);
    }

    #[test]
    fn lock_holders_go_first_in_the_high_queue_fifo_among_themselves() {
        let now = Instant::now();
        let mut g = G::default();
        g.push_placed(1, Prio::High, true, false, now);
        g.push_placed(2, Prio::High, true, true, now);
        g.push_placed(3, Prio::Low, false, false, now);
        g.push_placed(4, Prio::High, true, true, now);
        // A holder that ran out of tickets (low) is no holder: plain FIFO in the low queue.
        g.push_placed(5, Prio::Low, true, true, now);
        g.push_placed(6, Prio::High, true, false, now);
        assert_eq!(g.holders_high, 2);
        let order: Vec<u32> = g.queues[0].iter().map(|e| e.item).collect();
        assert_eq!(order, [2, 4, 1, 6]);
        g.threads = 1;
        g.active = 1;
        let mut got = Vec::new();
        while let Some((e, _)) = g.take_work(3, now) {
            got.push(e);
        }
        assert_eq!(got, [2, 4, 1, 6, 3, 5]);
        assert_eq!(g.holders_high, 0);
        // Removal from the middle (a forced thread taking the first must_run entry) keeps the
        // holder count right.
        g.push_placed(7, Prio::High, false, false, now);
        g.push_placed(8, Prio::High, true, true, now);
        g.forced_pending = 1;
        assert_eq!(g.take_work(0, now).map(|x| x.0), Some(8));
        assert_eq!(g.holders_high, 0);
        g.push_placed(9, Prio::High, true, true, now);
        assert_eq!(
            g.queues[0].iter().map(|e| e.item).collect::<Vec<_>>(),
            [9, 7]
        );
        assert_eq!(g.drain(), [9, 7]);
        assert_eq!(g.holders_high, 0);
    }

    #[test]
    fn linger_only_when_nobody_waits_and_within_bounds() {
        let mut g: GroupCore<u32, u32> = GroupCore::default();
        g.threads = 2;
        g.active = 1;
        g.listener = true;
        g.connections = 100;
        // Nothing queued, a listener: linger (the connection count does not matter).
        assert!(g.linger_begin(4));
        assert_eq!((g.active, g.lingering), (0, 1));
        assert!(g.invariant_holds());
        assert!(g.linger_end(true, 3));
        assert_eq!((g.active, g.lingering), (1, 0));
        assert_eq!((g.counters.lingers, g.counters.linger_hits), (1, 1));
        assert!(g.invariant_holds());
        // A timeout is not a hit; the worker stays lingering until it looks for work.
        assert!(g.linger_begin(4));
        assert!(!g.linger_end(false, 3));
        assert_eq!((g.active, g.lingering), (0, 1));
        g.linger_abandon();
        assert_eq!((g.active, g.lingering), (1, 0));
        // Work queued meanwhile: it came first, the lingering connection goes the normal way.
        assert!(g.linger_begin(4));
        g.push(7, Prio::Low, false, Instant::now());
        assert!(!g.linger_end(true, 3));
        g.linger_abandon();
        // Work queued: run it instead of lingering.
        assert!(!g.linger_begin(4));
        g.queues[1].clear();
        // At most `max_lingering` threads linger, whatever the concurrency cap: two may linger
        // under a cap of one active thread, a third may not.
        assert_eq!((g.threads, g.active), (2, 1));
        assert!(g.linger_begin(1));
        assert!(!g.linger_begin(1));
        assert!(g.linger_end(true, 0));
        g.threads += 2;
        g.active += 2;
        assert!(g.linger_begin(2));
        assert!(g.linger_begin(2));
        assert!(!g.linger_begin(2));
        assert_eq!((g.active, g.lingering), (1, 2));
        // Both commands arrive: one runs (the cap of 1 + 0 has room once the active worker is
        // gone), the other goes the normal way.
        g.active -= 1;
        g.threads -= 1;
        assert!(g.linger_end(true, 0));
        assert!(!g.linger_end(true, 0));
        g.linger_abandon();
        g.active -= 1;
        g.threads -= 1;
        assert_eq!((g.threads, g.active, g.lingering), (2, 1, 0));
        assert!(g.invariant_holds());
        // The cap is full when the linger ends (another worker became active): the normal
        // way, and `active` never exceeds the cap.
        assert!(g.linger_begin(1));
        g.active += 1;
        g.threads += 1;
        assert!(!g.linger_end(true, 0));
        assert_eq!(g.active, 1);
        g.active -= 1;
        g.threads -= 1;
        g.linger_abandon();
        // No listener: this worker must become it.
        g.listener = false;
        g.threads -= 1;
        assert!(!g.linger_begin(4));
        g.listener = true;
        g.threads += 1;
        g.shutdown = true;
        assert!(!g.linger_begin(4));
        assert_eq!((g.counters.lingers, g.counters.linger_hits), (7, 3));
        assert!(g.invariant_holds());
    }

    #[test]
    fn stall_sampler_counts_only_a_queue_never_empty_through_the_interval() {
        let mut g = G::default();
        let t = Instant::now();
        assert!(!g.sample_queued(), "empty");
        g.push(1, Prio::Low, false, t);
        assert!(!g.sample_queued(), "queued only since this interval");
        assert!(g.sample_queued(), "queued through a whole interval");
        g.push(2, Prio::Low, false, t);
        assert!(g.take_work(0, t).is_some());
        assert!(g.sample_queued(), "taken from, never empty");
        assert!(g.take_work(0, t).is_some());
        g.push(3, Prio::High, false, t);
        assert!(
            !g.sample_queued(),
            "emptied and refilled within the interval"
        );
        assert!(g.sample_queued());
        g.drain();
        assert!(!g.sample_queued(), "drained");
    }

    #[test]
    fn idle_timeout_vs_wake_race() {
        let mut g = G::default();
        g.threads = 1;
        g.active = 1;
        g.connections = 1;
        g.become_idle(9);
        let now = Instant::now();
        assert_eq!(
            g.wake_or_create(&ctx(now), Reason::Normal),
            Decision::Wake(9)
        );
        // the sleeper's timeout fires after it was woken: it must not exit
        assert!(!g.idle_timed_out(|w| *w == 9));
        assert_eq!(g.threads, 1);
        g.become_idle(9);
        assert!(g.idle_timed_out(|w| *w == 9));
        assert_eq!(g.threads, 0);
        assert!(g.invariant_holds());
    }
}
