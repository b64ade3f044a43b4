//! CPU affinity (`Config::cpu_affinity`) over real loopback sockets: each group's workers run
//! on their group's CPU, and a local client's connection moves to the group of the CPU its
//! client thread sends from, following the client when it moves. Client threads are pinned
//! with `sched_setaffinity`, so where they send from is known.

mod common;

use std::time::Duration;

use common::{config, Client, Server};
use shoal_pool::PoolStats;

/// The CPUs this process may use.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is valid; the call fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    assert_eq!(r, 0, "sched_getaffinity");
    // SAFETY: reading an initialised set.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Pins the calling thread to `cpus`.
fn pin(cpus: &[usize]) {
    // SAFETY: as above.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: c is below CPU_SETSIZE (it came from the allowed set).
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: as above.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    assert_eq!(r, 0, "sched_setaffinity");
}

/// The `Cpus_allowed_list` of every thread of this process whose name starts with `prefix`.
fn threads_allowed(prefix: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let comm = comm.trim().to_string();
        if !comm.starts_with(prefix) {
            continue;
        }
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        if let Some(l) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
            out.push((comm, l["Cpus_allowed_list:".len()..].trim().to_string()));
        }
    }
    out
}

/// Polls `threads_allowed(prefix)` until `ok` holds for the list (deadline 10 s); returns it.
fn threads_until(prefix: &str, ok: impl Fn(&[(String, String)]) -> bool) -> Vec<(String, String)> {
    let end = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let t = threads_allowed(prefix);
        if ok(&t) || std::time::Instant::now() > end {
            return t;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs `rounds` commands on every client from a thread pinned to `cpu`.
fn talk_from(cpu: usize, clients: &mut [Client], rounds: usize) {
    std::thread::scope(|s| {
        s.spawn(|| {
            pin(&[cpu]);
            for r in 0..rounds {
                for c in clients.iter_mut() {
                    assert_eq!(c.cmd(&format!("echo {r}")), r.to_string());
                }
            }
        });
    });
}

fn counts(s: &PoolStats) -> (usize, usize) {
    (s.groups[0].connections, s.groups[1].connections)
}

#[test]
fn connections_follow_their_clients_cpu_and_workers_stay_on_their_groups() {
    let cpus = allowed_cpus();
    if cpus.len() < 2 {
        eprintln!("skipped: affinity needs 2 CPUs, this process may use {cpus:?}");
        return;
    }
    let mut cfg = config(2);
    // Two groups on a machine with more CPUs would leave CPUs without a group (not in
    // effect); pin the test to the first two CPUs' worth by using as many groups as CPUs.
    cfg.size = cpus.len();
    cfg.cpu_affinity = true;
    cfg.thread_name = "aff-pool".into();
    let srv = Server::start(cfg);
    let n = cpus.len();
    let mut clients: Vec<Client> = (0..6).map(|_| srv.connect()).collect();
    // All six clients send from the second CPU: after their commands every connection is in
    // group 1 (the group of cpus[1]), whatever its id.
    talk_from(cpus[1], &mut clients, 3);
    let s = srv.wait_for(Duration::from_secs(10), |s| s.groups[1].connections == 6);
    assert_eq!(s.groups[1].connections, 6, "all in cpus[1]'s group: {s:#?}");
    assert!(
        s.groups[1].counters.migrations_in >= 1,
        "some moved in: {s:#?}"
    );
    // Group 1's workers ran those commands pinned to cpus[1].
    let pinned_to = |cpu: usize| {
        move |t: &[(String, String)]| !t.is_empty() && t.iter().all(|(_, a)| *a == cpu.to_string())
    };
    let g1 = threads_until("aff-pool-g1", pinned_to(cpus[1]));
    assert!(!g1.is_empty(), "group 1 has threads");
    for (name, allowed) in &g1 {
        assert_eq!(
            allowed,
            &cpus[1].to_string(),
            "{name} pinned to its group's CPU"
        );
    }
    // The clients move to the first CPU: so do their connections.
    talk_from(cpus[0], &mut clients, 3);
    let s = srv.wait_for(Duration::from_secs(10), |s| s.groups[0].connections == 6);
    assert_eq!(counts(&s).0, 6, "all followed to cpus[0]'s group: {s:#?}");
    for (name, allowed) in threads_until("aff-pool-g0", pinned_to(cpus[0])) {
        assert_eq!(
            allowed,
            cpus[0].to_string(),
            "{name} pinned to its group's CPU"
        );
    }
    // Affinity off at run time: connections go back to `id % size`, and a worker that runs
    // an entry afterwards is free on every CPU again.
    srv.pool.set_cpu_affinity(false);
    talk_from(cpus[1], &mut clients, 3);
    let by_id = |g: usize| {
        clients
            .iter()
            .filter(|c| c.id % n as u64 == g as u64)
            .count()
    };
    let s = srv.wait_for(Duration::from_secs(10), |s| {
        s.groups[0].connections == by_id(0) && s.groups[1].connections == by_id(1)
    });
    assert_eq!(
        (s.groups[0].connections, s.groups[1].connections),
        (by_id(0), by_id(1)),
        "back to id % size: {s:#?}"
    );
    let free = |t: &[(String, String)]| {
        t.iter()
            .any(|(_, a)| !a.chars().all(|c| c.is_ascii_digit()))
    };
    let all = threads_until("aff-pool-g", free);
    assert!(
        all.iter()
            .any(|(_, allowed)| !allowed.chars().all(|c| c.is_ascii_digit())),
        "some worker freed to every CPU after it ran an entry: {all:?}"
    );
}

#[test]
fn too_few_groups_for_the_cpus_means_no_affinity() {
    let cpus = allowed_cpus();
    if cpus.len() < 2 {
        eprintln!("skipped: affinity needs 2 CPUs, this process may use {cpus:?}");
        return;
    }
    // One group on two or more CPUs: pinning it would leave the other CPUs idle, so nothing
    // is pinned and connections stay where their id puts them.
    let mut cfg = config(1);
    cfg.cpu_affinity = true;
    cfg.thread_name = "one-pool".into();
    let srv = Server::start(cfg);
    let mut clients: Vec<Client> = (0..3).map(|_| srv.connect()).collect();
    talk_from(cpus[1], &mut clients, 2);
    let s = srv.stats();
    assert_eq!(s.groups[0].connections, 3, "{s:#?}");
    let threads = threads_allowed("one-pool-g0");
    assert!(!threads.is_empty());
    for (name, allowed) in threads {
        assert!(
            !allowed.chars().all(|c| c.is_ascii_digit()) || cpus.len() == 1,
            "{name} must not be pinned: {allowed}"
        );
    }
}
