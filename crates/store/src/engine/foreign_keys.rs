//! Foreign keys in the catalog: validating a definition against the child and its parent
//! (InnoDB's rules and error codes), naming it, adding and dropping it, and finding the keys
//! that reference a table. Rows are checked by the SQL layer (`foreign_key_checks`), not here.

use super::Engine;
use crate::catalog::{self, TableDef};
use crate::datum::ColumnType;
use crate::error::{Result, StoreError};
use std::sync::Arc;

impl Engine {
    /// ALTER TABLE ADD [CONSTRAINT name] FOREIGN KEY: the child needs an index whose leading
    /// columns are the foreign key's (create it first); existing rows are not checked here
    /// (the SQL layer does, under `foreign_key_checks`).
    pub fn add_foreign_key(
        &self,
        db: &str,
        table: &str,
        spec: &catalog::ForeignKeySpec,
    ) -> Result<Arc<TableDef>> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, table)?;
        let parent_db = spec.ref_db.clone().unwrap_or_else(|| db.to_string());
        let parent = if parent_db == db && spec.ref_table.eq_ignore_ascii_case(table) {
            def.clone()
        } else {
            self.inner.table(&parent_db, &spec.ref_table).map_err(|_| {
                fk_error(
                    shoal_errors::ER_FK_CANNOT_OPEN_PARENT.code,
                    format!("Failed to open the referenced table '{}'", spec.ref_table),
                )
            })?
        };
        let f = foreign_key(&def, spec, Some(&parent), &self.fk_names(db))?;
        let cols = f.columns.clone();
        if def.key_with_prefix(&cols).is_none() {
            return Err(fk_error(
                shoal_errors::ER_FK_NO_INDEX_PARENT.code,
                format!(
                    "Failed to add the foreign key constraint. Missing index for constraint '{}' in the referenced table '{}'",
                    f.name, table
                ),
            ));
        }
        let mut new_def = (*def).clone();
        new_def.foreign_keys.push(f);
        self.inner.replace_table(new_def)
    }

    /// ALTER TABLE DROP FOREIGN KEY name (its index stays, as in InnoDB).
    pub fn drop_foreign_key(&self, db: &str, table: &str, name: &str) -> Result<Arc<TableDef>> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, table)?;
        if !def
            .foreign_keys
            .iter()
            .any(|f| f.name.eq_ignore_ascii_case(name))
        {
            return Err(fk_error(
                shoal_errors::ER_CANT_DROP_FIELD_OR_KEY.code,
                format!("Can't DROP '{name}'; check that column/key exists"),
            ));
        }
        let mut new_def = (*def).clone();
        new_def
            .foreign_keys
            .retain(|f| !f.name.eq_ignore_ascii_case(name));
        self.inner.replace_table(new_def)
    }

    /// The foreign keys of other tables (and of the table itself) that reference `db.table`:
    /// (the referencing table, the position of the key in its `foreign_keys`).
    pub fn referencing(&self, db: &str, table: &str) -> Vec<(Arc<TableDef>, usize)> {
        let cat = self.inner.catalog_read();
        let mut out = Vec::new();
        for def in cat.tables.values() {
            for (i, f) in def.foreign_keys.iter().enumerate() {
                if f.ref_db == db && f.ref_table.eq_ignore_ascii_case(table) {
                    out.push((def.clone(), i));
                }
            }
        }
        out
    }

    /// Foreign key names in `db` (they are unique per database in InnoDB).
    pub(super) fn fk_names(&self, db: &str) -> Vec<String> {
        let cat = self.inner.catalog_read();
        cat.tables
            .values()
            .filter(|d| d.db == db)
            .flat_map(|d| d.foreign_keys.iter().map(|f| f.name.to_ascii_lowercase()))
            .collect()
    }
}

/// A foreign key definition error with its MySQL code.
pub(super) fn fk_error(code: u16, message: String) -> StoreError {
    StoreError::ForeignKey { code, message }
}

/// Whether a referencing and a referenced column can form a foreign key (InnoDB: same integer
/// size and sign, same DECIMAL, any pair of CHAR/VARCHAR, otherwise the same type).
fn fk_compatible(a: ColumnType, b: ColumnType) -> bool {
    use ColumnType as T;
    match (a, b) {
        (T::Char(_) | T::Varchar(_), T::Char(_) | T::Varchar(_)) => true,
        (x, y) => x == y,
    }
}

