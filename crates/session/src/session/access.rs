//! The session's side of accounts and privileges: its cached grants, the checks the statement
//! dispatch calls (one per statement kind, see `crate::privileges` for the model), and the
//! account statements (GRANT, REVOKE, SHOW GRANTS, ALTER USER, RENAME USER, SET PASSWORD).
//!
//! Account statements change the store through `Accounts::modify`: the whole statement is
//! applied to a copy, checked, written as one synced batch and published, so a statement that
//! fails (one of its accounts is missing) changes nothing, on disk or in memory. MySQL applies
//! the accounts of a multi-account statement one by one and stops at the first failure;
//! shoal's all-or-nothing is the stricter of the two.

use std::sync::Arc;

use shoal_proto::{AuthPlugin, Response};
use shoal_sql::ast::{AccountStmt, GrantLevel, PasswordSpec, UserSpec};
use shoal_sql::SqlError;

use super::wire::{ok, text_result, to_result_set};
use super::Session;
use crate::privileges::{self, Checker, Grants, Level};
use crate::users::{Account, Auth};

impl Session {
    /// Reloads the account's grants when the account store changed since they were cached
    /// (one atomic load otherwise). An account dropped while connected has no privileges.
    pub(super) fn refresh_grants(&mut self) {
        let v = self.server.accounts().version();
        if v == self.grants_version {
            return;
        }
        let (grants, is_super) = self
            .server
            .accounts()
            .get(&self.user, &self.account_host)
            .map(|a| {
                let s = a.is_super();
                (a.grants, s)
            })
            .unwrap_or_default();
        self.grants = Arc::new(grants);
        self.is_super = is_super;
        self.grants_version = v;
        self.install_visibility();
    }

    /// What information_schema shows this session: every object when global privileges cover
    /// every table and SHOW DATABASES is held, else the objects of [`Self::sees_database`] /
    /// [`Self::sees_table`]; every connection in PROCESSLIST with PROCESS, else the user's own.
    /// Given to the table session now and whenever it is created.
    fn install_visibility(&mut self) {
        let g = self.grants.clone();
        let everything = g.global & privileges::SHOW_DB != 0 && g.global & privileges::SELECT != 0;
        let objects = (!everything).then(|| {
            let g = g.clone();
            Arc::new(move |db: &str, table: Option<&str>| {
                db.eq_ignore_ascii_case("information_schema")
                    || match table {
                        None => g.global & privileges::SHOW_DB != 0 || g.any_on_db(db),
                        Some(t) => g.any_on_table(db, t),
                    }
            }) as shoal_exec::show::ObjectFilter
        });
        // The server is held weakly: a session's table session must not keep it alive.
        let server = Arc::downgrade(&self.server);
        let only_user = (g.global & privileges::PROCESS == 0).then(|| self.user.clone());
        let processes: shoal_exec::show::ProcessFn = Arc::new(move || {
            server
                .upgrade()
                .map(|s| s.process_rows(only_user.as_deref()))
                .unwrap_or_default()
        });
        self.visibility = Some(Arc::new(shoal_exec::show::Viewer {
            objects,
            processes: Some(processes),
        }));
        if let Some(ts) = self.table.as_mut() {
            ts.set_visibility(self.visibility.clone());
        }
    }

    /// Installs the logged-in account's grants.
    pub(super) fn set_account_grants(&mut self, account: &Account) {
        self.grants = Arc::new(account.grants.clone());
        self.is_super = account.is_super();
        self.grants_version = self.server.accounts().version();
        self.install_visibility();
    }

