//! The per-connection protocol state machine.
//!
//! # How it works
//!
//! A [`Connection`] owns everything the protocol must remember about one client: the handshake
//! phase, the scramble, negotiated capabilities, the sequence id to expect and to send, prepared
//! statements (with the parameter types bound on their first execute, since sysbench and
//! libmariadb set `new_params_bound` only once) and their long data, the multi-statement option,
//! and the [`Backend`] session. It never does I/O:
//!
//! ```text
//!   socket bytes ──feed()──► input buffer ──process()──► Backend ──► output buffer ──► socket
//! ```
//!
//! * [`Connection::new`] queues the HandshakeV10 greeting (fresh random 20-byte scramble).
//! * [`Connection::feed`] appends bytes read from the socket.
//! * [`Connection::process`] handles at most ONE complete message (one command, or the handshake
//!   response, or the auth-switch response) and returns a [`Progress`]: `NeedMore` (no complete
//!   message buffered: wait for readability), `Continue` (one message handled; more may be
//!   buffered, see [`Connection::has_command`]), `Close` (flush the output, then close).
//! * [`Connection::pending_output`] / [`Connection::consume_output`] give the reply bytes to the
//!   network layer, which may write them partially (a full send buffer is "want write", not a
//!   blocked thread).
//!
//! Because the struct is `Send` and carries all state, a thread pool can run `process` for one
//! command on one worker and the next command on another.
//!
//! # Phases
//!
//! `Greeting` (greeting queued, waiting for the HandshakeResponse41) → optional `AuthSwitch`
//! (a client that opened with another plugin than its account's is asked to switch) → optional
//! `Sha2Full` (`caching_sha2_password`'s full authentication: waiting for the password, or for
//! `0x02`, the request for the RSA public key) → `Command` → `Closed`; see [`crate::auth`] for
//! the exchanges. Anything unparseable before authentication is
//! answered with ERR 1043 (bad handshake) and closes; wrong sequence ids get ERR 1156; a message
//! above `max_allowed_packet` gets ERR 1153; all three close the connection, as MySQL does.
//! COM_STMT_SEND_LONG_DATA keeps at most `max_allowed_packet` bytes per parameter: past that the
//! statement's long data is dropped and its executions fail with ERR 1105 until COM_STMT_RESET
//! (MySQL's and MariaDB's behaviour; the connection stays usable).
//!
//! # TLS
//!
//! With [`ProtoConfig::tls`] the greeting offers CLIENT_SSL. A client's SSLRequest (the first 32
//! bytes of a HandshakeResponse41, sequence 1) makes `process` return [`Progress::StartTls`];
//! the network layer then runs the TLS handshake, takes the bytes that came behind the request
//! ([`Connection::take_unprocessed_input`]) as its first ciphertext, and feeds only plaintext
//! afterwards. The real response follows with sequence 2, and the backend learns through
//! [`LoginRequest::tls`] that the link is encrypted. No byte of TLS passes through this crate.
//!
//! # EOF versus OK
//!
//! With `CLIENT_DEPRECATE_EOF` negotiated, result sets have no EOF after the column definitions and
//! end with an OK packet whose header is 0xFE; otherwise classic EOF packets are sent (no client
//! seen in practice asks for DEPRECATE_EOF: sysbench, the mariadb CLI, PyMySQL, connector).

use std::collections::HashMap;

use mysql_common::constants::{CapabilityFlags, ColumnFlags, ColumnType, StatusFlags};
use mysql_common::packets::HandshakeResponse;
use mysql_common::proto::MyDeserialize;
use mysql_common::value::Value;
use rand::Rng;

use std::sync::Arc;

use crate::auth::{clear_password, AuthError, AuthPlugin, Credentials, RsaKeyPair};
use crate::backend::{Backend, Column, ErrorInfo, LoginRequest, OkInfo, Response, ResultSet};
use crate::packet::{
    gather_payload, put_lenenc_bytes, put_lenenc_int, scan_message, write_message, Reader, Scan,
};
use crate::stmt_map::StmtMap;
use crate::values::{decode_param, encode_binary, text_of};

/// Capabilities the server offers (CLIENT_SSL is added per connection when TLS is configured,
/// see [`ProtoConfig::tls`]). No compression, no session tracking.
pub const SERVER_CAPABILITIES: CapabilityFlags = CapabilityFlags::from_bits_truncate(
    CapabilityFlags::CLIENT_LONG_PASSWORD.bits()
        | CapabilityFlags::CLIENT_FOUND_ROWS.bits()
        | CapabilityFlags::CLIENT_LONG_FLAG.bits()
        | CapabilityFlags::CLIENT_CONNECT_WITH_DB.bits()
        | CapabilityFlags::CLIENT_NO_SCHEMA.bits()
        | CapabilityFlags::CLIENT_ODBC.bits()
        | CapabilityFlags::CLIENT_IGNORE_SPACE.bits()
        | CapabilityFlags::CLIENT_PROTOCOL_41.bits()
        | CapabilityFlags::CLIENT_INTERACTIVE.bits()
        | CapabilityFlags::CLIENT_IGNORE_SIGPIPE.bits()
        | CapabilityFlags::CLIENT_TRANSACTIONS.bits()
        | CapabilityFlags::CLIENT_RESERVED.bits()
        | CapabilityFlags::CLIENT_SECURE_CONNECTION.bits()
        | CapabilityFlags::CLIENT_MULTI_STATEMENTS.bits()
        | CapabilityFlags::CLIENT_MULTI_RESULTS.bits()
        | CapabilityFlags::CLIENT_PS_MULTI_RESULTS.bits()
        | CapabilityFlags::CLIENT_PLUGIN_AUTH.bits()
        | CapabilityFlags::CLIENT_CONNECT_ATTRS.bits()
        | CapabilityFlags::CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA.bits()
        | CapabilityFlags::CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS.bits()
        | CapabilityFlags::CLIENT_DEPRECATE_EOF.bits(),
);

/// Largest handshake/auth message accepted before authentication.
const MAX_LOGIN_PACKET: usize = 64 * 1024;
/// utf8mb4_general_ci, announced in the greeting.
const SERVER_COLLATION: u8 = 45;

/// Who may log in on this connection; decided by the network layer at accept time from its
/// connection counts (max_connections, plus one extra for the administrator).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Admission {
    /// Everyone (subject to [`Backend::authenticate`]).
    #[default]
    Open,
    /// Only `root` (the reserved extra connection); others get this error after the handshake.
    RootOnly(ErrorInfo),
    /// Nobody: this error is sent right after the client's handshake response.
    Refuse(ErrorInfo),
}

