//! Shared test harness: a tiny blocking TCP server around `Connection` (one thread per
//! connection) with a small scripted `Backend`, plus a raw-socket client for byte-level tests.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use shoal_proto::{
    native_password_hash, verify_native_password, AuthError, AuthPlugin, Backend, Column,
    ColumnFlags, ColumnType, Connection, Credentials, ErrorInfo, LoginRequest, OkInfo, PrepareOk,
    Progress, ProtoConfig, Response, ResultSet, Rows, SessionStatus, Value,
};

/// A scripted backend. Users: `root`/`pw`, `nopw` with an empty password.
pub struct TestBackend {
    pub max_allowed_packet: usize,
    pub db: Option<String>,
    pub in_trans: bool,
    pub prepared: std::collections::HashMap<u32, String>,
    /// The last login attempt said the link was TLS.
    pub last_login_tls: bool,
}

impl TestBackend {
    pub fn new(max_allowed_packet: usize) -> Self {
        TestBackend {
            max_allowed_packet,
            db: None,
            in_trans: false,
            prepared: Default::default(),
            last_login_tls: false,
        }
    }
}

pub fn col(name: &str, t: ColumnType, flags: ColumnFlags) -> Column {
    let mut c = Column::expr(name, t);
    c.flags |= flags;
    c
}

/// One row with every value type.
pub fn all_types() -> ResultSet {
    use ColumnType::*;
    let u = ColumnFlags::UNSIGNED_FLAG;
    let n = ColumnFlags::empty();
    ResultSet {
        columns: vec![
            col("tiny", MYSQL_TYPE_TINY, n),
            col("utiny", MYSQL_TYPE_TINY, u),
            col("short", MYSQL_TYPE_SHORT, n),
            col("long", MYSQL_TYPE_LONG, n),
            col("ulong", MYSQL_TYPE_LONG, u),
            col("longlong", MYSQL_TYPE_LONGLONG, n),
            col("ulonglong", MYSQL_TYPE_LONGLONG, u),
            col("float", MYSQL_TYPE_FLOAT, n),
            col("double", MYSQL_TYPE_DOUBLE, n),
            col("decimal", MYSQL_TYPE_NEWDECIMAL, n),
            col("string", MYSQL_TYPE_VAR_STRING, n),
            col("blob", MYSQL_TYPE_BLOB, ColumnFlags::BINARY_FLAG),
            col("null", MYSQL_TYPE_LONG, n),
            col("date", MYSQL_TYPE_DATE, n),
            col("datetime", MYSQL_TYPE_DATETIME, n),
            col("time", MYSQL_TYPE_TIME, n),
        ]
        .into(),
        rows: vec![vec![
            Value::Int(-5),
            Value::UInt(250),
            Value::Int(-30000),
            Value::Int(-2_000_000_000),
            Value::UInt(4_000_000_000),
            Value::Int(i64::MIN),
            Value::UInt(u64::MAX),
            Value::Float(1.5),
            Value::Double(-2.25),
            Value::Bytes(b"12345.678".to_vec()),
            Value::Bytes("héllo wörld".as_bytes().to_vec()),
            Value::Bytes(vec![0, 1, 2, 255, 0]),
            Value::NULL,
            Value::Date(2024, 2, 29, 0, 0, 0, 0),
            Value::Date(1999, 12, 31, 23, 59, 58, 123456),
            Value::Time(true, 1, 2, 3, 4, 0),
        ]]
        .into(),
        warnings: 0,
    }
}

fn one(name: &str, v: Value) -> Response {
    let t = match v {
        Value::Int(_) | Value::UInt(_) => ColumnType::MYSQL_TYPE_LONGLONG,
        _ => ColumnType::MYSQL_TYPE_VAR_STRING,
    };
    Response::Rows(ResultSet {
        columns: vec![Column::expr(name, t)].into(),
        rows: vec![vec![v]].into(),
        warnings: 0,
    })
}

fn value_column(i: usize, v: &Value) -> Column {
    use ColumnType::*;
    match v {
        Value::NULL => Column::expr(format!("p{i}"), MYSQL_TYPE_NULL),
        Value::Int(_) => Column::expr(format!("p{i}"), MYSQL_TYPE_LONGLONG),
        Value::UInt(_) => col(
            &format!("p{i}"),
            MYSQL_TYPE_LONGLONG,
            ColumnFlags::UNSIGNED_FLAG,
        ),
        Value::Float(_) => Column::expr(format!("p{i}"), MYSQL_TYPE_FLOAT),
        Value::Double(_) => Column::expr(format!("p{i}"), MYSQL_TYPE_DOUBLE),
        Value::Bytes(_) => col(&format!("p{i}"), MYSQL_TYPE_BLOB, ColumnFlags::BINARY_FLAG),
        Value::Date(..) => Column::expr(format!("p{i}"), MYSQL_TYPE_DATETIME),
        Value::Time(..) => Column::expr(format!("p{i}"), MYSQL_TYPE_TIME),
    }
}

