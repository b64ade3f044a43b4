//! `EXPLAIN SELECT ...`: the bound plan as MariaDB's table — one row per table read, in the
//! order the nested loops read them, with the access path chosen for each.
//!
//! Columns are MariaDB's ten: `id, select_type, table, type, possible_keys, key, key_len, ref,
//! rows, Extra`.
//!
//! * `type` follows the access path: `const` for a point read of constants by the primary key
//!   or every column of a UNIQUE key, `eq_ref` for one that depends on an earlier table, `ref`
//!   for an equality prefix of a key, `range` for ranges, IN lists and unions of ranges,
//!   `index` for a full scan of a key (a covering index, or the primary key when the columns
//!   read are all its own), `ALL` for a full scan of the rows.
//! * `possible_keys`: the keys some conjunct restricts (`plan::possible_keys`); `key_len` the
//!   bytes of the key parts the path uses, counted as MariaDB counts them
//!   (`plan::key_part_len`); `ref` per equality part, `const`, `db.table.column` of an earlier
//!   table, or `func` for another expression of earlier tables.
//! * `rows` is the storage engine's estimate (`Engine::estimate_rows`: counted on a sample of
//!   the key range, scaled by RocksDB's approximate sizes): the rows a full scan reads, the sum
//!   over the ranges of a range path (the constants evaluated now), 1 for a point read, the
//!   key's rows per value (`Engine::rows_per_key`) for a lookup by an earlier table. NULL for
//!   derived tables and other sources. These are not InnoDB's numbers: fixtures mask them.
//! * `Extra`: `Using index condition` where conjuncts on the columns of a secondary index
//!   that the path reads with row fetches remain to be checked, `Using where` for other
//!   conjuncts that remain (an equality a `const` / `eq_ref` / `ref` path serves exactly —
//!   not on strings, binary strings or FLOAT, which MariaDB re-checks — is not one), `Using
//!   index` when the path reads the key's entries alone; MySQL 8's words for a hash join. A
//!   `const` table (its one row read while planning, in MariaDB) shows only `Using index`.
//!   On the first table, `Using filesort` / `Using temporary; Using filesort` when ORDER BY or
//!   GROUP BY is not the order a key is read in, `Using temporary` for DISTINCT
//!   (`sort_words`). MariaDB's inferred `IS NOT NULL` on ref-joined columns (`Using where` on
//!   the outer table), its index-ordered joins and "Impossible WHERE noticed after reading
//!   const tables" (contradicting ranges) are not given.
//! * A SELECT whose WHERE no row can satisfy (`super::Impossible`: a constant conjunct that is
//!   not true, two different values for one column, IS NULL on a NOT NULL column) reads
//!   nothing and is one row without a table: `Impossible WHERE`, as MariaDB shows it.
//! * `col IS NULL` looks up the NULL key: `ref` with ref `const` (on a UNIQUE key too: it holds
//!   any number of NULLs), the IS NULL still checked (`Using index condition` / `Using where`).

use shoal_sql::ast::{BinOp, Expr};
use shoal_sql::eval::Context;
use shoal_sql::value::Value;
use shoal_store::{ColumnType, Engine, KeyRange};

use super::bind::visit_expr;
use super::*;
use crate::convert::ColumnInfo;
use crate::plan::{self as planner, Access, BoundExpr, KeyName, Resolved};

/// The result columns of EXPLAIN.
pub fn columns() -> Vec<ColumnInfo> {
    let mut c = vec![ColumnInfo::int("id")];
    for n in [
        "select_type",
        "table",
        "type",
        "possible_keys",
        "key",
        "key_len",
        "ref",
    ] {
        c.push(ColumnInfo::text(n));
    }
    c.push(ColumnInfo::int("rows"));
    c.push(ColumnInfo::text("Extra"));
    c
}

