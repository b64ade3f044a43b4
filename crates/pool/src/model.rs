//! Model checks of the group state machine ([`crate::core::GroupCore`]) under concurrency.
//!
//! The decisions live in `GroupCore`; these models run them from several threads through the
//! `crate::loom` shim exactly as the pool does (one mutex per group, one condvar per idle worker)
//! and assert the accounting invariant and "every entry runs exactly once" in every interleaving.
//! Under `--cfg loom` loom explores the interleavings:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test --release -p shoal-pool --lib loom
//! ```
//!
//! Without `--cfg loom` the same models run once on std threads as ordinary tests.

use std::time::{Duration, Instant};

use crate::core::{AfterPoll, GroupCore, KillStep, Next, Phase, Prio, Settle};
use crate::loom::{thread, Arc, Condvar, Mutex};
use shoal_wait::WaitKind;

type G = GroupCore<u32, usize>;

fn model(f: impl Fn() + Sync + Send + 'static) {
    #[cfg(loom)]
    {
        let mut b = ::loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(f);
    }
    #[cfg(not(loom))]
    f();
}

/// A listener hands an event over while a worker looks for work: the event runs exactly once,
/// by the listener or by the worker, and the counts stay consistent.
#[test]
fn loom_listener_handoff_vs_worker_dequeue() {
    model(|| {
        let g = Arc::new(Mutex::new(G::default()));
        {
            let mut c = g.lock().unwrap();
            c.threads = 2;
            c.active = 1; // the worker
            c.listener = true;
            c.connections = 2;
        }
        let g2 = g.clone();
        let listener = thread::spawn(move || {
            let mut c = g2.lock().unwrap();
            let r = c.after_poll(vec![(1, Prio::Low, false, false)], false, 0, Instant::now());
            assert!(c.invariant_holds());
            match r {
                AfterPoll::Execute(x) => Some(x),
                AfterPoll::Listen => None,
            }
        });
        let g3 = g.clone();
        let worker = thread::spawn(move || {
            let mut c = g3.lock().unwrap();
            let r = c.take_work(0, Instant::now()).map(|x| x.0);
            assert!(c.invariant_holds());
            r
        });
        let a = listener.join().unwrap();
        let b = worker.join().unwrap();
        let c = g.lock().unwrap();
        let ran = usize::from(a.is_some()) + usize::from(b.is_some()) + c.queued();
        assert_eq!(
            ran, 1,
            "the event is executed or still queued, exactly once"
        );
        assert!(c.invariant_holds());
    });
}

/// Two workers begin and end waits (a row lock and a disk read) while a third pushes work:
/// `active`/`waiting`/`waiting_disk` never go wrong, and a wake-up is requested whenever the
/// last active worker waits with work queued, whatever the wait.
#[test]
fn loom_wait_begin_end_accounting() {
    model(|| {
        let g = Arc::new(Mutex::new(G::default()));
        {
            let mut c = g.lock().unwrap();
            c.threads = 3;
            c.active = 2;
            c.listener = true;
            c.connections = 3;
        }
        let mut hs = Vec::new();
        for kind in [WaitKind::RowLock, WaitKind::DiskIo] {
            let g = g.clone();
            hs.push(thread::spawn(move || {
                let wake = {
                    let mut c = g.lock().unwrap();
                    let w = c.wait_begin(kind);
                    assert!(c.invariant_holds());
                    if w {
                        assert_eq!(c.active, 0);
                        assert!(c.queued() > 0);
                    }
                    w
                };
                let mut c = g.lock().unwrap();
                c.wait_end(kind);
                assert!(c.invariant_holds());
                wake
            }));
        }
        let gp = g.clone();
        let pusher = thread::spawn(move || {
            gp.lock().unwrap().push(9, Prio::Low, false, Instant::now());
        });
        for h in hs {
            h.join().unwrap();
        }
        pusher.join().unwrap();
        let c = g.lock().unwrap();
        assert_eq!((c.active, c.waiting, c.waiting_disk), (2, 0, 0));
        assert_eq!(c.counters.waits.iter().sum::<u64>(), 2);
    });
}

