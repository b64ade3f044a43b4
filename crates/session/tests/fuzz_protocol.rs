//! Fuzzing the protocol state machine with the real session behind it, in-process.
//!
//! A seeded client drives `shoal_proto::Connection<Session>` (a real table engine behind the
//! session) through connections: handshake responses with random capabilities, users, auth
//! data, databases, plugins and connection attributes (auth switches included); then commands:
//! COM_QUERY with the SQL generator's text, COM_STMT_PREPARE / EXECUTE with random parameter
//! counts, types, NULL bitmaps and new-params-bound flags, SEND_LONG_DATA, STMT_RESET / CLOSE,
//! PING, INIT_DB, FIELD_LIST, CHANGE_USER, RESET_CONNECTION, SET_OPTION, STATISTICS,
//! PROCESS_KILL, QUIT, unknown commands. A fifth of the messages are mutated (bit flips,
//! truncation, wrong lengths, wrong sequence ids, oversize headers, junk appended) and some are
//! random bytes; bytes arrive in random splits, sometimes several messages at once.
//!
//! One input is one message. Invariants: no panic; after every `process()` the reply is
//! well-formed for what the message was (parsed packet by packet: sequence ids, OK / ERR / EOF
//! layouts, MySQL error numbers and SQLSTATEs, column definitions, text and binary rows decoded
//! by their column types, prepare-OK layout, multi-result chaining) or the connection closes
//! with at most an ERR; `Continue` always consumes input; every message is answered within
//! `SHOAL_FUZZ_SLOW_MS` (watchdog); RSS bounded. A connection stuck on an incomplete message is
//! shut down as the network layer would on EOF.

mod fuzz;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use shoal_proto::{Admission, Connection, ErrorInfo, Progress, ProtoConfig};
use shoal_session::Session;

use fuzz::sqlgen::{self, SqlGen};
use fuzz::{Config, Ctl, Findings, Rig, Rss, Watchdog};

/// Messages between schema rebuilds (done between connections).
const RESET_EVERY: u64 = 2000;

// Capability bits (mysql_common's `CapabilityFlags`, as plain numbers for random mixing).
const LONG_PASSWORD: u32 = 0x1;
const FOUND_ROWS: u32 = 0x2;
const LONG_FLAG: u32 = 0x4;
const CONNECT_WITH_DB: u32 = 0x8;
const PROTOCOL_41: u32 = 0x200;
const INTERACTIVE: u32 = 0x400;
const SSL: u32 = 0x800;
const TRANSACTIONS: u32 = 0x2000;
const SECURE_CONNECTION: u32 = 0x8000;
const MULTI_STATEMENTS: u32 = 0x1_0000;
const MULTI_RESULTS: u32 = 0x2_0000;
const PS_MULTI_RESULTS: u32 = 0x4_0000;
const PLUGIN_AUTH: u32 = 0x8_0000;
const CONNECT_ATTRS: u32 = 0x10_0000;
const PLUGIN_AUTH_LENENC: u32 = 0x20_0000;
const DEPRECATE_EOF: u32 = 0x100_0000;

const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;

#[test]
fn fuzz_protocol() {
    fuzz::install_panic_hook();
    let cfg = Config::from_env(20_000);
    let c = cfg.clone();
    let (done, elapsed, findings, rss) = fuzz::on_worker_stack(move || run(&c));
    fuzz::summary("protocol", &cfg, done, elapsed, &findings, &rss);
    fuzz::assert_clean("protocol", &cfg, &findings, &rss);
}

/// Where the client thinks the server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Greeting,
    AuthSwitch,
    Command,
}

/// A prepared statement as the client knows it.
#[derive(Debug, Clone, Default)]
struct Stmt {
    params: u16,
    /// Types the client last bound (type byte, unsigned).
    types: Option<Vec<(u8, bool)>>,
}

/// One simulated client connection.
struct Client {
    conn: Connection<Session>,
    ctl: Arc<Ctl>,
    id: u32,
    scramble: [u8; 20],
    /// What the client asked for in its handshake response.
    caps: u32,
    /// The user and password the client logs in with (for an auth switch).
    user: String,
    password: Option<String>,
    phase: Phase,
    /// Sequence id the server expects next (the auth-switch response continues the sequence).
    next_seq: u8,
    stmts: HashMap<u32, Stmt>,
    /// Bytes fed but not consumed by the connection (a mirror of its input buffer).
    pending: Vec<u8>,
    /// Messages fed while the connection kept asking for more.
    starved: u32,
    /// Sends mutated and random messages after login too (the others live long enough to
    /// build up prepared statements, transactions and session state).
    nasty: bool,
}

impl Client {
    fn deprecate_eof(&self) -> bool {
        self.caps & DEPRECATE_EOF != 0
    }
}

/// Splits replies into (sequence id, payload) messages (continuation packets joined).
fn packets(out: &[u8]) -> Result<Vec<(u8, Vec<u8>)>, String> {
    let mut v = Vec::new();
    let mut pos = 0;
    while pos < out.len() {
        let mut payload = Vec::new();
        let mut first_seq = None;
        loop {
            if out.len() < pos + 4 {
                return Err(format!("truncated packet header at {pos}"));
            }
            let len = u32::from_le_bytes([out[pos], out[pos + 1], out[pos + 2], 0]) as usize;
            let seq = out[pos + 3];
            first_seq.get_or_insert(seq);
            if out.len() < pos + 4 + len {
                return Err(format!("packet at {pos} claims {len} bytes, has fewer"));
            }
            payload.extend_from_slice(&out[pos + 4..pos + 4 + len]);
            pos += 4 + len;
            if len < 0xFF_FFFF {
                break;
            }
        }
        v.push((first_seq.unwrap_or(0), payload));
    }
    Ok(v)
}

/// A bounds-checked reader over one reply payload.
struct Rd<'a> {
    b: &'a [u8],
    p: usize,
}

