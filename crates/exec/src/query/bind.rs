//! Name resolution, typing and planning of a query (see the module essay in `mod.rs`).

use std::collections::{BTreeSet, HashMap};
use std::ops::Range;
use std::sync::Arc;

use shoal_sql::ast::{
    Aggregate, BinOp, CastType, ConcatSpec, Expr, JoinCond, JoinKind, Query, QueryBody, QueryItem,
    QuerySelect, RecursiveCte, RowLock, Subquery, SubqueryKind, TableExpr, UnOp,
};
use shoal_sql::decimal::Decimal;
use shoal_sql::eval::static_type;
use shoal_sql::translate::query::restriction_violated;
use shoal_sql::value::{aggregate_type, DateTime, SqlType, Value};
use shoal_sql::SqlError;
use shoal_store::{Engine, LockMode};

use super::*;
use crate::convert::{column_info, sql_type_of, store_err, ColumnInfo};
use crate::plan::{choose_access, conjuncts};
use crate::show;

/// Rebuilds `e`, letting `f` replace any node (it sees parents before children; a replaced
/// node's children are not visited).
pub(crate) fn map_expr(
    e: &Expr,
    f: &mut dyn FnMut(&Expr) -> Result<Option<Expr>, SqlError>,
) -> Result<Expr, SqlError> {
    shoal_sql::depth::with_stack(|| map_level(e, f))
}

fn map_level(
    e: &Expr,
    f: &mut dyn FnMut(&Expr) -> Result<Option<Expr>, SqlError>,
) -> Result<Expr, SqlError> {
    if let Some(x) = f(e)? {
        return Ok(x);
    }
    let mut m = |x: &Expr| -> Result<Box<Expr>, SqlError> { Ok(Box::new(map_expr(x, f)?)) };
    Ok(match e {
        Expr::Literal(_)
        | Expr::Column(_)
        | Expr::Param(_)
        | Expr::SysVar(..)
        | Expr::UserVar(_)
        | Expr::QColumn(..)
        | Expr::Slot(_) => e.clone(),
        Expr::AssignUserVar(n, x) => Expr::AssignUserVar(n.clone(), m(x)?),
        Expr::Unary(op, x) => Expr::Unary(*op, m(x)?),
        Expr::Binary(op, x, y) => Expr::Binary(*op, m(x)?, m(y)?),
        Expr::IsNull(x, n) => Expr::IsNull(m(x)?, *n),
        Expr::IsBool(x, v, n) => Expr::IsBool(m(x)?, *v, *n),
        Expr::InList(x, l, n) => {
            let x = m(x)?;
            let l = l
                .iter()
                .map(|y| m(y).map(|b| *b))
                .collect::<Result<Vec<_>, _>>()?;
            Expr::InList(x, l, *n)
        }
        Expr::Between(x, lo, hi, n) => Expr::Between(m(x)?, m(lo)?, m(hi)?, *n),
        Expr::Like(x, p, esc, n) => Expr::Like(m(x)?, m(p)?, *esc, *n),
        Expr::Case(o, w, el) => {
            let o = o.as_ref().map(|x| m(x)).transpose()?;
            let mut arms = Vec::new();
            for (a, b) in w {
                arms.push((*m(a)?, *m(b)?));
            }
            let el = el.as_ref().map(|x| m(x)).transpose()?;
            Expr::Case(o, arms, el)
        }
        Expr::Function(n, args) => Expr::Function(
            n.clone(),
            args.iter()
                .map(|y| m(y).map(|b| *b))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Expr::Cast(x, t) => Expr::Cast(m(x)?, *t),
        Expr::Aggregate(a) => Expr::Aggregate(Box::new(Aggregate {
            func: a.func,
            arg: a.arg.as_ref().map(|x| m(x).map(|b| *b)).transpose()?,
            distinct: a.distinct,
            concat: match &a.concat {
                None => None,
                Some(c) => Some(Box::new(ConcatSpec {
                    order: c
                        .order
                        .iter()
                        .map(|(x, d)| m(x).map(|b| (*b, *d)))
                        .collect::<Result<_, _>>()?,
                    separator: c.separator.clone(),
                })),
            },
        })),
        Expr::Subquery(s) => {
            let kind = match &s.kind {
                SubqueryKind::In { operand, negated } => SubqueryKind::In {
                    operand: *m(operand)?,
                    negated: *negated,
                },
                SubqueryKind::Compare { operand, op, all } => SubqueryKind::Compare {
                    operand: *m(operand)?,
                    op: *op,
                    all: *all,
                },
                k => k.clone(),
            };
            Expr::Subquery(Box::new(Subquery {
                kind,
                query: s.query.clone(),
                id: s.id,
            }))
        }
    })
}

/// Calls `f` on every node of `e` (subquery operands included, not the subquery's own query).
pub fn visit_expr(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    // map_expr with a visitor that never replaces: one traversal to maintain.
    let _ = map_expr(e, &mut |x| {
        f(x);
        Ok(None)
    });
}

/// `a AND b AND ...` of a list (`None` if empty).
fn and_all(v: Vec<Expr>) -> Option<Expr> {
    v.into_iter()
        .reduce(|a, b| Expr::Binary(BinOp::And, Box::new(a), Box::new(b)))
}

fn unknown_column(q: Option<&str>, name: &str, clause: &str) -> SqlError {
    let full = match q {
        Some(t) => format!("{t}.{name}"),
        None => name.to_string(),
    };
    SqlError::UnknownColumn(full, clause.to_string())
}

fn ambiguous(name: &str, clause: &str) -> SqlError {
    SqlError::coded(
        shoal_errors::ER_NON_UNIQ_ERROR,
        format!("Column '{name}' in {clause} is ambiguous"),
    )
}

/// What a result column of a source looks like.
#[derive(Debug, Clone)]
struct Col {
    name: String,
    slot: usize,
    /// Hidden from unqualified lookup (the second copy of a `USING` column).
    hidden: bool,
}

/// A FROM-clause source as names see it.
#[derive(Debug)]
struct SourceInfo {
    /// The alias, else the table name.
    name: String,
    cols: Vec<Col>,
}

/// One SELECT block being bound: its sources, for name resolution.
#[derive(Debug)]
struct Level {
    sources: Vec<SourceInfo>,
    /// A derived table's top block: names do not resolve outside it.
    barrier: bool,
    /// While an ON clause is bound: the sources of its join, the only ones of this level it
    /// sees (in `FROM a, b JOIN c ON ..` the ON sees `b` and `c`, not `a`, as in MySQL).
    visible: Option<Range<usize>>,
}

/// The context of an expression: which clause (for 1054's message), whether aggregates may
/// appear, and the select list's aliases (HAVING and GROUP BY fall back to them).
struct Clause<'x> {
    name: &'static str,
    aggs: bool,
    aliases: &'x [(String, Expr)],
}

impl Clause<'_> {
    fn plain(name: &'static str) -> Clause<'static> {
        Clause {
            name,
            aggs: false,
            aliases: &[],
        }
    }
}

/// A subquery being bound: slots below `first_slot` belong to enclosing queries.
struct SubFrame {
    first_slot: usize,
    outer: BTreeSet<usize>,
    /// Something in it may answer differently for the same outer values (see
    /// [`varies_within_statement`]): its answers are not cached (`super::memo`).
    volatile: bool,
}

/// Whether `c` reads no column (nor outer column), subquery or aggregate, nor anything that
/// varies as it is evaluated (`RAND()`, user variables assigned): one value per execution.
pub(crate) fn fixed_in_statement(c: &Expr) -> bool {
    let mut fixed = crate::plan::is_row_independent(c);
    visit_expr(c, &mut |x| {
        fixed &= !matches!(x, Expr::Slot(_) | Expr::Subquery(_) | Expr::Aggregate(_))
            && (matches!(x, Expr::UserVar(_)) || !varies_within_statement(x));
    });
    fixed
}

/// Whether `e` itself (not its children) may give a different value each time it is evaluated
/// in one statement, or reads state that is not an outer slot: RAND, UUID, SLEEP and the like,
/// and user variables (read or assigned).
fn varies_within_statement(e: &Expr) -> bool {
    match e {
        Expr::UserVar(_) | Expr::AssignUserVar(..) => true,
        // Function names are upper case from translation on.
        Expr::Function(name, _) => matches!(
            name.as_str(),
            "RAND"
                | "UUID"
                | "UUID_SHORT"
                | "SLEEP"
                | "BENCHMARK"
                | "GET_LOCK"
                | "RELEASE_LOCK"
                | "RELEASE_ALL_LOCKS"
                | "IS_FREE_LOCK"
                | "IS_USED_LOCK"
                | "SYSDATE"
                | "LAST_INSERT_ID"
                | "RANDOM_BYTES"
                | "NEXTVAL"
                | "LASTVAL"
                | "SETVAL"
        ),
        _ => false,
    }
}

struct Binder<'e> {
    store: &'e Engine,
    /// Tables other subsystems provide.
    system: Option<Arc<dyn SystemTables>>,
    db: Option<String>,
    nslots: usize,
    /// Per slot: SQL type, and the column description when it is a source column.
    slot_types: Vec<SqlType>,
    slot_info: Vec<Option<ColumnInfo>>,
    subs: Vec<Option<SubPlan>>,
    /// First result column type of each subquery (scalar subqueries' type).
    sub_types: Vec<SqlType>,
    levels: Vec<Level>,
    /// Aggregates of the SELECT blocks being bound (innermost last).
    aggs: Vec<Vec<BoundAgg>>,
    frames: Vec<SubFrame>,
    tables: Vec<(String, String, Arc<TableDef>)>,
    /// Every reference to a stored table: (database, name, alias or name).
    refs: Vec<(String, String, String)>,
    /// Tables of other subsystems read (database, name as written).
    provided: Vec<(String, String)>,
    /// The work tables of the recursive CTEs whose steps are being bound, innermost last.
    work: Vec<WorkDef>,
    /// Work tables numbered so far.
    works: usize,
}

/// The work table of a recursive CTE, while its steps are bound.
struct WorkDef {
    name: String,
    id: usize,
    /// Its columns: name, type, description.
    cols: Vec<(String, SqlType, ColumnInfo)>,
}

/// A FROM-clause leaf as bound: read whole until the planner narrows a stored table's access
/// and pushes conjuncts into it.
fn whole_leaf(kind: LeafKind, name: &str, slots: Range<usize>, null_side: bool) -> Leaf {
    Leaf {
        kind,
        name: name.to_string(),
        slots,
        filter: None,
        access: Access::FullScan,
        rest: None,
        possible: Vec::new(),
        null_side,
        hash: Vec::new(),
    }
}

/// Applies a CTE's column list to a query's column names (4002 when the counts differ).
fn rename_columns(names: &mut [String], columns: &[String]) -> Result<(), SqlError> {
    if columns.is_empty() {
        return Ok(());
    }
    if columns.len() != names.len() {
        return Err(SqlError::coded(
            shoal_errors::ER_WITH_COL_WRONG_LIST,
            "WITH column list and SELECT field list have different column counts",
        ));
    }
    names.clone_from_slice(columns);
    Ok(())
}

