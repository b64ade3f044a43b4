//! Executing planned statements inside a store transaction.
//!
//! Every row-reading statement has the same shape: the access path ([`crate::plan`]) yields
//! candidate rows from storage (point get, key ranges or a full scan, locking them when the
//! statement asks: `FOR UPDATE`, `LOCK IN SHARE MODE`, and always exclusively for UPDATE and
//! DELETE, which is InnoDB's "current read"); the complete WHERE clause is evaluated on each
//! (see the plan module: paths may return supersets); then
//!
//! * SELECT: grouping and aggregates (COUNT/SUM/AVG/MIN/MAX, with DISTINCT), HAVING,
//!   projection, DISTINCT, ORDER BY (stable sort with MySQL's NULLs-first ascending order),
//!   OFFSET/LIMIT. Without ORDER BY/GROUP BY/DISTINCT the scan stops as soon as LIMIT is met.
//! * UPDATE: rows are collected first (no Halloween problem), ORDER BY/LIMIT applied, then the
//!   assignments run left to right on each row (a later assignment sees an earlier one's
//!   result, as in MySQL); a row whose new values equal the old ones counts as matched but not
//!   changed and is not written.
//! * DELETE: collected the same way, then deleted.
//! * INSERT: rows are completed with DEFAULTs, converted to the column types and inserted;
//!   duplicates are errors (1062), skipped (IGNORE, warning 1062), updated (ON DUPLICATE KEY
//!   UPDATE, 2 affected rows per changed row, as MySQL counts) or replaced (REPLACE, 1 + deleted
//!   rows).
//!
//! INSERT and UPDATE convert values to their columns in the session's [`WriteMode`] (strict
//! refuses a value that does not fit, lenient stores the nearest with a warning: see the
//! `convert` module); IGNORE makes the statement lenient whatever the mode, and UPDATE IGNORE
//! also leaves a row whose new key is taken as it was. The warnings go to the session's
//! diagnostics and are counted in the OK packet's info (`Warnings: N`).
//!
//! Expressions are evaluated with `shoal_sql::eval::eval` through [`RowCtx`], which layers the
//! current row, the statement's parameters, aggregate results and `VALUES()` over the
//! session's own evaluation context.

use std::cmp::Ordering;
use std::fmt::Write as _;

use shoal_sql::ast::{Expr, VarScope};
use shoal_sql::decimal::Decimal as SqlDecimal;
use shoal_sql::eval::{eval, Context};
use shoal_sql::value::{compare, DateTime as SqlDateTime, Value};
use shoal_sql::SqlError;
use shoal_store::{
    ColumnDefault, ColumnType, Datum, InsertOutcome, LockMode, Row, StoreError, TableDef,
    Transaction,
};

use crate::ast::*;
use crate::convert::{
    datum_to_value, null_into_not_null, report, store_err, to_column, value_to_datum, WriteMode,
};
use crate::plan::{resolve, Access, KeyName, Resolved};

/// Evaluation context for one row: the row's columns, parameters, aggregate values and
/// `VALUES()`, falling back to the session's context for everything else.
pub struct RowCtx<'a> {
    /// The session's context (variables, NOW(), LAST_INSERT_ID, ...).
    pub outer: &'a mut dyn Context,
    /// Parameters of this execution.
    pub params: &'a [Value],
    /// Column names of `row`.
    pub names: &'a [String],
    /// The current row (may be empty: no row in scope).
    pub row: &'a [Value],
    /// Aggregate results (`AGG_PREFIX{n}`).
    pub aggs: &'a [Value],
    /// The row proposed by INSERT, for `VALUES(col)` in ON DUPLICATE KEY UPDATE.
    pub values_row: Option<&'a [Value]>,
}

impl Context for RowCtx<'_> {
    fn system_var(&mut self, scope: VarScope, name: &str) -> Result<Value, SqlError> {
        self.outer.system_var(scope, name)
    }
    fn user_var(&self, name: &str) -> Value {
        self.outer.user_var(name)
    }
    fn set_user_var(&mut self, name: &str, v: Value) {
        self.outer.set_user_var(name, v)
    }
    fn param(&self, i: usize) -> Result<Value, SqlError> {
        self.params
            .get(i)
            .cloned()
            .ok_or_else(|| SqlError::WrongArguments("mysqld_stmt_execute".into()))
    }
    fn column(&self, name: &str) -> Result<Value, SqlError> {
        if let Some(n) = name.strip_prefix(AGG_PREFIX) {
            let i: usize = n.parse().unwrap_or(usize::MAX);
            return self.aggs.get(i).cloned().ok_or_else(|| {
                SqlError::coded(
                    shoal_errors::ER_INVALID_GROUP_FUNC_USE,
                    "Invalid use of group function",
                )
            });
        }
        if let Some(c) = name.strip_prefix(VALUES_PREFIX) {
            let pos = self.names.iter().position(|n| n.eq_ignore_ascii_case(c));
            return match (pos, self.values_row) {
                (Some(p), Some(r)) => Ok(r.get(p).cloned().unwrap_or(Value::Null)),
                _ => Err(SqlError::UnknownColumn(c.to_string(), "field list".into())),
            };
        }
        match self.names.iter().position(|n| n.eq_ignore_ascii_case(name)) {
            Some(p) if p < self.row.len() => Ok(self.row[p].clone()),
            _ => Err(SqlError::UnknownColumn(
                name.to_string(),
                "field list".into(),
            )),
        }
    }
    fn database(&self) -> Option<String> {
        self.outer.database()
    }
    fn user(&self) -> String {
        self.outer.user()
    }
    fn current_user(&self) -> String {
        self.outer.current_user()
    }
    fn connection_id(&self) -> u64 {
        self.outer.connection_id()
    }
    fn last_insert_id(&self) -> u64 {
        self.outer.last_insert_id()
    }
    fn found_rows(&self) -> u64 {
        self.outer.found_rows()
    }
    fn set_last_insert_id(&mut self, v: u64) {
        self.outer.set_last_insert_id(v)
    }
    fn now(&self) -> SqlDateTime {
        self.outer.now()
    }
    fn version(&self) -> String {
        self.outer.version()
    }
    fn killed(&self) -> bool {
        self.outer.killed()
    }
    fn div_precision(&self) -> u32 {
        self.outer.div_precision()
    }
    fn warn(&mut self, code: u16, message: String) {
        self.outer.warn(code, message)
    }
    fn note(&mut self, code: u16, message: String) {
        self.outer.note(code, message)
    }
    fn max_allowed_packet(&mut self) -> u64 {
        self.outer.max_allowed_packet()
    }
    fn rand_state(&mut self) -> Option<&mut shoal_sql::func::RandState> {
        self.outer.rand_state()
    }
}

