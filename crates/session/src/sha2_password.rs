//! `caching_sha2_password`'s stored form and the server's cache of successful logins.
//!
//! # Stored form
//!
//! What MySQL 8 keeps in `mysql.user.authentication_string`: `$A$005$` followed by a 20-byte
//! salt and the 43-character sha256crypt digest (Ulrich Drepper's SHA-crypt, the `$5$` of
//! glibc's `crypt`), with `005` meaning 5 × 1000 rounds. It is sha256crypt exactly except that
//! the salt is 20 bytes where glibc truncates at 16 (MySQL's `my_crypt_genhash` allows 20), so a
//! string copied from MySQL's `SHOW CREATE USER` works here with `IDENTIFIED WITH
//! caching_sha2_password AS '...'`, and back. The salt is drawn from printable ASCII without
//! `$`, quotes and backslash (MySQL allows any byte but NUL and `$`; these keep the string
//! readable and usable in a quoted SQL literal as it is).
//! Verification costs the 5000 rounds (about a millisecond), paid only by full authentication.
//!
//! # Cache
//!
//! The fast path needs `SHA256(SHA256(pw))`, which cannot be derived from the stored hash. After
//! a full authentication succeeds the server keeps it per account, together with the account's
//! stored string at that moment: a cached entry counts only while the account's string is
//! unchanged, so ALTER USER / SET PASSWORD invalidate it without any hook, and a renamed or
//! dropped account's entry is never found again (and is dropped by [`Sha2Cache::retain`] when
//! the account list changes). A restart empties the cache, as in MySQL.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use rand::Rng;
use sha2::{Digest, Sha256};

/// Rounds, in thousands, of new hashes (MySQL's `caching_sha2_password_digest_rounds` 5000).
const ROUNDS_K: u32 = 5;
/// The salt length MySQL uses.
const SALT_LEN: usize = 20;
/// Length of the digest in sha256crypt's base64.
const DIGEST_LEN: usize = 43;
/// Most rounds accepted in a given string (sha256crypt's own maximum is 999999999; MySQL's
/// digest-rounds variable stops at 4095000).
const MAX_ROUNDS_K: u32 = 4095;

const ITOA64: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// sha256crypt of `password` with `salt` (any length, not truncated) and `rounds`: the
/// 43-character digest.
pub fn sha256_crypt(password: &[u8], salt: &[u8], rounds: u32) -> String {
    let p = password;
    let s = salt;
    let b = Sha256::new()
        .chain_update(p)
        .chain_update(s)
        .chain_update(p)
        .finalize();
    let mut a = Sha256::new().chain_update(p).chain_update(s);
    let mut n = p.len();
    while n > 32 {
        a.update(b);
        n -= 32;
    }
    a.update(&b[..n]);
    let mut n = p.len();
    while n > 0 {
        if n & 1 == 1 {
            a.update(b);
        } else {
            a.update(p);
        }
        n >>= 1;
    }
    let a = a.finalize();
    let mut dp = Sha256::new();
    for _ in 0..p.len() {
        dp.update(p);
    }
    let dp = dp.finalize();
    let p_bytes: Vec<u8> = (0..p.len()).map(|i| dp[i % 32]).collect();
    let mut ds = Sha256::new();
    for _ in 0..16 + a[0] as usize {
        ds.update(s);
    }
    let ds = ds.finalize();
    let s_bytes: Vec<u8> = (0..s.len()).map(|i| ds[i % 32]).collect();
    let mut c: [u8; 32] = a.into();
    for i in 0..rounds {
        let mut h = Sha256::new();
        if i & 1 == 1 {
            h.update(&p_bytes);
        } else {
            h.update(c);
        }
        if i % 3 != 0 {
            h.update(&s_bytes);
        }
        if i % 7 != 0 {
            h.update(&p_bytes);
        }
        if i & 1 == 1 {
            h.update(c);
        } else {
            h.update(&p_bytes);
        }
        c = h.finalize().into();
    }
    let mut out = String::with_capacity(DIGEST_LEN);
    let mut b64 = |b2: u8, b1: u8, b0: u8, n: usize| {
        let mut w = ((b2 as u32) << 16) | ((b1 as u32) << 8) | b0 as u32;
        for _ in 0..n {
            out.push(ITOA64[(w & 0x3f) as usize] as char);
            w >>= 6;
        }
    };
    for k in 0..10 {
        // (0,10,20), (21,1,11), (12,22,2), ...: sha256crypt's byte order.
        let (i, j, l) = match k % 3 {
            0 => (k, k + 10, k + 20),
            1 => (k + 20, k, k + 10),
            _ => (k + 10, k + 20, k),
        };
        b64(c[i], c[j], c[l], 4);
    }
    b64(0, c[31], c[30], 3);
    out
}

/// A parsed `$A$005$<salt><digest>` string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sha2Hash {
    rounds_k: u32,
    salt: Vec<u8>,
    digest: String,
}

impl Sha2Hash {
    /// A new hash of `password` with a fresh salt.
    pub fn new(password: &str) -> Sha2Hash {
        let mut rng = rand::thread_rng();
        let salt: Vec<u8> = (0..SALT_LEN)
            .map(|_| loop {
                let c: u8 = rng.gen_range(0x21..0x7F);
                if !matches!(c, b'$' | b'\'' | b'"' | b'\\') {
                    break c;
                }
            })
            .collect();
        let digest = sha256_crypt(password.as_bytes(), &salt, ROUNDS_K * 1000);
        Sha2Hash {
            rounds_k: ROUNDS_K,
            salt,
            digest,
        }
    }

