//! Issue 17, "settings accepted and silently ignored": each of these settings does what MySQL 8
//! does with it, checked through the real binary. One test per setting; each fails on a server
//! that accepts the setting and ignores it.

mod support;

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use support::Shoal;

/// The MySQL error of a failed call (panics on success or another kind of error).
fn err<T: std::fmt::Debug>(r: mysql::Result<T>) -> mysql::MySqlError {
    match r {
        Err(mysql::Error::MySqlError(e)) => e,
        other => panic!("expected a server error, got {other:?}"),
    }
}

fn code<T: std::fmt::Debug>(r: mysql::Result<T>) -> u16 {
    err(r).code
}

/// A connection as `user` with `password` over TCP.
fn connect_as(s: &Shoal, user: &str, password: &str) -> mysql::Result<mysql::Conn> {
    mysql::Conn::new(
        mysql::OptsBuilder::from_opts(s.mysql_opts())
            .user(Some(user))
            .pass(Some(password))
            .tcp_connect_timeout(Some(Duration::from_secs(5)))
            .read_timeout(Some(Duration::from_secs(30))),
    )
}

fn one_u64(c: &mut mysql::Conn, q: &str) -> u64 {
    c.query_first::<u64, _>(q).unwrap().unwrap()
}

fn count(c: &mut mysql::Conn, q: &str) -> usize {
    c.query::<mysql::Row, _>(q).unwrap().len()
}

/// Polls `f` until it returns `Some`, for at most `limit`.
fn wait_for<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "condition not reached in {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn setup_table(c: &mut mysql::Conn) {
    c.query_drop("CREATE DATABASE d").unwrap();
    c.query_drop("CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
        .unwrap();
    c.query_drop("INSERT INTO d.t VALUES (1, 10), (2, 20), (3, 30), (4, 40), (5, 50)")
        .unwrap();
}

