//! End-to-end tests of parse -> translate -> evaluate for SELECTs without tables.

use std::collections::HashMap;

use crate::ast::{Statement, VarScope};
use crate::catalog::MemCatalog;
use crate::eval::Context;
use crate::exec::select;
use crate::value::{DateTime, SqlType, Value};
use crate::{parse, SqlError};

#[derive(Default)]
struct TestCtx {
    user_vars: HashMap<String, Value>,
    last_id: u64,
    params: Vec<Value>,
    /// `killed()` turns true once it has been asked this many times (None: never).
    kill_after: Option<u64>,
    /// How many times `killed()` was asked.
    kill_polls: std::cell::Cell<u64>,
}

impl Context for TestCtx {
    fn system_var(&mut self, scope: VarScope, name: &str) -> Result<Value, SqlError> {
        match (scope, name) {
            (_, "version_comment") => Ok(Value::Str("shoal test".into())),
            (VarScope::Global, "max_connections") => Ok(Value::UInt(151)),
            _ => Err(SqlError::other(
                1193,
                "HY000",
                format!("Unknown system variable '{name}'"),
            )),
        }
    }
    fn user_var(&self, name: &str) -> Value {
        self.user_vars.get(name).cloned().unwrap_or(Value::Null)
    }
    fn set_user_var(&mut self, name: &str, v: Value) {
        self.user_vars.insert(name.to_string(), v);
    }
    fn param(&self, i: usize) -> Result<Value, SqlError> {
        Ok(self.params[i].clone())
    }
    fn database(&self) -> Option<String> {
        None
    }
    fn user(&self) -> String {
        "root@localhost".into()
    }
    fn current_user(&self) -> String {
        "root@localhost".into()
    }
    fn connection_id(&self) -> u64 {
        7
    }
    fn last_insert_id(&self) -> u64 {
        self.last_id
    }
    fn set_last_insert_id(&mut self, v: u64) {
        self.last_id = v;
    }
    fn now(&self) -> DateTime {
        DateTime::from_unix(1_700_000_000, 0)
    }
    fn version(&self) -> String {
        "8.0.36-shoal".into()
    }
    fn killed(&self) -> bool {
        let n = self.kill_polls.get() + 1;
        self.kill_polls.set(n);
        self.kill_after.is_some_and(|k| n > k)
    }
}

/// Column names, column types and the first row as text.
type Outcome = (Vec<String>, Vec<SqlType>, Vec<String>);

fn run(ctx: &mut TestCtx, sql: &str) -> Result<Outcome, SqlError> {
    let p = parse(sql)?;
    let Statement::Select(s) = p.statement else {
        panic!("not a select: {sql}")
    };
    let r = select(&s, ctx, &MemCatalog::new())?;
    let names = r.columns.iter().map(|c| c.name.clone()).collect();
    let types = r.columns.iter().map(|c| c.ty).collect();
    let vals = r
        .rows
        .first()
        .map(|row| {
            row.iter()
                .map(|v| v.to_text().unwrap_or_else(|| "NULL".into()))
                .collect()
        })
        .unwrap_or_default();
    Ok((names, types, vals))
}

fn one(sql: &str) -> String {
    let mut c = TestCtx::default();
    match run(&mut c, sql) {
        Ok((_, _, v)) => v.join("|"),
        Err(e) => format!("ERR {}", e.code()),
    }
}

#[test]
fn literals_and_types() {
    let mut c = TestCtx::default();
    let (n, t, v) = run(
        &mut c,
        "SELECT 1, 1.50, 'abc', NULL, 1e2, 18446744073709551615",
    )
    .unwrap();
    assert_eq!(
        n,
        vec!["1", "1.50", "abc", "NULL", "1e2", "18446744073709551615"]
    );
    assert_eq!(
        t,
        vec![
            SqlType::Int,
            SqlType::Decimal(2),
            SqlType::Str,
            SqlType::Null,
            SqlType::Double,
            SqlType::UInt
        ]
    );
    assert_eq!(
        v,
        vec!["1", "1.50", "abc", "NULL", "100", "18446744073709551615"]
    );
}

#[test]
fn column_names_follow_source_text() {
    let mut c = TestCtx::default();
    let (n, _, _) = run(
        &mut c,
        "select 1+1, NOW(), concat('a', upper('b')) , @@version_comment, 2 AS two, database()",
    )
    .unwrap();
    assert_eq!(
        n,
        vec![
            "1+1",
            "NOW()",
            "concat('a', upper('b'))",
            "@@version_comment",
            "two",
            "database()"
        ]
    );
}

