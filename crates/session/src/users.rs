//! Accounts and their authentication: `mysql_native_password` and `caching_sha2_password`.
//!
//! An account is `'user'@'host'` where host is a pattern (`%` and `_` wildcards, as in MySQL),
//! with an authentication plugin and what that plugin stores ([`Auth`]). A
//! `caching_sha2_password` account stores a salted sha256crypt hash (see
//! [`crate::sha2_password`]). For `mysql_native_password` we store only
//! `SHA1(SHA1(password))` (what MySQL keeps in `mysql.user.authentication_string`),
//! which is enough to verify the challenge-response: the client sends
//! `token = SHA1(pw) XOR SHA1(scramble || SHA1(SHA1(pw)))`; XOR-ing the token with
//! `SHA1(scramble || stored)` yields `SHA1(pw)`, whose SHA1 must equal `stored`.
//!
//! A fresh datadir gets one account, `root` with an empty password (or `--root-password`) and
//! every privilege, reachable from loopback only (`localhost`, `127.0.0.1`, `::1`), like a fresh
//! mysqld install; accounts are kept durably by [`crate::accounts`].

use sha1::{Digest, Sha1};
use shoal_proto::AuthPlugin;

use crate::sha2_password::Sha2Hash;

/// An account's authentication plugin and what it stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// `mysql_native_password`: `SHA1(SHA1(password))`, `None` for an empty password.
    Native(Option<[u8; 20]>),
    /// `caching_sha2_password`: the sha256crypt hash, `None` for an empty password.
    Sha2(Option<Sha2Hash>),
}

impl Auth {
    /// `password` hashed for `plugin`.
    pub fn new(plugin: AuthPlugin, password: &str) -> Auth {
        match plugin {
            AuthPlugin::NativePassword => Auth::Native(stage2(password)),
            AuthPlugin::CachingSha2Password => {
                Auth::Sha2((!password.is_empty()).then(|| Sha2Hash::new(password)))
            }
        }
    }

    /// A stored string for `plugin` (`*` + 40 hex digits, `$A$005$...`, or empty for no
    /// password); `None` if it is not in the plugin's format.
    pub fn from_stored(plugin: AuthPlugin, s: &str) -> Option<Auth> {
        if s.is_empty() {
            return Some(Auth::new(plugin, ""));
        }
        match plugin {
            AuthPlugin::NativePassword => {
                crate::accounts::parse_hash(s).map(|h| Auth::Native(Some(h)))
            }
            AuthPlugin::CachingSha2Password => Sha2Hash::parse(s).map(|h| Auth::Sha2(Some(h))),
        }
    }

    /// The plugin.
    pub fn plugin(&self) -> AuthPlugin {
        match self {
            Auth::Native(_) => AuthPlugin::NativePassword,
            Auth::Sha2(_) => AuthPlugin::CachingSha2Password,
        }
    }

    /// The account has a password.
    pub fn has_password(&self) -> bool {
        match self {
            Auth::Native(h) => h.is_some(),
            Auth::Sha2(h) => h.is_some(),
        }
    }

    /// `mysql.user.authentication_string`: empty without a password.
    pub fn auth_string(&self) -> String {
        match self {
            Auth::Native(h) => h.map(|h| native_hex(&h)).unwrap_or_default(),
            Auth::Sha2(h) => h.as_ref().map(Sha2Hash::to_auth_string).unwrap_or_default(),
        }
    }

    /// Whether `password` (in clear) is the account's.
    pub fn verify_clear(&self, password: &[u8]) -> bool {
        match self {
            Auth::Native(None) | Auth::Sha2(None) => password.is_empty(),
            Auth::Native(Some(h)) => {
                let s1 = Sha1::digest(password);
                let s2: [u8; 20] = Sha1::digest(s1).into();
                s2 == *h
            }
            Auth::Sha2(Some(h)) => h.verify(password),
        }
    }
}

/// `*` + 40 upper-case hex digits.
fn native_hex(h: &[u8; 20]) -> String {
    let hex: String = h.iter().map(|b| format!("{b:02X}")).collect();
    format!("*{hex}")
}

/// One account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// User name (case-sensitive, as in MySQL).
    pub user: String,
    /// Host pattern (`%`, `localhost`, `127.0.0.1`, `10.0.%`).
    pub host: String,
    /// The authentication plugin and its stored hash.
    pub auth: Auth,
    /// `WITH MAX_USER_CONNECTIONS n`: most simultaneous connections of this account; 0 = the
    /// global `max_user_connections` applies.
    pub max_user_connections: u64,
    /// `ACCOUNT LOCK`: logins are refused (3118).
    pub locked: bool,
    /// Privileges at every level (`crate::privileges`).
    pub grants: crate::privileges::Grants,
    /// `REQUIRE SSL`: logins without TLS are refused (1045).
    pub require_ssl: bool,
}