#[test]
fn read_only_and_super_read_only_refuse_writes() {
    let s = Shoal::start("settings-ro", &[]);
    let mut root = s.conn();
    setup_table(&mut root);
    root.query_drop("CREATE USER 'bob'@'%' IDENTIFIED BY 'pw'")
        .unwrap();
    // Every privilege the statements below need, but not SUPER: read_only applies to bob.
    root.query_drop(
        "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX ON *.* TO 'bob'@'%'",
    )
    .unwrap();
    let mut bob = connect_as(&s, "bob", "pw").unwrap();
    // A transaction of bob's with a change, open when read_only goes on.
    let mut bob_txn = connect_as(&s, "bob", "pw").unwrap();
    bob_txn.query_drop("BEGIN").unwrap();
    bob_txn
        .query_drop("INSERT INTO d.t VALUES (100, 0)")
        .unwrap();

    // MySQL: turning read-only on is refused to a session inside a transaction (1192).
    root.query_drop("BEGIN").unwrap();
    root.query_drop("SELECT * FROM d.t FOR UPDATE").unwrap();
    assert_eq!(code(root.query_drop("SET GLOBAL read_only = ON")), 1192);
    root.query_drop("COMMIT").unwrap();
    root.query_drop("SET GLOBAL read_only = ON").unwrap();
    assert_eq!(one_u64(&mut bob, "SELECT @@global.read_only"), 1);

    let e = err(bob.query_drop("INSERT INTO d.t VALUES (6, 60)"));
    assert_eq!((e.code, e.state.as_str()), (1290, "HY000"));
    assert_eq!(
        e.message,
        "The MySQL server is running with the --read-only option so it cannot execute this statement"
    );
    for q in [
        "UPDATE d.t SET v = 0",
        "DELETE FROM d.t",
        "REPLACE INTO d.t VALUES (1, 1)",
        "INSERT INTO d.t SELECT id + 10, v FROM d.t",
        "CREATE TABLE d.u (a INT PRIMARY KEY)",
        "DROP TABLE d.t",
        "TRUNCATE TABLE d.t",
        "ALTER TABLE d.t ADD INDEX iv (v)",
        "CREATE DATABASE e",
        "DROP DATABASE d",
    ] {
        assert_eq!(code(bob.query_drop(q)), 1290, "{q}");
    }
    // Reads still work, locking ones too (read_only refuses changes only).
    assert_eq!(count(&mut bob, "SELECT * FROM d.t"), 5);
    assert_eq!(
        count(&mut bob, "SELECT * FROM d.t WHERE id = 1 FOR UPDATE"),
        1
    );
    // The open transaction's change cannot be committed: rolled back with 1290 (MySQL).
    assert_eq!(code(bob_txn.query_drop("COMMIT")), 1290);
    assert_eq!(count(&mut root, "SELECT * FROM d.t WHERE id = 100"), 0);

    // root has SUPER: read_only does not apply to it.
    root.query_drop("INSERT INTO d.t VALUES (6, 60)").unwrap();
    root.query_drop("CREATE TABLE d.u (a INT PRIMARY KEY)")
        .unwrap();

    // super_read_only=ON also sets read_only, and applies to root.
    root.query_drop("SET GLOBAL read_only = OFF").unwrap();
    root.query_drop("SET GLOBAL super_read_only = ON").unwrap();
    assert_eq!(one_u64(&mut root, "SELECT @@global.read_only"), 1);
    let e = err(root.query_drop("INSERT INTO d.t VALUES (7, 70)"));
    assert_eq!(e.code, 1290);
    assert!(e.message.contains("--super-read-only"), "{e:?}");
    assert_eq!(code(root.query_drop("DROP TABLE d.u")), 1290);
    assert_eq!(code(root.query_drop("CREATE DATABASE e")), 1290);
    assert_eq!(
        code(root.query_drop("CREATE USER 'carol'@'%' IDENTIFIED BY 'x'")),
        1290
    );
    assert_eq!(code(bob.query_drop("INSERT INTO d.t VALUES (7, 70)")), 1290);
    assert_eq!(count(&mut root, "SELECT * FROM d.t"), 6);

    // read_only=OFF clears super_read_only too.
    root.query_drop("SET GLOBAL read_only = OFF").unwrap();
    assert_eq!(one_u64(&mut root, "SELECT @@global.super_read_only"), 0);
    root.query_drop("INSERT INTO d.t VALUES (7, 70)").unwrap();
    bob.query_drop("INSERT INTO d.t VALUES (8, 80)").unwrap();
    // super_read_only=OFF alone leaves read_only on.
    root.query_drop("SET GLOBAL super_read_only = ON").unwrap();
    root.query_drop("SET GLOBAL super_read_only = OFF").unwrap();
    assert_eq!(one_u64(&mut root, "SELECT @@global.read_only"), 1);
    assert_eq!(code(bob.query_drop("INSERT INTO d.t VALUES (9, 90)")), 1290);
    root.query_drop("INSERT INTO d.t VALUES (9, 90)").unwrap();
    root.query_drop("SET GLOBAL read_only = OFF").unwrap();
    // Only a super user may change them.
    assert_eq!(code(bob.query_drop("SET GLOBAL read_only = ON")), 1227);
}

