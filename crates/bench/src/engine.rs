//! The load engine: N clients as tokio tasks, closed or open loop, with shared counters and
//! HDR latency histograms.
//!
//! * **Closed loop** (`--rate=0`): each client runs events back to back; latency is measured
//!   from the start of each event, as sysbench does.
//! * **Open loop** (`--rate=R`): a scheduler task produces *intended start times* as a Poisson
//!   process of rate R (exponential gaps, like sysbench's `--rate`) into a queue; any free
//!   client takes the next one. Latency is measured from the intended start time, not from
//!   when a client got to it, so time spent queued because the server (or every client) was
//!   busy is part of the latency: coordinated omission cannot hide queueing. The queue depth
//!   is reported.
//!
//! Clients are connected (and their statements prepared) by [`Engine::add_clients`] before
//! they start; [`Engine::go`] releases them. That split lets a run take its "before" server
//! snapshot after all connect/prepare traffic, so `Com_*` deltas cover exactly the load.
//! Clients added after `go` (stepped load) start at once.
//!
//! Statistics: counters are atomics; latencies go to two histograms behind one mutex (one lock
//! per event): `interval` (per report line, swapped out by the reporter) and `window`
//! (the current measurement window: after warm-up, or the current step). Every statement
//! execution is also counted by kind, which tests compare with the server's `Com_*` counters.
//!
//! Errors follow sysbench: ignored codes (1213, 1205, 1020 by default) restart the event with
//! fresh random values and are counted; a lost connection is reconnected (statements prepared
//! again) and the event restarted; any other error fails the event (counted by code, and the
//! client rolls back its open transaction) and the client goes on with the next event.
//!
//! tpcc events are TPC-C transactions run by [`crate::tpcc::txn::execute`] (their statements
//! depend on what earlier ones returned, so they are not a list of [`Op`]s); after an ignored
//! error the client sends ROLLBACK and runs the same transaction again, and completed
//! transactions are also counted by type (tpmC).

use crate::client::{Client, ConnOpts, ExecError, PsMode};
use crate::rand::Rng;
use crate::result::{Latency, Summary};
use crate::tpcc::txn::{self as tpcc, Kind, Outcome, Stmt, Tally, Terminal, Txn, KINDS};
use crate::tpcc::Scale;
use crate::workload::{Class, Op, StmtKind, Workload, WorkloadDef, ALL_KINDS, N_KINDS};
use hdrhistogram::Histogram;
use mysql_async::Opts;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch, Notify, Semaphore};
use tokio::task::JoinHandle;

/// Engine configuration.
#[derive(Debug, Clone)]
pub struct EngineCfg {
    pub conn: ConnOpts,
    pub def: WorkloadDef,
    pub ps_mode: PsMode,
    /// Server error codes that restart the event (`--mysql-ignore-errors`).
    pub ignore: Vec<u16>,
    /// Events per second for an open loop; 0 = closed loop.
    pub rate: f64,
    pub seed: u64,
    /// Connections being opened at the same time.
    pub connect_concurrency: usize,
    /// At the end, how long clients may finish their current event before they are cut off
    /// (`--forced-shutdown`).
    pub grace: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("could not connect client {client} to {target}: {source}")]
    Connect {
        client: usize,
        target: String,
        source: ExecError,
    },
}

/// Counter values at one point in time.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    pub events: u64,
    pub reads: u64,
    pub writes: u64,
    pub other: u64,
    pub ignored: u64,
    pub errors: u64,
    pub reconnects: u64,
    pub kinds: [u64; N_KINDS],
    pub codes: BTreeMap<u16, u64>,
    /// tpcc: completed transactions by `tpcc::txn::Kind`, then New-Orders rolled back.
    pub txns: [u64; 6],
    /// The workload is tpcc (the summary gets tpmC and transactions by type).
    pub tpcc: bool,
}

impl Counts {
    pub fn queries(&self) -> u64 {
        self.reads + self.writes + self.other
    }

    pub fn minus(&self, o: &Counts) -> Counts {
        let mut kinds = [0; N_KINDS];
        for (i, k) in kinds.iter_mut().enumerate() {
            *k = self.kinds[i] - o.kinds[i];
        }
        let mut codes = self.codes.clone();
        for (c, n) in &o.codes {
            if let Some(v) = codes.get_mut(c) {
                *v -= n;
            }
        }
        codes.retain(|_, v| *v > 0);
        let mut txns = [0; 6];
        for (i, t) in txns.iter_mut().enumerate() {
            *t = self.txns[i] - o.txns[i];
        }
        Counts {
            txns,
            tpcc: self.tpcc,
            events: self.events - o.events,
            reads: self.reads - o.reads,
            writes: self.writes - o.writes,
            other: self.other - o.other,
            ignored: self.ignored - o.ignored,
            errors: self.errors - o.errors,
            reconnects: self.reconnects - o.reconnects,
            kinds,
            codes,
        }
    }

