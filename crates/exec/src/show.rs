//! SHOW statements, DESCRIBE, ANALYZE, CHECK TABLE and the `information_schema` tables over the catalog.
//!
//! `information_schema.SCHEMATA` and `COLUMNS` are materialised from the store's catalog at
//! each query (they are small) and then queried by the ordinary SELECT executor, so
//! WHERE/ORDER BY/LIMIT/aggregates work on them like on any table; TABLES, STATISTICS and the
//! other catalog tables tools read are built the same way in [`crate::infoschema`].

use std::sync::Arc;

use shoal_sql::catalog::SYSTEM_DATABASES;
use shoal_sql::eval::like;
use shoal_sql::value::Value;
use shoal_sql::SqlError;
use shoal_store::{ColumnDefault, ColumnType, Datum, Engine, StoreError, TableDef};

use crate::convert::{store_err, ColumnInfo};
use crate::exec::ExecOutput;

fn s(v: &str) -> Value {
    Value::Str(v.to_string())
}

fn rows_out(cols: Vec<ColumnInfo>, rows: Vec<Vec<Value>>) -> ExecOutput {
    ExecOutput::Rows {
        columns: cols.into(),
        rows,
    }
}

fn like_ok(name: &str, pat: &Option<String>) -> bool {
    pat.as_ref().is_none_or(|p| like(name, p, '\\'))
}

/// SHOW \[FULL\] TABLES.
pub fn show_tables(
    engine: &Engine,
    db: &str,
    full: bool,
    pat: &Option<String>,
) -> Result<ExecOutput, SqlError> {
    let mut names = match engine.tables(db) {
        Ok(names) => names,
        // `mysql`, `performance_schema`, `sys`: schemas that exist (SHOW DATABASES lists them,
        // USE works) but hold no tables here; `mariadb-check --all-databases` lists each one.
        Err(StoreError::NoSuchDatabase(_))
            if SYSTEM_DATABASES.iter().any(|s| s.eq_ignore_ascii_case(db)) =>
        {
            Vec::new()
        }
        Err(e) => return Err(store_err(e)),
    };
    if db.eq_ignore_ascii_case("mysql") {
        names.extend(
            crate::mysql_schema::LOG_TABLES
                .iter()
                .map(|t| t.name.to_string()),
        );
        names.sort();
    }
    let mut cols = vec![ColumnInfo::text(&format!("Tables_in_{db}"))];
    if full {
        cols.push(ColumnInfo::text("Table_type"));
    }
    let rows = names
        .into_iter()
        .filter(|n| like_ok(n, pat))
        .map(|n| {
            let mut r = vec![s(&n)];
            if full {
                r.push(s("BASE TABLE"));
            }
            r
        })
        .collect();
    Ok(rows_out(cols, rows))
}

fn default_text(c: &shoal_store::ColumnDef) -> Option<String> {
    match &c.default {
        Some(ColumnDefault::Value(Datum::Null)) | None => None,
        // As MariaDB prints a binary default: NUL as `\0`, bytes that are not UTF-8 as `?`.
        Some(ColumnDefault::Value(Datum::Bytes(b))) if c.ty.is_binary_string() => Some(
            String::from_utf8_lossy(b)
                .replace('\u{FFFD}', "?")
                .replace('\0', "\\0"),
        ),
        // A TIME(n) default shows the column's n digits.
        Some(ColumnDefault::Value(Datum::Time(m))) => Some(shoal_store::time_text(
            *m,
            match c.ty {
                ColumnType::Time(f) => f,
                _ => 6,
            },
            false,
        )),
        Some(ColumnDefault::Value(d)) => Some(d.to_string()),
        Some(ColumnDefault::CurrentTimestamp) => Some("CURRENT_TIMESTAMP".into()),
    }
}

fn is_numeric(t: ColumnType) -> bool {
    matches!(
        t,
        ColumnType::Int { .. }
            | ColumnType::Decimal { .. }
            | ColumnType::Float(_)
            | ColumnType::Double(_)
    )
}

/// information_schema.COLUMNS.CHARACTER_OCTET_LENGTH: utf8mb4 characters take up to 4 bytes,
/// binary strings are bytes (`chars`: CHARACTER_MAXIMUM_LENGTH).
fn octet_length(ty: ColumnType, chars: &Value) -> Value {
    match (ty, chars) {
        (ColumnType::Char(_) | ColumnType::Varchar(_), Value::Int(n)) => Value::Int(n * 4),
        (_, v) => v.clone(),
    }
}

