//! Grammar-based SQL generation over the fuzz schema, token-level mutations and random text.
//!
//! Everything is drawn from one seeded [`StdRng`], so a seed and an input index reproduce an
//! input. The grammar covers what shoal implements (and some of what it refuses on purpose):
//! SELECT with joins, derived tables, subqueries, aggregates, UNION, locking reads; INSERT /
//! REPLACE (VALUES and SELECT, IGNORE, ON DUPLICATE KEY UPDATE), single- and multi-table UPDATE
//! and DELETE; CREATE / ALTER / DROP / TRUNCATE TABLE, indexes, databases, users; SET (user,
//! session, global, NAMES, TRANSACTION), SHOW, USE, DO, KILL, transaction control. Values lean
//! on the edges (type limits, NULL, empty and multi-byte strings, bad dates).

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;

/// The database every generated statement runs in.
pub const DB: &str = "fz";

/// Statements that (re)create the fuzz schema with a handful of rows each.
pub const SETUP: &[&str] = &[
    "DROP DATABASE IF EXISTS fz",
    "DROP DATABASE IF EXISTS fz2",
    "CREATE DATABASE fz",
    "USE fz",
    "CREATE TABLE t1 (id INT NOT NULL AUTO_INCREMENT, a INT, b VARCHAR(20), c DECIMAL(10,2), \
     d DATETIME, PRIMARY KEY (id), KEY ka (a), KEY kb (b))",
    "CREATE TABLE t2 (id INT PRIMARY KEY, t1_id INT, s TEXT, f DOUBLE, u INT UNSIGNED, \
     UNIQUE KEY uu (u))",
    "CREATE TABLE t3 (k CHAR(8), v BIGINT, dt DATE, KEY kv (v, k))",
    "CREATE TABLE t4 (c1 INT, c2 VARCHAR(10), c3 DOUBLE)",
    "INSERT INTO t4 VALUES (1, 'a', 1.5), (NULL, NULL, NULL), (-7, 'zz', -0.25)",
    "INSERT INTO t1 (a, b, c, d) VALUES (1, 'x', 1.50, '2024-01-01 00:00:00'), (2, 'y', NULL, \
     NULL), (NULL, '', -3.25, '1999-12-31 23:59:59'), (2, 'h\u{e9}llo', 0, '2024-02-29 12:00:00')",
    "INSERT INTO t2 VALUES (1, 1, 'one', 0.5, 10), (2, 1, 'two', -1e10, NULL), (3, 9, NULL, \
     NULL, 4294967295)",
    "INSERT INTO t3 VALUES ('a', 1, '2020-01-01'), ('b', NULL, NULL), (NULL, \
     -9223372036854775808, '2038-01-19'), ('\u{20ac}', 9223372036854775807, '1000-01-01')",
];

/// Column kinds of the schema, to pick type-appropriate values.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    UInt,
    Str,
    Dec,
    Dbl,
    Date,
    DateTime,
}

struct Table {
    name: &'static str,
    cols: &'static [(&'static str, Kind)],
}

const TABLES: &[Table] = &[
    Table {
        name: "t1",
        cols: &[
            ("id", Kind::Int),
            ("a", Kind::Int),
            ("b", Kind::Str),
            ("c", Kind::Dec),
            ("d", Kind::DateTime),
        ],
    },
    Table {
        name: "t2",
        cols: &[
            ("id", Kind::Int),
            ("t1_id", Kind::Int),
            ("s", Kind::Str),
            ("f", Kind::Dbl),
            ("u", Kind::UInt),
        ],
    },
    Table {
        name: "t3",
        cols: &[("k", Kind::Str), ("v", Kind::Int), ("dt", Kind::Date)],
    },
    // Made (or not) by generated CREATE TABLE statements.
    Table {
        name: "t4",
        cols: &[("c1", Kind::Int), ("c2", Kind::Str), ("c3", Kind::Dbl)],
    },
];

const INTS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "10",
    "127",
    "-128",
    "255",
    "256",
    "32767",
    "65535",
    "2147483647",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999",
    "-0",
    "007",
];

const NUMS: &[&str] = &[
    "1.5",
    "-0.001",
    "0.0",
    ".5",
    "5.",
    "123456789.123456789",
    "99999999.99",
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "2.2250738585072014e-308",
    "1e-320",
    "0.1e1",
    "3.14159265358979323846264338327950288419716939937510",
    "1e400",
    "0.000000000000000000000000000000001",
];

const STRS: &[&str] = &[
    "''",
    "'a'",
    "'abc'",
    "'ABC'",
    "'x'",
    "'h\u{e9}llo'",
    "'\u{20ac}\u{20ac}'",
    "'\u{1f600}'",
    "'%'",
    "'_'",
    "'a%'",
    "'%b_'",
    "'\\\\'",
    "'\\''",
    "'it''s'",
    "'\\n\\t\\0'",
    "\"dq\"",
    "'2024-01-01'",
    "'2024-01-01 10:20:30'",
    "'2024-01-01 10:20:30.123456'",
    "'2024-13-45'",
    "'0000-00-00'",
    "'9999-12-31 23:59:59'",
    "'12:34:56'",
    "'-838:59:59'",
    "'1e5'",
    "' 12abc'",
    "'-9.5e-3x'",
    "'NULL'",
    "'   '",
    "'0x41'",
    "'18446744073709551616'",
];

const MISC: &[&str] = &[
    "NULL",
    "TRUE",
    "FALSE",
    "X'41'",
    "x''",
    "0x4142",
    "b'101'",
    "DATE '2024-01-01'",
    "TIMESTAMP '2024-01-01 00:00:00'",
    "_utf8mb4'abc'",
    "N'nat'",
    "CURRENT_TIMESTAMP",
    "CURRENT_DATE",
];

/// (name, usual arity); arity `None` means variadic.
const FUNCS: &[(&str, Option<usize>)] = &[
    ("IF", Some(3)),
    ("IFNULL", Some(2)),
    ("COALESCE", None),
    ("CONCAT", None),
    ("CONCAT_WS", None),
    ("LENGTH", Some(1)),
    ("OCTET_LENGTH", Some(1)),
    ("CHAR_LENGTH", Some(1)),
    ("UPPER", Some(1)),
    ("LOWER", Some(1)),
    ("SUBSTRING", Some(3)),
    ("SUBSTR", Some(2)),
    ("MID", Some(3)),
    ("LEFT", Some(2)),
    ("RIGHT", Some(2)),
    ("TRIM", Some(1)),
    ("LTRIM", Some(1)),
    ("RTRIM", Some(1)),
    ("REPLACE", Some(3)),
    ("REPEAT", Some(2)),
    ("LPAD", Some(3)),
    ("RPAD", Some(3)),
    ("HEX", Some(1)),
    ("NOW", Some(0)),
    ("SYSDATE", Some(0)),
    ("CURDATE", Some(0)),
    ("CURTIME", Some(0)),
    ("UNIX_TIMESTAMP", Some(1)),
    ("DATABASE", Some(0)),
    ("USER", Some(0)),
    ("CURRENT_USER", Some(0)),
    ("VERSION", Some(0)),
    ("CONNECTION_ID", Some(0)),
    ("LAST_INSERT_ID", Some(0)),
    ("NULLIF", Some(2)),
    ("ISNULL", Some(1)),
    ("ABS", Some(1)),
    ("CEIL", Some(1)),
    ("FLOOR", Some(1)),
    ("ROUND", Some(2)),
    ("TRUNCATE", Some(2)),
    ("MOD", Some(2)),
    ("GREATEST", None),
    ("LEAST", None),
    ("DATABASE_SIZE", Some(1)),
    ("NO_SUCH_FN", Some(1)),
    ("DATE_FORMAT", Some(2)),
    ("JSON_EXTRACT", Some(2)),
    ("MD5", Some(1)),
    ("SHA1", Some(1)),
    ("SHA2", Some(2)),
    ("CRC32", Some(1)),
    ("UUID", Some(0)),
    ("RAND", Some(1)),
    ("YEAR", Some(1)),
    ("HOUR", Some(1)),
    ("DAYNAME", Some(1)),
    ("WEEK", Some(2)),
    ("LAST_DAY", Some(1)),
    ("DATE_ADD", Some(2)),
    ("DATEDIFF", Some(2)),
    ("TIMESTAMPDIFF", Some(3)),
    ("STR_TO_DATE", Some(2)),
    ("FROM_UNIXTIME", Some(2)),
    ("MAKEDATE", Some(2)),
    ("FROM_DAYS", Some(1)),
    ("INSTR", Some(2)),
    ("LOCATE", Some(3)),
    ("SPACE", Some(1)),
    ("CHAR", None),
    ("FIELD", None),
    ("ELT", None),
    ("FORMAT", Some(2)),
    ("INSERT", Some(4)),
    ("SUBSTRING_INDEX", Some(3)),
    ("QUOTE", Some(1)),
    ("UNHEX", Some(1)),
    ("CONV", Some(3)),
    ("TO_BASE64", Some(1)),
    ("FROM_BASE64", Some(1)),
    ("SOUNDEX", Some(1)),
    ("POW", Some(2)),
    ("LOG", Some(2)),
    ("SQRT", Some(1)),
    ("COT", Some(1)),
];

