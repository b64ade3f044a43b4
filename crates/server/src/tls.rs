//! TLS for client connections: configuration (certificates given or generated) and the
//! per-connection TLS state that [`crate::client::Client`] drives.
//!
//! # Configuration
//!
//! [`configure`] runs once at startup, after the options and before the listeners. With
//! `--ssl-cert` / `--ssl-key` (and optionally `--ssl-ca`) it loads those PEM files; with none of
//! them it does what MySQL 8 does: it uses `ca.pem`, `server-cert.pem` and `server-key.pem` in the
//! data directory, generating them on first start (a self-signed CA and a server certificate it
//! signs, for `localhost`, `127.0.0.1`, `::1` and the host name, so that a client with
//! `--ssl-verify-server-cert --ssl-ca=<datadir>/ca.pem` can check the server). Keys are written
//! mode 0600. The keys are ECDSA P-256: the `ring` provider signs with RSA keys but cannot
//! generate them, and every client we test (OpenSSL, GnuTLS, rustls) speaks ECDSA. The variables
//! `ssl_cert`, `ssl_key`, `ssl_ca` then show the files in use and `have_ssl` / `have_openssl`
//! say `YES`; `--skip-ssl` turns TLS off (`DISABLED`). A broken explicit configuration stops the
//! server: silently serving without TLS would leave `REQUIRE SSL` accounts locked out and
//! clients that insist on TLS failing at every connect.
//!
//! # One connection
//!
//! The protocol crate stays sans-IO: on the client's SSLRequest it returns
//! `Progress::StartTls`, and the client then wraps its socket in a [`TlsLink`]. The link never
//! touches the socket itself: the client reads ciphertext with its usual `recv` (so the thread
//! pool's "did the last read fill the buffer" logic is unchanged) and hands it to
//! [`TlsLink::absorb`], which decrypts every complete record at once and hands *all* plaintext
//! to the protocol's input buffer. So no decrypted command ever sits inside rustls where the
//! pool cannot see it: a connection has buffered input exactly when the protocol says so
//! (`Connection::buffered_input`), whether or not the socket is readable. Only an incomplete
//! record stays inside rustls, and its remainder must come from the socket, so waiting for
//! readability is right then. Output goes the other way: [`TlsLink::encrypt`] takes reply bytes,
//! [`TlsLink::write_to`] writes records to the socket (with `MSG_DONTWAIT` in the pool), and a
//! socket that takes no more leaves them buffered in rustls: `WantWrite`, as for plaintext.
//!
//! The TLS handshake is driven by the same cycle: a partial ClientHello is an incomplete record
//! (`WantRead`: the worker goes back to the pool, nobody waits on a stalled client); the
//! ServerHello rustls queues is written at the top of the next iteration like any reply.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{CipherSuite, ProtocolVersion, ServerConfig, ServerConnection};
use shoal_session::Server;

/// `Ssl_accepts`: TLS handshakes started (SSLRequests answered).
pub static SSL_ACCEPTS: AtomicU64 = AtomicU64::new(0);
/// `Ssl_finished_accepts`: TLS handshakes completed.
pub static SSL_FINISHED_ACCEPTS: AtomicU64 = AtomicU64::new(0);

static ACCEPTOR: OnceLock<Arc<ServerConfig>> = OnceLock::new();

/// Why TLS could not be set up (startup fails with this message).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file could not be read or parsed.
    #[error("cannot load {what} from '{path}': {reason}")]
    Load {
        /// Which file (`ssl_cert`, `ssl_key`, `ssl_ca`).
        what: &'static str,
        /// Its path.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// Only some of the options were given.
    #[error("{0}")]
    Incomplete(String),
    /// Generating the certificates failed.
    #[error("cannot generate TLS certificates in '{dir}': {reason}")]
    Generate {
        /// The data directory.
        dir: String,
        /// What went wrong.
        reason: String,
    },
    /// `tls_version` names no version we support.
    #[error("tls_version '{0}': supported versions are TLSv1.2 and TLSv1.3")]
    Version(String),
    /// rustls refused the certificate/key pair.
    #[error("TLS configuration rejected: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The server's TLS configuration, once [`configure`] succeeded with TLS on.
pub fn acceptor() -> Option<Arc<ServerConfig>> {
    ACCEPTOR.get().cloned()
}

/// The certificate files in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// Server certificate (chain), PEM.
    pub cert: PathBuf,
    /// Server private key, PEM.
    pub key: PathBuf,
    /// CA certificate, PEM (shown in `ssl_cert`; with generated files, the CA clients verify).
    pub ca: Option<PathBuf>,
}