/// Whether a bound body groups rows (a recursive CTE's step must not: 4008).
fn groups(b: &Body) -> bool {
    match b {
        Body::Select(s) => s.grouped,
        Body::Query(q) => groups(&q.body),
        Body::SetOp { left, right, .. } => groups(left) || groups(right),
    }
}

/// A bound query with its result columns.
struct Bound {
    node: QNode,
    names: Vec<String>,
    infos: Vec<ColumnInfo>,
}

fn lock_mode(l: RowLock) -> LockMode {
    match l {
        RowLock::None => LockMode::None,
        RowLock::Share => LockMode::Shared,
        RowLock::Update => LockMode::Exclusive,
    }
}

/// A value of type `ty` (to type an expression through `static_type`).
pub(crate) fn sample(ty: SqlType) -> Value {
    match ty {
        SqlType::Null => Value::Null,
        SqlType::Int => Value::Int(0),
        SqlType::UInt => Value::UInt(0),
        SqlType::Decimal(s) => Value::Decimal(Decimal {
            mant: 0,
            scale: u32::from(s),
        }),
        SqlType::Double => Value::Double(0.0),
        SqlType::Str => Value::Str(String::new()),
        SqlType::Bytes => Value::Bytes(Vec::new()),
        SqlType::Date => Value::Date(DateTime::from_unix(0, 0)),
        SqlType::DateTime(n) => Value::DateTime(DateTime::from_unix(0, 0), n),
        SqlType::Time(n) => Value::Time(shoal_sql::temporal::Time::from_micros(0, n)),
    }
}

/// Binds and plans `q`; unqualified tables are in `db`; `system` provides the tables of other
/// subsystems.
pub fn prepare(
    store: &Engine,
    system: Option<&Arc<dyn SystemTables>>,
    q: &Query,
    db: Option<&str>,
) -> Result<QueryPlan, SqlError> {
    let mut b = Binder {
        store,
        system: system.cloned(),
        db: db.map(str::to_string),
        nslots: 0,
        slot_types: Vec::new(),
        slot_info: Vec::new(),
        subs: Vec::new(),
        sub_types: Vec::new(),
        levels: Vec::new(),
        aggs: Vec::new(),
        frames: Vec::new(),
        tables: Vec::new(),
        refs: Vec::new(),
        provided: Vec::new(),
        work: Vec::new(),
        works: 0,
    };
    let bound = b.query(q, false, lock_mode(q.lock))?;
    let param_typed = select_items_use_params(&q.body);
    let columns = bound
        .infos
        .into_iter()
        .zip(bound.names)
        .map(|(mut i, n)| {
            i.name = n;
            i
        })
        .collect();
    let mut plan = QueryPlan {
        columns,
        root: bound.node,
        subqueries: b
            .subs
            .into_iter()
            .map(|s| s.expect("every subquery is bound"))
            .collect(),
        slots: b.nslots,
        read: Vec::new(),
        tables: b.tables,
        refs: b.refs,
        provided: b.provided,
        param_typed,
    };
    plan.read = super::decode::read_slots(&plan);
    let read = std::mem::take(&mut plan.read);
    covering_scans(&mut plan.root, &read);
    for sp in &mut plan.subqueries {
        covering_scans(&mut sp.node, &read);
    }
    plan.read = read;
    if plan.subqueries.is_empty() {
        mark_moves(&mut plan.root);
    }
    Ok(plan)
}

/// Marks the items a SELECT block's projection may move out of the frame instead of copying
/// (`SelectPlan::moves`): a bare column of a block that reads one source and does not group,
/// which no other item and no ORDER BY expression reads. Such a block puts each row of its
/// source in the frame, evaluates WHERE, then projects; after the projection only the other
/// items and the sort keys read the frame, and the next row overwrites it. A block joining
/// sources keeps the outer rows' values in the frame across inner rows, and a grouped block
/// keeps first rows: neither moves. Only for plans without subqueries (a correlated one reads
/// the frame from inside an item). Spares a copy (an allocation for a string) per column per
/// row: `SELECT c FROM t WHERE id BETWEEN ...`.
fn mark_moves(n: &mut QNode) {
    match &mut n.body {
        Body::Select(s) => {
            // `ORDER BY c` where `c` is also a bare item: the item's value is the key, so
            // the key is that output column (read from the row, not the frame).
            if !s.grouped {
                for (k, _) in &mut n.order {
                    if let SortKey::Expr(Expr::Slot(slot)) = k {
                        let same = |e: &Expr| matches!(e, Expr::Slot(x) if x == slot);
                        if let Some(i) = s.items.iter().position(same) {
                            *k = SortKey::Output(i);
                        }
                    }
                }
            }
            mark_select_moves(s, &n.order)
        }
        Body::Query(q) => mark_moves(q),
        Body::SetOp { .. } => {}
    }
}

fn mark_select_moves(s: &mut SelectPlan, order: &[(SortKey, bool)]) {
    for leaf in &mut s.leaves {
        if let LeafKind::Derived(q) = &mut leaf.kind {
            mark_moves(q);
        }
    }
    if s.grouped || !matches!(s.from, Source::Leaf(_)) {
        return;
    }
    let mut reads: HashMap<usize, usize> = HashMap::new();
    let exprs = s
        .items
        .iter()
        .chain(order.iter().filter_map(|(k, _)| match k {
            SortKey::Expr(e) => Some(e),
            SortKey::Output(_) => None,
        }));
    for e in exprs {
        visit_expr(e, &mut |x| {
            if let Expr::Slot(slot) = x {
                *reads.entry(*slot).or_default() += 1;
            }
        });
    }
    s.moves = s
        .items
        .iter()
        .map(|e| matches!(e, Expr::Slot(slot) if reads.get(slot) == Some(&1)))
        .collect();
}

/// Full scans that a secondary index covers become full scans of that index: the store then
/// reads its entries alone, never the rows (`TableDef::index_covers`; EXPLAIN's `type` is
/// `index`, its Extra `Using index`). Of the covering indexes, one whose order is ORDER BY's
/// (a lone table: the sort goes, LIMIT stops the read), unless the primary key's already is;
/// else the one with the narrowest entries, if narrower than a row (MariaDB's shortest covering
/// key). Only for plain reads (a locking read locks rows), of leaves not joined by hash (read
/// whole elsewhere).
fn covering_scans(n: &mut QNode, read: &[bool]) {
    match &mut n.body {
        Body::Select(s) => covering_select(s, read, &n.order),
        b => covering_body(b, read),
    }
}

fn covering_body(b: &mut Body, read: &[bool]) {
    match b {
        Body::Select(s) => covering_select(s, read, &[]),
        Body::Query(q) => covering_scans(q, read),
        Body::SetOp { left, right, .. } => {
            covering_body(left, read);
            covering_body(right, read);
        }
    }
}

fn covering_select(s: &mut SelectPlan, read: &[bool], order: &[(SortKey, bool)]) {
    use crate::plan::{key_len, record_len, BoundExpr, KeyName};
    // ORDER BY's columns, when a key read in order can give them (one table, one direction).
    let direction = order.first().map(|(_, d)| *d);
    let sorted: Option<Vec<Option<Expr>>> = (!order.is_empty()
        && matches!(s.from, Source::Leaf(_))
        && !s.grouped
        && !s.distinct
        && order.iter().all(|(_, d)| Some(*d) == direction))
    .then(|| {
        order
            .iter()
            .map(|(k, _)| super::run::sort_expr(s, k).cloned())
            .collect()
    });
    for leaf in &mut s.leaves {
        match &mut leaf.kind {
            LeafKind::Derived(q) => covering_scans(q, read),
            LeafKind::Recursive(r) => {
                covering_body(&mut r.anchor, read);
                r.steps.iter_mut().for_each(|st| covering_body(st, read));
            }
            LeafKind::Table { def, lock } => {
                if *lock != LockMode::None
                    || !leaf.hash.is_empty()
                    || leaf.access != Access::FullScan
                {
                    continue;
                }
                let def = def.clone();
                let leaf_ref: &Leaf = leaf;
                let want = &read[leaf.slots.clone()];
                // Bytes per row read: an entry holds its key and the primary key (an InnoDB row
                // id of 6 bytes without one); a primary-key scan reads rows.
                let pk_len = match &def.primary_key {
                    Some(pk) => key_len(&def, &KeyName::Primary, pk.len()),
                    None => 6,
                };
                let entry_len = |ix: &shoal_store::IndexDef| {
                    let name = KeyName::Index(ix.name.clone());
                    key_len(&def, &name, ix.columns.len()) + pk_len
                };
                let covering = def.indexes.iter().filter(|ix| def.index_covers(ix, want));
                let in_order = |cols: &[usize], name: &KeyName| {
                    sorted.as_ref().is_some_and(|e| {
                        let e: Vec<Option<&Expr>> = e.iter().map(Option::as_ref).collect();
                        super::run::follows_key(leaf_ref, &def, &e, cols, 0, name)
                    })
                };
                let pk = def.primary_key.clone().unwrap_or_default();
                if !pk.is_empty() && in_order(&pk, &KeyName::Primary) {
                    continue;
                }
                let ordered = covering
                    .clone()
                    .filter(|ix| in_order(&ix.columns, &KeyName::Index(ix.name.clone())))
                    .min_by_key(|ix| entry_len(ix));
                let best = ordered.or_else(|| {
                    covering
                        .min_by_key(|ix| entry_len(ix))
                        .filter(|ix| entry_len(ix) < record_len(&def))
                });
                if let Some(name) = best.map(|ix| ix.name.clone()) {
                    leaf.access = Access::Range {
                        key: KeyName::Index(name),
                        prefix: Vec::new(),
                        lo: BoundExpr::Unbounded,
                        hi: BoundExpr::Unbounded,
                    };
                }
            }
            _ => {}
        }
    }
}

/// Whether a SELECT list of `body` (any member of a set operation) has a `?` in an expression:
/// then the result columns' types are only known once the parameters are bound.
fn select_items_use_params(body: &QueryBody) -> bool {
    match body {
        QueryBody::Select(s) => s.items.iter().any(|it| match it {
            QueryItem::Expr { expr, .. } => {
                let mut found = false;
                visit_expr(expr, &mut |e| found |= matches!(e, Expr::Param(_)));
                found
            }
            QueryItem::Wildcard(_) => false,
        }),
        QueryBody::SetOp { left, right, .. } => {
            select_items_use_params(left) || select_items_use_params(right)
        }
        QueryBody::Query(q) => select_items_use_params(&q.body),
    }
}

