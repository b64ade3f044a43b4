//! Multi-table UPDATE and DELETE through the query engine.
//!
//! `UPDATE t1 JOIN t2 ON .. SET t1.a = t2.b WHERE ..` becomes the query
//! `SELECT t1.*, <each SET value> FROM t1 JOIN t2 ON .. WHERE .. FOR UPDATE`: the joined rows
//! are read (and locked) first, then each target row is changed once, by its primary key, with
//! the values of the first joined row that matched it — as MySQL does, and without the
//! Halloween problem (nothing is written while the join is read). DELETE works the same way
//! with the targets' rows deleted. A target row whose columns are NULL-extended by an outer
//! join is not a row and is skipped.

use std::collections::HashSet;
use std::sync::Arc;

use shoal_sql::ast::{Expr, Query, QueryBody, QueryItem, QuerySelect, RowLock, TableExpr};
use shoal_sql::eval::Context;
use shoal_sql::value::Value;
use shoal_sql::SqlError;
use shoal_store::{Datum, Engine, LockMode, StoreError, TableDef, Transaction};

use super::QueryPlan;
use crate::ast::MultiStmt;
use crate::convert::{null_into_not_null, store_err, to_column, value_to_datum, WriteMode};
use crate::exec::{group_key, ExecOutput};

/// A prepared multi-table UPDATE or DELETE.
#[derive(Debug)]
pub struct MultiPlan {
    query: QueryPlan,
    delete: bool,
    targets: Vec<Target>,
    /// UPDATE's assignments: (target, column position, result column of the query).
    sets: Vec<(usize, usize, usize)>,
    /// UPDATE IGNORE.
    ignore: bool,
}

/// A table rows are changed in.
#[derive(Debug)]
struct Target {
    def: Arc<TableDef>,
    /// Where its columns start in the query's result rows.
    offset: usize,
}

/// The stored tables of a FROM clause: (shown name, database, table).
fn from_tables(from: &[TableExpr], db: Option<&str>, out: &mut Vec<(String, String, String)>) {
    for te in from {
        match te {
            TableExpr::Table { db: d, name, alias } => {
                let d = d
                    .clone()
                    .or_else(|| db.map(str::to_string))
                    .unwrap_or_default();
                out.push((
                    alias.clone().unwrap_or_else(|| name.clone()),
                    d,
                    name.clone(),
                ));
            }
            TableExpr::Join { left, right, .. } => {
                from_tables(std::slice::from_ref(left), db, out);
                from_tables(std::slice::from_ref(right), db, out);
            }
            TableExpr::Derived { .. }
            | TableExpr::Recursive { .. }
            | TableExpr::WorkTable { .. } => {}
        }
    }
}

impl MultiPlan {
    /// The tables rows are changed in: (database, name).
    pub fn targets(&self) -> impl Iterator<Item = (&str, &str)> {
        self.targets
            .iter()
            .map(|t| (t.def.db.as_str(), t.def.name.as_str()))
    }

    /// Whether this is a DELETE (else an UPDATE).
    pub fn is_delete(&self) -> bool {
        self.delete
    }

    /// The query that finds the rows (every table of the statement).
    pub fn query(&self) -> &QueryPlan {
        &self.query
    }

    /// Whether a table it reads or writes was altered since it was bound.
    pub fn is_stale(&self, store: &Engine) -> bool {
        self.query.is_stale(store)
    }

    /// The stored tables it touches: (database, table, whether rows change there).
    pub fn tables(&self) -> Vec<(String, String, bool)> {
        self.query
            .tables
            .iter()
            .map(|(d, n, _)| {
                let target = self
                    .targets
                    .iter()
                    .any(|t| t.def.db == *d && t.def.name == *n);
                (d.clone(), n.clone(), target)
            })
            .collect()
    }
}

/// Binds a multi-table UPDATE/DELETE; unqualified tables are in `db`.
pub fn prepare_multi(
    store: &Engine,
    m: &MultiStmt,
    db: Option<&str>,
) -> Result<MultiPlan, SqlError> {
    let mut tables = Vec::new();
    from_tables(&m.from, db, &mut tables);
    let find = |shown: &str| {
        tables
            .iter()
            .position(|(s, _, _)| s == shown || s.eq_ignore_ascii_case(shown))
    };
    // Which FROM tables are written, in order of first mention.
    let mut chosen: Vec<usize> = Vec::new();
    let mut set_targets = Vec::new();
    if m.delete {
        for t in &m.targets {
            let i = find(t).ok_or_else(|| {
                SqlError::coded(
                    shoal_errors::ER_UNKNOWN_TABLE,
                    format!("Unknown table '{t}' in MULTI DELETE"),
                )
            })?;
            if !chosen.contains(&i) {
                chosen.push(i);
            }
        }
    } else {
        for (q, col, _) in &m.sets {
            let i = match q {
                Some(q) => find(q).ok_or_else(|| {
                    SqlError::UnknownColumn(format!("{q}.{col}"), "field list".into())
                })?,
                None => {
                    let mut hit = None;
                    for (i, (_, d, n)) in tables.iter().enumerate() {
                        let def = store.table(d, n).map_err(store_err)?;
                        if def.column_index(col).is_some() {
                            if hit.is_some() {
                                return Err(SqlError::coded(
                                    shoal_errors::ER_NON_UNIQ_ERROR,
                                    format!("Column '{col}' in field list is ambiguous"),
                                ));
                            }
                            hit = Some(i);
                        }
                    }
                    hit.ok_or_else(|| SqlError::UnknownColumn(col.clone(), "field list".into()))?
                }
            };
            if !chosen.contains(&i) {
                chosen.push(i);
            }
            set_targets.push(chosen.iter().position(|&c| c == i).unwrap_or(0));
        }
    }
    let mut items = Vec::new();
    let mut targets = Vec::new();
    for &i in &chosen {
        let (shown, d, n) = &tables[i];
        if d.is_empty() {
            return Err(SqlError::NoDatabase);
        }
        let def = store.table(d, n).map_err(store_err)?;
        if def.primary_key.is_none() {
            return Err(SqlError::Unsupported(
                "multi-table UPDATE/DELETE of a table without a PRIMARY KEY".into(),
            ));
        }
        targets.push(Target {
            offset: items.len(),
            def: def.clone(),
        });
        for c in &def.columns {
            items.push(QueryItem::Expr {
                expr: Expr::QColumn(Some(shown.clone()), c.name.clone()),
                name: c.name.clone(),
                aliased: false,
            });
        }
    }
    let mut sets = Vec::new();
    for ((_, col, value), t) in m.sets.iter().zip(set_targets) {
        let pos = targets[t]
            .def
            .column_index(col)
            .ok_or_else(|| SqlError::UnknownColumn(col.clone(), "field list".into()))?;
        sets.push((t, pos, items.len()));
        items.push(QueryItem::Expr {
            expr: value.clone(),
            name: col.clone(),
            aliased: false,
        });
    }
    let query = Query {
        body: QueryBody::Select(Box::new(QuerySelect {
            distinct: false,
            items,
            from: m.from.clone(),
            filter: m.filter.clone(),
            group_by: Vec::new(),
            rollup: false,
            having: None,
        })),
        order_by: Vec::new(),
        limit: None,
        offset: None,
        calc_found_rows: false,
        into: Vec::new(),
        lock: RowLock::Update,
        lock_wait: Default::default(),
    };
    Ok(MultiPlan {
        query: super::prepare(store, None, &query, db)?,
        delete: m.delete,
        targets,
        sets,
        ignore: m.ignore,
    })
}