/// `Key` column of DESCRIBE for column `i`.
fn key_kind(t: &TableDef, i: usize) -> &'static str {
    if t.primary_key.as_ref().is_some_and(|pk| pk.contains(&i)) {
        return "PRI";
    }
    if t.indexes
        .iter()
        .any(|ix| ix.unique && ix.columns.len() == 1 && ix.columns[0] == i)
    {
        return "UNI";
    }
    if t.indexes.iter().any(|ix| ix.columns.first() == Some(&i)) {
        return "MUL";
    }
    ""
}

/// SHOW CREATE TABLE text.
pub fn create_table_text(t: &TableDef, next_auto: Option<u64>) -> String {
    let q = |n: &str| format!("`{}`", n.replace('`', "``"));
    let mut lines = Vec::new();
    for c in &t.columns {
        let mut l = format!("  {} {}", q(&c.name), c.type_name());
        if !c.nullable {
            l.push_str(" NOT NULL");
        } else if matches!(c.ty, ColumnType::Timestamp(_)) {
            // A TIMESTAMP was NOT NULL unless declared NULL (before explicit defaults for
            // timestamps): MySQL and MariaDB both say NULL explicitly, so a dump re-creates
            // a nullable column on any server setting.
            l.push_str(" NULL");
        }
        match &c.default {
            Some(ColumnDefault::Value(Datum::Null)) => l.push_str(" DEFAULT NULL"),
            Some(ColumnDefault::Value(d)) => {
                if is_numeric(c.ty) {
                    l.push_str(&format!(" DEFAULT '{d}'"));
                } else if let Some(t) = default_text(c)
                    .filter(|_| c.ty.is_binary_string() || matches!(c.ty, ColumnType::Time(_)))
                {
                    l.push_str(&format!(" DEFAULT '{}'", t.replace('\'', "''")));
                } else {
                    l.push_str(&format!(" DEFAULT '{}'", d.to_string().replace('\'', "''")));
                }
            }
            Some(ColumnDefault::CurrentTimestamp) => l.push_str(" DEFAULT CURRENT_TIMESTAMP"),
            None if c.nullable && !matches!(c.ty, ColumnType::Text | ColumnType::Blob) => {
                l.push_str(" DEFAULT NULL")
            }
            None => {}
        }
        if c.auto_increment {
            l.push_str(" AUTO_INCREMENT");
        }
        lines.push(l);
    }
    let cols = |v: &[usize]| {
        v.iter()
            .map(|&i| q(&t.columns[i].name))
            .collect::<Vec<_>>()
            .join(",")
    };
    if let Some(pk) = &t.primary_key {
        lines.push(format!("  PRIMARY KEY ({})", cols(pk)));
    }
    for ix in &t.indexes {
        lines.push(format!(
            "  {}KEY {} ({})",
            if ix.unique { "UNIQUE " } else { "" },
            q(&ix.name),
            cols(&ix.columns)
        ));
    }
    for fk in &t.foreign_keys {
        let refs = fk
            .ref_columns
            .iter()
            .map(|c| q(c))
            .collect::<Vec<_>>()
            .join(", ");
        let parent = if fk.ref_db == t.db {
            q(&fk.ref_table)
        } else {
            format!("{}.{}", q(&fk.ref_db), q(&fk.ref_table))
        };
        let mut l = format!(
            "  CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {parent} ({refs})",
            q(&fk.name),
            fk.columns
                .iter()
                .map(|&i| q(&t.columns[i].name))
                .collect::<Vec<_>>()
                .join(", "),
        );
        for (what, a) in [("DELETE", fk.on_delete), ("UPDATE", fk.on_update)] {
            match a {
                shoal_store::FkAction::Cascade => l.push_str(&format!(" ON {what} CASCADE")),
                shoal_store::FkAction::SetNull => l.push_str(&format!(" ON {what} SET NULL")),
                shoal_store::FkAction::NoAction => l.push_str(&format!(" ON {what} NO ACTION")),
                shoal_store::FkAction::Restrict => {}
            }
        }
        lines.push(l);
    }
    let mut text = format!(
        "CREATE TABLE {} (\n{}\n) ENGINE=InnoDB",
        q(&t.name),
        lines.join(",\n")
    );
    if let Some(n) = next_auto.filter(|&n| n > 1) {
        text.push_str(&format!(" AUTO_INCREMENT={n}"));
    }
    text.push_str(" DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci");
    text
}

/// SHOW CREATE TABLE of a log table of the `mysql` schema ([`crate::mysql_schema`]).
pub fn show_create_log_table(t: &crate::mysql_schema::LogTable) -> ExecOutput {
    rows_out(
        vec![ColumnInfo::text("Table"), ColumnInfo::text("Create Table")],
        vec![vec![s(t.name), s(t.create)]],
    )
}