impl TestBackend {
    fn run(&mut self, sql: &str) -> Result<Response, ErrorInfo> {
        let s = sql.trim();
        let lower = s.to_ascii_lowercase();
        if lower == "select @@max_allowed_packet" {
            return Ok(one(
                "@@max_allowed_packet",
                Value::UInt(self.max_allowed_packet as u64),
            ));
        }
        if lower == "select @@socket" {
            return Ok(one("@@socket", Value::NULL));
        }
        if lower == "types" {
            return Ok(Response::Rows(all_types()));
        }
        if lower == "begin" {
            self.in_trans = true;
            return Ok(Response::Ok(OkInfo::default()));
        }
        if lower == "commit" {
            self.in_trans = false;
            return Ok(Response::Ok(OkInfo::default()));
        }
        if lower == "select database()" {
            return Ok(one(
                "DATABASE()",
                self.db
                    .clone()
                    .map(|d| Value::Bytes(d.into_bytes()))
                    .unwrap_or(Value::NULL),
            ));
        }
        if let Some(rest) = lower.strip_prefix("select ") {
            if let Ok(n) = rest.parse::<i64>() {
                return Ok(one(rest, Value::Int(n)));
            }
        }
        if let Some(rest) = lower.strip_prefix("repeat ") {
            let n: usize = rest
                .parse()
                .map_err(|_| ErrorInfo::new(1064, "42000", "bad"))?;
            return Ok(one("r", Value::Bytes(vec![b'a'; n])));
        }
        if let Some(rest) = lower.strip_prefix("rows ") {
            let n: usize = rest
                .parse()
                .map_err(|_| ErrorInfo::new(1064, "42000", "bad"))?;
            return Ok(Response::Rows(ResultSet {
                columns: vec![Column::expr("i", ColumnType::MYSQL_TYPE_LONGLONG)].into(),
                rows: (0..n)
                    .map(|i| vec![Value::Int(i as i64)])
                    .collect::<Vec<_>>()
                    .into(),
                warnings: 0,
            }));
        }
        if let Some(rest) = s.strip_prefix("LEN ") {
            // Length of the statement argument (to check large incoming commands).
            return Ok(one("len", Value::UInt(rest.len() as u64)));
        }
        if lower.starts_with("insert") {
            return Ok(Response::Ok(OkInfo {
                affected_rows: 3,
                last_insert_id: 42,
                warnings: 1,
                info: "Records: 3  Duplicates: 0  Warnings: 1".into(),
            }));
        }
        if lower == "ragged" {
            // A row with fewer values than columns (a backend bug): an error, not a short row.
            let mut rows = Rows::with_capacity(2, 2);
            rows.push_row([Value::Int(1), Value::Int(2)]);
            rows.push_row([Value::Int(3)]);
            return Ok(Response::Rows(ResultSet {
                columns: vec![
                    Column::expr("a", ColumnType::MYSQL_TYPE_LONGLONG),
                    Column::expr("b", ColumnType::MYSQL_TYPE_LONGLONG),
                ]
                .into(),
                rows,
                warnings: 0,
            }));
        }
        if lower == "bad binary" {
            // A value that cannot be encoded in its column type (a backend bug): must be an
            // error, not a wrong row.
            return Ok(Response::Rows(ResultSet {
                columns: vec![Column::expr("x", ColumnType::MYSQL_TYPE_LONG)].into(),
                rows: vec![vec![Value::Bytes(b"not a number".to_vec())]].into(),
                warnings: 0,
            }));
        }
        Err(ErrorInfo::new(
            1064,
            "42000",
            format!("You have an error in your SQL syntax near '{s}'"),
        ))
    }
}

impl Backend for TestBackend {
    fn auth_plugin(&mut self, _user: &str, _host: &str) -> AuthPlugin {
        AuthPlugin::NativePassword
    }

    fn authenticate(&mut self, login: &LoginRequest<'_>) -> Result<(), AuthError> {
        self.last_login_tls = login.tls;
        let stored = match login.user {
            "root" => Some(native_password_hash("pw")),
            "nopw" => None,
            _ => {
                return Err(ErrorInfo::new(
                    1045,
                    "28000",
                    format!("Access denied for user '{}'@'{}'", login.user, login.host),
                )
                .into())
            }
        };
        let Credentials::Native(response) = login.credentials else {
            return Err(ErrorInfo::new(1045, "28000", "not mysql_native_password").into());
        };
        if !verify_native_password(login.scramble, response, stored.as_ref()) {
            return Err(ErrorInfo::new(
                1045,
                "28000",
                format!(
                    "Access denied for user '{}'@'{}' (using password: {})",
                    login.user,
                    login.host,
                    if login.credentials.password_given() {
                        "YES"
                    } else {
                        "NO"
                    }
                ),
            )
            .into());
        }
        if let Some(db) = login.database {
            self.init_db(db)?;
        }
        Ok(())
    }

