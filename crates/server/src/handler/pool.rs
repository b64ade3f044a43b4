//! `thread_handling=pool-of-threads`: connections are scheduled by [`shoal_pool::Pool`].
//!
//! # How it works
//!
//! Each accepted [`Client`] is switched to the pool's mode ([`Client::set_dontwait`]: the
//! socket stays *blocking*, and every read and write of the command cycle passes `MSG_DONTWAIT`,
//! so no call of the cycle blocks a worker) and handed to the pool ([`PoolHandling::dispatch`])
//! under its connection id, so it lands in group `id % size`. (Only if that switch fails is the
//! socket made non-blocking instead: still correct, without the cheap linger.) The pool drives
//! it through [`ServerHandler`], our [`shoal_pool::Handler`]; the pool's design is the crate
//! doc of `shoal_pool`:
//!
//! * `login` and `handle` both run [`Client::serve_one_command`], which first flushes pending
//!   output (the greeting, or the rest of a reply), then processes at most one complete command
//!   (or one handshake step), or reads what the socket has without blocking. Its outcome maps to
//!   the pool's: `WantRead` → `Continue` (re-arm for readability: an incomplete packet never pins
//!   a worker), `WantWrite` → `WantWrite` (the socket buffer is full: the pool re-arms for
//!   writability and calls `handle` again, which flushes first), `Continue` → `Yield` when more
//!   input is already buffered (pipelined commands go back to the queue instead of starving the
//!   group), else `Continue`; `Closed` → `Close`. A handshake that needs several readable events
//!   simply returns `Continue` until the protocol state says authenticated. Because replies are
//!   written with `MSG_DONTWAIT`, the pool never blocks on the network and `WaitKind::Net` is
//!   never reported by this handler.
//! * `reads_to_end` is `true`, which lets the pool keep sockets under load armed
//!   edge-triggered: `step` returns `Continue` only after a read came back short or would
//!   block. A read that filled the whole buffer may have left bytes in the socket, which an
//!   edge-triggered socket would not report again, so it returns `Yield` instead
//!   (`pipelined_command_behind_a_full_read_is_answered` in `tests/pool.rs`).
//! * `await_input` (lingering) blocks in `recv` itself with `SO_RCVTIMEO` set to the linger
//!   budget and keeps the bytes in the protocol buffer ([`Client::await_input`]), so a lingered
//!   command costs the one `recv` it costs on a dedicated thread. That is why the socket stays
//!   blocking. KILL and server shutdown end the wait by shutting the socket down.
//! * `idle_deadline` is what one-thread-per-connection uses as its read timeout: before login,
//!   `connect_timeout` counted from accept; inside a half-received command, `net_read_timeout`;
//!   otherwise the session's `wait_timeout`/`interactive_timeout`. The pool's timer queues an
//!   expired connection HIGH and calls `timed_out`, which sends ER_CLIENT_INTERACTION_TIMEOUT
//!   (4031) to an idle authenticated connection (handshakes are just dropped), as
//!   `per_thread` does. A reply the client does not read (the socket stays unwritable) gets
//!   the same treatment with `net_write_timeout`, counted from the last write that made
//!   progress (`WantWrite` re-arms with a new deadline after each): the connection is closed
//!   and counted in `Aborted_clients`, as one thread per connection does with `SO_SNDTIMEO`.
//!   Without it a client that asked for a big result and never read it held its connection
//!   until `wait_timeout` (8 hours).
//! * `priority`: from [`shoal_session::Session::scheduling_hint`]: an open transaction
//!   (`in_transaction`, also implicit ones under autocommit=0) and row locks held by the table
//!   engine's transaction (`holds_locks`) drive the high queue (while tickets last) and the
//!   pool's lock-holder guarantee; the session's `thread_pool_priority` (high | low | auto),
//!   `thread_pool_high_prio_mode` and `thread_pool_high_prio_tickets` travel with the hint, so
//!   SET SESSION of them takes effect at the session's next command; SET GLOBAL of them applies
//!   to sessions opened afterwards (MySQL session-variable semantics: values are copied at
//!   connect). The pool's own global mode/tickets only serve hints without session values.
//! * `close`: the pool removed the socket from epoll already. Dropping the [`Client`] does the
//!   accounting (Aborted_clients for a logged-in connection that did not COM_QUIT, i.e. killed
//!   or timed out ones; Aborted_connects for failed handshakes) and disconnects the session
//!   (which rolls its transaction back and leaves the process list). At server shutdown a
//!   client that sent something the server will not answer gets ER_SERVER_SHUTDOWN (1053)
//!   first; an idle one is just closed (`Client::close_at_shutdown`, as MariaDB does). A handler call that panicked (the pool catches
//!   it) closes just that connection, logged as an error.
//!
//! # KILL
//!
//! `KILL CONNECTION` shuts the victim's socket down through its `SocketControl` (what the
//! per-thread handler relies on). Here the control additionally calls [`Pool::kill`] (installed
//! with `SocketControl::set_on_shutdown` at dispatch): an idle connection is queued HIGH and
//! closed at once, a queued one is closed instead of run, and a running one (e.g. in `SLEEP()`,
//! which polls the session's kill flag) is closed as soon as its command returns.
//!
//! # Configuration and observability
//!
//! [`PoolHandling::start`] builds the pool [`Config`] from the `thread_pool_*` variables (the
//! table `shoal_sched::vars::VARIABLES`: [`config_from_server`]) and
//! subscribes to SET GLOBAL of each (live: size, oversubscribe, adaptive, stall limit, max threads, idle
//! timeout, kick-up timer, priority mode and tickets, dedicated listener, linger, work stealing).
//! It registers a SHOW
//! STATUS provider (`Threadpool_*`), the information_schema tables `THREAD_POOL_GROUPS`,
//! `THREAD_POOL_QUEUES`, `THREAD_POOL_STATS`, `THREAD_POOL_WAITS` (MariaDB's columns) plus
//! `THREAD_POOL_LATENCY` (ours: queueing/execution p50/p95/p99/max per group) and
//! `THREAD_POOL_ADAPTIVE_HISTORY` (ours: the adaptive controller's cap changes; the current cap
//! is `THREAD_POOL_GROUPS.CONCURRENCY_CAP`), and a process-list
//! state provider (`queued (high)`, `running`, `waiting: SLEEP`, ...). All callbacks hold a
//! `Weak` pool reference, so a stopped pool just contributes nothing.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use shoal_pool::{CloseReason, Config, Handler, Outcome, Pool, PoolError, PoolStats, PrioHint};
use shoal_sched::vars::VARIABLES;
use shoal_session::hooks::VirtualTable;
use shoal_session::vars::{to_pool_value, VarValue};
use shoal_session::Server;
use shoal_sql::value::Value;

