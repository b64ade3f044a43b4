//! Wait reporting: the contract between code that may block and the scheduler that runs it.
//!
//! A thread pool that caps the number of *active* workers per group must know when a worker stops
//! doing work because it waits: on a row lock, a disk read, a commit fsync, `SLEEP()`, or a socket
//! that would block. Otherwise a group whose workers all wait looks busy and the queued fast
//! queries behind them stall (MariaDB's `thd_wait_begin`/`thd_wait_end` service solves the same
//! problem). This crate is that service, and nothing more: it knows neither the pool nor MySQL.
//!
//! * Blocking code calls [`wait_begin`] before a potentially *long* wait and [`wait_end`] after
//!   it, or holds a [`WaitGuard`] from [`wait`]. Short waits (a mutex) must not be reported: each
//!   report may make the scheduler start another thread.
//! * A scheduler installs a per-thread [`WaitObserver`] with [`set_thread_observer`] while a worker
//!   runs a connection. With no observer installed a report costs a thread-local read and one
//!   relaxed atomic increment (the global per-kind count shown in `SHOW STATUS`).
//! * Reports nest: only the outermost `wait_begin`/`wait_end` pair reaches the observer, so a
//!   storage wait inside a `SLEEP()` wait (or a retry loop) is counted once.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Why a thread waits. The names and order follow MySQL's `thd_wait_type`, so that
/// `information_schema.THREAD_POOL_WAITS` can list them as MariaDB does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum WaitKind {
    /// Reported without a more precise reason.
    Unknown = 0,
    /// `SLEEP()` and other deliberate sleeps.
    Sleep,
    /// A read that missed the block cache and goes to disk.
    DiskIo,
    /// Waiting for a row lock held by another transaction.
    RowLock,
    /// Waiting for a global (server-wide) lock.
    GlobalLock,
    /// Waiting for a metadata lock (DDL against DML).
    MetaDataLock,
    /// Waiting for a table lock.
    TableLock,
    /// Waiting for a user-level lock (`GET_LOCK`).
    UserLock,
    /// Waiting for the binary log.
    Binlog,
    /// Waiting for a group commit leader to make this commit durable.
    GroupCommit,
    /// Waiting for an fsync.
    Sync,
    /// Waiting for the network: a socket write that would block on a slow reader.
    Net,
}

impl WaitKind {
    /// Every kind, in `thd_wait_type` order.
    pub const ALL: [WaitKind; 12] = [
        WaitKind::Unknown,
        WaitKind::Sleep,
        WaitKind::DiskIo,
        WaitKind::RowLock,
        WaitKind::GlobalLock,
        WaitKind::MetaDataLock,
        WaitKind::TableLock,
        WaitKind::UserLock,
        WaitKind::Binlog,
        WaitKind::GroupCommit,
        WaitKind::Sync,
        WaitKind::Net,
    ];

    /// The upper-case name MariaDB shows in `THREAD_POOL_WAITS.REASON`.
    pub fn name(self) -> &'static str {
        match self {
            WaitKind::Unknown => "UNKNOWN",
            WaitKind::Sleep => "SLEEP",
            WaitKind::DiskIo => "DISKIO",
            WaitKind::RowLock => "ROW_LOCK",
            WaitKind::GlobalLock => "GLOBAL_LOCK",
            WaitKind::MetaDataLock => "META_DATA_LOCK",
            WaitKind::TableLock => "TABLE_LOCK",
            WaitKind::UserLock => "USER_LOCK",
            WaitKind::Binlog => "BINLOG",
            WaitKind::GroupCommit => "GROUP_COMMIT",
            WaitKind::Sync => "SYNC",
            WaitKind::Net => "NET",
        }
    }

    /// Position in [`WaitKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Receives the outermost wait reports of the threads it is installed on.
pub trait WaitObserver: Send + Sync {
    /// The current thread is about to block for `kind`.
    fn wait_begin(&self, kind: WaitKind);
    /// The current thread stopped waiting (it is about to run again).
    fn wait_end(&self, kind: WaitKind);
}