/// Static configuration of one connection.
#[derive(Debug, Clone)]
pub struct ProtoConfig {
    /// Connection id announced in the greeting (CONNECTION_ID()).
    pub connection_id: u32,
    /// Server version string, e.g. `8.0.36-shoal-0.1.0`.
    pub server_version: String,
    /// `max_allowed_packet` before the session can tell its own.
    pub max_allowed_packet: usize,
    /// Client host as the server sees it (`127.0.0.1`, `localhost` for the Unix socket).
    pub host: String,
    /// Who may log in (see [`Admission`]).
    pub admission: Admission,
    /// TLS can be offered: the greeting advertises CLIENT_SSL, and a client's SSLRequest makes
    /// [`Connection::process`] return [`Progress::StartTls`].
    pub tls: bool,
    /// The link is secure without TLS (a Unix socket): counts as secure transport for
    /// `require_secure_transport`, as in MySQL (not for `REQUIRE SSL`).
    pub local_socket: bool,
    /// The plugin the greeting names (`default_authentication_plugin`).
    pub default_auth_plugin: AuthPlugin,
    /// The RSA key pair for `caching_sha2_password`'s full authentication without TLS
    /// (`None`: such logins are refused).
    pub rsa: Option<Arc<RsaKeyPair>>,
}

impl Default for ProtoConfig {
    fn default() -> Self {
        ProtoConfig {
            connection_id: 1,
            server_version: format!("8.0.36-shoal-{}", env!("CARGO_PKG_VERSION")),
            max_allowed_packet: 64 * 1024 * 1024,
            host: "127.0.0.1".into(),
            admission: Admission::Open,
            tls: false,
            local_socket: false,
            default_auth_plugin: AuthPlugin::NativePassword,
            rsa: None,
        }
    }
}

/// What [`Connection::process`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// No complete message is buffered; feed more bytes.
    NeedMore,
    /// One message was handled; the connection stays open.
    Continue,
    /// Flush the pending output, then close the connection.
    Close,
    /// The client sent an SSLRequest: the network layer must now run a TLS server handshake on
    /// the socket, pass the bytes already buffered ([`Connection::take_unprocessed_input`]) to
    /// it as the first TLS bytes, and from then on feed only decrypted bytes. The protocol
    /// considers the link secure from here on (nothing else can reach it before the
    /// handshake completes).
    StartTls,
}

/// Why a connection closed (for `Aborted_*` accounting by the network layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// COM_QUIT.
    Quit,
    /// Login failed or was refused (counts as an aborted connect).
    LoginFailed,
    /// Protocol violation: garbage, wrong sequence, oversize packet, unknown-length data.
    ProtocolError,
    /// The network layer called [`Connection::shutdown`] (EOF, I/O error, timeout, KILL).
    Shutdown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Greeting,
    AuthSwitch,
    Sha2Full,
    Command,
    Closed,
}

/// A prepared statement as the protocol remembers it.
#[derive(Debug, Default)]
struct Statement {
    /// Number of `?` placeholders.
    params: u16,
    /// Parameter types (type byte, unsigned) bound by the last execute with new_params_bound=1.
    types: Option<Vec<(u8, bool)>>,
    /// COM_STMT_SEND_LONG_DATA chunks per parameter, each at most `max_allowed_packet` bytes.
    long_data: HashMap<u16, Vec<u8>>,
    /// A parameter's long data outgrew `max_allowed_packet`: its data was dropped, further
    /// chunks are ignored, and every COM_STMT_EXECUTE fails with [`long_data_too_long`] until
    /// COM_STMT_RESET (MySQL's and MariaDB's `STMT_ERROR` state).
    long_data_error: bool,
}

/// Login data kept between the handshake response and the auth-switch response.
#[derive(Debug, Default)]
struct PendingLogin {
    user: String,
    database: Option<String>,
    attributes: Vec<(String, String)>,
    interactive: bool,
    /// The account's plugin, once asked.
    plugin: AuthPlugin,
}

/// All protocol state of one client connection. See the module docs.
pub struct Connection<B: Backend> {
    backend: B,
    config: ProtoConfig,
    phase: Phase,
    /// Random 20-byte nonce sent in the greeting (and again in an auth switch).
    scramble: [u8; 20],
    /// Capabilities both sides support.
    caps: CapabilityFlags,
    /// Sequence id the next incoming message must start with.
    expect_seq: u8,
    /// Sequence id of the next outgoing packet.
    send_seq: u8,
    /// Unprocessed input; `in_pos` marks how much of it is consumed.
    input: Vec<u8>,
    in_pos: usize,
    /// Reply bytes not yet written; `out_pos` marks how much was written.
    output: Vec<u8>,
    out_pos: usize,
    /// A payload being built (see `Connection::take_scratch`), kept between replies.
    scratch: Vec<u8>,
    /// COM_SET_OPTION state (starts as the client's CLIENT_MULTI_STATEMENTS).
    multi_statements: bool,
    statements: StmtMap<Statement>,
    next_stmt_id: u32,
    login: PendingLogin,
    close_reason: Option<CloseReason>,
    disconnected: bool,
    /// Login succeeded at some point (stays true after close).
    logged_in: bool,
    /// The client asked for TLS (SSLRequest) and the link was switched.
    tls: bool,
}

/// The largest payload buffer kept for the next reply (a larger one, grown by a big row, is
/// freed after use instead of held for the connection's life).
const SCRATCH_KEEP: usize = 64 << 10;

/// Largest buffer a [`Buffers`] keeps after [`Connection::exchange_buffers`].
pub const SPARE_KEEP: usize = 1 << 20;

/// Buffers lent to connections by the thread that runs them (see
/// [`Connection::exchange_buffers`]); always empty while the thread holds them.
#[derive(Debug, Default)]
pub struct Buffers {
    input: Vec<u8>,
    output: Vec<u8>,
    scratch: Vec<u8>,
}

impl Buffers {
    /// Whether every buffer holds nothing (always, between exchanges).
    pub fn is_empty(&self) -> bool {
        self.input.is_empty() && self.output.is_empty() && self.scratch.is_empty()
    }
}