#[test]
fn read_only_transactions_refuse_writes() {
    let s = Shoal::start("settings-rotxn", &[]);
    let mut c = s.conn();
    setup_table(&mut c);
    c.query_drop("USE d").unwrap();

    c.query_drop("START TRANSACTION READ ONLY").unwrap();
    assert_eq!(count(&mut c, "SELECT * FROM t"), 5);
    let e = err(c.query_drop("INSERT INTO t VALUES (6, 60)"));
    assert_eq!((e.code, e.state.as_str()), (1792, "25006"));
    assert_eq!(
        e.message,
        "Cannot execute statement in a READ ONLY transaction."
    );
    assert_eq!(code(c.query_drop("UPDATE t SET v = 0")), 1792);
    assert_eq!(code(c.query_drop("DELETE FROM t WHERE id = 1")), 1792);
    assert_eq!(code(c.query_drop("SELECT * FROM t FOR UPDATE")), 1792);
    c.query_drop("SELECT * FROM t FOR SHARE").unwrap();
    // Characteristics cannot change inside a transaction; the session's may, for later ones.
    assert_eq!(code(c.query_drop("SET TRANSACTION READ WRITE")), 1568);
    assert_eq!(code(c.query_drop("SET @@transaction_read_only = 0")), 1568);
    c.query_drop("COMMIT").unwrap();
    c.query_drop("INSERT INTO t VALUES (6, 60)").unwrap();
    c.query_drop("START TRANSACTION READ WRITE").unwrap();
    c.query_drop("INSERT INTO t VALUES (7, 70)").unwrap();
    c.query_drop("COMMIT").unwrap();
    assert_eq!(
        code(c.query_drop("START TRANSACTION READ ONLY, READ WRITE")),
        1064
    );

    // The session's access mode: transaction_read_only / tx_read_only.
    c.query_drop("SET SESSION TRANSACTION READ ONLY").unwrap();
    assert_eq!(one_u64(&mut c, "SELECT @@transaction_read_only"), 1);
    assert_eq!(one_u64(&mut c, "SELECT @@session.tx_read_only"), 1);
    assert_eq!(one_u64(&mut c, "SELECT @@global.transaction_read_only"), 0);
    assert_eq!(code(c.query_drop("INSERT INTO t VALUES (8, 80)")), 1792);
    assert_eq!(
        code(c.query_drop("CREATE TABLE u (a INT PRIMARY KEY)")),
        1792
    );
    assert_eq!(code(c.query_drop("CREATE DATABASE e")), 1792);
    // An explicit READ WRITE transaction still may.
    c.query_drop("START TRANSACTION READ WRITE").unwrap();
    c.query_drop("INSERT INTO t VALUES (8, 80)").unwrap();
    c.query_drop("COMMIT").unwrap();
    // ... and a plain one follows the session.
    c.query_drop("BEGIN").unwrap();
    assert_eq!(code(c.query_drop("INSERT INTO t VALUES (9, 90)")), 1792);
    c.query_drop("ROLLBACK").unwrap();
    c.query_drop("SET tx_read_only = OFF").unwrap();
    c.query_drop("INSERT INTO t VALUES (9, 90)").unwrap();
    c.query_drop("SET SESSION transaction_read_only = 1")
        .unwrap();
    assert_eq!(code(c.query_drop("DELETE FROM t")), 1792);
    c.query_drop("SET SESSION transaction_read_only = DEFAULT")
        .unwrap();
    assert_eq!(one_u64(&mut c, "SELECT @@transaction_read_only"), 0);

    // Without a scope: the next transaction only (the session value stays).
    c.query_drop("SET TRANSACTION READ ONLY").unwrap();
    assert_eq!(one_u64(&mut c, "SELECT @@transaction_read_only"), 0);
    assert_eq!(code(c.query_drop("INSERT INTO t VALUES (10, 100)")), 1792);
    // Refused before its transaction started, the statement left the mode for the next one;
    // a read uses it up.
    assert_eq!(code(c.query_drop("INSERT INTO t VALUES (10, 100)")), 1792);
    assert_eq!(count(&mut c, "SELECT * FROM t WHERE id = 1"), 1);
    c.query_drop("INSERT INTO t VALUES (10, 100)").unwrap();
    c.query_drop("SET @@transaction_read_only = 1").unwrap();
    c.query_drop("START TRANSACTION").unwrap();
    assert_eq!(code(c.query_drop("INSERT INTO t VALUES (11, 110)")), 1792);
    c.query_drop("COMMIT").unwrap();
    c.query_drop("INSERT INTO t VALUES (11, 110)").unwrap();

    // A new session starts from the global value.
    c.query_drop("SET GLOBAL transaction_read_only = ON")
        .unwrap();
    let mut c2 = s.conn();
    assert_eq!(one_u64(&mut c2, "SELECT @@transaction_read_only"), 1);
    assert_eq!(
        code(c2.query_drop("INSERT INTO d.t VALUES (12, 120)")),
        1792
    );
    c.query_drop("INSERT INTO t VALUES (12, 120)").unwrap();
    assert_eq!(count(&mut c, "SELECT * FROM t"), 12);
}

