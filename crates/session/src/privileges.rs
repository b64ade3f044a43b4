//! Privileges: what an account may do, at which level, and the checks statements make.
//!
//! # Model
//!
//! MySQL's static privileges that guard something shoal implements, plus two dynamic ones
//! (`CONNECTION_ADMIN`, `SYSTEM_VARIABLES_ADMIN`), are bits of a `u64` ([`PRIVILEGES`] lists
//! each with its name and the levels it may be granted at). An account's [`Grants`] are one
//! mask for `*.*`, one per database (`db.*`) and one per table (`db.t`); a privilege holds for a
//! table when it is in any of the three that cover it, the way MySQL ORs `mysql.user`,
//! `mysql.db` and `mysql.tables_priv`. Names are compared exactly (MySQL on Linux with
//! `lower_case_table_names=0`); the `_` / `%` wildcards MySQL allows in database-level grants
//! are not interpreted (a grant on `db_1` is on that database only).
//!
//! # Where the checks are
//!
//! Statements check once, before they run, at one place per statement kind in the session's
//! dispatch: table statements ask the executor's plan for every table they touch and the
//! privilege each needs ([`shoal_exec::TableNeed`]: joins, subqueries, derived tables,
//! `INSERT ... SELECT` sources, foreign-key parents) and check them all through
//! [`Checker::table`]; server-level statements check [`Checker::global_any`]. A prepared
//! statement is checked at every execution, so a REVOKE applies to statements prepared before
//! it. Sessions see GRANT and REVOKE at their next statement: the account store bumps a version
//! number on every change and a session compares it with the one its cached grants came from
//! (one atomic load per statement).
//!
//! # Errors
//!
//! As MySQL: 1142 (`ER_TABLEACCESS_DENIED_ERROR`, naming the command, user, host and table),
//! 1044 (database), 1227 (`ER_SPECIFIC_ACCESS_DENIED_ERROR`, naming the privileges any of which
//! would do). The user and host are the session's user name and client host, as MySQL prints
//! them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use shoal_sql::SqlError;

/// SELECT.
pub const SELECT: u64 = 1 << 0;
/// INSERT.
pub const INSERT: u64 = 1 << 1;
/// UPDATE.
pub const UPDATE: u64 = 1 << 2;
/// DELETE.
pub const DELETE: u64 = 1 << 3;
/// CREATE (tables, databases).
pub const CREATE: u64 = 1 << 4;
/// DROP (tables, databases; TRUNCATE).
pub const DROP: u64 = 1 << 5;
/// RELOAD (FLUSH).
pub const RELOAD: u64 = 1 << 6;
/// PROCESS (other users' threads in SHOW PROCESSLIST, the pool's information_schema tables).
pub const PROCESS: u64 = 1 << 7;
/// REFERENCES (a foreign key's parent).
pub const REFERENCES: u64 = 1 << 8;
/// INDEX (CREATE / DROP INDEX).
pub const INDEX: u64 = 1 << 9;
/// ALTER (ALTER TABLE).
pub const ALTER: u64 = 1 << 10;
/// SHOW DATABASES (every database in SHOW DATABASES).
pub const SHOW_DB: u64 = 1 << 11;
/// SUPER.
pub const SUPER: u64 = 1 << 12;
/// CREATE TEMPORARY TABLES (granted and shown; shoal has no temporary tables yet).
pub const CREATE_TMP: u64 = 1 << 13;
/// LOCK TABLES (granted and shown; checked by LOCK TABLES where the server has it).
pub const LOCK_TABLES: u64 = 1 << 14;
/// CREATE USER (CREATE / DROP / RENAME / ALTER USER of other accounts).
pub const CREATE_USER: u64 = 1 << 15;
/// GRANT OPTION.
pub const GRANT_OPTION: u64 = 1 << 16;
/// Dynamic CONNECTION_ADMIN (KILL other users' threads, the reserved connection, read_only).
pub const CONNECTION_ADMIN: u64 = 1 << 32;
/// Dynamic SYSTEM_VARIABLES_ADMIN (SET GLOBAL).
pub const SYSTEM_VARIABLES_ADMIN: u64 = 1 << 33;

