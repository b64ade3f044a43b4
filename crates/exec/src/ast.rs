//! The table-statement AST: what [`crate::translate`] produces from sqlparser's AST and what the
//! planner and executor consume. Expressions are `shoal_sql::ast::Expr`, so evaluation is the
//! SQL crate's `eval` with MySQL semantics. Two reserved column-name prefixes carry values that
//! are not table columns: [`AGG_PREFIX`] (the n-th aggregate of a grouped SELECT) and
//! [`VALUES_PREFIX`] (`VALUES(col)` inside `ON DUPLICATE KEY UPDATE`). Both start with a NUL
//! byte, which no identifier can contain.

use shoal_sql::ast::Expr;
use shoal_sql::SqlError;
use shoal_store::{IndexSpec, TableSpec};

/// Column-name prefix for aggregate results (`"\0agg3"` = aggregate #3).
pub const AGG_PREFIX: &str = "\0agg";
/// Column-name prefix for `VALUES(col)` in `ON DUPLICATE KEY UPDATE`.
pub const VALUES_PREFIX: &str = "\0values.";

/// `[db.]table`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRef {
    /// Database, if qualified.
    pub db: Option<String>,
    /// Table name.
    pub name: String,
    /// `[AS] alias` of a single-table SELECT, UPDATE or DELETE (the name LOCK TABLES checks).
    pub alias: Option<String>,
}

pub use shoal_sql::ast::AggFunc;

/// One aggregate call of a SELECT.
#[derive(Debug, Clone, PartialEq)]
pub struct AggCall {
    /// Which function.
    pub func: AggFunc,
    /// Argument (`None` = `COUNT(*)`).
    pub arg: Option<Expr>,
    /// `DISTINCT` inside the call.
    pub distinct: bool,
}

/// One SELECT list item.
#[derive(Debug, Clone, PartialEq)]
pub enum ProjItem {
    /// `*` (all table columns).
    Star,
    /// An expression and its column header.
    Expr {
        /// The expression (aggregates already replaced by [`AGG_PREFIX`] columns).
        expr: Expr,
        /// Header: alias or the text as written.
        name: String,
        /// Whether an alias was given.
        aliased: bool,
    },
}

/// INSERT / REPLACE.
#[derive(Debug, Clone, PartialEq)]
pub struct InsertStmt {
    /// Target table.
    pub table: TableRef,
    /// Column list (empty = all columns in order).
    pub columns: Vec<String>,
    /// Rows; `None` = `DEFAULT`.
    pub rows: Vec<Vec<Option<Expr>>>,
    /// `INSERT ... SELECT`: the query whose rows are inserted (then `rows` is empty).
    pub select: Option<Box<shoal_sql::ast::Query>>,
    /// INSERT IGNORE.
    pub ignore: bool,
    /// REPLACE.
    pub replace: bool,
    /// ON DUPLICATE KEY UPDATE assignments.
    pub on_dup: Vec<(String, Expr)>,
}

/// `UPDATE t1 JOIN t2 ... SET ...` or `DELETE t1 FROM t1 JOIN t2 ...` /
/// `DELETE FROM t1 USING t1 JOIN t2 ...`: the joined rows come from the query engine, then each
/// target row is changed once.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiStmt {
    /// DELETE (else UPDATE).
    pub delete: bool,
    /// DELETE's target tables, as written (aliases or names).
    pub targets: Vec<String>,
    /// The table references.
    pub from: Vec<shoal_sql::ast::TableExpr>,
    /// UPDATE's assignments: (qualifier, column, value).
    pub sets: Vec<(Option<String>, String, Expr)>,
    /// WHERE.
    pub filter: Option<Expr>,
    /// UPDATE IGNORE: a duplicate key skips the row and a value that does not fit is stored
    /// as in non-strict mode, each with a warning.
    pub ignore: bool,
}

/// UPDATE (single table).
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateStmt {
    /// Target table.
    pub table: TableRef,
    /// Assignments, applied left to right (later ones see earlier results, as in MySQL).
    pub sets: Vec<(String, Expr)>,
    /// WHERE.
    pub filter: Option<Expr>,
    /// ORDER BY.
    pub order_by: Vec<(Expr, bool)>,
    /// LIMIT.
    pub limit: Option<Expr>,
    /// UPDATE IGNORE: a duplicate key skips the row and a value that does not fit is stored
    /// as in non-strict mode, each with a warning.
    pub ignore: bool,
}

/// DELETE (single table).
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteStmt {
    /// Target table.
    pub table: TableRef,
    /// WHERE.
    pub filter: Option<Expr>,
    /// ORDER BY.
    pub order_by: Vec<(Expr, bool)>,
    /// LIMIT.
    pub limit: Option<Expr>,
}