/// A worker lingers on its connection while the listener gets an event for another one (cap 1):
/// whatever the interleaving, at most one of them runs at a time (the lingering worker does not
/// run its connection's next command past the cap or ahead of queued work), the other event
/// runs exactly once or stays queued for a worker, and the accounting holds throughout.
#[test]
fn loom_linger_vs_listener_event() {
    model(|| {
        let g = Arc::new(Mutex::new(G::default()));
        {
            let mut c = g.lock().unwrap();
            c.threads = 2;
            c.active = 1; // the worker that just answered its connection
            c.listener = true;
            c.connections = 2;
        }
        let gw = g.clone();
        let worker = thread::spawn(move || {
            let lingering = {
                let mut c = gw.lock().unwrap();
                let l = c.linger_begin(1);
                assert!(c.invariant_holds());
                l
            };
            let mut c = gw.lock().unwrap();
            // Its connection's next command arrived (readable).
            let ran_own = lingering && c.linger_end(true, 0);
            if lingering && !ran_own {
                c.linger_abandon();
            }
            assert!(c.invariant_holds());
            let took = if ran_own {
                None
            } else {
                c.take_work(0, Instant::now()).map(|x| x.0)
            };
            (ran_own, took)
        });
        let gl = g.clone();
        let listener = thread::spawn(move || {
            let mut c = gl.lock().unwrap();
            let r = c.after_poll(vec![(1, Prio::Low, false, false)], false, 0, Instant::now());
            assert!(c.invariant_holds());
            matches!(r, AfterPoll::Execute(1))
        });
        let (ran_own, took) = worker.join().unwrap();
        let executed = listener.join().unwrap();
        let c = g.lock().unwrap();
        assert!(c.invariant_holds());
        let queued = c.queued();
        let runs = usize::from(ran_own) + usize::from(took.is_some()) + usize::from(executed);
        assert!(runs <= 1, "{runs} running at once with cap 1");
        assert_eq!(
            usize::from(took == Some(1)) + usize::from(executed) + queued,
            1,
            "the event runs once or stays queued"
        );
        if ran_own {
            assert!(!executed && queued == 1, "ran ahead of queued work");
        }
    });
}

/// Shutdown while a worker is going idle: the worker either sees the flag before sleeping or is
/// woken from its condvar; it always leaves, and the group ends with no threads.
#[test]
fn loom_shutdown_wakes_idle_worker() {
    model(|| {
        let g = Arc::new((Mutex::new(G::default()), Condvar::new()));
        {
            let mut c = g.0.lock().unwrap();
            c.threads = 2;
            c.active = 1;
            c.listener = true; // someone else listens; this worker goes idle
        }
        let gw = g.clone();
        let worker = thread::spawn(move || {
            let (m, cv) = &*gw;
            let mut c = m.lock().unwrap();
            if c.shutdown {
                c.exit_active();
                return;
            }
            c.become_idle(7);
            loop {
                c = cv.wait(c).unwrap();
                if c.shutdown {
                    assert!(c.idle_timed_out(|w| *w == 7));
                    return;
                }
            }
        });
        let gs = g.clone();
        let stopper = thread::spawn(move || {
            let (m, cv) = &*gs;
            let mut c = m.lock().unwrap();
            c.shutdown = true;
            cv.notify_all();
            drop(c);
        });
        stopper.join().unwrap();
        worker.join().unwrap();
        let c = g.0.lock().unwrap();
        // Only the listener remains (it is stopped through epoll in the real pool).
        c.listener.then_some(()).expect("listener untouched");
        assert_eq!(c.threads, 1);
        assert!(c.idle.is_empty());
        assert!(c.invariant_holds());
        let _ = Duration::ZERO;
    });
}