impl<B: Backend> Connection<B> {
    /// Creates the connection and queues the HandshakeV10 greeting.
    pub fn new(backend: B, config: ProtoConfig) -> Self {
        let mut rng = rand::thread_rng();
        let mut scramble = [0u8; 20];
        for b in scramble.iter_mut() {
            // Printable, no NUL (C clients treat the scramble as a C string) and no '$'.
            loop {
                let c: u8 = rng.gen_range(0x21..0x7F);
                if c != b'$' {
                    *b = c;
                    break;
                }
            }
        }
        let mut c = Connection {
            backend,
            config,
            phase: Phase::Greeting,
            scramble,
            caps: CapabilityFlags::empty(),
            expect_seq: 1,
            send_seq: 0,
            input: Vec::new(),
            in_pos: 0,
            output: Vec::new(),
            scratch: Vec::new(),
            out_pos: 0,
            multi_statements: false,
            statements: StmtMap::new(),
            next_stmt_id: 1,
            login: PendingLogin::default(),
            close_reason: None,
            disconnected: false,
            logged_in: false,
            tls: false,
        };
        c.queue_greeting();
        c
    }

    /// What this connection offers: [`SERVER_CAPABILITIES`], plus CLIENT_SSL with TLS.
    fn server_capabilities(&self) -> CapabilityFlags {
        if self.config.tls {
            SERVER_CAPABILITIES | CapabilityFlags::CLIENT_SSL
        } else {
            SERVER_CAPABILITIES
        }
    }

    fn queue_greeting(&mut self) {
        let caps = self.server_capabilities().bits();
        let mut p = Vec::with_capacity(128);
        p.push(10);
        p.extend_from_slice(self.config.server_version.as_bytes());
        p.push(0);
        p.extend_from_slice(&self.config.connection_id.to_le_bytes());
        p.extend_from_slice(&self.scramble[..8]);
        p.push(0);
        p.extend_from_slice(&(caps as u16).to_le_bytes());
        p.push(SERVER_COLLATION);
        p.extend_from_slice(&StatusFlags::SERVER_STATUS_AUTOCOMMIT.bits().to_le_bytes());
        p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
        p.push(21);
        p.extend_from_slice(&[0u8; 10]);
        p.extend_from_slice(&self.scramble[8..]);
        p.push(0);
        p.extend_from_slice(self.config.default_auth_plugin.name().as_bytes());
        p.push(0);
        self.send(&p);
    }

    // ----- accessors -------------------------------------------------------------------------

    /// The session.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The session, mutably.
    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    /// Connection id from the config.
    pub fn connection_id(&self) -> u32 {
        self.config.connection_id
    }

    /// Login completed successfully.
    pub fn is_authenticated(&self) -> bool {
        self.phase == Phase::Command
    }

    /// Login succeeded at some point (still true after the connection closed).
    pub fn logged_in(&self) -> bool {
        self.logged_in
    }