/// The result columns of a query whose expression columns' types depend on its `?`s
/// (`SELECT ? + 1`), typed by the values of this execution, as MariaDB describes them when the
/// parameters are bound: a computed column takes its first non-NULL value's type where that
/// differs from the type guessed at PREPARE (columns of stored tables never change).
pub(crate) fn typed_by_values(columns: &[ColumnInfo], rows: &[Vec<Value>]) -> Vec<ColumnInfo> {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if !c.org_table.is_empty() {
                return c.clone();
            }
            let first = rows.iter().filter_map(|r| r.get(i)).find(|v| !v.is_null());
            match first.map(Value::sql_type) {
                Some(ty) if ty != info_type(c) => ColumnInfo::expr(&c.name, ty),
                _ => c.clone(),
            }
        })
        .collect()
}

impl Binder<'_> {
    fn alloc(&mut self, ty: SqlType, info: Option<ColumnInfo>) -> usize {
        self.nslots += 1;
        self.slot_types.push(ty);
        self.slot_info.push(info);
        self.nslots - 1
    }

    /// The static type of a bound expression.
    fn type_of(&self, e: &Expr) -> SqlType {
        if let Expr::Slot(s) = e {
            return self.slot_types[*s];
        }
        let typed = map_expr(e, &mut |x| {
            Ok(match x {
                Expr::Slot(s) => Some(Expr::Literal(sample(self.slot_types[*s]))),
                Expr::Subquery(q) if q.kind == SubqueryKind::Scalar => {
                    Some(Expr::Literal(sample(self.sub_types[q.id])))
                }
                Expr::Subquery(_) => Some(Expr::Literal(Value::Int(0))),
                _ => None,
            })
        });
        typed.map(|t| static_type(&t)).unwrap_or(SqlType::Str)
    }

    /// The result description of a bound select item.
    fn info_of(&self, e: &Expr, name: &str) -> ColumnInfo {
        if let Expr::Slot(s) = e {
            if let Some(i) = &self.slot_info[*s] {
                let mut i = i.clone();
                i.name = name.to_string();
                return i;
            }
        }
        let mut info = ColumnInfo::expr(name, self.type_of(e));
        if info.column_type == crate::convert::mysql_type::DOUBLE {
            info.decimals = self.real_decimals(e);
        }
        info
    }

    /// The decimals a DOUBLE result of `e` is shown with (31: not fixed, all the digits the
    /// value needs), as MariaDB derives them: a FLOAT(M,D) / DOUBLE(M,D) column has D, an
    /// integer 0, a DECIMAL its scale, a plain FLOAT/DOUBLE or a string none fixed; `+ - *`
    /// keep the larger of their operands', `/` adds 4 (`div_precision_increment`'s default,
    /// as the static DECIMAL types do), `-x`, ABS and the choosing functions (IF, IFNULL,
    /// COALESCE, GREATEST, LEAST, CASE) keep their arguments' largest. So `f * 2` on a
    /// FLOAT(7,2) shows `2.48`, not the single-precision value's 17 digits.
    fn real_decimals(&self, e: &Expr) -> u8 {
        use crate::convert::mysql_type as t;
        const NOT_FIXED: u8 = 31;
        let most = |xs: &mut dyn Iterator<Item = &Expr>| {
            xs.map(|x| self.real_decimals(x)).max().unwrap_or(NOT_FIXED)
        };
        let d = match e {
            Expr::Slot(s) => match &self.slot_info[*s] {
                Some(i) => match i.column_type {
                    t::FLOAT | t::DOUBLE | t::NEWDECIMAL => i.decimals,
                    t::TINY | t::SHORT | t::LONG | t::INT24 | t::LONGLONG => 0,
                    _ => NOT_FIXED,
                },
                None => match self.slot_types[*s] {
                    SqlType::Int | SqlType::UInt | SqlType::Null => 0,
                    SqlType::Decimal(sc) => sc,
                    _ => NOT_FIXED,
                },
            },
            Expr::Literal(v) => match v {
                Value::Int(_) | Value::UInt(_) | Value::Null => 0,
                Value::Decimal(x) => u8::try_from(x.scale).unwrap_or(NOT_FIXED),
                _ => NOT_FIXED,
            },
            Expr::Unary(UnOp::Neg, a) => self.real_decimals(a),
            Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => {
                self.real_decimals(a).max(self.real_decimals(b))
            }
            Expr::Binary(BinOp::Div, a, b) => {
                let m = self.real_decimals(a).max(self.real_decimals(b));
                if m >= NOT_FIXED {
                    NOT_FIXED
                } else {
                    m + 4
                }
            }
            Expr::Function(name, args) => match name.as_str() {
                "ABS" if args.len() == 1 => self.real_decimals(&args[0]),
                "IF" if args.len() == 3 => most(&mut args[1..].iter()),
                "IFNULL" | "COALESCE" | "GREATEST" | "LEAST" => most(&mut args.iter()),
                _ => NOT_FIXED,
            },
            Expr::Case(_, whens, els) => {
                most(&mut whens.iter().map(|(_, r)| r).chain(els.as_deref()))
            }
            _ => NOT_FIXED,
        };
        d.min(NOT_FIXED)
    }

    fn query(&mut self, q: &Query, barrier: bool, lock: LockMode) -> Result<Bound, SqlError> {
        let (body, names, infos, order) = match &q.body {
            QueryBody::Select(s) => {
                let (sel, names, infos, order) = self.select(s, &q.order_by, barrier, lock)?;
                (Body::Select(sel), names, infos, order)
            }
            other => {
                let (mut body, names, infos) = self.body(other, barrier, lock)?;
                if let Body::SetOp { types, .. } = &body {
                    let types = types.clone();
                    chain_types(&mut body, &types);
                }
                let mut order = Vec::new();
                for (e, desc) in &q.order_by {
                    order.push((output_key(e, &names, None)?, *desc));
                }
                (body, names, infos, order)
            }
        };
        let limit = q
            .limit
            .as_ref()
            .map(|e| self.expr(e, &Clause::plain("field list")))
            .transpose()?;
        let offset = q
            .offset
            .as_ref()
            .map(|e| self.expr(e, &Clause::plain("field list")))
            .transpose()?;
        Ok(Bound {
            node: QNode {
                body,
                order,
                limit,
                offset,
                width: names.len(),
            },
            names,
            infos,
        })
    }

    /// A UNION member or parenthesized query (ORDER BY handled by the caller).
    fn body(
        &mut self,
        b: &QueryBody,
        barrier: bool,
        lock: LockMode,
    ) -> Result<(Body, Vec<String>, Vec<ColumnInfo>), SqlError> {
        match b {
            QueryBody::Select(s) => {
                let (sel, names, infos, _) = self.select(s, &[], barrier, lock)?;
                Ok((Body::Select(sel), names, infos))
            }
            QueryBody::Query(q) => {
                let bound = self.query(q, barrier, lock)?;
                Ok((Body::Query(Box::new(bound.node)), bound.names, bound.infos))
            }
            QueryBody::SetOp {
                op,
                all,
                left,
                right,
            } => {
                let (l, names, linfos) = self.body(left, barrier, lock)?;
                let (r, rnames, rinfos) = self.body(right, barrier, lock)?;
                if names.len() != rnames.len() {
                    return Err(SqlError::coded(
                        shoal_errors::ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT,
                        "The used SELECT statements have a different number of columns",
                    ));
                }
                // Each column's type aggregates the members' (MySQL: INT with DECIMAL(10,2) is
                // DECIMAL(.., 2), a number with a string or a date is a string); the first
                // member's description stays where the type does not change.
                let mut types = Vec::new();
                let mut infos = Vec::new();
                for (i, (li, ri)) in linfos.into_iter().zip(&rinfos).enumerate() {
                    let lt = info_type(&li);
                    let ty = aggregate_type(lt, info_type(ri));
                    types.push(ty);
                    infos.push(if ty == lt {
                        li
                    } else {
                        ColumnInfo::expr(&names[i], ty)
                    });
                }
                Ok((
                    Body::SetOp {
                        op: *op,
                        all: *all,
                        left: Box::new(l),
                        right: Box::new(r),
                        types,
                    },
                    names,
                    infos,
                ))
            }
        }
    }

    #[allow(clippy::type_complexity)]
    fn select(
        &mut self,
        s: &QuerySelect,
        order_by: &[(Expr, bool)],
        barrier: bool,
        lock: LockMode,
    ) -> Result<
        (
            Box<SelectPlan>,
            Vec<String>,
            Vec<ColumnInfo>,
            Vec<(SortKey, bool)>,
        ),
        SqlError,
    > {
        self.levels.push(Level {
            sources: Vec::new(),
            barrier,
            visible: None,
        });
        self.aggs.push(Vec::new());
        let r = self.select_in_level(s, order_by, lock);
        self.levels.pop();
        let aggs = self.aggs.pop().unwrap_or_default();
        let (mut sel, names, infos, order) = r?;
        sel.grouped = !sel.group_by.is_empty() || !aggs.is_empty();
        sel.aggs = aggs;
        Ok((sel, names, infos, order))
    }

    #[allow(clippy::type_complexity)]
    fn select_in_level(
        &mut self,
        s: &QuerySelect,
        order_by: &[(Expr, bool)],
        lock: LockMode,
    ) -> Result<
        (
            Box<SelectPlan>,
            Vec<String>,
            Vec<ColumnInfo>,
            Vec<(SortKey, bool)>,
        ),
        SqlError,
    > {
        let first_slot = self.nslots;
        let mut leaves: Vec<Leaf> = Vec::new();
        let mut pooled: Vec<Expr> = Vec::new();
        let mut star: Vec<usize> = Vec::new();
        let mut from = Source::OneRow;
        for (i, te) in s.from.iter().enumerate() {
            let (src, st) = self.table_expr(te, &mut leaves, &mut pooled, false, lock)?;
            star.extend(st);
            from = if i == 0 {
                src
            } else {
                Source::Join {
                    left: Box::new(from),
                    right: Box::new(src),
                    left_join: false,
                    on: None,
                    null_slots: Vec::new(),
                }
            };
        }
        let slots = first_slot..self.nslots;

        // The select list.
        let mut items = Vec::new();
        let mut names = Vec::new();
        let mut infos = Vec::new();
        let mut aliases: Vec<(String, Expr)> = Vec::new();
        for it in &s.items {
            match it {
                QueryItem::Wildcard(None) => {
                    if s.from.is_empty() {
                        return Err(SqlError::coded(
                            shoal_errors::ER_NO_TABLES_USED,
                            "No tables used",
                        ));
                    }
                    for &slot in &star {
                        let info = self.slot_info[slot].clone().expect("source column");
                        names.push(info.name.clone());
                        infos.push(info);
                        items.push(Expr::Slot(slot));
                    }
                }
                QueryItem::Wildcard(Some(t)) => {
                    let level = self.levels.last().expect("level");
                    let src = level
                        .sources
                        .iter()
                        .find(|x| x.name == *t)
                        .or_else(|| {
                            level
                                .sources
                                .iter()
                                .find(|x| x.name.eq_ignore_ascii_case(t))
                        })
                        .ok_or_else(|| {
                            SqlError::coded(
                                shoal_errors::ER_BAD_TABLE_ERROR,
                                format!("Unknown table '{t}'"),
                            )
                        })?;
                    let slots: Vec<usize> = src.cols.iter().map(|c| c.slot).collect();
                    for slot in slots {
                        let info = self.slot_info[slot].clone().expect("source column");
                        names.push(info.name.clone());
                        infos.push(info);
                        items.push(Expr::Slot(slot));
                    }
                }
                QueryItem::Expr {
                    expr,
                    name,
                    aliased,
                } => {
                    let b = self.expr(
                        expr,
                        &Clause {
                            name: "field list",
                            aggs: true,
                            aliases: &[],
                        },
                    )?;
                    infos.push(self.info_of(&b, name));
                    names.push(name.clone());
                    if *aliased {
                        aliases.push((name.clone(), b.clone()));
                    }
                    items.push(b);
                }
            }
        }

        let filter = s
            .filter
            .as_ref()
            .map(|f| self.expr(f, &Clause::plain("where clause")))
            .transpose()?;
        let mut group_by = Vec::new();
        for g in &s.group_by {
            group_by.push(match position(g) {
                Some(n) => items
                    .get(n.wrapping_sub(1))
                    .cloned()
                    .ok_or_else(|| unknown_column(None, &n.to_string(), "group statement"))?,
                None => self.expr(
                    g,
                    &Clause {
                        name: "group statement",
                        aggs: false,
                        aliases: &aliases,
                    },
                )?,
            });
        }
        // WITH ROLLUP: a super-aggregate row NULLs the grouping columns it rolls up, so each
        // must be a column (a slot) the select list and HAVING read.
        let rollup = if s.rollup {
            let slots = group_by
                .iter()
                .map(|g| match g {
                    Expr::Slot(n) => Ok(*n),
                    _ => Err(SqlError::Unsupported(
                        "WITH ROLLUP over a GROUP BY expression that is not a column".into(),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Some(slots)
        } else {
            None
        };
        let having = s
            .having
            .as_ref()
            .map(|h| {
                self.expr(
                    h,
                    &Clause {
                        name: "having clause",
                        aggs: true,
                        aliases: &aliases,
                    },
                )
            })
            .transpose()?;
        let mut order = Vec::new();
        for (e, desc) in order_by {
            let key = match output_key(e, &names, Some(&aliases)) {
                Ok(k) => k,
                Err(_) => SortKey::Expr(self.expr(
                    e,
                    &Clause {
                        name: "order clause",
                        aggs: true,
                        aliases: &aliases,
                    },
                )?),
            };
            order.push((key, *desc));
        }

        // Push WHERE and inner-join ON conjuncts down to the leaves.
        let mut exec_order = Vec::new();
        leaf_order(&from, &mut exec_order);
        let mut residual = Vec::new();
        let mut all: Vec<Expr> = pooled;
        let mut impossible = Impossible::default();
        if let Some(f) = &filter {
            let mut rest = Vec::new();
            for c in conjuncts(f) {
                if self.is_guard(c) {
                    impossible.guards.push(c.clone());
                } else {
                    rest.push(c.clone());
                }
            }
            self.find_clashes(&rest, &leaves, &mut impossible);
            all.extend(rest);
        }
        let refs_of: Vec<Vec<usize>> = all.iter().map(|c| self.slots_of(c)).collect();
        // Join order, for inner joins only (outer joins keep theirs): the order that costs
        // least by the store's estimates (see `join_order`).
        if leaves.len() > 1 && all_inner(&from) {
            let placed = join_order(self.store, &leaves, &exec_order, &all, &refs_of)?;
            if placed != exec_order {
                from = placed
                    .iter()
                    .map(|&l| Source::Leaf(l))
                    .reduce(|a, b| Source::Join {
                        left: Box::new(a),
                        right: Box::new(b),
                        left_join: false,
                        on: None,
                        null_slots: Vec::new(),
                    })
                    .expect("leaves");
                exec_order = placed;
            }
        }
        // EXPLAIN's possible_keys: the keys any conjunct on a leaf restricts, the other
        // leaves' columns taken as constants (whichever order the leaves run in).
        for leaf in leaves.iter_mut() {
            if let LeafKind::Table { def, .. } = &leaf.kind {
                let own = leaf.slots.clone();
                let mine: Vec<Expr> = all
                    .iter()
                    .zip(&refs_of)
                    .filter(|(_, r)| r.iter().any(|s| own.contains(s)))
                    .map(|(c, _)| c.clone())
                    .collect();
                if let Some(f) = and_all(mine) {
                    let form = map_expr(&f, &mut |x| {
                        Ok(match x {
                            Expr::Slot(s) if own.contains(s) => {
                                Some(Expr::Column(def.columns[*s - own.start].name.clone()))
                            }
                            _ => None,
                        })
                    })?;
                    leaf.possible = crate::plan::possible_keys(def, Some(&form));
                }
            }
        }
        for (c, refs) in all.into_iter().zip(refs_of) {
            let target = exec_order
                .iter()
                .rev()
                .find(|&&l| refs.iter().any(|s| leaves[l].slots.contains(s)))
                .or(exec_order.first())
                .copied();
            match target {
                Some(l) if !leaves[l].null_side => push_filter(&mut leaves[l].filter, c),
                _ => residual.push(c),
            }
        }
        for leaf in &mut leaves {
            if let LeafKind::Table { def, .. } = &leaf.kind {
                if let Some(f) = &leaf.filter {
                    let base = leaf.slots.start;
                    let range = leaf.slots.clone();
                    let access_form = map_expr(f, &mut |x| {
                        Ok(match x {
                            Expr::Slot(s) if range.contains(s) => {
                                Some(Expr::Column(def.columns[*s - base].name.clone()))
                            }
                            _ => None,
                        })
                    })?;
                    leaf.access = choose_access(def, Some(&access_form));
                    let enforced = crate::plan::enforced_conjuncts(def, &leaf.access, &access_form);
                    if enforced.contains(&true) {
                        let kept = conjuncts(f)
                            .into_iter()
                            .zip(&enforced)
                            .filter(|(_, e)| !**e)
                            .map(|(c, _)| c.clone())
                            .collect();
                        leaf.rest = Some(and_all(kept));
                    }
                    if leaf.possible.is_empty() {
                        // Conjuncts not pooled above (a LEFT JOIN's ON).
                        leaf.possible = crate::plan::possible_keys(def, Some(&access_form));
                    }
                }
            }
        }
        // Hash joins: a leaf read whole on every visit, with `own column = expression of
        // earlier leaves` conjuncts, is read once and probed by those keys.
        for (pos, &l) in exec_order.iter().enumerate() {
            let leaf = &leaves[l];
            let whole = match &leaf.kind {
                LeafKind::Table { .. } => matches!(leaf.access, Access::FullScan),
                // A work table changes every round of its recursive CTE: never kept.
                LeafKind::Work(_) => false,
                _ => true,
            };
            if pos == 0 || !whole {
                continue;
            }
            let Some(f) = &leaf.filter else { continue };
            let mut keys = Vec::new();
            for c in conjuncts(f) {
                let Expr::Binary(BinOp::Eq, x, y) = c else {
                    continue;
                };
                let pure = |e: &Expr| {
                    let mut pure = true;
                    visit_expr(e, &mut |x| {
                        if matches!(x, Expr::Subquery(_)) {
                            pure = false;
                        }
                    });
                    pure
                };
                for (own, other) in [(x, y), (y, x)] {
                    let (mine, theirs) = (self.slots_of(own), self.slots_of(other));
                    if pure(own)
                        && pure(other)
                        && !mine.is_empty()
                        && mine.iter().all(|r| leaf.slots.contains(r))
                        && !theirs.is_empty()
                        && theirs.iter().all(|r| !leaf.slots.contains(r))
                    {
                        keys.push(((**own).clone(), (**other).clone()));
                        break;
                    }
                }
            }
            leaves[l].hash = keys;
        }
        let plan = SelectPlan {
            from,
            leaves,
            filter: and_all(residual),
            grouped: false,
            group_by,
            rollup,
            aggs: Vec::new(),
            having,
            items,
            moves: Vec::new(),
            distinct: s.distinct,
            slots,
            impossible,
        };
        Ok((Box::new(plan), names, infos, order))
    }

    /// Whether a WHERE conjunct is the same for every row and every part of one execution:
    /// no column (nor outer column), subquery, aggregate, nor anything that varies as it is
    /// evaluated (`RAND()`, user variables assigned).
    fn is_guard(&self, c: &Expr) -> bool {
        fixed_in_statement(c)
    }

    /// The pairs of `col = value` conjuncts among `conj` that can contradict each other, and
    /// `col IS NULL` on NOT NULL columns (see [`Impossible`]).
    fn find_clashes(&self, conj: &[Expr], leaves: &[Leaf], out: &mut Impossible) {
        // The stored column of a slot, on no null-supplying side.
        let column = |e: &Expr| {
            let Expr::Slot(slot) = *e else { return None };
            leaves.iter().find_map(|l| match &l.kind {
                LeafKind::Table { def, .. } if l.slots.contains(&slot) && !l.null_side => {
                    Some(def.columns[slot - l.slots.start].clone())
                }
                _ => None,
            })
        };
        out.add_clashes(conj, column, |v| self.is_guard(v));
    }

    /// Every slot `e` reads, including the outer slots its subqueries read.
    fn slots_of(&self, e: &Expr) -> Vec<usize> {
        let mut out = Vec::new();
        visit_expr(e, &mut |x| match x {
            Expr::Slot(s) => out.push(*s),
            Expr::Subquery(q) => {
                if let Some(Some(sp)) = self.subs.get(q.id) {
                    out.extend(sp.outer.iter().copied());
                }
            }
            _ => {}
        });
        out
    }

    /// Registers a source in the current level; returns its columns' slots.
    fn add_source(
        &mut self,
        name: &str,
        cols: Vec<(String, SqlType, ColumnInfo)>,
    ) -> (Range<usize>, usize) {
        let start = self.nslots;
        let mut out = Vec::new();
        for (n, ty, info) in cols {
            let slot = self.alloc(ty, Some(info));
            out.push(Col {
                name: n,
                slot,
                hidden: false,
            });
        }
        let level = self.levels.last_mut().expect("level");
        level.sources.push(SourceInfo {
            name: name.to_string(),
            cols: out,
        });
        (start..self.nslots, level.sources.len() - 1)
    }

    /// Binds one FROM item: returns its join tree and its `*` columns, in order.
    fn table_expr(
        &mut self,
        te: &TableExpr,
        leaves: &mut Vec<Leaf>,
        pooled: &mut Vec<Expr>,
        null_side: bool,
        lock: LockMode,
    ) -> Result<(Source, Vec<usize>), SqlError> {
        match te {
            TableExpr::Table { db, name, alias } => {
                let d = db
                    .clone()
                    .or_else(|| self.db.clone())
                    .ok_or(SqlError::NoDatabase)?;
                let shown = alias.clone().unwrap_or_else(|| name.clone());
                let provided = self
                    .system
                    .as_ref()
                    .and_then(|sys| sys.get(&d, name).map(|t| (sys.clone(), t)));
                let (kind, cols) = if let Some((from, (names, rows))) = provided {
                    // Types from the values (a provided table has no declared types).
                    let cols = names
                        .iter()
                        .enumerate()
                        .map(|(i, n)| {
                            let ty = rows
                                .iter()
                                .map(|r| r[i].sql_type())
                                .find(|t| *t != SqlType::Null)
                                .unwrap_or(SqlType::Str);
                            let mut info = ColumnInfo::expr(n, ty);
                            info.table = shown.clone();
                            info.org_table = name.clone();
                            info.schema = d.clone();
                            info.org_name = n.clone();
                            (n.clone(), ty, info)
                        })
                        .collect();
                    self.provided.push((d.clone(), name.clone()));
                    (
                        LeafKind::Provided {
                            db: d.clone(),
                            name: name.clone(),
                            from,
                        },
                        cols,
                    )
                } else if d.eq_ignore_ascii_case("information_schema") {
                    let (names, infos, _) = show::info_schema(self.store, name)?;
                    let cols = names
                        .into_iter()
                        .zip(infos)
                        .map(|(n, mut i)| {
                            i.table = shown.clone();
                            let ty = i.sql_type();
                            (n, ty, i)
                        })
                        .collect();
                    (LeafKind::System { name: name.clone() }, cols)
                } else {
                    let def = self.store.table(&d, name).map_err(store_err)?;
                    self.tables.push((d.clone(), name.clone(), def.clone()));
                    self.refs.push((d.clone(), name.clone(), shown.clone()));
                    let cols = def
                        .columns
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            let info = column_info(
                                &d,
                                &shown,
                                &c.name,
                                c,
                                crate::session::key_flags(&def, i),
                            );
                            (c.name.clone(), sql_type_of(c.ty), info)
                        })
                        .collect();
                    (LeafKind::Table { def, lock }, cols)
                };
                let (slots, _) = self.add_source(&shown, cols);
                leaves.push(whole_leaf(kind, &shown, slots.clone(), null_side));
                Ok((Source::Leaf(leaves.len() - 1), slots.collect()))
            }
            TableExpr::Derived {
                query,
                alias,
                columns,
            } => {
                let mut bound = self.query(query, true, LockMode::None)?;
                rename_columns(&mut bound.names, columns)?;
                let cols = bound
                    .names
                    .iter()
                    .zip(&bound.infos)
                    .enumerate()
                    .map(|(i, (n, info))| {
                        let mut info = info.clone();
                        info.name = n.clone();
                        info.table = alias.clone();
                        info.schema = String::new();
                        let ty = self.derived_type(&bound.node, i, &info);
                        (n.clone(), ty, info)
                    })
                    .collect();
                let (slots, _) = self.add_source(alias, cols);
                leaves.push(whole_leaf(
                    LeafKind::Derived(Box::new(bound.node)),
                    alias,
                    slots.clone(),
                    null_side,
                ));
                Ok((Source::Leaf(leaves.len() - 1), slots.collect()))
            }
            TableExpr::Recursive { cte, alias } => {
                let (kind, cols) = self.recursive(cte, alias)?;
                let (slots, _) = self.add_source(alias, cols);
                leaves.push(whole_leaf(kind, alias, slots.clone(), null_side));
                Ok((Source::Leaf(leaves.len() - 1), slots.collect()))
            }
            TableExpr::WorkTable { name, alias } => {
                let w = self
                    .work
                    .iter()
                    .rev()
                    .find(|w| w.name == *name)
                    .ok_or_else(|| SqlError::NoSuchTable(String::new(), name.clone()))?;
                if null_side {
                    // The recursive reference on the null-supplying side of an outer join.
                    return Err(restriction_violated(name));
                }
                let id = w.id;
                let cols = w
                    .cols
                    .iter()
                    .map(|(n, ty, info)| {
                        let mut info = info.clone();
                        info.table = alias.clone();
                        (n.clone(), *ty, info)
                    })
                    .collect();
                let (slots, _) = self.add_source(alias, cols);
                leaves.push(whole_leaf(
                    LeafKind::Work(id),
                    alias,
                    slots.clone(),
                    null_side,
                ));
                Ok((Source::Leaf(leaves.len() - 1), slots.collect()))
            }
            TableExpr::Join {
                left,
                right,
                kind,
                cond,
            } => {
                let first_source = self.levels.last().expect("level").sources.len();
                let (l, lstar) = self.table_expr(
                    left,
                    leaves,
                    pooled,
                    null_side || *kind == JoinKind::Right,
                    lock,
                )?;
                let mid_source = self.levels.last().expect("level").sources.len();
                let (r, rstar) = self.table_expr(
                    right,
                    leaves,
                    pooled,
                    null_side || *kind == JoinKind::Left,
                    lock,
                )?;
                let end_source = self.levels.last().expect("level").sources.len();
                let (cond_expr, star) = match cond {
                    JoinCond::None => (None, [lstar, rstar].concat()),
                    JoinCond::On(e) => {
                        let level = self.levels.last_mut().expect("level");
                        let outer = level.visible.replace(first_source..end_source);
                        let on = self.expr(e, &Clause::plain("on clause"));
                        self.levels.last_mut().expect("level").visible = outer;
                        (Some(on?), [lstar, rstar].concat())
                    }
                    JoinCond::Using(cols) => self.using(
                        cols,
                        first_source..mid_source,
                        mid_source..end_source,
                        *kind,
                        &lstar,
                        &rstar,
                    )?,
                    JoinCond::Natural => {
                        let lnames = self.visible_names(first_source..mid_source);
                        let rnames = self.visible_names(mid_source..end_source);
                        let common: Vec<String> = lnames
                            .into_iter()
                            .filter(|n| rnames.iter().any(|r| r.eq_ignore_ascii_case(n)))
                            .collect();
                        if common.is_empty() {
                            // Still a natural join: a RIGHT one lists the right side first, as
                            // with shared columns (see `using`).
                            let star = if *kind == JoinKind::Right {
                                [rstar, lstar].concat()
                            } else {
                                [lstar, rstar].concat()
                            };
                            (None, star)
                        } else {
                            self.using(
                                &common,
                                first_source..mid_source,
                                mid_source..end_source,
                                *kind,
                                &lstar,
                                &rstar,
                            )?
                        }
                    }
                };
                let src = match kind {
                    JoinKind::Inner => {
                        let mut on = None;
                        if let Some(c) = cond_expr {
                            if null_side {
                                on = Some(c);
                            } else {
                                pooled.extend(conjuncts(&c).into_iter().cloned());
                            }
                        }
                        Source::Join {
                            left: Box::new(l),
                            right: Box::new(r),
                            left_join: false,
                            on,
                            null_slots: Vec::new(),
                        }
                    }
                    JoinKind::Left | JoinKind::Right => {
                        let (outer, inner) = if *kind == JoinKind::Left {
                            (l, r)
                        } else {
                            (r, l)
                        };
                        let mut null_slots = Vec::new();
                        leaf_slots(&inner, leaves, &mut null_slots);
                        let on = match (&inner, cond_expr) {
                            (Source::Leaf(i), Some(c)) => {
                                push_filter(&mut leaves[*i].filter, c);
                                None
                            }
                            (_, c) => c,
                        };
                        Source::Join {
                            left: Box::new(outer),
                            right: Box::new(inner),
                            left_join: true,
                            on,
                            null_slots,
                        }
                    }
                };
                Ok((src, star))
            }
        }
    }

    /// The type a derived table's column has: its select item's type.
    /// A recursive CTE read as `alias`: its plan and its columns. The anchor members decide
    /// the columns' names and types; the steps are bound with the work table in scope.
    #[allow(clippy::type_complexity)]
    fn recursive(
        &mut self,
        cte: &RecursiveCte,
        alias: &str,
    ) -> Result<(LeafKind, Vec<(String, SqlType, ColumnInfo)>), SqlError> {
        let (mut anchor, mut names, infos) = self.body(&cte.anchor, true, LockMode::None)?;
        if let Body::SetOp { types, .. } = &anchor {
            let types = types.clone();
            chain_types(&mut anchor, &types);
        }
        rename_columns(&mut names, &cte.columns)?;
        let cols: Vec<(String, SqlType, ColumnInfo)> = names
            .iter()
            .zip(&infos)
            .map(|(n, info)| {
                let mut info = info.clone();
                info.name = n.clone();
                info.table = cte.name.clone();
                info.schema = String::new();
                (n.clone(), info_type(&info), info)
            })
            .collect();
        let types: Vec<SqlType> = cols.iter().map(|c| c.1).collect();
        let id = self.works;
        self.works += 1;
        self.work.push(WorkDef {
            name: cte.name.clone(),
            id,
            cols: cols.clone(),
        });
        let steps = cte
            .steps
            .iter()
            .map(|st| {
                let (b, step_names, _) = self.body(st, true, LockMode::None)?;
                if step_names.len() != names.len() {
                    return Err(SqlError::coded(
                        shoal_errors::ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT,
                        "The used SELECT statements have a different number of columns",
                    ));
                }
                if groups(&b) {
                    return Err(restriction_violated(&cte.name));
                }
                Ok(b)
            })
            .collect::<Result<Vec<_>, SqlError>>();
        self.work.pop();
        let plan = RecursivePlan {
            id,
            anchor,
            steps: steps?,
            distinct: cte.distinct,
            types,
        };
        let cols = cols
            .into_iter()
            .map(|(n, ty, mut info)| {
                info.table = alias.to_string();
                (n, ty, info)
            })
            .collect();
        Ok((LeafKind::Recursive(Box::new(plan)), cols))
    }

    fn derived_type(&self, _node: &QNode, _i: usize, info: &ColumnInfo) -> SqlType {
        info_type(info)
    }

    fn visible_names(&self, sources: Range<usize>) -> Vec<String> {
        let level = self.levels.last().expect("level");
        level.sources[sources]
            .iter()
            .flat_map(|s| s.cols.iter().filter(|c| !c.hidden).map(|c| c.name.clone()))
            .collect()
    }

    /// The one visible column `name` among `sources` (1054 / 1052 otherwise).
    fn find_in(&self, sources: Range<usize>, name: &str) -> Result<(usize, usize), SqlError> {
        let level = self.levels.last().expect("level");
        let mut found = None;
        for si in sources {
            for (ci, c) in level.sources[si].cols.iter().enumerate() {
                if !c.hidden && c.name.eq_ignore_ascii_case(name) {
                    if found.is_some() {
                        return Err(ambiguous(name, "from clause"));
                    }
                    found = Some((si, ci));
                }
            }
        }
        found.ok_or_else(|| unknown_column(None, name, "from clause"))
    }

    /// `USING (cols)`: the equalities, the second copies hidden, and `*`'s column order, as
    /// MySQL and MariaDB list it: the shared columns first, in the order of the first table
    /// (not of the USING list), then the first table's other columns, then the second's. A
    /// RIGHT JOIN runs as a LEFT JOIN with its sides swapped, so there the right side is the
    /// first table.
    fn using(
        &mut self,
        cols: &[String],
        lsources: Range<usize>,
        rsources: Range<usize>,
        kind: JoinKind,
        lstar: &[usize],
        rstar: &[usize],
    ) -> Result<(Option<Expr>, Vec<usize>), SqlError> {
        let mut eqs = Vec::new();
        let mut shared = Vec::new();
        let mut drop_slots = Vec::new();
        for name in cols {
            let (ls, lc) = self.find_in(lsources.clone(), name)?;
            let (rs, rc) = self.find_in(rsources.clone(), name)?;
            let level = self.levels.last_mut().expect("level");
            let lslot = level.sources[ls].cols[lc].slot;
            let rslot = level.sources[rs].cols[rc].slot;
            eqs.push(Expr::Binary(
                BinOp::Eq,
                Box::new(Expr::Slot(lslot)),
                Box::new(Expr::Slot(rslot)),
            ));
            // The copy from the side that is never NULL-extended is the one names see.
            if kind == JoinKind::Right {
                level.sources[ls].cols[lc].hidden = true;
                shared.push(rslot);
            } else {
                level.sources[rs].cols[rc].hidden = true;
                shared.push(lslot);
            }
            drop_slots.push(lslot);
            drop_slots.push(rslot);
        }
        let (first, second) = if kind == JoinKind::Right {
            (rstar, lstar)
        } else {
            (lstar, rstar)
        };
        let pos = |s: &usize| first.iter().position(|x| x == s).unwrap_or(usize::MAX);
        shared.sort_by_key(pos);
        let mut star = shared;
        star.extend(
            first
                .iter()
                .chain(second)
                .filter(|s| !drop_slots.contains(s)),
        );
        Ok((and_all(eqs), star))
    }

    /// Resolves a column name: this block's sources, then enclosing blocks' (a correlated
    /// reference), then the select list's aliases where the clause allows.
    fn resolve(
        &mut self,
        q: Option<&str>,
        name: &str,
        clause: &Clause<'_>,
    ) -> Result<Expr, SqlError> {
        for li in (0..self.levels.len()).rev() {
            let level = &self.levels[li];
            let mut found: Option<usize> = None;
            for (si, src) in level.sources.iter().enumerate() {
                if level.visible.as_ref().is_some_and(|v| !v.contains(&si)) {
                    continue;
                }
                let matches_src = match q {
                    None => true,
                    Some(t) => src.name == t || src.name.eq_ignore_ascii_case(t),
                };
                if !matches_src {
                    continue;
                }
                for c in &src.cols {
                    if (q.is_some() || !c.hidden) && c.name.eq_ignore_ascii_case(name) {
                        if found.is_some() && found != Some(c.slot) {
                            return Err(ambiguous(name, clause.name));
                        }
                        found = Some(c.slot);
                    }
                }
            }
            if let Some(slot) = found {
                for f in &mut self.frames {
                    if slot < f.first_slot {
                        f.outer.insert(slot);
                    }
                }
                return Ok(Expr::Slot(slot));
            }
            if li + 1 == self.levels.len() && q.is_none() {
                // HAVING / GROUP BY may name a select-list alias of this block.
                if let Some((_, e)) = clause
                    .aliases
                    .iter()
                    .find(|(a, _)| a.eq_ignore_ascii_case(name))
                {
                    return Ok(e.clone());
                }
            }
            if level.barrier {
                break;
            }
        }
        Err(unknown_column(q, name, clause.name))
    }

    /// Binds an expression of the current block.
    /// Binds an expression of the current block, with IF / IFNULL / COALESCE / CASE results
    /// of their MySQL type ([`type_results`]).
    fn expr(&mut self, e: &Expr, clause: &Clause<'_>) -> Result<Expr, SqlError> {
        let b = self.bind_names(e, clause)?;
        let typed = type_results(&b, &mut |x| self.type_of(x))?;
        self.float_texts(&typed)
    }

    /// The decimals of a FLOAT-typed bound expression (a FLOAT column, MIN/MAX of one, a
    /// derived table's FLOAT column: a slot described as FLOAT; 31 for none fixed); `None`
    /// for every other expression (`f * 1`, `IFNULL(f, 0)` are DOUBLEs, as in MariaDB).
    fn float_decimals(&self, e: &Expr) -> Option<u8> {
        let Expr::Slot(s) = e else { return None };
        self.slot_info[*s]
            .as_ref()
            .filter(|i| i.column_type == crate::convert::mysql_type::FLOAT)
            .map(|i| i.decimals)
    }

    /// `e` (bound) with each FLOAT that is read as a string (an argument of CONCAT, LIKE,
    /// CAST AS CHAR, LENGTH .. and, through their `CAST(.. AS CHAR)`, the results of an IF or
    /// CASE of string type) converted to a FLOAT's text first (`CastType::FloatText`): what
    /// MariaDB shows (`1.1`, `123457`, FLOAT(7,2)'s `1.10`), not the double's digits.
    fn float_texts(&self, e: &Expr) -> Result<Expr, SqlError> {
        let text = |x: &Expr| -> Result<Expr, SqlError> {
            let x = self.float_texts(x)?;
            Ok(match self.float_decimals(&x) {
                Some(d) => Expr::Cast(Box::new(x), CastType::FloatText(d)),
                None => x,
            })
        };
        map_expr(e, &mut |x| {
            Ok(Some(match x {
                Expr::Like(a, p, esc, neg) => {
                    Expr::Like(Box::new(text(a)?), Box::new(text(p)?), *esc, *neg)
                }
                Expr::Cast(a, t @ (CastType::Char | CastType::Binary | CastType::BinaryN(_))) => {
                    Expr::Cast(Box::new(text(a)?), *t)
                }
                Expr::Function(name, args)
                    if (0..args.len()).any(|i| shoal_sql::func::string::reads_text(name, i)) =>
                {
                    let args = args
                        .iter()
                        .enumerate()
                        .map(|(i, a)| {
                            if shoal_sql::func::string::reads_text(name, i) {
                                text(a)
                            } else {
                                self.float_texts(a)
                            }
                        })
                        .collect::<Result<_, _>>()?;
                    Expr::Function(name.clone(), args)
                }
                _ => return Ok(None),
            }))
        })
    }

    /// GROUP_CONCAT's argument as the text it joins: a FLOAT's as MariaDB shows it.
    fn concat_text(&self, arg: Expr) -> Expr {
        match self.float_decimals(&arg) {
            Some(d) => Expr::Cast(Box::new(arg), CastType::FloatText(d)),
            None => arg,
        }
    }

    /// Names (and aggregates, subqueries) bound; see [`Binder::expr`].
    fn bind_names(&mut self, e: &Expr, clause: &Clause<'_>) -> Result<Expr, SqlError> {
        map_expr(e, &mut |x| {
            if varies_within_statement(x) {
                // Every enclosing subquery's answer may vary with it.
                for f in &mut self.frames {
                    f.volatile = true;
                }
            }
            Ok(Some(match x {
                Expr::QColumn(q, name) => self.resolve(q.as_deref(), name, clause)?,
                Expr::Column(name) => self.resolve(None, name, clause)?,
                Expr::Aggregate(a) => {
                    if !clause.aggs || self.aggs.is_empty() {
                        return Err(SqlError::coded(
                            shoal_errors::ER_INVALID_GROUP_FUNC_USE,
                            "Invalid use of group function",
                        ));
                    }
                    let arg = a
                        .arg
                        .as_ref()
                        .map(|x| {
                            self.expr(
                                x,
                                &Clause {
                                    name: clause.name,
                                    aggs: false,
                                    aliases: &[],
                                },
                            )
                        })
                        .transpose()?;
                    let ty = self.type_of(&Expr::Aggregate(Box::new(Aggregate {
                        func: a.func,
                        arg: arg.clone(),
                        distinct: a.distinct,
                        concat: None,
                    })));
                    let concat = match &a.concat {
                        None => None,
                        Some(c) => {
                            let mut order = Vec::new();
                            for (x, desc) in &c.order {
                                let inner = Clause {
                                    name: "order clause",
                                    aggs: false,
                                    aliases: &[],
                                };
                                order.push((self.expr(x, &inner)?, *desc));
                            }
                            Some(Box::new(ConcatSpec {
                                order,
                                separator: c.separator.clone(),
                            }))
                        }
                    };
                    // MIN/MAX of a DATETIME/TIMESTAMP column keep its fractional digits, of
                    // a FLOAT column its type (single precision's digits), of a DOUBLE(M,D)
                    // its D decimals.
                    let info = match (a.func, &arg) {
                        (AggFunc::Min | AggFunc::Max, Some(Expr::Slot(n))) => self.slot_info[*n]
                            .as_ref()
                            .filter(|i| {
                                use crate::convert::mysql_type::{
                                    DATETIME, DOUBLE, FLOAT, TIMESTAMP,
                                };
                                matches!(i.column_type, DATETIME | TIMESTAMP | FLOAT | DOUBLE)
                            })
                            .map(|i| {
                                let mut x = ColumnInfo::expr("", ty);
                                x.column_type = i.column_type;
                                x.decimals = i.decimals;
                                x.column_length = i.column_length;
                                x
                            }),
                        // SUM and AVG of a real show its decimals (AVG 4 more), as MariaDB.
                        (AggFunc::Sum | AggFunc::Avg, Some(x)) if ty == SqlType::Double => {
                            let d = self.real_decimals(x);
                            let mut i = ColumnInfo::expr("", ty);
                            i.decimals = match a.func {
                                AggFunc::Avg if d < 31 => (d + 4).min(31),
                                _ => d,
                            };
                            Some(i)
                        }
                        _ => None,
                    };
                    let arg = match a.func {
                        AggFunc::GroupConcat => arg.map(|x| self.concat_text(x)),
                        _ => arg,
                    };
                    let slot = self.alloc(ty, info);
                    self.aggs
                        .last_mut()
                        .expect("aggregate scope")
                        .push(BoundAgg {
                            func: a.func,
                            arg,
                            distinct: a.distinct,
                            slot,
                            concat,
                        });
                    Expr::Slot(slot)
                }
                Expr::Subquery(s) => self.subquery(s, clause)?,
                _ => return Ok(None),
            }))
        })
    }

    fn subquery(&mut self, s: &Subquery, clause: &Clause<'_>) -> Result<Expr, SqlError> {
        let kind = match &s.kind {
            SubqueryKind::In { operand, negated } => SubqueryKind::In {
                operand: self.expr(operand, clause)?,
                negated: *negated,
            },
            SubqueryKind::Compare { operand, op, all } => SubqueryKind::Compare {
                operand: self.expr(operand, clause)?,
                op: *op,
                all: *all,
            },
            k => k.clone(),
        };
        let id = self.subs.len();
        self.subs.push(None);
        self.sub_types.push(SqlType::Null);
        self.frames.push(SubFrame {
            first_slot: self.nslots,
            outer: BTreeSet::new(),
            volatile: false,
        });
        // An aggregate inside the subquery belongs to the subquery's own blocks.
        let bound = self.query(&s.query, false, LockMode::None);
        let frame = self.frames.pop().expect("frame");
        let mut bound = bound?;
        // A UNION under IN / EXISTS / `= ANY` / `<> ALL` keeps its members' values as they
        // are: MySQL and MariaDB push the equality into each member (IN to EXISTS), so `'a_b'
        // IN (SELECT 0 UNION SELECT 'x')` compares 'a_b' with 0 as numbers, not as the
        // UNION's string column. Scalar subqueries and `<`, `>` .. ANY / ALL (compared with
        // the UNION's MIN / MAX) see the UNION's column type.
        let per_member = match &kind {
            SubqueryKind::Scalar => false,
            SubqueryKind::Compare { op, .. } => matches!(op, BinOp::Eq | BinOp::NotEq),
            _ => true,
        };
        if per_member {
            chain_types(&mut bound.node.body, &[]);
        }
        if kind != SubqueryKind::Exists && bound.node.width != 1 {
            return Err(SqlError::OperandColumns(1));
        }
        self.sub_types[id] = bound
            .infos
            .first()
            .map(|i| self.derived_type(&bound.node, 0, i))
            .unwrap_or(SqlType::Null);
        let outer: Vec<usize> = frame.outer.into_iter().collect();
        self.subs[id] = Some(SubPlan {
            node: bound.node,
            correlated: !outer.is_empty(),
            memo: !outer.is_empty() && !frame.volatile,
            outer,
        });
        Ok(Expr::Subquery(Box::new(Subquery {
            kind,
            query: s.query.clone(),
            id,
        })))
    }
}

/// `ORDER BY 2` or `ORDER BY alias` as an output column (`Err` when it is neither).
fn output_key(
    e: &Expr,
    names: &[String],
    aliases: Option<&[(String, Expr)]>,
) -> Result<SortKey, SqlError> {
    if let Some(n) = position(e) {
        return if n >= 1 && n <= names.len() {
            Ok(SortKey::Output(n - 1))
        } else {
            Err(unknown_column(None, &n.to_string(), "order clause"))
        };
    }
    let name = match e {
        Expr::QColumn(None, n) | Expr::Column(n) => n,
        _ => return Err(unknown_column(None, &e.to_string(), "order clause")),
    };
    let hit = match aliases {
        // A SELECT block: only aliases given with AS name an output column here.
        Some(al) => al
            .iter()
            .position(|(a, _)| a.eq_ignore_ascii_case(name))
            .and_then(|_| names.iter().position(|n| n.eq_ignore_ascii_case(name))),
        None => names.iter().position(|n| n.eq_ignore_ascii_case(name)),
    };
    hit.map(SortKey::Output)
        .ok_or_else(|| unknown_column(None, name, "order clause"))
}

/// An integer literal (a column position in ORDER BY / GROUP BY).
fn position(e: &Expr) -> Option<usize> {
    match e {
        Expr::Literal(Value::Int(i)) => usize::try_from(*i).ok(),
        Expr::Literal(Value::UInt(u)) => usize::try_from(*u).ok(),
        _ => None,
    }
}

/// The value type of a result column as described to clients.
fn info_type(info: &ColumnInfo) -> SqlType {
    use crate::convert::mysql_type as t;
    match info.column_type {
        t::TINY | t::SHORT | t::INT24 | t::LONG | t::LONGLONG => {
            if info.flags & crate::convert::flags::UNSIGNED != 0 {
                SqlType::UInt
            } else {
                SqlType::Int
            }
        }
        t::NEWDECIMAL => SqlType::Decimal(info.decimals),
        t::FLOAT | t::DOUBLE => SqlType::Double,
        t::DATE => SqlType::Date,
        t::DATETIME | t::TIMESTAMP => SqlType::DateTime(info.decimals.min(6)),
        t::TIME => SqlType::Time(info.decimals.min(6)),
        t::NULL => SqlType::Null,
        _ => SqlType::Str,
    }
}

/// Gives every UNION node of a chain (`a UNION b UNION c` nests to the left) the chain's final
/// column types: an inner node's duplicates are then judged, and its rows converted, as the
/// whole UNION's are.
fn chain_types(b: &mut Body, final_types: &[SqlType]) {
    if let Body::SetOp {
        left, right, types, ..
    } = b
    {
        *types = final_types.to_vec();
        chain_types(left, final_types);
        chain_types(right, final_types);
    }
}

fn push_filter(slot: &mut Option<Expr>, c: Expr) {
    *slot = Some(match slot.take() {
        None => c,
        Some(f) => Expr::Binary(BinOp::And, Box::new(f), Box::new(c)),
    });
}

/// Whether a join tree is inner joins only (no LEFT/RIGHT join, no ON kept at a join node).
fn all_inner(s: &Source) -> bool {
    match s {
        Source::OneRow | Source::Leaf(_) => true,
        Source::Join {
            left,
            right,
            left_join,
            on,
            ..
        } => !*left_join && on.is_none() && all_inner(left) && all_inner(right),
    }
}

/// Up to how many leaves the join order is searched exhaustively (over subsets, as
/// System R's planner does for left-deep orders); greedily beyond.
const EXHAUSTIVE_JOIN: usize = 6;

/// What building a hash join's table costs per row, against reading a row: a hash-joined
/// full scan costs this times its rows, plus one probe per row before it. Above 2, so that of
/// two unindexed tables the smaller one is the one hashed (kept in memory).
const HASH_BUILD: f64 = 3.0;

/// The order of the leaves (`from_order`: in FROM order) that reads the fewest rows by the
/// store's estimates: the sum over the leaves of the rows read so far times the rows each
/// leaf's access path reads per visit given the leaves before it (see [`leaf_step`]), a
/// hash-joined full scan [`HASH_BUILD`] times its rows once plus a probe per row before it.
/// Exhaustive up to [`EXHAUSTIVE_JOIN`] leaves, greedy beyond; equal costs go to the better
/// access paths (their ranks summed), then to FROM order.
fn join_order(
    store: &Engine,
    leaves: &[Leaf],
    from_order: &[usize],
    all: &[Expr],
    refs_of: &[Vec<usize>],
) -> Result<Vec<usize>, SqlError> {
    let mut est = Estimates {
        store,
        memo: std::collections::HashMap::new(),
    };
    let sizes: Vec<f64> = leaves
        .iter()
        .map(|lf| match &lf.kind {
            LeafKind::Table { def, .. } => est.range_rows(def, None, &shoal_store::KeyRange::all()),
            _ => UNKNOWN_ROWS,
        })
        .collect();
    let cost_of = |step: &Step, outer: f64| {
        if step.once {
            HASH_BUILD * step.read + outer
        } else {
            outer * step.read
        }
    };
    let n = from_order.len();
    if n <= EXHAUSTIVE_JOIN {
        // The cheapest order of each subset of the leaves (bit k: from_order[k]), built up
        // from the empty one: (cost, summed ranks, rows so far, order).
        type Best = Option<(f64, i32, f64, Vec<usize>)>;
        let mut best: Vec<Best> = vec![None; 1 << n];
        best[0] = Some((0.0, 0, 1.0, Vec::new()));
        for mask in 0..(1usize << n) {
            let Some((cost, ranks, outer, order)) = best[mask].clone() else {
                continue;
            };
            for (k, &l) in from_order.iter().enumerate() {
                if mask & (1 << k) != 0 {
                    continue;
                }
                let step = leaf_step(&mut est, leaves, l, &order, all, refs_of, sizes[l])?;
                let c = cost + cost_of(&step, outer);
                let r = ranks + step.rank;
                let next = mask | (1 << k);
                let better = match &best[next] {
                    None => true,
                    Some((bc, br, ..)) => c < *bc || (c == *bc && r > *br),
                };
                if better {
                    let mut o = order.clone();
                    o.push(l);
                    best[next] = Some((c, r, (outer * step.fanout).max(1.0), o));
                }
            }
        }
        let (.., order) = best[(1 << n) - 1].take().expect("every leaf placed");
        return Ok(order);
    }
    let mut placed: Vec<usize> = Vec::new();
    let mut rest = from_order.to_vec();
    let mut outer = 1.0f64;
    while !rest.is_empty() {
        let mut best: Option<(f64, i32, usize, f64)> = None;
        for (k, &l) in rest.iter().enumerate() {
            let step = leaf_step(&mut est, leaves, l, &placed, all, refs_of, sizes[l])?;
            let cost = cost_of(&step, outer);
            let better = match best {
                None => true,
                Some((c, r, _, _)) => cost < c || (cost == c && step.rank > r),
            };
            if better {
                best = Some((cost, step.rank, k, step.fanout));
            }
        }
        let (_, _, k, fanout) = best.expect("a leaf is left");
        outer = (outer * fanout).max(1.0);
        placed.push(rest.remove(k));
    }
    Ok(placed)
}

/// The store's estimates for one statement's join order, each asked once.
struct Estimates<'e> {
    store: &'e Engine,
    memo: std::collections::HashMap<String, f64>,
}

