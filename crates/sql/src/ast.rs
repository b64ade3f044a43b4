//! shoal's own SQL AST: what the rest of the server sees. sqlparser's AST is translated into
//! this immediately (see `translate.rs`), so that sqlparser upgrades touch only the translator,
//! and so that everything downstream works on a small, closed set of constructs that we know how
//! to execute. Anything that cannot be expressed here was rejected with 1064/1235 at translation.

use std::fmt;

use crate::value::Value;

/// Scope of a system variable reference or assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarScope {
    /// `@@x` in an expression (session value, or global for global-only variables), or
    /// `SET @@x` (the session value; for `transaction_isolation` and `transaction_read_only`
    /// the next transaction only, as in MySQL).
    Default,
    /// `@@session.x`, `SET SESSION x`, `SET @@session.x`, `LOCAL`, `SET x`.
    Session,
    /// `@@global.x`, `SET GLOBAL x`.
    Global,
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (DECIMAL or DOUBLE result)
    Div,
    /// `DIV` (integer division)
    IntDiv,
    /// `%`, `MOD`
    Mod,
    /// `=`
    Eq,
    /// `<>`, `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
    /// `<=>` (NULL-safe equality)
    NullSafeEq,
    /// `AND`, `&&`
    And,
    /// `OR`, `||`
    Or,
    /// `XOR`
    Xor,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `<<`
    ShiftLeft,
    /// `>>`
    ShiftRight,
}

impl BinOp {
    /// The operator as MySQL prints it in messages.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::IntDiv => "DIV",
            BinOp::Mod => "%",
            BinOp::Eq => "=",
            BinOp::NotEq => "<>",
            BinOp::Lt => "<",
            BinOp::LtEq => "<=",
            BinOp::Gt => ">",
            BinOp::GtEq => ">=",
            BinOp::NullSafeEq => "<=>",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::ShiftLeft => "<<",
            BinOp::ShiftRight => ">>",
        }
    }
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `NOT x`, `!x`
    Not,
    /// `~x`
    BitNot,
}

/// Target of CAST/CONVERT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CastType {
    /// SIGNED \[INTEGER\]
    Signed,
    /// UNSIGNED \[INTEGER\]
    Unsigned,
    /// CHAR / VARCHAR
    Char,
    /// BINARY / VARBINARY / BLOB: a binary string
    Binary,
    /// BINARY(n): a binary string of exactly `n` bytes (right-padded with `0x00`, longer values
    /// cut with warning 1292)
    BinaryN(u32),
    /// DECIMAL(m, d): the scale
    Decimal(u8),
    /// DOUBLE / FLOAT / REAL
    Double,
    /// DATE
    Date,
    /// DATETIME(fsp): the fraction truncated to `fsp` digits (0 without a precision)
    DateTime(u8),
    /// TIME(fsp): the result is the time's text with exactly `fsp` fractional digits
    /// (truncated; shoal has no TIME type; see `temporal`)
    Time(u8),
    /// Not written in SQL: a FLOAT's value as the text MariaDB shows for it in string context
    /// (`CONCAT(f, '')`, `f LIKE ..`), with the column's fixed decimals (FLOAT(M,D)), 31 for
    /// none (six significant digits, [`crate::value::format_float`]). The query binder puts it
    /// around FLOAT columns where a string is read from them.
    FloatText(u8),
}

