//! The timer thread: the pool's safety net, one thread for every group.
//!
//! It sleeps on `Shared::timer_cv` until the next tick (`thread_pool_stall_limit`), the next
//! stall sample (every second, [`sampler`]) or until a thief is pending (`Shared::thief_pending`: `wake_thief` could not take a victim's lock
//! without waiting, so the timer retries it at once, holding no group lock). At each tick
//! (`tick`) it walks every active group under its lock and lets the state machine
//! (`GroupCore::tick`) decide: a group whose queue did not move for a whole tick is stalled
//! and gets another worker (woken or created), old low-priority entries are kicked up to the
//! high queue, the adaptive controller judges the last interval, and a group whose every thread
//! is blocked while work may be waiting in epoll is polled by the timer itself (`rescue_poll`),
//! which is what keeps an idle lock holder's COMMIT readable when `thread_pool_max_threads`
//! refuses a thread. Outside the group locks it then sweeps the connections (`sweep`): idle
//! ones past their deadline are queued HIGH and timed out, and an idle connection found
//! readable twice a second apart (`RECOVER_AFTER`) had its readiness report lost: it is queued
//! and counted in `Threadpool_recovered_events`.
//!
//! Nothing here decides on its own: every rule is a method of `crate::core::GroupCore`; this
//! module only schedules when the rules run and performs the side effects they ask for.

use super::*;

impl<H: Handler> Shared<H> {
    /// The timer thread: ticks every `thread_pool_stall_limit`, and retries thieves at once.
    pub(super) fn timer_main(self: StdArc<Self>) {
        let mut events = Events::with_capacity(MAX_EVENTS);
        let mut next_tick = Instant::now() + self.stall_limit();
        let mut sampler = Sampler::new();
        let mut cpu_meter = cpu::CpuMeter::new();
        // Judgements in a row with the local clients spread over the CPUs (CPU affinity),
        // and when the next one is due (see `judge_spread`).
        let mut spread = 0u32;
        let mut next_judge = Instant::now() + affinity::JUDGE_IDLE_EVERY;
        loop {
            let woken = {
                let g = lock(&self.timer_lock);
                if self.is_shutdown() {
                    return;
                }
                if self.thief_pending.load(Ordering::SeqCst) != 0 {
                    true
                } else {
                    let wait = next_tick
                        .min(sampler.due())
                        .min(next_judge)
                        .saturating_duration_since(Instant::now());
                    let (_g, r) = self
                        .timer_cv
                        .wait_timeout(g, wait)
                        .unwrap_or_else(|e| e.into_inner());
                    !r.timed_out()
                }
            };
            if self.is_shutdown() {
                return;
            }
            if Instant::now() >= sampler.due() {
                self.sample(&mut sampler);
            }
            if Instant::now() >= next_judge {
                // Every `JUDGE_EVERY` while local clients send enough to judge, every
                // `JUDGE_IDLE_EVERY` (the sampler's pace: no extra wake-up) otherwise. Not
                // tied to the stall limit, so a spread load engages within a second or two
                // whatever `thread_pool_stall_limit` is.
                let every = if self.judge_spread(&mut spread) {
                    affinity::JUDGE_EVERY
                } else {
                    affinity::JUDGE_IDLE_EVERY
                };
                next_judge = Instant::now() + every;
            }
            let pending = self.thief_pending.swap(0, Ordering::SeqCst);
            if pending != 0 {
                self.retry_thieves(pending);
                if Instant::now() < next_tick {
                    // Woken for thieves only: the tick keeps its time.
                    continue;
                }
            } else if !woken && Instant::now() < next_tick {
                continue; // a sample's or a judgement's time, or a spurious wake-up
            }
            // The stall limit's time, or a wake-up by a stall-limit change (at once, as before).
            // The CPU left free over the tick's interval, for the adaptive controllers (read
            // at every tick, so that switching adaptive mode on starts from a fresh interval).
            let cpu_idle = cpu_meter.free_share();
            self.tick(&mut events, cpu_idle);
            next_tick = Instant::now() + self.stall_limit();
        }
    }

    /// Wakes a thief for each group in `pending` (see `thief_pending`) that still has work it
    /// cannot start, taking each group's lock in turn with a blocking lock (the timer holds no
    /// other group lock).
    pub(super) fn retry_thieves(&self, pending: u64) {
        let size = self.size.load(Ordering::SeqCst);
        for gid in 0..size.min(64) {
            if pending & (1 << gid) == 0 {
                continue;
            }
            if !self.groups[gid].lock().core.wants_thief(self.oversub(gid)) {
                continue;
            }
            for k in 1..size {
                let v = (gid + k) % size;
                let mut other = self.groups[v].lock();
                if let Some(w) = other.core.idle.pop() {
                    other.core.active += 1;
                    other.core.counters.wakes += 1;
                    w.wake.store(WAKE_STEAL, Ordering::SeqCst);
                    w.cv.notify_one();
                    break;
                }
            }
        }
    }