/// What EXPLAIN reads besides the plan: the store (row estimates) and the session's context
/// (the constants of range paths).
struct Explainer<'e> {
    store: &'e Engine,
    ctx: &'e mut dyn Context,
    out: Vec<Vec<Value>>,
    next_id: i64,
}

/// EXPLAIN's rows for a plan.
pub fn rows(plan: &QueryPlan, store: &Engine, ctx: &mut dyn Context) -> Vec<Vec<Value>> {
    let mut x = Explainer {
        store,
        ctx,
        out: Vec::new(),
        next_id: 1,
    };
    let simple = plan.subqueries.is_empty() && !has_union(&plan.root.body);
    x.node(plan, &plan.root, if simple { "SIMPLE" } else { "PRIMARY" });
    for sp in &plan.subqueries {
        let kind = if sp.correlated {
            "DEPENDENT SUBQUERY"
        } else {
            "SUBQUERY"
        };
        x.node(plan, &sp.node, kind);
    }
    x.out
}

fn has_union(b: &Body) -> bool {
    match b {
        Body::SetOp { .. } => true,
        Body::Query(q) => has_union(&q.body),
        Body::Select(_) => false,
    }
}

/// One EXPLAIN row's values.
#[derive(Default)]
struct Line {
    id: Option<i64>,
    kind: String,
    table: String,
    ty: String,
    possible: Option<String>,
    key: Option<String>,
    key_len: Option<String>,
    reference: Option<String>,
    rows: Option<u64>,
    extra: String,
}

impl Line {
    fn values(self) -> Vec<Value> {
        let opt = |x: Option<String>| x.map(Value::Str).unwrap_or(Value::Null);
        vec![
            self.id.map(Value::Int).unwrap_or(Value::Null),
            Value::Str(self.kind),
            // No table (nothing read): NULL, as MariaDB shows it.
            opt(Some(self.table).filter(|t| !t.is_empty())),
            opt(Some(self.ty).filter(|t| !t.is_empty())),
            opt(self.possible),
            opt(self.key),
            opt(self.key_len),
            opt(self.reference),
            self.rows.map(Value::UInt).unwrap_or(Value::Null),
            Value::Str(self.extra),
        ]
    }
}

fn key_name(k: &KeyName) -> String {
    match k {
        KeyName::Primary => "PRIMARY".to_string(),
        KeyName::Index(n) => n.clone(),
    }
}