thread_local! {
    static OBSERVER: RefCell<Option<Arc<dyn WaitObserver>>> = const { RefCell::new(None) };
    /// Nesting depth of reported waits on this thread, and the kind of the outermost one.
    static DEPTH: Cell<(u32, WaitKind)> = const { Cell::new((0, WaitKind::Unknown)) };
}

static COUNTS: [AtomicU64; 12] = [const { AtomicU64::new(0) }; 12];

/// Installs `observer` for the current thread and returns the previous one.
pub fn set_thread_observer(
    observer: Option<Arc<dyn WaitObserver>>,
) -> Option<Arc<dyn WaitObserver>> {
    OBSERVER.with(|o| std::mem::replace(&mut *o.borrow_mut(), observer))
}

/// Announces a potentially long wait on the current thread.
pub fn wait_begin(kind: WaitKind) {
    let (depth, outer) = DEPTH.with(|d| d.get());
    if depth == 0 {
        COUNTS[kind.index()].fetch_add(1, Ordering::Relaxed);
        DEPTH.with(|d| d.set((1, kind)));
        OBSERVER.with(|o| {
            if let Some(obs) = o.borrow().as_ref() {
                obs.wait_begin(kind);
            }
        });
    } else {
        DEPTH.with(|d| d.set((depth + 1, outer)));
    }
}

/// Ends the wait announced by the matching [`wait_begin`]. Unbalanced calls are ignored.
pub fn wait_end() {
    let (depth, outer) = DEPTH.with(|d| d.get());
    match depth {
        0 => {}
        1 => {
            DEPTH.with(|d| d.set((0, WaitKind::Unknown)));
            OBSERVER.with(|o| {
                if let Some(obs) = o.borrow().as_ref() {
                    obs.wait_end(outer);
                }
            });
        }
        n => DEPTH.with(|d| d.set((n - 1, outer))),
    }
}

/// Whether the current thread is inside a reported wait.
pub fn in_wait() -> bool {
    DEPTH.with(|d| d.get().0 > 0)
}

/// Ends a reported wait when dropped.
#[must_use = "the wait ends when the guard is dropped"]
pub struct WaitGuard(());

impl Drop for WaitGuard {
    fn drop(&mut self) {
        wait_end();
    }
}

/// Announces a wait that lasts as long as the returned guard.
pub fn wait(kind: WaitKind) -> WaitGuard {
    wait_begin(kind);
    WaitGuard(())
}

/// How many outermost waits of `kind` were reported process-wide since start.
pub fn count(kind: WaitKind) -> u64 {
    COUNTS[kind.index()].load(Ordering::Relaxed)
}

/// Zeroes the per-kind counts of [`count`] (`FLUSH STATUS`).
pub fn reset_counts() {
    for c in &COUNTS {
        c.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Log(Mutex<Vec<(bool, WaitKind)>>);

    impl WaitObserver for Log {
        fn wait_begin(&self, kind: WaitKind) {
            self.0.lock().unwrap().push((true, kind));
        }
        fn wait_end(&self, kind: WaitKind) {
            self.0.lock().unwrap().push((false, kind));
        }
    }

    #[test]
    fn only_outermost_wait_reaches_observer() {
        let log = Arc::new(Log::default());
        set_thread_observer(Some(log.clone()));
        let before = count(WaitKind::RowLock);
        {
            let _outer = wait(WaitKind::RowLock);
            assert!(in_wait());
            let _inner = wait(WaitKind::DiskIo);
        }
        assert!(!in_wait());
        wait_end(); // unbalanced: ignored
        set_thread_observer(None);
        assert_eq!(
            *log.0.lock().unwrap(),
            vec![(true, WaitKind::RowLock), (false, WaitKind::RowLock)]
        );
        assert_eq!(count(WaitKind::RowLock), before + 1);
    }

    #[test]
    fn observer_is_per_thread() {
        let log = Arc::new(Log::default());
        set_thread_observer(Some(log.clone()));
        std::thread::spawn(|| {
            let _w = wait(WaitKind::Sleep);
        })
        .join()
        .unwrap();
        set_thread_observer(None);
        assert!(log.0.lock().unwrap().is_empty());
    }
}
