//! Table, column and index definitions, and where their data lives in the key space.
//!
//! Everything is in RocksDB's default column family, separated by a one-byte space prefix:
//!
//! | prefix | key                                    | value                                   |
//! |--------|----------------------------------------|-----------------------------------------|
//! | `0x01` | `'D' db`                               | database definition (JSON)              |
//! | `0x01` | `'T' db 0x00 table`                    | [`TableDef`] (JSON)                     |
//! | `0x01` | `'M'`                                  | next table/index id (u32 BE)            |
//! | `0x01` | `'A' table_id` / `'H' table_id`        | auto-increment / hidden row-id high-water mark (u64 BE) |
//! | `0x01` | `'X' id`                               | empty: a dropped table or index id      |
//! | `0x02` | `table_id(u32 BE) pk`                  | encoded row (see `codec`)               |
//! | `0x03` | `index_id(u32 BE) index-key [pk]`      | encoded pk                              |
//!
//! Table and index ids come from one persistent counter and are never reused, so a dropped
//! table's keys can be left for compaction to remove (`engine/dropped.rs`) without ever
//! aliasing a new table.
//! A table without a PRIMARY KEY gets a hidden `BIGINT UNSIGNED` row id as its key.
//! A UNIQUE index entry's key is the index columns alone when none of them is NULL (so two rows
//! with the same value collide on one key, which is what the uniqueness check and its lock use);
//! otherwise, and for non-unique indexes, the primary key is appended so entries stay distinct
//! (MySQL allows any number of NULLs in a UNIQUE index).
//!
//! How a key encodes its CHAR/VARCHAR/TEXT columns is recorded per key ([`KeyFormat`]):
//! catalogs written before collated keys existed have no format recorded and read as
//! [`KeyFormat::Binary`] (the strings' own bytes), which such tables keep until a rebuild; every
//! key created since is [`KeyFormat::Collated`] (collation weights, see `codec`).
//!
//! The catalog is DDL-rate data: it is kept in memory behind a `RwLock` and written through to
//! RocksDB with a synced write for every DDL statement.

use crate::codec::{encode_key_col, encode_key_weighted};
use crate::datum::{ColumnType, Datum};
use crate::error::StoreError;
use serde::{Deserialize, Serialize};

pub(crate) const SPACE_META: u8 = 0x01;
pub(crate) const SPACE_ROWS: u8 = 0x02;
pub(crate) const SPACE_INDEX: u8 = 0x03;

/// A column's DEFAULT clause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ColumnDefault {
    /// A constant (may be `Datum::Null` for `DEFAULT NULL`).
    Value(Datum),
    /// `DEFAULT CURRENT_TIMESTAMP` (the SQL layer evaluates it at insert time).
    CurrentTimestamp,
}

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnDef {
    /// Column name as declared.
    pub name: String,
    /// Declared type.
    pub ty: ColumnType,
    /// Whether NULL is allowed.
    pub nullable: bool,
    /// DEFAULT clause, if any. Storage does not fill defaults: the SQL layer builds full rows.
    pub default: Option<ColumnDefault>,
    /// AUTO_INCREMENT column: a NULL or 0 value on insert is replaced by the next counter value.
    pub auto_increment: bool,
    /// A column added by ALTER TABLE ADD COLUMN: the value rows stored before it read (their
    /// stored values stop short of it; `None`: NULL). Adding a column rewrites no row
    /// (InnoDB's instant ADD COLUMN).
    #[serde(default)]
    pub added_default: Option<Datum>,
    /// The most bytes a TEXT / BLOB column holds, by its declared size: 255 (TINYTEXT,
    /// TINYBLOB), 65535 (TEXT, BLOB), 16777215 (MEDIUM*), 4294967295 (LONG*). `None` for other
    /// types and for TEXT/BLOB columns of catalogs written before sizes were kept (no limit).
    #[serde(default)]
    pub max_bytes: Option<u32>,
}

impl ColumnDef {
    /// The column's type as SHOW and information_schema name it: a TEXT / BLOB by its size
    /// (`tinytext`, `mediumblob`, ...), any other type by [`ColumnType::sql_name`].
    pub fn type_name(&self) -> String {
        let size = match self.max_bytes {
            Some(255) => "tiny",
            Some(16_777_215) => "medium",
            Some(u32::MAX) => "long",
            _ => "",
        };
        match self.ty {
            ColumnType::Text | ColumnType::Blob => format!("{size}{}", self.ty.sql_name()),
            _ => self.ty.sql_name(),
        }
    }
}