    /// Parses MySQL's stored form; `None` if it is not one.
    pub fn parse(s: &str) -> Option<Sha2Hash> {
        let rest = s.strip_prefix("$A$")?;
        let (rounds, rest) = rest.split_once('$')?;
        if rounds.len() != 3 || !rounds.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let rounds_k: u32 = rounds.parse().ok()?;
        if rounds_k == 0 || rounds_k > MAX_ROUNDS_K {
            return None;
        }
        let b = rest.as_bytes();
        if b.len() != SALT_LEN + DIGEST_LEN {
            return None;
        }
        let (salt, digest) = b.split_at(SALT_LEN);
        if salt.iter().any(|&c| c == 0 || c == b'$') || !digest.iter().all(|c| ITOA64.contains(c)) {
            return None;
        }
        Some(Sha2Hash {
            rounds_k,
            salt: salt.to_vec(),
            digest: String::from_utf8(digest.to_vec()).ok()?,
        })
    }

    /// Whether `password` is the one hashed.
    pub fn verify(&self, password: &[u8]) -> bool {
        let d = sha256_crypt(password, &self.salt, self.rounds_k * 1000);
        d.as_bytes()
            .iter()
            .zip(self.digest.as_bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }

    /// The stored form.
    pub fn to_auth_string(&self) -> String {
        format!(
            "$A${:03}${}{}",
            self.rounds_k,
            String::from_utf8_lossy(&self.salt),
            self.digest
        )
    }
}

/// `(user, host pattern lower-cased)`.
type AccountKey = (String, String);

/// A cache entry: the account's stored string when it was cached, and `SHA256(SHA256(pw))`.
type Entry = (String, [u8; 32]);

/// Cached fast-path entries, see the module doc.
#[derive(Default)]
pub struct Sha2Cache {
    /// `(user, host pattern lower-cased)` → (the account's stored string, `SHA256(SHA256(pw))`).
    entries: Mutex<HashMap<AccountKey, Entry>>,
    /// `Caching_sha2_password_fast_auths`: logins the cache accepted.
    fast_auths: AtomicU64,
    /// `Caching_sha2_password_full_auths`: successful full authentications (password checked
    /// against the stored hash).
    full_auths: AtomicU64,
}

impl Sha2Cache {
    /// Counts a login the cache accepted.
    pub fn count_fast(&self) {
        self.fast_auths.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a successful full authentication.
    pub fn count_full(&self) {
        self.full_auths.fetch_add(1, Ordering::Relaxed);
    }

    /// `Caching_sha2_password_fast_auths`.
    pub fn fast_auths(&self) -> u64 {
        self.fast_auths.load(Ordering::Relaxed)
    }

    /// `Caching_sha2_password_full_auths`.
    pub fn full_auths(&self) -> u64 {
        self.full_auths.load(Ordering::Relaxed)
    }

    /// Remembers a successful full authentication.
    pub fn insert(&self, user: &str, host: &str, auth_string: &str, stage2: [u8; 32]) {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                (user.to_string(), host.to_ascii_lowercase()),
                (auth_string.to_string(), stage2),
            );
    }

    /// The cached `SHA256(SHA256(pw))` of the account, if its stored string is still
    /// `auth_string`.
    pub fn get(&self, user: &str, host: &str, auth_string: &str) -> Option<[u8; 32]> {
        let m = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        m.get(&(user.to_string(), host.to_ascii_lowercase()))
            .filter(|(s, _)| s == auth_string)
            .map(|(_, h)| *h)
    }

    /// Keeps only the entries `keep` approves (run after account changes).
    pub fn retain(&self, mut keep: impl FnMut(&str, &str, &str) -> bool) {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(u, h), (s, _)| keep(u, h, s));
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256crypt_vectors() {
        // `openssl passwd -5 -salt saltstring 'Hello world!'` and the same with a 16-byte salt:
        // sha256crypt at its default 5000 rounds.
        assert_eq!(
            sha256_crypt(b"Hello world!", b"saltstring", 5000),
            "5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5"
        );
        assert_eq!(
            sha256_crypt(b"secret", b"abcdefghijklmnop", 5000),
            "i7zHaTeYqXlesRXJ8dXj6o.MEFQdzfIJpJpcWAtszs6"
        );
    }

    #[test]
    fn stored_form_roundtrip() {
        let h = Sha2Hash::new("pw");
        let s = h.to_auth_string();
        assert!(s.starts_with("$A$005$"), "{s}");
        assert_eq!(s.len(), 7 + 20 + 43);
        let p = Sha2Hash::parse(&s).unwrap();
        assert!(p.verify(b"pw"));
        assert!(!p.verify(b"pW"));
        assert!(!p.verify(b""));
        assert!(Sha2Hash::parse("*14E65567ABDB5135D0CFD9A70B3032C179A49EE7").is_none());
        assert!(Sha2Hash::parse(&s[..s.len() - 1]).is_none());
        assert!(Sha2Hash::parse(&s.replace("$A$005$", "$A$000$")).is_none());
    }

    #[test]
    fn cache_follows_the_stored_string() {
        let c = Sha2Cache::default();
        c.insert("u", "%", "$A$005$x", [7; 32]);
        assert_eq!(c.get("u", "%", "$A$005$x"), Some([7; 32]));
        assert_eq!(c.get("u", "%", "$A$005$y"), None);
        assert_eq!(c.get("v", "%", "$A$005$x"), None);
        c.retain(|u, _, _| u != "u");
        assert!(c.is_empty());
    }
}
