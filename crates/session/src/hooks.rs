//! Hooks other subsystems (the thread pool first) use to contribute to what sessions show,
//! without the session layer knowing about them.
//!
//! # Virtual tables
//!
//! [`Server::add_virtual_table`] registers a read-only table `db.name` (case-insensitive) whose
//! content is produced by a callback at query time ([`VirtualTable`]: column names + rows). A
//! `SELECT ... FROM db.name` is answered from it before the catalog is consulted: the callback
//! runs once, the WHERE clause is evaluated per row with the row's columns in scope (the same
//! evaluator as everywhere else, so `WHERE GROUP_ID = 1 AND THREADS > 0` works), then
//! LIMIT/OFFSET, then the projection (`*` expands to every column, in order; other items are
//! expressions over the row's columns). This is how `information_schema.THREAD_POOL_*` exist.
//! Rows come in the callback's order. A SELECT that needs more (aggregates, GROUP BY, ORDER BY,
//! joins) runs in the query engine of `crates/exec`, which reads the same callbacks as system
//! tables ([`Server::set_table_engine`] installs them).
//!
//! # Process-list state
//!
//! [`Server::set_process_state_provider`] installs one callback returning extra state text per
//! connection id (the pool says `queued (high)`, `running`, `waiting: ROW_LOCK`, ...). SHOW
//! PROCESSLIST shows it in the `State` column, after the session's own state if it has one.
//!
//! # Flushable tables
//!
//! [`Server::add_flushable`] registers a reset for `FLUSH name`, the way MariaDB lets an
//! information_schema plugin table be reset by name (`FLUSH THREAD_POOL_STATS`). The session
//! checks the RELOAD privilege and every name of the statement before running any reset.
//!
//! The registries are behind `RwLock`s taken only briefly; callbacks run without any session
//! lock held, so they may take their own locks (the pool takes its group locks).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use shoal_sql::ast::{Expr, Select};
use shoal_sql::error::SqlError;
use shoal_sql::exec::{column_type, ColumnInfo, QueryResult};
use shoal_sql::value::Value;

use crate::Server;

/// The content of a virtual table at one moment.
#[derive(Debug, Clone, Default)]
pub struct VirtualTable {
    /// Column names, in order (upper case, as information_schema shows them).
    pub columns: Vec<String>,
    /// Rows; each has exactly `columns.len()` values.
    pub rows: Vec<Vec<Value>>,
}

/// Produces a virtual table's content when it is queried.
pub type VirtualTableFn = Arc<dyn Fn() -> VirtualTable + Send + Sync>;

/// Resets what `FLUSH name` names (statistics counters, histograms).
pub type FlushFn = Arc<dyn Fn() + Send + Sync>;

/// Extra process-list state per connection id.
pub type ProcessStateFn = Arc<dyn Fn() -> HashMap<u32, String> + Send + Sync>;

/// The virtual tables as the query engine's [`shoal_exec::query::SystemTables`]: a SELECT the
/// simple path below cannot answer (aggregates, GROUP BY, ORDER BY, joins) runs there.
pub struct HookTables(pub Arc<Hooks>);

impl shoal_exec::query::SystemTables for HookTables {
    fn get(&self, db: &str, table: &str) -> Option<(Vec<String>, Vec<Vec<Value>>)> {
        self.0.virtual_table(db, table).map(|f| {
            let t = f();
            (t.columns, t.rows)
        })
    }
}

/// Whether a SELECT on a virtual table, or on no table, needs the query engine (it aggregates).
pub fn needs_query_engine(sel: &Select) -> bool {
    let mut agg = false;
    for it in &sel.items {
        shoal_exec::query::visit_expr(&it.expr, &mut |e| {
            if let Expr::Function(name, _) = e {
                agg |= shoal_sql::ast::AggFunc::of(name).is_some();
            }
        });
    }
    agg
}

/// The registries (one per [`Server`]).
#[derive(Default)]
pub struct Hooks {
    /// `(lower-case db, lower-case table)` → producer.
    tables: RwLock<HashMap<(String, String), VirtualTableFn>>,
    /// The process-state provider, if any.
    process_state: RwLock<Option<ProcessStateFn>>,
    /// Upper-case `FLUSH` option name → its reset.
    flushables: RwLock<HashMap<String, FlushFn>>,
}