#[test]
fn integer_overflow_is_1690() {
    assert_eq!(one("SELECT 9223372036854775807 + 1"), "ERR 1690");
    assert_eq!(one("SELECT -9223372036854775808 - 1"), "ERR 1690");
    assert_eq!(one("SELECT CAST(0 AS UNSIGNED) - 1"), "ERR 1690");
    assert_eq!(one("SELECT 18446744073709551615 + 1"), "ERR 1690");
    assert_eq!(one("SELECT 4294967296 * 4294967296"), "ERR 1690");
    assert_eq!(one("SELECT -9223372036854775808"), "-9223372036854775808");
    let mut c = TestCtx::default();
    let e = run(&mut c, "SELECT 9223372036854775807 + 1").unwrap_err();
    assert_eq!(
        e.to_string(),
        "BIGINT value is out of range in '(9223372036854775807 + 1)'"
    );
}

#[test]
fn arithmetic_semantics() {
    assert_eq!(
        one("SELECT 1/3, 1.0/3, 10 DIV 3, 10 % 3, -7 % 3, 7 DIV 0, 1/0, 5 % 0"),
        "0.3333|0.33333|3|1|-1|NULL|NULL|NULL"
    );
    assert_eq!(
        one("SELECT 0.1 + 0.2, 1.5 * 2.25, 2 * 3.0"),
        "0.3|3.375|6.0"
    );
    assert_eq!(one("SELECT '1' + 1, '1.5abc' + 1, 'x' + 1"), "2|2.5|1");
    assert_eq!(one("SELECT 1 + NULL, NULL * 2, -NULL"), "NULL|NULL|NULL");
    assert_eq!(one("SELECT 5 - 7, 2 - 1.5"), "-2|0.5");
    assert_eq!(one("SELECT 1e0 / 4"), "0.25");
}

#[test]
fn comparisons_and_logic() {
    assert_eq!(
        one("SELECT 'abc' = 'ABC', 'a' < 'b', 'a ' = 'a', 1 = '1', 10 > '9'"),
        "1|1|1|1|1"
    );
    assert_eq!(
        one("SELECT NULL = NULL, NULL <=> NULL, 1 <=> NULL, 1 <> 2"),
        "NULL|1|0|1"
    );
    assert_eq!(
        one("SELECT 1 AND NULL, 0 AND NULL, 1 OR NULL, 0 OR NULL, NOT NULL, NOT 0"),
        "NULL|0|1|NULL|NULL|1"
    );
    assert_eq!(
        one("SELECT 1 XOR 1, 1 XOR 0, 2 IN (1,2), 3 IN (1,NULL), 3 NOT IN (1,2)"),
        "0|1|1|NULL|1"
    );
    assert_eq!(
        one("SELECT 5 BETWEEN 1 AND 10, 'b' BETWEEN 'A' AND 'C', NULL IS NULL, 1 IS NOT NULL"),
        "1|1|1|1"
    );
    assert_eq!(
        one("SELECT 'Hello' LIKE 'h%', 'abc' LIKE 'a_c', 'abc' NOT LIKE '%z%', 'a%' LIKE 'a\\%'"),
        "1|1|1|1"
    );
}

#[test]
fn control_flow_functions() {
    assert_eq!(
        one("SELECT IF(1>0,'y','n'), IFNULL(NULL, 5), COALESCE(NULL, NULL, 'z'), NULLIF(1,1), CASE 2 WHEN 1 THEN 'one' WHEN 2 THEN 'two' END, CASE WHEN 1>2 THEN 'a' ELSE 'b' END"),
        "y|5|z|NULL|two|b"
    );
}

#[test]
fn string_functions() {
    assert_eq!(
        one("SELECT CONCAT('a','b',1), CONCAT('a',NULL), CONCAT_WS('-','a',NULL,'b'), LENGTH('héllo'), CHAR_LENGTH('héllo')"),
        "ab1|NULL|a-b|6|5"
    );
    assert_eq!(
        one("SELECT UPPER('abc'), LOWER('ABC'), SUBSTRING('hello', 2, 3), SUBSTRING('hello', -3), SUBSTR('hello' FROM 2)"),
        "ABC|abc|ell|llo|ello"
    );
    assert_eq!(
        one("SELECT TRIM('  x  '), TRIM(LEADING 'x' FROM 'xxyxx'), TRIM(TRAILING 'x' FROM 'xxyxx'), LTRIM('  a'), RTRIM('a  ')"),
        "x|yxx|xxy|a|a"
    );
    assert_eq!(
        one("SELECT REPLACE('aXbX','X','y'), LEFT('hello',2), RIGHT('hello',3), REPEAT('ab',3), LPAD('5',3,'0'), RPAD('ab',5,'xy'), LPAD('hello',2,'x')"),
        "ayby|he|llo|ababab|005|abxyx|he"
    );
    assert_eq!(
        one("SELECT HEX(255), HEX('abc'), HEX(-1)"),
        "FF|616263|FFFFFFFFFFFFFFFF"
    );
}

