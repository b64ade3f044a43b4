//! A worker thread: its loop, the accounting of its reported waits, and lingering.
//!
//! The rules (when a worker may dequeue, when it brings in another, when it exits) are the
//! crate doc's "Concurrency limit", "Threads" and "Lingering", decided by [`GroupCore`]; this
//! file is the thread that asks for those decisions and carries them out.
//!
//! ## The loop
//!
//! [`Shared::worker_main`] installs an [`Observer`] as the thread's `shoal_wait` observer, then
//! alternates two calls until the first returns `None`:
//!
//! * `get_event` looks for the next entry, under its group's lock, in this order: shutdown
//!   (exit); a steal, when it was woken as a thief; age balancing; its own queue, if the group
//!   is under its cap or stalled (then one more worker if more is queued); exit if a resize
//!   retired its group; a steal before sleeping; the listener role if the group has none
//!   ([`listener`]); exit if the pool is above `max_threads`; otherwise it parks. Why each
//!   step is where it is: the crate doc's "Work stealing", "Balancing", "Concurrency limit"
//!   and "Threads"; the order is the code's, here.
//! * `run` runs one entry (login, command, kill, timeout) with the group lock released. A
//!   handler panic costs the connection, not the worker: it is caught, any wait left open is
//!   ended, and the connection is closed with [`CloseReason::Panicked`]. After a command the
//!   worker may linger on the connection (`linger`); otherwise it re-arms it
//!   ([`Shared::rearm`]), which may queue it again.
//!
//! ## Parking and waking without a lost wake-up
//!
//! A parked worker sleeps on the condvar of its own [`WorkerSlot`], so exactly one thread wakes
//! (the idle list is LIFO: the most recently parked, cache-warm worker goes first). The waker
//! holds the group lock, takes the worker out of the idle list (the core counts it active or
//! listening at once, so no second waker picks it) and sets the slot's `wake` flag before it
//! notifies. The sleeper reads the flag after every return from the wait, under the same lock:
//! a notification that came before the wait began still left its flag, so it cannot be lost,
//! and a spurious or timed-out return finds no flag and sleeps again. An idle timeout exits
//! only if the worker is still in the idle list; if it is not, a waker took it out in the
//! meantime and its flag says what to do. The loom models in `pool::model` run this code
//! (`get_event`) against `add`, a reported wait and shutdown; each fails, as a deadlock, if
//! the worker drops the group lock between joining the idle list and waiting.
//!
//! A steal breaks that rule of one lock: the work a thief looks for is queued under *another*
//! group's lock, and the thief must release its own lock to look (see `balance`). A waker
//! that queues work its group cannot start looks for an idle worker of the other groups; if it
//! looks while a would-be thief's futile steal is in flight (its lock released, not yet in the
//! idle list) it finds nobody, and the thief, back under its lock, would park without looking
//! again: the work then waited for its own group's busy worker. So every waker bumps
//! `steal_seq` before it looks, the
//! thief reads it before its attempt, and compares again under its lock just before it parks:
//! a change means a waker may have missed it, and it steals again. A waker that bumps after
//! the comparison takes the thief's lock after it parked, and finds it in the idle list (or,
//! if the lock stays busy, leaves the group to the timer's `retry_thieves`, which blocks on
//! it). The loom model `loom_work_queued_during_a_futile_steal_is_stolen` deadlocks without
//! the comparison.
//!
//! ## Reported waits
//!
//! The handler's waits reach the pool through the thread's `shoal_wait` observer, an
//! [`Observer`] that knows the worker's group and current connection. `wait_begin` marks the
//! connection waiting (for the processlist) and lets the core stop counting the worker active,
//! then acts on the core's answer: a worker or a listener for the group (the crate doc's
//! "Concurrency limit" says when). `wait_end` counts the worker active again, even above the
//! cap (a command in progress is never preempted), and gives the wait's length to the adaptive
//! controller's meter. Both take the group lock, never while holding the connection's meta lock.
//! The loom model `loom_wait_begin_wakes_a_worker_for_queued_work` checks that work queued next
//! to a wait beginning always gets a worker (it fails if `wait_begin` does not wake one).
//!
//! ## Lingering
//!
//! `linger` follows the crate doc's "Lingering" in this order: the execution time is recorded
//! under the group lock it takes anyway; a group left without a listener (this worker was it
//! and ran the event itself) is given one; the core grants the linger
//! ([`GroupCore::linger_begin`]); under the connection's meta lock its `lingering` flag is set
//! and an edge-triggered socket disarmed (the listener is not to be woken for the command the
//! worker awaits); only then is the shutdown flag read, so [`Pool::shutdown`] either sees the
//! flag and shuts the socket down or the worker sees shutdown; after the wait the core decides
//! whether the command may run at once ([`GroupCore::linger_end`]).

