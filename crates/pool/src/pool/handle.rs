//! The pool's handle: [`Pool`], what the server holds.
//!
//! `Pool::start` checks the configuration, allocates every group up front (`max_size` of them,
//! so a live resize never reallocates what other threads index), creates the pollers of the
//! active groups at once (an fd shortage shows at start, not at the first connection) and
//! starts the timer thread; workers are created on demand by the groups. The handle's other
//! methods are thin: `add`/`kill` hand over to the shared state, the setters store one atomic
//! each (the threads read them at their next decision), `apply` maps a `shoal_sched` knob to
//! its setter, `config` reads them back, and `stats`/`reset_*` take each group's lock briefly.
//!
//! Shutdown (`Pool::shutdown`, also on drop) is the crate doc's "Shutdown protocol": stop
//! accepting, let running commands finish, close every connection with
//! [`CloseReason::Shutdown`] and join every thread.

use super::*;

/// A running thread pool. See the crate documentation.
pub struct Pool<H: Handler> {
    shared: StdArc<Shared<H>>,
    timer: Mutex<Option<JoinHandle<()>>>,
}

impl<H: Handler> Pool<H> {
    /// Starts the pool (and its timer thread). Worker threads are created on demand.
    pub fn start(config: Config, handler: H) -> Result<Pool<H>, PoolError> {
        if config.size == 0 || config.size > config.max_size {
            return Err(PoolError::InvalidConfig(format!(
                "size {} must be in 1..={}",
                config.size, config.max_size
            )));
        }
        if config.stall_limit.is_zero() {
            return Err(PoolError::InvalidConfig(
                "stall_limit must be positive".into(),
            ));
        }
        if config.max_threads == 0 {
            return Err(PoolError::InvalidConfig(
                "max_threads must be positive".into(),
            ));
        }
        let shared = StdArc::new(Shared::new(&config, handler));
        // Create the pollers of the active groups now, so that an fd shortage shows at start.
        for g in &shared.groups[..config.size] {
            g.poller()?;
        }
        if config.adaptive {
            shared.set_adaptive(true);
        }
        let s = shared.clone();
        let timer = thread::Builder::new()
            .name(format!("{}-timer", config.thread_name))
            .spawn(move || s.timer_main())?;
        Ok(Pool {
            shared,
            timer: Mutex::new(Some(timer)),
        })
    }

    /// Adds an accepted connection; its login is queued HIGH in group `conn_id % size`.
    /// On error the connection has already been handed to [`Handler::close`].
    pub fn add(&self, conn_id: u64, conn: H::Conn) -> Result<(), PoolError> {
        self.shared.add(conn_id, conn)
    }

    /// Kills a connection: an idle one is queued HIGH and closed ([`CloseReason::Killed`]); a
    /// queued one moves to the high queue and is closed instead of run; a running one is closed
    /// when its current handler call returns (interrupting that call, e.g. a lock wait or
    /// `SLEEP()`, is the handler's business). Returns whether the id was found.
    pub fn kill(&self, conn_id: u64) -> bool {
        self.shared.kill(conn_id)
    }

    /// Fault injection for tests of the safety net: the next readiness report of the
    /// connection is dropped by the listener, as a lost wake-up would drop it. Returns whether
    /// the id was found. Not for production use.
    #[doc(hidden)]
    pub fn lose_next_report(&self, conn_id: u64) -> bool {
        let Some(e) = self.shared.lookup(conn_id) else {
            return false;
        };
        lock(&e.meta).lose_report = true;
        true
    }