    /// The checks, naming this session's user and host.
    pub(super) fn checker(&self) -> Checker<'_> {
        Checker {
            grants: &self.grants,
            user: &self.user,
            host: &self.host,
        }
    }

    /// Every table a prepared table statement touches, with the privilege it needs there.
    pub(super) fn check_plan(&self, plan: &shoal_exec::Plan) -> Result<(), SqlError> {
        if let shoal_exec::ast::TableStmt::ShowTables { db, .. } = &plan.stmt {
            if let Some(d) = db.as_ref().or(plan.db.as_ref()) {
                self.checker().enter_database(d)?;
            }
        }
        // Fast path (every statement of an administrator or a global-privileges application
        // account): the global level already holds everything a table statement can need.
        const EVERY_NEED: u64 = privileges::SELECT
            | privileges::INSERT
            | privileges::UPDATE
            | privileges::DELETE
            | privileges::CREATE
            | privileges::DROP
            | privileges::ALTER
            | privileges::INDEX
            | privileges::REFERENCES
            | privileges::PROCESS;
        if self.grants.global & EVERY_NEED == EVERY_NEED {
            return Ok(());
        }
        for a in plan.needs() {
            self.check_table_read_or(&a.db, &a.table, a.need)?;
        }
        Ok(())
    }

    /// One table of a statement: a virtual table of another subsystem in information_schema
    /// needs PROCESS (the pool's THREAD_POOL_* tables); anything else the statement's privilege
    /// on the table.
    fn check_table_read_or(
        &self,
        db: &str,
        table: &str,
        need: shoal_exec::TableNeed,
    ) -> Result<(), SqlError> {
        if db.eq_ignore_ascii_case("information_schema") {
            return self.checker().global_any(privileges::PROCESS, "PROCESS");
        }
        let (bit, command) = privileges::table_need(need);
        self.checker().table(db, table, bit, command)
    }

    /// SHOW TABLES lists only the tables this session has some privilege on.
    pub(super) fn filter_show_tables(
        &self,
        plan: &shoal_exec::Plan,
        out: shoal_exec::ExecOutput,
    ) -> shoal_exec::ExecOutput {
        let shoal_exec::ast::TableStmt::ShowTables { db, .. } = &plan.stmt else {
            return out;
        };
        let Some(d) = db.as_ref().or(plan.db.as_ref()) else {
            return out;
        };
        match out {
            shoal_exec::ExecOutput::Rows { columns, mut rows } => {
                rows.retain(|r| match r.first() {
                    Some(shoal_sql::value::Value::Str(t)) => self.sees_table(d, t),
                    _ => true,
                });
                shoal_exec::ExecOutput::Rows { columns, rows }
            }
            other => other,
        }
    }

    /// 1227 naming `names` unless one of `bits` is held globally.
    pub(super) fn require_global(&self, bits: u64, names: &str) -> Result<(), SqlError> {
        self.checker().global_any(bits, names)
    }

    /// Which databases this session sees in SHOW DATABASES and information_schema: all with
    /// SHOW DATABASES, else information_schema and those it has some privilege in.
    pub(super) fn sees_database(&self, db: &str) -> bool {
        self.grants.global & privileges::SHOW_DB != 0
            || db.eq_ignore_ascii_case("information_schema")
            || self.grants.any_on_db(db)
    }

    /// Whether this session sees table `db.t` (SHOW TABLES, information_schema).
    pub(super) fn sees_table(&self, db: &str, table: &str) -> bool {
        db.eq_ignore_ascii_case("information_schema") || self.grants.any_on_table(db, table)
    }

    fn level(&self, l: &GrantLevel) -> Result<Level, SqlError> {
        Ok(match l {
            GrantLevel::Global => Level::Global,
            GrantLevel::Database(d) => Level::Database(match d {
                Some(d) => d.clone(),
                None => self.db.clone().ok_or(SqlError::NoDatabase)?,
            }),
            GrantLevel::Table(d, t) => Level::Table(
                match d {
                    Some(d) => d.clone(),
                    None => self.db.clone().ok_or(SqlError::NoDatabase)?,
                },
                t.clone(),
            ),
        })
    }

    /// `CURRENT_USER` (None) or the named account, as (user, host).
    fn account_of(&self, u: &Option<UserSpec>) -> (String, String) {
        match u {
            Some(u) => (u.user.clone(), u.host.clone()),
            None => (self.user.clone(), self.account_host.clone()),
        }
    }

    fn is_self(&self, user: &str, host: &str) -> bool {
        user == self.user && host.eq_ignore_ascii_case(&self.account_host)
    }

    /// GRANT / REVOKE need GRANT OPTION at the level and every privilege given away, as in
    /// MySQL: 1045 for `*.*`, 1044 for a database, 1142 for a table.
    fn check_grant_authority(&self, level: &Level, bits: u64) -> Result<(), SqlError> {
        let held = self.grants.effective(level);
        let needed = bits | privileges::GRANT_OPTION;
        if held & needed == needed {
            return Ok(());
        }
        Err(match level {
            Level::Global => SqlError::coded(
                shoal_errors::ER_ACCESS_DENIED_ERROR,
                format!(
                    "Access denied for user '{}'@'{}' (using password: {})",
                    self.user,
                    self.host,
                    if self.password_used { "YES" } else { "NO" }
                ),
            ),
            Level::Database(d) => self.checker().db_denied(d),
            Level::Table(d, t) => SqlError::coded(
                shoal_errors::ER_TABLEACCESS_DENIED_ERROR,
                format!(
                    "GRANT command denied to user '{}'@'{}' for table {}.{}",
                    self.user,
                    self.host,
                    privileges::quote(d),
                    privileges::quote(t)
                ),
            ),
        })
    }

    fn create_user_privilege(&self) -> Result<(), SqlError> {
        self.require_global(privileges::CREATE_USER, "CREATE USER")
    }

    /// Runs an account statement.
    pub(super) fn account_statement(&mut self, st: &AccountStmt) -> Result<Response, SqlError> {
        if !matches!(
            st,
            AccountStmt::ShowGrants(_) | AccountStmt::ShowCreateUser(_)
        ) {
            self.check_writes_allowed()?;
        }
        match st {
            AccountStmt::Grant {
                privileges: names,
                level,
                users,
                grant_option,
            } => {
                let level = self.level(level)?;
                let mut bits = privileges::parse_privileges(names, &level)?;
                if *grant_option {
                    bits |= privileges::GRANT_OPTION;
                }
                self.check_grant_authority(&level, bits & !privileges::GRANT_OPTION)?;
                if let Level::Table(d, t) = &level {
                    if bits & privileges::CREATE == 0 && !self.catalog().table_exists(d, t) {
                        return Err(SqlError::NoSuchTable(d.clone(), t.clone()));
                    }
                }
                let targets: Vec<(String, String)> =
                    users.iter().map(|u| self.account_of(u)).collect();
                self.server.accounts().modify(|l| {
                    for (u, h) in &targets {
                        let a = l.iter_mut().find(|a| a.is(u, h)).ok_or_else(|| {
                            SqlError::coded(
                                shoal_errors::ER_CANT_CREATE_USER_WITH_GRANT,
                                "You are not allowed to create a user with GRANT",
                            )
                        })?;
                        a.grants.grant(&level, bits);
                    }
                    Ok(())
                })?;
                Ok(ok(0))
            }
            AccountStmt::Revoke {
                privileges: names,
                level,
                users,
            } => {
                let targets: Vec<(String, String)> =
                    users.iter().map(|u| self.account_of(u)).collect();
                let Some(level) = level else {
                    // REVOKE ALL PRIVILEGES, GRANT OPTION FROM ...: every level.
                    self.create_user_privilege()?;
                    self.server.accounts().modify(|l| {
                        for (u, h) in &targets {
                            let a = l
                                .iter_mut()
                                .find(|a| a.is(u, h))
                                .ok_or_else(|| no_such_grant(u, h, None))?;
                            a.grants = Grants::default();
                        }
                        Ok(())
                    })?;
                    return Ok(ok(0));
                };
                let level = self.level(level)?;
                let bits = privileges::parse_privileges(names, &level)?;
                self.check_grant_authority(&level, bits & !privileges::GRANT_OPTION)?;
                self.server.accounts().modify(|l| {
                    for (u, h) in &targets {
                        let a = l
                            .iter_mut()
                            .find(|a| a.is(u, h))
                            .ok_or_else(|| no_such_grant(u, h, None))?;
                        if !a.grants.revoke(&level, bits) {
                            return Err(match &level {
                                Level::Table(_, t) => no_such_grant(u, h, Some(t)),
                                _ => no_such_grant(u, h, None),
                            });
                        }
                    }
                    Ok(())
                })?;
                Ok(ok(0))
            }
            AccountStmt::ShowGrants(u) => {
                let (user, host) = self.account_of(u);
                if !self.is_self(&user, &host) {
                    self.checker().database("mysql", privileges::SELECT)?;
                }
                let a = self
                    .server
                    .accounts()
                    .get(&user, &host)
                    .ok_or_else(|| no_such_grant(&user, &host, None))?;
                let hash = a.password_hash();
                let lines = a.grants.show(&a.user, &a.host, hash.as_deref());
                let title = format!("Grants for {}@{}", a.user, a.host);
                let rows = lines
                    .into_iter()
                    .map(|l| vec![shoal_sql::value::Value::Str(l)])
                    .collect();
                Ok(Response::Rows(to_result_set(
                    text_result(&[title.as_str()], rows),
                    0,
                )))
            }
            AccountStmt::ShowCreateUser(u) => {
                let (user, host) = self.account_of(u);
                // As MySQL and MariaDB: one's own account, else SELECT on the `mysql`
                // database (1044 otherwise; the CREATE USER privilege is not enough),
                // checked before the account's existence (1133).
                if !self.is_self(&user, &host) {
                    self.checker().database("mysql", privileges::SELECT)?;
                }
                let a = self.server.accounts().get(&user, &host).ok_or_else(|| {
                    SqlError::coded(
                        shoal_errors::ER_PASSWORD_NO_MATCH,
                        "Can't find any matching row in the user table",
                    )
                })?;
                let title = format!("CREATE USER for {}@{}", a.user, a.host);
                let row = vec![shoal_sql::value::Value::Str(create_user_text(&a))];
                Ok(Response::Rows(to_result_set(
                    text_result(&[title.as_str()], vec![row]),
                    0,
                )))
            }
            AccountStmt::AlterUser {
                if_exists,
                users,
                lock,
                require_ssl,
            } => {
                let targets: Vec<(UserHost, Option<&PasswordSpec>)> = users
                    .iter()
                    .map(|(u, pw)| (self.account_of(u), pw.as_ref()))
                    .collect();
                // Changing one's own password needs no privilege; anything else CREATE USER.
                let own_password_only = lock.is_none()
                    && require_ssl.is_none()
                    && targets.iter().all(|((u, h), _)| self.is_self(u, h));
                if !own_password_only {
                    self.create_user_privilege()?;
                }
                let mut missing = Vec::new();
                self.server.accounts().modify(|l| {
                    for ((u, h), pw) in &targets {
                        let Some(a) = l.iter_mut().find(|a| a.is(u, h)) else {
                            if *if_exists {
                                missing.push(format!("'{u}'@'{h}'"));
                                continue;
                            }
                            return Err(SqlError::coded(
                                shoal_errors::ER_CANNOT_USER,
                                format!("Operation ALTER USER failed for '{u}'@'{h}'"),
                            ));
                        };
                        if let Some(pw) = pw {
                            // Without IDENTIFIED WITH the account keeps its plugin (MySQL 8).
                            a.auth = auth_of(pw, a.auth.plugin())?;
                        }
                        if let Some(lock) = lock {
                            a.locked = *lock;
                        }
                        if let Some(r) = require_ssl {
                            a.require_ssl = *r;
                        }
                    }
                    Ok(())
                })?;
                for m in missing {
                    self.warn(
                        shoal_errors::ER_USER_DOES_NOT_EXIST.code,
                        format!("Authorization ID {m} does not exist."),
                    );
                }
                Ok(ok(0))
            }
            AccountStmt::RenameUser(pairs) => {
                self.create_user_privilege()?;
                self.server.accounts().modify(|l| {
                    for (from, to) in pairs {
                        let fail = || {
                            SqlError::coded(
                                shoal_errors::ER_CANNOT_USER,
                                format!(
                                    "Operation RENAME USER failed for '{}'@'{}'",
                                    from.user, from.host
                                ),
                            )
                        };
                        if l.iter().any(|a| a.is(&to.user, &to.host)) {
                            return Err(fail());
                        }
                        let a = l
                            .iter_mut()
                            .find(|a| a.is(&from.user, &from.host))
                            .ok_or_else(fail)?;
                        a.user = to.user.clone();
                        a.host = to.host.clone();
                    }
                    Ok(())
                })?;
                Ok(ok(0))
            }
            AccountStmt::SetPassword { user, password } => {
                let (u, h) = self.account_of(user);
                if !self.is_self(&u, &h) {
                    // MySQL: changing another account's password needs UPDATE on the mysql
                    // schema (or CREATE USER), else 1044 naming it.
                    if self.grants.global & privileges::CREATE_USER == 0 {
                        self.checker().database("mysql", privileges::UPDATE)?;
                    }
                }
                self.server.accounts().modify(|l| {
                    let a = l.iter_mut().find(|a| a.is(&u, &h)).ok_or_else(|| {
                        SqlError::coded(
                            shoal_errors::ER_PASSWORD_NO_MATCH,
                            "Can't find any matching row in the user table",
                        )
                    })?;
                    a.auth = auth_of(password, a.auth.plugin())?;
                    Ok(())
                })?;
                Ok(ok(0))
            }
        }
    }
}

