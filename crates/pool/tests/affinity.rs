//! CPU affinity (`Config::cpu_affinity`) over real loopback sockets: each group's workers run
//! on their group's CPU, and a local client's connection moves to the group of the CPU its
//! client thread sends from, following the client when it moves. Client threads are pinned
//! with `sched_setaffinity`, so where they send from is known.

mod common;

use std::time::Duration;

use common::{config, Client, Server};
use shoal_pool::{allowed_cpus, PoolStats};

/// Pins the calling thread to `cpus`.
fn pin(cpus: &[usize]) {
    shoal_pool::set_thread_cpus(cpus).expect("sched_setaffinity");
}

/// The first two CPUs this process may use, with the calling thread pinned to them (the pool
/// reads the CPUs of the thread that starts it: two, so a test's counts hold on any machine,
/// a group per CPU); `None`, after saying so, with fewer than two.
fn two_cpus(what: &str) -> Option<Vec<usize>> {
    let cpus = allowed_cpus();
    if cpus.len() < 2 {
        eprintln!("skipped: {what} needs 2 CPUs, this process may use {cpus:?}");
        return None;
    }
    let cpus = cpus[..2].to_vec();
    pin(&cpus);
    Some(cpus)
}

/// Two groups with CPU affinity on, lingering for `linger` (zero: every command re-arms and
/// is counted for the engagement), threads named `name`.
fn affinity_config(name: &str, linger: Duration) -> shoal_pool::Config {
    let mut cfg = config(2);
    cfg.cpu_affinity = true;
    cfg.linger = linger;
    cfg.thread_name = name.into();
    cfg
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

/// Runs rounds of commands on `a` from a thread pinned to `cpu_a` and on `b` from one pinned
/// to `cpu_b`, side by side, until `done` holds for the pool's stats (deadline 10 s).
fn talk_until(
    srv: &Server,
    (cpu_a, a): (usize, &mut [Client]),
    (cpu_b, b): (usize, &mut [Client]),
    done: impl Fn(&PoolStats) -> bool,
) -> PoolStats {
    talk_until_rounds(srv, (cpu_a, a, 2), (cpu_b, b, 2), done)
}

/// [`talk_until`] with each side's rounds of commands per pass (`ra` on `a`, `rb` on `b`).
fn talk_until_rounds(
    srv: &Server,
    (cpu_a, a, ra): (usize, &mut [Client], usize),
    (cpu_b, b, rb): (usize, &mut [Client], usize),
    done: impl Fn(&PoolStats) -> bool,
) -> PoolStats {
    let end = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        std::thread::scope(|s| {
            s.spawn(|| talk_from(cpu_a, a, ra));
            s.spawn(|| talk_from(cpu_b, b, rb));
        });
        let st = srv.stats();
        if done(&st) || std::time::Instant::now() > end {
            return st;
        }
    }
}

#[test]
fn connections_follow_their_clients_cpu_and_workers_stay_on_their_groups() {
    let Some(cpus) = two_cpus("affinity") else {
        return;
    };
    let srv = Server::start(affinity_config("aff-pool", Duration::ZERO));
    let n = cpus.len();
    let mut clients: Vec<Client> = (0..6).map(|_| srv.connect()).collect();
    let (four, two) = clients.split_at_mut(4);
    // Four connections driven from the second CPU, two from the first (clients on both CPUs:
    // affinity engages after four spread judgements): 4 in group 1 and 2 in group 0 (by id 3 and 3).
    let s = talk_until(&srv, (cpus[1], four), (cpus[0], two), |s| {
        counts(s) == (2, 4)
    });
    assert_eq!(
        counts(&s),
        (2, 4),
        "each in its client's CPU's group: {s:#?}"
    );
    assert!(s.affinity_engaged, "clients on both CPUs: engaged: {s:#?}");
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
    // The client threads swap CPUs: their connections follow.
    let s = talk_until(&srv, (cpus[0], four), (cpus[1], two), |s| {
        counts(s) == (4, 2)
    });
    assert_eq!(counts(&s), (4, 2), "all followed their clients: {s:#?}");
    for (name, allowed) in threads_until("aff-pool-g0", pinned_to(cpus[0])) {
        assert_eq!(
            allowed,
            cpus[0].to_string(),
            "{name} pinned to its group's CPU"
        );
    }
    // Affinity off at run time: connections go back to `id % size`, and every thread of the
    // pool is free on every CPU again, whether it ran an entry since or not (the timer moves
    // the ones that did not).
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
        !t.is_empty()
            && t.iter()
                .all(|(_, a)| !a.chars().all(|c| c.is_ascii_digit()))
    };
    let all = threads_until("aff-pool-g", free);
    assert!(free(&all), "every pool thread freed to every CPU: {all:?}");
}