/// An event, a KILL and an idle timeout race for the same idle connection: exactly one of them
/// claims it and queues it.
#[test]
fn loom_event_kill_timeout_claim_exactly_once() {
    model(|| {
        let meta = Arc::new(Mutex::new((Phase::Idle, false)));
        let queue = Arc::new(Mutex::new(Vec::new()));
        let mut hs = Vec::new();
        for who in 0..3u8 {
            let (meta, queue) = (meta.clone(), queue.clone());
            hs.push(thread::spawn(move || {
                let mut m = meta.lock().unwrap();
                let (phase, killed) = &mut *m;
                let claimed = if who == 1 {
                    phase.kill(killed) == KillStep::QueueKill
                } else {
                    phase.claim()
                };
                if claimed {
                    queue.lock().unwrap().push(who);
                }
            }));
        }
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(queue.lock().unwrap().len(), 1);
        let m = meta.lock().unwrap();
        assert_eq!(m.0, Phase::Queued);
        assert!(m.1, "the kill is recorded even when it lost the claim");
    });
}

/// A KILL that arrives while the command runs is never lost: either the worker sees it at
/// re-arm and closes, or the connection was already idle and the KILL queues it.
#[test]
fn loom_kill_vs_rearm_never_lost() {
    model(|| {
        let meta = Arc::new(Mutex::new((Phase::Running, false)));
        let queue = Arc::new(Mutex::new(Vec::new()));
        let (mw, qk) = (meta.clone(), queue.clone());
        let worker = thread::spawn(move || {
            let mut m = mw.lock().unwrap();
            let killed = m.1;
            m.0.rearm(killed)
        });
        let mk = meta.clone();
        let killer = thread::spawn(move || {
            let mut m = mk.lock().unwrap();
            let (phase, killed) = &mut *m;
            let step = phase.kill(killed);
            if step == KillStep::QueueKill {
                qk.lock().unwrap().push("kill");
            }
            step
        });
        let rearmed = worker.join().unwrap();
        let step = killer.join().unwrap();
        let queued = queue.lock().unwrap().len();
        let phase = meta.lock().unwrap().0;
        if rearmed {
            assert_eq!(
                (step, queued, phase),
                (KillStep::QueueKill, 1, Phase::Queued)
            );
        } else {
            assert_eq!(
                (step, queued, phase),
                (KillStep::AfterRun, 0, Phase::Closed)
            );
        }
    });
}

/// Edge-triggered sockets: the client's input arrives at any point while the worker runs the
/// connection's previous command; the socket reports it once (it is put on epoll's ready list),
/// and the listener may collect that report before, during or after the worker settles. In
/// every interleaving the input is read: the run never ends with input in the socket, the
/// connection `Idle` and no report due (the lost wake-up an edge-triggered registration risks,
/// which [`Phase::report`]'s `pending` and [`Phase::settle`]'s requeue close). And the
/// connection is never both re-run by its worker and claimed by the listener.
#[test]
fn loom_edge_report_vs_settle_never_loses_input() {
    /// The kernel's side of one socket.
    struct Sock {
        /// Unread input.
        input: bool,
        /// A report is due: the socket is on the ready list, not yet collected.
        due: bool,
    }
    model(|| {
        let sock = Arc::new(Mutex::new(Sock {
            input: false,
            due: false,
        }));
        // (phase, pending, claimed by the listener)
        let meta = Arc::new(Mutex::new((Phase::Running, false, false)));
        let sc = sock.clone();
        let client = thread::spawn(move || {
            let mut s = sc.lock().unwrap();
            s.input = true;
            s.due = true;
        });
        let (sl, ml) = (sock.clone(), meta.clone());
        let listener = thread::spawn(move || {
            let reported = std::mem::take(&mut sl.lock().unwrap().due);
            if reported {
                let mut m = ml.lock().unwrap();
                let (phase, pending, claimed) = &mut *m;
                if phase.report(true, pending) {
                    *claimed = true;
                }
            }
        });
        let (sw, mw) = (sock.clone(), meta.clone());
        let worker = thread::spawn(move || {
            let mut runs = 0;
            loop {
                runs += 1;
                // The handler reads the socket to the end.
                sw.lock().unwrap().input = false;
                let mut m = mw.lock().unwrap();
                let (phase, pending, claimed) = &mut *m;
                assert!(!*claimed, "claimed while its worker runs it");
                match phase.settle(Next::Input, true, pending) {
                    Settle::Requeue => {}
                    Settle::Idle => return runs,
                    Settle::Arm => unreachable!("edge-armed"),
                }
                assert!(runs < 3, "requeued more often than there were reports");
            }
        });
        client.join().unwrap();
        listener.join().unwrap();
        let runs = worker.join().unwrap();
        let s = sock.lock().unwrap();
        let m = meta.lock().unwrap();
        let stranded = s.input && !s.due && m.0 == Phase::Idle;
        assert!(!stranded, "input stranded: nobody will read it");
        // Only a claimed or a still-due connection may have input left.
        if s.input {
            assert!(m.2 || s.due, "input left without a claim or a due report");
        }
        assert!(!m.1, "pending left behind");
        assert!(runs <= 2);
    });
}

