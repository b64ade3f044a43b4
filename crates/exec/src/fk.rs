//! FOREIGN KEY enforcement, as InnoDB does it while `foreign_key_checks = 1`.
//!
//! A write to a table looks both ways:
//! * **as a child**: a row inserted, or updated in its foreign key columns, must find its
//!   parent row. The parent is looked up through the parent's key whose leading columns are the
//!   referenced ones, under a shared lock (so the parent cannot be deleted before this
//!   transaction ends) — 1452 when it is missing. A key with a NULL column references nothing.
//! * **as a parent**: before a row is deleted, or after its referenced columns changed, the
//!   children that reference its old values are found through the child's index on the foreign
//!   key columns (every foreign key has one: CREATE TABLE adds it) under exclusive locks, then
//!   refused (RESTRICT, NO ACTION: 1451), deleted or updated (CASCADE) or set to NULL (SET
//!   NULL). Cascades recurse into the child's own children, at most 15 levels deep (3008).
//!
//! Checks run inside the statement's transaction, so a failure undoes the whole statement (its
//! savepoint) as in MySQL. Which keys apply to a table is gathered once per statement
//! ([`Fks::of`]); a table without foreign keys on either side costs one catalog walk per
//! statement and nothing per row.

use std::sync::Arc;

use shoal_sql::ast::VarScope;
use shoal_sql::eval::Context;
use shoal_sql::SqlError;
use shoal_store::{
    Datum, Engine, FkAction, ForeignKeyDef, KeyRange, LockMode, Row, TableDef, Transaction,
};

use crate::convert::store_err;

/// InnoDB's limit on cascading depth.
const MAX_DEPTH: usize = 15;

/// The foreign keys a write to one table must honour.
pub(crate) struct Fks {
    store: Engine,
    /// The table's own foreign keys (it is the child).
    own: Vec<ForeignKeyDef>,
    /// Keys of tables (maybe this one) that reference it: (child, key position).
    children: Vec<(Arc<TableDef>, usize)>,
}

/// Whether `foreign_key_checks` is on for this session.
pub(crate) fn checks_on(ctx: &mut dyn Context) -> bool {
    ctx.system_var(VarScope::Session, "foreign_key_checks")
        .ok()
        .and_then(|v| v.truth())
        .unwrap_or(true)
}

/// "`db`.`child`, CONSTRAINT `fk` FOREIGN KEY (`a`) REFERENCES `parent` (`id`)".
pub(crate) fn describe(child: &TableDef, fk: &ForeignKeyDef) -> String {
    let cols: Vec<String> = fk
        .columns
        .iter()
        .map(|&c| format!("`{}`", child.columns[c].name))
        .collect();
    let refs: Vec<String> = fk.ref_columns.iter().map(|c| format!("`{c}`")).collect();
    let parent = if fk.ref_db == child.db {
        format!("`{}`", fk.ref_table)
    } else {
        format!("`{}`.`{}`", fk.ref_db, fk.ref_table)
    };
    let mut s = format!(
        "`{}`.`{}`, CONSTRAINT `{}` FOREIGN KEY ({}) REFERENCES {parent} ({})",
        child.db,
        child.name,
        fk.name,
        cols.join(", "),
        refs.join(", ")
    );
    for (what, a) in [("DELETE", fk.on_delete), ("UPDATE", fk.on_update)] {
        match a {
            FkAction::Cascade => s.push_str(&format!(" ON {what} CASCADE")),
            FkAction::SetNull => s.push_str(&format!(" ON {what} SET NULL")),
            FkAction::NoAction => s.push_str(&format!(" ON {what} NO ACTION")),
            FkAction::Restrict => {}
        }
    }
    s
}

fn no_parent(child: &TableDef, fk: &ForeignKeyDef) -> SqlError {
    SqlError::coded(
        shoal_errors::ER_NO_REFERENCED_ROW_2,
        format!(
            "Cannot add or update a child row: a foreign key constraint fails ({})",
            describe(child, fk)
        ),
    )
}

fn has_children(child: &TableDef, fk: &ForeignKeyDef) -> SqlError {
    SqlError::coded(
        shoal_errors::ER_ROW_IS_REFERENCED_2,
        format!(
            "Cannot delete or update a parent row: a foreign key constraint fails ({})",
            describe(child, fk)
        ),
    )
}