impl<'a> Rd<'a> {
    fn new(b: &'a [u8]) -> Self {
        Rd { b, p: 0 }
    }
    fn left(&self) -> usize {
        self.b.len() - self.p
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.left() < n {
            return Err(format!(
                "needs {n} bytes at {}, has {}",
                self.p,
                self.left()
            ));
        }
        let s = &self.b[self.p..self.p + n];
        self.p += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn lenenc(&mut self) -> Result<u64, String> {
        Ok(match self.u8()? {
            x @ 0..=0xFA => x as u64,
            0xFC => self.u16()? as u64,
            0xFD => {
                let b = self.take(3)?;
                u32::from_le_bytes([b[0], b[1], b[2], 0]) as u64
            }
            0xFE => {
                let b = self.take(8)?;
                u64::from_le_bytes(b.try_into().map_err(|_| "8 bytes")?)
            }
            x => return Err(format!("bad length-encoded integer 0x{x:02x}")),
        })
    }
    fn lenenc_bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.lenenc()? as usize;
        self.take(n)
    }
    fn done(&self, what: &str) -> Result<(), String> {
        if self.left() == 0 {
            Ok(())
        } else {
            Err(format!("{what}: {} trailing bytes", self.left()))
        }
    }
}

fn check_err(p: &[u8]) -> Result<(), String> {
    let mut r = Rd::new(p);
    if r.u8()? != 0xFF {
        return Err("not an ERR".into());
    }
    let code = r.u16()?;
    if r.u8()? != b'#' {
        return Err("ERR without '#' SQLSTATE marker".into());
    }
    let state = r.take(5)?;
    let message = String::from_utf8(r.b[r.p..].to_vec()).map_err(|_| "ERR message not UTF-8")?;
    let mut st = [0u8; 5];
    st.copy_from_slice(state);
    fuzz::check_error(&ErrorInfo {
        code,
        state: st,
        message,
    })
}

/// An OK packet (header 0x00, or 0xFE as the end of a result set with DEPRECATE_EOF); returns
/// the status flags.
fn check_ok(p: &[u8], header: u8) -> Result<u16, String> {
    let mut r = Rd::new(p);
    if r.u8()? != header {
        return Err(format!("OK without header 0x{header:02x}"));
    }
    r.lenenc()?;
    r.lenenc()?;
    let status = r.u16()?;
    r.u16()?;
    if r.left() > 0 {
        r.lenenc_bytes()?;
    }
    r.done("OK")?;
    Ok(status)
}

/// The end of column definitions or rows: EOF, or with DEPRECATE_EOF an OK with header 0xFE.
fn check_eof(p: &[u8], deprecate: bool) -> Result<u16, String> {
    if deprecate {
        return check_ok(p, 0xFE);
    }
    let mut r = Rd::new(p);
    if r.u8()? != 0xFE {
        return Err("not an EOF".into());
    }
    r.u16()?;
    let status = r.u16()?;
    r.done("EOF")?;
    Ok(status)
}

/// A column definition; returns (type, decimals).
fn check_coldef(p: &[u8], with_default: bool) -> Result<(u8, u8), String> {
    let mut r = Rd::new(p);
    if r.lenenc_bytes()? != b"def" {
        return Err("column definition without catalog 'def'".into());
    }
    for _ in 0..5 {
        r.lenenc_bytes()?;
    }
    if r.lenenc()? != 0x0c {
        return Err("column definition fixed part is not 12 bytes".into());
    }
    r.u16()?;
    r.u32()?;
    let ty = r.u8()?;
    r.u16()?;
    let dec = r.u8()?;
    r.take(2)?;
    if with_default {
        let d = r.u8()?;
        if d != 0xFB {
            return Err("field list default is not NULL".into());
        }
    }
    r.done("column definition")?;
    Ok((ty, dec))
}

fn check_text_row(p: &[u8], n: usize) -> Result<(), String> {
    let mut r = Rd::new(p);
    for _ in 0..n {
        if r.b.get(r.p) == Some(&0xFB) {
            r.p += 1;
        } else {
            r.lenenc_bytes()?;
        }
    }
    r.done("text row")
}

fn check_binary_row(p: &[u8], types: &[(u8, u8)]) -> Result<(), String> {
    let mut r = Rd::new(p);
    if r.u8()? != 0 {
        return Err("binary row without 0x00 header".into());
    }
    let bitmap = r.take((types.len() + 9) / 8)?.to_vec();
    for (i, (ty, _)) in types.iter().enumerate() {
        if bitmap[(i + 2) / 8] & (1 << ((i + 2) % 8)) != 0 {
            continue;
        }
        match ty {
            1 => {
                r.take(1)?;
            }
            2 | 13 => {
                r.take(2)?;
            }
            3 | 9 | 4 => {
                r.take(4)?;
            }
            8 | 5 => {
                r.take(8)?;
            }
            7 | 10 | 12 => {
                let n = r.u8()?;
                if ![0, 4, 7, 11].contains(&n) {
                    return Err(format!("date value of length {n}"));
                }
                r.take(n as usize)?;
            }
            11 => {
                let n = r.u8()?;
                if ![0, 8, 12].contains(&n) {
                    return Err(format!("time value of length {n}"));
                }
                r.take(n as usize)?;
            }
            6 => return Err("non-NULL value in a NULL-typed column".into()),
            _ => {
                r.lenenc_bytes()?;
            }
        }
    }
    r.done("binary row")
}

