//! Executes a [`QueryPlan`] (see the module essay in `mod.rs`): nested loops that push each row
//! into the frame and call back, grouping, sorting, subqueries.

use std::cmp::Ordering;
use std::sync::Arc;

use shoal_sql::ast::{BinOp, Expr, Subquery, SubqueryKind, VarScope, DISTINCT_TUPLE};
use shoal_sql::eval::{eval, Context};
use shoal_sql::value::{coerce_to, compare, row_mem_size, DateTime, Value};
use shoal_sql::SqlError;
use shoal_store::{Engine, KeyRange, LockMode, RawRow, Row, ScanOpts, Transaction};

use super::*;
use crate::budget::{stored_row_size, MemBudget};
use crate::convert::{datum_into_value, datum_to_value, store_err};
use crate::exec::{group_key, sort_by_keys, Acc};
use crate::plan::{resolve, resolve_exact, Access, KeyName, Resolved};
use crate::show;

/// The executor's hash tables are keyed by rows' values (DISTINCT, GROUP BY, hash joins, set
/// operations): user data, often long strings. foldhash (hashbrown's own default, seeded per
/// process) hashes them several times cheaper than std's SipHash and still resists chosen
/// collisions.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// Why the transaction is always there when asked for.
const LENT: &str = "the transaction is lent only to a stream, whose visits read no store";

/// How many rows pass between two looks at the kill flag (and statement deadline).
const KILL_CHECK_ROWS: u64 = 256;

/// Runs `plan` in `txn` with `params`; `env` is the session's context (variables, NOW(), ...).
pub fn execute(
    plan: &QueryPlan,
    store: &Engine,
    txn: &mut Transaction,
    params: &[Value],
    env: &mut dyn Context,
) -> Result<Vec<Vec<Value>>, SqlError> {
    let streams = streams(plan);
    let mut r = Runner {
        mem: MemBudget::of(&mut *env),
        plan,
        store,
        txn: Some(txn),
        streams,
        env,
        params,
        frame: vec![Value::Null; plan.slots],
        cache: vec![None; plan.subqueries.len()],
        memos: (0..plan.subqueries.len())
            .map(|_| Memo::default())
            .collect(),
        derived: HashMap::default(),
        work: HashMap::default(),
        visited: 0,
        hashed: HashMap::default(),
        reverse: None,
    };
    r.node(&plan.root, None)
}

use super::memo::{Memo, Rows};

/// One group of a grouped SELECT.
struct Group {
    /// Its GROUP BY values (a prefix of them at a ROLLUP level).
    key: Vec<Value>,
    /// The block's source slots at the group's first row (what non-aggregated columns show).
    first: Vec<Value>,
    /// One accumulator per aggregate.
    accs: Vec<Acc>,
}

/// The groups of one level, in first-seen order, with an index by key.
#[derive(Default)]
struct Groups {
    index: HashMap<String, usize>,
    list: Vec<Group>,
}

impl Groups {
    /// The position of the group of `key`, added (charged to the statement's memory, with
    /// the current row as its first) if new.
    fn find_or_add(
        &mut self,
        r: &mut Runner<'_, '_>,
        s: &SelectPlan,
        key: &[Value],
    ) -> Result<usize, SqlError> {
        let k = group_key(key);
        if let Some(&i) = self.index.get(&k) {
            return Ok(i);
        }
        r.mem
            .charge(k.len() + row_mem_size(&r.frame[s.slots.clone()]))?;
        self.index.insert(k, self.list.len());
        self.list.push(Group {
            key: key.to_vec(),
            first: r.frame[s.slots.clone()].to_vec(),
            accs: s.aggs.iter().map(|a| Acc::new(a.distinct)).collect(),
        });
        Ok(self.list.len() - 1)
    }
}

/// What one row gives one aggregate (see `Runner::agg_input`).
#[derive(Clone)]
enum AggInput {
    Skip,
    Concat(String, Vec<Value>),
    Value(Value),
}

/// Callback for each row a source puts in the frame; `false` stops the pipeline.
type Visit<'f, 'p, 'a> = dyn FnMut(&mut Runner<'p, 'a>) -> Result<bool, SqlError> + 'f;

/// The output column that is ORDER BY's only key, if it is one: rows are then sorted by that
/// column of the row itself, and no copy of it is kept as a separate key
/// (`SELECT c ... ORDER BY c`).
fn lone_output_key(order: &[(SortKey, bool)]) -> Option<usize> {
    match order {
        [(SortKey::Output(i), _)] => Some(*i),
        _ => None,
    }
}

/// The expression an ORDER BY item sorts by (`None`: an output position past the list).
pub(crate) fn sort_expr<'s>(s: &'s SelectPlan, k: &'s SortKey) -> Option<&'s Expr> {
    match k {
        SortKey::Output(o) => s.items.get(*o),
        SortKey::Expr(e) => Some(e),
    }
}

/// Whether rows of `leaf`'s table `def` read in the order of `name` (its columns `key`, the
/// first `fixed` of them fixed to one value by the access path) come in the order of `exprs`:
/// each is a column of the table, and those not fixed are the key's next columns in turn, where
/// the key's order is SQL's (`plan::key_orders_as_sql`: not the strings of an old binary key).
/// Columns the path fixes (`WHERE w = 1 ... ORDER BY w, o`) are constant, whatever their place.
pub(crate) fn follows_key(
    leaf: &Leaf,
    def: &TableDef,
    exprs: &[Option<&Expr>],
    key: &[usize],
    fixed: usize,
    name: &KeyName,
) -> bool {
    let mut next = fixed;
    for e in exprs {
        let Some(Expr::Slot(x)) = e else {
            return false;
        };
        if !leaf.slots.contains(x) {
            return false;
        }
        let col = x - leaf.slots.start;
        if key[..fixed.min(key.len())].contains(&col) {
            continue;
        }
        if key.get(next) != Some(&col)
            || !crate::plan::key_orders_as_sql(def, name, std::slice::from_ref(&col))
        {
            return false;
        }
        next += 1;
    }
    true
}

