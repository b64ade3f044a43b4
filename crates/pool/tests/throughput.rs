//! A rough throughput check (ignored by default; run with `--ignored --nocapture`): echo round
//! trips through the pool versus a thread per connection, same clients, same machine.
//! Not a benchmark of record (the load generator shares the CPUs); it guards against gross
//! per-command overhead in the pool's hot path.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::{config, Server};

const CLIENTS: usize = 16;
const ROUNDS: usize = 3000;

fn drive(addr: std::net::SocketAddr, greet: bool) -> f64 {
    let t = Instant::now();
    let hs: Vec<_> = (0..CLIENTS)
        .map(|_| {
            std::thread::spawn(move || {
                let s = TcpStream::connect(addr).unwrap();
                s.set_nodelay(true).unwrap();
                let mut w = s.try_clone().unwrap();
                let mut r = BufReader::new(s);
                let mut line = String::new();
                if greet {
                    r.read_line(&mut line).unwrap();
                }
                for _ in 0..ROUNDS {
                    w.write_all(b"echo x\n").unwrap();
                    line.clear();
                    r.read_line(&mut line).unwrap();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    (CLIENTS * ROUNDS) as f64 / t.elapsed().as_secs_f64()
}

#[test]
#[ignore]
fn echo_throughput_pool_vs_thread_per_connection() {
    let over: usize = std::env::var("OVERSUB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let mut cfg = config(2);
    cfg.oversubscribe = over;
    cfg.stall_limit = Duration::from_millis(500);
    let srv = Server::start(cfg);
    let pool = drive(srv.addr, true);
    let s = srv.stats();
    eprintln!("{:#?}", s.groups[0].counters);
    drop(srv);

    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut w = s.try_clone().unwrap();
                let mut r = BufReader::new(s);
                let mut line = String::new();
                while r.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                    let reply = line
                        .trim_end()
                        .strip_prefix("echo ")
                        .unwrap_or("")
                        .to_string();
                    if w.write_all(format!("{reply}\n").as_bytes()).is_err() {
                        break;
                    }
                    line.clear();
                }
            });
        }
    });
    let tpc = drive(addr, false);
    eprintln!(
        "echo round trips/s with {CLIENTS} clients: pool {pool:.0} (threads {}), \
         thread-per-connection {tpc:.0}; ratio {:.2}",
        s.threads,
        pool / tpc
    );
    eprintln!(
        "pool queue time {:?}, exec time {:?}",
        s.groups[0].queue_time, s.groups[0].exec_time
    );
    assert!(pool > 0.1 * tpc, "pool is grossly slower");
    std::thread::sleep(Duration::from_millis(10));
}