/// One or more results (COM_QUERY: chained by SERVER_MORE_RESULTS_EXISTS); `binary` rows for
/// COM_STMT_EXECUTE.
fn check_results(
    ps: &mut std::slice::Iter<'_, (u8, Vec<u8>)>,
    binary: bool,
    deprecate: bool,
) -> Result<(), String> {
    loop {
        let Some((_, first)) = ps.next() else {
            return Err("no reply".into());
        };
        let status = match first.first() {
            Some(0xFF) => return check_err(first),
            Some(0x00) => check_ok(first, 0x00)?,
            Some(0xFB) => return Err("LOCAL INFILE request".into()),
            Some(_) => {
                let mut r = Rd::new(first);
                let n = r.lenenc()? as usize;
                r.done("column count")?;
                if n == 0 {
                    return Err("result set of 0 columns".into());
                }
                let mut types = Vec::with_capacity(n);
                for _ in 0..n {
                    let (_, p) = ps.next().ok_or("missing column definition")?;
                    types.push(check_coldef(p, false)?);
                }
                if !deprecate {
                    let (_, p) = ps.next().ok_or("missing EOF after columns")?;
                    check_eof(p, false)?;
                }
                loop {
                    let (_, p) = ps.next().ok_or("result set without its end")?;
                    if p.first() == Some(&0xFE) && p.len() < 0xFF_FFFF {
                        break check_eof(p, deprecate)?;
                    }
                    if p.first() == Some(&0xFF) {
                        return Err("ERR in the middle of a result set".into());
                    }
                    if binary {
                        check_binary_row(p, &types)?;
                    } else {
                        check_text_row(p, n)?;
                    }
                }
            }
            None => return Err("empty reply packet".into()),
        };
        if status & SERVER_MORE_RESULTS_EXISTS == 0 {
            return Ok(());
        }
    }
}

/// Checks the reply to one message the server processed.
fn check_reply(
    c: &mut Client,
    phase: Phase,
    msg: &[u8],
    progress: Progress,
    out: &[u8],
) -> Result<(), String> {
    let ps = packets(out)?;
    // Sequence ids run on within a reply.
    for w in ps.windows(2) {
        // A continuation-joined message advances by its packet count; replies here are small.
        if w[1].0 != w[0].0.wrapping_add(1) && w[0].1.len() < 0xFF_FFFF {
            return Err(format!("sequence {} followed by {}", w[0].0, w[1].0));
        }
    }
    if progress == Progress::Close {
        // Closing: nothing, or one ERR.
        return match ps.as_slice() {
            [] => Ok(()),
            [(_, p)] => check_err(p),
            _ => Err(format!("{} packets before closing", ps.len())),
        };
    }
    // The message as the server framed it: first header's sequence id, payload.
    let msg_seq = msg.get(3).copied().unwrap_or(0);
    let mut payload = Vec::new();
    let mut pos = 0;
    let mut last_seq = msg_seq;
    while pos + 4 <= msg.len() {
        let len = u32::from_le_bytes([msg[pos], msg[pos + 1], msg[pos + 2], 0]) as usize;
        last_seq = msg[pos + 3];
        payload.extend_from_slice(&msg[pos + 4..(pos + 4 + len).min(msg.len())]);
        pos += 4 + len;
    }
    if let Some((s, _)) = ps.first() {
        if *s != last_seq.wrapping_add(1) {
            return Err(format!(
                "reply starts at sequence {s}, message ended at {last_seq}"
            ));
        }
    }
    let mut it = ps.iter();
    if phase == Phase::Greeting && payload.len() >= 4 {
        // The capabilities of the message the server read (a mutation may have changed them).
        c.caps = u32::from_le_bytes([payload[0], payload[1], payload[2], payload[3]]);
    }
    match phase {
        Phase::Greeting | Phase::AuthSwitch => {
            let (_, p) = it.next().ok_or("no reply to the login")?;
            match p.first() {
                Some(0x00) => {
                    check_ok(p, 0x00)?;
                    c.phase = Phase::Command;
                }
                Some(0xFE) if phase == Phase::Greeting => {
                    let mut r = Rd::new(p);
                    r.u8()?;
                    let nul = p
                        .iter()
                        .position(|&b| b == 0)
                        .ok_or("plugin name not NUL-terminated")?;
                    if &p[1..nul] != b"mysql_native_password" {
                        return Err("auth switch to another plugin".into());
                    }
                    if p.len() != nul + 1 + 21
                        || p[p.len() - 1] != 0
                        || p[nul + 1..nul + 21] != c.scramble
                    {
                        return Err("auth switch without the greeting's scramble".into());
                    }
                    c.phase = Phase::AuthSwitch;
                    c.next_seq = ps[0].0.wrapping_add(1);
                }
                _ => return Err("login reply is neither OK nor auth switch".into()),
            }
            if it.next().is_some() {
                return Err("extra packets after the login reply".into());
            }
            return Ok(());
        }
        Phase::Command => {}
    }
    let deprecate = c.deprecate_eof();
    let Some(&cmd) = payload.first() else {
        let (_, p) = it.next().ok_or("no reply to an empty command")?;
        return check_err(p);
    };
    match cmd {
        0x18 | 0x19 => {
            if !ps.is_empty() {
                return Err("reply to a command that has none".into());
            }
            if cmd == 0x19 {
                if let Some(id) = payload.get(1..5) {
                    c.stmts
                        .remove(&u32::from_le_bytes([id[0], id[1], id[2], id[3]]));
                }
            }
            return Ok(());
        }
        0x09 => {
            let (_, p) = it.next().ok_or("no statistics")?;
            if !p.starts_with(b"Uptime: ") {
                return Err("statistics string".into());
            }
        }
        0x03 => check_results(&mut it, false, deprecate)?,
        0x17 => check_results(&mut it, true, deprecate)?,
        0x04 => {
            let (_, p) = it.next().ok_or("no field list reply")?;
            if p.first() == Some(&0xFF) {
                check_err(p)?;
            } else {
                let mut p = p;
                while p.first() != Some(&0xFE) {
                    check_coldef(p, true)?;
                    p = &it.next().ok_or("field list without EOF")?.1;
                }
                check_eof(p, deprecate)?;
            }
        }
        0x16 => {
            let (_, p) = it.next().ok_or("no prepare reply")?;
            if p.first() == Some(&0xFF) {
                check_err(p)?;
            } else {
                let mut r = Rd::new(p);
                if r.u8()? != 0 {
                    return Err("prepare OK header".into());
                }
                let id = r.u32()?;
                let cols = r.u16()?;
                let params = r.u16()?;
                r.u8()?;
                r.u16()?;
                r.done("prepare OK")?;
                for (n, what) in [(params, "parameter"), (cols, "column")] {
                    for _ in 0..n {
                        let (_, p) = it.next().ok_or(format!("missing {what} definition"))?;
                        check_coldef(p, false)?;
                    }
                    if n > 0 && !deprecate {
                        let (_, p) = it.next().ok_or(format!("missing EOF after {what}s"))?;
                        check_eof(p, false)?;
                    }
                }
                c.stmts.insert(
                    id,
                    Stmt {
                        params,
                        types: None,
                    },
                );
            }
        }
        0x1b => {
            let (_, p) = it.next().ok_or("no SET_OPTION reply")?;
            if p.first() == Some(&0xFF) {
                check_err(p)?;
            } else {
                check_eof(p, deprecate)?;
            }
        }
        _ => {
            let (_, p) = it.next().ok_or("no reply")?;
            match p.first() {
                Some(0xFF) => check_err(p)?,
                Some(0x00) => {
                    check_ok(p, 0x00)?;
                }
                _ => return Err("reply is neither OK nor ERR".into()),
            }
            if cmd == 0x1f {
                c.stmts.clear();
            }
        }
    }
    if it.next().is_some() {
        return Err("extra packets after the reply".into());
    }
    Ok(())
}

