//! What a command's end costs the pool per connection, both sides in one run: the one-shot
//! re-arm (`epoll_ctl(EPOLL_CTL_MOD)`, what MariaDB's and Percona's pools pay after every
//! command, and what shoal pays for a busy connection) against the edge-triggered settle's
//! hang-up check (`poll(2)` for `POLLRDHUP` on the socket, added for issue 15; since session 50
//! made only when a readiness report said the peer hung up), over N idle
//! loopback connections registered in one epoll, visited round robin so that each call meets
//! cold cache lines as it does at thousands of connections. Repeats the pair and prints the
//! min and median ns per call of each, and their ratio.
//!
//! ```text
//! cargo run --release -p shoal-pool --example settle_cost -- 2048 5
//! ```

use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2048);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    // Each connection is two fds here (both ends); make room.
    let want = (2 * n + 64) as libc::rlim_t;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointers to a local rlimit.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        if lim.rlim_cur < want {
            lim.rlim_cur = want.min(lim.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut clients = Vec::with_capacity(n);
    let mut servers = Vec::with_capacity(n);
    for _ in 0..n {
        clients.push(TcpStream::connect(addr).unwrap());
        servers.push(listener.accept().unwrap().0);
    }
    // SAFETY: plain syscalls on fds this process owns.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    assert!(ep >= 0);
    for (i, s) in servers.iter().enumerate() {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLONESHOT) as u32,
            u64: i as u64,
        };
        let r = unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, s.as_raw_fd(), &mut ev) };
        assert_eq!(r, 0);
    }
    let fds: Vec<i32> = servers.iter().map(|s| s.as_raw_fd()).collect();
    // Visit the connections in a scattered order (as a loaded pool does), every one per pass.
    let order: Vec<usize> = (0..n).map(|i| (i * 7919) % n).collect();
    let passes = (200_000 / n).max(1);
    let mut rearm = Vec::new();
    let mut check = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..passes {
            for &i in &order {
                let mut ev = libc::epoll_event {
                    events: (libc::EPOLLIN | libc::EPOLLONESHOT) as u32,
                    u64: i as u64,
                };
                let r = unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_MOD, fds[i], &mut ev) };
                assert_eq!(r, 0);
            }
        }
        rearm.push(t.elapsed().as_nanos() as f64 / (passes * n) as f64);
        let t = Instant::now();
        let mut hung = 0;
        for _ in 0..passes {
            for &i in &order {
                let mut p = libc::pollfd {
                    fd: fds[i],
                    events: libc::POLLRDHUP,
                    revents: 0,
                };
                let r = unsafe { libc::poll(&mut p, 1, 0) };
                hung += usize::from(r != 0);
            }
        }
        assert_eq!(hung, 0, "an idle connection reported a hang-up");
        check.push(t.elapsed().as_nanos() as f64 / (passes * n) as f64);
    }
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        (v[0], v[v.len() / 2])
    };
    let (rmin, rmed) = stats(&mut rearm);
    let (cmin, cmed) = stats(&mut check);
    println!(
        "{n} connections, {rounds} rounds of {} calls each: \
         epoll_ctl re-arm min {rmin:.0} median {rmed:.0} ns; \
         poll(POLLRDHUP) check min {cmin:.0} median {cmed:.0} ns; \
         check / re-arm (medians) {:.2}",
        passes * n,
        cmed / rmed
    );
    drop(clients);
}
