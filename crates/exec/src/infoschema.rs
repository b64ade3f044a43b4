//! The catalog tables of `information_schema` DBAs and tools read: STATISTICS, KEY_COLUMN_USAGE,
//! TABLE_CONSTRAINTS, REFERENTIAL_CONSTRAINTS, ENGINES and PROCESSLIST.
//!
//! # How it works
//!
//! Each table is described once ([`columns`]: MariaDB 10.11's column names, in its order, each
//! with the type its values travel as) and materialised from the store's catalog at every query
//! ([`rows`]); the query engine then filters, joins, groups and orders the rows like any other
//! row source (`show::info_schema` is the one entry both binding and execution use). The
//! catalog is DDL-rate data held in memory, so materialising is a walk over a few `Arc`s.
//!
//! Rows follow MariaDB's: one STATISTICS row per (index, column) with PRIMARY first, then the
//! secondary indexes in creation order (an index a FOREIGN KEY needed is one of them, as
//! InnoDB makes it); TABLE_CONSTRAINTS has PRIMARY KEY, UNIQUE and FOREIGN KEY rows;
//! KEY_COLUMN_USAGE one row per column of each of those; REFERENTIAL_CONSTRAINTS one row per
//! foreign key, naming the parent's key whose leading columns the key references
//! (`UNIQUE_CONSTRAINT_NAME`). SHOW INDEX is built from the same rows as STATISTICS
//! ([`index_rows`]), so the two cannot disagree.
//!
//! Privileges filter rows the way they filter TABLES and COLUMNS: the session installs a
//! [`crate::show::Viewer`] around each statement, and a table's rows appear only when the
//! viewer sees that table. PROCESSLIST's rows come from the viewer too (the session layer owns
//! the connections; this crate knows nothing of them): an account without PROCESS sees only its
//! own threads, as in MySQL. Without a viewer (tests driving the engine directly) PROCESSLIST
//! is empty.
//!
//! What shoal does not have is shown as MariaDB shows its absence: CARDINALITY is NULL (no
//! index statistics are kept), SUB_PART is NULL (no prefix indexes), every index is a BTREE.

use shoal_sql::decimal::Decimal;
use shoal_sql::value::{SqlType, Value};
use shoal_store::{Engine, FkAction, TableDef};

/// One connection as PROCESSLIST shows it (the session layer fills these in).
#[derive(Debug, Clone)]
pub struct ProcessRow {
    pub id: u64,
    pub user: String,
    pub host: String,
    pub db: Option<String>,
    /// `Sleep`, `Query`, `Killed`, ...
    pub command: String,
    /// Time in the current command or idle period, in milliseconds.
    pub time_ms: u64,
    pub state: String,
    /// The statement text, whole.
    pub info: Option<String>,
}

use SqlType::{DateTime, Decimal as Dec, Int, Str, UInt};