#[test]
fn max_user_connections_limits_each_account() {
    let s = Shoal::start("settings-muc", &[]);
    let mut root = s.conn();
    root.query_drop("SET GLOBAL max_user_connections = 3")
        .unwrap();
    assert_eq!(
        one_u64(&mut root, "SELECT @@session.max_user_connections"),
        3
    );
    // The session value is shown, not set (1621, as in MySQL and MariaDB).
    assert_eq!(
        code(root.query_drop("SET SESSION max_user_connections = 10")),
        1621
    );
    let second = s.conn();
    let third = s.conn();
    let e = err(connect_as(&s, "root", ""));
    assert_eq!((e.code, e.state.as_str()), (1203, "42000"));
    assert_eq!(
        e.message,
        "User root already has more than 'max_user_connections' active connections"
    );
    // Another account has its own count.
    root.query_drop("CREATE USER 'bob'@'%' IDENTIFIED BY 'pw'")
        .unwrap();
    let bobs: Vec<mysql::Conn> = (0..3)
        .map(|_| connect_as(&s, "bob", "pw").unwrap())
        .collect();
    assert_eq!(code(connect_as(&s, "bob", "pw")), 1203);
    drop(bobs);
    // A closed connection frees its slot (the server notices the close asynchronously).
    drop(third);
    let fourth = wait_for(Duration::from_secs(10), || connect_as(&s, "root", "").ok());
    drop((second, fourth));

    // WITH MAX_USER_CONNECTIONS: the account's own limit, over the global one.
    root.query_drop("CREATE USER 'one'@'%' IDENTIFIED BY 'pw' WITH MAX_USER_CONNECTIONS 1")
        .unwrap();
    let mut only = connect_as(&s, "one", "pw").unwrap();
    assert_eq!(one_u64(&mut only, "SELECT @@max_user_connections"), 1);
    assert_eq!(code(connect_as(&s, "one", "pw")), 1203);
    root.query_drop("SET GLOBAL max_user_connections = 0")
        .unwrap();
    assert_eq!(code(connect_as(&s, "one", "pw")), 1203);
    // Not implemented resource limits are refused, not ignored.
    assert_eq!(
        code(
            root.query_drop(
                "CREATE USER 'two'@'%' IDENTIFIED BY 'pw' WITH MAX_QUERIES_PER_HOUR 10"
            )
        ),
        1235
    );
    drop(only);
    // Global 0 = no limit.
    let many: Vec<mysql::Conn> = (0..5).map(|_| s.conn()).collect();
    drop(many);
}

/// Opens a TCP connection, reads the greeting and hangs up without answering it: an
/// interrupted connection attempt, as a port scanner or a broken client makes.
fn aborted_handshake(port: u16) {
    let mut t = TcpStream::connect(("127.0.0.1", port)).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 256];
    let n = t.read(&mut buf).unwrap();
    assert!(n > 4 && buf[4] == 10, "greeting expected: {:?}", &buf[..n]);
}

fn aborted_connects(root: &mut mysql::Conn) -> u64 {
    root.query_first::<(String, u64), _>("SHOW GLOBAL STATUS LIKE 'Aborted_connects'")
        .unwrap()
        .unwrap()
        .1
}

/// `n` interrupted connection attempts, and waits until the server has counted them (it does
/// when it notices the hang-up, after this returns).
fn aborted_handshakes(s: &Shoal, root: &mut mysql::Conn, n: u64) {
    let before = aborted_connects(root);
    for _ in 0..n {
        aborted_handshake(s.port);
    }
    wait_for(Duration::from_secs(10), || {
        (aborted_connects(root) >= before + n).then_some(())
    });
}

