//! DDL: CREATE / DROP / TRUNCATE / ALTER of databases, tables and indexes.
//!
//! Each statement is one synced catalog write (the meta records of [`crate::catalog`]), then
//! the in-memory catalog is updated; statements are serialized by the DDL lock
//! (`Inner::lock_ddl`), whose waits are reported as metadata-lock waits. Table and index ids are
//! reserved durably before a build or copy starts, so a crash midway never reuses them, and a
//! dropped table's keys go with a range delete (ids are never reused, so nothing new aliases
//! them). The statements that read every row (CREATE INDEX, the ALTER TABLE copy) are in
//! `rebuild`.

use super::foreign_keys::{fk_error, foreign_key};
use super::{lock_mutex, Engine, Inner};
use crate::catalog::{self, ColumnDef, IndexDef, KeyFormat, TableDef, TableSpec};
use crate::codec::prefix_successor;
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
        for t in &tables {
            let def = self.inner.table(name, t)?;
            drop_table_writes(&mut b, &def);
            defs.push(def);
        }
        b.delete(catalog::db_key(name));
        self.inner.write_sync(b)?;
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

    /// DROP TABLE: removes the definition and (with a range delete) all rows and index entries.
    pub fn drop_table(&self, db: &str, name: &str) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, name)?;
        let mut b = WriteBatch::default();
        drop_table_writes(&mut b, &def);
        self.inner.write_sync(b)?;
        let mut cat = self.inner.catalog_mut();
        cat.tables.remove(db, name);
        cat.by_id.remove(&def.id);
        drop(cat);
        self.inner.forget_counters(def.id);
        Ok(())
    }

    /// TRUNCATE TABLE: deletes all rows and index entries and resets AUTO_INCREMENT.
    pub fn truncate_table(&self, db: &str, name: &str) -> Result<()> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, name)?;
        let mut b = WriteBatch::default();
        delete_prefix(&mut b, &catalog::rows_prefix(def.id));
        for ix in &def.indexes {
            delete_prefix(&mut b, &catalog::index_prefix(ix.id));
        }
        b.delete(catalog::counter_key(b'A', def.id));
        b.delete(catalog::counter_key(b'H', def.id));
        self.inner.write_sync(b)?;
        self.inner.forget_counters(def.id);
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
        delete_prefix(&mut b, &catalog::index_prefix(ix.id));
        self.inner.db.write(b)?;
        Ok(new)
    }
}

/// Range-deletes every key under `prefix`.
pub(super) fn delete_prefix(b: &mut WriteBatch, prefix: &[u8]) {
    let end = prefix_successor(prefix).expect("prefix has a successor");
    b.delete_range(prefix, &end[..]);
}

/// The writes of DROP TABLE: the definition, rows, index entries and counters.
fn drop_table_writes(b: &mut WriteBatch, def: &TableDef) {
    b.delete(catalog::table_key(&def.db, &def.name));
    delete_prefix(b, &catalog::rows_prefix(def.id));
    for ix in &def.indexes {
        delete_prefix(b, &catalog::index_prefix(ix.id));
    }
    b.delete(catalog::counter_key(b'A', def.id));
    b.delete(catalog::counter_key(b'H', def.id));
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