/// Parses the greeting; returns the scramble.
fn check_greeting(out: &[u8]) -> Result<[u8; 20], String> {
    let ps = packets(out)?;
    let [(0, p)] = ps.as_slice() else {
        return Err("greeting is not one packet with sequence 0".into());
    };
    let mut r = Rd::new(p);
    if r.u8()? != 10 {
        return Err("protocol version".into());
    }
    let nul = p
        .iter()
        .position(|&b| b == 0)
        .ok_or("version not NUL-terminated")?;
    r.p = nul + 1;
    r.u32()?;
    let s1 = r.take(8)?.to_vec();
    r.u8()?;
    r.u16()?;
    r.u8()?;
    r.u16()?;
    r.u16()?;
    r.u8()?;
    r.take(10)?;
    let s2 = r.take(12)?.to_vec();
    r.u8()?;
    let mut s = [0u8; 20];
    s[..8].copy_from_slice(&s1);
    s[8..].copy_from_slice(&s2);
    Ok(s)
}

// ----- message generation --------------------------------------------------------------------

fn frame(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    shoal_proto::packet::write_message(&mut out, seq, payload);
    out
}

fn put_lenenc(out: &mut Vec<u8>, b: &[u8]) {
    shoal_proto::packet::put_lenenc_bytes(out, b);
}

fn random_string(rng: &mut StdRng, max: usize) -> String {
    let n = rng.gen_range(0..=max);
    (0..n)
        .map(|_| match rng.gen_range(0..6) {
            0 => char::from_u32(rng.gen_range(0x80..0x3000)).unwrap_or('x'),
            1 => rng.gen_range(0u8..0x20) as char,
            _ => rng.gen_range(b'a'..=b'z') as char,
        })
        .collect()
}

/// A HandshakeResponse41 (mostly valid).
fn handshake(c: &mut Client, rng: &mut StdRng) -> Vec<u8> {
    let mut caps = PROTOCOL_41
        | LONG_PASSWORD
        | LONG_FLAG
        | TRANSACTIONS
        | SECURE_CONNECTION
        | MULTI_STATEMENTS
        | MULTI_RESULTS
        | PS_MULTI_RESULTS
        | PLUGIN_AUTH
        | CONNECT_ATTRS
        | PLUGIN_AUTH_LENENC;
    for (bit, p) in [
        (CONNECT_WITH_DB, 0.85),
        (DEPRECATE_EOF, 0.3),
        (INTERACTIVE, 0.2),
        (FOUND_ROWS, 0.3),
        (SSL, 0.02),
    ] {
        if rng.gen_bool(p) {
            caps |= bit;
        }
    }
    for (bit, p) in [
        (PLUGIN_AUTH, 0.1),
        (SECURE_CONNECTION, 0.1),
        (PLUGIN_AUTH_LENENC, 0.3),
        (CONNECT_ATTRS, 0.3),
        (MULTI_STATEMENTS, 0.2),
        (PROTOCOL_41, 0.02),
    ] {
        if rng.gen_bool(p) {
            caps &= !bit;
        }
    }
    if rng.gen_bool(0.05) {
        caps ^= rng.gen::<u32>();
    }
    c.caps = caps;
    let mut p = Vec::new();
    p.extend_from_slice(&caps.to_le_bytes());
    let max_packet: u32 = *[16 << 20, 0, u32::MAX, 1024].choose(rng).unwrap_or(&0);
    p.extend_from_slice(&max_packet.to_le_bytes());
    p.push(*[45u8, 33, 8, 63, 255, 224, 0].choose(rng).unwrap_or(&45));
    if rng.gen_bool(0.05) {
        p.extend((0..23).map(|_| rng.gen::<u8>()));
    } else {
        p.extend_from_slice(&[0; 23]);
    }
    let (user, password) = match rng.gen_range(0..10) {
        0..=5 => ("root".to_string(), Some("".to_string())),
        6..=7 => ("fuzz".to_string(), Some("pw".to_string())),
        8 => ("fuzz".to_string(), Some("wrong".to_string())),
        _ => (random_string(rng, 20), None),
    };
    p.extend_from_slice(user.as_bytes());
    p.push(0);
    let auth: Vec<u8> = match &password {
        Some(pw) if rng.gen_bool(0.95) => {
            if pw.is_empty() {
                Vec::new()
            } else {
                shoal_session::users::scramble_password(&c.scramble, pw)
            }
        }
        _ => sqlgen::random_bytes(rng, 40),
    };
    c.user = user;
    c.password = password;
    if caps & PLUGIN_AUTH_LENENC != 0 {
        put_lenenc(&mut p, &auth);
    } else if caps & SECURE_CONNECTION != 0 {
        p.push(auth.len() as u8);
        p.extend_from_slice(&auth);
    } else {
        p.extend_from_slice(&auth);
        p.push(0);
    }
    if caps & CONNECT_WITH_DB != 0 {
        let db = match rng.gen_range(0..10) {
            0..=6 => "fz".to_string(),
            7 => String::new(),
            8 => "nope".into(),
            _ => random_string(rng, 10),
        };
        p.extend_from_slice(db.as_bytes());
        p.push(0);
    }
    if caps & PLUGIN_AUTH != 0 {
        let plugin = match rng.gen_range(0..10) {
            0..=5 => "mysql_native_password".to_string(),
            6..=7 => "caching_sha2_password".into(),
            8 => String::new(),
            _ => random_string(rng, 30),
        };
        p.extend_from_slice(plugin.as_bytes());
        p.push(0);
    }
    if caps & CONNECT_ATTRS != 0 {
        let mut attrs = Vec::new();
        for _ in 0..rng.gen_range(0..5) {
            let k = random_string(rng, 12);
            let v = random_string(rng, 30);
            put_lenenc(&mut attrs, k.as_bytes());
            put_lenenc(&mut attrs, v.as_bytes());
        }
        let mut total = attrs.len() as u64;
        if rng.gen_bool(0.1) {
            total = rng.gen_range(0..300);
        }
        shoal_proto::packet::put_lenenc_int(&mut p, total);
        p.extend_from_slice(&attrs);
    }
    p
}