#[test]
fn max_connect_errors_blocks_a_host_until_flush_hosts() {
    // Loopback is outside the host cache in MySQL (and shoal): the test server counts it too,
    // through the test-only switch that enables fault injection.
    let s = Shoal::start_with("settings-mce", &["--max-connect-errors=3"], |cmd| {
        cmd.env("SHOAL_FAULT_INJECTION", "1");
    });
    let mut root = s.conn();
    assert_eq!(one_u64(&mut root, "SELECT @@max_connect_errors"), 3);
    // Two interrupted attempts, then a successful login: the count starts over.
    aborted_handshakes(&s, &mut root, 2);
    drop(s.conn());
    // A failed login is not a connection error either.
    assert_eq!(code(connect_as(&s, "root", "wrong")), 1045);
    aborted_handshakes(&s, &mut root, 2);
    drop(s.conn());
    // Three in a row block the host: 1129 instead of the greeting.
    aborted_handshakes(&s, &mut root, 3);
    let e = err(connect_as(&s, "root", ""));
    assert_eq!(e.code, 1129);
    assert_eq!(
        e.message,
        "Host '127.0.0.1' is blocked because of many connection errors; unblock with 'mysqladmin flush-hosts'"
    );
    assert_eq!(code(connect_as(&s, "root", "")), 1129);
    let blocked: (String, u64) = root
        .query_first("SHOW GLOBAL STATUS LIKE 'Connection_errors_host_blocked'")
        .unwrap()
        .unwrap();
    assert_eq!(blocked.1, 2);
    // The count is compared with the current value: raising it unblocks.
    root.query_drop("SET GLOBAL max_connect_errors = 4")
        .unwrap();
    drop(s.conn());
    aborted_handshakes(&s, &mut root, 3);
    drop(s.conn());
    aborted_handshakes(&s, &mut root, 4);
    assert_eq!(code(connect_as(&s, "root", "")), 1129);
    // FLUSH HOSTS, from a connection that was already open, unblocks.
    root.query_drop("FLUSH HOSTS").unwrap();
    drop(s.conn());
    // The Unix socket has no host to block.
    root.query_drop("SET GLOBAL max_connect_errors = 1")
        .unwrap();
    aborted_handshakes(&s, &mut root, 1);
    assert_eq!(code(connect_as(&s, "root", "")), 1129);
    let local = mysql::OptsBuilder::new()
        .socket(Some(s.socket.to_str().unwrap()))
        .user(Some("root"));
    let mut via_socket = mysql::Conn::new(local).unwrap();
    via_socket.query_drop("FLUSH HOSTS").unwrap();
    drop(s.conn());
}

#[test]
fn max_connect_errors_leaves_loopback_alone_as_mysql_does() {
    let s = Shoal::start("settings-mce-lo", &["--max-connect-errors=1"]);
    let mut root = s.conn();
    aborted_handshakes(&s, &mut root, 3);
    drop(s.conn());
}

/// Anonymous read-write mappings of the server of exactly `size` bytes: the stacks of threads
/// created with that stack size (glibc maps the guard page separately, `---p`).
fn stacks_of_size(pid: u32, size: u64) -> usize {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    maps.lines()
        .filter(|l| {
            let mut f = l.split_whitespace();
            let range = f.next().unwrap();
            let perms = f.next().unwrap();
            let path = l.split_whitespace().nth(5);
            let (a, b) = range.split_once('-').unwrap();
            let len = u64::from_str_radix(b, 16).unwrap() - u64::from_str_radix(a, 16).unwrap();
            perms == "rw-p" && path.is_none() && len == size
        })
        .count()
}

