//! Synchronisation shim: `std` normally, `loom` under `cfg(loom)`, as tokio does it.
//!
//! Every mutex, condvar, atomic, `Arc` and thread of the pool (`pool/*`, and the models) is
//! imported from here, so the loom build compiles the real code and a loom model can drive it:
//! loom then explores every interleaving of the real locks, condvars and atomics, and reports
//! a lost wake-up as a deadlock (loom's `Condvar::wait_timeout` never times out, so a worker
//! that nobody wakes waits for good). The models are `crate::model` (the group state machine
//! alone) and `pool::model` (the pool's own worker loop and wait accounting against it).
//!
//! What stays `std` in both builds, and why:
//!
//! * [`StdArc`]: the pool's shared state (`pool::Shared`) is the receiver of the methods that
//!   hand it to new threads (`self: &Arc<Self>`), and a method receiver must be a standard
//!   library pointer on stable Rust; the worker's wait observer is handed to `shoal_wait` as a
//!   `std::sync::Arc<dyn WaitObserver>` (loom's `Arc` cannot unsize to a trait object). Both
//!   live as long as the pool or the thread: loom's `Arc` would model only their reference
//!   counts, which guard nothing a model asks about. Every other `Arc` (connection entries,
//!   worker slots) is loom's.
//! * `OnceLock` (a group's lazily created poller) and `TryLockError` are not primitives loom
//!   models.
//!
//! What the models leave out: the epoll side (`pool::epoll::Poller`: the listener blocks in
//! `epoll_wait`, a system call loom cannot schedule around) and the timer thread (it acts on
//! real elapsed time, which loom does not model). Both compile under loom, but a model must
//! not reach them: it gives its group a listener up front so that no worker takes the role,
//! makes thread creation unnecessary (a parked worker is always there to be woken), and sets
//! timeouts far beyond a model's run so that no decision depends on the clock. The pool's
//! integration tests (`tests/`) cover those parts on real threads and sockets.

#[cfg(loom)]
pub(crate) use ::loom::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
#[cfg(loom)]
pub(crate) use ::loom::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use ::loom::thread;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::thread;

pub(crate) use std::sync::atomic::Ordering;
/// The one `Arc` that stays `std` under loom (see the module doc).
pub(crate) use std::sync::Arc as StdArc;

/// A spin-wait hint. Under loom it is loom's, which yields to the other threads of the model
/// (a spinning thread must let the lock holder it waits for make progress).
pub(crate) fn spin_loop() {
    #[cfg(loom)]
    ::loom::hint::spin_loop();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

/// Whether a worker thread has ended, so its handle can be dropped before shutdown joins the
/// rest. loom's join handles cannot say; under loom they are all kept until shutdown.
pub(crate) fn is_finished<T>(h: &thread::JoinHandle<T>) -> bool {
    #[cfg(not(loom))]
    return h.is_finished();
    #[cfg(loom)]
    {
        let _ = h;
        false
    }
}