/// The same report against a handler that holds input of its own: the worker's run ends with
/// a second pipelined command still buffered, so it yields ([`Next::Again`]), and the run
/// after the yield executes that command without reading the socket. A third command arrives
/// at any point; its one report may be collected while the connection runs, while it is
/// queued for the yield, or after it settled. In every interleaving all three commands run,
/// or the connection is claimed (or its report still due) with the input in the socket: never
/// idle with input and no report coming. Dropping `pending` at the yield, as the pool once did
/// (issue 15: sessions left in CLOSE-WAIT), fails here.
#[test]
fn loom_edge_report_survives_a_yield() {
    /// The kernel's side of one socket.
    struct Sock {
        /// Commands in the socket, unread.
        input: u8,
        /// A report is due: the socket is on the ready list, not yet collected.
        due: bool,
    }
    model(|| {
        let sock = Arc::new(Mutex::new(Sock {
            input: 0,
            due: false,
        }));
        // (phase, pending, claimed by the listener)
        let meta = Arc::new(Mutex::new((Phase::Running, false, false)));
        let sc = sock.clone();
        let client = thread::spawn(move || {
            let mut s = sc.lock().unwrap();
            s.input += 1;
            s.due = true;
        });
        let (sl, ml) = (sock.clone(), meta.clone());
        let listener = thread::spawn(move || {
            let reported = std::mem::take(&mut sl.lock().unwrap().due);
            if reported {
                let mut m = ml.lock().unwrap();
                let (phase, pending, claimed) = &mut *m;
                if phase.report(true, pending) {
                    *claimed = true;
                }
            }
        });
        let (sw, mw) = (sock.clone(), meta.clone());
        let worker = thread::spawn(move || {
            // Two pipelined commands were read together before the model starts.
            let mut buffered = 2u8;
            let mut ran = 0u8;
            for _ in 0..6 {
                // The handler runs one command per call and reads the socket (to the end)
                // only when it holds none.
                if buffered == 0 {
                    let mut s = sw.lock().unwrap();
                    buffered = std::mem::take(&mut s.input);
                }
                if buffered > 0 {
                    buffered -= 1;
                    ran += 1;
                }
                let next = if buffered > 0 {
                    Next::Again
                } else {
                    Next::Input
                };
                let mut m = mw.lock().unwrap();
                let (phase, pending, claimed) = &mut *m;
                assert!(!*claimed, "claimed while its worker runs it");
                match phase.settle(next, true, pending) {
                    Settle::Requeue => {
                        assert_eq!(*phase, Phase::Queued);
                        // Dequeued again: a report may come in between (it finds `Queued`).
                        drop(m);
                        mw.lock().unwrap().0 = Phase::Running;
                    }
                    Settle::Idle => return ran,
                    Settle::Arm => unreachable!("edge-armed"),
                }
            }
            panic!("requeued more often than there were commands and reports");
        });
        client.join().unwrap();
        listener.join().unwrap();
        let ran = worker.join().unwrap();
        let s = sock.lock().unwrap();
        let m = meta.lock().unwrap();
        assert_eq!(ran + s.input, 3, "a command vanished");
        if s.input > 0 {
            assert!(
                m.2 || s.due,
                "input stranded: idle, unread, and no report coming (ran {ran})"
            );
        }
        assert!(!m.1, "pending left behind");
    });
}

