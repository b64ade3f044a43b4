//! CHECK TABLE: verifies that a table's rows decode and that every secondary index holds
//! exactly the entries its rows call for.
//!
//! # What is checked
//!
//! A table is rows under `0x02 table_id pk` plus, per secondary index, entries under
//! `0x03 index_id index-columns [pk]` whose value is the row's encoded primary key (layout in
//! [`crate::catalog`]). A commit writes a row and all its index entries in one atomic
//! `WriteBatch`, so after any crash they must still agree exactly. The checker proves it in two
//! passes over one RocksDB snapshot (so concurrent commits, each atomic, never look like
//! corruption, and writers are never blocked: no row locks are taken):
//!
//! 1. **Rows → indexes.** Every row: its key decodes as a primary key of the table's key types
//!    with no bytes left over; its value decodes as a row of the table's column types; a NOT NULL
//!    column is not NULL; for a table with a PRIMARY KEY, the row's key columns encode to exactly
//!    its key. Then, for every index, the entry the row calls for
//!    (`catalog::index_entry_key`) is read: it must exist and point at this row. An
//!    entry that exists but points at another row is, in a UNIQUE index, two rows with one
//!    unique value (a duplicate); otherwise a damaged entry.
//! 2. **Indexes → rows.** Every entry of every index: the row it points at must exist, and that
//!    row's indexed columns (with its key) must encode to exactly this entry's key. An entry
//!    whose row is gone is an orphan; one whose row has other values is stale.
//!
//! Pass 1 shows every expected entry is present and correct, pass 2 that every present entry is
//! expected; together the entries of each index are in one-to-one correspondence with the rows
//! (no missing, no orphan, no duplicate). Each index's entry count is compared with the row
//! count as well, which names the imbalance the way InnoDB does.
//!
//! The cost is one scan of the rows and of each index, plus one point read per (row, index)
//! pair in each direction, through the block cache like any read. There is no faster mode:
//! MySQL's `QUICK`/`FAST`/`MEDIUM`/`EXTENDED`/`CHANGED` options are accepted by the SQL layer
//! and all run this full check (InnoDB too ignores most of them).

use crate::catalog::{index_entry_key, pk_of_row, row_key, IndexDef, TableDef};
use crate::codec::{decode_key, decode_stored, prefix_successor};
use crate::datum::{ColumnType, Datum};
use crate::engine::{Engine, Inner, Snapshot};
use crate::error::Result;
use std::fmt;

/// Entries (rows or index entries) read per RocksDB iterator seek.
const CHUNK: usize = 512;

/// Problems kept with their details per table; beyond this only [`CheckReport::problem_count`]
/// grows (a badly damaged table would otherwise produce a result set as large as itself).
pub const MAX_REPORTED_PROBLEMS: usize = 20;

/// One inconsistency found by [`Engine::check_table`]. `Display` gives the text CHECK TABLE
/// reports (`Msg_type = error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckProblem {
    /// A row's key does not decode as a primary key of the table's key types.
    BadRowKey {
        /// The raw key bytes after the table prefix, in hex.
        key_hex: String,
        /// What failed.
        detail: String,
    },
    /// A row's value does not decode as a row of the table's column types.
    UndecodableRow {
        /// The row's primary key as printed values.
        key: String,
        /// What failed.
        detail: String,
    },
    /// A NOT NULL column holds NULL.
    NullInNotNull {
        /// The row's primary key.
        key: String,
        /// Column name.
        column: String,
    },
    /// A row's primary key columns encode to another key than the one it is stored under.
    KeyMismatch {
        /// The key it is stored under.
        key: String,
        /// The key its columns give.
        columns: String,
    },
    /// A row has no entry in an index.
    MissingEntry {
        /// Index name.
        index: String,
        /// The row's primary key.
        key: String,
    },
    /// Two rows share a value of a UNIQUE index: the entry for the value points at the other.
    DuplicateUnique {
        /// Index name.
        index: String,
        /// The row without its own entry.
        key: String,
        /// The row the entry points at.
        owner: String,
    },
    /// An index entry that is where a row's entry should be but points elsewhere (a non-unique
    /// index's entries include the key, so this is damage, not a duplicate).
    WrongPointer {
        /// Index name.
        index: String,
        /// The row whose entry it is.
        key: String,
        /// Where it points (hex: it may not even decode).
        points_to: String,
    },
    /// An index entry points at a row that does not exist.
    OrphanEntry {
        /// Index name.
        index: String,
        /// The key it points at.
        key: String,
    },
    /// An index entry points at a row whose indexed columns encode to another entry.
    StaleEntry {
        /// Index name.
        index: String,
        /// The key it points at.
        key: String,
    },
    /// An index holds another number of entries than the table has rows.
    EntryCount {
        /// Index name.
        index: String,
        /// Entries found.
        entries: u64,
        /// Rows in the table.
        rows: u64,
    },
}

