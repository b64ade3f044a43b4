//! The seam between the wire protocol and the session that executes commands.
//!
//! The protocol layer decodes a command, calls one method of [`Backend`], and encodes what it
//! returns (OK, result set or error packet) according to the negotiated capabilities. Everything
//! SQL-, storage- or server-specific lives behind this trait, implemented by the server's session.
//! Errors cross this seam as [`ErrorInfo`]: a MySQL error code, SQLSTATE and message, already
//! mapped from the typed errors of the layer that raised them.

use std::sync::Arc;

use mysql_common::constants::{ColumnFlags, ColumnType};

pub use crate::auth::{AuthError, AuthPlugin, Credentials};
use mysql_common::value::Value;

/// A MySQL error as sent in an ERR packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorInfo {
    /// MySQL error number, e.g. 1064.
    pub code: u16,
    /// Five-character SQLSTATE, e.g. `*b"42000"`.
    pub state: [u8; 5],
    /// Human-readable message, as MySQL words it where MySQL has the same error.
    pub message: String,
}

impl ErrorInfo {
    /// An error of the table with its message.
    pub fn coded(code: shoal_errors::Code, message: impl Into<String>) -> Self {
        ErrorInfo::new(code.code, code.state, message)
    }

    /// Builds an error from its parts.
    pub fn new(code: u16, state: &str, message: impl Into<String>) -> Self {
        let mut s = [b'H', b'Y', b'0', b'0', b'0'];
        if state.len() == 5 {
            s.copy_from_slice(state.as_bytes());
        }
        ErrorInfo {
            code,
            state: s,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ErrorInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ERROR {} ({}): {}",
            self.code,
            String::from_utf8_lossy(&self.state),
            self.message
        )
    }
}

impl std::error::Error for ErrorInfo {}

/// One column definition of a result set (or of COM_FIELD_LIST).
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Database of the column's table ("" for expressions).
    pub schema: String,
    /// Table alias as written in the query ("" for expressions).
    pub table: String,
    /// Table name in the catalog.
    pub org_table: String,
    /// Column alias as written in the query (what clients show as the header).
    pub name: String,
    /// Column name in the catalog.
    pub org_name: String,
    /// Wire type; decides the binary-protocol encoding of values.
    pub column_type: ColumnType,
    /// NOT_NULL, PRI_KEY, UNSIGNED, BINARY, ... flags.
    pub flags: ColumnFlags,
    /// Maximum display length in characters times the charset's max bytes per char.
    pub column_length: u32,
    /// Decimal digits for DECIMAL/FLOAT/DOUBLE (31 = not fixed), 0 otherwise.
    pub decimals: u8,
    /// Character set id (33 = utf8mb3_general_ci, 45 = utf8mb4_general_ci, 63 = binary).
    pub charset: u16,
}

impl Column {
    /// A column of an expression (no table), with the default charset for its type.
    pub fn expr(name: impl Into<String>, column_type: ColumnType) -> Self {
        let name = name.into();
        let numeric = matches!(
            column_type,
            ColumnType::MYSQL_TYPE_TINY
                | ColumnType::MYSQL_TYPE_SHORT
                | ColumnType::MYSQL_TYPE_INT24
                | ColumnType::MYSQL_TYPE_LONG
                | ColumnType::MYSQL_TYPE_LONGLONG
                | ColumnType::MYSQL_TYPE_FLOAT
                | ColumnType::MYSQL_TYPE_DOUBLE
                | ColumnType::MYSQL_TYPE_NEWDECIMAL
        );
        Column {
            schema: String::new(),
            table: String::new(),
            org_table: String::new(),
            org_name: String::new(),
            name,
            column_type,
            flags: if numeric {
                ColumnFlags::BINARY_FLAG
            } else {
                ColumnFlags::empty()
            },
            column_length: if numeric { 21 } else { 1024 },
            decimals: match column_type {
                ColumnType::MYSQL_TYPE_FLOAT | ColumnType::MYSQL_TYPE_DOUBLE => 31,
                _ => 0,
            },
            charset: if numeric { 63 } else { 45 },
        }
    }
}

