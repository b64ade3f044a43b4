//! The SHOW statements the session answers from its own state and the server's: DATABASES,
//! VARIABLES, STATUS, PROCESSLIST, WARNINGS / ERRORS, COLLATION, CHARACTER SET, ENGINES and
//! CREATE DATABASE, filtered by `LIKE` or `WHERE` as MySQL does (the `WHERE` expression sees
//! the result's columns by name). SHOW TABLES, COLUMNS, CREATE TABLE, INDEX and TABLE STATUS
//! are the table engine's (its catalog and information_schema) and go there.

use shoal_proto::Response;
use shoal_sql::ast::{ShowFilter, ShowKind, VarScope};
use shoal_sql::eval::{eval, like};
use shoal_sql::value::Value;
use shoal_sql::SqlError;

use super::charset::{CHARSETS, COLLATIONS};
use super::context::Ctx;
use super::variables::var_err;
use super::wire::{text_result, to_result_set};
use super::Session;

impl Session {
    /// The rows of a SHOW that pass its `LIKE` (on column `like_col`) or `WHERE` (over the
    /// columns `names`).
    fn filter_rows(
        &mut self,
        names: &[&str],
        rows: Vec<Vec<Value>>,
        filter: &ShowFilter,
        like_col: usize,
    ) -> Result<Vec<Vec<Value>>, SqlError> {
        match filter {
            ShowFilter::None => Ok(rows),
            ShowFilter::Like(p) => Ok(rows
                .into_iter()
                .filter(|r| like(&r[like_col].to_text().unwrap_or_default(), p, '\\'))
                .collect()),
            ShowFilter::Where(e) => {
                let mut out = Vec::new();
                for r in rows {
                    let keep = {
                        let mut ctx = Ctx {
                            s: self,
                            params: &[],
                            row: Some((names, &r)),
                        };
                        eval(e, &mut ctx)?.truth() == Some(true)
                    };
                    if keep {
                        out.push(r);
                    }
                }
                Ok(out)
            }
        }
    }

