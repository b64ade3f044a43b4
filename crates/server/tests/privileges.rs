//! Accounts and privileges against the real `shoal` binary: every check fails without its
//! privilege with MySQL's exact error, passes after GRANT, fails again after REVOKE; accounts
//! and grants survive a restart and a `kill -9`; SHOW GRANTS reads as MariaDB's for the same
//! statements; the `mariadb` CLI and PyMySQL log in and get the same answers.

mod support;

use std::process::Command;

use mysql::prelude::Queryable;
use mysql::Conn;
use support::Shoal;

/// Runs `q`; panics with the error if it fails.
fn exec(c: &mut Conn, q: &str) {
    c.query_drop(q)
        .unwrap_or_else(|e| panic!("{q} failed: {e}"));
}

/// The (code, SQLSTATE, message) `q` fails with; panics if it succeeds.
fn fails(c: &mut Conn, q: &str) -> (u16, String, String) {
    match c.query_drop(q) {
        Ok(()) => panic!("{q} succeeded; expected an error"),
        Err(mysql::Error::MySqlError(e)) => (e.code, e.state, e.message),
        Err(e) => panic!("{q}: unexpected error {e}"),
    }
}

/// Asserts that `q` fails with `code` and exactly `message`.
fn denied(c: &mut Conn, q: &str, code: u16, message: &str) {
    let (got, state, msg) = fails(c, q);
    assert_eq!((got, msg.as_str()), (code, message), "{q}");
    let want_state = match code {
        1045 => "28000",
        1227 | 1142 | 1044 | 1141 | 1147 => "42000",
        _ => state.as_str(),
    };
    assert_eq!(state, want_state, "{q}");
}

fn rows(c: &mut Conn, q: &str) -> Vec<String> {
    c.query_map(q, |r: mysql::Row| {
        (0..r.len())
            .map(|i| match r.as_ref(i).unwrap() {
                mysql::Value::NULL => "NULL".to_string(),
                mysql::Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                v => v.as_sql(true),
            })
            .collect::<Vec<_>>()
            .join("\t")
    })
    .unwrap_or_else(|e| panic!("{q} failed: {e}"))
}

fn login(s: &Shoal, user: &str, pw: &str, db: Option<&str>) -> Result<Conn, mysql::Error> {
    Conn::new(s.mysql_opts().user(Some(user)).pass(Some(pw)).db_name(db))
}

fn user_conn(s: &Shoal, user: &str, pw: &str) -> Conn {
    login(s, user, pw, None).unwrap_or_else(|e| panic!("login {user}: {e}"))
}

/// The client host the server reports in errors for these TCP connections.
const H: &str = "127.0.0.1";

fn table_denied(cmd: &str, user: &str, db: &str, t: &str) -> String {
    format!("{cmd} command denied to user '{user}'@'{H}' for table `{db}`.`{t}`")
}

fn setup_tables(root: &mut Conn) {
    for q in [
        "CREATE DATABASE d1",
        "CREATE TABLE d1.t1 (id INT PRIMARY KEY, v INT)",
        "CREATE TABLE d1.t2 (id INT PRIMARY KEY, v INT)",
        "INSERT INTO d1.t1 VALUES (1, 10), (2, 20)",
        "INSERT INTO d1.t2 VALUES (1, 100)",
        "CREATE USER 'bob'@'%' IDENTIFIED BY 'pw'",
    ] {
        exec(root, q);
    }
}