use crate::client::{self, Client};

/// A connection as the pool holds it.
pub struct PoolConn {
    /// Socket, protocol state and session.
    client: Client,
    /// `connect_timeout` after accept: the handshake must complete by then.
    connect_deadline: Instant,
}

impl PoolConn {
    /// Wraps an accepted client (switched to `MSG_DONTWAIT` reads and writes on its blocking
    /// socket, see [`Client::set_dontwait`]).
    pub fn new(mut client: Client, connect_timeout: Duration) -> PoolConn {
        if client.set_dontwait().is_err() {
            // Still correct (and never blocking a worker), only without the cheap linger.
            let _ = client.stream().set_nonblocking(true);
        }
        PoolConn {
            client,
            connect_deadline: Instant::now() + connect_timeout.max(Duration::from_millis(1)),
        }
    }
}

/// The server's [`Handler`]: runs the [`Client`] cycle on pool workers.
pub struct ServerHandler;

impl ServerHandler {
    fn step(&self, conn: &mut PoolConn) -> Outcome {
        match conn.client.serve_one_command() {
            client::Outcome::Continue => {
                // Bytes already read but not run, or a read that filled the buffer (the socket
                // may hold more, and an edge-triggered socket would not report them again):
                // run again rather than wait for the socket.
                if conn.client.connection().buffered_input() > 0
                    || conn.client.may_have_more_input()
                {
                    Outcome::Yield
                } else {
                    Outcome::Continue
                }
            }
            client::Outcome::WantRead => Outcome::Continue,
            client::Outcome::WantWrite => Outcome::WantWrite,
            client::Outcome::TimedOut | client::Outcome::Closed => Outcome::Close,
        }
    }
}

