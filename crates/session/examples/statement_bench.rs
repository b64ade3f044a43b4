//! The statement path's CPU cost per prepared point select, in process: session, executor and
//! storage, without the network or a connection handler. `SESSIONS` sessions used in turn
//! (each with its own prepared statement), so that a large count shows what thousands of
//! connections' cold per-session state cost; `THREADS` threads (default 1) each run
//! `EXECUTES` on their share of the sessions, so that two threads show what the sessions'
//! shared state costs when it moves between CPUs.
//!
//!     cargo run --release -p shoal-session --example statement_bench -- [SESSIONS] [EXECUTES] [THREADS]
//!
//! Every session prepares the same text, so they share one plan (`crate::plans`); with
//! `DISTINCT_TEXT=1` each session's text differs by a comment, so each builds its own.
//! Prints ns per execute (wall time of a pass over the executes of one thread), best and
//! median of 5 passes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use shoal_proto::backend::{Backend, LoginRequest, Response};
use shoal_proto::Value;
use shoal_session::{ConnectionControl, Server};

struct Ctl(AtomicBool);
impl ConnectionControl for Ctl {
    fn shutdown(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn open(server: &Arc<Server>) -> shoal_session::Session {
    let id = server.next_connection_id();
    let mut s = server.open_session(
        id,
        "127.0.0.1:1".into(),
        Arc::new(Ctl(AtomicBool::new(false))),
    );
    s.authenticate(&LoginRequest {
        user: "root",
        host: "127.0.0.1",
        scramble: b"0123456789abcdefghij",
        credentials: shoal_proto::Credentials::Native(&[]),
        database: None,
        interactive: false,
        attributes: &[],
        tls: false,
        secure_transport: false,
    })
    .expect("root logs in with the empty password");
    s
}

fn run(s: &mut shoal_session::Session, sql: &str) {
    s.command_begin(0x03);
    let r = s.query(sql, false);
    s.command_end();
    r.into_iter()
        .for_each(|r| drop(r.unwrap_or_else(|e| panic!("{sql}: {e:?}"))));
}

fn main() {
    let mut args = std::env::args().skip(1);
    let sessions: usize = args.next().map_or(1, |a| a.parse().expect("SESSIONS"));
    let executes: usize = args
        .next()
        .map_or(200_000, |a| a.parse().expect("EXECUTES"));
    let threads: usize = args.next().map_or(1, |a| a.parse().expect("THREADS"));
    assert!(
        threads >= 1 && sessions >= threads,
        "1 <= THREADS <= SESSIONS"
    );
    let distinct = std::env::var_os("DISTINCT_TEXT").is_some_and(|v| v == "1");
    let rows = 10_000i64;
    let dir = std::env::temp_dir().join(format!("shoal-statement-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cfg = shoal_exec::EngineConfig::new(&dir);
    cfg.direct_reads = false;
    cfg.block_cache_bytes = 64 << 20;
    let server = Server::new();
    server
        .set_startup_option("max_connections", "100000")
        .expect("max_connections");
    server
        .set_startup_option("max_prepared_stmt_count", "1000000")
        .expect("max_prepared_stmt_count");
    // The development default: a fresh datadir's root has no password.
    server.accounts().set_initialize_insecure(true);
    server.set_table_engine(shoal_exec::TableEngine::open(cfg).expect("engine"));
    let mut admin = open(&server);
    run(&mut admin, "CREATE DATABASE sbtest");
    run(&mut admin, "USE sbtest");
    run(
        &mut admin,
        "CREATE TABLE sbtest1 (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, \
         pad CHAR(60) NOT NULL)",
    );
    for chunk in (1..=rows).collect::<Vec<_>>().chunks(500) {
        let values: Vec<String> = chunk
            .iter()
            .map(|i| format!("({i}, {i}, '{}', '{}')", "c".repeat(119), "p".repeat(59)))
            .collect();
        run(
            &mut admin,
            &format!("INSERT INTO sbtest1 VALUES {}", values.join(",")),
        );
    }
    let ss: Vec<_> = (0..sessions)
        .map(|i| {
            let mut s = open(&server);
            run(&mut s, "USE sbtest");
            let sql = if distinct {
                format!("SELECT c FROM sbtest1 WHERE id = ? /* {i} */")
            } else {
                "SELECT c FROM sbtest1 WHERE id = ?".to_string()
            };
            s.prepare(1, &sql).expect("prepare");
            s
        })
        .collect();
    // Session i goes to thread i % threads.
    let mut shares: Vec<Vec<shoal_session::Session>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, s) in ss.into_iter().enumerate() {
        shares[i % threads].push(s);
    }
    let mut passes = Vec::new();
    for _ in 0..5 {
        let start = std::sync::Barrier::new(threads);
        let t = Instant::now();
        std::thread::scope(|scope| {
            for (k, share) in shares.iter_mut().enumerate() {
                let start = &start;
                scope.spawn(move || {
                    start.wait();
                    let mut x: u64 = 0x2545_f491_4f6c_dd1d ^ (k as u64) << 32;
                    for n in 0..executes {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let id = (x % rows as u64) as i64 + 1;
                        let n_sessions = share.len();
                        let s = &mut share[n % n_sessions];
                        // As the server calls it: a command's begin and end around the execute.
                        s.command_begin(0x17);
                        let r = s.execute(1, &[Value::Int(id)]).expect("execute");
                        s.command_end();
                        match r {
                            Response::Rows(r) => assert_eq!(r.rows.len(), 1),
                            other => panic!("{other:?}"),
                        }
                    }
                });
            }
        });
        passes.push(t.elapsed().as_nanos() as f64 / executes as f64);
    }
    passes.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    println!(
        "sessions={sessions} executes={executes} threads={threads} distinct_text={distinct}: \
         ns per execute best {:.0} median {:.0}",
        passes[0], passes[2]
    );
    drop(shares);
    drop(admin);
    let _ = std::fs::remove_dir_all(&dir);
}