impl Hooks {
    /// The producer registered for `db.table`, if any.
    pub fn virtual_table(&self, db: &str, table: &str) -> Option<VirtualTableFn> {
        self.tables
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(db.to_ascii_lowercase(), table.to_ascii_lowercase()))
            .cloned()
    }

    /// Names of the virtual tables of `db` (for SHOW TABLES-like listings).
    pub fn virtual_tables(&self, db: &str) -> Vec<String> {
        let db = db.to_ascii_lowercase();
        let mut v: Vec<String> = self
            .tables
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .filter(|(d, _)| *d == db)
            .map(|(_, t)| t.to_ascii_uppercase())
            .collect();
        v.sort();
        v
    }

    /// The reset registered for `FLUSH name`, if any.
    pub fn flushable(&self, name: &str) -> Option<FlushFn> {
        self.flushables
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&name.to_ascii_uppercase())
            .cloned()
    }

    /// Extra state text per connection id (empty without a provider).
    pub fn process_states(&self) -> HashMap<u32, String> {
        let f = self
            .process_state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        f.map(|f| f()).unwrap_or_default()
    }
}

impl Server {
    /// Registers (or replaces) the read-only virtual table `db.name`; see the module docs.
    pub fn add_virtual_table(&self, db: &str, name: &str, f: VirtualTableFn) {
        self.hooks
            .tables
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((db.to_ascii_lowercase(), name.to_ascii_lowercase()), f);
    }

    /// Registers (or replaces) the reset run by `FLUSH name`; see the module docs.
    pub fn add_flushable(&self, name: &str, f: FlushFn) {
        self.hooks
            .flushables
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_ascii_uppercase(), f);
    }

    /// Installs the provider of extra SHOW PROCESSLIST state (replaces a previous one).
    pub fn set_process_state_provider(&self, f: ProcessStateFn) {
        *self
            .hooks
            .process_state
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(f);
    }

    /// The hook registries.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }
}

/// Runs `sel` against a virtual table. `eval_row` evaluates an expression with the given row's
/// columns in scope (the session supplies its evaluation context).
pub fn select_virtual(
    sel: &Select,
    table: VirtualTable,
    mut eval_row: impl FnMut(&Expr, &[&str], &[Value]) -> Result<Value, SqlError>,
) -> Result<QueryResult, SqlError> {
    let names: Vec<&str> = table.columns.iter().map(String::as_str).collect();
    let mut kept = Vec::new();
    for row in table.rows {
        let keep = match &sel.filter {
            None => true,
            Some(f) => eval_row(f, &names, &row)?.truth() == Some(true),
        };
        if keep {
            kept.push(row);
        }
    }
    let limit = |e: &Option<Expr>, eval: &mut dyn FnMut(&Expr) -> Result<Value, SqlError>| {
        e.as_ref()
            .map(|e| match eval(e)? {
                Value::Int(i) if i >= 0 => Ok(i as usize),
                Value::UInt(u) => Ok(u as usize),
                _ => Err(SqlError::WrongArguments("LIMIT".into())),
            })
            .transpose()
    };
    let mut eval_plain = |e: &Expr| eval_row(e, &[], &[]);
    let lim = limit(&sel.limit, &mut eval_plain)?;
    let off = limit(&sel.offset, &mut eval_plain)?.unwrap_or(0);
    let kept: Vec<Vec<Value>> = kept
        .into_iter()
        .skip(off)
        .take(lim.unwrap_or(usize::MAX))
        .collect();
    // Projection: `*` expands to every column.
    let mut headers: Vec<(String, Option<usize>, Option<&Expr>)> = Vec::new();
    for it in &sel.items {
        match &it.expr {
            Expr::Column(c) if c == "*" => {
                for (i, n) in names.iter().enumerate() {
                    headers.push((n.to_string(), Some(i), None));
                }
            }
            Expr::Column(c) => match names.iter().position(|n| n.eq_ignore_ascii_case(c)) {
                Some(i) => headers.push((it.name.clone(), Some(i), None)),
                None => {
                    return Err(SqlError::UnknownColumn(c.clone(), "field list".into()));
                }
            },
            e => headers.push((it.name.clone(), None, Some(e))),
        }
    }
    let mut rows = Vec::with_capacity(kept.len());
    for r in &kept {
        let mut out = Vec::with_capacity(headers.len());
        for (_, idx, e) in &headers {
            out.push(match (idx, e) {
                (Some(i), _) => r[*i].clone(),
                (None, Some(e)) => eval_row(e, &names, r)?,
                (None, None) => Value::Null,
            });
        }
        rows.push(out);
    }
    let columns = headers
        .iter()
        .enumerate()
        .map(|(i, (name, _, e))| {
            let fallback = Expr::Literal(Value::Str(String::new()));
            ColumnInfo {
                name: name.clone(),
                ty: column_type(e.unwrap_or(&fallback), rows.iter().map(|r| &r[i])),
            }
        })
        .collect();
    Ok(QueryResult { columns, rows })
}

