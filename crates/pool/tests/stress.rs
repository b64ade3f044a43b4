//! Randomized stress: clients connect, run commands (echo, reported sleeps, unreported spins,
//! lock/unlock, transactions), then quit, disconnect abruptly (sometimes with a command in
//! flight) or get killed. Afterwards every counter returns to zero, every connection was closed
//! exactly once, and no thread is left behind.

mod common;

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{config, Server};
use rand::Rng;

fn os_threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn randomized_clients_leave_no_trace() {
    let threads_before = os_threads();
    let mut cfg = config(3);
    cfg.oversubscribe = 1;
    cfg.stall_limit = Duration::from_millis(50);
    cfg.idle_timeout = Duration::from_millis(300);
    cfg.max_threads = 10;
    cfg.prio_kickup_timer = Duration::from_millis(100);
    // A small balancing margin, so that age balancing's cross-group takes (and its futile
    // looks) run amid the kills and abrupt disconnects too.
    cfg.balance = Duration::from_micros(100);
    let srv = Arc::new(Server::start(cfg));
    let live: Arc<Mutex<HashSet<u64>>> = Arc::default();
    let end = Instant::now() + Duration::from_secs(4);
    let mut handles = Vec::new();
    for t in 0..10 {
        let (srv, live) = (srv.clone(), live.clone());
        handles.push(std::thread::spawn(move || {
            let mut rng = rand::thread_rng();
            let mut sessions = 0;
            while Instant::now() < end {
                sessions += 1;
                let mut c = srv.connect();
                live.lock().unwrap().insert(c.id);
                let mut alive = true;
                let mut holds = false;
                for _ in 0..rng.gen_range(1..8) {
                    let cmd = match rng.gen_range(0..7) {
                        0 => format!("echo {t}"),
                        1 => format!("sleep {}", rng.gen_range(1..15)),
                        2 => format!("spin {}", rng.gen_range(1..4)),
                        3 if !holds => {
                            holds = true;
                            "lock".to_string()
                        }
                        4 if holds => {
                            holds = false;
                            "unlock".to_string()
                        }
                        5 => "begin".to_string(),
                        _ => "commit".to_string(),
                    };
                    c.send(&cmd);
                    match c.read_line() {
                        Some(r) => assert!(!r.starts_with("error"), "{cmd}: {r}"),
                        None => {
                            alive = false; // killed
                            break;
                        }
                    }
                }
                live.lock().unwrap().remove(&c.id);
                if alive {
                    match rng.gen_range(0..3) {
                        0 => {
                            c.send("quit");
                            assert_eq!(c.read_line(), None);
                        }
                        1 => c.send("sleep 5"), // in flight when the client vanishes
                        _ => {}
                    }
                }
                drop(c);
            }
            sessions
        }));
    }
    let killer = {
        let (srv, live) = (srv.clone(), live.clone());
        std::thread::spawn(move || {
            let mut rng = rand::thread_rng();
            let mut kills = 0;
            while Instant::now() < end {
                let victim = {
                    let l = live.lock().unwrap();
                    let n = l.len();
                    if n == 0 {
                        None
                    } else {
                        l.iter().nth(rng.gen_range(0..n)).copied()
                    }
                };
                if let Some(id) = victim {
                    if srv.pool.kill(id) {
                        kills += 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(rng.gen_range(1..10)));
            }
            kills
        })
    };
    let sessions: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let kills = killer.join().unwrap();
    assert!(sessions > 50, "only {sessions} sessions");
    assert!(kills > 5, "only {kills} kills");

    let s = srv.wait_for(Duration::from_secs(10), |s| {
        s.connections == 0 && s.active() == 0 && s.queued() == 0
    });
    assert_eq!((s.connections, s.active(), s.queued()), (0, 0, 0), "{s:?}");
    assert!(srv.pool.connection_states().is_empty());
    for g in &s.groups {
        assert_eq!(g.waiting, 0);
        assert_eq!(
            g.threads,
            g.active + g.waiting + g.standby + usize::from(g.has_listener),
            "group {} accounting: {g:?}",
            g.id
        );
    }
    let accepted = srv.accepted();
    assert_eq!(srv.state.closed.lock().unwrap().len() as u64, accepted);
    assert_eq!(
        srv.state.close_calls.load(Ordering::SeqCst),
        accepted,
        "double close"
    );
    // Idle workers retire: only listeners (one per group at most) remain.
    let s = srv.wait_for(Duration::from_secs(5), |s| s.threads <= 3);
    assert!(s.threads <= 3, "{} threads left", s.threads);
    let waits: u64 = s.waits.iter().sum();
    assert!(waits > 0);
    let balanced: u64 = s.groups.iter().map(|g| g.counters.balanced).sum();
    assert!(balanced > 0, "age balancing never ran: {:?}", s.groups);
    let edge: u64 = s.groups.iter().map(|g| g.counters.edge_idles).sum();
    assert!(
        edge > 0,
        "no connection settled edge-triggered: {:?}",
        s.groups
    );

    let srv = Arc::try_unwrap(srv).ok().expect("sole owner");
    drop(srv); // stops the acceptor, shuts the pool down, joins every thread
    let deadline = Instant::now() + Duration::from_secs(5);
    while os_threads() > threads_before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(os_threads(), threads_before, "thread leak");
}
