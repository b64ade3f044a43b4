//! Backups that restore, through the real binary and the real tools: `mariadb-dump` and
//! `mysqldump` (here the same MariaDB client under its MySQL name) with default options (LOCK
//! TABLES ... READ) and with `--single-transaction` (START TRANSACTION WITH CONSISTENT SNAPSHOT
//! and savepoints), restored with `mariadb db < dump.sql` into a second, empty server and
//! compared table by table (SHOW CREATE TABLE, every row in primary-key order); dumps taken
//! while writers move money between two tables restore a consistent sum; `--all-databases`
//! dumps of three databases restore into an empty server (the `mysql` log tables they insist
//! on exist, empty); and the table locks
//! the tools rely on (LOCK TABLES, FLUSH TABLES WITH READ LOCK) block, time out, answer 1100,
//! 1099 and 1223, and go away on UNLOCK, START TRANSACTION and disconnect as in MySQL; LOCK
//! TABLES with aliases answers statement by statement as the private MariaDB does.
//! BINARY/VARBINARY/BLOB values of every byte (0x00, 0xFF, 0x80, BINARY's zero padding, empty
//! strings, NULL, the bytes dumps escape) come back byte for byte from `mariadb-dump` with and
//! without `--hex-blob` (raw bytes in quoted literals: statement text that is not UTF-8), on
//! shoal and on the private MariaDB alike. TIME and TIME(n) columns (negative, past 24 hours,
//! keys of each) restore value for value.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use support::{global_status, Shoal};

fn err_code(e: &mysql::Error) -> u16 {
    match e {
        mysql::Error::MySqlError(e) => e.code,
        other => panic!("not a server error: {other}"),
    }
}