const AGGS: &[&str] = &[
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "VARIANCE",
    "STDDEV",
    "GROUP_CONCAT",
    "BIT_OR",
];

const CAST_TYPES: &[&str] = &[
    "SIGNED",
    "UNSIGNED",
    "SIGNED INTEGER",
    "CHAR",
    "CHAR(3)",
    "BINARY",
    "DATE",
    "DATETIME",
    "DATETIME(6)",
    "TIME",
    "DECIMAL(10,2)",
    "DECIMAL(65,30)",
    "DECIMAL(5)",
    "DOUBLE",
    "FLOAT",
    "JSON",
];

const BINOPS: &[&str] = &[
    "+", "-", "*", "/", "DIV", "%", "MOD", "=", "<>", "!=", "<", "<=", ">", ">=", "<=>", "AND",
    "OR", "XOR", "&&", "||", "&", "|", "^", "<<", ">>", "LIKE", "NOT LIKE", "REGEXP",
];

const SESSION_VARS: &[(&str, &[&str])] = &[
    (
        "autocommit",
        &["0", "1", "ON", "OFF", "DEFAULT", "2", "'x'"],
    ),
    (
        "sql_mode",
        &[
            "''",
            "DEFAULT",
            "'ANSI'",
            "'TRADITIONAL'",
            "'STRICT_TRANS_TABLES'",
            "'NO_BACKSLASH_ESCAPES'",
            "'PIPES_AS_CONCAT'",
            "'ANSI_QUOTES'",
            "'ONLY_FULL_GROUP_BY,NO_ZERO_DATE'",
            "'bogus'",
            "0",
        ],
    ),
    (
        "max_execution_time",
        &["0", "1", "100", "2000", "-1", "'a'"],
    ),
    (
        "transaction_isolation",
        &[
            "'READ-COMMITTED'",
            "'REPEATABLE-READ'",
            "'SERIALIZABLE'",
            "'READ-UNCOMMITTED'",
            "'nope'",
        ],
    ),
    ("innodb_lock_wait_timeout", &["1", "50", "0", "1073741825"]),
    ("div_precision_increment", &["0", "4", "30", "31"]),
    ("character_set_results", &["NULL", "'utf8mb4'", "'latin1'"]),
    (
        "collation_connection",
        &["'utf8mb4_bin'", "'latin1_swedish_ci'"],
    ),
    ("wait_timeout", &["1", "28800", "0"]),
    ("net_write_timeout", &["1", "60"]),
    (
        "sql_select_limit",
        &["1", "DEFAULT", "18446744073709551615"],
    ),
    ("time_zone", &["'+00:00'", "'SYSTEM'", "'+25:00'"]),
    (
        "thread_pool_priority",
        &["'high'", "'low'", "'auto'", "'x'"],
    ),
    ("max_allowed_packet", &["1024", "DEFAULT"]),
    ("foreign_key_checks", &["0", "1"]),
    ("unique_checks", &["0", "1"]),
    ("no_such_variable", &["1"]),
];

/// Global variables a generated SET GLOBAL may change; [`RESTORE_GLOBALS`] puts them back.
const GLOBAL_VARS: &[(&str, &[&str])] = &[
    ("max_execution_time", &["0", "50", "1000"]),
    ("max_prepared_stmt_count", &["0", "1", "16382", "100000000"]),
    ("thread_pool_priority", &["'low'", "'auto'"]),
    ("sql_mode", &["''", "'ANSI'", "DEFAULT"]),
    ("wait_timeout", &["1", "28800"]),
    ("version", &["'x'"]),
];

/// Puts back every global a generated statement may have changed.
pub const RESTORE_GLOBALS: &[&str] = &[
    "SET GLOBAL max_execution_time = DEFAULT",
    "SET GLOBAL max_prepared_stmt_count = DEFAULT",
    "SET GLOBAL thread_pool_priority = DEFAULT",
    "SET GLOBAL sql_mode = DEFAULT",
    "SET GLOBAL wait_timeout = DEFAULT",
    // Settings a mutated statement can reach too (they make later sessions refuse writes or
    // cap their results).
    "SET GLOBAL super_read_only = OFF",
    "SET GLOBAL read_only = OFF",
    "SET GLOBAL transaction_read_only = OFF",
    "SET GLOBAL sql_select_limit = DEFAULT",
    "SET GLOBAL max_user_connections = 0",
    "SET GLOBAL innodb_deadlock_detect = ON",
];

/// Words and punctuation token mutations insert.
const TOKENS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "BY",
    "HAVING",
    "ORDER",
    "LIMIT",
    "OFFSET",
    "UNION",
    "ALL",
    "DISTINCT",
    "JOIN",
    "LEFT",
    "RIGHT",
    "INNER",
    "OUTER",
    "CROSS",
    "NATURAL",
    "ON",
    "USING",
    "AS",
    "INSERT",
    "INTO",
    "VALUES",
    "UPDATE",
    "SET",
    "DELETE",
    "CREATE",
    "TABLE",
    "DROP",
    "ALTER",
    "INDEX",
    "KEY",
    "PRIMARY",
    "UNIQUE",
    "NOT",
    "NULL",
    "AND",
    "OR",
    "IN",
    "EXISTS",
    "BETWEEN",
    "LIKE",
    "IS",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "CAST",
    "(",
    ")",
    "(",
    ")",
    ",",
    ",",
    ";",
    ".",
    "*",
    "+",
    "-",
    "/",
    "=",
    "<",
    ">",
    "?",
    "@",
    "@@",
    "'",
    "\"",
    "`",
    "/*",
    "*/",
    "--",
    "#",
    "\\",
    "0",
    "1",
    "-1",
    "NULL",
    "''",
    "t1",
    "t2",
    "t3",
    "a",
    "b",
    "id",
    "fz",
    "DUAL",
    "FOR",
    "SHARE",
    "LOCK",
    "MODE",
    "WITH",
    "ROLLUP",
    "OVER",
    "WINDOW",
    "PARTITION",
    "INTERVAL",
    "DAY",
    "BINARY",
    "COLLATE",
    "utf8mb4_bin",
    "ESCAPE",
    "IGNORE",
    "DUPLICATE",
    "REPLACE",
    "DEFAULT",
    "AUTO_INCREMENT",
    "GLOBAL",
    "SESSION",
    "SHOW",
    "TABLES",
    "DATABASE",
    "USE",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "KILL",
    "QUERY",
    "\u{e9}",
    "\u{0}",
    "18446744073709551616",
    "1e999",
    "0x",
    "X'4'",
    "b'2'",
];