impl Estimates<'_> {
    /// `Engine::estimate_rows`.
    fn range_rows(
        &mut self,
        def: &TableDef,
        index: Option<&str>,
        r: &shoal_store::KeyRange,
    ) -> f64 {
        let store = self.store;
        *self
            .memo
            .entry(format!("{}.{}:{index:?}:{r:?}", def.db, def.name))
            .or_insert_with(|| store.estimate_rows(def, index, r) as f64)
    }

    /// `Engine::rows_per_key`.
    fn rows_per_key(&mut self, def: &TableDef, index: Option<&str>, parts: usize) -> f64 {
        let store = self.store;
        *self
            .memo
            .entry(format!("{}.{}:{index:?}/{parts}", def.db, def.name))
            .or_insert_with(|| store.rows_per_key(def, index, parts))
    }
}

/// What reading a leaf next costs, for the join order.
struct Step {
    /// The rank of its access path (a point read 100, IN lists 70, key prefixes 50 and up, a
    /// full scan 0): the tie-break.
    rank: i32,
    /// Rows read per visit (per row of the leaves before it), or in all when `once`.
    read: f64,
    /// Read once whatever the rows before it: a full scan joined by hash.
    once: bool,
    /// Rows it adds per row before it.
    fanout: f64,
}

/// Rows assumed for a source that is not a stored table (derived tables, information_schema).
const UNKNOWN_ROWS: f64 = 100.0;