    /// The connection is closed (flush output, then close the socket).
    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// Why it closed, once closed.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.close_reason
    }

    /// A transaction is open (for high-priority scheduling).
    pub fn in_transaction(&self) -> bool {
        self.is_authenticated() && self.backend.status().in_transaction
    }

    /// Capabilities negotiated with the client (empty before the handshake response).
    pub fn capabilities(&self) -> CapabilityFlags {
        self.caps
    }

    /// The link was switched to TLS on the client's SSLRequest.
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// Takes the bytes fed but not processed. After [`Progress::StartTls`] these are the first
    /// bytes of the client's TLS handshake, which arrived with the SSLRequest.
    pub fn take_unprocessed_input(&mut self) -> Vec<u8> {
        let rest = self.input.split_off(self.in_pos);
        self.input.clear();
        self.in_pos = 0;
        rest
    }

    /// Bytes the client sent that no message has consumed yet (a pipelined command, a message
    /// still arriving).
    pub fn has_unprocessed_input(&self) -> bool {
        self.input.len() > self.in_pos
    }

    /// The client set CLIENT_INTERACTIVE (interactive_timeout applies).
    pub fn is_interactive(&self) -> bool {
        self.login.interactive
    }

    // ----- buffers ---------------------------------------------------------------------------

    /// Exchanges each of this connection's buffers that holds nothing (the unprocessed input,
    /// the unsent output, the reply scratch) with `spare`'s, which must hold nothing either.
    ///
    /// A server with many more connections than threads keeps one [`Buffers`] per thread and
    /// exchanges it before and after running a connection's command: the connection works in
    /// buffers the thread's last command left in the CPU's cache, and between commands it holds
    /// empty ones, so thousands of idle connections keep no buffer memory and a command does
    /// not start by missing the cache on its own. A buffer with bytes in it (a partial message,
    /// output the socket did not take) stays with its connection until it is empty. A spare
    /// buffer a large message grew past [`SPARE_KEEP`] is freed rather than kept by the thread.
    pub fn exchange_buffers(&mut self, spare: &mut Buffers) {
        debug_assert!(spare.input.is_empty() && spare.output.is_empty());
        if self.input.len() == self.in_pos {
            self.input.clear();
            self.in_pos = 0;
            std::mem::swap(&mut self.input, &mut spare.input);
        }
        if self.output.len() == self.out_pos {
            self.output.clear();
            self.out_pos = 0;
            std::mem::swap(&mut self.output, &mut spare.output);
        }
        self.scratch.clear();
        std::mem::swap(&mut self.scratch, &mut spare.scratch);
        for b in [&mut spare.input, &mut spare.output, &mut spare.scratch] {
            if b.capacity() > SPARE_KEEP {
                *b = Vec::new();
            }
        }
    }

    // ----- input -----------------------------------------------------------------------------

    /// Appends bytes read from the socket.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.in_pos > 0 && self.in_pos == self.input.len() {
            self.input.clear();
            self.in_pos = 0;
        }
        self.input.extend_from_slice(bytes);
    }

    /// Bytes buffered but not yet processed.
    pub fn buffered_input(&self) -> usize {
        self.input.len() - self.in_pos
    }

    fn max_payload(&self) -> usize {
        match self.phase {
            Phase::Command => self.backend.max_allowed_packet().max(1024),
            _ => MAX_LOGIN_PACKET,
        }
    }

    /// A complete message is buffered (or an error that `process` will report).
    pub fn has_command(&self) -> bool {
        if self.phase == Phase::Closed {
            return false;
        }
        !matches!(
            scan_message(
                &self.input[self.in_pos..],
                self.expect_seq,
                self.max_payload()
            ),
            Scan::NeedMore
        )
    }

    // ----- output ----------------------------------------------------------------------------

    /// Reply bytes not yet written to the socket.
    pub fn pending_output(&self) -> &[u8] {
        &self.output[self.out_pos..]
    }

    /// Marks `n` bytes of [`Connection::pending_output`] as written.
    pub fn consume_output(&mut self, n: usize) {
        self.out_pos = (self.out_pos + n).min(self.output.len());
        if self.out_pos == self.output.len() {
            self.output.clear();
            self.out_pos = 0;
        }
    }

    /// Takes all pending output at once (convenient for tests and blocking writers).
    pub fn take_output(&mut self) -> Vec<u8> {
        let out = self.output.split_off(self.out_pos);
        self.output.clear();
        self.out_pos = 0;
        out
    }

    fn send(&mut self, payload: &[u8]) {
        self.send_seq = write_message(&mut self.output, self.send_seq, payload);
    }

    fn status_flags(&self, more: bool) -> u16 {
        let mut f = StatusFlags::empty();
        if self.phase == Phase::Command {
            let s = self.backend.status();
            if s.in_transaction {
                f |= StatusFlags::SERVER_STATUS_IN_TRANS;
            }
            if s.autocommit {
                f |= StatusFlags::SERVER_STATUS_AUTOCOMMIT;
            }
        } else {
            f |= StatusFlags::SERVER_STATUS_AUTOCOMMIT;
        }
        if more {
            f |= StatusFlags::SERVER_MORE_RESULTS_EXISTS;
        }
        f.bits()
    }

    /// The reusable payload buffer, empty: every OK, column definition and row is built in it
    /// (a point select's answer took six allocations before). Give it back with
    /// [`Connection::put_scratch`].
    fn take_scratch(&mut self) -> Vec<u8> {
        let mut p = std::mem::take(&mut self.scratch);
        p.clear();
        p
    }

    /// Keeps `p` for the next payload, unless a large one grew it (then it is freed).
    fn put_scratch(&mut self, p: Vec<u8>) {
        if p.capacity() <= SCRATCH_KEEP {
            self.scratch = p;
        }
    }

    fn send_ok(&mut self, ok: &OkInfo, more: bool, header: u8) {
        let mut p = self.take_scratch();
        p.push(header);
        put_lenenc_int(&mut p, ok.affected_rows);
        put_lenenc_int(&mut p, ok.last_insert_id);
        p.extend_from_slice(&self.status_flags(more).to_le_bytes());
        p.extend_from_slice(&ok.warnings.to_le_bytes());
        if !ok.info.is_empty() {
            // MySQL's net_send_ok stores the message length-encoded, and clients parse it so.
            put_lenenc_bytes(&mut p, ok.info.as_bytes());
        }
        self.send(&p);
        self.put_scratch(p);
    }

    fn send_eof(&mut self, warnings: u16, more: bool) {
        if self.caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF) {
            let ok = OkInfo {
                warnings,
                ..OkInfo::default()
            };
            self.send_ok(&ok, more, 0xFE);
        } else {
            let [w0, w1] = warnings.to_le_bytes();
            let [s0, s1] = self.status_flags(more).to_le_bytes();
            self.send(&[0xFE, w0, w1, s0, s1]);
        }
    }

    /// An EOF after column definitions (only without DEPRECATE_EOF).
    fn send_mid_eof(&mut self) {
        if !self.caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF) {
            self.send_eof(0, false);
        }
    }

    fn send_err(&mut self, e: &ErrorInfo) {
        let mut p = Vec::with_capacity(9 + e.message.len());
        p.push(0xFF);
        p.extend_from_slice(&e.code.to_le_bytes());
        p.push(b'#');
        p.extend_from_slice(&e.state);
        p.extend_from_slice(e.message.as_bytes());
        self.send(&p);
    }

    fn column_def(&self, c: &Column, with_default: bool) -> Vec<u8> {
        let mut p = Vec::with_capacity(64);
        column_def_into(&mut p, c, with_default);
        p
    }

    /// Queues the column definitions of `columns`.
    fn send_column_defs(&mut self, columns: &[Column]) {
        let mut p = self.take_scratch();
        for c in columns {
            p.clear();
            column_def_into(&mut p, c, false);
            self.send(&p);
        }
        self.put_scratch(p);
    }

    /// Encodes a whole result set into a scratch buffer first, so that a value that cannot be
    /// encoded turns into an ERR packet instead of a half-sent result.
    fn send_result_set(&mut self, rs: &ResultSet, binary: bool, more: bool) {
        let start_len = self.output.len();
        let start_seq = self.send_seq;
        let mut count = self.take_scratch();
        put_lenenc_int(&mut count, rs.columns.len() as u64);
        self.send(&count);
        self.put_scratch(count);
        self.send_column_defs(&rs.columns);
        self.send_mid_eof();
        let bad = match rs.rows.malformed() {
            Some(ri) => Some(format!("row {ri} does not have {} values", rs.rows.width())),
            None if rs.rows.width() != rs.columns.len() && !rs.rows.is_empty() => Some(format!(
                "rows of {} values for {} columns",
                rs.rows.width(),
                rs.columns.len()
            )),
            None => None,
        };
        if let Some(what) = bad {
            let e = ErrorInfo::coded(
                shoal_errors::ER_UNKNOWN_ERROR,
                format!("internal error: {what}"),
            );
            self.output.truncate(start_len);
            self.send_seq = start_seq;
            self.send_err(&e);
            return;
        }
        let mut row = self.take_scratch();
        for values in rs.rows.iter() {
            row.clear();
            if binary {
                row.push(0);
                let bitmap_at = row.len();
                row.resize(bitmap_at + (rs.columns.len() + 9) / 8, 0);
                for (i, (v, c)) in values.iter().zip(rs.columns.iter()).enumerate() {
                    if matches!(v, Value::NULL) {
                        row[bitmap_at + (i + 2) / 8] |= 1 << ((i + 2) % 8);
                        continue;
                    }
                    let unsigned = c.flags.contains(ColumnFlags::UNSIGNED_FLAG);
                    if let Err(e) = encode_binary(&mut row, v, c.column_type, unsigned, c.decimals)
                    {
                        self.output.truncate(start_len);
                        self.send_seq = start_seq;
                        self.send_err(&ErrorInfo::coded(
                            shoal_errors::ER_UNKNOWN_ERROR,
                            format!("internal error in column '{}': {e}", c.name),
                        ));
                        return;
                    }
                }
            } else {
                for (v, c) in values.iter().zip(rs.columns.iter()) {
                    // A string is sent as its own bytes, without a copy.
                    if let Value::Bytes(b) = v {
                        put_lenenc_bytes(&mut row, b);
                        continue;
                    }
                    match text_of(v, c.column_type, c.decimals) {
                        None => row.push(0xFB),
                        Some(t) => put_lenenc_bytes(&mut row, &t),
                    }
                }
            }
            self.send(&row);
        }
        self.put_scratch(row);
        self.send_eof(rs.warnings, more);
    }

    fn send_response(&mut self, r: &Response, binary: bool, more: bool) {
        match r {
            Response::Ok(ok) => self.send_ok(ok, more, 0x00),
            Response::Rows(rs) => self.send_result_set(rs, binary, more),
        }
    }

    // ----- processing ------------------------------------------------------------------------

    fn close(&mut self, reason: CloseReason) -> Progress {
        if self.phase != Phase::Closed {
            self.phase = Phase::Closed;
            self.close_reason = Some(reason);
            self.disconnect_backend();
        }
        Progress::Close
    }

    fn disconnect_backend(&mut self) {
        if !self.disconnected {
            self.disconnected = true;
            self.backend.disconnect();
        }
    }

    /// The network layer gives up on this connection (EOF, error, timeout, KILL). Idempotent.
    pub fn shutdown(&mut self) {
        self.close(CloseReason::Shutdown);
    }

    /// Queues an error packet and closes (e.g. ER_CLIENT_INTERACTION_TIMEOUT 4031 before closing
    /// an idle connection, or 1053 on server shutdown). Sent with the sequence id a reply to the
    /// next command would have, as MySQL does for unsolicited errors.
    pub fn close_with_error(&mut self, e: &ErrorInfo) {
        if self.phase == Phase::Closed {
            return;
        }
        if self.phase == Phase::Command {
            self.send_seq = 1;
        }
        self.send_err(e);
        self.close(CloseReason::Shutdown);
    }

    /// Processes at most one complete message. See [`Progress`].
    pub fn process(&mut self) -> Progress {
        if self.phase == Phase::Closed {
            return Progress::Close;
        }
        let scan = scan_message(
            &self.input[self.in_pos..],
            self.expect_seq,
            self.max_payload(),
        );
        let (wire_len, payload_len, last_seq) = match scan {
            Scan::NeedMore => return Progress::NeedMore,
            Scan::Complete {
                wire_len,
                payload_len,
                last_seq,
            } => (wire_len, payload_len, last_seq),
            Scan::OutOfOrder => {
                self.send_seq = self.expect_seq.wrapping_add(1);
                self.send_err(&ErrorInfo::coded(
                    shoal_errors::ER_NET_PACKETS_OUT_OF_ORDER,
                    "Got packets out of order",
                ));
                return self.close(CloseReason::ProtocolError);
            }
            Scan::TooLarge => {
                self.send_seq = self.expect_seq.wrapping_add(1);
                self.send_err(&ErrorInfo::coded(
                    shoal_errors::ER_NET_PACKET_TOO_LARGE,
                    "Got a packet bigger than 'max_allowed_packet' bytes",
                ));
                let reason = if self.phase == Phase::Command {
                    CloseReason::ProtocolError
                } else {
                    CloseReason::LoginFailed
                };
                return self.close(reason);
            }
        };
        let payload = gather_payload(&self.input[self.in_pos..], wire_len, payload_len);
        self.in_pos += wire_len;
        if self.in_pos == self.input.len() {
            self.input.clear();
            self.in_pos = 0;
        } else if self.in_pos > 1 << 20 {
            self.input.drain(..self.in_pos);
            self.in_pos = 0;
        }
        self.send_seq = last_seq.wrapping_add(1);
        match self.phase {
            Phase::Greeting => self.handshake_response(&payload),
            Phase::AuthSwitch => self.auth_switch_response(&payload),
            Phase::Sha2Full => self.sha2_full_response(&payload),
            Phase::Command => {
                let p = self.command(&payload);
                if self.phase == Phase::Command {
                    self.expect_seq = 0;
                }
                p
            }
            Phase::Closed => Progress::Close,
        }
    }

    fn bad_handshake(&mut self) -> Progress {
        self.send_err(&ErrorInfo::coded(
            shoal_errors::ER_HANDSHAKE_ERROR,
            "Bad handshake",
        ));
        self.close(CloseReason::LoginFailed)
    }

    fn handshake_response(&mut self, payload: &[u8]) -> Progress {
        // A 4.1 response is at least 32 bytes (caps, max packet, charset, filler) + user NUL;
        // an SSLRequest is exactly those 32 bytes.
        if payload.len() < 32 {
            return self.bad_handshake();
        }
        let client_caps = u32::from_le_bytes([payload[0], payload[1], payload[2], payload[3]]);
        let client_caps = CapabilityFlags::from_bits_truncate(client_caps);
        if !client_caps.contains(CapabilityFlags::CLIENT_PROTOCOL_41) {
            return self.bad_handshake();
        }
        if client_caps.contains(CapabilityFlags::CLIENT_SSL) && !self.tls {
            if !self.config.tls {
                // Not offered: an SSLRequest would be followed by a TLS handshake we cannot do.
                return self.bad_handshake();
            }
            // SSLRequest: the first 32 bytes of a HandshakeResponse41 (caps, max packet,
            // charset, filler), nothing else. The real response follows inside TLS with the
            // next sequence id.
            if payload.len() != 32 {
                return self.bad_handshake();
            }
            self.tls = true;
            self.expect_seq = self.send_seq;
            return Progress::StartTls;
        }
        if payload.len() < 33 {
            return self.bad_handshake();
        }
        if self.tls && !client_caps.contains(CapabilityFlags::CLIENT_SSL) {
            // The response inside TLS must keep the flag it started with.
            return self.bad_handshake();
        }
        let mut buf = mysql_common::io::ParseBuf(payload);
        let Ok(resp) = HandshakeResponse::deserialize((), &mut buf) else {
            return self.bad_handshake();
        };
        self.caps = client_caps & self.server_capabilities();
        self.multi_statements = self.caps.contains(CapabilityFlags::CLIENT_MULTI_STATEMENTS);
        let Ok(user) = std::str::from_utf8(resp.user()) else {
            return self.bad_handshake();
        };
        let database = match resp.db_name() {
            Some(d) if !d.is_empty() => match std::str::from_utf8(d) {
                Ok(d) => Some(d.to_string()),
                Err(_) => return self.bad_handshake(),
            },
            _ => None,
        };
        let mut attributes: Vec<(String, String)> = resp
            .connect_attributes()
            .map(|m| m.into_iter().collect())
            .unwrap_or_default();
        attributes.sort();
        self.login = PendingLogin {
            user: user.to_string(),
            database,
            attributes,
            interactive: client_caps.contains(CapabilityFlags::CLIENT_INTERACTIVE),
            plugin: AuthPlugin::NativePassword,
        };
        let plugin = resp
            .auth_plugin()
            .map(|p| String::from_utf8_lossy(p.as_bytes()).into_owned());
        let auth = resp.scramble_buf().to_vec();

        // Admission check happens before credentials are verified, as the client sees it
        // right after its handshake response.
        match self.config.admission.clone() {
            Admission::Open => {}
            Admission::RootOnly(e) if self.login.user != "root" => {
                self.send_err(&e);
                return self.close(CloseReason::LoginFailed);
            }
            Admission::RootOnly(_) => {}
            Admission::Refuse(e) => {
                self.send_err(&e);
                return self.close(CloseReason::LoginFailed);
            }
        }

        // A response without a plugin name is mysql_native_password's (pre-plugin clients).
        let client_plugin = match plugin.as_deref() {
            None | Some("") => Some(AuthPlugin::NativePassword),
            Some(name) => AuthPlugin::from_name(name),
        };
        let host = self.config.host.clone();
        let account_plugin = self.backend.auth_plugin(&self.login.user, &host);
        self.login.plugin = account_plugin;
        if client_plugin == Some(account_plugin) {
            return self.authenticate_with(&auth);
        }
        // Ask the client to switch to the account's plugin, with the same nonce.
        let mut p = vec![0xFE];
        p.extend_from_slice(account_plugin.name().as_bytes());
        p.push(0);
        p.extend_from_slice(&self.scramble);
        p.push(0);
        self.send(&p);
        self.expect_seq = self.send_seq;
        self.phase = Phase::AuthSwitch;
        Progress::Continue
    }

    fn auth_switch_response(&mut self, payload: &[u8]) -> Progress {
        let auth = payload.to_vec();
        self.authenticate_with(&auth)
    }

    /// The response to the account's plugin's challenge.
    fn authenticate_with(&mut self, auth: &[u8]) -> Progress {
        match self.login.plugin {
            AuthPlugin::NativePassword => self.finish_login(Credentials::Native(auth)),
            AuthPlugin::CachingSha2Password => self.finish_login(Credentials::Sha2Scramble(auth)),
        }
    }

    /// `caching_sha2_password`'s full authentication: the password in clear over a secure
    /// link, else `0x02` (send me the public key) or the RSA-encrypted password.
    fn sha2_full_response(&mut self, payload: &[u8]) -> Progress {
        if self.tls || self.config.local_socket {
            let password = clear_password(payload).to_vec();
            return self.finish_login(Credentials::Clear(&password));
        }
        let Some(rsa) = self.config.rsa.clone() else {
            // MySQL without key files: no way to send the password safely.
            return self.refuse_login();
        };
        if payload == [0x02] {
            let mut p = vec![0x01];
            p.extend_from_slice(rsa.public_pem().as_bytes());
            self.send(&p);
            self.expect_seq = self.send_seq;
            return Progress::Continue;
        }
        match rsa.decrypt_password(payload, &self.scramble) {
            Some(password) => self.finish_login(Credentials::Clear(&password)),
            None => self.refuse_login(),
        }
    }

    /// 1045 from the protocol itself (an undecryptable password, no RSA keys).
    fn refuse_login(&mut self) -> Progress {
        let e = ErrorInfo::coded(
            shoal_errors::ER_ACCESS_DENIED_ERROR,
            format!(
                "Access denied for user '{}'@'{}' (using password: YES)",
                self.login.user, self.config.host
            ),
        );
        self.send_err(&e);
        self.close(CloseReason::LoginFailed)
    }

    fn finish_login(&mut self, credentials: Credentials<'_>) -> Progress {
        let login = std::mem::take(&mut self.login);
        let scramble = self.scramble;
        let host = self.config.host.clone();
        let req = LoginRequest {
            user: &login.user,
            host: &host,
            scramble: &scramble,
            credentials,
            database: login.database.as_deref(),
            interactive: login.interactive,
            attributes: &login.attributes,
            tls: self.tls,
            secure_transport: self.tls || self.config.local_socket,
        };
        let result = self.backend.authenticate(&req);
        self.login = login;
        match result {
            Ok(()) => {
                if matches!(credentials, Credentials::Sha2Scramble(_))
                    && credentials.password_given()
                {
                    // Fast authentication success: the cache vouched for the scramble.
                    self.send(&[0x01, 0x03]);
                }
                self.phase = Phase::Command;
                self.logged_in = true;
                self.expect_seq = 0;
                self.send_ok(&OkInfo::default(), false, 0x00);
                Progress::Continue
            }
            Err(AuthError::FullAuthRequired)
                if matches!(credentials, Credentials::Sha2Scramble(_)) =>
            {
                self.send(&[0x01, 0x04]);
                self.expect_seq = self.send_seq;
                self.phase = Phase::Sha2Full;
                Progress::Continue
            }
            Err(AuthError::FullAuthRequired) => self.refuse_login(),
            Err(AuthError::Denied(e)) => {
                self.send_err(&e);
                self.close(CloseReason::LoginFailed)
            }
        }
    }

    fn command(&mut self, payload: &[u8]) -> Progress {
        let Some(&cmd) = payload.first() else {
            self.send_err(&ErrorInfo::coded(
                shoal_errors::ER_UNKNOWN_COM_ERROR,
                "Unknown command",
            ));
            return Progress::Continue;
        };
        let body = &payload[1..];
        if cmd == 0x01 {
            // COM_QUIT: no reply.
            return self.close(CloseReason::Quit);
        }
        self.backend.command_begin(cmd);
        let p = self.dispatch(cmd, body);
        self.backend.command_end();
        p
    }

    fn dispatch(&mut self, cmd: u8, body: &[u8]) -> Progress {
        match cmd {
            // COM_INIT_DB
            0x02 => {
                let db = String::from_utf8_lossy(body).into_owned();
                match self.backend.init_db(&db) {
                    Ok(()) => self.send_ok(&OkInfo::default(), false, 0x00),
                    Err(e) => self.send_err(&e),
                }
            }
            // COM_QUERY
            0x03 => self.com_query(body),
            // COM_FIELD_LIST
            0x04 => {
                let mut r = Reader::new(body);
                let table = r.null_str().unwrap_or(body);
                let wildcard = String::from_utf8_lossy(r.rest()).into_owned();
                let table = String::from_utf8_lossy(table).into_owned();
                match self.backend.field_list(&table, &wildcard) {
                    Ok(cols) => {
                        for c in &cols {
                            let def = self.column_def(c, true);
                            self.send(&def);
                        }
                        self.send_eof(0, false);
                    }
                    Err(e) => self.send_err(&e),
                }
            }
            // COM_STATISTICS: a bare string packet.
            0x09 => {
                let s = self.backend.statistics();
                self.send(s.as_bytes());
            }
            // COM_PROCESS_KILL
            0x0c => {
                let Some(id) = Reader::new(body).u32() else {
                    return self.malformed();
                };
                match self.backend.kill(id) {
                    Ok(()) => self.send_ok(&OkInfo::default(), false, 0x00),
                    Err(e) => self.send_err(&e),
                }
            }
            // COM_PING
            0x0e => self.send_ok(&OkInfo::default(), false, 0x00),
            // COM_STMT_PREPARE
            0x16 => self.stmt_prepare(body),
            // COM_STMT_EXECUTE
            0x17 => return self.stmt_execute(body),
            // COM_STMT_SEND_LONG_DATA: no reply.
            0x18 => {
                let mut r = Reader::new(body);
                let (Some(id), Some(param)) = (r.u32(), r.u16()) else {
                    return self.malformed();
                };
                let max = self.backend.max_allowed_packet();
                if let Some(st) = self.statements.get_mut(id) {
                    if param < st.params && !st.long_data_error {
                        let chunk = r.rest();
                        let data = st.long_data.entry(param).or_default();
                        if data.len() + chunk.len() > max {
                            // Memory stays bounded: nothing more is kept for this statement.
                            st.long_data = HashMap::new();
                            st.long_data_error = true;
                        } else {
                            data.extend_from_slice(chunk);
                        }
                    }
                }
            }
            // COM_STMT_CLOSE: no reply.
            0x19 => {
                let Some(id) = Reader::new(body).u32() else {
                    return self.malformed();
                };
                if self.statements.remove(id).is_some() {
                    self.backend.close_statement(id);
                }
            }
            // COM_STMT_RESET
            0x1a => {
                let Some(id) = Reader::new(body).u32() else {
                    return self.malformed();
                };
                match self.statements.get_mut(id) {
                    Some(st) => {
                        st.long_data.clear();
                        st.long_data_error = false;
                        self.send_ok(&OkInfo::default(), false, 0x00);
                    }
                    None => self.send_err(&unknown_stmt(id, "mysqld_stmt_reset")),
                }
            }
            // COM_SET_OPTION
            0x1b => match Reader::new(body).u16() {
                Some(0) => {
                    self.multi_statements = true;
                    self.send_eof(0, false);
                }
                Some(1) => {
                    self.multi_statements = false;
                    self.send_eof(0, false);
                }
                Some(_) => self.send_err(&ErrorInfo::coded(
                    shoal_errors::ER_UNKNOWN_COM_ERROR,
                    "Unknown command (COM_SET_OPTION value)",
                )),
                None => return self.malformed(),
            },
            // COM_RESET_CONNECTION
            0x1f => {
                let ids: Vec<u32> = self.statements.drain_ids();
                for id in ids {
                    self.backend.close_statement(id);
                }
                self.backend.reset_connection();
                self.multi_statements =
                    self.caps.contains(CapabilityFlags::CLIENT_MULTI_STATEMENTS);
                self.send_ok(&OkInfo::default(), false, 0x00);
            }
            _ => self.send_err(&ErrorInfo::coded(
                shoal_errors::ER_UNKNOWN_COM_ERROR,
                "Unknown command",
            )),
        }
        Progress::Continue
    }

    /// A command whose fixed fields are truncated: error, then close (the stream can no longer
    /// be trusted).
    fn malformed(&mut self) -> Progress {
        self.send_err(&ErrorInfo::coded(
            shoal_errors::ER_MALFORMED_PACKET,
            "Malformed communication packet.",
        ));
        self.close(CloseReason::ProtocolError)
    }

    fn com_query(&mut self, body: &[u8]) {
        let results = if body.iter().all(|b| b.is_ascii_whitespace()) {
            Vec::new()
        } else {
            self.backend.query_bytes(body, self.multi_statements)
        };
        if results.is_empty() {
            self.send_err(&ErrorInfo::coded(
                shoal_errors::ER_EMPTY_QUERY,
                "Query was empty",
            ));
            return;
        }
        let n = results.len();
        for (i, r) in results.iter().enumerate() {
            let more = i + 1 < n;
            match r {
                Ok(resp) => self.send_response(resp, false, more),
                Err(e) => {
                    self.send_err(e);
                    break;
                }
            }
        }
    }

    fn stmt_prepare(&mut self, body: &[u8]) {
        let id = self.next_stmt_id;
        match self.backend.prepare_bytes(id, body) {
            Ok(ok) if ok.columns.len() > u16::MAX as usize => {
                // The prepare-OK's column count is 16 bits: 65536 columns were announced as 0
                // and then all sent, and the client lost the thread (found by fuzzing).
                self.backend.close_statement(id);
                self.send_err(&ErrorInfo::coded(
                    shoal_errors::ER_TOO_MANY_FIELDS,
                    "Too many columns",
                ));
            }
            Ok(ok) => {
                self.next_stmt_id = self.next_stmt_id.wrapping_add(1).max(1);
                self.statements.insert(
                    id,
                    Statement {
                        params: ok.params,
                        ..Statement::default()
                    },
                );
                let mut p = vec![0x00];
                p.extend_from_slice(&id.to_le_bytes());
                p.extend_from_slice(&(ok.columns.len() as u16).to_le_bytes());
                p.extend_from_slice(&ok.params.to_le_bytes());
                p.push(0);
                p.extend_from_slice(&0u16.to_le_bytes());
                self.send(&p);
                if ok.params > 0 {
                    let mut param = Column::expr("?", ColumnType::MYSQL_TYPE_VAR_STRING);
                    param.charset = 63;
                    param.flags = ColumnFlags::BINARY_FLAG;
                    param.column_length = 0;
                    let def = self.column_def(&param, false);
                    for _ in 0..ok.params {
                        self.send(&def);
                    }
                    self.send_mid_eof();
                }
                if !ok.columns.is_empty() {
                    for c in &ok.columns {
                        let def = self.column_def(c, false);
                        self.send(&def);
                    }
                    self.send_mid_eof();
                }
            }
            Err(e) => self.send_err(&e),
        }
    }

    fn stmt_execute(&mut self, body: &[u8]) -> Progress {
        let mut r = Reader::new(body);
        let (Some(id), Some(_flags), Some(_iterations)) = (r.u32(), r.u8(), r.u32()) else {
            return self.malformed();
        };
        let Some(st) = self.statements.get_mut(id) else {
            self.send_err(&unknown_stmt(id, "mysqld_stmt_execute"));
            return Progress::Continue;
        };
        if st.long_data_error {
            self.send_err(&long_data_too_long());
            return Progress::Continue;
        }
        let params = match bind_params(st, &mut r) {
            Ok(p) => p,
            Err(BindError::Malformed) => return self.malformed(),
            Err(BindError::Reply(e)) => {
                self.send_err(&e);
                return Progress::Continue;
            }
        };
        match self.backend.execute(id, &params) {
            Ok(resp) => self.send_response(&resp, true, false),
            Err(e) => self.send_err(&e),
        }
        Progress::Continue
    }
}