/// Column types generated CREATE TABLE statements use.
const COLUMN_TYPES: &[&str] = &[
    "INT",
    "INT UNSIGNED",
    "TINYINT",
    "SMALLINT UNSIGNED",
    "MEDIUMINT",
    "BIGINT",
    "BIGINT UNSIGNED",
    "DECIMAL(10,2)",
    "DECIMAL(65,30)",
    "DECIMAL(1,0)",
    "DECIMAL(66,2)",
    "FLOAT",
    "DOUBLE",
    "CHAR(1)",
    "CHAR(255)",
    "VARCHAR(5)",
    "VARCHAR(65535)",
    "TEXT",
    "BLOB",
    "VARBINARY(8)",
    "DATE",
    "DATETIME",
    "TIMESTAMP",
    "TIME",
    "YEAR",
    "BOOL",
    "ENUM('a','b')",
    "JSON",
    "BIT(3)",
];

/// Picks one element of a non-empty slice.
fn pick<'a, T>(rng: &mut StdRng, xs: &'a [T]) -> &'a T {
    xs.choose(rng).expect("non-empty")
}

/// Generation context: which columns are in scope and what kinds of expressions fit.
#[derive(Clone, Default)]
struct Scope {
    /// Column references in scope (qualified or not).
    cols: Vec<String>,
    /// Aggregates allowed (select list, HAVING, ORDER BY).
    aggregates: bool,
}

/// The SQL generator.
pub struct SqlGen {
    /// `?` placeholders may replace literals (text for COM_STMT_PREPARE).
    pub placeholders: bool,
    /// Nesting left for expressions and subqueries.
    depth: u32,
}

impl Default for SqlGen {
    fn default() -> Self {
        SqlGen::new()
    }
}

impl SqlGen {
    /// A generator for COM_QUERY text.
    pub fn new() -> SqlGen {
        SqlGen {
            placeholders: false,
            depth: 0,
        }
    }

    /// One input: mostly a generated statement, sometimes mutated, spliced or random text.
    pub fn input(&mut self, rng: &mut StdRng) -> String {
        match rng.gen_range(0..100) {
            0..=69 => self.statement(rng),
            70..=86 => {
                let s = self.statement(rng);
                mutate_tokens(rng, &s)
            }
            87..=91 => {
                let a = self.statement(rng);
                let b = self.statement(rng);
                splice(rng, &a, &b)
            }
            92..=96 => random_text(rng),
            _ => {
                // Several statements at once (COM_QUERY with multi-statements).
                let n = rng.gen_range(2..5);
                (0..n)
                    .map(|_| self.statement(rng))
                    .collect::<Vec<_>>()
                    .join(if rng.gen_bool(0.8) { "; " } else { ";" })
            }
        }
    }

    /// One generated statement.
    pub fn statement(&mut self, rng: &mut StdRng) -> String {
        // Now and then much deeper nesting (subqueries in subqueries, long expression trees).
        self.depth = if rng.gen_bool(0.03) { 6 } else { 3 };
        if rng.gen_bool(0.0002) {
            return self.huge(rng);
        }
        match rng.gen_range(0..100) {
            0..=34 => self.select(rng, &Scope::default()),
            35..=44 => self.insert(rng),
            45..=51 => self.update(rng),
            52..=56 => self.delete(rng),
            57..=63 => self.ddl(rng),
            64..=73 => self.set(rng),
            74..=81 => self.show(rng),
            82..=87 => self.txn(rng),
            88..=91 => self.select_no_from(rng),
            _ => self.misc(rng),
        }
    }

    // ----- expressions -------------------------------------------------------------------------

    fn literal(&mut self, rng: &mut StdRng) -> String {
        if self.placeholders && rng.gen_bool(0.25) {
            return "?".into();
        }
        match rng.gen_range(0..100) {
            0..=29 => pick(rng, INTS).to_string(),
            30..=39 => rng.gen_range(-20i64..100).to_string(),
            40..=54 => pick(rng, NUMS).to_string(),
            55..=79 => pick(rng, STRS).to_string(),
            80..=89 => pick(rng, MISC).to_string(),
            90..=94 => format!("@v{}", rng.gen_range(0..4)),
            _ => format!(
                "@@{}",
                pick(
                    rng,
                    &[
                        "max_allowed_packet",
                        "sql_mode",
                        "autocommit",
                        "session.max_execution_time",
                        "global.max_connections",
                        "version",
                        "nope",
                        "div_precision_increment",
                    ]
                )
            ),
        }
    }

    fn column(&mut self, rng: &mut StdRng, scope: &Scope) -> String {
        if scope.cols.is_empty() || rng.gen_bool(0.05) {
            // Unknown or ambiguous names as well.
            return pick(rng, &["id", "a", "nope", "t1.id", "x.y", "`b`", "fz.t1.a"]).to_string();
        }
        pick(rng, &scope.cols).clone()
    }

    /// An expression; `scope` says which columns exist.
    fn expr(&mut self, rng: &mut StdRng, scope: &Scope) -> String {
        if self.depth == 0 {
            return if rng.gen_bool(0.5) && !scope.cols.is_empty() {
                self.column(rng, scope)
            } else {
                self.literal(rng)
            };
        }
        self.depth -= 1;
        let e = match rng.gen_range(0..100) {
            0..=19 => self.literal(rng),
            20..=39 => self.column(rng, scope),
            40..=54 => {
                let a = self.expr(rng, scope);
                let b = self.expr(rng, scope);
                format!("({a} {} {b})", pick(rng, BINOPS))
            }
            55..=59 => {
                let a = self.expr(rng, scope);
                format!("{}{a}", pick(rng, &["-", "NOT ", "~", "!", "+", "BINARY "]))
            }
            60..=69 => self.call(rng, scope),
            70..=72 => {
                let a = self.expr(rng, scope);
                let t = pick(rng, CAST_TYPES);
                if rng.gen_bool(0.8) {
                    format!("CAST({a} AS {t})")
                } else {
                    format!("CONVERT({a}, {t})")
                }
            }
            73..=75 => {
                let a = self.expr(rng, scope);
                let what = pick(
                    rng,
                    &[
                        "IS NULL",
                        "IS NOT NULL",
                        "IS TRUE",
                        "IS NOT FALSE",
                        "IS UNKNOWN",
                    ],
                );
                format!("({a} {what})")
            }
            76..=78 => {
                let (a, b, c) = (
                    self.expr(rng, scope),
                    self.expr(rng, scope),
                    self.expr(rng, scope),
                );
                let not = if rng.gen_bool(0.3) { "NOT " } else { "" };
                format!("({a} {not}BETWEEN {b} AND {c})")
            }
            79..=82 => {
                let a = self.expr(rng, scope);
                let n = rng.gen_range(1..5);
                let list: Vec<String> = (0..n).map(|_| self.expr(rng, scope)).collect();
                let not = if rng.gen_bool(0.3) { "NOT " } else { "" };
                format!("({a} {not}IN ({}))", list.join(", "))
            }
            83..=85 => {
                let mut s = String::from("CASE");
                if rng.gen_bool(0.5) {
                    s += &format!(" {}", self.expr(rng, scope));
                }
                for _ in 0..rng.gen_range(1..4) {
                    let (w, t) = (self.expr(rng, scope), self.expr(rng, scope));
                    s += &format!(" WHEN {w} THEN {t}");
                }
                if rng.gen_bool(0.5) {
                    s += &format!(" ELSE {}", self.expr(rng, scope));
                }
                s + " END"
            }
            86..=91 => self.subquery_expr(rng, scope),
            // Aggregates where they belong, and rarely where they do not (WHERE, ON, SET,
            // VALUES, GROUP BY).
            92..=94 if scope.aggregates || rng.gen_bool(0.1) => self.aggregate(rng, scope),
            95..=96 => {
                let (a, b) = (self.expr(rng, scope), self.expr(rng, scope));
                let esc = if rng.gen_bool(0.2) { " ESCAPE '|'" } else { "" };
                format!("({a} LIKE {b}{esc})")
            }
            97 => {
                let a = self.expr(rng, scope);
                format!(
                    "({a} {} INTERVAL {} {})",
                    pick(rng, &["+", "-"]),
                    self.literal(rng),
                    pick(rng, &["DAY", "SECOND", "MONTH", "YEAR", "HOUR"])
                )
            }
            98 => {
                let a = self.expr(rng, scope);
                format!(
                    "({a} COLLATE {})",
                    pick(rng, &["utf8mb4_bin", "latin1_bin", "nope"])
                )
            }
            99 if rng.gen_bool(0.5) => self.big_expr(rng, scope),
            // Small constant sleeps and benchmarks only: the watchdog reports anything slow.
            _ => pick(
                rng,
                &[
                    "SLEEP(0)",
                    "SLEEP(0.001)",
                    "BENCHMARK(10, 1 + 1)",
                    "BENCHMARK(-1, 1)",
                    "SLEEP(NULL)",
                    "SLEEP(-1)",
                ],
            )
            .to_string(),
        };
        self.depth += 1;
        e
    }