/// The information_schema.TABLES row of a log table of the `mysql` schema.
fn log_table_tables_row(t: &crate::mysql_schema::LogTable) -> Vec<Value> {
    let comment = if t.name == "general_log" {
        "General log"
    } else {
        "Slow log"
    };
    vec![
        s("def"),
        s("mysql"),
        s(t.name),
        s("BASE TABLE"),
        s("CSV"),
        Value::UInt(10),
        s("Dynamic"),
        Value::UInt(0),
        Value::UInt(0),
        Value::UInt(0),
        Value::UInt(0),
        Value::UInt(0),
        Value::UInt(0),
        Value::Null,
        Value::Null,
        Value::Null,
        Value::Null,
        s("utf8mb3_general_ci"),
        Value::Null,
        s(""),
        s(comment),
        Value::UInt(0),
        s("N"),
    ]
}

/// The information_schema.COLUMNS rows of a log table of the `mysql` schema.
fn log_table_column_rows(t: &crate::mysql_schema::LogTable) -> Vec<Vec<Value>> {
    let opt = |v: Option<i64>| v.map(Value::Int).unwrap_or(Value::Null);
    t.columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let timestamp = c.data_type == "timestamp";
            vec![
                s("def"),
                s("mysql"),
                s(t.name),
                s(c.name),
                Value::Int(i as i64 + 1),
                if timestamp {
                    s("CURRENT_TIMESTAMP(6)")
                } else {
                    Value::Null
                },
                s("NO"),
                s(c.data_type),
                opt(c.char_len),
                // The log tables are utf8mb3: 3 bytes a character.
                opt(c
                    .char_len
                    .map(|n| if c.data_type == "varchar" { n * 3 } else { n })),
                opt(c.numeric.map(|n| n.0)),
                opt(c.numeric.map(|n| n.1)),
                if timestamp {
                    Value::Int(6)
                } else {
                    Value::Null
                },
                s(c.column_type),
                s(""),
                s(if timestamp {
                    "DEFAULT_GENERATED on update CURRENT_TIMESTAMP(6)"
                } else {
                    ""
                }),
                s(""),
            ]
        })
        .collect()
}

/// SHOW CREATE TABLE.
pub fn show_create(engine: &Engine, t: &TableDef) -> ExecOutput {
    let next = if t.auto_increment_column().is_some() {
        engine.peek_auto_increment(t).ok()
    } else {
        None
    };
    rows_out(
        vec![ColumnInfo::text("Table"), ColumnInfo::text("Create Table")],
        vec![vec![s(&t.name), s(&create_table_text(t, next))]],
    )
}

/// DESCRIBE / SHOW \[FULL\] COLUMNS.
pub fn show_columns(t: &TableDef, full: bool, pat: &Option<String>) -> ExecOutput {
    let mut cols = vec![ColumnInfo::text("Field"), ColumnInfo::text("Type")];
    if full {
        cols.push(ColumnInfo::text("Collation"));
    }
    for n in ["Null", "Key", "Default", "Extra"] {
        cols.push(ColumnInfo::text(n));
    }
    if full {
        cols.push(ColumnInfo::text("Privileges"));
        cols.push(ColumnInfo::text("Comment"));
    }
    let mut rows = Vec::new();
    for (i, c) in t.columns.iter().enumerate() {
        if !like_ok(&c.name, pat) {
            continue;
        }
        let mut r = vec![s(&c.name), s(&c.type_name())];
        if full {
            r.push(match c.ty {
                ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Text => {
                    s("utf8mb4_general_ci")
                }
                _ => Value::Null,
            });
        }
        r.push(s(if c.nullable { "YES" } else { "NO" }));
        r.push(s(key_kind(t, i)));
        r.push(default_text(c).map(Value::Str).unwrap_or(Value::Null));
        r.push(s(if c.auto_increment {
            "auto_increment"
        } else {
            ""
        }));
        if full {
            r.push(s("select,insert,update,references"));
            r.push(s(""));
        }
        rows.push(r);
    }
    rows_out(cols, rows)
}

/// SHOW INDEX / SHOW KEYS: MariaDB's columns, from the rows STATISTICS shows
/// ([`crate::infoschema::index_rows`]).
pub fn show_index(t: &TableDef) -> ExecOutput {
    let names = [
        "Table",
        "Non_unique",
        "Key_name",
        "Seq_in_index",
        "Column_name",
        "Collation",
        "Cardinality",
        "Sub_part",
        "Packed",
        "Null",
        "Index_type",
        "Comment",
        "Index_comment",
        "Ignored",
    ];
    let cols = names
        .iter()
        .map(|n| {
            if matches!(
                *n,
                "Non_unique" | "Seq_in_index" | "Cardinality" | "Sub_part"
            ) {
                ColumnInfo::int(n)
            } else {
                ColumnInfo::text(n)
            }
        })
        .collect();
    let rows = crate::infoschema::index_rows(t)
        .into_iter()
        .map(|r| {
            let mut row = vec![
                s(&t.name),
                Value::Int(i64::from(!r.unique)),
                s(&r.key),
                Value::Int(r.seq as i64),
            ];
            row.extend(crate::infoschema::index_column_values(&r));
            row
        })
        .collect();
    rows_out(cols, rows)
}