/// The tables of this module with their columns, as MariaDB 10.11 declares them.
const TABLES: &[(&str, &[(&str, SqlType)])] = &[
    (
        "TABLES",
        &[
            ("TABLE_CATALOG", Str),
            ("TABLE_SCHEMA", Str),
            ("TABLE_NAME", Str),
            ("TABLE_TYPE", Str),
            ("ENGINE", Str),
            ("VERSION", UInt),
            ("ROW_FORMAT", Str),
            ("TABLE_ROWS", UInt),
            ("AVG_ROW_LENGTH", UInt),
            ("DATA_LENGTH", UInt),
            ("MAX_DATA_LENGTH", UInt),
            ("INDEX_LENGTH", UInt),
            ("DATA_FREE", UInt),
            ("AUTO_INCREMENT", UInt),
            ("CREATE_TIME", DateTime(0)),
            ("UPDATE_TIME", DateTime(0)),
            ("CHECK_TIME", DateTime(0)),
            ("TABLE_COLLATION", Str),
            ("CHECKSUM", UInt),
            ("CREATE_OPTIONS", Str),
            ("TABLE_COMMENT", Str),
            ("MAX_INDEX_LENGTH", UInt),
            ("TEMPORARY", Str),
        ],
    ),
    (
        "STATISTICS",
        &[
            ("TABLE_CATALOG", Str),
            ("TABLE_SCHEMA", Str),
            ("TABLE_NAME", Str),
            ("NON_UNIQUE", Int),
            ("INDEX_SCHEMA", Str),
            ("INDEX_NAME", Str),
            ("SEQ_IN_INDEX", UInt),
            ("COLUMN_NAME", Str),
            ("COLLATION", Str),
            ("CARDINALITY", Int),
            ("SUB_PART", Int),
            ("PACKED", Str),
            ("NULLABLE", Str),
            ("INDEX_TYPE", Str),
            ("COMMENT", Str),
            ("INDEX_COMMENT", Str),
            ("IGNORED", Str),
        ],
    ),
    (
        "KEY_COLUMN_USAGE",
        &[
            ("CONSTRAINT_CATALOG", Str),
            ("CONSTRAINT_SCHEMA", Str),
            ("CONSTRAINT_NAME", Str),
            ("TABLE_CATALOG", Str),
            ("TABLE_SCHEMA", Str),
            ("TABLE_NAME", Str),
            ("COLUMN_NAME", Str),
            ("ORDINAL_POSITION", Int),
            ("POSITION_IN_UNIQUE_CONSTRAINT", Int),
            ("REFERENCED_TABLE_SCHEMA", Str),
            ("REFERENCED_TABLE_NAME", Str),
            ("REFERENCED_COLUMN_NAME", Str),
        ],
    ),
    (
        "TABLE_CONSTRAINTS",
        &[
            ("CONSTRAINT_CATALOG", Str),
            ("CONSTRAINT_SCHEMA", Str),
            ("CONSTRAINT_NAME", Str),
            ("TABLE_SCHEMA", Str),
            ("TABLE_NAME", Str),
            ("CONSTRAINT_TYPE", Str),
        ],
    ),
    (
        "REFERENTIAL_CONSTRAINTS",
        &[
            ("CONSTRAINT_CATALOG", Str),
            ("CONSTRAINT_SCHEMA", Str),
            ("CONSTRAINT_NAME", Str),
            ("UNIQUE_CONSTRAINT_CATALOG", Str),
            ("UNIQUE_CONSTRAINT_SCHEMA", Str),
            ("UNIQUE_CONSTRAINT_NAME", Str),
            ("MATCH_OPTION", Str),
            ("UPDATE_RULE", Str),
            ("DELETE_RULE", Str),
            ("TABLE_NAME", Str),
            ("REFERENCED_TABLE_NAME", Str),
        ],
    ),
    (
        "ENGINES",
        &[
            ("ENGINE", Str),
            ("SUPPORT", Str),
            ("COMMENT", Str),
            ("TRANSACTIONS", Str),
            ("XA", Str),
            ("SAVEPOINTS", Str),
        ],
    ),
    (
        "PROCESSLIST",
        &[
            ("ID", Int),
            ("USER", Str),
            ("HOST", Str),
            ("DB", Str),
            ("COMMAND", Str),
            ("TIME", Int),
            ("STATE", Str),
            ("INFO", Str),
            ("TIME_MS", Dec(3)),
            ("STAGE", Int),
            ("MAX_STAGE", Int),
            ("PROGRESS", Dec(3)),
            ("MEMORY_USED", Int),
            ("MAX_MEMORY_USED", Int),
            ("EXAMINED_ROWS", Int),
            ("QUERY_ID", Int),
            ("INFO_BINARY", Str),
            ("TID", Int),
        ],
    ),
];

/// The columns of `table` (upper case), if it is one of this module's.
pub fn columns(table: &str) -> Option<&'static [(&'static str, SqlType)]> {
    TABLES.iter().find(|(n, _)| *n == table).map(|(_, c)| *c)
}

/// The names of this module's tables.
pub fn names() -> impl Iterator<Item = &'static &'static str> {
    TABLES.iter().map(|(n, _)| n)
}

fn s(v: &str) -> Value {
    Value::Str(v.to_string())
}

fn opt(v: Option<&str>) -> Value {
    v.map(s).unwrap_or(Value::Null)
}

