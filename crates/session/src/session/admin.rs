//! Statements that administer the server rather than read or write tables: USE, CREATE /
//! DROP DATABASE, CREATE / DROP USER, KILL, FLUSH and BACKUP, with the checks they share
//! (`read_only` / `super_read_only` and the session's access mode for writes and DDL).
//!
//! FLUSH checks every option of its list before running any, so a bad list changes nothing:
//! STATUS and HOSTS reset the server's counters and host cache, TABLES [WITH READ LOCK] go to
//! the table engine, the options other subsystems register (the thread pool's statistics) run
//! their reset, MySQL's other options are 1235 and anything else is a syntax error.

use std::sync::Arc;

use shoal_proto::Response;
use shoal_sql::ast::{AccountOptions, Expr, NewUser};
use shoal_sql::eval::eval;
use shoal_sql::value::Value;
use shoal_sql::SqlError;

use super::wire::{ok, text_result, to_result_set};
use super::{access, Session};
use crate::hooks::FlushFn;

impl Session {
    /// `USE db` / COM_INIT_DB: the database must exist and the account must see it.
    pub(super) fn use_db(&mut self, db: &str) -> Result<(), SqlError> {
        self.refresh_grants();
        self.checker().enter_database(db)?;
        if !self.catalog().database_exists(db) {
            return Err(SqlError::UnknownDatabase(db.to_string()));
        }
        self.db = Some(db.to_string());
        self.entry.info().db = Some(db.to_string());
        Ok(())
    }

