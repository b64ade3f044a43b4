//! Access-path planning for single-table statements.
//!
//! The WHERE clause is split into AND-ed conjuncts; each conjunct of the form
//! `col = e`, `col IN (e, ...)`, `col BETWEEN e AND e`, `col < e` (etc., either side) where `e`
//! does not reference any column (literals, `?` parameters, variables, functions of them) is a
//! candidate key predicate, and so is `col IS NULL` on a nullable column: an equality with the
//! NULL key ([`null_key`]; on a UNIQUE key it is a prefix lookup, not a point, since a UNIQUE
//! key holds any number of NULLs). Every key (the PRIMARY KEY, then each secondary index) is
//! scored:
//!
//! | path | when | score |
//! |---|---|---|
//! | point get | `=` on every PRIMARY KEY column | 100 |
//! | unique index point | `=` on every column of a UNIQUE index | 90 |
//! | IN list | `IN` on the first key column | 80 (PK) / 70 |
//! | prefix (+ range) | `=` on leading columns, optionally a range on the next | 50 + prefix length |
//! | range | range on the first key column | 41 (PK) / 40 |
//! | union of ranges | an OR-ed conjunct each of whose disjuncts gives one of the above | its weakest part's, at most 79 |
//! | full scan | otherwise | 0 |
//!
//! The highest score wins (the PRIMARY KEY on ties). An OR-ed conjunct (`id = 1 OR id > 9`,
//! `(a = 1 AND b > 2) OR a = 5`, `id IN (1, 2) OR id BETWEEN 10 AND 20`) becomes a multi-range
//! scan of one key when every disjunct, together with the other conjuncts, restricts that key
//! ([`plan_union`]); one disjunct that does not makes the union a full scan. The parts' ranges
//! are sorted and merged at each execution ([`merge_ranges`], on their encoded spans), so a key
//! two disjuncts share is read once and the rows come in key order (ORDER BY served by the
//! key, ascending or descending, still holds). The chosen path only narrows what is read:
//! the executor always re-applies the complete WHERE clause to every row it reads, so a path is
//! allowed to return a superset of the matching rows and correctness never depends on the path.
//! Keys are used on integer, DECIMAL, DOUBLE, DATE, DATETIME, TIMESTAMP and TIME columns, and on CHAR,
//! VARCHAR and TEXT columns of collated keys (a bound value becomes a key only where key order
//! is SQL's comparison: see `exact_key`, `temporal_key`, `string_key`). A collated key
//! (`KeyFormat::Collated`) holds strings as collation weights, ordered and compared as SQL
//! compares strings (`shoal_collation`), and storage encodes a string bound with the same weight
//! function, so `c = 'abc'` reads exactly the rows whose `c` is 'abc', 'ABC' or 'abc  '. A bound
//! that is not a string (`c = 5`) compares as a number in SQL, so it never uses a string key.
//! Keys of the old `KeyFormat::Binary` (tables from before collated keys) hold the strings'
//! bytes: their string columns are never used, and never taken for ORDER BY order either.
//! BINARY, VARBINARY and BLOB columns are keys in every key format: SQL compares a binary string
//! with a string bytewise (`shoal_sql::value::compare`), and their keys hold the bytes
//! themselves, so key order is SQL's order. A string or bytes bound is the key as it is
//! (`binary_key`), never padded: BINARY's `0x00` padding is part of the stored value, and
//! `b = 'a'` does not match a BINARY(4) holding `a\0\0\0` (as in MariaDB). A bound of a length
//! no value of the column has is no key (see `binary_key`).
//!
//! A plan holds expressions, not values: [`resolve`] evaluates them against the parameters of
//! one execution and converts them to key values for storage. A bound that does not fit the key
//! column exactly (`id > 2.5` on an INT, `id < -1` on an UNSIGNED column) is dropped (the range
//! becomes wider, never narrower); an equality or IN value that does not fit falls back to a
//! full scan.

use std::ops::Bound;

use shoal_sql::ast::{BinOp, Expr};
use shoal_sql::eval::{eval, Context};
use shoal_sql::value::{compare, Value};

use crate::convert::datum_to_value;
use shoal_sql::SqlError;
use shoal_store::{ColumnType, Datum, KeyFormat, KeyRange, TableDef};

/// A bound expression of a range.
#[derive(Debug, Clone, PartialEq)]
pub enum BoundExpr {
    /// No bound.
    Unbounded,
    /// `>=` / `<=`.
    Included(Expr),
    /// `>` / `<`.
    Excluded(Expr),
    /// The lowest string `col LIKE pattern` can match: its literal prefix (see [`like_range`]).
    LikeLo(Expr, Option<char>),
    /// Above every string `col LIKE pattern` can match (see [`like_range`]).
    LikeHi(Expr, Option<char>),
}

/// The key range of strings that `LIKE pattern` (with `escape`) can match: `[lo, hi)` in the
/// collation's order, from the pattern's literal prefix up to its first `%` or `_`. `None`
/// when the prefix gives no usable range.
///
/// The range must hold every match (the LIKE itself is still checked on every row read). A
/// collated key orders strings by their uppercase fold, while LIKE compares lowercase
/// (`shoal_sql::eval::like`), and the two agree on which strings start with an ASCII prefix
/// except for the two characters whose lowercase is ASCII and whose uppercase is not: U+0130
/// (`İ`, lowercase `i̇`) and U+212A (Kelvin sign, lowercase `k`). So only ASCII prefixes
/// without `i` or `k` are used (a test checks that list against every code point). `lo` is
/// the prefix without trailing spaces (PAD SPACE); `hi` is it with the last character raised
/// until its fold is above the prefix's last one: every fold starting with the prefix sorts
/// below it.
pub fn like_range(pattern: &str, escape: Option<char>) -> Option<(String, String)> {
    let escape = escape.unwrap_or('\\');
    let mut prefix = String::new();
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        let c = match c {
            '%' | '_' => break,
            c if c == escape => match it.next() {
                Some(q) => q,
                None => c,
            },
            c => c,
        };
        if !c.is_ascii() || matches!(c, 'i' | 'I' | 'k' | 'K') {
            break;
        }
        prefix.push(c.to_ascii_uppercase());
    }
    let lo = prefix.trim_end_matches(' ').to_string();
    let last = *lo.as_bytes().last()?;
    let mut bump = last + 1;
    while bump.to_ascii_uppercase() <= last {
        bump += 1;
    }
    let mut hi = lo[..lo.len() - 1].to_string();
    hi.push(char::from_u32(u32::from(bump)).unwrap_or('\u{80}'));
    Some((lo, hi))
}