/// How a key (the primary key or an index) encodes its character-string columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum KeyFormat {
    /// The strings' own bytes: binary order and binary equality, while SQL compares strings
    /// case-insensitively. Keys of tables created before [`KeyFormat::Collated`] existed (the
    /// catalog then recorded no format); the SQL layer never looks strings up through them.
    #[default]
    Binary,
    /// CHAR/VARCHAR/TEXT columns as their collation weights (`shoal_collation`): key order and
    /// key equality are SQL's, so `'a'` and `'A'` share a UNIQUE slot and lookups may use the
    /// key. BINARY/VARBINARY/BLOB columns keep their bytes.
    Collated,
}

impl KeyFormat {
    /// Whether a column of type `ty` is encoded as a collation weight in a key of this format.
    pub fn weighs(self, ty: ColumnType) -> bool {
        self == KeyFormat::Collated && ty.is_text()
    }
}

/// A secondary (UNIQUE or non-unique) index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexDef {
    /// Key-space id (never reused).
    pub id: u32,
    /// Index name (`k_1`, ...).
    pub name: String,
    /// Positions of the indexed columns in [`TableDef::columns`], in key order.
    pub columns: Vec<usize>,
    /// UNIQUE index.
    pub unique: bool,
    /// How its string columns are encoded (absent in old catalogs: `Binary`).
    #[serde(default)]
    pub format: KeyFormat,
}

/// What a foreign key does to referencing rows when the referenced row is deleted or its key
/// changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum FkAction {
    /// Refuse (1451). `NO ACTION` is the same in InnoDB (checks are never deferred).
    #[default]
    Restrict,
    /// Delete the referencing rows / update their key columns too.
    Cascade,
    /// Set the referencing columns to NULL.
    SetNull,
    /// `NO ACTION`: as RESTRICT, kept apart for SHOW CREATE TABLE.
    NoAction,
}

/// A FOREIGN KEY of a (child) table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForeignKeyDef {
    /// Constraint name (`<table>_ibfk_<n>` when not given).
    pub name: String,
    /// Positions of the referencing columns in [`TableDef::columns`].
    pub columns: Vec<usize>,
    /// Referenced table.
    pub ref_db: String,
    pub ref_table: String,
    /// Referenced columns, by name (the referenced table's definition may be replaced).
    pub ref_columns: Vec<String>,
    pub on_delete: FkAction,
    pub on_update: FkAction,
}

/// A FOREIGN KEY to create, by column names.
#[derive(Debug, Clone)]
pub struct ForeignKeySpec {
    /// Constraint name; `None` = generated.
    pub name: Option<String>,
    pub columns: Vec<String>,
    /// Referenced database (`None` = the child's).
    pub ref_db: Option<String>,
    pub ref_table: String,
    pub ref_columns: Vec<String>,
    pub on_delete: FkAction,
    pub on_update: FkAction,
}

/// A table definition. Shared as `Arc<TableDef>`; DDL replaces the Arc, it never mutates one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableDef {
    /// Key-space id of the rows (never reused).
    pub id: u32,
    /// Database name.
    pub db: String,
    /// Table name.
    pub name: String,
    /// Columns in declaration order; rows are `Vec<Datum>` in this order.
    pub columns: Vec<ColumnDef>,
    /// Positions of the PRIMARY KEY columns; `None` = no primary key (hidden row id).
    pub primary_key: Option<Vec<usize>>,
    /// Secondary indexes.
    pub indexes: Vec<IndexDef>,
    /// First AUTO_INCREMENT value (table option `AUTO_INCREMENT=n`, default 1).
    pub auto_increment_start: u64,
    /// FOREIGN KEYs of this table (absent in catalogs written before they existed).
    #[serde(default)]
    pub foreign_keys: Vec<ForeignKeyDef>,
    /// How the primary key's string columns are encoded (absent in old catalogs: `Binary`).
    #[serde(default)]
    pub pk_format: KeyFormat,
}

/// The type of the hidden row id key.
pub const HIDDEN_PK_TYPE: ColumnType = ColumnType::Int {
    bytes: 8,
    unsigned: true,
};