/// Where a privilege may be granted.
const G: u8 = 1;
const D: u8 = 2;
const T: u8 = 4;

/// Every privilege: bit, name as SHOW GRANTS prints it (MariaDB's order), levels.
pub const PRIVILEGES: &[(u64, &str, u8)] = &[
    (SELECT, "SELECT", G | D | T),
    (INSERT, "INSERT", G | D | T),
    (UPDATE, "UPDATE", G | D | T),
    (DELETE, "DELETE", G | D | T),
    (CREATE, "CREATE", G | D | T),
    (DROP, "DROP", G | D | T),
    (RELOAD, "RELOAD", G),
    (PROCESS, "PROCESS", G),
    (REFERENCES, "REFERENCES", G | D | T),
    (INDEX, "INDEX", G | D | T),
    (ALTER, "ALTER", G | D | T),
    (SHOW_DB, "SHOW DATABASES", G),
    (SUPER, "SUPER", G),
    (CREATE_TMP, "CREATE TEMPORARY TABLES", G | D),
    (LOCK_TABLES, "LOCK TABLES", G | D),
    (CREATE_USER, "CREATE USER", G),
    (CONNECTION_ADMIN, "CONNECTION_ADMIN", G),
    (SYSTEM_VARIABLES_ADMIN, "SYSTEM_VARIABLES_ADMIN", G),
];

/// MySQL privileges shoal has nothing to guard with: granting them is refused (1235) rather
/// than recorded and ignored.
const NOT_IMPLEMENTED: &[&str] = &[
    "SHUTDOWN",
    "FILE",
    "EXECUTE",
    "REPLICATION SLAVE",
    "REPLICATION CLIENT",
    "CREATE VIEW",
    "SHOW VIEW",
    "CREATE ROUTINE",
    "ALTER ROUTINE",
    "EVENT",
    "TRIGGER",
    "CREATE TABLESPACE",
    "CREATE ROLE",
    "DROP ROLE",
    "PROXY",
];

/// Every privilege grantable at a level (`G`, `D`, `T`), GRANT OPTION excluded: what `ALL`
/// means there.
fn all_at(level: u8) -> u64 {
    PRIVILEGES
        .iter()
        .filter(|p| p.2 & level != 0)
        .fold(0, |m, p| m | p.0)
}

/// A privilege level of a GRANT / REVOKE, resolved (the current database filled in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Level {
    /// `*.*`.
    Global,
    /// `db.*`.
    Database(String),
    /// `db.t`.
    Table(String, String),
}

impl Level {
    fn mask(&self) -> u8 {
        match self {
            Level::Global => G,
            Level::Database(_) => D,
            Level::Table(..) => T,
        }
    }

    /// How SHOW GRANTS prints it.
    pub fn shown(&self) -> String {
        match self {
            Level::Global => "*.*".into(),
            Level::Database(d) => format!("{}.*", quote(d)),
            Level::Table(d, t) => format!("{}.{}", quote(d), quote(t)),
        }
    }
}

/// `` `name` `` with backquotes doubled.
pub fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// The privilege bits `names` (upper-cased, as parsed) stand for at `level`, GRANT OPTION
/// included as [`GRANT_OPTION`]. Errors as MySQL: 1221 for a global-only privilege on a
/// database, 1144 for one not grantable on a table, 1235 for privileges shoal does not
/// implement, 1064 for unknown names.
pub fn parse_privileges(names: &[String], level: &Level) -> Result<u64, SqlError> {
    let mut bits = 0;
    for n in names {
        let n = n.replace('_', " ");
        bits |= match n.as_str() {
            "ALL" => all_at(level.mask()),
            "USAGE" => 0,
            "GRANT OPTION" => GRANT_OPTION,
            _ => {
                let found = PRIVILEGES
                    .iter()
                    .find(|p| p.1.replace('_', " ") == n)
                    .ok_or_else(|| {
                        if NOT_IMPLEMENTED.contains(&n.as_str()) {
                            SqlError::Unsupported(format!("the {n} privilege"))
                        } else {
                            SqlError::Syntax(n.clone())
                        }
                    })?;
                if found.2 & level.mask() == 0 {
                    return Err(match level {
                        Level::Table(..) => SqlError::coded(shoal_errors::ER_ILLEGAL_GRANT_FOR_TABLE, "Illegal GRANT/REVOKE command; please consult the manual to see which privileges can be used",
                        ),
                        _ => SqlError::coded(shoal_errors::ER_WRONG_USAGE, "Incorrect usage of DB GRANT and GLOBAL PRIVILEGES",
                        ),
                    });
                }
                found.0
            }
        };
    }
    Ok(bits)
}

