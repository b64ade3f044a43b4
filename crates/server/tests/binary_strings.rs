//! Binary strings over the wire, through the real `shoal` binary: every one of the 256 byte
//! values survives a prepared INSERT (a binary-protocol BLOB parameter) into a BLOB column and
//! reads back byte-identical through the text protocol and the binary protocol, with the
//! column described as MariaDB describes it (BLOB, charset 63 `binary`); a hex literal reads
//! back as the same bytes; a parameter that is not UTF-8 into a text column is error 1366
//! (strict mode), as in MariaDB. A BINARY(16) primary key holding 16 UUID-like ids that
//! together cover all 256 byte values round-trips through both protocols, each id is found by
//! an indexed equality (a prepared `id = ?`, EXPLAIN showing the PRIMARY key), and BINARY /
//! VARBINARY columns are described on the wire as MariaDB describes them. The same checks run
//! against the private MariaDB when it is installed, so the expectations are MariaDB's.
//! Statement text that is not UTF-8 (sent by the `mariadb` client, as a dump without
//! `--hex-blob` is restored): a quoted literal of raw bytes is the binary string of exactly
//! those bytes (escapes applied, `_binary` introducer or not), stored as it is into a BLOB and
//! refused (1366) or replaced by `?` (not strict) in a text column. The same holds for the text
//! of a COM_STMT_PREPARE (sent raw by mysql-connector-python's `cmd_stmt_prepare`).

mod support;

use mysql::prelude::Queryable;
use mysql::{Conn, Value};
use support::Shoal;

/// Every byte value, twice, in an order that puts invalid UTF-8 sequences everywhere.
fn all_bytes() -> Vec<u8> {
    let mut v: Vec<u8> = (0..=255u8).collect();
    v.extend((0..=255u8).rev());
    v
}

fn err_code(e: &mysql::Error) -> u16 {
    match e {
        mysql::Error::MySqlError(m) => m.code,
        other => panic!("not a server error: {other}"),
    }
}

/// The checks, on any server reachable through `c`.
fn round_trip(c: &mut Conn, what: &str) {
    let data = all_bytes();
    for q in [
        "DROP DATABASE IF EXISTS bin",
        "CREATE DATABASE bin",
        "USE bin",
        "CREATE TABLE b (id INT PRIMARY KEY, v BLOB, t TEXT)",
    ] {
        c.query_drop(q)
            .unwrap_or_else(|e| panic!("{what}: {q}: {e}"));
    }
    // Binary protocol in: the mysql crate sends Vec<u8> as MYSQL_TYPE_BLOB... parameters.
    c.exec_drop(
        "INSERT INTO b (id, v) VALUES (?, ?)",
        (1, Value::Bytes(data.clone())),
    )
    .unwrap_or_else(|e| panic!("{what}: prepared insert: {e}"));
    // Text protocol out.
    let text: Vec<u8> = c
        .query_first("SELECT v FROM b WHERE id = 1")
        .unwrap()
        .expect("a row");
    assert_eq!(text, data, "{what}: text protocol read");
    // Binary protocol out.
    let bin: Vec<u8> = c
        .exec_first("SELECT v FROM b WHERE id = ?", (1,))
        .unwrap()
        .expect("a row");
    assert_eq!(bin, data, "{what}: binary protocol read");
    // SQL sees the bytes too.
    let (len, hex): (i64, String) = c
        .query_first("SELECT LENGTH(v), HEX(v) FROM b WHERE id = 1")
        .unwrap()
        .unwrap();
    assert_eq!(len, 512, "{what}");
    let want: String = data.iter().map(|b| format!("{b:02X}")).collect();
    assert_eq!(hex, want, "{what}");
    // A hex literal, and a comparison with a parameter, are exact.
    let n: i64 = c
        .exec_first(
            "SELECT COUNT(*) FROM b WHERE v = ?",
            (Value::Bytes(data.clone()),),
        )
        .unwrap()
        .unwrap();
    assert_eq!(n, 1, "{what}: = parameter");
    let lit: Vec<u8> = c.query_first("SELECT X'00FF80' AS x").unwrap().unwrap();
    assert_eq!(lit, vec![0x00, 0xFF, 0x80], "{what}: hex literal");
    // Column metadata: a BLOB column of the binary charset, and a binary expression.
    let res = c
        .query_iter("SELECT v, X'00FF' AS x, t FROM b WHERE id = 1")
        .unwrap();
    let cols: Vec<(mysql::consts::ColumnType, u16)> = res
        .columns()
        .as_ref()
        .iter()
        .map(|col| (col.column_type(), col.character_set()))
        .collect();
    drop(res);
    use mysql::consts::ColumnType as T;
    assert_eq!(cols[0], (T::MYSQL_TYPE_BLOB, 63), "{what}: BLOB column");
    assert_eq!(cols[1], (T::MYSQL_TYPE_VAR_STRING, 63), "{what}: X'..'");
    assert_ne!(cols[2].1, 63, "{what}: TEXT column is not binary");
    // Bytes that are not UTF-8 into a text column: strict mode refuses them.
    let e = c
        .exec_drop(
            "INSERT INTO b (id, t) VALUES (?, ?)",
            (2, Value::Bytes(vec![b'a', 0xFF, 0x80])),
        )
        .unwrap_err();
    assert_eq!(err_code(&e), 1366, "{what}: {e}");
    // UTF-8 bytes are text.
    c.exec_drop(
        "INSERT INTO b (id, t) VALUES (?, ?)",
        (3, Value::Bytes("é".as_bytes().to_vec())),
    )
    .unwrap();
    let t: String = c
        .query_first("SELECT t FROM b WHERE id = 3")
        .unwrap()
        .unwrap();
    assert_eq!(t, "é", "{what}");
    c.query_drop("DROP DATABASE bin").unwrap();
}

