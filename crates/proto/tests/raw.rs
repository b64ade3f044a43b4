//! Byte-level tests: malformed input never panics and ends in an error + close; sysbench-style
//! re-execution without new-params-bound; auth switch; EOF vs DEPRECATE_EOF; long data; the
//! remaining commands. Most drive `Connection` directly (sans-IO), some over TCP.

mod common;

use common::{mysql_native, Raw, TestBackend, TestServer, RAW_CAPS};
use rand::{Rng, SeedableRng};
use shoal_proto::packet::{write_message, Reader};
use shoal_proto::{Admission, Buffers, CloseReason, Connection, ErrorInfo, Progress, ProtoConfig};

/// Splits output into (seq, payload) packets (single-packet messages only).
fn packets(out: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut v = Vec::new();
    let mut pos = 0;
    while pos + 4 <= out.len() {
        let len = u32::from_le_bytes([out[pos], out[pos + 1], out[pos + 2], 0]) as usize;
        v.push((out[pos + 3], out[pos + 4..pos + 4 + len].to_vec()));
        pos += 4 + len;
    }
    assert_eq!(pos, out.len(), "trailing partial packet");
    v
}

fn new_conn() -> (Connection<TestBackend>, [u8; 20]) {
    let mut c = Connection::new(TestBackend::new(1 << 20), ProtoConfig::default());
    let g = packets(&c.take_output());
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].0, 0);
    let p = &g[0].1;
    let mut r = Reader::new(&p[1..]);
    let version = r.null_str().unwrap();
    assert!(std::str::from_utf8(version)
        .unwrap()
        .starts_with("8.0.36-shoal-"));
    r.u32().unwrap();
    let s1 = r.bytes(8).unwrap().to_vec();
    r.bytes(1 + 2 + 1 + 2 + 2 + 1 + 10).unwrap();
    let s2 = r.bytes(12).unwrap().to_vec();
    assert_eq!(r.u8(), Some(0));
    assert_eq!(r.null_str().unwrap(), b"mysql_native_password");
    let mut s = [0u8; 20];
    s[..8].copy_from_slice(&s1);
    s[8..].copy_from_slice(&s2);
    (c, s)
}

fn handshake_response(
    caps: u32,
    user: &str,
    auth: &[u8],
    plugin: &str,
    db: Option<&str>,
) -> Vec<u8> {
    let caps = caps | if db.is_some() { 0x8 } else { 0 };
    let mut p = Vec::new();
    p.extend_from_slice(&caps.to_le_bytes());
    p.extend_from_slice(&(16u32 << 20).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0u8; 23]);
    p.extend_from_slice(user.as_bytes());
    p.push(0);
    p.push(auth.len() as u8);
    p.extend_from_slice(auth);
    if let Some(db) = db {
        p.extend_from_slice(db.as_bytes());
        p.push(0);
    }
    p.extend_from_slice(plugin.as_bytes());
    p.push(0);
    p
}

fn feed_msg(c: &mut Connection<TestBackend>, seq: u8, payload: &[u8]) {
    let mut w = Vec::new();
    write_message(&mut w, seq, payload);
    c.feed(&w);
}

fn logged_in(caps: u32) -> Connection<TestBackend> {
    let (mut c, _) = new_conn();
    feed_msg(
        &mut c,
        1,
        &handshake_response(caps, "nopw", &[], "mysql_native_password", None),
    );
    assert_eq!(c.process(), Progress::Continue);
    let out = packets(&c.take_output());
    assert_eq!(out, vec![(2, vec![0, 0, 0, 2, 0, 0, 0])]);
    assert!(c.is_authenticated());
    c
}

/// Sends one command, processes it, returns the reply packets.
fn cmd(c: &mut Connection<TestBackend>, payload: &[u8]) -> Vec<(u8, Vec<u8>)> {
    feed_msg(c, 0, payload);
    let p = c.process();
    assert_ne!(p, Progress::NeedMore);
    packets(&c.take_output())
}

fn err_code(p: &[u8]) -> u16 {
    assert_eq!(p[0], 0xFF, "not an ERR packet: {p:?}");
    u16::from_le_bytes([p[1], p[2]])
}