#[test]
fn thread_stack_sizes_connection_threads() {
    // 832 KiB: a size no other thread of the process has (Rust's default is 2 MiB, RocksDB's
    // threads use 8 MiB).
    const STACK: u64 = 832 << 10;
    for handling in ["one-thread-per-connection", "pool-of-threads"] {
        let s = Shoal::start(
            "settings-stack",
            &[
                &format!("--thread-handling={handling}"),
                "--thread-stack=832K",
                "--thread-cache-size=0",
            ],
        );
        let pid = s.child.as_ref().unwrap().id();
        let before = stacks_of_size(pid, STACK);
        let mut conns: Vec<mysql::Conn> = (0..3).map(|_| s.conn()).collect();
        for c in &mut conns {
            assert_eq!(one_u64(c, "SELECT @@thread_stack"), STACK);
        }
        let after = stacks_of_size(pid, STACK);
        if handling == "one-thread-per-connection" {
            assert!(after >= before + 3, "{handling}: {before} -> {after}");
        } else {
            assert!(after >= 1, "{handling}: no worker with the stack size");
        }
        // Deep expressions still answer at this size, and too deep ones get 1436.
        let deep = format!("SELECT {}", vec!["1"; 3000].join("+"));
        assert_eq!(one_u64(&mut conns[0], &deep), 3000);
        let too_deep = format!("SELECT {}", vec!["1"; 20000].join("+"));
        assert_eq!(code(conns[0].query_drop(&too_deep)), 1436);
        let nested = format!("SELECT {}1{}", "(SELECT ".repeat(20), ")".repeat(20));
        assert_eq!(one_u64(&mut conns[1], &nested), 1);
        assert_eq!(
            code(conns[2].query_drop("SET GLOBAL thread_stack = 1048576")),
            1238
        );
    }
    // Below the floor: refused at startup, not raised silently.
    let dir = support::temp_dir("settings-stack-min");
    let out = std::process::Command::new(support::shoal_binary())
        .arg(format!("--datadir={}", dir.join("data").display()))
        .arg("--initialize-insecure")
        .arg(format!("--port={}", support::free_port()))
        .arg(format!("--socket={}", dir.join("s.sock").display()))
        .arg("--thread-stack=128K")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("thread_stack"), "{text}");
}

#[test]
fn sql_select_limit_caps_top_level_selects() {
    let s = Shoal::start("settings-ssl", &[]);
    let mut c = s.conn();
    setup_table(&mut c);
    c.query_drop("USE d").unwrap();
    c.query_drop("CREATE TABLE t2 (id INT PRIMARY KEY, v INT)")
        .unwrap();
    c.query_drop("SET sql_select_limit = 2").unwrap();
    assert_eq!(count(&mut c, "SELECT * FROM t"), 2);
    assert_eq!(count(&mut c, "SELECT * FROM t ORDER BY id DESC"), 2);
    let top: Vec<i64> = c.query("SELECT id FROM t ORDER BY id DESC").unwrap();
    assert_eq!(top, vec![5, 4]);
    // Its own LIMIT wins, larger or smaller.
    assert_eq!(count(&mut c, "SELECT * FROM t LIMIT 4"), 4);
    assert_eq!(count(&mut c, "SELECT * FROM t LIMIT 1"), 1);
    // Subqueries and derived tables are not limited; the top-level result is.
    assert_eq!(
        one_u64(
            &mut c,
            "SELECT COUNT(*) FROM t WHERE id IN (SELECT id FROM t)"
        ),
        5
    );
    assert_eq!(
        one_u64(&mut c, "SELECT COUNT(*) FROM (SELECT id FROM t) x"),
        5
    );
    assert_eq!(
        count(&mut c, "SELECT a.id FROM t a JOIN t b ON a.id = b.id"),
        2
    );
    assert_eq!(count(&mut c, "SELECT 1 UNION SELECT 2 UNION SELECT 3"), 2);
    // INSERT ... SELECT copies everything.
    c.query_drop("INSERT INTO t2 SELECT * FROM t").unwrap();
    assert_eq!(one_u64(&mut c, "SELECT COUNT(*) FROM t2"), 5);
    // Prepared statements too.
    let stmt = c.prep("SELECT id FROM t WHERE id > ?").unwrap();
    let ids: Vec<i64> = c.exec(&stmt, (0,)).unwrap();
    assert_eq!(ids, vec![1, 2]);
    // Selects without a table (the session's own), and information_schema.
    c.query_drop("SET sql_select_limit = 0").unwrap();
    assert_eq!(count(&mut c, "SELECT 1"), 0);
    assert_eq!(count(&mut c, "SELECT * FROM information_schema.tables"), 0);
    // DEFAULT: the global value (no limit).
    c.query_drop("SET sql_select_limit = DEFAULT").unwrap();
    assert_eq!(count(&mut c, "SELECT * FROM t"), 5);
    assert_eq!(one_u64(&mut c, "SELECT @@sql_select_limit"), u64::MAX);
    // The global value is where new sessions start.
    c.query_drop("SET GLOBAL sql_select_limit = 3").unwrap();
    assert_eq!(count(&mut c, "SELECT * FROM t"), 5);
    let mut c2 = s.conn();
    assert_eq!(count(&mut c2, "SELECT * FROM d.t"), 3);
    c.query_drop("SET GLOBAL sql_select_limit = DEFAULT")
        .unwrap();
}