/// Sixteen 16-byte ids, id `i` holding bytes `16 i .. 16 i + 15` in a shuffled order: together
/// every byte value, each id with NULs and bytes that are not UTF-8.
fn uuids() -> Vec<Vec<u8>> {
    (0..16u8)
        .map(|i| (0..16u8).map(|j| (i * 16) + ((j * 7 + i) % 16)).collect())
        .collect()
}

/// BINARY(16) ids (the UUID-as-bytes schema) and a VARBINARY(16) secondary key.
fn uuid_keys(c: &mut Conn, what: &str) {
    for q in [
        "DROP DATABASE IF EXISTS binkeys",
        "CREATE DATABASE binkeys",
        "USE binkeys",
        "CREATE TABLE u (id BINARY(16) PRIMARY KEY, alt VARBINARY(16), n INT, KEY k_alt (alt))",
    ] {
        c.query_drop(q)
            .unwrap_or_else(|e| panic!("{what}: {q}: {e}"));
    }
    let ids = uuids();
    for (n, id) in ids.iter().enumerate() {
        // The alternate key is the id without its last byte: VARBINARY keeps it short.
        c.exec_drop(
            "INSERT INTO u VALUES (?, ?, ?)",
            (
                Value::Bytes(id.clone()),
                Value::Bytes(id[..15].to_vec()),
                n as i64,
            ),
        )
        .unwrap_or_else(|e| panic!("{what}: insert {n}: {e}"));
    }
    // A short id is padded to 16 bytes with NULs.
    c.exec_drop(
        "INSERT INTO u VALUES (?, NULL, 99)",
        (Value::Bytes(vec![0xFF, 0x00, 0x80]),),
    )
    .unwrap_or_else(|e| panic!("{what}: short id: {e}"));
    let mut padded = vec![0xFF, 0x00, 0x80];
    padded.resize(16, 0);
    // Text protocol: every id back, in byte order.
    let all: Vec<(Vec<u8>, i64)> = c
        .query("SELECT id, n FROM u ORDER BY id")
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut want: Vec<(Vec<u8>, i64)> = ids
        .iter()
        .enumerate()
        .map(|(n, id)| (id.clone(), n as i64))
        .collect();
    want.push((padded.clone(), 99));
    want.sort();
    assert_eq!(all, want, "{what}: text protocol, ORDER BY id");
    let mut seen = [false; 256];
    for (id, _) in &all {
        for &b in id {
            seen[b as usize] = true;
        }
    }
    assert!(seen.iter().all(|&s| s), "{what}: every byte value stored");
    // Binary protocol: each id found by a prepared equality on the key, and by the
    // VARBINARY key; a 15-byte prefix is not a BINARY(16) id.
    for (n, id) in ids.iter().enumerate() {
        let got: Option<(Vec<u8>, i64)> = c
            .exec_first(
                "SELECT id, n FROM u WHERE id = ?",
                (Value::Bytes(id.clone()),),
            )
            .unwrap();
        assert_eq!(got, Some((id.clone(), n as i64)), "{what}: id {n}");
        let by_alt: Option<i64> = c
            .exec_first(
                "SELECT n FROM u WHERE alt = ?",
                (Value::Bytes(id[..15].to_vec()),),
            )
            .unwrap();
        assert_eq!(by_alt, Some(n as i64), "{what}: alt {n}");
        let prefix: Option<i64> = c
            .exec_first(
                "SELECT n FROM u WHERE id = ?",
                (Value::Bytes(id[..15].to_vec()),),
            )
            .unwrap();
        assert_eq!(prefix, None, "{what}: a 15-byte id");
    }
    let short: Option<i64> = c
        .exec_first("SELECT n FROM u WHERE id = ?", (Value::Bytes(padded),))
        .unwrap();
    assert_eq!(short, Some(99), "{what}: the padded id");
    // The planner uses the keys (EXPLAIN's `key` column, by name: the two servers' EXPLAIN
    // have different column sets).
    for (q, key) in [
        (
            format!("EXPLAIN SELECT n FROM u WHERE id = X'{}'", hex(&ids[3])),
            "PRIMARY",
        ),
        (
            format!(
                "EXPLAIN SELECT n FROM u WHERE alt = X'{}'",
                hex(&ids[3][..15])
            ),
            "k_alt",
        ),
    ] {
        let row: mysql::Row = c.query_first(&q).unwrap().expect("an EXPLAIN row");
        let used: Option<String> = row.get("key").expect("a key column");
        assert_eq!(used.as_deref(), Some(key), "{what}: {q}");
    }
    // Too long: 1406 in strict mode.
    let e = c
        .exec_drop(
            "INSERT INTO u (id, n) VALUES (?, 1)",
            (Value::Bytes(vec![1; 17]),),
        )
        .unwrap_err();
    assert_eq!(err_code(&e), 1406, "{what}: {e}");
    // Wire description: CHAR / VARCHAR types of the binary charset, length in bytes.
    let res = c.query_iter("SELECT id, alt FROM u LIMIT 1").unwrap();
    let cols: Vec<(mysql::consts::ColumnType, u16, u32, bool)> = res
        .columns()
        .as_ref()
        .iter()
        .map(|col| {
            (
                col.column_type(),
                col.character_set(),
                col.column_length(),
                col.flags()
                    .contains(mysql::consts::ColumnFlags::BINARY_FLAG),
            )
        })
        .collect();
    drop(res);
    use mysql::consts::ColumnType as T;
    assert_eq!(
        cols[0],
        (T::MYSQL_TYPE_STRING, 63, 16, true),
        "{what}: BINARY(16)"
    );
    assert_eq!(
        cols[1],
        (T::MYSQL_TYPE_VAR_STRING, 63, 16, true),
        "{what}: VARBINARY(16)"
    );
    c.query_drop("DROP DATABASE binkeys").unwrap();
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02X}")).collect()
}