/// An expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A constant.
    Literal(Value),
    /// A column reference (only valid where a row is in scope, e.g. SHOW ... WHERE).
    Column(String),
    /// The n-th `?` placeholder (0-based) of a prepared statement.
    Param(usize),
    /// `@@[scope.]name`.
    SysVar(VarScope, String),
    /// `@name`.
    UserVar(String),
    /// `@name := expr`.
    AssignUserVar(String, Box<Expr>),
    /// Unary operator.
    Unary(UnOp, Box<Expr>),
    /// Binary operator.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `x IS [NOT] NULL`.
    IsNull(Box<Expr>, bool),
    /// `x IS [NOT] TRUE|FALSE`: (expr, value, negated).
    IsBool(Box<Expr>, bool, bool),
    /// `x [NOT] IN (list)`.
    InList(Box<Expr>, Vec<Expr>, bool),
    /// `x [NOT] BETWEEN lo AND hi`.
    Between(Box<Expr>, Box<Expr>, Box<Expr>, bool),
    /// `x [NOT] LIKE pattern [ESCAPE c]`.
    Like(Box<Expr>, Box<Expr>, Option<char>, bool),
    /// `CASE [operand] WHEN .. THEN .. [ELSE ..] END`.
    Case(Option<Box<Expr>>, Vec<(Expr, Expr)>, Option<Box<Expr>>),
    /// A function call, name upper-cased.
    Function(String, Vec<Expr>),
    /// `CAST(x AS type)`.
    Cast(Box<Expr>, CastType),
    /// A column reference with its qualifier as written (`t.c`; `db.t.c` keeps `t`). Only the
    /// query translator ([`crate::translate::query`]) keeps qualifiers; the query engine's
    /// binder resolves them to [`Expr::Slot`].
    QColumn(Option<String>, String),
    /// A bound column: slot `n` of the executing statement's row frame (query engine).
    Slot(usize),
    /// An aggregate call (query engine; the binder replaces it by a slot).
    Aggregate(Box<Aggregate>),
    /// A subquery used as a value (query engine).
    Subquery(Box<Subquery>),
}

/// Aggregate functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    /// COUNT(*) when the argument is `None`, else COUNT(expr).
    Count,
    /// SUM.
    Sum,
    /// AVG.
    Avg,
    /// MIN.
    Min,
    /// MAX.
    Max,
    /// GROUP_CONCAT: the group's non-NULL values as text, joined by a separator.
    GroupConcat,
}

impl AggFunc {
    /// The function of an (upper-case) name, if it is an aggregate.
    pub fn of(name: &str) -> Option<AggFunc> {
        Some(match name {
            "COUNT" => AggFunc::Count,
            "SUM" => AggFunc::Sum,
            "AVG" => AggFunc::Avg,
            "MIN" => AggFunc::Min,
            "MAX" => AggFunc::Max,
            "GROUP_CONCAT" => AggFunc::GroupConcat,
            _ => return None,
        })
    }
}

/// The function name of `COUNT(DISTINCT a, b, ..)`'s argument: the tuple `(a, b, ..)`, NULL if
/// any member is (no function can be called by this name: it starts with a NUL byte).
pub const DISTINCT_TUPLE: &str = "\0tuple";

/// An aggregate call.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    pub func: AggFunc,
    /// Argument (`None` = `COUNT(*)`).
    pub arg: Option<Expr>,
    /// `DISTINCT` inside the call.
    pub distinct: bool,
    /// GROUP_CONCAT's `ORDER BY` (expression, descending) and `SEPARATOR` (None: `,`).
    pub concat: Option<Box<ConcatSpec>>,
}

/// GROUP_CONCAT's clauses.
#[derive(Debug, Clone, PartialEq)]
pub struct ConcatSpec {
    /// `ORDER BY` inside the call: (expression, descending).
    pub order: Vec<(Expr, bool)>,
    /// `SEPARATOR 'x'`.
    pub separator: String,
}

/// How a subquery is used.
#[derive(Debug, Clone, PartialEq)]
pub enum SubqueryKind {
    /// `(SELECT ..)` as a value: one column, at most one row (1242), NULL without rows.
    Scalar,
    /// `EXISTS (SELECT ..)` (`NOT EXISTS` is `NOT` around it).
    Exists,
    /// `operand [NOT] IN (SELECT ..)`.
    In { operand: Expr, negated: bool },
    /// `operand op ANY|SOME|ALL (SELECT ..)`.
    Compare { operand: Expr, op: BinOp, all: bool },
}