    /// Builds a summary for a window of `secs` with latency histogram `h`.
    pub fn summary(&self, secs: f64, h: &Histogram<u64>, max_queue: u64) -> Summary {
        let secs = secs.max(1e-9);
        let attempts = self.events + self.errors + self.ignored;
        Summary {
            secs,
            events: self.events,
            queries: self.queries(),
            reads: self.reads,
            writes: self.writes,
            other: self.other,
            tps: self.events as f64 / secs,
            qps: self.queries() as f64 / secs,
            latency_ms: Latency::from_hist(h),
            ignored_errors: self.ignored,
            errors: self.errors,
            errors_by_code: self.codes.clone(),
            reconnects: self.reconnects,
            success_pct: if attempts == 0 {
                100.0
            } else {
                100.0 * self.events as f64 / attempts as f64
            },
            statements_by_kind: ALL_KINDS
                .iter()
                .filter(|k| self.kinds[**k as usize] > 0)
                .map(|k| (k.name().to_string(), self.kinds[*k as usize]))
                .collect(),
            max_queue_depth: max_queue,
            tpmc: self
                .tpcc
                .then(|| self.txns[Kind::NewOrder as usize] as f64 * 60.0 / secs),
            transactions_by_type: if self.tpcc {
                KINDS
                    .iter()
                    .map(|k| (k.name().to_string(), self.txns[*k as usize]))
                    .chain([("new_order_rolled_back".to_string(), self.txns[5])])
                    .collect()
            } else {
                BTreeMap::new()
            },
        }
    }
}

struct Hists {
    interval: Histogram<u64>,
    window: Histogram<u64>,
}

fn new_hist() -> Histogram<u64> {
    // 1 us .. 1 hour, 3 significant digits; auto-resize beyond.
    let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("histogram bounds");
    h.auto(true);
    h
}

/// State shared by the clients and the engine.
struct Shared {
    stop: AtomicBool,
    stop_notify: Notify,
    events: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
    other: AtomicU64,
    ignored: AtomicU64,
    errors: AtomicU64,
    reconnects: AtomicU64,
    kinds: [AtomicU64; N_KINDS],
    codes: Mutex<BTreeMap<u16, u64>>,
    /// tpcc: completed transactions by type, then New-Orders rolled back.
    txns: [AtomicU64; 6],
    hists: Mutex<Hists>,
    /// Open loop: events produced and taken.
    produced: AtomicU64,
    taken: AtomicU64,
    /// Open loop: max queue depth since last reset.
    max_queue: AtomicU64,
    /// Clients currently running.
    running: AtomicUsize,
    last_error: Mutex<Option<String>>,
}

impl Shared {
    fn count_done(&self, k: StmtKind) {
        match k.class() {
            Class::Read => self.reads.fetch_add(1, Relaxed),
            Class::Write => self.writes.fetch_add(1, Relaxed),
            Class::Other => self.other.fetch_add(1, Relaxed),
        };
    }
}

impl Tally for Shared {
    fn sent(&self, k: StmtKind) {
        self.kinds[k as usize].fetch_add(1, Relaxed);
    }

    fn done(&self, k: StmtKind) {
        self.count_done(k);
    }
}

type Queue = Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Instant>>>;

/// A running (or ready) load.
pub struct Engine {
    cfg: Arc<EngineCfg>,
    opts: Opts,
    shared: Arc<Shared>,
    go_tx: watch::Sender<bool>,
    queue: Option<Queue>,
    queue_tx: Option<mpsc::UnboundedSender<Instant>>,
    tasks: Vec<JoinHandle<Option<Client>>>,
    scheduler: Option<JoinHandle<()>>,
    next_id: usize,
}