/// Validates a foreign key of `child` against its parent (`None`: the parent does not exist
/// yet, under `foreign_key_checks = 0`: only the child's side is checked).
pub(super) fn foreign_key(
    child: &TableDef,
    spec: &catalog::ForeignKeySpec,
    parent: Option<&TableDef>,
    taken: &[String],
) -> Result<catalog::ForeignKeyDef> {
    let name = match &spec.name {
        Some(n) => n.clone(),
        None => {
            let mut n = child.foreign_keys.len() + 1;
            loop {
                let cand = format!("{}_ibfk_{n}", child.name);
                if !taken.contains(&cand.to_ascii_lowercase()) {
                    break cand;
                }
                n += 1;
            }
        }
    };
    if spec.name.is_some() && taken.contains(&name.to_ascii_lowercase()) {
        return Err(fk_error(
            shoal_errors::ER_FK_DUP_NAME.code,
            format!("Duplicate foreign key constraint name '{name}'"),
        ));
    }
    let cols = spec
        .columns
        .iter()
        .map(|n| {
            child.column_index(n).ok_or_else(|| {
                fk_error(
                    shoal_errors::ER_KEY_COLUMN_DOES_NOT_EXITS.code,
                    format!("Key column '{n}' doesn't exist in table"),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if spec.ref_columns.len() != cols.len() {
        return Err(fk_error(
            shoal_errors::ER_WRONG_FK_DEF.code,
            format!(
                "Incorrect foreign key definition for '{name}': Key reference and table reference don't match"
            ),
        ));
    }
    let Some(parent) = parent else {
        return Ok(catalog::ForeignKeyDef {
            name,
            columns: cols,
            ref_db: spec.ref_db.clone().unwrap_or_else(|| child.db.clone()),
            ref_table: spec.ref_table.clone(),
            ref_columns: spec.ref_columns.clone(),
            on_delete: spec.on_delete,
            on_update: spec.on_update,
        });
    };
    let mut ref_pos = Vec::new();
    for r in &spec.ref_columns {
        ref_pos.push(parent.column_index(r).ok_or_else(|| {
            fk_error(
                shoal_errors::ER_FK_NO_INDEX_PARENT.code,
                format!(
                    "Failed to add the foreign key constraint. Missing column '{r}' for constraint '{name}' in the referenced table '{}'",
                    parent.name
                ),
            )
        })?);
    }
    if parent.key_with_prefix(&ref_pos).is_none() {
        return Err(fk_error(
            shoal_errors::ER_FK_NO_INDEX_PARENT.code,
            format!(
                "Failed to add the foreign key constraint. Missing index for constraint '{name}' in the referenced table '{}'",
                parent.name
            ),
        ));
    }
    for (&c, &p) in cols.iter().zip(&ref_pos) {
        if !fk_compatible(child.columns[c].ty, parent.columns[p].ty) {
            return Err(fk_error(
                shoal_errors::ER_FK_INCOMPATIBLE_COLUMNS.code,
                format!(
                    "Referencing column '{}' and referenced column '{}' in foreign key constraint '{name}' are incompatible.",
                    child.columns[c].name, parent.columns[p].name
                ),
            ));
        }
        let set_null = spec.on_delete == catalog::FkAction::SetNull
            || spec.on_update == catalog::FkAction::SetNull;
        if set_null && !child.columns[c].nullable {
            return Err(fk_error(
                shoal_errors::ER_FK_COLUMN_NOT_NULL.code,
                format!(
                    "Column '{}' cannot be NOT NULL: needed in a foreign key constraint '{name}' SET NULL",
                    child.columns[c].name
                ),
            ));
        }
    }
    Ok(catalog::ForeignKeyDef {
        name,
        columns: cols,
        ref_db: parent.db.clone(),
        ref_table: parent.name.clone(),
        ref_columns: ref_pos
            .iter()
            .map(|&p| parent.columns[p].name.clone())
            .collect(),
        on_delete: spec.on_delete,
        on_update: spec.on_update,
    })
}
