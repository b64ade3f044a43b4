//! System and user variables as one session sees them.
//!
//! Each session holds a copy of the session-scoped values (`crate::vars::SessionVars`); global
//! ones live in the server's registry. Reading (`read_var`) resolves the name once, answers the
//! few variables that are facts of the session (`warning_count`, `last_insert_id`,
//! `timestamp`, ...) from the session, and the rest from the copy or the registry. Setting
//! (`assign`, `set_system`) validates through the registry, needs SUPER or
//! SYSTEM_VARIABLES_ADMIN for GLOBAL, and handles the variables whose change is an action:
//! `autocommit` (turning it on commits), `transaction_read_only` (also the next transaction's
//! mode), `sql_mode` (normalised into MySQL's bit order, combination modes expanded),
//! `last_insert_id`, and `read_only` / `super_read_only` (refused inside a transaction).
//!
//! The hot variables: a dozen values are read on every statement or by the pool after every
//! command (autocommit, isolation, lock timeouts, `max_execution_time`, the pool's priority
//! settings...). Looking each up by name every time cost a few percent of the server's CPU at
//! hundreds of sessions, where each session's map is cold; [`HotVars`] holds them converted,
//! tagged with the `SessionVars::generation` they were read at, and `hot()` rebuilds it only
//! after a session SET changed the generation. All of them are session-scoped, so a SET GLOBAL
//! cannot change them under the cache.
//!
//! User variables live as long as the session and are bounded together by
//! `max_session_mem_used` (1290), as in MariaDB.

use std::time::Duration;

use shoal_exec::Isolation;
use shoal_proto::Response;
use shoal_sched::{HighPrioMode, SessionPriority};
use shoal_sql::ast::{Expr, SetExpr, SetTarget, VarScope};
use shoal_sql::eval::eval;
use shoal_sql::value::Value;
use shoal_sql::SqlError;

use super::wire::ok;
use super::Session;
use crate::vars::{Scope, SetValue, VarError, VarValue, DEFAULT_SQL_MODE};

/// sql_mode flags MySQL 8 knows, in the order of their bits (the order `@@sql_mode` prints).
const SQL_MODES: &[&str] = &[
    "REAL_AS_FLOAT",
    "PIPES_AS_CONCAT",
    "ANSI_QUOTES",
    "IGNORE_SPACE",
    "ONLY_FULL_GROUP_BY",
    "NO_UNSIGNED_SUBTRACTION",
    "NO_DIR_IN_CREATE",
    "ANSI",
    "NO_AUTO_VALUE_ON_ZERO",
    "NO_BACKSLASH_ESCAPES",
    "STRICT_TRANS_TABLES",
    "STRICT_ALL_TABLES",
    "NO_ZERO_IN_DATE",
    "NO_ZERO_DATE",
    "ALLOW_INVALID_DATES",
    "ERROR_FOR_DIVISION_BY_ZERO",
    "TRADITIONAL",
    "HIGH_NOT_PRECEDENCE",
    "NO_ENGINE_SUBSTITUTION",
    "PAD_CHAR_TO_FULL_LENGTH",
    "TIME_TRUNCATE_FRACTIONAL",
];