impl Engine {
    pub fn new(cfg: EngineCfg) -> Self {
        let opts = cfg.conn.to_opts(true);
        let (go_tx, _) = watch::channel(false);
        let (queue, queue_tx) = if cfg.rate > 0.0 {
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(Arc::new(tokio::sync::Mutex::new(rx))), Some(tx))
        } else {
            (None, None)
        };
        Self {
            cfg: Arc::new(cfg),
            opts,
            shared: Arc::new(Shared {
                stop: AtomicBool::new(false),
                stop_notify: Notify::new(),
                events: AtomicU64::new(0),
                reads: AtomicU64::new(0),
                writes: AtomicU64::new(0),
                other: AtomicU64::new(0),
                ignored: AtomicU64::new(0),
                errors: AtomicU64::new(0),
                reconnects: AtomicU64::new(0),
                kinds: Default::default(),
                codes: Mutex::new(BTreeMap::new()),
                txns: Default::default(),
                hists: Mutex::new(Hists {
                    interval: new_hist(),
                    window: new_hist(),
                }),
                produced: AtomicU64::new(0),
                taken: AtomicU64::new(0),
                max_queue: AtomicU64::new(0),
                running: AtomicUsize::new(0),
                last_error: Mutex::new(None),
            }),
            go_tx,
            queue,
            queue_tx,
            tasks: Vec::new(),
            scheduler: None,
            next_id: 0,
        }
    }

    /// Number of clients.
    pub fn clients(&self) -> usize {
        self.tasks.len()
    }

    /// Connects `n` more clients (at most `connect_concurrency` at a time) and starts their
    /// tasks; they wait for [`Engine::go`] unless it was already called.
    pub async fn add_clients(&mut self, n: usize) -> Result<Duration, EngineError> {
        let t0 = Instant::now();
        let sem = Arc::new(Semaphore::new(self.cfg.connect_concurrency.max(1)));
        let mut pending = Vec::with_capacity(n);
        for _ in 0..n {
            let id = self.next_id;
            self.next_id += 1;
            let sem = sem.clone();
            let cfg = self.cfg.clone();
            let opts = self.opts.clone();
            pending.push(tokio::spawn(async move {
                let _permit = sem.acquire_owned().await.expect("semaphore");
                let mut tries = 0;
                loop {
                    match Client::connect(&opts, &cfg.def, cfg.ps_mode, &cfg.ignore).await {
                        Ok(c) => return Ok((id, c)),
                        // The listen backlog can overflow during a connect storm: retry a bit.
                        Err(ExecError::Lost(_)) if tries < 20 => {
                            tries += 1;
                            tokio::time::sleep(Duration::from_millis(50 * tries)).await;
                        }
                        Err(e) => {
                            return Err(EngineError::Connect {
                                client: id,
                                target: cfg.conn.describe(),
                                source: e,
                            })
                        }
                    }
                }
            }));
        }
        let mut first_err = None;
        let mut ready = Vec::with_capacity(n);
        for p in pending {
            match p.await.expect("connect task") {
                Ok(c) => ready.push(c),
                Err(e) => {
                    if first_err.is_none() {
                        first_err = Some(e)
                    }
                }
            }
        }
        if let Some(e) = first_err {
            for (_, c) in ready {
                c.close().await;
            }
            return Err(e);
        }
        for (id, client) in ready {
            let shared = self.shared.clone();
            let cfg = self.cfg.clone();
            let opts = self.opts.clone();
            let go = self.go_tx.subscribe();
            let queue = self.queue.clone();
            self.tasks.push(tokio::spawn(client_task(
                id, client, shared, cfg, opts, go, queue,
            )));
        }
        Ok(t0.elapsed())
    }

    /// Releases the clients (and starts the open-loop scheduler).
    pub fn go(&mut self) {
        if let (Some(tx), None) = (self.queue_tx.take(), &self.scheduler) {
            let shared = self.shared.clone();
            let rate = self.cfg.rate;
            let seed = self.cfg.seed;
            self.scheduler = Some(tokio::spawn(scheduler(tx, shared, rate, seed)));
        }
        let _ = self.go_tx.send(true);
    }

    /// Current counter values.
    pub fn counts(&self) -> Counts {
        let s = &self.shared;
        let mut kinds = [0; N_KINDS];
        for (i, k) in kinds.iter_mut().enumerate() {
            *k = s.kinds[i].load(Relaxed);
        }
        Counts {
            events: s.events.load(Relaxed),
            reads: s.reads.load(Relaxed),
            writes: s.writes.load(Relaxed),
            other: s.other.load(Relaxed),
            ignored: s.ignored.load(Relaxed),
            errors: s.errors.load(Relaxed),
            reconnects: s.reconnects.load(Relaxed),
            kinds,
            codes: s.codes.lock().expect("codes").clone(),
            txns: std::array::from_fn(|i| s.txns[i].load(Relaxed)),
            tpcc: self.cfg.def.workload == Workload::Tpcc,
        }
    }

    /// Takes (and resets) the interval histogram.
    pub fn take_interval_hist(&self) -> Histogram<u64> {
        let mut h = self.shared.hists.lock().expect("hists");
        std::mem::replace(&mut h.interval, new_hist())
    }

    /// Starts a new measurement window (resets its histogram and the max queue depth).
    pub fn reset_window(&self) {
        self.shared.hists.lock().expect("hists").window.reset();
        self.shared.max_queue.store(self.queue_depth(), Relaxed);
    }

    /// A copy of the window histogram.
    pub fn window_hist(&self) -> Histogram<u64> {
        self.shared.hists.lock().expect("hists").window.clone()
    }

    /// Open loop: events waiting for a client now.
    pub fn queue_depth(&self) -> u64 {
        self.shared
            .produced
            .load(Relaxed)
            .saturating_sub(self.shared.taken.load(Relaxed))
    }

    pub fn max_queue_depth(&self) -> u64 {
        self.shared.max_queue.load(Relaxed)
    }

    /// The last non-ignored error message, if any.
    pub fn last_error(&self) -> Option<String> {
        self.shared.last_error.lock().expect("last_error").clone()
    }

    /// Stops the clients and returns them (still connected, statements still prepared), plus
    /// the number of clients that were still inside an event after `grace` and were aborted
    /// (their connections are dropped, so the server rolls their transactions back).
    pub async fn stop(&mut self, grace: Duration) -> (Vec<Client>, usize) {
        self.shared.stop.store(true, Relaxed);
        self.shared.stop_notify.notify_waiters();
        let _ = self.go_tx.send(true);
        if let Some(s) = self.scheduler.take() {
            let _ = s.await;
        }
        let deadline = tokio::time::Instant::now() + grace;
        let mut clients = Vec::with_capacity(self.tasks.len());
        let mut aborted = 0;
        for mut t in self.tasks.drain(..) {
            match tokio::time::timeout_at(deadline, &mut t).await {
                Ok(Ok(Some(c))) => clients.push(c),
                Ok(_) => {}
                Err(_) => {
                    t.abort();
                    aborted += 1;
                }
            }
        }
        (clients, aborted)
    }
}