/// A column definition packet's payload (Protocol::ColumnDefinition41), appended to `p`; with
/// `with_default`, COM_FIELD_LIST's trailing default (NULL).
fn column_def_into(p: &mut Vec<u8>, c: &Column, with_default: bool) {
    put_lenenc_bytes(p, b"def");
    put_lenenc_bytes(p, c.schema.as_bytes());
    put_lenenc_bytes(p, c.table.as_bytes());
    put_lenenc_bytes(p, c.org_table.as_bytes());
    put_lenenc_bytes(p, c.name.as_bytes());
    put_lenenc_bytes(p, c.org_name.as_bytes());
    p.push(0x0c);
    p.extend_from_slice(&c.charset.to_le_bytes());
    p.extend_from_slice(&c.column_length.to_le_bytes());
    p.push(c.column_type as u8);
    p.extend_from_slice(&c.flags.bits().to_le_bytes());
    p.push(c.decimals);
    p.extend_from_slice(&[0, 0]);
    if with_default {
        p.push(0xFB);
    }
}

impl<B: Backend> Drop for Connection<B> {
    fn drop(&mut self) {
        self.disconnect_backend();
    }
}

/// Why COM_STMT_EXECUTE's parameters could not be bound.
enum BindError {
    /// The packet is shorter than its statement's parameters need.
    Malformed,
    /// The error to send (1210: never bound, or a value that does not decode).
    Reply(ErrorInfo),
}