/// The auth-switch response: the native-password token for the same scramble (or junk).
fn auth_switch_response(c: &Client, rng: &mut StdRng) -> Vec<u8> {
    match &c.password {
        Some(pw) if rng.gen_bool(0.9) && !pw.is_empty() => {
            shoal_session::users::scramble_password(&c.scramble, pw)
        }
        Some(_) if rng.gen_bool(0.9) => Vec::new(),
        _ => sqlgen::random_bytes(rng, 30),
    }
}

/// Parameter type bytes a client may bind (plus a few it should not).
const PARAM_TYPES: &[u8] = &[
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10,
    0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff, 0x11, 0x00,
];

/// A binary-protocol parameter value of type `t`.
fn param_value(rng: &mut StdRng, t: u8, out: &mut Vec<u8>) {
    if rng.gen_bool(0.03) {
        // Wrong length for the type.
        out.extend(sqlgen::random_bytes(rng, 6));
        return;
    }
    match t {
        0x01 => out.push(rng.gen()),
        0x02 | 0x0d => out.extend_from_slice(&rng.gen::<u16>().to_le_bytes()),
        0x03 | 0x09 => {
            let v: i32 = *[0, 1, -1, i32::MIN, i32::MAX].choose(rng).unwrap_or(&0);
            let v = if rng.gen_bool(0.5) { v } else { rng.gen() };
            out.extend_from_slice(&v.to_le_bytes())
        }
        0x08 => {
            let v: i64 = *[0, 1, -1, i64::MIN, i64::MAX, 42].choose(rng).unwrap_or(&0);
            out.extend_from_slice(&v.to_le_bytes())
        }
        0x04 => {
            let v: f32 = *[0.0, 1.5, f32::NAN, f32::INFINITY, -3.25e38]
                .choose(rng)
                .unwrap_or(&0.0);
            out.extend_from_slice(&v.to_le_bytes())
        }
        0x05 => {
            let v: f64 = *[0.0, -0.5, f64::NAN, f64::NEG_INFINITY, 1e308, 5e-324, 2.0]
                .choose(rng)
                .unwrap_or(&0.0);
            out.extend_from_slice(&v.to_le_bytes())
        }
        0x07 | 0x0a | 0x0c | 0x0e => {
            let len = *[0u8, 4, 7, 11, 11, 7, 3, 12, 255].choose(rng).unwrap_or(&0);
            out.push(len);
            let mut body = Vec::new();
            let y: u16 = *[2024, 0, 9999, 65535, 1].choose(rng).unwrap_or(&0);
            body.extend_from_slice(&y.to_le_bytes());
            body.push(rng.gen_range(0..14));
            body.push(rng.gen_range(0..33));
            body.push(rng.gen_range(0..26));
            body.push(rng.gen_range(0..61));
            body.push(rng.gen_range(0..61));
            body.extend_from_slice(&rng.gen_range(0u32..2_000_000).to_le_bytes());
            body.resize(len as usize, 0xAA);
            out.extend_from_slice(&body);
        }
        0x0b => {
            let len = *[0u8, 8, 12, 12, 5, 13].choose(rng).unwrap_or(&0);
            out.push(len);
            let mut body = vec![rng.gen_range(0..2)];
            body.extend_from_slice(&rng.gen_range(0u32..40).to_le_bytes());
            body.push(rng.gen_range(0..26));
            body.push(rng.gen_range(0..61));
            body.push(rng.gen_range(0..61));
            body.extend_from_slice(&rng.gen_range(0u32..2_000_000).to_le_bytes());
            body.resize(len as usize, 0x55);
            out.extend_from_slice(&body);
        }
        0x06 => {}
        _ => {
            let s: Vec<u8> = match rng.gen_range(0..8) {
                0 => b"1.5".to_vec(),
                1 => b"abc".to_vec(),
                2 => b"99999999999999999999999999999999999999999".to_vec(),
                3 => b"2024-01-01 10:00:00".to_vec(),
                4 => "h\u{e9}llo".as_bytes().to_vec(),
                5 => Vec::new(),
                _ => sqlgen::random_bytes(rng, 40),
            };
            if rng.gen_bool(0.02) {
                // A length-encoded length larger than what follows.
                out.push(0xFC);
                out.extend_from_slice(&60000u16.to_le_bytes());
            }
            put_lenenc(out, &s);
        }
    }
}