impl fmt::Display for CheckProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckProblem::BadRowKey { key_hex, detail } => {
                write!(f, "Row key {key_hex} does not decode: {detail}")
            }
            CheckProblem::UndecodableRow { key, detail } => {
                write!(f, "Row ({key}) does not decode: {detail}")
            }
            CheckProblem::NullInNotNull { key, column } => {
                write!(f, "Row ({key}) has NULL in NOT NULL column '{column}'")
            }
            CheckProblem::KeyMismatch { key, columns } => write!(
                f,
                "Row stored under key ({key}) has primary key columns ({columns})"
            ),
            CheckProblem::MissingEntry { index, key } => {
                write!(f, "Index '{index}' has no entry for row ({key})")
            }
            CheckProblem::DuplicateUnique { index, key, owner } => write!(
                f,
                "Unique index '{index}': rows ({key}) and ({owner}) have the same value"
            ),
            CheckProblem::WrongPointer {
                index,
                key,
                points_to,
            } => write!(
                f,
                "Index '{index}': the entry of row ({key}) points at key {points_to}"
            ),
            CheckProblem::OrphanEntry { index, key } => {
                write!(f, "Index '{index}' has an entry for missing row ({key})")
            }
            CheckProblem::StaleEntry { index, key } => write!(
                f,
                "Index '{index}' has an entry for row ({key}) that does not match the row's values"
            ),
            CheckProblem::EntryCount {
                index,
                entries,
                rows,
            } => write!(
                f,
                "Index '{index}' contains {entries} entries, should be {rows}"
            ),
        }
    }
}

/// The outcome of checking one table.
#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    /// Rows found.
    pub rows: u64,
    /// Entries found per index, in [`TableDef::indexes`] order.
    pub index_entries: Vec<(String, u64)>,
    /// The first [`MAX_REPORTED_PROBLEMS`] problems.
    pub problems: Vec<CheckProblem>,
    /// Every problem found (may exceed `problems.len()`).
    pub problem_count: u64,
}

impl CheckReport {
    /// Whether the table is consistent.
    pub fn is_ok(&self) -> bool {
        self.problem_count == 0
    }