/// ANALYZE TABLE result rows (the statement itself has nothing to do: we keep no statistics).
pub fn analyze(engine: &Engine, tables: &[(String, String)]) -> ExecOutput {
    let cols = ["Table", "Op", "Msg_type", "Msg_text"]
        .iter()
        .map(|n| ColumnInfo::text(n))
        .collect();
    let rows = tables
        .iter()
        .map(|(db, t)| match engine.table(db, t) {
            Ok(_) => vec![s(&format!("{db}.{t}")), s("analyze"), s("status"), s("OK")],
            Err(e) => vec![
                s(&format!("{db}.{t}")),
                s("analyze"),
                s("Error"),
                s(&e.to_string()),
            ],
        })
        .collect();
    rows_out(cols, rows)
}

/// OPTIMIZE TABLE: compacts the store once (RocksDB's full compaction, which first flushes the
/// memtables: every table's rows end in sorted files without the versions no snapshot needs),
/// then prints MariaDB's rows for an InnoDB table (a `note` that the table is recreated and
/// analyzed instead, then `status | OK`; compaction is our recreate) or, for a missing table,
/// `Error | Table 'db.t' doesn't exist` and `status | Operation failed`.
pub fn optimize(engine: &Engine, tables: &[(String, String)]) -> ExecOutput {
    let cols = ["Table", "Op", "Msg_type", "Msg_text"]
        .iter()
        .map(|n| ColumnInfo::text(n))
        .collect();
    let found: Vec<bool> = tables
        .iter()
        .map(|(db, t)| engine.table(db, t).is_ok())
        .collect();
    if found.contains(&true) {
        engine.compact();
    }
    let mut rows = Vec::new();
    for ((db, t), ok) in tables.iter().zip(found) {
        let name = format!("{db}.{t}");
        if ok {
            rows.push(vec![
                s(&name),
                s("optimize"),
                s("note"),
                s("Table does not support optimize, doing recreate + analyze instead"),
            ]);
            rows.push(vec![s(&name), s("optimize"), s("status"), s("OK")]);
        } else {
            rows.push(vec![
                s(&name),
                s("optimize"),
                s("Error"),
                s(&format!("Table '{db}.{t}' doesn't exist")),
            ]);
            rows.push(vec![
                s(&name),
                s("optimize"),
                s("status"),
                s("Operation failed"),
            ]);
        }
    }
    rows_out(cols, rows)
}

/// CHECK TABLE result rows, as MariaDB prints them: `status | OK` for a consistent table; for a
/// damaged one an `error` row per problem the store's checker names (at most
/// `shoal_store::check::MAX_REPORTED_PROBLEMS`, then a count of the rest) and a final
/// `error | Corrupt`; for a missing table `Error | Table 'db.t' doesn't exist` (also when the
/// database is missing) and `status | Operation failed`.
pub fn check(engine: &Engine, tables: &[(String, String)]) -> ExecOutput {
    let cols = ["Table", "Op", "Msg_type", "Msg_text"]
        .iter()
        .map(|n| ColumnInfo::text(n))
        .collect();
    let mut rows = Vec::new();
    for (db, t) in tables {
        let name = format!("{db}.{t}");
        let mut row = |kind: &str, text: &str| {
            rows.push(vec![s(&name), s("check"), s(kind), s(text)]);
        };
        match engine.check_table(db, t) {
            Ok(r) if r.is_ok() => row("status", "OK"),
            Ok(r) => {
                for p in &r.problems {
                    row("error", &p.to_string());
                }
                let hidden = r.problem_count - r.problems.len() as u64;
                if hidden > 0 {
                    row("error", &format!("{hidden} more problems not shown"));
                }
                row("error", "Corrupt");
            }
            Err(StoreError::NoSuchTable { .. } | StoreError::NoSuchDatabase(_)) => {
                row("Error", &format!("Table '{name}' doesn't exist"));
                row("status", "Operation failed");
            }
            Err(e) => {
                row("Error", &e.to_string());
                row("status", "Operation failed");
            }
        }
    }
    rows_out(cols, rows)
}