impl Handler for ServerHandler {
    type Conn = PoolConn;

    fn fd(&self, conn: &PoolConn) -> RawFd {
        conn.client.stream().as_raw_fd()
    }

    fn login(&self, conn: &mut PoolConn) -> Outcome {
        self.step(conn)
    }

    fn handle(&self, conn: &mut PoolConn) -> Outcome {
        self.step(conn)
    }

    /// `step` returns `Continue` only after a read came back short or would block.
    fn reads_to_end(&self) -> bool {
        true
    }

    fn await_input(&self, conn: &mut PoolConn, budget: Duration) -> bool {
        conn.client.await_input(budget)
    }

    fn priority(&self, conn: &PoolConn) -> PrioHint {
        let c = conn.client.connection();
        if !c.is_authenticated() {
            return PrioHint::default();
        }
        c.backend().scheduling_hint()
    }

    fn idle_deadline(&self, conn: &PoolConn) -> Option<Instant> {
        match conn.client.timeout_kind() {
            client::TimeoutKind::Connect => Some(conn.connect_deadline),
            _ => Some(Instant::now() + conn.client.read_timeout_now()),
        }
    }

    fn timed_out(&self, conn: &mut PoolConn) {
        conn.client.close_timed_out();
    }

    fn close(&self, mut conn: PoolConn, reason: CloseReason) {
        match reason {
            CloseReason::Shutdown => conn.client.close_at_shutdown(),
            CloseReason::Panicked => tracing::error!(
                "connection {}: panicked while being served (see the panic message above); \
                 closed it, the server goes on",
                conn.client.id()
            ),
            _ => {}
        }
        // Dropping the client does the accounting and disconnects the session.
        drop(conn);
    }
}

