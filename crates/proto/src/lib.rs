//! MySQL wire protocol for the shoal server, sans-IO.
//!
//! The protocol consumes bytes that a connection handler has already read and produces the reply
//! bytes; it never touches a socket. All per-connection protocol state lives in one `Send` struct
//! ([`Connection`]), and one call of [`Connection::process`] processes exactly one command, so a
//! thread pool may move a connection to another thread between commands.
//!
//! The protocol knows nothing about SQL or storage: it talks to the session through the
//! [`Backend`] trait (see [`backend`]).
//!
//! Modules: [`packet`] (framing, multi-packet messages, checked reader), [`values`] (text and
//! binary value encodings, parameter decoding), [`connection`] (the state machine), [`auth`]
//! (authentication plugins: native and caching_sha2_password, the RSA key pair).

pub mod auth;
pub mod backend;
pub mod connection;
pub mod packet;
pub mod stmt_map;
pub mod values;

pub use auth::{AuthError, AuthPlugin, Credentials, RsaKeyPair};
pub use backend::{
    Backend, Column, ErrorInfo, LoginRequest, OkInfo, PrepareOk, Response, ResultSet, Rows,
    RowsIter, SessionStatus,
};
pub use connection::{
    native_password_hash, verify_native_password, Admission, Buffers, CloseReason, Connection,
    Progress, ProtoConfig, SERVER_CAPABILITIES,
};
pub use mysql_common::constants::{ColumnFlags, ColumnType};
pub use mysql_common::value::Value;
pub use stmt_map::StmtMap;
