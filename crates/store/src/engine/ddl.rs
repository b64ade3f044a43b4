//! DDL: CREATE / DROP / TRUNCATE / ALTER of databases, tables and indexes.
//!
//! Each statement is one synced catalog write (the meta records of [`crate::catalog`]), then
//! the in-memory catalog is updated; statements are serialized by the DDL lock
//! (`Inner::lock_ddl`), whose waits are reported as metadata-lock waits. Table and index ids are
//! reserved durably before a build or copy starts, so a crash midway never reuses them, and a
//! dropped table's keys are left to compaction (ids are never reused, so nothing new aliases
//! them; see `dropped`). The statements that read every row (CREATE INDEX, the ALTER TABLE
//! copy) are in `rebuild`.

use super::foreign_keys::{fk_error, foreign_key};
use super::{lock_mutex, Engine, Inner};
use crate::catalog::{self, ColumnDef, IndexDef, KeyFormat, TableDef, TableSpec};
use crate::error::{Result, StoreError};
use rocksdb::WriteBatch;
use shoal_wait::WaitKind;
use std::sync::{Arc, MutexGuard};

impl Engine {
    /// CREATE DATABASE. Errors with `DatabaseExists` if it exists.
    pub fn create_database(&self, name: &str) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        if self.database_exists(name) {
            return Err(StoreError::DatabaseExists(name.to_string()));
        }
        let mut b = WriteBatch::default();
        b.put(catalog::db_key(name), b"{}");
        self.inner.write_sync(b)?;
        self.inner.catalog_mut().databases.insert(name.to_string());
        Ok(())
    }

    /// DROP DATABASE with all its tables. Returns the number of tables dropped.
    pub fn drop_database(&self, name: &str) -> Result<usize> {
        let _ddl = self.inner.lock_ddl();
        let tables = self.tables(name)?;
        let mut b = WriteBatch::default();
        let mut defs = Vec::new();
        let mut ids = Vec::new();
        for t in &tables {
            let def = self.inner.table(name, t)?;
            ids.extend(drop_table_writes(&mut b, &def));
            defs.push(def);
        }
        b.delete(catalog::db_key(name));
        self.inner.write_sync(b)?;
        self.inner.forget_ids(&ids);
        let mut cat = self.inner.catalog_mut();
        for d in &defs {
            cat.tables.remove(&d.db, &d.name);
            cat.by_id.remove(&d.id);
        }
        cat.databases.remove(name);
        drop(cat);
        for d in &defs {
            self.inner.forget_counters(d.id);
        }
        Ok(tables.len())
    }

    /// CREATE TABLE. Validates the spec (names, key columns, AUTO_INCREMENT on an integer
    /// key column) and assigns key-space ids.
    pub fn create_table(&self, db: &str, spec: TableSpec) -> Result<Arc<TableDef>> {
        self.create_table_with(db, spec, true)
    }

    /// CREATE TABLE; with `fk_checks` false (`foreign_key_checks = 0`) a foreign key may name
    /// a parent table that does not exist yet, as MySQL allows: dump files create tables in
    /// name order, children before their parents. The key is then checked against the parent
    /// only when rows are (and the parent must exist by then).
    pub fn create_table_with(
        &self,
        db: &str,
        spec: TableSpec,
        fk_checks: bool,
    ) -> Result<Arc<TableDef>> {
        let _ddl = self.inner.lock_ddl();
        if !self.database_exists(db) {
            return Err(StoreError::NoSuchDatabase(db.to_string()));
        }
        if self.inner.table(db, &spec.name).is_ok() {
            return Err(StoreError::TableExists(spec.name.clone()));
        }
        validate_columns(&spec.columns)?;
        let find = |n: &str| {
            spec.columns
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(n))
                .ok_or_else(|| StoreError::NoSuchColumn(n.to_string()))
        };
        let mut columns = spec.columns.clone();
        let primary_key = if spec.primary_key.is_empty() {
            None
        } else {
            let pk = spec
                .primary_key
                .iter()
                .map(|n| find(n))
                .collect::<Result<Vec<_>>>()?;
            for &i in &pk {
                columns[i].nullable = false; // PRIMARY KEY implies NOT NULL
            }
            Some(pk)
        };
        let mut next_id = self.inner.catalog_read().next_id;
        let table_id = next_id;
        next_id += 1;
        let mut indexes: Vec<IndexDef> = Vec::new();
        for ix in &spec.indexes {
            if ix.name.eq_ignore_ascii_case("PRIMARY")
                || indexes
                    .iter()
                    .any(|i| i.name.eq_ignore_ascii_case(&ix.name))
            {
                return Err(StoreError::IndexExists(ix.name.clone()));
            }
            if ix.columns.is_empty() {
                return Err(StoreError::BadDefinition(format!(
                    "index '{}' has no columns",
                    ix.name
                )));
            }
            let cols = ix
                .columns
                .iter()
                .map(|n| find(n))
                .collect::<Result<Vec<_>>>()?;
            indexes.push(IndexDef {
                id: next_id,
                name: ix.name.clone(),
                columns: cols,
                unique: ix.unique,
                format: KeyFormat::Collated,
            });
            next_id += 1;
        }
        let mut def = TableDef {
            id: table_id,
            db: db.to_string(),
            name: spec.name.clone(),
            columns,
            primary_key,
            indexes,
            auto_increment_start: spec.auto_increment_start.unwrap_or(1).max(1),
            foreign_keys: Vec::new(),
            pk_format: KeyFormat::Collated,
        };
        validate_auto_increment(&def)?;
        for fk in &spec.foreign_keys {
            // InnoDB creates the index a foreign key needs when the table has none (named
            // after the constraint, else after its first column).
            let cols = fk
                .columns
                .iter()
                .map(|n| find(n))
                .collect::<Result<Vec<_>>>()?;
            if def.key_with_prefix(&cols).is_none() {
                let name = fk.name.clone().unwrap_or_else(|| fk.columns[0].clone());
                def.indexes.push(IndexDef {
                    id: next_id,
                    name,
                    columns: cols,
                    unique: false,
                    format: KeyFormat::Collated,
                });
                next_id += 1;
            }
            let parent_db = fk.ref_db.clone().unwrap_or_else(|| db.to_string());
            let parent = if parent_db == db && fk.ref_table.eq_ignore_ascii_case(&def.name) {
                Some(Arc::new(def.clone()))
            } else {
                match self.inner.table(&parent_db, &fk.ref_table) {
                    Ok(p) => Some(p),
                    Err(_) if !fk_checks => None,
                    Err(_) => {
                        return Err(fk_error(
                            shoal_errors::ER_FK_CANNOT_OPEN_PARENT.code,
                            format!("Failed to open the referenced table '{}'", fk.ref_table),
                        ))
                    }
                }
            };
            let names = self.fk_names(db);
            let f = foreign_key(&def, fk, parent.as_deref(), &names)?;
            def.foreign_keys.push(f);
        }
        let mut b = WriteBatch::default();
        b.put(
            catalog::table_key(db, &def.name),
            serde_json::to_vec(&def).expect("serializable"),
        );
        b.put(catalog::next_id_key(), next_id.to_be_bytes());
        self.inner.write_sync(b)?;
        let def = Arc::new(def);
        let mut cat = self.inner.catalog_mut();
        cat.next_id = next_id;
        cat.tables.insert(def.clone());
        cat.by_id.insert(def.id, def.clone());
        Ok(def)
    }

    /// DROP TABLE: removes the definition; its rows and index entries are unreachable at once
    /// and reclaimed by compaction (`dropped`).
    pub fn drop_table(&self, db: &str, name: &str) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, name)?;
        let mut b = WriteBatch::default();
        let ids = drop_table_writes(&mut b, &def);
        self.inner.write_sync(b)?;
        self.inner.forget_ids(&ids);
        let mut cat = self.inner.catalog_mut();
        cat.tables.remove(db, name);
        cat.by_id.remove(&def.id);
        drop(cat);
        self.inner.forget_counters(def.id);
        Ok(())
    }

    /// TRUNCATE TABLE: an empty table under fresh table and index ids (as InnoDB gives a
    /// truncated table a new tablespace), AUTO_INCREMENT reset; the old ids are dropped
    /// (`dropped`). Statements planned against the old definition see it changed and plan
    /// again, as after an ALTER TABLE copy.
    pub fn truncate_table(&self, db: &str, name: &str) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, name)?;
        let first_id = self.inner.catalog_read().next_id;
        let next_id = first_id + 1 + def.indexes.len() as u32;
        let mut new_def = (*def).clone();
        new_def.id = first_id;
        for (i, ix) in new_def.indexes.iter_mut().enumerate() {
            ix.id = first_id + 1 + i as u32;
        }
        let mut b = WriteBatch::default();
        b.put(catalog::next_id_key(), next_id.to_be_bytes());
        b.put(
            catalog::table_key(&new_def.db, &new_def.name),
            serde_json::to_vec(&new_def).expect("serializable"),
        );
        b.delete(catalog::counter_key(b'A', def.id));
        b.delete(catalog::counter_key(b'H', def.id));
        let ids = table_ids(&def);
        drop_ids(&mut b, &ids);
        self.inner.write_sync(b)?;
        self.inner.forget_ids(&ids);
        self.inner.forget_counters(def.id);
        let new_def = Arc::new(new_def);
        let mut cat = self.inner.catalog_mut();
        cat.next_id = next_id;
        cat.tables.insert(new_def.clone());
        cat.by_id.remove(&def.id);
        cat.by_id.insert(new_def.id, new_def);
        Ok(())
    }

    /// ALTER TABLE ADD COLUMN at the end, instantly: only the definition changes. Rows stored
    /// before stop short of the new column and read its `added_default` (which the SQL layer
    /// sets: the DEFAULT, the implicit zero of a NOT NULL column, or NULL). A name already there
    /// is 1060 (or nothing, with `if_not_exists`).
    pub fn add_column(
        &self,
        db: &str,
        table: &str,
        column: ColumnDef,
        if_not_exists: bool,
    ) -> Result<Arc<TableDef>> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, table)?;
        if def.column_index(&column.name).is_some() && if_not_exists {
            return Ok(def);
        }
        let mut new_def = (*def).clone();
        new_def.columns.push(column);
        validate_columns(&new_def.columns)?;
        self.inner.replace_table(new_def)
    }

    /// An ALTER TABLE that changes only the definition (renamed columns, new defaults, columns
    /// added at the end): `new_def` replaces `old`, which must still be the table's definition.
    /// No stored row changes, so the caller must not change a stored column's type or make a
    /// nullable one NOT NULL (that is [`Engine::rewrite_table`]).
    pub fn replace_definition(
        &self,
        old: &Arc<TableDef>,
        new_def: TableDef,
    ) -> Result<Arc<TableDef>> {
        let _ddl = lock_mutex(&self.inner.ddl);
        let def = self.inner.table(&old.db, &old.name)?;
        if *def != **old || new_def.id != def.id {
            return Err(StoreError::BadDefinition(format!(
                "table '{}' changed during ALTER TABLE",
                old.name
            )));
        }
        validate_columns(&new_def.columns)?;
        validate_auto_increment(&new_def)?;
        self.inner.replace_table(new_def)
    }

    /// DROP INDEX / ALTER TABLE DROP INDEX.
    pub fn drop_index(&self, db: &str, table: &str, name: &str) -> Result<Arc<TableDef>> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, table)?;
        let Some(ix) = def.index(name).cloned() else {
            return Err(StoreError::NoSuchIndex(name.to_string()));
        };
        let mut new_def = (*def).clone();
        new_def.indexes.retain(|i| i.id != ix.id);
        let new = self.inner.replace_table(new_def)?;
        let mut b = WriteBatch::default();
        drop_ids(&mut b, &[ix.id]);
        self.inner.write_sync(b)?;
        self.inner.forget_ids(&[ix.id]);
        Ok(new)
    }
}