/// The result of executing one statement.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecOutput {
    /// A result set.
    Rows {
        /// Column descriptions (shared with the prepared plan that produced them).
        columns: std::sync::Arc<[crate::convert::ColumnInfo]>,
        /// Rows.
        rows: Vec<Vec<Value>>,
    },
    /// An OK packet.
    Ok {
        /// Affected rows (MySQL's counting: changed rows for UPDATE, 2 per ON DUPLICATE update).
        affected_rows: u64,
        /// The first AUTO_INCREMENT value generated by this statement (0 = none).
        last_insert_id: u64,
        /// Info string (`Records: 3  Duplicates: 0  Warnings: 0`, `Rows matched: ...`).
        info: String,
        /// Warning count.
        warnings: u16,
    },
}

impl ExecOutput {
    pub(crate) fn ok(affected_rows: u64) -> ExecOutput {
        ExecOutput::Ok {
            affected_rows,
            last_insert_id: 0,
            info: String::new(),
            warnings: 0,
        }
    }
}

/// What one execution needs: the transaction, the session's context and the parameters.
pub struct Exec<'a> {
    /// The store (foreign keys look up other tables).
    pub store: &'a shoal_store::Engine,
    /// The open transaction.
    pub txn: &'a mut Transaction,
    /// Session context.
    pub ctx: &'a mut dyn Context,
    /// Bound parameters.
    pub params: &'a [Value],
    /// What INSERT and UPDATE do with a value that does not fit its column (the session's
    /// `sql_mode`; IGNORE makes a statement lenient whatever it is).
    pub mode: WriteMode,
}

/// The values of a stored row of `table` (only the `needed` columns; the rest NULL).
fn row_values(table: &TableDef, r: &Row, needed: Option<&[bool]>) -> Vec<Value> {
    let ty = |i: usize| table.columns[i].ty;
    match needed {
        None => r
            .values
            .iter()
            .enumerate()
            .map(|(i, d)| datum_to_value(d, ty(i)))
            .collect(),
        Some(m) => r
            .values
            .iter()
            .enumerate()
            .map(|(i, d)| {
                if m.get(i).copied().unwrap_or(true) {
                    datum_to_value(d, ty(i))
                } else {
                    Value::Null
                }
            })
            .collect(),
    }
}

/// How the values of one sort key column compare. MySQL compares a column in one type: numbers
/// numerically, dates as dates, strings by collation, and a column mixing kinds (a UNION of
/// numbers and strings is VARCHAR) as text. `compare` value by value is no total order over
/// mixed kinds (2 < 10 as numbers, 10 < '15' and '15' < 2 as text; an INT beyond 2^53 against a
/// DOUBLE), and the standard sort panics on such a comparator (found by fuzzing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyMode {
    /// Exact numbers, or strings, or dates only: `compare`.
    Native,
    /// Numbers with a DOUBLE among them: as doubles.
    Double,
    /// Mixed kinds: as text.
    Text,
    /// Strings with a binary string among them: bytewise, as MySQL compares a column of
    /// binary type (`compare` would mix collations, not a total order).
    Binary,
}

/// The kind of a non-NULL value for [`KeyMode`]: 1 number, 2 string, 3 date, 4 time.
fn key_kind(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) => 1,
        Value::Str(_) | Value::Bytes(_) => 2,
        Value::Date(_) | Value::DateTime(..) => 3,
        Value::Time(_) => 4,
    }
}

/// Sorts `rows` by their sort keys (`key`), `desc` per key column: NULL first, then in one
/// comparison mode per column ([`KeyMode`]), a total order.
pub(crate) fn sort_by_keys<T>(rows: &mut [T], key: impl Fn(&T) -> &[Value], desc: &[bool]) {
    let modes: Vec<KeyMode> = (0..desc.len())
        .map(|i| {
            let (mut kind, mut double, mut binary) = (0u8, false, false);
            for v in rows.iter().filter_map(|r| key(r).get(i)) {
                match (key_kind(v), kind) {
                    (0, _) => continue,
                    (k, 0) => kind = k,
                    (k, seen) if k != seen => return KeyMode::Text,
                    _ => {}
                }
                double |= matches!(v, Value::Double(_));
                binary |= v.is_bytes();
            }
            if double {
                KeyMode::Double
            } else if binary {
                KeyMode::Binary
            } else {
                KeyMode::Native
            }
        })
        .collect();
    let text_only = |i: usize| {
        modes[i] == KeyMode::Native
            && rows
                .iter()
                .all(|r| matches!(key(r).get(i), Some(Value::Str(_) | Value::Null) | None))
    };
    if rows.len() > 16 && (0..desc.len()).all(text_only) {
        sort_by_weights(rows, key, desc);
        return;
    }
    rows.sort_by(|a, b| cmp_keys(key(a), key(b), desc, &modes));
}