/// Which key an access path uses.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyName {
    /// The primary key.
    Primary,
    /// A secondary index, by name.
    Index(String),
}

/// How rows are found.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// Read every row.
    FullScan,
    /// `get` by the full primary key.
    PkPoint(Vec<Expr>),
    /// One lookup per listed value of the first key column.
    In {
        /// Key used.
        key: KeyName,
        /// Values.
        list: Vec<Expr>,
    },
    /// Equal prefix plus an optional range on the next key column.
    Range {
        /// Key used.
        key: KeyName,
        /// Values of the leading key columns.
        prefix: Vec<Expr>,
        /// Lower bound on the next column.
        lo: BoundExpr,
        /// Upper bound on the next column.
        hi: BoundExpr,
    },
    /// The union of several paths on one key (`PkPoint`, `In` or `Range`), one per disjunct of
    /// an OR-ed conjunct: resolved to their ranges, sorted and merged so that no key is read
    /// twice (see [`merge_ranges`]).
    Union {
        /// Key used.
        key: KeyName,
        /// One path per disjunct, each on `key`.
        parts: Vec<Access>,
    },
}

/// An access path with values bound, ready for storage.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// Scan everything.
    FullScan,
    /// No row can match (e.g. `id = NULL`).
    Empty,
    /// Point get.
    PkPoint(Vec<Datum>),
    /// Several ranges on one key, in key order, disjoint (IN lists, OR-ed conditions).
    Ranges(KeyName, Vec<KeyRange>),
    /// One range.
    Range(KeyName, KeyRange),
}

/// Splits `a AND b AND c` into its conjuncts.
pub fn conjuncts(e: &Expr) -> Vec<&Expr> {
    let mut v = Vec::new();
    split(e, BinOp::And, &mut v);
    v
}

/// Splits `a OR b OR c` into its disjuncts.
pub fn disjuncts(e: &Expr) -> Vec<&Expr> {
    let mut v = Vec::new();
    split(e, BinOp::Or, &mut v);
    v
}

/// The operands of a chain of `op` (left to right), into `out`.
fn split<'e>(e: &'e Expr, op: BinOp, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::Binary(o, a, b) if *o == op => {
            split(a, op, out);
            split(b, op, out);
        }
        other => out.push(other),
    }
}

/// Whether a range access has a bound on its next key column (not only an equal prefix).
pub fn ranged(lo: &BoundExpr, hi: &BoundExpr) -> bool {
    *lo != BoundExpr::Unbounded || *hi != BoundExpr::Unbounded
}

/// Whether an expression reads no column (may still read parameters and variables).
pub fn is_row_independent(e: &Expr) -> bool {
    match e {
        Expr::Column(_) | Expr::QColumn(..) | Expr::AssignUserVar(..) => false,
        // A bound column of a source read earlier (the query engine's nested loops), or of an
        // enclosing query: constant while this table is read.
        Expr::Slot(_) => true,
        Expr::Aggregate(_) | Expr::Subquery(_) => false,
        Expr::Literal(_) | Expr::Param(_) | Expr::SysVar(..) | Expr::UserVar(_) => true,
        Expr::Unary(_, a) | Expr::IsNull(a, _) | Expr::IsBool(a, _, _) | Expr::Cast(a, _) => {
            is_row_independent(a)
        }
        Expr::Binary(_, a, b) | Expr::Like(a, b, _, _) => {
            is_row_independent(a) && is_row_independent(b)
        }
        Expr::InList(a, l, _) => is_row_independent(a) && l.iter().all(is_row_independent),
        Expr::Between(a, b, c, _) => {
            is_row_independent(a) && is_row_independent(b) && is_row_independent(c)
        }
        Expr::Case(o, w, el) => {
            o.as_deref().is_none_or(is_row_independent)
                && w.iter()
                    .all(|(a, b)| is_row_independent(a) && is_row_independent(b))
                && el.as_deref().is_none_or(is_row_independent)
        }
        Expr::Function(name, args) => {
            // RAND(), SLEEP() and friends are evaluated per row in MySQL.
            !matches!(name.as_str(), "RAND" | "SLEEP" | "UUID")
                && args.iter().all(is_row_independent)
        }
    }
}

/// The key part an `IS NULL` conjunct fixes: the NULL key, which an equality cannot ask for
/// (`col = NULL` matches nothing). A parameter number no statement has, so no expression a
/// query writes is ever taken for it; [`resolve`] gives it `Datum::Null`, EXPLAIN's `ref`
/// shows it as `const`, and it is never evaluated as an expression.
pub fn null_key() -> Expr {
    Expr::Param(usize::MAX)
}

/// Whether a key part's expression is [`null_key`].
pub fn is_null_key(e: &Expr) -> bool {
    matches!(e, Expr::Param(usize::MAX))
}

#[derive(Debug, Clone)]
enum Pred {
    Eq(Expr),
    In(Vec<Expr>),
    Lo(Expr, bool),
    Hi(Expr, bool),
    /// `col LIKE pattern [ESCAPE c]` on a string column: a range from the pattern's prefix.
    Like(Expr, Option<char>),
}

fn column_pos(table: &TableDef, e: &Expr) -> Option<usize> {
    match e {
        Expr::Column(c) => table.column_index(c),
        _ => None,
    }
}

/// Whether a key column of type `ty` in a key of `format` can be looked up by SQL values.
fn key_type_ok(ty: ColumnType, format: KeyFormat) -> bool {
    match ty {
        ColumnType::Int { .. }
        | ColumnType::Decimal { .. }
        | ColumnType::Date
        | ColumnType::DateTime(_)
        | ColumnType::Timestamp(_)
        | ColumnType::Time(_) => true,
        ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Text => {
            format == KeyFormat::Collated
        }
        ColumnType::Blob | ColumnType::Binary(_) | ColumnType::Varbinary(_) => true,
        // SQL compares a DOUBLE with anything as doubles (`double_key`). A FLOAT's key holds
        // the double an older build stored unrounded for its rows, not the single-precision
        // value SQL compares: no key.
        ColumnType::Double(_) => true,
        ColumnType::Float(_) => false,
    }
}