fn pick_stmt(c: &Client, rng: &mut StdRng) -> (u32, Stmt) {
    if !c.stmts.is_empty() && rng.gen_bool(0.85) {
        let mut ids: Vec<&u32> = c.stmts.keys().collect();
        ids.sort();
        let id = **ids.choose(rng).expect("non-empty");
        (id, c.stmts[&id].clone())
    } else {
        (
            *[0u32, 1, 2, u32::MAX, 7].choose(rng).unwrap_or(&0),
            Stmt {
                params: rng.gen_range(0..4),
                types: None,
            },
        )
    }
}

fn stmt_execute(c: &mut Client, rng: &mut StdRng) -> Vec<u8> {
    let (id, st) = pick_stmt(c, rng);
    let mut n = st.params as usize;
    if rng.gen_bool(0.05) {
        n = rng.gen_range(0..5);
    }
    let mut p = vec![0x17];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(if rng.gen_bool(0.9) { 0 } else { rng.gen() });
    p.extend_from_slice(&(if rng.gen_bool(0.95) { 1u32 } else { rng.gen() }).to_le_bytes());
    if n > 0 {
        let nulls: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.1)).collect();
        let mut bitmap = vec![0u8; n.div_ceil(8)];
        for (i, null) in nulls.iter().enumerate() {
            if *null {
                bitmap[i / 8] |= 1 << (i % 8);
            }
        }
        p.extend_from_slice(&bitmap);
        let bound = match rng.gen_range(0..20) {
            0..=13 => 1,
            14..=18 => 0,
            _ => rng.gen(),
        };
        p.push(bound);
        let types: Vec<(u8, bool)> = if bound == 1 || st.types.is_none() {
            (0..n)
                .map(|_| {
                    let t = if rng.gen_bool(0.9) {
                        *[
                            0x08u8, 0x03, 0xfd, 0xfe, 0x05, 0x0c, 0x0a, 0x06, 0xf6, 0x01, 0x0b,
                        ]
                        .choose(rng)
                        .unwrap_or(&0x08)
                    } else {
                        *PARAM_TYPES.choose(rng).unwrap_or(&0)
                    };
                    (t, rng.gen_bool(0.2))
                })
                .collect()
        } else {
            st.types.clone().unwrap_or_default()
        };
        if bound == 1 {
            for (t, unsigned) in &types {
                p.push(*t);
                p.push(if *unsigned { 0x80 } else { 0 });
            }
            if let Some(s) = c.stmts.get_mut(&id) {
                s.types = Some(types.clone());
            }
        }
        for (i, (t, _)) in types.iter().enumerate() {
            if nulls.get(i).copied().unwrap_or(false) {
                continue;
            }
            param_value(rng, *t, &mut p);
        }
    }
    p
}

/// One command payload.
fn command(c: &mut Client, rng: &mut StdRng, gen: &mut SqlGen, pgen: &mut SqlGen) -> Vec<u8> {
    let roll = rng.gen_range(0..100);
    match roll {
        0..=34 => {
            let mut p = vec![0x03];
            if rng.gen_bool(0.03) {
                p.extend(sqlgen::random_bytes(rng, 60));
            } else {
                p.extend_from_slice(gen.input(rng).as_bytes());
            }
            p
        }
        35..=46 if rng.gen_bool(0.003) => {
            // Placeholder and column counts at and past the protocol's 16-bit fields.
            let n = *[65_535usize, 65_536, 70_000].choose(rng).unwrap_or(&65_536);
            let list = vec!["?"; n].join(",");
            let sql = match rng.gen_range(0..3) {
                0 => format!("SELECT 1 FROM t1 WHERE a IN ({list})"),
                1 => format!("SELECT {list}"),
                _ => format!("SELECT {}", vec!["1"; n].join(",")),
            };
            let mut p = vec![0x16];
            p.extend_from_slice(sql.as_bytes());
            p
        }
        35..=46 => {
            let mut p = vec![0x16];
            let sql = if rng.gen_bool(0.8) {
                pgen.statement(rng)
            } else {
                pgen.input(rng)
            };
            p.extend_from_slice(sql.as_bytes());
            p
        }
        // Mostly on prepared statements: prepare one first if there is none.
        47..=64 if c.stmts.is_empty() && rng.gen_bool(0.7) => {
            let mut p = vec![0x16];
            p.extend_from_slice(pgen.statement(rng).as_bytes());
            p
        }
        47..=64 => stmt_execute(c, rng),
        65..=68 => {
            let (id, st) = pick_stmt(c, rng);
            let mut p = vec![0x18];
            p.extend_from_slice(&id.to_le_bytes());
            let param = if rng.gen_bool(0.9) {
                rng.gen_range(0..st.params.max(1))
            } else {
                rng.gen()
            };
            p.extend_from_slice(&param.to_le_bytes());
            if rng.gen_bool(0.004) {
                // Past max_allowed_packet (4 MiB) in two or three chunks.
                p.extend(std::iter::repeat_n(b'L', 3 << 20));
            } else {
                p.extend(sqlgen::random_bytes(rng, 300));
            }
            p
        }
        69..=74 => {
            let (id, _) = pick_stmt(c, rng);
            let mut p = vec![if roll < 72 { 0x1a } else { 0x19 }];
            p.extend_from_slice(&id.to_le_bytes());
            p
        }
        75..=77 => vec![0x0e],
        78..=80 => {
            let mut p = vec![0x02];
            let db = match rng.gen_range(0..6) {
                0..=2 => "fz".to_string(),
                3 => "nope".into(),
                4 => String::new(),
                _ => random_string(rng, 70),
            };
            p.extend_from_slice(db.as_bytes());
            p
        }
        81..=82 => {
            let mut p = vec![0x04];
            p.extend_from_slice(
                ["t1", "t2", "nope", "", "t3"]
                    .choose(rng)
                    .unwrap_or(&"t1")
                    .as_bytes(),
            );
            if rng.gen_bool(0.8) {
                p.push(0);
            }
            p.extend_from_slice(["", "%", "a%"].choose(rng).unwrap_or(&"").as_bytes());
            p
        }
        83..=84 => {
            // COM_CHANGE_USER: user, auth, db, charset, plugin.
            let mut p = vec![0x11];
            p.extend_from_slice(b"root\0");
            p.push(0);
            p.extend_from_slice(b"fz\0");
            p.extend_from_slice(&45u16.to_le_bytes());
            p.extend_from_slice(b"mysql_native_password\0");
            p
        }
        85..=86 => vec![0x1f],
        87..=88 => {
            let mut p = vec![0x1b];
            let v: u16 = *[0u16, 1, 2, 0xFFFF].choose(rng).unwrap_or(&0);
            p.extend_from_slice(&v.to_le_bytes());
            p
        }
        89 if c.nasty || rng.gen_bool(0.2) => vec![0x01],
        89 => vec![0x0e],
        90..=91 => vec![0x09],
        92..=93 => {
            let mut p = vec![0x0c];
            let id = if rng.gen_bool(0.3) {
                c.id
            } else {
                rng.gen_range(0..50)
            };
            p.extend_from_slice(&id.to_le_bytes());
            p
        }
        94..=97 => {
            let mut p = vec![rng.gen()];
            p.extend(sqlgen::random_bytes(rng, 20));
            p
        }
        _ => Vec::new(),
    }
}