/// What an OK packet carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OkInfo {
    /// Rows changed (or matched, with CLIENT_FOUND_ROWS) as MySQL reports them.
    pub affected_rows: u64,
    /// LAST_INSERT_ID() produced by this statement, 0 if none.
    pub last_insert_id: u64,
    /// Number of warnings the statement produced.
    pub warnings: u16,
    /// Human-readable info, e.g. "Rows matched: 1  Changed: 1  Warnings: 0".
    pub info: String,
}

/// A fully materialised result set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResultSet {
    /// Column definitions, in order. Shared: a prepared statement's result sets all point at
    /// the descriptions converted once at PREPARE instead of copying them per execution.
    pub columns: Arc<[Column]>,
    /// Rows; each has exactly `columns.len()` values. `Value::NULL` is SQL NULL. Text values
    /// are `Value::Bytes`; the protocol renders every value as text for the text protocol and
    /// by its column type for the binary protocol.
    pub rows: Rows,
    /// Warnings produced while computing it.
    pub warnings: u16,
}

/// The rows of a result set, stored one after another in one vector (`width` values each):
/// one allocation for a result instead of one per row, which a 100-row range query paid twice
/// (building and dropping) for every row it sent.
#[derive(Debug, Clone, Default)]
pub struct Rows {
    /// Values per row.
    width: usize,
    /// How many rows (a row of zero values still counts).
    count: usize,
    /// Every row's values, row after row.
    values: Vec<Value>,
    /// The first row that did not have `width` values (padded with NULLs or cut to fit): the
    /// protocol answers an internal error instead of sending the result.
    malformed: Option<usize>,
}

impl Rows {
    /// No rows yet, room for `rows` rows of `width` values.
    pub fn with_capacity(width: usize, rows: usize) -> Rows {
        Rows {
            width,
            count: 0,
            values: Vec::with_capacity(width.saturating_mul(rows)),
            malformed: None,
        }
    }

    /// Appends one row of `width` values (a row of another length is cut or padded with NULL,
    /// and the rows are marked malformed, see [`Rows::malformed`]).
    pub fn push_row(&mut self, row: impl IntoIterator<Item = Value>) {
        let start = self.values.len();
        self.values.extend(row.into_iter().take(self.width + 1));
        let got = self.values.len() - start;
        if got != self.width {
            self.malformed.get_or_insert(self.count);
            self.values.resize(start + self.width, Value::NULL);
        }
        self.count += 1;
    }

    /// Values per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.count
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The first row that was pushed with the wrong number of values, if any.
    pub fn malformed(&self) -> Option<usize> {
        self.malformed
    }

    /// The rows in order, each as its values.
    pub fn iter(&self) -> RowsIter<'_> {
        self.into_iter()
    }
}

/// The same rows (no rows are the same whatever their width).
impl PartialEq for Rows {
    fn eq(&self, other: &Rows) -> bool {
        self.count == other.count
            && self.values == other.values
            && (self.count == 0 || self.width == other.width)
            && self.malformed == other.malformed
    }
}

impl std::ops::Index<usize> for Rows {
    type Output = [Value];

    fn index(&self, i: usize) -> &[Value] {
        assert!(i < self.count, "row {i} of {}", self.count);
        &self.values[i * self.width..(i + 1) * self.width]
    }
}

impl<'a> IntoIterator for &'a Rows {
    type Item = &'a [Value];
    type IntoIter = RowsIter<'a>;

    fn into_iter(self) -> RowsIter<'a> {
        RowsIter {
            rows: self,
            next: 0,
        }
    }
}

/// The rows of [`Rows`] in order.
pub struct RowsIter<'a> {
    rows: &'a Rows,
    /// The next row's number.
    next: usize,
}

impl<'a> Iterator for RowsIter<'a> {
    type Item = &'a [Value];

