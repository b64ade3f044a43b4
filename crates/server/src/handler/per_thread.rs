//! `thread_handling=one-thread-per-connection`: one OS thread serves one connection from login
//! to quit, looping over [`Client::serve_one_command`] on a blocking socket whose read timeout is
//! set to whichever timeout applies next (connect, idle, or net_read).
//!
//! Threads are reused through a thread cache (`thread_cache_size`): a thread whose connection
//! ended parks itself (counted in `Threads_cached`) and the next accepted connection is handed to
//! a parked thread before a new one is created (`Threads_created`).
//!
//! A panic while serving a connection is caught ([`serve`]): the connection is dropped while
//! unwinding (which does its accounting and leaves the process list, so `Threads_connected`
//! and `Aborted_clients` stay right), the panic is logged, and the thread goes back to the
//! cache. Uncaught, it would end the thread, and a second panic during that unwinding (for
//! instance on a lock the first one poisoned) would abort the whole server.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use shoal_session::Server;

use crate::client::{Client, Outcome};

struct State {
    /// Connections handed over but not yet picked up by a cached thread.
    pending: VecDeque<Client>,
    /// Cached (parked) threads.
    idle: usize,
}

struct Inner {
    server: Arc<Server>,
    state: Mutex<State>,
    cv: Condvar,
    shutdown: Arc<AtomicBool>,
}

/// The one-thread-per-connection handler.
#[derive(Clone)]
pub struct PerThread {
    inner: Arc<Inner>,
}

impl PerThread {
    /// A handler; `shutdown` is the server-wide "stop" flag.
    pub fn new(server: Arc<Server>, shutdown: Arc<AtomicBool>) -> PerThread {
        PerThread {
            inner: Arc::new(Inner {
                server,
                state: Mutex::new(State {
                    pending: VecDeque::new(),
                    idle: 0,
                }),
                cv: Condvar::new(),
                shutdown,
            }),
        }
    }

    /// Hands a new connection to a cached thread, or to a new one.
    pub fn dispatch(&self, client: Client) {
        {
            let mut st = self
                .inner
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if st.idle > st.pending.len() {
                st.pending.push_back(client);
                self.inner.cv.notify_one();
                return;
            }
        }
        self.inner
            .server
            .status()
            .threads_created
            .fetch_add(1, Ordering::Relaxed);
        let inner = self.inner.clone();
        let spawned = std::thread::Builder::new()
            .name("shoal-conn".into())
            .stack_size(self.inner.server.thread_stack())
            .spawn(move || thread_main(inner, client));
        if let Err(e) = spawned {
            tracing::error!("cannot create a connection thread: {e}");
        }
    }

    /// Wakes every cached thread so it exits (server shutdown).
    pub fn stop_cache(&self) {
        let _g = self
            .inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.inner.cv.notify_all();
    }
}

fn thread_main(inner: Arc<Inner>, first: Client) {
    let mut next = Some(first);
    while let Some(client) = next.take() {
        serve(client, &inner.server, &inner.shutdown);
        // Park in the thread cache, or exit.
        let mut st = inner.state.lock().unwrap_or_else(PoisonError::into_inner);
        let cache = inner.server.thread_cache_size() as usize;
        if st.idle >= cache || inner.shutdown.load(Ordering::Acquire) {
            return;
        }
        st.idle += 1;
        inner
            .server
            .status()
            .threads_cached
            .store(st.idle as u64, Ordering::Relaxed);
        loop {
            if let Some(c) = st.pending.pop_front() {
                next = Some(c);
                break;
            }
            if inner.shutdown.load(Ordering::Acquire) {
                break;
            }
            st = inner.cv.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
        st.idle -= 1;
        inner
            .server
            .status()
            .threads_cached
            .store(st.idle as u64, Ordering::Relaxed);
    }
}

/// Serves one connection to the end on the current thread (also used by the admin port). A
/// panic closes the connection and is logged; it does not leave this function.
pub fn serve(client: Client, server: &Server, shutdown: &AtomicBool) {
    let id = client.id();
    let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        serve_loop(client, server, shutdown)
    }));
    if served.is_err() {
        // Unwound out of a raw `wait_begin` without its `wait_end`: balance the wait reports.
        while shoal_wait::in_wait() {
            shoal_wait::wait_end();
        }
        tracing::error!(
            "connection {id}: panicked while being served (see the panic message above); \
             closed it, the server goes on"
        );
    }
}

fn serve_loop(mut client: Client, server: &Server, shutdown: &AtomicBool) {
    let _ = client.stream().set_write_timeout(Some(
        server.net_write_timeout().max(Duration::from_millis(1)),
    ));
    let mut current: Option<Duration> = None;
    loop {
        let t = client.read_timeout_now();
        if current != Some(t) {
            let _ = client.stream().set_read_timeout(Some(t));
            current = Some(t);
        }
        match client.serve_one_command() {
            Outcome::Continue => {
                if shutdown.load(Ordering::Acquire) {
                    client.close_at_shutdown();
                    return;
                }
            }
            Outcome::TimedOut => {
                client.close_timed_out();
                return;
            }
            // A blocking write that hit net_write_timeout.
            Outcome::WantWrite => return,
            Outcome::WantRead => {}
            Outcome::Closed => return,
        }
    }
}