impl Explainer<'_> {
    fn node(&mut self, plan: &QueryPlan, n: &QNode, kind: &str) {
        match &n.body {
            Body::Select(s) => self.select(plan, s, kind, &n.order),
            b => self.body(plan, b, kind),
        }
    }

    fn body(&mut self, plan: &QueryPlan, b: &Body, kind: &str) {
        match b {
            Body::Select(s) => self.select(plan, s, kind, &[]),
            Body::Query(q) => self.node(plan, q, kind),
            Body::SetOp {
                op, left, right, ..
            } => {
                let first = self.next_id;
                self.body(plan, left, kind);
                self.body(plan, right, op.name());
                let ids: Vec<String> = (first..self.next_id).map(|i| i.to_string()).collect();
                let word = op.name().to_ascii_lowercase();
                self.out.push(
                    Line {
                        kind: format!("{} RESULT", op.name()),
                        table: format!("<{word}{}>", ids.join(",")),
                        ty: "ALL".into(),
                        ..Line::default()
                    }
                    .values(),
                );
            }
        }
    }

    fn select(&mut self, plan: &QueryPlan, s: &SelectPlan, kind: &str, sort: &[(SortKey, bool)]) {
        let id = self.next_id;
        self.next_id += 1;
        let mut order = Vec::new();
        order_of(&s.from, &mut order);
        let mut sorting = sort_words(s, sort, order.first().copied());
        // Read in ORDER BY's order by the key: a full scan is of the primary key, in order.
        let (sorted, uniform) = sort_shape(s, sort);
        let key_ordered =
            !sort.is_empty() && !s.grouped && !s.distinct && uniform && key_order(s, &sorted);
        // Nothing is read (a guard that fails to evaluate is left to the statement).
        if !s.impossible.is_empty() && s.impossible.decided(self.ctx).unwrap_or(false) {
            self.out.push(
                Line {
                    id: Some(id),
                    kind: kind.into(),
                    extra: "Impossible WHERE".into(),
                    ..Line::default()
                }
                .values(),
            );
            return;
        }
        if order.is_empty() {
            self.out.push(
                Line {
                    id: Some(id),
                    kind: kind.into(),
                    extra: "No tables used".into(),
                    ..Line::default()
                }
                .values(),
            );
        }
        for l in order {
            let leaf = &s.leaves[l];
            let mut line = match &leaf.kind {
                LeafKind::Table { def, .. } => self.table(plan, s, leaf, def, key_ordered),
                _ => Line {
                    ty: "ALL".into(),
                    extra: if leaf.filter.is_some() {
                        "Using where".into()
                    } else {
                        String::new()
                    },
                    ..Line::default()
                },
            };
            if !leaf.hash.is_empty() {
                // MySQL 8's words for a hash join.
                line.extra = if leaf.filter.is_some() {
                    "Using where; Using join buffer (hash join)".into()
                } else {
                    "Using join buffer (hash join)".into()
                };
            }
            if let Some(words) = sorting.take() {
                if !line.extra.is_empty() {
                    line.extra.push_str("; ");
                }
                line.extra.push_str(words);
            }
            line.id = Some(id);
            line.kind = kind.into();
            line.table = match &leaf.kind {
                LeafKind::Derived(_) | LeafKind::Recursive(_) => {
                    format!("<derived:{}>", leaf.name)
                }
                _ => leaf.name.clone(),
            };
            self.out.push(line.values());
        }
        for leaf in &s.leaves {
            match &leaf.kind {
                LeafKind::Derived(n) => self.node(plan, n, "DERIVED"),
                LeafKind::Recursive(r) => {
                    self.body(plan, &r.anchor, "DERIVED");
                    for st in &r.steps {
                        self.body(plan, st, "RECURSIVE UNION");
                    }
                }
                _ => {}
            }
        }
    }

    /// The line of a stored table.
    fn table(
        &mut self,
        plan: &QueryPlan,
        s: &SelectPlan,
        leaf: &Leaf,
        def: &TableDef,
        key_ordered: bool,
    ) -> Line {
        let dep = depends_on_rows(&leaf.access);
        let covered = leaf.hash.is_empty() && covered(plan, leaf);
        let parts = match &leaf.access {
            // A full scan of the primary key's entries (or in its order) uses all of it.
            Access::FullScan if covered || key_ordered => {
                def.primary_key.as_ref().map_or(0, Vec::len)
            }
            a => planner::used_parts(def, a),
        };
        let (ty, key, eq): (&str, Option<KeyName>, &[Expr]) = match &leaf.access {
            Access::FullScan if covered || key_ordered => ("index", Some(KeyName::Primary), &[]),
            Access::FullScan => ("ALL", None, &[]),
            Access::PkPoint(v) if dep => ("eq_ref", Some(KeyName::Primary), v),
            Access::PkPoint(v) => ("const", Some(KeyName::Primary), v),
            Access::Union { key, parts } if or_null(parts).is_some() => {
                let eq = or_null(parts).expect("checked");
                ("ref_or_null", Some(key.clone()), eq)
            }
            Access::In { key, .. } | Access::Union { key, .. } => ("range", Some(key.clone()), &[]),
            Access::Range {
                key,
                prefix,
                lo,
                hi,
            } => {
                let ranged = planner::ranged(lo, hi);
                let unique_whole = match key {
                    KeyName::Primary => false,
                    KeyName::Index(n) => def
                        .index(n)
                        .is_some_and(|ix| ix.unique && ix.columns.len() == prefix.len()),
                    // Any number of rows hold NULL in a UNIQUE key.
                } && !prefix.iter().any(planner::is_null_key);
                match (prefix.is_empty(), ranged) {
                    (true, false) => ("index", Some(key.clone()), &[]),
                    (_, true) => ("range", Some(key.clone()), &[]),
                    _ if unique_whole && dep => ("eq_ref", Some(key.clone()), &prefix[..]),
                    _ if unique_whole => ("const", Some(key.clone()), &prefix[..]),
                    _ => ("ref", Some(key.clone()), &prefix[..]),
                }
            }
        };
        let possible = (!leaf.possible.is_empty()).then(|| {
            leaf.possible
                .iter()
                .map(key_name)
                .collect::<Vec<_>>()
                .join(",")
        });
        let reference = (!eq.is_empty()).then(|| {
            eq.iter()
                .map(|e| reference(s, e))
                .collect::<Vec<_>>()
                .join(",")
        });
        let rows = self.estimate(def, leaf, ty, key.as_ref(), parts);
        let extra = extra(leaf, def, ty, key.as_ref(), eq.len(), covered);
        Line {
            ty: ty.into(),
            possible,
            key_len: key
                .as_ref()
                .map(|k| planner::key_len(def, k, parts).to_string()),
            key: key.as_ref().map(key_name),
            reference,
            rows: Some(rows),
            extra,
            ..Line::default()
        }
    }

    /// The row estimate of a stored leaf (see the module essay).
    fn estimate(
        &mut self,
        def: &TableDef,
        leaf: &Leaf,
        ty: &str,
        key: Option<&KeyName>,
        parts: usize,
    ) -> u64 {
        let index = |k: &KeyName| match k {
            KeyName::Primary => None,
            KeyName::Index(n) => Some(n.clone()),
        };
        match ty {
            "const" | "eq_ref" => return 1,
            "ALL" | "index" => return self.store.estimate_rows(def, None, &KeyRange::all()),
            _ => {}
        }
        let Some(key) = key else {
            return self.store.estimate_rows(def, None, &KeyRange::all());
        };
        if depends_on_rows(&leaf.access) {
            let per = self.store.rows_per_key(def, index(key).as_deref(), parts);
            return per.round() as u64;
        }
        access_rows(self.store, def, &leaf.access, &mut *self.ctx)
    }
}