/// Marks `ids` dropped in `b`: once `b` commits, their rows and index entries belong to no
/// table, and compactions remove them (`dropped`). The caller passes the same ids to
/// `Inner::forget_ids` after the write.
pub(super) fn drop_ids(b: &mut WriteBatch, ids: &[u32]) {
    for &id in ids {
        b.put(super::dropped::dropped_key(id), []);
    }
}

/// A table's id and its indexes' ids.
pub(super) fn table_ids(def: &TableDef) -> Vec<u32> {
    std::iter::once(def.id)
        .chain(def.indexes.iter().map(|ix| ix.id))
        .collect()
}

/// The writes of DROP TABLE: the definition, the counters, and its ids marked dropped (which
/// it returns, for `Inner::forget_ids`).
fn drop_table_writes(b: &mut WriteBatch, def: &TableDef) -> Vec<u32> {
    b.delete(catalog::table_key(&def.db, &def.name));
    b.delete(catalog::counter_key(b'A', def.id));
    b.delete(catalog::counter_key(b'H', def.id));
    let ids = table_ids(def);
    drop_ids(b, &ids);
    ids
}

/// Column names are unique, AUTO_INCREMENT only on an integer column, and only one.
pub(super) fn validate_columns(cols: &[ColumnDef]) -> Result<()> {
    if cols.is_empty() {
        return Err(StoreError::Definition {
            code: shoal_errors::ER_TABLE_MUST_HAVE_COLUMNS.code,
            state: shoal_errors::ER_TABLE_MUST_HAVE_COLUMNS.state,
            message: "A table must have at least 1 column".into(),
        });
    }
    for (i, c) in cols.iter().enumerate() {
        if cols[..i]
            .iter()
            .any(|d| d.name.eq_ignore_ascii_case(&c.name))
        {
            return Err(StoreError::Definition {
                code: shoal_errors::ER_DUP_FIELDNAME.code,
                state: shoal_errors::ER_DUP_FIELDNAME.state,
                message: format!("Duplicate column name '{}'", c.name),
            });
        }
        if c.auto_increment && !c.ty.is_integer() {
            return Err(StoreError::Definition {
                code: shoal_errors::ER_WRONG_FIELD_SPEC.code,
                state: shoal_errors::ER_WRONG_FIELD_SPEC.state,
                message: format!("Incorrect column specifier for column '{}'", c.name),
            });
        }
    }
    if cols.iter().filter(|c| c.auto_increment).count() > 1 {
        return Err(StoreError::BadDefinition(
            "Incorrect table definition; there can be only one auto column and it must be defined as a key".into(),
        ));
    }
    Ok(())
}

