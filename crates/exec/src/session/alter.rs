//! ALTER TABLE that changes the column list: ADD / DROP COLUMN, MODIFY / CHANGE / RENAME COLUMN,
//! in any number, as one change of the table.
//!
//! # How it works
//!
//! The operations are applied in order to a working copy of the column list, each column
//! remembering which stored column it comes from (none for one added here). Every check runs
//! on that copy before anything is written, so a statement that fails on its third operation
//! has changed nothing. From the copy come the new definition (primary key, indexes and
//! foreign keys with their column positions remapped; an index loses a dropped column, and
//! goes when it has none left, as in MariaDB) and one of two ways to apply it:
//!
//! * **Definition only** when no stored value changes: renames, a new DEFAULT, a column made
//!   nullable, columns added at the end (rows stored before read their `added_default`, as
//!   ADD COLUMN alone does). The store swaps the definition.
//! * **Copy** otherwise (a dropped column, a new type, NOT NULL on a nullable column):
//!   `Engine::rewrite_table` writes every row again, converted here, under new ids, and
//!   rebuilds every index, then switches over in one synced write. Conversion follows
//!   MariaDB's ALTER under the session's `sql_mode`: in strict mode a value the new type
//!   cannot hold stops the statement (1265 data truncated, 1264 out of range, 1292 a string
//!   that is not a number, 1265 for NULL into NOT NULL) naming the row, and the table is left
//!   as it was; otherwise it is stored as an INSERT would store it, with MariaDB's ALTER
//!   warnings (`convert`), and the OK packet says `Records: <rows copied>  Warnings: n`. While it copies, the session holds the table like
//!   `LOCK TABLES ... WRITE` (waiting for transactions that have it open, and keeping new
//!   ones out), so no write can land in the old rows after they were copied.
//!
//! MariaDB's refusals are kept: a foreign key's column cannot be dropped (1553 on the child,
//! 1829 on the parent) or change type (1832 / 1833). What shoal does not do is 1235: mixing
//! column changes with index or foreign-key changes in one statement, dropping a PRIMARY KEY
//! column, renaming a column another table's foreign key names, FIRST / AFTER.

use shoal_sql::eval::Context;
use shoal_sql::value::Value;
use shoal_sql::SqlError;
use shoal_store::{ColumnDef, ColumnDefault, Datum, Engine, TableDef};

use super::TableSession;
use crate::ast::AlterOp;
use crate::convert::{datum_to_value, fit_size, report, store_err, store_value, value_to_datum};
use crate::convert::{Cell, Warning, WriteMode};
use crate::exec::ExecOutput;

fn unsupported(what: &str) -> SqlError {
    SqlError::Unsupported(what.to_string())
}

/// One column of the working copy.
struct Slot {
    /// The stored column it comes from (`None`: added by this statement).
    from: Option<usize>,
    col: ColumnDef,
}

/// What rows stored before an added column read: the DEFAULT (CURRENT_TIMESTAMP: now, as MySQL
/// fills them), else NULL, else the type's implicit zero.
pub(super) fn added_default(
    column: &ColumnDef,
    ctx: &mut dyn Context,
) -> Result<Option<Datum>, SqlError> {
    Ok(match &column.default {
        Some(ColumnDefault::Value(Datum::Null)) => None,
        Some(ColumnDefault::Value(v)) => Some(v.clone()),
        Some(ColumnDefault::CurrentTimestamp) => Some(value_to_datum(
            &Value::DateTime(ctx.now(), 6),
            column.ty,
            &column.name,
            0,
        )?),
        None if column.nullable => None,
        None => Some(column.ty.implicit_default()),
    })
}

fn find(slots: &[Slot], name: &str) -> Option<usize> {
    slots
        .iter()
        .position(|s| s.col.name.eq_ignore_ascii_case(name))
}