    /// CREATE DATABASE [IF NOT EXISTS] (1007, or a note with IF NOT EXISTS).
    pub(super) fn create_database(
        &mut self,
        name: &str,
        if_not_exists: bool,
    ) -> Result<Response, SqlError> {
        self.checker().database(name, crate::privileges::CREATE)?;
        self.check_ddl_allowed()?;
        check_db_name(name)?;
        let catalog = self.catalog();
        match catalog.create_database(name) {
            Ok(()) => Ok(ok(1)),
            Err(e) if if_not_exists && e.code() == shoal_errors::ER_DB_CREATE_EXISTS.code => {
                self.warn(shoal_errors::ER_DB_CREATE_EXISTS.code, e.to_string());
                Ok(ok(0))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// DROP DATABASE [IF EXISTS] with its tables; the affected count is the tables dropped.
    pub(super) fn drop_database(
        &mut self,
        name: &str,
        if_exists: bool,
    ) -> Result<Response, SqlError> {
        self.checker().database(name, crate::privileges::DROP)?;
        self.check_ddl_allowed()?;
        let catalog = self.catalog();
        let tables = catalog.tables(name).len() as u64;
        match catalog.drop_database(name) {
            Ok(()) => {
                if self.db.as_deref() == Some(name) {
                    self.db = None;
                    self.entry.info().db = None;
                }
                Ok(ok(tables))
            }
            Err(e) if if_exists && e.code() == shoal_errors::ER_DB_DROP_EXISTS.code => {
                self.warn(shoal_errors::ER_DB_DROP_EXISTS.code, e.to_string());
                Ok(ok(0))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// CREATE USER [IF NOT EXISTS] ...: 1396 for an existing account, a note with IF NOT EXISTS.
    pub(super) fn create_users(
        &mut self,
        users: &[NewUser],
        if_not_exists: bool,
        options: &AccountOptions,
    ) -> Result<Response, SqlError> {
        self.require_global(crate::privileges::CREATE_USER, "CREATE USER")?;
        self.check_writes_allowed()?;
        for u in users {
            let (name, host) = (&u.user, &u.host);
            let spec = match &u.plugin {
                Some(plugin) => shoal_sql::ast::PasswordSpec::With {
                    plugin: plugin.clone(),
                    password: u.password.clone(),
                    stored: u.stored.clone(),
                },
                None => shoal_sql::ast::PasswordSpec::Clear(u.password.clone().unwrap_or_default()),
            };
            let auth = access::auth_of(&spec, self.server.default_auth_plugin())?;
            if !self.server.create_account_opts(
                name,
                host,
                auth,
                options.require_ssl.unwrap_or(false),
                options.max_user_connections.unwrap_or(0),
            ) {
                if if_not_exists {
                    self.warn(
                        shoal_errors::ER_USER_ALREADY_EXISTS.code,
                        format!("Authorization ID '{name}'@'{host}' already exists."),
                    );
                } else {
                    return Err(SqlError::coded(
                        shoal_errors::ER_CANNOT_USER,
                        format!("Operation CREATE USER failed for '{name}'@'{host}'"),
                    ));
                }
            } else if options.locked == Some(true) {
                self.server.accounts().modify(|l| {
                    if let Some(a) = l.iter_mut().find(|a| a.is(name, host)) {
                        a.locked = true;
                    }
                    Ok(())
                })?;
            }
        }
        Ok(ok(0))
    }

    /// DROP USER [IF EXISTS] ...: 1396 for a missing account, a note with IF EXISTS.
    pub(super) fn drop_users(
        &mut self,
        users: &[(String, String)],
        if_exists: bool,
    ) -> Result<Response, SqlError> {
        self.require_global(crate::privileges::CREATE_USER, "CREATE USER")?;
        self.check_writes_allowed()?;
        for (u, h) in users {
            if !self.server.drop_account(u, h) {
                if if_exists {
                    self.warn(
                        shoal_errors::ER_USER_DOES_NOT_EXIST.code,
                        format!("Authorization ID '{u}'@'{h}' does not exist."),
                    );
                } else {
                    return Err(SqlError::coded(
                        shoal_errors::ER_CANNOT_USER,
                        format!("Operation DROP USER failed for '{u}'@'{h}'"),
                    ));
                }
            }
        }
        Ok(ok(0))
    }

    /// `KILL [QUERY] id` (1094 for an id that is no connection's).
    pub(super) fn kill_statement(
        &mut self,
        id: &Expr,
        query_only: bool,
        params: &[Value],
    ) -> Result<Response, SqlError> {
        let v = eval(id, &mut self.ctx(params))?;
        let id = v.to_i128().unwrap_or(-1);
        if id < 0 || id > u32::MAX as i128 {
            return Err(SqlError::coded(
                shoal_errors::ER_NO_SUCH_THREAD,
                format!("Unknown thread id: {id}"),
            ));
        }
        self.server
            .kill(id as u32, query_only, &self.user, self.is_super)
            .map_err(|e| SqlError::other(e.code, "HY000", e.message))?;
        Ok(ok(0))
    }

    /// `BACKUP TO 'dir'`: a checkpoint of the store (SUPER); one row says what it wrote.
    pub(super) fn backup(&mut self, dir: &str) -> Result<Response, SqlError> {
        self.require_global(crate::privileges::SUPER, "SUPER")?;
        let r = self
            .engine
            .backup_to(std::path::Path::new(dir), &self.server.version())?;
        let rows = vec![vec![
            Value::Str(dir.to_string()),
            Value::UInt(r.files),
            Value::UInt(r.bytes),
            Value::Str(format!("{:.3}", r.elapsed.as_secs_f64())),
        ]];
        Ok(Response::Rows(to_result_set(
            text_result(&["Directory", "Files", "Bytes", "Seconds"], rows),
            0,
        )))
    }

    /// `FLUSH option, ...`: `STATUS` (also `GLOBAL STATUS`) resets the server's counters
    /// ([`Server::flush_status`](crate::Server::flush_status)); the options registered by other subsystems (the thread
    /// pool's `THREAD_POOL_STATS`, `THREAD_POOL_WAITS`, `THREAD_POOL_LATENCY`) are reset; MySQL's
    /// other options are not implemented and say so (1235); anything else is a syntax error, as
    /// in MariaDB. Every option is checked before any is run, so a bad list changes nothing.
    pub(super) fn flush(&mut self, options: &[String]) -> Result<Response, SqlError> {
        self.require_global(crate::privileges::RELOAD, "RELOAD")?;
        /// First words of the FLUSH options MySQL and MariaDB define.
        const SERVER_OPTIONS: &[&str] = &[
            "BINARY",
            "CHANGED_PAGE_BITMAPS",
            "CLIENT_STATISTICS",
            "DES_KEY_FILE",
            "ENGINE",
            "ERROR",
            "GENERAL",
            "HOSTS",
            "INDEX_STATISTICS",
            "LOGS",
            "MASTER",
            "OPTIMIZER_COSTS",
            "PRIVILEGES",
            "QUERY",
            "QUERY_RESPONSE_TIME",
            "RELAY",
            "SLAVE",
            "SESSION",
            "SLOW",
            "SSL",
            "TABLE",
            "TABLES",
            "TABLE_STATISTICS",
            "USER_RESOURCES",
            "USER_STATISTICS",
            "USER_VARIABLES",
        ];
        let mut resets = Vec::with_capacity(options.len());
        for o in options {
            // MySQL's FLUSH STATUS; `GLOBAL STATUS` is MariaDB 11.5's name for the same reset.
            // There are no per-session counters to reset (SHOW SESSION STATUS shows the
            // global ones), so `SESSION STATUS` is refused below rather than reset the global.
            if o == "STATUS" || o == "GLOBAL STATUS" {
                let server = self.server.clone();
                resets.push(Arc::new(move || server.flush_status()) as FlushFn);
                continue;
            }
            // MySQL's FLUSH HOSTS (deprecated there in favour of TRUNCATE TABLE
            // performance_schema.host_cache, which shoal does not have): unblocks every host
            // `max_connect_errors` blocked.
            if o == "HOSTS" {
                let server = self.server.clone();
                resets.push(Arc::new(move || server.flush_hosts()) as FlushFn);
                continue;
            }
            // No table cache to close; under LOCK TABLES refused (1192) as in MySQL.
            if o == "TABLES" || o == "TABLE" {
                self.table_session().flush_tables()?;
                continue;
            }
            // The global read lock (table_lock.rs in shoal-exec). Taken at once, so a
            // failure (1205) leaves the other options of the statement undone.
            if o == "TABLES WITH READ LOCK" || o == "TABLE WITH READ LOCK" {
                self.table_session().global_read_lock()?;
                continue;
            }
            if let Some(f) = self.server.hooks().flushable(o) {
                resets.push(f);
                continue;
            }
            let first = o.split(' ').next().unwrap_or_default();
            return Err(if SERVER_OPTIONS.contains(&first) {
                SqlError::Unsupported(format!("FLUSH {o}"))
            } else {
                SqlError::Syntax(o.clone())
            });
        }
        for f in resets {
            f();
        }
        Ok(ok(0))
    }

    /// 1290 while `read_only` applies to this user or `super_read_only` is on.
    pub(super) fn check_writes_allowed(&self) -> Result<(), SqlError> {
        match self.server.read_only_for(self.is_super) {
            Some(option) => Err(shoal_exec::read_only_error(option)),
            None => Ok(()),
        }
    }

    /// CREATE / DROP DATABASE: 1290 under `read_only`, 1792 when the session's access mode
    /// (`transaction_read_only`) is READ ONLY (DDL commits first and runs in the session's
    /// mode, as in MySQL).
    pub(super) fn check_ddl_allowed(&self) -> Result<(), SqlError> {
        self.check_writes_allowed()?;
        if self.hot().read_only {
            return Err(shoal_exec::read_only_transaction_error());
        }
        Ok(())
    }
}

fn check_db_name(name: &str) -> Result<(), SqlError> {
    if name.is_empty() || name.len() > 64 || name.ends_with(' ') || name.contains('/') {
        return Err(SqlError::coded(
            shoal_errors::ER_WRONG_DB_NAME,
            format!("Incorrect database name '{name}'"),
        ));
    }
    Ok(())
}
