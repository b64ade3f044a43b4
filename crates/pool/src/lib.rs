//! # shoal-pool: a thread pool for connection servers
//!
//! This crate schedules *connections* — a file descriptor plus an opaque object owned by a
//! [`Handler`] — onto a small number of worker threads, the way MariaDB's and Percona's
//! `pool-of-threads` does. It knows nothing about MySQL: the server implements [`Handler`]
//! (log in, run one command, say whether the session is inside a transaction, time out, close)
//! and calls [`Pool::add`] for every accepted socket.
//!
//! ## How it works
//!
//! * **Groups.** The pool has `size` thread groups (`thread_pool_size`); connection `id` belongs
//!   to group `id % size`, or with CPU affinity, for a local client, to a group of its client's
//!   CPU (see "CPU affinity"). Each group (cache-line padded) has one mutex protecting a
//!   [`core::GroupCore`]: a high and a low FIFO queue whose entries carry their enqueue time, a
//!   LIFO list of idle workers (each sleeping on its own condvar, so exactly one is woken), the
//!   listener flag, thread/active/waiting/connection counts and event counters. Each group owns
//!   an epoll instance (`pool::epoll`, one system call per wait) where every idle connection is registered
//!   **one-shot** (an event is delivered to exactly one thread, and the connection is re-armed
//!   after each command) or, under load and with a handler that reads to the end,
//!   **edge-triggered** and never re-armed (see "Edge-triggered sockets"). `max_size` groups are allocated up front (like MariaDB's 128), so
//!   resizing never reallocates.
//! * **Connection life.** [`Pool::add`] queues the connection HIGH with a *login* action. A worker
//!   runs [`Handler::login`], then the connection is re-armed. When its socket is readable the
//!   listener queues it; a worker runs [`Handler::handle`] (one command), asks
//!   [`Handler::priority`] and [`Handler::idle_deadline`] and re-arms it (readable, or writable on
//!   [`Outcome::WantWrite`]). Every connection has a small state machine (`Idle` = armed in
//!   epoll, `Queued`, `Running`, `Closed`); only the party that moves it out of `Idle` (the
//!   listener on an event, `kill`, or the timer on an idle timeout) may queue it, so an event, a
//!   KILL and a timeout never run a connection twice. The socket is always removed from epoll
//!   before [`Handler::close`] gets the connection back (no KILL/close race on a reused fd).
//! * **Listener.** A worker that finds no work and no listener becomes the listener and blocks
//!   in the group's epoll. After a poll it claims the connections and queues them. If the queue
//!   was empty (or no worker is active, i.e. the queued work waits for a thread the pool could
//!   not provide), `dedicated_listener` is off and the group is under its concurrency cap, it
//!   executes the first event itself (saving a wake-up; it stops being the listener). Otherwise
//!   it stays the listener and, if the group has fewer active workers than the cap, wakes one
//!   idle worker (or creates one). When no worker can be had (`max_threads`) and none is active,
//!   the listener is woken (`Poller::notify`) to run the queued work itself rather than keep
//!   listening while the queue starves; the timer then covers for the missing listener. *Deviation from MariaDB:* MariaDB's listener executes its event
//!   even when the group is at the cap; ours respects the cap, so `oversubscribe` really bounds
//!   the number of running, non-waiting workers. And when the listener takes an event that puts
//!   the group at its cap, it wakes an idle worker (if any) to become the next listener, so that
//!   new events are queued — visible, prioritised and subject to stall detection — instead of
//!   sitting unseen in epoll until the timer notices the missing listener.
//! * **Priority.** [`HighPrioMode::Transactions`] (default): a connection whose
//!   [`PrioHint`] says it is in a transaction or holds locks goes to the high queue while it has
//!   tickets (`high_prio_tickets`, Percona semantics: refilled when it goes low, one spent per
//!   high placement). `Statements`: always high. `None`: always low. Login, KILL and idle
//!   timeouts are always high. Every timer tick, low entries older than `prio_kickup_timer` move
//!   to the high queue (MariaDB's kick-up). A hint may carry the session's own mode and tickets
//!   (session scope) and a [`SessionPriority`] (MariaDB `thread_pool_priority`): `High`/`Low`
//!   pick the queue outright, `Auto` applies the mode; none of this changes `must_run`.
//!   *Lock holders first* (ours): a hint with `holds_locks` that lands in the high queue is placed
//!   after the holders already there and before every other high entry (FIFO among holders). In
//!   `Transactions` mode every statement of an open transaction is high, so under heavy
//!   transactional load the high queue is long, and a session whose row locks block others
//!   must not wait behind sessions that hold nothing.
//! * **Lingering** (ours, `Config::linger`, 0 = off). A worker that has just run a connection's
//!   command may wait on that one socket ([`Handler::await_input`]) for up to `linger` and run
//!   the next command itself — no re-arm, no listener wake-up, no hand-off — but only while its
//!   group's queue is empty, a listener watches the other connections (a lingering listener
//!   hands its role to an idle worker or has one created), and fewer than
//!   `Config::linger_threads` threads of the group linger (a bound on threads, not on
//!   concurrency: the cap below still decides whether the lingered command may run), and only
//!   on a busy connection (its command started within four linger budgets of the end of its
//!   previous one; a login does not count). A lingering thread is not active, its connection
//!   reads as idle; when the command arrives it runs only if the queue is still empty and the
//!   group below its cap, otherwise the connection is queued like any other (queued directly,
//!   since the handler may already hold the command's bytes; a timeout re-arms it). See
//!   [`core::GroupCore::linger_begin`]. This is what makes the pool cost little at low
//!   concurrency, where one thread per connection is the best schedule anyway: in the steady
//!   state each busy connection has a lingering worker and the listener watches the rest, one
//!   thread per busy connection, which the group can afford exactly while nothing queues. At
//!   thousands of connections the queue is rarely empty and lingering switches itself off.
//!   A KILL shuts the socket down, which ends the wait at once; [`Pool::shutdown`] shuts every
//!   lingering socket down for reading (a worker sets its connection's `lingering` flag under
//!   the connection's lock, then re-checks the shutdown flag, so none is missed); a resize or a
//!   new `linger` is noticed when the current linger ends (the re-arm migrates the connection).
//! * **Concurrency limit.** A worker may not dequeue while `1 + oversubscribe` *other* workers of
//!   its group are active, unless the group is stalled. Workers inside a reported wait
//!   (`shoal_wait::wait_begin`, observed through a per-worker [`shoal_wait::WaitObserver`]) are
//!   not active. When the last active worker begins a wait and work is queued (or there is no
//!   listener), another worker is woken or created at once. Waits are counted by kind. A worker
//!   that dequeues while more is queued and its group is still under the cap brings in one more
//!   worker (MariaDB waits for a new event or the timer), so a burst fills the cap at once.
//!   For these wake-ups (the listener's and the dequeuing worker's) a worker inside a disk
//!   read still holds its slot: reads are short, and a worker woken for a reader's slot ran
//!   one statement, after which the reader, back and over the cap, parked: a wake and a park
//!   per read (`GroupCore::listener_wants_worker`). The cap is `1 + oversubscribe`, or, with
//!   `Config::adaptive` (`thread_pool_adaptive`), the group's own value, set by its
//!   controller (below).
//! * **Timer.** Every `stall_limit` a timer thread visits each group: kick-up; *stall* (queue
//!   non-empty and nothing dequeued since the previous tick → mark stalled, which lifts the cap
//!   until the next dequeue, and wake or create a worker); *missing listener* (connections but
//!   no listener and no events since the last tick → wake or create); when the group has no
//!   listener it also does a non-blocking poll itself so readable connections are queued (this
//!   is what rescues lock holders when every thread is blocked, below); idle connections past
//!   [`Handler::idle_deadline`] are queued HIGH with a timeout action ([`Handler::timed_out`] then
//!   [`Handler::close`]).
//! * **Threads.** Creation is throttled by group size (see [`core::throttle_interval`]: none below
//!   `2 + oversubscribe` threads, then 50/100/200 ms for <8/<16/≥16 threads, capped at one stall
//!   limit; never throttled when the group has no active thread). `max_threads` caps the pool,
//!   but every group can always reach 2 threads. A group never has more threads than
//!   connections (plus one). A worker idle for `idle_timeout` exits; the listener does not, so a
//!   used group keeps one thread. When the pool cannot create a thread it needs it logs a
//!   `tracing` warning, at most once per 10 s.
//! * **Live changes.** Every setter on [`Pool`] takes effect immediately. A resize marks nothing:
//!   each connection compares `id % size` with its group at its next re-arm and, if different,
//!   is deleted from the old epoll *before* being added to the new one; the connection counts
//!   move with it, and a thread is created in the new group if it has none. Idle connections move
//!   after their next command. Listeners of groups beyond the new size exit once their group
//!   has no connections left.
//!
//! ## Edge-triggered sockets
//!
//! A one-shot registration costs one `epoll_ctl` per command: the re-arm, which takes the epoll's
//! mutex and polls the socket, about 2.5 µs at 2048 connections, where the socket's lines are cold
//! (seventh pass, docs/perf-log/2026-12-01-session-9-seventh-pass.md). MariaDB's and Percona's
//! pools pay it too. When the handler promises [`Handler::reads_to_end`] (its `Continue` means its
//! last read came back short or would block), a connection that is *not busy* (its command did not
//! follow the previous one within the linger window: a loaded group, or a quiet client) is armed
//! **edge-triggered** instead, and stays armed: after its next commands it goes back to `Idle`
//! under its own lock with no system call ([`core::Phase::settle`], `Counters::edge_idles`).
//!
//! The price of an armed socket is that it reports every arrival of input, also while the
//! connection is queued or running, and reports it only once. The listener's claim
//! ([`core::Phase::report`]) therefore marks such a report `pending` instead of dropping it,
//! and the worker that settles the connection queues it again instead of making it idle
//! (`Counters::edge_requeues`): the next run reads the input, or finds it already read and
//! settles. Input the handler left in the socket is the other way to lose a wake-up, hence the
//! handler's promise (the server returns `Yield` after a read that filled its buffer). The loom
//! model `loom_edge_report_vs_settle_never_loses_input` checks every interleaving of an
//! arrival, the listener's report and the worker's settle; the scenario
//! `input_arriving_while_its_connection_runs_is_not_lost` runs it on real sockets.
//!
//! Busy connections stay one-shot, because their worker lingers on them: an armed socket
//! would report the awaited command to the listener as well (a wake-up for nothing and a
//! requeue after it). A linger on a connection that is still edge-triggered first disarms its
//! socket (one `epoll_ctl`, once per change of regime). So at low concurrency nothing changes,
//! and at thousands of connections, where nothing lingers, the re-arm is gone. Writability
//! (`WantWrite`) is always one-shot. `Counters::arms` counts every `epoll_ctl` that arms or
//! disarms.
//!
//! Input is "read" only when a run reads the socket to the end. A yield ([`Outcome::Yield`])
//! queues the connection for input its handler already holds, and that run may execute a
//! buffered command without touching the socket, so a report kept as `pending` survives the
//! yield and is consumed only by a settle after a command that ended wanting input
//! ([`core::Phase::settle`]). The pool once dropped it at the yield: a client that pipelined
//! (sysbench closes its prepared statements and sends COM_QUIT back to back) had its last
//! bytes and its FIN stranded in a socket whose only report was gone, and its session stayed
//! in CLOSE-WAIT until `wait_timeout`. The loom model `loom_edge_report_survives_a_yield`
//! and the scenario `input_reported_during_a_run_survives_a_yield` fail with that behaviour.
//!
//! A handler's read that comes back short proves the socket held no more *data*, not that it
//! held nothing: `recv` stops at the peer's FIN and reports the end of file only on the next
//! call, and a FIN that arrived with the last command shared that command's one report. (Data
//! or a FIN that arrives after the read is reported anew.) The socket is registered with
//! `EPOLLRDHUP`, so that shared report says so: epoll evaluates the socket when it hands the
//! report out, and a FIN already received shows as `RDHUP` (a reset as `HUP | ERR`). The
//! listener's claim remembers a hang-up in any report it collects for the connection, whatever
//! the report does to its phase (`hup_reported`, never cleared: a FIN stays), and only a
//! connection with one remembered is asked, before it settles idle edge-triggered, with one
//! `poll(2)` for `POLLRDHUP`; it is queued again if the peer has shut down its side
//! (`edge_requeues`): the next run reads the end of file and closes (scenario
//! `a_command_and_end_of_file_arriving_together_close_the_connection`, loom model
//! `loom_edge_hangup_behind_data_is_never_stranded`). Until session 50 every edge-triggered
//! settle made that `poll(2)`: at 512 and 2048 clients, where every command goes through the
//! listener, 0.83-0.90 system calls a statement
//! (docs/perf-log/2026-12-07-session-49-the-generator.md).
//!
//! ## The safety net (`recovered_events`)
//!
//! Every tick, after the rescue polls, the timer checks the sockets of all idle connections
//! armed for readability with one `poll(2)`. An idle connection whose socket is readable (input,
//! end of file or an error) is normal for a moment, since its report may be on its way; the
//! timer marks it and wakes the group's listener. If it is still idle and readable at least
//! one second later, and the group's epoll has since been polled to completion twice (the
//! second poll began after the mark, when the input was already there), no report is coming:
//! the timer queues it, counts [`Counters::recovered_events`] and logs an error. It is a
//! safety net, not a mechanism: every recovery is a lost wake-up, a bug in the pool or in a
//! handler's [`Handler::reads_to_end`] promise, and the test suites assert the counter stays
//! zero (the scenario `the_safety_net_recovers_input_epoll_never_reports` drops a report on
//! purpose with the hidden fault-injection hook `Pool::lose_next_report`). Its cost is one
//! `poll(2)` over the idle sockets per stall limit.
//!
//! ## Work stealing (`work_stealing`, off by default)
//!
//! Static `id % size` placement leaves groups uneven: one group's queue can wait behind its
//! concurrency cap while another group's workers sleep. With work stealing on, when a group queues
//! work it cannot start (at its cap and not stalled) it wakes one idle
//! worker of another group, and any worker that finds no work in its own group (and is not
//! needed as its listener) takes the head of such a queue before going to sleep. The stolen
//! connection stays in its group (epoll, counts); only that one command runs on the thief, whose
//! group accounts its activity and waits. Counters: `steals` (thief) and `stolen` (victim).
//!
//! Lock discipline (no thread ever blocks on a group lock while holding another): the waker
//! holds the victim's lock, so it only `try_lock`s the other groups, spinning a few dozen times
//! when one is briefly busy and never yielding (it would hold the victim's lock through another
//! thread's time slice: under CPU contention that stalled the victim's own listener and workers
//! and cut a connection-churn load to a tenth). A group whose lock stayed busy is left to the
//! timer thread, which holds no group lock: the waker marks the victim in `thief_pending` and
//! wakes the timer, which retries at once with blocking locks (`retry_thieves`), off its
//! stall-check schedule. The thief releases its own group's lock before it locks
//! the victims, one at a time, with a blocking lock, and re-checks its own group afterwards. An
//! earlier version let the thief `try_lock` the victim while holding its own lock: the victim's
//! lock is usually still held by the waker at that instant, so under load the thief gave up
//! and the work waited for the victim's busy worker (a flaky test, now fixed). A worker woken as
//! a thief also steals *before* taking its own group's vacant listener role (it used to become
//! the listener and forget the steal; `work_stealing_under_contention` caught that). And a
//! worker whose steal came back empty compares a pool-wide sequence number that every waker
//! bumps (`steal_seq`) before it parks: a waker that looked at its idle list while the steal
//! was in flight found nobody there, so it steals again (a missed steal found by reading the
//! code; loom model `loom_work_queued_during_a_futile_steal_is_stolen`).
//!
//! ## Balancing (`balance`, 2 ms by default)
//!
//! Work stealing helps a group only from another group's *idle* workers. When every group is
//! busy, static placement can still leave one group's queue waiting longer than another's: the
//! groups get unequal shares of the CPU (or of the disk), and with the same queue length the
//! slower group's connections wait longer. One run of 2048 I/O-bound clients on two groups had
//! median queueing times of 148 and 128 ms side by side.
//!
//! With `balance` set to a margin, a worker that may dequeue (below its cap, or stalled) and
//! whose group has work looks at one other group, in turn, before taking its own next entry. If
//! that group's next entry was queued earlier by more than the margin, it takes that entry
//! instead. Each group publishes when its next entry was queued in an atomic (written under its
//! lock when a worker dequeues or the listener queues). The look is therefore a load, not a
//! lock. A stale value costs at most a futile lock of the other group, because the taker
//! re-checks the entry's age under that lock. The taker follows the thieves' lock discipline
//! above: it releases its own lock before it locks the other group. The taken entry runs like
//! a stolen one, and a lock holder's forced entry is never taken (its thread may be on the
//! way). Every group's concurrency stays under its own cap. The same run with balancing had
//! medians of 140 and 136 ms, and the pool's p99 over four A B B A rounds fell by about 15 %
//! (docs/perf-log/2026-11-30-session-6-fifth-pass.md). Counter: `balanced` (the group taken
//! from).
//!
//! A worker about to take an entry of its low-priority queue compares it with the other
//! group's low queue, not with that group's next entry: in a transactional load the high
//! queues hold open transactions' statements (`must_run`, which stay with their group), and a
//! new transaction's first statement waits in the low queue behind all of them, so comparing
//! next entries hid the longest waits from the balancer (0.1-0.2 entries balanced a read-write
//! transaction at 512 cached clients; 0.54 since, and adaptive's p99 there fell by an eighth:
//! docs/perf-log/2026-12-06-session-42-low-queues.md).
//!
//! ## CPU affinity (`cpu_affinity`, on by default)
//!
//! Each answer a worker sends wakes its client's thread. One thread per connection always
//! wakes the same client, and Linux keeps the pair on one CPU; a pool worker wakes a different
//! client after every command, Linux puts each back on the CPU it last ran on, and half the
//! time that is the other CPU: its run-queue lock and a rescheduling interrupt inside every
//! `sendto`. With affinity in effect each group's workers are pinned to one CPU (group `g` on
//! the `g % n`-th allowed CPU), and a connection from a loopback address moves to a group of
//! the CPU its client last sent from (`SO_INCOMING_CPU`, asked every 4th command), so the wake-up
//! stays on the worker's CPU and the scheduler's balancing of the client threads balances the
//! groups. In effect with at least 2 CPUs and `size >= ` their count, and engaged only while
//! the local clients' commands come from every CPU (one client thread driving every
//! connection would crowd them into one CPU's group); remote and Unix-socket connections keep
//! `id % size`. At 64 sysbench clients on 2 cores it took the pool from
//! 80-84k to 122-125k point selects a second and its kernel time per statement from 8.3-8.8 to
//! 4.8-4.9 µs. How and the costs: `pool::affinity`.
//!
//! ## Adaptive concurrency (`adaptive`, on by default)
//!
//! The best `oversubscribe` depends on the load: CPU-bound statements want one runnable worker
//! per core, and more only lengthen every execution; statements that block where nothing
//! reports it (page reads inside the storage engine, say) want more. With `adaptive` on, each group carries a
//! [`adapt::Controller`], a pure state machine that the timer feeds once per tick (at least
//! 100 ms apart) with what the group measured since its last decision: statements completed,
//! their total queueing and execution time, the time its workers spent in reported waits
//! (timed by the worker's [`shoal_wait::WaitObserver`]) and the queue length. It answers with the
//! group's cap. The cap is published in an atomic of the group and read wherever
//! `1 + oversubscribe` used to be: the dequeue rule, the listener's execute-or-queue choice,
//! stealing, lingering and the creation throttle (which grants `2 + oversubscribe` threads
//! unthrottled). The controller is hill climbing on throughput, steered by where the CPU went
//! over the tick (the machine's idle share from `/proc/stat`, and the server's own CPU share:
//! `pool/cpu.rs`), and bounded by `min(1 + oversubscribe, ADAPT_FLOOR)..=max_threads / size`:
//! it raises the cap while work queues and the CPU idles, or the workers spend a quarter of
//! their time in disk reads (the one reported wait more workers overlap), or a lowering has
//! just cost throughput; it lowers a raised or a high static cap while the CPUs are saturated,
//! never below the default concurrency, except for a group that counts as CPU-bound (saturated
//! CPUs and almost no disk reads over several intervals), which goes down to a cap of 2 (3 if
//! its workers spend at least half their time in other waits, such as commits), and
//! back up to the floor the moment it reads from the disk again; a group whose workers spend
//! most of their time in disk reads and almost none in other waits counts as read-bound, and
//! its floor is 8. Its module doc says why that idea and not a
//! latency-gradient or AIMD limiter, and why not the share of all reported waits it was first
//! steered by. Every cap change lands in a per-group history of the last
//! 32 ([`GroupStats::adaptive_history`]), with counters `adaptive_raises`, `adaptive_lowers`
//! and `adaptive_reverts`. Switching it on starts every group at `1 + oversubscribe`;
//! switching it off restores the static cap at once.
//!
//! With `adaptive_groups` as well (on by default), the timer also chooses how many groups
//! connections are placed in ([`regroup::Regroup`], fed with every adaptive group's interval
//! summed): `4 x size` while the connections are few or the load is read-bound (`size` for a
//! read-bound load at more than 512 connections a CPU), `size / 2` while they are many and it
//! is not (a merged group's floor is then 3 per CPU it covers), applied as a live resize (connections move at their
//! next re-arm). `size` stays what was set (`Config::size` in [`Pool::config`]); the groups in
//! use are [`PoolStats::size`], the changes [`PoolStats::regroups`]. The `regroup` module doc
//! says what the whole static grid showed that caps alone could not reach.
//!
//! ## The lock-holder guarantee (no pool-wide deadlock)
//!
//! The classic failure: a session holds a row lock (or an open transaction) and is idle; every
//! other session blocks on that lock; the pool reaches `max_threads`; nobody is left to read the
//! holder's COMMIT. Here, a connection whose last [`PrioHint`] has `in_transaction` or
//! `holds_locks` is queued `must_run` (in normal operation that only means the high queue, per
//! `high_prio_mode`; it does not lift the concurrency cap, or transactional load would ignore
//! `oversubscribe`), and:
//!
//! 1. whenever the pool wants a worker for a group and creation is *refused* because
//!    `max_threads` is reached while a `must_run` entry is queued there, it creates a thread
//!    anyway (`creations_for_lock_holders`; at most one per queued holder);
//! 2. that forced thread takes the first `must_run` entry, ignoring order and the cap
//!    (`cap_bypasses`);
//! 3. if the group has no listener (all its threads are blocked), the timer polls the group's
//!    epoll itself every tick (`polls_by_worker`), so the holder's COMMIT is seen within one stall
//!    limit and rule 1 applies;
//! 4. holders blocked behind *unreported* waits are covered by stall detection (a stalled group
//!    ignores the cap; high entries, where holders are, go first).
//!
//! Threads above `max_threads` exit as soon as they find no work instead of idling. The excess is
//! bounded by the number of queued lock holders. Tests: the scenario
//! `d_lock_holder_runs_at_max_threads` (synthetic handler) and, through SQL against the real
//! server, `crates/server/tests/pool.rs::lock_holder_commits_at_max_threads_while_waiters_block`.
//!
//! ## Shutdown protocol ([`Pool::shutdown`], also run on drop)
//!
//! 1. Set the pool-wide shutdown flag and each group's `shutdown` (under its lock).
//! 2. Wake the timer thread and join it.
//! 3. Wake every idle worker (its condvar) and every listener (`Poller::notify`).
//! 4. Workers finish the command they are running; instead of re-arming, they close their
//!    connection ([`CloseReason::Shutdown`]); then they exit.
//! 5. Join every worker thread (repeat until none is left, as a finishing worker may not create
//!    new ones once the flag is set).
//! 6. Drain the queues and the connection registry: every remaining connection is deleted from
//!    epoll and handed to [`Handler::close`] with [`CloseReason::Shutdown`].
//!
//! A handler call that never returns blocks step 5: handlers must honour their own timeouts.
//!
//! ## Observability
//!
//! [`Pool::stats`] returns a [`PoolStats`] snapshot: per group the MariaDB
//! `THREAD_POOL_GROUPS`/`_STATS` columns, queue entries (`THREAD_POOL_QUEUES`), waits by kind
//! (`THREAD_POOL_WAITS`), and queueing-/execution-time percentiles (HDR histograms recorded under
//! the group lock the worker takes anyway). [`Pool::connection_state`] and
//! [`Pool::connection_states`] give per-connection state for `SHOW PROCESSLIST`.
//! Enqueue times always come from the precise monotonic clock (`Instant::now()`, a vDSO call),
//! so `thread_pool_exact_stats` needs no separate mode: queueing times are always exact.
//! `Threadpool_threads` = [`PoolStats::threads`]; `Threadpool_idle_threads` =
//! [`PoolStats::idle_threads`] (MariaDB's meaning: threads minus active ones, so listeners and
//! threads inside reported waits count as idle). [`Counters::polls_by_worker`] counts the
//! timer's non-blocking polls of listener-less groups (one thread waits on a group's epoll at a
//! time, the listener, so workers never poll next to it).
//! [`PoolStats::stall_seconds`] (`Threadpool_stall_seconds`) counts, from a sample the timer
//! thread takes every second, the seconds in which some group's queue never emptied while the
//! process used under 10 % of its CPUs: queued work that waited on idle CPUs (the module
//! `pool::sampler` defines it precisely). Issue 19's I/O-bound target is none at all.
//!
//! ## Using it (the server's side)
//!
//! ```no_run
//! use std::net::{TcpListener, TcpStream};
//! use std::os::fd::{AsRawFd, RawFd};
//! use std::time::Instant;
//! use shoal_pool::{CloseReason, Config, Handler, Outcome, Pool, PrioHint};
//!
//! struct Echo;
//! impl Handler for Echo {
//!     type Conn = TcpStream; // a real server keeps its session and buffers here
//!     fn fd(&self, c: &TcpStream) -> RawFd { c.as_raw_fd() }
//!     fn login(&self, _c: &mut TcpStream) -> Outcome { Outcome::Continue }
//!     fn handle(&self, c: &mut TcpStream) -> Outcome {
//!         use std::io::{Read, Write};
//!         let mut buf = [0u8; 512];
//!         match c.read(&mut buf) {
//!             Ok(0) | Err(_) => Outcome::Close,
//!             Ok(n) => if c.write_all(&buf[..n]).is_ok() { Outcome::Continue } else { Outcome::Close },
//!         }
//!     }
//!     fn priority(&self, _c: &TcpStream) -> PrioHint { PrioHint::default() }
//!     fn idle_deadline(&self, _c: &TcpStream) -> Option<Instant> { None }
//!     fn timed_out(&self, _c: &mut TcpStream) {}
//!     fn close(&self, _c: TcpStream, _why: CloseReason) {} // dropping closes the socket
//! }
//!
//! let pool = Pool::start(Config { size: 4, ..Config::default() }, Echo)?;
//! let listener = TcpListener::bind("127.0.0.1:3306")?;
//! for (id, stream) in (1u64..).zip(listener.incoming()) {
//!     pool.add(id, stream?)?; // login queued HIGH in group id % size
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Where the code is
//!
//! [`core`]: the group state machine (every scheduling rule, plain data); [`adapt`]: the
//! adaptive controller; `pool`: the side effects, one file per role (the shared state in
//! `pool/mod.rs`, the `Pool` handle in `pool::handle`, a worker thread's loop in
//! `pool::worker`, the listener and socket arming in `pool::listener`, the timer thread in
//! `pool::timer`, work stealing and age balancing in `pool::balance`, CPU affinity in
//! `pool::affinity`); `stats`: snapshots. The configuration and the `thread_pool_*` variable table are
//! `shoal-sched`'s.
//!
//! ## Model checking
//!
//! The group state machine ([`core`]) is plain data. `model` holds loom models of it, and
//! `pool::model` loom models of the pool's own worker loop, wait accounting and shutdown: the
//! pool takes every lock, condvar, atomic and thread from the `crate::loom` shim (std, or loom
//! under `--cfg loom`), whose doc says what stays out of the models and why. Run them with
//! `RUSTFLAGS="--cfg loom" cargo test --release -p shoal-pool --lib loom`. The epoll side and
//! the timer are covered by the integration tests in `tests/`.

