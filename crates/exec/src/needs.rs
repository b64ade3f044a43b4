//! What a table statement touches: every table and the privilege each needs, for the session
//! layer's privilege checks (`crates/session/src/privileges.rs`). The executor knows nothing
//! about accounts; it only says, from the prepared [`Plan`], which tables a statement reads and
//! changes, so the checks see exactly the tables the statement will use (joins, subqueries,
//! derived tables and `INSERT ... SELECT` sources come from the bound query, foreign-key
//! parents from the table definition).
//!
//! The rules follow MySQL: UPDATE needs UPDATE on its table and SELECT when it reads columns
//! (a WHERE, ORDER BY or an assignment that reads one); DELETE needs DELETE and SELECT when it
//! has a WHERE; REPLACE needs INSERT and DELETE; `ON DUPLICATE KEY UPDATE` needs UPDATE too;
//! TRUNCATE needs DROP; CREATE / DROP INDEX need INDEX; a foreign key needs REFERENCES on its
//! parent; SHOW CREATE TABLE / SHOW COLUMNS / SHOW INDEX / CHECK / ANALYZE need SELECT.
//! information_schema's own tables need nothing (their rows are filtered instead).

use shoal_sql::ast::Expr;

use crate::ast::{AlterOp, TableRef, TableStmt};
use crate::session::Plan;

/// A privilege a statement needs on a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableNeed {
    /// SELECT.
    Select,
    /// INSERT.
    Insert,
    /// UPDATE.
    Update,
    /// DELETE.
    Delete,
    /// CREATE.
    Create,
    /// DROP.
    Drop,
    /// ALTER.
    Alter,
    /// INDEX.
    Index,
    /// REFERENCES.
    References,
}

/// One table a statement touches and what it needs there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableAccess {
    /// Database.
    pub db: String,
    /// Table.
    pub table: String,
    /// The privilege.
    pub need: TableNeed,
}

fn reads_columns(e: &Expr) -> bool {
    let mut found = false;
    crate::query::visit_expr(e, &mut |x| {
        found |= matches!(x, Expr::Column(_) | Expr::QColumn(..));
    });
    found
}

impl Plan {
    /// Every table this statement touches with the privilege it needs there (see the module
    /// doc). Unqualified names resolve against the plan's database; a statement that needs a
    /// database and has none has already failed at PREPARE.
    pub fn needs(&self) -> Vec<TableAccess> {
        let db = self.db.clone().unwrap_or_default();
        let mut out = Vec::new();
        let mut add = |d: &str, t: &str, need: TableNeed| {
            if d.eq_ignore_ascii_case("information_schema")
                && !self
                    .query
                    .as_ref()
                    .is_some_and(|q| q.provided.iter().any(|(pd, pt)| pd == d && pt == t))
            {
                return;
            }
            let a = TableAccess {
                db: d.to_string(),
                table: t.to_string(),
                need,
            };
            if !out.contains(&a) {
                out.push(a);
            }
        };
        let resolve = |t: &TableRef| (t.db.clone().unwrap_or_else(|| db.clone()), t.name.clone());
        if let Some(q) = &self.query {
            for (d, t) in q.tables_read() {
                add(d, t, TableNeed::Select);
            }
        }
        match self.stmt.planned() {
            // (`planned` gives the statement inside an EXPLAIN UPDATE / DELETE.)
            TableStmt::Query(_) | TableStmt::Explain(_) | TableStmt::ExplainDml(_) => {}
            TableStmt::Multi(_) => {
                if let Some(m) = &self.multi {
                    let need = if m.is_delete() {
                        TableNeed::Delete
                    } else {
                        TableNeed::Update
                    };
                    let targets: Vec<(String, String)> = m
                        .targets()
                        .map(|(d, t)| (d.to_string(), t.to_string()))
                        .collect();
                    for (d, t) in &targets {
                        add(d, t, need);
                    }
                    for (d, t) in m.query().tables_read() {
                        if !targets.iter().any(|(td, tt)| td == d && tt == t) {
                            add(d, t, TableNeed::Select);
                        }
                    }
                }
            }
            TableStmt::Insert(i) => {
                let (d, t) = resolve(&i.table);
                add(&d, &t, TableNeed::Insert);
                if i.replace {
                    add(&d, &t, TableNeed::Delete);
                }
                if !i.on_dup.is_empty() {
                    add(&d, &t, TableNeed::Update);
                }
            }
            TableStmt::Update(u) => {
                let (d, t) = resolve(&u.table);
                add(&d, &t, TableNeed::Update);
                let reads = u.filter.is_some()
                    || !u.order_by.is_empty()
                    || u.sets.iter().any(|(_, e)| reads_columns(e));
                if reads {
                    add(&d, &t, TableNeed::Select);
                }
            }
            TableStmt::Delete(dl) => {
                let (d, t) = resolve(&dl.table);
                add(&d, &t, TableNeed::Delete);
                if dl.filter.is_some() || !dl.order_by.is_empty() {
                    add(&d, &t, TableNeed::Select);
                }
            }
            TableStmt::CreateTable { db: d, spec, .. } => {
                let d = d.clone().unwrap_or_else(|| db.clone());
                add(&d, &spec.name, TableNeed::Create);
                for fk in &spec.foreign_keys {
                    let pd = fk.ref_db.clone().unwrap_or_else(|| d.clone());
                    if !(pd == d && fk.ref_table == spec.name) {
                        add(&pd, &fk.ref_table, TableNeed::References);
                    }
                }
            }
            TableStmt::CreateIndex { table, .. } | TableStmt::DropIndex { table, .. } => {
                let (d, t) = resolve(table);
                add(&d, &t, TableNeed::Index);
            }
            TableStmt::DropTable { tables, .. } => {
                for table in tables {
                    let (d, t) = resolve(table);
                    add(&d, &t, TableNeed::Drop);
                }
            }
            TableStmt::Truncate(table) => {
                let (d, t) = resolve(table);
                add(&d, &t, TableNeed::Drop);
            }
            TableStmt::AlterTable { table, ops } => {
                let (d, t) = resolve(table);
                add(&d, &t, TableNeed::Alter);
                for op in ops {
                    match op {
                        AlterOp::AddIndex(_) | AlterOp::DropIndex(_) => {
                            add(&d, &t, TableNeed::Index)
                        }
                        AlterOp::AddForeignKey(fk) => {
                            let pd = fk.ref_db.clone().unwrap_or_else(|| d.clone());
                            add(&pd, &fk.ref_table, TableNeed::References);
                        }
                        AlterOp::DropForeignKey(_)
                        | AlterOp::AddColumn { .. }
                        | AlterOp::DropColumn { .. }
                        | AlterOp::ChangeColumn { .. } => {}
                    }
                }
            }
            TableStmt::ShowCreateTable(table)
            | TableStmt::ShowColumns { table, .. }
            | TableStmt::ShowIndex(table) => {
                let (d, t) = resolve(table);
                add(&d, &t, TableNeed::Select);
            }
            TableStmt::Analyze(tables) | TableStmt::Check(tables) => {
                for table in tables {
                    let (d, t) = resolve(table);
                    add(&d, &t, TableNeed::Select);
                }
            }
            // MySQL's privileges for OPTIMIZE TABLE: SELECT and INSERT.
            TableStmt::Optimize(tables) => {
                for table in tables {
                    let (d, t) = resolve(table);
                    add(&d, &t, TableNeed::Select);
                    add(&d, &t, TableNeed::Insert);
                }
            }
            TableStmt::ShowTables { .. } => {}
        }
        out
    }
}