/// Steering stops at one and a half times a group's share: clients crowding onto one CPU (an
/// event-loop client's threads on one CPU for a while) do not pull every connection into
/// that CPU's group. 40 connections engage affinity from both CPUs, then 36 of them are
/// driven from the first CPU and 4 from the second, as often as 8 (enough for affinity to
/// stay engaged): the first CPU's group stops at 30, the rest are refused and stay where
/// they are.
#[test]
fn steering_does_not_herd_connections_into_one_group() {
    let Some(cpus) = two_cpus("affinity") else {
        return;
    };
    let srv = Server::start(affinity_config("herd-pool", Duration::ZERO));
    let mut clients: Vec<Client> = (0..40).map(|_| srv.connect()).collect();
    let (a, b) = clients.split_at_mut(20);
    let s = talk_until(&srv, (cpus[0], a), (cpus[1], b), |s| {
        s.affinity_engaged && counts(s) == (20, 20)
    });
    assert!(s.affinity_engaged, "clients on both CPUs: engaged: {s:#?}");
    assert_eq!(
        counts(&s),
        (20, 20),
        "each in its client's CPU's group: {s:#?}"
    );
    let (a, b) = clients.split_at_mut(36);
    let s = talk_until_rounds(&srv, (cpus[0], a, 2), (cpus[1], b, 4), |s| {
        s.groups[0].counters.steering_refused >= 24
    });
    assert!(
        s.affinity_engaged,
        "8 commands in 44 from the second CPU: still engaged: {s:#?}"
    );
    let (g0, g1) = counts(&s);
    assert_eq!(g0 + g1, 40, "{s:#?}");
    // 30, or a little more where two workers read the count before either moved (the count
    // is read without the group lock)
    assert!(
        (30..=32).contains(&g0),
        "the first CPU's group takes one and a half shares of 20, not all 36: {s:#?}"
    );
    assert!(
        s.groups[0].counters.steering_refused >= 24,
        "the other six's moves were refused, each probe of them: {s:#?}"
    );
}

/// One client thread driving every connection (an event-loop client): its commands all come
/// from one CPU at a time, so affinity does not engage. Pinned, every connection would land in
/// that CPU's group and the other CPU's workers would idle.
#[test]
fn one_client_thread_does_not_engage_affinity() {
    let Some(cpus) = two_cpus("affinity") else {
        return;
    };
    let srv = Server::start(affinity_config("one-client", Duration::ZERO));
    let mut clients: Vec<Client> = (0..8).map(|_| srv.connect()).collect();
    // Two seconds of commands from one CPU: the first judgement a second after the start, then
    // one every 100 ms, ten or so in all: far more than the engagement needs (four spread
    // judgements in a row), had they been spread.
    let end = std::time::Instant::now() + Duration::from_millis(2000);
    while std::time::Instant::now() < end {
        talk_from(cpus[1], &mut clients, 5);
    }
    let s = srv.stats();
    assert!(!s.affinity_engaged, "{s:#?}");
    let by_id = |g: usize| clients.iter().filter(|c| c.id % 2 == g as u64).count();
    assert_eq!(counts(&s), (by_id(0), by_id(1)), "placed by id: {s:#?}");
    for (name, allowed) in threads_allowed("one-client-g") {
        assert!(
            !allowed.chars().all(|c| c.is_ascii_digit()),
            "{name} must not be pinned: {allowed}"
        );
    }
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

/// Runs `rounds` commands on `a` from a thread pinned to `cpus[0]` and on `b` from one pinned
/// to `cpus[1]`, side by side.
fn talk_from_both(cpus: &[usize], a: &mut [Client], b: &mut [Client], rounds: usize) {
    std::thread::scope(|s| {
        s.spawn(|| talk_from(cpus[0], a, rounds));
        s.spawn(|| talk_from(cpus[1], b, rounds));
    });
}

/// Rounds of [`talk_from_both`] (the first `split` clients on `cpus[0]`, the rest on
/// `cpus[1]`) until `done` holds for the pool threads named `prefix`, which it returns;
/// fails after 10 s, saying `what`. Each worker asks where its client runs on one linger in
/// 8: rounds of 20 give each several chances.
fn talk_from_both_until(
    cpus: &[usize],
    clients: &mut [Client],
    split: usize,
    prefix: &str,
    what: &str,
    done: impl Fn(&[(String, String)]) -> bool,
) -> Vec<(String, String)> {
    let end = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (a, b) = clients.split_at_mut(split);
        talk_from_both(cpus, a, b, 20);
        let threads = threads_allowed(prefix);
        if done(&threads) {
            return threads;
        }
        assert!(std::time::Instant::now() < end, "{what}: {threads:?}");
    }
}