    fn query(&mut self, sql: &str, multi: bool) -> Vec<Result<Response, ErrorInfo>> {
        let parts: Vec<&str> = if multi {
            sql.split(';').filter(|p| !p.trim().is_empty()).collect()
        } else {
            vec![sql]
        };
        let mut out = Vec::new();
        for p in parts {
            let r = self.run(p);
            let stop = r.is_err();
            out.push(r);
            if stop {
                break;
            }
        }
        out
    }

    fn init_db(&mut self, database: &str) -> Result<(), ErrorInfo> {
        if database == "nosuchdb" {
            return Err(ErrorInfo::new(
                1049,
                "42000",
                format!("Unknown database '{database}'"),
            ));
        }
        self.db = Some(database.to_string());
        Ok(())
    }

    fn field_list(&mut self, table: &str, _wildcard: &str) -> Result<Vec<Column>, ErrorInfo> {
        if table != "t1" {
            return Err(ErrorInfo::new(
                1146,
                "42S02",
                format!("Table 'db.{table}' doesn't exist"),
            ));
        }
        let mut a = Column::expr("id", ColumnType::MYSQL_TYPE_LONG);
        a.table = "t1".into();
        let mut b = Column::expr("c", ColumnType::MYSQL_TYPE_VAR_STRING);
        b.table = "t1".into();
        Ok(vec![a, b])
    }

    fn statistics(&mut self) -> String {
        "Uptime: 1  Threads: 1  Questions: 1".into()
    }

    fn kill(&mut self, id: u32) -> Result<(), ErrorInfo> {
        Err(ErrorInfo::new(
            1094,
            "HY000",
            format!("Unknown thread id: {id}"),
        ))
    }

    fn reset_connection(&mut self) {
        self.in_trans = false;
        self.prepared.clear();
    }

    fn prepare(&mut self, stmt_id: u32, sql: &str) -> Result<PrepareOk, ErrorInfo> {
        let params = sql.matches('?').count() as u16;
        let upper = sql.trim().to_ascii_uppercase();
        if upper.starts_with("ECHO") {
            self.prepared.insert(stmt_id, sql.to_string());
            return Ok(PrepareOk {
                params,
                columns: vec![],
            });
        }
        if let Some(n) = upper.strip_prefix("WIDE ") {
            // `WIDE n`: a statement of n result columns.
            let n: usize = n.trim().parse().unwrap_or(0);
            self.prepared.insert(stmt_id, sql.to_string());
            return Ok(PrepareOk {
                params: 0,
                columns: vec![Column::expr("c", ColumnType::MYSQL_TYPE_LONGLONG); n],
            });
        }
        if upper == "TYPES" {
            self.prepared.insert(stmt_id, sql.to_string());
            return Ok(PrepareOk {
                params: 0,
                columns: all_types().columns.to_vec(),
            });
        }
        if upper.starts_with("SELECT") || upper.starts_with("INSERT") || upper == "BAD BINARY" {
            self.prepared.insert(stmt_id, sql.to_string());
            return Ok(PrepareOk {
                params,
                columns: vec![],
            });
        }
        Err(ErrorInfo::new(
            1064,
            "42000",
            format!("cannot prepare '{sql}'"),
        ))
    }

    fn execute(&mut self, stmt_id: u32, params: &[Value]) -> Result<Response, ErrorInfo> {
        let sql = self
            .prepared
            .get(&stmt_id)
            .cloned()
            .ok_or_else(|| ErrorInfo::new(1243, "HY000", "unknown statement"))?;
        if sql.trim().to_ascii_uppercase().starts_with("ECHO") {
            return Ok(Response::Rows(ResultSet {
                columns: params
                    .iter()
                    .enumerate()
                    .map(|(i, v)| value_column(i, v))
                    .collect(),
                rows: vec![params.to_vec()].into(),
                warnings: 0,
            }));
        }
        self.run(&sql)
    }

    fn close_statement(&mut self, stmt_id: u32) {
        self.prepared.remove(&stmt_id);
    }

    fn command_begin(&mut self, _command: u8) {}
    fn command_end(&mut self) {}

    fn status(&self) -> SessionStatus {
        SessionStatus {
            in_transaction: self.in_trans,
            autocommit: true,
        }
    }