use super::*;

/// A group's lock, held.
type GroupGuard<'g, C> = MutexGuard<'g, GroupInner<C>>;

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

/// Installed on every worker thread: turns wait reports into group accounting.
pub(super) struct Observer<H: Handler> {
    shared: StdArc<Shared<H>>,
    gid: usize,
    current: Mutex<Option<Arc<ConnEntry<H::Conn>>>>,
    /// When the worker's current reported wait began (for the controller's wait share).
    wait_since: Mutex<Option<Instant>>,
}

impl<H: Handler> Observer<H> {
    pub(super) fn new(shared: StdArc<Shared<H>>, gid: usize) -> Self {
        Observer {
            shared,
            gid,
            current: Mutex::new(None),
            wait_since: Mutex::new(None),
        }
    }
}

/// A lingering worker asks where its client runs on one linger in this many (see
/// `Shared::pair_with_client`): a client thread rarely moves between two commands.
const PAIR_EVERY: u32 = 8;

/// A lingering worker pairs with its client only if a client on another CPU was found (by any
/// lingering worker's ask) within this many µs: clients that send from more than one CPU at
/// once. One thread sending from one CPU at a time (an event loop driving many connections,
/// or a single client) is left to the scheduler (see `Shared::pair_with_client`).
const PAIR_TOGETHER_US: u64 = 10_000;

thread_local! {
    /// The CPU this worker moved to, to linger next to its client (`None`: where its group's
    /// placement put it).
    static PAIRED_CPU: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
    /// Lingers that could have asked for the client's CPU, for [`PAIR_EVERY`].
    static PAIR_ASKS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
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

    fn wait_end(&self, kind: WaitKind) {
        let began = lock(&self.wait_since).take();
        {
            let mut inner = self.shared.groups[self.gid].lock();
            inner.core.wait_end(kind);
            if let Some(t) = began {
                inner
                    .core
                    .meter
                    .note_wait(t.elapsed(), kind == WaitKind::DiskIo);
            }
        }
        if let Some(e) = lock(&self.current).as_ref() {
            lock(&e.meta).wait = None;
        }
    }
}

impl<H: Handler> Shared<H> {
    pub(super) fn worker_main(self: StdArc<Self>, gid: usize) {
        let slot = Arc::new(WorkerSlot::new());
        let obs = StdArc::new(Observer::new(self.clone(), gid));
        let prev = shoal_wait::set_thread_observer(Some(obs.clone()));
        let mut events = Events::with_capacity(MAX_EVENTS);
        let mut exec = None;
        // Set by `run` when a linger ended without running the next command: the worker is
        // still counted lingering until `get_event` takes the group lock.
        let mut lingered = false;
        // Where this thread runs (see `affinity`): applied before the first poll and again
        // before any entry after a change. A new thread inherits its spawner's placement,
        // which may be another group's CPU, hence `None` (unknown) first.
        let mut placed: Option<Option<usize>> = None;
        let place = |placed: &mut Option<Option<usize>>| {
            let want = self.placement(gid);
            // A worker that lingered next to its client (see `pair_with_client`) takes its
            // group's placement back with the first entry it did not get from a linger.
            let paired = self.unpair();
            if (*placed != Some(want) || paired) && !self.cpus.is_empty() {
                self.run_placed(want);
                *placed = Some(want);
            }
        };
        let tid = affinity::current_tid();
        lock(&self.groups[gid].threads).0.push(tid);
        place(&mut placed);
        while let Some((entry, action)) = self.get_event(
            gid,
            &slot,
            &mut events,
            exec.take(),
            std::mem::take(&mut lingered),
        ) {
            place(&mut placed);
            let mut next = Some((entry, action));
            while let Some((e, a)) = next.take() {
                // `Some` again when the worker lingered and the next command arrived.
                next = self
                    .run(gid, e, a, &obs, &mut exec, &mut lingered)
                    .map(|e| (e, Action::Event));
            }
        }
        {
            let mut t = lock(&self.groups[gid].threads);
            if let Some(i) = t.0.iter().position(|&x| x == tid) {
                t.0.swap_remove(i);
            }
        }
        self.unpair();
        shoal_wait::set_thread_observer(prev);
    }