impl Account {
    /// A new account without privileges (what CREATE USER makes).
    pub fn new(user: &str, host: &str, auth: Auth) -> Account {
        Account {
            user: user.to_string(),
            host: host.to_string(),
            auth,
            max_user_connections: 0,
            locked: false,
            grants: crate::privileges::Grants::default(),
            require_ssl: false,
        }
    }

    /// SUPER-like rights: KILL of any thread, the reserved connection slot, writes under
    /// `read_only` (SUPER or CONNECTION_ADMIN, as MySQL 8).
    pub fn is_super(&self) -> bool {
        self.grants.global & (crate::privileges::SUPER | crate::privileges::CONNECTION_ADMIN) != 0
    }

    /// Whether this is the account `'user'@'host'` (host compared case-insensitively).
    pub fn is(&self, user: &str, host: &str) -> bool {
        self.user == user && self.host.eq_ignore_ascii_case(host)
    }

    /// The `mysql_native_password` hash as MySQL shows it (`*` + 40 upper-case hex digits),
    /// `None` without a password or with another plugin.
    pub fn password_hash(&self) -> Option<String> {
        match &self.auth {
            Auth::Native(Some(h)) => Some(native_hex(h)),
            _ => None,
        }
    }
}

/// `SHA1(SHA1(password))`, `None` for the empty password.
pub fn stage2(password: &str) -> Option<[u8; 20]> {
    if password.is_empty() {
        return None;
    }
    let s1 = Sha1::digest(password.as_bytes());
    Some(Sha1::digest(s1).into())
}

/// The token a client computes for `password` and `scramble` (used by tests and tools).
pub fn scramble_password(scramble: &[u8], password: &str) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let s1 = Sha1::digest(password.as_bytes());
    let s2 = Sha1::digest(s1);
    let mut h = Sha1::new();
    h.update(scramble);
    h.update(s2);
    let x = h.finalize();
    s1.iter().zip(x.iter()).map(|(a, b)| a ^ b).collect()
}

/// Verifies a `mysql_native_password` response against the stored hash.
pub fn verify_native(stored: Option<&[u8; 20]>, scramble: &[u8], response: &[u8]) -> bool {
    match stored {
        None => response.is_empty(),
        Some(stage2) => {
            if response.len() != 20 {
                return false;
            }
            let mut h = Sha1::new();
            h.update(scramble);
            h.update(stage2);
            let x = h.finalize();
            let stage1: Vec<u8> = response.iter().zip(x.iter()).map(|(a, b)| a ^ b).collect();
            let check: [u8; 20] = Sha1::digest(&stage1).into();
            // Constant-time-ish comparison.
            check
                .iter()
                .zip(stage2.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
        }
    }
}

/// Whether `host` matches the MySQL host pattern `pattern` (`%` any run, `_` one char,
/// case-insensitive). `localhost` also matches loopback addresses.
pub fn host_matches(pattern: &str, host: &str) -> bool {
    if pattern.eq_ignore_ascii_case("localhost") {
        return matches!(host, "localhost" | "127.0.0.1" | "::1");
    }
    like_match(pattern.as_bytes(), host.as_bytes())
}

fn like_match(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'%') => (0..=s.len()).any(|i| like_match(&p[1..], &s[i..])),
        Some(b'_') => !s.is_empty() && like_match(&p[1..], &s[1..]),
        Some(c) => !s.is_empty() && c.eq_ignore_ascii_case(&s[0]) && like_match(&p[1..], &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_password_roundtrip() {
        let scramble = b"abcdefghij0123456789";
        let stored = stage2("secret");
        let token = scramble_password(scramble, "secret");
        assert_eq!(token.len(), 20);
        assert!(verify_native(stored.as_ref(), scramble, &token));
        let wrong = scramble_password(scramble, "Secret");
        assert!(!verify_native(stored.as_ref(), scramble, &wrong));
        assert!(!verify_native(stored.as_ref(), scramble, &[]));
        assert!(verify_native(None, scramble, &[]));
        assert!(!verify_native(None, scramble, &token));
    }

    #[test]
    fn known_hash() {
        // MySQL: PASSWORD('secret') = '*14E65567ABDB5135D0CFD9A70B3032C179A49EE7'
        let s = stage2("secret").unwrap();
        let hex: String = s.iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(hex, "14E65567ABDB5135D0CFD9A70B3032C179A49EE7");
    }

    #[test]
    fn host_patterns() {
        assert!(host_matches("%", "10.1.2.3"));
        assert!(host_matches("localhost", "127.0.0.1"));
        assert!(!host_matches("localhost", "10.0.0.1"));
        assert!(host_matches("10.0.%", "10.0.3.4"));
        assert!(!host_matches("10.0.%", "10.1.3.4"));
        assert!(host_matches("127.0.0._", "127.0.0.1"));
    }
}