/// Whether the plan's one stored table may be read as a stream (see [`Runner::stream`]): one
/// SELECT whose FROM is that table alone, with no subqueries, so nothing reads the store
/// while the stream's callback runs.
fn streams(plan: &QueryPlan) -> bool {
    plan.subqueries.is_empty()
        && matches!(&plan.root.body, Body::Select(s)
            if matches!(s.from, Source::Leaf(0))
                && s.leaves.len() == 1
                && s.leaves[0].hash.is_empty()
                && matches!(s.leaves[0].kind, LeafKind::Table { .. }))
}

struct Runner<'p, 'a> {
    plan: &'p QueryPlan,
    store: &'a Engine,
    /// The statement's transaction; lent out (`None`) while a stream reads it.
    txn: Option<&'a mut Transaction>,
    /// The plan's one stored table is read as a stream ([`streams`]).
    streams: bool,
    env: &'a mut dyn Context,
    params: &'a [Value],
    /// The statement's row frame: every bound column and aggregate.
    frame: Vec<Value>,
    /// Results of uncorrelated subqueries, by id.
    cache: Vec<Option<Rows>>,
    /// Answers of stable correlated subqueries by their outer values, by id (see `memo`).
    memos: Vec<Memo>,
    /// Derived tables' rows (never correlated: computed once per execution).
    derived: HashMap<*const (), Rows>,
    /// The work tables of the recursive CTEs being computed, by id.
    work: HashMap<usize, Rows>,
    visited: u64,
    /// What the statement's buffers hold (`max_session_mem_used`).
    mem: MemBudget,
    /// Hash tables of the leaves joined by hash, built at their first visit.
    hashed: HashMap<*const Leaf, Arc<HashTable>>,
    /// The stored leaf read in descending key order (its query's ORDER BY ... DESC arrives
    /// that way), while that query runs.
    reverse: Option<&'p Leaf>,
}

/// Hash joins.
///
/// A leaf that no index serves is read whole on every visit of a nested loop: n x m rows for
/// an unindexed equi-join (two 5,000-row tables: 25 million rows, about ten seconds). When its
/// conjuncts include `own column = expression of earlier leaves` (bind.rs sets [`Leaf::hash`]),
/// its rows are read once per execution into a table keyed by those columns, and each visit
/// evaluates the expressions and reads only the rows under that key.
///
/// The key must never separate rows SQL calls equal. [`group_key`] is exact for values of one
/// kind (strings case- and trailing-space-insensitively, exact numbers by value, doubles), so
/// each key column remembers the kind its values have; a probe value of another kind (a number
/// against a string column, a date) makes that visit scan every row, as without the table.
/// A NULL probe matches nothing (`=` is never true with NULL). The leaf's whole filter is still
/// checked on every row read, so the key only narrows.
struct HashTable {
    /// The leaf's rows (its slots' values).
    rows: Vec<Vec<Value>>,
    /// Key of each row's key columns -> row indexes.
    map: HashMap<String, Vec<usize>>,
    /// Per key column, the kind every non-NULL value has (`None`: mixed or temporal, probes
    /// by this table are off).
    kinds: Vec<Option<Kind>>,
}

/// What [`group_key`] compares exactly among.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Bytes,
    Exact,
    Double,
    /// TIMEs: `group_key` holds their microseconds, which is how they compare.
    Time,
}

fn kind_of(v: &Value) -> Option<Kind> {
    match v {
        Value::Str(_) => Some(Kind::Str),
        Value::Bytes(_) => Some(Kind::Bytes),
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) => Some(Kind::Exact),
        Value::Double(_) => Some(Kind::Double),
        Value::Time(_) => Some(Kind::Time),
        _ => None,
    }
}

/// The evaluation context of the running statement: slots from the frame, subqueries through
/// the runner, everything else from the session.
struct Ev<'r, 'p, 'a> {
    r: &'r mut Runner<'p, 'a>,
}

impl Context for Ev<'_, '_, '_> {
    fn system_var(&mut self, scope: VarScope, name: &str) -> Result<Value, SqlError> {
        self.r.env.system_var(scope, name)
    }
    fn user_var(&self, name: &str) -> Value {
        self.r.env.user_var(name)
    }
    fn set_user_var(&mut self, name: &str, v: Value) {
        self.r.env.set_user_var(name, v)
    }
    fn param(&self, i: usize) -> Result<Value, SqlError> {
        self.r
            .params
            .get(i)
            .cloned()
            .ok_or_else(|| SqlError::WrongArguments("mysqld_stmt_execute".into()))
    }
    fn slot(&self, i: usize) -> Result<Value, SqlError> {
        Ok(self.r.frame[i].clone())
    }
    fn subquery(&mut self, q: &Subquery) -> Result<Value, SqlError> {
        self.r.subquery(q)
    }
    fn database(&self) -> Option<String> {
        self.r.env.database()
    }
    fn user(&self) -> String {
        self.r.env.user()
    }
    fn current_user(&self) -> String {
        self.r.env.current_user()
    }
    fn connection_id(&self) -> u64 {
        self.r.env.connection_id()
    }
    fn last_insert_id(&self) -> u64 {
        self.r.env.last_insert_id()
    }
    fn found_rows(&self) -> u64 {
        self.r.env.found_rows()
    }
    fn set_last_insert_id(&mut self, v: u64) {
        self.r.env.set_last_insert_id(v)
    }
    fn now(&self) -> DateTime {
        self.r.env.now()
    }
    fn version(&self) -> String {
        self.r.env.version()
    }
    fn killed(&self) -> bool {
        self.r.env.killed()
    }
    fn div_precision(&self) -> u32 {
        self.r.env.div_precision()
    }
    fn warn(&mut self, code: u16, message: String) {
        self.r.env.warn(code, message)
    }
    fn note(&mut self, code: u16, message: String) {
        self.r.env.note(code, message)
    }
    fn max_allowed_packet(&mut self) -> u64 {
        self.r.env.max_allowed_packet()
    }
    fn rand_state(&mut self) -> Option<&mut shoal_sql::func::RandState> {
        self.r.env.rand_state()
    }
}

/// `v op x` as SQL compares (NULL: unknown).
fn holds(op: BinOp, v: &Value, x: &Value) -> Option<bool> {
    let o = compare(v, x)?;
    Some(match op {
        BinOp::Eq => o == Ordering::Equal,
        BinOp::NotEq => o != Ordering::Equal,
        BinOp::Lt => o == Ordering::Less,
        BinOp::LtEq => o != Ordering::Greater,
        BinOp::Gt => o == Ordering::Greater,
        BinOp::GtEq => o != Ordering::Less,
        _ => return None,
    })
}