/// Databases including the system schemas, sorted.
pub fn all_databases(engine: &Engine) -> Vec<String> {
    let mut v: Vec<String> = engine.databases();
    for sdb in SYSTEM_DATABASES {
        if !v.iter().any(|d| d == sdb) {
            v.push(sdb.to_string());
        }
    }
    v.sort();
    v
}

/// Who is looking at information_schema: which objects the account has some privilege on, and
/// which connections it may see. Installed by the session layer around a statement
/// ([`with_visibility`]) so that SCHEMATA, TABLES, COLUMNS, STATISTICS, ... list only the
/// objects the account has some privilege on and PROCESSLIST only the threads it may see, as in
/// MySQL; the executor does not know why.
pub struct Viewer {
    /// `(db, None)` asks about a database, `(db, Some(table))` about a table; `None`: every
    /// object is visible.
    pub objects: Option<ObjectFilter>,
    /// The PROCESSLIST rows this viewer sees (`None`: no connections to show).
    pub processes: Option<ProcessFn>,
}

/// See [`Viewer::objects`].
pub type ObjectFilter = Arc<dyn Fn(&str, Option<&str>) -> bool + Send + Sync>;

/// See [`Viewer::processes`].
pub type ProcessFn = Arc<dyn Fn() -> Vec<crate::infoschema::ProcessRow> + Send + Sync>;

/// A session's [`Viewer`], shared with its table session.
pub type Visibility = Arc<Viewer>;

thread_local! {
    /// The visibility of the statement running on this thread (a statement runs on one
    /// thread from start to end, whichever pool worker that is).
    static VISIBLE: std::cell::RefCell<Option<Visibility>> = const { std::cell::RefCell::new(None) };
}

/// Runs `body` with `v` as the information_schema visibility of this thread, restoring the
/// previous one afterwards (also when `body` panics).
pub fn with_visibility<R>(v: Option<Visibility>, body: impl FnOnce() -> R) -> R {
    struct Restore(Option<Visibility>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            VISIBLE.with(|c| *c.borrow_mut() = prev);
        }
    }
    let prev = VISIBLE.with(|c| std::mem::replace(&mut *c.borrow_mut(), v));
    let _restore = Restore(prev);
    body()
}

fn visible(db: &str, table: Option<&str>) -> bool {
    VISIBLE.with(|c| {
        c.borrow()
            .as_ref()
            .and_then(|v| v.objects.as_ref())
            .is_none_or(|f| f(db, table))
    })
}

fn visible_processes() -> Vec<crate::infoschema::ProcessRow> {
    let f = VISIBLE.with(|c| c.borrow().as_ref().and_then(|v| v.processes.clone()));
    f.map(|f| f()).unwrap_or_default()
}

/// Every stored table of a database in `dbs` the viewer sees, by database and name.
fn visible_tables(engine: &Engine, dbs: &[String]) -> Vec<Arc<TableDef>> {
    let mut out = Vec::new();
    for d in dbs {
        let Ok(tables) = engine.tables(d) else {
            continue;
        };
        for tn in tables {
            if visible(d, Some(&tn)) {
                if let Ok(t) = engine.table(d, &tn) {
                    out.push(t);
                }
            }
        }
    }
    out
}

/// A materialised virtual table: column names, column descriptions, rows.
pub type VirtualTable = (Vec<String>, Vec<ColumnInfo>, Vec<Vec<Value>>);

