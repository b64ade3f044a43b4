//! Hashes, checksums, identifiers and random numbers: MD5, SHA1/SHA, SHA2, CRC32, UUID,
//! UUID_SHORT, RAND.
//!
//! The digests come from the RustCrypto crates (`md-5`, `sha1`, `sha2`) and `crc32fast`, over
//! the argument's text as bytes, printed as lower-case hex as MySQL prints them. `SHA2(s, n)`
//! takes 224, 256, 384, 512 or 0 (= 256); another length is NULL with warning 1583, and a NULL
//! length counts as 0 (MariaDB).
//!
//! `RAND` is MySQL's own generator (`my_rnd`), so `RAND(1)` gives exactly MariaDB's sequence:
//! two seeds modulo `0x3FFFFFFF`, `s1 = (3*s1 + s2) mod M`, `s2 = (s1 + s2 + 33) mod M`, result
//! `s1 / M`. A seed `n` starts the generator at `(n*0x10001 + 55555555, n*0x10000001)` (both cut
//! to 32 bits). A constant seed seeds once per statement and each further row draws the next
//! number of that sequence; a seed that varies by row (`RAND(col)`) reseeds at every call, as
//! MySQL does. The per-statement generators live in the session ([`RandState`], reached through
//! [`Context::rand_state`]), keyed by the call's place in the statement's expression tree.
//! `RAND()` without a seed draws from the session's generator, seeded at random.
//!
//! `UUID()` is a version-1 UUID as MySQL prints it: 100-ns ticks since 1582-10-15 (strictly
//! increasing in this process), a random clock sequence with the RFC 4122 variant and a random
//! node id with the multicast bit set (the RFC's rule for a node that is not a MAC address).
//! `UUID_SHORT()` is `(server_id & 255) << 56 | startup_seconds << 24`, plus one per call.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use md5::{Digest, Md5};

use super::arity;
use crate::ast::{Expr, VarScope};
use crate::error::SqlError;
use crate::eval::Context;
use crate::value::{SqlType, Value};

/// MySQL's `my_rnd` modulus.
const RND_MAX: u64 = 0x3FFF_FFFF;

/// MySQL's random generator (`struct my_rnd_struct`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rand {
    seed1: u64,
    seed2: u64,
}

impl Rand {
    /// `my_rnd_init(seed1, seed2)`.
    pub fn new(seed1: u64, seed2: u64) -> Rand {
        Rand {
            seed1: seed1 % RND_MAX,
            seed2: seed2 % RND_MAX,
        }
    }

    /// The generator of `RAND(n)`: `n` cut to 32 bits as MySQL's `(uint32) val_int()`.
    pub fn from_seed(n: i128) -> Rand {
        let t = n as u32 as u64;
        Rand::new(
            t.wrapping_mul(0x10001).wrapping_add(55_555_555) & 0xFFFF_FFFF,
            t.wrapping_mul(0x1000_0001) & 0xFFFF_FFFF,
        )
    }

    /// A generator seeded from the operating system's randomness.
    pub fn random() -> Rand {
        let a = random_u64();
        Rand::new(a & 0xFFFF_FFFF, a >> 32)
    }

    /// The next number in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        self.seed1 = (self.seed1 * 3 + self.seed2) % RND_MAX;
        self.seed2 = (self.seed1 + self.seed2 + 33) % RND_MAX;
        self.seed1 as f64 / RND_MAX as f64
    }
}

/// A session's random generators.
#[derive(Debug)]
pub struct RandState {
    /// `RAND()` without a seed: one generator for the session's life.
    pub session: Rand,
    /// `RAND(constant)` of the running statement, by call site (reset per statement).
    sites: HashMap<usize, Rand>,
}

impl Default for RandState {
    fn default() -> Self {
        RandState {
            session: Rand::random(),
            sites: HashMap::new(),
        }
    }
}

impl RandState {
    /// Forgets the seeded generators of the previous statement.
    pub fn new_statement(&mut self) {
        self.sites.clear();
    }
}

/// 64 random bits from the standard library's per-process random hash keys.
fn random_u64() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Whether `e` has the same value on every row of a statement (MySQL's `const_item`).
fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::Literal(_) | Expr::Param(_) => true,
        Expr::Unary(_, a) | Expr::Cast(a, _) => is_constant(a),
        Expr::Binary(_, a, b) => is_constant(a) && is_constant(b),
        _ => false,
    }
}

/// Offset between the UUID epoch (1582-10-15) and the Unix epoch, in 100-ns ticks.
const UUID_EPOCH_OFFSET: u64 = 0x01B2_1DD2_1381_4000;

/// The state of `UUID()`: the last tick handed out, the clock sequence, the node id.
struct UuidState {
    last: u64,
    clock_seq: u16,
    node: u64,
}

fn uuid_v1() -> String {
    static STATE: OnceLock<Mutex<UuidState>> = OnceLock::new();
    let state = STATE.get_or_init(|| {
        let r = random_u64();
        Mutex::new(UuidState {
            last: 0,
            clock_seq: (r >> 48) as u16 & 0x3FFF,
            // The multicast bit marks a node id that is not a MAC address (RFC 4122 4.5).
            node: (r & 0xFFFF_FFFF_FFFF) | 0x0100_0000_0000,
        })
    });
    let mut st = state.lock().unwrap_or_else(PoisonError::into_inner);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| (d.as_nanos() / 100) as u64)
        .unwrap_or(0)
        .wrapping_add(UUID_EPOCH_OFFSET);
    let tick = now.max(st.last + 1);
    st.last = tick;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        tick & 0xFFFF_FFFF,
        (tick >> 32) & 0xFFFF,
        ((tick >> 48) & 0x0FFF) | 0x1000,
        st.clock_seq | 0x8000,
        st.node
    )
}