/// Whether rows read in the order of `key` come in SQL's ascending order of its columns `cols`
/// (a prefix of the key's columns): every column but strings of binary keys (old tables).
pub(crate) fn key_orders_as_sql(table: &TableDef, key: &KeyName, cols: &[usize]) -> bool {
    let format = match key {
        KeyName::Primary => table.pk_format,
        KeyName::Index(n) => table.key_format(Some(n)),
    };
    cols.iter().all(|&c| match table.columns[c].ty {
        ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Text => {
            format == KeyFormat::Collated
        }
        _ => true,
    })
}

/// A literal that is known at plan time never to be a key of column `col`: a number (or any
/// non-string) against a string column, which SQL compares as numbers. Such a conjunct is no
/// key predicate, so EXPLAIN shows the scan that runs (`?` and other expressions are decided
/// per execution by `string_key`).
fn never_a_key(table: &TableDef, col: usize, e: &Expr) -> bool {
    let ty = table.columns[col].ty;
    match e {
        Expr::Literal(Value::Str(_) | Value::Null) => false,
        // A binary string against a binary string column compares bytewise, as the key does.
        Expr::Literal(Value::Bytes(_)) => ty.is_text(),
        Expr::Literal(_) => ty.is_text() || ty.is_binary_string(),
        _ => false,
    }
}