fn tool_available(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs a dump tool against `s` for `db`; returns the dump text (panics with the tool's
/// stderr when it fails or complains). Always `--hex-blob`, so the text is UTF-8; dumps of
/// raw binary bytes (without `--hex-blob`) are [`binary_strings_round_trip_through_mariadb_dump`]'s.
fn dump(tool: &str, s: &Shoal, db: &str, opts: &[&str]) -> String {
    let out = Command::new(tool)
        .args([
            "-h127.0.0.1",
            &format!("-P{}", s.port),
            "-uroot",
            "--hex-blob",
        ])
        .args(opts)
        .args((!db.is_empty()).then_some(db))
        .output()
        .expect("run the dump tool");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "{tool} {opts:?} {db} failed ({}):\n{stderr}",
        out.status
    );
    String::from_utf8(out.stdout).expect("utf-8 dump")
}

/// `mariadb db < dump` against `s` (no `db` argument when `db` is empty).
fn restore(s: &Shoal, db: &str, dump_file: &Path) {
    let out = Command::new("mariadb")
        .args(["-h127.0.0.1", &format!("-P{}", s.port), "-uroot"])
        .args((!db.is_empty()).then_some(db))
        .stdin(std::fs::File::open(dump_file).unwrap())
        .output()
        .expect("run mariadb");
    assert!(
        out.status.success(),
        "restore of {} failed:\n{}",
        dump_file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The shop schema: foreign keys, unique and secondary indexes, NULLs, strings with quotes,
/// backslashes and UTF-8, DECIMAL / DATE / DATETIME / DOUBLE / TEXT / BLOB columns.
fn make_shop(c: &mut mysql::Conn) {
    for q in [
        "CREATE DATABASE shop",
        "USE shop",
        "CREATE TABLE customer (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, \
         name VARCHAR(64) NOT NULL, email VARCHAR(128), UNIQUE KEY uk_email (email), \
         KEY k_name (name))",
        "CREATE TABLE orders (id BIGINT NOT NULL PRIMARY KEY, customer_id INT NOT NULL, \
         total DECIMAL(12,2), placed DATE, at DATETIME, ratio DOUBLE, note TEXT, payload BLOB, \
         KEY k_cust (customer_id), CONSTRAINT fk_cust FOREIGN KEY (customer_id) \
         REFERENCES customer (id) ON DELETE CASCADE)",
        "CREATE TABLE line (order_id BIGINT NOT NULL, n INT NOT NULL, qty SMALLINT, \
         PRIMARY KEY (order_id, n), FOREIGN KEY (order_id) REFERENCES orders (id))",
        r#"INSERT INTO customer VALUES (1,'O''Brien','ob@x.io'),(2,'back\\slash',NULL),
           (3,'Zoë ünïcødé 日本 😀','z@x.io'),(4,'semi;colon -- not a comment /* x */',NULL)"#,
        r#"INSERT INTO orders VALUES
           (10,1,12.50,'2024-01-02','2024-01-02 03:04:05',1.5,'he said "hi"\n',x'00ff275c0a0d1a'),
           (11,3,NULL,NULL,NULL,NULL,NULL,NULL),
           (12,2,-0.01,'1999-12-31','1999-12-31 23:59:59',-2.25e-5,'tab\there','bin'),
           (13,4,9999999999.99,'2038-01-19','2038-01-19 03:14:07',1e300,'',x'')"#,
        "INSERT INTO line VALUES (10,1,3),(10,2,NULL),(12,1,-7),(13,1,32767)",
        // TIME and TIME(n): negative, past 24 hours, the range's ends, a key of each.
        "CREATE TABLE shift (starts TIME(2) NOT NULL PRIMARY KEY, len TIME DEFAULT '-01:00:00', \
         KEY k_len (len))",
        "INSERT INTO shift VALUES ('-838:59:59.99','838:59:59'),('-00:00:00.01',NULL),\
         ('00:00:00','00:00:01'),('100:00:00.5','-100:00:00'),('838:59:59.99',DEFAULT)",
    ] {
        c.query_drop(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    }
}

/// A sysbench-shaped schema (`sbtest1`, `sbtest2`: id, k with a secondary index, c, pad).
fn make_sbtest(c: &mut mysql::Conn, rows: usize) {
    c.query_drop("CREATE DATABASE sbtest").unwrap();
    for t in 1..=2 {
        c.query_drop(format!(
            "CREATE TABLE sbtest.sbtest{t} (id INT NOT NULL AUTO_INCREMENT, \
             k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', \
             pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id), KEY k_{t} (k))"
        ))
        .unwrap();
        for chunk in (0..rows).collect::<Vec<_>>().chunks(500) {
            let values: Vec<String> = chunk
                .iter()
                .map(|i| {
                    let k = (i * 7919) % rows;
                    format!(
                        "({k}, '{:011}-{:011}-{:011}', '{:011}-{:011}')",
                        i * 3,
                        i * 5,
                        i * 7,
                        i * 11,
                        i * 13
                    )
                })
                .collect();
            c.query_drop(format!(
                "INSERT INTO sbtest.sbtest{t} (k, c, pad) VALUES {}",
                values.join(",")
            ))
            .unwrap();
        }
    }
}

/// Every table of `db` on both servers: the same SHOW CREATE TABLE and the same rows in
/// primary-key order.
fn assert_same_db(a: &mut mysql::Conn, b: &mut mysql::Conn, db: &str, what: &str) {
    let tables_a: Vec<String> = a.query(format!("SHOW TABLES FROM `{db}`")).unwrap();
    let tables_b: Vec<String> = b.query(format!("SHOW TABLES FROM `{db}`")).unwrap();
    assert_eq!(tables_a, tables_b, "{what}: tables of {db}");
    assert!(!tables_a.is_empty());
    for t in &tables_a {
        let create = |c: &mut mysql::Conn| -> String {
            let r: (String, String) = c
                .query_first(format!("SHOW CREATE TABLE `{db}`.`{t}`"))
                .unwrap()
                .unwrap();
            r.1
        };
        assert_eq!(create(a), create(b), "{what}: SHOW CREATE TABLE {db}.{t}");
        // The primary key's columns, from the table's definition.
        let pk: Vec<String> = a
            .query(format!(
                "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '{db}' \
                 AND TABLE_NAME = '{t}' AND COLUMN_KEY = 'PRI' ORDER BY ORDINAL_POSITION"
            ))
            .unwrap();
        assert!(!pk.is_empty(), "{db}.{t} has a primary key");
        let q = format!("SELECT * FROM `{db}`.`{t}` ORDER BY {}", pk.join(", "));
        let rows = |c: &mut mysql::Conn| -> Vec<Vec<mysql::Value>> {
            c.query::<mysql::Row, _>(&q)
                .unwrap()
                .into_iter()
                .map(|r| r.unwrap())
                .collect()
        };
        let (ra, rb) = (rows(a), rows(b));
        assert!(!ra.is_empty(), "{what}: {db}.{t} has rows");
        assert_eq!(ra.len(), rb.len(), "{what}: row count of {db}.{t}");
        for (x, y) in ra.iter().zip(&rb) {
            assert_eq!(x, y, "{what}: a row of {db}.{t}");
        }
    }
}

#[test]
fn dumps_of_both_tools_and_both_option_sets_restore_row_for_row() {
    if !tool_available("mariadb-dump") || !tool_available("mysqldump") {
        eprintln!("SKIPPED: mariadb-client is not installed");
        return;
    }
    let src = Shoal::start("dump-src", &[]);
    let mut a = src.conn();
    make_shop(&mut a);
    make_sbtest(&mut a, 3000);
    let dst = Shoal::start("dump-dst", &[]);
    let mut b = dst.conn();
    let dir = support::temp_dir("dump-files");
    for tool in ["mariadb-dump", "mysqldump"] {
        for opts in [
            &[][..],
            &["--single-transaction"][..],
            &["--single-transaction", "--databases"][..],
        ] {
            for db in ["shop", "sbtest"] {
                let what = format!("{tool} {opts:?} {db}");
                let text = dump(tool, &src, db, opts);
                // The dump is what MySQL's would be: tables before their rows, the rows in
                // multi-row INSERTs under LOCK TABLES ... WRITE (default options only).
                assert!(text.contains("DROP TABLE IF EXISTS"), "{what}");
                assert!(text.contains("INSERT INTO"), "{what}");
                assert!(text.contains("LOCK TABLES `"), "{what}");
                if db == "shop" {
                    // The BLOB's bytes, exactly (compared row for row after the restore).
                    assert!(text.contains("0x00FF275C0A0D1A"), "{what}");
                }
                let file = dir.join(format!("{tool}-{}-{db}.sql", opts.len()));
                std::fs::write(&file, &text).unwrap();
                b.query_drop(format!("DROP DATABASE IF EXISTS {db}"))
                    .unwrap();
                if opts.contains(&"--databases") {
                    // The dump creates the database itself (SHOW CREATE DATABASE).
                    assert!(text.contains(&format!("CREATE DATABASE /*!32312 IF NOT EXISTS*/ `{db}` /*!40100 DEFAULT CHARACTER SET utf8mb4")), "{what}");
                    restore(&dst, "", &file);
                } else {
                    b.query_drop(format!("CREATE DATABASE {db}")).unwrap();
                    restore(&dst, db, &file);
                }
                assert_same_db(&mut a, &mut b, db, &what);
            }
        }
    }
    // The restored foreign keys are enforced.
    let e = b
        .query_drop("INSERT INTO shop.orders (id, customer_id) VALUES (99, 77)")
        .unwrap_err();
    assert_eq!(err_code(&e), 1452);
    // The dump left no locks behind: the source takes writes at once.
    a.query_drop("SET SESSION lock_wait_timeout = 5").unwrap();
    a.query_drop("INSERT INTO shop.customer (name) VALUES ('after')")
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rows of `q` as text (NULL as `None`), for comparisons across servers.
fn text_rows(c: &mut mysql::Conn, q: &str) -> Vec<Vec<Option<String>>> {
    c.query::<mysql::Row, _>(q)
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .into_iter()
        .map(|r| {
            r.unwrap()
                .into_iter()
                .map(|v| match v {
                    mysql::Value::NULL => None,
                    mysql::Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                    other => Some(other.as_sql(true)),
                })
                .collect()
        })
        .collect()
}

#[test]
fn all_databases_dumps_restore_every_database_row_for_row() {
    if !tool_available("mariadb-dump") || !tool_available("mysqldump") {
        eprintln!("SKIPPED: mariadb-client is not installed");
        return;
    }
    let src = Shoal::start("alldb-src", &[]);
    let mut a = src.conn();
    make_shop(&mut a);
    make_sbtest(&mut a, 1000);
    make_bank(&mut a);
    // An account: not part of a logical dump here (docs/OPERATIONS.md), and the restore must
    // not trip over it either.
    a.query_drop("CREATE USER 'app'@'%' IDENTIFIED BY 'pw'")
        .unwrap();
    a.query_drop("GRANT SELECT ON shop.* TO 'app'@'%'").unwrap();
    let user_dbs = ["bank", "sbtest", "shop"];
    let dir = support::temp_dir("alldb-files");
    // Restored into a server that has never seen these databases.
    let dst = Shoal::start("alldb-dst", &[]);
    let mut b = dst.conn();
    for tool in ["mariadb-dump", "mysqldump"] {
        for opts in [
            &["--all-databases"][..],
            &["--all-databases", "--single-transaction"][..],
            &["-A", "--skip-lock-tables"][..],
        ] {
            let what = format!("{tool} {opts:?}");
            let text = dump(tool, &src, "", opts);
            for db in user_dbs {
                assert!(
                    text.contains(&format!("CREATE DATABASE /*!32312 IF NOT EXISTS*/ `{db}`")),
                    "{what}: {db}"
                );
            }
            // The `mysql` part: the log tables' structure, as MariaDB's dumps carry it.
            assert!(text.contains("USE `mysql`;"), "{what}");
            for t in ["general_log", "slow_log"] {
                assert!(
                    text.contains(&format!("CREATE TABLE IF NOT EXISTS `{t}`")),
                    "{what}: {t}"
                );
            }
            assert!(!text.contains("`performance_schema`"), "{what}");
            let file = dir.join(format!("{tool}-{}.sql", opts.len()));
            std::fs::write(&file, &text).unwrap();
            restore(&dst, "", &file);
            for db in user_dbs {
                assert_same_db(&mut a, &mut b, db, &what);
            }
            let dbs = |c: &mut mysql::Conn| -> Vec<String> { c.query("SHOW DATABASES").unwrap() };
            assert_eq!(dbs(&mut a), dbs(&mut b), "{what}");
            // The restored foreign keys are enforced.
            let e = b
                .query_drop("INSERT INTO shop.orders (id, customer_id) VALUES (99, 77)")
                .unwrap_err();
            assert_eq!(err_code(&e), 1452, "{what}");
            // The next round restores over the same databases (the dump drops its tables).
        }
    }
    // Accounts are not in a logical dump (see docs/OPERATIONS.md): the restored server has
    // only its own.
    let n: Option<i64> = b
        .query_first("SELECT COUNT(*) FROM mysql.user WHERE User = 'app'")
        .unwrap();
    assert_eq!(n, Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_mysql_log_tables_exist_empty_as_in_mysql() {
    let s = Shoal::start("logtables", &[]);
    let mut c = s.conn();
    let tables = text_rows(&mut c, "SHOW FULL TABLES FROM mysql");
    for t in ["general_log", "slow_log"] {
        assert!(
            tables.contains(&vec![Some(t.to_string()), Some("BASE TABLE".to_string())]),
            "{tables:?}"
        );
        let n: Option<i64> = c
            .query_first(format!("SELECT COUNT(*) FROM mysql.{t}"))
            .unwrap();
        assert_eq!(n, Some(0));
        let create: (String, String) = c
            .query_first(format!("SHOW CREATE TABLE mysql.{t}"))
            .unwrap()
            .unwrap();
        assert!(create.1.starts_with(&format!("CREATE TABLE `{t}` (")));
        assert!(create.1.contains("ENGINE=CSV"), "{}", create.1);
        // Re-creating it (what a dump's restore does) is a note; without IF NOT EXISTS 1050.
        let ddl = create
            .1
            .replacen("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1);
        c.query_drop("USE mysql").unwrap();
        c.query_drop(&ddl).unwrap();
        let w: Option<(String, u16, String)> = c.query_first("SHOW WARNINGS").unwrap();
        assert_eq!(w.map(|w| w.1), Some(1050));
        let e = c.query_drop(&create.1).unwrap_err();
        assert_eq!(err_code(&e), 1050, "{e}");
        let engine: Option<String> = c
            .query_first(format!(
                "SELECT ENGINE FROM information_schema.TABLES \
                 WHERE TABLE_SCHEMA = 'mysql' AND TABLE_NAME = '{t}'"
            ))
            .unwrap();
        assert_eq!(engine.as_deref(), Some("CSV"));
    }
    let cols: Vec<String> = c
        .query(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'mysql' \
             AND TABLE_NAME = 'general_log' ORDER BY ORDINAL_POSITION",
        )
        .unwrap();
    assert_eq!(
        cols,
        [
            "event_time",
            "user_host",
            "thread_id",
            "server_id",
            "command_type",
            "argument"
        ]
    );
    // Elsewhere the names are ordinary: a user table called general_log is created as usual,
    // and an untranslatable definition still fails there.
    c.query_drop("CREATE DATABASE d").unwrap();
    c.query_drop("CREATE TABLE d.general_log (id INT PRIMARY KEY)")
        .unwrap();
    let e = c
        .query_drop("CREATE TABLE d.slow_log (t GEOMETRY NOT NULL)")
        .unwrap_err();
    assert_ne!(err_code(&e), 1050, "{e}");
}

/// Runs each statement, recording its rows or its error (code and message).
fn outcomes(c: &mut mysql::Conn, script: &[&str]) -> Vec<String> {
    script
        .iter()
        .map(|q| match c.query::<mysql::Row, _>(*q) {
            Ok(rows) => {
                let rows: Vec<Vec<String>> = rows
                    .into_iter()
                    .map(|r| r.unwrap().into_iter().map(|v| v.as_sql(true)).collect())
                    .collect();
                format!("{q} -> ok {rows:?}")
            }
            Err(mysql::Error::MySqlError(e)) => format!("{q} -> {} {}", e.code, e.message),
            Err(e) => panic!("{q}: {e}"),
        })
        .collect()
}

#[test]
fn lock_tables_aliases_answer_as_in_mariadb() {
    let script = [
        "LOCK TABLES t AS x READ",
        "SELECT * FROM t",
        "SELECT * FROM t AS x ORDER BY id",
        "SELECT * FROM t x ORDER BY id",
        "SELECT * FROM x",
        "SELECT * FROM l.t AS x ORDER BY id",
        "SELECT * FROM t AS X",
        "SELECT * FROM t AS y",
        "SELECT x.v FROM t AS x JOIN u ON u.id = x.id",
        "INSERT INTO t VALUES (9, 9)",
        "UPDATE t AS x SET v = 1",
        "LOCK TABLES t READ",
        "SELECT * FROM t AS x",
        "SELECT COUNT(*) FROM t",
        "LOCK TABLES t LOW_PRIORITY WRITE",
        "INSERT INTO t VALUES (5, 5)",
        "LOCK TABLES t READ LOCAL, t AS t2 READ",
        "SELECT t.id, t2.v FROM t JOIN t AS t2 USING (id) ORDER BY t.id",
        "SELECT t.id FROM t JOIN t AS t3 USING (id)",
        "SELECT id FROM t WHERE id IN (SELECT id FROM t AS t2) ORDER BY id",
        "LOCK TABLES t AS w WRITE, u READ",
        "INSERT INTO t VALUES (6, 6)",
        "UPDATE t AS w SET v = v + 1 WHERE id = 1",
        "SELECT v FROM t AS w WHERE id = 1",
        "DELETE w FROM t AS w JOIN u ON u.id = w.id WHERE w.id = 7",
        "SELECT * FROM u AS uu",
        "SELECT * FROM u",
        "LOCK TABLES t AS x READ, t AS X WRITE",
        "LOCK TABLES nosuch AS n READ",
        "LOCK TABLES t AS n READ, u AS n READ",
        "LOCK TABLES t READ, t READ",
        "LOCK TABLES t READ, u AS t READ",
        "UNLOCK TABLES",
        "SELECT id, v FROM t ORDER BY id",
    ];
    let setup = [
        "CREATE DATABASE l",
        "CREATE TABLE l.t (id INT PRIMARY KEY, v INT)",
        "CREATE TABLE l.u (id INT PRIMARY KEY, v INT)",
        "INSERT INTO l.t VALUES (1, 1), (2, 2)",
        "INSERT INTO l.u VALUES (1, 1)",
        "USE l",
    ];
    let s = Shoal::start("lock-alias", &[]);
    let mut c = s.conn();
    for q in setup {
        c.query_drop(q).unwrap();
    }
    let ours = outcomes(&mut c, &script);
    // Without the reference server the expectations below still hold.
    let expected_errors = [
        ("SELECT * FROM t", 1100),
        ("SELECT * FROM t AS y", 1100),
        ("UPDATE t AS x SET v = 1", 1099),
        ("LOCK TABLES t AS n READ, u AS n READ", 1066),
    ];
    for (q, code) in expected_errors {
        let line = ours
            .iter()
            .find(|l| l.starts_with(&format!("{q} -> ")))
            .unwrap();
        assert!(line.contains(&format!("-> {code} ")), "{line}");
    }
    let Some(m) = shoal_testkit::MariaDb::start(&shoal_testkit::MariaDbOptions::default()) else {
        return;
    };
    let mut mc = mysql::Conn::new(support::root_over_tcp(m.port)).unwrap();
    for q in setup {
        mc.query_drop(q).unwrap();
    }
    let theirs = outcomes(&mut mc, &script);
    for (o, t) in ours.iter().zip(&theirs) {
        assert_eq!(o, t);
    }
}

const ACCOUNTS: i64 = 50;
const START_BALANCE: i64 = 1000;

/// Two tables of accounts; transfers move money between them, so the sum over both is fixed.
fn make_bank(c: &mut mysql::Conn) {
    c.query_drop("CREATE DATABASE bank").unwrap();
    for t in ["a", "b"] {
        c.query_drop(format!(
            "CREATE TABLE bank.{t} (id INT PRIMARY KEY, balance BIGINT NOT NULL)"
        ))
        .unwrap();
        let values: Vec<String> = (0..ACCOUNTS)
            .map(|i| format!("({i}, {START_BALANCE})"))
            .collect();
        c.query_drop(format!("INSERT INTO bank.{t} VALUES {}", values.join(",")))
            .unwrap();
    }
}

fn bank_sum(c: &mut mysql::Conn) -> i64 {
    let s: Option<i64> = c
        .query_first("SELECT (SELECT SUM(balance) FROM bank.a) + (SELECT SUM(balance) FROM bank.b)")
        .unwrap();
    s.unwrap()
}

/// Writers moving money from a row of one table to a row of the other until `stop`; returns
/// the number of committed transfers.
fn transfers(s: &Shoal, stop: Arc<AtomicBool>, seed: u64) -> std::thread::JoinHandle<u64> {
    let mut c = s.conn();
    std::thread::spawn(move || {
        let mut n = 0u64;
        let mut x = seed;
        while !stop.load(Ordering::Relaxed) {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (from, to) = ((x >> 33) as i64 % ACCOUNTS, (x >> 17) as i64 % ACCOUNTS);
            let (ta, tb) = if x & 1 == 0 { ("a", "b") } else { ("b", "a") };
            let amount = (x >> 40) as i64 % 50 + 1;
            let r = (|| -> Result<(), mysql::Error> {
                c.query_drop("START TRANSACTION")?;
                c.query_drop(format!(
                    "UPDATE bank.{ta} SET balance = balance - {amount} WHERE id = {from}"
                ))?;
                c.query_drop(format!(
                    "UPDATE bank.{tb} SET balance = balance + {amount} WHERE id = {to}"
                ))?;
                c.query_drop("COMMIT")
            })();
            match r {
                Ok(()) => n += 1,
                Err(e) => {
                    assert!(matches!(err_code(&e), 1213 | 1205), "transfer failed: {e}");
                    c.query_drop("ROLLBACK").unwrap();
                }
            }
        }
        n
    })
}

#[test]
fn dumps_taken_under_concurrent_transfers_restore_a_consistent_sum() {
    if !tool_available("mariadb-dump") {
        eprintln!("SKIPPED: mariadb-client is not installed");
        return;
    }
    let src = Shoal::start("dump-bank", &["--thread-handling=pool-of-threads"]);
    let mut a = src.conn();
    make_bank(&mut a);
    let invariant = ACCOUNTS * START_BALANCE * 2;
    let dst = Shoal::start("dump-bank-dst", &[]);
    let mut b = dst.conn();
    let dir = support::temp_dir("dump-bank-files");
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|i| transfers(&src, stop.clone(), i + 1))
        .collect();
    let committed = |a: &mut mysql::Conn| global_status(a, "Handler_commit");
    for opts in [&["--single-transaction"][..], &[][..]] {
        // Wait until transfers are committing, then dump while they run.
        let before = committed(&mut a);
        let deadline = Instant::now() + Duration::from_secs(60);
        while committed(&mut a) < before + 50 {
            assert!(Instant::now() < deadline, "transfers do not commit");
            std::thread::sleep(Duration::from_millis(10));
        }
        let text = dump("mariadb-dump", &src, "bank", opts);
        let file = dir.join(format!("bank-{}.sql", opts.len()));
        std::fs::write(&file, &text).unwrap();
        b.query_drop("DROP DATABASE IF EXISTS bank").unwrap();
        b.query_drop("CREATE DATABASE bank").unwrap();
        restore(&dst, "bank", &file);
        assert_eq!(bank_sum(&mut b), invariant, "dump with {opts:?}");
        let changed: Option<i64> = b
            .query_first("SELECT COUNT(*) FROM bank.a WHERE balance <> 1000")
            .unwrap();
        assert!(changed.unwrap() > 0, "the dump saw committed transfers");
    }
    stop.store(true, Ordering::Relaxed);
    let n: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    assert!(n > 0);
    assert_eq!(bank_sum(&mut a), invariant);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Polls `Shoal_table_lock_current_waits` until `n` sessions wait for a table lock.
fn wait_for_table_lock_waiters(c: &mut mysql::Conn, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while global_status(c, "Shoal_table_lock_current_waits") < n {
        assert!(
            Instant::now() < deadline,
            "no session waits for a table lock"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn lock_server() -> (Shoal, mysql::Conn) {
    let s = Shoal::start("locks", &["--thread-handling=pool-of-threads"]);
    let mut c = s.conn();
    for q in [
        "CREATE DATABASE l",
        "CREATE TABLE l.t (id INT PRIMARY KEY, v INT)",
        "CREATE TABLE l.u (id INT PRIMARY KEY, v INT)",
        "INSERT INTO l.t VALUES (1, 1)",
        "INSERT INTO l.u VALUES (1, 1)",
    ] {
        c.query_drop(q).unwrap();
    }
    (s, c)
}

#[test]
fn a_read_lock_blocks_other_writers_until_unlock_and_readers_not_at_all() {
    let (s, mut mon) = lock_server();
    let mut a = s.conn();
    a.query_drop("LOCK TABLES l.t READ").unwrap();
    // Another session reads at once, and writes other tables at once.
    let mut b = s.conn();
    let v: Option<i64> = b.query_first("SELECT v FROM l.t WHERE id = 1").unwrap();
    assert_eq!(v, Some(1));
    b.query_drop("INSERT INTO l.u VALUES (2, 2)").unwrap();
    // Its write to the locked table waits until UNLOCK TABLES.
    let writer = std::thread::spawn(move || {
        let r = b.query_drop("INSERT INTO l.t VALUES (2, 2)");
        (b, r)
    });
    wait_for_table_lock_waiters(&mut mon, 1);
    assert!(!writer.is_finished());
    // The holder still reads its table.
    let n: Option<i64> = a.query_first("SELECT COUNT(*) FROM l.t").unwrap();
    assert_eq!(n, Some(1));
    a.query_drop("UNLOCK TABLES").unwrap();
    let (_b, r) = writer.join().unwrap();
    r.unwrap();
    let n: Option<i64> = a.query_first("SELECT COUNT(*) FROM l.t").unwrap();
    assert_eq!(n, Some(2));
    assert_eq!(global_status(&mut mon, "Shoal_table_lock_current_waits"), 0);
    assert!(global_status(&mut mon, "Table_locks_waited") >= 1);
}

#[test]
fn the_lock_holder_may_touch_only_its_locked_tables() {
    let (s, _mon) = lock_server();
    let mut a = s.conn();
    a.query_drop("USE l").unwrap();
    a.query_drop("LOCK TABLES t READ").unwrap();
    let e = a.query_drop("SELECT * FROM u").unwrap_err();
    assert_eq!(err_code(&e), 1100, "{e}");
    let e = a.query_drop("INSERT INTO t VALUES (5, 5)").unwrap_err();
    assert_eq!(err_code(&e), 1099, "{e}");
    let e = a
        .query_drop("SELECT * FROM t JOIN u USING (id)")
        .unwrap_err();
    assert_eq!(err_code(&e), 1100, "{e}");
    // information_schema is not locked.
    let n: Option<i64> = a
        .query_first("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'l'")
        .unwrap();
    assert_eq!(n, Some(2));
    // A WRITE lock allows writes; relocking replaces the old set.
    a.query_drop("LOCK TABLES t WRITE, u READ").unwrap();
    a.query_drop("INSERT INTO t VALUES (5, 5)").unwrap();
    a.query_drop("/*!40000 ALTER TABLE `t` DISABLE KEYS */")
        .unwrap();
    let e = a.query_drop("ALTER TABLE u DISABLE KEYS").unwrap_err();
    assert_eq!(err_code(&e), 1099, "{e}");
    // START TRANSACTION releases the locks (as in MySQL).
    a.query_drop("START TRANSACTION").unwrap();
    a.query_drop("INSERT INTO u VALUES (5, 5)").unwrap();
    a.query_drop("COMMIT").unwrap();
    // Errors of the statements themselves.
    let e = a.query_drop("LOCK TABLES nosuch READ").unwrap_err();
    assert_eq!(err_code(&e), 1146, "{e}");
    a.query_drop("UNLOCK TABLES").unwrap();
}

#[test]
fn a_blocked_writer_times_out_with_1205_after_lock_wait_timeout() {
    let (s, _mon) = lock_server();
    let mut a = s.conn();
    a.query_drop("LOCK TABLES l.t READ").unwrap();
    let mut b = s.conn();
    b.query_drop("SET SESSION lock_wait_timeout = 1").unwrap();
    let t0 = Instant::now();
    let e = b
        .query_drop("UPDATE l.t SET v = 9 WHERE id = 1")
        .unwrap_err();
    assert_eq!(err_code(&e), 1205, "{e}");
    assert!(t0.elapsed() >= Duration::from_millis(900));
    // A WRITE lock request times out the same way.
    let e = b.query_drop("LOCK TABLES l.t WRITE").unwrap_err();
    assert_eq!(err_code(&e), 1205, "{e}");
    // The row is unchanged and the lock still held.
    let v: Option<i64> = a.query_first("SELECT v FROM l.t WHERE id = 1").unwrap();
    assert_eq!(v, Some(1));
}

#[test]
fn a_disconnect_frees_the_locks_of_its_session() {
    let (s, mut mon) = lock_server();
    let mut a = s.conn();
    a.query_drop("LOCK TABLES l.t WRITE").unwrap();
    let mut b = s.conn();
    // Under a WRITE lock even readers wait.
    let reader = std::thread::spawn(move || {
        let r: Result<Option<i64>, _> = b.query_first("SELECT v FROM l.t WHERE id = 1");
        r
    });
    wait_for_table_lock_waiters(&mut mon, 1);
    drop(a);
    assert_eq!(reader.join().unwrap().unwrap(), Some(1));
}

#[test]
fn flush_tables_with_read_lock_blocks_writes_and_refuses_its_holders() {
    let (s, mut mon) = lock_server();
    let mut a = s.conn();
    a.query_drop("FLUSH TABLES WITH READ LOCK").unwrap();
    let e = a.query_drop("INSERT INTO l.t VALUES (3, 3)").unwrap_err();
    assert_eq!(err_code(&e), 1223, "{e}");
    let e = a
        .query_drop("CREATE TABLE l.x (id INT PRIMARY KEY)")
        .unwrap_err();
    assert_eq!(err_code(&e), 1223, "{e}");
    // The holder reads, in a consistent-snapshot transaction as backup tools do.
    a.query_drop("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        .unwrap();
    let n: Option<i64> = a.query_first("SELECT COUNT(*) FROM l.u").unwrap();
    assert_eq!(n, Some(1));
    let mut b = s.conn();
    let n: Option<i64> = b.query_first("SELECT COUNT(*) FROM l.t").unwrap();
    assert_eq!(n, Some(1));
    let writers: Vec<_> = ["INSERT INTO l.t VALUES (3, 3)", "DELETE FROM l.u"]
        .into_iter()
        .map(|q| {
            let mut c = s.conn();
            std::thread::spawn(move || c.query_drop(q))
        })
        .collect();
    wait_for_table_lock_waiters(&mut mon, 2);
    assert!(writers.iter().all(|w| !w.is_finished()));
    // START TRANSACTION kept the global read lock; UNLOCK TABLES ends it.
    a.query_drop("COMMIT").unwrap();
    assert_eq!(global_status(&mut mon, "Shoal_table_lock_current_waits"), 2);
    a.query_drop("UNLOCK TABLES").unwrap();
    for w in writers {
        w.join().unwrap().unwrap();
    }
    // FLUSH TABLES has nothing to close.
    a.query_drop("FLUSH TABLES").unwrap();
}

#[test]
fn a_read_lock_waits_for_an_open_writing_transaction() {
    let (s, mut mon) = lock_server();
    let mut w = s.conn();
    w.query_drop("START TRANSACTION").unwrap();
    w.query_drop("UPDATE l.t SET v = 2 WHERE id = 1").unwrap();
    let mut a = s.conn();
    let locker = std::thread::spawn(move || {
        let r = a.query_drop("LOCK TABLES l.t READ, l.u READ");
        let v: Option<i64> = a.query_first("SELECT v FROM l.t WHERE id = 1").unwrap();
        (a, r, v)
    });
    wait_for_table_lock_waiters(&mut mon, 1);
    // New writers queue behind the waiting lock rather than starve it.
    let mut other = s.conn();
    other
        .query_drop("SET SESSION lock_wait_timeout = 1")
        .unwrap();
    let e = other
        .query_drop("UPDATE l.t SET v = 7 WHERE id = 1")
        .unwrap_err();
    assert_eq!(err_code(&e), 1205, "{e}");
    w.query_drop("COMMIT").unwrap();
    let (_a, r, v) = locker.join().unwrap();
    r.unwrap();
    // The lock saw the whole transaction.
    assert_eq!(v, Some(2));
}

#[test]
fn savepoints_undo_to_their_point() {
    let (s, _mon) = lock_server();
    let mut a = s.conn();
    a.query_drop("START TRANSACTION").unwrap();
    a.query_drop("INSERT INTO l.t VALUES (10, 10)").unwrap();
    a.query_drop("SAVEPOINT sp").unwrap();
    a.query_drop("INSERT INTO l.t VALUES (11, 11)").unwrap();
    a.query_drop("SAVEPOINT sp2").unwrap();
    a.query_drop("INSERT INTO l.t VALUES (12, 12)").unwrap();
    a.query_drop("ROLLBACK TO SAVEPOINT sp").unwrap();
    // Later savepoints are gone; this one stays.
    let e = a.query_drop("ROLLBACK TO sp2").unwrap_err();
    assert_eq!(err_code(&e), 1305, "{e}");
    a.query_drop("INSERT INTO l.t VALUES (13, 13)").unwrap();
    a.query_drop("ROLLBACK WORK TO SAVEPOINT sp").unwrap();
    a.query_drop("RELEASE SAVEPOINT sp").unwrap();
    let e = a.query_drop("RELEASE SAVEPOINT sp").unwrap_err();
    assert_eq!(err_code(&e), 1305, "{e}");
    a.query_drop("COMMIT").unwrap();
    let ids: Vec<i64> = a.query("SELECT id FROM l.t ORDER BY id").unwrap();
    assert_eq!(ids, vec![1, 10]);
    // Commit forgets savepoints.
    let e = a.query_drop("ROLLBACK TO SAVEPOINT sp").unwrap_err();
    assert_eq!(err_code(&e), 1305, "{e}");
}

/// `BACKUP TO` while transfers run, then `shoal --restore-from` into a new datadir and a server
/// on it: every row committed before the backup started is there, the sum over both tables is
/// the invariant, and CHECK TABLE finds every index whole.
#[test]
fn an_online_physical_backup_restores_a_consistent_copy() {
    let src = Shoal::start("phys-src", &["--thread-handling=pool-of-threads"]);
    let mut a = src.conn();
    make_bank(&mut a);
    let invariant = ACCOUNTS * START_BALANCE * 2;
    a.query_drop("CREATE TABLE bank.log (id INT PRIMARY KEY, note VARCHAR(40), KEY k_note (note))")
        .unwrap();
    // Rows committed before the backup starts must all be in it.
    for chunk in (0..2000).collect::<Vec<i32>>().chunks(250) {
        let v: Vec<String> = chunk.iter().map(|i| format!("({i}, 'n{i}')")).collect();
        a.query_drop(format!("INSERT INTO bank.log VALUES {}", v.join(",")))
            .unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|i| transfers(&src, stop.clone(), i + 11))
        .collect();
    let before = global_status(&mut a, "Handler_commit");
    let deadline = Instant::now() + Duration::from_secs(60);
    while global_status(&mut a, "Handler_commit") < before + 100 {
        assert!(Instant::now() < deadline, "transfers do not commit");
        std::thread::sleep(Duration::from_millis(10));
    }
    let work = support::temp_dir("phys-backup");
    let bk = work.join("bk");
    let row: mysql::Row = a
        .query_first(format!("BACKUP TO '{}'", bk.display()))
        .unwrap()
        .unwrap();
    let (dir, files, bytes): (String, u64, u64) = (
        row.get(0).unwrap(),
        row.get(1).unwrap(),
        row.get(2).unwrap(),
    );
    assert_eq!(dir, bk.display().to_string());
    assert!(files >= 3 && bytes > 0, "{files} files, {bytes} bytes");
    // Writers keep committing after the backup.
    let after = global_status(&mut a, "Handler_commit");
    while global_status(&mut a, "Handler_commit") < after + 50 {
        assert!(Instant::now() < deadline, "transfers stopped after BACKUP");
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    // The statement's errors.
    let e = a
        .query_drop(format!("BACKUP TO '{}'", bk.display()))
        .unwrap_err();
    assert_eq!(err_code(&e), 1086, "{e}");
    let e = a.query_drop("BACKUP TO 'relative/dir'").unwrap_err();
    assert_eq!(err_code(&e), 1210, "{e}");

    // Restore: refused into a non-empty datadir, done into a new one.
    let restored = work.join("restored");
    let occupied = work.join("occupied");
    std::fs::create_dir_all(&occupied).unwrap();
    std::fs::write(occupied.join("x"), "x").unwrap();
    let (code, _, err) = support::run_shoal(&[
        &format!("--restore-from={}", bk.display()),
        &format!("--datadir={}", occupied.display()),
    ]);
    assert_ne!(code, Some(0));
    assert!(err.contains("not empty"), "{err}");
    let (code, out, err) = support::run_shoal(&[
        &format!("--restore-from={}", bk.display()),
        &format!("--datadir={}", restored.join("data").display()),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("restored"), "{out}");
    let copy = Shoal::start_in(&restored, &[]);
    let mut b = copy.conn();
    assert_eq!(bank_sum(&mut b), invariant);
    let n: Option<i64> = b.query_first("SELECT COUNT(*) FROM bank.log").unwrap();
    assert_eq!(n, Some(2000));
    let changed: Option<i64> = b
        .query_first("SELECT COUNT(*) FROM bank.a WHERE balance <> 1000")
        .unwrap();
    assert!(changed.unwrap() > 0, "the backup holds committed transfers");
    for t in ["a", "b", "log"] {
        let rows: Vec<(String, String, String, String)> =
            b.query(format!("CHECK TABLE bank.{t}")).unwrap();
        assert_eq!(rows.last().unwrap().3, "OK", "{rows:?}");
    }
    // The copy is a working server: it takes writes, and the source is untouched by them.
    b.query_drop("INSERT INTO bank.log VALUES (5000, 'restored')")
        .unwrap();
    assert_eq!(bank_sum(&mut a), invariant);
    drop(copy);
    let _ = std::fs::remove_dir_all(&work);
}

/// `mariadb-dump` of `db` from the server on `port`, as bytes (without `--hex-blob` binary
/// values are raw bytes in quoted literals: not UTF-8). Panics with the tool's stderr when it
/// fails or complains.
fn dump_bytes(port: u16, db: &str, opts: &[&str]) -> Vec<u8> {
    let out = Command::new("mariadb-dump")
        .args(["-h127.0.0.1", &format!("-P{port}"), "-uroot"])
        .args(opts)
        .arg(db)
        .output()
        .expect("run mariadb-dump");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "mariadb-dump {opts:?} {db} failed ({}):\n{stderr}",
        out.status
    );
    out.stdout
}

/// `mariadb db < file` against the server on `port`.
fn restore_into(port: u16, db: &str, file: &Path) {
    let out = Command::new("mariadb")
        .args(["-h127.0.0.1", &format!("-P{port}"), "-uroot", db])
        .stdin(std::fs::File::open(file).unwrap())
        .output()
        .expect("run mariadb");
    assert!(
        out.status.success(),
        "restore of {} failed:\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The binary values the round trip carries: (BINARY(4), VARBINARY(300), BLOB) per row.
fn binary_rows() -> Vec<[Option<Vec<u8>>; 3]> {
    let b = |x: &[u8]| Some(x.to_vec());
    let every: Vec<u8> = (0..=255u8).collect();
    let mut rows = vec![
        [
            b(&[0x00, 0xFF, 0x80, 0x00]),
            b(&[0x00, 0xFF, 0x80]),
            b(&[0x00, 0xFF, 0x80]),
        ],
        // Shorter than BINARY(4): padded with 0x00, which must come back; trailing zeros of
        // VARBINARY/BLOB are data.
        [b(b"a"), b(&[0x61, 0x00]), b(&[0x00, 0x00])],
        // Empty: BINARY(4) holds four zero bytes, the others nothing.
        [b(b""), b(b""), b(b"")],
        [None, None, None],
        // What dumps escape (backslash, quotes, newline, return, ^Z, tab, NUL) around bytes
        // that are not UTF-8.
        [
            b(&[0xFF, 0xFF, 0xFF, 0xFF]),
            b(&[0x5C, 0x27, 0x22, 0x0A, 0x0D, 0x1A, 0x09, 0x00]),
            b(&[0xE2, 0x82, 0xFF, 0x5C, 0x00, 0x27, 0x27, 0x22]),
        ],
        // UTF-8 (text-like) bytes and a truncated UTF-8 sequence at the end.
        [
            b("é".as_bytes()),
            b("é".as_bytes()),
            b(&[0xF0, 0x9F, 0x98, 0x80, 0xF0, 0x9F]),
        ],
        // Spaces are data in binary strings.
        [b(b"  "), b(b"a  "), b(b" ")],
        // Every byte value, in the VARBINARY and the BLOB.
        [
            b(&[0x80]),
            Some(every.clone()),
            Some(every.iter().rev().copied().collect()),
        ],
    ];
    // Pseudo-random bytes of random lengths (a fixed seed: the same rows every run).
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..40 {
        let mut bytes = |max: u64| -> Vec<u8> {
            let n = next() % (max + 1);
            (0..n).map(|_| (next() >> 24) as u8).collect()
        };
        rows.push([Some(bytes(4)), Some(bytes(300)), Some(bytes(2000))]);
    }
    rows
}

/// Every value of `db`'s tables as HEX() (and LENGTH(), so BINARY's padding is seen), in
/// primary-key order: what the round trip must keep.
fn binary_snapshot(c: &mut mysql::Conn, db: &str) -> Vec<Vec<Option<String>>> {
    let mut out = text_rows(
        c,
        &format!(
            "SELECT id, HEX(bn), LENGTH(bn), HEX(vb), LENGTH(vb), HEX(bl), LENGTH(bl) \
             FROM `{db}`.vals ORDER BY id"
        ),
    );
    out.extend(text_rows(
        c,
        &format!("SELECT HEX(k), HEX(v) FROM `{db}`.keyed ORDER BY k"),
    ));
    out
}

/// Creates `db` on the server `c` talks to with the binary rows, dumps it with and without
/// `--hex-blob`, restores each dump into a fresh database with the `mariadb` client and
/// compares every value byte for byte (HEX) and the table definitions with the source.
fn dump_round_trip(c: &mut mysql::Conn, port: u16, dir: &Path, what: &str) {
    let db = "binsrc";
    for q in [
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
        format!(
            "CREATE TABLE {db}.vals (id INT PRIMARY KEY, bn BINARY(4), vb VARBINARY(300), bl BLOB)"
        ),
        // A binary primary key and a unique binary index: dumped rows must find their keys.
        format!(
            "CREATE TABLE {db}.keyed (k BINARY(3) PRIMARY KEY, v VARBINARY(4), UNIQUE KEY uv (v))"
        ),
    ] {
        c.query_drop(&q)
            .unwrap_or_else(|e| panic!("{what}: {q}: {e}"));
    }
    let rows = binary_rows();
    let v = |x: &Option<Vec<u8>>| x.clone().map_or(mysql::Value::NULL, mysql::Value::Bytes);
    for (i, r) in rows.iter().enumerate() {
        c.exec_drop(
            format!("INSERT INTO {db}.vals VALUES (?, ?, ?, ?)"),
            (i as i64 + 1, v(&r[0]), v(&r[1]), v(&r[2])),
        )
        .unwrap_or_else(|e| panic!("{what}: row {}: {e}", i + 1));
    }
    for (k, val) in [
        (&[0x00, 0x00, 0x00][..], &[0xFF][..]),
        (&[0xFF, 0x00, 0x80], &[0x00]),
        (&[0x80], &[0x00, 0x00]),
        (&[0x5C, 0x27], b""),
        (b"a", &[0x61, 0x00]),
    ] {
        c.exec_drop(
            format!("INSERT INTO {db}.keyed VALUES (?, ?)"),
            (k.to_vec(), val.to_vec()),
        )
        .unwrap_or_else(|e| panic!("{what}: keyed {k:?}: {e}"));
    }
    let source = binary_snapshot(c, db);
    assert_eq!(source.len(), rows.len() + 5, "{what}");
    // The padding and the empty values are what they should be before anything else.
    assert_eq!(source[1][1].as_deref(), Some("61000000"), "{what}");
    assert_eq!(source[2][1].as_deref(), Some("00000000"), "{what}");
    assert_eq!(source[2][3].as_deref(), Some(""), "{what}");
    assert_eq!(source[3][1], None, "{what}");
    let create = |c: &mut mysql::Conn, db: &str, t: &str| -> String {
        let r: (String, String) = c
            .query_first(format!("SHOW CREATE TABLE `{db}`.`{t}`"))
            .unwrap()
            .unwrap();
        r.1
    };
    for (name, opts) in [("hex", &["--hex-blob"][..]), ("raw", &[][..])] {
        let dump = dump_bytes(port, db, opts);
        if name == "raw" {
            // Raw bytes: the dump itself is not UTF-8 (this is the case under test).
            assert!(
                std::str::from_utf8(&dump).is_err(),
                "{what}: raw dump is UTF-8"
            );
        } else {
            let text = String::from_utf8(dump.clone()).expect("a --hex-blob dump is UTF-8");
            assert!(text.contains("0x00FF8000"), "{what}: {name}");
        }
        let file = dir.join(format!("{what}-{name}.sql"));
        std::fs::write(&file, &dump).unwrap();
        let target = format!("bin_{name}");
        c.query_drop(format!("DROP DATABASE IF EXISTS {target}"))
            .unwrap();
        c.query_drop(format!("CREATE DATABASE {target}")).unwrap();
        restore_into(port, &target, &file);
        let restored = binary_snapshot(c, &target);
        assert_eq!(restored.len(), source.len(), "{what}: {name}: rows");
        for (a, b) in source.iter().zip(&restored) {
            assert_eq!(a, b, "{what}: {name}: a row of the restored copy");
        }
        for t in ["vals", "keyed"] {
            assert_eq!(
                create(c, db, t),
                create(c, &target, t),
                "{what}: {name}: SHOW CREATE TABLE {t}"
            );
        }
        // The restored keys are keys: each value is found through them.
        for k in ["000000", "FF0080", "800000", "5C2700", "610000"] {
            let n: Option<i64> = c
                .query_first(format!(
                    "SELECT COUNT(*) FROM {target}.keyed WHERE k = X'{k}'"
                ))
                .unwrap();
            assert_eq!(n, Some(1), "{what}: {name}: key {k}");
        }
    }
}

#[test]
fn binary_strings_round_trip_through_mariadb_dump() {
    if !tool_available("mariadb-dump") || !tool_available("mariadb") {
        eprintln!("SKIPPED: mariadb-client is not installed");
        return;
    }
    let dir = support::temp_dir("dump-binary");
    let s = Shoal::start("dump-binary", &[]);
    dump_round_trip(&mut s.conn(), s.port, &dir, "shoal");
    // The same round trip on MariaDB: the test asks nothing MariaDB does not do.
    if let Some((m, opts)) = support::mariadb(false) {
        let mut c = mysql::Conn::new(opts).expect("connect to MariaDB");
        dump_round_trip(&mut c, m.port, &dir, "mariadb");
        eprintln!("the same round trip passed on MariaDB");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
