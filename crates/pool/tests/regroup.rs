//! Adaptive mode's choice of the number of groups (`shoal_pool::regroup`), end to end: real
//! sockets, a real pool, the timer feeding the chooser. A few busy connections spread the pool
//! over `4 x size` groups, many connections merge it into `size / 2`, a read-bound load spreads
//! it again, and `thread_pool_adaptive_groups = OFF` puts it back to `size` at once. Every
//! phase polls the pool's stats against a deadline.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{config, looping_clients, until, Client, Server};
use shoal_pool::regroup::{merged, spread, MANY_PER_CPU};

#[test]
fn adaptive_mode_spreads_few_connections_merges_many_and_spreads_reads() {
    let cpus = shoal_pool::allowed_cpus().len().max(1);
    let mut cfg = config(2);
    cfg.adaptive = true;
    cfg.adaptive_groups = true;
    let srv = Server::start(cfg);
    let max = srv.pool.config().max_size;
    let wide = spread(2, max);
    assert!(wide > 2, "the test needs room to spread: max_size {max}");

    // A few busy connections: spread.
    let stop = Arc::new(AtomicBool::new(false));
    let busy = looping_clients(&srv, 2, "echo x", "x", &stop);
    let st = until(&srv, Duration::from_secs(60), "spread", |s| s.size == wide);
    assert!(st.regroups >= 1, "{}", st.regroups);
    assert_eq!(srv.pool.config().size, 2, "thread_pool_size stays as set");
    // The busy connections moved into the new groups (at their next re-arm).
    until(&srv, Duration::from_secs(60), "connections moved", |s| {
        s.groups
            .iter()
            .filter(|g| g.id >= 2 && g.connections > 0)
            .count()
            > 0
    });

    // Many connections, CPU-bound: merged. (Idle connections count: they are the pool's
    // clients as much as the busy ones.)
    let many = MANY_PER_CPU * cpus + 1;
    let mut idle: Vec<Client> = Vec::new();
    if many <= 1500 {
        while idle.len() + 2 < many {
            let mut c = srv.connect();
            assert_eq!(c.cmd("echo hi"), "hi");
            idle.push(c);
        }
        until(&srv, Duration::from_secs(60), "merged", |s| {
            s.size == merged(2)
        });

        // Many connections reading from disk (reported reads, nothing else): spread again.
        let reads = looping_clients(&srv, 16, "read 1", "read", &stop);
        until(&srv, Duration::from_secs(60), "spread for reads", |s| {
            s.size == wide
        });
        stop.store(true, Ordering::Relaxed);
        for h in reads {
            h.join().unwrap();
        }
    } else {
        eprintln!("{cpus} CPUs: {many} connections to merge; merge and read phases skipped");
        stop.store(true, Ordering::Relaxed);
    }
    for h in busy {
        assert!(h.join().unwrap() > 0);
    }

    // Off: back to `thread_pool_size` groups at once, and it stays so under load.
    srv.pool.set_adaptive_groups(false);
    assert_eq!(srv.stats().size, 2);
    let stop = Arc::new(AtomicBool::new(false));
    let busy = looping_clients(&srv, 2, "echo x", "x", &stop);
    let before = srv.stats();
    // Two stall samples later (a second or more: ten ticks at least, where four agreeing ones
    // would regroup) nothing moved.
    let st = until(&srv, Duration::from_secs(60), "two samples", |s| {
        s.sampled_seconds >= before.sampled_seconds + 2
    });
    let regroups = before.regroups;
    assert_eq!((st.size, st.regroups), (2, regroups));
    stop.store(true, Ordering::Relaxed);
    for h in busy {
        h.join().unwrap();
    }
    drop(idle);
}