#[test]
fn session_functions_and_variables() {
    let mut c = TestCtx::default();
    let (_, t, v) = run(
        &mut c,
        "SELECT NOW(), CURDATE(), UNIX_TIMESTAMP(), DATABASE(), USER(), CONNECTION_ID(), VERSION(), @@version_comment",
    )
    .unwrap();
    assert_eq!(
        v,
        vec![
            "2023-11-14 22:13:20",
            "2023-11-14",
            "1700000000",
            "NULL",
            "root@localhost",
            "7",
            "8.0.36-shoal",
            "shoal test"
        ]
    );
    assert_eq!(t[0], SqlType::DateTime);
    assert_eq!(t[1], SqlType::Date);
    let (_, _, v) = run(
        &mut c,
        "SELECT @x := 5, @x + 1, @nope, LAST_INSERT_ID(42), LAST_INSERT_ID()",
    )
    .unwrap();
    assert_eq!(v, vec!["5", "6", "NULL", "42", "42"]);
    assert_eq!(
        run(&mut c, "SELECT @@global.max_connections").unwrap().2,
        vec!["151"]
    );
    assert_eq!(run(&mut c, "SELECT @@bogus").unwrap_err().code(), 1193);
}

#[test]
fn where_limit_and_errors() {
    assert_eq!(one("SELECT 1 FROM DUAL WHERE 1 = 0"), "");
    assert_eq!(one("SELECT 1 LIMIT 0"), "");
    assert_eq!(one("SELECT 1 LIMIT 1"), "1");
    assert_eq!(one("SELECT * FROM t"), "ERR 1046");
    assert_eq!(one("SELECT * FROM db1.t"), "ERR 1146");
    assert_eq!(one("SELECT nosuchfn(1)"), "ERR 1305");
    assert_eq!(one("SELECT CONCAT()"), "ERR 1582");
    assert_eq!(one("SELECT (SELECT 1)"), "ERR 1235");
    assert_eq!(one("SELECT 1 UNION SELECT 2"), "ERR 1235");
    assert_eq!(one("SELEC 1"), "ERR 1064");
    assert_eq!(one("SELECT COUNT(*)"), "ERR 1235");
    assert_eq!(one("SELECT x"), "ERR 1054");
}

#[test]
fn casts() {
    assert_eq!(
        one("SELECT CAST('12abc' AS SIGNED), CAST(-1 AS UNSIGNED), CAST(1.567 AS DECIMAL(10,2)), CAST(5 AS CHAR), ROUND(2.5), ROUND(1.2345, 2), FLOOR(-1.5), CEIL(1.2), ABS(-3)"),
        "12|18446744073709551615|1.57|5|3|1.23|-2|2|3"
    );
}

#[test]
fn placeholders_are_numbered_in_order() {
    let p = parse("SELECT ? + ?, CONCAT(?, 'x')").unwrap();
    assert_eq!(p.params, 3);
    let mut c = TestCtx {
        params: vec![Value::Int(1), Value::Int(2), Value::Str("a".into())],
        ..Default::default()
    };
    let Statement::Select(s) = p.statement else {
        panic!()
    };
    let r = select(&s, &mut c, &MemCatalog::new()).unwrap();
    assert_eq!(r.rows[0], vec![Value::Int(3), Value::Str("ax".into())]);
}