/// The rows of `table` (one of [`columns`]'s): `tables` are the stored tables the viewer sees,
/// `processes` the connections it sees.
pub fn rows(
    engine: &Engine,
    table: &str,
    tables: &[std::sync::Arc<TableDef>],
    processes: impl FnOnce() -> Vec<ProcessRow>,
) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    match table {
        "TABLES" => {
            for t in tables {
                let ai = if t.auto_increment_column().is_some() {
                    engine
                        .peek_auto_increment(t)
                        .map(Value::UInt)
                        .unwrap_or(Value::Null)
                } else {
                    Value::Null
                };
                let (data, index) = engine.approximate_sizes(t);
                out.push(vec![
                    s("def"),
                    s(&t.db),
                    s(&t.name),
                    s("BASE TABLE"),
                    s("InnoDB"),
                    Value::UInt(10),
                    s("Dynamic"),
                    // The planner's estimate (a sample of the keys, scaled by sizes on disk).
                    Value::UInt(engine.estimate_rows(t, None, &shoal_store::KeyRange::all())),
                    Value::Null,
                    Value::UInt(data),
                    Value::UInt(0),
                    Value::UInt(index),
                    Value::UInt(0),
                    ai,
                    // Creation and update times are not recorded.
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    s("utf8mb4_general_ci"),
                    Value::Null,
                    s(""),
                    s(""),
                    Value::UInt(0),
                    s("N"),
                ]);
            }
        }
        "STATISTICS" => {
            for t in tables {
                for r in index_rows(t) {
                    out.push(vec![
                        s("def"),
                        s(&t.db),
                        s(&t.name),
                        Value::Int(i64::from(!r.unique)),
                        s(&t.db),
                        s(&r.key),
                        Value::UInt(r.seq as u64),
                    ]);
                    out.last_mut().expect("row").extend(index_column_values(&r));
                }
            }
        }
        "TABLE_CONSTRAINTS" => {
            for t in tables {
                for (name, kind, _) in constraints(t) {
                    out.push(vec![
                        s("def"),
                        s(&t.db),
                        s(&name),
                        s(&t.db),
                        s(&t.name),
                        s(kind),
                    ]);
                }
            }
        }
        "KEY_COLUMN_USAGE" => {
            for t in tables {
                for (name, _, cols) in constraints(t) {
                    let fk = t.foreign_keys.iter().find(|f| f.name == name);
                    for (i, &c) in cols.iter().enumerate() {
                        let (pos, rdb, rt, rc) = match fk {
                            Some(f) => (
                                Value::Int(i as i64 + 1),
                                s(&f.ref_db),
                                s(&f.ref_table),
                                opt(f.ref_columns.get(i).map(String::as_str)),
                            ),
                            None => (Value::Null, Value::Null, Value::Null, Value::Null),
                        };
                        out.push(vec![
                            s("def"),
                            s(&t.db),
                            s(&name),
                            s("def"),
                            s(&t.db),
                            s(&t.name),
                            s(&t.columns[c].name),
                            Value::Int(i as i64 + 1),
                            pos,
                            rdb,
                            rt,
                            rc,
                        ]);
                    }
                }
            }
        }
        "REFERENTIAL_CONSTRAINTS" => {
            for t in tables {
                for f in &t.foreign_keys {
                    // The parent's key the foreign key leans on, as InnoDB names it.
                    let key = engine.table(&f.ref_db, &f.ref_table).ok().and_then(|p| {
                        let cols: Option<Vec<usize>> =
                            f.ref_columns.iter().map(|c| p.column_index(c)).collect();
                        match p.key_with_prefix(&cols?)? {
                            None => Some("PRIMARY".to_string()),
                            Some(ix) => Some(ix.name.clone()),
                        }
                    });
                    out.push(vec![
                        s("def"),
                        s(&t.db),
                        s(&f.name),
                        s("def"),
                        s(&f.ref_db),
                        opt(key.as_deref()),
                        s("NONE"),
                        s(rule(f.on_update)),
                        s(rule(f.on_delete)),
                        s(&t.name),
                        s(&f.ref_table),
                    ]);
                }
            }
        }
        "ENGINES" => {
            // shoal stores every table one way; it answers to InnoDB's name (what CREATE TABLE
            // ... ENGINE=InnoDB and tools expect), backed by RocksDB.
            out.push(vec![
                s("InnoDB"),
                s("DEFAULT"),
                s("shoal transactional storage on RocksDB (accepted as ENGINE=InnoDB)"),
                s("YES"),
                s("NO"),
                s("YES"),
            ]);
        }
        "PROCESSLIST" => {
            for p in processes() {
                let ms = p.time_ms.min(i64::MAX as u64 / 1000);
                out.push(vec![
                    Value::Int(p.id as i64),
                    s(&p.user),
                    s(&p.host),
                    opt(p.db.as_deref()),
                    s(&p.command),
                    Value::Int((ms / 1000) as i64),
                    s(&p.state),
                    opt(p.info.as_deref()),
                    Value::Decimal(Decimal::new(i128::from(ms) * 1000, 3)),
                    Value::Int(0),
                    Value::Int(0),
                    Value::Decimal(Decimal::new(0, 3)),
                    Value::Int(0),
                    Value::Int(0),
                    Value::Int(0),
                    Value::Int(0),
                    opt(p.info.as_deref()),
                    Value::Int(p.id as i64),
                ]);
            }
        }
        _ => {}
    }
    out
}