/// A subquery expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Subquery {
    pub kind: SubqueryKind,
    pub query: Query,
    /// Its number within the statement, given by the binder (0 until bound).
    pub id: usize,
}

/// Row locks a query takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RowLock {
    /// Consistent (non-locking) read.
    #[default]
    None,
    /// `LOCK IN SHARE MODE` / `FOR SHARE`.
    Share,
    /// `FOR UPDATE`.
    Update,
}

/// What a locking read does with a row another transaction has locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LockWait {
    /// Waits (up to `innodb_lock_wait_timeout`).
    #[default]
    Wait,
    /// `NOWAIT`: fails at once (1205).
    NoWait,
    /// `SKIP LOCKED`: passes the row by.
    SkipLocked,
}

/// A query: a SELECT or a UNION of them, ordered and limited.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub body: QueryBody,
    /// ORDER BY (expression, descending).
    pub order_by: Vec<(Expr, bool)>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    pub lock: RowLock,
    /// `NOWAIT` / `SKIP LOCKED` of the row lock.
    pub lock_wait: LockWait,
    /// `SELECT SQL_CALC_FOUND_ROWS ...` (its first SELECT's modifier): FOUND_ROWS() is then
    /// the row count without LIMIT / OFFSET.
    pub calc_found_rows: bool,
    /// `SELECT ... INTO @a, @b FROM ...`: the user variables its one row goes to (names
    /// without `@`; empty: the rows go to the client).
    pub into: Vec<String>,
}

/// The body of a query.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryBody {
    Select(Box<QuerySelect>),
    /// `left UNION | INTERSECT | EXCEPT [ALL] right`.
    SetOp {
        op: SetOp,
        all: bool,
        left: Box<QueryBody>,
        right: Box<QueryBody>,
    },
    /// A parenthesized query with its own ORDER BY / LIMIT.
    Query(Box<Query>),
}

/// A set operation between two query bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    /// Rows of either side.
    Union,
    /// Rows of the left side that the right side has too.
    Intersect,
    /// Rows of the left side that the right side does not have.
    Except,
}

impl SetOp {
    /// The keyword.
    pub fn name(self) -> &'static str {
        match self {
            SetOp::Union => "UNION",
            SetOp::Intersect => "INTERSECT",
            SetOp::Except => "EXCEPT",
        }
    }
}

/// `WITH RECURSIVE name [(columns)] AS (anchor UNION [ALL] step ...)`: the anchor members run
/// once; each step member then runs over the rows the previous round added (the
/// [`TableExpr::WorkTable`]) until a round adds none.
#[derive(Debug, Clone, PartialEq)]
pub struct RecursiveCte {
    /// The CTE's name (in messages).
    pub name: String,
    /// Its column names (empty: the anchor's).
    pub columns: Vec<String>,
    /// The members that do not read the CTE, with the set operations between them.
    pub anchor: QueryBody,
    /// The members that read it (each exactly once, in its FROM clause).
    pub steps: Vec<QueryBody>,
    /// A `UNION` (not `UNION ALL`) joins a step: the result has no duplicate rows.
    pub distinct: bool,
}

/// One SELECT block.
#[derive(Debug, Clone, PartialEq)]
pub struct QuerySelect {
    pub distinct: bool,
    pub items: Vec<QueryItem>,
    /// FROM: comma-separated table expressions (empty: no table).
    pub from: Vec<TableExpr>,
    pub filter: Option<Expr>,
    pub group_by: Vec<Expr>,
    /// `GROUP BY ... WITH ROLLUP`: super-aggregate rows for every prefix of the GROUP BY list.
    pub rollup: bool,
    pub having: Option<Expr>,
}

/// One SELECT list item.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryItem {
    /// `*` or `t.*`.
    Wildcard(Option<String>),
    /// An expression, its header (alias or text as written), whether an alias was given.
    Expr {
        expr: Expr,
        name: String,
        aliased: bool,
    },
}