/// The store's estimate of the rows `access` reads of `def` (its constants evaluated in
/// `ctx`): the sum over its ranges, 1 for a point read, every row for a full scan.
pub(crate) fn access_rows(
    store: &Engine,
    def: &TableDef,
    access: &Access,
    ctx: &mut dyn Context,
) -> u64 {
    let index = |k: &KeyName| match k {
        KeyName::Primary => None,
        KeyName::Index(n) => Some(n.clone()),
    };
    let ranges = match planner::resolve(access, def, ctx) {
        Ok(Resolved::Empty) => return 0,
        Ok(Resolved::PkPoint(_)) => return 1,
        Ok(Resolved::Range(k, r)) => vec![(k, r)],
        Ok(Resolved::Ranges(k, rs)) => rs.into_iter().map(|r| (k.clone(), r)).collect(),
        Ok(Resolved::FullScan) | Err(_) => vec![(KeyName::Primary, KeyRange::all())],
    };
    ranges
        .iter()
        .map(|(k, r)| store.estimate_rows(def, index(k).as_deref(), r))
        .sum::<u64>()
        .max(1)
}

/// A single-table UPDATE or DELETE as EXPLAIN describes it ([`dml_row`]).
pub(crate) struct DmlTarget<'a> {
    /// The table rows change in.
    pub def: &'a TableDef,
    /// The name the statement gives it (its alias, else its name).
    pub shown: &'a str,
    /// The path `Exec::target_rows` reads the rows by.
    pub access: &'a Access,
    /// WHERE.
    pub filter: Option<&'a Expr>,
    /// The columns UPDATE's SET writes; `None` for a DELETE.
    pub sets: Option<Vec<usize>>,
    /// Whether it has an ORDER BY (the rows read are then sorted).
    pub ordered: bool,
    /// Whether it has a LIMIT.
    pub limited: bool,
}

