//! A tiny line protocol served by the pool over real TCP sockets, for the scenario tests.
//!
//! Commands (one per line, one reply line each):
//! `echo X` → `X`; `sleep N` → reported SLEEP wait of N ms → `slept`; `spin N` → N ms of CPU
//! without any report → `spun`; `nap N` → N ms asleep without any report → `napped`; `lock` →
//! take the test lock (reported ROW_LOCK wait while someone else holds it) → `locked`;
//! `unlock` → `unlocked`; `lockwait` → wait (reported ROW_LOCK) until
//! the lock is free → `free`; `begin`/`commit` → open/close a "transaction" (priority hint);
//! `hold N` → spin (unreported) until the test opens gate N → `held`; `park N` → sleep
//! (unreported, no CPU) until gate N opens → `parked`;
//! `big N` → N bytes of `x` then a newline (non-blocking writes: `WantWrite` when the socket is
//! full); `quit` → the server closes. Login replies `hello <id>`; an idle timeout sends `timeout`.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use shoal_pool::{CloseReason, Config, Handler, Outcome, Pool, PoolStats, PrioHint};
use shoal_wait::WaitKind;

pub struct Conn {
    pub id: u64,
    stream: TcpStream,
    inbuf: Vec<u8>,
    outbuf: Vec<u8>,
    hint: PrioHint,
    holds_lock: bool,
    /// The last read filled its buffer: the socket may hold more.
    read_full: bool,
}

impl Conn {
    pub fn new(id: u64, stream: TcpStream) -> Conn {
        stream.set_nonblocking(true).unwrap();
        Conn {
            id,
            stream,
            inbuf: Vec::new(),
            outbuf: Vec::new(),
            hint: PrioHint::default(),
            holds_lock: false,
            read_full: false,
        }
    }
}

#[derive(Default)]
pub struct State {
    /// Close reasons by connection id.
    pub closed: Mutex<HashMap<u64, CloseReason>>,
    /// Holder of the test lock.
    lock: Mutex<Option<u64>>,
    lock_cv: Condvar,
    /// Idle timeout applied to every connection.
    pub wait_timeout: Mutex<Option<Duration>>,
    /// Commands executed.
    pub commands: AtomicU64,
    /// `close` calls (must equal the number of distinct closed ids: no double close).
    pub close_calls: AtomicU64,
    /// Do not promise `reads_to_end`: the pool re-arms every socket one-shot.
    pub one_shot: AtomicBool,
    /// `await_input` reads the next command into the connection's buffer (as the server does)
    /// instead of only polling the socket.
    pub consume_on_linger: AtomicBool,
    /// Run one command per `handle` and yield when more complete commands are buffered (as
    /// the server does), instead of running every buffered line at once.
    pub one_per_run: AtomicBool,
    /// The test provokes recovered events on purpose (otherwise dropping the server asserts
    /// that there were none).
    pub allow_recovered: AtomicBool,
    /// Gates for `hold N`: a command that keeps its worker busy (spinning, not a reported
    /// wait) until the test opens gate N. Ordering without wall-clock windows.
    pub gates: [AtomicBool; 8],
}

impl State {
    /// Opens gate `n`: every `hold n` command returns.
    pub fn open_gate(&self, n: usize) {
        self.gates[n].store(true, Ordering::SeqCst);
    }
    /// Closes gate `n` again (for a test that holds a worker round after round).
    pub fn close_gate(&self, n: usize) {
        self.gates[n].store(false, Ordering::SeqCst);
    }
}

pub struct LineHandler {
    pub state: Arc<State>,
}

fn spin(ms: u64) {
    let end = Instant::now() + Duration::from_millis(ms);
    let mut x = 0u64;
    while Instant::now() < end {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        std::hint::black_box(x);
    }
}