/// ALTER TABLE operations we support.
#[derive(Debug, Clone)]
pub enum AlterOp {
    /// ADD \[COLUMN\] at the end (no row is rewritten; rows stored before read the default).
    AddColumn {
        /// The column.
        column: shoal_store::ColumnDef,
        /// `IF NOT EXISTS`.
        if_not_exists: bool,
    },
    /// ADD \[UNIQUE\] INDEX/KEY.
    AddIndex(IndexSpec),
    /// DROP INDEX/KEY.
    DropIndex(String),
    /// ADD [CONSTRAINT name] FOREIGN KEY.
    AddForeignKey(shoal_store::ForeignKeySpec),
    /// DROP FOREIGN KEY name.
    DropForeignKey(String),
    /// DROP \[COLUMN\] [IF EXISTS] name (rows are rewritten).
    DropColumn {
        /// The column.
        name: String,
        /// `IF EXISTS`.
        if_exists: bool,
    },
    /// MODIFY / CHANGE / RENAME COLUMN: column `old` becomes `column`, a whole new definition
    /// as in MySQL (rows are rewritten when its type or nullability tightens); `None` for
    /// RENAME COLUMN, which keeps the definition under `new_name`.
    ChangeColumn {
        /// The column's present name.
        old: String,
        /// Its name afterwards.
        new_name: String,
        /// The new definition (`None`: RENAME COLUMN).
        column: Option<shoal_store::ColumnDef>,
    },
}

impl AlterOp {
    /// Whether the operation changes the column list (handled as one rebuild of the table).
    pub fn changes_columns(&self) -> bool {
        matches!(
            self,
            AlterOp::DropColumn { .. } | AlterOp::ChangeColumn { .. }
        )
    }
}

/// A table statement.
#[derive(Debug, Clone)]
pub enum TableStmt {
    /// `EXPLAIN SELECT ...`: the query engine's plan, one row per table read.
    Explain(Box<shoal_sql::ast::Query>),
    /// `EXPLAIN UPDATE ...` / `EXPLAIN DELETE ...`: the plan of the statement inside (an
    /// [`TableStmt::Update`], [`TableStmt::Delete`] or [`TableStmt::Multi`]), which is not run.
    ExplainDml(Box<TableStmt>),
    /// A multi-table UPDATE or DELETE (run through the query engine).
    Multi(Box<MultiStmt>),
    /// A query (any FROM clause or none, UNION, subqueries): run by the query engine
    /// ([`crate::query`]).
    Query(Box<shoal_sql::ast::Query>),
    /// CREATE TABLE.
    CreateTable {
        /// Database (None = current).
        db: Option<String>,
        /// IF NOT EXISTS.
        if_not_exists: bool,
        /// Definition for the store.
        spec: TableSpec,
        /// The error translating the definition gave, kept until the database is known:
        /// only for a table named like a log table of `mysql` (`general_log`, `slow_log`),
        /// whose MySQL definition shoal cannot translate but need not ([`crate::mysql_schema`]).
        deferred: Option<SqlError>,
    },
    /// CREATE \[UNIQUE\] INDEX.
    CreateIndex {
        /// Table.
        table: TableRef,
        /// Index.
        spec: IndexSpec,
    },
    /// DROP INDEX name ON table.
    DropIndex {
        /// Table.
        table: TableRef,
        /// Index name.
        name: String,
    },
    /// DROP TABLE [IF EXISTS] t, ...
    DropTable {
        /// Tables.
        tables: Vec<TableRef>,
        /// IF EXISTS.
        if_exists: bool,
    },
    /// TRUNCATE \[TABLE\] t.
    Truncate(TableRef),
    /// ALTER TABLE t op, ...
    AlterTable {
        /// Table.
        table: TableRef,
        /// Operations.
        ops: Vec<AlterOp>,
    },
    /// SHOW \[FULL\] TABLES [FROM db] [LIKE 'p'].
    ShowTables {
        /// FROM db.
        db: Option<String>,
        /// FULL.
        full: bool,
        /// LIKE pattern.
        like: Option<String>,
    },
    /// SHOW CREATE TABLE.
    ShowCreateTable(TableRef),
    /// DESCRIBE / SHOW \[FULL\] COLUMNS.
    ShowColumns {
        /// Table.
        table: TableRef,
        /// FULL.
        full: bool,
        /// LIKE pattern.
        like: Option<String>,
    },
    /// SHOW INDEX / INDEXES / KEYS.
    ShowIndex(TableRef),
    /// ANALYZE TABLE t, ...
    Analyze(Vec<TableRef>),
    /// OPTIMIZE TABLE t, ... (a full compaction of the store, see `show::optimize`).
    Optimize(Vec<TableRef>),
    /// CHECK TABLE t, ... [QUICK | FAST | MEDIUM | EXTENDED | CHANGED | FOR UPGRADE] (the
    /// options are accepted and ignored: every check is the full one, see `shoal_store::check`).
    Check(Vec<TableRef>),
    /// INSERT / REPLACE.
    Insert(Box<InsertStmt>),
    /// UPDATE.
    Update(Box<UpdateStmt>),
    /// DELETE.
    Delete(Box<DeleteStmt>),
}