/// EXPLAIN's one row for a single-table UPDATE or DELETE, in MariaDB's words for what
/// `Exec::target_rows` does. `nothing`: no row can match (an impossible WHERE, LIMIT 0);
/// `rows`: the estimate of the rows the access path reads.
///
/// * MariaDB plans these with its range optimizer alone: a key read is `range` (a point
///   read by the primary key too) with `ref` NULL and `Using where` (the whole WHERE is
///   checked on every row, as here); a full scan is `index` on the primary key for UPDATE
///   (InnoDB's scan key) and `ALL` for DELETE or a table without one.
/// * A DELETE without WHERE or LIMIT is `Deleting all rows`, no table: MariaDB's words for
///   removing every row (shoal deletes them one by one through a full scan).
/// * ORDER BY: shoal reads the rows the path gives and sorts them (`Using filesort`),
///   except the one row of a unique point read. UPDATE reads every target row before it
///   changes one (always buffered); it says `Using buffer` where MariaDB does: with ORDER BY
///   and no sort, or when SET changes a column of the key being read (for a full scan, of
///   the primary key), except for a unique point read.
pub(crate) fn dml_row(t: &DmlTarget<'_>, nothing: bool, rows: u64) -> Vec<Value> {
    let line = |l: Line| {
        Line {
            id: Some(1),
            kind: "SIMPLE".into(),
            ..l
        }
        .values()
    };
    if nothing {
        return line(Line {
            extra: "Impossible WHERE".into(),
            ..Line::default()
        });
    }
    if t.sets.is_none() && t.filter.is_none() && !t.limited {
        return line(Line {
            rows: Some(rows),
            extra: "Deleting all rows".into(),
            ..Line::default()
        });
    }
    let (ty, key, parts) = t.path();
    let possible = planner::possible_keys(t.def, t.filter);
    line(Line {
        table: t.shown.to_string(),
        ty: ty.into(),
        possible: (!possible.is_empty())
            .then(|| possible.iter().map(key_name).collect::<Vec<_>>().join(",")),
        key_len: key
            .as_ref()
            .map(|k| planner::key_len(t.def, k, parts).to_string()),
        extra: t.extra(key.as_ref()),
        key: key.as_ref().map(key_name),
        rows: Some(rows),
        ..Line::default()
    })
}

impl DmlTarget<'_> {
    /// EXPLAIN's `type`, the key read and how many of its parts (see [`dml_row`]).
    fn path(&self) -> (&'static str, Option<KeyName>, usize) {
        let pk = self.def.primary_key.as_ref().map_or(0, Vec::len);
        let parts = planner::used_parts(self.def, self.access);
        match self.access {
            Access::FullScan if self.sets.is_some() && pk > 0 => {
                ("index", Some(KeyName::Primary), pk)
            }
            Access::FullScan => ("ALL", None, 0),
            Access::PkPoint(_) => ("range", Some(KeyName::Primary), pk),
            Access::Range {
                key,
                prefix,
                lo,
                hi,
            } if prefix.is_empty() && !planner::ranged(lo, hi) => {
                ("index", Some(key.clone()), parts)
            }
            Access::In { key, .. } | Access::Range { key, .. } | Access::Union { key, .. } => {
                ("range", Some(key.clone()), parts)
            }
        }
    }

    /// Whether the path reads at most one row: a point read of the primary key or of every
    /// column of a UNIQUE key (not its NULL key, which any number of rows hold).
    fn single_row(&self) -> bool {
        match self.access {
            Access::PkPoint(_) => true,
            Access::Range {
                key: KeyName::Index(n),
                prefix,
                lo,
                hi,
            } => {
                !planner::ranged(lo, hi)
                    && !prefix.iter().any(planner::is_null_key)
                    && self
                        .def
                        .index(n)
                        .is_some_and(|ix| ix.unique && ix.columns.len() == prefix.len())
            }
            _ => false,
        }
    }

    /// EXPLAIN's Extra for reading by `key` (see [`dml_row`]).
    fn extra(&self, key: Option<&KeyName>) -> String {
        let single = self.single_row();
        // MariaDB's "used key is modified": SET writes a column of the key read (a secondary
        // key's entries hold the primary key too); a full scan reads the primary key.
        let read_cols = match key {
            Some(k) if !single => {
                let mut cols = planner::key_columns(self.def, k);
                cols.extend(self.def.primary_key.iter().flatten());
                cols
            }
            _ => Vec::new(),
        };
        let key_modified = self
            .sets
            .as_ref()
            .is_some_and(|set| set.iter().any(|c| read_cols.contains(c)));
        let mut words = Vec::new();
        if self.filter.is_some_and(|f| {
            planner::conjuncts(f)
                .into_iter()
                .any(|c| !super::fixed_in_statement(c))
        }) {
            words.push("Using where");
        }
        if self.ordered && !single {
            words.push("Using filesort");
        } else if self.sets.is_some() && (self.ordered || key_modified) {
            words.push("Using buffer");
        }
        words.join("; ")
    }
}

