//! A group's epoll instance: the listener's wait, the sockets' arming, and the wake-up that
//! interrupts a wait. Thin calls into `rustix`'s epoll and eventfd, one system call each.
//!
//! # Why not the `polling` crate
//!
//! The pool used `polling::Poller` until session 26. Its `wait` is portable and precise, and
//! pays for it on every call: it arms a timerfd for the timeout (`timerfd_settime`), re-arms
//! that timerfd in epoll (`epoll_ctl`), waits (`epoll_wait`), then drains its notification
//! eventfd (`read`) and re-arms it (`epoll_ctl`) whether or not anyone notified. Five system
//! calls where one does. Counted with perf's syscall tracepoints under sysbench read-write at
//! 64 clients, those four extra calls were 27 of the pool's 83 system calls per transaction
//! (one-thread-per-connection makes 28), and the pool's kernel CPU per transaction was 10–25 %
//! above one-thread-per-connection's.
//!
//! Here a wait is one `epoll_wait`. The pool's timeouts are "none" (the listener) or "zero"
//! (the timer's rescue poll), both exact in epoll's milliseconds, so no timerfd is needed. The
//! wake-up is an eventfd registered **edge-triggered** and never drained by the waiter: every
//! `write` to an eventfd runs its wait-queue callbacks, so each [`Poller::notify`] queues one
//! more edge for the next (or current) `epoll_wait`, at the cost of that one `write`. The
//! counter only grows; should it ever reach its maximum (`u64::MAX - 1` writes), `write` fails
//! with `EAGAIN`, and `notify` drains it with one `read` and writes again (mio's waker works the
//! same way). [`Poller::wait`] drops the wake-up's events from what it returns, so a caller sees
//! only sockets, and an empty list after a notified wait.
//!
//! Interest and modes are the two the pool uses: a socket armed for one event (`EPOLLONESHOT`,
//! the MariaDB design: the event disarms it, so no two threads ever claim the same connection)
//! or edge-triggered (`EPOLLET`, the pool's optional cheaper re-arm); readable means
//! `IN | RDHUP | HUP | ERR | PRI` (a closing or failing socket is reported as readable, and its
//! read then sees the end; `RDHUP` makes a report say whether the peer had shut down its side
//! when it was collected, which spares the edge-triggered settle its `poll(2)`, see
//! [`Events::reports`] and the crate doc's "Edge-triggered sockets"), writable `OUT | HUP | ERR`.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::time::Duration;

use rustix::event::epoll::{self, CreateFlags, EventData, EventFlags};
use rustix::event::{eventfd, EventfdFlags, Timespec};

/// The key of the wake-up eventfd's events (no connection has this id).
const WAKE_KEY: u64 = u64::MAX;

/// What a registered socket is watched for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Interest {
    /// Input, or the socket's end or error.
    Read,
    /// Room to write, or the socket's end or error.
    Write,
    /// Nothing: registered but disarmed.
    None,
}

/// How a registered socket reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// One event, then disarmed until the next `modify` (`EPOLLONESHOT`).
    Oneshot,
    /// An event on every new readiness, armed until modified (`EPOLLET`).
    Edge,
}

fn flags(interest: Interest, mode: Mode) -> EventFlags {
    let base = match interest {
        Interest::Read => {
            EventFlags::IN | EventFlags::RDHUP | EventFlags::HUP | EventFlags::ERR | EventFlags::PRI
        }
        Interest::Write => EventFlags::OUT | EventFlags::HUP | EventFlags::ERR,
        Interest::None => EventFlags::empty(),
    };
    base | match mode {
        Mode::Oneshot => EventFlags::ONESHOT,
        Mode::Edge => EventFlags::ET,
    }
}

/// The events one wait returned (sockets only), in a buffer reused across waits.
pub(crate) struct Events {
    list: Vec<epoll::Event>,
}

impl Events {
    /// A buffer for up to `n` events a wait (at least one).
    pub(crate) fn with_capacity(n: usize) -> Self {
        Events {
            list: Vec::with_capacity(n.max(1)),
        }
    }

    /// A buffer of the pool's usual size.
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::with_capacity(super::MAX_EVENTS)
    }

    /// Forgets the last wait's events.
    pub(crate) fn clear(&mut self) {
        self.list.clear();
    }

    /// How many events the last wait returned.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// The connection ids (keys) of the last wait's events.
    #[cfg(test)]
    pub(crate) fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.list.iter().map(|e| e.data.u64())
    }

    /// The last wait's events: each connection id (key), and whether its report says the peer
    /// has shut down its side or hung up, or the socket has an error (`RDHUP | HUP | ERR`,
    /// evaluated when the wait collected the report).
    pub(crate) fn reports(&self) -> impl Iterator<Item = (u64, bool)> + '_ {
        let gone = EventFlags::RDHUP | EventFlags::HUP | EventFlags::ERR;
        self.list
            .iter()
            .map(move |e| (e.data.u64(), { e.flags }.intersects(gone)))
    }
}