    /// One steal attempt by a worker of group `gid`: its own group's lock (`inner`) is released
    /// for [`Self::try_steal`] and taken again; a stolen entry is counted (and its queue time
    /// recorded) in the thief's group. `seen` gets the `steal_seq` read before the attempt:
    /// the worker compares it again before it parks (see "Parking and waking").
    fn steal_unlocked<'g>(
        &'g self,
        gid: usize,
        now: Instant,
        inner: GroupGuard<'g, H::Conn>,
        seen: &mut Option<u64>,
    ) -> (GroupGuard<'g, H::Conn>, Option<Entry<H::Conn>>) {
        *seen = Some(self.steal_seq.load(Ordering::SeqCst));
        drop(inner);
        let stolen = self.try_steal(gid, now);
        let mut inner = self.groups[gid].lock();
        let entry = stolen.map(|(e, qt)| {
            inner.core.counters.steals += 1;
            if self.histograms.load(Ordering::Relaxed) {
                let _ = inner.queue_hist.record(us(qt));
            }
            e
        });
        (inner, entry)
    }

    /// Finds the next entry to run, being the listener or sleeping idle meanwhile. `None`: the
    /// thread must exit (its accounting is already undone).
    pub(super) fn get_event(
        self: &StdArc<Self>,
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
        // `steal_seq` as read before this round's steal attempt, if one was made.
        let mut steal_seen = None;
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
                let stolen;
                (inner, stolen) = self.steal_unlocked(gid, now, inner, &mut steal_seen);
                if stolen.is_some() {
                    return stolen;
                }
                continue;
            }
            // Age balancing: another group's next entry may have waited longer than ours.
            if let Some((v, older_than, low)) = self.balance_target(gid, &inner.core, slot) {
                drop(inner);
                let taken = {
                    let mut o = self.groups[v].lock();
                    let t = o.core.take_older(older_than, low, now);
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
                let stolen;
                (inner, stolen) = self.steal_unlocked(gid, now, inner, &mut steal_seen);
                if stolen.is_some() {
                    return stolen;
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
            // A waker looked for a thief since our steal attempt began: it may have looked at
            // our idle list while our lock was released for the steal and found nobody, so
            // nobody will wake us for that work. Steal again instead of parking. (Read under
            // our lock, in the same critical section as the parking: a waker that bumps later
            // finds us in the idle list, or leaves us to the timer if the lock stays busy.)
            if let Some(seen) = steal_seen.take() {
                if self.steal_seq.load(Ordering::SeqCst) != seen {
                    tried_steal = false;
                    steal_first = false;
                    continue;
                }
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

    /// Runs one entry on the current worker (of group `gid`), leaving its execution time in
    /// `exec` unless a linger already recorded it. Returns the connection when the worker
    /// lingered on it and its next command arrived: the caller runs it again at once.
    fn run(
        self: &StdArc<Self>,
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
            if m.local && action == Action::Event {
                let round = self.judge_round.load(Ordering::Relaxed);
                if m.busy_round != round {
                    m.busy_round = round;
                    self.groups[gid].busy.fetch_add(1, Ordering::Relaxed);
                }
            }
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

    /// Moves the calling thread to a group's placement: its CPU (`Some`), or every CPU the
    /// server may use.
    fn run_placed(&self, want: Option<usize>) {
        match want {
            Some(cpu) => affinity::run_on(&[cpu]),
            None => affinity::run_on(&self.cpus),
        }
    }

    /// Pairing: a worker about to linger on a local connection moves to the CPU its client
    /// last sent from, while CPU affinity is on but not engaged (the low-concurrency regime,
    /// where lingering serves nearly every command).
    ///
    /// A lingering worker and its client play ping-pong: each runs while the other waits, so
    /// one CPU serves the pair as well as two, and on one CPU every wake-up is local. Left to
    /// the scheduler, a pair often sits on two CPUs, and each answer's `sendto` wakes the
    /// client across (a remote run-queue lock, often an inter-processor interrupt: an exit to
    /// the hypervisor in a VM), each command the worker back. sysbench at 8 clients
    /// (docs/perf-log, session 36): server CPU a point select lower in 6 rounds of 7
    /// (0.0071-0.0078 ms against 0.0080-0.0096; one round 0.0108 against 0.0080), a read-write
    /// transaction 0.61 / 0.63 against 0.66 / 0.73 ms. The clients' own placement by the
    /// scheduler spreads the pairs over the CPUs.
    ///
    /// The client's CPU is asked (`getsockopt`) on one linger in [`PAIR_EVERY`] of this
    /// thread, and the thread moves only when that CPU changed. It keeps the pinning while it
    /// lingers; the first entry it takes from the queue or the listener puts it back where
    /// its group's placement says (`place` in `worker_main`), so workers serving queued work
    /// stay free to spread, and so does its next linger once affinity has engaged.
    ///
    /// **A CPU's share.** The ping-pong holds for a client thread per connection (sysbench,
    /// a thread-per-request application). One thread multiplexing many connections (an event
    /// loop, shoal-bench's default single thread) never waits for one of them: pinned next to
    /// it, eight lingering workers and the client shared one CPU while the other idled, and
    /// the pool ran 0.73x one thread per connection at 8 clients (session 40). So a worker
    /// pairs only where the CPU holds no more than its share of the paired workers
    /// (`paired[cpu] * cpus <= paired in all`, itself not counted); otherwise it stays (or
    /// goes back) where its group's placement puts it. Clients spread over the CPUs still
    /// pair one for one.
    ///
    /// **Clients on several CPUs at once.** Even the one worker a CPU's share left beside an
    /// event-loop client cost it: at 8 clients driven by one thread, the pool without that
    /// worker ran ahead in 5 rounds of 6 side by side (+1 to +6 %, median +3.8 %; session 41).
    /// One thread sends from one CPU
    /// at a time; clients with a thread each send from every CPU at once. So each ask stamps
    /// the CPU its client sent from (`client_seen_at`), and a worker pairs only if another CPU
    /// was stamped within [`PAIR_TOGETHER_US`]: a single thread that the scheduler moves
    /// stamps its old CPU for that long after a move, and a worker paired then goes back at
    /// its next ask.
    fn pair_with_client(&self, gid: usize, fd: RawFd, size: usize) {
        if self.cpus.len() < 2
            || !self.cpu_affinity.load(Ordering::Relaxed)
            || self.engaged.load(Ordering::Relaxed)
            || !affinity::effective(true, size, self.cpus.len())
        {
            // Affinity engaged (or off): a worker still paired goes back to its group's
            // placement now, not at its next queued entry. A busy connection's worker may
            // linger from command to command for long, and pinned beside its client it would
            // run on another group's CPU.
            self.unpair_and_place(gid);
            return;
        }
        let due = PAIR_ASKS.with(|n| {
            let v = n.get();
            n.set(v.wrapping_add(1));
            v % PAIR_EVERY == 0
        });
        if !due {
            return;
        }
        let Some(cpu) = affinity::incoming_cpu(fd).filter(|c| self.cpus.contains(c)) else {
            return;
        };
        let Some(i) = self.cpus.iter().position(|&c| c == cpu) else {
            return;
        };
        // Clients on more than one CPU at once, or one thread (an event loop, or a single
        // client) sending from one CPU at a time? Only the former pairs (see above).
        let now = us(Instant::now().saturating_duration_since(self.epoch)) + 1;
        self.client_seen_at[i].store(now, Ordering::Relaxed);
        let together = self.client_seen_at.iter().enumerate().any(|(j, t)| {
            let t = t.load(Ordering::Relaxed);
            j != i && t != 0 && now.saturating_sub(t) <= PAIR_TOGETHER_US
        });
        if !together {
            self.unpair_and_place(gid);
            return;
        }
        let mine = PAIRED_CPU.with(|p| p.get());
        if mine == Some(cpu) {
            return;
        }
        let all: usize = self.paired.iter().map(|n| n.load(Ordering::Relaxed)).sum();
        let others = all.saturating_sub(usize::from(mine.is_some()));
        if self.paired[i].load(Ordering::Relaxed) * self.cpus.len() > others {
            // That CPU already holds more than its share: one client thread drives several
            // connections there. Serve from where the group's placement says.
            self.unpair_and_place(gid);
            return;
        }
        if mine.is_none() {
            // Before the pin: the timer, which holds this lock through its moves, then
            // leaves this thread where it puts itself.
            lock(&self.paired_tids).push(affinity::current_tid());
        } else if let Some(j) = mine.and_then(|m| self.cpus.iter().position(|&c| c == m)) {
            self.paired[j].fetch_sub(1, Ordering::Relaxed);
        }
        self.paired[i].fetch_add(1, Ordering::Relaxed);
        affinity::run_on(&[cpu]);
        PAIRED_CPU.with(|p| p.set(Some(cpu)));
    }

    /// Ends this worker's pairing, if it was, and puts the thread back where its group's
    /// placement says.
    fn unpair_and_place(&self, gid: usize) {
        if self.unpair() {
            self.run_placed(self.placement(gid));
        }
    }

    /// Ends this worker's pairing, if it was paired (the caller re-places the thread);
    /// returns whether it was.
    fn unpair(&self) -> bool {
        let Some(cpu) = PAIRED_CPU.with(|p| p.take()) else {
            return false;
        };
        if let Some(i) = self.cpus.iter().position(|&c| c == cpu) {
            self.paired[i].fetch_sub(1, Ordering::Relaxed);
        }
        let tid = affinity::current_tid();
        lock(&self.paired_tids).retain(|&t| t != tid);
        true
    }

    /// The low-concurrency fast path: after a command, if the group may (see
    /// [`GroupCore::linger_begin`]), watch this connection's socket alone for up to
    /// `linger_us` (see [`Linger`] for the outcomes). On [`Linger::Run`] the next command is
    /// there (or the peer hung up) and the connection was never re-armed. Records the execution
    /// time `exec` under the group lock it takes anyway.
    fn linger(
        self: &StdArc<Self>,
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
        let local = {
            let m = lock(&e.meta);
            // Stolen entries run on another group's worker; a resize moves the connection at
            // its re-arm; a KILL closes it there. While CPU affinity is engaged this also keeps
            // a steered connection outside its `id % size` group (about half of them) from
            // lingering. Letting those linger too doubled the linger hits at 64 sysbench
            // clients and cost point select 6-9 % more CPU a statement and a 40-90 % longer
            // p99 in 3 of 3 rounds (read-write used 3-20 % less CPU at 8 clients in 3 of 3,
            // 7-12 % less at 64 in 2 of 3): kept until lingering knows when a group has too
            // many connections for it
            // (docs/perf-log/2026-12-04-session-31-warm-files.md).
            if m.group != gid || (e.id % size as u64) as usize != gid || m.killed {
                return Linger::No;
            }
            m.local
        };
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
        if local {
            self.pair_with_client(gid, e.fd, size);
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
                    if p.modify(fd, e.id, Interest::None, Mode::Oneshot).is_ok() {
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
}
