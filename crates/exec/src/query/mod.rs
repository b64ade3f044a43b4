//! The query engine: SELECT with any FROM clause — joins (inner, comma, `USING`, `NATURAL`,
//! LEFT/RIGHT), derived tables, common table expressions, `UNION` / `INTERSECT` / `EXCEPT`
//! `[ALL]`, subqueries in expressions (scalar, `IN`, `EXISTS`, `ANY/ALL`, correlated or not),
//! aggregates over any of them — over stored tables and `information_schema`, in one snapshot
//! of the session's transaction.
//!
//! # Common table expressions
//! The translator (`shoal_sql::translate::query`) resolves CTE names by scope: a reference to an
//! ordinary CTE becomes a derived table of its query (materialised per reference, like one), a
//! reference to a recursive one a [`LeafKind::Recursive`] leaf, and inside a recursive CTE's own
//! members the reference is its **work table** ([`LeafKind::Work`]). A recursive CTE runs as
//! its definition says: the anchor members once, then the step members over the rows the
//! previous round added, round after round, until a round adds nothing or
//! `max_recursive_iterations` rounds ran (MariaDB's limit: no error, the rows so far). `UNION`
//! (not ALL) drops repeated rows across rounds too, so a cycle ends. A work table changes every
//! round, so it is never hash-joined, and derived or hash tables first built inside a step are
//! dropped after each round. MariaDB's restrictions are checked: no aggregate in a step, the
//! work table not read from a subquery nor on the null side of an outer join (4008).
//!
//! # Binding ([`bind`])
//! A query arrives as `shoal_sql::ast::Query` with names as written. The binder resolves every
//! name once, at PREPARE: each source (a stored table, an information_schema table, a derived
//! table) gets a range of **slots** in one statement-wide row frame, and every column reference
//! becomes `Expr::Slot(n)`; aggregates get slots of their own. A subquery is bound with its
//! enclosing query as the outer scope, so a correlated reference is just a slot of the outer
//! row: nothing is copied per row. Errors come from here: 1054 unknown column (naming the
//! clause), 1052 ambiguous column, 1146, 1046, 1111 (aggregate where none may be), 1241/1242.
//!
//! # Planning (also [`bind`])
//! The FROM clause becomes a tree of nested-loop joins over **leaves**, executed left to right
//! (a RIGHT JOIN runs as the LEFT JOIN with its sides swapped). WHERE is split into conjuncts;
//! each goes to the leaf that binds the last of its columns, where it filters rows as early as
//! possible, unless that leaf is on the null-supplying side of a LEFT JOIN (then it must see the
//! null-extended row and stays in the select's residual filter). A LEFT JOIN's ON conjuncts go
//! into its right leaf. A stored leaf's conjuncts pick its access path with the single-table
//! planner ([`crate::plan::choose_access`]): columns of earlier leaves count as constants,
//! so `t2.k = t1.a` becomes an index lookup into `t2` per row of `t1` (an index nested-loop
//! join), `id IN (..)` a multi-point read and `id = 1 OR id > 9` a union of ranges. The path
//! only narrows what is read; the leaf's conjuncts are re-checked on every row.
//!
//! Inner joins run in the order of least estimated cost (`bind::join_order`, over every order
//! of up to 6 leaves, greedy beyond): each leaf costs the rows produced before it times the
//! rows its access path reads given the leaves before it (`bind::leaf_step`; a hash-joined
//! full scan costs its rows once, 3x), from the store's estimates (`Engine::estimate_rows`,
//! `Engine::rows_per_key`); equal costs go to the better-ranked paths, then to FROM order. After binding, a full scan whose columns (as the plan reads them,
//! [`decode`]) a secondary index holds becomes a full scan of that index, which the store then
//! reads without fetching rows (`bind::covering_scans`).
//!
//! # Execution ([`run`])
//! Push-based: a source calls back for every row it puts in the frame, and a callback returning
//! `false` stops the whole pipeline (LIMIT without ORDER BY, EXISTS, the second row of a scalar
//! subquery). Each leaf reads its matching rows from the store in one go (the transaction is
//! free again before the next leaf runs), so nested loops never hold a store iterator across
//! another read. Uncorrelated subqueries run once per execution and are cached; correlated ones
//! run per outer row, their answers cached by the outer values they read ([`memo`]). Grouping keeps the first row of each group and one accumulator per
//! aggregate.
//!
//! A plan whose one SELECT reads one stored table and has no subqueries **streams** it: the
//! store's scan calls back for each row and the pipeline runs inside that callback, so LIMIT
//! stops the read after the rows it needs and a locking read locks only the rows it returned
//! (TPC-C Delivery's `ORDER BY no_o_id LIMIT 1 FOR UPDATE`). With rows that arrive in ORDER
//! BY's order (the ascending key the access path reads, after its fixed prefix, on columns
//! whose key order is SQL's order) there is no sort, and LIMIT stops the read too.
//!
//! A leaf no index serves (read whole on every visit) with `own = other` equalities against
//! earlier leaves is a **hash join**: read once per execution into a table keyed by those
//! expressions and probed per outer row (`run.rs`, "Hash joins"); EXPLAIN says `Using join
//! buffer (hash join)`. Every buffer a statement keeps is charged to its memory budget
//! ([`crate::budget`]).