/// A FROM-clause item.
#[derive(Debug, Clone, PartialEq)]
pub enum TableExpr {
    /// `[db.]name [AS alias]`.
    Table {
        db: Option<String>,
        name: String,
        alias: Option<String>,
    },
    /// `(SELECT ..) AS alias`, or a reference to a common table expression.
    Derived {
        query: Box<Query>,
        alias: String,
        /// The CTE's column list (`WITH c (a, b) AS ..`): renames the query's columns.
        columns: Vec<String>,
    },
    /// A reference to a recursive common table expression.
    Recursive {
        cte: Box<RecursiveCte>,
        alias: String,
    },
    /// Inside a recursive CTE's step: the rows the previous round added.
    WorkTable { name: String, alias: String },
    /// A join of two table expressions.
    Join {
        left: Box<TableExpr>,
        right: Box<TableExpr>,
        kind: JoinKind,
        cond: JoinCond,
    },
}

/// Join kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// `[INNER] JOIN`, `CROSS JOIN`, `STRAIGHT_JOIN`.
    Inner,
    /// `LEFT [OUTER] JOIN`.
    Left,
    /// `RIGHT [OUTER] JOIN`.
    Right,
}

/// How a join matches rows.
#[derive(Debug, Clone, PartialEq)]
pub enum JoinCond {
    /// Every pair (CROSS JOIN, JOIN without ON).
    None,
    On(Expr),
    Using(Vec<String>),
    Natural,
}

impl fmt::Display for Expr {
    /// Renders the expression the way MySQL prints it in error messages (`(a + b)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::depth::with_stack(|| self.fmt_level(f))
    }
}

impl Expr {
    fn fmt_level(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Literal(Value::Str(s)) => write!(f, "'{s}'"),
            Expr::Literal(v) => write!(f, "{v}"),
            Expr::Column(c) => write!(f, "`{c}`"),
            Expr::Param(_) => write!(f, "?"),
            Expr::SysVar(VarScope::Default, n) => write!(f, "@@{n}"),
            Expr::SysVar(VarScope::Session, n) => write!(f, "@@session.{n}"),
            Expr::SysVar(VarScope::Global, n) => write!(f, "@@global.{n}"),
            Expr::UserVar(n) => write!(f, "@`{n}`"),
            Expr::AssignUserVar(n, e) => write!(f, "(@`{n}` := {e})"),
            Expr::Unary(UnOp::Neg, e) => write!(f, "-({e})"),
            Expr::Unary(UnOp::Not, e) => write!(f, "(not({e}))"),
            Expr::Unary(UnOp::BitNot, e) => write!(f, "~({e})"),
            Expr::Binary(op, a, b) => write!(f, "({a} {} {b})", op.symbol()),
            Expr::IsNull(e, false) => write!(f, "({e} is null)"),
            Expr::IsNull(e, true) => write!(f, "({e} is not null)"),
            Expr::IsBool(e, v, n) => write!(
                f,
                "({e} is {}{})",
                if *n { "not " } else { "" },
                if *v { "true" } else { "false" }
            ),
            Expr::InList(e, l, n) => {
                write!(f, "({e} {}in (", if *n { "not " } else { "" })?;
                for (i, x) in l.iter().enumerate() {
                    if i > 0 {
                        write!(f, ",")?;
                    }
                    write!(f, "{x}")?;
                }
                write!(f, "))")
            }
            Expr::Between(e, a, b, n) => write!(
                f,
                "({e} {}between {a} and {b})",
                if *n { "not " } else { "" }
            ),
            Expr::Like(e, p, _, n) => {
                write!(f, "({e} {}like {p})", if *n { "not " } else { "" })
            }
            Expr::Case(..) => write!(f, "case"),
            Expr::Function(name, args) => {
                write!(f, "{}(", name.to_ascii_lowercase())?;
                for (i, x) in args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ",")?;
                    }
                    write!(f, "{x}")?;
                }
                write!(f, ")")
            }
            Expr::Cast(e, t) => write!(f, "cast({e} as {t:?})"),
            Expr::QColumn(Some(t), c) => write!(f, "`{t}`.`{c}`"),
            Expr::QColumn(None, c) => write!(f, "`{c}`"),
            Expr::Slot(n) => write!(f, "#{n}"),
            Expr::Aggregate(a) => {
                let name = format!("{:?}", a.func).to_ascii_lowercase();
                let d = if a.distinct { "distinct " } else { "" };
                match &a.arg {
                    None => write!(f, "{name}(*)"),
                    Some(x) => write!(f, "{name}({d}{x})"),
                }
            }
            Expr::Subquery(_) => write!(f, "(subquery)"),
        }
    }
}