/// An account's privileges.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grants {
    /// `*.*`.
    #[serde(default)]
    pub global: u64,
    /// `db.*`, by database.
    #[serde(default)]
    pub dbs: BTreeMap<String, u64>,
    /// `db.t`, by database and table.
    #[serde(default)]
    pub tables: BTreeMap<String, BTreeMap<String, u64>>,
}

impl Grants {
    /// Every privilege at every level, with GRANT OPTION (the bootstrap root).
    pub fn all() -> Grants {
        Grants {
            global: all_at(G) | GRANT_OPTION,
            ..Grants::default()
        }
    }

    /// The mask at `level`.
    pub fn at(&self, level: &Level) -> u64 {
        match level {
            Level::Global => self.global,
            Level::Database(d) => self.dbs.get(d).copied().unwrap_or(0),
            Level::Table(d, t) => self
                .tables
                .get(d)
                .and_then(|m| m.get(t))
                .copied()
                .unwrap_or(0),
        }
    }

    /// What holds at `level` counting the levels above it.
    pub fn effective(&self, level: &Level) -> u64 {
        match level {
            Level::Global => self.global,
            Level::Database(_) => self.global | self.at(level),
            Level::Table(d, _) => {
                self.global | self.at(&Level::Database(d.clone())) | self.at(level)
            }
        }
    }

    /// Whether `bit` holds on table `db.t`.
    pub fn on_table(&self, db: &str, table: &str, bit: u64) -> bool {
        self.global & bit != 0
            || self.dbs.get(db).is_some_and(|m| m & bit != 0)
            || self
                .tables
                .get(db)
                .and_then(|m| m.get(table))
                .is_some_and(|m| m & bit != 0)
    }

    /// Whether the account has any privilege on `db` or something in it (what USE, a login
    /// with a database and SHOW DATABASES look at).
    pub fn any_on_db(&self, db: &str) -> bool {
        const DB_BITS: u64 = SELECT
            | INSERT
            | UPDATE
            | DELETE
            | CREATE
            | DROP
            | REFERENCES
            | INDEX
            | ALTER
            | CREATE_TMP
            | LOCK_TABLES
            | GRANT_OPTION;
        self.global & DB_BITS != 0
            || self.dbs.get(db).is_some_and(|m| *m != 0)
            || self
                .tables
                .get(db)
                .is_some_and(|m| m.values().any(|b| *b != 0))
    }

    /// Whether the account has any privilege on table `db.t` (information_schema, SHOW TABLES).
    pub fn any_on_table(&self, db: &str, table: &str) -> bool {
        const TABLE_BITS: u64 =
            SELECT | INSERT | UPDATE | DELETE | CREATE | DROP | REFERENCES | INDEX | ALTER;
        self.global & TABLE_BITS != 0
            || self.dbs.get(db).is_some_and(|m| m & TABLE_BITS != 0)
            || self
                .tables
                .get(db)
                .and_then(|m| m.get(table))
                .is_some_and(|m| *m != 0)
    }

    /// Adds `bits` at `level`.
    pub fn grant(&mut self, level: &Level, bits: u64) {
        match level {
            Level::Global => self.global |= bits,
            Level::Database(d) => *self.dbs.entry(d.clone()).or_insert(0) |= bits,
            Level::Table(d, t) => {
                *self
                    .tables
                    .entry(d.clone())
                    .or_default()
                    .entry(t.clone())
                    .or_insert(0) |= bits
            }
        }
    }

