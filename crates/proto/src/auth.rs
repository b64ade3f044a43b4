//! Authentication plugins on the wire: `mysql_native_password` and `caching_sha2_password`.
//!
//! # The exchange
//!
//! The greeting names the server's default plugin (`default_authentication_plugin`) and carries
//! a 20-byte nonce. The client answers with the plugin it used and its response. The protocol
//! asks the backend which plugin the account uses ([`crate::Backend::auth_plugin`]; the
//! default one for an unknown account, so a probe learns nothing), and when the two differ it
//! sends an AuthSwitchRequest (0xFE, plugin name, the same nonce) and takes the next packet as
//! the response. Then, by plugin:
//!
//! * `mysql_native_password`: the 20-byte token is checked against `SHA1(SHA1(pw))` in one step
//!   ([`Credentials::Native`]).
//! * `caching_sha2_password`, **fast path**: the client sends
//!   `SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) || nonce)`. The server can check that only
//!   against `SHA256(SHA256(pw))`, which it does not store (it stores a salted sha256crypt
//!   hash) but keeps in memory after a successful full authentication. A hit: `0x01 0x03`
//!   ("fast auth success") then OK. A miss: `0x01 0x04` ("perform full authentication").
//! * `caching_sha2_password`, **full authentication**: over a secure link (TLS, or the Unix
//!   socket) the client sends the password in clear, NUL-terminated. Otherwise it encrypts
//!   `(password || NUL) XOR nonce` (nonce repeated) with the server's RSA public key, OAEP
//!   padding with SHA-1 (as MySQL 8.0.5+ expects); a client without the key first sends `0x02`
//!   and gets `0x01` + the PEM public key. The backend then checks the clear password against
//!   the stored hash ([`Credentials::Clear`]) and fills its cache.
//!
//! An empty password is an empty response (or one NUL byte, libmysqlclient's form) in both
//! plugins, and is accepted without the extra round trips.
//!
//! The protocol does the RSA decryption itself (with the key pair the network layer loaded,
//! [`RsaKeyPair`]), so the backend sees only cleartext or scrambles. RSA is RustCrypto's `rsa`
//! crate: pure Rust, the only maintained RSA in Rust with OAEP decryption that does not pull in
//! a C library (`ring` cannot decrypt). Its advisory RUSTSEC-2023-0071 (a timing side channel
//! on decryption, "Marvin") applies: an attacker timing many full authentications could in
//! principle learn the private key; TLS is the path to prefer, and the RSA path can be turned
//! off by removing the key files (then non-TLS clients of `caching_sha2_password` accounts
//! are refused, as in MySQL without keys).

use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use rsa::{Oaep, RsaPrivateKey, RsaPublicKey};
use sha2::{Digest, Sha256};

use crate::backend::ErrorInfo;

/// An authentication plugin the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthPlugin {
    /// `mysql_native_password`: SHA1 challenge-response.
    #[default]
    NativePassword,
    /// `caching_sha2_password`: SHA256 scramble against a cache, else full authentication.
    CachingSha2Password,
}

impl AuthPlugin {
    /// The plugin's name on the wire and in SQL.
    pub fn name(self) -> &'static str {
        match self {
            AuthPlugin::NativePassword => "mysql_native_password",
            AuthPlugin::CachingSha2Password => "caching_sha2_password",
        }
    }

    /// The plugin called `name` (case-insensitive), if the server has it.
    pub fn from_name(name: &str) -> Option<AuthPlugin> {
        [AuthPlugin::NativePassword, AuthPlugin::CachingSha2Password]
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }
}

