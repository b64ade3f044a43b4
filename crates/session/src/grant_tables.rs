//! `mysql.user`, `mysql.db` and `mysql.tables_priv`: read-only views of the account store in
//! MySQL's shapes (the privilege columns shoal has, `'Y'` / `'N'`; `tables_priv.Table_priv` as
//! MySQL's comma-separated SET), produced at query time through the session's virtual-table
//! hook, so they can be selected, filtered, joined and grouped like any table. Reading them
//! needs SELECT on them (or on `mysql.*`), as in MySQL. They are not writable: accounts change
//! through CREATE/ALTER/DROP/RENAME USER, GRANT, REVOKE and SET PASSWORD only, so no
//! `FLUSH PRIVILEGES` is ever needed.

use std::sync::Arc;

use shoal_sql::value::Value;

use crate::accounts::Accounts;
use crate::hooks::VirtualTable;
use crate::privileges::*;
use crate::Server;

fn yn(bits: u64, bit: u64) -> Value {
    Value::Str(if bits & bit != 0 { "Y" } else { "N" }.into())
}

fn s(x: &str) -> Value {
    Value::Str(x.to_string())
}

/// `mysql.user` privilege columns, in MySQL's order.
const USER_PRIVS: &[(&str, u64)] = &[
    ("Select_priv", SELECT),
    ("Insert_priv", INSERT),
    ("Update_priv", UPDATE),
    ("Delete_priv", DELETE),
    ("Create_priv", CREATE),
    ("Drop_priv", DROP),
    ("Reload_priv", RELOAD),
    ("Process_priv", PROCESS),
    ("Grant_priv", GRANT_OPTION),
    ("References_priv", REFERENCES),
    ("Index_priv", INDEX),
    ("Alter_priv", ALTER),
    ("Show_db_priv", SHOW_DB),
    ("Super_priv", SUPER),
    ("Create_tmp_table_priv", CREATE_TMP),
    ("Lock_tables_priv", LOCK_TABLES),
    ("Create_user_priv", CREATE_USER),
];

/// `mysql.db` privilege columns, in MySQL's order.
const DB_PRIVS: &[(&str, u64)] = &[
    ("Select_priv", SELECT),
    ("Insert_priv", INSERT),
    ("Update_priv", UPDATE),
    ("Delete_priv", DELETE),
    ("Create_priv", CREATE),
    ("Drop_priv", DROP),
    ("Grant_priv", GRANT_OPTION),
    ("References_priv", REFERENCES),
    ("Index_priv", INDEX),
    ("Alter_priv", ALTER),
    ("Create_tmp_table_priv", CREATE_TMP),
    ("Lock_tables_priv", LOCK_TABLES),
];

/// `tables_priv.Table_priv` names, in MySQL's order.
const TABLE_PRIVS: &[(&str, u64)] = &[
    ("Select", SELECT),
    ("Insert", INSERT),
    ("Update", UPDATE),
    ("Delete", DELETE),
    ("Create", CREATE),
    ("Drop", DROP),
    ("Grant", GRANT_OPTION),
    ("References", REFERENCES),
    ("Index", INDEX),
    ("Alter", ALTER),
];

fn user_table(accounts: &Accounts) -> VirtualTable {
    let mut columns: Vec<String> = vec!["Host".into(), "User".into()];
    columns.extend(USER_PRIVS.iter().map(|c| c.0.to_string()));
    columns.extend(
        [
            "plugin",
            "authentication_string",
            "account_locked",
            "max_user_connections",
        ]
        .map(String::from),
    );
    let rows = accounts
        .all()
        .into_iter()
        .map(|a| {
            let mut r = vec![s(&a.host), s(&a.user)];
            r.extend(USER_PRIVS.iter().map(|c| yn(a.grants.global, c.1)));
            r.push(s(a.auth.plugin().name()));
            r.push(s(&a.auth.auth_string()));
            r.push(s(if a.locked { "Y" } else { "N" }));
            r.push(Value::Int(a.max_user_connections as i64));
            r
        })
        .collect();
    VirtualTable { columns, rows }
}

fn db_table(accounts: &Accounts) -> VirtualTable {
    let mut columns: Vec<String> = vec!["Host".into(), "Db".into(), "User".into()];
    columns.extend(DB_PRIVS.iter().map(|c| c.0.to_string()));
    let mut rows = Vec::new();
    for a in accounts.all() {
        for (db, bits) in &a.grants.dbs {
            let mut r = vec![s(&a.host), s(db), s(&a.user)];
            r.extend(DB_PRIVS.iter().map(|c| yn(*bits, c.1)));
            rows.push(r);
        }
    }
    VirtualTable { columns, rows }
}

fn tables_priv_table(accounts: &Accounts) -> VirtualTable {
    let columns = [
        "Host",
        "Db",
        "User",
        "Table_name",
        "Table_priv",
        "Column_priv",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for a in accounts.all() {
        for (db, tables) in &a.grants.tables {
            for (t, bits) in tables {
                let set: Vec<&str> = TABLE_PRIVS
                    .iter()
                    .filter(|c| bits & c.1 != 0)
                    .map(|c| c.0)
                    .collect();
                rows.push(vec![
                    s(&a.host),
                    s(db),
                    s(&a.user),
                    s(t),
                    s(&set.join(",")),
                    s(""),
                ]);
            }
        }
    }
    VirtualTable { columns, rows }
}

/// Registers the three tables as virtual tables of `server`.
pub fn register(server: &Server, accounts: &Arc<Accounts>) {
    let a = accounts.clone();
    server.add_virtual_table("mysql", "user", Arc::new(move || user_table(&a)));
    let a = accounts.clone();
    server.add_virtual_table("mysql", "db", Arc::new(move || db_table(&a)));
    let a = accounts.clone();
    server.add_virtual_table(
        "mysql",
        "tables_priv",
        Arc::new(move || tables_priv_table(&a)),
    );
}