#[test]
fn dml_needs_its_privileges_on_every_table_it_touches() {
    let s = Shoal::start("priv-dml", &[]);
    let mut root = s.conn();
    setup_tables(&mut root);
    let mut bob = user_conn(&s, "bob", "pw");
    let sel = table_denied("SELECT", "bob", "d1", "t1");
    denied(&mut bob, "SELECT * FROM d1.t1", 1142, &sel);
    // A prepared statement is checked at PREPARE, and at every execution.
    match bob.prep("SELECT v FROM d1.t1 WHERE id = ?") {
        Err(mysql::Error::MySqlError(e)) => assert_eq!((e.code, e.message), (1142, sel.clone())),
        other => panic!("PREPARE without SELECT: {:?}", other.map(|_| ())),
    }

    exec(&mut root, "GRANT SELECT ON d1.t1 TO 'bob'@'%'");
    assert_eq!(
        rows(&mut bob, "SELECT v FROM d1.t1 ORDER BY id"),
        ["10", "20"]
    );
    let stmt = bob.prep("SELECT v FROM d1.t1 WHERE id = ?").unwrap();
    assert_eq!(bob.exec_first::<i64, _, _>(&stmt, (2,)).unwrap(), Some(20));
    // Every table a query reads: joins, subqueries, derived tables.
    let t2 = table_denied("SELECT", "bob", "d1", "t2");
    denied(
        &mut bob,
        "SELECT * FROM d1.t1 JOIN d1.t2 USING (id)",
        1142,
        &t2,
    );
    denied(
        &mut bob,
        "SELECT v FROM d1.t1 WHERE id IN (SELECT id FROM d1.t2)",
        1142,
        &t2,
    );
    denied(&mut bob, "SELECT * FROM (SELECT * FROM d1.t2) x", 1142, &t2);
    // Writes.
    let ins = table_denied("INSERT", "bob", "d1", "t1");
    denied(&mut bob, "INSERT INTO d1.t1 VALUES (3, 30)", 1142, &ins);
    exec(&mut root, "GRANT INSERT ON d1.t1 TO 'bob'@'%'");
    exec(&mut bob, "INSERT INTO d1.t1 VALUES (3, 30)");
    // INSERT ... SELECT reads its source; REPLACE also deletes; ON DUPLICATE KEY also updates.
    denied(
        &mut bob,
        "INSERT INTO d1.t1 SELECT id + 10, v FROM d1.t2",
        1142,
        &t2,
    );
    denied(
        &mut bob,
        "REPLACE INTO d1.t1 VALUES (1, 11)",
        1142,
        &table_denied("DELETE", "bob", "d1", "t1"),
    );
    denied(
        &mut bob,
        "INSERT INTO d1.t1 VALUES (1, 1) ON DUPLICATE KEY UPDATE v = 1",
        1142,
        &table_denied("UPDATE", "bob", "d1", "t1"),
    );
    // UPDATE needs SELECT too when it reads columns: with UPDATE alone, only a blind update runs.
    exec(&mut root, "GRANT UPDATE ON d1.t2 TO 'bob'@'%'");
    exec(&mut bob, "UPDATE d1.t2 SET v = 5");
    denied(&mut bob, "UPDATE d1.t2 SET v = 6 WHERE id = 1", 1142, &t2);
    denied(&mut bob, "UPDATE d1.t2 SET v = v + 1", 1142, &t2);
    // Multi-table UPDATE: the table only read needs SELECT.
    denied(
        &mut bob,
        "UPDATE d1.t1 JOIN d1.t2 USING (id) SET d1.t1.v = 0",
        1142,
        &table_denied("UPDATE", "bob", "d1", "t1"),
    );
    let del = table_denied("DELETE", "bob", "d1", "t1");
    denied(&mut bob, "DELETE FROM d1.t1 WHERE id = 3", 1142, &del);
    // Database level covers every table of the database.
    exec(&mut root, "GRANT SELECT, DELETE ON d1.* TO 'bob'@'%'");
    exec(&mut bob, "DELETE FROM d1.t1 WHERE id = 3");
    exec(&mut bob, "UPDATE d1.t2 SET v = 6 WHERE id = 1");
    assert_eq!(rows(&mut bob, "SELECT v FROM d1.t2"), ["6"]);
    // REVOKE applies at the next statement, prepared ones included.
    exec(&mut root, "REVOKE SELECT ON d1.* FROM 'bob'@'%'");
    exec(&mut root, "REVOKE SELECT ON d1.t1 FROM 'bob'@'%'");
    denied(&mut bob, "SELECT * FROM d1.t1", 1142, &sel);
    denied(&mut bob, "SELECT * FROM d1.t2", 1142, &t2);
    match bob.exec_first::<i64, _, _>(&stmt, (2,)) {
        Err(mysql::Error::MySqlError(e)) => assert_eq!((e.code, e.message), (1142, sel)),
        other => panic!("prepared SELECT after REVOKE: {other:?}"),
    }
    // Revoking what was never granted at a level: MySQL's 1141 / 1147.
    denied(
        &mut root,
        "REVOKE SELECT ON d9.* FROM 'bob'@'%'",
        1141,
        "There is no such grant defined for user 'bob' on host '%'",
    );
    denied(
        &mut root,
        "REVOKE SELECT ON d1.t9 FROM 'bob'@'%'",
        1147,
        "There is no such grant defined for user 'bob' on host '%' on table 't9'",
    );
}

