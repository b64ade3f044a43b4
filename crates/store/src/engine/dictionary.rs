//! The data dictionary: the catalog in memory (why it is kept there: [`crate::catalog`], which
//! also has the layout of its records), loaded from the meta records at open, and the catalog
//! reads of [`Engine`]. DDL (`ddl`) changes it only after its synced write succeeded.

use super::{Engine, Inner};
use crate::catalog::{TableDef, SPACE_META};
use crate::error::{Result, StoreError};
use rocksdb::DB;
use rustc_hash::FxHashMap;
use std::collections::HashSet;
use std::sync::Arc;

/// The catalog in memory: what the `0x01` meta records say, kept current by DDL.
#[derive(Default)]
pub(crate) struct Catalog {
    pub(super) databases: HashSet<String>,
    /// Tables by database and name.
    pub(super) tables: Tables,
    /// The same definitions by table id (what DML looks up: see `Inner::table_by_id`).
    pub(super) by_id: FxHashMap<u32, Arc<TableDef>>,
    /// The next table/index id (persisted as the `'M'` record; ids are never reused).
    pub(super) next_id: u32,
}

/// Table definitions by database and name, looked up by every statement that names a table:
/// by borrowed names (no key to build) with Fx hashing (the names are the catalog's own). A
/// map keyed by `(String, String)` cost two allocations and a SipHash of both per lookup.
#[derive(Default)]
pub(crate) struct Tables(FxHashMap<String, FxHashMap<String, Arc<TableDef>>>);

impl Tables {
    /// The definition of `db`.`name`.
    pub(super) fn get(&self, db: &str, name: &str) -> Option<&Arc<TableDef>> {
        self.0.get(db)?.get(name)
    }

    /// Adds or replaces a definition, under its own database and name.
    pub(super) fn insert(&mut self, def: Arc<TableDef>) {
        self.0
            .entry(def.db.clone())
            .or_default()
            .insert(def.name.clone(), def);
    }

    /// Forgets `db`.`name`.
    pub(super) fn remove(&mut self, db: &str, name: &str) {
        if let Some(m) = self.0.get_mut(db) {
            m.remove(name);
            if m.is_empty() {
                self.0.remove(db);
            }
        }
    }

    /// Every definition, in no order.
    pub(super) fn values(&self) -> impl Iterator<Item = &Arc<TableDef>> {
        self.0.values().flat_map(|m| m.values())
    }

    /// The names of the tables of `db`, in no order.
    pub(super) fn names_in<'a>(&'a self, db: &str) -> impl Iterator<Item = &'a String> {
        self.0.get(db).into_iter().flat_map(|m| m.keys())
    }
}

/// Reads every meta record at open (the dropped ids into `dropped`).
pub(super) fn load_catalog(db: &DB, dropped: &super::dropped::Dropped) -> Result<Catalog> {
    let mut cat = Catalog {
        next_id: 1,
        ..Default::default()
    };
    let meta_end = [SPACE_META + 1];
    for item in db.iterator(rocksdb::IteratorMode::From(
        &[SPACE_META],
        rocksdb::Direction::Forward,
    )) {
        let (k, v) = item?;
        if k.as_ref() >= &meta_end[..] {
            break;
        }
        match k.get(1) {
            Some(b'D') => {
                let name = String::from_utf8(k[2..].to_vec())
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?;
                cat.databases.insert(name);
            }
            Some(b'T') => {
                let def: TableDef = serde_json::from_slice(&v)
                    .map_err(|e| StoreError::Corrupt(format!("table definition: {e}")))?;
                let def = Arc::new(def);
                cat.tables.insert(def.clone());
                cat.by_id.insert(def.id, def);
            }
            Some(b'M') => {
                let arr: [u8; 4] = v
                    .as_ref()
                    .try_into()
                    .map_err(|_| StoreError::Corrupt("next id".into()))?;
                cat.next_id = u32::from_be_bytes(arr);
            }
            Some(b'X') => {
                let arr: [u8; 4] = k[2..]
                    .try_into()
                    .map_err(|_| StoreError::Corrupt("dropped id".into()))?;
                dropped.insert(&[u32::from_be_bytes(arr)]);
            }
            _ => {}
        }
    }
    Ok(cat)
}

impl Engine {
    /// Database names, sorted.
    pub fn databases(&self) -> Vec<String> {
        let cat = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<String> = cat.databases.iter().cloned().collect();
        v.sort();
        v
    }

    /// Whether a database exists.
    pub fn database_exists(&self, db: &str) -> bool {
        self.inner
            .catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .databases
            .contains(db)
    }

    /// Table names of `db`, sorted.
    pub fn tables(&self, db: &str) -> Result<Vec<String>> {
        let cat = self.inner.catalog.read().unwrap_or_else(|e| e.into_inner());
        if !cat.databases.contains(db) {
            return Err(StoreError::NoSuchDatabase(db.to_string()));
        }
        let mut v: Vec<String> = cat.tables.names_in(db).cloned().collect();
        v.sort();
        Ok(v)
    }

    /// The current definition of `db.name`.
    pub fn table(&self, db: &str, name: &str) -> Result<Arc<TableDef>> {
        self.inner.table(db, name)
    }
}

impl Inner {
    /// The catalog, for reading (a poisoned lock is taken over: DDL keeps it consistent).
    pub(super) fn catalog_read(&self) -> std::sync::RwLockReadGuard<'_, Catalog> {
        self.catalog.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The catalog, for DDL (under `Inner::lock_ddl`).
    pub(super) fn catalog_mut(&self) -> std::sync::RwLockWriteGuard<'_, Catalog> {
        self.catalog.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The current definition of `db.name` (1049 or 1146 when missing).
    pub(crate) fn table(&self, db: &str, name: &str) -> Result<Arc<TableDef>> {
        let cat = self.catalog_read();
        if let Some(t) = cat.tables.get(db, name) {
            return Ok(t.clone());
        }
        if !cat.databases.contains(db) {
            return Err(StoreError::NoSuchDatabase(db.to_string()));
        }
        Err(StoreError::NoSuchTable {
            db: db.to_string(),
            table: name.to_string(),
        })
    }

    /// The current definition of a table by id (DML always uses the latest definition, so
    /// index maintenance follows CREATE/DROP INDEX).
    pub(crate) fn table_by_id(&self, t: &TableDef) -> Result<Arc<TableDef>> {
        self.catalog_read()
            .by_id
            .get(&t.id)
            .cloned()
            .ok_or_else(|| StoreError::NoSuchTable {
                db: t.db.clone(),
                table: t.name.clone(),
            })
    }
}