/// What the client proved, as far as the protocol could decode it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials<'a> {
    /// `mysql_native_password`'s 20-byte token (empty: no password).
    Native(&'a [u8]),
    /// `caching_sha2_password`'s 32-byte scramble (empty: no password). Only the server's
    /// cache can verify it; otherwise answer [`AuthError::FullAuthRequired`].
    Sha2Scramble(&'a [u8]),
    /// The password itself, from `caching_sha2_password`'s full authentication.
    Clear(&'a [u8]),
}

impl Credentials<'_> {
    /// Whether a password was given (MySQL's "using password: YES").
    pub fn password_given(&self) -> bool {
        match self {
            Credentials::Native(b) | Credentials::Sha2Scramble(b) | Credentials::Clear(b) => {
                !(b.is_empty() || *b == [0])
            }
        }
    }
}

/// Why [`crate::Backend::authenticate`] did not accept a login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// Refused with this error (1045, 1049, 1040, 3118, ...).
    Denied(ErrorInfo),
    /// A `caching_sha2_password` scramble the cache cannot vouch for: ask for the password
    /// (full authentication).
    FullAuthRequired,
}

impl From<ErrorInfo> for AuthError {
    fn from(e: ErrorInfo) -> Self {
        AuthError::Denied(e)
    }
}

/// `caching_sha2_password`'s cache entry for a password: `SHA256(SHA256(pw))`.
pub fn sha2_stage2(password: &[u8]) -> [u8; 32] {
    Sha256::digest(Sha256::digest(password)).into()
}

/// The client's fast-path response: `SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) || nonce)`
/// (empty for an empty password). Used by tests and tools.
pub fn sha2_scramble(password: &[u8], nonce: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha256::digest(password);
    let stage2 = Sha256::digest(stage1);
    let mut h = Sha256::new();
    h.update(stage2);
    h.update(nonce);
    let x = h.finalize();
    stage1.iter().zip(x.iter()).map(|(a, b)| a ^ b).collect()
}

/// Checks a fast-path response against a cached `SHA256(SHA256(pw))`.
pub fn verify_sha2_scramble(stage2: &[u8; 32], nonce: &[u8], response: &[u8]) -> bool {
    if response.len() != 32 {
        return false;
    }
    let mut h = Sha256::new();
    h.update(stage2);
    h.update(nonce);
    let x = h.finalize();
    let stage1: Vec<u8> = response.iter().zip(x.iter()).map(|(a, b)| a ^ b).collect();
    let check: [u8; 32] = Sha256::digest(&stage1).into();
    check
        .iter()
        .zip(stage2.iter())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

/// The server's RSA key pair for `caching_sha2_password` without TLS.
pub struct RsaKeyPair {
    private: RsaPrivateKey,
    /// The public key as PEM (`-----BEGIN PUBLIC KEY-----`, SubjectPublicKeyInfo), what a
    /// client gets on request and `Caching_sha2_password_rsa_public_key` shows.
    public_pem: String,
}

impl std::fmt::Debug for RsaKeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RsaKeyPair").finish_non_exhaustive()
    }
}

impl RsaKeyPair {
    /// A new 2048-bit pair (what MySQL generates).
    pub fn generate() -> Result<RsaKeyPair, String> {
        let private =
            RsaPrivateKey::new(&mut rand::thread_rng(), 2048).map_err(|e| e.to_string())?;
        RsaKeyPair::from_private(private)
    }

    /// The pair of a private key in PEM (PKCS#8 `PRIVATE KEY` or PKCS#1 `RSA PRIVATE KEY`).
    pub fn from_private_pem(pem: &str) -> Result<RsaKeyPair, String> {
        use rsa::pkcs1::DecodeRsaPrivateKey;
        let private = RsaPrivateKey::from_pkcs8_pem(pem)
            .or_else(|_| RsaPrivateKey::from_pkcs1_pem(pem))
            .map_err(|e| format!("not an RSA private key: {e}"))?;
        RsaKeyPair::from_private(private)
    }