#![warn(missing_docs)]

pub mod adapt;
pub mod core;
mod loom;
#[cfg(test)]
mod model;
mod pool;
pub mod regroup;
mod stats;

pub use crate::core::{Counters, Prio};
pub use pool::{allowed_cpus, poll_readable, set_thread_cpus, Pool};
/// The contract types and the configuration live in `shoal-sched`, shared with the session
/// layer (which declares the `thread_pool_*` variables from its table).
pub use shoal_sched::vars::Knob;
pub use shoal_sched::{Config, HighPrioMode, PrioHint, SessionPriority};
pub use stats::{Adjustment, ConnState, GroupStats, Percentiles, PoolStats, QueueEntryInfo};

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// What the pool does with a connection after a handler call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Re-arm for readability: the next command arrives on the socket.
    Continue,
    /// The send buffer is full: re-arm for writability and call [`Handler::handle`] when the
    /// socket can take more (the handler keeps its pending output).
    WantWrite,
    /// Input is already buffered (pipelined commands): queue the connection again (low) without
    /// waiting for the socket.
    Yield,
    /// Close the connection ([`Handler::close`] with [`CloseReason::Handler`]).
    Close,
}

/// Why [`Handler::close`] is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The handler returned [`Outcome::Close`] (client quit, EOF, protocol error).
    Handler,
    /// [`Pool::kill`].
    Killed,
    /// The idle deadline passed ([`Handler::timed_out`] was called first).
    TimedOut,
    /// The pool shut down.
    Shutdown,
    /// Registering the socket with epoll failed.
    PollError,
    /// A handler call panicked (the worker survives; the connection does not).
    Panicked,
    /// [`Pool::add`] refused it (duplicate id, pool shut down).
    Rejected,
}

