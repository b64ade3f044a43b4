//! `thread_handling=pool-of-threads`: the real `shoal` binary with real clients (the `mysql`
//! crate, raw protocol, the `mariadb` CLI, sysbench). Scenarios from issue 4 that SQL can drive
//! deterministically; CPU-bound unreported work (scenario b/c) has no SQL function yet (no
//! BENCHMARK()), so the stall timer and the oversubscribe cap are covered by crates/pool tests.

mod support;

use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use support::{err_code, Raw, Shoal};

fn pool_server(tag: &str, extra: &[&str]) -> Shoal {
    let mut args = vec!["--thread-handling=pool-of-threads"];
    args.extend_from_slice(extra);
    Shoal::start(tag, &args)
}

fn conn(s: &Shoal) -> mysql::Conn {
    mysql::Conn::new(s.mysql_opts()).expect("connect")
}

fn status(c: &mut mysql::Conn, name: &str) -> u64 {
    let row: Option<(String, String)> = c
        .query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
        .unwrap();
    row.unwrap_or_else(|| panic!("no status {name}"))
        .1
        .parse()
        .unwrap()
}

fn err_of<T: std::fmt::Debug>(r: mysql::Result<T>) -> u16 {
    match r {
        Err(mysql::Error::MySqlError(e)) => e.code,
        other => panic!("expected a server error, got {other:?}"),
    }
}

#[test]
fn basic_queries_prepared_statements_status_and_tables() {
    let s = pool_server("pool-basic", &["--thread-pool-size=2"]);
    let mut c = conn(&s);
    let v: Option<i64> = c.query_first("SELECT 1 + 1").unwrap();
    assert_eq!(v, Some(2));
    let st = c.prep("SELECT ? * 3").unwrap();
    for i in 0..20i64 {
        let v: Option<i64> = c.exec_first(&st, (i,)).unwrap();
        assert_eq!(v, Some(i * 3));
    }
    // Status rows exist and make sense.
    assert!(status(&mut c, "Threadpool_threads") >= 1);
    assert_eq!(status(&mut c, "Threadpool_groups"), 2);
    assert!(status(&mut c, "Threadpool_connections") >= 1);
    assert!(
        status(&mut c, "Threadpool_dequeues_by_listener")
            + status(&mut c, "Threadpool_dequeues_by_worker")
            > 0
    );
    let idle = status(&mut c, "Threadpool_idle_threads");
    assert!(idle <= status(&mut c, "Threadpool_threads") + 1);
    // information_schema tables with MariaDB's columns.
    let groups: Vec<mysql::Row> = c
        .query("SELECT * FROM information_schema.THREAD_POOL_GROUPS")
        .unwrap();
    assert!(groups.len() >= 2, "{groups:?}");
    let cols: Vec<String> = groups[0]
        .columns_ref()
        .iter()
        .map(|c| c.name_str().to_string())
        .collect();
    assert_eq!(
        cols,
        [
            "GROUP_ID",
            "CONNECTIONS",
            "THREADS",
            "ACTIVE_THREADS",
            "STANDBY_THREADS",
            "QUEUE_LENGTH",
            "HAS_LISTENER",
            "IS_STALLED"
        ]
    );
    let ids: Vec<i64> = c
        .query("SELECT GROUP_ID FROM information_schema.thread_pool_groups WHERE GROUP_ID = 1")
        .unwrap();
    assert_eq!(ids, vec![1]);
    let conns: i64 = c
        .query::<(i64, i64), _>(
            "SELECT GROUP_ID, CONNECTIONS FROM information_schema.THREAD_POOL_GROUPS",
        )
        .unwrap()
        .iter()
        .map(|r| r.1)
        .sum();
    assert!(conns >= 1);
    let waits: Vec<(String, i64)> = c
        .query("SELECT * FROM information_schema.THREAD_POOL_WAITS")
        .unwrap();
    assert_eq!(waits.len(), 12);
    assert!(waits.iter().any(|w| w.0 == "ROW_LOCK"));
    let stats: Vec<mysql::Row> = c
        .query("SELECT * FROM information_schema.THREAD_POOL_STATS")
        .unwrap();
    assert!(stats.len() >= 2);
    assert_eq!(stats[0].columns_ref().len(), 11);
    let lat: Vec<(i64, i64)> = c
        .query("SELECT GROUP_ID, EXECUTION_COUNT FROM information_schema.THREAD_POOL_LATENCY")
        .unwrap();
    assert!(lat.iter().map(|r| r.1).sum::<i64>() > 0, "{lat:?}");
    let q: Vec<mysql::Row> = c
        .query("SELECT * FROM information_schema.THREAD_POOL_QUEUES")
        .unwrap();
    assert!(q.is_empty() || q[0].columns_ref().len() == 5);
    // thread_handling is read-only; pool variables are settable.
    assert_eq!(
        err_of(c.query_drop("SET GLOBAL thread_handling = 'one-thread-per-connection'")),
        1238
    );
    c.query_drop("SET GLOBAL thread_pool_stall_limit = 100")
        .unwrap();
    c.query_drop("SET GLOBAL thread_pool_oversubscribe = 5")
        .unwrap();
    c.query_drop("SET GLOBAL thread_pool_high_prio_mode = 'statements'")
        .unwrap();
    c.query_drop("SET GLOBAL thread_pool_dedicated_listener = ON")
        .unwrap();
    let v: Option<i64> = c.query_first("SELECT 41 + 1").unwrap();
    assert_eq!(v, Some(42));
    // A transaction works under the pool (high priority path).
    c.query_drop("BEGIN").unwrap();
    let v: Option<i64> = c.query_first("SELECT 5").unwrap();
    assert_eq!(v, Some(5));
    c.query_drop("COMMIT").unwrap();
}