/// What MariaDB's Extra says on a SELECT's first table about ordering its rows: `Using
/// filesort` when ORDER BY is not the order the rows are read in and sorts the first table's
/// columns only, `Using temporary; Using filesort` when it needs the joined rows (columns of
/// other tables), or for GROUP BY not in the order of a key read (MariaDB sorts groups),
/// `Using temporary` for DISTINCT. `None` when the rows come in order (a key read in its
/// order, as `Runner::arrives_in_order` decides at run time from the same rule).
fn sort_words(
    s: &SelectPlan,
    sort: &[(SortKey, bool)],
    first: Option<usize>,
) -> Option<&'static str> {
    let (sorted, uniform) = sort_shape(s, sort);
    if s.grouped && !s.group_by.is_empty() {
        let groups: Vec<Option<&Expr>> = s.group_by.iter().map(Some).collect();
        let same = sort.is_empty() || (uniform && sorted == groups);
        return (!(key_order(s, &groups) && same)).then_some("Using temporary; Using filesort");
    }
    if s.distinct {
        return Some(if sort.is_empty() {
            "Using temporary"
        } else {
            "Using temporary; Using filesort"
        });
    }
    if sort.is_empty() || s.grouped || (uniform && key_order(s, &sorted)) {
        return None;
    }
    let first_only = first.is_some_and(|l| {
        let own = &s.leaves[l].slots;
        sorted.iter().all(|e| {
            let mut ok = true;
            if let Some(e) = e {
                visit_expr(e, &mut |x| {
                    if let Expr::Slot(n) = x {
                        ok &= own.contains(n) || !s.slots.contains(n);
                    }
                });
            }
            ok
        })
    });
    Some(if first_only {
        "Using filesort"
    } else {
        "Using temporary; Using filesort"
    })
}

/// ORDER BY's expressions (`None` for a key that is not a plain expression of the select), and
/// whether every key sorts the same way.
fn sort_shape<'s>(s: &'s SelectPlan, sort: &'s [(SortKey, bool)]) -> (Vec<Option<&'s Expr>>, bool) {
    let sorted = sort
        .iter()
        .map(|(k, _)| super::run::sort_expr(s, k))
        .collect();
    let uniform = sort
        .iter()
        .all(|(_, d)| Some(*d) == sort.first().map(|(_, d)| *d));
    (sorted, uniform)
}