/// The cost of reading leaf `l` once the leaves `placed` are bound: the access path its usable
/// conjuncts give (columns of placed leaves count as constants) and the rows that path reads,
/// from the store's estimates (`Engine::estimate_rows`, `Engine::rows_per_key`): 1 for a
/// point read by a whole unique key, the key's rows per value for an equality prefix (a
/// third of them with a range on the next column), the estimate of a range of constants (a
/// third of the table for other ranges), the whole table (`table_rows`) for a full scan — read
/// once when an equality with a placed leaf makes it a hash join (then about one row per probe).
#[allow(clippy::too_many_arguments)]
fn leaf_step(
    est: &mut Estimates<'_>,
    leaves: &[Leaf],
    l: usize,
    placed: &[usize],
    all: &[Expr],
    refs_of: &[Vec<usize>],
    table_rows: f64,
) -> Result<Step, SqlError> {
    let (access, rank) = leaf_access(leaves, l, placed, all, refs_of)?;
    let LeafKind::Table { def, .. } = &leaves[l].kind else {
        return Ok(Step {
            rank,
            read: UNKNOWN_ROWS,
            once: false,
            fanout: UNKNOWN_ROWS,
        });
    };
    let read = path_rows(est, def, &access, table_rows);
    if access == Access::FullScan && !placed.is_empty() {
        // A hash join when an equality ties it to a placed leaf.
        let own = leaves[l].slots.clone();
        let tied = all.iter().zip(refs_of).any(|(c, r)| {
            matches!(c, Expr::Binary(BinOp::Eq, ..))
                && r.iter().any(|s| own.contains(s))
                && r.iter()
                    .any(|s| placed.iter().any(|&p| leaves[p].slots.contains(s)))
        });
        if tied {
            return Ok(Step {
                rank,
                read,
                once: true,
                fanout: 1.0,
            });
        }
    }
    Ok(Step {
        rank,
        read,
        once: false,
        fanout: read,
    })
}