#[test]
fn random_garbage_never_panics_and_closes() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    for round in 0..3000 {
        let (mut c, _) = new_conn();
        if round % 2 == 1 {
            // Half of the rounds start from the command phase.
            feed_msg(
                &mut c,
                1,
                &handshake_response(RAW_CAPS, "nopw", &[], "", None),
            );
            assert_eq!(c.process(), Progress::Continue);
            c.take_output();
        }
        let n = rng.gen_range(0..300);
        let mut bytes: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
        if round % 3 == 0 && bytes.len() > 4 {
            // Plausible header with a right sequence id, random payload.
            let len = (bytes.len() - 4) as u32;
            bytes[..3].copy_from_slice(&len.to_le_bytes()[..3]);
            bytes[3] = if round % 2 == 1 { 0 } else { 1 };
        }
        c.feed(&bytes);
        let mut steps = 0;
        loop {
            steps += 1;
            assert!(steps < 1000, "no progress");
            match c.process() {
                Progress::NeedMore => break,
                Progress::Continue => {}
                Progress::StartTls => panic!("TLS is not offered here"),
                Progress::Close => {
                    assert!(c.is_closed());
                    break;
                }
            }
        }
        c.take_output();
    }
}

#[test]
fn truncated_commands_never_panic() {
    // Every valid command truncated at every length.
    let mut exec = vec![0x17];
    exec.extend_from_slice(&1u32.to_le_bytes());
    exec.push(0);
    exec.extend_from_slice(&1u32.to_le_bytes());
    exec.extend_from_slice(&[0, 1, 0x08, 0]);
    exec.extend_from_slice(&5u64.to_le_bytes());
    let cmds: Vec<Vec<u8>> = vec![
        exec,
        vec![0x18, 1, 0, 0, 0, 0, 0, b'x'],
        vec![0x19, 1, 0, 0, 0],
        vec![0x1a, 1, 0, 0, 0],
        vec![0x1b, 0, 0],
        vec![0x0c, 1, 0, 0, 0],
        vec![0x04, b't', b'1', 0, b'%'],
    ];
    for full in cmds {
        for cut in 0..=full.len() {
            let mut c = logged_in(RAW_CAPS);
            let r = cmd(&mut c, b"\x16ECHO ?");
            assert_eq!(r[0].1[0], 0);
            feed_msg(&mut c, 0, &full[..cut]);
            let p = c.process();
            assert_ne!(p, Progress::NeedMore);
            c.take_output();
        }
    }
}

#[test]
fn handshake_errors() {
    // Too short / not 4.1 / garbage -> 1043 and close.
    for payload in [
        vec![1, 2, 3],
        vec![0u8; 40],
        handshake_response(0x1, "x", &[], "", None),
    ] {
        let (mut c, _) = new_conn();
        feed_msg(&mut c, 1, &payload);
        assert_eq!(c.process(), Progress::Close);
        let out = packets(&c.take_output());
        assert_eq!(err_code(&out[0].1), 1043);
        assert_eq!(c.close_reason(), Some(CloseReason::LoginFailed));
    }
    // Wrong sequence id -> 1156.
    let (mut c, _) = new_conn();
    feed_msg(
        &mut c,
        5,
        &handshake_response(RAW_CAPS, "nopw", &[], "", None),
    );
    assert_eq!(c.process(), Progress::Close);
    assert_eq!(err_code(&packets(&c.take_output())[0].1), 1156);
    // Absurd length before login: refused from the header alone.
    let (mut c, _) = new_conn();
    c.feed(&[0xFF, 0xFF, 0xFF, 1]);
    assert!(c.has_command());
    assert_eq!(c.process(), Progress::Close);
    assert_eq!(err_code(&packets(&c.take_output())[0].1), 1153);
    // A command before login is parsed as a (bad) handshake response.
    let (mut c, _) = new_conn();
    feed_msg(&mut c, 0, b"\x03SELECT 1");
    assert_eq!(c.process(), Progress::Close);
    let code = err_code(&packets(&c.take_output())[0].1);
    assert!(code == 1156 || code == 1043, "{code}");
}