fn rule(a: FkAction) -> &'static str {
    match a {
        FkAction::Restrict => "RESTRICT",
        FkAction::Cascade => "CASCADE",
        FkAction::SetNull => "SET NULL",
        FkAction::NoAction => "NO ACTION",
    }
}

/// The constraints of `t`: (name, TABLE_CONSTRAINTS type, column positions), PRIMARY KEY first,
/// then UNIQUE indexes, then foreign keys.
fn constraints(t: &TableDef) -> Vec<(String, &'static str, Vec<usize>)> {
    let mut v = Vec::new();
    if let Some(pk) = &t.primary_key {
        v.push(("PRIMARY".to_string(), "PRIMARY KEY", pk.clone()));
    }
    for ix in t.indexes.iter().filter(|ix| ix.unique) {
        v.push((ix.name.clone(), "UNIQUE", ix.columns.clone()));
    }
    for f in &t.foreign_keys {
        v.push((f.name.clone(), "FOREIGN KEY", f.columns.clone()));
    }
    v
}

/// One column of one index, as STATISTICS and SHOW INDEX show it.
#[derive(Debug, Clone)]
pub struct IndexColumn {
    /// Index name (`PRIMARY` for the primary key).
    pub key: String,
    pub unique: bool,
    /// 1-based position in the index.
    pub seq: usize,
    pub column: String,
    pub nullable: bool,
}

/// The columns STATISTICS and SHOW INDEX share from `COLUMN_NAME` / `Column_name` on:
/// collation, cardinality, sub-part, packed, nullable, index type, comments, ignored.
pub fn index_column_values(r: &IndexColumn) -> Vec<Value> {
    vec![
        s(&r.column),
        s("A"),
        Value::Null,
        Value::Null,
        Value::Null,
        s(if r.nullable { "YES" } else { "" }),
        s("BTREE"),
        s(""),
        s(""),
        s("NO"),
    ]
}

/// Every (index, column) of `t`: the primary key first, then the secondary indexes in
/// creation order.
pub fn index_rows(t: &TableDef) -> Vec<IndexColumn> {
    let mut v = Vec::new();
    let mut add = |key: &str, unique: bool, cols: &[usize]| {
        for (i, &c) in cols.iter().enumerate() {
            v.push(IndexColumn {
                key: key.to_string(),
                unique,
                seq: i + 1,
                column: t.columns[c].name.clone(),
                nullable: t.columns[c].nullable,
            });
        }
    };
    if let Some(pk) = &t.primary_key {
        add("PRIMARY", true, pk);
    }
    for ix in &t.indexes {
        add(&ix.name, ix.unique, &ix.columns);
    }
    v
}
