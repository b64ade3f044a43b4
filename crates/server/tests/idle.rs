//! Issue 4 scenario (i) at the server level: 4096 idle connections. Under `pool-of-threads` they are
//! held by a handful of threads and cost at most 64 KiB of server RSS each; under
//! `one-thread-per-connection` each holds a thread. Every connection still answers afterwards, and
//! closing them all brings `Threads_connected` back down. The measured RSS per idle connection of
//! both handlers is printed (docs/PERFORMANCE.md quotes it).

mod support;

use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use support::{global_status as status, Shoal};

const CONNECTIONS: usize = 4096;

/// VmRSS of a process in KiB.
fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap()
}

fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .count()
}

/// The test process needs a descriptor per client socket.
fn raise_nofile() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
    }
    assert!(
        lim.rlim_cur as usize > CONNECTIONS + 256,
        "RLIMIT_NOFILE hard limit {} is too low for {CONNECTIONS} client sockets",
        lim.rlim_max
    );
}

/// Opens `n` connections from 4 client threads.
fn open_many(s: &Shoal, n: usize) -> Vec<mysql::Conn> {
    let per = n / 4;
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let opts = s.mysql_opts();
            std::thread::spawn(move || {
                (0..per)
                    .map(|_| mysql::Conn::new(opts.clone()).expect("connect"))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect()
}

struct Measured {
    per_conn_kib: f64,
    threads: usize,
}

fn measure(handling: &str, extra: &[&str]) -> Measured {
    let mut args = vec![
        format!("--thread-handling={handling}"),
        "--max-connections=5000".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = Shoal::start(&format!("idle-{handling}"), &argv);
    let pid = s.child.as_ref().unwrap().id();
    let mut first = mysql::Conn::new(s.mysql_opts()).unwrap();
    // The server raised its descriptor limit to cover max_connections (like mysqld).
    let limit: Option<u64> = first.query_first("SELECT @@open_files_limit").unwrap();
    assert!(limit.unwrap() >= 5000, "open_files_limit {limit:?}");
    std::thread::sleep(Duration::from_millis(300));
    let rss0 = rss_kib(pid);
    let mut conns = open_many(&s, CONNECTIONS);
    assert_eq!(conns.len(), CONNECTIONS);
    std::thread::sleep(Duration::from_millis(500));
    let rss1 = rss_kib(pid);
    let threads = threads_of(pid);
    let per_conn_kib = (rss1.saturating_sub(rss0)) as f64 / CONNECTIONS as f64;
    println!(
        "{handling}: {CONNECTIONS} idle connections: server RSS {rss0} -> {rss1} KiB \
         ({per_conn_kib:.1} KiB per connection), {threads} server threads"
    );
    assert!(status(&mut first, "Threads_connected") > CONNECTIONS as u64);
    // Every connection is still served (the pool re-armed each socket after its last command).
    for c in conns.iter_mut() {
        c.ping().expect("ping an idle connection");
    }
    for (i, c) in conns.iter_mut().enumerate().step_by(97) {
        let v: Option<i64> = c.query_first(format!("SELECT {i} + 1")).unwrap();
        assert_eq!(v, Some(i as i64 + 1));
    }
    if handling == "pool-of-threads" {
        let pool_threads = status(&mut first, "Threadpool_threads");
        let groups = status(&mut first, "Threadpool_groups");
        let oversub: Option<u64> = first
            .query_first("SELECT @@thread_pool_oversubscribe")
            .unwrap();
        let linger: Option<u64> = first
            .query_first("SELECT @@thread_pool_linger_threads")
            .unwrap();
        // Per group at most: the active cap, the lingering workers (the pings above, one per
        // connection, each let a worker linger, and a lingering listener has a stand-in
        // created; they outlive their linger as idle workers until thread_pool_idle_timeout),
        // and the listener.
        let bound = groups * ((1 + oversub.unwrap()) + linger.unwrap() + 1);
        assert!(
            pool_threads <= bound,
            "{CONNECTIONS} idle connections kept {pool_threads} pool threads (bound {bound})"
        );
    }
    drop(conns);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n = status(&mut first, "Threads_connected");
        if n == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{n} connections still counted 30 s after the clients closed them"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Measured {
        per_conn_kib,
        threads,
    }
}

#[test]
fn idle_connections_4096_per_handler() {
    raise_nofile();
    // Two groups throughout: the thread bound is per group in use, and a change of the number
    // of groups (`thread_pool_adaptive_groups`) leaves the old groups' idle workers until
    // `thread_pool_idle_timeout` (4096 connections merged the pool into one group, whose
    // bound is 21 threads, while the two groups before had kept 42).
    let pool = measure(
        "pool-of-threads",
        &["--thread-pool-size=2", "--thread-pool-adaptive-groups=OFF"],
    );
    assert!(
        pool.threads <= 64,
        "pool-of-threads used {} server threads for {CONNECTIONS} idle connections",
        pool.threads
    );
    assert!(
        pool.per_conn_kib <= 64.0,
        "pool-of-threads: {:.1} KiB of RSS per idle connection (target 64)",
        pool.per_conn_kib
    );
    let per_thread = measure("one-thread-per-connection", &[]);
    assert!(
        per_thread.threads > CONNECTIONS,
        "one-thread-per-connection held {CONNECTIONS} connections with only {} threads",
        per_thread.threads
    );
}