fn predicates(table: &TableDef, filter: Option<&Expr>) -> Vec<(usize, Pred)> {
    let Some(f) = filter else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for c in conjuncts(f) {
        match c {
            Expr::Binary(op, a, b) => {
                let (col, val, flipped) = match (column_pos(table, a), column_pos(table, b)) {
                    (Some(p), _) if is_row_independent(b) => (p, (**b).clone(), false),
                    (_, Some(p)) if is_row_independent(a) => (p, (**a).clone(), true),
                    _ => continue,
                };
                if never_a_key(table, col, &val) {
                    continue;
                }
                let p = match (op, flipped) {
                    (BinOp::Eq, _) => Pred::Eq(val),
                    (BinOp::Lt, false) | (BinOp::Gt, true) => Pred::Hi(val, false),
                    (BinOp::LtEq, false) | (BinOp::GtEq, true) => Pred::Hi(val, true),
                    (BinOp::Gt, false) | (BinOp::Lt, true) => Pred::Lo(val, false),
                    (BinOp::GtEq, false) | (BinOp::LtEq, true) => Pred::Lo(val, true),
                    _ => continue,
                };
                out.push((col, p));
            }
            Expr::Between(a, lo, hi, false) => {
                if let Some(p) = column_pos(table, a) {
                    if is_row_independent(lo)
                        && is_row_independent(hi)
                        && !never_a_key(table, p, lo)
                        && !never_a_key(table, p, hi)
                    {
                        out.push((p, Pred::Lo((**lo).clone(), true)));
                        out.push((p, Pred::Hi((**hi).clone(), true)));
                    }
                }
            }
            Expr::Like(a, pat, esc, false) => {
                if let Some(p) = column_pos(table, a) {
                    let text = matches!(
                        table.columns[p].ty,
                        ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Text
                    );
                    if text && is_row_independent(pat) {
                        out.push((p, Pred::Like((**pat).clone(), *esc)));
                    }
                }
            }
            // `col IS NULL` on a nullable column: the NULL key, an equality prefix like
            // `col = 5` (MariaDB's `ref` access). A NOT NULL column has no NULL key.
            Expr::IsNull(a, false) => {
                if let Some(p) = column_pos(table, a) {
                    if table.columns[p].nullable {
                        out.push((p, Pred::Eq(null_key())));
                    }
                }
            }
            Expr::InList(a, list, false) => {
                if let Some(p) = column_pos(table, a) {
                    if list
                        .iter()
                        .all(|e| is_row_independent(e) && !never_a_key(table, p, e))
                    {
                        out.push((p, Pred::In(list.clone())));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn plan_key(
    cols: &[usize],
    table: &TableDef,
    preds: &[(usize, Pred)],
    key: KeyName,
    unique: bool,
    format: KeyFormat,
) -> (u32, Access) {
    let is_pk = key == KeyName::Primary;
    if cols
        .iter()
        .any(|&c| !key_type_ok(table.columns[c].ty, format))
    {
        return (0, Access::FullScan);
    }
    let eq_of = |c: usize| {
        preds.iter().find_map(|(p, pr)| match pr {
            Pred::Eq(e) if *p == c => Some(e.clone()),
            _ => None,
        })
    };
    let mut prefix = Vec::new();
    for &c in cols {
        match eq_of(c) {
            Some(e) => prefix.push(e),
            None => break,
        }
    }
    if prefix.len() == cols.len() {
        if is_pk {
            return (100, Access::PkPoint(prefix));
        }
        // A UNIQUE key holds any number of NULLs: a NULL part makes it a prefix lookup.
        let score = if unique && !prefix.iter().any(is_null_key) {
            90
        } else {
            50 + prefix.len() as u32
        };
        return (
            score,
            Access::Range {
                key,
                prefix,
                lo: BoundExpr::Unbounded,
                hi: BoundExpr::Unbounded,
            },
        );
    }
    if prefix.is_empty() {
        if let Some(list) = preds.iter().find_map(|(p, pr)| match pr {
            Pred::In(l) if *p == cols[0] => Some(l.clone()),
            _ => None,
        }) {
            return (if is_pk { 80 } else { 70 }, Access::In { key, list });
        }
    }
    let next = cols[prefix.len()];
    let lo = preds
        .iter()
        .find_map(|(p, pr)| match pr {
            Pred::Lo(e, inc) if *p == next => Some(if *inc {
                BoundExpr::Included(e.clone())
            } else {
                BoundExpr::Excluded(e.clone())
            }),
            Pred::Like(e, esc) if *p == next => Some(BoundExpr::LikeLo(e.clone(), *esc)),
            _ => None,
        })
        .unwrap_or(BoundExpr::Unbounded);
    let hi = preds
        .iter()
        .find_map(|(p, pr)| match pr {
            Pred::Hi(e, inc) if *p == next => Some(if *inc {
                BoundExpr::Included(e.clone())
            } else {
                BoundExpr::Excluded(e.clone())
            }),
            Pred::Like(e, esc) if *p == next => Some(BoundExpr::LikeHi(e.clone(), *esc)),
            _ => None,
        })
        .unwrap_or(BoundExpr::Unbounded);
    let ranged = lo != BoundExpr::Unbounded || hi != BoundExpr::Unbounded;
    let score = match (prefix.len(), ranged) {
        (0, false) => return (0, Access::FullScan),
        (0, true) => {
            if is_pk {
                41
            } else {
                40
            }
        }
        (n, _) => 50 + n as u32,
    };
    (
        score,
        Access::Range {
            key,
            prefix,
            lo,
            hi,
        },
    )
}

/// The keys of `table` as `(columns, name, unique, format)`: the primary key first.
fn keys_of(table: &TableDef) -> Vec<(&[usize], KeyName, bool, KeyFormat)> {
    let mut out = Vec::new();
    if let Some(pk) = &table.primary_key {
        out.push((&pk[..], KeyName::Primary, true, table.pk_format));
    }
    for ix in &table.indexes {
        out.push((
            &ix.columns[..],
            KeyName::Index(ix.name.clone()),
            ix.unique,
            ix.format,
        ));
    }
    out
}

/// The best union on one key for the OR-ed conjunct whose disjuncts are `ors`, the other
/// conjuncts giving `outer`: each disjunct, with the outer conjuncts (a row must satisfy both),
/// must restrict the key, or there is no union (a disjunct that leaves the key free can match
/// any row of it). Scored as its weakest part (`a = 1 AND (b = 2 OR b = 5)` on `(a, b)` is
/// two two-part prefixes, better than the one-part prefix `a = 1`; a path the outer conjuncts
/// alone give as well keeps the tie), and never above an IN list on the primary key (80),
/// which reads the same.
fn plan_union(
    table: &TableDef,
    outer: &[(usize, Pred)],
    ors: &[&Expr],
    key: (&[usize], KeyName, bool, KeyFormat),
) -> Option<(u32, Access)> {
    let (cols, name, unique, format) = key;
    let mut parts = Vec::with_capacity(ors.len());
    let mut score = u32::MAX;
    for d in ors {
        let mut preds = outer.to_vec();
        preds.extend(predicates(table, Some(d)));
        let (s, a) = plan_key(cols, table, &preds, name.clone(), unique, format);
        if s == 0 {
            return None;
        }
        score = score.min(s);
        parts.push(a);
    }
    Some((score.clamp(1, 79), Access::Union { key: name, parts }))
}

/// Chooses the access path for `filter` on `table`: the best single path of its AND-ed
/// conjuncts ([`plan_key`] per key), or a union of ranges on one key for an OR-ed conjunct
/// ([`plan_union`]), whichever scores higher.
pub fn choose_access(table: &TableDef, filter: Option<&Expr>) -> Access {
    let preds = predicates(table, filter);
    let mut best = (0u32, Access::FullScan);
    if !preds.is_empty() {
        for (cols, name, unique, format) in keys_of(table) {
            let cand = plan_key(cols, table, &preds, name, unique, format);
            if cand.0 > best.0 {
                best = cand;
            }
        }
    }
    let ors = filter.map_or_else(Vec::new, |f| {
        conjuncts(f)
            .into_iter()
            .filter(|c| matches!(c, Expr::Binary(BinOp::Or, ..)))
            .collect()
    });
    for or in ors {
        let ds = disjuncts(or);
        for key in keys_of(table) {
            if let Some(cand) = plan_union(table, &preds, &ds, key) {
                if cand.0 > best.0 {
                    best = cand;
                }
            }
        }
    }
    best.1
}

/// The keys an access path could read `table` by for `filter` (EXPLAIN's `possible_keys`):
/// those a conjunct restricts ([`plan_key`] gives them a path), or an OR-ed conjunct as a
/// union ([`plan_union`]). In key order, the primary key first.
pub fn possible_keys(table: &TableDef, filter: Option<&Expr>) -> Vec<KeyName> {
    let preds = predicates(table, filter);
    let ors: Vec<Vec<&Expr>> = filter.map_or_else(Vec::new, |f| {
        conjuncts(f)
            .into_iter()
            .filter(|c| matches!(c, Expr::Binary(BinOp::Or, ..)))
            .map(disjuncts)
            .collect()
    });
    keys_of(table)
        .into_iter()
        .filter(|(cols, name, unique, format)| {
            (!preds.is_empty()
                && plan_key(cols, table, &preds, name.clone(), *unique, *format).0 > 0)
                || ors.iter().any(|ds| {
                    plan_union(table, &preds, ds, (cols, name.clone(), *unique, *format)).is_some()
                })
        })
        .map(|(_, name, _, _)| name)
        .collect()
}

/// How many bytes MariaDB counts for one key part on column `col` (EXPLAIN's `key_len` is
/// the sum over the key parts a path uses): the column's fixed size in the key, a VARCHAR's
/// or VARBINARY's 2 length bytes, 1 more for a nullable column. Strings count 4 bytes per
/// character (utf8mb4); DECIMAL its packed size (4 bytes per 9 digits, each side of the
/// point); DATETIME and TIMESTAMP 5 and 4 bytes plus their fraction's.
pub fn key_part_len(col: &shoal_store::ColumnDef) -> u32 {
    let len = match col.ty {
        ColumnType::Int { bytes, .. } => u32::from(bytes),
        ColumnType::Float(_) => 4,
        ColumnType::Double(_) => 8,
        ColumnType::Decimal { precision, scale } => {
            decimal_bytes(precision.saturating_sub(scale)) + decimal_bytes(scale)
        }
        ColumnType::Char(n) => 4 * n,
        ColumnType::Varchar(n) => 4 * n + 2,
        ColumnType::Binary(n) => n,
        ColumnType::Varbinary(n) => n + 2,
        // Not a key part MariaDB takes whole; its largest prefix.
        ColumnType::Text | ColumnType::Blob => 3072 + 2,
        ColumnType::Date => 3,
        // 5 and 4 bytes, and half a byte per fractional digit (rounded up).
        ColumnType::DateTime(f) => 5 + u32::from(f).div_ceil(2),
        ColumnType::Timestamp(f) => 4 + u32::from(f).div_ceil(2),
        ColumnType::Time(f) => 3 + u32::from(f).div_ceil(2),
    };
    len + u32::from(col.nullable)
}

/// The packed size of `digits` decimal digits: 4 bytes per 9, the rest as few as hold them.
fn decimal_bytes(digits: u8) -> u32 {
    const REST: [u32; 9] = [0, 1, 1, 2, 2, 3, 3, 4, 4];
    u32::from(digits / 9) * 4 + REST[usize::from(digits % 9)]
}

/// [`key_part_len`] summed over the first `parts` columns of `key`.
pub fn key_len(table: &TableDef, key: &KeyName, parts: usize) -> u32 {
    key_columns(table, key)
        .iter()
        .take(parts)
        .map(|&c| key_part_len(&table.columns[c]))
        .sum()
}

/// About how many bytes a row of `table` takes (MariaDB's record length): what a full scan
/// of the primary key reads per row, against an index's key length plus the primary key's
/// (what its entries hold) when choosing the narrowest covering key.
pub fn record_len(table: &TableDef) -> u32 {
    let nullable = table.columns.iter().filter(|c| c.nullable).count() as u32;
    let fields: u32 = table
        .columns
        .iter()
        .map(|c| match c.ty {
            // A VARCHAR's length takes 1 byte up to 255 bytes, as in MariaDB's rows.
            ColumnType::Varchar(n) if 4 * n < 256 => 4 * n + 1,
            ColumnType::Varbinary(n) if n < 256 => n + 1,
            ColumnType::Text | ColumnType::Blob => 10,
            _ => key_part_len(c) - u32::from(c.nullable),
        })
        .sum();
    nullable.div_ceil(8) + fields
}

/// How many key parts an access path uses (the columns EXPLAIN's `key_len` adds up).
pub fn used_parts(table: &TableDef, access: &Access) -> usize {
    match access {
        Access::FullScan => 0,
        Access::PkPoint(v) => v.len(),
        Access::In { .. } => 1,
        Access::Range {
            key,
            prefix,
            lo,
            hi,
        } => {
            let ranged = ranged(lo, hi);
            if prefix.is_empty() && !ranged {
                key_columns(table, key).len()
            } else {
                prefix.len() + usize::from(ranged)
            }
        }
        Access::Union { parts, .. } => parts
            .iter()
            .map(|p| used_parts(table, p))
            .max()
            .unwrap_or(0),
    }
}

/// Sorts `ranges` of `key` in key order and merges those that overlap or touch, so that
/// reading the result returns each key of their union once, in key order. Compared by their
/// encoded spans ([`KeyRange::span`]): the order storage reads, collation weights included.
/// `None` when a bound does not encode (the caller scans).
pub fn merge_ranges(
    table: &TableDef,
    key: &KeyName,
    ranges: Vec<KeyRange>,
) -> Option<Vec<KeyRange>> {
    let index = match key {
        KeyName::Primary => None,
        KeyName::Index(n) => Some(n.as_str()),
    };
    let mut spans = Vec::with_capacity(ranges.len());
    for r in ranges {
        let (from, to) = r.span(table, index).ok()?;
        if from < to {
            spans.push((from, to, r));
        }
    }
    spans.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<(Vec<u8>, KeyRange)> = Vec::with_capacity(spans.len());
    for (from, to, r) in spans {
        match out.last_mut() {
            Some((end, cur)) if from <= *end => {
                if to > *end {
                    *end = to;
                    cur.end = r.end;
                }
            }
            _ => out.push((to, r)),
        }
    }
    Some(out.into_iter().map(|(_, r)| r).collect())
}

/// The key of a DATE / DATETIME / TIMESTAMP column that compares with `v` as SQL compares
/// them (`shoal_sql::value::compare`): a date or datetime value, a string read as one
/// (`temporal_operand`: trailing characters ignored, the zero date for a non-date), an integer
/// read as one (`datetime_of_number`). A DATE column has a key only for a
/// midnight value (`d = '2020-01-01 10:00'` matches no date, `d < '2020-01-01 10:00'` is not
/// `d < '2020-01-01'`): otherwise none, and the caller scans (or drops the bound) and the
/// re-checked WHERE decides.
fn temporal_key(v: &Value, ty: ColumnType) -> Option<Datum> {
    let when = match v {
        Value::Int(_) | Value::UInt(_) => {
            shoal_sql::value::datetime_of_number(v.to_i128().unwrap_or(0))
        }
        _ => shoal_sql::value::temporal_operand(v)?,
    };
    let date = shoal_store::Date {
        year: when.year,
        month: when.month,
        day: when.day,
    };
    let midnight = when.hour == 0 && when.minute == 0 && when.second == 0 && when.micro == 0;
    match ty {
        ColumnType::Date if midnight => Some(Datum::Date(date)),
        // A fraction the column cannot hold is no key: storage would truncate it, and a
        // bound `dt < '10:00:00.5'` on a DATETIME(0) would lose the row at 10:00:00.
        ColumnType::DateTime(fsp) | ColumnType::Timestamp(fsp)
            if shoal_store::truncate_micro(when.micro, fsp) != when.micro =>
        {
            None
        }
        ColumnType::DateTime(_) | ColumnType::Timestamp(_) => {
            Some(Datum::DateTime(shoal_store::DateTime {
                date,
                hour: when.hour,
                minute: when.minute,
                second: when.second,
                micro: when.micro,
            }))
        }
        _ => None,
    }
}

/// The key of a TIME(fsp) column that compares with `v` as SQL compares them
/// (`shoal_sql::value::compare`): the microseconds `time_operand` reads the value as (a text
/// or number read as a time, `00:00:00` for one that is no time). A date or datetime compares
/// on today's date, not as a key: none; nor a fraction the column cannot hold (storage would
/// truncate it, and `t < '10:00:00.5'` on a TIME(0) would lose the row at 10:00:00).
fn time_key(v: &Value, fsp: u8) -> Option<Datum> {
    if matches!(v, Value::Date(_) | Value::DateTime(..)) {
        return None;
    }
    let m = shoal_sql::temporal::time_operand(v)?;
    let frac = m.rem_euclid(1_000_000) as u32;
    if shoal_store::truncate_micro(frac, fsp) != frac {
        return None;
    }
    Some(Datum::Time(m))
}

/// The key of a CHAR/VARCHAR/TEXT column (of a collated key: `key_type_ok`) for a string
/// bound: the string itself, which storage encodes as its collation weight. Trailing spaces
/// never count in the collation, so they are dropped before the length check (`'ab   '` on
/// a VARCHAR(2) is the key 'ab'); a string still longer than the column has no key (the caller
/// scans, or widens the range). Only strings: SQL compares a string column with a number as
/// numbers, an order the key does not have.
fn string_key(v: &Value, ty: ColumnType) -> Option<Datum> {
    match v {
        Value::Str(s) => ty
            .coerce(Datum::Bytes(
                shoal_sql::value::collate_trim(s).as_bytes().to_vec(),
            ))
            .ok(),
        _ => None,
    }
}

/// The key of a BINARY/VARBINARY/BLOB column for a string or bytes bound: its bytes, which SQL
/// compares with the column's bytewise. A number compares as a number: no key. Only a bound
/// storage takes as it is: storage coerces key values as it coerces rows, and a BINARY(n) bound
/// of another length would be padded (`b > 'a'` read from `a\0\0\0` exclusive would miss the
/// row `a\0\0\0`, which is greater than 'a') or refused. No BINARY(n) value has another length
/// and no VARBINARY(n) value is longer than n, so such a bound only loses the key: a wider
/// range, or a scan, and the re-checked WHERE decides.
fn binary_key(v: &Value, ty: ColumnType) -> Option<Datum> {
    let b = match v {
        Value::Str(s) => s.as_bytes(),
        Value::Bytes(b) => b.as_slice(),
        _ => return None,
    };
    match ty {
        ColumnType::Binary(n) if b.len() != n as usize => None,
        ColumnType::Varbinary(n) if b.len() > n as usize => None,
        _ => Some(Datum::Bytes(b.to_vec())),
    }
}

/// The key of a DOUBLE column for a bound: SQL compares a DOUBLE with a number or a string as
/// two doubles (`shoal_sql::value::compare`), so the bound's double is the key, in the order
/// the key keeps. None for NaN and for values that are no number (dates: no key, a scan).
fn double_key(v: &Value) -> Option<Datum> {
    match v {
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_) | Value::Str(_) => v
            .to_f64()
            .filter(|f| !f.is_nan())
            .map(|f| Datum::Double(if f == 0.0 { 0.0 } else { f })),
        _ => None,
    }
}

/// Converts a bound value to a key value of type `ty` only if it represents exactly the
/// same number (so key order agrees with SQL comparison).
fn exact_key(v: &Value, ty: ColumnType) -> Option<Datum> {
    if let ColumnType::Time(fsp) = ty {
        return time_key(v, fsp);
    }
    if matches!(
        ty,
        ColumnType::Date | ColumnType::DateTime(_) | ColumnType::Timestamp(_)
    ) {
        return temporal_key(v, ty);
    }
    if ty.is_text() {
        return string_key(v, ty);
    }
    if ty.is_binary_string() {
        return binary_key(v, ty);
    }
    if let ColumnType::Double(fixed) = ty {
        // A DOUBLE(M,D) key holds D decimals: a bound with more is no key (storage would round
        // it, and `d < 1.2345` would lose the rows at 1.234).
        return double_key(v)
            .filter(|k| fixed.is_none() || ty.coerce(k.clone()).ok().as_ref() == Some(k));
    }
    let d = match v {
        Value::Int(i) => Datum::Int(*i),
        Value::UInt(u) => Datum::UInt(*u),
        Value::Decimal(x) => {
            let scale = u8::try_from(x.scale).ok()?;
            Datum::Decimal(shoal_store::Decimal {
                unscaled: x.mant,
                scale,
            })
        }
        _ => return None,
    };
    if let (ColumnType::Decimal { scale, .. }, Datum::Decimal(x)) = (ty, &d) {
        if x.scale > scale && x.rescale(scale).and_then(|r| r.rescale(x.scale)) != Some(*x) {
            return None;
        }
    }
    if let (ColumnType::Int { .. }, Datum::Decimal(x)) = (ty, &d) {
        if x.rescale(0).and_then(|r| r.rescale(x.scale)) != Some(*x) {
            return None;
        }
    }
    ty.coerce(d).ok()
}

enum KeyVal {
    Val(Datum),
    Null,
    NotExact,
}

fn key_val(e: &Expr, ty: ColumnType, ctx: &mut dyn Context) -> Result<KeyVal, SqlError> {
    if is_null_key(e) {
        return Ok(KeyVal::Val(Datum::Null));
    }
    let v = eval(e, ctx)?;
    if v.is_null() {
        return Ok(KeyVal::Null);
    }
    Ok(match exact_key(&v, ty) {
        Some(d) => KeyVal::Val(d),
        None => KeyVal::NotExact,
    })
}

/// The column positions of a key, in key order.
pub(crate) fn key_columns(table: &TableDef, key: &KeyName) -> Vec<usize> {
    match key {
        KeyName::Primary => table.primary_key.clone().unwrap_or_default(),
        KeyName::Index(n) => table
            .index(n)
            .map(|i| i.columns.clone())
            .unwrap_or_default(),
    }
}

/// Evaluates an access path's expressions (parameters bound through `ctx`).
pub fn resolve(
    access: &Access,
    table: &TableDef,
    ctx: &mut dyn Context,
) -> Result<Resolved, SqlError> {
    resolve_exact(access, table, ctx).map(|(r, _)| r)
}

/// [`resolve`], and whether every value the path looked up by became a key exactly: then the
/// conjuncts [`enforced_conjuncts`] names hold for every row the path reads. `false` when a
/// value was no exact key (`id < 2.5` on an INT key, `id = 'x'`) and the path fell back to a
/// wider range or a full scan.
pub fn resolve_exact(
    access: &Access,
    table: &TableDef,
    ctx: &mut dyn Context,
) -> Result<(Resolved, bool), SqlError> {
    let mut exact = true;
    let r = resolve_in(access, table, ctx, &mut exact)?;
    Ok((r, exact))
}

/// Which conjuncts of `filter` (in [`conjuncts`] order; columns by name, as
/// [`choose_access`] took it) `access` enforces by itself on `table`, provided its values
/// resolve exactly ([`resolve_exact`]): `col = v` of its equal prefix (all of a primary-key
/// point read), and the bounds of its range on the next column (`col BETWEEN a AND b`,
/// `col > a`, `col <= b`, ...), each exactly the expression the path reads by. Only NOT NULL integer columns: their key order is SQL's
/// numeric order and an exact key value compares as the SQL value does, so a row inside the
/// key range satisfies the conjunct and no other row does. A row read by such a path need not
/// evaluate these conjuncts again (the re-check was 7.6 % of sysbench read-write's
/// instructions).
pub fn enforced_conjuncts(table: &TableDef, access: &Access, filter: &Expr) -> Vec<bool> {
    let cs = conjuncts(filter);
    let mut out = vec![false; cs.len()];
    // A primary-key point read is an equal prefix of the whole key with no range after it.
    let (key, prefix, lo, hi) = match access {
        Access::Range {
            key,
            prefix,
            lo,
            hi,
        } => (key, prefix, lo, hi),
        Access::PkPoint(prefix) => (
            &KeyName::Primary,
            prefix,
            &BoundExpr::Unbounded,
            &BoundExpr::Unbounded,
        ),
        _ => return out,
    };
    let cols = key_columns(table, key);
    let plain_int = |c: usize| {
        let col = &table.columns[c];
        matches!(col.ty, ColumnType::Int { .. }) && !col.nullable
    };
    let next = cols.get(prefix.len()).copied().filter(|&c| plain_int(c));
    for (i, c) in cs.iter().enumerate() {
        out[i] = match c {
            Expr::Binary(op, a, b) => {
                let (col, val, flipped) = match (column_pos(table, a), column_pos(table, b)) {
                    (Some(p), _) if is_row_independent(b) => (p, &**b, false),
                    (_, Some(p)) if is_row_independent(a) => (p, &**a, true),
                    _ => continue,
                };
                let bound = |inc: bool| {
                    if inc {
                        BoundExpr::Included(val.clone())
                    } else {
                        BoundExpr::Excluded(val.clone())
                    }
                };
                match (op, flipped) {
                    (BinOp::Eq, _) => cols
                        .iter()
                        .zip(prefix)
                        .any(|(&k, e)| k == col && e == val && plain_int(k)),
                    (BinOp::Lt, false) | (BinOp::Gt, true) => {
                        next == Some(col) && *hi == bound(false)
                    }
                    (BinOp::LtEq, false) | (BinOp::GtEq, true) => {
                        next == Some(col) && *hi == bound(true)
                    }
                    (BinOp::Gt, false) | (BinOp::Lt, true) => {
                        next == Some(col) && *lo == bound(false)
                    }
                    (BinOp::GtEq, false) | (BinOp::LtEq, true) => {
                        next == Some(col) && *lo == bound(true)
                    }
                    _ => false,
                }
            }
            Expr::Between(a, l, h, false) => {
                column_pos(table, a).is_some()
                    && column_pos(table, a) == next
                    && *lo == BoundExpr::Included((**l).clone())
                    && *hi == BoundExpr::Included((**h).clone())
            }
            _ => false,
        };
    }
    out
}

fn resolve_in(
    access: &Access,
    table: &TableDef,
    ctx: &mut dyn Context,
    exact: &mut bool,
) -> Result<Resolved, SqlError> {
    match access {
        Access::FullScan => Ok(Resolved::FullScan),
        Access::PkPoint(exprs) => {
            let cols = key_columns(table, &KeyName::Primary);
            let mut vals = Vec::new();
            for (e, &c) in exprs.iter().zip(&cols) {
                match key_val(e, table.columns[c].ty, ctx)? {
                    KeyVal::Val(d) => vals.push(d),
                    KeyVal::Null => return Ok(Resolved::Empty),
                    KeyVal::NotExact => {
                        *exact = false;
                        return Ok(Resolved::FullScan);
                    }
                }
            }
            Ok(Resolved::PkPoint(vals))
        }
        Access::In { key, list } => {
            let cols = key_columns(table, key);
            let ty = table.columns[cols[0]].ty;
            let mut vals: Vec<Datum> = Vec::new();
            for e in list {
                match key_val(e, ty, ctx)? {
                    KeyVal::Val(d) => vals.push(d),
                    KeyVal::Null => {}
                    KeyVal::NotExact => {
                        *exact = false;
                        return Ok(Resolved::FullScan);
                    }
                }
            }
            if vals.is_empty() {
                return Ok(Resolved::Empty);
            }
            // Key order, as MySQL's range optimizer returns IN lists; then without duplicates
            // (a `contains` per value made a 64000-value IN list take 7 s: found by fuzzing).
            // Equal in SQL's comparison, not in bytes: 'a' and 'A' are one lookup of a
            // collated key (two would return its rows twice).
            let cmp = |a: &Datum, b: &Datum| {
                compare(&datum_to_value(a, ty), &datum_to_value(b, ty))
                    .unwrap_or(std::cmp::Ordering::Equal)
            };
            vals.sort_by(cmp);
            vals.dedup_by(|a, b| cmp(a, b) == std::cmp::Ordering::Equal);
            if *key == KeyName::Primary && cols.len() == 1 {
                // Point gets are cheaper than ranges; keep them as one-column prefixes.
            }
            Ok(Resolved::Ranges(
                key.clone(),
                vals.into_iter()
                    .map(|d| KeyRange::prefix(vec![d]))
                    .collect(),
            ))
        }
        Access::Range {
            key,
            prefix,
            lo,
            hi,
        } => {
            let cols = key_columns(table, key);
            let mut pre = Vec::new();
            for (e, &c) in prefix.iter().zip(&cols) {
                match key_val(e, table.columns[c].ty, ctx)? {
                    KeyVal::Val(d) => pre.push(d),
                    KeyVal::Null => return Ok(Resolved::Empty),
                    KeyVal::NotExact => {
                        *exact = false;
                        return Ok(Resolved::FullScan);
                    }
                }
            }
            let mut bound = |b: &BoundExpr| -> Result<Option<Bound<Vec<Datum>>>, SqlError> {
                let (e, inc) = match b {
                    BoundExpr::Unbounded => {
                        return Ok(Some(if pre.is_empty() {
                            Bound::Unbounded
                        } else {
                            Bound::Included(pre.clone())
                        }))
                    }
                    BoundExpr::Included(e) => (e, true),
                    BoundExpr::Excluded(e) => (e, false),
                    BoundExpr::LikeLo(e, esc) | BoundExpr::LikeHi(e, esc) => {
                        let upper = matches!(b, BoundExpr::LikeHi(..));
                        let range = match eval(e, ctx)? {
                            Value::Null => return Ok(None), // LIKE NULL matches nothing
                            Value::Str(p) => like_range(&p, *esc),
                            _ => None,
                        };
                        let mut k = pre.clone();
                        return Ok(Some(match range {
                            Some((lo, _)) if !upper => {
                                k.push(Datum::text(&lo));
                                Bound::Included(k)
                            }
                            Some((_, hi)) => {
                                k.push(Datum::text(&hi));
                                Bound::Excluded(k)
                            }
                            None if pre.is_empty() => Bound::Unbounded,
                            None => Bound::Included(pre.clone()),
                        }));
                    }
                };
                let ty = table.columns[cols[pre.len()]].ty;
                Ok(match key_val(e, ty, ctx)? {
                    KeyVal::Null => None,
                    KeyVal::NotExact => {
                        // Wider than the conjunct: the rows read must still be checked.
                        *exact = false;
                        Some(if pre.is_empty() {
                            Bound::Unbounded
                        } else {
                            Bound::Included(pre.clone())
                        })
                    }
                    KeyVal::Val(d) => {
                        let mut k = pre.clone();
                        k.push(d);
                        Some(if inc {
                            Bound::Included(k)
                        } else {
                            Bound::Excluded(k)
                        })
                    }
                })
            };
            let (Some(start), Some(end)) = (bound(lo)?, bound(hi)?) else {
                // A comparison with NULL matches nothing.
                return Ok(Resolved::Empty);
            };
            Ok(Resolved::Range(key.clone(), KeyRange { start, end }))
        }
        Access::Union { key, parts } => {
            let mut ranges = Vec::new();
            for p in parts {
                match resolve_in(p, table, ctx, exact)? {
                    Resolved::Empty => {}
                    Resolved::FullScan => return Ok(Resolved::FullScan),
                    Resolved::PkPoint(k) => ranges.push(KeyRange::prefix(k)),
                    Resolved::Range(_, r) => ranges.push(r),
                    Resolved::Ranges(_, rs) => ranges.extend(rs),
                }
            }
            Ok(match merge_ranges(table, key, ranges) {
                None => Resolved::FullScan,
                Some(rs) if rs.is_empty() => Resolved::Empty,
                Some(rs) => Resolved::Ranges(key.clone(), rs),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::like_range;
    use shoal_collation::weight;
    use shoal_sql::eval::like;

    /// The characters `like_range` refuses in a prefix are exactly those whose lowercase (what
    /// LIKE compares) holds an ASCII character while they are not ASCII themselves: a new
    /// Unicode version adding one would make an ASCII prefix miss matches.
    #[test]
    fn only_two_characters_lowercase_to_ascii() {
        let odd: Vec<char> = (0x80..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(|c| c.to_lowercase().any(|l| l.is_ascii()))
            .collect();
        assert_eq!(odd, ['\u{130}', '\u{212A}']);
        assert_eq!('\u{130}'.to_lowercase().next(), Some('i'));
        assert_eq!('\u{212A}'.to_lowercase().next(), Some('k'));
    }

    /// Every string a LIKE pattern matches has its key weight in the pattern's range, over
    /// random subjects and patterns mixing case, spaces, wildcards, escapes and characters
    /// whose case mappings differ (ß, ſ, İ, ı, Kelvin sign, é).
    #[test]
    fn every_match_is_in_the_like_range() {
        const ALPHABET: &[char] = &[
            'a', 'B', 'c', 'Z', 'z', '`', '{', '@', '[', 'i', 'I', 'k', 'K', ' ', '%', '_', '\\',
            '0', '9', '~', '\u{7f}', 'ß', 'ſ', '\u{130}', 'ı', '\u{212A}', 'é', 'É',
        ];
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let word = |next: &mut dyn FnMut(usize) -> usize, len: usize| -> String {
            (0..len).map(|_| ALPHABET[next(ALPHABET.len())]).collect()
        };
        let (mut ranged, mut matched) = (0, 0);
        for _ in 0..200_000 {
            let plen = next(4) + 1;
            let mut pattern = word(&mut next, plen);
            if next(2) == 0 {
                pattern.push('%');
            }
            let base: String = pattern
                .chars()
                .filter(|c| !matches!(c, '%' | '_'))
                .collect();
            let slen = next(3);
            let subject = match next(3) {
                // Often derive the subject from the pattern so that matches are common.
                0 | 1 => {
                    let mut s: String = base
                        .chars()
                        .map(|c| {
                            if next(2) == 0 {
                                c.to_ascii_lowercase()
                            } else {
                                c
                            }
                        })
                        .collect();
                    s.push_str(&word(&mut next, slen));
                    s
                }
                _ => word(&mut next, plen + slen),
            };
            let Some((lo, hi)) = like_range(&pattern, None) else {
                continue;
            };
            ranged += 1;
            assert!(
                weight(&lo) < weight(&hi),
                "{pattern:?}: empty range {lo:?}..{hi:?}"
            );
            if like(&subject, &pattern, '\\') {
                matched += 1;
                let w = weight(&subject);
                assert!(
                    weight(&lo) <= w && w < weight(&hi),
                    "{subject:?} LIKE {pattern:?} but its weight is outside {lo:?}..{hi:?}"
                );
            }
        }
        assert!(
            ranged > 10_000 && matched > 1_000,
            "{ranged} ranges, {matched} matches"
        );
    }

    #[test]
    fn like_ranges_of_simple_patterns() {
        assert_eq!(like_range("abc%", None), Some(("ABC".into(), "ABD".into())));
        assert_eq!(like_range("ab_d%", None), Some(("AB".into(), "AC".into())));
        assert_eq!(
            like_range("a\\%b%", None),
            Some(("A%B".into(), "A%C".into()))
        );
        assert_eq!(
            like_range("a|_%", Some('|')),
            Some(("A_".into(), "A`".into()))
        );
        // `` ` `` folds below itself when raised to `a`: the bound skips to `{`.
        assert_eq!(like_range("x`%", None), Some(("X`".into(), "X{".into())));
        assert_eq!(like_range("ab %", None), Some(("AB".into(), "AC".into())));
        assert_eq!(like_range("%abc", None), None);
        assert_eq!(like_range("kilo%", None), None);
        assert_eq!(like_range("tik%", None), Some(("T".into(), "U".into())));
        assert_eq!(like_range("é%", None), None);
    }
}