pub(crate) mod bind;
pub(crate) mod decode;
pub mod dml;
pub mod explain;
pub(crate) mod memo;
pub(crate) mod run;

use std::ops::Range;
use std::sync::Arc;

use shoal_sql::ast::{AggFunc, BinOp, Expr, SetOp};
use shoal_sql::value::SqlType;
use shoal_sql::value::Value;
use shoal_sql::SqlError;
use shoal_store::{LockMode, TableDef};

use crate::convert::ColumnInfo;
use crate::plan::Access;

pub(crate) use bind::fixed_in_statement;
pub use bind::{prepare, visit_expr};
pub use run::execute;

/// Tables other subsystems provide (the thread pool's `information_schema.THREAD_POOL_*`):
/// read whole at each execution, joinable and aggregatable like any other source.
pub trait SystemTables: Send + Sync {
    /// Column names and rows of `db.table` (case-insensitive), if it is one of them.
    fn get(
        &self,
        db: &str,
        table: &str,
    ) -> Option<(Vec<String>, Vec<Vec<shoal_sql::value::Value>>)>;
}

/// A bound, planned query: immutable, shared by every execution of a prepared statement.
#[derive(Debug)]
pub struct QueryPlan {
    /// Result columns.
    pub columns: Vec<ColumnInfo>,
    /// The top query.
    pub(crate) root: QNode,
    /// Subqueries by id (`Subquery::id`).
    pub(crate) subqueries: Vec<SubPlan>,
    /// Slots in the row frame.
    pub(crate) slots: usize,
    /// The slots some expression reads ([`decode`]): a stored row converts only those.
    pub(crate) read: Vec<bool>,
    /// The stored tables as bound: the plan is rebuilt when one of them changed.
    pub(crate) tables: Vec<(String, String, Arc<TableDef>)>,
    /// Every reference to a stored table: (database, name, the name it goes by in the
    /// query: its alias, else its name). LOCK TABLES checks these.
    pub(crate) refs: Vec<(String, String, String)>,
    /// The tables of other subsystems ([`SystemTables`]) it reads: (database, name).
    pub(crate) provided: Vec<(String, String)>,
    /// Whether a result column's type depends on a `?` (see `bind::typed_by_values`).
    pub(crate) param_typed: bool,
}

impl QueryPlan {
    /// Every table the query reads, stored ones and other subsystems' (not information_schema's
    /// own TABLES / COLUMNS / SCHEMATA): (database, name), in binding order.
    pub fn tables_read(&self) -> impl Iterator<Item = (&str, &str)> {
        self.tables
            .iter()
            .map(|(d, n, _)| (d.as_str(), n.as_str()))
            .chain(self.provided.iter().map(|(d, n)| (d.as_str(), n.as_str())))
    }