/// The information_schema tables shoal serves beyond SCHEMATA, TABLES and COLUMNS, with MySQL
/// 8.0's columns and no rows (PARTITIONS: one row per table): (name, columns, integer columns).
pub const EMPTY_TABLES: &[(&str, &[&str], &[&str])] = &[
    (
        "FILES",
        &[
            "FILE_ID",
            "FILE_NAME",
            "FILE_TYPE",
            "TABLESPACE_NAME",
            "TABLE_CATALOG",
            "TABLE_SCHEMA",
            "TABLE_NAME",
            "LOGFILE_GROUP_NAME",
            "LOGFILE_GROUP_NUMBER",
            "ENGINE",
            "FULLTEXT_KEYS",
            "DELETED_ROWS",
            "UPDATE_COUNT",
            "FREE_EXTENTS",
            "TOTAL_EXTENTS",
            "EXTENT_SIZE",
            "INITIAL_SIZE",
            "MAXIMUM_SIZE",
            "AUTOEXTEND_SIZE",
            "CREATION_TIME",
            "LAST_UPDATE_TIME",
            "LAST_ACCESS_TIME",
            "RECOVER_TIME",
            "TRANSACTION_COUNTER",
            "VERSION",
            "ROW_FORMAT",
            "TABLE_ROWS",
            "AVG_ROW_LENGTH",
            "DATA_LENGTH",
            "MAX_DATA_LENGTH",
            "INDEX_LENGTH",
            "DATA_FREE",
            "CREATE_TIME",
            "UPDATE_TIME",
            "CHECK_TIME",
            "CHECKSUM",
            "STATUS",
            "EXTRA",
        ],
        &[
            "FILE_ID",
            "LOGFILE_GROUP_NUMBER",
            "DELETED_ROWS",
            "UPDATE_COUNT",
            "FREE_EXTENTS",
            "TOTAL_EXTENTS",
            "EXTENT_SIZE",
            "INITIAL_SIZE",
            "MAXIMUM_SIZE",
            "AUTOEXTEND_SIZE",
            "TRANSACTION_COUNTER",
            "VERSION",
            "TABLE_ROWS",
            "AVG_ROW_LENGTH",
            "DATA_LENGTH",
            "MAX_DATA_LENGTH",
            "INDEX_LENGTH",
            "DATA_FREE",
            "CHECKSUM",
        ],
    ),
    (
        "PARTITIONS",
        &[
            "TABLE_CATALOG",
            "TABLE_SCHEMA",
            "TABLE_NAME",
            "PARTITION_NAME",
            "SUBPARTITION_NAME",
            "PARTITION_ORDINAL_POSITION",
            "SUBPARTITION_ORDINAL_POSITION",
            "PARTITION_METHOD",
            "SUBPARTITION_METHOD",
            "PARTITION_EXPRESSION",
            "SUBPARTITION_EXPRESSION",
            "PARTITION_DESCRIPTION",
            "TABLE_ROWS",
            "AVG_ROW_LENGTH",
            "DATA_LENGTH",
            "MAX_DATA_LENGTH",
            "INDEX_LENGTH",
            "DATA_FREE",
            "CREATE_TIME",
            "UPDATE_TIME",
            "CHECK_TIME",
            "CHECKSUM",
            "PARTITION_COMMENT",
            "NODEGROUP",
            "TABLESPACE_NAME",
        ],
        &[
            "PARTITION_ORDINAL_POSITION",
            "SUBPARTITION_ORDINAL_POSITION",
            "TABLE_ROWS",
            "AVG_ROW_LENGTH",
            "DATA_LENGTH",
            "MAX_DATA_LENGTH",
            "INDEX_LENGTH",
            "DATA_FREE",
            "CHECKSUM",
        ],
    ),
    (
        "TRIGGERS",
        &[
            "TRIGGER_CATALOG",
            "TRIGGER_SCHEMA",
            "TRIGGER_NAME",
            "EVENT_MANIPULATION",
            "EVENT_OBJECT_CATALOG",
            "EVENT_OBJECT_SCHEMA",
            "EVENT_OBJECT_TABLE",
            "ACTION_ORDER",
            "ACTION_CONDITION",
            "ACTION_STATEMENT",
            "ACTION_ORIENTATION",
            "ACTION_TIMING",
            "ACTION_REFERENCE_OLD_TABLE",
            "ACTION_REFERENCE_NEW_TABLE",
            "ACTION_REFERENCE_OLD_ROW",
            "ACTION_REFERENCE_NEW_ROW",
            "CREATED",
            "SQL_MODE",
            "DEFINER",
            "CHARACTER_SET_CLIENT",
            "COLLATION_CONNECTION",
            "DATABASE_COLLATION",
        ],
        &["ACTION_ORDER"],
    ),
    (
        "ROUTINES",
        &[
            "SPECIFIC_NAME",
            "ROUTINE_CATALOG",
            "ROUTINE_SCHEMA",
            "ROUTINE_NAME",
            "ROUTINE_TYPE",
            "DATA_TYPE",
            "CHARACTER_MAXIMUM_LENGTH",
            "CHARACTER_OCTET_LENGTH",
            "NUMERIC_PRECISION",
            "NUMERIC_SCALE",
            "DATETIME_PRECISION",
            "CHARACTER_SET_NAME",
            "COLLATION_NAME",
            "DTD_IDENTIFIER",
            "ROUTINE_BODY",
            "ROUTINE_DEFINITION",
            "EXTERNAL_NAME",
            "EXTERNAL_LANGUAGE",
            "PARAMETER_STYLE",
            "IS_DETERMINISTIC",
            "SQL_DATA_ACCESS",
            "SQL_PATH",
            "SECURITY_TYPE",
            "CREATED",
            "LAST_ALTERED",
            "SQL_MODE",
            "ROUTINE_COMMENT",
            "DEFINER",
            "CHARACTER_SET_CLIENT",
            "COLLATION_CONNECTION",
            "DATABASE_COLLATION",
        ],
        &[
            "CHARACTER_MAXIMUM_LENGTH",
            "CHARACTER_OCTET_LENGTH",
            "NUMERIC_PRECISION",
            "NUMERIC_SCALE",
            "DATETIME_PRECISION",
        ],
    ),
    (
        "EVENTS",
        &[
            "EVENT_CATALOG",
            "EVENT_SCHEMA",
            "EVENT_NAME",
            "DEFINER",
            "TIME_ZONE",
            "EVENT_BODY",
            "EVENT_DEFINITION",
            "EVENT_TYPE",
            "EXECUTE_AT",
            "INTERVAL_VALUE",
            "INTERVAL_FIELD",
            "SQL_MODE",
            "STARTS",
            "ENDS",
            "STATUS",
            "ON_COMPLETION",
            "CREATED",
            "LAST_ALTERED",
            "LAST_EXECUTED",
            "EVENT_COMMENT",
            "ORIGINATOR",
            "CHARACTER_SET_CLIENT",
            "COLLATION_CONNECTION",
            "DATABASE_COLLATION",
        ],
        &["ORIGINATOR"],
    ),
    (
        "VIEWS",
        &[
            "TABLE_CATALOG",
            "TABLE_SCHEMA",
            "TABLE_NAME",
            "VIEW_DEFINITION",
            "CHECK_OPTION",
            "IS_UPDATABLE",
            "DEFINER",
            "SECURITY_TYPE",
            "CHARACTER_SET_CLIENT",
            "COLLATION_CONNECTION",
        ],
        &[],
    ),
];