impl TableSession {
    /// ALTER TABLE `db.table` with column operations (see the module doc).
    pub(super) fn alter_columns(
        &mut self,
        store: &Engine,
        db: &str,
        table: &str,
        ops: &[AlterOp],
        ctx: &mut dyn Context,
    ) -> Result<ExecOutput, SqlError> {
        if ops.iter().any(|op| {
            matches!(
                op,
                AlterOp::AddIndex(_)
                    | AlterOp::DropIndex(_)
                    | AlterOp::AddForeignKey(_)
                    | AlterOp::DropForeignKey(_)
            )
        }) {
            return Err(unsupported(
                "ALTER TABLE changing columns and keys in one statement (run them apart)",
            ));
        }
        let def = store.table(db, table).map_err(store_err)?;
        // Foreign keys of other tables (and of this one) that reference this table.
        let referencing = store.referencing(db, table);
        let parent_key = |col: &str| {
            referencing.iter().find_map(|(child, k)| {
                let f = &child.foreign_keys[*k];
                f.ref_columns
                    .iter()
                    .any(|c| c.eq_ignore_ascii_case(col))
                    .then(|| (child.clone(), f.name.clone()))
            })
        };
        let child_key = |i: usize| def.foreign_keys.iter().find(|f| f.columns.contains(&i));
        let mut slots: Vec<Slot> = def
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| Slot {
                from: Some(i),
                col: c.clone(),
            })
            .collect();
        let mut dropped = false;
        for op in ops {
            match op {
                AlterOp::AddColumn {
                    column,
                    if_not_exists,
                } => {
                    if find(&slots, &column.name).is_some() {
                        if *if_not_exists {
                            continue;
                        }
                        return Err(duplicate(&column.name));
                    }
                    let mut column = column.clone();
                    column.added_default = added_default(&column, ctx)?;
                    slots.push(Slot {
                        from: None,
                        col: column,
                    });
                }
                AlterOp::DropColumn { name, if_exists } => {
                    let Some(at) = find(&slots, name) else {
                        if *if_exists {
                            continue;
                        }
                        return Err(SqlError::coded(
                            shoal_errors::ER_CANT_DROP_FIELD_OR_KEY,
                            format!("Can't DROP COLUMN `{name}`; check that it exists"),
                        ));
                    };
                    if let Some(i) = slots[at].from {
                        let stored = &def.columns[i].name;
                        if let Some(f) = child_key(i) {
                            let index = match def.key_with_prefix(&f.columns) {
                                Some(Some(ix)) => ix.name.clone(),
                                Some(None) => "PRIMARY".to_string(),
                                None => f.name.clone(),
                            };
                            return Err(SqlError::coded(shoal_errors::ER_DROP_INDEX_FK, format!(
                                    "Cannot drop index '{index}': needed in a foreign key constraint"
                                ),
                            ));
                        }
                        if let Some((child, fk)) = parent_key(stored) {
                            return Err(SqlError::coded(shoal_errors::ER_FK_COLUMN_CANNOT_DROP, format!(
                                    "Cannot drop column '{stored}': needed in a foreign key constraint '{fk}' of table `{}`.`{}`",
                                    child.db, child.name
                                ),
                            ));
                        }
                        if def.primary_key.as_ref().is_some_and(|pk| pk.contains(&i)) {
                            return Err(unsupported(
                                "ALTER TABLE DROP COLUMN of a PRIMARY KEY column",
                            ));
                        }
                        dropped = true;
                    }
                    slots.remove(at);
                    if slots.is_empty() {
                        return Err(SqlError::coded(
                            shoal_errors::ER_CANT_REMOVE_ALL_FIELDS,
                            "You can't delete all columns with ALTER TABLE; use DROP TABLE instead",
                        ));
                    }
                }
                AlterOp::ChangeColumn {
                    old,
                    new_name,
                    column,
                } => {
                    let Some(at) = find(&slots, old) else {
                        return Err(SqlError::coded(
                            shoal_errors::ER_BAD_FIELD_ERROR,
                            format!("Unknown column '{old}' in '{table}'"),
                        ));
                    };
                    if let Some(other) = find(&slots, new_name).filter(|&o| o != at) {
                        return Err(duplicate(&slots[other].col.name));
                    }
                    let mut col = match column {
                        Some(c) => c.clone(),
                        None => slots[at].col.clone(),
                    };
                    col.name = new_name.clone();
                    if let Some(i) = slots[at].from {
                        let stored = &def.columns[i];
                        if col.ty != stored.ty {
                            if let Some(f) = child_key(i) {
                                return Err(SqlError::coded(shoal_errors::ER_FK_COLUMN_CANNOT_CHANGE, format!(
                                        "Cannot change column '{}': used in a foreign key constraint '{}'",
                                        stored.name, f.name
                                    ),
                                ));
                            }
                            if let Some((child, fk)) = parent_key(&stored.name) {
                                return Err(SqlError::coded(shoal_errors::ER_FK_COLUMN_CANNOT_CHANGE_CHILD, format!(
                                        "Cannot change column '{}': used in a foreign key constraint '{fk}' of table '{}.{}'",
                                        stored.name, child.db, child.name
                                    ),
                                ));
                            }
                        }
                        if col.name != stored.name && parent_key(&stored.name).is_some() {
                            return Err(unsupported(
                                "ALTER TABLE renaming a column a FOREIGN KEY references",
                            ));
                        }
                        // Rows stored before an instant ADD COLUMN still stop short of it.
                        col.added_default = stored.added_default.clone();
                    } else {
                        col.added_default = added_default(&col, ctx)?;
                    }
                    slots[at].col = col;
                }
                _ => unreachable!("key operations were refused above"),
            }
        }