/// Decodes COM_STMT_EXECUTE's parameters for `st` (after the id, flags and iteration count):
/// the NULL bitmap, the types if the client sends them (remembered for later executions), then
/// the values, with COM_STMT_SEND_LONG_DATA chunks in place of theirs. The remembered types are
/// borrowed, not copied: this runs on every execute.
fn bind_params(st: &mut Statement, r: &mut Reader<'_>) -> Result<Vec<Value>, BindError> {
    let n = st.params as usize;
    let mut params = Vec::with_capacity(n);
    if n == 0 {
        st.long_data.clear();
        return Ok(params);
    }
    let bitmap = r.bytes(n.div_ceil(8)).ok_or(BindError::Malformed)?;
    let bound = r.u8().ok_or(BindError::Malformed)?;
    if bound == 1 {
        let mut types = Vec::with_capacity(n);
        for _ in 0..n {
            let (Some(t), Some(f)) = (r.u8(), r.u8()) else {
                return Err(BindError::Malformed);
            };
            types.push((t, f & 0x80 != 0));
        }
        st.types = Some(types);
    }
    let Some(types) = st.types.as_ref() else {
        // MySQL: parameters were never bound.
        st.long_data.clear();
        return Err(BindError::Reply(ErrorInfo::coded(
            shoal_errors::ER_WRONG_ARGUMENTS,
            "Incorrect arguments to mysqld_stmt_execute",
        )));
    };
    let mut long_data = std::mem::take(&mut st.long_data);
    for (i, &(t, unsigned)) in types.iter().enumerate() {
        if bitmap[i / 8] & (1 << (i % 8)) != 0 {
            params.push(Value::NULL);
            continue;
        }
        // Long data is rare: skip hashing the parameter number when there is none.
        let long = if long_data.is_empty() {
            None
        } else {
            long_data.remove(&(i as u16))
        };
        match long {
            Some(data) => params.push(Value::Bytes(data)),
            None => params.push(decode_param(r, t, unsigned, i).map_err(|e| {
                BindError::Reply(ErrorInfo::coded(
                    shoal_errors::ER_WRONG_ARGUMENTS,
                    format!("Incorrect arguments to mysqld_stmt_execute: {e}"),
                ))
            })?),
        }
    }
    Ok(params)
}