#[test]
fn wrong_password_and_password_login() {
    let (mut c, s) = new_conn();
    let auth = mysql_native(&s, "pw");
    feed_msg(
        &mut c,
        1,
        &handshake_response(RAW_CAPS, "root", &auth, "mysql_native_password", None),
    );
    assert_eq!(c.process(), Progress::Continue);
    assert_eq!(packets(&c.take_output())[0].1[0], 0);
    let (mut c, s) = new_conn();
    let auth = mysql_native(&s, "nope");
    feed_msg(
        &mut c,
        1,
        &handshake_response(RAW_CAPS, "root", &auth, "mysql_native_password", None),
    );
    assert_eq!(c.process(), Progress::Close);
    let out = packets(&c.take_output());
    assert_eq!(out[0].0, 2);
    assert_eq!(err_code(&out[0].1), 1045);
    let msg = String::from_utf8_lossy(&out[0].1[9..]).into_owned();
    assert!(msg.contains("Access denied for user 'root'"), "{msg}");
}

#[test]
fn caching_sha2_client_gets_auth_switch() {
    let (mut c, s) = new_conn();
    // The client opens with caching_sha2_password and a 32-byte response.
    feed_msg(
        &mut c,
        1,
        &handshake_response(
            RAW_CAPS,
            "root",
            &[7u8; 32],
            "caching_sha2_password",
            Some("db1"),
        ),
    );
    assert_eq!(c.process(), Progress::Continue);
    let out = packets(&c.take_output());
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 2);
    let p = &out[0].1;
    assert_eq!(p[0], 0xFE);
    let mut r = Reader::new(&p[1..]);
    assert_eq!(r.null_str().unwrap(), b"mysql_native_password");
    assert_eq!(r.bytes(20).unwrap(), &s);
    assert!(!c.is_authenticated());
    feed_msg(&mut c, 3, &mysql_native(&s, "pw"));
    assert_eq!(c.process(), Progress::Continue);
    let out = packets(&c.take_output());
    assert_eq!(out[0].0, 4);
    assert_eq!(out[0].1[0], 0);
    assert!(c.is_authenticated());
    assert_eq!(c.backend().db.as_deref(), Some("db1"));
    let r = cmd(&mut c, b"\x03SELECT 1");
    assert_eq!(r[0], (1, vec![1]));
}

/// SSLRequest: refused (1043) when TLS is not offered; with TLS offered the greeting has
/// CLIENT_SSL, the request yields `StartTls` with the bytes behind it handed back untouched, and
/// the login that follows (inside TLS, sequence 2) is told the link is TLS.
#[test]
fn ssl_request_switches_to_tls_only_when_offered() {
    const CLIENT_SSL: u32 = 0x0800;
    let ssl_request = handshake_response(RAW_CAPS | CLIENT_SSL, "", &[], "", None)[..32].to_vec();
    let (mut plain, _) = new_conn();
    feed_msg(&mut plain, 1, &ssl_request);
    assert_eq!(plain.process(), Progress::Close);
    assert_eq!(err_code(&packets(&plain.take_output())[0].1), 1043);

    let mut c = Connection::new(
        TestBackend::new(1 << 20),
        ProtoConfig {
            tls: true,
            ..ProtoConfig::default()
        },
    );
    let g = packets(&c.take_output());
    let p = &g[0].1;
    let nul = p[1..].iter().position(|&b| b == 0).unwrap();
    let caps = u16::from_le_bytes([p[1 + nul + 1 + 4 + 9], p[1 + nul + 1 + 4 + 10]]);
    assert_ne!(u32::from(caps) & CLIENT_SSL, 0, "CLIENT_SSL not offered");
    feed_msg(&mut c, 1, &ssl_request);
    c.feed(b"\x16\x03\x01 first TLS bytes");
    assert_eq!(c.process(), Progress::StartTls);
    assert!(c.is_tls());
    assert!(
        c.take_output().is_empty(),
        "nothing is sent in clear after an SSLRequest"
    );
    assert_eq!(c.take_unprocessed_input(), b"\x16\x03\x01 first TLS bytes");
    // The real response (decrypted by the network layer) comes with sequence 2.
    feed_msg(
        &mut c,
        2,
        &handshake_response(RAW_CAPS | CLIENT_SSL, "nopw", &[], "", None),
    );
    assert_eq!(c.process(), Progress::Continue);
    let ok = packets(&c.take_output());
    assert_eq!((ok[0].0, ok[0].1[0]), (3, 0));
    assert!(c.is_authenticated());
    assert!(c.backend().last_login_tls);
    // A second SSLRequest-sized packet inside TLS is no login.
    let mut c = Connection::new(
        TestBackend::new(1 << 20),
        ProtoConfig {
            tls: true,
            ..ProtoConfig::default()
        },
    );
    c.take_output();
    feed_msg(&mut c, 1, &ssl_request);
    assert_eq!(c.process(), Progress::StartTls);
    feed_msg(&mut c, 2, &ssl_request);
    assert_eq!(c.process(), Progress::Close);
    assert_eq!(err_code(&packets(&c.take_output())[0].1), 1043);
}