/// The server side of the pool: runs connections. All methods are called on pool threads.
pub trait Handler: Send + Sync + 'static {
    /// Per-connection state (session, socket, buffers).
    type Conn: Send + 'static;
    /// The connection's socket. It must stay open until [`Handler::close`].
    fn fd(&self, conn: &Self::Conn) -> RawFd;
    /// The first event of a connection (queued HIGH, runs on a pool worker): typically send
    /// the server greeting and return [`Outcome::Continue`]; the client's answer (and any
    /// further authentication round trip) then arrives through [`Handler::handle`].
    fn login(&self, conn: &mut Self::Conn) -> Outcome;
    /// The socket is readable (or writable after [`Outcome::WantWrite`], or the connection
    /// yielded): run at most one command and reply. Must not block reading the socket: read
    /// what is there into the connection's buffer and return [`Outcome::Continue`] on an
    /// incomplete packet. A reply that does not fit the socket either returns
    /// [`Outcome::WantWrite`] (keep the rest, the pool calls again when writable) or blocks
    /// inside a reported `WaitKind::Net` wait. Long waits (locks, disk, sleeps, fsync) must be
    /// reported with `shoal_wait` so the group can run other work meanwhile.
    fn handle(&self, conn: &mut Self::Conn) -> Outcome;
    /// Whether [`Handler::handle`] returns [`Outcome::Continue`] only after reading the socket
    /// to the end: its last read came back short of its buffer, or would block. (Bytes it read
    /// but did not run yet are its own business: it returns [`Outcome::Yield`] for them, and
    /// for a read that filled its buffer.) Then the pool may keep the socket of a connection
    /// under load armed edge-triggered, and a command ends with no `epoll_ctl` (see the crate doc,
    /// "Edge-triggered sockets"). The default, `false`, re-arms the socket one-shot after every
    /// command, which notices input left in the socket whatever the handler read.
    fn reads_to_end(&self) -> bool {
        false
    }
    /// Lingering (see the crate doc): wait up to `budget` for the connection's next input and
    /// say whether it came. `true` also for end of file or a socket error, which the following
    /// [`Handler::handle`] reports. The default polls [`Handler::fd`] (one `ppoll`; the command
    /// is then read by `handle`). A handler may instead block in its own read with a timeout
    /// and keep the bytes, so a lingered command costs the same syscalls as on a dedicated
    /// thread. Either way the wait must end early when the socket is shut down for reading:
    /// the pool's shutdown does that to every lingering connection, and KILL is expected to.
    fn await_input(&self, conn: &mut Self::Conn, budget: Duration) -> bool {
        poll_readable(self.fd(conn), budget)
    }
    /// Called after each command: does the session hold a transaction or locks?
    fn priority(&self, conn: &Self::Conn) -> PrioHint;
    /// When the idle connection should time out (`wait_timeout`), if ever.
    fn idle_deadline(&self, conn: &Self::Conn) -> Option<Instant>;
    /// The idle deadline passed: send the timeout error. [`Handler::close`] follows.
    fn timed_out(&self, conn: &mut Self::Conn);
    /// The connection leaves the pool (already removed from epoll): close the socket.
    fn close(&self, conn: Self::Conn, reason: CloseReason);
}

/// Errors of the pool API.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// A configuration value is out of range.
    #[error("invalid pool configuration: {0}")]
    InvalidConfig(String),
    /// Creating an epoll instance or a thread failed.
    #[error("pool I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// `add` with an id already in the pool.
    #[error("connection id {0} is already in the pool")]
    DuplicateConnection(u64),
    /// The pool is shutting down.
    #[error("the pool is shut down")]
    ShutDown,
}
