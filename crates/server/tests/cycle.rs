//! The pool contract of `Client::serve_one_command` on NON-blocking sockets: `WantRead` when a
//! command is incomplete, `Continue` after exactly one command, `WantWrite` when the reply does
//! not fit the socket buffer (the rest stays buffered, nothing blocks), `Closed` on EOF.
//! Uses a Unix socketpair and the real session.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use shoal_server::client::{Client, Outcome, Stream};
use shoal_session::Server;

fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut w = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    w.push(seq);
    w.extend_from_slice(payload);
    w
}

fn read_packet(s: &mut UnixStream) -> (u8, Vec<u8>) {
    let mut h = [0u8; 4];
    s.read_exact(&mut h).unwrap();
    let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
    let mut p = vec![0u8; len];
    s.read_exact(&mut p).unwrap();
    (h[3], p)
}

fn login_payload() -> Vec<u8> {
    let caps: u32 = 0x0200 | 0x8000 | 0x0008_0000 | 0x1 | 0x2000 | 0x0002_0000;
    let mut p = Vec::new();
    p.extend_from_slice(&caps.to_le_bytes());
    p.extend_from_slice(&(16u32 << 20).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0u8; 23]);
    p.extend_from_slice(b"root\0\0mysql_native_password\0");
    p
}

#[test]
fn nonblocking_cycle_one_command_at_a_time() {
    // A server with its table engine (queries run there), on a datadir of its own.
    let dir = std::env::temp_dir().join(format!("shoal-cycle-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cfg = shoal_exec::EngineConfig::new(&dir);
    cfg.direct_reads = false;
    cfg.block_cache_bytes = 8 << 20;
    let server = Server::new();
    server.accounts().set_initialize_insecure(true);
    server.set_table_engine(shoal_exec::TableEngine::open(cfg).unwrap());
    let (ours, mut peer) = UnixStream::pair().unwrap();
    ours.set_nonblocking(true).unwrap();
    peer.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut client = Client::accept(&server, Stream::Unix(ours), "localhost".into(), false);
    let n0 = server.connection_count();
    assert!(n0 >= 1);
    // Greeting is written on the first call; then nothing to read.
    assert_eq!(client.serve_one_command(), Outcome::WantRead);
    let (seq, g) = read_packet(&mut peer);
    assert_eq!((seq, g[0]), (0, 10));
    // Half a login packet: still WantRead.
    let login = packet(1, &login_payload());
    peer.write_all(&login[..10]).unwrap();
    assert_eq!(client.serve_one_command(), Outcome::WantRead);
    peer.write_all(&login[10..]).unwrap();
    assert_eq!(client.serve_one_command(), Outcome::Continue);
    let (seq, ok) = read_packet(&mut peer);
    assert_eq!(seq, 2);
    assert_eq!(ok[0], 0, "login failed: {:?}", String::from_utf8_lossy(&ok));
    // Two pipelined commands: exactly one per call.
    peer.write_all(&packet(0, b"\x0e")).unwrap();
    peer.write_all(&packet(0, b"\x0e")).unwrap();
    assert_eq!(client.serve_one_command(), Outcome::Continue);
    assert!(client.connection().has_command());
    assert_eq!(client.serve_one_command(), Outcome::Continue);
    assert_eq!(client.serve_one_command(), Outcome::WantRead);
    assert_eq!(read_packet(&mut peer).1[0], 0);
    assert_eq!(read_packet(&mut peer).1[0], 0);
    // A reply far larger than the socket buffer while the peer does not read: WantWrite.
    peer.write_all(&packet(0, b"\x03SELECT REPEAT('x', 8000000)"))
        .unwrap();
    let first = client.serve_one_command();
    assert_eq!(first, Outcome::WantWrite);
    assert!(!client.connection().pending_output().is_empty());
    // The peer drains; repeated calls (as on EPOLLOUT) finish the reply.
    let reader = std::thread::spawn(move || {
        let mut total = 0usize;
        let (_, count) = read_packet(&mut peer);
        assert_eq!(count, vec![1]);
        // Column definition, EOF, row, EOF (classic EOF: the client did not ask otherwise).
        let mut eofs = 0;
        while eofs < 2 {
            let (_, p) = read_packet(&mut peer);
            total += p.len();
            if p.first() == Some(&0xFE) && p.len() < 9 {
                eofs += 1;
            }
        }
        (peer, total)
    });
    let started = std::time::Instant::now();
    loop {
        match client.serve_one_command() {
            Outcome::WantWrite => std::thread::sleep(Duration::from_millis(1)),
            Outcome::Continue | Outcome::WantRead => break,
            other => panic!("{other:?}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "reply never finished"
        );
    }
    let (peer, total) = reader.join().unwrap();
    assert!(total > 8_000_000, "{total}");
    // EOF from the peer: Closed, and the session is unregistered.
    drop(peer);
    assert_eq!(client.serve_one_command(), Outcome::Closed);
    drop(client);
    assert_eq!(server.connection_count(), n0 - 1);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