fn bool_value(b: Option<bool>) -> Value {
    match b {
        Some(b) => Value::Int(i64::from(b)),
        None => Value::Null,
    }
}

impl<'p, 'a> Runner<'p, 'a> {
    fn eval(&mut self, e: &Expr) -> Result<Value, SqlError> {
        let mut ev = Ev { r: self };
        eval(e, &mut ev)
    }

    fn holds(&mut self, e: &Option<Expr>) -> Result<bool, SqlError> {
        match e {
            None => Ok(true),
            Some(e) => Ok(self.eval(e)?.truth() == Some(true)),
        }
    }

    /// Counts a row; every few hundred, looks at KILL QUERY and max_execution_time.
    fn tick(&mut self) -> Result<(), SqlError> {
        self.visited += 1;
        if self.visited.is_multiple_of(KILL_CHECK_ROWS) && self.env.killed() {
            return Err(SqlError::Interrupted);
        }
        Ok(())
    }

    fn count(&mut self, e: &Option<Expr>) -> Result<Option<usize>, SqlError> {
        let Some(e) = e else {
            return Ok(None);
        };
        let v = self.eval(e)?;
        match (&v, v.to_i128()) {
            (Value::Int(_) | Value::UInt(_), Some(n)) if n >= 0 => {
                Ok(Some(usize::try_from(n).unwrap_or(usize::MAX)))
            }
            _ => Err(SqlError::WrongArguments("LIMIT".into())),
        }
    }

    /// A query's rows; `stop` caps how many the caller needs.
    fn node(&mut self, n: &'p QNode, stop: Option<usize>) -> Result<Vec<Vec<Value>>, SqlError> {
        let limit = self.count(&n.limit)?;
        let offset = self.count(&n.offset)?.unwrap_or(0);
        let needed = match (limit, stop) {
            (Some(l), Some(s)) => Some(l.min(s)),
            (l, s) => l.or(s),
        };
        let desc: Vec<bool> = n.order.iter().map(|(_, d)| *d).collect();
        // Rows that arrive in ORDER BY's order need no sort, and LIMIT can stop the read (a
        // locking read then locks only the rows it returns, as InnoDB's index-order read does).
        let mut in_order = false;
        let mut rows: Vec<(Vec<Value>, Vec<Value>)> = match &n.body {
            Body::Select(s) => {
                let direction = self.arrives_in_order(s, &n.order)?;
                in_order = direction.is_some();
                let order: &'p [(SortKey, bool)] = if in_order { &[] } else { &n.order };
                let early = (order.is_empty() && !s.grouped && !s.distinct)
                    .then(|| needed.map(|k| k.saturating_add(offset)))
                    .flatten();
                let outer = std::mem::replace(&mut self.reverse, direction.flatten());
                let rows = self.select(s, order, early);
                self.reverse = outer;
                rows?
            }
            other => {
                let rows = self.body(other)?;
                let mut out = Vec::with_capacity(rows.len());
                for row in rows {
                    let keys = self.keys(&n.order, &row)?;
                    out.push((keys, row));
                }
                out
            }
        };
        if !n.order.is_empty() && !in_order {
            // One comparison mode per key column: a total order (found by fuzzing).
            match lone_output_key(&n.order) {
                Some(i) => sort_by_keys(&mut rows, |r| &r.1[i..=i], &desc),
                None => sort_by_keys(&mut rows, |r| &r.0, &desc),
            }
        }
        let it = rows.into_iter().skip(offset).map(|(_, r)| r);
        Ok(match needed {
            Some(k) => it.take(k).collect(),
            None => it.collect(),
        })
    }