/// About how many rows `access` reads of `def` per visit (see [`leaf_step`]).
fn path_rows(est: &mut Estimates<'_>, def: &TableDef, access: &Access, table_rows: f64) -> f64 {
    use crate::plan::KeyName;
    let index = |k: &KeyName| match k {
        KeyName::Primary => None,
        KeyName::Index(n) => Some(n.clone()),
    };
    let rows = match access {
        Access::FullScan => table_rows,
        Access::PkPoint(_) => 1.0,
        Access::In { key, list } => {
            list.len() as f64 * est.rows_per_key(def, index(key).as_deref(), 1)
        }
        Access::Union { parts, .. } => parts
            .iter()
            .map(|p| path_rows(est, def, p, table_rows))
            .sum(),
        Access::Range {
            key,
            prefix,
            lo,
            hi,
        } => {
            let ranged = crate::plan::ranged(lo, hi);
            let cols = crate::plan::key_columns(def, key);
            let unique = match key {
                KeyName::Primary => true,
                KeyName::Index(n) => def.index(n).is_some_and(|ix| ix.unique),
            };
            if prefix.len() == cols.len() && unique && !prefix.iter().any(crate::plan::is_null_key)
            {
                1.0
            } else if !prefix.is_empty() {
                let per = est.rows_per_key(def, index(key).as_deref(), prefix.len());
                if ranged {
                    (per / 3.0).max(1.0)
                } else {
                    per
                }
            } else {
                match constant_range(def, access) {
                    Some(r) => est.range_rows(def, index(key).as_deref(), &r),
                    None => table_rows / 3.0,
                }
            }
        }
    };
    rows.min(table_rows).max(1.0)
}