/// The variables read on every statement or by the pool after every command, converted once
/// per [`SessionVars::generation`](crate::vars::SessionVars::generation) (that is, once per session `SET`). Looking them up by name
/// each time (a hash of the name, a clone, for two of them a string conversion) cost a few
/// percent of the server's CPU at hundreds of sessions, where each session's map is cold.
/// The cache also follows [`Vars::global_generation`](crate::vars::Vars::global_generation):
/// a session variable the session never set reads the global value, and
/// `global_connection_memory_limit` is global only (reading it by name was 1,000
/// instructions a point select).
#[derive(Debug, Clone, Copy)]
pub(super) struct HotVars {
    pub(super) generation: u64,
    pub(super) priority: SessionPriority,
    /// `None` when the variable is not defined: the pool's global mode applies.
    pub(super) mode: Option<HighPrioMode>,
    /// `None` when the variable is not defined: the pool's global value applies.
    pub(super) tickets: Option<u64>,
    /// `wait_timeout`, or `interactive_timeout` for interactive clients.
    pub(super) idle_timeout: Duration,
    pub(super) autocommit: bool,
    pub(super) isolation: Isolation,
    /// `innodb_lock_wait_timeout`, seconds.
    pub(super) lock_wait_timeout: u64,
    /// `lock_wait_timeout` (table locks), seconds.
    pub(super) table_lock_wait_timeout: u64,
    /// `max_execution_time`, ms (0 = none).
    pub(super) max_execution_time: u64,
    pub(super) max_allowed_packet: u64,
    pub(super) div_precision: u32,
    /// `max_binlog_cache_size`.
    pub(super) write_limit: u64,
    /// `sql_select_limit`.
    pub(super) select_limit: u64,
    /// `max_session_mem_used`: bytes of rows one statement may hold.
    pub(super) statement_mem_limit: u64,
    /// `global_connection_memory_limit`: bytes the statements of all sessions may hold.
    pub(super) global_mem_limit: u64,
    /// The server's `Vars::global_generation` when this was read.
    pub(super) global_generation: u64,
    /// `transaction_read_only` (the session's default access mode).
    pub(super) read_only: bool,
    /// `sql_mode` holds `STRICT_TRANS_TABLES` or `STRICT_ALL_TABLES`: a value that does not
    /// fit its column fails the write (else it is stored as near as it fits, with a warning).
    pub(super) strict: bool,
}

pub(super) fn var_to_value(v: VarValue) -> Value {
    match v {
        VarValue::Bool(b) => Value::Int(b as i64),
        VarValue::Int(i) => Value::Int(i),
        VarValue::UInt(u) => Value::UInt(u),
        VarValue::Str(s) => Value::Str(s),
        VarValue::Double(d) => Value::Double(d),
    }
}

pub(super) fn var_err(e: VarError) -> SqlError {
    SqlError::other(e.code(), e.sqlstate(), e.to_string())
}

/// `transaction_isolation` text to the engine's level.
fn isolation_of(name: &str) -> Isolation {
    match name.to_ascii_uppercase().replace(' ', "-").as_str() {
        "READ-UNCOMMITTED" => Isolation::ReadUncommitted,
        "READ-COMMITTED" => Isolation::ReadCommitted,
        "SERIALIZABLE" => Isolation::Serializable,
        _ => Isolation::RepeatableRead,
    }
}

impl Session {
    pub(super) fn var_u64(&self, name: &str, default: u64) -> u64 {
        self.vars
            .get(&self.server.vars, name)
            .map(|v| v.as_u64())
            .unwrap_or(default)
    }

    /// The variables read on every statement, looked up once per `SET` (see [`HotVars`]).
    pub(super) fn hot(&self) -> HotVars {
        let generation = self.vars.generation();
        let global_generation = self.server.vars.global_generation();
        if let Some(c) = self.hot.get() {
            if c.generation == generation && c.global_generation == global_generation {
                return c;
            }
        }
        let text = |name: &str| {
            self.vars
                .get(&self.server.vars, name)
                .map(|v| v.display().to_ascii_lowercase())
                .unwrap_or_default()
        };
        let idle_name = if self.interactive {
            "interactive_timeout"
        } else {
            "wait_timeout"
        };
        let c = HotVars {
            generation,
            priority: SessionPriority::from_name(&text("thread_pool_priority")).unwrap_or_default(),
            mode: HighPrioMode::from_name(&text("thread_pool_high_prio_mode")),
            tickets: self
                .vars
                .get(&self.server.vars, "thread_pool_high_prio_tickets")
                .ok()
                .map(|v| v.as_u64()),
            idle_timeout: Duration::from_secs(self.var_u64(idle_name, 28800)),
            autocommit: self
                .vars
                .get(&self.server.vars, "autocommit")
                .map(|v| v.as_bool())
                .unwrap_or(true),
            isolation: self
                .vars
                .get(&self.server.vars, "transaction_isolation")
                .map(|v| isolation_of(&v.display()))
                .unwrap_or_default(),
            lock_wait_timeout: self.var_u64("innodb_lock_wait_timeout", 50),
            table_lock_wait_timeout: self.var_u64("lock_wait_timeout", 31_536_000),
            max_execution_time: self.var_u64("max_execution_time", 0),
            max_allowed_packet: self.var_u64("max_allowed_packet", 64 << 20),
            div_precision: self.var_u64("div_precision_increment", 4) as u32,
            select_limit: self.var_u64("sql_select_limit", u64::MAX),
            statement_mem_limit: self.var_u64("max_session_mem_used", u64::MAX),
            global_mem_limit: self.var_u64("global_connection_memory_limit", u64::MAX),
            global_generation,
            write_limit: self.var_u64("max_binlog_cache_size", u64::MAX),
            read_only: self
                .vars
                .get(&self.server.vars, "transaction_read_only")
                .map(|v| v.as_bool())
                .unwrap_or(false),
            strict: text("sql_mode")
                .split(',')
                .any(|m| m == "strict_trans_tables" || m == "strict_all_tables"),
        };
        self.hot.set(Some(c));
        c
    }