impl TableDef {
    /// Whether a stored row `old` and the coerced row `new` hold the same values as the
    /// columns give them ([`ColumnType::read`]: a FLOAT an older build stored unrounded equals
    /// its single-precision value), so an UPDATE writing `new` changes nothing.
    pub fn same_values(&self, old: &[Datum], new: &[Datum]) -> bool {
        old.len() == new.len()
            && old
                .iter()
                .zip(new)
                .zip(&self.columns)
                .all(|((o, n), c)| o == n || c.ty.read(o.clone()) == *n)
    }

    /// A key (`None` = the primary key) whose leading columns are `cols`, in order: what a
    /// foreign key needs on both of its tables.
    pub fn key_with_prefix(&self, cols: &[usize]) -> Option<Option<&IndexDef>> {
        if self
            .primary_key
            .as_ref()
            .is_some_and(|pk| pk.len() >= cols.len() && pk[..cols.len()] == *cols)
        {
            return Some(None);
        }
        self.indexes
            .iter()
            .find(|ix| ix.columns.len() >= cols.len() && ix.columns[..cols.len()] == *cols)
            .map(Some)
    }

    /// Position of the AUTO_INCREMENT column, if any.
    pub fn auto_increment_column(&self) -> Option<usize> {
        self.columns.iter().position(|c| c.auto_increment)
    }

    /// Position of a column by name (case-insensitive, as MySQL column names are).
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// Whether the table has a hidden row id instead of a primary key.
    pub fn has_hidden_pk(&self) -> bool {
        self.primary_key.is_none()
    }

    /// The types of the primary key columns (the hidden row id type for tables without one).
    pub fn pk_types(&self) -> Vec<ColumnType> {
        match &self.primary_key {
            Some(cols) => cols.iter().map(|&i| self.columns[i].ty).collect(),
            None => vec![HIDDEN_PK_TYPE],
        }
    }

    /// Per primary key column: whether it is encoded as a collation weight (never for the
    /// hidden row id).
    pub fn pk_weighted(&self) -> Vec<bool> {
        match &self.primary_key {
            Some(cols) => cols
                .iter()
                .map(|&i| self.pk_format.weighs(self.columns[i].ty))
                .collect(),
            None => vec![false],
        }
    }

    /// Per column of `index`: whether it is encoded as a collation weight.
    pub fn index_weighted(&self, index: &IndexDef) -> Vec<bool> {
        index
            .columns
            .iter()
            .map(|&i| index.format.weighs(self.columns[i].ty))
            .collect()
    }

    /// The format of a key: the primary key (`None`) or the named index (`Binary` if there is
    /// no such index).
    pub fn key_format(&self, index: Option<&str>) -> KeyFormat {
        match index {
            None => self.pk_format,
            Some(n) => self.index(n).map_or(KeyFormat::Binary, |ix| ix.format),
        }
    }

    /// Index by name (case-insensitive).
    pub fn index(&self, name: &str) -> Option<&IndexDef> {
        self.indexes
            .iter()
            .find(|i| i.name.eq_ignore_ascii_case(name))
    }

    /// The types of an index's columns.
    pub fn index_types(&self, index: &IndexDef) -> Vec<ColumnType> {
        index.columns.iter().map(|&i| self.columns[i].ty).collect()
    }

    /// Whether the entries of `index` alone give every column `want` marks (a covering,
    /// index-only read): each is a column of the index or of the primary key (the entry's
    /// value) whose key encoding gives the value back. A CHAR/VARCHAR/TEXT column of a
    /// collated key is held as its collation weight (`'abc'`, `'ABC'` and `'abc '` are one
    /// key), which does not give the string back: it is never covered.
    pub fn index_covers(&self, index: &IndexDef, want: &[bool]) -> bool {
        let pk_weighted = self.pk_weighted();
        let pk = self.primary_key.as_deref().unwrap_or(&[]);
        want.iter().enumerate().all(|(c, &w)| {
            !w || index
                .columns
                .iter()
                .any(|&i| i == c && !index.format.weighs(self.columns[c].ty))
                || pk
                    .iter()
                    .zip(&pk_weighted)
                    .any(|(&i, &weighted)| i == c && !weighted)
        })
    }

    pub(crate) fn rows_prefix(&self) -> Vec<u8> {
        rows_prefix(self.id)
    }
}

/// `0x02 table_id`.
pub(crate) fn rows_prefix(table_id: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(24);
    k.push(SPACE_ROWS);
    k.extend_from_slice(&table_id.to_be_bytes());
    k
}