    /// Whether a SELECT's rows can arrive in `order`: it reads one stored table, ungrouped and
    /// without DISTINCT, by a key whose columns after those its access path fixes are the
    /// ORDER BY columns (the fixed ones may be named anywhere), all ascending or all
    /// descending, where the key's order is SQL's
    /// (`plan::key_orders_as_sql`: not the strings of an old binary key, nor binary strings).
    /// `Some(None)`: in key order as read; `Some(Some(leaf))`: when `leaf` is read in
    /// descending key order; `None`: the rows need a sort.
    fn arrives_in_order(
        &mut self,
        s: &'p SelectPlan,
        order: &[(SortKey, bool)],
    ) -> Result<Option<Option<&'p Leaf>>, SqlError> {
        let descending = order.first().is_some_and(|(_, desc)| *desc);
        if order.is_empty()
            || s.grouped
            || s.distinct
            || order.iter().any(|(_, desc)| *desc != descending)
        {
            return Ok(None);
        }
        let Source::Leaf(l) = s.from else {
            return Ok(None);
        };
        let leaf: &'p Leaf = &s.leaves[l];
        let LeafKind::Table { def, .. } = &leaf.kind else {
            return Ok(None);
        };
        if !leaf.hash.is_empty() {
            return Ok(None);
        }
        let direction = Some(descending.then_some(leaf));
        let resolved = {
            let mut ev = Ev { r: self };
            resolve(&leaf.access, def, &mut ev)?
        };
        let (key, fixed, name): (Vec<usize>, usize, &KeyName) = match (&resolved, &leaf.access) {
            (Resolved::Empty | Resolved::PkPoint(_), _) => return Ok(Some(None)),
            (Resolved::FullScan, _) => match &def.primary_key {
                Some(pk) => (pk.clone(), 0, &KeyName::Primary),
                None => return Ok(None),
            },
            (Resolved::Range(k, _), Access::Range { prefix, .. }) => {
                (crate::plan::key_columns(def, k), prefix.len(), k)
            }
            (Resolved::Ranges(k, _), _) => (crate::plan::key_columns(def, k), 0, k),
            _ => return Ok(None),
        };
        let exprs: Vec<Option<&Expr>> = order.iter().map(|(k, _)| sort_expr(s, k)).collect();
        Ok(if follows_key(leaf, def, &exprs, &key, fixed, name) {
            direction
        } else {
            None
        })
    }

    fn body(&mut self, b: &'p Body) -> Result<Vec<Vec<Value>>, SqlError> {
        match b {
            Body::Select(s) => Ok(self
                .select(s, &[], None)?
                .into_iter()
                .map(|(_, r)| r)
                .collect()),
            Body::Query(q) => self.node(q, None),
            Body::SetOp {
                op,
                all,
                left,
                right,
                types,
            } => {
                let mut rows = self.body(left)?;
                let mut right = self.body(right)?;
                // The members' values as the result's column types (before duplicates go:
                // `1` and `'1'` in a string column are one value).
                for row in rows.iter_mut().chain(right.iter_mut()) {
                    for (v, ty) in row.iter_mut().zip(types) {
                        *v = coerce_to(std::mem::replace(v, Value::Null), *ty);
                    }
                }
                match op {
                    SetOp::Union => {
                        rows.extend(right);
                        if !*all {
                            let mut seen = HashSet::default();
                            rows.retain(|r| seen.insert(group_key(r)));
                        }
                    }
                    SetOp::Intersect | SetOp::Except => {
                        // How many times the right side has each row (ALL takes one per
                        // left row: the smaller count for INTERSECT, the difference for
                        // EXCEPT; without ALL a row appears once at most).
                        let mut counts: HashMap<String, usize> = HashMap::default();
                        for r in &right {
                            *counts.entry(group_key(r)).or_default() += 1;
                        }
                        let intersect = *op == SetOp::Intersect;
                        let mut seen = HashSet::default();
                        rows.retain(|r| {
                            let key = group_key(r);
                            let matched = match counts.get_mut(&key) {
                                Some(n) if *n > 0 => {
                                    if *all {
                                        *n -= 1;
                                    }
                                    true
                                }
                                _ => false,
                            };
                            matched == intersect && (*all || seen.insert(key))
                        });
                    }
                }
                Ok(rows)
            }
        }
    }

    /// The rows of a recursive CTE: the anchor's, then round after round the steps' over the
    /// rows the round before added, until a round adds none or `max_recursive_iterations`
    /// rounds ran.
    fn recursive(&mut self, rp: &'p RecursivePlan) -> Result<Vec<Vec<Value>>, SqlError> {
        let rounds = self
            .env
            .system_var(VarScope::Session, "max_recursive_iterations")
            .ok()
            .and_then(|v| v.to_i128())
            .map_or(1000, |n| n.clamp(0, u64::MAX.into()) as u64);
        let mut seen = HashSet::default();
        let mut all = Vec::new();
        let mut fresh = Vec::new();
        let mut add = |r: &mut Self, rows: Vec<Vec<Value>>, fresh: &mut Vec<Vec<Value>>| {
            for mut row in rows {
                for (v, ty) in row.iter_mut().zip(&rp.types) {
                    *v = coerce_to(std::mem::replace(v, Value::Null), *ty);
                }
                if rp.distinct && !seen.insert(group_key(&row)) {
                    continue;
                }
                r.mem.charge(row_mem_size(&row))?;
                fresh.push(row);
            }
            Ok::<(), SqlError>(())
        };
        let anchor = self.body(&rp.anchor)?;
        add(self, anchor, &mut fresh)?;
        let mut round = 0;
        while !fresh.is_empty() && round < rounds {
            round += 1;
            self.tick()?;
            all.extend(fresh.iter().cloned());
            self.work
                .insert(rp.id, Arc::new(std::mem::take(&mut fresh)));
            // Derived tables and hash tables first built inside a step may have read the
            // work table: built again next round.
            let (derived, hashed): (HashSet<_>, HashSet<_>) = (
                self.derived.keys().copied().collect(),
                self.hashed.keys().copied().collect(),
            );
            for step in &rp.steps {
                let rows = self.body(step)?;
                add(self, rows, &mut fresh)?;
            }
            self.derived.retain(|k, _| derived.contains(k));
            self.hashed.retain(|k, _| hashed.contains(k));
        }
        all.extend(fresh);
        self.work.remove(&rp.id);
        Ok(all)
    }

    /// ORDER BY keys of the row in the frame (projected as `row`); none when the only key is
    /// an output column (see [`lone_output_key`]: the sort reads it from the row).
    fn keys(
        &mut self,
        order: &'p [(SortKey, bool)],
        row: &[Value],
    ) -> Result<Vec<Value>, SqlError> {
        if lone_output_key(order).is_some() {
            return Ok(Vec::new());
        }
        let mut keys = Vec::with_capacity(order.len());
        for (k, _) in order {
            keys.push(match k {
                SortKey::Output(i) => row[*i].clone(),
                SortKey::Expr(e) => self.eval(e)?,
            });
        }
        Ok(keys)
    }

    fn project(&mut self, s: &'p SelectPlan) -> Result<Vec<Value>, SqlError> {
        let mut row = Vec::with_capacity(s.items.len());
        for (i, e) in s.items.iter().enumerate() {
            row.push(match e {
                // Read by this item alone: the next row overwrites the frame anyway.
                Expr::Slot(slot) if s.moves.get(i) == Some(&true) => {
                    std::mem::replace(&mut self.frame[*slot], Value::Null)
                }
                e => self.eval(e)?,
            });
        }
        Ok(row)
    }

    /// A SELECT block's rows with their sort keys; `early` stops after that many.
    #[allow(clippy::type_complexity)]
    fn select(
        &mut self,
        s: &'p SelectPlan,
        order: &'p [(SortKey, bool)],
        early: Option<usize>,
    ) -> Result<Vec<(Vec<Value>, Vec<Value>)>, SqlError> {
        let mut out: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
        let mut seen: HashSet<String> = HashSet::default();
        if early == Some(0) {
            return Ok(out);
        }
        // WHERE is false for every row: no source is read (an aggregate still has its row).
        let none = !s.impossible.is_empty() && s.impossible.decided(&mut Ev { r: self })?;
        if !s.grouped {
            if none {
                return Ok(out);
            }
            self.source(&s.from, s, &mut |r| {
                if !r.holds(&s.filter)? || !r.holds(&s.having)? {
                    return Ok(true);
                }
                let row = r.project(s)?;
                if s.distinct && !seen.insert(group_key(&row)) {
                    return Ok(true);
                }
                let keys = r.keys(order, &row)?;
                r.mem.charge(row_mem_size(&keys) + row_mem_size(&row))?;
                out.push((keys, row));
                Ok(early.is_none_or(|n| out.len() < n))
            })?;
            return Ok(out);
        }
        // One table of groups per level: the GROUP BY list's length, and with ROLLUP every
        // shorter prefix of it down to the grand total (level 0).
        let n = s.group_by.len();
        let lowest = if s.rollup.is_some() { 0 } else { n };
        let mut levels: Vec<Groups> = (lowest..=n).map(|_| Groups::default()).collect();
        let mut vals: Vec<AggInput> = Vec::with_capacity(s.aggs.len());
        if !none {
            self.source(&s.from, s, &mut |r| {
                if !r.holds(&s.filter)? {
                    return Ok(true);
                }
                let mut key = Vec::with_capacity(n);
                for g in &s.group_by {
                    key.push(r.eval(g)?);
                }
                vals.clear();
                for a in &s.aggs {
                    vals.push(r.agg_input(a)?);
                }
                for (li, level) in levels.iter_mut().enumerate() {
                    let gi = level.find_or_add(r, s, &key[..lowest + li])?;
                    for (ai, (a, v)) in s.aggs.iter().zip(&vals).enumerate() {
                        let acc = &mut level.list[gi].accs[ai];
                        match v.clone() {
                            AggInput::Skip => {}
                            AggInput::Concat(text, keys) => {
                                r.mem.charge(text.len() + row_mem_size(&keys))?;
                                acc.add_concat(text, keys);
                            }
                            AggInput::Value(v) => acc.add(a.func, v)?,
                        }
                    }
                }
                Ok(true)
            })?;
        }
        let mut full = levels.pop().expect("the GROUP BY level");
        if full.list.is_empty() && s.group_by.is_empty() {
            full.list.push(Group {
                key: Vec::new(),
                first: vec![Value::Null; s.slots.len()],
                accs: s.aggs.iter().map(|a| Acc::new(a.distinct)).collect(),
            });
        }
        let Some(rolled) = &s.rollup else {
            for g in full.list {
                self.emit_group(s, g, &[], order, &mut seen, &mut out)?;
            }
            return Ok(out);
        };
        // WITH ROLLUP: the groups in GROUP BY order (MariaDB sorts them), each prefix's
        // super-aggregate row after the last group of that prefix, the grand total last.
        let mut list = full.list;
        sort_by_keys(&mut list, |g| &g.key, &vec![false; n]);
        let mut subtotals: Vec<Vec<Option<Group>>> = levels
            .into_iter()
            .map(|l| l.list.into_iter().map(Some).collect())
            .collect();
        let mut index: Vec<HashMap<String, usize>> = Vec::new();
        for l in &subtotals {
            index.push(
                l.iter()
                    .enumerate()
                    .filter_map(|(i, g)| g.as_ref().map(|g| (group_key(&g.key), i)))
                    .collect(),
            );
        }
        let keys: Vec<Vec<Value>> = list.iter().map(|g| g.key.clone()).collect();
        for (i, g) in list.into_iter().enumerate() {
            self.emit_group(s, g, &[], order, &mut seen, &mut out)?;
            // The levels whose group ends here: those longer than the prefix the next group
            // shares with this one; after the last group, every level down to the total.
            let lowest = match keys.get(i + 1) {
                Some(next) => {
                    let same = |a: &Value, b: &Value| {
                        group_key(std::slice::from_ref(a)) == group_key(std::slice::from_ref(b))
                    };
                    keys[i]
                        .iter()
                        .zip(next)
                        .take_while(|(a, b)| same(a, b))
                        .count()
                        + 1
                }
                None => 0,
            };
            for level in (lowest..n).rev() {
                let at = index[level].get(&group_key(&keys[i][..level])).copied();
                if let Some(sub) = at.and_then(|at| subtotals[level][at].take()) {
                    self.emit_group(s, sub, &rolled[level..], order, &mut seen, &mut out)?;
                }
            }
        }
        Ok(out)
    }

    /// One group's result row: its first row and finished aggregates in the frame, the rolled
    /// up grouping columns NULL, then HAVING, DISTINCT and the sort keys.
    fn emit_group(
        &mut self,
        s: &'p SelectPlan,
        g: Group,
        nulls: &[usize],
        order: &'p [(SortKey, bool)],
        seen: &mut HashSet<String>,
        out: &mut Vec<(Vec<Value>, Vec<Value>)>,
    ) -> Result<(), SqlError> {
        let div = self.env.div_precision();
        self.frame[s.slots.clone()].clone_from_slice(&g.first);
        for &slot in nulls {
            self.frame[slot] = Value::Null;
        }
        for (a, acc) in s.aggs.iter().zip(&g.accs) {
            self.frame[a.slot] = match &a.concat {
                None => acc.finish(a.func, div),
                Some(spec) => {
                    let max_len = self
                        .env
                        .system_var(VarScope::Session, "group_concat_max_len")
                        .ok()
                        .and_then(|v| v.to_i128())
                        .map_or(1024, |n| n.clamp(4, u32::MAX.into()) as usize);
                    let desc: Vec<bool> = spec.order.iter().map(|(_, d)| *d).collect();
                    let (v, cut) = acc.finish_concat(&desc, &spec.separator, max_len);
                    if let Some(row) = cut {
                        self.env.warn(
                            shoal_errors::ER_CUT_VALUE_GROUP_CONCAT.code,
                            format!("Row {row} was cut by GROUP_CONCAT()"),
                        );
                    }
                    v
                }
            };
        }
        if !self.holds(&s.having)? {
            return Ok(());
        }
        let row = self.project(s)?;
        if s.distinct && !seen.insert(group_key(&row)) {
            return Ok(());
        }
        let keys = self.keys(order, &row)?;
        out.push((keys, row));
        Ok(())
    }

    /// What a row gives an aggregate: its argument's value, a GROUP_CONCAT part with its
    /// ORDER BY keys, or nothing (GROUP_CONCAT of NULL).
    fn agg_input(&mut self, a: &BoundAgg) -> Result<AggInput, SqlError> {
        if let Some(spec) = &a.concat {
            let v = match &a.arg {
                Some(e) => self.eval(e)?,
                None => Value::Null,
            };
            let Some(text) = v.to_text() else {
                return Ok(AggInput::Skip);
            };
            let mut keys = Vec::with_capacity(spec.order.len());
            for (k, _) in &spec.order {
                keys.push(self.eval(k)?);
            }
            return Ok(AggInput::Concat(text, keys));
        }
        Ok(AggInput::Value(match &a.arg {
            None => Value::Int(1),
            Some(Expr::Function(name, args)) if name == DISTINCT_TUPLE => {
                let mut tuple = Vec::with_capacity(args.len());
                for e in args {
                    tuple.push(self.eval(e)?);
                }
                if tuple.iter().any(Value::is_null) {
                    Value::Null
                } else {
                    Value::Str(group_key(&tuple))
                }
            }
            Some(e) => self.eval(e)?,
        }))
    }

    /// Puts every row of `src` in the frame and calls `f`; `Ok(false)` if `f` stopped it.
    fn source(
        &mut self,
        src: &'p Source,
        s: &'p SelectPlan,
        f: &mut Visit<'_, 'p, 'a>,
    ) -> Result<bool, SqlError> {
        match src {
            Source::OneRow => f(self),
            Source::Leaf(i) => self.leaf(&s.leaves[*i], f),
            Source::Join {
                left,
                right,
                left_join,
                on,
                null_slots,
            } => self.source(left, s, &mut |r| {
                let mut matched = false;
                let go_on = r.source(right, s, &mut |r2| {
                    if !r2.holds(on)? {
                        return Ok(true);
                    }
                    matched = true;
                    f(r2)
                })?;
                if !go_on {
                    return Ok(false);
                }
                if *left_join && !matched {
                    for range in null_slots {
                        for v in &mut r.frame[range.clone()] {
                            *v = Value::Null;
                        }
                    }
                    return f(r);
                }
                Ok(true)
            }),
        }
    }

    fn leaf(&mut self, leaf: &'p Leaf, f: &mut Visit<'_, 'p, 'a>) -> Result<bool, SqlError> {
        if !leaf.hash.is_empty() {
            return self.hash_leaf(leaf, f);
        }
        match &leaf.kind {
            LeafKind::Table { def, lock } => {
                let (resolved, exact) = {
                    let mut ev = Ev { r: self };
                    resolve_exact(&leaf.access, def, &mut ev)?
                };
                // The path read exactly its conjuncts' rows: the others are left to check.
                let filter = match &leaf.rest {
                    Some(rest) if exact => rest,
                    _ => &leaf.filter,
                };
                if self.streams {
                    return self.stream(def, resolved, *lock, leaf, filter, f);
                }
                let opts = self.scan_opts(leaf);
                let rows = self.fetch(def, resolved, *lock, opts)?;
                for mut row in rows {
                    if !self.visit_row(def, &mut row, leaf, filter, f)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            LeafKind::System { name } => {
                let (_, _, rows) = show::info_schema(self.store, name)?;
                self.rows(&rows, leaf, f)
            }
            LeafKind::Provided { db, name, from } => {
                let rows = from.get(db, name).map(|(_, r)| r).unwrap_or_default();
                self.rows(&rows, leaf, f)
            }
            LeafKind::Derived(_) | LeafKind::Recursive(_) | LeafKind::Work(_) => {
                let rows = self.leaf_rows(leaf)?;
                self.rows(&rows, leaf, f)
            }
        }
    }

    /// Every row of `leaf`, as values of its slots (read in one go: the whole table or the
    /// materialized rows).
    fn leaf_rows(&mut self, leaf: &'p Leaf) -> Result<Rows, SqlError> {
        Ok(match &leaf.kind {
            LeafKind::Table { def, lock } => {
                let rows = self.fetch(def, Resolved::FullScan, *lock, ScanOpts::default())?;
                let rows: Vec<Vec<Value>> = rows
                    .iter()
                    .map(|r| {
                        r.values
                            .iter()
                            .zip(&def.columns)
                            .map(|(d, c)| datum_to_value(d, c.ty))
                            .collect()
                    })
                    .collect();
                for r in &rows {
                    self.mem.charge_row(r)?;
                }
                Arc::new(rows)
            }
            LeafKind::System { name } => Arc::new(show::info_schema(self.store, name)?.2),
            LeafKind::Provided { db, name, from } => {
                Arc::new(from.get(db, name).map(|(_, r)| r).unwrap_or_default())
            }
            LeafKind::Derived(node) => {
                let key = &**node as *const QNode as *const ();
                match self.derived.get(&key) {
                    Some(r) => r.clone(),
                    None => {
                        let r: Rows = Arc::new(self.node(node, None)?);
                        self.derived.insert(key, r.clone());
                        r
                    }
                }
            }
            LeafKind::Recursive(rp) => {
                let key = &**rp as *const RecursivePlan as *const ();
                match self.derived.get(&key) {
                    Some(r) => r.clone(),
                    None => {
                        let r: Rows = Arc::new(self.recursive(rp)?);
                        self.derived.insert(key, r.clone());
                        r
                    }
                }
            }
            LeafKind::Work(id) => self.work.get(id).cloned().unwrap_or_default(),
        })
    }

    /// A leaf joined by hash (see [`HashTable`]): built at the first visit, probed at each.
    fn hash_leaf(&mut self, leaf: &'p Leaf, f: &mut Visit<'_, 'p, 'a>) -> Result<bool, SqlError> {
        let base = leaf.slots.start;
        let id: *const Leaf = leaf;
        let table = match self.hashed.get(&id) {
            Some(t) => t.clone(),
            None => {
                let rows = self.leaf_rows(leaf)?;
                let mut kinds: Vec<Option<Option<Kind>>> = vec![None; leaf.hash.len()];
                let mut map: HashMap<String, Vec<usize>> = HashMap::default();
                let mut key = Vec::with_capacity(leaf.hash.len());
                for (i, row) in rows.iter().enumerate() {
                    self.tick()?;
                    self.frame[base..base + row.len()].clone_from_slice(row);
                    key.clear();
                    let mut null = false;
                    for (k, (own, _)) in leaf.hash.iter().enumerate() {
                        let v = self.eval(own)?;
                        if v.is_null() {
                            null = true;
                            continue;
                        }
                        let kind = kind_of(&v);
                        match kinds[k] {
                            None => kinds[k] = Some(kind),
                            Some(seen) if seen != kind => kinds[k] = Some(None),
                            Some(_) => {}
                        }
                        key.push(v);
                    }
                    // A NULL key column matches no probe: the row is never looked up.
                    if !null {
                        map.entry(group_key(&key)).or_default().push(i);
                    }
                }
                let t = Arc::new(HashTable {
                    rows: rows.as_ref().clone(),
                    map,
                    kinds: kinds.into_iter().map(|k| k.flatten()).collect(),
                });
                self.mem.charge(t.map.len() * 48)?;
                self.hashed.insert(id, t.clone());
                t
            }
        };
        // The probe: the key expressions over the outer row.
        let mut probe = Vec::with_capacity(leaf.hash.len());
        let mut exact = true;
        for ((_, e), kind) in leaf.hash.iter().zip(&table.kinds) {
            let v = self.eval(e)?;
            if v.is_null() {
                return Ok(true);
            }
            if kind.is_none() || kind_of(&v) != *kind {
                exact = false;
            }
            probe.push(v);
        }
        let all: Vec<usize>;
        let candidates: &[usize] = if exact {
            match table.map.get(&group_key(&probe)) {
                Some(ix) => ix,
                None => return Ok(true),
            }
        } else {
            all = (0..table.rows.len()).collect();
            &all
        };
        for &i in candidates {
            self.tick()?;
            let row = &table.rows[i];
            self.frame[base..base + row.len()].clone_from_slice(row);
            if self.holds(&leaf.filter)? && !f(self)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn rows(
        &mut self,
        rows: &[Vec<Value>],
        leaf: &'p Leaf,
        f: &mut Visit<'_, 'p, 'a>,
    ) -> Result<bool, SqlError> {
        let base = leaf.slots.start;
        for row in rows {
            self.tick()?;
            self.frame[base..base + row.len()].clone_from_slice(row);
            if self.holds(&leaf.filter)? && !f(self)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The rows an access path reaches, read in one go (the transaction is free again for the
    /// next leaf of a nested loop), as `opts` says (columns to decode, direction).
    fn fetch(
        &mut self,
        def: &TableDef,
        resolved: Resolved,
        lock: LockMode,
        opts: ScanOpts<'_>,
    ) -> Result<Vec<Row>, SqlError> {
        let ranges = match resolved {
            Resolved::Empty => return Ok(Vec::new()),
            Resolved::PkPoint(k) => {
                return Ok(self
                    .txn()
                    .get_cols(def, &k, lock, opts.cols)
                    .map_err(store_err)?
                    .into_iter()
                    .collect())
            }
            Resolved::FullScan => vec![(KeyName::Primary, KeyRange::all())],
            Resolved::Range(k, r) => vec![(k, r)],
            Resolved::Ranges(k, rs) => rs.into_iter().map(|r| (k.clone(), r)).collect(),
        };
        // The ranges of an IN list are in ascending key order.
        let ranges: Vec<_> = if opts.reverse {
            ranges.into_iter().rev().collect()
        } else {
            ranges
        };
        let mut out = Vec::new();
        // The rows of one visit of this leaf live until the next: checked against what the
        // statement's other buffers leave, not charged.
        let mut bytes = 0u64;
        let mut over = false;
        let txn = self.txn.as_deref_mut().expect(LENT);
        for (key, range) in ranges {
            let push = |r: Row| {
                bytes += stored_row_size(&r);
                if !self.mem.fits(bytes) {
                    over = true;
                    return Ok(false);
                }
                out.push(r);
                Ok(true)
            };
            match &key {
                KeyName::Primary => txn.scan_pk_opts(def, &range, lock, opts, push),
                KeyName::Index(n) => txn.scan_index_opts(def, n, &range, lock, opts, push),
            }
            .map_err(store_err)?;
            if over {
                return Err(self.mem.exceeded());
            }
        }
        Ok(out)
    }

    /// The transaction (not lent to a stream: only a stream's own callback runs then, and it
    /// reads no store, see [`streams`]).
    fn txn(&mut self) -> &mut Transaction {
        self.txn.as_deref_mut().expect(LENT)
    }

    /// Visits the rows of the plan's one stored leaf as the store reads them, without
    /// collecting them first: a visit returning `false` (LIMIT reached) ends the read, so a
    /// locking read locks only the rows it returned and `LIMIT n` reads about n rows.
    fn stream(
        &mut self,
        def: &TableDef,
        resolved: Resolved,
        lock: LockMode,
        leaf: &'p Leaf,
        filter: &'p Option<Expr>,
        f: &mut Visit<'_, 'p, 'a>,
    ) -> Result<bool, SqlError> {
        let ranges = match resolved {
            Resolved::Empty => return Ok(true),
            Resolved::PkPoint(k) => {
                let want = Some(self.reads(leaf));
                let base = leaf.slots.start;
                let txn = self.txn.as_deref_mut().expect(LENT);
                let frame = &mut self.frame;
                let found = txn
                    .get_each(def, &k, lock, want, |raw| load(frame, base, def, raw))
                    .map_err(store_err)?;
                return match found {
                    Some(loaded) => {
                        loaded?;
                        self.visit_loaded(filter, f)
                    }
                    None => Ok(true),
                };
            }
            Resolved::FullScan => vec![(KeyName::Primary, KeyRange::all())],
            Resolved::Range(k, r) => vec![(k, r)],
            Resolved::Ranges(k, rs) => rs.into_iter().map(|r| (k.clone(), r)).collect(),
        };
        let opts = self.scan_opts(leaf);
        // The ranges of an IN list are in ascending key order.
        let ranges: Vec<_> = if opts.reverse {
            ranges.into_iter().rev().collect()
        } else {
            ranges
        };
        let txn = self.txn.take().expect(LENT);
        let mut go = true;
        let mut failed = None;
        let mut result = Ok(());
        // A visit's error ends the scan and is returned after it.
        let keep = |r: Result<bool, SqlError>, failed: &mut Option<SqlError>| match r {
            Ok(more) => more,
            Err(e) => {
                *failed = Some(e);
                false
            }
        };
        for (key, range) in ranges {
            result = match &key {
                // Each row's columns go from its stored bytes straight into the frame.
                KeyName::Primary => txn.scan_pk_each(def, &range, lock, opts, |raw| {
                    go = keep(self.visit_raw(def, raw, leaf, filter, f), &mut failed);
                    Ok(go)
                }),
                KeyName::Index(n) => txn.scan_index_opts(def, n, &range, lock, opts, |mut r| {
                    go = keep(self.visit_row(def, &mut r, leaf, filter, f), &mut failed);
                    Ok(go)
                }),
            };
            if result.is_err() || !go {
                break;
            }
        }
        self.txn = Some(txn);
        result.map_err(store_err)?;
        match failed {
            Some(e) => Err(e),
            None => Ok(go),
        }
    }

    /// How a stored leaf is scanned: the columns the plan reads, and descending when its
    /// query's ORDER BY wants it so ([`Self::arrives_in_order`]).
    fn scan_opts(&self, leaf: &Leaf) -> ScanOpts<'p> {
        ScanOpts {
            cols: Some(self.reads(leaf)),
            reverse: self.reverse.is_some_and(|r| std::ptr::eq(r, leaf)),
            no_keys: true,
        }
    }

    /// Which of a stored leaf's columns the plan reads (the store decodes only those).
    fn reads(&self, leaf: &Leaf) -> &'p [bool] {
        let plan: &'p QueryPlan = self.plan;
        &plan.read[leaf.slots.clone()]
    }

    /// Puts a stored leaf's row in the frame and, if `filter` (the leaf's conjuncts, or those
    /// its access path left to check) holds, visits it.
    fn visit_row(
        &mut self,
        def: &TableDef,
        row: &mut Row,
        leaf: &'p Leaf,
        filter: &'p Option<Expr>,
        f: &mut Visit<'_, 'p, 'a>,
    ) -> Result<bool, SqlError> {
        self.tick()?;
        let base = leaf.slots.start;
        let read = &self.plan.read[base..];
        for ((i, d), c) in row.values.iter_mut().enumerate().zip(&def.columns) {
            if read.get(i) == Some(&true) {
                let d = std::mem::replace(d, shoal_store::Datum::Null);
                self.frame[base + i] = datum_into_value(d, c.ty);
            }
        }
        if self.holds(filter)? {
            f(self)
        } else {
            Ok(true)
        }
    }

    /// [`Self::visit_row`] for a row the store hands undecoded: the columns the plan reads
    /// (the scan's [`ScanOpts::cols`]) go from the stored bytes straight into the frame.
    fn visit_raw(
        &mut self,
        def: &TableDef,
        raw: &RawRow<'_>,
        leaf: &'p Leaf,
        filter: &'p Option<Expr>,
        f: &mut Visit<'_, 'p, 'a>,
    ) -> Result<bool, SqlError> {
        load(&mut self.frame, leaf.slots.start, def, raw)?;
        self.visit_loaded(filter, f)
    }

    /// Visits the row a leaf just put in the frame if `filter` holds.
    fn visit_loaded(
        &mut self,
        filter: &'p Option<Expr>,
        f: &mut Visit<'_, 'p, 'a>,
    ) -> Result<bool, SqlError> {
        self.tick()?;
        if self.holds(filter)? {
            f(self)
        } else {
            Ok(true)
        }
    }

    /// The value of a subquery expression.
    fn subquery(&mut self, q: &Subquery) -> Result<Value, SqlError> {
        let plan = self.plan;
        let sp = &plan.subqueries[q.id];
        let rows: Rows = match &self.cache[q.id] {
            Some(r) if !sp.correlated => r.clone(),
            _ => {
                let key = if sp.memo {
                    let frame = &self.frame;
                    self.memos[q.id].key(sp.outer.iter().map(|s| &frame[*s]))
                } else {
                    None
                };
                let cached = match &key {
                    Some(k) => self.memos[q.id].get(k),
                    None => None,
                };
                match cached {
                    Some(r) => r,
                    None => {
                        // A correlated subquery stops as soon as its answer is known.
                        let stop = match (&q.kind, sp.correlated) {
                            (SubqueryKind::Exists, true) => Some(1),
                            (SubqueryKind::Scalar, true) => Some(2),
                            _ => None,
                        };
                        let r: Rows = Arc::new(self.node(&sp.node, stop)?);
                        if !sp.correlated {
                            self.cache[q.id] = Some(r.clone());
                        } else if let Some(k) = key {
                            let bytes = k.len() + r.iter().map(|x| row_mem_size(x)).sum::<usize>();
                            if self.memos[q.id].accepts(r.len()) && self.mem.fits(bytes as u64) {
                                self.mem.charge(bytes)?;
                                self.memos[q.id].put(k, r.clone());
                            }
                        }
                        r
                    }
                }
            }
        };
        match &q.kind {
            SubqueryKind::Scalar => match rows.len() {
                0 => Ok(Value::Null),
                1 => Ok(rows[0][0].clone()),
                _ => Err(SqlError::coded(
                    shoal_errors::ER_SUBQUERY_NO_1_ROW,
                    "Subquery returns more than 1 row",
                )),
            },
            SubqueryKind::Exists => Ok(Value::Int(i64::from(!rows.is_empty()))),
            SubqueryKind::In { operand, negated } => {
                let v = self.eval(operand)?;
                let found = if rows.is_empty() {
                    Some(false)
                } else if v.is_null() {
                    None
                } else {
                    let mut unknown = false;
                    let mut hit = false;
                    for r in rows.iter() {
                        match holds(BinOp::Eq, &v, &r[0]) {
                            Some(true) => {
                                hit = true;
                                break;
                            }
                            Some(false) => {}
                            None => unknown = true,
                        }
                    }
                    if hit {
                        Some(true)
                    } else if unknown {
                        None
                    } else {
                        Some(false)
                    }
                };
                Ok(bool_value(if *negated { found.map(|b| !b) } else { found }))
            }
            SubqueryKind::Compare { operand, op, all } => {
                let v = self.eval(operand)?;
                let mut unknown = false;
                for r in rows.iter() {
                    match holds(*op, &v, &r[0]) {
                        Some(true) if !*all => return Ok(Value::Int(1)),
                        Some(false) if *all => return Ok(Value::Int(0)),
                        None => unknown = true,
                        _ => {}
                    }
                }
                Ok(if unknown {
                    Value::Null
                } else {
                    Value::Int(i64::from(*all))
                })
            }
        }
    }
}

/// Puts the columns of a stored row that its scan decodes (those the plan reads) into the
/// frame slots of its leaf, from `base` on.
fn load(
    frame: &mut [Value],
    base: usize,
    def: &TableDef,
    raw: &RawRow<'_>,
) -> Result<(), SqlError> {
    raw.decode_each(|i, d| frame[base + i] = datum_into_value(d, def.columns[i].ty))
        .map_err(store_err)
}