/// Two sessions lock rows 1 and 2, then each wants the other's row: the error code (0 for
/// success) of the second waiter and of the first one. The first waiter's transaction ends only
/// after the second waiter's statement did.
fn crossing_updates(s: &Shoal) -> (u16, u16) {
    let mut a = s.conn();
    let mut b = s.conn();
    for c in [&mut a, &mut b] {
        c.query_drop("SET SESSION innodb_lock_wait_timeout = 2")
            .unwrap();
        c.query_drop("BEGIN").unwrap();
    }
    a.query_drop("UPDATE d.t SET v = v + 1 WHERE id = 1")
        .unwrap();
    b.query_drop("UPDATE d.t SET v = v + 1 WHERE id = 2")
        .unwrap();
    let code_of = |r: mysql::Result<()>| match r {
        Ok(()) => 0,
        Err(mysql::Error::MySqlError(e)) => e.code,
        Err(e) => panic!("{e:?}"),
    };
    let waiter = std::thread::spawn(move || {
        let code = code_of(a.query_drop("UPDATE d.t SET v = v + 1 WHERE id = 2"));
        (code, a)
    });
    // Wait until `a` is really waiting for the row lock.
    let mut root = s.conn();
    wait_for(Duration::from_secs(10), || {
        let w: (String, u64) = root
            .query_first("SHOW GLOBAL STATUS LIKE 'Innodb_row_lock_current_waits'")
            .unwrap()
            .unwrap();
        (w.1 == 1).then_some(())
    });
    let second = code_of(b.query_drop("UPDATE d.t SET v = v + 1 WHERE id = 1"));
    let (first, mut a) = waiter.join().unwrap();
    a.query_drop("ROLLBACK").unwrap();
    b.query_drop("ROLLBACK").unwrap();
    (second, first)
}

#[test]
fn innodb_deadlock_detect_off_means_lock_wait_timeouts() {
    let s = Shoal::start("settings-dld", &[]);
    let mut root = s.conn();
    setup_table(&mut root);
    // On (the default): the second waiter closes a cycle and is the victim at once; the first
    // then gets its row.
    let t0 = Instant::now();
    assert_eq!(crossing_updates(&s), (1213, 0));
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    root.query_drop("SET GLOBAL innodb_deadlock_detect = OFF")
        .unwrap();
    assert_eq!(one_u64(&mut root, "SELECT @@innodb_deadlock_detect"), 0);
    // Off: nobody looks for the cycle; both wait out innodb_lock_wait_timeout.
    let t0 = Instant::now();
    assert_eq!(crossing_updates(&s), (1205, 1205));
    assert!(t0.elapsed() >= Duration::from_secs(2), "{:?}", t0.elapsed());
    let deadlocks: (String, u64) = root
        .query_first("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")
        .unwrap()
        .unwrap();
    assert_eq!(deadlocks.1, 1);
    root.query_drop("SET GLOBAL innodb_deadlock_detect = ON")
        .unwrap();
    assert_eq!(crossing_updates(&s), (1213, 0));
}