/// Byte-level mutations of a framed message.
fn mutate(rng: &mut StdRng, mut m: Vec<u8>, max_payload: usize) -> Vec<u8> {
    match rng.gen_range(0..8) {
        0 | 1 => {
            for _ in 0..rng.gen_range(1..5) {
                if m.is_empty() {
                    break;
                }
                let i = rng.gen_range(0..m.len());
                m[i] ^= 1 << rng.gen_range(0..8);
            }
        }
        2 => {
            let n = rng.gen_range(0..=m.len());
            m.truncate(n);
        }
        3 if m.len() >= 4 => {
            // Wrong length field.
            let len = u32::from_le_bytes([m[0], m[1], m[2], 0]) as i64;
            let nl = (len + rng.gen_range(-3i64..4)).clamp(0, 0xFF_FFFF) as u32;
            m[..3].copy_from_slice(&nl.to_le_bytes()[..3]);
        }
        4 if m.len() >= 4 => m[3] = rng.gen(),
        5 if m.len() >= 4 => {
            // Oversize: the multi-packet length, or more than max_allowed_packet.
            let nl: u32 = if rng.gen_bool(0.5) {
                0xFF_FFFF
            } else {
                rng.gen_range((max_payload as u32).min(0xFF_FFFF)..=0xFF_FFFF)
            };
            m[..3].copy_from_slice(&nl.to_le_bytes()[..3]);
        }
        6 => m.extend(sqlgen::random_bytes(rng, 16)),
        _ => {
            let dup = m.clone();
            m.extend_from_slice(&dup);
        }
    }
    m
}

/// Opens a connection: new session, greeting checked, scramble read.
fn connect(rig: &Rig, rng: &mut StdRng, f: &mut Findings) -> Client {
    let ctl = Arc::new(Ctl::default());
    let id = rig.server.next_connection_id();
    let session = rig
        .server
        .open_session(id, "127.0.0.1:3333".into(), ctl.clone());
    let too_many = ErrorInfo::new(1040, "08004", "Too many connections");
    let admission = match rng.gen_range(0..40) {
        0 => Admission::Refuse(too_many),
        1 => Admission::RootOnly(too_many),
        _ => Admission::Open,
    };
    let mut conn = Connection::new(
        session,
        ProtoConfig {
            connection_id: id,
            server_version: rig.server.version(),
            max_allowed_packet: rig.server.max_allowed_packet(),
            host: "127.0.0.1".into(),
            admission,
            ..ProtoConfig::default()
        },
    );
    let greeting = conn.take_output();
    let scramble = match check_greeting(&greeting) {
        Ok(s) => s,
        Err(e) => {
            f.violation("<greeting>", e);
            [0; 20]
        }
    };
    Client {
        conn,
        ctl,
        id,
        scramble,
        caps: 0,
        user: String::new(),
        password: None,
        phase: Phase::Greeting,
        next_seq: 1,
        stmts: HashMap::new(),
        pending: Vec::new(),
        starved: 0,
        nasty: rng.gen_bool(0.3),
    }
}

/// What a reply's first packet says, for the outcome counts: rows, OK, or an error code.
fn reply_kind(p: &[u8]) -> Result<shoal_proto::Response, ErrorInfo> {
    match p.first() {
        Some(0xFF) if p.len() >= 3 => Err(ErrorInfo::new(u16::from_le_bytes([p[1], p[2]]), "", "")),
        Some(0x00) => Ok(shoal_proto::Response::Ok(Default::default())),
        _ => Ok(shoal_proto::Response::Rows(Default::default())),
    }
}

/// Text to report an input by: the message bytes, printable where they are text.
fn describe(msg: &[u8]) -> String {
    let head = &msg[..msg.len().min(600)];
    format!(
        "{} bytes: {}",
        msg.len(),
        String::from_utf8_lossy(head).escape_debug()
    )
}