        // Old position -> new position.
        let mut moved = vec![None; def.columns.len()];
        for (j, s) in slots.iter().enumerate() {
            if let Some(i) = s.from {
                moved[i] = Some(j);
            }
        }
        let remap =
            |cols: &[usize]| -> Vec<usize> { cols.iter().filter_map(|&i| moved[i]).collect() };
        let mut new_def = (*def).clone();
        new_def.columns = slots.iter().map(|s| s.col.clone()).collect();
        new_def.primary_key = def.primary_key.as_ref().map(|pk| remap(pk));
        if let Some(pk) = &new_def.primary_key {
            for &i in pk {
                new_def.columns[i].nullable = false; // PRIMARY KEY implies NOT NULL
            }
        }
        new_def.indexes = def
            .indexes
            .iter()
            .filter_map(|ix| {
                let mut ix = ix.clone();
                ix.columns = remap(&ix.columns);
                (!ix.columns.is_empty()).then_some(ix)
            })
            .collect();
        for f in &mut new_def.foreign_keys {
            f.columns = remap(&f.columns);
        }

        // Does any stored value change?
        let converts = |s: &Slot| {
            s.from.is_some_and(|i| {
                let was = &def.columns[i];
                let narrower = s
                    .col
                    .max_bytes
                    .is_some_and(|m| was.max_bytes.is_none_or(|w| m < w));
                was.ty != s.col.ty || (was.nullable && !s.col.nullable) || narrower
            })
        };
        let copy = dropped || slots.iter().any(converts);
        let (mut rows, mut warnings) = (0, 0);
        if copy {
            let out;
            (rows, out) = self.rewrite(store, &def, new_def, &slots)?;
            report(out, ctx, &mut warnings);
        } else {
            store.replace_definition(&def, new_def).map_err(store_err)?;
        }
        Ok(ExecOutput::Ok {
            affected_rows: rows,
            last_insert_id: 0,
            info: format!("Records: {rows}  Duplicates: 0  Warnings: {warnings}"),
            warnings: u16::try_from(warnings).unwrap_or(u16::MAX),
        })
    }

    /// The copy: holds the table exclusively, converts each row to `slots` (under the session's
    /// `sql_mode`: [`convert`]); the number of rows copied and the conversions' warnings.
    fn rewrite(
        &mut self,
        store: &Engine,
        def: &std::sync::Arc<TableDef>,
        new_def: TableDef,
        slots: &[Slot],
    ) -> Result<(u64, Vec<Warning>), SqlError> {
        let key = (def.db.clone(), def.name.clone());
        let mut failure: Option<SqlError> = None;
        let mut row_no = 0u64;
        let mode = self.write_mode;
        let mut warnings = Vec::new();
        let result = self.exclusively(vec![key], |_| {
            Ok(store.rewrite_table(def, new_def, &mut |old: Vec<Datum>| {
                row_no += 1;
                let mut out = Vec::with_capacity(slots.len());
                for s in slots {
                    let v = match s.from {
                        None => s.col.added_default.clone().unwrap_or(Datum::Null),
                        Some(i) => match convert(
                            &old[i],
                            &def.columns[i],
                            &s.col,
                            Cell {
                                db: &def.db,
                                table: &def.name,
                                column: &s.col.name,
                                row: row_no,
                            },
                            mode,
                            &mut warnings,
                        ) {
                            Ok(d) => d,
                            Err(e) => {
                                failure = Some(e);
                                return Err(shoal_store::StoreError::Interrupted);
                            }
                        },
                    };
                    out.push(v);
                }
                Ok(out)
            }))
        })?;
        match (result, failure) {
            (_, Some(e)) => Err(e),
            (Err(e), None) => Err(store_err(e)),
            (Ok(_), None) => Ok((row_no, warnings)),
        }
    }
}

fn duplicate(name: &str) -> SqlError {
    SqlError::coded(
        shoal_errors::ER_DUP_FIELDNAME,
        format!("Duplicate column name '{name}'"),
    )
}