/// File names MySQL 8 uses for its auto-generated certificates.
pub const CA_FILE: &str = "ca.pem";
/// The CA's key (kept so that a later version could sign client certificates).
pub const CA_KEY_FILE: &str = "ca-key.pem";
/// Server certificate.
pub const CERT_FILE: &str = "server-cert.pem";
/// Server key.
pub const KEY_FILE: &str = "server-key.pem";

/// Sets TLS up from the `ssl*` / `tls_version` variables (see the module docs), installs the
/// acceptor, publishes the variables and registers `Ssl_accepts` / `Ssl_finished_accepts`.
/// `Ok(None)` when TLS is turned off (`--skip-ssl`).
pub fn configure(server: &Server, datadir: &Path) -> Result<Option<TlsFiles>, TlsError> {
    server.add_status_provider(Box::new(|rows| {
        rows.push((
            "Ssl_accepts".into(),
            SSL_ACCEPTS.load(Ordering::Relaxed).to_string(),
        ));
        rows.push((
            "Ssl_finished_accepts".into(),
            SSL_FINISHED_ACCEPTS.load(Ordering::Relaxed).to_string(),
        ));
    }));
    let on = server
        .variable_value("ssl")
        .map(|v| v.as_bool())
        .unwrap_or(true);
    if !on {
        return Ok(None);
    }
    let var = |n: &str| server.variable(n).filter(|s| !s.is_empty());
    let files = match (var("ssl_cert"), var("ssl_key"), var("ssl_ca")) {
        (None, None, None) => auto_files(datadir)?,
        (Some(cert), Some(key), ca) => TlsFiles {
            cert: cert.into(),
            key: key.into(),
            ca: ca.map(PathBuf::from),
        },
        (None, None, Some(_)) => {
            return Err(TlsError::Incomplete(
                "--ssl-ca was given without --ssl-cert and --ssl-key".into(),
            ))
        }
        _ => {
            return Err(TlsError::Incomplete(
                "--ssl-cert and --ssl-key must be given together".into(),
            ))
        }
    };
    let versions = versions(&server.variable("tls_version").unwrap_or_default())?;
    let config = server_config(&files, &versions)?;
    let _ = ACCEPTOR.set(Arc::new(config));
    let vars = &server.vars;
    let show = |p: &Path| p.display().to_string();
    let _ = vars.set_startup("ssl_cert", &show(&files.cert));
    let _ = vars.set_startup("ssl_key", &show(&files.key));
    if let Some(ca) = &files.ca {
        let _ = vars.set_startup("ssl_ca", &show(ca));
    }
    let _ = vars.set_startup("have_ssl", "YES");
    let _ = vars.set_startup("have_openssl", "YES");
    Ok(Some(files))
}

/// The protocol versions `tls_version` allows (a comma-separated list, MySQL's spelling).
fn versions(text: &str) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, TlsError> {
    let mut out = Vec::new();
    for v in text.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        if v.eq_ignore_ascii_case("TLSv1.3") {
            out.push(&rustls::version::TLS13);
        } else if v.eq_ignore_ascii_case("TLSv1.2") {
            out.push(&rustls::version::TLS12);
        } else if v.eq_ignore_ascii_case("TLSv1") || v.eq_ignore_ascii_case("TLSv1.1") {
            // MySQL 8.0.28 removed them too; accepted in the list, never negotiated.
        } else {
            return Err(TlsError::Version(text.to_string()));
        }
    }
    if out.is_empty() {
        return Err(TlsError::Version(text.to_string()));
    }
    Ok(out)
}