#[test]
fn many_idle_connections_few_threads() {
    let s = pool_server(
        "pool-many",
        &["--thread-pool-size=2", "--max-connections=1000"],
    );
    let mut conns: Vec<mysql::Conn> = (0..300).map(|_| conn(&s)).collect();
    for (i, c) in conns.iter_mut().enumerate().step_by(37) {
        let v: Option<i64> = c.query_first(format!("SELECT {i}")).unwrap();
        assert_eq!(v, Some(i as i64));
    }
    let c = &mut conns[0];
    assert!(status(c, "Threadpool_connections") >= 300);
    let threads = status(c, "Threadpool_threads");
    assert!(
        threads <= 16,
        "300 idle connections used {threads} pool threads"
    );
    assert!(status(c, "Threads_connected") >= 300);
}

#[test]
fn sleeping_queries_do_not_delay_a_fast_one_in_the_same_group() {
    // One group, the smallest cap MariaDB allows (oversubscribe 1 -> 2 active workers).
    let s = pool_server(
        "pool-sleep",
        &["--thread-pool-size=1", "--thread-pool-oversubscribe=1"],
    );
    let mut fast = conn(&s);
    let sleepers: Vec<_> = (0..4)
        .map(|_| {
            let mut c = conn(&s);
            std::thread::spawn(move || {
                let v: Option<i64> = c.query_first("SELECT SLEEP(2)").unwrap();
                v
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(400));
    let t = Instant::now();
    let v: Option<i64> = fast.query_first("SELECT 1").unwrap();
    let took = t.elapsed();
    assert_eq!(v, Some(1));
    assert!(took < Duration::from_millis(1000), "SELECT 1 took {took:?}");
    // The process list shows the pool state of the sleepers.
    let rows: Vec<mysql::Row> = fast.query("SHOW PROCESSLIST").unwrap();
    let states: Vec<String> = rows
        .iter()
        .map(|r| r.get::<Option<String>, _>(6).flatten().unwrap_or_default())
        .collect();
    assert!(
        states
            .iter()
            .filter(|s| s.contains("waiting: SLEEP"))
            .count()
            >= 3,
        "{states:?}"
    );
    for h in sleepers {
        assert_eq!(h.join().unwrap(), Some(0));
    }
    assert!(status(&mut fast, "Threadpool_waits_sleep") >= 4);
    let waits: Vec<i64> = fast
        .query("SELECT COUNT FROM information_schema.THREAD_POOL_WAITS WHERE REASON = 'SLEEP'")
        .unwrap();
    assert!(waits[0] >= 4);
}

#[test]
fn idle_workers_retire_after_idle_timeout() {
    let s = pool_server("pool-retire", &["--thread-pool-size=1"]);
    let mut c = conn(&s);
    c.query_drop("SET GLOBAL thread_pool_idle_timeout = 1")
        .unwrap();
    let hs: Vec<_> = (0..5)
        .map(|_| {
            let mut c = conn(&s);
            std::thread::spawn(move || {
                let _: Option<i64> = c.query_first("SELECT SLEEP(1)").unwrap();
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let peak = status(&mut c, "Threadpool_threads");
    assert!(peak >= 4, "sleepers should have forced threads: {peak}");
    for h in hs {
        h.join().unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(8);
    loop {
        let now = status(&mut c, "Threadpool_threads");
        if now <= 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "threads did not retire: {now} (peak {peak})"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let v: Option<i64> = c.query_first("SELECT 3").unwrap();
    assert_eq!(v, Some(3));
}

#[test]
fn live_resize_spreads_new_connections() {
    let s = pool_server("pool-resize", &["--thread-pool-size=1"]);
    let mut c = conn(&s);
    let groups_used = |c: &mut mysql::Conn| -> usize {
        let rows: Vec<(i64, i64)> = c
            .query("SELECT GROUP_ID, CONNECTIONS FROM information_schema.THREAD_POOL_GROUPS")
            .unwrap();
        rows.iter().filter(|r| r.1 > 0).count()
    };
    assert_eq!(groups_used(&mut c), 1);
    c.query_drop("SET GLOBAL thread_pool_size = 4").unwrap();
    assert_eq!(status(&mut c, "Threadpool_groups"), 4);
    let mut more: Vec<mysql::Conn> = (0..8).map(|_| conn(&s)).collect();
    for (i, m) in more.iter_mut().enumerate() {
        let v: Option<i64> = m.query_first(format!("SELECT {i}")).unwrap();
        assert_eq!(v, Some(i as i64));
    }
    let v: Option<i64> = c.query_first("SELECT 9").unwrap();
    assert_eq!(v, Some(9));
    assert!(groups_used(&mut c) >= 3, "connections did not spread");
    c.query_drop("SET GLOBAL thread_pool_size = 2").unwrap();
    for m in more.iter_mut() {
        let v: Option<i64> = m.query_first("SELECT 1").unwrap();
        assert_eq!(v, Some(1));
    }
}

#[test]
fn admin_port_answers_while_workers_sleep_and_kill_reaches_the_pool() {
    let admin = support::free_port();
    let admin_arg = format!("--admin-port={admin}");
    let s = pool_server(
        "pool-admin",
        &[
            "--thread-pool-size=1",
            "--thread-pool-max-threads=1",
            "--thread-pool-oversubscribe=1",
            "--thread-pool-stall-limit=100",
            &admin_arg,
        ],
    );
    // Each group can still reach 2 threads: two sleepers occupy them, more queue up. Log in
    // first (a login queued behind the sleepers would block the client's connect).
    let conns: Vec<mysql::Conn> = (0..4).map(|_| conn(&s)).collect();
    let mut ids = Vec::new();
    let mut hs = Vec::new();
    for mut c in conns {
        ids.push(c.connection_id());
        hs.push(std::thread::spawn(move || {
            let t = Instant::now();
            let r: mysql::Result<Option<i64>> = c.query_first("SELECT SLEEP(6)");
            (r.is_err(), t.elapsed())
        }));
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1000));
    let t = Instant::now();
    let mut a = mysql::Conn::new(s.mysql_opts().tcp_port(admin)).expect("admin connect");
    let v: Option<i64> = a.query_first("SELECT 1").unwrap();
    assert_eq!(v, Some(1));
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "admin took {:?}",
        t.elapsed()
    );
    let threads = status(&mut a, "Threadpool_threads");
    assert!(threads <= 3, "{threads}");
    let queued: Vec<u64> = a
        .query("SELECT CONNECTION_ID FROM information_schema.THREAD_POOL_QUEUES")
        .unwrap();
    if queued.is_empty() {
        let procs: Vec<mysql::Row> = a.query("SHOW PROCESSLIST").unwrap();
        let groups: Vec<mysql::Row> = a
            .query("SELECT * FROM information_schema.THREAD_POOL_GROUPS")
            .unwrap();
        let st: Vec<(String, String)> = a.query("SHOW GLOBAL STATUS LIKE 'Threadpool%'").unwrap();
        panic!(
            "nothing queued with all workers asleep: {procs:?} {groups:?} {st:?} {}",
            s.stderr()
        );
    }
    // KILL a queued connection and a sleeping one: both end long before SLEEP(6) would.
    let procs: Vec<mysql::Row> = a.query("SHOW PROCESSLIST").unwrap();
    let sleeping: Vec<u32> = procs
        .iter()
        .filter(|r| {
            r.get::<Option<String>, _>(6)
                .flatten()
                .is_some_and(|st| st.contains("waiting: SLEEP"))
        })
        .map(|r| r.get::<u32, _>(0).unwrap())
        .collect();
    assert_eq!(sleeping.len(), 2, "{procs:?}");
    let queued_id = queued[0] as u32;
    let sleeping_id = sleeping[0];
    assert!(ids.contains(&queued_id) && ids.contains(&sleeping_id));
    a.query_drop(format!("KILL {queued_id}")).unwrap();
    a.query_drop(format!("KILL {sleeping_id}")).unwrap();
    for (i, h) in ids.iter().zip(hs) {
        let (failed, took) = h.join().unwrap();
        if *i == queued_id || *i == sleeping_id {
            assert!(failed, "killed connection {i} completed its query");
            assert!(took < Duration::from_secs(5), "kill of {i} took {took:?}");
        }
    }
    let procs: Vec<mysql::Row> = a.query("SHOW PROCESSLIST").unwrap();
    let live: Vec<u32> = procs.iter().map(|r| r.get::<u32, _>(0).unwrap()).collect();
    assert!(
        !live.contains(&queued_id) && !live.contains(&sleeping_id),
        "{live:?}"
    );
    assert!(status(&mut a, "Aborted_clients") >= 2);
}

#[test]
fn wait_timeout_closes_idle_pool_connections_with_4031() {
    let s = pool_server(
        "pool-timeout",
        &["--thread-pool-size=1", "--wait-timeout=1"],
    );
    let mut r = Raw::connect(s.port);
    r.greeting();
    r.send_login("root");
    assert_eq!(r.read_packet().unwrap().1[0], 0);
    let t = Instant::now();
    let (_, p) = r.read_packet().expect("4031 packet");
    assert_eq!(err_code(&p), 4031);
    assert!(
        t.elapsed() >= Duration::from_millis(800),
        "{:?}",
        t.elapsed()
    );
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    assert!(r.read_packet().is_none());
    // A client that never answers the greeting is dropped after connect_timeout.
    let s2 = pool_server("pool-ctimeout", &["--connect-timeout=2"]);
    let mut r = Raw::connect(s2.port);
    r.greeting();
    let t = Instant::now();
    assert!(r.read_packet().is_none());
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let mut c = conn(&s2);
    assert!(status(&mut c, "Aborted_connects") >= 1);
}

#[test]
fn mariadb_cli_and_sysbench_against_the_pool() {
    let s = pool_server("pool-cli", &["--thread-pool-size=2"]);
    let port = s.port.to_string();
    conn(&s).query_drop("CREATE DATABASE sbtest").unwrap();
    if let Ok(out) = std::process::Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            "-P",
            &port,
            "-uroot",
            "-N",
            "-e",
            "SELECT 6*7",
        ])
        .output()
    {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
        // The Unix socket goes through the pool too.
        let sock = s.socket.display().to_string();
        let out = std::process::Command::new("mariadb")
            .args(["-S", &sock, "-uroot", "-N", "-e", "SELECT 6*7"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
    }
    // Connection-level sysbench (tables are not wired to the storage engine yet): a Lua script
    // that runs SELECT 1 on 32 threads for 2 seconds.
    let script = s.dir.join("select1.lua");
    std::fs::write(
        &script,
        "function thread_init()\n  drv = sysbench.sql.driver()\n  con = drv:connect()\nend\n\
         function event()\n  con:query(\"SELECT 1\")\nend\n\
         function thread_done()\n  con:disconnect()\nend\n",
    )
    .unwrap();
    let Ok(out) = std::process::Command::new("timeout")
        .args(["30", "sysbench"])
        .arg(&script)
        .args([
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            &format!("--mysql-port={port}"),
            "--mysql-user=root",
            "--threads=32",
            "--time=2",
            "run",
        ])
        .output()
    else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let q: u64 = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("total:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    assert!(q > 100, "sysbench ran too few queries: {text}");
    let mut c = conn(&s);
    assert_eq!(status(&mut c, "Aborted_clients"), 0);
}

#[test]
fn kill_idle_connection_then_clean_shutdown() {
    let mut s = pool_server("pool-killidle", &["--thread-pool-size=2"]);
    let mut a = conn(&s);
    let mut victim = conn(&s);
    let mut bystanders: Vec<mysql::Conn> = (0..3).map(|_| conn(&s)).collect();
    let vid = victim.connection_id();
    a.query_drop(format!("KILL CONNECTION {vid}")).unwrap();
    // The idle victim is closed by the pool at once: it leaves the process list and its next
    // query fails.
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let ids: Vec<u32> = a
            .query_map("SHOW PROCESSLIST", |r: mysql::Row| {
                r.get::<u32, _>(0).unwrap()
            })
            .unwrap();
        if !ids.contains(&vid) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "killed connection still listed: {ids:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(victim.query_drop("SELECT 1").is_err());
    for b in bystanders.iter_mut() {
        let v: Option<i64> = b.query_first("SELECT 2").unwrap();
        assert_eq!(v, Some(2));
    }
    assert_eq!(status(&mut a, "Threadpool_connections"), 4);
    // SIGTERM with idle pool connections: clean exit.
    assert_eq!(s.stop(), Some(0), "{}", s.stderr());
}

#[test]
fn slow_readers_of_big_results_do_not_pin_workers() {
    // Two threads at most in the only group: if a reply write blocked, two slow readers would
    // pin both and starve everyone else.
    let s = pool_server(
        "pool-slowread",
        &[
            "--thread-pool-size=1",
            "--thread-pool-max-threads=1",
            "--thread-pool-oversubscribe=1",
        ],
    );
    const N: usize = 12_000_000;
    let mut slow: Vec<Raw> = (0..2)
        .map(|_| {
            let mut r = Raw::connect(s.port);
            r.greeting();
            r.send_login("root");
            assert_eq!(r.read_packet().unwrap().1[0], 0);
            let mut q = vec![0x03u8];
            q.extend_from_slice(format!("SELECT REPEAT('x', {N})").as_bytes());
            r.write_packet(0, &q).unwrap();
            r
        })
        .collect();
    std::thread::sleep(Duration::from_millis(800));
    let mut c = conn(&s);
    for _ in 0..3 {
        let t = Instant::now();
        let v: Option<i64> = c.query_first("SELECT 1").unwrap();
        assert_eq!(v, Some(1));
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }
    let states: Vec<String> = c
        .query_map("SHOW PROCESSLIST", |r: mysql::Row| {
            r.get::<Option<String>, _>(6).flatten().unwrap_or_default()
        })
        .unwrap();
    assert_eq!(
        states.iter().filter(|s| s.contains("waiting: NET")).count(),
        2,
        "{states:?}"
    );
    // The slow readers still get their whole result.
    for r in slow.iter_mut() {
        let mut total = 0usize;
        while total < N {
            let (_, p) = r.read_packet().expect("result packet");
            total += p.len();
        }
    }
}