/// [`sort_by_keys`] for keys of strings only: each string is folded once into its collation
/// weight (`shoal_collation::weight`, whose byte order is the collation's order) instead of at
/// every one of the sort's n·log n comparisons (sysbench's `ORDER BY c` and `DISTINCT c`:
/// 5 % of the server's CPU). The rows are then put in the weights' order (stable, as the
/// comparison sort).
fn sort_by_weights<T>(rows: &mut [T], key: impl Fn(&T) -> &[Value], desc: &[bool]) {
    if desc.is_empty() {
        return; // no key: every row ties, and ties keep their order
    }
    // Every weight in one buffer, each row's keys as spans of it (`None`: NULL): two
    // allocations for the whole sort instead of two per row.
    let mut buf: Vec<u8> = Vec::with_capacity(rows.len() * 32 * desc.len());
    let mut spans: Vec<Option<(usize, usize)>> = Vec::with_capacity(rows.len() * desc.len());
    for r in rows.iter() {
        for i in 0..desc.len() {
            spans.push(match key(r).get(i) {
                Some(Value::Str(s)) => {
                    let start = buf.len();
                    shoal_collation::push_weight(&mut buf, s);
                    Some((start, buf.len()))
                }
                _ => None,
            });
        }
    }
    let n = desc.len();
    let weight = |row: usize, i: usize| spans[row * n + i].map(|(a, b)| &buf[a..b]);
    // Each row's first key as one integer, its weight's first 8 bytes (zero-padded; NULL, which
    // sorts first as in `cmp_keys`, as 0; all bits flipped for DESC), sorted with the row's
    // position: the integers' order never contradicts the weights' (a shorter weight pads
    // below any byte that follows it), so most comparisons end at one integer compare, and
    // only equal integers look at the weights. Ties end at the position, which makes the
    // (faster) unstable sort give the stable order.
    let mut keyed: Vec<(u64, usize)> = (0..rows.len())
        .map(|r| {
            let p = weight(r, 0).map_or(0, |w| {
                let mut b = [0u8; 8];
                let k = w.len().min(8);
                b[..k].copy_from_slice(&w[..k]);
                u64::from_be_bytes(b)
            });
            (if desc[0] { !p } else { p }, r)
        })
        .collect();
    keyed.sort_unstable_by(|&(pa, a), &(pb, b)| {
        pa.cmp(&pb).then_with(|| {
            for (i, d) in desc.iter().enumerate() {
                // NULL (None) first, as `cmp_keys`.
                let o = weight(a, i).cmp(&weight(b, i));
                let o = if *d { o.reverse() } else { o };
                if o != Ordering::Equal {
                    return o;
                }
            }
            a.cmp(&b)
        })
    });
    let order: Vec<usize> = keyed.into_iter().map(|(_, r)| r).collect();
    apply_order(rows, order);
}

/// Rearranges `rows` so that position `i` holds the row that was at `order[i]` (a
/// permutation), by following its cycles with swaps.
fn apply_order<T>(rows: &mut [T], mut order: Vec<usize>) {
    for i in 0..rows.len() {
        // Follow the cycle through i: each step puts one row in its final place.
        let mut cur = i;
        while order[cur] != i {
            let next = order[cur];
            rows.swap(cur, next);
            order[cur] = cur;
            cur = next;
        }
        order[cur] = cur;
    }
}