    /// `SET GLOBAL thread_pool_size`: connections migrate at their next re-arm. In adaptive
    /// mode with `adaptive_groups` this is the base the pool's choice starts from again.
    pub fn set_size(&self, size: usize) -> Result<(), PoolError> {
        self.shared.resize(size)?;
        self.shared.size_set.store(size, Ordering::SeqCst);
        *lock(&self.shared.regroup) = Regroup::new();
        Ok(())
    }
    /// `SET GLOBAL thread_pool_adaptive_groups`: off, adaptive mode runs `thread_pool_size`
    /// groups again at once.
    pub fn set_adaptive_groups(&self, on: bool) {
        let s = &self.shared;
        if s.adaptive_groups.swap(on, Ordering::SeqCst) == on {
            return;
        }
        *lock(&s.regroup) = Regroup::new();
        if !on {
            let _ = s.resize(s.size_set.load(Ordering::SeqCst));
        }
    }
    /// `SET GLOBAL thread_pool_oversubscribe`.
    pub fn set_oversubscribe(&self, n: usize) {
        self.shared.oversubscribe.store(n, Ordering::SeqCst);
    }
    /// `SET GLOBAL thread_pool_adaptive`: on, every group's cap starts at `1 + oversubscribe`
    /// and its controller adjusts it at each timer tick; off, the static cap applies again at
    /// once (the history is kept).
    pub fn set_adaptive(&self, on: bool) {
        self.shared.set_adaptive(on);
    }
    /// `SET GLOBAL thread_pool_stall_limit` (takes effect at once: the timer is woken).
    pub fn set_stall_limit(&self, d: Duration) -> Result<(), PoolError> {
        if d.is_zero() {
            return Err(PoolError::InvalidConfig(
                "stall_limit must be positive".into(),
            ));
        }
        self.shared.stall_limit_us.store(us(d), Ordering::SeqCst);
        let _g = lock(&self.shared.timer_lock);
        self.shared.timer_cv.notify_all();
        Ok(())
    }
    /// `SET GLOBAL thread_pool_max_threads`.
    pub fn set_max_threads(&self, n: usize) -> Result<(), PoolError> {
        if n == 0 {
            return Err(PoolError::InvalidConfig(
                "max_threads must be positive".into(),
            ));
        }
        self.shared.max_threads.store(n, Ordering::SeqCst);
        Ok(())
    }
    /// `SET GLOBAL thread_pool_idle_timeout` (applies to workers that go idle from now on).
    pub fn set_idle_timeout(&self, d: Duration) {
        self.shared.idle_timeout_us.store(us(d), Ordering::SeqCst);
    }
    /// `SET GLOBAL thread_pool_prio_kickup_timer`.
    pub fn set_prio_kickup_timer(&self, d: Duration) {
        self.shared.kickup_us.store(us(d), Ordering::SeqCst);
    }
    /// `SET GLOBAL thread_pool_high_prio_mode`.
    pub fn set_high_prio_mode(&self, m: HighPrioMode) {
        self.shared.prio_mode.store(mode_to_u8(m), Ordering::SeqCst);
    }
    /// `SET GLOBAL thread_pool_high_prio_tickets`.
    pub fn set_high_prio_tickets(&self, n: u64) {
        self.shared.tickets.store(n, Ordering::SeqCst);
    }
    /// `SET GLOBAL thread_pool_cpu_affinity`: each worker moves (pinned to its group's CPU, or
    /// free again) before the next entry it runs; each local connection moves to its client's
    /// CPU's group (or back to `id % size`) at its next re-arm.
    pub fn set_cpu_affinity(&self, on: bool) {
        self.shared.cpu_affinity.store(on, Ordering::SeqCst);
    }