#[test]
fn admission_refusals() {
    let too_many = ErrorInfo::new(1040, "08004", "Too many connections");
    let mut c = Connection::new(
        TestBackend::new(1 << 20),
        ProtoConfig {
            admission: Admission::Refuse(too_many.clone()),
            ..ProtoConfig::default()
        },
    );
    c.take_output();
    feed_msg(
        &mut c,
        1,
        &handshake_response(RAW_CAPS, "nopw", &[], "", None),
    );
    assert_eq!(c.process(), Progress::Close);
    assert_eq!(err_code(&packets(&c.take_output())[0].1), 1040);
    // RootOnly admits root, refuses others.
    for (user, ok) in [("nopw", false), ("root", true)] {
        let mut c = Connection::new(
            TestBackend::new(1 << 20),
            ProtoConfig {
                admission: Admission::RootOnly(too_many.clone()),
                ..ProtoConfig::default()
            },
        );
        let g = packets(&c.take_output());
        let mut r = Reader::new(&g[0].1[1..]);
        r.null_str();
        r.u32();
        let mut s = r.bytes(8).unwrap().to_vec();
        r.bytes(19).unwrap();
        s.extend_from_slice(r.bytes(12).unwrap());
        let auth = if user == "root" {
            mysql_native(&s, "pw").to_vec()
        } else {
            vec![]
        };
        feed_msg(
            &mut c,
            1,
            &handshake_response(RAW_CAPS, user, &auth, "", None),
        );
        let p = c.process();
        let out = packets(&c.take_output());
        if ok {
            assert_eq!(p, Progress::Continue);
            assert_eq!(out[0].1[0], 0);
        } else {
            assert_eq!(p, Progress::Close);
            assert_eq!(err_code(&out[0].1), 1040);
        }
    }
}

#[test]
fn classic_eof_versus_deprecate_eof() {
    // Classic: count, column, EOF, row, EOF.
    let mut c = logged_in(RAW_CAPS);
    let r = cmd(&mut c, b"\x03SELECT 5");
    assert_eq!(r.len(), 5);
    assert_eq!(r[0], (1, vec![1]));
    assert_eq!(r[2].1[0], 0xFE);
    assert_eq!(r[2].1.len(), 5);
    assert_eq!(r[3], (4, vec![1, b'5']));
    assert_eq!(r[4].1, vec![0xFE, 0, 0, 2, 0]);
    // DEPRECATE_EOF: count, column, row, OK(0xFE).
    let mut c = logged_in(RAW_CAPS | 0x0100_0000);
    let r = cmd(&mut c, b"\x03SELECT 5");
    assert_eq!(r.len(), 4);
    assert_eq!(r[2], (3, vec![1, b'5']));
    assert_eq!(r[3].1, vec![0xFE, 0, 0, 2, 0, 0, 0]);
    // Multi-statements set MORE_RESULTS_EXISTS on all but the last result.
    let mut c = logged_in(RAW_CAPS | 0x0001_0000);
    let r = cmd(&mut c, b"\x03SELECT 1;SELECT 2");
    assert_eq!(r.len(), 10);
    assert_eq!(r[4].1, vec![0xFE, 0, 0, 0x0a, 0]);
    assert_eq!(r[9].1, vec![0xFE, 0, 0, 0x02, 0]);
    // Without CLIENT_MULTI_STATEMENTS the text is one statement...
    let mut c = logged_in(RAW_CAPS);
    let r = cmd(&mut c, b"\x03SELECT 1;SELECT 2");
    assert_eq!(err_code(&r[0].1), 1064);
    // ...until COM_SET_OPTION turns it on (reply: EOF).
    let r = cmd(&mut c, &[0x1b, 0, 0]);
    assert_eq!(r[0].1[0], 0xFE);
    let r = cmd(&mut c, b"\x03SELECT 1;SELECT 2");
    assert_eq!(r.len(), 10);
    // Transaction status flag follows the backend.
    let r = cmd(&mut c, b"\x03BEGIN");
    assert_eq!(r[0].1, vec![0, 0, 0, 3, 0, 0, 0]);
    assert!(c.in_transaction());
}