/// Sort key comparison: NULL first, then each column's [`KeyMode`].
fn cmp_keys(a: &[Value], b: &[Value], desc: &[bool], modes: &[KeyMode]) -> Ordering {
    for (((x, y), d), m) in a.iter().zip(b).zip(desc).zip(modes) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            _ => match m {
                KeyMode::Native => compare(x, y).unwrap_or(Ordering::Equal),
                KeyMode::Double => {
                    let (p, q) = (x.to_f64().unwrap_or(0.0), y.to_f64().unwrap_or(0.0));
                    p.partial_cmp(&q).unwrap_or_else(|| p.total_cmp(&q))
                }
                KeyMode::Binary => x.to_bytes().cmp(&y.to_bytes()),
                KeyMode::Text => shoal_sql::value::collate_cmp(
                    &x.to_text().unwrap_or_default(),
                    &y.to_text().unwrap_or_default(),
                ),
            },
        };
        let o = if *d { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// A hashable key for grouping and DISTINCT: equal under SQL comparison (case-insensitive
/// strings, trailing spaces ignored, `1 = 1.0`).
pub(crate) fn group_key(vals: &[Value]) -> String {
    let text: usize = vals
        .iter()
        .map(|v| match v {
            Value::Str(x) => x.len(),
            _ => 0,
        })
        .sum();
    let mut s = String::with_capacity(text + 24 * vals.len());
    for v in vals {
        match v {
            Value::Null => s.push_str("N|"),
            Value::Str(x) => {
                s.push('S');
                // The collation's fold: one definition with comparison and index keys.
                shoal_collation::push_fold(&mut s, x);
                s.push('\u{1}');
            }
            Value::Int(_) | Value::UInt(_) | Value::Decimal(_) => {
                let d = v.to_decimal().unwrap_or(SqlDecimal::from_i128(0));
                // Normalise the scale so 1.0 and 1 agree.
                let mut m = d.mant;
                let mut sc = d.scale;
                while sc > 0 && m % 10 == 0 {
                    m /= 10;
                    sc -= 1;
                }
                let _ = write!(s, "D{m}e{sc}|");
            }
            // Exact bytes (a lossy text would merge different ones).
            Value::Bytes(b) => {
                s.push('B');
                for x in b {
                    let _ = write!(s, "{x:02x}");
                }
                s.push('|');
            }
            // -0 and 0 are one value (they compare equal).
            Value::Double(f) => {
                let _ = write!(s, "F{}|", if *f == 0.0 { 0.0 } else { *f });
            }
            // One TIME whatever digits it shows (`10:00:00` and `10:00:00.00` are one group).
            Value::Time(t) => {
                let _ = write!(s, "M{}|", t.micros());
            }
            other => {
                let _ = write!(s, "T{}|", other.to_text().unwrap_or_default());
            }
        }
    }
    s
}

fn to_limit(
    e: &Option<Expr>,
    ctx: &mut dyn Context,
    params: &[Value],
) -> Result<Option<usize>, SqlError> {
    let Some(e) = e else {
        return Ok(None);
    };
    let mut rc = RowCtx {
        outer: ctx,
        params,
        names: &[],
        row: &[],
        aggs: &[],
        values_row: None,
    };
    let v = eval(e, &mut rc)?;
    match v.to_i128() {
        Some(n) if n >= 0 && matches!(v, Value::Int(_) | Value::UInt(_)) => {
            Ok(Some(usize::try_from(n).unwrap_or(usize::MAX)))
        }
        _ => Err(SqlError::WrongArguments("LIMIT".into())),
    }
}

/// Aggregate accumulator.
#[derive(Debug, Clone)]
pub(crate) struct Acc {
    count: i64,
    /// Integer sum (exact) while all inputs are integers.
    isum: i128,
    dsum: Option<SqlDecimal>,
    fsum: Option<f64>,
    best: Option<Value>,
    seen: Option<std::collections::HashSet<String>>,
    /// GROUP_CONCAT's values with their ORDER BY keys, in arrival order.
    parts: Vec<(Vec<Value>, String)>,
}

impl Acc {
    pub(crate) fn new(distinct: bool) -> Acc {
        Acc {
            count: 0,
            isum: 0,
            dsum: None,
            fsum: None,
            best: None,
            seen: distinct.then(Default::default),
            parts: Vec::new(),
        }
    }

    /// GROUP_CONCAT: one row's value as text with its ORDER BY keys (NULL values are left out
    /// by the caller; with DISTINCT, a value seen before is too).
    pub(crate) fn add_concat(&mut self, text: String, keys: Vec<Value>) {
        if let Some(seen) = &mut self.seen {
            if !seen.insert(group_key(&[Value::Str(text.clone())])) {
                return;
            }
        }
        self.count += 1;
        self.parts.push((keys, text));
    }

    /// GROUP_CONCAT's result: the values sorted by their keys (`desc` per key), joined by
    /// `separator`, cut to `max_len` bytes (at a character boundary); NULL without values.
    /// When it was cut: the number of the value that did not fit (warning 1260 names it, as
    /// MariaDB does).
    pub(crate) fn finish_concat(
        &self,
        desc: &[bool],
        separator: &str,
        max_len: usize,
    ) -> (Value, Option<usize>) {
        if self.parts.is_empty() {
            return (Value::Null, None);
        }
        let mut parts: Vec<&(Vec<Value>, String)> = self.parts.iter().collect();
        if !desc.is_empty() {
            // Stable: equal keys keep their arrival order.
            sort_by_keys(&mut parts, |p| &p.0, desc);
        }
        let mut out = String::new();
        let mut over = None;
        for (i, (_, t)) in parts.iter().enumerate() {
            if i > 0 {
                out.push_str(separator);
            }
            out.push_str(t);
            if out.len() > max_len {
                over = Some(i + 1);
                break;
            }
        }
        if over.is_none() {
            return (Value::Str(out), None);
        }
        let mut cut = max_len;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        (Value::Str(out), over)
    }

    pub(crate) fn add(&mut self, func: AggFunc, v: Value) -> Result<(), SqlError> {
        if v.is_null() {
            return Ok(());
        }
        // SUM and AVG add numbers: a string counts as its number, for DISTINCT too, as in
        // MySQL (`AVG(DISTINCT s)` over 'a', 'b', '1', '01' sees 0 and 1 once each).
        let v = match (func, v) {
            (AggFunc::Sum | AggFunc::Avg, v @ Value::Str(_)) => {
                Value::Double(v.to_f64().unwrap_or(0.0))
            }
            // A TIME adds its `hhmmss` number, a DATE and a DATETIME theirs (a DECIMAL of
            // their digits), as MariaDB.
            (
                AggFunc::Sum | AggFunc::Avg,
                v @ (Value::Time(_) | Value::Date(_) | Value::DateTime(..)),
            ) => Value::Decimal(v.to_decimal().unwrap_or(SqlDecimal::from_i128(0))),
            (_, v) => v,
        };
        if let Some(seen) = &mut self.seen {
            if !seen.insert(group_key(std::slice::from_ref(&v))) {
                return Ok(());
            }
        }
        self.count += 1;
        match func {
            AggFunc::Count => {}
            AggFunc::Sum | AggFunc::Avg => match &v {
                Value::Int(_) | Value::UInt(_) if self.fsum.is_none() && self.dsum.is_none() => {
                    self.isum += v.to_i128().unwrap_or(0);
                }
                Value::Int(_) | Value::UInt(_) | Value::Decimal(_) if self.fsum.is_none() => {
                    let base = self
                        .dsum
                        .unwrap_or(SqlDecimal::from_i128(std::mem::take(&mut self.isum)));
                    let d = v.to_decimal().unwrap_or(SqlDecimal::from_i128(0));
                    self.dsum = Some(
                        base.checked_add(d)
                            .ok_or_else(|| SqlError::OutOfRange("DECIMAL", "sum".into()))?,
                    );
                }
                _ => {
                    let base = match self.dsum.take() {
                        Some(d) => d.to_f64(),
                        None => std::mem::take(&mut self.isum) as f64,
                    };
                    self.fsum = Some(self.fsum.unwrap_or(base) + v.to_f64().unwrap_or(0.0));
                }
            },
            AggFunc::GroupConcat => {}
            AggFunc::Min | AggFunc::Max => {
                let replace = match &self.best {
                    None => true,
                    Some(b) => {
                        let o = compare(&v, b).unwrap_or(Ordering::Equal);
                        (func == AggFunc::Min && o == Ordering::Less)
                            || (func == AggFunc::Max && o == Ordering::Greater)
                    }
                };
                if replace {
                    self.best = Some(v);
                }
            }
        }
        Ok(())
    }

    pub(crate) fn finish(&self, func: AggFunc, div_prec: u32) -> Value {
        match func {
            AggFunc::Count => Value::Int(self.count),
            _ if self.count == 0 => Value::Null,
            AggFunc::Sum => match (self.fsum, self.dsum) {
                (Some(f), _) => Value::Double(f),
                (None, Some(d)) => Value::Decimal(d),
                (None, None) => Value::Decimal(SqlDecimal::from_i128(self.isum)),
            },
            AggFunc::Avg => match (self.fsum, self.dsum) {
                (Some(f), _) => Value::Double(f / self.count as f64),
                (None, d) => {
                    let d = d.unwrap_or(SqlDecimal::from_i128(self.isum));
                    d.checked_div(
                        SqlDecimal::from_i128(i128::from(self.count)),
                        d.scale + div_prec,
                    )
                    .map(Value::Decimal)
                    .unwrap_or(Value::Null)
                }
            },
            AggFunc::Min | AggFunc::Max => self.best.clone().unwrap_or(Value::Null),
            // Finished by `finish_concat` (it needs the call's clauses).
            AggFunc::GroupConcat => Value::Null,
        }
    }
}

/// 1054 for the first column `exprs` name that `table` does not have (`clause` names where).
fn known_columns<'e>(
    table: &TableDef,
    exprs: impl Iterator<Item = &'e Expr>,
    clause: &str,
) -> Result<(), SqlError> {
    for e in exprs {
        let mut unknown = None;
        crate::query::visit_expr(e, &mut |x| match x {
            Expr::Column(c) if table.column_index(c).is_none() => {
                unknown.get_or_insert_with(|| c.clone());
            }
            _ => {}
        });
        if let Some(c) = unknown {
            return Err(SqlError::UnknownColumn(c, clause.into()));
        }
    }
    Ok(())
}