/// A table reference `[db.]table [AS alias]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    /// Database, if qualified.
    pub db: Option<String>,
    /// Table name.
    pub name: String,
}

/// One `SET` assignment target.
#[derive(Debug, Clone, PartialEq)]
pub enum SetTarget {
    /// A system variable.
    System(VarScope, String),
    /// A user variable `@x`.
    User(String),
}

/// The value side of a `SET`.
#[derive(Debug, Clone, PartialEq)]
pub enum SetExpr {
    /// `DEFAULT`.
    Default,
    /// A bare word such as `ON` or `pool-of-threads` that is not a column.
    Word(String),
    /// Any expression.
    Expr(Expr),
    /// An expression with a subquery: `SELECT <the expression as written>`, a query the table
    /// engine runs for the one value it assigns (1242 for a subquery of more than one row).
    Query(String),
}

/// Pattern filter of a SHOW statement.
#[derive(Debug, Clone, PartialEq)]
pub enum ShowFilter {
    /// No filter.
    None,
    /// `LIKE 'pattern'`.
    Like(String),
    /// `WHERE expr` over the result's columns.
    Where(Expr),
}

/// What a SHOW statement lists.
#[derive(Debug, Clone, PartialEq)]
pub enum ShowKind {
    /// SHOW DATABASES / SCHEMAS.
    Databases,
    /// SHOW \[FULL\] TABLES [FROM db].
    Tables {
        /// `FROM db`.
        db: Option<String>,
        /// FULL adds `Table_type`.
        full: bool,
    },
    /// SHOW [GLOBAL|SESSION] VARIABLES.
    Variables(VarScope),
    /// SHOW [GLOBAL|SESSION] STATUS.
    Status(VarScope),
    /// SHOW \[FULL\] PROCESSLIST.
    Processlist {
        /// Show full statement text.
        full: bool,
    },
    /// SHOW WARNINGS.
    Warnings,
    /// SHOW ERRORS.
    Errors,
    /// SHOW COLLATION.
    Collation,
    /// SHOW CHARACTER SET / CHARSET.
    Charset,
    /// SHOW ENGINES.
    Engines,
    /// SHOW TABLE STATUS [FROM db]: needs storage.
    TableStatus {
        /// `FROM db`.
        db: Option<String>,
    },
    /// SHOW COLUMNS/INDEX/CREATE TABLE on a table: needs storage.
    TableInfo(TableName),
    /// `SHOW CREATE {DATABASE | SCHEMA} [IF NOT EXISTS] db`: (db, IF NOT EXISTS).
    CreateDatabase(String, bool),
}

/// One account of CREATE USER.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUser {
    /// User name.
    pub user: String,
    /// Host pattern (`%` when not written).
    pub host: String,
    /// `IDENTIFIED BY 'p'` (CREATE USER without it: the empty password).
    pub password: Option<String>,
    /// `IDENTIFIED WITH plugin` (lower case; `None`: `default_authentication_plugin` for a new
    /// account, unchanged for ALTER USER).
    pub plugin: Option<String>,
    /// `IDENTIFIED WITH plugin AS 'stored string'`: the plugin's stored form, taken as is.
    pub stored: Option<String>,
}