/// Whether a SELECT of one stored table reads its rows in the order of `exprs` by the key
/// its access path reads (see `run::follows_key`), as planned.
fn key_order(s: &SelectPlan, exprs: &[Option<&Expr>]) -> bool {
    let Source::Leaf(l) = s.from else {
        return false;
    };
    let leaf = &s.leaves[l];
    let LeafKind::Table { def, .. } = &leaf.kind else {
        return false;
    };
    if !leaf.hash.is_empty() {
        return false;
    }
    let (key, fixed, name) = match &leaf.access {
        Access::PkPoint(_) => return true,
        Access::FullScan => match &def.primary_key {
            Some(pk) => (pk.clone(), 0, KeyName::Primary),
            None => return false,
        },
        Access::Range { key, prefix, .. } => {
            (planner::key_columns(def, key), prefix.len(), key.clone())
        }
        Access::In { key, .. } | Access::Union { key, .. } => {
            (planner::key_columns(def, key), 0, key.clone())
        }
    };
    super::run::follows_key(leaf, def, exprs, &key, fixed, &name)
}

/// The equality prefix of a union that is `key = values OR last key part IS NULL` (two
/// lookups on one key with the same prefix but for the last part, the NULL key in one of
/// them): MariaDB's `ref_or_null`, whose `ref` is the other lookup's values.
fn or_null(parts: &[Access]) -> Option<&[Expr]> {
    let [Access::Range {
        key: k1,
        prefix: p1,
        lo: BoundExpr::Unbounded,
        hi: BoundExpr::Unbounded,
    }, Access::Range {
        key: k2,
        prefix: p2,
        lo: BoundExpr::Unbounded,
        hi: BoundExpr::Unbounded,
    }] = parts
    else {
        return None;
    };
    let (Some((l1, r1)), Some((l2, r2))) = (p1.split_last(), p2.split_last()) else {
        return None;
    };
    if k1 != k2 || r1 != r2 {
        return None;
    }
    match (planner::is_null_key(l1), planner::is_null_key(l2)) {
        (false, true) => Some(p1),
        (true, false) => Some(p2),
        _ => None,
    }
}

/// EXPLAIN's `ref` for one equality value of a key lookup: `const`, the earlier table's
/// column it is (`db.table.column`, the table by the name the query gives it), or `func`.
fn reference(s: &SelectPlan, e: &Expr) -> String {
    let mut slots = false;
    visit_expr(e, &mut |x| slots |= matches!(x, Expr::Slot(_)));
    if !slots {
        return "const".into();
    }
    if let Expr::Slot(n) = e {
        for l in &s.leaves {
            if let (LeafKind::Table { def, .. }, true) = (&l.kind, l.slots.contains(n)) {
                let col = &def.columns[n - l.slots.start].name;
                return format!("{}.{}.{col}", def.db, l.name);
            }
        }
    }
    "func".into()
}