    /// Statements of tens of thousands of items: anything superlinear in their size shows up
    /// as a slow input (a 65535-item select list, a 64000-value IN list and a 64000-column
    /// CREATE TABLE each took seconds).
    fn huge(&mut self, rng: &mut StdRng) -> String {
        let n = *pick(rng, &[5_000usize, 20_000, 65_535, 70_000]);
        let list = |item: &dyn Fn(usize) -> String, sep: &str| {
            (0..n).map(item).collect::<Vec<_>>().join(sep)
        };
        let ph = |_: usize| {
            if self.placeholders {
                "?".to_string()
            } else {
                "1".to_string()
            }
        };
        match rng.gen_range(0..9) {
            0 => format!(
                "SELECT a FROM t1 WHERE id IN ({})",
                list(&|i| i.to_string(), ",")
            ),
            1 => format!("SELECT {}", list(&ph, ",")),
            2 => format!("SELECT {} FROM t1", list(&|_| "a".into(), ",")),
            3 => format!("CREATE TABLE t5 ({})", list(&|i| format!("c{i} INT"), ", ")),
            // Rolled back: later statements would otherwise scan tens of thousands of rows.
            4 => format!(
                "BEGIN; INSERT INTO t4 (c1) VALUES {}; ROLLBACK",
                list(&|i| format!("({i})"), ",")
            ),
            5 => list(&|_| "SELECT 1 FROM t1".into(), " UNION ALL "),
            6 => format!(
                "SELECT a FROM t1 WHERE {}",
                list(&|i| format!("a = {i}"), " OR ")
            ),
            7 => format!("SELECT COALESCE({}) FROM t1", list(&|_| "a".into(), ",")),
            _ => format!(
                "UPDATE t1 SET {} WHERE id = 1",
                list(&|_| "a = a + 1".into(), ", ")
            ),
        }
    }

    /// Large inputs: long IN lists and CONCATs, big strings, LIKE patterns full of wildcards.
    fn big_expr(&mut self, rng: &mut StdRng, scope: &Scope) -> String {
        let a = if scope.cols.is_empty() {
            "'abc'".to_string()
        } else {
            self.column(rng, scope)
        };
        match rng.gen_range(0..6) {
            0 => {
                let n = rng.gen_range(100..2000);
                let list: Vec<String> = (0..n).map(|i| i.to_string()).collect();
                format!("({a} IN ({}))", list.join(","))
            }
            1 => {
                let n = rng.gen_range(50..500);
                format!("CONCAT({})", vec![a; n].join(", "))
            }
            2 => format!(
                "REPEAT({a}, {})",
                pick(rng, &["1000", "65536", "1048576", "4194305", "-1"])
            ),
            3 => {
                let n = rng.gen_range(5..40);
                format!("({a} LIKE '{}x')", "%_".repeat(n))
            }
            4 => format!(
                "LPAD({a}, {}, 'X\u{e9}')",
                pick(rng, &["100000", "4194304", "18446744073709551615"])
            ),
            _ => {
                let n = rng.gen_range(20..200);
                format!("{}{a}{}", "(".repeat(n), ")".repeat(n))
            }
        }
    }

    fn call(&mut self, rng: &mut StdRng, scope: &Scope) -> String {
        let (name, arity) = *pick(rng, FUNCS);
        let n = match arity {
            Some(n) if rng.gen_bool(0.85) => n,
            Some(_) => rng.gen_range(0..5),
            None => rng.gen_range(0..5),
        };
        // REPEAT/LPAD/RPAD with huge counts are the evaluator's business (capped at
        // max_allowed_packet), but keep most of them cheap.
        let args: Vec<String> = (0..n).map(|_| self.expr(rng, scope)).collect();
        // Interval arithmetic and unit keywords (huge amounts included).
        if matches!(name, "DATE_ADD" | "TIMESTAMPDIFF") && rng.gen_bool(0.7) {
            let unit = pick(rng, &["SECOND", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"]);
            let a = self.expr(rng, scope);
            let b = self.expr(rng, scope);
            return if name == "DATE_ADD" {
                let n = pick(rng, &["1", "-1", "1.5", "9223372036854775807", "NULL"]);
                format!("({a} {} INTERVAL {n} {unit})", pick(rng, &["+", "-"]))
            } else {
                format!("TIMESTAMPDIFF({unit}, {a}, {b})")
            };
        }
        if name == "TRIM" && rng.gen_bool(0.3) {
            let a = self.expr(rng, scope);
            let b = self.expr(rng, scope);
            let how = pick(rng, &["LEADING", "TRAILING", "BOTH", ""]);
            return format!("TRIM({how} {a} FROM {b})");
        }
        format!("{name}({})", args.join(", "))
    }

    fn aggregate(&mut self, rng: &mut StdRng, scope: &Scope) -> String {
        let f = pick(rng, AGGS);
        if *f == "COUNT" && rng.gen_bool(0.4) {
            return "COUNT(*)".into();
        }
        // No aggregates inside aggregates (an error path, kept rare).
        let inner = Scope {
            cols: scope.cols.clone(),
            aggregates: rng.gen_bool(0.05),
        };
        let a = self.expr(rng, &inner);
        let distinct = if rng.gen_bool(0.2) { "DISTINCT " } else { "" };
        format!("{f}({distinct}{a})")
    }

    fn subquery_expr(&mut self, rng: &mut StdRng, scope: &Scope) -> String {
        let sub = self.select_inner(rng, scope, 1, true);
        match rng.gen_range(0..5) {
            0 => format!("({sub})"),
            1 => format!("EXISTS ({sub})"),
            2 => format!("NOT EXISTS ({sub})"),
            3 => {
                let a = self.expr(rng, scope);
                let not = if rng.gen_bool(0.3) { "NOT " } else { "" };
                format!("({a} {not}IN ({sub}))")
            }
            _ => {
                let a = self.expr(rng, scope);
                format!(
                    "({a} {} {} ({sub}))",
                    pick(rng, &["=", ">", "<=", "<>"]),
                    pick(rng, &["ANY", "ALL", "SOME"])
                )
            }
        }
    }

    // ----- SELECT ------------------------------------------------------------------------------

    /// A table (or derived table) with an alias; returns its text and the columns it adds.
    fn table_factor(&mut self, rng: &mut StdRng, outer: &Scope) -> (String, Vec<String>) {
        if self.depth > 0 && rng.gen_bool(0.1) {
            self.depth -= 1;
            let alias = format!("dt{}", rng.gen_range(0..3));
            let n = rng.gen_range(1..4);
            let t = pick(rng, &TABLES[..3]);
            let cols: Vec<&str> = (0..n).map(|_| pick(rng, t.cols).0).collect();
            let mut names = Vec::new();
            let items: Vec<String> = cols
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let name = format!("x{i}");
                    names.push(format!("{alias}.{name}"));
                    names.push(name.clone());
                    format!("{c} AS {name}")
                })
                .collect();
            let w = if rng.gen_bool(0.5) {
                let s = Scope {
                    cols: t.cols.iter().map(|c| c.0.to_string()).collect(),
                    aggregates: false,
                };
                format!(" WHERE {}", self.expr(rng, &s))
            } else {
                String::new()
            };
            let g = if rng.gen_bool(0.3) {
                format!(" GROUP BY {}", cols[0])
            } else {
                String::new()
            };
            self.depth += 1;
            let _ = outer;
            return (
                format!(
                    "(SELECT {} FROM {}{w}{g}) AS {alias}",
                    items.join(", "),
                    t.name
                ),
                names,
            );
        }
        if rng.gen_bool(0.03) {
            let t = pick(
                rng,
                &[
                    "information_schema.TABLES",
                    "information_schema.COLUMNS",
                    "information_schema.PROCESSLIST",
                    "mysql.user",
                    "fz2.t1",
                    "nope",
                ],
            );
            return (format!("{t} AS ix"), vec!["ix.TABLE_NAME".into()]);
        }
        let t = pick(rng, TABLES);
        let alias = if rng.gen_bool(0.5) {
            Some(format!("{}{}", t.name, pick(rng, &["a", "b", "c"])))
        } else {
            None
        };
        let q = alias.clone().unwrap_or_else(|| t.name.to_string());
        let mut cols = Vec::new();
        for (c, _) in t.cols {
            cols.push(format!("{q}.{c}"));
            cols.push(c.to_string());
        }
        let text = match &alias {
            Some(a) => format!(
                "{}{} {a}",
                t.name,
                if rng.gen_bool(0.5) { " AS" } else { "" }
            ),
            None => t.name.to_string(),
        };
        (text, cols)
    }