    /// CPU affinity's engagement (see `affinity`), judged on its own cadence: the commands of
    /// local connections since the last judgement, by the CPU their client sent from, and the
    /// local connections that ran a command, summed over the groups and reset (a new
    /// judgement round starts). It engages after [`affinity::ENGAGE_ROUNDS`] spread
    /// judgements in a row (`spread` counts them) and lets go after one that is not: a single
    /// client thread that the scheduler moves between CPUs sends from both within some
    /// windows. When the state changes, every live thread of a group moves at once
    /// (`place_groups`). Returns whether there were enough commands to judge the spread.
    fn judge_spread(&self, spread: &mut u32) -> bool {
        let n = self.cpus.len();
        if n < 2 {
            return false;
        }
        let n = n.min(affinity::SEEN_CPUS);
        let mut by_cpu = vec![0u64; n];
        let mut busy = 0u64;
        for g in &self.groups {
            for (c, s) in g.seen.iter().take(n).enumerate() {
                by_cpu[c] += s.swap(0, Ordering::Relaxed);
            }
            busy += g.busy.swap(0, Ordering::Relaxed);
        }
        self.judge_round.fetch_add(1, Ordering::Relaxed);
        let engaged = self.engaged.load(Ordering::Relaxed);
        let pairing = self.linger_us.load(Ordering::Relaxed) > 0;
        let judged = by_cpu.iter().sum::<u64>() >= affinity::JUDGE_MIN;
        if let Some(e) = affinity::judge(&by_cpu, busy, pairing, engaged) {
            *spread = if e { spread.saturating_add(1) } else { 0 };
            let e = e && (engaged || *spread >= affinity::ENGAGE_ROUNDS);
            if e != engaged {
                self.engaged.store(e, Ordering::Relaxed);
                tracing::debug!(engaged = e, ?by_cpu, busy, "thread pool CPU affinity");
                self.place_groups();
            }
        }
        judged
    }

    /// Gives every live thread of each group the group's placement when it changed since the
    /// timer's last pass (affinity engaged or let go, `thread_pool_size` crossed the CPU
    /// count, the option switched): a thread places itself before each entry it runs, but an
    /// idle worker or a listener that only dispatches may run none for a long time, and would
    /// keep running where it ran before. One comparison per group when nothing changed.
    fn place_groups(&self) {
        if self.cpus.is_empty() {
            return;
        }
        for gid in 0..self.groups.len() {
            let want = self.placement(gid);
            let mut t = lock(&self.groups[gid].threads);
            if t.1 == Some(want) {
                continue;
            }
            t.1 = Some(want);
            // A paired worker stays beside its client; it takes its group's placement back
            // itself when it unpairs. Held through the moves, so a worker pairing meanwhile
            // is either skipped or pins itself after its move.
            let paired = lock(&self.paired_tids);
            for &tid in t.0.iter().filter(|t| !paired.contains(t)) {
                match want {
                    Some(cpu) => affinity::place_thread(tid, &[cpu]),
                    None => affinity::place_thread(tid, &self.cpus),
                }
            }
        }
    }

    /// One timer tick: kick-up, stalls, missing listeners, rescue polls, idle deadlines.
    fn tick(self: &StdArc<Self>, events: &mut Events, cpu_idle: Option<f64>) {
        self.place_groups();
        let kickup = Duration::from_micros(self.kickup_us.load(Ordering::Relaxed));
        // The pool's statements over the interval the adaptive groups are about to judge
        // (their meters are taken one by one below): a CPU-bound group's probes are judged
        // on it (see "Judged on the pool's throughput" in the `adapt` module doc).
        let size = self.size.load(Ordering::Relaxed).min(self.groups.len());
        let pool_completed: u64 = self.groups[..size]
            .iter()
            .map(|g| {
                let inner = g.lock();
                if inner.adapt.is_some() {
                    inner.core.meter.completed
                } else {
                    0
                }
            })
            .sum();
        // What the adaptive groups did, summed for the number-of-groups chooser.
        let mut seen = regroup::Observation::default();
        for gid in 0..self.groups.len() {
            let group = &self.groups[gid];
            let mut inner = group.lock();
            let core = &mut inner.core;
            if core.threads == 0 && core.connections == 0 && core.queued() == 0 {
                continue;
            }
            core.kick_up(kickup, Instant::now());
            let (stalled, missing) = core.tick();
            let adaptive = gid < self.size.load(Ordering::Relaxed) && inner.adapt.is_some();
            if adaptive {
                if let Some(o) =
                    self.adapt(group, &mut inner, Instant::now(), cpu_idle, pool_completed)
                {
                    seen.completed += o.completed;
                    seen.exec_us += o.exec_us;
                    seen.read_us += o.read_us;
                    seen.wait_us += o.wait_us;
                }
            }
            seen.connections += inner.core.connections;
            let core = &mut inner.core;
            if stalled {
                self.wake_or_create(gid, core, Reason::Stall);
            } else if missing {
                self.provide_listener(gid, core);
            } else if self.stealing.load(Ordering::Relaxed) && core.wants_thief(self.oversub(gid)) {
                // A steal lost to a race gets another chance every tick.
                self.wake_thief(gid);
            }
            if adaptive && !stalled && !missing {
                // A raised cap lets queued work start now, not at the next event.
                self.after_queue(gid, core);
            }
            let rescue = !core.listener && core.connections > 0;
            drop(inner);
            if rescue {
                self.rescue_poll(gid, events);
            }
        }
        self.regroup(seen);
        let now = Instant::now();
        let mut idle = Vec::new();
        for e in self.all_entries() {
            let mut m = lock(&e.meta);
            if m.deadline.is_some_and(|d| d <= now) && m.phase.claim() {
                m.prio = Prio::High;
                let (gid, must) = (m.group, m.must_run);
                let mut inner = self.groups[gid].lock();
                inner
                    .core
                    .push((e.clone(), Action::Timeout), Prio::High, must, now);
                self.after_queue(gid, &mut inner.core);
            } else if m.phase == Phase::Idle && m.registered && !m.writable {
                drop(m);
                idle.push(e);
            } else {
                m.suspect = None;
            }
        }
        self.sweep(idle, now);
    }