#[test]
fn sysbench_style_reexecute_without_new_params_bound() {
    let mut c = logged_in(RAW_CAPS);
    let r = cmd(&mut c, b"\x16ECHO ?, ?");
    // PREPARE_OK, 2 param defs, EOF (no columns).
    assert_eq!(r.len(), 4);
    assert_eq!(r[0].1[0], 0);
    let id = u32::from_le_bytes(r[0].1[1..5].try_into().unwrap());
    assert_eq!(u16::from_le_bytes([r[0].1[7], r[0].1[8]]), 2);
    // COM_STMT_RESET before the first execute (mysql-connector does this).
    let mut reset = vec![0x1a];
    reset.extend_from_slice(&id.to_le_bytes());
    assert_eq!(cmd(&mut c, &reset)[0].1[0], 0);
    let exec = |bound: bool, a: i32, b: &str| {
        let mut p = vec![0x17];
        p.extend_from_slice(&id.to_le_bytes());
        p.push(0);
        p.extend_from_slice(&1u32.to_le_bytes());
        p.push(0); // null bitmap
        p.push(bound as u8);
        if bound {
            p.extend_from_slice(&[0x03, 0x00, 0xfd, 0x00]);
        }
        p.extend_from_slice(&a.to_le_bytes());
        p.push(b.len() as u8);
        p.extend_from_slice(b.as_bytes());
        p
    };
    for (i, bound) in [true, false, false].into_iter().enumerate() {
        let r = cmd(&mut c, &exec(bound, 10 + i as i32, "abc"));
        // count, 2 cols, EOF, binary row, EOF.
        assert_eq!(r.len(), 6, "{r:?}");
        let row = &r[4].1;
        assert_eq!(row[0], 0);
        assert_eq!(row[1], 0); // null bitmap
        assert_eq!(&row[2..10], &(10 + i as i64).to_le_bytes());
        assert_eq!(&row[10..], &[3, b'a', b'b', b'c']);
    }
    // NULL via the bitmap, plus long data for the second parameter.
    let mut ld = vec![0x18];
    ld.extend_from_slice(&id.to_le_bytes());
    ld.extend_from_slice(&1u16.to_le_bytes());
    ld.extend_from_slice(b"long ");
    feed_msg(&mut c, 0, &ld);
    assert_eq!(c.process(), Progress::Continue);
    ld.truncate(7);
    ld.extend_from_slice(b"data");
    feed_msg(&mut c, 0, &ld);
    assert_eq!(c.process(), Progress::Continue);
    assert!(c.take_output().is_empty(), "SEND_LONG_DATA has no reply");
    let mut p = vec![0x17];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(0);
    p.extend_from_slice(&1u32.to_le_bytes());
    p.push(0b01); // first param NULL
    p.push(0);
    let r = cmd(&mut c, &p);
    let row = &r[4].1;
    assert_eq!(row[1], 0b0000_0100); // NULL bitmap with offset 2
    assert_eq!(&row[2..], b"\x09long data");
    // A value cut short: 1210 for that execute, and the statement still runs afterwards.
    let mut short = exec(true, 7, "abc");
    short.truncate(short.len() - 2);
    assert_eq!(err_code(&cmd(&mut c, &short)[0].1), 1210);
    assert_eq!(cmd(&mut c, &exec(false, 3, "ok"))[0].1, [2]);
    // Unknown statement id.
    let mut p = vec![0x17];
    p.extend_from_slice(&999u32.to_le_bytes());
    p.extend_from_slice(&[0, 1, 0, 0, 0]);
    assert_eq!(err_code(&cmd(&mut c, &p)[0].1), 1243);
    // Close: no reply, then executing it fails.
    let mut close = vec![0x19];
    close.extend_from_slice(&id.to_le_bytes());
    feed_msg(&mut c, 0, &close);
    assert_eq!(c.process(), Progress::Continue);
    assert!(c.take_output().is_empty());
    assert_eq!(err_code(&cmd(&mut c, &exec(true, 1, "x"))[0].1), 1243);
    // Executing before any types were ever bound.
    let r = cmd(&mut c, b"\x16ECHO ?");
    let id2 = u32::from_le_bytes(r[0].1[1..5].try_into().unwrap());
    let mut p = vec![0x17];
    p.extend_from_slice(&id2.to_le_bytes());
    p.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0]);
    assert_eq!(err_code(&cmd(&mut c, &p)[0].1), 1210);
}