impl LineHandler {
    fn command(&self, c: &mut Conn, line: &str) -> Option<String> {
        self.state.commands.fetch_add(1, Ordering::Relaxed);
        let (cmd, arg) = line.split_once(' ').unwrap_or((line, ""));
        let n: u64 = arg.trim().parse().unwrap_or(0);
        Some(match cmd {
            "echo" => arg.to_string(),
            "sleep" => {
                let _w = shoal_wait::wait(WaitKind::Sleep);
                std::thread::sleep(Duration::from_millis(n));
                "slept".into()
            }
            "spin" => {
                spin(n);
                "spun".into()
            }
            "read" => {
                // A disk read of N ms, reported as one (what a cache miss reports).
                let _w = shoal_wait::wait(WaitKind::DiskIo);
                std::thread::sleep(Duration::from_millis(n));
                "read".into()
            }
            "nap" => {
                // Asleep for N ms, unreported: blocked where the pool cannot see it.
                std::thread::sleep(Duration::from_millis(n));
                "napped".into()
            }
            "hold" => {
                let gate = &self.state.gates[n as usize];
                // A failing test never opens its gate: give up after two minutes rather than
                // hang the pool's shutdown.
                let give_up = Instant::now() + Duration::from_secs(120);
                let mut x = 0u64;
                while !gate.load(Ordering::SeqCst) && Instant::now() < give_up {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    std::hint::black_box(x);
                    std::thread::yield_now();
                }
                "held".into()
            }
            "park" => {
                // Like `hold`, but asleep (no CPU) and unreported: a worker blocked where
                // nothing tells the pool, as a page read inside a storage engine would be.
                let gate = &self.state.gates[n as usize];
                let give_up = Instant::now() + Duration::from_secs(120);
                while !gate.load(Ordering::SeqCst) && Instant::now() < give_up {
                    std::thread::sleep(Duration::from_millis(5));
                }
                "parked".into()
            }
            "lock" => {
                let mut l = self.state.lock.lock().unwrap();
                if l.is_some_and(|h| h != c.id) {
                    let _w = shoal_wait::wait(WaitKind::RowLock);
                    while l.is_some_and(|h| h != c.id) {
                        l = self.state.lock_cv.wait(l).unwrap();
                    }
                }
                *l = Some(c.id);
                c.holds_lock = true;
                "locked".into()
            }
            "unlock" => {
                let mut l = self.state.lock.lock().unwrap();
                if *l == Some(c.id) {
                    *l = None;
                }
                c.holds_lock = false;
                self.state.lock_cv.notify_all();
                "unlocked".into()
            }
            "lockwait" => {
                let mut l = self.state.lock.lock().unwrap();
                if l.is_some() {
                    let _w = shoal_wait::wait(WaitKind::RowLock);
                    while l.is_some() {
                        l = self.state.lock_cv.wait(l).unwrap();
                    }
                }
                "free".into()
            }
            "begin" => {
                c.hint.in_transaction = true;
                "ok".into()
            }
            "commit" => {
                c.hint.in_transaction = false;
                "ok".into()
            }
            "big" => "x".repeat(n as usize),
            "panic" => panic!("test handler panics on purpose"),
            "panicinwait" => {
                shoal_wait::wait_begin(WaitKind::Sleep);
                panic!("test handler panics inside a reported wait");
            }
            "quit" => return None,
            _ => format!("error: unknown command {cmd}"),
        })
    }