    /// `SET GLOBAL thread_pool_dedicated_listener`.
    pub fn set_dedicated_listener(&self, on: bool) {
        self.shared.dedicated.store(on, Ordering::SeqCst);
    }
    /// Turns work stealing between groups on or off.
    pub fn set_work_stealing(&self, on: bool) {
        self.shared.stealing.store(on, Ordering::SeqCst);
    }
    /// `SET GLOBAL thread_pool_balance_usec` (zero turns age balancing off).
    pub fn set_balance(&self, d: Duration) {
        let v = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.shared.balance_us.store(v, Ordering::SeqCst);
    }
    /// `SET GLOBAL thread_pool_linger_usec` (zero turns lingering off).
    pub fn set_linger(&self, d: Duration) {
        let v = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.shared.linger_us.store(v, Ordering::SeqCst);
    }
    /// Changes how many threads of a group may linger at once (at least 1; lingers already
    /// under way finish).
    pub fn set_linger_threads(&self, n: usize) {
        self.shared.linger_threads.store(n.max(1), Ordering::SeqCst);
    }
    /// Turns histogram recording on or off.
    pub fn set_histograms(&self, on: bool) {
        self.shared.histograms.store(on, Ordering::SeqCst);
    }
    /// Applies one setting of `config` to the running pool: the live setter of `knob` with the
    /// value `config` holds for it (the server's `SET GLOBAL thread_pool_*`, through the table
    /// in `shoal_sched::vars`). [`Knob::None`] changes nothing.
    pub fn apply(&self, knob: Knob, config: &Config) -> Result<(), PoolError> {
        match knob {
            Knob::Size => return self.set_size(config.size),
            Knob::Oversubscribe => self.set_oversubscribe(config.oversubscribe),
            Knob::Adaptive => self.set_adaptive(config.adaptive),
            Knob::AdaptiveGroups => self.set_adaptive_groups(config.adaptive_groups),
            Knob::StallLimit => return self.set_stall_limit(config.stall_limit),
            Knob::MaxThreads => return self.set_max_threads(config.max_threads),
            Knob::IdleTimeout => self.set_idle_timeout(config.idle_timeout),
            Knob::PrioKickupTimer => self.set_prio_kickup_timer(config.prio_kickup_timer),
            Knob::HighPrioMode => self.set_high_prio_mode(config.high_prio_mode),
            Knob::HighPrioTickets => self.set_high_prio_tickets(config.high_prio_tickets),
            Knob::DedicatedListener => self.set_dedicated_listener(config.dedicated_listener),
            Knob::CpuAffinity => self.set_cpu_affinity(config.cpu_affinity),
            Knob::Linger => self.set_linger(config.linger),
            Knob::LingerThreads => self.set_linger_threads(config.linger_threads),
            Knob::WorkStealing => self.set_work_stealing(config.work_stealing),
            Knob::Balance => self.set_balance(config.balance),
            Knob::None => {}
        }
        Ok(())
    }

    /// The current size.
    pub fn size(&self) -> usize {
        self.shared.size.load(Ordering::SeqCst)
    }

    /// The current settings (for `SHOW VARIABLES`), including live changes.
    pub fn config(&self) -> Config {
        let s = &self.shared;
        let d = |a: &AtomicU64| Duration::from_micros(a.load(Ordering::SeqCst));
        Config {
            size: s.size_set.load(Ordering::SeqCst),
            max_size: s.groups.len(),
            oversubscribe: s.oversubscribe.load(Ordering::SeqCst),
            adaptive: s.adaptive.load(Ordering::SeqCst),
            adaptive_groups: s.adaptive_groups.load(Ordering::SeqCst),
            stall_limit: d(&s.stall_limit_us),
            max_threads: s.max_threads.load(Ordering::SeqCst),
            idle_timeout: d(&s.idle_timeout_us),
            prio_kickup_timer: d(&s.kickup_us),
            high_prio_mode: match s.prio_mode.load(Ordering::SeqCst) {
                1 => HighPrioMode::Statements,
                2 => HighPrioMode::None,
                _ => HighPrioMode::Transactions,
            },
            high_prio_tickets: s.tickets.load(Ordering::SeqCst),
            dedicated_listener: s.dedicated.load(Ordering::SeqCst),
            cpu_affinity: s.cpu_affinity.load(Ordering::SeqCst),
            histograms: s.histograms.load(Ordering::SeqCst),
            work_stealing: s.stealing.load(Ordering::SeqCst),
            balance: Duration::from_micros(s.balance_us.load(Ordering::SeqCst)),
            linger: Duration::from_micros(s.linger_us.load(Ordering::SeqCst)),
            linger_threads: s.linger_threads.load(Ordering::SeqCst),
            thread_name: s.thread_name.clone(),
            stack_size: s.stack_size,
        }
    }