#[cfg(test)]
mod hook_tests {
    use super::*;
    use shoal_sql::ast::{SelectItem, TableName};

    fn table() -> VirtualTable {
        VirtualTable {
            columns: vec!["GROUP_ID".into(), "THREADS".into()],
            rows: vec![
                vec![Value::Int(0), Value::Int(3)],
                vec![Value::Int(1), Value::Int(0)],
                vec![Value::Int(2), Value::Int(5)],
            ],
        }
    }

    fn sel(items: Vec<(&str, Expr)>, filter: Option<Expr>) -> Select {
        Select {
            items: items
                .into_iter()
                .map(|(n, e)| SelectItem {
                    expr: e,
                    name: n.into(),
                })
                .collect(),
            from: Some(TableName {
                db: Some("information_schema".into()),
                name: "T".into(),
            }),
            filter,
            limit: None,
            offset: None,
        }
    }

    fn col(names: &[&str], row: &[Value], e: &Expr) -> Result<Value, SqlError> {
        match e {
            Expr::Column(c) => names
                .iter()
                .position(|n| n.eq_ignore_ascii_case(c))
                .map(|i| row[i].clone())
                .ok_or_else(|| SqlError::UnknownColumn(c.clone(), "where clause".into())),
            Expr::Literal(v) => Ok(v.clone()),
            _ => Err(SqlError::Unsupported("test".into())),
        }
    }

    #[test]
    fn star_expands_and_projection_picks_columns() {
        let s = sel(vec![("*", Expr::Column("*".into()))], None);
        let r = select_virtual(&s, table(), |e, n, r| col(n, r, e)).unwrap();
        assert_eq!(r.columns.len(), 2);
        assert_eq!(r.columns[1].name, "THREADS");
        assert_eq!(r.rows.len(), 3);
        let s = sel(vec![("threads", Expr::Column("threads".into()))], None);
        let r = select_virtual(&s, table(), |e, n, r| col(n, r, e)).unwrap();
        assert_eq!(
            r.rows,
            vec![
                vec![Value::Int(3)],
                vec![Value::Int(0)],
                vec![Value::Int(5)]
            ]
        );
        let s = sel(vec![("nope", Expr::Column("nope".into()))], None);
        assert!(select_virtual(&s, table(), |e, n, r| col(n, r, e)).is_err());
    }

    #[test]
    fn filter_and_limit_apply() {
        // A "filter" that is just the THREADS column: truthy when non-zero.
        let mut s = sel(
            vec![("GROUP_ID", Expr::Column("GROUP_ID".into()))],
            Some(Expr::Column("THREADS".into())),
        );
        let r = select_virtual(&s, table(), |e, n, r| col(n, r, e)).unwrap();
        assert_eq!(r.rows, vec![vec![Value::Int(0)], vec![Value::Int(2)]]);
        s.limit = Some(Expr::Literal(Value::Int(1)));
        s.offset = Some(Expr::Literal(Value::Int(1)));
        let r = select_virtual(&s, table(), |e, n, r| col(n, r, e)).unwrap();
        assert_eq!(r.rows, vec![vec![Value::Int(2)]]);
    }

    #[test]
    fn registry_is_case_insensitive() {
        let server = Server::new();
        server.add_virtual_table("INFORMATION_SCHEMA", "Thread_Pool_Groups", Arc::new(table));
        assert!(server
            .hooks()
            .virtual_table("information_schema", "THREAD_POOL_GROUPS")
            .is_some());
        assert_eq!(
            server.hooks().virtual_tables("information_schema"),
            vec!["THREAD_POOL_GROUPS".to_string()]
        );
        assert!(server.hooks().process_states().is_empty());
        server.set_process_state_provider(Arc::new(|| HashMap::from([(7u32, "running".into())])));
        assert_eq!(server.hooks().process_states()[&7], "running");
    }
}