    fn from_private(private: RsaPrivateKey) -> Result<RsaKeyPair, String> {
        let public_pem = RsaPublicKey::from(&private)
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| e.to_string())?;
        Ok(RsaKeyPair {
            private,
            public_pem,
        })
    }

    /// The private key as PKCS#8 PEM (for writing the key file).
    pub fn private_pem(&self) -> Result<String, String> {
        self.private
            .to_pkcs8_pem(LineEnding::LF)
            .map(|p| p.to_string())
            .map_err(|e| e.to_string())
    }

    /// The public key as PEM.
    pub fn public_pem(&self) -> &str {
        &self.public_pem
    }

    /// Decrypts a full-authentication packet: RSA-OAEP(SHA-1) of `(pw || NUL) XOR nonce`.
    /// Returns the password without its NUL, `None` if it does not decrypt.
    pub fn decrypt_password(&self, data: &[u8], nonce: &[u8]) -> Option<Vec<u8>> {
        let plain = self.private.decrypt(Oaep::new::<sha1::Sha1>(), data).ok()?;
        Some(unxor_password(&plain, nonce))
    }

    /// What a client sends: RSA-OAEP(SHA-1) of `(pw || NUL) XOR nonce` (tests and tools).
    pub fn encrypt_password(&self, password: &[u8], nonce: &[u8]) -> Vec<u8> {
        let mut p = password.to_vec();
        p.push(0);
        let x = xor_nonce(&p, nonce);
        RsaPublicKey::from(&self.private)
            .encrypt(&mut rand::thread_rng(), Oaep::new::<sha1::Sha1>(), &x)
            .unwrap_or_default()
    }
}

fn xor_nonce(data: &[u8], nonce: &[u8]) -> Vec<u8> {
    if nonce.is_empty() {
        return data.to_vec();
    }
    data.iter()
        .enumerate()
        .map(|(i, b)| b ^ nonce[i % nonce.len()])
        .collect()
}

/// `(pw || NUL) XOR nonce` back to `pw`.
fn unxor_password(data: &[u8], nonce: &[u8]) -> Vec<u8> {
    let mut p = xor_nonce(data, nonce);
    if p.last() == Some(&0) {
        p.pop();
    }
    p
}

/// A clear password as sent over a secure link: NUL-terminated.
pub fn clear_password(payload: &[u8]) -> &[u8] {
    payload.strip_suffix(&[0]).unwrap_or(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scramble_roundtrip() {
        let nonce = b"abcdefghij0123456789";
        let stage2 = sha2_stage2(b"secret");
        let r = sha2_scramble(b"secret", nonce);
        assert_eq!(r.len(), 32);
        assert!(verify_sha2_scramble(&stage2, nonce, &r));
        assert!(!verify_sha2_scramble(
            &stage2,
            nonce,
            &sha2_scramble(b"Secret", nonce)
        ));
        assert!(!verify_sha2_scramble(&stage2, b"other nonce 01234567", &r));
        assert!(!verify_sha2_scramble(&stage2, nonce, &[]));
    }

    #[test]
    fn rsa_roundtrip() {
        let k = RsaKeyPair::generate().unwrap();
        assert!(k.public_pem().starts_with("-----BEGIN PUBLIC KEY-----"));
        let nonce = b"abcdefghij0123456789";
        let data = k.encrypt_password(b"a long password, longer than the nonce", nonce);
        assert_eq!(data.len(), 256);
        assert_eq!(
            k.decrypt_password(&data, nonce).unwrap(),
            b"a long password, longer than the nonce"
        );
        assert!(k.decrypt_password(b"garbage", nonce).is_none());
        let again = RsaKeyPair::from_private_pem(&k.private_pem().unwrap()).unwrap();
        assert_eq!(again.public_pem(), k.public_pem());
    }

    #[test]
    fn plugin_names() {
        assert_eq!(
            AuthPlugin::from_name("CACHING_SHA2_PASSWORD"),
            Some(AuthPlugin::CachingSha2Password)
        );
        assert_eq!(AuthPlugin::from_name("sha256_password"), None);
        assert!(!Credentials::Sha2Scramble(&[0]).password_given());
        assert!(Credentials::Clear(b"x").password_given());
    }
}