/// The error of COM_STMT_EXECUTE after a parameter's COM_STMT_SEND_LONG_DATA chunks outgrew
/// `max_allowed_packet`: MySQL's and MariaDB's (ER_UNKNOWN_ERROR with this text; the
/// connection stays usable).
fn long_data_too_long() -> ErrorInfo {
    ErrorInfo::coded(
        shoal_errors::ER_UNKNOWN_ERROR,
        "Parameter of prepared statement which is set through mysql_send_long_data() is longer \
         than 'max_allowed_packet' bytes",
    )
}

fn unknown_stmt(id: u32, what: &str) -> ErrorInfo {
    ErrorInfo::coded(
        shoal_errors::ER_UNKNOWN_STMT_HANDLER,
        format!("Unknown prepared statement handler ({id}) given to {what}"),
    )
}

/// `mysql_native_password` verification helper for backends: checks `response` against the
/// stored `SHA1(SHA1(password))` for the given scramble. An empty response matches only an
/// account without password (`stored == None`).
pub fn verify_native_password(
    scramble: &[u8; 20],
    response: &[u8],
    stored: Option<&[u8; 20]>,
) -> bool {
    use sha1::{Digest, Sha1};
    match stored {
        None => response.is_empty(),
        Some(stored) => {
            if response.len() != 20 {
                return false;
            }
            let mut h = Sha1::new();
            h.update(scramble);
            h.update(stored);
            let mask = h.finalize();
            let mut stage1 = [0u8; 20];
            for i in 0..20 {
                stage1[i] = response[i] ^ mask[i];
            }
            let check: [u8; 20] = Sha1::digest(stage1).into();
            &check == stored
        }
    }
}

/// `SHA1(SHA1(password))`, the form in which `mysql_native_password` accounts are stored.
pub fn native_password_hash(password: &str) -> [u8; 20] {
    use sha1::{Digest, Sha1};
    let s1 = Sha1::digest(password.as_bytes());
    Sha1::digest(s1).into()
}