/// 1054 for the first column a single-table UPDATE or DELETE (`stmt`) names that `table` does
/// not have, looked for in MariaDB's order: WHERE, ORDER BY, the SET targets, the SET values.
/// Checked when the statement is bound (and bound again after an ALTER), so an empty table
/// refuses it too: the rows' evaluation would only notice at the first row.
pub(crate) fn check_dml_columns(stmt: &TableStmt, table: &TableDef) -> Result<(), SqlError> {
    let (filter, order_by, sets) = match stmt {
        TableStmt::Update(u) => (&u.filter, &u.order_by, u.sets.as_slice()),
        TableStmt::Delete(d) => (&d.filter, &d.order_by, &[][..]),
        _ => return Ok(()),
    };
    known_columns(table, filter.iter(), "where clause")?;
    known_columns(table, order_by.iter().map(|(e, _)| e), "order clause")?;
    if let Some((c, _)) = sets.iter().find(|(c, _)| table.column_index(c).is_none()) {
        return Err(SqlError::UnknownColumn(c.clone(), "field list".into()));
    }
    known_columns(table, sets.iter().map(|(_, e)| e), "field list")
}

/// How many rows a scan visits between two looks at the session's kill flag (and statement
/// deadline): often enough to stop a full scan within milliseconds, rare enough to cost nothing.
const KILL_CHECK_ROWS: u64 = 256;

/// Callback for each matching row of a scan (returns whether to continue).
type RowVisitor<'f> = dyn FnMut(&mut RowEval<'_>, Row, Vec<Value>) -> Result<bool, SqlError> + 'f;

/// What a row visitor can evaluate with while the transaction is busy scanning: the
/// session's context and the parameters.
pub struct RowEval<'a> {
    /// Session context.
    ctx: &'a mut dyn Context,
    /// Bound parameters.
    params: &'a [Value],
}

impl RowEval<'_> {
    fn eval_row(&mut self, e: &Expr, names: &[String], row: &[Value]) -> Result<Value, SqlError> {
        let mut rc = RowCtx {
            outer: &mut *self.ctx,
            params: self.params,
            names,
            row,
            aggs: &[],
            values_row: None,
        };
        eval(e, &mut rc)
    }

    fn matches(
        &mut self,
        filter: Option<&Expr>,
        names: &[String],
        row: &[Value],
    ) -> Result<bool, SqlError> {
        match filter {
            None => Ok(true),
            Some(f) => Ok(self.eval_row(f, names, row)?.truth() == Some(true)),
        }
    }
}