/// One stored value of column `was` as column `now` holds it, with MariaDB's ALTER errors in
/// strict `mode`. Not strict, a value that does not fit is stored as an INSERT would store it,
/// with MariaDB's ALTER warnings added to `warnings`: as INSERT's, except that a value cut only
/// at trailing spaces is a warning, not a note, a value that is no date is 1292 `Incorrect
/// datetime value` rather than 1265, and NULL into NOT NULL is 1265 and the implicit default.
fn convert(
    d: &Datum,
    was: &ColumnDef,
    now: &ColumnDef,
    at: Cell,
    mode: WriteMode,
    warnings: &mut Vec<Warning>,
) -> Result<Datum, SqlError> {
    let out = convert_type(d, was, now, at, mode, warnings)?;
    // A TEXT / BLOB made smaller: 1406, or cut with 1265 when not strict.
    fit_size(out, now, &at, mode, warnings, false)
}

/// [`convert`] before the declared size of a TEXT / BLOB is applied.
fn convert_type(
    d: &Datum,
    was: &ColumnDef,
    now: &ColumnDef,
    at: Cell,
    mode: WriteMode,
    warnings: &mut Vec<Warning>,
) -> Result<Datum, SqlError> {
    let row = at.row;
    if mode == WriteMode::Lenient && (was.ty != now.ty || d.is_null()) {
        return convert_lenient(d, was, now, &at, warnings);
    }
    let truncated = || {
        SqlError::coded(
            shoal_errors::WARN_DATA_TRUNCATED,
            format!("Data truncated for column '{}' at row {row}", now.name),
        )
    };
    if d.is_null() {
        return if now.nullable {
            Ok(Datum::Null)
        } else {
            Err(truncated())
        };
    }
    if was.ty == now.ty {
        return Ok(d.clone());
    }
    let v = datum_to_value(d, was.ty);
    // Into a TIME column: the messages name the table, and notes count, as MariaDB's ALTER.
    if let shoal_store::ColumnType::Time(_) = now.ty {
        return store_value(&v, now.ty, &at, WriteMode::Strict, warnings);
    }
    let out = value_to_datum(&v, now.ty, &now.name, row as usize).map_err(|e| match e.code() {
        // A string cut short is 1265; a number or date written as text too long stays 1406.
        c if c == shoal_errors::ER_DATA_TOO_LONG.code
            && matches!(v, Value::Str(_) | Value::Bytes(_)) =>
        {
            truncated()
        }
        c if c == shoal_errors::ER_TRUNCATED_WRONG_VALUE_FOR_FIELD.code
            && (now.ty.is_integer() || matches!(v, Value::Str(_) | Value::Bytes(_))) =>
        {
            let kind = if now.ty.is_integer() {
                "INTEGER"
            } else {
                "DECIMAL"
            };
            SqlError::coded(
                shoal_errors::ER_TRUNCATED_WRONG_VALUE,
                format!(
                    "Truncated incorrect {kind} value: '{}'",
                    v.to_text().unwrap_or_default()
                ),
            )
        }
        _ => e,
    })?;
    Ok(out)
}

/// [`convert`] when not strict.
fn convert_lenient(
    d: &Datum,
    was: &ColumnDef,
    now: &ColumnDef,
    at: &Cell,
    warnings: &mut Vec<Warning>,
) -> Result<Datum, SqlError> {
    let truncated = |note: bool| Warning {
        note,
        code: shoal_errors::WARN_DATA_TRUNCATED.code,
        message: format!(
            "Data truncated for column '{}' at row {}",
            at.column, at.row
        ),
    };
    if d.is_null() {
        if now.nullable {
            return Ok(Datum::Null);
        }
        warnings.push(truncated(false));
        return Ok(now.ty.implicit_default());
    }
    let v = datum_to_value(d, was.ty);
    let mut out = Vec::new();
    let stored = store_value(&v, now.ty, at, WriteMode::Lenient, &mut out)?;
    let temporal = matches!(
        now.ty,
        shoal_store::ColumnType::Date
            | shoal_store::ColumnType::DateTime(_)
            | shoal_store::ColumnType::Timestamp(_)
    );
    for w in out {
        let cut = w.code == shoal_errors::WARN_DATA_TRUNCATED.code;
        warnings.push(if cut && !w.note && temporal {
            Warning {
                note: false,
                code: shoal_errors::ER_TRUNCATED_WRONG_VALUE.code,
                message: format!(
                    "Incorrect datetime value: '{}' for column `{}`.`{}`.`{}` at row {}",
                    v.to_text().unwrap_or_default(),
                    at.db,
                    at.table,
                    at.column,
                    at.row
                ),
            }
        } else if cut && w.note && now.ty.is_text() {
            truncated(false)
        } else {
            w
        });
    }
    Ok(stored)
}
