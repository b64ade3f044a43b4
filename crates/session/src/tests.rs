//! Session-level tests calling the `Backend` API directly (no sockets).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shoal_proto::{Backend, ColumnType, LoginRequest, Response, Value as PValue};

use crate::{ConnectionControl, Server, Session};

#[derive(Default)]
struct Ctl(AtomicBool);
impl ConnectionControl for Ctl {
    fn shutdown(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

const SCRAMBLE: [u8; 20] = *b"0123456789abcdefghij";

fn open(server: &Arc<Server>) -> (Session, Arc<Ctl>) {
    let ctl = Arc::new(Ctl::default());
    let id = server.next_connection_id();
    (
        server.open_session(id, "127.0.0.1:5555".into(), ctl.clone()),
        ctl,
    )
}

fn login(
    s: &mut Session,
    user: &str,
    pw: &str,
    db: Option<&str>,
) -> Result<(), shoal_proto::ErrorInfo> {
    let token = crate::users::scramble_password(&SCRAMBLE, pw);
    s.authenticate(&LoginRequest {
        user,
        host: "127.0.0.1",
        scramble: &SCRAMBLE,
        credentials: shoal_proto::Credentials::Native(&token),
        database: db,
        interactive: false,
        attributes: &[],
        tls: false,
        secure_transport: false,
    })
    .map_err(denied)
}

/// The error of a refused login (these logins never ask for full authentication).
fn denied(e: shoal_proto::AuthError) -> shoal_proto::ErrorInfo {
    match e {
        shoal_proto::AuthError::Denied(e) => e,
        shoal_proto::AuthError::FullAuthRequired => panic!("full authentication asked for"),
    }
}

fn root(server: &Arc<Server>) -> (Session, Arc<Ctl>) {
    let (mut s, c) = open(server);
    login(&mut s, "root", "", None).unwrap();
    (s, c)
}

fn text(v: &PValue) -> String {
    match v {
        PValue::NULL => "NULL".into(),
        PValue::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        PValue::Int(i) => i.to_string(),
        PValue::UInt(u) => u.to_string(),
        PValue::Double(d) => d.to_string(),
        other => format!("{other:?}"),
    }
}

/// Runs one statement: rows as strings, or the error code.
fn q(s: &mut Session, sql: &str) -> Result<Vec<Vec<String>>, u16> {
    s.command_begin(0x03);
    let mut r = s.query(sql, false);
    s.command_end();
    assert_eq!(r.len(), 1);
    match r.remove(0) {
        Ok(Response::Rows(rs)) => Ok(rs
            .rows
            .iter()
            .map(|row| row.iter().map(text).collect())
            .collect()),
        Ok(Response::Ok(_)) => Ok(vec![]),
        Err(e) => Err(e.code),
    }
}

fn one(s: &mut Session, sql: &str) -> String {
    match q(s, sql) {
        Ok(rows) => rows.first().map(|r| r.join("|")).unwrap_or_default(),
        Err(c) => format!("ERR {c}"),
    }
}

#[test]
fn authentication() {
    let (server, _data) = engine_server();
    let (mut s, _) = open(&server);
    assert!(login(&mut s, "root", "", None).is_ok());
    let (mut s, _) = open(&server);
    let e = login(&mut s, "root", "wrong", None).unwrap_err();
    assert_eq!(e.code, 1045);
    assert_eq!(
        e.message,
        "Access denied for user 'root'@'127.0.0.1' (using password: YES)"
    );
    let (mut s, _) = open(&server);
    let e = login(&mut s, "nobody", "", None).unwrap_err();
    assert_eq!(
        e.message,
        "Access denied for user 'nobody'@'127.0.0.1' (using password: NO)"
    );
    let (mut s, _) = open(&server);
    assert_eq!(
        login(&mut s, "root", "", Some("nodb")).unwrap_err().code,
        1049
    );

    server
        .set_startup_option("root-password", "s3cret")
        .unwrap();
    let (mut s, _) = open(&server);
    assert_eq!(login(&mut s, "root", "", None).unwrap_err().code, 1045);
    let (mut s, _) = open(&server);
    assert!(login(&mut s, "root", "s3cret", Some("mysql")).is_ok());
    assert_eq!(
        one(&mut s, "SELECT DATABASE(), USER(), CURRENT_USER()"),
        "mysql|root@127.0.0.1|root@localhost"
    );

    // Root is loopback-only.
    let (mut s, _) = open(&server);
    let token = crate::users::scramble_password(&SCRAMBLE, "s3cret");
    let r = s
        .authenticate(&LoginRequest {
            user: "root",
            host: "10.1.2.3",
            scramble: &SCRAMBLE,
            credentials: shoal_proto::Credentials::Native(&token),
            database: None,
            interactive: false,
            attributes: &[],
            tls: false,
            secure_transport: false,
        })
        .map_err(denied);
    assert_eq!(r.unwrap_err().code, 1045);
}

#[test]
fn create_user_then_login() {
    let (server, _data) = engine_server();
    let (mut r, _) = root(&server);
    assert_eq!(one(&mut r, "CREATE USER 'bob'@'%' IDENTIFIED BY 'pw'"), "");
    assert_eq!(
        one(&mut r, "CREATE USER 'bob'@'%' IDENTIFIED BY 'pw'"),
        "ERR 1396"
    );
    let (mut b, _) = open(&server);
    login(&mut b, "bob", "pw", None).unwrap();
    assert_eq!(one(&mut b, "SELECT CURRENT_USER()"), "bob@%");
    // Not a super user: no SET GLOBAL, no KILL of others.
    assert_eq!(one(&mut b, "SET GLOBAL max_connections = 5"), "ERR 1227");
    let rid = r.id();
    assert_eq!(one(&mut b, &format!("KILL {rid}")), "ERR 1095");
    assert_eq!(one(&mut r, "DROP USER 'bob'@'%'"), "");
    assert_eq!(one(&mut r, "DROP USER 'bob'@'%'"), "ERR 1396");
    assert_eq!(one(&mut r, "DROP USER IF EXISTS 'bob'@'%'"), "");
    let (mut b2, _) = open(&server);
    assert_eq!(login(&mut b2, "bob", "pw", None).unwrap_err().code, 1045);
}

/// Every row of a one-column result, one per line.
fn all(s: &mut Session, sql: &str) -> String {
    q(s, sql)
        .unwrap_or_else(|c| panic!("{sql}: error {c}"))
        .iter()
        .map(|r| r.join("|"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn grants_apply_at_the_next_statement_and_show_as_mariadb() {
    let (server, _data) = engine_server();
    let (mut r, _) = root(&server);
    assert_eq!(one(&mut r, "CREATE DATABASE d"), "");
    assert_eq!(one(&mut r, "CREATE USER 'bob'@'%' IDENTIFIED BY 'pw'"), "");
    let (mut b, _) = open(&server);
    login(&mut b, "bob", "pw", None).unwrap();
    assert_eq!(one(&mut b, "USE d"), "ERR 1044");
    assert_eq!(one(&mut b, "FLUSH STATUS"), "ERR 1227");
    assert_eq!(one(&mut b, "CREATE USER 'x'@'%'"), "ERR 1227");
    assert_eq!(
        one(&mut b, "SHOW GRANTS"),
        "GRANT USAGE ON *.* TO `bob`@`%` IDENTIFIED BY PASSWORD '*D821809F681A40A6E379B50D0463EFAE20BDD122'"
    );
    assert_eq!(one(&mut r, "GRANT SELECT, INSERT ON d.* TO bob"), "");
    assert_eq!(
        one(&mut r, "GRANT RELOAD ON *.* TO 'bob'@'%' WITH GRANT OPTION"),
        ""
    );
    assert_eq!(one(&mut b, "USE d"), "");
    assert_eq!(one(&mut b, "FLUSH STATUS"), "");
    assert_eq!(
        all(&mut r, "SHOW GRANTS FOR bob"),
        "GRANT RELOAD ON *.* TO `bob`@`%` IDENTIFIED BY PASSWORD '*D821809F681A40A6E379B50D0463EFAE20BDD122' WITH GRANT OPTION\nGRANT SELECT, INSERT ON `d`.* TO `bob`@`%`"
    );
    // Levels refuse privileges of other levels, as MySQL.
    assert_eq!(one(&mut r, "GRANT PROCESS ON d.* TO bob"), "ERR 1221");
    assert_eq!(one(&mut r, "GRANT EXECUTE ON *.* TO bob"), "ERR 1235");
    assert_eq!(one(&mut r, "REVOKE RELOAD ON *.* FROM bob"), "");
    assert_eq!(one(&mut b, "FLUSH STATUS"), "ERR 1227");
    // REVOKE of a privilege leaves GRANT OPTION (as MySQL). RENAME USER moves the grants; the
    // renamed account's session has none left.
    assert_eq!(one(&mut r, "RENAME USER bob TO robert@localhost"), "");
    assert_eq!(
        one(&mut r, "RENAME USER bob TO robert@localhost"),
        "ERR 1396"
    );
    assert_eq!(one(&mut b, "USE d"), "ERR 1044");
    assert_eq!(
        all(&mut r, "SHOW GRANTS FOR robert@localhost"),
        "GRANT USAGE ON *.* TO `robert`@`localhost` IDENTIFIED BY PASSWORD '*D821809F681A40A6E379B50D0463EFAE20BDD122' WITH GRANT OPTION\nGRANT SELECT, INSERT ON `d`.* TO `robert`@`localhost`"
    );
    assert_eq!(
        one(&mut r, "ALTER USER nobody IDENTIFIED BY 'x'"),
        "ERR 1396"
    );
    assert_eq!(
        one(&mut r, "ALTER USER IF EXISTS nobody IDENTIFIED BY 'x'"),
        ""
    );
    assert_eq!(
        one(&mut r, "SET PASSWORD FOR nobody = PASSWORD('x')"),
        "ERR 1133"
    );
    assert_eq!(one(&mut r, "SHOW GRANTS FOR nobody"), "ERR 1141");
}

#[test]
fn max_connections_reserves_one_for_super() {
    let (server, _data) = engine_server();
    server.set_startup_option("max_connections", "1").unwrap();
    let (_a, _) = root(&server);
    let (_b, _) = root(&server); // the reserved super slot
    let (mut c, _) = open(&server);
    let e = login(&mut c, "root", "", None).unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (1040, "Too many connections"));
    drop(c);
    assert_eq!(server.connection_count(), 2);
}

#[test]
fn system_variables_set_and_show() {
    let (server, _data) = engine_server();
    let (mut s, _) = root(&server);
    assert_eq!(
        one(
            &mut s,
            "SELECT @@max_connections, @@global.max_connections, @@wait_timeout"
        ),
        "151|151|28800"
    );
    assert_eq!(one(&mut s, "SET GLOBAL max_connections = 10"), "");
    assert_eq!(one(&mut s, "SELECT @@global.max_connections"), "10");
    assert_eq!(server.max_connections(), 10);
    assert_eq!(one(&mut s, "SET max_connections = 10"), "ERR 1229");
    assert_eq!(one(&mut s, "SET SESSION max_connections = 10"), "ERR 1229");
    assert_eq!(
        one(&mut s, "SET GLOBAL thread_handling = 'pool-of-threads'"),
        "ERR 1238"
    );
    assert_eq!(one(&mut s, "SET @@bogus = 1"), "ERR 1193");
    assert_eq!(one(&mut s, "SELECT @@session.max_connections"), "ERR 1238");
    assert_eq!(one(&mut s, "SET GLOBAL max_connections = 0"), "ERR 1231");
    assert_eq!(
        one(&mut s, "SET GLOBAL max_connections = 'abc'"),
        "ERR 1232"
    );
    assert_eq!(one(&mut s, "SET autocommit = 'maybe'"), "ERR 1231");
    assert_eq!(one(&mut s, "SET sql_mode = 'NOT_A_MODE'"), "ERR 1231");
    assert_eq!(
        one(&mut s, "SET sql_mode = 'strict_trans_tables,ansi_quotes'"),
        ""
    );
    assert_eq!(
        one(&mut s, "SELECT @@session.sql_mode"),
        "ANSI_QUOTES,STRICT_TRANS_TABLES"
    );
    assert_eq!(
        one(
            &mut s,
            "SET wait_timeout = 100, @@session.net_read_timeout = 7"
        ),
        ""
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT @@wait_timeout, @@global.wait_timeout, @@net_read_timeout"
        ),
        "100|28800|7"
    );
    assert_eq!(s.idle_timeout(), Duration::from_secs(100));
    assert_eq!(one(&mut s, "SET wait_timeout = DEFAULT"), "");
    assert_eq!(one(&mut s, "SELECT @@wait_timeout"), "28800");
    assert_eq!(
        q(&mut s, "SHOW VARIABLES LIKE 'max_conn%'").unwrap(),
        vec![
            vec!["max_connections".to_string(), "10".to_string()],
            vec!["max_connect_errors".into(), "100".into()]
        ]
        .into_iter()
        .filter(|r| r[0].starts_with("max_conn"))
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
    );
    assert_eq!(
        q(
            &mut s,
            "SHOW GLOBAL VARIABLES WHERE Variable_name = 'thread_handling'"
        )
        .unwrap(),
        vec![vec![
            "thread_handling".to_string(),
            "pool-of-threads".to_string()
        ]]
    );
    assert_eq!(one(&mut s, "SHOW VARIABLES LIKE 'tx_isolation'"), "");
    assert_eq!(
        one(&mut s, "SELECT @@tx_isolation, @@transaction_isolation"),
        "REPEATABLE-READ|REPEATABLE-READ"
    );
    assert_eq!(
        one(
            &mut s,
            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"
        ),
        ""
    );
    assert_eq!(
        one(&mut s, "SELECT @@transaction_isolation"),
        "READ-COMMITTED"
    );
    assert_eq!(one(&mut s, "SET NAMES utf8mb4 COLLATE utf8mb4_bin"), "");
    assert_eq!(
        one(
            &mut s,
            "SELECT @@character_set_client, @@collation_connection"
        ),
        "utf8mb4|utf8mb4_bin"
    );
    assert_eq!(one(&mut s, "SET NAMES klingon"), "ERR 1115");
    assert_eq!(one(&mut s, "SET @@session.autocommit = OFF"), "");
    assert!(!s.status().autocommit);
    assert_eq!(
        one(
            &mut s,
            "SELECT @@autocommit, @@version_comment LIKE 'shoal%'"
        ),
        "0|1"
    );
}

#[test]
fn global_variable_subscribers_see_changes() {
    let (server, _data) = engine_server();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    server.subscribe_variables(Box::new(move |n, v| {
        s2.lock().unwrap().push(format!("{n}={}", v.display()))
    }));
    let (mut s, _) = root(&server);
    assert_eq!(
        one(
            &mut s,
            "SET GLOBAL thread_pool_size = 3, GLOBAL thread_pool_stall_limit = 60"
        ),
        ""
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec!["thread_pool_size=3", "thread_pool_stall_limit=60"]
    );
    assert_eq!(
        one(
            &mut s,
            "SET GLOBAL thread_pool_high_prio_mode = 'statements'"
        ),
        ""
    );
    assert_eq!(
        one(&mut s, "SET GLOBAL thread_pool_high_prio_mode = 'bogus'"),
        "ERR 1231"
    );
    assert_eq!(seen.lock().unwrap().len(), 3);
}

#[test]
fn status_counters_and_providers() {
    let (server, _data) = engine_server();
    server.add_status_provider(Box::new(|rows| {
        rows.push(("Threadpool_threads".into(), "4".into()))
    }));
    let (mut s, _) = root(&server);
    one(&mut s, "SELECT 1");
    one(&mut s, "SELECT 2");
    let rows = q(&mut s, "SHOW GLOBAL STATUS LIKE 'Com_select'").unwrap();
    assert_eq!(rows, vec![vec!["Com_select".to_string(), "2".to_string()]]);
    assert_eq!(
        one(&mut s, "SHOW STATUS LIKE 'Threadpool_threads'"),
        "Threadpool_threads|4"
    );
    assert_eq!(
        one(
            &mut s,
            "SHOW STATUS WHERE Variable_name = 'Threads_connected'"
        ),
        "Threads_connected|1"
    );
    let q1: u64 = one(&mut s, "SHOW STATUS LIKE 'Questions'")
        .split('|')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(q1 >= 5, "{q1}");
    assert!(s.statistics().starts_with("Uptime: "));
}

#[test]
fn flush_runs_registered_resets_after_checking_every_option() {
    let (server, _data) = engine_server();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    server.add_flushable(
        "thread_pool_stats",
        Arc::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
        }),
    );
    let (mut s, _) = root(&server);
    assert_eq!(one(&mut s, "FLUSH THREAD_POOL_STATS"), "");
    assert_eq!(
        one(&mut s, "flush local thread_pool_stats, THREAD_POOL_STATS"),
        ""
    );
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    // MySQL's own options are not implemented: 1235, and the list is checked before any reset.
    assert_eq!(
        one(&mut s, "FLUSH THREAD_POOL_STATS, SESSION STATUS"),
        "ERR 1235"
    );
    assert_eq!(one(&mut s, "FLUSH TABLES t1, t2"), "ERR 1235");
    // The global read lock is the table engine's.
    assert_eq!(one(&mut s, "FLUSH TABLES WITH READ LOCK"), "");
    assert_eq!(one(&mut s, "UNLOCK TABLES"), "");
    // A name nobody registered is a syntax error, as in MariaDB.
    assert_eq!(
        one(&mut s, "FLUSH THREAD_POOL_STATS, NO_SUCH_TABLE"),
        "ERR 1064"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(
        one(&mut s, "SHOW GLOBAL STATUS LIKE 'Com_flush'"),
        "Com_flush|6"
    );
    // RELOAD is a super user's.
    assert_eq!(one(&mut s, "CREATE USER 'bob'@'%' IDENTIFIED BY 'pw'"), "");
    let (mut b, _) = open(&server);
    login(&mut b, "bob", "pw", None).unwrap();
    assert_eq!(one(&mut b, "FLUSH THREAD_POOL_STATS"), "ERR 1227");
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

#[test]
fn multi_statements_stop_at_first_error() {
    let (server, _data) = engine_server();
    let (mut s, _) = root(&server);
    let r = s.query("SELECT 1; SELECT 'a;b' ; SELEC 3; SELECT 4", true);
    assert_eq!(r.len(), 3);
    assert!(matches!(&r[0], Ok(Response::Rows(_))));
    assert!(
        matches!(&r[1], Ok(Response::Rows(rs)) if rs.rows[0][0] == PValue::Bytes(b"a;b".to_vec()))
    );
    assert_eq!(r[2].as_ref().unwrap_err().code, 1064);
    // Without CLIENT_MULTI_STATEMENTS the text is one statement: a syntax error.
    let r = s.query("SELECT 1; SELECT 2", false);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].as_ref().unwrap_err().code, 1064);
    let r = s.query("", false);
    assert_eq!(r[0].as_ref().unwrap_err().code, 1065);
}

#[test]
fn result_column_types() {
    let (server, _data) = engine_server();
    let (mut s, _) = root(&server);
    let r = s.query("SELECT 1, 1.5, 'x', NULL, 2e0, NOW()", false);
    let Ok(Response::Rows(rs)) = &r[0] else {
        panic!()
    };
    let types: Vec<ColumnType> = rs.columns.iter().map(|c| c.column_type).collect();
    assert_eq!(
        types,
        vec![
            ColumnType::MYSQL_TYPE_LONGLONG,
            ColumnType::MYSQL_TYPE_NEWDECIMAL,
            ColumnType::MYSQL_TYPE_VAR_STRING,
            ColumnType::MYSQL_TYPE_NULL,
            ColumnType::MYSQL_TYPE_DOUBLE,
            ColumnType::MYSQL_TYPE_DATETIME,
        ]
    );
    assert_eq!(rs.columns[0].name, "1");
    assert_eq!(rs.columns[1].decimals, 1);
}

#[test]
fn databases_and_tables() {
    let (server, _data) = engine_server();
    let (mut s, _) = root(&server);
    assert_eq!(one(&mut s, "CREATE DATABASE d1"), "");
    assert_eq!(one(&mut s, "CREATE DATABASE d1"), "ERR 1007");
    assert_eq!(one(&mut s, "CREATE DATABASE IF NOT EXISTS d1"), "");
    assert_eq!(
        one(&mut s, "SHOW WARNINGS"),
        "Note|1007|Can't create database 'd1'; database exists"
    );
    assert!(q(&mut s, "SHOW DATABASES")
        .unwrap()
        .iter()
        .any(|r| r[0] == "d1"));
    assert_eq!(one(&mut s, "SHOW TABLES"), "ERR 1046");
    assert_eq!(one(&mut s, "USE nope"), "ERR 1049");
    assert_eq!(one(&mut s, "USE d1"), "");
    assert_eq!(one(&mut s, "SELECT DATABASE()"), "d1");
    assert_eq!(q(&mut s, "SHOW TABLES").unwrap(), Vec::<Vec<String>>::new());
    assert_eq!(one(&mut s, "SELECT * FROM t1"), "ERR 1146");
    assert_eq!(
        one(&mut s, "SHOW ERRORS"),
        "Error|1146|Table 'd1.t1' doesn't exist"
    );
    assert_eq!(one(&mut s, "INSERT INTO t1 VALUES (1)"), "ERR 1146");
    assert_eq!(one(&mut s, "DROP TABLE t1"), "ERR 1051");
    assert_eq!(one(&mut s, "DROP TABLE IF EXISTS t1"), "");
    assert_eq!(one(&mut s, "CREATE TABLE t1 (id INT PRIMARY KEY)"), "");
    assert_eq!(s.field_list("t2", "").unwrap_err().code, 1146);
    let cols = s.field_list("t1", "").unwrap();
    assert_eq!(
        cols.iter()
            .map(|c| (c.name.as_str(), c.table.as_str()))
            .collect::<Vec<_>>(),
        [("id", "t1")]
    );
    assert_eq!(one(&mut s, "DROP DATABASE d1"), "");
    assert_eq!(one(&mut s, "SELECT DATABASE()"), "NULL");
    assert_eq!(one(&mut s, "DROP DATABASE d1"), "ERR 1008");
    assert_eq!(one(&mut s, "DROP DATABASE IF EXISTS d1"), "");
    assert_eq!(s.init_db("mysql"), Ok(()));
    assert_eq!(s.init_db("nope").unwrap_err().code, 1049);
}

#[test]
fn transactions_set_status_flags() {
    let (server, _data) = engine_server();
    let (mut s, _) = root(&server);
    assert!(!s.status().in_transaction);
    one(&mut s, "BEGIN");
    assert!(s.status().in_transaction);
    one(&mut s, "COMMIT");
    assert!(!s.status().in_transaction);
    one(&mut s, "START TRANSACTION");
    assert_eq!(
        one(&mut s, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"),
        "ERR 1568"
    );
    one(&mut s, "ROLLBACK");
    assert!(!s.status().in_transaction);
}

/// The variables every statement reads are cached per session (`HotVars`); a session SET must
/// reach the very next statement, and RESET CONNECTION must restore the defaults.
#[test]
fn cached_statement_variables_follow_set() {
    let (server, _data) = engine_server();
    let (mut s, _) = root(&server);
    assert_eq!(one(&mut s, "SELECT 1/3"), "0.3333");
    assert!(s.status().autocommit);
    assert_eq!(one(&mut s, "SET div_precision_increment = 6"), "");
    assert_eq!(one(&mut s, "SELECT 1/3"), "0.333333");
    assert_eq!(one(&mut s, "SET autocommit = 0"), "");
    assert!(!s.status().autocommit);
    assert_eq!(one(&mut s, "SET SESSION div_precision_increment = 2"), "");
    assert_eq!(one(&mut s, "SELECT 1/3"), "0.33");
    s.reset_connection();
    assert_eq!(one(&mut s, "SELECT 1/3"), "0.3333");
    assert!(s.status().autocommit);
}

#[test]
fn prepared_statements() {
    let (server, _data) = engine_server();
    let (mut s, _) = root(&server);
    let p = s.prepare(1, "SELECT ? + 1, CONCAT(?, 'x')").unwrap();
    assert_eq!(p.params, 2);
    assert_eq!(p.columns.len(), 2);
    let r = s
        .execute(1, &[PValue::Int(41), PValue::Bytes(b"a".to_vec())])
        .unwrap();
    let Response::Rows(rs) = r else { panic!() };
    assert_eq!(
        rs.rows[0],
        vec![PValue::Int(42), PValue::Bytes(b"ax".to_vec())]
    );
    assert_eq!(s.execute(1, &[PValue::Int(1)]).unwrap_err().code, 1210);
    assert_eq!(s.execute(9, &[]).unwrap_err().code, 1243);
    assert_eq!(
        one(&mut s, "SHOW STATUS LIKE 'Prepared_stmt_count'"),
        "Prepared_stmt_count|1"
    );
    s.prepare(2, "SET @v = ?").unwrap();
    s.execute(2, &[PValue::UInt(5)]).unwrap();
    assert_eq!(one(&mut s, "SELECT @v"), "5");
    s.close_statement(1);
    s.close_statement(2);
    assert_eq!(
        one(&mut s, "SHOW STATUS LIKE 'Prepared_stmt_count'"),
        "Prepared_stmt_count|0"
    );
    assert_eq!(s.prepare(3, "SELEC 1").unwrap_err().code, 1064);
    let Err(e) = s.prepare(4, "SELECT 1; SELECT 2") else {
        panic!()
    };
    assert_eq!(e.code, 1064);
}

/// The rows of executing prepared statement `id` with `params`, as strings.
fn exec_rows(s: &mut Session, id: u32, params: &[PValue]) -> Vec<Vec<String>> {
    match s.execute(id, params) {
        Ok(Response::Rows(rs)) => rs
            .rows
            .iter()
            .map(|r| r.iter().map(text).collect())
            .collect(),
        other => panic!("rows expected, got {other:?}"),
    }
}

/// A status variable's value (`SHOW STATUS LIKE name`).
fn status_of(s: &mut Session, name: &str) -> u64 {
    let row = one(s, &format!("SHOW STATUS LIKE '{name}'"));
    let (n, v) = row
        .split_once('|')
        .unwrap_or_else(|| panic!("{name}: {row}"));
    assert_eq!(n, name);
    v.parse().unwrap_or_else(|_| panic!("{name}: {row}"))
}

/// Sessions that prepare the same table statement in the same database share one body
/// (`crate::plans`): a second PREPARE is a hit, and both execute alike. The database is part
/// of the key, privileges are checked per session, a DDL makes the next PREPARE build anew
/// (the session holding the old statement still runs it, bound again), and the body is
/// dropped with the last session that holds it.
#[test]
fn sessions_share_prepared_table_statements() {
    let (server, _data) = engine_server();
    let (mut a, _) = root(&server);
    for sql in [
        "CREATE DATABASE d1",
        "CREATE DATABASE d2",
        "CREATE TABLE d1.t (id INT PRIMARY KEY, v VARCHAR(10))",
        "CREATE TABLE d2.t (id INT PRIMARY KEY, v VARCHAR(10))",
        "INSERT INTO d1.t VALUES (1, 'one-d1')",
        "INSERT INTO d2.t VALUES (1, 'one-d2')",
        "CREATE USER 'bob'@'%' IDENTIFIED BY 'pw'",
        "GRANT SELECT ON d2.* TO bob",
    ] {
        assert_eq!(one(&mut a, sql), "", "{sql}");
    }
    let hits = |s: &mut Session| status_of(s, "Shoal_shared_plan_hits");
    let builds = |s: &mut Session| status_of(s, "Shoal_shared_plan_builds");
    let sql = "SELECT v FROM t WHERE id = ?";
    assert_eq!(one(&mut a, "USE d1"), "");
    let (h0, b0) = (hits(&mut a), builds(&mut a));
    a.prepare(1, sql).unwrap();
    assert_eq!((hits(&mut a), builds(&mut a)), (h0, b0 + 1));
    let (mut b, _) = root(&server);
    assert_eq!(one(&mut b, "USE d1"), "");
    b.prepare(1, sql).unwrap();
    assert_eq!((hits(&mut b), builds(&mut b)), (h0 + 1, b0 + 1), "a hit");
    assert_eq!(status_of(&mut b, "Shoal_shared_plans"), 1);
    assert_eq!(exec_rows(&mut a, 1, &[PValue::Int(1)]), [["one-d1"]]);
    assert_eq!(exec_rows(&mut b, 1, &[PValue::Int(1)]), [["one-d1"]]);
    // Another sql_mode: another plan (none depends on it today; the key guards the day one
    // does).
    let (mut m, _) = root(&server);
    assert_eq!(one(&mut m, "USE d1"), "");
    assert_eq!(one(&mut m, "SET SESSION sql_mode = 'ANSI_QUOTES'"), "");
    m.prepare(1, sql).unwrap();
    assert_eq!(hits(&mut m), h0 + 1, "not a hit");
    assert_eq!(exec_rows(&mut m, 1, &[PValue::Int(1)]), [["one-d1"]]);
    m.close_statement(1);
    // Another database: another plan, on its own table.
    let (mut c, _) = root(&server);
    assert_eq!(one(&mut c, "USE d2"), "");
    c.prepare(1, sql).unwrap();
    assert_eq!(hits(&mut c), h0 + 1, "not a hit");
    assert_eq!(exec_rows(&mut c, 1, &[PValue::Int(1)]), [["one-d2"]]);
    // Under LOCK TABLES a shared plan (c's, in d2) still obeys the locked set: its PREPARE
    // on a table outside it is 1100, as MariaDB's; one prepared before LOCK TABLES is 1100
    // at execution.
    let (mut l, _) = root(&server);
    assert_eq!(one(&mut l, "USE d2"), "");
    l.prepare(2, sql).unwrap();
    assert_eq!(one(&mut l, "LOCK TABLES d1.t READ"), "");
    let hl = hits(&mut l);
    assert_eq!(l.prepare(1, sql).unwrap_err().code, 1100);
    assert_eq!(hits(&mut l), hl + 1, "a hit, refused");
    assert_eq!(l.execute(2, &[PValue::Int(1)]).unwrap_err().code, 1100);
    assert_eq!(one(&mut l, "UNLOCK TABLES"), "");
    l.prepare(1, sql).unwrap();
    assert_eq!(exec_rows(&mut l, 1, &[PValue::Int(1)]), [["one-d2"]]);
    assert_eq!(exec_rows(&mut l, 2, &[PValue::Int(1)]), [["one-d2"]]);
    l.close_statement(1);
    l.close_statement(2);
    // Privileges are the preparing session's: bob may read d2, not d1.
    let (mut bob, _) = open(&server);
    login(&mut bob, "bob", "pw", Some("d2")).unwrap();
    bob.prepare(1, sql).unwrap();
    assert_eq!(exec_rows(&mut bob, 1, &[PValue::Int(1)]), [["one-d2"]]);
    let h = hits(&mut a);
    // The same text as a's, in a's database, from a session without the privilege: refused
    // although a shared body exists.
    let (mut bob2, _) = open(&server);
    login(&mut bob2, "bob", "pw", Some("d2")).unwrap();
    let other = "SELECT v FROM d1.t WHERE id = ?";
    let e = bob2.prepare(1, other).unwrap_err();
    assert_eq!(e.code, 1142, "{e:?}");
    c.prepare(3, other).unwrap();
    let e = bob2.prepare(1, other).unwrap_err();
    assert_eq!(e.code, 1142, "a hit checks the session's privileges: {e:?}");
    assert!(hits(&mut a) > h, "that was a hit");
    // A DDL: the next PREPARE builds anew and sees the new definition; a session holding the
    // old statement still executes it (bound again).
    let star = "SELECT * FROM t WHERE id = ?";
    let cols = a.prepare(4, star).unwrap().columns.len();
    assert_eq!(cols, 2);
    assert_eq!(one(&mut a, "ALTER TABLE t ADD COLUMN w INT DEFAULT 7"), "");
    let b1 = builds(&mut b);
    let p = b.prepare(4, star).unwrap();
    assert_eq!(p.columns.len(), 3, "built for the altered table");
    assert_eq!(builds(&mut b), b1 + 1, "a stale plan is built again");
    assert_eq!(
        exec_rows(&mut b, 4, &[PValue::Int(1)]),
        [["1", "one-d1", "7"]]
    );
    assert_eq!(
        exec_rows(&mut a, 4, &[PValue::Int(1)]),
        [["1", "one-d1", "7"]]
    );
    assert_eq!(exec_rows(&mut a, 1, &[PValue::Int(1)]), [["one-d1"]]);
    // Closing every holder drops the bodies.
    for (s, ids) in [
        (&mut a, &[1u32, 4][..]),
        (&mut b, &[1, 4]),
        (&mut c, &[1, 3]),
        (&mut bob, &[1]),
    ] {
        for id in ids {
            s.close_statement(*id);
        }
    }
    assert_eq!(status_of(&mut a, "Shoal_shared_plans"), 0);
}

/// SQL's PREPARE / EXECUTE / DEALLOCATE share the binary protocol's statements: one count in
/// `Prepared_stmt_count`, the same rows for the same statement, their own `Com_` counters, and
/// the protocol cannot prepare them (1295).
#[test]
fn sql_prepared_statements_share_the_protocol_ones() {
    let (server, _data) = engine_server();
    let (mut s, _) = root(&server);
    let com = |s: &mut Session, name: &str| one(s, &format!("SHOW STATUS LIKE 'Com_{name}'"));
    let count = |s: &mut Session| one(s, "SHOW STATUS LIKE 'Prepared_stmt_count'");
    let sql = "SELECT ? + 1, CONCAT(?, 'x'), ? * 2";
    s.prepare(1, sql).unwrap();
    assert_eq!(one(&mut s, &format!("PREPARE p FROM \"{sql}\"")), "");
    assert_eq!(count(&mut s), "Prepared_stmt_count|2");
    let bin = s
        .execute(
            1,
            &[PValue::Int(41), PValue::Bytes(b"a".to_vec()), PValue::NULL],
        )
        .unwrap();
    s.command_begin(0x03);
    let text = s
        .query("EXECUTE p USING 41, 'a', NULL", false)
        .remove(0)
        .unwrap();
    s.command_end();
    let (Response::Rows(b), Response::Rows(t)) = (bin, text) else {
        panic!("rows expected")
    };
    assert_eq!(b.rows, t.rows);
    assert_eq!(b.columns, t.columns);
    assert_eq!(q(&mut s, "EXECUTE p USING 1"), Err(1210));
    assert_eq!(q(&mut s, "EXECUTE nope"), Err(1243));
    assert_eq!(com(&mut s, "prepare_sql"), "Com_prepare_sql|1");
    assert_eq!(com(&mut s, "execute_sql"), "Com_execute_sql|3");
    for text in [
        "PREPARE x FROM 'SELECT 1'",
        "EXECUTE p",
        "DEALLOCATE PREPARE p",
    ] {
        assert_eq!(s.prepare(2, text).unwrap_err().code, 1295, "{text}");
    }
    assert_eq!(one(&mut s, "DEALLOCATE PREPARE p"), "");
    assert_eq!(q(&mut s, "DROP PREPARE p"), Err(1243));
    assert_eq!(com(&mut s, "dealloc_sql"), "Com_dealloc_sql|2");
    assert_eq!(count(&mut s), "Prepared_stmt_count|1");
    // COM_RESET_CONNECTION drops both kinds.
    assert_eq!(one(&mut s, "PREPARE p FROM 'SELECT 1'"), "");
    assert_eq!(count(&mut s), "Prepared_stmt_count|2");
    s.reset_connection();
    assert_eq!(count(&mut s), "Prepared_stmt_count|0");
    assert_eq!(q(&mut s, "EXECUTE p"), Err(1243));
}

#[test]
fn kill_query_interrupts_sleep_and_kill_connection_shuts_down() {
    let (server, _data) = engine_server();
    let (mut a, _) = root(&server);
    let (mut b, b_ctl) = root(&server);
    let bid = b.id();
    let started = Arc::new(AtomicUsize::new(0));
    let st = started.clone();
    let h = std::thread::spawn(move || {
        b.command_begin(0x03);
        st.store(1, Ordering::SeqCst);
        let t = Instant::now();
        let r = b.query("SELECT SLEEP(20)", false);
        b.command_end();
        let r2 = {
            b.command_begin(0x03);
            let x = b.query("SELECT 1", false);
            b.command_end();
            x
        };
        (r, r2, t.elapsed(), b)
    });
    while started.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    // Wait until it shows up as running SLEEP in the process list.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let rows = q(&mut a, "SHOW FULL PROCESSLIST").unwrap();
        if rows
            .iter()
            .any(|r| r[0] == bid.to_string() && r[7].contains("SLEEP"))
        {
            assert!(rows
                .iter()
                .any(|r| r[0] == bid.to_string() && r[4] == "Query"));
            break;
        }
        assert!(Instant::now() < deadline, "never saw the sleeping query");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(one(&mut a, &format!("KILL QUERY {bid}")), "");
    let (r, r2, took, mut b) = h.join().unwrap();
    assert!(took < Duration::from_secs(5), "{took:?}");
    let Ok(Response::Rows(rs)) = &r[0] else {
        panic!("{r:?}")
    };
    assert_eq!(rs.rows[0][0], PValue::Int(1));
    // The next statement runs normally; the connection is alive.
    assert!(matches!(&r2[0], Ok(Response::Rows(_))));
    assert!(!b.killed());
    assert!(!b_ctl.0.load(Ordering::SeqCst));

    assert_eq!(one(&mut a, &format!("KILL {bid}")), "");
    assert!(b.killed());
    assert!(b_ctl.0.load(Ordering::SeqCst));
    assert_eq!(one(&mut a, "KILL 999999"), "ERR 1094");
    b.disconnect();
    assert!(server.process(bid).is_none());
}

#[test]
fn kill_query_mid_statement_reports_1317() {
    let (server, _data) = engine_server();
    let (mut a, _) = root(&server);
    let (mut b, _) = root(&server);
    let bid = b.id();
    let h = std::thread::spawn(move || {
        b.command_begin(0x03);
        let r = b.query("SELECT 1, SLEEP(20)", false);
        b.command_end();
        r
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while !q(&mut a, "SHOW PROCESSLIST")
        .unwrap()
        .iter()
        .any(|r| r[0] == bid.to_string() && r[7].contains("SLEEP"))
    {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
    a.kill(bid).ok();
    let r = h.join().unwrap();
    assert_eq!(r[0].as_ref().unwrap_err().code, 1317);
}

#[test]
fn reset_connection_restores_defaults() {
    let (server, _data) = engine_server();
    let (mut s, _) = root(&server);
    one(&mut s, "SET @x = 1, wait_timeout = 5");
    s.prepare(1, "SELECT 1").unwrap();
    s.reset_connection();
    assert_eq!(one(&mut s, "SELECT @x, @@wait_timeout"), "NULL|28800");
    assert_eq!(s.execute(1, &[]).unwrap_err().code, 1243);
}

#[test]
fn startup_options() {
    let (server, _data) = engine_server();
    server.set_startup_option("port", "3307").unwrap();
    server
        .set_startup_option("thread-handling", "pool-of-threads")
        .unwrap();
    server
        .set_startup_option("max_allowed_packet", "16M")
        .unwrap();
    server.set_startup_option("datadir", "/tmp/x").unwrap();
    assert!(server.set_startup_option("no-such-option", "1").is_err());
    assert!(server
        .set_startup_option("max-connections", "lots")
        .is_err());
    assert!(server.set_startup_option("port", "70000").is_err());
    assert_eq!(server.port(), 3307);
    assert_eq!(server.thread_handling(), "pool-of-threads");
    assert_eq!(server.max_allowed_packet(), 16 << 20);
    assert_eq!(server.datadir(), std::path::PathBuf::from("/tmp/x"));
    server.set_startup_option("admin_port", "3307").unwrap();
    assert!(server.finish_startup().is_err());
}

/// One block of a fixture file (see tests/sql/README.md).
#[path = "../../../tests/sql/fixture.rs"]
mod fixture;

/// One session of an in-process server as a fixture target.
struct InProcess(Session);

impl fixture::Target for InProcess {
    fn run(&mut self, sql: &str) -> Result<fixture::Outcome, (u16, String)> {
        self.0.command_begin(0x03);
        let r = self.0.query(sql, false).remove(0);
        self.0.command_end();
        match r {
            Err(e) => Err((e.code, e.message)),
            Ok(Response::Ok(ok)) => Ok(fixture::Outcome {
                affected: ok.affected_rows,
                insert_id: ok.last_insert_id,
                info: ok.info,
                warnings: ok.warnings,
                ..Default::default()
            }),
            Ok(Response::Rows(rs)) => Ok(fixture::Outcome {
                columns: rs.columns.iter().map(|c| c.name.clone()).collect(),
                // As the text protocol renders them (the protocol crate's own encoder).
                rows: Some(
                    rs.rows
                        .iter()
                        .map(|r| {
                            r.iter()
                                .zip(rs.columns.iter())
                                .map(|(v, c)| {
                                    shoal_proto::values::text_of(v, c.column_type, c.decimals)
                                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                                })
                                .collect()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
        }
    }
}

/// Runs every fixture of tests/sql in-process, each file on a fresh server with a real table
/// engine (the wire and MariaDB runners are in crates/server/tests/sql_suite.rs).
#[test]
fn fixtures_pass_in_process() {
    let dir = std::path::Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("../../tests/sql");
    let mut report = fixture::Report::default();
    for f in fixture::files(&dir) {
        let tag = format!("fixture-{}", f.file_stem().unwrap().to_string_lossy());
        let (server, data) = table_server(&tag);
        let (s, _) = root(&server);
        let mut target = InProcess(s);
        report.absorb(fixture::run_file(&f, &mut target, fixture::Side::Shoal));
        drop(target);
        drop(server);
        let _ = std::fs::remove_dir_all(&data);
    }
    assert!(report.ran > 100, "only {} blocks ran", report.ran);
    assert!(
        report.failures.is_empty(),
        "{} fixture failures:\n{}",
        report.failures.len(),
        report.failures.join("\n")
    );
}

/// A datadir removed when the test ends.
struct Data(std::path::PathBuf);

impl Drop for Data {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server with its table engine on a fresh datadir of its own (every statement that reads
/// rows, `SELECT 1` included, runs in the engine).
fn engine_server() -> (Arc<Server>, Data) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let (server, dir) = table_server(&format!("t{}", N.fetch_add(1, Ordering::Relaxed)));
    (server, Data(dir))
}

/// A server with a real table engine in a fresh directory (removed by the caller at the end).
fn table_server(tag: &str) -> (Arc<Server>, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "shoal-session-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cfg = shoal_exec::EngineConfig::new(&dir);
    cfg.direct_reads = false;
    cfg.block_cache_bytes = 8 << 20;
    let engine = shoal_exec::TableEngine::open(cfg).unwrap();
    let server = Server::new();
    // The development default: a fresh datadir's root has no password.
    server.accounts().set_initialize_insecure(true);
    server.set_table_engine(engine);
    (server, dir)
}

/// What the thread pool learns after each command: the table engine's transaction and row-lock
/// state (BEGIN and implicit autocommit=0 transactions alike) and the session's own
/// `thread_pool_priority` / `high_prio_mode` / `high_prio_tickets`.
#[test]
fn scheduling_hint_reports_row_locks_and_pool_priority() {
    use shoal_sched::{HighPrioMode, SessionPriority};
    let (server, dir) = table_server("hint");
    let (mut s, _) = root(&server);
    for sql in [
        "CREATE DATABASE hint",
        "USE hint",
        "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
        "INSERT INTO t VALUES (1, 1)",
    ] {
        assert_eq!(one(&mut s, sql), "", "{sql}");
    }
    let h = s.scheduling_hint();
    assert!(!h.in_transaction && !h.holds_locks, "{h:?}");
    assert_eq!(h.priority, SessionPriority::Auto);
    assert_eq!(h.mode, Some(HighPrioMode::Transactions));
    assert_eq!(h.tickets, Some(u64::from(u32::MAX)));
    one(&mut s, "BEGIN");
    let h = s.scheduling_hint();
    assert!(h.in_transaction && !h.holds_locks, "{h:?}");
    assert_eq!(one(&mut s, "SELECT v FROM t WHERE id = 1 FOR UPDATE"), "1");
    assert!(s.scheduling_hint().holds_locks);
    one(&mut s, "COMMIT");
    let h = s.scheduling_hint();
    assert!(!h.in_transaction && !h.holds_locks, "{h:?}");
    // autocommit=0: the first locking statement opens a transaction that holds the row.
    one(&mut s, "SET autocommit = 0");
    one(&mut s, "UPDATE t SET v = 2 WHERE id = 1");
    let h = s.scheduling_hint();
    assert!(h.in_transaction && h.holds_locks, "{h:?}");
    one(&mut s, "ROLLBACK");
    assert!(!s.scheduling_hint().holds_locks);
    one(&mut s, "SET autocommit = 1");
    // Session values win; SET GLOBAL applies to sessions opened afterwards (MySQL semantics).
    let (mut other, _) = root(&server);
    one(&mut s, "SET SESSION thread_pool_priority = 'high'");
    one(&mut s, "SET SESSION thread_pool_high_prio_mode = 'none'");
    one(&mut s, "SET SESSION thread_pool_high_prio_tickets = 3");
    one(&mut s, "SET GLOBAL thread_pool_priority = 'low'");
    let h = s.scheduling_hint();
    assert_eq!(h.priority, SessionPriority::High);
    assert_eq!(h.mode, Some(HighPrioMode::None));
    assert_eq!(h.tickets, Some(3));
    assert_eq!(other.scheduling_hint().priority, SessionPriority::Auto);
    let (mut newer, _) = root(&server);
    assert_eq!(newer.scheduling_hint().priority, SessionPriority::Low);
    newer.disconnect();
    assert_eq!(
        one(&mut s, "SET SESSION thread_pool_priority = 'bogus'"),
        "ERR 1231"
    );
    one(&mut s, "SET GLOBAL thread_pool_priority = 'auto'");
    // thread_pool_exact_stats is read-only (queueing times are always exact).
    assert_eq!(
        one(&mut s, "SET GLOBAL thread_pool_exact_stats = OFF"),
        "ERR 1238"
    );
    assert_eq!(one(&mut s, "SELECT @@thread_pool_exact_stats"), "1");
    s.disconnect();
    other.disconnect();
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A prepared table SELECT converts its result columns once, at PREPARE: every execution's
/// result set shares them, they are the ones PREPARE announced, and an ALTER TABLE between
/// executions (a new table definition, so the executor re-derives the columns it reads) changes
/// neither the columns nor the values. A prepared SHOW (columns the executor builds per
/// execution) still gets its own.
#[test]
fn prepared_table_statements_share_their_columns() {
    let (server, dir) = table_server("cols");
    let (mut s, _) = root(&server);
    for sql in [
        "CREATE DATABASE cols",
        "USE cols",
        "CREATE TABLE t (id INT PRIMARY KEY, k INT, c CHAR(10), pad CHAR(10))",
        "INSERT INTO t VALUES (1, 10, 'one', 'p1'), (2, 20, 'two', 'p2')",
    ] {
        assert_eq!(one(&mut s, sql), "", "{sql}");
    }
    let ok = s.prepare(1, "SELECT c, id FROM t WHERE id = ?").unwrap();
    let announced: Vec<&str> = ok.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(announced, ["c", "id"]);
    let run = |s: &mut Session, id: i64| {
        let Response::Rows(rs) = s.execute(1, &[PValue::Int(id)]).unwrap() else {
            panic!("rows expected")
        };
        rs
    };
    let a = run(&mut s, 1);
    let b = run(&mut s, 2);
    assert!(std::sync::Arc::ptr_eq(&a.columns, &b.columns));
    assert_eq!(a.columns.to_vec(), ok.columns);
    assert_eq!(
        a.rows,
        vec![vec![PValue::Bytes(b"one".to_vec()), PValue::Int(1)]].into()
    );
    assert_eq!(
        b.rows,
        vec![vec![PValue::Bytes(b"two".to_vec()), PValue::Int(2)]].into()
    );
    assert_eq!(one(&mut s, "ALTER TABLE t ADD INDEX k_idx (k)"), "");
    let c = run(&mut s, 2);
    assert_eq!(c.columns.to_vec(), ok.columns);
    assert_eq!(c.rows, b.rows);
    // A different statement prepared on the same text has its own columns.
    s.prepare(2, "SELECT c, id FROM t WHERE id = ?").unwrap();
    let Response::Rows(d) = s.execute(2, &[PValue::Int(1)]).unwrap() else {
        panic!("rows expected")
    };
    assert!(!std::sync::Arc::ptr_eq(&a.columns, &d.columns));
    assert_eq!(d.rows, a.rows);
    s.prepare(3, "SHOW TABLES").unwrap();
    let Response::Rows(e) = s.execute(3, &[]).unwrap() else {
        panic!("rows expected")
    };
    assert_eq!(e.columns[0].name, "Tables_in_cols");
    assert_eq!(e.rows, vec![vec![PValue::Bytes(b"t".to_vec())]].into());
    s.disconnect();
    drop(s);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn evaluator_warnings_reach_show_warnings_and_the_packet() {
    let (server, _data) = engine_server();
    let (mut s, _) = root(&server);
    s.command_begin(0x03);
    let mut r = s.query("SELECT REPEAT('ab', 33554433)", false);
    s.command_end();
    match r.remove(0) {
        Ok(Response::Rows(rs)) => {
            assert_eq!(rs.warnings, 1);
            assert_eq!(text(&rs.rows[0][0]), "NULL");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        one(&mut s, "SHOW WARNINGS"),
        "Warning|1301|Result of repeat() was larger than max_allowed_packet (67108864) - truncated"
    );
    // The session's max_allowed_packet is the one that counts.
    assert_eq!(one(&mut s, "SET GLOBAL max_allowed_packet = 4096"), "");
    let (mut s2, _) = root(&server);
    assert_eq!(
        one(
            &mut s2,
            "SELECT CONCAT(REPEAT('a', 3000), REPEAT('b', 2000))"
        ),
        "NULL"
    );
    assert_eq!(
        one(&mut s2, "SHOW WARNINGS"),
        "Warning|1301|Result of concat() was larger than max_allowed_packet (4096) - truncated"
    );
    assert_eq!(
        one(
            &mut s,
            "SELECT UNIX_TIMESTAMP('2020-01-01 10:00:00.\u{e9}\u{20ac}\u{20ac}')"
        ),
        "1577872800"
    );
    assert_eq!(
        one(&mut s, "SHOW WARNINGS"),
        "Warning|1292|Truncated incorrect datetime value: '2020-01-01 10:00:00.\u{e9}\u{20ac}\u{20ac}'"
    );
}

#[test]
fn deep_expressions_answer_or_fail_with_1436_on_a_worker_stack() {
    let got = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let (server, _data) = engine_server();
            let (mut s, _) = root(&server);
            [1_000, 10_000, 100_000]
                .map(|n| one(&mut s, &format!("SELECT 1{}", "+1".repeat(n - 1))))
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(got, ["1000", "ERR 1436", "ERR 1436"]);
}

/// Found by fuzzing: a table query's result column took the type of a CASE's first branch, or a
/// UNION's left branch, or (over information_schema) BIGINT for any aggregate, while its values
/// came from every branch (a string or a date in a
/// BIGINT column, a DOUBLE in a DATE column). The text protocol did not mind; the binary
/// protocol (COM_STMT_EXECUTE) cannot encode such a value and the client got ERR 1105
/// "internal error" instead of the rows. Every value must encode as its column's type.
#[test]
fn result_columns_hold_every_branch_of_case_and_union_in_the_binary_protocol() {
    let (server, dir) = table_server("branches");
    let (mut s, _) = root(&server);
    for sql in [
        "CREATE DATABASE br",
        "USE br",
        "CREATE TABLE t (id INT PRIMARY KEY, c VARCHAR(10), d DATE, f DOUBLE, u INT UNSIGNED)",
        "INSERT INTO t VALUES (1, 'one', '2024-01-02', 1.5, 7), (2, 'two', NULL, NULL, 4294967295)",
        "SET @big = 18446744073709551615",
    ] {
        assert_eq!(one(&mut s, sql), "", "{sql}");
    }
    let cases = [
        (
            "SELECT CASE WHEN id = 1 THEN id ELSE c END FROM t ORDER BY id",
            "1|two",
        ),
        ("SELECT IF(id = 2, d, f) FROM t ORDER BY id", "1.5|NULL"),
        ("SELECT COALESCE(d, id) FROM t ORDER BY id", "2024-01-02|2"),
        ("SELECT -u FROM t ORDER BY id", "-7|-4294967295"),
        ("SELECT CEIL(d) FROM t ORDER BY id", "20240102|NULL"),
        ("SELECT @big DIV 1 FROM t WHERE id = 1", "18446744073709551615"),
        (
            "SELECT -9223372036854775808 % u FROM t ORDER BY id",
            "-1|-2147483648",
        ),
        ("SELECT id FROM t UNION ALL SELECT c FROM t", "1|2|one|two"),
        (
            "SELECT d FROM t WHERE id = 1 UNION ALL SELECT f FROM t",
            "2024-01-02|1.5|NULL",
        ),
        (
            "SELECT id FROM t UNION ALL SELECT u FROM t",
            "1|2|7|4294967295",
        ),
        (
            "SELECT NULL FROM t WHERE id = 1 UNION ALL SELECT d FROM t WHERE id = 1",
            "NULL|2024-01-02",
        ),
        // The single-table path over information_schema typed every aggregate BIGINT.
        (
            "SELECT MAX(TABLE_NAME), COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'br'",
            "t|5",
        ),
    ];
    for (i, (sql, want)) in cases.iter().enumerate() {
        let id = i as u32 + 1;
        s.prepare(id, sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let Response::Rows(rs) = s.execute(id, &[]).unwrap_or_else(|e| panic!("{sql}: {e}")) else {
            panic!("{sql}: rows expected")
        };
        let mut got = Vec::new();
        for row in &rs.rows {
            for (v, c) in row.iter().zip(rs.columns.iter()) {
                if !matches!(v, PValue::NULL) {
                    let unsigned = c.flags.contains(shoal_proto::ColumnFlags::UNSIGNED_FLAG);
                    let mut buf = Vec::new();
                    shoal_proto::values::encode_binary(
                        &mut buf,
                        v,
                        c.column_type,
                        unsigned,
                        c.decimals,
                    )
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
                }
                got.push(
                    shoal_proto::values::text_of(v, c.column_type, c.decimals)
                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                        .unwrap_or_else(|| "NULL".into()),
                );
            }
        }
        assert_eq!(got.join("|"), *want, "{sql}");
    }
    s.disconnect();
    drop(s);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Found by fuzzing: `max_execution_time` was armed only for statements the session's parser
/// takes; a SELECT only the table engine parses (ORDER BY, GROUP BY, joins, UNION, derived
/// tables) ran past it, `SELECT * FROM t ORDER BY SLEEP(80)` for 80 s a row. Statements other
/// than queries stay exempt (a DDL that outlives the limit is not reported as timed out).
#[test]
fn max_execution_time_stops_selects_only_the_engine_parses() {
    let (server, dir) = table_server("deadline");
    let (mut s, _) = root(&server);
    for sql in [
        "CREATE DATABASE dl",
        "USE dl",
        "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
        "INSERT INTO t VALUES (1, 1), (2, 2), (3, 3)",
        "SET SESSION max_execution_time = 200",
    ] {
        assert_eq!(one(&mut s, sql), "", "{sql}");
    }
    for sql in [
        "SELECT id FROM t ORDER BY SLEEP(80)",
        "SELECT v FROM t GROUP BY SLEEP(80)",
        "SELECT a.id FROM t a JOIN t b ON SLEEP(80) = 0",
        "SELECT SLEEP(80) FROM t UNION SELECT 1",
        "SELECT * FROM (SELECT SLEEP(80) FROM t) x",
        "(SELECT SLEEP(80) FROM t ORDER BY 1)",
    ] {
        let started = Instant::now();
        assert_eq!(one(&mut s, sql), "ERR 3024", "{sql}");
        assert!(started.elapsed() < Duration::from_secs(5), "{sql}");
    }
    assert_eq!(one(&mut s, "SET SESSION max_execution_time = 1"), "");
    assert_eq!(one(&mut s, "ALTER TABLE t ADD INDEX v_idx (v)"), "");
    assert_eq!(
        one(
            &mut s,
            "INSERT INTO t SELECT id + 10, SLEEP(0.01) FROM t ORDER BY id"
        ),
        ""
    );
    // The check itself is a SELECT: off the limit, or a slow machine stops it too.
    assert_eq!(one(&mut s, "SET SESSION max_execution_time = 0"), "");
    assert_eq!(one(&mut s, "SELECT COUNT(*) FROM t"), "6");
    s.disconnect();
    drop(s);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Found by fuzzing: a statement with more than 65535 placeholders was announced with its count
/// truncated to 16 bits (65536 as 0) and could never execute. MySQL refuses it with 1390, on
/// both paths (the session's parser and the table engine's plan).
#[test]
fn prepare_of_more_than_65535_placeholders_is_1390() {
    let (server, dir) = table_server("placeholders");
    let (mut s, _) = root(&server);
    for sql in [
        "CREATE DATABASE ph",
        "USE ph",
        "CREATE TABLE t (a INT PRIMARY KEY)",
    ] {
        assert_eq!(one(&mut s, sql), "", "{sql}");
    }
    for n in [65_536usize, 70_000] {
        let list = vec!["?"; n].join(",");
        for sql in [
            format!("SELECT {list}"),
            format!("SELECT a FROM t WHERE a IN ({list}) ORDER BY a"),
        ] {
            let e = s.prepare(1, &sql).unwrap_err();
            assert_eq!(
                (e.code, &e.message[..]),
                (1390, "Prepared statement contains too many placeholders")
            );
        }
    }
    let list = vec!["?"; 65_535].join(",");
    let ok = s
        .prepare(
            2,
            &format!("SELECT a FROM t WHERE a IN ({list}) ORDER BY a"),
        )
        .unwrap();
    assert_eq!(ok.params, 65_535);
    s.disconnect();
    drop(s);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
