//! A group's epoll: the listener that polls it and hands connections to workers, and the
//! arming of a connection's socket after each command.
//!
//! The rules are the crate doc's: "Listener" (when it executes an event itself, when it wakes
//! a worker, why it respects the cap), "Connection life" (who may queue a connection, and the
//! socket leaving epoll before `close`), "Live changes" (migration after a resize) and
//! "Edge-triggered sockets" (the registration that is never re-armed, and its four ways to
//! lose a wake-up). This file carries them out; what it adds is the order of the steps.
//!
//! ## The listener
//!
//! A worker that finds no work and no listener takes the role (`get_event` in [`worker`]) and
//! calls [`Shared::listen`]: it blocks in the group's epoll with no lock held (one thread
//! waits on a group's epoll at a time, hence one listener per group). Each return is handled
//! in two steps, in the lock order of [`super`]:
//!
//! 1. `claim`, without the group lock: each reported connection is moved from `Idle` to
//!    `Queued` under its meta lock ([`Phase::report`]), or, an edge-triggered report on a
//!    connection that is queued or running, marked `pending`.
//! 2. Under the group lock, [`GroupCore::after_poll`] decides between executing the first event
//!    itself and queueing them all; the group's `polls` count is the safety net's evidence that
//!    epoll had its chance (see [`Shared::sweep`]).
//!
//! The listener leaves on shutdown and when a resize retired its group and its last
//! connection has moved away; `Poller::notify` wakes it for both.
//!
//! ## Arming
//!
//! [`Shared::rearm`] runs after every command that did not close the connection. The
//! connection's state machine ([`Phase::settle`]) says whether it is idle already (its socket
//! is still armed edge-triggered; if a report since the arming said the peer hung up, one
//! `poll(2)` looks for that hang-up behind the data), must be queued again (a yield, or input
//! reported while it ran), or must be armed: one-shot for a busy connection (its next linger
//! needs no disarm) or a write, edge-triggered for one that was quiet.

use super::*;

/// Whether the peer of socket `fd` has shut down its side (a FIN received), hung up or left an
/// error, whether or not data is still unread in front of it. A failed `poll` counts as a
/// hang-up: the caller then queues the connection, and the handler finds out.
pub(super) fn peer_hung_up(fd: RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd; a zero timeout never blocks.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    r < 0 || p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

impl<H: Handler> Shared<H> {
    /// Claims the connections behind `events` (Idle → Queued) for group `gid`.
    pub(super) fn claim(
        &self,
        gid: usize,
        events: &Events,
    ) -> Vec<(Entry<H::Conn>, Prio, bool, bool)> {
        let mut out = Vec::with_capacity(events.len());
        for (key, hup) in events.reports() {
            let Some(e) = self.lookup(key) else {
                continue;
            };
            let mut guard = lock(&e.meta);
            let m = &mut *guard;
            if std::mem::take(&mut m.lose_report) {
                continue;
            }
            // Whatever the report does to the phase (claim, `pending`, nothing after a
            // migration), a hang-up in it is remembered: it may be the only report of that FIN.
            m.hup_reported |= hup;
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
    pub(super) fn listen(
        self: &StdArc<Self>,
        gid: usize,
        events: &mut Events,
    ) -> Option<Entry<H::Conn>> {
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

    /// Puts a connection back to wait for its next event (migrating it to its new group after a
    /// resize), or queues it again on [`Outcome::Yield`] or when input arrived while it ran.
    /// `prefer_edge`: when its socket must be armed for input, arm it edge-triggered (it then
    /// stays armed, and the following commands settle without an `epoll_ctl`) rather than one-shot.
    pub(super) fn rearm(
        self: &StdArc<Self>,
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
        let (local, old) = (m.local, m.group);
        let target = self.home_group(e, local, &mut m.probes, old, size);
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
            if settle == Settle::Idle && m.hup_reported && peer_hung_up(e.fd) {
                // The handler's last read came back short, which says nothing of an end of
                // file behind the data: `recv` stops at the peer's FIN and reports it only on
                // the next call, and a FIN that arrived with the data (before their one report
                // was collected) is reported no more. (Data is different: data that arrives
                // after a read is reported again, to a listener that finds the connection
                // running or idle.) Such a FIN was in that report (`RDHUP`), so only a
                // connection with a hang-up reported is asked, with one `poll(2)`: queue it
                // again, and the next run reads the end of file. A FIN that arrives after the
                // last report was collected is reported anew, like data.
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
        let key = e.id;
        let edge = prefer_edge && outcome != Outcome::WantWrite;
        let (interest, mode) = if outcome == Outcome::WantWrite {
            (Interest::Write, Mode::Oneshot)
        } else if edge {
            (Interest::Read, Mode::Edge)
        } else {
            (Interest::Read, Mode::Oneshot)
        };
        m.group = target;
        m.writable = outcome == Outcome::WantWrite;
        m.phase = Phase::Idle;
        let poller = self.groups[target]
            .poller()
            .map_err(|_| CloseReason::PollError)?;
        let r = if m.registered {
            poller.modify(fd, key, interest, mode)
        } else {
            // SAFETY: as above; the fd is deleted from this poller before it is closed.
            unsafe { poller.add(e.fd, key, interest, mode) }
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
                self.groups[old]
                    .conns
                    .store(o.core.connections, Ordering::Relaxed);
            }
            if let Some(p) = self.groups[old].poller.get() {
                let _ = p.notify();
            }
            let mut t = self.groups[target].lock();
            t.core.connections += 1;
            self.groups[target]
                .conns
                .store(t.core.connections, Ordering::Relaxed);
            t.core.counters.migrations_in += 1;
            if t.core.threads == 0 {
                self.wake_or_create(target, &mut t.core, Reason::Normal);
            }
        }
        Ok(())
    }
}