    /// Writes pending output without blocking; `false` if the socket is full.
    fn flush(&self, c: &mut Conn) -> std::io::Result<bool> {
        while !c.outbuf.is_empty() {
            match c.stream.write(&c.outbuf) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => {
                    c.outbuf.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

impl Handler for LineHandler {
    type Conn = Conn;

    fn fd(&self, conn: &Conn) -> RawFd {
        conn.stream.as_raw_fd()
    }

    fn login(&self, conn: &mut Conn) -> Outcome {
        conn.outbuf
            .extend_from_slice(format!("hello {}\n", conn.id).as_bytes());
        match self.flush(conn) {
            Ok(true) => Outcome::Continue,
            Ok(false) => Outcome::WantWrite,
            Err(_) => Outcome::Close,
        }
    }

    fn handle(&self, c: &mut Conn) -> Outcome {
        if !c.outbuf.is_empty() {
            return match self.flush(c) {
                Ok(true) => Outcome::Continue,
                Ok(false) => Outcome::WantWrite,
                Err(_) => Outcome::Close,
            };
        }
        // A line already read (by a consuming `await_input`) runs without touching the socket.
        if !c.inbuf.contains(&b'\n') {
            let mut buf = [0u8; 4096];
            match c.stream.read(&mut buf) {
                Ok(0) => return Outcome::Close,
                Ok(n) => {
                    c.inbuf.extend_from_slice(&buf[..n]);
                    c.read_full = n == buf.len();
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    c.read_full = false;
                    return Outcome::Continue;
                }
                Err(_) => return Outcome::Close,
            }
        }
        // Run every complete line (the client waits for each reply, so usually one), or only
        // the first one (`one_per_run`).
        let one = self.state.one_per_run.load(Ordering::Relaxed);
        while let Some(pos) = c.inbuf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = c.inbuf.drain(..=pos).collect();
            let line = String::from_utf8_lossy(&line[..line.len() - 1]).to_string();
            match self.command(c, &line) {
                Some(reply) => {
                    c.outbuf.extend_from_slice(reply.as_bytes());
                    c.outbuf.push(b'\n');
                }
                None => return Outcome::Close,
            }
            match self.flush(c) {
                Ok(true) => {}
                Ok(false) => return Outcome::WantWrite,
                Err(_) => return Outcome::Close,
            }
            if one && c.inbuf.contains(&b'\n') {
                // The next command is already here: the socket need not be read for it.
                return Outcome::Yield;
            }
            if one {
                break;
            }
        }
        // A full read may have left bytes in the socket, which an edge-triggered registration
        // would not report again (`reads_to_end`): read on before waiting.
        if c.read_full {
            Outcome::Yield
        } else {
            Outcome::Continue
        }
    }

    fn reads_to_end(&self) -> bool {
        !self.state.one_shot.load(Ordering::Relaxed)
    }

    fn await_input(&self, c: &mut Conn, budget: Duration) -> bool {
        if !self.state.consume_on_linger.load(Ordering::SeqCst) {
            return shoal_pool::poll_readable(c.stream.as_raw_fd(), budget);
        }
        // Like the server: block in the read itself, keep the bytes.
        let _ = c.stream.set_nonblocking(false);
        let _ = c.stream.set_read_timeout(Some(budget));
        let mut buf = [0u8; 4096];
        let ready = match c.stream.read(&mut buf) {
            Ok(n) => {
                c.inbuf.extend_from_slice(&buf[..n]);
                c.read_full = n == buf.len();
                true
            }
            Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        };
        let _ = c.stream.set_nonblocking(true);
        ready
    }

    fn priority(&self, c: &Conn) -> PrioHint {
        PrioHint {
            in_transaction: c.hint.in_transaction,
            holds_locks: c.holds_lock,
            ..Default::default()
        }
    }

    fn idle_deadline(&self, _c: &Conn) -> Option<Instant> {
        self.state
            .wait_timeout
            .lock()
            .unwrap()
            .map(|d| Instant::now() + d)
    }

    fn timed_out(&self, c: &mut Conn) {
        c.outbuf.extend_from_slice(b"timeout\n");
        let _ = self.flush(c);
    }

    fn close(&self, c: Conn, reason: CloseReason) {
        if c.holds_lock {
            let mut l = self.state.lock.lock().unwrap();
            if *l == Some(c.id) {
                *l = None;
            }
            self.state.lock_cv.notify_all();
        }
        self.state.close_calls.fetch_add(1, Ordering::SeqCst);
        self.state.closed.lock().unwrap().insert(c.id, reason);
    }
}

/// The pool behind a TCP acceptor.
pub struct Server {
    pub pool: Arc<Pool<LineHandler>>,
    pub state: Arc<State>,
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
    next_id: Arc<AtomicU64>,
}

impl Server {
    pub fn start(config: Config) -> Server {
        let state = Arc::new(State::default());
        let pool = Arc::new(
            Pool::start(
                config,
                LineHandler {
                    state: state.clone(),
                },
            )
            .expect("pool starts"),
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let next_id = Arc::new(AtomicU64::new(1));
        let (p, s, n) = (pool.clone(), stop.clone(), next_id.clone());
        let acceptor = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok(_) if s.load(Ordering::SeqCst) => break, // the wake-up connection
                    Ok((stream, _)) => {
                        stream.set_nodelay(true).unwrap();
                        let id = n.fetch_add(1, Ordering::SeqCst);
                        let _ = p.add(id, Conn::new(id, stream));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Server {
            pool,
            state,
            addr,
            stop,
            acceptor: Some(acceptor),
            next_id,
        }
    }

    /// Connects and reads the greeting; returns the client and its connection id.
    pub fn connect(&self) -> Client {
        let mut c = self.connect_raw();
        self.greet(&mut c);
        c
    }

    /// Reads the greeting of a client from [`Server::connect_raw`].
    pub fn greet(&self, c: &mut Client) {
        let hello = c
            .read_line()
            .unwrap_or_else(|| panic!("no greeting; pool: {:#?}", self.stats()));
        c.id = hello
            .strip_prefix("hello ")
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad greeting {hello:?}"));
    }

    /// Connects without waiting for the greeting.
    pub fn connect_raw(&self) -> Client {
        let stream = TcpStream::connect(self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Client {
            reader: BufReader::new(stream.try_clone().unwrap()),
            stream,
            id: 0,
        }
    }

    pub fn stats(&self) -> PoolStats {
        self.pool.stats()
    }

    /// Polls `f` on the stats until it holds or `timeout` passes.
    pub fn wait_for(&self, timeout: Duration, f: impl Fn(&PoolStats) -> bool) -> PoolStats {
        let end = Instant::now() + timeout;
        loop {
            let s = self.stats();
            if f(&s) || Instant::now() > end {
                return s;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.next_id.load(Ordering::SeqCst) - 1
    }

    pub fn close_reason(&self, id: u64) -> Option<CloseReason> {
        self.state.closed.lock().unwrap().get(&id).copied()
    }

    /// Waits until `id` has been closed by the pool.
    pub fn wait_closed(&self, id: u64, timeout: Duration) -> Option<CloseReason> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(r) = self.close_reason(id) {
                return Some(r);
            }
            if Instant::now() > end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // unblocks accept()
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        let recovered = self.pool.stats().recovered_events();
        self.pool.shutdown();
        // The safety net must never have had to act: a recovered event is a lost wake-up.
        if !std::thread::panicking() && !self.state.allow_recovered.load(Ordering::SeqCst) {
            assert_eq!(recovered, 0, "the pool's safety net recovered lost events");
        }
    }
}

pub struct Client {
    pub stream: TcpStream,
    /// Reads replies (a clone of `stream`).
    reader: BufReader<TcpStream>,
    pub id: u64,
}

impl Client {
    pub fn send(&mut self, line: &str) {
        self.stream
            .write_all(format!("{line}\n").as_bytes())
            .unwrap();
    }

    /// `None` on EOF (or error).
    pub fn read_line(&mut self) -> Option<String> {
        let mut s = String::new();
        match self.reader.read_line(&mut s) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(s.trim_end_matches('\n').to_string()),
        }
    }

    pub fn cmd(&mut self, line: &str) -> String {
        self.send(line);
        self.read_line()
            .unwrap_or_else(|| panic!("connection {} closed during {line:?}", self.id))
    }

    /// Sends a command and returns its reply and latency.
    pub fn timed(&mut self, line: &str) -> (String, Duration) {
        let t = Instant::now();
        let r = self.cmd(line);
        (r, t.elapsed())
    }
}

/// A configuration suited to tests: small group array, fast timers.
pub fn config(size: usize) -> Config {
    Config {
        size,
        max_size: 8,
        oversubscribe: 0,
        stall_limit: Duration::from_millis(100),
        idle_timeout: Duration::from_secs(30),
        // The scenarios place connections by id (`id % size`); CPU affinity, which moves a
        // local client's connection to its CPU's group, has its own scenario.
        cpu_affinity: false,
        // The scenarios test the static cap (`1 + oversubscribe`); the adaptive ones turn the
        // controller on themselves.
        adaptive: false,
        // And they place connections in `size` groups: adaptive mode's choice of the number
        // of groups has its own scenario (`tests/regroup.rs`).
        adaptive_groups: false,
        ..Config::default()
    }
}

/// Polls the stats until `f` holds, panicking with them after `timeout`.
pub fn until(
    srv: &Server,
    timeout: Duration,
    what: &str,
    f: impl Fn(&PoolStats) -> bool,
) -> PoolStats {
    let end = Instant::now() + timeout;
    loop {
        let s = srv.stats();
        if f(&s) {
            return s;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}: {s:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `n` clients that send `cmd` in a loop, each answer checked against `answer`, until `stop`;
/// each thread returns how many commands it completed.
pub fn looping_clients(
    srv: &Server,
    n: usize,
    cmd: &'static str,
    answer: &'static str,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Vec<std::thread::JoinHandle<u64>> {
    (0..n)
        .map(|_| {
            let mut c = srv.connect();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut done = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    assert_eq!(c.cmd(cmd), answer);
                    done += 1;
                }
                done
            })
        })
        .collect()
}
