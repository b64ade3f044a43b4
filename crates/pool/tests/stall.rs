//! `Threadpool_stall_seconds` at the crate level: the 1 s sampler counts a second in which a
//! group's queue never emptied while the process stood idle, and only such seconds.
//!
//! Its own test binary, hence its own process: the sampler's CPU condition is about the whole
//! process, and the other scenario binaries run tests side by side that spin.

mod common;

use std::time::Duration;

use common::{config, until, Server};

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Opens gate N when dropped (also when an assertion fails, so that the pool's shutdown does
/// not wait for the parked command's two-minute give-up).
struct OpenOnDrop<'a>(&'a Server, usize);

impl Drop for OpenOnDrop<'_> {
    fn drop(&mut self) {
        self.0.state.open_gate(self.1);
    }
}

/// One group, a cap of 1, and a stall limit far beyond the test: a command parked where the
/// pool cannot see (`park`: asleep, unreported) holds the only slot, and a second command waits
/// in the queue while the process uses no CPU. The counter rises, a second per sample; once the
/// queue moves, it stops. Before the park, an idle pool counts samples but no stall second.
#[test]
fn stall_seconds_count_queued_work_on_idle_cpus_and_nothing_else() {
    let mut cfg = config(1);
    cfg.stall_limit = secs(600);
    let srv = Server::start(cfg);
    let mut holder = srv.connect();
    let mut fast = srv.connect();
    // Two reported sleeps at once: the first one's wait brings in a second worker, so the
    // group keeps a spare thread (idle timeout 30 s) that takes the listener role when the
    // listener runs the parked command itself; with no spare the group would have no listener
    // until a timer tick (600 s), and the fast command would wait unseen in epoll, not queued.
    holder.send("sleep 300");
    fast.send("sleep 300");
    assert_eq!(holder.read_line().as_deref(), Some("slept"));
    assert_eq!(fast.read_line().as_deref(), Some("slept"));
    until(&srv, secs(10), "a spare worker", |s| {
        s.groups[0].threads >= 2 && s.groups[0].has_listener
    });

    // Idle: samples are taken (about one a second), none is a stall second.
    let s0 = srv.stats().sampled_seconds;
    let s = until(&srv, secs(30), "two idle samples", |s| {
        s.sampled_seconds >= s0 + 2
    });
    assert_eq!(s.stall_seconds, 0, "an idle pool has no stall second");

    let gate = OpenOnDrop(&srv, 0);
    holder.send("park 0");
    until(&srv, secs(10), "the parked command to hold the cap", |s| {
        s.groups[0].active == 1 && s.groups[0].has_listener
    });
    fast.send("echo fast");
    until(&srv, secs(10), "the fast command to be queued", |s| {
        s.queued() == 1
    });
    // Queued throughout a sample interval on idle CPUs: the first interval that began with the
    // entry queued counts. Three, to see it keep counting (one per sample).
    let s = until(&srv, secs(60), "three stall seconds", |s| {
        s.stall_seconds >= 3
    });
    assert_eq!(s.queued(), 1, "the fast command is still queued: {s:?}");
    assert!(
        s.stall_seconds <= s.sampled_seconds - s0,
        "at most one per sample: {s:?}"
    );

    drop(gate);
    assert_eq!(holder.read_line().as_deref(), Some("parked"));
    assert_eq!(fast.read_line().as_deref(), Some("fast"));
    // The queue is empty again: later samples add no stall second. (The interval in which the
    // queue emptied does not count either: it emptied.)
    let stalls = srv.stats().stall_seconds;
    let s1 = srv.stats().sampled_seconds;
    let s = until(&srv, secs(30), "two more samples", |s| {
        s.sampled_seconds >= s1 + 2
    });
    assert_eq!(
        s.stall_seconds, stalls,
        "no stall second once the queue moves"
    );
    assert_eq!(
        srv.stats().groups[0].counters.stalls,
        0,
        "the stall timer never fired"
    );
}