/// Account options of CREATE USER / ALTER USER (`None`: not written).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountOptions {
    /// `REQUIRE SSL` (`Some(true)`) or `REQUIRE NONE` (`Some(false)`).
    pub require_ssl: Option<bool>,
    /// `WITH MAX_USER_CONNECTIONS n` (0 = the global `max_user_connections` applies).
    pub max_user_connections: Option<u64>,
    /// `ACCOUNT LOCK` (`Some(true)`) / `ACCOUNT UNLOCK` (`Some(false)`).
    pub locked: Option<bool>,
}

/// A statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// A query (SELECT, WITH, a set operation, a parenthesized query): run by the table
    /// engine's query engine, which translates and plans it. `lone_sleep`: the query is a lone
    /// `SELECT SLEEP(n)` (KILL QUERY makes it return 1, not fail). `tables`: it reads a table
    /// (a FROM clause anywhere), which decides whether it clears the last statement's
    /// diagnostics at once (MariaDB's rule: see the session's `Diagnostics`).
    Query {
        /// A lone `SELECT SLEEP(n)`.
        lone_sleep: bool,
        /// The query reads a table.
        tables: bool,
    },
    /// `SET a = x, @b = y, GLOBAL c = z`.
    Set(Vec<(SetTarget, SetExpr)>),
    /// `SET NAMES charset [COLLATE collation]` (`None` = DEFAULT).
    SetNames(Option<String>, Option<String>),
    /// `SET CHARACTER SET charset`.
    SetCharset(Option<String>),
    /// `SET [GLOBAL|SESSION] TRANSACTION ISOLATION LEVEL ...`: (scope, level, read_only).
    SetTransaction(Option<VarScope>, Option<String>, Option<bool>),
    /// `USE db`.
    Use(String),
    /// SHOW ... with a filter.
    Show(ShowKind, ShowFilter),
    /// `KILL [QUERY|CONNECTION] id`: (id, query_only).
    Kill(Expr, bool),
    /// `CREATE DATABASE [IF NOT EXISTS] name`.
    CreateDatabase(String, bool),
    /// `DROP DATABASE [IF EXISTS] name`.
    DropDatabase(String, bool),
    /// BEGIN / START TRANSACTION: its access mode if given (`READ ONLY` = `Some(true)`,
    /// `READ WRITE` = `Some(false)`).
    Begin(Option<bool>),
    /// COMMIT.
    Commit,
    /// ROLLBACK.
    Rollback,
    /// `CREATE USER [IF NOT EXISTS] 'u'@'h' [IDENTIFIED [WITH plugin] BY 'p'], ...
    /// [REQUIRE NONE | SSL] [WITH MAX_USER_CONNECTIONS n]` (the users, IF NOT EXISTS, options).
    CreateUser(Vec<NewUser>, bool, AccountOptions),
    /// `DROP USER [IF EXISTS] 'u'@'h', ...`.
    DropUser(Vec<(String, String)>, bool),
    /// GRANT, REVOKE, SHOW GRANTS, ALTER USER, RENAME USER, SET PASSWORD.
    Account(AccountStmt),
    /// A statement on a table (INSERT/UPDATE/DELETE/CREATE TABLE/...): needs storage.
    /// (`kind` for Com_* accounting, the tables it names.)
    TableStatement(&'static str, Vec<TableName>),
    /// `DO expr, ...`.
    Do(Vec<Expr>),
    /// `FLUSH [NO_WRITE_TO_BINLOG | LOCAL] option [, option] ...`: each option's words,
    /// upper-cased and joined by one space (`THREAD_POOL_STATS`, `TABLES WITH READ LOCK`). The
    /// session decides which it can do.
    Flush(Vec<String>),
    /// `LOCK TABLE[S] t [AS a] READ [LOCAL] | [LOW_PRIORITY] WRITE, ...`.
    LockTables(Vec<(TableName, Option<String>, TableLockKind)>),
    /// `UNLOCK TABLE[S]`.
    UnlockTables,
    /// `SAVEPOINT name`.
    Savepoint(String),
    /// `ROLLBACK [WORK] TO [SAVEPOINT] name`.
    RollbackToSavepoint(String),
    /// `RELEASE SAVEPOINT name`.
    ReleaseSavepoint(String),
    /// `ALTER TABLE t DISABLE KEYS` (`false`) / `ENABLE KEYS` (`true`): what dump files wrap
    /// their INSERTs in. A no-op with note 1031 for InnoDB-like tables, as in MySQL.
    AlterTableKeys(TableName, bool),
    /// `BACKUP TO 'dir'`: a consistent physical copy of the store into a new directory on the
    /// server's host (shoal's own statement; SUPER only).
    Backup(String),
    /// `PREPARE name FROM expr`: the statement's text is the value of `expr` (a string
    /// literal or a user variable, most often; no subquery).
    Prepare(String, Expr),
    /// `EXECUTE name [USING expr, ...]`: the statement prepared as `name` with these values
    /// for its placeholders.
    Execute(String, Vec<Expr>),
    /// `EXECUTE IMMEDIATE expr [USING expr, ...]`: PREPARE, EXECUTE and DEALLOCATE in one.
    ExecuteImmediate(Expr, Vec<Expr>),
    /// `{DEALLOCATE | DROP} PREPARE name`.
    Deallocate(String),
}