fn run(cfg: &Config) -> (u64, std::time::Duration, Findings, Rss) {
    let mut rng = StdRng::seed_from_u64(cfg.seed);
    let mut rig = Rig::new("proto");
    rig.setup_schema();
    let mut wd = Watchdog::start("protocol", cfg, rig.server.clone());
    let mut findings = Findings::default();
    let mut rss = Rss::new();
    let mut gen = SqlGen::new();
    let mut pgen = SqlGen::new();
    pgen.placeholders = true;
    let started = Instant::now();
    let mut client: Option<Client> = None;
    let mut since_reset = 0u64;
    let max_payload = rig.server.max_allowed_packet();
    let dump = std::env::var_os("SHOAL_FUZZ_DUMP").is_some();
    let mut done = 0u64;
    while done < cfg.iters {
        let mut c = match client.take() {
            Some(c) => c,
            None => {
                if since_reset >= RESET_EVERY {
                    since_reset = 0;
                    fuzz::check_idle(&rig.server, &format!("after input {done}"), &mut findings);
                    rig.setup_schema();
                }
                connect(&rig, &mut rng, &mut findings)
            }
        };
        // The message: valid for the phase, mutated, or random bytes.
        let valid = match c.phase {
            Phase::Greeting => frame(1, &handshake(&mut c, &mut rng)),
            Phase::AuthSwitch => frame(c.next_seq, &auth_switch_response(&c, &mut rng)),
            Phase::Command => frame(0, &command(&mut c, &mut rng, &mut gen, &mut pgen)),
        };
        // Mutations and noise end most connections (out of order, bad handshake), so they
        // are rarer once logged in, where most of the state is.
        let (mutated, noise) = match c.phase {
            Phase::Command if c.nasty => (10, 2),
            Phase::Command => (1, 0),
            _ => (20, 5),
        };
        let roll = rng.gen_range(0..100);
        let msg = if roll < noise {
            sqlgen::random_bytes(&mut rng, 64)
        } else if roll < noise + mutated {
            mutate(&mut rng, valid, max_payload)
        } else {
            valid
        };
        let input = describe(&msg);
        done += 1;
        since_reset += 1;
        wd.begin(c.id, &input);
        let mut outcomes = Vec::new();
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| -> Result<bool, String> {
            // Feed in up to three pieces, processing after each.
            let mut cuts: Vec<usize> = (0..rng.gen_range(0..3))
                .map(|_| rng.gen_range(0..=msg.len()))
                .collect();
            cuts.push(msg.len());
            cuts.sort();
            let mut from = 0;
            for to in cuts {
                c.conn.feed(&msg[from..to]);
                c.pending.extend_from_slice(&msg[from..to]);
                from = to;
                for _ in 0..64 {
                    let phase = c.phase;
                    let before = c.conn.buffered_input();
                    let p = c.conn.process();
                    let out = c.conn.take_output();
                    let after = c.conn.buffered_input();
                    match p {
                        Progress::NeedMore => {
                            if !out.is_empty() {
                                return Err("output while asking for more input".into());
                            }
                            break;
                        }
                        Progress::Continue if after >= before => {
                            return Err("Continue without consuming input".into());
                        }
                        _ => {}
                    }
                    let consumed = c.pending.len().saturating_sub(after);
                    let m: Vec<u8> = c.pending.drain(..consumed).collect();
                    if dump {
                        println!(
                            "DUMP {:?} {p:?} in {} out {}",
                            phase,
                            describe(&m),
                            describe(&out)
                        );
                    }
                    check_reply(&mut c, phase, &m, p, &out)?;
                    if let Ok(ps) = packets(&out) {
                        outcomes.extend(ps.first().map(|(_, p)| reply_kind(p)));
                    }
                    if p == Progress::Close {
                        if c.conn.process() != Progress::Close || !c.conn.take_output().is_empty() {
                            return Err("a closed connection answered".into());
                        }
                        return Ok(false);
                    }
                    // KILL of itself: the network layer notices the shut-down socket.
                    if c.ctl.0.load(Ordering::SeqCst) {
                        c.conn.shutdown();
                        return Ok(false);
                    }
                }
            }
            Ok(true)
        }));
        let took = wd.end();
        if took >= cfg.slow {
            findings.slow(&input, took);
        }
        for o in &outcomes {
            findings.outcome(o);
        }
        let keep = match r {
            Err(_) => {
                findings.crash(&input, fuzz::take_panic());
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| drop(c)));
                rig = Rig::new("proto");
                rig.setup_schema();
                wd.set_server(&rig.server);
                rss.sample(done, cfg.iters);
                continue;
            }
            Ok(Err(what)) => {
                findings.violation(&input, what);
                false
            }
            Ok(Ok(keep)) => keep,
        };
        if keep {
            // Waiting for the rest of a message that will not come: EOF, as a client hanging
            // up. Sometimes a client just goes, or the server times it out.
            if c.conn.buffered_input() > 0 {
                c.starved += 1;
            } else {
                c.starved = 0;
            }
            let roll = rng.gen_range(0..1000);
            if c.starved > 4 || c.conn.buffered_input() > 256 << 10 || roll < 5 {
                c.conn.shutdown();
                if !c.conn.take_output().is_empty() {
                    findings.violation(&input, "output after shutdown".into());
                }
            } else if roll < 7 {
                c.conn.close_with_error(&ErrorInfo::new(
                    4031,
                    "HY000",
                    "The client was disconnected by the server because of inactivity.",
                ));
                let out = c.conn.take_output();
                match packets(&out) {
                    Ok(ps) if ps.len() == 1 && check_err(&ps[0].1).is_ok() => {}
                    _ => findings.violation(&input, "close_with_error did not send one ERR".into()),
                }
            } else {
                client = Some(c);
            }
        }
        rss.sample(done, cfg.iters);
    }
    drop(client);
    fuzz::check_idle(&rig.server, "at the end", &mut findings);
    drop(wd);
    rss.finish();
    (done, started.elapsed(), findings, rss)
}