impl Exec<'_> {
    fn eval_row(&mut self, e: &Expr, names: &[String], row: &[Value]) -> Result<Value, SqlError> {
        let mut rc = RowCtx {
            outer: &mut *self.ctx,
            params: self.params,
            names,
            row,
            aggs: &[],
            values_row: None,
        };
        eval(e, &mut rc)
    }

    /// Feeds every row of `table` reachable through `access` that satisfies `filter` to `f`
    /// (stops when `f` returns false). Rows carry their storage key for UPDATE/DELETE.
    /// `needed` (parallel to `names`) limits which columns are converted to values.
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &mut self,
        table: &TableDef,
        access: &Access,
        lock: LockMode,
        filter: Option<&Expr>,
        names: &[String],
        needed: Option<&[bool]>,
        f: &mut RowVisitor<'_>,
    ) -> Result<(), SqlError> {
        let resolved = resolve(access, table, &mut self.no_row_ctx())?;
        let mut err: Option<SqlError> = None;
        let Exec {
            txn, ctx, params, ..
        } = self;
        let mut ev = RowEval {
            ctx: &mut **ctx,
            params,
        };
        // Rows are visited as the store produces them (no materialisation of the range: a
        // full scan of a table larger than memory must not hold it all).
        let mut visited: u64 = 0;
        let mut visit = |r: Row| -> bool {
            // KILL QUERY and max_execution_time reach long scans too, not only SLEEP().
            visited += 1;
            if visited.is_multiple_of(KILL_CHECK_ROWS) && ev.ctx.killed() {
                err = Some(SqlError::Interrupted);
                return false;
            }
            let vals = row_values(table, &r, needed);
            match ev.matches(filter, names, &vals) {
                Ok(true) => match f(&mut ev, r, vals) {
                    Ok(c) => c,
                    Err(e) => {
                        err = Some(e);
                        false
                    }
                },
                Ok(false) => true,
                Err(e) => {
                    err = Some(e);
                    false
                }
            }
        };
        let ranges = match resolved {
            Resolved::Empty => return Ok(()),
            Resolved::PkPoint(k) => {
                if let Some(r) = txn.get(table, &k, lock).map_err(store_err)? {
                    visit(r);
                }
                return err.map_or(Ok(()), Err);
            }
            Resolved::FullScan => vec![(KeyName::Primary, shoal_store::KeyRange::all())],
            Resolved::Range(k, r) => vec![(k, r)],
            Resolved::Ranges(k, rs) => rs.into_iter().map(|r| (k.clone(), r)).collect(),
        };
        for (key, range) in ranges {
            let mut stopped = false;
            let res = match &key {
                KeyName::Primary => txn.scan_pk_with(table, &range, lock, |r| {
                    stopped = !visit(r);
                    Ok(!stopped)
                }),
                KeyName::Index(n) => txn.scan_index_with(table, n, &range, lock, |r| {
                    stopped = !visit(r);
                    Ok(!stopped)
                }),
            };
            res.map_err(store_err)?;
            if stopped {
                break;
            }
        }
        err.map_or(Ok(()), Err)
    }

    /// Rows matching an UPDATE/DELETE, locked exclusively, ordered and limited.
    fn target_rows(
        &mut self,
        table: &TableDef,
        access: &Access,
        filter: Option<&Expr>,
        order_by: &[(Expr, bool)],
        limit: &Option<Expr>,
        names: &[String],
    ) -> Result<Vec<(Row, Vec<Value>)>, SqlError> {
        let limit = to_limit(limit, self.ctx, self.params)?;
        let mut rows: Vec<(Vec<Value>, Row, Vec<Value>)> = Vec::new();
        let early = if order_by.is_empty() { limit } else { None };
        if early == Some(0) || self.impossible(table, filter)? {
            return Ok(Vec::new());
        }
        self.scan(
            table,
            access,
            LockMode::Exclusive,
            filter,
            names,
            None,
            &mut |this, r, vals| {
                let mut keys = Vec::new();
                for (e, _) in order_by {
                    keys.push(this.eval_row(e, names, &vals)?);
                }
                rows.push((keys, r, vals));
                Ok(early.is_none_or(|n| rows.len() < n))
            },
        )?;
        if !order_by.is_empty() {
            let desc: Vec<bool> = order_by.iter().map(|(_, d)| *d).collect();
            sort_by_keys(&mut rows, |r| &r.0, &desc);
        }
        if let Some(l) = limit {
            rows.truncate(l);
        }
        Ok(rows.into_iter().map(|(_, r, v)| (r, v)).collect())
    }

    /// Whether `filter` on `table` decides, before any row is read, that no row matches
    /// (MariaDB's "Impossible WHERE", as for SELECT: see `query::Impossible`): a conjunct
    /// with one value per execution that is not true, one column said to equal two
    /// different values, `IS NULL` on a NOT NULL column. Nothing is read or locked then.
    fn impossible(&mut self, table: &TableDef, filter: Option<&Expr>) -> Result<bool, SqlError> {
        let Some(f) = filter else { return Ok(false) };
        let mut imp = crate::query::Impossible::default();
        let conj = crate::plan::conjuncts(f);
        let fixed = crate::query::fixed_in_statement;
        imp.guards
            .extend(conj.iter().filter(|c| fixed(c)).map(|c| (*c).clone()));
        let column = |e: &Expr| match e {
            Expr::Column(n) | Expr::QColumn(_, n) => {
                table.column_index(n).map(|i| table.columns[i].clone())
            }
            _ => None,
        };
        imp.add_clashes(conj.iter().copied(), column, fixed);
        if imp.is_empty() {
            return Ok(false);
        }
        imp.decided(&mut self.no_row_ctx())
    }

    /// EXPLAIN's row for a single-table UPDATE or DELETE (`stmt`) that reads `table` by
    /// `access` (`query::explain::dml_row`).
    pub fn explain(
        &mut self,
        stmt: &TableStmt,
        table: &TableDef,
        access: &Access,
    ) -> Result<Vec<Vec<Value>>, SqlError> {
        let (t, filter, order_by, limit, sets) = match stmt {
            TableStmt::Update(u) => (&u.table, &u.filter, &u.order_by, &u.limit, Some(&u.sets)),
            TableStmt::Delete(d) => (&d.table, &d.filter, &d.order_by, &d.limit, None),
            _ => return Err(SqlError::Unsupported("EXPLAIN of this statement".into())),
        };
        check_dml_columns(stmt, table)?;
        let sets = sets
            .map(|s| {
                s.iter()
                    .map(|(c, _)| {
                        table
                            .column_index(c)
                            .ok_or_else(|| SqlError::UnknownColumn(c.clone(), "field list".into()))
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        let n = to_limit(limit, self.ctx, self.params)?;
        let nothing = n == Some(0) || self.impossible(table, filter.as_ref())?;
        let rows =
            crate::query::explain::access_rows(self.store, table, access, &mut self.no_row_ctx());
        let target = crate::query::explain::DmlTarget {
            def: table,
            shown: t.alias.as_deref().unwrap_or(&t.name),
            access,
            filter: filter.as_ref(),
            sets,
            ordered: !order_by.is_empty(),
            limited: limit.is_some(),
        };
        Ok(vec![crate::query::explain::dml_row(&target, nothing, rows)])
    }

    /// An evaluation context with this execution's parameters and no row: for what is
    /// decided before any row is read.
    fn no_row_ctx(&mut self) -> RowCtx<'_> {
        RowCtx {
            outer: &mut *self.ctx,
            params: self.params,
            names: &[],
            row: &[],
            aggs: &[],
            values_row: None,
        }
    }

    /// UPDATE.
    pub fn update(
        &mut self,
        u: &UpdateStmt,
        table: &TableDef,
        access: &Access,
    ) -> Result<ExecOutput, SqlError> {
        let names: Vec<String> = table.columns.iter().map(|c| c.name.clone()).collect();
        let mut set_pos = Vec::new();
        for (c, e) in &u.sets {
            let p = table
                .column_index(c)
                .ok_or_else(|| SqlError::UnknownColumn(c.clone(), "field list".into()))?;
            set_pos.push((p, e));
        }
        let rows = self.target_rows(
            table,
            access,
            u.filter.as_ref(),
            &u.order_by,
            &u.limit,
            &names,
        )?;
        let fks = crate::fk::Fks::of(self.store, table, &mut *self.ctx)?;
        let mode = if u.ignore {
            WriteMode::Lenient
        } else {
            self.mode
        };
        let (mut matched, mut changed, mut warnings) = (0u64, 0u64, 0u64);
        for (n, (row, mut vals)) in rows.into_iter().enumerate() {
            matched += 1;
            let mut new = row.values.clone();
            for (p, e) in &set_pos {
                let v = self.eval_row(e, &names, &vals)?;
                let col = &table.columns[*p];
                let mut d = to_column(&v, table, *p, n + 1, mode, &mut *self.ctx, &mut warnings)?;
                if d.is_null() && !col.nullable {
                    let lenient = mode == WriteMode::Lenient;
                    d = null_into_not_null(col, lenient, &mut *self.ctx, &mut warnings)?;
                }
                vals[*p] = datum_to_value(&d, col.ty);
                new[*p] = d;
            }
            if table.same_values(&row.values, &new) {
                continue;
            }
            match self.txn.update(table, &row.key, new.clone()) {
                Ok(true) => {
                    changed += 1;
                    if let Some(f) = &fks {
                        f.after_update(self.txn, table, &row.values, &new, 0)?;
                    }
                }
                // UPDATE IGNORE: a row whose new key is taken keeps its values (MariaDB says
                // nothing about it).
                Ok(false) | Err(StoreError::DuplicateKey { .. }) if u.ignore => {}
                Ok(false) => {}
                Err(e) => return Err(store_err(e)),
            }
        }
        Ok(ExecOutput::Ok {
            affected_rows: changed,
            last_insert_id: 0,
            info: format!("Rows matched: {matched}  Changed: {changed}  Warnings: {warnings}"),
            warnings: u16::try_from(warnings).unwrap_or(u16::MAX),
        })
    }

    /// DELETE.
    pub fn delete(
        &mut self,
        d: &DeleteStmt,
        table: &TableDef,
        access: &Access,
    ) -> Result<ExecOutput, SqlError> {
        let names: Vec<String> = table.columns.iter().map(|c| c.name.clone()).collect();
        let rows = self.target_rows(
            table,
            access,
            d.filter.as_ref(),
            &d.order_by,
            &d.limit,
            &names,
        )?;
        let fks = crate::fk::Fks::of(self.store, table, &mut *self.ctx)?;
        let mut n = 0;
        for (row, _) in rows {
            if let Some(f) = &fks {
                f.before_delete(self.txn, table, &row.values, 0)?;
            }
            if self.txn.delete(table, &row.key).map_err(store_err)? {
                n += 1;
            }
        }
        Ok(ExecOutput::ok(n))
    }

    /// INSERT / REPLACE (`from_select`: its rows come from INSERT ... SELECT, which MySQL
    /// treats as several rows whatever their number).
    pub fn insert(
        &mut self,
        ins: &InsertStmt,
        table: &TableDef,
        from_select: bool,
    ) -> Result<ExecOutput, SqlError> {
        let names: Vec<String> = table.columns.iter().map(|c| c.name.clone()).collect();
        let positions: Vec<usize> = if ins.columns.is_empty() {
            (0..table.columns.len()).collect()
        } else {
            ins.columns
                .iter()
                .map(|c| {
                    table
                        .column_index(c)
                        .ok_or_else(|| SqlError::UnknownColumn(c.clone(), "field list".into()))
                })
                .collect::<Result<_, _>>()?
        };
        let mut dup_sets = Vec::new();
        for (c, e) in &ins.on_dup {
            let p = table
                .column_index(c)
                .ok_or_else(|| SqlError::UnknownColumn(c.clone(), "field list".into()))?;
            dup_sets.push((p, e));
        }
        let fks = crate::fk::Fks::of(self.store, table, &mut *self.ctx)?;
        let mode = if ins.ignore {
            WriteMode::Lenient
        } else {
            self.mode
        };
        // NULL into a NOT NULL column: refused for one row of VALUES even when not strict.
        let null_lenient =
            mode == WriteMode::Lenient && (ins.ignore || from_select || ins.rows.len() > 1);
        let now = self.ctx.now();
        let mut affected = 0u64;
        let mut first_id = 0u64;
        let mut duplicates = 0u64;
        let mut warnings = 0u64;
        // NOT NULL columns without a DEFAULT the column list leaves out: 1364, or when not
        // strict one warning each for the statement and the type's implicit default.
        let mut implicit = Vec::new();
        let listed = |i: usize| positions.contains(&i);
        for (i, c) in table.columns.iter().enumerate() {
            if !listed(i) && c.default.is_none() && !c.nullable && !c.auto_increment {
                let e = SqlError::coded(
                    shoal_errors::ER_NO_DEFAULT_FOR_FIELD,
                    format!("Field '{}' doesn't have a default value", c.name),
                );
                if mode == WriteMode::Strict {
                    return Err(e);
                }
                let w = crate::convert::Warning {
                    note: false,
                    code: e.code(),
                    message: e.to_string(),
                };
                report(vec![w], &mut *self.ctx, &mut warnings);
                implicit.push(i);
            }
        }
        for (rn, exprs) in ins.rows.iter().enumerate() {
            let rown = rn + 1;
            if exprs.len() != positions.len() {
                return Err(SqlError::coded(
                    shoal_errors::ER_WRONG_VALUE_COUNT_ON_ROW,
                    format!("Column count doesn't match value count at row {rown}"),
                ));
            }
            let mut vals: Vec<Datum> = Vec::with_capacity(table.columns.len());
            for c in &table.columns {
                vals.push(match &c.default {
                    Some(ColumnDefault::Value(d)) => d.clone(),
                    Some(ColumnDefault::CurrentTimestamp) => {
                        value_to_datum(&Value::DateTime(now, 6), c.ty, &c.name, rown)?
                    }
                    None => Datum::Null,
                });
            }
            for &i in &implicit {
                vals[i] = table.columns[i].ty.implicit_default();
            }
            for (e, &p) in exprs.iter().zip(&positions) {
                if let Some(e) = e {
                    let v = self.eval_row(e, &[], &[])?;
                    let col = &table.columns[p];
                    let mut d = to_column(&v, table, p, rown, mode, &mut *self.ctx, &mut warnings)?;
                    // NULL into AUTO_INCREMENT asks for the next value.
                    let timestamp = matches!(col.ty, ColumnType::Timestamp(_));
                    if d.is_null()
                        && !col.nullable
                        && !col.auto_increment
                        && (null_lenient || timestamp)
                    {
                        d = null_into_not_null(col, true, &mut *self.ctx, &mut warnings)?;
                    }
                    vals[p] = d;
                }
            }
            let proposed = vals;
            loop {
                let outcome = if ins.ignore || ins.replace || !dup_sets.is_empty() {
                    self.txn
                        .try_insert(table, proposed.clone())
                        .map_err(store_err)?
                } else {
                    let (key, auto_id) = self
                        .txn
                        .insert(table, proposed.clone())
                        .map_err(store_err)?;
                    InsertOutcome::Inserted { key, auto_id }
                };
                match outcome {
                    InsertOutcome::Inserted { auto_id, .. } => {
                        if let Some(f) = &fks {
                            f.after_insert(self.txn, table, &proposed)?;
                        }
                        affected += 1;
                        if let Some(id) = auto_id {
                            if first_id == 0 {
                                first_id = id;
                            }
                        }
                        break;
                    }
                    InsertOutcome::Duplicate {
                        existing,
                        error_value,
                        key_name,
                    } => {
                        if ins.replace {
                            if let Some(f) = &fks {
                                f.before_delete(self.txn, table, &existing.values, 0)?;
                            }
                            self.txn.delete(table, &existing.key).map_err(store_err)?;
                            affected += 1;
                            continue;
                        }
                        if !dup_sets.is_empty() {
                            let mut cur = row_values(table, &existing, None);
                            let prop: Vec<Value> = proposed
                                .iter()
                                .zip(&table.columns)
                                .map(|(d, c)| datum_to_value(d, c.ty))
                                .collect();
                            let mut new = existing.values.clone();
                            for (p, e) in &dup_sets {
                                let v = {
                                    let mut rc = RowCtx {
                                        outer: &mut *self.ctx,
                                        params: self.params,
                                        names: &names,
                                        row: &cur,
                                        aggs: &[],
                                        values_row: Some(&prop),
                                    };
                                    eval(e, &mut rc)?
                                };
                                let col = &table.columns[*p];
                                let d = to_column(
                                    &v,
                                    table,
                                    *p,
                                    rown,
                                    mode,
                                    &mut *self.ctx,
                                    &mut warnings,
                                )?;
                                cur[*p] = datum_to_value(&d, col.ty);
                                new[*p] = d;
                            }
                            if new != existing.values {
                                self.txn
                                    .update(table, &existing.key, new.clone())
                                    .map_err(store_err)?;
                                if let Some(f) = &fks {
                                    f.after_update(self.txn, table, &existing.values, &new, 0)?;
                                }
                                affected += 2;
                            }
                            break;
                        }
                        // INSERT IGNORE: skip the row with a warning.
                        let dup = StoreError::DuplicateKey {
                            key_name,
                            value: error_value,
                        };
                        report(
                            vec![crate::convert::Warning {
                                note: false,
                                code: shoal_errors::ER_DUP_ENTRY.code,
                                message: dup.to_string(),
                            }],
                            &mut *self.ctx,
                            &mut warnings,
                        );
                        duplicates += 1;
                        break;
                    }
                }
            }
        }
        if first_id != 0 {
            self.ctx.set_last_insert_id(first_id);
        }
        let info = if ins.rows.len() > 1 || from_select {
            format!(
                "Records: {}  Duplicates: {duplicates}  Warnings: {warnings}",
                ins.rows.len()
            )
        } else {
            String::new()
        };
        Ok(ExecOutput::Ok {
            affected_rows: affected,
            last_insert_id: first_id,
            info,
            warnings: u16::try_from(warnings).unwrap_or(u16::MAX),
        })
    }
}

#[cfg(test)]
mod sort_tests {
    use super::*;

    /// Sorting strings by their folded weights orders rows exactly as the comparison sort
    /// does (stable, NULL first, per-column direction), over random rows with case variants,
    /// trailing spaces, expanding and non-ASCII characters, short and past the sort's
    /// integer prefix.
    #[test]
    fn weight_sort_orders_as_the_comparison_sort() {
        const PARTS: &[&str] = &[
            "a", "A", "b", "ß", "ss", "SS", " ", "é", "z", "ǅ", "ı", "I", "1",
        ];
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for round in 0..300 {
            let n = 17 + next(60);
            let cols = 1 + next(2);
            let desc: Vec<bool> = (0..cols).map(|_| next(2) == 0).collect();
            let rows: Vec<(Vec<Value>, usize)> = (0..n)
                .map(|id| {
                    let key = (0..cols)
                        .map(|_| match next(8) {
                            0 => Value::Null,
                            _ => {
                                // Half share a prefix longer than the sort's 8-byte integer
                                // prefix, so that ties on it are decided by the weights.
                                let mut s = String::from(["", "prefix-0123-"][next(2)]);
                                s.extend((0..next(4)).map(|_| PARTS[next(PARTS.len())]));
                                Value::Str(s)
                            }
                        })
                        .collect();
                    (key, id)
                })
                .collect();
            let mut by_weight = rows.clone();
            sort_by_keys(&mut by_weight, |r| &r.0, &desc);
            let mut by_cmp = rows.clone();
            let modes = vec![KeyMode::Native; cols];
            by_cmp.sort_by(|a, b| cmp_keys(&a.0, &b.0, &desc, &modes));
            let ids = |v: &[(Vec<Value>, usize)]| v.iter().map(|r| r.1).collect::<Vec<_>>();
            assert_eq!(
                ids(&by_weight),
                ids(&by_cmp),
                "round {round}, desc {desc:?}"
            );
        }
    }

    /// Found by fuzzing: ORDER BY compared mixed kinds value by value, no total order, and
    /// the standard sort panicked ("comparison function does not correctly implement a total
    /// order"). Any mix sorts, as text when kinds are mixed, NULL first.
    #[test]
    fn sort_keys_of_mixed_kinds_are_a_total_order() {
        let mut vals = Vec::new();
        for i in 0..60i64 {
            vals.push(Value::Int(i * 3 - 20));
            vals.push(Value::Str(format!("{}", i * 7)));
            vals.push(Value::Double(i as f64 / 3.0));
            vals.push(Value::Str(format!("x{i}")));
        }
        vals.push(Value::Null);
        vals.push(Value::UInt(u64::MAX));
        vals.push(Value::Int(9_007_199_254_740_993));
        vals.push(Value::Double(9_007_199_254_740_992.0));
        // A deterministic shuffle, many times over.
        let mut seed = 7u64;
        for round in 0..50 {
            let mut rows: Vec<(Vec<Value>, usize)> = vals
                .iter()
                .enumerate()
                .map(|(i, v)| (vec![v.clone()], i))
                .collect();
            for i in (1..rows.len()).rev() {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                rows.swap(i, (seed >> 33) as usize % (i + 1));
            }
            let desc = [round % 2 == 1];
            sort_by_keys(&mut rows, |r| &r.0, &desc);
            let texts: Vec<String> = rows.iter().filter_map(|r| r.0[0].to_text()).collect();
            let mut want = texts.clone();
            want.sort_by(|a, b| shoal_sql::value::collate_cmp(a, b));
            if desc[0] {
                want.reverse();
                assert!(rows.last().is_some_and(|r| r.0[0].is_null()));
            } else {
                assert!(rows[0].0[0].is_null());
            }
            assert_eq!(texts, want);
        }
        // One kind: numbers compare as numbers, exactly while no DOUBLE is among them.
        let mut rows = vec![
            (vec![Value::Int(10)], 0),
            (vec![Value::Int(9)], 1),
            (vec![Value::UInt(u64::MAX)], 2),
            (vec![Value::Int(-1)], 3),
        ];
        sort_by_keys(&mut rows, |r| &r.0, &[false]);
        assert_eq!(rows.iter().map(|r| r.1).collect::<Vec<_>>(), [3, 1, 0, 2]);
    }
}