/// The lock `LOCK TABLES` takes on one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableLockKind {
    /// `READ` / `READ LOCAL` (the same for transactional tables, as in InnoDB).
    Read,
    /// `WRITE` / `LOW_PRIORITY WRITE`.
    Write,
}

impl Statement {
    /// The `Com_*` counter this statement bumps.
    pub fn com_name(&self) -> &'static str {
        match self {
            Statement::Query { .. } => "select",
            Statement::Set(_)
            | Statement::SetNames(..)
            | Statement::SetCharset(_)
            | Statement::SetTransaction(..) => "set_option",
            Statement::Use(_) => "change_db",
            Statement::Show(k, _) => match k {
                ShowKind::Databases => "show_databases",
                ShowKind::Tables { .. } => "show_tables",
                ShowKind::Variables(_) => "show_variables",
                ShowKind::Status(_) => "show_status",
                ShowKind::Processlist { .. } => "show_processlist",
                ShowKind::Warnings => "show_warnings",
                ShowKind::Errors => "show_errors",
                ShowKind::Collation => "show_collations",
                ShowKind::Charset => "show_charsets",
                ShowKind::Engines => "show_engines",
                ShowKind::TableInfo(_) => "show_tables",
                ShowKind::TableStatus { .. } => "show_table_status",
                ShowKind::CreateDatabase(..) => "show_create_db",
            },
            Statement::Kill(..) => "kill",
            Statement::Flush(_) => "flush",
            Statement::CreateDatabase(..) => "create_db",
            Statement::DropDatabase(..) => "drop_db",
            Statement::Begin(_) => "begin",
            Statement::Commit => "commit",
            Statement::Rollback => "rollback",
            Statement::CreateUser(..) => "create_user",
            Statement::DropUser(..) => "drop_user",
            Statement::Account(a) => a.com_name(),
            Statement::TableStatement(kind, _) => kind,
            Statement::Do(_) => "select",
            Statement::LockTables(_) => "lock_tables",
            Statement::UnlockTables => "unlock_tables",
            Statement::Savepoint(_) => "savepoint",
            Statement::RollbackToSavepoint(_) => "rollback_to_savepoint",
            Statement::ReleaseSavepoint(_) => "release_savepoint",
            Statement::AlterTableKeys(..) => "alter_table",
            Statement::Backup(_) => "admin_commands",
            Statement::Prepare(..) => "prepare_sql",
            Statement::Execute(..) => "execute_sql",
            Statement::ExecuteImmediate(..) => "execute_immediate",
            Statement::Deallocate(_) => "dealloc_sql",
        }
    }
}