    /// The safety net: finds idle connections whose socket is readable (input, end of file or
    /// an error) although epoll never reported them, and queues them, counting
    /// `recovered_events` and logging an error: every such event is a lost wake-up, a bug.
    ///
    /// One `poll(2)` over the sockets of every idle connection armed for readability. A
    /// readable one is only a suspect: its report may be on its way (in the listener's hands,
    /// or in the ready list of a listener about to wake up). It is recovered at a later tick
    /// if it never left `Idle` meanwhile (a run clears the mark), is still readable, at least
    /// [`RECOVER_AFTER`] passed, and its group's epoll was polled to completion twice since
    /// the mark: the second of those polls began after the mark, when the input was already
    /// there, so a report in the ready list would have been collected and claimed before the
    /// count moved. The listener is notified at the mark, and again while the count lags, so
    /// that an idle group's listener, asleep in `epoll_wait`, polls anyway.
    fn sweep(self: &StdArc<Self>, idle: Vec<Arc<ConnEntry<H::Conn>>>, now: Instant) {
        if idle.is_empty() {
            return;
        }
        let mut fds: Vec<libc::pollfd> = idle
            .iter()
            .map(|e| libc::pollfd {
                fd: e.fd,
                events: libc::POLLIN | libc::POLLRDHUP,
                revents: 0,
            })
            .collect();
        // SAFETY: a valid array of `fds.len()` pollfds; a zero timeout never blocks. An fd
        // closed and reused meanwhile only misleads about a connection that is `Closed` by
        // then, which the phase check below skips.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        if n < 0 {
            return;
        }
        let mut notify = vec![false; self.groups.len()];
        for (e, p) in idle.iter().zip(&fds) {
            let mut m = lock(&e.meta);
            let readable =
                p.revents & (libc::POLLIN | libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0;
            if !readable || m.phase != Phase::Idle || !m.registered || m.writable {
                m.suspect = None;
                continue;
            }
            let gid = m.group;
            let polls = self.groups[gid].polls.load(Ordering::SeqCst);
            match m.suspect {
                None => {
                    m.suspect = Some((polls, now));
                    notify[gid] = true;
                }
                Some((seen, since))
                    if polls >= seen + 2
                        && now.saturating_duration_since(since) >= RECOVER_AFTER =>
                {
                    if !m.phase.claim() {
                        continue;
                    }
                    m.suspect = None;
                    let (prio, must, holder) = (m.prio, m.must_run, m.holder);
                    tracing::error!(
                        conn = e.id,
                        group = gid,
                        edge = m.edge,
                        "thread pool: an idle connection's socket was readable but epoll never \
                         reported it; queued by the safety net (Threadpool_recovered_events)"
                    );
                    let mut inner = self.groups[gid].lock();
                    inner.core.counters.recovered_events += 1;
                    inner.core.io_since_tick = true;
                    inner
                        .core
                        .push_placed((e.clone(), Action::Event), prio, must, holder, now);
                    self.after_queue(gid, &mut inner.core);
                }
                Some(_) => notify[gid] = true,
            }
        }
        for (gid, n) in notify.into_iter().enumerate() {
            if n {
                if let Some(p) = self.groups[gid].poller.get() {
                    let _ = p.notify();
                }
            }
        }
    }

    /// A non-blocking poll of a group without a listener (see the lock-holder guarantee).
    fn rescue_poll(self: &StdArc<Self>, gid: usize, events: &mut Events) {
        let Some(p) = self.groups[gid].poller.get() else {
            return;
        };
        events.clear();
        if p.wait(events, Some(Duration::ZERO)).is_err() {
            return;
        }
        let claimed = self.claim(gid, events);
        self.groups[gid].polls.fetch_add(1, Ordering::SeqCst);
        let mut inner = self.groups[gid].lock();
        inner.core.counters.polls_by_worker += 1;
        if claimed.is_empty() {
            return;
        }
        inner.core.io_since_tick = true;
        let now = Instant::now();
        for (e, p, m, h) in claimed {
            inner.core.push_placed(e, p, m, h, now);
        }
        self.after_queue(gid, &mut inner.core);
    }
}