/// Closes clients concurrently.
pub async fn close_all(clients: Vec<Client>) {
    let sem = Arc::new(Semaphore::new(256));
    let mut hs = Vec::with_capacity(clients.len());
    for c in clients {
        let sem = sem.clone();
        hs.push(tokio::spawn(async move {
            let _p = sem.acquire_owned().await;
            c.close().await;
        }));
    }
    for h in hs {
        let _ = h.await;
    }
}

async fn scheduler(tx: mpsc::UnboundedSender<Instant>, shared: Arc<Shared>, rate: f64, seed: u64) {
    let mut rng = Rng::new(seed, u64::MAX);
    let mut next = Instant::now();
    loop {
        if shared.stop.load(Relaxed) {
            return;
        }
        let now = Instant::now();
        if next > now {
            tokio::select! {
                _ = tokio::time::sleep_until(next.into()) => {}
                _ = shared.stop_notify.notified() => return,
            }
        }
        if tx.send(next).is_err() {
            return;
        }
        let p = shared.produced.fetch_add(1, Relaxed) + 1;
        let depth = p.saturating_sub(shared.taken.load(Relaxed));
        shared.max_queue.fetch_max(depth, Relaxed);
        let u = rng.next_f64().max(1e-12);
        next += Duration::from_secs_f64(-u.ln() / rate);
    }
}