    /// FROM clause: one to three factors joined in various ways.
    fn table_list(&mut self, rng: &mut StdRng, outer: &Scope) -> (String, Vec<String>) {
        let (mut text, mut cols) = self.table_factor(rng, outer);
        let joins = if rng.gen_bool(0.05) {
            rng.gen_range(3..6)
        } else {
            rng.gen_range(0..3)
        };
        for _ in 0..joins {
            let (t, c) = self.table_factor(rng, outer);
            cols.extend(c);
            let scope = Scope {
                cols: cols.clone(),
                aggregates: false,
            };
            match rng.gen_range(0..9) {
                0 => text = format!("{text}, {t}"),
                1 => text = format!("{text} CROSS JOIN {t}"),
                2 => text = format!("{text} NATURAL JOIN {t}"),
                3 => {
                    let c = pick(rng, &["id", "a", "k", "nope"]);
                    text = format!("{text} JOIN {t} USING ({c})")
                }
                4 => text = format!("{text} STRAIGHT_JOIN {t} ON {}", self.expr(rng, &scope)),
                5 => text = format!("{text} LEFT JOIN {t} ON {}", self.expr(rng, &scope)),
                6 => text = format!("{text} RIGHT JOIN {t} ON {}", self.expr(rng, &scope)),
                _ => {
                    let a = self.column(rng, &scope);
                    let b = self.column(rng, &scope);
                    text = format!("{text} JOIN {t} ON {a} = {b}")
                }
            }
        }
        (text, cols)
    }

    fn select(&mut self, rng: &mut StdRng, outer: &Scope) -> String {
        let union = rng.gen_bool(0.1);
        let mut s = self.select_inner(rng, outer, 3, !union);
        if union {
            let n = rng.gen_range(1..3);
            for _ in 0..n {
                let other = self.select_inner(rng, outer, 3, false);
                let all = if rng.gen_bool(0.5) { " ALL" } else { "" };
                s = format!("{s} UNION{all} {other}");
            }
            if rng.gen_bool(0.4) {
                s += &format!(" ORDER BY 1 LIMIT {}", rng.gen_range(0..5));
            }
        }
        if rng.gen_bool(0.05) {
            s += *pick(rng, &[" FOR UPDATE", " LOCK IN SHARE MODE", " FOR SHARE"]);
        }
        s
    }

    /// A SELECT with FROM; `max_items` caps the select list; `tail` allows ORDER BY and LIMIT
    /// (not in a UNION's branches, where MySQL wants parentheses around them).
    fn select_inner(
        &mut self,
        rng: &mut StdRng,
        outer: &Scope,
        max_items: usize,
        tail: bool,
    ) -> String {
        if self.depth == 0 {
            return format!("SELECT {}", pick(rng, INTS));
        }
        self.depth -= 1;
        let (from, mut cols) = self.table_list(rng, outer);
        cols.extend(outer.cols.iter().cloned());
        let grouped = rng.gen_bool(0.25);
        let items_scope = Scope {
            cols: cols.clone(),
            aggregates: true,
        };
        let n = rng.gen_range(1..=max_items);
        let mut items = Vec::new();
        for i in 0..n {
            let it = match rng.gen_range(0..10) {
                0 => "*".to_string(),
                1 => format!("{}.*", pick(rng, &["t1", "t2", "t3a", "x"])),
                2 | 3 if grouped => self.aggregate(rng, &items_scope),
                _ => self.expr(rng, &items_scope),
            };
            if rng.gen_bool(0.3) && it != "*" && !it.ends_with(".*") {
                items.push(format!("{it} AS c{i}"));
            } else {
                items.push(it);
            }
        }
        let distinct = if rng.gen_bool(0.1) { "DISTINCT " } else { "" };
        let mut s = format!("SELECT {distinct}{} FROM {from}", items.join(", "));
        let where_scope = Scope {
            cols: cols.clone(),
            aggregates: false,
        };
        if rng.gen_bool(0.6) {
            s += &format!(" WHERE {}", self.expr(rng, &where_scope));
        }
        if grouped {
            let g = if rng.gen_bool(0.15) {
                rng.gen_range(0..6).to_string()
            } else if rng.gen_bool(0.05) {
                self.expr(rng, &items_scope)
            } else {
                self.column(rng, &where_scope)
            };
            s += &format!(" GROUP BY {g}");
            if rng.gen_bool(0.2) {
                s += &format!(", {}", rng.gen_range(1..3));
            }
            if rng.gen_bool(0.3) {
                s += &format!(" HAVING {}", self.expr(rng, &items_scope));
            }
        }
        if tail && rng.gen_bool(0.35) {
            let k = if rng.gen_bool(0.3) {
                rng.gen_range(0..6).to_string()
            } else {
                self.expr(rng, &items_scope)
            };
            let dir = pick(rng, &["", " ASC", " DESC"]);
            s += &format!(" ORDER BY {k}{dir}");
        }
        if tail && rng.gen_bool(0.3) {
            let n = if self.placeholders && rng.gen_bool(0.3) {
                "?"
            } else {
                *pick(
                    rng,
                    &[
                        "0",
                        "1",
                        "2",
                        "10",
                        "18446744073709551615",
                        "-1",
                        "1.5",
                        "'2'",
                    ],
                )
            };
            s += &format!(" LIMIT {n}");
            if rng.gen_bool(0.3) {
                s += &format!(" OFFSET {}", pick(rng, &["0", "1", "5", "4294967296"]));
            }
        }
        self.depth += 1;
        s
    }