    /// Every reference to a stored table: (database, name, alias or name), in binding order.
    pub fn table_refs(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.refs
            .iter()
            .map(|(d, n, a)| (d.as_str(), n.as_str(), a.as_str()))
    }

    /// How the top SELECT's first stored table is read, as planned (its first leaf in join
    /// order); `None` for other queries.
    pub fn first_access(&self) -> Option<&Access> {
        let Body::Select(s) = &self.root.body else {
            return None;
        };
        let mut order = Vec::new();
        bind::leaf_order(&s.from, &mut order);
        order.into_iter().find_map(|l| match s.leaves[l].kind {
            LeafKind::Table { .. } => Some(&s.leaves[l].access),
            _ => None,
        })
    }

    /// Whether a table it was bound to was altered (or dropped) since: then it is bound again.
    pub fn is_stale(&self, store: &shoal_store::Engine) -> bool {
        self.tables.iter().any(|(d, n, def)| {
            store
                .table(d, n)
                .map_or(true, |now| !Arc::ptr_eq(&now, def) && *now != **def)
        })
    }
}

/// A query: a body, ordered and limited.
#[derive(Debug)]
pub(crate) struct QNode {
    pub body: Body,
    pub order: Vec<(SortKey, bool)>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    /// Output columns.
    pub width: usize,
}

#[derive(Debug)]
pub(crate) enum Body {
    Select(Box<SelectPlan>),
    /// `left UNION | INTERSECT | EXCEPT [ALL] right`.
    SetOp {
        op: SetOp,
        all: bool,
        left: Box<Body>,
        right: Box<Body>,
        /// The result columns' types, aggregated over every member of the UNION chain (the
        /// same on each of its nodes): rows are converted to them before duplicates go. Empty
        /// (values kept as the members made them) under IN / EXISTS / `= ANY` / `<> ALL`,
        /// where MySQL compares with each member's values.
        types: Vec<SqlType>,
    },
    Query(Box<QNode>),
}

/// What an ORDER BY item sorts by.
#[derive(Debug)]
pub(crate) enum SortKey {
    /// An output column (a position, an alias, a UNION's column).
    Output(usize),
    /// An expression over the row (or group).
    Expr(Expr),
}

/// One SELECT block.
#[derive(Debug)]
pub(crate) struct SelectPlan {
    pub from: Source,
    pub leaves: Vec<Leaf>,
    /// What WHERE leaves for after the joins (conditions on null-supplying sides).
    pub filter: Option<Expr>,
    pub grouped: bool,
    pub group_by: Vec<Expr>,
    /// `WITH ROLLUP`: the GROUP BY columns' slots, set to NULL in the super-aggregate rows.
    pub rollup: Option<Vec<usize>>,
    pub aggs: Vec<BoundAgg>,
    pub having: Option<Expr>,
    pub items: Vec<Expr>,
    /// Per item: the item is a column that the projection may move out of the frame instead
    /// of copying (see `bind::mark_moves`); empty: none may.
    pub moves: Vec<bool>,
    pub distinct: bool,
    /// The frame slots of this block's sources (kept per group).
    pub slots: Range<usize>,
    /// What can make WHERE false for every row, checked once per execution before any source
    /// is read (EXPLAIN: `Impossible WHERE`).
    pub impossible: Impossible,
}