    /// Removes `bits` at `level`; false when the account had no grant there at all (MySQL's
    /// 1141 / 1147 for database and table levels). A level left empty disappears.
    pub fn revoke(&mut self, level: &Level, bits: u64) -> bool {
        match level {
            Level::Global => {
                self.global &= !bits;
                true
            }
            Level::Database(d) => match self.dbs.get_mut(d) {
                None => false,
                Some(m) => {
                    *m &= !bits;
                    if *m == 0 {
                        self.dbs.remove(d);
                    }
                    true
                }
            },
            Level::Table(d, t) => {
                let Some(tables) = self.tables.get_mut(d) else {
                    return false;
                };
                let Some(m) = tables.get_mut(t) else {
                    return false;
                };
                *m &= !bits;
                if *m == 0 {
                    tables.remove(t);
                    if tables.is_empty() {
                        self.tables.remove(d);
                    }
                }
                true
            }
        }
    }

    /// The `GRANT ... ON level` lines of SHOW GRANTS for `'user'@'host'` (MariaDB's text:
    /// backquoted names, `IDENTIFIED BY PASSWORD` on the global line, the global line first,
    /// then databases, then tables, each in name order).
    pub fn show(&self, user: &str, host: &str, password: Option<&str>) -> Vec<String> {
        let to = format!("{}@{}", quote(user), quote(host));
        let line = |level: &Level, bits: u64, extra: &str| {
            let list = privilege_list(bits, level.mask());
            let option = if bits & GRANT_OPTION != 0 {
                " WITH GRANT OPTION"
            } else {
                ""
            };
            format!("GRANT {list} ON {} TO {to}{extra}{option}", level.shown())
        };
        let identified = password
            .map(|p| format!(" IDENTIFIED BY PASSWORD '{p}'"))
            .unwrap_or_default();
        let mut out = vec![line(&Level::Global, self.global, &identified)];
        for (d, bits) in &self.dbs {
            out.push(line(&Level::Database(d.clone()), *bits, ""));
        }
        for (d, tables) in &self.tables {
            for (t, bits) in tables {
                out.push(line(&Level::Table(d.clone(), t.clone()), *bits, ""));
            }
        }
        out
    }
}

/// `ALL PRIVILEGES`, `USAGE` or the names of `bits` (GRANT OPTION excluded) in order.
fn privilege_list(bits: u64, level: u8) -> String {
    let all = all_at(level);
    let plain = bits & !GRANT_OPTION;
    if plain == 0 {
        return "USAGE".into();
    }
    if plain & all == all {
        return "ALL PRIVILEGES".into();
    }
    PRIVILEGES
        .iter()
        .filter(|p| plain & p.0 != 0)
        .map(|p| p.1)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The privilege a table statement needs on one table, as a bit and the command name 1142
/// prints.
pub fn table_need(need: shoal_exec::TableNeed) -> (u64, &'static str) {
    use shoal_exec::TableNeed as N;
    match need {
        N::Select => (SELECT, "SELECT"),
        N::Insert => (INSERT, "INSERT"),
        N::Update => (UPDATE, "UPDATE"),
        N::Delete => (DELETE, "DELETE"),
        N::Create => (CREATE, "CREATE"),
        N::Drop => (DROP, "DROP"),
        N::Alter => (ALTER, "ALTER"),
        N::Index => (INDEX, "INDEX"),
        N::References => (REFERENCES, "REFERENCES"),
    }
}

/// The checks of one session: its grants and how errors name it.
pub struct Checker<'a> {
    /// The account's privileges.
    pub grants: &'a Grants,
    /// User name as the session logged in.
    pub user: &'a str,
    /// Client host as errors print it.
    pub host: &'a str,
}