#[test]
fn other_commands() {
    let mut c = logged_in(RAW_CAPS);
    // COM_PING
    assert_eq!(cmd(&mut c, &[0x0e])[0].1[0], 0);
    // COM_INIT_DB ok / unknown db
    assert_eq!(cmd(&mut c, b"\x02sbtest")[0].1[0], 0);
    assert_eq!(err_code(&cmd(&mut c, b"\x02nosuchdb")[0].1), 1049);
    // COM_FIELD_LIST: column defs (with default marker) + EOF.
    let r = cmd(&mut c, b"\x04t1\x00%");
    assert_eq!(r.len(), 3);
    assert_eq!(*r[0].1.last().unwrap(), 0xFB);
    assert_eq!(r[2].1[0], 0xFE);
    assert_eq!(err_code(&cmd(&mut c, b"\x04nope\x00")[0].1), 1146);
    // COM_STATISTICS: a bare string.
    let r = cmd(&mut c, &[0x09]);
    assert!(r[0].1.starts_with(b"Uptime:"));
    // COM_PROCESS_KILL -> backend's error.
    assert_eq!(err_code(&cmd(&mut c, &[0x0c, 9, 0, 0, 0])[0].1), 1094);
    // COM_RESET_CONNECTION
    assert_eq!(cmd(&mut c, &[0x1f])[0].1[0], 0);
    // Unknown command: 1047, connection stays.
    let r = cmd(&mut c, &[0x55, 1, 2]);
    assert_eq!(err_code(&r[0].1), 1047);
    assert_eq!(&r[0].1[3..9], b"#08S01");
    // Empty query -> 1065.
    assert_eq!(err_code(&cmd(&mut c, b"\x03")[0].1), 1065);
    // Wrong sequence id in the command phase -> 1156 and close.
    feed_msg(&mut c, 3, &[0x0e]);
    assert_eq!(c.process(), Progress::Close);
    assert_eq!(err_code(&packets(&c.take_output())[0].1), 1156);
    // COM_QUIT closes without a reply.
    let mut c = logged_in(RAW_CAPS);
    feed_msg(&mut c, 0, &[0x01]);
    assert_eq!(c.process(), Progress::Close);
    assert!(c.take_output().is_empty());
    assert_eq!(c.close_reason(), Some(CloseReason::Quit));
}

#[test]
fn byte_by_byte_feeding_and_pipelining() {
    let mut c = logged_in(RAW_CAPS);
    let mut w = Vec::new();
    write_message(&mut w, 0, b"\x03SELECT 1");
    write_message(&mut w, 0, b"\x03SELECT 2");
    for (i, b) in w.iter().enumerate() {
        c.feed(&[*b]);
        if i + 1 < 13 {
            assert!(!c.has_command());
            assert_eq!(c.process(), Progress::NeedMore);
        }
    }
    assert!(c.has_command());
    assert_eq!(c.process(), Progress::Continue);
    assert!(c.has_command());
    assert_eq!(c.process(), Progress::Continue);
    assert_eq!(c.process(), Progress::NeedMore);
    let r = packets(&c.take_output());
    assert_eq!(r.len(), 10);
}

#[test]
fn max_allowed_packet_over_tcp() {
    let srv = TestServer::start(1 << 20);
    let mut raw = Raw::connect(srv.port);
    assert_eq!(raw.login("nopw", "", RAW_CAPS)[0], 0);
    let mut q = b"\x03LEN ".to_vec();
    q.extend(std::iter::repeat_n(b'x', 2 << 20));
    // The server may close before reading everything; ignore write errors.
    let _ = raw.write_packet(0, &q);
    let (_, p) = raw.read_packet().expect("error packet");
    assert_eq!(err_code(&p), 1153);
    assert!(String::from_utf8_lossy(&p).contains("max_allowed_packet"));
    // The server keeps serving others.
    let mut raw2 = Raw::connect(srv.port);
    assert_eq!(raw2.login("root", "pw", RAW_CAPS)[0], 0);
    raw2.write_packet(0, b"\x03SELECT 3").unwrap();
    assert_eq!(raw2.read_packet().unwrap().1, vec![1]);
}