#[test]
fn session_statements_parse() {
    use crate::ast::*;
    let set =
        parse("SET @@session.autocommit = OFF, GLOBAL max_connections = 10, @u = 1+1").unwrap();
    match set.statement {
        Statement::Set(v) => {
            assert_eq!(v.len(), 3);
            assert_eq!(
                v[0].0,
                SetTarget::System(VarScope::Session, "autocommit".into())
            );
            assert_eq!(v[0].1, SetExpr::Word("OFF".into()));
            assert_eq!(
                v[1].0,
                SetTarget::System(VarScope::Global, "max_connections".into())
            );
            assert_eq!(v[2].0, SetTarget::User("u".into()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        parse("SET NAMES 'utf8mb4' COLLATE 'utf8mb4_general_ci'")
            .unwrap()
            .statement,
        Statement::SetNames(Some("utf8mb4".into()), Some("utf8mb4_general_ci".into()))
    );
    assert_eq!(
        parse("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
            .unwrap()
            .statement,
        Statement::SetTransaction(Some(VarScope::Session), Some("READ-COMMITTED".into()), None)
    );
    assert_eq!(
        parse("show global status like 'Thread%'")
            .unwrap()
            .statement,
        Statement::Show(
            ShowKind::Status(VarScope::Global),
            ShowFilter::Like("Thread%".into())
        )
    );
    assert_eq!(
        parse("SHOW FULL PROCESSLIST").unwrap().statement,
        Statement::Show(ShowKind::Processlist { full: true }, ShowFilter::None)
    );
    assert!(matches!(
        parse("KILL QUERY 5").unwrap().statement,
        Statement::Kill(_, true)
    ));
    assert_eq!(
        parse("FLUSH thread_pool_stats").unwrap().statement,
        Statement::Flush(vec!["THREAD_POOL_STATS".into()])
    );
    assert_eq!(
        parse("flush local THREAD_POOL_WAITS, Thread_Pool_Latency;")
            .unwrap()
            .statement,
        Statement::Flush(vec![
            "THREAD_POOL_WAITS".into(),
            "THREAD_POOL_LATENCY".into()
        ])
    );
    assert_eq!(
        parse("FLUSH NO_WRITE_TO_BINLOG TABLES WITH READ LOCK")
            .unwrap()
            .statement,
        Statement::Flush(vec!["TABLES WITH READ LOCK".into()])
    );
    assert!(matches!(parse("FLUSH"), Err(SqlError::Syntax(_))));
    assert!(matches!(parse("FLUSH STATUS,"), Err(SqlError::Syntax(_))));
    assert_eq!(
        parse("CREATE DATABASE IF NOT EXISTS d1 DEFAULT CHARACTER SET utf8mb4")
            .unwrap()
            .statement,
        Statement::CreateDatabase("d1".into(), true)
    );
    assert_eq!(
        parse("create user 'bob'@'%' identified by 'pw'")
            .unwrap()
            .statement,
        Statement::CreateUser(vec![("bob".into(), "%".into(), "pw".into())], false)
    );
    assert_eq!(
        parse("DROP USER IF EXISTS bob@localhost")
            .unwrap()
            .statement,
        Statement::DropUser(vec![("bob".into(), "localhost".into())], true)
    );
    assert_eq!(
        parse("START TRANSACTION").unwrap().statement,
        Statement::Begin
    );
    assert_eq!(
        parse("use `my db`").unwrap().statement,
        Statement::Use("my db".into())
    );
    assert_eq!(parse("  ").unwrap_err().code(), 1065);
    assert_eq!(parse("SHOW FOOBAR").unwrap_err().code(), 1235);
    assert!(matches!(
        parse("DROP TABLE IF EXISTS sbtest1").unwrap().statement,
        Statement::TableStatement("drop_table_if_exists", _)
    ));
    assert!(matches!(
        parse("INSERT INTO t (a) VALUES (1)").unwrap().statement,
        Statement::TableStatement("insert", _)
    ));
}

#[test]
fn benchmark_semantics() {
    assert_eq!(one("SELECT BENCHMARK(10, 1 + 1)"), "0");
    assert_eq!(one("SELECT BENCHMARK(0, 1)"), "0");
    assert_eq!(one("SELECT BENCHMARK(NULL, 1)"), "NULL");
    assert_eq!(one("SELECT BENCHMARK(-1, 1)"), "ERR 1210");
    assert_eq!(one("SELECT BENCHMARK(1)"), "ERR 1582");
    // An error of the expression stops the loop.
    assert_eq!(
        one("SELECT BENCHMARK(5, 9223372036854775807 + 1)"),
        "ERR 1690"
    );
    let mut c = TestCtx::default();
    let (_, types, _) = run(&mut c, "SELECT BENCHMARK(1, 1)").unwrap();
    assert_eq!(types, vec![SqlType::Int]);
    // The expression really runs `count` times.
    run(&mut c, "SELECT BENCHMARK(7, @n := IFNULL(@n, 0) + 1)").unwrap();
    assert_eq!(c.user_vars["n"].to_text().unwrap(), "7");
}

#[test]
fn benchmark_honours_the_kill_flag() {
    let mut c = TestCtx {
        kill_after: Some(2),
        ..Default::default()
    };
    let e = run(&mut c, "SELECT BENCHMARK(1000000000000, 1 + 1)").unwrap_err();
    assert_eq!(e.code(), 1317);
    // Polled once per 1024 evaluations: three polls, not a trillion iterations.
    assert_eq!(c.kill_polls.get(), 3);
}