#[test]
fn ddl_and_database_access_need_their_privileges() {
    let s = Shoal::start("priv-ddl", &[]);
    let mut root = s.conn();
    setup_tables(&mut root);
    let mut bob = user_conn(&s, "bob", "pw");
    let db_denied = format!("Access denied for user 'bob'@'{H}' to database 'd1'");
    // USE and a login with a database: 1044 without any privilege there.
    denied(&mut bob, "USE d1", 1044, &db_denied);
    match login(&s, "bob", "pw", Some("d1")) {
        Err(mysql::Error::MySqlError(e)) => {
            assert_eq!((e.code, e.message), (1044, db_denied.clone()))
        }
        other => panic!("login with d1: {:?}", other.map(|_| ())),
    }
    denied(
        &mut bob,
        "CREATE DATABASE d2",
        1044,
        &format!("Access denied for user 'bob'@'{H}' to database 'd2'"),
    );
    denied(&mut bob, "DROP DATABASE d1", 1044, &db_denied);
    // SHOW DATABASES lists only what bob has privileges in.
    assert_eq!(rows(&mut bob, "SHOW DATABASES"), ["information_schema"]);
    denied(
        &mut bob,
        "CREATE TABLE d1.t3 (id INT PRIMARY KEY)",
        1142,
        &table_denied("CREATE", "bob", "d1", "t3"),
    );
    exec(&mut root, "GRANT CREATE ON d1.* TO 'bob'@'%'");
    exec(&mut bob, "USE d1");
    assert!(rows(&mut bob, "SHOW DATABASES").contains(&"d1".to_string()));
    exec(&mut bob, "CREATE TABLE t3 (id INT PRIMARY KEY, p INT)");
    assert!(login(&s, "bob", "pw", Some("d1")).is_ok());
    // SHOW TABLES shows the tables bob has a privilege on (all: CREATE is database-wide).
    assert_eq!(rows(&mut bob, "SHOW TABLES").len(), 3);
    denied(
        &mut bob,
        "CREATE INDEX ip ON t3 (p)",
        1142,
        &table_denied("INDEX", "bob", "d1", "t3"),
    );
    denied(
        &mut bob,
        "ALTER TABLE t3 ADD INDEX ip (p)",
        1142,
        &table_denied("ALTER", "bob", "d1", "t3"),
    );
    denied(
        &mut bob,
        "CREATE TABLE c (id INT PRIMARY KEY, r INT, FOREIGN KEY (r) REFERENCES t1 (id))",
        1142,
        &table_denied("REFERENCES", "bob", "d1", "t1"),
    );
    denied(
        &mut bob,
        "DROP TABLE t3",
        1142,
        &table_denied("DROP", "bob", "d1", "t3"),
    );
    denied(
        &mut bob,
        "TRUNCATE TABLE t3",
        1142,
        &table_denied("DROP", "bob", "d1", "t3"),
    );
    exec(
        &mut root,
        "GRANT INDEX, ALTER, REFERENCES, DROP ON d1.* TO 'bob'@'%'",
    );
    exec(&mut bob, "CREATE INDEX ip ON t3 (p)");
    exec(&mut bob, "ALTER TABLE t3 DROP INDEX ip");
    exec(
        &mut bob,
        "CREATE TABLE c (id INT PRIMARY KEY, r INT, FOREIGN KEY (r) REFERENCES t1 (id))",
    );
    exec(&mut bob, "DROP TABLE c, t3");
    exec(&mut root, "REVOKE ALL PRIVILEGES ON d1.* FROM 'bob'@'%'");
    denied(
        &mut bob,
        "DROP TABLE t2",
        1142,
        &table_denied("DROP", "bob", "d1", "t2"),
    );
    // A table-level grant is enough to enter the database and see only that table.
    exec(&mut root, "GRANT SELECT ON d1.t2 TO 'bob'@'%'");
    assert_eq!(rows(&mut bob, "SHOW TABLES FROM d1"), ["t2"]);
    // information_schema shows only what bob has privileges on.
    assert_eq!(
        rows(
            &mut bob,
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd1'"
        ),
        ["t2"]
    );
    assert_eq!(
        rows(&mut bob, "SELECT DISTINCT TABLE_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA <> 'information_schema'"),
        ["t2"]
    );
    assert_eq!(
        rows(
            &mut bob,
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME"
        ),
        ["d1", "information_schema"]
    );
    assert!(
        rows(
            &mut root,
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA"
        )
        .len()
            > 2
    );
    // GRANT on a missing table without CREATE: 1146; a grant needs GRANT OPTION (1044 / 1142).
    let (code, _, _) = fails(&mut root, "GRANT SELECT ON d1.nope TO 'bob'@'%'");
    assert_eq!(code, 1146);
    denied(
        &mut bob,
        "GRANT SELECT ON d1.* TO 'bob'@'%'",
        1044,
        &db_denied,
    );
    denied(
        &mut bob,
        "GRANT SELECT ON d1.t2 TO 'bob'@'%'",
        1142,
        &format!("GRANT command denied to user 'bob'@'{H}' for table `d1`.`t2`"),
    );
    denied(
        &mut root,
        "GRANT SELECT ON d1.* TO 'nobody'@'%'",
        1410,
        "You are not allowed to create a user with GRANT",
    );
}