#[test]
fn garbage_over_tcp_gets_error_and_close() {
    let srv = TestServer::start(1 << 20);
    let mut raw = Raw::connect(srv.port);
    raw.read_packet().unwrap();
    use std::io::Write;
    raw.s
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (_, p) = raw.read_packet().expect("error packet");
    assert_eq!(p[0], 0xFF);
    assert!(raw.read_packet().is_none(), "connection must be closed");
}

/// Found by fuzzing: the prepare-OK's column count is 16 bits wide; a statement of 65536
/// columns was announced with 0 and then all 65536 definitions were sent, and the client lost
/// the thread. Past 65535 the prepare fails with 1117 and the backend's statement is closed.
#[test]
fn prepare_of_more_columns_than_the_prepare_ok_can_count_fails() {
    let mut c = logged_in(RAW_CAPS);
    let r = cmd(&mut c, b"\x16WIDE 65536");
    assert_eq!(r.len(), 1);
    assert_eq!(err_code(&r[0].1), 1117);
    assert!(c.backend().prepared.is_empty());
    let r = cmd(&mut c, b"\x16WIDE 65535");
    assert_eq!(r[0].1[0], 0);
    assert_eq!(u16::from_le_bytes([r[0].1[5], r[0].1[6]]), 65535);
    // PREPARE_OK, the column definitions, and the EOF after them.
    assert_eq!(r.len(), 1 + 65535 + 1);
    assert_eq!(r[r.len() - 1].1[0], 0xFE);
    assert_eq!(c.backend().prepared.len(), 1);
}

/// Connections that work in a thread's lent buffers (`Connection::exchange_buffers`, what the
/// server does around every command): half a message and an unsent reply stay with their
/// connection through the exchanges, another connection's commands run in the spare buffers
/// meanwhile, and the spare holds nothing after every exchange.
#[test]
fn connections_work_in_lent_buffers() {
    let mut spare = Buffers::default();
    let mut a = logged_in(RAW_CAPS);
    let mut b = logged_in(RAW_CAPS);
    let ok = |out: Vec<u8>| {
        let p = packets(&out);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].0, 1);
        assert_eq!(p[0].1[0], 0, "OK packet: {p:?}");
    };
    let mut ping = Vec::new();
    write_message(&mut ping, 0, &[0x0e]);
    // a: half a COM_PING arrives, and stays with a.
    a.exchange_buffers(&mut spare);
    a.feed(&ping[..3]);
    assert_eq!(a.process(), Progress::NeedMore);
    a.exchange_buffers(&mut spare);
    assert!(spare.is_empty());
    assert_eq!(a.buffered_input(), 3);
    // b: whole commands in the spare buffers; the last reply is left unsent.
    for _ in 0..3 {
        b.exchange_buffers(&mut spare);
        b.feed(&ping);
        assert_eq!(b.process(), Progress::Continue);
        ok(b.take_output());
        b.exchange_buffers(&mut spare);
        assert!(spare.is_empty());
    }
    b.exchange_buffers(&mut spare);
    b.feed(&ping);
    assert_eq!(b.process(), Progress::Continue);
    b.exchange_buffers(&mut spare);
    assert!(spare.is_empty());
    assert!(
        !b.pending_output().is_empty(),
        "the unsent reply stays with b"
    );
    // a: the rest of its message.
    a.exchange_buffers(&mut spare);
    a.feed(&ping[3..]);
    assert_eq!(a.process(), Progress::Continue);
    ok(a.take_output());
    a.exchange_buffers(&mut spare);
    assert!(spare.is_empty());
    assert_eq!(a.buffered_input(), 0);
    // b's reply is intact.
    b.exchange_buffers(&mut spare);
    ok(b.take_output());
    b.exchange_buffers(&mut spare);
    assert!(spare.is_empty());
}