fn uuid_short(ctx: &mut dyn Context) -> u64 {
    static BASE: OnceLock<AtomicU64> = OnceLock::new();
    let server_id = ctx
        .system_var(VarScope::Global, "server_id")
        .ok()
        .and_then(|v| v.to_i128())
        .unwrap_or(1) as u64;
    let counter = BASE.get_or_init(|| {
        let start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        AtomicU64::new(((server_id & 255) << 56).wrapping_add(start << 24))
    });
    counter.fetch_add(1, Ordering::Relaxed)
}

/// `SHA2(s, bits)` as hex, None for a length MySQL does not take.
fn sha2_hex(data: &[u8], bits: i128) -> Option<String> {
    Some(match bits {
        0 | 256 => hex(&sha2::Sha256::digest(data)),
        224 => hex(&sha2::Sha224::digest(data)),
        384 => hex(&sha2::Sha384::digest(data)),
        512 => hex(&sha2::Sha512::digest(data)),
        _ => return None,
    })
}

pub(super) fn call(
    name: &str,
    args: &[Expr],
    vals: &[Value],
    ctx: &mut dyn Context,
) -> Result<Option<Value>, SqlError> {
    // The raw bytes: a binary string's own, a text's UTF-8.
    let text = |i: usize| vals[i].to_bytes();
    Ok(Some(match name {
        "MD5" => {
            arity(name, args, 1, 1)?;
            match text(0) {
                Some(s) => Value::Str(hex(&Md5::digest(&s))),
                None => Value::Null,
            }
        }
        "SHA1" | "SHA" => {
            arity(name, args, 1, 1)?;
            match text(0) {
                Some(s) => Value::Str(hex(&sha1::Sha1::digest(&s))),
                None => Value::Null,
            }
        }
        "SHA2" => {
            arity(name, args, 2, 2)?;
            let Some(s) = text(0) else {
                return Ok(Some(Value::Null));
            };
            let bits = vals[1].to_i128().unwrap_or(0);
            match sha2_hex(&s, bits) {
                Some(h) => Value::Str(h),
                None => {
                    ctx.warn(
                        shoal_errors::ER_WRONG_PARAMETERS_TO_NATIVE_FCT.code,
                        "Incorrect parameters in the call to native function 'sha2'".into(),
                    );
                    Value::Null
                }
            }
        }
        "CRC32" => {
            arity(name, args, 1, 1)?;
            match text(0) {
                Some(s) => Value::UInt(crc32fast::hash(&s) as u64),
                None => Value::Null,
            }
        }
        "UUID" => {
            arity(name, args, 0, 0)?;
            Value::Str(uuid_v1())
        }
        "UUID_SHORT" => {
            arity(name, args, 0, 0)?;
            Value::UInt(uuid_short(ctx))
        }
        "RAND" => {
            arity(name, args, 0, 1)?;
            if args.is_empty() {
                let r = match ctx.rand_state() {
                    Some(st) => st.session.next_f64(),
                    None => Rand::random().next_f64(),
                };
                return Ok(Some(Value::Double(r)));
            }
            // NULL seeds as 0, a string by its number, a fraction rounded (MariaDB).
            let seed = vals[0].to_i128().unwrap_or(0);
            let site = args.as_ptr() as usize;
            let r = match ctx.rand_state() {
                Some(st) if is_constant(&args[0]) => st
                    .sites
                    .entry(site)
                    .or_insert_with(|| Rand::from_seed(seed))
                    .next_f64(),
                _ => Rand::from_seed(seed).next_f64(),
            };
            Value::Double(r)
        }
        _ => return Ok(None),
    }))
}

pub(super) fn static_type(name: &str) -> Option<SqlType> {
    Some(match name {
        "MD5" | "SHA1" | "SHA" | "SHA2" | "UUID" => SqlType::Str,
        "CRC32" | "UUID_SHORT" => SqlType::UInt,
        "RAND" => SqlType::Double,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rand_matches_mysql_sequence() {
        // MariaDB 10.11: SELECT RAND(1) over four rows, RAND(-1), RAND(0), RAND(2^32 + 1).
        let mut r = Rand::from_seed(1);
        let got: Vec<String> = (0..4).map(|_| r.next_f64().to_string()).collect();
        assert_eq!(
            got,
            [
                "0.40540353712197724",
                "0.8716141803857071",
                "0.1418603212962489",
                "0.09445909605776807"
            ]
        );
        assert_eq!(
            Rand::from_seed(-1).next_f64().to_string(),
            "0.9050373219931845"
        );
        assert_eq!(
            Rand::from_seed(0).next_f64().to_string(),
            "0.15522042769493574"
        );
        assert_eq!(
            Rand::from_seed(4_294_967_297).next_f64().to_string(),
            "0.40540353712197724"
        );
    }

    #[test]
    fn uuid_is_v1_and_increasing() {
        let a = uuid_v1();
        let b = uuid_v1();
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "1");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(a, b);
    }
}
