//! DDL that reads the whole table: building an index over existing rows (CREATE INDEX) and
//! copying a table into a new layout (the ALTER TABLE copy algorithm).
//!
//! Both reserve their new ids with a synced write first, so a crash midway never reuses them;
//! then they read the table in chunks of 512 rows (`Snapshot::scan_chunk`, each chunk on a fresh
//! snapshot of the latest state) and write entries in unsynced batches of 10,000. A UNIQUE
//! collision (1062) or a conversion error removes everything written under the new ids and
//! leaves the table as it was; success switches the definition with one synced catalog write.

use super::ddl::{drop_ids, table_ids, validate_auto_increment, validate_columns};
use super::{lock_mutex, Engine, Snapshot};
use crate::catalog::{self, dup_error, IndexDef, IndexSpec, KeyFormat, TableDef};
use crate::codec::{decode_stored, prefix_successor};
use crate::datum::Datum;
use crate::error::{Result, StoreError};
use rocksdb::WriteBatch;
use std::collections::HashSet;
use std::sync::Arc;

impl Engine {
    /// CREATE INDEX / ALTER TABLE ADD INDEX: builds the index over the existing rows. A UNIQUE
    /// index over duplicate values fails with `DuplicateKey` and leaves nothing behind.
    /// Concurrent writes to the table during the build are not supported (no metadata locks
    /// yet): the SQL layer should not run DDL and DML on one table at the same time.
    pub fn create_index(&self, db: &str, table: &str, spec: IndexSpec) -> Result<Arc<TableDef>> {
        let _ddl = self.inner.lock_ddl();
        let def = self.inner.table(db, table)?;
        if spec.name.eq_ignore_ascii_case("PRIMARY") || def.index(&spec.name).is_some() {
            return Err(StoreError::IndexExists(spec.name.clone()));
        }
        if spec.columns.is_empty() {
            return Err(StoreError::BadDefinition(format!(
                "index '{}' has no columns",
                spec.name
            )));
        }
        let cols = spec
            .columns
            .iter()
            .map(|n| {
                def.column_index(n)
                    .ok_or_else(|| StoreError::NoSuchColumn(n.clone()))
            })
            .collect::<Result<Vec<_>>>()?;
        let next_id = self.inner.catalog_read().next_id;
        let index = IndexDef {
            id: next_id,
            name: spec.name.clone(),
            columns: cols,
            unique: spec.unique,
            format: KeyFormat::Collated,
        };
        // Reserve the id first, so a crash mid-build never reuses it.
        let mut b = WriteBatch::default();
        b.put(catalog::next_id_key(), (next_id + 1).to_be_bytes());
        self.inner.write_sync(b)?;
        self.inner.catalog_mut().next_id = next_id + 1;

        let types: Vec<_> = def.columns.iter().map(|c| c.ty).collect();
        let prefix = def.rows_prefix();
        let end = prefix_successor(&prefix).expect("prefix has a successor");
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        let mut batch = WriteBatch::default();
        let mut cursor = prefix.clone();
        let mut failure = None;
        'outer: loop {
            let chunk =
                Snapshot::new(&self.inner).scan_chunk(&cursor, Some(&end), 512, false, None)?;
            let Some(last) = chunk.last() else { break };
            cursor = prefix_successor_key(&last.0);
            for (k, v) in &chunk {
                let row = decode_stored(&def, &types, v).map_err(StoreError::Corrupt)?;
                let pk = &k[prefix.len()..];
                let (ik, unique_slot) = catalog::index_entry_key(&def, &index, &row, pk);
                if unique_slot && !seen.insert(ik.clone()) {
                    failure = Some(dup_error(&def, Some(&index), &row));
                    break 'outer;
                }
                batch.put(ik, pk);
                if batch.len() >= 10_000 {
                    self.inner.db.write(std::mem::take(&mut batch))?;
                }
            }
        }
        if let Some(err) = failure {
            let mut b = WriteBatch::default();
            drop_ids(&mut b, &[index.id]);
            self.inner.write_sync(b)?;
            self.inner.forget_ids(&[index.id]);
            return Err(err);
        }
        self.inner.db.write(batch)?;
        let mut new_def = (*def).clone();
        new_def.indexes.push(index);
        self.inner.replace_table(new_def)
    }

    /// An ALTER TABLE that changes what rows store (DROP COLUMN, MODIFY / CHANGE COLUMN to
    /// another type): InnoDB's copy algorithm. Every row of `old` is decoded, passed through
    /// `convert` and written, encoded for `new_def`'s columns, under a fresh table id, with
    /// fresh index ids and every index entry built again from the new row (a type change may
    /// change how an indexed value or the primary key encodes; a dropped column leaves its
    /// indexes). Then one synced write switches the definition to `new_def` with the new ids,
    /// carries the AUTO_INCREMENT and hidden row-id counters over and drops the old ids (their
    /// rows and entries go with compaction, `dropped`). A `convert` error (a value the new type cannot hold) or a duplicate in
    /// the primary key or a UNIQUE index (1062) removes the copy and leaves the table as it
    /// was; so does a crash before the switch, except that the copied keys stay under ids
    /// nothing names (ids are never reused).
    ///
    /// `new_def` gives positions in its own columns; its ids are replaced here. `old` must
    /// still be the table's definition (the caller planned against it); the caller keeps
    /// writers out of the table while it runs.
    pub fn rewrite_table(
        &self,
        old: &Arc<TableDef>,
        mut new_def: TableDef,
        convert: &mut dyn FnMut(Vec<Datum>) -> Result<Vec<Datum>>,
    ) -> Result<Arc<TableDef>> {
        let _ddl = lock_mutex(&self.inner.ddl);
        let def = self.inner.table(&old.db, &old.name)?;
        if *def != **old {
            return Err(StoreError::BadDefinition(format!(
                "table '{}' changed during ALTER TABLE",
                old.name
            )));
        }
        validate_columns(&new_def.columns)?;
        let first_id = self.inner.catalog_read().next_id;
        let next_id = first_id + 1 + new_def.indexes.len() as u32;
        // Reserve the ids first, so a crash mid-copy never reuses them.
        let mut b = WriteBatch::default();
        b.put(catalog::next_id_key(), next_id.to_be_bytes());
        self.inner.write_sync(b)?;
        self.inner.catalog_mut().next_id = next_id;
        new_def.id = first_id;
        // Every key is built again, so every key gets the collated format (how a table made
        // before it existed moves its string keys over).
        let pk_format_changed = def.primary_key.is_some() && def.pk_format != KeyFormat::Collated;
        new_def.pk_format = KeyFormat::Collated;
        for (i, ix) in new_def.indexes.iter_mut().enumerate() {
            ix.id = first_id + 1 + i as u32;
            ix.format = KeyFormat::Collated;
        }
        for c in &mut new_def.columns {
            // Every copied row stores every column.
            c.added_default = None;
        }
        validate_auto_increment(&new_def)?;
        let pk_types = |d: &TableDef| {
            d.primary_key
                .as_ref()
                .map(|pk| pk.iter().map(|&i| d.columns[i].ty).collect::<Vec<_>>())
        };
        // The primary key's values can collide only if their type or encoding changed ('a' and
        // 'A' are two binary keys and one collated key).
        let check_pk = pk_types(&def) != pk_types(&new_def) || pk_format_changed;

        let types: Vec<_> = def.columns.iter().map(|c| c.ty).collect();
        let prefix = def.rows_prefix();
        let end = prefix_successor(&prefix).expect("prefix has a successor");
        let mut batch = WriteBatch::default();
        let mut cursor = prefix.clone();
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        let copied: Result<()> = (|| {
            loop {
                let chunk =
                    Snapshot::new(&self.inner).scan_chunk(&cursor, Some(&end), 512, false, None)?;
                let Some(last) = chunk.last() else { break };
                cursor = prefix_successor_key(&last.0);
                for (k, v) in &chunk {
                    let row = decode_stored(&def, &types, v).map_err(StoreError::Corrupt)?;
                    let row = convert(row)?;
                    let pk = catalog::pk_of_row(&new_def, &row)
                        .unwrap_or_else(|| k[prefix.len()..].to_vec());
                    let key = catalog::row_key(new_def.id, &pk);
                    if check_pk && !seen.insert(key.clone()) {
                        return Err(dup_error(&new_def, None, &row));
                    }
                    for ix in &new_def.indexes {
                        let (ik, unique_slot) = catalog::index_entry_key(&new_def, ix, &row, &pk);
                        if unique_slot && !seen.insert(ik.clone()) {
                            return Err(dup_error(&new_def, Some(ix), &row));
                        }
                        batch.put(ik, &pk);
                    }
                    batch.put(key, crate::codec::encode_row(&row));
                    if batch.len() >= 10_000 {
                        self.inner.db.write(std::mem::take(&mut batch))?;
                    }
                }
            }
            self.inner.db.write(std::mem::take(&mut batch))?;
            Ok(())
        })();
        if let Err(e) = copied {
            let mut b = WriteBatch::default();
            let ids = table_ids(&new_def);
            drop_ids(&mut b, &ids);
            self.inner.write_sync(b)?;
            self.inner.forget_ids(&ids);
            return Err(e);
        }
        let mut b = WriteBatch::default();
        b.put(
            catalog::table_key(&new_def.db, &new_def.name),
            serde_json::to_vec(&new_def).expect("serializable"),
        );
        for kind in [b'A', b'H'] {
            let next = self.inner.peek_counter(kind, &def)?;
            b.put(catalog::counter_key(kind, new_def.id), next.to_be_bytes());
            b.delete(catalog::counter_key(kind, def.id));
        }
        let old_ids = table_ids(&def);
        drop_ids(&mut b, &old_ids);
        self.inner.write_sync(b)?;
        self.inner.forget_ids(&old_ids);
        self.inner.forget_counters(def.id);
        let new_def = Arc::new(new_def);
        let mut cat = self.inner.catalog_mut();
        cat.tables.insert(new_def.clone());
        cat.by_id.remove(&def.id);
        cat.by_id.insert(new_def.id, new_def.clone());
        Ok(new_def)
    }
}

/// The smallest key strictly greater than `k`.
fn prefix_successor_key(k: &[u8]) -> Vec<u8> {
    let mut v = k.to_vec();
    v.push(0);
    v
}
