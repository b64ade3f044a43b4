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

/// A two-group pool (no thread started) with work stealing on and the cap at 1
/// (`oversubscribe` 0). Group 0 has a running worker (at its cap) and a listener; group 1 has
/// `threads` threads, one of them active (the model's worker), and a listener, so that worker
/// steals before it sleeps instead of taking the listener role.
fn two_groups() -> StdArc<Shared<Quiet>> {
    let config = Config {
        size: 2,
        max_size: 2,
        oversubscribe: 0,
        max_threads: 16,
        idle_timeout: Duration::from_secs(3600),
        balance: Duration::ZERO,
        work_stealing: true,
        linger: Duration::ZERO,
        histograms: false,
        ..Config::default()
    };
    let s = StdArc::new(Shared::new(&config, Quiet));
    for gid in 0..2 {
        let mut g = s.groups[gid].lock();
        g.core.threads = 2;
        g.core.active = 1;
        g.core.listener = true;
        assert!(g.core.invariant_holds());
    }
    s.total_threads.store(4, Ordering::SeqCst);
    s
}

/// The missed steal. Group 0 is at its cap; a connection is added to it (queued: its only
/// running worker is busy, so `add` wakes a thief of group 1) while group 1's worker, with no
/// work of its own, tries a steal and then parks, in any order. The work must be stolen: either
/// the worker's steal finds it queued, or the waker finds the worker parked (or, when group 1's
/// lock stayed busy, leaves it to the timer, whose retry the model runs as the timer would).
/// It failed, as a deadlock, while a waker could look for an idle worker of group 1 in the
/// window between the worker's futile steal (its own lock released) and its parking: the waker
/// found nobody idle, the worker parked without looking again, and the work waited for group
/// 0's busy worker (`work_stealing_under_contention`).
#[test]
fn loom_work_queued_during_a_futile_steal_is_stolen() {
    model(|| {
        let s = two_groups();
        let w = {
            let s = s.clone();
            thread::spawn(move || {
                let slot = Arc::new(WorkerSlot::new());
                let mut events = Events::new();
                s.get_event(1, &slot, &mut events, None, false)
                    .map(|(e, a)| (e.id, a))
            })
        };
        s.add(2, ()).expect("added"); // group 2 % 2 = 0
        let pending = s.thief_pending.swap(0, Ordering::SeqCst);
        if pending != 0 {
            s.retry_thieves(pending); // the timer, woken by `wake_thief`
        }
        assert_eq!(w.join().unwrap(), Some((2, Action::Login)));
        let g0 = s.groups[0].lock();
        assert!(g0.core.invariant_holds());
        assert_eq!((g0.core.queued(), g0.core.counters.stolen), (0, 1));
        drop(g0);
        let g1 = s.groups[1].lock();
        assert!(g1.core.invariant_holds());
        assert_eq!((g1.core.active, g1.core.counters.steals), (1, 1));
    });
}