/// The key range of a range path whose bounds are literals (no parameter, variable or column
/// of another table), as storage reads it.
fn constant_range(def: &TableDef, access: &Access) -> Option<shoal_store::KeyRange> {
    use crate::plan::{BoundExpr, Resolved};
    let Access::Range { lo, hi, .. } = access else {
        return None;
    };
    let literal = |b: &BoundExpr| match b {
        BoundExpr::Unbounded => true,
        BoundExpr::Included(e)
        | BoundExpr::Excluded(e)
        | BoundExpr::LikeLo(e, _)
        | BoundExpr::LikeHi(e, _) => matches!(e, Expr::Literal(_)),
    };
    if !literal(lo) || !literal(hi) {
        return None;
    }
    match crate::plan::resolve(access, def, &mut crate::translate::ConstCtx) {
        Ok(Resolved::Range(_, r)) => Some(r),
        _ => None,
    }
}

/// The access path leaf `l`'s usable conjuncts give once the leaves `placed` are bound, and
/// its rank (see [`Step::rank`]; not a stored table: a full scan, 0).
fn leaf_access(
    leaves: &[Leaf],
    l: usize,
    placed: &[usize],
    all: &[Expr],
    refs_of: &[Vec<usize>],
) -> Result<(Access, i32), SqlError> {
    let LeafKind::Table { def, .. } = &leaves[l].kind else {
        return Ok((Access::FullScan, 0));
    };
    let own = leaves[l].slots.clone();
    let bound = |s: &usize| own.contains(s) || placed.iter().any(|&p| leaves[p].slots.contains(s));
    // A slot of a leaf not placed yet makes the conjunct unusable here.
    let unplaced = |s: &usize| leaves.iter().any(|lf| lf.slots.contains(s)) && !bound(s);
    let usable: Vec<Expr> = all
        .iter()
        .zip(refs_of)
        .filter(|(_, r)| r.iter().any(|s| own.contains(s)) && !r.iter().any(unplaced))
        .map(|(c, _)| c.clone())
        .collect();
    let Some(f) = and_all(usable) else {
        return Ok((Access::FullScan, 0));
    };
    let base = own.start;
    let access_form = map_expr(&f, &mut |x| {
        Ok(match x {
            Expr::Slot(s) if own.contains(s) => {
                Some(Expr::Column(def.columns[*s - base].name.clone()))
            }
            _ => None,
        })
    })?;
    let access = choose_access(def, Some(&access_form));
    let rank = match &access {
        Access::PkPoint(_) => 100,
        Access::In { .. } => 70,
        Access::Range { prefix, lo, hi, .. } => {
            let bounded = lo != &crate::plan::BoundExpr::Unbounded
                || hi != &crate::plan::BoundExpr::Unbounded;
            50 + 10 * prefix.len() as i32 + i32::from(bounded) * 5
        }
        Access::Union { .. } => 45,
        Access::FullScan => 0,
    };
    Ok((access, rank))
}