/// The parts of a WHERE clause that decide, before any row is read, that no row matches
/// (MariaDB's "Impossible WHERE": it reads nothing then, and EXPLAIN shows one row saying so).
/// A conjunct that holds for every row is dropped from the filters; one that fails empties
/// the SELECT (an aggregate without GROUP BY still gives its one row).
#[derive(Debug, Default)]
pub(crate) struct Impossible {
    /// WHERE conjuncts that read no column, subquery nor anything that varies per row
    /// (`1 = 0`, `@x = 5`, `? > 3`): each must be true.
    pub guards: Vec<Expr>,
    /// Two values one column is said to equal by two conjuncts (`id = 1 AND id = 2`) where
    /// comparing the two tells whether both can hold: integers on an integer column, strings
    /// on a character column (in the collation: `s = 'a' AND s = 'A'` can). Values of other
    /// kinds convert to the column's type first, which this does not do: no pair.
    pub clashes: Vec<(Expr, Expr)>,
    /// A conjunct `col IS NULL` on a NOT NULL column of a table that is on no null-supplying
    /// side of a join.
    pub null_in_not_null: bool,
}

impl Impossible {
    /// Whether nothing can match, with the values of this execution (`ctx`: parameters,
    /// variables). An error evaluating a guard is the statement's error, as it would be on
    /// the first row.
    pub fn decided(&self, ctx: &mut dyn shoal_sql::eval::Context) -> Result<bool, SqlError> {
        use shoal_sql::eval::eval;
        if self.null_in_not_null {
            return Ok(true);
        }
        for g in &self.guards {
            if eval(g, ctx)?.truth() != Some(true) {
                return Ok(true);
            }
        }
        for (a, b) in &self.clashes {
            let (x, y) = (eval(a, ctx)?, eval(b, ctx)?);
            if shoal_sql::value::compare(&x, &y) != Some(std::cmp::Ordering::Equal) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Adds the pairs of `col = value` conjuncts among `conj` that can contradict each other,
    /// and `col IS NULL` on a NOT NULL column. `column` gives the stored column an operand
    /// reads (`None` for anything else, or a column on a null-supplying side); `fixed` says
    /// whether an operand has one value per execution.
    pub fn add_clashes<'e>(
        &mut self,
        conj: impl IntoIterator<Item = &'e Expr>,
        column: impl Fn(&Expr) -> Option<shoal_store::ColumnDef>,
        fixed: impl Fn(&Expr) -> bool,
    ) {
        use shoal_store::ColumnType;
        // (the column's operand, the first value it is said to equal)
        let mut eqs: Vec<(&Expr, &Expr)> = Vec::new();
        for c in conj {
            match c {
                Expr::IsNull(a, false) if column(a).is_some_and(|col| !col.nullable) => {
                    self.null_in_not_null = true;
                }
                Expr::Binary(BinOp::Eq, a, b) => {
                    let (operand, val, col) = match (column(a), column(b)) {
                        (Some(col), None) if fixed(b) => (&**a, &**b, col),
                        (None, Some(col)) if fixed(a) => (&**b, &**a, col),
                        _ => continue,
                    };
                    let kind_ok = match val {
                        Expr::Literal(Value::Int(_) | Value::UInt(_)) => {
                            matches!(col.ty, ColumnType::Int { .. })
                        }
                        Expr::Literal(Value::Str(_)) => col.ty.is_text(),
                        _ => false,
                    };
                    if !kind_ok {
                        continue;
                    }
                    if let Some((_, first)) = eqs.iter().find(|(o, _)| *o == operand) {
                        self.clashes.push(((*first).clone(), val.clone()));
                    } else {
                        eqs.push((operand, val));
                    }
                }
                _ => {}
            }
        }
    }

    /// Whether there is anything to decide.
    pub fn is_empty(&self) -> bool {
        !self.null_in_not_null && self.guards.is_empty() && self.clashes.is_empty()
    }
}

/// An aggregate call with its result slot.
#[derive(Debug)]
pub(crate) struct BoundAgg {
    pub func: AggFunc,
    pub arg: Option<Expr>,
    pub distinct: bool,
    pub slot: usize,
    /// GROUP_CONCAT's ORDER BY (bound) and separator.
    pub concat: Option<Box<shoal_sql::ast::ConcatSpec>>,
}

/// The join tree of a SELECT block.
#[derive(Debug)]
pub(crate) enum Source {
    /// No FROM: one empty row.
    OneRow,
    /// `SelectPlan::leaves[i]`.
    Leaf(usize),
    /// Nested loop: every row of `left`, then every row of `right` that passes `on`; with
    /// `left_join`, a left row without a match once with `null_slots` set to NULL.
    Join {
        left: Box<Source>,
        right: Box<Source>,
        left_join: bool,
        on: Option<Expr>,
        null_slots: Vec<Range<usize>>,
    },
}

/// A row source of the FROM clause.
#[derive(Debug)]
pub(crate) struct Leaf {
    pub kind: LeafKind,
    /// The name queries use for it (alias or table name), for EXPLAIN.
    pub name: String,
    /// Its columns' slots.
    pub slots: Range<usize>,
    /// Conjuncts checked on each of its rows.
    pub filter: Option<Expr>,
    /// How a stored table is read.
    pub access: Access,
    /// `filter` without the conjuncts `access` enforces by itself
    /// ([`crate::plan::enforced_conjuncts`]): what a row read by the path needs checked when
    /// its values resolve to exact keys. `None` when the path enforces no conjunct.
    pub rest: Option<Option<Expr>>,
    /// The keys its conjuncts could read a stored table by (EXPLAIN's `possible_keys`).
    pub possible: Vec<crate::plan::KeyName>,
    /// Inside the right side of a LEFT JOIN (its rows may be null-extended).
    pub null_side: bool,
    /// Equi-join keys for a hash join: (an expression of this leaf's slots, an expression of
    /// earlier leaves' slots) from `own = other` conjuncts of `filter`. Set when the leaf is read whole on
    /// every visit (no index serves it): its rows are then read once per execution and looked
    /// up by these keys (see `run.rs`, "Hash joins").
    pub hash: Vec<(Expr, Expr)>,
}

pub(crate) enum LeafKind {
    Table {
        def: Arc<TableDef>,
        lock: LockMode,
    },
    /// An information_schema table, materialised per execution.
    System {
        name: String,
    },
    /// A table of [`SystemTables`], read at each execution.
    Provided {
        db: String,
        name: String,
        from: Arc<dyn SystemTables>,
    },
    Derived(Box<QNode>),
    /// A recursive CTE, materialised per execution.
    Recursive(Box<RecursivePlan>),
    /// The work table of the recursive CTE with this id: the previous round's rows.
    Work(usize),
}

/// A recursive CTE: the anchor runs once, then the steps run over the rows the previous round
/// added (the work table [`LeafKind::Work`] with `id`), until a round adds none or
/// `max_recursive_iterations` rounds ran (MariaDB stops there without an error).
#[derive(Debug)]
pub(crate) struct RecursivePlan {
    pub id: usize,
    pub anchor: Body,
    pub steps: Vec<Body>,
    /// Duplicate rows are dropped (`UNION` joins a step), also across rounds.
    pub distinct: bool,
    /// The columns' types (the anchor's): every step's rows are converted to them.
    pub types: Vec<SqlType>,
}

impl std::fmt::Debug for LeafKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeafKind::Table { def, lock } => write!(f, "Table({}.{}, {lock:?})", def.db, def.name),
            LeafKind::System { name } => write!(f, "System({name})"),
            LeafKind::Provided { db, name, .. } => write!(f, "Provided({db}.{name})"),
            LeafKind::Derived(n) => write!(f, "Derived({n:?})"),
            LeafKind::Recursive(r) => write!(f, "Recursive({r:?})"),
            LeafKind::Work(id) => write!(f, "Work({id})"),
        }
    }
}

/// A subquery of the statement.
#[derive(Debug)]
pub(crate) struct SubPlan {
    pub node: QNode,
    /// Reads slots of an enclosing query: run per outer row (answers cached by outer values
    /// when `memo`).
    pub correlated: bool,
    /// Correlated and stable: its answers are cached by the values of `outer` (see `memo`).
    pub memo: bool,
    /// The enclosing queries' slots it reads.
    pub outer: Vec<usize>,
}