/// `'user'@'host'` as written in an account statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserSpec {
    /// User name.
    pub user: String,
    /// Host pattern (`%` when not given).
    pub host: String,
}

/// What a GRANT or REVOKE applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantLevel {
    /// `*.*`.
    Global,
    /// `db.*`; `None` for `*` (the current database).
    Database(Option<String>),
    /// `db.t`, or `t` in the current database (`None`).
    Table(Option<String>, String),
}

/// A new password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PasswordSpec {
    /// The password itself (empty: no password).
    Clear(String),
    /// `SHA1(SHA1(password))` given as `*` + 40 hex digits.
    Hash([u8; 20]),
    /// `IDENTIFIED WITH plugin [BY 'password' | AS 'stored string']` (plugin lower-cased;
    /// neither: no password).
    With {
        /// The plugin.
        plugin: String,
        /// `BY 'password'`.
        password: Option<String>,
        /// `AS 'stored string'`, in the plugin's format.
        stored: Option<String>,
    },
}

/// Account-management statements (`crates/sql/src/translate/account.rs`). A `None` user is
/// `CURRENT_USER` (or, for SHOW GRANTS and SET PASSWORD without FOR, the session's account).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountStmt {
    /// `GRANT privileges ON level TO users [WITH GRANT OPTION]`.
    Grant {
        /// Upper-cased names (`ALL`, `SHOW DATABASES`, `CONNECTION_ADMIN`, ...).
        privileges: Vec<String>,
        /// Where.
        level: GrantLevel,
        /// To whom.
        users: Vec<Option<UserSpec>>,
        /// WITH GRANT OPTION.
        grant_option: bool,
    },
    /// `REVOKE privileges ON level FROM users`; `level` is `None` for
    /// `REVOKE ALL PRIVILEGES, GRANT OPTION FROM users`.
    Revoke {
        /// Upper-cased names.
        privileges: Vec<String>,
        /// Where (`None`: everywhere).
        level: Option<GrantLevel>,
        /// From whom.
        users: Vec<Option<UserSpec>>,
    },
    /// `SHOW GRANTS [FOR user]`.
    ShowGrants(Option<UserSpec>),
    /// `SHOW CREATE USER [user]` (`None`: the session's account).
    ShowCreateUser(Option<UserSpec>),
    /// `ALTER USER [IF EXISTS] user [IDENTIFIED ...], ... [ACCOUNT LOCK | UNLOCK]`.
    AlterUser {
        /// IF EXISTS.
        if_exists: bool,
        /// Accounts and their new passwords.
        users: Vec<(Option<UserSpec>, Option<PasswordSpec>)>,
        /// ACCOUNT LOCK (`Some(true)`) / UNLOCK.
        lock: Option<bool>,
        /// `REQUIRE SSL` (`Some(true)`) / `REQUIRE NONE`.
        require_ssl: Option<bool>,
    },
    /// `RENAME USER a TO b, ...`.
    RenameUser(Vec<(UserSpec, UserSpec)>),
    /// `SET PASSWORD [FOR user] = 'x' | PASSWORD('x')`.
    SetPassword {
        /// FOR whom (`None`: the session's account).
        user: Option<UserSpec>,
        /// The new password.
        password: PasswordSpec,
    },
}

impl AccountStmt {
    /// The `Com_*` counter name.
    pub fn com_name(&self) -> &'static str {
        match self {
            AccountStmt::Grant { .. } => "grant",
            AccountStmt::Revoke { .. } => "revoke",
            AccountStmt::ShowGrants(_) => "show_grants",
            AccountStmt::ShowCreateUser(_) => "show_create_user",
            AccountStmt::AlterUser { .. } => "alter_user",
            AccountStmt::RenameUser(_) => "rename_user",
            AccountStmt::SetPassword { .. } => "set_option",
        }
    }
}