/// `(user, host)` of an account.
type UserHost = (String, String);

/// What `p` stores: a password is hashed for `plugin` (the account's, or the one named with
/// `IDENTIFIED WITH`), a `*hash` is `mysql_native_password`'s, an `AS 'string'` must be in its
/// plugin's format (else 1827, as MySQL).
pub(crate) fn auth_of(p: &PasswordSpec, plugin: AuthPlugin) -> Result<Auth, SqlError> {
    match p {
        PasswordSpec::Clear(s) => Ok(Auth::new(plugin, s)),
        PasswordSpec::Hash(h) => Ok(Auth::Native(Some(*h))),
        PasswordSpec::With {
            plugin,
            password,
            stored,
        } => {
            let plugin = AuthPlugin::from_name(plugin).ok_or_else(|| {
                SqlError::coded(
                    shoal_errors::ER_PLUGIN_IS_NOT_LOADED,
                    format!("Plugin '{plugin}' is not loaded"),
                )
            })?;
            match (password, stored) {
                (_, Some(stored)) => Auth::from_stored(plugin, stored).ok_or_else(|| {
                    SqlError::coded(
                        shoal_errors::ER_PASSWORD_FORMAT,
                        "The password hash doesn't have the expected format.",
                    )
                }),
                (password, None) => Ok(Auth::new(plugin, password.as_deref().unwrap_or(""))),
            }
        }
    }
}