    /// The connection limit of this session's account: its own `MAX_USER_CONNECTIONS`, else
    /// the global `max_user_connections` (0 = none).
    pub(super) fn user_connection_limit(&self) -> u64 {
        if self.account_limit > 0 {
            self.account_limit
        } else {
            self.server.vars.get("max_user_connections").as_u64()
        }
    }

    pub(super) fn autocommit(&self) -> bool {
        self.hot().autocommit
    }

    pub(super) fn read_var(&mut self, scope: VarScope, name: &str) -> Result<Value, SqlError> {
        let vars = &self.server.vars;
        let def = vars
            .def(name)
            .ok_or_else(|| var_err(VarError::Unknown(name.to_string())))?;
        let lname = def.name;
        match scope {
            VarScope::Global => return vars.global(lname).map(var_to_value).map_err(var_err),
            VarScope::Session if def.scope == Scope::Global => {
                return Err(SqlError::coded(
                    shoal_errors::ER_INCORRECT_GLOBAL_LOCAL_VAR,
                    format!("Variable '{lname}' is a GLOBAL variable"),
                ))
            }
            _ => {}
        }
        Ok(match lname {
            "warning_count" => Value::UInt(self.diag.warning_count()),
            "error_count" => Value::UInt(self.diag.error_count()),
            "last_insert_id" | "identity" => Value::UInt(self.last_insert_id),
            "timestamp" => Value::Double(self.stmt_time.to_unix() as f64),
            "pseudo_thread_id" => Value::UInt(self.entry.id as u64),
            // The account's limit if it has one, else the current global value (MySQL).
            "max_user_connections" => Value::UInt(self.user_connection_limit()),
            _ => var_to_value(self.vars.get(vars, lname).map_err(var_err)?),
        })
    }

    /// `SET TRANSACTION [GLOBAL | SESSION] ISOLATION LEVEL ... | READ ONLY | READ WRITE`.
    pub(super) fn set_transaction(
        &mut self,
        scope: &Option<VarScope>,
        level: &Option<String>,
        ro: &Option<bool>,
    ) -> Result<Response, SqlError> {
        if scope.is_none() {
            self.check_no_transaction()?;
        }
        let global = *scope == Some(VarScope::Global);
        if let Some(l) = level {
            // Without a scope MySQL sets the next transaction's level only; shoal sets
            // the session's (see docs/OPERATIONS.md).
            self.set_system(global, "transaction_isolation", SetValue::Str(l.clone()))?;
        }
        if let Some(r) = ro {
            if scope.is_none() {
                // The next transaction only (MySQL and MariaDB).
                self.set_next_read_only(*r);
            } else {
                self.set_system(global, "transaction_read_only", SetValue::Int(*r as i128))?;
            }
        }
        Ok(ok(0))
    }

    fn set_value(&mut self, v: &SetExpr, params: &[Value]) -> Result<SetValue, SqlError> {
        Ok(match v {
            SetExpr::Default => SetValue::Default,
            SetExpr::Word(w) => SetValue::Str(w.clone()),
            SetExpr::Expr(e) => set_value_of(eval(e, &mut self.ctx(params))?),
            SetExpr::Query(sql) => set_value_of(self.query_value(sql)?),
        })
    }