    fn select_no_from(&mut self, rng: &mut StdRng) -> String {
        let scope = Scope::default();
        let n = rng.gen_range(1..5);
        let items: Vec<String> = (0..n).map(|_| self.expr(rng, &scope)).collect();
        let mut s = format!("SELECT {}", items.join(", "));
        if rng.gen_bool(0.1) {
            s += " FROM DUAL";
        }
        if rng.gen_bool(0.1) {
            s += &format!(" WHERE {}", self.expr(rng, &scope));
        }
        s
    }

    // ----- DML ---------------------------------------------------------------------------------

    fn value_for(&mut self, rng: &mut StdRng, k: Kind) -> String {
        if rng.gen_bool(0.25) {
            return self.literal(rng);
        }
        if rng.gen_bool(0.1) {
            return "NULL".into();
        }
        if rng.gen_bool(0.01) {
            return format!("REPEAT('w', {})", pick(rng, &["300", "70000", "1000000"]));
        }
        match k {
            Kind::Int => rng.gen_range(-5i64..50).to_string(),
            Kind::UInt => rng.gen_range(0u64..100).to_string(),
            Kind::Str => format!(
                "'{}'",
                pick(rng, &["p", "q", "zz", "h\u{e9}", "", "long-ish text"])
            ),
            Kind::Dec => format!("{}.{:02}", rng.gen_range(-99..999), rng.gen_range(0..100)),
            Kind::Dbl => format!("{}e{}", rng.gen_range(-9..9), rng.gen_range(-5..5)),
            Kind::Date => format!(
                "'20{:02}-{:02}-{:02}'",
                rng.gen_range(0..40),
                rng.gen_range(1..13),
                rng.gen_range(1..29)
            ),
            Kind::DateTime => format!(
                "'20{:02}-{:02}-{:02} {:02}:{:02}:{:02}'",
                rng.gen_range(0..40),
                rng.gen_range(1..13),
                rng.gen_range(1..29),
                rng.gen_range(0..24),
                rng.gen_range(0..60),
                rng.gen_range(0..60)
            ),
        }
    }

    fn table_scope(t: &Table) -> Scope {
        Scope {
            cols: t.cols.iter().map(|c| c.0.to_string()).collect(),
            aggregates: false,
        }
    }

    fn insert(&mut self, rng: &mut StdRng) -> String {
        let t = pick(rng, TABLES);
        let verb = pick(
            rng,
            &[
                "INSERT INTO",
                "INSERT IGNORE INTO",
                "REPLACE INTO",
                "INSERT",
            ],
        );
        let ncols = rng.gen_range(0..=t.cols.len());
        let mut cols: Vec<(&str, Kind)> = t.cols.to_vec();
        cols.shuffle(rng);
        cols.truncate(ncols);
        if rng.gen_bool(0.03) {
            cols.push(("nope", Kind::Int));
        }
        let col_list = if cols.is_empty() && rng.gen_bool(0.7) {
            cols = t.cols.to_vec();
            String::new()
        } else {
            format!(
                " ({})",
                cols.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
            )
        };
        let body = if rng.gen_bool(0.2) {
            let scope = Scope::default();
            let src = pick(rng, &TABLES[..3]);
            let items: Vec<String> = if rng.gen_bool(0.2) {
                vec!["*".into()]
            } else {
                cols.iter()
                    .map(|_| {
                        if rng.gen_bool(0.6) {
                            pick(rng, src.cols).0.to_string()
                        } else {
                            self.expr(rng, &scope)
                        }
                    })
                    .collect()
            };
            let lim = rng.gen_range(1..4);
            format!(
                " SELECT {} FROM {} ORDER BY 1 LIMIT {lim}",
                items.join(", "),
                src.name
            )
        } else {
            // Now and then a bulk insert (joins over them stay bounded: tables are rebuilt).
            let rows = if rng.gen_bool(0.02) {
                rng.gen_range(50..300)
            } else {
                rng.gen_range(1..4)
            };
            let mut vs = Vec::new();
            for _ in 0..rows {
                let mut n = cols.len();
                if rng.gen_bool(0.03) {
                    n += 1;
                }
                let row: Vec<String> = (0..n)
                    .map(|i| {
                        let k = cols.get(i).map_or(Kind::Int, |c| c.1);
                        if rng.gen_bool(0.05) {
                            "DEFAULT".into()
                        } else {
                            self.value_for(rng, k)
                        }
                    })
                    .collect();
                vs.push(format!("({})", row.join(", ")));
            }
            format!(" {} {}", pick(rng, &["VALUES", "VALUE"]), vs.join(", "))
        };
        let mut s = format!("{verb} {}{col_list}{body}", t.name);
        if verb.starts_with("INSERT") && rng.gen_bool(0.2) {
            let (c, k) = *pick(rng, t.cols);
            let v = if rng.gen_bool(0.5) {
                format!("VALUES({c}) + 1")
            } else {
                self.value_for(rng, k)
            };
            s += &format!(" ON DUPLICATE KEY UPDATE {c} = {v}");
        }
        s
    }

    fn update(&mut self, rng: &mut StdRng) -> String {
        if rng.gen_bool(0.2) {
            // Multi-table.
            let (from, cols) = self.table_list(rng, &Scope::default());
            let scope = Scope {
                cols: cols.clone(),
                aggregates: false,
            };
            let target = pick(rng, &cols).clone();
            let v = self.expr(rng, &scope);
            let w = self.expr(rng, &scope);
            return format!("UPDATE {from} SET {target} = {v} WHERE {w}");
        }
        let t = pick(rng, TABLES);
        let scope = Self::table_scope(t);
        let n = rng.gen_range(1..3);
        let sets: Vec<String> = (0..n)
            .map(|_| {
                let (c, k) = *pick(rng, t.cols);
                let v = if rng.gen_bool(0.5) {
                    self.expr(rng, &scope)
                } else {
                    self.value_for(rng, k)
                };
                format!("{c} = {v}")
            })
            .collect();
        let mut s = format!("UPDATE {} SET {}", t.name, sets.join(", "));
        if rng.gen_bool(0.7) {
            s += &format!(" WHERE {}", self.expr(rng, &scope));
        }
        if rng.gen_bool(0.15) {
            s += &format!(
                " ORDER BY {} LIMIT {}",
                pick(rng, t.cols).0,
                rng.gen_range(0..3)
            );
        }
        s
    }

    fn delete(&mut self, rng: &mut StdRng) -> String {
        if rng.gen_bool(0.15) {
            let (from, _) = self.table_list(rng, &Scope::default());
            let target = pick(rng, &["t1", "t2", "t3", "t1a", "nope"]);
            return if rng.gen_bool(0.5) {
                format!("DELETE {target} FROM {from} WHERE {}", self.literal(rng))
            } else {
                format!("DELETE FROM {target} USING {from}")
            };
        }
        let t = pick(rng, TABLES);
        let scope = Self::table_scope(t);
        // Mostly narrow deletes, so that the tables keep some rows between resets.
        let w = if rng.gen_bool(0.9) {
            format!(" WHERE {}", self.expr(rng, &scope))
        } else {
            String::new()
        };
        let mut s = format!("DELETE FROM {}{w}", t.name);
        if rng.gen_bool(0.15) {
            s += &format!(" ORDER BY {} LIMIT 1", pick(rng, t.cols).0);
        }
        s
    }