    fn add(&mut self, p: CheckProblem) {
        self.problem_count += 1;
        if self.problems.len() < MAX_REPORTED_PROBLEMS {
            self.problems.push(p);
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Key values as printed in messages: `5` or `5-abc` (MySQL's duplicate-key style).
fn show_key(types: &[ColumnType], pk: &[u8]) -> String {
    match decode_key(types, pk) {
        Ok((vals, _)) => vals
            .iter()
            .map(Datum::to_string)
            .collect::<Vec<_>>()
            .join("-"),
        Err(_) => format!("0x{}", hex(pk)),
    }
}

impl Engine {
    /// CHECK TABLE `db.name`: see the module docs. `Err` only when the table does not exist
    /// or the storage cannot be read; inconsistencies are in the report.
    pub fn check_table(&self, db: &str, name: &str) -> Result<CheckReport> {
        let def = self.inner.table(db, name)?;
        let snap = Snapshot::new(&self.inner);
        let c = Checker {
            inner: &self.inner,
            snap: &snap,
            def: &def,
            types: def.columns.iter().map(|c| c.ty).collect(),
            pk_types: def.pk_types(),
        };
        let mut report = CheckReport::default();
        c.rows_to_indexes(&mut report)?;
        for ix in &def.indexes {
            let n = c.index_to_rows(ix, &mut report)?;
            report.index_entries.push((ix.name.clone(), n));
            if n != report.rows {
                report.add(CheckProblem::EntryCount {
                    index: ix.name.clone(),
                    entries: n,
                    rows: report.rows,
                });
            }
        }
        Ok(report)
    }
}

struct Checker<'a> {
    inner: &'a Inner,
    snap: &'a Snapshot,
    def: &'a TableDef,
    types: Vec<ColumnType>,
    pk_types: Vec<ColumnType>,
}

impl Checker<'_> {
    /// Calls `f` for every entry under `prefix` in the snapshot, in key order.
    fn each(&self, prefix: &[u8], mut f: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        let end = prefix_successor(prefix).expect("prefix has a successor");
        let mut cursor = prefix.to_vec();
        loop {
            let chunk = self
                .snap
                .scan_chunk(&cursor, Some(&end), CHUNK, true, None)?;
            let Some((last, _)) = chunk.last() else {
                return Ok(());
            };
            let mut next = last.clone();
            next.push(0);
            for (k, v) in &chunk {
                f(k, v)?;
            }
            if chunk.len() < CHUNK {
                return Ok(());
            }
            cursor = next;
        }
    }

    /// The row stored under encoded key `pk`, decoded; `Ok(None)` if it is missing or does
    /// not decode (pass 1 reports the latter).
    fn row(&self, pk: &[u8]) -> Result<Option<Option<Vec<Datum>>>> {
        let Some(v) = self.inner.get(&row_key(self.def.id, pk), Some(self.snap))? else {
            return Ok(None);
        };
        Ok(Some(decode_stored(self.def, &self.types, &v).ok()))
    }

    fn rows_to_indexes(&self, report: &mut CheckReport) -> Result<()> {
        let prefix = self.def.rows_prefix();
        self.each(&prefix, |k, v| {
            report.rows += 1;
            let pk = &k[prefix.len()..];
            match decode_key(&self.pk_types, pk) {
                Ok((_, used)) if used == pk.len() => {}
                Ok((_, used)) => {
                    report.add(CheckProblem::BadRowKey {
                        key_hex: hex(pk),
                        detail: format!("{} bytes after the key", pk.len() - used),
                    });
                    return Ok(());
                }
                Err(detail) => {
                    report.add(CheckProblem::BadRowKey {
                        key_hex: hex(pk),
                        detail,
                    });
                    return Ok(());
                }
            }
            let key = || show_key(&self.pk_types, pk);
            let row = match decode_stored(self.def, &self.types, v) {
                Ok(r) => r,
                Err(detail) => {
                    report.add(CheckProblem::UndecodableRow { key: key(), detail });
                    return Ok(());
                }
            };
            for (c, d) in self.def.columns.iter().zip(&row) {
                if !c.nullable && d.is_null() {
                    report.add(CheckProblem::NullInNotNull {
                        key: key(),
                        column: c.name.clone(),
                    });
                }
            }
            if let Some(own) = pk_of_row(self.def, &row) {
                if own != pk {
                    report.add(CheckProblem::KeyMismatch {
                        key: key(),
                        columns: show_key(&self.pk_types, &own),
                    });
                }
            }
            for ix in &self.def.indexes {
                let (ik, unique_slot) = index_entry_key(self.def, ix, &row, pk);
                match self.inner.get(&ik, Some(self.snap))? {
                    Some(p) if p == pk => {}
                    None => report.add(CheckProblem::MissingEntry {
                        index: ix.name.clone(),
                        key: key(),
                    }),
                    Some(p) if unique_slot => report.add(CheckProblem::DuplicateUnique {
                        index: ix.name.clone(),
                        key: key(),
                        owner: show_key(&self.pk_types, &p),
                    }),
                    Some(p) => report.add(CheckProblem::WrongPointer {
                        index: ix.name.clone(),
                        key: key(),
                        points_to: format!("0x{}", hex(&p)),
                    }),
                }
            }
            Ok(())
        })
    }

    /// Pass 2 for one index; returns its entry count.
    fn index_to_rows(&self, ix: &IndexDef, report: &mut CheckReport) -> Result<u64> {
        let prefix = crate::catalog::index_prefix(ix.id);
        let mut n = 0u64;
        self.each(&prefix, |k, pk| {
            n += 1;
            match self.row(pk)? {
                None => report.add(CheckProblem::OrphanEntry {
                    index: ix.name.clone(),
                    key: show_key(&self.pk_types, pk),
                }),
                Some(None) => {} // undecodable: reported by pass 1
                Some(Some(row)) => {
                    if index_entry_key(self.def, ix, &row, pk).0 != k {
                        report.add(CheckProblem::StaleEntry {
                            index: ix.name.clone(),
                            key: show_key(&self.pk_types, pk),
                        });
                    }
                }
            }
            Ok(())
        })?;
        Ok(n)
    }
}