    /// A snapshot of every group (briefly takes each group's lock).
    pub fn stats(&self) -> PoolStats {
        self.shared.stats()
    }

    /// Clears every group's event counters except the wait counts (what MariaDB's
    /// `FLUSH THREAD_POOL_STATS` clears; the cumulative `Threadpool_*` status counters are the
    /// same numbers). Gauges (threads, queue lengths) are state, not counters, and stay.
    pub fn reset_counters(&self) {
        for g in &self.shared.groups {
            let mut inner = g.lock();
            let waits = inner.core.counters.waits;
            inner.core.counters = Default::default();
            inner.core.counters.waits = waits;
            for c in [
                &g.arms,
                &g.edge_idles,
                &g.edge_requeues,
                &g.steering_refused,
            ] {
                c.store(0, Ordering::Relaxed);
            }
        }
    }

    /// Clears the wait counts by kind (`FLUSH THREAD_POOL_WAITS`).
    pub fn reset_waits(&self) {
        for g in &self.shared.groups {
            g.lock().core.counters.waits = Default::default();
        }
    }

    /// Clears the queueing- and execution-time histograms (`THREAD_POOL_LATENCY`), so their
    /// percentiles describe what ran since, not since start.
    pub fn reset_latency(&self) {
        for g in &self.shared.groups {
            let mut inner = g.lock();
            inner.queue_hist.reset();
            inner.exec_hist.reset();
        }
    }

    /// All three resets: counters, waits and latency histograms.
    pub fn reset_stats(&self) {
        self.reset_counters();
        self.reset_waits();
        self.reset_latency();
    }

    /// The state of one connection, if it is in the pool.
    pub fn connection_state(&self, conn_id: u64) -> Option<ConnState> {
        let e = self.shared.lookup(conn_id)?;
        let m = lock(&e.meta);
        Some(state_of(&m))
    }

    /// The state of every connection in the pool, sorted by id.
    pub fn connection_states(&self) -> Vec<(u64, ConnState)> {
        let mut out = Vec::new();
        for e in self.shared.all_entries() {
            let m = lock(&e.meta);
            if m.phase != Phase::Closed {
                out.push((e.id, state_of(&m)));
            }
        }
        out.sort_by_key(|x| x.0);
        out
    }

    /// Stops the pool following the numbered protocol in the crate doc. Idempotent.
    pub fn shutdown(&self) {
        let s = &self.shared;
        s.begin_shutdown();
        {
            let _g = lock(&s.timer_lock);
            s.timer_cv.notify_all();
        }
        if let Some(t) = lock(&self.timer).take() {
            let _ = t.join();
        }
        // Lingering workers wait in `Handler::await_input`, which ends when the socket is shut
        // down for reading. A worker that starts to linger after this scan sees the flag (see
        // `linger`: it sets `lingering`, then checks the flag, under the same meta lock order).
        for e in s.all_entries() {
            let m = lock(&e.meta);
            if m.lingering {
                // SAFETY: the fd stays open until `Handler::close`, which has not run yet for
                // an entry still in the registry with a lingering worker.
                unsafe { libc::shutdown(e.fd, libc::SHUT_RD) };
            }
        }
        s.wake_every_thread();
        loop {
            let hs: Vec<_> = std::mem::take(&mut *lock(&s.handles));
            if hs.is_empty() {
                break;
            }
            for h in hs {
                let _ = h.join();
            }
        }
        for g in &s.groups {
            let mut inner = g.lock();
            inner.core.drain();
        }
        for e in s.all_entries() {
            let c = lock(&e.conn).take();
            if let Some(c) = c {
                s.close_entry(&e, c, CloseReason::Shutdown);
            }
        }
    }
}

impl<H: Handler> Drop for Pool<H> {
    fn drop(&mut self) {
        self.shutdown();
    }
}