    // ----- DDL ---------------------------------------------------------------------------------

    fn column_type(rng: &mut StdRng) -> &'static str {
        pick::<&str>(rng, COLUMN_TYPES)
    }

    fn ddl(&mut self, rng: &mut StdRng) -> String {
        let table = pick(rng, &["t1", "t2", "t3", "t4", "t4", "t5"]);
        match rng.gen_range(0..12) {
            0..=3 => {
                let n = rng.gen_range(1..5);
                let mut defs = Vec::new();
                for i in 1..=n {
                    let mut d = format!("c{i} {}", Self::column_type(rng));
                    if rng.gen_bool(0.2) {
                        d += " NOT NULL";
                    }
                    if rng.gen_bool(0.15) {
                        d += &format!(" DEFAULT {}", self.literal(rng));
                    }
                    if i == 1 && rng.gen_bool(0.3) {
                        d += " PRIMARY KEY";
                        if rng.gen_bool(0.5) {
                            d += " AUTO_INCREMENT";
                        }
                    }
                    if rng.gen_bool(0.05) {
                        d += " UNIQUE";
                    }
                    if rng.gen_bool(0.05) {
                        d += " COMMENT 'c'";
                    }
                    defs.push(d);
                }
                if rng.gen_bool(0.3) {
                    defs.push(format!(
                        "{} k{} (c{}{})",
                        pick(rng, &["KEY", "INDEX", "UNIQUE KEY", "PRIMARY KEY"]),
                        rng.gen_range(0..3),
                        rng.gen_range(1..=n),
                        if n > 1 && rng.gen_bool(0.3) {
                            ", c2".to_string()
                        } else {
                            String::new()
                        }
                    ));
                }
                let ine = if rng.gen_bool(0.3) {
                    "IF NOT EXISTS "
                } else {
                    ""
                };
                let opts = pick(
                    rng,
                    &[
                        "",
                        " ENGINE=InnoDB",
                        " DEFAULT CHARSET=utf8mb4",
                        " ENGINE=MyISAM COLLATE=utf8mb4_bin",
                        " /*! ENGINE = innodb */",
                    ],
                );
                format!("CREATE TABLE {ine}{table} ({}){opts}", defs.join(", "))
            }
            4 => format!(
                "DROP TABLE {}{table}",
                if rng.gen_bool(0.5) { "IF EXISTS " } else { "" }
            ),
            5 => format!("TRUNCATE TABLE {table}"),
            6 => format!(
                "CREATE {}INDEX ix{} ON {table} ({})",
                if rng.gen_bool(0.3) { "UNIQUE " } else { "" },
                rng.gen_range(0..3),
                pick(rng, &["a", "b", "c1", "c2", "v, k", "id", "s(10)", "nope"])
            ),
            7 => format!("DROP INDEX ix{} ON {table}", rng.gen_range(0..3)),
            8 => format!(
                "ALTER TABLE {table} {}",
                pick(
                    rng,
                    &[
                        "ADD INDEX ia (a)",
                        "ADD UNIQUE KEY ub (b)",
                        "DROP INDEX ia",
                        "DROP INDEX ka",
                        "ADD COLUMN z INT",
                        "ADD INDEX (c1)",
                        "RENAME TO t9",
                        "ENGINE=InnoDB",
                    ]
                )
            ),
            9 => {
                // Dropping the fuzz database itself is rare: everything after it fails until
                // the next rebuild.
                let db = if rng.gen_bool(0.05) {
                    "fz"
                } else {
                    pick(
                        rng,
                        &[
                            "fz2",
                            "fz2",
                            "`a b`",
                            "mysql",
                            "information_schema",
                            "",
                            "x/y",
                        ],
                    )
                };
                format!(
                    "{} DATABASE {}{db}",
                    pick(rng, &["CREATE", "DROP", "CREATE SCHEMA"]),
                    pick(rng, &["", "IF EXISTS ", "IF NOT EXISTS "]),
                )
            }
            10 => format!(
                "{} {}",
                pick(rng, &["CREATE USER", "DROP USER", "DROP USER IF EXISTS"]),
                pick(
                    rng,
                    &["'u1'@'%' IDENTIFIED BY 'p'", "'u1'@'%'", "u2", "'root'@'%'"]
                )
            ),
            _ => format!(
                "{} TABLE {table}",
                pick(rng, &["ANALYZE", "CHECK", "OPTIMIZE", "DESCRIBE", "REPAIR"])
            ),
        }
    }

    // ----- session statements ------------------------------------------------------------------

    fn set(&mut self, rng: &mut StdRng) -> String {
        match rng.gen_range(0..10) {
            0..=2 => {
                let n = rng.gen_range(1..3);
                let parts: Vec<String> = (0..n)
                    .map(|_| {
                        let e = self.expr(rng, &Scope::default());
                        format!("@v{} {} {e}", rng.gen_range(0..4), pick(rng, &["=", ":="]))
                    })
                    .collect();
                format!("SET {}", parts.join(", "))
            }
            3..=6 => {
                let (name, vals) = *pick(rng, SESSION_VARS);
                let scope = pick(rng, &["", "SESSION ", "@@", "@@session.", "LOCAL "]);
                let v = if rng.gen_bool(0.9) {
                    pick(rng, vals).to_string()
                } else {
                    self.literal(rng)
                };
                format!("SET {scope}{name} = {v}")
            }
            7 => {
                let (name, vals) = *pick(rng, GLOBAL_VARS);
                format!("SET GLOBAL {name} = {}", pick(rng, vals))
            }
            8 => pick(
                rng,
                &[
                    "SET NAMES utf8mb4",
                    "SET NAMES latin1",
                    "SET NAMES utf8mb4 COLLATE utf8mb4_bin",
                    "SET NAMES utf8 COLLATE latin1_bin",
                    "SET NAMES bogus",
                    "SET NAMES DEFAULT",
                    "SET CHARACTER SET utf8mb4",
                    "SET CHARSET DEFAULT",
                ],
            )
            .to_string(),
            _ => format!(
                "SET {}TRANSACTION {}",
                pick(rng, &["", "SESSION ", "GLOBAL "]),
                pick(
                    rng,
                    &[
                        "ISOLATION LEVEL READ COMMITTED",
                        "ISOLATION LEVEL SERIALIZABLE",
                        "READ ONLY",
                        "READ WRITE",
                        "ISOLATION LEVEL REPEATABLE READ, READ WRITE",
                    ]
                )
            ),
        }
    }

    fn show(&mut self, rng: &mut StdRng) -> String {
        let table = pick(rng, &["t1", "t2", "t3", "t4", "nope", "fz.t1", "fz2.t1"]);
        const LIKES: &[&str] = &["", " LIKE '%'", " LIKE 'max%'", " LIKE 't_'", " WHERE 1"];
        let like = *pick(rng, LIKES);
        match rng.gen_range(0..16) {
            0 => format!("SHOW TABLES{like}"),
            1 => "SHOW FULL TABLES FROM fz".into(),
            2 => format!("SHOW COLUMNS FROM {table}"),
            3 => format!("SHOW FULL COLUMNS FROM {table}{like}"),
            4 => format!("SHOW CREATE TABLE {table}"),
            5 => format!("SHOW INDEX FROM {table}"),
            6 => format!(
                "SHOW {}VARIABLES{like}",
                pick(rng, &["", "GLOBAL ", "SESSION "])
            ),
            7 => format!(
                "SHOW {}STATUS{like}",
                pick(rng, &["", "GLOBAL ", "SESSION "])
            ),
            8 => "SHOW WARNINGS".into(),
            9 => "SHOW ERRORS".into(),
            10 => pick(rng, &["SHOW PROCESSLIST", "SHOW FULL PROCESSLIST"]).to_string(),
            11 => format!("SHOW DATABASES{like}"),
            12 => pick(
                rng,
                &[
                    "SHOW ENGINES",
                    "SHOW COLLATION",
                    "SHOW CHARACTER SET",
                    "SHOW CHARSET LIKE 'utf%'",
                ],
            )
            .to_string(),
            13 => format!("SHOW TABLE STATUS{like}"),
            14 => format!("DESCRIBE {table}"),
            _ => format!("SHOW CREATE DATABASE {}", pick(rng, &["fz", "nope"])),
        }
    }

    fn txn(&mut self, rng: &mut StdRng) -> String {
        pick(
            rng,
            &[
                "BEGIN",
                "START TRANSACTION",
                "START TRANSACTION READ ONLY",
                "START TRANSACTION WITH CONSISTENT SNAPSHOT",
                "COMMIT",
                "COMMIT WORK",
                "ROLLBACK",
                "ROLLBACK WORK",
                "SAVEPOINT sp",
                "ROLLBACK TO SAVEPOINT sp",
                "BEGIN WORK",
            ],
        )
        .to_string()
    }

    fn misc(&mut self, rng: &mut StdRng) -> String {
        match rng.gen_range(0..11) {
            8 => {
                let sel = self.select(rng, &Scope::default());
                let body = if rng.gen_bool(0.5) {
                    "SELECT * FROM c".to_string()
                } else {
                    "SELECT COUNT(*) FROM c JOIN t1 ON 1 = 1".to_string()
                };
                format!("WITH c AS ({sel}) {body}")
            }
            9 => {
                let t = pick(rng, &TABLES[..3]);
                let (c, _) = *pick(rng, t.cols);
                let (k, _) = *pick(rng, t.cols);
                match rng.gen_range(0..3) {
                    0 => format!(
                        "UPDATE {} SET {c} = (SELECT MAX({k}) FROM {} AS x) WHERE {k} IS NOT NULL",
                        t.name, t.name
                    ),
                    1 => format!(
                        "DELETE FROM {} WHERE {k} IN (SELECT {k} FROM {} AS x WHERE {c} > 1)",
                        t.name, t.name
                    ),
                    _ => format!(
                        "INSERT IGNORE INTO {} SELECT * FROM {} ORDER BY 1 LIMIT 3",
                        t.name, t.name
                    ),
                }
            }
            10 => {
                // Aggregates over an empty or a NULL-only input, DISTINCT over expressions.
                let t = pick(rng, &TABLES[..3]);
                let scope = Self::table_scope(t);
                let a = self.aggregate(
                    rng,
                    &Scope {
                        aggregates: true,
                        ..scope.clone()
                    },
                );
                let w = pick(rng, &["1 = 0", "1 = 1", "NULL", "id IS NULL"]);
                format!("SELECT {a}, COUNT(*) FROM {} WHERE {w}", t.name)
            }
            0 => {
                // Leaving the fuzz database is rare: table statements fail until the next USE.
                let db = if rng.gen_bool(0.1) {
                    pick(rng, &["nope", "mysql", "information_schema", "fz2"])
                } else {
                    pick(rng, &["fz", "`fz`", "FZ"])
                };
                format!("USE {db}")
            }
            1 => {
                let e = self.expr(rng, &Scope::default());
                format!("DO {e}")
            }
            2 => format!(
                "KILL {}{}",
                pick(rng, &["", "QUERY ", "CONNECTION "]),
                pick(rng, &["0", "999999", "-1", "'a'", "4294967296"])
            ),
            3 => pick(
                rng,
                &[
                    "FLUSH STATUS",
                    "FLUSH TABLES",
                    "FLUSH PRIVILEGES",
                    "FLUSH LOGS",
                ],
            )
            .to_string(),
            4 => {
                let sel = self.select(rng, &Scope::default());
                format!("EXPLAIN {sel}")
            }
            5 => {
                let sel = self.select(rng, &Scope::default());
                format!("({sel})")
            }
            6 => {
                let sel = self.select(rng, &Scope::default());
                format!("SELECT * FROM ({sel}) AS q")
            }
            _ => {
                let e = self.expr(rng, &Scope::default());
                format!("SELECT {e} INTO @v0")
            }
        }
    }
}