/// Reads every row of `table` under `key` (`None` = primary key) with the leading values `vals`.
fn rows_with_prefix(
    txn: &mut Transaction,
    table: &TableDef,
    key: Option<&str>,
    vals: Vec<Datum>,
    lock: LockMode,
    first_only: bool,
) -> Result<Vec<Row>, SqlError> {
    let range = KeyRange::prefix(vals);
    let mut out = Vec::new();
    let push = |r: Row| {
        out.push(r);
        Ok(!first_only)
    };
    match key {
        None => txn.scan_pk_with(table, &range, lock, push),
        Some(ix) => txn.scan_index_with(table, ix, &range, lock, push),
    }
    .map_err(store_err)?;
    Ok(out)
}

/// The values of `cols` in `row`, converted to `target`'s column types at `target_cols`
/// (`None` when one is NULL: such a key references nothing).
fn key_values(
    row: &[Datum],
    cols: &[usize],
    target: &TableDef,
    target_cols: &[usize],
) -> Result<Option<Vec<Datum>>, SqlError> {
    let mut out = Vec::with_capacity(cols.len());
    for (&c, &t) in cols.iter().zip(target_cols) {
        if row[c].is_null() {
            return Ok(None);
        }
        let col = &target.columns[t];
        out.push(col.ty.coerce(row[c].clone()).map_err(|detail| {
            store_err(shoal_store::StoreError::BadValue {
                column: col.name.clone(),
                detail,
            })
        })?);
    }
    Ok(Some(out))
}

fn positions(def: &TableDef, names: &[String]) -> Option<Vec<usize>> {
    names.iter().map(|n| def.column_index(n)).collect()
}

fn key_name(def: &TableDef, cols: &[usize]) -> Option<Option<String>> {
    def.key_with_prefix(cols)
        .map(|k| k.map(|ix| ix.name.clone()))
}

impl Fks {
    /// The keys a write to `def` must honour; `None` when there are none or checks are off.
    pub(crate) fn of(
        store: &Engine,
        def: &TableDef,
        ctx: &mut dyn Context,
    ) -> Result<Option<Fks>, SqlError> {
        if !checks_on(ctx) {
            return Ok(None);
        }
        Ok(Self::gather(store, def))
    }

    fn gather(store: &Engine, def: &TableDef) -> Option<Fks> {
        let children = store.referencing(&def.db, &def.name);
        if def.foreign_keys.is_empty() && children.is_empty() {
            return None;
        }
        Some(Fks {
            store: store.clone(),
            own: def.foreign_keys.clone(),
            children,
        })
    }

    /// The parent of each of the row's non-NULL foreign keys exists (after an insert).
    pub(crate) fn after_insert(
        &self,
        txn: &mut Transaction,
        def: &TableDef,
        row: &[Datum],
    ) -> Result<(), SqlError> {
        for fk in &self.own {
            self.check_parent(txn, def, fk, row)?;
        }
        Ok(())
    }

    fn check_parent(
        &self,
        txn: &mut Transaction,
        def: &TableDef,
        fk: &ForeignKeyDef,
        row: &[Datum],
    ) -> Result<(), SqlError> {
        let parent = if fk.ref_db == def.db && fk.ref_table == def.name {
            Arc::new(def.clone())
        } else {
            self.store
                .table(&fk.ref_db, &fk.ref_table)
                .map_err(|_| no_parent(def, fk))?
        };
        let Some(ref_pos) = positions(&parent, &fk.ref_columns) else {
            return Err(no_parent(def, fk));
        };
        let Some(vals) = key_values(row, &fk.columns, &parent, &ref_pos)? else {
            return Ok(());
        };
        let Some(key) = key_name(&parent, &ref_pos) else {
            return Err(no_parent(def, fk));
        };
        let found = rows_with_prefix(txn, &parent, key.as_deref(), vals, LockMode::Shared, true)?;
        if found.is_empty() {
            return Err(no_parent(def, fk));
        }
        Ok(())
    }