    fn max_allowed_packet(&self) -> usize {
        self.max_allowed_packet
    }

    fn disconnect(&mut self) {}
}

/// A running test server; dropped = stopped.
pub struct TestServer {
    pub port: u16,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

/// Serves one connection until it closes.
pub fn serve(mut stream: TcpStream, max_allowed_packet: usize, id: u32) {
    stream.set_read_timeout(Some(Duration::from_secs(60))).ok();
    let mut conn = Connection::new(
        TestBackend::new(max_allowed_packet),
        ProtoConfig {
            connection_id: id,
            max_allowed_packet,
            ..ProtoConfig::default()
        },
    );
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let out = conn.take_output();
        if !out.is_empty() && stream.write_all(&out).is_err() {
            conn.shutdown();
            return;
        }
        if conn.is_closed() {
            let _ = stream.shutdown(Shutdown::Both);
            return;
        }
        match conn.process() {
            Progress::Continue | Progress::Close => continue,
            // TLS is never offered by this test server (ProtoConfig::tls is false).
            Progress::StartTls => unreachable!("TLS not offered"),
            Progress::NeedMore => {}
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => {
                conn.shutdown();
                return;
            }
            Ok(n) => conn.feed(&buf[..n]),
        }
    }
}

impl TestServer {
    pub fn start(max_allowed_packet: usize) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let accept = std::thread::spawn(move || {
            let mut id = 1;
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        s.set_nonblocking(false).unwrap();
                        id += 1;
                        let my_id = id;
                        std::thread::spawn(move || serve(s, max_allowed_packet, my_id));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        TestServer {
            port,
            stop,
            accept: Some(accept),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// A raw-socket client: reads packets, writes packets.
pub struct Raw {
    pub s: TcpStream,
}

impl Raw {
    pub fn connect(port: u16) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Raw { s }
    }

    /// Reads one packet: (seq, payload); None on EOF/error.
    pub fn read_packet(&mut self) -> Option<(u8, Vec<u8>)> {
        let mut h = [0u8; 4];
        self.s.read_exact(&mut h).ok()?;
        let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
        let mut p = vec![0u8; len];
        self.s.read_exact(&mut p).ok()?;
        Some((h[3], p))
    }

    pub fn write_packet(&mut self, seq: u8, payload: &[u8]) -> std::io::Result<()> {
        let mut w = Vec::new();
        shoal_proto::packet::write_message(&mut w, seq, payload);
        self.s.write_all(&w)
    }

    /// Greeting + login as `nopw` (or `root` with a password), returns the login reply.
    pub fn login(&mut self, user: &str, password: &str, caps: u32) -> Vec<u8> {
        let (_, greeting) = self.read_packet().expect("greeting");
        assert_eq!(greeting[0], 10);
        let mut r = shoal_proto::packet::Reader::new(&greeting[1..]);
        r.null_str().unwrap();
        r.u32().unwrap();
        let s1 = r.bytes(8).unwrap().to_vec();
        r.bytes(1 + 2 + 1 + 2 + 2 + 1 + 10).unwrap();
        let s2 = r.bytes(12).unwrap().to_vec();
        let scramble = [s1, s2].concat();
        let auth = if password.is_empty() {
            vec![]
        } else {
            mysql_native(&scramble, password).to_vec()
        };
        let mut p = Vec::new();
        p.extend_from_slice(&caps.to_le_bytes());
        p.extend_from_slice(&(16u32 << 20).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&[0u8; 23]);
        p.extend_from_slice(user.as_bytes());
        p.push(0);
        p.push(auth.len() as u8);
        p.extend_from_slice(&auth);
        p.extend_from_slice(b"mysql_native_password\0");
        self.write_packet(1, &p).unwrap();
        self.read_packet().expect("login reply").1
    }
}

/// Client side of mysql_native_password.
pub fn mysql_native(scramble: &[u8], password: &str) -> [u8; 20] {
    use sha1::{Digest, Sha1};
    let s1: [u8; 20] = Sha1::digest(password.as_bytes()).into();
    let s2: [u8; 20] = Sha1::digest(s1).into();
    let mut h = Sha1::new();
    h.update(scramble);
    h.update(s2);
    let m: [u8; 20] = h.finalize().into();
    let mut out = [0u8; 20];
    for i in 0..20 {
        out[i] = s1[i] ^ m[i];
    }
    out
}

/// Default client capabilities for raw tests: PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH |
/// LONG_PASSWORD | TRANSACTIONS | MULTI_RESULTS.
pub const RAW_CAPS: u32 = 0x0200 | 0x8000 | 0x0008_0000 | 0x1 | 0x2000 | 0x0002_0000;