/// The AUTO_INCREMENT column leads the primary key or an index.
pub(super) fn validate_auto_increment(def: &TableDef) -> Result<()> {
    let Some(ai) = def.auto_increment_column() else {
        return Ok(());
    };
    let in_pk = def
        .primary_key
        .as_ref()
        .is_some_and(|pk| pk.first() == Some(&ai));
    let in_ix = def.indexes.iter().any(|i| i.columns.first() == Some(&ai));
    if !in_pk && !in_ix {
        return Err(StoreError::BadDefinition(
            "Incorrect table definition; there can be only one auto column and it must be defined as a key".into(),
        ));
    }
    Ok(())
}

impl Inner {
    /// Writes `def` as the table's new definition (synced) and publishes it.
    pub(super) fn replace_table(&self, def: TableDef) -> Result<Arc<TableDef>> {
        let mut b = WriteBatch::default();
        b.put(
            catalog::table_key(&def.db, &def.name),
            serde_json::to_vec(&def).expect("serializable"),
        );
        self.write_sync(b)?;
        let def = Arc::new(def);
        let mut cat = self.catalog_mut();
        cat.tables.insert(def.clone());
        cat.by_id.insert(def.id, def.clone());
        Ok(def)
    }

    /// Serializes DDL statements. Waiting behind another DDL (a synced catalog write, or a
    /// long ALTER) is reported as a metadata-lock wait, so a pool worker stuck here frees its
    /// group's slot; the uncontended case costs one `try_lock` and reports nothing.
    pub(super) fn lock_ddl(&self) -> MutexGuard<'_, ()> {
        match self.ddl.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                let _w = shoal_wait::wait(WaitKind::MetaDataLock);
                lock_mutex(&self.ddl)
            }
        }
    }
}