    /// Before `row` of `def` is deleted: what its children's keys say.
    pub(crate) fn before_delete(
        &self,
        txn: &mut Transaction,
        def: &TableDef,
        row: &[Datum],
        depth: usize,
    ) -> Result<(), SqlError> {
        for (child, fi) in &self.children {
            let fk = &child.foreign_keys[*fi];
            let Some(ref_pos) = positions(def, &fk.ref_columns) else {
                continue;
            };
            let Some(vals) = key_values(row, &ref_pos, child, &fk.columns)? else {
                continue;
            };
            let key = key_name(child, &fk.columns).flatten();
            let mut rows =
                rows_with_prefix(txn, child, key.as_deref(), vals, LockMode::Exclusive, false)?;
            if child.id == def.id {
                rows.retain(|r| r.values != row); // a row referencing itself goes with it
            }
            if rows.is_empty() {
                continue;
            }
            match fk.on_delete {
                FkAction::Restrict | FkAction::NoAction => return Err(has_children(child, fk)),
                FkAction::Cascade | FkAction::SetNull => {
                    if depth >= MAX_DEPTH {
                        return Err(SqlError::coded(shoal_errors::ER_FK_DEPTH_EXCEEDED, format!("Foreign key cascade delete/update exceeds max depth of {MAX_DEPTH}."),
                        ));
                    }
                    let next = Self::gather(&self.store, child);
                    for r in rows {
                        if fk.on_delete == FkAction::Cascade {
                            if let Some(n) = &next {
                                n.before_delete(txn, child, &r.values, depth + 1)?;
                            }
                            txn.delete(child, &r.key).map_err(store_err)?;
                        } else {
                            let mut new = r.values.clone();
                            for &c in &fk.columns {
                                new[c] = Datum::Null;
                            }
                            txn.update(child, &r.key, new.clone()).map_err(store_err)?;
                            if let Some(n) = &next {
                                n.after_update(txn, child, &r.values, &new, depth + 1)?;
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// After `old` of `def` became `new`: its own keys still find parents, and children of the
    /// values it no longer has follow ON UPDATE.
    pub(crate) fn after_update(
        &self,
        txn: &mut Transaction,
        def: &TableDef,
        old: &[Datum],
        new: &[Datum],
        depth: usize,
    ) -> Result<(), SqlError> {
        for fk in &self.own {
            if fk.columns.iter().any(|&c| old[c] != new[c]) {
                self.check_parent(txn, def, fk, new)?;
            }
        }
        for (child, fi) in &self.children {
            let fk = &child.foreign_keys[*fi];
            let Some(ref_pos) = positions(def, &fk.ref_columns) else {
                continue;
            };
            if ref_pos.iter().all(|&p| old[p] == new[p]) {
                continue;
            }
            let Some(vals) = key_values(old, &ref_pos, child, &fk.columns)? else {
                continue;
            };
            let key = key_name(child, &fk.columns).flatten();
            let rows =
                rows_with_prefix(txn, child, key.as_deref(), vals, LockMode::Exclusive, false)?;
            if rows.is_empty() {
                continue;
            }
            match fk.on_update {
                FkAction::Restrict | FkAction::NoAction => return Err(has_children(child, fk)),
                FkAction::Cascade | FkAction::SetNull => {
                    if depth >= MAX_DEPTH {
                        return Err(SqlError::coded(shoal_errors::ER_FK_DEPTH_EXCEEDED, format!("Foreign key cascade delete/update exceeds max depth of {MAX_DEPTH}."),
                        ));
                    }
                    let next = Self::gather(&self.store, child);
                    for r in rows {
                        let mut changed = r.values.clone();
                        for (&c, &p) in fk.columns.iter().zip(&ref_pos) {
                            changed[c] = if fk.on_update == FkAction::Cascade {
                                let col = &child.columns[c];
                                col.ty.coerce(new[p].clone()).map_err(|detail| {
                                    store_err(shoal_store::StoreError::BadValue {
                                        column: col.name.clone(),
                                        detail,
                                    })
                                })?
                            } else {
                                Datum::Null
                            };
                        }
                        txn.update(child, &r.key, changed.clone())
                            .map_err(store_err)?;
                        if let Some(n) = &next {
                            n.after_update(txn, child, &r.values, &changed, depth + 1)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