/// One epoll instance and its wake-up eventfd.
pub(crate) struct Poller {
    epoll: OwnedFd,
    /// Registered edge-triggered under [`WAKE_KEY`]; see the module doc.
    wake: OwnedFd,
}

impl Poller {
    pub(crate) fn new() -> io::Result<Self> {
        let epoll = epoll::create(CreateFlags::CLOEXEC)?;
        let wake = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        epoll::add(
            &epoll,
            &wake,
            EventData::new_u64(WAKE_KEY),
            EventFlags::IN | EventFlags::ET,
        )?;
        Ok(Poller { epoll, wake })
    }

    /// Registers `fd` under `key`.
    ///
    /// # Safety
    /// `fd` must stay open until it is [`delete`](Self::delete)d from this poller (epoll would
    /// otherwise keep reporting a closed descriptor's file, or a reused number's).
    pub(crate) unsafe fn add(
        &self,
        fd: RawFd,
        key: u64,
        interest: Interest,
        mode: Mode,
    ) -> io::Result<()> {
        // SAFETY: the caller keeps `fd` open for as long as it is registered.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        let (data, flags) = (EventData::new_u64(key), flags(interest, mode));
        Ok(epoll::add(&self.epoll, fd, data, flags)?)
    }

    /// Changes what a registered `fd` is watched for (and re-arms a one-shot registration).
    pub(crate) fn modify(
        &self,
        fd: BorrowedFd<'_>,
        key: u64,
        interest: Interest,
        mode: Mode,
    ) -> io::Result<()> {
        let (data, flags) = (EventData::new_u64(key), flags(interest, mode));
        Ok(epoll::modify(&self.epoll, fd, data, flags)?)
    }

    /// Removes `fd` from this poller.
    pub(crate) fn delete(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        Ok(epoll::delete(&self.epoll, fd)?)
    }

    /// Waits for events (`None`: until one arrives or [`notify`](Self::notify) is called;
    /// `Some(ZERO)`: returns at once), replacing `events`' contents with the sockets' events.
    /// An interrupted wait (`EINTR`) returns with no events.
    pub(crate) fn wait(&self, events: &mut Events, timeout: Option<Duration>) -> io::Result<()> {
        events.list.clear();
        let ts = timeout.map(|t| Timespec {
            tv_sec: t.as_secs().try_into().unwrap_or(i64::MAX),
            tv_nsec: t.subsec_nanos().into(),
        });
        match epoll::wait(
            &self.epoll,
            rustix::buffer::spare_capacity(&mut events.list),
            ts.as_ref(),
        ) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        events.list.retain(|e| e.data.u64() != WAKE_KEY);
        Ok(())
    }