    fn next(&mut self) -> Option<&'a [Value]> {
        let r = self.rows;
        (self.next < r.count).then(|| {
            self.next += 1;
            &r.values[(self.next - 1) * r.width..self.next * r.width]
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.rows.count - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for RowsIter<'_> {}

/// Rows of the first row's width.
impl From<Vec<Vec<Value>>> for Rows {
    fn from(rows: Vec<Vec<Value>>) -> Rows {
        let mut out = Rows::with_capacity(rows.first().map_or(0, Vec::len), rows.len());
        for r in rows {
            out.push_row(r);
        }
        out
    }
}

/// The result of one statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    /// The statement returns no rows.
    Ok(OkInfo),
    /// The statement returns rows.
    Rows(ResultSet),
}

/// What COM_STMT_PREPARE returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrepareOk {
    /// Number of `?` placeholders.
    pub params: u16,
    /// Result columns, if the statement returns rows (may be empty).
    pub columns: Vec<Column>,
}

/// Session state the protocol puts in OK/EOF status flags and uses for scheduling.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionStatus {
    /// A transaction is open (SERVER_STATUS_IN_TRANS).
    pub in_transaction: bool,
    /// autocommit is on (SERVER_STATUS_AUTOCOMMIT).
    pub autocommit: bool,
}

/// What a client sent in its handshake response, for the backend to authenticate.
#[derive(Debug, Clone)]
pub struct LoginRequest<'a> {
    /// User name.
    pub user: &'a str,
    /// Client host as the server sees it (`127.0.0.1`, `localhost` for the Unix socket).
    pub host: &'a str,
    /// The 20-byte nonce sent in the greeting (and in an auth switch).
    pub scramble: &'a [u8; 20],
    /// What the client sent to prove its password, by plugin (see [`crate::auth`]).
    pub credentials: Credentials<'a>,
    /// Database requested with CONNECT_WITH_DB.
    pub database: Option<&'a str>,
    /// Whether the client set CLIENT_INTERACTIVE (interactive_timeout applies instead of
    /// wait_timeout).
    pub interactive: bool,
    /// Connection attributes (`_client_name`, `program_name`, ...).
    pub attributes: &'a [(String, String)],
    /// The client switched the link to TLS (what `REQUIRE SSL` asks for).
    pub tls: bool,
    /// TLS or a Unix socket (what `require_secure_transport` asks for, as in MySQL).
    pub secure_transport: bool,
}

/// The session side of a connection: everything the protocol cannot decide by itself.
///
/// One value per connection, owned by the protocol's connection state, so it must be `Send`.
/// Every method runs on whatever thread currently serves the connection.
pub trait Backend: Send {
    /// The authentication plugin of the account `user` logs in as from `host`; for an unknown
    /// account the server's default (`default_authentication_plugin`), so that the exchange
    /// does not tell a probe whether the account exists.
    fn auth_plugin(&mut self, user: &str, host: &str) -> AuthPlugin;

