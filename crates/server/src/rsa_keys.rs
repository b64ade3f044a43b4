//! The RSA key pair of `caching_sha2_password` (full authentication without TLS).
//!
//! Like MySQL 8 (`caching_sha2_password_auto_generate_rsa_keys`), the server uses
//! `private_key.pem` and `public_key.pem` in the data directory, generating a 2048-bit pair on
//! first start when neither exists (private key mode 0600, written through a temporary file and
//! a rename). `--caching-sha2-password-private-key-path` / `-public-key-path` name other files
//! (relative paths are in the datadir). The public key is derived from the private one (the
//! public file is written for clients that want it ahead of time, `--server-public-key-path`);
//! `Caching_sha2_password_rsa_public_key` shows it. A private key that cannot be read stops the
//! server, as a broken TLS configuration does; with auto-generation off and no key files the
//! server runs without the RSA path (non-TLS logins to `caching_sha2_password` accounts that
//! need full authentication are refused, 1045).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use shoal_proto::RsaKeyPair;
use shoal_session::Server;

static KEYS: OnceLock<Arc<RsaKeyPair>> = OnceLock::new();

/// The loaded key pair, once [`configure`] found or made one.
pub fn keys() -> Option<Arc<RsaKeyPair>> {
    KEYS.get().cloned()
}

fn in_datadir(datadir: &Path, p: &str) -> PathBuf {
    let p = PathBuf::from(p);
    if p.is_relative() {
        datadir.join(p)
    } else {
        p
    }
}

/// Loads (or generates) the key pair, installs it and registers
/// `Caching_sha2_password_rsa_public_key`. Returns the private key's path, `None` when there
/// are no keys (auto-generation off).
pub fn configure(server: &Server, datadir: &Path) -> Result<Option<PathBuf>, String> {
    server.add_status_provider(Box::new(|rows| {
        rows.push((
            "Caching_sha2_password_rsa_public_key".into(),
            keys()
                .map(|k| k.public_pem().to_string())
                .unwrap_or_default(),
        ));
    }));
    let var = |n: &str| server.variable(n).unwrap_or_default();
    let private = in_datadir(datadir, &var("caching_sha2_password_private_key_path"));
    let public = in_datadir(datadir, &var("caching_sha2_password_public_key_path"));
    let _ = server.vars.set_startup(
        "caching_sha2_password_private_key_path",
        &private.display().to_string(),
    );
    let _ = server.vars.set_startup(
        "caching_sha2_password_public_key_path",
        &public.display().to_string(),
    );
    let pair = if private.exists() {
        let pem = std::fs::read_to_string(&private)
            .map_err(|e| format!("cannot read RSA key '{}': {e}", private.display()))?;
        RsaKeyPair::from_private_pem(&pem)
            .map_err(|e| format!("RSA key '{}': {e}", private.display()))?
    } else {
        let auto = server
            .variable_value("caching_sha2_password_auto_generate_rsa_keys")
            .is_none_or(|v| v.as_bool());
        if !auto {
            tracing::warn!(
                "no RSA key '{}' and caching_sha2_password_auto_generate_rsa_keys is OFF: \
                 caching_sha2_password full authentication works over TLS only",
                private.display()
            );
            return Ok(None);
        }
        let pair = RsaKeyPair::generate().map_err(|e| format!("generating RSA keys: {e}"))?;
        let pem = pair.private_pem()?;
        crate::tls::write_file(&private, &pem, true)?;
        crate::tls::write_file(&public, pair.public_pem(), false)?;
        tracing::info!(
            "generated RSA key pair '{}' / '{}' for caching_sha2_password",
            private.display(),
            public.display()
        );
        pair
    };
    let _ = KEYS.set(Arc::new(pair));
    Ok(Some(private))
}