/// Workers of `threads` pinned to `cpu` alone.
fn pinned_to(threads: &[(String, String)], cpu: usize) -> usize {
    let want = cpu.to_string();
    threads.iter().filter(|(_, a)| *a == want).count()
}

/// Pairing: with affinity on but not engaged (too few clients), a worker lingering on a local
/// connection moves to the CPU its client sends from, while clients send from both CPUs at
/// once: a worker beside each of two clients on two CPUs.
#[test]
fn lingering_workers_move_next_to_clients_on_both_cpus() {
    let Some(cpus) = two_cpus("pairing") else {
        return;
    };
    // Lingering long enough that every command below is a linger hit.
    let srv = Server::start(affinity_config("pair-pool", Duration::from_secs(5)));
    let mut clients = [srv.connect(), srv.connect()];
    // Twice: the second time after the timer's ticks (every 100 ms here) have set every
    // thread of each group to the group's placement, paired ones too; those pin themselves
    // again at their next ask (they used to believe they still were, and stayed free).
    for pass in ["first", "after the timer's ticks"] {
        talk_from_both_until(
            &cpus,
            &mut clients,
            1,
            "pair-pool-g",
            &format!("{pass}: clients on both CPUs, no worker beside each"),
            |t| pinned_to(t, cpus[0]) >= 1 && pinned_to(t, cpus[1]) >= 1,
        );
        let ticks = std::time::Instant::now() + Duration::from_millis(500);
        while std::time::Instant::now() < ticks {
            let (a, b) = clients.split_at_mut(1);
            talk_from_both(&cpus, a, b, 5);
        }
    }
    let s = srv.stats();
    assert!(!s.affinity_engaged, "two clients: {s:#?}");
    assert!(
        s.groups.iter().map(|g| g.counters.linger_hits).sum::<u64>() >= 20,
        "{s:#?}"
    );
}