/// Materialises an information_schema table: (column names, column infos, rows).
pub fn info_schema(engine: &Engine, table: &str) -> Result<VirtualTable, SqlError> {
    let up = table.to_ascii_uppercase();
    let (cols, ints): (&[&str], &[&str]) = match up.as_str() {
        "SCHEMATA" => (
            &[
                "CATALOG_NAME",
                "SCHEMA_NAME",
                "DEFAULT_CHARACTER_SET_NAME",
                "DEFAULT_COLLATION_NAME",
                "SQL_PATH",
            ],
            &[],
        ),
        "COLUMNS" => (
            &[
                "TABLE_CATALOG",
                "TABLE_SCHEMA",
                "TABLE_NAME",
                "COLUMN_NAME",
                "ORDINAL_POSITION",
                "COLUMN_DEFAULT",
                "IS_NULLABLE",
                "DATA_TYPE",
                "CHARACTER_MAXIMUM_LENGTH",
                "CHARACTER_OCTET_LENGTH",
                "NUMERIC_PRECISION",
                "NUMERIC_SCALE",
                "DATETIME_PRECISION",
                "COLUMN_TYPE",
                "COLUMN_KEY",
                "EXTRA",
                "GENERATION_EXPRESSION",
            ],
            &[
                "ORDINAL_POSITION",
                "CHARACTER_MAXIMUM_LENGTH",
                "CHARACTER_OCTET_LENGTH",
                "NUMERIC_PRECISION",
                "NUMERIC_SCALE",
                "DATETIME_PRECISION",
            ],
        ),
        other if crate::infoschema::columns(other).is_some() => {
            let cols = crate::infoschema::columns(other).expect("checked");
            let names = cols.iter().map(|(n, _)| n.to_string()).collect();
            let infos = cols
                .iter()
                .map(|(n, ty)| {
                    let mut ci = ColumnInfo::expr(n, *ty);
                    ci.schema = "information_schema".into();
                    ci.table = up.clone();
                    ci.org_table = up.clone();
                    ci.org_name = n.to_string();
                    ci
                })
                .collect();
            let tables = if matches!(other, "ENGINES" | "PROCESSLIST") {
                Vec::new()
            } else {
                visible_tables(engine, &all_databases(engine))
            };
            let mut rows = crate::infoschema::rows(engine, other, &tables, visible_processes);
            if other == "TABLES" {
                rows.extend(
                    crate::mysql_schema::LOG_TABLES
                        .iter()
                        .filter(|t| visible("mysql", Some(t.name)))
                        .map(log_table_tables_row),
                );
            }
            return Ok((names, infos, rows));
        }
        other => match EMPTY_TABLES.iter().find(|(n, _, _)| *n == other) {
            Some((_, cols, ints)) => (*cols, *ints),
            None => {
                return Err(SqlError::NoSuchTable(
                    "information_schema".into(),
                    table.to_string(),
                ))
            }
        },
    };
    let names: Vec<String> = cols.iter().map(|c| c.to_string()).collect();
    let infos = cols
        .iter()
        .map(|c| {
            let mut ci = if ints.contains(c) {
                ColumnInfo::int(c)
            } else {
                ColumnInfo::text(c)
            };
            ci.schema = "information_schema".into();
            ci.table = up.clone();
            ci.org_table = up.clone();
            ci.org_name = c.to_string();
            ci
        })
        .collect();
    let mut rows = Vec::new();
    let dbs = all_databases(engine);
    match up.as_str() {
        "SCHEMATA" => {
            for d in dbs.into_iter().filter(|d| visible(d, None)) {
                rows.push(vec![
                    s("def"),
                    s(&d),
                    s("utf8mb4"),
                    s("utf8mb4_general_ci"),
                    Value::Null,
                ]);
            }
        }
        // Objects shoal does not have (triggers, routines, events, views, tablespaces):
        // the tables exist with MySQL's columns and no rows, so tools that look find none.
        "FILES" | "TRIGGERS" | "ROUTINES" | "EVENTS" | "VIEWS" => {}
        _ => {
            for d in dbs {
                let Ok(tables) = engine.tables(&d) else {
                    continue;
                };
                for tn in tables {
                    if !visible(&d, Some(&tn)) {
                        continue;
                    }
                    let Ok(t) = engine.table(&d, &tn) else {
                        continue;
                    };
                    if up == "PARTITIONS" {
                        // One row per (unpartitioned) table, as MySQL shows them.
                        let mut row = vec![Value::Null; names.len()];
                        row[0] = s("def");
                        row[1] = s(&d);
                        row[2] = s(&tn);
                        rows.push(row);
                    } else {
                        for (i, c) in t.columns.iter().enumerate() {
                            let full = c.type_name();
                            let data_type = full.split(['(', ' ']).next().unwrap_or("").to_string();
                            let (clen, np, ns) = match c.ty {
                                ColumnType::Char(n) | ColumnType::Varchar(n) => {
                                    (Value::Int(i64::from(n)), Value::Null, Value::Null)
                                }
                                ColumnType::Text | ColumnType::Blob => (
                                    Value::Int(i64::from(c.max_bytes.unwrap_or(65_535))),
                                    Value::Null,
                                    Value::Null,
                                ),
                                ColumnType::Binary(n) | ColumnType::Varbinary(n) => {
                                    (Value::Int(i64::from(n)), Value::Null, Value::Null)
                                }
                                ColumnType::Int { bytes, .. } => {
                                    let p = match bytes {
                                        1 => 3,
                                        2 => 5,
                                        3 => 7,
                                        4 => 10,
                                        _ => 19,
                                    };
                                    (Value::Null, Value::Int(p), Value::Int(0))
                                }
                                ColumnType::Decimal { precision, scale } => (
                                    Value::Null,
                                    Value::Int(i64::from(precision)),
                                    Value::Int(i64::from(scale)),
                                ),
                                ColumnType::Float(None) => {
                                    (Value::Null, Value::Int(12), Value::Null)
                                }
                                ColumnType::Float(Some((m, d))) => (
                                    Value::Null,
                                    Value::Int(i64::from(m)),
                                    Value::Int(i64::from(d)),
                                ),
                                ColumnType::Double(None) => {
                                    (Value::Null, Value::Int(22), Value::Null)
                                }
                                ColumnType::Double(Some((m, d))) => (
                                    Value::Null,
                                    Value::Int(i64::from(m)),
                                    Value::Int(i64::from(d)),
                                ),
                                _ => (Value::Null, Value::Null, Value::Null),
                            };
                            rows.push(vec![
                                s("def"),
                                s(&d),
                                s(&tn),
                                s(&c.name),
                                Value::Int(i as i64 + 1),
                                default_text(c).map(Value::Str).unwrap_or(Value::Null),
                                s(if c.nullable { "YES" } else { "NO" }),
                                s(&data_type),
                                clen.clone(),
                                octet_length(c.ty, &clen),
                                np,
                                ns,
                                match c.ty {
                                    ColumnType::DateTime(f)
                                    | ColumnType::Timestamp(f)
                                    | ColumnType::Time(f) => Value::Int(i64::from(f)),
                                    _ => Value::Null,
                                },
                                s(&full),
                                s(key_kind(&t, i)),
                                s(if c.auto_increment {
                                    "auto_increment"
                                } else {
                                    ""
                                }),
                                s(""),
                            ]);
                        }
                    }
                }
            }
            if up == "COLUMNS" {
                for t in crate::mysql_schema::LOG_TABLES {
                    if visible("mysql", Some(t.name)) {
                        rows.extend(log_table_column_rows(t));
                    }
                }
            }
        }
    }
    Ok((names, infos, rows))
}