/// Errors starting the pool.
#[derive(Debug, thiserror::Error)]
pub enum PoolStartError {
    /// The pool refused the configuration or could not create its threads/epoll.
    #[error("cannot start the thread pool: {0}")]
    Pool(#[from] PoolError),
}

/// Builds one information_schema table from a stats snapshot.
/// A reset of some of the pool's statistics, run by `FLUSH <name>`.
type ResetFn = fn(&Pool<ServerHandler>);

type TableFn = fn(&PoolStats) -> VirtualTable;

/// The running pool plus its server hooks.
pub struct PoolHandling {
    pool: Arc<Pool<ServerHandler>>,
    server: Arc<Server>,
}

/// The pool configuration the `thread_pool_*` variables describe: `Config::default()` with
/// each variable of the pool's table ([`shoal_sched::vars::VARIABLES`]) written into it.
pub fn config_from_server(server: &Server) -> Config {
    let mut config = Config::default();
    for var in VARIABLES {
        if let Some(v) = server.variable_value(var.name) {
            (var.set)(&mut config, &to_pool_value(&v));
        }
    }
    config.stack_size = Some(server.thread_stack());
    config
}

/// Applies one SET GLOBAL to the pool (ignores other variables): the new value is written
/// into the running pool's configuration by the table's setter, and the pool applies the
/// variable's knob.
fn apply_variable(pool: &Pool<ServerHandler>, name: &str, v: &VarValue) {
    let Some(var) = shoal_sched::vars::find(&name.to_ascii_lowercase()) else {
        return;
    };
    let mut config = pool.config();
    (var.set)(&mut config, &to_pool_value(v));
    if let Err(e) = pool.apply(var.knob, &config) {
        tracing::warn!("SET GLOBAL {name}: the thread pool did not apply it: {e}");
    }
}

fn int(n: impl TryInto<i64>) -> Value {
    Value::Int(n.try_into().unwrap_or(i64::MAX))
}

/// `SHOW GLOBAL STATUS` rows of the pool.
pub fn status_rows(st: &PoolStats) -> Vec<(String, String)> {
    let mut c = shoal_pool::Counters::default();
    for g in &st.groups {
        let x = &g.counters;
        c.thread_creations += x.thread_creations;
        c.thread_creations_due_to_stall += x.thread_creations_due_to_stall;
        c.wakes += x.wakes;
        c.wakes_due_to_stall += x.wakes_due_to_stall;
        c.throttles += x.throttles;
        c.stalls += x.stalls;
        c.polls_by_listener += x.polls_by_listener;
        c.polls_by_worker += x.polls_by_worker;
        c.dequeues_by_listener += x.dequeues_by_listener;
        c.dequeues_by_worker += x.dequeues_by_worker;
        c.prio_kickups += x.prio_kickups;
        c.creations_for_lock_holders += x.creations_for_lock_holders;
        c.cap_bypasses += x.cap_bypasses;
        c.creations_refused += x.creations_refused;
        c.migrations_in += x.migrations_in;
        c.steering_refused += x.steering_refused;
        c.steals += x.steals;
        c.balanced += x.balanced;
        c.lingers += x.lingers;
        c.linger_hits += x.linger_hits;
        c.arms += x.arms;
        c.edge_idles += x.edge_idles;
        c.edge_requeues += x.edge_requeues;
        c.recovered_events += x.recovered_events;
        c.adaptive_raises += x.adaptive_raises;
        c.adaptive_lowers += x.adaptive_lowers;
        c.adaptive_reverts += x.adaptive_reverts;
    }
    let sum = |f: fn(&shoal_pool::GroupStats) -> usize| -> u64 {
        st.groups.iter().map(f).sum::<usize>() as u64
    };
    let mut rows: Vec<(&str, u64)> = vec![
        ("Threadpool_threads", st.threads as u64),
        ("Threadpool_idle_threads", st.idle_threads as u64),
        ("Threadpool_active_threads", st.active() as u64),
        ("Threadpool_standby_threads", sum(|g| g.standby)),
        ("Threadpool_waiting_threads", sum(|g| g.waiting)),
        ("Threadpool_lingering_threads", sum(|g| g.lingering)),
        ("Threadpool_groups", st.size as u64),
        ("Threadpool_connections", st.connections as u64),
        ("Threadpool_queue_high", sum(|g| g.queue_high)),
        ("Threadpool_queue_low", sum(|g| g.queue_low)),
        ("Threadpool_queued", st.queued() as u64),
        ("Threadpool_stalled_groups", sum(|g| g.is_stalled as usize)),
        ("Threadpool_stalls", c.stalls),
        ("Threadpool_thread_creations", c.thread_creations),
        (
            "Threadpool_thread_creations_due_to_stall",
            c.thread_creations_due_to_stall,
        ),
        ("Threadpool_thread_creations_refused", c.creations_refused),
        (
            "Threadpool_thread_creations_for_lock_holders",
            c.creations_for_lock_holders,
        ),
        ("Threadpool_throttles", c.throttles),
        ("Threadpool_wakes", c.wakes),
        ("Threadpool_wakes_due_to_stall", c.wakes_due_to_stall),
        ("Threadpool_polls_by_listener", c.polls_by_listener),
        ("Threadpool_polls_by_worker", c.polls_by_worker),
        ("Threadpool_dequeues_by_listener", c.dequeues_by_listener),
        ("Threadpool_dequeues_by_worker", c.dequeues_by_worker),
        ("Threadpool_prio_kickups", c.prio_kickups),
        ("Threadpool_cap_bypasses", c.cap_bypasses),
        ("Threadpool_migrations", c.migrations_in),
        ("Threadpool_steering_refused", c.steering_refused),
        ("Threadpool_steals", c.steals),
        ("Threadpool_balanced", c.balanced),
        ("Threadpool_lingers", c.lingers),
        ("Threadpool_linger_hits", c.linger_hits),
        ("Threadpool_arms", c.arms),
        ("Threadpool_edge_idles", c.edge_idles),
        ("Threadpool_edge_requeues", c.edge_requeues),
        ("Threadpool_recovered_events", c.recovered_events),
        ("Threadpool_sampled_seconds", st.sampled_seconds),
        ("Threadpool_stall_seconds", st.stall_seconds),
        (
            "Threadpool_cpu_affinity_engaged",
            u64::from(st.affinity_engaged),
        ),
        ("Threadpool_adaptive_raises", c.adaptive_raises),
        ("Threadpool_adaptive_lowers", c.adaptive_lowers),
        ("Threadpool_adaptive_reverts", c.adaptive_reverts),
        ("Threadpool_adaptive_regroups", st.regroups),
        (
            "Threadpool_concurrency_cap",
            st.groups
                .iter()
                .filter(|g| g.id < st.size)
                .map(|g| g.cap as u64)
                .sum(),
        ),
    ];
    let mut out: Vec<(String, String)> = rows
        .drain(..)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for k in shoal_wait::WaitKind::ALL {
        out.push((
            format!("Threadpool_waits_{}", k.name().to_ascii_lowercase()),
            st.waits_of(k).to_string(),
        ));
    }
    out
}

/// `information_schema.THREAD_POOL_GROUPS` (MariaDB's columns).
pub fn groups_table(st: &PoolStats) -> VirtualTable {
    VirtualTable {
        columns: [
            "GROUP_ID",
            "CONNECTIONS",
            "THREADS",
            "ACTIVE_THREADS",
            "STANDBY_THREADS",
            "QUEUE_LENGTH",
            "HAS_LISTENER",
            "IS_STALLED",
            "CONCURRENCY_CAP",
        ]
        .map(String::from)
        .to_vec(),
        rows: st
            .groups
            .iter()
            .map(|g| {
                vec![
                    int(g.id),
                    int(g.connections),
                    int(g.threads),
                    int(g.active),
                    int(g.standby),
                    int(g.queue_high + g.queue_low),
                    int(g.has_listener as u8),
                    int(g.is_stalled as u8),
                    int(g.cap),
                ]
            })
            .collect(),
    }
}

/// `information_schema.THREAD_POOL_ADAPTIVE_HISTORY` (shoal): each group's last cap changes by
/// its adaptive controller (oldest first), with the reason and what the interval measured.
pub fn adaptive_history_table(st: &PoolStats) -> VirtualTable {
    let mut rows = Vec::new();
    for g in &st.groups {
        for (i, a) in g.adaptive_history.iter().enumerate() {
            let since =
                a.at.duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
            let m = &a.sample;
            rows.push(vec![
                int(g.id),
                int(i),
                Value::DateTime(
                    shoal_sql::value::DateTime::from_unix(
                        since.as_secs() as i64,
                        since.subsec_micros(),
                    ),
                    6,
                ),
                int(a.old_cap),
                int(a.new_cap),
                Value::Str(a.reason.name().into()),
                int(m.elapsed.as_millis()),
                int(m.completed),
                Value::Double((m.throughput() * 10.0).round() / 10.0),
                int(m.mean_queue_us()),
                int(m.mean_exec_us()),
                Value::Double((m.wait_share() * 1000.0).round() / 1000.0),
                int(m.queued),
                Value::Double((m.read_wait_share() * 1000.0).round() / 1000.0),
                m.cpu_idle.map_or(Value::Null, |x| {
                    Value::Double((x * 1000.0).round() / 1000.0)
                }),
            ]);
        }
    }
    VirtualTable {
        columns: [
            "GROUP_ID",
            "SEQ",
            "DECIDED_AT",
            "OLD_CAP",
            "NEW_CAP",
            "REASON",
            "INTERVAL_MS",
            "COMPLETED",
            "THROUGHPUT",
            "AVG_QUEUEING_US",
            "AVG_EXECUTION_US",
            "WAIT_SHARE",
            "QUEUE_LENGTH",
            "READ_WAIT_SHARE",
            "CPU_IDLE",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// `information_schema.THREAD_POOL_QUEUES` (MariaDB's columns).
pub fn queues_table(st: &PoolStats) -> VirtualTable {
    VirtualTable {
        columns: [
            "GROUP_ID",
            "POSITION",
            "PRIORITY",
            "CONNECTION_ID",
            "QUEUEING_TIME_MICROSECONDS",
        ]
        .map(String::from)
        .to_vec(),
        rows: st
            .queue_entries
            .iter()
            .map(|q| {
                vec![
                    int(q.group_id),
                    int(q.position),
                    int(q.priority as u8),
                    int(q.conn_id),
                    int(q.queueing_time.as_micros()),
                ]
            })
            .collect(),
    }
}

/// `information_schema.THREAD_POOL_STATS` (MariaDB's columns).
pub fn stats_table(st: &PoolStats) -> VirtualTable {
    VirtualTable {
        columns: [
            "GROUP_ID",
            "THREAD_CREATIONS",
            "THREAD_CREATIONS_DUE_TO_STALL",
            "WAKES",
            "WAKES_DUE_TO_STALL",
            "THROTTLES",
            "STALLS",
            "POLLS_BY_LISTENER",
            "POLLS_BY_WORKER",
            "DEQUEUES_BY_LISTENER",
            "DEQUEUES_BY_WORKER",
        ]
        .map(String::from)
        .to_vec(),
        rows: st
            .groups
            .iter()
            .map(|g| {
                let c = &g.counters;
                vec![
                    int(g.id),
                    int(c.thread_creations),
                    int(c.thread_creations_due_to_stall),
                    int(c.wakes),
                    int(c.wakes_due_to_stall),
                    int(c.throttles),
                    int(c.stalls),
                    int(c.polls_by_listener),
                    int(c.polls_by_worker),
                    int(c.dequeues_by_listener),
                    int(c.dequeues_by_worker),
                ]
            })
            .collect(),
    }
}

/// `information_schema.THREAD_POOL_WAITS` (MariaDB's columns).
pub fn waits_table(st: &PoolStats) -> VirtualTable {
    VirtualTable {
        columns: vec!["REASON".into(), "COUNT".into()],
        rows: shoal_wait::WaitKind::ALL
            .iter()
            .map(|k| vec![Value::Str(k.name().into()), int(st.waits_of(*k))])
            .collect(),
    }
}

/// `information_schema.THREAD_POOL_LATENCY` (shoal): queueing and execution time percentiles
/// per group, in microseconds.
pub fn latency_table(st: &PoolStats) -> VirtualTable {
    VirtualTable {
        columns: [
            "GROUP_ID",
            "QUEUEING_COUNT",
            "QUEUEING_P50_US",
            "QUEUEING_P95_US",
            "QUEUEING_P99_US",
            "QUEUEING_MAX_US",
            "EXECUTION_COUNT",
            "EXECUTION_P50_US",
            "EXECUTION_P95_US",
            "EXECUTION_P99_US",
            "EXECUTION_MAX_US",
        ]
        .map(String::from)
        .to_vec(),
        rows: st
            .groups
            .iter()
            .map(|g| {
                let (q, e) = (&g.queue_time, &g.exec_time);
                vec![
                    int(g.id),
                    int(q.count),
                    int(q.p50_us),
                    int(q.p95_us),
                    int(q.p99_us),
                    int(q.max_us),
                    int(e.count),
                    int(e.p50_us),
                    int(e.p95_us),
                    int(e.p99_us),
                    int(e.max_us),
                ]
            })
            .collect(),
    }
}

impl PoolHandling {
    /// Starts the pool from the server's variables and registers every hook (see module docs).
    pub fn start(server: &Arc<Server>) -> Result<Arc<PoolHandling>, PoolStartError> {
        let pool = Arc::new(Pool::start(config_from_server(server), ServerHandler)?);
        // The groups are allocated at startup (max(128, thread_pool_size)): a SET GLOBAL
        // beyond them is refused with 1231 instead of being accepted and not applied.
        server
            .vars
            .set_runtime_max("thread_pool_size", pool.config().max_size as u64);
        let weak = Arc::downgrade(&pool);
        {
            let w = weak.clone();
            server.subscribe_variables(Box::new(move |name, v| {
                if let Some(p) = w.upgrade() {
                    apply_variable(&p, name, v);
                }
            }));
        }
        {
            let w = weak.clone();
            server.add_status_provider(Box::new(move |rows| {
                if let Some(p) = w.upgrade() {
                    rows.extend(status_rows(&p.stats()));
                }
            }));
        }
        let tables: [(&str, TableFn); 6] = [
            ("THREAD_POOL_GROUPS", groups_table),
            ("THREAD_POOL_QUEUES", queues_table),
            ("THREAD_POOL_STATS", stats_table),
            ("THREAD_POOL_WAITS", waits_table),
            ("THREAD_POOL_LATENCY", latency_table),
            ("THREAD_POOL_ADAPTIVE_HISTORY", adaptive_history_table),
        ];
        for (name, f) in tables {
            let w: Weak<Pool<ServerHandler>> = weak.clone();
            let columns = f(&pool.stats()).columns;
            server.add_virtual_table(
                "information_schema",
                name,
                Arc::new(move || match w.upgrade() {
                    Some(p) => f(&p.stats()),
                    None => VirtualTable {
                        columns: columns.clone(),
                        rows: Vec::new(),
                    },
                }),
            );
        }
        // `FLUSH THREAD_POOL_STATS` / `_WAITS` (MariaDB's resettable pool tables) and
        // `FLUSH THREAD_POOL_LATENCY` (ours): restart the counters or percentiles, for example
        // between two benchmark runs.
        let resets: [(&str, ResetFn); 3] = [
            ("THREAD_POOL_STATS", Pool::reset_counters),
            ("THREAD_POOL_WAITS", Pool::reset_waits),
            ("THREAD_POOL_LATENCY", Pool::reset_latency),
        ];
        for (name, f) in resets {
            let w: Weak<Pool<ServerHandler>> = weak.clone();
            server.add_flushable(
                name,
                Arc::new(move || {
                    if let Some(p) = w.upgrade() {
                        f(&p);
                    }
                }),
            );
        }
        {
            let w = weak.clone();
            server.set_process_state_provider(Arc::new(move || {
                let Some(p) = w.upgrade() else {
                    return Default::default();
                };
                p.connection_states()
                    .into_iter()
                    .filter(|(_, s)| *s != shoal_pool::ConnState::Idle)
                    .map(|(id, s)| (id as u32, s.label()))
                    .collect()
            }));
        }
        Ok(Arc::new(PoolHandling {
            pool,
            server: server.clone(),
        }))
    }

    /// Hands an accepted connection to the pool (login queued HIGH in group `id % size`) and
    /// routes KILL of it to [`Pool::kill`].
    pub fn dispatch(&self, client: Client) {
        let id = u64::from(client.id());
        let w = Arc::downgrade(&self.pool);
        client.control().set_on_shutdown(Box::new(move || {
            if let Some(p) = w.upgrade() {
                p.kill(id);
            }
        }));
        let conn = PoolConn::new(client, self.server.connect_timeout());
        if let Err(e) = self.pool.add(id, conn) {
            // The pool already handed the connection to `close` (Rejected).
            tracing::warn!("connection {id} refused by the thread pool: {e}");
        }
    }

    /// The pool (stats, live settings).
    pub fn pool(&self) -> &Pool<ServerHandler> {
        &self.pool
    }

    /// Stops the pool: running commands finish, every connection is closed
    /// (`Client::close_at_shutdown`).
    pub fn shutdown(&self) {
        self.pool.shutdown();
    }
}