impl TableStmt {
    /// The `Com_*` counter name of this statement.
    pub fn com_name(&self) -> &'static str {
        match self {
            TableStmt::CreateTable { .. } => "create_table",
            TableStmt::CreateIndex { .. } => "create_index",
            TableStmt::DropIndex { .. } => "drop_index",
            TableStmt::DropTable { .. } => "drop_table",
            TableStmt::Truncate(_) => "truncate",
            TableStmt::AlterTable { .. } => "alter_table",
            TableStmt::ShowTables { .. } => "show_tables",
            TableStmt::ShowCreateTable(_) => "show_create_table",
            TableStmt::ShowColumns { .. } => "show_fields",
            TableStmt::ShowIndex(_) => "show_keys",
            TableStmt::Analyze(_) => "analyze",
            TableStmt::Optimize(_) => "optimize",
            TableStmt::Check(_) => "check",
            TableStmt::Multi(m) if m.delete => "delete_multi",
            TableStmt::Multi(_) => "update_multi",
            TableStmt::Query(_) => "select",
            TableStmt::Explain(_) => "explain_other",
            // MariaDB counts EXPLAIN UPDATE / DELETE as the statement.
            TableStmt::ExplainDml(inner) => inner.com_name(),
            TableStmt::Insert(i) if i.replace => "replace",
            TableStmt::Insert(_) => "insert",
            TableStmt::Update(_) => "update",
            TableStmt::Delete(_) => "delete",
        }
    }

    /// The statement whose plan this one runs or shows: the UPDATE / DELETE inside an
    /// EXPLAIN of one (it opens, locks and needs the privileges of its tables as that
    /// statement does, in MariaDB too), else the statement itself.
    pub fn planned(&self) -> &TableStmt {
        match self {
            TableStmt::ExplainDml(inner) => inner,
            s => s,
        }
    }

    /// Whether the statement changes rows (INSERT, REPLACE, UPDATE, DELETE, single- or
    /// multi-table): refused under `read_only` (1290) and in a READ ONLY transaction (1792).
    pub fn writes_rows(&self) -> bool {
        matches!(
            self,
            TableStmt::Insert(_)
                | TableStmt::Update(_)
                | TableStmt::Delete(_)
                | TableStmt::Multi(_)
        )
    }

    /// Whether the statement is a `SELECT ... FOR UPDATE`: MySQL refuses it in a READ ONLY
    /// transaction (1792) like a write; `LOCK IN SHARE MODE` is allowed.
    pub fn locks_for_update(&self) -> bool {
        match self {
            TableStmt::Query(q) => q.lock == shoal_sql::ast::RowLock::Update,
            _ => false,
        }
    }

    /// What the statement's locking reads do with a row another transaction has locked.
    pub fn lock_wait(&self) -> shoal_store::LockWait {
        let w = match self {
            TableStmt::Query(q) => q.lock_wait,
            _ => shoal_sql::ast::LockWait::Wait,
        };
        match w {
            shoal_sql::ast::LockWait::Wait => shoal_store::LockWait::Wait,
            shoal_sql::ast::LockWait::NoWait => shoal_store::LockWait::NoWait,
            shoal_sql::ast::LockWait::SkipLocked => shoal_store::LockWait::SkipLocked,
        }
    }

    /// Whether the statement is a SELECT without a LIMIT of its own, whose rows go to the
    /// client: `sql_select_limit` caps its result (not a subquery's, not INSERT ... SELECT's).
    pub fn unlimited_select(&self) -> bool {
        match self {
            TableStmt::Query(q) => {
                q.limit.is_none()
                    && !matches!(&q.body, shoal_sql::ast::QueryBody::Query(inner) if inner.limit.is_some())
            }
            _ => false,
        }
    }

    /// Whether the statement is DDL (implicitly commits an open transaction, as in MySQL).
    pub fn is_ddl(&self) -> bool {
        matches!(
            self,
            TableStmt::CreateTable { .. }
                | TableStmt::CreateIndex { .. }
                | TableStmt::DropIndex { .. }
                | TableStmt::DropTable { .. }
                | TableStmt::Truncate(_)
                | TableStmt::AlterTable { .. }
        )
    }
}