/// 1141 / 1147 `ER_NONEXISTING_GRANT` / `ER_NONEXISTING_TABLE_GRANT`.
/// `SHOW CREATE USER`'s statement in MariaDB's form: `CREATE USER `u`@`h``, then the
/// password (`IDENTIFIED BY PASSWORD '*hash'` for mysql_native_password; `IDENTIFIED VIA
/// caching_sha2_password [USING '$A$005$...']` for the other plugin; nothing for a
/// mysql_native_password account without one), `REQUIRE SSL`, `WITH MAX_USER_CONNECTIONS n`
/// and `ACCOUNT LOCK`, each only when set. CREATE USER accepts it back as is, so it copies an
/// account to another server with the same password.
pub(crate) fn create_user_text(a: &crate::users::Account) -> String {
    let ident = |s: &str| format!("`{}`", s.replace('`', "``"));
    let string = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
    let mut t = format!("CREATE USER {}@{}", ident(&a.user), ident(&a.host));
    match &a.auth {
        crate::users::Auth::Native(None) => {}
        crate::users::Auth::Native(Some(_)) => {
            let hash = a.auth.auth_string();
            t.push_str(&format!(" IDENTIFIED BY PASSWORD {}", string(&hash)));
        }
        crate::users::Auth::Sha2(h) => {
            t.push_str(" IDENTIFIED VIA caching_sha2_password");
            if h.is_some() {
                t.push_str(&format!(" USING {}", string(&a.auth.auth_string())));
            }
        }
    }
    if a.require_ssl {
        t.push_str(" REQUIRE SSL");
    }
    if a.max_user_connections > 0 {
        t.push_str(&format!(
            " WITH MAX_USER_CONNECTIONS {}",
            a.max_user_connections
        ));
    }
    if a.locked {
        t.push_str(" ACCOUNT LOCK");
    }
    t
}

fn no_such_grant(user: &str, host: &str, table: Option<&str>) -> SqlError {
    match table {
        None => SqlError::coded(
            shoal_errors::ER_NONEXISTING_GRANT,
            format!("There is no such grant defined for user '{user}' on host '{host}'"),
        ),
        Some(t) => SqlError::coded(
            shoal_errors::ER_NONEXISTING_TABLE_GRANT,
            format!(
                "There is no such grant defined for user '{user}' on host '{host}' on table '{t}'"
            ),
        ),
    }
}