#[test]
fn every_byte_value_round_trips_through_both_protocols() {
    let s = Shoal::start("binary-strings", &[]);
    let mut c = s.conn();
    round_trip(&mut c, "shoal");
    uuid_keys(&mut c, "shoal");
    // The expectations are MariaDB's: the same checks against the private one (its
    // `start` says SKIPPED itself when mariadbd is missing).
    let Some((_mariadb, opts)) = support::mariadb(false) else {
        return;
    };
    let mut c = Conn::new(opts).expect("connect to MariaDB");
    round_trip(&mut c, "mariadb");
    uuid_keys(&mut c, "mariadb");
}

/// Runs each statement (bytes, not necessarily UTF-8) with the `mariadb` client against the
/// server on `port`, fed on its standard input as a restore is, after the `SET`s before it:
/// the batch output of each (rows ` | `-joined), or `ERROR n` for a failure.
fn raw_statements(port: u16, statements: &[&[u8]]) -> Vec<String> {
    use std::io::Write;
    let mut out = Vec::new();
    for (i, st) in statements.iter().enumerate() {
        let mut batch = Vec::new();
        for p in statements[..i].iter().filter(|p| p.starts_with(b"SET")) {
            batch.extend_from_slice(p);
            batch.extend_from_slice(b";\n");
        }
        batch.extend_from_slice(st);
        batch.extend_from_slice(b";\n");
        let mut child = std::process::Command::new("mariadb")
            .args(["-h127.0.0.1", &format!("-P{port}"), "-uroot", "-N", "-B"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run mariadb");
        child.stdin.take().unwrap().write_all(&batch).unwrap();
        let o = child.wait_with_output().unwrap();
        // The client echoes a failed statement, then `ERROR n (state) at line ..`.
        let stderr = String::from_utf8_lossy(&o.stderr);
        let code = stderr
            .find("ERROR ")
            .and_then(|at| stderr[at..].split_whitespace().nth(1));
        out.push(match code {
            Some(code) => format!("ERROR {code}"),
            None => String::from_utf8_lossy(&o.stdout)
                .trim_end()
                .replace('\n', " | "),
        });
    }
    out
}

#[test]
fn raw_bytes_in_statement_text_are_binary_strings() {
    if std::process::Command::new("mariadb")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: mariadb-client is not installed");
        return;
    }
    let statements: &[&[u8]] = &[
        b"DROP DATABASE IF EXISTS rawlit",
        b"CREATE DATABASE rawlit",
        b"CREATE TABLE rawlit.t (id INT PRIMARY KEY, bl BLOB, vb VARBINARY(4), tx TEXT)",
        b"SELECT HEX('a\xff\\0b'), HEX(_binary'\xff\x80'), LENGTH('\xff\xfe'), '\xff' = X'FF'",
        b"SELECT HEX(CONCAT('x', \"\xff\"\"\")), HEX('\xc3'), HEX('it''s \xff'), HEX('\\%\xff')",
        b"INSERT INTO rawlit.t (id, bl, vb) VALUES (1, '\\0\xff\x80\\0', '\xfe\\n\\Z')",
        b"SELECT HEX(bl), HEX(vb) FROM rawlit.t WHERE id = 1",
        // Strict: a text column refuses the bytes.
        b"INSERT INTO rawlit.t (id, tx) VALUES (2, 'a\xffb')",
        b"SET sql_mode = ''",
        b"INSERT INTO rawlit.t (id, tx) VALUES (2, 'a\xffb')",
        b"SELECT HEX(tx) FROM rawlit.t WHERE id = 2",
        b"DROP DATABASE rawlit",
    ];
    // MariaDB's answers (checked below against the private MariaDB when it is installed).
    let want = [
        "",
        "",
        "",
        "61FF0062\tFF80\t2\t1",
        "78FF22\tC3\t6974277320FF\t5C25FF",
        "",
        "00FF8000\tFE0A1A",
        "ERROR 1366",
        "",
        "",
        "613F62",
        "",
    ];
    let s = Shoal::start("raw-literals", &[]);
    assert_eq!(raw_statements(s.port, statements), want, "shoal");
    if let Some((m, _)) = support::mariadb(false) {
        assert_eq!(raw_statements(m.port, statements), want, "mariadb");
    }
}

/// Prepares and executes each statement (raw bytes, not necessarily UTF-8) with
/// mysql-connector-python's COM_STMT_PREPARE / COM_STMT_EXECUTE on the server on `port` (one
/// connection), then reads what they stored with a plain query: one line per statement
/// (`ok`, or `ERROR n`), then the rows.
fn prepared_raw_statements(py: &std::path::Path, port: u16, statements: &[&[u8]]) -> String {
    let literals: Vec<String> = statements
        .iter()
        .map(|st| {
            let escaped: String = st.iter().map(|b| format!("\\x{b:02x}")).collect();
            format!("b\"{escaped}\"")
        })
        .collect();
    let script = format!(
        r#"
import mysql.connector
c = mysql.connector.connect(host="127.0.0.1", port={port}, user="root", password="", use_pure=True)
for st in [{list}]:
    try:
        p = c.cmd_stmt_prepare(st)
        c.cmd_stmt_execute(p["statement_id"], data=(), parameters=p["parameters"])
        print("ok")
    except mysql.connector.Error as e:
        print("ERROR", e.errno)
c.cmd_query("SELECT id, HEX(bl), HEX(tx) FROM rawprep.t ORDER BY id")
for r in c.get_rows()[0]:
    print(" | ".join("NULL" if v is None else (v.decode() if isinstance(v, (bytes, bytearray)) else str(v)) for v in r))
c.cmd_query("DROP DATABASE rawprep")
"#,
        list = literals.join(", ")
    );
    let out = std::process::Command::new(py)
        .args(["-c", &script])
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn raw_bytes_in_prepared_statement_text_are_binary_strings() {
    let Some(py) = support::venv_python() else {
        panic!("/var/tmp/shoal-venv missing: run scripts/deps.sh");
    };
    let setup = |port: u16| {
        let mut c = Conn::new(support::root_over_tcp(port)).expect("connect");
        c.query_drop("DROP DATABASE IF EXISTS rawprep").unwrap();
        c.query_drop("CREATE DATABASE rawprep").unwrap();
        c.query_drop("CREATE TABLE rawprep.t (id INT PRIMARY KEY, bl BLOB, tx TEXT)")
            .unwrap();
    };
    let statements: &[&[u8]] = &[
        b"INSERT INTO rawprep.t (id, bl) VALUES (1, '\\0\xff\x80\\0')",
        b"INSERT INTO rawprep.t (id, bl) VALUES (2, _binary'\xfe\"\xff')",
        b"INSERT INTO rawprep.t (id, bl) VALUES (3, CONCAT('a', '\xc3'))",
        // Strict: a text column refuses the bytes.
        b"INSERT INTO rawprep.t (id, tx) VALUES (4, 'a\xffb')",
        b"INSERT INTO rawprep.t (id, bl, tx) VALUES (5, 'x', '\xc3\xa9')",
    ];
    // MariaDB's answers (checked below against the private MariaDB when it is installed).
    let want = "ok\nok\nok\nERROR 1366\nok\n\
                1 | 00FF8000 | NULL\n2 | FE22FF | NULL\n3 | 61C3 | NULL\n5 | 78 | C3A9\n";
    let s = Shoal::start("raw-prepared", &[]);
    setup(s.port);
    assert_eq!(
        prepared_raw_statements(&py, s.port, statements),
        want,
        "shoal"
    );
    if let Some((m, _)) = support::mariadb(false) {
        setup(m.port);
        assert_eq!(
            prepared_raw_statements(&py, m.port, statements),
            want,
            "mariadb"
        );
    }
}