/// Runs a multi-table UPDATE/DELETE in `txn`.
pub fn execute_multi(
    plan: &MultiPlan,
    store: &Engine,
    txn: &mut Transaction,
    params: &[Value],
    ctx: &mut dyn Context,
    mode: WriteMode,
) -> Result<ExecOutput, SqlError> {
    let rows = super::execute(&plan.query, store, txn, params, ctx)?;
    let mode = if plan.ignore {
        WriteMode::Lenient
    } else {
        mode
    };
    let mut fks = Vec::with_capacity(plan.targets.len());
    for t in &plan.targets {
        fks.push(crate::fk::Fks::of(store, &t.def, ctx)?);
    }
    let mut seen: Vec<HashSet<String>> = plan.targets.iter().map(|_| HashSet::new()).collect();
    let (mut matched, mut changed, mut deleted, mut warnings) = (0u64, 0u64, 0u64, 0u64);
    for (n, row) in rows.iter().enumerate() {
        for (ti, t) in plan.targets.iter().enumerate() {
            if !plan.delete && !plan.sets.iter().any(|(s, _, _)| *s == ti) {
                continue;
            }
            let pk_cols = t.def.primary_key.as_deref().unwrap_or_default();
            let pk_vals: Vec<Value> = pk_cols.iter().map(|&c| row[t.offset + c].clone()).collect();
            if pk_vals.iter().any(Value::is_null) {
                continue; // NULL-extended by an outer join: no row of this table
            }
            if !seen[ti].insert(group_key(&pk_vals)) {
                continue;
            }
            let mut pk = Vec::with_capacity(pk_cols.len());
            for (&c, v) in pk_cols.iter().zip(&pk_vals) {
                let col = &t.def.columns[c];
                pk.push(value_to_datum(v, col.ty, &col.name, n + 1)?);
            }
            let Some(cur) = txn
                .get(&t.def, &pk, LockMode::Exclusive)
                .map_err(store_err)?
            else {
                continue; // deleted through another target naming the same table
            };
            if plan.delete {
                if let Some(f) = &fks[ti] {
                    f.before_delete(txn, &t.def, &cur.values, 0)?;
                }
                if txn.delete(&t.def, &cur.key).map_err(store_err)? {
                    deleted += 1;
                }
                continue;
            }
            matched += 1;
            let mut new: Vec<Datum> = cur.values.clone();
            for (_, pos, item) in plan.sets.iter().filter(|(s, _, _)| *s == ti) {
                let col = &t.def.columns[*pos];
                let mut d = to_column(&row[*item], &t.def, *pos, n + 1, mode, ctx, &mut warnings)?;
                if d.is_null() && !col.nullable {
                    let lenient = mode == WriteMode::Lenient;
                    d = null_into_not_null(col, lenient, ctx, &mut warnings)?;
                }
                new[*pos] = d;
            }
            if t.def.same_values(&cur.values, &new) {
                continue;
            }
            match txn.update(&t.def, &cur.key, new.clone()) {
                Ok(true) => {
                    changed += 1;
                    if let Some(f) = &fks[ti] {
                        f.after_update(txn, &t.def, &cur.values, &new, 0)?;
                    }
                }
                // UPDATE IGNORE: a row whose new key is taken keeps its values (MariaDB says
                // nothing about it).
                Ok(false) | Err(StoreError::DuplicateKey { .. }) if plan.ignore => {}
                Ok(false) => {}
                Err(e) => return Err(store_err(e)),
            }
        }
    }
    Ok(if plan.delete {
        ExecOutput::ok(deleted)
    } else {
        ExecOutput::Ok {
            affected_rows: changed,
            last_insert_id: 0,
            info: format!("Rows matched: {matched}  Changed: {changed}  Warnings: {warnings}"),
            warnings: u16::try_from(warnings).unwrap_or(u16::MAX),
        }
    })
}