fn load_err(what: &'static str, path: &Path, reason: impl std::fmt::Display) -> TlsError {
    TlsError::Load {
        what,
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

fn server_config(
    files: &TlsFiles,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Result<ServerConfig, TlsError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| load_err("ssl_cert", &files.cert, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| load_err("ssl_cert", &files.cert, e))?;
    if certs.is_empty() {
        return Err(load_err("ssl_cert", &files.cert, "no certificate in it"));
    }
    let key =
        PrivateKeyDer::from_pem_file(&files.key).map_err(|e| load_err("ssl_key", &files.key, e))?;
    if let Some(ca) = &files.ca {
        // Checked so that a typo fails at startup; clients use it to verify us.
        let n = CertificateDer::pem_file_iter(ca)
            .map_err(|e| load_err("ssl_ca", ca, e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| load_err("ssl_ca", ca, e))?
            .len();
        if n == 0 {
            return Err(load_err("ssl_ca", ca, "no certificate in it"));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    // MySQL clients do not resume sessions; no tickets to send after every handshake.
    config.send_tls13_tickets = 0;
    Ok(config)
}

/// The generated files in `datadir`: reused when all exist, created when none does.
fn auto_files(datadir: &Path) -> Result<TlsFiles, TlsError> {
    let files = TlsFiles {
        cert: datadir.join(CERT_FILE),
        key: datadir.join(KEY_FILE),
        ca: Some(datadir.join(CA_FILE)),
    };
    let all = [CA_FILE, CERT_FILE, KEY_FILE];
    let present: Vec<&str> = all
        .iter()
        .copied()
        .filter(|f| datadir.join(f).exists())
        .collect();
    if present.len() == all.len() {
        return Ok(files);
    }
    if !present.is_empty() {
        return Err(TlsError::Incomplete(format!(
            "the data directory holds {} but not all of {}: remove them to have new ones \
             generated, or give --ssl-cert and --ssl-key",
            present.join(", "),
            all.join(", ")
        )));
    }
    generate(datadir).map_err(|reason| TlsError::Generate {
        dir: datadir.display().to_string(),
        reason,
    })?;
    tracing::info!(
        "generated a self-signed CA and server certificate in '{}' ({CA_FILE}, {CERT_FILE}, \
         {KEY_FILE})",
        datadir.display()
    );
    Ok(files)
}

fn generate(datadir: &Path) -> Result<(), String> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    let e = |x: rcgen::Error| x.to_string();
    let version = env!("CARGO_PKG_VERSION");
    let now = time_now();
    let mut ca_params = CertificateParams::default();
    ca_params.distinguished_name = rcgen::DistinguishedName::new();
    ca_params.distinguished_name.push(
        DnType::CommonName,
        format!("shoal_Server_{version}_Auto_Generated_CA_Certificate"),
    );
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca_params.not_before = now;
    ca_params.not_after = now + time::Duration::days(3650);
    let ca_key = KeyPair::generate().map_err(e)?;
    let ca_cert = ca_params.self_signed(&ca_key).map_err(e)?;
    let issuer = Issuer::new(ca_params, &ca_key);

    let mut names = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    let host = shoal_session::vars::hostname();
    if !host.is_empty() && !names.contains(&host) {
        names.push(host);
    }
    let mut params = CertificateParams::new(names).map_err(e)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(
        DnType::CommonName,
        format!("shoal_Server_{version}_Auto_Generated_Server_Certificate"),
    );
    params.not_before = now;
    params.not_after = now + time::Duration::days(3650);
    params.use_authority_key_identifier_extension = true;
    let key = KeyPair::generate().map_err(e)?;
    let cert = params.signed_by(&key, &issuer).map_err(e)?;

    write_file(&datadir.join(CA_KEY_FILE), &ca_key.serialize_pem(), true)?;
    write_file(&datadir.join(KEY_FILE), &key.serialize_pem(), true)?;
    write_file(&datadir.join(CERT_FILE), &cert.pem(), false)?;
    // Last: its presence marks a complete set.
    write_file(&datadir.join(CA_FILE), &ca_cert.pem(), false)?;
    Ok(())
}

fn time_now() -> time::OffsetDateTime {
    // A minute back: a client whose clock is slightly behind still accepts the certificate.
    time::OffsetDateTime::now_utc() - time::Duration::minutes(1)
}

/// Writes `text` to `path` (through a temporary file and a rename, so a crash leaves no
/// half-written file), mode 0600 when `secret`.
pub(crate) fn write_file(path: &Path, text: &str, secret: bool) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("pem.tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(if secret { 0o600 } else { 0o644 })
        .open(&tmp)
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// What one [`TlsLink::absorb`] call found besides plaintext.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Absorbed {
    /// The handshake completed during this call.
    pub handshake_done: bool,
    /// The client sent close_notify: no more plaintext will come (an end of file).
    pub peer_closed: bool,
}

/// One connection's TLS state (see the module docs).
pub struct TlsLink {
    conn: ServerConnection,
    /// The handshake completed (counted once in `Ssl_finished_accepts`).
    established: bool,
    /// Scratch buffer for plaintext taken out of rustls.
    plain: Vec<u8>,
}

impl TlsLink {
    /// A server-side TLS session with the configured acceptor; counts `Ssl_accepts`.
    pub fn new(config: Arc<ServerConfig>) -> Result<TlsLink, rustls::Error> {
        let conn = ServerConnection::new(config)?;
        SSL_ACCEPTS.fetch_add(1, Ordering::Relaxed);
        Ok(TlsLink {
            conn,
            established: false,
            plain: vec![0u8; 16 * 1024],
        })
    }

    /// Takes ciphertext read from the socket, decrypts every complete record and passes all
    /// plaintext to `sink` (nothing decrypted stays inside rustls). An error means the peer
    /// broke the protocol; rustls may have queued an alert ([`TlsLink::wants_write`]).
    pub fn absorb(
        &mut self,
        mut data: &[u8],
        sink: &mut dyn FnMut(&[u8]),
    ) -> Result<Absorbed, rustls::Error> {
        let mut out = Absorbed::default();
        while !data.is_empty() {
            match self.conn.read_tls(&mut data) {
                Ok(0) => return Err(rustls::Error::General("TLS record buffer full".to_string())),
                Ok(_) => {}
                Err(e) => return Err(rustls::Error::General(e.to_string())),
            }
            let state = self.conn.process_new_packets()?;
            if state.plaintext_bytes_to_read() > 0 {
                self.drain(sink);
            }
            if state.peer_has_closed() {
                out.peer_closed = true;
            }
            if !self.established && !self.conn.is_handshaking() {
                self.established = true;
                out.handshake_done = true;
                SSL_FINISHED_ACCEPTS.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(out)
    }

    fn drain(&mut self, sink: &mut dyn FnMut(&[u8])) {
        use std::io::Read;
        loop {
            match self.conn.reader().read(&mut self.plain) {
                Ok(0) => return,
                Ok(n) => sink(&self.plain[..n]),
                Err(_) => return,
            }
        }
    }

    /// Queues reply bytes for encryption; returns how many were taken (rustls buffers at most
    /// its send limit; call again after [`TlsLink::write_to`] emptied it).
    pub fn encrypt(&mut self, plain: &[u8]) -> usize {
        self.conn.writer().write(plain).unwrap_or(0)
    }

    /// Records are waiting to be written to the socket.
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// Writes buffered records to `sock` once; `WouldBlock` when it takes nothing.
    pub fn write_to(&mut self, sock: &mut dyn io::Write) -> io::Result<usize> {
        self.conn.write_tls(sock)
    }

    /// Queues close_notify (the caller flushes it best effort before closing).
    pub fn close_notify(&mut self) {
        self.conn.send_close_notify();
    }

    /// `Ssl_version` / `Ssl_cipher` of the established session (OpenSSL's names, as MySQL shows
    /// them).
    pub fn session_names(&self) -> (String, String) {
        let version = match self.conn.protocol_version() {
            Some(ProtocolVersion::TLSv1_3) => "TLSv1.3".to_string(),
            Some(ProtocolVersion::TLSv1_2) => "TLSv1.2".to_string(),
            Some(v) => format!("{v:?}"),
            None => String::new(),
        };
        let cipher = self
            .conn
            .negotiated_cipher_suite()
            .map(|s| openssl_cipher_name(s.suite()))
            .unwrap_or_default();
        (version, cipher)
    }
}

/// OpenSSL's name of a cipher suite (what MySQL's `Ssl_cipher` shows; TLS 1.3 suites keep
/// their IANA names there), IANA's for one OpenSSL names otherwise.
pub fn openssl_cipher_name(s: CipherSuite) -> String {
    let name = match s {
        CipherSuite::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
        CipherSuite::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => "ECDHE-ECDSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => "ECDHE-ECDSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => {
            "ECDHE-ECDSA-CHACHA20-POLY1305"
        }
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => "ECDHE-RSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => "ECDHE-RSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-RSA-CHACHA20-POLY1305",
        other => return other.as_str().unwrap_or("unknown").to_string(),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_version_lists() {
        assert_eq!(versions("TLSv1.2,TLSv1.3").unwrap().len(), 2);
        assert_eq!(versions("tlsv1.3").unwrap().len(), 1);
        assert!(versions("TLSv1.1").is_err());
        assert!(versions("SSLv3").is_err());
        assert!(versions("").is_err());
    }

    #[test]
    fn generated_files_load_and_are_reused() {
        let dir = std::env::temp_dir().join(format!("shoal-tls-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let files = auto_files(&dir).unwrap();
        let first = std::fs::read(&files.cert).unwrap();
        server_config(&files, &versions("TLSv1.2,TLSv1.3").unwrap()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&files.key).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = auto_files(&dir).unwrap();
        assert_eq!(
            std::fs::read(&again.cert).unwrap(),
            first,
            "reused, not regenerated"
        );
        std::fs::remove_file(dir.join(CA_FILE)).unwrap();
        assert!(matches!(auto_files(&dir), Err(TlsError::Incomplete(_))));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