    /// Verifies credentials and, if given, the initial database. Errors: 1045 (access denied),
    /// 1049 (unknown database), 1040 (too many connections), or
    /// [`AuthError::FullAuthRequired`] for a `caching_sha2_password` scramble the server's
    /// cache cannot verify (the protocol then asks for the password and calls again with
    /// [`Credentials::Clear`]).
    fn authenticate(&mut self, login: &LoginRequest<'_>) -> Result<(), AuthError>;

    /// Runs COM_QUERY text. With `multi_statements` the text may hold several statements
    /// separated by `;`; results are returned in order and execution stops after the first
    /// error, which is the last element.
    fn query(&mut self, sql: &str, multi_statements: bool) -> Vec<Result<Response, ErrorInfo>>;

    /// Runs COM_QUERY as the client sent it: bytes in its character set, which need not be
    /// UTF-8 (binary data in a string literal). The default reads them as UTF-8, replacing
    /// what is not, and calls [`Backend::query`]; a backend that can keep such bytes (the
    /// session turns those literals into hex literals) overrides it.
    fn query_bytes(
        &mut self,
        sql: &[u8],
        multi_statements: bool,
    ) -> Vec<Result<Response, ErrorInfo>> {
        self.query(&String::from_utf8_lossy(sql), multi_statements)
    }

    /// COM_INIT_DB.
    fn init_db(&mut self, database: &str) -> Result<(), ErrorInfo>;

    /// COM_FIELD_LIST: column definitions of `table` whose names match the LIKE `wildcard`.
    fn field_list(&mut self, table: &str, wildcard: &str) -> Result<Vec<Column>, ErrorInfo>;

    /// COM_STATISTICS: the one-line status string (`Uptime: ...  Threads: ...`).
    fn statistics(&mut self) -> String;

    /// COM_PROCESS_KILL: kill connection `id`.
    fn kill(&mut self, id: u32) -> Result<(), ErrorInfo>;

    /// COM_RESET_CONNECTION: roll back, drop temporary state, user variables and prepared
    /// statements, reset session variables to their global values.
    fn reset_connection(&mut self);

    /// COM_STMT_PREPARE under the protocol-assigned `stmt_id`.
    fn prepare(&mut self, stmt_id: u32, sql: &str) -> Result<PrepareOk, ErrorInfo>;

    /// COM_STMT_PREPARE as the client sent it: bytes that need not be UTF-8 (binary data in a
    /// string literal), as for [`Backend::query_bytes`]. The default reads them as UTF-8,
    /// replacing what is not, and calls [`Backend::prepare`].
    fn prepare_bytes(&mut self, stmt_id: u32, sql: &[u8]) -> Result<PrepareOk, ErrorInfo> {
        self.prepare(stmt_id, &String::from_utf8_lossy(sql))
    }

    /// COM_STMT_EXECUTE with decoded parameters (long data already merged in).
    fn execute(&mut self, stmt_id: u32, params: &[Value]) -> Result<Response, ErrorInfo>;

    /// COM_STMT_CLOSE (no reply is sent).
    fn close_statement(&mut self, stmt_id: u32);

    /// Called before each command with its command byte (for `Questions`, `Com_*`, the
    /// process list and KILL QUERY bookkeeping), and after it.
    fn command_begin(&mut self, command: u8);
    /// See [`Backend::command_begin`].
    fn command_end(&mut self);

    /// Current transaction/autocommit state for status flags.
    fn status(&self) -> SessionStatus;

    /// The session's `max_allowed_packet`; larger commands get error 1153.
    fn max_allowed_packet(&self) -> usize;

    /// The connection is going away (quit, error or network loss): roll back and release.
    fn disconnect(&mut self);
}

#[cfg(test)]
mod tests {
    use super::{Rows, Value};

    fn int(i: i64) -> Value {
        Value::Int(i)
    }

    /// Rows keep their order and width; index, iteration and equality see rows, not the flat
    /// vector; a row of the wrong length is fitted and reported.
    #[test]
    fn rows_are_stored_flat_and_read_by_row() {
        let mut r = Rows::with_capacity(2, 3);
        r.push_row([int(1), int(2)]);
        r.push_row(vec![int(3), Value::NULL]);
        assert_eq!((r.len(), r.width(), r.malformed()), (2, 2, None));
        assert_eq!(&r[1], &[int(3), Value::NULL]);
        let seen: Vec<&[Value]> = r.iter().collect();
        assert_eq!(seen, [&[int(1), int(2)][..], &[int(3), Value::NULL][..]]);
        assert_eq!(r.iter().len(), 2);
        assert_eq!(
            r,
            Rows::from(vec![vec![int(1), int(2)], vec![int(3), Value::NULL]])
        );
        assert_eq!(Rows::with_capacity(3, 0), Rows::from(Vec::new()));
        r.push_row([int(4)]);
        r.push_row([int(5), int(6), int(7)]);
        assert_eq!(r.malformed(), Some(2));
        assert_eq!(
            (r.len(), &r[2], &r[3]),
            (4, &[int(4), Value::NULL][..], &[int(5), int(6)][..])
        );
        // Rows of no values still count.
        let mut z = Rows::with_capacity(0, 2);
        z.push_row([]);
        z.push_row([]);
        assert_eq!((z.len(), z.iter().count()), (2, 2));
    }
}