    /// SHOW statements the session answers itself; those about tables go to the table engine.
    pub(super) fn show(
        &mut self,
        kind: &ShowKind,
        filter: &ShowFilter,
    ) -> Result<Response, SqlError> {
        let s = |x: &str| Value::Str(x.to_string());
        let (names, rows, like_col): (Vec<&str>, Vec<Vec<Value>>, usize) = match kind {
            ShowKind::Databases => (
                vec!["Database"],
                self.catalog()
                    .databases()
                    .into_iter()
                    .filter(|d| self.sees_database(d))
                    .map(|d| vec![Value::Str(d)])
                    .collect(),
                0,
            ),
            // The table engine's: its catalog, privileges and information_schema.
            ShowKind::Tables { .. } | ShowKind::TableInfo(_) => return self.run_table(&[]),
            ShowKind::TableStatus { db } => {
                // Answered from information_schema.TABLES; the database must exist (1049) and
                // be named or current (1046), as in MariaDB.
                return match db.as_ref().or(self.db.as_ref()) {
                    None => Err(SqlError::NoDatabase),
                    Some(d) if !self.catalog().database_exists(d) => {
                        Err(SqlError::UnknownDatabase(d.clone()))
                    }
                    Some(_) => self.run_table(&[]),
                };
            }
            ShowKind::Variables(scope) => {
                let server = self.server.clone();
                let vars = &server.vars;
                let mut rows = Vec::new();
                for d in vars.all() {
                    let v = match scope {
                        VarScope::Global => match vars.global(d.name) {
                            Ok(v) => v.display(),
                            Err(_) => continue,
                        },
                        _ => match d.name {
                            "warning_count" | "error_count" | "last_insert_id" | "identity"
                            | "timestamp" | "pseudo_thread_id" => self
                                .read_var(VarScope::Default, d.name)?
                                .to_text()
                                .unwrap_or_default(),
                            _ => self.vars.get(vars, d.name).map_err(var_err)?.display(),
                        },
                    };
                    rows.push(vec![s(d.name), Value::Str(v)]);
                }
                (vec!["Variable_name", "Value"], rows, 0)
            }
            ShowKind::Status(scope) => {
                let mut st = self.server.global_status();
                // Session-level rows MySQL shows as session values.
                for (k, v) in st.iter_mut() {
                    if k == "Last_query_cost" {
                        *v = "0.000000".into();
                    }
                }
                // The TLS session's names: the session's own, empty in GLOBAL (as in MySQL).
                let (version, cipher) = match (scope, &self.tls) {
                    (VarScope::Global, _) | (_, None) => (String::new(), String::new()),
                    (_, Some((v, c))) => (v.clone(), c.clone()),
                };
                st.push(("Ssl_cipher".into(), cipher));
                st.push(("Ssl_version".into(), version));
                st.sort_by_key(|a| a.0.to_ascii_lowercase());
                (
                    vec!["Variable_name", "Value"],
                    st.into_iter()
                        .map(|(k, v)| vec![Value::Str(k), Value::Str(v)])
                        .collect(),
                    0,
                )
            }
            ShowKind::Processlist { full } => {
                // Without PROCESS a user sees only its own threads (MySQL).
                let everyone = self.grants.global & crate::privileges::PROCESS != 0;
                let rows = self
                    .server
                    .process_rows((!everyone).then_some(self.user.as_str()))
                    .into_iter()
                    .map(|p| {
                        let text = p.info.map(|t| {
                            if *full {
                                t
                            } else {
                                t.chars().take(100).collect()
                            }
                        });
                        vec![
                            Value::Int(p.id as i64),
                            Value::Str(p.user),
                            Value::Str(p.host),
                            p.db.map(Value::Str).unwrap_or(Value::Null),
                            Value::Str(p.command),
                            Value::Int((p.time_ms / 1000) as i64),
                            Value::Str(p.state),
                            text.map(Value::Str).unwrap_or(Value::Null),
                        ]
                    })
                    .collect();
                (
                    vec![
                        "Id", "User", "Host", "db", "Command", "Time", "State", "Info",
                    ],
                    rows,
                    1,
                )
            }
            ShowKind::Warnings | ShowKind::Errors => {
                let errors_only = matches!(kind, ShowKind::Errors);
                let rows = self
                    .diag
                    .iter()
                    .filter(|d| !errors_only || d.0 == "Error")
                    .map(|d| vec![s(d.0), Value::UInt(d.1 as u64), Value::Str(d.2.clone())])
                    .collect();
                (vec!["Level", "Code", "Message"], rows, 0)
            }
            ShowKind::Collation => (
                vec![
                    "Collation",
                    "Charset",
                    "Id",
                    "Default",
                    "Compiled",
                    "Sortlen",
                    "Pad_attribute",
                ],
                COLLATIONS
                    .iter()
                    .map(|(n, cs, id, def)| {
                        vec![
                            s(n),
                            s(cs),
                            Value::UInt(*id as u64),
                            s(if *def { "Yes" } else { "" }),
                            s("Yes"),
                            Value::UInt(1),
                            s(if n.contains("0900") {
                                "NO PAD"
                            } else {
                                "PAD SPACE"
                            }),
                        ]
                    })
                    .collect(),
                0,
            ),
            ShowKind::Charset => (
                vec!["Charset", "Description", "Default collation", "Maxlen"],
                CHARSETS
                    .iter()
                    .filter(|c| c.0 != "utf8")
                    .map(|(n, coll, desc, max)| {
                        vec![s(n), s(desc), s(coll), Value::UInt(*max as u64)]
                    })
                    .collect(),
                0,
            ),
            ShowKind::Engines => (
                vec![
                    "Engine",
                    "Support",
                    "Comment",
                    "Transactions",
                    "XA",
                    "Savepoints",
                ],
                vec![vec![
                    s("InnoDB"),
                    s("DEFAULT"),
                    s("shoal transactional storage on RocksDB (accepted as ENGINE=InnoDB)"),
                    s("YES"),
                    s("NO"),
                    s("YES"),
                ]],
                0,
            ),
            ShowKind::CreateDatabase(db, if_not_exists) => {
                if !self.catalog().database_exists(db) {
                    return Err(SqlError::UnknownDatabase(db.clone()));
                }
                let ine = if *if_not_exists {
                    "/*!32312 IF NOT EXISTS*/ "
                } else {
                    ""
                };
                let create = format!(
                    "CREATE DATABASE {ine}`{}` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci */",
                    db.replace('`', "``")
                );
                (
                    vec!["Database", "Create Database"],
                    vec![vec![s(db), s(&create)]],
                    0,
                )
            }
        };
        let rows = self.filter_rows(&names, rows, filter, like_col)?;
        Ok(Response::Rows(to_result_set(text_result(&names, rows), 0)))
    }
}