/// Leaves in execution order.
pub(crate) fn leaf_order(s: &Source, out: &mut Vec<usize>) {
    match s {
        Source::OneRow => {}
        Source::Leaf(i) => out.push(*i),
        Source::Join { left, right, .. } => {
            leaf_order(left, out);
            leaf_order(right, out);
        }
    }
}

/// The slots of every leaf under `s`.
fn leaf_slots(s: &Source, leaves: &[Leaf], out: &mut Vec<Range<usize>>) {
    let mut order = Vec::new();
    leaf_order(s, &mut order);
    out.extend(order.into_iter().map(|i| leaves[i].slots.clone()));
}

/// MySQL types IF, IFNULL, COALESCE and CASE by all of their possible results
/// ([`shoal_sql::eval::result_type`]): `IFNULL(int_col, 1.75)` is DECIMAL(.., 2), so 3 shows as
/// `3.00`; `IF(c, 'x', date_col)` is a string, so a date shows as its text. Returns `e` with the
/// results of each such call that have another type converted to it (a CAST), so the values
/// match the column type clients are told; GREATEST and LEAST of temporal values likewise (their
/// precision). `type_of` types a sub-expression as bound.
pub(crate) fn type_results(
    e: &Expr,
    type_of: &mut dyn FnMut(&Expr) -> SqlType,
) -> Result<Expr, SqlError> {
    map_expr(e, &mut |x| match x {
        Expr::Function(name, args)
            if matches!(
                name.as_str(),
                "IF" | "IFNULL" | "COALESCE" | "GREATEST" | "LEAST"
            ) && args.len() > usize::from(name == "IF") =>
        {
            let mut args = args
                .iter()
                .map(|a| type_results(a, type_of))
                .collect::<Result<Vec<_>, _>>()?;
            // IF's first argument is its condition, not a result.
            let first = usize::from(name == "IF");
            let ty = args[first..]
                .iter()
                .map(&mut *type_of)
                .fold(SqlType::Null, aggregate_type);
            // GREATEST and LEAST compare their arguments as the arguments' own types: only
            // temporal values of one kind are given the result's precision (a DATETIME beside
            // a DATETIME(2) shows two digits), which does not change their order.
            let choose = matches!(name.as_str(), "GREATEST" | "LEAST");
            if choose && !matches!(ty, SqlType::DateTime(_) | SqlType::Time(_)) {
                return Ok(Some(Expr::Function(name.clone(), args)));
            }
            for a in &mut args[first..] {
                let own = std::mem::replace(a, Expr::Literal(Value::Null));
                *a = conform(own, ty, type_of);
            }
            Ok(Some(Expr::Function(name.clone(), args)))
        }
        Expr::Case(operand, whens, el) => {
            let operand = operand
                .as_ref()
                .map(|o| type_results(o, type_of).map(Box::new))
                .transpose()?;
            let mut arms = Vec::new();
            for (w, t) in whens {
                arms.push((type_results(w, type_of)?, type_results(t, type_of)?));
            }
            let el = el.as_ref().map(|x| type_results(x, type_of)).transpose()?;
            let ty = arms
                .iter()
                .map(|(_, t)| t)
                .chain(el.as_ref())
                .map(&mut *type_of)
                .fold(SqlType::Null, aggregate_type);
            let arms = arms
                .into_iter()
                .map(|(w, t)| (w, conform(t, ty, type_of)))
                .collect();
            let el = el.map(|x| Box::new(conform(x, ty, type_of)));
            Ok(Some(Expr::Case(operand, arms, el)))
        }
        _ => Ok(None),
    })
}

/// `e` converted to `ty` where its own type differs (NULL needs nothing; integers already
/// read as integers).
fn conform(e: Expr, ty: SqlType, type_of: &mut dyn FnMut(&Expr) -> SqlType) -> Expr {
    let cast = match ty {
        SqlType::Str => CastType::Char,
        SqlType::Bytes => CastType::Binary,
        SqlType::Decimal(s) => CastType::Decimal(s),
        SqlType::Double => CastType::Double,
        SqlType::DateTime(n) => CastType::DateTime(n),
        SqlType::Time(n) => CastType::Time(n),
        _ => return e,
    };
    let own = type_of(&e);
    if own == ty || own == SqlType::Null {
        e
    } else {
        Expr::Cast(Box::new(e), cast)
    }
}