/// One client thread sends from one CPU at a time, whatever the connections it drives (an
/// event loop; shoal-bench's default): no worker pairs with it, and workers paired while
/// clients ran on both CPUs go back to their group's placement. Eight workers pinned beside
/// one client thread left the other CPU idle (pool 0.73x one thread per connection at 8
/// clients), and even the one a CPU's share allowed cost 3-4 %
/// (docs/perf-log/2026-12-05-session-40-homes.md, docs/perf-log/2026-12-06-session-41-one-thread.md).
#[test]
fn one_client_thread_gets_no_paired_worker() {
    let Some(cpus) = two_cpus("pairing share") else {
        return;
    };
    let srv = Server::start(affinity_config("share-pool", Duration::from_secs(5)));
    let mut clients: Vec<Client> = (0..4).map(|_| srv.connect()).collect();
    // One thread drives all four from CPU 1 from the start: every worker asks several times
    // in 80 rounds, and none pairs (a CPU's share alone would pair one).
    talk_from(cpus[1], &mut clients, 80);
    let threads = threads_allowed("share-pool-g");
    assert_eq!(pinned_to(&threads, cpus[1]), 0, "{threads:?}");
    // Then clients on both CPUs: workers pair.
    talk_from_both_until(
        &cpus,
        &mut clients,
        2,
        "share-pool-g",
        "clients on both CPUs: no worker paired",
        |t| pinned_to(t, cpus[1]) >= 1,
    );
    // Then one thread drives all four from CPU 1: the paired workers go back.
    let end = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        talk_from(cpus[1], &mut clients, 40);
        let threads = threads_allowed("share-pool-g");
        if pinned_to(&threads, cpus[1]) == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < end,
            "a worker still pinned beside one client thread: {threads:?}"
        );
    }
    // And more rounds pair none: every worker asks several times in 40 rounds.
    talk_from(cpus[1], &mut clients, 40);
    let threads = threads_allowed("share-pool-g");
    assert_eq!(pinned_to(&threads, cpus[1]), 0, "{threads:?}");
    let s = srv.stats();
    assert!(!s.affinity_engaged, "one client thread: {s:#?}");
    assert!(
        s.groups.iter().map(|g| g.counters.linger_hits).sum::<u64>() >= 160,
        "{s:#?}"
    );
}

/// Many busy clients on both CPUs engage affinity; when only a few remain it lets go, although
/// those few are on both CPUs too: with lingering on, few clients are served better by
/// pairing. Engaged, the pool refuses a steered connection outside its `id % size` group its
/// linger and counts its commands, so judged by the clients' spread alone, the few kept
/// affinity engaged for as long as they ran.
#[test]
fn affinity_lets_go_when_few_busy_clients_remain() {
    let Some(cpus) = two_cpus("affinity") else {
        return;
    };
    let srv = Server::start(affinity_config("few-pool", Duration::from_millis(2)));
    // Enough connections on each CPU to count as many (`MIN_BUSY_PER_CPU`, 12, a CPU).
    let mut clients: Vec<Client> = (0..32).map(|_| srv.connect()).collect();
    let (a, b) = clients.split_at_mut(16);
    let s = talk_until(&srv, (cpus[0], a), (cpus[1], b), |s| s.affinity_engaged);
    assert!(s.affinity_engaged, "32 busy clients on both CPUs: {s:#?}");
    // Two clients on each CPU go on, the others stay connected but quiet.
    let (a, b) = clients.split_at_mut(2);
    let s = talk_until(&srv, (cpus[0], a), (cpus[1], &mut b[..2]), |s| {
        !s.affinity_engaged
    });
    assert!(!s.affinity_engaged, "4 busy clients: let go: {s:#?}");
    // And it stays let go while they run (judged every 100 ms).
    let end = std::time::Instant::now() + Duration::from_millis(600);
    while std::time::Instant::now() < end {
        let (a, b) = clients.split_at_mut(2);
        talk_from(cpus[0], a, 5);
        talk_from(cpus[1], &mut b[..2], 5);
    }
    let s = srv.stats();
    assert!(!s.affinity_engaged, "4 busy clients stay paired: {s:#?}");
}

/// The engagement is judged on its own cadence (every 100 ms while clients send), not at the
/// timer's tick: with a stall limit of a minute, spread clients still engage affinity within
/// the poll's 10 s deadline. Judged at the tick, four spread ticks took four minutes (and 2 s
/// at the default 500 ms, a fifth of a 10 s benchmark run).
#[test]
fn affinity_engages_soon_whatever_the_stall_limit() {
    let Some(cpus) = two_cpus("affinity") else {
        return;
    };
    let mut cfg = affinity_config("soon-pool", Duration::ZERO);
    cfg.stall_limit = Duration::from_secs(60);
    let srv = Server::start(cfg);
    let mut clients: Vec<Client> = (0..8).map(|_| srv.connect()).collect();
    let (a, b) = clients.split_at_mut(4);
    let s = talk_until(&srv, (cpus[0], a), (cpus[1], b), |s| s.affinity_engaged);
    assert!(
        s.affinity_engaged,
        "clients on both CPUs, stall limit 60 s: not engaged after 10 s: {s:#?}"
    );
}