/// Edge-triggered sockets and the peer's FIN: a client sends its last command and shuts down
/// its side, the two arriving at any point while the worker runs the previous command or after
/// it settled. The handler's read returns the command and stops at the FIN (`recv` reports the
/// end of file only on the next call, to a read that finds no data). Epoll evaluates the socket
/// when a report is collected, so a report collected after the FIN carries it (`RDHUP`); the
/// listener remembers that in `hup` whatever the report does to the phase, and a settle to
/// `Idle` asks the socket (the pool's one `poll(2)`) only when `hup` is set. In every
/// interleaving the connection ends closed, or idle with a report still due: never idle with
/// its FIN unread and nothing coming. Without the check, or with `hup` set only by a report
/// that claims the connection, a FIN that shared a report with the command is stranded.
#[test]
fn loom_edge_hangup_behind_data_is_never_stranded() {
    /// The kernel's side of one socket.
    struct Sock {
        /// An unread command.
        data: bool,
        /// The peer's FIN has arrived.
        fin: bool,
        /// A report is due: the socket is on the ready list, not yet collected.
        due: bool,
    }
    struct Meta {
        phase: Phase,
        pending: bool,
        /// A collected report carried a hang-up.
        hup: bool,
    }
    /// A worker's runs of the connection, from a claim or the model's start, until it settles
    /// idle (`false`) or reads the end of file and closes (`true`).
    fn run(sock: &Mutex<Sock>, meta: &Mutex<Meta>) -> bool {
        for _ in 0..4 {
            {
                let mut s = sock.lock().unwrap();
                if s.data {
                    s.data = false;
                } else if s.fin {
                    drop(s);
                    meta.lock().unwrap().phase = Phase::Closed;
                    return true;
                }
            }
            let mut g = meta.lock().unwrap();
            let m = &mut *g;
            let mut settle = m.phase.settle(Next::Input, true, &mut m.pending);
            if settle == Settle::Idle && m.hup && sock.lock().unwrap().fin {
                m.phase = Phase::Queued;
                settle = Settle::Requeue;
            }
            match settle {
                Settle::Idle => return false,
                Settle::Requeue => {
                    // Dequeued again: a report may come in between (it finds `Queued`).
                    drop(g);
                    meta.lock().unwrap().phase = Phase::Running;
                }
                Settle::Arm => unreachable!("edge-armed"),
            }
        }
        panic!("ran more often than there were inputs and reports");
    }
    model(|| {
        let sock = Arc::new(Mutex::new(Sock {
            data: false,
            fin: false,
            due: false,
        }));
        let meta = Arc::new(Mutex::new(Meta {
            phase: Phase::Running,
            pending: false,
            hup: false,
        }));
        let sc = sock.clone();
        let client = thread::spawn(move || {
            {
                let mut s = sc.lock().unwrap();
                s.data = true;
                s.due = true;
            }
            let mut s = sc.lock().unwrap();
            s.fin = true;
            s.due = true;
        });
        let (sl, ml) = (sock.clone(), meta.clone());
        let listener = thread::spawn(move || {
            for _ in 0..2 {
                let (reported, fin) = {
                    let mut s = sl.lock().unwrap();
                    (std::mem::take(&mut s.due), s.fin)
                };
                if !reported {
                    continue;
                }
                let claimed = {
                    let mut g = ml.lock().unwrap();
                    let m = &mut *g;
                    m.hup |= fin;
                    m.phase.report(true, &mut m.pending)
                };
                if claimed {
                    // The listener executes the event itself (the queue was empty).
                    ml.lock().unwrap().phase = Phase::Running;
                    run(&sl, &ml);
                }
            }
        });
        let (sw, mw) = (sock.clone(), meta.clone());
        let worker = thread::spawn(move || run(&sw, &mw));
        client.join().unwrap();
        listener.join().unwrap();
        worker.join().unwrap();
        let s = sock.lock().unwrap();
        let m = meta.lock().unwrap();
        assert!(
            m.phase == Phase::Closed || (m.phase == Phase::Idle && s.due),
            "stranded: {:?}, data {}, fin {}, due {}, hup {}",
            m.phase,
            s.data,
            s.fin,
            s.due,
            m.hup
        );
    });
}