/// EXPLAIN's Extra for a stored leaf read by `key` as `ty`, `eq` key parts fixed by
/// equalities (see the module essay).
fn extra(
    leaf: &Leaf,
    def: &TableDef,
    ty: &str,
    key: Option<&KeyName>,
    eq: usize,
    covered: bool,
) -> String {
    let own = leaf.slots.clone();
    let key_cols = key
        .map(|k| planner::key_columns(def, k))
        .unwrap_or_default();
    // A conjunct `own key column = value` that the lookup serves exactly.
    let served = |c: &Expr| -> bool {
        if !matches!(ty, "const" | "eq_ref" | "ref") {
            return false;
        }
        let Expr::Binary(BinOp::Eq, a, b) = c else {
            return false;
        };
        let own_col = |x: &Expr| match x {
            Expr::Slot(n) if own.contains(n) => Some(n - own.start),
            _ => None,
        };
        let free = |x: &Expr| {
            let mut mine = false;
            visit_expr(x, &mut |y| {
                mine |= matches!(y, Expr::Slot(n) if own.contains(n));
            });
            !mine
        };
        let col = match (own_col(a), own_col(b)) {
            (Some(c), _) if free(b) => c,
            (_, Some(c)) if free(a) => c,
            _ => return false,
        };
        key_cols[..eq.min(key_cols.len())].contains(&col)
            && matches!(
                def.columns[col].ty,
                ColumnType::Int { .. }
                    | ColumnType::Decimal { .. }
                    | ColumnType::Date
                    | ColumnType::DateTime(_)
                    | ColumnType::Timestamp(_)
                    | ColumnType::Time(_)
                    | ColumnType::Double(_)
            )
    };
    let rest: Vec<&Expr> = leaf
        .filter
        .as_ref()
        .map(|f| {
            planner::conjuncts(f)
                .into_iter()
                .filter(|c| !served(c))
                .collect()
        })
        .unwrap_or_default();
    // Conjuncts on the columns of a secondary index read with row fetches are checked on its
    // entries first (index condition pushdown).
    let pushable = match key {
        Some(KeyName::Index(n)) if !covered && ty != "index" => def.index(n).map(|ix| {
            let pk = def.primary_key.clone().unwrap_or_default();
            move |c: &Expr| {
                let mut ok = true;
                visit_expr(c, &mut |x| {
                    if let Expr::Slot(n) = x {
                        ok &= own.contains(n)
                            && (ix.columns.contains(&(n - own.start))
                                || pk.contains(&(n - own.start)));
                    }
                    ok &= !matches!(x, Expr::Subquery(_));
                });
                ok
            }
        }),
        _ => None,
    };
    let (icp, wher) = match &pushable {
        // A `const` table's one row is read and checked while planning.
        _ if ty == "const" => (false, false),
        Some(p) => (rest.iter().any(|c| p(c)), rest.iter().any(|c| !p(c))),
        None => (false, !rest.is_empty()),
    };
    let mut words = Vec::new();
    if icp {
        words.push("Using index condition");
    }
    if wher {
        words.push("Using where");
    }
    if covered {
        words.push("Using index");
    }
    words.join("; ")
}

/// Whether an access path's expressions read a column of an earlier table (a join lookup).
fn depends_on_rows(a: &Access) -> bool {
    let mut dep = false;
    let mut look = |e: &Expr| {
        visit_expr(e, &mut |x| dep |= matches!(x, Expr::Slot(_)));
    };
    match a {
        Access::FullScan => {}
        Access::PkPoint(v) => v.iter().for_each(&mut look),
        Access::In { list, .. } => list.iter().for_each(&mut look),
        Access::Range { prefix, .. } => prefix.iter().for_each(&mut look),
        Access::Union { parts, .. } => return parts.iter().any(depends_on_rows),
    }
    dep
}

/// Whether a stored leaf is read from its key's entries alone: a secondary index that covers
/// every column the plan reads of it (the store then reads no row, see
/// `TableDef::index_covers`), or the primary key when those columns are all its own (InnoDB's
/// clustered key: EXPLAIN says `Using index` there too). Locking reads read rows.
fn covered(plan: &QueryPlan, leaf: &Leaf) -> bool {
    let LeafKind::Table { def, lock } = &leaf.kind else {
        return false;
    };
    if *lock != shoal_store::LockMode::None {
        return false;
    }
    let want = &plan.read[leaf.slots.clone()];
    let key = match &leaf.access {
        Access::FullScan | Access::PkPoint(_) => KeyName::Primary,
        Access::In { key, .. } | Access::Range { key, .. } | Access::Union { key, .. } => {
            key.clone()
        }
    };
    match key {
        KeyName::Primary => {
            let pk = def.primary_key.as_deref().unwrap_or(&[]);
            !pk.is_empty() && want.iter().enumerate().all(|(c, &w)| !w || pk.contains(&c))
        }
        KeyName::Index(n) => def.index(&n).is_some_and(|ix| def.index_covers(ix, want)),
    }
}

fn order_of(s: &Source, out: &mut Vec<usize>) {
    match s {
        Source::OneRow => {}
        Source::Leaf(i) => out.push(*i),
        Source::Join { left, right, .. } => {
            order_of(left, out);
            order_of(right, out);
        }
    }
}
