//! Loom models of the pool's own code: a worker's real loop (`get_event`), the real wait
//! accounting ([`Observer`]), `add` and the shutdown steps, on one group, through the
//! `crate::loom` shim.
//!
//! `crate::model` checks the group state machine alone; these check that the side effects
//! around it (the group lock, the worker slot's condvar and `wake` flag, the order of flag and
//! notification) lose no wake-up. A worker nobody wakes would wait on its condvar for good
//! (loom's `wait_timeout` never times out), which loom reports as a deadlock. Each model keeps
//! away from what loom cannot run (the shim's doc says what and why): its group is given a
//! listener up front, so no worker takes the role and blocks in epoll; a parked worker is
//! always there to be woken, so no thread is created; the idle timeout is an hour, so no
//! decision depends on the clock.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test --release -p shoal-pool --lib loom
//! ```
//!
//! Without `--cfg loom` the models run once on std threads as ordinary tests.

use super::worker::Observer;
use super::*;
use shoal_wait::WaitObserver;

/// Runs `f` under loom with no preemption bound: every interleaving (these models are small
/// enough: all three take well under a second), or once without `--cfg loom`.
fn model(f: impl Fn() + Sync + Send + 'static) {
    #[cfg(loom)]
    {
        let mut b = ::loom::model::Builder::new();
        b.preemption_bound = None;
        b.check(f);
    }
    #[cfg(not(loom))]
    f();
}

/// A handler the models never call into a socket with: their entries are only dequeued.
struct Quiet;

impl Handler for Quiet {
    type Conn = ();
    fn fd(&self, _: &()) -> RawFd {
        -1
    }
    fn login(&self, _: &mut ()) -> Outcome {
        Outcome::Continue
    }
    fn handle(&self, _: &mut ()) -> Outcome {
        Outcome::Continue
    }
    fn priority(&self, _: &()) -> PrioHint {
        PrioHint::default()
    }
    fn idle_deadline(&self, _: &()) -> Option<Instant> {
        None
    }
    fn timed_out(&self, _: &mut ()) {}
    fn close(&self, _: (), _: CloseReason) {}
}

/// A one-group pool (no thread started) whose group has `threads` threads, `active` of them
/// active, and a listener (not running: it only has to exist for the group's rules). The cap
/// is 1 (`oversubscribe` 0), balancing, stealing and lingering are off.
fn pool(threads: usize, active: usize) -> StdArc<Shared<Quiet>> {
    let config = Config {
        size: 1,
        max_size: 1,
        oversubscribe: 0,
        max_threads: 16,
        idle_timeout: Duration::from_secs(3600),
        balance: Duration::ZERO,
        work_stealing: false,
        linger: Duration::ZERO,
        histograms: false,
        ..Config::default()
    };
    let s = StdArc::new(Shared::new(&config, Quiet));
    {
        let mut g = s.groups[0].lock();
        g.core.threads = threads;
        g.core.active = active;
        g.core.listener = true;
        assert!(g.core.invariant_holds());
    }
    s.total_threads.store(threads, Ordering::SeqCst);
    s
}

/// A worker thread of group 0 (counted active by `pool`) looking for work with the real
/// `get_event`: what it got, as (connection id, action), or `None` when told to exit.
fn worker(s: &StdArc<Shared<Quiet>>) -> thread::JoinHandle<Option<(u64, Action)>> {
    let s = s.clone();
    thread::spawn(move || {
        let slot = Arc::new(WorkerSlot::new());
        let mut events = Events::new();
        s.get_event(0, &slot, &mut events, None, false)
            .map(|(e, a)| (e.id, a))
    })
}

/// A worker parks (nothing queued, a listener watches) while a connection is added: whether
/// `add` queues before the worker looks, or after it parked, the worker gets the login.
#[test]
fn loom_worker_parks_then_work_wakes_it() {
    model(|| {
        let s = pool(2, 1);
        let w = worker(&s);
        s.add(7, ()).expect("added");
        assert_eq!(w.join().unwrap(), Some((7, Action::Login)));
        let g = s.groups[0].lock();
        assert!(g.core.invariant_holds());
        assert_eq!((g.core.active, g.core.queued()), (1, 0));
    });
}

/// The group is at its cap (one running worker, W1), a second worker (W2) looks for work, a
/// connection is added, and W1 begins a reported wait, in any order. Queued work must not
/// wait behind a worker that is blocked: either `add` finds the group under its cap (W1
/// already waiting) or W1's `wait_begin` finds the work queued, and W2 runs it.
#[test]
fn loom_wait_begin_wakes_a_worker_for_queued_work() {
    model(|| {
        let s = pool(3, 2);
        let w2 = worker(&s);
        let w1 = {
            let s = s.clone();
            thread::spawn(move || {
                let obs = Observer::new(s, 0);
                obs.wait_begin(WaitKind::RowLock);
            })
        };
        s.add(7, ()).expect("added");
        w1.join().unwrap();
        assert_eq!(w2.join().unwrap(), Some((7, Action::Login)));
        let g = s.groups[0].lock();
        assert!(g.core.invariant_holds());
        assert_eq!((g.core.active, g.core.waiting), (1, 1));
    });
}

/// Shutdown's first and third steps (`begin_shutdown`, `wake_every_thread`) while a worker
/// is about to park: it sees the flag before it parks, or is woken after, and exits.
#[test]
fn loom_shutdown_wakes_a_parking_worker() {
    model(|| {
        let s = pool(2, 1);
        let w = worker(&s);
        s.begin_shutdown();
        s.wake_every_thread();
        assert_eq!(w.join().unwrap(), None);
        let g = s.groups[0].lock();
        assert!(g.core.invariant_holds());
        assert_eq!(g.core.threads, 1);
        drop(g);
        assert_eq!(s.total_threads.load(Ordering::SeqCst), 1);
    });
}