#[test]
fn server_privileges_super_process_reload_and_admin() {
    let s = Shoal::start(
        "priv-admin",
        &["--thread-handling=pool-of-threads", "--thread-pool-size=2"],
    );
    let mut root = s.conn();
    setup_tables(&mut root);
    exec(&mut root, "GRANT SELECT, INSERT ON d1.* TO 'bob'@'%'");
    let mut bob = user_conn(&s, "bob", "pw");
    let need = |p: &str| {
        format!("Access denied; you need (at least one of) the {p} privilege(s) for this operation")
    };
    // SET GLOBAL: SUPER or SYSTEM_VARIABLES_ADMIN.
    let set_global = "SET GLOBAL max_connect_errors = 50";
    denied(
        &mut bob,
        set_global,
        1227,
        &need("SUPER or SYSTEM_VARIABLES_ADMIN"),
    );
    exec(
        &mut root,
        "GRANT SYSTEM_VARIABLES_ADMIN ON *.* TO 'bob'@'%'",
    );
    exec(&mut bob, set_global);
    exec(
        &mut root,
        "REVOKE SYSTEM_VARIABLES_ADMIN ON *.* FROM 'bob'@'%'",
    );
    denied(
        &mut bob,
        set_global,
        1227,
        &need("SUPER or SYSTEM_VARIABLES_ADMIN"),
    );
    // FLUSH: RELOAD; the pool's statements and tables: RELOAD / PROCESS.
    denied(&mut bob, "FLUSH STATUS", 1227, &need("RELOAD"));
    denied(&mut bob, "FLUSH THREAD_POOL_STATS", 1227, &need("RELOAD"));
    denied(
        &mut bob,
        "SELECT * FROM information_schema.THREAD_POOL_GROUPS",
        1227,
        &need("PROCESS"),
    );
    denied(
        &mut bob,
        "SELECT COUNT(*) FROM information_schema.THREAD_POOL_GROUPS",
        1227,
        &need("PROCESS"),
    );
    exec(&mut root, "GRANT RELOAD, PROCESS ON *.* TO 'bob'@'%'");
    exec(&mut bob, "FLUSH STATUS");
    exec(&mut bob, "FLUSH THREAD_POOL_STATS");
    assert_eq!(
        rows(
            &mut bob,
            "SELECT COUNT(*) FROM information_schema.THREAD_POOL_GROUPS"
        ),
        ["2"]
    );
    // SHOW PROCESSLIST: everyone's threads with PROCESS, only one's own without.
    let root_id: u32 = root.query_first("SELECT CONNECTION_ID()").unwrap().unwrap();
    let users = |c: &mut Conn| {
        rows(c, "SHOW PROCESSLIST")
            .iter()
            .map(|r| r.split('\t').nth(1).unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert!(users(&mut bob).contains(&"root".to_string()));
    exec(&mut root, "REVOKE PROCESS ON *.* FROM 'bob'@'%'");
    assert_eq!(users(&mut bob), ["bob"]);
    denied(
        &mut bob,
        "SELECT * FROM information_schema.THREAD_POOL_QUEUES",
        1227,
        &need("PROCESS"),
    );
    // KILL of another user's thread: SUPER or CONNECTION_ADMIN.
    let kill = format!("KILL QUERY {root_id}");
    denied(
        &mut bob,
        &kill,
        1095,
        &format!("You are not owner of thread {root_id}"),
    );
    exec(&mut root, "GRANT CONNECTION_ADMIN ON *.* TO 'bob'@'%'");
    exec(&mut bob, &kill);
    exec(&mut root, "REVOKE CONNECTION_ADMIN ON *.* FROM 'bob'@'%'");
    denied(
        &mut bob,
        &kill,
        1095,
        &format!("You are not owner of thread {root_id}"),
    );
    // read_only exempts SUPER only.
    exec(&mut root, "SET GLOBAL read_only = ON");
    let ro = "The MySQL server is running with the --read-only option so it cannot execute this statement";
    denied(&mut bob, "INSERT INTO d1.t1 VALUES (7, 7)", 1290, ro);
    exec(&mut root, "GRANT SUPER ON *.* TO 'bob'@'%'");
    exec(&mut bob, "INSERT INTO d1.t1 VALUES (7, 7)");
    exec(&mut root, "REVOKE SUPER ON *.* FROM 'bob'@'%'");
    denied(&mut bob, "INSERT INTO d1.t1 VALUES (8, 8)", 1290, ro);
    exec(&mut root, "SET GLOBAL read_only = OFF");
    // Account management: CREATE USER; the mysql tables: SELECT on them.
    denied(
        &mut bob,
        "CREATE USER 'eve'@'%'",
        1227,
        &need("CREATE USER"),
    );
    denied(&mut bob, "DROP USER 'bob'@'%'", 1227, &need("CREATE USER"));
    denied(
        &mut bob,
        "RENAME USER 'bob'@'%' TO 'bo'@'%'",
        1227,
        &need("CREATE USER"),
    );
    denied(
        &mut bob,
        "SELECT User FROM mysql.user",
        1142,
        &table_denied("SELECT", "bob", "mysql", "user"),
    );
    denied(
        &mut bob,
        "SHOW GRANTS FOR 'root'@'localhost'",
        1044,
        &format!("Access denied for user 'bob'@'{H}' to database 'mysql'"),
    );
    exec(&mut root, "GRANT SELECT ON mysql.* TO 'bob'@'%'");
    exec(&mut bob, "USE mysql");
    assert_eq!(
        rows(
            &mut bob,
            "SELECT User, Host, Select_priv, Super_priv FROM user ORDER BY User"
        ),
        ["bob\t%\tN\tN", "root\tlocalhost\tY\tY"]
    );
    assert_eq!(
        rows(
            &mut bob,
            "SELECT Db, User, Select_priv, Insert_priv, Update_priv FROM mysql.db"
        ),
        ["d1\tbob\tY\tY\tN", "mysql\tbob\tY\tN\tN"]
    );
    // One's own password needs no privilege; another's does.
    exec(&mut bob, "SET PASSWORD = PASSWORD('pw2')");
    assert!(login(&s, "bob", "pw", None).is_err());
    drop(user_conn(&s, "bob", "pw2"));
    denied(
        &mut bob,
        "SET PASSWORD FOR 'root'@'localhost' = 'x'",
        1044,
        &format!("Access denied for user 'bob'@'{H}' to database 'mysql'"),
    );
}

#[test]
fn accounts_and_grants_survive_restart_and_kill_9() {
    let dir = support::temp_dir("priv-durable");
    let grants_of = |c: &mut Conn, who: &str| rows(c, &format!("SHOW GRANTS FOR {who}"));
    let (alice_before, carol_before);
    {
        let s = Shoal::start_in(&dir, &[]);
        let mut root = s.conn();
        setup_tables(&mut root);
        for q in [
            "CREATE USER 'alice'@'localhost' IDENTIFIED BY 'a1'",
            "GRANT SELECT, INSERT ON d1.* TO 'alice'@'localhost' WITH GRANT OPTION",
            "GRANT UPDATE ON d1.t2 TO 'alice'@'localhost'",
            "GRANT PROCESS ON *.* TO 'alice'@'localhost'",
            "CREATE USER 'tmp'@'%'",
            "RENAME USER 'tmp'@'%' TO 'carol'@'%'",
            "GRANT DELETE ON d1.t1 TO 'carol'@'%'",
            "ALTER USER 'carol'@'%' IDENTIFIED BY 'c1'",
            "ALTER USER 'bob'@'%' ACCOUNT LOCK",
        ] {
            exec(&mut root, q);
        }
        assert!(
            s.stderr().contains("root@localhost has NO PASSWORD"),
            "{}",
            s.stderr()
        );
        alice_before = grants_of(&mut root, "'alice'@'localhost'");
        carol_before = grants_of(&mut root, "'carol'@'%'");
        let mut s = s;
        assert_eq!(s.stop(), Some(0));
    }
    let s = Shoal::start_in(&dir, &[]);
    let mut root = s.conn();
    assert_eq!(grants_of(&mut root, "'alice'@'localhost'"), alice_before);
    assert_eq!(grants_of(&mut root, "'carol'@'%'"), carol_before);
    let mut alice = user_conn(&s, "alice", "a1");
    assert_eq!(
        rows(&mut alice, "SELECT v FROM d1.t1 ORDER BY id"),
        ["10", "20"]
    );
    drop(user_conn(&s, "carol", "c1"));
    match login(&s, "bob", "pw", None) {
        Err(mysql::Error::MySqlError(e)) => assert_eq!(
            (e.code, e.message),
            (
                3118,
                format!("Access denied for user 'bob'@'{H}'. Account is locked.")
            )
        ),
        other => panic!("locked bob logged in: {:?}", other.map(|_| ())),
    }
    denied(
        &mut root,
        "CREATE USER 'alice'@'localhost'",
        1396,
        "Operation CREATE USER failed for 'alice'@'localhost'",
    );
    // Changes acknowledged just before a kill -9 are there after it.
    for q in [
        "REVOKE INSERT ON d1.* FROM 'alice'@'localhost'",
        "DROP USER 'carol'@'%'",
        "CREATE USER 'dave'@'%' IDENTIFIED BY 'd1'",
        "GRANT SELECT ON d1.t2 TO 'dave'@'%'",
        "ALTER USER 'bob'@'%' ACCOUNT UNLOCK",
    ] {
        exec(&mut root, q);
    }
    let alice_now = grants_of(&mut root, "'alice'@'localhost'");
    assert_ne!(alice_now, alice_before);
    drop(alice);
    drop(root);
    let mut s = s;
    s.stop_with(libc::SIGKILL);
    drop(s);
    let s = Shoal::start_in(&dir, &["--root-password=r00t"]);
    // root had no password until now, and every start said so.
    let mut root =
        Conn::new(s.mysql_opts().pass(Some("r00t"))).expect("root with its new password");
    assert!(login(&s, "root", "", None).is_err());
    assert_eq!(grants_of(&mut root, "'alice'@'localhost'"), alice_now);
    denied(
        &mut root,
        "SHOW GRANTS FOR 'carol'@'%'",
        1141,
        "There is no such grant defined for user 'carol' on host '%'",
    );
    let mut dave = user_conn(&s, "dave", "d1");
    assert_eq!(rows(&mut dave, "SELECT v FROM d1.t2"), ["100"]);
    drop(user_conn(&s, "bob", "pw"));
    assert!(!s.stderr().contains("NO PASSWORD"), "{}", s.stderr());
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same account statements on shoal and on a private MariaDB, through the `mariadb` CLI:
/// SHOW GRANTS must print the same lines (static privileges at the three levels; MariaDB's
/// text, which SHOW GRANTS follows).
#[test]
fn show_grants_text_matches_mariadb() {
    let Some(m) = shoal_testkit::MariaDb::start(&shoal_testkit::MariaDbOptions {
        install: true,
        extra: vec![],
    }) else {
        return;
    };
    let s = Shoal::start("priv-mariadb", &[]);
    let setup = [
        "CREATE DATABASE d1",
        "CREATE TABLE d1.t1 (id INT PRIMARY KEY)",
        "CREATE USER 'u1'@'%' IDENTIFIED BY 'secret'",
        "CREATE USER 'u2'@'localhost'",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON *.* TO 'u1'@'%'",
        "GRANT RELOAD, PROCESS, SHOW DATABASES, SUPER ON *.* TO 'u1'@'%' WITH GRANT OPTION",
        "GRANT ALL PRIVILEGES ON d1.* TO 'u2'@'localhost'",
        "GRANT SELECT, CREATE, DROP, REFERENCES, INDEX, ALTER, LOCK TABLES, CREATE TEMPORARY TABLES ON d2.* TO 'u1'@'%'",
        "GRANT SELECT, INSERT ON d1.t1 TO 'u2'@'localhost' WITH GRANT OPTION",
        "GRANT ALL ON d1.t1 TO 'u1'@'%'",
        "REVOKE INSERT ON *.* FROM 'u1'@'%'",
    ];
    let cli = |port: u16, sql: &str| -> String {
        let out = Command::new("mariadb")
            .args(["-h127.0.0.1", "-uroot", "-N", "-B", "--skip-ssl"])
            .arg(format!("-P{port}"))
            .arg("-e")
            .arg(sql)
            .output()
            .expect("run the mariadb CLI");
        assert!(
            out.status.success(),
            "{sql} on port {port}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let script = setup.join(";\n");
    cli(m.port, &script);
    cli(s.port, &script);
    for who in ["'u1'@'%'", "'u2'@'localhost'"] {
        let q = format!("SHOW GRANTS FOR {who}");
        let mut theirs: Vec<String> = cli(m.port, &q).lines().map(String::from).collect();
        let mut ours: Vec<String> = cli(s.port, &q).lines().map(String::from).collect();
        // MariaDB orders the database and table lines by its hash tables; compare as sets,
        // with the global line first on both.
        assert_eq!(ours.first(), theirs.first(), "{q}");
        theirs.sort();
        ours.sort();
        assert_eq!(ours, theirs, "{q}");
    }
}

/// SHOW CREATE USER: MariaDB's text, column title and errors for the same accounts, its
/// privilege rule, and its output recreating the account with the same password.
#[test]
fn show_create_user_matches_mariadb_and_recreates_the_account() {
    let s = Shoal::start("show-create-user", &[]);
    let setup = [
        "CREATE DATABASE d1",
        "CREATE USER 'nopw'@'%'",
        "CREATE USER 'lk'@'localhost' IDENTIFIED BY 'a' ACCOUNT LOCK",
        "CREATE USER 'we''i`rd'@'10.0.%' IDENTIFIED BY 'b' REQUIRE SSL WITH MAX_USER_CONNECTIONS 7",
        "CREATE USER 'lo'@'%' IDENTIFIED BY 'lopw'",
        "GRANT SELECT ON d1.* TO 'lo'@'%'",
        "CREATE USER 'cu'@'%' IDENTIFIED BY 'cupw'",
        "GRANT CREATE USER ON *.* TO 'cu'@'%'",
        "CREATE USER 'ms'@'%' IDENTIFIED BY 'mspw'",
        "GRANT SELECT ON mysql.* TO 'ms'@'%'",
        "CREATE USER 'mx'@'%' IDENTIFIED BY 'mxpw' WITH MAX_USER_CONNECTIONS 3",
    ];
    let queries = [
        "SHOW CREATE USER 'nopw'",
        "SHOW CREATE USER lk@localhost",
        "SHOW CREATE USER 'we''i`rd'@'10.0.%'",
        "SHOW CREATE USER 'lo'@'%'",
        "SHOW CREATE USER nosuch@x",
        "SHOW CREATE USER 'nopw'@'localhost'",
    ];
    // (who, password, statement): the privilege rule of MySQL and MariaDB.
    let as_users = [
        ("lo", "lopw", "SHOW CREATE USER"),
        ("lo", "lopw", "SHOW CREATE USER CURRENT_USER()"),
        ("lo", "lopw", "SHOW CREATE USER lo"),
        ("lo", "lopw", "SHOW CREATE USER nopw"),
        ("lo", "lopw", "SHOW CREATE USER nosuch@x"),
        ("cu", "cupw", "SHOW CREATE USER nopw"),
        ("ms", "mspw", "SHOW CREATE USER lo"),
    ];
    let answer = |c: &mut Conn, q: &str| -> String {
        match c.query::<mysql::Row, _>(q) {
            Ok(r) => {
                let cols: Vec<String> = r
                    .first()
                    .map(|row| {
                        row.columns_ref()
                            .iter()
                            .map(|c| c.name_str().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                let rows: Vec<String> = r
                    .iter()
                    .map(|row| {
                        (0..row.len())
                            .map(|i| match row.as_ref(i).unwrap() {
                                mysql::Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                                v => v.as_sql(true),
                            })
                            .collect::<Vec<_>>()
                            .join("\t")
                    })
                    .collect();
                format!("{cols:?} {rows:?}")
            }
            Err(mysql::Error::MySqlError(e)) => format!("{} {} {}", e.code, e.state, e.message),
            Err(e) => panic!("{q}: {e}"),
        }
    };
    let run = |port_conn: &mut Conn, login_as: &dyn Fn(&str, &str) -> Conn| -> Vec<String> {
        for q in setup {
            exec(port_conn, q);
        }
        let mut out: Vec<String> = queries.iter().map(|q| answer(port_conn, q)).collect();
        for (u, pw, q) in as_users {
            let mut c = login_as(u, pw);
            out.push(format!("{u}: {}", answer(&mut c, q)));
        }
        out
    };
    let mut root = s.conn();
    let ours = run(&mut root, &|u, pw| user_conn(&s, u, pw));
    assert!(ours[0].contains("CREATE USER `nopw`@`%`"), "{ours:?}");
    assert!(ours[4].starts_with("1133 28000"), "{ours:?}");
    assert!(ours[9].starts_with("lo: 1044 42000"), "{ours:?}");

    // The text creates the account again, with its password, lock, SSL and limits.
    let recreate = |c: &mut Conn, who: &str| {
        let text: (String,) = c
            .query_first(format!("SHOW CREATE USER {who}"))
            .unwrap()
            .unwrap();
        exec(c, &format!("DROP USER {who}"));
        exec(c, &text.0);
        let again: (String,) = c
            .query_first(format!("SHOW CREATE USER {who}"))
            .unwrap()
            .unwrap();
        assert_eq!(again.0, text.0);
    };
    recreate(&mut root, "'lo'@'%'");
    recreate(&mut root, "lk@localhost");
    recreate(&mut root, "'we''i`rd'@'10.0.%'");
    recreate(&mut root, "'mx'@'%'");
    user_conn(&s, "lo", "lopw");
    user_conn(&s, "mx", "mxpw");
    exec(
        &mut root,
        "CREATE USER 'sha'@'%' IDENTIFIED WITH caching_sha2_password BY 'shapw'",
    );
    let text: (String,) = root.query_first("SHOW CREATE USER sha").unwrap().unwrap();
    assert!(
        text.0.starts_with(
            "CREATE USER `sha`@`%` IDENTIFIED VIA caching_sha2_password USING '$A$005$"
        ),
        "{}",
        text.0
    );
    recreate(&mut root, "'sha'@'%'");
    user_conn(&s, "sha", "shapw");
    assert!(login(&s, "sha", "wrong", None).is_err());

    let Some(m) = shoal_testkit::MariaDb::start(&shoal_testkit::MariaDbOptions {
        install: true,
        extra: vec![],
    }) else {
        return;
    };
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(m.port)
        .prefer_socket(false);
    let mut mroot = Conn::new(opts.clone().user(Some("root"))).unwrap();
    let theirs = run(&mut mroot, &|u, pw| {
        Conn::new(opts.clone().user(Some(u)).pass(Some(pw))).unwrap()
    });
    // shoal's 1044 names the client's host (as every 1044 of its own does), MariaDB the
    // account's host pattern; the rest of the line is the same.
    let host = |l: &String| l.replace("@'127.0.0.1'", "@'%'");
    for (o, t) in ours.iter().zip(&theirs) {
        assert_eq!(host(o), host(t));
    }
}

/// PyMySQL: a login with a wrong password (1045), a denied SELECT (1142) and, after GRANT, rows.
#[test]
fn pymysql_sees_the_same_errors() {
    let Some(py) = support::venv_python() else {
        eprintln!("SKIPPED: no venv python with PyMySQL");
        return;
    };
    let s = Shoal::start("priv-pymysql", &[]);
    let mut root = s.conn();
    setup_tables(&mut root);
    let script = r#"
import sys, pymysql
port = int(sys.argv[1])
def conn(pw):
    return pymysql.connect(host="127.0.0.1", port=port, user="bob", password=pw)
try:
    conn("wrong")
    print("login: ok")
except pymysql.err.OperationalError as e:
    print("login:", e.args[0])
c = conn("pw")
cur = c.cursor()
try:
    cur.execute("SELECT v FROM d1.t1 ORDER BY id")
    print("select: ok")
except pymysql.err.MySQLError as e:
    print("select:", e.args[0], e.args[1])
input()
cur.execute("SELECT v FROM d1.t1 ORDER BY id")
print("rows:", [r[0] for r in cur.fetchall()])
"#;
    use std::io::{BufRead, BufReader, Write};
    let mut child = Command::new(py)
        .arg("-c")
        .arg(script)
        .arg(s.port.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "login: 1045");
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(
        line.trim(),
        format!("select: 1142 {}", table_denied("SELECT", "bob", "d1", "t1"))
    );
    exec(&mut root, "GRANT SELECT ON d1.t1 TO 'bob'@'%'");
    writeln!(child.stdin.take().unwrap()).unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "rows: [10, 20]");
    assert!(child.wait().unwrap().success());
}

/// LOCK TABLES needs the LOCK TABLES privilege in the table's database (1044) and SELECT on the
/// table (1142); BACKUP TO needs SUPER. Without these checks any account could block every
/// writer of a table it cannot even read.
#[test]
fn lock_tables_and_backup_need_their_privileges() {
    let s = Shoal::start("priv-lock", &[]);
    let mut root = s.conn();
    setup_tables(&mut root);
    let mut bob = user_conn(&s, "bob", "pw");
    let db_denied = format!("Access denied for user 'bob'@'{H}' to database 'd1'");
    denied(&mut bob, "LOCK TABLES d1.t1 READ", 1044, &db_denied);
    exec(&mut root, "GRANT LOCK TABLES ON d1.* TO 'bob'@'%'");
    denied(
        &mut bob,
        "LOCK TABLES d1.t1 READ",
        1142,
        &table_denied("SELECT", "bob", "d1", "t1"),
    );
    exec(&mut root, "GRANT SELECT ON d1.t1 TO 'bob'@'%'");
    exec(&mut bob, "LOCK TABLES d1.t1 READ");
    exec(&mut bob, "UNLOCK TABLES");
    let dir = std::env::temp_dir().join(format!("shoal-priv-backup-{}", std::process::id()));
    denied(
        &mut bob,
        &format!("BACKUP TO '{}'", dir.display()),
        1227,
        "Access denied; you need (at least one of) the SUPER privilege(s) for this operation",
    );
}

/// The admin port admits only SUPER / CONNECTION_ADMIN accounts (1227 for others), at most
/// `extra_max_connections` at once (1040 beyond, a slot freed at disconnect).
#[test]
fn admin_port_is_for_administrators_and_bounded() {
    let admin = support::free_port();
    let s = Shoal::start(
        "priv-adminport",
        &[
            &format!("--admin-port={admin}"),
            "--extra-max-connections=2",
        ],
    );
    let mut root = s.conn();
    setup_tables(&mut root);
    exec(&mut root, "GRANT ALL ON d1.* TO 'bob'@'%'");
    let on_admin = |user: &str, pw: &str| {
        Conn::new(
            s.mysql_opts()
                .tcp_port(admin)
                .socket(None::<String>)
                .user(Some(user))
                .pass(Some(pw)),
        )
    };
    match on_admin("bob", "pw") {
        Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1227, "{e}"),
        other => panic!("bob on the admin port: {:?}", other.map(|_| ())),
    }
    let a1 = on_admin("root", "").expect("root on the admin port");
    let a2 = on_admin("root", "").expect("second admin connection");
    match on_admin("root", "") {
        Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1040, "{e}"),
        other => panic!("third admin connection: {:?}", other.map(|_| ())),
    }
    drop(a1);
    // The slot comes back once the server has seen the disconnect.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match on_admin("root", "") {
            Ok(_) => break,
            Err(e) => assert!(
                std::time::Instant::now() < deadline,
                "slot never freed: {e}"
            ),
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(a2);
    exec(&mut root, "GRANT CONNECTION_ADMIN ON *.* TO 'bob'@'%'");
    on_admin("bob", "pw").expect("bob with CONNECTION_ADMIN on the admin port");
}