impl Checker<'_> {
    /// 1142 unless `bit` holds on `db.table`.
    pub fn table(&self, db: &str, table: &str, bit: u64, command: &str) -> Result<(), SqlError> {
        if self.grants.on_table(db, table, bit) {
            return Ok(());
        }
        Err(SqlError::coded(
            shoal_errors::ER_TABLEACCESS_DENIED_ERROR,
            format!(
                "{command} command denied to user '{}'@'{}' for table {}.{}",
                self.user,
                self.host,
                quote(db),
                quote(table)
            ),
        ))
    }

    /// 1044 unless `bit` holds on `db` (global or database level).
    pub fn database(&self, db: &str, bit: u64) -> Result<(), SqlError> {
        if self.grants.effective(&Level::Database(db.to_string())) & bit != 0 {
            return Ok(());
        }
        Err(self.db_denied(db))
    }

    /// 1044 unless the account has some privilege in `db` (USE, a login with a database).
    pub fn enter_database(&self, db: &str) -> Result<(), SqlError> {
        if db.eq_ignore_ascii_case("information_schema") || self.grants.any_on_db(db) {
            return Ok(());
        }
        Err(self.db_denied(db))
    }

    /// `ER_DBACCESS_DENIED_ERROR`.
    pub fn db_denied(&self, db: &str) -> SqlError {
        SqlError::coded(
            shoal_errors::ER_DBACCESS_DENIED_ERROR,
            format!(
                "Access denied for user '{}'@'{}' to database '{db}'",
                self.user, self.host
            ),
        )
    }

    /// 1227 unless one of `bits` holds globally; `names` lists them as the message does.
    pub fn global_any(&self, bits: u64, names: &str) -> Result<(), SqlError> {
        if self.grants.global & bits != 0 {
            return Ok(());
        }
        Err(specific_denied(names))
    }
}

/// 1227 `ER_SPECIFIC_ACCESS_DENIED_ERROR`.
pub fn specific_denied(names: &str) -> SqlError {
    SqlError::coded(
        shoal_errors::ER_SPECIFIC_ACCESS_DENIED_ERROR,
        format!(
            "Access denied; you need (at least one of) the {names} privilege(s) for this operation"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn levels_accept_only_their_privileges() {
        let db = Level::Database("d".into());
        let t = Level::Table("d".into(), "t".into());
        assert_eq!(
            parse_privileges(&names(&["SELECT", "INSERT"]), &t).unwrap(),
            SELECT | INSERT
        );
        assert_eq!(
            parse_privileges(&names(&["PROCESS"]), &db)
                .unwrap_err()
                .code(),
            1221
        );
        assert_eq!(
            parse_privileges(&names(&["LOCK TABLES"]), &t)
                .unwrap_err()
                .code(),
            1144
        );
        assert_eq!(
            parse_privileges(&names(&["EXECUTE"]), &t)
                .unwrap_err()
                .code(),
            1235
        );
        assert_eq!(
            parse_privileges(&names(&["FROBNICATE"]), &t)
                .unwrap_err()
                .code(),
            1064
        );
        assert_eq!(
            parse_privileges(&names(&["CONNECTION_ADMIN"]), &Level::Global).unwrap(),
            CONNECTION_ADMIN
        );
    }

    #[test]
    fn levels_combine_and_revoke_clears() {
        let mut g = Grants::default();
        g.grant(&Level::Database("d".into()), SELECT);
        g.grant(&Level::Table("e".into(), "t".into()), INSERT);
        assert!(g.on_table("d", "x", SELECT));
        assert!(!g.on_table("d", "x", INSERT));
        assert!(g.on_table("e", "t", INSERT));
        assert!(!g.on_table("e", "u", INSERT));
        assert!(g.any_on_db("e") && !g.any_on_db("f"));
        assert!(g.revoke(&Level::Table("e".into(), "t".into()), INSERT));
        assert!(g.tables.is_empty());
        assert!(!g.revoke(&Level::Table("e".into(), "t".into()), INSERT));
        assert!(!g.revoke(&Level::Database("z".into()), SELECT));
    }

    #[test]
    fn show_grants_text() {
        let mut g = Grants::default();
        g.grant(&Level::Database("d".into()), all_at(D) | GRANT_OPTION);
        g.grant(&Level::Table("d".into(), "t".into()), SELECT | UPDATE);
        assert_eq!(
            g.show("bob", "%", None),
            vec![
                "GRANT USAGE ON *.* TO `bob`@`%`",
                "GRANT ALL PRIVILEGES ON `d`.* TO `bob`@`%` WITH GRANT OPTION",
                "GRANT SELECT, UPDATE ON `d`.`t` TO `bob`@`%`",
            ]
        );
        assert_eq!(
            Grants::all().show("root", "localhost", None)[0],
            "GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION"
        );
    }
}