    pub(super) fn set_system(
        &mut self,
        global: bool,
        name: &str,
        value: SetValue,
    ) -> Result<(), SqlError> {
        let vars = &self.server.vars;
        let def = vars
            .def(name)
            .ok_or_else(|| var_err(VarError::Unknown(name.to_string())))?;
        let canonical = def.name;
        let value = if canonical == "sql_mode" {
            normalize_sql_mode(&value)?
        } else {
            value
        };
        if global {
            self.require_super_for_global()?;
            if matches!(canonical, "read_only" | "super_read_only") {
                let d = vars.def(canonical).expect("known variable");
                let on = vars.validate(d, &value, true).map_err(var_err)?.as_bool();
                // MySQL: turning read-only mode on needs the session to hold no transaction.
                if on && self.in_transaction() {
                    return Err(SqlError::coded(shoal_errors::ER_LOCK_OR_ACTIVE_TRANSACTION, "Can't execute the given command because you have active locked tables or an active transaction",
                    ));
                }
            }
            return vars.set_global(canonical, &value).map_err(var_err);
        }
        match canonical {
            "last_insert_id" | "identity" => {
                if let SetValue::Int(i) = value {
                    self.last_insert_id = i.clamp(0, u64::MAX as i128) as u64;
                    return Ok(());
                }
                return Err(var_err(VarError::WrongType(canonical.to_string())));
            }
            "autocommit" => {
                let was = self.autocommit();
                self.vars.set(vars, canonical, &value).map_err(var_err)?;
                // Turning autocommit on commits an open transaction.
                if !was && self.autocommit() {
                    if let Some(ts) = self.table.as_mut() {
                        ts.set_autocommit(true)?;
                    }
                }
                return Ok(());
            }
            "transaction_read_only" => {
                self.vars.set(vars, canonical, &value).map_err(var_err)?;
                // Outside a transaction the session's mode is also the next transaction's
                // (replacing a `SET TRANSACTION READ ...` made before), as in MySQL.
                let ro = self.hot().read_only;
                if let Some(ts) = self.table.as_mut() {
                    if !ts.in_transaction() {
                        ts.set_next_read_only(ro);
                    }
                }
                return Ok(());
            }
            _ => {}
        }
        self.vars.set(vars, canonical, &value).map_err(var_err)
    }

    fn require_super_for_global(&self) -> Result<(), SqlError> {
        self.require_global(
            crate::privileges::SUPER | crate::privileges::SYSTEM_VARIABLES_ADMIN,
            "SUPER or SYSTEM_VARIABLES_ADMIN",
        )
    }

    /// `SET a = x, @b = y, ...`. As in MariaDB, every value is computed before any variable is
    /// assigned: `SET @a = 1, @b = @a` gives `@b` the `@a` of before the statement.
    pub(super) fn set(
        &mut self,
        assignments: &[(SetTarget, SetExpr)],
        params: &[Value],
    ) -> Result<Response, SqlError> {
        if let [(target, value)] = assignments {
            self.assign(target, value, params)?;
            return Ok(ok(0));
        }
        let mut values = Vec::with_capacity(assignments.len());
        for (_, value) in assignments {
            values.push(match value {
                SetExpr::Expr(e) => SetExpr::Expr(Expr::Literal(eval(e, &mut self.ctx(params))?)),
                SetExpr::Query(sql) => SetExpr::Expr(Expr::Literal(self.query_value(sql)?)),
                other => other.clone(),
            });
        }
        for ((target, _), value) in assignments.iter().zip(&values) {
            self.assign(target, value, params)?;
        }
        Ok(ok(0))
    }