/// `0x03 index_id`.
pub(crate) fn index_prefix(index_id: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(32);
    k.push(SPACE_INDEX);
    k.extend_from_slice(&index_id.to_be_bytes());
    k
}

/// The RocksDB key of a row given its encoded primary key.
pub(crate) fn row_key(table_id: u32, pk: &[u8]) -> Vec<u8> {
    let mut k = rows_prefix(table_id);
    k.extend_from_slice(pk);
    k
}

/// The RocksDB key of an index entry for `row` whose encoded primary key is `pk`, and whether
/// it is a "unique slot" (a UNIQUE index entry without NULLs, which must be checked and locked).
pub(crate) fn index_entry_key(
    def: &TableDef,
    index: &IndexDef,
    row: &[Datum],
    pk: &[u8],
) -> (Vec<u8>, bool) {
    let mut k = index_prefix(index.id);
    let mut has_null = false;
    for &c in &index.columns {
        has_null |= row[c].is_null();
        encode_key_col(&mut k, &row[c], index.format.weighs(def.columns[c].ty));
    }
    let unique_slot = index.unique && !has_null;
    if !unique_slot {
        k.extend_from_slice(pk);
    }
    (k, unique_slot)
}

/// The encoded primary key of a (coerced) row. Tables with a hidden row id have no pk columns
/// in the row: their key is allocated at insert.
pub(crate) fn pk_of_row(table: &TableDef, row: &[Datum]) -> Option<Vec<u8>> {
    table.primary_key.as_ref().map(|cols| {
        let vals: Vec<Datum> = cols.iter().map(|&i| row[i].clone()).collect();
        encode_key_weighted(&vals, &table.pk_weighted())
    })
}

/// The column list and index list given to `Engine::create_table`, by name.
#[derive(Debug, Clone, Default)]
pub struct TableSpec {
    /// Table name.
    pub name: String,
    /// Columns in order.
    pub columns: Vec<ColumnDef>,
    /// PRIMARY KEY column names (empty = none: a hidden row id is used).
    pub primary_key: Vec<String>,
    /// UNIQUE and secondary indexes.
    pub indexes: Vec<IndexSpec>,
    /// Table option `AUTO_INCREMENT=n` (None = 1).
    pub auto_increment_start: Option<u64>,
    /// FOREIGN KEY constraints.
    pub foreign_keys: Vec<ForeignKeySpec>,
}

/// An index to create, by column names.
#[derive(Debug, Clone)]
pub struct IndexSpec {
    /// Index name.
    pub name: String,
    /// Indexed column names in key order.
    pub columns: Vec<String>,
    /// UNIQUE.
    pub unique: bool,
}

/// Meta keys.
pub(crate) fn db_key(db: &str) -> Vec<u8> {
    let mut k = vec![SPACE_META, b'D'];
    k.extend_from_slice(db.as_bytes());
    k
}

pub(crate) fn table_key(db: &str, table: &str) -> Vec<u8> {
    let mut k = vec![SPACE_META, b'T'];
    k.extend_from_slice(db.as_bytes());
    k.push(0);
    k.extend_from_slice(table.as_bytes());
    k
}

pub(crate) fn next_id_key() -> Vec<u8> {
    vec![SPACE_META, b'M']
}

/// `kind` is `b'A'` (auto-increment) or `b'H'` (hidden row id).
pub(crate) fn counter_key(kind: u8, table_id: u32) -> Vec<u8> {
    let mut k = vec![SPACE_META, kind];
    k.extend_from_slice(&table_id.to_be_bytes());
    k
}

/// Builds the 1062 error for `row` colliding on `index` (None = PRIMARY).
pub(crate) fn dup_error(def: &TableDef, index: Option<&IndexDef>, row: &[Datum]) -> StoreError {
    let (name, cols): (String, Vec<usize>) = match index {
        Some(ix) => (ix.name.clone(), ix.columns.clone()),
        None => (
            "PRIMARY".into(),
            def.primary_key.clone().unwrap_or_default(),
        ),
    };
    let value = cols
        .iter()
        .map(|&i| match (&row[i], def.columns[i].ty) {
            // A TIME(n) as its column shows it: n fractional digits.
            (crate::Datum::Time(m), crate::ColumnType::Time(fsp)) => {
                crate::datum::time_text(*m, fsp, false)
            }
            (d, _) => d.to_string(),
        })
        .collect::<Vec<_>>()
        .join("-");
    StoreError::DuplicateKey {
        key_name: name,
        value,
    }
}