async fn client_task(
    id: usize,
    mut client: Client,
    shared: Arc<Shared>,
    cfg: Arc<EngineCfg>,
    opts: Opts,
    mut go: watch::Receiver<bool>,
    queue: Option<Queue>,
) -> Option<Client> {
    while !*go.borrow_and_update() {
        if go.changed().await.is_err() {
            return Some(client);
        }
    }
    shared.running.fetch_add(1, Relaxed);
    let mut rng = Rng::new(cfg.seed, id as u64);
    let mut ops: Vec<Op> = Vec::with_capacity(32);
    let has_trx = cfg.def.prepared_kinds().contains(&StmtKind::Begin);
    let tpcc_scale = (cfg.def.workload == Workload::Tpcc).then(|| Scale::from_opts(&cfg.def.opts));
    let terminal = Terminal::new(id, cfg.def.opts.warehouses);
    let result = 'events: loop {
        if shared.stop.load(Relaxed) {
            break Some(client);
        }
        let intended = match &queue {
            None => Instant::now(),
            Some(q) => {
                let mut rx = q.lock().await;
                let v = tokio::select! {
                    v = rx.recv() => v,
                    _ = shared.stop_notify.notified() => None,
                };
                drop(rx);
                match v {
                    Some(t) => {
                        shared.taken.fetch_add(1, Relaxed);
                        t
                    }
                    None => break Some(client),
                }
            }
        };
        // tpcc: the transaction is drawn once and run again, with the same inputs, after a
        // retried error.
        let txn: Option<Txn> = tpcc_scale.map(|s| tpcc::draw(&mut rng, &s, terminal));
        loop {
            let failed = match &txn {
                Some(t) => match tpcc::execute(&mut client, t, &cfg.ignore, &*shared).await {
                    Ok(outcome) => {
                        let i = match outcome {
                            Outcome::Committed => t.kind() as usize,
                            Outcome::RolledBack => 5,
                        };
                        shared.txns[i].fetch_add(1, Relaxed);
                        None
                    }
                    Err(e) => Some(e),
                },
                None => {
                    cfg.def.event(&mut rng, &mut ops);
                    let mut failed = None;
                    for op in &ops {
                        shared.kinds[op.kind as usize].fetch_add(1, Relaxed);
                        match client.exec_op(op, &cfg.ignore).await {
                            // Counted per statement, so long transactions show up in QPS at once.
                            Ok(()) => shared.count_done(op.kind),
                            Err(e) => {
                                failed = Some(e);
                                break;
                            }
                        };
                    }
                    failed
                }
            };
            let Some(err) = failed else {
                let lat = intended.elapsed().as_micros().max(1) as u64;
                {
                    let mut h = shared.hists.lock().expect("hists");
                    let _ = h.interval.record(lat);
                    let _ = h.window.record(lat);
                }
                shared.events.fetch_add(1, Relaxed);
                break;
            };
            *shared
                .codes
                .lock()
                .expect("codes")
                .entry(err.code())
                .or_insert(0) += 1;
            match err {
                ExecError::Ignored { .. } => {
                    shared.ignored.fetch_add(1, Relaxed);
                    if txn.is_some() {
                        // A lock wait timeout (1205) rolls back only the statement: end the
                        // transaction before it runs again, or its first half would commit.
                        shared.sent(StmtKind::Rollback);
                        let rb = client.exec_own(Stmt::Rollback, vec![], &cfg.ignore).await;
                        if rb.is_ok() {
                            shared.done(StmtKind::Rollback);
                        }
                    }
                    if shared.stop.load(Relaxed) {
                        break 'events Some(client);
                    }
                }
                ExecError::Lost(msg) => {
                    *shared.last_error.lock().expect("last_error") = Some(msg);
                    drop(client);
                    loop {
                        if shared.stop.load(Relaxed) {
                            break 'events None;
                        }
                        match Client::connect(&opts, &cfg.def, cfg.ps_mode, &cfg.ignore).await {
                            Ok(c) => {
                                client = c;
                                shared.reconnects.fetch_add(1, Relaxed);
                                break;
                            }
                            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                        }
                    }
                }
                other => {
                    *shared.last_error.lock().expect("last_error") = Some(other.to_string());
                    shared.errors.fetch_add(1, Relaxed);
                    if has_trx || txn.is_some() {
                        let _ = client.rollback().await;
                    }
                    break;
                }
            }
        }
    };
    shared.running.fetch_sub(1, Relaxed);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_subtract_and_summarize() {
        let mut a = Counts {
            events: 10,
            reads: 100,
            writes: 40,
            other: 20,
            ignored: 1,
            errors: 0,
            ..Default::default()
        };
        a.kinds[0] = 11;
        a.codes.insert(1213, 1);
        let b = Counts::default();
        let d = a.minus(&b);
        let mut h = new_hist();
        h.record(1500).unwrap();
        let s = d.summary(2.0, &h, 0);
        assert_eq!(s.tps, 5.0);
        assert_eq!(s.qps, 80.0);
        assert!((s.success_pct - 100.0 * 10.0 / 11.0).abs() < 1e-9);
        assert_eq!(s.statements_by_kind["begin"], 11);
        assert!((s.latency_ms.p50 - 1.5).abs() < 0.01);
        assert_eq!(a.minus(&a).codes.len(), 0);
    }
}