    pub(super) fn assign(
        &mut self,
        target: &SetTarget,
        value: &SetExpr,
        params: &[Value],
    ) -> Result<(), SqlError> {
        match target {
            SetTarget::User(n) => {
                let v = match value {
                    SetExpr::Expr(e) => eval(e, &mut self.ctx(params))?,
                    SetExpr::Query(sql) => self.query_value(sql)?,
                    SetExpr::Word(w) => {
                        return Err(SqlError::UnknownColumn(w.clone(), "field list".into()))
                    }
                    SetExpr::Default => return Err(SqlError::Syntax("DEFAULT".into())),
                };
                // User variables live as long as the session: together they are bounded by
                // `max_session_mem_used`, as in MariaDB (a session could otherwise keep
                // thousands of max_allowed_packet-sized values).
                let limit = self.var_u64("max_session_mem_used", u64::MAX);
                let name = n.to_ascii_lowercase();
                let others: usize = self
                    .user_vars
                    .iter()
                    .filter(|(k, _)| **k != name)
                    .map(|(k, v)| k.len() + v.mem_size())
                    .sum();
                if (others + name.len() + v.mem_size()) as u64 > limit {
                    return Err(SqlError::coded(shoal_errors::ER_OPTION_PREVENTS_STATEMENT, format!("The MySQL server is running with the --max-session-mem-used={limit} option so it cannot execute this statement"),
                    ));
                }
                self.user_vars
                    .insert(name, shoal_sql::value::user_var_value(v));
                Ok(())
            }
            SetTarget::System(scope, name) => {
                let v = self.set_value(value, params)?;
                let def = self.server.vars.def(name);
                if *scope == VarScope::Default
                    && def.is_some_and(|d| d.name == "transaction_read_only")
                {
                    // `SET @@transaction_read_only`: the next transaction only (MySQL and
                    // MariaDB), refused inside one.
                    let d = def.expect("checked");
                    let ro = self
                        .server
                        .vars
                        .validate(d, &v, false)
                        .map_err(var_err)?
                        .as_bool();
                    self.check_no_transaction()?;
                    self.set_next_read_only(ro);
                    return Ok(());
                }
                let def_scope = def.map(|d| d.scope);
                let global = match scope {
                    VarScope::Global => true,
                    VarScope::Session => false,
                    // `SET x = v` on a GLOBAL-only variable is error 1229 (like MySQL).
                    VarScope::Default => false,
                };
                if !global && def_scope == Some(Scope::Global) {
                    let d = self.server.vars.def(name).unwrap();
                    if !d.dynamic {
                        return Err(var_err(VarError::ReadOnly(d.name.to_string())));
                    }
                    return Err(var_err(VarError::GlobalOnly(d.name.to_string())));
                }
                self.set_system(global, name, v)
            }
        }
    }
}

fn normalize_sql_mode(v: &SetValue) -> Result<SetValue, SqlError> {
    let text = match v {
        SetValue::Str(s) => s.clone(),
        SetValue::Default => return Ok(SetValue::Str(DEFAULT_SQL_MODE.into())),
        SetValue::Int(0) => String::new(),
        other => {
            return Err(SqlError::coded(
                shoal_errors::ER_WRONG_VALUE_FOR_VAR,
                format!("Variable 'sql_mode' can't be set to the value of '{other:?}'"),
            ))
        }
    };
    // MySQL stores the modes as bits and prints them in bit order (the order of SQL_MODES);
    // the combination modes add their parts and keep their own bit.
    let mut on = [false; SQL_MODES.len()];
    let mut set = |m: &str| {
        if let Some(i) = SQL_MODES.iter().position(|x| *x == m) {
            on[i] = true;
        }
    };
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match SQL_MODES.iter().find(|m| m.eq_ignore_ascii_case(part)) {
            Some(m) => {
                set(m);
                let parts: &[&str] = match *m {
                    "ANSI" => &[
                        "REAL_AS_FLOAT",
                        "PIPES_AS_CONCAT",
                        "ANSI_QUOTES",
                        "IGNORE_SPACE",
                        "ONLY_FULL_GROUP_BY",
                    ],
                    "TRADITIONAL" => &[
                        "STRICT_TRANS_TABLES",
                        "STRICT_ALL_TABLES",
                        "NO_ZERO_IN_DATE",
                        "NO_ZERO_DATE",
                        "ERROR_FOR_DIVISION_BY_ZERO",
                        "NO_ENGINE_SUBSTITUTION",
                    ],
                    _ => &[],
                };
                parts.iter().for_each(|p| set(p));
            }
            None => {
                return Err(SqlError::coded(
                    shoal_errors::ER_WRONG_VALUE_FOR_VAR,
                    format!("Variable 'sql_mode' can't be set to the value of '{part}'"),
                ))
            }
        }
    }
    let out: Vec<&str> = SQL_MODES
        .iter()
        .zip(on)
        .filter_map(|(m, on)| on.then_some(*m))
        .collect();
    Ok(SetValue::Str(out.join(",")))
}

/// A SQL value as a system variable's new value.
fn set_value_of(v: Value) -> SetValue {
    match v {
        Value::Null => SetValue::Null,
        Value::Int(i) => SetValue::Int(i as i128),
        Value::UInt(u) => SetValue::Int(u as i128),
        Value::Decimal(d) => {
            if d.mant % 10i128.pow(d.scale) == 0 {
                SetValue::Int(d.trunc())
            } else {
                SetValue::Double(d.to_f64())
            }
        }
        Value::Double(d) => SetValue::Double(d),
        other => SetValue::Str(other.to_text().unwrap_or_default()),
    }
}