    /// Wakes the current wait, or the next one if nobody waits.
    pub(crate) fn notify(&self) -> io::Result<()> {
        let one = 1u64.to_ne_bytes();
        match rustix::io::write(&self.wake, &one) {
            Ok(_) => Ok(()),
            Err(rustix::io::Errno::AGAIN) => {
                // The counter is full: empty it, then write the edge again.
                let mut buf = [0u8; 8];
                let _ = rustix::io::read(&self.wake, &mut buf);
                rustix::io::write(&self.wake, &one)?;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }
}

impl AsFd for Poller {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.epoll.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (a, b)
    }

    #[test]
    fn oneshot_reports_once_until_rearmed() {
        let p = Poller::new().unwrap();
        let (mut a, b) = pair();
        unsafe { p.add(b.as_raw_fd(), 7, Interest::Read, Mode::Oneshot) }.unwrap();
        let mut ev = Events::with_capacity(8);
        p.wait(&mut ev, Some(Duration::ZERO)).unwrap();
        assert_eq!(ev.keys().count(), 0, "nothing to read yet");
        a.write_all(b"x").unwrap();
        p.wait(&mut ev, None).unwrap();
        assert_eq!(ev.keys().collect::<Vec<_>>(), vec![7]);
        a.write_all(b"y").unwrap();
        p.wait(&mut ev, Some(Duration::ZERO)).unwrap();
        assert_eq!(
            ev.keys().count(),
            0,
            "a one-shot registration is disarmed by its event"
        );
        p.modify(b.as_fd(), 7, Interest::Read, Mode::Oneshot)
            .unwrap();
        p.wait(&mut ev, Some(Duration::ZERO)).unwrap();
        assert_eq!(
            ev.keys().collect::<Vec<_>>(),
            vec![7],
            "re-armed, still readable"
        );
        p.delete(b.as_fd()).unwrap();
    }

    /// Whether the wake-up's edge is pending (a raw zero-timeout wait, which consumes it).
    fn wake_pending(p: &Poller) -> bool {
        let mut raw = Events::with_capacity(8);
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        epoll::wait(
            &p.epoll,
            rustix::buffer::spare_capacity(&mut raw.list),
            Some(&zero),
        )
        .unwrap();
        raw.list.iter().any(|e| e.data.u64() == WAKE_KEY)
    }

    #[test]
    fn notify_wakes_a_wait_and_is_not_reported_as_an_event() {
        let p = std::sync::Arc::new(Poller::new().unwrap());
        assert!(!wake_pending(&p));
        // Before a wait: the notification waits for the next wait.
        p.notify().unwrap();
        assert!(
            wake_pending(&p),
            "a notification is pending for the next wait"
        );
        assert!(
            !wake_pending(&p),
            "and consumed by it (edge-triggered, one report)"
        );
        p.notify().unwrap();
        p.notify().unwrap();
        let mut ev = Events::with_capacity(8);
        p.wait(&mut ev, Some(Duration::ZERO)).unwrap();
        assert_eq!(
            ev.keys().count(),
            0,
            "the wake-up is not reported as a socket"
        );
        assert!(!wake_pending(&p), "consumed by the filtered wait");
        // During a wait: a blocked waiter returns. Notify until it has (a notification sent
        // before it blocked is consumed by its wait just the same), for at most 60 s.
        let q = p.clone();
        let t = std::thread::spawn(move || {
            let mut ev = Events::with_capacity(8);
            q.wait(&mut ev, None).unwrap();
            ev.keys().count()
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !t.is_finished() && std::time::Instant::now() < deadline {
            p.notify().unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(t.is_finished(), "a notified wait returned");
        assert_eq!(t.join().unwrap(), 0);
    }

    #[test]
    fn a_full_wake_counter_is_emptied_and_still_wakes() {
        let p = Poller::new().unwrap();
        // Fill the eventfd's counter to its maximum (u64::MAX - 1), consume that edge.
        let max = (u64::MAX - 1).to_ne_bytes();
        rustix::io::write(&p.wake, &max).unwrap();
        assert!(wake_pending(&p));
        assert_eq!(
            rustix::io::write(&p.wake, &1u64.to_ne_bytes()),
            Err(rustix::io::Errno::AGAIN),
            "the counter is full"
        );
        p.notify()
            .expect("notify drains a full counter and writes again");
        assert!(
            wake_pending(&p),
            "the notification after the drain is pending"
        );
    }

    /// A report says whether the peer had shut down its side when the report was collected:
    /// not for data alone, yes for data and a FIN that arrived before the wait (their one
    /// edge-triggered report), and yes for a FIN that arrives after a data report (a new edge).
    #[test]
    fn a_report_carries_the_peers_hang_up() {
        let p = Poller::new().unwrap();
        let (mut a, b) = pair();
        unsafe { p.add(b.as_raw_fd(), 5, Interest::Read, Mode::Edge) }.unwrap();
        let mut ev = Events::with_capacity(8);
        a.write_all(b"x").unwrap();
        p.wait(&mut ev, None).unwrap();
        assert_eq!(ev.reports().collect::<Vec<_>>(), vec![(5, false)]);
        a.shutdown(std::net::Shutdown::Write).unwrap();
        p.wait(&mut ev, None).unwrap();
        assert_eq!(
            ev.reports().collect::<Vec<_>>(),
            vec![(5, true)],
            "the FIN after the data is a new edge, and says so"
        );
        let (mut c, d) = pair();
        c.write_all(b"y").unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        // Both are in (the FIN comes after the data) before the registration's first wait
        // collects its one report.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let fin_in = || super::super::listener::peer_hung_up(d.as_raw_fd());
        while !fin_in() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(fin_in(), "the FIN never arrived");
        unsafe { p.add(d.as_raw_fd(), 6, Interest::Read, Mode::Edge) }.unwrap();
        p.wait(&mut ev, None).unwrap();
        assert_eq!(
            ev.reports().collect::<Vec<_>>(),
            vec![(6, true)],
            "data and FIN together: one report, with the hang-up"
        );
        p.delete(b.as_fd()).unwrap();
        p.delete(d.as_fd()).unwrap();
    }

    #[test]
    fn edge_mode_reports_each_new_input() {
        let p = Poller::new().unwrap();
        let (mut a, b) = pair();
        unsafe { p.add(b.as_raw_fd(), 3, Interest::Read, Mode::Edge) }.unwrap();
        let mut ev = Events::with_capacity(8);
        a.write_all(b"x").unwrap();
        p.wait(&mut ev, None).unwrap();
        assert_eq!(ev.keys().collect::<Vec<_>>(), vec![3]);
        p.wait(&mut ev, Some(Duration::ZERO)).unwrap();
        assert_eq!(ev.keys().count(), 0, "no new input, no new edge");
        a.write_all(b"y").unwrap();
        p.wait(&mut ev, None).unwrap();
        assert_eq!(
            ev.keys().collect::<Vec<_>>(),
            vec![3],
            "new input, a new edge"
        );
        p.modify(b.as_fd(), 3, Interest::None, Mode::Oneshot)
            .unwrap();
        a.write_all(b"z").unwrap();
        p.wait(&mut ev, Some(Duration::ZERO)).unwrap();
        assert_eq!(ev.keys().count(), 0, "disarmed");
    }
}