/// Splits SQL text into rough tokens (words, quoted strings, single punctuation characters).
fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '\'' || c == '"' || c == '`' {
            let mut j = i + 1;
            while j < cs.len() && cs[j] != c {
                j += 1;
            }
            let end = (j + 1).min(cs.len());
            out.push(cs[i..end].iter().collect());
            i = end;
        } else if c.is_alphanumeric() || c == '_' || c == '@' || c == '.' {
            let mut j = i;
            while j < cs.len() && (cs[j].is_alphanumeric() || "_@.".contains(cs[j])) {
                j += 1;
            }
            out.push(cs[i..j].iter().collect());
            i = j;
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

/// Token-level mutations: delete, duplicate, swap, replace or insert tokens, or truncate.
pub fn mutate_tokens(rng: &mut StdRng, s: &str) -> String {
    let mut t = tokens(s);
    if t.is_empty() {
        return s.to_string();
    }
    for _ in 0..rng.gen_range(1..4) {
        let i = rng.gen_range(0..t.len());
        match rng.gen_range(0..7) {
            0 if t.len() > 1 => {
                t.remove(i);
            }
            1 => {
                let x = t[i].clone();
                t.insert(i, x);
            }
            2 => {
                let j = rng.gen_range(0..t.len());
                t.swap(i, j);
            }
            3 => t[i] = pick(rng, TOKENS).to_string(),
            4 => t.insert(i, pick(rng, TOKENS).to_string()),
            5 => {
                t.truncate(i.max(1));
            }
            _ => {
                // Repeat a token a few times (long IN lists, deep parentheses).
                let x = pick(rng, &["(", "NOT", "-", "1,", "~"]).to_string();
                for _ in 0..rng.gen_range(2..64) {
                    t.insert(i, x.clone());
                }
            }
        }
        if t.is_empty() {
            break;
        }
    }
    let sep = if rng.gen_bool(0.9) { " " } else { "" };
    t.join(sep)
}

/// Joins a prefix of one statement to a suffix of another (at character boundaries).
pub fn splice(rng: &mut StdRng, a: &str, b: &str) -> String {
    let ac: Vec<char> = a.chars().collect();
    let bc: Vec<char> = b.chars().collect();
    let i = rng.gen_range(0..=ac.len());
    let j = rng.gen_range(0..=bc.len());
    ac[..i].iter().chain(bc[j..].iter()).collect()
}

/// Random text: ASCII noise, SQL-ish characters, control characters, multi-byte characters.
pub fn random_text(rng: &mut StdRng) -> String {
    let n = rng.gen_range(0..80);
    (0..n)
        .map(|_| match rng.gen_range(0..10) {
            0..=5 => rng.gen_range(0x20u8..0x7f) as char,
            6 => *pick(
                rng,
                &[
                    '\'', '"', '`', '(', ')', ';', '\\', '?', '@', '#', '-', '*', '/',
                ],
            ),
            7 => rng.gen_range(0u8..0x20) as char,
            8 => char::from_u32(rng.gen_range(0x80..0x800)).unwrap_or('x'),
            _ => char::from_u32(rng.gen_range(0x800..0x11000)).unwrap_or('\u{fffd}'),
        })
        .collect()
}

/// Random bytes (the protocol's COM_QUERY payload is not necessarily UTF-8).
pub fn random_bytes(rng: &mut StdRng, max: usize) -> Vec<u8> {
    let n = rng.gen_range(0..=max);
    (0..n).map(|_| rng.gen()).collect()
}
